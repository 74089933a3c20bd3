// SPDX-License-Identifier: MIT
// What the queues of one vif share with each other and with the control
// thread. The control thread writes the negotiated features before it starts
// the queues' workers and reads them only after stopping them; everything a
// worker writes while running is atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "netback/config.h"
#include "netback/counters.h"
#include "netback/hash.h"
#include "netback/static_grants.h"
#include "xpv/platform.h"

namespace xpv::netback {

class Bridge;
class BridgeInbox;

struct VifContext {
  VifContext(const Config& c, domid_t d, uint32_t h, const Mac& m, int wake)
      : cfg(c), domid(d), handle(h), mac(m), control_wake_fd(wake) {
    name = "vif" + std::to_string(d) + "." + std::to_string(h);
  }

  const Config& cfg;
  const domid_t domid;
  const uint32_t handle;
  const Mac mac;
  std::string name;  // "vif<domid>.<handle>", as Linux names the netdev

  // Negotiated at connect (read_xenbus_vif_flags): fixed while workers run.
  bool rx_notify = true;   // feature-rx-notify
  bool can_sg = false;     // feature-sg
  bool ip_csum = true;     // !feature-no-csum-offload
  bool ipv6_csum = false;  // feature-ipv6-csum-offload: takes IPv6 partial checksums
  uint8_t gso_mask = 0;    // bit per XEN_NETIF_GSO_TYPE_*: feature-gso-tcpv4/-tcpv6
  // request-multicast-control (sampled at connect, and again on a change
  // with feature-dynamic-multicast-control): multicast frames not in the
  // filter are dropped.
  std::atomic<bool> multicast_control{false};
  uint64_t stall_timeout_ns = 0;  // 0: RX stall detection off
  uint64_t drain_timeout_ns = 0;  // RX queue expiry

  // Bridge mode: the backend's bridge (outlives every vif) and this vif's
  // port while connected (set before the workers start).
  Bridge* bridge = nullptr;
  uint64_t bridge_port = 0;

  // RX hashing configured through the control ring (hash.h): written by
  // the control ring's thread, read by every worker delivering a frame to
  // this vif. Shared with the bridge's port (a worker still holding an old
  // port table may read it after the vif is gone).
  std::shared_ptr<HashState> hash = std::make_shared<HashState>();
  // Loopback mode: every queue's inbox, by index (set before the workers
  // start), for a frame the hash sends to another queue than its own.
  std::vector<std::shared_ptr<BridgeInbox>> queue_inboxes;
  // Static grants, one per queue (static_grants.h): created at connect
  // before the queues and the control ring, cleared after both are gone.
  std::vector<std::unique_ptr<StaticGrants>> static_grants;

  // xenvif_fatal_tx_err(): the vif is disabled and its queues stop serving.
  // The first reason is kept (written once, before fatal_state becomes 2).
  std::atomic<bool> disabled{false};
  std::atomic<int> fatal_state{0};  // 0 none, 1 being written, 2 written
  char fatal_reason[256] = {};
  std::atomic<bool> fatal_reported{false};  // the control thread has logged it

  // Reports a fatal error from a worker; returns true for the first one.
  [[gnu::format(printf, 2, 3)]] bool report_fatal(const char* fmt, ...);

  // Faults shared by the queues.
  std::atomic<bool> oneshot_fired{false};  // one-shot faults fire once per vif
  bool claim_oneshot() { return !oneshot_fired.exchange(true); }
  std::atomic<uint64_t> reconnect_packets{0};
  std::atomic<uint64_t> reconnect_threshold{0};  // 0: not armed
  std::atomic<bool> reconnect_requested{false};
  // Counts `n` packets towards the reconnect fault (workers): the one call
  // whose packets reach the threshold asks for the reconnect.
  void count_reconnect_packets(uint64_t n = 1) {
    const uint64_t t = reconnect_threshold.load(std::memory_order_relaxed);
    if (t == 0) return;
    const uint64_t before = reconnect_packets.fetch_add(n, std::memory_order_relaxed);
    if (before < t && before + n >= t) {
      reconnect_requested.store(true);
      wake_control();
    }
  }

  // Queues whose guest RX is stalled (Linux's vif->stalled_queues).
  std::atomic<uint32_t> stalled_queues{0};

  // The frontend's multicast filter (xenvif_mcast_add/del/match): at most
  // XEN_NETBK_MCAST_MAX (64) addresses, edited by the TX workers, read by
  // whichever worker delivers a multicast frame. Emptied at connect.
  static constexpr uint32_t kMcastMax = 64;
  bool mcast_add(const uint8_t* addr);
  void mcast_del(const uint8_t* addr);
  bool mcast_match(const uint8_t* addr) const;
  void mcast_clear();

  // The control thread's eventfd.
  const int control_wake_fd;
  void wake_control() const;

 private:
  mutable std::mutex mcast_mu_;
  std::array<Mac, kMcastMax> mcast_{};
  uint32_t mcast_count_ = 0;
};

}  // namespace xpv::netback
