// SPDX-License-Identifier: MIT
// xpv-fwd: a DPDK layer-2 forwarder between two ports that sleeps on RX
// interrupts when there is nothing to do, with TCP offloads (LRO in, TSO and
// checksum offload out). What a virtual firewall or router in a guest does
// with net_xenpv: frames from port 0 go out of port 1 and the other way round,
// unchanged (the guest is a bridge).
//
//   xpv-fwd --no-huge -m 256 --no-pci --vdev net_xenpv0,vif=2 --vdev net_xenpv1,vif=3 --
//   [--no-offloads]
//
// Why interrupts: a guest whose vCPUs share physical CPUs with dom0 (netback
// does its copies there) takes them from dom0 while it busy-polls, as
// testpmd does. Here the lcore polls while packets come and sleeps in
// rte_epoll_wait once a few polls in a row found nothing (DPDK's
// l3fwd-power --interrupt-only does the same; ethdev's rx_intr API).
//
// Offloads, as testpmd's csum engine does them (DPDK's mbuf offload contract):
//  - a packet received with RTE_MBUF_F_RX_LRO (netif's GSO extra) and more
//    payload than its tso_segsz goes out with RTE_MBUF_F_TX_TCP_SEG, the TCP
//    checksum field holding the pseudo-header sum without the length;
//  - a packet whose L4 checksum the backend left partial
//    (RTE_MBUF_F_RX_L4_CKSUM_NONE: data verified, field not filled) goes out
//    with RTE_MBUF_F_TX_TCP_CKSUM / UDP_CKSUM, the field holding the
//    pseudo-header sum;
//  - the IPv4 header checksum of both is computed here (netif has no flag for
//    it; the backend's segmentation rewrites it per segment).
// Offloads the ports do not offer are not asked for: a packet that would need
// one gets its checksum completed in software instead (rte_net's helpers).
//
// On SIGINT/SIGTERM it stops, prints one line of counts per port and exits 0.
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_net.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include <getopt.h>

#include <atomic>
#include <cstdarg>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint16_t kRingSize = 256;   // netif's rings hold 256 requests
constexpr uint32_t kIdlePolls = 64;   // empty polls in a row before sleeping
constexpr int kSleepTimeoutMs = 200;  // to notice a signal while asleep

std::atomic<bool> g_quit{false};
void on_signal(int) {
  g_quit.store(true, std::memory_order_relaxed);
}

struct PortStats {
  uint64_t rx = 0, tx = 0, dropped = 0, lro = 0, tso = 0, csum_offloaded = 0, csum_software = 0;
};

// The extended statistic `name` of `port`; 0 when the driver has none by that name.
uint64_t xstat(uint16_t port, const char* name) {
  uint64_t id = 0, v = 0;
  if (rte_eth_xstats_get_id_by_name(port, name, &id) != 0) return 0;
  return rte_eth_xstats_get_by_id(port, &id, &v, 1) == 1 ? v : 0;
}

struct Port {
  uint16_t id = 0;
  uint64_t tx_offloads = 0;  // what was enabled on it
  rte_ether_addr mac{};      // the port's own
  bool has_peer = false;     // --eth-peer: frames out of it go to `peer`, from `mac`
  rte_ether_addr peer{};
  PortStats st;
  // Packets for this port that its TX ring had no room for, oldest first: sent before
  // anything else is taken for it (backpressure, as a kernel qdisc holds a stopped queue's
  // packets). A 64 KiB TSO packet takes 18 of the ring's 256 slots, and a dropped one costs
  // TCP a retransmission of some 45 segments and half its window.
  rte_mbuf* backlog[kBurst] = {};
  uint16_t nbacklog = 0;
  uint64_t backlog_moved = 0;  // rte_get_timer_cycles() when the backlog last shrank or began
};

struct Options {
  bool offloads = true;
  bool promisc = true;
  bool announce = false;
};

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char* fmt, ...) {
  std::fprintf(stderr, "xpv-fwd: ");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  rte_eal_cleanup();
  std::exit(1);
}

