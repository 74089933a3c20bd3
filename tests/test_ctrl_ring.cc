// SPDX-License-Identifier: MIT
// The control ring (netif.h feature-ctrl-ring) and RSS through it, against
// xpv-netback for the data rings and a test-side control-ring responder
// (support/ctrl_responder.h, Linux netback's rules) for the control ring:
// the keys of the handshake, every hash request and its answer, bad RSS
// configurations refused before anything is sent, backend refusals named,
// and every fault (no answer, wrong id, wrong type, impossible status) a
// counted violation that disconnects, never a hang.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "netback/counters.h"
#include "support/ctrl_responder.h"
#include "support/netfront_fixture.h"
#include "support/softrss_ref.h"
#include "xpv/log.h"

namespace xpv {
namespace {

using testing::CtrlResponder;

std::vector<uint8_t> test_key() {
  std::vector<uint8_t> k(kRssKeyMax);
  for (size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<uint8_t>(0x6d + 7 * i);
  return k;
}

RssConfig four_queue_rss() {
  RssConfig c;
  c.hash_types = kHashTypesNetif;
  c.key = test_key();
  for (uint32_t i = 0; i < 128; ++i)
    c.mapping.push_back((i * 3) % 4);
  return c;
}

struct CtrlRingTest : NetfrontFixture {
  std::unique_ptr<Device> dev;
  std::unique_ptr<CtrlResponder> responder;

  // Opens a device of `queues` queues; the backend offers a control ring
  // (served by the responder) when `ctrl` is set.
  void open(uint32_t queues, bool ctrl = true, uint32_t ctrl_timeout_ms = 2000,
            netback::Config nb = {}) {
    nb.ctrl_ring = false;  // the responder plays the control ring
    start(nb);
    DeviceConfig cfg = config(queues);
    cfg.ctrl_timeout_ms = ctrl_timeout_ms;
    auto d = Device::open(cfg);
    ASSERT_TRUE(d) << d.error().message;
    dev = std::move(*d);
    const DeviceInfo& info = dev->info();
    ASSERT_TRUE(
        xs0->write(kXsNoTransaction, info.backend_path + "/feature-ctrl-ring", ctrl ? "1" : "0"));
    responder = std::make_unique<CtrlResponder>(*dom0, info.self_domid, info.frontend_path, queues);
    responder->start();
  }
  void TearDown() override {
    if (dev) dev->close();
    if (responder) responder->stop();
    responder.reset();
    dev.reset();
    NetfrontFixture::TearDown();
  }
};

TEST_F(CtrlRingTest, TheHandshakeWritesTheRingAndRssIsConfiguredByEveryHashRequest) {
  open(4);
  const RssConfig want = four_queue_rss();
  ASSERT_TRUE(dev->set_rss(want));
  EXPECT_TRUE(dev->rss_capabilities().available);
  EXPECT_FALSE(dev->rss_capabilities().connected);
  ASSERT_TRUE(dev->connect());
  const std::string fe = dev->info().frontend_path;
  EXPECT_TRUE(*xs0->try_read(kXsNoTransaction, fe + "/ctrl-ring-ref"));
  EXPECT_TRUE(*xs0->try_read(kXsNoTransaction, fe + "/event-channel-ctrl"));
  EXPECT_EQ(responder->connections(), 1u);

  const CtrlResponder::State st = responder->state();
  EXPECT_EQ(st.algorithm, netif::kCtrlHashAlgorithmToeplitz);
  EXPECT_EQ(st.flags, kHashTypesNetif);
  EXPECT_EQ(st.key, want.key);
  EXPECT_EQ(st.mapping, want.mapping);
  // GET_HASH_FLAGS between an algorithm selected and NONE again (netif.h:
  // it needs an algorithm; Linux netback answers NOT_SUPPORTED without).
  const std::vector<uint16_t> sequence = {
      netif::kCtrlTypeSetHashAlgorithm,   netif::kCtrlTypeGetHashFlags,
      netif::kCtrlTypeSetHashAlgorithm,   netif::kCtrlTypeGetHashMappingSize,
      netif::kCtrlTypeSetHashAlgorithm,   netif::kCtrlTypeSetHashFlags,
      netif::kCtrlTypeSetHashKey,         netif::kCtrlTypeSetHashMappingSize,
      netif::kCtrlTypeSetHashMapping,     netif::kCtrlTypeGetGrefMappingSize,
      netif::kCtrlTypeGetGrefMappingSize, netif::kCtrlTypeGetGrefMappingSize,
      netif::kCtrlTypeGetGrefMappingSize};
  EXPECT_EQ(st.types_seen, sequence);

  const RssCapabilities caps = dev->rss_capabilities();
  EXPECT_TRUE(caps.connected);
  EXPECT_EQ(caps.hash_types, kHashTypesNetif) << "GET_HASH_FLAGS' answer";
  EXPECT_EQ(caps.mapping_size_max, 128u) << "GET_HASH_MAPPING_SIZE's answer";
  EXPECT_EQ(caps.key_size_max, kRssKeyMax);
  CtrlCounters c = dev->ctrl_counters();
  EXPECT_EQ(c.ctrl_requests, 13u);
  EXPECT_EQ(c.ctrl_refused, 4u) << "GET_GREF_MAPPING_SIZE: NOT_SUPPORTED, as Linux netback";
  for (uint32_t q = 0; q < 4; ++q) {
    EXPECT_EQ(dev->queue(q).counters().grant_copy_connections, 1u);
    EXPECT_EQ(dev->queue(q).counters().static_grant_connections, 0u);
  }

  // While connected, a change is sent at once: a new table and key, then
  // hashing off (algorithm NONE).
  RssConfig moved = want;
  moved.mapping.assign(64, 2);
  moved.key.assign(16, 0xab);
  moved.hash_types = kHashIpv4 | kHashIpv4Tcp;
  ASSERT_TRUE(dev->set_rss(moved));
  EXPECT_EQ(responder->state().mapping, moved.mapping);
  EXPECT_EQ(responder->state().key, moved.key);
  EXPECT_EQ(responder->state().flags, kHashIpv4 | kHashIpv4Tcp);
  EXPECT_EQ(dev->rss(), moved);
  ASSERT_TRUE(dev->set_rss(RssConfig{}));
  EXPECT_EQ(responder->state().algorithm, netif::kCtrlHashAlgorithmNone);

  dev->close();
  const Device::TeardownAccount acc = dev->teardown_account();
  EXPECT_EQ(acc.pages, 4u * (2 + 256 + 256) + 2) << "rings, pools, control ring and its data page";
  // The responder (a thread of this test, not xpv-netback) may still map
  // the ring when the backend went Closed: that page is kept, not freed.
  EXPECT_EQ(acc.returned + acc.still_mapped, acc.pages);
  EXPECT_LE(acc.still_mapped, 1u);
}

TEST_F(CtrlRingTest, RssIsAppliedAgainAfterAReconnect) {
  // The backend resets the vif after 20 packets (netback::Fault::kReconnect).
  netback::Config nb;
  nb.fault = netback::Fault::kReconnect;
  nb.fault_after = 20;
  open(2, true, 2000, nb);
  RssConfig want = four_queue_rss();
  for (uint32_t& e : want.mapping)
    e %= 2;
  ASSERT_TRUE(dev->set_rss(want));
  ASSERT_TRUE(dev->connect());
  ASSERT_EQ(responder->connections(), 1u);
  // A new ring after the reset, the same configuration.
  static uint8_t frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2};
  const TxSegment seg{frame, sizeof frame};
  const TxPacket pkt{&seg, 1};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((dev->link() != LinkState::kUp || dev->reconnects() == 0) &&
         std::chrono::steady_clock::now() < deadline) {
    if (dev->link() == LinkState::kUp) dev->queue(0).transmit(std::span<const TxPacket>(&pkt, 1));
    dev->queue(0).receive(32, [](const RxPacket&) { return true; });
    pollfd pf{dev->control_fd(), POLLIN, 0};
    ::poll(&pf, 1, 2);
    dev->poll_control();
  }
  ASSERT_EQ(dev->link(), LinkState::kUp) << dev->last_down_reason();
  EXPECT_EQ(responder->connections(), 2u);
  EXPECT_EQ(responder->state().mapping, want.mapping);
  EXPECT_EQ(dev->ctrl_counters().ctrl_requests, 22u)
      << "nine for RSS and one GET_GREF_MAPPING_SIZE per queue, per connection";
}

TEST_F(CtrlRingTest, WithoutAControlRingThereIsNoRss) {
  open(2, /*ctrl=*/false);
  EXPECT_FALSE(dev->rss_capabilities().available);
  EXPECT_EQ(dev->rss_capabilities().mapping_size_max, 0u);
  RssConfig c;
  c.hash_types = kHashIpv4;
  Status s = dev->set_rss(c);
  EXPECT_EQ(s.code(), ENOTSUP);
  EXPECT_NE(s.message().find("feature-ctrl-ring"), std::string::npos) << s.message();
  ASSERT_TRUE(dev->connect());
  EXPECT_FALSE(*xs0->try_read(kXsNoTransaction, dev->info().frontend_path + "/ctrl-ring-ref"));
  EXPECT_EQ(responder->connections(), 0u);
  EXPECT_EQ(dev->ctrl_counters().ctrl_requests, 0u);
}

TEST_F(CtrlRingTest, BadRssConfigurationsAreRefusedNamingTheProblem) {
  open(4);
  auto refused = [&](const RssConfig& c, int code, const char* words) {
    Status s = dev->set_rss(c);
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  };
  RssConfig c = four_queue_rss();
  c.hash_types |= 1u << 4;  // e.g. UDP: netif has no such hash type
  refused(c, EINVAL, "cannot hash");
  c = four_queue_rss();
  c.key.resize(41);
  refused(c, EINVAL, "41-byte hash key");
  c = four_queue_rss();
  c.mapping[77] = 4;
  refused(c, EINVAL, "mapping entry 77 names queue 4");
  c = four_queue_rss();
  c.mapping.resize(kRssMappingMax + 1);
  refused(c, E2BIG, "one granted page");
  EXPECT_EQ(dev->rss(), RssConfig{}) << "nothing refused is kept";
  ASSERT_TRUE(dev->connect());
  // Connected, the backend's own limit applies (GET_HASH_MAPPING_SIZE 128).
  c = four_queue_rss();
  c.mapping.resize(256, 1);
  refused(c, E2BIG, "GET_HASH_MAPPING_SIZE");
  EXPECT_EQ(dev->ctrl_counters().ctrl_requests, 8u)
      << "only the queries were sent (hashing, and the static grants of each queue)";
}

TEST_F(CtrlRingTest, ABackendRefusalFailsTheConnectNamingTheRequest) {
  open(4);
  // A backend without a mapping table (GET_HASH_MAPPING_SIZE answers 0):
  // a table of 128 entries is refused with INVALID_PARAMETER.
  responder->set_mapping_size_max(0);
  ASSERT_TRUE(dev->set_rss(four_queue_rss()));
  Status s = dev->connect();
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_NE(s.message().find("SET_HASH_MAPPING_SIZE"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("INVALID_PARAMETER"), std::string::npos) << s.message();
  const CtrlCounters c = dev->ctrl_counters();
  EXPECT_EQ(c.ctrl_refused, 1u);
  EXPECT_EQ(c.ctrl_timeouts + c.ctrl_bad_ids + c.ctrl_bad_types + c.ctrl_bad_statuses, 0u);
  // Without a table (hash % queues) the same backend is fine.
  RssConfig modular = four_queue_rss();
  modular.mapping.clear();
  ASSERT_TRUE(dev->set_rss(modular));
  ASSERT_TRUE(dev->connect());
  EXPECT_EQ(responder->state().algorithm, netif::kCtrlHashAlgorithmToeplitz);
  EXPECT_TRUE(responder->state().mapping.empty());
}

struct CtrlFault {
  CtrlResponder::Fault fault;
  int code;
  uint64_t CtrlCounters::*counter;
  const char* words;
};

struct CtrlFaultTest : CtrlRingTest, ::testing::WithParamInterface<CtrlFault> {};

// A fault at connect: connect() fails within the timeout with the reason,
// the violation is counted under its name; then the same fault on a request
// made while connected disconnects the device.
TEST_P(CtrlFaultTest, IsACountedViolationThatDisconnectsNeverAHang) {
  set_log_sink([](LogLevel, std::string_view) {});
  const CtrlFault f = GetParam();
  open(4, true, /*ctrl_timeout_ms=*/300);
  responder->set_fault(netif::kCtrlTypeSetHashKey, f.fault);
  ASSERT_TRUE(dev->set_rss(four_queue_rss()));
  const auto t0 = std::chrono::steady_clock::now();
  Status s = dev->connect();
  const auto took = std::chrono::steady_clock::now() - t0;
  set_log_sink(nullptr);
  EXPECT_EQ(s.code(), f.code) << s.message();
  EXPECT_NE(s.message().find(f.words), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("SET_HASH_KEY"), std::string::npos) << s.message();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(dev->ctrl_counters().*f.counter, 1u);
  EXPECT_EQ(dev->link(), LinkState::kDown);

  // Connected without the fault, then a request meets it.
  set_log_sink([](LogLevel, std::string_view) {});
  responder->set_fault(netif::kCtrlTypeSetHashKey, CtrlResponder::Fault::kNone);
  ASSERT_TRUE(dev->connect());
  responder->set_fault(netif::kCtrlTypeSetHashMapping, f.fault);
  RssConfig c = four_queue_rss();
  c.mapping.assign(128, 1);
  Status u = dev->set_rss(c);
  set_log_sink(nullptr);
  EXPECT_EQ(u.code(), f.code) << u.message();
  EXPECT_EQ(dev->ctrl_counters().*f.counter, 2u);
  EXPECT_EQ(dev->link(), LinkState::kDown);
  EXPECT_NE(dev->last_down_reason().find("SET_HASH_MAPPING"), std::string::npos)
      << dev->last_down_reason();
  EXPECT_EQ(dev->rss().mapping, four_queue_rss().mapping) << "the refused change is not kept";
}

INSTANTIATE_TEST_SUITE_P(CtrlRing, CtrlFaultTest,
                         ::testing::Values(CtrlFault{CtrlResponder::Fault::kNoAnswer, ETIMEDOUT,
                                                     &CtrlCounters::ctrl_timeouts,
                                                     "did not answer"},
                                           CtrlFault{CtrlResponder::Fault::kWrongId, EPROTO,
                                                     &CtrlCounters::ctrl_bad_ids, "names id"},
                                           CtrlFault{CtrlResponder::Fault::kWrongType, EPROTO,
                                                     &CtrlCounters::ctrl_bad_types, "has type"},
                                           CtrlFault{CtrlResponder::Fault::kBadStatus, EPROTO,
                                                     &CtrlCounters::ctrl_bad_statuses, "status 9"}),
                         [](const ::testing::TestParamInfo<CtrlFault>& i) {
                           switch (i.param.fault) {
                             case CtrlResponder::Fault::kNoAnswer:
                               return std::string("NoAnswer");
                             case CtrlResponder::Fault::kWrongId:
                               return std::string("WrongId");
                             case CtrlResponder::Fault::kWrongType:
                               return std::string("WrongType");
                             default:
                               return std::string("BadStatus");
                           }
                         });

// ---------------------------------------------------------------------------
// RSS end to end over xpv-netback's own control ring (loopback): every flow
// lands on the queue mapping[hash % 128] names and carries the hash DPDK's
// rte_softrss computes; a mapping change moves a flow; a new key, new hashes.

struct Flow4 {
  uint8_t src[4], dst[4];
  uint16_t sport, dport;
  bool tcp;
};

std::vector<uint8_t> flow_frame(const Flow4& f) {
  std::vector<uint8_t> v = {2, 0, 0, 0, 0, 0x0b, 2, 0, 0, 0, 0, 0x0a, 0x08, 0x00};
  const size_t ip = v.size();
  const size_t l4len = (f.tcp ? 20 : 8) + 32;
  v.resize(ip + 20 + l4len);
  v[ip] = 0x45;
  v[ip + 2] = static_cast<uint8_t>((20 + l4len) >> 8);
  v[ip + 3] = static_cast<uint8_t>(20 + l4len);
  v[ip + 6] = 0x40;  // DF
  v[ip + 8] = 64;
  v[ip + 9] = f.tcp ? 6 : 17;
  std::memcpy(&v[ip + 12], f.src, 4);
  std::memcpy(&v[ip + 16], f.dst, 4);
  const size_t l4 = ip + 20;
  v[l4] = static_cast<uint8_t>(f.sport >> 8);
  v[l4 + 1] = static_cast<uint8_t>(f.sport);
  v[l4 + 2] = static_cast<uint8_t>(f.dport >> 8);
  v[l4 + 3] = static_cast<uint8_t>(f.dport);
  if (f.tcp) v[l4 + 12] = 0x50;
  return v;
}

struct Arrival {
  uint32_t queue = ~0u;
  uint8_t hash_type = 0;
  uint32_t hash = 0;
};

// Sends `frame` on queue `from` and waits for it to come back on any queue.
std::optional<Arrival> loop_one(Device& d, uint32_t from, const std::vector<uint8_t>& frame) {
  const TxSegment seg{frame.data(), static_cast<uint32_t>(frame.size())};
  const TxPacket pkt{&seg, 1};
  bool sent = false;
  std::optional<Arrival> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!got && std::chrono::steady_clock::now() < deadline) {
    if (!sent) sent = d.queue(from).transmit(std::span<const TxPacket>(&pkt, 1)) == 1;
    for (uint32_t q = 0; q < d.num_queues(); ++q) {
      d.queue(q).receive(32, [&](const RxPacket& p) {
        if (p.len == frame.size() && p.nfrags == 1 &&
            std::memcmp(p.frags[0].data, frame.data(), frame.size()) == 0) {
          EXPECT_FALSE(got) << "the frame arrived twice";
          got = Arrival{q, p.hash_type, p.hash};
        }
        return true;
      });
    }
    d.poll_control();
  }
  return got;
}

TEST_F(NetfrontFixture, RssOverXpvNetbackSteersEveryFlowWithDpdksHash) {
  start();  // xpv-netback with its control ring
  auto dv = Device::open(config(4));
  ASSERT_TRUE(dv) << dv.error().message;
  Device& d = **dv;
  std::mt19937 rng(12);
  RssConfig rss;
  rss.hash_types = kHashIpv4 | kHashIpv4Tcp;
  rss.key = test_key();
  for (int i = 0; i < 128; ++i)
    rss.mapping.push_back(static_cast<uint32_t>(rng() % 4));
  ASSERT_TRUE(d.set_rss(rss));
  ASSERT_TRUE(d.connect());
  EXPECT_EQ(d.rss_capabilities().mapping_size_max, 128u);

  auto random_flow = [&](bool tcp) {
    Flow4 f;
    for (auto& b : f.src)
      b = static_cast<uint8_t>(rng());
    for (auto& b : f.dst)
      b = static_cast<uint8_t>(rng());
    f.sport = static_cast<uint16_t>(rng());
    f.dport = static_cast<uint16_t>(rng());
    f.tcp = tcp;
    return f;
  };
  auto softrss = [&](const Flow4& f, const std::vector<uint8_t>& key) {
    return testing_rss::dpdk_ipv4(f.src, f.dst, f.tcp, f.sport, f.dport, key.data());
  };
  uint32_t per_queue[4] = {};
  constexpr int kFlows = 200;
  for (int i = 0; i < kFlows; ++i) {
    const Flow4 f = random_flow(i % 4 != 0);  // a UDP flow in four: hashed on addresses only
    const uint32_t h = softrss(f, rss.key);
    auto a = loop_one(d, static_cast<uint32_t>(i) % 4, flow_frame(f));
    ASSERT_TRUE(a) << "flow " << i << " never came back";
    EXPECT_EQ(a->hash, h) << "flow " << i;
    EXPECT_EQ(a->hash_type, f.tcp ? kHashIpv4Tcp : kHashIpv4) << "flow " << i;
    EXPECT_EQ(a->queue, rss.mapping[h % 128]) << "flow " << i;
    ++per_queue[a->queue];
  }
  for (uint32_t q = 0; q < 4; ++q)
    EXPECT_GT(per_queue[q], 0u) << "queue " << q;

  // A mapping change moves a flow.
  const Flow4 f = random_flow(true);
  const uint32_t h = softrss(f, rss.key);
  const uint32_t moved = (rss.mapping[h % 128] + 1) % 4;
  rss.mapping[h % 128] = moved;
  ASSERT_TRUE(d.set_rss(rss));
  auto a = loop_one(d, 0, flow_frame(f));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->queue, moved);
  EXPECT_EQ(a->hash, h);

