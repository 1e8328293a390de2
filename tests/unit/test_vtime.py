"""Virtual-time mode (emu.vtime): framing, the ns clock of the switch core, whole runs.

No root and no Mininet: ``symphony-emu run --mode sim`` runs everything in this process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emu import runner
from emu.embedded.core import SwitchCore
from emu.embedded.link import QueueConfig
from emu.embedded.tm import TrafficManager
from emu.vtime import frames
from emu.vtime.events import EventLoop, s_to_ns

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"
LEAD = REPO / "topologies" / "e2e_lead.yaml"
RING16 = Path(__file__).resolve().parent / "data" / "sim_ring16.yaml"


def test_frame_builder_matches_scapy() -> None:
    """The hosts' frames are what the kernel would send: scapy recomputes the same checksum."""
    fb = frames.FrameBuilder("00:00:00:00:00:01", "10.0.0.1", {"10.0.0.2": "00:00:00:00:00:02"})
    payload = bytes(range(200))
    raw = fb.build("10.0.0.2", 4791, 4791, payload, 2)
    pkt = Ether(raw)
    assert pkt[Ether].dst == "00:00:00:00:00:02" and pkt[Ether].src == "00:00:00:00:00:01"
    ip = pkt[IP]
    assert (ip.src, ip.dst, ip.tos & 3, ip.len, ip.ttl, ip.flags.DF) == ("10.0.0.1", "10.0.0.2", 2, 228, 64, True)
    ref = IP(bytes(ip))
    del ref.chksum
    assert IP(bytes(ref)).chksum == ip.chksum
    assert pkt[UDP].len == 208 and bytes(pkt[UDP].payload) == payload
    ecn, src, dport, body = frames.parse(raw)
    assert (ecn, src, dport, bytes(body)) == (2, bytes([10, 0, 0, 1]), 4791, payload)
    assert frames.parse(raw[:30]) is None


def test_frame_builder_gives_the_struct_s_bytes_and_errors() -> None:
    """build_to (compiled: the bytes written in C, frames.pxd) is the Ethernet header, the ``_IPUDP``
    struct's IPv4/UDP headers and the datagram, for any length and ECN codepoint; a port or length
    the struct refuses raises its error (struct.error), as in pure Python."""
    import struct

    fb = frames.FrameBuilder("00:00:00:00:00:01", "10.0.0.1", {"10.0.0.2": "00:00:00:00:00:02"})
    dest = fb.dest("10.0.0.2")
    eth, dip, words = dest
    for n, ecn, sport, dport in ((0, 0, 0, 65535), (1, 3, 4791, 4791), (4080, 2, 50000, 4791), (300, 1, 65535, 0)):
        datagram = bytes((7 * i + n) & 0xFF for i in range(n))
        total, tos = 28 + n, ecn & 3
        s = words + (0x4500 | tos) + total
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        want = eth + struct.pack("!BBHHHBBH4s4sHHHH", 0x45, tos, total, 0, 0x4000, 64, 17, ~s & 0xFFFF,
                                 bytes([10, 0, 0, 1]), dip, sport, dport, 8 + n, 0) + datagram
        assert fb.build_to(dest, sport, dport, datagram, ecn) == want
        assert fb.build_to(dest, sport, dport, bytearray(datagram), ecn) == want  # not bytes: the struct path
    for sport, dport, n in ((65536, 1, 10), (1, -1, 10), (1, 1, 65536 - 28)):
        with pytest.raises(struct.error):
            fb.build_to(dest, sport, dport, bytes(n), 0)


def test_s_to_ns_never_wakes_early() -> None:
    for t in (0.0, 1.5e-6, 0.1 + 0.2, 123.456789123):
        ns = s_to_ns(t)
        assert ns * 1e-9 >= t and ns <= t * 1e9 + 2  # at the time asked for, within float rounding


def test_event_loop_orders_by_time_then_insertion() -> None:
    loop = EventLoop()
    seen: list[tuple[int, str]] = []
    for t, name in ((5, "a"), (3, "b"), (5, "c"), (3, "d")):
        loop.at(t, lambda n: seen.append((loop.now, n)), name)
    loop.run()
    assert seen == [(3, "b"), (3, "d"), (5, "a"), (5, "c")]


