// SPDX-License-Identifier: MIT
// xpv-netback, driven by a small hand-written frontend made of the
// foundation's pieces (a guest domain on the simulated hypervisor, grant
// sharing, event channels, xenstore and the netif front rings): the toolstack
// nodes, the handshake, the data path both ways, every TX rule Linux netback
// enforces, RX stall and expiry, each injected fault as the frontend sees it,
// and a frontend dying mid-traffic. The frontend is deliberately not the
// project's netfront: it must be able to send what a netfront never would.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netback/backend.h"
#include "netback/cli.h"
#include "ring/netif.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "support/frames.h"
#include "support/netback_frontend.h"
#include "support/subprocess.h"
#include "util/log.h"

namespace xpv {
namespace {

// The names these tests use (netback::Backend, netif::TxRequest, tf::...) come
// with netback_testing (support/netback_frontend.h).
using namespace netback_testing;

// ---------------------------------------------------------------------------
// Toolstack and handshake.

TEST_F(NetbackTest, ToolstackWritesBothDirectoriesWithPermissions) {
  Config cfg;
  cfg.vifs = 2;
  cfg.mtu = 9000;
  cfg.mac = netback::parse_mac("00:16:3e:aa:bb:cc");
  cfg.max_queues = 4;
  cfg.feature_sg = false;
  start(cfg);
  Frontend fe(*hv);
  const domid_t d = fe.domid();
  ASSERT_TRUE(fe.wait_be_state(2));
  ASSERT_TRUE(wait_until(
      [&] { return fe.read(format("/local/domain/0/backend/vif/%u/1/state", d)) == "2"; }));

  auto expect = [&](const std::string& path, const std::string& value) {
    EXPECT_EQ(fe.read(path).value_or("<absent>"), value) << path;
  };
  const std::string fe0 = fe.fe(), be0 = fe.be();
  expect(fe0 + "/backend", be0);
  expect(fe0 + "/backend-id", "0");
  expect(fe0 + "/mac", "00:16:3e:aa:bb:cc");
  expect(fe0 + "/handle", "0");
  expect(fe0 + "/mtu", "9000");
  expect(fe0 + "/state", "1");
  expect(be0 + "/frontend", fe0);
  expect(be0 + "/frontend-id", std::to_string(d));
  expect(be0 + "/online", "1");
  expect(be0 + "/handle", "0");
  expect(be0 + "/mac", "00:16:3e:aa:bb:cc");
  expect(be0 + "/feature-sg", "0");
  expect(be0 + "/feature-rx-copy", "1");
  expect(be0 + "/feature-rx-flip", "0");
  expect(be0 + "/feature-split-event-channels", "1");
  expect(be0 + "/multi-queue-max-queues", "4");
  // The offloads Linux netback offers (netback_probe).
  expect(be0 + "/feature-gso-tcpv4", "1");
  expect(be0 + "/feature-gso-tcpv6", "1");
  expect(be0 + "/feature-ipv6-csum-offload", "1");
  expect(be0 + "/feature-multicast-control", "1");
  expect(be0 + "/feature-dynamic-multicast-control", "1");
  expect(be0 + "/feature-ctrl-ring", "1");
  // vif 1 gets the default mac: 00:16:3e:<domid>:<handle>.
  expect(format("/local/domain/%u/device/vif/1/mac", d),
         format("00:16:3e:00:%02x:01", static_cast<unsigned>(d)));
  expect(format("/local/domain/%u/device/vif/1/handle", d), "1");

  // Permissions: the frontend dir is the guest's, dom0 reads; the backend
  // dir is dom0's, the guest reads.
  const std::vector<XsPermission> fe_perms = {{d, XsPermission::kNone},
                                              {kDom0, XsPermission::kRead}};
  const std::vector<XsPermission> be_perms = {{kDom0, XsPermission::kNone},
                                              {d, XsPermission::kRead}};
  for (const char* k : {"", "/state", "/mac", "/backend"}) {
    auto p = fe.xs().get_permissions(kXsNoTransaction, fe0 + k);
    ASSERT_TRUE(p) << k;
    EXPECT_EQ(*p, fe_perms) << k;
  }
  for (const char* k : {"", "/state", "/feature-rx-copy"}) {
    auto p = fe.xs().get_permissions(kXsNoTransaction, be0 + k);
    ASSERT_TRUE(p) << k;
    EXPECT_EQ(*p, be_perms) << k;
  }
  // The guest may not write the backend's nodes, and may write its own.
  EXPECT_FALSE(fe.xs().write(kXsNoTransaction, be0 + "/state", "4"));
  EXPECT_TRUE(fe.xs().write(kXsNoTransaction, fe0 + "/tx-ring-ref", "9"));
  // Another guest can read neither.
  Frontend other(*hv);
  EXPECT_FALSE(other.xs().read(kXsNoTransaction, fe0 + "/mac"));
  EXPECT_FALSE(other.xs().read(kXsNoTransaction, be0 + "/state"));
}

TEST_F(NetbackTest, HandshakeWithSplitAndSingleEventChannels) {
  start();
  Frontend a(*hv), b(*hv);
  ASSERT_TRUE(a.connect(1, KeyOptions{}));
  KeyOptions single;
  single.split = false;
  ASSERT_TRUE(b.connect(1, single));
  VifStats sa = vif(a.domid()), sb = vif(b.domid());
  EXPECT_EQ(sa.queues, 1u);
  EXPECT_TRUE(sa.split_evtchn);
  EXPECT_EQ(sb.queues, 1u);
  EXPECT_FALSE(sb.split_evtchn);
  EXPECT_EQ(sa.total.connects, 1u);
  EXPECT_FALSE(a.read(a.be() + "/error"));
  // Both work, each with its own kind of channel.
  for (Frontend* f : {&a, &b}) {
    f->post_rx(f->q(), 8);
    auto data = pattern(100, 3);
    f->send(f->q(), data);
    auto rsp = f->wait_tx(f->q(), 1);
    ASSERT_EQ(rsp.size(), 1u);
    EXPECT_EQ(rsp[0].status, netif::kRspOkay);
    auto got = f->receive(f->q());
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, data);
  }
}

TEST_F(NetbackTest, MultiQueueKeysUnderQueueN) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect(3));
  EXPECT_EQ(vif(fe.domid()).queues, 3u);
  // Each queue loops back on itself.
  for (uint32_t i = 0; i < 3; ++i) {
    fe.post_rx(fe.q(i), 4);
    auto data = pattern(200 + i, static_cast<uint8_t>(i));
    fe.send(fe.q(i), data);
    auto got = fe.receive(fe.q(i));
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got->data, data);
  }
  auto per = vif(fe.domid()).per_queue;
  ASSERT_EQ(per.size(), 3u);
  for (const Counters& c : per) {
    EXPECT_EQ(c.tx_packets, 1u);
    EXPECT_EQ(c.rx_packets, 1u);
  }
}

TEST_F(NetbackTest, TooManyQueuesIsAXenbusFatal) {
  Config cfg;
  cfg.max_queues = 8;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.setup_queues(1, true);
  KeyOptions o;
  o.num_queues_key = 9;
  fe.write_keys(o);
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_EQ(fe.read(fe.be() + "/error").value_or(""),
            "22 guest requested 9 queues, exceeding the maximum of 8.");
  EXPECT_EQ(vif(fe.domid()).total.fatal_errors, 1u);
  EXPECT_EQ(vif(fe.domid()).queues, 0u);
}

TEST_F(NetbackTest, ZeroQueuesIsAXenbusFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.setup_queues(1, true);
  KeyOptions o;
  o.num_queues_key = 0;
  fe.write_keys(o);
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_EQ(fe.read(fe.be() + "/error").value_or(""), "22 guest requested 0 queues.");
}

TEST_F(NetbackTest, UnexpectedFrontendStateIsAXenbusFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.set_state(7);  // Reconfiguring: netback has no business with it
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_EQ(fe.read(fe.be() + "/error").value_or(""), "22 saw state 7 at frontend");
}

TEST_F(NetbackTest, MissingRequestRxCopyIsAXenbusFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.setup_queues(1, true);
  KeyOptions o;
  o.rx_copy = false;
  fe.write_keys(o);
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_EQ(fe.read(fe.be() + "/error").value_or(""), "95 frontend does not support rx-copy");
  EXPECT_EQ(hv->stats().grant_maps, 0u) << "nothing stays mapped";
}

TEST_F(NetbackTest, BadRingRefOrPortIsAXenbusFatalAndNothingLeaks) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.wait_be_state(2));
  const auto base = hv->stats();
  fe.setup_queues(1, true);
  fe.write_keys();
  fe.write("event-channel-rx", "999");  // not a port offered to dom0
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(5));
  const std::string err = fe.read(fe.be() + "/error").value_or("");
  EXPECT_NE(err.find("mapping shared-frames"), std::string::npos) << err;
  EXPECT_NE(err.find("rx 999"), std::string::npos) << err;
  auto s = hv->stats();
  EXPECT_EQ(s.grant_maps, 0u);
  EXPECT_EQ(s.evtchn_handles, base.evtchn_handles + 0u) << "the queue's handle was closed";
}

// Linux's connect_data_rings() reads event-channel-tx/-rx first and falls
// back to event-channel only when they are absent. A frontend that used
// split channels, closed, and reconnects with a single channel while the
// old keys are still there gets its stale ports bound: the handshake fails
// (here because the old ports are gone). Our frontend must remove stale keys;
// this backend behaves as Linux does so that forgetting it shows.
TEST_F(NetbackTest, StaleSplitChannelKeysWinOverEventChannelAsInLinux) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect(1, KeyOptions{}));
  const evtchn_port_t old_tx = fe.q().tx_port, old_rx = fe.q().rx_port;
  // Close: backend Closing, then Closed; the vif keeps its online node.
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.drop_queues();
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  EXPECT_EQ(vif(fe.domid()).queues, 0u);
  EXPECT_EQ(vif(fe.domid()).total.disconnects, 1u);
  // Start over with a single channel, leaving the stale split keys.
  fe.set_state(1);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.setup_queues(1, /*split=*/false);
  KeyOptions single;
  single.split = false;
  fe.write_keys(single);
  ASSERT_TRUE(fe.read(fe.fe() + "/event-channel-tx"));
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(5));
  const std::string err = fe.read(fe.be() + "/error").value_or("");
  EXPECT_NE(err.find(format("port tx %u rx %u", old_tx, old_rx)), std::string::npos) << err;

  // The fix is the frontend's: remove the stale keys and connect again.
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  fe.rm("event-channel-tx");
  fe.rm("event-channel-rx");
  fe.set_state(1);
  ASSERT_TRUE(fe.wait_be_state(2));
  fe.set_state(4);
  ASSERT_TRUE(fe.wait_be_state(4));
  EXPECT_FALSE(fe.read(fe.be() + "/error")) << "a successful connect clears the error";
  EXPECT_FALSE(vif(fe.domid()).split_evtchn);
  fe.post_rx(fe.q(), 2);
  auto data = pattern(64, 9);
  fe.send(fe.q(), data);
  auto got = fe.receive(fe.q());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
  EXPECT_EQ(vif(fe.domid()).total.connects, 2u);
}

// ---------------------------------------------------------------------------
// Data path.

