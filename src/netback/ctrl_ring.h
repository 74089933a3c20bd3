// SPDX-License-Identifier: MIT
// The control ring of one vif (netif.h "Control ring"; Linux netback's
// xenvif_connect_ctrl(), xenvif_ctrl_action() and hash.c): mapped from the
// frontend's ctrl-ring-ref, its event-channel-ctrl bound, served by one
// thread of its own (Linux: a threaded IRQ) from connect to disconnect.
//
// It answers the hashing messages exactly as Linux netback does (same
// limits, same statuses; hash.h) and publishes the result for the workers
// that steer frames to this vif's queues. The static grant messages are
// answered NOT_SUPPORTED, as Linux does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "evtchn/late_eoi.h"
#include "netback/counters.h"
#include "netback/hash.h"
#include "netback/vif_context.h"
#include "ring/netif_ctrl.h"
#include "util/fd.h"
#include "xpv/platform.h"

namespace xpv::netback {

class CtrlRing {
 public:
  // xenvif_connect_ctrl(): maps the page, refuses a ring claiming more
  // requests than it holds (-EIO), binds the port, resets the vif's hash
  // configuration (a new frontend starts with hashing off). `num_queues`:
  // the connection's queue count, the bound of the mapping's entries.
  static Result<std::unique_ptr<CtrlRing>> create(VifContext& vif, Platform& dom0,
                                                  GrantMapper& mapper, grant_ref_t ref,
                                                  evtchn_port_t port, uint32_t num_queues);
  ~CtrlRing();  // stops the thread, unbinds, unmaps
  CtrlRing(const CtrlRing&) = delete;
  CtrlRing& operator=(const CtrlRing&) = delete;

  Status start();
  void stop();
  Counters counters() const { return ctr_.snapshot(); }

 private:
  CtrlRing(VifContext& vif, GrantMapper& mapper, uint32_t num_queues)
      : vif_(vif), mapper_(mapper), num_queues_(num_queues) {}

  void run();
  bool action();  // xenvif_ctrl_action(); true when it found requests
  netif::CtrlResponse process(const netif::CtrlRequest& req);
  void respond(netif::CtrlResponse rsp);

  // hash.c.
  uint32_t set_hash_algorithm(uint32_t alg);
  uint32_t set_hash_flags(uint32_t flags);
  uint32_t set_hash_key(grant_ref_t gref, uint32_t len);
  uint32_t set_hash_mapping_size(uint32_t size);
  uint32_t set_hash_mapping(grant_ref_t gref, uint32_t len, uint32_t off);
  // One grant copy of `len` bytes from the start of the frontend's page.
  bool copy_from_frontend(grant_ref_t gref, void* dst, uint32_t len);

  VifContext& vif_;
  GrantMapper& mapper_;
  const uint32_t num_queues_;
  GrantMapping map_;
  netif::CtrlBackRing ring_;
  std::unique_ptr<LateEoiChannel> eoi_;
  evtchn_port_t port_ = 0;  // ours
  UniqueFd wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  LiveCounters ctr_;

  HashConfig hash_;        // this thread's copy; published to vif_.hash
  uint64_t requests_ = 0;  // of this connection, for the ctrl-* faults
};

}  // namespace xpv::netback
