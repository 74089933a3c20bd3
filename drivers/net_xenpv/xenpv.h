// SPDX-License-Identifier: MIT
// net_xenpv: a DPDK poll-mode driver for Xen PV network interfaces (netif).
//
// A thin adapter: every protocol rule lives in libxpv (include/xpv/). This
// driver maps ethdev operations onto an xpv::Device and copies between
// mbufs and the device's granted pages in the burst functions.
//
// Files: xenpv_devargs.cc (device arguments), xenpv_ethdev.cc (probe and
// eth_dev_ops), xenpv_rxtx.cc (rx/tx bursts), xenpv_intr.cc (rx interrupts,
// power-management monitor, TX completion clean-up).
#pragma once

#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <ethdev_driver.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "xpv/netfront.h"

extern int xenpv_logtype;
#define XENPV_LOG(level, fmt, ...) \
  rte_log(RTE_LOG_##level, xenpv_logtype, "net_xenpv: " fmt "\n", ##__VA_ARGS__)

// Parsed device arguments.
struct xenpv_args {
  uint32_t vif = 0;
  std::string backend = "xen";  // "xen" or "sim:PATH"
  uint32_t queues = 0;          // 0: what the application configures
  std::optional<xpv::MacAddr> mac;
  bool split_event_channels = true;
  uint32_t speed = RTE_ETH_SPEED_NUM_UNKNOWN;  // Mbps reported as link speed (netif has none)
  bool csum = true;  // checksum offload (and TSO, LRO) where the backend offers it
  // Zero-copy (DeviceConfig::rx_zero_copy): received mbufs are attached to
  // the granted RX pages, and sent by their grants on a port of the same
  // backend domain.
  bool zerocopy = false;
  // idle_sleep=US: once the polling thread found every net_xenpv queue it
  // polls empty kIdlePollsBeforeSleep times in a row, the RX burst sleeps
  // until a packet arrives for one of them or US microseconds pass (0: never;
  // poll mode spins as usual). xenpv_intr.cc.
  uint32_t idle_sleep_us = 0;
  // idle_wait=xen: such a sleep blocks the vCPU in Xen (SCHEDOP_poll on the
  // queues' RX ports, xen/sched_poll.h) instead of the guest kernel (ppoll
  // on their event fds): no context switch at each wake-up.
  bool idle_wait_in_xen = false;
};

// Empty RX polls in a row (on one thread, any net_xenpv queue) before an
// idle_sleep.
constexpr uint32_t kIdlePollsBeforeSleep = 64;
// The longest idle_sleep: a second. A packet for a queue the thread polled
// ends the sleep at once; the bound is for what does not (packets of other
// drivers' queues, a stop the lcore must see).
constexpr uint32_t kMaxIdleSleepUs = 1'000'000;

// Parses "vif=N,backend=...,queues=N,mac=...,split=0|1,speed=N,csum=0|1,zerocopy=0|1,
// idle_sleep=US,idle_wait=kernel|xen"; on error `err` names the key and the expected form.
bool xenpv_parse_args(const char* params, xenpv_args* out, std::string* err);
extern const char* const xenpv_valid_args[];

// The netif ring of every queue has 256 entries (netif.h: NET_TX_RING_SIZE
// and NET_RX_RING_SIZE for a 4 KiB ring page): the only descriptor count.
constexpr uint16_t kXenpvRingSize = 256;
// A frame may be the MTU plus an Ethernet header with one VLAN tag (as
// virtio counts it).
constexpr uint32_t kXenpvL2Overhead = RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN;
// mbufs of one TSO packet (up to 64 KiB): its segments are copied into at
// most XEN_NETIF_NR_SLOTS_MIN granted pages, so the chain may be longer than
// the 18 that any other packet may have (ethdev's nb_seg_max vs nb_mtu_seg_max).
constexpr uint16_t kXenpvMaxTsoSegs = 64;

// A counter written by one data-path thread and read by control threads
// (stats, telemetry): relaxed atomics, no read-modify-write on the fast path.
struct xenpv_counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) {
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
  void reset() { v.store(0, std::memory_order_relaxed); }
};

