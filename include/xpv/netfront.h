// SPDX-License-Identifier: MIT
/// \file
/// The netif frontend: one vif of this domain, its xenbus handshake with the
/// backend, and its TX/RX queues.
///
/// \code
///   auto dev = xpv::Device::open({.platform = "sim:/run/xpv.sock", .queues = 2});
///   (*dev)->connect();                      // Initialising -> Connected
///   Queue& q = (*dev)->queue(0);
///   q.transmit(packets);                    // copies into pre-granted pages
///   q.receive(32, [](const RxPacket& p) { ...; return true; });
/// \endcode
///
/// Threading: the control path (connect, poll_control, close) runs on one
/// thread. A queue's data-path calls (transmit, receive, poll, arm) may come
/// from any threads (DPDK may run rx and tx bursts of one queue on two lcores):
/// a per-queue lock, uncontended in the usual one-thread case, serialises them.
/// poll_control may tear a queue down when the backend goes away; data-path
/// calls then return 0 until the queue is connected again.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "xpv/counters.h"
#include "xpv/platform.h"

namespace xpv {

/// An Ethernet MAC address.
using MacAddr = std::array<uint8_t, 6>;
/// `m` as xx:xx:xx:xx:xx:xx (lower-case hex).
std::string to_string(const MacAddr& m);
/// Parses xx:xx:xx:xx:xx:xx; an error naming the text otherwise.
Result<MacAddr> parse_mac(std::string_view s);

/// The most queues a device has.
inline constexpr uint32_t kMaxQueues = 16;
inline constexpr uint32_t kMaxTxSlots = 18;       ///< XEN_NETIF_NR_SLOTS_MIN
inline constexpr uint32_t kMaxPacketLen = 65535;  ///< XEN_NETIF_MAX_TX_SIZE
/// The most fragments (RX slots) of one received packet.
inline constexpr uint32_t kMaxRxFrags = 18;

/// How a queue learns that the backend answered.
enum class QueueMode {
  kPoll,   ///< backend notifications disarmed; the poll loop runs the handler
  kEvent,  ///< notifications armed; the handler runs when the event channel fires
};

/// What Device::open() opens: the platform, the vif, the queues and what to ask of the backend.
struct DeviceConfig {
  std::string platform = "xen";  ///< "xen" or "sim:PATH"
  uint32_t vif = 0;              ///< device/vif/N
  uint32_t queues = 1;           ///< must not exceed the backend's multi-queue-max-queues
  /// How the queues learn that the backend answered.
  QueueMode mode = QueueMode::kPoll;
  std::optional<MacAddr> mac;        ///< override of the mac xenstore gives
  bool split_event_channels = true;  ///< when the backend offers them
  /// How long connect() waits for the backend to be Connected, in milliseconds.
  uint32_t connect_timeout_ms = 15000;
  /// Checksum offload on receive: the backend may hand over packets whose
  /// TCP/UDP checksum field holds only the pseudo-header sum, their data
  /// validated (RxPacket::flags NETRXF_csum_blank). Off: we write
  /// feature-no-csum-offload=1 and the backend completes every checksum.
  bool rx_csum_offload = true;
  /// Large receive: we write feature-gso-tcpv4/-tcpv6, and the backend hands
  /// over TCP packets of up to 64 KiB with a GSO extra (RxPacket::gso_*),
  /// their checksum partial. Needs rx_csum_offload.
  bool rx_gso = false;
  /// Zero-copy receive: a receive sink may keep a packet's pages instead of
  /// copying out of them (RxVerdict::kKept, RxPacket::loans), and send them on
  /// by their grants (TxSegment::loan). The pages stay granted and writable
  /// to the backend while the application holds them: a backend that breaks
  /// the protocol can change data the application already looked at. Off:
  /// every packet is copied out in the sink, as before.
  bool rx_zero_copy = false;
  /// An experiment, never for production: in event mode also consume TX
  /// responses in the transmit path while notifications are armed, as Linux
  /// netfront did before its fix. Each event raised for responses already
  /// consumed then finds no work (counted as spurious_events) and, under late
  /// EOI, delays the unmask (delayed_eois). Exists to measure that cost.
  bool experiment_reap_tx_in_transmit = false;
  /// How long a control-ring request (netif.h feature-ctrl-ring) may wait for
  /// its answer; a backend that takes longer broke the protocol (the device
  /// disconnects, the call fails with ETIMEDOUT).
  uint32_t ctrl_timeout_ms = 2000;
};

/// What the backend offers, from its feature-* keys (netif.h) at the last connect.
struct BackendFeatures {
  /// feature-rx-copy: the backend copies into our RX buffers.
  bool rx_copy = false;
  /// feature-sg: packets may span several slots.
  bool sg = false;
  /// feature-split-event-channels: one channel for TX, one for RX.
  bool split_event_channels = false;
  /// multi-queue-max-queues (1 when absent).
  uint32_t max_queues = 1;
  /// feature-gso-tcpv4: takes TCP/IPv4 GSO packets from us.
  bool gso_tcpv4 = false;
  /// feature-gso-tcpv6: takes TCP/IPv6 GSO packets from us.
  bool gso_tcpv6 = false;
  /// feature-ipv6-csum-offload: completes IPv6 TCP/UDP checksums.
  bool ipv6_csum_offload = false;
  /// feature-ctrl-ring: offers a control ring.
  bool ctrl_ring = false;
  bool multicast_control = false;          ///< filters multicast for us on request
  bool dynamic_multicast_control = false;  ///< ... and watches request-multicast-control
};

/// Multicast groups a backend filters for a frontend at most (Linux netback's
/// XEN_NETBK_MCAST_MAX).
inline constexpr uint32_t kMaxMulticastGroups = 64;

class RxLoans;

/// One transmit segment: a buffer anywhere in memory, or inside a page the
/// queue lent out with tx_buffer(), or inside a received page kept by the
/// application (`loan`): the last two are sent without a copy.
struct TxSegment {
  /// The segment's first byte.
  const void* data = nullptr;
  /// Its length in bytes.
  uint32_t len = 0;
  /// The RxPacket::loans of the kept page the segment lies in, or nullptr.
  /// A packet all of whose segments are kept pages of queues served by the
  /// transmitting queue's backend domain is sent by those pages' grants;
  /// otherwise it is copied as any other.
  RxLoans* loan = nullptr;
};

/// XEN_NETIF_GSO_TYPE_* (netif.h): the protocol a GSO packet is segmented by.
inline constexpr uint8_t kGsoNone = 0;
/// XEN_NETIF_GSO_TYPE_TCPV4: TCP over IPv4.
inline constexpr uint8_t kGsoTcpV4 = 1;
/// XEN_NETIF_GSO_TYPE_TCPV6: TCP over IPv6.
inline constexpr uint8_t kGsoTcpV6 = 2;

/// One packet to transmit: its segments, in order, and its offload requests.
struct TxPacket {
  /// The packet's segments, in order.
  const TxSegment* segs = nullptr;
  /// How many `segs` holds.
  uint16_t nsegs = 0;
  /// The TCP/UDP checksum field holds the pseudo-header sum (addresses,
  /// protocol, L4 length): the backend completes the checksum (netif.h
  /// NETTXF_csum_blank | NETTXF_data_validated). IPv6 packets only with
  /// BackendFeatures::ipv6_csum_offload.
  bool csum_partial = false;
  /// The backend segments this TCP packet into segments of gso_size payload
  /// bytes (an XEN_NETIF_EXTRA_TYPE_GSO extra-info slot): up to 64 KiB, its
  /// checksum partial as above, only with the backend's feature-gso-tcpv4
  /// (kGsoTcpV4) or feature-gso-tcpv6 (kGsoTcpV6); refused otherwise.
  uint8_t gso_type = kGsoNone;
  /// Payload bytes per segment (the MSS) when gso_type is not kGsoNone.
  uint16_t gso_size = 0;
};

/// Receive-side scaling through the backend (netif.h control ring): the
/// backend hashes each received packet with Toeplitz over the header fields
/// of the hash types enabled, and steers it to the queue that
/// mapping[hash % mapping.size()] names (hash % queues without a mapping).
/// Hash types, XEN_NETIF_CTRL_HASH_TYPE_* (netif.h): nothing else (UDP
/// ports, IPv6 extension headers...) can be hashed by a netif backend.
inline constexpr uint32_t kHashIpv4 = 1u << 0;     ///< source and destination address
inline constexpr uint32_t kHashIpv4Tcp = 1u << 1;  ///< addresses and TCP ports
inline constexpr uint32_t kHashIpv6 = 1u << 2;     ///< IPv6 source and destination address
inline constexpr uint32_t kHashIpv6Tcp = 1u << 3;  ///< IPv6 addresses and TCP ports
/// Every hash type netif defines.
inline constexpr uint32_t kHashTypesNetif = kHashIpv4 | kHashIpv4Tcp | kHashIpv6 | kHashIpv6Tcp;
inline constexpr uint32_t kRssKeyMax = 40;  ///< Linux netback's XEN_NETBK_MAX_HASH_KEY_SIZE
/// Entries of a mapping we send in one granted page (netif.h: a sub-table
/// per grant); the backend's own limit (GET_HASH_MAPPING_SIZE) may be lower.
inline constexpr uint32_t kRssMappingMax = 1024;

/// What Device::set_rss() asks of the backend.
struct RssConfig {
  uint32_t hash_types = 0;        ///< kHash* bits; 0: no hashing (algorithm NONE)
  std::vector<uint8_t> key;       ///< Toeplitz key, up to kRssKeyMax bytes (shorter: zero-filled)
  std::vector<uint32_t> mapping;  ///< queue per entry; empty: hash % queues
  /// Field-by-field equality.
  bool operator==(const RssConfig&) const = default;
};

/// What the backend's control ring allows for RSS.
struct RssCapabilities {
  bool available = false;         ///< the backend offers feature-ctrl-ring
  uint32_t hash_types = 0;        ///< kHash* bits it may hash (all of netif's until connected)
  uint32_t key_size_max = 0;      ///< kRssKeyMax when available
  uint32_t mapping_size_max = 0;  ///< GET_HASH_MAPPING_SIZE (0 until connected, or unsupported)
  bool connected = false;         ///< the values above come from the backend's answers
};

/// A received packet as a list of fragments in the queue's granted RX pages.
/// Valid only during the receive callback.
struct RxFragment {
  /// The fragment's first byte, in a granted RX page.
  const uint8_t* data;
  /// Its length in bytes.
  uint32_t len;
};
/// A received packet: its fragments, valid only during the receive callback.
struct RxPacket {
  /// The fragments, in order.
  const RxFragment* frags;
  /// How many `frags` holds.
  uint16_t nfrags;
  /// The packet's length in bytes (the fragments' sum).
  uint32_t len;
  uint16_t flags;  ///< NETRXF_* of the first slot (data_validated, csum_blank)
  /// A large packet of several TCP segments (DeviceConfig::rx_gso): its GSO
  /// extra's type (kGsoTcpV4/kGsoTcpV6) and segment payload size; kGsoNone
  /// and 0 for a plain packet.
  uint8_t gso_type = kGsoNone;
  /// The GSO extra's segment payload size; 0 for a plain packet.
  uint16_t gso_size = 0;
  /// The kHash* bit the backend computed `hash` for (a XEN_NETIF_EXTRA_TYPE_HASH
  /// extra, sent once RSS is configured); 0 when the packet came without one.
  uint8_t hash_type = 0;
  /// The backend's Toeplitz hash of this packet (valid when hash_type != 0).
  uint32_t hash = 0;
  /// Set when the sink may keep this packet's pages (DeviceConfig::rx_zero_copy
  /// and the queue has pages to spare): it then returns RxVerdict::kKept and
  /// calls rx_loan_release() for each fragment's page when done with it.
  RxLoans* loans = nullptr;
};

/// What a receive sink did with a packet.
enum class RxVerdict : uint8_t {
  kStop,      ///< not taken: it stays queued for the next call, and delivery stops
  kConsumed,  ///< done with (copied out or dropped): its pages go back to the ring
  kKept,      ///< its pages kept (only when RxPacket::loans is set), each until released
};

/// Bytes of room per kept page for its holder's bookkeeping (DPDK's
/// rte_mbuf_ext_shared_info), valid while the page is kept.
inline constexpr size_t kRxLoanAreaBytes = 32;
/// The bookkeeping room of the kept page `page` (any address inside it).
void* rx_loan_area(RxLoans* loans, const void* page);
/// The holder of a kept page lets go of it (any thread, any time, also after
/// the device closed): once no TX request names it either, it goes back to
/// its ring. Once per kept page.
void rx_loan_release(RxLoans* loans, const void* page);

/// RxPacket::flags (netif.h NETRXF_*).
inline constexpr uint16_t kRxDataValidated = 1u << 0;  ///< checksum verified, or not needed
inline constexpr uint16_t kRxCsumBlank = 1u << 1;  ///< checksum field holds the pseudo-header sum

class Device;
class QueueImpl;

/// One netif queue: a TX ring and an RX ring, their granted buffer pools
/// and event channel(s). Device::queue() gives it; the Device owns it.
class Queue {
 public:
  /// Sends packets in order; returns how many were accepted (the rest did not
  /// fit in the ring or the slot pool: retry later). Packets the backend can
  /// never take (over 64 KiB, more than 18 slots, empty) are refused: counted
  /// in tx_dropped and accepted (consumed) so that a caller does not retry
  /// them forever. At most one notification per call.
  uint16_t transmit(std::span<const TxPacket> pkts);

