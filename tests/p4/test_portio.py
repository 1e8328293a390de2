"""The switch process on real interfaces: veth pairs in network namespaces this test creates.

Needs root and ``ip`` (iproute2); skips with the reason otherwise. Topology::

    ns hosts: h1 ──veth── p1 :ns switch: p2 ──veth── h2 (ns hosts)

The switch runs ``python -m emu.embedded.switch`` inside the switch namespace; a helper
process inside the hosts namespace sends frames on h1 and reads h2. Every wait is bounded
in time and count; the namespaces are deleted by a finalizer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from emu.embedded.control import ControlClient

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4" / "symphony.p4"


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, AF_PACKET)"
    if shutil.which("ip") is None:
        return "needs iproute2 'ip'"
    return None


needs_netns = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=20)


@pytest.fixture
def netns(request: pytest.FixtureRequest) -> dict[str, str]:
    tag = f"{os.getpid()}"  # unique among live processes: tests beside each other and beside runs
    names = {"sw": f"sepio-sw-{tag}", "hosts": f"sepio-h-{tag}"}

    def cleanup() -> None:
        for ns in names.values():
            sh("ip", "netns", "del", ns, check=False)

    request.addfinalizer(cleanup)
    cleanup()
    for ns in names.values():
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    for i in (1, 2):
        sh("ip", "-n", names["hosts"], "link", "add", f"h{i}", "type", "veth", "peer", "name", f"p{i}",
           "netns", names["sw"])
        sh("ip", "-n", names["hosts"], "link", "set", f"h{i}", "up")
        sh("ip", "-n", names["sw"], "link", "set", f"p{i}", "up")
    return names


HELPER = textwrap.dedent("""
    import socket, sys, time
    frames = [bytes.fromhex(h) for h in sys.argv[1].split(",")]
    want = bytes.fromhex(sys.argv[2])
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    rx.bind(("h2", 3))
    rx.settimeout(0.2)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind(("h1", 0))
    deadline = time.monotonic() + 10.0
    for attempt in range(20):              # resend until the switch forwards (bounded)
        for f in frames:
            try:
                tx.send(f)
            except OSError:
                pass                       # the kernel may refuse the runt
        for _ in range(50):
            if time.monotonic() > deadline:
                sys.exit("timeout")
            try:
                data, addr = rx.recvfrom(65535)
            except socket.timeout:
                break
            if addr[2] != 4 and data.startswith(want):
                print(data.hex())
                sys.exit(0)
    sys.exit("no forwarded frame")
""")


@needs_netns
@pytest.mark.parametrize("ring", [True, False], ids=["rx-ring", "recv"])
def test_switch_forwards_between_veths(netns: dict[str, str], tmp_path: Path, ring: bool) -> None:
    """Frames in through a PACKET_MMAP receive ring (default) or recv (--no-rx-ring): same result."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    ctl = tmp_path / "s1.sock"
    stats_file = tmp_path / "s1.stats.json"
    log = (tmp_path / "s1.log").open("wb")
    proc = subprocess.Popen(
        ["ip", "netns", "exec", netns["sw"], sys.executable, "-m", "emu.embedded.switch",
         "--program", str(PROGRAM), "--name", "s1", "--port", "1=p1", "--port", "2=p2",
         "--control", str(ctl), "--seed", "1", "--log-level", "debug", "--stats-file", str(stats_file),
         *([] if ring else ["--no-rx-ring"])],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        client = ControlClient(ctl, timeout=10.0, connect_timeout=30.0)
        assert client.ping() == "pong"
        client.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.2/32"}, "MyIngress.ipv4_forward",
                         {"srcAddr": "00:00:00:00:aa:02", "dstAddr": "00:00:00:00:00:02", "port": 2})
        good = bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:aa:02")
                     / IP(src="10.0.0.1", dst="10.0.0.2", ttl=64) / UDP(sport=1234, dport=5001) / b"hello")
        junk = bytes.fromhex("00000000aa02" "000000000001" "0800" "4f") + b"\xff" * 3  # truncated IPv4
        runt = b"\x01\x02\x03"  # shorter than an Ethernet header (if the kernel lets it through)
        want = bytes.fromhex("000000000002" "00000000aa02" "0800")
        helper = subprocess.run(
            ["ip", "netns", "exec", netns["hosts"], sys.executable, "-c", HELPER,
             ",".join(f.hex() for f in (junk, runt, good)), want.hex()],
            capture_output=True, text=True, timeout=30)
        assert helper.returncode == 0, helper.stderr
        out = Ether(bytes.fromhex(helper.stdout.strip()))
        assert out[IP].ttl == 63 and out[IP].dst == "10.0.0.2" and out[UDP].load == b"hello"
        s = client.stats()
        assert s["tx"][2] >= 1
        assert s["drops"]["malformed"] >= 1  # truncated IPv4 counted, switch alive
        assert client.ping() == "pong"
        client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert not ctl.exists()
        final = json.loads(stats_file.read_text())
        assert final["name"] == "s1" and final["tx"]["2"] >= 1
        assert final["portio"]["rx_ring_ports"] == ([1, 2] if ring else [])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


