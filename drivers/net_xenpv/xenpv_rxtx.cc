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
//
// Offloads (netif.h flags and the GSO extra; DPDK's mbuf offload contract):
// a partial checksum is the pseudo-header sum in the TCP/UDP checksum field,
// the same form both ways (DPDK's RTE_MBUF_F_TX_*_CKSUM, Linux's
// CHECKSUM_PARTIAL behind NETTXF_csum_blank / NETRXF_csum_blank), except
// that DPDK leaves the L4 length out of a TSO packet's pseudo-header and
// netback (Linux GSO) counts it in: the TX burst adds it, in place, as
// virtio's PMD does.
#include <memory>
#include <type_traits>

#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_net.h>

#include "xenpv.h"

namespace {

constexpr uint16_t kChunk = 32;  // packets per library call
constexpr uint64_t kTxOffloadFlags =
    RTE_MBUF_F_TX_L4_MASK | RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IP_CKSUM;
constexpr uint16_t kSegsPerChunk = xpv::kMaxTxSlots * kChunk;
static_assert(kSegsPerChunk >= kXenpvMaxTsoSegs);

// N values of T left uninitialized: the burst constructs each before it reads
// it. An array of xpv::TxSegment (default member initializers) would be
// zeroed whole on every burst: kSegsPerChunk of them, 13.8 KB of memset for
// at most 32 packets.
template <class T, size_t N>
class Scratch {
  static_assert(std::is_trivially_destructible_v<T>, "the union is never destroyed member-wise");

 public:
  Scratch() {}  // no member initialized, on purpose
  ~Scratch() {}
  T* data() { return v_; }

 private:
  union {
    T v_[N];
  };
};

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

// Why the port cannot send `m`, if it cannot. A TSO packet may be up to
// 64 KiB: the backend segments it to the MSS.
enum class Refusal { kNone, kSegs, kMtu, kOffload };
Refusal refusal(const struct rte_mbuf* m, uint32_t max_frame) {
  // An IPv4 header checksum computed here needs the header in the first segment.
  if ((m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) &&
      (!(m->ol_flags & RTE_MBUF_F_TX_IPV4) || m->data_len < m->l2_len + sizeof(rte_ipv4_hdr)))
    return Refusal::kOffload;
  if (m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) {
    if (m->nb_segs > kXenpvMaxTsoSegs) return Refusal::kSegs;
    // Its headers are rewritten in place (the checksum's pseudo-header).
    if (m->tso_segsz == 0 || m->data_len < m->l2_len + m->l3_len + m->l4_len)
      return Refusal::kOffload;
    return m->pkt_len > xpv::kMaxPacketLen ? Refusal::kMtu : Refusal::kNone;
  }
  if (m->nb_segs > xpv::kMaxTxSlots) return Refusal::kSegs;
  if (m->pkt_len > max_frame) return Refusal::kMtu;
  return Refusal::kNone;
}

// The one's complement sum of a 16-bit field added in place (RFC 1624).
void csum_add_in_place(uint8_t* field, uint16_t add_be) {
  uint16_t v;
  std::memcpy(&v, field, 2);
  uint32_t t = uint32_t{v} + add_be;
  t = (t & 0xffff) + (t >> 16);
  v = static_cast<uint16_t>(t);
  std::memcpy(field, &v, 2);
}

}  // namespace

