// SPDX-License-Identifier: MIT
// xpv-bench-micro: Google Benchmark microbenchmarks of the frontend's data
// path against the in-process ideal backend (ideal_backend.h).
//
// Each iteration is one burst: the frontend call is timed with the TSC
// (serialised rdtsc/rdtscp), the ideal backend then answers outside the timed
// region. Manual time = the frontend calls only. Counters per benchmark:
//   tsc_per_pkt       TSC cycles per packet, the timer's own cost removed
//   tsc_per_pkt_raw   the same with the timer's cost left in
//   ns_per_pkt        tsc_per_pkt in nanoseconds (TSC rate calibrated at start)
//   timer_tsc         the timer's own cost per call (median of empty regions)
//   tsc_ghz           the calibrated TSC rate
//   discarded_calls   calls that took over 50 us: the thread lost its core
//                     (a shared VM); they are left out of the per-packet figures
// The TSC counts at a constant reference rate (constant_tsc); with no
// hardware counters available (VMs) it is the cycle count we can have.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "ideal_backend.h"

using namespace xpv;
using namespace xpv::bench;

namespace {

inline uint64_t tsc_begin() {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
inline uint64_t tsc_end() {
  unsigned aux;
  const uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

double tsc_per_ns() {
  static const double rate = [] {
    using clk = std::chrono::steady_clock;
    const auto c0 = clk::now();
    const uint64_t t0 = tsc_begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t t1 = tsc_end();
    const auto c1 = clk::now();
    return static_cast<double>(t1 - t0) /
           static_cast<double>(
               std::chrono::duration_cast<std::chrono::nanoseconds>(c1 - c0).count());
  }();
  return rate;
}

// The timer's own cost: the median of many empty timed regions.
double timer_overhead() {
  static const double cost = [] {
    std::vector<uint64_t> v(20001);
    for (auto& x : v) {
      const uint64_t t0 = tsc_begin();
      const uint64_t t1 = tsc_end();
      x = t1 - t0;
    }
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return static_cast<double>(v[v.size() / 2]);
  }();
  return cost;
}

// A call this long was preempted: no burst of the data path takes 50 us.
uint64_t preempted_ticks() {
  return static_cast<uint64_t>(50'000 * tsc_per_ns());
}

void report(benchmark::State& st, uint64_t ticks, uint64_t pkts, uint64_t calls,
            uint64_t discarded) {
  if (!pkts) {
    st.SkipWithError("no packet moved");
    return;
  }
  const double over = timer_overhead();
  const double net = std::max(0.0, static_cast<double>(ticks) - over * static_cast<double>(calls));
  st.counters["tsc_per_pkt"] = net / static_cast<double>(pkts);
  st.counters["tsc_per_pkt_raw"] = static_cast<double>(ticks) / static_cast<double>(pkts);
  st.counters["ns_per_pkt"] = net / tsc_per_ns() / static_cast<double>(pkts);
  st.counters["timer_tsc"] = over;
  st.counters["tsc_ghz"] = tsc_per_ns();
  st.counters["discarded_calls"] = static_cast<double>(discarded);
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
}

// The timed calls of one benchmark: a call preempted by the machine (far
// longer than any burst takes) is discarded and counted.
struct Samples {
  uint64_t ticks = 0, pkts = 0, calls = 0, discarded = 0;
  const uint64_t too_long = preempted_ticks();

  void add(benchmark::State& st, uint64_t t0, uint64_t t1, uint16_t n) {
    if (t1 - t0 > too_long) {
      ++discarded;
    } else {
      ticks += t1 - t0;
      pkts += n;
      ++calls;
    }
    st.SetIterationTime(static_cast<double>(t1 - t0) / tsc_per_ns() * 1e-9);
  }
  void report(benchmark::State& st) const { ::report(st, ticks, pkts, calls, discarded); }
};

void BM_Tx(benchmark::State& st) {
  const uint32_t burst = static_cast<uint32_t>(st.range(0));
  const uint32_t size = static_cast<uint32_t>(st.range(1));
  Bench b;
  Queue& q = b.queue();
  IdealBackend& be = b.backend();
  const TxBurst frames(burst, size);
  for (uint32_t i = 0; i < 4 * QueueImpl::kRingSize / burst + 4; ++i) {  // warm-up
    (void)q.transmit(frames.span());
    be.answer_tx();
  }
  Samples samples;
  for (auto _ : st) {
    const uint64_t t0 = tsc_begin();
    const uint16_t n = q.transmit(frames.span());
    const uint64_t t1 = tsc_end();
    be.answer_tx();
    samples.add(st, t0, t1, n);
  }
  samples.report(st);
}

void BM_Rx(benchmark::State& st) {
  const uint32_t burst = static_cast<uint32_t>(st.range(0));
  const uint32_t size = static_cast<uint32_t>(st.range(1));
  Bench b;
  Queue& q = b.queue();
  IdealBackend& be = b.backend();
  CountingSink sink;
  for (uint32_t i = 0; i < 4 * QueueImpl::kRingSize / burst + 4; ++i) {  // warm-up
    be.produce_rx(burst, static_cast<uint16_t>(size));
    (void)q.receive(static_cast<uint16_t>(burst), sink);
  }
  Samples samples;
  for (auto _ : st) {
    be.produce_rx(burst, static_cast<uint16_t>(size));
    const uint64_t t0 = tsc_begin();
    const uint16_t n = q.receive(static_cast<uint16_t>(burst), sink);
    const uint64_t t1 = tsc_end();
    samples.add(st, t0, t1, n);
  }
  benchmark::DoNotOptimize(sink.bytes);
  samples.report(st);
}

}  // namespace

BENCHMARK(BM_Tx)
    ->ArgNames({"burst", "size"})
    ->Args({1, 64})
    ->Args({8, 64})
    ->Args({32, 64})
    ->Args({32, 1500})
    ->UseManualTime();
BENCHMARK(BM_Rx)
    ->ArgNames({"burst", "size"})
    ->Args({1, 64})
    ->Args({8, 64})
    ->Args({32, 64})
    ->Args({32, 1500})
    ->UseManualTime();

BENCHMARK_MAIN();
