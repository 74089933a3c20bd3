// SPDX-License-Identifier: MIT
#include "netfront/queue.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <chrono>
#include <thread>

#include "util/log.h"

namespace xpv {

namespace {
constexpr uint32_t kRingMask = QueueImpl::kRingSize - 1;
// An rsp_event this far ahead of the consumer is never crossed: the backend
// never notifies (poll mode keeps moving it along with the consumer).
constexpr uint32_t kDisarmedDistance = 0x80000000u;
// Slot ids the TX fast path takes from its pool at a time.
constexpr uint32_t kTxIdBatch = 64;

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
std::mutex g_reason_mu;
}  // namespace

struct QueueImpl::Conn {
  domid_t backend = 0;
  SharedPages tx_ring_page;
  SharedPages rx_ring_page;
  netif::TxFrontRing tx;
  netif::RxFrontRing rx;
  std::unique_ptr<BufferPool> tx_pool;
  std::unique_ptr<BufferPool> rx_pool;
  std::unique_ptr<LateEoiChannel> evt;
  evtchn_port_t tx_port = 0;
  evtchn_port_t rx_port = 0;
  bool split = false;
  bool sg = false;  // the backend takes multi-slot packets (feature-sg)

  // TX: per pool slot (== request id).
  std::array<TxSlot, kTxPoolSlots> tx_slots{};
  uint32_t tx_in_flight = 0;  // slots

  // RX: the pool slot posted at each ring index.
  std::array<uint16_t, kRingSize> rx_posted{};
  // Fragments of staged and in-assembly packets, in arrival order (a FIFO:
  // packets are delivered in order, and a dropped packet is always the one
  // being assembled, at the head).
  std::array<RxFrag, kRxPoolSlots> frags{};
  uint32_t frag_head = 0;  // next free (free-running)
  uint32_t frag_tail = 0;  // oldest live
  std::array<RxStaged, kRxPoolSlots> staged{};
  uint32_t staged_head = 0;
  uint32_t staged_tail = 0;
  // The packet being assembled from several responses.
  bool asm_active = false;
  bool asm_bad = false;
  bool asm_error_status = false;
  bool asm_last_seen = false;  // its last data slot arrived (extras may follow)
  uint32_t asm_first = 0;
  uint16_t asm_nfrags = 0;
  uint16_t asm_flags = 0;
  uint32_t asm_len = 0;
  bool extra_pending = false;

  // Event counters already added to the queue's counters, per port.
  EventCounters seen_tx;
  EventCounters seen_rx;
};

QueueImpl::QueueImpl(uint32_t index) : index_(index), api_(this) {}

QueueImpl::~QueueImpl() {
  stop();
  if (conn_) (void)teardown();
}

Status QueueImpl::init() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return make_error(errno, "epoll_create1: " + errno_string(errno));
  epfd_.reset(ep);
  auto k = make_eventfd();
  if (!k) return k.error();
  kick_ = std::move(*k);
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, kick_.get(), &ev) != 0) {
    return make_error(errno, "epoll_ctl: " + errno_string(errno));
  }
  return {};
}

std::string QueueImpl::broken_reason() const {
  std::lock_guard lk(g_reason_mu);
  return broken_reason_;
}

// ---------------------------------------------------------------------------
// Control path.