def test_event_loop_runs_what_heapq_would_pop() -> None:
    """The loop's heap (typed sifts when compiled, heapq as Python) pops in (time, insertion) order,
    also with events scheduled while it runs and with many ties: the order heapq gives."""
    import heapq
    import random

    rnd = random.Random(7)
    loop = EventLoop()
    ref: list[tuple[int, int, int]] = []
    seen: list[int] = []
    count = [0]

    def schedule(t: int) -> None:
        count[0] += 1
        heapq.heappush(ref, (t, count[0], count[0]))
        (loop.push if t >= loop.now else loop.at)(t, fire, count[0])

    def fire(k: int) -> None:
        seen.append(k)
        if len(seen) < 3000:
            for _ in range(rnd.choice((0, 1, 1, 2))):
                schedule(loop.now + rnd.choice((0, 0, 1, 5, 40)))

    for _ in range(200):
        schedule(rnd.randrange(50))
    loop.run()
    want = []
    while ref:
        want.append(heapq.heappop(ref)[2])
    assert seen == want and loop.events == len(want) > 1000


def test_event_loop_remove_leaves_the_order_of_the_rest() -> None:
    """EventLoop.remove takes the chosen events off mid-run; the others run in the order they would have."""
    import random

    rnd = random.Random(3)
    loop = EventLoop()
    seen: list[int] = []
    times = {k: rnd.choice((5, 5, 7, 9, 20, 20, 31)) + rnd.randrange(3) for k in range(400)}
    for k, t in times.items():
        loop.at(t, seen.append, k)

    def remove(_: object) -> None:
        gone = loop.remove(lambda e: isinstance(e[3], int) and e[3] % 3 == 0)
        assert sorted(e[3] for e in gone) == [k for k in times if k % 3 == 0 and times[k] > 6]

    loop.at(6, remove, None)
    loop.run()
    want = sorted((t, k) for k, t in times.items() if not (k % 3 == 0 and t > 6))
    assert seen == [k for _, k in want]


