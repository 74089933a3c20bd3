// SPDX-License-Identifier: MIT
// Unit tests for the simulated hypervisor's xenstore engine.

#include "sim/xenstore_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace xpv {
// Readable failure messages for permission lists.
void PrintTo(const XsPermission& p, std::ostream* os) {
  static const char kAccess[] = {'n', 'r', 'w', 'b'};
  unsigned a = static_cast<unsigned>(p.access);
  *os << (a < 4 ? kAccess[a] : '?') << p.domid;
}
}  // namespace xpv

namespace xpv::sim {
namespace {

using namespace std::string_literals;
using ConnId = XenstoreEngine::ConnId;
using Perms = std::vector<XsPermission>;

constexpr auto kNone = XsPermission::kNone;
constexpr auto kRead = XsPermission::kRead;
constexpr auto kWrite = XsPermission::kWrite;
constexpr auto kBoth = XsPermission::kBoth;
constexpr xs_transaction_t kNoTx = kXsNoTransaction;

// Connection ids used throughout: the connection id names the domain, except
// kTools (dom0).
constexpr ConnId kTools = 1;

struct Event {
  ConnId conn;
  std::string path;
  std::string token;
  bool operator==(const Event&) const = default;
};

void PrintTo(const Event& e, std::ostream* os) {
  *os << "{conn " << e.conn << ", \"" << e.path << "\", \"" << e.token << "\"}";
}

using Events = std::vector<Event>;

// An engine whose watch events are recorded.
struct Harness {
  Events events;
  XenstoreEngine xs{[this](ConnId c, const std::string& path, const std::string& token) {
    events.push_back({c, path, token});
  }};

  Harness() { xs.add_connection(kTools, kDom0); }

  // The events so far, clearing the record.
  Events take() {
    Events e;
    e.swap(events);
    return e;
  }

  // Writes as dom0 and sets the node's permissions.
  void make(const std::string& path, const std::string& value, const Perms& perms) {
    ASSERT_FALSE(xs.write(kTools, kNoTx, path, value).failed()) << path;
    ASSERT_FALSE(xs.set_permissions(kTools, kNoTx, path, perms).failed()) << path;
  }

  std::string read(const std::string& path, ConnId c = kTools, xs_transaction_t t = kNoTx) {
    auto r = xs.read(c, t, path);
    return r ? *r : "<error " + std::to_string(r.error().code) + ": " + r.error().message + ">";
  }

  Perms perms(const std::string& path) {
    auto r = xs.get_permissions(kTools, kNoTx, path);
    return r ? *r : Perms{};
  }

  std::vector<std::string> dir(const std::string& path, ConnId c = kTools,
                               xs_transaction_t t = kNoTx) {
    auto r = xs.directory(c, t, path);
    return r ? *r : std::vector<std::string>{"<error>"};
  }
};

// The errno of a failed Status or Result, 0 on success.
template <typename R>
int err(const R& r) {
  return r.failed() ? r.error().code : 0;
}

#define EXPECT_OK(expr)                                               \
  do {                                                                \
    auto&& r_ = (expr);                                               \
    EXPECT_FALSE(r_.failed()) << #expr << ": " << r_.error().message; \
  } while (0)

#define ASSERT_OK(expr)                                               \
  do {                                                                \
    auto&& r_ = (expr);                                               \
    ASSERT_FALSE(r_.failed()) << #expr << ": " << r_.error().message; \
  } while (0)

using Names = std::vector<std::string>;

// ---------------------------------------------------------------------------
// Basics.

TEST(XenstoreEngine, RootExistsInitially) {
  Harness h;
  EXPECT_EQ(h.xs.node_count(), 1u);
  EXPECT_EQ(h.read("/"), "");
  EXPECT_EQ(h.dir("/"), Names{});
  EXPECT_EQ(h.perms("/"), (Perms{{0, kNone}}));
}

TEST(XenstoreEngine, WriteCreatesMissingParents) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b/c", "hello"));
  EXPECT_EQ(h.xs.node_count(), 4u);
  EXPECT_EQ(h.read("/a/b/c"), "hello");
  EXPECT_EQ(h.read("/a/b"), "");
  EXPECT_EQ(h.read("/a"), "");
  EXPECT_EQ(h.dir("/"), Names{"a"});
  EXPECT_EQ(h.dir("/a"), Names{"b"});
  EXPECT_EQ(h.dir("/a/b"), Names{"c"});
  EXPECT_EQ(h.dir("/a/b/c"), Names{});
}

TEST(XenstoreEngine, WriteOverwritesAndKeepsBytes) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/v", "one"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/v", "two"));
  EXPECT_EQ(h.read("/v"), "two");
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/v", ""));
  EXPECT_EQ(h.read("/v"), "");
  const std::string binary = "a\0b\0\xff\x01"s;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/v", binary));
  EXPECT_EQ(h.read("/v"), binary);
  EXPECT_EQ(h.xs.node_count(), 2u);
}

TEST(XenstoreEngine, ValueSizeLimit) {
  Harness h;
  const std::string max(XenstoreEngine::kMaxValueBytes, 'x');
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/big", max));
  EXPECT_EQ(h.read("/big"), max);
  Status s = h.xs.write(kTools, kNoTx, "/big", max + "y");
  EXPECT_EQ(s.code(), E2BIG);
  EXPECT_NE(s.message().find("/big"), std::string::npos) << s.message();
  EXPECT_EQ(h.read("/big"), max);
  // A too large value does not create the node either.
  EXPECT_EQ(h.xs.write(kTools, kNoTx, "/other", max + "y").code(), E2BIG);
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/other")), ENOENT);
}

TEST(XenstoreEngine, MkdirCreatesAndIsIdempotent) {
  Harness h;
  ASSERT_OK(h.xs.mkdir(kTools, kNoTx, "/m/n"));
  EXPECT_EQ(h.xs.node_count(), 3u);
  EXPECT_EQ(h.read("/m/n"), "");
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/m/n", "keep"));
  ASSERT_OK(h.xs.mkdir(kTools, kNoTx, "/m/n"));
  EXPECT_EQ(h.read("/m/n"), "keep");
  EXPECT_EQ(h.xs.node_count(), 3u);
}

TEST(XenstoreEngine, DirectoryListsSortedChildNames) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/zeta", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/alpha", "2"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/mid/x", "3"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/Beta", "4"));
  EXPECT_EQ(h.dir("/d"), (Names{"Beta", "alpha", "mid", "zeta"}));
  EXPECT_EQ(h.dir("/d/alpha"), Names{});
  EXPECT_EQ(err(h.xs.directory(kTools, kNoTx, "/d/none")), ENOENT);
}

TEST(XenstoreEngine, RmRemovesWholeSubtree) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b/c", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/d", "2"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/e", "3"));
  EXPECT_EQ(h.xs.node_count(), 6u);
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/a"));
  EXPECT_EQ(h.xs.node_count(), 2u);
  EXPECT_EQ(h.dir("/"), Names{"e"});
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/a")), ENOENT);
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/a/b/c")), ENOENT);
  // Writing again starts from scratch.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/x", "4"));
  EXPECT_EQ(h.dir("/a"), Names{"x"});
}

TEST(XenstoreEngine, RmOfMissingNodeFollowsXenstored) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/e", "1"));
  // Parent exists: fine.
  EXPECT_OK(h.xs.rm(kTools, kNoTx, "/e/nothing"));
  // Parent missing too: ENOENT.
  Status s = h.xs.rm(kTools, kNoTx, "/nothing/deeper");
  EXPECT_EQ(s.code(), ENOENT);
  EXPECT_NE(s.message().find("/nothing/deeper"), std::string::npos) << s.message();
  // The root cannot go.
  EXPECT_EQ(h.xs.rm(kTools, kNoTx, "/").code(), EINVAL);
  EXPECT_EQ(h.xs.node_count(), 2u);
}

