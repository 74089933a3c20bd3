// SPDX-License-Identifier: MIT
// The xenbus side of a vif, after Linux's drivers/net/xen-netback/xenbus.c:
// frontend_changed() drives set_backend_state(), which walks the shortest
// path between states; connect() reads what the frontend wrote and maps its
// rings; any failure is a "xenbus fatal": the message goes to the backend
// directory's "error" node (Linux writes error/<backend path>/error under
// dom0's home: a simplification) and the backend switches to Closing.
#include <cerrno>
#include <cstdlib>

#include "netback/clock.h"
#include "netback/vif.h"
#include "util/log.h"

namespace xpv::netback {

namespace {

// xenbus_scanf("%u"): the whole value must be an unsigned number.
std::optional<uint64_t> parse_unsigned(const std::string& s) {
  if (s.empty() || s[0] == '-' || s[0] == '+' || s[0] == ' ') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end != '\0') return std::nullopt;
  return v;
}

// A key of the frontend: absent (nullopt inside), or its unsigned value;
// an error for a value that is not a number.
struct Key {
  bool present = false;
  bool valid = false;
  uint64_t value = 0;
};

Key read_key(XenStore& xs, const std::string& dir, const char* name) {
  Key k;
  auto r = xs.try_read(kXsNoTransaction, dir + "/" + name);
  if (!r || !*r) return k;
  k.present = true;
  auto v = parse_unsigned(**r);
  if (v) {
    k.valid = true;
    k.value = *v;
  }
  return k;
}

// xenbus_read_unsigned(): the default when absent or not a number.
uint64_t read_unsigned(XenStore& xs, const std::string& dir, const char* name, uint64_t dflt) {
  Key k = read_key(xs, dir, name);
  return k.valid ? k.value : dflt;
}

const char* state_name(XenbusState s) {
  return netif::to_string(s);
}

}  // namespace

Vif::Vif(const Config& cfg, Platform& dom0, GrantMapper& mapper, domid_t domid, uint32_t handle,
         const Mac& mac, int control_wake_fd, Bridge* bridge)
    : cfg_(cfg),
      dom0_(dom0),
      mapper_(mapper),
      ctx_(std::make_unique<VifContext>(cfg, domid, handle, mac, control_wake_fd)),
      first_mac_(mac),
      bridge_(bridge),
      control_wake_fd_(control_wake_fd) {
  ctx_->bridge = bridge;
  fe_path_ = format("/local/domain/%u/device/vif/%u", domid, handle);
  be_path_ = format("/local/domain/0/backend/vif/%u/%u", domid, handle);
  // xs-state-* inject a number as a state; they and xs-keys-vanish fire once.
  if (cfg.fault == Fault::kReconnect || cfg.fault == Fault::kReattach) {
    reconnects_left_ = fault_arg_or_default(cfg);
  } else if (is_control_fault(cfg.fault)) {
    reconnects_left_ = 1;
  }
}

Vif::~Vif() {
  disconnect();
}

std::string Vif::state_watch_token() const {
  return format("fe/%u/%u", ctx_->domid, ctx_->handle);
}

std::string Vif::mcast_watch_token() const {
  return format("mc/%u/%u", ctx_->domid, ctx_->handle);
}

// xen_mcast_ctrl_changed(): with feature-dynamic-multicast-control the
// frontend may turn the filter on and off at any time.
void Vif::multicast_control_changed(XenStore& xs) {
  const bool on = read_unsigned(xs, fe_path_, "request-multicast-control", 0) != 0;
  if (ctx_->multicast_control.exchange(on) != on) {
    log_info("%s: multicast control %s", ctx_->name.c_str(), on ? "on" : "off");
  }
}

void Vif::switch_state(XenStore& xs, XenbusState s) {
  // xenbus_switch_state().
  log_debug("%s: backend %s -> %s", ctx_->name.c_str(), state_name(be_state_), state_name(s));
  be_state_ = s;
  Status w = xs.write(kXsNoTransaction, be_path_ + "/state", std::to_string(static_cast<int>(s)));
  if (w.failed()) {
    log_warn("%s: writing backend state %d: %s", ctx_->name.c_str(), static_cast<int>(s),
             w.message().c_str());
  }
}

void Vif::fatal(XenStore& xs, int err, const std::string& msg) {
  // xenbus_dev_fatal(): "<errno> <message>", then Closing.
  log_error("%s: %s", ctx_->name.c_str(), msg.c_str());
  fatal_reason_ = msg;
  ctr_.fatal_errors.add();
  (void)xs.write(kXsNoTransaction, be_path_ + "/error", format("%d %s", err, msg.c_str()));
  disconnect();
  switch_state(xs, XenbusState::kClosing);
}

