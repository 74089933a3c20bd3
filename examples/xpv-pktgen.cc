// SPDX-License-Identifier: MIT
// xpv-pktgen: a packet generator, reflector and sink on the xpv library alone
// (no DPDK). Against xpv-netback in loopback mode it sends numbered packets
// and checks every byte of every packet that comes back; against a real vif
// it reflects or counts what dom0 sends.
//
//   xpv-pktgen --platform sim:/run/xpv.sock --role gen --count 1000000 --size 60-9000 --queues 4
//   xpv-pktgen --platform xen --role reflect --seconds 30
//
// Packet format (also what xpv-netback --mode source sends): Ethernet header
// (dst, src, ethertype 0x88b5), an 8-byte big-endian sequence number at
// offset 14 (queue << 48 | n), then byte i (i >= 22) = (seq + i) & 0xff.
#include <getopt.h>
#include <poll.h>
#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "xpv/netfront.h"

namespace {

constexpr uint16_t kEthertype = 0x88b5;
constexpr uint32_t kHeader = 22;  // Ethernet header + sequence number
constexpr uint16_t kBurst = 32;

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

struct Options {
  std::string platform = "xen";
  uint32_t vif = 0;
  uint32_t queues = 1;
  std::string role = "gen";  // gen | reflect | sink
  uint64_t count = 100000;   // per direction (gen), 0 = until --seconds
  double seconds = 0;        // 0 = until --count
  uint32_t size_min = 60;
  uint32_t size_max = 60;
  uint32_t window = 256;  // gen: packets in flight per queue
  xpv::QueueMode mode = xpv::QueueMode::kPoll;
  bool zero_copy = false;
  bool verify = true;
  std::string json;
  bool quiet = false;
};

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: xpv-pktgen [options]\n"
      "  --platform xen|sim:PATH  hypervisor platform (default xen)\n"
      "  --vif N                  device/vif/N (default 0)\n"
      "  --queues N               queues (default 1)\n"
      "  --role gen|reflect|sink  gen: send numbered packets and verify what comes back\n"
      "                           (needs a loopback backend); reflect: send every received\n"
      "                           packet back with MACs swapped; sink: count and verify\n"
      "                           packets (xpv-netback --mode source)\n"
      "  --count N                gen: packets to send (and receive); 0 = no limit (default "
      "100000)\n"
      "  --seconds S              stop after S seconds (default: no limit)\n"
      "  --size N | MIN-MAX       packet size(s) in bytes, 60..65535 (default 60)\n"
      "  --window N               gen: packets in flight per queue (default 256)\n"
      "  --mode poll|event        poll: busy-poll; event: sleep on event channels (default poll)\n"
      "  --zero-copy              gen: build packets in the queue's granted pages\n"
      "  --no-verify              do not check payloads\n"
      "  --json FILE              write the results as JSON\n"
      "  --quiet                  only the summary\n");
}

