// SPDX-License-Identifier: MIT
// The backend's end of a netif control ring, played by a test: it waits for
// the frontend's ctrl-ring-ref and event-channel-ctrl keys, maps the ring,
// binds the port and answers each request on its own thread as Linux
// netback's hash.c does (Toeplitz only, key up to 40 bytes, mapping table
// up to 128 entries, each entry a queue below multi-queue-num-queues), with
// the static-grant messages answered NOT_SUPPORTED unless gref_mapping_size
// is set (then ADD/DEL_GREF_MAPPING keep a table of registered grefs). A
// fault per request type turns it hostile: no answer, a wrong id, a wrong
// type, or a status netif.h does not allow.
#pragma once

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "netfront/ctrl_ring.h"
#include "xpv/platform.h"

namespace xpv::testing {

class CtrlResponder {
 public:
  enum class Fault { kNone, kNoAnswer, kWrongId, kWrongType, kBadStatus };

  struct State {
    uint32_t algorithm = netif::kCtrlHashAlgorithmNone;
    uint32_t flags = 0;
    std::vector<uint8_t> key;
    std::vector<uint32_t> mapping;
    std::vector<uint16_t> types_seen;   // every request type, in order
    std::set<grant_ref_t> grefs;        // registered (static grants)
    std::vector<uint32_t> gref_chunks;  // entries of each ADD_GREF_MAPPING
    uint32_t gref_readonly = 0;         // registered entries flagged read-only
  };

  // `dom0`: the backend's platform; `fe`: the frontend's vif directory.
  CtrlResponder(Platform& dom0, domid_t frontend, std::string fe, uint32_t num_queues)
      : dom0_(dom0), domu_(frontend), fe_(std::move(fe)), queues_(num_queues) {}
  ~CtrlResponder() { stop(); }

  void set_fault(uint16_t type, Fault f) {
    std::lock_guard lk(mu_);
    faults_[type] = f;
  }
  // GET_GREF_MAPPING_SIZE's answer: 0 = NOT_SUPPORTED (Linux netback).
  void set_gref_mapping_size(uint32_t n) { gref_size_ = n; }
  void set_mapping_size_max(uint32_t n) { mapping_max_ = n; }

  void start() {
    run_ = true;
    th_ = std::thread([this] { serve(); });
  }
  void stop() {
    run_ = false;
    if (th_.joinable()) th_.join();
  }
  State state() {
    std::lock_guard lk(mu_);
    return st_;
  }
  // How many rings it served (one per connection).
  uint32_t connections() const { return connections_; }

 private:
  void serve() {
    auto xs = dom0_.open_xenstore();
    auto mapper = dom0_.open_grant_mapper();
    auto evt = dom0_.open_event_channel();
    if (!xs || !mapper || !evt) return;
    std::string last_ref;
    GrantMapping ring_map;
    netif::CtrlBackRing ring;
    evtchn_port_t port = 0;
    while (run_) {
      // A (new) connection: the frontend wrote its keys.
      auto ref = (*xs)->try_read(kXsNoTransaction, fe_ + "/ctrl-ring-ref");
      auto ev = (*xs)->try_read(kXsNoTransaction, fe_ + "/event-channel-ctrl");
      auto state = (*xs)->try_read(kXsNoTransaction, fe_ + "/state");
      const bool keyed = ref && *ref && ev && *ev && state && *state && **state == "4";
      if (keyed && **ref != last_ref) {
        if (port) (void)(*evt)->unbind(port);
        ring_map.reset();
        auto m = (*mapper)->map(domu_, static_cast<grant_ref_t>(std::stoul(**ref)), true);
        auto p = (*evt)->bind_interdomain(domu_, static_cast<evtchn_port_t>(std::stoul(**ev)));
        if (m && p) {
          ring_map = std::move(*m);
          ring.attach(ring_map.data());
          port = *p;
          last_ref = **ref;
          ++connections_;
        }
      } else if (!keyed && ring_map.valid()) {
        if (port) (void)(*evt)->unbind(port);
        port = 0;
        ring_map.reset();
        ring = {};
        last_ref.clear();
      }
      if (ring_map.valid()) {
        ring::Available a = ring.final_check_for_requests();
        bool answered = false;
        for (uint32_t i = 0; i < a.count; ++i) {
          const netif::CtrlRequest q = ring.take_request();
          answered |= answer(ring, **mapper, q);
        }
        if (answered && ring.push_responses_and_check_notify()) (void)(*evt)->notify(port);
      }
      pollfd pf{(*evt)->fd(), POLLIN, 0};
      ::poll(&pf, 1, 2);
      for (;;) {
        auto pe = (*evt)->pending();
        if (!pe || !*pe) break;
        (void)(*evt)->unmask(**pe);
      }
    }
    if (port) (void)(*evt)->unbind(port);
  }

  // Grant-copies `len` bytes from the start of the frontend's page `ref`.
  bool copy_in(GrantMapper& mapper, grant_ref_t ref, void* out, uint32_t len) {
    if (len == 0) return true;
    GrantCopyOp op;
    op.source = {true, domu_, ref, 0, nullptr};
    op.dest = {false, 0, 0, 0, out};
    op.len = static_cast<uint16_t>(len);
    return !mapper.copy(std::span<GrantCopyOp>(&op, 1)).failed() && op.status == 0;
  }