TEST(XenstoreEngine, InvalidPathsAreRejected) {
  Harness h;
  const std::vector<std::string> bad = {
      "",
      "/a/",
      "//",
      "//a",
      "/a//b",
      "/a b",
      "/a.b",
      "/a\0b"s,
      "\0"s,
      "/\xc3\xa4",
      "/a\n",
      "@introduceDomain",
      "@releaseDomain",
      "@other",
      "/a/b/",
      "a//b",
      "x/",
  };
  for (const std::string& p : bad) {
    SCOPED_TRACE(testing::PrintToString(p));
    EXPECT_EQ(err(h.xs.read(kTools, kNoTx, p)), EINVAL);
    EXPECT_EQ(err(h.xs.write(kTools, kNoTx, p, "v")), EINVAL);
    EXPECT_EQ(err(h.xs.mkdir(kTools, kNoTx, p)), EINVAL);
    EXPECT_EQ(err(h.xs.rm(kTools, kNoTx, p)), EINVAL);
    EXPECT_EQ(err(h.xs.directory(kTools, kNoTx, p)), EINVAL);
    EXPECT_EQ(err(h.xs.get_permissions(kTools, kNoTx, p)), EINVAL);
    const Perms perms = {{0, kRead}};
    EXPECT_EQ(err(h.xs.set_permissions(kTools, kNoTx, p, perms)), EINVAL);
  }
  EXPECT_EQ(h.xs.node_count(), 1u);
  // Watch names: only the two special ones are valid.
  EXPECT_EQ(h.xs.watch(kTools, "@other", "t").code(), EINVAL);
  EXPECT_EQ(h.xs.watch(kTools, "", "t").code(), EINVAL);
  EXPECT_EQ(h.xs.watch(kTools, "/a/", "t").code(), EINVAL);
  EXPECT_EQ(h.xs.unwatch(kTools, "@other", "t").code(), EINVAL);
  EXPECT_EQ(h.xs.watch_count(kTools), 0u);
  EXPECT_TRUE(h.take().empty());
  // The message names the problem and the path, escaping odd bytes.
  auto r = h.xs.read(kTools, kNoTx, "/a b");
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.error().message.find("/a b"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("invalid character"), std::string::npos) << r.error().message;
  r = h.xs.read(kTools, kNoTx, "/a\0b"s);
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.error().message.find("/a\\x00b"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("NUL"), std::string::npos) << r.error().message;
}

TEST(XenstoreEngine, ValidPathCharacters) {
  Harness h;
  EXPECT_OK(h.xs.write(kTools, kNoTx, "/Az09-_@/x@y", "v"));
  EXPECT_EQ(h.read("/Az09-_@/x@y"), "v");
}

TEST(XenstoreEngine, PathLengthLimit) {
  Harness h;
  const size_t max = XenstoreEngine::kMaxPathBytes;
  const std::string longest = "/" + std::string(max - 1, 'a');
  EXPECT_OK(h.xs.write(kTools, kNoTx, longest, "v"));
  EXPECT_EQ(h.read(longest), "v");
  EXPECT_EQ(h.xs.write(kTools, kNoTx, longest + "a", "v").code(), E2BIG);
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, std::string(100000, '/'))), E2BIG);
  // A relative path counts once made absolute.
  h.xs.add_connection(5, 5);
  const std::string prefix = "/local/domain/5/";
  EXPECT_EQ(h.xs.write(5, kNoTx, std::string(max - prefix.size() + 1, 'r'), "v").code(), E2BIG);
  EXPECT_EQ(h.xs.node_count(), 2u);
}

