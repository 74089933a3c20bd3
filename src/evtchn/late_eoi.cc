// SPDX-License-Identifier: MIT
#include "evtchn/late_eoi.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <algorithm>

#include "util/log.h"

namespace xpv {

Result<std::unique_ptr<LateEoiChannel>> LateEoiChannel::create(std::unique_ptr<EventChannel> ch,
                                                               const Clock& clock,
                                                               BackoffConfig cfg) {
  if (!ch) return make_error(EINVAL, "late EOI channel needs an event channel");
  if (cfg.base_delay_ns == 0 || cfg.max_delay_ns < cfg.base_delay_ns) {
    return make_error(EINVAL, "late EOI back-off: need 0 < base delay <= max delay");
  }
  std::unique_ptr<LateEoiChannel> c(new LateEoiChannel(std::move(ch), clock, cfg));
  c->ports_.reserve(kMaxPorts);  // PortState pointers stay valid
  c->fired_.reserve(kMaxPorts);
  auto ep = make_epoll();
  if (!ep) return ep.error();
  c->epfd_ = std::move(*ep);
  int tf = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tf < 0) return make_error(errno, "timerfd_create: " + errno_string(errno));
  c->timerfd_.reset(tf);
  XPV_TRY(epoll_add(c->epfd_.get(), c->ch_->fd()));
  XPV_TRY(epoll_add(c->epfd_.get(), tf));
  return c;
}

LateEoiChannel::~LateEoiChannel() = default;

LateEoiChannel::PortState* LateEoiChannel::find(evtchn_port_t port) {
  for (auto& p : ports_) {
    if (p.port == port) return &p;
  }
  return nullptr;
}

Status LateEoiChannel::add_port(evtchn_port_t port, Handler handler) {
  if (find(port)) return make_error(EEXIST, format("port %u already has a handler", port));
  if (ports_.size() >= kMaxPorts) {
    return make_error(ENOSPC, format("a late EOI channel serves at most %zu ports", kMaxPorts));
  }
  PortState p;
  p.port = port;
  p.handler = std::move(handler);
  ports_.push_back(std::move(p));
  return {};
}

void LateEoiChannel::remove_port(evtchn_port_t port) {
  bool timed = false;
  std::erase_if(ports_, [&](const PortState& p) {
    if (p.port != port) return false;
    timed = p.eoi_due_ns || p.run_due_ns;
    return true;
  });
  if (timed) arm_timer();  // its delayed EOI or deadline run went with it
}

void LateEoiChannel::run_by(evtchn_port_t port, uint64_t delay_ns) {
  PortState* p = find(port);
  if (!p) return;
  const uint64_t due = clock_.now_ns() + delay_ns;
  if (p->run_due_ns && p->run_due_ns <= due) return;  // an earlier one stands
  p->run_due_ns = due;
  arm_timer();
}

Status LateEoiChannel::eoi(PortState& p) {
  p.eoi_due_ns = 0;
  ++p.counters.unmasks;
  return ch_->unmask(p.port);
}

uint64_t LateEoiChannel::earliest_due() const {
  uint64_t due = 0;
  for (auto& p : ports_) {
    for (uint64_t t : {p.eoi_due_ns, p.run_due_ns}) {
      if (t && (!due || t < due)) due = t;
    }
  }
  return due;
}

