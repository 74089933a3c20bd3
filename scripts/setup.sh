#!/bin/bash
# xpv set-up: Debian packages and DPDK's driver SDK headers.
#
# Idempotent and quick when everything is in place: it checks with dpkg-query
# first and only calls apt-get for what is missing. The DPDK driver headers
# (ethdev_driver.h and friends, not shipped by Debian because DPDK is built
# without enable_driver_sdk) are extracted from Debian's source package of the
# installed DPDK version into a cache outside the repository, keyed by that
# version. They are third-party files and never enter the repository.
#
# The arm64 build (scripts/check-arm64.sh, part of make test) links against
# Debian's arm64 libxen-dev, libdpdk-dev and GoogleTest and runs the unit tests
# under qemu-user. libxen-dev is not Multi-Arch: same, so it cannot sit next to
# the amd64 one through dpkg multiarch; instead the arm64 .debs are downloaded
# with a private apt configuration (the machine's sources, its own package
# lists and an empty dpkg status, so the system's dpkg state stays untouched)
# and unpacked with dpkg-deb into a sysroot outside the repository, keyed by
# the host's versions of those -dev packages.
#
# Usage: scripts/setup.sh [--print-sdk-dir | --print-arm64-sysroot]
set -euo pipefail

PACKAGES=(
  g++ pkg-config meson ninja-build
  libxen-dev
  dpdk dpdk-dev libdpdk-dev dpdk-doc
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev      # libFuzzer and sanitizer runtimes
  g++-aarch64-linux-gnu         # the library, tools and PMD are built for arm64 (make test)
  qemu-user                     # ... and the arm64 unit tests run under qemu-aarch64
  valgrind                      # callgrind: instructions per packet (make bench)
  doxygen python3-docutils      # make docs: API reference, NIC guide page (rst2html --strict)
  dpkg-dev debhelper lintian python3-pyelftools  # make deb and its test (dpdk-pmdinfo.py)
  nlohmann-json3-dev            # xpv-netback's stats file
  libcli11-dev                  # xpv-netback's command line
  ccache                        # compiler cache under $XPV_CACHE/ccache (the Makefile sets it)
  strace                        # integration pmd-idle-syscalls counts an lcore's system calls
  xz-utils ca-certificates
)

CACHE_ROOT=${XPV_CACHE:-/var/cache/xpv}

log() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

missing_packages() {
  local p st
  for p in "${PACKAGES[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$st" == installed ]] || echo "$p"
  done
}

