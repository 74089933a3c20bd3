// SPDX-License-Identifier: MIT
// xpv-netback's command line (src/netback/cli.cc, parsed with CLI11): what a
// user who mistypes an option reads, and the parsing habits scripts rely on.
// The options' meanings and their combinations are tested with the rest of
// xpv-netback (test_netback.cc, test_netback_ctrl.cc).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "netback/cli.h"

namespace xpv {
namespace {

Result<netback::CliOptions> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "xpv-netback");
  return netback::parse_cli(static_cast<int>(args.size()), args.data());
}

// Each bad value is refused with a message naming the option and saying
// what is wrong with the value.
TEST(NetbackCli, BadValuesNameTheOptionAndTheProblem) {
  struct Bad {
    std::vector<const char*> args;
    const char* option;
    const char* problem;
  };
  const Bad bad[] = {
      // not a number
      {{"--vifs", "abc"}, "--vifs", "'abc' is not a number in 1..16"},
      {{"--source-rate", "1e3"}, "--source-rate", "'1e3' is not a number"},
      {{"--rx-stall-timeout", "soon"}, "--rx-stall-timeout", "'soon' is not a number of seconds"},
      // out of range
      {{"--max-queues", "65"}, "--max-queues", "'65' is not a number in 1..64"},
      {{"--mtu", "67"}, "--mtu", "in 68..65521"},
      {{"--source-size", "65536"}, "--source-size", "in 60..65535"},
      {{"--fault-every", "86401"}, "--fault-every", "in 1..86400"},
      {{"--source-count", "99999999999999999999"}, "--source-count", "is not a number"},
      {{"--stats-interval", "1000001"}, "--stats-interval", "(0..1000000)"},
      {{"--rx-expire", "0"}, "--rx-expire", "'0' is not a number of seconds above 0"},
      {{"--rx-queue-bytes", "65535"}, "--rx-queue-bytes", "in 65536..268435456"},
      {{"--rx-queue-packets", "15"}, "--rx-queue-packets", "in 16..1048576"},
      // a sign: strtoull, which CLI11 converts with, would wrap -1 around
      {{"--source-count", "-1"}, "--source-count", "'-1' is not a number"},
      {{"--fault-after", "-1"}, "--fault-after", "'-1' is not a number"},
      {{"--rx-stall-timeout", "-1"}, "--rx-stall-timeout", "'-1' is not a number of seconds"},
      // unknown names
      {{"--mode", "mirror"}, "--mode", "unknown mode 'mirror' (loopback, sink, source, bridge)"},
      {{"--fault", "explode"}, "--fault", "unknown fault 'explode'"},
      {{"--mac", "00:16:3e:00:00"}, "--mac", "is not a mac address like 00:16:3e:12:34:56"},
      {{"--mac", "01:16:3e:00:00:01"}, "--mac", "is a multicast address"},
      // a missing value, at the end or before the next option
      {{"--vifs"}, "--vifs", "missing"},
      {{"--fault", "--verbose"}, "--fault", "unknown fault '--verbose'"},
      {{"--stats-file", ""}, "--stats-file", "the path is empty"},
      // a value for a flag
      {{"--busy-poll=1"}, "--busy-poll", "takes no value"},
      {{"--no-gso=0"}, "--no-gso", "takes no value"},
      // unknown options and stray arguments
      {{"--bogus"}, "--bogus", "not expected"},
      {{"-v"}, "-v", "not expected"},
      {{"stray"}, "stray", "not expected"},
  };
  for (const Bad& b : bad) {
    std::vector<const char*> args = {"--socket", "/s"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    Result<netback::CliOptions> r = make_error(0, "not parsed");
    ASSERT_NO_THROW(r = parse(args)) << b.option;
    ASSERT_FALSE(r) << b.option << " " << b.problem;
    const std::string& m = r.error().message;
    EXPECT_NE(m.find(b.option), std::string::npos) << b.option << ": " << m;
    EXPECT_NE(m.find(b.problem), std::string::npos) << b.option << ": " << m;
  }
  // --socket itself, missing or without its value.
  auto none = parse({"--verbose"});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "--socket PATH is required");
  auto bare = parse({"--socket"});
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("--socket"), std::string::npos) << bare.error().message;
}

