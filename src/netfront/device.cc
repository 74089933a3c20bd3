// SPDX-License-Identifier: MIT
// The netfront device: xenbus handshake (the control plane), reconnects, and
// the queues it owns. The data path lives in queue.cc.
//
// Handshake, as Linux netfront and netback do it (netif-notes.md):
//   frontend Initialising -> backend InitWait -> frontend writes its keys and
//   Connected in one transaction -> backend maps, binds, Connected.
// Closing/Closed on either side tears down; a backend that comes back (vif
// reset, xl network-attach, an xpv-netback restart) is met with a fresh
// handshake without the caller doing anything.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "netfront/backend_keys.h"
#include "netfront/ctrl_ring.h"
#include "netfront/queue.h"
#include "netfront/rss.h"
#include "netfront/static_grants.h"
#include "netfront/xenbus_keys.h"
#include "util/log.h"
#include "xpv/netfront.h"

namespace xpv {

using netif::XenbusState;

std::string to_string(const MacAddr& m) {
  return format("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

Result<MacAddr> parse_mac(std::string_view s) {
  // Exactly six two-digit hex bytes separated by ':' (sscanf's %x would also
  // take a sign, spaces or "0x").
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  MacAddr m{};
  bool ok = s.size() == 17;
  for (size_t i = 0; ok && i < 6; ++i) {
    const int hi = hex(s[i * 3]), lo = hex(s[i * 3 + 1]);
    ok = hi >= 0 && lo >= 0 && (i == 5 || s[i * 3 + 2] == ':');
    m[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  if (!ok) {
    return make_error(EINVAL, format("'%.*s' is not a MAC address (expected xx:xx:xx:xx:xx:xx)",
                                     static_cast<int>(std::min<size_t>(s.size(), 64)), s.data()));
  }
  return m;
}

namespace {

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

constexpr uint64_t kCloseWaitMs = 5000;
constexpr uint64_t kRetryMs = 500;
constexpr uint64_t kFailBackoffMs = 1000;

// backend_keys.h's rule; a value that is not a XenbusState is logged once
// (per thread, until another one comes) and read as Unknown.
std::optional<XenbusState> parse_state(const std::optional<std::string>& v) {
  auto s = parse_xenbus_state(v);
  if (s == XenbusState::kUnknown && *v != "0") {
    thread_local std::string last_bad;
    if (*v != last_bad) {
      last_bad = *v;
      log_warn("a xenbus state node holds %s, not a XenbusState (netif.h: 0..8); read as Unknown",
               quoted_value(*v).c_str());
    }
  }
  return s;
}

const char* state_name(const std::optional<XenbusState>& s) {
  return s ? netif::to_string(*s) : "absent";
}

}  // namespace

class Device::Impl {
 public:
  enum class Phase {
    kIdle,           // not connected and not trying
    kPlatformLost,   // the platform connection died; reopening it
    kWaitDevice,     // the vif's xenstore node does not exist (yet)
    kNegotiate,      // walking both ends to Initialising/InitWait
    kWaitConnected,  // our keys are written; the backend has to connect
    kConnected,
    kClosing,  // we went Closing; waiting for the backend to let go
  };

  explicit Impl(DeviceConfig cfg) : cfg_(std::move(cfg)) {}

  Status init() {
    if (cfg_.queues == 0 || cfg_.queues > kMaxQueues) {
      return make_error(EINVAL,
                        format("queues=%u is out of range (1..%u)", cfg_.queues, kMaxQueues));
    }
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return make_error(errno, "epoll_create1: " + errno_string(errno));
    epfd_.reset(ep);
    auto w = make_eventfd();
    if (!w) return w.error();
    wake_ = std::move(*w);
    int tf = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tf < 0) return make_error(errno, "timerfd_create: " + errno_string(errno));
    timer_.reset(tf);
    for (int fd : {wake_.get(), timer_.get()})
      XPV_TRY(epoll_add(fd));
    for (uint32_t i = 0; i < cfg_.queues; ++i) {
      auto q = std::make_unique<QueueImpl>(i);
      XPV_TRY(q->init());
      q->set_mode(cfg_.mode);
      q->set_reap_tx_in_transmit(cfg_.experiment_reap_tx_in_transmit);
      queues_.push_back(std::move(q));
    }
    XPV_TRY(open_platform_and_node(/*wait_ms=*/cfg_.connect_timeout_ms));
    return {};
  }

  ~Impl() { close(); }

  // ---- platform and the vif's node ---------------------------------------

  Status epoll_add(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return make_error(errno, "epoll_ctl: " + errno_string(errno));
    }
    return {};
  }

  Status open_platform_and_node(uint32_t wait_ms) {
    auto p = open_platform(cfg_.platform);
    if (!p) return p.error();
    auto xs = (*p)->open_xenstore();
    if (!xs) return xs.error();
    auto sh = (*p)->open_grant_sharer();
    if (!sh) return sh.error();
    plat_ = std::move(*p);
    xs_ = std::move(*xs);
    sharer_ = std::move(*sh);
    XPV_TRY(epoll_add(xs_->watch_fd()));
    info_.self_domid = plat_->self_domid();
    info_.frontend_path = format("/local/domain/%u/device/vif/%u", info_.self_domid, cfg_.vif);
    // Watch our vif's directory: it appears when the toolstack (or
    // xpv-netback) creates the vif, and disappears on network-detach.
    XPV_TRY(xs_->watch(info_.frontend_path, "fe"));
    be_watched_.clear();
    // The vif may not exist yet (xpv-netback creates it when we connect).
    const uint64_t deadline = now_ms() + wait_ms;
    for (;;) {
      auto be = xs_->try_read(kXsNoTransaction, info_.frontend_path + "/backend");
      if (!be) return be.error();
      if (*be) break;
      if (now_ms() >= deadline) {
        return make_error(ENODEV,
                          format("%s does not exist: this domain has no vif %u (platform "
                                 "%s)",
                                 info_.frontend_path.c_str(), cfg_.vif, plat_->name().c_str()));
      }
      pollfd pf{xs_->watch_fd(), POLLIN, 0};
      ::poll(&pf, 1, 50);
      drain_watches();
    }
    return read_info();
  }

  // Reads the vif's configuration and the backend's features, parsed by
  // backend_keys.h's rules; each fallback taken is logged.
  Status read_info() {
    auto rd = [&](const std::string& path, std::optional<std::string>* out) -> Status {
      auto v = xs_->try_read(kXsNoTransaction, path);
      if (!v) return v.error();
      *out = std::move(*v);
      return {};
    };
    std::optional<std::string> be;
    XPV_TRY(rd(info_.frontend_path + "/backend", &be));
    if (!be) return make_error(ENODEV, info_.frontend_path + " has no backend node");
    RawBackendKeys raw;
    raw.frontend_path = info_.frontend_path;
    raw.backend_path = *be;
    raw.mac_override = cfg_.mac;
    XPV_TRY(rd(info_.frontend_path + "/backend-id", &raw.backend_id));
    if (!cfg_.mac) XPV_TRY(rd(info_.frontend_path + "/mac", &raw.mac));
    XPV_TRY(rd(info_.frontend_path + "/mtu", &raw.mtu));
    for (size_t i = 0; i < kBackendFeatureKeys.size(); ++i)
      XPV_TRY(rd(*be + "/" + kBackendFeatureKeys[i], &raw.features[i]));
    XPV_TRY(rd(*be + "/multi-queue-max-queues", &raw.max_queues));
    auto keys = parse_backend_keys(raw);
    if (!keys) return keys.error();
    // Each fallback once while it lasts: the keys are read when the device
    // opens and again at every connect.
    for (const std::string& w : keys->warnings) {
      if (std::find(warned_.begin(), warned_.end(), w) == warned_.end())
        log_warn("vif %u: %s", cfg_.vif, w.c_str());
    }
    warned_ = keys->warnings;
    info_.backend_path = *be;
    info_.backend_id = keys->backend_id;
    info_.mac = keys->mac;
    info_.mtu = keys->mtu;
    info_.features = keys->features;
    if (be_watched_ != info_.backend_path) {
      if (!be_watched_.empty()) (void)xs_->unwatch(be_watched_ + "/state", "be");
      XPV_TRY(xs_->watch(info_.backend_path + "/state", "be"));
      be_watched_ = info_.backend_path;
    }
    return {};
  }

  // Requirements the backend must meet for this configuration.
  Status check_features() {
    const BackendFeatures& f = info_.features;
    if (!f.rx_copy) {
      return make_error(EPROTONOSUPPORT, format("backend %s does not offer feature-rx-copy, which "
                                                "netback requires and this frontend needs",
                                                info_.backend_path.c_str()));
    }
    if (cfg_.queues > f.max_queues) {
      return make_error(EINVAL, format("asked for %u queues but backend %s allows at most %u "
                                       "(multi-queue-max-queues)",
                                       cfg_.queues, info_.backend_path.c_str(), f.max_queues));
    }
    return {};
  }

  void drain_watches() {
    if (!xs_) return;
    for (int i = 0; i < 1000; ++i) {
      auto e = xs_->read_watch();
      if (!e) {
        if (e.error().code == ENOTCONN) platform_lost(e.error().message);
        return;
      }
      if (!*e) return;
    }
  }

  // ---- state machine -------------------------------------------------------

  void set_phase(Phase p) {
    if (p != phase_)
      log_debug("vif %u: phase %d -> %d", cfg_.vif, static_cast<int>(phase_), static_cast<int>(p));
    phase_ = p;
  }

  void link_changed(LinkState l, const std::string& reason) {
    DeviceEvent e;
    e.link = l;
    e.reason = reason;
    link_changed(e);
  }
  void link_changed(const DeviceEvent& e) {
    if (e.link == link_) return;
    link_ = e.link;
    link_dirty_ = true;
    if (e.link == LinkState::kDown) {
      std::lock_guard lk(mu_);
      last_down_reason_ = e.reason;
    }
    log_info("vif %u: link %s%s%s", cfg_.vif, e.link == LinkState::kUp ? "up" : "down",
             e.reason.empty() ? "" : ": ", e.reason.c_str());
    if (cb_) cb_(e);
  }

  // The link-up event of a connection: what the backend provides
  // differently from the previous connection (read again by read_info() at
  // each connect), each difference logged.
  DeviceEvent connected_event() {
    DeviceEvent e;
    e.link = LinkState::kUp;
    if (ever_connected_) {
      const DeviceInfo& was = last_connected_;
      e.previous_mac = was.mac;
      e.previous_mtu = was.mtu;
      e.previous_features = was.features;
      std::string what;
      auto note = [&](uint32_t bit, const std::string& text) {
        e.changed |= bit;
        what += (what.empty() ? "" : "; ") + text;
      };
      if (info_.mac != was.mac)
        note(kBackendChangeMac,
             format("mac %s -> %s", to_string(was.mac).c_str(), to_string(info_.mac).c_str()));
      if (info_.mtu != was.mtu) note(kBackendChangeMtu, format("mtu %u -> %u", was.mtu, info_.mtu));
      if (info_.features.max_queues != was.features.max_queues)
        note(kBackendChangeMaxQueues, format("multi-queue-max-queues %u -> %u",
                                             was.features.max_queues, info_.features.max_queues));
      const std::string fa = feature_list(was.features), fb = feature_list(info_.features);
      if (fa != fb) note(kBackendChangeFeatures, "features [" + fa + "] -> [" + fb + "]");
      if (e.changed) {
        log_warn("vif %u: backend %s provides other values than at the previous connection: %s",
                 cfg_.vif, info_.backend_path.c_str(), what.c_str());
      }
    }
    last_connected_ = info_;
    return e;
  }

  static std::string feature_list(const BackendFeatures& f) {
    std::string out;
    auto add = [&](bool on, const char* name) {
      if (on) out += (out.empty() ? "" : " ") + std::string(name);
    };
    add(f.rx_copy, "rx-copy");
    add(f.sg, "sg");
    add(f.split_event_channels, "split-event-channels");
    add(f.gso_tcpv4, "gso-tcpv4");
    add(f.gso_tcpv6, "gso-tcpv6");
    add(f.ipv6_csum_offload, "ipv6-csum-offload");
    add(f.ctrl_ring, "ctrl-ring");
    return out;
  }

  Status write_state(XenbusState s) {
    return xs_->write(kXsNoTransaction, info_.frontend_path + "/state",
                      std::to_string(static_cast<int>(s)));
  }

  void stop_queues() {
    for (auto& q : queues_)
      q->stop();
  }

  // platform_gone: the connection to the platform was lost, and with it
  // the backend's mappings of our pages (a crashed xpv-netback takes its
  // simulated hypervisor along; the pages are freed with the platform).
  void teardown_queues(bool platform_gone = false) {
    TeardownAccount acc;
    for (auto& q : queues_) {
      q->stop();
      QueueTeardown t = q->teardown(platform_gone);
      acc.pages += t.pages.pages;
      acc.returned += t.pages.returned;
      acc.still_mapped += t.pages.still_mapped;
      acc.unknown += t.pages.unknown ? t.pages.pages : 0;
      acc.rx_dropped_staged += t.rx_dropped_staged;
      acc.tx_unanswered += t.tx_unanswered;
    }
    static_refs_.clear();
    if (ctrl_) {
      EndAccessReport r = ctrl_->end_access();
      acc.pages += r.pages;
      acc.returned += r.ended;
      acc.still_mapped += r.still_mapped;
      acc.unknown += r.unknown ? r.pages : 0;
      retire_ctrl();
    }
    rss_caps_.connected = false;
    rss_caps_.mapping_size_max = 0;
    if (acc.pages) {
      std::lock_guard lk(mu_);
      account_ = acc;
    }
  }

  // The control ring's counters outlive it (they count since open).
  void retire_ctrl() {
    if (!ctrl_) return;
    const CtrlCounters& c = ctrl_->counters();
#define XPV_ADD(name, doc) ctrl_base_.name += c.name;
    XPV_CTRL_COUNTERS(XPV_ADD)
#undef XPV_ADD
    ctrl_.reset();
  }

  CtrlCounters ctrl_counters() const {
    CtrlCounters out = ctrl_base_;
    if (ctrl_) {
      const CtrlCounters& c = ctrl_->counters();
#define XPV_ADD(name, doc) out.name += c.name;
      XPV_CTRL_COUNTERS(XPV_ADD)
#undef XPV_ADD
    }
    return out;
  }

  // Sets up every queue and writes our keys and state Connected in one
  // transaction, after removing whatever an earlier frontend left behind.
  Status connect_keys() {
    XPV_TRY(read_info());
    XPV_TRY(check_features());
    if (rss_.hash_types && !info_.features.ctrl_ring) {
      return make_error(ENOTSUP, format("RSS is configured but backend %s no longer offers "
                                        "feature-ctrl-ring",
                                        info_.backend_path.c_str()));
    }
    const bool split = cfg_.split_event_channels && info_.features.split_event_channels;
    info_.split_event_channels = split;
    info_.queues = cfg_.queues;
    QueueFeatures qf;
    qf.split = split;
    qf.rx_zero_copy = cfg_.rx_zero_copy;
    qf.sg = info_.features.sg;
    qf.tx_gso_types = static_cast<uint8_t>((info_.features.gso_tcpv4 ? 1u << kGsoTcpV4 : 0) |
                                           (info_.features.gso_tcpv6 ? 1u << kGsoTcpV6 : 0));
    // Large receive takes multi-slot packets with a partial checksum.
    const bool rx_gso = cfg_.rx_gso && cfg_.rx_csum_offload;
    qf.rx_gso_types = rx_gso ? (1u << kGsoTcpV4) | (1u << kGsoTcpV6) : 0;
    if (info_.features.ctrl_ring) {
      auto cr = CtrlRing::create(*plat_, *sharer_, info_.backend_id, cfg_.ctrl_timeout_ms);
      if (!cr) {
        teardown_queues();
        return make_error(cr.error().code, "setting up the control ring: " + cr.error().message);
      }
      ctrl_ = std::move(*cr);
      qf.rx_hash = true;
    }
    for (auto& q : queues_) {
      Status s = q->setup(*plat_, *sharer_, info_.backend_id, qf, wake_.get());
      if (s.failed()) {
        teardown_queues();
        return make_error(s.code(),
                          format("setting up queue %u: %s", q->index(), s.message().c_str()));
      }
    }
    std::vector<QueueKeys> keys;
    for (auto& q : queues_)
      keys.push_back(q->keys());
    XenbusKeys k{info_.frontend_path, keys, info_.features.sg || rx_gso, cfg_.rx_csum_offload,
                 rx_gso};
    if (ctrl_) {
      k.ctrl_ring = true;
      k.ctrl_ring_ref = ctrl_->ring_ref();
      k.ctrl_port = ctrl_->port();
    }
    Status s = xs_transact(*xs_, [&](xs_transaction_t t) -> Status {
      XPV_TRY(remove_stale_keys(*xs_, t, info_.frontend_path));
      return write_frontend_keys(*xs_, t, k);
    });
    if (s.failed()) {
      teardown_queues();
      return make_error(s.code(), "writing the frontend's keys: " + s.message());
    }
    log_info(
        "vif %u: keys written (%u queue%s, %s event channels), state Connected; waiting for "
        "backend %s",
        cfg_.vif, cfg_.queues, cfg_.queues == 1 ? "" : "s", split ? "split" : "shared",
        info_.backend_path.c_str());
    return {};
  }

  std::string backend_error_text() {
    // xenbus_dev_fatal writes "error" under the device's error node; our
    // backend writes it under its own directory. Try both.
    for (const std::string& p :
         {info_.backend_path + "/error",
          format("/local/domain/%u/error%s/error", info_.backend_id, info_.backend_path.c_str())}) {
      auto v = xs_->try_read(kXsNoTransaction, p);
      if (v && *v && !(*v)->empty()) return **v;
    }
    return {};
  }

  void platform_lost(const std::string& why) {
    if (phase_ == Phase::kPlatformLost) return;
    log_error("vif %u: %s", cfg_.vif, why.c_str());
    stop_queues();
    teardown_queues(/*platform_gone=*/true);
    link_changed(LinkState::kDown, why);
    if (xs_) ::epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, xs_->watch_fd(), nullptr);
    xs_.reset();
    sharer_.reset();
    plat_.reset();
    set_phase(Phase::kPlatformLost);
    retry_at_ = now_ms();
  }

  // A read for the state machine: false when it failed, which ends this
  // step (the next event or timer tick tries again). A lost platform
  // connection is handled here; any other failure is logged, once per
  // distinct message, as nothing can be decided without the node.
  bool read_node(const std::string& path, std::optional<std::string>* out) {
    auto v = xs_->try_read(kXsNoTransaction, path);
    if (!v) {
      if (v.error().code == ENOTCONN) {
        platform_lost(v.error().message);
      } else {
        if (v.error().message != last_read_error_) {
          last_read_error_ = v.error().message;
          log_error("vif %u: reading %s: %s; retrying every %lu ms", cfg_.vif, path.c_str(),
                    last_read_error_.c_str(), static_cast<unsigned long>(kRetryMs));
        }
        reread_at_ = now_ms() + kRetryMs;
      }
      return false;
    }
    *out = std::move(*v);
    return true;
  }

  // read_info() for the state machine: a vif that came back with values we
  // refuse (a bad mac...) is logged, once per distinct message, and waited
  // on (the next xenstore event or timer tick tries again).
  bool read_info_logged() {
    Status s = read_info();
    if (!s.failed()) return true;
    if (s.message() != last_read_error_) {
      last_read_error_ = s.message();
      log_error("vif %u: %s", cfg_.vif, s.message().c_str());
    }
    return false;
  }

  // One step of the state machine: look at both ends and act.
  void step() {
    reread_at_ = 0;
    if (!want_connected_) return;
    const uint64_t now = now_ms();
    if (phase_ == Phase::kPlatformLost) {
      if (now < retry_at_) return;
      Status s = open_platform_and_node(0);
      if (s.failed()) {
        if (xs_) ::epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, xs_->watch_fd(), nullptr);
        xs_.reset();
        sharer_.reset();
        plat_.reset();
        log_debug("vif %u: platform not back yet: %s", cfg_.vif, s.message().c_str());
        retry_at_ = now + kRetryMs;
        return;
      }
      log_info("vif %u: platform %s is back; we are domain %u now", cfg_.vif, cfg_.platform.c_str(),
               info_.self_domid);
      set_phase(Phase::kNegotiate);
    }
    // A queue that caught the backend breaking the protocol.
    for (auto& q : queues_) {
      if (q->broken() && (phase_ == Phase::kConnected || phase_ == Phase::kWaitConnected)) {
        begin_close(q->broken_reason());
        break;
      }
    }
    std::optional<std::string> fe_dir;
    if (!read_node(info_.frontend_path + "/backend", &fe_dir)) return;
    if (!fe_dir) {
      // The vif was removed (network-detach): its backend is gone with it.
      if (phase_ != Phase::kWaitDevice) {
        stop_queues();
        teardown_queues();
        link_changed(LinkState::kDown, "the vif's xenstore node was removed");
        set_phase(Phase::kWaitDevice);
      }
      return;
    }
    if (phase_ == Phase::kWaitDevice) {
      if (!read_info_logged()) return;
      set_phase(Phase::kNegotiate);
    }
    if (*fe_dir != info_.backend_path) {
      if (!read_info_logged()) return;  // the backend moved
    }
    std::optional<std::string> fe_raw, be_raw;
    if (!read_node(info_.frontend_path + "/state", &fe_raw)) return;
    if (!read_node(info_.backend_path + "/state", &be_raw)) return;
    last_read_error_.clear();  // every read of this step worked
    const auto fe = parse_state(fe_raw);
    const auto be = parse_state(be_raw);

    switch (phase_) {
      case Phase::kIdle:
        set_phase(Phase::kNegotiate);
        [[fallthrough]];
      case Phase::kNegotiate: {
        if (now < retry_at_) return;
        if (be == XenbusState::kInitWait) {
          Status s = connect_keys();
          if (s.failed()) {
            fail(s);
            return;
          }
          set_phase(Phase::kWaitConnected);
          deadline_ = now + cfg_.connect_timeout_ms;
        } else if (be == XenbusState::kConnected || be == XenbusState::kInitialised ||
                   be == XenbusState::kClosing || be == XenbusState::kReconfiguring ||
                   be == XenbusState::kReconfigured) {
          // The backend still serves an earlier frontend: walk it down.
          if (fe != XenbusState::kClosing && fe != XenbusState::kClosed) {
            (void)write_state(XenbusState::kClosing);
          } else if (fe == XenbusState::kClosing && be == XenbusState::kClosing) {
            (void)write_state(XenbusState::kClosed);
          }
        } else {
          // Closed, Initialising, Unknown or absent: announce ourselves.
          if (fe != XenbusState::kInitialising) (void)write_state(XenbusState::kInitialising);
        }
        return;
      }
      case Phase::kWaitConnected:
        if (be == XenbusState::kConnected) {
          if (!ctrl_) {
            for (auto& q : queues_)
              q->note_static_grants(false);
          } else {
            // The backend connected the control ring with the rest
            // (netif.h); what it can do, then what was asked.
            Status cs = connect_ctrl();
            if (cs.failed()) {
              if (ctrl_ && ctrl_->broken()) {
                fatal_ = cs.error();
                begin_close(cs.message());
              } else {
                fail(cs);
              }
              return;
            }
          }
          for (auto& q : queues_)
            q->start();
          set_phase(Phase::kConnected);
          // A new connection: the backend's list is empty, our request key
          // was removed with the stale keys.
          mc_applied_.clear();
          mc_requested_ = false;
          if (mc_on_) {
            Status ms = apply_multicast();
            if (ms.failed())
              log_warn("vif %u: multicast filter not set: %s", cfg_.vif, ms.message().c_str());
          }
          if (ever_connected_) ++reconnects_;
          const DeviceEvent up = connected_event();
          ever_connected_ = true;
          fatal_.reset();
          link_changed(up);
        } else if (be == XenbusState::kClosing || be == XenbusState::kClosed || !be ||
                   now >= deadline_) {
          std::string why = backend_error_text();
          if (why.empty()) {
            why = now >= deadline_
                      ? format("backend did not connect within %u ms", cfg_.connect_timeout_ms)
                      : format("backend went %s instead of Connected", state_name(be));
          }
          fail(make_error(ECONNREFUSED, format("backend %s refused the connection: %s",
                                               info_.backend_path.c_str(), why.c_str())));
        }
        return;
      case Phase::kConnected:
        if (be != XenbusState::kConnected) {
          begin_close(
              format("backend %s switched to %s", info_.backend_path.c_str(), state_name(be)));
        }
        return;
      case Phase::kClosing:
        if (!be || be == XenbusState::kClosing || be == XenbusState::kClosed ||
            be == XenbusState::kInitWait || be == XenbusState::kUnknown || now >= deadline_) {
          teardown_queues();
          (void)write_state(XenbusState::kClosed);
          set_phase(Phase::kNegotiate);
          retry_at_ = std::max(retry_at_, now + 50);
        }
        return;
      case Phase::kWaitDevice:
      case Phase::kPlatformLost:
        return;
    }
  }

  // Stops the data path and starts the orderly close of the current
  // connection; the handshake starts again once the backend let go.
  void begin_close(const std::string& reason) {
    stop_queues();
    link_changed(LinkState::kDown, reason);
    (void)write_state(XenbusState::kClosing);
    set_phase(Phase::kClosing);
    deadline_ = now_ms() + kCloseWaitMs;
  }

  // The connection attempt failed: remember why, close our side, retry later.
  void fail(const Status& s) {
    log_error("vif %u: %s", cfg_.vif, s.message().c_str());
    fatal_ = s.error();
    stop_queues();
    teardown_queues();
    (void)write_state(XenbusState::kClosing);
    set_phase(Phase::kClosing);
    deadline_ = now_ms() + kCloseWaitMs;
    retry_at_ = now_ms() + kFailBackoffMs;
  }

  void arm_timer() {
    uint64_t due = 0;
    auto consider = [&](uint64_t t) {
      if (t && (!due || t < due)) due = t;
    };
    if (phase_ == Phase::kPlatformLost || phase_ == Phase::kNegotiate) consider(retry_at_);
    if (phase_ == Phase::kWaitConnected || phase_ == Phase::kClosing) consider(deadline_);
    consider(reread_at_);
    itimerspec its{};
    if (due) {
      uint64_t now = now_ms();
      uint64_t in = due > now ? due - now : 1;
      its.it_value.tv_sec = static_cast<time_t>(in / 1000);
      its.it_value.tv_nsec = static_cast<long>((in % 1000) * 1'000'000);
    }
    ::timerfd_settime(timer_.get(), 0, &its, nullptr);
  }

  bool poll_control() {
    eventfd_drain(wake_.get());
    uint64_t exp;
    (void)!::read(timer_.get(), &exp, sizeof exp);
    drain_watches();
    // Several steps: each reacts to what the previous one wrote.
    for (int i = 0; i < 4; ++i) {
      Phase before = phase_;
      step();
      if (phase_ == before) break;
    }
    arm_timer();
    bool changed = link_dirty_;
    link_dirty_ = false;
    return changed;
  }

  Status connect() {
    want_connected_ = true;
    fatal_.reset();
    retry_at_ = 0;
    if (phase_ == Phase::kIdle) set_phase(Phase::kNegotiate);
    const uint64_t deadline = now_ms() + cfg_.connect_timeout_ms;
    for (;;) {
      poll_control();
      if (phase_ == Phase::kConnected) return {};
      if (fatal_) {
        Error e = *fatal_;
        close();
        return e;
      }
      uint64_t now = now_ms();
      if (now >= deadline) {
        close();
        return make_error(ETIMEDOUT, format("vif %u: no connection with backend %s within %u ms "
                                            "(backend state stayed %s)",
                                            cfg_.vif, info_.backend_path.c_str(),
                                            cfg_.connect_timeout_ms, last_backend_state().c_str()));
      }
      pollfd pf{epfd_.get(), POLLIN, 0};
      ::poll(&pf, 1, static_cast<int>(std::min<uint64_t>(deadline - now, 100)));
    }
  }

  // ---- the control ring: RSS ----------------------------------------------

  Status connect_ctrl() {
    auto caps = query_rss(*ctrl_);
    if (!caps) return caps.error();
    rss_caps_ = *caps;
    if (!(rss_ == RssConfig{})) {
      Status s = check_rss(rss_, cfg_.queues, rss_caps_.mapping_size_max);
      if (s.failed()) return make_error(s.code(), "the RSS configuration: " + s.message());
      s = apply_rss(*ctrl_, rss_);
      if (s.failed()) return make_error(s.code(), "configuring RSS: " + s.message());
    }
    // Static grants: each queue's pools, when the backend maps grefs.
    static_refs_.assign(queues_.size(), {});
    for (size_t i = 0; i < queues_.size(); ++i) {
      auto r = register_static_grants(*ctrl_, static_cast<uint32_t>(i), queues_[i]->pool_grants());
      if (!r) return make_error(r.error().code, "registering static grants: " + r.error().message);
      static_refs_[i] = std::move(*r);
      queues_[i]->note_static_grants(!static_refs_[i].empty());
    }
    return {};
  }

  // Before we close an orderly connection: the backend unmaps what it
  // mapped for us (DEL_GREF_MAPPING). A backend gone already unmapped them
  // at its disconnect; whatever it still maps is kept at teardown.
  void release_static_grants() {
    for (size_t i = 0; i < static_refs_.size(); ++i) {
      if (static_refs_[i].empty() || !ctrl_ || ctrl_->broken()) continue;
      Status s = deregister_static_grants(*ctrl_, static_cast<uint32_t>(i), static_refs_[i]);
      if (s.failed())
        log_warn("vif %u: queue %zu: deregistering static grants: %s", cfg_.vif, i,
                 s.message().c_str());
      static_refs_[i].clear();
    }
  }

  RssCapabilities rss_capabilities() const {
    if (rss_caps_.connected) return rss_caps_;
    RssCapabilities c;
    c.available = info_.features.ctrl_ring;
    if (c.available) {
      c.hash_types = kHashTypesNetif;
      c.key_size_max = kRssKeyMax;
    }
    return c;
  }

  Status set_rss(const RssConfig& cfg) {
    const bool connected = phase_ == Phase::kConnected && ctrl_;
    // Not connected: the backend's features as they are now (read again
    // at connect).
    if (!connected && xs_ && phase_ != Phase::kPlatformLost) (void)read_info();
    if (cfg.hash_types && !info_.features.ctrl_ring) {
      return make_error(ENOTSUP, format("backend %s does not offer feature-ctrl-ring: no RSS there",
                                        info_.backend_path.c_str()));
    }
    XPV_TRY(check_rss(cfg, cfg_.queues, connected ? rss_caps_.mapping_size_max : 0));
    if (connected && cfg.hash_types & ~rss_caps_.hash_types) {
      return make_error(ENOTSUP,
                        format("hash types 0x%x: backend %s hashes only 0x%x "
                               "(GET_HASH_FLAGS)",
                               cfg.hash_types, info_.backend_path.c_str(), rss_caps_.hash_types));
    }
    if (connected) {
      Status s = apply_rss(*ctrl_, cfg);
      if (s.failed()) {
        if (ctrl_->broken()) begin_close(s.message());
        return s;
      }
    }
    rss_ = cfg;
    return {};
  }

  // ---- multicast filtering in the backend ---------------------------------

  Status set_multicast_filter(bool on, std::span<const MacAddr> groups) {
    if (groups.size() > kMaxMulticastGroups) {
      return make_error(E2BIG, format("%zu multicast groups: a backend filters %u at most",
                                      groups.size(), kMaxMulticastGroups));
    }
    for (const MacAddr& g : groups) {
      if (!(g[0] & 1)) return make_error(EINVAL, to_string(g) + " is not a multicast address");
    }
    mc_on_ = on;
    mc_groups_.assign(groups.begin(), groups.end());
    if (phase_ != Phase::kConnected) return {};
    return apply_multicast();
  }

  // Brings the backend's list and request-multicast-control to what was
  // asked: groups no longer wanted out, new ones in, then the filter on (so
  // that no wanted group is dropped meanwhile); off: the filter off first.
  Status apply_multicast() {
    const BackendFeatures& f = info_.features;
    if (!f.multicast_control || !f.dynamic_multicast_control) {
      if (!mc_on_) return {};
      return make_error(ENOTSUP, format("backend %s does not offer "
                                        "feature-dynamic-multicast-control: no multicast "
                                        "filtering there",
                                        info_.backend_path.c_str()));
    }
    auto request = [&](bool v) -> Status {
      if (mc_requested_ == v) return {};
      XPV_TRY(xs_->write(kXsNoTransaction, info_.frontend_path + "/request-multicast-control",
                         v ? "1" : "0"));
      mc_requested_ = v;
      return {};
    };
    if (!mc_on_) XPV_TRY(request(false));
    QueueImpl& q = *queues_[0];
    auto wanted = [&](const MacAddr& m) {
      return mc_on_ && std::find(mc_groups_.begin(), mc_groups_.end(), m) != mc_groups_.end();
    };
    for (size_t i = 0; i < mc_applied_.size();) {
      if (wanted(mc_applied_[i])) {
        ++i;
        continue;
      }
      XPV_TRY(q.send_mcast(netif::kExtraTypeMcastDel, mc_applied_[i]));
      mc_applied_.erase(mc_applied_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (mc_on_) {
      for (const MacAddr& g : mc_groups_) {
        if (std::find(mc_applied_.begin(), mc_applied_.end(), g) != mc_applied_.end()) continue;
        if (Status s = q.send_mcast(netif::kExtraTypeMcastAdd, g); s.failed()) {
          // A wanted group the backend does not hold: its filter off rather
          // than frames lost (the next call tries again).
          (void)request(false);
          return s;
        }
        mc_applied_.push_back(g);
      }
      XPV_TRY(request(true));
    }
    return {};
  }

  std::string last_backend_state() {
    if (!xs_) return "unknown (no platform)";
    auto v = xs_->try_read(kXsNoTransaction, info_.backend_path + "/state");
    if (!v || !*v) return "absent";
    return state_name(parse_state(*v));
  }

  void close() {
    want_connected_ = false;
    if (phase_ == Phase::kIdle) return;
    stop_queues();
    if (phase_ == Phase::kConnected) {
      for (auto& q : queues_)
        q->drain_tx(1000);
      release_static_grants();
    }
    if (xs_ && (phase_ == Phase::kConnected || phase_ == Phase::kWaitConnected ||
                phase_ == Phase::kClosing)) {
      (void)write_state(XenbusState::kClosing);
      const uint64_t deadline = now_ms() + kCloseWaitMs;
      while (now_ms() < deadline) {
        auto v = xs_->try_read(kXsNoTransaction, info_.backend_path + "/state");
        if (!v) break;
        auto be = parse_state(*v);
        if (!be || be == XenbusState::kClosing || be == XenbusState::kClosed) break;
        pollfd pf{xs_->watch_fd(), POLLIN, 0};
        ::poll(&pf, 1, 20);
        drain_watches();
      }
    }
    teardown_queues();
    if (xs_) {
      (void)write_state(XenbusState::kClosed);
      // Leave nothing behind that could break the next frontend's connect.
      (void)xs_transact(*xs_, [&](xs_transaction_t t) {
        return remove_stale_keys(*xs_, t, info_.frontend_path);
      });
    }
    link_changed(LinkState::kDown, "closed");
    // Every phase but kPlatformLost reads xenstore: a device closed while
    // its platform connection is gone stays there, and the next connect()
    // reopens the platform first.
    set_phase(xs_ ? Phase::kIdle : Phase::kPlatformLost);
  }

  DeviceConfig cfg_;
  std::unique_ptr<Platform> plat_;
  std::unique_ptr<XenStore> xs_;
  std::unique_ptr<GrantSharer> sharer_;
  std::vector<std::unique_ptr<QueueImpl>> queues_;
  QueueImpl unconnected_queue_{kMaxQueues};  // what queue() answers for a bad index
  DeviceInfo info_;
  DeviceInfo last_connected_;  // info_ as the previous connection found it
  std::string be_watched_;
  std::string last_read_error_;  // the last failure of read_node(), logged once
  Phase phase_ = Phase::kIdle;
  LinkState link_ = LinkState::kDown;
  bool link_dirty_ = false;
  bool want_connected_ = false;
  // Multicast filtering (set_multicast_filter): what was asked, and what the
  // backend holds on this connection.
  bool mc_on_ = false;
  std::vector<MacAddr> mc_groups_;
  std::vector<MacAddr> mc_applied_;
  // The control ring of the live connection (feature-ctrl-ring), what RSS
  // was asked and what the backend answered it can do.
  std::unique_ptr<CtrlRing> ctrl_;
  CtrlCounters ctrl_base_;  // counts of the rings of earlier connections
  RssConfig rss_;
  RssCapabilities rss_caps_;
  // Per queue: the grefs the backend maps for it (static grants), empty in
  // grant-copy mode.
  std::vector<std::vector<grant_ref_t>> static_refs_;
  bool mc_requested_ = false;  // request-multicast-control=1 written
  bool ever_connected_ = false;
  uint64_t reconnects_ = 0;
  std::vector<std::string> warned_;  // the fallbacks of the last read_info(), logged
  uint64_t deadline_ = 0;
  uint64_t retry_at_ = 0;
  uint64_t reread_at_ = 0;  // a read of step() failed: step again then
  std::optional<Error> fatal_;
  std::function<void(const DeviceEvent&)> cb_;
  UniqueFd epfd_, wake_, timer_;
  mutable std::mutex mu_;
  std::string last_down_reason_;
  TeardownAccount account_;
};

// ---------------------------------------------------------------------------

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;

Result<std::unique_ptr<Device>> Device::open(const DeviceConfig& cfg) {
  auto impl = std::make_unique<Impl>(cfg);
  Status s = impl->init();
  if (s.failed()) return s.error();
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

Status Device::connect() {
  return impl_->connect();
}
void Device::close() {
  impl_->close();
}
bool Device::poll_control() {
  return impl_->poll_control();
}
int Device::control_fd() const {
  return impl_->epfd_.get();
}
LinkState Device::link() const {
  return impl_->link_;
}
const DeviceInfo& Device::info() const {
  return impl_->info_;
}
uint32_t Device::num_queues() const {
  return static_cast<uint32_t>(impl_->queues_.size());
}
Queue& Device::queue(uint32_t i) {
  if (i < impl_->queues_.size()) [[likely]]
    return impl_->queues_[i]->api();
  // A caller's bug, but the library never throws (vector::at would): name
  // it and hand out a queue that is never connected, whose calls all do
  // nothing (transmit and receive take 0 packets).
  log_error("vif %u: queue %u requested, but the device has %zu queue%s", impl_->cfg_.vif, i,
            impl_->queues_.size(), impl_->queues_.size() == 1 ? "" : "s");
  return impl_->unconnected_queue_.api();
}
void Device::set_link_callback(std::function<void(const DeviceEvent&)> cb) {
  impl_->cb_ = std::move(cb);
}
std::string Device::last_down_reason() const {
  std::lock_guard lk(impl_->mu_);
  return impl_->last_down_reason_;
}
uint64_t Device::reconnects() const {
  return impl_->reconnects_;
}
Status Device::set_multicast_filter(bool on, std::span<const MacAddr> groups) {
  return impl_->set_multicast_filter(on, groups);
}

Status Device::set_rss(const RssConfig& cfg) {
  return impl_->set_rss(cfg);
}
const RssConfig& Device::rss() const {
  return impl_->rss_;
}
RssCapabilities Device::rss_capabilities() const {
  return impl_->rss_capabilities();
}
CtrlCounters Device::ctrl_counters() const {
  return impl_->ctrl_counters();
}

Device::TeardownAccount Device::teardown_account() const {
  std::lock_guard lk(impl_->mu_);
  return impl_->account_;
}

}  // namespace xpv
