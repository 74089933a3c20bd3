// SPDX-License-Identifier: MIT
// The toolstack's part: the two xenstore directories of a vif, written the
// way xl (libxl__device_nic_add) writes them, in one transaction, and
// removed the way xl network-detach removes them. The hostile-xenstore
// faults (--fault xs-*) change the values written here.
//
//   /local/domain/<D>/device/vif/<N>      owner D, dom0 may read
//   /local/domain/0/backend/vif/<D>/<N>   owner dom0, D may read
#include <utility>
#include <vector>

#include "netback/vif.h"
#include "util/log.h"

namespace xpv::netback {

namespace {

// The vif's mac key as a fault would write it.
std::string mac_value(const Config& cfg, const Mac& m) {
  const std::string mac = format_mac(m);
  switch (cfg.fault) {
    case Fault::kXsBadMac:
      return mac.substr(0, 9) + "zz" + mac.substr(11);  // "00:16:3e:zz:01:00"
    case Fault::kXsMulticastMac: {
      Mac mc = m;
      mc[0] |= 1;  // the group bit
      return format_mac(mc);
    }
    default:
      return mac;
  }
}

}  // namespace

std::vector<Vif::KeyValue> Vif::feature_keys() const {
  // What netback_probe() writes, or a fault's garbage.
  const bool garbage = cfg_.fault == Fault::kXsFeatureGarbage;
  std::string max_queues = std::to_string(cfg_.max_queues);
  if (cfg_.fault == Fault::kXsMaxQueuesZero) max_queues = "0";
  if (cfg_.fault == Fault::kXsMaxQueuesHuge) max_queues = "4294967295";
  return {
      {"feature-sg", garbage           ? "yes"
                     : cfg_.feature_sg ? "1"
                                       : "0"},
      {"feature-gso-tcpv4", garbage            ? "true"
                            : cfg_.feature_gso ? "1"
                                               : "0"},
      {"feature-gso-tcpv6", cfg_.feature_gso ? "1" : "0"},
      {"feature-ipv6-csum-offload", cfg_.feature_ipv6_csum ? "1" : "0"},
      {"feature-multicast-control", cfg_.multicast_control ? "1" : "0"},
      {"feature-dynamic-multicast-control",
       cfg_.multicast_control && cfg_.dynamic_multicast_control ? "1" : "0"},
      {"feature-rx-copy", "1"},
      {"feature-rx-flip", "0"},
      {"feature-split-event-channels", garbage             ? "2"
                                       : cfg_.split_evtchn ? "1"
                                                           : "0"},
      {"multi-queue-max-queues", max_queues},
      {"feature-ctrl-ring", garbage          ? " 1"
                            : cfg_.ctrl_ring ? "1"
                                             : "0"},
  };
}

Status Vif::write_backend_keys(XenStore& xs, xs_transaction_t t, const std::vector<KeyValue>& kvs) {
  const domid_t d = ctx_->domid;
  const XsPermission be_perms[] = {{kDom0, XsPermission::kNone}, {d, XsPermission::kRead}};
  for (const auto& [k, v] : kvs) {
    const std::string p = be_path_ + "/" + k;
    XPV_TRY(xs.write(t, p, v));
    XPV_TRY(xs.set_permissions(t, p, be_perms));
  }
  return {};
}

Status Vif::create_nodes(XenStore& xs) {
  const domid_t d = ctx_->domid;
  const uint32_t n = ctx_->handle;
  const std::string mac = format_mac(ctx_->mac);
  std::vector<KeyValue> fe = {
      {"backend", be_path_},
      {"backend-id", "0"},
      {"mac", mac_value(cfg_, ctx_->mac)},
      {"handle", std::to_string(n)},
  };
  if (cfg_.fault == Fault::kXsBadMtu) {
    fe.emplace_back("mtu", "4294967295");
  } else if (cfg_.mtu) {
    fe.emplace_back("mtu", std::to_string(cfg_.mtu));
  }
  fe.emplace_back("state", std::to_string(static_cast<int>(XenbusState::kInitialising)));

  // netback_probe() writes the features, then switches to InitWait.
  std::vector<KeyValue> be = {
      {"frontend", fe_path_}, {"frontend-id", std::to_string(d)},
      {"online", "1"},        {"handle", std::to_string(n)},
      {"mac", mac},
  };
  for (auto& kv : feature_keys())
    be.push_back(std::move(kv));
  be.emplace_back("state", std::to_string(static_cast<int>(XenbusState::kInitWait)));

  const XsPermission fe_perms[] = {{d, XsPermission::kNone}, {kDom0, XsPermission::kRead}};
  const XsPermission be_perms[] = {{kDom0, XsPermission::kNone}, {d, XsPermission::kRead}};
  const std::string be_domain_dir = "/local/domain/0/backend/vif/" + std::to_string(d);

  Status s = xs_transact(xs, [&](xs_transaction_t t) -> Status {
    XPV_TRY(xs.mkdir(t, fe_path_));
    XPV_TRY(xs.set_permissions(t, fe_path_, fe_perms));
    for (const auto& [k, v] : fe) {
      const std::string p = fe_path_ + "/" + k;
      XPV_TRY(xs.write(t, p, v));
      XPV_TRY(xs.set_permissions(t, p, fe_perms));
    }
    XPV_TRY(xs.mkdir(t, be_path_));
    XPV_TRY(xs.set_permissions(t, be_domain_dir, be_perms));
    XPV_TRY(xs.set_permissions(t, be_path_, be_perms));
    return write_backend_keys(xs, t, be);
  });
  if (s.failed()) {
    return make_error(s.code(), format("%s: creating the vif's xenstore nodes: %s",
                                       ctx_->name.c_str(), s.message().c_str()));
  }
  log_info("%s: created (mac %s, frontend %s, backend %s)", ctx_->name.c_str(), mac.c_str(),
           fe_path_.c_str(), be_path_.c_str());
  if (cfg_.fault >= Fault::kXsBadMac && cfg_.fault <= Fault::kXsFeatureGarbage) {
    ctr_.faults_injected.add();
    log_info("%s: fault %s: hostile values written to xenstore", ctx_->name.c_str(),
             to_string(cfg_.fault));
  }
  return {};
}

Status Vif::remove_nodes(XenStore& xs) {
  // libxl__device_destroy: both directories go, in one transaction.
  Status s = xs_transact(xs, [&](xs_transaction_t t) -> Status {
    XPV_TRY(xs.rm(t, fe_path_));
    return xs.rm(t, be_path_);
  });
  if (s.failed()) {
    return make_error(s.code(), format("%s: removing the vif's xenstore nodes: %s",
                                       ctx_->name.c_str(), s.message().c_str()));
  }
  return {};
}

Status Vif::remove_feature_keys(XenStore& xs) {
  return xs_transact(xs, [&](xs_transaction_t t) -> Status {
    for (const auto& [k, v] : feature_keys())
      XPV_TRY(xs.rm(t, be_path_ + "/" + k));
    return {};
  });
}

Status Vif::restore_feature_keys(XenStore& xs) {
  const std::vector<KeyValue> kvs = feature_keys();
  return xs_transact(xs, [&](xs_transaction_t t) { return write_backend_keys(xs, t, kvs); });
}

}  // namespace xpv::netback