TEST_F(NetbackTest, LoopbackOf60And1514And9000BytesBothWaysMultiSlot) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 64);
  struct Case {
    size_t len;
    std::vector<uint16_t> slots;
  };
  const Case cases[] = {
      {60, {60}},
      {1514, {1000, 514}},              // first slot's size field: 1514
      {9000, {4096, 4096, 808}},        // three full-page-ish slots
      {9000, {100, 3000, 4000, 1900}},  // uneven
  };
  uint64_t bytes = 0;
  for (const Case& c : cases) {
    // A UDP frame of c.len bytes whose checksum the frontend left partial.
    tf::FrameSpec spec;
    spec.tcp = false;
    spec.payload = static_cast<uint32_t>(c.len - 14 - 20 - 8);
    spec.seed = static_cast<uint8_t>(c.len);
    auto data = tf::make_frame(spec, /*partial=*/true);
    auto ids = fe.put_packet(q, data, c.slots, netif::kTxCsumBlank);
    fe.push_tx(q);
    auto rsp = fe.wait_tx(q, c.slots.size());
    ASSERT_EQ(rsp.size(), c.slots.size());
    for (size_t i = 0; i < rsp.size(); ++i) {
      EXPECT_EQ(rsp[i].id, ids[i]);
      EXPECT_EQ(rsp[i].status, netif::kRspOkay);
    }
    auto got = fe.receive(q);
    ASSERT_TRUE(got) << c.len;
    EXPECT_EQ(got->data, data) << c.len;
    // RX: ceil(len / 4096) slots at offset 0, more_data on all but the last,
    // a blank checksum stays blank.
    ASSERT_EQ(got->rsps.size(), (c.len + 4095) / 4096);
    for (size_t i = 0; i < got->rsps.size(); ++i) {
      const RxResponse& r = got->rsps[i];
      EXPECT_EQ(r.offset, 0);
      EXPECT_EQ(!!(r.flags & netif::kRxMoreData), i + 1 < got->rsps.size());
      EXPECT_EQ(r.status, static_cast<int16_t>(std::min<size_t>(4096, c.len - i * 4096)));
    }
    EXPECT_EQ(got->rsps[0].flags & (netif::kRxCsumBlank | netif::kRxDataValidated),
              netif::kRxCsumBlank | netif::kRxDataValidated);
    bytes += c.len;
  }
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.tx_packets, 4u);
  EXPECT_EQ(c.tx_bytes, bytes);
  EXPECT_EQ(c.rx_packets, 4u);
  EXPECT_EQ(c.rx_bytes, bytes);
  EXPECT_EQ(c.tx_error_responses, 0u);
  EXPECT_EQ(c.fatal_errors, 0u);
  EXPECT_GT(c.events, 0u);
}

TEST_F(NetbackTest, ManyPacketsInBatchesWrapTheRings) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 200);
  uint32_t received = 0;
  for (uint32_t round = 0; round < 12; ++round) {
    for (uint32_t i = 0; i < 50; ++i) {
      auto data = pattern(60 + i, static_cast<uint8_t>(round * 50 + i));
      fe.put_packet(q, data, {static_cast<uint16_t>(data.size())});
    }
    fe.push_tx(q);
    auto rsp = fe.wait_tx(q, 50);
    ASSERT_EQ(rsp.size(), 50u);
    for (uint32_t i = 0; i < 50; ++i) {
      auto got = fe.receive(q);
      ASSERT_TRUE(got) << round << "/" << i;
      ASSERT_EQ(got->data, pattern(60 + i, static_cast<uint8_t>(round * 50 + i)));
      ++received;
    }
    fe.post_rx(q, 50);
  }
  EXPECT_EQ(received, 600u);
  EXPECT_EQ(ctr(fe.domid()).rx_packets, 600u);
}

TEST_F(NetbackTest, ExtraInfoSlotsAreConsumedAndAnsweredNull) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 4);
  // A TCP frame of 200 bytes, its checksum partial, as TSO sends it.
  tf::FrameSpec spec;
  spec.payload = 200 - 14 - 20 - 20;
  auto data = tf::make_frame(spec, /*partial=*/true);
  // First slot flagged extra_info, then a GSO extra, then a data slot.
  const uint16_t id0 = static_cast<uint16_t>(q.tx.req_prod_pvt() & 255);
  std::memcpy(q.tx_bufs.page(id0), data.data(), 100);
  fe.put_raw(q,
             TxRequest{q.tx_bufs.ref(id0), 0,
                       static_cast<uint16_t>(netif::kTxMoreData | netif::kTxExtraInfo), id0, 200});
  netif::ExtraInfo gso{};
  gso.type = netif::kExtraTypeGso;
  gso.u.gso.size = 1448;
  gso.u.gso.type = 1;  // TCPv4
  TxRequest raw{};
  std::memcpy(&raw, &gso, sizeof gso);
  fe.put_raw(q, raw);
  const uint16_t id2 = static_cast<uint16_t>(q.tx.req_prod_pvt() & 255);
  std::memcpy(q.tx_bufs.page(id2), data.data() + 100, 100);
  fe.put_raw(q, TxRequest{q.tx_bufs.ref(id2), 0, 0, id2, 100});
  fe.push_tx(q);
  auto rsp = fe.wait_tx(q, 3);
  ASSERT_EQ(rsp.size(), 3u);
  EXPECT_EQ(rsp[0].id, id0);
  EXPECT_EQ(rsp[0].status, netif::kRspOkay);
  EXPECT_EQ(rsp[1].status, netif::kRspNull);
  EXPECT_EQ(rsp[2].id, id2);
  EXPECT_EQ(rsp[2].status, netif::kRspOkay);
  auto got = fe.receive(q);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
}

// ---------------------------------------------------------------------------
// TX rules (xenvif_tx_build_gops / xenvif_count_requests).

// Slots of `n` bytes each (the first slot's size field is the total).
std::vector<uint16_t> slots_of(size_t count, uint16_t each) {
  return std::vector<uint16_t>(count, each);
}

TEST_F(NetbackTest, UpTo19SlotsAreAccepted20And21DroppedWithErrors) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 32);
  // 18 slots (XEN_NETIF_NR_SLOTS_MIN, what every backend must take) and 19.
  for (size_t n : {18u, 19u}) {
    auto data = pattern(n * 100, static_cast<uint8_t>(n));
    fe.put_packet(q, data, slots_of(n, 100));
    fe.push_tx(q);
    auto rsp = fe.wait_tx(q, n);
    ASSERT_EQ(rsp.size(), n);
    for (auto& r : rsp)
      EXPECT_EQ(r.status, netif::kRspOkay) << n;
    auto got = fe.receive(q);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, data);
  }
  // 20 and 21: every slot answered NETIF_RSP_ERROR, nothing delivered.
  for (size_t n : {20u, 21u}) {
    auto ids = fe.put_packet(q, pattern(n * 100, 0), slots_of(n, 100));
    fe.push_tx(q);
    auto rsp = fe.wait_tx(q, n);
    ASSERT_EQ(rsp.size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(rsp[i].id, ids[i]);
      EXPECT_EQ(rsp[i].status, netif::kRspError) << n << " slot " << i;
    }
  }
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.tx_packets, 2u);
  EXPECT_EQ(c.tx_dropped_too_many_slots, 2u);
  EXPECT_EQ(c.tx_error_responses, 41u);
  EXPECT_EQ(c.fatal_errors, 0u);
  EXPECT_TRUE(fe.rx_quiet_for(q, 50ms));
  // Still serving.
  fe.send(q, pattern(80, 2));
  ASSERT_EQ(fe.wait_tx(q, 1).size(), 1u);
}

TEST_F(NetbackTest, TwentyTwoSlotsIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.put_packet(fe.q(), pattern(22 * 50, 0), slots_of(22, 50));
  fe.push_tx(fe.q());
  expect_fatal(fe, "Malicious frontend using 20 slots, threshold 20");
  // A disabled vif answers nothing more.
  fe.send(fe.q(), pattern(60, 1));
  EXPECT_TRUE(fe.wait_tx(fe.q(), 1, nullptr, 100ms).empty());
}

TEST_F(NetbackTest, ShortPacketIsDroppedWithAnError) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.send(q, pattern(13, 0));
  auto rsp = fe.wait_tx(q, 1);
  ASSERT_EQ(rsp.size(), 1u);
  EXPECT_EQ(rsp[0].status, netif::kRspError);
  // Linux checks the first slot's own length: 100 bytes with only 10 in the
  // first slot are dropped too.
  fe.put_packet(q, pattern(100, 0), {10, 90});
  fe.push_tx(q);
  rsp = fe.wait_tx(q, 2);
  ASSERT_EQ(rsp.size(), 2u);
  EXPECT_EQ(rsp[0].status, netif::kRspError);
  EXPECT_EQ(rsp[1].status, netif::kRspError);
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.tx_dropped_short, 2u);
  EXPECT_EQ(c.tx_error_responses, 3u);
  EXPECT_EQ(c.tx_packets, 0u);
  EXPECT_FALSE(vif(fe.domid()).disabled);
}

TEST_F(NetbackTest, SlotBiggerThanTheRemainingSizeIsDroppedWithErrors) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  // Total 1000, but the slots after the first claim 800 + 800.
  auto data = pattern(1000, 0);
  fe.put_packet(q, data, {100, 800, 800});
  fe.push_tx(q);
  auto rsp = fe.wait_tx(q, 3);
  ASSERT_EQ(rsp.size(), 3u);
  for (auto& r : rsp)
    EXPECT_EQ(r.status, netif::kRspError);
  EXPECT_EQ(ctr(fe.domid()).tx_dropped_oversize_slot, 1u);
  EXPECT_FALSE(vif(fe.domid()).disabled);
}

TEST_F(NetbackTest, BadGrantIsAnErrorResponse) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.put_raw(q, TxRequest{77777, 0, 0, 5, 100});  // no such grant
  fe.push_tx(q);
  auto rsp = fe.wait_tx(q, 1);
  ASSERT_EQ(rsp.size(), 1u);
  EXPECT_EQ(rsp[0].id, 5);
  EXPECT_EQ(rsp[0].status, netif::kRspError);
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.tx_dropped_bad_grant, 1u);
  EXPECT_EQ(c.tx_error_responses, 1u);
  EXPECT_FALSE(vif(fe.domid()).disabled);
}

TEST_F(NetbackTest, LaterSlotCrossingThePageIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.put_packet(fe.q(), pattern(1100, 0), {100, 1000}, 0, {0, 3500});
  fe.push_tx(fe.q());
  expect_fatal(fe, "Cross page boundary, txp->offset: 3500, size: 1000");
}

TEST_F(NetbackTest, FirstSlotCrossingThePageIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  // The first slot's own data is total minus the later slots: 1500 - 500.
  fe.put_packet(fe.q(), pattern(1500, 0), {1000, 500}, 0, {3500, 0});
  fe.push_tx(fe.q());
  expect_fatal(fe, "txreq.offset: 3500, size: 1000, end: 4500");
}

TEST_F(NetbackTest, RequestProducerOverflowIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  // req_prod 300 past the consumer: more than 256 requests.
  ring::store_release(fe.q().tx.header()->req_prod, 300);
  ASSERT_TRUE(fe.ev().notify(fe.q().tx_port));
  expect_fatal(fe, "Impossible number of requests. req_prod 300, req_cons 0, size 256");
}

