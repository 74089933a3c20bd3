// SPDX-License-Identifier: MIT
// One netfront queue: a TX and an RX ring, their granted buffer pools, and
// the event channel(s) that connect them to the backend.
//
// Files: queue.cc (lifecycle, events and modes, errors, accounting), tx.cc
// (transmit and the TX response handler), rx.cc (receive, the RX response
// handler, refills).
//
// The rules this file applies, from netif.h and what real backends enforce
// (../shared/reference/netif-notes.md):
//  - buffers are granted once (BufferPool); a request names a pool slot by
//    its grant; TX request ids are pool slot ids, RX request ids are ring
//    indices (the backend answers RX in the slot of the request);
//  - a multi-slot TX packet: the first slot's size is the whole packet
//    length, NETTXF_more_data on every slot but the last, at most 18 slots;
//  - extra-info slots follow the first slot of a packet flagged
//    NETTXF_extra_info / NETRXF_extra_info; each TX extra is answered by a
//    NETIF_RSP_NULL response right after its packet's own (Linux netback's
//    make_tx_response);
//  - responses are consumed only by the handler (handle_responses), which
//    runs on an event in event mode and from the poll loop in poll mode;
//  - every response is copied out of the shared page once, then checked: id
//    in range and in flight, offset and length inside the page, producer
//    index not beyond what we asked for. A violation disconnects the device
//    with a counted, logged reason; no buffer is ever handed back twice.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evtchn/late_eoi.h"
#include "grant/buffer_pool.h"
#include "ring/netif.h"
#include "util/cpu.h"
#include "util/fd.h"
#include "xpv/counters.h"
#include "xpv/netfront.h"

namespace xpv {

enum QueueCounterId : uint32_t {
#define XPV_ID(name, doc) kCounter_##name,
  XPV_QUEUE_COUNTERS(XPV_ID)
#undef XPV_ID
};

// What a queue writes to xenstore for the backend.
struct QueueKeys {
  grant_ref_t tx_ring_ref = 0;
  grant_ref_t rx_ring_ref = 0;
  evtchn_port_t tx_port = 0;  // == rx_port when not split
  evtchn_port_t rx_port = 0;
  bool split = false;
};

// What a queue's connection negotiated (xenstore features).
struct QueueFeatures {
  bool split = false;        // split event channels
  bool sg = false;           // the backend takes multi-slot packets (feature-sg)
  uint8_t tx_gso_types = 0;  // bit per XEN_NETIF_GSO_TYPE_*: the backend's feature-gso-tcpv4/-v6
  uint8_t rx_gso_types = 0;  // the same for the GSO packets we said we take (DeviceConfig::rx_gso)
  bool rx_hash = false;  // a control ring is connected: XEN_NETIF_EXTRA_TYPE_HASH extras may come
  bool rx_zero_copy = false;  // DeviceConfig::rx_zero_copy: received pages may be kept
};

struct QueueTeardown {
  PoolTeardownReport pages;  // rings and pools together
  uint64_t rx_dropped_staged = 0;
  uint64_t tx_unanswered = 0;
  uint32_t rx_pages_kept = 0;  // RX pages the application still kept: retired, not ended
};

class QueueImpl {
 public:
  static constexpr uint32_t kRingSize = netif::kTxRingSize;  // == kRxRingSize
  static constexpr uint32_t kTxPoolSlots = kRingSize;
  // RX: a page for each ring slot. With zero-copy receive (rx_zero_copy)
  // as many again, which the application may keep while the ring stays
  // full: kept pages wait for their TX responses when forwarded by their
  // grants, and a pool the size of the ring left the ring half empty (and
  // made every packet beyond half the pool a copy) while they did.
  static constexpr uint32_t kRxPoolSlots = kRingSize;
  static constexpr uint32_t kRxLendSlots = kRingSize;
  static constexpr uint32_t kRxPoolSlotsMax = kRxPoolSlots + kRxLendSlots;
  static constexpr uint32_t kRefillBatch = 32;

  explicit QueueImpl(uint32_t index);
  ~QueueImpl();
  Status init();  // the stable event fd

  // ---- control path ----
  // Grants rings and pools to `backend`, allocates the event channel(s),
  // fills the RX ring. The data path stays stopped until start().
  Status setup(Platform& plat, GrantSharer& sharer, domid_t backend, const QueueFeatures& f,
               int wake_fd);
  QueueKeys keys() const;
  void start();  // after the backend is Connected: kick and open the data path
  // Closes the data path and waits for any call in progress to leave.
  void stop();
  // After stop(), while the backend still serves: waits up to timeout_ms for
  // every published TX request to be answered. Returns the slots left.
  uint32_t drain_tx(uint32_t timeout_ms);
  // Ends access to everything (after stop()). Accounts for every buffer.
  QueueTeardown teardown(bool platform_gone = false);
  bool connected() const { return conn_ != nullptr; }
  // Set by the data path when the backend broke the protocol.
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  std::string broken_reason() const;