  // Returns whether a response was written.
  bool answer(netif::CtrlBackRing& ring, GrantMapper& mapper, const netif::CtrlRequest& q) {
    using namespace netif;
    std::lock_guard lk(mu_);
    st_.types_seen.push_back(q.type);
    const Fault f = faults_.count(q.type) ? faults_[q.type] : Fault::kNone;
    if (f == Fault::kNoAnswer) return false;
    uint32_t status = kCtrlStatusSuccess, data = 0;
    switch (q.type) {
      case kCtrlTypeSetHashAlgorithm:
        if (q.data[0] == kCtrlHashAlgorithmNone || q.data[0] == kCtrlHashAlgorithmToeplitz)
          st_.algorithm = q.data[0];
        else
          status = kCtrlStatusInvalidParameter;
        break;
      case kCtrlTypeGetHashFlags:
        // netif.h: only once an algorithm is selected (Linux netback's
        // xenvif_get_hash_flags() answers NOT_SUPPORTED before).
        if (st_.algorithm == kCtrlHashAlgorithmNone)
          status = kCtrlStatusNotSupported;
        else
          data = kCtrlHashTypeAll;
        break;
      case kCtrlTypeSetHashFlags:
        if (q.data[0] & ~kCtrlHashTypeAll)
          status = kCtrlStatusInvalidParameter;
        else if (st_.algorithm == kCtrlHashAlgorithmNone)
          status = kCtrlStatusInvalidParameter;
        else
          st_.flags = q.data[0];
        break;
      case kCtrlTypeSetHashKey: {
        if (q.data[1] > 40) {
          status = kCtrlStatusBufferOverflow;
          break;
        }
        std::vector<uint8_t> k(q.data[1]);
        if (!copy_in(mapper, q.data[0], k.data(), q.data[1])) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        st_.key = k;
        break;
      }
      case kCtrlTypeGetHashMappingSize:
        data = mapping_max_;
        break;
      case kCtrlTypeSetHashMappingSize:
        if (q.data[0] > mapping_max_) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        st_.mapping.assign(q.data[0], 0);
        break;
      case kCtrlTypeSetHashMapping: {
        const uint32_t len = q.data[1], off = q.data[2];
        if (off + len < off || off + len > st_.mapping.size() || len > kPageSize / 4) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        std::vector<uint32_t> m(len);
        if (!copy_in(mapper, q.data[0], m.data(), len * 4)) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        if (std::any_of(m.begin(), m.end(), [&](uint32_t e) { return e >= queues_; })) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        std::copy(m.begin(), m.end(), st_.mapping.begin() + off);
        break;
      }
      case kCtrlTypeGetGrefMappingSize:
        if (gref_size_ == 0)
          status = kCtrlStatusNotSupported;
        else
          data = gref_size_;
        break;
      case kCtrlTypeAddGrefMapping:
      case kCtrlTypeDelGrefMapping: {
        if (gref_size_ == 0) {
          status = kCtrlStatusNotSupported;
          break;
        }
        const uint32_t n = q.data[2];
        if (n > kPageSize / sizeof(CtrlGref)) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        std::vector<CtrlGref> g(n);
        if (!copy_in(mapper, q.data[1], g.data(), n * static_cast<uint32_t>(sizeof(CtrlGref)))) {
          status = kCtrlStatusInvalidParameter;
          break;
        }
        if (q.type == kCtrlTypeAddGrefMapping) {
          if (st_.grefs.size() + n > gref_size_) {
            status = kCtrlStatusInvalidParameter;
            break;
          }
          for (const CtrlGref& e : g) {
            st_.grefs.insert(e.ref);
            if (e.flags & kCtrlGrefReadonly) ++st_.gref_readonly;
          }
          st_.gref_chunks.push_back(n);
        } else {
          for (const CtrlGref& e : g)
            data += static_cast<uint32_t>(st_.grefs.erase(e.ref));
        }
        break;
      }
      default:
        status = kCtrlStatusNotSupported;
    }
    CtrlResponse& r = ring.next_response();
    r.id = q.id;
    r.type = q.type;
    r.status = status;
    r.data = data;
    if (f == Fault::kWrongId) r.id = static_cast<uint16_t>(q.id + 7);
    if (f == Fault::kWrongType) r.type = static_cast<uint16_t>(q.type + 1);
    if (f == Fault::kBadStatus) r.status = 9;
    ring.commit_response();
    return true;
  }

  Platform& dom0_;
  const domid_t domu_;
  const std::string fe_;
  const uint32_t queues_;
  std::atomic<bool> run_{false};
  std::atomic<uint32_t> gref_size_{0};
  std::atomic<uint32_t> mapping_max_{128};
  std::atomic<uint32_t> connections_{0};
  std::thread th_;
  std::mutex mu_;
  std::map<uint16_t, Fault> faults_;
  State st_;
};

}  // namespace xpv::testing
