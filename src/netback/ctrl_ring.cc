// SPDX-License-Identifier: MIT
// The control ring (ctrl_ring.h): set-up, the serving thread, and the
// messages, after Linux netback's interface.c and hash.c.
#include "netback/ctrl_ring.h"

#include <poll.h>
#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "util/log.h"

namespace xpv::netback {

using namespace netif;

Result<std::unique_ptr<CtrlRing>> CtrlRing::create(VifContext& vif, Platform& dom0,
                                                   GrantMapper& mapper, grant_ref_t ref,
                                                   evtchn_port_t port, uint32_t num_queues) {
  std::unique_ptr<CtrlRing> c(new CtrlRing(vif, mapper, num_queues));
  auto m = mapper.map(vif.domid, ref, /*writable=*/true);
  if (!m) return m.error();
  c->map_ = std::move(*m);
  c->ring_.attach(c->map_.data());
  if (c->ring_.available_requests().overflow) {
    return make_error(EIO, "the control ring holds an impossible number of requests");
  }
  auto ch = dom0.open_event_channel();
  if (!ch) return ch.error();
  auto p = (*ch)->bind_interdomain(vif.domid, port);
  if (!p) return p.error();
  c->port_ = *p;
  auto eoi = LateEoiChannel::create(std::move(*ch));
  if (!eoi) return eoi.error();
  c->eoi_ = std::move(*eoi);
  CtrlRing* self = c.get();
  // xenvif_ctrl_irq_fn(): serve until nothing is left; late EOI after.
  XPV_TRY(c->eoi_->add_port(c->port_, [self] {
    self->ctr_.events.add();
    bool work = false;
    while (self->action())
      work = true;
    if (!work) self->ctr_.spurious_events.add();
    return work;
  }));
  auto w = make_eventfd();
  if (!w) return w.error();
  c->wake_ = std::move(*w);
  vif.hash->set(HashConfig{});
  if (vif.cfg.static_grants) {
    std::vector<StaticGrants*> qs;
    for (auto& s : vif.static_grants)
      qs.push_back(s.get());
    c->grefs_ = std::make_unique<GrefRegistry>(mapper, vif.domid, std::move(qs));
  }
  return c;
}

CtrlRing::~CtrlRing() {
  stop();
  if (eoi_) {
    // xenvif_disconnect_ctrl(): unbind; the page goes with map_.
    eoi_->remove_port(port_);
    (void)eoi_->channel().unbind(port_);
    eoi_.reset();
  }
  // Hashing ends with the ring: frames go back to the default queue choice.
  vif_.hash->set(HashConfig{});
}

Status CtrlRing::start() {
  if (thread_.joinable()) return make_error(EBUSY, "control ring already started");
  stop_.store(false);
  thread_ = std::thread([this] { run(); });
  return {};
}

void CtrlRing::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  eventfd_signal(wake_.get());
  thread_.join();
}