TEST(XenstoreEngine, UnknownConnectionIsEinval) {
  Harness h;
  const ConnId bad = 99;
  const Perms perms = {{0, kRead}};
  EXPECT_EQ(err(h.xs.read(bad, kNoTx, "/")), EINVAL);
  EXPECT_EQ(err(h.xs.write(bad, kNoTx, "/a", "v")), EINVAL);
  EXPECT_EQ(err(h.xs.mkdir(bad, kNoTx, "/a")), EINVAL);
  EXPECT_EQ(err(h.xs.rm(bad, kNoTx, "/a")), EINVAL);
  EXPECT_EQ(err(h.xs.directory(bad, kNoTx, "/")), EINVAL);
  EXPECT_EQ(err(h.xs.get_permissions(bad, kNoTx, "/")), EINVAL);
  EXPECT_EQ(err(h.xs.set_permissions(bad, kNoTx, "/", perms)), EINVAL);
  EXPECT_EQ(err(h.xs.transaction_start(bad)), EINVAL);
  EXPECT_EQ(err(h.xs.transaction_end(bad, 1, false)), EINVAL);
  EXPECT_EQ(err(h.xs.watch(bad, "/", "t")), EINVAL);
  EXPECT_EQ(err(h.xs.unwatch(bad, "/", "t")), EINVAL);
  auto r = h.xs.read(bad, kNoTx, "/");
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.error().message.find("unknown connection 99"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(h.xs.watch_count(bad), 0u);
  EXPECT_EQ(h.xs.transaction_count(bad), 0u);
  h.xs.remove_connection(bad);  // harmless
  EXPECT_EQ(h.xs.node_count(), 1u);
  EXPECT_TRUE(h.take().empty());
}

TEST(XenstoreEngine, MissingNodeMessageNamesPath) {
  Harness h;
  auto r = h.xs.read(kTools, kNoTx, "/missing/node");
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_NE(r.error().message.find("read /missing/node"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("no such node"), std::string::npos) << r.error().message;
}

TEST(XenstoreEngine, RelativePathsAreBelowTheDomainHome) {
  Harness h;
  h.xs.introduce_domain(5);
  h.xs.add_connection(5, 5);
  ASSERT_OK(h.xs.write(5, kNoTx, "data/x", "1"));
  EXPECT_EQ(h.read("/local/domain/5/data/x"), "1");
  EXPECT_EQ(h.read("data/x", 5), "1");
  EXPECT_EQ(h.dir("data", 5), Names{"x"});
  ASSERT_OK(h.xs.rm(5, kNoTx, "data/x"));
  EXPECT_EQ(h.dir("/local/domain/5/data"), Names{});
  // Dom0's relative paths are below /local/domain/0.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "foo", "2"));
  EXPECT_EQ(h.read("/local/domain/0/foo"), "2");
}

// ---------------------------------------------------------------------------
// Permissions.

TEST(XenstoreEngine, OwnerHasFullAccessAndFirstEntryIsTheDefault) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.xs.add_connection(4, 4);
  h.make("/n", "v", {{3, kNone}});
  // The owner.
  EXPECT_EQ(h.read("/n", 3), "v");
  EXPECT_OK(h.xs.write(3, kNoTx, "/n", "w"));
  EXPECT_OK(h.xs.directory(3, kNoTx, "/n"));
  EXPECT_OK(h.xs.get_permissions(3, kNoTx, "/n"));
  // Everybody else: the default, none.
  EXPECT_EQ(err(h.xs.read(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.write(4, kNoTx, "/n", "x")), EACCES);
  EXPECT_EQ(err(h.xs.mkdir(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.directory(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.get_permissions(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.rm(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.write(4, kNoTx, "/n/child", "x")), EACCES);
  EXPECT_EQ(h.read("/n"), "w");

  h.make("/n", "v", {{3, kRead}});
  EXPECT_EQ(h.read("/n", 4), "v");
  EXPECT_EQ(h.dir("/n", 4), Names{});
  EXPECT_EQ(err(h.xs.write(4, kNoTx, "/n", "x")), EACCES);

  h.make("/n", "v", {{3, kWrite}});
  EXPECT_EQ(err(h.xs.read(4, kNoTx, "/n")), EACCES);
  EXPECT_OK(h.xs.write(4, kNoTx, "/n", "x"));
  EXPECT_EQ(h.read("/n"), "x");

  h.make("/n", "v", {{3, kBoth}});
  EXPECT_EQ(h.read("/n", 4), "v");
  EXPECT_OK(h.xs.write(4, kNoTx, "/n", "y"));
  EXPECT_OK(h.xs.rm(4, kNoTx, "/n"));
}

TEST(XenstoreEngine, PerDomainEntriesOverrideTheDefault) {
  Harness h;
  for (ConnId c : {3u, 4u, 5u, 6u, 7u})
    h.xs.add_connection(c, static_cast<domid_t>(c));
  h.make("/n", "v", {{3, kRead}, {4, kNone}, {5, kBoth}, {6, kWrite}});
  EXPECT_EQ(err(h.xs.read(4, kNoTx, "/n")), EACCES);
  EXPECT_EQ(err(h.xs.write(4, kNoTx, "/n", "x")), EACCES);
  EXPECT_EQ(h.read("/n", 5), "v");
  EXPECT_OK(h.xs.write(5, kNoTx, "/n", "five"));
  EXPECT_EQ(err(h.xs.read(6, kNoTx, "/n")), EACCES);
  EXPECT_OK(h.xs.write(6, kNoTx, "/n", "six"));
  EXPECT_EQ(h.read("/n", 7), "six");  // not listed: the default
  EXPECT_EQ(err(h.xs.write(7, kNoTx, "/n", "x")), EACCES);
  // The first later entry naming a domain decides.
  h.make("/m", "v", {{3, kNone}, {4, kRead}, {4, kWrite}});
  EXPECT_EQ(h.read("/m", 4), "v");
  EXPECT_EQ(err(h.xs.write(4, kNoTx, "/m", "x")), EACCES);
  // An owner listed again later keeps full access.
  h.make("/o", "v", {{3, kNone}, {3, kNone}});
  EXPECT_EQ(h.read("/o", 3), "v");
  EXPECT_OK(h.xs.write(3, kNoTx, "/o", "x"));
}

TEST(XenstoreEngine, Dom0BypassesPermissions) {
  Harness h;
  h.xs.add_connection(2, kDom0);  // a second dom0 connection
  h.make("/n/c", "v", {{3, kNone}});
  h.make("/n", "", {{3, kNone}});
  EXPECT_EQ(h.read("/n/c", 2), "v");
  EXPECT_OK(h.xs.write(2, kNoTx, "/n/c", "w"));
  EXPECT_OK(h.xs.write(2, kNoTx, "/n/new", "w"));
  EXPECT_EQ(h.dir("/n", 2), (Names{"c", "new"}));
  const Perms p = {{4, kRead}};
  EXPECT_OK(h.xs.set_permissions(2, kNoTx, "/n/c", p));
  EXPECT_EQ(h.perms("/n/c"), p);
  EXPECT_OK(h.xs.rm(2, kNoTx, "/n"));
  EXPECT_EQ(h.xs.node_count(), 1u);
}

TEST(XenstoreEngine, NewNodesInheritPermissionsCreatorBecomesOwner) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.make("/p", "", {{0, kRead}, {3, kBoth}});
  ASSERT_OK(h.xs.write(3, kNoTx, "/p/q/r", "v"));
  EXPECT_EQ(h.perms("/p/q"), (Perms{{3, kRead}, {3, kBoth}}));
  EXPECT_EQ(h.perms("/p/q/r"), (Perms{{3, kRead}, {3, kBoth}}));
  ASSERT_OK(h.xs.mkdir(3, kNoTx, "/p/m"));
  EXPECT_EQ(h.perms("/p/m"), (Perms{{3, kRead}, {3, kBoth}}));
  // Dom0 creates with the parent's permissions unchanged.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/p/s/t", "v"));
  EXPECT_EQ(h.perms("/p/s"), (Perms{{0, kRead}, {3, kBoth}}));
  EXPECT_EQ(h.perms("/p/s/t"), (Perms{{0, kRead}, {3, kBoth}}));
  // A child inherits from its direct parent.
  h.make("/p/s", "", {{0, kNone}, {3, kWrite}});
  ASSERT_OK(h.xs.write(3, kNoTx, "/p/s/u", "v"));
  EXPECT_EQ(h.perms("/p/s/u"), (Perms{{3, kNone}, {3, kWrite}}));
  EXPECT_EQ(h.perms("/p"), (Perms{{0, kRead}, {3, kBoth}}));
}

TEST(XenstoreEngine, CreatingNeedsWriteOnNearestExistingAncestor) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.make("/p", "", {{0, kRead}});
  EXPECT_EQ(h.xs.write(3, kNoTx, "/p/x/y", "v").code(), EACCES);
  EXPECT_EQ(h.xs.mkdir(3, kNoTx, "/p/x").code(), EACCES);
  EXPECT_EQ(h.xs.node_count(), 2u);
  EXPECT_EQ(h.dir("/p"), Names{});
  // A writable node deeper down is enough, whatever its parents say.
  h.make("/p/x", "", {{0, kNone}, {3, kWrite}});
  EXPECT_OK(h.xs.write(3, kNoTx, "/p/x/y/z", "v"));
  EXPECT_EQ(h.read("/p/x/y/z"), "v");
}

TEST(XenstoreEngine, MissingNodesDoNotLeakExistence) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.make("/hidden/secret", "s", {{0, kNone}});
  h.make("/hidden", "", {{0, kNone}});
  h.make("/open", "", {{0, kRead}});
  // Below a node the domain cannot read, missing and present look alike.
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/hidden/secret")), EACCES);
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/hidden/nothing")), EACCES);
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/hidden/nothing/deeper")), EACCES);
  EXPECT_EQ(err(h.xs.directory(3, kNoTx, "/hidden/nothing")), EACCES);
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/open/nothing")), ENOENT);
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/open/nothing/deeper")), ENOENT);
  // The root (n0) is not readable by domains.
  EXPECT_EQ(err(h.xs.read(3, kNoTx, "/nothing")), EACCES);
  auto r = h.xs.read(3, kNoTx, "/hidden/secret");
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.error().message.find("/hidden/secret"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("domain 3"), std::string::npos) << r.error().message;
}

TEST(XenstoreEngine, SetPermissionsOnlyByOwnerOrDom0) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.xs.add_connection(4, 4);
  h.make("/n", "v", {{3, kNone}, {4, kBoth}});
  const Perms take = {{4, kBoth}};
  // Write access is not enough.
  EXPECT_EQ(h.xs.set_permissions(4, kNoTx, "/n", take).code(), EACCES);
  // The owner may change the access...
  const Perms readable = {{3, kRead}};
  EXPECT_OK(h.xs.set_permissions(3, kNoTx, "/n", readable));
  EXPECT_EQ(h.perms("/n"), readable);
  // ...but not give the node away.
  EXPECT_EQ(h.xs.set_permissions(3, kNoTx, "/n", take).code(), EPERM);
  EXPECT_EQ(h.perms("/n"), readable);
  // Dom0 may.
  EXPECT_OK(h.xs.set_permissions(kTools, kNoTx, "/n", take));
  EXPECT_EQ(h.perms("/n"), take);
  EXPECT_EQ(h.xs.set_permissions(3, kNoTx, "/n", readable).code(), EACCES);
  EXPECT_OK(h.xs.set_permissions(4, kNoTx, "/n", Perms{{4, kNone}, {3, kRead}}));
  // Bad lists.
  EXPECT_EQ(h.xs.set_permissions(kTools, kNoTx, "/n", Perms{}).code(), EINVAL);
  const Perms bad = {{0, static_cast<XsPermission::Access>(7)}};
  EXPECT_EQ(h.xs.set_permissions(kTools, kNoTx, "/n", bad).code(), EINVAL);
  EXPECT_EQ(h.xs.set_permissions(kTools, kNoTx, "/none", readable).code(), ENOENT);
  EXPECT_EQ(h.perms("/n"), (Perms{{4, kNone}, {3, kRead}}));
}

TEST(XenstoreEngine, RmNeedsWriteOnTheNode) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.xs.add_connection(4, 4);
  h.make("/n", "", {{3, kRead}});
  EXPECT_EQ(h.xs.rm(4, kNoTx, "/n").code(), EACCES);
  EXPECT_EQ(h.xs.rm(4, kNoTx, "/n/missing").code(), EACCES);
  EXPECT_OK(h.xs.rm(3, kNoTx, "/n/missing"));
  EXPECT_OK(h.xs.rm(3, kNoTx, "/n"));
  EXPECT_EQ(h.xs.node_count(), 1u);
}

// ---------------------------------------------------------------------------
// Transactions.

TEST(XenstoreEngine, TransactionIsolationAndCommit) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "old"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_NE(*t, kNoTx);
  EXPECT_EQ(h.xs.transaction_count(kTools), 1u);
  ASSERT_OK(h.xs.write(kTools, *t, "/a", "new"));
  ASSERT_OK(h.xs.write(kTools, *t, "/b/c", "x"));
  // Inside: its own writes.
  EXPECT_EQ(h.read("/a", kTools, *t), "new");
  EXPECT_EQ(h.read("/b/c", kTools, *t), "x");
  EXPECT_EQ(h.dir("/", kTools, *t), (Names{"a", "b"}));
  // Outside, on this and other connections: nothing yet.
  EXPECT_EQ(h.read("/a"), "old");
  EXPECT_EQ(h.read("/a", 2), "old");
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/b/c")), ENOENT);
  EXPECT_EQ(h.dir("/"), Names{"a"});
  EXPECT_EQ(h.xs.node_count(), 2u);
  auto t2 = h.xs.transaction_start(2);
  ASSERT_OK(t2);
  EXPECT_EQ(h.read("/a", 2, *t2), "old");
  ASSERT_OK(h.xs.transaction_end(2, *t2, true));

  ASSERT_OK(h.xs.transaction_end(kTools, *t, false));
  EXPECT_EQ(h.xs.transaction_count(kTools), 0u);
  EXPECT_EQ(h.read("/a"), "new");
  EXPECT_EQ(h.read("/b/c"), "x");
  EXPECT_EQ(h.dir("/"), (Names{"a", "b"}));
  EXPECT_EQ(h.xs.node_count(), 4u);
  // The id is gone.
  EXPECT_EQ(err(h.xs.read(kTools, *t, "/a")), ENOENT);
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), ENOENT);
}

