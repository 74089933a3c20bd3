// SPDX-License-Identifier: MIT
// A queue's live connection: what queue.cc, tx.cc and rx.cc share. Private
// to the netfront.
#pragma once

#include "netfront/queue.h"
#include "netfront/rx_loans.h"

namespace xpv {

inline constexpr uint32_t kRingMask = QueueImpl::kRingSize - 1;
// An rsp_event this far ahead of the consumer is never crossed: the backend
// never notifies (poll mode keeps moving it along with the consumer).
inline constexpr uint32_t kDisarmedDistance = 0x80000000u;
// How long the TX handler waits for a notification that a push racing with
// its rsp_event store may have sent (wait_for_tx_notify()). Such a push
// notifies, if at all, a few instructions after it published: far less
// than this even when the backend's vCPU is preempted once.
inline constexpr uint64_t kTxNotifyWaitNs = 2'000'000;

struct QueueImpl::Retired {
  std::unique_ptr<BufferPool> pool;
  std::unique_ptr<RxLoans> loans;
};

struct QueueImpl::Conn {
  SharedPages tx_ring_page;
  SharedPages rx_ring_page;
  netif::TxFrontRing tx;
  netif::RxFrontRing rx;
  std::unique_ptr<BufferPool> tx_pool;
  std::unique_ptr<BufferPool> rx_pool;
  std::unique_ptr<RxLoans> rx_loans;  // DeviceConfig::rx_zero_copy
  std::unique_ptr<LateEoiChannel> evt;
  evtchn_port_t tx_port = 0;
  evtchn_port_t rx_port = 0;
  domid_t self = 0;  // our domain: the granter of every grant of ours
  domid_t backend = 0;
  bool split = false;
  bool sg = false;           // the backend takes multi-slot packets (feature-sg)
  uint8_t tx_gso_types = 0;  // QueueFeatures::tx_gso_types
  uint8_t rx_gso_types = 0;  // QueueFeatures::rx_gso_types
  // RX extra-info types (bit per XEN_NETIF_EXTRA_TYPE_*) that what we
  // negotiated allows the backend to send: GSO when we wrote a
  // feature-gso-* key, HASH when a control ring is connected (netif.h: the
  // backend sends it once hashing is configured); anything else is a
  // violation.
  uint32_t rx_extra_types = 0;

  // TX: per pool slot (== request id).
  std::array<TxSlot, kTxPoolSlots> tx_slots{};
  uint32_t tx_in_flight = 0;       // ring slots (requests and extras) awaiting a response
  uint32_t tx_nulls_expected = 0;  // NETIF_RSP_NULLs owed for the extras of a packet answered
  // Extra-info slots pushed whose NETIF_RSP_NULL is not consumed yet (GSO
  // and multicast requests): while 0, no response can be one, and the TX
  // handler takes the loop without the positional NULL test.
  uint32_t tx_extras_in_flight = 0;
  // Requests in flight that name a kept RX page (TxSlot::rx_page): while 0,
  // the TX handler's common loop skips the test for one.
  uint32_t tx_rx_pages_in_flight = 0;
  // transmit() reclaims first when fewer ring slots than this are free:
  // kMaxTxSlots, or at every burst (kRingSize + 1) while requests name kept
  // RX pages, which go back to their RX ring only when reaped. A bound in
  // place of a second test, so that the fast path pays nothing for it.
  uint32_t tx_reclaim_below = kMaxTxSlots;
  // wait_for_tx_notify() is waiting: TX notifications are off, and the
  // handler's next run (the event, or the deadline) ends the wait.
  bool tx_notify_wait = false;

  // TX requests that name a kept RX page (TxSlot::rx_page), per request id:
  // whose page, to let go of when it is answered.
  struct TxRxPage {
    RxLoans* loans;
    uint32_t slot;
  };
  std::array<TxRxPage, kTxPoolSlots> tx_rx_pages{};

  // RX: the pool slot posted at each ring index.
  std::array<uint16_t, kRingSize> rx_posted{};
  // Fragments of staged and in-assembly packets, in arrival order (a FIFO:
  // packets are delivered in order, and a dropped packet is always the one
  // being assembled, at the head).
  std::array<RxFrag, kRxPoolSlotsMax> frags{};
  uint32_t frag_head = 0;  // next free (free-running)
  uint32_t frag_tail = 0;  // oldest live
  std::array<RxStaged, kRxPoolSlotsMax> staged{};
  uint32_t staged_head = 0;
  uint32_t staged_tail = 0;
  bool has_staged() const { return staged_tail != staged_head; }
  // The entries at free-running FIFO positions.
  RxFrag& frag_at(uint32_t i) { return frags[i % frags.size()]; }
  RxStaged& staged_at(uint32_t i) { return staged[i % staged.size()]; }
  // The packet being assembled from several responses.
  bool asm_active = false;
  bool asm_bad = false;
  bool asm_error_status = false;
  bool asm_last_seen = false;  // its last data slot arrived (extras may follow)
  uint32_t asm_first = 0;
  uint16_t asm_nfrags = 0;
  uint16_t asm_flags = 0;
  uint32_t asm_len = 0;
  uint16_t asm_gso_size = 0;  // its GSO extra, if one came
  uint8_t asm_gso_type = 0;
  uint8_t asm_hash_type = 0;  // its HASH extra, if one came (RxPacket::hash_type)
  uint32_t asm_hash = 0;
  uint8_t asm_extras = 0;  // extra-info slots it had
  bool extra_pending = false;

  // Event counters already added to the queue's counters, per port.
  EventCounters seen_tx;
  EventCounters seen_rx;
};

}  // namespace xpv
