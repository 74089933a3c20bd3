// SPDX-License-Identifier: MIT
// RSS through the backend (netif.h control ring, Toeplitz): the backend
// hashes each received packet and steers it to the queue its mapping table
// names; the hash comes back with the packet (mbuf->hash.rss,
// RTE_MBUF_F_RX_RSS_HASH). What netif can hash, and only that, is offered:
//   RTE_ETH_RSS_IPV4            XEN_NETIF_CTRL_HASH_TYPE_IPV4 (addresses)
//   RTE_ETH_RSS_NONFRAG_IPV4_TCP XEN_NETIF_CTRL_HASH_TYPE_IPV4_TCP (+ ports)
//   RTE_ETH_RSS_IPV6            XEN_NETIF_CTRL_HASH_TYPE_IPV6
//   RTE_ETH_RSS_NONFRAG_IPV6_TCP XEN_NETIF_CTRL_HASH_TYPE_IPV6_TCP
// with a 40-byte key and a 128-entry RETA (Linux netback's mapping table;
// a backend that takes fewer entries fails dev_start naming its limit).
// Without feature-ctrl-ring nothing is offered (flow_type_rss_offloads 0,
// reta_size 0, hash_key_size 0).
#include <algorithm>
#include <cinttypes>

#include "xenpv.h"

namespace {

xenpv_internals* priv(struct rte_eth_dev* dev) {
  return static_cast<xenpv_internals*>(dev->data->dev_private);
}

constexpr uint64_t kRssOffloads = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
                                  RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP;

// The key of Microsoft's RSS verification suite, which DPDK's Intel PMDs
// program by default (rss_intel_key) and rte_thash tests hash with.
constexpr uint8_t kDefaultKey[xpv::kRssKeyMax] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

uint32_t hash_types_of(uint64_t rss_hf) {
  uint32_t t = 0;
  if (rss_hf & RTE_ETH_RSS_IPV4) t |= xpv::kHashIpv4;
  if (rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_TCP) t |= xpv::kHashIpv4Tcp;
  if (rss_hf & RTE_ETH_RSS_IPV6) t |= xpv::kHashIpv6;
  if (rss_hf & RTE_ETH_RSS_NONFRAG_IPV6_TCP) t |= xpv::kHashIpv6Tcp;
  return t;
}

uint64_t rss_hf_of(uint32_t types) {
  uint64_t hf = 0;
  if (types & xpv::kHashIpv4) hf |= RTE_ETH_RSS_IPV4;
  if (types & xpv::kHashIpv4Tcp) hf |= RTE_ETH_RSS_NONFRAG_IPV4_TCP;
  if (types & xpv::kHashIpv6) hf |= RTE_ETH_RSS_IPV6;
  if (types & xpv::kHashIpv6Tcp) hf |= RTE_ETH_RSS_NONFRAG_IPV6_TCP;
  return hf;
}

bool has_ctrl_ring(const xenpv_internals* p) {
  return p->features.ctrl_ring;
}

// rss_hf and key of `conf` into `out`; a negative errno (logged) when netif
// cannot hash what is asked or the key does not fit.
int from_conf(struct rte_eth_dev* dev, const struct rte_eth_rss_conf& conf, xpv::RssConfig* out) {
  if (conf.rss_hf & ~kRssOffloads) {
    XENPV_LOG(ERR,
              "%s: rss_hf 0x%" PRIx64 " asks for 0x%" PRIx64
              ", which a netif backend cannot hash (it hashes IPv4, IPv4+TCP, IPv6 and IPv6+TCP "
              "only: 0x%" PRIx64 ")",
              dev->data->name, conf.rss_hf, conf.rss_hf & ~kRssOffloads, kRssOffloads);
    return -EINVAL;
  }
  out->hash_types = hash_types_of(conf.rss_hf);
  if (conf.rss_key) {
    const uint8_t len = conf.rss_key_len ? conf.rss_key_len : xpv::kRssKeyMax;
    if (len > xpv::kRssKeyMax) {
      XENPV_LOG(ERR, "%s: a %u-byte RSS key: netif backends take at most %u bytes", dev->data->name,
                len, xpv::kRssKeyMax);
      return -EINVAL;
    }
    out->key.assign(conf.rss_key, conf.rss_key + len);
  }
  return 0;
}

// Hands `want` to the library (checked there, sent at once when connected);
// a negative errno, logged with the library's reason, when refused.
int apply(struct rte_eth_dev* dev, const xpv::RssConfig& want) {
  xenpv_internals* p = priv(dev);
  std::lock_guard lk(p->control_mu);
  if (p->dev) {
    xpv::Status s = p->dev->set_rss(want);
    if (s.failed()) {
      XENPV_LOG(ERR, "%s: RSS: %s", dev->data->name, s.message().c_str());
      return -s.code();
    }
  }
  p->rss = want;
  return 0;
}

}  // namespace

