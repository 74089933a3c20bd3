// SPDX-License-Identifier: MIT
// RX hashing, as Linux netback's hash.c and xenvif_select_queue() do it:
// what the frontend configured through the control ring (algorithm, hash
// types, Toeplitz key, mapping table), the Toeplitz hash of netif.h, and the
// choice of the RX queue a frame goes to.
//
// Threads. The vif's control ring thread is the only writer (set()); every
// queue worker that delivers a frame to this vif reads (steer()). The state
// is a seqlock over atomics: a reader copies what it needs, computes, and
// retries when a write overlapped; no lock, no allocation per packet.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ring/netif_ctrl.h"

namespace xpv::netback {

// Linux netback's limits (XEN_NETBK_MAX_HASH_KEY_SIZE,
// XEN_NETBK_MAX_HASH_MAPPING_SIZE).
inline constexpr uint32_t kMaxHashKeySize = 40;
inline constexpr uint32_t kMaxHashMappingSize = 128;
// The hash types netback computes (xenvif_get_hash_flags).
inline constexpr uint32_t kSupportedHashTypes =
    netif::kCtrlHashTypeIpv4 | netif::kCtrlHashTypeIpv4Tcp | netif::kCtrlHashTypeIpv6 |
    netif::kCtrlHashTypeIpv6Tcp;

// netif.h's Toeplitz hash (xen_netif_toeplitz_hash): key bytes beyond
// `keylen` count as zero.
uint32_t toeplitz_hash(const uint8_t* key, size_t keylen, const uint8_t* data, size_t len);

// What the control ring set.
struct HashConfig {
  uint32_t algorithm = netif::kCtrlHashAlgorithmNone;
  uint32_t flags = 0;  // XEN_NETIF_CTRL_HASH_TYPE_*
  std::array<uint8_t, kMaxHashKeySize> key{};
  uint32_t size = 0;  // mapping entries in use
  std::array<uint32_t, kMaxHashMappingSize> mapping{};
};

// A frame's hash (xenvif_set_skb_hash): `type` is the
// _XEN_NETIF_CTRL_HASH_TYPE_* bit number it was computed for.
struct FrameHash {
  bool valid = false;
  uint8_t type = 0;
  uint32_t value = 0;
};

// The hash of an Ethernet frame under `flags` and `key`, as Linux's flow
// dissector and xenvif_set_skb_hash() compute it: untagged IPv4/IPv6 only;
// the TCP type for TCP that is no fragment (when enabled), else the address
// type (when enabled); none otherwise.
FrameHash hash_frame(uint32_t flags, const uint8_t* key, const uint8_t* frame, uint32_t len);

// Where a frame goes.
struct Steering {
  bool hashing = false;  // an algorithm is set: `queue` is the hash's choice
  uint32_t queue = 0;
  FrameHash hash;  // valid: the frame carries it (a HASH extra)
};

class HashState {
 public:
  // The control ring thread.
  void set(const HashConfig& c);
  // xenvif_select_queue() for a vif of `num_queues` queues: with no
  // algorithm, hashing is off (the caller picks); else mapping[hash % size],
  // or hash % num_queues while the table is empty.
  Steering steer(const uint8_t* frame, uint32_t len, uint32_t num_queues) const;

 private:
  std::atomic<uint32_t> seq_{0};  // odd while set() writes
  std::atomic<uint32_t> algorithm_{netif::kCtrlHashAlgorithmNone};
  std::atomic<uint32_t> flags_{0};
  std::array<std::atomic<uint8_t>, kMaxHashKeySize> key_{};
  std::atomic<uint32_t> size_{0};
  std::array<std::atomic<uint32_t>, kMaxHashMappingSize> mapping_{};
};

}  // namespace xpv::netback
