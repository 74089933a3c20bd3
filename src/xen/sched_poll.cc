// SPDX-License-Identifier: MIT
// SCHEDOP_poll through privcmd: see sched_poll.h.
//
// xen-compat.h gives a guest that names no interface version the legacy one,
// in which xen.h's __HYPERVISOR_sched_op is sched_op_compat (6), which
// answers SCHEDOP_poll with ENOSYS: this file speaks the interface of Xen
// 4.14 and later (sched_op is 29, guest handles are structures). First, so
// that no header sees the legacy default before.
#define __XEN_INTERFACE_VERSION__ 0x00040e00

#include "xen/sched_poll.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <fstream>
#include <string>

// privcmd.h uses the kernel's __u64 without including its header.
#include <linux/types.h>
extern "C" {
#include <xen/event_channel.h>
#include <xen/sched.h>
#include <xen/xen.h>
#include <xen/sys/privcmd.h>
}

namespace xpv {
namespace {

static_assert(__HYPERVISOR_sched_op == 29, "xen.h: sched_op, not sched_op_compat");

constexpr const char* kPrivcmd = "/dev/xen/privcmd";
constexpr const char* kNohzFull = "/sys/devices/system/cpu/nohz_full";

// The CPUs that run without a periodic tick, or "" (Linux prints "(null)"
// or nothing when there are none, and has no file without NO_HZ_FULL).
std::string tickless_cpus() {
  std::ifstream f(kNohzFull);
  std::string s;
  if (!f || !std::getline(f, s)) return "";
  return s == "(null)" ? "" : s;
}

// The argument block of one SCHEDOP_poll. Xen reads it from guest memory
// during the call: it lives on the caller's stack, written just before.
struct PollArgs {
  sched_poll_t poll{};
  std::array<evtchn_port_t, SchedPoll::kMaxPorts> ports{};
};

}  // namespace

long SchedPoll::hypercall(std::span<const uint32_t> ports, uint64_t timeout_ns) {
  PollArgs a;
  for (size_t i = 0; i < ports.size(); ++i)
    a.ports[i] = ports[i];
  set_xen_guest_handle(a.poll.ports, a.ports.data());
  a.poll.nr_ports = static_cast<unsigned int>(ports.size());
  a.poll.timeout = timeout_ns;
  privcmd_hypercall_t h{};
  h.op = __HYPERVISOR_sched_op;
  h.arg[0] = SCHEDOP_poll;
  h.arg[1] = reinterpret_cast<uintptr_t>(&a.poll);
  // privcmd returns the hypercall's result; Xen's -errno comes back as -1
  // and errno.
  const int rc = ::ioctl(privcmd_.get(), IOCTL_PRIVCMD_HYPERCALL, &h);
  return rc < 0 ? -errno : rc;
}

Result<SchedPoll> SchedPoll::open() {
  const std::string tickless = tickless_cpus();
  if (!tickless.empty()) {
    return make_error(ENOTSUP,
                      format("waiting in Xen: CPUs %s run without a periodic tick (nohz_full), "
                             "which is what bounds a wait in Xen; wait in the kernel instead",
                             tickless.c_str()));
  }
  SchedPoll s;
  s.privcmd_.reset(::open(kPrivcmd, O_RDWR | O_CLOEXEC));
  if (!s.privcmd_.valid()) {
    const int e = errno;
    return make_error(e == ENOENT ? ENODEV : e,
                      format("waiting in Xen: %s is not usable (%s): a Xen guest with the "
                             "xen_privcmd module loaded is needed",
                             kPrivcmd, errno_string(e).c_str()));
  }
  // A wait that times out at once (an absolute time long past): proves
  // that privcmd passes the hypercall and that Xen knows SCHEDOP_poll.
  const long rc = s.hypercall({}, 1);
  if (rc == -EPERM || rc == -EACCES) {
    return make_error(EPERM,
                      format("waiting in Xen: the kernel refuses hypercalls through %s (%s): "
                             "in a domU Linux allows them only with xen_privcmd loaded with "
                             "unrestricted=1 (xpv-bind --prepare --privcmd-hypercalls)",
                             kPrivcmd, errno_string(static_cast<int>(-rc)).c_str()));
  }
  if (rc < 0) {
    return make_error(static_cast<int>(-rc),
                      format("waiting in Xen: SCHEDOP_poll through %s failed: %s", kPrivcmd,
                             errno_string(static_cast<int>(-rc)).c_str()));
  }
  return s;
}

int SchedPoll::wait(std::span<const uint32_t> ports) {
  if (ports.size() > kMaxPorts) return -EINVAL;
  return static_cast<int>(hypercall(ports, 0));
}

int SchedPoll::wait_for(std::span<const uint32_t> ports, std::span<struct pollfd> fds,
                        uint32_t timeout_us, Arrived arrived, void* ctx, WaitEnd* end) {
  static const struct timespec kNoWait = {0, 0};
  const uint64_t deadline = tick_clock_ns() + uint64_t{timeout_us} * 1000;
  for (;;) {
    if (const int rc = wait(ports); rc < 0) return rc;
    if (arrived(ctx, fds)) {
      *end = WaitEnd::kArrived;
      return 0;
    }
    if (::ppoll(fds.data(), fds.size(), &kNoWait, nullptr) > 0) {
      *end = WaitEnd::kFdReady;
      return 0;
    }
    if (tick_clock_ns() >= deadline) {
      *end = WaitEnd::kTimedOut;
      return 0;
    }
  }
}

}  // namespace xpv
