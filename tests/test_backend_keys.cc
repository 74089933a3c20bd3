// SPDX-License-Identifier: MIT
// The frontend's parsing of backend-provided xenstore values
// (netfront/backend_keys.h): every hostile value a backend could write gets
// the documented refusal (an error naming key, path and value) or fallback
// (a warning naming them, and a safe value).
#include <gtest/gtest.h>

#include <string>

#include "netfront/backend_keys.h"
#include "support/netfront_fixture.h"

namespace xpv {
namespace {

constexpr const char* kFe = "/local/domain/1/device/vif/0";
constexpr const char* kBe = "/local/domain/0/backend/vif/1/0";

// What xpv-netback and Linux netback write for a healthy vif.
RawBackendKeys healthy() {
  RawBackendKeys r;
  r.frontend_path = kFe;
  r.backend_path = kBe;
  r.backend_id = "0";
  r.mac = "00:16:3e:00:00:11";
  r.max_queues = "8";
  r.features = {"1", "1", "1", "0", "0", "0", "0"};
  return r;
}

bool mentions(const std::vector<std::string>& ws, const std::string& what) {
  for (const auto& w : ws) {
    if (w.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(BackendKeys, HealthyValuesAreTakenWithoutWarnings) {
  auto k = parse_backend_keys(healthy());
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_TRUE(k->warnings.empty());
  EXPECT_EQ(to_string(k->mac), "00:16:3e:00:00:11");
  EXPECT_EQ(k->mtu, 1500u);
  EXPECT_EQ(k->features.max_queues, 8u);
  EXPECT_TRUE(k->features.rx_copy);
  EXPECT_TRUE(k->features.sg);
  EXPECT_TRUE(k->features.split_event_channels);
  EXPECT_FALSE(k->features.ctrl_ring);
}

TEST(BackendKeys, AbsentOptionalKeysHaveLinuxDefaults) {
  RawBackendKeys r = healthy();
  r.backend_id.reset();
  r.max_queues.reset();
  for (auto& f : r.features)
    f.reset();
  auto k = parse_backend_keys(r);
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->warnings.empty());
  EXPECT_EQ(k->backend_id, 0);
  EXPECT_EQ(k->features.max_queues, 1u);
  EXPECT_FALSE(k->features.rx_copy);
}

TEST(BackendKeys, MalformedMacRefusesTheVifNamingKeyAndValue) {
  for (const char* bad :
       {"00:16:3e:zz:00:11", "00:16:3e:00:00", "00:16:3e:00:00:11:22", " 0:16:3e:00:00:11",
        "+0:16:3e:00:00:11", "00-16-3e-00-00-11", "", "0x:16:3e:00:00:11", "00:16:3e:00:00:1\n"}) {
    RawBackendKeys r = healthy();
    r.mac = bad;
    auto k = parse_backend_keys(r);
    ASSERT_FALSE(k) << "accepted mac '" << bad << "'";
    EXPECT_EQ(k.error().code, EPROTO);
    EXPECT_NE(k.error().message.find(std::string(kFe) + "/mac"), std::string::npos)
        << k.error().message;
    EXPECT_NE(k.error().message.find("not a MAC address"), std::string::npos);
  }
}

TEST(BackendKeys, MulticastOrZeroMacRefusesTheVif) {
  for (const char* bad :
       {"01:00:5e:00:00:01", "ff:ff:ff:ff:ff:ff", "33:33:00:00:00:01", "00:00:00:00:00:00"}) {
    RawBackendKeys r = healthy();
    r.mac = bad;
    auto k = parse_backend_keys(r);
    ASSERT_FALSE(k) << "accepted mac " << bad;
    EXPECT_NE(k.error().message.find(std::string(kFe) + "/mac is '" + bad + "'"), std::string::npos)
        << k.error().message;
    EXPECT_NE(k.error().message.find("refusing the vif"), std::string::npos);
  }
  RawBackendKeys r = healthy();
  r.mac.reset();
  EXPECT_FALSE(parse_backend_keys(r));
}

TEST(BackendKeys, MacOverrideIgnoresTheKey) {
  RawBackendKeys r = healthy();
  r.mac = "garbage";
  r.mac_override = MacAddr{0x02, 0, 0, 0, 0, 7};
  auto k = parse_backend_keys(r);
  ASSERT_TRUE(k);
  EXPECT_EQ(to_string(k->mac), "02:00:00:00:00:07");
}

TEST(BackendKeys, MaxQueuesZeroIsOneWithAWarning) {
  RawBackendKeys r = healthy();
  r.max_queues = "0";
  auto k = parse_backend_keys(r);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->features.max_queues, 1u);
  EXPECT_TRUE(mentions(k->warnings, std::string(kBe) + "/multi-queue-max-queues is '0'"));
}

TEST(BackendKeys, MaxQueuesHugeIsClampedWithAWarning) {
  for (const char* huge : {"4294967295", "17", "1000"}) {
    RawBackendKeys r = healthy();
    r.max_queues = huge;
    auto k = parse_backend_keys(r);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->features.max_queues, kMaxQueues) << huge;
    EXPECT_TRUE(mentions(k->warnings, std::string("multi-queue-max-queues is '") + huge + "'"));
  }
  RawBackendKeys r = healthy();
  r.max_queues = "16";
  EXPECT_EQ(parse_backend_keys(r)->features.max_queues, 16u);
}

TEST(BackendKeys, MaxQueuesGarbageIsOneWithAWarning) {
  // strtoul took "12abc" as 12 and 2^32 (and more) as a wrapped value.
  for (const char* bad :
       {"12abc", "4294967296", "99999999999999999999", "-1", " 4", "+4", "0x8", "", "4 "}) {
    RawBackendKeys r = healthy();
    r.max_queues = bad;
    auto k = parse_backend_keys(r);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->features.max_queues, 1u) << "'" << bad << "'";
    EXPECT_TRUE(mentions(k->warnings, "multi-queue-max-queues")) << bad;
    EXPECT_TRUE(mentions(k->warnings, "not a decimal number")) << bad;
  }
}

TEST(BackendKeys, AbsurdMtuFallsBackTo1500WithAWarning) {
  for (const char* bad : {"abc", "0", "67", "65522", "4294967295", "9000x", "1e3", "-1500"}) {
    RawBackendKeys r = healthy();
    r.mtu = bad;
    auto k = parse_backend_keys(r);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->mtu, 1500u) << bad;
    EXPECT_TRUE(mentions(k->warnings, std::string(kFe) + "/mtu is '")) << bad;
  }
  for (const char* good : {"68", "9000", "65521"}) {
    RawBackendKeys r = healthy();
    r.mtu = good;
    auto k = parse_backend_keys(r);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->mtu, std::stoul(good));
    EXPECT_TRUE(k->warnings.empty());
  }
}

