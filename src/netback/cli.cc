// SPDX-License-Identifier: MIT
// xpv-netback's command line, parsed by CLI11 (Debian's libcli11-dev).
// describe() declares every option once, with its meaning for --help. CLI11
// names the option in its own errors (a missing value; an unknown option or
// a stray argument is shown as given); one value's checks are the validators
// below, whose messages CLI11 prefixes with the option's name; parse_cli
// checks what joins several options, validate() (config.cc) the settings.
#include "netback/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>

namespace xpv::netback {
namespace {

constexpr const char* kAbout =
    R"(A userspace Xen netif backend (netback) on a simulated hypervisor. It owns
the simulated hypervisor and serves it on the unix socket PATH: every
process that connects (an xpv frontend, e.g. a DPDK app started with
--vdev net_xenpv0,backend=sim:PATH) becomes a new guest domain, gets vifs
as xl would create them, and is served the way Linux's xen-netback serves
a vif: same handshake, same checks of what the frontend puts on its rings.
Prints "xpv-netback: listening on PATH" when ready. SIGINT/SIGTERM close
every vif, remove the socket and exit 0.
)";

constexpr const char* kFooter = R"(Examples:
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
options.)";

constexpr const char* kModeHelp = R"(loopback: each TX packet comes back on the same
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
  rx_dropped_queue_full on the target))";

constexpr const char* kFaultHelp = R"(one of:
bad-tx-rsp-id: a TX response with an id never used
  (--fault-arg ID, default 65535)
dup-tx-rsp: a TX response repeating the previous id
rsp-prod-overflow: TX rsp_prod set 1000 past what
  was produced
bad-rx-rsp: an RX response with offset + status >
  4096
rx-rsp-bad-id: an RX response whose id is not its
  request's
event-storm: --fault-arg notifications (default
  1000000) without responses
late-tx-rsp: TX responses held --fault-arg ms
  (default 200)
reconnect: backend Closing -> Closed -> InitWait by
  itself, --fault-arg times (default 1), each after
  N more packets
stall-rx: stop consuming RX requests
Hostile xenstore values (what the frontend reads;
it must refuse or fall back, naming the key, and
never crash or hang):
xs-bad-mac: the vif's mac is "00:16:3e:zz:..": not
  a MAC
xs-multicast-mac: the vif's mac has the group bit
  set
xs-max-queues-zero: multi-queue-max-queues = 0
xs-max-queues-huge: multi-queue-max-queues =
  4294967295
xs-bad-mtu: the vif's mtu = 4294967295
xs-feature-garbage: feature-sg "yes",
  feature-split-event-channels "2",
  feature-ctrl-ring " 1", feature-gso-tcpv4 "true"
  (feature-rx-copy stays "1")
xs-state-backwards: after N packets the backend
  state goes Connected -> InitWait (no
  Closing/Closed)
xs-state-undefined: after N packets the backend
  state becomes --fault-arg (default 99, at least
  9): no XenbusState
xs-keys-vanish: after N packets the backend
  reconnects, and removes its feature-* and
  multi-queue-max-queues keys before InitWait; they
  come back once the frontend closed
The toolstack:
reattach: after N packets, xl network-detach
  (backend Closing, wait up to 5 s for the frontend
  to close, remove both directories) then, 300 ms
  later, xl network-attach with vif 0's mac
  alternating between --reattach-mac (odd rounds)
  and --mac; --fault-arg rounds (default 1), each
  after N more packets
The control ring (the --fault-arg'th control
request of each connection, default the first; the
frontend must disconnect cleanly):
ctrl-no-answer: the request is consumed and never
  answered
ctrl-wrong-id: the response carries another id
ctrl-bad-status: the response's status is 0xdead:
  no XEN_NETIF_CTRL_STATUS_*)";

// A validator whose check returns what is wrong with the value, or nothing.
// It has no description: the type names in --help stay N, S, MAC...
CLI::Validator check(std::function<std::string(const std::string&)> f) {
  return CLI::Validator([f = std::move(f)](std::string& v) { return f(v); }, "");
}