def test_superseded_rank_wake_ups_removed_same_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranks' superseded wake-ups taken off the heap whenever it grows (emu.vtime.hosts
    SimRank._arm, REMOVE_ABOVE 0) and never (REMOVE_ABOVE above any heap): the same records, byte
    for byte, and some were removed. (A wake-up armed again at a removed one's time is put back
    with the removed one's sequence number; this run has a few such but none where another event
    shares its nanosecond between the two numbers, so it does not tell that apart from a new one.)"""
    from emu.vtime import events, hosts

    removed = [0]
    superseded = hosts._superseded

    def counted(entry: tuple) -> bool:
        gone = superseded(entry)
        removed[0] += gone
        return gone

    outs = {}
    for name, limit in (("never", 10**9), ("always", 0)):
        monkeypatch.setattr(events, "REMOVE_ABOVE", limit)
        monkeypatch.setattr(hosts, "REMOVE_ABOVE", limit)
        if limit == 0:
            monkeypatch.setattr(hosts, "_superseded", counted)
        result = _sim(RING16, tmp_path / name, schemes=("symphony",), iterations=1)
        assert result.ok, result.failure
        outs[name] = tmp_path / name
    assert removed[0] > 100
    for f in ("cct.csv", "steps.csv", "symphony/counters.json", *(f"symphony/job0-rank{r}.jsonl" for r in range(16))):
        assert (outs["never"] / f).read_bytes() == (outs["always"] / f).read_bytes(), f


def test_traffic_manager_ns_clock_at_100g() -> None:
    """A 4096-byte frame at 100 Gbit/s: (4096 + 24) * 8 / 100e9 s = 329.6 ns, then a 1 us delay."""
    tm = TrafficManager([1], ticks_per_us=1000, wire_overhead_bytes=24)
    tm.set_queue(1, QueueConfig(rate_bps=100e9, depth_pkts=8, delay_us=1))
    frame = bytes(4096)
    tm.enqueue(1, frame, 0)
    tm.enqueue(1, frame, 0)
    tm.service_until(0)
    assert tm.next_deadline_us() == 330  # the port is free for the second frame, rounded up to the ns
    tm.service_until(330)
    assert tm.next_deadline_us() == 330 + 1000
    assert tm.due(1329) == []
    assert tm.due(1330) == [(1, frame)]
    assert tm.next_deadline_us() == 660 + 1000  # 659.2 ns for two frames: no rounding drift
    assert tm.due(1660) == [(1, frame)]


class _FakePipeline:
    """Records the times SwitchCore hands the P4 pipeline."""

    #: emu.embedded.core.PipelineLike: queue depths in packets, no copies, no recirculation
    qdepth_unit = None
    last_recirculated = False

    def __init__(self) -> None:
        self.pending: list = []
        self.stats = {"parsed": 0}
        self.seen: list[tuple[str, int, int, int]] = []

    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> object:
        self.seen.append(("ingress", now_us, 0, 0))

        class St:
            egress_spec = 2

        return St()

    def egress_at(self, st: object, egress_port: int, enq_qdepth: int, deq_qdepth: int, deq_timedelta_us: int,
                  enq_timestamp_us: int, now_us: int) -> bytes:
        self.seen.append(("egress", now_us, enq_timestamp_us, deq_timedelta_us))
        return bytes(1500)


def test_switch_core_ns_clock_keeps_v1model_timestamps_in_us() -> None:
    pipe = _FakePipeline()
    core = SwitchCore(pipe, [1, 2], ticks_per_us=1000, max_frame_bytes=4114)
    core.set_queue(2, rate_bps=1e9, depth_pkts=8)
    core.receive(1, bytes(4110), 2_500_700)  # 2500.7 us; accepted up to 4114 bytes
    core.receive(1, bytes(100), 2_500_800)
    while (t := core.next_deadline_us()) is not None:
        core.poll(t)
    # ingress at 2500 us; the second packet waits 12 us (1500 B at 1 Gbit/s) behind the first
    assert pipe.seen[0] == ("ingress", 2500, 0, 0)
    assert pipe.seen[1] == ("egress", 2500, 2500, 0) and pipe.seen[2] == ("ingress", 2500, 0, 0)
    assert pipe.seen[3][0] == "egress" and pipe.seen[3][1] == 2512 and pipe.seen[3][3] == 11
    core.receive(1, bytes(4115), 3_000_000)
    assert core.stats()["drops"]["oversize"] == 1


def _sim(topology: Path, out: Path, **kw: object) -> runner.RunResult:
    return runner.run(topology, mode="sim", out=out, **kw)  # type: ignore[arg-type]


def test_sim_run_writes_the_results_folder(tmp_path: Path) -> None:
    result = _sim(SINGLE, tmp_path, schemes=("baseline",), iterations=2)
    assert result.ok, result.failure
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["mode"] == "sim" and info["status"] == "finished"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["baseline"]["verified"] and summary["baseline"]["iterations"] == 2
    assert summary["baseline"]["cct_over_bound"]["mean"] >= 1.0  # nothing beats the bandwidth bound
    for name in ("cct.csv", "steps.csv", "cct_cdf.png", "baseline/counters.json"):
        assert (tmp_path / name).is_file(), name
    counters = json.loads((tmp_path / "baseline" / "counters.json").read_text())
    assert counters["s1"]["stats"]["rx"]  # the switch core forwarded the traffic
    assert sum(counters["s1"]["stats"]["rx"].values()) > 0


def test_sim_same_seed_same_results_bit_for_bit(tmp_path: Path) -> None:
    """Two runs of one seed agree byte for byte, another seed differs; only Symphony marks."""
    a = _sim(LEAD, tmp_path / "a", seed=3, iterations=2)
    b = _sim(LEAD, tmp_path / "b", seed=3, iterations=2)
    c = _sim(LEAD, tmp_path / "c", seed=4, iterations=2)
    assert a.ok and b.ok and c.ok
    for name in ("summary.json", "cct.csv", "steps.csv", "baseline/counters.json", "symphony/counters.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for rank in range(4):
        name = f"symphony/job0-rank{rank}.jsonl"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "steps.csv").read_bytes() != (tmp_path / "c" / "steps.csv").read_bytes()
    # the marks: Symphony's only in the symphony scheme (T = 0 in this scenario: it must mark)
    assert a.summary["baseline"]["marks"]["symphony"] == 0
    assert a.summary["symphony"]["marks"]["symphony"] > 0


def test_sim_16_ranks_every_rank_verified(tmp_path: Path) -> None:
    result = _sim(RING16, tmp_path, schemes=("symphony",))
    assert result.ok, result.failure
    for rank in range(16):
        lines = [json.loads(x) for x in (tmp_path / "symphony" / f"job0-rank{rank}.jsonl").read_text().splitlines()]
        its = [x for x in lines if x["kind"] == "iteration"]
        assert [x["iteration"] for x in its] == [0, 1] and all(x["verified"] for x in its), rank
        assert not [x for x in lines if x["kind"] == "error"]


def test_sim_wrong_result_fails_the_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification can fail: corrupt one input the verifier sees, the run names the rank."""
    from emu.vtime import hosts

    real = hosts.Verifier.add_input

    def corrupt(self: hosts.Verifier, iteration: int, rank: int, data: object) -> None:
        import numpy as np

        arr = np.array(data, copy=True)
        if rank == 2:
            arr[0] += 1.0
        real(self, iteration, rank, arr)

    monkeypatch.setattr(hosts.Verifier, "add_input", corrupt)
    with pytest.raises(runner.RunError, match=r"baseline: job 0 rank \d on h\d failed: iteration 0: allreduce result"):
        _sim(SINGLE, tmp_path, schemes=("baseline",), iterations=1)
    from hostapps.rank import RECORD_FIELDS

    errors = [r for p in (tmp_path / "baseline").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines())
              if r["kind"] == "error"]
    assert errors and all(list(r) == list(RECORD_FIELDS["error"]) for r in errors)  # the worker's error records