// set_backend_state(): from the current state to `target` by the shortest
// path of Linux's diagram.
void Vif::set_backend_state(XenStore& xs, XenbusState target) {
  using S = XenbusState;
  for (int guard = 0; be_state_ != target && guard < 8; ++guard) {
    switch (be_state_) {
      case S::kInitialising:
        switch_state(xs, target == S::kClosed ? S::kClosed : S::kInitWait);
        break;
      case S::kClosed:
        switch_state(xs, target == S::kClosing ? S::kClosing : S::kInitWait);
        break;
      case S::kInitWait:
        if (target == S::kConnected) {
          if (!connect(xs)) return;  // fatal: now Closing, stay there
          switch_state(xs, S::kConnected);
        } else {
          switch_state(xs, S::kClosing);
        }
        break;
      case S::kConnected:
        disconnect();  // backend_disconnect()
        switch_state(xs, S::kClosing);
        break;
      case S::kClosing:
        switch_state(xs, S::kClosed);
        break;
      default:
        switch_state(xs, S::kClosed);
        break;
    }
  }
}

// frontend_changed().
void Vif::frontend_changed(XenStore& xs) {
  using S = XenbusState;
  // xenbus_read_driver_state(): an absent or unparsable node is Unknown.
  S fe = S::kUnknown;
  Key k = read_key(xs, fe_path_, "state");
  if (k.valid && k.value <= 0x7FFFFFFF) fe = static_cast<S>(static_cast<int>(k.value));
  // A watch event fires once when set and for every write; several may show
  // the same state (the node is read when the event is handled). Only a
  // change is a transition. Linux reruns frontend_changed(), which comes to
  // the same: its transitions are idempotent, and after a failed connect it
  // records Connected, so a second Connected does nothing there either.
  if (fe == fe_state_) return;
  log_debug("%s: frontend state %s%s", ctx_->name.c_str(), state_name(fe),
            k.present ? "" : " (node gone)");
  fe_state_ = fe;

  if (phase_ == Phase::kWaitFrontendClosed) {
    // reconnect fault: wait for the frontend to close (or to start over).
    if (fe == S::kClosed || fe == S::kUnknown || fe == S::kInitialising) finish_reconnect(xs);
    return;
  }
  if (phase_ == Phase::kDetachWaitClosed) {
    // reattach: xl network-detach waits for the frontend to close.
    if (fe == S::kClosed || fe == S::kUnknown || fe == S::kInitialising) finish_detach(xs);
    return;
  }
  if (phase_ == Phase::kDetached) return;  // our own removal of the nodes
  if (keys_removed_ && (fe == S::kClosed || fe == S::kUnknown)) {
    // xs-keys-vanish: the frontend gave up on the keyless backend; the keys
    // come back for its next attempt.
    keys_removed_ = false;
    Status r = restore_feature_keys(xs);
    log_info("%s: fault xs-keys-vanish: feature keys written again%s%s", ctx_->name.c_str(),
             r.failed() ? ": " : "", r.failed() ? r.message().c_str() : "");
  }
  switch (fe) {
    case S::kInitialising:
      set_backend_state(xs, S::kInitWait);
      break;
    case S::kInitialised:
      break;
    case S::kConnected:
      set_backend_state(xs, S::kConnected);
      break;
    case S::kClosing:
      set_backend_state(xs, S::kClosing);
      break;
    case S::kClosed:
      // online stays 1: the device is kept for a reconnect.
      set_backend_state(xs, S::kClosed);
      break;
    case S::kUnknown:
      // The frontend's node is gone (its domain is dying).
      set_backend_state(xs, S::kClosed);
      break;
    default:
      fatal(xs, EINVAL, format("saw state %d at frontend", static_cast<int>(fe)));
      break;
  }
}

