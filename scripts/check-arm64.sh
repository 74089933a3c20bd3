#!/bin/bash
# Builds the library (and xpv-netback) for arm64 with Debian's cross compiler:
# the shared rings' memory ordering and the spin-wait hints must compile for a
# weakly ordered CPU, not only for x86. Compiles every translation unit with
# the project's warning flags; links nothing (there is no arm64 libxen here).
# Prints one "CHECK arm64-build PASS|FAIL ..." line.
#   scripts/check-arm64.sh
set -uo pipefail
cd "$(dirname "$0")/.."
CXX=aarch64-linux-gnu-g++
if ! command -v $CXX >/dev/null; then
  echo "CHECK arm64-build FAIL $CXX not found (package g++-aarch64-linux-gnu; make setup installs it)"
  exit 1
fi
# Xen's public headers are architecture-neutral text (xen.h picks arch-arm.h on
# __aarch64__); the libxen*.h headers only declare functions. Expose just
# those to the cross compiler, not the host's other headers.
inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
ln -s /usr/include/xen "$inc/xen"
for h in xenevtchn.h xengnttab.h xenstore.h xenstore_lib.h xs_lib.h xs.h xentoollog.h xencall.h; do
  [[ -e /usr/include/$h ]] && ln -s "/usr/include/$h" "$inc/$h"
done
log=$(mktemp)
# Two at a time (the machine has two cores); each failure is named.
mapfile -t files < <(git ls-files 'src/*.cc')
n=${#files[@]}
printf '%s\n' "${files[@]}" | xargs -P 2 -I{} sh -c \
  "$CXX -std=c++20 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc -isystem '$inc' -c {} -o /dev/null 2>>'$log' || echo 'arm64: {} does not compile'" \
  >"$log.failed"
fails=$(wc -l <"$log.failed")
cat "$log.failed" >&2
if ((fails == 0)); then
  echo "CHECK arm64-build PASS $n translation units of libxpv and xpv-netback compile for aarch64 ($($CXX -dumpversion))"
else
  head -40 "$log" >&2
  echo "CHECK arm64-build FAIL $fails of $n translation units do not compile for aarch64"
fi
rm -f "$log" "$log.failed"
((fails == 0))
