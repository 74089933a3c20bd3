#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Unit tests of tools/xpv-bind against a fake guest: a sysfs/procfs/dev tree in a temporary
directory, a xenstored on a Unix socket that speaks xs_wire.h, a 'kernel' that answers writes to
the xen bus's bind/unbind files (FIFOs) as Linux's xen-netfront does, and modprobe/mount on PATH.

The tool runs in Debian's python3.11 with its module path cut down to what libpython3.11-minimal
ships: a domU image with python3-minimal runs what these tests run.

Prints one 'CHECK xpv-bind:<test> PASS|FAIL ...' line per test (scripts/run-tests.sh counts them).
    tests/tools/test_xpv_bind.py [--tool PATH]
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import check_lines  # noqa: E402

TOOL = os.path.join(HERE, "..", "..", "tools", "xpv-bind")
DEBIAN_PYTHON = "/usr/bin/python3.11"
MINIMAL_PACKAGES = ["libpython3.11-minimal", "python3.11-minimal"]
STDLIB = "/usr/lib/python3.11/"

XS_DIRECTORY, XS_READ, XS_WRITE, XS_ERROR = 1, 2, 11, 16
HEADER = struct.Struct("=IIII")
DOMID = 3
HOME = "/local/domain/%d" % DOMID
BACKEND = "/local/domain/0/backend/vif/%d" % DOMID

_minimal_dir = None