  /// Delivers up to `max` received packets to `sink`, which returns false to
  /// stop (e.g. no mbuf left; that packet is kept for the next call), or an
  /// RxVerdict.
  template <typename Sink>
  uint16_t receive(uint16_t max, Sink&& sink);

  /// Runs the response handler: in poll mode directly, in event mode only
  /// for events that fired. Returns true when it found work.
  bool poll();

  /// Event mode: before sleeping on event_fd(), arm() takes the events that
  /// fired, runs the handler for what is waiting and re-arms notifications;
  /// it returns false when received packets are already waiting (do not sleep
  /// then: the event fd is made readable). With ArmFor::kRx (DPDK's rx
  /// interrupts) only received packets wake the sleeper: TX responses waiting
  /// are reaped here and their notifications stay off, so that completions of
  /// what was sent before do not keep waking an idle queue.
  enum class ArmFor { kRxAndTx, kRx };
  /// Arms notifications before a sleep on event_fd() (see ArmFor); false
  /// when received packets are already waiting.
  bool arm(ArmFor what = ArmFor::kRxAndTx);
  /// As arm(), for a level-triggered wait on event_fd() (poll, ppoll): an
  /// event that fired already is left to the wait, which then returns at
  /// once, and to set_poll_mode_after_wait(true) after it. Saves reading the
  /// event channel (a system call, on Xen a trip through the hypervisor)
  /// before each sleep. An edge-triggered wait (EAL's epoll) needs arm().
  bool arm_for_level_wait(ArmFor what);
  /// The fd to sleep on in event mode: readable when an event fired.
  int event_fd() const;
  /// The local event channel port RX events arrive on (the queue's one port
  /// without split event channels), for a wait in the hypervisor
  /// (SCHEDOP_poll) in place of one on event_fd(); 0 while not connected.
  uint32_t rx_event_port() const;
  /// kPoll also takes any event that fired meanwhile (its handler runs, its
  /// port is unmasked), so that the next arm() sleeps on a fresh edge.
  void set_mode(QueueMode m);
  /// set_mode(kPoll) after a level-triggered wait: `fd_was_ready` false (the
  /// wait did not report event_fd()) skips taking events, of which none had
  /// fired; one that fires later waits for the next wait, which then returns
  /// at once.
  void set_poll_mode_after_wait(bool fd_was_ready);
  /// The queue's current mode.
  QueueMode mode() const;

