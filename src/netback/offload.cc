// SPDX-License-Identifier: MIT
#include "netback/offload.h"

#include <algorithm>
#include <cstring>

namespace xpv::netback {

namespace {

constexpr uint32_t kEthHlen = 14;
constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthVlan = 0x8100;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kTcpFin = 0x01;
constexpr uint8_t kTcpPsh = 0x08;
constexpr uint8_t kTcpCwr = 0x80;

uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// The one's complement sum of big-endian 16-bit words (RFC 1071), unfolded.
uint64_t sum_words(const uint8_t* p, uint32_t n, uint64_t acc = 0) {
  for (; n >= 2; p += 2, n -= 2)
    acc += get16(p);
  if (n) acc += uint32_t{p[0]} << 8;
  return acc;
}
uint16_t fold(uint64_t s) {
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// The full checksum of the L4 part of `f` whose field holds the partial sum.
uint16_t full_from_partial(const uint8_t* f, const L4Layout& l) {
  uint16_t c = static_cast<uint16_t>(~fold(sum_words(f + l.l4_off, l.l4_len)));
  if (c == 0 && !l.tcp) c = 0xffff;  // RFC 768: a UDP checksum of 0 means none
  return c;
}

}  // namespace

bool find_l4(const uint8_t* f, uint32_t len, L4Layout* out) {
  L4Layout l;
  if (len < kEthHlen) return false;
  uint32_t off = 12;
  uint16_t type = get16(f + off);
  if (type == kEthVlan) {
    if (len < kEthHlen + 4) return false;
    off += 4;
    type = get16(f + off);
  }
  l.l3_off = off + 2;
  uint8_t proto = 0;
  uint32_t l3_end = 0;  // where the IP datagram ends
  if (type == kEthIpv4) {
    if (len < l.l3_off + 20) return false;
    const uint8_t* ip = f + l.l3_off;
    const uint32_t ihl = (ip[0] & 0xf) * 4u;
    if ((ip[0] >> 4) != 4 || ihl < 20 || len < l.l3_off + ihl) return false;
    if (get16(ip + 6) & 0x3fff) return false;  // a fragment: no L4 header to speak of
    proto = ip[9];
    l.l4_off = l.l3_off + ihl;
    l3_end = l.l3_off + get16(ip + 2);
  } else if (type == kEthIpv6) {
    if (len < l.l3_off + 40) return false;
    const uint8_t* ip = f + l.l3_off;
    if ((ip[0] >> 4) != 6) return false;
    proto = ip[6];
    l.l4_off = l.l3_off + 40;
    l3_end = l.l4_off + get16(ip + 4);
    l.ipv6 = true;
  } else {
    return false;
  }
  if (proto != kProtoTcp && proto != kProtoUdp) return false;
  l.tcp = proto == kProtoTcp;
  if (l3_end > len || l3_end < l.l4_off) return false;
  l.l4_len = l3_end - l.l4_off;
  if (l.tcp) {
    if (l.l4_len < 20) return false;
    l.l4_hdr_len = (f[l.l4_off + 12] >> 4) * 4u;
    if (l.l4_hdr_len < 20 || l.l4_hdr_len > l.l4_len) return false;
  } else {
    if (l.l4_len < 8) return false;
    l.l4_hdr_len = 8;
  }
  *out = l;
  return true;
}

uint16_t pseudo_header_sum(const uint8_t* f, const L4Layout& l, uint32_t l4_len) {
  const uint8_t* ip = f + l.l3_off;
  uint64_t s = l.ipv6 ? sum_words(ip + 8, 32) : sum_words(ip + 12, 8);
  s += l.tcp ? kProtoTcp : kProtoUdp;
  s += l4_len >> 16;
  s += l4_len & 0xffff;
  return fold(s);
}

bool complete_checksum(uint8_t* f, uint32_t len) {
  L4Layout l;
  if (!find_l4(f, len, &l)) return false;
  put16(f + l.csum_off(), full_from_partial(f, l));
  return true;
}

bool checksum_ok(const uint8_t* f, uint32_t len) {
  L4Layout l;
  if (!find_l4(f, len, &l)) return false;
  if (!l.tcp && !l.ipv6 && get16(f + l.csum_off()) == 0) return true;  // IPv4 UDP: none sent
  return fold(sum_words(f + l.l4_off, l.l4_len, pseudo_header_sum(f, l, l.l4_len))) == 0xffff;
}

bool TcpSegmenter::init(const uint8_t* frame, uint32_t len, uint16_t mss) {
  L4Layout l;
  if (mss == 0 || !find_l4(frame, len, &l) || !l.tcp) return false;
  f_ = frame;
  l_ = l;
  hdr_ = l.l4_off + l.l4_hdr_len;
  payload_ = l.l4_len - l.l4_hdr_len;
  mss_ = mss;
  count_ = payload_ ? (payload_ + mss - 1) / mss : 1;
  return true;
}

uint32_t TcpSegmenter::size(uint32_t i) const {
  return hdr_ + std::min(mss_, payload_ - std::min(payload_, i * mss_));
}

void TcpSegmenter::build(uint32_t i, uint8_t* out, bool partial_checksum) const {
  const uint32_t off = i * mss_;
  const uint32_t n = std::min(mss_, payload_ - std::min(payload_, off));
  std::memcpy(out, f_, hdr_);
  std::memcpy(out + hdr_, f_ + hdr_ + off, n);
  const uint32_t l4_len = l_.l4_hdr_len + n;
  uint8_t* ip = out + l_.l3_off;
  if (l_.ipv6) {
    put16(ip + 4, static_cast<uint16_t>(l4_len));
  } else {
    const uint32_t ihl = l_.l4_off - l_.l3_off;
    put16(ip + 2, static_cast<uint16_t>(ihl + l4_len));
    put16(ip + 4, static_cast<uint16_t>(get16(f_ + l_.l3_off + 4) + i));  // ids count up
    put16(ip + 10, 0);
    put16(ip + 10, static_cast<uint16_t>(~fold(sum_words(ip, ihl))));
  }
  uint8_t* tcp = out + l_.l4_off;
  put32(tcp + 4, get32(f_ + l_.l4_off + 4) + off);
  if (i + 1 < count_) tcp[13] &= static_cast<uint8_t>(~(kTcpFin | kTcpPsh));
  if (i > 0) tcp[13] &= static_cast<uint8_t>(~kTcpCwr);
  put16(tcp + 16, pseudo_header_sum(out, l_, l4_len));
  if (!partial_checksum) {
    L4Layout seg = l_;
    seg.l4_len = l4_len;
    put16(tcp + 16, full_from_partial(out, seg));
  }
}

}  // namespace xpv::netback
