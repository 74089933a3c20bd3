// SPDX-License-Identifier: MIT
// The TX half of a queue: transmit (copy into pre-granted pages, or
// zero-copy from pages lent by tx_buffer()), and the TX response handler.
//
// TX request ids are pool slot ids. A multi-slot packet: the first slot's
// size is the whole packet length, NETTXF_more_data on every slot but the
// last, at most XEN_NETIF_NR_SLOTS_MIN (18) slots (netif.h). A packet the
// backend segments (TSO) has NETTXF_extra_info on its first slot and an
// XEN_NETIF_EXTRA_TYPE_GSO extra-info slot right after it, answered by a
// NETIF_RSP_NULL response after the packet's own (netif.h, "Guest transmit";
// Linux netback's make_tx_response). TX responses are
// consumed only by the handler: from the poll loop in poll mode, for an event
// that fired in event mode; never by the transmit path while notifications
// are armed.
#include <algorithm>
#include <cstring>

#include "netfront/queue_conn.h"

namespace xpv {

namespace {

// Slot ids the TX fast path takes from its pool at a time.
constexpr uint32_t kTxIdBatch = 64;

// A partial checksum for the backend to complete (netif.h: NETTXF_csum_blank,
// and the data is known good: NETTXF_data_validated, as Linux netfront sets
// both for CHECKSUM_PARTIAL).
constexpr uint16_t kTxCsumFlags = netif::kTxCsumBlank | netif::kTxDataValidated;
// Branch-free: the request bit times the flags (a multiply by 3, one lea).
inline uint16_t csum_flags(const TxPacket& p) {
  return static_cast<uint16_t>(uint16_t{p.csum_partial} * kTxCsumFlags);
}

// A TX response with status NETIF_RSP_OKAY and an id below kTxPoolSlots, in
// one compare: the id's 16 bits under the status's.
inline bool okay_in_range(const netif::TxResponse& r) {
  return (uint32_t{static_cast<uint16_t>(r.status)} << 16 | r.id) < QueueImpl::kTxPoolSlots;
}

// A packet into its slot page. Frames of 16..64 bytes, the size that bounds
// the packet rate, move as two or four overlapping 16-byte copies: no call,
// no length loop, and never a read past src + len.
inline void copy_packet(uint8_t* dst, const uint8_t* src, uint32_t len) {
  if (len - 16u <= 48u) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + len - 16, src + len - 16, 16);
    if (len > 32) {
      std::memcpy(dst + 16, src + 16, 16);
      std::memcpy(dst + len - 32, src + len - 32, 16);
    }
    return;
  }
  std::memcpy(dst, src, len);
}
// Every TX request is written here (netif.h's netif_tx_request).
inline void put_request(netif::TxRequest& q, grant_ref_t gref, uint32_t offset, uint16_t flags,
                        uint32_t id, uint32_t size) {
  q.gref = gref;
  q.offset = static_cast<uint16_t>(offset);
  q.flags = flags;
  q.id = static_cast<uint16_t>(id);
  q.size = static_cast<uint16_t>(size);
}

}  // namespace