def minimal_stdlib():
    """A directory holding (symlinks to) only the files of Debian's python3.11-minimal."""
    global _minimal_dir
    if _minimal_dir:
        return _minimal_dir
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        raise RuntimeError("%s is missing (Debian's python3.11-minimal)" % DEBIAN_PYTHON)
    out = subprocess.run(["dpkg", "-L"] + MINIMAL_PACKAGES, stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    _minimal_dir = tempfile.mkdtemp(prefix="xpv-bind-minimal.")
    for path in out.splitlines():
        if path.startswith(STDLIB) and os.path.isfile(path):
            dst = os.path.join(_minimal_dir, path[len(STDLIB):])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.symlink(path, dst)
    return _minimal_dir


# Runs the tool as __main__ with sys.path = python3-minimal's files only.
BOOT = ("import sys; m = sys.argv[1]; sys.path[:] = [m, m + '/lib-dynload']; t = sys.argv[2]; "
        "sys.argv = sys.argv[2:]; code = compile(open(t).read(), t, 'exec'); "
        "exec(code, {'__name__': '__main__', '__file__': t})")


class FakeXenstored:
    """A xenstored for one domain over a Unix socket: DIRECTORY, READ, WRITE; relative paths are
    the domain's home, as xenstored resolves a guest's."""

    def __init__(self, path):
        self.tree = {}
        self.lock = threading.Lock()
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def set(self, path, value):
        with self.lock:
            self.tree[self._abs(path)] = value
            # Parents exist as nodes (empty value), as in xenstored.
            parts = self._abs(path).split("/")
            for i in range(2, len(parts)):
                self.tree.setdefault("/".join(parts[:i]), "")

    def get(self, path):
        with self.lock:
            return self.tree.get(self._abs(path))

    @staticmethod
    def _abs(path):
        return path if path.startswith("/") else HOME + "/" + path

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    @staticmethod
    def _recv(conn, n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _client(self, conn):
        with conn:
            while True:
                hdr = self._recv(conn, HEADER.size)
                if hdr is None:
                    return
                kind, req, tx, length = HEADER.unpack(hdr)
                body = self._recv(conn, length) if length else b""
                reply_kind, reply = self._answer(kind, body)
                conn.sendall(HEADER.pack(reply_kind, req, tx, len(reply)) + reply)

    def _answer(self, kind, body):
        if kind == XS_WRITE:
            path, _, value = body.partition(b"\0")
            self.set(path.decode(), value.decode())
            return kind, b"OK\0"
        path = self._abs(body.rstrip(b"\0").decode())
        with self.lock:
            if path not in self.tree:
                return XS_ERROR, b"ENOENT\0"
            if kind == XS_READ:
                return kind, self.tree[path].encode()
            if kind == XS_DIRECTORY:
                children = sorted({k[len(path) + 1:].split("/")[0] for k in self.tree
                                   if k.startswith(path + "/")})
                return kind, b"".join(c.encode() + b"\0" for c in children)
        return XS_ERROR, b"EINVAL\0"

    def close(self):
        self.sock.close()


class FakeGuest:
    """sysfs, procfs and /dev of a Xen guest with vifs, and a kernel that answers bind/unbind."""

    def __init__(self, root):
        self.root = root
        self.sys = os.path.join(root, "sys")
        self.proc = os.path.join(root, "proc")
        self.dev = os.path.join(root, "dev")
        self.bin = os.path.join(root, "bin")
        for d in (self.sys + "/hypervisor", self.sys + "/bus/xen/devices",
                  self.sys + "/bus/xen/drivers/vif", self.proc + "/net", self.proc + "/xen",
                  self.dev + "/xen", self.bin, self.sys + "/class/net"):
            os.makedirs(d, exist_ok=True)
        self.write("sys/hypervisor/type", "xen\n")
        self.write("sys/bus/xen/drivers_autoprobe", "1\n")
        self.write("proc/mounts", "proc /proc proc rw 0 0\n")
        self.write("proc/net/route", "Iface\tDestination\tGateway\tFlags\n")
        self.write("proc/net/ipv6_route", "")
        self.write("proc/net/if_inet6", "")
        self.xs = FakeXenstored(os.path.join(root, "xenstored.sock"))
        self.xs.set("domid", str(DOMID))
        self.events = []  # (action, vif, frontend state at that moment)
        self.bind_netdev = {}  # vif number -> the netdev name the kernel gives it on bind
        self._threads = []
        for action in ("bind", "unbind"):
            fifo = "%s/bus/xen/drivers/vif/%s" % (self.sys, action)
            os.mkfifo(fifo)
            t = threading.Thread(target=self._kernel, args=(action, fifo), daemon=True)
            t.start()
            self._threads.append((t, fifo))
        self.modprobe_log = os.path.join(root, "modprobe.log")
        self.mount_log = os.path.join(root, "mount.log")
        self.script("modprobe", 'echo "$*" >> %s\nmkdir -p %s/module/xen_gntalloc/parameters\n'
                    '[ -e %s/module/xen_gntalloc/parameters/limit ] || '
                    'echo 1024 > %s/module/xen_gntalloc/parameters/limit\n'
                    'touch %s/xen/evtchn %s/xen/gntalloc %s/xen/gntdev %s/xen/xenbus\n' % (
                        self.modprobe_log, self.sys, self.sys, self.sys, self.dev, self.dev,
                        self.dev, self.dev))
        self.script("mount", 'echo "$*" >> %s\n' % self.mount_log)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def read(self, rel):
        try:
            with open(os.path.join(self.root, rel)) as f:
                return f.read()
        except OSError:
            return None

    def script(self, name, body):
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)

    def add_vif(self, n, state, backend_state, driver=False, netdev=None, flags="0x1003"):
        self.xs.set("device/vif/%d/backend" % n, "%s/%d" % (BACKEND, n))
        self.xs.set("device/vif/%d/backend-id" % n, "0")
        self.xs.set("device/vif/%d/mac" % n, "00:16:3e:00:00:1%d" % n)
        self.xs.set("device/vif/%d/state" % n, str(state))
        self.xs.set("%s/%d/state" % (BACKEND, n), str(backend_state))
        os.makedirs("%s/bus/xen/devices/vif-%d" % (self.sys, n))
        if driver:
            self._attach(n, netdev, flags)

    def _attach(self, n, netdev, flags="0x1002"):
        dev = "%s/bus/xen/devices/vif-%d" % (self.sys, n)
        os.symlink("../../../bus/xen/drivers/vif", dev + "/driver")
        os.symlink(dev, "%s/bus/xen/drivers/vif/vif-%d" % (self.sys, n))
        if netdev:
            os.makedirs("%s/net/%s" % (dev, netdev))
            self.write("sys/class/net/%s/flags" % netdev, flags + "\n")

    def route(self, ifname):
        self.write("proc/net/route", self.read("proc/net/route") +
                   "%s\t0063A8C0\t00000000\t0001\n" % ifname)

    def _kernel(self, action, fifo):
        # Linux's xenbus: a write of "vif-N" to drivers/vif/{bind,unbind} probes or removes
        # xen-netfront on it; netfront then drives both ends' xenstore states.
        while True:
            with open(fifo) as f:
                name = f.read().strip()
            if name == "quit":
                return
            n = int(name[4:])
            self.events.append((action, name, self.xs.get("device/vif/%d/state" % n)))
            dev = "%s/bus/xen/devices/vif-%d" % (self.sys, n)
            if action == "unbind":
                os.unlink(dev + "/driver")
                os.unlink("%s/bus/xen/drivers/vif/vif-%d" % (self.sys, n))
                shutil.rmtree(dev + "/net", ignore_errors=True)
                self.xs.set("device/vif/%d/state" % n, "6")
                self.xs.set("%s/%d/state" % (BACKEND, n), "6")
            else:
                self._attach(n, self.bind_netdev.get(n, "eth%d" % n))
                self.xs.set("device/vif/%d/state" % n, "4")
                self.xs.set("%s/%d/state" % (BACKEND, n), "4")

    def unload_netfront(self):
        """rmmod xen-netfront: its driver directory (and our kernel's FIFOs) go."""
        for _, fifo in self._threads:
            with open(fifo, "w") as f:
                f.write("quit")
        for t, _ in self._threads:
            t.join(5)
        self._threads = []
        shutil.rmtree(self.sys + "/bus/xen/drivers/vif")

    def close(self):
        if self._threads:
            self.unload_netfront()
        self.xs.close()


class XpvBindTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="xpv-bind-test.")
        self.g = FakeGuest(self.tmp)
        self.euid = "0"

    def tearDown(self):
        self.g.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_tool(self, *args):
        env = dict(os.environ, XPV_BIND_SYSFS=self.g.sys, XPV_BIND_PROC=self.g.proc,
                   XPV_BIND_DEV=self.g.dev, XPV_BIND_XENBUS=self.g.xs.path,
                   XPV_BIND_EUID=self.euid, PATH=self.g.bin + ":" + os.environ["PATH"])
        res = subprocess.run([DEBIAN_PYTHON, "-I", "-S", "-c", BOOT, minimal_stdlib(), TOOL] +
                             list(args), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        return res.returncode, res.stdout, res.stderr

    def standard_vifs(self):
        # vif 0: xen-netfront, eth0 up and routed; vif 1: left Closed by an unbound netfront;
        # vif 2: Connected with no kernel driver (a userspace frontend).
        self.g.add_vif(0, 4, 4, driver=True, netdev="eth0", flags="0x1003")
        self.g.route("eth0")
        self.g.add_vif(1, 6, 6)
        self.g.add_vif(2, 4, 4)

    @staticmethod
    def section(out, title_end):
        lines, inside = [], False
        for line in out.splitlines():
            if line.endswith(title_end) and not line.startswith("vif-"):
                inside = True
            elif inside and not line:
                break
            elif inside and not line.startswith("="):
                lines.append(line)
        return lines

    def test_status_names_each_holder(self):
        self.standard_vifs()
        rc, out, err = self.run_tool("--status")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.section(out, "xen-netfront"), [
            "vif-0 mac=00:16:3e:00:00:10 if=eth0 state=Connected(4) backend=%s/0 "
            "state=Connected(4) *Active*" % BACKEND])
        self.assertEqual(self.section(out, "(Connected, no kernel driver)"), [
            "vif-2 mac=00:16:3e:00:00:12 state=Connected(4) backend=%s/2 state=Connected(4)"
            % BACKEND])
        self.assertEqual(self.section(out, "held by nobody"), [
            "vif-1 mac=00:16:3e:00:00:11 state=Closed(6) backend=%s/1 state=Closed(6)" % BACKEND])
        self.assertIn("xen bus drivers_autoprobe: on", out)

    def test_status_without_root_reads_xenstore(self):
        self.standard_vifs()
        self.euid = "1000"
        rc, out, err = self.run_tool("--status")
        self.assertEqual(rc, 0, err)
        self.assertIn("vif-0 mac=", out)

    def test_unbind_refuses_a_routed_interface(self):
        self.standard_vifs()
        rc, out, err = self.run_tool("--unbind", "vif-0")
        self.assertEqual(rc, 1)
        self.assertIn("Error: vif-0 is eth0, which is up, routed: refusing", err)
        self.assertEqual(self.g.events, [])

    def test_unbind_refuses_an_interface_with_a_global_ipv6_address(self):
        self.g.add_vif(0, 4, 4, driver=True, netdev="eth0", flags="0x1003")
        self.g.write("proc/net/if_inet6",
                     "fe800000000000000216 02 40 20 80 eth0\n"
                     "20010db8000000000000000000000002 02 40 00 80 eth0\n")
        rc, _, err = self.run_tool("--unbind", "vif-0")
        self.assertEqual(rc, 1)
        self.assertIn("vif-0 is eth0, which is up, global IPv6 address", err)

    def test_unbind_with_force_takes_a_routed_interface(self):
        self.standard_vifs()
        rc, out, err = self.run_tool("--unbind", "vif-0", "--force")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.events, [("unbind", "vif-0", "4")])
        self.assertIn("vif-0: unbound from xen-netfront (frontend state Closed (6)", out)
        rc, out, _ = self.run_tool("--status")
        self.assertIn("vif-0 mac=00:16:3e:00:00:10 state=Closed(6)",
                      " ".join(self.section(out, "held by nobody")))

    def test_unbind_of_a_down_interface_needs_no_force(self):
        self.g.add_vif(0, 4, 4, driver=True, netdev="eth0", flags="0x1002")
        self.g.route("eth0")  # a route left over, but the interface is down
        rc, _, err = self.run_tool("--unbind", "vif-0")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.events, [("unbind", "vif-0", "4")])

    def test_unbind_of_an_unbound_vif_is_a_notice(self):
        self.standard_vifs()
        rc, out, _ = self.run_tool("--unbind", "vif-1")
        self.assertEqual(rc, 0)
        self.assertIn("Notice: vif-1 is not bound to a kernel driver (held by nobody)", out)
        self.assertEqual(self.g.events, [])

    def test_unknown_vif_is_named(self):
        self.standard_vifs()
        for action in ("--unbind", "--bind"):
            rc, _, err = self.run_tool(action, "vif-9")
            self.assertEqual(rc, 1)
            self.assertIn("unknown vif vif-9: no device/vif/9 in this domain's xenstore "
                          "(its vifs: vif-0, vif-1, vif-2)", err)
        rc, _, err = self.run_tool("--unbind", "eth0")
        self.assertEqual(rc, 1)
        self.assertIn("'eth0' is not a vif name", err)

    def test_bind_restarts_a_closed_vif_and_names_its_netdev(self):
        self.standard_vifs()
        self.g.bind_netdev[1] = "enX1"
        rc, out, err = self.run_tool("--bind", "vif-1")
        self.assertEqual(rc, 0, err)
        # The frontend was set back to Initialising before the kernel probed it.
        self.assertEqual(self.g.events, [("bind", "vif-1", "1")])
        self.assertIn("vif-1: bound to xen-netfront as enX1 (frontend state Connected (4)", out)
        rc, out, _ = self.run_tool("--status")
        self.assertIn("vif-1 mac=00:16:3e:00:00:11 if=enX1 state=Connected(4)",
                      " ".join(self.section(out, "xen-netfront")))

    def test_bind_refuses_a_vif_a_userspace_frontend_holds(self):
        self.standard_vifs()
        rc, _, err = self.run_tool("--bind", "vif-2")
        self.assertEqual(rc, 1)
        self.assertIn("vif-2 is held by a userspace frontend (state Connected, no kernel driver)",
                      err)
        self.assertEqual(self.g.events, [])
        rc, out, err = self.run_tool("--bind", "vif-2", "--force")
        self.assertEqual(rc, 0, err)
        self.assertIn("vif-2: bound to xen-netfront as eth2", out)

    def test_bind_of_a_bound_vif_is_a_notice(self):
        self.standard_vifs()
        rc, out, _ = self.run_tool("--bind", "vif-0")
        self.assertEqual(rc, 0)
        self.assertIn("Notice: vif-0 already bound to xen-netfront (eth0), skipping", out)

    def test_bind_without_xen_netfront_loaded(self):
        self.g.add_vif(1, 6, 6)
        self.g.unload_netfront()
        rc, _, err = self.run_tool("--bind", "vif-1")
        self.assertEqual(rc, 1)
        self.assertIn("cannot bind vif-1: no such driver: xen-netfront is not loaded", err)

    def test_not_a_xen_guest(self):
        os.unlink(self.g.sys + "/hypervisor/type")
        rc, _, err = self.run_tool("--status")
        self.assertEqual(rc, 1)
        self.assertIn("Error: not in a Xen guest: %s/hypervisor/type is missing" % self.g.sys, err)
        self.g.write("sys/hypervisor/type", "kvm\n")
        rc, _, err = self.run_tool("--status")
        self.assertIn("not in a Xen guest: %s/hypervisor/type is 'kvm'" % self.g.sys, err)

    def test_changes_need_root(self):
        self.standard_vifs()
        self.euid = "1000"
        for args in (["--unbind", "vif-0"], ["--bind", "vif-1"], ["--prepare"],
                     ["--autoprobe", "off"]):
            rc, _, err = self.run_tool(*args)
            self.assertEqual(rc, 1, args)
            self.assertIn("needs root (effective uid 1000)", err)
        self.assertEqual(self.g.events, [])

    def test_no_xenstore(self):
        self.standard_vifs()
        self.g.xs.close()
        os.unlink(self.g.xs.path)
        rc, _, err = self.run_tool("--status")
        self.assertEqual(rc, 1)
        self.assertIn("Error: cannot open xenstore", err)

    def test_prepare_loads_mounts_and_refuses_too_few_grants(self):
        rc, out, err = self.run_tool("--prepare", "--queues", "4")
        self.assertEqual(rc, 1)
        self.assertEqual(self.g.read("modprobe.log"), "-a xen-evtchn xen-gntalloc xen-gntdev xenfs\n")
        self.assertEqual(self.g.read("mount.log"), "-t xenfs xenfs %s/xen\n" % self.g.proc)
        self.assertIn("gntalloc's limit is 1024 grants; 4 queue(s) need 2056 (514 each): "
                      "--set-grant-limit raises it", err)

    def test_prepare_raises_the_grant_limit(self):
        rc, out, err = self.run_tool("--prepare", "--queues", "4", "--set-grant-limit")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.read("sys/module/xen_gntalloc/parameters/limit"), "2056")
        self.assertIn("grants: gntalloc limit 2056, 4 queue(s) need 2056 (514 each)", out)
        rc, _, err = self.run_tool("--prepare", "--queues", "4", "--set-grant-limit", "1000")
        self.assertEqual(rc, 1)
        self.assertIn("--set-grant-limit 1000 is below the 2056 grants 4 queue(s) need", err)

    def test_prepare_counts_the_zerocopy_pool(self):
        # zerocopy=1: 256 RX pages more per queue (src/netfront's kRxLendSlots).
        rc, out, err = self.run_tool("--prepare", "--queues", "2", "--zerocopy", "--set-grant-limit")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.read("sys/module/xen_gntalloc/parameters/limit"), "1540")
        self.assertIn("grants: gntalloc limit 1540, 2 queue(s) need 1540 (770 each)", out)
        rc, _, err = self.run_tool("--status", "--zerocopy")
        self.assertEqual(rc, 2)
        self.assertIn("--zerocopy goes with --prepare", err)

    def test_prepare_reloads_privcmd_unrestricted(self):
        # xenfs holds xen_privcmd: unmounted and removed around the reload, then put back.
        self.g.write("proc/mounts", "xenfs /proc/xen xenfs rw,relatime 0 0\n")
        self.g.write("dev/xen/privcmd", "")
        self.g.script("modinfo", 'echo "unrestricted:Don\'t restrict hypercalls to target domain '
                                 'if running in a domU (bool)"\n')
        self.g.script("umount", 'echo "umount $*" >> %s\n' % self.g.mount_log)
        rc, out, err = self.run_tool("--prepare", "--privcmd-hypercalls")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.read("modprobe.log"),
                         "-a xen-evtchn xen-gntalloc xen-gntdev xenfs\n-r xenfs xen_privcmd\n"
                         "xen_privcmd unrestricted=1\nxenfs\n")
        self.assertEqual(self.g.read("mount.log"),
                         "umount /proc/xen\n-t xenfs xenfs /proc/xen\n")
        self.assertIn("privcmd: xen_privcmd reloaded with unrestricted=1", out)
        # A kernel whose xen_privcmd does not restrict: nothing reloaded.
        self.g.script("modinfo", 'echo "parm: something_else"\n')
        os.remove(self.g.modprobe_log)
        rc, out, err = self.run_tool("--prepare", "--privcmd-hypercalls")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.read("modprobe.log"), "-a xen-evtchn xen-gntalloc xen-gntdev xenfs\n")
        self.assertIn("has no unrestricted parameter", out)
        rc, _, err = self.run_tool("--status", "--privcmd-hypercalls")
        self.assertEqual(rc, 2)
        self.assertIn("--privcmd-hypercalls goes with --prepare", err)

    def test_prepare_leaves_a_mounted_xenfs_and_one_queue_fits_the_default(self):
        self.g.write("proc/mounts", "xenfs /proc/xen xenfs rw,relatime 0 0\n")
        rc, out, err = self.run_tool("--prepare")
        self.assertEqual(rc, 0, err)
        self.assertIsNone(self.g.read("mount.log"))
        self.assertIn("xenfs: mounted at /proc/xen", out)
        self.assertIn("grants: gntalloc limit 1024, 1 queue(s) need 514", out)

    def test_prepare_names_a_failing_module(self):
        self.g.script("modprobe", 'echo "modprobe: FATAL: Module xen-gntalloc not found" >&2\nexit 1\n')
        rc, _, err = self.run_tool("--prepare")
        self.assertEqual(rc, 1)
        self.assertIn("Module xen-gntalloc not found", err)

    def test_autoprobe_off_and_on(self):
        rc, out, err = self.run_tool("--autoprobe", "off")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.g.read("sys/bus/xen/drivers_autoprobe"), "0")
        rc, out, err = self.run_tool("--autoprobe", "on")
        self.assertEqual(self.g.read("sys/bus/xen/drivers_autoprobe"), "1")

    def test_usage_errors_exit_2(self):
        for args in ([], ["--bind"], ["--queues", "0", "--prepare"], ["--set-grant-limit", "9"]):
            rc, _, _ = self.run_tool(*args)
            self.assertEqual(rc, 2, args)


def main():
    global TOOL
    argv = sys.argv[1:]
    if argv[:1] == ["--tool"]:
        TOOL = os.path.abspath(argv[1])
        argv = argv[2:]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(XpvBindTest)
    if argv:
        suite = unittest.TestSuite(t for t in suite if t.id().split(".")[-1] in argv)
    rc = check_lines.run(suite, "xpv-bind")
    if _minimal_dir:
        shutil.rmtree(_minimal_dir, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
