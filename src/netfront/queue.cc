// SPDX-License-Identifier: MIT
// A queue's lifecycle (setup, start, stop, drain, teardown), its events and
// modes (poll, event, arming before a sleep), error reporting and
// accounting. The data path is in tx.cc and rx.cc.
#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <mutex>
#include <thread>

#include "netfront/queue_conn.h"
#include "util/log.h"

namespace xpv {

namespace {
std::mutex g_reason_mu;
}  // namespace

QueueImpl::QueueImpl(uint32_t index) : index_(index), api_(this) {}

QueueImpl::~QueueImpl() {
  stop();
  if (conn_) (void)teardown();
  free_retired();
  // Pages the application still keeps stay mapped and granted: it may read
  // them after the device is gone, and release them later (into a table
  // that must still be there). Left to the process's end.
  uint32_t kept = 0;
  for (auto& r : retired_) {
    kept += r->loans->outstanding();
    (void)r->pool.release();
    (void)r->loans.release();
  }
  if (kept)
    log_warn("queue %u: closed while the application keeps %u received pages: left mapped", index_,
             kept);
}

void QueueImpl::free_retired() {
  std::erase_if(retired_, [](const std::unique_ptr<Retired>& r) {
    if (r->loans->outstanding()) return false;
    (void)r->pool->teardown();
    return true;
  });
}

Status QueueImpl::init() {
  auto ep = make_epoll();
  if (!ep) return ep.error();
  epfd_ = std::move(*ep);
  auto k = make_eventfd();
  if (!k) return k.error();
  kick_ = std::move(*k);
  return epoll_add(epfd_.get(), kick_.get());
}

std::string QueueImpl::broken_reason() const {
  std::lock_guard lk(g_reason_mu);
  return broken_reason_;
}

// ---------------------------------------------------------------------------
// Control path.

Status QueueImpl::setup(Platform& plat, GrantSharer& sharer, domid_t backend,
                        const QueueFeatures& f, int wake_fd) {
  if (conn_) return make_error(EBUSY, format("queue %u is already set up", index_));
  auto c = std::make_unique<Conn>();
  const bool split = f.split;
  c->self = plat.self_domid();
  c->backend = backend;
  c->split = f.split;
  c->sg = f.sg;
  c->tx_gso_types = f.tx_gso_types;
  c->rx_gso_types = f.rx_gso_types;
  if (f.rx_gso_types) c->rx_extra_types |= 1u << netif::kExtraTypeGso;
  if (f.rx_hash) c->rx_extra_types |= 1u << netif::kExtraTypeHash;
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
  auto rp = BufferPool::create(sharer, backend, f.rx_zero_copy ? kRxPoolSlotsMax : kRxPoolSlots,
                               /*writable=*/true);
  if (!rp) return rp.error();
  c->tx_pool = std::move(*tp);
  c->rx_pool = std::move(*rp);
  // kRxLendSlots pages may be kept at once: the ring always has its own.
  if (f.rx_zero_copy)
    c->rx_loans = std::make_unique<RxLoans>(*c->rx_pool, c->self, backend, kRxLendSlots);
  free_retired();

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
      ScopedFlag h(in_handler_);
      return handle_tx_responses();
    }));
    XPV_TRY(c->evt->add_port(c->rx_port, [this] {
      ScopedFlag h(in_handler_);
      return handle_rx_responses();
    }));
  } else {
    XPV_TRY(c->evt->add_port(c->tx_port, [this] {
      ScopedFlag h(in_handler_);
      return handle_responses();
    }));
  }
  XPV_TRY(epoll_add(epfd_.get(), c->evt->fd()));
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
  kick();  // a sleeper re-checks the new connection
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

