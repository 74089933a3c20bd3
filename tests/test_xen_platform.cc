// SPDX-License-Identifier: MIT
// The xen platform against real Xen. Runs where /dev/xen exists (inside a Xen
// guest: `make e2e-xen` runs it in a PV domU); elsewhere every test is
// skipped and says why.
#include <gtest/gtest.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>

#include "evtchn/late_eoi.h"
#include "xen/sched_poll.h"
#include "xpv/platform.h"

namespace xpv {
namespace {

class XenPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st {};
    if (::stat("/dev/xen", &st) != 0) {
      GTEST_SKIP() << "skipped: /dev/xen does not exist here (not a Xen guest); these tests run "
                      "inside a PV domU under `make e2e-xen`";
    }
    auto p = open_xen_platform();
    ASSERT_TRUE(p) << p.error().message;
    plat = std::move(*p);
  }
  std::unique_ptr<Platform> plat;
};

std::optional<XsWatchEvent> wait_watch(XenStore& xs, int timeout_ms = 10000) {
  for (int waited = 0; waited <= timeout_ms; waited += 20) {
    auto e = xs.read_watch();
    if (!e) return std::nullopt;
    if (*e) return **e;
    pollfd p{xs.watch_fd(), POLLIN, 0};
    ::poll(&p, 1, 20);
  }
  return std::nullopt;
}

// A pair of local ports: `a` notifies, `b` receives (its evtchn handle's
// fd), both drained of what binding may have left.
struct LocalPair {
  std::unique_ptr<EventChannel> a, b;
  uint32_t pa = 0, pb = 0;
};
void open_local_pair(Platform& plat, LocalPair* lp) {
  for (auto* h : {&lp->a, &lp->b}) {
    auto ch = plat.open_event_channel();
    ASSERT_TRUE(ch) << ch.error().message;
    *h = std::move(*ch);
  }
  auto pa = lp->a->alloc_unbound(plat.self_domid());
  ASSERT_TRUE(pa) << pa.error().message;
  auto pb = lp->b->bind_interdomain(plat.self_domid(), *pa);
  ASSERT_TRUE(pb) << pb.error().message;
  lp->pa = *pa;
  lp->pb = *pb;
  for (auto& h : {lp->a.get(), lp->b.get()}) {
    while (auto p = h->pending()) {
      if (!*p) break;
      (void)h->unmask(**p);
    }
  }
}

TEST_F(XenPlatformTest, KnowsItsDomainId) {
  EXPECT_EQ(plat->name(), "xen");
  auto xs = plat->open_xenstore();
  ASSERT_TRUE(xs) << xs.error().message;
  auto d = (*xs)->read(kXsNoTransaction, "domid");
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, std::to_string(plat->self_domid()));
  auto home = (*xs)->domain_path(plat->self_domid());
  ASSERT_TRUE(home);
  EXPECT_EQ(*home, "/local/domain/" + std::to_string(plat->self_domid()));
}

TEST_F(XenPlatformTest, XenstoreReadWriteDirectoryRemove) {
  auto xs = std::move(*plat->open_xenstore());
  ASSERT_TRUE(xs->write(kXsNoTransaction, "data/xpv-test/a", "1"));
  ASSERT_TRUE(xs->write(kXsNoTransaction, "data/xpv-test/b", "2"));
  EXPECT_EQ(*xs->read(kXsNoTransaction, "data/xpv-test/a"), "1");
  auto dir = xs->directory(kXsNoTransaction, "data/xpv-test");
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->size(), 2u);
  auto perms = xs->get_permissions(kXsNoTransaction, "data/xpv-test/a");
  ASSERT_TRUE(perms);
  ASSERT_FALSE(perms->empty());
  EXPECT_EQ((*perms)[0].domid, plat->self_domid()) << "we own nodes we created";
  ASSERT_TRUE(xs->rm(kXsNoTransaction, "data/xpv-test"));
  auto gone = xs->try_read(kXsNoTransaction, "data/xpv-test/a");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone);
  EXPECT_FALSE(xs->write(kXsNoTransaction, "/local/domain/0/xpv-not-allowed", "x"))
      << "a guest may not write dom0's nodes";
}

