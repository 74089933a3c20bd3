// SPDX-License-Identifier: MIT
// softrss: DPDK's rte_softrss of an IPv4 flow, for the shell checks
// (tests/integration/pmd_rss.sh) that compare a port's RSS hashes with it.
//   softrss SRC_IP DST_IP SPORT DPORT L4(0|1) KEY_HEX(80 digits) [N]
// prints the hash as 0x%08x; with N, the hashes of N flows whose source
// address is SRC_IP + 0 .. N-1 (testpmd's --txonly-multi-flow), one a line.
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "support/softrss_ref.h"

int main(int argc, char** argv) {
  if ((argc != 7 && argc != 8) || std::strlen(argv[6]) != 80) {
    std::fprintf(stderr, "usage: softrss SRC_IP DST_IP SPORT DPORT L4 KEY_HEX(40 bytes)\n");
    return 2;
  }
  uint8_t src[4], dst[4], key[40];
  if (inet_pton(AF_INET, argv[1], src) != 1 || inet_pton(AF_INET, argv[2], dst) != 1) {
    std::fprintf(stderr, "softrss: bad IPv4 address\n");
    return 2;
  }
  for (int i = 0; i < 40; ++i) {
    char b[3] = {argv[6][2 * i], argv[6][2 * i + 1], 0};
    key[i] = static_cast<uint8_t>(std::strtoul(b, nullptr, 16));
  }
  const int n = argc == 8 ? std::atoi(argv[7]) : 1;
  uint32_t base;
  std::memcpy(&base, src, 4);
  for (int i = 0; i < n; ++i) {
    const uint32_t a = htonl(ntohl(base) + static_cast<uint32_t>(i));
    std::memcpy(src, &a, 4);
    const uint32_t h = xpv::testing_rss::dpdk_ipv4(
        src, dst, std::atoi(argv[5]) != 0, static_cast<uint16_t>(std::atoi(argv[3])),
        static_cast<uint16_t>(std::atoi(argv[4])), key);
    std::printf("0x%08x\n", h);
  }
  return 0;
}
