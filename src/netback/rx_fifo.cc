// SPDX-License-Identifier: MIT
#include "netback/rx_fifo.h"

namespace xpv::netback {

Status RxFifo::init(uint32_t bytes, uint32_t packets) {
  if (bytes < 65536 || packets == 0) return make_error(EINVAL, "RX queue too small");
  // new[] without value-initialisation: the pages are touched only when used.
  bytes_.reset(new uint8_t[bytes]);
  descs_.reset(new Packet[packets]);
  capacity_ = bytes;
  max_packets_ = packets;
  clear();
  return {};
}

uint8_t* RxFifo::reserve(uint32_t len) {
  if (len == 0 || len > capacity_ || count_ == max_packets_) return nullptr;
  if (count_ == 0) {
    reserved_at_ = 0;
    return bytes_.get();
  }
  const uint32_t begin = descs_[head_].offset;  // oldest byte still in use
  if (write_ > begin) {
    // [begin, write_) in use: room after write_, else before begin.
    if (capacity_ - write_ >= len) {
      reserved_at_ = write_;
    } else if (begin >= len) {
      reserved_at_ = 0;
    } else {
      return nullptr;
    }
  } else {
    // Wrapped: [begin, end) and [0, write_) in use, room in [write_, begin).
    if (begin - write_ < len) return nullptr;
    reserved_at_ = write_;
  }
  return bytes_.get() + reserved_at_;
}

void RxFifo::commit(uint32_t len, const FrameMeta& meta, uint64_t now_ns) {
  Packet& p = descs_[(head_ + count_) % max_packets_];
  p.offset = reserved_at_;
  p.len = len;
  p.meta = meta;
  p.enqueued_ns = now_ns;
  ++count_;
  write_ = reserved_at_ + len;
}

void RxFifo::pop() {
  if (count_ == 0) return;
  head_ = (head_ + 1) % max_packets_;
  if (--count_ == 0) write_ = 0;
}

void RxFifo::clear() {
  head_ = count_ = write_ = reserved_at_ = 0;
}

}  // namespace xpv::netback
