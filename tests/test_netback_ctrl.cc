// SPDX-License-Identifier: MIT
// xpv-netback's control ring (netif.h "Control ring"), driven as a frontend
// drives it: every hashing message with the statuses Linux netback's hash.c
// gives, RX steering by the mapping table (loopback and bridge), the HASH
// extras of netif.h, set-up errors and teardown, and the control-ring
// faults. The Toeplitz hash is checked against DPDK's rte_softrss
// (support/softrss_ref.cc), Xen's reference xen_netif_toeplitz_hash and
// Microsoft's published RSS verification values.
#include <gtest/gtest.h>

// Xen's reference Toeplitz function, compiled in for comparison.
#define XEN_NETIF_DEFINE_TOEPLITZ
#include <xen/io/netif.h>

#include <random>

#include "netback/cli.h"
#include "netback/hash.h"
#include "ring/netif_ctrl.h"
#include "support/netback_frontend.h"
#include "support/softrss_ref.h"

namespace xpv {
namespace {

using namespace netback_testing;
using namespace std::chrono_literals;
using netback::Config;
using netback::Counters;
using netback::Fault;
using netback::FrameHash;
using netback::Mode;
using netif::CtrlResponse;
namespace rss = testing_rss;
namespace tf = testing_frames;

// ---------------------------------------------------------------------------
// Frames for hashing.

struct Flow {
  bool ipv6 = false;
  bool tcp = true;
  uint8_t src[16] = {}, dst[16] = {};
  uint16_t sport = 0, dport = 0;
  uint16_t frag = 0;  // IPv4 flags/offset field (0x4000: DF only)
  bool v6_frag_hdr = false;
  bool v6_hop_by_hop = false;
  bool vlan = false;
};

Flow random_flow(std::mt19937& rng, bool ipv6, bool tcp) {
  Flow f;
  f.ipv6 = ipv6;
  f.tcp = tcp;
  for (auto& b : f.src)
    b = static_cast<uint8_t>(rng());
  for (auto& b : f.dst)
    b = static_cast<uint8_t>(rng());
  f.sport = static_cast<uint16_t>(rng());
  f.dport = static_cast<uint16_t>(rng());
  f.frag = 0x4000;
  return f;
}

// Ethernet (optionally 802.1Q), IPv4 or IPv6 (optionally a hop-by-hop or
// fragment header), then a 20-byte TCP or 8-byte UDP header and 32 bytes.
std::vector<uint8_t> flow_frame(const Flow& f) {
  std::vector<uint8_t> v = {2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a};
  if (f.vlan) v.insert(v.end(), {0x81, 0x00, 0x00, 0x05});
  const uint8_t proto = f.tcp ? 6 : 17;
  const size_t l4len = (f.tcp ? 20 : 8) + 32;
  if (!f.ipv6) {
    v.insert(v.end(), {0x08, 0x00});
    const size_t ip = v.size();
    v.resize(ip + 20);
    v[ip] = 0x45;
    tf::wr16(&v[ip + 2], static_cast<uint16_t>(20 + l4len));
    tf::wr16(&v[ip + 6], f.frag);
    v[ip + 8] = 64;
    v[ip + 9] = proto;
    std::memcpy(&v[ip + 12], f.src, 4);
    std::memcpy(&v[ip + 16], f.dst, 4);
  } else {
    v.insert(v.end(), {0x86, 0xdd});
    const size_t ip = v.size();
    v.resize(ip + 40);
    v[ip] = 0x60;
    v[ip + 7] = 64;
    std::memcpy(&v[ip + 8], f.src, 16);
    std::memcpy(&v[ip + 24], f.dst, 16);
    size_t ext = 0;
    uint8_t* next = &v[ip + 6];
    if (f.v6_hop_by_hop) {
      *next = 0;
      const size_t h = v.size();
      v.resize(h + 8);  // PadN filling 6 bytes
      v[h + 2] = 1;
      v[h + 3] = 4;
      next = &v[h];
      ext += 8;
    }
    if (f.v6_frag_hdr) {
      *next = 44;
      const size_t h = v.size();
      v.resize(h + 8);
      tf::wr16(&v[h + 2], 1);  // offset 0, more fragments
      next = &v[h];
      ext += 8;
    }
    *next = proto;
    tf::wr16(&v[ip + 4], static_cast<uint16_t>(ext + l4len));
  }
  const size_t l4 = v.size();
  v.resize(l4 + l4len);
  tf::wr16(&v[l4], f.sport);
  tf::wr16(&v[l4 + 2], f.dport);
  if (f.tcp) v[l4 + 12] = 5 << 4;
  for (size_t i = 0; i < 32; ++i)
    v[v.size() - 32 + i] = static_cast<uint8_t>(i);
  return v;
}

// What DPDK computes for the flow: the 4-tuple for TCP, else the addresses.
uint32_t reference_hash(const Flow& f, bool l4, const uint8_t* key) {
  return f.ipv6 ? rss::dpdk_ipv6(f.src, f.dst, l4, f.sport, f.dport, key)
                : rss::dpdk_ipv4(f.src, f.dst, l4, f.sport, f.dport, key);
}

constexpr uint32_t kAllTypes = netback::kSupportedHashTypes;

// ---------------------------------------------------------------------------
// The Toeplitz hash and the frame's hash input.

TEST(NetbackHash, ToeplitzMatchesMicrosoftVerificationSuite) {
  // The RSS verification values Microsoft publishes with its default key
  // (also DPDK's test_thash.c): 66.9.149.187:2794 -> 161.142.100.80:1766.
  const uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                           0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                           0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                           0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
  Flow f;
  const uint8_t src[4] = {66, 9, 149, 187}, dst[4] = {161, 142, 100, 80};
  std::memcpy(f.src, src, 4);
  std::memcpy(f.dst, dst, 4);
  f.sport = 2794;
  f.dport = 1766;
  f.frag = 0x4000;
  const auto frame = flow_frame(f);
  FrameHash h =
      netback::hash_frame(kAllTypes, key, frame.data(), static_cast<uint32_t>(frame.size()));
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv4TcpBit);
  EXPECT_EQ(h.value, 0x51ccc178u);
  h = netback::hash_frame(netif::kCtrlHashTypeIpv4, key, frame.data(),
                          static_cast<uint32_t>(frame.size()));
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv4Bit);
  EXPECT_EQ(h.value, 0x323e8fc2u);
}