// RING_HAS_UNCONSUMED_REQUESTS' bound: with requests consumed but not yet
// answered (late responses hold them), a req_prod moved back behind req_cons
// still lies within RING_SIZE of rsp_prod, yet "req_prod - req_cons" is
// nearly 2^32. That is an impossible producer, fatal; not 4 billion requests
// to read from stale slots.
TEST_F(NetbackTest, RequestProducerMovedBackIsFatal) {
  Config cfg;
  cfg.fault = Fault::kLateTxRsp;
  cfg.fault_after = 0;
  cfg.fault_arg = 60000;  // ms: no response is written during the test
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  for (int i = 0; i < 10; ++i)
    fe.put_packet(fe.q(), pattern(100, static_cast<uint8_t>(i)), {100});
  fe.push_tx(fe.q());
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::tx_packets, 10));
  ring::store_release(fe.q().tx.header()->req_prod, 5);
  ASSERT_TRUE(fe.ev().notify(fe.q().tx_port));
  expect_fatal(fe, "Impossible number of requests. req_prod 5, req_cons 10, size 256");
  // Nothing was read past the ten real requests.
  const Counters c = ctr(fe.domid());
  EXPECT_EQ(c.tx_packets, 10u);
  EXPECT_EQ(c.tx_dropped_short + c.tx_dropped_too_many_slots + c.tx_dropped_oversize_slot +
                c.tx_dropped_bad_grant,
            0u);
}

TEST_F(NetbackTest, PacketRunningPastTheProducerIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  // more_data on the last slot pushed.
  fe.put_raw(fe.q(), TxRequest{fe.q().tx_bufs.ref(0), 0, netif::kTxMoreData, 0, 200});
  fe.push_tx(fe.q());
  expect_fatal(fe, "Asked for 0 slots but exceeds this limit");
}

TEST_F(NetbackTest, InvalidExtraTypeIsFatal) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.put_raw(fe.q(), TxRequest{fe.q().tx_bufs.ref(0), 0, netif::kTxExtraInfo, 0, 60});
  TxRequest raw{};
  raw.gref = 9;  // type 9, flags 0
  fe.put_raw(fe.q(), raw);
  fe.push_tx(fe.q());
  expect_fatal(fe, "Invalid extra type: 9");
}

// ---------------------------------------------------------------------------
// RX.

TEST_F(NetbackTest, RxStallIsDetectedAndRecoveredFrom) {
  Config cfg;
  cfg.rx_stall_timeout_ms = 300;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  // No RX request posted: the looped-back packets wait, then the guest RX
  // is declared stalled and what waited is dropped.
  for (int i = 0; i < 3; ++i)
    fe.send(q, pattern(100, static_cast<uint8_t>(i)));
  ASSERT_EQ(fe.wait_tx(q, 3).size(), 3u);
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_stalls, 1));
  // The backend thread bumps the two counters one after the other (relaxed
  // stores): a read between them sees the stall and not yet the drops.
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_stalled, 3))
      << "dropped while stalled: " << ctr(fe.domid()).rx_dropped_stalled;
  // While stalled, new packets are dropped at once.
  fe.send(q, pattern(100, 7));
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_stalled, 4));
  // Requests again: the queue is ready, packets flow.
  fe.post_rx(q, 4);
  auto data = pattern(300, 8);
  ASSERT_TRUE(wait_until([&] {
    // The backend notices the posted requests; until then it drops.
    fe.drain_tx(q);
    fe.send(q, data);
    return fe.receive(q, 20ms).has_value();
  }));
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.rx_stalls, 1u);
  EXPECT_GE(c.rx_packets, 1u);
}

TEST_F(NetbackTest, QueuedPacketsExpire) {
  Config cfg;
  cfg.rx_stall_timeout_ms = 0;  // stall detection off
  cfg.rx_expire_ms = 200;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  for (int i = 0; i < 5; ++i)
    fe.send(q, pattern(100, static_cast<uint8_t>(i)));
  ASSERT_EQ(fe.wait_tx(q, 5).size(), 5u);
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_expired, 5));
  EXPECT_EQ(ctr(fe.domid()).rx_stalls, 0u);
  // Expired packets are gone: posting requests now delivers nothing old.
  fe.post_rx(q, 4);
  EXPECT_TRUE(fe.rx_quiet_for(q, 50ms));
  auto data = pattern(120, 40);
  fe.send(q, data);
  auto got = fe.receive(q);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
}

TEST_F(NetbackTest, WithoutRxNotifyPacketsExpireAfter30ms) {
  Config cfg;
  cfg.rx_expire_ms = 60'000;
  start(cfg);
  Frontend fe(*hv);
  KeyOptions o;
  o.rx_notify = false;
  ASSERT_TRUE(fe.connect(1, o));
  fe.send(fe.q(), pattern(100, 0));
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_expired, 1));
}

TEST_F(NetbackTest, FullRxQueueDrops) {
  Config cfg;
  cfg.rx_queue_packets = 16;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  for (int i = 0; i < 20; ++i)
    fe.put_packet(q, pattern(100, static_cast<uint8_t>(i)), {100});
  fe.push_tx(q);
  ASSERT_EQ(fe.wait_tx(q, 20).size(), 20u);
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_queue_full, 4));
  fe.post_rx(q, 32);
  for (int i = 0; i < 16; ++i) {
    auto got = fe.receive(q);
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got->data, pattern(100, static_cast<uint8_t>(i)));
  }
}

TEST_F(NetbackTest, BadRxRequestIsAnsweredWithAnError) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx_raw(q, 0, 66666);  // not a grant
  fe.send(q, pattern(100, 0));
  auto got = fe.receive(q);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->rsps.size(), 1u);
  EXPECT_EQ(got->rsps[0].id, 0);
  EXPECT_EQ(got->rsps[0].status, netif::kRspError);
  EXPECT_EQ(ctr(fe.domid()).rx_bad_requests, 1u);
  EXPECT_EQ(ctr(fe.domid()).rx_packets, 0u);
  // The next good request works.
  fe.post_rx(q, 1);
  auto data = pattern(100, 5);
  fe.send(q, data);
  got = fe.receive(q);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
}

// ---------------------------------------------------------------------------
// Modes.

TEST_F(NetbackTest, SourceModeGeneratesNumberedFrames) {
  Config cfg;
  cfg.mode = Mode::kSource;
  cfg.source_size = 5000;  // two RX slots each
  cfg.source_count = 5;
  cfg.mac = netback::parse_mac("00:16:3e:01:02:03");
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 64);
  for (uint64_t seq = 0; seq < 5; ++seq) {
    auto got = fe.receive(q);
    ASSERT_TRUE(got) << seq;
    ASSERT_EQ(got->data.size(), 5000u);
    ASSERT_EQ(got->rsps.size(), 2u);
    const uint8_t head[14] = {0x00, 0x16, 0x3e, 0x01, 0x02, 0x03, 0x02,
                              0,    0,    0,    0,    0x01, 0x88, 0xb5};
    EXPECT_EQ(std::memcmp(got->data.data(), head, 14), 0);
    uint64_t s = 0;
    for (int i = 0; i < 8; ++i)
      s = s << 8 | got->data[14 + i];
    EXPECT_EQ(s, seq);
    for (size_t i = 22; i < got->data.size(); ++i)
      ASSERT_EQ(got->data[i], static_cast<uint8_t>(seq + i)) << i;
  }
  EXPECT_TRUE(fe.rx_quiet_for(q, 50ms)) << "--source-count 5";
  // TX is sunk.
  fe.send(q, pattern(60, 0));
  ASSERT_EQ(fe.wait_tx(q, 1).size(), 1u);
  EXPECT_TRUE(fe.rx_quiet_for(q, 20ms));
  EXPECT_EQ(ctr(fe.domid()).rx_packets, 5u);
}

// --source-rate paces the frames; with --source-count they are numbered
// without a gap and stop at the count (no timing asserted: that is the
// bench's business).
TEST_F(NetbackTest, PacedSourceNumbersEveryFrameAndStopsAtTheCount) {
  Config cfg;
  cfg.mode = Mode::kSource;
  cfg.source_size = 64;
  cfg.source_rate = 2000;
  cfg.source_count = 200;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 256);
  for (uint64_t seq = 0; seq < 200; ++seq) {
    auto got = fe.receive(q);
    ASSERT_TRUE(got) << seq;
    uint64_t s = 0;
    for (int i = 0; i < 8; ++i)
      s = s << 8 | got->data[14 + i];
    ASSERT_EQ(s, seq);
  }
  EXPECT_TRUE(fe.rx_quiet_for(q, 50ms)) << "--source-count 200";
  EXPECT_EQ(ctr(fe.domid()).rx_packets, 200u);
  EXPECT_EQ(ctr(fe.domid()).rx_dropped_queue_full, 0u);
}

TEST_F(NetbackTest, SourceModeKeepsGoingAsRequestsArePosted) {
  Config cfg;
  cfg.mode = Mode::kSource;
  cfg.source_size = 1500;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  // A few requests at a time, many times around the ring: the backend must
  // ask to be notified (req_event) whenever it runs out.
  fe.post_rx(q, 16);
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    auto got = fe.receive(q);
    ASSERT_TRUE(got) << seq;
    uint64_t s = 0;
    for (int i = 0; i < 8; ++i)
      s = s << 8 | got->data[14 + i];
    ASSERT_EQ(s, seq);
    if (seq % 16 == 15) fe.post_rx(q, 16);
  }
  EXPECT_EQ(ctr(fe.domid()).rx_dropped_queue_full, 0u);
}

TEST_F(NetbackTest, SinkModeCountsAndDrops) {
  Config cfg;
  cfg.mode = Mode::kSink;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  for (int i = 0; i < 4; ++i)
    fe.send(fe.q(), pattern(500, 0));
  ASSERT_EQ(fe.wait_tx(fe.q(), 4).size(), 4u);
  EXPECT_EQ(ctr(fe.domid()).tx_packets, 4u);
  EXPECT_EQ(ctr(fe.domid()).tx_bytes, 2000u);
  EXPECT_TRUE(fe.rx_quiet_for(fe.q(), 20ms));
}

TEST_F(NetbackTest, BusyPollNeedsNoNotifications) {
  Config cfg;
  cfg.busy_poll = true;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 16);
  // Once the worker disarmed req_event, pushes ask for no notification.
  ASSERT_TRUE(wait_until(
      [&] { return ring::load_relaxed(q.tx.header()->req_event) - q.tx.req_prod_pvt() > 0x1000; }));
  for (int i = 0; i < 10; ++i) {
    auto data = pattern(100, static_cast<uint8_t>(i));
    fe.put_packet(q, data, {100});
    EXPECT_FALSE(q.tx.push_requests_and_check_notify());
    auto got = fe.receive(q);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, data);
  }
  EXPECT_EQ(ctr(fe.domid()).tx_packets, 10u);
}

// ---------------------------------------------------------------------------
// Faults, as the frontend sees them.

TEST_F(NetbackTest, FaultBadTxResponseId) {
  Config cfg;
  cfg.fault = Fault::kBadTxRspId;
  cfg.fault_after = 2;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  for (int i = 0; i < 4; ++i)
    fe.put_packet(fe.q(), pattern(60, 0), {60});
  fe.push_tx(fe.q());
  auto rsp = fe.wait_tx(fe.q(), 4);
  ASSERT_EQ(rsp.size(), 4u);
  EXPECT_EQ(rsp[0].id, 0);
  EXPECT_EQ(rsp[1].id, 1);
  EXPECT_EQ(rsp[2].id, 0xFFFF);
  EXPECT_EQ(rsp[3].id, 3);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultDuplicateTxResponse) {
  Config cfg;
  cfg.fault = Fault::kDupTxRsp;
  cfg.fault_after = 2;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  for (int i = 0; i < 4; ++i)
    fe.put_packet(fe.q(), pattern(60, 0), {60});
  fe.push_tx(fe.q());
  auto rsp = fe.wait_tx(fe.q(), 4);
  ASSERT_EQ(rsp.size(), 4u);
  EXPECT_EQ(rsp[0].id, 0);
  EXPECT_EQ(rsp[1].id, 1);
  EXPECT_EQ(rsp[2].id, 1) << "answered twice";
  EXPECT_EQ(rsp[3].id, 3);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultResponseProducerOverflow) {
  Config cfg;
  cfg.fault = Fault::kRspProdOverflow;
  cfg.fault_after = 1;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  // The first response is pushed, then rsp_prod jumps 1000 further (the
  // frontend may or may not see the response before the jump).
  fe.send(fe.q(), pattern(60, 0));
  bool overflow = false;
  auto rsp = fe.wait_tx(fe.q(), 2, &overflow);
  EXPECT_TRUE(overflow) << "RING_RESPONSE_PROD_OVERFLOW";
  EXPECT_LE(rsp.size(), 1u);
  EXPECT_EQ(ring::load_relaxed(fe.q().tx.header()->rsp_prod), 1001u);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
  // The backend leaves the ring alone from then on.
  fe.send(fe.q(), pattern(60, 1));
  EXPECT_FALSE(
      wait_until([&] { return ring::load_relaxed(fe.q().tx.header()->rsp_prod) != 1001u; }, 50ms));
}

