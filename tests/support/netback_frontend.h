// SPDX-License-Identifier: MIT
// The tests' own netif frontend for driving xpv-netback (tests/test_netback.cc,
// tests/test_netback_ctrl.cc): a guest domain on the simulated hypervisor,
// grant sharing, event channels, xenstore and the netif front rings, put
// together by hand so that it can send what a netfront never would; and the
// fixture that starts a backend on a fresh simulated hypervisor.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "netback/backend.h"
#include "ring/netif.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "support/frames.h"
#include "util/log.h"

namespace xpv::netback_testing {

using namespace std::chrono_literals;
using netback::Backend;
using netback::Config;
using netback::Counters;
using netback::Fault;
using netback::Mode;
using netback::VifStats;
using netif::RxRequest;
using netif::RxResponse;
using netif::TxRequest;
using netif::TxResponse;
namespace tf = testing_frames;

constexpr auto kTimeout = 10s;

// Polls `pred` every millisecond until it holds or `timeout` passes.
inline bool wait_until(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = kTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
}

inline std::vector<uint8_t> pattern(size_t len, uint8_t seed) {
  std::vector<uint8_t> v(len);
  for (size_t i = 0; i < len; ++i)
    v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

// ---------------------------------------------------------------------------
// The test frontend.

struct FeQueue {
  SharedPages tx_ring, rx_ring;
  SharedPages tx_bufs;  // page i: data of the TX request with id i
  SharedPages rx_bufs;  // page i: buffer of the RX request with id i
  netif::TxFrontRing tx;
  netif::RxFrontRing rx;
  evtchn_port_t tx_port = 0, rx_port = 0;
};

struct Received {
  std::vector<uint8_t> data;
  std::vector<RxResponse> rsps;          // the data slots' responses
  std::vector<netif::ExtraInfo> extras;  // extra-info slots, in order
  bool error = false;
};

struct KeyOptions {
  bool split = true;
  bool rx_copy = true;
  bool rx_notify = true;
  std::optional<uint32_t> num_queues_key;  // written as is when set
  bool gso = false;                        // feature-gso-tcpv4/-tcpv6=1: we take GSO packets
  bool no_csum = false;                    // feature-no-csum-offload=1
  bool ipv6_csum = true;                   // feature-ipv6-csum-offload
  bool multicast_control = false;          // request-multicast-control=1
};

class Frontend {
 public:
  // A new guest domain of `hv` (in process), or over `platform` (any).
  explicit Frontend(sim::Hypervisor& hv) { init(sim::local_platform(hv, /*as_dom0=*/false)); }
  explicit Frontend(Result<std::unique_ptr<Platform>> p) { init(std::move(p)); }
  // Vif `handle` of the same guest as `other` (with its own handles).
  Frontend(Frontend& other, uint32_t handle) {
    plat_ = other.plat_;
    open(handle);
  }

  domid_t domid() const { return domid_; }
  uint32_t handle() const { return handle_; }
  netback::Mac mac() const { return netback::default_mac(domid_, handle_); }
  XenStore& xs() { return *xs_; }
  EventChannel& ev() { return *ev_; }
  GrantSharer& sharer() { return *sharer_; }
  const std::string& fe() const { return fe_; }
  const std::string& be() const { return be_; }
  FeQueue& q(size_t i = 0) { return *queues_[i]; }

  std::optional<std::string> read(const std::string& path) {
    auto r = xs_->try_read(kXsNoTransaction, path);
    if (!r || !*r) return std::nullopt;
    return **r;
  }
  int be_state() {
    auto s = read(be_ + "/state");
    return s ? std::atoi(s->c_str()) : -1;
  }
  bool wait_be_state(int s) {
    return wait_until([&] { return be_state() == s; });
  }
  void write(const std::string& key, const std::string& value) {
    ASSERT_TRUE(xs_->write(kXsNoTransaction, fe_ + "/" + key, value)) << key;
  }
  void rm(const std::string& key) { (void)xs_->rm(kXsNoTransaction, fe_ + "/" + key); }
  void set_state(int s) { write("state", std::to_string(s)); }

  // Shares rings and buffers and allocates ports for `nq` queues.
  void setup_queues(uint32_t nq, bool split) {
    queues_.clear();
    for (uint32_t i = 0; i < nq; ++i) {
      auto q = std::make_unique<FeQueue>();
      auto tr = sharer_->share(kDom0, 1, true);
      auto rr = sharer_->share(kDom0, 1, true);
      auto tb = sharer_->share(kDom0, 256, /*writable=*/false);
      auto rb = sharer_->share(kDom0, 256, true);
      ASSERT_TRUE(tr && rr && tb && rb);
      q->tx_ring = std::move(*tr);
      q->rx_ring = std::move(*rr);
      q->tx_bufs = std::move(*tb);
      q->rx_bufs = std::move(*rb);
      q->tx.attach(q->tx_ring.data(), /*init=*/true);
      q->rx.attach(q->rx_ring.data(), /*init=*/true);
      auto tp = ev_->alloc_unbound(kDom0);
      ASSERT_TRUE(tp);
      q->tx_port = q->rx_port = *tp;
      if (split) {
        auto rp = ev_->alloc_unbound(kDom0);
        ASSERT_TRUE(rp);
        q->rx_port = *rp;
      }
      queues_.push_back(std::move(q));
    }
  }
  // Unbinds the ports and ends access to every page (as a frontend that
  // closes does).
  void drop_queues() {
    for (auto& q : queues_) {
      (void)ev_->unbind(q->tx_port);
      if (q->rx_port != q->tx_port) (void)ev_->unbind(q->rx_port);
    }
    queues_.clear();
  }

  // What a netfront writes in its handshake transaction.
  void write_keys(const KeyOptions& o = {}) {
    const uint32_t nq = static_cast<uint32_t>(queues_.size());
    if (o.num_queues_key) {
      write("multi-queue-num-queues", std::to_string(*o.num_queues_key));
    } else if (nq > 1) {
      write("multi-queue-num-queues", std::to_string(nq));
    }
    for (uint32_t i = 0; i < nq; ++i) {
      const std::string dir = nq == 1 ? "" : "queue-" + std::to_string(i) + "/";
      FeQueue& q = *queues_[i];
      write(dir + "tx-ring-ref", std::to_string(q.tx_ring.ref(0)));
      write(dir + "rx-ring-ref", std::to_string(q.rx_ring.ref(0)));
      if (o.split) {
        write(dir + "event-channel-tx", std::to_string(q.tx_port));
        write(dir + "event-channel-rx", std::to_string(q.rx_port));
      } else {
        write(dir + "event-channel", std::to_string(q.tx_port));
      }
    }
    if (o.rx_copy) write("request-rx-copy", "1");
    if (o.rx_notify) write("feature-rx-notify", "1");
    write("feature-sg", "1");
    if (o.gso) {
      write("feature-gso-tcpv4", "1");
      write("feature-gso-tcpv6", "1");
    }
    if (o.no_csum) write("feature-no-csum-offload", "1");
    if (o.ipv6_csum) write("feature-ipv6-csum-offload", "1");
    if (o.multicast_control) write("request-multicast-control", "1");
  }

  // The whole handshake; true once the backend is Connected.
  bool connect(uint32_t nq = 1, KeyOptions o = {}) {
    if (!wait_be_state(2)) return false;
    setup_queues(nq, o.split);
    write_keys(o);
    set_state(4);
    return wait_be_state(4);
  }

  // ---- TX ----
  // Puts one packet on the TX ring: slot i carries sizes[i] bytes at
  // offsets[i] (default 0) of its own page; the first slot's size field is
  // the whole length. Returns the ids used.
  std::vector<uint16_t> put_packet(FeQueue& q, const std::vector<uint8_t>& data,
                                   const std::vector<uint16_t>& sizes, uint16_t flags = 0,
                                   const std::vector<uint16_t>& offsets = {}) {
    std::vector<uint16_t> ids;
    size_t pos = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint16_t idx = static_cast<uint16_t>(q.tx.req_prod_pvt() & 255);
      const uint16_t off = offsets.empty() ? 0 : offsets[i];
      const size_t n = std::min<size_t>(sizes[i], data.size() - std::min(pos, data.size()));
      if (off + n <= kPageSize) std::memcpy(q.tx_bufs.page(idx) + off, data.data() + pos, n);
      pos += sizes[i];
      TxRequest& r = q.tx.next_request();
      r.gref = q.tx_bufs.ref(idx);
      r.offset = off;
      r.flags = static_cast<uint16_t>((i + 1 < sizes.size() ? netif::kTxMoreData : 0) |
                                      (i == 0 ? flags : 0));
      r.id = idx;
      r.size = i == 0 ? static_cast<uint16_t>(data.size()) : sizes[i];
      q.tx.commit_request();
      ids.push_back(idx);
    }
    return ids;
  }
  // A GSO packet (TSO): page-sized slots, the first flagged csum_blank,
  // data_validated and extra_info, a GSO extra right after it. Pushed.
  // Returns how many TX responses it gets (slots and the extra).
  size_t send_gso(FeQueue& q, const std::vector<uint8_t>& data, uint16_t mss, uint8_t type) {
    std::vector<uint16_t> sizes;
    for (size_t at = 0; at < data.size(); at += kPageSize)
      sizes.push_back(static_cast<uint16_t>(std::min<size_t>(kPageSize, data.size() - at)));
    size_t pos = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint16_t idx = static_cast<uint16_t>(q.tx.req_prod_pvt() & 255);
      std::memcpy(q.tx_bufs.page(idx), data.data() + pos, sizes[i]);
      pos += sizes[i];
      uint16_t flags = i + 1 < sizes.size() ? netif::kTxMoreData : 0;
      if (i == 0) flags |= netif::kTxCsumBlank | netif::kTxDataValidated | netif::kTxExtraInfo;
      put_raw(q, TxRequest{q.tx_bufs.ref(idx), 0, flags, idx,
                           i == 0 ? static_cast<uint16_t>(data.size()) : sizes[i]});
      if (i == 0) {
        netif::ExtraInfo e{};
        e.type = netif::kExtraTypeGso;
        e.u.gso.size = mss;
        e.u.gso.type = type;
        TxRequest raw{};
        std::memcpy(&raw, &e, sizeof e);
        put_raw(q, raw);
      }
    }
    push_tx(q);
    return sizes.size() + 1;
  }
  // A dummy request with a multicast extra (netif.h: the filter is edited
  // with dummy transmit requests). Pushed; returns its id.
  uint16_t send_mcast(FeQueue& q, uint8_t type, const netback::Mac& addr) {
    const uint16_t idx = static_cast<uint16_t>(q.tx.req_prod_pvt() & 255);
    put_raw(q, TxRequest{q.tx_bufs.ref(idx), 0, netif::kTxExtraInfo, idx, 0});
    netif::ExtraInfo e{};
    e.type = type;
    std::copy(addr.begin(), addr.end(), e.u.mcast.addr);
    TxRequest raw{};
    std::memcpy(&raw, &e, sizeof e);
    put_raw(q, raw);
    push_tx(q);
    return idx;
  }
  // A raw request, exactly as given.
  void put_raw(FeQueue& q, const TxRequest& r) {
    q.tx.next_request() = r;
    q.tx.commit_request();
  }
  void push_tx(FeQueue& q) {
    if (q.tx.push_requests_and_check_notify()) {
      ASSERT_TRUE(ev_->notify(q.tx_port));
    }
  }
  // One single-slot packet, pushed.
  uint16_t send(FeQueue& q, const std::vector<uint8_t>& data, uint16_t flags = 0) {
    auto ids = put_packet(q, data, {static_cast<uint16_t>(data.size())}, flags);
    push_tx(q);
    return ids[0];
  }
  // Waits for `n` TX responses (or an overflow of the response ring).
  std::vector<TxResponse> wait_tx(FeQueue& q, size_t n, bool* overflow = nullptr,
                                  std::chrono::milliseconds timeout = kTimeout) {
    std::vector<TxResponse> out;
    wait_until(
        [&] {
          auto a = q.tx.available_responses();
          if (a.overflow) {
            if (overflow) *overflow = true;
            return true;
          }
          for (uint32_t i = 0; i < a.count && out.size() < n; ++i)
            out.push_back(q.tx.take_response());
          return out.size() >= n;
        },
        timeout);
    return out;
  }

