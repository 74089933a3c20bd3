// SPDX-License-Identifier: MIT
// netif.h's control ring ("Control ring" and "Control messages" sections):
// the frontend grants one page (ctrl-ring-ref) and binds one event channel
// (event-channel-ctrl) when the backend offers feature-ctrl-ring; requests
// and responses of 16 bytes each move through it as through the data rings
// (ring/shared_ring.h). Both halves use these types: netfront produces the
// requests, xpv-netback answers them. netif_layout_check.cc proves the
// layout equal to Xen's.
#pragma once

#include <cstdint>

#include "ring/shared_ring.h"
#include "xpv/platform.h"

namespace xpv::netif {

// struct xen_netif_ctrl_request.
struct CtrlRequest {
  uint16_t id;
  uint16_t type;  // kCtrlType*
  uint32_t data[3];
};

// struct xen_netif_ctrl_response.
struct CtrlResponse {
  uint16_t id;
  uint16_t type;
  uint32_t status;  // kCtrlStatus*
  uint32_t data;
};

// XEN_NETIF_CTRL_TYPE_*.
inline constexpr uint16_t kCtrlTypeInvalid = 0;
inline constexpr uint16_t kCtrlTypeGetHashFlags = 1;
inline constexpr uint16_t kCtrlTypeSetHashFlags = 2;
inline constexpr uint16_t kCtrlTypeSetHashKey = 3;
inline constexpr uint16_t kCtrlTypeGetHashMappingSize = 4;
inline constexpr uint16_t kCtrlTypeSetHashMappingSize = 5;
inline constexpr uint16_t kCtrlTypeSetHashMapping = 6;
inline constexpr uint16_t kCtrlTypeSetHashAlgorithm = 7;
inline constexpr uint16_t kCtrlTypeGetGrefMappingSize = 8;
inline constexpr uint16_t kCtrlTypeAddGrefMapping = 9;
inline constexpr uint16_t kCtrlTypeDelGrefMapping = 10;

// XEN_NETIF_CTRL_STATUS_*.
inline constexpr uint32_t kCtrlStatusSuccess = 0;
inline constexpr uint32_t kCtrlStatusNotSupported = 1;
inline constexpr uint32_t kCtrlStatusInvalidParameter = 2;
inline constexpr uint32_t kCtrlStatusBufferOverflow = 3;

// XEN_NETIF_CTRL_HASH_ALGORITHM_*.
inline constexpr uint32_t kCtrlHashAlgorithmNone = 0;
inline constexpr uint32_t kCtrlHashAlgorithmToeplitz = 1;

// _XEN_NETIF_CTRL_HASH_TYPE_* (bit numbers: the htype of a hash extra) and
// XEN_NETIF_CTRL_HASH_TYPE_* (the flags of GET/SET_HASH_FLAGS).
inline constexpr uint8_t kCtrlHashTypeIpv4Bit = 0;
inline constexpr uint8_t kCtrlHashTypeIpv4TcpBit = 1;
inline constexpr uint8_t kCtrlHashTypeIpv6Bit = 2;
inline constexpr uint8_t kCtrlHashTypeIpv6TcpBit = 3;
inline constexpr uint32_t kCtrlHashTypeIpv4 = 1u << kCtrlHashTypeIpv4Bit;
inline constexpr uint32_t kCtrlHashTypeIpv4Tcp = 1u << kCtrlHashTypeIpv4TcpBit;
inline constexpr uint32_t kCtrlHashTypeIpv6 = 1u << kCtrlHashTypeIpv6Bit;
inline constexpr uint32_t kCtrlHashTypeIpv6Tcp = 1u << kCtrlHashTypeIpv6TcpBit;

// struct xen_netif_gref: one entry of an ADD/DEL_GREF_MAPPING table (the
// table starts at the beginning of the granted page).
struct CtrlGref {
  grant_ref_t ref;
  uint16_t flags;   // kCtrlGrefReadonly
  uint16_t status;  // out: kCtrlStatus* (DEL_GREF_MAPPING)
};
inline constexpr uint16_t kCtrlGrefReadonly = 1u << 0;  // XEN_NETIF_CTRLF_GREF_readonly

using CtrlFrontRing = ring::FrontRing<CtrlRequest, CtrlResponse>;
using CtrlBackRing = ring::BackRing<CtrlRequest, CtrlResponse>;
inline constexpr uint32_t kCtrlRingSize = CtrlFrontRing::kSize;

}  // namespace xpv::netif
