// SPDX-License-Identifier: MIT
// The simulated hypervisor's xenstore engine. The rules follow xenstored
// (tools/xenstored/{core,transaction,watch}.c and docs/misc/xenstore.txt);
// each rule is noted where it is applied. Choices where the brief allowed
// several answers, all as xenstored does:
//   - transactions read through: the first access to a node copies it into
//     the transaction (or records its absence); the commit fails with EAGAIN
//     when any such node has a different generation (or presence) by then;
//   - a missing node is ENOENT when the nearest existing ancestor grants the
//     access asked for, else EACCES; an existing node without access, EACCES;
//   - too many open transactions: ENOSPC; too many watches: E2BIG; an unknown
//     or foreign transaction id: ENOENT; an unknown connection: EINVAL.
// Deliberate differences:
//   - too long paths fail with E2BIG (xenstored: EINVAL), to tell the two apart;
//   - rm of "/" is EINVAL for every caller (xenstored checks permissions first,
//     so an unprivileged domain gets EACCES);
//   - a watch event is sent to watchers that may read the node before or after
//     the change; xenstored also sends it when only the node's parent is
//     readable;
//   - the special nodes "@introduceDomain"/"@releaseDomain" have no
//     permissions here: every connection watching them gets their events;
//   - quotas (transactions, watches) apply to dom0 as well.

#include "sim/xenstore_engine.h"

#include <optional>
#include <tuple>
#include <utility>

namespace xpv::sim {
namespace {

using Perms = std::vector<XsPermission>;

constexpr std::string_view kIntroduceDomain = "@introduceDomain";
constexpr std::string_view kReleaseDomain = "@releaseDomain";

struct Node {
  std::string value;  // bytes, may contain NULs
  Perms perms;        // never empty
  std::set<std::string> children;
  // Set from the engine-wide counter on every change (like xenstored's
  // generation count): a transaction compares it at commit.
  uint64_t generation = 0;
};

// What one domain may do with a node.
struct Rights {
  bool read = false;
  bool write = false;
  bool owner = false;
};

// xenstored's perm_for_conn: dom0 and the owner (first entry) get everything;
// otherwise the first later entry naming the domain decides; otherwise the
// first entry's access is the default for every domain.
Rights rights_for(domid_t domid, const Perms& perms) {
  if (domid == kDom0) return {true, true, true};
  if (perms.empty()) return {};
  if (perms[0].domid == domid) return {true, true, true};
  unsigned access = perms[0].access;
  for (size_t i = 1; i < perms.size(); ++i) {
    if (perms[i].domid == domid) {
      access = perms[i].access;
      break;
    }
  }
  return {(access & XsPermission::kRead) != 0, (access & XsPermission::kWrite) != 0, false};
}

// The access an operation needs.
enum class Need { kRead, kWrite, kOwner };

bool allows(const Rights& r, Need need) {
  switch (need) {
    case Need::kRead:
      return r.read;
    case Need::kWrite:
      return r.write;
    case Need::kOwner:
      return r.write && r.owner;
  }
  return false;
}

const char* need_name(Need need) {
  switch (need) {
    case Need::kRead:
      return "read";
    case Need::kWrite:
      return "write";
    case Need::kOwner:
      return "change the permissions of";
  }
  return "access";
}

// A path or token made safe for an error message: non-printable bytes are
// escaped and long strings shortened.
std::string printable(std::string_view s) {
  constexpr size_t kMax = 96;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      out += format("\\x%02x", ch);
    }
  }
  if (s.size() > kMax) out += format("...(%zu bytes)", s.size());
  return out;
}

std::string home_of(domid_t d) {
  return "/local/domain/" + std::to_string(d);
}

// Both take canonical paths other than "/".
std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return "/";
  return path.substr(0, slash);
}
std::string base_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

std::string child_of(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

bool valid_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '-' || ch == '/' || ch == '_' || ch == '@';
}

// xenstored's is_child: does a change of `name` concern a watch on
// `watched`? Exact matching is used for the nodes below a removed node and for
// the special events.
bool watch_matches(const std::string& watched, const std::string& name, bool exact) {
  if (exact) return name == watched;
  if (watched == "/") return !name.empty() && name[0] == '/';
  return name.size() >= watched.size() && name.compare(0, watched.size(), watched) == 0 &&
         (name.size() == watched.size() || name[watched.size()] == '/');
}

}  // namespace

