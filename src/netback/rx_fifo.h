// SPDX-License-Identifier: MIT
// The packets waiting for the frontend's RX ring (Linux netback's per-queue
// rx_queue), bounded in bytes and in packets, allocated once per queue.
//
// Each packet is stored contiguously in a byte ring; a packet that does not
// fit before the end of the buffer starts again at its beginning. Only the
// queue's worker thread uses it, so it needs no lock (the bridge's inboxes
// use two of them under their own mutex).
#pragma once

#include <cstdint>
#include <memory>

#include "xpv/result.h"

namespace xpv::netback {

// What travels with a frame besides its bytes: netif flags (NETTXF_* in a
// bridge inbox, as the sender sent it; NETRXF_* in a queue's RX queue, as the
// receiver gets it) and its GSO extra, if it is a GSO frame.
struct FrameMeta {
  uint16_t flags = 0;
  uint8_t gso_type = 0;  // XEN_NETIF_GSO_TYPE_*
  uint16_t gso_size = 0;
  // The receiving vif's hash of the frame (hash.h), for its HASH extra.
  bool has_hash = false;
  uint8_t hash_type = 0;  // _XEN_NETIF_CTRL_HASH_TYPE_*
  uint32_t hash = 0;
};

class RxFifo {
 public:
  struct Packet {
    uint32_t offset = 0;
    uint32_t len = 0;
    FrameMeta meta;
    uint64_t enqueued_ns = 0;
  };

  // Allocates the storage (control path).
  Status init(uint32_t bytes, uint32_t packets);

  // Room for a packet of `len` bytes at the tail, or nullptr when the queue
  // is full. Fill it, then commit() it (or do not, to abandon it).
  // (Inline, with the other per-packet calls: no call per packet.)
  uint8_t* reserve(uint32_t len) {
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
  void commit(uint32_t len, const FrameMeta& meta, uint64_t now_ns) {
    // The tail's index, head_ + count_ modulo max_packets_ (both below it).
    uint32_t tail = head_ + count_;
    if (tail >= max_packets_) tail -= max_packets_;
    Packet& p = descs_[tail];
    p.offset = reserved_at_;
    p.len = len;
    p.meta = meta;
    p.enqueued_ns = now_ns;
    ++count_;
    write_ = reserved_at_ + len;
  }

  bool empty() const { return count_ == 0; }
  uint32_t size() const { return count_; }
  const Packet& front() const { return descs_[head_]; }
  const uint8_t* data(const Packet& p) const { return bytes_.get() + p.offset; }
  void pop() {
    if (count_ == 0) return;
    if (++head_ == max_packets_) head_ = 0;
    if (--count_ == 0) write_ = 0;
  }
  void clear();

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  std::unique_ptr<Packet[]> descs_;
  uint32_t capacity_ = 0;  // bytes
  uint32_t max_packets_ = 0;
  uint32_t head_ = 0;   // index of the oldest packet
  uint32_t count_ = 0;  // packets queued
  uint32_t write_ = 0;  // byte offset after the newest packet
  uint32_t reserved_at_ = 0;
};

}  // namespace xpv::netback
