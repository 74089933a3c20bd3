// SPDX-License-Identifier: MIT
// The platform interface's shared pieces and the run-time factory.
#include "xpv/platform.h"

#include "sim/client.h"
#include "util/log.h"

namespace xpv {

// ---- SharedPages -------------------------------------------------------------

SharedPages::SharedPages(GrantSharer* owner, void* addr, std::vector<grant_ref_t> refs,
                         domid_t domid, bool writable)
    : owner_(owner), addr_(addr), refs_(std::move(refs)), domid_(domid), writable_(writable) {}

SharedPages::SharedPages(SharedPages&& o) noexcept {
  *this = std::move(o);
}

SharedPages& SharedPages::operator=(SharedPages&& o) noexcept {
  if (this != &o) {
    if (valid()) (void)end_access();
    owner_ = std::exchange(o.owner_, nullptr);
    addr_ = std::exchange(o.addr_, nullptr);
    refs_ = std::move(o.refs_);
    o.refs_.clear();
    domid_ = o.domid_;
    writable_ = o.writable_;
  }
  return *this;
}

SharedPages::~SharedPages() {
  if (!valid()) return;
  EndAccessReport r = end_access();
  if (r.still_mapped) {
    log_warn(
        "%u of %u pages granted to domain %u are still mapped by it: kept, not freed, until "
        "it unmaps them",
        r.still_mapped, r.pages, domid_);
  }
}

EndAccessReport SharedPages::end_access() {
  if (!valid()) return {};
  EndAccessReport r = owner_->unshare(addr_, refs_);
  addr_ = nullptr;
  owner_ = nullptr;
  refs_.clear();
  return r;
}

// ---- GrantMapping --------------------------------------------------------------

GrantMapping& GrantMapping::operator=(GrantMapping&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::exchange(o.owner_, nullptr);
    addr_ = std::exchange(o.addr_, nullptr);
    handle_ = std::exchange(o.handle_, 0);
  }
  return *this;
}

void GrantMapping::reset() {
  if (addr_ && owner_) owner_->unmap(addr_, handle_);
  addr_ = nullptr;
  owner_ = nullptr;
  handle_ = 0;
}

// ---- xenstore helpers ------------------------------------------------------------

Result<XsPermission> parse_xs_permission(std::string_view s) {
  if (s.size() < 2)
    return make_error(
        EINVAL, format("bad xenstore permission '%.*s'", static_cast<int>(s.size()), s.data()));
  XsPermission p;
  switch (s[0]) {
    case 'n':
      p.access = XsPermission::kNone;
      break;
    case 'r':
      p.access = XsPermission::kRead;
      break;
    case 'w':
      p.access = XsPermission::kWrite;
      break;
    case 'b':
      p.access = XsPermission::kBoth;
      break;
    default:
      return make_error(EINVAL,
                        format("bad xenstore permission '%.*s': access must be n, r, w or b",
                               static_cast<int>(s.size()), s.data()));
  }
  uint32_t d = 0;
  for (char c : s.substr(1)) {
    if (c < '0' || c > '9' || d > 0xFFFF) {
      return make_error(EINVAL, format("bad xenstore permission '%.*s': domain id must be a number",
                                       static_cast<int>(s.size()), s.data()));
    }
    d = d * 10 + static_cast<uint32_t>(c - '0');
  }
  if (d > 0xFFFF) return make_error(EINVAL, "xenstore permission domain id out of range");
  p.domid = static_cast<domid_t>(d);
  return p;
}

std::string to_string(const XsPermission& p) {
  static const char kLetters[] = {'n', 'r', 'w', 'b'};
  return std::string(1, kLetters[p.access & 3]) + std::to_string(p.domid);
}

Result<std::optional<std::string>> XenStore::try_read(xs_transaction_t t, std::string_view path) {
  auto r = read(t, path);
  if (r) return std::optional<std::string>(std::move(*r));
  if (r.error().code == ENOENT) return std::optional<std::string>();
  return r.error();
}

// ---- factory ------------------------------------------------------------------------

Result<std::unique_ptr<Platform>> open_platform(std::string_view spec) {
  if (spec == "xen") return open_xen_platform();
  if (spec.starts_with("sim:")) {
    std::string path(spec.substr(4));
    if (path.empty()) return make_error(EINVAL, "platform 'sim:' needs a socket path: sim:PATH");
    return sim::connect_platform(path);
  }
  return make_error(EINVAL, format("unknown platform '%.*s': expected 'xen' or 'sim:PATH'",
                                   static_cast<int>(spec.size()), spec.data()));
}

}  // namespace xpv