Status QueueImpl::setup(Platform& plat, GrantSharer& sharer, domid_t backend, bool split, bool sg,
                        int wake_fd) {
  if (conn_) return make_error(EBUSY, format("queue %u is already set up", index_));
  auto c = std::make_unique<Conn>();
  c->backend = backend;
  c->split = split;
  c->sg = sg;
  wake_fd_ = wake_fd;
  broken_.store(false);
  {
    std::lock_guard lk(g_reason_mu);
    broken_reason_.clear();
  }

  // Ring pages: writable by the backend (it writes responses).
  auto txp = sharer.share(backend, 1, true);
  if (!txp)
    return make_error(txp.error().code, "granting the TX ring page: " + txp.error().message);
  auto rxp = sharer.share(backend, 1, true);
  if (!rxp)
    return make_error(rxp.error().code, "granting the RX ring page: " + rxp.error().message);
  c->tx_ring_page = std::move(*txp);
  c->rx_ring_page = std::move(*rxp);
  c->tx.attach(c->tx_ring_page.data(), /*init=*/true);
  c->rx.attach(c->rx_ring_page.data(), /*init=*/true);

  // Buffers: TX pages read-only for the backend (as Linux netfront grants
  // them), RX pages writable (the backend copies packets in).
  auto tp = BufferPool::create(sharer, backend, kTxPoolSlots, /*writable=*/false);
  if (!tp) return tp.error();
  auto rp = BufferPool::create(sharer, backend, kRxPoolSlots, /*writable=*/true);
  if (!rp) return rp.error();
  c->tx_pool = std::move(*tp);
  c->rx_pool = std::move(*rp);

  // Event channel(s): unbound ports the backend binds to.
  auto ch = plat.open_event_channel();
  if (!ch) return ch.error();
  auto tport = (*ch)->alloc_unbound(backend);
  if (!tport) return tport.error();
  c->tx_port = c->rx_port = *tport;
  if (split) {
    auto rport = (*ch)->alloc_unbound(backend);
    if (!rport) return rport.error();
    c->rx_port = *rport;
  }
  auto evt = LateEoiChannel::create(std::move(*ch));
  if (!evt) return evt.error();
  c->evt = std::move(*evt);
  if (split) {
    XPV_TRY(c->evt->add_port(c->tx_port, [this] {
      InHandler h(in_handler_);
      return handle_tx_responses();
    }));
    XPV_TRY(c->evt->add_port(c->rx_port, [this] {
      InHandler h(in_handler_);
      return handle_rx_responses();
    }));
  } else {
    XPV_TRY(c->evt->add_port(c->tx_port, [this] {
      InHandler h(in_handler_);
      return handle_responses();
    }));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (::epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, c->evt->fd(), &ev) != 0) {
    return make_error(errno, "epoll_ctl: " + errno_string(errno));
  }
  conn_ = std::move(c);
  // Post every RX buffer before connecting: a packet the backend has ready
  // the moment we connect must find a buffer (the "first packet lost" bug).
  refill_rx(/*force=*/true);
  if (mode() == QueueMode::kPoll) disarm();
  return {};
}

QueueKeys QueueImpl::keys() const {
  QueueKeys k;
  if (!conn_) return k;
  k.tx_ring_ref = conn_->tx_ring_page.ref(0);
  k.rx_ring_ref = conn_->rx_ring_page.ref(0);
  k.tx_port = conn_->tx_port;
  k.rx_port = conn_->rx_port;
  k.split = conn_->split;
  return k;
}

void QueueImpl::start() {
  if (!conn_) return;
  // "Get ready to start sending and receiving packets and give the relevant
  // rings a kick" (netfront's xennet_connect): the backend looks at both.
  notify(conn_->tx_port);
  if (conn_->split) notify(conn_->rx_port);
  active_.store(true, std::memory_order_relaxed);
  eventfd_signal(kick_.get());  // a sleeper re-checks the new connection
}

void QueueImpl::stop() {
  active_.store(false, std::memory_order_relaxed);
  lock();  // waits for a data-path call in progress to leave
  unlock();
}

