// SPDX-License-Identifier: MIT
// xpv-pktgen --proto tcp|tcp6: one TCP stream per queue, sent (--role tx)
// and checked (--role sink), to try offloads with (netif.h NETTXF_csum_blank,
// the GSO extra; NETRXF_csum_blank / data_validated on receive).
//
// Segments of a TCP connection that never was (ports 40000 + queue -> 5001,
// RFC 793 over IPv4 or IPv6, RFC 8200), the payload byte at stream offset k
// being uint8(k): whatever cuts or joins segments on the way (TSO in the
// backend, LRO, segmentation for a receiver without GSO), every received byte
// is checked against its sequence number, and every checksum is computed
// here, not trusted.
#pragma once

#include <cstdint>
#include <cstring>

#include "packet.h"

namespace pkt {

constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint32_t kIp6Len = 40;
constexpr uint32_t kTcpLen = 20;
constexpr uint16_t kTcpDstPort = 5001;
constexpr uint16_t kTcpSrcPort = 40000;  // + the sending queue
constexpr uint32_t kMaxStreams = 64;

inline uint32_t tcp_header_len(bool ipv6) {
  return kEthLen + (ipv6 ? kIp6Len : kIpLen) + kTcpLen;
}

// The folded pseudo-header sum for `l4_len` TCP bytes (RFC 793, RFC 8200);
// a partial checksum field holds exactly this (netif.h csum_blank).
inline uint16_t tcp_pseudo_sum(const uint8_t* frame, bool ipv6, uint32_t l4_len) {
  uint32_t s = 0;
  const uint8_t* ip = frame + kEthLen;
  if (ipv6) {
    for (uint32_t i = 8; i < 40; i += 2)
      s += get16(ip + i);
  } else {
    for (uint32_t i = 12; i < 20; i += 2)
      s += get16(ip + i);
  }
  s += 6 + (l4_len >> 16) + (l4_len & 0xffff);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

struct TcpAddrs {
  xpv::MacAddr dst, src;
  uint32_t sip = 0, dip = 0;  // IPv6: fd00::<ip> (unique local addresses)
};

// A segment of `len` bytes in all carrying stream bytes [seq, seq + payload),
// its checksum full, or partial (the pseudo-header sum) for the backend.
inline void tcp_segment(uint8_t* p, uint32_t len, uint32_t seq, bool ipv6, uint16_t src_port,
                        bool partial, const TcpAddrs& a) {
  const uint32_t l4 = kEthLen + (ipv6 ? kIp6Len : kIpLen);
  const uint32_t l4_len = len - l4;
  eth(p, a.dst, a.src, ipv6 ? kEthIpv6 : kEthIpv4);
  if (ipv6) {
    uint8_t* ip = p + kEthLen;
    std::memset(ip, 0, kIp6Len);
    ip[0] = 0x60;
    put16(ip + 4, static_cast<uint16_t>(l4_len));
    ip[6] = 6;  // next header: TCP
    ip[7] = 64;
    put16(ip + 8, 0xfd00);
    put32(ip + 20, a.sip);
    put16(ip + 24, 0xfd00);
    put32(ip + 36, a.dip);
  } else {
    ipv4(p + kEthLen, a.sip, a.dip, 6, len - kEthLen, static_cast<uint16_t>(seq));
  }
  uint8_t* t = p + l4;
  put16(t, src_port);
  put16(t + 2, kTcpDstPort);
  put32(t + 4, seq);
  put32(t + 8, 1);
  t[12] = (kTcpLen / 4) << 4;
  t[13] = 0x18;  // PSH | ACK
  put16(t + 14, 65535);
  put16(t + 16, 0);
  put16(t + 18, 0);
  for (uint32_t i = kTcpLen; i < l4_len; ++i)
    t[i] = static_cast<uint8_t>(seq + i - kTcpLen);
  const uint16_t ps = tcp_pseudo_sum(p, ipv6, l4_len);
  put16(t + 16, partial ? ps : checksum(t, l4_len, ps));
}

// What the sink found in one received frame.
struct TcpSegmentCheck {
  bool ours = false;         // TCP to kTcpDstPort (else foreign)
  bool checksum_ok = false;  // IPv4 header and TCP checksums right (TCP: partial ones
                             // equal to the pseudo-header sum)
  bool payload_ok = false;   // every payload byte as its sequence number says
  uint16_t src_port = 0;
  uint32_t seq = 0;
  uint32_t payload = 0;
};

// `f` is the whole frame, contiguous; `partial`: it came with csum_blank.
inline TcpSegmentCheck check_tcp_segment(const uint8_t* f, uint32_t len, bool partial) {
  TcpSegmentCheck c;
  if (len < kEthLen + kIpLen + kTcpLen) return c;
  const uint16_t type = get16(f + 12);
  const bool ipv6 = type == kEthIpv6;
  if (type != kEthIpv4 && !ipv6) return c;
  const uint8_t* ip = f + kEthLen;
  uint32_t l4 = 0, l4_len = 0;
  if (ipv6) {
    if (len < tcp_header_len(true) || ip[6] != 6) return c;
    l4 = kEthLen + kIp6Len;
    l4_len = get16(ip + 4);
  } else {
    if (ip[9] != 6 || (ip[0] & 0xf) != 5 || get16(ip + 2) < kIpLen + kTcpLen) return c;
    l4 = kEthLen + kIpLen;
    l4_len = get16(ip + 2) - kIpLen;
  }
  const uint8_t* t = f + l4;
  if (l4 + l4_len > len || l4_len < kTcpLen || get16(t + 2) != kTcpDstPort) return c;
  c.ours = true;
  c.src_port = get16(t);
  c.seq = get32(t + 4);
  const uint32_t hl = (t[12] >> 4) * 4u;
  if (hl < kTcpLen || hl > l4_len) return c;
  const uint16_t ps = tcp_pseudo_sum(f, ipv6, l4_len);
  c.checksum_ok = partial ? get16(t + 16) == ps : checksum(t, l4_len, ps) == 0;
  if (!ipv6) c.checksum_ok = c.checksum_ok && checksum(ip, kIpLen) == 0;
  c.payload = l4_len - hl;
  c.payload_ok = true;
  for (uint32_t i = 0; i < c.payload; ++i) {
    if (t[hl + i] != static_cast<uint8_t>(c.seq + i)) {
      c.payload_ok = false;
      break;
    }
  }
  return c;
}

// The sink's view of the streams: where each one is, and what was missing
// (a gap: frames dropped on the way) or out of order (a segment behind one
// already seen). Streams are told apart by source port.
struct TcpStreams {
  struct Stream {
    bool seen = false;
    uint32_t next = 0;
    uint64_t bytes = 0;  // payload received in order
  };
  Stream s[kMaxStreams];
  uint64_t gap_bytes = 0;
  uint64_t out_of_order = 0;
  uint64_t unknown_stream = 0;

  void take(const TcpSegmentCheck& c) {
    const uint32_t i = static_cast<uint16_t>(c.src_port - kTcpSrcPort);
    if (i >= kMaxStreams) {
      ++unknown_stream;
      return;
    }
    Stream& st = s[i];
    // The first segment seen starts the stream at 0 (the sender's numbering).
    if (!st.seen) {
      st.seen = true;
      st.next = 0;
    }
    const int32_t ahead = static_cast<int32_t>(c.seq - st.next);
    if (ahead < 0) {
      ++out_of_order;
      return;
    }
    gap_bytes += static_cast<uint32_t>(ahead);
    st.next = c.seq + c.payload;
    st.bytes += c.payload;
  }
  // Where the streams ended, in stream bytes: gaps + bytes received.
  uint64_t end() const {
    uint64_t e = 0;
    for (const auto& st : s)
      e += st.seen ? st.bytes : 0;
    return e + gap_bytes;
  }
};

}  // namespace pkt
