// SPDX-License-Identifier: MIT
// net_xenpv: probe/remove and the eth_dev_ops, each named after the ethdev
// operation it implements.
#include <rte_bus_vdev.h>
#include <rte_interrupts.h>
#include <rte_malloc.h>

#include <bus_vdev_driver.h>
#include <ethdev_vdev.h>

#include <cstring>
#include <new>

#include "xenpv.h"
#include "xpv/log.h"

RTE_LOG_REGISTER_DEFAULT(xenpv_logtype, NOTICE);

namespace {

constexpr uint16_t kRingSize = 256;  // netif rings: 256 entries
constexpr uint32_t kEthHdr = RTE_ETHER_HDR_LEN;

xenpv_internals* priv(struct rte_eth_dev* dev) {
  return static_cast<xenpv_internals*>(dev->data->dev_private);
}

uint32_t max_mtu(const xenpv_internals* p) {
  // Without feature-sg a packet must fit one slot (Linux: ETH_DATA_LEN).
  return p->features.sg ? xpv::kMaxPacketLen - kEthHdr : RTE_ETHER_MTU;
}

// ---- the control path on the EAL interrupt thread -------------------------

void update_link(struct rte_eth_dev* dev, bool notify) {
  xenpv_internals* p = priv(dev);
  struct rte_eth_link link {};
  const bool up = p->started && p->dev && p->dev->link() == xpv::LinkState::kUp;
  link.link_speed = up ? RTE_ETH_SPEED_NUM_10G : RTE_ETH_SPEED_NUM_NONE;
  link.link_duplex = RTE_ETH_LINK_FULL_DUPLEX;
  link.link_autoneg = RTE_ETH_LINK_FIXED;
  link.link_status = up ? RTE_ETH_LINK_UP : RTE_ETH_LINK_DOWN;
  const bool changed = rte_eth_linkstatus_set(dev, &link) == 0 ? false : true;
  (void)changed;
  if (notify && dev->data->dev_conf.intr_conf.lsc) {
    rte_eth_dev_callback_process(dev, RTE_ETH_EVENT_INTR_LSC, nullptr);
  }
}

// The device's control fd became readable: xenstore watch events (backend
// state), a reconnect timer, or a queue that caught a protocol violation.
void control_callback(void* arg) {
  auto* dev = static_cast<struct rte_eth_dev*>(arg);
  xenpv_internals* p = priv(dev);
  bool changed = false;
  {
    // Always let the device drain what made its fd readable: the fd is level
    // triggered, and an undrained one would keep this interrupt thread
    // spinning (and rte_intr_callback_unregister_sync waiting on it).
    std::lock_guard lk(p->control_mu);
    if (p->dev) changed = p->dev->poll_control() && p->started;
  }
  if (changed) {
    XENPV_LOG(INFO, "port %u: link %s%s%s", dev->data->port_id,
              p->dev->link() == xpv::LinkState::kUp ? "up" : "down",
              p->dev->link() == xpv::LinkState::kUp ? "" : ": ",
              p->dev->link() == xpv::LinkState::kUp ? "" : p->dev->last_down_reason().c_str());
    update_link(dev, true);
  }
}

void control_uninstall(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (p->control_cb) {
    rte_intr_callback_unregister_sync(p->control_intr, control_callback, dev);
    p->control_cb = false;
  }
  if (p->control_intr) {
    rte_intr_instance_free(p->control_intr);
    p->control_intr = nullptr;
  }
}

int control_install(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  control_uninstall(dev);
  p->control_intr = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
  if (!p->control_intr) return -ENOMEM;
  if (rte_intr_type_set(p->control_intr, RTE_INTR_HANDLE_EXT) ||
      rte_intr_fd_set(p->control_intr, p->dev->control_fd())) {
    return -rte_errno;
  }
  int rc = rte_intr_callback_register(p->control_intr, control_callback, dev);
  if (rc < 0) return rc;
  p->control_cb = true;
  return 0;
}

// Opens (or re-opens) the library device with `queues` queues.
int open_device(struct rte_eth_dev* dev, uint32_t queues) {
  xenpv_internals* p = priv(dev);
  control_uninstall(dev);
  p->dev.reset();
  xpv::DeviceConfig cfg;
  cfg.platform = p->args.backend;
  cfg.vif = p->args.vif;
  cfg.queues = queues;
  cfg.mac = p->args.mac;
  cfg.split_event_channels = p->args.split_event_channels;
  cfg.mode = xpv::QueueMode::kPoll;
  auto d = xpv::Device::open(cfg);
  if (!d) {
    XENPV_LOG(ERR, "%s: %s", dev->data->name, d.error().message.c_str());
    return -d.error().code;
  }
  p->dev = std::move(*d);
  const xpv::DeviceInfo& info = p->dev->info();
  p->features = info.features;
  p->mtu = info.mtu;
  return control_install(dev);
}

// ---- rx interrupts -----------------------------------------------------------

void rx_intr_uninstall(struct rte_eth_dev* dev) {
  if (dev->intr_handle) {
    // The efds are the queues' own event fds: the library closes them.
    rte_intr_vec_list_free(dev->intr_handle);
    rte_intr_instance_free(dev->intr_handle);
    dev->intr_handle = nullptr;
  }
}

int rx_intr_install(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  const uint16_t n = dev->data->nb_rx_queues;
  rx_intr_uninstall(dev);
  dev->intr_handle = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
  if (!dev->intr_handle) return -ENOMEM;
  // Type VDEV with a counter size of 0: EAL reads nothing from the fd when it
  // wakes; our rx burst takes the events (late EOI) itself.
  if (rte_intr_efd_counter_size_set(dev->intr_handle, 0) ||
      rte_intr_vec_list_alloc(dev->intr_handle, nullptr, n)) {
    return -rte_errno;
  }
  for (uint16_t i = 0; i < n; ++i) {
    if (rte_intr_vec_list_index_set(dev->intr_handle, i, RTE_INTR_VEC_RXTX_OFFSET + i) ||
        rte_intr_efds_index_set(dev->intr_handle, i, p->dev->queue(i).event_fd())) {
      return -rte_errno;
    }
  }
  if (rte_intr_nb_efd_set(dev->intr_handle, n) || rte_intr_max_intr_set(dev->intr_handle, n + 1) ||
      rte_intr_type_set(dev->intr_handle, RTE_INTR_HANDLE_VDEV)) {
    return -rte_errno;
  }
  return 0;
}

// ---- eth_dev_ops ----------------------------------------------------------------

int xenpv_dev_configure(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  const uint32_t want = std::max(dev->data->nb_rx_queues, dev->data->nb_tx_queues);
  if (want == 0) return -EINVAL;
  if (p->args.queues && want != p->args.queues) {
    XENPV_LOG(ERR, "%s: configured with %u queues but the device argument says queues=%u",
              dev->data->name, want, p->args.queues);
    return -EINVAL;
  }
  const uint32_t limit = std::min(p->features.max_queues, xpv::kMaxQueues);
  if (want > limit) {
    XENPV_LOG(ERR,
              "%s: %u queues requested but the backend allows at most %u "
              "(multi-queue-max-queues)",
              dev->data->name, want, limit);
    return -EINVAL;
  }
  if (!p->dev || p->dev->num_queues() != want) {
    std::lock_guard lk(p->control_mu);
    int rc = open_device(dev, want);
    if (rc < 0) return rc;
  }
  return 0;
}

int xenpv_dev_start(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (!p->dev) return -EINVAL;
  {
    std::lock_guard lk(p->control_mu);
    xpv::Status s = p->dev->connect();
    if (s.failed()) {
      XENPV_LOG(ERR, "%s: %s", dev->data->name, s.message().c_str());
      return -s.code();
    }
    p->started = true;
  }
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    auto* q = static_cast<xenpv_rxq*>(dev->data->rx_queues[i]);
    if (q) q->q = &p->dev->queue(i);
    dev->data->rx_queue_state[i] = RTE_ETH_QUEUE_STATE_STARTED;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    auto* q = static_cast<xenpv_txq*>(dev->data->tx_queues[i]);
    if (q) q->q = &p->dev->queue(i);
    dev->data->tx_queue_state[i] = RTE_ETH_QUEUE_STATE_STARTED;
  }
  if (dev->data->dev_conf.intr_conf.rxq) {
    int rc = rx_intr_install(dev);
    if (rc < 0) {
      XENPV_LOG(ERR, "%s: cannot set up rx interrupts: %s", dev->data->name, rte_strerror(-rc));
      return rc;
    }
  }
  const xpv::DeviceInfo& info = p->dev->info();
  XENPV_LOG(INFO, "%s: connected to %s (domain %u, %u queue(s), %s event channels)",
            dev->data->name, info.backend_path.c_str(), info.self_domid, info.queues,
            info.split_event_channels ? "split" : "shared");
  update_link(dev, false);
  return 0;
}

