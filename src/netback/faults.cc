// SPDX-License-Identifier: MIT
// Fault injection (--fault): each fault reaches the frontend only through
// the rings and event channels, exactly as a broken backend's would.
//
// One-shot faults fire once per vif, on the first queue that reaches
// --fault-after; late-tx-rsp and stall-rx switch a queue into a lasting mode
// once that queue reaches it. reconnect is driven by the control thread
// (vif_xenbus.cc).
#include <algorithm>

#include "netback/queue.h"
#include "util/log.h"

namespace xpv::netback {

uint16_t Queue::fault_tx_id(uint16_t id) {
  const Fault f = cfg_.fault;
  if (f != Fault::kBadTxRspId && f != Fault::kDupTxRsp) return id;
  if (vif_.oneshot_fired.load(std::memory_order_relaxed)) return id;
  if (f == Fault::kBadTxRspId) {
    if (tx_rsp_count_ < cfg_.fault_after || !vif_.claim_oneshot()) return id;
    const uint16_t bad = static_cast<uint16_t>(fault_arg_or_default(cfg_));
    ctr_.faults_injected.add();
    log_info("%s-q%u: fault bad-tx-rsp-id: answering TX id %u as id %u", vif_.name.c_str(), index(),
             id, bad);
    return bad;
  }
  // dup-tx-rsp: repeat the previous response's id (the previous slot is
  // answered twice, this one never).
  if (tx_rsp_count_ < std::max<uint64_t>(1, cfg_.fault_after) || !vif_.claim_oneshot()) return id;
  ctr_.faults_injected.add();
  log_info("%s-q%u: fault dup-tx-rsp: answering TX id %u as id %u again", vif_.name.c_str(),
           index(), id, last_tx_rsp_id_);
  return last_tx_rsp_id_;
}

void Queue::fault_after_tx_push() {
  switch (cfg_.fault) {
    case Fault::kRspProdOverflow:
      if (tx_rsp_count_ < cfg_.fault_after || vif_.oneshot_fired.load() || !vif_.claim_oneshot()) {
        return;
      }
      // rsp_prod far past anything we produced: the frontend must see
      // RING_RESPONSE_PROD_OVERFLOW. The ring is ours no more: stop TX.
      ring::store_release(tx_.header()->rsp_prod, tx_.rsp_prod_pvt() + 1000);
      notify(tx_port_);
      tx_poisoned_ = true;
      ctr_.faults_injected.add();
      log_info("%s-q%u: fault rsp-prod-overflow: TX rsp_prod set to %u", vif_.name.c_str(), index(),
               tx_.rsp_prod_pvt() + 1000);
      return;
    case Fault::kEventStorm: {
      if (tx_rsp_count_ < cfg_.fault_after || vif_.oneshot_fired.load() || !vif_.claim_oneshot()) {
        return;
      }
      const uint64_t n = fault_arg_or_default(cfg_);
      for (uint64_t i = 0; i < n; ++i) {
        (void)eoi_->channel().notify(tx_port_);
        if (rx_port_ != tx_port_) (void)eoi_->channel().notify(rx_port_);
      }
      ctr_.notifies_sent.add(rx_port_ != tx_port_ ? 2 * n : n);
      ctr_.faults_injected.add();
      log_info("%s-q%u: fault event-storm: %llu notifications without responses", vif_.name.c_str(),
               index(), static_cast<unsigned long long>(n));
      return;
    }
    default:
      return;
  }
}

void Queue::fault_start_late() {
  // late-tx-rsp: from the (N+1)th TX response on, every response waits.
  late_active_ = true;
  late_delay_ns_ = fault_arg_or_default(cfg_) * 1'000'000;
  log_info("%s-q%u: fault late-tx-rsp: holding TX responses for %llu ms", vif_.name.c_str(),
           index(), static_cast<unsigned long long>(fault_arg_or_default(cfg_)));
}

void Queue::fault_rx_response(RxSlot& slot, uint64_t packet_ordinal) {
  const Fault f = cfg_.fault;
  if (f != Fault::kBadRxRsp && f != Fault::kRxRspBadId) return;
  if (packet_ordinal < cfg_.fault_after || vif_.oneshot_fired.load() || !vif_.claim_oneshot()) {
    return;
  }
  ctr_.faults_injected.add();
  if (f == Fault::kBadRxRsp) {
    // offset + status > 4096: data claimed past the end of the page.
    slot.rsp.offset = static_cast<uint16_t>(kPageSize - 8);
    if (slot.rsp.status <= 8) slot.rsp.status = static_cast<int16_t>(kPageSize);
    log_info("%s-q%u: fault bad-rx-rsp: RX response id %u offset %u status %d", vif_.name.c_str(),
             index(), slot.rsp.id, slot.rsp.offset, slot.rsp.status);
  } else {
    slot.rsp.id = static_cast<uint16_t>(slot.req.id + 1);
    log_info("%s-q%u: fault rx-rsp-bad-id: RX request id %u answered as id %u", vif_.name.c_str(),
             index(), slot.req.id, slot.rsp.id);
  }
}

void Queue::fault_after_rx_packet() {
  if (cfg_.fault == Fault::kStallRx && !stall_rx_active_ && rx_packets_total_ >= cfg_.fault_after) {
    // Stop consuming RX requests and producing RX responses. The frontend
    // keeps requests posted, so stall detection (no request posted) stays
    // quiet; queued packets expire.
    stall_rx_active_ = true;
    ctr_.faults_injected.add();
    log_info("%s-q%u: fault stall-rx: no more RX requests consumed", vif_.name.c_str(), index());
  }
}

}  // namespace xpv::netback
