// SPDX-License-Identifier: MIT
// net_xenpv: probe/remove and the eth_dev_ops, each named after the ethdev
// operation it implements.
#include <rte_bus_vdev.h>
#include <rte_interrupts.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <bus_vdev_driver.h>
#include <ethdev_vdev.h>

#include <cstring>
#include <iterator>
#include <new>
#include <utility>

#include "xen/sched_poll.h"
#include "xenpv.h"
#include "xpv/log.h"

RTE_LOG_REGISTER(xenpv_logtype, pmd.net.xenpv, NOTICE);

namespace {

xenpv_internals* priv(struct rte_eth_dev* dev) {
  return static_cast<xenpv_internals*>(dev->data->dev_private);
}

uint32_t max_mtu(const xenpv_internals* p) {
  // Without feature-sg a packet must fit one slot (Linux netfront: ETH_DATA_LEN);
  // with it, netif.h's XEN_NETIF_MAX_TX_SIZE bounds the frame.
  return p->features.sg ? xpv::kMaxPacketLen - kXenpvL2Overhead : RTE_ETHER_MTU;
}

void set_mtu(xenpv_internals* p, uint32_t mtu) {
  p->max_frame.store(mtu + kXenpvL2Overhead, std::memory_order_relaxed);
}

// ---- link state and LSC events -----------------------------------------------
//
// Only the control callback on EAL's interrupt thread runs the library's
// control path while the port is started, and it raises one LSC event per
// link change the library reported (Device::set_link_callback), in order.
// link_update reads what was reported; it never consumes a change. Changes
// the application causes (start, stop, reset) are not events: they are
// reported by rte_eth_link_get, as virtio does.

void set_link(struct rte_eth_dev* dev, bool up) {
  const xenpv_internals* p = priv(dev);
  struct rte_eth_link link {};
  link.link_speed = up ? p->args.speed : RTE_ETH_SPEED_NUM_NONE;
  link.link_duplex = RTE_ETH_LINK_FULL_DUPLEX;
  link.link_autoneg = RTE_ETH_LINK_FIXED;
  link.link_status = up ? RTE_ETH_LINK_UP : RTE_ETH_LINK_DOWN;
  (void)rte_eth_linkstatus_set(dev, &link);
}

bool same_features(const xpv::BackendFeatures& a, const xpv::BackendFeatures& b) {
  return a.rx_copy == b.rx_copy && a.sg == b.sg &&
         a.split_event_channels == b.split_event_channels && a.max_queues == b.max_queues &&
         a.gso_tcpv4 == b.gso_tcpv4 && a.gso_tcpv6 == b.gso_tcpv6 &&
         a.ipv6_csum_offload == b.ipv6_csum_offload && a.ctrl_ring == b.ctrl_ring;
}

// What the backend provides is read again at every connect (a vif detached
// and attached again may come back with another mac, a restarted backend
// with other features). The port's mac follows the backend's unless the
// application chose one; features and the queue limit are what
// dev_infos_get reports, and when they changed under a configured port the
// application is told with RTE_ETH_EVENT_INTR_RESET (reconfigure, or
// rte_eth_dev_reset). Called with control_mu held, after a connect.
void adopt_backend_values(xenpv_internals* p) {
  const xpv::DeviceInfo& info = p->dev->info();
  if (info.mac != p->backend_mac) {
    XENPV_LOG(WARNING, "port %u: the backend's mac is now %s (was %s); %s", p->port_id,
              xpv::to_string(info.mac).c_str(), xpv::to_string(p->backend_mac).c_str(),
              p->mac_chosen_by_app ? "the port keeps the mac the application chose"
                                   : "the port's mac follows it");
    p->backend_mac = info.mac;
    if (!p->mac_chosen_by_app) {
      std::memcpy(p->mac.addr_bytes, info.mac.data(), RTE_ETHER_ADDR_LEN);
      p->filter.mac.store(xenpv_rx_filter::mac_key(p->mac.addr_bytes), std::memory_order_relaxed);
    }
  }
  if (!same_features(info.features, p->features)) {
    XENPV_LOG(WARNING,
              "port %u: the backend's features changed since the port was configured (max "
              "queues %u -> %u, sg %d -> %d); raising a reset event",
              p->port_id, p->features.max_queues, info.features.max_queues, p->features.sg,
              info.features.sg);
    p->features = info.features;
    p->reset_event_pending = true;
  }
}

// The library's link callback: runs inside connect/poll_control/close, all
// called with control_mu held.
void note_link_change(xenpv_internals* p, const xpv::DeviceEvent& e) {
  ++p->link_changes_pending;
  p->link_up_latest = e.link == xpv::LinkState::kUp;
  if (e.link == xpv::LinkState::kUp) adopt_backend_values(p);
}

// Raises the pending link changes one at a time: the link status is set under
// control_mu (so that a concurrent stop cannot be overtaken), the event is
// raised without it (the application's callback may call ethdev functions).
void raise_link_events(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  for (;;) {
    bool up = false;
    std::string reason;
    {
      std::lock_guard lk(p->control_mu);
      if (!p->started || p->link_changes_pending == 0) {
        p->link_changes_pending = 0;
        return;
      }
      // Changes alternate: the oldest pending one is the latest state when
      // an odd number is pending.
      up = (p->link_changes_pending % 2 == 1) == p->link_up_latest;
      --p->link_changes_pending;
      set_link(dev, up);
      if (!up && p->dev) reason = ": " + p->dev->last_down_reason();
    }
    XENPV_LOG(INFO, "port %u: link %s%s", dev->data->port_id, up ? "up" : "down", reason.c_str());
    if (dev->data->dev_conf.intr_conf.lsc) {
      rte_eth_dev_callback_process(dev, RTE_ETH_EVENT_INTR_LSC, nullptr);
    }
    if (up) {
      bool reset = false;
      {
        std::lock_guard lk(p->control_mu);
        reset = std::exchange(p->reset_event_pending, false);
      }
      if (reset) rte_eth_dev_callback_process(dev, RTE_ETH_EVENT_INTR_RESET, nullptr);
    }
  }
}

// ---- the control path on the EAL interrupt thread -------------------------

// The device's control fd became readable: xenstore watch events (backend
// state), a reconnect timer, or a queue that caught a protocol violation.
void control_callback(void* arg) {
  auto* dev = static_cast<struct rte_eth_dev*>(arg);
  xenpv_internals* p = priv(dev);
  {
    // Always let the device drain what made its fd readable: the fd is level
    // triggered, and an undrained one would keep this interrupt thread
    // spinning (and rte_intr_callback_unregister_sync waiting on it).
    std::lock_guard lk(p->control_mu);
    if (p->dev) p->dev->poll_control();
  }
  raise_link_events(dev);
}

// Must not be called with control_mu held: rte_intr_callback_unregister_sync
// waits until a running control_callback returned, and that takes control_mu.
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

// Closes the library device (if any). The control callback is uninstalled
// first, outside control_mu.
void close_device(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  xenpv_idle_forget_queues();  // before the library's queues are destroyed
  control_uninstall(dev);
  std::lock_guard lk(p->control_mu);
  p->dev.reset();  // its close reports a link change: drop it, nobody is told
  p->link_changes_pending = 0;
}

// The backend filters multicast for the port where it can (netif.h
// feature-dynamic-multicast-control): only the listed groups while neither
// promiscuous nor all-multicast is on, everything otherwise. The RX burst's
// software filter stays the rule; this spares the copies of what it would
// drop. A failure leaves the backend delivering everything (logged).
// control_mu held (or the port not yet visible).
void backend_multicast(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (!p->dev || !p->features.multicast_control || !p->features.dynamic_multicast_control) return;
  const bool on = !p->filter.promiscuous.load(std::memory_order_relaxed) &&
                  !p->filter.all_multicast.load(std::memory_order_relaxed);
  if (xpv::Status s = p->dev->set_multicast_filter(on, p->mc_list); s.failed())
    XENPV_LOG(WARNING, "%s: the backend's multicast filter: %s", dev->data->name,
              s.message().c_str());
}

// Opens (or re-opens) the library device with `queues` queues; with `lro`
// it takes GSO packets (feature-gso-tcpv4/-tcpv6 written at connect).
int open_device(struct rte_eth_dev* dev, uint32_t queues, bool lro) {
  xenpv_internals* p = priv(dev);
  close_device(dev);
  xpv::DeviceConfig cfg;
  cfg.platform = p->args.backend;
  cfg.vif = p->args.vif;
  cfg.queues = queues;
  cfg.mac = p->args.mac;
  cfg.split_event_channels = p->args.split_event_channels;
  cfg.mode = xpv::QueueMode::kPoll;
  cfg.rx_csum_offload = p->args.csum;
  cfg.rx_zero_copy = p->args.zerocopy;
  cfg.rx_gso = lro;
  auto d = xpv::Device::open(cfg);
  if (!d) {
    XENPV_LOG(ERR, "%s: %s", dev->data->name, d.error().message.c_str());
    return -d.error().code;
  }
  {
    std::lock_guard lk(p->control_mu);
    p->dev = std::move(*d);
    p->dev->set_link_callback([p](const xpv::DeviceEvent& e) { note_link_change(p, e); });
    p->features = p->dev->info().features;
    backend_multicast(dev);
    // The RSS of the port, kept across re-opens (checked when it was set).
    if (xpv::Status s = p->dev->set_rss(p->rss); s.failed()) {
      XENPV_LOG(WARNING, "%s: RSS not kept: %s", dev->data->name, s.message().c_str());
      p->rss = {};
    }
    p->lro = lro;
  }
  return control_install(dev);
}

// The library's counters of queue `i` as the port reports them: what the
// MAC filter dropped was never received by the port.
xpv::QueueCounters port_counters(struct rte_eth_dev* dev, uint32_t i) {
  xpv::QueueCounters c = priv(dev)->dev->queue(i).counters();
  if (i < dev->data->nb_rx_queues && dev->data->rx_queues[i]) {
    const auto* rxq = static_cast<const xenpv_rxq*>(dev->data->rx_queues[i]);
    const uint64_t n = rxq->filtered_unicast.get() + rxq->filtered_multicast.get();
    c.rx_packets -= std::min(c.rx_packets, n);
    c.rx_bytes -= std::min(c.rx_bytes, rxq->filtered_bytes.get());
  }
  return c;
}

// netif queues are TX/RX ring pairs, and netback spreads received traffic
// over every one: there are as many as rx queues, so that each is polled
// (only a port without rx queues has one per tx queue). More tx queues than
// rx queues (l3fwd-power opens one per lcore) share them: tx queue i sends on
// netif queue i % n, serialised by the library's per-queue lock.
uint32_t netif_queues(const struct rte_eth_dev* dev) {
  return dev->data->nb_rx_queues ? dev->data->nb_rx_queues : dev->data->nb_tx_queues;
}
uint32_t netif_queue_of_txq(const xenpv_internals* p, uint32_t txq) {
  return txq % p->dev->num_queues();
}

xenpv_rxq* rxq_of(struct rte_eth_dev* dev, uint32_t i) {
  return i < dev->data->nb_rx_queues ? static_cast<xenpv_rxq*>(dev->data->rx_queues[i]) : nullptr;
}
xenpv_txq* txq_of(struct rte_eth_dev* dev, uint32_t i) {
  return i < dev->data->nb_tx_queues ? static_cast<xenpv_txq*>(dev->data->tx_queues[i]) : nullptr;
}

// ---- eth_dev_ops ----------------------------------------------------------------

int xenpv_dev_configure(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  const uint32_t nrx = dev->data->nb_rx_queues;
  const uint32_t ntx = dev->data->nb_tx_queues;
  const uint32_t want = netif_queues(dev);
  if (want == 0) return -EINVAL;
  if (ntx > nrx && nrx > 0) {
    XENPV_LOG(INFO,
              "%s: %u tx queues share the %u netif queue(s) of the %u rx queue(s) "
              "(tx queue i uses netif queue i %% %u)",
              dev->data->name, ntx, want, nrx, want);
  }
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
  // ethdev validated rxmode.mtu against max_mtu and made it the port's MTU,
  // and the offloads against dev_infos_get's.
  set_mtu(p, dev->data->mtu);
  const bool lro = (dev->data->dev_conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TCP_LRO) != 0;
  if (!p->dev || p->dev->num_queues() != want || p->lro != lro) {
    int rc = open_device(dev, want, lro);
    if (rc < 0) return rc;
  }
  return xenpv_rss_configure(dev);
}

void attach_queues(struct rte_eth_dev* dev, bool start) {
  xenpv_internals* p = priv(dev);
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    xenpv_rxq* q = rxq_of(dev, i);
    const bool run = start && q && !q->deferred_start;
    if (q) q->q.store(run ? &p->dev->queue(i) : nullptr, std::memory_order_release);
    dev->data->rx_queue_state[i] = run ? RTE_ETH_QUEUE_STATE_STARTED : RTE_ETH_QUEUE_STATE_STOPPED;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    xenpv_txq* q = txq_of(dev, i);
    const bool run = start && q && !q->deferred_start;
    if (q) {
      q->q.store(run ? &p->dev->queue(netif_queue_of_txq(p, i)) : nullptr,
                 std::memory_order_release);
    }
    dev->data->tx_queue_state[i] = run ? RTE_ETH_QUEUE_STATE_STARTED : RTE_ETH_QUEUE_STATE_STOPPED;
  }
}