// The TX response handler (netif.h: one response per request, with the
// request's id). Rules, each checked here and only here: the id names a slot
// of ours that is in flight; the status is OKAY, ERROR or DROPPED;
// NETIF_RSP_NULL answers exactly the extra-info slots of the request
// answered just before it; the producer is not beyond what we published.
template <bool kBudget>
uint32_t QueueImpl::reap_tx(uint32_t max_packets, bool* work) {
  Conn& c = *conn_;
  uint32_t packets = 0;
  bool rearmed = false;     // rsp_event was set by this call
  uint32_t first_look = 0;  // rsp_prod as the first look after that re-arm's fence saw it
  // A run of the handler ends a wait for a notification (that event, or
  // the deadline, is this run): it consumes what it finds and re-arms.
  c.tx_notify_wait = false;
  for (;;) {
    if (rearmed && tx_rearm_hook_) [[unlikely]]
      tx_rearm_hook_(tx_rearm_hook_ctx_);
    ring::Available a = c.tx.available_responses();
    if (a.overflow) {
      protocol_violation(
          "TX response producer %u is more than the %u requests outstanding "
          "(RING_RESPONSE_PROD_OVERFLOW)",
          ring::load_relaxed(c.tx.header()->rsp_prod), c.tx_in_flight);
      *work = true;
      return packets;
    }
    if (kBudget && a.count && packets >= max_packets) return packets;  // the rest stays
    if (a.count == 0) {
      if (mode() == QueueMode::kPoll) {
        c.tx.set_response_event(kDisarmedDistance);
        return packets;
      }
      rearm_tx();
      if (tx_rearm_hook_) [[unlikely]]
        tx_rearm_hook_(tx_rearm_hook_ctx_);
      const ring::Available raced = c.tx.available_responses();
      if (raced.count == 0 && !raced.overflow) return packets;
      rearmed = true;
      first_look = c.tx.rsp_cons() + raced.count;
      continue;
    }
    // Answered since this call re-armed. Below rsp_event they raised no
    // event: consumed now. Once they reach it, they are left to the event
    // that may come for them; consumed, they would leave that event nothing
    // (a spurious event). This holds for every response published after the
    // re-arm, not only those the first look after it found:
    //  - a push the first look did not see read our rsp_event (each side
    //    stores its index, fences, then loads the other's: one of the two
    //    loads sees the other's store), so when it passed rsp_event its
    //    event is certain;
    //  - a push the first look saw may have read the rsp_event before ours:
    //    its event may or may not come (wait_for_tx_notify()).
    if (rearmed && !kBudget && c.tx.response_event_reached()) {
      const uint32_t cons = c.tx.rsp_cons();
      const uint32_t event = cons + c.tx.response_event_ahead();
      const bool certain = static_cast<uint32_t>(event - 1 - first_look) <
                           static_cast<uint32_t>(cons + a.count - first_look);
      if (!certain) wait_for_tx_notify();
      *work = true;  // found, and left to the event that comes for it
      return packets;
    }
    *work = true;
    // The invariant that took Linux from 4.5 to 11.5 Gb/s: with notifications
    // armed, only the event handler consumes TX responses. Count any breach.
    if (in_xmit_ && !in_handler_ && mode() == QueueMode::kEvent)
      count(kCounter_tx_reaped_in_xmit, a.count);
    TxSlot* const slots = c.tx_slots.data();
    BufferPool& pool = *c.tx_pool;
    const uint32_t cons = c.tx.rsp_cons();
    uint32_t freed[kRingSize];  // returned to the pool once per batch
    uint32_t nfreed = 0;
    uint32_t k = 0;
    const char* violation = nullptr;
    netif::TxResponse r{};
    // The answer to a request of ours (not to an extra-info slot): the rule
    // of both loops below, written once. nullptr when r is one, and then *s
    // is its slot (loaded once for both lambdas).
    auto fault = [slots](const netif::TxResponse& rsp, TxSlot* s) -> const char* {
      if (!okay_in_range(rsp)) [[unlikely]] {
        // A NULL's id means nothing: it is judged by its place.
        if (rsp.status == netif::kRspNull)
          return "NETIF_RSP_NULL, which answers an extra-info slot: none was due";
        if (rsp.id >= kTxPoolSlots) return "out of range";
      }
      *s = slots[rsp.id];
      if (!s->in_flight) [[unlikely]]
        return "not in flight (answered twice?)";
      return nullptr;
    };
    // A valid answer: its packet's errors counted, its slot back to the
    // pool. false (nothing done) when its packet is beyond the budget.
    // `rx_pages`: a slot may name a kept RX page (false only while none does).
    auto answered = [&](const netif::TxResponse& rsp, TxSlot s, bool rx_pages) -> bool {
      // The id is in range (fault() said so): the same test as fault()'s
      // first says whether the status is OKAY, with no other compare.
      if (!okay_in_range(rsp) && s.head) [[unlikely]] {
        count(s.mcast                            ? kCounter_mcast_refused
              : rsp.status == netif::kRspDropped ? kCounter_tx_dropped
                                                 : kCounter_tx_errors);
      }
      if (kBudget && s.head && !s.mcast) {
        if (packets == max_packets) return false;  // the next packet is beyond the budget
        ++packets;
      }
      if (rx_pages && s.rx_page) {
        // Its kept RX page: the backend has read it (this response).
        const Conn::TxRxPage& pg = c.tx_rx_pages[rsp.id];
        pg.loans->release(pg.slot);
        if (--c.tx_rx_pages_in_flight == 0) c.tx_reclaim_below = kMaxTxSlots;
      }
      slots[rsp.id] = TxSlot{};
      freed[nfreed++] = rsp.id;
      return true;
    };
    TxSlot slot{};
    if ((c.tx_extras_in_flight | c.tx_rx_pages_in_flight) == 0) [[likely]] {
      // No extra-info slot awaits its NETIF_RSP_NULL: every response here
      // answers a request; and no request names a kept RX page.
      // The entries walked in place: a run to the end of the page, then one
      // from its start if the batch wraps.
      while (k < a.count && !violation) {
        const auto run = c.tx.responses_from(cons + k, a.count - k);
        const uint32_t k0 = k;
        for (const auto& e : run) {
          r = netif::TxFrontRing::copy_response(e);  // copied once
          violation = fault(r, &slot);
          if (violation || !answered(r, slot, false)) break;
          ++k;
        }
        if (k - k0 < run.size()) break;  // stopped inside the run
      }
    } else {
      for (; k < a.count; ++k) {
        r = c.tx.response_at(cons + k);  // copied once
        if (c.tx_nulls_expected) {
          // The extra-info slots of the packet answered just before:
          // positional, their id means nothing (netback leaves it as the
          // ring held it).
          if (r.status != netif::kRspNull) {
            violation = "not NETIF_RSP_NULL, where the answer to an extra-info slot was due";
            break;
          }
          --c.tx_nulls_expected;
          --c.tx_extras_in_flight;
          continue;
        }
        violation = fault(r, &slot);
        if (violation || !answered(r, slot, true)) break;
        c.tx_nulls_expected = slot.extras;
      }
    }
    // Each id was in flight, and is no longer: the slot table proved that
    // the pool has not got them back already.
    pool.free_bulk_owned(freed, nfreed);
    c.tx_in_flight -= k;  // ring slots answered: requests and extras
    if (violation) [[unlikely]] {
      c.tx.consume_responses(k + 1);
      protocol_violation("TX response for id %u (status %d): %s", r.id, r.status, violation);
      return packets;
    }
    c.tx.consume_responses(k);
  }
}