def test_sim_rejects_bmv2_target(tmp_path: Path) -> None:
    with pytest.raises(runner.UsageError, match="--mode sim runs the embedded switch core only"):
        _sim(SINGLE, tmp_path, target="bmv2")


DC16 = REPO / "topologies" / "dc-leafspine-16.yaml"


def test_dc_scenario_uses_the_hpcc_preset() -> None:
    """100 Gbit/s, 1 us, 4096-byte MTU; DCQCN and K from HPCC's 100 Gbit/s settings (timer: the DCQCN paper's)."""
    from emu.topology import load_topology
    from hostapps.ratecontrol import HPCC_DCQCN_100G

    topo = load_topology(DC16)
    assert topo.mtu == 4096 and topo.dcqcn_preset == "hpcc-dcqcn-100g"
    assert {lk.bandwidth_bps for lk in topo.plan.links} == {100e9} and {lk.delay_us for lk in topo.plan.links} == {1}
    assert (topo.ecn.kmin_packets, topo.ecn.kmax_packets, topo.ecn.pmax) == (97, 389, 0.2)  # 400 KB, 1600 KB
    params = topo.dcqcn_for(0)
    assert HPCC_DCQCN_100G.rate_params["rate_increase_period"] == 300e-6
    assert params == {**HPCC_DCQCN_100G.rate_params, "rate_increase_period": 55e-6}  # the file's one override
    assert topo.transport_for(0) == HPCC_DCQCN_100G.transport
    assert len(topo.jobs[0].ranks) == 16 and topo.jobs[0].size_bytes >= 16 * 2**20
    from emu import routing

    # every ring flow crosses two hops it shares with one other ring flow (leaf uplink, spine downlink)
    loads = routing.compute_routes(topo).hop_load(0)
    shared = {hop: flows for hop, flows in loads.items() if len(flows) > 1}
    assert all(len(flows) == 2 for flows in shared.values())
    for rank in range(16):
        assert sum(rank in flows for flows in shared.values()) == 2


def test_dc_scenario_4096_byte_frames_pass_the_switch(tmp_path: Path) -> None:
    result = _sim(DC16, tmp_path, schemes=("baseline",), iterations=1, size=256 * 1024)
    assert result.ok, result.failure
    counters = json.loads((tmp_path / "baseline" / "counters.json").read_text())
    assert all(c["stats"]["drops"]["oversize"] == 0 for c in counters.values())
    spec = json.loads((tmp_path / "baseline" / "specs" / "job0-rank0.json").read_text())
    assert spec["mtu"] == 4096 and spec["transport"]["cnp_interval"] == 4e-6


