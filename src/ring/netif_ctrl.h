// SPDX-License-Identifier: MIT
// The netif control ring's wire format (xen/io/netif.h "Control ring",
// "Control requests", "Control responses", "Static Grants") as C++ types,
// for the frontend and a backend alike. netif_layout_check.cc proves the
// layout equal to Xen's header.
#pragma once

#include <cstdint>

#include "ring/shared_ring.h"

namespace xpv {

namespace netif {

// struct xen_netif_ctrl_request / xen_netif_ctrl_response (netif.h).
struct CtrlRequest {
  uint16_t id;
  uint16_t type;
  uint32_t data[3];
};
struct CtrlResponse {
  uint16_t id;
  uint16_t type;
  uint32_t status;
  uint32_t data;
};
using CtrlFrontRing = ring::FrontRing<CtrlRequest, CtrlResponse>;
using CtrlBackRing = ring::BackRing<CtrlRequest, CtrlResponse>;

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
inline constexpr uint16_t kCtrlTypeCount = 11;

// XEN_NETIF_CTRL_STATUS_*.
inline constexpr uint32_t kCtrlStatusSuccess = 0;
inline constexpr uint32_t kCtrlStatusNotSupported = 1;
inline constexpr uint32_t kCtrlStatusInvalidParameter = 2;
inline constexpr uint32_t kCtrlStatusBufferOverflow = 3;

// XEN_NETIF_CTRL_HASH_ALGORITHM_*.
inline constexpr uint32_t kCtrlHashAlgorithmNone = 0;
inline constexpr uint32_t kCtrlHashAlgorithmToeplitz = 1;

// struct xen_netif_gref: an entry of an ADD/DEL_GREF_MAPPING list.
struct Gref {
  uint32_t ref;
  uint16_t flags;  // XEN_NETIF_CTRLF_GREF_readonly
  uint16_t status;
};
inline constexpr uint16_t kCtrlGrefReadonly = 1u << 0;

// XEN_NETIF_CTRL_HASH_TYPE_* bit numbers (the _-prefixed values, what a
// XEN_NETIF_EXTRA_TYPE_HASH extra carries) and their flags.
inline constexpr uint8_t kHashTypeBitIpv4 = 0;
inline constexpr uint8_t kHashTypeBitIpv4Tcp = 1;
inline constexpr uint8_t kHashTypeBitIpv6 = 2;
inline constexpr uint8_t kHashTypeBitIpv6Tcp = 3;
inline constexpr uint32_t kHashTypeAll = 0xf;

// The statuses netif.h lets a backend answer to `type` (bit per status),
// 0 for a type netif.h does not define.
constexpr uint32_t ctrl_allowed_statuses(uint16_t type) {
  constexpr uint32_t S = 1u << kCtrlStatusSuccess, N = 1u << kCtrlStatusNotSupported,
                     I = 1u << kCtrlStatusInvalidParameter, B = 1u << kCtrlStatusBufferOverflow;
  switch (type) {
    case kCtrlTypeGetHashFlags:
    case kCtrlTypeGetHashMappingSize:
      return S | N;
    case kCtrlTypeSetHashFlags:
    case kCtrlTypeSetHashMappingSize:
    case kCtrlTypeSetHashAlgorithm:
    case kCtrlTypeGetGrefMappingSize:
    case kCtrlTypeAddGrefMapping:
    case kCtrlTypeDelGrefMapping:
      return S | N | I;
    case kCtrlTypeSetHashKey:
    case kCtrlTypeSetHashMapping:
      return S | N | I | B;
    default:
      return 0;
  }
}
const char* ctrl_type_name(uint16_t type);
const char* ctrl_status_name(uint32_t status);

}  // namespace netif

}  // namespace xpv