// connect() with connect_data_rings() and read_xenbus_vif_flags().
bool Vif::connect(XenStore& xs) {
  const std::string& fe = fe_path_;
  // Absent means 1; a value that is not a number reads as the default too.
  const uint64_t nq = read_unsigned(xs, fe, "multi-queue-num-queues", 1);
  if (nq > cfg_.max_queues) {
    fatal(xs, EINVAL,
          format("guest requested %llu queues, exceeding the maximum of %u.",
                 static_cast<unsigned long long>(nq), cfg_.max_queues));
    return false;
  }
  if (nq == 0) {
    fatal(xs, EINVAL, "guest requested 0 queues.");
    return false;
  }

  Key rx_copy = read_key(xs, fe, "request-rx-copy");
  if (rx_copy.present && !rx_copy.valid) {
    fatal(xs, EINVAL, format("reading %s/request-rx-copy", fe.c_str()));
    return false;
  }
  if (!rx_copy.present || rx_copy.value == 0) {
    fatal(xs, EOPNOTSUPP, "frontend does not support rx-copy");
    return false;
  }
  VifContext& c = *ctx_;
  c.rx_notify = read_unsigned(xs, fe, "feature-rx-notify", 0) != 0;
  c.can_sg = read_unsigned(xs, fe, "feature-sg", 0) != 0;
  c.ip_csum = read_unsigned(xs, fe, "feature-no-csum-offload", 0) == 0;
  // read_xenbus_vif_flags(): what the frontend takes on its RX ring. GSO
  // needs feature-sg too (xenvif_fix_features drops TSO without SG).
  c.ipv6_csum = read_unsigned(xs, fe, "feature-ipv6-csum-offload", 0) != 0;
  c.gso_mask = static_cast<uint8_t>(
      (read_unsigned(xs, fe, "feature-gso-tcpv4", 0) ? 1u << netif::kGsoTypeTcpV4 : 0) |
      (read_unsigned(xs, fe, "feature-gso-tcpv6", 0) ? 1u << netif::kGsoTypeTcpV6 : 0));
  // The filter starts empty; it applies when the frontend asks for it.
  c.mcast_clear();
  c.multicast_control.store(cfg_.multicast_control &&
                            read_unsigned(xs, fe, "request-multicast-control", 0) != 0);
  if (c.rx_notify) {
    c.drain_timeout_ns = cfg_.rx_expire_ms * 1'000'000;
    c.stall_timeout_ns = cfg_.rx_stall_timeout_ms * 1'000'000;
  } else {
    // Linux: poll for RX requests more often (drain timeout 30 ms) and
    // disable RX stall detection.
    log_info("%s: frontend lacks feature-rx-notify: RX drain timeout 30 ms, no stall detection",
             c.name.c_str());
    c.drain_timeout_ns = 30'000'000;
    c.stall_timeout_ns = 0;
  }
  c.disabled.store(false);
  c.fatal_state.store(0);
  c.fatal_reported.store(false);
  c.stalled_queues.store(0);

  // Static grant tables, one per queue, empty until the control ring
  // registers pages.
  c.static_grants.clear();
  for (uint64_t i = 0; i < nq; ++i)
    c.static_grants.push_back(std::make_unique<StaticGrants>());

  // connect_ctrl_ring(): before the data rings, as Linux. No
  // ctrl-ring-ref: the frontend has no control ring (hashing stays off).
  std::unique_ptr<CtrlRing> ctrl;
  Key ctrl_ref = cfg_.ctrl_ring ? read_key(xs, fe, "ctrl-ring-ref") : Key{};
  if (ctrl_ref.present) {
    Key ctrl_ev = read_key(xs, fe, "event-channel-ctrl");
    if (!ctrl_ref.valid || !ctrl_ev.valid) {
      fatal(xs, ctrl_ref.valid && ctrl_ev.present ? EINVAL : ENOENT,
            format(ctrl_ref.valid ? "reading %s/event-channel-ctrl" : "reading %s/ctrl-ring-ref",
                   fe.c_str()));
      return false;
    }
    auto cr =
        CtrlRing::create(c, dom0_, mapper_, static_cast<grant_ref_t>(ctrl_ref.value),
                         static_cast<evtchn_port_t>(ctrl_ev.value), static_cast<uint32_t>(nq));
    if (!cr) {
      log_error("%s: control ring: %s", c.name.c_str(), cr.error().message.c_str());
      fatal(xs, cr.error().code,
            format("mapping shared-frame %llu port %llu",
                   static_cast<unsigned long long>(ctrl_ref.value),
                   static_cast<unsigned long long>(ctrl_ev.value)));
      return false;
    }
    ctrl = std::move(*cr);
  }

  std::vector<std::unique_ptr<Queue>> queues;
  bool split = false;
  for (uint32_t i = 0; i < nq; ++i) {
    // One queue: keys at the top; several: under queue-N.
    const std::string dir = nq == 1 ? fe : format("%s/queue-%u", fe.c_str(), i);
    Key tx_ref = read_key(xs, dir, "tx-ring-ref");
    Key rx_ref = read_key(xs, dir, "rx-ring-ref");
    if (!tx_ref.valid || !rx_ref.valid) {
      fatal(xs, tx_ref.present && rx_ref.present ? EINVAL : ENOENT,
            format("reading %s/ring-ref", dir.c_str()));
      return false;
    }
    // Split event channels first (both keys), then the single one. Stale
    // event-channel-tx/-rx of an earlier frontend win over a fresh
    // event-channel: the frontend must remove them.
    QueueKeys qk;
    qk.index = i;
    qk.tx_ring_ref = static_cast<grant_ref_t>(tx_ref.value);
    qk.rx_ring_ref = static_cast<grant_ref_t>(rx_ref.value);
    Key ev_tx = read_key(xs, dir, "event-channel-tx");
    Key ev_rx = read_key(xs, dir, "event-channel-rx");
    if (ev_tx.valid && ev_rx.valid) {
      qk.tx_evtchn = static_cast<evtchn_port_t>(ev_tx.value);
      qk.rx_evtchn = static_cast<evtchn_port_t>(ev_rx.value);
    } else {
      Key ev = read_key(xs, dir, "event-channel");
      if (!ev.valid) {
        fatal(xs, ev.present ? EINVAL : ENOENT,
              format("reading %s/event-channel(-tx/rx)", dir.c_str()));
        return false;
      }
      qk.tx_evtchn = qk.rx_evtchn = static_cast<evtchn_port_t>(ev.value);
    }
    auto q = Queue::create(c, dom0_, mapper_, qk);
    if (!q) {
      log_error("%s: queue %u: %s", c.name.c_str(), i, q.error().message.c_str());
      queues.clear();
      fatal(xs, q.error().code,
            format("mapping shared-frames %u/%u port tx %u rx %u", qk.tx_ring_ref, qk.rx_ring_ref,
                   qk.tx_evtchn, qk.rx_evtchn));
      return false;
    }
    split = qk.tx_evtchn != qk.rx_evtchn;
    queues.push_back(std::move(*q));
  }

  queues_ = std::move(queues);
  ctrl_ = std::move(ctrl);
  split_ = split;
  c.queue_inboxes.clear();
  if (c.bridge) {
    // On the bridge before the workers start: they need their port's id,
    // and frames for them wait in their inboxes until they run.
    std::vector<std::shared_ptr<BridgeInbox>> rx;
    for (auto& q : queues_)
      rx.push_back(q->inbox());
    port_ = c.bridge->attach(c.domid, c.handle, c.name, std::move(rx), c.hash);
    c.bridge_port = port_->id;
  } else if (cfg_.mode == Mode::kLoopback && ctrl_) {
    // Loopback frames the hash steers to a sibling queue.
    for (auto& q : queues_)
      c.queue_inboxes.push_back(q->inbox());
  }
  for (auto& q : queues_) {
    Status s = q->start();
    if (s.failed()) {
      fatal(xs, s.code(), "starting queue workers: " + s.message());
      return false;
    }
  }
  if (ctrl_) {
    Status s = ctrl_->start();
    if (s.failed()) {
      fatal(xs, s.code(), "starting the control ring: " + s.message());
      return false;
    }
  }
  (void)xs.rm(kXsNoTransaction, be_path_ + "/error");
  ctr_.connects.add();
  if (is_control_fault(cfg_.fault) && reconnects_left_ > 0) {
    c.reconnect_requested.store(false);
    c.reconnect_packets.store(0);
    if (cfg_.fault_every_s) {
      fault_due_ns_ = now_ns() + cfg_.fault_every_s * 1'000'000'000ull;
    } else {
      c.reconnect_threshold.store(std::max<uint64_t>(1, cfg_.fault_after));
    }
  }
  log_info(
      "%s: connected: %llu queue%s, %s event channel%s, sg %d, rx-notify %d, csum %d, "
      "control ring %d",
      c.name.c_str(), static_cast<unsigned long long>(nq), nq == 1 ? "" : "s",
      split ? "split" : "single", split ? "s" : "", c.can_sg, c.rx_notify, c.ip_csum,
      ctrl_ != nullptr);
  return true;
}