PORT_SOCKET_HELPER = textwrap.dedent("""
    import select, socket, sys, time
    from emu.embedded import portio

    class Socket(socket.socket):
        def bind(self, address):  # traffic on another interface of the namespace before bind()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                for _ in range(20):
                    udp.sendto(b"not p1's", ("127.0.0.1", 9))
            time.sleep(0.05)
            return super().bind(address)

    portio.socket.socket = Socket
    sock, _ = portio.open_port_socket("p1")
    ready, _, _ = select.select([sock], [], [], 0.3)
    frames = []
    while ready and len(frames) < 50:
        frames.append(sock.recvfrom(65535)[1])
        ready, _, _ = select.select([sock], [], [], 0)
    print(len(frames), frames[:3])
    sys.exit(1 if frames else 0)
""")


@needs_netns
def test_port_socket_reads_only_its_interface(netns: dict[str, str]) -> None:
    """A port's AF_PACKET socket queues nothing before bind() names its interface: loopback
    datagrams sent between socket() and bind() never show up as frames of port p1 (p1 is idle)."""
    r = subprocess.run(["ip", "netns", "exec", netns["sw"], sys.executable, "-c", PORT_SOCKET_HELPER],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"frames read on p1 that came from elsewhere: {r.stdout}{r.stderr}"


@needs_netns
def test_switch_missing_interface_is_one_line(netns: dict[str, str], tmp_path: Path) -> None:
    r = subprocess.run(
        ["ip", "netns", "exec", netns["sw"], sys.executable, "-m", "emu.embedded.switch",
         "--program", str(PROGRAM), "--name", "s9", "--port", "1=p1", "--port", "2=nope0",
         "--control", str(tmp_path / "s9.sock")],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("error: switch s9: interface nope0:")
    assert not (tmp_path / "s9.sock").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "1-eth1"], "expected NUMBER=INTERFACE"),
    (["--port", "600=x"], "port number must be 0..510"),
    (["--port", "1=a", "--port", "1=b"], "port 1 given twice"),
    ([], "no --port given"),
    (["--port", "1=a", "--cpu-port", "255"], "--cpu-port needs --p4runtime"),
    (["--port", "1=a", "--p4runtime", "127.0.0.1:0", "--cpu-port", "1"], "must be 0..510 and not a --port"),
])
def test_switch_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from emu.embedded.switch import main

    assert main(["--program", str(PROGRAM), "--name", "s1", "--control", "/nonexistent/s.sock", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


@needs_netns
def test_switch_process_packet_io_over_p4runtime(tmp_path: Path) -> None:
    """``--cpu-port``: a p4runtime-shell PacketOut leaves the switch process by the port its
    metadata names; a frame received there reaches the client as a PacketIn (packet_io.p4).
    One veth pair in the root namespace, named with a link tag of its own (emu.linknames)."""
    import contextlib
    import socket
    import time

    from p4runtime_sh import shell as p4sh

    from emu.linknames import LinkTag

    tag = LinkTag.claim(f"pytest-{os.getpid()}")
    sw_end, host_end = tag.intf("pio", 1), tag.intf("pioh", 1)
    proc = None
    try:
        sh("ip", "link", "add", sw_end, "type", "veth", "peer", "name", host_end)
        for end in (sw_end, host_end):
            with contextlib.suppress(OSError):
                Path(f"/proc/sys/net/ipv6/conf/{end}/disable_ipv6").write_text("1")
            sh("ip", "link", "set", end, "up")
        host = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # nothing queued before bind (packet(7))
        host.bind((host_end, 3))
        host.settimeout(0.2)
        addr_file = tmp_path / "s1.p4runtime"
        log = (tmp_path / "s1.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "emu.embedded.switch", "--program",
             str(REPO / "tests" / "p4" / "programs" / "packet_io.p4"), "--name", "s1", "--port", f"1={sw_end}",
             "--control", str(tmp_path / "s1.sock"), "--p4runtime", "127.0.0.1:0", "--p4runtime-file",
             str(addr_file), "--cpu-port", "255", "--device-id", "1"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not addr_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "s1.log").read_text()
            time.sleep(0.05)
        p4sh.setup(device_id=1, grpc_addr=addr_file.read_text().strip(), election_id=(0, 1), verbose=False)
        try:
            frame = bytes.fromhex("000000000002 000000000001 0800") + b"out"
            p4sh.PacketOut(frame, egress_port="1", _pad="0").send()
            got = b""
            while not got.endswith(b"out") and time.monotonic() < deadline:
                with contextlib.suppress(socket.timeout):
                    got = host.recv(2048)
            assert got == frame
            back = bytes.fromhex("000000000009 000000000008 0800") + b"in"
            seen: list = []
            for _ in range(20):  # bounded: resend until the PacketIn arrives
                host.send(back)
                p4sh.PacketIn().sniff(seen.append, timeout=0.3)
                if any(m.packet.payload == back for m in seen):
                    break
            (pin,) = [m for m in seen if m.packet.payload == back][:1]
            assert {m.metadata_id: m.value for m in pin.packet.metadata}[1] == b"\x01"  # ingress_port 1
        finally:
            p4sh.teardown()
        host.close()
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
        tag.release()
