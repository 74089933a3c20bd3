// SPDX-License-Identifier: MIT
// The control ring's names, and the compile-time proof that
// ring/netif_ctrl.h is byte-compatible with Xen's netif.h.
#include "ring/netif_ctrl.h"

#include <cstddef>

#include <xen/xen.h>
#include <xen/grant_table.h>
#include <xen/io/netif.h>
#include <xen/io/ring.h>

namespace xpv::netif {
namespace {

using xen_netif_ctrl_request_t = struct xen_netif_ctrl_request;
using xen_netif_ctrl_response_t = struct xen_netif_ctrl_response;
using xen_netif_gref_t = struct xen_netif_gref;

#define XPV_SAME_FIELD(ours, theirs, field)                                          \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #field " offset"); \
  static_assert(sizeof(ours::field) == sizeof(theirs::field), #field " size")

static_assert(sizeof(CtrlRequest) == sizeof(xen_netif_ctrl_request_t));
XPV_SAME_FIELD(CtrlRequest, xen_netif_ctrl_request_t, id);
XPV_SAME_FIELD(CtrlRequest, xen_netif_ctrl_request_t, type);
XPV_SAME_FIELD(CtrlRequest, xen_netif_ctrl_request_t, data);
static_assert(sizeof(CtrlResponse) == sizeof(xen_netif_ctrl_response_t));
XPV_SAME_FIELD(CtrlResponse, xen_netif_ctrl_response_t, id);
XPV_SAME_FIELD(CtrlResponse, xen_netif_ctrl_response_t, type);
XPV_SAME_FIELD(CtrlResponse, xen_netif_ctrl_response_t, status);
XPV_SAME_FIELD(CtrlResponse, xen_netif_ctrl_response_t, data);
static_assert(sizeof(Gref) == sizeof(xen_netif_gref_t));
XPV_SAME_FIELD(Gref, xen_netif_gref_t, ref);
XPV_SAME_FIELD(Gref, xen_netif_gref_t, flags);
XPV_SAME_FIELD(Gref, xen_netif_gref_t, status);
static_assert(CtrlFrontRing::kSize == __CONST_RING_SIZE(xen_netif_ctrl, 1UL << XEN_PAGE_SHIFT));

static_assert(kCtrlTypeInvalid == XEN_NETIF_CTRL_TYPE_INVALID);
static_assert(kCtrlTypeGetHashFlags == XEN_NETIF_CTRL_TYPE_GET_HASH_FLAGS);
static_assert(kCtrlTypeSetHashFlags == XEN_NETIF_CTRL_TYPE_SET_HASH_FLAGS);
static_assert(kCtrlTypeSetHashKey == XEN_NETIF_CTRL_TYPE_SET_HASH_KEY);
static_assert(kCtrlTypeGetHashMappingSize == XEN_NETIF_CTRL_TYPE_GET_HASH_MAPPING_SIZE);
static_assert(kCtrlTypeSetHashMappingSize == XEN_NETIF_CTRL_TYPE_SET_HASH_MAPPING_SIZE);
static_assert(kCtrlTypeSetHashMapping == XEN_NETIF_CTRL_TYPE_SET_HASH_MAPPING);
static_assert(kCtrlTypeSetHashAlgorithm == XEN_NETIF_CTRL_TYPE_SET_HASH_ALGORITHM);
static_assert(kCtrlTypeGetGrefMappingSize == XEN_NETIF_CTRL_TYPE_GET_GREF_MAPPING_SIZE);
static_assert(kCtrlTypeAddGrefMapping == XEN_NETIF_CTRL_TYPE_ADD_GREF_MAPPING);
static_assert(kCtrlTypeDelGrefMapping == XEN_NETIF_CTRL_TYPE_DEL_GREF_MAPPING);
static_assert(kCtrlStatusSuccess == XEN_NETIF_CTRL_STATUS_SUCCESS);
static_assert(kCtrlStatusNotSupported == XEN_NETIF_CTRL_STATUS_NOT_SUPPORTED);
static_assert(kCtrlStatusInvalidParameter == XEN_NETIF_CTRL_STATUS_INVALID_PARAMETER);
static_assert(kCtrlStatusBufferOverflow == XEN_NETIF_CTRL_STATUS_BUFFER_OVERFLOW);
static_assert(kCtrlHashAlgorithmNone == XEN_NETIF_CTRL_HASH_ALGORITHM_NONE);
static_assert(kCtrlHashAlgorithmToeplitz == XEN_NETIF_CTRL_HASH_ALGORITHM_TOEPLITZ);
static_assert(kHashTypeBitIpv4 == _XEN_NETIF_CTRL_HASH_TYPE_IPV4);
static_assert(kHashTypeBitIpv4Tcp == _XEN_NETIF_CTRL_HASH_TYPE_IPV4_TCP);
static_assert(kHashTypeBitIpv6 == _XEN_NETIF_CTRL_HASH_TYPE_IPV6);
static_assert(kHashTypeBitIpv6Tcp == _XEN_NETIF_CTRL_HASH_TYPE_IPV6_TCP);
static_assert(kCtrlGrefReadonly == XEN_NETIF_CTRLF_GREF_readonly);

#undef XPV_SAME_FIELD

}  // namespace

const char* ctrl_type_name(uint16_t type) {
  static constexpr const char* kNames[kCtrlTypeCount] = {
      "INVALID",          "GET_HASH_FLAGS",        "SET_HASH_FLAGS",
      "SET_HASH_KEY",     "GET_HASH_MAPPING_SIZE", "SET_HASH_MAPPING_SIZE",
      "SET_HASH_MAPPING", "SET_HASH_ALGORITHM",    "GET_GREF_MAPPING_SIZE",
      "ADD_GREF_MAPPING", "DEL_GREF_MAPPING"};
  return type < kCtrlTypeCount ? kNames[type] : "unknown";
}

const char* ctrl_status_name(uint32_t status) {
  switch (status) {
    case kCtrlStatusSuccess:
      return "SUCCESS";
    case kCtrlStatusNotSupported:
      return "NOT_SUPPORTED";
    case kCtrlStatusInvalidParameter:
      return "INVALID_PARAMETER";
    case kCtrlStatusBufferOverflow:
      return "BUFFER_OVERFLOW";
  }
  return "unknown";
}

}  // namespace xpv::netif
