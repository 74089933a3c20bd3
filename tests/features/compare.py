#!/usr/bin/env python3
"""Holds a NIC features table (DPDK's doc/guides/nics/features/*.ini format)
against what a running port reports, both ways.

  compare.py TABLE.ini PROBED.txt [--usage-doc RST]

PROBED.txt is xenpv-features' output: "Key = Y|-  # evidence" lines; a key
with several lines (rx and tx sides) is Y when any says Y. A key the table
marks (Y or P) must be probed and found; a key found must be marked. A key the
program cannot decide may not be marked: the table claims nothing untested.
Exit 0 when they agree, 1 with one line per disagreement.
"""
import re
import sys

# The [Features] keys of DPDK 22.11's doc/guides/nics/features/default.ini.
DEFAULT_INI_KEYS = [
    "Speed capabilities", "Link speed configuration", "Link status", "Link status event",
    "Removal event", "Queue status event", "Rx interrupt", "Lock-free Tx queue",
    "Fast mbuf free", "Free Tx mbuf on demand", "Queue start/stop", "Runtime Rx queue setup",
    "Runtime Tx queue setup", "Shared Rx queue", "Burst mode info",
    "Power mgmt address monitor", "MTU update", "Buffer split on Rx", "Scattered Rx", "LRO",
    "TSO", "Promiscuous mode", "Allmulticast mode", "Unicast MAC filter",
    "Multicast MAC filter", "RSS hash", "RSS key update", "RSS reta update", "Inner RSS",
    "VMDq", "SR-IOV", "DCB", "VLAN filter", "Flow control", "Rate limitation",
    "Congestion management", "Traffic manager", "Inline crypto", "Inline protocol",
    "CRC offload", "VLAN offload", "QinQ offload", "FEC", "IP reassembly",
    "L3 checksum offload", "L4 checksum offload", "Timestamp offload", "MACsec offload",
    "Inner L3 checksum", "Inner L4 checksum", "Packet type parsing", "Timesync",
    "Rx descriptor status", "Tx descriptor status", "Basic stats", "Extended stats",
    "Stats per queue", "FW version", "EEPROM dump", "Module EEPROM dump", "Registers dump",
    "LED", "Multiprocess aware", "FreeBSD", "Linux", "Windows", "ARMv7", "ARMv8",
    "LoongArch64", "Power8", "rv64", "x86-32", "x86-64", "Usage doc", "Design doc",
    "Perf doc",
]


def read_table(path):
    marked, errors, section = {}, [], None
    for n, line in enumerate(open(path), 1):
        line = line.split(";", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\[(.+)\]", line)
        if m:
            section = m.group(1)
            if section != "Features":
                errors.append(f"{path}:{n}: section [{section}]: this test checks [Features] only")
            continue
        m = re.fullmatch(r"(.+?)\s*=\s*(\S*)", line)
        if not m or section != "Features":
            errors.append(f"{path}:{n}: not a 'Key = value' line of [Features]: {line}")
            continue
        k, v = m.groups()
        if k not in DEFAULT_INI_KEYS:
            errors.append(f"{path}:{n}: '{k}' is not a key of DPDK's default.ini")
        elif v not in ("Y", "P", ""):
            errors.append(f"{path}:{n}: '{k} = {v}': a value is Y, P or empty")
        elif k in marked:
            errors.append(f"{path}:{n}: '{k}' given twice")
        elif v:
            marked[k] = v
    return marked, errors


def read_probed(path):
    found, why = {}, {}
    for line in open(path):
        m = re.fullmatch(r"(.+?) = ([Y-])  # (.*)", line.rstrip("\n"))
        if not m:
            continue
        k, v, ev = m.groups()
        found[k] = found.get(k, False) or v == "Y"
        why.setdefault(k, []).append(ev)
    return found, why


def main():
    args = sys.argv[1:]
    usage_doc = None
    if "--usage-doc" in args:
        i = args.index("--usage-doc")
        usage_doc = args[i + 1]
        del args[i:i + 2]
    table, probed = args
    marked, errors = read_table(table)
    found, why = read_probed(probed)
    if not found:
        errors.append(f"{probed}: no probed keys (did xenpv-features run?)")
    if usage_doc is not None:
        try:
            ok = len(open(usage_doc).read().strip()) > 0
        except OSError:
            ok = False
        found["Usage doc"] = ok
        why["Usage doc"] = [f"{usage_doc} {'exists' if ok else 'is missing'}"]
    for k in DEFAULT_INI_KEYS:
        ev = "; ".join(why.get(k, []))
        if k in marked and k not in found:
            errors.append(f"'{k} = {marked[k]}' in the table, but the test has no probe for it")
        elif k in marked and not found[k]:
            errors.append(f"'{k} = {marked[k]}' in the table, but the driver does not report it: {ev}")
        elif k not in marked and found.get(k):
            errors.append(f"the driver reports '{k}' ({ev}), but the table does not mark it")
    for e in errors:
        print(e)
    yes = sorted(k for k in marked if found.get(k))
    if not errors:
        print(f"{len(yes)} marked features, each reported by the driver, and no other: {', '.join(yes)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
