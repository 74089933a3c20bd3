// SPDX-License-Identifier: MIT
#include "netback/backend.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <cstdlib>

#include "netback/clock.h"
#include "sim/client.h"
#include "util/log.h"

namespace xpv::netback {

namespace {
constexpr const char* kIntroToken = "introduce";
constexpr const char* kReleaseToken = "release";
constexpr size_t kMaxRetired = 1024;
}  // namespace

Backend::Backend(sim::Hypervisor& hv, Config cfg) : hv_(hv), cfg_(std::move(cfg)) {
  if (cfg_.mode == Mode::kBridge) bridge_ = std::make_unique<Bridge>(cfg_);
}

Result<std::unique_ptr<Backend>> Backend::create(sim::Hypervisor& hv, Config cfg) {
  XPV_TRY(validate(cfg));
  return std::unique_ptr<Backend>(new Backend(hv, std::move(cfg)));
}

Backend::~Backend() {
  stop();
  std::lock_guard lk(mu_);
  vifs_.clear();
}

Status Backend::start() {
  if (thread_.joinable() || dom0_) return make_error(EBUSY, "the backend is already started");
  auto p = sim::local_platform(hv_, /*as_dom0=*/true);
  if (!p) return p.error();
  dom0_ = std::move(*p);
  auto xs = dom0_->open_xenstore();
  if (!xs) return xs.error();
  xs_ = std::move(*xs);
  auto m = dom0_->open_grant_mapper();
  if (!m) return m.error();
  mapper_ = std::move(*m);
  auto w = make_eventfd();
  if (!w) return w.error();
  wake_ = std::move(*w);
  // Both fire once when set: the first events scan what exists already.
  XPV_TRY(xs_->watch("@introduceDomain", kIntroToken));
  XPV_TRY(xs_->watch("@releaseDomain", kReleaseToken));
  stop_.store(false);
  thread_ = std::thread([this] { control_loop(); });
  return {};
}

void Backend::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  eventfd_signal(wake_.get());
  thread_.join();
}

