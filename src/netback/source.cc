// SPDX-License-Identifier: MIT
// Source mode: RX traffic generated per queue.
//
// Frame: destination = the vif's mac, source 02:00:00:00:00:01, ethertype
// 0x88b5 (IEEE local experimental), a 64-bit sequence number in network
// byte order at offset 14, then byte i = (seq + i) & 0xff. Sequence numbers
// count every generated frame, so a frame dropped in the backend (queue
// full) shows as a gap.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "netback/batch.h"
#include "netback/queue.h"

namespace xpv::netback {

namespace {
constexpr uint32_t kMaxSourceFrame = 65535;  // config.cc's limit of --source-size
const std::array<uint8_t, 256 + kMaxSourceFrame> kRamp = [] {
  std::array<uint8_t, 256 + kMaxSourceFrame> r{};
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = static_cast<uint8_t>(i);
  return r;
}();
}  // namespace

void Queue::source_fill(uint8_t* frame, uint32_t len, uint64_t seq) const {
  static constexpr uint8_t kSrcMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  std::memcpy(frame, vif_.mac.data(), 6);
  std::memcpy(frame + 6, kSrcMac, 6);
  frame[12] = 0x88;
  frame[13] = 0xb5;
  // The sequence number big-endian, stored in one go.
  const uint64_t be = std::endian::native == std::endian::little ? __builtin_bswap64(seq) : seq;
  std::memcpy(frame + 14, &be, sizeof be);
  // Byte i is (seq + i) mod 256: a slice of a ramp 0, 1, ..., 255, 0, ...
  // copied in one go, as a generator copies a prepared template.
  copy_frame_bytes(frame + 22, kRamp.data() + ((seq + 22) & 0xff), len - 22);
}

bool Queue::source_generate(uint64_t now) {
  if (stalled_ || stall_rx_active_) return false;
  const uint64_t limit = cfg_.source_count;
  if (limit != 0 && source_seq_ >= limit) return false;
  const uint32_t size = cfg_.source_size;
  uint64_t budget = kRxBatchPackets;
  // --source-rate's spacing of frames (0: as fast as the ring allows).
  const uint64_t period =
      cfg_.source_rate ? std::max<uint64_t>(1, 1'000'000'000 / cfg_.source_rate) : 0;
  if (period == 0) {
    // As fast as the ring allows: as many frames as the posted requests can
    // take beyond what is already queued.
    const auto a = rx_requests();
    if (a.overflow) return false;
    const uint32_t per =
        (size + static_cast<uint32_t>(kPageSize) - 1) / static_cast<uint32_t>(kPageSize);
    const uint64_t fits = a.count / per;
    budget = fits > fifo_.size() ? std::min<uint64_t>(fits - fifo_.size(), budget) : 0;
    if (budget == 0) {
      if (fifo_.empty() && !cfg_.busy_poll) {
        // Hear about the frontend's next request.
        rx_arm_event(rx_.req_cons() + a.count);
        if (rx_requests().count / per > 0) return true;
      }
      return false;
    }
  } else {
    if (now < source_next_ns_) return false;
    // After a long pause, start again rather than burst.
    if (now - source_next_ns_ > 1'000'000'000) source_next_ns_ = now;
    budget = std::min<uint64_t>(budget, (now - source_next_ns_) / period + 1);
  }
  if (limit != 0) budget = std::min(budget, limit - source_seq_);
  if (budget == 0) return false;
  uint64_t dropped = 0;
  const uint64_t first = source_seq_;
  for (uint64_t seq = first; seq != first + budget; ++seq) {
    uint8_t* f = fifo_.reserve(size);
    if (f) {
      source_fill(f, size, seq);
      fifo_.commit(size, FrameMeta{}, now);
    } else {
      ++dropped;
    }
  }
  source_seq_ = first + budget;
  if (dropped) ctr_.rx_dropped_queue_full.add(dropped);
  source_next_ns_ += budget * period;
  return true;
}

}  // namespace xpv::netback
