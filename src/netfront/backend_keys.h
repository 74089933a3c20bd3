// SPDX-License-Identifier: MIT
// The values a backend (and the toolstack, for the vif's own directory)
// provides in xenstore, parsed strictly: what a backend writes there is
// input, and a hostile or broken one must get a clear refusal or a logged,
// safe fallback, never a crash or an impossible value. Pure: no I/O; the
// caller reads the raw values and logs the warnings.
//
// The rules, key by key (Linux netfront reads each with xenbus_scanf /
// xenbus_read_unsigned; we are stricter about the number's form):
//   numbers         decimal digits only, no sign, space or trailing text
//                   ("12abc" is not 12), and within 32 bits.
//   backend-id      a domain id below DOMID_FIRST_RESERVED (0x7ff0); absent
//                   is dom0; anything else refuses the vif (grants would go
//                   to the wrong domain).
//   mac             required, six two-digit hex bytes "xx:xx:xx:xx:xx:xx",
//                   unicast and not all-zero; anything else refuses the vif
//                   (Linux netfront: xenbus_dev_fatal "parsing <dev>/mac").
//   mtu             68..65521 (an Ethernet frame within 64 KiB); absent is
//                   1500; garbage or out of range: warning, 1500.
//   multi-queue-max-queues
//                   absent is 1. Linux netfront takes min(value, its own
//                   limit), and blkfront turns 0 into 1 ("we need at least
//                   one ring"); we do both with a warning: 0 is 1, above
//                   kMaxQueues is kMaxQueues. Garbage: warning, 1.
//   feature-*       "0" or "1"; absent is 0; anything else ("yes", "2",
//                   " 1"): warning, treated as absent (off).
//   state           a XenbusState 0..8 (netif.h); garbage is Unknown.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ring/netif.h"
#include "xpv/netfront.h"

namespace xpv {

// The backend's feature keys, in BackendFeatures' order.
inline constexpr std::array<const char*, 9> kBackendFeatureKeys = {
    "feature-rx-copy",
    "feature-sg",
    "feature-split-event-channels",
    "feature-gso-tcpv4",
    "feature-gso-tcpv6",
    "feature-ipv6-csum-offload",
    "feature-ctrl-ring",
    "feature-multicast-control",
    "feature-dynamic-multicast-control",
};

// The raw values as read; nullopt: the node is absent.
struct RawBackendKeys {
  std::string frontend_path;              // the vif's directory, for messages
  std::string backend_path;               // the backend's directory, for messages
  std::optional<std::string> backend_id;  // <frontend>/backend-id
  std::optional<std::string> mac;         // <frontend>/mac
  std::optional<std::string> mtu;         // <frontend>/mtu
  std::optional<std::string> max_queues;  // <backend>/multi-queue-max-queues
  std::array<std::optional<std::string>, kBackendFeatureKeys.size()> features;  // <backend>/...
  std::optional<MacAddr> mac_override;  // DeviceConfig::mac: the mac key is not used
};

struct BackendKeys {
  domid_t backend_id = 0;             // < 0x7ff0
  MacAddr mac{};                      // unicast, not zero (or mac_override as given)
  uint32_t mtu = 1500;                // kMinMtu..kMaxMtu
  BackendFeatures features;           // max_queues 1..kMaxQueues
  std::vector<std::string> warnings;  // each fallback taken, naming key, path and value
};

inline constexpr uint32_t kMinMtu = 68;
inline constexpr uint32_t kMaxMtu = 65535 - 14;
inline constexpr uint32_t kDomidFirstReserved = 0x7ff0;  // xen.h DOMID_FIRST_RESERVED

// An error (EPROTO, naming key, path and value) when the vif cannot be used.
Result<BackendKeys> parse_backend_keys(const RawBackendKeys& raw);

// A decimal number within 32 bits, nothing else (no sign, space, "0x").
std::optional<uint32_t> parse_decimal_u32(std::string_view s);

// A XenbusState node: nullopt when absent; Unknown for anything that is not
// one of netif.h's values 0..8.
std::optional<netif::XenbusState> parse_xenbus_state(const std::optional<std::string>& v);

// `v` for a message: quoted, control bytes as \xNN, cut after 64 bytes.
std::string quoted_value(std::string_view v);

// Why `m` cannot be a vif's own address (multicast or all-zero), or
// nullopt when it can.
std::optional<std::string> mac_unusable_reason(const MacAddr& m);

}  // namespace xpv
