// SPDX-License-Identifier: MIT
// xenpv-features: asks a running ethdev port what it does and prints the
// answer in the key names of DPDK's NIC features table
// (doc/guides/nics/features/default.ini), one line a key:
//
//   Link status event = Y  # dev_flags has RTE_ETH_DEV_INTR_LSC
//   VLAN filter = -  # rx_offload_capa lacks RTE_ETH_RX_OFFLOAD_VLAN_FILTER
//
// Only keys this program can decide appear; tests/features/check.sh holds
// the output against docs/nics/features/xenpv.ini both ways. Each key's
// evidence is what DPDK's doc/guides/nics/features.rst names for it: a bit
// of rte_eth_dev_info ("[provides] rte_eth_dev_info"), a device flag, or an
// eth_dev_ops entry ("[implements] eth_dev_ops"), the last found by calling
// its rte_eth_* function: ethdev answers -ENOTSUP when the op is missing.
//
// Usage: xenpv-features EAL-ARGS (one port: --vdev net_xenpv0,...)
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_power_intrinsics.h>
#include <rte_tm.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

constexpr uint16_t kPort = 0;
constexpr uint16_t kRingSize = 256;

// One decided key, printed as it is decided.
void key(const char* name, bool yes, const std::string& why) {
  std::printf("%s = %s  # %s\n", name, yes ? "Y" : "-", why.c_str());
}

// "[implements] eth_dev_ops": ethdev returns -ENOTSUP when the op is NULL
// (it checks its arguments first: every call below passes valid ones).
bool implemented(int rc) {
  return rc != -ENOTSUP;
}
std::string op_why(const char* fn, int rc) {
  return std::string(fn) + (implemented(rc) ? " is implemented (returned " : " returned ") +
         std::to_string(rc) + (implemented(rc) ? ")" : " (-ENOTSUP: no op)");
}

struct Capa {
  uint64_t bits;
  const char* name;
};

// A key that a capability bit (any of `bits`) decides.
void capa_key(const char* name, uint64_t have, const char* field,
              std::initializer_list<Capa> bits) {
  std::string found, missing;
  for (const Capa& c : bits)
    ((have & c.bits) ? found : missing) += std::string(" ") + c.name;
  if (!found.empty())
    key(name, true, std::string(field) + " has" + found);
  else
    key(name, false, std::string(field) + " lacks" + missing);
}

#define CAPA(x) \
  Capa {        \
    x, #x       \
  }

