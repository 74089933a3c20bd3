// SPDX-License-Identifier: MIT
// A simulated hypervisor served on a socket, with xpv-netback's backend in
// this process, for tests that open a Device against it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "netback/backend.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "sim/server.h"
#include "xpv/netfront.h"

namespace xpv {

struct NetfrontFixture : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<sim::Server> server;
  std::unique_ptr<netback::Backend> backend;
  std::unique_ptr<Platform> dom0;
  std::unique_ptr<XenStore> xs0;
  std::string sock;

  void start(netback::Config cfg = {}) {
    static int n = 0;
    sock = format("/tmp/xpv-test-nf-%d-%d.sock", static_cast<int>(::getpid()), n++);
    serve(cfg);
  }
  // The simulated hypervisor and its netback die, as when xpv-netback is
  // killed, and a new one serves the same socket.
  void restart_hypervisor(netback::Config cfg = {}) {
    stop_hypervisor();
    hv.reset();
    serve(cfg);
  }
  void serve(const netback::Config& cfg) {
    hv = std::move(*sim::Hypervisor::create());
    auto s = sim::Server::start(*hv, sock);
    ASSERT_TRUE(s) << s.error().message;
    server = std::move(*s);
    auto b = netback::Backend::create(*hv, cfg);
    ASSERT_TRUE(b) << b.error().message;
    backend = std::move(*b);
    ASSERT_TRUE(backend->start());
    dom0 = std::move(*sim::local_platform(*hv, true));
    xs0 = std::move(*dom0->open_xenstore());
  }
  void TearDown() override { stop_hypervisor(); }
  void stop_hypervisor() {
    xs0.reset();
    dom0.reset();
    if (backend) backend->stop();
    backend.reset();
    server.reset();
  }
  DeviceConfig config(uint32_t queues = 1) {
    DeviceConfig c;
    c.platform = "sim:" + sock;
    c.queues = queues;
    c.connect_timeout_ms = 10000;
    return c;
  }
};

}  // namespace xpv
