#!/bin/bash
# The path a user takes: build the Debian packages (make deb), lintian them,
# install them with apt-get, then use what is installed: dpdk-testpmd finds
# net_xenpv without -d and forwards packets over the installed xpv-netback,
# dpdk-pmdinfo.py lists the driver with its device arguments, a program builds
# against xpv.pc and the installed headers, and the installed libxpv carries no
# simulator (hypervisor, xenstore engine, server). At the end the packages are
# purged again (only those this script installed), so the machine is left as
# it was found. Prints "CHECK <name> PASS|FAIL ..." lines (scripts/run-tests.sh).
#
# Usage: tests/packaging/check-deb.sh [--build DIR] [--no-build]   (root: apt-get install)
#   --no-build: use the packages already in DIR/deb (a second run while developing)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=build
MAKE_DEB=1
while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --no-build) MAKE_DEB=0; shift ;;
    *) echo "check-deb: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

PACKAGES=(libxpv0 libxpv-dev dpdk-pmd-xenpv xpv-tools xpv-bind)
DEB=$BUILD/deb
RUN=$(mktemp -d /tmp/xpv-deb.XXXXXX)
chmod 755 "$RUN"
FAILED=0
PIDS=()
pass() { echo "CHECK $1 PASS ${*:2}"; }
fail() { echo "CHECK $1 FAIL ${*:2}"; FAILED=$((FAILED + 1)); }
installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]; }

# One run at a time on this machine: two would install and purge under each other.
exec 9>/var/tmp/xpv-deb-check.lock
flock 9

