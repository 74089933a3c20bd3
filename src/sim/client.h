// SPDX-License-Identifier: MIT
// The "sim" platform: a domain's view of the simulated hypervisor.
//
// Over a unix socket (a frontend process, "sim:PATH"), or in process (the
// backend's own dom0, and tests: local_platform() in sim/hypervisor.h, part of
// libxpv-sim). Grants are written into the domain's grant table in shared
// memory, notifications are shared-memory bit flips plus an eventfd write;
// everything else is a request message to the hypervisor.
#pragma once

#include <memory>
#include <string>

#include "xpv/platform.h"

namespace xpv::sim {

// A frontend domain connected to a backend's socket.
Result<std::unique_ptr<Platform>> connect_platform(const std::string& socket_path);

// Closes the doorbells of other handles this sim platform keeps for its
// notifications (fetched again on the next one); returns how many. For tests
// that count file descriptors.
size_t forget_doorbells(Platform& p);

}  // namespace xpv::sim