int xenpv_dev_stop(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    auto* q = static_cast<xenpv_rxq*>(dev->data->rx_queues[i]);
    if (q) q->q = nullptr;
    dev->data->rx_queue_state[i] = RTE_ETH_QUEUE_STATE_STOPPED;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    auto* q = static_cast<xenpv_txq*>(dev->data->tx_queues[i]);
    if (q) q->q = nullptr;
    dev->data->tx_queue_state[i] = RTE_ETH_QUEUE_STATE_STOPPED;
  }
  rx_intr_uninstall(dev);
  {
    std::lock_guard lk(p->control_mu);
    p->started = false;
    // Closing/Closed; every granted page is accounted for. Transmitted mbufs
    // were copied and freed in tx burst, and received data is copied into
    // fresh mbufs, so no mbuf of the application is held here.
    if (p->dev) p->dev->close();
  }
  update_link(dev, false);
  return 0;
}

int xenpv_dev_close(struct rte_eth_dev* dev) {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) return 0;
  xenpv_internals* p = priv(dev);
  if (p->started) xenpv_dev_stop(dev);
  control_uninstall(dev);
  p->dev.reset();
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    rte_free(dev->data->rx_queues[i]);
    dev->data->rx_queues[i] = nullptr;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    rte_free(dev->data->tx_queues[i]);
    dev->data->tx_queues[i] = nullptr;
  }
  dev->data->mac_addrs = nullptr;  // part of dev_private
  p->~xenpv_internals();
  return 0;
}

