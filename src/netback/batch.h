// SPDX-License-Identifier: MIT
// Small helpers of the per-packet path: a batch array allocated once, and a
// copy of a frame's bytes that handles small frames without a library call.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace xpv::netback {

// A batch of at most `capacity` entries, allocated once (control path) and
// never grown: appending is a store and an increment, with no reallocation
// path to call into. Every batch is bounded by construction (the ring's size,
// the flush before a full batch); going past the capacity is a bug and aborts.
template <typename T>
class Batch {
 public:
  void allocate(uint32_t capacity) {
    data_ = std::make_unique<T[]>(capacity);
    cap_ = capacity;
    size_ = 0;
  }
  void push_back(const T& v) { append() = v; }
  // A value-initialised entry, appended and returned to be filled in place
  // (no temporary to copy: a struct built field by field on the stack and
  // copied in wide loads stalls on store forwarding).
  T& emplace_back() { return append() = T{}; }
  uint32_t size() const { return size_; }
  uint32_t capacity() const { return cap_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  // Shrinks to `n` entries (n <= size()).
  void truncate(uint32_t n) { size_ = n; }
  T& operator[](uint32_t i) { return data_[i]; }
  const T& operator[](uint32_t i) const { return data_[i]; }
  T* data() { return data_.get(); }
  T* begin() { return data_.get(); }
  T* end() { return data_.get() + size_; }
  const T* begin() const { return data_.get(); }
  const T* end() const { return data_.get() + size_; }

 private:
  // The next entry, as it was; past the capacity, a bug of the caller's.
  T& append() {
    if (size_ >= cap_) [[unlikely]]
      std::abort();
    return data_[size_++];
  }
  std::unique_ptr<T[]> data_;
  uint32_t size_ = 0;
  uint32_t cap_ = 0;
};

// memcpy for a frame's bytes. 16 to 64 bytes (the small frames the rings
// mostly carry) move as two overlapping 16- or 32-byte blocks, inline: a
// fixed number of loads and stores instead of a library call or a rep movs
// whose iterations depend on the length. Everything else goes to memcpy.
// The source may be a page the frontend still writes to: each source byte
// is read at most twice and the copy is still only a copy (what the
// destination ends up holding is some version of the bytes, as with memcpy).
inline void copy_frame_bytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
  if (n >= 16 && n <= 64) {
    if (n <= 32) {
      uint8_t a[16], b[16];
      std::memcpy(a, src, 16);
      std::memcpy(b, src + n - 16, 16);
      std::memcpy(dst, a, 16);
      std::memcpy(dst + n - 16, b, 16);
    } else {
      uint8_t a[32], b[32];
      std::memcpy(a, src, 32);
      std::memcpy(b, src + n - 32, 32);
      std::memcpy(dst, a, 32);
      std::memcpy(dst + n - 32, b, 32);
    }
    return;
  }
  std::memcpy(dst, src, n);
}

}  // namespace xpv::netback