def test_mininet_mode_refuses_a_4096_byte_mtu(tmp_path: Path) -> None:
    with pytest.raises(runner.UsageError, match="mtu 4096: the Mininet hosts and switches run a 1500-byte MTU.*--mtu 1500"):
        runner.run(DC16, out=tmp_path)


def test_p4_queue_marks_drive_dcqcn() -> None:
    """One 10 Mbit/s sender into a 5 Mbit/s bottleneck: the P4 program's queue marks (and
    nothing else) become CNPs and DCQCN rate cuts; every byte arrives."""
    from emu.topology import parse_topology
    from emu.vtime.hosts import AppEndpoint, SimHost
    from emu.vtime.network import SimNetwork
    from hostapps.collectives import SendRequest
    from hostapps.transport import Transport, TransportConfig
    from hostapps.wire import CTH_UDP_PORT

    topo = parse_topology("""
name: t
defaults: {bandwidth_mbps: 10, delay_ms: 0.1, queue_packets: 64}
hosts: [{name: a}, {name: b}]
switches: [{name: sw1}, {name: sw2}]
links: [{a: a, b: sw1}, {a: sw1, b: sw2, bandwidth_mbps: 5}, {a: b, b: sw2}]
jobs: [{id: 0, ranks: [a, b]}]
ecn: {threshold_packets: 5}
""")
    net = SimNetwork(topo, seed=1)
    net.program("baseline")
    plan = topo.plan
    macs = {h.ip: h.mac for h in plan.hosts}
    hosts = {}
    for h in plan.hosts:
        hosts[h.name] = SimHost(h.name, h.ip, h.mac, macs, net.loop)
        hosts[h.name].link = net.attach_host(h.name, hosts[h.name].receive)
    addrs = {0: (plan.host("a").ip, CTH_UDP_PORT), 1: (plan.host("b").ip, CTH_UDP_PORT)}
    cfg = TransportConfig(line_rate_bps=10e6)

    class Once:
        def __init__(self) -> None:
            self.sent = False
            self.got = 0

        def on_delivery(self, d: object, now: float) -> None:
            self.got += len(d.payload)  # type: ignore[attr-defined]

        def poll(self, now: float) -> list[SendRequest]:
            if self.sent:
                return []
            self.sent = True
            return [SendRequest(1, 1, 0, bytes(500_000), True)]

        def next_timer(self) -> None:
            return None

    sender, receiver = Once(), Once()
    receiver.sent = True
    ta, tb = Transport(0, 0, cfg, "dcqcn"), Transport(0, 1, cfg, "dcqcn")
    AppEndpoint(ta, sender, hosts["a"], addrs)
    AppEndpoint(tb, receiver, hosts["b"], addrs)
    net.loop.run(until=30 * 10**9, stop=lambda: receiver.got == 500_000 and ta.idle(), check_every=64)
    assert receiver.got == 500_000
    marks = net.control("sw1").counter_read("MyEgress.queue_marks", 0)[0]
    sa, sb = ta.stats(), tb.stats()
    assert marks > 0 and sb["ce_received"] == marks
    assert 0 < sb["cnps_sent"] <= sb["ce_received"] and sa["cnps_received"] == sb["cnps_sent"]
    rates = [r for _, r in sa["rate_samples"]]
    assert rates[0] == 10e6 and min(rates) < 5e6


@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_sim_other_collectives_verified(tmp_path: Path, collective: str) -> None:
    """All-gather (bit-exact) and reduce-scatter (chunk of the sum) are verified on every rank."""
    text = SINGLE.read_text().replace("collective: allreduce", f"collective: {collective}")
    assert f"collective: {collective}" in text
    topo = tmp_path / "t.yaml"
    topo.write_text(text)
    result = _sim(topo, tmp_path / "out", schemes=("baseline",), iterations=2)
    assert result.ok, result.failure
    for rank in range(4):
        lines = [json.loads(x) for x in (tmp_path / "out" / "baseline" / f"job0-rank{rank}.jsonl").read_text().splitlines()]
        assert [x["verified"] for x in lines if x["kind"] == "iteration"] == [True, True]


