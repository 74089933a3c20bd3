// SPDX-License-Identifier: MIT
// A spin-wait hint for busy loops, for each architecture the library builds
// for (x86: PAUSE; arm64: YIELD); elsewhere a compiler barrier only.
#pragma once

namespace xpv {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace xpv
