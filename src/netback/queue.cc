// SPDX-License-Identifier: MIT
// Queue set-up and teardown (xenvif_connect_data / xenvif_disconnect_data)
// and the worker loop (Linux's NAPI poll plus the guest-RX kthread, in one
// thread per queue).
#include "netback/queue.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "netback/clock.h"
#include "util/log.h"

namespace xpv::netback {

Result<std::unique_ptr<Queue>> Queue::create(VifContext& vif, Platform& dom0, GrantMapper& mapper,
                                             const QueueKeys& k) {
  std::unique_ptr<Queue> q(new Queue(vif, mapper, k));

  // xenvif_map_frontend_data_rings(): map both pages writable, attach at the
  // indices they hold, and refuse a ring claiming more requests than it can
  // hold (req_prod - rsp_prod > RING_SIZE: -EIO).
  auto tx = mapper.map(vif.domid, k.tx_ring_ref, /*writable=*/true);
  if (!tx) return tx.error();
  q->tx_map_ = std::move(*tx);
  q->tx_.attach(q->tx_map_.data());
  if (q->tx_.available_requests().overflow) {
    return make_error(EIO, "the TX ring holds an impossible number of requests");
  }
  auto rx = mapper.map(vif.domid, k.rx_ring_ref, /*writable=*/true);
  if (!rx) return rx.error();
  q->rx_map_ = std::move(*rx);
  q->rx_.attach(q->rx_map_.data());
  if (q->rx_.available_requests().overflow) {
    return make_error(EIO, "the RX ring holds an impossible number of requests");
  }

  // Event channels: one handle per queue, one port or two (split channels).
  auto ch = dom0.open_event_channel();
  if (!ch) return ch.error();
  auto txp = (*ch)->bind_interdomain(vif.domid, k.tx_evtchn);
  if (!txp) return txp.error();
  q->tx_port_ = q->rx_port_ = *txp;
  if (k.rx_evtchn != k.tx_evtchn) {
    auto rxp = (*ch)->bind_interdomain(vif.domid, k.rx_evtchn);
    if (!rxp) return rxp.error();  // the handle's close unbinds the TX port
    q->rx_port_ = *rxp;
  }
  auto eoi = LateEoiChannel::create(std::move(*ch));
  if (!eoi) return eoi.error();
  q->eoi_ = std::move(*eoi);
  Queue* self = q.get();
  if (q->split()) {
    // xenvif_tx_interrupt / xenvif_rx_interrupt.
    XPV_TRY(q->eoi_->add_port(q->tx_port_,
                              [self] { return self->count_event(self->tx_action(), "TX"); }));
    XPV_TRY(q->eoi_->add_port(q->rx_port_,
                              [self] { return self->count_event(self->rx_event_work(), "RX"); }));
  } else {
    // xenvif_interrupt: one port for both directions.
    XPV_TRY(q->eoi_->add_port(q->tx_port_, [self] {
      const bool tx = self->tx_action();
      const bool rx = self->rx_event_work();
      return self->count_event(tx || rx, "TX/RX");
    }));
  }

  // Everything the data path needs, allocated once.
  q->staging_.reset(new uint8_t[kTxStagingBytes]);
  q->tx_ops_.allocate(kTxMaxOps);
  q->tx_pkts_.allocate(kTxBatchPackets);
  q->tx_frag_ids_.allocate(kTxMaxOps);
  q->late_.reset(new LateRsp[kLateCapacity]);
  q->rx_ops_.allocate(kRxMaxOps);
  q->rx_slots_.allocate(kRxMaxOps);
  q->rx_pkts_.allocate(kRxBatchPackets);
  XPV_TRY(q->fifo_.init(vif.cfg.rx_queue_bytes, vif.cfg.rx_queue_packets));
  if (vif.cfg.fault == Fault::kStallRx && vif.cfg.fault_after == 0) {
    q->stall_rx_active_ = true;  // stall-rx after 0 packets: from the start
    q->ctr_.faults_injected.add();
  }
  auto w = make_eventfd();
  if (!w) return w.error();
  q->wake_ = std::move(*w);
  q->copy_rest_.reserve(std::max(kTxMaxOps, kRxMaxOps));
  q->copy_rest_idx_.reserve(std::max(kTxMaxOps, kRxMaxOps));
  if (vif.cfg.mode == Mode::kBridge || (vif.cfg.mode == Mode::kLoopback && vif.cfg.ctrl_ring)) {
    // Two buffers, each as big as the RX queue: while this worker lags, its
    // inbox takes what its RX queue would, one sender's full TX ring of
    // 64 KiB GSO packets included (256 slots, 17 a packet: 15 packets,
    // 983,025 bytes). Linux netback takes XENVIF_RX_QUEUE_BYTES into its
    // queue and then leaves packets in the vif's qdisc (1000 of them).
    // Loopback uses it for frames the hash steers from a sibling queue.
    auto in = BridgeInbox::create(vif.cfg.rx_queue_bytes, vif.cfg.rx_queue_packets);
    if (!in) return in.error();
    q->inbox_ = std::move(*in);
  }
  if (k.index < vif.static_grants.size()) {
    q->grants_ = vif.static_grants[k.index].get();
    q->grants_->set_wake_fd(q->wake_fd());
  }
  return q;
}

Queue::~Queue() {
  stop();
  if (eoi_) {
    // xenvif_disconnect_queue(): unbind the port(s); the rings are unmapped
    // by the GrantMappings' destructors.
    eoi_->remove_port(tx_port_);
    (void)eoi_->channel().unbind(tx_port_);
    if (rx_port_ != tx_port_) {
      eoi_->remove_port(rx_port_);
      (void)eoi_->channel().unbind(rx_port_);
    }
    eoi_.reset();
  }
}

Status Queue::start() {
  if (thread_.joinable()) return make_error(EBUSY, "queue already started");
  stop_.store(false);
  thread_ = std::thread([this] { run(); });
  return {};
}

void Queue::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  eventfd_signal(wake_fd());
  thread_.join();
}