TEST(XenstoreEngine, TransactionRmMkdirAndPermissions) {
  Harness h;
  h.make("/a/b", "v", {{0, kNone}});
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.rm(kTools, *t, "/a"));
  ASSERT_OK(h.xs.mkdir(kTools, *t, "/m"));
  ASSERT_OK(h.xs.set_permissions(kTools, *t, "/m", Perms{{7, kRead}}));
  EXPECT_EQ(err(h.xs.read(kTools, *t, "/a/b")), ENOENT);
  EXPECT_EQ(h.dir("/", kTools, *t), Names{"m"});
  EXPECT_EQ(h.xs.get_permissions(kTools, *t, "/m").value(), (Perms{{7, kRead}}));
  EXPECT_EQ(h.read("/a/b"), "v");
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/m")), ENOENT);
  ASSERT_OK(h.xs.transaction_end(kTools, *t, false));
  EXPECT_EQ(h.dir("/"), Names{"m"});
  EXPECT_EQ(h.perms("/m"), (Perms{{7, kRead}}));
  EXPECT_EQ(h.xs.node_count(), 2u);
}

TEST(XenstoreEngine, TransactionChecksPermissions) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.make("/ro", "v", {{0, kRead}});
  auto t = h.xs.transaction_start(3);
  ASSERT_OK(t);
  EXPECT_EQ(h.read("/ro", 3, *t), "v");
  EXPECT_EQ(h.xs.write(3, *t, "/ro", "x").code(), EACCES);
  EXPECT_EQ(h.xs.write(3, *t, "/ro/child", "x").code(), EACCES);
  EXPECT_OK(h.xs.transaction_end(3, *t, false));
  EXPECT_EQ(h.read("/ro"), "v");
  EXPECT_EQ(h.xs.node_count(), 2u);
}

TEST(XenstoreEngine, TransactionIdsAreUniqueAndNonZero) {
  Harness h;
  h.xs.add_connection(2, 2);
  std::set<xs_transaction_t> ids;
  for (int i = 0; i < 5; ++i) {
    for (ConnId c : {kTools, ConnId{2}}) {
      auto t = h.xs.transaction_start(c);
      ASSERT_OK(t);
      EXPECT_NE(*t, kNoTx);
      EXPECT_TRUE(ids.insert(*t).second) << *t;
    }
  }
  EXPECT_EQ(h.xs.transaction_count(kTools), 5u);
  EXPECT_EQ(h.xs.transaction_count(2), 5u);
}

TEST(XenstoreEngine, UnknownOrForeignTransactionIsEnoent) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(err(h.xs.read(2, *t, "/")), ENOENT);
  EXPECT_EQ(h.xs.write(2, *t, "/a", "v").code(), ENOENT);
  EXPECT_EQ(h.xs.transaction_end(2, *t, false).code(), ENOENT);
  EXPECT_EQ(h.xs.transaction_end(2, *t, true).code(), ENOENT);
  EXPECT_EQ(err(h.xs.read(kTools, 12345, "/")), ENOENT);
  EXPECT_EQ(h.xs.transaction_end(kTools, 12345, true).code(), ENOENT);
  EXPECT_EQ(h.xs.transaction_end(kTools, kNoTx, false).code(), ENOENT);
  // The owner's transaction is untouched.
  EXPECT_EQ(h.xs.transaction_count(kTools), 1u);
  EXPECT_OK(h.xs.transaction_end(kTools, *t, false));
}

TEST(XenstoreEngine, TransactionLimitPerConnection) {
  Harness h;
  h.xs.add_connection(2, 2);
  std::vector<xs_transaction_t> open;
  for (size_t i = 0; i < XenstoreEngine::kMaxTransactionsPerConn; ++i) {
    auto t = h.xs.transaction_start(kTools);
    ASSERT_OK(t);
    open.push_back(*t);
  }
  auto over = h.xs.transaction_start(kTools);
  EXPECT_EQ(err(over), ENOSPC);
  EXPECT_EQ(h.xs.transaction_count(kTools), XenstoreEngine::kMaxTransactionsPerConn);
  // Another connection has its own quota.
  EXPECT_OK(h.xs.transaction_start(2));
  // Ending one frees a slot.
  ASSERT_OK(h.xs.transaction_end(kTools, open[3], true));
  EXPECT_OK(h.xs.transaction_start(kTools));
}

