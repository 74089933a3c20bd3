// SPDX-License-Identifier: MIT
// The netif control ring (netif.h "Control ring"): one granted page of
// struct xen_netif_ctrl_request/response entries and its own event channel,
// offered when the backend writes feature-ctrl-ring=1 and connected by the
// frontend's ctrl-ring-ref and event-channel-ctrl keys (written before the
// frontend goes Connected).
//
// A request is posted and its answer awaited with a deadline: the control
// thread never blocks longer than the timeout. The backend answering late
// (never), with an id we did not send, with another type than asked, or
// with a status netif.h does not allow for that request type breaks the
// ring: the violation is counted under its own name, the reason is kept for
// the device (which disconnects), and every later call fails at once.
//
// A second granted page carries the
// out-of-band data of a request (a hash key, a mapping (sub-)table, a gref
// list): netif.h requires it to stay valid until the response is processed,
// which a single outstanding request guarantees.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ring/netif_ctrl.h"
#include "xpv/counters.h"
#include "xpv/platform.h"

namespace xpv {

namespace netif {

inline constexpr uint16_t kCtrlTypeCount = 11;  // XEN_NETIF_CTRL_TYPE_* defined
inline constexpr uint32_t kCtrlHashTypeAll =
    kCtrlHashTypeIpv4 | kCtrlHashTypeIpv4Tcp | kCtrlHashTypeIpv6 | kCtrlHashTypeIpv6Tcp;

// The statuses netif.h lets a backend answer to `type` (bit per status),
// 0 for a type netif.h does not define.
constexpr uint32_t ctrl_allowed_statuses(uint16_t type) {
  constexpr uint32_t S = 1u << kCtrlStatusSuccess, N = 1u << kCtrlStatusNotSupported,
                     I = 1u << kCtrlStatusInvalidParameter, B = 1u << kCtrlStatusBufferOverflow;
  switch (type) {
    case kCtrlTypeGetHashFlags:
    case kCtrlTypeGetHashMappingSize:
      return S | N;
    case kCtrlTypeSetHashFlags:
    case kCtrlTypeSetHashMappingSize:
    case kCtrlTypeSetHashAlgorithm:
    case kCtrlTypeGetGrefMappingSize:
    case kCtrlTypeAddGrefMapping:
    case kCtrlTypeDelGrefMapping:
      return S | N | I;
    case kCtrlTypeSetHashKey:
    case kCtrlTypeSetHashMapping:
      return S | N | I | B;
    default:
      return 0;
  }
}
const char* ctrl_type_name(uint16_t type);
const char* ctrl_status_name(uint32_t status);

}  // namespace netif

class CtrlRing {
 public:
  // Grants the ring page (writable: the backend writes responses) and the
  // data page to `backend`, and allocates an
  // unbound event channel port for it.
  static Result<std::unique_ptr<CtrlRing>> create(Platform& plat, GrantSharer& sharer,
                                                  domid_t backend, uint32_t timeout_ms);
  ~CtrlRing();
  CtrlRing(const CtrlRing&) = delete;
  CtrlRing& operator=(const CtrlRing&) = delete;

  grant_ref_t ring_ref() const { return ring_page_.ref(0); }  // ctrl-ring-ref
  evtchn_port_t port() const { return port_; }                // event-channel-ctrl

  // The out-of-band data page (a request's key, table or gref list).
  uint8_t* data() const { return data_page_.data(); }
  grant_ref_t data_ref() const { return data_page_.ref(0); }

  struct Answer {
    uint32_t status = 0;  // kCtrlStatus*
    uint32_t data = 0;
  };
  // Sends one request and waits for its answer. A status the backend may
  // give (NOT_SUPPORTED...) is an Answer; the Result fails (EPROTO, ETIMEDOUT)
  // when the backend broke the protocol, and the ring is broken from then on.
  Result<Answer> call(uint16_t type, uint32_t d0 = 0, uint32_t d1 = 0, uint32_t d2 = 0);

  bool broken() const { return !broken_reason_.empty(); }
  const std::string& broken_reason() const { return broken_reason_; }
  const CtrlCounters& counters() const { return counters_; }

  // Ends access to both pages (after the backend let go); what happened.
  EndAccessReport end_access();

 private:
  CtrlRing() = default;
  Error violation(uint64_t CtrlCounters::*counter, int code, std::string reason);
  std::unique_ptr<EventChannel> evt_;
  SharedPages ring_page_;
  SharedPages data_page_;
  netif::CtrlFrontRing ring_;
  evtchn_port_t port_ = 0;
  uint32_t timeout_ms_ = 0;
  uint16_t next_id_ = 0;
  std::string broken_reason_;
  CtrlCounters counters_;
};

}  // namespace xpv