// Short of TX room: let the handler reclaim. In poll mode the poll loop runs
// it; in event mode it runs only for an event that fired, so the transmit
// path never consumes a response the backend's event was raised for.
void QueueImpl::reclaim_tx() {
  if (mode() == QueueMode::kPoll || reap_tx_in_transmit_) {
    handle_tx_responses();
  } else {
    process_events();
  }
}

uint16_t QueueImpl::transmit(std::span<const TxPacket> pkts) {
  if (!enter()) return 0;
  ScopedFlag xmit(in_xmit_);
  Conn& c = *conn_;
  if (broken_.load(std::memory_order_relaxed)) {
    leave();
    return 0;
  }
  bool reclaimed = false;  // reclaim_tx() ran in this burst
  auto reclaim = [&] {
    reclaimed = true;
    reclaim_tx();
  };
  // tx_reclaim_below: while requests name kept RX pages (zerocopy), every
  // burst reclaims, so that answered pages go back to their RX ring at once
  // and the receiving queue is not left short of pages (and made to copy)
  // until this ring fills.
  if (c.tx.free_requests() < c.tx_reclaim_below || c.tx_pool->available() < kMaxTxSlots) reclaim();
  if (broken_.load(std::memory_order_relaxed)) {
    leave();
    return 0;
  }

  // Hot state in locals for the burst; counters summed and stored once.
  // Stores into the shared ring and the slot pages may alias any member, so
  // the ring index and the slot ids live in locals too: the fast path takes
  // slot ids from the pool in bulk (as many as the ring has room for) and
  // commits its requests to the ring once, before any other code looks.
  // Few live values, so that the loop keeps them all in registers.
  BufferPool& pool = *c.tx_pool;
  netif::TxFrontRing& ring = c.tx;
  TxSlot* const slots = c.tx_slots.data();
  uint8_t* const pool_lo = pool.data(0);
  // setup() gives the TX pool kTxPoolSlots pages: a constant, not a register.
  constexpr uintptr_t pool_bytes = uintptr_t{kTxPoolSlots} * kPageSize;
  const grant_ref_t* const refs = pool.refs();
  const uint32_t prod0 = ring.req_prod_pvt();
  const size_t n = pkts.size();
  uint64_t bytes = 0;
  uint32_t refused = 0;
  bool ring_full = false;
  uint32_t ids[kTxIdBatch];
  uint32_t* id = ids;  // [id, id_end): taken from the pool, not yet used
  uint32_t* id_end = ids;
  uint32_t prod = prod0;
  auto sync = [&] {
    ring.commit_requests(prod - ring.req_prod_pvt());
    pool.free_bulk(id, static_cast<uint32_t>(id_end - id));
    id = id_end = ids;
  };

  const TxPacket* const first = pkts.data();
  const TxPacket* const end = first + n;
  const TxPacket* next = first;  // walked by pointer: no index kept live
  for (; next != end; ++next) {
    const TxPacket& p = *next;
    // Fast path: one segment that fits a page and is not one of our lent
    // pages: one copy, one request (netif.h: a single slot whose size is
    // the packet's length).
    if (p.nsegs == 1 && p.gso_type == kGsoNone) {
      const uint8_t* d = static_cast<const uint8_t*>(p.segs[0].data);
      const uint32_t len = p.segs[0].len;
      const bool lent =
          reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(pool_lo) < pool_bytes;
      if (!lent && !p.segs[0].loan && len - 1u < kPageSize) [[likely]] {
        if (id == id_end) {
          sync();
          if ((ring.full() || pool.available() == 0) && !reclaimed) reclaim();
          const uint32_t want = static_cast<uint32_t>(std::min<size_t>(
              {kTxIdBatch, n - size_t(next - first), size_t{ring.free_requests()}}));
          const uint32_t got =
              broken_.load(std::memory_order_relaxed) ? 0 : pool.alloc_bulk(ids, want);
          id_end = ids + got;
          prod = ring.req_prod_pvt();
          if (got == 0) {
            ring_full = true;
            break;
          }
        }
        const uint32_t slot = *id++;
        copy_packet(pool_lo + size_t{slot} * kPageSize, d, len);
        put_request(ring.request_at(prod++), refs[slot], 0, csum_flags(p), slot, len);
        slots[slot] = TxSlot{true, true, false};
        bytes += len;
        continue;
      }
    }
    // General path: several segments, more than a page, or lent pages.
    sync();
    const TxOne r = transmit_one(p, reclaimed);
    reclaimed = r.reclaimed;
    prod = ring.req_prod_pvt();
    if (r.status < 0) {
      ring_full = true;
      break;
    }
    if (r.status == 0) {
      ++refused;  // can never be sent: refused (counted), not retried
    } else {
      bytes += r.len;
    }
    if (broken_.load(std::memory_order_relaxed)) {
      ++next;
      break;
    }
  }
  const size_t done = static_cast<size_t>(next - first);
  sync();
  const uint32_t committed = ring.req_prod_pvt() - prod0;
  const uint64_t packets = done - refused;
  c.tx_in_flight += committed;
  if (packets) count(kCounter_tx_packets, packets);
  if (bytes) count(kCounter_tx_bytes, bytes);
  if (refused) count(kCounter_tx_dropped, refused);
  if (ring_full) count(kCounter_ring_full);
  // At most one notification per burst, and only when the backend asked.
  if (committed && ring.push_requests_and_check_notify()) notify(c.tx_port);
  // The experiment (off by default): Linux netfront before the fix reaped
  // TX responses at the end of every xmit (xennet_tx_buf_gc) while
  // notifications were armed, so that the event raised for them found
  // nothing: a spurious event, and under late EOI a delayed unmask.
  if (reap_tx_in_transmit_ && mode() == QueueMode::kEvent &&
      !broken_.load(std::memory_order_relaxed))
    handle_tx_responses();
  leave();
  return static_cast<uint16_t>(done);
}

