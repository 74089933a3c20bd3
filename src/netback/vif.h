// SPDX-License-Identifier: MIT
// One vif: its xenstore nodes (toolstack.cc), its xenbus state machine
// (vif_xenbus.cc, Linux's xenbus.c) and its queues while connected.
//
// A Vif is used by the backend's control thread only (under the backend's
// lock); its queues' workers share the VifContext with it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "netback/config.h"
#include "netback/counters.h"
#include "netback/ctrl_ring.h"
#include "netback/queue.h"
#include "netback/vif_context.h"
#include "ring/netif.h"
#include "xpv/platform.h"

namespace xpv::netback {

using netif::XenbusState;

// A vif as the stats file and the in-process API see it.
struct VifStats {
  domid_t domid = 0;
  uint32_t handle = 0;
  std::string name;
  std::string mac;
  bool alive = true;  // false once the domain is gone
  int backend_state = 0;
  int frontend_state = 0;
  bool disabled = false;  // a fatal error stopped the data path
  std::string fatal_reason;
  uint32_t queues = 0;  // connected queues (0 when not connected)
  bool split_evtchn = false;
  Counters total;                   // everything since the vif was created
  std::vector<Counters> per_queue;  // the current (or last) connection's queues
};

class Vif {
 public:
  // `bridge`: the backend's bridge in bridge mode (it outlives the vif),
  // else nullptr.
  Vif(const Config& cfg, Platform& dom0, GrantMapper& mapper, domid_t domid, uint32_t handle,
      const Mac& mac, int control_wake_fd, Bridge* bridge = nullptr);
  ~Vif();
  Vif(const Vif&) = delete;
  Vif& operator=(const Vif&) = delete;

  domid_t domid() const { return ctx_->domid; }
  uint32_t handle() const { return ctx_->handle; }
  const std::string& name() const { return ctx_->name; }
  const std::string& frontend_path() const { return fe_path_; }
  const std::string& backend_path() const { return be_path_; }
  std::string state_watch_token() const;
  std::string mcast_watch_token() const;
  // The frontend's request-multicast-control changed (its watch fired).
  void multicast_control_changed(XenStore& xs);

  // toolstack.cc: the frontend and backend directories, as xl writes them
  // (with a hostile-xenstore fault's values), and removes them.
  Status create_nodes(XenStore& xs);
  Status remove_nodes(XenStore& xs);

  // vif_xenbus.cc.
  void frontend_changed(XenStore& xs);  // the frontend's state node fired
  void poll_reports(XenStore& xs);      // what the workers reported
  void on_timer(XenStore& xs, uint64_t now_ns);
  uint64_t next_deadline_ns() const;  // 0: none
  void shutdown(XenStore& xs);        // the backend stops: Closing, Closed
  void release();                     // the domain is gone: queues down

  VifStats stats() const;

 private:
  void set_backend_state(XenStore& xs, XenbusState target);
  void switch_state(XenStore& xs, XenbusState s);
  bool connect(XenStore& xs);
  void disconnect();
  void fatal(XenStore& xs, int err, const std::string& msg);
  void start_reconnect(XenStore& xs);
  void finish_reconnect(XenStore& xs);
  void inject_state_fault(XenStore& xs);
  void start_detach(XenStore& xs);
  void finish_detach(XenStore& xs);
  void reattach(XenStore& xs);

  // toolstack.cc: the backend's feature keys (netback_probe), and the
  // xs-keys-vanish fault's removal and return of them.
  using KeyValue = std::pair<std::string, std::string>;
  std::vector<KeyValue> feature_keys() const;
  Status write_backend_keys(XenStore& xs, xs_transaction_t t, const std::vector<KeyValue>& kvs);
  Status remove_feature_keys(XenStore& xs);
  Status restore_feature_keys(XenStore& xs);

  const Config& cfg_;
  Platform& dom0_;
  GrantMapper& mapper_;
  std::unique_ptr<VifContext> ctx_;
  std::string fe_path_, be_path_;

  XenbusState be_state_ = XenbusState::kInitWait;
  XenbusState fe_state_ = XenbusState::kUnknown;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::unique_ptr<CtrlRing> ctrl_;  // while connected, when the frontend set one up
  bool split_ = false;
  std::shared_ptr<const BridgePort> port_;  // bridge mode, while connected

  LiveCounters ctr_;  // the control thread's: connects, disconnects, handshake fatals
  Counters closed_;   // queues of earlier connections
  std::vector<Counters> last_queues_;
  std::string fatal_reason_;
  bool alive_ = true;

  // The faults driven by the control thread after --fault-after packets:
  // reconnect, xs-keys-vanish, xs-state-*, reattach.
  enum class Phase {
    kNone,
    kWaitFrontendClosed,  // reconnect: backend Closing, waiting for the frontend
    kDetachWaitClosed,    // reattach: network-detach, waiting for the frontend
    kDetached,            // reattach: the nodes are gone until the deadline
  } phase_ = Phase::kNone;
  uint64_t phase_deadline_ns_ = 0;
  uint64_t fault_due_ns_ = 0;  // --fault-every: when the next timed fault fires (0: none)
  uint64_t reconnects_left_ = 0;
  bool keys_removed_ = false;  // xs-keys-vanish: until the frontend closed
  const Mac first_mac_;        // reattach: the mac of the even rounds
  uint64_t reattach_round_ = 0;
  Bridge* const bridge_;
  const int control_wake_fd_;
};

}  // namespace xpv::netback
