// SPDX-License-Identifier: MIT
#include "grant/buffer_pool.h"

#include "util/log.h"

namespace xpv {

BufferPool::BufferPool(SharedPages pages, uint32_t size)
    : pages_(std::move(pages)), size_(size), free_(size), pos_(size), free_top_(size) {
  // Slot 0 is handed out first.
  for (uint32_t i = 0; i < size; ++i) {
    free_[i] = size - 1 - i;
    pos_[size - 1 - i] = i;
  }
}

Result<std::unique_ptr<BufferPool>> BufferPool::create(GrantSharer& sharer, domid_t backend,
                                                       uint32_t slots, bool writable) {
  if (slots == 0) return make_error(EINVAL, "a buffer pool needs at least one slot");
  auto pages = sharer.share(backend, slots, writable);
  if (!pages) {
    return make_error(pages.error().code, format("granting a %u-page buffer pool to domain %u: %s",
                                                 slots, backend, pages.error().message.c_str()));
  }
  return std::unique_ptr<BufferPool>(new BufferPool(std::move(*pages), slots));
}

BufferPool::~BufferPool() {
  if (!torn_down_) {
    PoolTeardownReport r = teardown();
    if (r.still_mapped) {
      log_warn(
          "buffer pool: %u of %u pages still mapped by domain %u at teardown: kept until "
          "it unmaps them",
          r.still_mapped, r.pages, pages_.domid());
    }
  }
}

PoolTeardownReport BufferPool::teardown() {
  PoolTeardownReport r;
  if (torn_down_) return r;
  torn_down_ = true;
  r.in_use = in_use();
  EndAccessReport e = pages_.end_access();
  r.pages = e.pages;
  r.returned = e.ended;
  r.still_mapped = e.still_mapped;
  r.unknown = e.unknown;
  // Nothing is handed out again; a slot handed back later is refused.
  free_top_ = 0;
  return r;
}

}  // namespace xpv