// A whole number in lo..hi, as CLI11 then converts it (strtoull, base 0),
// but without a sign, which strtoull would wrap around.
CLI::Validator number(uint64_t lo, uint64_t hi) {
  return check([lo, hi](const std::string& v) -> std::string {
    char* end = nullptr;
    errno = 0;
    const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
    if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0])) && errno == 0 &&
        *end == '\0' && x >= lo && x <= hi) {
      return {};
    }
    return format("'%s' is not a number in %llu..%llu", v.c_str(),
                  static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
  });
}

// Seconds, fractions allowed, up to 1000000; more than 0 when `positive`.
CLI::Validator seconds(bool positive) {
  return check([positive](const std::string& v) -> std::string {
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(v.c_str(), &end);
    if (!v.empty() && errno == 0 && *end == '\0' && std::isfinite(x) && x >= 0 && x <= 1e6 &&
        !(positive && x == 0)) {
      return {};
    }
    return format(positive ? "'%s' is not a number of seconds above 0 (up to 1000000)"
                           : "'%s' is not a number of seconds (0..1000000)",
                  v.c_str());
  });
}

CLI::Validator unicast_mac() {
  return check([](const std::string& v) -> std::string {
    const auto m = parse_mac(v);
    if (!m) return format("'%s' is not a mac address like 00:16:3e:12:34:56", v.c_str());
    if ((*m)[0] & 1) return format("'%s' is a multicast address", v.c_str());
    return {};
  });
}

// Milliseconds from validated seconds; at least 1 for a positive setting.
uint64_t to_ms(double s, bool positive) {
  const auto ms = static_cast<uint64_t>(std::llround(s * 1000.0));
  return positive ? std::max<uint64_t>(1, ms) : ms;
}

// The options a check after parsing needs to know were given.
struct Given {
  CLI::Option* fault_after;
  CLI::Option* fault_every;
};

