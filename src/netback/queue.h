// SPDX-License-Identifier: MIT
// One netif queue of a vif: its two rings (mapped from the frontend), its
// event channel port(s) and one worker thread serving both rings.
//
// The worker owns everything below once started: the rings, the RX queue of
// packets waiting for the frontend, the TX batch, the fault state. Nothing on
// the per-packet path allocates or locks (except, in bridge mode, the target
// inbox's mutex: bridge.h); the ring code alone orders memory against the
// frontend.
//
// Event channels use late EOI (evtchn/late_eoi.h), as Linux netback does
// since XSA-332: a port's handler runs while the port is masked, reports
// whether it found work, and the EOI follows; spurious events back off.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "evtchn/late_eoi.h"
#include "netback/batch.h"
#include "netback/bridge.h"
#include "netback/config.h"
#include "netback/counters.h"
#include "netback/hash.h"
#include "netback/rx_fifo.h"
#include "netback/vif_context.h"
#include "ring/netif.h"
#include "ring/netif_ctrl.h"
#include "util/fd.h"
#include "xpv/platform.h"

namespace xpv::netback {

// What connect_data_rings() read from the frontend for one queue.
struct QueueKeys {
  uint32_t index = 0;
  grant_ref_t tx_ring_ref = 0;
  grant_ref_t rx_ring_ref = 0;
  evtchn_port_t tx_evtchn = 0;  // the frontend's ports
  evtchn_port_t rx_evtchn = 0;  // == tx_evtchn with a single channel
};

// xenvif_count_requests(): netback's slot limits. `slots` there counts the
// slots after the first one, so in whole-packet terms a packet of up to 19
// slots is accepted, 20 or 21 are dropped with NETIF_RSP_ERROR on every slot,
// and reading a 22nd slot is fatal.
inline constexpr uint32_t kLegacySlotsMax = 18;  // XEN_NETBK_LEGACY_SLOTS_MAX
inline constexpr uint32_t kFatalSkbSlots = 20;   // fatal_skb_slots default
inline constexpr uint16_t kEthHlen = 14;         // ETH_HLEN

// A frame's hash as the receiving vif computed it, for its HASH extra; none
// when no algorithm is set (xenvif_start_xmit clears the hash then).
inline void with_hash(FrameMeta& m, const Steering& s) {
  m.has_hash = s.hash.valid;
  m.hash_type = s.hash.type;
  m.hash = s.hash.value;
}

class Queue {
 public:
  // xenvif_connect_data(): maps both rings, checks their indices, binds the
  // event channel(s). Nothing runs until start().
  static Result<std::unique_ptr<Queue>> create(VifContext& vif, Platform& dom0, GrantMapper& mapper,
                                               const QueueKeys& keys);
  ~Queue();  // stops the worker, unbinds, unmaps
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  Status start();
  void stop();

  uint32_t index() const { return keys_.index; }
  bool split() const { return keys_.tx_evtchn != keys_.rx_evtchn; }
  Counters counters() const { return ctr_.snapshot(); }
  // Bridge mode: where other vifs' workers put frames for this queue's RX
  // (nullptr in the other modes).
  const std::shared_ptr<BridgeInbox>& inbox() const { return inbox_; }

 private:
  Queue(VifContext& vif, GrantMapper& mapper, const QueueKeys& keys)
      : vif_(vif), cfg_(vif.cfg), mapper_(mapper), keys_(keys) {}

  struct RxSlot {
    netif::RxRequest req;
    netif::RxResponse rsp;  // or, for an extra-info slot, its netif_extra_info
    int32_t op;  // its grant copy in rx_ops_; kNoOp: an extra-info slot, or copied at once
  };
  static constexpr int32_t kNoOp = -1;
  struct RxPacket {
    uint32_t slot_begin, slot_end;  // into rx_slots_
    uint32_t len;
  };

  // ---- worker (queue.cc) ----
  void run();
  void run_busy_poll();
  bool service(uint64_t now);  // timers, RX queue, late responses; true: call again now
  int next_timeout_ms(uint64_t now) const;
  bool rx_event_work();
  bool count_event(bool work, const char* what);
  void notify(evtchn_port_t port);
  // The frontend's unconsumed requests on each ring, bounded as
  // RING_HAS_UNCONSUMED_REQUESTS bounds them (BackRing::available_requests).
  // An impossible req_prod is the frontend's protocol violation: counted,
  // logged and the vif disabled (Linux's xenvif_fatal_tx_err) before the
  // overflow is returned, so no caller serves garbage or fails silently.
  ring::Available tx_requests();
  ring::Available rx_requests();
  // What wakes the worker (stop, and in bridge mode other workers' frames).
  int wake_fd() const { return inbox_ ? inbox_->wake_fd() : wake_.get(); }

