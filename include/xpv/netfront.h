// SPDX-License-Identifier: MIT
// The netif frontend: one vif of this domain, its xenbus handshake with the
// backend, and its TX/RX queues.
//
//   auto dev = xpv::Device::open({.platform = "sim:/run/xpv.sock", .queues = 2});
//   (*dev)->connect();                      // Initialising -> Connected
//   Queue& q = (*dev)->queue(0);
//   q.transmit(packets);                    // copies into pre-granted pages
//   q.receive(32, [](const RxPacket& p) { ...; return true; });
//
// Threading: the control path (connect, poll_control, close) runs on one
// thread. A queue's data-path calls (transmit, receive, poll, arm) may come
// from any threads (DPDK may run rx and tx bursts of one queue on two lcores):
// a per-queue lock, uncontended in the usual one-thread case, serialises them.
// poll_control may tear a queue down when the backend goes away; data-path
// calls then return 0 until the queue is connected again.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xpv/counters.h"
#include "xpv/platform.h"

namespace xpv {

using MacAddr = std::array<uint8_t, 6>;
std::string to_string(const MacAddr& m);
Result<MacAddr> parse_mac(std::string_view s);

inline constexpr uint32_t kMaxQueues = 16;
inline constexpr uint32_t kMaxTxSlots = 18;       // XEN_NETIF_NR_SLOTS_MIN
inline constexpr uint32_t kMaxPacketLen = 65535;  // XEN_NETIF_MAX_TX_SIZE
inline constexpr uint32_t kMaxRxFrags = 18;

// How a queue learns that the backend answered.
enum class QueueMode {
  kPoll,   // backend notifications disarmed; the poll loop runs the handler
  kEvent,  // notifications armed; the handler runs when the event channel fires
};

struct DeviceConfig {
  std::string platform = "xen";  // "xen" or "sim:PATH"
  uint32_t vif = 0;              // device/vif/N
  uint32_t queues = 1;           // must not exceed the backend's multi-queue-max-queues
  QueueMode mode = QueueMode::kPoll;
  std::optional<MacAddr> mac;        // override of the mac xenstore gives
  bool split_event_channels = true;  // when the backend offers them
  uint32_t connect_timeout_ms = 15000;
  // Checksum offload on receive: the backend may hand over packets whose
  // TCP/UDP checksum field holds only the pseudo-header sum, their data
  // validated (RxPacket::flags NETRXF_csum_blank). Off: we write
  // feature-no-csum-offload=1 and the backend completes every checksum.
  bool rx_csum_offload = true;
  // Large receive: we write feature-gso-tcpv4/-tcpv6, and the backend hands
  // over TCP packets of up to 64 KiB with a GSO extra (RxPacket::gso_*),
  // their checksum partial. Needs rx_csum_offload.
  bool rx_gso = false;
  // An experiment, never for production: in event mode also consume TX
  // responses in the transmit path while notifications are armed, as Linux
  // netfront did before its fix. Each event raised for responses already
  // consumed then finds no work (counted as spurious_events) and, under late
  // EOI, delays the unmask (delayed_eois). Exists to measure that cost.
  bool experiment_reap_tx_in_transmit = false;
  // How long a control-ring request (netif.h feature-ctrl-ring) may wait for
  // its answer; a backend that takes longer broke the protocol (the device
  // disconnects, the call fails with ETIMEDOUT).
  uint32_t ctrl_timeout_ms = 2000;
};

struct BackendFeatures {
  bool rx_copy = false;
  bool sg = false;
  bool split_event_channels = false;
  uint32_t max_queues = 1;
  bool gso_tcpv4 = false;
  bool gso_tcpv6 = false;
  bool ipv6_csum_offload = false;
  bool ctrl_ring = false;
  bool multicast_control = false;          // filters multicast for us on request
  bool dynamic_multicast_control = false;  // ... and watches request-multicast-control
};

// Multicast groups a backend filters for a frontend at most (Linux netback's
// XEN_NETBK_MCAST_MAX).
inline constexpr uint32_t kMaxMulticastGroups = 64;

// One transmit segment: a buffer anywhere in memory, or inside a page the
// queue lent out with tx_buffer() (then sent without a copy).
struct TxSegment {
  const void* data = nullptr;
  uint32_t len = 0;
};

// XEN_NETIF_GSO_TYPE_* (netif.h): the protocol a GSO packet is segmented by.
inline constexpr uint8_t kGsoNone = 0;
inline constexpr uint8_t kGsoTcpV4 = 1;
inline constexpr uint8_t kGsoTcpV6 = 2;

struct TxPacket {
  const TxSegment* segs = nullptr;
  uint16_t nsegs = 0;
  // The TCP/UDP checksum field holds the pseudo-header sum (addresses,
  // protocol, L4 length): the backend completes the checksum (netif.h
  // NETTXF_csum_blank | NETTXF_data_validated). IPv6 packets only with
  // BackendFeatures::ipv6_csum_offload.
  bool csum_partial = false;
  // The backend segments this TCP packet into segments of gso_size payload
  // bytes (an XEN_NETIF_EXTRA_TYPE_GSO extra-info slot): up to 64 KiB, its
  // checksum partial as above, only with the backend's feature-gso-tcpv4
  // (kGsoTcpV4) or feature-gso-tcpv6 (kGsoTcpV6); refused otherwise.
  uint8_t gso_type = kGsoNone;
  uint16_t gso_size = 0;
};

// Receive-side scaling through the backend (netif.h control ring): the
// backend hashes each received packet with Toeplitz over the header fields
// of the hash types enabled, and steers it to the queue that
// mapping[hash % mapping.size()] names (hash % queues without a mapping).
// Hash types, XEN_NETIF_CTRL_HASH_TYPE_* (netif.h): nothing else (UDP
// ports, IPv6 extension headers...) can be hashed by a netif backend.
inline constexpr uint32_t kHashIpv4 = 1u << 0;     // source and destination address
inline constexpr uint32_t kHashIpv4Tcp = 1u << 1;  // addresses and TCP ports
inline constexpr uint32_t kHashIpv6 = 1u << 2;
inline constexpr uint32_t kHashIpv6Tcp = 1u << 3;
inline constexpr uint32_t kHashTypesNetif = kHashIpv4 | kHashIpv4Tcp | kHashIpv6 | kHashIpv6Tcp;
inline constexpr uint32_t kRssKeyMax = 40;  // Linux netback's XEN_NETBK_MAX_HASH_KEY_SIZE
// Entries of a mapping we send in one granted page (netif.h: a sub-table
// per grant); the backend's own limit (GET_HASH_MAPPING_SIZE) may be lower.
inline constexpr uint32_t kRssMappingMax = 1024;

struct RssConfig {
  uint32_t hash_types = 0;        // kHash* bits; 0: no hashing (algorithm NONE)
  std::vector<uint8_t> key;       // Toeplitz key, up to kRssKeyMax bytes (shorter: zero-filled)
  std::vector<uint32_t> mapping;  // queue per entry; empty: hash % queues
  bool operator==(const RssConfig&) const = default;
};

struct RssCapabilities {
  bool available = false;         // the backend offers feature-ctrl-ring
  uint32_t hash_types = 0;        // kHash* bits it may hash (all of netif's until connected)
  uint32_t key_size_max = 0;      // kRssKeyMax when available
  uint32_t mapping_size_max = 0;  // GET_HASH_MAPPING_SIZE (0 until connected, or unsupported)
  bool connected = false;         // the values above come from the backend's answers
};

// A received packet as a list of fragments in the queue's granted RX pages.
// Valid only during the receive callback.
struct RxFragment {
  const uint8_t* data;
  uint32_t len;
};
struct RxPacket {
  const RxFragment* frags;
  uint16_t nfrags;
  uint32_t len;
  uint16_t flags;  // NETRXF_* of the first slot (data_validated, csum_blank)
  // A large packet of several TCP segments (DeviceConfig::rx_gso): its GSO
  // extra's type (kGsoTcpV4/kGsoTcpV6) and segment payload size; kGsoNone
  // and 0 for a plain packet.
  uint8_t gso_type = kGsoNone;
  uint16_t gso_size = 0;
  // The backend's hash of this packet (a XEN_NETIF_EXTRA_TYPE_HASH extra,
  // sent once RSS is configured): hash_type is the kHash* bit it was
  // computed for, 0 when the packet came without one.
  uint8_t hash_type = 0;
  uint32_t hash = 0;
};

// RxPacket::flags (netif.h NETRXF_*).
inline constexpr uint16_t kRxDataValidated = 1u << 0;  // checksum verified, or not needed
inline constexpr uint16_t kRxCsumBlank = 1u << 1;      // checksum field holds the pseudo-header sum

class Device;
class QueueImpl;

class Queue {
 public:
  // Sends packets in order; returns how many were accepted (the rest did not
  // fit in the ring or the slot pool: retry later). Packets the backend can
  // never take (over 64 KiB, more than 18 slots, empty) are refused: counted
  // in tx_dropped and accepted (consumed) so that a caller does not retry
  // them forever. At most one notification per call.
  uint16_t transmit(std::span<const TxPacket> pkts);

