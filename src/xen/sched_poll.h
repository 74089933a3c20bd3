// SPDX-License-Identifier: MIT
// Waiting for event channels in Xen instead of in the guest kernel.
//
// A thread that waits in the guest kernel (poll on the event channel
// device) pays a context switch to the idle task and back at every wake-up:
// about 90 us in a PV domU under QEMU, against 14 us on its host
// (docs/measurements.md, run AM). SCHEDOP_poll (sched.h: "Poll a set of
// event-channel ports. Return when one or more are pending.") blocks the
// calling vCPU itself, and the thread goes on where it stopped.
//
// The hypercall goes through privcmd (/dev/xen/privcmd, privcmd.h's
// IOCTL_PRIVCMD_HYPERCALL). Linux refuses privcmd hypercalls in a domU
// unless xen_privcmd is loaded with unrestricted=1 (xpv-bind --prepare
// --privcmd-hypercalls does that).
//
// What the caller must know:
//  - Xen wakes the vCPU for any event sent to it, not only for the ports
//    polled (an IPI, a device, the guest kernel's timer): a return says
//    "look again", not "one of the ports fired".
//  - No timeout is set: the guest kernel's periodic tick, which runs while
//    the thread is inside the hypercall (to the kernel the CPU is busy),
//    ends a wait within one tick. open() refuses where CPUs run without
//    that tick (nohz_full), since a wait there could last until a packet.
//  - Other threads of the guest that share the vCPU run only at those
//    returns: this is for a thread that has its vCPU to itself (a DPDK
//    lcore).
#pragma once

#include <poll.h>
#include <time.h>

#include <cstdint>
#include <span>

#include "util/fd.h"
#include "xpv/result.h"

namespace xpv {

class SchedPoll {
 public:
  /// The most ports one wait polls (sched.h: Xen refuses more than 128).
  static constexpr uint32_t kMaxPorts = 16;

  /// Opens privcmd and proves the hypercall works with a wait that times
  /// out at once. Fails with a sentence naming the cause: no privcmd
  /// device, Linux's domU restriction, a hypervisor without SCHEDOP_poll,
  /// CPUs without a periodic tick.
  static Result<SchedPoll> open();

  /// Blocks the calling vCPU until one of `ports` (local event channel
  /// ports of this domain, at most kMaxPorts) is pending or any other event
  /// reaches the vCPU. Returns at once when one is pending already.
  /// 0, or -errno (no allocation: a data-path thread calls it).
  int wait(std::span<const uint32_t> ports);

  /// Why wait_for() returned.
  enum class WaitEnd {
    kArrived,   ///< arrived() said so
    kFdReady,   ///< one of the fds is readable (ppoll's revents set)
    kTimedOut,  ///< timeout_us passed (by tick_clock_ns())
  };
  /// What wait_for() asks first at each return: whether the work waited for
  /// is there, by a look at memory (a ring's producer index), with no system
  /// call. It may set revents of `fds` as ppoll would, for the caller.
  using Arrived = bool (*)(void* ctx, std::span<struct pollfd> fds);

  /// A wait of an idle thread: wait() on `ports` until work came or
  /// `timeout_us` passed. A return from Xen says only "look again", and
  /// each look costs a PV domU some 23 us a system call under QEMU
  /// (docs/measurements.md, run AM), so each asks, cheapest first:
  ///  1. arrived(ctx, fds): the usual end, which then costs the hypercall
  ///     alone;
  ///  2. whether one of `fds` is readable (a ppoll that does not wait): an
  ///     event that brought arrived() nothing, a timer of the caller's;
  ///  3. tick_clock_ns() against the deadline (no system call).
  /// 0 with *end set, or -errno of a failed hypercall (no allocation).
  int wait_for(std::span<const uint32_t> ports, std::span<struct pollfd> fds, uint32_t timeout_us,
               Arrived arrived, void* ctx, WaitEnd* end);

  /// The clock for a deadline of such waits: CLOCK_MONOTONIC_COARSE, in
  /// ns. It moves at the guest kernel's tick, which also ends each wait,
  /// and the vDSO reads it from memory. CLOCK_MONOTONIC would be a system
  /// call in a PV domU (its vDSO cannot read Xen's clock): a trip through
  /// Xen at every return, as dear as the wait itself.
  static uint64_t tick_clock_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  }

  SchedPoll(SchedPoll&&) = default;
  SchedPoll& operator=(SchedPoll&&) = default;

 private:
  SchedPoll() = default;
  // One SCHEDOP_poll of `ports`; timeout_ns is absolute Xen system time
  // (sched.h), 0 for none. Returns the hypercall's result (-errno on error).
  long hypercall(std::span<const uint32_t> ports, uint64_t timeout_ns);

  UniqueFd privcmd_;
};

}  // namespace xpv