TEST(XenstoreEngine, ConflictWriteWrite) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.write(kTools, *t, "/a", "tx"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "outside"));
  Status s = h.xs.transaction_end(kTools, *t, false);
  EXPECT_EQ(s.code(), EAGAIN);
  EXPECT_NE(s.message().find("/a"), std::string::npos) << s.message();
  EXPECT_EQ(h.read("/a"), "outside");
  // A failed commit ends the transaction.
  EXPECT_EQ(h.xs.transaction_count(kTools), 0u);
  EXPECT_EQ(err(h.xs.read(kTools, *t, "/a")), ENOENT);
}

TEST(XenstoreEngine, ConflictBetweenTwoTransactions) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/b", "0"));
  auto t1 = h.xs.transaction_start(kTools);
  auto t2 = h.xs.transaction_start(2);
  ASSERT_OK(t1);
  ASSERT_OK(t2);
  EXPECT_EQ(h.read("/a", kTools, *t1), "0");
  EXPECT_EQ(h.read("/b", 2, *t2), "0");
  ASSERT_OK(h.xs.write(kTools, *t1, "/b", "1"));
  ASSERT_OK(h.xs.write(2, *t2, "/a", "2"));
  EXPECT_OK(h.xs.transaction_end(kTools, *t1, false));
  EXPECT_EQ(h.xs.transaction_end(2, *t2, false).code(), EAGAIN);
  EXPECT_EQ(h.read("/a"), "0");
  EXPECT_EQ(h.read("/b"), "1");
}

TEST(XenstoreEngine, ConflictReadWrite) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.read("/a", kTools, *t), "0");
  ASSERT_OK(h.xs.write(kTools, *t, "/b", "derived"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "1"));
  EXPECT_EQ(h.read("/a", kTools, *t), "0");  // the view stays as first seen
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/b")), ENOENT);
}

TEST(XenstoreEngine, ConflictAbsentNodeCreated) {
  Harness h;
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(err(h.xs.read(kTools, *t, "/x")), ENOENT);
  ASSERT_OK(h.xs.write(kTools, *t, "/y", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/x", "appeared"));
  Status s = h.xs.transaction_end(kTools, *t, false);
  EXPECT_EQ(s.code(), EAGAIN);
  EXPECT_NE(s.message().find("conflicts: "), std::string::npos) << s.message();
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/y")), ENOENT);
}

TEST(XenstoreEngine, ConflictNodeRemovedUnderTransaction) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.write(kTools, *t, "/a/b/c", "1"));
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/a"));
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
  EXPECT_EQ(h.xs.node_count(), 1u);
  // And the other way round: the transaction removes, someone writes below.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b", "0"));
  t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.rm(kTools, *t, "/a"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b", "changed"));
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
  EXPECT_EQ(h.read("/a/b"), "changed");
}

TEST(XenstoreEngine, ConflictOnListedDirectory) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/w", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.dir("/d", kTools, *t), Names{"w"});
  ASSERT_OK(h.xs.write(kTools, *t, "/count", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/d/new", "x"));
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
  // Two transactions adding different children of one node conflict too:
  // both change the parent's list of children (as in xenstored).
  auto t1 = h.xs.transaction_start(kTools);
  auto t2 = h.xs.transaction_start(2);
  ASSERT_OK(t1);
  ASSERT_OK(t2);
  ASSERT_OK(h.xs.write(kTools, *t1, "/d/x", "1"));
  ASSERT_OK(h.xs.write(2, *t2, "/d/y", "2"));
  EXPECT_OK(h.xs.transaction_end(kTools, *t1, false));
  EXPECT_EQ(h.xs.transaction_end(2, *t2, false).code(), EAGAIN);
  EXPECT_EQ(h.dir("/d"), (Names{"new", "w", "x"}));
}

TEST(XenstoreEngine, ConflictOnPermissionChange) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.read("/a", kTools, *t), "0");
  ASSERT_OK(h.xs.write(kTools, *t, "/b", "1"));
  ASSERT_OK(h.xs.set_permissions(kTools, kNoTx, "/a", Perms{{0, kRead}}));
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
}

TEST(XenstoreEngine, NoConflictWithUnrelatedChanges) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/z/w", "0"));
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.read("/a", kTools, *t), "0");
  EXPECT_EQ(h.dir("/z", kTools, *t), Names{"w"});
  ASSERT_OK(h.xs.write(kTools, *t, "/a", "1"));
  // Neither a new top-level node elsewhere... (the root was not accessed)
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/c", "x"));
  // ...nor a changed value of an existing child of a listed node.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/z/w", "1"));
  EXPECT_OK(h.xs.transaction_end(kTools, *t, false));
  EXPECT_EQ(h.read("/a"), "1");
}

TEST(XenstoreEngine, AbortDiscardsEverything) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  ASSERT_OK(h.xs.watch(kTools, "/", "w"));
  h.take();
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.write(kTools, *t, "/a", "1"));
  ASSERT_OK(h.xs.write(kTools, *t, "/b/c", "1"));
  ASSERT_OK(h.xs.rm(kTools, *t, "/a"));
  ASSERT_OK(h.xs.transaction_end(kTools, *t, true));
  EXPECT_EQ(h.read("/a"), "0");
  EXPECT_EQ(h.xs.node_count(), 2u);
  EXPECT_EQ(h.xs.transaction_count(kTools), 0u);
  EXPECT_EQ(h.take(), Events{});
}

TEST(XenstoreEngine, RetryLoopSucceedsAfterConflict) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/counter", "0"));
  int attempts = 0;
  bool done = false;
  while (!done && attempts < 5) {
    ++attempts;
    auto t = h.xs.transaction_start(kTools);
    ASSERT_OK(t);
    auto v = h.xs.read(kTools, *t, "/counter");
    ASSERT_OK(v);
    // A racing writer on another connection, during the first attempt only.
    if (attempts == 1) ASSERT_OK(h.xs.write(2, kNoTx, "/counter", "10"));
    ASSERT_OK(h.xs.write(kTools, *t, "/counter", std::to_string(std::stoi(*v) + 1)));
    Status s = h.xs.transaction_end(kTools, *t, false);
    if (s) {
      done = true;
    } else {
      ASSERT_EQ(s.code(), EAGAIN) << s.message();
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(h.read("/counter"), "11");
}

// ---------------------------------------------------------------------------
// Watches.

TEST(XenstoreEngine, WatchFiresOnceWhenSet) {
  Harness h;
  ASSERT_OK(h.xs.watch(kTools, "/not/there", "tok"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/not/there", "tok"}}));
  EXPECT_EQ(h.xs.watch_count(kTools), 1u);
  ASSERT_OK(h.xs.watch(kTools, "/not/there", ""));  // empty tokens are fine
  EXPECT_EQ(h.take(), (Events{{kTools, "/not/there", ""}}));
}

TEST(XenstoreEngine, WatchFiresForNodeAndSubtree) {
  Harness h;
  ASSERT_OK(h.xs.watch(kTools, "/a", "t"));
  h.take();
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b/c", "1"));  // one event, parents included
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/ab", "1"));     // not below /a
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/x", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "1"));
  ASSERT_OK(h.xs.mkdir(kTools, kNoTx, "/a/b"));  // exists: no change
  ASSERT_OK(h.xs.mkdir(kTools, kNoTx, "/a/n"));
  ASSERT_OK(h.xs.set_permissions(kTools, kNoTx, "/a/b", Perms{{0, kRead}}));
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/a/nothing"));  // nothing removed
  EXPECT_EQ(h.take(), (Events{{kTools, "/a/b/c", "t"},
                              {kTools, "/a", "t"},
                              {kTools, "/a/n", "t"},
                              {kTools, "/a/b", "t"}}));
}

TEST(XenstoreEngine, RootWatchSeesEveryChange) {
  Harness h;
  ASSERT_OK(h.xs.watch(kTools, "/", "r"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/", "r"}}));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/x/y", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/", "root value"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/x/y", "r"}, {kTools, "/", "r"}}));
}

TEST(XenstoreEngine, RemovalFiresForNodesBelowAndAbove) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b/c", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/b/d", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a/e", "1"));
  ASSERT_OK(h.xs.watch(2, "/a/b/c", "t3"));
  ASSERT_OK(h.xs.watch(kTools, "/a", "t1"));
  ASSERT_OK(h.xs.watch(kTools, "/a/b", "t2"));
  ASSERT_OK(h.xs.watch(kTools, "/a/b/zzz", "t4"));  // never existed
  ASSERT_OK(h.xs.watch(kTools, "/", "t5"));
  ASSERT_OK(h.xs.watch(kTools, "/a/e", "t6"));
  h.take();
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/a"));
  // Children first (sorted), each removed node firing the watches set on it;
  // then the removed node itself for the watches on it and above it.
  EXPECT_EQ(h.take(), (Events{{2, "/a/b/c", "t3"},
                              {kTools, "/a/b", "t2"},
                              {kTools, "/a/e", "t6"},
                              {kTools, "/a", "t1"},
                              {kTools, "/a", "t5"}}));
  // A leaf.
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/q", "1"));
  ASSERT_OK(h.xs.watch(2, "/q", "q"));
  h.take();
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/q"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/q", "t5"}, {2, "/q", "q"}}));
}