// One packet by the general rules. status 1 when queued, 0 when refused
// (it can never be sent), -1 when the ring or the pool has no room.
QueueImpl::TxOne QueueImpl::transmit_one(const TxPacket& p, bool reclaimed) {
  Conn& c = *conn_;
  uint64_t len = 0;
  for (uint16_t i = 0; i < p.nsegs; ++i)
    len += p.segs[i].len;
  if (len == 0 || len > kMaxPacketLen || p.nsegs == 0) return {0, 0, reclaimed};
  // TSO: a GSO type the backend offered (feature-gso-tcpv4/-tcpv6), a
  // segment size, and a partial checksum for it to complete per segment.
  const bool gso = p.gso_type != kGsoNone;
  if (gso && (p.gso_type > kGsoTcpV6 || !(c.tx_gso_types & (1u << p.gso_type)) || p.gso_size == 0 ||
              !p.csum_partial))
    return {0, 0, reclaimed};
  // Data inside the TX pool must lie in a page the caller holds (lent by
  // tx_buffer()), within it: a page given back may already be another
  // packet's, or this one's copy destination. Refused, never read.
  for (uint16_t i = 0; i < p.nsegs; ++i) {
    const uint8_t* d = static_cast<const uint8_t*>(p.segs[i].data);
    uint32_t slot = 0, off = 0, last_slot = 0, last_off = 0;
    const bool starts_in = c.tx_pool->locate(d, &slot, &off);
    const bool ends_in =
        p.segs[i].len && c.tx_pool->locate(d + p.segs[i].len - 1, &last_slot, &last_off);
    if ((starts_in || ends_in) &&
        (!starts_in || !c.tx_slots[slot].lent || off + p.segs[i].len > kPageSize)) {
      return {0, 0, reclaimed};
    }
  }
  // Zero-copy when every segment lies within a page lent by tx_buffer(),
  // or within a kept RX page granted by our domain to this queue's backend
  // domain: the request names that page's grant directly (netif.h: any grant
  // of ours will do; a grant is from a domain to a domain, whichever ring
  // names it). The first
  // slot must carry the whole Ethernet header: netback drops a packet whose
  // first slot has fewer than 14 bytes of its own.
  bool zero_copy = p.nsegs <= kMaxTxSlots;
  uint32_t zslots[kMaxTxSlots];
  uint32_t zoffs[kMaxTxSlots];
  RxLoans* zloans[kMaxTxSlots];
  uint32_t nrx = 0;  // segments in kept RX pages: each takes a TX slot id
  for (uint16_t i = 0; zero_copy && i < p.nsegs; ++i) {
    uint32_t slot = 0, off = 0;
    RxLoans* const l = p.segs[i].loan;
    if (l) {
      zero_copy = l->granted_between(c.self, c.backend) && l->locate(p.segs[i].data, &slot, &off);
      ++nrx;
    } else {
      zero_copy = c.tx_pool->locate(p.segs[i].data, &slot, &off) && c.tx_slots[slot].lent;
      for (uint16_t j = 0; zero_copy && j < i; ++j)
        zero_copy = zloans[j] || zslots[j] != slot;
    }
    zero_copy =
        zero_copy && off + p.segs[i].len <= kPageSize && p.segs[i].len >= (i == 0 ? 14u : 1u);
    zloans[i] = l;
    zslots[i] = slot;
    zoffs[i] = off;
  }
  const uint32_t nslots =
      zero_copy ? p.nsegs : static_cast<uint32_t>((len + kPageSize - 1) / kPageSize);
  // More than XEN_NETIF_NR_SLOTS_MIN slots, or several slots for a backend
  // without feature-sg: never sendable.
  if (nslots > kMaxTxSlots || (nslots > 1 && !c.sg)) return {0, 0, reclaimed};
  const uint32_t nextras = gso ? 1 : 0;
  auto no_room = [&] {
    return c.tx.free_requests() < nslots + nextras ||
           c.tx_pool->available() < (zero_copy ? nrx : nslots);
  };
  if (no_room() && !reclaimed) {
    reclaimed = true;
    reclaim_tx();
  }
  if (no_room() || broken_.load(std::memory_order_relaxed)) return {-1, 0, reclaimed};
  // netif.h: the first slot's size is the whole packet; NETTXF_more_data on
  // every slot but the last. Zero-copy: a slot per segment, in its own page;
  // otherwise the segments are gathered into fresh pages, a page per slot.
  uint16_t seg = 0;
  uint32_t seg_off = 0;
  uint64_t left = len;
  for (uint32_t s = 0; s < nslots; ++s) {
    uint32_t slot = 0, off = 0, chunk = 0;
    grant_ref_t gref = 0;
    RxLoans* rx_page = nullptr;
    if (zero_copy && zloans[s]) {
      // A TX slot for the request id; the data stays in the kept RX page,
      // held for the backend until the response (RxLoans::pin).
      c.tx_pool->alloc(&slot);  // no_room() said there are nrx free
      rx_page = zloans[s];
      rx_page->pin(zslots[s]);
      c.tx_rx_pages[slot] = {rx_page, zslots[s]};
      gref = rx_page->ref(zslots[s]);
      off = zoffs[s];
      chunk = p.segs[s].len;
    } else if (zero_copy) {
      slot = zslots[s];
      gref = c.tx_pool->ref(slot);
      off = zoffs[s];
      chunk = p.segs[s].len;
    } else {
      c.tx_pool->alloc(&slot);  // no_room() said there are nslots free
      gref = c.tx_pool->ref(slot);
      uint8_t* page = c.tx_pool->data(slot);
      chunk = static_cast<uint32_t>(std::min<uint64_t>(left, kPageSize));
      for (uint32_t filled = 0; filled < chunk;) {
        const TxSegment& sg = p.segs[seg];
        const uint32_t n = std::min(chunk - filled, sg.len - seg_off);
        std::memcpy(page + filled, static_cast<const uint8_t*>(sg.data) + seg_off, n);
        filled += n;
        seg_off += n;
        if (seg_off == sg.len) {
          ++seg;
          seg_off = 0;
        }
      }
      left -= chunk;
    }
    uint16_t flags = s + 1 < nslots ? netif::kTxMoreData : 0;
    if (s == 0) flags |= csum_flags(p) | (gso ? netif::kTxExtraInfo : 0);
    put_request(c.tx.next_request(), gref, off, flags, slot,
                s == 0 ? static_cast<uint32_t>(len) : chunk);
    c.tx_slots[slot] = TxSlot{
        true, s == 0, false, static_cast<uint8_t>(s == 0 ? nextras : 0), false, rx_page != nullptr};
    if (rx_page) {
      ++c.tx_rx_pages_in_flight;
      c.tx_reclaim_below = kRingSize + 1;
    }
    c.tx.commit_request();
    if (s == 0 && gso) {
      ++c.tx_extras_in_flight;
      // netif.h: the extra-info slot follows the first request; for TCP the
      // GSO size is the MSS.
      netif::ExtraInfo e{};
      e.type = netif::kExtraTypeGso;
      e.u.gso.size = p.gso_size;
      e.u.gso.type = p.gso_type;
      netif::TxRequest& slot_of_extra = c.tx.next_request();
      slot_of_extra = netif::TxRequest{};
      std::memcpy(&slot_of_extra, &e, sizeof e);
      c.tx.commit_request();
    }
  }
  if (nrx && zero_copy) count(kCounter_tx_by_rx_grant);
  return {1, static_cast<uint32_t>(len), reclaimed};
}

