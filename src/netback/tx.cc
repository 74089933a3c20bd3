// SPDX-License-Identifier: MIT
// TX: packets the frontend transmits (Linux netback's xenvif_tx_action).
//
// Requests are checked exactly as xenvif_tx_build_gops() and
// xenvif_count_requests() check them; every fatal case disables the vif
// (xenvif_fatal_tx_err). Where Linux grant-copies the first 128 bytes and
// grant-maps the rest, we grant-copy everything, in one batch per poll.
#include <algorithm>
#include <cstring>

#include "netback/clock.h"
#include "netback/offload.h"
#include "netback/queue.h"
#include "util/log.h"

namespace xpv::netback {

using netif::ExtraInfo;
using netif::TxRequest;

bool Queue::tx_action() {
  if (tx_poisoned_) return false;
  bool found = false;
  uint32_t done = 0;
  tx_more_ = false;
  take_grants();
  // The requests left to take: req_prod is read again once they are taken.
  ring::Available a{};
  for (;;) {
    if (vif_.disabled.load(std::memory_order_relaxed)) break;
    if (a.count == 0) {
      a = tx_requests();
      if (a.overflow) break;  // fatal, reported
    }
    if (a.count == 0) {
      // Respond to what we have, then re-arm (RING_FINAL_CHECK_FOR_REQUESTS
      // in xenvif_napi_schedule_or_enable_events). Busy polling keeps the
      // event disarmed instead.
      tx_flush();
      if (cfg_.busy_poll) break;
      a = tx_.final_check_for_requests();
      if (a.overflow) {
        a = {};
        continue;  // reported by tx_requests() above
      }
      if (a.count == 0) break;
    }
    if (done >= kTxPacketsPerCall) {
      tx_more_ = true;  // let RX run; the worker comes back without waiting
      break;
    }
    // Room for one more packet of up to 64 KiB in up to 21 slots.
    if (tx_pkts_.size() == kTxBatchPackets || kTxStagingBytes - staging_used_ < 65536 ||
        kTxMaxOps - tx_ops_.size() < kFatalSkbSlots + 1 ||
        kTxMaxOps - tx_frag_ids_.size() < kFatalSkbSlots + 1) {
      tx_flush();
    }
    found = true;
    const uint32_t cons = tx_.req_cons();
    if (tx_build_one(a.count) < 0) break;
    a.count -= tx_.req_cons() - cons;  // the slots the packet took
    ++done;
  }
  tx_flush();
  return found;
}

// One packet (or multicast control message) from the ring into the batch.
// Returns -1 after a fatal error, 0 otherwise.
int Queue::tx_build_one(uint32_t work_to_do) {
  TxRequest first = tx_.take_request();
  --work_to_do;

  // xenvif_get_extras(): the extra_info slots that follow the first one.
  // extras[t - 1] holds the last one of type t; `have` says which are set
  // (bit t - 1), so that a packet without extras zeroes nothing.
  ExtraInfo extras[netif::kExtraTypeMax - 1];
  uint32_t have = 0;
  uint32_t extra_count = 0;
  if (first.flags & netif::kTxExtraInfo) {
    bool more = false;
    do {
      if (work_to_do == 0) {
        ctr_.fatal_errors.add();
        vif_.report_fatal("Missing extra info");
        return -1;
      }
      --work_to_do;
      const TxRequest raw = tx_.take_request();
      ExtraInfo extra;
      static_assert(sizeof extra <= sizeof raw);
      std::memcpy(&extra, &raw, sizeof extra);
      ++extra_count;
      if (extra.type == netif::kExtraTypeNone || extra.type >= netif::kExtraTypeMax) {
        ctr_.fatal_errors.add();
        vif_.report_fatal("Invalid extra type: %d", extra.type);
        return -1;
      }
      extras[extra.type - 1] = extra;
      have |= 1u << (extra.type - 1);
      more = (extra.flags & netif::kExtraFlagMore) != 0;
    } while (more);
  }

  // Multicast control: answered at once, no data (xenvif_tx_build_gops:
  // an ADD, else a DEL; xenvif_mcast_add refuses a 65th address).
  constexpr uint32_t kHaveAdd = 1u << (netif::kExtraTypeMcastAdd - 1);
  constexpr uint32_t kHaveDel = 1u << (netif::kExtraTypeMcastDel - 1);
  constexpr uint32_t kHaveGso = 1u << (netif::kExtraTypeGso - 1);
  if (have & (kHaveAdd | kHaveDel)) {
    bool ok = true;
    if (have & kHaveAdd) {
      ok = vif_.mcast_add(extras[netif::kExtraTypeMcastAdd - 1].u.mcast.addr);
    } else {
      vif_.mcast_del(extras[netif::kExtraTypeMcastDel - 1].u.mcast.addr);
    }
    (ok ? ctr_.tx_mcast_ops : ctr_.tx_mcast_refused).add();
    tx_respond(first.id, ok ? netif::kRspOkay : netif::kRspError, false);
    for (uint32_t i = 0; i < extra_count; ++i)
      tx_respond(0, netif::kRspNull, true);
    tx_push();
    return 0;
  }

  // xenvif_count_requests(): walk the more_data chain. `slots` counts the
  // slots after the first, first.size shrinks to the first slot's own length.
  uint32_t slots = 0;
  enum { kNoDrop, kTooManySlots, kOversizeSlot } drop = kNoDrop;
  const uint32_t frag_ids_at = static_cast<uint32_t>(tx_frag_ids_.size());
  TxRequest frags[kFatalSkbSlots];
  const uint16_t total_len = first.size;  // the whole packet
  if (first.flags & netif::kTxMoreData) {
    bool more = false;
    do {
      if (slots >= work_to_do) {
        ctr_.fatal_errors.add();
        vif_.report_fatal("Asked for %u slots but exceeds this limit", work_to_do);
        tx_frag_ids_.truncate(frag_ids_at);
        return -1;
      }
      // This guest is really using too many slots: malicious.
      if (slots >= kFatalSkbSlots) {
        ctr_.fatal_errors.add();
        vif_.report_fatal("Malicious frontend using %u slots, threshold %u", slots, kFatalSkbSlots);
        tx_frag_ids_.truncate(frag_ids_at);
        return -1;
      }
      // More than XEN_NETBK_LEGACY_SLOTS_MAX after the first: dropped.
      if (drop == kNoDrop && slots >= kLegacySlotsMax) drop = kTooManySlots;
      const TxRequest t = tx_.take_request();
      frags[slots] = t;
      tx_frag_ids_.push_back(t.id);
      // A frame of 64 KiB or more overflowed first->size: not fatal, since
      // buggy frontends do it; consume every slot and drop the packet.
      if (drop == kNoDrop && t.size > first.size) drop = kOversizeSlot;
      first.size = static_cast<uint16_t>(first.size - t.size);
      ++slots;
      if (uint32_t{t.offset} + t.size > kPageSize) {
        ctr_.fatal_errors.add();
        vif_.report_fatal("Cross page boundary, txp->offset: %u, size: %u", t.offset, t.size);
        tx_frag_ids_.truncate(frag_ids_at);
        return -1;
      }
      more = (t.flags & netif::kTxMoreData) != 0;
    } while (more);
  }

  if (drop != kNoDrop) {
    tx_drop(first, extra_count, slots,
            drop == kTooManySlots ? ctr_.tx_dropped_too_many_slots : ctr_.tx_dropped_oversize_slot);
    tx_frag_ids_.truncate(frag_ids_at);
    return 0;
  }
  // xenvif_tx_build_gops(): the first slot must hold the Ethernet header...
  if (first.size < kEthHlen) {
    log_debug("%s-q%u: Bad packet size: %u", vif_.name.c_str(), index(), first.size);
    tx_drop(first, extra_count, slots, ctr_.tx_dropped_short);
    tx_frag_ids_.truncate(frag_ids_at);
    return 0;
  }
  // ...and must not cross its page.
  if (uint32_t{first.offset} + first.size > kPageSize) {
    ctr_.fatal_errors.add();
    vif_.report_fatal("txreq.offset: %u, size: %u, end: %u", first.offset, first.size,
                      uint32_t{first.offset} + first.size);
    tx_frag_ids_.truncate(frag_ids_at);
    return -1;
  }
  // GSO extras are checked as xenvif_set_skb_gso() does (we do not segment).
  const ExtraInfo& gso = extras[netif::kExtraTypeGso - 1];
  const bool has_gso = (have & kHaveGso) != 0;
  if (has_gso) {
    if (gso.u.gso.size == 0) {
      ctr_.fatal_errors.add();
      vif_.report_fatal("GSO size must not be zero.");
      tx_frag_ids_.truncate(frag_ids_at);
      return -1;
    }
    if (gso.u.gso.type != 1 && gso.u.gso.type != 2) {  // XEN_NETIF_GSO_TYPE_TCPV4/V6
      ctr_.fatal_errors.add();
      vif_.report_fatal("Bad GSO type %d.", gso.u.gso.type);
      tx_frag_ids_.truncate(frag_ids_at);
      return -1;
    }
  }

  // Grant copies: the first slot's own data, then each later slot's.
  TxPacket& p = tx_pkts_.emplace_back();  // filled in place
  p.first_id = first.id;
  p.meta.flags = first.flags;
  if (has_gso) {
    p.meta.gso_type = gso.u.gso.type;
    p.meta.gso_size = gso.u.gso.size;
  }
  p.extra_count = extra_count;
  p.nfrags = slots;
  p.frag_ids_at = frag_ids_at;
  p.staging_off = staging_used_;
  p.len = total_len;
  p.op_begin = static_cast<uint32_t>(tx_ops_.size());
  uint32_t at = staging_used_;
  auto add_copy = [&](const TxRequest& r, uint16_t len) __attribute__((always_inline)) {
    if (len == 0) return;
    // A static grant's page is copied from at once (the bounds are checked
    // above; out of them, the op below fails as a grant copy would).
    if (const uint8_t* page = static_page(r.gref, false);
        page != nullptr && uint32_t{r.offset} + len <= kPageSize) {
      copy_frame_bytes(staging_.get() + at, page + r.offset, len);
      ++tx_static_copies_;  // counted by tx_flush()
      at += len;
      return;
    }
    GrantCopyOp op;
    op.source = {true, vif_.domid, r.gref, r.offset, nullptr};
    op.dest = {false, 0, 0, 0, staging_.get() + at};
    op.len = len;
    tx_ops_.push_back(op);
    at += len;
  };
  add_copy(first, first.size);
  for (uint32_t i = 0; i < slots; ++i)
    add_copy(frags[i], frags[i].size);
  p.op_end = static_cast<uint32_t>(tx_ops_.size());
  staging_used_ = at;
  return 0;
}

// xenvif_tx_err(): NETIF_RSP_ERROR on the first slot (NULL on its extras)
// and on every later slot.
void Queue::tx_drop(const TxRequest& first, uint32_t extra_count, uint32_t nfrags,
                    Counter& reason) {
  reason.add();
  tx_respond(first.id, netif::kRspError, false);
  for (uint32_t i = 0; i < extra_count; ++i)
    tx_respond(0, netif::kRspNull, true);
  const uint32_t at = static_cast<uint32_t>(tx_frag_ids_.size()) - nfrags;
  for (uint32_t i = 0; i < nfrags; ++i)
    tx_respond(tx_frag_ids_[at + i], netif::kRspError, false);
  ctr_.tx_error_responses.add(1 + nfrags);
  tx_push();
}

// Runs the batch's grant copies, answers every slot, hands the good packets
// on, pushes the responses (xenvif_tx_submit / xenvif_idx_release).
void Queue::tx_flush() {
  if (tx_static_copies_) {
    ctr_.static_grant_copies.add(tx_static_copies_);
    tx_static_copies_ = 0;
  }
  if (!tx_pkts_.empty()) {
    if (!tx_ops_.empty()) copy_batch(tx_ops_);
    // Counted once per batch: accepted packets, their bytes, and the
    // packets the reconnect fault counts.
    uint64_t packets = 0, bytes = 0, handed_on = 0;
    const bool deliver = cfg_.mode == Mode::kLoopback || cfg_.mode == Mode::kBridge;
    for (const TxPacket& p : tx_pkts_) {
      bool ok = true;
      for (uint32_t i = p.op_begin; i < p.op_end; ++i)
        ok = ok && tx_ops_[i].status == 0;
      const int16_t st = ok ? netif::kRspOkay : netif::kRspError;
      tx_respond(p.first_id, st, false);
      if (p.extra_count | p.nfrags) [[unlikely]] {
        for (uint32_t i = 0; i < p.extra_count; ++i)
          tx_respond(0, netif::kRspNull, true);
        for (uint32_t i = 0; i < p.nfrags; ++i)
          tx_respond(tx_frag_ids_[p.frag_ids_at + i], st, false);
      }
      if (ok) {
        ++packets;
        bytes += p.len;
        uint8_t* data = staging_.get() + p.staging_off;
        FrameMeta meta = p.meta;
        if (meta.gso_type) ctr_.tx_gso_packets.add();
        // xenvif_tx_submit's checksum_setup(): a partial checksum (and a GSO
        // packet) must be TCP/UDP over IP, else the packet is dropped; a GSO
        // packet without NETTXF_csum_blank is made partial, its pseudo-header
        // recalculated ("buggy peers can fail to set it").
        if ((meta.flags & netif::kTxCsumBlank) || meta.gso_type) {
          L4Layout l;
          if (!find_l4(data, p.len, &l) || (meta.gso_type && !l.tcp)) {
            ctr_.tx_dropped_bad_csum.add();
            continue;
          }
          if (!(meta.flags & netif::kTxCsumBlank)) {
            const uint16_t s = pseudo_header_sum(data, l, l.l4_len);
            data[l.csum_off()] = static_cast<uint8_t>(s >> 8);
            data[l.csum_off() + 1] = static_cast<uint8_t>(s);
            meta.flags |= netif::kTxCsumBlank | netif::kTxDataValidated;
          }
        }
        // Sink and source modes sink what the frontend transmits.
        if (deliver) tx_deliver(data, p.len, meta);
        ++handed_on;
      } else {
        log_debug("%s-q%u: grant copy of a TX packet failed", vif_.name.c_str(), index());
        ctr_.tx_dropped_bad_grant.add();
        ctr_.tx_error_responses.add(1 + p.nfrags);
      }
    }
    ctr_.tx_packets.add(packets);
    ctr_.tx_bytes.add(bytes);
    if (handed_on && cfg_.mode != Mode::kSource) vif_.count_reconnect_packets(handed_on);
    tx_pkts_.clear();
    tx_ops_.clear();
    tx_frag_ids_.clear();
    staging_used_ = 0;
  }
  tx_push();
}

void Queue::tx_respond_faulty(uint16_t id, int16_t status, bool extra) {
  if (cfg_.fault == Fault::kLateTxRsp && !late_active_ && tx_rsp_count_ >= cfg_.fault_after) {
    fault_start_late();
  }
  if (late_active_ && late_count_ < kLateCapacity) {
    // late-tx-rsp: the response waits; later ones queue behind it, so the
    // ring order is kept.
    LateRsp& l = late_[(late_head_ + late_count_) % kLateCapacity];
    l = LateRsp{id, status, extra, now_ns() + late_delay_ns_};
    ++late_count_;
    if (!extra) ctr_.faults_injected.add();
    return;
  }
  tx_write_response(id, status, extra);
}

void Queue::tx_push() {
  if (tx_poisoned_) return;  // rsp-prod-overflow: leave the bogus rsp_prod alone
  // RING_PUSH_RESPONSES_AND_CHECK_NOTIFY: notify only when asked to.
  if (tx_.push_responses_and_check_notify()) notify(tx_port_);
  fault_after_tx_push();
}

void Queue::tx_release_late(uint64_t now) {
  bool any = false;
  while (late_count_ && late_[late_head_].due_ns <= now) {
    const LateRsp& l = late_[late_head_];
    tx_write_response(l.id, l.status, l.extra);
    late_head_ = (late_head_ + 1) % kLateCapacity;
    --late_count_;
    any = true;
  }
  if (any) tx_push();
}

void Queue::tx_deliver(const uint8_t* data, uint32_t len, const FrameMeta& tx) {
  if (cfg_.mode == Mode::kBridge) {
    // The bridge's target applies its own offloads (rx_enqueue).
    bridge_forward(data, len, tx, now_ns());
    return;
  }
  // Loopback: this queue's RX, unless the vif's hash mapping names
  // another queue (xenvif_select_queue).
  const uint32_t nq = static_cast<uint32_t>(vif_.queue_inboxes.size());
  const Steering st = vif_.hash->steer(data, len, nq ? nq : 1);
  FrameMeta meta = tx;
  with_hash(meta, st);
  if (st.hashing) {
    ctr_.rx_steered.add();
    if (st.queue != index() && st.queue < nq) {
      if (vif_.queue_inboxes[st.queue]->push(data, len, meta, now_ns()) !=
          BridgeInbox::Push::kQueued) {
        ctr_.rx_dropped_queue_full.add();
      }
      return;
    }
  }
  rx_enqueue(data, len, meta, now_ns());
}

}  // namespace xpv::netback
