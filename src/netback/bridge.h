// SPDX-License-Identifier: MIT
// Bridge mode (--mode bridge): a learning Ethernet switch joining every
// connected vif of every domain, as dom0's xenbr0 does.
//
// A frame a frontend transmits on vif X is handed, by X's queue worker, to
// the RX side of other vifs:
//   - its source mac is learned: mac -> (X, the queue it came from);
//   - a unicast destination learned on another vif goes to that vif only;
//     one learned on X itself is dropped (bridge_dropped_self);
//   - broadcast, multicast and unknown unicast are flooded to every other
//     connected vif, each getting its own copy;
//   - on the target vif, RX queue (source queue index) % (target's queue
//     count) takes the frame, so one flow keeps its order.
//
// Threads. Every queue has its own worker, so the TX worker of X writes
// into the RX side of Y while Y's worker reads it. Each RX queue therefore
// gets a BridgeInbox: a bounded multi-producer single-consumer queue. A
// producer copies a frame in under the inbox's small mutex (bridge mode
// only; loopback never sees it) and, when the inbox was empty, signals the
// inbox's eventfd, which the owner polls next to its event channel. The
// owner swaps the filled buffer for the empty one under the same mutex and
// moves the frames into its RX queue without holding it. A producer never
// waits for a consumer: a full inbox drops (bridge_dropped).
//
// Lifetime. The set of connected vifs (ports) is an immutable PortTable,
// published by the control thread as a new shared_ptr with a new
// generation on every attach and detach. Each worker keeps its own
// shared_ptr to the table it last saw (a View) and takes the new one when
// the generation changes, so forwarding takes no lock for the table. A
// port's inboxes are shared_ptrs too (each owns its eventfd), so a worker
// still holding an old table can always push into, or signal, an inbox of a
// vif that has gone meanwhile: detach() closes the inboxes first, and a
// push into a closed inbox is refused and counted. Memory goes when the
// last table holding it does.
//
// The learning table (Fdb) is a fixed hash table of 1024 buckets of 4
// entries. Lookups take no lock (a seqlock per entry); a change takes the
// bucket's mutex. Refreshing the age of a known entry is one relaxed store,
// at most every ageing/8 (at most once per second).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "netback/config.h"
#include "netback/hash.h"
#include "netback/rx_fifo.h"
#include "util/fd.h"
#include "xpv/platform.h"

namespace xpv::netback {

// The frames other workers hand to one RX queue.
class BridgeInbox {
 public:
  enum class Push { kQueued, kFull, kClosed };

  // Two buffers of `bytes` and `packets` each (one filling, one draining).
  static Result<std::shared_ptr<BridgeInbox>> create(uint32_t bytes, uint32_t packets);

  // Any thread. `meta` is what the sender sent with the frame (NETTXF_*).
  Push push(const uint8_t* data, uint32_t len, const FrameMeta& meta, uint64_t now_ns);

  // The owner. pending(): something was pushed since the last take().
  bool pending() const { return pending_.load(std::memory_order_acquire) != 0; }
  // The frames pushed since the last take(), oldest first; the owner's until
  // its next take() (by then it must have popped them all).
  RxFifo& take();
  int wake_fd() const { return wake_.get(); }

  // Any thread: from now on push() refuses.
  void close();

 private:
  BridgeInbox() = default;

  std::mutex mu_;
  RxFifo bufs_[2];
  uint32_t filling_ = 0;  // producers write bufs_[filling_]
  bool closed_ = false;
  std::atomic<uint32_t> pending_{0};  // frames in bufs_[filling_]
  UniqueFd wake_;
};

// One connected vif. Immutable once attached.
struct BridgePort {
  uint64_t id = 0;  // never reused
  domid_t domid = 0;
  uint32_t handle = 0;
  std::string name;
  std::vector<std::shared_ptr<BridgeInbox>> rx;  // one per queue, by index
  std::shared_ptr<const HashState> hash;         // the vif's RX hashing
};

struct PortTable {
  std::vector<std::shared_ptr<const BridgePort>> ports;  // by increasing id
  const BridgePort* find(uint64_t id) const;
};

// mac -> (port, queue), aged.
class Fdb {
 public:
  struct Hit {
    uint64_t port;
    uint32_t queue;
    uint64_t seen_ns;
  };
  struct Entry {
    Mac mac;
    uint64_t port;
    uint32_t queue;
    uint64_t seen_ns;
  };

