// SPDX-License-Identifier: MIT
// The "xen" platform: Xen's own userspace libraries.
//   grants shared:  libxengnttab's gntshr API (/dev/xen/gntalloc)
//   grants mapped:  libxengnttab's gnttab API (/dev/xen/gntdev)
//   event channels: libxenevtchn (/dev/xen/evtchn)
//   xenstore:       libxenstore (/dev/xen/xenbus in a guest)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" {
#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>
}

#include "util/fd.h"
#include "util/log.h"
#include "xpv/platform.h"

namespace xpv {
namespace {

Error lib_error(const char* what, int err) {
  return make_error(err ? err : EIO,
                    format("%s failed: %s", what, errno_string(err ? err : EIO).c_str()));
}

Status require_device(const char* dev, const char* module) {
  if (::access(dev, R_OK | W_OK) == 0) return {};
  int e = errno;
  return make_error(e == ENOENT ? ENODEV : e,
                    format("xen platform: %s is not usable (%s): load the %s module (and mount "
                           "xenfs on /proc/xen) inside a Xen guest",
                           dev, errno_string(e).c_str(), module));
}

// ---- gntshr ---------------------------------------------------------------------

class XenGrantSharer final : public GrantSharer {
 public:
  static Result<std::unique_ptr<GrantSharer>> open() {
    XPV_TRY(require_device("/dev/xen/gntalloc", "xen-gntalloc"));
    xengntshr_handle* h = xengntshr_open(nullptr, 0);
    if (!h) return lib_error("xengntshr_open (/dev/xen/gntalloc)", errno);
    return std::unique_ptr<GrantSharer>(new XenGrantSharer(h));
  }
  ~XenGrantSharer() override { xengntshr_close(h_); }

  Result<SharedPages> share(domid_t domid, uint32_t count, bool writable) override {
    if (count == 0) return make_error(EINVAL, "cannot share zero pages");
    std::vector<grant_ref_t> refs(count);
    void* addr = xengntshr_share_pages(h_, domid, static_cast<int>(count), refs.data(), writable);
    if (!addr) {
      int e = errno;
      return make_error(e ? e : ENOMEM,
                        format("sharing %u pages with domain %u failed: %s (gntalloc's limit is "
                               "1024 grants per domain unless its 'limit' parameter is raised)",
                               count, domid, errno_string(e ? e : ENOMEM).c_str()));
    }
    std::memset(addr, 0, size_t{count} * kPageSize);
    return SharedPages(this, addr, std::move(refs), domid, writable);
  }

 protected:
  EndAccessReport unshare(void* addr, std::span<const grant_ref_t> refs) override {
    EndAccessReport r;
    r.pages = static_cast<uint32_t>(refs.size());
    // gntalloc ends access when the pages are unmapped; for a page the peer
    // still maps it defers the release itself (gnttab_end_foreign_access's
    // deferred list) and never frees memory under the peer. Userspace cannot
    // observe which pages were deferred.
    if (xengntshr_unshare(h_, addr, static_cast<uint32_t>(refs.size())) != 0) {
      log_error("xengntshr_unshare of %zu pages failed: %s", refs.size(),
                errno_string(errno).c_str());
    }
    r.ended = r.pages;
    r.unknown = true;
    return r;
  }

 private:
  explicit XenGrantSharer(xengntshr_handle* h) : h_(h) {}
  xengntshr_handle* h_;
};

// ---- gnttab (map, copy) -----------------------------------------------------------

class XenGrantMapper final : public GrantMapper {
 public:
  static Result<std::unique_ptr<GrantMapper>> open() {
    XPV_TRY(require_device("/dev/xen/gntdev", "xen-gntdev"));
    xengnttab_handle* h = xengnttab_open(nullptr, 0);
    if (!h) return lib_error("xengnttab_open (/dev/xen/gntdev)", errno);
    return std::unique_ptr<GrantMapper>(new XenGrantMapper(h));
  }
  ~XenGrantMapper() override { xengnttab_close(h_); }

  Result<GrantMapping> map(domid_t domid, grant_ref_t ref, bool writable) override {
    void* p = xengnttab_map_grant_ref(h_, domid, ref, PROT_READ | (writable ? PROT_WRITE : 0));
    if (!p) {
      int e = errno;
      return make_error(e ? e : EPERM, format("mapping grant %u of domain %u failed: %s", ref,
                                              domid, errno_string(e ? e : EPERM).c_str()));
    }
    return GrantMapping(this, p, 0);
  }

