// SPDX-License-Identifier: MIT
#include "netfront/ctrl_ring.h"

#include <poll.h>

#include <chrono>
#include <cstring>

#include "util/log.h"

namespace xpv {

namespace {

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

namespace netif {

const char* ctrl_type_name(uint16_t type) {
  static constexpr const char* kNames[kCtrlTypeCount] = {
      "INVALID",          "GET_HASH_FLAGS",        "SET_HASH_FLAGS",
      "SET_HASH_KEY",     "GET_HASH_MAPPING_SIZE", "SET_HASH_MAPPING_SIZE",
      "SET_HASH_MAPPING", "SET_HASH_ALGORITHM",    "GET_GREF_MAPPING_SIZE",
      "ADD_GREF_MAPPING", "DEL_GREF_MAPPING"};
  return type < kCtrlTypeCount ? kNames[type] : "unknown";
}

const char* ctrl_status_name(uint32_t status) {
  switch (status) {
    case kCtrlStatusSuccess:
      return "SUCCESS";
    case kCtrlStatusNotSupported:
      return "NOT_SUPPORTED";
    case kCtrlStatusInvalidParameter:
      return "INVALID_PARAMETER";
    case kCtrlStatusBufferOverflow:
      return "BUFFER_OVERFLOW";
  }
  return "unknown";
}

}  // namespace netif

Result<std::unique_ptr<CtrlRing>> CtrlRing::create(Platform& plat, GrantSharer& sharer,
                                                   domid_t backend, uint32_t timeout_ms) {
  std::unique_ptr<CtrlRing> r(new CtrlRing());
  r->timeout_ms_ = timeout_ms;
  auto rp = sharer.share(backend, 1, /*writable=*/true);
  if (!rp)
    return make_error(rp.error().code, "granting the control ring page: " + rp.error().message);
  r->ring_page_ = std::move(*rp);
  // Writable: netif.h's key and table pages may be read-only, but a
  // DEL_GREF_MAPPING list is "r/w" (the backend writes each entry's status).
  auto dp = sharer.share(backend, 1, /*writable=*/true);
  if (!dp)
    return make_error(dp.error().code,
                      "granting the control ring's data page: " + dp.error().message);
  r->data_page_ = std::move(*dp);
  r->ring_.attach(r->ring_page_.data(), /*init=*/true);
  auto ch = plat.open_event_channel();
  if (!ch) return ch.error();
  r->evt_ = std::move(*ch);
  auto port = r->evt_->alloc_unbound(backend);
  if (!port) return port.error();
  r->port_ = *port;
  return r;
}

CtrlRing::~CtrlRing() {
  if (evt_ && port_) (void)evt_->unbind(port_);
}

Error CtrlRing::violation(uint64_t CtrlCounters::*counter, int code, std::string reason) {
  ++(counters_.*counter);
  if (broken_reason_.empty()) broken_reason_ = reason;
  log_error("control ring: %s", reason.c_str());
  return make_error(code, std::move(reason));
}

Result<CtrlRing::Answer> CtrlRing::call(uint16_t type, uint32_t d0, uint32_t d1, uint32_t d2) {
  if (broken()) {
    return make_error(EPROTO, "the control ring is broken: " + broken_reason_);
  }
  const uint16_t id = next_id_++;
  netif::CtrlRequest& q = ring_.next_request();
  q.id = id;
  q.type = type;
  q.data[0] = d0;
  q.data[1] = d1;
  q.data[2] = d2;
  ring_.commit_request();
  ++counters_.ctrl_requests;
  // RING_PUSH_REQUESTS_AND_CHECK_NOTIFY: the store of the request before
  // the producer (release), the producer before reading req_event (fence).
  if (ring_.push_requests_and_check_notify()) (void)evt_->notify(port_);
  // An event for the next response (RING_FINAL_CHECK_FOR_RESPONSES is
  // done by final_check_for_responses() below).
  const uint64_t deadline = now_ms() + timeout_ms_;
  for (;;) {
    ring::Available a = ring_.final_check_for_responses();
    if (a.overflow) {
      return violation(&CtrlCounters::ctrl_bad_ids, EPROTO,
                       format("response producer %u is beyond the requests we sent",
                              ring::load_relaxed(ring_.header()->rsp_prod)));
    }
    if (a.count) break;
    const uint64_t now = now_ms();
    if (now >= deadline) {
      return violation(&CtrlCounters::ctrl_timeouts, ETIMEDOUT,
                       format("the backend did not answer %s (id %u) within %u ms",
                              netif::ctrl_type_name(type), id, timeout_ms_));
    }
    // Wait for the event, with a short bound: a response published without
    // a notification is still found by the re-check above.
    pollfd pf{evt_->fd(), POLLIN, 0};
    ::poll(&pf, 1, static_cast<int>(std::min<uint64_t>(deadline - now, 10)));
    for (;;) {
      auto p = evt_->pending();
      if (!p || !*p) break;
      (void)evt_->unmask(**p);
    }
  }
  // One request outstanding, so exactly one response: copied out once.
  const netif::CtrlResponse r = ring_.take_response();
  if (r.id != id) {
    return violation(&CtrlCounters::ctrl_bad_ids, EPROTO,
                     format("the response to %s names id %u; we sent id %u",
                            netif::ctrl_type_name(type), r.id, id));
  }
  if (r.type != type) {
    return violation(
        &CtrlCounters::ctrl_bad_types, EPROTO,
        format("the response to %s (id %u) has type %u (%s)", netif::ctrl_type_name(type), id,
               r.type, netif::ctrl_type_name(r.type)));
  }
  if (r.status >= 32 || !(netif::ctrl_allowed_statuses(type) & (1u << r.status))) {
    return violation(
        &CtrlCounters::ctrl_bad_statuses, EPROTO,
        format("the response to %s (id %u) has status %u (%s), which netif.h does "
               "not allow for that request",
               netif::ctrl_type_name(type), id, r.status, netif::ctrl_status_name(r.status)));
  }
  if (r.status != netif::kCtrlStatusSuccess) ++counters_.ctrl_refused;
  return Answer{r.status, r.data};
}

EndAccessReport CtrlRing::end_access() {
  if (evt_ && port_) {
    (void)evt_->unbind(port_);
    port_ = 0;
  }
  EndAccessReport a = ring_page_.end_access();
  EndAccessReport b = data_page_.end_access();
  a.pages += b.pages;
  a.ended += b.ended;
  a.still_mapped += b.still_mapped;
  a.unknown |= b.unknown;
  return a;
}

}  // namespace xpv
