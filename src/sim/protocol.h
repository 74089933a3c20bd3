// SPDX-License-Identifier: MIT
// The simulated hypervisor's control protocol: what a domain asks of the
// hypervisor (the hypercalls and xenstore requests that are not plain shared
// memory accesses), and the watch events it gets back.
//
// On a unix SOCK_SEQPACKET socket one datagram is one message: a fixed header,
// then a payload of little-endian fields; file descriptors (memfds, eventfds)
// travel as SCM_RIGHTS. An in-process client exchanges the same messages by
// function call.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.h"

namespace xpv::sim {

enum class Op : uint32_t {
  kHello = 1,  // -> u16 domid, u32 pages, u32 grants; fds: pages, gnttab, evtchn table

  kEvtchnOpenHandle = 16,  // fds: doorbell eventfd -> u32 handle id
  kEvtchnCloseHandle,      // u32 handle
  kEvtchnAllocUnbound,     // u32 handle, u16 remote -> u32 port
  kEvtchnBindInterdomain,  // u32 handle, u16 remote, u32 remote port -> u32 port
  kEvtchnUnbind,           // u32 handle, u32 port
  kEvtchnDoorbell,         // u32 handle -> fds: that handle's doorbell eventfd

  kXsRead = 32,         // str path -> str value
  kXsWrite,             // str path, str value
  kXsMkdir,             // str path
  kXsRm,                // str path
  kXsDirectory,         // str path -> u32 n, n x str
  kXsGetPerms,          // str path -> u32 n, n x (u16 domid, u8 access)
  kXsSetPerms,          // str path, u32 n, n x (u16 domid, u8 access)
  kXsTransactionStart,  // -> u32 id
  kXsTransactionEnd,    // u8 abort
  kXsWatch,             // str path, str token
  kXsUnwatch,           // str path, str token
  kXsDomainPath,        // u16 domid -> str path
  kXsWatchEvent = 64,   // server -> client, unsolicited: str path, str token

  kStats = 96,  // -> the hypervisor's accounting (for tests and diagnostics)
};

struct WireHeader {
  uint32_t op;
  uint32_t req_id;  // echoed in the reply; 0 for watch events
  uint32_t tx_id;   // xenstore transaction
  int32_t err;      // reply: 0 or an errno value (payload: the message)
  uint32_t len;     // payload bytes
};
static_assert(sizeof(WireHeader) == 20);

inline constexpr size_t kMaxPayload = 64 * 1024;
inline constexpr size_t kMaxFdsPerMessage = 4;

struct Message {
  Op op{};
  uint32_t req_id = 0;
  uint32_t tx_id = 0;
  int32_t err = 0;
  std::string payload;
  std::vector<UniqueFd> fds;

  Message() = default;
  explicit Message(Op o) : op(o) {}

  // Encoding helpers (payload is append-only when writing).
  Message& u8(uint8_t v) { return raw(&v, 1); }
  Message& u16(uint16_t v) { return raw(&v, 2); }
  Message& u32(uint32_t v) { return raw(&v, 4); }
  Message& str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    payload.append(s);
    return *this;
  }
  Message& raw(const void* p, size_t n) {
    payload.append(static_cast<const char*>(p), n);
    return *this;
  }
};

// Reads fields from a payload; any read past the end sets failed().
class Reader {
 public:
  explicit Reader(std::string_view p) : p_(p) {}
  uint8_t u8() { return get<uint8_t>(); }
  uint16_t u16() { return get<uint16_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  std::string str() {
    uint32_t n = u32();
    if (failed_ || n > p_.size() - off_) {
      failed_ = true;
      return {};
    }
    std::string s(p_.substr(off_, n));
    off_ += n;
    return s;
  }
  bool failed() const { return failed_; }
  bool done() const { return off_ == p_.size(); }

 private:
  template <typename T>
  T get() {
    T v{};
    if (failed_ || sizeof(T) > p_.size() - off_) {
      failed_ = true;
      return v;
    }
    std::memcpy(&v, p_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  std::string_view p_;
  size_t off_ = 0;
  bool failed_ = false;
};

// An error reply.
inline Message error_reply(const Message& req, int err, std::string_view msg) {
  Message r(req.op);
  r.req_id = req.req_id;
  r.tx_id = req.tx_id;
  r.err = err;
  r.payload.assign(msg);
  return r;
}
inline Message ok_reply(const Message& req) {
  Message r(req.op);
  r.req_id = req.req_id;
  r.tx_id = req.tx_id;
  return r;
}

// Socket I/O. send blocks (or fails with EAGAIN when nonblocking); recv
// returns nullopt with errno-style error in *err: 0 = orderly close.
Status send_message(int sock, const Message& m, bool nonblocking);
Result<Message> recv_message(int sock, bool nonblocking);

const char* op_name(Op op);

}  // namespace xpv::sim