struct XenstoreEngine::Impl {
  struct Watch {
    std::string node;  // canonical path or special name
    std::string token;
    size_t prefix_len = 0;  // stripped from event paths of relative watches
  };
  struct Conn {
    domid_t domid = 0;
    std::vector<Watch> watches;  // in registration order
  };
  // A node as a transaction first saw it, and its private view of it.
  struct TxEntry {
    bool existed = false;
    uint64_t generation = 0;
    Perms original_perms;
    std::optional<Node> view;  // nullopt: absent in the transaction's view
    bool modified = false;
  };
  struct PendingEvent {
    std::string path;
    bool exact = false;
  };
  struct Tx {
    xs_transaction_t id = 0;
    ConnId conn = 0;
    std::map<std::string, TxEntry> entries;
    std::vector<PendingEvent> events;  // fired at commit, in order
    std::map<std::string, size_t> event_index;
  };
  // Who is acting, and in which transaction (nullptr: the committed tree).
  struct Ctx {
    domid_t domid = 0;
    Tx* tx = nullptr;
    const char* op = "";
  };

  WatchSink sink;
  std::map<std::string, Node> nodes;
  std::map<ConnId, Conn> conns;
  std::map<xs_transaction_t, Tx> txs;
  uint64_t generation = 0;
  xs_transaction_t next_tx = 1;

  explicit Impl(WatchSink s) : sink(std::move(s)) {
    // The root exists from the start, owned by dom0, no access for others.
    Node root;
    root.perms = {XsPermission{kDom0, XsPermission::kNone}};
    root.generation = ++generation;
    nodes.emplace("/", std::move(root));
  }

  static Error error(int code, const Ctx& ctx, std::string_view path, const std::string& what) {
    return make_error(code,
                      format("xenstore %s %s: %s", ctx.op, printable(path).c_str(), what.c_str()));
  }

  // ---- connections and transactions --------------------------------------

  Result<Ctx> context(ConnId c, xs_transaction_t t, const char* op) {
    auto it = conns.find(c);
    if (it == conns.end()) {
      return make_error(EINVAL, format("xenstore %s: unknown connection %u", op, c));
    }
    Ctx ctx{it->second.domid, nullptr, op};
    if (t != kXsNoTransaction) {
      auto tit = txs.find(t);
      // xenstored answers ENOENT for a transaction the connection does not have.
      if (tit == txs.end() || tit->second.conn != c) {
        return make_error(ENOENT,
                          format("xenstore %s: no transaction %u open on connection %u", op, t, c));
      }
      ctx.tx = &tit->second;
    }
    return ctx;
  }

  size_t tx_count(ConnId c) const {
    size_t n = 0;
    for (const auto& [id, tx] : txs)
      n += tx.conn == c ? 1 : 0;
    return n;
  }

  void drop_transactions(ConnId c) {
    for (auto it = txs.begin(); it != txs.end();) {
      it = it->second.conn == c ? txs.erase(it) : std::next(it);
    }
  }

  // ---- paths ---------------------------------------------------------------