void Backend::control_loop() {
  ::pthread_setname_np(::pthread_self(), "nb-control");
  pollfd fds[2] = {{xs_->watch_fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  while (!stop_.load()) {
    int timeout = -1;
    {
      std::lock_guard lk(mu_);
      const uint64_t now = now_ns();
      for (auto& [key, v] : vifs_) {
        if (uint64_t d = v->next_deadline_ns()) {
          const int ms = ms_until(d, now);
          if (timeout < 0 || ms < timeout) timeout = ms;
        }
      }
    }
    fds[0].revents = fds[1].revents = 0;
    if (::poll(fds, 2, timeout) < 0 && errno != EINTR) {
      log_error("backend: poll: %s", errno_string(errno).c_str());
      break;
    }
    if (fds[1].revents) eventfd_drain(wake_.get());
    if (stop_.load()) break;
    std::lock_guard lk(mu_);
    for (;;) {
      auto ev = xs_->read_watch();
      if (!ev) {
        log_error("backend: reading xenstore watches: %s", ev.error().message.c_str());
        break;
      }
      if (!*ev) break;
      handle_watch(**ev);
    }
    const uint64_t now = now_ns();
    for (auto& [key, v] : vifs_) {
      v->poll_reports(*xs_);
      v->on_timer(*xs_, now);
    }
  }
  // Shutting down: every vif goes Closing then Closed, its queues stop.
  std::lock_guard lk(mu_);
  for (auto& [key, v] : vifs_) {
    v->poll_reports(*xs_);
    v->shutdown(*xs_);
    (void)xs_->unwatch(v->frontend_path() + "/state", v->state_watch_token());
    (void)xs_->unwatch(v->frontend_path() + "/request-multicast-control", v->mcast_watch_token());
  }
  (void)xs_->unwatch("@introduceDomain", kIntroToken);
  (void)xs_->unwatch("@releaseDomain", kReleaseToken);
}

void Backend::handle_watch(const XsWatchEvent& ev) {
  if (ev.token == kIntroToken) {
    scan_new_domains();
  } else if (ev.token == kReleaseToken) {
    scan_gone_domains();
  } else if (ev.token.starts_with("fe/")) {
    unsigned d = 0, h = 0;
    if (std::sscanf(ev.token.c_str(), "fe/%u/%u", &d, &h) != 2) return;
    auto it = vifs_.find({static_cast<domid_t>(d), h});
    if (it == vifs_.end()) return;  // a vif already gone
    it->second->frontend_changed(*xs_);
  } else if (ev.token.starts_with("mc/")) {
    unsigned d = 0, h = 0;
    if (std::sscanf(ev.token.c_str(), "mc/%u/%u", &d, &h) != 2) return;
    auto it = vifs_.find({static_cast<domid_t>(d), h});
    if (it == vifs_.end()) return;
    it->second->multicast_control_changed(*xs_);
  }
}

Result<std::set<domid_t>> Backend::live_domains() {
  auto dir = xs_->directory(kXsNoTransaction, "/local/domain");
  if (!dir) return dir.error();
  std::set<domid_t> live;
  for (const std::string& name : *dir) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(name.c_str(), &end, 10);
    if (!name.empty() && *end == '\0' && v < 0x7FF0) live.insert(static_cast<domid_t>(v));
  }
  return live;
}

void Backend::scan_new_domains() {
  // @introduceDomain says that some domain appeared, not which.
  auto live = live_domains();
  if (!live) {
    log_error("backend: listing domains: %s", live.error().message.c_str());
    return;
  }
  for (domid_t d : *live) {
    if (d != kDom0 && !domains_.count(d)) add_domain(d);
  }
}

void Backend::scan_gone_domains() {
  auto live = live_domains();
  if (!live) {
    log_error("backend: listing domains: %s", live.error().message.c_str());
    return;
  }
  std::vector<domid_t> gone;
  for (domid_t d : domains_) {
    if (!live->count(d)) gone.push_back(d);
  }
  for (domid_t d : gone)
    remove_domain(d);
}

void Backend::add_domain(domid_t d) {
  domains_.insert(d);
  log_info("domain %u introduced", d);
  for (uint32_t h = 0; h < cfg_.vifs; ++h) {
    const Mac mac = (h == 0 && cfg_.mac) ? *cfg_.mac : default_mac(d, h);
    auto v = std::make_unique<Vif>(cfg_, *dom0_, *mapper_, d, h, mac, wake_.get(), bridge_.get());
    Status s = v->create_nodes(*xs_);
    if (s.failed()) {
      // The domain may already be gone again.
      log_warn("%s", s.message().c_str());
      continue;
    }
    Status w = xs_->watch(v->frontend_path() + "/state", v->state_watch_token());
    if (w.failed()) {
      log_warn("%s: watching the frontend's state: %s", v->name().c_str(), w.message().c_str());
      continue;
    }
    // feature-dynamic-multicast-control: the frontend may change
    // request-multicast-control at any time (xen_register_mcast_ctrl_watch).
    if (cfg_.multicast_control && cfg_.dynamic_multicast_control) {
      w = xs_->watch(v->frontend_path() + "/request-multicast-control", v->mcast_watch_token());
      if (w.failed()) {
        log_warn("%s: watching request-multicast-control: %s", v->name().c_str(),
                 w.message().c_str());
      }
    }
    vifs_[{d, h}] = std::move(v);
  }
}

void Backend::remove_domain(domid_t d) {
  // @releaseDomain: the frontend process died or disconnected. Its pages
  // stay valid while we map them; tear down, unmap, unbind, remove the
  // backend nodes (the frontend's went with the domain).
  log_info("domain %u released", d);
  for (auto it = vifs_.begin(); it != vifs_.end();) {
    if (it->first.first != d) {
      ++it;
      continue;
    }
    Vif& v = *it->second;
    (void)xs_->unwatch(v.frontend_path() + "/state", v.state_watch_token());
    (void)xs_->unwatch(v.frontend_path() + "/request-multicast-control", v.mcast_watch_token());
    v.poll_reports(*xs_);
    v.release();
    if (retired_.size() == kMaxRetired) retired_.erase(retired_.begin());
    retired_.push_back(v.stats());
    it = vifs_.erase(it);
  }
  (void)xs_->rm(kXsNoTransaction, format("/local/domain/0/backend/vif/%u", d));
  // The frontend's nodes went with the domain's home; make sure.
  (void)xs_->rm(kXsNoTransaction, format("/local/domain/%u/device/vif", d));
  domains_.erase(d);
}

std::vector<VifStats> Backend::stats() const {
  std::lock_guard lk(mu_);
  std::vector<VifStats> out = retired_;
  for (const auto& [key, v] : vifs_)
    out.push_back(v->stats());
  return out;
}

std::optional<VifStats> Backend::vif_stats(domid_t domid, uint32_t handle) const {
  std::lock_guard lk(mu_);
  auto it = vifs_.find({domid, handle});
  if (it != vifs_.end()) return it->second->stats();
  for (auto r = retired_.rbegin(); r != retired_.rend(); ++r) {
    if (r->domid == domid && r->handle == handle) return *r;
  }
  return std::nullopt;
}

std::vector<BridgeFdbEntry> Backend::bridge_fdb() const {
  if (!bridge_) return {};
  return bridge_->fdb_entries();
}

Counters Backend::totals() const {
  Counters t;
  for (const VifStats& v : stats())
    t += v.total;
  return t;
}

}  // namespace xpv::netback
