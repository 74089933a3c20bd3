// SPDX-License-Identifier: MIT
// Xen's shared I/O ring (xen/io/ring.h, DEFINE_RING_TYPES) in C++: one page
// holding four free-running 32-bit indices, padding to 64 bytes, then a
// power-of-two array of entries, each a union of a request and a response.
//
// FrontRing produces requests and consumes responses; BackRing the reverse.
// Both are used by the frontend (src/netfront) and by the simulated netback
// (src/netback): one implementation, two halves.
//
// Indices are free-running: they wrap at 2^32 and only their differences
// matter ("prod - cons" is the number of entries between them, computed in
// unsigned 32-bit arithmetic). The entry of index i is entries[i & (size-1)].
//
// Memory ordering (ring.h's xen_wmb/xen_rmb/xen_mb, with the same meaning):
//  - a producer writes its entries, then publishes the producer index with a
//    release store: the peer that reads the index with acquire sees the entries;
//  - a producer that must decide whether to notify orders its index store
//    before its load of the peer's *_event with a full fence (xen_mb), the same
//    fence the consumer places between writing *_event and re-reading the
//    producer index in final_check: one of the two sides always sees the other;
//  - a consumer reads the producer index with acquire, then copies entries out
//    of the shared page once (copy_once: a hostile peer may rewrite them; we
//    never read an entry twice).
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace xpv::ring {

inline constexpr size_t kRingPageSize = 4096;

// The 64-byte header of every shared ring page (ring.h: struct __name##_sring
// up to the entries). pvt is netif's smartpoll byte / tapif's msg; unused here.
struct SharedRingHeader {
  uint32_t req_prod;
  uint32_t req_event;
  uint32_t rsp_prod;
  uint32_t rsp_event;
  uint8_t pvt[4];
  uint8_t pad[44];
};
static_assert(sizeof(SharedRingHeader) == 64);

// Largest power of two <= n (ring.h's __RD32).
constexpr uint32_t round_down_pow2(uint32_t n) {
  return n == 0 ? 0 : std::bit_floor(n);
}

template <typename Req, typename Rsp>
struct RingLayout {
  static_assert(std::is_trivially_copyable_v<Req> && std::is_trivially_copyable_v<Rsp>);
  union Entry {
    Req req;
    Rsp rsp;
  };
  // __CONST_RING_SIZE: entries that fit in the page after the header.
  static constexpr uint32_t kSize =
      round_down_pow2((kRingPageSize - sizeof(SharedRingHeader)) / sizeof(Entry));
  static constexpr uint32_t kMask = kSize - 1;
  static_assert(kSize >= 1);
};

// Atomic access to a field of the shared page.
inline uint32_t load_acquire(const uint32_t& v) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(v)).load(std::memory_order_acquire);
}
inline uint32_t load_relaxed(const uint32_t& v) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(v)).load(std::memory_order_relaxed);
}
inline void store_release(uint32_t& v, uint32_t x) {
  std::atomic_ref<uint32_t>(v).store(x, std::memory_order_release);
}
inline void store_relaxed(uint32_t& v, uint32_t x) {
  std::atomic_ref<uint32_t>(v).store(x, std::memory_order_relaxed);
}
// xen_mb(): orders earlier stores before later loads.
inline void full_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Copies one entry out of the shared page exactly once (ring.h's
// RING_COPY_REQUEST/RESPONSE, a volatile copy): whole words through volatile
// loads, so the compiler emits exactly one load per word, never splits,
// repeats or defers one (a memcpy may be any sequence of loads, and a
// library memcpy of 8 bytes reads them twice). Every field is then taken
// from the local copy. Entries of 8, 16... bytes move as 64-bit words (an
// RX response: one load), others as 32-bit words (a TX response: one load).
// Entries are 4-byte aligned (netif's grant refs), hence aligned(4).
template <typename T>
inline T copy_once(const T* shared) {
  static_assert(sizeof(T) % 4 == 0, "ring entries are whole 32-bit words");
  using Word = std::conditional_t<sizeof(T) % 8 == 0, uint64_t, uint32_t>;
  typedef Word __attribute__((may_alias, aligned(4))) SharedWord;
  constexpr size_t kWords = sizeof(T) / sizeof(Word);
  const volatile SharedWord* src = reinterpret_cast<const volatile SharedWord*>(shared);
  Word words[kWords];
  for (size_t i = 0; i < kWords; ++i)
    words[i] = src[i];
  T local;
  std::memcpy(&local, words, sizeof(T));
  return local;
}

// Initialises a shared ring page (SHARED_RING_INIT): indices 0, events 1.
inline void shared_ring_init(void* page) {
  auto* h = static_cast<SharedRingHeader*>(page);
  std::memset(page, 0, kRingPageSize);
  h->req_event = 1;
  h->rsp_event = 1;
}

// What a consumer found: `count` entries ready, or the peer's producer index
// claims more entries than the ring holds (a peer error, never consumed).
struct Available {
  uint32_t count = 0;
  bool overflow = false;
};

// The frontend half: produces requests, consumes responses.
template <typename Req, typename Rsp>
class FrontRing {
 public:
  using Layout = RingLayout<Req, Rsp>;
  using Entry = typename Layout::Entry;
  static constexpr uint32_t kSize = Layout::kSize;

  FrontRing() = default;

  // FRONT_RING_INIT (init=true, on a fresh page) or FRONT_RING_ATTACH.
  void attach(void* page, bool init) {
    if (init) shared_ring_init(page);
    hdr_ = static_cast<SharedRingHeader*>(page);
    entries_ = reinterpret_cast<Entry*>(hdr_ + 1);
    req_prod_pvt_ = req_pushed_ = load_relaxed(hdr_->req_prod);
    rsp_cons_ = load_relaxed(hdr_->rsp_prod);
    if (init) req_prod_pvt_ = req_pushed_ = rsp_cons_ = 0;
  }
  // Attach with explicit private indices (starting a ring at an arbitrary
  // index, e.g. to exercise wrap-around at 2^32).
  void attach_at(void* page, uint32_t start) {
    shared_ring_init(page);
    hdr_ = static_cast<SharedRingHeader*>(page);
    entries_ = reinterpret_cast<Entry*>(hdr_ + 1);
    hdr_->req_prod = hdr_->rsp_prod = start;
    hdr_->req_event = hdr_->rsp_event = start + 1;
    req_prod_pvt_ = req_pushed_ = rsp_cons_ = start;
  }
  bool attached() const { return hdr_ != nullptr; }
  SharedRingHeader* header() const { return hdr_; }

  // --- requests (we produce) ---
  // RING_FREE_REQUESTS: slots not holding an outstanding request.
  uint32_t free_requests() const { return kSize - (req_prod_pvt_ - rsp_cons_); }
  bool full() const { return free_requests() == 0; }
  // The slot for the next request; call only when !full(). Fill it, then
  // advance with commit_request().
  Req& next_request() { return entries_[req_prod_pvt_ & Layout::kMask].req; }
  void commit_request() { ++req_prod_pvt_; }
  // Bulk form: fill the entries of ring indices req_prod_pvt() .. +n-1 (n at
  // most free_requests()), then commit them at once. The caller keeps the
  // index in a register instead of reloading it after every entry store.
  Req& request_at(uint32_t idx) { return entries_[idx & Layout::kMask].req; }
  void commit_requests(uint32_t n) { req_prod_pvt_ += n; }
  uint32_t req_prod_pvt() const { return req_prod_pvt_; }
  uint32_t unpushed() const { return req_prod_pvt_ - req_pushed_; }

  // RING_PUSH_REQUESTS_AND_CHECK_NOTIFY: publishes private requests; true
  // when the backend asked (req_event) to be told about an index we passed.
  bool push_requests_and_check_notify() {
    // Our own copy of the old index: the shared one is writable by the peer.
    const uint32_t old_prod = req_pushed_;
    const uint32_t new_prod = req_pushed_ = req_prod_pvt_;
    store_release(hdr_->req_prod, new_prod);  // xen_wmb: entries before index
    full_fence();                             // xen_mb: index before reading req_event
    const uint32_t event = load_relaxed(hdr_->req_event);
    return static_cast<uint32_t>(new_prod - event) < static_cast<uint32_t>(new_prod - old_prod);
  }

  // --- responses (we consume) ---
  // Responses the backend published beyond ours. An overflow means the
  // backend's rsp_prod claims more than our outstanding requests could
  // produce (RING_RESPONSE_PROD_OVERFLOW): a peer error.
  Available available_responses() {
    rsp_prod_seen_ = load_acquire(hdr_->rsp_prod);  // xen_rmb: index before entries
    const uint32_t n = rsp_prod_seen_ - rsp_cons_;
    if (n > kSize || n > req_pushed_ - rsp_cons_) return {0, true};
    return {n, false};
  }
  // Whether the backend's rsp_prod has moved from our rsp_cons: a cheap test
  // for an idle poll. Relaxed: when it says no, no entry is read; when it says
  // yes, the caller goes through available_responses(), whose acquire load
  // orders the entries (and checks for an overflow).
  bool responses_published() const { return load_relaxed(hdr_->rsp_prod) != rsp_cons_; }
  // Copies out the next response (call only while available_responses()
  // counted one), and advances the consumer index.
  Rsp take_response() { return copy_once(&entries_[rsp_cons_++ & Layout::kMask].rsp); }
  // Bulk form: copy out the k-th available response (from rsp_cons()), then
  // consume all that were handled at once.
  Rsp response(uint32_t k) const {
    return copy_once(&entries_[(rsp_cons_ + k) & Layout::kMask].rsp);
  }
  // Same, by ring index (rsp_cons() + k), for loops that keep the index local.
  Rsp response_at(uint32_t idx) const { return copy_once(&entries_[idx & Layout::kMask].rsp); }
  // Bulk form for loops that walk the page: the entries from ring index idx
  // on, at most n of them and never past the end of the page (a batch that
  // wraps is two runs). Each response is copied out with copy_response.
  std::span<const Entry> responses_from(uint32_t idx, uint32_t n) const {
    const uint32_t at = idx & Layout::kMask;
    return {entries_ + at, n < kSize - at ? n : kSize - at};
  }
  static Rsp copy_response(const Entry& e) { return copy_once(&e.rsp); }
  void consume_responses(uint32_t n) { rsp_cons_ += n; }
  uint32_t rsp_cons() const { return rsp_cons_; }

  // RING_FINAL_CHECK_FOR_RESPONSES: when nothing is pending, ask to be
  // notified for the next response (rsp_event = cons + 1) and look again, so
  // a response published in between is not missed.
  Available final_check_for_responses() {
    Available a = available_responses();
    if (a.count || a.overflow) return a;
    store_relaxed(hdr_->rsp_event, rsp_cons_ + 1);
    full_fence();  // xen_mb: rsp_event before re-reading rsp_prod
    return available_responses();
  }
  // Ask for no notification until `ahead` more responses are published
  // (netfront's rsp_event = cons + n batching, used by poll mode to disarm).
  void set_response_event(uint32_t ahead) { store_relaxed(hdr_->rsp_event, rsp_cons_ + ahead); }
  // How far our rsp_event lies beyond the consumer (0 when at it; a huge
  // value when behind it).
  uint32_t response_event_ahead() const {
    return load_relaxed(hdr_->rsp_event) - rsp_cons_;  // our own store
  }
  // Whether the responses published so far reach our rsp_event: the
  // backend's push that passed it notified (RING_PUSH_RESPONSES_AND_CHECK_NOTIFY
  // notifies when rsp_event lies in (old rsp_prod, new rsp_prod]), so an
  // event for these responses is delivered or on its way. Only a consumer
  // that has not moved rsp_event since may ask.
  bool response_event_reached() const {
    const uint32_t prod = load_acquire(hdr_->rsp_prod);
    const uint32_t event = load_relaxed(hdr_->rsp_event);  // our own store
    // event - 1 lies in [cons, prod): within the responses not consumed yet.
    return static_cast<uint32_t>(event - 1 - rsp_cons_) < static_cast<uint32_t>(prod - rsp_cons_);
  }

 private:
  SharedRingHeader* hdr_ = nullptr;
  Entry* entries_ = nullptr;
  uint32_t req_prod_pvt_ = 0;  // next request index (private)
  uint32_t req_pushed_ = 0;    // last index we published (private copy of req_prod)
  uint32_t rsp_cons_ = 0;
  uint32_t rsp_prod_seen_ = 0;
};

// The backend half: consumes requests, produces responses.
template <typename Req, typename Rsp>
class BackRing {
 public:
  using Layout = RingLayout<Req, Rsp>;
  using Entry = typename Layout::Entry;
  static constexpr uint32_t kSize = Layout::kSize;

  BackRing() = default;

  // BACK_RING_ATTACH: take over the indices the page holds.
  void attach(void* page) {
    hdr_ = static_cast<SharedRingHeader*>(page);
    entries_ = reinterpret_cast<Entry*>(hdr_ + 1);
    rsp_prod_pvt_ = rsp_pushed_ = load_relaxed(hdr_->rsp_prod);
    req_cons_ = rsp_prod_pvt_;
  }
  bool attached() const { return hdr_ != nullptr; }
  SharedRingHeader* header() const { return hdr_; }

  // --- requests (we consume) ---
  // Requests published beyond ours, bounded as RING_HAS_UNCONSUMED_REQUESTS
  // bounds them: never more than the response space left, RING_SIZE minus
  // the requests consumed but not yet answered. A req_prod beyond that bound
  // is a peer error (overflow, count 0; netback treats it as a fatal
  // "impossible number of requests"): one claiming more than the ring holds
  // (RING_REQUEST_PROD_OVERFLOW) and one moved back behind req_cons, which
  // unbounded unsigned arithmetic would read as nearly 2^32 requests.
  Available available_requests() {
    const uint32_t prod = load_acquire(hdr_->req_prod);  // xen_rmb
    return bound_requests(prod - req_cons_);
  }
  // Copies out the next request (call only while available_requests()
  // counted one), and advances the consumer index.
  Req take_request() { return copy_once(&entries_[req_cons_++ & Layout::kMask].req); }
  // Ask for no notification until `ahead` more requests are published (a
  // busy-polling backend keeps this far ahead; an idle one uses 1).
  void set_request_event(uint32_t ahead) { store_relaxed(hdr_->req_event, req_cons_ + ahead); }
  uint32_t req_cons() const { return req_cons_; }
  // Requests consumed but not yet answered.
  uint32_t unanswered() const { return req_cons_ - rsp_prod_pvt_; }

  // RING_FINAL_CHECK_FOR_REQUESTS.
  Available final_check_for_requests() {
    Available a = available_requests();
    if (a.count || a.overflow) return a;
    store_relaxed(hdr_->req_event, req_cons_ + 1);
    full_fence();  // xen_mb: req_event before re-reading req_prod
    return available_requests();
  }

  // --- responses (we produce) ---
  // The slot for the next response: at most unanswered() of them may be
  // written before the requests they answer are consumed.
  Rsp& next_response() { return entries_[rsp_prod_pvt_ & Layout::kMask].rsp; }
  void commit_response() { ++rsp_prod_pvt_; }
  uint32_t rsp_prod_pvt() const { return rsp_prod_pvt_; }

  // RING_PUSH_RESPONSES_AND_CHECK_NOTIFY.
  bool push_responses_and_check_notify() {
    const uint32_t old_prod = rsp_pushed_;  // private: the shared copy is the peer's to scribble
    const uint32_t new_prod = rsp_pushed_ = rsp_prod_pvt_;
    store_release(hdr_->rsp_prod, new_prod);  // xen_wmb
    full_fence();                             // xen_mb
    const uint32_t event = load_relaxed(hdr_->rsp_event);
    return static_cast<uint32_t>(new_prod - event) < static_cast<uint32_t>(new_prod - old_prod);
  }

 private:
  // `claimed` = req_prod - req_cons as read; unanswered() <= kSize always
  // holds, as we only consume what an earlier call bounded.
  Available bound_requests(uint32_t claimed) const {
    const uint32_t room = kSize - unanswered();  // RING_HAS_UNCONSUMED_REQUESTS' rsp
    if (claimed > room) return {0, true};
    return {claimed, false};
  }

  SharedRingHeader* hdr_ = nullptr;
  Entry* entries_ = nullptr;
  uint32_t rsp_prod_pvt_ = 0;
  uint32_t rsp_pushed_ = 0;
  uint32_t req_cons_ = 0;
};

}  // namespace xpv::ring