TEST_F(NetbackTest, FaultBadRxResponse) {
  Config cfg;
  cfg.fault = Fault::kBadRxRsp;
  cfg.fault_after = 1;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 4);
  fe.send(fe.q(), pattern(100, 0));
  auto good = fe.receive(fe.q());
  ASSERT_TRUE(good);
  EXPECT_LE(good->rsps[0].offset + good->rsps[0].status, 4096);
  fe.send(fe.q(), pattern(100, 1));
  auto bad = fe.receive(fe.q());
  ASSERT_TRUE(bad);
  EXPECT_GT(bad->rsps[0].offset + bad->rsps[0].status, 4096);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultRxResponseWithTheWrongId) {
  Config cfg;
  cfg.fault = Fault::kRxRspBadId;
  cfg.fault_after = 1;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 4);  // ids 0..3 at indices 0..3
  fe.send(fe.q(), pattern(100, 0));
  auto good = fe.receive(fe.q());
  ASSERT_TRUE(good);
  EXPECT_EQ(good->rsps[0].id, 0);
  fe.send(fe.q(), pattern(100, 1));
  auto bad = fe.receive(fe.q());
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->rsps[0].id, 1) << "the request at index 1 had id 1";
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultEventStorm) {
  Config cfg;
  cfg.fault = Fault::kEventStorm;
  cfg.fault_after = 1;
  cfg.fault_arg = 20000;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  // Ask for no notification with responses: every event we get from now on
  // comes from the storm.
  q.tx.set_response_event(0x10000);
  while (auto p = fe.ev().pending()) {
    if (!*p) break;
    ASSERT_TRUE(fe.ev().unmask(**p));
  }
  fe.send(q, pattern(60, 0));
  ASSERT_EQ(fe.wait_tx(q, 1).size(), 1u);
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::faults_injected, 1));
  // Both ports (split channels) fired, with no response behind them.
  std::vector<evtchn_port_t> fired;
  ASSERT_TRUE(wait_until([&] {
    auto p = fe.ev().pending();
    if (p && *p && std::find(fired.begin(), fired.end(), **p) == fired.end()) fired.push_back(**p);
    return fired.size() == 2;
  }));
  EXPECT_NE(std::find(fired.begin(), fired.end(), q.tx_port), fired.end());
  EXPECT_NE(std::find(fired.begin(), fired.end(), q.rx_port), fired.end());
  EXPECT_EQ(q.tx.available_responses().count, 0u);
  EXPECT_EQ(q.rx.available_responses().count, 0u);
  EXPECT_GE(ctr(fe.domid()).notifies_sent, 2u * 20000u);
}

TEST_F(NetbackTest, FaultLateTxResponses) {
  Config cfg;
  cfg.fault = Fault::kLateTxRsp;
  cfg.fault_after = 0;
  cfg.fault_arg = 700;  // ms
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 4);
  const auto t0 = std::chrono::steady_clock::now();
  auto data = pattern(100, 0);
  fe.send(fe.q(), data);
  // The packet itself goes through at once...
  auto got = fe.receive(fe.q());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
  // ...its TX response only after the delay.
  auto rsp = fe.wait_tx(fe.q(), 1);
  ASSERT_EQ(rsp.size(), 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 700ms);
  EXPECT_EQ(rsp[0].status, netif::kRspOkay);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultReconnect) {
  Config cfg;
  cfg.fault = Fault::kReconnect;
  cfg.fault_after = 2;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  fe.send(fe.q(), pattern(60, 0));
  fe.send(fe.q(), pattern(60, 1));
  // The backend closes by itself; online stays 1.
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_EQ(fe.read(fe.be() + "/online").value_or(""), "1");
  // The frontend follows: Closing, Closed.
  fe.set_state(5);
  fe.drop_queues();
  fe.set_state(6);
  // Backend: Closed, queues dropped, then InitWait as freshly probed.
  ASSERT_TRUE(fe.wait_be_state(2));
  EXPECT_EQ(vif(fe.domid()).queues, 0u);
  fe.set_state(1);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  auto data = pattern(200, 2);
  fe.send(fe.q(), data);
  auto got = fe.receive(fe.q());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, data);
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.connects, 2u);
  EXPECT_EQ(c.disconnects, 1u);
  EXPECT_EQ(c.faults_injected, 1u) << "--fault-arg defaults to once";
  // No further reconnect after more packets.
  for (int i = 0; i < 4; ++i)
    fe.send(fe.q(), pattern(60, 0));
  ASSERT_EQ(fe.wait_tx(fe.q(), 5).size(), 5u);
  EXPECT_EQ(fe.be_state(), 4);
}

// --fault-every: the reconnect comes S seconds after the connect, with no
// packet sent at all (a soak reconnects every minute whatever the rate).
TEST_F(NetbackTest, FaultReconnectEverySecondsNeedsNoPackets) {
  Config cfg;
  cfg.fault = Fault::kReconnect;
  cfg.fault_every_s = 1;
  start(cfg);
  Frontend fe(*hv);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(fe.connect());
  ASSERT_TRUE(fe.wait_be_state(5));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 900ms);
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
}

TEST_F(NetbackTest, FaultStallRx) {
  Config cfg;
  cfg.fault = Fault::kStallRx;
  cfg.fault_after = 1;
  cfg.rx_stall_timeout_ms = 100;
  cfg.rx_expire_ms = 300;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 8);
  fe.send(q, pattern(100, 0));
  ASSERT_TRUE(fe.receive(q));
  fe.send(q, pattern(100, 1));
  ASSERT_EQ(fe.wait_tx(q, 2).size(), 2u);
  // Requests stay posted and unconsumed; the queued packet expires.
  ASSERT_TRUE(wait_ctr(fe.domid(), &Counters::rx_dropped_expired, 1));
  EXPECT_EQ(q.rx.available_responses().count, 0u);
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.rx_stalls, 0u) << "requests are posted: not a guest stall";
  EXPECT_EQ(c.rx_packets, 1u);
  EXPECT_EQ(c.faults_injected, 1u);
}

// ---------------------------------------------------------------------------
// A frontend dying mid-traffic.

TEST_F(NetbackTest, FrontendDeathMidTrafficLeavesNothingBehind) {
  start();
  // The backend's own dom0 resources are the baseline.
  ASSERT_TRUE(wait_until([&] { return hv->stats().xs_connections >= 1; }));
  const auto base = hv->stats();
  domid_t d = 0;
  {
    Frontend fe(*hv);
    d = fe.domid();
    ASSERT_TRUE(fe.connect(2));
    for (uint32_t i = 0; i < 2; ++i)
      fe.post_rx(fe.q(i), 128);
    // Traffic flows on both queues...
    for (uint32_t i = 0; i < 2; ++i) {
      fe.put_packet(fe.q(i), pattern(1500, 0), {1000, 500});
      fe.push_tx(fe.q(i));
      ASSERT_EQ(fe.wait_tx(fe.q(i), 2).size(), 2u);
    }
    // ...keep both busy, then die with requests in flight.
    for (int round = 0; round < 20; ++round) {
      for (uint32_t i = 0; i < 2; ++i) {
        fe.drain_tx(fe.q(i));
        for (int k = 0; k < 8 && fe.q(i).tx.free_requests() >= 2; ++k)
          fe.put_packet(fe.q(i), pattern(1500, 0), {1000, 500});
        fe.push_tx(fe.q(i));
      }
    }
    EXPECT_GT(hv->stats().grant_maps, 0u);
  }  // every handle of the domain closed: the domain is destroyed
  ASSERT_TRUE(wait_until([&] {
    auto s = hv->stats();
    return s.domains == base.domains && s.grant_maps == 0 && s.zombie_domains == 0 &&
           s.ports_bound == base.ports_bound && s.evtchn_handles == base.evtchn_handles &&
           s.grants_active == base.grants_active && s.xs_connections == base.xs_connections;
  })) << "domains "
      << hv->stats().domains << " maps " << hv->stats().grant_maps << " ports "
      << hv->stats().ports_bound << " handles " << hv->stats().evtchn_handles;
  auto gone = be->vif_stats(d, 0);
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->alive);
  EXPECT_GT(gone->total.tx_packets, 0u);
  EXPECT_EQ(gone->total.fatal_errors, 0u);
  // The backend dir went too, and the backend serves the next domain.
  auto dom0 = sim::local_platform(*hv, /*as_dom0=*/true);
  ASSERT_TRUE(dom0);
  auto xs0 = (*dom0)->open_xenstore();
  ASSERT_TRUE(xs0);
  EXPECT_TRUE(wait_until([&] {
    auto r = (*xs0)->try_read(kXsNoTransaction, format("/local/domain/0/backend/vif/%u", d));
    return r && !*r;
  }));
  Frontend next(*hv);
  ASSERT_TRUE(next.connect());
  next.post_rx(next.q(), 2);
  next.send(next.q(), pattern(90, 4));
  ASSERT_TRUE(next.receive(next.q()));
}

TEST_F(NetbackTest, StopClosesEveryVif) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  be->stop();
  EXPECT_EQ(fe.be_state(), 6);
  EXPECT_EQ(hv->stats().grant_maps, 0u);
  const std::string json = be->stats_json();
  EXPECT_NE(json.find("\"tx_packets\": 0"), std::string::npos);
  EXPECT_NE(be->summary().find(format("vif%u.0", fe.domid())), std::string::npos);
}

// ---------------------------------------------------------------------------
// Bridge mode: several guests (frontends) on one learning switch.

const netback::Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// An Ethernet frame from `src` to `dst` (ethertype 0x88b5) whose byte 14 is
// `tag`.
std::vector<uint8_t> eth(const netback::Mac& dst, const netback::Mac& src, uint8_t tag,
                         size_t len = 60) {
  auto v = pattern(len, tag);
  std::copy(dst.begin(), dst.end(), v.begin());
  std::copy(src.begin(), src.end(), v.begin() + 6);
  v[12] = 0x88;
  v[13] = 0xb5;
  v[14] = tag;
  return v;
}

