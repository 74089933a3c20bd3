// SPDX-License-Identifier: MIT
/// \file
/// The hypervisor services a netif frontend needs, as one small interface with
/// two implementations chosen at run time:
/// - "xen"       libxengnttab (gntshr and gnttab), libxenevtchn, libxenstore
/// - "sim:PATH"  the simulated hypervisor owned by a backend process that
///               listens on the unix socket PATH (see src/sim/)
///
/// Every handle is an RAII object: destroying it closes what it opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xpv/result.h"

namespace xpv {

/// A domain id (xen.h domid_t).
using domid_t = uint16_t;
/// A grant reference (grant_table.h grant_ref_t).
using grant_ref_t = uint32_t;
/// An event channel port (event_channel.h evtchn_port_t).
using evtchn_port_t = uint32_t;

/// The size of a granted page.
inline constexpr size_t kPageSize = 4096;
/// Domain 0's id.
inline constexpr domid_t kDom0 = 0;
inline constexpr domid_t kDomidSelf = 0x7FF0;  ///< DOMID_SELF in xen.h

// ---------------------------------------------------------------------------
// Grant sharing (the frontend side: gntshr / gntalloc).

/// What happened to the pages when access to them was ended.
struct EndAccessReport {
  uint32_t pages = 0;         ///< pages in the share
  uint32_t ended = 0;         ///< access ended, pages returned
  uint32_t still_mapped = 0;  ///< the peer still maps them: access could not be ended now;
                              ///< the pages are kept (never freed under the peer) and are
                              ///< released later once the peer unmaps them
  bool unknown = false;       ///< the platform cannot tell (xen: gntalloc defers by itself)
  /// True when the peer maps none of the pages any more.
  bool clean() const { return still_mapped == 0; }
};

class GrantSharer;

/// Pages allocated and granted to one domain. Contiguous in our address space.
class SharedPages {
 public:
  SharedPages() = default;
  /// Takes the pages at `addr`, granted to `domid` as `refs` by `owner`
  /// (GrantSharer implementations call it).
  SharedPages(GrantSharer* owner, void* addr, std::vector<grant_ref_t> refs, domid_t domid,
              bool writable);
  /// Takes `o`'s pages; `o` is left empty.
  SharedPages(SharedPages&& o) noexcept;
  /// Ends access to the pages held (as end_access()), then takes `o`'s.
  SharedPages& operator=(SharedPages&& o) noexcept;
  SharedPages(const SharedPages&) = delete;
  SharedPages& operator=(const SharedPages&) = delete;
  ~SharedPages();  ///< ends access; logs when the peer still maps a page

  /// Ends access now and says what happened to every page.
  EndAccessReport end_access();

  /// True while it holds pages.
  bool valid() const { return addr_ != nullptr; }
  /// The first page's address.
  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  /// Page `i`'s address.
  uint8_t* page(size_t i) const { return data() + i * kPageSize; }
  /// How many pages.
  size_t count() const { return refs_.size(); }
  /// count() pages in bytes.
  size_t bytes() const { return refs_.size() * kPageSize; }
  /// Page `i`'s grant reference.
  grant_ref_t ref(size_t i) const { return refs_[i]; }
  /// Every page's grant reference, in page order.
  const std::vector<grant_ref_t>& refs() const { return refs_; }
  /// The domain the pages are granted to.
  domid_t domid() const { return domid_; }
  /// True when that domain may write them.
  bool writable() const { return writable_; }

 private:
  GrantSharer* owner_ = nullptr;
  void* addr_ = nullptr;
  std::vector<grant_ref_t> refs_;
  domid_t domid_ = 0;
  bool writable_ = false;
};

/// Grants pages of this domain to another one (gntshr / gntalloc):
/// Platform::open_grant_sharer().
class GrantSharer {
 public:
  virtual ~GrantSharer() = default;
  /// Allocates `count` zeroed pages and grants them to `domid`, writable or
  /// read-only for that domain.
  virtual Result<SharedPages> share(domid_t domid, uint32_t count, bool writable) = 0;

