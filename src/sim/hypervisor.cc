// SPDX-License-Identifier: MIT
#include "sim/hypervisor.h"

#include "util/cpu.h"

#include <xen/xen.h>
#include <xen/grant_table.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

namespace xpv::sim {

// Our shared-table constants are Xen's.
static_assert(kGtfPermitAccess == GTF_permit_access && kGtfTypeMask == GTF_type_mask);
static_assert(kGtfReadonly == GTF_readonly && kGtfReading == GTF_reading &&
              kGtfWriting == GTF_writing);
static_assert(kGntOkay == GNTST_okay && kGntGeneralError == GNTST_general_error &&
              kGntBadDomain == GNTST_bad_domain && kGntBadGntref == GNTST_bad_gntref &&
              kGntBadHandle == GNTST_bad_handle &&
              kGntPermissionDenied == GNTST_permission_denied && kGntBadPage == GNTST_bad_page &&
              kGntBadCopyArg == GNTST_bad_copy_arg);
static_assert(sizeof(GrantEntry) == sizeof(grant_entry_v1_t));
static_assert(kFirstGrantRef == GNTTAB_NR_RESERVED_ENTRIES);

namespace {
// The lock of a few active grant entries. Held for a handful of instructions
// (a pin count and a flag word), so a spinlock like Xen's own active-entry
// lock: a mutex's lock and unlock cost more than the section they guard, and
// every grant copy takes two. Yields the core after a while (the holder may
// be descheduled on a busy machine).
class PinLock {
 public:
  void lock() {
    for (uint32_t spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();
          spins = 0;
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};
}  // namespace

struct Hypervisor::Domain {
  domid_t id = 0;
  std::atomic<bool> alive{true};
  UniqueFd pages_fd;
  UniqueFd gnttab_fd;
  MappedRegion pages;
  MappedRegion gnttab;
  // Xen's "active grant table": pin counts the hypervisor keeps privately,
  // each guarded by one of a few striped locks (Xen: the active entry's
  // lock), so that grant copies of different queues do not serialise on the
  // hypervisor's control mutex.
  std::vector<uint32_t> readers;
  std::vector<uint32_t> writers;
  std::array<PinLock, 64> pin_locks;
  uint32_t maps = 0;  // live GrantMappings of this domain's pages (under mu_)

  PinLock& pin_lock(grant_ref_t ref) { return pin_locks[ref % pin_locks.size()]; }

