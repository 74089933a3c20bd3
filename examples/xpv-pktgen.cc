// SPDX-License-Identifier: MIT
// xpv-pktgen: a packet generator, reflector, sink and pinger on the xpv
// library alone (no DPDK). It checks every byte of what comes back.
//
//   xpv-pktgen --platform sim:/run/xpv.sock --role gen --count 1000000 --size 60-9000 --queues 4
//   xpv-pktgen --platform xen --role reflect --seconds 30
//   xpv-pktgen --platform sim:/run/xpv.sock --role ping --dst-ip 192.168.99.1 --count 100
//   xpv-pktgen --platform sim:/run/xpv.sock --role gen --count 500 --rounds 20 --gap-ms 400
//
// Numbered frames (also what xpv-netback --mode source sends): an 8-byte
// big-endian sequence number (queue << 48 | n) at the payload offset (14 for
// raw frames of ethertype 0x88b5, 42 for IPv4/UDP), then byte i of the frame
// = (seq + i) & 0xff, or with --pattern varied one of four patterns per frame
// (packet.h). Whatever forwards them may rewrite the headers.
#include <getopt.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "packet.h"
#include "tcp_stream.h"
#include "xpv/netfront.h"

namespace {

constexpr uint16_t kBurst = 32;
std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct Options {
  std::string platform = "xen";
  uint32_t vif = 0;
  uint32_t queues = 1;
  std::string role = "gen";
  uint64_t count = 100000;
  bool count_given = false;
  double seconds = 0;
  uint32_t size_min = 60;
  uint32_t size_max = 60;
  uint32_t window = 256;
  bool window_given = false;  // tx: no window unless --window
  uint32_t rounds = 1;        // gen: --count frames per round
  uint32_t gap_ms = 0;        // gen: idle time after each round, nothing sent or polled
  xpv::QueueMode mode = xpv::QueueMode::kPoll;
  bool zero_copy = false;
  bool verify = true;
  pkt::Pattern pattern = pkt::Pattern::kRamp;
  pkt::Proto proto = pkt::Proto::kRaw;
  xpv::MacAddr dst_mac{0x02, 0, 0, 0, 0, 0x01};
  uint32_t src_ip = 0xC0A86302;  // 192.168.99.2
  uint32_t dst_ip = 0xC0A86301;  // 192.168.99.1
  std::string json;
  bool quiet = false;
  bool reap_tx_in_transmit = false;  // DeviceConfig::experiment_reap_tx_in_transmit
  bool expect_loss = false;          // gen: a sequence gap is loss, not disorder
  uint64_t events = 0;               // tx: stop once the queues took this many events
  // --proto tcp|tcp6 (tcp_stream.h) and the offloads tried with it.
  bool tcp = false;
  bool tcp6 = false;
  uint16_t tso_mss = 0;       // tx: TxPacket::gso_* for segments longer than this
  bool csum_offload = false;  // tx: TxPacket::csum_partial
  bool lro = false;           // DeviceConfig::rx_gso
  bool rx_csum = true;        // DeviceConfig::rx_csum_offload
  bool announce = false;      // one frame to our own mac first (a bridge learns us)
  uint64_t rate = 0;          // tx: frames per second at most (0: as fast as it goes)
  bool mcast_filter = false;  // --mcast: the backend filters multicast for us
  std::vector<xpv::MacAddr> mcast_groups;
};

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: xpv-pktgen [options]\n"
      "  --platform xen|sim:PATH  hypervisor platform (default xen)\n"
      "  --vif N                  device/vif/N (default 0)\n"
      "  --queues N               queues (default 1)\n"
      "  --role ROLE              gen: send numbered frames and verify those that come back\n"
      "                             (xpv-netback loopback, or a peer that reflects: testpmd\n"
      "                             macswap, l3fwd); reflect: send every frame back with MACs\n"
      "                             swapped; sink: count and verify (xpv-netback --mode source);\n"
      "                             ping: ARP for --dst-ip, then --count ICMP echo requests,\n"
      "                             each reply checked (testpmd icmpecho, a Linux host);\n"
      "                             tx: send numbered frames as fast as the ring takes them,\n"
      "                             expecting none back (testpmd txonly's load)\n"
      "  --count N                gen/ping/tx: frames to send (0 = until --seconds; default\n"
      "                             100000)\n"
      "  --seconds S              stop after S seconds\n"
      "  --events N               tx: stop once the queues took N events from their event\n"
      "                             channels (event mode; no frame limit unless --count)\n"
      "  --size N | MIN-MAX       frame size(s) in bytes, 60..65535 (default 60)\n"
      "  --window N               gen: frames in flight per queue (default 256); tx: TX\n"
      "                             requests not yet reaped (default: as many as fit)\n"
      "  --rounds N               gen: N rounds of --count frames; each round ends when all\n"
      "                             came back (or were lost), then the link stays idle\n"
      "  --gap-ms MS              gen: idle time after each round: nothing sent, nothing\n"
      "                             polled (default 0); --json gets per-round timestamps\n"
      "  --proto raw|udp          gen: raw frames (ethertype 0x88b5) or IPv4/UDP (default raw)\n"
      "  --proto tcp|tcp6         tx, sink: one TCP stream per queue over IPv4/IPv6, each\n"
      "                             received segment's checksums and bytes checked (frames\n"
      "                             to another mac are not counted)\n"
      "  --csum-offload           tx, tcp: checksums left partial for the backend to complete\n"
      "  --tso MSS                tx, tcp: segments longer than MSS go as one large packet\n"
      "                             (up to --size 65535) that the backend cuts to MSS\n"
      "  --lro                    take large TCP packets from the backend (feature-gso-tcpv4/6)\n"
      "  --no-rx-csum             feature-no-csum-offload=1: the backend completes checksums\n"
      "  --announce               send one frame to our own mac first, so that a learning\n"
      "                             bridge knows where we are\n"
      "  --rate N                 tx: N frames per second at most, over all queues\n"
      "  --mcast MAC[,MAC...]|none  ask the backend to deliver only these multicast groups\n"
      "                             (feature-dynamic-multicast-control; broadcast passes)"
      "  --dst-mac MAC            destination MAC (default 02:00:00:00:00:01)\n"
      "  --src-ip A.B.C.D         source IPv4 address (default 192.168.99.2)\n"
      "  --dst-ip A.B.C.D         destination IPv4 address (default 192.168.99.1)\n"
      "  --mode poll|event        busy-poll, or sleep on the event channels (default poll)\n"
      "  --zero-copy              gen: build frames in the queue's granted pages\n"
      "  --pattern ramp|varied    gen: the payload after the sequence number: the ramp\n"
      "                             (seq + i) & 0xff (default), or one of four patterns per\n"
      "                             frame that no page-sized shift leaves unchanged; varied\n"
      "                             also checks each frame's length against what was sent\n"
      "  --no-verify              do not check payloads\n"
      "  --json FILE              write the results and every queue counter as JSON\n"
      "  --experiment-reap-tx-in-transmit\n"
      "                           an experiment: in event mode also consume TX responses in\n"
      "                             the transmit path (Linux netfront before its fix), to\n"
      "                             measure the spurious events that costs\n"
      "  --expect-loss            gen: the path drops frames now and then (a peer that\n"
      "                             reconnects): frames skipped in a queue's sequence count\n"
      "                             as lost, not out of order; frames arriving behind a later\n"
      "                             one still count as out of order\n"
      "  --quiet                  only the summary\n"
      "Exit status: 0 ok, 1 cannot connect, 2 bad arguments, 3 lost or corrupted packets.\n");
}