  Status copy(std::span<GrantCopyOp> ops) override {
    // gntdev refuses a whole batch (EINVAL) when one segment crosses its
    // page; check each op first, as Xen would, and submit only the sound
    // ones, so that every op gets its own status.
    std::vector<xengnttab_grant_copy_segment_t> segs;
    std::vector<size_t> index;
    segs.reserve(ops.size());
    index.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const GrantCopyOp& op = ops[i];
      if (size_t{op.source.offset} + op.len > kPageSize ||
          size_t{op.dest.offset} + op.len > kPageSize ||
          (!op.source.is_grant && !op.source.local) || (!op.dest.is_grant && !op.dest.local)) {
        const bool bounds = size_t{op.source.offset} + op.len > kPageSize ||
                            size_t{op.dest.offset} + op.len > kPageSize;
        ops[i].status = bounds ? GNTST_bad_copy_arg : GNTST_general_error;
        continue;
      }
      xengnttab_grant_copy_segment_t s{};
      s.len = op.len;
      if (op.source.is_grant) {
        s.flags |= GNTCOPY_source_gref;
        s.source.foreign.ref = op.source.ref;
        s.source.foreign.offset = op.source.offset;
        s.source.foreign.domid = op.source.domid;
      } else {
        s.source.virt = op.source.local;
      }
      if (op.dest.is_grant) {
        s.flags |= GNTCOPY_dest_gref;
        s.dest.foreign.ref = op.dest.ref;
        s.dest.foreign.offset = op.dest.offset;
        s.dest.foreign.domid = op.dest.domid;
      } else {
        s.dest.virt = op.dest.local;
      }
      segs.push_back(s);
      index.push_back(i);
    }
    if (segs.empty()) return {};
    if (xengnttab_grant_copy(h_, static_cast<uint32_t>(segs.size()), segs.data()) != 0) {
      return lib_error("xengnttab_grant_copy", errno);
    }
    for (size_t k = 0; k < segs.size(); ++k)
      ops[index[k]].status = segs[k].status;
    return {};
  }

 protected:
  void unmap(void* addr, uint64_t) override { xengnttab_unmap(h_, addr, 1); }

 private:
  explicit XenGrantMapper(xengnttab_handle* h) : h_(h) {}
  xengnttab_handle* h_;
};

// ---- event channels ---------------------------------------------------------------

class XenEventChannel final : public EventChannel {
 public:
  static Result<std::unique_ptr<EventChannel>> open() {
    XPV_TRY(require_device("/dev/xen/evtchn", "xen-evtchn"));
    xenevtchn_handle* h = xenevtchn_open(nullptr, 0);
    if (!h) return lib_error("xenevtchn_open (/dev/xen/evtchn)", errno);
    // pending() must never block: make the device fd non-blocking.
    int fd = xenevtchn_fd(h);
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      int e = errno;
      xenevtchn_close(h);
      return lib_error("fcntl(O_NONBLOCK) on /dev/xen/evtchn", e);
    }
    return std::unique_ptr<EventChannel>(new XenEventChannel(h));
  }
  ~XenEventChannel() override { xenevtchn_close(h_); }

