// SPDX-License-Identifier: MIT
#include "netfront/xenbus_keys.h"

namespace xpv {

namespace {

// Keys Linux netfront's talk_to_netback() and ours write, per queue and for
// the device.
constexpr const char* kQueueKeys[] = {"tx-ring-ref", "rx-ring-ref", "event-channel",
                                      "event-channel-tx", "event-channel-rx"};
constexpr const char* kDeviceKeys[] = {"multi-queue-num-queues",
                                       "request-rx-copy",
                                       "feature-rx-notify",
                                       "feature-sg",
                                       "feature-gso-tcpv4",
                                       "feature-gso-tcpv6",
                                       "feature-ipv6-csum-offload",
                                       "feature-no-csum-offload",
                                       "feature-rx-flip",
                                       "feature-xdp",
                                       "xdp-headroom",
                                       "ctrl-ring-ref",
                                       "event-channel-ctrl",
                                       "feature-ctrl-ring",
                                       "request-multicast-control",
                                       "error"};

Status rm_if_present(XenStore& xs, xs_transaction_t t, const std::string& path) {
  Status s = xs.rm(t, path);
  if (s.failed() && s.code() != ENOENT) return s;
  return {};
}

Status write_queue(XenStore& xs, xs_transaction_t t, const std::string& dir, const QueueKeys& q) {
  XPV_TRY(xs.write(t, dir + "/tx-ring-ref", std::to_string(q.tx_ring_ref)));
  XPV_TRY(xs.write(t, dir + "/rx-ring-ref", std::to_string(q.rx_ring_ref)));
  if (q.split) {
    XPV_TRY(xs.write(t, dir + "/event-channel-tx", std::to_string(q.tx_port)));
    XPV_TRY(xs.write(t, dir + "/event-channel-rx", std::to_string(q.rx_port)));
  } else {
    XPV_TRY(xs.write(t, dir + "/event-channel", std::to_string(q.tx_port)));
  }
  return {};
}

}  // namespace

Status remove_stale_keys(XenStore& xs, xs_transaction_t t, const std::string& fe) {
  for (const char* k : kQueueKeys)
    XPV_TRY(rm_if_present(xs, t, fe + "/" + k));
  for (const char* k : kDeviceKeys)
    XPV_TRY(rm_if_present(xs, t, fe + "/" + k));
  // queue-N directories of any earlier multi-queue frontend.
  auto dir = xs.directory(t, fe);
  if (!dir) return dir.error();
  for (const std::string& child : *dir) {
    if (child.starts_with("queue-")) XPV_TRY(rm_if_present(xs, t, fe + "/" + child));
  }
  return {};
}

Status write_frontend_keys(XenStore& xs, xs_transaction_t t, const XenbusKeys& k) {
  const std::string& fe = k.frontend_path;
  if (k.queues.size() == 1) {
    XPV_TRY(write_queue(xs, t, fe, k.queues[0]));
  } else {
    XPV_TRY(xs.write(t, fe + "/multi-queue-num-queues", std::to_string(k.queues.size())));
    for (size_t i = 0; i < k.queues.size(); ++i) {
      XPV_TRY(write_queue(xs, t, fe + "/queue-" + std::to_string(i), k.queues[i]));
    }
  }
  // netback requires request-rx-copy; feature-rx-notify tells it we post RX
  // buffers and notify (else it drains after 30 ms). Checksum offload is
  // assumed unless feature-no-csum-offload=1 (netif.h): then netback
  // completes every checksum before handing a packet over; IPv6 partial
  // checksums only with feature-ipv6-csum-offload. feature-gso-tcpv4/-v6:
  // we take GSO packets (with feature-sg: they are multi-slot).
  XPV_TRY(xs.write(t, fe + "/request-rx-copy", "1"));
  XPV_TRY(xs.write(t, fe + "/feature-rx-notify", "1"));
  XPV_TRY(xs.write(t, fe + "/feature-sg", k.sg ? "1" : "0"));
  XPV_TRY(xs.write(t, fe + "/feature-no-csum-offload", k.rx_csum ? "0" : "1"));
  XPV_TRY(xs.write(t, fe + "/feature-ipv6-csum-offload", k.rx_csum ? "1" : "0"));
  XPV_TRY(xs.write(t, fe + "/feature-gso-tcpv4", k.rx_gso ? "1" : "0"));
  XPV_TRY(xs.write(t, fe + "/feature-gso-tcpv6", k.rx_gso ? "1" : "0"));
  if (k.ctrl_ring) {
    // netif.h: "These keys must be set before the frontend moves into the
    // connected state" (same transaction).
    XPV_TRY(xs.write(t, fe + "/ctrl-ring-ref", std::to_string(k.ctrl_ring_ref)));
    XPV_TRY(xs.write(t, fe + "/event-channel-ctrl", std::to_string(k.ctrl_port)));
  }
  return xs.write(t, fe + "/state", "4");  // XenbusStateConnected
}

}  // namespace xpv