  // Delivers up to `max` received packets to `sink`, which returns false to
  // stop (e.g. no mbuf left; that packet is kept for the next call).
  template <typename Sink>
  uint16_t receive(uint16_t max, Sink&& sink);

  // Runs the response handler: in poll mode directly, in event mode only
  // for events that fired. Returns true when it found work.
  bool poll();

  // Event mode: before sleeping on event_fd(), arm() takes the events that
  // fired, runs the handler for what is waiting and re-arms notifications;
  // it returns false when received packets are already waiting (do not sleep
  // then: the event fd is made readable). With ArmFor::kRx (DPDK's rx
  // interrupts) only received packets wake the sleeper: TX responses waiting
  // are reaped here and their notifications stay off, so that completions of
  // what was sent before do not keep waking an idle queue.
  enum class ArmFor { kRxAndTx, kRx };
  bool arm(ArmFor what = ArmFor::kRxAndTx);
  int event_fd() const;
  // kPoll also takes any event that fired meanwhile (its handler runs, its
  // port is unmasked), so that the next arm() sleeps on a fresh edge.
  void set_mode(QueueMode m);
  QueueMode mode() const;

  // Runs the TX response handler now and returns how many packets it found
  // completed (at most `max`; 0 means no limit): rte_eth_tx_done_cleanup.
  uint32_t tx_done_cleanup(uint32_t max);