  GrantEntry* entries() { return reinterpret_cast<GrantEntry*>(gnttab.data()); }
  uint32_t nr_grants() const { return static_cast<uint32_t>(readers.size()); }
};

struct Hypervisor::Handle {
  uint32_t id = 0;
  domid_t domid = 0;
  uint32_t conn_id = 0;
  UniqueFd doorbell;
  std::vector<uint32_t> ports;
};

struct Hypervisor::Mapping {
  std::shared_ptr<Domain> dom;
  grant_ref_t ref = 0;
  bool writable = false;
};

Hypervisor::Hypervisor(HypervisorConfig cfg) : cfg_(cfg) {}

Hypervisor::~Hypervisor() = default;

Result<std::unique_ptr<Hypervisor>> Hypervisor::create(HypervisorConfig cfg) {
  if (cfg.pages_per_domain == 0 || cfg.grants_per_domain <= kFirstGrantRef) {
    return make_error(EINVAL,
                      "simulated hypervisor: pages_per_domain and grants_per_domain "
                      "must be positive (grants > 8)");
  }
  std::unique_ptr<Hypervisor> hv(new Hypervisor(cfg));
  auto fd = make_memfd("xpv-sim-evtchn", kEvtchnTableBytes);
  if (!fd) return fd.error();
  auto map = MappedRegion::map_shared(fd->get(), kEvtchnTableBytes);
  if (!map) return map.error();
  hv->evtchn_fd_ = std::move(*fd);
  hv->evtchn_map_ = std::move(*map);
  hv->xs_ = std::make_unique<XenstoreEngine>(
      [h = hv.get()](XenstoreEngine::ConnId c, const std::string& path, const std::string& token) {
        // Called with mu_ held, from inside an engine call.
        auto it = h->xs_conns_.find(c);
        if (it == h->xs_conns_.end() || !it->second->sink_) return;
        Message ev(Op::kXsWatchEvent);
        ev.str(path).str(token);
        it->second->sink_(std::move(ev));
      });
  // Dom0 exists from the start.
  std::lock_guard lk(hv->mu_);
  auto d0 = std::make_shared<Domain>();
  d0->id = kDom0;
  auto pf = make_memfd("xpv-sim-dom0-pages", size_t{cfg.pages_per_domain} * kPageSize);
  if (!pf) return pf.error();
  auto gf = make_memfd("xpv-sim-dom0-gnttab", size_t{cfg.grants_per_domain} * sizeof(GrantEntry));
  if (!gf) return gf.error();
  auto pm = MappedRegion::map_shared(pf->get(), size_t{cfg.pages_per_domain} * kPageSize);
  if (!pm) return pm.error();
  auto gm = MappedRegion::map_shared(gf->get(), size_t{cfg.grants_per_domain} * sizeof(GrantEntry));
  if (!gm) return gm.error();
  d0->pages_fd = std::move(*pf);
  d0->gnttab_fd = std::move(*gf);
  d0->pages = std::move(*pm);
  d0->gnttab = std::move(*gm);
  d0->readers.assign(cfg.grants_per_domain, 0);
  d0->writers.assign(cfg.grants_per_domain, 0);
  hv->domains_[kDom0] = std::move(d0);
  hv->xs_->introduce_domain(kDom0);
  return hv;
}

Hypervisor::Domain* Hypervisor::live_domain_locked(domid_t d) {
  auto it = domains_.find(d);
  return it == domains_.end() ? nullptr : it->second.get();
}

Result<std::shared_ptr<Hypervisor::Connection>> Hypervisor::connect_dom0(EventSink sink) {
  std::lock_guard lk(mu_);
  return connect_locked(kDom0, std::move(sink));
}

Result<std::shared_ptr<Hypervisor::Connection>> Hypervisor::connect_domain(EventSink sink) {
  std::lock_guard lk(mu_);
  return connect_locked(std::nullopt, std::move(sink));
}

Result<std::shared_ptr<Hypervisor::Connection>> Hypervisor::connect_locked(
    std::optional<domid_t> want, EventSink sink) {
  domid_t d = kDom0;
  if (!want) {
    // A new guest: the next free domid, as Xen hands them out (increasing,
    // wrapping, never one that is alive or still has mapped pages).
    bool found = false;
    for (uint32_t i = 0; i < kMaxDomains - 1 && !found; ++i) {
      domid_t cand = next_domid_;
      next_domid_ = static_cast<domid_t>(next_domid_ + 1u >= kMaxDomains ? 1 : next_domid_ + 1);
      bool zombie = false;
      for (auto& z : zombies_)
        zombie |= z->id == cand;
      if (!domains_.count(cand) && !zombie) {
        d = cand;
        found = true;
      }
    }
    if (!found) {
      return make_error(
          ENOSPC, format("simulated hypervisor: all %u domain ids are in use", kMaxDomains - 1));
    }
    auto dom = std::make_shared<Domain>();
    dom->id = d;
    std::string n = format("xpv-sim-dom%u-pages", d);
    auto pf = make_memfd(n.c_str(), size_t{cfg_.pages_per_domain} * kPageSize);
    if (!pf) return pf.error();
    n = format("xpv-sim-dom%u-gnttab", d);
    auto gf = make_memfd(n.c_str(), size_t{cfg_.grants_per_domain} * sizeof(GrantEntry));
    if (!gf) return gf.error();
    auto pm = MappedRegion::map_shared(pf->get(), size_t{cfg_.pages_per_domain} * kPageSize);
    if (!pm) return pm.error();
    auto gm =
        MappedRegion::map_shared(gf->get(), size_t{cfg_.grants_per_domain} * sizeof(GrantEntry));
    if (!gm) return gm.error();
    dom->pages_fd = std::move(*pf);
    dom->gnttab_fd = std::move(*gf);
    dom->pages = std::move(*pm);
    dom->gnttab = std::move(*gm);
    dom->readers.assign(cfg_.grants_per_domain, 0);
    dom->writers.assign(cfg_.grants_per_domain, 0);
    // The domain's event channel ports start out free.
    for (uint32_t p = 0; p < kPortsPerDomain; ++p) {
      PortSlot* s = port_slot(evtchn_table(), d, p);
      std::memset(s, 0, sizeof *s);
    }
    domains_[d] = std::move(dom);
  }
  auto c = std::shared_ptr<Connection>(new Connection());
  c->domid_ = d;
  c->id_ = next_conn_++;
  c->sink_ = std::move(sink);
  xs_conns_[c->id_] = c.get();
  xs_->add_connection(c->id_, d);
  if (want != kDom0) xs_->introduce_domain(d);
  return c;
}

void Hypervisor::disconnect(Connection& c) {
  std::lock_guard lk(mu_);
  if (!c.alive_) return;
  c.alive_ = false;
  for (uint32_t h : c.handles_) {
    auto it = handles_.find(h);
    if (it == handles_.end()) continue;
    for (uint32_t p : it->second->ports)
      close_port_locked(it->second->domid, p);
    handles_.erase(it);
  }
  c.handles_.clear();
  xs_->remove_connection(c.id_);
  xs_conns_.erase(c.id_);
  if (c.domid_ != kDom0) destroy_domain_locked(c.domid_);
}

void Hypervisor::destroy_domain_locked(domid_t d) {
  auto it = domains_.find(d);
  if (it == domains_.end()) return;
  std::shared_ptr<Domain> dom = it->second;
  domains_.erase(it);
  dom->alive = false;
  // Close every port the domain still has (the peers' ends become unbound).
  for (uint32_t p = 1; p < kPortsPerDomain; ++p) {
    if (aref(port_slot(evtchn_table(), d, p)->state).load() != kPortFree) close_port_locked(d, p);
  }
  for (auto h = handles_.begin(); h != handles_.end();) {
    h = h->second->domid == d ? handles_.erase(h) : std::next(h);
  }
  // Revoke every grant that is not in use; an entry a peer still maps (or
  // copies from right now) stays pinned until released (Xen keeps such pages
  // alive too).
  GrantEntry* e = dom->entries();
  for (uint32_t r = 0; r < dom->nr_grants(); ++r) {
    std::lock_guard pl(dom->pin_lock(r));
    if (dom->readers[r] == 0 && dom->writers[r] == 0) {
      grant_word_ref(e[r]).store(0);
      e[r].frame = 0;
    }
  }
  if (dom->maps > 0) zombies_.push_back(dom);
  xs_->release_domain(d);
}

// ---------------------------------------------------------------------------
// Event channels.

void Hypervisor::close_port_locked(domid_t d, uint32_t port) {
  PortSlot* s = port_slot(evtchn_table(), d, port);
  uint32_t st = aref(s->state).load(std::memory_order_acquire);
  if (st == kPortInterdomain) {
    // Xen's evtchn_close: the peer's port goes back to "unbound, waiting for
    // the same remote domain".
    uint32_t rd = s->remote_dom, rp = s->remote_port;
    if (rd < kMaxDomains && rp < kPortsPerDomain) {
      PortSlot* r = port_slot(evtchn_table(), rd, rp);
      if (aref(r->state).load() == kPortInterdomain && r->remote_dom == d &&
          r->remote_port == port) {
        r->remote_port = 0;
        aref(r->generation).fetch_add(1);
        aref(r->state).store(kPortUnbound, std::memory_order_release);
      }
    }
  }
  auto h = handles_.find(s->handle_id);
  if (h != handles_.end()) std::erase(h->second->ports, port);
  aref(s->state).store(kPortFree, std::memory_order_release);
  s->handle_id = 0;
  s->remote_dom = 0;
  s->remote_port = 0;
  aref(s->pending).store(0);
  aref(s->masked).store(0);
  aref(s->generation).fetch_add(1);
}

static Result<uint32_t> find_free_port(void* table, domid_t d) {
  // Port 0 is never used, as in Xen.
  for (uint32_t p = 1; p < kPortsPerDomain; ++p) {
    if (aref(port_slot(table, d, p)->state).load() == kPortFree) return p;
  }
  return make_error(ENOSPC, format("domain %u has no free event channel port (limit %u)", d,
                                   kPortsPerDomain - 1));
}

Message Hypervisor::do_evtchn(Connection& c, const Message& req) {
  Reader rd(req.payload);
  const domid_t self = c.domid_;
  auto own_handle = [&](uint32_t hid) -> Handle* {
    auto it = handles_.find(hid);
    if (it == handles_.end() || it->second->conn_id != c.id_) return nullptr;
    return it->second.get();
  };
  switch (req.op) {
    case Op::kEvtchnOpenHandle: {
      if (req.fds.size() != 1) return error_reply(req, EINVAL, "evtchn-open needs one eventfd");
      auto h = std::make_unique<Handle>();
      h->id = next_handle_++;
      h->domid = self;
      h->conn_id = c.id_;
      auto d = req.fds[0].dup();
      if (!d) return error_reply(req, d.error().code, d.error().message);
      h->doorbell = std::move(*d);
      Message r = ok_reply(req);
      r.u32(h->id);
      c.handles_.push_back(h->id);
      handles_[h->id] = std::move(h);
      return r;
    }
    case Op::kEvtchnCloseHandle: {
      uint32_t hid = rd.u32();
      Handle* h = own_handle(hid);
      if (rd.failed() || !h)
        return error_reply(req, EBADF, format("no event channel handle %u", hid));
      auto ports = h->ports;
      for (uint32_t p : ports)
        close_port_locked(self, p);
      handles_.erase(hid);
      std::erase(c.handles_, hid);
      return ok_reply(req);
    }
    case Op::kEvtchnAllocUnbound: {
      uint32_t hid = rd.u32();
      domid_t remote = rd.u16();
      Handle* h = own_handle(hid);
      if (rd.failed() || !h)
        return error_reply(req, EBADF, format("no event channel handle %u", hid));
      if (remote == kDomidSelf) remote = self;
      if (remote >= kMaxDomains) {
        return error_reply(req, ESRCH, format("alloc_unbound: no domain %u", remote));
      }
      auto port = find_free_port(evtchn_table(), self);
      if (!port) return error_reply(req, port.error().code, port.error().message);
      PortSlot* s = port_slot(evtchn_table(), self, *port);
      s->remote_dom = remote;
      s->remote_port = 0;
      s->handle_id = hid;
      aref(s->pending).store(0);
      aref(s->masked).store(0);
      aref(s->generation).fetch_add(1);
      aref(s->state).store(kPortUnbound, std::memory_order_release);
      h->ports.push_back(*port);
      Message r = ok_reply(req);
      r.u32(*port);
      return r;
    }
    case Op::kEvtchnBindInterdomain: {
      uint32_t hid = rd.u32();
      domid_t remote = rd.u16();
      uint32_t rport = rd.u32();
      Handle* h = own_handle(hid);
      if (rd.failed() || !h)
        return error_reply(req, EBADF, format("no event channel handle %u", hid));
      if (remote == kDomidSelf) remote = self;
      if (!live_domain_locked(remote)) {
        return error_reply(req, ESRCH, format("bind_interdomain: no domain %u", remote));
      }
      if (rport == 0 || rport >= kPortsPerDomain) {
        return error_reply(req, EINVAL,
                           format("bind_interdomain: port %u of domain %u is out of "
                                  "range",
                                  rport, remote));
      }
      PortSlot* r = port_slot(evtchn_table(), remote, rport);
      // Xen's evtchn_bind_interdomain: the remote port must be unbound and
      // waiting for us.
      if (aref(r->state).load() != kPortUnbound || r->remote_dom != self) {
        return error_reply(req, EINVAL,
                           format("bind_interdomain: port %u of domain %u is not an "
                                  "unbound port offered to domain %u",
                                  rport, remote, self));
      }
      auto port = find_free_port(evtchn_table(), self);
      if (!port) return error_reply(req, port.error().code, port.error().message);
      PortSlot* s = port_slot(evtchn_table(), self, *port);
      s->remote_dom = remote;
      s->remote_port = rport;
      s->handle_id = hid;
      aref(s->masked).store(0);
      aref(s->generation).fetch_add(1);
      aref(s->state).store(kPortInterdomain, std::memory_order_release);
      r->remote_port = *port;
      aref(r->generation).fetch_add(1);
      aref(r->state).store(kPortInterdomain, std::memory_order_release);
      h->ports.push_back(*port);
      // Xen sets the new local port pending: notifications sent to the
      // unbound remote port before the bind may have been lost.
      aref(s->pending).store(1);
      eventfd_signal(h->doorbell.get());
      Message rep = ok_reply(req);
      rep.u32(*port);
      return rep;
    }
    case Op::kEvtchnUnbind: {
      uint32_t hid = rd.u32();
      uint32_t port = rd.u32();
      Handle* h = own_handle(hid);
      if (rd.failed() || !h)
        return error_reply(req, EBADF, format("no event channel handle %u", hid));
      if (std::find(h->ports.begin(), h->ports.end(), port) == h->ports.end()) {
        return error_reply(req, EINVAL,
                           format("unbind: port %u is not bound by this handle", port));
      }
      close_port_locked(self, port);
      return ok_reply(req);
    }
    case Op::kEvtchnDoorbell: {
      uint32_t hid = rd.u32();
      auto it = handles_.find(hid);
      if (rd.failed() || it == handles_.end()) {
        return error_reply(req, EBADF, format("no event channel handle %u", hid));
      }
      auto d = it->second->doorbell.dup();
      if (!d) return error_reply(req, d.error().code, d.error().message);
      Message r = ok_reply(req);
      r.fds.push_back(std::move(*d));
      return r;
    }
    default:
      break;
  }
  return error_reply(req, ENOSYS, "unknown event channel operation");
}

int Hypervisor::doorbell_fd(uint32_t handle_id) {
  std::lock_guard lk(mu_);
  auto it = handles_.find(handle_id);
  return it == handles_.end() ? -1 : it->second->doorbell.get();
}

// ---------------------------------------------------------------------------
// Grants.

// Pins a grant entry for `caller` (Xen's _set_status_v1 plus the active-entry
// pin counts): the entry must permit access to the caller, and must not be
// read-only when writing. GTF_reading/GTF_writing are set in the shared entry
// with compare-and-swap, so the granting domain's end-access (which only
// succeeds while both are clear) cannot race with us.
int16_t Hypervisor::acquire_grant(Domain& dom, domid_t caller, grant_ref_t ref, bool writable,
                                  uint32_t* frame) {
  if (ref >= dom.nr_grants()) return kGntBadGntref;
  std::unique_lock pl(dom.pin_lock(ref));
  if (!dom.alive.load()) return kGntBadDomain;
  GrantEntry& e = dom.entries()[ref];
  auto word = grant_word_ref(e);
  uint32_t cur = word.load();
  for (;;) {
    uint16_t flags = static_cast<uint16_t>(cur & 0xFFFF);
    uint16_t gdom = static_cast<uint16_t>(cur >> 16);
    if ((flags & kGtfTypeMask) != kGtfPermitAccess || gdom != caller) return kGntGeneralError;
    if (writable && (flags & kGtfReadonly)) return kGntGeneralError;  // write-pin of r/o grant
    uint16_t nf = flags | kGtfReading | (writable ? kGtfWriting : 0);
    if (word.compare_exchange_weak(cur, grant_word(nf, gdom))) break;
  }
  ++dom.readers[ref];
  if (writable) ++dom.writers[ref];
  uint32_t f = std::atomic_ref<uint32_t>(e.frame).load();
  if (f >= cfg_.pages_per_domain) {
    pl.unlock();
    release_grant(dom, ref, writable);  // undo the pin we just took
    return kGntBadPage;
  }
  *frame = f;
  return kGntOkay;
}

void Hypervisor::release_grant(Domain& dom, grant_ref_t ref, bool writable) {
  std::lock_guard pl(dom.pin_lock(ref));
  if (dom.readers[ref] > 0) --dom.readers[ref];
  if (writable && dom.writers[ref] > 0) --dom.writers[ref];
  uint32_t clear = 0;
  if (dom.writers[ref] == 0) clear |= kGtfWriting;
  if (dom.readers[ref] == 0) clear |= kGtfReading;
  if (clear) grant_word_ref(dom.entries()[ref]).fetch_and(~clear);
  // A dead domain's grant is revoked once its last user lets go.
  if (!dom.alive.load() && dom.readers[ref] == 0) grant_word_ref(dom.entries()[ref]).store(0);
}

std::shared_ptr<Hypervisor::Domain> Hypervisor::find_domain(domid_t d) {
  std::lock_guard lk(mu_);
  auto it = domains_.find(d);
  return it == domains_.end() ? nullptr : it->second;
}

int16_t Hypervisor::map_grant(domid_t caller, domid_t granter, grant_ref_t ref, bool writable,
                              uint8_t** addr, uint64_t* handle) {
  std::shared_ptr<Domain> dom = find_domain(granter);
  if (!dom) return kGntBadDomain;
  uint32_t frame = 0;
  int16_t st = acquire_grant(*dom, caller, ref, writable, &frame);
  if (st != kGntOkay) return st;
  std::lock_guard lk(mu_);
  ++dom->maps;
  uint64_t h = next_map_handle_++;
  *addr = dom->pages.data() + size_t{frame} * kPageSize;
  *handle = h;
  if (!dom->alive.load() && std::find(zombies_.begin(), zombies_.end(), dom) == zombies_.end()) {
    zombies_.push_back(dom);  // it died between the lookup and now
  }
  mappings_[h] = Mapping{std::move(dom), ref, writable};
  return kGntOkay;
}

void Hypervisor::unmap_grant(uint64_t handle) {
  Mapping m;
  {
    std::lock_guard lk(mu_);
    auto it = mappings_.find(handle);
    if (it == mappings_.end()) return;
    m = std::move(it->second);
    mappings_.erase(it);
  }
  release_grant(*m.dom, m.ref, m.writable);
  std::lock_guard lk(mu_);
  // A dead domain's memory goes with its last mapping.
  if (--m.dom->maps == 0 && !m.dom->alive.load()) std::erase(zombies_, m.dom);
}

void Hypervisor::copy(domid_t caller, std::span<GrantCopyOp> ops) {
  // The domains this batch names, looked up once (a batch usually names one).
  std::shared_ptr<Domain> cache[4];
  auto lookup = [&](domid_t d) -> Domain* {
    for (auto& c : cache) {
      if (c && c->id == d) return c.get();
    }
    for (auto& c : cache) {
      if (!c) {
        c = find_domain(d);
        return c.get();
      }
    }
    cache[3] = find_domain(d);
    return cache[3].get();
  };
  for (GrantCopyOp& op : ops) {
    // Xen's gnttab_copy: check both sides fully before touching memory.
    struct Side {
      Domain* dom = nullptr;
      grant_ref_t ref = 0;
      bool pinned = false;
      uint8_t* ptr = nullptr;
    };
    Side sides[2];
    const GrantCopySegment* segs[2] = {&op.source, &op.dest};
    int16_t st = kGntOkay;
    if (size_t{op.source.offset} + op.len > kPageSize ||
        size_t{op.dest.offset} + op.len > kPageSize) {
      st = kGntBadCopyArg;  // "copy beyond page area"
    }
    for (int i = 0; i < 2 && st == kGntOkay; ++i) {
      const GrantCopySegment& g = *segs[i];
      if (!g.is_grant) {
        if (!g.local) st = kGntGeneralError;
        sides[i].ptr = static_cast<uint8_t*>(g.local);
        continue;
      }
      Domain* dom = lookup(g.domid);
      if (!dom) {
        st = kGntBadDomain;
        break;
      }
      uint32_t frame = 0;
      st = acquire_grant(*dom, caller, g.ref, /*writable=*/i == 1, &frame);
      if (st != kGntOkay) break;
      sides[i] = Side{dom, g.ref, true, dom->pages.data() + size_t{frame} * kPageSize + g.offset};
    }
    if (st == kGntOkay) std::memmove(sides[1].ptr, sides[0].ptr, op.len);
    for (int i = 0; i < 2; ++i) {
      if (sides[i].pinned) release_grant(*sides[i].dom, sides[i].ref, i == 1);
    }
    op.status = st;
  }
}

// ---------------------------------------------------------------------------
// Requests.

Message Hypervisor::handle(Connection& c, Message req) {
  std::lock_guard lk(mu_);
  if (!c.alive_) return error_reply(req, ENOTCONN, "the domain's connection is closed");
  switch (req.op) {
    case Op::kHello:
      return do_hello(c, req);
    case Op::kEvtchnOpenHandle:
    case Op::kEvtchnCloseHandle:
    case Op::kEvtchnAllocUnbound:
    case Op::kEvtchnBindInterdomain:
    case Op::kEvtchnUnbind:
    case Op::kEvtchnDoorbell:
      return do_evtchn(c, req);
    case Op::kXsRead:
    case Op::kXsWrite:
    case Op::kXsMkdir:
    case Op::kXsRm:
    case Op::kXsDirectory:
    case Op::kXsGetPerms:
    case Op::kXsSetPerms:
    case Op::kXsTransactionStart:
    case Op::kXsTransactionEnd:
    case Op::kXsWatch:
    case Op::kXsUnwatch:
    case Op::kXsDomainPath:
      return do_xenstore(c, req);
    case Op::kStats:
      return do_stats(req);
    case Op::kXsWatchEvent:
      break;
  }
  return error_reply(
      req, ENOSYS,
      format("unknown simulated hypervisor request %u", static_cast<uint32_t>(req.op)));
}

Message Hypervisor::do_hello(Connection& c, const Message& req) {
  Domain* dom = live_domain_locked(c.domid_);
  if (!dom) return error_reply(req, ESRCH, "the domain no longer exists");
  Message r = ok_reply(req);
  r.u16(c.domid_).u32(cfg_.pages_per_domain).u32(cfg_.grants_per_domain);
  for (const UniqueFd* f : {&dom->pages_fd, &dom->gnttab_fd, &evtchn_fd_}) {
    auto d = f->dup();
    if (!d) return error_reply(req, d.error().code, d.error().message);
    r.fds.push_back(std::move(*d));
  }
  return r;
}

Message Hypervisor::do_xenstore(Connection& c, const Message& req) {
  Reader rd(req.payload);
  const auto conn = c.id_;
  const xs_transaction_t t = req.tx_id;
  auto bad = [&] {
    return error_reply(req, EINVAL, format("malformed %s request", op_name(req.op)));
  };
  auto from_status = [&](const Status& s) {
    return s ? ok_reply(req) : error_reply(req, s.code(), s.message());
  };
  switch (req.op) {
    case Op::kXsRead: {
      std::string path = rd.str();
      if (rd.failed()) return bad();
      auto v = xs_->read(conn, t, path);
      if (!v) return error_reply(req, v.error().code, v.error().message);
      Message r = ok_reply(req);
      r.payload = std::move(*v);
      return r;
    }
    case Op::kXsWrite: {
      std::string path = rd.str();
      std::string value = rd.str();
      if (rd.failed()) return bad();
      return from_status(xs_->write(conn, t, path, value));
    }
    case Op::kXsMkdir: {
      std::string path = rd.str();
      if (rd.failed()) return bad();
      return from_status(xs_->mkdir(conn, t, path));
    }
    case Op::kXsRm: {
      std::string path = rd.str();
      if (rd.failed()) return bad();
      return from_status(xs_->rm(conn, t, path));
    }
    case Op::kXsDirectory: {
      std::string path = rd.str();
      if (rd.failed()) return bad();
      auto v = xs_->directory(conn, t, path);
      if (!v) return error_reply(req, v.error().code, v.error().message);
      Message r = ok_reply(req);
      r.u32(static_cast<uint32_t>(v->size()));
      for (auto& s : *v)
        r.str(s);
      return r;
    }
    case Op::kXsGetPerms: {
      std::string path = rd.str();
      if (rd.failed()) return bad();
      auto v = xs_->get_permissions(conn, t, path);
      if (!v) return error_reply(req, v.error().code, v.error().message);
      Message r = ok_reply(req);
      r.u32(static_cast<uint32_t>(v->size()));
      for (auto& p : *v)
        r.u16(p.domid).u8(p.access);
      return r;
    }
    case Op::kXsSetPerms: {
      std::string path = rd.str();
      uint32_t n = rd.u32();
      if (rd.failed() || n > 1024) return bad();
      std::vector<XsPermission> perms;
      for (uint32_t i = 0; i < n; ++i) {
        XsPermission p;
        p.domid = rd.u16();
        p.access = static_cast<XsPermission::Access>(rd.u8() & 3);
        perms.push_back(p);
      }
      if (rd.failed()) return bad();
      return from_status(xs_->set_permissions(conn, t, path, perms));
    }
    case Op::kXsTransactionStart: {
      auto id = xs_->transaction_start(conn);
      if (!id) return error_reply(req, id.error().code, id.error().message);
      Message r = ok_reply(req);
      r.u32(*id);
      return r;
    }
    case Op::kXsTransactionEnd: {
      uint8_t abort = rd.u8();
      if (rd.failed()) return bad();
      return from_status(xs_->transaction_end(conn, t, abort != 0));
    }
    case Op::kXsWatch:
    case Op::kXsUnwatch: {
      std::string path = rd.str();
      std::string token = rd.str();
      if (rd.failed()) return bad();
      return from_status(req.op == Op::kXsWatch ? xs_->watch(conn, path, token)
                                                : xs_->unwatch(conn, path, token));
    }
    case Op::kXsDomainPath: {
      domid_t d = rd.u16();
      if (rd.failed()) return bad();
      Message r = ok_reply(req);
      r.payload = format("/local/domain/%u", d);
      return r;
    }
    default:
      break;
  }
  return bad();
}

HypervisorStats Hypervisor::stats() {
  std::lock_guard lk(mu_);
  return stats_locked();
}

HypervisorStats Hypervisor::stats_locked() {
  HypervisorStats s;
  s.domains = static_cast<uint32_t>(domains_.size());
  s.zombie_domains = static_cast<uint32_t>(zombies_.size());
  s.grant_maps = static_cast<uint32_t>(mappings_.size());
  s.evtchn_handles = static_cast<uint32_t>(handles_.size());
  s.xs_connections = static_cast<uint32_t>(xs_conns_.size());
  auto count_grants = [&](Domain& d) {
    GrantEntry* e = d.entries();
    for (uint32_t r = 0; r < d.nr_grants(); ++r) {
      if ((grant_word_ref(e[r]).load() & kGtfTypeMask) == kGtfPermitAccess) ++s.grants_active;
    }
  };
  for (auto& [id, d] : domains_)
    count_grants(*d);
  for (auto& z : zombies_)
    count_grants(*z);
  for (uint32_t d = 0; d < kMaxDomains; ++d) {
    for (uint32_t p = 1; p < kPortsPerDomain; ++p) {
      if (aref(port_slot(evtchn_table(), d, p)->state).load() != kPortFree) ++s.ports_bound;
    }
  }
  return s;
}

Message Hypervisor::do_stats(const Message& req) {
  HypervisorStats s = stats_locked();
  Message r = ok_reply(req);
  r.u32(s.domains).u32(s.grants_active).u32(s.grant_maps).u32(s.ports_bound);
  r.u32(s.evtchn_handles).u32(s.xs_connections).u32(s.zombie_domains);
  return r;
}

}  // namespace xpv::sim