// Orderly close: wait (bounded) until the backend answered every request we
// published, so that no packet accepted by transmit() is silently lost. The
// data path is stopped, so the control thread may run the handler here.
uint32_t QueueImpl::drain_tx(uint32_t timeout_ms) {
  if (!conn_ || broken_.load()) return 0;
  const QueueMode m = mode();
  mode_.store(QueueMode::kPoll);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (conn_->tx_in_flight && !broken_.load() && std::chrono::steady_clock::now() < deadline) {
    if (!handle_tx_responses()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  mode_.store(m);
  return conn_->tx_in_flight;
}

QueueTeardown QueueImpl::teardown() {
  QueueTeardown t;
  if (!conn_) return t;
  Conn& c = *conn_;
  // Responses already published still count as answered (unless the
  // backend broke the rings, in which case nothing more is read).
  if (!broken_.load()) {
    const QueueMode m = mode();
    mode_.store(QueueMode::kPoll);
    handle_tx_responses();
    mode_.store(m);
  }
  // Received packets nobody took, and the one being assembled.
  t.rx_dropped_staged = c.staged_head - c.staged_tail + (c.asm_active ? 1 : 0);
  for (uint32_t i = 0; i < kTxPoolSlots; ++i) {
    if (c.tx_slots[i].in_flight && c.tx_slots[i].head) ++t.tx_unanswered;
  }
  count(kCounter_rx_dropped, t.rx_dropped_staged);
  count(kCounter_tx_dropped, t.tx_unanswered);
  if (t.rx_dropped_staged || t.tx_unanswered) {
    log_warn(
        "queue %u: teardown dropped %lu received packets not yet delivered and %lu sent "
        "packets the backend never answered",
        index_, static_cast<unsigned long>(t.rx_dropped_staged),
        static_cast<unsigned long>(t.tx_unanswered));
  }
  // Event channels first (no more events), then end access to every page.
  if (c.evt) {
    sync_events();
    ::epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, c.evt->fd(), nullptr);
    c.evt.reset();
  }
  auto add = [&](const EndAccessReport& r) {
    t.pages.pages += r.pages;
    t.pages.returned += r.ended;
    t.pages.still_mapped += r.still_mapped;
    t.pages.unknown |= r.unknown;
  };
  auto addp = [&](std::unique_ptr<BufferPool>& p) {
    if (!p) return;
    PoolTeardownReport r = p->teardown();
    t.pages.pages += r.pages;
    t.pages.returned += r.returned;
    t.pages.still_mapped += r.still_mapped;
    t.pages.unknown |= r.unknown;
    t.pages.in_use += r.in_use;
  };
  add(c.tx_ring_page.end_access());
  add(c.rx_ring_page.end_access());
  addp(c.tx_pool);
  addp(c.rx_pool);
  if (t.pages.still_mapped) {
    log_warn(
        "queue %u: %u of %u granted pages are still mapped by the backend; they are kept "
        "(never reused) until it lets go",
        index_, t.pages.still_mapped, t.pages.pages);
  }
  conn_.reset();
  return t;
}

// ---------------------------------------------------------------------------
// Data path helpers.

void QueueImpl::notify(evtchn_port_t port) {
  Status s = conn_->evt->channel().notify(port);
  if (s.failed()) {
    backend_error("notifying the backend on port %u failed: %s", port, s.message().c_str());
    return;
  }
  count(kCounter_notifies);
}

void QueueImpl::backend_error(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  count(kCounter_backend_errors);
  if (broken_.load(std::memory_order_relaxed)) return;  // the first reason is the one
  {
    std::lock_guard lk(g_reason_mu);
    broken_reason_ = format("queue %u: %s", index_, buf);
  }
  broken_.store(true, std::memory_order_release);
  log_error("backend protocol violation on queue %u: %s; disconnecting", index_, buf);
  if (wake_fd_ >= 0) eventfd_signal(wake_fd_);
}

// Event mode: runs the handlers of the ports that fired (late EOI).
uint32_t QueueImpl::process_events() {
  auto r = conn_->evt->process();
  sync_events();
  if (!r) {
    backend_error("event channel failed: %s", r.error().message.c_str());
    return 0;
  }
  return *r;
}

// Adds what the event channel counted since the last call to the queue's
// counters (events, spurious events, delayed EOIs).
void QueueImpl::sync_events() {
  Conn& c = *conn_;
  auto take = [&](evtchn_port_t port, EventCounters& seen) {
    const EventCounters* e = c.evt->counters(port);
    if (!e) return;
    count(kCounter_events, e->events - seen.events);
    count(kCounter_spurious_events, e->spurious - seen.spurious);
    count(kCounter_delayed_eois, e->delayed_eois - seen.delayed_eois);
    seen = *e;
  };
  take(c.tx_port, c.seen_tx);
  if (c.split) take(c.rx_port, c.seen_rx);
}

// In poll mode the backend must never notify us: keep the response events
// far ahead of our consumers.
void QueueImpl::disarm() {
  Conn& c = *conn_;
  c.tx.set_response_event(kDisarmedDistance);
  c.rx.set_response_event(kDisarmedDistance);
}

// Event mode, TX: ask for an event once half of what is in flight has been
// answered (at least the next response), then look again for responses that
// raced with the re-arm. The backend answers every request eventually, so the
// event always comes.
void QueueImpl::rearm_tx() {
  Conn& c = *conn_;
  const uint32_t ahead = std::max<uint32_t>(1, c.tx_in_flight / 2);
  c.tx.set_response_event(ahead);
  ring::full_fence();
}

// The event handler: consumes every response of both rings.
bool QueueImpl::handle_responses() {
  bool tx = handle_tx_responses();
  bool rx = handle_rx_responses();
  return tx || rx;
}

bool QueueImpl::handle_tx_responses() {
  Conn& c = *conn_;
  bool work = false;
  for (;;) {
    ring::Available a = c.tx.available_responses();
    if (a.overflow) {
      backend_error(
          "TX response producer %u is more than the %u requests outstanding "
          "(RING_RESPONSE_PROD_OVERFLOW)",
          ring::load_relaxed(c.tx.header()->rsp_prod), c.tx_in_flight);
      return true;
    }
    if (a.count == 0) {
      if (mode() == QueueMode::kPoll) {
        c.tx.set_response_event(kDisarmedDistance);
        return work;
      }
      rearm_tx();
      if (c.tx.available_responses().count == 0) return work;
      continue;  // answered while we re-armed
    }
    work = true;
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
    for (; k < a.count; ++k) {
      const netif::TxResponse r = c.tx.response_at(cons + k);  // copied once
      if (r.status != netif::kRspOkay) [[unlikely]] {
        // NETIF_RSP_NULL answers an extra-info slot, which owns no buffer.
        if (r.status == netif::kRspNull) continue;
        if (r.id < kTxPoolSlots && slots[r.id].in_flight && slots[r.id].head) {
          count(r.status == netif::kRspDropped ? kCounter_tx_dropped : kCounter_tx_errors);
        }
      }
      if (r.id >= kTxPoolSlots || !slots[r.id].in_flight) [[unlikely]] {
        pool.free_bulk(freed, nfreed);
        c.tx.consume_responses(k + 1);
        c.tx_in_flight -= nfreed;
        backend_error("TX response for id %u, which is %s", r.id,
                      r.id >= kTxPoolSlots ? "out of range" : "not in flight (answered twice?)");
        return true;
      }
      slots[r.id] = TxSlot{};
      freed[nfreed++] = r.id;
    }
    pool.free_bulk(freed, nfreed);
    c.tx.consume_responses(k);
    c.tx_in_flight -= nfreed;
  }
}

bool QueueImpl::handle_rx_responses(Direct* direct) {
  Conn& c = *conn_;
  bool work = false;
  // The caller's budget in locals: the callback is opaque to the compiler,
  // so anything it could reach would be reloaded after every packet.
  uint16_t dn = direct ? direct->n : 0;
  uint16_t dmax = direct ? direct->max : 0;
  uint64_t dbytes = 0;
  auto finish = [&](bool result) {
    if (direct) {
      direct->n = dn;
      direct->bytes += dbytes;
    }
    return result;
  };
  for (;;) {
    ring::Available a = c.rx.available_responses();
    if (a.overflow) {
      backend_error(
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
    bool staged_empty = c.staged_tail == c.staged_head;
    // One descriptor for every single-slot packet handed over in this batch
    // (the callback gets it by const reference and may not keep it).
    RxFragment fr{nullptr, 0};
    RxPacket pkt{&fr, 1, 0, 0};
    uint32_t freed[kRingSize];  // delivered slots, back to the pool once per batch
    uint32_t nfreed = 0;
    uint32_t k = 0;
    for (; k < a.count; ++k) {
      const uint32_t idx = cons + k;
      const netif::RxResponse r = c.rx.response_at(idx);  // copied once
      const uint16_t slot = posted[idx & kRingMask];
      // Fast path, the common case: a whole packet in one slot (no more_data,
      // no extra info), the id of its request, inside its page.
      if (simple && !(r.flags & (netif::kRxMoreData | netif::kRxExtraInfo)) && r.status > 0 &&
          r.id == (idx & kRingMask) &&
          size_t{r.offset} + static_cast<uint16_t>(r.status) <= kPageSize) [[likely]] {
        const uint32_t len = static_cast<uint32_t>(r.status);
        if (dn < dmax && staged_empty) {
          // Poll mode: hand it to the caller at once (nothing older waits).
          fr.data = pages + size_t{slot} * kPageSize + r.offset;
          fr.len = len;
          pkt.len = len;
          pkt.flags = r.flags;
          if (fn(ctx, pkt)) {
            freed[nfreed++] = slot;
            ++dn;
            dbytes += len;
            continue;
          }
          dmax = dn;  // the caller is full: stage the rest
        }
        const uint32_t f = c.frag_head++;
        c.frags[f % kRxPoolSlots] = {slot, r.offset, static_cast<uint16_t>(len)};
        c.staged[c.staged_head++ % kRxPoolSlots] = {f, 1, r.flags, len};
        staged_empty = false;
        continue;
      }
      if (!rx_slow(idx, r, slot)) {
        pool.free_bulk(freed, nfreed);
        c.rx.consume_responses(k + 1);
        return finish(true);
      }
      simple = !c.asm_active && !c.extra_pending;
      staged_empty = c.staged_tail == c.staged_head;
    }
    pool.free_bulk(freed, nfreed);
    c.rx.consume_responses(k);
  }
}

// The rare RX responses: extra-info slots, multi-slot packets, error
// statuses, and protocol violations. Returns false on a violation.
bool QueueImpl::rx_slow(uint32_t idx, const netif::RxResponse& r, uint16_t slot) {
  Conn& c = *conn_;
  if (c.extra_pending) {
    // This slot carries a netif_extra_info; its buffer holds no data.
    netif::ExtraInfo e;
    std::memcpy(&e, &r, sizeof e);
    c.rx_pool->free(slot);
    if (e.type == netif::kExtraTypeNone || e.type >= netif::kExtraTypeMax) c.asm_bad = true;
    c.extra_pending = (e.flags & netif::kExtraFlagMore) != 0;
  } else {
    // The backend answers in the slot of the request (netif.h), echoing
    // its id, which we set to the ring index.
    if (r.id != (idx & kRingMask)) {
      c.rx_pool->free(slot);
      backend_error("RX response at ring index %u names id %u; that request had id %u", idx, r.id,
                    idx & kRingMask);
      return false;
    }
    if (!c.asm_active) {
      c.asm_active = true;
      c.asm_bad = c.asm_error_status = c.asm_last_seen = false;
      c.asm_first = c.frag_head;
      c.asm_nfrags = 0;
      c.asm_len = 0;
      c.asm_flags = r.flags;
    }
    if (r.status < 0) {
      // NETIF_RSP_ERROR/DROPPED: the backend failed this packet.
      c.asm_bad = c.asm_error_status = true;
      c.rx_pool->free(slot);
    } else if (r.offset >= kPageSize ||
               size_t{r.offset} + static_cast<uint16_t>(r.status) > kPageSize) {
      c.rx_pool->free(slot);
      backend_error("RX response offset %u + length %d lies outside its %zu-byte page", r.offset,
                    r.status, kPageSize);
      return false;
    } else if (c.asm_nfrags == kMaxRxFrags || c.asm_len + r.status > kMaxPacketLen) {
      // More fragments or bytes than any packet may have: drop it.
      c.asm_bad = true;
      c.rx_pool->free(slot);
    } else {
      c.frags[c.frag_head++ % kRxPoolSlots] = {slot, r.offset, static_cast<uint16_t>(r.status)};
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
        c.rx_pool->free(c.frags[f % kRxPoolSlots].slot);
      }
      c.frag_head = c.asm_first;
      count(c.asm_error_status ? kCounter_rx_errors : kCounter_rx_dropped);
    } else {
      c.staged[c.staged_head++ % kRxPoolSlots] = {c.asm_first, c.asm_nfrags, c.asm_flags,
                                                  c.asm_len};
    }
  }
  return true;
}

// Posts free RX buffers. Batched: only when a batch is free (or forced),
// with at most one notification, and only if the backend asked for one.
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

// ---------------------------------------------------------------------------
// Data path.

// Short of TX room: let the handler reclaim. In poll mode the poll loop runs
// it; in event mode it runs only for an event that fired, so the transmit
// path never consumes a response the backend's event was raised for.
void QueueImpl::reclaim_tx() {
  if (mode() == QueueMode::kPoll) {
    handle_tx_responses();
  } else {
    process_events();
  }
}

uint16_t QueueImpl::transmit(std::span<const TxPacket> pkts) {
  if (!enter()) return 0;
  InHandler xmit(in_xmit_);
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
  if (c.tx.free_requests() < kMaxTxSlots || c.tx_pool->available() < kMaxTxSlots) reclaim();
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
  const uintptr_t pool_bytes = uintptr_t{pool.size()} * kPageSize;
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

  size_t done = 0;
  for (; done < n; ++done) {
    const TxPacket& p = pkts[done];
    // Fast path: one segment that fits a page and is not one of our lent
    // pages: one copy, one request (netif.h: a single slot whose size is
    // the packet's length).
    if (p.nsegs == 1) {
      const uint8_t* d = static_cast<const uint8_t*>(p.segs[0].data);
      const uint32_t len = p.segs[0].len;
      const bool lent =
          reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(pool_lo) < pool_bytes;
      if (len - 1u < kPageSize && !lent) [[likely]] {
        if (id == id_end) {
          sync();
          if ((ring.full() || pool.available() == 0) && !reclaimed) reclaim();
          const uint32_t want = static_cast<uint32_t>(
              std::min<size_t>({kTxIdBatch, n - done, size_t{ring.free_requests()}}));
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
        netif::TxRequest& q = ring.request_at(prod++);
        q.gref = refs[slot];
        q.offset = 0;
        q.flags = 0;
        q.id = static_cast<uint16_t>(slot);
        q.size = static_cast<uint16_t>(len);
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
      ++done;
      break;
    }
  }
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
  if (len == 0 || len > kMaxPacketLen || p.nsegs == 0) return {0, 0, 0, reclaimed};
  // Zero-copy when every segment is a page lent by tx_buffer() and lies
  // within it: the request names that page's grant directly. The first
  // slot must carry the whole Ethernet header: netback drops a packet whose
  // first slot has fewer than 14 bytes of its own.
  bool zero_copy = p.nsegs <= kMaxTxSlots;
  uint32_t zslots[kMaxTxSlots];
  uint32_t zoffs[kMaxTxSlots];
  for (uint16_t i = 0; zero_copy && i < p.nsegs; ++i) {
    uint32_t slot = 0, off = 0;
    zero_copy = c.tx_pool->locate(p.segs[i].data, &slot, &off) && c.tx_slots[slot].lent &&
                off + p.segs[i].len <= kPageSize && p.segs[i].len >= (i == 0 ? 14u : 1u);
    for (uint16_t j = 0; zero_copy && j < i; ++j)
      zero_copy = zslots[j] != slot;
    zslots[i] = slot;
    zoffs[i] = off;
  }
  const uint32_t nslots =
      zero_copy ? p.nsegs : static_cast<uint32_t>((len + kPageSize - 1) / kPageSize);
  // More than XEN_NETIF_NR_SLOTS_MIN slots, or several slots for a backend
  // without feature-sg: never sendable.
  if (nslots > kMaxTxSlots || (nslots > 1 && !c.sg)) return {0, 0, 0, reclaimed};
  auto no_room = [&] {
    return c.tx.free_requests() < nslots || (!zero_copy && c.tx_pool->available() < nslots);
  };
  if (no_room() && !reclaimed) {
    reclaimed = true;
    reclaim_tx();
  }
  if (no_room() || broken_.load(std::memory_order_relaxed)) return {-1, 0, 0, reclaimed};
  // netif.h: the first slot's size is the whole packet; NETTXF_more_data on
  // every slot but the last.
  if (zero_copy) {
    for (uint32_t s = 0; s < nslots; ++s) {
      netif::TxRequest& q = c.tx.next_request();
      q.gref = c.tx_pool->ref(zslots[s]);
      q.offset = static_cast<uint16_t>(zoffs[s]);
      q.flags = s + 1 < nslots ? netif::kTxMoreData : 0;
      q.id = static_cast<uint16_t>(zslots[s]);
      q.size = static_cast<uint16_t>(s == 0 ? len : p.segs[s].len);
      c.tx_slots[zslots[s]] = TxSlot{true, s == 0, false};
      c.tx.commit_request();
    }
  } else {
    uint16_t seg = 0;
    uint32_t seg_off = 0;
    uint64_t left = len;
    for (uint32_t s = 0; s < nslots; ++s) {
      uint32_t slot = 0;
      c.tx_pool->alloc(&slot);
      uint8_t* page = c.tx_pool->data(slot);
      const uint32_t chunk = static_cast<uint32_t>(std::min<uint64_t>(left, kPageSize));
      // Gather `chunk` bytes from the segments into the page.
      uint32_t filled = 0;
      while (filled < chunk) {
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
      netif::TxRequest& q = c.tx.next_request();
      q.gref = c.tx_pool->ref(slot);
      q.offset = 0;
      q.flags = s + 1 < nslots ? netif::kTxMoreData : 0;
      q.id = static_cast<uint16_t>(slot);
      q.size = static_cast<uint16_t>(s == 0 ? len : chunk);
      c.tx_slots[slot] = TxSlot{true, s == 0, false};
      c.tx.commit_request();
    }
  }
  return {1, nslots, static_cast<uint32_t>(len), reclaimed};
}

uint16_t QueueImpl::receive(uint16_t max, Queue::Deliver fn, void* ctx) {
  if (!enter()) return 0;
  Conn& c = *conn_;
  uint16_t n = 0;
  uint64_t bytes = 0;
  auto deliver_staged = [&] {
    RxFragment frags[kMaxRxFrags];
    BufferPool& pool = *c.rx_pool;
    while (n < max && c.staged_tail != c.staged_head) {
      const RxStaged& s = c.staged[c.staged_tail % kRxPoolSlots];
      for (uint16_t f = 0; f < s.nfrags; ++f) {
        const RxFrag& fr = c.frags[(s.first_frag + f) % kRxPoolSlots];
        frags[f] = {pool.data(fr.slot) + fr.offset, fr.len};
      }
      const RxPacket pkt{frags, s.nfrags, s.len, s.flags};
      if (!fn(ctx, pkt)) return false;
      for (uint16_t f = 0; f < s.nfrags; ++f) {
        pool.free(c.frags[(s.first_frag + f) % kRxPoolSlots].slot);
      }
      c.frag_tail += s.nfrags;
      bytes += s.len;
      ++c.staged_tail;
      ++n;
    }
    return true;
  };
  if (!broken_.load(std::memory_order_relaxed)) {
    if (mode() == QueueMode::kPoll) {
      // Older packets first; then the handler, which delivers what it finds
      // straight to the caller while the caller has room.
      if (deliver_staged() && n < max) {
        Direct d{fn, ctx, max, n, 0};
        handle_rx_responses(&d);
        n = d.n;
        bytes += d.bytes;
        if (n < max) deliver_staged();  // multi-slot packets it staged
      }
    } else {
      eventfd_drain(kick_.get());
      process_events();
      if (!broken_.load(std::memory_order_relaxed)) deliver_staged();
    }
  }
  if (n) {
    count(kCounter_rx_packets, n);
    count(kCounter_rx_bytes, bytes);
  }
  if (!broken_.load(std::memory_order_relaxed)) refill_rx(false);
  leave();
  return n;
}

bool QueueImpl::poll() {
  if (!enter()) return false;
  bool work = false;
  if (!broken_.load(std::memory_order_relaxed)) {
    if (mode() == QueueMode::kPoll) {
      work = handle_responses();
    } else {
      eventfd_drain(kick_.get());
      work = process_events() > 0;
    }
  }
  leave();
  return work;
}

bool QueueImpl::arm() {
  if (!enter()) return true;  // nothing to wait for until reconnected
  Conn& c = *conn_;
  mode_.store(QueueMode::kEvent, std::memory_order_relaxed);
  bool sleep = !broken_.load(std::memory_order_relaxed) && c.staged_tail == c.staged_head;
  if (sleep) {
    refill_rx(true);
    rearm_tx();
    if (c.tx.available_responses().count) sleep = false;
    ring::Available f = c.rx.final_check_for_responses();
    if (f.count || f.overflow) sleep = false;
  }
  // Work is waiting: make the event fd readable so that a caller who sleeps
  // on it anyway (DPDK's rx interrupt path) wakes at once.
  if (!sleep) eventfd_signal(kick_.get());
  leave();
  return sleep;
}

void QueueImpl::set_mode(QueueMode m) {
  mode_.store(m, std::memory_order_relaxed);
  if (!enter()) return;
  if (m == QueueMode::kPoll) {
    disarm();
  } else {
    rearm_tx();
    (void)conn_->rx.final_check_for_responses();
  }
  leave();
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

QueueCounters QueueImpl::counters() const {
  QueueCounters out;
  for (size_t i = 0; i < kQueueCounterCount; ++i) {
    *reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&out) + kQueueCounterInfo[i].offset) =
        counters_[i].load(std::memory_order_relaxed);
  }
  return out;
}

void QueueImpl::reset_counters() {
  for (auto& c : counters_)
    c.store(0, std::memory_order_relaxed);
}

netif::TxFrontRing* QueueImpl::tx_ring() {
  return conn_ ? &conn_->tx : nullptr;
}
netif::RxFrontRing* QueueImpl::rx_ring() {
  return conn_ ? &conn_->rx : nullptr;
}

// ---------------------------------------------------------------------------
// The public face.

uint16_t Queue::transmit(std::span<const TxPacket> pkts) {
  return impl_->transmit(pkts);
}
uint16_t Queue::receive_raw(uint16_t max, Deliver fn, void* ctx) {
  return impl_->receive(max, fn, ctx);
}
bool Queue::poll() {
  return impl_->poll();
}
bool Queue::arm() {
  return impl_->arm();
}
int Queue::event_fd() const {
  return impl_->event_fd();
}
void Queue::set_mode(QueueMode m) {
  impl_->set_mode(m);
}
QueueMode Queue::mode() const {
  return impl_->mode();
}
uint8_t* Queue::tx_buffer() {
  return impl_->tx_buffer();
}
void Queue::tx_buffer_free(uint8_t* page) {
  impl_->tx_buffer_free(page);
}
QueueCounters Queue::counters() const {
  return impl_->counters();
}
void Queue::reset_counters() {
  impl_->reset_counters();
}
uint32_t Queue::index() const {
  return impl_->index();
}

}  // namespace xpv