int fail(const char* what, int rc) {
  std::fprintf(stderr, "xenpv-features: %s failed: %s\n", what, rte_strerror(-rc));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Log lines on stdout would mix with the keys.
  rte_openlog_stream(stderr);
  if (rte_eal_init(argc, argv) < 0) {
    std::fprintf(stderr, "xenpv-features: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    return 2;
  }
  if (rte_eth_dev_count_avail() != 1) {
    std::fprintf(stderr, "xenpv-features: expected exactly one port, found %u\n",
                 rte_eth_dev_count_avail());
    return 2;
  }
  struct rte_eth_dev_info info {};
  if (int rc = rte_eth_dev_info_get(kPort, &info); rc) return fail("rte_eth_dev_info_get", rc);
  uint32_t dev_flags = *info.dev_flags;
  std::printf(
      "# driver %s: max %u rx / %u tx queues, mtu %u..%u, max_rx_pktlen %u, "
      "max_lro_pkt_size %u, rx_offload_capa 0x%llx, tx_offload_capa 0x%llx, "
      "dev_capa 0x%llx, dev_flags 0x%x, speed_capa 0x%x\n",
      info.driver_name, info.max_rx_queues, info.max_tx_queues, info.min_mtu, info.max_mtu,
      info.max_rx_pktlen, info.max_lro_pkt_size,
      static_cast<unsigned long long>(info.rx_offload_capa),
      static_cast<unsigned long long>(info.tx_offload_capa),
      static_cast<unsigned long long>(info.dev_capa), dev_flags, info.speed_capa);

  // ---- what rte_eth_dev_info and the device flags report -------------------
  const uint64_t rx = info.rx_offload_capa | info.rx_queue_offload_capa;
  const uint64_t tx = info.tx_offload_capa | info.tx_queue_offload_capa;
  char speed_capa[32];
  std::snprintf(speed_capa, sizeof speed_capa, "speed_capa = 0x%x", info.speed_capa);
  key("Speed capabilities", info.speed_capa != 0, speed_capa);
  key("Link status event", dev_flags & RTE_ETH_DEV_INTR_LSC,
      (dev_flags & RTE_ETH_DEV_INTR_LSC) ? "dev_flags has RTE_ETH_DEV_INTR_LSC"
                                         : "dev_flags lacks RTE_ETH_DEV_INTR_LSC");
  key("Removal event", dev_flags & RTE_ETH_DEV_INTR_RMV,
      (dev_flags & RTE_ETH_DEV_INTR_RMV) ? "dev_flags has RTE_ETH_DEV_INTR_RMV"
                                         : "dev_flags lacks RTE_ETH_DEV_INTR_RMV");
  capa_key("Lock-free Tx queue", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_MT_LOCKFREE)});
  capa_key("Fast mbuf free", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)});
  capa_key("Runtime Rx queue setup", info.dev_capa, "dev_capa",
           {CAPA(RTE_ETH_DEV_CAPA_RUNTIME_RX_QUEUE_SETUP)});
  capa_key("Runtime Tx queue setup", info.dev_capa, "dev_capa",
           {CAPA(RTE_ETH_DEV_CAPA_RUNTIME_TX_QUEUE_SETUP)});
  capa_key("Shared Rx queue", info.dev_capa, "dev_capa", {CAPA(RTE_ETH_DEV_CAPA_RXQ_SHARE)});
  capa_key("Buffer split on Rx", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT)});
  capa_key("Scattered Rx", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_SCATTER)});
  capa_key("LRO", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_TCP_LRO)});
  capa_key("TSO", tx, "tx_offload_capa",
           {CAPA(RTE_ETH_TX_OFFLOAD_TCP_TSO), CAPA(RTE_ETH_TX_OFFLOAD_UDP_TSO)});
  capa_key("RSS hash", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_RSS_HASH)});
  key("RSS hash", info.flow_type_rss_offloads != 0,
      "flow_type_rss_offloads = " + std::to_string(info.flow_type_rss_offloads));
  key("VMDq", info.max_vmdq_pools != 0, "max_vmdq_pools = " + std::to_string(info.max_vmdq_pools));
  key("SR-IOV", info.max_vfs != 0, "max_vfs = " + std::to_string(info.max_vfs));
  capa_key("VLAN filter", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_VLAN_FILTER)});
  capa_key("CRC offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_KEEP_CRC)});
  // rx and tx offload bits share values: each side is tested on its own
  // field, and a key with lines for both is Y when either says Y.
  capa_key("VLAN offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_VLAN_STRIP)});
  capa_key("VLAN offload", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_VLAN_INSERT)});
  capa_key("QinQ offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_QINQ_STRIP)});
  capa_key("QinQ offload", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_QINQ_INSERT)});
  // features.rst gives Inline crypto and Inline protocol the same bits; the
  // action type needs an rte_security session: SECURITY decides the first.
  capa_key("Inline crypto", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_SECURITY)});
  capa_key("Inline crypto", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_SECURITY)});
  capa_key("L3 checksum offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_IPV4_CKSUM)});
  capa_key("L3 checksum offload", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)});
  capa_key("L4 checksum offload", rx, "rx_offload_capa",
           {CAPA(RTE_ETH_RX_OFFLOAD_TCP_CKSUM), CAPA(RTE_ETH_RX_OFFLOAD_UDP_CKSUM),
            CAPA(RTE_ETH_RX_OFFLOAD_SCTP_CKSUM)});
  capa_key("L4 checksum offload", tx, "tx_offload_capa",
           {CAPA(RTE_ETH_TX_OFFLOAD_TCP_CKSUM), CAPA(RTE_ETH_TX_OFFLOAD_UDP_CKSUM),
            CAPA(RTE_ETH_TX_OFFLOAD_SCTP_CKSUM)});
  capa_key("Timestamp offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_TIMESTAMP)});
  capa_key("MACsec offload", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_MACSEC_STRIP)});
  capa_key("MACsec offload", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_MACSEC_INSERT)});
  capa_key("Inner L3 checksum", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_OUTER_IPV4_CKSUM)});
  capa_key("Inner L3 checksum", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_OUTER_IPV4_CKSUM)});
  capa_key("Inner L4 checksum", rx, "rx_offload_capa", {CAPA(RTE_ETH_RX_OFFLOAD_OUTER_UDP_CKSUM)});
  capa_key("Inner L4 checksum", tx, "tx_offload_capa", {CAPA(RTE_ETH_TX_OFFLOAD_OUTER_UDP_CKSUM)});

  // ---- the ops: configure and start one queue pair, then call each --------
  struct rte_mempool* mp =
      rte_pktmbuf_pool_create("features", 2048, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (!mp) return fail("rte_pktmbuf_pool_create", -rte_errno);
  struct rte_eth_conf conf {};
  conf.intr_conf.lsc = (dev_flags & RTE_ETH_DEV_INTR_LSC) ? 1 : 0;
  conf.intr_conf.rxq = 1;
  int rc = rte_eth_dev_configure(kPort, 1, 1, &conf);
  if (rc == -EINVAL || rc == -ENOTSUP) {
    // A port without rx interrupts refuses intr_conf.rxq at start, not
    // here; a driver may refuse it here too: go on without.
    conf.intr_conf.rxq = 0;
    rc = rte_eth_dev_configure(kPort, 1, 1, &conf);
  }
  if (rc) return fail("rte_eth_dev_configure", rc);
  if ((rc = rte_eth_rx_queue_setup(kPort, 0, kRingSize, SOCKET_ID_ANY, nullptr, mp)))
    return fail("rte_eth_rx_queue_setup", rc);
  if ((rc = rte_eth_tx_queue_setup(kPort, 0, kRingSize, SOCKET_ID_ANY, nullptr)))
    return fail("rte_eth_tx_queue_setup", rc);
  struct rte_eth_ip_reassembly_params reasm {};
  rc = rte_eth_ip_reassembly_capability_get(kPort, &reasm);
  key("IP reassembly", implemented(rc), op_why("rte_eth_ip_reassembly_capability_get", rc));
  if ((rc = rte_eth_dev_start(kPort))) return fail("rte_eth_dev_start", rc);

  // Link status: the op answers, and a started port on a backend is up.
  struct rte_eth_link link {};
  for (int i = 0; i < 50; ++i) {
    rc = rte_eth_link_get_nowait(kPort, &link);
    if (rc || link.link_status == RTE_ETH_LINK_UP) break;
    usleep(100 * 1000);
  }
  key("Link status", rc == 0 && link.link_status == RTE_ETH_LINK_UP,
      "rte_eth_link_get_nowait returned " + std::to_string(rc) + ", link " +
          (link.link_status == RTE_ETH_LINK_UP ? "up" : "down") + " after start");

  if (conf.intr_conf.rxq) {
    rc = rte_eth_dev_rx_intr_enable(kPort, 0);
    int rc2 = rte_eth_dev_rx_intr_disable(kPort, 0);
    key("Rx interrupt", rc == 0 && rc2 == 0,
        "rte_eth_dev_rx_intr_enable/disable returned " + std::to_string(rc) + "/" +
            std::to_string(rc2));
  } else {
    key("Rx interrupt", false, "rte_eth_dev_configure refuses intr_conf.rxq");
  }

  rc = rte_eth_tx_done_cleanup(kPort, 0, 0);
  key("Free Tx mbuf on demand", implemented(rc), op_why("rte_eth_tx_done_cleanup", rc));

  {
    int a = rte_eth_dev_rx_queue_stop(kPort, 0), b = rte_eth_dev_rx_queue_start(kPort, 0);
    int c = rte_eth_dev_tx_queue_stop(kPort, 0), d = rte_eth_dev_tx_queue_start(kPort, 0);
    key("Queue start/stop", a == 0 && b == 0 && c == 0 && d == 0,
        "rx queue stop/start, tx queue stop/start returned " + std::to_string(a) + "/" +
            std::to_string(b) + "/" + std::to_string(c) + "/" + std::to_string(d));
  }

  {
    struct rte_eth_burst_mode m {};
    int a = rte_eth_rx_burst_mode_get(kPort, 0, &m), b = rte_eth_tx_burst_mode_get(kPort, 0, &m);
    key("Burst mode info", implemented(a) && implemented(b),
        "rte_eth_rx/tx_burst_mode_get returned " + std::to_string(a) + "/" + std::to_string(b));
  }

  {
    struct rte_power_monitor_cond pmc {};
    rc = rte_eth_get_monitor_addr(kPort, 0, &pmc);
    key("Power mgmt address monitor", implemented(rc), op_why("rte_eth_get_monitor_addr", rc));
  }

  {
    uint16_t mtu = 0;
    (void)rte_eth_dev_get_mtu(kPort, &mtu);
    const uint16_t other = mtu > info.min_mtu ? static_cast<uint16_t>(mtu - 100) : mtu;
    int a = rte_eth_dev_set_mtu(kPort, other);
    int b = rte_eth_dev_set_mtu(kPort, mtu);
    key("MTU update", a == 0 && b == 0,
        "rte_eth_dev_set_mtu " + std::to_string(other) + " then " + std::to_string(mtu) +
            " returned " + std::to_string(a) + "/" + std::to_string(b));
  }

  {
    int a = rte_eth_promiscuous_enable(kPort), b = rte_eth_promiscuous_disable(kPort);
    key("Promiscuous mode", a == 0 && b == 0,
        "rte_eth_promiscuous_enable/disable returned " + std::to_string(a) + "/" +
            std::to_string(b));
    a = rte_eth_allmulticast_enable(kPort);
    b = rte_eth_allmulticast_disable(kPort);
    key("Allmulticast mode", a == 0 && b == 0,
        "rte_eth_allmulticast_enable/disable returned " + std::to_string(a) + "/" +
            std::to_string(b));
  }

  {
    // features.rst, Unicast MAC filter: mac_addr_set, mac_addr_add and
    // mac_addr_remove. Setting the port's one address alone is not filtering
    // more addresses: the key needs mac_addr_add.
    struct rte_ether_addr own {
    }, other{};
    (void)rte_eth_macaddr_get(kPort, &own);
    other = own;
    other.addr_bytes[5] ^= 0x01;
    rc = rte_eth_dev_mac_addr_add(kPort, &other, 0);
    if (rc == 0) (void)rte_eth_dev_mac_addr_remove(kPort, &other);
    key("Unicast MAC filter", implemented(rc) && info.max_mac_addrs > 1,
        op_why("rte_eth_dev_mac_addr_add", rc) + ", max_mac_addrs " +
            std::to_string(info.max_mac_addrs));
    struct rte_ether_addr group = {{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}};
    int a = rte_eth_dev_set_mc_addr_list(kPort, &group, 1);
    int b = rte_eth_dev_set_mc_addr_list(kPort, nullptr, 0);
    key("Multicast MAC filter", a == 0 && b == 0,
        "rte_eth_dev_set_mc_addr_list with 1 then 0 addresses returned " + std::to_string(a) + "/" +
            std::to_string(b));
  }

  {
    struct rte_eth_rss_conf rss {};
    rc = rte_eth_dev_rss_hash_conf_get(kPort, &rss);
    key("RSS key update", implemented(rc), op_why("rte_eth_dev_rss_hash_conf_get", rc));
    const uint16_t reta_size = info.reta_size ? info.reta_size : RTE_ETH_RETA_GROUP_SIZE;
    std::vector<struct rte_eth_rss_reta_entry64> reta((reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) /
                                                      RTE_ETH_RETA_GROUP_SIZE);
    for (auto& r : reta)
      r.mask = ~0ULL;
    rc = rte_eth_dev_rss_reta_query(kPort, reta.data(), reta_size);
    key("RSS reta update", implemented(rc), op_why("rte_eth_dev_rss_reta_query", rc));
  }

  {
    struct rte_eth_dcb_info dcb {};
    rc = rte_eth_dev_get_dcb_info(kPort, &dcb);
    key("DCB", implemented(rc), op_why("rte_eth_dev_get_dcb_info", rc));
    struct rte_eth_fc_conf fc {};
    rc = rte_eth_dev_flow_ctrl_get(kPort, &fc);
    key("Flow control", implemented(rc), op_why("rte_eth_dev_flow_ctrl_get", rc));
    rc = rte_eth_set_queue_rate_limit(kPort, 0, 0);
    key("Rate limitation", implemented(rc), op_why("rte_eth_set_queue_rate_limit", rc));
    struct rte_eth_cman_info cman {};
    rc = rte_eth_cman_info_get(kPort, &cman);
    key("Congestion management", implemented(rc), op_why("rte_eth_cman_info_get", rc));
    struct rte_tm_capabilities tmc {};
    struct rte_tm_error tme {};
    rc = rte_tm_capabilities_get(kPort, &tmc, &tme);
    key("Traffic manager", rc == 0, "rte_tm_capabilities_get returned " + std::to_string(rc));
    struct rte_eth_fec_capa fec[8];
    rc = rte_eth_fec_get_capability(kPort, fec, 8);
    key("FEC", implemented(rc), op_why("rte_eth_fec_get_capability", rc));
    rc = rte_eth_dev_get_supported_ptypes(kPort, RTE_PTYPE_ALL_MASK, nullptr, 0);
    key("Packet type parsing", rc > 0,
        "rte_eth_dev_get_supported_ptypes returned " + std::to_string(rc));
    struct timespec ts {};
    rc = rte_eth_timesync_read_time(kPort, &ts);
    key("Timesync", implemented(rc), op_why("rte_eth_timesync_read_time", rc));
    rc = rte_eth_rx_descriptor_status(kPort, 0, 0);
    key("Rx descriptor status", implemented(rc), op_why("rte_eth_rx_descriptor_status", rc));
    rc = rte_eth_tx_descriptor_status(kPort, 0, 0);
    key("Tx descriptor status", implemented(rc), op_why("rte_eth_tx_descriptor_status", rc));
    char fw[64];
    rc = rte_eth_dev_fw_version_get(kPort, fw, sizeof fw);
    key("FW version", implemented(rc), op_why("rte_eth_dev_fw_version_get", rc));
    rc = rte_eth_dev_get_eeprom_length(kPort);
    key("EEPROM dump", implemented(rc), op_why("rte_eth_dev_get_eeprom_length", rc));
    struct rte_eth_dev_module_info mi {};
    rc = rte_eth_dev_get_module_info(kPort, &mi);
    key("Module EEPROM dump", implemented(rc), op_why("rte_eth_dev_get_module_info", rc));
    struct rte_dev_reg_info ri {};
    rc = rte_eth_dev_get_reg_info(kPort, &ri);
    key("Registers dump", implemented(rc), op_why("rte_eth_dev_get_reg_info", rc));
    rc = rte_eth_led_on(kPort);
    if (rc == 0) (void)rte_eth_led_off(kPort);
    key("LED", implemented(rc), op_why("rte_eth_led_on", rc));
  }

  // ---- statistics: send a few frames, read them back per queue ------------
  {
    int a = rte_eth_stats_reset(kPort);
    constexpr unsigned kFrames = 8;
    struct rte_mbuf* m[kFrames];
    unsigned sent = 0;
    if (rte_pktmbuf_alloc_bulk(mp, m, kFrames) == 0) {
      for (auto* b : m) {
        char* d = rte_pktmbuf_append(b, 60);
        std::memset(d, 0xff, 6);  // broadcast
        std::memset(d + 6, 0x02, 6);
        std::memset(d + 12, 0x88, 2);  // local experimental ethertype
        std::memset(d + 14, 0, 46);
      }
      for (int i = 0; i < 100 && sent < kFrames; ++i) {
        sent += rte_eth_tx_burst(kPort, 0, m + sent, static_cast<uint16_t>(kFrames - sent));
        if (sent < kFrames) usleep(10 * 1000);
      }
      rte_pktmbuf_free_bulk(m + sent, kFrames - sent);
    }
    struct rte_eth_stats st {};
    int b = 0;
    for (int i = 0; i < 100; ++i) {
      b = rte_eth_stats_get(kPort, &st);
      if (b || st.opackets >= sent) break;
      usleep(10 * 1000);
    }
    key("Basic stats", a == 0 && b == 0 && sent > 0 && st.opackets == sent,
        "rte_eth_stats_reset/get returned " + std::to_string(a) + "/" + std::to_string(b) + ", " +
            std::to_string(sent) + " frames sent, opackets " + std::to_string(st.opackets));
    key("Stats per queue", b == 0 && sent > 0 && st.q_opackets[0] == sent,
        "q_opackets[0] " + std::to_string(st.q_opackets[0]) + " of " + std::to_string(sent) +
            " frames sent on queue 0");
  }
  {
    // rte_eth_xstats_get_names counts ethdev's generic names too: the
    // driver's own are the rest (ethdev's eth_dev_get_xstats_basic_count:
    // 8 port names, plus per-queue ones with RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS).
    int total = rte_eth_xstats_get_names(kPort, nullptr, 0);
    int generic = 8;
    if (dev_flags & RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS) generic += 3 + 2;  // one rx, one tx queue
    int reset = rte_eth_xstats_reset(kPort);
    key("Extended stats", total > generic && reset == 0,
        std::to_string(total) + " xstats names, " + std::to_string(total - generic) +
            " of them the driver's; rte_eth_xstats_reset returned " + std::to_string(reset));
  }

  // ---- where this ran: the OS and architecture keys -------------------------
#ifdef RTE_EXEC_ENV_LINUX
  key("Linux", true, "ran on Linux");
#endif
#if defined(RTE_ARCH_X86_64)
  key("x86-64", true, "ran on x86-64");
#elif defined(RTE_ARCH_ARM64)
  key("ARMv8", true, "ran on arm64");
#endif

  (void)rte_eth_dev_stop(kPort);
  (void)rte_eth_dev_close(kPort);
  rte_mempool_free(mp);
  rte_eal_cleanup();
  return 0;
}