struct NetbackBridgeTest : NetbackTest {
  void start_bridge(Config cfg = {}) {
    cfg.mode = Mode::kBridge;
    start(cfg);
  }
  // One frame, and its TX response: by then its copies are in their
  // targets' inboxes (a TX batch is forwarded before its responses go out).
  void send(Frontend& f, FeQueue& q, const std::vector<uint8_t>& frame) {
    f.send(q, frame);
    EXPECT_EQ(f.wait_tx(q, 1).size(), 1u);
  }
  // The next frame `f` receives on `q` is `want`.
  ::testing::AssertionResult got(Frontend& f, FeQueue& q, const std::vector<uint8_t>& want) {
    auto r = f.receive(q);
    if (!r) return ::testing::AssertionFailure() << "dom" << f.domid() << ": nothing received";
    if (r->data != want) {
      return ::testing::AssertionFailure()
             << "dom" << f.domid() << ": got the frame tagged "
             << (r->data.size() > 14 ? int{r->data[14]} : -1) << ", wanted " << int{want[14]};
    }
    return ::testing::AssertionSuccess();
  }
  std::optional<netback::BridgeFdbEntry> fdb(const netback::Mac& m) {
    for (const auto& e : be->bridge_fdb()) {
      if (e.mac == netback::format_mac(m)) return e;
    }
    return std::nullopt;
  }
};

TEST_F(NetbackBridgeTest, FloodsLearnsAndSendsUnicastOnlyToTheLearnedVif) {
  start_bridge();
  Frontend a(*hv), b(*hv), c(*hv);
  for (Frontend* f : {&a, &b, &c}) {
    ASSERT_TRUE(f->connect());
    f->post_rx(f->q(), 64);
  }
  const auto ma = a.mac(), mb = b.mac(), mc = c.mac();
  // A broadcasts: every other vif gets a copy.
  const auto f1 = eth(kBroadcast, ma, 1);
  send(a, a.q(), f1);
  EXPECT_TRUE(got(b, b.q(), f1));
  EXPECT_TRUE(got(c, c.q(), f1));
  // A's mac is learned: B's reply goes to A, and it is the first frame A
  // gets (its own broadcast did not come back).
  const auto f2 = eth(ma, mb, 2);
  send(b, b.q(), f2);
  EXPECT_TRUE(got(a, a.q(), f2));
  // B's next broadcast is C's next frame: the reply did not go to C (what
  // one queue sends reaches a target queue in order).
  const auto f3 = eth(kBroadcast, mb, 3);
  send(b, b.q(), f3);
  EXPECT_TRUE(got(c, c.q(), f3));
  EXPECT_TRUE(got(a, a.q(), f3));
  // Unknown unicast and multicast: flooded to the others, not the sender.
  const netback::Mac unknown = {0x02, 0, 0, 0, 0, 0x99};
  const netback::Mac mcast = {0x01, 0x00, 0x5e, 0, 0, 0xfb};
  const auto f4 = eth(unknown, mc, 4), f5 = eth(mcast, mc, 5);
  send(c, c.q(), f4);
  send(c, c.q(), f5);
  for (Frontend* f : {&a, &b}) {
    EXPECT_TRUE(got(*f, f->q(), f4));
    EXPECT_TRUE(got(*f, f->q(), f5));
  }
  // A second station behind A: what A sends to it stays off the bridge.
  const netback::Mac behind_a = {0x02, 0, 0, 0, 0x0a, 0x02};
  const auto f6 = eth(kBroadcast, behind_a, 6), f7 = eth(behind_a, ma, 7), f8 = eth(mb, ma, 8);
  send(a, a.q(), f6);
  send(a, a.q(), f7);
  send(a, a.q(), f8);
  EXPECT_TRUE(got(b, b.q(), f6));
  EXPECT_TRUE(got(b, b.q(), f8));  // not f7
  EXPECT_TRUE(got(c, c.q(), f6));
  EXPECT_TRUE(c.rx_quiet_for(c.q(), 20ms));

  const Counters ca = ctr(a.domid()), cb = ctr(b.domid()), cc = ctr(c.domid());
  EXPECT_EQ(ca.tx_packets, 4u);
  EXPECT_EQ(ca.bridge_flooded, 2u);
  EXPECT_EQ(ca.bridge_unicast, 1u);
  EXPECT_EQ(ca.bridge_dropped_self, 1u);
  EXPECT_EQ(cb.bridge_flooded, 1u);
  EXPECT_EQ(cb.bridge_unicast, 1u);
  EXPECT_EQ(cc.bridge_flooded, 2u);
  EXPECT_EQ(ca.rx_packets, 4u);
  EXPECT_EQ(cb.rx_packets, 5u);
  EXPECT_EQ(cc.rx_packets, 3u);
  for (const Counters& x : {ca, cb, cc}) {
    EXPECT_EQ(x.bridge_dropped, 0u);
    EXPECT_EQ(x.rx_dropped_queue_full, 0u);
  }
  // The learning table: every source seen, on the vif it came from.
  EXPECT_EQ(be->bridge_fdb().size(), 4u);
  for (auto [m, f] : {std::pair{ma, &a}, {mb, &b}, {mc, &c}, {behind_a, &a}}) {
    auto e = fdb(m);
    ASSERT_TRUE(e) << netback::format_mac(m);
    EXPECT_EQ(e->domid, f->domid());
    EXPECT_EQ(e->handle, 0u);
    EXPECT_EQ(e->queue, 0u);
    EXPECT_LT(e->age_s, 10.0);
  }
  EXPECT_FALSE(fdb(unknown));
  EXPECT_NE(be->stats_json().find("\"mac\": \"" + netback::format_mac(ma) + "\""),
            std::string::npos);
}

TEST_F(NetbackBridgeTest, TargetQueueIsTheSourceQueueModuloTheTargetsQueueCount) {
  start_bridge();
  Frontend a(*hv), b(*hv);
  ASSERT_TRUE(a.connect(4));
  ASSERT_TRUE(b.connect(2));
  for (uint32_t i = 0; i < 4; ++i)
    a.post_rx(a.q(i), 16);
  for (uint32_t i = 0; i < 2; ++i)
    b.post_rx(b.q(i), 128);
  const auto ma = a.mac(), mb = b.mac();
  // Both learned: A from its queue 0 (to B's queue 0), B from its queue 1
  // (to A's queue 1).
  const auto fa = eth(kBroadcast, ma, 200), fb = eth(kBroadcast, mb, 201);
  send(a, a.q(0), fa);
  EXPECT_TRUE(got(b, b.q(0), fa));
  send(b, b.q(1), fb);
  EXPECT_TRUE(got(a, a.q(1), fb));
  // A's queue 3 goes to B's queue 1 (3 % 2), in order.
  for (int i = 0; i < 100; ++i)
    a.put_packet(a.q(3), eth(mb, ma, static_cast<uint8_t>(i)), {60});
  a.push_tx(a.q(3));
  ASSERT_EQ(a.wait_tx(a.q(3), 100).size(), 100u);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(got(b, b.q(1), eth(mb, ma, static_cast<uint8_t>(i)))) << i;
  // A's queue 2 to B's queue 0; B's queues 0 and 1 to A's 0 and 1.
  const auto f2 = eth(mb, ma, 202), g0 = eth(ma, mb, 210), g1 = eth(ma, mb, 211);
  send(a, a.q(2), f2);
  EXPECT_TRUE(got(b, b.q(0), f2));
  send(b, b.q(0), g0);
  EXPECT_TRUE(got(a, a.q(0), g0));
  send(b, b.q(1), g1);
  EXPECT_TRUE(got(a, a.q(1), g1));
  // Nothing went to any other queue.
  const auto pa = vif(a.domid()).per_queue, pb = vif(b.domid()).per_queue;
  ASSERT_EQ(pa.size(), 4u);
  ASSERT_EQ(pb.size(), 2u);
  const uint64_t want_a[4] = {1, 2, 0, 0}, want_b[2] = {2, 100};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(pa[i].rx_packets, want_a[i]) << "A's queue " << i;
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(pb[i].rx_packets, want_b[i]) << "B's queue " << i;
  // A mac is learned with the queue it last came from.
  ASSERT_TRUE(fdb(ma));
  EXPECT_EQ(fdb(ma)->queue, 2u);
  ASSERT_TRUE(fdb(mb));
  EXPECT_EQ(fdb(mb)->queue, 1u);
}

TEST_F(NetbackBridgeTest, WhatATargetCannotTakeIsDroppedAndCounted) {
  Config cfg;
  cfg.rx_queue_packets = 16;
  start_bridge(cfg);
  Frontend a(*hv), b(*hv);
  ASSERT_TRUE(a.connect());
  ASSERT_TRUE(b.connect());
  a.post_rx(a.q(), 8);
  const auto ma = a.mac(), mb = b.mac();
  const auto hello = eth(kBroadcast, mb, 100);
  send(b, b.q(), hello);
  ASSERT_TRUE(got(a, a.q(), hello));
  // B posts no RX buffer: 16 frames wait in its RX queue, 24 are dropped,
  // by B's full RX queue or, when B's worker lags, by its full inbox.
  for (int i = 0; i < 40; ++i)
    a.put_packet(a.q(), eth(mb, ma, static_cast<uint8_t>(i)), {60});
  a.push_tx(a.q());
  ASSERT_EQ(a.wait_tx(a.q(), 40).size(), 40u);
  ASSERT_TRUE(wait_until([&] {
    return ctr(b.domid()).rx_dropped_queue_full + ctr(a.domid()).bridge_dropped == 24;
  })) << ctr(b.domid()).rx_dropped_queue_full
      << " + " << ctr(a.domid()).bridge_dropped;
  EXPECT_EQ(ctr(a.domid()).bridge_unicast, 40u);
  b.post_rx(b.q(), 32);
  for (int i = 0; i < 16; ++i)
    ASSERT_TRUE(got(b, b.q(), eth(mb, ma, static_cast<uint8_t>(i)))) << i;
  EXPECT_TRUE(wait_ctr(b.domid(), &Counters::rx_packets, 16));
  // A disabled target (a fatal error) takes nothing: A's copies for it are
  // dropped and counted on A's side, A's worker never waits.
  ring::store_release(b.q().tx.header()->req_prod, 300);
  ASSERT_TRUE(b.ev().notify(b.q().tx_port));
  ASSERT_TRUE(wait_until([&] { return vif(b.domid()).disabled; }));
  const uint64_t before = ctr(a.domid()).bridge_dropped;
  int tries = 0;
  ASSERT_TRUE(wait_until([&] {
    ++tries;
    send(a, a.q(), eth(mb, ma, 150));
    return ctr(a.domid()).bridge_dropped > before;
  }));
  EXPECT_EQ(ctr(a.domid()).bridge_unicast, 40u + static_cast<uint64_t>(tries));
  EXPECT_EQ(ctr(a.domid()).fatal_errors, 0u);
}