void LateEoiChannel::arm_timer() {
  const uint64_t due = earliest_due();
  timer_due_ns_ = due;
  itimerspec its{};
  if (due) {
    // timerfd and SteadyClock share CLOCK_MONOTONIC. A due time of zero
    // would disarm, so use at least 1 ns.
    its.it_value.tv_sec = static_cast<time_t>(due / 1'000'000'000);
    its.it_value.tv_nsec = static_cast<long>(due % 1'000'000'000);
    if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
  }
  ::timerfd_settime(timerfd_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

Result<uint32_t> LateEoiChannel::process() {
  bool timer_changed = false;
  // Delayed EOIs and deadline runs that are due. Only while one waits: with
  // none, the timer is disarmed, and neither it nor the clock is worth a
  // system call (a PV guest's clock_gettime is one: its vDSO cannot read
  // Xen's clock).
  PortState* due_runs[kMaxPorts];
  size_t ndue = 0;
  if (timer_due_ns_) {
    uint64_t expirations = 0;
    (void)!::read(timerfd_.get(), &expirations, sizeof expirations);
    const uint64_t now = clock_.now_ns();
    for (auto& p : ports_) {
      if (p.eoi_due_ns && now >= p.eoi_due_ns) {
        XPV_TRY(eoi(p));
        timer_changed = true;
      }
      if (p.run_due_ns && now >= p.run_due_ns) {
        p.run_due_ns = 0;
        due_runs[ndue++] = &p;
        timer_changed = true;
      }
    }
  }
  // Take every fired port first. Each arrives masked, so none can fire
  // again before its EOI: a peer that notifies from inside our handler is
  // served on the next call, never in an endless loop here. One look takes
  // them all; only a full batch (ports being torn down among them) needs
  // another.
  fired_.clear();
  for (;;) {
    evtchn_port_t got[kMaxPorts];
    auto n = ch_->take_pending(got);
    if (!n) return n.error();
    for (size_t i = 0; i < *n; ++i) {
      PortState* p = find(got[i]);
      if (!p) {
        // Not one of ours (a port being torn down): acknowledge and move on.
        (void)ch_->unmask(got[i]);
        continue;
      }
      fired_.push_back(p);
    }
    if (*n < kMaxPorts) break;
  }
  uint32_t runs = 0;
  for (PortState* p : fired_) {
    ++p->counters.events;
    ++runs;
    if (p->run_due_ns) {  // the event came: its handler runs now, not at the deadline
      p->run_due_ns = 0;
      timer_changed = true;
    }
    const bool work = p->handler();  // the port is still masked here
    if (work) {
      p->spurious_run = 0;
      XPV_TRY(eoi(*p));
      continue;
    }
    ++p->counters.spurious;
    if (p->spurious_run < 64) ++p->spurious_run;
    if (p->spurious_run <= cfg_.threshold) {
      XPV_TRY(eoi(*p));
      continue;
    }
    // Back-off: base << (run - threshold - 1), at most max.
    const uint32_t shift = p->spurious_run - cfg_.threshold - 1;
    uint64_t delay = shift >= 40 ? cfg_.max_delay_ns : cfg_.base_delay_ns << shift;
    delay = std::min(delay, cfg_.max_delay_ns);
    p->eoi_due_ns = clock_.now_ns() + delay;
    ++p->counters.delayed_eois;
    timer_changed = true;
  }
  // Deadline runs of ports whose event did not come in time (a port that
  // fired has just run its handler).
  for (size_t i = 0; i < ndue; ++i) {
    PortState* p = due_runs[i];
    if (std::find(fired_.begin(), fired_.end(), p) != fired_.end()) continue;
    ++p->counters.deadline_runs;
    (void)p->handler();  // the port is not masked by us: no EOI to give
  }
  if (timer_changed) arm_timer();
  return runs;
}

int LateEoiChannel::next_timeout_ms() const {
  const uint64_t due = earliest_due();
  if (!due) return -1;
  uint64_t now = clock_.now_ns();
  if (due <= now) return 0;
  return static_cast<int>(std::min<uint64_t>((due - now + 999'999) / 1'000'000, 1'000'000));
}

const EventCounters* LateEoiChannel::counters(evtchn_port_t port) const {
  for (auto& p : ports_) {
    if (p.port == port) return &p.counters;
  }
  return nullptr;
}

bool LateEoiChannel::eoi_delayed(evtchn_port_t port) const {
  for (auto& p : ports_) {
    if (p.port == port) return p.eoi_due_ns != 0;
  }
  return false;
}

}  // namespace xpv