void Vif::disconnect() {
  fault_due_ns_ = 0;
  if (queues_.empty()) {
    ctrl_.reset();
    return;
  }
  ctx_->reconnect_threshold.store(0);
  // Off the bridge first: other workers stop queueing for us (what they
  // still try is counted as dropped on their side).
  if (port_) ctx_->bridge->detach(*port_);
  for (auto& q : queues_)
    q->stop();
  if (port_) {
    // What our workers learned between detach() and stopping.
    ctx_->bridge->forget(port_->id);
    port_.reset();
  }
  last_queues_.clear();
  for (auto& q : queues_) {
    const Counters qc = q->counters();
    closed_ += qc;
    last_queues_.push_back(qc);
  }
  queues_.clear();  // unbinds and unmaps
  ctx_->queue_inboxes.clear();
  if (ctrl_) {
    // xenvif_disconnect_ctrl(), after the data rings as in Linux.
    ctrl_->stop();
    closed_ += ctrl_->counters();
    ctrl_.reset();  // unmaps the static grants: the workers are gone
  }
  ctx_->static_grants.clear();
  ctr_.disconnects.add();
  ctx_->stalled_queues.store(0);
  log_info("%s: disconnected", ctx_->name.c_str());
}

void Vif::poll_reports(XenStore& xs) {
  VifContext& c = *ctx_;
  if (c.fatal_state.load(std::memory_order_acquire) == 2 && !c.fatal_reported.exchange(true)) {
    // Linux leaves xenstore alone here (the vif is only disabled); we also
    // leave the reason in the error node, for people and tests.
    fatal_reason_ = c.fatal_reason;
    (void)xs.write(kXsNoTransaction, be_path_ + "/error", format("%d %s", EINVAL, c.fatal_reason));
  }
  if (c.reconnect_requested.exchange(false) && be_state_ == XenbusState::kConnected &&
      phase_ == Phase::kNone && reconnects_left_ > 0) {
    switch (cfg_.fault) {
      case Fault::kReattach:
        start_detach(xs);
        break;
      case Fault::kXsStateBackwards:
      case Fault::kXsStateUndefined:
        inject_state_fault(xs);
        break;
      default:  // reconnect, xs-keys-vanish
        start_reconnect(xs);
        break;
    }
  }
}