QueueTeardown QueueImpl::teardown(bool platform_gone) {
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
  // Kept RX pages named by requests never answered: no longer held by them.
  for (uint32_t i = 0; i < kTxPoolSlots; ++i) {
    if (c.tx_slots[i].in_flight && c.tx_slots[i].rx_page)
      c.tx_rx_pages[i].loans->release(c.tx_rx_pages[i].slot);
  }
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
  if (c.rx_loans) {
    take_back_kept();
    t.rx_pages_kept = c.rx_loans->outstanding();
  }
  if (t.rx_pages_kept) {
    // Their memory and grants stay until the application lets go.
    log_info("queue %u: %u received pages still kept by the application: ended when released",
             index_, t.rx_pages_kept);
    auto r = std::make_unique<Retired>();
    r->pool = std::move(c.rx_pool);
    r->loans = std::move(c.rx_loans);
    retired_.push_back(std::move(r));
  } else {
    addp(c.rx_pool);
  }
  free_retired();
  if (t.pages.still_mapped && platform_gone) {
    log_info(
        "queue %u: %u of %u granted pages were still mapped by the backend when the platform "
        "connection was lost: they go with the platform's memory",
        index_, t.pages.still_mapped, t.pages.pages);
  } else if (t.pages.still_mapped) {
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
    local_failure("notifying the backend on port %u failed: %s", port, s.message().c_str());
    return;
  }
  count(kCounter_notifies);
}

void QueueImpl::protocol_violation(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  break_queue(kCounter_backend_errors, "backend protocol violation", fmt, ap);
  va_end(ap);
}

void QueueImpl::local_failure(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  break_queue(kCounter_local_errors, "local failure", fmt, ap);
  va_end(ap);
}

// Counts `why`; the first reason is the one the device reports. The control
// thread sees broken() through the wake-up and disconnects.
void QueueImpl::break_queue(QueueCounterId why, const char* what, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  count(why);
  if (broken_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lk(g_reason_mu);
    broken_reason_ = format("queue %u: %s", index_, buf);
  }
  broken_.store(true, std::memory_order_release);
  log_error("%s on queue %u: %s; disconnecting", what, index_, buf);
  if (wake_fd_ >= 0) eventfd_signal(wake_fd_);
}

