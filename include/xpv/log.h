// SPDX-License-Identifier: MIT
// Where the library's messages go.
#pragma once

#include <functional>
#include <string_view>

namespace xpv {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// Messages up to `level` are emitted (default kInfo; XPV_LOG_LEVEL=0..3 in the
// environment sets it at start-up).
void set_log_level(LogLevel level);
LogLevel log_level();

// Replaces the default sink (stderr, "xpv: " prefix). Pass nullptr to restore.
using LogSink = std::function<void(LogLevel, std::string_view message)>;
void set_log_sink(LogSink sink);

}  // namespace xpv
