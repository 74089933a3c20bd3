// SPDX-License-Identifier: MIT
// Grants on the simulated hypervisor: sharing, mapping and copying, every
// permission and bounds error (with no memory touched), end of access while
// mapped, and sharing across processes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "sim/client.h"
#include "sim/hypervisor.h"
#include "sim/server.h"
#include "support/subprocess.h"

namespace xpv {
namespace {

using sim::Hypervisor;

struct SimFixture : ::testing::Test {
  std::unique_ptr<Hypervisor> hv;
  std::unique_ptr<Platform> dom0, domu;
  std::unique_ptr<GrantSharer> sharer;  // domU's
  std::unique_ptr<GrantMapper> mapper;  // dom0's

  void SetUp() override {
    sim::HypervisorConfig cfg;
    cfg.pages_per_domain = 1024;
    cfg.grants_per_domain = 256;
    auto h = Hypervisor::create(cfg);
    ASSERT_TRUE(h) << h.error().message;
    hv = std::move(*h);
    auto d0 = sim::local_platform(*hv, true);
    ASSERT_TRUE(d0) << d0.error().message;
    dom0 = std::move(*d0);
    auto du = sim::local_platform(*hv, false);
    ASSERT_TRUE(du) << du.error().message;
    domu = std::move(*du);
    auto s = domu->open_grant_sharer();
    ASSERT_TRUE(s);
    sharer = std::move(*s);
    auto m = dom0->open_grant_mapper();
    ASSERT_TRUE(m);
    mapper = std::move(*m);
  }
  void TearDown() override {
    mapper.reset();
    sharer.reset();
    domu.reset();
    dom0.reset();
  }

  // Copies len bytes from a grant to a local buffer; returns the op status.
  int16_t copy_from(domid_t dom, grant_ref_t ref, uint16_t off, uint16_t len, void* dst) {
    GrantCopyOp op;
    op.source = {true, dom, ref, off, nullptr};
    op.dest = {false, 0, 0, 0, dst};
    op.len = len;
    EXPECT_TRUE(mapper->copy(std::span<GrantCopyOp>(&op, 1)));
    return op.status;
  }
  int16_t copy_to(domid_t dom, grant_ref_t ref, uint16_t off, uint16_t len, const void* src) {
    GrantCopyOp op;
    op.source = {false, 0, 0, 0, const_cast<void*>(src)};
    op.dest = {true, dom, ref, off, nullptr};
    op.len = len;
    EXPECT_TRUE(mapper->copy(std::span<GrantCopyOp>(&op, 1)));
    return op.status;
  }
};

TEST_F(SimFixture, DomainsGetIdsAndDom0IsZero) {
  EXPECT_EQ(dom0->self_domid(), 0);
  EXPECT_EQ(domu->self_domid(), 1);
  auto du2 = sim::local_platform(*hv, false);
  ASSERT_TRUE(du2);
  EXPECT_EQ((*du2)->self_domid(), 2);
}

TEST_F(SimFixture, ShareMapAndCopyBothWays) {
  auto pages = sharer->share(kDom0, 2, /*writable=*/true);
  ASSERT_TRUE(pages) << pages.error().message;
  ASSERT_EQ(pages->count(), 2u);
  for (size_t i = 0; i < pages->bytes(); ++i)
    ASSERT_EQ(pages->data()[i], 0) << "pages start zeroed";
  std::memset(pages->page(1), 0xAB, kPageSize);

  auto m = mapper->map(domu->self_domid(), pages->ref(1), /*writable=*/true);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->data()[0], 0xAB);
  EXPECT_EQ(m->data()[4095], 0xAB);
  m->data()[7] = 0x11;  // backend writes, frontend sees it
  EXPECT_EQ(pages->page(1)[7], 0x11);

