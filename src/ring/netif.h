// SPDX-License-Identifier: MIT
// The netif wire format (xen/io/netif.h) as C++ types, shared by the frontend
// and the simulated netback. netif_layout_check.cc proves at compile time that
// every size, offset, constant and ring size equals Xen's own header.
#pragma once

#include <cstdint>

#include "ring/shared_ring.h"

namespace xpv::netif {

// netif.h: "struct netif_tx_request" (12 bytes). In a multi-slot packet the
// first slot's size is the whole packet length; later slots carry their own.
struct TxRequest {
  uint32_t gref;
  uint16_t offset;
  uint16_t flags;
  uint16_t id;
  uint16_t size;
};

// NETTXF_* flags.
inline constexpr uint16_t kTxCsumBlank = 1u << 0;
inline constexpr uint16_t kTxDataValidated = 1u << 1;
inline constexpr uint16_t kTxMoreData = 1u << 2;
inline constexpr uint16_t kTxExtraInfo = 1u << 3;

struct TxResponse {
  uint16_t id;
  int16_t status;
};

struct RxRequest {
  uint16_t id;
  uint16_t pad;
  uint32_t gref;
};

// NETRXF_* flags.
inline constexpr uint16_t kRxDataValidated = 1u << 0;
inline constexpr uint16_t kRxCsumBlank = 1u << 1;
inline constexpr uint16_t kRxMoreData = 1u << 2;
inline constexpr uint16_t kRxExtraInfo = 1u << 3;
inline constexpr uint16_t kRxGsoPrefix = 1u << 4;

struct RxResponse {
  uint16_t id;
  uint16_t offset;
  uint16_t flags;
  int16_t status;  // > 0: length; <= 0: a NETIF_RSP_* code
};

// netif_extra_info: occupies one request/response slot after a slot flagged
// extra_info.
struct ExtraInfo {
  uint8_t type;
  uint8_t flags;
  union {
    struct {
      uint16_t size;
      uint8_t type;
      uint8_t pad;
      uint16_t features;
    } gso;
    struct {
      uint8_t addr[6];
    } mcast;
    struct {
      uint8_t type;
      uint8_t algorithm;
      uint8_t value[4];
    } hash;
    uint16_t pad[3];
  } u;
};

inline constexpr uint8_t kExtraTypeNone = 0;
inline constexpr uint8_t kExtraTypeGso = 1;
inline constexpr uint8_t kExtraTypeMcastAdd = 2;
inline constexpr uint8_t kExtraTypeMcastDel = 3;
inline constexpr uint8_t kExtraTypeHash = 4;
inline constexpr uint8_t kExtraTypeMax = 5;
inline constexpr uint8_t kExtraFlagMore = 1u << 0;

// XEN_NETIF_GSO_TYPE_*.
inline constexpr uint8_t kGsoTypeNone = 0;
inline constexpr uint8_t kGsoTypeTcpV4 = 1;
inline constexpr uint8_t kGsoTypeTcpV6 = 2;

// NETIF_RSP_*.
inline constexpr int16_t kRspDropped = -2;
inline constexpr int16_t kRspError = -1;
inline constexpr int16_t kRspOkay = 0;
inline constexpr int16_t kRspNull = 1;

// XEN_NETIF_NR_SLOTS_MIN: a packet of up to this many slots must be accepted
// by every backend. Linux netback's limits count the slots after the first
// (xenvif_count_requests): whole packets of up to 19 slots pass, 20-21 are
// dropped with NETIF_RSP_ERROR, 22 and more are fatal ("malicious frontend").
// Its 14-byte minimum and the page-crossing check apply to the first slot's
// own data (total length minus the later slots).
inline constexpr uint32_t kMaxSlotsMin = 18;
inline constexpr uint32_t kMaxTxSize = 0xFFFF;  // XEN_NETIF_MAX_TX_SIZE

using TxFrontRing = ring::FrontRing<TxRequest, TxResponse>;
using TxBackRing = ring::BackRing<TxRequest, TxResponse>;
using RxFrontRing = ring::FrontRing<RxRequest, RxResponse>;
using RxBackRing = ring::BackRing<RxRequest, RxResponse>;

inline constexpr uint32_t kTxRingSize = TxFrontRing::kSize;
inline constexpr uint32_t kRxRingSize = RxFrontRing::kSize;
static_assert(kTxRingSize == 256 && kRxRingSize == 256, "netif rings hold 256 entries");

// XenbusState (xen/io/xenbus.h).
enum class XenbusState : int {
  kUnknown = 0,
  kInitialising = 1,
  kInitWait = 2,
  kInitialised = 3,
  kConnected = 4,
  kClosing = 5,
  kClosed = 6,
  kReconfiguring = 7,
  kReconfigured = 8,
};
const char* to_string(XenbusState s);

}  // namespace xpv::netif