TEST(BackendKeys, FeatureGarbageIsOffWithAWarningNamingTheKey) {
  for (const char* bad : {"yes", "2", " 1", "1 ", "01", "true", "", "-1"}) {
    for (size_t i = 0; i < kBackendFeatureKeys.size(); ++i) {
      RawBackendKeys r = healthy();
      r.features.fill("1");
      r.features[i] = bad;
      auto k = parse_backend_keys(r);
      ASSERT_TRUE(k);
      const BackendFeatures& f = k->features;
      const bool on[] = {f.rx_copy,
                         f.sg,
                         f.split_event_channels,
                         f.gso_tcpv4,
                         f.gso_tcpv6,
                         f.ipv6_csum_offload,
                         f.ctrl_ring,
                         f.multicast_control,
                         f.dynamic_multicast_control};
      static_assert(std::size(on) == kBackendFeatureKeys.size());
      for (size_t j = 0; j < kBackendFeatureKeys.size(); ++j)
        EXPECT_EQ(on[j], j != i) << kBackendFeatureKeys[i] << "='" << bad << "'";
      ASSERT_EQ(k->warnings.size(), 1u);
      EXPECT_NE(k->warnings[0].find(std::string(kBe) + "/" + kBackendFeatureKeys[i] + " is '"),
                std::string::npos)
          << k->warnings[0];
      EXPECT_NE(k->warnings[0].find("treated as absent"), std::string::npos);
    }
  }
}

TEST(BackendKeys, BadBackendIdRefusesTheVif) {
  for (const char* bad : {"abc", "32752", "65535", "0x0", "-1", "1 "}) {
    RawBackendKeys r = healthy();
    r.backend_id = bad;
    auto k = parse_backend_keys(r);
    ASSERT_FALSE(k) << bad;
    EXPECT_NE(k.error().message.find("/backend-id is '"), std::string::npos);
  }
  RawBackendKeys r = healthy();
  r.backend_id = "32751";
  EXPECT_EQ(parse_backend_keys(r)->backend_id, 32751);
}