void xenpv_rss_infos(const xenpv_internals* p, struct rte_eth_dev_info* info) {
  if (!has_ctrl_ring(p)) {
    info->flow_type_rss_offloads = 0;
    info->reta_size = 0;
    info->hash_key_size = 0;
    return;
  }
  info->flow_type_rss_offloads = kRssOffloads;
  info->reta_size = kXenpvRetaSize;
  info->hash_key_size = xpv::kRssKeyMax;
  info->rx_offload_capa |= RTE_ETH_RX_OFFLOAD_RSS_HASH;
}

// What the application left out: DPDK's default key, and DPDK's default RETA
// (entry i to queue i % nb_rx_queues).
static void fill_defaults(const struct rte_eth_dev* dev, xpv::RssConfig* want) {
  if (want->key.empty()) want->key.assign(std::begin(kDefaultKey), std::end(kDefaultKey));
  if (!want->mapping.empty()) return;
  const uint16_t nrx = std::max<uint16_t>(dev->data->nb_rx_queues, 1);
  for (uint32_t i = 0; i < kXenpvRetaSize; ++i)
    want->mapping.push_back(i % nrx);
}

int xenpv_rss_configure(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  const struct rte_eth_conf& conf = dev->data->dev_conf;
  xpv::RssConfig want;
  if (conf.rxmode.mq_mode & RTE_ETH_MQ_RX_RSS_FLAG) {
    if (!has_ctrl_ring(p)) {
      XENPV_LOG(ERR,
                "%s: RSS asked (mq_mode %d) but the backend offers no control ring "
                "(feature-ctrl-ring): it cannot steer by hash",
                dev->data->name, static_cast<int>(conf.rxmode.mq_mode));
      return -ENOTSUP;
    }
    int rc = from_conf(dev, conf.rx_adv_conf.rss_conf, &want);
    if (rc < 0) return rc;
    fill_defaults(dev, &want);
  }
  return apply(dev, want);
}

int xenpv_rss_hash_update(struct rte_eth_dev* dev, struct rte_eth_rss_conf* conf) {
  xenpv_internals* p = priv(dev);
  if (!has_ctrl_ring(p)) return -ENOTSUP;
  xpv::RssConfig want = p->rss;
  int rc = from_conf(dev, *conf, &want);
  if (rc < 0) return rc;
  fill_defaults(dev, &want);
  return apply(dev, want);
}

int xenpv_rss_hash_conf_get(struct rte_eth_dev* dev, struct rte_eth_rss_conf* conf) {
  xenpv_internals* p = priv(dev);
  if (!has_ctrl_ring(p)) return -ENOTSUP;
  conf->rss_hf = rss_hf_of(p->rss.hash_types);
  if (conf->rss_key) {
    // The caller's buffer holds hash_key_size bytes (ethdev's rule); a
    // shorter key reads as zero-filled, as the backend uses it (netif.h).
    std::fill(conf->rss_key, conf->rss_key + xpv::kRssKeyMax, 0);
    std::copy(p->rss.key.begin(), p->rss.key.end(), conf->rss_key);
    conf->rss_key_len = xpv::kRssKeyMax;
  }
  return 0;
}

int xenpv_reta_update(struct rte_eth_dev* dev, struct rte_eth_rss_reta_entry64* reta,
                      uint16_t reta_size) {
  xenpv_internals* p = priv(dev);
  if (!has_ctrl_ring(p)) return -ENOTSUP;
  if (reta_size != kXenpvRetaSize) {
    XENPV_LOG(ERR, "%s: a RETA of %u entries: this port's has %u", dev->data->name, reta_size,
              kXenpvRetaSize);
    return -EINVAL;
  }
  xpv::RssConfig want = p->rss;
  want.mapping.resize(kXenpvRetaSize, 0);
  for (uint16_t i = 0; i < reta_size; ++i) {
    const auto& group = reta[i / RTE_ETH_RETA_GROUP_SIZE];
    const uint16_t bit = i % RTE_ETH_RETA_GROUP_SIZE;
    if (group.mask & (1ULL << bit)) want.mapping[i] = group.reta[bit];
  }
  return apply(dev, want);
}

int xenpv_reta_query(struct rte_eth_dev* dev, struct rte_eth_rss_reta_entry64* reta,
                     uint16_t reta_size) {
  xenpv_internals* p = priv(dev);
  if (!has_ctrl_ring(p)) return -ENOTSUP;
  if (reta_size != kXenpvRetaSize) {
    XENPV_LOG(ERR, "%s: a RETA of %u entries asked for: this port's has %u", dev->data->name,
              reta_size, kXenpvRetaSize);
    return -EINVAL;
  }
  for (uint16_t i = 0; i < reta_size; ++i) {
    auto& group = reta[i / RTE_ETH_RETA_GROUP_SIZE];
    const uint16_t bit = i % RTE_ETH_RETA_GROUP_SIZE;
    if (!(group.mask & (1ULL << bit))) continue;
    // Without a table the backend steers by hash % queues: the same RETA.
    const uint16_t nrx = std::max<uint16_t>(dev->data->nb_rx_queues, 1);
    group.reta[bit] =
        static_cast<uint16_t>(i < p->rss.mapping.size() ? p->rss.mapping[i] : i % nrx);
  }
  return 0;
}
