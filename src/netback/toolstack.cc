// SPDX-License-Identifier: MIT
// The toolstack's part: the two xenstore directories of a vif, written the
// way xl (libxl__device_nic_add) writes them, in one transaction.
//
//   /local/domain/<D>/device/vif/<N>      owner D, dom0 may read
//   /local/domain/0/backend/vif/<D>/<N>   owner dom0, D may read
#include <utility>
#include <vector>

#include "netback/vif.h"
#include "util/log.h"

namespace xpv::netback {

Status Vif::create_nodes(XenStore& xs) {
  const domid_t d = ctx_->domid;
  const uint32_t n = ctx_->handle;
  const std::string mac = format_mac(ctx_->mac);
  using KV = std::pair<std::string, std::string>;
  std::vector<KV> fe = {
      {"backend", be_path_},
      {"backend-id", "0"},
      {"mac", mac},
      {"handle", std::to_string(n)},
  };
  if (cfg_.mtu) fe.emplace_back("mtu", std::to_string(cfg_.mtu));
  fe.emplace_back("state", std::to_string(static_cast<int>(XenbusState::kInitialising)));

  // netback_probe() writes the features, then switches to InitWait.
  std::vector<KV> be = {
      {"frontend", fe_path_},
      {"frontend-id", std::to_string(d)},
      {"online", "1"},
      {"handle", std::to_string(n)},
      {"mac", mac},
      {"feature-sg", cfg_.feature_sg ? "1" : "0"},
      {"feature-gso-tcpv4", "0"},
      {"feature-gso-tcpv6", "0"},
      {"feature-ipv6-csum-offload", "0"},
      {"feature-rx-copy", "1"},
      {"feature-rx-flip", "0"},
      {"feature-split-event-channels", cfg_.split_evtchn ? "1" : "0"},
      {"multi-queue-max-queues", std::to_string(cfg_.max_queues)},
      {"feature-ctrl-ring", "0"},
      {"state", std::to_string(static_cast<int>(XenbusState::kInitWait))},
  };

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
    for (const auto& [k, v] : be) {
      const std::string p = be_path_ + "/" + k;
      XPV_TRY(xs.write(t, p, v));
      XPV_TRY(xs.set_permissions(t, p, be_perms));
    }
    return {};
  });
  if (s.failed()) {
    return make_error(s.code(), format("%s: creating the vif's xenstore nodes: %s",
                                       ctx_->name.c_str(), s.message().c_str()));
  }
  log_info("%s: created (mac %s, frontend %s, backend %s)", ctx_->name.c_str(), mac.c_str(),
           fe_path_.c_str(), be_path_.c_str());
  return {};
}

}  // namespace xpv::netback
