// SPDX-License-Identifier: MIT
// net_xenpv device arguments, one parser per key (as memif does), each
// failing with the key's name and the form it expects.
//
//   --vdev
//   net_xenpv0,vif=0,backend=sim:/run/xpv.sock,queues=2,mac=02:00:00:00:00:02,speed=10000,csum=1,zerocopy=1,idle_sleep=50
//   net_xenpv1,vif=1,idle_sleep=10000,idle_wait=xen
#include <rte_kvargs.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "netfront/backend_keys.h"
#include "xenpv.h"

const char* const xenpv_valid_args[] = {"vif",        "backend",   "queues", "mac",
                                        "split",      "speed",     "csum",   "zerocopy",
                                        "idle_sleep", "idle_wait", nullptr};

namespace {

struct Ctx {
  xenpv_args* out;
  std::string* err;
};

bool parse_uint(const char* v, unsigned long max, unsigned long* out) {
  if (!v || !*v) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long x = std::strtoul(v, &end, 10);
  if (errno || *end || x > max || v[0] == '-') return false;
  *out = x;
  return true;
}

int set_vif(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  unsigned long x = 0;
  if (!parse_uint(v, 65535, &x)) {
    *c->err =
        xpv::format("%s='%s': expected a vif number 0..65535 (device/vif/N)", key, v ? v : "");
    return -1;
  }
  c->out->vif = static_cast<uint32_t>(x);
  return 0;
}

int set_backend(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  std::string s = v ? v : "";
  if (s == "xen" || (s.starts_with("sim:") && s.size() > 4)) {
    c->out->backend = s;
    return 0;
  }
  *c->err =
      xpv::format("%s='%s': expected 'xen' or 'sim:PATH' (an xpv-netback socket)", key, s.c_str());
  return -1;
}

int set_queues(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  unsigned long x = 0;
  if (!parse_uint(v, xpv::kMaxQueues, &x) || x == 0) {
    *c->err =
        xpv::format("%s='%s': expected a queue count 1..%u", key, v ? v : "", xpv::kMaxQueues);
    return -1;
  }
  c->out->queues = static_cast<uint32_t>(x);
  return 0;
}

int set_mac(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  auto m = xpv::parse_mac(v ? v : "");
  if (!m) {
    *c->err = xpv::format("%s='%s': expected a MAC address xx:xx:xx:xx:xx:xx", key, v ? v : "");
    return -1;
  }
  // The rule the frontend applies to the vif's mac key (backend_keys.h).
  if (auto why = xpv::mac_unusable_reason(*m)) {
    *c->err = xpv::format("%s='%s': %s cannot be the port's own address; expected a unicast MAC",
                          key, v, why->c_str());
    return -1;
  }
  c->out->mac = *m;
  return 0;
}

// A 0|1 argument into *field; `what` says what 1 means.
int set_flag(Ctx* c, const char* key, const char* v, bool* field, const char* what) {
  std::string s = v ? v : "";
  if (s == "0" || s == "1") {
    *field = s == "1";
    return 0;
  }
  *c->err = xpv::format("%s='%s': expected 0 or 1 (%s)", key, s.c_str(), what);
  return -1;
}

int set_split(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  return set_flag(c, key, v, &c->out->split_event_channels,
                  "use split event channels when offered");
}

int set_csum(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  return set_flag(c, key, v, &c->out->csum, "checksum offload, TSO and LRO when offered");
}

int set_zerocopy(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  return set_flag(
      c, key, v, &c->out->zerocopy,
      "receive into mbufs attached to the granted pages, and send those by their grants");
}

int set_idle_sleep(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  unsigned long x = 0;
  if (!parse_uint(v, kMaxIdleSleepUs, &x)) {
    *c->err = xpv::format(
        "%s='%s': expected microseconds 0..%u to sleep when the polling thread is idle (0: "
        "never)",
        key, v ? v : "", kMaxIdleSleepUs);
    return -1;
  }
  c->out->idle_sleep_us = static_cast<uint32_t>(x);
  return 0;
}

int set_idle_wait(const char* key, const char* v, void* opaque) {
  auto* c = static_cast<Ctx*>(opaque);
  std::string s = v ? v : "";
  if (s == "kernel" || s == "xen") {
    c->out->idle_wait_in_xen = s == "xen";
    return 0;
  }
  *c->err = xpv::format(
      "%s='%s': expected 'kernel' (an idle_sleep waits in the guest kernel) or 'xen' (the "
      "vCPU waits in Xen: SCHEDOP_poll)",
      key, s.c_str());
  return -1;
}

// netif has no link speed: the PMD reports what speed= says (as virtio's
// speed= device argument does), one of ethdev's RTE_ETH_SPEED_NUM_* values.
int set_speed(const char* key, const char* v, void* opaque) {
  static constexpr uint32_t kSpeeds[] = {
      RTE_ETH_SPEED_NUM_10M, RTE_ETH_SPEED_NUM_100M, RTE_ETH_SPEED_NUM_1G,  RTE_ETH_SPEED_NUM_2_5G,
      RTE_ETH_SPEED_NUM_5G,  RTE_ETH_SPEED_NUM_10G,  RTE_ETH_SPEED_NUM_20G, RTE_ETH_SPEED_NUM_25G,
      RTE_ETH_SPEED_NUM_40G, RTE_ETH_SPEED_NUM_50G,  RTE_ETH_SPEED_NUM_56G, RTE_ETH_SPEED_NUM_100G,
      RTE_ETH_SPEED_NUM_200G};
  auto* c = static_cast<Ctx*>(opaque);
  unsigned long x = 0;
  if (parse_uint(v, UINT32_MAX, &x)) {
    for (uint32_t s : kSpeeds) {
      if (x == s) {
        c->out->speed = s;
        return 0;
      }
    }
  }
  *c->err = xpv::format(
      "%s='%s': expected a link speed in Mbps, one of 10, 100, 1000, 2500, 5000, 10000, "
      "20000, 25000, 40000, 50000, 56000, 100000, 200000",
      key, v ? v : "");
  return -1;
}

}  // namespace

