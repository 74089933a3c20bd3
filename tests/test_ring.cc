// SPDX-License-Identifier: MIT
// The shared ring: index arithmetic across 2^32, notification suppression
// (push-and-check / final-check), overflow detection, and the netif layout.
// That the frontend copies each response out of the page once is checked on
// the live queue, in test_response_reads.cc.
#include <gtest/gtest.h>

#include <xen/xen.h>
#include <xen/grant_table.h>
#include <xen/io/netif.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ring/netif.h"

namespace xpv {
namespace {

using netif::RxFrontRing;
using netif::TxBackRing;
using netif::TxFrontRing;
using netif::TxRequest;
using netif::TxResponse;

struct alignas(4096) Page {
  uint8_t bytes[4096];
};

struct Pair {
  Page page{};
  TxFrontRing front;
  TxBackRing back;
  explicit Pair(uint32_t start = 0) {
    if (start == 0) {
      front.attach(&page, /*init=*/true);
    } else {
      front.attach_at(&page, start);
    }
    back.attach(&page);
  }
  // Frontend sends n requests with ids from `id`; returns the notify verdict.
  bool send(uint32_t n, uint16_t id = 0) {
    for (uint32_t i = 0; i < n; ++i) {
      TxRequest& r = front.next_request();
      r = TxRequest{100u + i, 0, 0, static_cast<uint16_t>(id + i), 60};
      front.commit_request();
    }
    return front.push_requests_and_check_notify();
  }
  // Backend answers every available request; returns the notify verdict.
  bool answer_all() {
    auto a = back.available_requests();
    EXPECT_FALSE(a.overflow);
    for (uint32_t i = 0; i < a.count; ++i) {
      TxRequest q = back.take_request();
      TxResponse& rsp = back.next_response();
      rsp = TxResponse{q.id, netif::kRspOkay};
      back.commit_response();
    }
    return back.push_responses_and_check_notify();
  }
};

TEST(Ring, SizesMatchXenHeaders) {
  EXPECT_EQ(TxFrontRing::kSize, 256u);
  EXPECT_EQ(RxFrontRing::kSize, 256u);
  EXPECT_EQ(TxFrontRing::kSize, static_cast<uint32_t>(__CONST_RING_SIZE(netif_tx, 4096)));
  EXPECT_EQ(RxFrontRing::kSize, static_cast<uint32_t>(__CONST_RING_SIZE(netif_rx, 4096)));
  // Byte-level: a request written through our type reads back through Xen's.
  Page page{};
  TxFrontRing f;
  f.attach(&page, true);
  f.next_request() = TxRequest{0x11223344, 0x55, netif::kTxMoreData, 0x77, 0x88};
  f.commit_request();
  EXPECT_TRUE(f.push_requests_and_check_notify());  // req_event starts at 1
  auto* xs = reinterpret_cast<netif_tx_sring*>(&page);
  EXPECT_EQ(xs->req_prod, 1u);
  EXPECT_EQ(xs->ring[0].req.gref, 0x11223344u);
  EXPECT_EQ(xs->ring[0].req.offset, 0x55);
  EXPECT_EQ(xs->ring[0].req.flags, NETTXF_more_data);
  EXPECT_EQ(xs->ring[0].req.id, 0x77);
  EXPECT_EQ(xs->ring[0].req.size, 0x88);
  EXPECT_EQ(xs->req_event, 1u);
  EXPECT_EQ(xs->rsp_event, 1u);
}

TEST(Ring, FirstPushNotifiesBecauseEventStartsAtOne) {
  Pair p;
  // SHARED_RING_INIT sets req_event = 1: the first request must notify.
  EXPECT_TRUE(p.send(1));
}

TEST(Ring, PushSuppressedWhenBackendIsNotWaiting) {
  Pair p;
  EXPECT_TRUE(p.send(1));
  // The backend has not re-armed (req_event still 1): more requests are
  // published silently.
  EXPECT_FALSE(p.send(3));
  EXPECT_FALSE(p.send(1));
  // The backend consumes all and re-arms with final check.
  auto a = p.back.available_requests();
  EXPECT_EQ(a.count, 5u);
  for (uint32_t i = 0; i < a.count; ++i)
    p.back.take_request();
  EXPECT_EQ(p.back.final_check_for_requests().count, 0u);
  EXPECT_EQ(p.back.header()->req_event, 6u);
  // Now the next push crosses req_event and must notify, exactly once.
  EXPECT_TRUE(p.send(2));
  EXPECT_FALSE(p.send(1));
}

TEST(Ring, FinalCheckSeesRequestsPublishedBeforeRearm) {
  Pair p;
  p.send(1);
  p.back.take_request();
  // Frontend publishes while the backend is between its check and re-arm:
  // final_check must find it instead of sleeping.
  p.send(1);
  auto a = p.back.final_check_for_requests();
  EXPECT_EQ(a.count, 1u);
  EXPECT_FALSE(a.overflow);
}

TEST(Ring, ResponseNotificationFollowsRspEvent) {
  Pair p;
  p.send(4);
  // Frontend asked for the first response (rsp_event = 1 at init).
  EXPECT_TRUE(p.answer_all());
  auto a = p.front.available_responses();
  ASSERT_EQ(a.count, 4u);
  for (int i = 0; i < 4; ++i)
    p.front.take_response();
  // Not re-armed yet: responses pushed now do not notify.
  p.send(2);
  EXPECT_FALSE(p.answer_all());
  a = p.front.final_check_for_responses();
  EXPECT_EQ(a.count, 2u);  // found without a notification
  p.front.take_response();
  p.front.take_response();
  EXPECT_EQ(p.front.final_check_for_responses().count, 0u);
  // Re-armed at cons + 1: the next response notifies.
  p.send(1);
  EXPECT_TRUE(p.answer_all());
}

TEST(Ring, BatchedResponseEventNotifiesOnlyAtThreshold) {
  Pair p;
  p.send(8);
  p.answer_all();
  auto a = p.front.available_responses();
  for (uint32_t i = 0; i < a.count; ++i)
    p.front.take_response();
  // Ask to hear only after 4 more responses (netfront-style batching).
  p.front.set_response_event(4);
  p.send(8);
  for (int i = 0; i < 3; ++i) {
    TxRequest q = p.back.take_request();
    p.back.next_response() = TxResponse{q.id, 0};
    p.back.commit_response();
    EXPECT_FALSE(p.back.push_responses_and_check_notify()) << i;
  }
  TxRequest q = p.back.take_request();
  p.back.next_response() = TxResponse{q.id, 0};
  p.back.commit_response();
  EXPECT_TRUE(p.back.push_responses_and_check_notify());
}

TEST(Ring, WrapsAroundAtTwoToThe32) {
  // Start 10 entries before the 32-bit indices wrap and run 3 ring lengths.
  Pair p(0xFFFFFFFFu - 9);
  uint32_t sent = 0, received = 0;
  uint16_t next_id = 0, expect_id = 0;
  for (int round = 0; round < 3 * 256 / 7 + 1; ++round) {
    uint32_t n = std::min<uint32_t>(7, p.front.free_requests());
    for (uint32_t i = 0; i < n; ++i) {
      TxRequest& r = p.front.next_request();
      r = TxRequest{0, 0, 0, next_id++, 60};
      p.front.commit_request();
    }
    sent += n;
    p.front.push_requests_and_check_notify();
    p.answer_all();
    auto a = p.front.available_responses();
    ASSERT_FALSE(a.overflow) << "round " << round;
    for (uint32_t i = 0; i < a.count; ++i) {
      TxResponse r = p.front.take_response();
      ASSERT_EQ(r.id, expect_id++);
    }
    received += a.count;
  }
  EXPECT_EQ(sent, received);
  EXPECT_GT(sent, 3u * 256u);
  // The indices really crossed zero.
  EXPECT_LT(p.front.rsp_cons(), 0xFFFFFFFFu - 9);
  EXPECT_EQ(p.front.free_requests(), 256u);
}

TEST(Ring, FullRingAtWrapBoundary) {
  Pair p(0xFFFFFFFFu - 100);
  for (uint32_t i = 0; i < 256; ++i) {
    ASSERT_FALSE(p.front.full());
    p.front.next_request() = TxRequest{0, 0, 0, static_cast<uint16_t>(i), 60};
    p.front.commit_request();
  }
  EXPECT_TRUE(p.front.full());
  EXPECT_EQ(p.front.free_requests(), 0u);
  p.front.push_requests_and_check_notify();
  auto a = p.back.available_requests();
  EXPECT_EQ(a.count, 256u);
  EXPECT_FALSE(a.overflow);
}

TEST(Ring, ResponseProducerOverflowIsAPeerError) {
  Pair p;
  p.send(4);
  // A hostile backend claims 300 responses (more than the ring holds).
  p.back.header()->rsp_prod = 300;
  auto a = p.front.available_responses();
  EXPECT_TRUE(a.overflow);
  EXPECT_EQ(a.count, 0u);
  // And one that claims more responses than requests we published.
  p.back.header()->rsp_prod = 5;
  a = p.front.available_responses();
  EXPECT_TRUE(a.overflow);
  // Exactly the outstanding number is fine.
  p.back.header()->rsp_prod = 4;
  a = p.front.available_responses();
  EXPECT_FALSE(a.overflow);
  EXPECT_EQ(a.count, 4u);
}

TEST(Ring, ResponseOverflowDetectedAcrossWrap) {
  Pair p(0xFFFFFFF0u);
  p.send(2);
  p.back.header()->rsp_prod = 0xFFFFFFF0u + 257;  // wraps past zero
  EXPECT_TRUE(p.front.available_responses().overflow);
}

TEST(Ring, RequestProducerOverflowIsAPeerError) {
  Pair p;
  // A hostile frontend claims 257 requests outstanding (netback: "Impossible
  // number of requests", fatal).
  p.front.header()->req_prod = 257;
  auto a = p.back.available_requests();
  EXPECT_TRUE(a.overflow);
  p.front.header()->req_prod = 256;
  a = p.back.available_requests();
  EXPECT_FALSE(a.overflow);
  EXPECT_EQ(a.count, 256u);
}

// Requests consumed but not answered: take the next `n` and answer none.
void consume(TxBackRing& back, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    back.take_request();
}
void answer(TxBackRing& back, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    back.next_response() = TxResponse{0, netif::kRspOkay};
    back.commit_response();
  }
  back.push_responses_and_check_notify();
}

TEST(Ring, RequestProducerMovedBackIsAPeerError) {
  Pair p;
  p.send(10);
  consume(p.back, 10);  // req_cons 10, rsp_prod_pvt 0
  // req_prod 5 is within RING_SIZE of rsp_prod_pvt, yet behind req_cons:
  // unbounded, "req_prod - req_cons" would be 2^32 - 5 requests.
  p.front.header()->req_prod = 5;
  auto a = p.back.available_requests();
  EXPECT_TRUE(a.overflow);
  EXPECT_EQ(a.count, 0u);
  a = p.back.final_check_for_requests();
  EXPECT_TRUE(a.overflow);
  EXPECT_EQ(a.count, 0u);
  // Back where it was: nothing unconsumed, no error.
  p.front.header()->req_prod = 10;
  a = p.back.available_requests();
  EXPECT_FALSE(a.overflow);
  EXPECT_EQ(a.count, 0u);
}

TEST(Ring, UnconsumedRequestsAreBoundedByTheResponseSpaceLeft) {
  // RING_HAS_UNCONSUMED_REQUESTS: min(req_prod - req_cons,
  // RING_SIZE - (req_cons - rsp_prod_pvt)); more is a peer error.
  for (uint32_t start : {0u, 0xFFFFFFFFu - 5}) {
    Pair p(start);
    p.send(10);
    consume(p.back, 10);
    answer(p.back, 4);  // 6 unanswered: room for 250 more requests
    p.front.header()->req_prod = start + 10 + 250;
    auto a = p.back.available_requests();
    EXPECT_FALSE(a.overflow) << start;
    EXPECT_EQ(a.count, 250u) << start;
    p.front.header()->req_prod = start + 10 + 251;
    a = p.back.available_requests();
    EXPECT_TRUE(a.overflow) << start;
    EXPECT_EQ(a.count, 0u) << start;
    // Every value of req_prod: the count never exceeds the bound.
    for (uint64_t v = 0; v <= 0xFFFFFFFFull; v += 0x10001ull) {
      p.front.header()->req_prod = static_cast<uint32_t>(v);
      a = p.back.available_requests();
      EXPECT_LE(a.count, 250u);
      if (a.overflow) {
        EXPECT_EQ(a.count, 0u);
      }
    }
  }
}

TEST(Ring, NotifyDecisionMatchesXenMacroEverywhere) {
  // Exhaustive check of the push-and-check arithmetic against ring.h's own
  // expression for old/new/event combinations around the wrap.
  const uint32_t bases[] = {0u, 100u, 0xFFFFFF00u, 0xFFFFFFFFu};
  for (uint32_t base : bases) {
    for (uint32_t adv = 1; adv <= 8; ++adv) {
      for (int32_t ev_off = -4; ev_off <= 12; ++ev_off) {
        Page page{};
        TxFrontRing f;
        f.attach_at(&page, base);
        auto* h = f.header();
        h->req_event = base + static_cast<uint32_t>(ev_off);
        for (uint32_t i = 0; i < adv; ++i) {
          f.next_request() = TxRequest{};
          f.commit_request();
        }
        const uint32_t old_prod = base, new_prod = base + adv, event = h->req_event;
        const bool want =
            static_cast<RING_IDX>(new_prod - event) < static_cast<RING_IDX>(new_prod - old_prod);
        EXPECT_EQ(f.push_requests_and_check_notify(), want)
            << "base " << base << " adv " << adv << " ev_off " << ev_off;
      }
    }
  }
}

}  // namespace
}  // namespace xpv
