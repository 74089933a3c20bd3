#!/bin/bash
# make deb: xpv's Debian packages (debian/) into BUILD/deb/.
#
# dpkg-buildpackage writes its results into the parent of the source tree, so
# the tree (tracked and new files, not the build directories) is copied into
# BUILD/deb/xpv first and the packages end up in BUILD/deb/. No -dbgsym
# packages (noddebs): they would only lengthen the build.
#
# Usage: scripts/build-deb.sh [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR]" >&2; exit 2 ;;
  esac
done

out=$BUILD/deb
src=$out/xpv
rm -rf "$out"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
  xargs -0 cp --parents -t "$src" 2>/dev/null || true
# Files deleted in the work tree but still tracked are skipped above (cp fails on
# them); a missing debian/ or meson.build is not.
[[ -f $src/debian/control && -f $src/meson.build ]] || { echo "build-deb: copying the tree failed" >&2; exit 1; }

start=$SECONDS
export XPV_DPDK_SDK=${XPV_DPDK_SDK:-$(scripts/setup.sh --print-sdk-dir)}
(cd "$src" && DEB_BUILD_OPTIONS="noddebs ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log" >&2; echo "build-deb: dpkg-buildpackage failed (log $out/build.log)" >&2; exit 1; }
rm -rf "$src"
debs=$(cd "$out" && ls -- *.deb 2>/dev/null | tr '\n' ' ')
[[ -n $debs ]] || { echo "build-deb: dpkg-buildpackage made no .deb in $out (log $out/build.log)" >&2; exit 1; }
echo "build-deb: $debs in $((SECONDS - start)) s (log $out/build.log)"