  // Ring occupancy for descriptor queries (rx_queue_count, the descriptor
  // status calls), in ring slots.
  struct RingState {
    uint32_t size = 0;          // entries of the ring
    uint32_t rx_done = 0;       // RX: answered by the backend, not yet delivered
    uint32_t rx_posted = 0;     // RX: buffers posted, not yet answered
    uint32_t tx_in_flight = 0;  // TX: requests not yet answered
    uint32_t tx_answered = 0;   // TX: answered, not yet reaped
  };
  RingState ring_state();

  // What a sleeper that watches memory (rte_power_monitor) waits on: the RX
  // ring's response producer, and its value while nothing new arrived.
  // false while the queue is not connected.
  struct RxMonitor {
    const volatile uint32_t* addr = nullptr;
    uint32_t idle_value = 0;
  };
  bool rx_monitor(RxMonitor* out);

  // A page of the queue's granted TX pool for zero-copy transmit: write the
  // packet there and pass it in a TxSegment; the page returns to the pool
  // when the backend answers. nullptr when none is free.
  uint8_t* tx_buffer();
  void tx_buffer_free(uint8_t* page);

  // Counters since the device was opened (kept across reconnects).
  QueueCounters counters() const;
  void reset_counters();
  uint32_t index() const;

 private:
  friend class Device;
  friend class QueueImpl;
  explicit Queue(QueueImpl* impl) : impl_(impl) {}
  using Deliver = bool (*)(void* ctx, const RxPacket& p);
  uint16_t receive_raw(uint16_t max, Deliver fn, void* ctx);
  QueueImpl* impl_;
};

template <typename Sink>
uint16_t Queue::receive(uint16_t max, Sink&& sink) {
  return receive_raw(
      max,
      [](void* ctx, const RxPacket& p) -> bool {
        return (*static_cast<std::remove_reference_t<Sink>*>(ctx))(p);
      },
      &sink);
}

enum class LinkState { kDown, kUp };

struct DeviceInfo {
  domid_t self_domid = 0;
  domid_t backend_id = 0;
  std::string frontend_path;  // /local/domain/D/device/vif/N
  std::string backend_path;
  MacAddr mac{};
  uint32_t mtu = 1500;
  BackendFeatures features;
  bool split_event_channels = false;  // in use
  uint32_t queues = 0;
};

// What the backend provides and a new connection found different from the
// previous one (a vif re-attached with another mac, a backend restarted with
// other features): DeviceEvent::changed, a set of these bits.
enum BackendChange : uint32_t {
  kBackendChangeMac = 1u << 0,  // the vif's mac (not reported when DeviceConfig::mac overrides it)
  kBackendChangeMtu = 1u << 1,  // the vif's mtu key
  kBackendChangeFeatures = 1u << 2,   // a feature-* key
  kBackendChangeMaxQueues = 1u << 3,  // multi-queue-max-queues
};

// A link change. `reason` says why the device went down (a backend protocol
// violation, the backend closing, the platform connection lost...). On a link
// up after a reconnect, `changed` names what the backend provides differently
// from the previous connection (DeviceInfo holds the new values; `previous`
// the values of the previous connection); 0 on the first connection.
struct DeviceEvent {
  LinkState link = LinkState::kDown;
  std::string reason;
  uint32_t changed = 0;  // BackendChange bits
  MacAddr previous_mac{};
  uint32_t previous_mtu = 0;
  BackendFeatures previous_features;
};

class Device {
 public:
  // Opens the platform and reads the vif's configuration. Does not connect.
  static Result<std::unique_ptr<Device>> open(const DeviceConfig& cfg);
  ~Device();  // closes (Closing -> Closed) and ends access to every page
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Handshake until the backend is Connected, or the timeout passes.
  Status connect();
  // Orderly close: Closing, wait for the backend, Closed; every page ended.
  void close();

