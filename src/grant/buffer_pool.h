// SPDX-License-Identifier: MIT
// A pool of pages granted once to the backend and reused for the whole
// connection: the data path never performs a grant operation. A buffer is
// addressed by its slot id (0..size-1); each slot is one page with one grant
// reference. Allocation is a LIFO free list: O(1), no memory allocation.
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
  uint32_t available() const { return static_cast<uint32_t>(free_top_); }
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
  void free(uint32_t slot) { free_[free_top_++] = slot; }

  // Bulk forms for the data path: one update of the free list per burst.
  // alloc_bulk takes min(n, available()) slots into out and returns how many.
  uint32_t alloc_bulk(uint32_t* out, uint32_t n) {
    n = std::min<uint32_t>(n, static_cast<uint32_t>(free_top_));
    free_top_ -= n;
    std::memcpy(out, free_.data() + free_top_, size_t{n} * sizeof(uint32_t));
    return n;
  }
  void free_bulk(const uint32_t* slots, uint32_t n) {
    std::memcpy(free_.data() + free_top_, slots, size_t{n} * sizeof(uint32_t));
    free_top_ += n;
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
  SharedPages pages_;
  uint32_t size_;
  std::vector<uint32_t> free_;
  size_t free_top_;
  bool torn_down_ = false;
};

}  // namespace xpv
