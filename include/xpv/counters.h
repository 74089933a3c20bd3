// SPDX-License-Identifier: MIT
/// \file
/// Counters, defined once: the library API and the DPDK driver's xstats both
/// take their names from the lists below.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpv {

/// Per event channel port (see evtchn/late_eoi.h): X(name, what it counts).
#define XPV_EVENT_COUNTERS(X)                                              \
  X(events, "events taken from the event channel")                         \
  X(spurious, "events whose handler found no work")                        \
  X(delayed_eois, "EOIs (unmasks) delayed by the spurious-event back-off") \
  X(unmasks, "EOIs performed")                                             \
  X(deadline_runs, "handler runs at a deadline it asked for, no event having come")

/// Counters of one event channel port: one field per XPV_EVENT_COUNTERS entry.
struct EventCounters {
#define XPV_FIELD(name, doc) uint64_t name = 0;
  XPV_EVENT_COUNTERS(XPV_FIELD)
#undef XPV_FIELD
};

/// Per netfront queue: X(name, what it counts). The names are the xstats
/// names (with the DPDK driver's "rx_qN_" / "tx_qN_" style prefix added by the driver).
#define XPV_QUEUE_COUNTERS(X)                                                                      \
  X(tx_packets, "packets handed to the backend")                                                   \
  X(tx_bytes, "bytes handed to the backend")                                                       \
  X(tx_dropped, "packets the backend answered with NETIF_RSP_DROPPED or we refused")               \
  X(tx_errors, "packets the backend answered with NETIF_RSP_ERROR")                                \
  X(rx_packets, "packets received")                                                                \
  X(rx_bytes, "bytes received")                                                                    \
  X(rx_dropped, "received packets dropped (no buffer, bad response)")                              \
  X(rx_errors, "RX responses with an error status")                                                \
  X(notifies, "event channel notifications sent to the backend")                                   \
  X(events, "events taken from the queue's event channel(s)")                                      \
  X(spurious_events, "events whose handler found no work")                                         \
  X(delayed_eois, "EOIs delayed by the spurious-event back-off")                                   \
  X(ring_full, "transmit attempts stopped by a full TX ring or no free slot")                      \
  X(backend_errors, "protocol violations by the backend (each disconnects the device)")            \
  X(local_errors, "our own event channel failures (each disconnects the device)")                  \
  X(tx_notify_waits,                                                                               \
    "TX handler runs that stopped notifications to wait for one a racing push may have sent")      \
  X(tx_notify_waits_expired,                                                                       \
    "of those waits, the ones that ended at their deadline, no notification having come")          \
  X(tx_reaped_in_xmit,                                                                             \
    "TX responses consumed by the transmit path (0 unless the reap-in-transmit experiment is on)") \
  X(rx_refills, "RX ring refill batches")                                                          \
  X(mcast_requests, "multicast filter changes sent (MCAST_ADD/DEL extra-info requests)")           \
  X(mcast_refused, "multicast filter changes the backend answered with an error")                  \
  X(static_grant_connections,                                                                      \
    "connections on which the backend mapped this queue's buffer pools once (static grants)")      \
  X(grant_copy_connections,                                                                        \
    "connections on which the backend grant-copies each buffer (no static grants)")                \
  X(rx_kept, "received packets the application kept in their pages, not copied (rx_zero_copy)")    \
  X(tx_by_rx_grant, "packets sent by the grants of kept received pages, not copied")

/// Counters of one netfront queue: one field per XPV_QUEUE_COUNTERS entry.
struct QueueCounters {
#define XPV_FIELD(name, doc) uint64_t name = 0;
  XPV_QUEUE_COUNTERS(XPV_FIELD)
#undef XPV_FIELD
};

/// Per device: its control ring (netif.h feature-ctrl-ring). Each
/// violation disconnects the device.
#define XPV_CTRL_COUNTERS(X)                                                                   \
  X(ctrl_requests, "control-ring requests sent")                                               \
  X(ctrl_refused, "control-ring requests the backend answered with an error status")           \
  X(ctrl_timeouts, "control-ring requests the backend did not answer in time (a violation)")   \
  X(ctrl_bad_ids, "control-ring responses naming a request we did not send (a violation)")     \
  X(ctrl_bad_types, "control-ring responses of another type than their request (a violation)") \
  X(ctrl_bad_statuses,                                                                         \
    "control-ring responses with a status netif.h does not allow for the request (a violation)")

/// Counters of a device's control ring: one field per XPV_CTRL_COUNTERS entry.
struct CtrlCounters {
#define XPV_FIELD(name, doc) uint64_t name = 0;
  XPV_CTRL_COUNTERS(XPV_FIELD)
#undef XPV_FIELD
};

/// One QueueCounters field: its name, what it counts, and where it is.
struct CounterInfo {
  /// The field's name (e.g. "tx_packets").
  const char* name;
  /// What it counts.
  const char* doc;
  size_t offset;  ///< of the uint64_t in its struct
};

/// Every QueueCounters field, in XPV_QUEUE_COUNTERS order.
inline constexpr CounterInfo kQueueCounterInfo[] = {
#define XPV_INFO(name, doc) {#name, doc, offsetof(QueueCounters, name)},
    XPV_QUEUE_COUNTERS(XPV_INFO)
#undef XPV_INFO
};
/// The number of entries of kQueueCounterInfo.
inline constexpr size_t kQueueCounterCount =
    sizeof(kQueueCounterInfo) / sizeof(kQueueCounterInfo[0]);

/// The value in `c` of the field `info` describes.
inline uint64_t counter_value(const QueueCounters& c, const CounterInfo& info) {
  return *reinterpret_cast<const uint64_t*>(reinterpret_cast<const char*>(&c) + info.offset);
}

}  // namespace xpv
