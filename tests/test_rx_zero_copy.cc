// SPDX-License-Identifier: MIT
// Zero-copy receive and forwarding (DeviceConfig::rx_zero_copy): received
// pages kept by the application stay out of the RX ring until every holder
// let go (the application, and each TX request naming the page's grant until
// its response), go back to the ring after that, and outlive the connection
// while they are kept. The test plays the backend, writing responses into
// the shared rings (support/hostile_backend.h).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/hostile_backend.h"

namespace xpv {
namespace {

struct ZeroCopy : HostileBackend {
  struct Kept {
    const uint8_t* data;
    uint32_t len;
    RxLoans* loans;
  };
  void open_zero_copy() {
    negotiated.rx_zero_copy = true;
    open(false);
  }
  // The backend answers the RX requests at ring indices [from, from + n)
  // with len-byte packets; returns the grants it was given there.
  std::vector<grant_ref_t> answer_rx_packets(uint32_t from, uint32_t n, int16_t len) {
    std::vector<grant_ref_t> refs;
    for (uint32_t i = from; i < from + n; ++i) {
      refs.push_back(rxe()[i & 255].req.gref);
      answer_rx(i, len, 0);
    }
    publish_rx(from + n);
    return refs;
  }
  // Receives up to `max` packets, keeping them when the queue lets us.
  std::vector<Kept> receive_keeping(uint16_t max) {
    std::vector<Kept> out;
    q->api().receive(max, [&](const RxPacket& p) {
      EXPECT_EQ(p.nfrags, 1u);
      out.push_back({p.frags[0].data, p.frags[0].len, p.loans});
      return p.loans ? RxVerdict::kKept : RxVerdict::kConsumed;
    });
    return out;
  }
  // Receives in bursts of 32 until `n` packets came (or a burst brought none).
  std::vector<Kept> receive_all_keeping(size_t n) {
    std::vector<Kept> all;
    while (all.size() < n) {
      auto k = receive_keeping(32);
      if (k.empty()) break;
      all.insert(all.end(), k.begin(), k.end());
    }
    return all;
  }
  // One `len`-byte packet received, kept, and sent on by its page's grant
  // (the request at TX ring index 0); `ref`: the grant the backend got
  // for that RX page. The application still holds it.
  Kept receive_and_forward_one(int16_t len, grant_ref_t* ref = nullptr) {
    const auto refs = answer_rx_packets(0, 1, len);
    if (ref) *ref = refs[0];
    const auto kept = receive_keeping(1);
    EXPECT_EQ(kept.size(), 1u);
    if (kept.size() != 1 || !kept[0].loans) return {};
    TxSegment seg{kept[0].data, static_cast<uint32_t>(len), kept[0].loans};
    TxPacket p{&seg, 1};
    EXPECT_EQ(q->api().transmit(std::span<const TxPacket>(&p, 1)), 1);
    return kept[0];
  }
  // One receive call that finds nothing: the refill that takes released
  // pages back runs at its end.
  void refill() {
    q->api().receive(0, [](const RxPacket&) { return true; });
  }
};

TEST_F(ZeroCopy, KeptPagesStayOutOfTheRingUntilReleased) {
  open_zero_copy();
  const uint32_t posted = q->accounting().rx_buffers_posted;
  ASSERT_EQ(posted, 256u);
  // The pages beyond the ring's, free (the ring refills in batches of 32).
  const uint32_t spare = q->accounting().rx_pool_free;
  ASSERT_EQ(spare, QueueImpl::kRxLendSlots);
  answer_rx_packets(0, 4, 60);
  const auto kept = receive_keeping(32);
  ASSERT_EQ(kept.size(), 4u);
  for (const Kept& k : kept) {
    ASSERT_NE(k.loans, nullptr);
    EXPECT_EQ(k.len, 60u);
  }
  EXPECT_EQ(q->counters().rx_kept, 4u);
  EXPECT_EQ(q->accounting().rx_buffers_kept, 4u);
  EXPECT_EQ(q->accounting().rx_pool_free, spare) << "a kept page is not the pool's";
  expect_accounted();
  rx_loan_release(kept[0].loans, kept[0].data);
  rx_loan_release(kept[1].loans, kept[1].data);
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 2u);
  EXPECT_EQ(q->accounting().rx_pool_free, spare + 2);
  expect_accounted();
  rx_loan_release(kept[2].loans, kept[2].data);
  rx_loan_release(kept[3].loans, kept[3].data);
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u);
  EXPECT_EQ(q->accounting().rx_pool_free, spare + 4);
  expect_accounted();
  EXPECT_EQ(q->counters().backend_errors, 0u);
}