  // xenstored's canonicalize: allowed characters are alphanumerics and
  // "-/_@"; relative paths are below the domain's home /local/domain/<domid>;
  // no trailing '/' (except "/" itself) and no empty component ("//").
  // "@..." names are the special watches, only valid for watch/unwatch.
  Result<std::string> canonical(const Ctx& ctx, std::string_view path, bool allow_special,
                                bool* relative = nullptr) {
    if (relative) *relative = false;
    if (path.empty()) return error(EINVAL, ctx, path, "empty path");
    if (path.size() > kMaxPathBytes) {
      return error(E2BIG, ctx, path,
                   format("path is %zu bytes, the limit is %zu", path.size(), kMaxPathBytes));
    }
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '\0') {
        return error(EINVAL, ctx, path, format("path contains a NUL byte at offset %zu", i));
      }
      if (!valid_char(path[i])) {
        return error(EINVAL, ctx, path,
                     format("invalid character '%s' at offset %zu (allowed: letters, digits, "
                            "'-', '/', '_', '@')",
                            printable(path.substr(i, 1)).c_str(), i));
      }
    }
    if (path[0] == '@') {
      if (!allow_special) {
        return error(EINVAL, ctx, path, "special names are only valid for watch and unwatch");
      }
      if (path != kIntroduceDomain && path != kReleaseDomain) {
        return error(EINVAL, ctx, path,
                     "unknown special name (only @introduceDomain and @releaseDomain exist)");
      }
      return std::string(path);
    }
    std::string name;
    if (path[0] == '/') {
      name = path;
    } else {
      name = home_of(ctx.domid) + "/" + std::string(path);
      if (relative) *relative = true;
    }
    if (name.size() > 1 && name.back() == '/') {
      return error(EINVAL, ctx, path, "path ends with '/'");
    }
    if (name.find("//") != std::string::npos) {
      return error(EINVAL, ctx, path, "path has an empty component (\"//\")");
    }
    if (name.size() > kMaxPathBytes) {
      return error(E2BIG, ctx, name,
                   format("path is %zu bytes, the limit is %zu", name.size(), kMaxPathBytes));
    }
    return name;
  }

  // ---- node access: the committed tree, or a transaction's view -------------

  // A transaction's first access to a node records the node's generation (or
  // its absence) and copies it; later accesses use that copy. This is
  // xenstored's access_node: every node a transaction touched is checked at
  // commit.
  TxEntry& entry(Tx& tx, const std::string& path) {
    auto [it, inserted] = tx.entries.try_emplace(path);
    TxEntry& e = it->second;
    if (inserted) {
      auto c = nodes.find(path);
      if (c != nodes.end()) {
        e.existed = true;
        e.generation = c->second.generation;
        e.original_perms = c->second.perms;
        e.view = c->second;
      }
    }
    return e;
  }

  const Node* lookup(Ctx& ctx, const std::string& path) {
    if (!ctx.tx) {
      auto it = nodes.find(path);
      return it == nodes.end() ? nullptr : &it->second;
    }
    TxEntry& e = entry(*ctx.tx, path);
    return e.view ? &*e.view : nullptr;
  }

  // An existing node about to be changed; outside a transaction its
  // generation moves on now, inside one at commit.
  Node* modify(Ctx& ctx, const std::string& path) {
    if (!ctx.tx) {
      auto it = nodes.find(path);
      if (it == nodes.end()) return nullptr;
      it->second.generation = ++generation;
      return &it->second;
    }
    TxEntry& e = entry(*ctx.tx, path);
    if (!e.view) return nullptr;
    e.modified = true;
    return &*e.view;
  }

  Node* create(Ctx& ctx, const std::string& path, Node node) {
    if (!ctx.tx) {
      node.generation = ++generation;
      Node& slot = nodes[path];
      slot = std::move(node);
      return &slot;
    }
    TxEntry& e = entry(*ctx.tx, path);
    e.view = std::move(node);
    e.modified = true;
    return &*e.view;
  }

  void erase(Ctx& ctx, const std::string& path) {
    if (!ctx.tx) {
      nodes.erase(path);
      return;
    }
    TxEntry& e = entry(*ctx.tx, path);
    e.view.reset();
    e.modified = true;
  }

  // The nearest existing ancestor of a missing node (the root always exists).
  std::string nearest_ancestor(Ctx& ctx, const std::string& path, const Node** node) {
    std::string cur = path;
    *node = nullptr;
    while (cur != "/") {
      cur = parent_of(cur);
      *node = lookup(ctx, cur);
      if (*node) break;
    }
    return cur;
  }

  // xenstored's get_node: a node the caller may not access is EACCES. For a
  // missing node (errno_from_parents) the nearest existing ancestor decides:
  // ENOENT when it grants the access asked for, EACCES otherwise, so that a
  // domain learns nothing about nodes where it has no access.
  Result<const Node*> get_node(Ctx& ctx, const std::string& path, Need need) {
    if (const Node* n = lookup(ctx, path)) {
      if (allows(rights_for(ctx.domid, n->perms), need)) return n;
      return error(EACCES, ctx, path,
                   format("permission denied: domain %u may not %s this node", unsigned{ctx.domid},
                          need_name(need)));
    }
    const Node* anc = nullptr;
    std::string anc_path = nearest_ancestor(ctx, path, &anc);
    if (!anc) return error(EIO, ctx, path, "the root node is missing");
    Rights r = rights_for(ctx.domid, anc->perms);
    bool granted = need == Need::kRead ? r.read : r.write;
    if (!granted) {
      return error(EACCES, ctx, path,
                   format("permission denied: domain %u may not %s %s", unsigned{ctx.domid},
                          need == Need::kRead ? "read" : "write", printable(anc_path).c_str()));
    }
    return error(ENOENT, ctx, path, "no such node");
  }

  // xenstored's construct_node: writing a missing node creates it and every
  // missing parent. Each new node inherits the permissions of the nearest
  // existing ancestor, but an unprivileged creator becomes the owner.
  // The caller has checked write access to that ancestor.
  void create_missing(Ctx& ctx, const std::string& path, std::string_view value) {
    std::vector<std::string> missing{path};
    const Node* anc = nullptr;
    std::string anc_path = nearest_ancestor(ctx, path, &anc);
    for (std::string cur = parent_of(path); cur != anc_path; cur = parent_of(cur)) {
      missing.push_back(cur);
    }
    if (!anc) return;
    Perms perms = anc->perms;
    if (ctx.domid != kDom0) perms[0].domid = ctx.domid;
    Node* parent = modify(ctx, anc_path);  // its list of children changes
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      parent->children.insert(base_of(*it));
      Node n;
      n.perms = perms;
      if (*it == path) n.value = value;
      parent = create(ctx, *it, std::move(n));
    }
  }

  // ---- watches -------------------------------------------------------------

  static std::string event_path(const Watch& w, const std::string& name) {
    return name.size() >= w.prefix_len ? name.substr(w.prefix_len) : name;
  }

  // Sends the events for one change. Watchers get it when they may read the
  // node under one of `perms` (before and/or after the change); special
  // events go to every watcher of the special name.
  void fire(const std::string& name, bool exact, const std::vector<const Perms*>& perms) {
    bool special = !name.empty() && name[0] == '@';
    std::vector<std::tuple<ConnId, std::string, std::string>> out;
    for (const auto& [id, conn] : conns) {
      bool permitted = special;
      for (const Perms* p : perms)
        permitted = permitted || rights_for(conn.domid, *p).read;
      if (!permitted) continue;
      for (const Watch& w : conn.watches) {
        if (watch_matches(w.node, name, exact)) out.emplace_back(id, event_path(w, name), w.token);
      }
    }
    if (!sink) return;
    for (const auto& [id, path, token] : out)
      sink(id, path, token);
  }

  // A change of `path`. `old_perms` are its permissions before the change
  // when they differ from now (set_permissions) or it is gone (rm). Inside a
  // transaction the event is queued for commit, once per node; a subtree
  // event replaces an exact one (xenstored's queue_watches).
  void notify(Ctx& ctx, const std::string& path, bool exact, const Perms* old_perms) {
    if (ctx.tx) {
      auto [it, inserted] = ctx.tx->event_index.try_emplace(path, ctx.tx->events.size());
      if (inserted) {
        ctx.tx->events.push_back({path, exact});
      } else if (!exact) {
        ctx.tx->events[it->second].exact = false;
      }
      return;
    }
    std::vector<const Perms*> perms;
    if (old_perms) perms.push_back(old_perms);
    auto it = nodes.find(path);
    if (it != nodes.end()) perms.push_back(&it->second.perms);
    fire(path, exact, perms);
  }

  // ---- operations ------------------------------------------------------------

  Status write_node(Ctx& ctx, const std::string& path, std::string_view value, bool mkdir) {
    auto node = get_node(ctx, path, Need::kWrite);
    if (node) {
      if (mkdir) return {};  // mkdir of an existing node is fine, and no change
      modify(ctx, path)->value = value;
    } else {
      if (node.error().code != ENOENT) return node.error();
      create_missing(ctx, path, value);
    }
    // One event naming the written node, even when parents were created.
    notify(ctx, path, false, nullptr);
    return {};
  }

  // Removes `path` and everything below it, children first (xenstored walks
  // the subtree and deletes on the way back up). Every removed node fires the
  // watches set exactly on it; the top one fires watches on it or above it.
  void remove_subtree(Ctx& ctx, const std::string& path, const std::string& top) {
    const Node* n = lookup(ctx, path);
    if (!n) return;  // an inconsistent transaction view: its commit fails
    std::vector<std::string> kids(n->children.begin(), n->children.end());
    for (const std::string& kid : kids) {
      remove_subtree(ctx, child_of(path, kid), top);
    }
    Perms perms = lookup(ctx, path)->perms;
    erase(ctx, path);
    notify(ctx, path, path != top, &perms);
  }

  void remove_node(Ctx& ctx, const std::string& path) {
    remove_subtree(ctx, path, path);
    if (Node* parent = modify(ctx, parent_of(path))) parent->children.erase(base_of(path));
  }

  Status rm(Ctx& ctx, const std::string& path) {
    if (path == "/") return error(EINVAL, ctx, path, "the root node cannot be removed");
    auto node = get_node(ctx, path, Need::kWrite);
    if (!node) {
      // xenstored's do_rm: removing a missing node is fine when its parent
      // exists; ENOENT when the parent is missing too.
      if (node.error().code == ENOENT && lookup(ctx, parent_of(path))) return {};
      return node.error();
    }
    remove_node(ctx, path);
    return {};
  }

  Status set_perms(Ctx& ctx, const std::string& path, std::span<const XsPermission> perms) {
    if (perms.empty()) return error(EINVAL, ctx, path, "empty permission list");
    for (const XsPermission& p : perms) {
      if (static_cast<unsigned>(p.access) > XsPermission::kBoth) {
        return error(EINVAL, ctx, path,
                     format("invalid access value %u for domain %u",
                            static_cast<unsigned>(p.access), unsigned{p.domid}));
      }
    }
    // Only the owner (and dom0) may change permissions, and only dom0 may
    // give the node away (xenstored: EPERM).
    auto node = get_node(ctx, path, Need::kOwner);
    if (!node) return node.error();
    if (ctx.domid != kDom0 && perms[0].domid != (*node)->perms[0].domid) {
      return error(EPERM, ctx, path,
                   format("domain %u may not change the owner to domain %u", unsigned{ctx.domid},
                          unsigned{perms[0].domid}));
    }
    Node* m = modify(ctx, path);
    Perms old = m->perms;
    m->perms.assign(perms.begin(), perms.end());
    // Watchers that just lost access still hear about it (old permissions).
    notify(ctx, path, false, &old);
    return {};
  }

  // xenstored's finalize_transaction: the commit fails with EAGAIN when any
  // node the transaction accessed (read, written, listed or found absent)
  // changed since its first access; otherwise its changes are applied at
  // once and its queued events fired.
  Status commit(Tx& tx, const char* op) {
    for (const auto& [path, e] : tx.entries) {
      auto it = nodes.find(path);
      bool present = it != nodes.end();
      if (present != e.existed || (present && it->second.generation != e.generation)) {
        const char* what = !present ? "removed" : !e.existed ? "created" : "changed";
        return make_error(EAGAIN,
                          format("xenstore %s: transaction %u conflicts: %s was %s by someone else "
                                 "after the transaction accessed it",
                                 op, tx.id, printable(path).c_str(), what));
      }
    }
    for (auto& [path, e] : tx.entries) {
      if (!e.modified) continue;
      if (e.view) {
        Node& n = nodes[path];
        n = std::move(*e.view);
        n.generation = ++generation;
      } else {
        nodes.erase(path);
      }
    }
    for (const PendingEvent& ev : tx.events) {
      std::vector<const Perms*> perms;
      auto e = tx.entries.find(ev.path);
      if (e != tx.entries.end() && e->second.existed) perms.push_back(&e->second.original_perms);
      auto it = nodes.find(ev.path);
      if (it != nodes.end()) perms.push_back(&it->second.perms);
      fire(ev.path, ev.exact, perms);
    }
    return {};
  }

  // Creates or updates a node as the toolstack, giving it `perms`. A node
  // that is already as wanted is left alone (no event, no new generation),
  // so introducing a domain again changes nothing that is in place.
  void put(Ctx& ctx, const std::string& path, const std::string* value, const Perms& perms) {
    std::optional<Perms> old;
    if (const Node* n = lookup(ctx, path)) {
      if (n->perms == perms && (!value || n->value == *value)) return;
      old = n->perms;
    } else {
      create_missing(ctx, path, "");
    }
    Node* m = modify(ctx, path);
    m->perms = perms;
    if (value) m->value = *value;
    notify(ctx, path, false, old ? &*old : nullptr);
  }
};

