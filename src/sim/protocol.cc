// SPDX-License-Identifier: MIT
#include "sim/protocol.h"

#include <sys/socket.h>

#include <cerrno>

namespace xpv::sim {

Status send_message(int sock, const Message& m, bool nonblocking) {
  if (m.payload.size() > kMaxPayload) {
    return make_error(EMSGSIZE, format("message %s of %zu bytes exceeds the %zu-byte limit",
                                       op_name(m.op), m.payload.size(), kMaxPayload));
  }
  if (m.fds.size() > kMaxFdsPerMessage) return make_error(EINVAL, "too many fds in one message");
  WireHeader h{static_cast<uint32_t>(m.op), m.req_id, m.tx_id, m.err,
               static_cast<uint32_t>(m.payload.size())};
  iovec iov[2] = {{&h, sizeof h}, {const_cast<char*>(m.payload.data()), m.payload.size()}};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = m.payload.empty() ? 1 : 2;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  if (!m.fds.empty()) {
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * m.fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * m.fds.size());
    int* fds = reinterpret_cast<int*>(CMSG_DATA(c));
    for (size_t i = 0; i < m.fds.size(); ++i)
      fds[i] = m.fds[i].get();
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &mh, MSG_NOSIGNAL | (nonblocking ? MSG_DONTWAIT : 0));
    if (n >= 0) return {};
    if (errno == EINTR) continue;
    int e = errno;
    return make_error(e, format("sending %s failed: %s", op_name(m.op), errno_string(e).c_str()));
  }
}

Result<Message> recv_message(int sock, bool nonblocking) {
  WireHeader h{};
  std::string payload(kMaxPayload, '\0');
  iovec iov[2] = {{&h, sizeof h}, {payload.data(), payload.size()}};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = 2;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  ssize_t n;
  for (;;) {
    n = ::recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (nonblocking ? MSG_DONTWAIT : 0));
    if (n >= 0 || errno != EINTR) break;
  }
  if (n < 0) {
    int e = errno;
    return make_error(e,
                      "receiving from the simulated hypervisor socket failed: " + errno_string(e));
  }
  Message m;
  // Take ownership of any passed fds first, so that none leaks on error.
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const int* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
      for (size_t i = 0; i < nfd; ++i)
        m.fds.emplace_back(fds[i]);
    }
  }
  if (n == 0) return make_error(ECONNRESET, "the peer closed the simulated hypervisor connection");
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    return make_error(EMSGSIZE, "a simulated hypervisor message was truncated");
  }
  if (static_cast<size_t>(n) < sizeof h || h.len != static_cast<size_t>(n) - sizeof h) {
    return make_error(EPROTO, format("malformed simulated hypervisor message (%zd bytes, header "
                                     "says %u payload bytes)",
                                     n, h.len));
  }
  payload.resize(h.len);
  m.op = static_cast<Op>(h.op);
  m.req_id = h.req_id;
  m.tx_id = h.tx_id;
  m.err = h.err;
  m.payload = std::move(payload);
  return m;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kHello:
      return "hello";
    case Op::kEvtchnOpenHandle:
      return "evtchn-open";
    case Op::kEvtchnCloseHandle:
      return "evtchn-close";
    case Op::kEvtchnAllocUnbound:
      return "evtchn-alloc-unbound";
    case Op::kEvtchnBindInterdomain:
      return "evtchn-bind-interdomain";
    case Op::kEvtchnUnbind:
      return "evtchn-unbind";
    case Op::kEvtchnDoorbell:
      return "evtchn-doorbell";
    case Op::kXsRead:
      return "xs-read";
    case Op::kXsWrite:
      return "xs-write";
    case Op::kXsMkdir:
      return "xs-mkdir";
    case Op::kXsRm:
      return "xs-rm";
    case Op::kXsDirectory:
      return "xs-directory";
    case Op::kXsGetPerms:
      return "xs-get-perms";
    case Op::kXsSetPerms:
      return "xs-set-perms";
    case Op::kXsTransactionStart:
      return "xs-transaction-start";
    case Op::kXsTransactionEnd:
      return "xs-transaction-end";
    case Op::kXsWatch:
      return "xs-watch";
    case Op::kXsUnwatch:
      return "xs-unwatch";
    case Op::kXsDomainPath:
      return "xs-domain-path";
    case Op::kXsWatchEvent:
      return "xs-watch-event";
    case Op::kStats:
      return "stats";
  }
  return "unknown-op";
}

}  // namespace xpv::sim
