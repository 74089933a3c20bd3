// SPDX-License-Identifier: MIT
// net_xenpv: how an application waits for packets instead of polling.
//
//  - Rx interrupts (rte_eth_dev_rx_intr_enable/disable, l3fwd-power's
//    --interrupt-only): each queue's event fd is an efd of dev->intr_handle.
//    enable = the library's event mode armed for received packets only;
//    disable = poll mode, which first takes any event that fired so that the
//    next enable sleeps on a fresh edge (EAL watches the efds edge-triggered).
//  - Power-management monitor (rte_power_pmd_mgmt monitor mode): the RX ring's
//    response producer is the address to watch (ring.h: the backend moves
//    rsp_prod when it publishes responses).
//  - tx_done_cleanup: runs the TX response handler now.
#include <rte_interrupts.h>
#include <rte_power_intrinsics.h>

#include "xenpv.h"

namespace {

xenpv_internals* priv(struct rte_eth_dev* dev) {
  return static_cast<xenpv_internals*>(dev->data->dev_private);
}

xpv::Queue* started_queue(struct rte_eth_dev* dev, uint16_t qid) {
  xenpv_internals* p = priv(dev);
  if (!p->dev || !p->started || qid >= p->dev->num_queues() || qid >= dev->data->nb_rx_queues)
    return nullptr;
  return &p->dev->queue(qid);
}

// rte_power_monitor's callback: abort the sleep when the producer moved from
// the value it had when the condition was taken (opaque[0]).
int monitor_should_abort(const uint64_t val, const uint64_t opaque[RTE_POWER_MONITOR_OPAQUE_SZ]) {
  return static_cast<uint32_t>(val) != static_cast<uint32_t>(opaque[0]) ? -1 : 0;
}

}  // namespace

void xenpv_rx_intr_uninstall(struct rte_eth_dev* dev) {
  if (dev->intr_handle) {
    // The efds are the queues' own event fds: the library closes them.
    rte_intr_vec_list_free(dev->intr_handle);
    rte_intr_instance_free(dev->intr_handle);
    dev->intr_handle = nullptr;
  }
}

int xenpv_rx_intr_install(struct rte_eth_dev* dev) {
  xenpv_internals* p = priv(dev);
  const uint16_t n = dev->data->nb_rx_queues;
  xenpv_rx_intr_uninstall(dev);
  dev->intr_handle = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
  if (!dev->intr_handle) return -ENOMEM;
  // Type VDEV with a counter size of 0: EAL reads nothing from the fd when it
  // wakes; the queue takes its events (late EOI) itself.
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

int xenpv_rx_queue_intr_enable(struct rte_eth_dev* dev, uint16_t qid) {
  xpv::Queue* q = started_queue(dev, qid);
  if (!q) return -EINVAL;
  // Makes the fd readable at once when packets already wait.
  q->arm(xpv::Queue::ArmFor::kRx);
  return 0;
}

int xenpv_rx_queue_intr_disable(struct rte_eth_dev* dev, uint16_t qid) {
  xpv::Queue* q = started_queue(dev, qid);
  if (!q) return -EINVAL;
  q->set_mode(xpv::QueueMode::kPoll);
  return 0;
}

// DPDK: "free_cnt: maximum number of packets to free; 0 for all". The PMD
// copies every mbuf at transmit and frees it there, so what is freed here
// are the queue's TX slots, counted in packets.
int xenpv_tx_done_cleanup(void* queue, uint32_t free_cnt) {
  auto* txq = static_cast<xenpv_txq*>(queue);
  xpv::Queue* q = txq->q;
  if (!q) return -ENODEV;
  return static_cast<int>(q->tx_done_cleanup(free_cnt));
}

int xenpv_get_monitor_addr(void* queue, struct rte_power_monitor_cond* pmc) {
  auto* rxq = static_cast<xenpv_rxq*>(queue);
  xpv::Queue* q = rxq->q;
  xpv::Queue::RxMonitor m;
  if (!q || !q->rx_monitor(&m)) return -ENODEV;
  pmc->addr = const_cast<volatile uint32_t*>(m.addr);
  pmc->size = sizeof(uint32_t);
  pmc->fn = monitor_should_abort;
  pmc->opaque[0] = m.idle_value;
  return 0;
}
