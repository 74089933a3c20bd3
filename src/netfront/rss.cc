// SPDX-License-Identifier: MIT
#include "netfront/rss.h"

#include <cstring>

#include "util/log.h"

namespace xpv {

namespace {

// A refusal's errno: NOT_SUPPORTED -> ENOTSUP, INVALID_PARAMETER ->
// EINVAL, BUFFER_OVERFLOW -> E2BIG.
int refusal_code(uint32_t status) {
  switch (status) {
    case netif::kCtrlStatusNotSupported:
      return ENOTSUP;
    case netif::kCtrlStatusBufferOverflow:
      return E2BIG;
    default:
      return EINVAL;
  }
}

Status expect_success(CtrlRing& ring, uint16_t type, uint32_t d0, uint32_t d1, uint32_t d2,
                      const std::string& what) {
  auto a = ring.call(type, d0, d1, d2);
  if (!a) return a.error();
  if (a->status != netif::kCtrlStatusSuccess) {
    return make_error(refusal_code(a->status),
                      format("the backend refused %s (%s): %s", netif::ctrl_type_name(type),
                             what.c_str(), netif::ctrl_status_name(a->status)));
  }
  return {};
}

}  // namespace

Status check_rss(const RssConfig& cfg, uint32_t queues, uint32_t mapping_size_max) {
  if (cfg.hash_types & ~kHashTypesNetif) {
    return make_error(EINVAL, format("hash types 0x%x include 0x%x, which a netif backend cannot "
                                     "hash (netif.h defines IPv4, IPv4+TCP, IPv6, IPv6+TCP only)",
                                     cfg.hash_types, cfg.hash_types & ~kHashTypesNetif));
  }
  if (cfg.key.size() > kRssKeyMax) {
    return make_error(EINVAL, format("a %zu-byte hash key: netif backends take at most %u bytes",
                                     cfg.key.size(), kRssKeyMax));
  }
  if (cfg.mapping.size() > kRssMappingMax) {
    return make_error(E2BIG, format("a mapping of %zu entries: at most %u fit in one granted page",
                                    cfg.mapping.size(), kRssMappingMax));
  }
  if (mapping_size_max && cfg.mapping.size() > mapping_size_max) {
    return make_error(E2BIG, format("a mapping of %zu entries: the backend takes at most %u "
                                    "(GET_HASH_MAPPING_SIZE)",
                                    cfg.mapping.size(), mapping_size_max));
  }
  for (size_t i = 0; i < cfg.mapping.size(); ++i) {
    if (cfg.mapping[i] >= queues) {
      return make_error(EINVAL, format("mapping entry %zu names queue %u; the device has %u", i,
                                       cfg.mapping[i], queues));
    }
  }
  return {};
}

Result<RssCapabilities> query_rss(CtrlRing& ring) {
  RssCapabilities caps;
  caps.available = true;
  caps.connected = true;
  caps.key_size_max = kRssKeyMax;
  // netif.h, GET_HASH_FLAGS: "A valid hash algorithm must be selected
  // before this operation can succeed" (Linux netback answers NOT_SUPPORTED
  // while it is NONE). So Toeplitz is selected for the question and NONE
  // again after it: apply_rss() selects what the application configured;
  // without that, the backend keeps steering by its own choice (with
  // Toeplitz and no hash flags, Linux netback would put every packet on
  // queue 0).
  auto a = ring.call(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmToeplitz);
  if (!a) return a.error();
  if (a->status == netif::kCtrlStatusSuccess) {
    auto f = ring.call(netif::kCtrlTypeGetHashFlags);
    if (!f) return f.error();
    if (f->status == netif::kCtrlStatusSuccess) caps.hash_types = f->data & kHashTypesNetif;
    auto n = ring.call(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmNone);
    if (!n) return n.error();
  }
  auto m = ring.call(netif::kCtrlTypeGetHashMappingSize);
  if (!m) return m.error();
  if (m->status == netif::kCtrlStatusSuccess) caps.mapping_size_max = m->data;
  return caps;
}

Status apply_rss(CtrlRing& ring, const RssConfig& cfg) {
  if (cfg.hash_types == 0) {
    return expect_success(ring, netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmNone, 0,
                          0, "algorithm NONE");
  }
  XPV_TRY(expect_success(ring, netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmToeplitz,
                         0, 0, "algorithm Toeplitz"));
  XPV_TRY(expect_success(ring, netif::kCtrlTypeSetHashFlags, cfg.hash_types, 0, 0,
                         format("flags 0x%x", cfg.hash_types)));
  // netif.h: the key and the table start at the beginning of the granted
  // page, which stays valid until the response is processed (call()
  // returns only then).
  std::memset(ring.data(), 0, kPageSize);
  std::memcpy(ring.data(), cfg.key.data(), cfg.key.size());
  XPV_TRY(expect_success(ring, netif::kCtrlTypeSetHashKey, ring.data_ref(),
                         static_cast<uint32_t>(cfg.key.size()), 0,
                         format("a %zu-byte key", cfg.key.size())));
  const uint32_t n = static_cast<uint32_t>(cfg.mapping.size());
  XPV_TRY(
      expect_success(ring, netif::kCtrlTypeSetHashMappingSize, n, 0, 0, format("%u entries", n)));
  if (n) {
    std::memset(ring.data(), 0, kPageSize);
    std::memcpy(ring.data(), cfg.mapping.data(), n * sizeof(uint32_t));
    XPV_TRY(expect_success(ring, netif::kCtrlTypeSetHashMapping, ring.data_ref(), n, 0,
                           format("%u entries at offset 0", n)));
  }
  return {};
}

}  // namespace xpv
