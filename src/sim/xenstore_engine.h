// SPDX-License-Identifier: MIT
// The simulated hypervisor's xenstore: a tree of nodes with Xen's semantics
// (docs/misc/xenstore.txt and xenstored's behaviour):
//   - per-node permission lists (owner + default access, then per-domain
//     entries); dom0 is privileged and bypasses checks; a new node inherits
//     its parent's permissions with the creating (unprivileged) domain as owner;
//   - writing a node creates missing parents; rm removes a subtree;
//   - relative paths are relative to /local/domain/<domid> of the connection;
//   - transactions see a private snapshot and fail with EAGAIN at commit when a
//     node they read or wrote was changed by someone else meanwhile;
//   - watches fire once when registered, then for every change of the watched
//     node or any node below it (and for the removal of a parent), only to
//     watchers allowed to read the node; changes made in a transaction fire at
//     commit; special watches "@introduceDomain" and "@releaseDomain".
//
// Not thread-safe: the hypervisor serialises calls. Watch events are handed to
// the sink synchronously, in order; the sink must not call back into the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xpv/platform.h"
#include "xpv/result.h"

namespace xpv::sim {

class XenstoreEngine {
 public:
  using ConnId = uint32_t;
  // Called for each watch event: the connection that owns the watch, the
  // path that changed (as the watcher registered it: relative when the watch
  // was relative), and the watch's token.
  using WatchSink = std::function<void(ConnId, const std::string& path, const std::string& token)>;

  // Limits, as in xenstored's defaults.
  static constexpr size_t kMaxValueBytes = 4096;  // XENSTORE_PAYLOAD_MAX
  static constexpr size_t kMaxPathBytes = 3072;   // XENSTORE_ABS_PATH_MAX
  static constexpr size_t kMaxTransactionsPerConn = 10;
  static constexpr size_t kMaxWatchesPerConn = 128;

  explicit XenstoreEngine(WatchSink sink);
  ~XenstoreEngine();
  XenstoreEngine(const XenstoreEngine&) = delete;
  XenstoreEngine& operator=(const XenstoreEngine&) = delete;

  // A connection acts for one domain. Removing it drops its watches and
  // aborts its open transactions.
  void add_connection(ConnId conn, domid_t domid);
  void remove_connection(ConnId conn);

  // The toolstack part of creating/destroying a domain: creates
  // /local/domain/<d> (owner dom0, readable by d) with "domid" and a "data"
  // directory the domain owns, then fires @introduceDomain. release_domain
  // removes /local/domain/<d> and fires @releaseDomain.
  void introduce_domain(domid_t d);
  void release_domain(domid_t d);

  Result<std::string> read(ConnId c, xs_transaction_t t, std::string_view path);
  Status write(ConnId c, xs_transaction_t t, std::string_view path, std::string_view value);
  Status mkdir(ConnId c, xs_transaction_t t, std::string_view path);
  Status rm(ConnId c, xs_transaction_t t, std::string_view path);
  Result<std::vector<std::string>> directory(ConnId c, xs_transaction_t t, std::string_view path);
  Result<std::vector<XsPermission>> get_permissions(ConnId c, xs_transaction_t t,
                                                    std::string_view path);
  Status set_permissions(ConnId c, xs_transaction_t t, std::string_view path,
                         std::span<const XsPermission> perms);

  Result<xs_transaction_t> transaction_start(ConnId c);
  Status transaction_end(ConnId c, xs_transaction_t t, bool abort);

  Status watch(ConnId c, std::string_view path, std::string_view token);
  Status unwatch(ConnId c, std::string_view path, std::string_view token);

  // For tests and diagnostics.
  size_t node_count() const;
  size_t watch_count(ConnId c) const;
  size_t transaction_count(ConnId c) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpv::sim