XenstoreEngine::XenstoreEngine(WatchSink sink) : impl_(std::make_unique<Impl>(std::move(sink))) {}
XenstoreEngine::~XenstoreEngine() = default;

void XenstoreEngine::add_connection(ConnId conn, domid_t domid) {
  // Re-adding a connection starts it afresh.
  impl_->drop_transactions(conn);
  impl_->conns[conn] = Impl::Conn{domid, {}};
}

void XenstoreEngine::remove_connection(ConnId conn) {
  impl_->drop_transactions(conn);
  impl_->conns.erase(conn);
}

void XenstoreEngine::introduce_domain(domid_t d) {
  // What the toolstack (libxl) writes for a new domain, done in one
  // transaction so that each node fires one event, then @introduceDomain.
  Impl::Tx tx;
  Impl::Ctx ctx{kDom0, &tx, "introduce_domain"};
  const std::string home = home_of(d);
  const Perms readable = {{kDom0, XsPermission::kNone}, {d, XsPermission::kRead}};
  const std::string domid = std::to_string(d);
  impl_->put(ctx, home, nullptr, readable);
  impl_->put(ctx, home + "/domid", &domid, readable);
  impl_->put(ctx, home + "/data", nullptr, {{d, XsPermission::kNone}});
  impl_->put(ctx, home + "/device", nullptr, readable);
  // Nothing can interleave here, so the commit cannot conflict.
  (void)impl_->commit(tx, "introduce_domain");
  impl_->fire(std::string(kIntroduceDomain), true, {});
}

