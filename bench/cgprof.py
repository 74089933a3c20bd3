#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads a callgrind output file (one event, Ir) without callgrind_annotate.

Gives the collected total, the self cost of every function, the self cost of
every (function, source file) pair (code inlined from a header counts under
the header), the inclusive cost of every function, and the self cost of every
source line. Deterministic, so the benchmark report can name the functions
and lines an instruction budget goes to.

    python3 bench/cgprof.py callgrind.out [--packets N] [--top 15]
"""
import argparse
import collections
import json
import os
import re
import sys

_NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def _name(table, spec):
    """Callgrind name compression: '(id) name' defines, '(id)' refers."""
    m = _NAME.match(spec)
    if not m:
        return spec
    key, name = m.group(1), m.group(2)
    if name is not None:
        table[key] = name
        return name
    return table.get(key, "(" + key + ")")


def repo_path(path, root):
    """A source path as a path inside the repository when it is one."""
    p = os.path.normpath(path)
    # The scratch build (scripts/bench.sh) compiles a symlink overlay of the tree.
    m = re.search(r"/overlay/(.*)$", p)
    if m:
        return m.group(1)
    if root:
        r = os.path.normpath(root) + os.sep
        if p.startswith(r):
            return p[len(r):]
    return p


def parse(path, root=None):
    names = {"fl": {}, "fn": {}, "ob": {}}
    total = 0
    summary = None
    self_fn = collections.Counter()
    self_fn_file = collections.Counter()
    self_line = collections.Counter()
    incl_calls = collections.Counter()
    calls_count = collections.Counter()
    fn = "?"
    fl = "?"  # the function's file
    cur = "?"  # the file of the current cost lines (fi/fe for inlined code)
    last_line = 0
    pending_call = None  # (caller, callee, count): the next cost line is the call's cost
    cfn = None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c0 = line[0]
            if c0.isdigit() or c0 in "+-*":
                parts = line.split()
                pos = parts[0]
                if pos == "*":
                    ln = last_line
                elif pos[0] in "+-":
                    ln = last_line + int(pos)
                else:
                    ln = int(pos)
                last_line = ln
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending_call is not None:
                    caller, callee, n = pending_call
                    incl_calls[caller] += cost
                    calls_count[(caller, callee)] += n
                    pending_call = None
                    continue
                total += cost
                self_fn[fn] += cost
                self_fn_file[(fn, cur)] += cost
                self_line[(cur, ln)] += cost
                continue
            key, _, val = line.partition("=")
            if key == "fn":
                fn = _name(names["fn"], val)
                cur = fl
            elif key == "fl":
                fl = cur = _name(names["fl"], val)
            elif key in ("fi", "fe"):
                cur = _name(names["fl"], val)
            elif key in ("cfi", "cfl"):
                _name(names["fl"], val)
            elif key == "ob" or key == "cob":
                _name(names["ob"], val)
            elif key == "cfn":
                cfn = _name(names["fn"], val)
            elif key == "calls":
                pending_call = (fn, cfn, int(val.split()[0]))
            elif key == "summary":
                summary = int(val.split()[0])
            elif key == "totals":
                pass
    incl = collections.Counter()
    for k, v in self_fn.items():
        incl[k] += v
    for k, v in incl_calls.items():
        incl[k] += v
    return {
        "total": total,
        "summary": summary,
        "self_fn": self_fn,
        "self_fn_file": {(fn_, repo_path(fl_, root)): v for (fn_, fl_), v in self_fn_file.items()},
        "self_line": {(repo_path(fl_, root), ln): v for (fl_, ln), v in self_line.items()},
        "incl_fn": incl,
        "calls": calls_count,
    }


def short_fn(name):
    """xpv::QueueImpl::transmit(std::span<...>) -> xpv::QueueImpl::transmit"""
    depth = 0
    out = []
    for ch in name:
        if ch == "(" and depth == 0 and out and not "".join(out).endswith("operator"):
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        out.append(ch)
    return "".join(out)


def source_line(root, path, ln):
    for base in (root or ".",):
        p = os.path.join(base, path)
        try:
            with open(p, errors="replace") as f:
                for i, text in enumerate(f, 1):
                    if i == ln:
                        return text.strip()
        except OSError:
            pass
    return ""


def profile(path, packets, root=None, top=15):
    """A JSON-able summary: totals and the top functions and lines per packet."""
    p = parse(path, root)
    n = max(1, packets)
    # Clones of one function ("[clone .part.0]", other overloads' thunks)
    # count as that function.
    self_fn = collections.Counter()
    incl_fn = collections.Counter()
    for k, v in p["self_fn"].items():
        self_fn[short_fn(k)] += v
    for k, v in p["incl_fn"].items():
        incl_fn[short_fn(k)] = max(incl_fn[short_fn(k)], v)
    fn_file = collections.Counter()
    for (f, src), v in p["self_fn_file"].items():
        fn_file[(short_fn(f), src)] += v
    fns = sorted(self_fn.items(), key=lambda kv: -kv[1])
    fn_files = sorted(fn_file.items(), key=lambda kv: -kv[1])
    lines = sorted(p["self_line"].items(), key=lambda kv: -kv[1])
    return {
        "file": os.path.basename(path),
        "instructions": p["total"],
        "packets": packets,
        "per_packet": p["total"] / n,
        "functions_self": [
            {"function": k, "instructions": v, "per_packet": v / n,
             "inclusive_per_packet": incl_fn[k] / n}
            for k, v in fns[:top] if v
        ],
        "function_by_source": [
            {"function": k[0], "source": k[1], "instructions": v, "per_packet": v / n}
            for k, v in fn_files[:top] if v
        ],
        "lines": [
            {"source": k[0], "line": k[1], "instructions": v, "per_packet": v / n,
             "text": source_line(root, k[0], k[1])}
            for k, v in lines[:top] if v
        ],
        # Every line worth a tenth of an instruction per packet, for rules
        # that add up the lines of one piece of code.
        "all_lines": [
            {"source": k[0], "line": k[1], "per_packet": v / n, "text": source_line(root, k[0], k[1])}
            for k, v in lines if v / n >= 0.1
        ],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--packets", type=int, default=1)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    json.dump(profile(a.file, a.packets, a.root, a.top), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
