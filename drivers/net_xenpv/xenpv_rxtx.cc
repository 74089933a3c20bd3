// SPDX-License-Identifier: MIT
// net_xenpv bursts: copies between mbufs and the queue's granted pages. The
// library does the ring work (one notification per burst at most).
#include "xenpv.h"

namespace {

constexpr uint16_t kChunk = 32;  // packets per library call
constexpr uint16_t kSegsPerChunk = 8 * kChunk;

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

}  // namespace

uint16_t xenpv_rx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* rxq = static_cast<xenpv_rxq*>(queue);
  xpv::Queue* q = rxq->q;
  if (!q) return 0;
  uint16_t got = 0;
  q->receive(n, [&](const xpv::RxPacket& p) -> bool {
    struct rte_mbuf* m = rte_pktmbuf_alloc(rxq->mp);
    if (!m) {
      ++rxq->rx_nombuf;
      return false;  // the packet stays queued for the next burst
    }
    struct rte_mbuf* tail = m;
    for (uint16_t f = 0; f < p.nfrags; ++f) {
      if (!append(m, &tail, p.frags[f].data, p.frags[f].len, rxq->mp)) {
        rte_pktmbuf_free(m);
        ++rxq->rx_nombuf;
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
  xpv::Queue* q = txq->q;
  if (!q) return 0;
  uint16_t done = 0;
  xpv::TxSegment segs[kSegsPerChunk];
  xpv::TxPacket tp[kChunk];
  while (done < n) {
    uint16_t k = 0;
    uint16_t nseg = 0;
    while (k < kChunk && done + k < n) {
      struct rte_mbuf* m = pkts[done + k];
      if (m->nb_segs > kSegsPerChunk) {
        // Longer than any packet the ring can carry in 18 slots would ever
        // be described with: refuse it (counted) rather than stall the queue.
        if (k == 0) {
          rte_pktmbuf_free(m);
          ++txq->tx_dropped_chain;
          ++done;
          continue;
        }
        break;
      }
      if (nseg + m->nb_segs > kSegsPerChunk) break;
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
