// SPDX-License-Identifier: MIT
#include "sim/client.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "sim/in_process.h"
#include "sim/shared_tables.h"
#include "util/log.h"

namespace xpv::sim {
namespace {

constexpr int kReplyTimeoutMs = 30000;

// ---------------------------------------------------------------------------
// Watch event routing: every XenStore object of a domain gets its own queue,
// found by the prefix its watch tokens carry ("x<instance>/<token>").

struct WatchQueue {
  std::deque<XsWatchEvent> events;
  UniqueFd efd;  // readable while events is not empty
};

class Router {
 public:
  void add(uint32_t id, std::shared_ptr<WatchQueue> q) {
    std::lock_guard lk(mu_);
    queues_[id] = std::move(q);
  }
  void remove(uint32_t id) {
    std::lock_guard lk(mu_);
    queues_.erase(id);
  }
  void route(const Message& ev) {
    Reader rd(ev.payload);
    std::string path = rd.str();
    std::string token = rd.str();
    if (rd.failed() || token.size() < 3 || token[0] != 'x') return;
    size_t slash = token.find('/');
    if (slash == std::string::npos) return;
    uint32_t id = static_cast<uint32_t>(std::strtoul(token.c_str() + 1, nullptr, 10));
    std::lock_guard lk(mu_);
    auto it = queues_.find(id);
    if (it == queues_.end()) return;  // that XenStore object is gone
    bool was_empty = it->second->events.empty();
    it->second->events.push_back({std::move(path), token.substr(slash + 1)});
    if (was_empty) eventfd_signal(it->second->efd.get());
  }
  std::optional<XsWatchEvent> pop(WatchQueue& q) {
    std::lock_guard lk(mu_);
    if (q.events.empty()) return std::nullopt;
    XsWatchEvent e = std::move(q.events.front());
    q.events.pop_front();
    if (q.events.empty()) eventfd_drain(q.efd.get());
    return e;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint32_t, std::shared_ptr<WatchQueue>> queues_;
};

// ---------------------------------------------------------------------------
// Transports: how request messages reach the hypervisor (sim/in_process.h).

class SocketTransport final : public Transport {
 public:
  SocketTransport(UniqueFd sock, std::string path, std::shared_ptr<Router> router)
      : sock_(std::move(sock)), path_(std::move(path)), router_(std::move(router)) {}

  Result<Message> call(Message req) override {
    std::lock_guard lk(mu_);
    req.req_id = ++next_id_;
    const Op op = req.op;
    Status s = send_message(sock_.get(), req, /*nonblocking=*/false);
    if (s.failed()) return lost(s.error());
    for (;;) {
      pollfd p{sock_.get(), POLLIN, 0};
      int n = ::poll(&p, 1, kReplyTimeoutMs);
      if (n == 0) {
        return make_error(ETIMEDOUT, format("the simulated hypervisor at %s did not answer %s "
                                            "within %d s",
                                            path_.c_str(), op_name(op), kReplyTimeoutMs / 1000));
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        return make_error(errno, "poll on the simulated hypervisor socket: " + errno_string(errno));
      }
      auto m = recv_message(sock_.get(), /*nonblocking=*/true);
      if (!m) {
        if (m.error().code == EAGAIN) continue;
        return lost(m.error());
      }
      if (m->op == Op::kXsWatchEvent && m->req_id == 0) {
        router_->route(*m);
        continue;
      }
      if (m->req_id != req.req_id) {
        log_warn("sim: ignoring an unexpected reply %u to %s", m->req_id, op_name(m->op));
        continue;
      }
      return checked_reply(std::move(m));
    }
  }
  int readiness_fd() const override { return sock_.get(); }
  void pump() override {
    std::unique_lock lk(mu_, std::try_to_lock);
    if (!lk) return;  // a call in progress routes events itself
    for (;;) {
      auto m = recv_message(sock_.get(), /*nonblocking=*/true);
      if (!m) return;
      if (m->op == Op::kXsWatchEvent) router_->route(*m);
    }
  }

