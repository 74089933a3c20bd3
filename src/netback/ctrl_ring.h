// SPDX-License-Identifier: MIT
// The control ring of one vif (netif.h "Control ring"; Linux netback's
// xenvif_connect_ctrl(), xenvif_ctrl_action() and hash.c): mapped from the
// frontend's ctrl-ring-ref, its event-channel-ctrl bound, served by one
// thread of its own (Linux: a threaded IRQ) from connect to disconnect.
//
// It answers the hashing messages exactly as Linux netback does (same
// limits, same statuses; hash.h) and publishes the result for the workers
// that steer frames to this vif's queues. The static grant messages
// (static_grants.h) map the pages a frontend registers for the connection;
// with --no-static-grants they are answered NOT_SUPPORTED, as Linux does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "evtchn/late_eoi.h"
#include "netback/counters.h"
#include "netback/hash.h"
#include "netback/static_grants.h"
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
  // One grant copy of `len` bytes from (to) the start of the frontend's page.
  bool copy_from_frontend(grant_ref_t gref, void* dst, uint32_t len);
  bool copy_to_frontend(grant_ref_t gref, const void* src, uint32_t len);

  // Static grants.
  uint32_t get_gref_mapping_size(uint32_t queue, uint32_t* data);
  uint32_t gref_mapping(bool add, uint32_t queue, grant_ref_t list, uint32_t count, uint32_t* data);

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

  HashConfig hash_;                      // this thread's copy; published to vif_.hash
  std::unique_ptr<GrefRegistry> grefs_;  // null with --no-static-grants
  uint64_t requests_ = 0;                // of this connection, for the ctrl-* faults
};

}  // namespace xpv::netback