int xenpv_dev_start(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (!p->dev) {
    // The last configure or reset could not open the vif (e.g. the backend
    // was away): try again now.
    int rc = open_device(dev, netif_queues(dev),
                         (dev->data->dev_conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TCP_LRO) != 0);
    if (rc < 0) return rc;
  }
  {
    std::lock_guard lk(p->control_mu);
    xpv::Status s = p->dev->connect();
    if (s.failed()) {
      XENPV_LOG(ERR, "%s: %s", dev->data->name, s.message().c_str());
      return -s.code();
    }
    p->started = true;
    // The link came up because the application started the port: reported
    // by rte_eth_link_get, not as an event (adopt_backend_values ran in it,
    // and what dev_infos_get reports from now on is what it found).
    p->link_changes_pending = 0;
    p->reset_event_pending = false;
    set_link(dev, p->dev->link() == xpv::LinkState::kUp);
  }
  dev->data->scattered_rx = 1;  // frames larger than an mbuf arrive as chains
  attach_queues(dev, true);
  if (dev->data->dev_conf.intr_conf.rxq) {
    int rc = xenpv_rx_intr_install(dev);
    if (rc < 0) {
      XENPV_LOG(ERR, "%s: cannot set up rx interrupts: %s", dev->data->name, rte_strerror(-rc));
      return rc;
    }
  }
  const xpv::DeviceInfo& info = p->dev->info();
  XENPV_LOG(INFO, "%s: connected to %s (domain %u, %u queue(s), %s event channels)",
            dev->data->name, info.backend_path.c_str(), info.self_domid, info.queues,
            info.split_event_channels ? "split" : "shared");
  return 0;
}