 protected:
  friend class SharedPages;
  /// Ends access to the pages of a SharedPages (its end_access() calls it).
  virtual EndAccessReport unshare(void* addr, std::span<const grant_ref_t> refs) = 0;
};

// ---------------------------------------------------------------------------
// Grant mapping and copy (the backend side: gnttab).

/// One grant copy operation, GNTTABOP_copy style: each side is either a grant
/// (domain, ref, offset) or a local address.
struct GrantCopySegment {
  /// True: a grant of another domain; false: `local`.
  bool is_grant = false;
  /// The granting domain (grant only).
  domid_t domid = 0;
  /// The grant reference (grant only).
  grant_ref_t ref = 0;
  /// Offset in the granted page (grant only).
  uint16_t offset = 0;
  void* local = nullptr;  ///< when !is_grant
};

/// One copy of `len` bytes from `source` to `dest` (GNTTABOP_copy).
struct GrantCopyOp {
  /// Where the bytes come from.
  GrantCopySegment source;
  /// Where they go.
  GrantCopySegment dest;
  /// How many bytes.
  uint16_t len = 0;
  int16_t status = 0;  ///< out: GNTST_* (0 okay, negative error)
};

class GrantMapper;

/// One mapped foreign page; unmapped on destruction.
class GrantMapping {
 public:
  GrantMapping() = default;
  /// Takes the mapping at `addr` that `owner` made as `handle`
  /// (GrantMapper implementations call it).
  GrantMapping(GrantMapper* owner, void* addr, uint64_t handle)
      : owner_(owner), addr_(addr), handle_(handle) {}
  /// Takes `o`'s mapping; `o` is left empty.
  GrantMapping(GrantMapping&& o) noexcept { *this = std::move(o); }
  /// Unmaps the page held, then takes `o`'s mapping.
  GrantMapping& operator=(GrantMapping&& o) noexcept;
  GrantMapping(const GrantMapping&) = delete;
  GrantMapping& operator=(const GrantMapping&) = delete;
  ~GrantMapping() { reset(); }
  /// Unmaps now; nothing when empty.
  void reset();
  /// True while it holds a mapping.
  bool valid() const { return addr_ != nullptr; }
  /// The mapped page's address.
  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }

 private:
  GrantMapper* owner_ = nullptr;
  void* addr_ = nullptr;
  uint64_t handle_ = 0;
};

/// Maps and copies grants of other domains (gnttab): the backend side,
/// Platform::open_grant_mapper().
class GrantMapper {
 public:
  virtual ~GrantMapper() = default;
  /// Maps the page `domid` granted as `ref`, writable or read-only.
  virtual Result<GrantMapping> map(domid_t domid, grant_ref_t ref, bool writable) = 0;
  /// Performs every op; each op's status says how it went. Returns a failed
  /// Status only when the batch as a whole could not be attempted.
  virtual Status copy(std::span<GrantCopyOp> ops) = 0;

 protected:
  friend class GrantMapping;
  /// Unmaps a page (GrantMapping calls it).
  virtual void unmap(void* addr, uint64_t handle) = 0;
};

// ---------------------------------------------------------------------------
/// Event channels (one handle = one pollable fd, any number of ports).
///
/// Delivery follows the evtchn device: a port that fires is masked and handed
/// out by pending(); it fires again only after unmask(). That is what makes late
/// EOI possible: unmask after the handler ran.
class EventChannel {
 public:
  virtual ~EventChannel() = default;
  virtual int fd() const = 0;  ///< readable when pending() may have a port
  /// Allocates a port that `remote` may bind.
  virtual Result<evtchn_port_t> alloc_unbound(domid_t remote) = 0;
  /// Binds to `remote`'s port `remote_port`; returns the local port.
  virtual Result<evtchn_port_t> bind_interdomain(domid_t remote, evtchn_port_t remote_port) = 0;
  /// Closes a local port.
  virtual Status unbind(evtchn_port_t port) = 0;
  /// Signals the remote end of a local port.
  virtual Status notify(evtchn_port_t port) = 0;
  /// Takes one fired port, or nullopt when none is pending. Drain until nullopt.
  virtual Result<std::optional<evtchn_port_t>> pending() = 0;
  /// Takes up to `ports.size()` fired ports at one look (Linux's evtchn device
  /// hands several to one read); returns how many it stored. Fewer than asked
  /// means none was left pending when it looked: the caller need not look
  /// again until the fd is readable. This default takes them one by one with
  /// pending().
  virtual Result<size_t> take_pending(std::span<evtchn_port_t> ports) {
    size_t n = 0;
    while (n < ports.size()) {
      auto p = pending();
      if (!p) return p.error();
      if (!*p) break;
      ports[n++] = **p;
    }
    return n;
  }
  /// Lets a port that fired fire again (the EOI).
  virtual Status unmask(evtchn_port_t port) = 0;
};

// ---------------------------------------------------------------------------
// Xenstore.

/// A xenstore transaction id.
using xs_transaction_t = uint32_t;
/// Outside any transaction (XBT_NULL).
inline constexpr xs_transaction_t kXsNoTransaction = 0;

/// One permission entry. The first entry of a node's list names its owner and
/// the access every other domain has; later entries grant specific domains.
struct XsPermission {
  /// What a domain may do with a node ("n", "r", "w", "b").
  enum Access : uint8_t { kNone = 0, kRead = 1, kWrite = 2, kBoth = 3 };
  /// The domain the entry is about.
  domid_t domid = 0;
  /// Its access.
  Access access = kNone;
  /// Same domain and same access.
  bool operator==(const XsPermission&) const = default;
};

