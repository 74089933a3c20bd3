// SPDX-License-Identifier: MIT
// libFuzzer target: a hostile backend writes arbitrary responses, producer
// indices and event fields into a live queue's shared rings, and notifies its
// event channel, interleaved with traffic, while the frontend transmits
// (copied single- and multi-segment packets, zero-copy pages lent by
// tx_buffer(), kept RX pages by their grants), receives (keeping pages, with
// zero-copy receive), polls, reaps and sleeps, in poll or event mode.
//
// The frontend must never crash, read or write out of bounds (ASan), hang,
// or lose track of a buffer:
//  - after every step (no response is ever half-consumed between calls), the
//    leak oracle: every TX pool slot is free, in flight or lent; every ring
//    slot not yet answered is a slot in flight or an extra-info slot whose
//    NULL answer is due; every RX pool slot is free,
//    posted, held or kept by the application (QueueImpl::accounting());
//  - every fragment handed to the receive callback lies in memory we may
//    read and the fragments add up to the packet length;
//  - at the end, tearing the queue down accounts for every granted page (an
//    RX pool with pages still kept is retired until they are released).
//
// Offloads and multicast filter changes: packets with partial checksums and
// TSO (a GSO extra-info slot whose NETIF_RSP_NULL answer is positional),
// dummy requests with MCAST_ADD/DEL extras, RX responses with checksum
// flags and extra-info slots (GSO extras when negotiated, HASH extras with a
// control ring, anything else).
//
// Input: one byte of set-up (bit 0 split event channels, bit 1 event mode,
// bit 2 a backend without feature-sg, bits 3-4 the backend's
// feature-gso-tcpv4/-v6, bit 5 we took GSO packets (rx_gso), bit 6 a control
// ring is connected (HASH extras may come), bit 7 zero-copy receive), then steps of
// one opcode byte and its operands; missing bytes read as 0.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <dirent.h>
#include <unistd.h>

#include "netfront/queue.h"
#include "sim/client.h"
#include "sim/hypervisor.h"
#include "xpv/log.h"

using namespace xpv;