TEST_F(NetbackBridgeTest, ADomainDyingWhileAnotherSendsToItIsSafeAndCounted) {
  start_bridge();
  ASSERT_TRUE(wait_until([&] { return hv->stats().xs_connections >= 1; }));
  const auto base = hv->stats();
  auto a = std::make_unique<Frontend>(*hv);
  Frontend b(*hv), c(*hv);
  ASSERT_TRUE(a->connect(2));
  ASSERT_TRUE(b.connect(2));
  ASSERT_TRUE(c.connect());
  for (uint32_t i = 0; i < 2; ++i) {
    a->post_rx(a->q(i), 200);
    b.post_rx(b.q(i), 16);
  }
  c.post_rx(c.q(), 250);
  const domid_t da = a->domid();
  const auto ma = a->mac(), mb = b.mac(), mc = c.mac();
  send(*a, a->q(0), eth(kBroadcast, ma, 0));  // A is learned
  // B sends to A from both queues, 40 frames a burst.
  uint64_t sent = 0;
  auto burst = [&](uint8_t tag) {
    for (uint32_t i = 0; i < 2; ++i) {
      for (int k = 0; k < 20; ++k)
        b.put_packet(b.q(i), eth(ma, mb, tag), {60});
      b.push_tx(b.q(i));
    }
    for (uint32_t i = 0; i < 2; ++i)
      ASSERT_EQ(b.wait_tx(b.q(i), 20).size(), 20u);
    sent += 40;
  };
  burst(1);
  burst(2);
  ASSERT_TRUE(wait_ctr(da, &Counters::rx_packets, 80));  // A got them all
  a.reset();                                             // A's domain dies...
  burst(3);  // ...while B keeps sending to it, during the teardown
  burst(4);
  ASSERT_TRUE(wait_until([&] { return !vif(da).alive; }));
  burst(5);  // and after it: A's mac is unknown again, flooded to C
  burst(6);
  EXPECT_EQ(sent, 240u);

  const Counters cb = ctr(b.domid());
  EXPECT_EQ(cb.tx_packets, sent);
  EXPECT_EQ(cb.bridge_unicast + cb.bridge_flooded, sent);
  EXPECT_GE(cb.bridge_unicast, 80u);
  EXPECT_GE(cb.bridge_flooded, 80u);
  EXPECT_LE(cb.bridge_dropped, cb.bridge_unicast - 80);
  EXPECT_EQ(cb.bridge_dropped_self, 0u);
  EXPECT_EQ(cb.fatal_errors, 0u);
  // C got every flood, A's broadcast and B's frames for the vanished A.
  ASSERT_TRUE(wait_ctr(c.domid(), &Counters::rx_packets, 1 + cb.bridge_flooded))
      << ctr(c.domid()).rx_packets << " vs 1 + " << cb.bridge_flooded;
  EXPECT_TRUE(got(c, c.q(), eth(kBroadcast, ma, 0)));
  const VifStats gone = vif(da);
  EXPECT_FALSE(gone.alive);
  EXPECT_EQ(gone.total.fatal_errors, 0u);
  EXPECT_GE(gone.total.rx_packets, 80u);
  EXPECT_LE(gone.total.rx_packets, cb.bridge_unicast - cb.bridge_dropped);
  // A left the bridge and its table; B and C go on.
  EXPECT_FALSE(fdb(ma));
  ASSERT_TRUE(fdb(mb));
  const auto hi = eth(mb, mc, 42);
  send(c, c.q(), hi);
  EXPECT_TRUE(got(b, b.q(0), eth(kBroadcast, ma, 0)));
  EXPECT_TRUE(got(b, b.q(0), hi));
  EXPECT_EQ(ctr(c.domid()).bridge_unicast, 1u);
  // Nothing of A is left in the hypervisor.
  EXPECT_TRUE(wait_until([&] {
    auto s = hv->stats();
    return s.grant_maps > 0 && s.zombie_domains == 0 && s.domains == base.domains + 2;
  }));
}

TEST_F(NetbackBridgeTest, EveryVifOfEveryDomainIsOnTheBridge) {
  Config cfg;
  cfg.vifs = 2;
  start_bridge(cfg);
  Frontend a0(*hv);
  Frontend a1(a0, 1);
  Frontend b(*hv);
  for (Frontend* f : {&a0, &a1, &b}) {
    ASSERT_TRUE(f->connect());
    f->post_rx(f->q(), 8);
  }
  ASSERT_NE(a0.mac(), a1.mac());
  const auto f1 = eth(kBroadcast, a0.mac(), 1), f2 = eth(kBroadcast, a1.mac(), 2);
  send(a0, a0.q(), f1);
  EXPECT_TRUE(got(a1, a1.q(), f1));
  EXPECT_TRUE(got(b, b.q(), f1));
  send(a1, a1.q(), f2);
  EXPECT_TRUE(got(a0, a0.q(), f2));
  EXPECT_TRUE(got(b, b.q(), f2));
  // B to A's vif 1: that vif only (A's vif 0 sees B's next broadcast first).
  const auto f3 = eth(a1.mac(), b.mac(), 3), f4 = eth(kBroadcast, b.mac(), 4);
  send(b, b.q(), f3);
  send(b, b.q(), f4);
  EXPECT_TRUE(got(a1, a1.q(), f3));
  EXPECT_TRUE(got(a1, a1.q(), f4));
  EXPECT_TRUE(got(a0, a0.q(), f4));
  EXPECT_EQ(vif(a0.domid(), 1).total.rx_packets, 3u);
  EXPECT_EQ(vif(a0.domid(), 0).total.rx_packets, 2u);
  ASSERT_TRUE(fdb(a1.mac()));
  EXPECT_EQ(fdb(a1.mac())->handle, 1u);
}

TEST_F(NetbackBridgeTest, LearnedMacsAgeOut) {
  Config cfg;
  cfg.bridge_ageing_ms = 100;
  start_bridge(cfg);
  Frontend a(*hv), b(*hv);
  for (Frontend* f : {&a, &b}) {
    ASSERT_TRUE(f->connect());
    f->post_rx(f->q(), 8);
  }
  const auto f1 = eth(kBroadcast, a.mac(), 1), f2 = eth(a.mac(), b.mac(), 2);
  send(a, a.q(), f1);
  EXPECT_TRUE(got(b, b.q(), f1));
  send(b, b.q(), f2);
  EXPECT_TRUE(got(a, a.q(), f2));
  EXPECT_EQ(ctr(b.domid()).bridge_unicast, 1u);
  EXPECT_EQ(be->bridge_fdb().size(), 2u);
  std::this_thread::sleep_for(150ms);
  EXPECT_TRUE(be->bridge_fdb().empty());
  // A's mac is unknown again: flooded (to A, the only other vif).
  const auto f3 = eth(a.mac(), b.mac(), 3);
  send(b, b.q(), f3);
  EXPECT_TRUE(got(a, a.q(), f3));
  EXPECT_EQ(ctr(b.domid()).bridge_flooded, 1u);
  EXPECT_EQ(ctr(b.domid()).bridge_unicast, 1u);
}

// ---------------------------------------------------------------------------
// The command line.

Result<netback::CliOptions> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "xpv-netback");
  return netback::parse_cli(static_cast<int>(args.size()), args.data());
}

// ---------------------------------------------------------------------------
// Hostile xenstore values and the reattach fault (issue 10, sections 5 and 1).

TEST_F(NetbackTest, HostileXenstoreFaultsWriteTheirValues) {
  struct Case {
    Fault fault;
    const char* key;  // under the frontend's (fe/...) or the backend's (be/...) directory
    const char* value;
  };
  const Case cases[] = {
      {Fault::kXsBadMac, "fe/mac", "00:16:3e:zz:"},
      {Fault::kXsMulticastMac, "fe/mac", "01:16:3e:00:"},
      {Fault::kXsMaxQueuesZero, "be/multi-queue-max-queues", "0"},
      {Fault::kXsMaxQueuesHuge, "be/multi-queue-max-queues", "4294967295"},
      {Fault::kXsBadMtu, "fe/mtu", "4294967295"},
      {Fault::kXsFeatureGarbage, "be/feature-sg", "yes"},
      {Fault::kXsFeatureGarbage, "be/feature-split-event-channels", "2"},
      {Fault::kXsFeatureGarbage, "be/feature-ctrl-ring", " 1"},
      {Fault::kXsFeatureGarbage, "be/feature-rx-copy", "1"},
  };
  for (const Case& c : cases) {
    if (be) be->stop();
    Config cfg;
    cfg.fault = c.fault;
    start(cfg);
    Frontend fe(*hv);
    ASSERT_TRUE(fe.wait_be_state(2));
    const std::string k = c.key;
    const std::string path = (k.starts_with("fe/") ? fe.fe() : fe.be()) + "/" + k.substr(3);
    const std::string got = fe.read(path).value_or("<absent>");
    if (k == "fe/mac") {  // the rest of the mac is the domain's
      EXPECT_TRUE(got.starts_with(c.value)) << to_string(c.fault) << ": " << got;
    } else {
      EXPECT_EQ(got, c.value) << to_string(c.fault) << " " << path;
    }
    // The backend's own mac key stays the real one.
    EXPECT_EQ(fe.read(fe.be() + "/mac").value_or(""), netback::format_mac(fe.mac()));
  }
}

TEST_F(NetbackTest, FaultStateBackwardsGoesFromConnectedToInitWait) {
  Config cfg;
  cfg.fault = Fault::kXsStateBackwards;
  cfg.fault_after = 2;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  fe.send(fe.q(), pattern(60, 0));
  fe.send(fe.q(), pattern(60, 1));
  ASSERT_TRUE(fe.wait_be_state(2)) << "state " << fe.be_state();
  EXPECT_EQ(vif(fe.domid()).queues, 0u) << "the data path stopped first";
  EXPECT_EQ(ctr(fe.domid()).faults_injected, 1u);
  // The frontend closes and starts over: the backend serves it again.
  fe.set_state(5);
  fe.drop_queues();
  fe.set_state(6);
  ASSERT_TRUE(fe.wait_be_state(6));
  fe.set_state(1);
  ASSERT_TRUE(fe.wait_be_state(2));
  ASSERT_TRUE(fe.connect());
  EXPECT_EQ(ctr(fe.domid()).connects, 2u);
}

TEST_F(NetbackTest, FaultStateUndefinedWritesANumberThatIsNoState) {
  Config cfg;
  cfg.fault = Fault::kXsStateUndefined;
  cfg.fault_after = 1;
  cfg.fault_arg = 1234;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  fe.send(fe.q(), pattern(60, 0));
  ASSERT_TRUE(fe.wait_be_state(1234)) << "state " << fe.be_state();
  fe.set_state(5);
  fe.drop_queues();
  fe.set_state(6);
  fe.set_state(1);
  ASSERT_TRUE(fe.wait_be_state(2));
  ASSERT_TRUE(fe.connect());
}

TEST_F(NetbackTest, FaultKeysVanishRemovesTheFeatureKeysUntilTheFrontendClosed) {
  Config cfg;
  cfg.fault = Fault::kXsKeysVanish;
  cfg.fault_after = 2;
  start(cfg);
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  fe.post_rx(fe.q(), 8);
  fe.send(fe.q(), pattern(60, 0));
  fe.send(fe.q(), pattern(60, 1));
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(5);
  fe.drop_queues();
  fe.set_state(6);
  // InitWait again, but the keys the frontend reads now are gone.
  ASSERT_TRUE(fe.wait_be_state(2));
  for (const char* k : {"feature-rx-copy", "feature-sg", "multi-queue-max-queues"})
    EXPECT_FALSE(fe.read(fe.be() + "/" + k)) << k;
  // A frontend that gives up (Closing, Closed) finds them back.
  fe.set_state(5);
  ASSERT_TRUE(fe.wait_be_state(5));
  fe.set_state(6);
  ASSERT_TRUE(wait_until([&] { return fe.read(fe.be() + "/feature-rx-copy") == "1"; }));
  EXPECT_EQ(fe.read(fe.be() + "/multi-queue-max-queues").value_or(""), "8");
  fe.set_state(1);
  ASSERT_TRUE(fe.wait_be_state(2));
  ASSERT_TRUE(fe.connect());
}