 private:
  Error lost(const Error& e) {
    return make_error(
        e.code == ECONNRESET || e.code == EPIPE ? ENOTCONN : e.code,
        format("lost the simulated hypervisor at %s: %s", path_.c_str(), e.message.c_str()));
  }
  UniqueFd sock_;
  std::string path_;
  std::shared_ptr<Router> router_;
  std::mutex mu_;
  uint32_t next_id_ = 0;
};

// ---------------------------------------------------------------------------
// The state every handle of one domain shares.

struct Core {
  std::string name;
  std::shared_ptr<Router> router = std::make_shared<Router>();
  std::unique_ptr<Transport> tr;
  InProcessGrants* grants = nullptr;  // in process only
  domid_t domid = 0;
  uint32_t npages = 0;
  uint32_t ngrants = 0;
  MappedRegion pages;
  MappedRegion gnttab;
  MappedRegion evtchn;

  // Guest memory and grant references are the domain's own to allocate.
  std::mutex alloc_mu;
  std::vector<uint8_t> frame_used;
  uint32_t frame_hint = 0;
  std::vector<grant_ref_t> free_refs;
  struct Deferred {
    grant_ref_t ref;
    uint32_t frame;
  };
  std::vector<Deferred> deferred;  // access not ended yet: the peer still maps

  // Other handles' doorbells, fetched once per handle (one request to the
  // hypervisor) for the notifications that follow.
  struct Bell {
    UniqueFd fd;
    uint32_t domid;  // the handle's domain: its ports are in that domain's table
  };
  std::mutex bell_mu;
  std::unordered_map<uint32_t, Bell> bells;

  std::atomic<uint32_t> next_instance{1};

  GrantEntry* entries() { return reinterpret_cast<GrantEntry*>(gnttab.data()); }
  PortSlot* slot(uint32_t dom, uint32_t port) { return port_slot(evtchn.data(), dom, port); }

  // gnttab_end_foreign_access_ref: succeeds only while the peer neither
  // reads nor writes the page (GTF_reading/GTF_writing clear).
  bool try_end_access(grant_ref_t ref) {
    auto w = grant_word_ref(entries()[ref]);
    uint32_t cur = w.load();
    for (;;) {
      if (cur & (kGtfReading | kGtfWriting)) return false;
      if (w.compare_exchange_weak(cur, 0)) return true;
    }
  }
  void free_frame_locked(uint32_t frame) {
    frame_used[frame] = 0;
    frame_hint = std::min(frame_hint, frame);
  }
  void reap_deferred_locked() {
    std::erase_if(deferred, [&](const Deferred& d) {
      if (!try_end_access(d.ref)) return false;
      free_refs.push_back(d.ref);
      free_frame_locked(d.frame);
      return true;
    });
  }

  // A handle closed since binds no port any more (handle ids are never
  // reused): its doorbell goes, so that a long-running backend holds one
  // descriptor per live peer handle, not one per frontend it ever notified.
  // On a miss only (a new peer handle), over the ports of the domains that
  // cached handles belong to.
  void drop_closed_bells_locked() {
    std::unordered_map<uint32_t, bool> bound;
    std::vector<uint32_t> domains;
    for (const auto& [id, b] : bells) {
      bound[id] = false;
      if (std::find(domains.begin(), domains.end(), b.domid) == domains.end())
        domains.push_back(b.domid);
    }
    for (uint32_t d : domains) {
      for (uint32_t p = 1; p < kPortsPerDomain; ++p) {
        PortSlot* s = slot(d, p);
        if (aref(s->state).load(std::memory_order_relaxed) == kPortFree) continue;
        auto it = bound.find(aref(s->handle_id).load(std::memory_order_relaxed));
        if (it != bound.end()) it->second = true;
      }
    }
    std::erase_if(bells, [&](const auto& kv) { return !bound[kv.first]; });
  }

  Result<int> doorbell(uint32_t handle_id, uint32_t domid) {
    std::lock_guard lk(bell_mu);
    auto it = bells.find(handle_id);
    if (it != bells.end()) return it->second.fd.get();
    if (!bells.empty()) drop_closed_bells_locked();
    Message req(Op::kEvtchnDoorbell);
    req.u32(handle_id);
    auto r = tr->call(std::move(req));
    if (!r) return r.error();
    if (r->fds.size() != 1) return make_error(EPROTO, "doorbell reply without an fd");
    int fd = r->fds[0].get();
    bells[handle_id] = Bell{std::move(r->fds[0]), domid};
    return fd;
  }
};

// ---------------------------------------------------------------------------
// Grant sharing: the domain writes its own grant table entries.

class SimGrantSharer final : public GrantSharer {
 public:
  explicit SimGrantSharer(std::shared_ptr<Core> c) : core_(std::move(c)) {}

