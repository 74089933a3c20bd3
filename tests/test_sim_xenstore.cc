// SPDX-License-Identifier: MIT
// Xenstore through the sim platform (in process and over the socket):
// transactions that conflict and retry, watches through a pollable fd,
// per-domain permissions.
#include <gtest/gtest.h>

#include <poll.h>
#include <unistd.h>

#include <thread>

#include "sim/client.h"
#include "sim/hypervisor.h"
#include "sim/server.h"

namespace xpv {
namespace {

struct XsFixture : ::testing::Test {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<sim::Server> server;
  std::unique_ptr<Platform> dom0, guest;  // guest over the socket
  std::unique_ptr<XenStore> xs0, xsg;
  std::string sock;

  void SetUp() override {
    hv = std::move(*sim::Hypervisor::create({1024, 64}));
    sock = format("/tmp/xpv-test-xs-%d.sock", static_cast<int>(::getpid()));
    auto s = sim::Server::start(*hv, sock);
    ASSERT_TRUE(s) << s.error().message;
    server = std::move(*s);
    dom0 = std::move(*sim::local_platform(*hv, true));
    auto g = sim::connect_platform(sock);
    ASSERT_TRUE(g) << g.error().message;
    guest = std::move(*g);
    xs0 = std::move(*dom0->open_xenstore());
    xsg = std::move(*guest->open_xenstore());
  }
  void TearDown() override {
    xsg.reset();
    xs0.reset();
    guest.reset();
    dom0.reset();
    server.reset();
  }
  std::string home() const { return format("/local/domain/%u", guest->self_domid()); }
};

std::optional<XsWatchEvent> wait_watch(XenStore& xs, int timeout_ms = 5000) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    auto e = xs.read_watch();
    if (!e) return std::nullopt;
    if (*e) return **e;
    pollfd p{xs.watch_fd(), POLLIN, 0};
    ::poll(&p, 1, 10);
  }
  return std::nullopt;
}

TEST_F(XsFixture, HomePathAndRelativeAccess) {
  EXPECT_EQ(*xsg->domain_path(guest->self_domid()), home());
  EXPECT_EQ(*xsg->read(kXsNoTransaction, "domid"), std::to_string(guest->self_domid()));
  ASSERT_TRUE(xsg->write(kXsNoTransaction, "data/k", "v"));
  EXPECT_EQ(*xs0->read(kXsNoTransaction, home() + "/data/k"), "v");
  auto missing = xsg->try_read(kXsNoTransaction, "data/nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST_F(XsFixture, PermissionsPerDomain) {
  // dom0 creates a node only it may write, readable by the guest.
  const std::string p = "/local/domain/0/backend/test";
  ASSERT_TRUE(xs0->write(kXsNoTransaction, p, "x"));
  XsPermission perms[] = {{0, XsPermission::kNone}, {guest->self_domid(), XsPermission::kRead}};
  ASSERT_TRUE(xs0->set_permissions(kXsNoTransaction, p, perms));
  EXPECT_EQ(*xsg->read(kXsNoTransaction, p), "x");
  auto w = xsg->write(kXsNoTransaction, p, "y");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.code(), EACCES);
  // A node with no access for the guest.
  ASSERT_TRUE(xs0->write(kXsNoTransaction, "/secret", "s"));
  auto r = xsg->read(kXsNoTransaction, "/secret");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EACCES);
  auto gp = xs0->get_permissions(kXsNoTransaction, p);
  ASSERT_TRUE(gp);
  ASSERT_EQ(gp->size(), 2u);
  EXPECT_EQ((*gp)[1].domid, guest->self_domid());
  EXPECT_EQ(to_string((*gp)[1]), format("r%u", guest->self_domid()));
  // The guest cannot change permissions of a node it does not own.
  XsPermission mine[] = {{guest->self_domid(), XsPermission::kBoth}};
  EXPECT_FALSE(xsg->set_permissions(kXsNoTransaction, p, mine));
}