// xs-state-backwards: Connected -> InitWait, as a backend that reset itself
// without Closing/Closed; xs-state-undefined: a number that is no
// XenbusState. The data path stops first (this backend stays sane); the
// frontend must close and connect again.
void Vif::inject_state_fault(XenStore& xs) {
  --reconnects_left_;
  ctr_.faults_injected.add();
  disconnect();
  const auto s = cfg_.fault == Fault::kXsStateBackwards
                     ? XenbusState::kInitWait
                     : static_cast<XenbusState>(static_cast<int>(fault_arg_or_default(cfg_)));
  log_info("%s: fault %s: backend state Connected -> %d", ctx_->name.c_str(), to_string(cfg_.fault),
           static_cast<int>(s));
  switch_state(xs, s);
}

// reattach: xl network-detach (backend Closing, wait for the frontend to
// close or 5 s, remove both directories), then xl network-attach with the
// other mac once the frontend saw the vif gone.
void Vif::start_detach(XenStore& xs) {
  --reconnects_left_;
  ++reattach_round_;
  ctr_.faults_injected.add();
  log_info("%s: fault reattach: network-detach (round %llu)", ctx_->name.c_str(),
           static_cast<unsigned long long>(reattach_round_));
  // libxl: online 0, backend Closing; Linux netback's set_backend_state()
  // disconnects (unmaps the rings) on the way from Connected to Closing.
  (void)xs.write(kXsNoTransaction, be_path_ + "/online", "0");
  disconnect();
  switch_state(xs, XenbusState::kClosing);
  phase_ = Phase::kDetachWaitClosed;
  phase_deadline_ns_ = now_ns() + 5'000'000'000ull;
}

void Vif::finish_detach(XenStore& xs) {
  switch_state(xs, XenbusState::kClosed);
  disconnect();
  Status s = remove_nodes(xs);
  if (s.failed()) log_warn("%s", s.message().c_str());
  log_info("%s: fault reattach: the vif's xenstore directories removed", ctx_->name.c_str());
  phase_ = Phase::kDetached;
  phase_deadline_ns_ = now_ns() + 300'000'000ull;  // the frontend sees the vif gone
}

