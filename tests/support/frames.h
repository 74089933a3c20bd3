// SPDX-License-Identifier: MIT
// Test frames: Ethernet + IPv4/IPv6 + TCP/UDP with a patterned payload, and
// the tests' own checksum arithmetic (RFC 1071, RFC 768, RFC 793, RFC 8200),
// written apart from what the code under test computes, so that a checksum
// is verified and not trusted.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace xpv::testing_frames {

inline uint16_t rd16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline void wr16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline uint32_t rd32(const uint8_t* p) {
  return uint32_t{rd16(p)} << 16 | rd16(p + 2);
}
inline void wr32(uint8_t* p, uint32_t v) {
  wr16(p, static_cast<uint16_t>(v >> 16));
  wr16(p + 2, static_cast<uint16_t>(v));
}

// The unfolded sum of 16-bit big-endian words, a trailing odd byte padded.
inline uint64_t add_words(const uint8_t* p, size_t n, uint64_t s = 0) {
  for (size_t i = 0; i + 1 < n; i += 2)
    s += rd16(p + i);
  if (n & 1) s += uint32_t{p[n - 1]} << 8;
  return s;
}
inline uint16_t fold16(uint64_t s) {
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

struct FrameSpec {
  bool ipv6 = false;
  bool tcp = true;
  uint32_t payload = 100;    // L4 payload bytes
  uint32_t seq = 1000;       // TCP sequence number
  uint8_t tcp_flags = 0x18;  // PSH | ACK
  uint8_t seed = 1;          // payload byte i = seed + i
  uint16_t ip_id = 7;
};

struct Layout {
  size_t l3 = 14, l4 = 0, l4_len = 0, csum = 0;
};

inline Layout layout_of(const FrameSpec& s) {
  Layout l;
  l.l4 = l.l3 + (s.ipv6 ? 40 : 20);
  l.l4_len = (s.tcp ? 20 : 8) + s.payload;
  l.csum = l.l4 + (s.tcp ? 16 : 6);
  return l;
}

// The folded pseudo-header sum (what a partial checksum field holds).
inline uint16_t pseudo_sum(const uint8_t* f, bool ipv6, bool tcp, size_t l4_len) {
  uint64_t s = ipv6 ? add_words(f + 14 + 8, 32) : add_words(f + 14 + 12, 8);
  s += tcp ? 6 : 17;
  s += l4_len;
  return fold16(s);
}

// A frame to 02:00:00:00:00:0b from 02:00:00:00:00:0a, its L4 checksum full
// or partial (the pseudo-header sum in the field, NETTXF_csum_blank).
inline std::vector<uint8_t> make_frame(const FrameSpec& s, bool partial) {
  const Layout l = layout_of(s);
  std::vector<uint8_t> f(l.l4 + l.l4_len, 0);
  const uint8_t dst[6] = {2, 0, 0, 0, 0, 0x0b}, src[6] = {2, 0, 0, 0, 0, 0x0a};
  std::memcpy(f.data(), dst, 6);
  std::memcpy(f.data() + 6, src, 6);
  wr16(&f[12], s.ipv6 ? 0x86dd : 0x0800);
  uint8_t* ip = &f[l.l3];
  if (s.ipv6) {
    ip[0] = 0x60;
    wr16(ip + 4, static_cast<uint16_t>(l.l4_len));
    ip[6] = s.tcp ? 6 : 17;
    ip[7] = 64;
    for (int i = 0; i < 16; ++i) {
      ip[8 + i] = static_cast<uint8_t>(0xfd + i);
      ip[24 + i] = static_cast<uint8_t>(0x20 + i);
    }
  } else {
    ip[0] = 0x45;
    wr16(ip + 2, static_cast<uint16_t>(20 + l.l4_len));
    wr16(ip + 4, s.ip_id);
    wr16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = s.tcp ? 6 : 17;
    wr32(ip + 12, 0x0a000001);
    wr32(ip + 16, 0x0a000002);
    wr16(ip + 10, static_cast<uint16_t>(~fold16(add_words(ip, 20))));
  }
  uint8_t* l4 = &f[l.l4];
  wr16(l4, 40000);
  wr16(l4 + 2, 5001);
  if (s.tcp) {
    wr32(l4 + 4, s.seq);
    wr32(l4 + 8, 77);
    l4[12] = 5 << 4;
    l4[13] = s.tcp_flags;
    wr16(l4 + 14, 65535);
  } else {
    wr16(l4 + 4, static_cast<uint16_t>(l.l4_len));
  }
  const size_t hdr = s.tcp ? 20 : 8;
  for (uint32_t i = 0; i < s.payload; ++i)
    l4[hdr + i] = static_cast<uint8_t>(s.seed + i);
  const uint16_t ps = pseudo_sum(f.data(), s.ipv6, s.tcp, l.l4_len);
  if (partial) {
    wr16(&f[l.csum], ps);
  } else {
    uint16_t c = static_cast<uint16_t>(~fold16(add_words(l4, l.l4_len, ps)));
    if (c == 0 && !s.tcp) c = 0xffff;
    wr16(&f[l.csum], c);
  }
  return f;
}

// Whether the frame's L4 checksum is right: full (complete == true) or the
// partial pseudo-header sum (complete == false). Parses the frame itself.
inline bool l4_checksum_ok(const std::vector<uint8_t>& f, bool complete) {
  if (f.size() < 14 + 20) return false;
  const bool ipv6 = rd16(&f[12]) == 0x86dd;
  const size_t l3 = 14;
  size_t l4 = 0, l4_len = 0;
  bool tcp = false;
  if (ipv6) {
    l4 = l3 + 40;
    l4_len = rd16(&f[l3 + 4]);
    tcp = f[l3 + 6] == 6;
  } else {
    l4 = l3 + (f[l3] & 0xf) * 4u;
    l4_len = rd16(&f[l3 + 2]) - (l4 - l3);
    tcp = f[l3 + 9] == 6;
    if (fold16(add_words(&f[l3], l4 - l3)) != 0xffff) return false;  // the IP header's own
  }
  if (l4 + l4_len > f.size()) return false;
  const size_t csum = l4 + (tcp ? 16 : 6);
  const uint16_t ps = pseudo_sum(f.data(), ipv6, tcp, l4_len);
  if (!complete) return rd16(&f[csum]) == ps;
  return fold16(add_words(&f[l4], l4_len, ps)) == 0xffff;
}

}  // namespace xpv::testing_frames
