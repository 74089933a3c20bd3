// SPDX-License-Identifier: MIT
// net_xenpv: a DPDK poll-mode driver for Xen PV network interfaces (netif).
//
// A thin adapter: every protocol rule lives in libxpv (include/xpv/). This
// driver maps ethdev operations onto an xpv::Device and copies between
// mbufs and the device's granted pages in the burst functions.
//
// Files: xenpv_devargs.cc (device arguments), xenpv_ethdev.cc (probe and
// eth_dev_ops), xenpv_rxtx.cc (rx/tx bursts).
#pragma once

#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <ethdev_driver.h>

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
};

// Parses "vif=N,backend=...,queues=N,mac=..."; on error `err` names the key
// and the expected form.
bool xenpv_parse_args(const char* params, xenpv_args* out, std::string* err);
extern const char* const xenpv_valid_args[];

struct xenpv_internals;

struct xenpv_rxq {
  xenpv_internals* pmd = nullptr;
  xpv::Queue* q = nullptr;  // set while the port is started
  struct rte_mempool* mp = nullptr;
  uint16_t qid = 0;
  uint16_t port_id = 0;
  uint64_t rx_nombuf = 0;
};

struct xenpv_txq {
  xenpv_internals* pmd = nullptr;
  xpv::Queue* q = nullptr;
  uint16_t qid = 0;
  uint64_t tx_dropped_chain = 0;  // mbuf chains too long to describe
};

// The port's private data. Declared at global scope because the ethdev
// headers forward-declare it; constructed with placement new in
// dev_private.
struct xenpv_internals {
  xenpv_args args;
  std::unique_ptr<xpv::Device> dev;  // opened at probe, re-opened on configure
  struct rte_ether_addr mac {};
  uint16_t port_id = 0;
  bool started = false;
  xpv::BackendFeatures features;
  uint32_t mtu = 1500;
  std::mutex control_mu;  // poll_control: EAL interrupt thread vs. API calls
  struct rte_intr_handle* control_intr = nullptr;  // the device's control fd
  bool control_cb = false;
};

uint16_t xenpv_rx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n);
uint16_t xenpv_tx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n);
