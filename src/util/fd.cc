// SPDX-License-Identifier: MIT
#include "util/fd.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace xpv {

std::string errno_string(int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer.
  return std::string(strerror_r(err, buf, sizeof buf));
}

Result<UniqueFd> UniqueFd::dup() const {
  int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return make_error(errno, "dup of fd failed: " + errno_string(errno));
  return UniqueFd(fd);
}

Result<MappedRegion> MappedRegion::map_shared(int fd, size_t len, size_t offset) {
  void* p =
      ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    int e = errno;
    return make_error(e, format("mmap of %zu bytes failed: %s", len, errno_string(e).c_str()));
  }
  return MappedRegion(p, len);
}

Result<UniqueFd> make_memfd(const char* name, size_t len) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return make_error(e, format("memfd_create(%s) failed: %s", name, errno_string(e).c_str()));
  }
  UniqueFd f(fd);
  if (::ftruncate(fd, static_cast<off_t>(len)) != 0) {
    int e = errno;
    return make_error(e, format("ftruncate of memfd %s to %zu bytes failed: %s", name, len,
                                errno_string(e).c_str()));
  }
  return f;
}

Result<UniqueFd> make_eventfd() {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return make_error(e, "eventfd failed: " + errno_string(e));
  }
  return UniqueFd(fd);
}

void eventfd_signal(int fd) {
  uint64_t one = 1;
  // EAGAIN only when the counter would overflow: it is then readable anyway.
  ssize_t r = ::write(fd, &one, sizeof one);
  (void)r;
}

Result<UniqueFd> make_epoll() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    int e = errno;
    return make_error(e, "epoll_create1: " + errno_string(e));
  }
  return UniqueFd(ep);
}

Status epoll_add(int ep, int fd, uint64_t data) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = data;
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
    int e = errno;
    return make_error(e, "epoll_ctl(ADD): " + errno_string(e));
  }
  return {};
}

uint64_t eventfd_drain(int fd) {
  uint64_t v = 0;
  if (::read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
  return v;
}

}  // namespace xpv
