// SPDX-License-Identifier: MIT
/// \file
/// Error values for the control path: every failure carries an errno-style
/// code and a sentence naming the problem. The data path never allocates, so it
/// reports with plain counters and return values instead of these.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>

/// libxpv: a userspace Xen PV network (netif) frontend.
namespace xpv {

/// A failure: an errno value and a sentence naming the problem.
struct Error {
  int code = EINVAL;  ///< errno value
  /// The sentence naming the problem.
  std::string message;
};

/// An Error of `code` (an errno value) and `message`.
inline Error make_error(int code, std::string message) {
  return Error{code, std::move(message)};
}

/// Status: success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  /// A failed Status carrying `e`.
  Status(Error e) : err_(std::move(e)), failed_(true) {}  // NOLINT: implicit by design
  /// A successful Status.
  static Status ok() { return {}; }

  /// True on success.
  explicit operator bool() const { return !failed_; }
  /// True on failure.
  bool failed() const { return failed_; }
  /// The Error; meaningful only when failed().
  const Error& error() const { return err_; }
  /// The errno value of the failure; 0 on success.
  int code() const { return failed_ ? err_.code : 0; }
  /// The failure's sentence; empty on success.
  const std::string& message() const { return err_.message; }

 private:
  Error err_;
  bool failed_ = false;
};

/// Result<T>: a T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  /// A Result holding the value `v`.
  Result(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design
  /// A failed Result carrying `e`.
  Result(Error e) : v_(std::move(e)) {}  // NOLINT: implicit by design
  /// A failed Result carrying a failed Status's Error (aborts on a successful one).
  Result(Status s) : v_(s.error()) {  // NOLINT: only from a failed Status
    if (!s.failed()) std::abort();
  }

  /// True when it holds a value.
  explicit operator bool() const { return v_.index() == 0; }
  /// True when it holds an Error.
  bool failed() const { return v_.index() != 0; }
  /// The value; only when it holds one.
  T& value() & { return std::get<0>(v_); }
  /// Moves the value out; only when it holds one.
  T&& value() && { return std::get<0>(std::move(v_)); }
  /// The value; only when it holds one.
  const T& value() const& { return std::get<0>(v_); }
  /// The value, as value().
  T& operator*() & { return value(); }
  /// Moves the value out, as value().
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  /// The value, as value().
  const T& operator*() const& { return value(); }
  /// The value's members; only when it holds one.
  T* operator->() { return &std::get<0>(v_); }
  /// The value's members; only when it holds one.
  const T* operator->() const { return &std::get<0>(v_); }
  /// The Error; only when failed().
  const Error& error() const { return std::get<1>(v_); }
  /// The outcome without the value.
  Status status() const { return failed() ? Status(error()) : Status(); }

 private:
  std::variant<T, Error> v_;
};

/// Formats like snprintf into a std::string (control path only).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

}  // namespace xpv

/// Propagates a failed Status or Result out of the calling function.
#define XPV_TRY(expr)                               \
  do {                                              \
    auto&& xpv_try_ = (expr);                       \
    if (xpv_try_.failed()) return xpv_try_.error(); \
  } while (0)
