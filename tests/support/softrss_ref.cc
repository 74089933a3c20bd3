// SPDX-License-Identifier: MIT
#include "support/softrss_ref.h"

#include <rte_byteorder.h>
#include <rte_thash.h>

#include <cstring>

namespace xpv::testing_rss {

uint32_t dpdk_softrss(const uint32_t* tuple, uint32_t words, const uint8_t* key) {
  return rte_softrss(const_cast<uint32_t*>(tuple), words, key);
}

uint32_t dpdk_ipv4(const uint8_t src[4], const uint8_t dst[4], bool l4, uint16_t sport,
                   uint16_t dport, const uint8_t* key) {
  // What DPDK's examples do: addresses from the header, converted to host
  // order, ports in host order.
  rte_ipv4_tuple t{};
  uint32_t s, d;
  std::memcpy(&s, src, 4);
  std::memcpy(&d, dst, 4);
  t.src_addr = rte_be_to_cpu_32(s);
  t.dst_addr = rte_be_to_cpu_32(d);
  t.sport = sport;
  t.dport = dport;
  return rte_softrss(reinterpret_cast<uint32_t*>(&t),
                     l4 ? RTE_THASH_V4_L4_LEN : RTE_THASH_V4_L3_LEN, key);
}

uint32_t dpdk_ipv6(const uint8_t src[16], const uint8_t dst[16], bool l4, uint16_t sport,
                   uint16_t dport, const uint8_t* key) {
  rte_ipv6_hdr h{};
  std::memcpy(h.src_addr, src, 16);
  std::memcpy(h.dst_addr, dst, 16);
  rte_thash_tuple t{};  // 16-byte aligned: rte_thash_load_v6_addrs stores with SSE
  rte_thash_load_v6_addrs(&h, &t);
  t.v6.sport = sport;
  t.v6.dport = dport;
  return rte_softrss(reinterpret_cast<uint32_t*>(&t.v6),
                     l4 ? RTE_THASH_V6_L4_LEN : RTE_THASH_V6_L3_LEN, key);
}

}  // namespace xpv::testing_rss
