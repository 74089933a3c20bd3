// SPDX-License-Identifier: MIT
// A pool of pages granted once to the backend and reused for the whole
// connection: the data path never performs a grant operation. A buffer is
// addressed by its slot id (0..size-1); each slot is one page with one grant
// reference. Allocation is a LIFO free list: O(1), no memory allocation.
//
// Teardown ends access to every page and accounts for each: returned to us,
// or still mapped by the backend (then kept, never freed under it).
#pragma once

#include <cstdint>
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

  // Takes a free slot; false when none is left.
  bool alloc(uint32_t* slot) {
    if (free_top_ == 0) return false;
    *slot = free_[--free_top_];
    return true;
  }
  void free(uint32_t slot) { free_[free_top_++] = slot; }

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
