// SPDX-License-Identifier: MIT
// Benchmarks of the frontend's data path alone: one live QueueImpl over an
// in-process simulated hypervisor (as tests/fuzz/fuzz_responses.cc sets it up)
// and an "ideal backend" that works the other half of the queue's rings with
// the public ring code (ring::BackRing) between bursts.
//
// The ideal backend costs nothing the frontend pays for: it runs between the
// frontend's calls, it never notifies (poll mode: the frontend keeps its
// response events disarmed) and it keeps req_event far ahead, as a
// busy-polling backend does, so the frontend never has to notify either. It
// does not copy packet data: TX requests are answered NETIF_RSP_OKAY without
// reading the granted page, RX responses name the posted buffer at offset 0
// with the requested length (the library never reads payload on RX; the
// caller's sink does, and that is the application's cost, not ours).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "netfront/queue.h"
#include "ring/netif.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "util/fd.h"
#include "xpv/log.h"
#include "xpv/netfront.h"

namespace xpv::bench {

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "xpv-bench: %s\n", what);
  std::exit(1);
}

// The request event a busy-polling backend keeps: never crossed.
inline constexpr uint32_t kFarAhead = 0x80000000u;

class IdealBackend {
 public:
  void attach(QueueImpl& q) {
    tx_.attach(q.tx_ring()->header());
    rx_.attach(q.rx_ring()->header());
    tx_.set_request_event(kFarAhead);
    rx_.set_request_event(kFarAhead);
  }

  // Answers every published TX request with NETIF_RSP_OKAY (extra-info slots,
  // never sent by these benchmarks, would get NETIF_RSP_NULL).
  uint32_t answer_tx() {
    ring::Available a = tx_.available_requests();
    if (a.overflow) die("ideal backend: TX request producer overflow");
    bool extra = false;
    for (uint32_t i = 0; i < a.count; ++i) {
      const netif::TxRequest r = tx_.take_request();
      netif::TxResponse& rsp = tx_.next_response();
      rsp.id = r.id;
      rsp.status = extra ? netif::kRspNull : netif::kRspOkay;
      extra = !extra && (r.flags & netif::kTxExtraInfo);
      tx_.commit_response();
    }
    if (a.count) (void)tx_.push_responses_and_check_notify();
    tx_.set_request_event(kFarAhead);
    return a.count;
  }

  // Fills up to `n` posted RX buffers with one `len`-byte packet each.
  uint32_t produce_rx(uint32_t n, uint16_t len) {
    ring::Available a = rx_.available_requests();
    if (a.overflow) die("ideal backend: RX request producer overflow");
    const uint32_t k = a.count < n ? a.count : n;
    for (uint32_t i = 0; i < k; ++i) {
      const netif::RxRequest r = rx_.take_request();
      netif::RxResponse& rsp = rx_.next_response();
      rsp.id = r.id;
      rsp.offset = 0;
      rsp.flags = 0;
      rsp.status = static_cast<int16_t>(len);
      rx_.commit_response();
    }
    if (k) (void)rx_.push_responses_and_check_notify();
    rx_.set_request_event(kFarAhead);
    return k;
  }

 private:
  netif::TxBackRing tx_;
  netif::RxBackRing rx_;
};

// One connected queue in poll mode (what testpmd runs), with its backend.
class Bench {
 public:
  Bench() {
    set_log_level(LogLevel::kError);
    sim::HypervisorConfig cfg;
    cfg.pages_per_domain = 4096;
    cfg.grants_per_domain = 2048;
    auto hv = sim::Hypervisor::create(cfg);
    if (!hv) die("cannot create the simulated hypervisor");
    hv_ = std::move(*hv);
    auto domu = sim::local_platform(*hv_, false);
    if (!domu) die("cannot create the guest domain");
    domu_ = std::move(*domu);
    auto sharer = domu_->open_grant_sharer();
    if (!sharer) die("cannot open the grant sharer");
    sharer_ = std::move(*sharer);
    auto wake = make_eventfd();
    if (!wake) die("cannot create an eventfd");
    wake_ = std::move(*wake);
    q_ = std::make_unique<QueueImpl>(0);
    if (q_->init().failed()) die("queue init failed");
    if (q_->setup(*domu_, *sharer_, kDom0, QueueFeatures{.split = true, .sg = true}, wake_.get())
            .failed())
      die("queue setup failed");
    q_->set_mode(QueueMode::kPoll);
    backend_.attach(*q_);
    q_->start();
    q_->reset_counters();
  }
  ~Bench() {
    q_->stop();
    (void)q_->teardown();
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  Queue& queue() { return q_->api(); }
  QueueImpl& impl() { return *q_; }
  IdealBackend& backend() { return backend_; }

 private:
  std::unique_ptr<sim::Hypervisor> hv_;
  std::unique_ptr<Platform> domu_;
  std::unique_ptr<GrantSharer> sharer_;
  UniqueFd wake_;
  std::unique_ptr<QueueImpl> q_;
  IdealBackend backend_;
};

// A burst of identical single-segment frames.
struct TxBurst {
  TxBurst(uint32_t n, uint32_t size) : frame(size), segs(n), pkts(n) {
    for (uint32_t i = 0; i < size; ++i)
      frame[i] = static_cast<uint8_t>(i);
    for (uint32_t i = 0; i < n; ++i) {
      segs[i] = {frame.data(), size};
      pkts[i] = {&segs[i], 1};
    }
  }
  std::span<const TxPacket> span() const { return {pkts.data(), pkts.size()}; }
  std::vector<uint8_t> frame;
  std::vector<TxSegment> segs;
  std::vector<TxPacket> pkts;
};

// The receive sink: what an application does at the least (counts bytes).
struct CountingSink {
  uint64_t bytes = 0;
  bool operator()(const RxPacket& p) {
    bytes += p.len;
    return true;
  }
};

}  // namespace xpv::bench