TEST_F(XenPlatformTest, XenstoreTransactionsConflictAndRetry) {
  auto a = std::move(*plat->open_xenstore());
  auto b = std::move(*plat->open_xenstore());
  ASSERT_TRUE(a->write(kXsNoTransaction, "data/xpv-tx", "0"));
  auto t = a->transaction_start();
  ASSERT_TRUE(t);
  ASSERT_TRUE(a->read(*t, "data/xpv-tx"));
  ASSERT_TRUE(a->write(*t, "data/xpv-tx", "1"));
  ASSERT_TRUE(b->write(kXsNoTransaction, "data/xpv-tx", "5"));
  Status c = a->transaction_end(*t, false);
  EXPECT_EQ(c.code(), EAGAIN);
  int attempts = 0;
  ASSERT_TRUE(xs_transact(*a, [&](xs_transaction_t tx) -> Status {
    ++attempts;
    auto v = a->read(tx, "data/xpv-tx");
    if (!v) return v.error();
    if (attempts == 1) XPV_TRY(b->write(kXsNoTransaction, "data/xpv-tx", "7"));
    return a->write(tx, "data/xpv-tx", std::to_string(std::stoi(*v) + 1));
  }));
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(*a->read(kXsNoTransaction, "data/xpv-tx"), "8");
  (void)a->rm(kXsNoTransaction, "data/xpv-tx");
}

TEST_F(XenPlatformTest, XenstoreWatchFiresOnChange) {
  auto xs = std::move(*plat->open_xenstore());
  ASSERT_TRUE(xs->write(kXsNoTransaction, "data/xpv-w", "0"));
  ASSERT_TRUE(xs->watch("data/xpv-w", "tok"));
  auto first = wait_watch(*xs);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->token, "tok");
  ASSERT_TRUE(xs->write(kXsNoTransaction, "data/xpv-w/c", "1"));
  auto ev = wait_watch(*xs);
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->path.find("data/xpv-w"), std::string::npos);
  ASSERT_TRUE(xs->unwatch("data/xpv-w", "tok"));
  (void)xs->rm(kXsNoTransaction, "data/xpv-w");
}

TEST_F(XenPlatformTest, EventChannelLoopbackWithLateEoi) {
  LocalPair lp;
  ASSERT_NO_FATAL_FAILURE(open_local_pair(*plat, &lp));
  auto ch = LateEoiChannel::create(std::move(lp.b));
  ASSERT_TRUE(ch);
  int runs = 0;
  ASSERT_TRUE((*ch)->add_port(lp.pb, [&] {
    ++runs;
    return true;
  }));
  ASSERT_TRUE(lp.a->notify(lp.pa));
  pollfd p{(*ch)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the notification arrives";
  auto r = (*ch)->process();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, 1u);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ((*ch)->counters(lp.pb)->unmasks, 1u);
  // And the other way round.
  ASSERT_TRUE((*ch)->channel().notify(lp.pb));
  pollfd q{lp.a->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&q, 1, 5000), 1);
  auto got = lp.a->pending();
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(**got, lp.pa);
  ASSERT_TRUE(lp.a->unmask(lp.pa));
}

// Linux's evtchn device hands every queued port to one read: two ports that
// fired are taken at one look, and a look at nothing finds nothing (EAGAIN).
TEST_F(XenPlatformTest, FiredPortsAreTakenAtOneRead) {
  auto a = std::move(*plat->open_event_channel());
  auto b = std::move(*plat->open_event_channel());
  evtchn_port_t pa[2], pb[2];
  for (int i = 0; i < 2; ++i) {
    auto u = a->alloc_unbound(plat->self_domid());
    ASSERT_TRUE(u) << u.error().message;
    auto v = b->bind_interdomain(plat->self_domid(), *u);
    ASSERT_TRUE(v) << v.error().message;
    pa[i] = *u;
    pb[i] = *v;
  }
  for (auto* h : {a.get(), b.get()}) {  // whatever the binds raised
    evtchn_port_t got[8];
    auto n = h->take_pending(got);
    ASSERT_TRUE(n) << n.error().message;
    for (size_t i = 0; i < *n; ++i)
      ASSERT_TRUE(h->unmask(got[i]));
  }
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(a->notify(pa[0]));
    ASSERT_TRUE(a->notify(pa[1]));
    evtchn_port_t got[8] = {};
    size_t n = 0;
    for (int i = 0; i < 500 && n < 2; ++i) {
      pollfd p{b->fd(), POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the notifications arrive";
      if (n == 0) ::usleep(2000);  // both queued before the read, as a rule
      auto r = b->take_pending(std::span(got + n, 8 - n));
      ASSERT_TRUE(r) << r.error().message;
      n += *r;
    }
    ASSERT_EQ(n, 2u);
    EXPECT_TRUE((got[0] == pb[0] && got[1] == pb[1]) || (got[0] == pb[1] && got[1] == pb[0]));
    auto none = b->take_pending(std::span(got, 8));
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(*none, 0u);
    ASSERT_TRUE(b->unmask(pb[0]));
    ASSERT_TRUE(b->unmask(pb[1]));
  }
}