// Event mode: runs the handlers of the ports that fired (late EOI).
uint32_t QueueImpl::process_events() {
  auto r = conn_->evt->process();
  sync_events();
  if (!r) {
    local_failure("event channel failed: %s", r.error().message.c_str());
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
    // Only the TX handler asks for deadline runs (wait_for_tx_notify()).
    count(kCounter_tx_notify_waits_expired, e->deadline_runs - seen.deadline_runs);
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
// event always comes (a kept rsp_event lies within what is in flight too).
// rsp_event never moves further ahead while the backend has not reached it
// (every response is consumed when this runs, so one 1..ahead-1 beyond the
// consumer is not reached): a push that passes it while we would store the
// new value may read the old one and notify, and the re-read after the fence
// would take its responses as below the new rsp_event and consume them,
// leaving that event nothing (a spurious event). While the handler waits for
// a notification (wait_for_tx_notify()), notifications stay off: the wait's
// end re-arms.
void QueueImpl::rearm_tx() {
  Conn& c = *conn_;
  if (c.tx_notify_wait) return;
  const uint32_t ahead = std::max<uint32_t>(1, c.tx_in_flight / 2);
  const uint32_t now = c.tx.response_event_ahead();
  if (now == 0 || now > ahead) c.tx.set_response_event(ahead);
  ring::full_fence();
}

// Event mode, TX: `waiting` responses are published and not consumed, below
// rsp_event (no event was raised for them). While more requests are
// outstanding, rsp_event moves past them, so that the backend's next push
// notifies and the event's handler reaps them all. A push that raced with
// that store may have notified or not (wait_for_tx_notify()). false (consume
// them now) when nothing else is outstanding: no event can come for them.
bool QueueImpl::leave_tx_for_next_push(uint32_t waiting) {
  Conn& c = *conn_;
  if (c.tx_in_flight <= waiting) return false;
  c.tx.set_response_event(waiting + 1);
  ring::full_fence();  // xen_mb: rsp_event before re-reading rsp_prod
  if (tx_rearm_hook_) [[unlikely]]
    tx_rearm_hook_(tx_rearm_hook_ctx_);
  const ring::Available again = c.tx.available_responses();
  if (again.overflow) return false;  // the handler names the violation
  if (again.count != waiting) wait_for_tx_notify();
  return true;
}

// Event mode, TX: a push passed rsp_event while we stored it. The backend
// stores rsp_prod, fences, loads rsp_event (RING_PUSH_RESPONSES_AND_CHECK_NOTIFY);
// we store rsp_event, fence, load rsp_prod: when our load sees its push, its
// load may have seen our store or the value before, which it had passed
// already. So it notified or not, and netif gives no way to tell which.
// Consumed now, its responses would leave such an event nothing to do (a
// spurious event); left for an event that never comes, they would wait for
// ever. So TX notifications stop (no other event can come meanwhile), and
// the handler runs again at that event or at a deadline, whichever is first
// (LateEoiChannel::run_by); either run consumes everything and re-arms.
void QueueImpl::wait_for_tx_notify() {
  Conn& c = *conn_;
  c.tx.set_response_event(kDisarmedDistance);
  c.tx_notify_wait = true;
  count(kCounter_tx_notify_waits);
  c.evt->run_by(c.tx_port, kTxNotifyWaitNs);
}

// The event handler: consumes every response of both rings.
bool QueueImpl::handle_responses() {
  bool tx = handle_tx_responses();
  bool rx = handle_rx_responses();
  return tx || rx;
}

// ---------------------------------------------------------------------------
// Polling, arming and modes (the data-path lock held by each entry point).

bool QueueImpl::poll() {
  if (!enter()) return false;
  bool work = false;
  if (!broken_.load(std::memory_order_relaxed)) {
    if (mode() == QueueMode::kPoll) {
      work = handle_responses();
    } else {
      take_kick();
      work = process_events() > 0;
    }
  }
  leave();
  return work;
}

// Before a sleep on event_fd(). In order:
//  1. events that fired while we polled are taken (handler, late EOI), so
//     the port is unmasked and the next event gives the sleeper a new edge
//     (DPDK's EAL watches the fd edge-triggered);
//  2. kRx (DPDK's rx interrupts): the TX responses waiting are reaped here,
//     by the handler, and TX notifications stay off: completions of what was
//     sent before never wake an idle queue. kRxAndTx: reaped here only when
//     no event can come for them. Those that reached rsp_event were notified
//     (the backend saw rsp_event before that push), and while more requests
//     are outstanding the next push can be made to notify
//     (leave_tx_for_next_push): reaped here, they would leave that event
//     nothing to do (a spurious event, the seeds' finding); they wake the
//     sleeper and its handler reaps them. Neither reaps while the handler
//     waits for a notification that may come (wait_for_tx_notify());
//  3. notifications are re-armed (RING_FINAL_CHECK_FOR_RESPONSES on RX; on
//     TX only for kRxAndTx), and a response that raced with the re-arm is
//     seen by the final check.
// Received packets waiting (or a response that raced) make the fd readable
// at once and the answer "do not sleep".
bool QueueImpl::arm(Queue::ArmFor what, bool take_events) {
  if (!enter()) return true;  // nothing to wait for until reconnected
  Conn& c = *conn_;
  mode_.store(QueueMode::kEvent, std::memory_order_relaxed);
  bool sleep = false;
  if (!broken_.load(std::memory_order_relaxed)) {
    take_kick();
    if (take_events) process_events();
    // Waiting for a notification (wait_for_tx_notify()): it, or the
    // deadline, wakes the sleeper and its handler reaps.
    bool reap = !c.tx_notify_wait;
    const ring::Available waiting = c.tx.available_responses();
    if (reap && what == Queue::ArmFor::kRxAndTx && waiting.count && !waiting.overflow) {
      reap = !c.tx.response_event_reached() && !leave_tx_for_next_push(waiting.count);
    }
    if (reap) {
      ScopedFlag h(in_handler_);
      handle_tx_responses();  // in event mode it re-arms TX as it finishes
    }
    if (what == Queue::ArmFor::kRx) c.tx.set_response_event(kDisarmedDistance);
    refill_rx(true);
    ring::Available f = c.rx.final_check_for_responses();
    sleep =
        !broken_.load(std::memory_order_relaxed) && !c.has_staged() && f.count == 0 && !f.overflow;
  }
  if (!sleep) kick();
  leave();
  return sleep;
}

// kPoll: takes any event that fired meanwhile first (its handler runs and
// stages what it finds; its port is unmasked), then moves the response
// events out of reach. kEvent: arms both rings.
void QueueImpl::set_mode(QueueMode m, bool take_events) {
  mode_.store(m, std::memory_order_relaxed);
  if (!enter()) return;
  if (!broken_.load(std::memory_order_relaxed)) {
    if (m == QueueMode::kPoll) {
      take_kick();
      if (take_events) process_events();
      disarm();
    } else {
      rearm_tx();
      (void)conn_->rx.final_check_for_responses();
    }
  }
  leave();
}

// ---------------------------------------------------------------------------
// Introspection.

Queue::RingState QueueImpl::ring_state() {
  Queue::RingState s;
  s.size = kRingSize;
  if (!enter()) return s;
  Conn& c = *conn_;
  if (!broken_.load(std::memory_order_relaxed)) {
    const ring::Available rx = c.rx.available_responses();
    const ring::Available tx = c.tx.available_responses();
    const uint32_t rx_unconsumed = c.rx.req_prod_pvt() - c.rx.rsp_cons();
    s.rx_done = (rx.overflow ? 0 : rx.count) + (c.frag_head - c.frag_tail);
    s.rx_posted = rx_unconsumed - (rx.overflow ? 0 : rx.count);
    s.tx_answered = tx.overflow ? 0 : tx.count;
    s.tx_in_flight = c.tx_in_flight - s.tx_answered;
  }
  leave();
  return s;
}

bool QueueImpl::rx_monitor(Queue::RxMonitor* out) {
  if (!enter()) return false;
  Conn& c = *conn_;
  const bool ok = !broken_.load(std::memory_order_relaxed);
  if (ok) {
    out->addr = &c.rx.header()->rsp_prod;
    // While received packets wait, no value of the producer may look idle:
    // the consumer index plus one more than the ring can hold is one the
    // producer cannot have (RING_RESPONSE_PROD_OVERFLOW otherwise).
    const bool waiting = c.has_staged() || c.rx.available_responses().count;
    out->idle_value = waiting ? c.rx.rsp_cons() + kRingSize + 1 : c.rx.rsp_cons();
  }
  leave();
  return ok;
}

uint32_t QueueImpl::rx_event_port() {
  if (!enter()) return 0;
  const uint32_t port = conn_->rx_port;
  leave();
  return port;
}

QueueImpl::PoolGrants QueueImpl::pool_grants() const {
  PoolGrants g;
  if (!conn_) return g;
  const BufferPool& tp = *conn_->tx_pool;
  const BufferPool& rp = *conn_->rx_pool;
  g.tx.assign(tp.refs(), tp.refs() + tp.size());
  g.rx.assign(rp.refs(), rp.refs() + rp.size());
  return g;
}

QueueImpl::Accounting QueueImpl::accounting() const {
  Accounting a;
  if (!conn_) return a;
  const Conn& c = *conn_;
  a.tx_pool_size = c.tx_pool->size();
  a.tx_pool_free = c.tx_pool->available();
  for (const TxSlot& s : c.tx_slots) {
    a.tx_slots_in_flight += s.in_flight;
    a.tx_slots_lent += s.lent && !s.in_flight;
    a.tx_extras_unanswered += s.in_flight ? s.extras : 0;
  }
  a.tx_extras_unanswered += c.tx_nulls_expected;
  a.tx_extras_counted = c.tx_extras_in_flight;
  a.tx_rx_pages_counted = c.tx_rx_pages_in_flight;
  a.tx_requests_unanswered = c.tx.req_prod_pvt() - c.tx.rsp_cons();
  a.rx_pool_size = c.rx_pool->size();
  a.rx_pool_free = c.rx_pool->available();
  a.rx_buffers_posted = c.rx.req_prod_pvt() - c.rx.rsp_cons();
  a.rx_buffers_held = c.frag_head - c.frag_tail;
  a.rx_buffers_kept = c.rx_loans ? c.rx_loans->out() : 0;
  for (const TxSlot& s : c.tx_slots)
    a.tx_slots_by_rx_grant += s.in_flight && s.rx_page;
  return a;
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
bool Queue::arm(ArmFor what) {
  return impl_->arm(what);
}
bool Queue::arm_for_level_wait(ArmFor what) {
  return impl_->arm(what, false);
}
int Queue::event_fd() const {
  return impl_->event_fd();
}
uint32_t Queue::rx_event_port() const {
  return impl_->rx_event_port();
}
void Queue::set_mode(QueueMode m) {
  impl_->set_mode(m);
}
void Queue::set_poll_mode_after_wait(bool fd_was_ready) {
  impl_->set_mode(QueueMode::kPoll, fd_was_ready);
}
uint32_t Queue::tx_done_cleanup(uint32_t max) {
  return impl_->tx_done_cleanup(max);
}
Queue::RingState Queue::ring_state() {
  return impl_->ring_state();
}
bool Queue::rx_monitor(RxMonitor* out) {
  return impl_->rx_monitor(out);
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
