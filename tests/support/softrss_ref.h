// SPDX-License-Identifier: MIT
// DPDK's software Toeplitz hash (rte_softrss() of rte_thash.h), the
// independent reference the tests check xpv-netback's hash against. Built
// apart (softrss_ref.cc) with DPDK's compile flags, so that they do not
// spread to the other tests.
#pragma once

#include <cstdint>

namespace xpv::testing_rss {

// rte_softrss(tuple, words, key): `tuple` is the hash input as 32-bit words
// in host order (rte_thash.h's rte_ipv4_tuple/rte_ipv6_tuple layout: the
// addresses, then sport << 16 | dport), `key` 40 bytes.
uint32_t dpdk_softrss(const uint32_t* tuple, uint32_t words, const uint8_t* key);

// The same inputs through rte_thash.h's own tuple helpers: rte_ipv4_tuple /
// rte_ipv6_tuple filled from network-order addresses and host-order ports,
// RTE_THASH_V4_L3_LEN / _L4_LEN / V6 lengths.
uint32_t dpdk_ipv4(const uint8_t src[4], const uint8_t dst[4], bool l4, uint16_t sport,
                   uint16_t dport, const uint8_t* key);
uint32_t dpdk_ipv6(const uint8_t src[16], const uint8_t dst[16], bool l4, uint16_t sport,
                   uint16_t dport, const uint8_t* key);

}  // namespace xpv::testing_rss