def test_sim_runs_400_gbit_links(tmp_path: Path) -> None:
    """The schema takes 400 Gbit/s and microsecond delays; the run is verified, never beats its bound
    (at 400 Gbit/s the transport's 64-packet window, 256 KiB, is below the bandwidth-delay product)."""
    topo = tmp_path / "t.yaml"
    topo.write_text("""
name: fast
defaults: {bandwidth_mbps: 400Gbit/s, delay_ms: 2us, queue_packets: 512}
mtu: 4096
dcqcn_preset: hpcc-dcqcn-100g
hosts: [{name: h1}, {name: h2}, {name: h3}, {name: h4}]
switches: [{name: s1}]
links: [{a: h1, b: s1}, {a: h2, b: s1}, {a: h3, b: s1}, {a: h4, b: s1}]
jobs: [{id: 0, ranks: [h1, h2, h3, h4], size_bytes: 4MiB, iterations: 2}]
""")
    from emu.topology import load_topology

    loaded = load_topology(topo)
    assert {lk.bandwidth_bps for lk in loaded.plan.links} == {400e9} and {lk.delay_us for lk in loaded.plan.links} == {2}
    result = _sim(topo, tmp_path / "out", schemes=("baseline",))
    assert result.ok, result.failure
    assert result.summary["baseline"]["cct_over_bound"]["mean"] >= 1.0


def test_verifier_checks_every_result_that_differs_and_digests_as_the_worker() -> None:
    """An all-reduce result equal to one checked right passes with its digest; one element off
    on a later rank still fails with the worker's message."""

    from emu.vtime import hosts
    from hostapps import rank
    from hostapps.spec import parse_spec

    spec = parse_spec({
        "job_id": 0, "rank": 0, "ranks": [{"rank": i, "ip": "127.0.0.1", "port": 40000 + i} for i in range(3)],
        "collective": "allreduce", "size_bytes": 4096, "iterations": 1, "compute_s": 0.0, "start_at": None,
        "line_rate_bps": 1e9, "rate_control": {"name": "dcqcn", "params": {}}, "mtu": 1500, "step_timeout_s": 1.0,
        "slices": 1, "seed": 7, "results_dir": "/tmp/x"})
    v = hosts.Verifier(spec)
    inputs = [rank.make_input(spec, r, 0) for r in range(3)]
    for r, x in enumerate(inputs):
        v.add_input(0, r, x)
    right = (inputs[0] + inputs[1]) + inputs[2]
    assert v.check_digest(0, 0, right) == (None, rank.digest(right))
    assert v.check_digest(0, 1, right.copy()) == (None, rank.digest(right))
    wrong = right.copy()
    wrong[5] += 1.0
    problem, digest = v.check_digest(0, 2, wrong)
    assert problem is not None and problem.startswith("iteration 0: allreduce result differs from the float64 sum at "
                                                      "element 5"), problem
    assert digest == rank.digest(wrong)


def test_mode_is_read_from_the_switches() -> None:
    """The controller's mode is what the switches hold (SwitchControl.table_read), so a write
    by another client (a student's p4runtime-shell) shows, and set_mode puts it right."""
    from emu.topology import parse_topology
    from emu.vtime.network import SimNetwork

    topo = parse_topology("""
name: t
defaults: {bandwidth_mbps: 10, delay_ms: 0.1, queue_packets: 64}
hosts: [{name: a}, {name: b}]
switches: [{name: sw1}, {name: sw2}]
links: [{a: a, b: sw1}, {a: sw1, b: sw2}, {a: b, b: sw2}]
jobs: [{id: 0, ranks: [a, b]}]
""")
    net = SimNetwork(topo, seed=1)
    net.program("symphony")
    assert net.read_modes() == {"sw1": "symphony", "sw2": "symphony"} and net.mode_summary() == "symphony"
    ctl = net.control("sw2")
    (e,) = ctl.table_read("MyIngress.symphony_config")
    ctl.table_modify(e.table, e.match, e.action, {**e.params, "mode": 0})  # as another client would
    assert net.programmed_scheme == "symphony"  # the controller's memory is stale...
    assert net.mode_summary() == "mixed: sw1 symphony, sw2 baseline"  # ...the switches are read
    net.set_mode("symphony")  # not skipped: sw2 does not hold it
    assert net.mode_summary() == "symphony"