void XenstoreEngine::release_domain(domid_t d) {
  Impl::Ctx ctx{kDom0, nullptr, "release_domain"};
  const std::string home = home_of(d);
  if (impl_->lookup(ctx, home)) impl_->remove_node(ctx, home);
  impl_->fire(std::string(kReleaseDomain), true, {});
}

Result<std::string> XenstoreEngine::read(ConnId c, xs_transaction_t t, std::string_view path) {
  auto ctx = impl_->context(c, t, "read");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  auto node = impl_->get_node(*ctx, *name, Need::kRead);
  if (!node) return node.error();
  return (*node)->value;
}

Status XenstoreEngine::write(ConnId c, xs_transaction_t t, std::string_view path,
                             std::string_view value) {
  auto ctx = impl_->context(c, t, "write");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  if (value.size() > kMaxValueBytes) {
    return Impl::error(
        E2BIG, *ctx, *name,
        format("value is %zu bytes, the limit is %zu", value.size(), kMaxValueBytes));
  }
  return impl_->write_node(*ctx, *name, value, false);
}

Status XenstoreEngine::mkdir(ConnId c, xs_transaction_t t, std::string_view path) {
  auto ctx = impl_->context(c, t, "mkdir");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  return impl_->write_node(*ctx, *name, {}, true);
}

