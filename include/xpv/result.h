// SPDX-License-Identifier: MIT
// Error values for the control path: every failure carries an errno-style
// code and a sentence naming the problem. The data path never allocates, so it
// reports with plain counters and return values instead of these.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>

namespace xpv {

struct Error {
  int code = EINVAL;  // errno value
  std::string message;
};

inline Error make_error(int code, std::string message) {
  return Error{code, std::move(message)};
}

// Status: success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)), failed_(true) {}  // NOLINT: implicit by design
  static Status ok() { return {}; }

  explicit operator bool() const { return !failed_; }
  bool failed() const { return failed_; }
  const Error& error() const { return err_; }
  int code() const { return failed_ ? err_.code : 0; }
  const std::string& message() const { return err_.message; }

 private:
  Error err_;
  bool failed_ = false;
};

// Result<T>: a T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}      // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(s.error()) {     // NOLINT: only from a failed Status
    if (!s.failed()) std::abort();
  }

  explicit operator bool() const { return v_.index() == 0; }
  bool failed() const { return v_.index() != 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return failed() ? Status(error()) : Status(); }

 private:
  std::variant<T, Error> v_;
};

// Formats like snprintf into a std::string (control path only).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

}  // namespace xpv

// Propagates a failed Status or Result out of the calling function.
#define XPV_TRY(expr)                               \
  do {                                              \
    auto&& xpv_try_ = (expr);                       \
    if (xpv_try_.failed()) return xpv_try_.error(); \
  } while (0)
