// SPDX-License-Identifier: MIT
// Bridge mode: the inboxes, the learning table, the port table (bridge.h),
// and the queue's side of it: forwarding what its frontend transmits and
// draining its inbox into its RX queue.
#include "netback/bridge.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "netback/clock.h"
#include "netback/queue.h"

namespace xpv::netback {

// ---------------------------------------------------------------------------
// BridgeInbox

Result<std::shared_ptr<BridgeInbox>> BridgeInbox::create(uint32_t bytes, uint32_t packets) {
  std::shared_ptr<BridgeInbox> in(new BridgeInbox());
  XPV_TRY(in->bufs_[0].init(bytes, packets));
  XPV_TRY(in->bufs_[1].init(bytes, packets));
  auto w = make_eventfd();
  if (!w) return w.error();
  in->wake_ = std::move(*w);
  return in;
}

BridgeInbox::Push BridgeInbox::push(const uint8_t* data, uint32_t len, const FrameMeta& meta,
                                    uint64_t now_ns) {
  uint32_t before = 0;
  {
    std::lock_guard lk(mu_);
    if (closed_) return Push::kClosed;
    RxFifo& f = bufs_[filling_];
    uint8_t* dst = f.reserve(len);
    if (!dst) return Push::kFull;
    std::memcpy(dst, data, len);
    f.commit(len, meta, now_ns);
    before = pending_.load(std::memory_order_relaxed);
    pending_.store(before + 1, std::memory_order_release);
  }
  // Empty to not empty: the owner may be asleep. Later frames find it awake
  // (or about to take them) and spare the system call.
  if (before == 0) eventfd_signal(wake_.get());
  return Push::kQueued;
}

RxFifo& BridgeInbox::take() {
  std::lock_guard lk(mu_);
  RxFifo& full = bufs_[filling_];
  filling_ ^= 1;
  bufs_[filling_].clear();  // the owner emptied it before calling again
  pending_.store(0, std::memory_order_relaxed);
  return full;
}

void BridgeInbox::close() {
  std::lock_guard lk(mu_);
  closed_ = true;
}

// ---------------------------------------------------------------------------
// PortTable

const BridgePort* PortTable::find(uint64_t id) const {
  auto it = std::lower_bound(ports.begin(), ports.end(), id,
                             [](const auto& p, uint64_t v) { return p->id < v; });
  return it != ports.end() && (*it)->id == id ? it->get() : nullptr;
}

// ---------------------------------------------------------------------------
// Fdb

namespace {
constexpr uint64_t kValid = uint64_t{1} << 48;
}

Fdb::Fdb(uint64_t ageing_ns)
    : ageing_ns_(ageing_ns),
      refresh_ns_(std::min<uint64_t>(ageing_ns / 8, 1'000'000'000)),
      buckets_(new Bucket[kBuckets]) {}

uint64_t Fdb::key_of(const uint8_t* mac) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i)
    k = (k << 8) | mac[i];
  return k | kValid;
}

Fdb::Bucket& Fdb::bucket(uint64_t key) const {
  return buckets_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kBucketBits)];
}

// A consistent copy of a slot (seqlock reader).
Fdb::Snap Fdb::read(const Slot& s) {
  for (uint32_t spins = 0;; ++spins) {
    const uint32_t s1 = s.seq.load(std::memory_order_acquire);
    if ((s1 & 1) == 0) {
      Snap r{s.key.load(std::memory_order_relaxed), s.port.load(std::memory_order_relaxed),
             s.queue.load(std::memory_order_relaxed), s.seen.load(std::memory_order_relaxed)};
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) == s1) return r;
    }
    // A writer is in the middle (a handful of stores); it may have been
    // preempted.
    if (spins > 64) std::this_thread::yield();
  }
}

