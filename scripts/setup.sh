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
# Usage: scripts/setup.sh [--print-sdk-dir]
set -euo pipefail

PACKAGES=(
  g++ pkg-config meson ninja-build
  libxen-dev
  dpdk dpdk-dev libdpdk-dev dpdk-doc
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev      # libFuzzer and sanitizer runtimes
  g++-aarch64-linux-gnu         # the library must compile for arm64 (make test)
  valgrind                      # callgrind: instructions per packet (make bench)
  dpkg-dev debhelper lintian python3-pyelftools  # make deb and its test (dpdk-pmdinfo.py)
  nlohmann-json3-dev            # xpv-netback's stats file
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
  apt-get update -q >/dev/null || die "apt-get update failed"
  apt-get install -y -q --no-install-recommends "${miss[@]}" >/dev/null ||
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

case "${1:-}" in
  --print-sdk-dir)
    echo "$(sdk_dir)/include"
    exit 0
    ;;
  "") ;;
  *) die "unknown argument '$1' (usage: setup.sh [--print-sdk-dir])" ;;
esac

install_packages
fetch_sdk_headers