// What scripts write keeps working: --opt=value, numbers in C's notations
// (strtoull base 0), fractions of seconds, and a repeated option's last value
// counting (as getopt_long; CLI11 would refuse the repetition by default).
TEST(NetbackCli, ValuesAsScriptsWriteThem) {
  auto o = parse({"--socket=/s", "--vifs", "0x10", "--max-queues=4", "--max-queues", "2", "--mode",
                  "sink", "--mode=bridge", "--bridge-ageing", "0.25", "--rx-expire", "0.0001",
                  "--source-count", "18446744073709551615", "--stats-file", "/j",
                  "--stats-interval", "0.5"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->socket, "/s");
  EXPECT_EQ(o->cfg.vifs, 16u);
  EXPECT_EQ(o->cfg.max_queues, 2u);
  EXPECT_EQ(o->cfg.mode, netback::Mode::kBridge);
  EXPECT_EQ(o->cfg.bridge_ageing_ms, 250u);
  EXPECT_EQ(o->cfg.rx_expire_ms, 1u) << "a positive time rounds up to 1 ms";
  EXPECT_EQ(o->cfg.source_count, UINT64_MAX);
  EXPECT_EQ(o->stats_file, "/j");
  EXPECT_DOUBLE_EQ(o->stats_interval_s, 0.5);
  auto q = parse({"--socket", "/s", "--rx-queue-bytes=0x800000", "--rx-queue-packets", "8192"});
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->cfg.rx_queue_bytes, 8u << 20);
  EXPECT_EQ(q->cfg.rx_queue_packets, 8192u);
  // Defaults stay Config's.
  auto d = parse({"--socket", "/s"});
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->cfg.vifs, 1u);
  EXPECT_EQ(d->cfg.max_queues, 8u);
  EXPECT_EQ(d->cfg.rx_expire_ms, 10'000u);
  EXPECT_EQ(d->cfg.rx_stall_timeout_ms, 60'000u);
  EXPECT_EQ(d->cfg.fault_after, 1000u);
  EXPECT_EQ(d->cfg.rx_queue_bytes, 1u << 20);
  EXPECT_EQ(d->cfg.rx_queue_packets, 1024u);
  EXPECT_FALSE(d->cfg.fault_arg);
  EXPECT_FALSE(d->cfg.mac);
  EXPECT_FALSE(d->verbose);
  EXPECT_FALSE(d->help);
}

// The control-ring faults hit the --fault-arg'th control request, as --help
// and docs/xpv-netback.md say; the hand-written parser refused the argument.
TEST(NetbackCli, CtrlRingFaultsTakeWhichRequest) {
  for (const char* f : {"ctrl-no-answer", "ctrl-wrong-id", "ctrl-bad-status"}) {
    auto o = parse({"--socket", "/s", "--fault", f, "--fault-arg", "3"});
    ASSERT_TRUE(o) << f << ": " << o.error().message;
    EXPECT_EQ(netback::fault_arg_or_default(o->cfg), 3u) << f;
  }
  auto none = parse({"--socket", "/s", "--fault", "stall-rx", "--fault-arg", "3"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("--fault-arg: fault stall-rx takes no argument"),
            std::string::npos)
      << none.error().message;
}

// --help (CLI11's layout) gives every option a meaning, and says how to run
// the program and what its exit status means.
TEST(NetbackCli, HelpGivesEveryOptionItsMeaning) {
  const std::string help = netback::help_text();
  std::istringstream lines(help);
  std::string line, pending;  // an option whose name filled its column
  int options = 0;
  while (std::getline(lines, line)) {
    if (!pending.empty()) {
      EXPECT_TRUE(line.starts_with(std::string(27, ' ')) && line.size() > 27)
          << pending << " has no meaning";
      pending.clear();
    }
    if (!line.starts_with("  --")) continue;
    ++options;
    const size_t gap = line.find("  ", 2);
    if (gap == std::string::npos || line.find_first_not_of(' ', gap) == std::string::npos)
      pending = line;
  }
  EXPECT_EQ(options, 32) << help;
  for (const char* want :
       {"--socket PATH", "unix socket to serve (required)", "Exit status: 0", "2 for bad\noptions",
        "Examples:", "xs-keys-vanish", "ctrl-bad-status"}) {
    EXPECT_NE(help.find(want), std::string::npos) << want;
  }
  // --help parses alone, without --socket.
  auto h = parse({"--help"});
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_TRUE(h->help);
}

}  // namespace
}  // namespace xpv