  // Static grants, per batch: tx_action and rx_action take the newest table
  // once, at their start (StaticGrants::acquire(), which lets the control
  // thread unmap what an older table had); building a request's copy then
  // finds its page with one table lookup and copies at once with memcpy,
  // no op and no hypervisor call. Nothing keeps a page pointer past the
  // batch.
  void take_grants() {
    const GrefTable* t = grants_ ? grants_->acquire() : nullptr;
    batch_grants_ = t != nullptr && t->size() != 0 ? t : nullptr;
  }
  // The mapped page of `ref` when it is a static grant of this batch's table
  // that may be used this way (written only when mapped writable), else nullptr.
  uint8_t* static_page(grant_ref_t ref, bool write) const {
    if (batch_grants_ == nullptr) return nullptr;
    const GrefTable::Page* p = batch_grants_->find(ref);
    return p != nullptr && (p->writable || !write) ? p->data : nullptr;
  }
  // The batch's copies that were not served at once: memcpy for the grants
  // of the batch's table (after the page bound check a grant copy makes:
  // one out of bounds fails as the grant copy would), one grant copy batch
  // for the others; each op's status says how it went.
  void copy_batch(std::span<GrantCopyOp> ops);

  // ---- TX (tx.cc): xenvif_tx_action ----
  bool tx_action();  // true when it consumed requests
  int tx_build_one(uint32_t work_to_do);
  void tx_flush();
  void tx_drop(const netif::TxRequest& first, uint32_t extra_count, uint32_t nfrags,
               Counter& reason);
  // A TX response; without a fault to inject it goes straight to the ring
  // (inline: once per slot).
  void tx_respond(uint16_t id, int16_t status, bool extra) {
    if (cfg_.fault != Fault::kNone) {
      tx_respond_faulty(id, status, extra);
      return;
    }
    tx_write_response(id, status, extra);
  }
  void tx_respond_faulty(uint16_t id, int16_t status, bool extra);  // late-tx-rsp may hold it
  // make_tx_response(): the response goes in the next response slot. An
  // extra slot's response gets only its status (NETIF_RSP_NULL): its id
  // keeps whatever the slot holds, as in Linux.
  void tx_write_response(uint16_t id, int16_t status, bool extra) {
    netif::TxResponse& r = tx_.next_response();
    if (!extra) {
      r.id = cfg_.fault == Fault::kNone ? id : fault_tx_id(id);
      last_tx_rsp_id_ = id;
      ++tx_rsp_count_;
    }
    r.status = status;
    tx_.commit_response();
  }
  void tx_push();
  void tx_deliver(const uint8_t* data, uint32_t len, const FrameMeta& tx);  // loopback, bridge
  void tx_release_late(uint64_t now);

  // ---- RX (rx.cc): xenvif_rx_action ----
  bool rx_action();  // true when it delivered packets
  void rx_flush();
  bool rx_check_stall(uint64_t now);
  void rx_drop_expired(uint64_t now);
  // A frame for this frontend, as a frontend (this one or, bridged, another)
  // sent it: what Linux's stack and netback do on the way (rx_offload.cc).
  bool rx_enqueue(const uint8_t* data, uint32_t len, const FrameMeta& tx, uint64_t now);
  bool rx_queue_frame(const uint8_t* data, uint32_t len, const FrameMeta& rx, uint64_t now);
  uint8_t* rx_reserve(uint32_t len);
  void rx_extra_slot(const netif::ExtraInfo& e);
  // A slot's response, in ring order: written to the ring at once when it
  // is final (no grant copy to wait for, `op` kNoOp), direct answers are
  // allowed (rx_direct_) and no earlier slot of the batch waits in
  // rx_slots_; else it waits there for rx_flush(). Either way the entry is a
  // plain store into the shared page that the frontend may read only once
  // the batch's push publishes rsp_prod with a release store (xen_wmb,
  // shared_ring.h): the same ordering as before, on x86 and arm64 alike.
  void rx_slot(const netif::RxRequest& req, const netif::RxResponse& rsp, int32_t op) {
    if (op == kNoOp && rx_direct_ && rx_slots_.empty()) {
      rx_.next_response() = rsp;
      rx_.commit_response();
      return;
    }
    rx_slots_.push_back(RxSlot{req, rsp, op});
  }
  void rx_arm_event(uint32_t prod);
  bool rx_ready_for_head();
  // RX requests the packet takes: one per page, one per extra.
  static uint32_t rx_slots_needed(const RxFifo::Packet& p) {
    constexpr uint32_t kPage = static_cast<uint32_t>(kPageSize);
    return (p.len + kPage - 1) / kPage + (p.meta.gso_type ? 1 : 0) + (p.meta.has_hash ? 1 : 0);
  }

