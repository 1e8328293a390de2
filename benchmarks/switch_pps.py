"""Packets per second forwarded by the embedded switch vs a bare AF_PACKET forwarder.

Run as root (creates and deletes its own network namespaces)::

    sudo .venv/bin/python benchmarks/switch_pps.py [--seconds 5] [--warmup 1] [--size 128] \
        [--rounds 5] [--sender-cpu 0] [--forwarder-cpu 1] [--p4 tofino] [--p4runtime]

Topology (three namespaces, two veth pairs)::

    sender ns: s0 ──veth── p1 :switch ns: p2 ──veth── k0 :sink ns

The same sender (a pre-built frame sent in a tight loop by a separate process, bounded
in packets and time) drives, in alternating rounds (the idle forwarder SIGSTOPped, so
both see the same background load),

(a) a bare Python forwarder: blocking ``recvfrom`` on p1, ``send`` on p2, nothing else;
(b) the embedded switch (``python -m emu.embedded.switch``) running p4/symphony.p4 with a
    route to the sink installed over the control socket.

(c) bmv2's ``simple_switch`` with the same program and route, when ``simple_switch``,
    ``simple_switch_CLI`` and ``p4c`` are installed (a row of its own, not in the ratio).

The sender is pinned to ``--sender-cpu`` and every forwarder to ``--forwarder-cpu``
(``os.sched_setaffinity``), so they never compete for one core. Forwarded packets are
counted on the sink interface (``rx_packets`` of k0) over the measurement window after a
warm-up. Prints each round, the median and the spread (min-max) of each forwarder and of
the per-round ratio embedded/bare (target >= 0.5). The sender outruns every forwarder, so
all are measured at saturation; the host's other load shows up in all of them, which is
why they alternate within one invocation.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TAG = f"{os.getpid() % 100000}"
NS = {"snd": f"sepps-snd-{TAG}", "sw": f"sepps-sw-{TAG}", "sink": f"sepps-sink-{TAG}"}
SENDER_MAC, SWITCH_MAC, SINK_MAC = "020000000001", "02000000aa02", "020000000002"
PROCS: list[subprocess.Popen] = []
#: --p4runtime: the switch also serves P4Runtime with one client session open (as in a run).
P4RUNTIME = {"on": False}

SENDER = textwrap.dedent("""
    import socket, sys, time
    frame = bytes.fromhex(sys.argv[1]); count = int(sys.argv[2]); seconds = float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)      # SO_SNDBUFFORCE
    s.bind(("s0", 0))
    send = s.send
    end = time.monotonic() + seconds
    sent = 0
    while sent < count:
        for _ in range(256):
            try:
                send(frame)
            except OSError:
                pass
        sent += 256
        if time.monotonic() > end:
            break
""")

BARE = textwrap.dedent("""
    import socket, sys, time
    seconds = float(sys.argv[1])
    r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    r.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)      # SO_RCVBUFFORCE
    r.bind(("p1", 3))
    r.settimeout(0.2)
    w = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    w.setsockopt(socket.SOL_SOCKET, 32, 8 << 20)
    w.bind(("p2", 0))
    recvfrom, send = r.recvfrom, w.send
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1024):
            try:
                data, addr = recvfrom(65535)
            except socket.timeout:
                break
            if addr[2] == 4:
                continue
            try:
                send(data)
            except OSError:
                pass
