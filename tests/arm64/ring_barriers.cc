// SPDX-License-Identifier: MIT
// The shared ring's ordering points (src/ring/shared_ring.h), each in a
// function of its own, for scripts/check-arm64.sh to disassemble: on arm64
// a producer index must be published with a release store (STLR: the entries
// before the index, ring.h's xen_wmb), read with an acquire load (LDAR: the
// index before the entries, xen_rmb), and the notify decision and the final
// checks need a full barrier (DMB ISH, xen_mb) between the index/event store
// and the load of the peer's event/index. On x86 all but the last are plain
// moves, so only the arm64 code shows whether the C++ says what ring.h means.
#include "ring/netif.h"

using namespace xpv;

extern "C" {
bool probe_push_requests(netif::TxFrontRing& r) {
  return r.push_requests_and_check_notify();
}
bool probe_push_responses(netif::TxBackRing& r) {
  return r.push_responses_and_check_notify();
}
uint32_t probe_available_responses(netif::TxFrontRing& r) {
  return r.available_responses().count;
}
uint32_t probe_available_requests(netif::TxBackRing& r) {
  return r.available_requests().count;
}
uint32_t probe_final_check_responses(netif::TxFrontRing& r) {
  return r.final_check_for_responses().count;
}
uint32_t probe_final_check_requests(netif::TxBackRing& r) {
  return r.final_check_for_requests().count;
}
}