TEST(NetbackHash, ToeplitzMatchesRteSoftrssAndXenReference) {
  std::mt19937 rng(20261202);
  int checked = 0;
  for (int round = 0; round < 500; ++round) {
    uint8_t key[40];
    for (auto& b : key)
      b = static_cast<uint8_t>(rng());
    for (bool ipv6 : {false, true}) {
      const Flow f = random_flow(rng, ipv6, /*tcp=*/true);
      const auto frame = flow_frame(f);
      const uint32_t len = static_cast<uint32_t>(frame.size());
      // IPv4+TCP / IPv6+TCP.
      FrameHash h = netback::hash_frame(kAllTypes, key, frame.data(), len);
      ASSERT_TRUE(h.valid);
      EXPECT_EQ(h.type, ipv6 ? netif::kCtrlHashTypeIpv6TcpBit : netif::kCtrlHashTypeIpv4TcpBit);
      ASSERT_EQ(h.value, reference_hash(f, true, key)) << "round " << round << " ipv6 " << ipv6;
      // IPv4 / IPv6 (the TCP type not enabled).
      const uint32_t l3 = ipv6 ? netif::kCtrlHashTypeIpv6 : netif::kCtrlHashTypeIpv4;
      h = netback::hash_frame(l3, key, frame.data(), len);
      ASSERT_TRUE(h.valid);
      EXPECT_EQ(h.type, ipv6 ? netif::kCtrlHashTypeIpv6Bit : netif::kCtrlHashTypeIpv4Bit);
      ASSERT_EQ(h.value, reference_hash(f, false, key)) << "round " << round << " ipv6 " << ipv6;
      // Xen's reference function over the same bytes.
      uint8_t in[36];
      const size_t alen = ipv6 ? 16 : 4;
      std::memcpy(in, f.src, alen);
      std::memcpy(in + alen, f.dst, alen);
      tf::wr16(in + 2 * alen, f.sport);
      tf::wr16(in + 2 * alen + 2, f.dport);
      EXPECT_EQ(netback::toeplitz_hash(key, 40, in, 2 * alen + 4),
                xen_netif_toeplitz_hash(key, 40, in, static_cast<unsigned>(2 * alen + 4)));
      checked += 2;
    }
    // A short key: the missing bytes are zero (netif.h's reference).
    const uint32_t keylen = rng() % 41;
    uint8_t in[36];
    for (auto& b : in)
      b = static_cast<uint8_t>(rng());
    EXPECT_EQ(netback::toeplitz_hash(key, keylen, in, 36),
              xen_netif_toeplitz_hash(key, keylen, in, 36));
  }
  EXPECT_EQ(checked, 2000);
}

TEST(NetbackHash, WhatGetsWhichHashType) {
  std::mt19937 rng(7);
  uint8_t key[40];
  for (auto& b : key)
    b = static_cast<uint8_t>(rng());
  auto hash = [&](const Flow& f, uint32_t flags) {
    const auto v = flow_frame(f);
    return netback::hash_frame(flags, key, v.data(), static_cast<uint32_t>(v.size()));
  };
  // UDP: the address type only.
  Flow udp = random_flow(rng, false, false);
  FrameHash h = hash(udp, kAllTypes);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv4Bit);
  EXPECT_EQ(h.value, reference_hash(udp, false, key));
  EXPECT_FALSE(hash(udp, netif::kCtrlHashTypeIpv4Tcp).valid) << "TCP only: UDP gets no hash";
  // An IPv4 fragment has no TCP header to hash (FLOW_DIS_IS_FRAGMENT).
  Flow frag = random_flow(rng, false, true);
  frag.frag = 0x2000;  // more fragments, offset 0
  h = hash(frag, kAllTypes);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv4Bit);
  EXPECT_EQ(h.value, reference_hash(frag, false, key));
  // IPv6: extension headers are walked; a fragment header stops at L3.
  Flow hbh = random_flow(rng, true, true);
  hbh.v6_hop_by_hop = true;
  h = hash(hbh, kAllTypes);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv6TcpBit);
  EXPECT_EQ(h.value, reference_hash(hbh, true, key));
  Flow f6 = random_flow(rng, true, true);
  f6.v6_frag_hdr = true;
  h = hash(f6, kAllTypes);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.type, netif::kCtrlHashTypeIpv6Bit);
  // Types not enabled, a VLAN tag (skb->protocol is 802.1Q), not IP at all.
  EXPECT_FALSE(
      hash(random_flow(rng, true, true), netif::kCtrlHashTypeIpv4 | netif::kCtrlHashTypeIpv4Tcp)
          .valid);
  Flow tagged = random_flow(rng, false, true);
  tagged.vlan = true;
  EXPECT_FALSE(hash(tagged, kAllTypes).valid);
  const auto arp = pattern(60, 3);
  EXPECT_FALSE(netback::hash_frame(kAllTypes, key, arp.data(), 60).valid);
  // Truncated headers: no hash, no read past the end.
  const auto full = flow_frame(random_flow(rng, false, true));
  for (uint32_t len = 0; len < 34; ++len)
    EXPECT_FALSE(netback::hash_frame(kAllTypes, key, full.data(), len).valid) << len;
}