int xenpv_dev_stop(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  attach_queues(dev, false);
  xenpv_rx_intr_uninstall(dev);
  std::lock_guard lk(p->control_mu);
  p->started = false;
  // Closing/Closed; every granted page is accounted for. Transmitted mbufs
  // were copied and freed in tx burst, and received data is copied into
  // fresh mbufs, so no mbuf of the application is held here.
  if (p->dev) p->dev->close();
  p->link_changes_pending = 0;
  set_link(dev, false);
  return 0;
}

// Frees everything the port holds: the library device (its grants and
// event channels), the control interrupt, the queues and the private data.
int xenpv_dev_close(struct rte_eth_dev* dev) {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) return 0;
  xenpv_internals* p = priv(dev);
  if (p->started) xenpv_dev_stop(dev);
  close_device(dev);
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    xenpv_rxq* q = rxq_of(dev, i);
    if (q) q->~xenpv_rxq();
    rte_free(q);
    dev->data->rx_queues[i] = nullptr;
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    xenpv_txq* q = txq_of(dev, i);
    if (q) q->~xenpv_txq();
    rte_free(q);
    dev->data->tx_queues[i] = nullptr;
  }
  dev->data->mac_addrs = nullptr;  // part of dev_private
  p->~xenpv_internals();
  return 0;
}

int xenpv_dev_reset(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  if (p->started) xenpv_dev_stop(dev);
  const uint32_t queues = p->dev
                              ? p->dev->num_queues()
                              : std::max({p->args.queues, uint32_t{dev->data->nb_rx_queues}, 1u});
  return open_device(dev, queues, p->lro);
}

int xenpv_link_update(struct rte_eth_dev* dev, int /*wait_to_complete*/) {
  xenpv_internals* p = priv(dev);
  // What the control path reported last, in dev->data->dev_link: a change
  // not raised yet is left to raise_link_events, which sets the status with
  // the event.
  std::lock_guard lk(p->control_mu);
  if (!p->started) set_link(dev, false);
  return 0;
}

// ---- the MAC filter -------------------------------------------------------------

