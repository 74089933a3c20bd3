// SPDX-License-Identifier: MIT
// Compile-time proof that ring/netif.h is byte-compatible with Xen's public
// headers as installed by libxen-dev (/usr/include/xen/io/netif.h, ring.h).
// If Xen's layout ever differs from ours, this file stops the build.
#include <cstddef>
#include <cstdint>

#include <xen/xen.h>
#include <xen/grant_table.h>
#include <xen/io/netif.h>
#include <xen/io/ring.h>
#include <xen/io/xenbus.h>

#include "ring/netif.h"
#include "ring/netif_ctrl.h"

namespace xpv::netif {
namespace {

#define XPV_SAME_FIELD(ours, theirs, field)                                          \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #field " offset"); \
  static_assert(sizeof(ours::field) == sizeof(theirs::field), #field " size")

// Entries.
static_assert(sizeof(TxRequest) == sizeof(netif_tx_request_t));
XPV_SAME_FIELD(TxRequest, netif_tx_request_t, gref);
XPV_SAME_FIELD(TxRequest, netif_tx_request_t, offset);
XPV_SAME_FIELD(TxRequest, netif_tx_request_t, flags);
XPV_SAME_FIELD(TxRequest, netif_tx_request_t, id);
XPV_SAME_FIELD(TxRequest, netif_tx_request_t, size);

static_assert(sizeof(TxResponse) == sizeof(netif_tx_response_t));
XPV_SAME_FIELD(TxResponse, netif_tx_response_t, id);
XPV_SAME_FIELD(TxResponse, netif_tx_response_t, status);

static_assert(sizeof(RxRequest) == sizeof(netif_rx_request_t));
XPV_SAME_FIELD(RxRequest, netif_rx_request_t, id);
XPV_SAME_FIELD(RxRequest, netif_rx_request_t, gref);

static_assert(sizeof(RxResponse) == sizeof(netif_rx_response_t));
XPV_SAME_FIELD(RxResponse, netif_rx_response_t, id);
XPV_SAME_FIELD(RxResponse, netif_rx_response_t, offset);
XPV_SAME_FIELD(RxResponse, netif_rx_response_t, flags);
XPV_SAME_FIELD(RxResponse, netif_rx_response_t, status);

static_assert(sizeof(ExtraInfo) == sizeof(netif_extra_info_t));
XPV_SAME_FIELD(ExtraInfo, netif_extra_info_t, type);
XPV_SAME_FIELD(ExtraInfo, netif_extra_info_t, flags);
static_assert(offsetof(ExtraInfo, u.gso.size) == offsetof(netif_extra_info_t, u.gso.size));
static_assert(offsetof(ExtraInfo, u.gso.type) == offsetof(netif_extra_info_t, u.gso.type));
static_assert(offsetof(ExtraInfo, u.gso.features) == offsetof(netif_extra_info_t, u.gso.features));
static_assert(offsetof(ExtraInfo, u.mcast.addr) == offsetof(netif_extra_info_t, u.mcast.addr));
static_assert(offsetof(ExtraInfo, u.hash.type) == offsetof(netif_extra_info_t, u.hash.type));
static_assert(offsetof(ExtraInfo, u.hash.value) == offsetof(netif_extra_info_t, u.hash.value));
// An extra-info slot must fit in a TX request slot (it is carried in one).
static_assert(sizeof(ExtraInfo) <= sizeof(TxRequest));

// Shared ring pages: header layout and the number of entries per page.
static_assert(offsetof(ring::SharedRingHeader, req_prod) == offsetof(netif_tx_sring, req_prod));
static_assert(offsetof(ring::SharedRingHeader, req_event) == offsetof(netif_tx_sring, req_event));
static_assert(offsetof(ring::SharedRingHeader, rsp_prod) == offsetof(netif_tx_sring, rsp_prod));
static_assert(offsetof(ring::SharedRingHeader, rsp_event) == offsetof(netif_tx_sring, rsp_event));
static_assert(sizeof(ring::SharedRingHeader) == offsetof(netif_tx_sring, ring));
static_assert(sizeof(ring::SharedRingHeader) == offsetof(netif_rx_sring, ring));
static_assert(sizeof(TxFrontRing::Entry) == sizeof(union netif_tx_sring_entry));
static_assert(sizeof(RxFrontRing::Entry) == sizeof(union netif_rx_sring_entry));
static_assert(TxFrontRing::kSize == __CONST_RING_SIZE(netif_tx, 1UL << XEN_PAGE_SHIFT));
static_assert(RxFrontRing::kSize == __CONST_RING_SIZE(netif_rx, 1UL << XEN_PAGE_SHIFT));
static_assert(ring::kRingPageSize == (1UL << XEN_PAGE_SHIFT));

// Constants.
static_assert(kTxCsumBlank == NETTXF_csum_blank);
static_assert(kTxDataValidated == NETTXF_data_validated);
static_assert(kTxMoreData == NETTXF_more_data);
static_assert(kTxExtraInfo == NETTXF_extra_info);
static_assert(kRxDataValidated == NETRXF_data_validated);
static_assert(kRxCsumBlank == NETRXF_csum_blank);
static_assert(kRxMoreData == NETRXF_more_data);
static_assert(kRxExtraInfo == NETRXF_extra_info);
static_assert(kRxGsoPrefix == NETRXF_gso_prefix);
static_assert(kExtraTypeGso == XEN_NETIF_EXTRA_TYPE_GSO);
static_assert(kExtraTypeMcastAdd == XEN_NETIF_EXTRA_TYPE_MCAST_ADD);
static_assert(kExtraTypeMcastDel == XEN_NETIF_EXTRA_TYPE_MCAST_DEL);
static_assert(kExtraTypeHash == XEN_NETIF_EXTRA_TYPE_HASH);
static_assert(kExtraFlagMore == XEN_NETIF_EXTRA_FLAG_MORE);
static_assert(kGsoTypeNone == XEN_NETIF_GSO_TYPE_NONE);
static_assert(kGsoTypeTcpV4 == XEN_NETIF_GSO_TYPE_TCPV4);
static_assert(kGsoTypeTcpV6 == XEN_NETIF_GSO_TYPE_TCPV6);
static_assert(kRspDropped == NETIF_RSP_DROPPED);
static_assert(kRspError == NETIF_RSP_ERROR);
static_assert(kRspOkay == NETIF_RSP_OKAY);
static_assert(kRspNull == NETIF_RSP_NULL);
static_assert(kMaxSlotsMin == XEN_NETIF_NR_SLOTS_MIN);
static_assert(kMaxTxSize == XEN_NETIF_MAX_TX_SIZE);

static_assert(static_cast<int>(XenbusState::kInitialising) == XenbusStateInitialising);
static_assert(static_cast<int>(XenbusState::kInitWait) == XenbusStateInitWait);
static_assert(static_cast<int>(XenbusState::kConnected) == XenbusStateConnected);
static_assert(static_cast<int>(XenbusState::kClosing) == XenbusStateClosing);
static_assert(static_cast<int>(XenbusState::kClosed) == XenbusStateClosed);
static_assert(static_cast<int>(XenbusState::kReconfigured) == XenbusStateReconfigured);

// The control ring (ring/netif_ctrl.h).
using XenCtrlRequest = struct xen_netif_ctrl_request;
using XenCtrlResponse = struct xen_netif_ctrl_response;
using XenGref = struct xen_netif_gref;
static_assert(sizeof(CtrlRequest) == sizeof(struct xen_netif_ctrl_request));
XPV_SAME_FIELD(CtrlRequest, XenCtrlRequest, id);
XPV_SAME_FIELD(CtrlRequest, XenCtrlRequest, type);
XPV_SAME_FIELD(CtrlRequest, XenCtrlRequest, data);
static_assert(sizeof(CtrlResponse) == sizeof(struct xen_netif_ctrl_response));
XPV_SAME_FIELD(CtrlResponse, XenCtrlResponse, id);
XPV_SAME_FIELD(CtrlResponse, XenCtrlResponse, type);
XPV_SAME_FIELD(CtrlResponse, XenCtrlResponse, status);
XPV_SAME_FIELD(CtrlResponse, XenCtrlResponse, data);
static_assert(sizeof(CtrlGref) == sizeof(struct xen_netif_gref));
XPV_SAME_FIELD(CtrlGref, XenGref, ref);
XPV_SAME_FIELD(CtrlGref, XenGref, flags);
XPV_SAME_FIELD(CtrlGref, XenGref, status);
static_assert(sizeof(CtrlFrontRing::Entry) == sizeof(union xen_netif_ctrl_sring_entry));
static_assert(CtrlFrontRing::kSize == __CONST_RING_SIZE(xen_netif_ctrl, 1UL << XEN_PAGE_SHIFT));
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
static_assert(kCtrlHashTypeIpv4Bit == _XEN_NETIF_CTRL_HASH_TYPE_IPV4);
static_assert(kCtrlHashTypeIpv4TcpBit == _XEN_NETIF_CTRL_HASH_TYPE_IPV4_TCP);
static_assert(kCtrlHashTypeIpv6Bit == _XEN_NETIF_CTRL_HASH_TYPE_IPV6);
static_assert(kCtrlHashTypeIpv6TcpBit == _XEN_NETIF_CTRL_HASH_TYPE_IPV6_TCP);
static_assert(kCtrlGrefReadonly == XEN_NETIF_CTRLF_GREF_readonly);

#undef XPV_SAME_FIELD

}  // namespace

const char* to_string(XenbusState s) {
  switch (s) {
    case XenbusState::kUnknown:
      return "Unknown";
    case XenbusState::kInitialising:
      return "Initialising";
    case XenbusState::kInitWait:
      return "InitWait";
    case XenbusState::kInitialised:
      return "Initialised";
    case XenbusState::kConnected:
      return "Connected";
    case XenbusState::kClosing:
      return "Closing";
    case XenbusState::kClosed:
      return "Closed";
    case XenbusState::kReconfiguring:
      return "Reconfiguring";
    case XenbusState::kReconfigured:
      return "Reconfigured";
  }
  return "Invalid";
}

}  // namespace xpv::netif
