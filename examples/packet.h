// SPDX-License-Identifier: MIT
// Building and checking the frames xpv-pktgen sends: raw numbered frames,
// IPv4/UDP frames, ARP and ICMP echo (RFC 826, RFC 791, RFC 768, RFC 792).
#pragma once

#include <cstdint>
#include <cstring>

#include "xpv/netfront.h"

namespace pkt {

constexpr uint16_t kEthRaw = 0x88b5;  // IEEE local experimental ethertype
constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthArp = 0x0806;
constexpr uint32_t kEthLen = 14;
constexpr uint32_t kIpLen = 20;
constexpr uint32_t kUdpLen = 8;
constexpr uint32_t kIcmpLen = 8;

inline void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
inline uint32_t get32(const uint8_t* p) {
  return uint32_t{get16(p)} << 16 | get16(p + 2);
}
inline void put64(uint8_t* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
inline uint64_t get64(const uint8_t* p) {
  return uint64_t{get32(p)} << 32 | get32(p + 4);
}

// The Internet checksum (RFC 1071).
inline uint16_t checksum(const uint8_t* p, uint32_t len, uint32_t sum = 0) {
  for (uint32_t i = 0; i + 1 < len; i += 2)
    sum += get16(p + i);
  if (len & 1) sum += uint32_t{p[len - 1]} << 8;
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

inline void eth(uint8_t* p, const xpv::MacAddr& dst, const xpv::MacAddr& src, uint16_t type) {
  std::memcpy(p, dst.data(), 6);
  std::memcpy(p + 6, src.data(), 6);
  put16(p + 12, type);
}

// IPv4 header at p (no options), total length `len` bytes from p.
inline void ipv4(uint8_t* p, uint32_t src, uint32_t dst, uint8_t proto, uint32_t len, uint16_t id) {
  p[0] = 0x45;
  p[1] = 0;
  put16(p + 2, static_cast<uint16_t>(len));
  put16(p + 4, id);
  put16(p + 6, 0x4000);  // don't fragment
  p[8] = 64;
  p[9] = proto;
  put16(p + 10, 0);
  put32(p + 12, src);
  put32(p + 16, dst);
  put16(p + 10, checksum(p, kIpLen));
}

// Where the sequence number and pattern start for each kind of frame.
enum class Proto { kRaw, kUdp };
inline uint32_t payload_offset(Proto p) {
  return p == Proto::kRaw ? kEthLen : kEthLen + kIpLen + kUdpLen;
}

// What follows a numbered frame's sequence number, byte i of the frame
// (counted from the frame's start) up to its end:
//  kRamp    (seq + i) & 0xff, what xpv-netback --mode source sends. It
//           repeats every 256 bytes and every 256 frames: it cannot tell the
//           pages (4096 bytes) of one frame apart, nor frame n from n + 256.
//  kVaried  one of four patterns, by the frame's number n (seq's low 48
//           bits), each keyed by h = the top byte(s) of seq * 2^64/phi, so
//           that no shift within 64 KiB and no other frame leaves a frame
//           unchanged: n % 4 == 0 (h + i + i / 256) & 0xff; 1 xorshift64
//           bytes seeded by seq; 2 16-bit big-endian words (h16 + i / 2) at
//           even i; 3 (~(h + i) + i / 256) & 0xff.
enum class Pattern { kRamp, kVaried };

// Writes the pattern of frame `seq` into p[from, len) (from >= 8 past the
// payload offset: the sequence number comes first).
inline void pattern(uint8_t* p, uint32_t from, uint32_t len, uint64_t seq, Pattern pat) {
  if (pat == Pattern::kRamp) {
    for (uint32_t i = from; i < len; ++i)
      p[i] = static_cast<uint8_t>(seq + i);
    return;
  }
  const uint64_t key = seq * 0x9E3779B97F4A7C15ull;
  const uint32_t h = static_cast<uint32_t>(key >> 56);
  switch (seq & 3) {
    case 0:
      for (uint32_t i = from; i < len; ++i)
        p[i] = static_cast<uint8_t>(h + i + i / 256);
      break;
    case 1: {
      uint64_t x = key | 1;
      for (uint32_t i = from; i < len; ++i) {
        if ((i - from) % 8 == 0) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
        }
        p[i] = static_cast<uint8_t>(x >> (8 * ((i - from) % 8)));
      }
      break;
    }
    case 2: {
      const uint32_t h16 = static_cast<uint32_t>(key >> 48);
      for (uint32_t i = from; i < len; ++i) {
        const uint32_t w = (h16 + i / 2) & 0xffff;
        p[i] = static_cast<uint8_t>(i % 2 ? w : w >> 8);
      }
      break;
    }
    default:
      for (uint32_t i = from; i < len; ++i)
        p[i] = static_cast<uint8_t>(~(h + i) + i / 256);
      break;
  }
}

// A numbered frame: the 8-byte sequence number at the payload offset, then
// the pattern up to the end of the frame.
inline void numbered(uint8_t* p, uint32_t len, uint64_t seq, Proto proto, const xpv::MacAddr& dst,
                     const xpv::MacAddr& src, uint32_t sip, uint32_t dip,
                     Pattern pat = Pattern::kRamp) {
  const uint32_t off = payload_offset(proto);
  if (proto == Proto::kRaw) {
    eth(p, dst, src, kEthRaw);
  } else {
    eth(p, dst, src, kEthIpv4);
    ipv4(p + kEthLen, sip, dip, 17, len - kEthLen, static_cast<uint16_t>(seq));
    uint8_t* u = p + kEthLen + kIpLen;
    put16(u, 9000);   // source port
    put16(u + 2, 9);  // discard
    put16(u + 4, static_cast<uint16_t>(len - kEthLen - kIpLen));
    put16(u + 6, 0);  // no UDP checksum (allowed for IPv4)
  }
  put64(p + off, seq);
  pattern(p, off + 8, len, seq, pat);
}

// ARP request "who has tip, tell sip".
inline uint32_t arp_request(uint8_t* p, const xpv::MacAddr& src, uint32_t sip, uint32_t tip) {
  eth(p, xpv::MacAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, src, kEthArp);
  uint8_t* a = p + kEthLen;
  put16(a, 1);  // Ethernet
  put16(a + 2, kEthIpv4);
  a[4] = 6;
  a[5] = 4;
  put16(a + 6, 1);  // request
  std::memcpy(a + 8, src.data(), 6);
  put32(a + 14, sip);
  std::memset(a + 18, 0, 6);
  put32(a + 24, tip);
  std::memset(p + kEthLen + 28, 0, 60 - kEthLen - 28);
  return 60;
}

// ICMP echo request of `len` bytes in all with id/seq and a patterned payload.
inline uint32_t icmp_echo(uint8_t* p, uint32_t len, const xpv::MacAddr& dst,
                          const xpv::MacAddr& src, uint32_t sip, uint32_t dip, uint16_t id,
                          uint16_t seq) {
  eth(p, dst, src, kEthIpv4);
  ipv4(p + kEthLen, sip, dip, 1, len - kEthLen, seq);
  uint8_t* c = p + kEthLen + kIpLen;
  c[0] = 8;  // echo request
  c[1] = 0;
  put16(c + 2, 0);
  put16(c + 4, id);
  put16(c + 6, seq);
  for (uint32_t i = kEthLen + kIpLen + kIcmpLen; i < len; ++i)
    p[i] = static_cast<uint8_t>(seq + i);
  put16(c + 2, checksum(c, len - kEthLen - kIpLen));
  return len;
}

inline uint32_t parse_ip(const char* s, bool* ok) {
  unsigned a, b, c, d;
  char tail;
  *ok = std::sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a < 256 && b < 256 &&
        c < 256 && d < 256;
  return a << 24 | b << 16 | c << 8 | d;
}

}  // namespace pkt