int xenpv_promiscuous_enable(struct rte_eth_dev* dev) {
  priv(dev)->filter.promiscuous.store(true, std::memory_order_relaxed);
  std::lock_guard lk(priv(dev)->control_mu);
  backend_multicast(dev);
  return 0;
}
int xenpv_promiscuous_disable(struct rte_eth_dev* dev) {
  priv(dev)->filter.promiscuous.store(false, std::memory_order_relaxed);
  std::lock_guard lk(priv(dev)->control_mu);
  backend_multicast(dev);
  return 0;
}
int xenpv_allmulticast_enable(struct rte_eth_dev* dev) {
  priv(dev)->filter.all_multicast.store(true, std::memory_order_relaxed);
  std::lock_guard lk(priv(dev)->control_mu);
  backend_multicast(dev);
  return 0;
}
int xenpv_allmulticast_disable(struct rte_eth_dev* dev) {
  priv(dev)->filter.all_multicast.store(false, std::memory_order_relaxed);
  std::lock_guard lk(priv(dev)->control_mu);
  backend_multicast(dev);
  return 0;
}

int xenpv_set_mc_addr_list(struct rte_eth_dev* dev, struct rte_ether_addr* set, uint32_t n) {
  xenpv_internals* p = priv(dev);
  if (n > xenpv_rx_filter::kMaxMulticast) {
    XENPV_LOG(ERR, "%s: %u multicast addresses, the filter holds at most %u", dev->data->name, n,
              xenpv_rx_filter::kMaxMulticast);
    return -ENOSPC;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (!rte_is_multicast_ether_addr(&set[i])) {
      XENPV_LOG(ERR, "%s: multicast list entry %u is not a multicast address", dev->data->name, i);
      return -EINVAL;
    }
  }
  std::lock_guard lk(p->control_mu);  // one writer of the sequence lock
  p->filter.set_multicast(set, n);
  p->mc_list.clear();
  for (uint32_t i = 0; i < n; ++i) {
    xpv::MacAddr m;
    std::memcpy(m.data(), set[i].addr_bytes, 6);
    p->mc_list.push_back(m);
  }
  backend_multicast(dev);
  return 0;
}

int xenpv_mac_addr_set(struct rte_eth_dev* dev, struct rte_ether_addr* addr) {
  xenpv_internals* p = priv(dev);
  std::lock_guard lk(p->control_mu);  // adopt_backend_values may write the mac too
  // ethdev replays the port's own mac at every start (eth_dev_mac_restore
  // passes dev->data->mac_addrs): not a choice of the application.
  if (addr != dev->data->mac_addrs) p->mac_chosen_by_app = true;
  p->mac = *addr;
  p->filter.mac.store(xenpv_rx_filter::mac_key(addr->addr_bytes), std::memory_order_relaxed);
  return 0;
}

int xenpv_mtu_set(struct rte_eth_dev* dev, uint16_t mtu) {
  xenpv_internals* p = priv(dev);
  if (mtu < RTE_ETHER_MIN_MTU || mtu > max_mtu(p)) {
    XENPV_LOG(ERR, "%s: MTU %u is outside %u..%u (the backend %s feature-sg)", dev->data->name, mtu,
              RTE_ETHER_MIN_MTU, max_mtu(p), p->features.sg ? "offers" : "lacks");
    return -EINVAL;
  }
  set_mtu(p, mtu);
  return 0;
}

// ---- statistics -------------------------------------------------------------------

int xenpv_stats_get(struct rte_eth_dev* dev, struct rte_eth_stats* st) {
  xenpv_internals* p = priv(dev);
  if (!p->dev) return 0;
  for (uint32_t i = 0; i < p->dev->num_queues(); ++i) {
    const xpv::QueueCounters c = port_counters(dev, i);
    uint64_t refused = 0;
    if (const xenpv_txq* t = txq_of(dev, i)) refused = t->refused_mtu.get() + t->refused_segs.get();
    st->ipackets += c.rx_packets;
    st->ibytes += c.rx_bytes;
    st->opackets += c.tx_packets;
    st->obytes += c.tx_bytes;
    st->imissed += c.rx_dropped;
    st->ierrors += c.rx_errors;
    st->oerrors += c.tx_errors + c.tx_dropped + refused;
    if (const xenpv_rxq* r = rxq_of(dev, i)) st->rx_nombuf += r->nombuf.get();
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
#define XENPV_RESET(name, doc) q->name.reset();
  for (uint16_t i = 0; i < dev->data->nb_rx_queues; ++i) {
    if (xenpv_rxq* q = rxq_of(dev, i)) {
      XENPV_RXQ_COUNTERS(XENPV_RESET)
      q->filtered_bytes.reset();
    }
  }
  for (uint16_t i = 0; i < dev->data->nb_tx_queues; ++i) {
    if (xenpv_txq* q = txq_of(dev, i)) {
      XENPV_TXQ_COUNTERS(XENPV_RESET)
    }
  }
#undef XENPV_RESET
  return 0;
}

// xstats: every library counter of every queue, named like DPDK drivers
// name per-queue counters ("rx_q0_packets", "tx_q1_bytes", "q0_events"),
// then the PMD's own per-queue counters. Each name once: the port does not
// set RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS (its rx_qN_packets... would repeat
// the library's).
struct PmdCounter {
  const char* name;
  xenpv_counter xenpv_rxq::*rx;
  xenpv_counter xenpv_txq::*tx;
};
constexpr PmdCounter kPmdCounters[] = {
#define XENPV_RX(name, doc) {"rx_q%u_" #name, &xenpv_rxq::name, nullptr},
    XENPV_RXQ_COUNTERS(XENPV_RX)
#undef XENPV_RX
#define XENPV_TX(name, doc) {"tx_q%u_" #name, nullptr, &xenpv_txq::name},
        XENPV_TXQ_COUNTERS(XENPV_TX)
#undef XENPV_TX
};
constexpr unsigned kPerQueueXstats = xpv::kQueueCounterCount + std::size(kPmdCounters);

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
  const unsigned total = nq * kPerQueueXstats;
  if (!names || size < total) return static_cast<int>(total);
  unsigned k = 0;
  for (uint32_t q = 0; q < nq; ++q) {
    for (const auto& ci : xpv::kQueueCounterInfo) {
      std::snprintf(names[k++].name, RTE_ETH_XSTATS_NAME_SIZE, "%s", xstat_name(q, ci).c_str());
    }
    for (const auto& pc : kPmdCounters) {
      std::snprintf(names[k++].name, RTE_ETH_XSTATS_NAME_SIZE, pc.name, q);
    }
  }
  return static_cast<int>(total);
}