  int fd() const override { return xenevtchn_fd(h_); }
  Result<evtchn_port_t> alloc_unbound(domid_t remote) override {
    xenevtchn_port_or_error_t p = xenevtchn_bind_unbound_port(h_, remote);
    if (p < 0)
      return lib_error(format("xenevtchn_bind_unbound_port(domain %u)", remote).c_str(), errno);
    return static_cast<evtchn_port_t>(p);
  }
  Result<evtchn_port_t> bind_interdomain(domid_t remote, evtchn_port_t remote_port) override {
    xenevtchn_port_or_error_t p = xenevtchn_bind_interdomain(h_, remote, remote_port);
    if (p < 0) {
      return lib_error(
          format("xenevtchn_bind_interdomain(domain %u, port %u)", remote, remote_port).c_str(),
          errno);
    }
    return static_cast<evtchn_port_t>(p);
  }
  Status unbind(evtchn_port_t port) override {
    if (xenevtchn_unbind(h_, port) != 0) return lib_error("xenevtchn_unbind", errno);
    return {};
  }
  Status notify(evtchn_port_t port) override {
    if (xenevtchn_notify(h_, port) != 0) return lib_error("xenevtchn_notify", errno);
    return {};
  }
  Result<std::optional<evtchn_port_t>> pending() override {
    xenevtchn_port_or_error_t p = xenevtchn_pending(h_);
    if (p >= 0) return std::optional<evtchn_port_t>(static_cast<evtchn_port_t>(p));
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<evtchn_port_t>();
    return lib_error("xenevtchn_pending", errno);
  }
  // Linux's /dev/xen/evtchn hands as many fired ports as are queued, up to
  // the size asked, to one read; xenevtchn_pending() is that read for one
  // port. One system call takes them
  // all, and a short read says the queue was empty when it looked.
  Result<size_t> take_pending(std::span<evtchn_port_t> ports) override {
    if (ports.empty()) return size_t{0};
    const ssize_t got = ::read(xenevtchn_fd(h_), ports.data(), ports.size_bytes());
    if (got >= 0) return static_cast<size_t>(got) / sizeof(evtchn_port_t);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    return lib_error("read of fired ports from /dev/xen/evtchn", errno);
  }
  Status unmask(evtchn_port_t port) override {
    if (xenevtchn_unmask(h_, port) != 0) return lib_error("xenevtchn_unmask", errno);
    return {};
  }

 private:
  explicit XenEventChannel(xenevtchn_handle* h) : h_(h) {}
  xenevtchn_handle* h_;
};

// ---- xenstore -----------------------------------------------------------------------

class XenXenStore final : public XenStore {
 public:
  static Result<std::unique_ptr<XenStore>> open() {
    struct xs_handle* h = xs_open(0);
    if (!h) {
      return make_error(errno ? errno : ENODEV,
                        format("xs_open failed: %s (inside a guest it needs /dev/xen/xenbus: "
                               "mount xenfs on /proc/xen)",
                               errno_string(errno ? errno : ENODEV).c_str()));
    }
    return std::unique_ptr<XenStore>(new XenXenStore(h));
  }
  ~XenXenStore() override { xs_close(h_); }

  Result<std::string> read(xs_transaction_t t, std::string_view path) override {
    std::string p(path);
    unsigned int len = 0;
    void* v = xs_read(h_, t, p.c_str(), &len);
    if (!v) return path_error("read", p, errno);
    std::string out(static_cast<char*>(v), len);
    std::free(v);
    return out;
  }
  Status write(xs_transaction_t t, std::string_view path, std::string_view value) override {
    std::string p(path);
    if (!xs_write(h_, t, p.c_str(), value.data(), static_cast<unsigned>(value.size()))) {
      return path_error("write", p, errno);
    }
    return {};
  }
  Status mkdir(xs_transaction_t t, std::string_view path) override {
    std::string p(path);
    if (!xs_mkdir(h_, t, p.c_str())) return path_error("mkdir", p, errno);
    return {};
  }
  Status rm(xs_transaction_t t, std::string_view path) override {
    std::string p(path);
    if (!xs_rm(h_, t, p.c_str())) return path_error("rm", p, errno);
    return {};
  }
  Result<std::vector<std::string>> directory(xs_transaction_t t, std::string_view path) override {
    std::string p(path);
    unsigned int n = 0;
    char** v = xs_directory(h_, t, p.c_str(), &n);
    if (!v) return path_error("directory", p, errno);
    std::vector<std::string> out(v, v + n);
    std::free(v);
    return out;
  }
  Result<std::vector<XsPermission>> get_permissions(xs_transaction_t t,
                                                    std::string_view path) override {
    std::string p(path);
    unsigned int n = 0;
    struct xs_permissions* v = xs_get_permissions(h_, t, p.c_str(), &n);
    if (!v) return path_error("get_permissions", p, errno);
    std::vector<XsPermission> out;
    for (unsigned i = 0; i < n; ++i) {
      out.push_back(
          {static_cast<domid_t>(v[i].id), static_cast<XsPermission::Access>(v[i].perms & 3)});
    }
    std::free(v);
    return out;
  }
  Status set_permissions(xs_transaction_t t, std::string_view path,
                         std::span<const XsPermission> perms) override {
    std::string p(path);
    std::vector<struct xs_permissions> v;
    for (auto& x : perms)
      v.push_back({x.domid, static_cast<unsigned int>(x.access)});
    if (!xs_set_permissions(h_, t, p.c_str(), v.data(), static_cast<unsigned>(v.size()))) {
      return path_error("set_permissions", p, errno);
    }
    return {};
  }
  Result<xs_transaction_t> transaction_start() override {
    xs_transaction_t t = xs_transaction_start(h_);
    if (t == XBT_NULL) return lib_error("xs_transaction_start", errno);
    return t;
  }
  Status transaction_end(xs_transaction_t t, bool abort) override {
    if (!xs_transaction_end(h_, t, abort)) {
      int e = errno;
      if (e == EAGAIN) return make_error(EAGAIN, "xenstore transaction conflicted; retry");
      return lib_error("xs_transaction_end", e);
    }
    return {};
  }
  Status watch(std::string_view path, std::string_view token) override {
    std::string p(path), tk(token);
    if (!xs_watch(h_, p.c_str(), tk.c_str())) return path_error("watch", p, errno);
    return {};
  }
  Status unwatch(std::string_view path, std::string_view token) override {
    std::string p(path), tk(token);
    if (!xs_unwatch(h_, p.c_str(), tk.c_str())) return path_error("unwatch", p, errno);
    return {};
  }
  int watch_fd() const override { return xs_fileno(h_); }
  Result<std::optional<XsWatchEvent>> read_watch() override {
    char** v = xs_check_watch(h_);
    if (!v) {
      if (errno == EAGAIN || errno == 0) return std::optional<XsWatchEvent>();
      return lib_error("xs_check_watch", errno);
    }
    XsWatchEvent ev{v[XS_WATCH_PATH], v[XS_WATCH_TOKEN]};
    std::free(v);
    return std::optional<XsWatchEvent>(std::move(ev));
  }
  Result<std::string> domain_path(domid_t domid) override {
    char* p = xs_get_domain_path(h_, domid);
    if (!p) return lib_error("xs_get_domain_path", errno);
    std::string out(p);
    std::free(p);
    return out;
  }