// The pool has kRxLendSlots pages beyond the ring's: that many may be kept
// at once and the ring stays full all the same; beyond that a packet comes
// without `loans` (the application copies it, and its page goes straight
// back).
TEST_F(ZeroCopy, AsManyPagesAsTheRingHoldsAreKeptAndTheRingStaysFull) {
  open_zero_copy();
  EXPECT_EQ(q->accounting().rx_pool_size, QueueImpl::kRxPoolSlotsMax);
  answer_rx_packets(0, 256, 60);
  const std::vector<Kept> all = receive_all_keeping(256);
  ASSERT_EQ(all.size(), 256u);
  uint32_t kept = 0;
  for (const Kept& k : all)
    kept += k.loans != nullptr;
  EXPECT_EQ(kept, QueueImpl::kRxLendSlots);
  EXPECT_EQ(q->accounting().rx_buffers_kept, QueueImpl::kRxLendSlots);
  EXPECT_EQ(q->accounting().rx_buffers_posted, 256u) << "the ring refilled from the other pages";
  expect_accounted();
  // The limit reached: the next packets are not kept.
  answer_rx_packets(256, 40, 60);
  const std::vector<Kept> more = receive_all_keeping(40);
  ASSERT_EQ(more.size(), 40u);
  for (const Kept& k : more)
    EXPECT_EQ(k.loans, nullptr);
  EXPECT_EQ(q->accounting().rx_buffers_kept, QueueImpl::kRxLendSlots);
  expect_accounted();
  for (const Kept& k : all)
    if (k.loans) rx_loan_release(k.loans, k.data);
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u);
  expect_accounted();
}

// Forwarding without a copy: a kept page goes out by its own grant (netif.h:
// the TX request names any grant of ours), and stays the backend's to read
// until that request's response, even after the application let go.
TEST_F(ZeroCopy, AKeptPageIsSentByItsGrantAndHeldUntilItsResponse) {
  open_zero_copy();
  grant_ref_t ref = 0;
  const Kept kept = receive_and_forward_one(100, &ref);
  ASSERT_NE(kept.loans, nullptr);
  const netif::TxRequest req = txe()[0].req;
  EXPECT_EQ(req.gref, ref) << "the RX page's own grant";
  EXPECT_EQ(req.offset, 0u);
  EXPECT_EQ(req.size, 100u);
  EXPECT_EQ(q->counters().tx_by_rx_grant, 1u);
  EXPECT_EQ(q->accounting().tx_slots_by_rx_grant, 1u);
  // The application lets go; the request still holds the page.
  rx_loan_release(kept.loans, kept.data);
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 1u);
  answer_tx(0, netif::kRspOkay);
  publish_tx(1);
  q->api().poll();
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u);
  EXPECT_EQ(q->accounting().tx_slots_by_rx_grant, 0u);
  expect_accounted();
  EXPECT_EQ(q->accounting().tx_pool_free, q->accounting().tx_pool_size);
}

// A forwarder in poll mode transmits again long before its TX ring fills:
// that next burst takes back the kept pages whose requests were answered,
// so the receiving queue gets them for its ring (without it they stayed out
// until the TX ring filled, and the receiver had to copy meanwhile).
TEST_F(ZeroCopy, TheNextTransmitInPollModeHandsBackAnsweredKeptPages) {
  open_zero_copy();
  ASSERT_EQ(q->mode(), QueueMode::kPoll);
  const Kept kept = receive_and_forward_one(100);
  ASSERT_NE(kept.loans, nullptr);
  rx_loan_release(kept.loans, kept.data);
  answer_tx(0, netif::kRspOkay);
  publish_tx(1);
  // The next burst: an ordinary packet, the TX ring all but empty.
  uint8_t frame[60] = {};
  TxSegment plain{frame, sizeof frame};
  TxPacket p2{&plain, 1};
  ASSERT_EQ(q->api().transmit(std::span<const TxPacket>(&p2, 1)), 1);
  EXPECT_EQ(q->accounting().tx_slots_by_rx_grant, 0u);
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u) << "the answered page is still out";
  expect_accounted();
}

