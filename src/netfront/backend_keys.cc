// SPDX-License-Identifier: MIT
// Strict parsing of the backend-provided xenstore values (backend_keys.h).
#include "netfront/backend_keys.h"

#include <cerrno>

#include "util/log.h"

namespace xpv {

std::optional<uint32_t> parse_decimal_u32(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::optional<netif::XenbusState> parse_xenbus_state(const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  auto x = parse_decimal_u32(*v);
  if (!x || *x > static_cast<uint32_t>(netif::XenbusState::kReconfigured)) {
    return netif::XenbusState::kUnknown;
  }
  return static_cast<netif::XenbusState>(*x);
}

std::optional<std::string> mac_unusable_reason(const MacAddr& m) {
  if (m[0] & 1) return std::string("a multicast address (the first byte's lowest bit is set)");
  bool zero = true;
  for (uint8_t b : m)
    zero &= b == 0;
  if (zero) return std::string("all-zero");
  return std::nullopt;
}

std::string quoted_value(std::string_view v) {
  std::string out = "'";
  for (size_t i = 0; i < v.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    out += c >= 0x20 && c < 0x7f && c != '\'' ? std::string(1, static_cast<char>(c))
                                              : format("\\x%02x", c);
  }
  if (v.size() > 64) out += "...";
  return out + "'";
}

Result<BackendKeys> parse_backend_keys(const RawBackendKeys& raw) {
  BackendKeys k;
  const std::string& fe = raw.frontend_path;
  const std::string& be = raw.backend_path;

  if (raw.backend_id) {
    auto id = parse_decimal_u32(*raw.backend_id);
    if (!id || *id >= kDomidFirstReserved) {
      return make_error(
          EPROTO, format("%s/backend-id is %s: not a domain id (decimal, below %u)", fe.c_str(),
                         quoted_value(*raw.backend_id).c_str(), kDomidFirstReserved));
    }
    k.backend_id = static_cast<domid_t>(*id);
  }

  if (raw.mac_override) {
    k.mac = *raw.mac_override;
  } else {
    if (!raw.mac) return make_error(EPROTO, fe + "/mac is missing");
    auto m = parse_mac(*raw.mac);
    if (!m) {
      return make_error(EPROTO, format("%s/mac is %s: not a MAC address (expected "
                                       "xx:xx:xx:xx:xx:xx); refusing the vif",
                                       fe.c_str(), quoted_value(*raw.mac).c_str()));
    }
    if (auto why = mac_unusable_reason(*m)) {
      return make_error(EPROTO,
                        format("%s/mac is %s: %s cannot be a vif's own address; refusing the vif",
                               fe.c_str(), quoted_value(*raw.mac).c_str(), why->c_str()));
    }
    k.mac = *m;
  }

  if (raw.mtu) {
    auto mtu = parse_decimal_u32(*raw.mtu);
    if (mtu && *mtu >= kMinMtu && *mtu <= kMaxMtu) {
      k.mtu = *mtu;
    } else {
      k.warnings.push_back(format("%s/mtu is %s: not a number in %u..%u; using 1500", fe.c_str(),
                                  quoted_value(*raw.mtu).c_str(), kMinMtu, kMaxMtu));
    }
  }

  BackendFeatures& f = k.features;
  bool* const flags[] = {&f.rx_copy,
                         &f.sg,
                         &f.split_event_channels,
                         &f.gso_tcpv4,
                         &f.gso_tcpv6,
                         &f.ipv6_csum_offload,
                         &f.ctrl_ring,
                         &f.multicast_control,
                         &f.dynamic_multicast_control};
  static_assert(std::size(flags) == kBackendFeatureKeys.size());
  for (size_t i = 0; i < kBackendFeatureKeys.size(); ++i) {
    const auto& v = raw.features[i];
    *flags[i] = false;
    if (!v || *v == "0") continue;
    if (*v == "1") {
      *flags[i] = true;
      continue;
    }
    k.warnings.push_back(format("%s/%s is %s: expected 0 or 1; treated as absent (off)", be.c_str(),
                                kBackendFeatureKeys[i], quoted_value(*v).c_str()));
  }

  f.max_queues = 1;
  if (raw.max_queues) {
    auto mq = parse_decimal_u32(*raw.max_queues);
    if (!mq) {
      k.warnings.push_back(
          format("%s/multi-queue-max-queues is %s: not a decimal number; "
                 "using 1",
                 be.c_str(), quoted_value(*raw.max_queues).c_str()));
    } else if (*mq == 0) {
      k.warnings.push_back(
          format("%s/multi-queue-max-queues is '0': a vif has at least one "
                 "queue; using 1",
                 be.c_str()));
    } else if (*mq > kMaxQueues) {
      f.max_queues = kMaxQueues;
      k.warnings.push_back(
          format("%s/multi-queue-max-queues is '%u': more than this frontend's "
                 "%u queues; using %u",
                 be.c_str(), *mq, kMaxQueues, kMaxQueues));
    } else {
      f.max_queues = *mq;
    }
  }
  return k;
}

}  // namespace xpv
