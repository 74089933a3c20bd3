#!/bin/bash
# The arm64 build: the library, xpv-netback, the tools, the net_xenpv PMD and
# the unit tests, cross-built with Debian's aarch64-linux-gnu-g++ against the
# arm64 libxen-dev, libdpdk-dev and GoogleTest of the sysroot that
# scripts/setup.sh unpacks, and run under qemu-user.
#
#   scripts/check-arm64.sh                  configure (Meson cross file written
#                                           here) and build; prints
#                                           "CHECK arm64-... PASS|FAIL" lines
#   scripts/check-arm64.sh --print-build-dir
#   scripts/check-arm64.sh --run PROGRAM [ARGS...]
#                                           runs an arm64 program of that build
#                                           under qemu-aarch64 (make test runs
#                                           tests/xpv-tests this way)
#
# The build directory is a cache outside the repository, keyed by this source
# tree, the sysroot and the DPDK SDK headers: a second run only rebuilds what
# changed. Without binfmt_misc (containers), an arm64 program cannot exec
# another one, so the unit tests' child processes (sim-peer, xpv-netback) get
# qemu in front through XPV_TEST_EXEC_WRAPPER (tests/support/subprocess.h).
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
TRIPLET=aarch64-linux-gnu
CXX=$TRIPLET-g++
QEMU=qemu-aarch64

fail() {  # check-name message
  echo "CHECK $1 FAIL $2"
  exit 1
}

SYSROOT=$(scripts/setup.sh --print-arm64-sysroot)
SDK=$(scripts/setup.sh --print-sdk-dir 2>/dev/null || true)
# Inputs that a ninja rebuild does not notice by itself: where the sources
# are, the sysroot (named by its packages' versions), the SDK headers and the
# cross compiler's version.
key=$(printf '%s\n' "$SRC" "$SYSROOT" "$SDK" "$($CXX --version 2>/dev/null | head -1)" | sha256sum | cut -c1-16)
CACHE=${XPV_CACHE:-/var/cache/xpv}/arm64-build
mkdir -p "$CACHE" 2>/dev/null && [[ -w $CACHE ]] || CACHE=$SRC/build-arm64-cache
BUILD=$CACHE/$key

run_arm64() {  # program args...
  local wrapper
  wrapper="$(command -v $QEMU) -L $SYSROOT"
  XPV_TEST_EXEC_WRAPPER="$wrapper" exec $wrapper "$@"
}

case "${1:-}" in
  --print-build-dir)
    echo "$BUILD"
    exit 0
    ;;
  --run)
    shift
    [[ -f $SYSROOT/.complete ]] || { echo "check-arm64: no arm64 sysroot at $SYSROOT (make setup)" >&2; exit 1; }
    run_arm64 "$@"
    ;;
  "") ;;
  *) echo "check-arm64: unknown argument '$1'" >&2; exit 2 ;;
esac

command -v $CXX >/dev/null || fail arm64-build "$CXX not found (package g++-aarch64-linux-gnu; make setup installs it)"
command -v $QEMU >/dev/null || fail arm64-build "$QEMU not found (package qemu-user; make setup installs it)"
[[ -f $SYSROOT/.complete ]] || fail arm64-build "no arm64 sysroot at $SYSROOT (make setup makes it)"

# The cross file: Debian's cross tools, the sysroot's pkg-config files
# (sys_root makes pkg-config prefix their paths with it), its libraries for the
# linker, and qemu as Meson's exe_wrapper. Meson puts ccache in front of native
# compilers only: here the cross file does, when there is one (make sets its
# cache directory). A fresh clone gives every source a new mtime, so ninja
# compiles them all again; the cache answers for those that did not change.
launcher=
command -v ccache >/dev/null && launcher="'ccache', "
mkdir -p "$BUILD"
cross=$BUILD.cross.ini
cat >"$cross.new" <<EOF
# Written by scripts/check-arm64.sh.
[constants]
sysroot = '$SYSROOT'
libdir = sysroot / 'usr/lib/$TRIPLET'

[binaries]
c = [$launcher'$TRIPLET-gcc']
cpp = [$launcher'$CXX']
ar = '$TRIPLET-ar'
strip = '$TRIPLET-strip'
pkgconfig = 'pkg-config'
exe_wrapper = ['$QEMU', '-L', sysroot]

[properties]
sys_root = sysroot
pkg_config_libdir = [libdir / 'pkgconfig', sysroot / 'usr/share/pkgconfig']