int xenpv_dev_reset(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (p->started) xenpv_dev_stop(dev);
  std::lock_guard lk(p->control_mu);
  return open_device(dev, p->dev ? p->dev->num_queues() : 1);
}

int xenpv_link_update(struct rte_eth_dev* dev, int /*wait_to_complete*/) {
  xenpv_internals* p = priv(dev);
  {
    std::lock_guard lk(p->control_mu);
    if (p->dev && p->started) p->dev->poll_control();
  }
  update_link(dev, false);
  return 0;
}

int xenpv_promiscuous(struct rte_eth_dev*) {
  return 0;
}  // netback delivers all

int xenpv_stats_get(struct rte_eth_dev* dev, struct rte_eth_stats* st) {
  xenpv_internals* p = priv(dev);
  if (!p->dev) return 0;
  for (uint32_t i = 0; i < p->dev->num_queues(); ++i) {
    const xpv::QueueCounters c = p->dev->queue(i).counters();
    uint64_t nombuf = 0;
    if (i < dev->data->nb_rx_queues && dev->data->rx_queues[i]) {
      nombuf = static_cast<xenpv_rxq*>(dev->data->rx_queues[i])->rx_nombuf;
    }
    uint64_t chain = 0;
    if (i < dev->data->nb_tx_queues && dev->data->tx_queues[i]) {
      chain = static_cast<xenpv_txq*>(dev->data->tx_queues[i])->tx_dropped_chain;
    }
    st->ipackets += c.rx_packets;
    st->ibytes += c.rx_bytes;
    st->opackets += c.tx_packets;
    st->obytes += c.tx_bytes;
    st->imissed += c.rx_dropped;
    st->ierrors += c.rx_errors;
    st->oerrors += c.tx_errors + c.tx_dropped + chain;
    st->rx_nombuf += nombuf;
    if (i < RTE_ETHDEV_QUEUE_STAT_CNTRS) {
      st->q_ipackets[i] = c.rx_packets;
      st->q_ibytes[i] = c.rx_bytes;
      st->q_opackets[i] = c.tx_packets;
      st->q_obytes[i] = c.tx_bytes;
      st->q_errors[i] = c.rx_errors;
    }
  }
  return 0;
}

int xenpv_stats_reset(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (!p->dev) return 0;
  for (uint32_t i = 0; i < p->dev->num_queues(); ++i)
    p->dev->queue(i).reset_counters();
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    if (dev->data->rx_queues[i]) static_cast<xenpv_rxq*>(dev->data->rx_queues[i])->rx_nombuf = 0;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    if (dev->data->tx_queues[i])
      static_cast<xenpv_txq*>(dev->data->tx_queues[i])->tx_dropped_chain = 0;
  }
  return 0;
}