  /// Runs the TX response handler now and returns how many packets it found
  /// completed (at most `max`; 0 means no limit): rte_eth_tx_done_cleanup.
  uint32_t tx_done_cleanup(uint32_t max);

  /// Ring occupancy for descriptor queries (rx_queue_count, the descriptor
  /// status calls), in ring slots.
  struct RingState {
    uint32_t size = 0;          ///< entries of the ring
    uint32_t rx_done = 0;       ///< RX: answered by the backend, not yet delivered
    uint32_t rx_posted = 0;     ///< RX: buffers posted, not yet answered
    uint32_t tx_in_flight = 0;  ///< TX: requests not yet answered
    uint32_t tx_answered = 0;   ///< TX: answered, not yet reaped
  };
  /// The ring's occupancy now.
  RingState ring_state();

  /// What a sleeper that watches memory (rte_power_monitor) waits on: the RX
  /// ring's response producer, and its value while nothing new arrived.
  /// false while the queue is not connected.
  struct RxMonitor {
    /// The RX ring's response producer (ring.h rsp_prod).
    const volatile uint32_t* addr = nullptr;
    /// Its value while nothing new arrived: a change means work.
    uint32_t idle_value = 0;
  };
  /// Fills `out`; false while the queue is not connected.
  bool rx_monitor(RxMonitor* out);

