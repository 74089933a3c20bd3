// SPDX-License-Identifier: MIT
#include "netback/vif_context.h"

#include <algorithm>
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

bool VifContext::mcast_add(const uint8_t* addr) {
  std::lock_guard lk(mcast_mu_);
  if (mcast_count_ == kMcastMax) {
    log_warn("%s: Too many multicast addresses", name.c_str());
    return false;
  }
  std::copy(addr, addr + 6, mcast_[mcast_count_++].begin());
  return true;
}

void VifContext::mcast_del(const uint8_t* addr) {
  std::lock_guard lk(mcast_mu_);
  for (uint32_t i = 0; i < mcast_count_; ++i) {
    if (std::equal(addr, addr + 6, mcast_[i].begin())) {
      mcast_[i] = mcast_[--mcast_count_];  // the first match goes, as in Linux
      return;
    }
  }
}

bool VifContext::mcast_match(const uint8_t* addr) const {
  std::lock_guard lk(mcast_mu_);
  for (uint32_t i = 0; i < mcast_count_; ++i) {
    if (std::equal(addr, addr + 6, mcast_[i].begin())) return true;
  }
  return false;
}

void VifContext::mcast_clear() {
  std::lock_guard lk(mcast_mu_);
  mcast_count_ = 0;
}

}  // namespace xpv::netback
