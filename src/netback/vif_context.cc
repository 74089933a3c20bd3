// SPDX-License-Identifier: MIT
#include "netback/vif_context.h"

#include <cstdio>

#include "util/fd.h"
#include "util/log.h"

namespace xpv::netback {

bool VifContext::report_fatal(const char* fmt, ...) {
  disabled.store(true, std::memory_order_release);
  int expected = 0;
  if (!fatal_state.compare_exchange_strong(expected, 1)) return false;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(fatal_reason, sizeof fatal_reason, fmt, ap);
  va_end(ap);
  fatal_state.store(2, std::memory_order_release);
  // Linux: netdev_err(<reason>) then "fatal error; disabling device".
  log_error("%s: %s", name.c_str(), fatal_reason);
  log_error("%s: fatal error; disabling device", name.c_str());
  wake_control();
  return true;
}

void VifContext::wake_control() const {
  eventfd_signal(control_wake_fd);
}

}  // namespace xpv::netback