// Completes the partial TCP/UDP checksum of `m` (the field holds the
// pseudo-header sum): the sum over the L4 header and data with the field as
// it is, complemented, is the full checksum. The headers are found by
// rte_net_get_ptype; false when it is not TCP or UDP over IP, or the field
// is not in the first segment (then nothing changes).
bool xenpv_complete_l4_checksum(struct rte_mbuf* m, uint8_t** field_at, uint16_t* old) {
  struct rte_net_hdr_lens h {};
  const uint32_t pt =
      rte_net_get_ptype(m, &h, RTE_PTYPE_L2_MASK | RTE_PTYPE_L3_MASK | RTE_PTYPE_L4_MASK);
  const uint32_t l4 = pt & RTE_PTYPE_L4_MASK;
  if (l4 != RTE_PTYPE_L4_TCP && l4 != RTE_PTYPE_L4_UDP) return false;
  const uint32_t l3_off = h.l2_len;
  const uint32_t l4_off = h.l2_len + h.l3_len;
  const uint32_t field = l4_off + (l4 == RTE_PTYPE_L4_TCP ? 16 : 6);
  if (m->data_len < field + 2) return false;
  // The L4 length from the IP header (the frame may be padded).
  uint32_t l4_len = 0;
  if (RTE_ETH_IS_IPV4_HDR(pt)) {
    const auto* ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr*, l3_off);
    l4_len = rte_be_to_cpu_16(ip->total_length) - h.l3_len;
  } else if (RTE_ETH_IS_IPV6_HDR(pt)) {
    const auto* ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr*, l3_off);
    l4_len = sizeof(struct rte_ipv6_hdr) + rte_be_to_cpu_16(ip->payload_len) - h.l3_len;
  } else {
    return false;
  }
  uint16_t sum = 0;
  if (l4_len > m->pkt_len - l4_off || rte_raw_cksum_mbuf(m, l4_off, l4_len, &sum) != 0)
    return false;
  uint16_t c = static_cast<uint16_t>(~sum);
  if (c == 0 && l4 == RTE_PTYPE_L4_UDP) c = 0xffff;  // RFC 768: 0 means none
  uint8_t* at = rte_pktmbuf_mtod_offset(m, uint8_t*, field);
  if (field_at) *field_at = at;
  if (old) std::memcpy(old, at, 2);
  std::memcpy(at, &c, 2);
  return true;
}

namespace {

// The RX offload flags of a received packet, and the checksum completed here
// when the backend left it partial and the application did not enable the
// RX checksum offload (it expects complete checksums).
void rx_offloads(xenpv_rxq* rxq, struct rte_mbuf* m, const xpv::RxPacket& p) {
  uint64_t ol = 0;
  if (rxq->offloads & (RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM)) {
    if (p.flags & xpv::kRxCsumBlank) {
      ol |= RTE_MBUF_F_RX_L4_CKSUM_NONE;  // data verified, checksum field not filled
    } else if (p.flags & xpv::kRxDataValidated) {
      ol |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    }
  } else if ((p.flags & xpv::kRxCsumBlank) && xenpv_complete_l4_checksum(m)) {
    rxq->csum_software.add();
  }
  if (p.hash_type) {
    // The backend's Toeplitz hash (a netif HASH extra), what steered it here.
    ol |= RTE_MBUF_F_RX_RSS_HASH;
    m->hash.rss = p.hash;
  }
  if (p.gso_size) {
    ol |= RTE_MBUF_F_RX_LRO;
    m->tso_segsz = p.gso_size;
    rxq->lro_packets.add();
  }
  m->ol_flags |= ol;  // an attached mbuf has RTE_MBUF_F_EXTERNAL already
}

// The TX offloads `m` asks for, into `tp`: a partial checksum for the backend
// to complete (IPv6 ones only when it offers that; else completed here), and
// TSO with the pseudo-header's L4 length added as netback expects.
// What the TX burst did to a packet for its offloads, to count it once it
// is sent, or to undo it when the library did not take it (the application
// sends the same mbuf again: the edit must not be applied twice).
struct TxEdit {
  enum Kind : uint8_t { kNone, kTso, kCsumOffloaded, kCsumSoftware };
  Kind kind = kNone;
  uint8_t* field = nullptr;  // the L4 checksum field, as it was before
  uint16_t old = 0;
  uint16_t index = 0;  // the packet's place in its chunk
};

// The TX offloads `m` asks for, into `tp`: a partial checksum for the backend
// to complete (IPv6 ones only when it offers that; else completed here), and
// TSO with the pseudo-header's L4 length added as netback expects.
TxEdit tx_offloads(xenpv_txq* txq, struct rte_mbuf* m, xpv::TxPacket* tp) {
  const uint64_t ol = m->ol_flags;
  TxEdit e;
  if (ol & RTE_MBUF_F_TX_IP_CKSUM) {
    // Not a capability we offer (netif has no flag for it), but what DPDK
    // asks of a TSO packet (testpmd's csum engine sets it on each): done
    // here, as Linux's stack does before TSO (netback's segmentation then
    // rewrites it per segment). Doing it twice does no harm.
    auto* ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr*, m->l2_len);
    ip->hdr_checksum = 0;
    ip->hdr_checksum = rte_ipv4_cksum(ip);
  }
  if (ol & RTE_MBUF_F_TX_TCP_SEG) {
    const uint32_t l4_off = m->l2_len + m->l3_len;
    e = {TxEdit::kTso, rte_pktmbuf_mtod_offset(m, uint8_t*, l4_off + 16)};
    std::memcpy(&e.old, e.field, 2);
    csum_add_in_place(e.field, rte_cpu_to_be_16(static_cast<uint16_t>(m->pkt_len - l4_off)));
    tp->csum_partial = true;
    tp->gso_type = (ol & RTE_MBUF_F_TX_IPV6) ? xpv::kGsoTcpV6 : xpv::kGsoTcpV4;
    tp->gso_size = m->tso_segsz;
    return e;
  }
  const uint64_t l4 = ol & RTE_MBUF_F_TX_L4_MASK;
  if (l4 != RTE_MBUF_F_TX_TCP_CKSUM && l4 != RTE_MBUF_F_TX_UDP_CKSUM) return e;
  if ((ol & RTE_MBUF_F_TX_IPV6) && !txq->pmd->features.ipv6_csum_offload) {
    if (xenpv_complete_l4_checksum(m, &e.field, &e.old)) e.kind = TxEdit::kCsumSoftware;
    return e;
  }
  tp->csum_partial = true;
  e.kind = TxEdit::kCsumOffloaded;
  return e;
}

