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
//  - idle_sleep (a device argument): the RX burst of a thread that found
//    nothing for a while sleeps in the burst, armed as for Rx interrupts on
//    the queues the thread polls, until a packet arrives or idle_sleep_us;
//    in the guest kernel (ppoll), or with idle_wait=xen in Xen.
#include <poll.h>
#include <time.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>

#include <rte_interrupts.h>
#include <rte_power_intrinsics.h>

#include "xen/sched_poll.h"
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

// ---- idle_sleep ------------------------------------------------------------
//
// A poll-mode thread spins on its CPU; a virtual CPU that shares a physical
// one with the backend domain (dom0's netback copies every packet) takes that
// CPU from it even when idle. So, once the thread found every net_xenpv queue
// it polls empty kIdlePollsBeforeSleep times in a row, its burst sleeps in
// the kernel as the guest's idle loop does, and the vCPU blocks in the
// hypervisor. The sleep ends when a packet arrives for one of those queues:
// each is armed for received packets (Queue::arm(kRx), as for DPDK's Rx
// interrupts: its TX completions stay quiet) and the thread polls their event
// fds, idle_sleep_us at most. Afterwards each queue goes back to poll mode.
//
// The queues are those this thread found empty since its last sleep: a
// thread-local list of xenpv_rxq pointers. A port's queues may be freed by
// another thread (rx_queue_release; dev_close, dev_configure or dev_reset,
// which destroy the library device) while this thread is between two bursts
// or asleep: those bump g_idle_generation under g_idle_mu first, and a wait
// touches the queues of its list, other than the one whose burst it is in,
// only under g_idle_mu and only while the generation it started its list at
// holds. Not on the per-packet path: empty polls and sleeps only.
namespace {

std::mutex g_idle_mu;
std::atomic<uint64_t> g_idle_generation{0};  // written under g_idle_mu

constexpr uint32_t kIdleWaitQueuesMax = 16;  // queues one thread waits on

struct IdleList {
  std::array<xenpv_rxq*, kIdleWaitQueuesMax> rxq{};
  uint32_t n = 0;
  uint64_t generation = 0;
};
thread_local IdleList t_idle;

// Whether no port's queues were freed since a list began at `generation`
// (g_idle_mu held): then its queues may be touched.
bool idle_queues_alive(uint64_t generation) {
  return generation == g_idle_generation.load(std::memory_order_relaxed);
}

// idle_wait=xen: this thread's privcmd handle, opened at its first sleep in
// Xen (the probe proved that it opens). A thread that cannot open it waits
// in the kernel from then on.
struct ThreadSchedPoll {
  std::optional<xpv::SchedPoll> sp;
  bool tried = false;
};
thread_local ThreadSchedPoll t_sched_poll;

xpv::SchedPoll* thread_sched_poll() {
  ThreadSchedPoll& t = t_sched_poll;
  if (!t.tried) {
    t.tried = true;
    auto sp = xpv::SchedPoll::open();
    if (sp) {
      t.sp.emplace(std::move(*sp));
    } else {
      XENPV_LOG(ERR, "idle_wait=xen: this thread waits in the kernel: %s",
                sp.error().message.c_str());
    }
  }
  return t.sp ? &*t.sp : nullptr;
}

// The sleep of xenpv_idle_wait in Xen: SchedPoll::wait_for on the armed
// queues' RX ports (taken under g_idle_mu with the fds: the queues
// themselves may be gone by now) until a packet arrived (`arrived` looks at
// the queues' RX rings), a queue's fd is readable, or `us` microseconds
// passed. Returns false, having not slept, when it cannot wait in Xen; else
// sets fds' revents as ppoll does and *woken.
bool sleep_in_xen(const uint32_t* ports, struct pollfd* fds, uint32_t n, uint32_t us,
                  xpv::SchedPoll::Arrived arrived, void* ctx, bool* woken) {
  // Why a sleep waits in the kernel instead, said once a thread.
  static thread_local bool t_fallback_said = false;
  auto fallback = [](const char* why, int err) {
    if (!t_fallback_said) {
      t_fallback_said = true;
      XENPV_LOG(WARNING, "idle_wait=xen: a sleep waits in the kernel: %s%s%s", why, err ? ": " : "",
                err ? strerror(err) : "");
    }
    return false;
  };
  xpv::SchedPoll* sp = thread_sched_poll();
  if (!sp) return false;  // said by thread_sched_poll
  if (n == 0) return fallback("no started queue to wait for", 0);
  for (uint32_t i = 0; i < n; ++i)
    if (!ports[i]) return fallback("a queue is not connected", 0);
  xpv::SchedPoll::WaitEnd end;
  // A failure (a port gone with a reconnect) leaves the rest of the sleep
  // to ppoll, which returns at once if an event is there already.
  if (const int rc = sp->wait_for({ports, n}, {fds, n}, us, arrived, ctx, &end); rc < 0)
    return fallback("SCHEDOP_poll", -rc);
  *woken = end != xpv::SchedPoll::WaitEnd::kTimedOut;
  return true;
}

// What a wait in Xen asks first at each return: whether one of the armed
// queues' RX rings holds responses (a look at memory), marking those as
// ppoll would their fds, so that their events are taken after the wait.
// Under g_idle_mu, and only while no queue was freed since the list began
// (else ppoll tells).
struct ArmedQueues {
  xpv::Queue* const* q;
  uint64_t generation;
};
bool rx_arrived(void* ctx, std::span<struct pollfd> fds) {
  const auto* a = static_cast<const ArmedQueues*>(ctx);
  std::lock_guard lk(g_idle_mu);
  if (!idle_queues_alive(a->generation)) return false;
  bool any = false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (a->q[i]->ring_state().rx_done) {
      fds[i].revents = POLLIN;
      any = true;
    }
  }
  return any;
}

}  // namespace