  // A new key: another hash, rte_softrss's with that key.
  rss.key.assign(kRssKeyMax, 0);
  for (auto& b : rss.key)
    b = static_cast<uint8_t>(rng());
  ASSERT_TRUE(d.set_rss(rss));
  const uint32_t h2 = softrss(f, rss.key);
  EXPECT_NE(h2, h);
  a = loop_one(d, 0, flow_frame(f));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->hash, h2);
  EXPECT_EQ(a->queue, rss.mapping[h2 % 128]);
  const CtrlCounters cc = d.ctrl_counters();
  EXPECT_EQ(cc.ctrl_timeouts + cc.ctrl_bad_ids + cc.ctrl_bad_types + cc.ctrl_bad_statuses, 0u);
  for (uint32_t q = 0; q < 4; ++q)
    EXPECT_EQ(d.queue(q).counters().backend_errors, 0u);
}

// ---------------------------------------------------------------------------
// Static grants: a backend that keeps grefs mapped gets both pools of every
// queue registered after connect (TX read-only), in lists of at most one
// page, and deregistered before we close; NOT_SUPPORTED (Linux netback) or
// too small a table keeps grant copies. A counter per queue says which.

TEST_F(CtrlRingTest, StaticGrantsRegisterEveryPoolPageAndDeregisterBeforeTeardown) {
  open(2);
  responder->set_gref_mapping_size(1024);
  ASSERT_TRUE(dev->connect());
  CtrlResponder::State st = responder->state();
  EXPECT_EQ(st.grefs.size(), 2u * (256 + 256)) << "every page of both pools of both queues";
  EXPECT_EQ(st.gref_readonly, 2u * 256) << "the TX pages, read-only for the backend";
  for (uint32_t n : st.gref_chunks)
    EXPECT_LE(n, 512u) << "one page of xen_netif_gref per list";
  for (uint32_t q = 0; q < 2; ++q) {
    EXPECT_EQ(dev->queue(q).counters().static_grant_connections, 1u);
    EXPECT_EQ(dev->queue(q).counters().grant_copy_connections, 0u);
  }
  // Traffic flows (xpv-netback's data path) while registered.
  const std::vector<uint8_t> frame(60, 0xab);
  const TxSegment seg{frame.data(), 60};
  const TxPacket pkt{&seg, 1};
  uint32_t got = 0;
  for (int i = 0; i < 2000 && got == 0; ++i) {
    if (i == 0) {
      ASSERT_EQ(dev->queue(1).transmit(std::span<const TxPacket>(&pkt, 1)), 1u);
    }
    dev->queue(1).receive(8, [&](const RxPacket&) { return ++got, true; });
    usleep(500);
  }
  EXPECT_EQ(got, 1u);
  dev->close();
  st = responder->state();
  EXPECT_TRUE(st.grefs.empty()) << st.grefs.size() << " grefs still registered at teardown";
  const auto del =
      std::count(st.types_seen.begin(), st.types_seen.end(), netif::kCtrlTypeDelGrefMapping);
  EXPECT_EQ(static_cast<size_t>(del), st.gref_chunks.size()) << "one DEL per ADD list";
  const Device::TeardownAccount acc = dev->teardown_account();
  EXPECT_EQ(acc.returned + acc.still_mapped, acc.pages);
  EXPECT_LE(acc.still_mapped, 1u) << "at most the responder's ring mapping";
}