// ---------------------------------------------------------------------------
// The frontend's control ring.

class CtrlFrontend {
 public:
  explicit CtrlFrontend(Frontend& fe) : fe_(fe) {
    auto r = fe.sharer().share(kDom0, 1, true);
    auto p = fe.sharer().share(kDom0, 1, /*writable=*/false);
    EXPECT_TRUE(r && p);
    auto l = fe.sharer().share(kDom0, 1, /*writable=*/true);
    EXPECT_TRUE(l);
    ring_page_ = std::move(*r);
    data_page_ = std::move(*p);
    list_page_ = std::move(*l);
    ring_.attach(ring_page_.data(), /*init=*/true);
    auto port = fe.ev().alloc_unbound(kDom0);
    EXPECT_TRUE(port);
    port_ = *port;
  }
  ~CtrlFrontend() { (void)fe_.ev().unbind(port_); }

  void write_keys() {
    fe_.write("ctrl-ring-ref", std::to_string(ring_page_.ref(0)));
    fe_.write("event-channel-ctrl", std::to_string(port_));
  }
  // The handshake with a control ring and `nq` queues.
  bool connect(uint32_t nq) {
    if (!fe_.wait_be_state(2)) return false;
    fe_.setup_queues(nq, true);
    fe_.write_keys();
    write_keys();
    fe_.set_state(4);
    return fe_.wait_be_state(4);
  }

  uint16_t post(uint16_t type, uint32_t d0 = 0, uint32_t d1 = 0, uint32_t d2 = 0) {
    const uint16_t id = next_id_++;
    ring_.next_request() = netif::CtrlRequest{id, type, {d0, d1, d2}};
    ring_.commit_request();
    if (ring_.push_requests_and_check_notify()) {
      EXPECT_TRUE(fe_.ev().notify(port_));
    }
    return id;
  }
  std::optional<CtrlResponse> wait(std::chrono::milliseconds timeout = kTimeout) {
    std::optional<CtrlResponse> rsp;
    wait_until(
        [&] {
          if (ring_.available_responses().count == 0) return false;
          rsp = ring_.take_response();
          return true;
        },
        timeout);
    return rsp;
  }
  // One request and its answer; the answer must echo id and type.
  CtrlResponse call(uint16_t type, uint32_t d0 = 0, uint32_t d1 = 0, uint32_t d2 = 0) {
    const uint16_t id = post(type, d0, d1, d2);
    auto rsp = wait();
    EXPECT_TRUE(rsp.has_value()) << "no answer to type " << type;
    if (!rsp) return CtrlResponse{0, 0, 0xFFFFFFFF, 0};
    EXPECT_EQ(rsp->id, id);
    EXPECT_EQ(rsp->type, type);
    return *rsp;
  }
  uint32_t status(uint16_t type, uint32_t d0 = 0, uint32_t d1 = 0, uint32_t d2 = 0) {
    return call(type, d0, d1, d2).status;
  }

  // The page SET_HASH_KEY and SET_HASH_MAPPING read from.
  grant_ref_t data_ref() const { return data_page_.ref(0); }
  uint8_t* data() { return data_page_.data(); }

  uint32_t set_key(const uint8_t* key, uint32_t len) {
    std::memcpy(data(), key, len);
    return status(netif::kCtrlTypeSetHashKey, data_ref(), len);
  }
  uint32_t set_mapping(const std::vector<uint32_t>& m, uint32_t off = 0) {
    std::memcpy(data(), m.data(), m.size() * 4);
    return status(netif::kCtrlTypeSetHashMapping, data_ref(), static_cast<uint32_t>(m.size()), off);
  }
  // ADD/DEL_GREF_MAPPING of `refs` for `queue` through the writable list
  // page; `statuses` gets what DEL wrote back.
  CtrlResponse grefs(bool add, uint32_t queue, const std::vector<grant_ref_t>& refs,
                     uint16_t flags = 0, std::vector<uint16_t>* statuses = nullptr) {
    auto* e = reinterpret_cast<netif::CtrlGref*>(list_page_.data());
    for (size_t i = 0; i < refs.size(); ++i)
      e[i] = netif::CtrlGref{refs[i], flags, 0xEEEE};
    CtrlResponse r = call(add ? netif::kCtrlTypeAddGrefMapping : netif::kCtrlTypeDelGrefMapping,
                          queue, list_page_.ref(0), static_cast<uint32_t>(refs.size()));
    if (statuses) {
      statuses->clear();
      for (size_t i = 0; i < refs.size(); ++i)
        statuses->push_back(e[i].status);
    }
    return r;
  }
  // Registers every buffer page of queue `q` (TX pages read-only).
  void register_buffers(FeQueue& q, uint32_t queue) {
    std::vector<grant_ref_t> tx, rx;
    for (size_t i = 0; i < 256; ++i) {
      tx.push_back(q.tx_bufs.ref(i));
      rx.push_back(q.rx_bufs.ref(i));
    }
    EXPECT_EQ(grefs(true, queue, tx, netif::kCtrlGrefReadonly).status, 0u);
    EXPECT_EQ(grefs(true, queue, rx).status, 0u);
  }