  // ---- data path (one thread at a time) ----
  uint16_t transmit(std::span<const TxPacket> pkts);
  uint16_t receive(uint16_t max, Queue::Deliver fn, void* ctx);
  bool poll();
  bool arm(Queue::ArmFor what, bool take_events = true);
  void set_mode(QueueMode m, bool take_events = true);
  // DeviceConfig::experiment_reap_tx_in_transmit (set before start).
  void set_reap_tx_in_transmit(bool on) { reap_tx_in_transmit_ = on; }
  uint32_t tx_done_cleanup(uint32_t max);
  // A multicast filter change for the backend (netif.h: a dummy TX request
  // with an XEN_NETIF_EXTRA_TYPE_MCAST_ADD/DEL extra-info slot). EAGAIN when
  // the ring has no room for it now.
  Status send_mcast(uint8_t extra_type, const MacAddr& group);
  Queue::RingState ring_state();
  bool rx_monitor(Queue::RxMonitor* out);
  QueueMode mode() const { return mode_.load(std::memory_order_relaxed); }
  int event_fd() const { return epfd_.get(); }
  uint32_t rx_event_port();
  uint8_t* tx_buffer();
  void tx_buffer_free(uint8_t* page);

  QueueCounters counters() const;
  void reset_counters();
  uint32_t index() const { return index_; }
  Queue& api() { return api_; }

  // Where every buffer of the live connection is (tests and the fuzz
  // target's leak oracle). With no response half-consumed, these add up:
  //   tx_pool_free + tx_slots_in_flight + tx_slots_lent == tx_pool_size
  //   tx_slots_in_flight + tx_extras_unanswered == tx_requests_unanswered
  //     (req_prod_pvt - rsp_cons)
  //   tx_extras_counted == tx_extras_unanswered
  //   tx_rx_pages_counted == tx_slots_by_rx_grant
  //   rx_pool_free + rx_buffers_posted + rx_buffers_held + rx_buffers_kept == rx_pool_size
  struct Accounting {
    uint32_t tx_pool_size = 0;
    uint32_t tx_pool_free = 0;
    uint32_t tx_slots_in_flight = 0;      // slots whose request awaits a response
    uint32_t tx_slots_lent = 0;           // tx_buffer() pages held by the caller
    uint32_t tx_extras_unanswered = 0;    // extra-info slots whose NETIF_RSP_NULL is to come
    uint32_t tx_extras_counted = 0;       // the same as the TX handler counts it (its fast loop)
    uint32_t tx_requests_unanswered = 0;  // ring slots published or queued, no response consumed
    uint32_t rx_pool_size = 0;
    uint32_t rx_pool_free = 0;
    uint32_t rx_buffers_posted = 0;     // requests posted, response not consumed
    uint32_t rx_buffers_held = 0;       // answered, staged or being assembled
    uint32_t rx_buffers_kept = 0;       // delivered and kept (zero-copy), not yet back in the pool
    uint32_t tx_slots_by_rx_grant = 0;  // in-flight TX requests naming a kept RX page's grant
    uint32_t tx_rx_pages_counted = 0;   // the same as the TX handler counts it (its fast loop)
  };
  Accounting accounting() const;  // all zero when not connected

  // The grants of both buffer pools of the live connection (static grants:
  // the backend may map them once), TX pages read-only for the backend.
  struct PoolGrants {
    std::vector<grant_ref_t> tx;
    std::vector<grant_ref_t> rx;
  };
  PoolGrants pool_grants() const;
  // Which mode this connection runs in (counted: static_grant_connections
  // or grant_copy_connections).
  void note_static_grants(bool on) {
    count(on ? kCounter_static_grant_connections : kCounter_grant_copy_connections);
  }

  // For tests and the fuzz target: the live connection's shared ring pages.
  netif::TxFrontRing* tx_ring();
  netif::RxFrontRing* rx_ring();
  // For tests: runs between each TX re-arm (rsp_event stored, fenced: by the
  // handler, or moved past waiting responses by leave_tx_for_next_push) and
  // the later reads of the producer in that handler run, where a backend's
  // push races with it.
  void set_tx_rearm_hook(void (*fn)(void* ctx), void* ctx) {
    tx_rearm_hook_ = fn;
    tx_rearm_hook_ctx_ = ctx;
  }

 private:
  struct Conn;
  struct TxSlot {                // one byte: the data path writes it with one store
    bool in_flight : 1 = false;  // a request naming this slot awaits its response
    bool head : 1 = false;       // the first slot of its packet
    bool lent : 1 = false;       // handed to the caller by tx_buffer()
    uint8_t extras : 2 = 0;      // extra-info slots that followed its request
    bool mcast : 1 = false;      // a multicast filter change, not a packet
    bool rx_page : 1 = false;    // names a kept RX page's grant (Conn::tx_rx_pages)
  };
  struct RxFrag {
    uint16_t slot;
    uint16_t offset;
    uint16_t len;
  };
  struct RxStaged {
    uint32_t first_frag;  // index into the frag ring
    uint16_t nfrags;
    uint16_t flags;
    uint32_t len;
    uint16_t gso_size;
    uint8_t gso_type;
    uint8_t hash_type;  // RxPacket::hash_type
    uint32_t hash;
  };