TEST_F(XenPlatformTest, GrantsSharedWithDom0AndEnded) {
  auto sharer = plat->open_grant_sharer();
  ASSERT_TRUE(sharer) << sharer.error().message;
  // To dom0, as netfront does.
  auto to0 = (*sharer)->share(kDom0, 4, true);
  ASSERT_TRUE(to0) << to0.error().message;
  EXPECT_EQ(to0->count(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_GE(to0->ref(i), 8u) << "not a reserved entry";
  std::memset(to0->data(), 0x5A, to0->bytes());
  EndAccessReport r = to0->end_access();
  EXPECT_EQ(r.pages, 4u);
}

// What a backend does with a frontend's grants (xpv-netback: gntdev map and grant copy), on grants
// of our own. In a PVH guest (Linux 6.1) the process's exit after such a self-map oopses the
// kernel (__tlb_remove_page_size in exit_mmap), so the real-Xen run leaves this one out there.
TEST_F(XenPlatformTest, OwnGrantsMappedAndCopiedThroughGntdev) {
  auto sharer = plat->open_grant_sharer();
  ASSERT_TRUE(sharer) << sharer.error().message;
  auto self = (*sharer)->share(plat->self_domid(), 2, true);
  ASSERT_TRUE(self) << self.error().message;
  std::memset(self->data(), 0x6B, self->bytes());
  auto mapper = plat->open_grant_mapper();
  ASSERT_TRUE(mapper) << mapper.error().message;
  auto m = (*mapper)->map(plat->self_domid(), self->ref(1), true);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->data()[10], 0x6B);
  m->data()[10] = 0x01;
  EXPECT_EQ(self->page(1)[10], 0x01);
  m->reset();
  uint8_t buf[64];
  std::memset(buf, 0, sizeof buf);
  GrantCopyOp op;
  op.source = {true, plat->self_domid(), self->ref(0), 16, nullptr};
  op.dest = {false, 0, 0, 0, buf};
  op.len = 32;
  ASSERT_TRUE((*mapper)->copy(std::span<GrantCopyOp>(&op, 1)));
  EXPECT_EQ(op.status, 0);
  EXPECT_EQ(buf[31], 0x6B);
  EXPECT_EQ(buf[32], 0);
  // Past the page: refused by Xen, nothing copied.
  op.source.offset = 4090;
  op.len = 32;
  std::memset(buf, 0, sizeof buf);
  ASSERT_TRUE((*mapper)->copy(std::span<GrantCopyOp>(&op, 1)));
  EXPECT_NE(op.status, 0);
  EXPECT_EQ(buf[0], 0);
}

// SCHEDOP_poll through privcmd (xen/sched_poll.h), which needs what the
// other tests do not: xen_privcmd loaded with unrestricted=1 in a domU. The
// e2e check idle-wait-xen runs these after xpv-bind --prepare
// --privcmd-hypercalls; the xen-platform-tests check leaves them out.
class XenSchedPollTest : public XenPlatformTest {};

// Twenty waits in a row, each ended by a notification that another thread
// sends while this one is blocked in Xen: each returns, with the event on
// its way to the evtchn device, well before the guest's tick would have
// ended it many times over.
TEST_F(XenSchedPollTest, AWaitEndsWhenItsPortFires) {
  auto sp = SchedPoll::open();
  ASSERT_TRUE(sp) << sp.error().message;
  LocalPair lp;
  ASSERT_NO_FATAL_FAILURE(open_local_pair(*plat, &lp));
  const uint32_t port = lp.pb;
  for (int cycle = 0; cycle < 20; ++cycle) {
    std::thread notifier([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (void)lp.a->notify(lp.pa);
    });
    const auto t0 = std::chrono::steady_clock::now();
    int returns = 0;
    bool fired = false;
    while (!fired && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
      ASSERT_EQ(sp->wait({&port, 1}), 0) << "cycle " << cycle;
      ++returns;
      pollfd p{lp.b->fd(), POLLIN, 0};
      fired = ::poll(&p, 1, 0) == 1;
    }
    notifier.join();
    ASSERT_TRUE(fired) << "cycle " << cycle << ": no event in 5 s, " << returns << " returns";
    auto got = lp.b->pending();
    ASSERT_TRUE(got && *got) << "cycle " << cycle;
    EXPECT_EQ(**got, port);
    ASSERT_TRUE(lp.b->unmask(port));
  }
}

// With no port pending, a wait blocks: the returns over half a second come
// from the vCPU's other events (its tick, at most 1000 a second), far fewer
// than the thousands a call that does not block would make.
TEST_F(XenSchedPollTest, AWaitWithNothingPendingBlocks) {
  auto sp = SchedPoll::open();
  ASSERT_TRUE(sp) << sp.error().message;
  auto a = std::move(*plat->open_event_channel());
  auto pa = a->alloc_unbound(plat->self_domid());
  ASSERT_TRUE(pa) << pa.error().message;
  const uint32_t port = *pa;
  const auto t0 = std::chrono::steady_clock::now();
  int returns = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)) {
    ASSERT_EQ(sp->wait({&port, 1}), 0);
    ++returns;
  }
  EXPECT_LE(returns, 600) << "a wait in Xen returned " << returns << " times in 0.5 s";
  EXPECT_GE(returns, 1);
}