  // Toeplitz over every type, `key`, a table of `table.size()` entries.
  void configure(const uint8_t* key, const std::vector<uint32_t>& table) {
    EXPECT_EQ(status(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmToeplitz), 0u);
    EXPECT_EQ(status(netif::kCtrlTypeSetHashFlags, kAllTypes), 0u);
    EXPECT_EQ(set_key(key, 40), 0u);
    EXPECT_EQ(status(netif::kCtrlTypeSetHashMappingSize, static_cast<uint32_t>(table.size())), 0u);
    EXPECT_EQ(set_mapping(table), 0u);
  }

 private:
  Frontend& fe_;
  SharedPages ring_page_, data_page_, list_page_;
  netif::CtrlFrontRing ring_;
  evtchn_port_t port_ = 0;
  uint16_t next_id_ = 100;
};

using NetbackCtrlTest = NetbackTest;

TEST_F(NetbackCtrlTest, FeatureCtrlRingOfferedUnlessTurnedOff) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  EXPECT_EQ(fe.read(fe.be() + "/feature-ctrl-ring").value_or(""), "1");
  be->stop();
  be.reset();
  Config cfg;
  cfg.ctrl_ring = false;
  start(cfg);
  Frontend fe2(*hv);
  ASSERT_TRUE(fe2.wait_be_state(2));
  EXPECT_EQ(fe2.read(fe2.be() + "/feature-ctrl-ring").value_or(""), "0");
  // A frontend that sets one up anyway is connected without it.
  CtrlFrontend ctrl(fe2);
  ASSERT_TRUE(ctrl.connect(1));
  ctrl.post(netif::kCtrlTypeGetHashFlags);
  EXPECT_FALSE(ctrl.wait(200ms).has_value());
}

TEST_F(NetbackCtrlTest, EveryMessageAnsweredAsLinuxNetback) {
  using namespace netif;
  start();
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(4));
  // xenvif_get_hash_flags(): NOT_SUPPORTED until an algorithm is selected
  // (netif.h), then the four types; data only with SUCCESS.
  CtrlResponse r = c.call(kCtrlTypeGetHashFlags);
  EXPECT_EQ(r.status, kCtrlStatusNotSupported);
  EXPECT_EQ(r.data, 0u);
  EXPECT_EQ(c.status(kCtrlTypeSetHashAlgorithm, kCtrlHashAlgorithmToeplitz), kCtrlStatusSuccess);
  r = c.call(kCtrlTypeGetHashFlags);
  EXPECT_EQ(r.status, kCtrlStatusSuccess);
  EXPECT_EQ(r.data,
            kCtrlHashTypeIpv4 | kCtrlHashTypeIpv4Tcp | kCtrlHashTypeIpv6 | kCtrlHashTypeIpv6Tcp);
  EXPECT_EQ(c.status(kCtrlTypeSetHashAlgorithm, kCtrlHashAlgorithmNone), kCtrlStatusSuccess);
  r = c.call(kCtrlTypeGetHashMappingSize);
  EXPECT_EQ(r.status, kCtrlStatusSuccess);
  EXPECT_EQ(r.data, 128u);
  // Flags need an algorithm first.
  EXPECT_EQ(c.status(kCtrlTypeSetHashFlags, kCtrlHashTypeIpv4), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashAlgorithm, 2), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashAlgorithm, kCtrlHashAlgorithmNone), kCtrlStatusSuccess);
  EXPECT_EQ(c.status(kCtrlTypeSetHashAlgorithm, kCtrlHashAlgorithmToeplitz), kCtrlStatusSuccess);
  EXPECT_EQ(c.status(kCtrlTypeSetHashFlags, 1u << 4), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashFlags, kAllTypes), kCtrlStatusSuccess);
  // The key: at most 40 bytes through a grant copy; a bad grant is refused.
  uint8_t key[40];
  for (int i = 0; i < 40; ++i)
    key[i] = static_cast<uint8_t>(i * 3 + 1);
  std::memcpy(c.data(), key, 40);
  EXPECT_EQ(c.status(kCtrlTypeSetHashKey, c.data_ref(), 41), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashKey, 99999, 40), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashKey, 99999, 0), kCtrlStatusSuccess) << "nothing to copy";
  EXPECT_EQ(c.status(kCtrlTypeSetHashKey, c.data_ref(), 40), kCtrlStatusSuccess);
  // The table: at most 128 entries; entries within the size, each naming
  // one of the 4 queues; the grant must be readable.
  EXPECT_EQ(c.status(kCtrlTypeSetHashMappingSize, 129), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeSetHashMappingSize, 8), kCtrlStatusSuccess);
  EXPECT_EQ(c.set_mapping({0, 1, 2, 3}, 5), kCtrlStatusInvalidParameter) << "5 + 4 > 8";
  EXPECT_EQ(c.status(kCtrlTypeSetHashMapping, c.data_ref(), 2, 0xFFFFFFFF),
            kCtrlStatusInvalidParameter)
      << "off + len wraps";
  EXPECT_EQ(c.set_mapping({0, 1, 4, 3}), kCtrlStatusInvalidParameter) << "queue 4 of 4";
  EXPECT_EQ(c.status(kCtrlTypeSetHashMapping, 99999, 4, 0), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.set_mapping({3, 2, 1, 0}, 4), kCtrlStatusSuccess);
  EXPECT_EQ(c.status(kCtrlTypeSetHashMapping, 99999, 0, 8), kCtrlStatusSuccess) << "empty";
  // Unknown types and the static grant messages: NOT_SUPPORTED, data 0.
  for (uint16_t t : {kCtrlTypeInvalid, uint16_t{11}, uint16_t{0xFFFF}}) {
    r = c.call(t, 1, 2, 3);
    EXPECT_EQ(r.status, kCtrlStatusNotSupported) << t;
    EXPECT_EQ(r.data, 0u);
  }
  const Counters k = ctr(fe.domid());
  EXPECT_EQ(k.ctrl_requests, 26u);
  EXPECT_EQ(k.ctrl_refused, 14u);
}