  // Takes every TX response there is.
  void drain_tx(FeQueue& q) {
    auto a = q.tx.available_responses();
    for (uint32_t i = 0; i < a.count; ++i)
      (void)q.tx.take_response();
  }

  // ---- RX ----
  void post_rx(FeQueue& q, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint16_t idx = static_cast<uint16_t>(q.rx.req_prod_pvt() & 255);
      RxRequest& r = q.rx.next_request();
      r.id = idx;
      r.pad = 0;
      r.gref = q.rx_bufs.ref(idx);
      q.rx.commit_request();
    }
    if (q.rx.push_requests_and_check_notify()) {
      ASSERT_TRUE(ev_->notify(q.rx_port));
    }
  }
  void post_rx_raw(FeQueue& q, uint16_t id, grant_ref_t gref) {
    RxRequest& r = q.rx.next_request();
    r.id = id;
    r.pad = 0;
    r.gref = gref;
    q.rx.commit_request();
    if (q.rx.push_requests_and_check_notify()) {
      ASSERT_TRUE(ev_->notify(q.rx_port));
    }
  }
  // Gathers one packet's responses (until one without more_data).
  std::optional<Received> receive(FeQueue& q, std::chrono::milliseconds timeout = kTimeout) {
    Received r;
    bool done = false, more = false, extra_pending = false;
    wait_until(
        [&] {
          auto a = q.rx.available_responses();
          if (a.overflow) return true;
          for (uint32_t i = 0; i < a.count && !done; ++i) {
            const uint32_t idx = q.rx.rsp_cons() & 255;  // our id = the request's index
            RxResponse rsp = q.rx.take_response();
            if (extra_pending) {
              // netif.h: an extra-info slot after the first data slot.
              netif::ExtraInfo e;
              std::memcpy(&e, &rsp, sizeof e);
              r.extras.push_back(e);
              extra_pending = (e.flags & netif::kExtraFlagMore) != 0;
              done = !more && !extra_pending;
              continue;
            }
            r.rsps.push_back(rsp);
            if (rsp.status < 0) {
              r.error = true;
            } else if (rsp.offset + rsp.status <= static_cast<int>(kPageSize)) {
              const uint8_t* p = q.rx_bufs.page(idx) + rsp.offset;
              r.data.insert(r.data.end(), p, p + rsp.status);
            }
            more = (rsp.flags & netif::kRxMoreData) != 0;
            if (r.rsps.size() == 1) extra_pending = (rsp.flags & netif::kRxExtraInfo) != 0;
            done = !more && !extra_pending;
          }
          return done;
        },
        timeout);
    if (!done) return std::nullopt;
    return r;
  }
  // Whether any RX response arrives within `window` (for "never" checks).
  bool rx_quiet_for(FeQueue& q, std::chrono::milliseconds window) {
    return !wait_until([&] { return q.rx.available_responses().count > 0; }, window);
  }

 private:
  void init(Result<std::unique_ptr<Platform>> p) {
    ASSERT_TRUE(p) << p.error().message;
    plat_ = std::move(*p);
    open(0);
  }
  void open(uint32_t handle) {
    domid_ = plat_->self_domid();
    handle_ = handle;
    auto xs = plat_->open_xenstore();
    auto sh = plat_->open_grant_sharer();
    auto ev = plat_->open_event_channel();
    ASSERT_TRUE(xs && sh && ev);
    xs_ = std::move(*xs);
    sharer_ = std::move(*sh);
    ev_ = std::move(*ev);
    fe_ = format("/local/domain/%u/device/vif/%u", domid_, handle);
    be_ = format("/local/domain/0/backend/vif/%u/%u", domid_, handle);
  }

  std::shared_ptr<Platform> plat_;  // shared by the vifs of one guest
  std::unique_ptr<XenStore> xs_;
  std::unique_ptr<GrantSharer> sharer_;
  std::unique_ptr<EventChannel> ev_;
  domid_t domid_ = 0;
  uint32_t handle_ = 0;
  std::string fe_, be_;
  std::vector<std::unique_ptr<FeQueue>> queues_;
};