  Result<SharedPages> share(domid_t domid, uint32_t count, bool writable) override {
    if (count == 0) return make_error(EINVAL, "cannot share zero pages");
    if (domid >= kMaxDomains) {
      return make_error(EINVAL, format("cannot grant to domain %u: no such domain", domid));
    }
    Core& c = *core_;
    std::lock_guard lk(c.alloc_mu);
    c.reap_deferred_locked();
    if (c.free_refs.size() < count) {
      return make_error(ENOSPC, format("grant table full: %u grants asked, %zu free of %u", count,
                                       c.free_refs.size(), c.ngrants - kFirstGrantRef));
    }
    // First fit of `count` contiguous free frames.
    uint32_t run = 0, start = 0;
    bool found = false;
    for (uint32_t f = c.frame_hint; f < c.npages; ++f) {
      if (c.frame_used[f]) {
        run = 0;
        continue;
      }
      if (run++ == 0) start = f;
      if (run == count) {
        found = true;
        break;
      }
    }
    if (!found) {
      return make_error(ENOMEM, format("simulated guest memory exhausted: no %u contiguous free "
                                       "pages of %u",
                                       count, c.npages));
    }
    std::vector<grant_ref_t> refs(count);
    uint8_t* base = c.pages.data() + size_t{start} * kPageSize;
    std::memset(base, 0, size_t{count} * kPageSize);
    const uint16_t flags = kGtfPermitAccess | (writable ? 0 : kGtfReadonly);
    for (uint32_t i = 0; i < count; ++i) {
      c.frame_used[start + i] = 1;
      grant_ref_t ref = c.free_refs.back();
      c.free_refs.pop_back();
      refs[i] = ref;
      GrantEntry& e = c.entries()[ref];
      std::atomic_ref<uint32_t>(e.frame).store(start + i, std::memory_order_relaxed);
      // The frame is written before the flags that make the entry valid
      // (Linux: "wmb(); shared[ref].flags = flags").
      grant_word_ref(e).store(grant_word(flags, domid), std::memory_order_release);
    }
    if (start == c.frame_hint) c.frame_hint = start + count;
    return SharedPages(this, base, std::move(refs), domid, writable);
  }

 protected:
  EndAccessReport unshare(void* addr, std::span<const grant_ref_t> refs) override {
    Core& c = *core_;
    EndAccessReport rep;
    rep.pages = static_cast<uint32_t>(refs.size());
    std::lock_guard lk(c.alloc_mu);
    uint32_t frame0 =
        static_cast<uint32_t>((static_cast<uint8_t*>(addr) - c.pages.data()) / kPageSize);
    for (size_t i = 0; i < refs.size(); ++i) {
      const uint32_t frame = frame0 + static_cast<uint32_t>(i);
      if (c.try_end_access(refs[i])) {
        c.free_refs.push_back(refs[i]);
        c.free_frame_locked(frame);
        ++rep.ended;
      } else {
        // The peer still maps the page: it must not be reused. Keep it and
        // end access once the peer lets go (as Linux's deferred list does).
        c.deferred.push_back({refs[i], frame});
        ++rep.still_mapped;
      }
    }
    c.reap_deferred_locked();
    return rep;
  }

 private:
  std::shared_ptr<Core> core_;
};

// ---------------------------------------------------------------------------
// Grant map and copy: only where the hypervisor lives (the backend process).

class SimGrantMapper final : public GrantMapper {
 public:
  explicit SimGrantMapper(std::shared_ptr<Core> c) : core_(std::move(c)) {}
  Result<GrantMapping> map(domid_t domid, grant_ref_t ref, bool writable) override {
    uint8_t* addr = nullptr;
    uint64_t h = 0;
    int16_t st = core_->grants->map_grant(core_->domid, domid, ref, writable, &addr, &h);
    if (st != kGntOkay) {
      return make_error(st == kGntBadDomain ? ESRCH : EPERM,
                        format("mapping grant %u of domain %u failed: GNTST %d", ref, domid, st));
    }
    return GrantMapping(this, addr, h);
  }
  Status copy(std::span<GrantCopyOp> ops) override {
    core_->grants->copy(core_->domid, ops);
    return {};
  }