TEST_F(XsFixture, ConflictingTransactionsFailWithEagainAndRetrySucceeds) {
  ASSERT_TRUE(xs0->write(kXsNoTransaction, home() + "/data/counter", "0"));
  auto t = xsg->transaction_start();
  ASSERT_TRUE(t);
  auto v = xsg->read(*t, "data/counter");
  ASSERT_TRUE(v);
  ASSERT_TRUE(xsg->write(*t, "data/counter", std::to_string(std::stoi(*v) + 1)));
  // Someone else changes the node meanwhile.
  ASSERT_TRUE(xs0->write(kXsNoTransaction, home() + "/data/counter", "10"));
  Status c = xsg->transaction_end(*t, false);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.code(), EAGAIN);
  EXPECT_EQ(*xs0->read(kXsNoTransaction, home() + "/data/counter"), "10");

  // xs_transact retries the whole transaction until it commits.
  int attempts = 0;
  Status s = xs_transact(*xsg, [&](xs_transaction_t tx) -> Status {
    ++attempts;
    auto cur = xsg->read(tx, "data/counter");
    if (!cur) return cur.error();
    if (attempts == 1) {
      // Interfere once, so the first commit conflicts.
      XPV_TRY(xs0->write(kXsNoTransaction, home() + "/data/counter", "20"));
    }
    return xsg->write(tx, "data/counter", std::to_string(std::stoi(*cur) + 1));
  });
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(*xs0->read(kXsNoTransaction, home() + "/data/counter"), "21");
}

TEST_F(XsFixture, ConcurrentIncrementsFromTwoDomainsLoseNothing) {
  const std::string key = home() + "/data/n";
  ASSERT_TRUE(xs0->write(kXsNoTransaction, key, "0"));
  auto incr = [&](XenStore& xs, int n) {
    for (int i = 0; i < n; ++i) {
      Status s = xs_transact(xs, [&](xs_transaction_t tx) -> Status {
        auto cur = xs.read(tx, key);
        if (!cur) return cur.error();
        return xs.write(tx, key, std::to_string(std::stoi(*cur) + 1));
      });
      ASSERT_TRUE(s) << s.message();
    }
  };
  std::thread a([&] { incr(*xs0, 200); });
  std::thread b([&] { incr(*xsg, 200); });
  a.join();
  b.join();
  EXPECT_EQ(*xs0->read(kXsNoTransaction, key), "400");
}

TEST_F(XsFixture, WatchesFireThroughThePollableFd) {
  ASSERT_TRUE(xsg->watch("data/w", "tok"));
  auto first = wait_watch(*xsg);
  ASSERT_TRUE(first) << "a watch fires once when set";
  EXPECT_EQ(first->path, "data/w");
  EXPECT_EQ(first->token, "tok");
  EXPECT_FALSE(*xsg->read_watch());

  // A change below the watched node, made by another domain.
  ASSERT_TRUE(xs0->write(kXsNoTransaction, home() + "/data/w/sub", "1"));
  pollfd p{xsg->watch_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the watch fd becomes readable";
  auto ev = wait_watch(*xsg);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->path, "data/w/sub");
  EXPECT_EQ(ev->token, "tok");

  // Changes inside a transaction fire at commit, not before.
  auto t = xs0->transaction_start();
  ASSERT_TRUE(t);
  ASSERT_TRUE(xs0->write(*t, home() + "/data/w", "2"));
  usleep(50000);
  EXPECT_FALSE(*xsg->read_watch());
  ASSERT_TRUE(xs0->transaction_end(*t, false));
  ev = wait_watch(*xsg);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->path, "data/w");

  ASSERT_TRUE(xsg->unwatch("data/w", "tok"));
  ASSERT_TRUE(xs0->write(kXsNoTransaction, home() + "/data/w", "3"));
  usleep(50000);
  EXPECT_FALSE(*xsg->read_watch());
}

TEST_F(XsFixture, TwoXenStoreObjectsGetTheirOwnEvents) {
  auto other = guest->open_xenstore();
  ASSERT_TRUE(other);
  ASSERT_TRUE(xsg->watch("data/a", "A"));
  ASSERT_TRUE((*other)->watch("data/b", "B"));
  ASSERT_TRUE(wait_watch(*xsg));
  ASSERT_TRUE(wait_watch(**other));
  ASSERT_TRUE(xs0->write(kXsNoTransaction, home() + "/data/b", "1"));
  auto e = wait_watch(**other);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->token, "B");
  usleep(20000);
  EXPECT_FALSE(*xsg->read_watch());
}

TEST_F(XsFixture, ReleaseDomainWatchFiresWhenAGuestDisconnects) {
  ASSERT_TRUE(xs0->watch("@releaseDomain", "rel"));
  ASSERT_TRUE(wait_watch(*xs0));
  xsg.reset();
  guest.reset();
  auto e = wait_watch(*xs0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "@releaseDomain");
  EXPECT_EQ(e->token, "rel");
}

TEST_F(XsFixture, LostBackendIsAClearErrorNotAHang) {
  server.reset();  // the backend goes away
  auto r = xsg->read(kXsNoTransaction, "domid");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTCONN) << r.error().message;
  EXPECT_NE(r.error().message.find("lost the simulated hypervisor"), std::string::npos);
}

}  // namespace
}  // namespace xpv
