// SPDX-License-Identifier: MIT
// Static grants (netif.h "Static Grants", ADD/DEL_GREF_MAPPING): pages the
// frontend registers once through the control ring, kept mapped by the
// backend, so that requests naming them are served with memcpy instead of a
// grant copy per request. Linux netback answers NOT_SUPPORTED; this is ours.
//
// One StaticGrants per queue (netif.h: the messages name a queue). The
// control ring's thread owns the mappings (GrefRegistry) and publishes, on
// every change, an immutable table gref -> mapped page (GrefTable). The
// queue's worker takes the newest table at the start of each batch
// (acquire()) and acknowledges it; a page removed by DEL_GREF_MAPPING is
// unmapped only once the worker has acknowledged a table without it (the
// control thread wakes the worker and waits), or at disconnect, after the
// workers have stopped. The per-packet path reads one atomic per batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "xpv/platform.h"

namespace xpv::netback {

// Registered grants per queue (GET_GREF_MAPPING_SIZE).
inline constexpr uint32_t kMaxStaticGrantsPerQueue = 4096;

// gref -> page, open addressing; immutable once built.
class GrefTable {
 public:
  struct Page {
    uint8_t* data;
    bool writable;
  };
  explicit GrefTable(const std::map<grant_ref_t, Page>& pages);
  // The page of `ref`, or nullptr.
  const Page* find(grant_ref_t ref) const {
    if (mask_ == 0) return nullptr;
    for (uint32_t i = hash(ref) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.ref == ref) return &s.page;
    }
  }
  uint32_t size() const { return count_; }

 private:
  struct Slot {
    bool used = false;
    grant_ref_t ref = 0;
    Page page{nullptr, false};
  };
  static uint32_t hash(grant_ref_t r) { return r * 0x9E3779B1u >> 7; }
  std::vector<Slot> slots_;
  uint32_t mask_ = 0;
  uint32_t count_ = 0;
};

class StaticGrants {
 public:
  // ---- the queue's worker ----
  // The newest table (nullptr: none registered), acknowledged.
  const GrefTable* acquire() {
    const uint64_t g = gen_.load(std::memory_order_acquire);
    if (g != mine_gen_) {
      std::lock_guard lk(mu_);
      mine_ = current_;
      mine_gen_ = gen_.load(std::memory_order_relaxed);
    }
    if (acked_.load(std::memory_order_relaxed) != mine_gen_) {
      acked_.store(mine_gen_, std::memory_order_release);
    }
    return mine_.get();
  }
  // The eventfd that wakes the worker (set before it starts).
  void set_wake_fd(int fd) { wake_fd_ = fd; }

  // ---- the control ring's thread ----
  // Publishes `t`; returns its generation.
  uint64_t publish(std::shared_ptr<const GrefTable> t);
  // Wakes the worker and waits until it acknowledged generation `g`
  // (false after `timeout_ms`: the worker is not running).
  bool wait_acknowledged(uint64_t g, int timeout_ms);

 private:
  std::mutex mu_;
  std::shared_ptr<const GrefTable> current_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<uint64_t> acked_{0};
  int wake_fd_ = -1;
  // The worker's.
  std::shared_ptr<const GrefTable> mine_;
  uint64_t mine_gen_ = 0;
};

// The control thread's side: the mappings of every queue of a connection.
// Destroyed (everything unmapped) after the workers stopped.
class GrefRegistry {
 public:
  GrefRegistry(GrantMapper& mapper, domid_t domid, std::vector<StaticGrants*> queues)
      : mapper_(mapper), domid_(domid), queues_(std::move(queues)) {}
  uint32_t queues() const { return static_cast<uint32_t>(queues_.size()); }
  uint32_t registered(uint32_t queue) const { return static_cast<uint32_t>(pages_[queue].size()); }

  // ADD_GREF_MAPPING: maps all of `refs` (read-only where flagged) or none.
  // False: a ref already registered or listed twice, the limit, a failed map.
  bool add(uint32_t queue, std::span<const grant_ref_t> refs, std::span<const bool> readonly);
  // DEL_GREF_MAPPING: removes each registered ref (found[i] says which),
  // unmaps them once the worker let go; returns how many were removed.
  uint32_t del(uint32_t queue, std::span<const grant_ref_t> refs, std::span<bool> found);

 private:
  struct Mapped {
    GrantMapping map;
    bool writable;
  };
  uint64_t publish(uint32_t queue);  // returns the table's generation

  GrantMapper& mapper_;
  const domid_t domid_;
  std::vector<StaticGrants*> queues_;
  std::vector<std::map<grant_ref_t, Mapped>> pages_ =
      std::vector<std::map<grant_ref_t, Mapped>>(queues_.size());
  // Removed while a worker did not acknowledge: unmapped with the registry.
  std::vector<GrantMapping> retired_;
};

}  // namespace xpv::netback
