// SPDX-License-Identifier: MIT
// A pool of pages granted once to the backend and reused for the whole
// connection: the data path never performs a grant operation. A buffer is
// addressed by its slot id (0..size-1); each slot is one page with one grant
// reference. Allocation is a LIFO free list: O(1), no memory allocation.
//
// A slot handed back while it is free already (or one that is not a slot of
// this pool) is refused and counted (double_frees()): were it pushed, two
// later allocations would share one page, one packet overwriting another.
// The free list is a sparse set: each slot remembers where it was last put
// on the list (pos_), and it is free exactly when that position is below the
// top and holds it. Allocation stays a pop (a popped slot's position is at
// or above the top); handing back costs two loads and compares per slot.
//
// Teardown ends access to every page and accounts for each: returned to us,
// or still mapped by the backend (then kept, never freed under it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "xpv/platform.h"

// Sanitizer builds audit every hand-back, also free_bulk_owned()'s.
#if defined(__SANITIZE_ADDRESS__)
#define XPV_POOL_AUDIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XPV_POOL_AUDIT 1
#endif
#endif
#ifndef XPV_POOL_AUDIT
#define XPV_POOL_AUDIT 0
#endif

namespace xpv {

struct PoolTeardownReport {
  uint32_t pages = 0;
  uint32_t returned = 0;      // access ended, page freed
  uint32_t still_mapped = 0;  // the backend still maps it: kept until it lets go
  uint32_t in_use = 0;        // slots that were allocated at teardown
  bool unknown = false;       // the platform cannot tell (xen: the kernel defers)
};

class BufferPool {
 public:
  // Shares `slots` pages with `backend`; writable says whether the backend
  // may write them (RX buffers) or only read them (TX buffers).
  static Result<std::unique_ptr<BufferPool>> create(GrantSharer& sharer, domid_t backend,
                                                    uint32_t slots, bool writable);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  uint32_t size() const { return size_; }
  uint32_t available() const { return free_top_; }
  uint32_t in_use() const { return size_ - available(); }
  bool writable() const { return pages_.writable(); }

  uint8_t* data(uint32_t slot) const { return pages_.page(slot); }
  grant_ref_t ref(uint32_t slot) const { return pages_.ref(slot); }
  // The grant refs of all slots, indexed by slot (for burst loops).
  const grant_ref_t* refs() const { return pages_.refs().data(); }

  // Takes a free slot; false when none is left.
  bool alloc(uint32_t* slot) {
    if (free_top_ == 0) return false;
    *slot = free_[--free_top_];
    return true;
  }
  // Hands a slot back; refused (and counted) when it is free already or
  // not a slot of this pool.
  void free(uint32_t slot) {
    if (torn_down_) [[unlikely]] {
      ++double_frees_;  // nothing is handed out after teardown: refused
      return;
    }
    uint32_t top = free_top_;
    if (!take_back(slot, free_.data(), pos_.data(), top)) [[unlikely]]
      ++double_frees_;
    free_top_ = top;
  }

  // Bulk forms for the data path: one update of the free list per burst.
  // alloc_bulk takes min(n, available()) slots into out and returns how many.
  uint32_t alloc_bulk(uint32_t* out, uint32_t n) {
    n = std::min<uint32_t>(n, free_top_);
    free_top_ -= n;
    std::memcpy(out, free_.data() + free_top_, size_t{n} * sizeof(uint32_t));
    return n;
  }
  // Every slot checked as free() checks it; the refused ones are skipped.
  // The members live in locals: the stores could alias them otherwise.
  void free_bulk(const uint32_t* slots, uint32_t n) {
    if (torn_down_) [[unlikely]] {
      double_frees_ += n;
      return;
    }
    uint32_t* const list = free_.data();
    uint32_t* const pos = pos_.data();
    uint32_t top = free_top_;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < n; ++i)
      refused += !take_back(slots[i], list, pos, top);
    free_top_ = top;
    if (refused) [[unlikely]]
      double_frees_ += refused;
  }
  // For a caller whose own per-slot state already proves that each slot is
  // its to hand back (the TX handler's in-flight table, the RX ring index a
  // buffer was posted at): the same push without testing the same fact a
  // second time per packet. The sanitizer builds (the ASan unit tests, the
  // fuzz target, whose leak oracle also adds the pool up) check and count.
  void free_bulk_owned(const uint32_t* slots, uint32_t n) {
#if XPV_POOL_AUDIT
    free_bulk(slots, n);
#else
    // Their positions (pos_) are left stale: that can only hide a later
    // double hand-back of one of them from the check, never refuse a
    // rightful one (a slot not on the list is never at its stale position).
    std::memcpy(free_.data() + free_top_, slots, size_t{n} * sizeof(uint32_t));
    free_top_ += n;
#endif
  }
  // Slots refused by free()/free_bulk(): handed back while free already, or
  // not slots of this pool. Always a bug of the caller; never 0 in the pool.
  uint64_t double_frees() const {
    return double_frees_;
  }

  // Whether p points into this pool; gives its slot and offset (zero-copy TX
  // of a buffer that already lives in granted memory).
  bool locate(const void* p, uint32_t* slot, uint32_t* offset) const {
    const uint8_t* b = pages_.data();
    const uint8_t* q = static_cast<const uint8_t*>(p);
    if (q < b || q >= b + pages_.bytes()) return false;
    size_t d = static_cast<size_t>(q - b);
    *slot = static_cast<uint32_t>(d / kPageSize);
    *offset = static_cast<uint32_t>(d % kPageSize);
    return true;
  }

  // Ends access to every page; afterwards the pool is empty.
  PoolTeardownReport teardown();

 private:
  BufferPool(SharedPages pages, uint32_t size);
  // Pushes `slot` on the free list unless it is on it already or out of
  // range (the unsigned compare also refuses what no slot id can be).
  bool take_back(uint32_t slot, uint32_t* list, uint32_t* pos, uint32_t& top) const {
    if (slot >= size_) [[unlikely]]
      return false;
    const uint32_t p = pos[slot];
    if (p < top && list[p] == slot) [[unlikely]]
      return false;
    list[top] = slot;
    pos[slot] = top++;
    return true;
  }

  SharedPages pages_;
  uint32_t size_;
  std::vector<uint32_t> free_;  // the free list, a stack of slot ids
  std::vector<uint32_t> pos_;   // per slot: where it was last put in free_
  uint32_t free_top_;           // entries of free_ in use
  uint64_t double_frees_ = 0;
  bool torn_down_ = false;
};

}  // namespace xpv
