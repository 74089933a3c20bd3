// SPDX-License-Identifier: MIT
// Library logging: printf-style, to stderr by default. An application (the
// DPDK driver, say) can route messages to its own logger with set_log_sink.
#pragma once

#include <cstdarg>

#include "xpv/log.h"

namespace xpv {

void vlog(LogLevel level, const char* fmt, va_list ap);

[[gnu::format(printf, 1, 2)]] inline void log_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(LogLevel::kError, fmt, ap);
  va_end(ap);
}
[[gnu::format(printf, 1, 2)]] inline void log_warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(LogLevel::kWarning, fmt, ap);
  va_end(ap);
}
[[gnu::format(printf, 1, 2)]] inline void log_info(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(LogLevel::kInfo, fmt, ap);
  va_end(ap);
}
[[gnu::format(printf, 1, 2)]] inline void log_debug(const char* fmt, ...) {
  if (log_level() < LogLevel::kDebug) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(LogLevel::kDebug, fmt, ap);
  va_end(ap);
}

}  // namespace xpv