 protected:
  void unmap(void*, uint64_t handle) override { core_->grants->unmap_grant(handle); }

 private:
  std::shared_ptr<Core> core_;
};

// ---------------------------------------------------------------------------
// Event channels: one doorbell eventfd per handle; pending/mask in the shared
// table, flipped as Xen's 2-level ABI does.

class SimEventChannel final : public EventChannel {
 public:
  static Result<std::unique_ptr<EventChannel>> open(std::shared_ptr<Core> c) {
    auto bell = make_eventfd();
    if (!bell) return bell.error();
    auto d = bell->dup();
    if (!d) return d.error();
    Message req(Op::kEvtchnOpenHandle);
    req.fds.push_back(std::move(*d));
    auto r = c->tr->call(std::move(req));
    if (!r) return r.error();
    Reader rd(r->payload);
    uint32_t id = rd.u32();
    if (rd.failed()) return make_error(EPROTO, "malformed evtchn-open reply");
    return std::unique_ptr<EventChannel>(new SimEventChannel(std::move(c), std::move(*bell), id));
  }
  ~SimEventChannel() override {
    Message req(Op::kEvtchnCloseHandle);
    req.u32(id_);
    (void)core_->tr->call(std::move(req));
  }

  int fd() const override { return bell_.get(); }

  Result<evtchn_port_t> alloc_unbound(domid_t remote) override {
    Message req(Op::kEvtchnAllocUnbound);
    req.u32(id_).u16(remote);
    return bind_reply(core_->tr->call(std::move(req)));
  }
  Result<evtchn_port_t> bind_interdomain(domid_t remote, evtchn_port_t remote_port) override {
    Message req(Op::kEvtchnBindInterdomain);
    req.u32(id_).u16(remote).u32(remote_port);
    return bind_reply(core_->tr->call(std::move(req)));
  }
  Status unbind(evtchn_port_t port) override {
    Message req(Op::kEvtchnUnbind);
    req.u32(id_).u32(port);
    auto r = core_->tr->call(std::move(req));
    if (!r) return r.error();
    std::lock_guard lk(mu_);
    std::erase(ports_, port);
    std::erase(ready_, port);
    return {};
  }