namespace {

struct World {
  std::unique_ptr<sim::Hypervisor> hv;
  std::unique_ptr<Platform> domu;
  std::unique_ptr<Platform> dom0;
  std::unique_ptr<GrantSharer> sharer;
  std::unique_ptr<EventChannel> backend_evt;  // the backend's end of the queue's channels
  UniqueFd wake;
};

World& world() {
  static World* w = [] {
    set_log_level(LogLevel::kError);
    set_log_sink([](LogLevel, std::string_view) {});  // violations are expected
    auto* x = new World();
    sim::HypervisorConfig cfg;
    cfg.pages_per_domain = 4096;
    cfg.grants_per_domain = 2048;
    x->hv = std::move(*sim::Hypervisor::create(cfg));
    x->domu = std::move(*sim::local_platform(*x->hv, false));
    x->dom0 = std::move(*sim::local_platform(*x->hv, true));
    x->sharer = std::move(*x->domu->open_grant_sharer());
    x->backend_evt = std::move(*x->dom0->open_event_channel());
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

[[noreturn]] void leak(const char* what, const QueueImpl::Accounting& a, int step) {
  std::fprintf(stderr,
               "fuzz: leak oracle after step %d: %s\n"
               "  tx: pool %u = free %u + in flight %u + lent %u; extras unanswered %u (counted "
               "%u), ring slots unanswered %u\n"
               "  rx: pool %u = free %u + posted %u + held %u\n",
               step, what, a.tx_pool_size, a.tx_pool_free, a.tx_slots_in_flight, a.tx_slots_lent,
               a.tx_extras_unanswered, a.tx_extras_counted, a.tx_requests_unanswered,
               a.rx_pool_size, a.rx_pool_free, a.rx_buffers_posted, a.rx_buffers_held);
  std::abort();
}

// The leak oracle. A broken queue stops consuming at the violating response
// (it owns no buffer, or names one it may not), so only the pool sums hold
// then; the device tears it down next.
void check_accounting(const QueueImpl& q, int step) {
  const QueueImpl::Accounting a = q.accounting();
  if (a.tx_pool_free + a.tx_slots_in_flight + a.tx_slots_lent != a.tx_pool_size)
    leak("a TX pool slot is neither free, nor in flight, nor lent", a, step);
  if (a.rx_pool_free + a.rx_buffers_posted + a.rx_buffers_held + a.rx_buffers_kept !=
      a.rx_pool_size)
    leak("an RX pool slot is neither free, nor posted, nor held, nor kept", a, step);
  if (!q.broken() && a.tx_slots_in_flight + a.tx_extras_unanswered != a.tx_requests_unanswered)
    leak(
        "TX slots in flight and extra slots unanswered differ from the ring slots not yet answered",
        a, step);
  if (!q.broken() && a.tx_extras_counted != a.tx_extras_unanswered)
    leak("the TX handler's count of extra slots unanswered differs from the slot table's", a, step);
  if (!q.broken() && a.tx_rx_pages_counted != a.tx_slots_by_rx_grant)
    leak("the TX handler's count of requests naming kept RX pages differs from the slot table's", a,
         step);
}

uint64_t g_checksum = 0;

// Pages of packets kept (zero-copy receive), to be released later, in the
// order the input says; each one once.
struct KeptPage {
  RxLoans* loans;
  const uint8_t* data;
};
std::vector<KeptPage> g_kept;

RxVerdict touch_packet(void*, const RxPacket& p) {
  uint32_t total = 0;
  for (uint16_t f = 0; f < p.nfrags; ++f) {
    for (uint32_t i = 0; i < p.frags[f].len; ++i)
      g_checksum += p.frags[f].data[i];
    total += p.frags[f].len;
  }
  if (total != p.len) {
    std::fprintf(stderr, "fuzz: fragments add up to %u bytes, the packet says %u\n", total, p.len);
    std::abort();
  }
  // Zero-copy set up: keep about half the packets offered (by their bytes).
  if (p.loans && (g_checksum & 1)) {
    for (uint16_t f = 0; f < p.nfrags; ++f)
      g_kept.push_back({p.loans, p.frags[f].data});
    return RxVerdict::kKept;
  }
  return RxVerdict::kConsumed;
}

void release_kept(size_t n) {
  for (; n && !g_kept.empty(); --n) {
    rx_loan_release(g_kept.back().loans, g_kept.back().data);
    g_kept.pop_back();
  }
}

// File descriptors of the kinds the library and the simulator open (eventfd,
// epoll, timerfd, memfd): queues set up and torn down must leave as many as
// they found (an fd lost per connection is a leak that a long-running
// application or backend serving reconnects dies of). Pipes and files are
// left out: the sanitizers' symbolizer opens them when libFuzzer names a new
// function. With print, each one counted and what it is.
int open_fds(bool print = false) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char link[64], what[256] = {};
    std::snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    if (::readlink(link, what, sizeof what - 1) <= 0) continue;
    if (std::strncmp(what, "anon_inode:", 11) != 0 && std::strncmp(what, "/memfd:", 7) != 0)
      continue;
    ++n;
    if (print) std::fprintf(stderr, "  fd %s: %s\n", e->d_name, what);
  }
  ::closedir(d);
  return n;
}

// The world outside the queue failed (not a finding about the frontend, but
// it ends the run): say what, for the report.
[[noreturn]] void harness_failed(const char* what, const std::string& why) {
  std::fprintf(stderr, "fuzz: harness: %s failed: %s\n", what, why.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  static const int fds_at_start = [&] {
    sim::forget_doorbells(*w.domu);
    sim::forget_doorbells(*w.dom0);
    return open_fds();
  }();
  Input in{data, size};
  auto q = std::make_unique<QueueImpl>(0);
  if (Status s = q->init(); s.failed()) harness_failed("queue init", s.message());
  const uint8_t setup = in.u8();
  const bool split = setup & 1;
  const bool sg = !(setup & 4);
  const auto tx_gso = static_cast<uint8_t>((setup >> 3 & 3) << 1);  // bits 1, 2: TCPV4, TCPV6
  const auto rx_gso = static_cast<uint8_t>(setup & 0x20 ? 6 : 0);
  const bool rx_hash = setup & 0x40;
  const bool zero_copy = setup & 0x80;
  g_kept.clear();
  if (Status s =
          q->setup(*w.domu, *w.sharer, kDom0,
                   QueueFeatures{split, sg, tx_gso, rx_gso, rx_hash, zero_copy}, w.wake.get());
      s.failed())
    harness_failed("queue setup", s.message());
  // The backend's ends of the channel(s), so that it can notify.
  const QueueKeys keys = q->keys();
  const domid_t self = w.domu->self_domid();
  auto tx_port = w.backend_evt->bind_interdomain(self, keys.tx_port);
  if (!tx_port) std::abort();
  evtchn_port_t rx_port = *tx_port;
  if (split) {
    auto p = w.backend_evt->bind_interdomain(self, keys.rx_port);
    if (!p) std::abort();
    rx_port = *p;
  }
  q->set_mode(setup & 2 ? QueueMode::kEvent : QueueMode::kPoll);
  q->start();
  Queue& api = q->api();
  netif::TxFrontRing* tx = q->tx_ring();
  netif::RxFrontRing* rx = q->rx_ring();
  ring::SharedRingHeader* txh = tx->header();
  ring::SharedRingHeader* rxh = rx->header();
  auto* txe = reinterpret_cast<netif::TxFrontRing::Entry*>(txh + 1);
  auto* rxe = reinterpret_cast<netif::RxFrontRing::Entry*>(rxh + 1);
  static uint8_t payload[70000];
  uint8_t* lent[8] = {};   // pages from tx_buffer(), still ours: packet data may live there
  uint8_t* stale[8] = {};  // pages given back or sent: never data again, only freed again
  check_accounting(*q, -1);

  int step = 0;
  for (; step < 512 && !in.empty(); ++step) {
    switch (in.u8() % 18) {
      case 0: {  // transmit a few single-segment packets of fuzzed sizes
        TxSegment segs[8];
        TxPacket pkts[8];
        const uint32_t k = in.u8() % 8 + 1;
        for (uint32_t i = 0; i < k; ++i) {
          segs[i] = {payload, in.u16() % 12000u};
          pkts[i] = {&segs[i], 1};
        }
        (void)api.transmit(std::span<const TxPacket>(pkts, k));
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
      case 4: {  // receive, touching every byte handed to us; kept pages released or sent
        const uint8_t o = in.u8();
        (void)q->receive(o % 64, touch_packet, nullptr);
        if ((o & 0x40) && !g_kept.empty()) {
          // The last kept page sent on by its grant (a frame of at most what it holds).
          const KeptPage& k = g_kept.back();
          TxSegment seg{k.data, 14u + in.u8(), k.loans};
          TxPacket pk{&seg, 1};
          (void)api.transmit(std::span<const TxPacket>(&pk, 1));
        }
        release_kept(o & 0x80 ? in.u8() % 8 : 0);
        break;
      }
      case 5:
        (void)api.poll();
        break;
      case 6: {  // raw scribbles over the shared indices
        ring::SharedRingHeader* h = in.u8() & 1 ? txh : rxh;
        const uint32_t v = in.u32();
        switch (in.u8() % 4) {
          case 0:
            h->rsp_prod = v;
            break;
          case 1:
            h->rsp_event = v;
            break;
          case 2:
            h->req_prod = v;
            break;
          default:
            h->req_event = v;
            break;
        }
        break;
      }
      case 7: {  // a TX response for an id that is probably in flight
        const uint32_t prod = txh->rsp_prod;
        netif::TxResponse r{static_cast<uint16_t>(in.u8()), static_cast<int16_t>(in.u8() % 4)};
        r.status = static_cast<int16_t>(r.status - 2);  // DROPPED, ERROR, OKAY or NULL
        std::memcpy(&txe[prod & 255].rsp, &r, sizeof r);
        txh->rsp_prod = prod + 1;
        break;
      }
      case 8: {  // the backend answers the next published TX request as netback would
        const uint32_t prod = txh->rsp_prod;
        if (prod == txh->req_prod) break;
        netif::TxResponse r{txe[prod & 255].req.id, static_cast<int16_t>(in.u8() % 2 ? 0 : -1)};
        std::memcpy(&txe[prod & 255].rsp, &r, sizeof r);
        txh->rsp_prod = prod + 1;
        break;
      }
      case 9: {  // transmit one packet of several segments (copied, or zero-copy)
        TxSegment segs[20];
        const uint32_t k = in.u8() % 20 + 1;
        const uint8_t lent_mask = in.u8();
        for (uint32_t i = 0; i < k; ++i) {
          uint8_t* page = lent[i % 8];
          const uint16_t off = in.u16() % 4200;
          const uint16_t len = in.u16() % 4200;
          if ((lent_mask >> (i % 8) & 1) && page) {
            // In the lent page if it fits (zero copy); past its end otherwise,
            // which the frontend must copy or refuse, never read out of
            // bounds (the payload keeps those reads valid).
            segs[i] = {off + len <= kPageSize ? page + off : payload + off, len};
          } else {
            segs[i] = {payload + off, len};
          }
        }
        const TxPacket p{segs, static_cast<uint16_t>(k)};
        if (api.transmit(std::span<const TxPacket>(&p, 1)) == 1) {
          // Sent zero-copy or copied: either way a lent page named in it may
          // now be the ring's; forget those (freeing one would be refused).
          for (uint32_t i = 0; i < k; ++i) {
            const uintptr_t d = reinterpret_cast<uintptr_t>(segs[i].data);
            for (int j = 0; j < 8; ++j)
              if (lent[j] && d - reinterpret_cast<uintptr_t>(lent[j]) < kPageSize) {
                stale[j] = lent[j];
                lent[j] = nullptr;
              }
          }
        }
        break;
      }
      case 10: {  // borrow a TX page, give one back, or give back one not ours (refused)
        const uint8_t op = in.u8();
        uint8_t*& l = lent[op % 8];
        if (op & 0x80) {
          uint8_t* page = op & 0x40 ? stale[op % 8] : l;  // stale: freed or sent already
          api.tx_buffer_free(page ? page : payload);
          if (!(op & 0x40) && l) {
            stale[op % 8] = l;
            l = nullptr;
          }
        } else if (!l) {
          l = api.tx_buffer();
          // A page handed out again is ours now, not a stale alias to free.
          for (uint8_t*& st : stale)
            if (l && st == l) st = nullptr;
        }
        break;
      }
      case 11: {  // the backend notifies (TX or RX port)
        (void)w.backend_evt->notify(in.u8() & 1 ? rx_port : *tx_port);
        break;
      }
      case 12: {  // sleep protocol: arm (both rings or RX only), or switch mode
        const uint8_t op = in.u8() % 4;
        if (op == 0) (void)api.arm();
        if (op == 1) (void)api.arm(Queue::ArmFor::kRx);
        if (op == 2) api.set_mode(QueueMode::kPoll);
        if (op == 3) api.set_mode(QueueMode::kEvent);
        break;
      }
      case 13:  // rte_eth_tx_done_cleanup
        (void)api.tx_done_cleanup(in.u8() % 8);
        break;
      case 14: {  // transmit with offloads: partial checksums, TSO (a GSO extra slot)
        TxSegment segs[4];
        TxPacket pkts[4];
        const uint32_t k = in.u8() % 4 + 1;
        for (uint32_t i = 0; i < k; ++i) {
          const uint8_t o = in.u8();
          segs[i] = {payload, in.u16() % 66000u};
          pkts[i] = {&segs[i], 1};
          pkts[i].csum_partial = o & 1;
          pkts[i].gso_type = static_cast<uint8_t>(o >> 1 & 3);  // none, v4, v6, or unknown
          pkts[i].gso_size = o & 0x8 ? in.u16() : 0;
        }
        (void)api.transmit(std::span<const TxPacket>(pkts, k));
        break;
      }
      case 15: {  // netback answers the next TX request, and its extra slot with NULL
        const uint32_t prod = txh->rsp_prod;
        if (prod == txh->req_prod) break;
        const netif::TxRequest req = txe[prod & 255].req;
        netif::TxResponse r{req.id, static_cast<int16_t>(in.u8() % 2 ? 0 : -1)};
        std::memcpy(&txe[prod & 255].rsp, &r, sizeof r);
        uint32_t next = prod + 1;
        if ((req.flags & netif::kTxExtraInfo) && next != txh->req_prod) {
          const netif::TxResponse null{0, netif::kRspNull};
          std::memcpy(&txe[next & 255].rsp, &null, sizeof null);
          ++next;
        }
        txh->rsp_prod = next;
        break;
      }
      case 17: {  // a multicast filter change: a dummy request and its MCAST extra
        MacAddr g{0x01, 0x00, 0x5e, 0, 0, in.u8()};
        (void)q->send_mcast(in.u8() & 1 ? netif::kExtraTypeMcastAdd : netif::kExtraTypeMcastDel, g);
        break;
      }
      case 16: {  // an RX response with checksum flags and an extra-info slot after it
        const uint32_t prod = rxh->rsp_prod;
        const uint8_t o = in.u8();
        const auto flags =
            static_cast<uint16_t>((o & 3) | (o & 4 ? netif::kRxMoreData : 0) | netif::kRxExtraInfo);
        netif::RxResponse r{static_cast<uint16_t>(prod & 255), static_cast<uint16_t>(in.u8()),
                            flags, static_cast<int16_t>(in.u16() % 4200)};
        std::memcpy(&rxe[prod & 255].rsp, &r, sizeof r);
        netif::ExtraInfo x{};
        x.type = o & 0x80 ? in.u8() : o & 0x20 ? netif::kExtraTypeHash : netif::kExtraTypeGso;
        x.flags = o & 0x40 ? netif::kExtraFlagMore : 0;
        if (x.type == netif::kExtraTypeHash) {
          // type (0..3 valid), algorithm (1 valid), the 32-bit value
          x.u.hash.type = static_cast<uint8_t>(in.u8() % 5);
          x.u.hash.algorithm = static_cast<uint8_t>(in.u8() % 3);
          const uint16_t lo = in.u16(), hi = in.u16();
          std::memcpy(x.u.hash.value, &lo, 2);
          std::memcpy(x.u.hash.value + 2, &hi, 2);
        } else {
          x.u.gso.size = in.u16();
          x.u.gso.type = static_cast<uint8_t>(in.u8() % 4);
        }
        std::memcpy(&rxe[(prod + 1) & 255].rsp, &x, sizeof x);
        rxh->rsp_prod = prod + 2;
        break;
      }
    }
    check_accounting(*q, step);
    if (q->broken()) break;  // disconnected: the device would tear down now
  }
  q->stop();
  // Half of what is still kept let go before the teardown, the rest after it.
  release_kept(g_kept.size() / 2);
  QueueTeardown t = q->teardown();
  release_kept(g_kept.size());
  (void)w.backend_evt->unbind(*tx_port);
  if (split) (void)w.backend_evt->unbind(rx_port);
  // Nobody mapped anything: every page must come back.
  // An RX pool whose pages were still kept is retired, not ended (q.reset() ends it).
  const uint32_t rx_pages =
      t.rx_pages_kept ? 0 : (zero_copy ? QueueImpl::kRxPoolSlotsMax : QueueImpl::kRxPoolSlots);
  if (t.pages.pages != 2 + QueueImpl::kTxPoolSlots + rx_pages ||
      t.pages.returned != t.pages.pages || t.pages.still_mapped != 0) {
    std::fprintf(stderr, "fuzz: pages %u returned %u still mapped %u\n", t.pages.pages,
                 t.pages.returned, t.pages.still_mapped);
    std::abort();
  }
  q.reset();
  // The sim platforms keep the doorbells of the handles they notified:
  // closed here so that what is left is what the queue kept.
  sim::forget_doorbells(*w.domu);
  sim::forget_doorbells(*w.dom0);
  const int fds_after = open_fds();
  if (fds_after != fds_at_start) {
    std::fprintf(stderr,
                 "fuzz: %d file descriptors open after the queue was torn down, %d before the "
                 "first input\n",
                 fds_after, fds_at_start);
    (void)open_fds(/*print=*/true);
    std::abort();
  }
  return 0;
}
