// SPDX-License-Identifier: MIT
// RX hashing (hash.h): Toeplitz, the frame's hash input, the queue choice.
#include "netback/hash.h"

#include <cstring>

namespace xpv::netback {

uint32_t toeplitz_hash(const uint8_t* key, size_t keylen, const uint8_t* data, size_t len) {
  // Each input bit, from the most significant bit of the first byte, that is
  // set XORs in the 32 key bits starting at its own position. `window`
  // holds the key bits from the current position on (32 of them and the
  // next byte's 8 below), refilled one key byte per input byte.
  auto key_byte = [&](size_t i) -> uint64_t { return i < keylen ? key[i] : 0; };
  uint64_t window = 0;
  for (size_t i = 0; i < 5; ++i)
    window = (window << 8) | key_byte(i);  // 40 bits: bits 39..8 are the first 32
  uint32_t hash = 0;
  for (size_t n = 0; n < len; ++n) {
    const uint8_t b = data[n];
    for (int bit = 7; bit >= 0; --bit) {
      if (b & (1u << bit)) hash ^= static_cast<uint32_t>(window >> (bit + 1));
    }
    window = ((window << 8) | key_byte(n + 5)) & 0xFF'FFFF'FFFFull;
  }
  return hash;
}

namespace {

constexpr uint16_t kEthPIp = 0x0800;
constexpr uint16_t kEthPIpv6 = 0x86DD;
constexpr uint8_t kIpprotoTcp = 6;

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

}  // namespace

FrameHash hash_frame(uint32_t flags, const uint8_t* key, const uint8_t* f, uint32_t len) {
  using namespace netif;
  FrameHash h;
  if (len < 14) return h;
  const uint16_t proto = be16(f + 12);  // skb->protocol: a VLAN tag is not IP
  const uint8_t* l3 = f + 14;
  const uint32_t l3len = len - 14;
  uint8_t in[36];
  if (proto == kEthPIp) {
    // The quick rejection of xenvif_set_skb_hash(), then the dissector.
    if (!(flags & (kCtrlHashTypeIpv4 | kCtrlHashTypeIpv4Tcp))) return h;
    if (l3len < 20 || (l3[0] >> 4) != 4) return h;
    const uint32_t ihl = (l3[0] & 0xF) * 4u;
    if (ihl < 20 || ihl > l3len) return h;
    // ip_is_fragment(): more-fragments or an offset.
    const bool fragment = (be16(l3 + 6) & 0x3FFF) != 0;
    const bool tcp = l3[9] == kIpprotoTcp && !fragment;
    std::memcpy(in, l3 + 12, 8);  // saddr, daddr
    if (tcp && (flags & kCtrlHashTypeIpv4Tcp)) {
      // Ports the dissector cannot reach read as 0 (__skb_flow_get_ports).
      std::memset(in + 8, 0, 4);
      if (l3len >= ihl + 4) std::memcpy(in + 8, l3 + ihl, 4);
      h = {true, kCtrlHashTypeIpv4TcpBit, toeplitz_hash(key, kMaxHashKeySize, in, 12)};
    } else if (flags & kCtrlHashTypeIpv4) {
      h = {true, kCtrlHashTypeIpv4Bit, toeplitz_hash(key, kMaxHashKeySize, in, 8)};
    }
    return h;
  }
  if (proto == kEthPIpv6) {
    if (!(flags & (kCtrlHashTypeIpv6 | kCtrlHashTypeIpv6Tcp))) return h;
    if (l3len < 40 || (l3[0] >> 4) != 6) return h;
    // Walk the extension headers the dissector walks: hop-by-hop, routing
    // and destination options; a fragment header makes it a fragment.
    uint8_t next = l3[6];
    uint32_t off = 40;
    bool fragment = false;
    for (int guard = 0; guard < 8; ++guard) {
      if (next == 0 || next == 43 || next == 60) {
        if (l3len < off + 8) return h;  // the dissector fails: no hash
        const uint8_t nh = l3[off];
        off += (l3[off + 1] + 1u) * 8u;
        next = nh;
        continue;
      }
      if (next == 44) fragment = true;
      break;
    }
    std::memcpy(in, l3 + 8, 32);  // saddr, daddr
    const bool tcp = next == kIpprotoTcp && !fragment;
    if (tcp && (flags & kCtrlHashTypeIpv6Tcp)) {
      std::memset(in + 32, 0, 4);
      if (l3len >= off + 4) std::memcpy(in + 32, l3 + off, 4);
      h = {true, kCtrlHashTypeIpv6TcpBit, toeplitz_hash(key, kMaxHashKeySize, in, 36)};
    } else if (flags & kCtrlHashTypeIpv6) {
      h = {true, kCtrlHashTypeIpv6Bit, toeplitz_hash(key, kMaxHashKeySize, in, 32)};
    }
  }
  return h;
}

void HashState::set(const HashConfig& c) {
  // Seqlock writer (single writer): odd, fence, fields, even with release.
  const uint32_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  algorithm_.store(c.algorithm, std::memory_order_relaxed);
  flags_.store(c.flags, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kMaxHashKeySize; ++i)
    key_[i].store(c.key[i], std::memory_order_relaxed);
  size_.store(c.size, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kMaxHashMappingSize; ++i)
    mapping_[i].store(c.mapping[i], std::memory_order_relaxed);
  seq_.store(s + 2, std::memory_order_release);
}

Steering HashState::steer(const uint8_t* frame, uint32_t len, uint32_t num_queues) const {
  for (;;) {
    const uint32_t s = seq_.load(std::memory_order_acquire);
    Steering st;
    if (!(s & 1)) {
      if (algorithm_.load(std::memory_order_relaxed) == netif::kCtrlHashAlgorithmNone) {
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq_.load(std::memory_order_relaxed) == s) return st;
        continue;
      }
      st.hashing = true;
      const uint32_t flags = flags_.load(std::memory_order_relaxed);
      uint8_t key[kMaxHashKeySize];
      for (uint32_t i = 0; i < kMaxHashKeySize; ++i)
        key[i] = key_[i].load(std::memory_order_relaxed);
      st.hash = hash_frame(flags, key, frame, len);
      // skb_get_hash_raw(): 0 for a frame that got no hash.
      const uint32_t h = st.hash.valid ? st.hash.value : 0;
      const uint32_t size = size_.load(std::memory_order_relaxed);
      st.queue = size == 0 ? h % num_queues : mapping_[h % size].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq_.load(std::memory_order_relaxed) == s) {
        // Entries were checked against the queue count when set; a
        // reconnect with fewer queues resets the table (connect()).
        if (st.queue >= num_queues) st.queue = 0;
        return st;
      }
    }
  }
}

}  // namespace xpv::netback
