// SPDX-License-Identifier: MIT
// RAII owners for file descriptors and memory mappings.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <utility>

#include "xpv/result.h"

namespace xpv {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  Result<UniqueFd> dup() const;

 private:
  int fd_ = -1;
};

// A MAP_SHARED mapping of (part of) a file, unmapped on destruction.
class MappedRegion {
 public:
  MappedRegion() = default;
  MappedRegion(void* addr, size_t len) : addr_(addr), len_(len) {}
  MappedRegion(MappedRegion&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  MappedRegion& operator=(MappedRegion&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  ~MappedRegion() { reset(); }

  static Result<MappedRegion> map_shared(int fd, size_t len, size_t offset = 0);
  void reset() {
    if (addr_) ::munmap(addr_, len_);
    addr_ = nullptr;
    len_ = 0;
  }
  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  size_t size() const { return len_; }
  bool valid() const { return addr_ != nullptr; }

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

// A memfd of `len` bytes (sparse: pages are allocated when touched).
Result<UniqueFd> make_memfd(const char* name, size_t len);
// A non-blocking, close-on-exec eventfd.
Result<UniqueFd> make_eventfd();
// Adds 1 to an eventfd; drains it (returns the count read, 0 if none).
void eventfd_signal(int fd);
uint64_t eventfd_drain(int fd);

// A close-on-exec epoll instance, and a level-triggered EPOLLIN watch of fd
// on it (data.u64 = data).
Result<UniqueFd> make_epoll();
Status epoll_add(int ep, int fd, uint64_t data = 0);

// "strerror" for control-path messages.
std::string errno_string(int err);

}  // namespace xpv