  uint8_t buf[64];
  std::memset(buf, 0, sizeof buf);
  EXPECT_EQ(copy_from(1, pages->ref(1), 4, 8, buf), 0);
  EXPECT_EQ(buf[0], 0xAB);
  EXPECT_EQ(buf[3], 0x11);
  uint8_t src[16];
  std::memset(src, 0x5A, sizeof src);
  EXPECT_EQ(copy_to(1, pages->ref(0), 4080, 16, src), 0);  // up to the last byte
  EXPECT_EQ(pages->page(0)[4095], 0x5A);
  EXPECT_EQ(pages->page(0)[4079], 0);
}

TEST_F(SimFixture, WrongDomainIsRefusedAndNothingTouched) {
  auto pages = sharer->share(/*domid=*/5, 1, true);  // granted to domain 5, not dom0
  ASSERT_TRUE(pages);
  std::memset(pages->data(), 0x77, kPageSize);
  EXPECT_FALSE(mapper->map(1, pages->ref(0), false));
  uint8_t buf[32];
  std::memset(buf, 0xEE, sizeof buf);
  EXPECT_EQ(copy_from(1, pages->ref(0), 0, 32, buf), sim::kGntGeneralError);
  for (uint8_t b : buf)
    EXPECT_EQ(b, 0xEE);
  uint8_t src[32] = {};
  EXPECT_EQ(copy_to(1, pages->ref(0), 0, 32, src), sim::kGntGeneralError);
  EXPECT_EQ(pages->data()[0], 0x77);
}

TEST_F(SimFixture, BadReferencesAreRefused) {
  uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  // Out of the grant table.
  EXPECT_EQ(copy_from(1, 100000, 0, 8, buf), sim::kGntBadGntref);
  EXPECT_FALSE(mapper->map(1, 100000, false));
  // Inside the table but never granted.
  EXPECT_EQ(copy_from(1, 200, 0, 8, buf), sim::kGntGeneralError);
  // Reserved entries are never valid.
  EXPECT_EQ(copy_from(1, 0, 0, 8, buf), sim::kGntGeneralError);
  EXPECT_EQ(buf[0], 1);
  // A domain that does not exist.
  EXPECT_EQ(copy_from(77, 9, 0, 8, buf), sim::kGntBadDomain);
  EXPECT_FALSE(mapper->map(77, 9, false));
  EXPECT_EQ(buf[7], 8);
}

TEST_F(SimFixture, ReadOnlyGrantRefusesWrites) {
  auto pages = sharer->share(kDom0, 1, /*writable=*/false);
  ASSERT_TRUE(pages);
  std::memset(pages->data(), 0x42, kPageSize);
  EXPECT_FALSE(mapper->map(1, pages->ref(0), /*writable=*/true));
  auto ro = mapper->map(1, pages->ref(0), /*writable=*/false);
  ASSERT_TRUE(ro);
  EXPECT_EQ(ro->data()[100], 0x42);
  uint8_t src[16] = {};
  EXPECT_EQ(copy_to(1, pages->ref(0), 0, 16, src), sim::kGntGeneralError);
  EXPECT_EQ(pages->data()[0], 0x42);
  uint8_t dst[16] = {};
  EXPECT_EQ(copy_from(1, pages->ref(0), 0, 16, dst), 0);
  EXPECT_EQ(dst[15], 0x42);
}

TEST_F(SimFixture, CopyPastThePageIsRefusedAndNothingTouched) {
  auto pages = sharer->share(kDom0, 2, true);
  ASSERT_TRUE(pages);
  std::memset(pages->data(), 0x33, pages->bytes());
  uint8_t src[256];
  std::memset(src, 0x99, sizeof src);
  EXPECT_EQ(copy_to(1, pages->ref(0), 4000, 200, src), sim::kGntBadCopyArg);
  EXPECT_EQ(copy_to(1, pages->ref(0), 4095, 2, src), sim::kGntBadCopyArg);
  for (size_t i = 0; i < pages->bytes(); ++i)
    ASSERT_EQ(pages->data()[i], 0x33) << i;
  uint8_t dst[256];
  std::memset(dst, 0, sizeof dst);
  EXPECT_EQ(copy_from(1, pages->ref(0), 3900, 200, dst), sim::kGntBadCopyArg);
  EXPECT_EQ(dst[0], 0);
  EXPECT_EQ(copy_to(1, pages->ref(0), 3896, 200, src), 0);  // exactly to the end
}

TEST_F(SimFixture, BatchedCopyReportsEachOp) {
  auto pages = sharer->share(kDom0, 1, true);
  ASSERT_TRUE(pages);
  uint8_t a[8], b[8], c[8];
  std::memset(a, 1, 8);
  std::memset(b, 2, 8);
  std::memset(c, 3, 8);
  GrantCopyOp ops[3];
  ops[0].source = {false, 0, 0, 0, a};
  ops[0].dest = {true, 1, pages->ref(0), 0, nullptr};
  ops[0].len = 8;
  ops[1].source = {false, 0, 0, 0, b};
  ops[1].dest = {true, 1, pages->ref(0), 4092, nullptr};  // crosses the page end
  ops[1].len = 8;
  ops[2].source = {false, 0, 0, 0, c};
  ops[2].dest = {true, 1, pages->ref(0), 8, nullptr};
  ops[2].len = 8;
  ASSERT_TRUE(mapper->copy(ops));
  EXPECT_EQ(ops[0].status, 0);
  EXPECT_EQ(ops[1].status, sim::kGntBadCopyArg);
  EXPECT_EQ(ops[2].status, 0);
  EXPECT_EQ(pages->data()[0], 1);
  EXPECT_EQ(pages->data()[8], 3);
  EXPECT_EQ(pages->data()[4095], 0);
}

TEST_F(SimFixture, EndedAccessRefusesFurtherUse) {
  auto pages = sharer->share(kDom0, 1, true);
  ASSERT_TRUE(pages);
  grant_ref_t ref = pages->ref(0);
  EndAccessReport r = pages->end_access();
  EXPECT_EQ(r.pages, 1u);
  EXPECT_EQ(r.ended, 1u);
  EXPECT_EQ(r.still_mapped, 0u);
  EXPECT_FALSE(mapper->map(1, ref, false));
  uint8_t buf[4];
  EXPECT_EQ(copy_from(1, ref, 0, 4, buf), sim::kGntGeneralError);
}

TEST_F(SimFixture, EndingAccessToAMappedPageIsReportedAndThePageKept) {
  auto pages = sharer->share(kDom0, 3, true);
  ASSERT_TRUE(pages);
  std::memset(pages->data(), 0x61, pages->bytes());
  grant_ref_t mapped_ref = pages->ref(1);
  uint8_t* mapped_addr = pages->page(1);
  auto m = mapper->map(1, mapped_ref, true);
  ASSERT_TRUE(m);
  EXPECT_EQ(hv->stats().grants_active, 3u);

  EndAccessReport r = pages->end_access();
  EXPECT_EQ(r.pages, 3u);
  EXPECT_EQ(r.ended, 2u);
  EXPECT_EQ(r.still_mapped, 1u);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(hv->stats().grants_active, 1u) << "the mapped grant stays valid";
  // The backend still reads and writes the page safely, and new shares never
  // reuse it while it is mapped.
  EXPECT_EQ(m->data()[0], 0x61);
  m->data()[0] = 0x62;
  for (int i = 0; i < 20; ++i) {
    auto more = sharer->share(kDom0, 1, true);
    ASSERT_TRUE(more);
    EXPECT_NE(more->data(), mapped_addr);
    EXPECT_NE(more->ref(0), mapped_ref);
    EXPECT_EQ(more->page(0)[0], 0);
  }
  // Once the backend unmaps, the deferred page is released at the next share.
  m->reset();
  auto again = sharer->share(kDom0, 1, true);
  ASSERT_TRUE(again);
  EXPECT_EQ(hv->stats().grants_active, 1u) << "only the new share is active";
}

TEST_F(SimFixture, SharingFailsCleanlyWhenTheGrantTableIsFull) {
  std::vector<SharedPages> all;
  for (;;) {
    auto p = sharer->share(kDom0, 16, true);
    if (!p) {
      EXPECT_EQ(p.error().code, ENOSPC);
      EXPECT_NE(p.error().message.find("grant table full"), std::string::npos) << p.error().message;
      break;
    }
    all.push_back(std::move(*p));
    ASSERT_LT(all.size(), 100u);
  }
  EXPECT_EQ(all.size(), (256u - 8u) / 16u);
  all.clear();
  EXPECT_TRUE(sharer->share(kDom0, 16, true));
}

// ---------------------------------------------------------------------------
// Across processes.

std::string socket_path(const char* tag) {
  return format("/tmp/xpv-test-%s-%d.sock", tag, static_cast<int>(::getpid()));
}

std::vector<unsigned> parse_refs(const std::string& line) {
  std::istringstream in(line);
  std::string w;
  in >> w;
  std::vector<unsigned> v;
  unsigned r;
  while (in >> r)
    v.push_back(r);
  return v;
}

TEST(SimCrossProcess, ChildProcessBackendMapsAndCopiesOurGrants) {
  const std::string sock = socket_path("xbe");
  test::Subprocess be;
  ASSERT_TRUE(be.start({XPV_SIM_PEER, "backend", sock}));
  ASSERT_EQ(be.read_line(), "READY");

  auto plat = sim::connect_platform(sock);
  ASSERT_TRUE(plat) << plat.error().message;
  const domid_t me = (*plat)->self_domid();
  EXPECT_GE(me, 1);
  auto sharer = (*plat)->open_grant_sharer();
  ASSERT_TRUE(sharer);
  auto rw = (*sharer)->share(kDom0, 4, true);
  auto ro = (*sharer)->share(kDom0, 1, false);
  ASSERT_TRUE(rw && ro);
  std::memset(rw->data(), 0xC3, rw->bytes());
  std::memset(ro->data(), 0x3C, ro->bytes());

  for (size_t i = 0; i < rw->count(); ++i) {
    EXPECT_EQ(be.ask(format("verify %u %u %u", me, rw->ref(i), 0xC3)), "OK") << i;
  }
  // The backend writes through a mapping; we see it in our memory.
  EXPECT_EQ(be.ask(format("fill %u %u %u", me, rw->ref(2), 0x5D)), "OK");
  EXPECT_EQ(rw->page(2)[0], 0x5D);
  EXPECT_EQ(rw->page(2)[4095], 0x5D);
  EXPECT_EQ(rw->page(1)[0], 0xC3);
  // Grant copy into our page, and the bounds check across processes.
  EXPECT_EQ(be.ask(format("copyto %u %u 100 50 %u", me, rw->ref(0), 0x11)), "STATUS 0");
  EXPECT_EQ(rw->page(0)[100], 0x11);
  EXPECT_EQ(rw->page(0)[149], 0x11);
  EXPECT_EQ(rw->page(0)[150], 0xC3);
  EXPECT_EQ(be.ask(format("copyto %u %u 4090 50 %u", me, rw->ref(0), 0x22)), "STATUS -10");
  EXPECT_EQ(rw->page(0)[4095], 0xC3);
  EXPECT_EQ(be.ask(format("copyfrom %u %u 0 10 0", me, rw->ref(1))), "STATUS 0 SUM 1950");
  // Read-only: readable, not writable.
  EXPECT_EQ(be.ask(format("verify %u %u %u", me, ro->ref(0), 0x3C)), "OK");
  EXPECT_EQ(be.ask(format("fill %u %u 1", me, ro->ref(0))).substr(0, 3), "ERR");
  EXPECT_EQ(be.ask(format("copyto %u %u 0 8 1", me, ro->ref(0))), "STATUS -1");
  EXPECT_EQ(ro->data()[0], 0x3C);
  // Wrong domain id in the request.
  EXPECT_EQ(be.ask(format("copyfrom %u %u 0 8 0", me + 1, rw->ref(0))), "STATUS -2 SUM 0");

  // Event channel across processes: we offer a port, the backend binds and
  // notifies, our fd becomes readable.
  auto ev = (*plat)->open_event_channel();
  ASSERT_TRUE(ev);
  auto port = (*ev)->alloc_unbound(kDom0);
  ASSERT_TRUE(port);
  EXPECT_EQ(be.ask(format("notify-bind %u %u", me, *port)), "OK");
  pollfd pf{(*ev)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pf, 1, 5000), 1);
  auto p = (*ev)->pending();
  ASSERT_TRUE(p && *p);
  EXPECT_EQ(**p, *port);

