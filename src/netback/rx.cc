// SPDX-License-Identifier: MIT
// RX: packets for the frontend (Linux netback's rx.c): queued per queue,
// grant-copied into the pages the frontend posted, 64 packets per batch, one
// push (and at most one notification) per batch; stall detection and expiry
// as xenvif_kthread_guest_rx() does them.
#include <algorithm>
#include <cstring>

#include "netback/batch.h"
#include "netback/clock.h"
#include "netback/offload.h"
#include "netback/queue.h"
#include "util/log.h"

namespace xpv::netback {

// What Linux does to a frame between a frontend's TX and this frontend's RX,
// by what this frontend negotiated (xenvif_fix_features: no feature-sg, no
// TSO; feature-no-csum-offload, no checksum offload; no
// feature-ipv6-csum-offload, none for IPv6):
//  - multicast not in its filter is dropped (request-multicast-control);
//  - a GSO frame goes whole, with a GSO extra, to a frontend that takes
//    that GSO type; otherwise the stack cuts it into MSS-sized segments;
//  - a partial checksum stays partial (NETRXF_csum_blank | data_validated,
//    xenvif_rx_data_slot) for a frontend that takes it; otherwise the stack
//    completes it (skb_checksum_help) and we say it is valid;
//  - NETTXF_data_validated becomes NETRXF_data_validated.
bool Queue::rx_enqueue(const uint8_t* data, uint32_t len, const FrameMeta& tx, uint64_t now) {
  // What goes on the RX ring: the flags and GSO decided below, the hash
  // the steering computed (every segment of a cut GSO frame keeps it, as
  // skb_segment() copies skb->hash).
  auto rx_meta = [&tx](uint16_t flags, uint8_t gso_type = 0, uint16_t gso_size = 0) {
    FrameMeta m{flags, gso_type, gso_size};
    m.has_hash = tx.has_hash;
    m.hash_type = tx.hash_type;
    m.hash = tx.hash;
    return m;
  };
  const uint8_t* dst_mac = data;
  if ((dst_mac[0] & 1) && vif_.multicast_control.load(std::memory_order_relaxed) &&
      !(std::all_of(dst_mac, dst_mac + 6, [](uint8_t b) { return b == 0xff; })) &&
      !vif_.mcast_match(dst_mac)) {
    ctr_.rx_dropped_multicast.add();
    return false;
  }
  constexpr uint16_t kPartial = netif::kRxCsumBlank | netif::kRxDataValidated;
  const bool partial = (tx.flags & netif::kTxCsumBlank) != 0;
  bool takes_partial = vif_.ip_csum;
  if (partial) {
    L4Layout l;
    if (find_l4(data, len, &l) && l.ipv6) takes_partial = takes_partial && vif_.ipv6_csum;
  }
  if (tx.gso_type) {
    if (vif_.can_sg && (vif_.gso_mask & (1u << tx.gso_type)) && takes_partial) {
      ctr_.rx_gso_packets.add();
      return rx_queue_frame(data, len, rx_meta(kPartial, tx.gso_type, tx.gso_size), now);
    }
    TcpSegmenter seg;
    if (!seg.init(data, len, tx.gso_size)) {  // TX made sure it is TCP
      ctr_.rx_dropped_queue_full.add();
      return false;
    }
    ctr_.rx_gso_segmented.add();
    bool all = true;
    for (uint32_t i = 0; i < seg.count(); ++i) {
      uint8_t* out = rx_reserve(seg.size(i));
      if (!out) {
        all = false;
        continue;
      }
      seg.build(i, out, takes_partial);
      fifo_.commit(seg.size(i), rx_meta(takes_partial ? kPartial : netif::kRxDataValidated), now);
    }
    return all;
  }
  if (partial && !takes_partial) {
    uint8_t* out = rx_reserve(len);
    if (!out) return false;
    std::memcpy(out, data, len);
    if (complete_checksum(out, len)) ctr_.rx_csum_completed.add();
    fifo_.commit(len, rx_meta(netif::kRxDataValidated), now);
    return true;
  }
  uint16_t flags = 0;
  if (partial) {
    flags = kPartial;
  } else if (tx.flags & netif::kTxDataValidated) {
    flags = netif::kRxDataValidated;
  }
  return rx_queue_frame(data, len, rx_meta(flags), now);
}

// An extra-info slot: it takes a request, its response is the extra.
void Queue::rx_extra_slot(const netif::ExtraInfo& e) {
  netif::RxResponse rsp;
  static_assert(sizeof rsp == sizeof e);
  std::memcpy(&rsp, &e, sizeof e);
  rx_slot(rx_.take_request(), rsp, kNoOp);
}

// Room for a frame of `len` bytes in the RX queue, or nullptr (counted):
// carrier off (the stack drops instead of queueing), or the queue is full.
uint8_t* Queue::rx_reserve(uint32_t len) {
  if (stalled_) {
    ctr_.rx_dropped_stalled.add();
    return nullptr;
  }
  uint8_t* dst = fifo_.reserve(len);
  if (!dst) ctr_.rx_dropped_queue_full.add();
  return dst;
}

bool Queue::rx_queue_frame(const uint8_t* data, uint32_t len, const FrameMeta& rx, uint64_t now) {
  uint8_t* dst = rx_reserve(len);
  if (!dst) return false;
  std::memcpy(dst, data, len);
  fifo_.commit(len, rx, now);
  return true;
}

// req_event = prod + 1 (xenvif_rx_ring_slots_available): the frontend
// notifies when it posts the next request. The fence orders the store before
// the caller's re-read of req_prod, pairing with the frontend's push.
void Queue::rx_arm_event(uint32_t prod) {
  ring::store_relaxed(rx_.header()->req_event, prod + 1);
  ring::full_fence();
}

// xenvif_rx_ring_slots_available(): the packet at the head fits the posted
// requests (ceil(len / 4096) of them, one more for a GSO extra, one more
// for a HASH extra), else ask to be told about the next one.
bool Queue::rx_ready_for_head() {
  if (fifo_.empty()) return false;
  const uint32_t needed = rx_slots_needed(fifo_.front());
  auto a = rx_requests();
  if (a.overflow || a.count >= needed) return true;
  if (cfg_.busy_poll) return false;
  rx_arm_event(rx_.req_cons() + a.count);
  a = rx_requests();
  return a.overflow || a.count >= needed;
}

bool Queue::rx_action() {
  if (stall_rx_active_ || vif_.disabled.load(std::memory_order_relaxed)) return false;
  take_grants();
  const uint64_t now = now_ns();
  // Responses go straight to the ring (rx_slot) while no slot of the batch
  // waits for a grant copy and no fault may rewrite them (rx_direct_);
  // packets whose every response went so are counted here, the others in
  // rx_flush(). Either way the frontend sees them at the push below.
  rx_direct_ = cfg_.fault == Fault::kNone;
  uint32_t packets = 0;         // taken from the queue, at most a batch
  uint32_t direct_packets = 0;  // answered in full already
  uint64_t direct_bytes = 0;
  uint32_t static_copies = 0;
  // The posted requests, read once; read again (req_event armed) only when
  // the head packet needs more than are left.
  ring::Available a = rx_requests();
  if (a.overflow) return false;  // fatal, reported
  while (!fifo_.empty() && packets < kRxBatchPackets) {
    const RxFifo::Packet& p = fifo_.front();
    const uint32_t needed = rx_slots_needed(p);
    if (a.count < needed) {
      if (!rx_ready_for_head()) break;  // RX stall: the packet waits
      a = rx_requests();
      if (a.overflow || a.count < needed) break;
    }
    a.count -= needed;  // what the slots below take
    ++packets;
    const uint8_t* data = fifo_.data(p);
    const uint32_t len = p.len;
    const FrameMeta& meta = p.meta;  // p stays in the queue until the pop below
    const uint32_t slot_begin = rx_slots_.size();
    // xenvif_rx_skb() / xenvif_rx_data_slot(): one slot per page of data,
    // at offset 0, id echoed, more_data on all but the last; the first
    // carries the checksum flags and, before extras, extra_info.
    // xenvif_rx_extra_slot(): the extras go right after the first slot, in
    // type order (GSO, then HASH), each but the last flagged MORE.
    const bool extras = meta.gso_type || meta.has_hash;
    uint16_t first_flags = meta.flags | (extras ? netif::kRxExtraInfo : 0);
    bool first = true;
    uint32_t done = 0;
    while (done < len) {
      const netif::RxRequest req = rx_.take_request();
      const uint32_t chunk = std::min<uint32_t>(len - done, static_cast<uint32_t>(kPageSize));
      int32_t op = kNoOp;
      if (uint8_t* page = static_page(req.gref, true)) {
        // A static grant mapped writable: copied into at once (offset 0,
        // at most a page).
        copy_frame_bytes(page, data + done, chunk);
        ++static_copies;
      } else {
        GrantCopyOp gop;
        gop.source = {false, 0, 0, 0, const_cast<uint8_t*>(data + done)};
        gop.dest = {true, vif_.domid, req.gref, 0, nullptr};
        gop.len = static_cast<uint16_t>(chunk);
        op = static_cast<int32_t>(rx_ops_.size());
        rx_ops_.push_back(gop);
      }
      done += chunk;
      netif::RxResponse rsp;
      rsp.id = req.id;
      rsp.offset = 0;
      rsp.flags = static_cast<uint16_t>((done < len ? netif::kRxMoreData : 0) | first_flags);
      rsp.status = static_cast<int16_t>(chunk);
      rx_slot(req, rsp, op);
      if (first && extras) {
        if (meta.gso_type) {
          netif::ExtraInfo e{};
          e.type = netif::kExtraTypeGso;
          e.flags = meta.has_hash ? netif::kExtraFlagMore : 0;
          e.u.gso.type = meta.gso_type;
          e.u.gso.size = meta.gso_size;
          rx_extra_slot(e);
        }
        if (meta.has_hash) {
          // The value little-endian (netif.h: "LSB ---- value ---- MSB").
          netif::ExtraInfo e{};
          e.type = netif::kExtraTypeHash;
          e.u.hash.type = meta.hash_type;
          e.u.hash.algorithm = static_cast<uint8_t>(netif::kCtrlHashAlgorithmToeplitz);
          for (int b = 0; b < 4; ++b)
            e.u.hash.value[b] = static_cast<uint8_t>(meta.hash >> (8 * b));
          rx_extra_slot(e);
          ctr_.rx_hash_extras.add();
        }
      }
      first = false;
      first_flags = 0;
    }
    if (rx_slots_.size() == slot_begin) {
      ++direct_packets;
      direct_bytes += len;
    } else {
      rx_pkts_.push_back(RxPacket{slot_begin, rx_slots_.size(), len});
    }
    // The data stays where it is until rx_flush() below: nothing is queued
    // in between (the worker is the only user of the queue).
    fifo_.pop();
  }
  if (packets == 0) return false;
  last_rx_ns_ = now;
  ctr_.static_grant_copies.add(static_copies);
  if (direct_packets) {
    ctr_.rx_packets.add(direct_packets);
    ctr_.rx_bytes.add(direct_bytes);
    rx_packets_total_ += direct_packets;
    if (cfg_.mode == Mode::kSource) vif_.count_reconnect_packets(direct_packets);
  }
  rx_flush();
  if (rx_.push_responses_and_check_notify()) notify(rx_port_);
  return true;
}

// xenvif_rx_copy_flush(): run the copies, turn a failed copy's response
// into an error, write the responses of the packets that waited for them
// (rx_action pushes them).
void Queue::rx_flush() {
  if (rx_pkts_.empty()) return;
  if (!rx_ops_.empty()) copy_batch(std::span<GrantCopyOp>(rx_ops_.data(), rx_ops_.size()));
  uint64_t good = 0, bytes = 0;
  for (const RxPacket& p : rx_pkts_) {
    bool ok = true;
    const uint64_t ordinal = rx_packets_total_;
    for (uint32_t i = p.slot_begin; i < p.slot_end; ++i) {
      RxSlot& slot = rx_slots_[i];
      if (slot.op >= 0 && rx_ops_[static_cast<uint32_t>(slot.op)].status != 0) {
        // Linux stores the GNTST code; we answer NETIF_RSP_ERROR.
        slot.rsp.status = netif::kRspError;
        ctr_.rx_bad_requests.add();
        ok = false;
      }
      if (i == p.slot_begin && cfg_.fault != Fault::kNone) fault_rx_response(slot, ordinal);
      rx_.next_response() = slot.rsp;
      rx_.commit_response();
    }
    if (ok) {
      ++good;
      bytes += p.len;
    }
    ++rx_packets_total_;
    if (cfg_.mode == Mode::kSource) vif_.count_reconnect_packets();
    if (cfg_.fault != Fault::kNone) fault_after_rx_packet();
  }
  ctr_.rx_packets.add(good);
  ctr_.rx_bytes.add(bytes);
  rx_pkts_.clear();
  rx_ops_.clear();
  rx_slots_.clear();
}

// xenvif_rx_queue_drop_expired(): queued packets cannot wait forever.
void Queue::rx_drop_expired(uint64_t now) {
  while (!fifo_.empty() && now >= fifo_.front().enqueued_ns + vif_.drain_timeout_ns) {
    fifo_.pop();
    ctr_.rx_dropped_expired.add();
  }
}

// xenvif_rx_queue_stalled() / xenvif_rx_queue_ready(): a guest that posted
// no RX request for the stall timeout while packets wait is stalled (carrier
// off: what is queued and what arrives is dropped) until it posts again.
bool Queue::rx_check_stall(uint64_t now) {
  if (vif_.stall_timeout_ns == 0) return false;
  if (!stalled_ && fifo_.empty()) return false;  // nothing waits: no stall to detect
  const auto a = rx_requests();
  if (a.overflow) return false;
  if (!stalled_) {
    if (a.count > 0 || fifo_.empty()) return false;
    const uint64_t since = std::max(last_rx_ns_, fifo_.front().enqueued_ns);
    if (now - since < vif_.stall_timeout_ns) return false;
    // xenvif_queue_carrier_off().
    stalled_ = true;
    ctr_.rx_dropped_stalled.add(fifo_.size());
    ctr_.rx_stalls.add();
    if (vif_.stalled_queues.fetch_add(1) == 0) log_info("%s: Guest Rx stalled", vif_.name.c_str());
    fifo_.clear();
    if (!cfg_.busy_poll) {
      // Hear about the next request even with nothing queued.
      rx_arm_event(rx_.req_cons());
      if (rx_requests().count == 0) return true;
    } else {
      return true;
    }
  }
  if (rx_requests().count == 0) return false;
  // xenvif_queue_carrier_on(): reset stall detection.
  stalled_ = false;
  last_rx_ns_ = now;
  if (vif_.stalled_queues.fetch_sub(1) == 1) log_info("%s: Guest Rx ready", vif_.name.c_str());
  return true;
}

}  // namespace xpv::netback
