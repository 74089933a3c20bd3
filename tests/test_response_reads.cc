// SPDX-License-Identifier: MIT
// Every response is read from the shared ring page exactly once by the
// frontend's response handlers (ring.h's RING_COPY_RESPONSE; netif-notes.md:
// the backend may rewrite a slot at any time, so a field read twice can
// differ between the check and the use).
//
// How the reads are seen (x86-64 Linux): both ring pages are made
// inaccessible (mprotect PROT_NONE). Each access faults; the SIGSEGV handler
// records the address when it is a read (the page-fault error code in the
// signal context says read or write), makes the page accessible, and sets
// the trap flag so that exactly the faulting instruction runs; the SIGTRAP
// that follows protects the page again. So every load of the page, however
// the compiler emitted it, is one recorded address. A response slot's bytes
// read twice between the backend writing that response and the check below
// is a double read.
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#endif

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

#include "netfront/queue.h"
#include "ring/netif.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "xpv/log.h"

namespace xpv {
namespace {

#if defined(__x86_64__) && defined(__linux__)

// ---------------------------------------------------------------------------
// The read tracker. Signal handlers reach it through one global.

constexpr uint32_t kSlots = 256;
constexpr uint32_t kMaxEntry = 16;  // bytes of the largest ring entry tracked

struct TrackedPage {
  uint8_t* base = nullptr;
  uint32_t entry_size = 0;
  // Reads of each byte offset of each slot since the slot was last reset.
  std::array<std::array<uint8_t, kMaxEntry>, kSlots> reads{};
};

class ReadTracker {
 public:
  // Tracks up to two pages (a TX and an RX ring). Pages must be 4 KiB
  // aligned and touched by this thread only.
  ReadTracker(void* tx_page, uint32_t tx_entry, void* rx_page, uint32_t rx_entry) {
    pages_[0].base = static_cast<uint8_t*>(tx_page);
    pages_[0].entry_size = tx_entry;
    pages_[1].base = static_cast<uint8_t*>(rx_page);
    pages_[1].entry_size = rx_entry;
    npages_ = rx_page ? 2 : 1;
    g_tracker = this;
    struct sigaction sa {};
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, &old_segv_);
    sa.sa_sigaction = on_trap;
    sigaction(SIGTRAP, &sa, &old_trap_);
    protect(PROT_NONE);
  }
  ~ReadTracker() {
    protect(PROT_READ | PROT_WRITE);
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGTRAP, &old_trap_, nullptr);
    g_tracker = nullptr;
  }
  ReadTracker(const ReadTracker&) = delete;
  ReadTracker& operator=(const ReadTracker&) = delete;

  // The backend's side: the pages accessible, its accesses not recorded.
  struct Backend {
    explicit Backend(ReadTracker& t) : t_(t) { t_.protect(PROT_READ | PROT_WRITE); }
    ~Backend() { t_.protect(PROT_NONE); }
    ReadTracker& t_;
  };

  // A new response was written in `slot` of page p: forget earlier reads.
  void reset(int p, uint32_t slot) { pages_[p].reads[slot % kSlots] = {}; }
  // The most any byte offset of the slot was read, and whether offset 0 was.
  uint32_t max_reads(int p, uint32_t slot) const {
    uint32_t m = 0;
    for (uint8_t r : pages_[p].reads[slot % kSlots])
      m = std::max<uint32_t>(m, r);
    return m;
  }
  uint32_t reads_at_start(int p, uint32_t slot) const { return pages_[p].reads[slot % kSlots][0]; }

 private:
  void protect(int prot) {
    for (int i = 0; i < npages_; ++i)
      mprotect(pages_[i].base, 4096, prot);
  }
  static int page_of(uintptr_t a) {
    for (int i = 0; i < g_tracker->npages_; ++i) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(g_tracker->pages_[i].base);
      if (a - b < 4096) return i;
    }
    return -1;
  }
  static void on_segv(int, siginfo_t* si, void* ctx) {
    auto* uc = static_cast<ucontext_t*>(ctx);
    const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
    const int p = g_tracker ? page_of(a) : -1;
    if (p < 0) {
      // A real crash: let it happen with the default action.
      signal(SIGSEGV, SIG_DFL);
      return;
    }
    TrackedPage& tp = g_tracker->pages_[p];
    const bool write = uc->uc_mcontext.gregs[REG_ERR] & 2;  // x86 #PF error code, W/R bit
    const uintptr_t off = a - reinterpret_cast<uintptr_t>(tp.base);
    if (!write && off >= sizeof(ring::SharedRingHeader)) {
      const uintptr_t e = off - sizeof(ring::SharedRingHeader);
      const uintptr_t slot = e / tp.entry_size, in = e % tp.entry_size;
      if (slot < kSlots && in < kMaxEntry && tp.reads[slot][in] < 255) ++tp.reads[slot][in];
    }
    mprotect(tp.base, 4096, PROT_READ | PROT_WRITE);
    g_tracker->stepping_ = p;
    uc->uc_mcontext.gregs[REG_EFL] |= 0x100;  // TF: trap after one instruction
  }
  static void on_trap(int, siginfo_t*, void* ctx) {
    auto* uc = static_cast<ucontext_t*>(ctx);
    if (!g_tracker || g_tracker->stepping_ < 0) return;
    mprotect(g_tracker->pages_[g_tracker->stepping_].base, 4096, PROT_NONE);
    g_tracker->stepping_ = -1;
    uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
  }

  static inline ReadTracker* g_tracker = nullptr;
  TrackedPage pages_[2];
  int npages_ = 0;
  volatile int stepping_ = -1;
  struct sigaction old_segv_ {};
  struct sigaction old_trap_ {};
};

