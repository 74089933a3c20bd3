// SPDX-License-Identifier: MIT
// Grant buffer pools: granted once, slots reused, every page accounted for.
#include <gtest/gtest.h>

#include <set>

#include "grant/buffer_pool.h"
#include "sim/client.h"
#include "sim/hypervisor.h"

namespace xpv {
namespace {

struct PoolFixture : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Platform> dom0, domu;
  std::unique_ptr<GrantSharer> sharer;
  std::unique_ptr<GrantMapper> mapper;
  void SetUp() override {
    hv = std::move(*sim::Hypervisor::create({4096, 1024}));
    dom0 = std::move(*sim::local_platform(*hv, true));
    domu = std::move(*sim::local_platform(*hv, false));
    sharer = std::move(*domu->open_grant_sharer());
    mapper = std::move(*dom0->open_grant_mapper());
  }
};

TEST_F(PoolFixture, SlotsAreGrantedOnceAndReused) {
  auto pool = BufferPool::create(*sharer, kDom0, 256, /*writable=*/true);
  ASSERT_TRUE(pool) << pool.error().message;
  BufferPool& p = **pool;
  EXPECT_EQ(p.size(), 256u);
  EXPECT_EQ(hv->stats().grants_active, 256u);
  std::set<uint32_t> seen;
  uint32_t s;
  while (p.alloc(&s)) {
    EXPECT_TRUE(seen.insert(s).second) << "slot handed out twice";
    EXPECT_NE(p.data(s), nullptr);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(p.available(), 0u);
  for (uint32_t x : seen)
    p.free(x);
  EXPECT_EQ(p.available(), 256u);
  // Thousands of alloc/free cycles perform no grant operation.
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(p.alloc(&s));
    p.free(s);
  }
  EXPECT_EQ(hv->stats().grants_active, 256u);
  // A slot's page is what the backend sees through its grant.
  ASSERT_TRUE(p.alloc(&s));
  std::memset(p.data(s), 0x4E, kPageSize);
  auto m = mapper->map(domu->self_domid(), p.ref(s), false);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->data()[123], 0x4E);
}

// Takes every free slot; fails the test if one is handed out twice.
std::set<uint32_t> drain(BufferPool& p) {
  std::set<uint32_t> seen;
  uint32_t s;
  while (p.alloc(&s)) {
    EXPECT_TRUE(seen.insert(s).second) << "slot " << s << " handed out twice";
    if (seen.size() > p.size()) break;
  }
  return seen;
}

TEST_F(PoolFixture, ASlotHandedBackTwiceIsRefusedAndCounted) {
  auto pool = BufferPool::create(*sharer, kDom0, 8, true);
  ASSERT_TRUE(pool);
  BufferPool& p = **pool;
  uint32_t a = 0, b = 0;
  ASSERT_TRUE(p.alloc(&a));
  ASSERT_TRUE(p.alloc(&b));
  p.free(a);
  p.free(a);  // again: refused
  EXPECT_EQ(p.double_frees(), 1u);
  EXPECT_EQ(p.available(), 7u);
  // Twice in one bulk return, once more for a slot already free, and an id
  // that is no slot of this pool.
  const uint32_t back[] = {b, b, a, 8, 0xFFFFFFFFu};
  p.free_bulk(back, 5);
  EXPECT_EQ(p.double_frees(), 5u);
  EXPECT_EQ(p.available(), 8u);
  // The pool is intact: eight distinct slots, each page its own.
  auto seen = drain(p);
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(p.available(), 0u);
  // Bulk allocation marks slots as taken too: each comes back exactly once.
  std::vector<uint32_t> all(seen.begin(), seen.end());
  p.free_bulk(all.data(), 8);
  EXPECT_EQ(p.double_frees(), 5u);
  uint32_t got[8];
  ASSERT_EQ(p.alloc_bulk(got, 8), 8u);
  p.free_bulk(got, 8);
  p.free_bulk(got, 8);
  EXPECT_EQ(p.double_frees(), 13u);
  EXPECT_EQ(drain(p).size(), 8u);
}

TEST_F(PoolFixture, ASlotHandedBackAfterTeardownIsRefused) {
  auto pool = BufferPool::create(*sharer, kDom0, 4, true);
  ASSERT_TRUE(pool);
  uint32_t a = 0;
  ASSERT_TRUE((*pool)->alloc(&a));
  (*pool)->teardown();
  (*pool)->free(a);
  uint32_t s = 0;
  EXPECT_FALSE((*pool)->alloc(&s));  // its page's access has ended
  EXPECT_EQ((*pool)->double_frees(), 1u);
}

TEST_F(PoolFixture, LocateFindsSlotAndOffset) {
  auto pool = BufferPool::create(*sharer, kDom0, 4, false);
  ASSERT_TRUE(pool);
  uint32_t slot = 0, off = 0;
  EXPECT_TRUE((*pool)->locate((*pool)->data(2) + 100, &slot, &off));
  EXPECT_EQ(slot, 2u);
  EXPECT_EQ(off, 100u);
  int x = 0;
  EXPECT_FALSE((*pool)->locate(&x, &slot, &off));
}

TEST_F(PoolFixture, TeardownAccountsForEveryPage) {
  auto pool = BufferPool::create(*sharer, kDom0, 16, true);
  ASSERT_TRUE(pool);
  uint32_t a, b;
  ASSERT_TRUE((*pool)->alloc(&a));
  ASSERT_TRUE((*pool)->alloc(&b));
  auto m = mapper->map(domu->self_domid(), (*pool)->ref(b), true);
  ASSERT_TRUE(m);
  PoolTeardownReport r = (*pool)->teardown();
  EXPECT_EQ(r.pages, 16u);
  EXPECT_EQ(r.returned, 15u);
  EXPECT_EQ(r.still_mapped, 1u);
  EXPECT_EQ(r.in_use, 2u);
  EXPECT_EQ(r.returned + r.still_mapped, r.pages);
  EXPECT_EQ(hv->stats().grants_active, 1u);
  m->reset();
  // The deferred page is released on the sharer's next operation.
  auto again = BufferPool::create(*sharer, kDom0, 1, true);
  ASSERT_TRUE(again);
  EXPECT_EQ(hv->stats().grants_active, 1u);
}

TEST_F(PoolFixture, TooLargeAPoolIsAClearError) {
  auto pool = BufferPool::create(*sharer, kDom0, 5000, true);
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().message.find("granting a 5000-page buffer pool"), std::string::npos)
      << pool.error().message;
}

}  // namespace
}  // namespace xpv
