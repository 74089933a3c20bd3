// SPDX-License-Identifier: MIT
// xpv-pktgen's payload patterns (examples/packet.h): what its byte-by-byte
// check can see. The static-grants check (tests/integration/static_grants.sh)
// relies on --pattern varied telling apart the pages of one frame and frames
// whose numbers differ by a multiple of 256, which the ramp cannot.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "../examples/packet.h"

namespace {

constexpr uint32_t kFrom = pkt::kEthLen + 8;  // after a raw frame's sequence number
constexpr uint32_t kLen = 3 * 4096 + 100;     // three pages and a bit

std::vector<uint8_t> frame(uint64_t seq, pkt::Pattern pat) {
  std::vector<uint8_t> f(kLen, 0);
  pkt::pattern(f.data(), kFrom, kLen, seq, pat);
  return f;
}

// The second and third pages of a frame swapped: what a copy into or out of
// the wrong page of one frame would deliver.
std::vector<uint8_t> pages_swapped(std::vector<uint8_t> f) {
  std::swap_ranges(f.begin() + 4096, f.begin() + 8192, f.begin() + 8192);
  return f;
}

TEST(PktgenPattern, RampCannotTellPagesOrFrames256ApartButVariedCan) {
  // The ramp repeats every 256 bytes and every 256 frames.
  EXPECT_EQ(pages_swapped(frame(7, pkt::Pattern::kRamp)), frame(7, pkt::Pattern::kRamp));
  EXPECT_EQ(frame(7, pkt::Pattern::kRamp), frame(7 + 256, pkt::Pattern::kRamp));
  for (uint64_t n = 0; n < 4; ++n) {  // each of the four varied patterns
    SCOPED_TRACE(n);
    const uint64_t seq = (uint64_t{2} << 48) | (1000 + n);
    const auto f = frame(seq, pkt::Pattern::kVaried);
    EXPECT_NE(pages_swapped(f), f);
    // A frame 256 or 65536 numbers later, of the same kind (n % 4 equal).
    EXPECT_NE(frame(seq + 256, pkt::Pattern::kVaried), f);
    EXPECT_NE(frame(seq + 65536, pkt::Pattern::kVaried), f);
    // Any shift by a whole number of bytes inside the frame shows.
    for (uint32_t shift : {1u, 2u, 8u, 256u, 4096u}) {
      EXPECT_FALSE(std::equal(f.begin() + kFrom, f.end() - shift, f.begin() + kFrom + shift))
          << "shift " << shift;
    }
  }
}

TEST(PktgenPattern, RampIsUnchangedAndVariedHasFourKinds) {
  // The default stays (seq + i) & 0xff: what xpv-netback --mode source sends.
  const auto r = frame(5, pkt::Pattern::kRamp);
  for (uint32_t i = kFrom; i < kLen; ++i)
    ASSERT_EQ(r[i], static_cast<uint8_t>(5 + i)) << i;
  // Four frames in a row: four different patterns, none of them the ramp.
  std::vector<std::vector<uint8_t>> k;
  for (uint64_t n = 8; n < 12; ++n) {
    k.push_back(frame(n, pkt::Pattern::kVaried));
    EXPECT_NE(k.back(), frame(n, pkt::Pattern::kRamp)) << n;
  }
  for (size_t a = 0; a < k.size(); ++a) {
    for (size_t b = a + 1; b < k.size(); ++b)
      EXPECT_NE(k[a], k[b]) << a << " " << b;
  }
}

}  // namespace
