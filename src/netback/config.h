// SPDX-License-Identifier: MIT
// xpv-netback's settings: what the toolstack writes for each vif, how the
// data path behaves (mode), and which backend fault it injects.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "xpv/result.h"

namespace xpv::netback {

// What happens to the packets the frontend transmits, and where the packets
// it receives come from.
enum class Mode {
  kLoopback,  // each TX packet goes back to the same queue's RX
  kSink,      // TX packets are counted and dropped; no RX traffic
  kSource,    // RX traffic is generated; TX packets are sunk
  kBridge,    // a learning switch joining every connected vif (bridge.h)
};

// Faults a broken backend could inflict on a frontend (see docs/xpv-netback.md).
enum class Fault {
  kNone,
  kBadTxRspId,       // a TX response with an id the frontend never used
  kDupTxRsp,         // a TX response repeating the previous response's id
  kRspProdOverflow,  // TX rsp_prod pushed 1000 past what was produced
  kBadRxRsp,         // an RX response with offset + status > 4096
  kRxRspBadId,       // an RX response whose id is not its request's id
  kEventStorm,       // many notifications without responses
  kLateTxRsp,        // TX responses held back for a while
  kReconnect,        // backend goes Closing/Closed/InitWait by itself
  kStallRx,          // RX requests are no longer consumed
  // Hostile xenstore values (toolstack.cc, vif_xenbus.cc): what a broken or
  // hostile backend (or toolstack) writes for the frontend to read.
  kXsBadMac,          // the vif's mac key is not a MAC address
  kXsMulticastMac,    // the vif's mac key is a multicast address
  kXsMaxQueuesZero,   // multi-queue-max-queues = 0
  kXsMaxQueuesHuge,   // multi-queue-max-queues = 4294967295
  kXsBadMtu,          // the vif's mtu key is absurd
  kXsFeatureGarbage,  // feature keys that are neither 0 nor 1
  kXsStateBackwards,  // backend state Connected -> InitWait, skipping Closing/Closed
  kXsStateUndefined,  // backend state set to a number that is no XenbusState
  kXsKeysVanish,      // the backend's feature keys removed during a re-handshake
  // The toolstack: xl network-detach, then network-attach with another mac.
  kReattach,
  // The control ring (ctrl_ring.cc): the --fault-arg'th control request of
  // each connection (default the first) gets no response, a response with
  // another id, or one with a status netif.h does not define.
  kCtrlNoAnswer,
  kCtrlWrongId,
  kCtrlBadStatus,
};

using Mac = std::array<uint8_t, 6>;

struct Config {
  // Toolstack: vifs 0..vifs-1 per domain, as `xl` creates them.
  uint32_t vifs = 1;
  std::optional<Mac> mac;  // vif 0's mac; default 00:16:3e:00:<domid>:<handle>
  uint32_t mtu = 0;        // written to the frontend dir when not 0
  uint32_t max_queues = 8;
  bool feature_sg = true;
  bool split_evtchn = true;
  // Offloads offered to frontends (Linux netback offers all of them):
  // feature-gso-tcpv4/-tcpv6 (we take TSO packets), feature-ipv6-csum-offload,
  // feature-multicast-control and feature-dynamic-multicast-control.
  bool feature_gso = true;
  bool feature_ipv6_csum = true;
  bool multicast_control = true;
  bool dynamic_multicast_control = true;
  // feature-ctrl-ring (hashing, as Linux netback) and, through it, static
  // grants (ADD/DEL_GREF_MAPPING; Linux answers NOT_SUPPORTED).
  bool ctrl_ring = true;
  bool static_grants = true;

  Mode mode = Mode::kLoopback;
  uint32_t source_size = 60;  // 60..65535
  uint64_t source_rate = 0;   // packets per second per queue, 0: as fast as the ring allows
  uint64_t source_count = 0;  // packets per queue, 0: unlimited
  uint64_t bridge_ageing_ms = 300'000;  // bridge mode: a learned mac is forgotten after this

  // RX (backend -> frontend), Linux's defaults.
  uint64_t rx_stall_timeout_ms = 60'000;  // 0 disables stall detection
  uint64_t rx_expire_ms = 10'000;         // queued packets older than this are dropped
  uint32_t rx_queue_bytes = 1u << 20;     // per queue packet buffer
  uint32_t rx_queue_packets = 1024;       // per queue

  bool busy_poll = false;

  Fault fault = Fault::kNone;
  uint64_t fault_after = 1000;
  // Toolstack and xenstore faults: S seconds after each connect instead of
  // after fault_after packets (0: by packets).
  uint64_t fault_every_s = 0;
  std::optional<uint64_t> fault_arg;
  // reattach: vif 0's mac on odd rounds (default: its mac with 0x10 added to
  // the last byte).
  std::optional<Mac> reattach_mac;
};

// The faults the control thread injects (toolstack and xenstore), after
// --fault-after packets or --fault-every seconds.
inline bool is_ctrl_ring_fault(Fault f) {
  return f == Fault::kCtrlNoAnswer || f == Fault::kCtrlWrongId || f == Fault::kCtrlBadStatus;
}

inline bool is_control_fault(Fault f) {
  return f == Fault::kReconnect || f == Fault::kReattach || f == Fault::kXsStateBackwards ||
         f == Fault::kXsStateUndefined || f == Fault::kXsKeysVanish;
}

const char* to_string(Mode m);
const char* to_string(Fault f);
std::optional<Mode> parse_mode(std::string_view s);
std::optional<Fault> parse_fault(std::string_view s);

// "00:16:3e:01:02:03" (lower case) and back; parse accepts upper case too.
std::string format_mac(const Mac& m);
std::optional<Mac> parse_mac(std::string_view s);

// The default mac of vif `handle` of domain `domid`.
Mac default_mac(uint16_t domid, uint32_t handle);

// The mac a vif with mac `m` gets on the odd rounds of the reattach fault.
Mac reattach_mac(const Config& c, const Mac& m, uint32_t handle);

// Checks ranges and combinations; the message names the offending setting.
Status validate(const Config& c);

// The fault argument with its per-fault default (0 when the fault takes none).
uint64_t fault_arg_or_default(const Config& c);

}  // namespace xpv::netback