  /// A page of the queue's granted TX pool for zero-copy transmit: write the
  /// packet there and pass it in a TxSegment; the page returns to the pool
  /// when the backend answers. nullptr when none is free.
  uint8_t* tx_buffer();
  /// Gives back a page from tx_buffer() that was not sent.
  void tx_buffer_free(uint8_t* page);

  /// Counters since the device was opened (kept across reconnects).
  QueueCounters counters() const;
  /// Sets every counter counters() reports to 0.
  void reset_counters();
  /// The queue's index in its device, 0 to Device::num_queues() - 1.
  uint32_t index() const;

 private:
  friend class Device;
  friend class QueueImpl;
  explicit Queue(QueueImpl* impl) : impl_(impl) {}
  using Deliver = RxVerdict (*)(void* ctx, const RxPacket& p);
  uint16_t receive_raw(uint16_t max, Deliver fn, void* ctx);
  QueueImpl* impl_;
};

template <typename Sink>
uint16_t Queue::receive(uint16_t max, Sink&& sink) {
  return receive_raw(
      max,
      [](void* ctx, const RxPacket& p) -> RxVerdict {
        auto& sink = *static_cast<std::remove_reference_t<Sink>*>(ctx);
        if constexpr (std::is_same_v<decltype(sink(p)), RxVerdict>) {
          return sink(p);
        } else {
          return sink(p) ? RxVerdict::kConsumed : RxVerdict::kStop;
        }
      },
      &sink);
}

/// Whether the device is connected to its backend (kUp) or not.
enum class LinkState { kDown, kUp };

/// What the device found in xenstore when it opened and at the last connect.
struct DeviceInfo {
  /// This domain's id.
  domid_t self_domid = 0;
  /// The backend's domain (the vif's backend-id key).
  domid_t backend_id = 0;
  std::string frontend_path;  ///< /local/domain/D/device/vif/N
  /// The backend's xenstore directory (the vif's backend key).
  std::string backend_path;
  /// The port's MAC: DeviceConfig::mac when given, else the vif's mac key.
  MacAddr mac{};
  /// The vif's mtu key (1500 when absent).
  uint32_t mtu = 1500;
  /// What the backend offers.
  BackendFeatures features;
  bool split_event_channels = false;  ///< in use
  /// The queues the device has.
  uint32_t queues = 0;
};

/// What the backend provides and a new connection found different from the
/// previous one (a vif re-attached with another mac, a backend restarted with
/// other features): DeviceEvent::changed, a set of these bits.
enum BackendChange : uint32_t {
  kBackendChangeMac = 1u << 0,        ///< the vif's mac (not when DeviceConfig::mac overrides it)
  kBackendChangeMtu = 1u << 1,        ///< the vif's mtu key
  kBackendChangeFeatures = 1u << 2,   ///< a feature-* key
  kBackendChangeMaxQueues = 1u << 3,  ///< multi-queue-max-queues
};

/// A link change. `reason` says why the device went down (a backend protocol
/// violation, the backend closing, the platform connection lost...). On a link
/// up after a reconnect, `changed` names what the backend provides differently
/// from the previous connection (DeviceInfo holds the new values; `previous`
/// the values of the previous connection); 0 on the first connection.
struct DeviceEvent {
  /// The new link state.
  LinkState link = LinkState::kDown;
  /// Why the link went down; empty on a link up.
  std::string reason;
  uint32_t changed = 0;  ///< BackendChange bits
  /// The previous connection's MAC (with kBackendChangeMac).
  MacAddr previous_mac{};
  /// The previous connection's MTU (with kBackendChangeMtu).
  uint32_t previous_mtu = 0;
  /// The previous connection's features (with kBackendChangeFeatures).
  BackendFeatures previous_features;
};

/// One vif of this domain: its xenbus handshake with the backend and its
/// queues. The control path (open, connect, poll_control, close and the other
/// Device calls) runs on one thread; see this file's description.
class Device {
 public:
  /// Opens the platform and reads the vif's configuration. Does not connect.
  static Result<std::unique_ptr<Device>> open(const DeviceConfig& cfg);
  ~Device();  ///< closes (Closing -> Closed) and ends access to every page
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  /// Handshake until the backend is Connected, or the timeout passes.
  Status connect();
  /// Orderly close: Closing, wait for the backend, Closed; every page ended.
  void close();