// netif.h: "The list is amended by the frontend by sending dummy transmit
// requests containing XEN_NETIF_EXTRA_TYPE_MCAST_{ADD,DEL} extra-info
// fragments". Linux netback answers the request (OKAY, or ERROR when its
// list is full) and the extra slot with NETIF_RSP_NULL, and reads nothing
// of the request's page: size 0 in a slot of ours.
Status QueueImpl::send_mcast(uint8_t extra_type, const MacAddr& group) {
  if (!enter()) return make_error(ENOTCONN, "the queue is not connected");
  Conn& c = *conn_;
  auto no_room = [&] { return c.tx.free_requests() < 2 || c.tx_pool->available() == 0; };
  if (!broken_.load(std::memory_order_relaxed) && no_room()) reclaim_tx();
  if (broken_.load(std::memory_order_relaxed) || no_room()) {
    const bool broken = broken_.load(std::memory_order_relaxed);
    leave();
    return broken ? make_error(ENOTCONN, "the queue is disconnected")
                  : make_error(EAGAIN, "no room in the TX ring for a multicast filter change");
  }
  uint32_t slot = 0;
  c.tx_pool->alloc(&slot);
  put_request(c.tx.next_request(), c.tx_pool->ref(slot), 0, netif::kTxExtraInfo, slot, 0);
  c.tx_slots[slot] = TxSlot{true, true, false, 1, true};
  c.tx.commit_request();
  netif::ExtraInfo e{};
  e.type = extra_type;
  std::memcpy(e.u.mcast.addr, group.data(), 6);
  netif::TxRequest& slot_of_extra = c.tx.next_request();
  slot_of_extra = netif::TxRequest{};
  std::memcpy(&slot_of_extra, &e, sizeof e);
  c.tx.commit_request();
  ++c.tx_extras_in_flight;
  c.tx_in_flight += 2;
  count(kCounter_mcast_requests);
  if (c.tx.push_requests_and_check_notify()) notify(c.tx_port);
  leave();
  return {};
}