bool xenpv_parse_args(const char* params, xenpv_args* out, std::string* err) {
  if (!params || !*params) return true;
  // rte_kvargs_parse rejects unknown keys without saying which: find it.
  // rte_kvargs_process calls a handler once per occurrence, so the last of
  // a repeated key would win silently: refuse it.
  std::string all(params);
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= all.size()) {
    size_t comma = all.find(',', pos);
    std::string kv = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!kv.empty()) {
      std::string key = kv.substr(0, kv.find('='));
      bool known = false;
      for (const char* const* k = xenpv_valid_args; *k; ++k)
        known |= key == *k;
      if (!known) {
        *err = xpv::format(
            "unknown device argument '%s' (valid: vif=N, backend=xen|sim:PATH, "
            "queues=N, mac=xx:xx:xx:xx:xx:xx, split=0|1, speed=MBPS, csum=0|1, zerocopy=0|1, "
            "idle_sleep=US, idle_wait=kernel|xen)",
            key.c_str());
        return false;
      }
      if (kv.find('=') == std::string::npos) {
        *err = xpv::format("device argument '%s' needs a value (%s=...)", key.c_str(), key.c_str());
        return false;
      }
      if (!seen.insert(key).second) {
        *err =
            xpv::format("device argument '%s' is given more than once; give it once", key.c_str());
        return false;
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  struct rte_kvargs* kv = rte_kvargs_parse(params, xenpv_valid_args);
  if (!kv) {
    *err = xpv::format(
        "cannot parse device arguments '%s' (expected key=value pairs separated by "
        "commas)",
        params);
    return false;
  }
  Ctx ctx{out, err};
  struct {
    const char* key;
    arg_handler_t fn;
  } handlers[] = {{"vif", set_vif},
                  {"backend", set_backend},
                  {"queues", set_queues},
                  {"mac", set_mac},
                  {"split", set_split},
                  {"speed", set_speed},
                  {"csum", set_csum},
                  {"zerocopy", set_zerocopy},
                  {"idle_sleep", set_idle_sleep},
                  {"idle_wait", set_idle_wait}};
  bool ok = true;
  for (auto& h : handlers) {
    if (rte_kvargs_process(kv, h.key, h.fn, &ctx) < 0) {
      ok = false;
      break;
    }
  }
  rte_kvargs_free(kv);
  // idle_wait says where an idle_sleep waits, and only Xen's own event
  // channels can be polled in Xen.
  if (ok && out->idle_wait_in_xen && out->idle_sleep_us == 0) {
    *err = "idle_wait=xen says where an idle_sleep waits: give idle_sleep=US (not 0) with it";
    ok = false;
  }
  if (ok && out->idle_wait_in_xen && out->backend != "xen") {
    *err = xpv::format("idle_wait=xen needs backend=xen (Xen's own event channels), not '%s'",
                       out->backend.c_str());
    ok = false;
  }
  return ok;
}