// Posts RX requests on `q` for one frame with one extra, sends `frame` on
// queue `from`, and returns what queue `q` receives.
std::optional<Received> loop_one(Frontend& fe, uint32_t from, uint32_t q,
                                 const std::vector<uint8_t>& frame) {
  fe.post_rx(fe.q(q), 2);
  fe.send(fe.q(from), frame);
  fe.wait_tx(fe.q(from), 1);
  return fe.receive(fe.q(q), 3s);
}

void expect_hash_extra(const Received& r, uint8_t type, uint32_t value) {
  ASSERT_EQ(r.extras.size(), 1u);
  const netif::ExtraInfo& e = r.extras[0];
  EXPECT_EQ(e.type, netif::kExtraTypeHash);
  EXPECT_EQ(e.flags, 0);
  EXPECT_EQ(e.u.hash.type, type);
  EXPECT_EQ(e.u.hash.algorithm, netif::kCtrlHashAlgorithmToeplitz);
  const uint32_t v = e.u.hash.value[0] | e.u.hash.value[1] << 8 | e.u.hash.value[2] << 16 |
                     static_cast<uint32_t>(e.u.hash.value[3]) << 24;
  EXPECT_EQ(v, value);
  EXPECT_TRUE(r.rsps[0].flags & netif::kRxExtraInfo);
}

TEST_F(NetbackCtrlTest, LoopbackSteersByTheMappingWithHashExtras) {
  start();
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  constexpr uint32_t kQueues = 4;
  ASSERT_TRUE(c.connect(kQueues));
  // Before any configuration: the frame comes back on its own queue, no extra.
  std::mt19937 rng(99);
  auto plain = loop_one(fe, 2, 2, flow_frame(random_flow(rng, false, true)));
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->extras.empty());

  uint8_t key[40];
  for (auto& b : key)
    b = static_cast<uint8_t>(rng());
  std::vector<uint32_t> table(128);
  for (auto& e : table)
    e = rng() % kQueues;
  c.configure(key, table);
  uint32_t per_queue[kQueues] = {};
  constexpr int kFrames = 160;
  for (int i = 0; i < kFrames; ++i) {
    const Flow f = random_flow(rng, i % 2 == 1, i % 4 < 2);
    const auto frame = flow_frame(f);
    const bool l4 = f.tcp;
    const uint32_t h = reference_hash(f, l4, key);
    const uint32_t want = table[h % 128];
    const uint32_t from = static_cast<uint32_t>(i) % kQueues;
    auto r = loop_one(fe, from, want, frame);
    ASSERT_TRUE(r) << "frame " << i << " did not arrive on queue " << want;
    EXPECT_EQ(r->data, frame);
    const uint8_t type = f.ipv6
                             ? (l4 ? netif::kCtrlHashTypeIpv6TcpBit : netif::kCtrlHashTypeIpv6Bit)
                             : (l4 ? netif::kCtrlHashTypeIpv4TcpBit : netif::kCtrlHashTypeIpv4Bit);
    expect_hash_extra(*r, type, h);
    ++per_queue[want];
  }
  for (uint32_t q = 0; q < kQueues; ++q) {
    EXPECT_GT(per_queue[q], 0u) << "queue " << q;
    EXPECT_TRUE(fe.rx_quiet_for(fe.q(q), 20ms)) << "nothing else arrives on queue " << q;
  }
  Counters k = ctr(fe.domid());
  EXPECT_EQ(k.rx_hash_extras, static_cast<uint64_t>(kFrames));
  EXPECT_EQ(k.rx_steered, static_cast<uint64_t>(kFrames));

  // The table changes: the same flow moves to where the new entry says.
  const Flow f = random_flow(rng, false, true);
  const uint32_t h = reference_hash(f, true, key);
  const uint32_t moved = (table[h % 128] + 1) % kQueues;
  EXPECT_EQ(c.set_mapping({moved}, h % 128), 0u);
  auto r = loop_one(fe, 0, moved, flow_frame(f));
  ASSERT_TRUE(r) << "the flow did not move to queue " << moved;
  expect_hash_extra(*r, netif::kCtrlHashTypeIpv4TcpBit, h);

  // A new key: a new hash (rte_softrss with that key).
  uint8_t key2[40];
  for (auto& b : key2)
    b = static_cast<uint8_t>(rng());
  ASSERT_EQ(c.set_key(key2, 40), 0u);
  table[h % 128] = moved;
  const uint32_t h2 = reference_hash(f, true, key2);
  r = loop_one(fe, 0, table[h2 % 128], flow_frame(f));
  ASSERT_TRUE(r);
  expect_hash_extra(*r, netif::kCtrlHashTypeIpv4TcpBit, h2);

  // Algorithm back to none: own queue, no extra.
  ASSERT_EQ(c.status(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmNone), 0u);
  r = loop_one(fe, 3, 3, flow_frame(f));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->extras.empty());
}