ring::Available Queue::tx_requests() {
  const ring::Available a = tx_.available_requests();
  if (a.overflow && !vif_.disabled.load(std::memory_order_relaxed)) {
    // RING_REQUEST_PROD_OVERFLOW, or a req_prod moved back behind req_cons.
    ctr_.fatal_errors.add();
    vif_.report_fatal("Impossible number of requests. req_prod %u, req_cons %u, size %u",
                      ring::load_relaxed(tx_.header()->req_prod), tx_.req_cons(),
                      netif::kTxRingSize);
  }
  return a;
}

ring::Available Queue::rx_requests() {
  const ring::Available a = rx_.available_requests();
  if (a.overflow && !vif_.disabled.load(std::memory_order_relaxed)) {
    // Linux does not check this on RX; a req_prod beyond the bound can only
    // be a broken frontend, so we treat it as TX's overflow.
    ctr_.fatal_errors.add();
    vif_.report_fatal("Impossible number of RX requests. req_prod %u, req_cons %u, size %u",
                      ring::load_relaxed(rx_.header()->req_prod), rx_.req_cons(),
                      netif::kRxRingSize);
  }
  return a;
}

void Queue::notify(evtchn_port_t port) {
  Status s = eoi_->channel().notify(port);
  if (s.failed()) log_debug("%s-q%u: notify: %s", vif_.name.c_str(), index(), s.message().c_str());
  ctr_.notifies_sent.add();
}

bool Queue::count_event(bool work, const char* what) {
  ctr_.events.add();
  if (!work) ctr_.spurious_events.add();
  log_debug("%s-q%u: %s event%s", vif_.name.c_str(), index(), what, work ? "" : " (spurious)");
  return work;
}

bool Queue::rx_event_work() {
  // xenvif_rx_interrupt(): work is a packet that now fits the posted
  // requests, or a stalled queue whose frontend posted requests again.
  bool work = false;
  if (!stall_rx_active_) {
    const auto a = rx_requests();
    if (stalled_ && (a.overflow || a.count > 0)) work = true;
    if (cfg_.mode == Mode::kSource && a.count > 0) work = true;
    if (rx_ready_for_head()) {
      rx_action();
      work = true;
    }
  }
  return work;
}

bool Queue::service(uint64_t now) {
  // Nothing below can have work: no late TX responses, no TX left over, no
  // bridge inbox, nothing queued for RX nor a stall to end, no generator.
  if (late_count_ == 0 && !tx_more_ && !inbox_ && fifo_.empty() && !stalled_ &&
      cfg_.mode != Mode::kSource) {
    return false;
  }
  bool again = false;
  if (late_count_) tx_release_late(now);
  if (tx_more_ && !tx_poisoned_) tx_action();
  again |= tx_more_;
  if (inbox_) bridge_drain();
  rx_drop_expired(now);
  rx_check_stall(now);
  // A source that made frames comes back at once: either it makes more or,
  // out of posted requests, it arms req_event before the worker sleeps.
  if (cfg_.mode == Mode::kSource && source_generate(now)) again = true;
  if (!fifo_.empty() && !stall_rx_active_) {
    rx_action();
    // A full batch went out and more packets fit: go on without sleeping.
    if (rx_ready_for_head()) again = true;
  }
  return again;
}

int Queue::next_timeout_ms(uint64_t now) const {
  int t = eoi_->next_timeout_ms();
  auto take = [&](uint64_t due) {
    const int ms = ms_until(due, now);
    if (t < 0 || ms < t) t = ms;
  };
  if (late_count_) take(late_[late_head_].due_ns);
  if (!fifo_.empty()) {
    const auto& head = fifo_.front();
    take(head.enqueued_ns + vif_.drain_timeout_ns);
    if (vif_.stall_timeout_ns && !stalled_) {
      take(std::max(last_rx_ns_, head.enqueued_ns) + vif_.stall_timeout_ns);
    }
  }
  if (cfg_.mode == Mode::kSource && cfg_.source_rate &&
      (cfg_.source_count == 0 || source_seq_ < cfg_.source_count) && !stalled_ &&
      !stall_rx_active_) {
    take(source_next_ns_);
  }
  return t;
}