// Declares every option on `app`, each writing into `o` when given.
Given describe(CLI::App& app, CliOptions& o) {
  Config& c = o.cfg;
  app.description(kAbout);
  app.footer(kFooter);
  app.get_formatter()->column_width(27);
  // Our own --help flag: parse_cli reports it, main prints help_text().
  app.set_help_flag();
  // As getopt_long: the last of a repeated option counts.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // A flag takes no value: CLI11 hands it "true" unless one is given (--flag=1).
  const CLI::Validator no_value = check([](const std::string& v) -> std::string {
    return v == "true" ? "" : format("takes no value ('%s' given)", v.c_str());
  });
  auto flag = [&](const char* name, bool& setting, const char* what) {
    app.add_flag(name, setting, what)->check(no_value);
  };
  auto unset = [&](const char* name, bool& setting, const char* what) {
    app.add_flag_callback(
           name, [&setting] { setting = false; }, what)
        ->check(no_value);
  };
  auto num = [&](const char* name, auto& setting, uint64_t lo, uint64_t hi, const char* type,
                 const char* what) {
    return app.add_option(name, setting, what)->type_name(type)->check(number(lo, hi));
  };
  auto secs = [&](const char* name, uint64_t& ms, bool positive, const char* what) {
    auto set = [&ms, positive](double s) { ms = to_ms(s, positive); };
    app.add_option_function<double>(name, set, what)->type_name("S")->check(seconds(positive));
  };
  auto mac = [&](const char* name, std::optional<Mac>& setting, const char* what) {
    auto set = [&setting](const std::string& v) { setting = parse_mac(v); };
    app.add_option_function<std::string>(name, set, what)->type_name("MAC")->check(unicast_mac());
  };
  auto path = [&](const char* name, std::string& setting, const char* type, const char* what) {
    app.add_option(name, setting, what)->type_name(type)->check(check([](const std::string& v) {
      return v.empty() ? "the path is empty" : "";
    }));
  };
  // A name that parse (config.cc) knows, kept as what it names.
  auto named = [&](const char* name, auto& setting, auto parse, const char* kind, const char* known,
                   const char* what) {
    auto set = [&setting, parse](const std::string& v) { setting = *parse(v); };
    return app.add_option_function<std::string>(name, set, what)
        ->check(check([=](const std::string& v) -> std::string {
          return parse(v) ? "" : format("unknown %s '%s' (%s)", kind, v.c_str(), known);
        }));
  };

  app.option_defaults()->group("Toolstack");
  path("--socket", o.socket, "PATH", "unix socket to serve (required)");
  num("--vifs", c.vifs, 1, 16, "N",
      "vifs per domain, 0..N-1 (default 1, at most 16);\n"
      "in bridge mode every one of them is on the bridge");
  mac("--mac", c.mac,
      "mac of vif 0, e.g. 00:16:3e:12:34:56\n(default 00:16:3e:<domid hi>:<domid lo>:<vif>)");
  num("--mtu", c.mtu, 68, 65521, "N", "write \"mtu\" to the frontend's node (default: none)");
  num("--max-queues", c.max_queues, 1, 64, "N", "multi-queue-max-queues (default 8)");
  unset("--no-sg", c.feature_sg, "feature-sg=0 (default 1)");
  unset("--no-split-evtchn", c.split_evtchn, "feature-split-event-channels=0 (default 1)");
  unset("--no-gso", c.feature_gso,
        "feature-gso-tcpv4/-tcpv6=0: no TSO from frontends\n(default 1, as Linux netback)");
  unset("--no-ipv6-csum", c.feature_ipv6_csum, "feature-ipv6-csum-offload=0 (default 1)");
  unset("--no-multicast-control", c.multicast_control, "feature-multicast-control=0 (default 1)");
  unset("--static-multicast-control", c.dynamic_multicast_control,
        "feature-dynamic-multicast-control=0: the frontend's\n"
        "request-multicast-control counts at connect only");
  unset("--no-ctrl-ring", c.ctrl_ring,
        "feature-ctrl-ring=0: no RX hashing, no static\n"
        "grants (default 1: the control ring as Linux\n"
        "netback serves it, plus static grants)");
  unset("--no-static-grants", c.static_grants,
        "answer GET_GREF_MAPPING_SIZE and ADD/DEL_GREF_MAPPING\n"
        "with NOT_SUPPORTED, as Linux netback does");

  app.option_defaults()->group("Data path");
  named("--mode", c.mode, parse_mode, "mode", "loopback, sink, source, bridge", kModeHelp)
      ->type_name("MODE");
  secs("--bridge-ageing", c.bridge_ageing_ms, true,
       "bridge mode: seconds until a learned mac is\n"
       "forgotten (default 300); a vif's macs are also\n"
       "forgotten when it disconnects");
  num("--source-size", c.source_size, 60, 65535, "BYTES",
      "frame size in source mode, 60..65535 (default 60)");
  num("--source-rate", c.source_rate, 0, 1'000'000'000, "PPS",
      "frames per second per queue, 0 = as fast as the\n"
      "frontend posts RX requests (default 0)");
  num("--source-count", c.source_count, 0, UINT64_MAX, "N",
      "frames per queue, 0 = unlimited (default 0)\n"
      "Source frames: dst = the vif's mac, src\n"
      "02:00:00:00:00:01, ethertype 0x88b5, a 64-bit\n"
      "sequence number (big endian) at offset 14, then\n"
      "byte[i] = (seq + i) & 0xff.");
  secs("--rx-stall-timeout", c.rx_stall_timeout_ms, false,
       "seconds without an RX request while packets wait\n"
       "before \"Guest Rx stalled\" (default 60, 0 = off)");
  secs("--rx-expire", c.rx_expire_ms, true,
       "seconds a packet may wait for RX requests\n"
       "(default 10; 30 ms for a frontend without\n"
       "feature-rx-notify, as Linux)");
  num("--rx-queue-bytes", c.rx_queue_bytes, 65536, 1u << 28, "BYTES",
      "what each RX queue holds for a frontend that has\n"
      "not posted RX requests yet, in bytes (default\n"
      "1 MiB); a bridge port's inbox holds as much. Past\n"
      "it frames are dropped, as past a Linux vif's\n"
      "queue and qdisc (ip link ... txqueuelen)");
  num("--rx-queue-packets", c.rx_queue_packets, 16, 1u << 20, "N",
      "the same limit in packets (default 1024)");
  flag("--busy-poll", c.busy_poll,
       "workers spin on the rings instead of sleeping on\n"
       "event channels; the frontend never needs to\n"
       "notify (req_event kept far ahead)");

  app.option_defaults()->group("Fault injection (for frontend tests; see docs/xpv-netback.md)");
  named("--fault", c.fault, parse_fault, "fault", "see --help", kFaultHelp)->type_name("KIND");
  mac("--reattach-mac", c.reattach_mac,
      "reattach: the other mac of vif 0 (default: its\n"
      "mac with 0x10 added to the last byte; other vifs\n"
      "always get that)");
  Given given;
  given.fault_after = num("--fault-after", c.fault_after, 0, UINT64_MAX, "N",
                          "inject after N TX responses (TX faults) or N RX\n"
                          "packets (RX faults, stall-rx); reconnect,\n"
                          "reattach, xs-state-* and xs-keys-vanish count TX\n"
                          "packets (RX packets in source mode)\n"
                          "(default 1000)");
  given.fault_every = num("--fault-every", c.fault_every_s, 1, 86400, "S",
                          "reconnect, reattach, xs-state-* and xs-keys-vanish:\n"
                          "S seconds after each connect instead (1..86400)");
  auto arg = [&c](uint64_t x) { c.fault_arg = x; };
  app.add_option_function<uint64_t>("--fault-arg", arg, "the fault's number, see above")
      ->type_name("X")
      ->check(number(0, UINT64_MAX));

  app.option_defaults()->group("Output");
  path("--stats-file", o.stats_file, "FILE", "write counters as JSON at exit (atomically)");
  app.add_option("--stats-interval", o.stats_interval_s,
                 "also rewrite the stats file every S seconds")
      ->type_name("S")
      ->check(seconds(false));
  flag("--verbose", o.verbose, "log every xenbus and event channel event");
  flag("--help", o.help, "this text");
  return given;
}

