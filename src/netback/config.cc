// SPDX-License-Identifier: MIT
#include "netback/config.h"

#include <cstdio>

namespace xpv::netback {
namespace {

struct ModeName {
  Mode mode;
  const char* name;
};
constexpr ModeName kModes[] = {
    {Mode::kLoopback, "loopback"},
    {Mode::kSink, "sink"},
    {Mode::kSource, "source"},
    {Mode::kBridge, "bridge"},
};

struct FaultName {
  Fault fault;
  const char* name;
};
constexpr FaultName kFaults[] = {
    {Fault::kNone, "none"},
    {Fault::kBadTxRspId, "bad-tx-rsp-id"},
    {Fault::kDupTxRsp, "dup-tx-rsp"},
    {Fault::kRspProdOverflow, "rsp-prod-overflow"},
    {Fault::kBadRxRsp, "bad-rx-rsp"},
    {Fault::kRxRspBadId, "rx-rsp-bad-id"},
    {Fault::kEventStorm, "event-storm"},
    {Fault::kLateTxRsp, "late-tx-rsp"},
    {Fault::kReconnect, "reconnect"},
    {Fault::kStallRx, "stall-rx"},
    {Fault::kXsBadMac, "xs-bad-mac"},
    {Fault::kXsMulticastMac, "xs-multicast-mac"},
    {Fault::kXsMaxQueuesZero, "xs-max-queues-zero"},
    {Fault::kXsMaxQueuesHuge, "xs-max-queues-huge"},
    {Fault::kXsBadMtu, "xs-bad-mtu"},
    {Fault::kXsFeatureGarbage, "xs-feature-garbage"},
    {Fault::kXsStateBackwards, "xs-state-backwards"},
    {Fault::kXsStateUndefined, "xs-state-undefined"},
    {Fault::kXsKeysVanish, "xs-keys-vanish"},
    {Fault::kReattach, "reattach"},
    {Fault::kCtrlNoAnswer, "ctrl-no-answer"},
    {Fault::kCtrlWrongId, "ctrl-wrong-id"},
    {Fault::kCtrlBadStatus, "ctrl-bad-status"},
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const char* to_string(Mode m) {
  for (const auto& e : kModes) {
    if (e.mode == m) return e.name;
  }
  return "?";
}

const char* to_string(Fault f) {
  for (const auto& e : kFaults) {
    if (e.fault == f) return e.name;
  }
  return "?";
}

std::optional<Mode> parse_mode(std::string_view s) {
  for (const auto& e : kModes) {
    if (s == e.name) return e.mode;
  }
  return std::nullopt;
}

std::optional<Fault> parse_fault(std::string_view s) {
  for (const auto& e : kFaults) {
    if (s == e.name) return e.fault;
  }
  return std::nullopt;
}

std::string format_mac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

std::optional<Mac> parse_mac(std::string_view s) {
  // Exactly six two-digit hex bytes separated by ':'.
  if (s.size() != 17) return std::nullopt;
  Mac m{};
  for (size_t i = 0; i < 6; ++i) {
    int hi = hex_digit(s[i * 3]), lo = hex_digit(s[i * 3 + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    if (i < 5 && s[i * 3 + 2] != ':') return std::nullopt;
    m[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return m;
}

Mac default_mac(uint16_t domid, uint32_t handle) {
  // Xen's OUI 00:16:3e, as xl picks for vifs, made unique per domain and vif.
  return Mac{0x00,
             0x16,
             0x3e,
             static_cast<uint8_t>(domid >> 8),
             static_cast<uint8_t>(domid),
             static_cast<uint8_t>(handle)};
}

Mac reattach_mac(const Config& c, const Mac& m, uint32_t handle) {
  if (handle == 0 && c.reattach_mac) return *c.reattach_mac;
  Mac r = m;
  r[5] = static_cast<uint8_t>(r[5] + 0x10);
  return r;
}

Status validate(const Config& c) {
  if (c.vifs < 1 || c.vifs > 16) return make_error(EINVAL, "--vifs must be between 1 and 16");
  if (c.max_queues < 1 || c.max_queues > 64) {
    return make_error(EINVAL, "--max-queues must be between 1 and 64");
  }
  if (c.mtu != 0 && (c.mtu < 68 || c.mtu > 65535 - 14)) {
    return make_error(EINVAL, "--mtu must be between 68 and 65521");
  }
  if (c.source_size < 60 || c.source_size > 65535) {
    return make_error(EINVAL, "--source-size must be between 60 and 65535 bytes");
  }
  if (c.bridge_ageing_ms < 1 || c.bridge_ageing_ms > 1'000'000'000) {
    return make_error(EINVAL, "--bridge-ageing must be between 0.001 and 1000000 seconds");
  }
  if (c.rx_queue_bytes < 65536 || c.rx_queue_packets < 16) {
    return make_error(EINVAL, "the RX queue needs at least 64 KiB and 16 packets");
  }
  if (c.fault == Fault::kReconnect && c.fault_arg && *c.fault_arg == 0) {
    return make_error(EINVAL, "--fault-arg for reconnect (how many times) must be at least 1");
  }
  if (c.fault == Fault::kReattach && c.fault_arg && *c.fault_arg == 0) {
    return make_error(EINVAL, "--fault-arg for reattach (how many rounds) must be at least 1");
  }
  if (c.fault == Fault::kXsStateUndefined && c.fault_arg &&
      (*c.fault_arg <= 8 || *c.fault_arg > 0x7FFFFFFF)) {
    return make_error(EINVAL,
                      "--fault-arg for xs-state-undefined (the state written) must be a number "
                      "that is no XenbusState: 9..2147483647");
  }
  if (c.reattach_mac && c.fault != Fault::kReattach) {
    return make_error(EINVAL, "--reattach-mac needs --fault reattach");
  }
  if (c.reattach_mac && ((*c.reattach_mac)[0] & 1)) {
    return make_error(EINVAL, "--reattach-mac: a vif's mac must be unicast");
  }
  if (c.reattach_mac && c.mac && *c.reattach_mac == *c.mac) {
    return make_error(EINVAL, "--reattach-mac must differ from --mac");
  }
  if (is_ctrl_ring_fault(c.fault) && c.fault_arg && *c.fault_arg == 0) {
    return make_error(EINVAL,
                      "--fault-arg for ctrl-* (which control request, from 1) must be at least 1");
  }
  if (is_ctrl_ring_fault(c.fault) && !c.ctrl_ring) {
    return make_error(EINVAL, format("--fault %s needs the control ring (not --no-ctrl-ring)",
                                     to_string(c.fault)));
  }
  if (c.fault == Fault::kEventStorm && c.fault_arg && *c.fault_arg == 0) {
    return make_error(EINVAL, "--fault-arg for event-storm (notifications) must be at least 1");
  }
  return {};
}

uint64_t fault_arg_or_default(const Config& c) {
  if (c.fault_arg) return *c.fault_arg;
  switch (c.fault) {
    case Fault::kBadTxRspId:
      return 0xFFFF;
    case Fault::kEventStorm:
      return 1'000'000;
    case Fault::kLateTxRsp:
      return 200;
    case Fault::kReconnect:
    case Fault::kReattach:
    case Fault::kXsStateBackwards:
    case Fault::kXsKeysVanish:
      return 1;
    case Fault::kXsStateUndefined:
      return 99;
    case Fault::kCtrlNoAnswer:
    case Fault::kCtrlWrongId:
    case Fault::kCtrlBadStatus:
      return 1;
    default:
      return 0;
  }
}

}  // namespace xpv::netback