  // ---- bridge mode (bridge.cc) ----
  void bridge_forward(const uint8_t* data, uint32_t len, const FrameMeta& tx, uint64_t now);
  void bridge_push(const BridgePort& p, const uint8_t* data, uint32_t len, const FrameMeta& tx,
                   uint64_t now);
  void bridge_drain();  // the inbox into the RX queue
  void bridge_close();  // the vif is disabled: refuse and drop what waits

  // ---- source mode (source.cc) ----
  bool source_generate(uint64_t now);
  void source_fill(uint8_t* frame, uint32_t len, uint64_t seq) const;

  // ---- faults (faults.cc) ----
  uint16_t fault_tx_id(uint16_t id);
  void fault_after_tx_push();
  void fault_start_late();
  void fault_rx_response(RxSlot& slot, uint64_t packet_ordinal);
  void fault_after_rx_packet();  // after rx_packets_total_ counted the packet

  VifContext& vif_;
  const Config& cfg_;
  GrantMapper& mapper_;
  QueueKeys keys_;

  GrantMapping tx_map_;
  GrantMapping rx_map_;
  netif::TxBackRing tx_;
  netif::RxBackRing rx_;
  std::unique_ptr<LateEoiChannel> eoi_;
  evtchn_port_t tx_port_ = 0;  // ours
  evtchn_port_t rx_port_ = 0;  // == tx_port_ with a single channel

  UniqueFd wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  LiveCounters ctr_;

  // ---- TX batch ----
  struct TxPacket {
    uint16_t first_id;
    FrameMeta meta;  // its NETTXF_* flags and GSO extra
    uint32_t extra_count;
    uint32_t nfrags;
    uint32_t frag_ids_at;  // into tx_frag_ids_
    uint32_t staging_off;
    uint32_t len;
    uint32_t op_begin, op_end;  // into tx_ops_
  };
  static constexpr uint32_t kTxBatchPackets = 64;  // NAPI budget
  static constexpr uint32_t kTxMaxOps = 256;
  static constexpr uint32_t kTxStagingBytes = 4 * 65536;
  static constexpr uint32_t kTxPacketsPerCall = 256;  // then let RX run
  std::unique_ptr<uint8_t[]> staging_;
  uint32_t staging_used_ = 0;
  Batch<GrantCopyOp> tx_ops_;      // kTxMaxOps
  Batch<TxPacket> tx_pkts_;        // kTxBatchPackets
  Batch<uint16_t> tx_frag_ids_;    // kTxMaxOps
  uint32_t tx_static_copies_ = 0;  // static grant copies not counted yet
  bool tx_more_ = false;           // stopped with requests left
  bool tx_poisoned_ = false;       // rsp-prod-overflow was injected
  uint64_t tx_rsp_count_ = 0;      // id-carrying TX responses produced
  uint16_t last_tx_rsp_id_ = 0;

  // late-tx-rsp: responses waiting for their time, in ring order.
  struct LateRsp {
    uint16_t id;
    int16_t status;
    bool extra;
    uint64_t due_ns;
  };
  static constexpr uint32_t kLateCapacity = 1024;
  std::unique_ptr<LateRsp[]> late_;
  uint32_t late_head_ = 0, late_count_ = 0;
  bool late_active_ = false;
  uint64_t late_delay_ns_ = 0;

  // ---- copies ----
  StaticGrants* grants_ = nullptr;           // this queue's (vif_.static_grants)
  const GrefTable* batch_grants_ = nullptr;  // take_grants(): the batch's table, or none
  std::vector<GrantCopyOp> copy_rest_;       // reserved: the ops left for grant copy
  std::vector<uint32_t> copy_rest_idx_;      // their indices in the batch

  // ---- RX ----
  RxFifo fifo_;
  static constexpr uint32_t kRxBatchPackets = 64;  // RX_BATCH_SIZE
  static constexpr uint32_t kRxMaxOps = kRxBatchPackets * 16;
  Batch<GrantCopyOp> rx_ops_;      // kRxMaxOps
  Batch<RxSlot> rx_slots_;         // kRxMaxOps
  Batch<RxPacket> rx_pkts_;        // kRxBatchPackets
  uint64_t rx_packets_total_ = 0;  // packets delivered, for faults
  bool rx_direct_ = false;         // rx_action: no fault configured (rx_slot)
  bool stalled_ = false;
  uint64_t last_rx_ns_ = 0;  // Linux's queue->last_rx_time
  bool stall_rx_active_ = false;

  // ---- bridge mode ----
  std::shared_ptr<BridgeInbox> inbox_;
  Bridge::View bridge_view_;

  // ---- source mode ----
  uint64_t source_seq_ = 0;
  uint64_t source_next_ns_ = 0;
};

}  // namespace xpv::netback