// After the library took the first `sent` of a chunk's packets: count their
// offloads, and put back the checksum fields of the others.
void tx_offloads_settle(xenpv_txq* txq, const TxEdit* edits, uint16_t nedits, uint16_t sent) {
  for (uint16_t i = 0; i < nedits; ++i) {
    const TxEdit& e = edits[i];
    if (e.kind == TxEdit::kNone) continue;
    if (e.index >= sent) {
      if (e.field) std::memcpy(e.field, &e.old, 2);
      continue;
    }
    (e.kind == TxEdit::kTso             ? txq->tso_packets
     : e.kind == TxEdit::kCsumOffloaded ? txq->csum_offloaded
                                        : txq->csum_software)
        .add();
  }
}

}  // namespace

void xenpv_kept_page_free(void* addr, void* opaque) {
  xpv::rx_loan_release(static_cast<xpv::RxLoans*>(opaque), addr);
}

namespace {

// Zero-copy receive (zerocopy=1): an mbuf per fragment, attached to the
// granted page the fragment lies in (DPDK's external buffer; the page's
// rte_mbuf_ext_shared_info lives in the library's room for it), the page
// released to the library when the last mbuf on it is freed. false when
// out of mbufs (nothing kept then).
bool rx_attach(xenpv_rxq* rxq, const xpv::RxPacket& p, struct rte_mbuf** out) {
  struct rte_mbuf* ms[xpv::kMaxRxFrags];
  if (rte_pktmbuf_alloc_bulk(rxq->mp, ms, p.nfrags) != 0) return false;
  const bool iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
  for (uint16_t f = 0; f < p.nfrags; ++f) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p.frags[f].data);
    auto* page = reinterpret_cast<uint8_t*>(at & ~uintptr_t{xpv::kPageSize - 1});
    auto* sh = static_cast<struct rte_mbuf_ext_shared_info*>(xpv::rx_loan_area(p.loans, page));
    sh->free_cb = xenpv_kept_page_free;
    sh->fcb_opaque = p.loans;
    rte_mbuf_ext_refcnt_set(sh, 1);
    struct rte_mbuf* m = ms[f];
    rte_pktmbuf_attach_extbuf(m, page, iova_va ? reinterpret_cast<rte_iova_t>(page) : RTE_BAD_IOVA,
                              xpv::kPageSize, sh);
    m->data_off = static_cast<uint16_t>(at - reinterpret_cast<uintptr_t>(page));
    m->data_len = static_cast<uint16_t>(p.frags[f].len);
    if (f) ms[f - 1]->next = m;
  }
  ms[0]->nb_segs = p.nfrags;
  *out = ms[0];
  return true;
}