  // Control path: handles xenstore watch events (backend state, the vif's
  // nodes) and reconnects after the backend went away. Non-blocking.
  // Returns true when the link state changed.
  bool poll_control();
  int control_fd() const;  // readable when poll_control has work

  LinkState link() const;
  const DeviceInfo& info() const;
  uint32_t num_queues() const;
  Queue& queue(uint32_t i);

  // Called from poll_control (or connect) when the link goes up or down.
  void set_link_callback(std::function<void(const DeviceEvent&)> cb);
  // The last reason the link went down ("" when it never did).
  std::string last_down_reason() const;
  uint64_t reconnects() const;

  // Every buffer of the last teardown accounted for (for tests and tools).
  struct TeardownAccount {
    uint64_t pages = 0;
    uint64_t returned = 0;
    uint64_t still_mapped = 0;
    uint64_t unknown = 0;
    uint64_t rx_dropped_staged = 0;  // received but never delivered
    uint64_t tx_unanswered = 0;      // in flight when the backend went away
  };
  TeardownAccount teardown_account() const;

  // Multicast filtering in the backend (netif.h "request-multicast-control",
  // XEN_NETIF_EXTRA_TYPE_MCAST_ADD/DEL): with `on`, the backend delivers
  // only the multicast frames of `groups` (broadcast always passes); off,
  // all of them. Used with a backend offering feature-dynamic-multicast-
  // control (it watches the request key, so the filter follows every call);
  // kept across reconnects and applied at each connect. ENOTSUP when `on`
  // and the backend has no dynamic control, E2BIG beyond
  // kMaxMulticastGroups, EINVAL for an address that is not multicast,
  // EAGAIN when the TX ring had no room (call again). Like every Device
  // call, not concurrent with poll_control().
  Status set_multicast_filter(bool on, std::span<const MacAddr> groups);

  // Receive-side scaling (RssConfig): checked against netif's rules and
  // the backend's limits, kept across reconnects and applied at each
  // connect (a backend refusal then fails the connection) and at once when
  // connected. EINVAL for a hash type netif cannot hash, a key over
  // kRssKeyMax, a mapping entry naming no queue; E2BIG for a mapping
  // larger than the backend takes; ENOTSUP when the backend has no control
  // ring; the backend's refusal (NOT_SUPPORTED: ENOTSUP, INVALID_PARAMETER:
  // EINVAL, BUFFER_OVERFLOW: E2BIG) names the request; a backend breaking
  // the control ring's protocol disconnects the device (EPROTO, ETIMEDOUT).
  Status set_rss(const RssConfig& cfg);
  const RssConfig& rss() const;
  RssCapabilities rss_capabilities() const;
  CtrlCounters ctrl_counters() const;

 private:
  class Impl;
  explicit Device(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpv
