// SPDX-License-Identifier: MIT
#include "netback/cli.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace xpv::netback {

const char* help_text() {
  return R"(usage: xpv-netback --socket PATH [options]

A userspace Xen netif backend (netback) on a simulated hypervisor. It owns
the simulated hypervisor and serves it on the unix socket PATH: every
process that connects (an xpv frontend, e.g. a DPDK app started with
--vdev net_xenpv0,backend=sim:PATH) becomes a new guest domain, gets vifs
as xl would create them, and is served the way Linux's xen-netback serves
a vif: same handshake, same checks of what the frontend puts on its rings.
Prints "xpv-netback: listening on PATH" when ready. SIGINT/SIGTERM close
every vif, remove the socket and exit 0.

Toolstack:
  --socket PATH            unix socket to serve (required)
  --vifs N                 vifs per domain, 0..N-1 (default 1, at most 16);
                           in bridge mode every one of them is on the bridge
  --mac MAC                mac of vif 0, e.g. 00:16:3e:12:34:56
                           (default 00:16:3e:<domid hi>:<domid lo>:<vif>)
  --mtu N                  write "mtu" to the frontend's node (default: none)
  --max-queues N           multi-queue-max-queues (default 8)
  --no-sg                  feature-sg=0 (default 1)
  --no-split-evtchn        feature-split-event-channels=0 (default 1)
  --no-gso                 feature-gso-tcpv4/-tcpv6=0: no TSO from frontends
                           (default 1, as Linux netback)
  --no-ipv6-csum           feature-ipv6-csum-offload=0 (default 1)
  --no-multicast-control   feature-multicast-control=0 (default 1)
  --static-multicast-control
                           feature-dynamic-multicast-control=0: the frontend's
                           request-multicast-control counts at connect only
  --no-ctrl-ring           feature-ctrl-ring=0: no RX hashing, no static
                           grants (default 1: the control ring as Linux
                           netback serves it, plus static grants)
  --no-static-grants       answer GET_GREF_MAPPING_SIZE and ADD/DEL_GREF_MAPPING
                           with NOT_SUPPORTED, as Linux netback does

Data path:
  --mode MODE              loopback: each TX packet comes back on the same
                             queue's RX (default)
                           sink: TX packets are counted and dropped
                           source: RX traffic is generated, TX is sunk
                           bridge: a learning switch joining every connected
                             vif of every domain (like dom0's xenbr0): a TX
                             frame goes to the vif its destination mac was
                             learned on (dropped if that is its own vif);
                             broadcast, multicast and unknown destinations
                             go to every other vif. The target's RX queue is
                             the source queue's index modulo the target's
                             queue count (one flow stays in order). What a
                             target cannot take is dropped and counted
                             (bridge_dropped on the sender,
                             rx_dropped_queue_full on the target)
  --bridge-ageing S        bridge mode: seconds until a learned mac is
                           forgotten (default 300); a vif's macs are also
                           forgotten when it disconnects
  --source-size BYTES      frame size in source mode, 60..65535 (default 60)
  --source-rate PPS        frames per second per queue, 0 = as fast as the
                           frontend posts RX requests (default 0)
  --source-count N         frames per queue, 0 = unlimited (default 0)
                           Source frames: dst = the vif's mac, src
                           02:00:00:00:00:01, ethertype 0x88b5, a 64-bit
                           sequence number (big endian) at offset 14, then
                           byte[i] = (seq + i) & 0xff.
  --rx-stall-timeout S     seconds without an RX request while packets wait
                           before "Guest Rx stalled" (default 60, 0 = off)
  --rx-expire S            seconds a packet may wait for RX requests
                           (default 10; 30 ms for a frontend without
                           feature-rx-notify, as Linux)
  --busy-poll              workers spin on the rings instead of sleeping on
                           event channels; the frontend never needs to
                           notify (req_event kept far ahead)

Fault injection (for frontend tests; see docs/xpv-netback.md):
  --fault KIND             one of:
    bad-tx-rsp-id            a TX response with an id never used
                             (--fault-arg ID, default 65535)
    dup-tx-rsp               a TX response repeating the previous id
    rsp-prod-overflow        TX rsp_prod set 1000 past what was produced
    bad-rx-rsp               an RX response with offset + status > 4096
    rx-rsp-bad-id            an RX response whose id is not its request's
    event-storm              --fault-arg notifications (default 1000000)
                             without responses
    late-tx-rsp              TX responses held --fault-arg ms (default 200)
    reconnect                backend Closing -> Closed -> InitWait by itself,
                             --fault-arg times (default 1), each after N
                             more packets
    stall-rx                 stop consuming RX requests
  Hostile xenstore values (what the frontend reads; it must refuse or fall
  back, naming the key, and never crash or hang):
    xs-bad-mac               the vif's mac is "00:16:3e:zz:..": not a MAC
    xs-multicast-mac         the vif's mac has the group bit set
    xs-max-queues-zero       multi-queue-max-queues = 0
    xs-max-queues-huge       multi-queue-max-queues = 4294967295
    xs-bad-mtu               the vif's mtu = 4294967295
    xs-feature-garbage       feature-sg "yes", feature-split-event-channels
                             "2", feature-ctrl-ring " 1", feature-gso-tcpv4
                             "true" (feature-rx-copy stays "1")
    xs-state-backwards       after N packets the backend state goes
                             Connected -> InitWait (no Closing/Closed)
    xs-state-undefined       after N packets the backend state becomes
                             --fault-arg (default 99, at least 9): no
                             XenbusState
    xs-keys-vanish           after N packets the backend reconnects, and
                             removes its feature-* and multi-queue-max-queues
                             keys before InitWait; they come back once the
                             frontend closed
  The toolstack:
    reattach                 after N packets, xl network-detach (backend
                             Closing, wait up to 5 s for the frontend to
                             close, remove both directories) then, 300 ms
                             later, xl network-attach with vif 0's mac
                             alternating between --reattach-mac (odd rounds)
                             and --mac; --fault-arg rounds (default 1), each
                             after N more packets
  The control ring (the --fault-arg'th control request of each connection,
  default the first; the frontend must disconnect cleanly):
    ctrl-no-answer           the request is consumed and never answered
    ctrl-wrong-id            the response carries another id
    ctrl-bad-status          the response's status is 0xdead: no
                             XEN_NETIF_CTRL_STATUS_*
  --reattach-mac MAC       reattach: the other mac of vif 0 (default: its
                           mac with 0x10 added to the last byte; other vifs
                           always get that)
  --fault-after N          inject after N TX responses (TX faults) or N RX
                           packets (RX faults, stall-rx); reconnect,
                           reattach, xs-state-* and xs-keys-vanish count TX
                           packets (RX packets in source mode)
                           (default 1000)
  --fault-every S          reconnect, reattach, xs-state-* and xs-keys-vanish:
                           S seconds after each connect instead (1..86400)
  --fault-arg X            the fault's number, see above

Output:
  --stats-file FILE        write counters as JSON at exit (atomically)
  --stats-interval S       also rewrite the stats file every S seconds
  --verbose                log every xenbus and event channel event
  --help                   this text

Examples:
  xpv-netback --socket /run/xpv.sock
  dpdk-testpmd --vdev net_xenpv0,backend=sim:/run/xpv.sock -- -i
  xpv-netback --socket /tmp/nb.sock --mode source --source-size 1514 \
      --source-rate 100000 --stats-file /tmp/nb.json --stats-interval 1
  xpv-netback --socket /tmp/nb.sock --fault reconnect --fault-after 5000 \
      --fault-arg 3
  xpv-netback --socket /tmp/nb.sock --fault late-tx-rsp --fault-arg 500
  xpv-netback --socket /tmp/nb.sock --mode bridge --vifs 2
  xpv-netback --socket /tmp/nb.sock --mac 00:16:3e:00:00:11 --fault reattach \
      --reattach-mac 00:16:3e:00:00:21 --fault-after 1000 --fault-arg 4

Exit status: 0 after SIGINT/SIGTERM, 1 when serving failed, 2 for bad
options.
)";
}

