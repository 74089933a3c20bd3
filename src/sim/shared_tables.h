// SPDX-License-Identifier: MIT
// The simulated hypervisor's tables that live in shared memory (memfd), and
// so are seen by the backend process and every frontend process:
//
//  - per domain, a page pool (the domain's "guest frames") and a grant table
//    in Xen's v1 layout (grant_table.h: struct grant_entry_v1 {flags, domid,
//    frame}). As in Xen, the granting domain writes its own entries and the
//    hypervisor checks them on map/copy, setting GTF_reading/GTF_writing while
//    a page is in use so that the owner cannot end access under the mapper;
//
//  - one event channel table for all domains: per port its binding (written
//    by the hypervisor only) and the pending and mask bits (2-level ABI
//    semantics), which notify/unmask flip directly so that a notification is
//    an atomic store plus, when the port is unmasked, a write to the owning
//    handle's eventfd (its "doorbell").
#pragma once

#include <atomic>
#include <cstdint>

#include "xpv/platform.h"

namespace xpv::sim {

// ---- grant table (Xen's v1 entry, 8 bytes) --------------------------------
struct GrantEntry {
  uint16_t flags;  // GTF_*
  uint16_t domid;  // the domain allowed to use it
  uint32_t frame;  // page index in the granting domain's page pool
};
static_assert(sizeof(GrantEntry) == 8);

// GTF_* (xen/grant_table.h, checked in sim/hypervisor.cc against the header).
inline constexpr uint16_t kGtfPermitAccess = 1u << 0;
inline constexpr uint16_t kGtfTypeMask = 3u << 0;
inline constexpr uint16_t kGtfReadonly = 1u << 2;
inline constexpr uint16_t kGtfReading = 1u << 3;
inline constexpr uint16_t kGtfWriting = 1u << 4;

// GNTST_*.
inline constexpr int16_t kGntOkay = 0;
inline constexpr int16_t kGntGeneralError = -1;
inline constexpr int16_t kGntBadDomain = -2;
inline constexpr int16_t kGntBadGntref = -3;
inline constexpr int16_t kGntBadHandle = -4;
inline constexpr int16_t kGntPermissionDenied = -8;
inline constexpr int16_t kGntBadPage = -9;
inline constexpr int16_t kGntBadCopyArg = -10;

// The first grant references are reserved for the toolstack (Xen's
// GNTTAB_NR_RESERVED_ENTRIES).
inline constexpr grant_ref_t kFirstGrantRef = 8;

// flags and domid form one 32-bit word, updated with compare-and-swap (as
// Xen's _set_status_v1 does) so that a check of "permit access to domain D"
// and the setting of GTF_reading/writing happen as one step.
inline uint32_t grant_word(uint16_t flags, uint16_t domid) {
  return static_cast<uint32_t>(flags) | (static_cast<uint32_t>(domid) << 16);
}
inline std::atomic_ref<uint32_t> grant_word_ref(GrantEntry& e) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(&e));
}

// ---- event channels ---------------------------------------------------------
inline constexpr uint32_t kMaxDomains = 128;  // domids 0..127
inline constexpr uint32_t kPortsPerDomain = 1024;

enum PortState : uint32_t { kPortFree = 0, kPortUnbound = 1, kPortInterdomain = 2 };

struct alignas(32) PortSlot {
  uint32_t state;        // PortState; written by the hypervisor (release)
  uint32_t remote_dom;   // unbound: who may bind; interdomain: the peer
  uint32_t remote_port;  // interdomain: the peer's port
  uint32_t handle_id;    // whose doorbell rings (0: none)
  uint32_t pending;      // 2-level ABI pending bit
  uint32_t masked;       // 2-level ABI mask bit
  uint32_t generation;   // bumped on every (re)binding
  uint32_t pad;
};
static_assert(sizeof(PortSlot) == 32);

inline constexpr size_t kEvtchnTableBytes = sizeof(PortSlot) * kMaxDomains * kPortsPerDomain;

inline PortSlot* port_slot(void* table, uint32_t dom, uint32_t port) {
  return static_cast<PortSlot*>(table) + static_cast<size_t>(dom) * kPortsPerDomain + port;
}

inline std::atomic_ref<uint32_t> aref(uint32_t& v) {
  return std::atomic_ref<uint32_t>(v);
}

}  // namespace xpv::sim