bool parse_u64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
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
                                 {"json", required_argument, nullptr, 'j'},
                                 {"quiet", no_argument, nullptr, 'Q'},
                                 {"help", no_argument, nullptr, 'h'},
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
          return std::fprintf(stderr, "xpv-pktgen: --vif '%s' is not a vif number\n", optarg), 2;
        o->vif = static_cast<uint32_t>(v);
        break;
      case 'q':
        if (!parse_u64(optarg, &v) || v == 0 || v > xpv::kMaxQueues) {
          return std::fprintf(stderr, "xpv-pktgen: --queues '%s' must be 1..%u\n", optarg,
                              xpv::kMaxQueues),
                 2;
        }
        o->queues = static_cast<uint32_t>(v);
        break;
      case 'r':
        o->role = optarg;
        if (o->role != "gen" && o->role != "reflect" && o->role != "sink") {
          return std::fprintf(stderr, "xpv-pktgen: --role '%s' must be gen, reflect or sink\n",
                              optarg),
                 2;
        }
        break;
      case 'c':
        if (!parse_u64(optarg, &o->count))
          return std::fprintf(stderr, "xpv-pktgen: --count '%s' is not a number\n", optarg), 2;
        break;
      case 's': {
        char* end = nullptr;
        o->seconds = std::strtod(optarg, &end);
        if (end == optarg || *end || o->seconds < 0) {
          return std::fprintf(stderr, "xpv-pktgen: --seconds '%s' is not a duration\n", optarg), 2;
        }
        break;
      }
      case 'z': {
        unsigned a = 0, b = 0;
        char tail;
        int n = std::sscanf(optarg, "%u-%u%c", &a, &b, &tail);
        if (n == 1) b = a;
        if ((n != 1 && n != 2) || a < 60 || b < a || b > xpv::kMaxPacketLen) {
          return std::fprintf(stderr,
                              "xpv-pktgen: --size '%s' must be N or MIN-MAX within 60..65535\n",
                              optarg),
                 2;
        }
        o->size_min = a;
        o->size_max = b;
        break;
      }
      case 'w':
        if (!parse_u64(optarg, &v) || v == 0 || v > 4096)
          return std::fprintf(stderr, "xpv-pktgen: --window '%s' must be 1..4096\n", optarg), 2;
        o->window = static_cast<uint32_t>(v);
        break;
      case 'm':
        if (std::string(optarg) == "poll") {
          o->mode = xpv::QueueMode::kPoll;
        } else if (std::string(optarg) == "event") {
          o->mode = xpv::QueueMode::kEvent;
        } else {
          return std::fprintf(stderr, "xpv-pktgen: --mode '%s' must be poll or event\n", optarg), 2;
        }
        break;
      case 'Z':
        o->zero_copy = true;
        break;
      case 'N':
        o->verify = false;
        break;
      case 'j':
        o->json = optarg;
        break;
      case 'Q':
        o->quiet = true;
        break;
      case 'h':
        usage(stdout);
        std::exit(0);
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc)
    return std::fprintf(stderr, "xpv-pktgen: unexpected argument '%s'\n", argv[optind]), 2;
  if (o->role == "gen" && o->count == 0 && o->seconds == 0) {
    return std::fprintf(stderr, "xpv-pktgen: --role gen needs --count or --seconds\n"), 2;
  }
  return 0;
}

uint32_t size_for(const Options& o, uint64_t n) {
  if (o.size_min == o.size_max) return o.size_min;
  return o.size_min + static_cast<uint32_t>((n * 7919u) % (o.size_max - o.size_min + 1));
}