 private:
  explicit XenXenStore(struct xs_handle* h) : h_(h) {}
  static Error path_error(const char* op, const std::string& path, int e) {
    if (!e) e = EIO;
    return make_error(e, format("xenstore %s %s: %s", op, path.c_str(), errno_string(e).c_str()));
  }
  struct xs_handle* h_;
};

// ---- the platform -------------------------------------------------------------------

class XenPlatform final : public Platform {
 public:
  explicit XenPlatform(domid_t self) : self_(self) {}
  std::string name() const override { return "xen"; }
  domid_t self_domid() const override { return self_; }
  Result<std::unique_ptr<GrantSharer>> open_grant_sharer() override {
    return XenGrantSharer::open();
  }
  Result<std::unique_ptr<GrantMapper>> open_grant_mapper() override {
    return XenGrantMapper::open();
  }
  Result<std::unique_ptr<EventChannel>> open_event_channel() override {
    return XenEventChannel::open();
  }
  Result<std::unique_ptr<XenStore>> open_xenstore() override { return XenXenStore::open(); }

 private:
  domid_t self_;
};

}  // namespace

Result<std::unique_ptr<Platform>> open_xen_platform() {
  struct stat st {};
  if (::stat("/dev/xen", &st) != 0) {
    return make_error(ENODEV,
                      "xen platform: /dev/xen does not exist: this is not a Xen guest, or "
                      "the xen-evtchn, xen-gntalloc and xen-gntdev modules are not loaded "
                      "(use backend=sim:PATH with xpv-netback to run without Xen)");
  }
  XPV_TRY(require_device("/dev/xen/evtchn", "xen-evtchn"));
  XPV_TRY(require_device("/dev/xen/gntalloc", "xen-gntalloc"));
  auto xs = XenXenStore::open();
  if (!xs) return xs.error();
  // Our own domain id: the "domid" key of our home in xenstore.
  auto id = (*xs)->read(kXsNoTransaction, "domid");
  if (!id)
    return make_error(id.error().code,
                      "xen platform: cannot read our domid: " + id.error().message);
  char* end = nullptr;
  unsigned long d = std::strtoul(id->c_str(), &end, 10);
  if (id->empty() || *end != '\0' || d >= 0x7FF0) {
    return make_error(
        EPROTO, format("xen platform: xenstore 'domid' is '%s', not a domain id", id->c_str()));
  }
  return std::unique_ptr<Platform>(new XenPlatform(static_cast<domid_t>(d)));
}

}  // namespace xpv
