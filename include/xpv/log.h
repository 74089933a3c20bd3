// SPDX-License-Identifier: MIT
/// \file
/// Where the library's messages go.
#pragma once

#include <functional>
#include <string_view>

namespace xpv {

/// Message severities, the most severe first.
enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

/// Messages up to `level` are emitted (default kInfo; XPV_LOG_LEVEL=0..3 in the
/// environment sets it at start-up).
void set_log_level(LogLevel level);
/// The level set_log_level() set (or the environment's, or kInfo).
LogLevel log_level();

/// Receives each emitted message with its level.
using LogSink = std::function<void(LogLevel, std::string_view message)>;
/// Replaces the default sink (stderr, "xpv: " prefix); nullptr restores it.
void set_log_sink(LogSink sink);

}  // namespace xpv
