// SPDX-License-Identifier: MIT
// Receive-side scaling over the control ring (netif.h "Hash types", the
// XEN_NETIF_CTRL_TYPE_*_HASH_* messages): checking a configuration against
// netif's rules and the backend's limits, querying those limits, and the
// message sequence that configures the backend.
#pragma once

#include "netfront/ctrl_ring.h"
#include "xpv/netfront.h"

namespace xpv {

// EINVAL / E2BIG naming the problem, or success. `mapping_size_max` is the
// backend's GET_HASH_MAPPING_SIZE once known (0: not known yet).
Status check_rss(const RssConfig& cfg, uint32_t queues, uint32_t mapping_size_max);

// GET_HASH_FLAGS and GET_HASH_MAPPING_SIZE: what the backend can do.
// NOT_SUPPORTED leaves hash_types 0 (no hashing) or mapping_size_max 0 (only
// hash % queues).
Result<RssCapabilities> query_rss(CtrlRing& ring);

// SET_HASH_ALGORITHM (Toeplitz, or NONE when cfg.hash_types is 0), then
// SET_HASH_FLAGS, SET_HASH_KEY, SET_HASH_MAPPING_SIZE and SET_HASH_MAPPING.
// The first refusal stops the sequence and is returned naming the request
// and status; a protocol violation comes back from the ring as it is.
Status apply_rss(CtrlRing& ring, const RssConfig& cfg);

}  // namespace xpv