[built-in options]
cpp_link_args = ['-L' + libdir, '-Wl,-rpath-link,' + libdir + ':' + sysroot / 'lib/$TRIPLET']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'armv8-a'
endian = 'little'
EOF
if ! cmp -s "$cross.new" "$cross"; then
  mv "$cross.new" "$cross"
  rm -rf "$BUILD"
else
  rm -f "$cross.new"
fi

log=$BUILD.log
if [[ ! -f $BUILD/build.ninja ]]; then
  pmd=(-Dpmd=disabled)
  [[ -n $SDK && -f $SDK/ethdev_driver.h ]] && pmd=(-Dpmd=enabled -Ddpdk_sdk_include="$SDK")
  if ! meson setup "$BUILD" --cross-file "$cross" "${pmd[@]}" >"$log" 2>&1; then
    tail -30 "$log" >&2
    rm -rf "$BUILD"
    fail arm64-build "meson setup with the cross file $cross failed (log: $log)"
  fi
fi
# What make test needs, each checked below to be an AArch64 ELF file: the
# library, xpv-netback, the tools, the unit tests and their helper, the PMD.
products=(src/libxpv.so.0.1.0 src/libxpv.a src/netback/xpv-netback examples/xpv-pktgen tests/xpv-tests tests/sim-peer)
pmd_so=drivers/net_xenpv/librte_net_xenpv.so
[[ -n $SDK && -f $SDK/ethdev_driver.h ]] && products+=("$pmd_so")
t0=$SECONDS
if ! ninja -C "$BUILD" -j 2 "${products[@]}" >"$log" 2>&1; then
  grep -E 'error|FAILED' "$log" | head -40 >&2
  fail arm64-build "ninja in $BUILD failed (log: $log)"
fi
bad=()
for p in "${products[@]}"; do
  f=$BUILD/$p
  # Every header readelf prints (one per member of an archive) says AArch64.
  machines=$(readelf -h "$f" 2>/dev/null | sed -nE 's/^ *Machine: *//p' | sort -u)
  [[ $machines == AArch64 ]] || bad+=("$p")
done
((${#bad[@]} == 0)) || fail arm64-build "not built for AArch64: ${bad[*]}"
echo "CHECK arm64-build PASS ${#products[@]} targets built for aarch64 in $((SECONDS - t0))s ($CXX $($CXX -dumpversion), sysroot $SYSROOT): ${products[*]}"
status=0
if [[ -e $BUILD/$pmd_so ]]; then
  echo "CHECK arm64-pmd PASS net_xenpv ($pmd_so) built for aarch64 against the sysroot's libdpdk-dev $(sed -n 's/^libdpdk-dev //p' "$SYSROOT/.packages")"
else
  echo "CHECK arm64-pmd FAIL net_xenpv not built for arm64 (DPDK SDK headers: '${SDK:-none}'; log: $log)"
  status=1
fi

# The ring's ordering points as arm64 executes them (tests/arm64/ring_barriers.cc
# says which instruction each one needs and why).
probe=$BUILD.ring_barriers.o
$CXX -std=c++20 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc -c tests/arm64/ring_barriers.cc -o "$probe" ||
  fail arm64-ring-barriers "tests/arm64/ring_barriers.cc does not compile"
insns() {  # function: its instructions, "; "-separated
  $TRIPLET-objdump -d --no-show-raw-insn --disassemble="$1" "$probe" |
    sed -nE 's/^ +[0-9a-f]+:\t(.*)$/\1/p' | sed -E 's/\t/ /g; s/ +\/\/.*//' | paste -sd';'
}
wrong=()
expect() {  # function regex what
  insns "$1" | grep -qE "$2" || wrong+=("$1: $3")
}
for f in probe_push_requests probe_push_responses; do
  expect $f 'stlr w[0-9]+, \[x[0-9]+\];(.*;)?dmb ish;(.*;)?ldr w' \
    "index published with STLR, then DMB ISH before the event is read"
done
for f in probe_available_responses probe_available_requests; do
  expect $f 'ldar w' "producer index read with LDAR"
done
for f in probe_final_check_responses probe_final_check_requests; do
  expect $f 'str w[0-9]+, \[x[0-9]+\];dmb ish;(.*;)?ldar w' \
    "event stored, DMB ISH, then the producer index re-read with LDAR"
done
if ((${#wrong[@]})); then
  printf 'arm64 ring ordering: %s\n' "${wrong[@]}" >&2
  fail arm64-ring-barriers "${#wrong[@]} of the ring's 6 ordering points lack their arm64 barrier"
fi
echo "CHECK arm64-ring-barriers PASS the ring's 6 ordering points compile to STLR / LDAR / DMB ISH on aarch64"
exit $status