PREINSTALLED=()
for p in "${PACKAGES[@]}"; do installed "$p" && PREINSTALLED+=("$p"); done
INSTALLED_HERE=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if ((${#INSTALLED_HERE[@]})); then
    apt-get -o DPkg::Lock::Timeout=900 purge -y -q "${INSTALLED_HERE[@]}" >"$RUN/purge.log" 2>&1 ||
      echo "check-deb: purging ${INSTALLED_HERE[*]} failed (log $RUN/purge.log)" >&2
  fi
}
trap cleanup EXIT

# ---- make deb
if ((!MAKE_DEB)); then
  echo "check-deb: --no-build: the packages in $DEB as they are"
elif scripts/build-deb.sh --build "$BUILD" >"$RUN/build-deb.out" 2>&1; then
  pass deb-build "$(tail -1 "$RUN/build-deb.out")"
else
  fail deb-build "$(tail -3 "$RUN/build-deb.out" | tr '\n' ' ')"
  exit 1
fi
DEBS=()
for p in "${PACKAGES[@]}"; do
  f=$(ls "$DEB/${p}"_*.deb 2>/dev/null | head -1)
  [[ -n $f ]] || { fail deb-build "no package $p in $DEB"; exit 1; }
  DEBS+=("./$f")
done

# ---- lintian: no errors (warnings are listed in the log and counted)
lintian --tag-display-limit 0 "$DEB"/*.changes >"$RUN/lintian.log" 2>&1
nerr=$(grep -c '^E: ' "$RUN/lintian.log")
nwarn=$(grep -c '^W: ' "$RUN/lintian.log")
if ((nerr == 0)) && grep -q . "$DEB"/*.changes; then
  pass deb-lintian "0 errors, $nwarn warnings: $(grep '^W: ' "$RUN/lintian.log" | awk '{print $2 $3}' | sort -u | tr '\n' ' ')"
else
  fail deb-lintian "$nerr errors: $(grep '^E: ' "$RUN/lintian.log" | head -5 | tr '\n' ' ')"
fi

# ---- install (the PMD directory is EAL's RTE_EAL_PMD_PATH)
# shellcheck disable=SC2046
PMD_DIR=$(printf '#include <rte_build_config.h>\nRTE_EAL_PMD_PATH\n' |
  g++ -E -P $(pkg-config --cflags libdpdk) - 2>/dev/null | tail -1 | tr -d '"')
EAL=(-l 0-1 --no-huge -m 1024 --no-pci --no-shconf)
if [[ -z $PMD_DIR ]]; then
  fail deb-install "RTE_EAL_PMD_PATH not found in the installed DPDK's rte_build_config.h"
  exit 1
fi
if [[ ! -e $PMD_DIR/librte_net_xenpv.so ]]; then
  # Before the package, EAL does not know the driver: what the autoload check below relies on.
  timeout 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvdeb$$a" --vdev net_xenpv0,backend=sim:/nonexistent \
    -- --total-num-mbufs=2048 >"$RUN/tp-before.log" 2>&1 </dev/null
  grep -qiE 'failed to parse device|Cannot init|no.*(probed|ethernet)' "$RUN/tp-before.log" ||
    fail deb-install "testpmd did not refuse net_xenpv before the package was installed (log $RUN/tp-before.log)"
fi
if apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${DEBS[@]}" >"$RUN/install.log" 2>&1; then
  for p in "${PACKAGES[@]}"; do
    [[ " ${PREINSTALLED[*]} " == *" $p "* ]] || INSTALLED_HERE+=("$p")
  done
  if [[ -f $PMD_DIR/librte_net_xenpv.so ]] && [[ -x /usr/bin/xpv-netback ]]; then
    pass deb-install "${PACKAGES[*]} installed; $(dpkg -S librte_net_xenpv.so | grep -v '\.a$' | head -1)"
  else
    fail deb-install "installed, but $PMD_DIR/librte_net_xenpv.so or /usr/bin/xpv-netback is missing"
  fi
else
  fail deb-install "apt-get install failed: $(tail -3 "$RUN/install.log" | tr '\n' ' ')"
  exit 1
fi

# ---- testpmd without -d: io forwarding over the installed xpv-netback (loopback)
/usr/bin/xpv-netback --socket "$RUN/nb.sock" --stats-file "$RUN/nb.json" --mode loopback >"$RUN/nb.log" 2>&1 &
NB=$!
PIDS+=("$NB")
for _ in $(seq 200); do grep -q "listening on" "$RUN/nb.log" 2>/dev/null && break; sleep 0.05; done
timeout -k 10 -s INT 60 dpdk-testpmd "${EAL[@]}" --file-prefix "xpvdeb$$" \
  --vdev "net_xenpv0,backend=sim:$RUN/nb.sock" -- --total-num-mbufs=16384 --stats-period 1 --forward-mode=io --tx-first \
  >"$RUN/testpmd.log" 2>&1 </dev/null &
TP=$!
PIDS+=("$TP")
for _ in $(seq 400); do grep -qE 'Press enter to exit|Rx-pps' "$RUN/testpmd.log" 2>/dev/null && break; kill -0 $TP 2>/dev/null || break; sleep 0.1; done
sleep 3
kill -INT $TP 2>/dev/null
wait $TP
tp_rc=$?
kill -TERM $NB 2>/dev/null
wait $NB
rx=$(python3 - "$RUN/testpmd.log" <<'PY'
import re, sys
block = open(sys.argv[1]).read().split("Accumulated forward statistics for all ports")[-1]
m = re.search(r"RX-packets:\s+(\d+)", block)
print(m.group(1) if m else -1)
PY
)
nb_rx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["tx_packets"])' "$RUN/nb.json" 2>/dev/null || echo -1)
# The only port is the vdev, with the mac xpv-netback gave its vif (Xen's 00:16:3e prefix).
if ((tp_rc == 0 && rx > 1000 && nb_rx >= rx)) && grep -qi '^Port 0: 00:16:3e' "$RUN/testpmd.log"; then
  pass deb-testpmd-autoload "testpmd without -d: port 0 $(grep -i '^Port 0: 00:16:3e' "$RUN/testpmd.log" | cut -d' ' -f3), forwarded $rx packets; the installed xpv-netback looped back $nb_rx"
else
  fail deb-testpmd-autoload "exit $tp_rc, RX $rx, xpv-netback $nb_rx (log $RUN/testpmd.log)"
fi

# ---- dpdk-pmdinfo.py over testpmd and the plugin directory
dpdk-pmdinfo.py -p /usr/bin/dpdk-testpmd >"$RUN/pmdinfo.json" 2>"$RUN/pmdinfo.err"
params=$(python3 -c '
import json, sys
for d in json.load(open(sys.argv[1])):
    if d.get("name") == "net_xenpv": print(d.get("params", ""))' "$RUN/pmdinfo.json" 2>/dev/null)
if [[ $params == *"backend="* && $params == *"vif="* && $params == *"queues="* ]]; then
  pass deb-pmdinfo "dpdk-pmdinfo.py -p dpdk-testpmd: net_xenpv, params \"$params\""
else
  fail deb-pmdinfo "net_xenpv or its params missing from dpdk-pmdinfo.py -p /usr/bin/dpdk-testpmd (out $RUN/pmdinfo.json, err $(head -2 "$RUN/pmdinfo.err"))"
fi

# ---- a program against xpv.pc and the installed headers, talking to the installed xpv-netback
cat >"$RUN/hello.cc" <<'CC'
#include <xpv/platform.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto p = xpv::open_platform(std::string("sim:") + argv[1]);
  if (!p) {
    std::fprintf(stderr, "open_platform: %s\n", p.error().message.c_str());
    return 1;
  }
  std::printf("platform %s domid %u\n", (*p)->name().c_str(), static_cast<unsigned>((*p)->self_domid()));
  return 0;
}
CC
/usr/bin/xpv-netback --socket "$RUN/nb2.sock" --mode sink >"$RUN/nb2.log" 2>&1 &
NB=$!
PIDS+=("$NB")
for _ in $(seq 200); do grep -q "listening on" "$RUN/nb2.log" 2>/dev/null && break; sleep 0.05; done
# shellcheck disable=SC2046
if g++ -std=c++20 -Wall -Werror -o "$RUN/hello" "$RUN/hello.cc" $(pkg-config --cflags --libs xpv) 2>"$RUN/hello.err"; then
  out=$("$RUN/hello" "$RUN/nb2.sock" 2>&1)
  lib=$(ldd "$RUN/hello" | awk '/libxpv/ {print $3}')
  pkglib=$(dpkg -L libxpv0 | grep 'libxpv\.so\.[0-9]*$' | head -1)
  if [[ $out == "platform sim:$RUN/nb2.sock domid "[1-9]* && -n $lib && $(readlink -f "$lib") == "$(readlink -f "$pkglib")" ]]; then
    pass deb-pkgconfig "g++ \$(pkg-config --cflags --libs xpv): built, linked $lib, said '$out'"
  else
    fail deb-pkgconfig "built, but it said '$out' with libxpv '$lib' (libxpv0 has '$pkglib')"
  fi
else
  fail deb-pkgconfig "does not build: $(head -3 "$RUN/hello.err" | tr '\n' ' ')"
fi
kill -TERM $NB 2>/dev/null
wait $NB 2>/dev/null

# ---- the installed xpv-bind: runs with the system's python3 and, on this host (no Xen), refuses
# naming the cause
bind_out=$(/usr/bin/xpv-bind --status 2>&1)
bind_rc=$?
if [[ $(dpkg -S /usr/bin/xpv-bind 2>/dev/null) == xpv-bind:* ]] && ((bind_rc == 1)) &&
  [[ $bind_out == *"not in a Xen guest"* ]]; then
  pass deb-xpv-bind "/usr/bin/xpv-bind from package xpv-bind: --status outside Xen exits 1 with '$bind_out'"
else
  fail deb-xpv-bind "/usr/bin/xpv-bind: $(dpkg -S /usr/bin/xpv-bind 2>&1), exit $bind_rc, said '$bind_out'"
fi

# ---- the installed libxpv: the sim client, none of the simulator
so=$(dpkg -L libxpv0 | grep 'libxpv\.so\.[0-9]*$' | head -1)
nm -D --defined-only "$so" | c++filt >"$RUN/libxpv.syms"
sim=$(grep -cE 'xpv::sim::(Hypervisor|Server|XenstoreEngine|local_platform)' "$RUN/libxpv.syms")
client=$(grep -c 'xpv::sim::connect_platform' "$RUN/libxpv.syms")
if ((sim == 0 && client > 0)); then
  pass deb-no-simulator "$so: sim::connect_platform (backend=sim:) present, 0 Hypervisor/Server/XenstoreEngine symbols"
else
  fail deb-no-simulator "$so: $sim simulator symbols, sim client present: $client ($RUN/libxpv.syms)"
fi

# ---- purge: the machine as it was found
cleanup
INSTALLED_HERE=()
left=()
for p in "${PACKAGES[@]}"; do
  [[ " ${PREINSTALLED[*]} " == *" $p "* ]] && continue
  installed "$p" && left+=("$p")
done
if ((${#left[@]} == 0)) && { [[ " ${PREINSTALLED[*]} " == *" dpdk-pmd-xenpv "* ]] || [[ ! -e $PMD_DIR/librte_net_xenpv.so ]]; }; then
  pass deb-purge "purged; ${PREINSTALLED[*]:-nothing} was installed before and stays"
else
  fail deb-purge "still installed: ${left[*]}"
fi
((FAILED == 0)) && rm -rf "$RUN"
exit $((FAILED > 0))