Status XenstoreEngine::rm(ConnId c, xs_transaction_t t, std::string_view path) {
  auto ctx = impl_->context(c, t, "rm");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  return impl_->rm(*ctx, *name);
}

Result<std::vector<std::string>> XenstoreEngine::directory(ConnId c, xs_transaction_t t,
                                                           std::string_view path) {
  auto ctx = impl_->context(c, t, "directory");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  auto node = impl_->get_node(*ctx, *name, Need::kRead);
  if (!node) return node.error();
  // Child names, not paths; std::set keeps them sorted.
  return std::vector<std::string>((*node)->children.begin(), (*node)->children.end());
}

Result<std::vector<XsPermission>> XenstoreEngine::get_permissions(ConnId c, xs_transaction_t t,
                                                                  std::string_view path) {
  auto ctx = impl_->context(c, t, "get_permissions");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  auto node = impl_->get_node(*ctx, *name, Need::kRead);
  if (!node) return node.error();
  return (*node)->perms;
}

Status XenstoreEngine::set_permissions(ConnId c, xs_transaction_t t, std::string_view path,
                                       std::span<const XsPermission> perms) {
  auto ctx = impl_->context(c, t, "set_permissions");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, false);
  if (!name) return name.error();
  return impl_->set_perms(*ctx, *name, perms);
}