// ---------------------------------------------------------------------------

struct NetbackTest : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Backend> be;
  LogLevel saved_level = LogLevel::kInfo;

  void SetUp() override {
    saved_level = log_level();
    set_log_level(LogLevel::kWarning);
    auto h = sim::Hypervisor::create({8192, 4096});
    ASSERT_TRUE(h) << h.error().message;
    hv = std::move(*h);
  }
  void TearDown() override {
    if (be) be->stop();
    be.reset();
    hv.reset();
    set_log_level(saved_level);
  }
  void start(Config cfg = {}) {
    auto b = Backend::create(*hv, cfg);
    ASSERT_TRUE(b) << b.error().message;
    be = std::move(*b);
    ASSERT_TRUE(be->start());
  }
  VifStats vif(domid_t d, uint32_t h = 0) {
    auto s = be->vif_stats(d, h);
    EXPECT_TRUE(s.has_value());
    return s.value_or(VifStats{});
  }
  Counters ctr(domid_t d, uint32_t h = 0) { return vif(d, h).total; }
  bool wait_ctr(domid_t d, uint64_t Counters::*field, uint64_t want) {
    return wait_until([&] { return ctr(d).*field == want; });
  }
  // A fatal error: the vif is disabled and says why, in its error node too.
  void expect_fatal(Frontend& fe, const std::string& reason) {
    ASSERT_TRUE(wait_until([&] {
      return vif(fe.domid()).fatal_reason.find(reason) != std::string::npos;
    })) << "fatal reason: '"
        << vif(fe.domid()).fatal_reason << "', wanted '" << reason << "'";
    VifStats s = vif(fe.domid());
    EXPECT_TRUE(s.disabled);
    EXPECT_EQ(s.total.fatal_errors, 1u);
    ASSERT_TRUE(wait_until([&] { return fe.read(fe.be() + "/error").has_value(); }));
    EXPECT_NE(fe.read(fe.be() + "/error")->find(reason), std::string::npos);
    // Linux leaves the xenbus state alone: the vif just stops serving.
    EXPECT_EQ(fe.be_state(), 4);
  }
};
}  // namespace xpv::netback_testing