bool parse_u64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end || *s == '-') return false;
  *out = v;
  return true;
}

int bad_arg(const char* opt, const char* v, const char* want) {
  std::fprintf(stderr, "xpv-pktgen: %s '%s': %s\n", opt, v, want);
  return 2;
}

int parse_args(int argc, char** argv, Options* o) {
  static const option kLong[] = {{"platform", required_argument, nullptr, 'p'},
                                 {"vif", required_argument, nullptr, 'v'},
                                 {"queues", required_argument, nullptr, 'q'},
                                 {"role", required_argument, nullptr, 'r'},
                                 {"count", required_argument, nullptr, 'c'},
                                 {"seconds", required_argument, nullptr, 's'},
                                 {"size", required_argument, nullptr, 'z'},
                                 {"window", required_argument, nullptr, 'w'},
                                 {"mode", required_argument, nullptr, 'm'},
                                 {"zero-copy", no_argument, nullptr, 'Z'},
                                 {"no-verify", no_argument, nullptr, 'N'},
                                 {"pattern", required_argument, nullptr, 'y'},
                                 {"json", required_argument, nullptr, 'j'},
                                 {"quiet", no_argument, nullptr, 'Q'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"proto", required_argument, nullptr, 'P'},
                                 {"dst-mac", required_argument, nullptr, 'M'},
                                 {"src-ip", required_argument, nullptr, 'S'},
                                 {"dst-ip", required_argument, nullptr, 'D'},
                                 {"rounds", required_argument, nullptr, 'R'},
                                 {"gap-ms", required_argument, nullptr, 'G'},
                                 {"experiment-reap-tx-in-transmit", no_argument, nullptr, 'X'},
                                 {"expect-loss", no_argument, nullptr, 'L'},
                                 {"events", required_argument, nullptr, 'E'},
                                 {"tso", required_argument, nullptr, 'T'},
                                 {"csum-offload", no_argument, nullptr, 'C'},
                                 {"lro", no_argument, nullptr, 'O'},
                                 {"no-rx-csum", no_argument, nullptr, 'K'},
                                 {"announce", no_argument, nullptr, 'A'},
                                 {"rate", required_argument, nullptr, 'V'},
                                 {"mcast", required_argument, nullptr, 'g'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  uint64_t v = 0;
  while ((c = getopt_long(argc, argv, "h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p':
        o->platform = optarg;
        break;
      case 'v':
        if (!parse_u64(optarg, &v) || v > 65535)
          return bad_arg("--vif", optarg, "expected 0..65535");
        o->vif = static_cast<uint32_t>(v);
        break;
      case 'q':
        if (!parse_u64(optarg, &v) || v == 0 || v > xpv::kMaxQueues) {
          return bad_arg("--queues", optarg, "expected 1..16");
        }
        o->queues = static_cast<uint32_t>(v);
        break;
      case 'r':
        o->role = optarg;
        if (o->role != "gen" && o->role != "reflect" && o->role != "sink" && o->role != "ping" &&
            o->role != "tx") {
          return bad_arg("--role", optarg, "expected gen, reflect, sink, ping or tx");
        }
        break;
      case 'c':
        if (!parse_u64(optarg, &o->count)) return bad_arg("--count", optarg, "expected a number");
        o->count_given = true;
        break;
      case 's': {
        char* end = nullptr;
        o->seconds = std::strtod(optarg, &end);
        if (end == optarg || *end || o->seconds < 0)
          return bad_arg("--seconds", optarg, "expected seconds");
        break;
      }
      case 'z': {
        unsigned a = 0, b = 0;
        char tail;
        int n = std::sscanf(optarg, "%u-%u%c", &a, &b, &tail);
        if (n == 1) b = a;
        if ((n != 1 && n != 2) || a < 60 || b < a || b > xpv::kMaxPacketLen) {
          return bad_arg("--size", optarg, "expected N or MIN-MAX within 60..65535");
        }
        o->size_min = a;
        o->size_max = b;
        break;
      }
      case 'w':
        if (!parse_u64(optarg, &v) || v == 0 || v > 4096)
          return bad_arg("--window", optarg, "expected 1..4096");
        o->window = static_cast<uint32_t>(v);
        o->window_given = true;
        break;
      case 'R':
        if (!parse_u64(optarg, &v) || v == 0 || v > 100000)
          return bad_arg("--rounds", optarg, "expected 1..100000");
        o->rounds = static_cast<uint32_t>(v);
        break;
      case 'G':
        if (!parse_u64(optarg, &v) || v > 3600000)
          return bad_arg("--gap-ms", optarg, "expected milliseconds 0..3600000");
        o->gap_ms = static_cast<uint32_t>(v);
        break;
      case 'm':
        if (std::string(optarg) == "poll") {
          o->mode = xpv::QueueMode::kPoll;
        } else if (std::string(optarg) == "event") {
          o->mode = xpv::QueueMode::kEvent;
        } else {
          return bad_arg("--mode", optarg, "expected poll or event");
        }
        break;
      case 'P':
        if (std::string(optarg) == "raw") {
          o->proto = pkt::Proto::kRaw;
        } else if (std::string(optarg) == "udp") {
          o->proto = pkt::Proto::kUdp;
        } else if (std::string(optarg) == "tcp" || std::string(optarg) == "tcp6") {
          o->tcp = true;
          o->tcp6 = std::string(optarg) == "tcp6";
        } else {
          return bad_arg("--proto", optarg, "expected raw, udp, tcp or tcp6");
        }
        break;
      case 'M': {
        auto m = xpv::parse_mac(optarg);
        if (!m) return bad_arg("--dst-mac", optarg, "expected xx:xx:xx:xx:xx:xx");
        o->dst_mac = *m;
        break;
      }
      case 'S':
      case 'D': {
        bool ok = false;
        uint32_t ip = pkt::parse_ip(optarg, &ok);
        if (!ok) return bad_arg(c == 'S' ? "--src-ip" : "--dst-ip", optarg, "expected A.B.C.D");
        (c == 'S' ? o->src_ip : o->dst_ip) = ip;
        break;
      }
      case 'Z':
        o->zero_copy = true;
        break;
      case 'N':
        o->verify = false;
        break;
      case 'y':
        if (std::strcmp(optarg, "ramp") == 0) {
          o->pattern = pkt::Pattern::kRamp;
        } else if (std::strcmp(optarg, "varied") == 0) {
          o->pattern = pkt::Pattern::kVaried;
        } else {
          return bad_arg("--pattern", optarg, "expected ramp or varied");
        }
        break;
      case 'j':
        o->json = optarg;
        break;
      case 'Q':
        o->quiet = true;
        break;
      case 'X':
        o->reap_tx_in_transmit = true;
        break;
      case 'L':
        o->expect_loss = true;
        break;
      case 'E':
        if (!parse_u64(optarg, &v) || v == 0)
          return bad_arg("--events", optarg, "expected 1 or more");
        o->events = v;
        break;
      case 'T':
        if (!parse_u64(optarg, &v) || v == 0 || v > 65535)
          return bad_arg("--tso", optarg, "expected an MSS of 1..65535 bytes");
        o->tso_mss = static_cast<uint16_t>(v);
        break;
      case 'C':
        o->csum_offload = true;
        break;
      case 'O':
        o->lro = true;
        break;
      case 'K':
        o->rx_csum = false;
        break;
      case 'A':
        o->announce = true;
        break;
      case 'g': {
        o->mcast_filter = true;
        o->mcast_groups.clear();
        std::string list = optarg;
        if (list == "none") break;
        size_t at = 0;
        while (at <= list.size()) {
          const size_t comma = std::min(list.find(',', at), list.size());
          auto m = xpv::parse_mac(std::string_view(list).substr(at, comma - at));
          if (!m) return bad_arg("--mcast", optarg, "expected none or MAC[,MAC...]");
          o->mcast_groups.push_back(*m);
          at = comma + 1;
        }
        break;
      }
      case 'V':
        if (!parse_u64(optarg, &v) || v == 0)
          return bad_arg("--rate", optarg, "expected 1 or more");
        o->rate = v;
        break;
      case 'h':
        usage(stdout);
        std::exit(0);
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) return bad_arg("argument", argv[optind], "unexpected");
  if (o->events && (o->role != "tx" || o->mode != xpv::QueueMode::kEvent)) {
    std::fprintf(stderr, "xpv-pktgen: --events needs --role tx --mode event\n");
    return 2;
  }
  if (o->events && !o->count_given) o->count = 0;  // --events alone: no frame limit
  if ((o->role == "gen" || o->role == "ping" || o->role == "tx") && o->count == 0 &&
      o->seconds == 0 && o->events == 0) {
    std::fprintf(stderr, "xpv-pktgen: --role %s needs --count, --seconds or --events\n",
                 o->role.c_str());
    return 2;
  }
  if (o->rounds > 1 && (o->role != "gen" || o->count == 0 || o->seconds > 0)) {
    std::fprintf(stderr, "xpv-pktgen: --rounds needs --role gen with --count and no --seconds\n");
    return 2;
  }
  if (o->proto == pkt::Proto::kUdp && o->size_min < 60) o->size_min = 60;
  if (o->tcp && o->role != "tx" && o->role != "sink") {
    std::fprintf(stderr, "xpv-pktgen: --proto tcp/tcp6 needs --role tx or sink\n");
    return 2;
  }
  if (o->rate && o->role != "tx") {
    std::fprintf(stderr, "xpv-pktgen: --rate needs --role tx\n");
    return 2;
  }
  if ((o->tso_mss || o->csum_offload) && !(o->tcp && o->role == "tx")) {
    std::fprintf(stderr, "xpv-pktgen: --tso and --csum-offload need --role tx --proto tcp/tcp6\n");
    return 2;
  }
  if (o->pattern == pkt::Pattern::kVaried && (o->role != "gen" || o->tcp)) {
    std::fprintf(stderr, "xpv-pktgen: --pattern varied needs --role gen (raw or udp frames)\n");
    return 2;
  }
  if (o->lro && !o->rx_csum) {
    std::fprintf(stderr,
                 "xpv-pktgen: --lro needs the checksum offload (large packets come with their "
                 "checksum partial): drop --no-rx-csum\n");
    return 2;
  }
  if (o->tcp && o->role == "tx" && o->size_min <= pkt::tcp_header_len(o->tcp6)) {
    std::fprintf(stderr, "xpv-pktgen: --size %u: a TCP%s segment needs more than %u bytes\n",
                 o->size_min, o->tcp6 ? "/IPv6" : "/IPv4", pkt::tcp_header_len(o->tcp6));
    return 2;
  }
  return 0;
}

uint32_t size_for(const Options& o, uint64_t n) {
  if (o.size_min == o.size_max) return o.size_min;
  return o.size_min + static_cast<uint32_t>((n * 7919u) % (o.size_max - o.size_min + 1));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Copies the first `n` bytes of a received packet.
uint32_t head(const xpv::RxPacket& p, uint8_t* out, uint32_t n) {
  uint32_t got = 0;
  for (uint16_t f = 0; f < p.nfrags && got < n; ++f) {
    const uint32_t k = std::min(p.frags[f].len, n - got);
    std::memcpy(out + got, p.frags[f].data, k);
    got += k;
  }
  return got;
}

struct QueueStats {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t bytes_rx = 0;
  uint64_t bytes_tx = 0;  // --role tx: what the rate is of
  uint64_t bad_payload = 0;
  uint64_t out_of_order = 0;
  uint64_t foreign = 0;  // frames that are not ours
  uint64_t lost = 0;     // in flight when the link went down, or never came back
  uint64_t next_expect = 0;
  uint64_t in_flight() const { return sent - received - lost; }
  // --proto tcp
  uint32_t tcp_seq = 0;             // tx: the stream's next byte
  uint64_t tcp_payload_tx = 0;      // tx: stream bytes sent
  uint64_t tcp_payload_rx = 0;      // sink: stream bytes received
  uint64_t tcp_bad_checksum = 0;    // sink: an IPv4 or TCP checksum wrong
  uint64_t tcp_oversize = 0;        // sink: over the MTU without a GSO extra
  uint64_t tcp_wrong_gso_type = 0;  // sink: a GSO extra of the other IP version
  uint64_t rx_lro_packets = 0;      // sink: large packets (RxPacket::gso_size)
  uint64_t rx_csum_blank = 0;       // sink: NETRXF_csum_blank
  uint64_t rx_data_validated = 0;   // sink: NETRXF_data_validated
  pkt::TcpStreams streams;
};

// Recognises one of our numbered frames; returns its sequence number or
// UINT64_MAX for a foreign frame. Checks the pattern when asked (`want`: a
// scratch buffer of xpv::kMaxPacketLen bytes), and with --pattern varied the
// frame's length against what was sent (`o`'s sizes).
uint64_t check_numbered(const xpv::RxPacket& p, pkt::Proto proto, const Options& o, uint8_t* want,
                        QueueStats& st) {
  uint8_t h[64];
  const uint32_t off = pkt::payload_offset(proto);
  if (head(p, h, off + 8) < off + 8) return UINT64_MAX;
  if (proto == pkt::Proto::kRaw ? pkt::get16(h + 12) != pkt::kEthRaw
                                : (pkt::get16(h + 12) != pkt::kEthIpv4 || h[14 + 9] != 17)) {
    return UINT64_MAX;
  }
  const uint64_t seq = pkt::get64(h + off);
  if (o.verify) {
    bool ok = o.pattern == pkt::Pattern::kRamp || p.len == size_for(o, seq & 0xFFFFFFFFFFFFull);
    if (ok) pkt::pattern(want, off + 8, p.len, seq, o.pattern);
    uint32_t at = 0;
    for (uint16_t f = 0; f < p.nfrags && ok; ++f) {
      const uint32_t n = std::min(p.frags[f].len, p.len - at);
      const uint32_t skip = at < off + 8 ? std::min(off + 8 - at, n) : 0;
      ok = std::memcmp(p.frags[f].data + skip, want + at + skip, n - skip) == 0;
      at += n;
    }
    if (!ok) ++st.bad_payload;
  }
  return seq;
}

// One round of --rounds: what was sent and came back, and when (steady_clock,
// which is CLOCK_MONOTONIC on Linux: other processes' samples line up with it).
struct Round {
  uint64_t sent = 0, received = 0, lost = 0;
  double first_tx = 0;   // the round's first frame handed to the queue
  double first_rx = 0;   // the first of our frames back in the round
  double last_rx = 0;    // the round's last frame back
  double gap_start = 0;  // idle from here ...
  double gap_end = 0;    // ... to here
};

struct Totals {
  uint64_t sent = 0, received = 0, bytes = 0, bytes_tx = 0, bad = 0, ooo = 0, foreign = 0, lost = 0;
  uint64_t tcp_payload_tx = 0, tcp_payload_rx = 0, tcp_gap_bytes = 0, tcp_stream_end = 0,
           tcp_bad_checksum = 0, tcp_oversize = 0, tcp_wrong_gso_type = 0, rx_lro_packets = 0,
           rx_csum_blank = 0, rx_data_validated = 0;
};

// Whether the control path has work: a xenstore watch fired, a retry or
// deadline is due, or a queue broke (control_fd() is readable). Only then
// is poll_control() worth its xenstore reads, which block on xenstored.
bool control_ready(const xpv::Device& d) {
  pollfd p{d.control_fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

void sleep_for_events(xpv::Device& d, uint32_t nq) {
  std::vector<pollfd> pfds;
  for (uint32_t qi = 0; qi < nq; ++qi) {
    if (!d.queue(qi).arm()) return;  // work is already waiting
    pfds.push_back({d.queue(qi).event_fd(), POLLIN, 0});
  }
  pfds.push_back({d.control_fd(), POLLIN, 0});
  ::poll(pfds.data(), pfds.size(), 100);
}

// --proto tcp, receiving: one frame addressed to us, checked whole
// (`scratch` holds the largest packet).
void take_tcp(const xpv::RxPacket& p, const xpv::DeviceInfo& info, const Options& o,
              uint8_t* scratch, QueueStats& s) {
  head(p, scratch, p.len);
  const bool blank = p.flags & xpv::kRxCsumBlank;
  const pkt::TcpSegmentCheck c = pkt::check_tcp_segment(scratch, p.len, blank);
  if (p.len < 6 || std::memcmp(scratch, info.mac.data(), 6) != 0 || !c.ours) {
    ++s.foreign;  // not ours, or a copy a bridge flooded to everyone
    return;
  }
  ++s.received;
  s.bytes_rx += p.len;
  s.tcp_payload_rx += c.payload;
  if (!c.checksum_ok) ++s.tcp_bad_checksum;
  if (o.verify && !c.payload_ok) ++s.bad_payload;
  if (blank) ++s.rx_csum_blank;
  if (p.flags & xpv::kRxDataValidated) ++s.rx_data_validated;
  if (p.gso_size) {
    ++s.rx_lro_packets;
    // The GSO extra names the packet's own type.
    const bool v6 = pkt::get16(scratch + 12) == pkt::kEthIpv6;
    if (p.gso_type != (v6 ? xpv::kGsoTcpV6 : xpv::kGsoTcpV4)) ++s.tcp_wrong_gso_type;
  } else if (p.len > pkt::kEthLen + info.mtu) {
    ++s.tcp_oversize;
  }
  s.streams.take(c);
}

// ---- ping: ARP, then ICMP echo requests, each reply checked ---------------
int run_ping(xpv::Device& d, const Options& o, Totals* t, bool* failed) {
  xpv::Queue& q = d.queue(0);
  const xpv::MacAddr me = d.info().mac;
  std::vector<uint8_t> buf(xpv::kMaxPacketLen);
  auto send = [&](uint32_t len) {
    xpv::TxSegment seg{buf.data(), len};
    xpv::TxPacket p{&seg, 1};
    for (int i = 0; i < 1000 && !g_stop; ++i) {
      if (q.transmit(std::span<const xpv::TxPacket>(&p, 1))) return true;
      usleep(100);
    }
    return false;
  };
  // ARP: who has dst_ip?
  std::optional<xpv::MacAddr> peer;
  double start = now_s(), last = 0;
  while (!peer && !g_stop && now_s() - start < 10) {
    if (now_s() - last > 0.5) {
      last = now_s();
      send(pkt::arp_request(buf.data(), me, o.src_ip, o.dst_ip));
    }
    q.receive(kBurst, [&](const xpv::RxPacket& p) {
      uint8_t h[42];
      if (head(p, h, 42) == 42 && pkt::get16(h + 12) == pkt::kEthArp && pkt::get16(h + 20) == 2 &&
          pkt::get32(h + 28) == o.dst_ip) {
        xpv::MacAddr m;
        std::memcpy(m.data(), h + 22, 6);
        peer = m;
      } else {
        ++t->foreign;
      }
      return true;
    });
    if (control_ready(d)) d.poll_control();
  }
  if (!peer) {
    std::fprintf(stderr, "xpv-pktgen: no ARP reply for %u.%u.%u.%u within 10 s\n", o.dst_ip >> 24,
                 (o.dst_ip >> 16) & 255, (o.dst_ip >> 8) & 255, o.dst_ip & 255);
    *failed = true;
    return 0;
  }
  if (!o.quiet) std::printf("xpv-pktgen: %s is at %s\n", "peer", xpv::to_string(*peer).c_str());
  const uint16_t id = static_cast<uint16_t>(::getpid());
  std::vector<uint8_t> want(xpv::kMaxPacketLen);
  for (uint64_t n = 0; (o.count == 0 || n < o.count) && !g_stop; ++n) {
    if (o.seconds > 0 && now_s() - start >= o.seconds) break;
    const uint16_t seq = static_cast<uint16_t>(n);
    const uint32_t len = size_for(o, n);
    pkt::icmp_echo(buf.data(), len, *peer, me, o.src_ip, o.dst_ip, id, seq);
    std::memcpy(want.data(), buf.data(), len);
    if (!send(len)) break;
    ++t->sent;
    bool got = false;
    const double sent_at = now_s();
    while (!got && !g_stop && now_s() - sent_at < 2) {
      q.receive(kBurst, [&](const xpv::RxPacket& p) {
        std::vector<uint8_t> r(p.len);
        head(p, r.data(), p.len);
        const uint32_t ic = pkt::kEthLen + pkt::kIpLen;
        if (p.len >= ic + pkt::kIcmpLen && pkt::get16(&r[12]) == pkt::kEthIpv4 && r[14 + 9] == 1 &&
            r[ic] == 0 && pkt::get16(&r[ic + 4]) == id && pkt::get16(&r[ic + 6]) == seq) {
          got = true;
          ++t->received;
          t->bytes += p.len;
          // The reply carries our payload unchanged, from us to the peer's MAC.
          if (p.len != len ||
              std::memcmp(&r[ic + pkt::kIcmpLen], &want[ic + pkt::kIcmpLen],
                          len - ic - pkt::kIcmpLen) != 0 ||
              pkt::checksum(&r[ic], len - ic) != 0 || std::memcmp(&r[0], me.data(), 6) != 0) {
            ++t->bad;
          }
        } else {
          ++t->foreign;
        }
        return true;
      });
      if (o.mode == xpv::QueueMode::kEvent) sleep_for_events(d, 1);
      if (control_ready(d)) d.poll_control();
    }
    if (!got) ++t->lost;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, &o)) return rc;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  xpv::DeviceConfig cfg;
  cfg.platform = o.platform;
  cfg.vif = o.vif;
  cfg.queues = o.queues;
  cfg.mode = o.mode;
  cfg.experiment_reap_tx_in_transmit = o.reap_tx_in_transmit;
  cfg.rx_gso = o.lro;
  cfg.rx_csum_offload = o.rx_csum;
  auto dev = xpv::Device::open(cfg);
  if (!dev) {
    std::fprintf(stderr, "xpv-pktgen: %s\n", dev.error().message.c_str());
    return 1;
  }
  xpv::Device& d = **dev;
  if (xpv::Status s = d.connect(); s.failed()) {
    std::fprintf(stderr, "xpv-pktgen: %s\n", s.message().c_str());
    return 1;
  }
  const xpv::DeviceInfo& info = d.info();
  if (!o.quiet) {
    std::printf(
        "xpv-pktgen: connected: domain %u vif %u mac %s backend %s, %u queue(s), %s event "
        "channels, %s mode\n",
        info.self_domid, o.vif, xpv::to_string(info.mac).c_str(), info.backend_path.c_str(),
        info.queues, info.split_event_channels ? "split" : "shared",
        o.mode == xpv::QueueMode::kPoll ? "poll" : "event");
    std::fflush(stdout);
  }
  std::vector<QueueStats> st(o.queues);
  if (o.mcast_filter) {
    if (xpv::Status s = d.set_multicast_filter(true, o.mcast_groups); s.failed()) {
      std::fprintf(stderr, "xpv-pktgen: --mcast: %s\n", s.message().c_str());
      return 1;
    }
  }
  if (o.announce) {
    // To ourselves: a learning bridge learns our mac from it, and drops it
    // (it would go back out the port it came in on).
    uint8_t f[60];
    pkt::numbered(f, sizeof f, 0, pkt::Proto::kRaw, info.mac, info.mac, 0, 0);
    const xpv::TxSegment seg{f, sizeof f};
    const xpv::TxPacket one{&seg, 1};
    if (d.queue(0).transmit(std::span<const xpv::TxPacket>(&one, 1)) != 1) {
      std::fprintf(stderr, "xpv-pktgen: --announce: the frame was not taken\n");
      return 1;
    }
  }
  uint64_t link_downs = 0;
  d.set_link_callback([&](const xpv::DeviceEvent& e) {
    if (e.link == xpv::LinkState::kDown) {
      ++link_downs;
      // What was in flight is gone with the connection; numbering resumes.
      for (auto& s : st) {
        s.lost += s.in_flight();
        s.next_expect = s.sent;
      }
    }
    if (!o.quiet) {
      std::printf("xpv-pktgen: link %s %s\n", e.link == xpv::LinkState::kUp ? "up" : "down",
                  e.reason.c_str());
      std::fflush(stdout);
    }
  });

  const double t0 = now_s();
  Totals t;
  bool failed = false;
  uint64_t stalled = 0;
  // The longest time between two turns of the main loop (a sleep for events
  // lasts 100 ms at most): a longer one means this process did not run, or a
  // call into the library blocked.
  double longest_loop_gap = 0;
  // The control path runs in this loop, when it has work; its longest call
  // (xenstore) tells a slow xenstore from a data path that stopped.
  double longest_control_call = 0;
  auto serve_control = [&] {
    if (!control_ready(d)) return;
    const double start = now_s();
    d.poll_control();
    longest_control_call = std::max(longest_control_call, now_s() - start);
  };
  const bool gen = o.role == "gen";
  const bool tx_only = o.role == "tx";  // sends like gen, expects nothing back
  std::vector<Round> rounds;
  if (o.role == "ping") {
    run_ping(d, o, &t, &failed);
  } else {
    std::vector<std::vector<uint8_t>> bufs(kBurst, std::vector<uint8_t>(xpv::kMaxPacketLen));
    std::vector<uint8_t> refl(size_t{kBurst} * xpv::kMaxPacketLen);
    std::vector<uint8_t> want(xpv::kMaxPacketLen);  // the pattern a frame should carry
    // Rounds: round r may send up to (r + 1) * --count frames in all; it
    // ends when each of them came back or was lost, then the link idles.
    uint32_t round = 0;
    Round cur;
    uint64_t round_sent0 = 0, round_rx0 = 0, round_lost0 = 0;
    auto quota = [&](uint32_t qi) -> uint64_t {
      if (!o.count) return UINT64_MAX;
      return (o.count / o.queues + (qi < o.count % o.queues ? 1 : 0)) * (round + 1);
    };
    auto sum = [&](uint64_t QueueStats::*field) {
      uint64_t n = 0;
      for (const auto& s : st)
        n += s.*field;
      return n;
    };
    auto round_complete = [&]() {
      for (uint32_t qi = 0; qi < o.queues; ++qi) {
        if (st[qi].received + st[qi].lost < quota(qi)) return false;
      }
      return true;
    };
    auto close_round = [&]() {
      cur.sent = sum(&QueueStats::sent) - round_sent0;
      cur.received = sum(&QueueStats::received) - round_rx0;
      cur.lost = sum(&QueueStats::lost) - round_lost0;
      cur.gap_start = now_s();
      while (!g_stop && now_s() - cur.gap_start < o.gap_ms / 1000.0)
        usleep(10000);
      cur.gap_end = now_s();
      rounds.push_back(cur);
      cur = Round{};
      round_sent0 = sum(&QueueStats::sent);
      round_rx0 = sum(&QueueStats::received);
      round_lost0 = sum(&QueueStats::lost);
      ++round;
    };
    auto done = [&]() {
      if (g_stop) return true;
      if (o.seconds > 0 && now_s() - t0 >= o.seconds) return true;
      if (tx_only && o.events) {
        uint64_t events = 0;
        for (uint32_t qi = 0; qi < o.queues; ++qi)
          events += d.queue(qi).counters().events;
        if (events >= o.events) return true;
      }
      if (tx_only && o.count) return sum(&QueueStats::sent) >= o.count;
      return gen && o.count && round == o.rounds;
    };
    double last_report = t0, last_progress = t0, last_turn = t0;
    uint64_t last_received = 0;
    while (!done()) {
      if (gen && o.count && round_complete()) {
        close_round();
        continue;
      }
      bool busy = false;
      for (uint32_t qi = 0; qi < o.queues; ++qi) {
        xpv::Queue& q = d.queue(qi);
        QueueStats& s = st[qi];
        // Transmit a burst within the window.
        // tx: the window counts TX requests not yet reaped (--window given);
        // a small one makes every few frames wait for their completion event.
        uint64_t room = 0;
        if (gen) {
          room = s.in_flight() < o.window ? o.window - s.in_flight() : 0;
        } else if (tx_only) {
          room = kBurst;
          if (o.rate) {
            // Paced: what the rate allows so far, shared by the queues.
            const double allowed = (now_s() - t0) * static_cast<double>(o.rate) / o.queues;
            room =
                allowed > s.sent ? std::min<uint64_t>(kBurst, uint64_t(allowed) - s.sent + 1) : 0;
          }
          if (o.window_given) {
            xpv::Queue::RingState rs = q.ring_state();
            // Poll mode: the poll loop runs the response handler (in event
            // mode an event runs it, and the loop sleeps until one fires).
            if (o.mode == xpv::QueueMode::kPoll && rs.tx_answered) {
              q.poll();
              rs = q.ring_state();
            }
            const uint32_t held = rs.tx_in_flight + rs.tx_answered;
            room = std::min<uint64_t>(room, held < o.window ? o.window - held : 0);
          }
        }
        if (s.sent < quota(qi) && room > 0) {
          const uint32_t n =
              static_cast<uint32_t>(std::min<uint64_t>({kBurst, quota(qi) - s.sent, room}));
          xpv::TxSegment segs[kBurst];
          xpv::TxPacket pkts[kBurst];
          bool lent[kBurst] = {};
          uint32_t tcp_seq = s.tcp_seq;
          uint32_t tcp_payload[kBurst];
          for (uint32_t i = 0; i < n; ++i) {
            const uint64_t seq = (uint64_t{qi} << 48) | (s.sent + i);
            const uint32_t len = size_for(o, s.sent + i);
            uint8_t* p = nullptr;
            if (o.zero_copy && len <= xpv::kPageSize) p = q.tx_buffer();
            lent[i] = p != nullptr;
            if (!p) p = bufs[i].data();
            segs[i] = {p, len};
            pkts[i] = {&segs[i], 1};
            if (o.tcp) {
              tcp_payload[i] = len - pkt::tcp_header_len(o.tcp6);
              const bool tso = o.tso_mss && tcp_payload[i] > o.tso_mss;
              pkts[i].csum_partial = o.csum_offload || tso;
              pkt::tcp_segment(p, len, tcp_seq, o.tcp6,
                               static_cast<uint16_t>(pkt::kTcpSrcPort + qi), pkts[i].csum_partial,
                               {o.dst_mac, info.mac, o.src_ip, o.dst_ip});
              if (tso) {
                pkts[i].gso_type = o.tcp6 ? xpv::kGsoTcpV6 : xpv::kGsoTcpV4;
                pkts[i].gso_size = o.tso_mss;
              }
              tcp_seq += tcp_payload[i];
            } else {
              pkt::numbered(p, len, seq, o.proto, o.dst_mac, info.mac, o.src_ip, o.dst_ip,
                            o.pattern);
            }
          }
          const uint16_t sent = q.transmit(std::span<const xpv::TxPacket>(pkts, n));
          for (uint32_t i = 0; o.tcp && i < sent; ++i) {
            s.tcp_seq += tcp_payload[i];
            s.tcp_payload_tx += tcp_payload[i];
          }
          for (uint32_t i = sent; i < n; ++i) {
            if (lent[i])
              q.tx_buffer_free(const_cast<uint8_t*>(static_cast<const uint8_t*>(segs[i].data)));
          }
          for (uint32_t i = 0; i < sent; ++i)
            s.bytes_tx += segs[i].len;
          s.sent += sent;
          busy |= sent > 0;
          if (sent && cur.first_tx == 0) cur.first_tx = now_s();
        }
        // Receive, check, and (reflect) send back.
        uint32_t nrefl = 0;
        xpv::TxSegment rsegs[kBurst];
        xpv::TxPacket rpkts[kBurst];
        const uint16_t got = q.receive(kBurst, [&](const xpv::RxPacket& p) {
          if (o.role == "reflect") {
            uint8_t* out = refl.data() + size_t{nrefl} * xpv::kMaxPacketLen;
            head(p, out, p.len);
            uint8_t mac[6];
            std::memcpy(mac, out, 6);
            std::memcpy(out, out + 6, 6);
            std::memcpy(out + 6, mac, 6);
            rsegs[nrefl] = {out, p.len};
            rpkts[nrefl] = {&rsegs[nrefl], 1};
            ++nrefl;
            ++s.received;
            s.bytes_rx += p.len;
            return true;
          }
          if (o.tcp) {
            take_tcp(p, info, o, refl.data(), s);
            return true;
          }
          const pkt::Proto proto = o.role == "sink" ? pkt::Proto::kRaw : o.proto;
          const uint64_t seq = check_numbered(p, proto, o, want.data(), s);
          if (seq == UINT64_MAX) {
            ++s.foreign;  // not ours (ARP, a broadcast...): not counted as received
            return true;
          }
          if (gen) {
            const uint64_t n = seq & 0xFFFFFFFFFFFFull;
            if ((seq >> 48) != qi || n < s.next_expect) {
              ++s.out_of_order;
            } else if (n > s.next_expect) {
              // Skipped: lost on the way (--expect-loss), or overtaken.
              if (o.expect_loss)
                s.lost += n - s.next_expect;
              else
                ++s.out_of_order;
            }
            s.next_expect = n + 1;
          }
          ++s.received;
          s.bytes_rx += p.len;
          if (gen) {
            cur.last_rx = now_s();
            if (cur.first_rx == 0) cur.first_rx = cur.last_rx;
          }
          return true;
        });
        if (nrefl) {
          uint32_t off = 0;
          for (int tries = 0; off < nrefl && tries < 1000; ++tries) {
            off += q.transmit(std::span<const xpv::TxPacket>(rpkts + off, nrefl - off));
            if (off < nrefl) q.poll();
          }
          s.sent += off;
        }
        busy |= got > 0;
      }
      if (!busy) {
        if (o.mode == xpv::QueueMode::kEvent) sleep_for_events(d, o.queues);
        serve_control();
      }
      const double now = now_s();
      longest_loop_gap = std::max(longest_loop_gap, now - last_turn);
      last_turn = now;
      if (gen) {
        uint64_t rx = 0, in_flight = 0;
        for (auto& s : st) {
          rx += s.received;
          in_flight += s.in_flight();
        }
        if (rx != last_received || in_flight == 0) {
          last_received = rx;
          last_progress = now;
        } else if (o.expect_loss && now - last_progress > 1.0) {
          // Nothing came back for 1 s: the peer is away (--expect-loss);
          // what is in flight is lost, numbering resumes.
          for (auto& s : st) {
            s.lost += s.in_flight();
            s.next_expect = s.sent;
          }
          last_progress = now;
        } else if (now - last_progress > 5.0) {
          // Nothing came back for 5 s: what is in flight is lost.
          for (auto& s : st) {
            stalled += s.in_flight();
            s.lost += s.in_flight();
          }
          std::fprintf(stderr, "xpv-pktgen: nothing came back for 5 s; %" PRIu64 " packets lost\n",
                       stalled);
          last_progress = now;
        }
      }
      if (now - last_report >= 1.0) {
        last_report = now;
        serve_control();
        if (!o.quiet) {
          uint64_t tx = 0, rx = 0;
          for (auto& s : st) {
            tx += s.sent;
            rx += s.received;
          }
          std::printf("xpv-pktgen: %.0fs sent %" PRIu64 " received %" PRIu64 "\n", now - t0, tx,
                      rx);
          std::fflush(stdout);
        }
      }
    }
    for (auto& s : st) {
      t.sent += s.sent;
      t.received += s.received;
      t.bytes += s.bytes_rx;
      t.bytes_tx += s.bytes_tx;
      t.bad += s.bad_payload;
      t.ooo += s.out_of_order;
      t.foreign += s.foreign;
      t.lost += s.lost;
      t.tcp_payload_tx += s.tcp_payload_tx;
      t.tcp_payload_rx += s.tcp_payload_rx;
      t.tcp_gap_bytes += s.streams.gap_bytes;
      t.tcp_stream_end += s.streams.end();
      t.ooo += s.streams.out_of_order;
      t.tcp_bad_checksum += s.tcp_bad_checksum;
      t.tcp_oversize += s.tcp_oversize;
      t.tcp_wrong_gso_type += s.tcp_wrong_gso_type;
      t.rx_lro_packets += s.rx_lro_packets;
      t.rx_csum_blank += s.rx_csum_blank;
      t.rx_data_validated += s.rx_data_validated;
    }
  }
  const double elapsed = now_s() - t0;

  xpv::QueueCounters total{};
  std::vector<xpv::QueueCounters> per_queue(o.queues);
  for (uint32_t qi = 0; qi < o.queues; ++qi) {
    const xpv::QueueCounters c = d.queue(qi).counters();
    per_queue[qi] = c;
    for (const auto& ci : xpv::kQueueCounterInfo) {
      *reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&total) + ci.offset) +=
          xpv::counter_value(c, ci);
    }
  }
  // The rate of what came in; for --role tx, of what went out.
  const uint64_t rate_packets = o.role == "tx" ? t.sent : t.received;
  const uint64_t rate_bytes = o.role == "tx" ? t.bytes_tx : t.bytes;
  const double pps = elapsed > 0 ? rate_packets / elapsed : 0;
  std::printf(
      "xpv-pktgen: %s: sent %" PRIu64 ", received %" PRIu64
      " (%.0f pps, %.1f Mbit/s) in %.2f s; bad "
      "payload %" PRIu64 ", out of order %" PRIu64 ", foreign %" PRIu64 ", lost %" PRIu64 "\n",
      o.role.c_str(), t.sent, t.received, pps, elapsed > 0 ? rate_bytes * 8 / elapsed / 1e6 : 0.0,
      elapsed, t.bad, t.ooo, t.foreign, t.lost);
  if (o.tcp) {
    std::printf("xpv-pktgen: tcp: stream bytes sent %" PRIu64 ", received %" PRIu64
                " (gaps %" PRIu64 "), bad checksums %" PRIu64 ", oversize %" PRIu64
                "; large packets %" PRIu64 ", csum_blank %" PRIu64 ", data_validated %" PRIu64 "\n",
                t.tcp_payload_tx, t.tcp_payload_rx, t.tcp_gap_bytes, t.tcp_bad_checksum,
                t.tcp_oversize, t.rx_lro_packets, t.rx_csum_blank, t.rx_data_validated);
  }
  std::printf("xpv-pktgen: notifies %" PRIu64 " (%.4f per packet), events %" PRIu64
              ", spurious %" PRIu64 ", delayed EOIs %" PRIu64 ", ring full %" PRIu64
              ", backend errors %" PRIu64 ", tx reaped in xmit %" PRIu64 ", link downs %" PRIu64
              ", tx dropped %" PRIu64 "\n",
              total.notifies, t.sent ? double(total.notifies) / t.sent : 0.0, total.events,
              total.spurious_events, total.delayed_eois, total.ring_full, total.backend_errors,
              total.tx_reaped_in_xmit, link_downs, total.tx_dropped);
  const uint64_t reconnects = d.reconnects();
  d.close();
  const auto acc = d.teardown_account();
  if (!o.quiet) {
    std::printf("xpv-pktgen: teardown: %" PRIu64 " pages, %" PRIu64 " returned, %" PRIu64
                " still mapped by the backend\n",
                acc.pages, acc.returned, acc.still_mapped);
  }
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "xpv-pktgen: cannot write %s: %s\n", o.json.c_str(),
                   std::strerror(errno));
    } else {
      std::fprintf(f,
                   "{\"role\":\"%s\",\"sent\":%" PRIu64 ",\"received\":%" PRIu64
                   ",\"seconds\":%.3f,"
                   "\"pps\":%.1f,\"mbit_s\":%.1f,\"bad_payload\":%" PRIu64
                   ",\"out_of_order\":%" PRIu64 ",\"foreign\":%" PRIu64 ",\"lost\":%" PRIu64
                   ",\"stalled\":%" PRIu64 ",\"link_downs\":%" PRIu64 ",\"reconnects\":%" PRIu64
                   ",\"teardown_pages\":%" PRIu64 ",\"teardown_returned\":%" PRIu64
                   ",\"teardown_still_mapped\":%" PRIu64
                   ",\"longest_loop_gap_ms\":%.1f,\"longest_control_call_ms\":%.1f",
                   o.role.c_str(), t.sent, t.received, elapsed, pps,
                   elapsed > 0 ? rate_bytes * 8 / elapsed / 1e6 : 0.0, t.bad, t.ooo, t.foreign,
                   t.lost, stalled, link_downs, reconnects, acc.pages, acc.returned,
                   acc.still_mapped, longest_loop_gap * 1e3, longest_control_call * 1e3);
      std::fprintf(f,
                   ",\"tcp_payload_tx\":%" PRIu64 ",\"tcp_payload_rx\":%" PRIu64
                   ",\"tcp_gap_bytes\":%" PRIu64 ",\"tcp_stream_end\":%" PRIu64
                   ",\"tcp_bad_checksum\":%" PRIu64 ",\"tcp_oversize\":%" PRIu64
                   ",\"tcp_wrong_gso_type\":%" PRIu64 ",\"rx_lro_packets\":%" PRIu64
                   ",\"rx_csum_blank\":%" PRIu64 ",\"rx_data_validated\":%" PRIu64,
                   t.tcp_payload_tx, t.tcp_payload_rx, t.tcp_gap_bytes, t.tcp_stream_end,
                   t.tcp_bad_checksum, t.tcp_oversize, t.tcp_wrong_gso_type, t.rx_lro_packets,
                   t.rx_csum_blank, t.rx_data_validated);
      for (const auto& ci : xpv::kQueueCounterInfo) {
        std::fprintf(f, ",\"%s\":%" PRIu64, ci.name, xpv::counter_value(total, ci));
      }
      // Every queue's own counters (e.g. which copy mode its backend runs).
      std::fprintf(f, ",\"per_queue\":[");
      for (uint32_t qi = 0; qi < o.queues; ++qi) {
        const xpv::QueueCounters& c = per_queue[qi];
        std::fprintf(f, "%s{", qi ? "," : "");
        bool first = true;
        for (const auto& ci : xpv::kQueueCounterInfo) {
          std::fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", ci.name,
                       xpv::counter_value(c, ci));
          first = false;
        }
        std::fprintf(f, "}");
      }
      std::fprintf(f, "]");
      std::fprintf(f, ",\"rounds\":[");
      for (size_t r = 0; r < rounds.size(); ++r) {
        const Round& x = rounds[r];
        std::fprintf(f,
                     "%s{\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"lost\":%" PRIu64
                     ",\"first_tx\":%.6f,\"first_rx\":%.6f,\"last_rx\":%.6f,\"gap_start\":%.6f,"
                     "\"gap_end\":%.6f}",
                     r ? "," : "", x.sent, x.received, x.lost, x.first_tx, x.first_rx, x.last_rx,
                     x.gap_start, x.gap_end);
      }
      std::fprintf(f, "]}\n");
      std::fclose(f);
    }
  }
  const bool lost_unexplained =
      (o.role == "ping" && t.lost) || stalled ||
      (gen && o.count && !o.seconds && t.received + t.lost < o.count * o.rounds);
  if (failed || t.bad || (gen && t.ooo) || lost_unexplained) return 3;
  if (o.tcp && (t.ooo || t.tcp_bad_checksum || t.tcp_oversize || t.tcp_wrong_gso_type)) return 3;
  return 0;
}