TEST_F(NetbackCtrlTest, NoHashTypeMatchesGoesToTheFirstEntryWithoutExtra) {
  // xenvif_set_skb_hash() clears the hash; skb_get_hash_raw() is then 0,
  // so the frame takes mapping[0]; no HASH extra (skb->sw_hash unset).
  start();
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(4));
  ASSERT_EQ(c.status(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmToeplitz), 0u);
  ASSERT_EQ(c.status(netif::kCtrlTypeSetHashFlags, netif::kCtrlHashTypeIpv6), 0u);
  ASSERT_EQ(c.status(netif::kCtrlTypeSetHashMappingSize, 4), 0u);
  ASSERT_EQ(c.set_mapping({2, 0, 1, 3}), 0u);
  std::mt19937 rng(5);
  auto r = loop_one(fe, 1, 2, flow_frame(random_flow(rng, false, true)));
  ASSERT_TRUE(r) << "an IPv4 frame with only IPv6 hashing goes to mapping[0] = 2";
  EXPECT_TRUE(r->extras.empty());
}

TEST_F(NetbackCtrlTest, BridgeSteersToTheTargetsMapping) {
  Config cfg;
  cfg.mode = Mode::kBridge;
  start(cfg);
  Frontend a(*hv);
  ASSERT_TRUE(a.connect(1));
  Frontend b(*hv);
  CtrlFrontend c(b);
  ASSERT_TRUE(c.connect(4));
  std::mt19937 rng(31);
  uint8_t key[40];
  for (auto& k : key)
    k = static_cast<uint8_t>(rng());
  std::vector<uint32_t> table(64);
  for (auto& e : table)
    e = rng() % 4;
  c.configure(key, table);
  for (int i = 0; i < 40; ++i) {
    const Flow f = random_flow(rng, i % 2 == 0, true);
    auto frame = flow_frame(f);  // to 02:..:0b: unknown, flooded to b
    const uint32_t h = reference_hash(f, true, key);
    const uint32_t want = table[h % 64];
    b.post_rx(b.q(want), 2);
    a.send(a.q(0), frame);
    a.wait_tx(a.q(0), 1);
    auto r = b.receive(b.q(want), 3s);
    ASSERT_TRUE(r) << "frame " << i << " not on queue " << want;
    EXPECT_EQ(r->data, frame);
    expect_hash_extra(*r, f.ipv6 ? netif::kCtrlHashTypeIpv6TcpBit : netif::kCtrlHashTypeIpv4TcpBit,
                      h);
  }
  // The sender configured nothing: what b sends reaches a with no extra.
  a.post_rx(a.q(0), 2);
  auto frame = flow_frame(random_flow(rng, false, true));
  b.send(b.q(1), frame);
  auto r = a.receive(a.q(0), 3s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->extras.empty());
}

TEST_F(NetbackCtrlTest, SetupErrorsAreXenbusFatalsAndTeardownUnmapsTheRing) {
  start();
  {
    Frontend fe(*hv);
    CtrlFrontend c(fe);
    ASSERT_TRUE(fe.wait_be_state(2));
    fe.setup_queues(1, true);
    fe.write_keys();
    fe.write("ctrl-ring-ref", std::to_string(c.data_ref() + 5000));
    fe.write("event-channel-ctrl", "1");
    fe.set_state(4);
    ASSERT_TRUE(fe.wait_be_state(5));
    EXPECT_NE(fe.read(fe.be() + "/error").value_or("").find("mapping shared-frame"),
              std::string::npos);
    EXPECT_EQ(hv->stats().grant_maps, 0u);
  }
  {
    Frontend fe(*hv);
    CtrlFrontend c(fe);
    ASSERT_TRUE(fe.wait_be_state(2));
    fe.setup_queues(1, true);
    fe.write_keys();
    fe.write("ctrl-ring-ref", std::to_string(c.data_ref()));
    fe.set_state(4);
    ASSERT_TRUE(fe.wait_be_state(5));
    EXPECT_NE(fe.read(fe.be() + "/error").value_or("").find("/event-channel-ctrl"),
              std::string::npos);
  }
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(2));
  EXPECT_EQ(hv->stats().grant_maps, 5u) << "2 x 2 data rings and the control ring";
  EXPECT_EQ(c.status(netif::kCtrlTypeSetHashAlgorithm, netif::kCtrlHashAlgorithmToeplitz), 0u);
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  EXPECT_EQ(hv->stats().grant_maps, 0u) << "the control ring is unmapped with the data rings";
}