// Multi-slot: a packet of several kept pages goes out as one request per page
// (the first one's size the whole packet, NETTXF_more_data on all but the
// last); a packet that mixes a kept page with other memory is copied.
TEST_F(ZeroCopy, SeveralKeptPagesMakeOnePacketAndMixedOnesAreCopied) {
  open_zero_copy();
  const auto refs = answer_rx_packets(0, 3, 1000);
  const auto kept = receive_keeping(3);
  ASSERT_EQ(kept.size(), 3u);
  TxSegment segs[3];
  for (int i = 0; i < 3; ++i)
    segs[i] = {kept[i].data, 1000, kept[i].loans};
  TxPacket p{segs, 3};
  ASSERT_EQ(q->api().transmit(std::span<const TxPacket>(&p, 1)), 1);
  for (int i = 0; i < 3; ++i) {
    const netif::TxRequest r = txe()[i].req;
    EXPECT_EQ(r.gref, refs[i]);
    EXPECT_EQ(r.size, i == 0 ? 3000u : 1000u);
    EXPECT_EQ((r.flags & netif::kTxMoreData) != 0, i < 2);
  }
  static uint8_t other[100] = {0xff};
  TxSegment mixed[2] = {{kept[0].data, 100, kept[0].loans}, {other, 100}};
  TxPacket p2{mixed, 2};
  ASSERT_EQ(q->api().transmit(std::span<const TxPacket>(&p2, 1)), 1);
  const netif::TxRequest c = txe()[3].req;
  for (grant_ref_t g : refs)
    EXPECT_NE(c.gref, g) << "copied into a TX page";
  EXPECT_EQ(q->counters().tx_by_rx_grant, 1u);
  for (const Kept& k : kept)
    rx_loan_release(k.loans, k.data);
  for (uint32_t i = 0; i < 4; ++i)
    answer_tx(i, netif::kRspOkay);
  publish_tx(4);
  q->api().poll();
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u);
  expect_accounted();
}

// A grant reference means something only with the domain that granted it: a
// page kept from a queue of another domain (two simulated guests in one
// process) is copied, never named by a grant number of the wrong domain.
TEST_F(ZeroCopy, APageOfAnotherDomainIsCopied) {
  open_zero_copy();
  auto other = std::move(*sim::local_platform(*hv, false));
  ASSERT_NE(other->self_domid(), domu->self_domid());
  auto other_sharer = std::move(*other->open_grant_sharer());
  auto other_wake = std::move(*make_eventfd());
  QueueImpl q2(1);
  ASSERT_TRUE(q2.init());
  ASSERT_TRUE(q2.setup(*other, *other_sharer, kDom0, negotiated, other_wake.get()));
  q2.start();
  netif::RxFrontRing* rx2 = q2.rx_ring();
  auto* e2 = reinterpret_cast<netif::RxFrontRing::Entry*>(rx2->header() + 1);
  netif::RxResponse r{};
  r.id = e2[0].req.id;
  r.status = 100;
  std::memcpy(&e2[0].rsp, &r, sizeof r);
  __atomic_store_n(&rx2->header()->rsp_prod, 1u, __ATOMIC_RELEASE);
  Kept k{};
  q2.api().receive(1, [&](const RxPacket& p) {
    k = {p.frags[0].data, p.frags[0].len, p.loans};
    return RxVerdict::kKept;
  });
  ASSERT_NE(k.loans, nullptr);
  std::memset(const_cast<uint8_t*>(k.data), 0x5a, 100);
  TxSegment seg{k.data, 100, k.loans};
  TxPacket p{&seg, 1};
  ASSERT_EQ(q->api().transmit(std::span<const TxPacket>(&p, 1)), 1);
  EXPECT_EQ(q->counters().tx_by_rx_grant, 0u);
  EXPECT_EQ(q->accounting().tx_slots_by_rx_grant, 0u);
  rx_loan_release(k.loans, k.data);
  q2.stop();
  (void)q2.teardown();
}

// The application may free its mbufs on any thread: releases from several
// threads at once all come back, each page once.
TEST_F(ZeroCopy, ReleasesFromOtherThreadsAllComeBack) {
  open_zero_copy();
  answer_rx_packets(0, 128, 60);
  const std::vector<Kept> kept = receive_all_keeping(128);
  ASSERT_EQ(kept.size(), 128u);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < kept.size(); i += 4)
        rx_loan_release(kept[i].loans, kept[i].data);
    });
  }
  for (auto& th : threads)
    th.join();
  refill();
  EXPECT_EQ(q->accounting().rx_buffers_kept, 0u);
  EXPECT_EQ(q->accounting().rx_pool_free + q->accounting().rx_buffers_posted,
            QueueImpl::kRxPoolSlotsMax);
  expect_accounted();
}

// A connection that ends while pages are kept: their memory stays (the
// application reads it after the teardown), they are not counted as ended,
// and a release afterwards is safe.
TEST_F(ZeroCopy, PagesKeptAcrossATeardownStayReadable) {
  open_zero_copy();
  answer_rx_packets(0, 2, 60);
  const auto kept = receive_keeping(2);
  ASSERT_EQ(kept.size(), 2u);
  q->stop();
  const QueueTeardown t = q->teardown();
  EXPECT_EQ(t.rx_pages_kept, 2u);
  EXPECT_EQ(t.pages.pages, 2u + 256u) << "rings and TX pool; the retired RX pool is not ended yet";
  volatile uint8_t b = kept[0].data[0];  // still mapped (ASan builds would flag it otherwise)
  (void)b;
  rx_loan_release(kept[0].loans, kept[0].data);
  rx_loan_release(kept[1].loans, kept[1].data);
  q.reset();  // frees the retired pool: nothing is kept any more
}

}  // namespace
}  // namespace xpv
