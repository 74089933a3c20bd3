// SPDX-License-Identifier: MIT
// The stats file (JSON) and the exit summary.
#include <cstdio>
#include <string>

#include "netback/backend.h"

namespace xpv::netback {

namespace {

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_counters(std::string& out, const Counters& c) {
  out += '{';
  for (size_t i = 0; i < kCounterCount; ++i) {
    if (i) out += ", ";
    out += '"';
    out += kCounterInfo[i].name;
    out += "\": ";
    out += std::to_string(c.*kCounterInfo[i].field);
  }
  out += '}';
}

}  // namespace

std::string Backend::stats_json() const {
  const std::vector<VifStats> vifs = stats();
  Counters total;
  for (const VifStats& v : vifs)
    total += v.total;
  std::string out = "{\n";
  out += "  \"mode\": \"" + std::string(to_string(cfg_.mode)) + "\",\n";
  out += "  \"fault\": \"" + std::string(to_string(cfg_.fault)) + "\",\n";
  out += "  \"totals\": ";
  json_counters(out, total);
  if (bridge_) {
    const std::vector<BridgeFdbEntry> fdb = bridge_->fdb_entries();
    out += format(",\n  \"bridge\": {\"ageing_s\": %.3f, \"ports\": %zu, \"fdb\": [",
                  static_cast<double>(bridge_->ageing_ms()) / 1000.0, bridge_->ports());
    for (size_t i = 0; i < fdb.size(); ++i) {
      const BridgeFdbEntry& e = fdb[i];
      out += i ? ",\n    " : "\n    ";
      out +=
          format("{\"mac\": \"%s\", \"domid\": %u, \"handle\": %u, \"queue\": %u, \"age_s\": %.3f}",
                 e.mac.c_str(), e.domid, e.handle, e.queue, e.age_s);
    }
    out += fdb.empty() ? "]}" : "\n  ]}";
  }
  out += ",\n  \"vifs\": [";
  for (size_t i = 0; i < vifs.size(); ++i) {
    const VifStats& v = vifs[i];
    out += i ? ",\n    {" : "\n    {";
    out += "\"name\": ";
    json_string(out, v.name);
    out += format(", \"domid\": %u, \"handle\": %u, \"mac\": \"%s\", \"alive\": %s", v.domid,
                  v.handle, v.mac.c_str(), v.alive ? "true" : "false");
    out += format(", \"backend_state\": %d, \"frontend_state\": %d", v.backend_state,
                  v.frontend_state);
    out += format(", \"queues\": %u, \"split_event_channels\": %s, \"disabled\": %s", v.queues,
                  v.split_evtchn ? "true" : "false", v.disabled ? "true" : "false");
    out += ", \"fatal_reason\": ";
    json_string(out, v.fatal_reason);
    out += ",\n     \"counters\": ";
    json_counters(out, v.total);
    out += ",\n     \"per_queue\": [";
    for (size_t q = 0; q < v.per_queue.size(); ++q) {
      out += q ? ",\n       " : "\n       ";
      json_counters(out, v.per_queue[q]);
    }
    out += v.per_queue.empty() ? "]}" : "]}";
  }
  out += vifs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string Backend::summary() const {
  const std::vector<VifStats> vifs = stats();
  std::string out =
      format("xpv-netback summary: mode %s, fault %s, %zu vif%s\n", to_string(cfg_.mode),
             to_string(cfg_.fault), vifs.size(), vifs.size() == 1 ? "" : "s");
  for (const VifStats& v : vifs) {
    const Counters& c = v.total;
    const uint64_t tx_drops = c.tx_dropped_short + c.tx_dropped_too_many_slots +
                              c.tx_dropped_oversize_slot + c.tx_dropped_bad_grant;
    const uint64_t rx_drops = c.rx_dropped_queue_full + c.rx_dropped_expired + c.rx_dropped_stalled;
    out += format(
        "  %s%s: TX %llu packets %llu bytes (%llu dropped, %llu error responses); ", v.name.c_str(),
        v.alive ? "" : " (domain gone)", static_cast<unsigned long long>(c.tx_packets),
        static_cast<unsigned long long>(c.tx_bytes), static_cast<unsigned long long>(tx_drops),
        static_cast<unsigned long long>(c.tx_error_responses));
    out += format(
        "RX %llu packets %llu bytes (%llu dropped, %llu stalls, %llu bad requests); ",
        static_cast<unsigned long long>(c.rx_packets), static_cast<unsigned long long>(c.rx_bytes),
        static_cast<unsigned long long>(rx_drops), static_cast<unsigned long long>(c.rx_stalls),
        static_cast<unsigned long long>(c.rx_bad_requests));
    if (bridge_) {
      out += format("bridge %llu unicast, %llu flooded, %llu dropped, %llu to itself; ",
                    static_cast<unsigned long long>(c.bridge_unicast),
                    static_cast<unsigned long long>(c.bridge_flooded),
                    static_cast<unsigned long long>(c.bridge_dropped),
                    static_cast<unsigned long long>(c.bridge_dropped_self));
    }
    out += format("%llu connects, %llu faults injected, %llu fatal errors%s%s\n",
                  static_cast<unsigned long long>(c.connects),
                  static_cast<unsigned long long>(c.faults_injected),
                  static_cast<unsigned long long>(c.fatal_errors),
                  v.fatal_reason.empty() ? "" : ": ", v.fatal_reason.c_str());
  }
  return out;
}

}  // namespace xpv::netback