// xstats: every library counter of every queue, named like DPDK drivers
// name per-queue counters ("rx_q0_packets", "tx_q1_bytes", "q0_events").
std::string xstat_name(uint32_t q, const xpv::CounterInfo& ci) {
  std::string n = ci.name;
  if (n.starts_with("rx_")) return xpv::format("rx_q%u_%s", q, n.c_str() + 3);
  if (n.starts_with("tx_")) return xpv::format("tx_q%u_%s", q, n.c_str() + 3);
  return xpv::format("q%u_%s", q, n.c_str());
}

int xenpv_xstats_get_names(struct rte_eth_dev* dev, struct rte_eth_xstat_name* names,
                           unsigned int size) {
  xenpv_internals* p = priv(dev);
  const uint32_t nq = p->dev ? p->dev->num_queues() : 0;
  const unsigned total = nq * xpv::kQueueCounterCount;
  if (!names || size < total) return static_cast<int>(total);
  unsigned k = 0;
  for (uint32_t q = 0; q < nq; ++q) {
    for (const auto& ci : xpv::kQueueCounterInfo) {
      std::snprintf(names[k++].name, RTE_ETH_XSTATS_NAME_SIZE, "%s", xstat_name(q, ci).c_str());
    }
  }
  return static_cast<int>(total);
}

int xenpv_xstats_get(struct rte_eth_dev* dev, struct rte_eth_xstat* xs, unsigned int n) {
  xenpv_internals* p = priv(dev);
  const uint32_t nq = p->dev ? p->dev->num_queues() : 0;
  const unsigned total = nq * xpv::kQueueCounterCount;
  if (!xs || n < total) return static_cast<int>(total);
  unsigned k = 0;
  for (uint32_t q = 0; q < nq; ++q) {
    const xpv::QueueCounters c = p->dev->queue(q).counters();
    for (const auto& ci : xpv::kQueueCounterInfo) {
      xs[k].id = k;
      xs[k].value = xpv::counter_value(c, ci);
      ++k;
    }
  }
  return static_cast<int>(total);
}

int xenpv_dev_infos_get(struct rte_eth_dev* dev, struct rte_eth_dev_info* info) {
  xenpv_internals* p = priv(dev);
  const uint16_t maxq = static_cast<uint16_t>(std::min(p->features.max_queues, xpv::kMaxQueues));
  info->max_mac_addrs = 1;
  info->max_rx_pktlen = max_mtu(p) + kEthHdr;
  info->min_mtu = RTE_ETHER_MIN_MTU;
  info->max_mtu = static_cast<uint16_t>(max_mtu(p));
  info->max_rx_queues = maxq;
  info->max_tx_queues = maxq;
  info->min_rx_bufsize = 64;
  // Multi-slot packets arrive as mbuf chains; chains are sent as multi-slot
  // packets (needs the backend's feature-sg). No checksum or TSO offload.
  info->rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER;
  info->tx_offload_capa = p->features.sg ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
  info->rx_desc_lim.nb_max = kRingSize;
  info->rx_desc_lim.nb_min = 1;
  info->rx_desc_lim.nb_align = 1;
  info->tx_desc_lim.nb_max = kRingSize;
  info->tx_desc_lim.nb_min = 1;
  info->tx_desc_lim.nb_align = 1;
  info->tx_desc_lim.nb_seg_max = xpv::kMaxTxSlots;
  info->tx_desc_lim.nb_mtu_seg_max = xpv::kMaxTxSlots;
  info->default_rxportconf.ring_size = kRingSize;
  info->default_txportconf.ring_size = kRingSize;
  info->default_rxportconf.burst_size = 32;
  info->default_txportconf.burst_size = 32;
  info->default_rxportconf.nb_queues = 1;
  info->default_txportconf.nb_queues = 1;
  info->speed_capa = RTE_ETH_LINK_SPEED_10G;
  return 0;
}

int xenpv_mtu_set(struct rte_eth_dev* dev, uint16_t mtu) {
  xenpv_internals* p = priv(dev);
  if (mtu < RTE_ETHER_MIN_MTU || mtu > max_mtu(p)) {
    XENPV_LOG(ERR, "%s: MTU %u is outside %u..%u (the backend %s feature-sg)", dev->data->name, mtu,
              RTE_ETHER_MIN_MTU, max_mtu(p), p->features.sg ? "offers" : "lacks");
    return -EINVAL;
  }
  p->mtu = mtu;
  return 0;
}

int xenpv_mac_addr_set(struct rte_eth_dev* dev, struct rte_ether_addr* addr) {
  priv(dev)->mac = *addr;
  return 0;
}