// Seqlock writer; the caller holds the bucket's mutex.
void Fdb::write(Slot& s, uint64_t key, uint64_t port, uint32_t queue, uint64_t now) {
  const uint32_t q = s.seq.load(std::memory_order_relaxed);
  s.seq.store(q + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.key.store(key, std::memory_order_relaxed);
  s.port.store(port, std::memory_order_relaxed);
  s.queue.store(queue, std::memory_order_relaxed);
  s.seen.store(now, std::memory_order_relaxed);
  s.seq.store(q + 2, std::memory_order_release);
}

std::optional<Fdb::Hit> Fdb::lookup(const uint8_t* mac, uint64_t now) const {
  const uint64_t key = key_of(mac);
  const Bucket& b = bucket(key);
  for (const Slot& s : b.slots) {
    if (s.key.load(std::memory_order_relaxed) != key) continue;  // cheap filter
    const Snap e = read(s);
    if (e.key != key) continue;
    if (!live(e.seen, now)) return std::nullopt;
    return Hit{e.port, e.queue, e.seen};
  }
  return std::nullopt;
}

void Fdb::learn(const uint8_t* mac, uint64_t port, uint32_t queue, uint64_t now) {
  const uint64_t key = key_of(mac);
  Bucket& b = bucket(key);
  // Known, in the same place: refresh its age now and then, without a lock.
  for (Slot& s : b.slots) {
    if (s.key.load(std::memory_order_relaxed) != key) continue;
    const Snap e = read(s);
    if (e.key != key) continue;
    if (e.port == port && e.queue == queue && live(e.seen, now)) {
      if (now > e.seen + refresh_ns_) s.seen.store(now, std::memory_order_relaxed);
      return;
    }
    break;  // moved, or aged out: rewrite it
  }
  std::lock_guard lk(b.mu);
  Slot* target = nullptr;
  for (Slot& s : b.slots) {
    if (s.key.load(std::memory_order_relaxed) == key) {
      target = &s;
      break;
    }
  }
  if (!target) {
    // An empty slot, else one aged out, else the least recently seen.
    for (Slot& s : b.slots) {
      if (s.key.load(std::memory_order_relaxed) == 0) {
        target = &s;
        break;
      }
    }
  }
  if (!target) {
    for (Slot& s : b.slots) {
      if (!live(s.seen.load(std::memory_order_relaxed), now)) {
        target = &s;
        break;
      }
    }
  }
  if (!target) {
    target = &b.slots[0];
    for (Slot& s : b.slots) {
      if (s.seen.load(std::memory_order_relaxed) < target->seen.load(std::memory_order_relaxed)) {
        target = &s;
      }
    }
  }
  write(*target, key, port, queue, now);
}

void Fdb::forget(uint64_t port) {
  for (uint32_t i = 0; i < kBuckets; ++i) {
    Bucket& b = buckets_[i];
    std::lock_guard lk(b.mu);
    for (Slot& s : b.slots) {
      if (s.key.load(std::memory_order_relaxed) != 0 &&
          s.port.load(std::memory_order_relaxed) == port) {
        write(s, 0, 0, 0, 0);
      }
    }
  }
}

std::vector<Fdb::Entry> Fdb::entries(uint64_t now) const {
  std::vector<Entry> out;
  for (uint32_t i = 0; i < kBuckets; ++i) {
    for (const Slot& s : buckets_[i].slots) {
      if (s.key.load(std::memory_order_relaxed) == 0) continue;
      const Snap e = read(s);
      if (e.key == 0 || !live(e.seen, now)) continue;
      Entry en{};
      for (int k = 0; k < 6; ++k)
        en.mac[k] = static_cast<uint8_t>(e.key >> (40 - 8 * k));
      en.port = e.port;
      en.queue = e.queue;
      en.seen_ns = e.seen;
      out.push_back(en);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Bridge

Bridge::Bridge(const Config& cfg)
    : ageing_ms_(cfg.bridge_ageing_ms),
      fdb_(cfg.bridge_ageing_ms * 1'000'000),
      table_(std::make_shared<const PortTable>()) {}

std::shared_ptr<const BridgePort> Bridge::attach(domid_t domid, uint32_t handle,
                                                 const std::string& name,
                                                 std::vector<std::shared_ptr<BridgeInbox>> rx,
                                                 std::shared_ptr<const HashState> hash) {
  auto p = std::make_shared<BridgePort>();
  p->hash = std::move(hash);
  p->domid = domid;
  p->handle = handle;
  p->name = name;
  p->rx = std::move(rx);
  std::lock_guard lk(mu_);
  p->id = next_id_++;
  auto t = std::make_shared<PortTable>(*table_);
  t->ports.push_back(p);  // the largest id so far: the order holds
  table_ = std::move(t);
  gen_.fetch_add(1, std::memory_order_release);
  return p;
}

void Bridge::detach(const BridgePort& port) {
  // Refuse first: from here on a worker holding any table counts its copies
  // for this vif as dropped instead of queueing them.
  for (const auto& in : port.rx)
    in->close();
  {
    std::lock_guard lk(mu_);
    auto t = std::make_shared<PortTable>();
    for (const auto& p : table_->ports) {
      if (p->id != port.id) t->ports.push_back(p);
    }
    table_ = std::move(t);
    gen_.fetch_add(1, std::memory_order_release);
  }
  fdb_.forget(port.id);
}

const PortTable& Bridge::view(View& v) const {
  if (v.gen != gen_.load(std::memory_order_acquire)) {
    std::lock_guard lk(mu_);
    v.table = table_;
    v.gen = gen_.load(std::memory_order_relaxed);
  }
  return *v.table;
}

size_t Bridge::ports() const {
  std::lock_guard lk(mu_);
  return table_->ports.size();
}

std::vector<BridgeFdbEntry> Bridge::fdb_entries() const {
  const uint64_t now = now_ns();
  std::shared_ptr<const PortTable> t;
  {
    std::lock_guard lk(mu_);
    t = table_;
  }
  std::vector<BridgeFdbEntry> out;
  for (const Fdb::Entry& e : fdb_.entries(now)) {
    const BridgePort* p = t->find(e.port);
    if (!p) continue;  // a vif going away: forgotten in a moment
    BridgeFdbEntry b;
    b.mac = format_mac(e.mac);
    b.domid = p->domid;
    b.handle = p->handle;
    b.queue = e.queue;
    b.age_s = e.seen_ns >= now ? 0.0 : static_cast<double>(now - e.seen_ns) / 1e9;
    out.push_back(std::move(b));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.mac < b.mac; });
  return out;
}

// ---------------------------------------------------------------------------
// The queue's side (a worker of the vif).

void Queue::bridge_forward(const uint8_t* data, uint32_t len, const FrameMeta& tx, uint64_t now) {
  Bridge& br = *vif_.bridge;
  const PortTable& t = br.view(bridge_view_);
  const uint64_t self = vif_.bridge_port;
  const uint8_t* dst = data;  // len >= ETH_HLEN: TX checked it
  const uint8_t* src = data + 6;
  // A multicast source is no station's address: forwarded, not learned.
  if (!(src[0] & 1)) br.fdb().learn(src, self, index(), now);
  if (!(dst[0] & 1)) {
    if (auto hit = br.fdb().lookup(dst, now)) {
      if (hit->port == self) {
        // Behind the port it came from: a bridge does not send it back.
        ctr_.bridge_dropped_self.add();
        return;
      }
      if (const BridgePort* p = t.find(hit->port)) {
        ctr_.bridge_unicast.add();
        bridge_push(*p, data, len, tx, now);
        return;
      }
      // Learned on a vif that has just gone: unknown again.
    }
  }
  ctr_.bridge_flooded.add();
  for (const auto& p : t.ports) {
    if (p->id != self) bridge_push(*p, data, len, tx, now);
  }
}

void Queue::bridge_push(const BridgePort& p, const uint8_t* data, uint32_t len, const FrameMeta& tx,
                        uint64_t now) {
  // The target's hash mapping when it configured one (xenvif_select_queue);
  // else the same queue index, modulo the target's queue count: one flow
  // (one source queue) stays on one target queue, in order.
  const uint32_t nq = static_cast<uint32_t>(p.rx.size());
  const Steering st = p.hash->steer(data, len, nq);
  FrameMeta meta = tx;
  with_hash(meta, st);
  if (st.hashing) ctr_.rx_steered.add();
  BridgeInbox& in = *p.rx[st.hashing ? st.queue : index() % nq];
  if (in.push(data, len, meta, now) != BridgeInbox::Push::kQueued) ctr_.bridge_dropped.add();
}

void Queue::bridge_drain() {
  // Let go of a table with vifs gone (loopback's inboxes have no bridge).
  if (vif_.bridge) (void)vif_.bridge->view(bridge_view_);
  if (!inbox_->pending()) return;
  RxFifo& in = inbox_->take();
  while (!in.empty()) {
    const RxFifo::Packet& p = in.front();
    // Queued when it was pushed: expiry counts from then.
    rx_enqueue(in.data(p), p.len, p.meta, p.enqueued_ns);
    in.pop();
  }
}

void Queue::bridge_close() {
  if (!inbox_) return;
  inbox_->close();
  if (inbox_->pending()) inbox_->take().clear();
}

}  // namespace xpv::netback
