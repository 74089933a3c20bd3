// SPDX-License-Identifier: MIT
// net_xenpv bursts: copies between mbufs and the queue's granted pages. The
// library does the ring work (one notification per burst at most).
//
// RX applies the port's MAC filter (promiscuous, all-multicast, the
// multicast list) before it allocates an mbuf. TX refuses, frees and counts
// what the port cannot send: frames longer than the MTU allows, and chains
// of more segments than a netif packet may have slots (netif.h:
// XEN_NETIF_NR_SLOTS_MIN, 18). Refused packets count as sent (consumed) so
// that an application does not retry them forever.
#include "xenpv.h"

namespace {

constexpr uint16_t kChunk = 32;  // packets per library call
constexpr uint16_t kSegsPerChunk = xpv::kMaxTxSlots * kChunk;

// Copies `len` bytes into an mbuf chain starting at `m` offset `off`,
// extending the chain from `mp` as needed. Returns false when out of mbufs.
bool append(struct rte_mbuf* head, struct rte_mbuf** tail, const uint8_t* src, uint32_t len,
            struct rte_mempool* mp) {
  struct rte_mbuf* m = *tail;
  while (len) {
    uint16_t room = rte_pktmbuf_tailroom(m);
    if (room == 0) {
      struct rte_mbuf* n = rte_pktmbuf_alloc(mp);
      if (!n) return false;
      m->next = n;
      ++head->nb_segs;
      m = n;
      *tail = m;
      room = rte_pktmbuf_tailroom(m);
    }
    const uint16_t c = static_cast<uint16_t>(std::min<uint32_t>(room, len));
    rte_memcpy(rte_pktmbuf_mtod_offset(m, uint8_t*, m->data_len), src, c);
    m->data_len = static_cast<uint16_t>(m->data_len + c);
    src += c;
    len -= c;
  }
  return true;
}

// The MAC filter: true when the frame is to be dropped (and counts it).
bool filtered(xenpv_rxq* rxq, const xpv::RxPacket& p) {
  // A frame too short to carry a destination is passed on as it came.
  if (p.nfrags == 0 || p.frags[0].len < RTE_ETHER_ADDR_LEN) return false;
  const uint8_t* dst = p.frags[0].data;
  if (rxq->pmd->filter.accepts(dst)) return false;
  if (dst[0] & 1) {
    rxq->filtered_multicast.add();
  } else {
    rxq->filtered_unicast.add();
  }
  rxq->filtered_bytes.add(p.len);
  return true;
}

// Why the port cannot send `m`, if it cannot.
enum class Refusal { kNone, kSegs, kMtu };
Refusal refusal(const struct rte_mbuf* m, uint32_t max_frame) {
  if (m->nb_segs > xpv::kMaxTxSlots) return Refusal::kSegs;
  if (m->pkt_len > max_frame) return Refusal::kMtu;
  return Refusal::kNone;
}

}  // namespace

uint16_t xenpv_rx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* rxq = static_cast<xenpv_rxq*>(queue);
  // Acquire: pairs with the release store of the queue start.
  xpv::Queue* q = rxq->q.load(std::memory_order_acquire);
  if (!q) return 0;
  uint16_t got = 0;
  q->receive(n, [&](const xpv::RxPacket& p) -> bool {
    if (filtered(rxq, p)) return true;  // consumed, not delivered
    struct rte_mbuf* m = rte_pktmbuf_alloc(rxq->mp);
    if (!m) {
      rxq->nombuf.add();
      return false;  // the packet stays queued for the next burst
    }
    struct rte_mbuf* tail = m;
    for (uint16_t f = 0; f < p.nfrags; ++f) {
      if (!append(m, &tail, p.frags[f].data, p.frags[f].len, rxq->mp)) {
        rte_pktmbuf_free(m);
        rxq->nombuf.add();
        return false;
      }
    }
    m->pkt_len = p.len;
    m->port = rxq->port_id;
    pkts[got++] = m;
    return true;
  });
  return got;
}

uint16_t xenpv_tx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* txq = static_cast<xenpv_txq*>(queue);
  xpv::Queue* q = txq->q.load(std::memory_order_acquire);
  if (!q) return 0;
  const uint32_t max_frame = txq->pmd->max_frame.load(std::memory_order_relaxed);
  uint16_t done = 0;
  xpv::TxSegment segs[kSegsPerChunk];
  xpv::TxPacket tp[kChunk];
  while (done < n) {
    uint16_t k = 0;
    uint16_t nseg = 0;
    while (k < kChunk && done + k < n) {
      struct rte_mbuf* m = pkts[done + k];
      const Refusal r = refusal(m, max_frame);
      if (r != Refusal::kNone) {
        // Only at the head of a chunk: what the burst consumed stays a prefix
        // of pkts. Later in a chunk, the chunk is sent first.
        if (k) break;
        (r == Refusal::kSegs ? txq->refused_segs : txq->refused_mtu).add();
        rte_pktmbuf_free(m);
        ++done;
        continue;
      }
      tp[k].segs = &segs[nseg];
      tp[k].nsegs = m->nb_segs;
      for (struct rte_mbuf* s = m; s; s = s->next) {
        segs[nseg++] = {rte_pktmbuf_mtod(s, const void*), s->data_len};
      }
      ++k;
    }
    if (k == 0) break;
    const uint16_t sent = q->transmit(std::span<const xpv::TxPacket>(tp, k));
    // Copied into granted pages (or refused and counted): the mbufs are free.
    rte_pktmbuf_free_bulk(pkts + done, sent);
    done = static_cast<uint16_t>(done + sent);
    if (sent < k) break;
  }
  return done;
}
