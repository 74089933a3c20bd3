// SPDX-License-Identifier: MIT
// libFuzzer target: the frontend's parsing of backend-provided xenstore
// values (netfront/backend_keys.h). The input is split at NUL bytes into the
// raw values of backend-id, mac, mtu, multi-queue-max-queues, the feature
// keys and the backend's state; the first byte says which are absent. The
// parser must never crash, and what it accepts must be possible: a domain id
// below DOMID_FIRST_RESERVED, a unicast non-zero mac that is the key's
// value, an mtu in range, 1..kMaxQueues queues, a feature on only for "1",
// and every fallback warned about.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "netfront/backend_keys.h"
#include "xpv/netfront.h"

namespace {

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: invariant broken: %s (%s)\n", what, detail.c_str());
  std::abort();
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xpv;
  if (size == 0) return 0;
  const uint16_t absent = static_cast<uint16_t>(data[0] | (size > 1 ? data[1] << 8 : 0));
  std::vector<std::string> fields;
  std::string cur;
  for (size_t i = 2; i < size; ++i) {
    if (data[i] == 0) {
      fields.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  fields.push_back(cur);
  size_t next = 0;
  auto field = [&](int bit) -> std::optional<std::string> {
    std::optional<std::string> v;
    if (next < fields.size() && !(absent & (1u << bit))) v = fields[next];
    ++next;
    return v;
  };

  RawBackendKeys raw;
  raw.frontend_path = "/local/domain/1/device/vif/0";
  raw.backend_path = "/local/domain/0/backend/vif/1/0";
  raw.backend_id = field(0);
  raw.mac = field(1);
  raw.mtu = field(2);
  raw.max_queues = field(3);
  for (size_t i = 0; i < raw.features.size(); ++i)
    raw.features[i] = field(4 + static_cast<int>(i));
  static_assert(4 + kBackendFeatureKeys.size() < 15, "bit 15 is the mac override");
  const std::optional<std::string> state = field(4 + static_cast<int>(kBackendFeatureKeys.size()));
  if (absent & (1u << 15)) raw.mac_override = MacAddr{0x02, 0, 0, 0, 0, 1};

  auto k = parse_backend_keys(raw);
  if (!k) {
    const std::string& m = k.error().message;
    if (m.find(raw.frontend_path) == std::string::npos) broken("error without the path", m);
    if (m.size() > 400) broken("error message unbounded", m.substr(0, 80));
  } else {
    if (k->backend_id >= kDomidFirstReserved) broken("backend id", std::to_string(k->backend_id));
    if (!raw.mac_override) {
      if (mac_unusable_reason(k->mac)) broken("unusable mac accepted", to_string(k->mac));
      if (!raw.mac || lower(*raw.mac) != to_string(k->mac)) broken("mac not the key's", *raw.mac);
    }
    if (k->mtu < kMinMtu || k->mtu > kMaxMtu) broken("mtu", std::to_string(k->mtu));
    // The oracle: the numbers as digits only, the ranges of backend_keys.h.
    const auto mtu = raw.mtu ? parse_decimal_u32(*raw.mtu) : std::nullopt;
    const bool mtu_ok = mtu && *mtu >= kMinMtu && *mtu <= kMaxMtu;
    if (k->mtu != (mtu_ok ? *mtu : 1500u)) broken("mtu not the key's", raw.mtu.value_or(""));
    const BackendFeatures& f = k->features;
    if (f.max_queues < 1 || f.max_queues > kMaxQueues) {
      broken("max queues", std::to_string(f.max_queues));
    }
    const bool on[] = {f.rx_copy,
                       f.sg,
                       f.split_event_channels,
                       f.gso_tcpv4,
                       f.gso_tcpv6,
                       f.ipv6_csum_offload,
                       f.ctrl_ring,
                       f.multicast_control,
                       f.dynamic_multicast_control};
    static_assert(std::size(on) == kBackendFeatureKeys.size());
    size_t expected_warnings = 0;
    for (size_t i = 0; i < raw.features.size(); ++i) {
      const auto& v = raw.features[i];
      if (on[i] != (v && *v == "1")) broken("feature", kBackendFeatureKeys[i]);
      if (v && *v != "0" && *v != "1") ++expected_warnings;
    }
    if (raw.mtu && !mtu_ok) ++expected_warnings;
    if (raw.max_queues) {
      const auto mq = parse_decimal_u32(*raw.max_queues);
      const bool mq_ok = mq && *mq >= 1 && *mq <= kMaxQueues;
      if (!mq_ok) ++expected_warnings;
      const uint32_t want = !mq || *mq == 0 ? 1 : std::min(*mq, kMaxQueues);
      if (f.max_queues != want) broken("max queues not the key's", *raw.max_queues);
    } else if (f.max_queues != 1) {
      broken("max queues without the key", std::to_string(f.max_queues));
    }
    if (k->warnings.size() != expected_warnings) {
      broken("a fallback without its warning (or one too many)",
             std::to_string(k->warnings.size()) + " vs " + std::to_string(expected_warnings));
    }
  }

  // parse_decimal_u32 takes digits only, and their value.
  for (const std::string& v : fields) {
    const auto d = parse_decimal_u32(v);
    bool digits = !v.empty() && v.size() <= 20;
    for (char c : v)
      digits &= c >= '0' && c <= '9';
    if (d && !digits) broken("a number that is not digits", v);
    if (digits && d != (std::strtoull(v.c_str(), nullptr, 10) <= UINT32_MAX && v.size() <= 10
                            ? std::optional<uint32_t>(std::strtoull(v.c_str(), nullptr, 10))
                            : std::nullopt)) {
      broken("a number's value", v);
    }
  }

  auto s = parse_xenbus_state(state);
  if (s.has_value() != state.has_value()) broken("state presence", "");
  if (s && static_cast<int>(*s) > static_cast<int>(netif::XenbusState::kReconfigured)) {
    broken("state", std::to_string(static_cast<int>(*s)));
  }
  return 0;
}
