// SPDX-License-Identifier: MIT
#include "netfront/static_grants.h"

#include <algorithm>
#include <cstring>

#include "util/log.h"

namespace xpv {

namespace {

// Writes entries [from, from + n) of `refs` as a gref list at the start of
// the ring's data page (netif.h: "assumed to start at beginning of page").
void write_list(CtrlRing& ring, std::span<const grant_ref_t> refs, size_t from, uint32_t n,
                size_t readonly_below) {
  auto* list = reinterpret_cast<netif::CtrlGref*>(ring.data());
  for (uint32_t i = 0; i < n; ++i) {
    netif::CtrlGref g{};
    g.ref = refs[from + i];
    g.flags = from + i < readonly_below ? netif::kCtrlGrefReadonly : 0;
    g.status = 0;
    std::memcpy(&list[i], &g, sizeof g);
  }
}

}  // namespace

Result<std::vector<grant_ref_t>> register_static_grants(CtrlRing& ring, uint32_t queue,
                                                        const QueueImpl::PoolGrants& pools) {
  auto size = ring.call(netif::kCtrlTypeGetGrefMappingSize, queue);
  if (!size) return size.error();
  std::vector<grant_ref_t> refs = pools.tx;
  refs.insert(refs.end(), pools.rx.begin(), pools.rx.end());
  if (size->status != netif::kCtrlStatusSuccess) {
    log_info(
        "queue %u: the backend answered GET_GREF_MAPPING_SIZE with %s: it grant-copies every "
        "buffer",
        queue, netif::ctrl_status_name(size->status));
    return std::vector<grant_ref_t>{};
  }
  if (size->data < refs.size()) {
    log_info(
        "queue %u: the backend keeps at most %u grefs mapped; the queue's pools have %zu: it "
        "grant-copies every buffer",
        queue, size->data, refs.size());
    return std::vector<grant_ref_t>{};
  }
  const uint32_t chunk = std::min(kGrefsPerList, size->data);
  size_t done = 0;
  while (done < refs.size()) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(chunk, refs.size() - done));
    write_list(ring, refs, done, n, pools.tx.size());
    auto a = ring.call(netif::kCtrlTypeAddGrefMapping, queue, ring.data_ref(), n);
    if (!a) return a.error();
    if (a->status != netif::kCtrlStatusSuccess) {
      // netif.h: a failed ADD adds nothing; take back what earlier lists added.
      log_warn(
          "queue %u: the backend refused ADD_GREF_MAPPING of %u grefs (%s): it grant-copies "
          "every buffer",
          queue, n, netif::ctrl_status_name(a->status));
      XPV_TRY(deregister_static_grants(ring, queue, std::span(refs).first(done)));
      return std::vector<grant_ref_t>{};
    }
    done += n;
  }
  return refs;
}

Status deregister_static_grants(CtrlRing& ring, uint32_t queue, std::span<const grant_ref_t> refs) {
  size_t done = 0;
  while (done < refs.size()) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(kGrefsPerList, refs.size() - done));
    write_list(ring, refs, done, n, 0);
    auto a = ring.call(netif::kCtrlTypeDelGrefMapping, queue, ring.data_ref(), n);
    if (!a) return a.error();
    if (a->status != netif::kCtrlStatusSuccess || a->data != n) {
      log_warn(
          "queue %u: DEL_GREF_MAPPING of %u grefs: %s, %u unmapped; the pages still mapped "
          "are kept at teardown",
          queue, n, netif::ctrl_status_name(a->status), a->data);
    }
    done += n;
  }
  return {};
}

}  // namespace xpv
