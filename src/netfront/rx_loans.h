// SPDX-License-Identifier: MIT
// Zero-copy receive: RX pool pages kept by the application.
//
// A receive sink that keeps a packet (RxVerdict::kKept) keeps the pages its
// fragments lie in, granted to the backend as every RX buffer is: nothing
// is copied. The page goes back to the ring only when every holder has let
// go of it: the application (rx_loan_release(), from any thread: DPDK frees
// an mbuf wherever it likes) and each TX request that sends the page by its
// grant (netif.h allows any grant of ours in a TX request; the page is the
// backend's to read until that request's response). So each page has a
// count; the one who brings it to 0 marks the page returned, and the owning
// queue's data path takes the returned pages back into its pool on its next
// receive call (it alone touches the pool).
//
// When the connection ends while pages are still out, their grants stay and
// their memory stays mapped (the application reads it): the pool is retired
// with this table, and ended once the last page comes back (QueueImpl keeps
// the retired ones). A table outlives whatever may still hold its pages.
//
// What it costs in safety: a kept page stays granted and writable to the
// backend while the application reads it (the copy path reads a page only
// for the copy). Hence opt-in (DeviceConfig::rx_zero_copy).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "grant/buffer_pool.h"
#include "xpv/netfront.h"

namespace xpv {

class RxLoans {
 public:
  // For the pages of `pool` (which must outlive the table), granted by
  // domain `granter` (ourselves) to `backend`; at most `max_out` of them kept at once (the ring
  // keeps the others: a receiver that holds on to everything cannot starve it).
  RxLoans(const BufferPool& pool, domid_t granter, domid_t backend, uint32_t max_out);
  RxLoans(const RxLoans&) = delete;
  RxLoans& operator=(const RxLoans&) = delete;

  // ---- the owning queue's data path ----
  // Whether `n` more pages may be kept now.
  bool can_lend(uint32_t n) const { return out_ + n <= max_out_; }
  // Hands `slot` (answered by the backend, delivered) to the application.
  void lend(uint32_t slot) {
    count_[slot].store(1, std::memory_order_relaxed);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    ++out_;
  }
  // The slots whose last holder let go, into out[] (room for size()
  // entries); they are the pool's again. Returns how many.
  uint32_t take_returned(uint32_t* out);
  // Pages kept and not yet taken back (the accounting's rx_buffers_lent).
  uint32_t out() const { return out_; }

  // ---- any thread ----
  // Whether p lies in one of the table's pages; gives its slot and offset.
  bool locate(const void* p, uint32_t* slot, uint32_t* offset) const {
    const uintptr_t d = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(base_);
    if (d >= uintptr_t{slots_} * kPageSize) return false;
    *slot = static_cast<uint32_t>(d / kPageSize);
    *offset = static_cast<uint32_t>(d % kPageSize);
    return true;
  }
  // One more holder of a kept page (a TX request naming its grant). The
  // caller holds the page already, so the count is not 0.
  void pin(uint32_t slot) { count_[slot].fetch_add(1, std::memory_order_relaxed); }
  // A holder lets go. Acquire-release: the holder's reads of the page
  // happen before the refill that gives it to the backend again.
  void release(uint32_t slot);
  grant_ref_t ref(uint32_t slot) const { return refs_[slot]; }
  // A grant reference means something only with the domain that granted it
  // and to the domain it was granted to (a TX request names neither).
  bool granted_between(domid_t granter, domid_t backend) const {
    return granter == granter_ && backend == backend_;
  }
  void* area(uint32_t slot) { return areas_[slot].bytes; }
  uint32_t size() const { return slots_; }
  // Pages some holder still has (0: the table may go).
  uint32_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }

 private:
  struct alignas(16) Area {
    uint8_t bytes[kRxLoanAreaBytes];
  };
  const uint8_t* const base_;
  const uint32_t slots_;
  const grant_ref_t* const refs_;
  const domid_t granter_;
  const domid_t backend_;
  const uint32_t max_out_;
  uint32_t out_ = 0;  // data path only
  std::unique_ptr<std::atomic<uint32_t>[]> count_;
  std::unique_ptr<std::atomic<uint64_t>[]> returned_;  // a bit per slot
  std::unique_ptr<Area[]> areas_;
  std::atomic<uint32_t> outstanding_{0};  // slots whose count is not 0
};

}  // namespace xpv