void xenpv_idle_forget_queues() {
  std::lock_guard lk(g_idle_mu);
  g_idle_generation.fetch_add(1, std::memory_order_relaxed);
}

void xenpv_idle_note(xenpv_rxq* rxq) {
  IdleList& l = t_idle;
  if (l.n == 0) l.generation = g_idle_generation.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < l.n; ++i)
    if (l.rxq[i] == rxq) return;
  // A thread polling more queues than that sleeps on the first ones; the
  // others wait for the sleep's end (idle_sleep_us at most).
  if (l.n < kIdleWaitQueuesMax) l.rxq[l.n++] = rxq;
}

void xenpv_idle_wait(xenpv_rxq* cur) {
  IdleList& l = t_idle;
  std::array<xpv::Queue*, kIdleWaitQueuesMax> armed;
  std::array<struct pollfd, kIdleWaitQueuesMax> fds;
  std::array<uint32_t, kIdleWaitQueuesMax> ports{};  // idle_wait=xen: their RX event ports
  static_assert(kIdleWaitQueuesMax <= xpv::SchedPoll::kMaxPorts);
  uint32_t n = 0;
  bool sleep = true;
  {
    std::lock_guard lk(g_idle_mu);
    if (!idle_queues_alive(l.generation)) {
      // A port's queues were freed since the list began: only `cur`, whose
      // burst this is, is certainly alive.
      l.rxq[0] = cur;
      l.n = 1;
    }
    for (uint32_t i = 0; i < l.n && sleep; ++i) {
      // Acquire: pairs with the release store of the queue start.
      xpv::Queue* q = l.rxq[i]->q.load(std::memory_order_acquire);
      if (!q) continue;  // stopped: nothing to wait for
      armed[n] = q;
      fds[n] = {q->event_fd(), POLLIN, 0};
      if (cur->idle_wait_in_xen) ports[n] = q->rx_event_port();
      ++n;
      // false: packets wait already (or raced with the re-arm): no sleep.
      // An event that fired before is left to ppoll, which then returns at
      // once (see arm_for_level_wait).
      sleep = q->arm_for_level_wait(xpv::Queue::ArmFor::kRx);
    }
  }
  if (sleep) {
    cur->idle_sleeps.add();
    bool woken = false;
    ArmedQueues aq{armed.data(), l.generation};
    if (cur->idle_wait_in_xen &&
        sleep_in_xen(ports.data(), fds.data(), n, cur->idle_sleep_us, rx_arrived, &aq, &woken)) {
      cur->idle_sleeps_in_xen.add();
    } else {
      const struct timespec ts = {static_cast<time_t>(cur->idle_sleep_us / 1'000'000),
                                  static_cast<long>(cur->idle_sleep_us % 1'000'000) * 1000};
      // With no queue to watch (all stopped meanwhile) ppoll just sleeps;
      // an interrupted wait (a signal) is just shorter.
      woken = ppoll(fds.data(), n, &ts, nullptr) > 0;
    }
    if (woken) cur->idle_sleeps_woken.add();
  }
  {
    std::lock_guard lk(g_idle_mu);
    const bool alive = idle_queues_alive(l.generation);
    xpv::Queue* mine = cur->q.load(std::memory_order_acquire);
    // Back to poll mode, taking the events of the queues whose fd ppoll
    // reported (or all, when it did not wait). Reading the event channel of
    // the others would find nothing: a system call, a trip through Xen, for
    // every sleep that ran out. An event that fired after ppoll returned
    // keeps its fd readable, so the next (level-triggered) ppoll returns at
    // once and takes it. After a release elsewhere only `cur`'s queue is
    // touched: the others, if still alive, stay armed until their thread's
    // next wait, which costs them an event now and then, not a packet.
    for (uint32_t i = 0; i < n; ++i)
      if (alive || armed[i] == mine)
        armed[i]->set_poll_mode_after_wait(!sleep || fds[i].revents != 0);
  }
  l.n = 0;
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