  Status notify(evtchn_port_t port) override {
    if (!owned(port)) return not_ours(port);
    Core& c = *core_;
    PortSlot* s = c.slot(c.domid, port);
    if (aref(s->state).load(std::memory_order_acquire) != kPortInterdomain) {
      return {};  // unbound: Xen drops the notification
    }
    const uint32_t rd = aref(s->remote_dom).load(std::memory_order_relaxed);
    const uint32_t rp = aref(s->remote_port).load(std::memory_order_relaxed);
    if (rd >= kMaxDomains || rp >= kPortsPerDomain) return {};
    PortSlot* r = c.slot(rd, rp);
    if (aref(r->state).load(std::memory_order_acquire) != kPortInterdomain ||
        aref(r->remote_dom).load() != c.domid || aref(r->remote_port).load() != port) {
      return {};  // the peer closed its end meanwhile
    }
    // evtchn_set_pending: an already pending event is not raised twice; a
    // masked port stays pending until unmasked. A store-then-load handshake
    // with unmask() (set pending, read masked / clear masked, read pending):
    // at least one side must see the other's store, or the event is lost.
    // The fence makes that explicit (DMB ISH on arm64): seq_cst accesses
    // alone order it in C++, but qemu-user runs an arm64 STLR followed by
    // an LDAR with no barrier between the store and the load, so on an x86
    // host both sides could miss each other: a TX ring stuck with 256
    // requests in about one netfront test run in 13 of the arm64-unit
    // suite (EvtchnFixture.NoEventLostWhenNotifyRacesTheUnmask shows it).
    const uint32_t was_pending = aref(r->pending).exchange(1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (was_pending == 0 && aref(r->masked).load() == 0) {
      auto fd = c.doorbell(aref(r->handle_id).load(), rd);
      if (!fd) return fd.error();
      eventfd_signal(*fd);
    }
    return {};
  }

  Result<std::optional<evtchn_port_t>> pending() override {
    eventfd_drain(bell_.get());
    Core& c = *core_;
    std::lock_guard lk(mu_);
    if (ready_.empty()) {
      for (uint32_t p : ports_) {
        PortSlot* s = c.slot(c.domid, p);
        if (aref(s->pending).load() && !aref(s->masked).load()) {
          // Delivered: masked until the handler's unmask (the late EOI).
          aref(s->masked).store(1);
          if (aref(s->pending).exchange(0)) {
            ready_.push_back(p);
          } else {
            aref(s->masked).store(0);
          }
        }
      }
    }
    if (ready_.empty()) return std::optional<evtchn_port_t>();
    evtchn_port_t p = ready_.front();
    ready_.pop_front();
    return std::optional<evtchn_port_t>(p);
  }

  Status unmask(evtchn_port_t port) override {
    if (!owned(port)) return not_ours(port);
    PortSlot* s = core_->slot(core_->domid, port);
    aref(s->masked).store(0);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // notify()'s handshake
    // An event that arrived while masked stayed pending without ringing:
    // deliver it now (evtchn_unmask's "if pending, raise").
    if (aref(s->pending).load()) eventfd_signal(bell_.get());
    return {};
  }

 private:
  SimEventChannel(std::shared_ptr<Core> c, UniqueFd bell, uint32_t id)
      : core_(std::move(c)), bell_(std::move(bell)), id_(id) {}

  bool owned(evtchn_port_t port) const {
    if (port == 0 || port >= kPortsPerDomain) return false;
    return aref(core_->slot(core_->domid, port)->handle_id).load(std::memory_order_relaxed) == id_;
  }
  Status not_ours(evtchn_port_t port) const {
    return make_error(EINVAL, format("event channel port %u is not bound by this handle", port));
  }
  Result<evtchn_port_t> bind_reply(Result<Message> r) {
    if (!r) return r.error();
    Reader rd(r->payload);
    uint32_t port = rd.u32();
    if (rd.failed()) return make_error(EPROTO, "malformed event channel reply");
    std::lock_guard lk(mu_);
    ports_.push_back(port);
    return port;
  }

  std::shared_ptr<Core> core_;
  UniqueFd bell_;
  uint32_t id_;
  std::mutex mu_;
  std::vector<uint32_t> ports_;
  std::deque<uint32_t> ready_;
};

// ---------------------------------------------------------------------------
// Xenstore requests.

class SimXenStore final : public XenStore {
 public:
  static Result<std::unique_ptr<XenStore>> open(std::shared_ptr<Core> c) {
    auto q = std::make_shared<WatchQueue>();
    auto efd = make_eventfd();
    if (!efd) return efd.error();
    q->efd = std::move(*efd);
    auto epfd = make_epoll();
    if (!epfd) return epfd.error();
    XPV_TRY(epoll_add(epfd->get(), q->efd.get()));
    if (int rfd = c->tr->readiness_fd(); rfd >= 0) XPV_TRY(epoll_add(epfd->get(), rfd));
    uint32_t id = c->next_instance++;
    c->router->add(id, q);
    return std::unique_ptr<XenStore>(
        new SimXenStore(std::move(c), std::move(q), std::move(*epfd), id));
  }
  ~SimXenStore() override {
    for (auto& [path, token] : watches_) {
      Message req(Op::kXsUnwatch);
      req.str(path).str(prefix() + token);
      (void)core_->tr->call(std::move(req));
    }
    core_->router->remove(id_);
  }