void fill(uint8_t* p, uint32_t len, uint64_t seq, const xpv::MacAddr& dst,
          const xpv::MacAddr& src) {
  std::memcpy(p, dst.data(), 6);
  std::memcpy(p + 6, src.data(), 6);
  p[12] = kEthertype >> 8;
  p[13] = kEthertype & 0xff;
  for (int i = 0; i < 8; ++i)
    p[14 + i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
  for (uint32_t i = kHeader; i < len; ++i)
    p[i] = static_cast<uint8_t>(seq + i);
}

struct QueueStats {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t bytes_rx = 0;
  uint64_t bad_payload = 0;
  uint64_t out_of_order = 0;
  uint64_t foreign = 0;  // not our format
  uint64_t lost = 0;     // in flight when the link went down
  uint64_t next_expect = 0;
  uint64_t in_flight() const { return sent - received - lost; }
};

// Checks one received packet; returns its sequence number (or UINT64_MAX).
uint64_t check(const xpv::RxPacket& p, bool verify, QueueStats& st) {
  uint8_t hdr[kHeader];
  uint32_t got = 0;
  for (uint16_t f = 0; f < p.nfrags && got < kHeader; ++f) {
    uint32_t n = std::min(p.frags[f].len, kHeader - got);
    std::memcpy(hdr + got, p.frags[f].data, n);
    got += n;
  }
  if (got < kHeader || hdr[12] != (kEthertype >> 8) || hdr[13] != (kEthertype & 0xff)) {
    ++st.foreign;
    return UINT64_MAX;
  }
  uint64_t seq = 0;
  for (int i = 0; i < 8; ++i)
    seq = seq << 8 | hdr[14 + i];
  if (verify) {
    uint32_t off = 0;
    bool ok = true;
    for (uint16_t f = 0; f < p.nfrags && ok; ++f) {
      const uint8_t* d = p.frags[f].data;
      for (uint32_t i = 0; i < p.frags[f].len; ++i, ++off) {
        if (off >= kHeader && d[i] != static_cast<uint8_t>(seq + off)) {
          ok = false;
          break;
        }
      }
    }
    if (!ok) ++st.bad_payload;
  }
  return seq;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
  const xpv::MacAddr peer{0x02, 0, 0, 0, 0, 0x01};
  std::vector<QueueStats> st(o.queues);
  std::vector<uint8_t> scratch(xpv::kMaxPacketLen);
  std::vector<std::vector<uint8_t>> bufs(kBurst, std::vector<uint8_t>(xpv::kMaxPacketLen));
  std::vector<uint8_t> refl_data(size_t{kBurst} * xpv::kMaxPacketLen);
  const bool gen = o.role == "gen";
  const double t0 = now_s();
  double last_report = t0;
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
    if (!o.quiet)
      std::printf("xpv-pktgen: link %s %s\n", e.link == xpv::LinkState::kUp ? "up" : "down",
                  e.reason.c_str());
  });

  auto done = [&]() {
    if (g_stop) return true;
    if (o.seconds > 0 && now_s() - t0 >= o.seconds) return true;
    if (gen && o.count) {
      for (auto& s : st) {
        const uint64_t qi = static_cast<uint64_t>(&s - st.data());
        if (s.received + s.lost < o.count / o.queues + (qi < o.count % o.queues ? 1 : 0))
          return false;
      }
      return true;
    }
    return false;
  };

  while (!done()) {
    bool busy = false;
    for (uint32_t qi = 0; qi < o.queues; ++qi) {
      xpv::Queue& q = d.queue(qi);
      QueueStats& s = st[qi];
      const uint64_t quota =
          o.count ? o.count / o.queues + (qi < o.count % o.queues ? 1 : 0) : UINT64_MAX;
      // Transmit a burst within the window.
      if (gen && s.sent < quota && s.in_flight() < o.window) {
        uint32_t n = static_cast<uint32_t>(
            std::min<uint64_t>({kBurst, quota - s.sent, o.window - s.in_flight()}));
        xpv::TxSegment segs[kBurst];
        xpv::TxPacket pkts[kBurst];
        uint32_t built = 0;
        for (uint32_t i = 0; i < n; ++i) {
          const uint64_t seq = (uint64_t{qi} << 48) | (s.sent + i);
          const uint32_t len = size_for(o, s.sent + i);
          uint8_t* p = nullptr;
          if (o.zero_copy && len <= xpv::kPageSize) p = q.tx_buffer();
          if (!p) p = bufs[i].data();
          fill(p, len, seq, peer, info.mac);
          segs[i] = {p, len};
          pkts[i] = {&segs[i], 1};
          ++built;
        }
        uint16_t sent = q.transmit(std::span<const xpv::TxPacket>(pkts, built));
        for (uint32_t i = sent; i < built; ++i) {
          if (o.zero_copy && segs[i].data != bufs[i].data())
            q.tx_buffer_free(const_cast<uint8_t*>(static_cast<const uint8_t*>(segs[i].data)));
        }
        s.sent += sent;
        busy |= sent > 0;
      }
      // Receive, verify, and (reflect) send back.
      uint32_t nrefl = 0;
      xpv::TxSegment rsegs[kBurst];
      xpv::TxPacket rpkts[kBurst];
      uint16_t got = q.receive(kBurst, [&](const xpv::RxPacket& p) {
        uint64_t seq = check(p, o.verify, s);
        if (seq != UINT64_MAX && gen) {
          if ((seq >> 48) != qi || (seq & 0xFFFFFFFFFFFFull) != s.next_expect) ++s.out_of_order;
          s.next_expect = (seq & 0xFFFFFFFFFFFFull) + 1;
        }
        ++s.received;
        s.bytes_rx += p.len;
        if (o.role == "reflect") {
          uint8_t* out = refl_data.data() + size_t{nrefl} * xpv::kMaxPacketLen;
          uint32_t off = 0;
          for (uint16_t f = 0; f < p.nfrags; ++f) {
            std::memcpy(out + off, p.frags[f].data, p.frags[f].len);
            off += p.frags[f].len;
          }
          uint8_t mac[6];
          std::memcpy(mac, out, 6);
          std::memcpy(out, out + 6, 6);
          std::memcpy(out + 6, mac, 6);
          rsegs[nrefl] = {out, p.len};
          rpkts[nrefl] = {&rsegs[nrefl], 1};
          ++nrefl;
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
      if (o.mode == xpv::QueueMode::kEvent) {
        // Sleep until an event channel, or the control path, has something.
        std::vector<pollfd> pfds;
        bool sleep = true;
        for (uint32_t qi = 0; qi < o.queues && sleep; ++qi)
          sleep = d.queue(qi).arm();
        if (sleep) {
          for (uint32_t qi = 0; qi < o.queues; ++qi)
            pfds.push_back({d.queue(qi).event_fd(), POLLIN, 0});
          pfds.push_back({d.control_fd(), POLLIN, 0});
          ::poll(pfds.data(), pfds.size(), 100);
        }
      }
      d.poll_control();
    }
    const double t = now_s();
    if (t - last_report >= 1.0) {
      last_report = t;
      d.poll_control();
      if (!o.quiet) {
        uint64_t tx = 0, rx = 0;
        for (auto& s : st) {
          tx += s.sent;
          rx += s.received;
        }
        std::printf("xpv-pktgen: %.0fs sent %" PRIu64 " received %" PRIu64 "\n", t - t0, tx, rx);
        std::fflush(stdout);
      }
    }
  }
  const double elapsed = now_s() - t0;
  // Totals.
  uint64_t sent = 0, received = 0, bytes = 0, bad = 0, ooo = 0, foreign = 0, lost_total = 0;
  xpv::QueueCounters total{};
  for (uint32_t qi = 0; qi < o.queues; ++qi) {
    sent += st[qi].sent;
    received += st[qi].received;
    bytes += st[qi].bytes_rx;
    bad += st[qi].bad_payload;
    ooo += st[qi].out_of_order;
    foreign += st[qi].foreign;
    lost_total += st[qi].lost;
    xpv::QueueCounters c = d.queue(qi).counters();
    for (const auto& info2 : xpv::kQueueCounterInfo) {
      *reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&total) + info2.offset) +=
          xpv::counter_value(c, info2);
    }
  }
  const bool lost = gen && o.count && received + lost_total < o.count;
  const double pps = elapsed > 0 ? received / elapsed : 0;
  std::printf("xpv-pktgen: %s: sent %" PRIu64 ", received %" PRIu64
              " (%.0f pps, %.1f Mbit/s) in "
              "%.2f s; bad payload %" PRIu64 ", out of order %" PRIu64 ", foreign %" PRIu64
              ", lost at link down %" PRIu64 "\n",
              o.role.c_str(), sent, received, pps, elapsed > 0 ? bytes * 8 / elapsed / 1e6 : 0.0,
              elapsed, bad, ooo, foreign, lost_total);
  std::printf("xpv-pktgen: notifies %" PRIu64 " (%.4f per packet), events %" PRIu64
              ", spurious %" PRIu64 ", delayed EOIs %" PRIu64 ", ring full %" PRIu64
              ", backend errors %" PRIu64 ", tx reaped in xmit %" PRIu64 ", link downs %" PRIu64
              "\n",
              total.notifies, sent ? double(total.notifies) / sent : 0.0, total.events,
              total.spurious_events, total.delayed_eois, total.ring_full, total.backend_errors,
              total.tx_reaped_in_xmit, link_downs);
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "xpv-pktgen: cannot write %s: %s\n", o.json.c_str(),
                   std::strerror(errno));
    } else {
      std::fprintf(f,
                   "{\"role\":\"%s\",\"sent\":%" PRIu64 ",\"received\":%" PRIu64
                   ",\"seconds\":%.3f,"
                   "\"pps\":%.1f,\"bad_payload\":%" PRIu64 ",\"out_of_order\":%" PRIu64
                   ",\"foreign\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"link_downs\":%" PRIu64
                   ",\"reconnects\":%" PRIu64,
                   o.role.c_str(), sent, received, elapsed, pps, bad, ooo, foreign, lost_total,
                   link_downs, d.reconnects());
      for (const auto& ci : xpv::kQueueCounterInfo) {
        std::fprintf(f, ",\"%s\":%" PRIu64, ci.name, xpv::counter_value(total, ci));
      }
      std::fprintf(f, "}\n");
      std::fclose(f);
    }
  }
  d.close();
  const auto acc = d.teardown_account();
  if (!o.quiet) {
    std::printf("xpv-pktgen: teardown: %" PRIu64 " pages, %" PRIu64 " returned, %" PRIu64
                " still mapped by the backend\n",
                acc.pages, acc.returned, acc.still_mapped);
  }
  if (bad || (gen && ooo) || lost) return 3;
  return 0;
}