/// Parses Xen's textual form ("n0", "r5", "b3"...) and back.
Result<XsPermission> parse_xs_permission(std::string_view s);
/// `p` in Xen's textual form ("r5").
std::string to_string(const XsPermission& p);

/// A watch that fired: the path that changed and the watch's token.
struct XsWatchEvent {
  /// The path that changed (or the watched path, when the watch was set).
  std::string path;
  /// The token given to XenStore::watch().
  std::string token;
};

/// A xenstore connection: Platform::open_xenstore().
class XenStore {
 public:
  virtual ~XenStore() = default;
  /// Paths not starting with '/' (and not special "@..." watch names) are
  /// relative to the calling domain's home, `/local/domain/<domid>`.
  virtual Result<std::string> read(xs_transaction_t t, std::string_view path) = 0;
  /// Writes `value` at `path`, creating the node.
  virtual Status write(xs_transaction_t t, std::string_view path, std::string_view value) = 0;
  /// Creates an empty node.
  virtual Status mkdir(xs_transaction_t t, std::string_view path) = 0;
  virtual Status rm(xs_transaction_t t, std::string_view path) = 0;  ///< subtree
  /// The names of `path`'s children.
  virtual Result<std::vector<std::string>> directory(xs_transaction_t t, std::string_view path) = 0;
  /// The node's permission list.
  virtual Result<std::vector<XsPermission>> get_permissions(xs_transaction_t t,
                                                            std::string_view path) = 0;
  /// Replaces the node's permission list.
  virtual Status set_permissions(xs_transaction_t t, std::string_view path,
                                 std::span<const XsPermission> perms) = 0;

  /// Starts a transaction: pass its id as `t` to the calls above.
  virtual Result<xs_transaction_t> transaction_start() = 0;
  /// commit (abort=false) fails with EAGAIN when a conflicting change won.
  virtual Status transaction_end(xs_transaction_t t, bool abort) = 0;

  /// A watch fires once when set, then on every change to the path or below.
  virtual Status watch(std::string_view path, std::string_view token) = 0;
  /// Removes the watch set with this path and token.
  virtual Status unwatch(std::string_view path, std::string_view token) = 0;
  virtual int watch_fd() const = 0;  ///< readable when read_watch() may return an event
  /// Takes one event without blocking, or nullopt. Drain until nullopt.
  virtual Result<std::optional<XsWatchEvent>> read_watch() = 0;

  /// The home of `domid`, `/local/domain/<domid>`.
  virtual Result<std::string> domain_path(domid_t domid) = 0;

  /// Convenience: read returning nullopt on ENOENT.
  Result<std::optional<std::string>> try_read(xs_transaction_t t, std::string_view path);
};

/// Runs fn(t) inside a transaction, retrying the whole transaction when its
/// commit meets a conflict (EAGAIN), up to `attempts` times. fn returns Status;
/// a failure from fn aborts the transaction and is returned.
template <typename Fn>
Status xs_transact(XenStore& xs, Fn&& fn, int attempts = 64) {
  for (int i = 0; i < attempts; ++i) {
    auto t = xs.transaction_start();
    if (!t) return t.error();
    Status s = fn(*t);
    if (s.failed()) {
      (void)xs.transaction_end(*t, true);
      if (s.code() == EAGAIN) continue;
      return s;
    }
    Status c = xs.transaction_end(*t, false);
    if (c) return c;
    if (c.code() != EAGAIN) return c;
  }
  return make_error(EAGAIN,
                    format("xenstore transaction still conflicting after %d attempts", attempts));
}

// ---------------------------------------------------------------------------
/// A platform: one hypervisor connection, and factories for the handles.
class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string name() const = 0;  ///< "xen" or "sim:PATH"
  /// This domain's id.
  virtual domid_t self_domid() const = 0;
  /// A GrantSharer of this platform.
  virtual Result<std::unique_ptr<GrantSharer>> open_grant_sharer() = 0;
  /// A GrantMapper of this platform.
  virtual Result<std::unique_ptr<GrantMapper>> open_grant_mapper() = 0;
  /// An EventChannel of this platform.
  virtual Result<std::unique_ptr<EventChannel>> open_event_channel() = 0;
  /// A XenStore connection of this platform.
  virtual Result<std::unique_ptr<XenStore>> open_xenstore() = 0;
};

/// "xen" or "sim:PATH". An unknown spec, a missing /dev/xen, or a socket that
/// does not answer is a clear error.
Result<std::unique_ptr<Platform>> open_platform(std::string_view spec);

/// The xen platform (fails with a clear error where /dev/xen is absent).
Result<std::unique_ptr<Platform>> open_xen_platform();

}  // namespace xpv