void port_setup(Port& p, rte_mempool* pool, const Options& o) {
  const bool offloads = o.offloads;
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(p.id, &info);
  if (rc != 0) die("port %u: rte_eth_dev_info_get failed (%d)", p.id, rc);
  rte_eth_conf conf{};
  conf.intr_conf.rxq = 1;
  if (offloads) {
    const uint64_t rx_want =
        RTE_ETH_RX_OFFLOAD_TCP_LRO | RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
    const uint64_t tx_want = RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
                             RTE_ETH_TX_OFFLOAD_UDP_CKSUM | RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    conf.rxmode.offloads = rx_want & info.rx_offload_capa;
    conf.txmode.offloads = tx_want & info.tx_offload_capa;
    if (conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TCP_LRO) {
      conf.rxmode.max_lro_pkt_size = info.max_lro_pkt_size;
      // A large receive lands in chained mbufs: the port must send them on.
      if (!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) ||
          !(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
        conf.rxmode.offloads &= ~RTE_ETH_RX_OFFLOAD_TCP_LRO;
      } else {
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
      }
    }
  }
  p.tx_offloads = conf.txmode.offloads;
  if ((rc = rte_eth_dev_configure(p.id, 1, 1, &conf)) != 0)
    die("port %u: rte_eth_dev_configure failed (%d): are RX interrupts supported?", p.id, rc);
  uint16_t nrx = kRingSize, ntx = kRingSize;
  if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(p.id, &nrx, &ntx)) != 0)
    die("port %u: rte_eth_dev_adjust_nb_rx_tx_desc failed (%d)", p.id, rc);
  rte_eth_rxconf rxc = info.default_rxconf;
  rxc.offloads = conf.rxmode.offloads;
  rte_eth_txconf txc = info.default_txconf;
  txc.offloads = conf.txmode.offloads;
  if ((rc = rte_eth_rx_queue_setup(p.id, 0, nrx, rte_eth_dev_socket_id(p.id), &rxc, pool)) != 0)
    die("port %u: rte_eth_rx_queue_setup failed (%d)", p.id, rc);
  if ((rc = rte_eth_tx_queue_setup(p.id, 0, ntx, rte_eth_dev_socket_id(p.id), &txc)) != 0)
    die("port %u: rte_eth_tx_queue_setup failed (%d)", p.id, rc);
  if ((rc = rte_eth_dev_start(p.id)) != 0) die("port %u: rte_eth_dev_start failed (%d)", p.id, rc);
  // Frames for the other side of the bridge carry other addresses.
  rc = o.promisc ? rte_eth_promiscuous_enable(p.id) : rte_eth_promiscuous_disable(p.id);
  if (rc != 0) die("port %u: promiscuous mode %s failed (%d)", p.id, o.promisc ? "on" : "off", rc);
  if ((rc = rte_eth_macaddr_get(p.id, &p.mac)) != 0)
    die("port %u: rte_eth_macaddr_get failed (%d)", p.id, rc);
  if ((rc = rte_eth_dev_rx_intr_ctl_q(p.id, 0, RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_ADD,
                                      reinterpret_cast<void*>(uintptr_t{p.id}))) != 0)
    die("port %u: rte_eth_dev_rx_intr_ctl_q failed (%d)", p.id, rc);
  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(mac, sizeof mac, &p.mac);
  std::printf("xpv-fwd: port %u: mac %s, rx offloads 0x%" PRIx64 ", tx offloads 0x%" PRIx64 "\n",
              p.id, mac, conf.rxmode.offloads, conf.txmode.offloads);
}

