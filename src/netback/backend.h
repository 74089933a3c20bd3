// SPDX-License-Identifier: MIT
// xpv-netback's backend: dom0 on a simulated hypervisor. It plays the
// toolstack (a vif per new domain, as xl creates them) and serves each vif
// the way Linux's xen-netback does, with optional modes and faults.
//
// Usable in process (tests) as well as by the xpv-netback program:
//
//   auto hv = sim::Hypervisor::create();
//   auto be = netback::Backend::create(**hv, cfg);
//   (*be)->start();
//   ... frontends connect (sim::Server, or sim::local_platform(hv, false)) ...
//   (*be)->stop();
//
// One control thread handles xenstore (domain arrival and departure, the
// frontends' state changes, the handshake); each connected queue has its own
// worker thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "netback/bridge.h"
#include "netback/config.h"
#include "netback/counters.h"
#include "netback/vif.h"
#include "sim/hypervisor.h"
#include "util/fd.h"
#include "xpv/platform.h"

namespace xpv::netback {

class Backend {
 public:
  static Result<std::unique_ptr<Backend>> create(sim::Hypervisor& hv, Config cfg);
  ~Backend();  // stop()
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Connects as dom0, watches for domains, starts the control thread.
  // Domains that exist already get their vifs too.
  Status start();
  // Closes every vif (backend Closing then Closed), stops every thread.
  // The vifs' nodes stay (the hypervisor usually goes next). Idempotent.
  void stop();

  const Config& config() const { return cfg_; }

  // Every vif seen: those of domains gone first, then the live ones.
  std::vector<VifStats> stats() const;
  std::optional<VifStats> vif_stats(domid_t domid, uint32_t handle) const;
  Counters totals() const;

  // Bridge mode: the learning table (empty in the other modes).
  std::vector<BridgeFdbEntry> bridge_fdb() const;

  // The stats file's content (JSON) and the exit summary (text).
  std::string stats_json() const;
  std::string summary() const;

 private:
  Backend(sim::Hypervisor& hv, Config cfg);
  void control_loop();
  void handle_watch(const XsWatchEvent& ev);
  void scan_new_domains();
  void scan_gone_domains();
  void add_domain(domid_t d);
  void remove_domain(domid_t d);
  Result<std::set<domid_t>> live_domains();

  sim::Hypervisor& hv_;
  const Config cfg_;
  std::unique_ptr<Platform> dom0_;
  std::unique_ptr<XenStore> xs_;
  std::unique_ptr<GrantMapper> mapper_;
  UniqueFd wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  std::unique_ptr<Bridge> bridge_;  // bridge mode; outlives the vifs (declared before them)

  mutable std::mutex mu_;  // the vifs and their queues (control thread vs. stats readers)
  std::set<domid_t> domains_;
  std::map<std::pair<domid_t, uint32_t>, std::unique_ptr<Vif>> vifs_;
  std::vector<VifStats> retired_;  // vifs of domains that are gone
};

}  // namespace xpv::netback
