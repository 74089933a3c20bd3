#!/bin/bash
# The NIC features table (docs/nics/features/xenpv.ini, DPDK's
# doc/guides/nics/features/*.ini format) held against the running driver:
# tests/features/xenpv-features asks net_xenpv, loaded with -d over
# xpv-netback, what it reports (rte_eth_dev_info_get's capabilities, device
# flags, and each op through its rte_eth_* call), and
# tests/features/compare.py fails on a marked feature the driver does not
# report and on a reported one the table does not mark.
# Sourced by tests/integration/run.sh (group "features"); FEATURES_INI
# overrides the table (to see the check fail).

check_features_table() {
  local name=features-table
  local prog=$BUILD/tests/features/xenpv-features
  local ini=${FEATURES_INI:-docs/nics/features/xenpv.ini}
  local so=$PWD/$BUILD/drivers/net_xenpv/librte_net_xenpv.so
  [[ -x $prog ]] || { fail $name "$prog missing (make build; needs the PMD)"; return; }
  source scripts/pmd-path.sh
  so=$(xpv_pmd_path "$so") || { fail $name "cannot place the PMD where DPDK loads it"; return; }
  # A sink backend (takes what the port sends: the stats probe sends 8 frames)
  # offering everything xpv-netback can offer: multi-queue, sg, GSO, ipv6 csum.
  nb_start features --mode sink || { fail $name "netback did not start"; return; }
  local nb=$NB_PID
  # speed=: netif has no link speed; the device argument is how the port
  # reports one (Speed capabilities).
  timeout -k 5 60 "$prog" -l 0 --no-huge -m 512 --no-pci --no-shconf --file-prefix "xpvfeat$$" \
    -d "$so" --vdev "net_xenpv0,backend=sim:$RUN/features.sock,speed=10000" \
    >"$RUN/features.txt" 2>"$RUN/features.err"
  local rc=$?
  nb_stop "$nb"
  if ((rc != 0)); then
    fail $name "xenpv-features exit $rc: $(tail -n 3 "$RUN/features.err" | tr '\n' ' ')"
    return
  fi
  local out
  if out=$(python3 tests/features/compare.py "$ini" "$RUN/features.txt" --usage-doc docs/nics/xenpv.rst); then
    pass $name "$ini: $out"
  else
    fail $name "$ini disagrees with the driver (probe output $RUN/features.txt): $(tr '\n' '|' <<<"$out")"
  fi
}

# The NIC guide's device arguments (docs/nics/xenpv.rst, "Device arguments")
# are the keys the driver accepts (its refusal of an unknown key lists them)
# and the keys its RTE_PMD_REGISTER_PARAM_STRING advertises (what
# dpdk-pmdinfo.py and EAL's --vdev help show).
check_nic_guide_devargs() {
  local name=nic-guide-devargs
  local prog=$BUILD/tests/features/xenpv-features
  local so=$BUILD/drivers/net_xenpv/librte_net_xenpv.so
  [[ -x $prog && -e $so ]] || { fail $name "$prog or $so missing (make build)"; return; }
  local pmd
  pmd=$(xpv_pmd_path "$PWD/$so") || { fail $name "cannot place the PMD where DPDK loads it"; return; }
  timeout -k 5 60 "$prog" -l 0 --no-huge -m 256 --no-pci --no-shconf --file-prefix "xpvdevargs$$" \
    -d "$pmd" --vdev "net_xenpv0,xpv_no_such_key=1" >"$RUN/devargs.out" 2>"$RUN/devargs.err"
  local out
  if out=$(python3 - docs/nics/xenpv.rst "$RUN/devargs.err" "$so" <<'PYEOF'
import re, subprocess, sys
rst, err, so = sys.argv[1:]
# The guide: "- ``key`` [form]" items of the Device arguments section.
text = open(rst).read()
section = text.split("\nDevice arguments\n", 1)[1].split("\n-----", 1)[0].rsplit("\n", 1)[0]
doc = re.findall(r"^- ``(\w+)``", section, re.M)
# The driver's refusal: "unknown device argument 'xpv_no_such_key' (valid: vif=N, ...)".
m = re.search(r"unknown device argument 'xpv_no_such_key' \(valid: ([^)]*)\)", open(err).read())
if not m:
    print("the driver did not refuse an unknown key with its list of valid keys")
    sys.exit(1)
accepted = re.findall(r"(\w+)=", m.group(1))
# RTE_PMD_REGISTER_PARAM_STRING: the string the symbol __net_xenpv_param_string_export holds.
addr = next(int(l.split()[0], 16) for l in subprocess.run(["nm", so], capture_output=True, text=True).stdout.splitlines()
            if l.endswith("__net_xenpv_param_string_export"))
data = open(so, "rb").read()
for l in subprocess.run(["readelf", "-lW", so], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD" and int(f[2], 16) <= addr < int(f[2], 16) + int(f[4], 16):
        off = addr - int(f[2], 16) + int(f[1], 16)
param = data[off:data.index(b"\0", off)].decode()
advertised = re.findall(r"(\w+)=", param)
bad = []
if sorted(doc) != sorted(accepted):
    bad.append(f"the guide documents {sorted(doc)}, the driver accepts {sorted(accepted)}")
if sorted(advertised) != sorted(accepted):
    bad.append(f"the driver's param string '{param}' advertises {sorted(advertised)}, it accepts {sorted(accepted)}")
if bad:
    print("; ".join(bad))
    sys.exit(1)
print(f"{len(doc)} keys, documented = accepted = advertised: {' '.join(accepted)}")
PYEOF
  ); then
    pass $name "$out"
  else
    fail $name "$out (driver log $RUN/devargs.err)"
  fi
}
