// SPDX-License-Identifier: MIT
// The stats file (JSON, nlohmann-json) and the exit summary.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "netback/backend.h"

namespace xpv::netback {

namespace {

nlohmann::ordered_json counters_json(const Counters& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kCounterCount; ++i)
    j[kCounterInfo[i].name] = c.*kCounterInfo[i].field;
  return j;
}

}  // namespace

// The document scripts and tests read (docs/xpv-netback.md): keys in a fixed
// order, two-space indentation. Built with nlohmann-json; strings that are not
// UTF-8 are written with U+FFFD instead of throwing (dump's error handler).
std::string Backend::stats_json() const {
  const std::vector<VifStats> vifs = stats();
  Counters total;
  for (const VifStats& v : vifs)
    total += v.total;
  nlohmann::ordered_json doc;
  doc["mode"] = to_string(cfg_.mode);
  doc["fault"] = to_string(cfg_.fault);
  doc["totals"] = counters_json(total);
  if (bridge_) {
    nlohmann::ordered_json fdb = nlohmann::ordered_json::array();
    for (const BridgeFdbEntry& e : bridge_->fdb_entries()) {
      fdb.push_back({{"mac", e.mac},
                     {"domid", e.domid},
                     {"handle", e.handle},
                     {"queue", e.queue},
                     {"age_s", e.age_s}});
    }
    doc["bridge"] = {{"ageing_s", static_cast<double>(bridge_->ageing_ms()) / 1000.0},
                     {"ports", bridge_->ports()},
                     {"fdb", std::move(fdb)}};
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const VifStats& v : vifs) {
    nlohmann::ordered_json per_queue = nlohmann::ordered_json::array();
    for (const Counters& q : v.per_queue)
      per_queue.push_back(counters_json(q));
    list.push_back({{"name", v.name},
                    {"domid", v.domid},
                    {"handle", v.handle},
                    {"mac", v.mac},
                    {"alive", v.alive},
                    {"backend_state", v.backend_state},
                    {"frontend_state", v.frontend_state},
                    {"queues", v.queues},
                    {"split_event_channels", v.split_evtchn},
                    {"disabled", v.disabled},
                    {"fatal_reason", v.fatal_reason},
                    {"counters", counters_json(v.total)},
                    {"per_queue", std::move(per_queue)}});
  }
  doc["vifs"] = std::move(list);
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
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
