// SPDX-License-Identifier: MIT
// xpv-netback's table of static grants (netif.h "Static Grants"): every
// registered gref finds its own page and mode, every other gref none: dense
// runs as a frontend registers its pools, random grefs, grefs near 0 and near
// 2^32.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <set>

#include "netback/static_grants.h"

namespace xpv {
namespace {

using netback::GrefTable;

// Checks the table built from `refs` against the map it came from, over the
// registered grefs, their neighbours and `probes` more.
void check(const std::set<grant_ref_t>& refs, const std::vector<grant_ref_t>& probes) {
  static std::array<uint8_t, 4096 * 8> pages{};
  std::map<grant_ref_t, GrefTable::Page> m;
  uint32_t i = 0;
  for (grant_ref_t r : refs) {
    m.emplace(r, GrefTable::Page{&pages[(i % 8) * 4096], i % 3 != 0});
    ++i;
  }
  const GrefTable t(m);
  EXPECT_EQ(t.size(), refs.size());
  std::vector<grant_ref_t> all(probes);
  for (grant_ref_t r : refs) {
    all.push_back(r);
    all.push_back(r - 1);
    all.push_back(r + 1);
  }
  for (grant_ref_t r : all) {
    const GrefTable::Page* p = t.find(r);
    const auto it = m.find(r);
    if (it == m.end()) {
      EXPECT_EQ(p, nullptr) << "gref " << r << " is not registered";
    } else {
      ASSERT_NE(p, nullptr) << "gref " << r << " is registered";
      EXPECT_EQ(p->data, it->second.data) << "gref " << r;
      EXPECT_EQ(p->writable, it->second.writable) << "gref " << r;
    }
  }
}

TEST(GrefTable, EmptyFindsNothing) {
  check({}, {0, 1, 8, 0xffffffffu});
}

TEST(GrefTable, DenseRunsAsAFrontendRegistersThem) {
  // Two pools of 256 consecutive grefs, a gap between them.
  std::set<grant_ref_t> refs;
  for (grant_ref_t r = 8; r < 8 + 256; ++r)
    refs.insert(r);
  for (grant_ref_t r = 300; r < 300 + 256; ++r)
    refs.insert(r);
  check(refs, {0, 7, 264, 299, 556, 100000, 0xffffffffu});
}

TEST(GrefTable, DenseNearTheEndsOfTheGrefSpace) {
  std::set<grant_ref_t> low, high;
  for (grant_ref_t r = 0; r < 16; ++r)
    low.insert(r);
  for (grant_ref_t r = 0xffffffffu - 15; r != 0; ++r)
    high.insert(r);
  check(low, {16, 0x80000000u, 0xffffffffu});
  check(high, {0, 1, 0xffffffffu - 16, 0x7fffffffu});
}

TEST(GrefTable, RandomGrefs) {
  std::mt19937 rng(7);
  std::set<grant_ref_t> refs;
  while (refs.size() < 512)
    refs.insert(static_cast<grant_ref_t>(rng()));
  std::vector<grant_ref_t> probes;
  for (int i = 0; i < 4096; ++i)
    probes.push_back(static_cast<grant_ref_t>(rng()));
  check(refs, probes);
  // Both ends of the gref space at once.
  check({0, 1, 2, 0xfffffffeu, 0xffffffffu}, {3, 0xfffffffdu, 0x80000000u});
}

}  // namespace
}  // namespace xpv