install_packages() {
  local miss
  mapfile -t miss < <(missing_packages)
  if ((${#miss[@]} == 0)); then
    return 0
  fi
  [[ $(id -u) == 0 ]] || die "packages missing (${miss[*]}) and not running as root; run 'make setup' as root"
  log "installing: ${miss[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Other apt users may hold the lock (DPkg::Lock::Timeout waits up to 15 minutes).
  apt-get -o DPkg::Lock::Timeout=900 update -q >/dev/null || die "apt-get update failed"
  apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${miss[@]}" >/dev/null ||
    die "apt-get install ${miss[*]} failed"
}

# The five headers a vdev PMD needs, as paths inside DPDK's source tree.
SDK_HEADERS=(
  lib/ethdev/ethdev_driver.h
  lib/ethdev/ethdev_vdev.h
  lib/eal/include/bus_driver.h
  lib/eal/include/dev_driver.h
  drivers/bus/vdev/bus_vdev_driver.h
)

sdk_dir() {
  local ver
  ver=$(dpkg-query -W -f='${Version}' libdpdk-dev 2>/dev/null) || die "libdpdk-dev is not installed"
  echo "$CACHE_ROOT/dpdk-sdk/$ver"
}

fetch_sdk_headers() {
  local dir ver tmp h
  dir=$(sdk_dir)
  if [[ -f "$dir/include/.complete" ]]; then
    return 0
  fi
  ver=$(dpkg-query -W -f='${Version}' libdpdk-dev)
  log "fetching DPDK $ver driver SDK headers from Debian's source package"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  # A private apt configuration with deb-src entries for the mirrors the
  # machine already uses, so that the system's apt sources stay untouched.
  mkdir -p "$tmp/etc/sources.list.d" "$tmp/lists/partial" "$tmp/cache/archives/partial"
  local mirrors
  # Debian mirrors named by "deb URL" lines or deb822 "URIs:" fields (comments skipped).
  mirrors=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -E '^[[:space:]]*(deb|URIs:)[[:space:]]' | grep -oE 'https?://[^ ]*/debian(-security)?/?( |$)' |
    tr -d ' ' | sort -u || true)
  [[ -n "$mirrors" ]] || mirrors=$'http://deb.debian.org/debian\nhttp://deb.debian.org/debian-security'
  local m
  : >"$tmp/etc/sources.list"
  while read -r m; do
    m=${m%/}
    if [[ "$m" == *-security ]]; then
      echo "deb-src $m bookworm-security main" >>"$tmp/etc/sources.list"
    else
      echo "deb-src $m bookworm main" >>"$tmp/etc/sources.list"
      echo "deb-src $m bookworm-updates main" >>"$tmp/etc/sources.list"
    fi
  done <<<"$mirrors"
  local opts=(-o "Dir::Etc::sourcelist=$tmp/etc/sources.list" -o "Dir::Etc::sourceparts=$tmp/etc/sources.list.d"
    -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" update -q >/dev/null 2>&1 || die "apt-get update for deb-src entries failed"
  (cd "$tmp" && apt-get "${opts[@]}" source --download-only -q "dpdk=$ver" >/dev/null 2>&1) ||
    die "could not download Debian's dpdk source package version $ver"
  local orig
  orig=$(ls "$tmp"/dpdk_*.orig.tar.* 2>/dev/null | head -1)
  [[ -n "$orig" ]] || die "no dpdk orig tarball in the downloaded source package"
  local members=()
  for h in "${SDK_HEADERS[@]}"; do members+=("--wildcards" "*/$h"); done
  mkdir -p "$tmp/x"
  tar -xf "$orig" -C "$tmp/x" "${members[@]}" || die "extracting the SDK headers from $orig failed"
  mkdir -p "$dir/include.new"
  for h in "${SDK_HEADERS[@]}"; do
    local f
    f=$(ls "$tmp"/x/*/"$h" 2>/dev/null | head -1)
    [[ -n "$f" ]] || die "header $h not found in $orig"
    cp "$f" "$dir/include.new/"
  done
  touch "$dir/include.new/.complete"
  rm -rf "$dir/include"
  mv "$dir/include.new" "$dir/include"
  log "DPDK driver SDK headers in $dir/include"
}

# arm64 packages unpacked into the sysroot: what the library, the tools, the
# PMD and the unit tests link against, and what they load at run time under
# qemu-aarch64 -L (libstdc++6 is not a dependency of the -dev packages).
ARM64_PACKAGES=(libxen-dev libdpdk-dev libgtest-dev libgmock-dev libstdc++6 nlohmann-json3-dev libcli11-dev)
# Dependencies left out: the cross toolchain brings its own C library headers,
# crt files and libc.so (libc6-dev-arm64-cross); Debian's arm64 libc6-dev's
# linker scripts name /lib/aarch64-linux-gnu/libc.so.6 absolutely, which
# would make the cross linker pick the host's files.
ARM64_SKIPPED=(libc6-dev linux-libc-dev libc-dev-bin)

# The sysroot follows the host's versions of the -dev packages (the same
# headers on both architectures) and the list above.
arm64_sysroot_dir() {
  local key p ver
  key=$({
    for p in "${ARM64_PACKAGES[@]}"; do
      ver=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null) || ver=none
      echo "$p=$ver"
    done
    echo "skipped: ${ARM64_SKIPPED[*]}"
    echo "layout: 2"  # what make_arm64_sysroot does to the unpacked files
  } | sha256sum | cut -c1-16)
  echo "$CACHE_ROOT/arm64-sysroot/$key"
}

make_arm64_sysroot() {
  local dir tmp
  dir=$(arm64_sysroot_dir)
  if [[ -f "$dir/.complete" ]]; then
    return 0
  fi
  [[ $(id -u) == 0 ]] || die "the arm64 sysroot $dir is missing and not running as root; run 'make setup' as root"
  log "making the arm64 sysroot in $dir (${ARM64_PACKAGES[*]} and their dependencies)"
  mkdir -p "$CACHE_ROOT/arm64-sysroot"
  tmp=$(mktemp -d "$CACHE_ROOT/arm64-sysroot/.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  # Downloaded .debs are kept next to the sysroots: a new layout or one
  # changed package does not download the others again.
  local archives=$CACHE_ROOT/arm64-sysroot/archives
  mkdir -p "$tmp/lists/partial" "$archives/partial" "$tmp/dpkg" "$tmp/root"
  : >"$tmp/dpkg/status"
  # The machine's sources, but arm64 only, with private lists, cache and an
  # empty dpkg status: apt resolves the whole dependency closure for arm64 and
  # downloads it without installing anything.
  local opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
    -o "Dir::State::Lists=$tmp/lists" -o "Dir::State::status=$tmp/dpkg/status"
    -o "Dir::Cache=$tmp/cache" -o "Dir::Cache::archives=$archives" -o APT::Sandbox::User=root
    -o DPkg::Lock::Timeout=900)
  apt-get "${opts[@]}" update -q >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; die "apt-get update for arm64 failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -q --download-only --no-install-recommends \
    "${ARM64_PACKAGES[@]}" >>"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; die "downloading the arm64 packages failed"; }
  local deb pkg
  # The closure apt chose this time, as file names in the archive (which may
  # hold older versions too): "Inst pkg (version ... [arch])", epoch ':' as %3a.
  apt-get "${opts[@]}" install -s -q --no-install-recommends "${ARM64_PACKAGES[@]}" 2>/dev/null |
    sed -nE 's/^Inst ([^ ]+) \(([^ ]+) .*\[([a-z0-9]+)\]\).*/\1_\2_\3.deb/p' | sed 's/:/%3a/' >"$tmp/debs"
  [[ -s $tmp/debs ]] || die "apt-get -s listed no arm64 packages"
  while read -r deb; do
    deb=$archives/$deb
    [[ -f $deb ]] || die "$deb was not downloaded"
    pkg=$(dpkg-deb -f "$deb" Package)
    [[ " ${ARM64_SKIPPED[*]} " == *" $pkg "* ]] && continue
    dpkg-deb -x "$deb" "$tmp/root" || die "dpkg-deb -x $deb failed"
    echo "$pkg $(dpkg-deb -f "$deb" Version)" >>"$tmp/root/.packages"
  done <"$tmp/debs"
  # Linker scripts (libbsd.so: GROUP(/usr/lib/.../libbsd.so.0.11.7 ...)) name
  # their members absolutely; bare names make ld look for them in its -L
  # directories, i.e. the sysroot's.
  local f
  while IFS= read -r -d '' f; do
    grep -q 'GROUP\|INPUT' "$f" 2>/dev/null || continue
    sed -i -E 's#/(usr/)?lib/[a-z0-9_-]+-linux-gnu/##g' "$f"
  done < <(find "$tmp/root" -name '*.so' -type f -size -4k -print0)
  # Absolute symlinks inside the packages (libfoo.so -> /lib/...) point into
  # the host; make them relative to the sysroot so the linker and qemu find
  # the arm64 files.
  local l t
  while IFS= read -r -d '' l; do
    t=$(readlink "$l")
    [[ $t == /* ]] && ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$tmp/root$t")" "$l"
  done < <(find "$tmp/root" -type l -print0)
  sort -o "$tmp/root/.packages" "$tmp/root/.packages"
  touch "$tmp/root/.complete"
  rm -rf "$dir"
  mv "$tmp/root" "$dir"
  log "arm64 sysroot: $(wc -l <"$dir/.packages") packages in $dir"
}

case "${1:-}" in
  --print-sdk-dir)
    echo "$(sdk_dir)/include"
    exit 0
    ;;
  --print-arm64-sysroot)
    arm64_sysroot_dir
    exit 0
    ;;
  "") ;;
  *) die "unknown argument '$1' (usage: setup.sh [--print-sdk-dir | --print-arm64-sysroot])" ;;
esac

install_packages
fetch_sdk_headers
make_arm64_sysroot