  // The data path's lock: transmit and receive of one queue may run on
  // different threads (DPDK allows rx_burst and tx_burst of a queue id on two
  // lcores), and teardown must wait for a call in progress. Uncontended it
  // costs one atomic exchange per burst.
  void lock() {
    while (lock_.test_and_set(std::memory_order_acquire)) {
      while (lock_.test(std::memory_order_relaxed))
        cpu_relax();
    }
  }
  void unlock() { lock_.clear(std::memory_order_release); }
  bool enter() {
    lock();
    if (active_.load(std::memory_order_relaxed)) return true;
    unlock();
    return false;
  }
  void leave() { unlock(); }

  struct TxOne {
    int status;      // 1 queued, 0 refused (never sendable), -1 no room
    uint32_t len;    // its bytes
    bool reclaimed;  // whether the handler has run for this burst
  };
  TxOne transmit_one(const TxPacket& p, bool reclaimed);
  void reclaim_tx();
  bool handle_responses();  // both rings; the event handler
  // The TX response handler: consumes the responses waiting, up to
  // `max_packets` completed packets. Returns the packets completed; *work
  // says whether it consumed any response.
  // kBudget: stop before the packet that would exceed max_packets (for
  // tx_done_cleanup); the handler proper has no budget and counts nothing.
  template <bool kBudget>
  uint32_t reap_tx(uint32_t max_packets, bool* work);
  bool handle_tx_responses();
  // Poll-mode receive hands complete single-slot packets straight to its
  // caller while it has room (no staging).
  struct Direct {
    Queue::Deliver fn;
    void* ctx;
    uint16_t max;
    uint16_t n;
    uint64_t bytes;
    uint32_t kept;  // packets the caller kept (zero-copy)
  };
  bool handle_rx_responses(Direct* direct = nullptr);
  bool rx_slow(uint32_t idx, const netif::RxResponse& r, uint16_t slot);
  void refill_rx(bool force);
  // The queue's pages kept by the application, taken back into the pool.
  void take_back_kept();
  // Frees the retired pools whose pages all came back (control path).
  void free_retired();
  void rearm_tx();
  bool leave_tx_for_next_push(uint32_t waiting);
  void wait_for_tx_notify();
  // epfd_ readable until the next take_kick(): a sleeper wakes or does not
  // sleep.
  void kick() {
    eventfd_signal(kick_.get());
    kicked_.store(true, std::memory_order_release);
  }
  void take_kick() {
    if (kicked_.exchange(false, std::memory_order_acq_rel)) eventfd_drain(kick_.get());
  }
  void sync_events();
  uint32_t process_events();
  void disarm();
  // The backend broke the protocol: count it, log the reason, disconnect.
  void protocol_violation(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // One of our own platform calls failed (notify, the event channel): the
  // queue cannot go on either, but the backend is not to blame.
  void local_failure(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void break_queue(QueueCounterId why, const char* what, const char* fmt, va_list ap);
  void notify(evtchn_port_t port);
  void count(QueueCounterId id, uint64_t n = 1) {
    auto& c = counters_[id];
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  // Sets a flag for the lifetime of a scope (restoring its old value): where
  // the data path is, for the tx_reaped_in_xmit invariant counter.
  struct ScopedFlag {
    explicit ScopedFlag(bool& f) : f_(f), old_(f) { f = true; }
    ~ScopedFlag() { f_ = old_; }
    bool& f_;
    bool old_;
  };
  bool in_xmit_ = false;              // inside transmit()
  bool in_handler_ = false;           // inside an event handler run by process_events()
  bool reap_tx_in_transmit_ = false;  // the experiment: the pre-fix Linux rule
  void (*tx_rearm_hook_)(void*) = nullptr;
  void* tx_rearm_hook_ctx_ = nullptr;

  const uint32_t index_;
  Queue api_;
  std::unique_ptr<Conn> conn_;
  // RX pools of past connections whose pages the application still kept,
  // with their tables: ended once the last page comes back.
  struct Retired;
  std::vector<std::unique_ptr<Retired>> retired_;
  std::atomic<bool> active_{false};
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  std::atomic<bool> broken_{false};
  std::atomic<QueueMode> mode_{QueueMode::kPoll};
  std::string broken_reason_;
  int wake_fd_ = -1;  // the device's control wake-up
  UniqueFd epfd_;     // stable across reconnects: holds the live event fd
  UniqueFd kick_;     // makes epfd_ readable on demand (kick(), take_kick())
  // kick_ was written since take_kick() last read it. Set after the write:
  // a take_kick() that misses a kick in flight leaves it readable for the
  // next one (a wake-up is what it asked for), and one that finds the flag
  // clear skips a read that could only fail (a system call per sleep and per
  // wake-up saved).
  std::atomic<bool> kicked_{false};
  std::array<std::atomic<uint64_t>, kQueueCounterCount> counters_{};
};

}  // namespace xpv