// The PMD's own per-queue counters (xstats "rx_qN_<name>" / "tx_qN_<name>"),
// beside the library's (include/xpv/counters.h).
#define XENPV_RXQ_COUNTERS(X)                                                            \
  X(nombuf, "mbuf allocation failures (the packet stays queued for the next burst)")     \
  X(filtered_unicast, "unicast frames for another MAC dropped (promiscuous mode off)")   \
  X(filtered_multicast, "multicast frames not in the list dropped (all-multicast off)")  \
  X(lro_packets, "large packets received (several TCP segments, RTE_MBUF_F_RX_LRO)")     \
  X(csum_software, "partial checksums completed here (RX checksum offload not enabled)") \
  X(idle_sleeps, "idle_sleep sleeps taken in this queue's bursts (its thread idle)")     \
  X(idle_sleeps_woken,                                                                   \
    "of those, sleeps a received packet ended early (any of the thread's queues)")       \
  X(idle_sleeps_in_xen,                                                                  \
    "of those, sleeps the vCPU spent blocked in Xen (idle_wait=xen), not in the kernel")
#define XENPV_TXQ_COUNTERS(X)                                                           \
  X(refused_mtu, "frames longer than the MTU plus the L2 header refused")               \
  X(refused_segs, "mbuf chains longer than 18 segments (64 for TSO) refused")           \
  X(refused_offload,                                                                    \
    "TSO or IPv4 checksum requests with headers beyond the first segment refused")      \
  X(tso_packets, "packets sent for the backend to segment (TSO)")                       \
  X(csum_offloaded, "packets sent with a partial checksum for the backend to complete") \
  X(csum_software, "IPv6 checksums completed here (the backend has no IPv6 checksum offload)")

// The MAC filter the RX burst applies before it allocates an mbuf: a
// netif backend (a bridge port) hands over whatever the bridge floods.
// Written by control threads, read by data-path threads: the flags and our
// MAC are atomics; the multicast list is guarded by a sequence lock (read
// only for multicast frames while all-multicast is off).
struct xenpv_rx_filter {
  static constexpr uint32_t kMaxMulticast = 64;
  std::atomic<bool> promiscuous{false};
  std::atomic<bool> all_multicast{false};
  std::atomic<uint64_t> mac{0};  // our unicast address, packed (mac_key)
  std::atomic<uint32_t> seq{0};  // odd while the list is being rewritten
  std::atomic<uint32_t> nb_multicast{0};
  std::atomic<uint64_t> multicast[kMaxMulticast] = {};

  static uint64_t mac_key(const uint8_t* a) {
    uint64_t k = 0;
    std::memcpy(&k, a, RTE_ETHER_ADDR_LEN);
    return k;
  }
  void set_multicast(const struct rte_ether_addr* set, uint32_t n);  // n <= kMaxMulticast
  bool multicast_listed(uint64_t key) const;
  // True when a frame with destination `dst` is delivered.
  bool accepts(const uint8_t* dst) const {
    if (promiscuous.load(std::memory_order_relaxed)) return true;
    const uint64_t key = mac_key(dst);
    if (!(dst[0] & 1)) return key == mac.load(std::memory_order_relaxed);
    if (key == 0xffffffffffffULL) return true;  // broadcast always passes
    return all_multicast.load(std::memory_order_relaxed) || multicast_listed(key);
  }
};

struct xenpv_internals;

// The free callback of the mbufs attached to kept RX pages (zerocopy=1): the
// TX burst tells such a segment by it.
void xenpv_kept_page_free(void* addr, void* opaque);

struct xenpv_rxq {
  xenpv_internals* pmd = nullptr;
  // The netif queue while this queue is started (port started, queue not
  // stopped); null otherwise. Release-stored by the control path, acquired
  // by the burst.
  std::atomic<xpv::Queue*> q{nullptr};
  struct rte_mempool* mp = nullptr;
  uint16_t qid = 0;
  uint16_t port_id = 0;
  uint32_t idle_sleep_us = 0;     // the port's idle_sleep device argument
  bool idle_wait_in_xen = false;  // the port's idle_wait=xen
  bool deferred_start = false;
  uint64_t offloads = 0;
  xenpv_counter filtered_bytes;  // bytes of the filtered frames (taken off rx_bytes)
#define XENPV_FIELD(name, doc) xenpv_counter name;
  XENPV_RXQ_COUNTERS(XENPV_FIELD)
#undef XENPV_FIELD
};

struct xenpv_txq {
  xenpv_internals* pmd = nullptr;
  std::atomic<xpv::Queue*> q{nullptr};  // as xenpv_rxq::q
  uint16_t qid = 0;
  bool deferred_start = false;
  uint64_t offloads = 0;
#define XENPV_FIELD(name, doc) xenpv_counter name;
  XENPV_TXQ_COUNTERS(XENPV_FIELD)
#undef XENPV_FIELD
};