TEST(XenstoreEngine, RelativeWatchesGetRelativePaths) {
  Harness h;
  h.xs.introduce_domain(5);
  h.xs.add_connection(5, 5);
  ASSERT_OK(h.xs.watch(5, "data", "rel"));
  ASSERT_OK(h.xs.watch(5, "/local/domain/5/data", "abs"));
  EXPECT_EQ(h.take(), (Events{{5, "data", "rel"}, {5, "/local/domain/5/data", "abs"}}));
  ASSERT_OK(h.xs.write(5, kNoTx, "data/x", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/local/domain/5/data", "2"));
  ASSERT_OK(h.xs.rm(5, kNoTx, "data/x"));
  EXPECT_EQ(h.take(), (Events{{5, "data/x", "rel"},
                              {5, "/local/domain/5/data/x", "abs"},
                              {5, "data", "rel"},
                              {5, "/local/domain/5/data", "abs"},
                              {5, "data/x", "rel"},
                              {5, "/local/domain/5/data/x", "abs"}}));
  // Dom0's relative watches are relative to /local/domain/0.
  ASSERT_OK(h.xs.watch(kTools, "mine", "m"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/local/domain/0/mine/x", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "mine", "m"}, {kTools, "mine/x", "m"}}));
}

TEST(XenstoreEngine, EventsGoOnlyToWatchersAllowedToRead) {
  Harness h;
  h.xs.add_connection(3, 3);
  h.xs.add_connection(4, 4);
  h.make("/pub", "", {{0, kRead}});
  h.make("/priv", "", {{0, kNone}, {3, kRead}});
  h.make("/closed", "", {{0, kNone}});
  for (ConnId c : {kTools, ConnId{3}, ConnId{4}})
    ASSERT_OK(h.xs.watch(c, "/", "w"));
  h.take();

  ASSERT_OK(h.xs.write(kTools, kNoTx, "/priv/x", "1"));  // inherits /priv's permissions
  EXPECT_EQ(h.take(), (Events{{kTools, "/priv/x", "w"}, {3, "/priv/x", "w"}}));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/pub/y", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/pub/y", "w"}, {3, "/pub/y", "w"}, {4, "/pub/y", "w"}}));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/closed", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/closed", "w"}}));

  // Removed nodes: the permissions they had.
  ASSERT_OK(h.xs.rm(kTools, kNoTx, "/priv"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/priv", "w"}, {3, "/priv", "w"}}));

  // Losing access: told once more (the old permissions), then no more.
  ASSERT_OK(h.xs.set_permissions(kTools, kNoTx, "/pub", Perms{{0, kNone}}));
  EXPECT_EQ(h.take(), (Events{{kTools, "/pub", "w"}, {3, "/pub", "w"}, {4, "/pub", "w"}}));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/pub", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/pub", "w"}}));
  // Gaining access: told about the change.
  ASSERT_OK(h.xs.set_permissions(kTools, kNoTx, "/closed", Perms{{0, kNone}, {4, kRead}}));
  EXPECT_EQ(h.take(), (Events{{kTools, "/closed", "w"}, {4, "/closed", "w"}}));
}

TEST(XenstoreEngine, TransactionEventsFireAtCommitOnly) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/r/s/t", "1"));
  ASSERT_OK(h.xs.watch(kTools, "/", "root"));
  ASSERT_OK(h.xs.watch(kTools, "/r/s/t", "deep"));
  h.take();
  auto t = h.xs.transaction_start(2);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.write(2, *t, "/a/b", "1"));
  ASSERT_OK(h.xs.write(2, *t, "/c", "2"));
  ASSERT_OK(h.xs.write(2, *t, "/a/b", "3"));  // the same node: one event
  ASSERT_OK(h.xs.rm(2, *t, "/r"));
  ASSERT_OK(h.xs.write(2, *t, "/tmp", "x"));  // created and removed: nothing to tell
  ASSERT_OK(h.xs.rm(2, *t, "/tmp"));
  EXPECT_EQ(h.take(), Events{});
  ASSERT_OK(h.xs.transaction_end(2, *t, false));
  EXPECT_EQ(h.take(), (Events{{kTools, "/a/b", "root"},
                              {kTools, "/c", "root"},
                              {kTools, "/r/s/t", "deep"},
                              {kTools, "/r", "root"}}));
  EXPECT_EQ(h.read("/a/b"), "3");
}

TEST(XenstoreEngine, NoEventsFromAbortedOrFailedTransactions) {
  Harness h;
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "0"));
  ASSERT_OK(h.xs.watch(kTools, "/", "w"));
  h.take();
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.write(kTools, *t, "/b", "1"));
  ASSERT_OK(h.xs.transaction_end(kTools, *t, true));
  EXPECT_EQ(h.take(), Events{});
  t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.read("/a", kTools, *t), "0");
  ASSERT_OK(h.xs.write(kTools, *t, "/b", "1"));
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/a", "w"}}));
  EXPECT_EQ(h.xs.transaction_end(kTools, *t, false).code(), EAGAIN);
  EXPECT_EQ(h.take(), Events{});
}

TEST(XenstoreEngine, UnwatchStopsEvents) {
  Harness h;
  h.xs.introduce_domain(5);
  h.xs.add_connection(5, 5);
  ASSERT_OK(h.xs.watch(kTools, "/a", "t"));
  ASSERT_OK(h.xs.watch(kTools, "/a", "u"));
  h.take();
  ASSERT_OK(h.xs.unwatch(kTools, "/a", "t"));
  EXPECT_EQ(h.xs.watch_count(kTools), 1u);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "1"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/a", "u"}}));
  EXPECT_EQ(h.xs.unwatch(kTools, "/a", "t").code(), ENOENT);
  EXPECT_EQ(h.xs.unwatch(kTools, "/b", "u").code(), ENOENT);
  // Watches are compared by canonical path: relative and absolute match.
  ASSERT_OK(h.xs.watch(5, "/local/domain/5/data", "d"));
  EXPECT_OK(h.xs.unwatch(5, "data", "d"));
  EXPECT_EQ(h.xs.watch_count(5), 0u);
}