// The TX offload flags for a received packet about to go out of `out`
// (see the file's comment), its headers edited as the flags require.
void tx_prepare(rte_mbuf* m, const Port& out, PortStats& st) {
  const uint64_t rx = m->ol_flags;
  const bool partial = (rx & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_NONE;
  const bool lro = (rx & RTE_MBUF_F_RX_LRO) != 0;
  // What says how the mbuf's buffer is to be freed stays (an mbuf attached
  // to a page of the driver's, net_xenpv zerocopy=1, is freed through it).
  const uint64_t keep = rx & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL);
  m->ol_flags = keep;
  if (!partial && !lro) return;
  rte_net_hdr_lens h{};
  const uint32_t pt =
      rte_net_get_ptype(m, &h, RTE_PTYPE_L2_MASK | RTE_PTYPE_L3_MASK | RTE_PTYPE_L4_MASK);
  const uint32_t l4 = pt & RTE_PTYPE_L4_MASK;
  const bool v4 = RTE_ETH_IS_IPV4_HDR(pt), v6 = RTE_ETH_IS_IPV6_HDR(pt);
  if ((!v4 && !v6) || (l4 != RTE_PTYPE_L4_TCP && l4 != RTE_PTYPE_L4_UDP)) return;
  const uint32_t hdrs = h.l2_len + h.l3_len + h.l4_len;
  if (m->data_len < hdrs) return;  // headers split over segments: left as they are
  m->l2_len = h.l2_len;
  m->l3_len = h.l3_len;
  m->l4_len = h.l4_len;
  uint64_t tx = v4 ? RTE_MBUF_F_TX_IPV4 : RTE_MBUF_F_TX_IPV6;
  void* ip = rte_pktmbuf_mtod_offset(m, void*, h.l2_len);
  if (v4) {
    auto* ip4 = static_cast<rte_ipv4_hdr*>(ip);
    ip4->hdr_checksum = 0;
    ip4->hdr_checksum = rte_ipv4_cksum(ip4);
  }
  const bool tcp = l4 == RTE_PTYPE_L4_TCP;
  // The L4 checksum field (TCP: offset 16, UDP: 6), stored to with memcpy.
  uint8_t* const field_at =
      rte_pktmbuf_mtod_offset(m, uint8_t*, h.l2_len + h.l3_len + (tcp ? 16 : 6));
  const auto field = [field_at](uint16_t v) { std::memcpy(field_at, &v, sizeof v); };
  // A large receive bigger than one segment: out only with TSO (else larger than the MTU).
  const bool oversize = lro && m->tso_segsz && m->pkt_len - hdrs > m->tso_segsz;
  if (oversize && tcp && (out.tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_TSO)) {
    tx |= RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM;
    field(v4 ? rte_ipv4_phdr_cksum(static_cast<rte_ipv4_hdr*>(ip), tx)
             : rte_ipv6_phdr_cksum(static_cast<rte_ipv6_hdr*>(ip), tx));
    m->ol_flags = keep | tx;
    ++st.tso;
    return;
  }
  if (oversize) return;  // the port refuses it (and counts it)
  const uint64_t want = tcp ? RTE_ETH_TX_OFFLOAD_TCP_CKSUM : RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  if (out.tx_offloads & want) {
    tx |= tcp ? RTE_MBUF_F_TX_TCP_CKSUM : RTE_MBUF_F_TX_UDP_CKSUM;
    field(v4 ? rte_ipv4_phdr_cksum(static_cast<rte_ipv4_hdr*>(ip), tx)
             : rte_ipv6_phdr_cksum(static_cast<rte_ipv6_hdr*>(ip), tx));
    m->ol_flags = keep | tx;
    ++st.csum_offloaded;
    return;
  }
  // No offload out there: the whole checksum, here, over every segment (rte_ip.h's helpers
  // take the L4 length from the IP header, so a padded frame is summed right).
  field(0);
  const uint16_t l4_off = static_cast<uint16_t>(h.l2_len + h.l3_len);
  field(v4 ? rte_ipv4_udptcp_cksum_mbuf(m, static_cast<rte_ipv4_hdr*>(ip), l4_off)
           : rte_ipv6_udptcp_cksum_mbuf(m, static_cast<rte_ipv6_hdr*>(ip), l4_off));
  ++st.csum_software;
}

// A port that takes nothing for this long (its backend gone, say) has its
// backlog dropped (counted), so that the other direction and sleep go on.
constexpr uint64_t kBacklogTimeoutMs = 100;
constexpr unsigned kBacklogSleepUs = 50;  // between attempts that sent nothing

void drop_backlog(Port& out) {
  rte_pktmbuf_free_bulk(out.backlog, out.nbacklog);
  out.st.dropped += out.nbacklog;
  out.nbacklog = 0;
}

// Sends what waits in `out`'s backlog; true when it is empty now.
bool drain_backlog(Port& out) {
  if (out.nbacklog == 0) return true;
  const uint16_t sent = rte_eth_tx_burst(out.id, 0, out.backlog, out.nbacklog);
  const uint64_t now = rte_get_timer_cycles();
  if (sent == 0) {
    if (now - out.backlog_moved > rte_get_timer_hz() / 1000 * kBacklogTimeoutMs) drop_backlog(out);
    return out.nbacklog == 0;
  }
  out.backlog_moved = now;
  out.st.tx += sent;
  out.nbacklog = static_cast<uint16_t>(out.nbacklog - sent);
  std::memmove(out.backlog, out.backlog + sent, out.nbacklog * sizeof(rte_mbuf*));
  return out.nbacklog == 0;
}

