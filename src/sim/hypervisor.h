// SPDX-License-Identifier: MIT
// The simulated hypervisor: domains with page pools and grant tables, event
// channels, and xenstore, all in one object owned by the backend process.
//
// A domain is a connection: dom0 connects in process; a frontend process
// connects over the unix socket served by sim::Server and becomes a new
// domain (domid 1, 2, ...). When that connection ends, the domain is
// destroyed as Xen destroys a dead guest: its ports are closed (the peer's
// end becomes unbound), its grants are revoked (pages another domain still
// maps stay alive until unmapped), its watches and transactions are dropped,
// and @releaseDomain fires.
//
// Thread-safe: one mutex serialises control operations. Notifications and the
// pending/mask bits are lock-free shared memory (see shared_tables.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/in_process.h"
#include "sim/protocol.h"
#include "sim/shared_tables.h"
#include "sim/xenstore_engine.h"
#include "util/fd.h"
#include "xpv/platform.h"

namespace xpv::sim {

struct HypervisorConfig {
  uint32_t pages_per_domain = 65536;   // 256 MiB of (sparse) guest memory each
  uint32_t grants_per_domain = 16384;  // grant table entries per domain
};

// Accounting, for tests and diagnostics.
struct HypervisorStats {
  uint32_t domains = 0;         // live domains, dom0 included
  uint32_t grants_active = 0;   // grant entries with GTF_permit_access, all domains
  uint32_t grant_maps = 0;      // pages currently mapped through grants
  uint32_t ports_bound = 0;     // ports not free, all domains
  uint32_t evtchn_handles = 0;  // open event channel handles
  uint32_t xs_connections = 0;
  uint32_t zombie_domains = 0;  // dead domains whose pages are still mapped
};

class Hypervisor final : public InProcessGrants {
 public:
  class Connection;
  // Receives the unsolicited messages (watch events) for one connection. It
  // is called with the hypervisor lock held: it must only queue the message.
  using EventSink = std::function<void(Message)>;

  static Result<std::unique_ptr<Hypervisor>> create(HypervisorConfig cfg = {});
  ~Hypervisor() override;
  Hypervisor(const Hypervisor&) = delete;
  Hypervisor& operator=(const Hypervisor&) = delete;

  // Dom0 connections (any number) share domain 0; any other connection
  // creates a new domain.
  Result<std::shared_ptr<Connection>> connect_dom0(EventSink sink);
  Result<std::shared_ptr<Connection>> connect_domain(EventSink sink);
  void disconnect(Connection& c);

  // Executes one request on behalf of a connection and returns its reply.
  Message handle(Connection& c, Message req);

  // Backend-side grant operations (GNTTABOP_map_grant_ref / unmap / copy),
  // checked as Xen checks them. Return GNTST_* codes.
  int16_t map_grant(domid_t caller, domid_t granter, grant_ref_t ref, bool writable, uint8_t** addr,
                    uint64_t* handle) override;
  void unmap_grant(uint64_t handle) override;
  void copy(domid_t caller, std::span<GrantCopyOp> ops) override;

  // The doorbell eventfd of an event channel handle (for notifiers in process).
  int doorbell_fd(uint32_t handle_id);
  void* evtchn_table() const { return evtchn_map_.data(); }

  HypervisorStats stats();
  const HypervisorConfig& config() const { return cfg_; }

 private:
  struct Domain;
  struct Handle;
  struct Mapping;
  explicit Hypervisor(HypervisorConfig cfg);

  Result<std::shared_ptr<Connection>> connect_locked(std::optional<domid_t> dom, EventSink sink);
  void destroy_domain_locked(domid_t d);
  void close_port_locked(domid_t d, uint32_t port);
  Domain* live_domain_locked(domid_t d);
  std::shared_ptr<Domain> find_domain(domid_t d);
  int16_t acquire_grant(Domain& dom, domid_t caller, grant_ref_t ref, bool writable,
                        uint32_t* frame);
  void release_grant(Domain& dom, grant_ref_t ref, bool writable);

  Message do_hello(Connection& c, const Message& req);
  Message do_evtchn(Connection& c, const Message& req);
  Message do_xenstore(Connection& c, const Message& req);
  Message do_stats(const Message& req);
  HypervisorStats stats_locked();

  HypervisorConfig cfg_;
  std::mutex mu_;
  UniqueFd evtchn_fd_;
  MappedRegion evtchn_map_;
  std::map<domid_t, std::shared_ptr<Domain>> domains_;
  std::vector<std::shared_ptr<Domain>> zombies_;  // dead but still mapped
  std::unordered_map<uint32_t, std::unique_ptr<Handle>> handles_;
  std::unordered_map<uint64_t, Mapping> mappings_;
  std::unique_ptr<XenstoreEngine> xs_;
  std::unordered_map<uint32_t, Connection*> xs_conns_;
  uint32_t next_conn_ = 1;
  uint32_t next_handle_ = 1;
  uint64_t next_map_handle_ = 1;
  domid_t next_domid_ = 1;
};

class Hypervisor::Connection {
 public:
  domid_t domid() const { return domid_; }
  uint32_t id() const { return id_; }
  bool alive() const { return alive_; }

 private:
  friend class Hypervisor;
  domid_t domid_ = 0;
  uint32_t id_ = 0;
  bool alive_ = true;
  EventSink sink_;
  std::vector<uint32_t> handles_;  // evtchn handles opened by this connection
};

// A domain of an in-process hypervisor: dom0 (as_dom0) or a new guest domain
// (sim/local_platform.cc). The hypervisor must outlive the platform and every
// handle opened from it.
Result<std::unique_ptr<Platform>> local_platform(Hypervisor& hv, bool as_dom0);

}  // namespace xpv::sim
