// SPDX-License-Identifier: MIT
// A queue against a hand-written hostile backend: the test writes responses
// straight into the queue's shared ring pages, as a broken or malicious
// backend could (tests/test_queue_rules.cc, tests/test_rx_zero_copy.cc).
#pragma once

#include <gtest/gtest.h>

#include <sys/epoll.h>

#include <cstring>
#include <memory>
#include <vector>

#include "netfront/queue.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "xpv/log.h"

namespace xpv {

struct HostileBackend : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Platform> domu;
  std::unique_ptr<Platform> dom0;
  std::unique_ptr<GrantSharer> sharer;
  std::unique_ptr<GrantMapper> mapper;
  std::unique_ptr<EventChannel> backend_evt;
  UniqueFd wake;
  std::unique_ptr<QueueImpl> q;
  evtchn_port_t tx_port = 0, rx_port = 0;  // the backend's ends
  netif::TxFrontRing* tx = nullptr;
  netif::RxFrontRing* rx = nullptr;

  void SetUp() override {
    set_log_sink([](LogLevel, std::string_view) {});  // violations are expected
    hv = std::move(*sim::Hypervisor::create());
    domu = std::move(*sim::local_platform(*hv, false));
    dom0 = std::move(*sim::local_platform(*hv, true));
    sharer = std::move(*domu->open_grant_sharer());
    mapper = std::move(*dom0->open_grant_mapper());
    backend_evt = std::move(*dom0->open_event_channel());
    wake = std::move(*make_eventfd());
  }
  void TearDown() override {
    if (q) q->stop();
    q.reset();
    set_log_sink(nullptr);
  }
  // The features the queue is set up with (TX TSO and RX GSO for both TCP
  // types unless a test says otherwise).
  QueueFeatures negotiated{.split = false,
                           .sg = true,
                           .tx_gso_types = (1u << kGsoTcpV4) | (1u << kGsoTcpV6),
                           .rx_gso_types = 0};
  QueueFeatures features(bool split) {
    QueueFeatures f = negotiated;
    f.split = split;
    return f;
  }
  void open(bool split, QueueMode mode = QueueMode::kPoll) {
    q = std::make_unique<QueueImpl>(0);
    ASSERT_TRUE(q->init());
    ASSERT_TRUE(q->setup(*domu, *sharer, kDom0, features(split), wake.get()));
    const QueueKeys k = q->keys();
    auto t = backend_evt->bind_interdomain(domu->self_domid(), k.tx_port);
    ASSERT_TRUE(t);
    tx_port = rx_port = *t;
    if (split) {
      auto r = backend_evt->bind_interdomain(domu->self_domid(), k.rx_port);
      ASSERT_TRUE(r);
      rx_port = *r;
    }
    q->set_mode(mode);
    q->start();
    tx = q->tx_ring();
    rx = q->rx_ring();
  }
  ring::SharedRingHeader* txh() { return tx->header(); }
  ring::SharedRingHeader* rxh() { return rx->header(); }
  netif::TxFrontRing::Entry* txe() {
    return reinterpret_cast<netif::TxFrontRing::Entry*>(txh() + 1);
  }
  netif::RxFrontRing::Entry* rxe() {
    return reinterpret_cast<netif::RxFrontRing::Entry*>(rxh() + 1);
  }
  // Sends n 60-byte packets; returns how many were accepted.
  uint16_t send(uint16_t n) {
    static uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2};
    TxSegment seg{frame, sizeof frame};
    std::vector<TxPacket> p(n, TxPacket{&seg, 1});
    return q->api().transmit(p);
  }
  // The backend answers the TX request at ring index i with `status`.
  void answer_tx(uint32_t i, int16_t status) {
    const netif::TxRequest req = txe()[i & 255].req;
    netif::TxResponse r{};
    r.id = req.id;
    r.status = status;
    std::memcpy(&txe()[i & 255].rsp, &r, sizeof r);
  }
  void publish_tx(uint32_t prod) { __atomic_store_n(&txh()->rsp_prod, prod, __ATOMIC_RELEASE); }
  // The backend fills the RX buffer posted at ring index i with len bytes.
  void answer_rx(uint32_t i, int16_t len, uint16_t flags, uint16_t id_delta = 0,
                 uint16_t offset = 0) {
    const netif::RxRequest req = rxe()[i & 255].req;
    netif::RxResponse r{};
    r.id = static_cast<uint16_t>(req.id + id_delta);
    r.offset = offset;
    r.flags = flags;
    r.status = len;
    std::memcpy(&rxe()[i & 255].rsp, &r, sizeof r);
  }
  void publish_rx(uint32_t prod) { __atomic_store_n(&rxh()->rsp_prod, prod, __ATOMIC_RELEASE); }
  void expect_accounted() {
    const QueueImpl::Accounting a = q->accounting();
    EXPECT_EQ(a.tx_pool_free + a.tx_slots_in_flight + a.tx_slots_lent, a.tx_pool_size);
    EXPECT_EQ(a.rx_pool_free + a.rx_buffers_posted + a.rx_buffers_held + a.rx_buffers_kept,
              a.rx_pool_size);
    EXPECT_EQ(a.tx_extras_counted, a.tx_extras_unanswered);
    EXPECT_EQ(a.tx_rx_pages_counted, a.tx_slots_by_rx_grant);
  }
};

}  // namespace xpv