bool nothing_arrived(void*, std::span<struct pollfd>) {
  return false;
}
bool work_arrived(void*, std::span<struct pollfd>) {
  return true;
}

// Runs fn() in a child process under a seccomp filter that kills it at
// `ppoll` or `clock_gettime` (a system call: the vDSO's reads are not).
// Returns waitpid's status (exit 2: the filter could not be set), or -1
// when fork failed. The child only calls fn() and _exit.
template <typename Fn>
int status_under_filter(Fn fn) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#endif
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ppoll, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      ::_exit(2);
    ::_exit(fn());
  }
  int st = 0;
  return ::waitpid(pid, &st, 0) == pid ? st : -1;
}

// An idle thread woken by work that arrived pays the hypercall alone: no
// ppoll, no clock_gettime system call (in a PV domU the vDSO cannot read
// CLOCK_MONOTONIC, so reading it is one; wait_for's deadline clock must not
// be). A child process runs the wait under a seccomp filter that kills it
// at either call; its port is pending before the wait (a second
// notification while the first, delivered, keeps it masked), so the first
// return finds the work there.
TEST_F(XenSchedPollTest, AWakeUpByWorkThatArrivedCostsTheHypercallAlone) {
  auto sp = SchedPoll::open();
  ASSERT_TRUE(sp) << sp.error().message;
  LocalPair lp;
  ASSERT_NO_FATAL_FAILURE(open_local_pair(*plat, &lp));
  ASSERT_TRUE(lp.a->notify(lp.pa));
  pollfd delivered{lp.b->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&delivered, 1, 5000), 1) << "the first notification did not arrive in 5 s";
  ASSERT_TRUE(lp.a->notify(lp.pa));  // pending now, and masked: no upcall clears it
  const int st = status_under_filter([&] {
    pollfd p{lp.b->fd(), POLLIN, 0};
    SchedPoll::WaitEnd end = SchedPoll::WaitEnd::kTimedOut;
    const int rc = sp->wait_for({&lp.pb, 1}, {&p, 1}, 1'000'000, work_arrived, nullptr, &end);
    return rc != 0 ? 3 : end != SchedPoll::WaitEnd::kArrived ? 4 : 0;
  });
  ASSERT_GE(st, 0) << "fork: " << strerror(errno);
  ASSERT_FALSE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
      << "the wake-up made a system call besides the hypercall (ppoll or clock_gettime)";
  ASSERT_TRUE(WIFEXITED(st)) << "the child ended by signal " << WTERMSIG(st);
  EXPECT_NE(WEXITSTATUS(st), 2) << "seccomp could not be set up";
  EXPECT_NE(WEXITSTATUS(st), 3) << "the wait failed";
  EXPECT_NE(WEXITSTATUS(st), 4) << "the wait did not end by arrived()";
  EXPECT_EQ(WEXITSTATUS(st), 0);
  // What the deadline clock is spared here, said for the log: whether this
  // guest reads CLOCK_MONOTONIC with a system call (a PV domU: yes).
  const int probe = status_under_filter([] {
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return 0;
  });
  std::printf(
      "[   INFO   ] CLOCK_MONOTONIC is read %s in this guest\n",
      WIFSIGNALED(probe) && WTERMSIG(probe) == SIGSYS ? "with a system call" : "by the vDSO");
}