void Queue::run() {
  char tname[16];
  std::snprintf(tname, sizeof tname, "nb%u.%u-q%u", vif_.domid, vif_.handle, index());
  ::pthread_setname_np(::pthread_self(), tname);
  last_rx_ns_ = source_next_ns_ = now_ns();
  if (cfg_.busy_poll) {
    run_busy_poll();
    return;
  }
  const int wake = wake_fd();
  pollfd fds[2] = {{eoi_->fd(), POLLIN, 0}, {wake, POLLIN, 0}};
  while (!stop_.load(std::memory_order_acquire)) {
    // Take (and acknowledge) the newest static grant table, also while idle:
    // a DEL_GREF_MAPPING waits for it before unmapping.
    if (grants_) (void)grants_->acquire();
    if (vif_.disabled.load(std::memory_order_acquire)) {
      // A disabled vif serves nothing until it is torn down
      // (xenvif_kthread_guest_rx: carrier off and stop).
      bridge_close();
      ::poll(&fds[1], 1, -1);
      eventfd_drain(wake);
      continue;
    }
    const uint64_t now = now_ns();
    const bool again = service(now);
    const int timeout = again ? 0 : next_timeout_ms(now);
    fds[0].revents = fds[1].revents = 0;
    const int n = ::poll(fds, 2, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      log_error("%s-q%u: poll: %s", vif_.name.c_str(), index(), errno_string(errno).c_str());
      break;
    }
    if (fds[1].revents) eventfd_drain(wake);
    if (fds[0].revents) {
      auto r = eoi_->process();
      if (!r) {
        log_error("%s-q%u: event channel: %s", vif_.name.c_str(), index(),
                  r.error().message.c_str());
        break;
      }
    }
  }
}

void Queue::run_busy_poll() {
  // The frontend never needs to notify us: keep req_event far ahead of the
  // consumer on both rings (a producer notifies only when its new index
  // passes req_event) and poll the rings instead of the event channel.
  constexpr uint32_t kDisarm = 0x80000000u;
  while (!stop_.load(std::memory_order_acquire)) {
    if (grants_) (void)grants_->acquire();
    if (vif_.disabled.load(std::memory_order_acquire)) {
      bridge_close();
      pollfd w{wake_fd(), POLLIN, 0};
      ::poll(&w, 1, -1);
      eventfd_drain(wake_fd());
      continue;
    }
    ring::store_relaxed(tx_.header()->req_event, tx_.req_cons() + kDisarm);
    ring::store_relaxed(rx_.header()->req_event, rx_.req_cons() + kDisarm);
    // The TX ring is served when it has requests (or an impossible
    // req_prod, which tx_action reports): with none, tx_action would only
    // push no responses. Idle spins stay cheap.
    const ring::Available a = tx_.available_requests();
    bool work = (a.count > 0 || a.overflow || tx_more_) && tx_action();
    work |= service(now_ns());
    if (!work) std::this_thread::yield();
  }
}

void Queue::copy_batch(std::span<GrantCopyOp> ops) {
  const GrefTable* t = batch_grants_;
  if (t == nullptr) {
    Status s = mapper_.copy(ops);
    if (s.failed()) {
      for (auto& op : ops)
        op.status = -1;  // GNTST_general_error
    }
    ctr_.grant_copies.add(ops.size());
    return;
  }
  copy_rest_.clear();
  copy_rest_idx_.clear();
  uint64_t by_memcpy = 0;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    GrantCopyOp& op = ops[i];
    // Our ops have one grant side, the frontend's page.
    const bool from_guest = op.source.is_grant;
    const GrantCopySegment& g = from_guest ? op.source : op.dest;
    const GrefTable::Page* p = t->find(g.ref);
    if (p == nullptr || (!from_guest && !p->writable)) {
      copy_rest_.push_back(op);
      copy_rest_idx_.push_back(i);
      continue;
    }
    ++by_memcpy;
    if (uint32_t{g.offset} + op.len > kPageSize) {
      op.status = -1;  // what the grant copy answers: the page ends before
      continue;
    }
    uint8_t* guest = p->data + g.offset;
    if (from_guest) {
      std::memcpy(op.dest.local, guest, op.len);
    } else {
      std::memcpy(guest, op.source.local, op.len);
    }
    op.status = 0;
  }
  if (!copy_rest_.empty()) {
    Status s = mapper_.copy(std::span<GrantCopyOp>(copy_rest_));
    for (uint32_t k = 0; k < copy_rest_.size(); ++k)
      ops[copy_rest_idx_[k]].status = s.failed() ? int16_t{-1} : copy_rest_[k].status;
  }
  ctr_.static_grant_copies.add(by_memcpy);
  ctr_.grant_copies.add(copy_rest_.size());
}

}  // namespace xpv::netback