// idle_sleep: empty polls in a row on this thread, over every net_xenpv queue
// it polls (a forwarding lcore polls several: one of them busy keeps the
// count at zero). Why a poll-mode thread sleeps at all: xenpv_intr.cc.
// SCHEDOP_yield instead of a sleep did not give the physical CPU back to dom0
// (tried: no change in the CPU split Xen accounted).
// Initial-exec: one load at a fixed offset from the thread pointer, where a
// dlopen()ed PMD's default model calls __tls_get_addr on every burst.
[[gnu::tls_model("initial-exec")]] thread_local uint32_t t_empty_polls = 0;

// An empty poll of `rxq`: after kIdlePollsBeforeSleep of them in a row, wait
// (xenpv_idle_wait) up to its port's idle_sleep microseconds. Not on the
// per-packet path.
[[gnu::noinline]] void idle_poll(xenpv_rxq* rxq) {
  xenpv_idle_note(rxq);
  if (++t_empty_polls < kIdlePollsBeforeSleep) return;
  t_empty_polls = 0;
  xenpv_idle_wait(rxq);
}

}  // namespace

uint16_t xenpv_rx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* rxq = static_cast<xenpv_rxq*>(queue);
  // Acquire: pairs with the release store of the queue start.
  xpv::Queue* q = rxq->q.load(std::memory_order_acquire);
  if (!q) return 0;
  uint16_t got = 0;
  // Copy mode: mbufs for the burst taken from the pool in bulk (one
  // rte_mempool_get_bulk for up to kChunk packets instead of one get each),
  // the unused ones put back at the end.
  struct rte_mbuf* stash[kChunk];
  uint16_t stash_at = 0, stash_n = 0;
  q->receive(n, [&](const xpv::RxPacket& p) -> xpv::RxVerdict {
    if (filtered(rxq, p)) return xpv::RxVerdict::kConsumed;  // not delivered
    struct rte_mbuf* m = nullptr;
    xpv::RxVerdict v = xpv::RxVerdict::kConsumed;
    if (p.loans) {
      // The library has pages to spare: keep this packet in its pages.
      if (!rx_attach(rxq, p, &m)) {
        rxq->nombuf.add();
        return xpv::RxVerdict::kStop;  // the packet stays queued for the next burst
      }
      v = xpv::RxVerdict::kKept;
    } else {
      if (stash_at == stash_n) {
        const uint16_t want = std::min<uint16_t>(kChunk, static_cast<uint16_t>(n - got));
        stash_at = 0;
        stash_n =
            rte_mempool_get_bulk(rxq->mp, reinterpret_cast<void**>(stash), want) == 0 ? want : 0;
      }
      if (stash_at < stash_n) {
        m = stash[stash_at++];
        rte_pktmbuf_reset(m);
      } else {
        m = rte_pktmbuf_alloc(rxq->mp);
      }
      if (!m) {
        rxq->nombuf.add();
        return xpv::RxVerdict::kStop;
      }
      struct rte_mbuf* tail = m;
      for (uint16_t f = 0; f < p.nfrags; ++f) {
        if (!append(m, &tail, p.frags[f].data, p.frags[f].len, rxq->mp)) {
          rte_pktmbuf_free(m);
          rxq->nombuf.add();
          return xpv::RxVerdict::kStop;
        }
      }
    }
    m->pkt_len = p.len;
    m->port = rxq->port_id;
    if (p.flags || p.gso_size || p.hash_type) [[unlikely]] {
      rx_offloads(rxq, m, p);
    }
    pkts[got++] = m;
    return v;
  });
  if (stash_at < stash_n)
    rte_mempool_put_bulk(rxq->mp, reinterpret_cast<void* const*>(stash + stash_at),
                         stash_n - stash_at);
  if (got) {
    if (t_empty_polls) t_empty_polls = 0;
  } else if (rxq->idle_sleep_us) {
    idle_poll(rxq);
  }
  return got;
}

