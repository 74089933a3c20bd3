// SPDX-License-Identifier: MIT
// xpv-netback's counters, defined once: the stats file, the exit summary and
// the in-process API take their names from the list below.
//
// Directions are the frontend's: "tx" is what the frontend transmits (the TX
// ring), "rx" what it receives (the RX ring). Linux netback names them from
// its own netdev's side, the other way round.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace xpv::netback {

#define XPV_NETBACK_COUNTERS(X)                                                                \
  X(tx_packets, "TX packets accepted (answered NETIF_RSP_OKAY)")                               \
  X(tx_bytes, "bytes of accepted TX packets")                                                  \
  X(tx_error_responses, "TX slots answered NETIF_RSP_ERROR")                                   \
  X(tx_dropped_short, "TX packets dropped: first slot shorter than 14 bytes")                  \
  X(tx_dropped_too_many_slots, "TX packets dropped: 20 or 21 slots")                           \
  X(tx_dropped_oversize_slot, "TX packets dropped: a slot bigger than the remaining size")     \
  X(tx_dropped_bad_grant, "TX packets dropped: a grant copy failed")                           \
  X(tx_dropped_bad_csum, "TX packets dropped: partial checksum or GSO not on TCP/UDP over IP") \
  X(tx_gso_packets, "TX packets with a GSO extra (the frontend's TSO)")                        \
  X(tx_mcast_ops, "multicast filter add/del requests (answered OKAY)")                         \
  X(tx_mcast_refused, "multicast filter adds refused: 64 addresses already")                   \
  X(rx_packets, "RX packets delivered to the frontend")                                        \
  X(rx_bytes, "bytes of delivered RX packets")                                                 \
  X(rx_dropped_queue_full, "RX packets dropped: the backend's queue was full")                 \
  X(rx_dropped_expired, "RX packets dropped: queued longer than --rx-expire")                  \
  X(rx_dropped_stalled, "RX packets dropped while the guest RX was stalled")                   \
  X(rx_stalls, "times the guest RX stalled (no request for --rx-stall-timeout)")               \
  X(rx_bad_requests, "RX slots answered NETIF_RSP_ERROR (grant copy failed)")                  \
  X(rx_gso_packets, "RX packets delivered whole with a GSO extra")                             \
  X(rx_gso_segmented, "GSO packets cut into segments for a frontend without that GSO type")    \
  X(rx_csum_completed, "partial checksums completed for a frontend without that offload")      \
  X(rx_dropped_multicast, "RX multicast frames not in the frontend's filter dropped")          \
  X(notifies_sent, "event channel notifications sent to the frontend")                         \
  X(events, "events taken from the backend's event channel ports")                             \
  X(spurious_events, "events whose handler found no work")                                     \
  X(fatal_errors, "fatal errors (malicious frontend, failed handshake)")                       \
  X(faults_injected, "faults injected by --fault")                                             \
  X(connects, "successful handshakes (backend Connected)")                                     \
  X(disconnects, "disconnections (queues torn down)")                                          \
  X(ctrl_requests, "control ring requests taken")                                              \
  X(ctrl_refused, "control requests answered with a status other than SUCCESS")                \
  X(rx_hash_extras, "RX packets delivered with a HASH extra (hashing configured)")             \
  X(rx_steered, "frames put on the RX queue the hash mapping chose")                           \
  X(static_grant_copies, "copies served by memcpy from a statically mapped grant (TX and RX)") \
  X(grant_copies, "grant copy operations (TX and RX)")                                         \
  X(static_grants_added, "grants mapped by ADD_GREF_MAPPING")                                  \
  X(static_grants_removed, "grants unmapped by DEL_GREF_MAPPING")                              \
  X(bridge_unicast, "bridge: TX frames sent to the one vif their destination is on")           \
  X(bridge_flooded, "bridge: TX frames flooded (broadcast, multicast, unknown dst)")           \
  X(bridge_dropped_self, "bridge: TX frames dropped: destination on the sending vif")          \
  X(bridge_dropped, "bridge: copies dropped: target inbox full, target gone/disabled")

// A plain copy of the counters.
struct Counters {
#define XPV_NB_FIELD(name, doc) uint64_t name = 0;
  XPV_NETBACK_COUNTERS(XPV_NB_FIELD)
#undef XPV_NB_FIELD

  Counters& operator+=(const Counters& o) {
#define XPV_NB_ADD(name, doc) name += o.name;
    XPV_NETBACK_COUNTERS(XPV_NB_ADD)
#undef XPV_NB_ADD
    return *this;
  }
};

struct CounterInfo {
  const char* name;
  const char* doc;
  uint64_t Counters::*field;
};

inline constexpr CounterInfo kCounterInfo[] = {
#define XPV_NB_INFO(name, doc) {#name, doc, &Counters::name},
    XPV_NETBACK_COUNTERS(XPV_NB_INFO)
#undef XPV_NB_INFO
};
inline constexpr size_t kCounterCount = sizeof(kCounterInfo) / sizeof(kCounterInfo[0]);

// One counter with a single writer (the thread that owns it) and readers on
// any thread: a relaxed load and store, no read-modify-write.
class Counter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// The live counters of one queue (written by its worker) or of one vif
// (written by the control thread).
struct LiveCounters {
#define XPV_NB_LIVE(name, doc) Counter name;
  XPV_NETBACK_COUNTERS(XPV_NB_LIVE)
#undef XPV_NB_LIVE

  Counters snapshot() const {
    Counters c;
#define XPV_NB_SNAP(name, doc) c.name = name.get();
    XPV_NETBACK_COUNTERS(XPV_NB_SNAP)
#undef XPV_NB_SNAP
    return c;
  }
};

}  // namespace xpv::netback