""")


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)


def cleanup() -> None:
    """Kill child processes and delete the namespaces (idempotent)."""
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
    PROCS.clear()
    for ns in NS.values():
        sh("ip", "netns", "del", ns, check=False)


def setup() -> None:
    """Create the namespaces and veth pairs."""
    for ns in NS.values():
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "-n", NS["snd"], "link", "add", "s0", "type", "veth", "peer", "name", "p1", "netns", NS["sw"])
    sh("ip", "-n", NS["sink"], "link", "add", "k0", "type", "veth", "peer", "name", "p2", "netns", NS["sw"])
    for ns, ifname in ((NS["snd"], "s0"), (NS["sw"], "p1"), (NS["sw"], "p2"), (NS["sink"], "k0")):
        sh("ip", "-n", ns, "link", "set", ifname, "up")


def build_frame(size: int) -> bytes:
    """Ethernet/IPv4/UDP frame of ``size`` bytes from 10.0.0.1 to 10.0.0.2, UDP port 5001."""
    payload = bytes(max(0, size - 42))
    udp = struct.pack("!HHHH", 40000, 5001, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                               bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    s = sum(struct.unpack("!10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = struct.pack("!H", ~s & 0xFFFF)
    return bytes.fromhex(SWITCH_MAC + SENDER_MAC) + b"\x08\x00" + bytes(ip) + udp


def sink_rx() -> int:
    """Frames received so far on the sink interface."""
    out = sh("ip", "netns", "exec", NS["sink"], "cat", "/sys/class/net/k0/statistics/rx_packets")
    return int(out.stdout.strip())


#: CPUs of the sender and of the forwarders (``--sender-cpu``, ``--forwarder-cpu``).
CPUS = {"sender": 0, "forwarder": 1}


def pinned(cmd: list[str], role: str) -> list[str]:
    """``cmd`` run under ``taskset -c CPU`` (its children inherit the affinity)."""
    return ["taskset", "-c", str(CPUS[role]), *cmd]


def measure(frame: bytes, warmup: float, seconds: float) -> float:
    """Run the sender, return the forwarded packets/s over the window after ``warmup``."""
    sender = subprocess.Popen(pinned(["ip", "netns", "exec", NS["snd"], sys.executable, "-c", SENDER,
                                      frame.hex(), str(10**9), str(warmup + seconds + 1.0)], "sender"))
    PROCS.append(sender)
    try:
        time.sleep(warmup)
        c0, t0 = sink_rx(), time.monotonic()
        time.sleep(seconds)
        c1, t1 = sink_rx(), time.monotonic()
    finally:
        sender.kill()
        sender.wait(10)
        PROCS.remove(sender)
    return (c1 - c0) / (t1 - t0)


def start_bare(lifetime: float) -> subprocess.Popen:
    """The bare forwarder, running for at most ``lifetime`` seconds."""
    fwd = subprocess.Popen(pinned(["ip", "netns", "exec", NS["sw"], sys.executable, "-c", BARE, str(lifetime)],
                                  "forwarder"))
    PROCS.append(fwd)
    return fwd


def start_embedded(tmp: Path, program: Path) -> subprocess.Popen:
    """The embedded switch running ``program`` with a route to the sink; returns once it is programmed."""
    from emu.embedded.control import ControlClient

    ctl = tmp / "s1.sock"
    log = (tmp / "s1.log").open("wb")
    p4rt = ["--p4runtime", "127.0.0.1:0", "--p4runtime-file", str(tmp / "s1.p4runtime")] if P4RUNTIME["on"] else []
    sw = subprocess.Popen(pinned(["ip", "netns", "exec", NS["sw"], sys.executable, "-m", "emu.embedded.switch",
                                  "--program", str(program), "--name", "s1",
                                  "--port", "1=p1", "--port", "2=p2", "--control", str(ctl),
                                  "--log-level", "warning", "--stats-file", str(tmp / "s1.stats.json"), *p4rt],
                                 "forwarder"),
                          cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    PROCS.append(sw)
    with ControlClient(ctl, timeout=30.0, connect_timeout=60.0) as c:
        c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.2/32"}, "MyIngress.ipv4_forward",
                    {"srcAddr": "02:00:00:00:aa:02", "dstAddr": "02:00:00:00:00:02", "port": 2})
    if P4RUNTIME["on"]:  # a controller's P4Runtime session stays open during the run, as in emu.controller
        addr = (tmp / "s1.p4runtime").read_text().strip()
        client = ("import sys, time; from p4runtime_sh.p4runtime import P4RuntimeClient; "
                  "c = P4RuntimeClient(1, sys.argv[1], (0, 1)); print('connected', flush=True); time.sleep(3600)")
        holder = subprocess.Popen(["ip", "netns", "exec", NS["sw"], sys.executable, "-c", client, addr],
                                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        PROCS.append(holder)
        if holder.stdout is None or "connected" not in holder.stdout.readline():
            raise RuntimeError(f"no P4Runtime session to the switch at {addr}")
    return sw


def bmv2_missing() -> list[str]:
    """The bmv2/p4c programs the bmv2 row needs that are not installed."""
    return [b for b in ("simple_switch", "simple_switch_CLI", "p4c") if shutil.which(b) is None]


def start_bmv2(tmp: Path) -> subprocess.Popen:
    """bmv2 simple_switch with p4/symphony.p4 (p4c-compiled) and the same route as the embedded switch."""
    from emu.mininet.bmv2 import compile_program

    json_path, _p4info = compile_program(REPO / "p4" / "symphony.p4", tmp / "bmv2")
    thrift = 9190 + os.getpid() % 500
    log = (tmp / "bmv2.log").open("wb")
    sw = subprocess.Popen(pinned(["ip", "netns", "exec", NS["sw"], "simple_switch", "--thrift-port", str(thrift),
                                  "-i", "1@p1", "-i", "2@p2", str(json_path)], "forwarder"),
                          stdout=log, stderr=subprocess.STDOUT)
    log.close()
    PROCS.append(sw)
    cli = ["ip", "netns", "exec", NS["sw"], "simple_switch_CLI", "--thrift-port", str(thrift)]
    cmd = "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.2/32 => 02:00:00:00:aa:02 02:00:00:00:00:02 2\n"
    deadline = time.monotonic() + 60
    while True:
        res = subprocess.run(cli, input=cmd, capture_output=True, text=True, timeout=30)
        if res.returncode == 0 and "Error" not in res.stdout and "Could not" not in res.stdout:
            return sw
        if time.monotonic() > deadline or sw.poll() is not None:
            raise RuntimeError(f"simple_switch did not accept the route: {res.stdout.strip()[-200:]}")
        time.sleep(0.5)


def run_rounds(frame: bytes, rounds: int, warmup: float, seconds: float,
               tmp: Path, with_bmv2: bool, program: Path) -> tuple[dict[str, list[float]], dict]:
    """Alternate bare, embedded (and bmv2) measurements; the idle forwarders are SIGSTOPped
    so that all see the same background load on this host."""
    procs = {"bare": start_bare(rounds * (warmup + seconds + 3.0) * 3 + 120.0), "embedded": start_embedded(tmp, program)}
    if with_bmv2 and program == REPO / "p4" / "symphony.p4":
        procs["bmv2"] = start_bmv2(tmp)
    for p in procs.values():
        os.kill(p.pid, signal.SIGSTOP)
    rates: dict[str, list[float]] = {name: [] for name in procs}
    try:
        for _ in range(rounds):
            for name, proc in procs.items():
                os.kill(proc.pid, signal.SIGCONT)
                try:
                    rates[name].append(measure(frame, warmup, seconds))
                finally:
                    os.kill(proc.pid, signal.SIGSTOP)
        sw = procs["embedded"]
        os.kill(sw.pid, signal.SIGCONT)
        sw.send_signal(signal.SIGTERM)
        sw.wait(15)
        stats = json.loads((tmp / "s1.stats.json").read_text())
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait(10)
            PROCS.remove(p)
    return rates, stats


def spread(xs: list[float], fmt: str = "{:.0f}") -> str:
    """``median (min-max)`` of ``xs``."""
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="measurement window (s)")
    ap.add_argument("--warmup", type=float, default=1.0, help="warm-up before measuring (s)")
    ap.add_argument("--size", type=int, default=128, help="frame size (bytes)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating bare/embedded rounds")
    ap.add_argument("--sender-cpu", type=int, default=0, help="CPU the sender is pinned to")
    ap.add_argument("--forwarder-cpu", type=int, default=1, help="CPU the forwarders are pinned to")
    ap.add_argument("--no-bmv2", action="store_true", help="skip the bmv2 row even when bmv2 is installed")
    ap.add_argument("--p4runtime", action="store_true",
                    help="run the embedded switch with its P4Runtime server and a client session open (as in a run)")
    ap.add_argument("--p4", choices=["v1model", "tofino"], default="v1model",
                    help="P4 build: p4/symphony.p4 or p4/tofino/symphony.p4 (T2NA; no bmv2 row)")
    args = ap.parse_args()
    from emu.p4build import p4_build

    program = p4_build(args.p4).source
    P4RUNTIME["on"] = args.p4runtime
    CPUS.update(sender=args.sender_cpu, forwarder=args.forwarder_cpu)
    if args.sender_cpu == args.forwarder_cpu:
        print("warning: sender and forwarder share one CPU; the ratio then measures contention", file=sys.stderr)
    if os.geteuid() != 0:
        print("error: switch_pps.py needs root (network namespaces); run with sudo", file=sys.stderr)
        return 1
    if shutil.which("ip") is None or shutil.which("taskset") is None:
        print("error: needs iproute2 'ip' and util-linux 'taskset'", file=sys.stderr)
        return 1
    with_bmv2 = not args.no_bmv2 and not bmv2_missing()
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    frame = build_frame(args.size)
    try:
        setup()
        with tempfile.TemporaryDirectory(prefix="switch_pps-") as tmp:
            rates, stats = run_rounds(frame, args.rounds, args.warmup, args.seconds, Path(tmp), with_bmv2, program)
    finally:
        cleanup()
    bare, emb = rates["bare"], rates["embedded"]
    ratios = [e / b for b, e in zip(bare, emb, strict=True) if b]
    print(f"frame {len(frame)} bytes; {args.rounds} alternating rounds of {args.seconds:.1f} s after "
          f"{args.warmup:.1f} s warm-up; sender on CPU {args.sender_cpu}, forwarders on CPU {args.forwarder_cpu}")
    print("                          packets/s median (min-max)   rounds")
    print(f"bare AF_PACKET forwarder: {spread(bare):>30}   {', '.join(f'{x:.0f}' for x in bare)}")
    print(f"embedded switch         : {spread(emb):>30}   {', '.join(f'{x:.0f}' for x in emb)}"
          f"  ({program.relative_to(REPO)}, 1 route{', P4Runtime session open' if args.p4runtime else ''})")
    if "bmv2" in rates:
        print(f"bmv2 simple_switch      : {spread(rates['bmv2']):>30}   "
              f"{', '.join(f'{x:.0f}' for x in rates['bmv2'])}")
    else:
        missing = bmv2_missing()
        print(f"bmv2 simple_switch      : not measured ({'--no-bmv2' if not missing else 'missing ' + ', '.join(missing)})")
    print(f"ratio embedded/bare     : {spread(ratios, '{:.2f}'):>30}   per round; target >= 0.5")
    print(f"switch drops: {stats.get('drops')}, port I/O: {stats.get('portio')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