// ---------------------------------------------------------------------------
// Static grants.

TEST_F(NetbackCtrlTest, StaticGrantMessages) {
  using namespace netif;
  start();
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(2));
  CtrlResponse r = c.call(kCtrlTypeGetGrefMappingSize, 1);
  EXPECT_EQ(r.status, kCtrlStatusSuccess);
  EXPECT_EQ(r.data, netback::kMaxStaticGrantsPerQueue);
  EXPECT_EQ(c.status(kCtrlTypeGetGrefMappingSize, 2), kCtrlStatusInvalidParameter);
  const uint32_t base = hv->stats().grant_maps;
  std::vector<grant_ref_t> rx;
  for (size_t i = 0; i < 8; ++i)
    rx.push_back(fe.q(0).rx_bufs.ref(i));
  // Refused, nothing mapped: a queue out of range, 513 entries, a bad list
  // grant, a bad entry, a ref listed twice, a read-only grant mapped writable.
  EXPECT_EQ(c.grefs(true, 2, rx).status, kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeAddGrefMapping, 0, c.data_ref(), 513), kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.status(kCtrlTypeAddGrefMapping, 0, 99999, 4), kCtrlStatusInvalidParameter);
  auto bad = rx;
  bad[5] = 99999;
  EXPECT_EQ(c.grefs(true, 0, bad).status, kCtrlStatusInvalidParameter);
  auto twice = rx;
  twice[7] = twice[0];
  EXPECT_EQ(c.grefs(true, 0, twice).status, kCtrlStatusInvalidParameter);
  EXPECT_EQ(c.grefs(true, 0, {fe.q(0).tx_bufs.ref(0)}).status, kCtrlStatusInvalidParameter)
      << "a TX page is granted read-only";
  EXPECT_EQ(hv->stats().grant_maps, base) << "a refused ADD leaves nothing mapped";
  // Added, once.
  EXPECT_EQ(c.grefs(true, 0, rx).status, kCtrlStatusSuccess);
  EXPECT_EQ(c.grefs(true, 0, {fe.q(0).tx_bufs.ref(0)}, kCtrlGrefReadonly).status,
            kCtrlStatusSuccess);
  EXPECT_EQ(hv->stats().grant_maps, base + 9);
  EXPECT_EQ(c.grefs(true, 0, {rx[3]}).status, kCtrlStatusInvalidParameter) << "already there";
  // DEL: each entry's status written back, the count answered, unmapped now.
  std::vector<uint16_t> st;
  r = c.grefs(false, 0, {rx[0], 12345, rx[1]}, 0, &st);
  EXPECT_EQ(r.status, kCtrlStatusSuccess);
  EXPECT_EQ(r.data, 2u);
  EXPECT_EQ(st, (std::vector<uint16_t>{0, kCtrlStatusInvalidParameter, 0}));
  EXPECT_EQ(hv->stats().grant_maps, base + 7);
  r = c.grefs(false, 1, {rx[2]}, 0, &st);
  EXPECT_EQ(r.data, 0u) << "registered on queue 0, not 1";
  EXPECT_EQ(st, (std::vector<uint16_t>{kCtrlStatusInvalidParameter}));
  Counters k = ctr(fe.domid());
  EXPECT_EQ(k.static_grants_added, 9u);
  EXPECT_EQ(k.static_grants_removed, 2u);
  // Disconnect unmaps what is left.
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  EXPECT_EQ(hv->stats().grant_maps, 0u);
}

TEST_F(NetbackCtrlTest, NoStaticGrantsAnswersNotSupportedAsLinux) {
  Config cfg;
  cfg.static_grants = false;
  start(cfg);
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(1));
  for (uint16_t t : {netif::kCtrlTypeGetGrefMappingSize, netif::kCtrlTypeAddGrefMapping,
                     netif::kCtrlTypeDelGrefMapping}) {
    CtrlResponse r = c.call(t, 0, c.data_ref(), 1);
    EXPECT_EQ(r.status, netif::kCtrlStatusNotSupported) << t;
    EXPECT_EQ(r.data, 0u);
  }
}

// Frames of 60..9000 bytes (1..3 slots) through loopback; returns what came back.
std::vector<std::vector<uint8_t>> loop_frames(Frontend& fe, int n, uint8_t seed) {
  std::vector<std::vector<uint8_t>> got;
  FeQueue& q = fe.q(0);
  for (int i = 0; i < n; ++i) {
    const size_t len = 60 + (static_cast<size_t>(i) * 977) % 8900;
    auto frame = pattern(len, static_cast<uint8_t>(seed + i));
    std::vector<uint16_t> sizes;
    for (size_t at = 0; at < len; at += 4096)
      sizes.push_back(static_cast<uint16_t>(std::min<size_t>(4096, len - at)));
    fe.post_rx(q, static_cast<uint32_t>(sizes.size()));
    fe.put_packet(q, frame, sizes);
    fe.push_tx(q);
    fe.wait_tx(q, sizes.size());
    auto r = fe.receive(q, 3s);
    if (!r) break;
    got.push_back(r->data);
    EXPECT_EQ(r->data, frame) << "frame " << i;
  }
  return got;
}