  EXPECT_EQ(be.ask("stats"), "STATS 2 5 0 2 2 2 0");
  be.send("quit");
  EXPECT_EQ(be.wait(), 0);
}

TEST(SimCrossProcess, ADeadFrontendLeavesNoGrantsOrPortsBehind) {
  const std::string sock = socket_path("xfe");
  auto hv = Hypervisor::create();
  ASSERT_TRUE(hv);
  auto server = sim::Server::start(**hv, sock);
  ASSERT_TRUE(server) << server.error().message;
  auto dom0 = sim::local_platform(**hv, true);
  ASSERT_TRUE(dom0);
  auto mapper = (*dom0)->open_grant_mapper();
  ASSERT_TRUE(mapper);
  auto base = (*hv)->stats();

  test::Subprocess fe;
  ASSERT_TRUE(fe.start({XPV_SIM_PEER, "frontend", sock}));
  auto hello = fe.read_line();
  ASSERT_TRUE(hello && hello->starts_with("DOMID ")) << hello.value_or("<none>");
  const domid_t d = static_cast<domid_t>(std::stoi(hello->substr(6)));
  auto refs = parse_refs(fe.ask("share 8 W 7"));
  ASSERT_EQ(refs.size(), 8u);
  EXPECT_TRUE(fe.ask("port").starts_with("PORT "));
  EXPECT_TRUE(fe.ask("port").starts_with("PORT "));
  EXPECT_EQ(fe.ask("watch device"), "OK");
  EXPECT_EQ(fe.ask("xswrite data/x 1"), "OK");
  auto s = (*hv)->stats();
  EXPECT_EQ(s.domains, base.domains + 1);
  EXPECT_EQ(s.grants_active, base.grants_active + 8);
  EXPECT_EQ(s.ports_bound, base.ports_bound + 2);

  // The backend keeps one page mapped while the frontend dies.
  auto m = (*mapper)->map(d, refs[3], true);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->data()[0], 7);

  fe.kill(SIGKILL);
  fe.wait();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((*hv)->stats().domains != base.domains && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s = (*hv)->stats();
  EXPECT_EQ(s.domains, base.domains) << "the domain is destroyed";
  EXPECT_EQ(s.ports_bound, base.ports_bound) << "its ports are closed";
  EXPECT_EQ(s.evtchn_handles, base.evtchn_handles);
  EXPECT_EQ(s.xs_connections, base.xs_connections);
  EXPECT_EQ(s.grants_active, base.grants_active + 1) << "only the still-mapped page stays granted";
  EXPECT_EQ(s.zombie_domains, 1u);
  // The mapped page is still safe to touch.
  m->data()[0] = 9;
  EXPECT_EQ(m->data()[1], 7);
  m->reset();
  s = (*hv)->stats();
  EXPECT_EQ(s.grants_active, base.grants_active);
  EXPECT_EQ(s.grant_maps, 0u);
  EXPECT_EQ(s.zombie_domains, 0u);
  // Its xenstore home is gone too.
  auto xs = (*dom0)->open_xenstore();
  ASSERT_TRUE(xs);
  auto r = (*xs)->read(kXsNoTransaction, format("/local/domain/%u/data/x", d));
  EXPECT_FALSE(r);
}

TEST(SimCrossProcess, ConnectingToNothingIsAClearError) {
  auto p = sim::connect_platform("/tmp/xpv-no-such-backend.sock");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("xpv-netback running"), std::string::npos) << p.error().message;
  auto q = open_platform("nonsense");
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().message.find("expected 'xen' or 'sim:PATH'"), std::string::npos);
  auto e = open_platform("sim:");
  ASSERT_FALSE(e);
}

TEST(SimCrossProcess, SecondServerOnALiveSocketIsRefused) {
  const std::string sock = socket_path("dup");
  auto hv = Hypervisor::create();
  ASSERT_TRUE(hv);
  auto s1 = sim::Server::start(**hv, sock);
  ASSERT_TRUE(s1);
  auto s2 = sim::Server::start(**hv, sock);
  ASSERT_FALSE(s2);
  EXPECT_EQ(s2.error().code, EADDRINUSE);
}

}  // namespace
}  // namespace xpv