constexpr int kTx = 0, kRx = 1;

// ---------------------------------------------------------------------------
// The tracker itself: a ring consumer that reads a response twice is seen.

struct alignas(4096) Page {
  uint8_t bytes[4096];
};

TEST(ResponseReads, TheTrackerSeesAResponseReadTwice) {
  static Page page;
  netif::RxFrontRing front;
  front.attach(&page, /*init=*/true);
  for (int i = 0; i < 3; ++i) {
    front.next_request() = netif::RxRequest{static_cast<uint16_t>(i), 0, 0};
    front.commit_request();
  }
  front.push_requests_and_check_notify();
  auto* e = reinterpret_cast<netif::RxFrontRing::Entry*>(page.bytes + 64);
  for (uint16_t i = 0; i < 3; ++i)
    e[i].rsp = netif::RxResponse{i, 0, 0, 60};
  page.bytes[8] = 3;  // rsp_prod
  ReadTracker t(&page, sizeof(netif::RxFrontRing::Entry), nullptr, 0);
  ASSERT_EQ(front.available_responses().count, 3u);
  // Slot 0 read once (the ring's own copy); slot 1 read twice, as a
  // consumer that checks a copy and later re-reads the page would; slot 2
  // never.
  const netif::RxResponse r0 = front.response(0);
  const netif::RxResponse r1 = front.response(1);
  const netif::RxResponse r1_again = front.response(1);
  EXPECT_EQ(r0.id, 0);
  EXPECT_EQ(r1.id, r1_again.id);
  EXPECT_EQ(t.max_reads(kTx, 0), 1u);
  EXPECT_EQ(t.reads_at_start(kTx, 0), 1u);
  EXPECT_EQ(t.max_reads(kTx, 1), 2u);
  EXPECT_EQ(t.max_reads(kTx, 2), 0u);
}

// ---------------------------------------------------------------------------
// The frontend: a live queue on the simulated hypervisor; this test is its
// backend, writing responses straight into the rings.