int xenpv_rx_queue_setup(struct rte_eth_dev* dev, uint16_t qid, uint16_t nb_desc,
                         unsigned int socket, const struct rte_eth_rxconf*,
                         struct rte_mempool* mp) {
  xenpv_internals* p = priv(dev);
  if (nb_desc > kRingSize) {
    XENPV_LOG(ERR, "%s: rx queue %u: %u descriptors asked, the netif ring has %u", dev->data->name,
              qid, nb_desc, kRingSize);
    return -EINVAL;
  }
  rte_free(dev->data->rx_queues[qid]);
  auto* q = static_cast<xenpv_rxq*>(rte_zmalloc_socket(
      "xenpv_rxq", sizeof(xenpv_rxq), RTE_CACHE_LINE_SIZE, static_cast<int>(socket)));
  if (!q) return -ENOMEM;
  new (q) xenpv_rxq();
  q->pmd = p;
  q->mp = mp;
  q->qid = qid;
  q->port_id = dev->data->port_id;
  dev->data->rx_queues[qid] = q;
  return 0;
}

int xenpv_tx_queue_setup(struct rte_eth_dev* dev, uint16_t qid, uint16_t nb_desc,
                         unsigned int socket, const struct rte_eth_txconf*) {
  xenpv_internals* p = priv(dev);
  if (nb_desc > kRingSize) {
    XENPV_LOG(ERR, "%s: tx queue %u: %u descriptors asked, the netif ring has %u", dev->data->name,
              qid, nb_desc, kRingSize);
    return -EINVAL;
  }
  rte_free(dev->data->tx_queues[qid]);
  auto* q = static_cast<xenpv_txq*>(rte_zmalloc_socket(
      "xenpv_txq", sizeof(xenpv_txq), RTE_CACHE_LINE_SIZE, static_cast<int>(socket)));
  if (!q) return -ENOMEM;
  new (q) xenpv_txq();
  q->pmd = p;
  q->qid = qid;
  dev->data->tx_queues[qid] = q;
  return 0;
}

void xenpv_rx_queue_release(struct rte_eth_dev* dev, uint16_t qid) {
  rte_free(dev->data->rx_queues[qid]);
  dev->data->rx_queues[qid] = nullptr;
}

void xenpv_tx_queue_release(struct rte_eth_dev* dev, uint16_t qid) {
  rte_free(dev->data->tx_queues[qid]);
  dev->data->tx_queues[qid] = nullptr;
}

// Rx interrupts: enable = event mode (notifications armed, the app sleeps on
// the queue's event fd); disable = poll mode (notifications disarmed).
int xenpv_rx_queue_intr_enable(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_internals* p = priv(dev);
  if (!p->dev || qid >= p->dev->num_queues()) return -EINVAL;
  p->dev->queue(qid).arm();  // makes the fd readable if work is waiting
  return 0;
}

int xenpv_rx_queue_intr_disable(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_internals* p = priv(dev);
  if (!p->dev || qid >= p->dev->num_queues()) return -EINVAL;
  p->dev->queue(qid).set_mode(xpv::QueueMode::kPoll);
  return 0;
}

// Filled field by field: g++ warns about designated initializers that leave
// members out, and eth_dev_ops has dozens we do not implement.
constexpr struct eth_dev_ops make_ops() {
  struct eth_dev_ops o {};
  o.dev_configure = xenpv_dev_configure;
  o.dev_start = xenpv_dev_start;
  o.dev_stop = xenpv_dev_stop;
  o.dev_close = xenpv_dev_close;
  o.dev_reset = xenpv_dev_reset;
  o.link_update = xenpv_link_update;
  o.promiscuous_enable = xenpv_promiscuous;
  o.promiscuous_disable = xenpv_promiscuous;
  o.allmulticast_enable = xenpv_promiscuous;
  o.allmulticast_disable = xenpv_promiscuous;
  o.mac_addr_set = xenpv_mac_addr_set;
  o.mtu_set = xenpv_mtu_set;
  o.stats_get = xenpv_stats_get;
  o.stats_reset = xenpv_stats_reset;
  o.xstats_get = xenpv_xstats_get;
  o.xstats_reset = xenpv_stats_reset;
  o.xstats_get_names = xenpv_xstats_get_names;
  o.dev_infos_get = xenpv_dev_infos_get;
  o.rx_queue_setup = xenpv_rx_queue_setup;
  o.rx_queue_release = xenpv_rx_queue_release;
  o.rx_queue_intr_enable = xenpv_rx_queue_intr_enable;
  o.rx_queue_intr_disable = xenpv_rx_queue_intr_disable;
  o.tx_queue_setup = xenpv_tx_queue_setup;
  o.tx_queue_release = xenpv_tx_queue_release;
  return o;
}
constexpr struct eth_dev_ops xenpv_ops = make_ops();

