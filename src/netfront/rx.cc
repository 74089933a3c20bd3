// SPDX-License-Identifier: MIT
// The RX half of a queue: receive, the RX response handler, refills.
//
// RX request ids are ring indices: the backend answers in the slot of the
// request, echoing its id (netif.h). A packet is one response, or several
// chained by NETRXF_more_data, optionally followed by extra-info slots
// (NETRXF_extra_info) of negotiated types. Poll-mode receive hands whole
// single-slot packets straight to the caller while it has room; everything
// else is staged and delivered in order.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "netfront/queue_conn.h"
#include "netfront/ctrl_ring.h"

namespace xpv {

namespace {

// The checks every RX response of a data slot passes, on the fast path and
// the slow one (netif.h): the id of the request at that ring index, and (for
// a data status) an offset and length inside the page.
inline bool rx_id_ok(const netif::RxResponse& r, uint32_t idx) {
  return r.id == (idx & kRingMask);
}

// A status of at least 1 byte with offset + status inside the page, in one
// compare: a status <= 0 becomes >= 0x8000 as an unsigned status - 1.
inline bool rx_data_in_page(const netif::RxResponse& r) {
  return uint32_t{static_cast<uint16_t>(r.status - 1)} + r.offset < kPageSize;
}

inline bool rx_response_ok(const netif::RxResponse& r, uint32_t idx) {
  if (!rx_id_ok(r, idx)) return false;
  if (r.status < 0) return true;                   // an error status carries no data
  if (r.status == 0) return r.offset < kPageSize;  // an empty slot still needs its offset inside
  return rx_data_in_page(r);
}

}  // namespace

uint16_t QueueImpl::receive(uint16_t max, Queue::Deliver fn, void* ctx) {
  if (!enter()) return 0;
  Conn& c = *conn_;
  // An idle poll, what a spinning application mostly makes: nothing staged,
  // no kept page back, and the backend's rsp_prod where we left it. The last
  // call refilled the ring and set rsp_event for this rsp_cons already, and
  // nothing but this queue's receive frees RX buffers, so there is nothing to
  // do: one load of rsp_prod instead of the whole path below.
  if (mode() == QueueMode::kPoll && !c.has_staged() && !(c.rx_loans && c.rx_loans->out()) &&
      !c.rx.responses_published()) [[likely]] {
    leave();
    return 0;
  }
  uint16_t n = 0;
  uint64_t bytes = 0;
  uint32_t kept_packets = 0;
  auto deliver_staged = [&] {
    RxFragment frags[kMaxRxFrags];
    BufferPool& pool = *c.rx_pool;
    while (n < max && c.has_staged()) {
      const RxStaged& s = c.staged_at(c.staged_tail);
      for (uint16_t f = 0; f < s.nfrags; ++f) {
        const RxFrag& fr = c.frag_at(s.first_frag + f);
        frags[f] = {pool.data(fr.slot) + fr.offset, fr.len};
      }
      RxLoans* const loans =
          c.rx_loans && c.rx_loans->can_lend(s.nfrags) ? c.rx_loans.get() : nullptr;
      const RxPacket pkt{frags,      s.nfrags,    s.len,  s.flags, s.gso_type,
                         s.gso_size, s.hash_type, s.hash, loans};
      const RxVerdict v = fn(ctx, pkt);
      if (v == RxVerdict::kStop) return false;
      const bool kept = v == RxVerdict::kKept && loans;
      for (uint16_t f = 0; f < s.nfrags; ++f) {
        const uint32_t slot = c.frag_at(s.first_frag + f).slot;
        if (kept) {
          loans->lend(slot);  // counted below
        } else {
          pool.free(slot);
        }
      }
      c.frag_tail += s.nfrags;
      kept_packets += kept;
      bytes += s.len;
      ++c.staged_tail;
      ++n;
    }
    return true;
  };
  // Pages the application let go of since the last call: back in the pool
  // first, so that the packets of this call may be kept in turn.
  if (c.rx_loans && c.rx_loans->out()) take_back_kept();
  if (!broken_.load(std::memory_order_relaxed)) {
    if (mode() == QueueMode::kPoll) {
      // Older packets first; then the handler, which delivers what it finds
      // straight to the caller while the caller has room.
      // (Only called with something staged: it is not inlined, and most calls
      // find nothing staged.)
      if ((!c.has_staged() || deliver_staged()) && n < max) {
        Direct d{fn, ctx, max, n, 0, 0};
        handle_rx_responses(&d);
        n = d.n;
        bytes += d.bytes;
        kept_packets += d.kept;
        if (n < max && c.has_staged()) deliver_staged();  // multi-slot packets it staged
      }
    } else {
      take_kick();
      process_events();
      if (!broken_.load(std::memory_order_relaxed)) deliver_staged();
    }
  }
  if (n) {
    count(kCounter_rx_packets, n);
    count(kCounter_rx_bytes, bytes);
    if (kept_packets) count(kCounter_rx_kept, kept_packets);
  }
  if (!broken_.load(std::memory_order_relaxed)) refill_rx(false);
  leave();
  return n;
}

bool QueueImpl::handle_rx_responses(Direct* direct) {
  Conn& c = *conn_;
  bool work = false;
  // The caller's budget in locals: the callback is opaque to the compiler,
  // so anything it could reach would be reloaded after every packet.
  uint16_t dn = direct ? direct->n : 0;
  uint16_t dmax = direct ? direct->max : 0;
  uint64_t dbytes = 0;
  uint32_t dkept = 0;
  auto finish = [&](bool result) {
    if (direct) {
      direct->n = dn;
      direct->bytes += dbytes;
      direct->kept += dkept;
    }
    return result;
  };
  for (;;) {
    ring::Available a = c.rx.available_responses();
    if (a.overflow) {
      protocol_violation(
          "RX response producer %u is beyond the requests we posted "
          "(RING_RESPONSE_PROD_OVERFLOW)",
          ring::load_relaxed(c.rx.header()->rsp_prod));
      return finish(true);
    }
    if (a.count == 0) {
      refill_rx(false);
      if (mode() == QueueMode::kPoll) {
        c.rx.set_response_event(kDisarmedDistance);
        return finish(work);
      }
      // RING_FINAL_CHECK_FOR_RESPONSES: an event for the next response.
      ring::Available f = c.rx.final_check_for_responses();
      if (f.count == 0 && !f.overflow) return finish(work);
      continue;
    }
    work = true;
    const uint32_t cons = c.rx.rsp_cons();
    const uint16_t* const posted = c.rx_posted.data();
    BufferPool& pool = *c.rx_pool;
    uint8_t* const pages = pool.data(0);
    const Queue::Deliver fn = direct ? direct->fn : nullptr;
    void* const ctx = direct ? direct->ctx : nullptr;
    bool simple = !c.asm_active && !c.extra_pending;
    // Packets go straight to the caller only while nothing older is staged.
    if (c.has_staged()) dmax = dn;
    // Poll mode: no more responses than the caller has room for packets
    // (each takes one at least). The rest stay on the ring for its next call,
    // rather than staged and read twice; what the caller's room takes after
    // a batch of multi-slot packets, the next round of this loop does. A
    // packet may be left half-read: its assembly carries over, as when the
    // backend has published only part of it. (Nothing staged and room for
    // the whole batch, the common case, costs one compare.)
    uint32_t limit = a.count;
    if (a.count > static_cast<uint32_t>(dmax - dn) && direct) [[unlikely]] {
      const uint32_t taken = dn + (c.staged_head - c.staged_tail);
      if (taken >= direct->max) return finish(true);
      limit = std::min(limit, direct->max - taken);
    }
    // One descriptor for every single-slot packet handed over in this batch
    // (the callback gets it by const reference and may not keep it).
    RxFragment fr{nullptr, 0};
    RxPacket pkt{&fr, 1, 0, 0};
    RxLoans* const loans = c.rx_loans.get();
    uint32_t freed[kRingSize];  // delivered slots, back to the pool once per batch
    uint32_t nfreed = 0;
    uint32_t k = 0;
    // The batch, compiled twice: with zero-copy receive (pages may be lent to
    // the caller) and without, where the lending checks cost nothing. Stops
    // at a violation (k then names its slot): false.
    auto batch = [&](auto lending) {
      for (; k < limit; ++k) {
        const uint32_t idx = cons + k;
        const netif::RxResponse r = c.rx.response_at(idx);  // copied once
        const uint16_t slot = posted[idx & kRingMask];
        // Fast path, the common case: a whole packet in one slot (no more_data,
        // no extra info, data) that passes the checks.
        if (simple && !(r.flags & (netif::kRxMoreData | netif::kRxExtraInfo)) && rx_id_ok(r, idx) &&
            rx_data_in_page(r)) [[likely]] {
          const uint32_t len = static_cast<uint32_t>(r.status);
          if (dn < dmax) {
            // Poll mode: hand it to the caller at once (nothing older waits).
            fr.data = pages + size_t{slot} * kPageSize + r.offset;
            fr.len = len;
            pkt.len = len;
            pkt.flags = r.flags;
            if constexpr (decltype(lending)::value)
              pkt.loans = loans->can_lend(1) ? loans : nullptr;
            const RxVerdict v = fn(ctx, pkt);
            if (v != RxVerdict::kStop) {
              bool lent = false;
              if constexpr (decltype(lending)::value) {
                if (v == RxVerdict::kKept && pkt.loans) {
                  loans->lend(slot);
                  ++dkept;
                  lent = true;
                }
              }
              if (!lent) freed[nfreed++] = slot;
              ++dn;
              dbytes += len;
              continue;
            }
          }
          dmax = dn;  // the caller is full, or this packet is staged: stage the rest
          const uint32_t f = c.frag_head++;
          c.frag_at(f) = {slot, r.offset, static_cast<uint16_t>(len)};
          c.staged_at(c.staged_head++) = {f, 1, r.flags, len, 0, 0, 0, 0};
          continue;
        }
        if (!rx_slow(idx, r, slot)) return false;
        simple = !c.asm_active && !c.extra_pending;
        if (c.has_staged()) dmax = dn;
      }
      return true;
    };
    if (!(loans ? batch(std::true_type{}) : batch(std::false_type{}))) {
      pool.free_bulk_owned(freed, nfreed);
      c.rx.consume_responses(k + 1);
      return finish(true);
    }
    // Each slot was posted at a ring index consumed just now, once.
    pool.free_bulk_owned(freed, nfreed);
    c.rx.consume_responses(k);
  }
}

// The rare RX responses: extra-info slots, multi-slot packets, error
// statuses, and protocol violations. Returns false on a violation.
bool QueueImpl::rx_slow(uint32_t idx, const netif::RxResponse& r, uint16_t slot) {
  Conn& c = *conn_;
  if (c.extra_pending) {
    // This slot carries a netif_extra_info (netif.h); its buffer holds no
    // data. Only the types we negotiated may come, each once a packet.
    netif::ExtraInfo e;
    std::memcpy(&e, &r, sizeof e);
    c.rx_pool->free(slot);
    if (e.type >= 32 || !(c.rx_extra_types & (1u << e.type))) {
      protocol_violation(
          "RX extra-info slot at ring index %u has type %u, which we did not negotiate", idx,
          e.type);
      return false;
    }
    if (c.asm_extras & (1u << e.type)) {
      protocol_violation("RX extra-info slot at ring index %u repeats type %u in one packet", idx,
                         e.type);
      return false;
    }
    c.asm_extras = static_cast<uint8_t>(c.asm_extras | (1u << e.type));
    if (e.type == netif::kExtraTypeGso) {
      // xennet_set_skb_gso's rules, and only the types we advertised.
      if (e.u.gso.type > netif::kGsoTypeTcpV6 || !(c.rx_gso_types & (1u << e.u.gso.type))) {
        protocol_violation(
            "RX GSO extra at ring index %u has GSO type %u, which we did not "
            "advertise (feature-gso-tcpv4/-tcpv6)",
            idx, e.u.gso.type);
        return false;
      }
      if (e.u.gso.size == 0) {
        protocol_violation("RX GSO extra at ring index %u has a GSO size of 0", idx);
        return false;
      }
      c.asm_gso_type = e.u.gso.type;
      c.asm_gso_size = e.u.gso.size;
    } else if (e.type == netif::kExtraTypeHash) {
      // netif.h XEN_NETIF_EXTRA_TYPE_HASH: type is one of the
      // _XEN_NETIF_CTRL_HASH_TYPE_* bit numbers, algorithm the one
      // configured (Toeplitz, the only one netif.h defines), value the
      // 32-bit hash in the frontend's byte order (Linux netback's rx.c).
      if (e.u.hash.type > netif::kCtrlHashTypeIpv6TcpBit) {
        protocol_violation(
            "RX HASH extra at ring index %u has hash type %u; netif.h defines 0..3 "
            "(_XEN_NETIF_CTRL_HASH_TYPE_*)",
            idx, e.u.hash.type);
        return false;
      }
      if (e.u.hash.algorithm != netif::kCtrlHashAlgorithmToeplitz) {
        protocol_violation(
            "RX HASH extra at ring index %u names hash algorithm %u; only Toeplitz (1) can be "
            "configured",
            idx, e.u.hash.algorithm);
        return false;
      }
      c.asm_hash_type = static_cast<uint8_t>(1u << e.u.hash.type);
      std::memcpy(&c.asm_hash, e.u.hash.value, sizeof c.asm_hash);
    }
    c.extra_pending = (e.flags & netif::kExtraFlagMore) != 0;
  } else {
    if (!rx_response_ok(r, idx)) {
      c.rx_pool->free(slot);
      if (r.id != (idx & kRingMask)) {
        protocol_violation("RX response at ring index %u names id %u; that request had id %u", idx,
                           r.id, idx & kRingMask);
      } else {
        protocol_violation("RX response offset %u + length %d lies outside its %zu-byte page",
                           r.offset, r.status, kPageSize);
      }
      return false;
    }
    if ((r.flags & netif::kRxExtraInfo) && c.rx_extra_types == 0) {
      c.rx_pool->free(slot);
      protocol_violation(
          "RX response at ring index %u has NETRXF_extra_info, but no extra-info type was "
          "negotiated (no feature-gso-* written, no control ring)",
          idx);
      return false;
    }
    if ((r.flags & netif::kRxExtraInfo) && c.asm_active) {
      c.rx_pool->free(slot);
      protocol_violation(
          "RX response at ring index %u has NETRXF_extra_info, but is not a packet's first slot",
          idx);
      return false;
    }
    if (!c.asm_active) {
      c.asm_active = true;
      c.asm_bad = c.asm_error_status = c.asm_last_seen = false;
      c.asm_first = c.frag_head;
      c.asm_nfrags = 0;
      c.asm_len = 0;
      c.asm_flags = r.flags;
      c.asm_gso_type = 0;
      c.asm_gso_size = 0;
      c.asm_hash_type = 0;
      c.asm_hash = 0;
      c.asm_extras = 0;
    }
    if (r.status < 0) {
      // NETIF_RSP_ERROR/DROPPED: the backend failed this packet.
      c.asm_bad = c.asm_error_status = true;
      c.rx_pool->free(slot);
    } else if (c.asm_nfrags == kMaxRxFrags || c.asm_len + r.status > kMaxPacketLen) {
      // More fragments or bytes than any packet may have: drop it.
      c.asm_bad = true;
      c.rx_pool->free(slot);
    } else {
      c.frag_at(c.frag_head++) = {slot, r.offset, static_cast<uint16_t>(r.status)};
      ++c.asm_nfrags;
      c.asm_len += static_cast<uint32_t>(r.status);
    }
    if (r.flags & netif::kRxExtraInfo) c.extra_pending = true;
    if (!(r.flags & netif::kRxMoreData)) c.asm_last_seen = true;
  }
  if (c.asm_active && c.asm_last_seen && !c.extra_pending) {
    // The packet is complete.
    c.asm_active = false;
    if (c.asm_bad || c.asm_len == 0) {
      for (uint32_t f = c.asm_first; f != c.frag_head; ++f) {
        c.rx_pool->free(c.frag_at(f).slot);
      }
      c.frag_head = c.asm_first;
      count(c.asm_error_status ? kCounter_rx_errors : kCounter_rx_dropped);
    } else {
      c.staged_at(c.staged_head++) = {c.asm_first,    c.asm_nfrags,   c.asm_flags,     c.asm_len,
                                      c.asm_gso_size, c.asm_gso_type, c.asm_hash_type, c.asm_hash};
    }
  }
  return true;
}

// Posts free RX buffers. Batched: only when a batch is free (or forced),
// with at most one notification, and only if the backend asked for one.
void QueueImpl::take_back_kept() {
  Conn& c = *conn_;
  uint32_t slots[kRxPoolSlotsMax];
  // Checked hand-back: a page released twice by the application is refused
  // (counted by the pool), never posted twice.
  c.rx_pool->free_bulk(slots, c.rx_loans->take_returned(slots));
}

void QueueImpl::refill_rx(bool force) {
  Conn& c = *conn_;
  BufferPool& pool = *c.rx_pool;
  const uint32_t want = std::min(c.rx.free_requests(), pool.available());
  if (want == 0 || (!force && want < kRefillBatch)) return;
  // Slot ids in bulk and the ring index in a local: the entry stores below
  // could alias any member the compiler would otherwise reload.
  uint32_t ids[kRingSize];
  const uint32_t got = pool.alloc_bulk(ids, want);
  const grant_ref_t* const refs = pool.refs();
  uint16_t* const posted = c.rx_posted.data();
  const uint32_t prod = c.rx.req_prod_pvt();
  for (uint32_t i = 0; i < got; ++i) {
    const uint32_t idx = prod + i;
    netif::RxRequest& q = c.rx.request_at(idx);
    q.id = static_cast<uint16_t>(idx & kRingMask);
    q.pad = 0;
    q.gref = refs[ids[i]];
    posted[idx & kRingMask] = static_cast<uint16_t>(ids[i]);
  }
  c.rx.commit_requests(got);
  count(kCounter_rx_refills);
  const bool need = c.rx.push_requests_and_check_notify();
  if (need && active_.load(std::memory_order_relaxed)) notify(c.rx_port);
}

}  // namespace xpv