TEST(XenstoreEngine, DuplicateWatchIsEexist) {
  Harness h;
  h.xs.introduce_domain(5);
  h.xs.add_connection(5, 5);
  ASSERT_OK(h.xs.watch(kTools, "/a", "t"));
  h.take();
  EXPECT_EQ(h.xs.watch(kTools, "/a", "t").code(), EEXIST);
  EXPECT_EQ(h.take(), Events{});  // no second initial event
  EXPECT_OK(h.xs.watch(kTools, "/a", "other"));
  EXPECT_OK(h.xs.watch(kTools, "/b", "t"));
  EXPECT_EQ(h.xs.watch_count(kTools), 3u);
  ASSERT_OK(h.xs.watch(5, "data", "d"));
  EXPECT_EQ(h.xs.watch(5, "/local/domain/5/data", "d").code(), EEXIST);
  EXPECT_OK(h.xs.watch(5, "/a", "t"));  // another connection
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "1"));
  h.take();
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/a", "2"));
  EXPECT_EQ(h.take(), (Events{{kTools, "/a", "t"}, {kTools, "/a", "other"}}));  // dom5 may not read
}

TEST(XenstoreEngine, WatchLimitPerConnection) {
  Harness h;
  for (size_t i = 0; i < XenstoreEngine::kMaxWatchesPerConn; ++i) {
    ASSERT_OK(h.xs.watch(kTools, "/w" + std::to_string(i), "t"));
  }
  EXPECT_EQ(h.xs.watch(kTools, "/over", "t").code(), E2BIG);
  EXPECT_EQ(h.xs.watch_count(kTools), XenstoreEngine::kMaxWatchesPerConn);
  ASSERT_OK(h.xs.unwatch(kTools, "/w0", "t"));
  EXPECT_OK(h.xs.watch(kTools, "/over", "t"));
}

TEST(XenstoreEngine, WatchTokenValidation) {
  Harness h;
  EXPECT_EQ(h.xs.watch(kTools, "/a", "t\0x"s).code(), EINVAL);
  EXPECT_EQ(h.xs.watch(kTools, "/a", std::string(XenstoreEngine::kMaxValueBytes + 1, 't')).code(),
            E2BIG);
  EXPECT_EQ(h.xs.watch_count(kTools), 0u);
  EXPECT_EQ(h.take(), Events{});
}

TEST(XenstoreEngine, IntroduceDomainCreatesItsHome) {
  Harness h;
  h.xs.add_connection(5, 5);
  h.xs.add_connection(6, 6);
  h.xs.introduce_domain(5);
  const Perms readable = {{0, kNone}, {5, kRead}};
  EXPECT_EQ(h.dir("/local/domain"), Names{"5"});
  EXPECT_EQ(h.dir("/local/domain/5"), (Names{"data", "device", "domid"}));
  EXPECT_EQ(h.perms("/local/domain/5"), readable);
  EXPECT_EQ(h.perms("/local/domain/5/domid"), readable);
  EXPECT_EQ(h.perms("/local/domain/5/device"), readable);
  EXPECT_EQ(h.perms("/local/domain/5/data"), (Perms{{5, kNone}}));
  EXPECT_EQ(h.read("/local/domain/5/domid"), "5");
  EXPECT_EQ(h.xs.node_count(), 7u);
  // What the domain itself may do there.
  EXPECT_EQ(h.read("domid", 5), "5");
  EXPECT_EQ(h.dir("/local/domain/5", 5), (Names{"data", "device", "domid"}));
  EXPECT_EQ(h.xs.write(5, kNoTx, "domid", "9").code(), EACCES);
  EXPECT_EQ(h.xs.write(5, kNoTx, "device/vif", "x").code(), EACCES);
  EXPECT_EQ(h.xs.write(5, kNoTx, "other", "x").code(), EACCES);
  EXPECT_OK(h.xs.write(5, kNoTx, "data/x", "v"));
  EXPECT_EQ(h.perms("/local/domain/5/data/x"), (Perms{{5, kNone}}));
  // Another domain sees nothing.
  EXPECT_EQ(err(h.xs.read(6, kNoTx, "/local/domain/5/domid")), EACCES);
  EXPECT_EQ(err(h.xs.read(6, kNoTx, "/local/domain/5/data/x")), EACCES);
}

TEST(XenstoreEngine, SpecialWatches) {
  Harness h;
  h.xs.add_connection(7, 7);
  ASSERT_OK(h.xs.watch(kTools, "@introduceDomain", "i"));
  ASSERT_OK(h.xs.watch(kTools, "@releaseDomain", "r"));
  ASSERT_OK(h.xs.watch(kTools, "/", "root"));
  ASSERT_OK(h.xs.watch(7, "@releaseDomain", "r7"));
  ASSERT_OK(h.xs.watch(7, "/", "root7"));
  EXPECT_EQ(h.take(), (Events{{kTools, "@introduceDomain", "i"},
                              {kTools, "@releaseDomain", "r"},
                              {kTools, "/", "root"},
                              {7, "@releaseDomain", "r7"},
                              {7, "/", "root7"}}));
  h.xs.introduce_domain(5);
  EXPECT_EQ(h.take(), (Events{{kTools, "/local/domain/5", "root"},
                              {kTools, "/local/domain/5/domid", "root"},
                              {kTools, "/local/domain/5/data", "root"},
                              {kTools, "/local/domain/5/device", "root"},
                              {kTools, "@introduceDomain", "i"}}));
  h.xs.add_connection(5, 5);
  ASSERT_OK(h.xs.watch(5, "data", "d"));
  ASSERT_OK(h.xs.watch(5, "device/vif", "v"));  // below, never created
  h.take();
  h.xs.release_domain(5);
  EXPECT_EQ(h.take(), (Events{{5, "data", "d"},
                              {kTools, "/local/domain/5", "root"},
                              {kTools, "@releaseDomain", "r"},
                              {7, "@releaseDomain", "r7"}}));
  EXPECT_EQ(h.xs.node_count(), 3u);
  EXPECT_EQ(h.dir("/local/domain"), Names{});
  // Releasing an unknown domain only fires @releaseDomain.
  h.xs.release_domain(9);
  EXPECT_EQ(h.take(), (Events{{kTools, "@releaseDomain", "r"}, {7, "@releaseDomain", "r7"}}));
  // Unwatching a special watch.
  ASSERT_OK(h.xs.unwatch(7, "@releaseDomain", "r7"));
  h.xs.release_domain(9);
  EXPECT_EQ(h.take(), (Events{{kTools, "@releaseDomain", "r"}}));
}

TEST(XenstoreEngine, IntroduceAgainRepairsOnlyWhatDiffers) {
  Harness h;
  h.xs.introduce_domain(5);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/local/domain/5/data/keep", "v"));
  ASSERT_OK(h.xs.set_permissions(kTools, kNoTx, "/local/domain/5/domid", Perms{{0, kNone}}));
  ASSERT_OK(h.xs.watch(kTools, "/", "root"));
  ASSERT_OK(h.xs.watch(kTools, "@introduceDomain", "i"));
  h.take();
  h.xs.introduce_domain(5);
  // Only what differs is changed (and reported).
  EXPECT_EQ(h.take(),
            (Events{{kTools, "/local/domain/5/domid", "root"}, {kTools, "@introduceDomain", "i"}}));
  EXPECT_EQ(h.perms("/local/domain/5/domid"), (Perms{{0, kNone}, {5, kRead}}));
  EXPECT_EQ(h.read("/local/domain/5/data/keep"), "v");
  EXPECT_EQ(h.xs.node_count(), 8u);
  // Nothing differs now: a transaction that read the home does not conflict.
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  EXPECT_EQ(h.dir("/local/domain/5", kTools, *t), (Names{"data", "device", "domid"}));
  EXPECT_EQ(h.read("/local/domain/5/domid", kTools, *t), "5");
  ASSERT_OK(h.xs.write(kTools, *t, "/local/domain/5/data/keep", "w"));
  h.xs.introduce_domain(5);
  EXPECT_OK(h.xs.transaction_end(kTools, *t, false));
  EXPECT_EQ(h.take(), (Events{{kTools, "@introduceDomain", "i"},
                              {kTools, "/local/domain/5/data/keep", "root"}}));
}

