// SPDX-License-Identifier: MIT
// xpv-netback's command line.
#pragma once

#include <string>

#include "netback/config.h"
#include "xpv/result.h"

namespace xpv::netback {

struct CliOptions {
  Config cfg;
  std::string socket;
  std::string stats_file;
  double stats_interval_s = 0;  // 0: only at exit
  bool verbose = false;
  bool help = false;
};

// Parses argv[1..argc). An error names the offending option.
Result<CliOptions> parse_cli(int argc, const char* const argv[]);

// The --help text.
const char* help_text();

}  // namespace xpv::netback
