#!/usr/bin/env python3
# dom0's sender of l3fwd-power rounds (action_l3fwd_round in dom0.sh), kept running between
# rounds: a python3 start costs about a second in dom0 under QEMU TCG, and the l3fwd checks
# send some hundred rounds. It serves one round a request:
#
#   l3fwd_sender.py REQ_FIFO RESP_FIFO
#   request (a line on REQ_FIFO):   TOKEN IFC VIFMAC COUNT GAP_MS all|first
#   answer  (a line on RESP_FIFO):  TOKEN RC TEXT
#
# A round: COUNT IPv4/UDP frames to 1.1.1.1 into the domU through IFC (vif<domid>.<devid>),
# GAP_MS apart, each sent once the one before came back (or 1 s passed); l3fwd-power forwards
# them out of the same port (1.1.1.0/24 is its port 0) from VIFMAC with TTL 63. TEXT is
# "forwarded K/COUNT[; late J (frame I after T ms, ...)]; dom0's longest stall S; latency_us
# L1,L2,..." (send to forwarded copy back, per frame that came back within its second; a late
# frame came back after it, up to 2 s after the round's last frame), RC 0 when every frame came
# back within its second. With "first": it stops at the first frame that comes back (up to COUNT
# tries), which must come back: "forwarded 1/1 after N tries latency_us L".
# The socket is opened per round: a vif detached and attached again is a new interface.
import select
import socket
import struct
import sys
import threading
import time

ETH_P_ALL = 3  # every frame, incoming ones included (see action_echo in dom0.sh)
SOL_PACKET, PACKET_IGNORE_OUTGOING = 263, 23


def csum(header):
    x = sum(struct.unpack('!10H', header))
    x = (x & 0xffff) + (x >> 16)
    return ~((x & 0xffff) + (x >> 16)) & 0xffff


def frame(mac, i):
    payload = b'XPVL' + struct.pack('!I', i) + bytes(18)
    udp = struct.pack('!HHHH', 40000, 9, 8 + len(payload), 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                     socket.inet_aton('10.99.0.1'), socket.inet_aton('1.1.1.1'))
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    return mac + bytes.fromhex('020000000001') + b'\x08\x00' + ip + udp


class Stalls:
    """dom0's longest stall over a round: the longest gap between the turns of a thread that
    wakes every 50 ms, less those 50 ms (dom0 under QEMU TCG can stand still for a second)."""

    def __init__(self):
        self.longest, self.stop = 0.0, threading.Event()
        self.thread = threading.Thread(target=self.beat, daemon=True)
        self.thread.start()

    def beat(self):
        last = time.monotonic()
        while not self.stop.wait(0.05):
            now = time.monotonic()
            self.longest = max(self.longest, now - last - 0.05)
            last = now

    def end(self):
        self.stop.set()
        self.thread.join()
        return self.longest


def one_round(ifc, mac, n, gap, first):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    stalls = Stalls()
    sent, lat, late = [], {}, {}

    def take(i, until):
        """Frames until frame i came back or the clock passed `until` (i None: until then).
        A copy of an earlier frame, one that did not come back within its second, is late;
        copies already queued are read even when the clock passed (dom0 itself stalled)."""
        while (i not in lat) if i is not None else len(lat) + len(late) < len(sent):
            if not select.select([s], [], [], max(0.0, until - time.monotonic()))[0]:
                return
            f = s.recv(2048)
            now = time.monotonic()
            if not (len(f) >= 50 and f[6:12] == mac and f[12:14] == b'\x08\x00'
                    and f[22] == 63 and f[42:46] == b'XPVL'):
                continue
            j = struct.unpack('!I', f[46:50])[0]
            if j >= len(sent) or j in lat or j in late:
                continue
            if j == i:
                lat[j] = now - sent[j]
            else:
                late[j] = now - sent[j]

    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        s.bind((ifc, 0))
        for i in range(n):
            sent.append(time.monotonic())
            s.send(frame(mac, i))
            take(i, sent[i] + 1.0)
            if first and lat:
                return 0, "forwarded 1/1 after %d tries latency_us %.0f" % (i + 1, lat[i] * 1e6)
            time.sleep(gap)
        if not first and len(lat) + len(late) < n:
            take(None, time.monotonic() + 2.0)  # the missing ones may only be late
    finally:
        s.close()
        stall = stalls.end()
    if first:
        return 1, "forwarded 0/1 after %d tries" % n
    # Frames in order; "late" ones came back after their second (not in latency_us).
    text = "forwarded %d/%d" % (len(lat), n)
    if late:
        text += "; late %d (%s)" % (len(late), ", ".join(
            "frame %d after %.0f ms" % (j, late[j] * 1e3) for j in sorted(late)))
    text += "; dom0's longest stall %.2fs; latency_us %s" % (
        stall, ",".join("%.0f" % (lat[j] * 1e6) for j in sorted(lat)))
    return (0 if len(lat) == n else 1), text


def main(req, resp):
    while True:
        with open(req) as f:  # blocks until a request's writer opens the FIFO
            line = f.readline()
        words = line.split()
        if not words:
            continue
        token = words[0]
        try:
            ifc, mac, n, gap_ms, mode = words[1:]
            rc, text = one_round(ifc, bytes.fromhex(mac.replace(':', '')), int(n),
                                 int(gap_ms) / 1000.0, mode == 'first')
        except Exception as e:  # a bad request, or the vif gone: that round fails, not the sender
            rc, text = 1, "the sender could not run '%s': %s" % (line.strip(), e)
        try:
            with open(resp, 'w') as f:  # the request's reader holds RESP open
                f.write("%s %d %s\n" % (token, rc, text))
        except OSError as e:  # it gave up meanwhile: the next request's reader skips the answer
            print("answer to %s not delivered: %s" % (token, e), file=sys.stderr, flush=True)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