TEST(BackendKeys, ValuesInMessagesAreEscapedAndCut) {
  RawBackendKeys r = healthy();
  r.mac = std::string("\x1b[31m\0", 6) + std::string(200, 'a');
  auto k = parse_backend_keys(r);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(k.error().message.find("\\x1b"), std::string::npos);
  EXPECT_LT(k.error().message.size(), 300u);
}

TEST(BackendKeys, StateGarbageIsUnknown) {
  using S = netif::XenbusState;
  EXPECT_EQ(parse_xenbus_state(std::nullopt), std::nullopt);
  for (const char* bad : {"", "9", "99", "-1", "4x", " 4", "+4", "4294967296", "abc"})
    EXPECT_EQ(parse_xenbus_state(std::string(bad)), S::kUnknown) << bad;
  EXPECT_EQ(parse_xenbus_state(std::string("4")), S::kConnected);
  EXPECT_EQ(parse_xenbus_state(std::string("8")), S::kReconfigured);
  EXPECT_EQ(parse_xenbus_state(std::string("0")), S::kUnknown);
}

TEST(BackendKeys, ParseMacIsStrict) {
  EXPECT_TRUE(parse_mac("00:16:3E:aa:BB:cc"));
  EXPECT_FALSE(parse_mac(" 0:16:3e:aa:bb:cc"));  // sscanf's %2x took these
  EXPECT_FALSE(parse_mac("+0:16:3e:aa:bb:cc"));
  EXPECT_FALSE(parse_mac("00:16:3e:aa:bb:c "));
  EXPECT_FALSE(parse_mac("00:16:3e:aa:bb:ccd"));
  EXPECT_FALSE(parse_mac("00:16:3e:aa:bb"));
}

// The device with xpv-netback's hostile-xenstore faults: the refusal
// reaches the caller, a fallback connects.
struct HostileXenstoreDevice : NetfrontFixture {
  void with_fault(netback::Fault f) {
    netback::Config cfg;
    cfg.fault = f;
    start(cfg);
  }
};

TEST_F(HostileXenstoreDevice, MulticastMacFailsTheOpenNamingTheKey) {
  with_fault(netback::Fault::kXsMulticastMac);
  auto d = Device::open(config());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("/device/vif/0/mac is '01:16:3e:"), std::string::npos)
      << d.error().message;
  EXPECT_NE(d.error().message.find("multicast"), std::string::npos);
}

TEST_F(HostileXenstoreDevice, MalformedMacFailsTheOpenButAnAppMacIsUsed) {
  with_fault(netback::Fault::kXsBadMac);
  auto d = Device::open(config());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("not a MAC address"), std::string::npos);
  DeviceConfig c = config();
  c.mac = MacAddr{0x02, 0, 0, 0, 0, 9};
  auto d2 = Device::open(c);
  ASSERT_TRUE(d2) << d2.error().message;
  ASSERT_TRUE((*d2)->connect());
  EXPECT_EQ(to_string((*d2)->info().mac), "02:00:00:00:00:09");
}

TEST_F(HostileXenstoreDevice, HugeQueueLimitIsClampedAndTheDeviceConnects) {
  with_fault(netback::Fault::kXsMaxQueuesHuge);
  auto d = Device::open(config(2));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE((*d)->connect());
  EXPECT_EQ((*d)->info().features.max_queues, kMaxQueues);
  EXPECT_EQ((*d)->num_queues(), 2u);
}

TEST_F(HostileXenstoreDevice, GarbageFeaturesAndMtuAreOffAndTheDeviceConnects) {
  for (auto f : {netback::Fault::kXsFeatureGarbage, netback::Fault::kXsBadMtu}) {
    TearDown();
    with_fault(f);
    auto d = Device::open(config());
    ASSERT_TRUE(d) << d.error().message;
    ASSERT_TRUE((*d)->connect());
    const DeviceInfo& i = (*d)->info();
    EXPECT_EQ(i.mtu, 1500u);
    EXPECT_TRUE(i.features.rx_copy);
    if (f == netback::Fault::kXsFeatureGarbage) {
      // "yes", "2" and " 1" read as off, as if absent.
      EXPECT_FALSE(i.features.sg);
      EXPECT_FALSE(i.features.split_event_channels);
      EXPECT_FALSE(i.features.ctrl_ring);
      EXPECT_FALSE(i.split_event_channels);
    }
  }
}

}  // namespace
}  // namespace xpv