int xenpv_xstats_get(struct rte_eth_dev* dev, struct rte_eth_xstat* xs, unsigned int n) {
  xenpv_internals* p = priv(dev);
  const uint32_t nq = p->dev ? p->dev->num_queues() : 0;
  const unsigned total = nq * kPerQueueXstats;
  if (!xs || n < total) return static_cast<int>(total);
  unsigned k = 0;
  for (uint32_t q = 0; q < nq; ++q) {
    const xpv::QueueCounters c = port_counters(dev, q);
    for (const auto& ci : xpv::kQueueCounterInfo) {
      xs[k].id = k;
      xs[k].value = xpv::counter_value(c, ci);
      ++k;
    }
    const xenpv_rxq* r = rxq_of(dev, q);
    const xenpv_txq* t = txq_of(dev, q);
    for (const auto& pc : kPmdCounters) {
      xs[k].id = k;
      xs[k].value = pc.rx ? (r ? (r->*pc.rx).get() : 0) : (t ? (t->*pc.tx).get() : 0);
      ++k;
    }
  }
  return static_cast<int>(total);
}

// ---- device and queue information ----------------------------------------------

int xenpv_dev_infos_get(struct rte_eth_dev* dev, struct rte_eth_dev_info* info) {
  xenpv_internals* p = priv(dev);
  const uint16_t maxq = static_cast<uint16_t>(std::min(p->features.max_queues, xpv::kMaxQueues));
  info->max_mac_addrs = 1;
  info->max_hash_mac_addrs = 0;
  info->max_rx_pktlen = max_mtu(p) + kXenpvL2Overhead;
  info->min_mtu = RTE_ETHER_MIN_MTU;
  info->max_mtu = static_cast<uint16_t>(max_mtu(p));
  info->max_rx_queues = maxq;
  info->max_tx_queues = maxq;
  info->min_rx_bufsize = 64;
  // Multi-slot packets arrive as mbuf chains; chains are sent as multi-slot
  // packets (needs the backend's feature-sg). Checksum offload (csum=1, the
  // default) both ways: netback completes partial TCP/UDP checksums we send
  // (IPv6 ones only with its feature-ipv6-csum-offload; without it the TX
  // burst completes them), and hands us partial ones (RTE_MBUF_F_RX_L4_CKSUM_NONE,
  // or completed by the RX burst when the application did not enable the
  // offload). TSO with the backend's feature-gso-tcpv4 and -tcpv6; LRO: we
  // advertise feature-gso-tcpv4/-tcpv6 and netback hands over TCP packets of
  // up to 64 KiB.
  info->rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER;
  info->tx_offload_capa = p->features.sg ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
  if (p->args.csum) {
    info->rx_offload_capa |=
        RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_LRO;
    info->tx_offload_capa |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    if (p->features.sg && p->features.gso_tcpv4 && p->features.gso_tcpv6)
      info->tx_offload_capa |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
    info->max_lro_pkt_size = xpv::kMaxPacketLen;
  }
  // One ring size: ethdev refuses any other descriptor count with these
  // limits, and rte_eth_dev_adjust_nb_rx_tx_desc turns any into 256.
  for (struct rte_eth_desc_lim* l : {&info->rx_desc_lim, &info->tx_desc_lim}) {
    l->nb_max = kXenpvRingSize;
    l->nb_min = kXenpvRingSize;
    l->nb_align = 1;
  }
  // A packet takes at most XEN_NETIF_NR_SLOTS_MIN (18) slots: the TX burst
  // refuses longer chains (their segments are copied, so without feature-sg
  // a chain still goes out as one slot when it fits one page). A TSO packet
  // is copied into at most 17 pages whatever its chain: up to 64 mbufs.
  info->tx_desc_lim.nb_seg_max =
      (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO) ? kXenpvMaxTsoSegs : xpv::kMaxTxSlots;
  info->tx_desc_lim.nb_mtu_seg_max = xpv::kMaxTxSlots;
  info->default_rxportconf.ring_size = kXenpvRingSize;
  info->default_txportconf.ring_size = kXenpvRingSize;
  info->default_rxportconf.burst_size = 32;
  info->default_txportconf.burst_size = 32;
  info->default_rxportconf.nb_queues = 1;
  info->default_txportconf.nb_queues = 1;
  info->speed_capa = p->args.speed == RTE_ETH_SPEED_NUM_UNKNOWN
                         ? 0
                         : rte_eth_speed_bitflag(p->args.speed, RTE_ETH_LINK_FULL_DUPLEX);
  info->dev_capa = 0;  // no runtime queue setup
  xenpv_rss_infos(p, info);
  return 0;
}

void xenpv_rxq_info_get(struct rte_eth_dev* dev, uint16_t qid, struct rte_eth_rxq_info* qi) {
  const xenpv_rxq* q = rxq_of(dev, qid);
  if (!q) return;
  qi->mp = q->mp;
  qi->scattered_rx = 1;
  qi->nb_desc = kXenpvRingSize;
  qi->rx_buf_size = static_cast<uint16_t>(rte_pktmbuf_data_room_size(q->mp) - RTE_PKTMBUF_HEADROOM);
  qi->conf.rx_deferred_start = q->deferred_start;
  qi->conf.offloads = q->offloads;
}