  Result<std::string> read(xs_transaction_t t, std::string_view path) override {
    Message req(Op::kXsRead);
    req.tx_id = t;
    req.str(path);
    auto r = core_->tr->call(std::move(req));
    if (!r) return r.error();
    return std::move(r->payload);
  }
  Status write(xs_transaction_t t, std::string_view path, std::string_view value) override {
    Message req(Op::kXsWrite);
    req.tx_id = t;
    req.str(path).str(value);
    return core_->tr->call(std::move(req)).status();
  }
  Status mkdir(xs_transaction_t t, std::string_view path) override {
    Message req(Op::kXsMkdir);
    req.tx_id = t;
    req.str(path);
    return core_->tr->call(std::move(req)).status();
  }
  Status rm(xs_transaction_t t, std::string_view path) override {
    Message req(Op::kXsRm);
    req.tx_id = t;
    req.str(path);
    return core_->tr->call(std::move(req)).status();
  }
  Result<std::vector<std::string>> directory(xs_transaction_t t, std::string_view path) override {
    Message req(Op::kXsDirectory);
    req.tx_id = t;
    req.str(path);
    auto r = core_->tr->call(std::move(req));
    if (!r) return r.error();
    Reader rd(r->payload);
    uint32_t n = rd.u32();
    std::vector<std::string> out;
    for (uint32_t i = 0; i < n && !rd.failed(); ++i)
      out.push_back(rd.str());
    if (rd.failed()) return make_error(EPROTO, "malformed directory reply");
    return out;
  }
  Result<std::vector<XsPermission>> get_permissions(xs_transaction_t t,
                                                    std::string_view path) override {
    Message req(Op::kXsGetPerms);
    req.tx_id = t;
    req.str(path);
    auto r = core_->tr->call(std::move(req));
    if (!r) return r.error();
    Reader rd(r->payload);
    uint32_t n = rd.u32();
    std::vector<XsPermission> out;
    for (uint32_t i = 0; i < n && !rd.failed(); ++i) {
      XsPermission p;
      p.domid = rd.u16();
      p.access = static_cast<XsPermission::Access>(rd.u8() & 3);
      out.push_back(p);
    }
    if (rd.failed()) return make_error(EPROTO, "malformed permissions reply");
    return out;
  }
  Status set_permissions(xs_transaction_t t, std::string_view path,
                         std::span<const XsPermission> perms) override {
    Message req(Op::kXsSetPerms);
    req.tx_id = t;
    req.str(path).u32(static_cast<uint32_t>(perms.size()));
    for (auto& p : perms)
      req.u16(p.domid).u8(p.access);
    return core_->tr->call(std::move(req)).status();
  }
  Result<xs_transaction_t> transaction_start() override {
    auto r = core_->tr->call(Message(Op::kXsTransactionStart));
    if (!r) return r.error();
    Reader rd(r->payload);
    uint32_t id = rd.u32();
    if (rd.failed()) return make_error(EPROTO, "malformed transaction reply");
    return id;
  }
  Status transaction_end(xs_transaction_t t, bool abort) override {
    Message req(Op::kXsTransactionEnd);
    req.tx_id = t;
    req.u8(abort ? 1 : 0);
    return core_->tr->call(std::move(req)).status();
  }
  Status watch(std::string_view path, std::string_view token) override {
    Message req(Op::kXsWatch);
    req.str(path).str(prefix() + std::string(token));
    Status s = core_->tr->call(std::move(req)).status();
    if (s) watches_.emplace_back(std::string(path), std::string(token));
    return s;
  }
  Status unwatch(std::string_view path, std::string_view token) override {
    Message req(Op::kXsUnwatch);
    req.str(path).str(prefix() + std::string(token));
    Status s = core_->tr->call(std::move(req)).status();
    std::erase_if(watches_, [&](auto& w) { return w.first == path && w.second == token; });
    return s;
  }
  int watch_fd() const override { return epfd_.get(); }
  Result<std::optional<XsWatchEvent>> read_watch() override {
    core_->tr->pump();
    return core_->router->pop(*q_);
  }
  Result<std::string> domain_path(domid_t domid) override {
    Message req(Op::kXsDomainPath);
    req.u16(domid);
    auto r = core_->tr->call(std::move(req));
    if (!r) return r.error();
    return std::move(r->payload);
  }

 private:
  SimXenStore(std::shared_ptr<Core> c, std::shared_ptr<WatchQueue> q, UniqueFd epfd, uint32_t id)
      : core_(std::move(c)), q_(std::move(q)), epfd_(std::move(epfd)), id_(id) {}
  std::string prefix() const { return format("x%u/", id_); }