Result<xs_transaction_t> XenstoreEngine::transaction_start(ConnId c) {
  auto ctx = impl_->context(c, kXsNoTransaction, "transaction_start");
  if (!ctx) return ctx.error();
  // xenstored's transaction quota answers ENOSPC.
  if (impl_->tx_count(c) >= kMaxTransactionsPerConn) {
    return make_error(ENOSPC,
                      format("xenstore transaction_start: connection %u already has %zu open "
                             "transactions (the limit)",
                             c, kMaxTransactionsPerConn));
  }
  // Ids are unique in the engine and never 0 (kXsNoTransaction).
  xs_transaction_t id = impl_->next_tx;
  while (id == kXsNoTransaction || impl_->txs.count(id) != 0)
    ++id;
  impl_->next_tx = id + 1;
  Impl::Tx& tx = impl_->txs[id];
  tx.id = id;
  tx.conn = c;
  return id;
}

Status XenstoreEngine::transaction_end(ConnId c, xs_transaction_t t, bool abort) {
  const char* op = abort ? "transaction_end(abort)" : "transaction_end(commit)";
  auto ctx = impl_->context(c, kXsNoTransaction, op);
  if (!ctx) return ctx.error();
  auto it = impl_->txs.find(t);
  if (t == kXsNoTransaction || it == impl_->txs.end() || it->second.conn != c) {
    return make_error(ENOENT,
                      format("xenstore %s: no transaction %u open on connection %u", op, t, c));
  }
  // The transaction ends either way, also when its commit fails.
  Impl::Tx tx = std::move(it->second);
  impl_->txs.erase(it);
  if (abort) return {};
  return impl_->commit(tx, op);
}

Status XenstoreEngine::watch(ConnId c, std::string_view path, std::string_view token) {
  auto ctx = impl_->context(c, kXsNoTransaction, "watch");
  if (!ctx) return ctx.error();
  if (token.find('\0') != std::string_view::npos) {
    return Impl::error(EINVAL, *ctx, path, "the token contains a NUL byte");
  }
  if (token.size() > kMaxValueBytes) {
    return Impl::error(
        E2BIG, *ctx, path,
        format("token is %zu bytes, the limit is %zu", token.size(), kMaxValueBytes));
  }
  bool relative = false;
  auto name = impl_->canonical(*ctx, path, true, &relative);
  if (!name) return name.error();
  Impl::Conn& conn = impl_->conns[c];
  for (const Impl::Watch& w : conn.watches) {
    if (w.node == *name && w.token == token) {
      return Impl::error(EEXIST, *ctx, path,
                         format("connection %u already watches it with token \"%s\"", c,
                                printable(token).c_str()));
    }
  }
  if (conn.watches.size() >= kMaxWatchesPerConn) {
    return Impl::error(
        E2BIG, *ctx, path,
        format("connection %u already has %zu watches (the limit)", c, kMaxWatchesPerConn));
  }
  // A relative watch reports paths relative to the domain's home.
  Impl::Watch w{*name, std::string(token), relative ? home_of(ctx->domid).size() + 1 : 0};
  conn.watches.push_back(w);
  // Xen fires every new watch once, right away, naming the watched path.
  if (impl_->sink) impl_->sink(c, Impl::event_path(w, w.node), w.token);
  return {};
}

Status XenstoreEngine::unwatch(ConnId c, std::string_view path, std::string_view token) {
  auto ctx = impl_->context(c, kXsNoTransaction, "unwatch");
  if (!ctx) return ctx.error();
  auto name = impl_->canonical(*ctx, path, true);
  if (!name) return name.error();
  auto& watches = impl_->conns[c].watches;
  for (auto it = watches.begin(); it != watches.end(); ++it) {
    if (it->node == *name && it->token == token) {
      watches.erase(it);
      return {};
    }
  }
  return Impl::error(
      ENOENT, *ctx, path,
      format("connection %u has no watch with token \"%s\"", c, printable(token).c_str()));
}

size_t XenstoreEngine::node_count() const {
  return impl_->nodes.size();
}

size_t XenstoreEngine::watch_count(ConnId c) const {
  auto it = impl_->conns.find(c);
  return it == impl_->conns.end() ? 0 : it->second.watches.size();
}

size_t XenstoreEngine::transaction_count(ConnId c) const {
  return impl_->tx_count(c);
}

}  // namespace xpv::sim