TEST_F(NetbackTest, FaultReattachRemovesTheVifAndBringsItBackWithTheOtherMac) {
  Config cfg;
  cfg.fault = Fault::kReattach;
  cfg.fault_after = 2;
  cfg.fault_arg = 2;
  cfg.mac = netback::parse_mac("00:16:3e:00:00:11");
  cfg.reattach_mac = netback::parse_mac("00:16:3e:00:00:21");
  start(cfg);
  Frontend fe(*hv);
  const char* macs[] = {"00:16:3e:00:00:21", "00:16:3e:00:00:11"};
  for (const char* want : macs) {
    ASSERT_TRUE(fe.connect());
    fe.post_rx(fe.q(), 8);
    fe.send(fe.q(), pattern(60, 0));
    fe.send(fe.q(), pattern(60, 1));
    // network-detach: online 0, backend Closing, the data path gone.
    ASSERT_TRUE(fe.wait_be_state(5));
    EXPECT_EQ(fe.read(fe.be() + "/online").value_or(""), "0");
    EXPECT_EQ(vif(fe.domid()).queues, 0u);
    fe.drop_queues();
    fe.set_state(6);
    // Both directories removed, then created again with the other mac.
    ASSERT_TRUE(wait_until([&] { return !fe.read(fe.fe() + "/backend"); }));
    EXPECT_FALSE(fe.read(fe.be() + "/state"));
    ASSERT_TRUE(wait_until([&] { return fe.read(fe.fe() + "/mac") == std::string(want); }));
    EXPECT_EQ(fe.read(fe.be() + "/mac").value_or(""), want);
    EXPECT_EQ(fe.read(fe.fe() + "/state").value_or(""), "1");
    ASSERT_TRUE(fe.wait_be_state(2));
    EXPECT_EQ(vif(fe.domid()).mac, want);
  }
  // Both rounds done: the vif stays.
  ASSERT_TRUE(fe.connect());
  for (int i = 0; i < 4; ++i)
    fe.send(fe.q(), pattern(60, 0));
  ASSERT_EQ(fe.wait_tx(fe.q(), 4).size(), 4u);
  EXPECT_EQ(fe.be_state(), 4);
  Counters c = ctr(fe.domid());
  EXPECT_EQ(c.connects, 3u);
  EXPECT_EQ(c.faults_injected, 2u);
}

TEST(NetbackCli, HostileXenstoreFaultsAndReattach) {
  for (const char* f : {"xs-bad-mac", "xs-multicast-mac", "xs-max-queues-zero",
                        "xs-max-queues-huge", "xs-bad-mtu", "xs-feature-garbage",
                        "xs-state-backwards", "xs-state-undefined", "xs-keys-vanish", "reattach"}) {
    auto o = parse({"--socket", "/s", "--fault", f});
    ASSERT_TRUE(o) << f << ": " << o.error().message;
    EXPECT_STREQ(to_string(o->cfg.fault), f);
    EXPECT_NE(std::string(netback::help_text()).find(f), std::string::npos) << f;
  }
  EXPECT_NE(std::string(netback::help_text()).find("--reattach-mac"), std::string::npos);
  auto r = parse({"--socket", "/s", "--fault", "reattach", "--fault-arg", "3", "--reattach-mac",
                  "00:16:3e:00:00:21"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(netback::format_mac(*r->cfg.reattach_mac), "00:16:3e:00:00:21");
  EXPECT_EQ(netback::fault_arg_or_default(r->cfg), 3u);
  // Default other mac: 0x10 added to the last byte.
  EXPECT_EQ(netback::format_mac(
                netback::reattach_mac(Config{}, *netback::parse_mac("00:16:3e:00:00:11"), 0)),
            "00:16:3e:00:00:21");
  EXPECT_EQ(netback::fault_arg_or_default(
                parse({"--socket", "/s", "--fault", "xs-state-undefined"})->cfg),
            99u);
  struct Bad {
    std::vector<const char*> args;
    const char* names;
  };
  const Bad bad[] = {
      {{"--socket", "/s", "--reattach-mac", "00:16:3e:00:00:21"}, "--reattach-mac needs --fault"},
      {{"--socket", "/s", "--fault", "reattach", "--reattach-mac", "01:16:3e:00:00:21"},
       "multicast"},
      {{"--socket", "/s", "--fault", "reattach", "--reattach-mac", "zz"}, "--reattach-mac"},
      {{"--socket", "/s", "--fault", "reattach", "--mac", "00:16:3e:00:00:21", "--reattach-mac",
        "00:16:3e:00:00:21"},
       "differ"},
      {{"--socket", "/s", "--fault", "reattach", "--fault-arg", "0"}, "at least 1"},
      {{"--socket", "/s", "--fault", "xs-state-undefined", "--fault-arg", "4"}, "9.."},
      {{"--socket", "/s", "--fault", "xs-bad-mac", "--fault-arg", "4"}, "takes no argument"},
      {{"--socket", "/s", "--fault", "late-tx-rsp", "--fault-every", "60"}, "--fault-every"},
      {{"--socket", "/s", "--fault", "reconnect", "--fault-every", "60", "--fault-after", "9"},
       "exclude each other"},
      {{"--socket", "/s", "--fault", "reconnect", "--fault-every", "0"}, "--fault-every"},
  };
  auto every = parse({"--socket", "/s", "--fault", "reattach", "--fault-every", "60"});
  ASSERT_TRUE(every) << every.error().message;
  EXPECT_EQ(every->cfg.fault_every_s, 60u);
  EXPECT_NE(std::string(netback::help_text()).find("--fault-every"), std::string::npos);
  for (const Bad& b : bad) {
    auto o = parse(b.args);
    ASSERT_FALSE(o) << b.names;
    EXPECT_NE(o.error().message.find(b.names), std::string::npos) << o.error().message;
  }
}

TEST(NetbackCli, ParsesOptionsAndNamesTheBadOne) {
  auto o = parse({"--socket", "/tmp/x.sock", "--mode=source", "--source-size", "1514",
                  "--rx-stall-timeout", "0.5", "--fault", "late-tx-rsp", "--fault-arg", "50",
                  "--max-queues", "2", "--no-split-evtchn", "--mac", "00:16:3E:00:00:01"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->socket, "/tmp/x.sock");
  EXPECT_EQ(o->cfg.mode, Mode::kSource);
  EXPECT_EQ(o->cfg.source_size, 1514u);
  EXPECT_EQ(o->cfg.rx_stall_timeout_ms, 500u);
  EXPECT_EQ(o->cfg.fault, Fault::kLateTxRsp);
  EXPECT_EQ(o->cfg.fault_arg.value_or(0), 50u);
  EXPECT_EQ(o->cfg.max_queues, 2u);
  EXPECT_FALSE(o->cfg.split_evtchn);
  EXPECT_EQ(netback::format_mac(*o->cfg.mac), "00:16:3e:00:00:01");
  EXPECT_EQ(o->cfg.bridge_ageing_ms, 300'000u);
  auto br = parse({"--socket", "/s", "--mode", "bridge", "--bridge-ageing", "2.5", "--vifs", "3"});
  ASSERT_TRUE(br) << br.error().message;
  EXPECT_EQ(br->cfg.mode, Mode::kBridge);
  EXPECT_EQ(br->cfg.bridge_ageing_ms, 2500u);
  EXPECT_EQ(br->cfg.vifs, 3u);

  struct Bad {
    std::vector<const char*> args;
    const char* names;
  };
  const Bad bad[] = {
      {{"--mode", "source"}, "--socket"},
      {{"--socket", "/s", "--bogus"}, "--bogus"},
      {{"--socket", "/s", "--source-size", "59"}, "--source-size"},
      {{"--socket", "/s", "--mode", "mirror"}, "--mode"},
      {{"--socket", "/s", "--fault", "explode"}, "--fault"},
      {{"--socket", "/s", "--mac", "00:16:3e:00:00"}, "--mac"},
      {{"--socket", "/s", "--vifs"}, "--vifs"},
      {{"--socket", "/s", "--max-queues", "0"}, "--max-queues"},
      {{"--socket", "/s", "--stats-interval", "1"}, "--stats-interval"},
      {{"--socket", "/s", "--fault-arg", "3"}, "--fault-arg"},
      {{"--socket", "/s", "--busy-poll=1"}, "--busy-poll"},
      {{"--socket", "/s", "--bridge-ageing", "0"}, "--bridge-ageing"},
  };
  for (const Bad& b : bad) {
    auto r = parse(b.args);
    ASSERT_FALSE(r) << b.names;
    EXPECT_NE(r.error().message.find(b.names), std::string::npos) << r.error().message;
  }
  auto h = parse({"--help"});
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->help);
  for (const char* word : {"--socket",
                           "--vifs",
                           "--mac",
                           "--mtu",
                           "--max-queues",
                           "--no-sg",
                           "--no-split-evtchn",
                           "--mode",
                           "--source-size",
                           "--source-rate",
                           "--source-count",
                           "--rx-stall-timeout",
                           "--rx-expire",
                           "--busy-poll",
                           "--fault",
                           "--fault-after",
                           "--fault-arg",
                           "--stats-file",
                           "--stats-interval",
                           "--verbose",
                           "loopback",
                           "sink",
                           "source",
                           "bridge",
                           "--bridge-ageing",
                           "bad-tx-rsp-id",
                           "dup-tx-rsp",
                           "rsp-prod-overflow",
                           "bad-rx-rsp",
                           "rx-rsp-bad-id",
                           "event-storm",
                           "late-tx-rsp",
                           "reconnect",
                           "stall-rx"}) {
    EXPECT_NE(std::string(netback::help_text()).find(word), std::string::npos) << word;
  }
}

#ifdef XPV_NETBACK
// The program itself: a frontend process's view (over the socket), clean
// exit on SIGTERM, the stats file.
TEST(NetbackProgram, ServesOverItsSocketAndExitsCleanly) {
  const std::string sock = format("/tmp/xpv-test-nb-%d.sock", static_cast<int>(::getpid()));
  const std::string stats = format("/tmp/xpv-test-nb-%d.json", static_cast<int>(::getpid()));
  ::unlink(stats.c_str());
  test::Subprocess bad;
  ASSERT_TRUE(bad.start({XPV_NETBACK, "--socket", sock, "--no-such-option"}));
  int st = bad.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 2);

  test::Subprocess nb;
  ASSERT_TRUE(nb.start({XPV_NETBACK, "--socket", sock, "--stats-file", stats}));
  EXPECT_EQ(nb.read_line().value_or("<nothing>"), "xpv-netback: listening on " + sock);
  {
    Frontend fe(sim::connect_platform(sock));
    ASSERT_TRUE(fe.connect());
    fe.post_rx(fe.q(), 8);
    for (size_t len : {60u, 1514u, 9000u}) {
      auto data = pattern(len, static_cast<uint8_t>(len));
      std::vector<uint16_t> slots;
      for (size_t left = len; left; left -= std::min<size_t>(left, 4096))
        slots.push_back(static_cast<uint16_t>(std::min<size_t>(left, 4096)));
      fe.put_packet(fe.q(), data, slots);
      fe.push_tx(fe.q());
      auto got = fe.receive(fe.q());
      ASSERT_TRUE(got) << len;
      EXPECT_EQ(got->data, data);
    }
  }
  nb.kill(SIGTERM);
  st = nb.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_NE(::access(sock.c_str(), F_OK), 0) << "the socket file is removed";
  std::ifstream in(stats);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("\"tx_packets\": 3"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("\"rx_packets\": 3"), std::string::npos) << ss.str();
  ::unlink(stats.c_str());
}
#endif

// ---------------------------------------------------------------------------
// Offloads: what Linux's stack and netback do between a frontend's TX and a
// frontend's RX, by what the receiving frontend negotiated. Checksums are
// verified by the test's own arithmetic (support/frames.h).

// A GSO frame of `payload` TCP bytes (its checksum partial, as TSO sends it).
std::vector<uint8_t> gso_frame(uint32_t payload, bool ipv6 = false) {
  tf::FrameSpec spec;
  spec.ipv6 = ipv6;
  spec.payload = payload;
  spec.tcp_flags = 0x19;  // FIN | PSH | ACK: only the last segment keeps FIN and PSH
  return tf::make_frame(spec, /*partial=*/true);
}

// A frontend that takes GSO packets gets the 9000-byte TSO packet whole:
// one packet, NETRXF_csum_blank | data_validated | extra_info on its first
// slot, a GSO extra with the type and MSS right after it (xenvif_rx_skb).
TEST_F(NetbackTest, GsoGoesWholeToAFrontendThatTakesIt) {
  start();
  Frontend fe(*hv);
  KeyOptions o;
  o.gso = true;
  ASSERT_TRUE(fe.connect(1, o));
  FeQueue& q = fe.q();
  fe.post_rx(q, 64);
  for (bool v6 : {false, true}) {
    SCOPED_TRACE(v6 ? "TCPv6" : "TCPv4");
    const auto frame = gso_frame(9000 - (v6 ? 74 : 54), v6);
    const uint8_t type = v6 ? netif::kGsoTypeTcpV6 : netif::kGsoTypeTcpV4;
    const size_t n = fe.send_gso(q, frame, 1448, type);
    auto rsp = fe.wait_tx(q, n);
    ASSERT_EQ(rsp.size(), n);
    EXPECT_EQ(rsp[1].status, netif::kRspNull);
    auto got = fe.receive(q);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, frame);
    ASSERT_EQ(got->extras.size(), 1u);
    EXPECT_EQ(got->extras[0].type, netif::kExtraTypeGso);
    EXPECT_EQ(got->extras[0].u.gso.type, type);
    EXPECT_EQ(got->extras[0].u.gso.size, 1448);
    EXPECT_EQ(
        got->rsps[0].flags & (netif::kRxCsumBlank | netif::kRxDataValidated | netif::kRxExtraInfo),
        netif::kRxCsumBlank | netif::kRxDataValidated | netif::kRxExtraInfo);
    EXPECT_TRUE(tf::l4_checksum_ok(got->data, /*complete=*/false));
  }
  EXPECT_EQ(ctr(fe.domid()).rx_gso_packets, 2u);
  EXPECT_EQ(ctr(fe.domid()).tx_gso_packets, 2u);
}

// A frontend that does not take GSO gets MSS-sized segments, as the stack
// cuts them (tcp_gso_segment): each a correct frame (IP length and header
// checksum, TCP sequence number, FIN/PSH on the last only), its checksum
// partial when it does checksum offload and full when it wrote
// feature-no-csum-offload=1; together they carry the payload.
TEST_F(NetbackTest, GsoIsSegmentedForAFrontendThatDoesNot) {
  for (bool no_csum : {false, true}) {
    for (bool v6 : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << (v6 ? "TCPv6" : "TCPv4") << (no_csum ? ", no csum" : ""));
      start();
      Frontend fe(*hv);
      KeyOptions o;
      o.no_csum = no_csum;
      ASSERT_TRUE(fe.connect(1, o));
      FeQueue& q = fe.q();
      fe.post_rx(q, 64);
      const uint32_t payload = 10000;
      const auto frame = gso_frame(payload, v6);
      const uint16_t mss = 1448;
      const size_t n = fe.send_gso(q, frame, mss, v6 ? netif::kGsoTypeTcpV6 : netif::kGsoTypeTcpV4);
      ASSERT_EQ(fe.wait_tx(q, n).size(), n);
      const size_t hdr = v6 ? 14 + 40 + 20 : 14 + 20 + 20;
      std::vector<uint8_t> joined;
      const uint32_t segs = (payload + mss - 1) / mss;
      for (uint32_t i = 0; i < segs; ++i) {
        auto got = fe.receive(q);
        ASSERT_TRUE(got) << "segment " << i;
        const auto& f = got->data;
        const uint32_t want = std::min<uint32_t>(mss, payload - i * mss);
        ASSERT_EQ(f.size(), hdr + want) << "segment " << i;
        EXPECT_TRUE(got->extras.empty());
        EXPECT_TRUE(tf::l4_checksum_ok(f, /*complete=*/no_csum)) << "segment " << i;
        const uint16_t want_flags =
            no_csum ? netif::kRxDataValidated : netif::kRxCsumBlank | netif::kRxDataValidated;
        EXPECT_EQ(got->rsps[0].flags & (netif::kRxCsumBlank | netif::kRxDataValidated), want_flags);
        const uint8_t* tcp = &f[hdr - 20];
        EXPECT_EQ(tf::rd32(tcp + 4), 1000u + i * mss) << "sequence number";
        EXPECT_EQ(tcp[13] & 0x09, i + 1 == segs ? 0x09 : 0) << "FIN and PSH on the last only";
        if (v6) {
          EXPECT_EQ(tf::rd16(&f[14 + 4]), 20 + want) << "IPv6 payload length";
        } else {
          EXPECT_EQ(tf::rd16(&f[14 + 2]), 20 + 20 + want) << "IPv4 total length";
        }
        joined.insert(joined.end(), f.begin() + static_cast<long>(hdr), f.end());
      }
      EXPECT_EQ(joined, std::vector<uint8_t>(frame.begin() + static_cast<long>(hdr), frame.end()));
      EXPECT_TRUE(fe.rx_quiet_for(q, 100ms));
      EXPECT_EQ(ctr(fe.domid()).rx_gso_segmented, 1u);
      be.reset();
    }
  }
}