// An event that brought arrived() nothing ends the wait by the fd, five
// times in a row, each well before its deadline.
TEST_F(XenSchedPollTest, AWaitForEndsByTheFdWhenNothingArrived) {
  auto sp = SchedPoll::open();
  ASSERT_TRUE(sp) << sp.error().message;
  LocalPair lp;
  ASSERT_NO_FATAL_FAILURE(open_local_pair(*plat, &lp));
  for (int cycle = 0; cycle < 5; ++cycle) {
    std::thread notifier([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (void)lp.a->notify(lp.pa);
    });
    pollfd p{lp.b->fd(), POLLIN, 0};
    SchedPoll::WaitEnd end = SchedPoll::WaitEnd::kArrived;
    const int rc = sp->wait_for({&lp.pb, 1}, {&p, 1}, 10'000'000, nothing_arrived, nullptr, &end);
    notifier.join();
    ASSERT_EQ(rc, 0) << "cycle " << cycle;
    ASSERT_EQ(end, SchedPoll::WaitEnd::kFdReady) << "cycle " << cycle;
    EXPECT_EQ(p.revents & POLLIN, POLLIN) << "cycle " << cycle;
    auto got = lp.b->pending();
    ASSERT_TRUE(got && *got) << "cycle " << cycle;
    ASSERT_TRUE(lp.b->unmask(lp.pb));
  }
}

// With nothing arriving, the wait ends at its deadline: not before, and not
// much after (the tick clock moves by the guest's tick, 4 ms at HZ=250).
TEST_F(XenSchedPollTest, AWaitForEndsAtItsDeadline) {
  auto sp = SchedPoll::open();
  ASSERT_TRUE(sp) << sp.error().message;
  LocalPair lp;
  ASSERT_NO_FATAL_FAILURE(open_local_pair(*plat, &lp));
  pollfd p{lp.b->fd(), POLLIN, 0};
  SchedPoll::WaitEnd end = SchedPoll::WaitEnd::kArrived;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(sp->wait_for({&lp.pb, 1}, {&p, 1}, 100'000, nothing_arrived, nullptr, &end), 0);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(end, SchedPoll::WaitEnd::kTimedOut);
  EXPECT_GE(ms, 80) << "a 100 ms wait ended after " << ms << " ms";
  EXPECT_LE(ms, 2000) << "a 100 ms wait ended after " << ms << " ms";
}

TEST(XenSchedPollAbsent, FailsWithAClearError) {
  struct stat st {};
  if (::stat("/dev/xen", &st) == 0) GTEST_SKIP() << "skipped: this machine has /dev/xen";
  auto sp = SchedPoll::open();
  ASSERT_FALSE(sp);
  EXPECT_NE(sp.error().message.find("/dev/xen/privcmd is not usable"), std::string::npos)
      << sp.error().message;
}

TEST(XenPlatformAbsent, FailsWithAClearError) {
  struct stat st {};
  if (::stat("/dev/xen", &st) == 0) GTEST_SKIP() << "skipped: this machine has /dev/xen";
  auto p = open_platform("xen");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ENODEV);
  EXPECT_NE(p.error().message.find("/dev/xen does not exist"), std::string::npos)
      << p.error().message;
}

}  // namespace
}  // namespace xpv