// What no single option can check: which options go together.
Status check_combinations(const CliOptions& o, bool fault_after_given, bool fault_every_given) {
  const Config& c = o.cfg;
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
      case Fault::kCtrlNoAnswer:  // which control request (ctrl_ring.cc)
      case Fault::kCtrlWrongId:
      case Fault::kCtrlBadStatus:
        break;
      default:
        return make_error(EINVAL,
                          format("--fault-arg: fault %s takes no argument", to_string(c.fault)));
    }
  }
  return validate(c);
}

}  // namespace

const char* help_text() {
  static const std::string text = [] {
    try {
      CliOptions o;
      CLI::App app("", "xpv-netback");
      describe(app, o);
      return app.help();
    } catch (const std::exception& e) {
      return std::string("xpv-netback: cannot format the help: ") + e.what() + "\n";
    }
  }();
  return text.c_str();
}

Result<CliOptions> parse_cli(int argc, const char* const argv[]) {
  CliOptions o;
  bool fault_after_given = false, fault_every_given = false;
  try {
    CLI::App app("", "xpv-netback");
    const Given given = describe(app, o);
    app.parse(argc, argv);
    fault_after_given = given.fault_after->count() > 0;
    fault_every_given = given.fault_every->count() > 0;
  } catch (const std::exception& e) {  // CLI::ParseError names the option
    return make_error(EINVAL, e.what());
  }
  if (o.help) return o;
  if (Status s = check_combinations(o, fault_after_given, fault_every_given); s.failed()) {
    return s.error();
  }
  return o;
}

}  // namespace xpv::netback
