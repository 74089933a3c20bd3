// SPDX-License-Identifier: MIT
// The keys a netif frontend writes in its xenstore directory, and the stale
// ones it must remove first (netif-notes.md: an unbound kernel netfront
// leaves event-channel-tx/-rx and queue keys behind, and netback prefers
// those over event-channel: "mapping shared-frames" fails).
#pragma once

#include <string>
#include <vector>

#include "netfront/queue.h"
#include "xpv/platform.h"

namespace xpv {

struct XenbusKeys {
  std::string frontend_path;
  std::vector<QueueKeys> queues;
  bool sg = false;       // feature-sg: we take multi-slot packets
  bool rx_csum = false;  // we take partial checksums (no feature-no-csum-offload)
  bool rx_gso = false;   // feature-gso-tcpv4/-tcpv6: we take GSO packets
  // The control ring (netif.h: ctrl-ring-ref, event-channel-ctrl), when
  // the backend offers feature-ctrl-ring.
  bool ctrl_ring = false;
  grant_ref_t ctrl_ring_ref = 0;
  evtchn_port_t ctrl_port = 0;
};

// Removes every key a netfront (ours or Linux's) may have written.
Status remove_stale_keys(XenStore& xs, xs_transaction_t t, const std::string& frontend_path);

// Writes the ring references, event channels, features and state Connected.
Status write_frontend_keys(XenStore& xs, xs_transaction_t t, const XenbusKeys& k);

}  // namespace xpv