// One burst from `in` out of `out`; returns the packets received and the
// backlog sent. Nothing is taken from `in` while `out` has a backlog.
uint16_t forward(Port& in, Port& out) {
  const uint16_t waiting = out.nbacklog;
  if (!drain_backlog(out)) return static_cast<uint16_t>(waiting - out.nbacklog);
  rte_mbuf* pkts[kBurst];
  const uint16_t n = rte_eth_rx_burst(in.id, 0, pkts, kBurst);
  if (n == 0) return 0;
  in.st.rx += n;
  for (uint16_t i = 0; i < n; ++i) {
    if (pkts[i]->ol_flags & RTE_MBUF_F_RX_LRO) ++in.st.lro;
    tx_prepare(pkts[i], out, out.st);
    if (out.has_peer && pkts[i]->data_len >= sizeof(rte_ether_hdr)) {
      auto* eth = rte_pktmbuf_mtod(pkts[i], rte_ether_hdr*);
      rte_ether_addr_copy(&out.peer, &eth->dst_addr);
      rte_ether_addr_copy(&out.mac, &eth->src_addr);
    }
  }
  const uint16_t sent = rte_eth_tx_burst(out.id, 0, pkts, n);
  out.st.tx += sent;
  out.nbacklog = static_cast<uint16_t>(n - sent);  // it was empty
  std::memcpy(out.backlog, pkts + sent, out.nbacklog * sizeof(rte_mbuf*));
  if (out.nbacklog) out.backlog_moved = rte_get_timer_cycles();
  return static_cast<uint16_t>(n + waiting);
}

void set_rx_intr(Port* ports, bool on) {
  for (int i = 0; i < 2; ++i) {
    const int rc = on ? rte_eth_dev_rx_intr_enable(ports[i].id, 0)
                      : rte_eth_dev_rx_intr_disable(ports[i].id, 0);
    if (rc != 0) {
      std::fprintf(stderr, "xpv-fwd: port %u: rx interrupt %s failed (%d)\n", ports[i].id,
                   on ? "enable" : "disable", rc);
      g_quit.store(true);
    }
  }
}

// --announce: one frame from the port to its own address (ethertype 0x88b5,
// IEEE local experimental), so that a learning bridge knows where the port is
// before anything is sent to it; no bridge forwards it anywhere.
void announce(Port& p, rte_mempool* pool) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) die("port %u: no mbuf for the announcement", p.id);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m, 60));
  std::memset(eth, 0, 60);
  rte_ether_addr_copy(&p.mac, &eth->dst_addr);
  rte_ether_addr_copy(&p.mac, &eth->src_addr);
  eth->ether_type = rte_cpu_to_be_16(0x88b5);
  if (rte_eth_tx_burst(p.id, 0, &m, 1) != 1) {
    rte_pktmbuf_free(m);
    die("port %u: the announcement was not sent", p.id);
  }
}