  /// Control path: handles xenstore watch events (backend state, the vif's
  /// nodes) and reconnects after the backend went away. It never waits for
  /// an event, but each call reads the frontend's and the backend's state
  /// nodes: xenstore round trips, which wait for xenstored (tens of ms in an
  /// emulated guest). Call it when control_fd() is readable, not on every
  /// turn of a data loop. Returns true when the link state changed.
  bool poll_control();
  int control_fd() const;  ///< readable when poll_control has work

  /// The link state the control path found last.
  LinkState link() const;
  /// What the device found in xenstore.
  const DeviceInfo& info() const;
  /// The number of queues.
  uint32_t num_queues() const;
  /// Queue `i`, 0 <= i < num_queues().
  Queue& queue(uint32_t i);

  /// Called from poll_control (or connect) when the link goes up or down.
  void set_link_callback(std::function<void(const DeviceEvent&)> cb);
  /// The last reason the link went down ("" when it never did).
  std::string last_down_reason() const;
  /// How many times the device connected again after its first connection.
  uint64_t reconnects() const;

  /// Every buffer of the last teardown accounted for (for tests and tools).
  struct TeardownAccount {
    /// Buffer pages the queues had.
    uint64_t pages = 0;
    /// Pages whose access was ended and that were freed.
    uint64_t returned = 0;
    /// Pages the backend still mapped (kept until it unmaps them).
    uint64_t still_mapped = 0;
    /// Pages whose fate the platform cannot tell (xen: gntalloc defers by itself).
    uint64_t unknown = 0;
    uint64_t rx_dropped_staged = 0;  ///< received but never delivered
    uint64_t tx_unanswered = 0;      ///< in flight when the backend went away
  };
  /// The account of the last teardown.
  TeardownAccount teardown_account() const;

