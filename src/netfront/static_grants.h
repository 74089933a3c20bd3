// SPDX-License-Identifier: MIT
// Static grants (netif.h "Static Grants", XEN_NETIF_CTRL_TYPE_GET_GREF_
// MAPPING_SIZE / ADD_GREF_MAPPING / DEL_GREF_MAPPING): our buffer pools are
// granted once per connection already; a backend that can keep grefs mapped
// maps them once and copies with memcpy instead of a grant copy per packet.
// Registered after connect, deregistered before we close; a backend that
// answers NOT_SUPPORTED (Linux netback) or maps fewer grefs than a queue's
// two pools hold keeps grant-copying. A page still registered is never
// given back: ending access to it reports it still mapped and keeps it.
#pragma once

#include <span>
#include <vector>

#include "netfront/ctrl_ring.h"
#include "netfront/queue.h"

namespace xpv {

// Entries of one ADD/DEL_GREF_MAPPING list: one page of struct
// xen_netif_gref.
inline constexpr uint32_t kGrefsPerList = kPageSize / sizeof(netif::CtrlGref);

// Registers both pools of `queue` (TX read-only). Returns the refs
// registered, in order: empty when the backend does not take them (copy
// mode, the reason logged); an error only when the control ring broke.
Result<std::vector<grant_ref_t>> register_static_grants(CtrlRing& ring, uint32_t queue,
                                                        const QueueImpl::PoolGrants& pools);

// Deregisters `refs` of `queue`. An error when the ring broke; a refusal or
// entries the backend did not unmap are logged (their pages are then kept
// at teardown, never freed under the backend).
Status deregister_static_grants(CtrlRing& ring, uint32_t queue, std::span<const grant_ref_t> refs);

}  // namespace xpv