void usage() {
  std::fprintf(
      stderr,
      "usage: xpv-fwd [EAL options] -- [--no-offloads] [--no-promisc] [--eth-peer P,MAC]...\n"
      "               [--announce]\n"
      "  forwards between ports 0 and 1 (exactly two), sleeping on RX interrupts when idle\n"
      "  --no-offloads    no LRO, TSO or checksum offload (1514-byte frames, full checksums)\n"
      "  --no-promisc     only frames for the ports' own addresses (default: all)\n"
      "  --eth-peer P,MAC frames out of port P go to MAC, from P's address (default:\n"
      "                   unchanged, as a bridge)\n"
      "  --announce       first, one frame from each port to its own address (a learning\n"
      "                   bridge then knows where it is)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    std::fprintf(stderr, "xpv-fwd: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  argc -= eal;
  argv += eal;
  Options o;
  struct PeerArg {
    unsigned port;
    rte_ether_addr mac;
  } peers[2];
  int npeers = 0;
  static const option longopts[] = {
      {"no-offloads", no_argument, nullptr, 'n'},    {"no-promisc", no_argument, nullptr, 'P'},
      {"eth-peer", required_argument, nullptr, 'e'}, {"announce", no_argument, nullptr, 'a'},
      {"help", no_argument, nullptr, 'h'},           {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1;) {
    if (c == 'n') {
      o.offloads = false;
    } else if (c == 'P') {
      o.promisc = false;
    } else if (c == 'a') {
      o.announce = true;
    } else if (c == 'e') {
      const char* comma = std::strchr(optarg, ',');
      char* end = nullptr;
      const unsigned long port = std::strtoul(optarg, &end, 10);
      if (!comma || end != comma || end == optarg || port > 1 || npeers == 2 ||
          rte_ether_unformat_addr(comma + 1, &peers[npeers].mac) != 0) {
        std::fprintf(stderr,
                     "xpv-fwd: --eth-peer '%s': want PORT,MAC with PORT 0 or 1 (at most twice)\n",
                     optarg);
        rte_eal_cleanup();
        return 2;
      }
      peers[npeers++].port = static_cast<unsigned>(port);
    } else {
      usage();
      rte_eal_cleanup();
      return c == 'h' ? 0 : 2;
    }
  }
  if (optind != argc) {
    std::fprintf(stderr, "xpv-fwd: unexpected argument '%s'\n", argv[optind]);
    usage();
    rte_eal_cleanup();
    return 2;
  }
  if (rte_eth_dev_count_avail() != 2) {
    std::fprintf(stderr,
                 "xpv-fwd: wants exactly 2 ports, EAL found %u (check the --vdev options)\n",
                 rte_eth_dev_count_avail());
    rte_eal_cleanup();
    return 2;
  }
  rte_mempool* pool =
      rte_pktmbuf_pool_create("xpv_fwd", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (!pool) die("cannot create the mbuf pool: %s (%d)", rte_strerror(rte_errno), rte_errno);
  Port ports[2];
  uint16_t pid, k = 0;
  RTE_ETH_FOREACH_DEV(pid) {
    ports[k++].id = pid;
  }
  for (Port& p : ports)
    port_setup(p, pool, o);
  for (int i = 0; i < npeers; ++i) {
    ports[peers[i].port].has_peer = true;
    ports[peers[i].port].peer = peers[i].mac;
  }
  if (o.announce) {
    for (Port& p : ports)
      announce(p, pool);
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("xpv-fwd: forwarding %u <-> %u, offloads %s\n", ports[0].id, ports[1].id,
              o.offloads ? "on" : "off");
  std::fflush(stdout);

  uint64_t sleeps = 0, wakeups = 0;
  uint32_t idle = 0;
  while (!g_quit.load(std::memory_order_relaxed)) {
    const uint32_t n = forward(ports[0], ports[1]) + forward(ports[1], ports[0]);
    if (n) {
      idle = 0;
      continue;
    }
    // A backlog waits for TX responses, which no RX interrupt announces:
    // poll again shortly (the transmit path reclaims them in poll mode), and
    // meanwhile leave the CPU to netback, which empties the ring in dom0.
    if (ports[0].nbacklog || ports[1].nbacklog) {
      rte_delay_us_sleep(kBacklogSleepUs);
      continue;
    }
    if (++idle < kIdlePolls) continue;
    // Arm both queues, then sleep: a packet that came after the last poll
    // makes its queue's fd readable at once (the PMD's rx_queue_intr_enable).
    set_rx_intr(ports, true);
    rte_epoll_event ev[2];
    ++sleeps;
    const int got = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, 2, kSleepTimeoutMs);
    if (got > 0) ++wakeups;
    set_rx_intr(ports, false);
    idle = 0;
  }
  for (Port& p : ports)
    drop_backlog(p);  // what no TX ring took before the signal
  for (const Port& p : ports) {
    // The driver's counts, when it has them: packets received into their
    // granted pages and sent by those pages' grants (net_xenpv zerocopy=1),
    // notifications sent to the backend and events taken from it.
    std::printf("xpv-fwd: port %u: rx %" PRIu64 " tx %" PRIu64 " dropped %" PRIu64 " lro %" PRIu64
                " tso %" PRIu64 " csum-offloaded %" PRIu64 " csum-software %" PRIu64
                " rx-kept %" PRIu64 " tx-by-rx-grant %" PRIu64 " notifies %" PRIu64
                " events %" PRIu64 "\n",
                p.id, p.st.rx, p.st.tx, p.st.dropped, p.st.lro, p.st.tso, p.st.csum_offloaded,
                p.st.csum_software, xstat(p.id, "rx_q0_kept"), xstat(p.id, "tx_q0_by_rx_grant"),
                xstat(p.id, "q0_notifies"), xstat(p.id, "q0_events"));
  }
  std::printf("xpv-fwd: sleeps %" PRIu64 " wakeups %" PRIu64 "\n", sleeps, wakeups);
  for (const Port& p : ports) {
    rte_eth_dev_stop(p.id);
    rte_eth_dev_close(p.id);
  }
  rte_eal_cleanup();
  return 0;
}