void xenpv_txq_info_get(struct rte_eth_dev* dev, uint16_t qid, struct rte_eth_txq_info* qi) {
  const xenpv_txq* q = txq_of(dev, qid);
  if (!q) return;
  qi->nb_desc = kXenpvRingSize;
  qi->conf.tx_deferred_start = q->deferred_start;
  qi->conf.offloads = q->offloads;
}

int xenpv_rx_burst_mode_get(struct rte_eth_dev* dev, uint16_t, struct rte_eth_burst_mode* m) {
  const bool zc = static_cast<xenpv_internals*>(dev->data->dev_private)->args.zerocopy;
  m->flags = 0;
  std::snprintf(m->info, sizeof m->info, "%s",
                zc ? "Scalar, zero-copy: mbufs attached to the granted pages (copy when half "
                     "are held)"
                   : "Scalar, copy from granted pages into new mbufs");
  return 0;
}

int xenpv_tx_burst_mode_get(struct rte_eth_dev* dev, uint16_t, struct rte_eth_burst_mode* m) {
  const bool zc = static_cast<xenpv_internals*>(dev->data->dev_private)->args.zerocopy;
  m->flags = 0;
  std::snprintf(m->info, sizeof m->info, "%s",
                zc ? "Scalar, received pages by their grants, other mbufs copied into granted pages"
                   : "Scalar, copy from mbufs into granted pages");
  return 0;
}

// ---- descriptors: the netif ring's occupancy (Queue::ring_state) -----------

// The netif queue behind an rx/tx queue of a started port (stopped queues
// included: their ring is still there).
xpv::Queue* ring_of(const xenpv_internals* p, uint16_t qid) {
  if (!p->started || !p->dev || qid >= p->dev->num_queues()) return nullptr;
  return &p->dev->queue(qid);
}
xpv::Queue* tx_ring_of(const xenpv_internals* p, uint16_t qid) {
  if (!p->started || !p->dev) return nullptr;
  return &p->dev->queue(netif_queue_of_txq(p, qid));
}

// DPDK: the number of descriptors filled by the hardware, not yet processed.
uint32_t xenpv_rx_queue_count(void* queue) {
  const auto* rxq = static_cast<const xenpv_rxq*>(queue);
  xpv::Queue* q = ring_of(rxq->pmd, rxq->qid);
  return q ? q->ring_state().rx_done : 0;
}

// Offset 0 is the next slot the driver delivers: answered slots first (DONE),
// then the buffers posted to the backend (AVAIL), the rest not posted
// (UNAVAIL).
int xenpv_rx_descriptor_status(void* queue, uint16_t offset) {
  const auto* rxq = static_cast<const xenpv_rxq*>(queue);
  xpv::Queue* q = ring_of(rxq->pmd, rxq->qid);
  if (!q) return -ENODEV;
  const xpv::Queue::RingState s = q->ring_state();
  if (offset >= s.size) return -EINVAL;
  if (offset < s.rx_done) return RTE_ETH_RX_DESC_DONE;
  if (offset < s.rx_done + s.rx_posted) return RTE_ETH_RX_DESC_AVAIL;
  return RTE_ETH_RX_DESC_UNAVAIL;
}

// Offset 0 is where the next packet goes. Going round the ring from there,
// the free and the answered slots come first (DONE: reusable), and the last
// tx_in_flight slots are the requests the backend has not answered (FULL).
int xenpv_tx_descriptor_status(void* queue, uint16_t offset) {
  const auto* txq = static_cast<const xenpv_txq*>(queue);
  xpv::Queue* q = tx_ring_of(txq->pmd, txq->qid);
  if (!q) return -ENODEV;
  const xpv::Queue::RingState s = q->ring_state();
  if (offset >= s.size) return -EINVAL;
  return offset < s.size - s.tx_in_flight ? RTE_ETH_TX_DESC_DONE : RTE_ETH_TX_DESC_FULL;
}

// ---- queues --------------------------------------------------------------------------

// One descriptor count: the ring's (ethdev enforces dev_infos_get's limits
// before calling; this is the driver's own word on it).
bool ring_size_ok(struct rte_eth_dev* dev, const char* what, uint16_t qid, uint16_t nb_desc) {
  if (nb_desc == kXenpvRingSize) return true;
  XENPV_LOG(ERR, "%s: %s queue %u: %u descriptors asked, a netif ring has exactly %u",
            dev->data->name, what, qid, nb_desc, kXenpvRingSize);
  return false;
}

int xenpv_rx_queue_setup(struct rte_eth_dev* dev, uint16_t qid, uint16_t nb_desc,
                         unsigned int socket, const struct rte_eth_rxconf* conf,
                         struct rte_mempool* mp) {
  xenpv_internals* p = priv(dev);
  if (!ring_size_ok(dev, "rx", qid, nb_desc)) return -EINVAL;
  if (xenpv_rxq* old = rxq_of(dev, qid)) old->~xenpv_rxq();
  rte_free(dev->data->rx_queues[qid]);
  dev->data->rx_queues[qid] = nullptr;
  auto* q = static_cast<xenpv_rxq*>(rte_zmalloc_socket(
      "xenpv_rxq", sizeof(xenpv_rxq), RTE_CACHE_LINE_SIZE, static_cast<int>(socket)));
  if (!q) return -ENOMEM;
  new (q) xenpv_rxq();
  q->pmd = p;
  q->mp = mp;
  q->qid = qid;
  q->port_id = dev->data->port_id;
  q->idle_sleep_us = p->args.idle_sleep_us;
  q->idle_wait_in_xen = p->args.idle_wait_in_xen;
  q->deferred_start = conf && conf->rx_deferred_start;
  q->offloads = (conf ? conf->offloads : 0) | dev->data->dev_conf.rxmode.offloads;
  dev->data->rx_queues[qid] = q;
  return 0;
}