uint16_t xenpv_tx_burst(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* txq = static_cast<xenpv_txq*>(queue);
  xpv::Queue* q = txq->q.load(std::memory_order_acquire);
  if (!q) return 0;
  const uint32_t max_frame = txq->pmd->max_frame.load(std::memory_order_relaxed);
  uint16_t done = 0;
  Scratch<xpv::TxSegment, kSegsPerChunk> seg_store;
  Scratch<xpv::TxPacket, kChunk> tp_store;
  Scratch<TxEdit, kChunk> edit_store;  // of the packets with offload requests only
  xpv::TxSegment* const segs = seg_store.data();
  xpv::TxPacket* const tp = tp_store.data();
  TxEdit* const edits = edit_store.data();
  uint16_t nedits = 0;
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
        (r == Refusal::kSegs  ? txq->refused_segs
         : r == Refusal::kMtu ? txq->refused_mtu
                              : txq->refused_offload)
            .add();
        rte_pktmbuf_free(m);
        ++done;
        continue;
      }
      if (nseg + m->nb_segs > kSegsPerChunk) break;  // k > 0: a chain fits an empty chunk
      std::construct_at(&tp[k], xpv::TxPacket{&segs[nseg], m->nb_segs});
      if (m->ol_flags & kTxOffloadFlags) [[unlikely]] {
        std::construct_at(&edits[nedits], tx_offloads(txq, m, &tp[k]));
        edits[nedits++].index = k;
      }
      for (struct rte_mbuf* s = m; s; s = s->next) {
        // A segment in a kept RX page (zerocopy=1) goes by its grant when it can.
        xpv::RxLoans* kept = nullptr;
        if (RTE_MBUF_HAS_EXTBUF(s) && s->shinfo->free_cb == xenpv_kept_page_free) [[unlikely]]
          kept = static_cast<xpv::RxLoans*>(s->shinfo->fcb_opaque);
        std::construct_at(&segs[nseg++],
                          xpv::TxSegment{rte_pktmbuf_mtod(s, const void*), s->data_len, kept});
      }
      ++k;
    }
    if (k == 0) break;
    const uint16_t sent = q->transmit(std::span<const xpv::TxPacket>(tp, k));
    if (nedits) [[unlikely]] {
      tx_offloads_settle(txq, edits, nedits, sent);
      nedits = 0;
    }
    // Copied into granted pages (or refused and counted): the mbufs are free.
    rte_pktmbuf_free_bulk(pkts + done, sent);
    done = static_cast<uint16_t>(done + sent);
    if (sent < k) break;
  }
  return done;
}

// DPDK's tx_prepare (rte_eth_tx_prepare): refuses what the burst would refuse
// (rte_errno EINVAL) and writes the pseudo-header sum into the checksum field
// of each packet asking for an L4 checksum or TSO (rte_net_intel_cksum_prepare,
// as virtio's PMD does; for TSO without the L4 length, which the burst adds).
uint16_t xenpv_tx_prepare(void* queue, struct rte_mbuf** pkts, uint16_t n) {
  auto* txq = static_cast<xenpv_txq*>(queue);
  const uint32_t max_frame = txq->pmd->max_frame.load(std::memory_order_relaxed);
  for (uint16_t i = 0; i < n; ++i) {
    struct rte_mbuf* m = pkts[i];
    if (refusal(m, max_frame) != Refusal::kNone) {
      rte_errno = EINVAL;
      return i;
    }
    if (const int rc = rte_net_intel_cksum_prepare(m); rc != 0) {
      rte_errno = -rc;
      return i;
    }
  }
  return n;
}
