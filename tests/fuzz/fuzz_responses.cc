// SPDX-License-Identifier: MIT
// libFuzzer target: a hostile backend writes arbitrary responses, producer
// indices and event fields into a live queue's shared rings, interleaved with
// traffic, while the frontend transmits, receives and polls.
//
// The frontend must never crash, read or write out of bounds (ASan), hang,
// or lose track of a buffer: after every input, tearing the queue down must
// account for every granted page, and every fragment handed to the receive
// callback must lie in memory we may read and add up to the packet length.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "netfront/queue.h"
#include "xpv/log.h"
#include "sim/client.h"
#include "sim/hypervisor.h"

using namespace xpv;

namespace {

struct World {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Platform> domu;
  std::unique_ptr<GrantSharer> sharer;
  UniqueFd wake;
};

World& world() {
  static World* w = [] {
    set_log_level(LogLevel::kError);
    auto* x = new World();
    sim::HypervisorConfig cfg;
    cfg.pages_per_domain = 4096;
    cfg.grants_per_domain = 2048;
    x->hv = std::move(*sim::Hypervisor::create(cfg));
    x->domu = std::move(*sim::local_platform(*x->hv, false));
    x->sharer = std::move(*x->domu->open_grant_sharer());
    x->wake = std::move(*make_eventfd());
    return x;
  }();
  return *w;
}

struct Input {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t u8() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return u16() | static_cast<uint32_t>(u16()) << 16; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  Input in{data, size};
  auto q = std::make_unique<QueueImpl>(0);
  if (q->init().failed()) std::abort();
  const bool split = in.u8() & 1;
  if (q->setup(*w.domu, *w.sharer, kDom0, split, /*sg=*/true, w.wake.get()).failed()) std::abort();
  q->set_mode(QueueMode::kPoll);
  q->start();
  netif::TxFrontRing* tx = q->tx_ring();
  netif::RxFrontRing* rx = q->rx_ring();
  ring::SharedRingHeader* txh = tx->header();
  ring::SharedRingHeader* rxh = rx->header();
  auto* txe = reinterpret_cast<netif::TxFrontRing::Entry*>(txh + 1);
  auto* rxe = reinterpret_cast<netif::RxFrontRing::Entry*>(rxh + 1);
  static uint8_t payload[70000];
  uint64_t checksum = 0;

  for (int steps = 0; steps < 512 && !in.empty(); ++steps) {
    switch (in.u8() % 8) {
      case 0: {  // transmit a few packets of fuzzed sizes
        TxSegment segs[8];
        TxPacket pkts[8];
        const uint32_t k = in.u8() % 8 + 1;
        for (uint32_t i = 0; i < k; ++i) {
          segs[i] = {payload, in.u16() % 12000u};
          pkts[i] = {&segs[i], 1};
        }
        (void)q->transmit(std::span<const TxPacket>(pkts, k));
        break;
      }
      case 1: {  // the backend writes a TX response and publishes it
        const uint32_t prod = txh->rsp_prod;
        netif::TxResponse r{in.u16(), static_cast<int16_t>(in.u16())};
        std::memcpy(&txe[prod & 255].rsp, &r, sizeof r);
        txh->rsp_prod = prod + (in.u8() % 4);
        break;
      }
      case 2: {  // the backend writes an RX response and publishes it
        const uint32_t prod = rxh->rsp_prod;
        netif::RxResponse r{in.u16(), in.u16(), in.u16(), static_cast<int16_t>(in.u16())};
        std::memcpy(&rxe[prod & 255].rsp, &r, sizeof r);
        rxh->rsp_prod = prod + (in.u8() % 4);
        break;
      }
      case 3: {  // a plausible RX response (right id, sane length) to reach deeper
        const uint32_t prod = rxh->rsp_prod;
        netif::RxResponse r{static_cast<uint16_t>(prod & 255), static_cast<uint16_t>(in.u8()),
                            static_cast<uint16_t>(in.u8() & 0x0F),
                            static_cast<int16_t>(in.u16() % 4200)};
        std::memcpy(&rxe[prod & 255].rsp, &r, sizeof r);
        rxh->rsp_prod = prod + 1;
        break;
      }
      case 4: {  // receive, touching every byte handed to us
        (void)q->receive(in.u8() % 64, +[](void* ctx, const RxPacket& p) -> bool {
          auto* sum = static_cast<uint64_t*>(ctx);
          uint32_t total = 0;
          for (uint16_t f = 0; f < p.nfrags; ++f) {
            for (uint32_t i = 0; i < p.frags[f].len; ++i) *sum += p.frags[f].data[i];
            total += p.frags[f].len;
          }
          if (total != p.len) std::abort();
          return true;
        }, &checksum);
        break;
      }
      case 5:
        (void)q->poll();
        break;
      case 6: {  // raw scribbles over the shared indices
        ring::SharedRingHeader* h = in.u8() & 1 ? txh : rxh;
        const uint32_t v = in.u32();
        switch (in.u8() % 4) {
          case 0: h->rsp_prod = v; break;
          case 1: h->rsp_event = v; break;
          case 2: h->req_prod = v; break;
          default: h->req_event = v; break;
        }
        break;
      }
      case 7: {  // a TX response for an id that is probably in flight
        const uint32_t prod = txh->rsp_prod;
        netif::TxResponse r{static_cast<uint16_t>(in.u8()), static_cast<int16_t>(in.u8() % 4) };
        r.status = static_cast<int16_t>(r.status - 2);
        std::memcpy(&txe[prod & 255].rsp, &r, sizeof r);
        txh->rsp_prod = prod + 1;
        break;
      }
    }
    if (q->broken()) break;  // disconnected: the device would tear down now
  }
  q->stop();
  QueueTeardown t = q->teardown();
  // Nobody mapped anything: every page must come back.
  if (t.pages.pages != 2 + QueueImpl::kTxPoolSlots + QueueImpl::kRxPoolSlots ||
      t.pages.returned != t.pages.pages || t.pages.still_mapped != 0) {
    std::fprintf(stderr, "fuzz: pages %u returned %u still mapped %u\n", t.pages.pages,
                 t.pages.returned, t.pages.still_mapped);
    std::abort();
  }
  return 0;
}