bool QueueImpl::handle_tx_responses() {
  bool work = false;
  reap_tx<false>(UINT32_MAX, &work);
  return work;
}

// DPDK's tx_done_cleanup: the handler, run now at the caller's request
// (not by the transmit path), up to `max` completed packets.
uint32_t QueueImpl::tx_done_cleanup(uint32_t max) {
  if (!enter()) return 0;
  uint32_t done = 0;
  if (!broken_.load(std::memory_order_relaxed)) {
    ScopedFlag h(in_handler_);
    bool work = false;
    done = reap_tx<true>(max == 0 ? UINT32_MAX : max, &work);
  }
  leave();
  return done;
}

uint8_t* QueueImpl::tx_buffer() {
  if (!enter()) return nullptr;
  Conn& c = *conn_;
  uint32_t slot = 0;
  uint8_t* p = nullptr;
  if (c.tx_pool->alloc(&slot)) {
    c.tx_slots[slot].lent = true;
    p = c.tx_pool->data(slot);
  }
  leave();
  return p;
}

void QueueImpl::tx_buffer_free(uint8_t* page) {
  if (!enter()) return;
  Conn& c = *conn_;
  uint32_t slot = 0, off = 0;
  if (c.tx_pool->locate(page, &slot, &off) && c.tx_slots[slot].lent &&
      !c.tx_slots[slot].in_flight) {
    c.tx_slots[slot].lent = false;
    c.tx_pool->free(slot);
  }
  leave();
}

}  // namespace xpv
