// SPDX-License-Identifier: MIT
// A domain of an in-process simulated hypervisor: requests by function call
// instead of over the socket, grant map and copy straight from the hypervisor
// (sim/in_process.h). Part of libxpv-sim, not of the frontend library.
#include "sim/hypervisor.h"
#include "util/log.h"

namespace xpv::sim {
namespace {

class LocalTransport final : public Transport {
 public:
  LocalTransport(Hypervisor& hv, std::shared_ptr<Hypervisor::Connection> c)
      : hv_(hv), conn_(std::move(c)) {}
  ~LocalTransport() override { hv_.disconnect(*conn_); }
  Result<Message> call(Message req) override {
    return checked_reply(hv_.handle(*conn_, std::move(req)));
  }
  int readiness_fd() const override { return -1; }
  void pump() override {}

 private:
  Hypervisor& hv_;
  std::shared_ptr<Hypervisor::Connection> conn_;
};

}  // namespace

Result<std::unique_ptr<Platform>> local_platform(Hypervisor& hv, bool as_dom0) {
  InProcessLink link;
  link.grants = &hv;
  link.open = [&hv, as_dom0](EventRoute route,
                             std::string* name) -> Result<std::unique_ptr<Transport>> {
    auto sink = [route = std::move(route)](Message m) { route(m); };
    auto conn = as_dom0 ? hv.connect_dom0(sink) : hv.connect_domain(sink);
    if (!conn) return conn.error();
    *name = as_dom0 ? "sim:local-dom0" : format("sim:local-dom%u", (*conn)->domid());
    return std::unique_ptr<Transport>(new LocalTransport(hv, std::move(*conn)));
  };
  return in_process_platform(std::move(link));
}

}  // namespace xpv::sim