TEST_F(NetbackCtrlTest, StaticGrantMemcpyGivesTheBytesGrantCopyGives) {
  start();
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(1));
  constexpr int kFrames = 300;
  const auto by_grant_copy = loop_frames(fe, kFrames, 1);
  ASSERT_EQ(by_grant_copy.size(), static_cast<size_t>(kFrames));
  const Counters before = ctr(fe.domid());
  EXPECT_EQ(before.static_grant_copies, 0u);
  EXPECT_GT(before.grant_copies, 0u);

  c.register_buffers(fe.q(0), 0);
  const auto by_memcpy = loop_frames(fe, kFrames, 1);
  EXPECT_EQ(by_memcpy, by_grant_copy);
  const Counters after = ctr(fe.domid());
  EXPECT_EQ(after.grant_copies, before.grant_copies) << "no grant copy once registered";
  EXPECT_EQ(after.static_grant_copies, before.grant_copies) << "the same copies, by memcpy";

  // Only the TX pages registered: RX falls back to grant copies.
  std::vector<grant_ref_t> rx;
  for (size_t i = 0; i < 256; ++i)
    rx.push_back(fe.q(0).rx_bufs.ref(i));
  ASSERT_EQ(c.grefs(false, 0, rx).data, 256u);
  const auto mixed = loop_frames(fe, kFrames, 1);
  EXPECT_EQ(mixed, by_grant_copy);
  const Counters last = ctr(fe.domid());
  EXPECT_GT(last.grant_copies, after.grant_copies);
  EXPECT_GT(last.static_grant_copies, after.static_grant_copies);
  EXPECT_EQ((last.grant_copies - after.grant_copies) +
                (last.static_grant_copies - after.static_grant_copies),
            before.grant_copies);
  // Teardown unmaps the 256 TX pages still registered.
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  EXPECT_EQ(hv->stats().grant_maps, 0u);
}

TEST(NetbackCtrlCli, OptionsAndFaults) {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "xpv-netback");
    return netback::parse_cli(static_cast<int>(args.size()), args.data());
  };
  auto o = parse({"--socket", "/s"});
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->cfg.ctrl_ring);
  EXPECT_TRUE(o->cfg.static_grants);
  o = parse({"--socket", "/s", "--no-ctrl-ring", "--no-static-grants"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_FALSE(o->cfg.ctrl_ring);
  EXPECT_FALSE(o->cfg.static_grants);
  for (const char* f : {"ctrl-no-answer", "ctrl-wrong-id", "ctrl-bad-status"}) {
    o = parse({"--socket", "/s", "--fault", f});
    ASSERT_TRUE(o) << f << ": " << o.error().message;
    EXPECT_STREQ(netback::to_string(o->cfg.fault), f);
    EXPECT_EQ(netback::fault_arg_or_default(o->cfg), 1u);
    EXPECT_NE(std::string(netback::help_text()).find(f), std::string::npos) << f;
    auto bad = parse({"--socket", "/s", "--fault", f, "--no-ctrl-ring"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("--no-ctrl-ring"), std::string::npos);
    bad = parse({"--socket", "/s", "--fault", f, "--fault-arg", "0"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("--fault-arg"), std::string::npos);
  }
}

// The control-ring faults, as a frontend sees them; it must disconnect
// cleanly, and the backend then leaves nothing mapped.
struct CtrlFaultCase {
  Fault fault;
  const char* name;
};

class NetbackCtrlFaultTest : public NetbackTest,
                             public ::testing::WithParamInterface<CtrlFaultCase> {};

TEST_P(NetbackCtrlFaultTest, TheNthRequestIsAnsweredWrongly) {
  Config cfg;
  cfg.fault = GetParam().fault;
  cfg.fault_arg = 2;
  start(cfg);
  Frontend fe(*hv);
  CtrlFrontend c(fe);
  ASSERT_TRUE(c.connect(1));
  EXPECT_EQ(c.status(netif::kCtrlTypeGetHashMappingSize), 0u) << "the first is answered";
  const uint16_t id = c.post(netif::kCtrlTypeGetHashMappingSize);
  auto r = c.wait(GetParam().fault == Fault::kCtrlNoAnswer ? 300ms : kTimeout);
  switch (GetParam().fault) {
    case Fault::kCtrlNoAnswer:
      EXPECT_FALSE(r.has_value());
      break;
    case Fault::kCtrlWrongId:
      ASSERT_TRUE(r);
      EXPECT_NE(r->id, id);
      EXPECT_EQ(r->status, 0u);
      break;
    default:
      ASSERT_TRUE(r);
      EXPECT_EQ(r->id, id);
      EXPECT_EQ(r->status, 0xDEADu);
      break;
  }
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  EXPECT_EQ(hv->stats().grant_maps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Faults, NetbackCtrlFaultTest,
                         ::testing::Values(CtrlFaultCase{Fault::kCtrlNoAnswer, "NoAnswer"},
                                           CtrlFaultCase{Fault::kCtrlWrongId, "WrongId"},
                                           CtrlFaultCase{Fault::kCtrlBadStatus, "BadStatus"}),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace xpv