// The port's private data. Declared at global scope because the ethdev
// headers forward-declare it; constructed with placement new in
// dev_private.
struct xenpv_internals {
  xenpv_args args;
  std::unique_ptr<xpv::Device> dev;  // opened at probe, re-opened on configure
  struct rte_ether_addr mac {};
  // The mac the backend gave at the last connect (the library reads it again
  // at each one), and whether the port's mac is the application's choice
  // (mac= or mac_addr_set) rather than following the backend's.
  xpv::MacAddr backend_mac{};
  bool mac_chosen_by_app = false;
  uint16_t port_id = 0;
  bool started = false;
  bool lro = false;  // the library device takes GSO packets (opened with rx_gso)
  xpv::BackendFeatures features;
  xenpv_rx_filter filter;
  std::vector<xpv::MacAddr> mc_list;  // set_mc_addr_list's, for the backend's filter
  // RSS as configured (dev_configure, the rss and reta ops); handed to each
  // library device opened (xenpv_rss.cc).
  xpv::RssConfig rss;
  std::atomic<uint32_t> max_frame{RTE_ETHER_MTU + kXenpvL2Overhead};  // TX: MTU + L2 header
  // control_mu serialises the library's control path (connect, poll_control,
  // close) between EAL's interrupt thread and API calls. Never held while
  // waiting for the control callback (rte_intr_callback_unregister_sync) or
  // while raising an ethdev event.
  std::mutex control_mu;
  struct rte_intr_handle* control_intr = nullptr;  // the device's control fd
  bool control_cb = false;
  // Link changes the library reported (its link callback) and the PMD has
  // not yet raised as LSC events, and the state after the last of them.
  // Changes alternate, so these two describe the whole sequence. Guarded by
  // control_mu.
  uint32_t link_changes_pending = 0;
  bool link_up_latest = false;
  // A reconnect found other features or another queue limit than the port
  // was configured with: RTE_ETH_EVENT_INTR_RESET is due. Guarded by
  // control_mu.
  bool reset_event_pending = false;
};

// Completes the partial TCP/UDP checksum of `m` in software (the bursts,
// where the other side cannot); false when `m` is not TCP/UDP over IP.
// `field_at` and `old`, if given, get the field's place and its value before.
bool xenpv_complete_l4_checksum(struct rte_mbuf* m, uint8_t** field_at = nullptr,
                                uint16_t* old = nullptr);

// xenpv_rss.cc: RSS through the backend's control ring (netif.h): what
// dev_infos_get reports, what dev_configure sets, and the rss/reta ops.
constexpr uint16_t kXenpvRetaSize = RTE_ETH_RSS_RETA_SIZE_128;  // Linux netback's table size
void xenpv_rss_infos(const xenpv_internals* p, struct rte_eth_dev_info* info);
int xenpv_rss_configure(struct rte_eth_dev* dev);
int xenpv_rss_hash_update(struct rte_eth_dev* dev, struct rte_eth_rss_conf* conf);
int xenpv_rss_hash_conf_get(struct rte_eth_dev* dev, struct rte_eth_rss_conf* conf);
int xenpv_reta_update(struct rte_eth_dev* dev, struct rte_eth_rss_reta_entry64* reta,
                      uint16_t reta_size);
int xenpv_reta_query(struct rte_eth_dev* dev, struct rte_eth_rss_reta_entry64* reta,
                     uint16_t reta_size);

uint16_t xenpv_rx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n);
uint16_t xenpv_tx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n);
uint16_t xenpv_tx_prepare(void* queue, struct rte_mbuf** pkts, uint16_t n);

// xenpv_intr.cc: rx interrupts (the queues' event fds in dev->intr_handle),
// rte_power_monitor support and tx_done_cleanup.
int xenpv_rx_intr_install(struct rte_eth_dev* dev);
void xenpv_rx_intr_uninstall(struct rte_eth_dev* dev);
int xenpv_rx_queue_intr_enable(struct rte_eth_dev* dev, uint16_t qid);
int xenpv_rx_queue_intr_disable(struct rte_eth_dev* dev, uint16_t qid);
int xenpv_tx_done_cleanup(void* txq, uint32_t free_cnt);
int xenpv_get_monitor_addr(void* rxq, struct rte_power_monitor_cond* pmc);
// idle_sleep (xenpv_intr.cc): an RX burst of `rxq` that found nothing, after
// the thread's other polls found nothing either; sleeps until a packet
// arrives on a queue the thread polled since its last sleep, or idle_sleep_us.
void xenpv_idle_wait(xenpv_rxq* rxq);
// An empty poll of `rxq` on this thread: the queue joins the ones the next
// idle wait sleeps on.
void xenpv_idle_note(xenpv_rxq* rxq);
// A port's RX queues (rx_queue_release) or its library queues (the device's
// close or re-open) are about to be freed: no thread's idle wait touches
// them after this returns.
void xenpv_idle_forget_queues();