TEST_F(CtrlRingTest, StaticGrantsInListsTheBackendAllowsOrNotAtAll) {
  open(1);
  // A table of 300 grefs cannot take the 512 pages of a queue: grant copies.
  responder->set_gref_mapping_size(300);
  ASSERT_TRUE(dev->connect());
  EXPECT_TRUE(responder->state().grefs.empty());
  EXPECT_EQ(dev->queue(0).counters().grant_copy_connections, 1u);
  dev->close();
  // 512 exactly: registered (one list of 512).
  responder->set_gref_mapping_size(512);
  ASSERT_TRUE(dev->connect());
  EXPECT_EQ(responder->state().grefs.size(), 512u);
  EXPECT_EQ(dev->queue(0).counters().static_grant_connections, 1u);
  dev->close();
  EXPECT_TRUE(responder->state().grefs.empty());
}

// Over xpv-netback's own static grants: every pool page registered, frames
// of one to three slots come back byte for byte, served by memcpy from the
// mapped pages and no grant copy; all deregistered at close.
TEST_F(NetfrontFixture, StaticGrantsOverXpvNetbackCarryTheSameBytesWithoutGrantCopies) {
  start();
  auto dv = Device::open(config(2));
  ASSERT_TRUE(dv) << dv.error().message;
  Device& d = **dv;
  ASSERT_TRUE(d.connect());
  for (uint32_t q = 0; q < 2; ++q)
    ASSERT_EQ(d.queue(q).counters().static_grant_connections, 1u) << "queue " << q;
  EXPECT_EQ(backend->totals().static_grants_added, 2u * 512);
  const uint64_t copies_before = backend->totals().grant_copies;
  std::mt19937 rng(5);
  uint32_t checked = 0;
  for (int i = 0; i < 400; ++i) {
    const uint32_t qi = static_cast<uint32_t>(i) % 2;
    std::vector<uint8_t> frame(60 + rng() % 9000);
    for (auto& b : frame)
      b = static_cast<uint8_t>(rng());
    frame[0] = 2;  // unicast
    const TxSegment seg{frame.data(), static_cast<uint32_t>(frame.size())};
    const TxPacket pkt{&seg, 1};
    ASSERT_EQ(d.queue(qi).transmit(std::span<const TxPacket>(&pkt, 1)), 1u);
    std::vector<uint8_t> got;
    for (int t = 0; t < 5000 && got.empty(); ++t) {
      d.queue(qi).receive(1, [&](const RxPacket& p) {
        for (uint16_t f = 0; f < p.nfrags; ++f)
          got.insert(got.end(), p.frags[f].data, p.frags[f].data + p.frags[f].len);
        return true;
      });
      if (got.empty()) usleep(100);
    }
    ASSERT_EQ(got, frame) << "frame " << i << " of " << frame.size() << " bytes";
    ++checked;
  }
  EXPECT_EQ(checked, 400u);
  const netback::Counters t = backend->totals();
  EXPECT_GT(t.static_grant_copies, 400u);
  EXPECT_EQ(t.grant_copies, copies_before) << "no grant copy once the pools are registered";
  d.close();
  EXPECT_EQ(d.ctrl_counters().ctrl_refused, 0u);
  const Device::TeardownAccount acc = d.teardown_account();
  EXPECT_EQ(acc.returned, acc.pages) << "nothing still mapped: DEL_GREF_MAPPING came first";
}

}  // namespace
}  // namespace xpv
