// SPDX-License-Identifier: MIT
#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace xpv {
namespace {

LogLevel initial_level() {
  const char* e = std::getenv("XPV_LOG_LEVEL");
  if (e && *e >= '0' && *e <= '3' && e[1] == '\0') return static_cast<LogLevel>(*e - '0');
  return LogLevel::kInfo;
}

std::atomic<LogLevel> g_level{initial_level()};
std::mutex g_sink_mu;
LogSink g_sink;

}  // namespace

void set_log_level(LogLevel level) {
  g_level = level;
}
LogLevel log_level() {
  return g_level;
}

void set_log_sink(LogSink sink) {
  std::lock_guard lk(g_sink_mu);
  g_sink = std::move(sink);
}

void vlog(LogLevel level, const char* fmt, va_list ap) {
  if (level > g_level.load(std::memory_order_relaxed)) return;
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0) return;
  std::string_view msg(
      buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
  std::lock_guard lk(g_sink_mu);
  if (g_sink) {
    g_sink(level, msg);
    return;
  }
  static const char* const kNames[] = {"error", "warning", "info", "debug"};
  std::fprintf(stderr, "xpv: %s: %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(msg.size()), msg.data());
}

}  // namespace xpv
