// SPDX-License-Identifier: MIT
// What Linux's stack does to a frame on its way to a netdev that lacks an
// offload, for xpv-netback's frontends: complete a partial checksum
// (skb_checksum_help) and cut a GSO frame into MSS-sized TCP segments
// (inet_gso_segment / ipv6_gso_segment / tcp_gso_segment).
//
// A partial checksum (netif.h NETTXF_csum_blank / NETRXF_csum_blank, Linux's
// CHECKSUM_PARTIAL) is the TCP/UDP checksum field holding the folded
// pseudo-header sum over the addresses, the protocol and the L4 length; the
// full checksum is then the complement of the sum over the L4 header and data
// with the field as it is.
#pragma once

#include <cstdint>

namespace xpv::netback {

// Where a frame's headers are: Ethernet (with at most one 802.1Q tag), IPv4
// (any header length) or IPv6 (TCP or UDP right after its fixed header), and
// TCP or UDP.
struct L4Layout {
  uint32_t l3_off = 0;
  uint32_t l4_off = 0;
  uint32_t l4_len = 0;  // from the IP header (the frame may be padded)
  uint32_t l4_hdr_len = 0;
  bool ipv6 = false;
  bool tcp = false;
  uint32_t csum_off() const { return l4_off + (tcp ? 16 : 6); }
};
bool find_l4(const uint8_t* f, uint32_t len, L4Layout* out);

// The folded pseudo-header sum of `l` for an L4 length of `l4_len`.
uint16_t pseudo_header_sum(const uint8_t* f, const L4Layout& l, uint32_t l4_len);

// Replaces a partial checksum by the full one. false (nothing changed) when
// the frame is not TCP/UDP over IP.
bool complete_checksum(uint8_t* f, uint32_t len);

// True when the frame's TCP/UDP checksum is right (a full checksum).
bool checksum_ok(const uint8_t* f, uint32_t len);

// A GSO frame (TCP, its checksum partial) cut into segments of at most `mss`
// payload bytes: sizes first (to reserve room), then each built into a
// buffer. Each segment: the headers copied, the IPv4 total length, id and
// header checksum or the IPv6 payload length set, the TCP sequence number
// advanced, FIN and PSH on the last segment only, CWR on the first only; its
// checksum partial (for a frontend that does checksum offload) or full.
class TcpSegmenter {
 public:
  // false when the frame is not TCP over IP, or the MSS is 0.
  bool init(const uint8_t* frame, uint32_t len, uint16_t mss);
  uint32_t count() const { return count_; }
  uint32_t size(uint32_t i) const;
  void build(uint32_t i, uint8_t* out, bool partial_checksum) const;

 private:
  const uint8_t* f_ = nullptr;
  L4Layout l_;
  uint32_t hdr_ = 0;      // bytes of headers (L2 + L3 + L4)
  uint32_t payload_ = 0;  // TCP payload bytes
  uint32_t mss_ = 0;
  uint32_t count_ = 0;
};

}  // namespace xpv::netback