int xenpv_tx_queue_setup(struct rte_eth_dev* dev, uint16_t qid, uint16_t nb_desc,
                         unsigned int socket, const struct rte_eth_txconf* conf) {
  xenpv_internals* p = priv(dev);
  if (!ring_size_ok(dev, "tx", qid, nb_desc)) return -EINVAL;
  if (xenpv_txq* old = txq_of(dev, qid)) old->~xenpv_txq();
  rte_free(dev->data->tx_queues[qid]);
  dev->data->tx_queues[qid] = nullptr;
  auto* q = static_cast<xenpv_txq*>(rte_zmalloc_socket(
      "xenpv_txq", sizeof(xenpv_txq), RTE_CACHE_LINE_SIZE, static_cast<int>(socket)));
  if (!q) return -ENOMEM;
  new (q) xenpv_txq();
  q->pmd = p;
  q->qid = qid;
  q->deferred_start = conf && conf->tx_deferred_start;
  q->offloads = (conf ? conf->offloads : 0) | dev->data->dev_conf.txmode.offloads;
  dev->data->tx_queues[qid] = q;
  return 0;
}

void xenpv_rx_queue_release(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_idle_forget_queues();  // before the queue is freed
  if (xenpv_rxq* q = rxq_of(dev, qid)) q->~xenpv_rxq();
  rte_free(dev->data->rx_queues[qid]);
  dev->data->rx_queues[qid] = nullptr;
}

void xenpv_tx_queue_release(struct rte_eth_dev* dev, uint16_t qid) {
  if (xenpv_txq* q = txq_of(dev, qid)) q->~xenpv_txq();
  rte_free(dev->data->tx_queues[qid]);
  dev->data->tx_queues[qid] = nullptr;
}

// Queue start/stop (also how a deferred-start queue starts): a stopped
// queue's burst returns 0. Its netif ring stays connected: what arrives for a
// stopped RX queue waits in the ring, and the backend drops (and counts) what
// does not fit, as a NIC drops frames for a queue without descriptors.
int xenpv_rx_queue_start(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_internals* p = priv(dev);
  xenpv_rxq* q = rxq_of(dev, qid);
  xpv::Queue* ring = ring_of(p, qid);
  if (!q || !ring) return -EINVAL;
  q->q.store(ring, std::memory_order_release);
  dev->data->rx_queue_state[qid] = RTE_ETH_QUEUE_STATE_STARTED;
  return 0;
}

int xenpv_rx_queue_stop(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_rxq* q = rxq_of(dev, qid);
  if (!q) return -EINVAL;
  q->q.store(nullptr, std::memory_order_release);
  dev->data->rx_queue_state[qid] = RTE_ETH_QUEUE_STATE_STOPPED;
  return 0;
}

int xenpv_tx_queue_start(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_internals* p = priv(dev);
  xenpv_txq* q = txq_of(dev, qid);
  xpv::Queue* ring = tx_ring_of(p, qid);
  if (!q || !ring) return -EINVAL;
  q->q.store(ring, std::memory_order_release);
  dev->data->tx_queue_state[qid] = RTE_ETH_QUEUE_STATE_STARTED;
  return 0;
}

