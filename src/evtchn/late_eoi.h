// SPDX-License-Identifier: MIT
// Event channels with late-EOI semantics.
//
// A fired port arrives masked (the evtchn device masks it on delivery). We
// run the port's handler, and only then unmask it: the "end of interrupt" is
// late, so the peer cannot make us re-enter the handler while it runs, and
// every event is accounted for. The handler says whether it found work; an
// event that found none is spurious. A run of spurious events delays the next
// unmask with a bounded exponential back-off (reset by the first useful
// event), so an event storm from a broken or hostile peer costs a bounded
// number of wake-ups per second instead of a core. This is the user-space
// counterpart of Linux's xen_irq_lateeoi() with XEN_EOI_FLAG_SPURIOUS.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "util/fd.h"
#include "xpv/counters.h"
#include "xpv/platform.h"

namespace xpv {

// Time source for the back-off (tests inject a deterministic one).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const = 0;
};
class SteadyClock final : public Clock {
 public:
  uint64_t now_ns() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  static SteadyClock& instance() {
    static SteadyClock c;
    return c;
  }
};

struct BackoffConfig {
  // Spurious events in a row that are still EOIed at once.
  uint32_t threshold = 1;
  // Delay of the first delayed EOI; doubles with each further spurious event.
  uint64_t base_delay_ns = 1'000'000;     // 1 ms
  uint64_t max_delay_ns = 1'000'000'000;  // 1 s
};

class LateEoiChannel {
 public:
  // Returns true when the handler found work.
  using Handler = std::function<bool()>;

  static Result<std::unique_ptr<LateEoiChannel>> create(
      std::unique_ptr<EventChannel> ch, const Clock& clock = SteadyClock::instance(),
      BackoffConfig cfg = {});
  ~LateEoiChannel();
  LateEoiChannel(const LateEoiChannel&) = delete;
  LateEoiChannel& operator=(const LateEoiChannel&) = delete;

  EventChannel& channel() { return *ch_; }

  // Registers a bound port of this handle and its handler.
  Status add_port(evtchn_port_t port, Handler handler);
  void remove_port(evtchn_port_t port);

  // Runs the port's handler within `delay_ns` whether or not the port fires:
  // for a handler that left work to an event that may or may not come. An
  // event before then runs the handler as usual and cancels this run; a run
  // at the deadline is not an event (counted as a deadline run, never as
  // spurious) and its handler's answer changes nothing.
  void run_by(evtchn_port_t port, uint64_t delay_ns);

  // Readable when an event is pending, a delayed EOI or a deadline run is due.
  int fd() const { return epfd_.get(); }

  // Performs due delayed EOIs, then takes every pending event: handler, then
  // EOI (now, or delayed when the handler found nothing too often). Returns
  // the number of handler runs.
  Result<uint32_t> process();

  // Milliseconds until the earliest delayed EOI or deadline run, or -1 when
  // none is waiting.
  int next_timeout_ms() const;

  // Counters of one port (events, spurious events, delayed EOIs, unmasks).
  const EventCounters* counters(evtchn_port_t port) const;
  // Whether the port is waiting for a delayed EOI.
  bool eoi_delayed(evtchn_port_t port) const;

 private:
  struct PortState {
    evtchn_port_t port = 0;
    Handler handler;
    EventCounters counters;
    uint32_t spurious_run = 0;
    uint64_t eoi_due_ns = 0;  // 0: not delayed
    uint64_t run_due_ns = 0;  // run_by()'s deadline; 0: none
  };
  LateEoiChannel(std::unique_ptr<EventChannel> ch, const Clock& clock, BackoffConfig cfg)
      : ch_(std::move(ch)), clock_(clock), cfg_(cfg) {}
  PortState* find(evtchn_port_t port);
  Status eoi(PortState& p);
  void arm_timer();
  uint64_t earliest_due() const;

  std::unique_ptr<EventChannel> ch_;
  const Clock& clock_;
  BackoffConfig cfg_;
  UniqueFd epfd_;
  UniqueFd timerfd_;
  uint64_t timer_due_ns_ = 0;  // when timerfd_ fires; 0: disarmed
  static constexpr size_t kMaxPorts = 16;
  std::vector<PortState> ports_;
  std::vector<PortState*> fired_;
};

}  // namespace xpv
