// SPDX-License-Identifier: MIT
// Static grants (static_grants.h).
#include "netback/static_grants.h"

#include <poll.h>

#include <bit>
#include <chrono>
#include <thread>

#include "util/fd.h"

namespace xpv::netback {

GrefTable::GrefTable(const std::map<grant_ref_t, Page>& pages) {
  if (pages.empty()) return;
  const uint32_t cap = std::bit_ceil(static_cast<uint32_t>(pages.size()) * 2);
  slots_.resize(cap);
  mask_ = cap - 1;
  for (const auto& [ref, page] : pages) {
    uint32_t i = hash(ref) & mask_;
    while (slots_[i].used)
      i = (i + 1) & mask_;
    slots_[i] = Slot{true, ref, page};
    ++count_;
  }
}

uint64_t StaticGrants::publish(std::shared_ptr<const GrefTable> t) {
  std::lock_guard lk(mu_);
  current_ = std::move(t);
  const uint64_t g = gen_.load(std::memory_order_relaxed) + 1;
  gen_.store(g, std::memory_order_release);
  return g;
}

bool StaticGrants::wait_acknowledged(uint64_t g, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (wake_fd_ >= 0) eventfd_signal(wake_fd_);
  while (acked_.load(std::memory_order_acquire) < g) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

uint64_t GrefRegistry::publish(uint32_t queue) {
  std::map<grant_ref_t, GrefTable::Page> pages;
  for (const auto& [ref, m] : pages_[queue])
    pages.emplace(ref, GrefTable::Page{m.map.data(), m.writable});
  return queues_[queue]->publish(std::make_shared<const GrefTable>(pages));
}

bool GrefRegistry::add(uint32_t queue, std::span<const grant_ref_t> refs,
                       std::span<const bool> readonly) {
  auto& table = pages_[queue];
  if (table.size() + refs.size() > kMaxStaticGrantsPerQueue) return false;
  std::map<grant_ref_t, Mapped> added;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (table.count(refs[i]) || added.count(refs[i])) return false;  // none stays mapped
    auto m = mapper_.map(domid_, refs[i], !readonly[i]);
    if (!m) return false;
    added.emplace(refs[i], Mapped{std::move(*m), !readonly[i]});
  }
  table.merge(added);
  publish(queue);
  return true;
}

uint32_t GrefRegistry::del(uint32_t queue, std::span<const grant_ref_t> refs,
                           std::span<bool> found) {
  auto& table = pages_[queue];
  std::vector<GrantMapping> removed;
  for (size_t i = 0; i < refs.size(); ++i) {
    auto it = table.find(refs[i]);
    found[i] = it != table.end();
    if (!found[i]) continue;
    removed.push_back(std::move(it->second.map));
    table.erase(it);
  }
  if (removed.empty()) return 0;
  const uint64_t g = publish(queue);
  const uint32_t n = static_cast<uint32_t>(removed.size());
  // The worker may be copying from these pages until it takes the new
  // table: unmapped here once it did, else with the registry.
  if (!queues_[queue]->wait_acknowledged(g, 1000)) {
    for (auto& m : removed)
      retired_.push_back(std::move(m));
  }
  return n;
}

}  // namespace xpv::netback