int xenpv_tx_queue_stop(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_txq* q = txq_of(dev, qid);
  if (!q) return -EINVAL;
  q->q.store(nullptr, std::memory_order_release);
  dev->data->tx_queue_state[qid] = RTE_ETH_QUEUE_STATE_STOPPED;
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
  o.promiscuous_enable = xenpv_promiscuous_enable;
  o.promiscuous_disable = xenpv_promiscuous_disable;
  o.allmulticast_enable = xenpv_allmulticast_enable;
  o.allmulticast_disable = xenpv_allmulticast_disable;
  o.set_mc_addr_list = xenpv_set_mc_addr_list;
  o.mac_addr_set = xenpv_mac_addr_set;
  o.mtu_set = xenpv_mtu_set;
  o.stats_get = xenpv_stats_get;
  o.stats_reset = xenpv_stats_reset;
  o.xstats_get = xenpv_xstats_get;
  o.xstats_reset = xenpv_stats_reset;
  o.xstats_get_names = xenpv_xstats_get_names;
  o.dev_infos_get = xenpv_dev_infos_get;
  o.rxq_info_get = xenpv_rxq_info_get;
  o.txq_info_get = xenpv_txq_info_get;
  o.rx_burst_mode_get = xenpv_rx_burst_mode_get;
  o.tx_burst_mode_get = xenpv_tx_burst_mode_get;
  o.rx_queue_start = xenpv_rx_queue_start;
  o.rx_queue_stop = xenpv_rx_queue_stop;
  o.tx_queue_start = xenpv_tx_queue_start;
  o.tx_queue_stop = xenpv_tx_queue_stop;
  o.rx_queue_setup = xenpv_rx_queue_setup;
  o.rx_queue_release = xenpv_rx_queue_release;
  o.rx_queue_intr_enable = xenpv_rx_queue_intr_enable;
  o.rx_queue_intr_disable = xenpv_rx_queue_intr_disable;
  o.tx_queue_setup = xenpv_tx_queue_setup;
  o.tx_queue_release = xenpv_tx_queue_release;
  o.tx_done_cleanup = xenpv_tx_done_cleanup;
  o.get_monitor_addr = xenpv_get_monitor_addr;
  o.rss_hash_update = xenpv_rss_hash_update;
  o.rss_hash_conf_get = xenpv_rss_hash_conf_get;
  o.reta_update = xenpv_reta_update;
  o.reta_query = xenpv_reta_query;
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
  // idle_wait=xen is refused now, with its cause, rather than turned into a
  // wait in the kernel at the first sleep.
  if (args.idle_wait_in_xen) {
    auto sp = xpv::SchedPoll::open();
    if (!sp) {
      XENPV_LOG(ERR, "%s: idle_wait=xen: %s", name, sp.error().message.c_str());
      return -ENOTSUP;
    }
  }
  // Library messages go to DPDK's log.
  xpv::set_log_sink([](xpv::LogLevel l, std::string_view m) {
    const uint32_t lvl = l == xpv::LogLevel::kError     ? RTE_LOG_ERR
                         : l == xpv::LogLevel::kWarning ? RTE_LOG_WARNING
                         : l == xpv::LogLevel::kInfo    ? RTE_LOG_INFO
                                                        : RTE_LOG_DEBUG;
    rte_log(lvl, xenpv_logtype, "net_xenpv: %.*s\n", static_cast<int>(m.size()), m.data());
  });
  // The library filters before its sink: follow pmd.net.xenpv's level
  // (--log-level=pmd.net.xenpv:debug shows the library's debug lines too).
  const int level = rte_log_get_level(xenpv_logtype);
  xpv::set_log_level(level >= static_cast<int>(RTE_LOG_DEBUG)     ? xpv::LogLevel::kDebug
                     : level >= static_cast<int>(RTE_LOG_INFO)    ? xpv::LogLevel::kInfo
                     : level >= static_cast<int>(RTE_LOG_WARNING) ? xpv::LogLevel::kWarning
                                                                  : xpv::LogLevel::kError);
  struct rte_eth_dev* dev = rte_eth_vdev_allocate(vdev, sizeof(xenpv_internals));
  if (!dev) return -ENOMEM;
  auto* p = new (dev->data->dev_private) xenpv_internals();
  p->args = args;
  p->port_id = dev->data->port_id;
  dev->dev_ops = &xenpv_ops;
  dev->rx_pkt_burst = xenpv_rx_burst;
  dev->tx_pkt_burst = xenpv_tx_burst;
  dev->tx_pkt_prepare = xenpv_tx_prepare;
  dev->rx_queue_count = xenpv_rx_queue_count;
  dev->rx_descriptor_status = xenpv_rx_descriptor_status;
  dev->tx_descriptor_status = xenpv_tx_descriptor_status;
  // Open the vif now: it checks the platform and reads the backend's limits
  // (queues, MTU) that dev_infos_get reports. Connecting waits for start.
  int rc = open_device(dev, args.queues ? args.queues : 1, /*lro=*/false);
  if (rc < 0) {
    p->~xenpv_internals();
    rte_eth_dev_release_port(dev);  // frees dev_private
    return rc;
  }
  const xpv::DeviceInfo& info = p->dev->info();
  std::memcpy(p->mac.addr_bytes, info.mac.data(), RTE_ETHER_ADDR_LEN);
  p->backend_mac = info.mac;
  p->mac_chosen_by_app = args.mac.has_value();
  dev->data->mac_addrs = &p->mac;
  p->filter.mac.store(xenpv_rx_filter::mac_key(p->mac.addr_bytes), std::memory_order_relaxed);
  // ethdev's defaults, which the filter starts from: promiscuous and
  // all-multicast off (ethdev replays both to the driver at every start).
  dev->data->promiscuous = 0;
  dev->data->all_multicast = 0;
  dev->data->mtu = static_cast<uint16_t>(std::min(info.mtu, max_mtu(p)));
  set_mtu(p, dev->data->mtu);
  dev->data->dev_flags |= RTE_ETH_DEV_INTR_LSC;
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

// The multicast list's sequence lock. One writer at a time (control_mu);
// readers retry while the sequence is odd or moved during their read.
void xenpv_rx_filter::set_multicast(const struct rte_ether_addr* set, uint32_t n) {
  const uint32_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);
  // Release fence: readers that see an entry written below also see the
  // odd sequence number (pairs with their acquire fence).
  std::atomic_thread_fence(std::memory_order_release);
  for (uint32_t i = 0; i < n; ++i)
    multicast[i].store(mac_key(set[i].addr_bytes), std::memory_order_relaxed);
  nb_multicast.store(n, std::memory_order_relaxed);
  seq.store(s + 2, std::memory_order_release);  // publishes the list
}

bool xenpv_rx_filter::multicast_listed(uint64_t key) const {
  for (;;) {
    const uint32_t s = seq.load(std::memory_order_acquire);
    if (s & 1) {
      rte_pause();
      continue;
    }
    bool found = false;
    const uint32_t n = std::min(nb_multicast.load(std::memory_order_relaxed), kMaxMulticast);
    for (uint32_t i = 0; i < n && !found; ++i)
      found = multicast[i].load(std::memory_order_relaxed) == key;
    // Acquire fence: the entries were read before the sequence is read again.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq.load(std::memory_order_relaxed) == s) return found;
  }
}

#define XENPV_PARAM_STRING                                                \
  "vif=<int> backend=xen|sim:<path> queues=<int> "                        \
  "mac=<xx:xx:xx:xx:xx:xx> split=0|1 speed=<Mbps> csum=0|1 zerocopy=0|1 " \
  "idle_sleep=<us> idle_wait=kernel|xen"
RTE_PMD_REGISTER_VDEV(net_xenpv, xenpv_driver);
RTE_PMD_REGISTER_PARAM_STRING(net_xenpv, XENPV_PARAM_STRING);

// dpdk-pmdinfo.py lists a driver from a "PMD_INFO_STRING=<json>" string in the
// .rodata of the shared object (name, params, pci_ids). DPDK's own build
// generates it for in-tree drivers (buildtools/pmdinfogen.py, not shipped by
// Debian); an out-of-tree driver writes it, from the same strings as above.
[[gnu::used]] static const char xenpv_pmd_info[] =
    "PMD_INFO_STRING= {\"name\": \"net_xenpv\", \"params\": \"" XENPV_PARAM_STRING
    "\", \"pci_ids\": []}";