// A partial checksum reaching a frontend that wrote
// feature-no-csum-offload=1 is completed first (skb_checksum_help), and said
// to be valid; one that takes offload gets it partial.
TEST_F(NetbackTest, PartialChecksumsAreCompletedForAFrontendWithoutOffload) {
  for (bool no_csum : {false, true}) {
    for (bool tcp : {false, true}) {
      SCOPED_TRACE(::testing::Message() << (tcp ? "TCP" : "UDP") << (no_csum ? ", no csum" : ""));
      start();
      Frontend fe(*hv);
      KeyOptions o;
      o.no_csum = no_csum;
      ASSERT_TRUE(fe.connect(1, o));
      FeQueue& q = fe.q();
      fe.post_rx(q, 8);
      tf::FrameSpec spec;
      spec.tcp = tcp;
      spec.payload = 333;
      const auto frame = tf::make_frame(spec, /*partial=*/true);
      fe.send(q, frame, netif::kTxCsumBlank | netif::kTxDataValidated);
      ASSERT_EQ(fe.wait_tx(q, 1).size(), 1u);
      auto got = fe.receive(q);
      ASSERT_TRUE(got);
      EXPECT_TRUE(tf::l4_checksum_ok(got->data, /*complete=*/no_csum));
      EXPECT_EQ(got->rsps[0].flags & (netif::kRxCsumBlank | netif::kRxDataValidated),
                no_csum ? netif::kRxDataValidated : netif::kRxCsumBlank | netif::kRxDataValidated);
      EXPECT_EQ(ctr(fe.domid()).rx_csum_completed, no_csum ? 1u : 0u);
      be.reset();
    }
  }
}

// checksum_setup(): a partial checksum on what is not TCP/UDP over IP, or a
// GSO packet that is not TCP, cannot be set up: dropped, counted, answered
// OKAY (its slots were fine).
TEST_F(NetbackTest, PartialChecksumOnNonIpIsDropped) {
  start();
  Frontend fe(*hv);
  ASSERT_TRUE(fe.connect());
  FeQueue& q = fe.q();
  fe.post_rx(q, 8);
  fe.send(q, pattern(100, 3), netif::kTxCsumBlank);
  auto rsp = fe.wait_tx(q, 1);
  ASSERT_EQ(rsp.size(), 1u);
  EXPECT_EQ(rsp[0].status, netif::kRspOkay);
  tf::FrameSpec udp;
  udp.tcp = false;
  EXPECT_EQ(fe.wait_tx(q, fe.send_gso(q, tf::make_frame(udp, true), 1000, 1)).size(), 3u - 1u);
  EXPECT_TRUE(wait_ctr(fe.domid(), &Counters::tx_dropped_bad_csum, 2));
  EXPECT_TRUE(fe.rx_quiet_for(q, 100ms));
}

// Multicast control (netif.h): with request-multicast-control the frontend
// gets only the multicast groups it added with MCAST_ADD extras (broadcast
// always); MCAST_DEL takes one out; a 65th address is refused
// (XEN_NETBK_MCAST_MAX); with feature-dynamic-multicast-control the frontend
// may turn the filter off and on while connected.
TEST_F(NetbackTest, MulticastControlFiltersWhatTheFrontendAsked) {
  Config cfg;
  cfg.mode = Mode::kBridge;
  start(cfg);
  Frontend a(*hv), b(*hv);
  KeyOptions o;
  o.multicast_control = true;
  ASSERT_TRUE(a.connect(1, o));
  ASSERT_TRUE(b.connect());
  a.post_rx(a.q(), 64);
  const netback::Mac g1{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, g2{0x01, 0x00, 0x5e, 0x00, 0x00, 0x02};
  const uint16_t id = a.send_mcast(a.q(), netif::kExtraTypeMcastAdd, g1);
  auto rsp = a.wait_tx(a.q(), 2);
  ASSERT_EQ(rsp.size(), 2u);
  EXPECT_EQ(rsp[0].id, id);
  EXPECT_EQ(rsp[0].status, netif::kRspOkay);
  EXPECT_EQ(rsp[1].status, netif::kRspNull);
  auto frame = [&](const netback::Mac& dst, uint8_t tag) { return eth(dst, b.mac(), tag); };
  auto sent = [&](const std::vector<uint8_t>& f) {
    b.send(b.q(), f);
    EXPECT_EQ(b.wait_tx(b.q(), 1).size(), 1u);
  };
  auto next_tag = [&]() -> int {
    auto r = a.receive(a.q(), 1000ms);
    return r && r->data.size() > 14 ? r->data[14] : -1;
  };
  sent(frame(g2, 1));          // not asked for: dropped
  sent(frame(g1, 2));          // asked for
  sent(frame(kBroadcast, 3));  // broadcast passes
  EXPECT_EQ(next_tag(), 2);
  EXPECT_EQ(next_tag(), 3);
  EXPECT_EQ(ctr(a.domid()).rx_dropped_multicast, 1u);
  (void)a.send_mcast(a.q(), netif::kExtraTypeMcastDel, g1);
  ASSERT_EQ(a.wait_tx(a.q(), 2).size(), 2u);
  sent(frame(g1, 4));  // taken out again: dropped
  sent(frame(kBroadcast, 5));
  EXPECT_EQ(next_tag(), 5);
  // Dynamic: the filter off, then everything multicast arrives.
  a.write("request-multicast-control", "0");
  ASSERT_TRUE(wait_until([&] {
    sent(frame(g2, 6));
    return next_tag() == 6;
  }));
  // 64 addresses at most.
  a.write("request-multicast-control", "1");
  uint32_t ok = 0, refused = 0;
  for (uint32_t i = 0; i < 65; ++i) {
    netback::Mac g = g1;
    g[5] = static_cast<uint8_t>(i);
    (void)a.send_mcast(a.q(), netif::kExtraTypeMcastAdd, g);
    auto r = a.wait_tx(a.q(), 2);
    ASSERT_EQ(r.size(), 2u);
    (r[0].status == netif::kRspOkay ? ok : refused) += 1;
  }
  EXPECT_EQ(ok, 64u);
  EXPECT_EQ(refused, 1u);
  EXPECT_EQ(ctr(a.domid()).tx_mcast_refused, 1u);
}

}  // namespace
}  // namespace xpv
