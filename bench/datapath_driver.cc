// SPDX-License-Identifier: MIT
// xpv-bench-datapath: drives one queue's TX or RX data path against the
// in-process ideal backend (ideal_backend.h), for callgrind:
//
//   valgrind --tool=callgrind --collect-atstart=no
//     --toggle-collect='xpv::Queue::transmit*'
//     xpv-bench-datapath --dir tx --burst 32 --packets 65536   (one command)
//
// Only the frontend's public entry points are collected (toggle-collect on
// xpv::Queue::transmit / xpv::Queue::receive_raw, everything they call
// included); the ideal backend runs outside them. After a warm-up of a few
// ring cycles (PLT resolution, first touches of every slot) the driver zeroes
// callgrind's counters, so the dump holds exactly `packets` packets' cost.
// Without valgrind the client request is a no-op and the driver just runs.
#include <valgrind/callgrind.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ideal_backend.h"

using namespace xpv;
using namespace xpv::bench;

namespace {

void usage() {
  std::fprintf(
      stderr,
      "usage: xpv-bench-datapath --dir tx|rx|rx-empty --burst B [--packets N] [--size BYTES]\n"
      "  --dir tx|rx    the transmit path (Queue::transmit) or the receive path\n"
      "                 (Queue::receive)\n"
      "  --dir rx-empty receive calls that find nothing (a polling application's\n"
      "                 idle loop): --packets counts the calls\n"
      "  --burst B      packets per call, 1..256 (default 32)\n"
      "  --packets N    packets in the measured part (default 65536)\n"
      "  --size BYTES   frame size, 60..4096 (default 64)\n");
  std::exit(2);
}

uint64_t num(const char* s, const char* opt) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (!*s || *end) {
    std::fprintf(stderr, "xpv-bench-datapath: %s '%s': expected a number\n", opt, s);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  uint32_t burst = 32, size = 64;
  uint64_t packets = 65536;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--dir") {
      dir = v;
    } else if (a == "--burst") {
      burst = static_cast<uint32_t>(num(v, "--burst"));
    } else if (a == "--packets") {
      packets = num(v, "--packets");
    } else if (a == "--size") {
      size = static_cast<uint32_t>(num(v, "--size"));
    } else {
      usage();
    }
  }
  if ((dir != "tx" && dir != "rx" && dir != "rx-empty") || burst < 1 || burst > 256 || size < 60 ||
      size > 4096 || packets == 0) {
    usage();
  }

  Bench b;
  Queue& q = b.queue();
  IdealBackend& be = b.backend();
  const uint64_t warmup = 4 * QueueImpl::kRingSize + 4 * burst;
  uint64_t done = 0, calls = 0;
  CountingSink sink;
  const TxBurst frames(burst, size);

  // rx-empty: receive calls on a ring with nothing in it, each counted as a
  // "packet" (what one idle poll costs).
  auto run_empty = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      if (q.receive(static_cast<uint16_t>(burst), sink) != 0) {
        std::fprintf(stderr, "xpv-bench-datapath: an empty ring gave a packet\n");
        std::exit(1);
      }
      ++calls;
    }
    return n;
  };
  auto run = [&](uint64_t n, bool measured) {
    if (dir == "rx-empty" && measured) return run_empty(n);
    uint64_t moved = 0;
    while (moved < n) {
      const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(burst, n - moved));
      uint32_t got = 0;
      if (dir == "tx") {
        got = q.transmit(frames.span().first(want));
        be.answer_tx();
      } else {
        be.produce_rx(want, static_cast<uint16_t>(size));
        got = q.receive(static_cast<uint16_t>(want), sink);
      }
      if (got != want) {
        std::fprintf(stderr, "xpv-bench-datapath: %s burst moved %u of %u packets\n", dir.c_str(),
                     got, want);
        std::exit(1);
      }
      moved += got;
      if (measured) ++calls;
    }
    return moved;
  };

  run(warmup, false);  // rx-empty: with packets, as for rx; the ring is then empty
  CALLGRIND_ZERO_STATS;
  done = run(packets, true);

  const QueueCounters c = b.impl().counters();
  std::printf("dir %s burst %u size %u packets %" PRIu64 " calls %" PRIu64 " notifies %" PRIu64
              " ring_full %" PRIu64 " backend_errors %" PRIu64 "\n",
              dir.c_str(), burst, size, done, calls, c.notifies, c.ring_full, c.backend_errors);
  return c.backend_errors ? 1 : 0;
}
