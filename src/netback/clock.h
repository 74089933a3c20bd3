// SPDX-License-Identifier: MIT
// The monotonic clock the data path reads (CLOCK_MONOTONIC, as timerfd and
// evtchn/late_eoi.h's SteadyClock).
#pragma once

#include <time.h>

#include <cstdint>

namespace xpv::netback {

inline uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Milliseconds from `now` until `due`, rounded up, for poll(); 0 when due.
inline int ms_until(uint64_t due, uint64_t now) {
  if (due <= now) return 0;
  const uint64_t ms = (due - now + 999'999) / 1'000'000;
  return ms > 3'600'000 ? 3'600'000 : static_cast<int>(ms);
}

}  // namespace xpv::netback