struct QueueReads : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Platform> domu, dom0;
  std::unique_ptr<GrantSharer> sharer;
  std::unique_ptr<EventChannel> be_evt;
  evtchn_port_t be_port = 0;
  UniqueFd wake;
  std::unique_ptr<QueueImpl> q;
  ring::SharedRingHeader* txh = nullptr;
  ring::SharedRingHeader* rxh = nullptr;
  netif::TxFrontRing::Entry* txe = nullptr;
  netif::RxFrontRing::Entry* rxe = nullptr;
  std::unique_ptr<ReadTracker> t;

  void SetUp() override {
    set_log_level(LogLevel::kError);
    sim::HypervisorConfig cfg;
    cfg.pages_per_domain = 4096;
    cfg.grants_per_domain = 2048;
    hv = std::move(*sim::Hypervisor::create(cfg));
    domu = std::move(*sim::local_platform(*hv, false));
    dom0 = std::move(*sim::local_platform(*hv, true));
    sharer = std::move(*domu->open_grant_sharer());
    wake = std::move(*make_eventfd());
    q = std::make_unique<QueueImpl>(0);
    ASSERT_TRUE(q->init());
    ASSERT_TRUE(
        q->setup(*domu, *sharer, kDom0, QueueFeatures{.split = false, .sg = true}, wake.get()));
    auto ch = dom0->open_event_channel();
    ASSERT_TRUE(ch) << ch.error().message;
    be_evt = std::move(*ch);
    auto p = be_evt->bind_interdomain(domu->self_domid(), q->keys().tx_port);
    ASSERT_TRUE(p) << p.error().message;
    be_port = *p;
    q->api().set_mode(QueueMode::kPoll);
    q->start();
    txh = q->tx_ring()->header();
    rxh = q->rx_ring()->header();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(txh) % 4096, 0u);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(rxh) % 4096, 0u);
    txe = reinterpret_cast<netif::TxFrontRing::Entry*>(txh + 1);
    rxe = reinterpret_cast<netif::RxFrontRing::Entry*>(rxh + 1);
    t = std::make_unique<ReadTracker>(txh, sizeof(netif::TxFrontRing::Entry), rxh,
                                      sizeof(netif::RxFrontRing::Entry));
  }
  void TearDown() override {
    t.reset();
    if (q) {
      q->stop();
      (void)q->teardown();
    }
  }

  // Backend: answers every TX request published; returns the ring indices
  // of the responses written.
  std::vector<uint32_t> answer_tx() {
    ReadTracker::Backend b(*t);
    std::vector<uint32_t> idx;
    const uint32_t prod = ring::load_acquire(txh->req_prod);
    uint32_t rsp = txh->rsp_prod;
    for (; rsp != prod; ++rsp) {
      txe[rsp % kSlots].rsp = netif::TxResponse{txe[rsp % kSlots].req.id, netif::kRspOkay};
      t->reset(kTx, rsp);
      idx.push_back(rsp);
    }
    ring::store_release(txh->rsp_prod, rsp);
    return idx;
  }
  // Backend: answers the next len.size() posted RX requests, one response
  // each; flags per response (more_data chains them into one packet).
  std::vector<uint32_t> put_rx(const std::vector<int16_t>& status,
                               const std::vector<uint16_t>& flags = {}) {
    ReadTracker::Backend b(*t);
    std::vector<uint32_t> idx;
    uint32_t rsp = rxh->rsp_prod;
    for (size_t i = 0; i < status.size(); ++i, ++rsp) {
      const uint16_t id = rxe[rsp % kSlots].req.id;
      rxe[rsp % kSlots].rsp =
          netif::RxResponse{id, 0, flags.empty() ? uint16_t{0} : flags[i], status[i]};
      t->reset(kRx, rsp);
      idx.push_back(rsp);
    }
    ring::store_release(rxh->rsp_prod, rsp);
    return idx;
  }
  void notify() {
    ReadTracker::Backend b(*t);
    ASSERT_TRUE(be_evt->notify(be_port));
  }
  // Every response written was read exactly once: its first byte once, no
  // byte more than once.
  void expect_read_once(int ring, const std::vector<uint32_t>& idx, const char* what) {
    for (uint32_t i : idx) {
      EXPECT_EQ(t->reads_at_start(ring, i), 1u) << what << ": response at ring index " << i;
      EXPECT_LE(t->max_reads(ring, i), 1u)
          << what << ": response at ring index " << i << " read twice from the shared page";
    }
  }
  uint16_t transmit(uint32_t n, uint32_t len, uint16_t nsegs = 1) {
    static uint8_t payload[3 * 4096];
    std::vector<TxSegment> segs(size_t{n} * nsegs);
    std::vector<TxPacket> pkts(n);
    for (uint32_t i = 0; i < n; ++i) {
      for (uint16_t s = 0; s < nsegs; ++s)
        segs[i * nsegs + s] = {payload + s * 4096, len};
      pkts[i] = {&segs[i * nsegs], nsegs};
    }
    return q->api().transmit(std::span<const TxPacket>(pkts.data(), n));
  }
  // Receives until `want` packets came (or a bound of tries).
  uint32_t receive(uint32_t want, uint16_t burst = 64) {
    uint32_t got = 0;
    for (int i = 0; i < 1000 && got < want; ++i) {
      got += q->api().receive(burst, [](const RxPacket&) { return true; });
      if (got < want) usleep(1000);
    }
    return got;
  }
};

TEST_F(QueueReads, PollModeReadsEachResponseOnce) {
  // TX: single-slot packets (the fast path) and a two-slot packet (the
  // general path), answered, reaped by poll().
  ASSERT_EQ(transmit(8, 60), 8);
  ASSERT_EQ(transmit(1, 3000, 2), 1);
  auto tx = answer_tx();
  ASSERT_EQ(tx.size(), 10u);
  q->api().poll();
  expect_read_once(kTx, tx, "TX");

  // RX fast path: whole packets handed straight to the caller.
  auto rx = put_rx({60, 60, 60, 60, 1500, 1500, 60, 60});
  EXPECT_EQ(receive(8), 8u);
  expect_read_once(kRx, rx, "RX direct");

  // The caller takes one at a time: the rest is staged, then delivered.
  rx = put_rx({60, 61, 62, 63});
  EXPECT_EQ(receive(4, 1), 4u);
  expect_read_once(kRx, rx, "RX staged");

  // The slow path: a three-slot packet, an error status, a packet again.
  rx = put_rx({1000, 1000, 500, netif::kRspError, 60},
              {netif::kRxMoreData, netif::kRxMoreData, 0, 0, 0});
  EXPECT_EQ(receive(2), 2u);
  expect_read_once(kRx, rx, "RX multi-slot and error");
  EXPECT_FALSE(q->broken()) << q->broken_reason();
}

TEST_F(QueueReads, EventModeReadsEachResponseOnce) {
  q->api().set_mode(QueueMode::kEvent);
  (void)q->api().arm();
  ASSERT_EQ(transmit(16, 60), 16);
  auto tx = answer_tx();
  auto rx = put_rx({60, 60, 1500, 1000, 500}, {0, 0, 0, netif::kRxMoreData, 0});
  notify();
  // The event handler consumes both rings.
  EXPECT_EQ(receive(4), 4u);
  expect_read_once(kTx, tx, "TX (event)");
  expect_read_once(kRx, rx, "RX (event)");
  EXPECT_FALSE(q->broken()) << q->broken_reason();
}

#else
TEST(ResponseReads, NeedsX86_64Linux) {
  GTEST_SKIP() << "the read tracker uses x86-64 Linux page-fault and trap-flag details";
}
#endif

}  // namespace
}  // namespace xpv