  /// Multicast filtering in the backend (netif.h "request-multicast-control",
  /// XEN_NETIF_EXTRA_TYPE_MCAST_ADD/DEL): with `on`, the backend delivers
  /// only the multicast frames of `groups` (broadcast always passes); off,
  /// all of them. Used with a backend offering feature-dynamic-multicast-
  /// control (it watches the request key, so the filter follows every call);
  /// kept across reconnects and applied at each connect. ENOTSUP when `on`
  /// and the backend has no dynamic control, E2BIG beyond
  /// kMaxMulticastGroups, EINVAL for an address that is not multicast,
  /// EAGAIN when the TX ring had no room (call again). Like every Device
  /// call, not concurrent with poll_control().
  Status set_multicast_filter(bool on, std::span<const MacAddr> groups);

  /// Receive-side scaling (RssConfig): checked against netif's rules and
  /// the backend's limits, kept across reconnects and applied at each
  /// connect (a backend refusal then fails the connection) and at once when
  /// connected. EINVAL for a hash type netif cannot hash, a key over
  /// kRssKeyMax, a mapping entry naming no queue; E2BIG for a mapping
  /// larger than the backend takes; ENOTSUP when the backend has no control
  /// ring; the backend's refusal (NOT_SUPPORTED: ENOTSUP, INVALID_PARAMETER:
  /// EINVAL, BUFFER_OVERFLOW: E2BIG) names the request; a backend breaking
  /// the control ring's protocol disconnects the device (EPROTO, ETIMEDOUT).
  Status set_rss(const RssConfig& cfg);
  /// The RSS configuration last accepted by set_rss().
  const RssConfig& rss() const;
  /// What the backend allows for RSS (see RssCapabilities).
  RssCapabilities rss_capabilities() const;
  /// The control ring's counters.
  CtrlCounters ctrl_counters() const;

 private:
  class Impl;
  explicit Device(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpv
