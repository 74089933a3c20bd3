// SPDX-License-Identifier: MIT
// The seam between a sim platform (sim/client.cc, in libxpv) and a simulated
// hypervisor living in the same process (sim/hypervisor.cc, in libxpv-sim).
//
// libxpv carries only what a frontend needs: the client side of the sim
// protocol, so that `backend=sim:PATH` works from any application. The
// hypervisor, its xenstore engine and the socket server are the backend's
// (xpv-netback and the tests link libxpv-sim). An in-process domain reaches
// its hypervisor through these two interfaces, which the client calls and
// sim/local_platform.cc implements over a Hypervisor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "sim/protocol.h"
#include "xpv/platform.h"

namespace xpv::sim {

// How a domain's requests reach the hypervisor and its watch events come back.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<Message> call(Message req) = 0;
  // Readable when pump() would find unsolicited events; -1 when events are
  // delivered to the router directly.
  virtual int readiness_fd() const = 0;
  virtual void pump() = 0;
};

// Turns an error reply into an Error (both transports).
inline Result<Message> checked_reply(Result<Message> r) {
  if (!r) return r;
  if (r->err != 0) return make_error(r->err, r->payload);
  return r;
}

// Backend-side grant operations (GNTTABOP_map_grant_ref / unmap / copy),
// offered only where the hypervisor lives. Return GNTST_* codes.
class InProcessGrants {
 public:
  virtual ~InProcessGrants() = default;
  virtual int16_t map_grant(domid_t caller, domid_t granter, grant_ref_t ref, bool writable,
                            uint8_t** addr, uint64_t* handle) = 0;
  virtual void unmap_grant(uint64_t handle) = 0;
  virtual void copy(domid_t caller, std::span<GrantCopyOp> ops) = 0;
};

// Delivers one unsolicited message (a watch event) to the domain's watchers.
using EventRoute = std::function<void(const Message&)>;

// An in-process domain: `open` makes the transport once the domain's event
// route exists and names the platform ("sim:local-dom0" ...); `grants` (not
// owned, outlives the platform) serves grant map and copy.
struct InProcessLink {
  std::function<Result<std::unique_ptr<Transport>>(EventRoute route, std::string* name)> open;
  InProcessGrants* grants = nullptr;
};
Result<std::unique_ptr<Platform>> in_process_platform(InProcessLink link);

}  // namespace xpv::sim