  std::shared_ptr<Core> core_;
  std::shared_ptr<WatchQueue> q_;
  UniqueFd epfd_;
  uint32_t id_;
  std::vector<std::pair<std::string, std::string>> watches_;
};

// ---------------------------------------------------------------------------

class SimPlatform final : public Platform {
 public:
  explicit SimPlatform(std::shared_ptr<Core> c) : core_(std::move(c)) {}
  std::string name() const override { return core_->name; }
  domid_t self_domid() const override { return core_->domid; }
  Result<std::unique_ptr<GrantSharer>> open_grant_sharer() override {
    return std::unique_ptr<GrantSharer>(new SimGrantSharer(core_));
  }
  Result<std::unique_ptr<GrantMapper>> open_grant_mapper() override {
    if (!core_->grants) {
      return make_error(ENOTSUP,
                        "grant map and copy are offered to the process that owns the "
                        "simulated hypervisor (the backend), not over its socket");
    }
    return std::unique_ptr<GrantMapper>(new SimGrantMapper(core_));
  }
  Result<std::unique_ptr<EventChannel>> open_event_channel() override {
    return SimEventChannel::open(core_);
  }
  Result<std::unique_ptr<XenStore>> open_xenstore() override { return SimXenStore::open(core_); }

  size_t forget_doorbells() {
    std::lock_guard lk(core_->bell_mu);
    const size_t n = core_->bells.size();
    core_->bells.clear();
    return n;
  }

 private:
  std::shared_ptr<Core> core_;
};

// Completes a Core after its transport exists: hello, then map the shared tables.
Result<std::unique_ptr<Platform>> finish(std::shared_ptr<Core> c) {
  auto r = c->tr->call(Message(Op::kHello));
  if (!r) return r.error();
  Reader rd(r->payload);
  c->domid = rd.u16();
  c->npages = rd.u32();
  c->ngrants = rd.u32();
  if (rd.failed() || r->fds.size() != 3 || c->ngrants <= kFirstGrantRef) {
    return make_error(EPROTO, "malformed hello reply from the simulated hypervisor");
  }
  auto pages = MappedRegion::map_shared(r->fds[0].get(), size_t{c->npages} * kPageSize);
  if (!pages) return pages.error();
  auto gt = MappedRegion::map_shared(r->fds[1].get(), size_t{c->ngrants} * sizeof(GrantEntry));
  if (!gt) return gt.error();
  auto ev = MappedRegion::map_shared(r->fds[2].get(), kEvtchnTableBytes);
  if (!ev) return ev.error();
  c->pages = std::move(*pages);
  c->gnttab = std::move(*gt);
  c->evtchn = std::move(*ev);
  c->frame_used.assign(c->npages, 0);
  for (grant_ref_t g = c->ngrants; g-- > kFirstGrantRef;)
    c->free_refs.push_back(g);
  return std::unique_ptr<Platform>(new SimPlatform(std::move(c)));
}

}  // namespace

Result<std::unique_ptr<Platform>> connect_platform(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    return make_error(ENAMETOOLONG,
                      format("sim socket path '%s' is empty or too long", path.c_str()));
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(errno, "socket(AF_UNIX): " + errno_string(errno));
  UniqueFd sock(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    return make_error(e, format("cannot connect to the simulated hypervisor at %s: %s (is "
                                "xpv-netback running?)",
                                path.c_str(), errno_string(e).c_str()));
  }
  auto c = std::make_shared<Core>();
  c->name = "sim:" + path;
  c->tr = std::make_unique<SocketTransport>(std::move(sock), path, c->router);
  return finish(std::move(c));
}

Result<std::unique_ptr<Platform>> in_process_platform(InProcessLink link) {
  auto c = std::make_shared<Core>();
  c->grants = link.grants;
  std::weak_ptr<Router> router = c->router;
  auto route = [router](const Message& m) {
    if (auto r = router.lock()) r->route(m);
  };
  auto tr = link.open(std::move(route), &c->name);
  if (!tr) return tr.error();
  c->tr = std::move(*tr);
  return finish(std::move(c));
}

size_t forget_doorbells(Platform& p) {
  auto* s = dynamic_cast<SimPlatform*>(&p);
  return s ? s->forget_doorbells() : 0;
}

}  // namespace xpv::sim
