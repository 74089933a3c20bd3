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