TEST(XenstoreEngine, RemoveConnectionDropsWatchesAndTransactions) {
  Harness h;
  h.xs.add_connection(2, kDom0);
  ASSERT_OK(h.xs.watch(2, "/", "a"));
  ASSERT_OK(h.xs.watch(2, "@releaseDomain", "b"));
  auto t1 = h.xs.transaction_start(2);
  auto t2 = h.xs.transaction_start(2);
  ASSERT_OK(t1);
  ASSERT_OK(t2);
  ASSERT_OK(h.xs.write(2, *t1, "/pending", "x"));
  EXPECT_EQ(h.xs.watch_count(2), 2u);
  EXPECT_EQ(h.xs.transaction_count(2), 2u);
  h.take();
  h.xs.remove_connection(2);
  EXPECT_EQ(h.xs.watch_count(2), 0u);
  EXPECT_EQ(h.xs.transaction_count(2), 0u);
  EXPECT_EQ(err(h.xs.read(2, kNoTx, "/")), EINVAL);
  EXPECT_EQ(h.xs.transaction_end(kTools, *t1, false).code(), ENOENT);
  ASSERT_OK(h.xs.write(kTools, kNoTx, "/x", "1"));
  h.xs.release_domain(3);
  EXPECT_EQ(h.take(), Events{});
  EXPECT_EQ(err(h.xs.read(kTools, kNoTx, "/pending")), ENOENT);
  // The id can be used again, afresh.
  h.xs.add_connection(2, 4);
  EXPECT_EQ(h.xs.watch_count(2), 0u);
  EXPECT_EQ(h.xs.transaction_count(2), 0u);
  EXPECT_EQ(err(h.xs.read(2, kNoTx, "/x")), EACCES);  // now acting for dom4
}

TEST(XenstoreEngine, DeepestTreeIsRemovedInOneGo) {
  Harness h;
  // The deepest possible path: 1536 levels of "/a".
  std::string deepest;
  while (deepest.size() + 2 <= XenstoreEngine::kMaxPathBytes)
    deepest += "/a";
  ASSERT_OK(h.xs.write(kTools, kNoTx, deepest, "bottom"));
  EXPECT_EQ(h.xs.node_count(), 1 + deepest.size() / 2);
  ASSERT_OK(h.xs.watch(kTools, deepest, "bottom"));
  ASSERT_OK(h.xs.watch(kTools, "/", "top"));
  h.take();
  auto t = h.xs.transaction_start(kTools);
  ASSERT_OK(t);
  ASSERT_OK(h.xs.rm(kTools, *t, "/a"));
  ASSERT_OK(h.xs.transaction_end(kTools, *t, false));
  EXPECT_EQ(h.xs.node_count(), 1u);
  EXPECT_EQ(h.take(), (Events{{kTools, deepest, "bottom"}, {kTools, "/a", "top"}}));
}

// ---------------------------------------------------------------------------
// Robustness: random operations never crash and keep the tree consistent.

void check_tree(Harness& h, const std::string& path, size_t* count) {
  ++*count;
  auto kids = h.xs.directory(kTools, kNoTx, path);
  ASSERT_OK(kids);
  ASSERT_TRUE(std::is_sorted(kids->begin(), kids->end()));
  for (const std::string& k : *kids) {
    std::string child = path == "/" ? "/" + k : path + "/" + k;
    ASSERT_OK(h.xs.read(kTools, kNoTx, child));
    auto perms = h.xs.get_permissions(kTools, kNoTx, child);
    ASSERT_OK(perms);
    ASSERT_FALSE(perms->empty());
    check_tree(h, child, count);
  }
}

TEST(XenstoreEngine, RandomOperationsKeepTheTreeConsistent) {
  Harness h;
  const std::vector<domid_t> doms = {0, 3, 4};
  for (ConnId c = 0; c < doms.size(); ++c)
    h.xs.add_connection(10 + c, doms[c]);
  h.xs.introduce_domain(3);
  h.xs.introduce_domain(4);
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> parts = {"a", "b", "c", "data", "x@y"};
  auto random_path = [&]() -> std::string {
    switch (pick(12)) {
      case 0:
        return "";
      case 1:
        return "/a//b";
      case 2:
        return "/a\0b"s;
      case 3:
        return "@introduceDomain";
      case 4:
        return "/";
      default:
        break;
    }
    std::string p = pick(3) == 0 ? "data" : "";
    size_t depth = 1 + pick(4);
    for (size_t i = 0; i < depth; ++i) {
      if (!p.empty() || pick(3) != 0) p += "/";
      p += parts[pick(parts.size())];
    }
    if (p[0] != '/' && pick(2) == 0) p = "/" + p;
    return p;
  };
  std::vector<std::pair<ConnId, xs_transaction_t>> open;
  for (int i = 0; i < 20000; ++i) {
    ConnId c = 10 + static_cast<ConnId>(pick(doms.size()));
    xs_transaction_t t = kNoTx;
    if (!open.empty() && pick(2) == 0) {
      auto& o = open[pick(open.size())];
      c = o.first;
      t = o.second;
    }
    const std::string path = random_path();
    switch (pick(12)) {
      case 0:
        (void)h.xs.read(c, t, path);
        break;
      case 1:
      case 2:
        (void)h.xs.write(c, t, path, pick(2) ? "v\0"s : std::string(pick(50), 'z'));
        break;
      case 3:
        (void)h.xs.mkdir(c, t, path);
        break;
      case 4:
        (void)h.xs.rm(c, t, path);
        break;
      case 5:
        (void)h.xs.directory(c, t, path);
        break;
      case 6: {
        Perms p = {{doms[pick(doms.size())], static_cast<XsPermission::Access>(pick(4))}};
        if (pick(2)) p.push_back({doms[pick(doms.size())], XsPermission::kRead});
        (void)h.xs.set_permissions(c, t, path, p);
        break;
      }
      case 7: {
        auto nt = h.xs.transaction_start(c);
        if (nt) open.emplace_back(c, *nt);
        break;
      }
      case 8:
        if (!open.empty()) {
          size_t k = pick(open.size());
          (void)h.xs.transaction_end(open[k].first, open[k].second, pick(3) == 0);
          open.erase(open.begin() + static_cast<long>(k));
        }
        break;
      case 9:
        (void)h.xs.watch(c, path, std::to_string(pick(3)));
        break;
      case 10:
        (void)h.xs.unwatch(c, path, std::to_string(pick(3)));
        break;
      case 11:
        if (pick(20) == 0) {
          domid_t d = doms[1 + pick(2)];
          if (pick(2)) {
            h.xs.release_domain(d);
          } else {
            h.xs.introduce_domain(d);
          }
        }
        break;
    }
  }
  for (auto& [c, t] : open)
    (void)h.xs.transaction_end(c, t, false);
  size_t count = 0;
  check_tree(h, "/", &count);
  EXPECT_EQ(count, h.xs.node_count());
  EXPECT_GT(count, 10u);
  EXPECT_FALSE(h.events.empty());
}

}  // namespace
}  // namespace xpv::sim