  explicit Fdb(uint64_t ageing_ns);

  // Any thread, no lock.
  std::optional<Hit> lookup(const uint8_t* mac, uint64_t now) const;
  // Any thread; locks only when the entry changes.
  void learn(const uint8_t* mac, uint64_t port, uint32_t queue, uint64_t now);
  // Forgets every mac learned on `port`.
  void forget(uint64_t port);
  // The live (not aged out) entries.
  std::vector<Entry> entries(uint64_t now) const;

 private:
  static constexpr uint32_t kBucketBits = 10;
  static constexpr uint32_t kBuckets = 1u << kBucketBits;
  static constexpr uint32_t kWays = 4;

  struct Slot {
    std::atomic<uint32_t> seq{0};  // odd while being written
    std::atomic<uint64_t> key{0};  // mac | kValid; 0: empty
    std::atomic<uint64_t> port{0};
    std::atomic<uint32_t> queue{0};
    std::atomic<uint64_t> seen{0};  // also refreshed outside the seqlock
  };
  struct Bucket {
    std::mutex mu;  // writers
    Slot slots[kWays];
  };
  struct Snap {
    uint64_t key, port;
    uint32_t queue;
    uint64_t seen;
  };

  static uint64_t key_of(const uint8_t* mac);
  Bucket& bucket(uint64_t key) const;
  static Snap read(const Slot& s);
  static void write(Slot& s, uint64_t key, uint64_t port, uint32_t queue, uint64_t now);
  bool live(uint64_t seen, uint64_t now) const { return seen > now || now - seen < ageing_ns_; }

  const uint64_t ageing_ns_;
  const uint64_t refresh_ns_;
  std::unique_ptr<Bucket[]> buckets_;
};

// What the stats and tests see of the learning table.
struct BridgeFdbEntry {
  std::string mac;
  domid_t domid = 0;
  uint32_t handle = 0;
  uint32_t queue = 0;
  double age_s = 0;
};

class Bridge {
 public:
  explicit Bridge(const Config& cfg);

  // ---- the control thread ----
  // A vif connected: its queues' inboxes, by queue index, and its RX
  // hashing (which of them a frame goes to).
  std::shared_ptr<const BridgePort> attach(domid_t domid, uint32_t handle, const std::string& name,
                                           std::vector<std::shared_ptr<BridgeInbox>> rx,
                                           std::shared_ptr<const HashState> hash);
  // A vif disconnects: its inboxes refuse from now on, it leaves the table
  // and its macs are forgotten. Its workers may still run (and learn): call
  // forget() again once they have stopped.
  void detach(const BridgePort& port);
  void forget(uint64_t port_id) { fdb_.forget(port_id); }

  // ---- the workers ----
  struct View {
    uint64_t gen = 0;
    std::shared_ptr<const PortTable> table;
  };
  // The current table, refreshing `v` (the worker's own) when it changed.
  const PortTable& view(View& v) const;
  Fdb& fdb() { return fdb_; }

  // ---- anyone ----
  std::vector<BridgeFdbEntry> fdb_entries() const;
  size_t ports() const;
  uint64_t ageing_ms() const { return ageing_ms_; }

 private:
  const uint64_t ageing_ms_;
  Fdb fdb_;
  mutable std::mutex mu_;                   // table_, gen_ changes, next_id_
  std::shared_ptr<const PortTable> table_;  // never null
  std::atomic<uint64_t> gen_{1};
  uint64_t next_id_ = 1;
};

}  // namespace xpv::netback