void CtrlRing::run() {
  char tname[16];
  std::snprintf(tname, sizeof tname, "nb%u.%u-ctrl", vif_.domid, vif_.handle);
  ::pthread_setname_np(::pthread_self(), tname);
  // Requests published before we were bound raised no event: look once.
  while (action()) {
  }
  pollfd fds[2] = {{eoi_->fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  while (!stop_.load(std::memory_order_acquire)) {
    fds[0].revents = fds[1].revents = 0;
    const int n = ::poll(fds, 2, eoi_->next_timeout_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      log_error("%s-ctrl: poll: %s", vif_.name.c_str(), errno_string(errno).c_str());
      break;
    }
    if (fds[1].revents) eventfd_drain(wake_.get());
    if (fds[0].revents || n == 0) {
      auto r = eoi_->process();
      if (!r) {
        log_error("%s-ctrl: event channel: %s", vif_.name.c_str(), r.error().message.c_str());
        break;
      }
    }
  }
}

bool CtrlRing::action() {
  if (vif_.disabled.load(std::memory_order_acquire)) return false;
  // RING_FINAL_CHECK_FOR_REQUESTS: req_event = req_cons + 1 when empty, as
  // xenvif_ctrl_action() leaves it.
  const ring::Available a = ring_.final_check_for_requests();
  if (a.overflow) {
    // Linux does not bound this ring; a req_prod beyond it can only be a
    // broken frontend, so it is treated as the data rings' overflow.
    ctr_.fatal_errors.add();
    vif_.report_fatal("Impossible number of control requests. req_prod %u, req_cons %u, size %u",
                      ring::load_relaxed(ring_.header()->req_prod), ring_.req_cons(),
                      kCtrlRingSize);
    return false;
  }
  if (a.count == 0) return false;
  for (uint32_t i = 0; i < a.count; ++i) {
    const CtrlRequest req = ring_.take_request();  // RING_COPY_REQUEST
    ctr_.ctrl_requests.add();
    ++requests_;
    CtrlResponse rsp = process(req);
    if (rsp.status != kCtrlStatusSuccess) ctr_.ctrl_refused.add();
    if (is_ctrl_ring_fault(vif_.cfg.fault) && requests_ == fault_arg_or_default(vif_.cfg)) {
      ctr_.faults_injected.add();
      log_info("%s-ctrl: fault %s on request %u (type %u)", vif_.name.c_str(),
               to_string(vif_.cfg.fault), req.id, req.type);
      if (vif_.cfg.fault == Fault::kCtrlNoAnswer) {
        // Consumed, never answered: the response slot stays free, so
        // unanswered() keeps growing by one.
        continue;
      }
      if (vif_.cfg.fault == Fault::kCtrlWrongId) rsp.id = static_cast<uint16_t>(rsp.id ^ 0x5A5A);
      if (vif_.cfg.fault == Fault::kCtrlBadStatus) rsp.status = 0xDEAD;
    }
    respond(rsp);
  }
  return true;
}

void CtrlRing::respond(CtrlResponse rsp) {
  // make_ctrl_response() / push_ctrl_response().
  ring_.next_response() = rsp;
  ring_.commit_response();
  if (ring_.push_responses_and_check_notify()) {
    Status s = eoi_->channel().notify(port_);
    if (s.failed()) log_debug("%s-ctrl: notify: %s", vif_.name.c_str(), s.message().c_str());
    ctr_.notifies_sent.add();
  }
}

CtrlResponse CtrlRing::process(const CtrlRequest& req) {
  // process_ctrl_request(): NOT_SUPPORTED unless a case says otherwise;
  // data only with SUCCESS.
  uint32_t status = kCtrlStatusNotSupported;
  uint32_t data = 0;
  switch (req.type) {
    case kCtrlTypeSetHashAlgorithm:
      status = set_hash_algorithm(req.data[0]);
      break;
    case kCtrlTypeGetHashFlags:
      // netif.h: "A valid hash algorithm must be selected before this
      // operation can succeed" (xenvif_get_hash_flags(): NOT_SUPPORTED
      // while the algorithm is NONE).
      if (hash_.algorithm == kCtrlHashAlgorithmNone) {
        status = kCtrlStatusNotSupported;
      } else {
        status = kCtrlStatusSuccess;
        data = kSupportedHashTypes;
      }
      break;
    case kCtrlTypeSetHashFlags:
      status = set_hash_flags(req.data[0]);
      break;
    case kCtrlTypeSetHashKey:
      status = set_hash_key(req.data[0], req.data[1]);
      break;
    case kCtrlTypeGetHashMappingSize:
      status = kCtrlStatusSuccess;
      data = kMaxHashMappingSize;
      break;
    case kCtrlTypeSetHashMappingSize:
      status = set_hash_mapping_size(req.data[0]);
      break;
    case kCtrlTypeSetHashMapping:
      status = set_hash_mapping(req.data[0], req.data[1], req.data[2]);
      break;
    case kCtrlTypeGetGrefMappingSize:
      status = get_gref_mapping_size(req.data[0], &data);
      break;
    case kCtrlTypeAddGrefMapping:
    case kCtrlTypeDelGrefMapping:
      status = gref_mapping(req.type == kCtrlTypeAddGrefMapping, req.data[0], req.data[1],
                            req.data[2], &data);
      break;
    default:
      break;
  }
  if (status == kCtrlStatusSuccess && req.type <= kCtrlTypeSetHashAlgorithm) vif_.hash->set(hash_);
  return CtrlResponse{req.id, req.type, status, status == kCtrlStatusSuccess ? data : 0};
}

// xenvif_set_hash_alg().
uint32_t CtrlRing::set_hash_algorithm(uint32_t alg) {
  if (alg != kCtrlHashAlgorithmNone && alg != kCtrlHashAlgorithmToeplitz) {
    return kCtrlStatusInvalidParameter;
  }
  hash_.algorithm = alg;
  return kCtrlStatusSuccess;
}

// xenvif_set_hash_flags(): known types only, and only with an algorithm.
uint32_t CtrlRing::set_hash_flags(uint32_t flags) {
  if (flags & ~kSupportedHashTypes) return kCtrlStatusInvalidParameter;
  if (hash_.algorithm == kCtrlHashAlgorithmNone) return kCtrlStatusInvalidParameter;
  hash_.flags = flags;
  return kCtrlStatusSuccess;
}

bool CtrlRing::copy_from_frontend(grant_ref_t gref, void* dst, uint32_t len) {
  GrantCopyOp op;
  op.source = {true, vif_.domid, gref, 0, nullptr};
  op.dest = {false, 0, 0, 0, dst};
  op.len = static_cast<uint16_t>(len);
  Status s = mapper_.copy(std::span<GrantCopyOp>(&op, 1));
  return !s.failed() && op.status == 0;
}

// xenvif_set_hash_key(): at most 40 bytes from the start of the granted
// page; the rest of the key is zero. (Linux copies straight into the key, so
// a failed copy may leave part of it changed; we keep the old key.)
uint32_t CtrlRing::set_hash_key(grant_ref_t gref, uint32_t len) {
  if (len > kMaxHashKeySize) return kCtrlStatusInvalidParameter;
  std::array<uint8_t, kMaxHashKeySize> key{};
  if (len != 0 && !copy_from_frontend(gref, key.data(), len)) return kCtrlStatusInvalidParameter;
  hash_.key = key;
  return kCtrlStatusSuccess;
}

// xenvif_set_hash_mapping_size(): at most 128 entries, all of them zero.
uint32_t CtrlRing::set_hash_mapping_size(uint32_t size) {
  if (size > kMaxHashMappingSize) return kCtrlStatusInvalidParameter;
  hash_.size = size;
  hash_.mapping.fill(0);
  return kCtrlStatusSuccess;
}

// xenvif_set_hash_mapping(): entries [off, off + len) of the table from the
// start of the granted page (whole page at most); every entry must name a
// queue of this connection. Nothing changes unless all of it is valid.
uint32_t CtrlRing::set_hash_mapping(grant_ref_t gref, uint32_t len, uint32_t off) {
  if (off + len < off || off + len > hash_.size || len > kPageSize / sizeof(uint32_t)) {
    return kCtrlStatusInvalidParameter;
  }
  std::array<uint32_t, kMaxHashMappingSize> m = hash_.mapping;
  if (len != 0 && !copy_from_frontend(gref, m.data() + off, len * sizeof(uint32_t))) {
    return kCtrlStatusInvalidParameter;
  }
  for (uint32_t i = off; i < off + len; ++i) {
    if (m[i] >= num_queues_) return kCtrlStatusInvalidParameter;
  }
  hash_.mapping = m;
  return kCtrlStatusSuccess;
}

bool CtrlRing::copy_to_frontend(grant_ref_t gref, const void* src, uint32_t len) {
  GrantCopyOp op;
  op.source = {false, 0, 0, 0, const_cast<void*>(src)};
  op.dest = {true, vif_.domid, gref, 0, nullptr};
  op.len = static_cast<uint16_t>(len);
  Status s = mapper_.copy(std::span<GrantCopyOp>(&op, 1));
  return !s.failed() && op.status == 0;
}

// GET_GREF_MAPPING_SIZE: how many grants a queue may register.
uint32_t CtrlRing::get_gref_mapping_size(uint32_t queue, uint32_t* data) {
  if (!grefs_) return kCtrlStatusNotSupported;
  if (queue >= grefs_->queues()) return kCtrlStatusInvalidParameter;
  *data = kMaxStaticGrantsPerQueue;
  return kCtrlStatusSuccess;
}

// ADD/DEL_GREF_MAPPING: a table of struct xen_netif_gref at the start of
// the granted page (so at most 512 entries). ADD maps all or nothing (the
// response's status says which); DEL removes each registered entry, writes
// each entry's status back into the frontend's page and answers how many it
// removed.
uint32_t CtrlRing::gref_mapping(bool add, uint32_t queue, grant_ref_t list, uint32_t count,
                                uint32_t* data) {
  if (!grefs_) return kCtrlStatusNotSupported;
  constexpr uint32_t kMaxEntries = kPageSize / sizeof(CtrlGref);
  if (queue >= grefs_->queues() || count > kMaxEntries) return kCtrlStatusInvalidParameter;
  std::array<CtrlGref, kMaxEntries> entries;
  if (count != 0 && !copy_from_frontend(list, entries.data(), count * sizeof(CtrlGref))) {
    return kCtrlStatusInvalidParameter;
  }
  std::array<grant_ref_t, kMaxEntries> refs;
  std::array<bool, kMaxEntries> flag;
  for (uint32_t i = 0; i < count; ++i) {
    refs[i] = entries[i].ref;
    flag[i] = (entries[i].flags & kCtrlGrefReadonly) != 0;
  }
  if (add) {
    if (!grefs_->add(queue, std::span(refs.data(), count), std::span(flag.data(), count))) {
      return kCtrlStatusInvalidParameter;
    }
    ctr_.static_grants_added.add(count);
    return kCtrlStatusSuccess;
  }
  const uint32_t removed =
      grefs_->del(queue, std::span(refs.data(), count), std::span(flag.data(), count));
  for (uint32_t i = 0; i < count; ++i)
    entries[i].status =
        static_cast<uint16_t>(flag[i] ? kCtrlStatusSuccess : kCtrlStatusInvalidParameter);
  ctr_.static_grants_removed.add(removed);
  if (count != 0 && !copy_to_frontend(list, entries.data(), count * sizeof(CtrlGref))) {
    return kCtrlStatusInvalidParameter;  // removed all the same: the statuses are lost
  }
  *data = removed;
  return kCtrlStatusSuccess;
}

}  // namespace xpv::netback