void Vif::reattach(XenStore& xs) {
  // A new device: fresh negotiated state; vif 0's mac alternates.
  const Mac mac = reattach_round_ % 2 ? reattach_mac(cfg_, first_mac_, ctx_->handle) : first_mac_;
  ctx_ = std::make_unique<VifContext>(cfg_, ctx_->domid, ctx_->handle, mac, control_wake_fd_);
  ctx_->bridge = bridge_;
  phase_ = Phase::kNone;
  be_state_ = XenbusState::kInitWait;
  fe_state_ = XenbusState::kUnknown;
  Status s = create_nodes(xs);
  if (s.failed()) {
    log_warn("%s", s.message().c_str());
    return;
  }
  log_info("%s: fault reattach: network-attach mac=%s", ctx_->name.c_str(),
           format_mac(mac).c_str());
}

void Vif::start_reconnect(XenStore& xs) {
  --reconnects_left_;
  ctr_.faults_injected.add();
  log_info("%s: fault reconnect: backend Closing (%llu more to come)", ctx_->name.c_str(),
           static_cast<unsigned long long>(reconnects_left_));
  switch_state(xs, XenbusState::kClosing);
  phase_ = Phase::kWaitFrontendClosed;
  phase_deadline_ns_ = now_ns() + 5'000'000'000ull;
}

void Vif::finish_reconnect(XenStore& xs) {
  // Closed, queues dropped, then InitWait as a freshly probed netback.
  phase_ = Phase::kNone;
  switch_state(xs, XenbusState::kClosed);
  disconnect();
  if (cfg_.fault == Fault::kXsKeysVanish) {
    // Mid-handshake: InitWait without the keys the frontend reads now.
    Status r = remove_feature_keys(xs);
    keys_removed_ = !r.failed();
    log_info("%s: fault xs-keys-vanish: feature keys removed before InitWait%s%s",
             ctx_->name.c_str(), r.failed() ? ": " : "", r.failed() ? r.message().c_str() : "");
  }
  switch_state(xs, XenbusState::kInitWait);
  log_info("%s: fault %s: backend back in InitWait", ctx_->name.c_str(), to_string(cfg_.fault));
}

void Vif::on_timer(XenStore& xs, uint64_t now) {
  if (phase_ == Phase::kNone && fault_due_ns_ && now >= fault_due_ns_) {
    fault_due_ns_ = 0;  // --fault-every: as if the packets had been counted
    ctx_->reconnect_requested.store(true);
    poll_reports(xs);
    return;
  }
  if (phase_ == Phase::kNone || now < phase_deadline_ns_) return;
  switch (phase_) {
    case Phase::kWaitFrontendClosed:
      log_warn("%s: fault %s: the frontend did not close within 5 s", ctx_->name.c_str(),
               to_string(cfg_.fault));
      finish_reconnect(xs);
      break;
    case Phase::kDetachWaitClosed:
      // libxl gives up waiting and removes the device anyway.
      log_warn("%s: fault reattach: the frontend did not close within 5 s", ctx_->name.c_str());
      finish_detach(xs);
      break;
    case Phase::kDetached:
      reattach(xs);
      break;
    case Phase::kNone:
      break;
  }
}

uint64_t Vif::next_deadline_ns() const {
  return phase_ != Phase::kNone ? phase_deadline_ns_ : fault_due_ns_;
}

void Vif::shutdown(XenStore& xs) {
  // netback_remove(): set_backend_state(Closed).
  phase_ = Phase::kNone;
  if (!alive_) return;
  set_backend_state(xs, XenbusState::kClosed);
  disconnect();
}

void Vif::release() {
  alive_ = false;
  phase_ = Phase::kNone;
  disconnect();
}

VifStats Vif::stats() const {
  VifStats s;
  s.domid = ctx_->domid;
  s.handle = ctx_->handle;
  s.name = ctx_->name;
  s.mac = format_mac(ctx_->mac);
  s.alive = alive_;
  s.backend_state = static_cast<int>(be_state_);
  s.frontend_state = static_cast<int>(fe_state_);
  s.disabled = ctx_->disabled.load() && !queues_.empty();
  s.fatal_reason = fatal_reason_;
  if (ctx_->fatal_state.load(std::memory_order_acquire) == 2 && !ctx_->fatal_reported.load()) {
    s.fatal_reason = ctx_->fatal_reason;
  }
  s.queues = static_cast<uint32_t>(queues_.size());
  s.split_evtchn = split_;
  s.total = ctr_.snapshot();
  s.total += closed_;
  if (ctrl_) s.total += ctrl_->counters();
  if (queues_.empty()) {
    s.per_queue = last_queues_;
  } else {
    for (const auto& q : queues_) {
      const Counters qc = q->counters();
      s.total += qc;
      s.per_queue.push_back(qc);
    }
  }
  return s;
}

}  // namespace xpv::netback