namespace {

Result<uint64_t> parse_u64(std::string_view opt, const std::string& v, uint64_t lo, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  if (v.empty() || v[0] == '-' || errno || *end != '\0' || x < lo || x > hi) {
    return make_error(
        EINVAL, format("%.*s: '%s' is not a number in %llu..%llu", static_cast<int>(opt.size()),
                       opt.data(), v.c_str(), static_cast<unsigned long long>(lo),
                       static_cast<unsigned long long>(hi)));
  }
  return static_cast<uint64_t>(x);
}

Result<double> parse_seconds(std::string_view opt, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno || *end != '\0' || !std::isfinite(x) || x < 0 || x > 1e6) {
    return make_error(EINVAL, format("%.*s: '%s' is not a number of seconds (0..1000000)",
                                     static_cast<int>(opt.size()), opt.data(), v.c_str()));
  }
  return x;
}

uint64_t to_ms(double s) {
  return static_cast<uint64_t>(std::llround(s * 1000.0));
}

}  // namespace

Result<CliOptions> parse_cli(int argc, const char* const argv[]) {
  CliOptions o;
  Config& c = o.cfg;
  bool fault_every_given = false, fault_after_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.starts_with("--")) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg.resize(eq);
        has_value = true;
      }
    } else {
      return make_error(EINVAL, format("unexpected argument '%s'", arg.c_str()));
    }
    auto flag = [&]() -> Status {
      if (has_value) return make_error(EINVAL, format("%s takes no value", arg.c_str()));
      return {};
    };
    auto val = [&]() -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= argc) return make_error(EINVAL, format("%s needs a value", arg.c_str()));
      return std::string(argv[++i]);
    };
    if (arg == "--help") {
      XPV_TRY(flag());
      o.help = true;
    } else if (arg == "--verbose") {
      XPV_TRY(flag());
      o.verbose = true;
    } else if (arg == "--no-sg") {
      XPV_TRY(flag());
      c.feature_sg = false;
    } else if (arg == "--no-split-evtchn") {
      XPV_TRY(flag());
      c.split_evtchn = false;
    } else if (arg == "--no-gso") {
      XPV_TRY(flag());
      c.feature_gso = false;
    } else if (arg == "--no-ipv6-csum") {
      XPV_TRY(flag());
      c.feature_ipv6_csum = false;
    } else if (arg == "--no-multicast-control") {
      XPV_TRY(flag());
      c.multicast_control = false;
    } else if (arg == "--static-multicast-control") {
      XPV_TRY(flag());
      c.dynamic_multicast_control = false;
    } else if (arg == "--no-ctrl-ring") {
      XPV_TRY(flag());
      c.ctrl_ring = false;
    } else if (arg == "--no-static-grants") {
      XPV_TRY(flag());
      c.static_grants = false;
    } else if (arg == "--busy-poll") {
      XPV_TRY(flag());
      c.busy_poll = true;
    } else if (arg == "--socket") {
      auto v = val();
      if (!v) return v.error();
      if (v->empty()) return make_error(EINVAL, "--socket: the path is empty");
      o.socket = *v;
    } else if (arg == "--vifs") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 1, 16);
      if (!n) return n.error();
      c.vifs = static_cast<uint32_t>(*n);
    } else if (arg == "--mac") {
      auto v = val();
      if (!v) return v.error();
      auto m = parse_mac(*v);
      if (!m) {
        return make_error(EINVAL, format("--mac: '%s' is not a mac address like "
                                         "00:16:3e:12:34:56",
                                         v->c_str()));
      }
      if ((*m)[0] & 1) {
        return make_error(EINVAL, format("--mac: '%s' is a multicast address", v->c_str()));
      }
      c.mac = *m;
    } else if (arg == "--reattach-mac") {
      auto v = val();
      if (!v) return v.error();
      auto m = parse_mac(*v);
      if (!m) {
        return make_error(EINVAL, format("--reattach-mac: '%s' is not a mac address like "
                                         "00:16:3e:12:34:56",
                                         v->c_str()));
      }
      if ((*m)[0] & 1) {
        return make_error(EINVAL,
                          format("--reattach-mac: '%s' is a multicast address", v->c_str()));
      }
      c.reattach_mac = *m;
    } else if (arg == "--mtu") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 68, 65521);
      if (!n) return n.error();
      c.mtu = static_cast<uint32_t>(*n);
    } else if (arg == "--max-queues") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 1, 64);
      if (!n) return n.error();
      c.max_queues = static_cast<uint32_t>(*n);
    } else if (arg == "--mode") {
      auto v = val();
      if (!v) return v.error();
      auto m = parse_mode(*v);
      if (!m) {
        return make_error(
            EINVAL,
            format("--mode: unknown mode '%s' (loopback, sink, source, bridge)", v->c_str()));
      }
      c.mode = *m;
    } else if (arg == "--bridge-ageing") {
      auto v = val();
      if (!v) return v.error();
      auto s = parse_seconds(arg, *v);
      if (!s) return s.error();
      if (to_ms(*s) < 1) {
        return make_error(EINVAL, "--bridge-ageing: must be at least 0.001 seconds");
      }
      c.bridge_ageing_ms = to_ms(*s);
    } else if (arg == "--source-size") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 60, 65535);
      if (!n) return n.error();
      c.source_size = static_cast<uint32_t>(*n);
    } else if (arg == "--source-rate") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 0, 1'000'000'000);
      if (!n) return n.error();
      c.source_rate = *n;
    } else if (arg == "--source-count") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 0, UINT64_MAX);
      if (!n) return n.error();
      c.source_count = *n;
    } else if (arg == "--rx-stall-timeout") {
      auto v = val();
      if (!v) return v.error();
      auto s = parse_seconds(arg, *v);
      if (!s) return s.error();
      c.rx_stall_timeout_ms = to_ms(*s);
    } else if (arg == "--rx-expire") {
      auto v = val();
      if (!v) return v.error();
      auto s = parse_seconds(arg, *v);
      if (!s) return s.error();
      if (*s <= 0) return make_error(EINVAL, "--rx-expire: must be more than 0 seconds");
      c.rx_expire_ms = std::max<uint64_t>(1, to_ms(*s));
    } else if (arg == "--fault") {
      auto v = val();
      if (!v) return v.error();
      auto f = parse_fault(*v);
      if (!f) {
        return make_error(EINVAL, format("--fault: unknown fault '%s' (see --help)", v->c_str()));
      }
      c.fault = *f;
    } else if (arg == "--fault-after") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 0, UINT64_MAX);
      if (!n) return n.error();
      c.fault_after = *n;
      fault_after_given = true;
    } else if (arg == "--fault-every") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 1, 86400);
      if (!n) return n.error();
      c.fault_every_s = *n;
      fault_every_given = true;
    } else if (arg == "--fault-arg") {
      auto v = val();
      if (!v) return v.error();
      auto n = parse_u64(arg, *v, 0, UINT64_MAX);
      if (!n) return n.error();
      c.fault_arg = *n;
    } else if (arg == "--stats-file") {
      auto v = val();
      if (!v) return v.error();
      if (v->empty()) return make_error(EINVAL, "--stats-file: the path is empty");
      o.stats_file = *v;
    } else if (arg == "--stats-interval") {
      auto v = val();
      if (!v) return v.error();
      auto s = parse_seconds(arg, *v);
      if (!s) return s.error();
      o.stats_interval_s = *s;
    } else {
      return make_error(EINVAL, format("unknown option '%s' (see --help)", arg.c_str()));
    }
  }
  if (o.help) return o;
  if (o.socket.empty()) return make_error(EINVAL, "--socket PATH is required");
  if (o.stats_interval_s > 0 && o.stats_file.empty()) {
    return make_error(EINVAL, "--stats-interval needs --stats-file");
  }
  if (c.fault == Fault::kNone && c.fault_arg) {
    return make_error(EINVAL, "--fault-arg needs --fault");
  }
  if (fault_every_given) {
    if (!is_control_fault(c.fault)) {
      return make_error(EINVAL,
                        "--fault-every: only reconnect, reattach, xs-state-* and xs-keys-vanish "
                        "are timed (the others count packets: --fault-after)");
    }
    if (fault_after_given)
      return make_error(EINVAL, "--fault-every and --fault-after exclude each other");
  }
  if (c.fault == Fault::kBadTxRspId && c.fault_arg && *c.fault_arg > 0xFFFF) {
    return make_error(EINVAL, "--fault-arg: a TX response id is 16 bits (0..65535)");
  }
  if (c.fault != Fault::kNone && c.fault_arg) {
    switch (c.fault) {
      case Fault::kBadTxRspId:
      case Fault::kEventStorm:
      case Fault::kLateTxRsp:
      case Fault::kReconnect:
      case Fault::kReattach:
      case Fault::kXsStateUndefined:
        break;
      default:
        return make_error(EINVAL,
                          format("--fault-arg: fault %s takes no argument", to_string(c.fault)));
    }
  }
  Status s = validate(c);
  if (s.failed()) return s.error();
  return o;
}

}  // namespace xpv::netback
