// SPDX-License-Identifier: MIT
#include "netfront/rx_loans.h"

namespace xpv {

RxLoans::RxLoans(const BufferPool& pool, domid_t granter, domid_t backend, uint32_t max_out)
    : base_(pool.data(0)),
      slots_(pool.size()),
      refs_(pool.refs()),
      granter_(granter),
      backend_(backend),
      max_out_(max_out),
      count_(std::make_unique<std::atomic<uint32_t>[]>(pool.size())),
      returned_(std::make_unique<std::atomic<uint64_t>[]>((pool.size() + 63) / 64)),
      areas_(std::make_unique<Area[]>(pool.size())) {}

void RxLoans::release(uint32_t slot) {
  if (count_[slot].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The last holder: mark it for the data path (release: what the holders
  // did with the page comes before the refill that takes it), then say one
  // page fewer is out (after the mark, so that outstanding() == 0 means
  // every page is marked).
  returned_[slot / 64].fetch_or(uint64_t{1} << (slot % 64), std::memory_order_release);
  outstanding_.fetch_sub(1, std::memory_order_release);
}

uint32_t RxLoans::take_returned(uint32_t* out) {
  uint32_t n = 0;
  for (uint32_t w = 0; w < (slots_ + 63) / 64; ++w) {
    if (returned_[w].load(std::memory_order_relaxed) == 0) continue;
    uint64_t bits = returned_[w].exchange(0, std::memory_order_acquire);
    while (bits) {
      out[n++] = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
    }
  }
  out_ -= n;
  return n;
}

}  // namespace xpv

// The public face (xpv/netfront.h): the application's side of a kept page.
namespace xpv {

void* rx_loan_area(RxLoans* loans, const void* page) {
  uint32_t slot = 0, off = 0;
  return loans->locate(page, &slot, &off) ? loans->area(slot) : nullptr;
}

void rx_loan_release(RxLoans* loans, const void* page) {
  uint32_t slot = 0, off = 0;
  if (loans->locate(page, &slot, &off)) loans->release(slot);
}

}  // namespace xpv