// ---- probe / remove ---------------------------------------------------------------

int xenpv_probe(struct rte_vdev_device* vdev) {
  const char* name = rte_vdev_device_name(vdev);
  const char* params = rte_vdev_device_args(vdev);
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
    XENPV_LOG(ERR, "%s: secondary processes are not supported", name);
    return -ENOTSUP;
  }
  xenpv_args args;
  std::string err;
  if (!xenpv_parse_args(params, &args, &err)) {
    XENPV_LOG(ERR, "%s: %s", name, err.c_str());
    return -EINVAL;
  }
  // Library messages go to DPDK's log.
  xpv::set_log_sink([](xpv::LogLevel l, std::string_view m) {
    const uint32_t lvl = l == xpv::LogLevel::kError     ? RTE_LOG_ERR
                         : l == xpv::LogLevel::kWarning ? RTE_LOG_WARNING
                         : l == xpv::LogLevel::kInfo    ? RTE_LOG_INFO
                                                        : RTE_LOG_DEBUG;
    rte_log(lvl, xenpv_logtype, "net_xenpv: %.*s\n", static_cast<int>(m.size()), m.data());
  });
  struct rte_eth_dev* dev = rte_eth_vdev_allocate(vdev, sizeof(xenpv_internals));
  if (!dev) return -ENOMEM;
  auto* p = new (dev->data->dev_private) xenpv_internals();
  p->args = args;
  p->port_id = dev->data->port_id;
  dev->dev_ops = &xenpv_ops;
  dev->rx_pkt_burst = xenpv_rx_burst;
  dev->tx_pkt_burst = xenpv_tx_burst;
  // Open the vif now: it checks the platform and reads the backend's limits
  // (queues, MTU) that dev_infos_get reports. Connecting waits for start.
  int rc = open_device(dev, args.queues ? args.queues : 1);
  if (rc < 0) {
    p->~xenpv_internals();
    rte_eth_dev_release_port(dev);  // frees dev_private
    return rc;
  }
  const xpv::DeviceInfo& info = p->dev->info();
  std::memcpy(p->mac.addr_bytes, info.mac.data(), RTE_ETHER_ADDR_LEN);
  dev->data->mac_addrs = &p->mac;
  dev->data->promiscuous = 1;
  dev->data->all_multicast = 1;
  dev->data->mtu = static_cast<uint16_t>(std::min(info.mtu, max_mtu(p)));
  dev->data->dev_flags |= RTE_ETH_DEV_INTR_LSC | RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS;
  XENPV_LOG(INFO, "%s: vif %u of domain %u, backend %s (max %u queues, %s), mac %s", name, args.vif,
            info.self_domid, info.backend_path.c_str(), info.features.max_queues,
            info.features.sg ? "sg" : "no sg", xpv::to_string(info.mac).c_str());
  rte_eth_dev_probing_finish(dev);
  return 0;
}

int xenpv_remove(struct rte_vdev_device* vdev) {
  struct rte_eth_dev* dev = rte_eth_dev_allocated(rte_vdev_device_name(vdev));
  if (!dev) return 0;  // already closed and released
  if (dev->data->dev_private && rte_eal_process_type() == RTE_PROC_PRIMARY) {
    // dev_close destroys the private data; ethdev then releases the port.
    xenpv_dev_close(dev);
  }
  return rte_eth_dev_release_port(dev);
}

constexpr struct rte_vdev_driver make_driver() {
  struct rte_vdev_driver d {};
  d.probe = xenpv_probe;
  d.remove = xenpv_remove;
  return d;
}
// Constant-initialised: the registration constructor below may run before
// any dynamic initialiser of this file.
constinit struct rte_vdev_driver xenpv_driver = make_driver();

}  // namespace

RTE_PMD_REGISTER_VDEV(net_xenpv, xenpv_driver);
RTE_PMD_REGISTER_PARAM_STRING(net_xenpv,
                              "vif=<int> backend=xen|sim:<path> queues=<int> "
                              "mac=<xx:xx:xx:xx:xx:xx> split=0|1");
