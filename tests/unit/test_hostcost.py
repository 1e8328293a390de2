"""Host processing time in virtual time (emu.vtime.hostcost) and its calibration (emu.hostcal).

No root: the model runs in virtual time; the calibration test runs two real worker
processes over loopback for about a second of traffic.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from emu import hostcal, runner
from emu.backend import UsageError
from emu.vtime import hostcost
from emu.vtime.hostcost import HostCost, HostCostError

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"
#: single.yaml per rank and iteration: 2(N-1) = 6 steps of one 16 KiB chunk; at MTU 1500 a
#: datagram carries 1500 - 20 - 8 - 16 (CTH) = 1456 bytes, so 12 data datagrams per chunk, and
#: the receiver ACKs every 4th (TransportConfig.ack_every) and the last: 3 ACKs per chunk.
DATAGRAMS_PER_ITERATION = 6 * (math.ceil(16384 / 1456) + 3)


def _cold(tmp_path: Path) -> Path:
    """single.yaml without the warm-up iteration the host model runs (the bounds below are a
    cold start's)."""
    path = tmp_path / "single-cold.yaml"
    if not path.exists():
        path.write_text(SINGLE.read_text().replace("    step_timeout_s: 5\n", "    step_timeout_s: 5\n    warmup: 0\n"))
    return path


def _cct(tmp_path: Path, cost: HostCost | None, name: str, **kw: object) -> dict:
    r = runner.run(_cold(tmp_path), schemes=("baseline",), iterations=1, mode="sim", out=tmp_path / name,
                   host_cost=cost, parallel=1, **kw)  # type: ignore[arg-type]
    assert r.ok
    return r.summary["baseline"]


def test_cost_validates_and_loads(tmp_path: Path) -> None:
    with pytest.raises(HostCostError, match="rx_packet_s"):
        HostCost(rx_packet_s=-1e-6)
    with pytest.raises(HostCostError, match="unknown field 'rx_us'"):
        hostcost.from_dict({"rx_us": 3}, "x")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(HostCostError, match=f"{bad}: not JSON"):
        hostcost.load(bad)
    bad.write_text('{"measured": {}}')
    with pytest.raises(HostCostError, match="no 'model'"):
        hostcost.load(bad)
    with pytest.raises(HostCostError, match=r"run_wait_share = 0: give a share in \(0, 1\]"):
        HostCost(run_wait_share=0)
    with pytest.raises(HostCostError, match="switch_run_wait_share"):
        HostCost(switch_run_wait_share=1.5)
    c = HostCost(wake_s=4e-5, tx_packet_s=2e-5, run_wait_s=1e-3, timer_resolution_s=1e-3, run_wait_share=0.5)
    assert c.dilated(4).as_dict() == pytest.approx(
        {k: v if k in hostcost.SHARE_FIELDS else v / 4 for k, v in c.as_dict().items()})
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"model": c.as_dict()}))
    assert hostcost.load(good) == c


def test_calibration_file_needs_the_calibrated_terms(tmp_path: Path) -> None:
    """A file whose model lacks a term calibrate-host always writes is refused naming the file and the
    key (it ran with that cost 0); the later optional terms may be absent (the shipped file has none);
    a null is reported as the file spells it."""
    model = HostCost(wake_s=4e-5, rx_packet_s=1e-5).as_dict()
    f = tmp_path / "h.json"
    f.write_text(json.dumps({"model": {k: v for k, v in model.items() if k != "wake_s"}}))
    with pytest.raises(HostCostError, match=f"{f}: model: 'wake_s' missing") as info:
        hostcost.load(f)
    assert "\n" not in str(info.value)
    f.write_text(json.dumps({"model": {k: model[k] for k in hostcost.REQUIRED_FIELDS}}))
    assert hostcost.load(f) == HostCost(wake_s=4e-5, rx_packet_s=1e-5)
    assert hostcost.load(Path(__file__).resolve().parents[2] / "topologies" / "host-cost.json").wake_s > 0
    f.write_text(json.dumps({"model": {**model, "rx_byte_s": None}}))
    with pytest.raises(HostCostError, match="rx_byte_s = null: give"):
        hostcost.load(f)


def test_host_bound_sender_sets_the_cct(tmp_path: Path) -> None:
    """3 ms per datagram sent is more than its 1.2 ms on the 10 Mbit/s wire: the ring runs at
    the hosts' pace, one iteration = the datagrams each rank sends x 3 ms (plus one hop)."""
    bound = DATAGRAMS_PER_ITERATION * 3e-3  # 0.27 s; without the cost 0.095 s
    got = _cct(tmp_path, HostCost(tx_packet_s=3e-3), "tx")["cct_s"]["mean"]
    assert bound <= got <= 1.02 * bound, (got, bound)
    # the same cost on the receive side: every datagram read, data and ACKs alike
    got_rx = _cct(tmp_path, HostCost(rx_packet_s=3e-3), "rx")["cct_s"]["mean"]
    assert bound <= got_rx <= 1.06 * bound, (got_rx, bound)


def test_shared_cpus_serialise_the_ranks_work(tmp_path: Path) -> None:
    """3 ms of CPU per datagram sent: with a CPU each the 4 ranks send in parallel (one
    iteration = a rank's datagrams x 3 ms); on 2 shared CPUs (emu.vtime.hostcost.CpuPool) they
    take turns, twice that at least, on 1 four times; with 4 as with a CPU each."""
    one = DATAGRAMS_PER_ITERATION * 3e-3
    cost = HostCost(tx_packet_s=3e-3)
    own = _cct(tmp_path, cost, "own")["cct_s"]["mean"]
    assert one <= own <= 1.02 * one, (own, one)
    for cpus in (1, 2):
        got = _cct(tmp_path, cost.with_cpus(cpus), f"cpus{cpus}")["cct_s"]["mean"]
        # (the last step's trailing ACKs may go after the iteration's end: 0.97)
        assert 0.97 * 4 / cpus * one <= got <= 1.1 * 4 / cpus * one, (cpus, got, one)
    assert _cct(tmp_path, cost.with_cpus(4), "cpus4")["cct_s"]["mean"] == pytest.approx(own, rel=0.02)
    with pytest.raises(HostCostError, match="whole number"):
        HostCost(cpus=1.5)
    assert HostCost(cpus=2, run_wait_s=1e-3).dilated(4).cpus == 2  # a count, not a time


def test_wait_for_a_cpu_is_seeded_and_slows_the_ring(tmp_path: Path) -> None:
    cpu = HostCost(wake_s=5e-5, rx_packet_s=1e-5, tx_packet_s=1e-5)
    a = _cct(tmp_path, cpu, "cpu")["cct_s"]["mean"]
    w1 = _cct(tmp_path, cpu.with_wait(5e-4), "w1")
    w2 = _cct(tmp_path, cpu.with_wait(5e-4), "w2")
    assert w1 == w2  # the same seed: the same waits, bit for bit
    assert w1["cct_s"]["mean"] > a * 1.02
    run = json.loads((tmp_path / "w1" / "run.json").read_text())
    assert run["host_cost"]["run_wait_s"] == 5e-4
    # the same mean wait on a quarter of the wake-ups (four times as long): seeded too, and another run
    s1 = _cct(tmp_path, cpu.with_wait(5e-4, 0.25), "s1")
    assert s1 == _cct(tmp_path, cpu.with_wait(5e-4, 0.25), "s2")
    assert s1["cct_s"]["mean"] != w1["cct_s"]["mean"] and s1["cct_s"]["mean"] > a * 1.02


def test_draw_wait_has_the_mean_share_and_shape() -> None:
    import random

    rng = random.Random(3)
    for share, sigma in ((1.0, 0.0), (0.3, 0.0), (0.5, 1.0), (1.0, 0.7)):
        w = [hostcost.draw_wait(rng, 1000.0, share, sigma) for _ in range(100_000)]
        assert sum(w) / len(w) == pytest.approx(1000.0, rel=0.03), (share, sigma)
        assert sum(x > 0 for x in w) / len(w) == pytest.approx(share, abs=0.01)
    assert hostcost.draw_wait(random.Random(1), 1000.0, 1.0, 0.0) == round(random.Random(1).expovariate(1.0) * 1000)


def test_wait_share_recovers_the_share_of_a_known_mixture() -> None:
    """Lateness R + W drawn from the model (R uniform on the timer's spread, W with probability p
    exponential of mean m / p, else 0): the share of draws over 2 ms fitted back gives p."""
    import random

    rng = random.Random(7)
    for m, p, spread in ((4.5e-4, 0.5, (0.0, 1e-3)), (3e-4, 0.6, hostcal.SWITCH_TIMER_SPREAD_S),
                         (6e-4, 0.8, (0.0, 1e-3))):
        n = 400_000
        late = sum(rng.uniform(*spread) + (rng.expovariate(p / m) if rng.random() < p else 0.0) > hostcal.LATE_S
                   for _ in range(n))
        assert late / n == pytest.approx(hostcal.late_share(p, m, spread), abs=4 * (late / n / n) ** 0.5)  # 4 SE
        assert hostcal.wait_share(m, late / n, spread) == pytest.approx(p, abs=0.04)
    # a lognormal wait (the shape of the tail): the share, and the shape from the latest of n wake-ups
    m, p, sigma, spread, n = 4e-4, 0.4, 0.8, (0.0, 1e-3), 40_000
    lags = sorted(rng.uniform(*spread) + (hostcost.draw_wait(rng, m / 1e-9, p, sigma) * 1e-9) for _ in range(n))
    late = sum(x > hostcal.LATE_S for x in lags) / n
    assert hostcal.wait_share(m, late, spread, sigma=sigma) == pytest.approx(p, abs=0.06)
    got_p, got_sigma = hostcal.wait_shape(m, late, lags[-1], n, spread)
    assert got_sigma == pytest.approx(sigma, abs=0.3) and got_p == pytest.approx(p, abs=0.15), (got_p, got_sigma)
    # exponential waits whose latest wake-up the exponential reaches: shape 0
    lags = [rng.uniform(*spread) + rng.expovariate(1 / m) for _ in range(n)]
    late = sum(x > hostcal.LATE_S for x in lags) / n
    assert hostcal.wait_shape(m, late, max(lags), n, spread) == (hostcal.wait_share(m, late, spread), 0.0)
    assert hostcal.wait_shape(m, late, None, 0, spread) == (hostcal.wait_share(m, late, spread), 0.0)
    # no more late wake-ups than the exponential gives, or no wait: every wake-up waits
    assert hostcal.wait_share(4.5e-4, 0.01, (0.0, 1e-3)) == 1.0
    assert hostcal.wait_share(0.0, 0.2, (0.0, 1e-3)) == 1.0
    # more than any share gives: the longest tail
    top = hostcal.wait_share(1e-4, 0.5, (0.0, 1e-3))
    assert 0 < top < 1 and hostcal.late_share(top, 1e-4, (0.0, 1e-3)) < 0.5


def test_switch_cost_makes_the_switch_a_cpu(tmp_path: Path) -> None:
    """3 ms of switch CPU per frame is more than a frame's 1.2 ms on a 10 Mbit/s wire: the one
    switch of single.yaml forwards every rank's datagrams one after the other, so an iteration
    takes at least all of them x 3 ms. A wait for a CPU is seeded like the hosts'."""
    got = _cct(tmp_path, HostCost(switch_packet_s=3e-3), "sw")["cct_s"]["mean"]
    assert got >= 4 * DATAGRAMS_PER_ITERATION * 3e-3 * 0.98, got  # 4 ranks through s1
    w = HostCost(switch_run_wait_s=1e-3)
    a, b = _cct(tmp_path, w, "sw1"), _cct(tmp_path, w, "sw2")
    assert a == b  # the same seed: the same waits, bit for bit
    assert a["cct_s"]["mean"] > _cct(tmp_path, HostCost(), "free")["cct_s"]["mean"] * 1.02


def test_live_cost_reads_a_real_time_run(tmp_path: Path) -> None:
    """The workers' wait per timeslice and the switches' CPU per frame and wait per timeslice."""
    d = tmp_path / "baseline"
    d.mkdir()
    for r, (w, n) in enumerate([(0.3, 100), (0.5, 300)]):
        rec = {"kind": "transport", "job": 0, "rank": r, "cpu_wait_s": w, "cpu_slices": n}
        (d / f"job0-rank{r}.jsonl").write_text(json.dumps({"kind": "step"}) + "\n" + json.dumps(rec) + "\n")
    sw = {"rx": {"1": 600, "2": 400}, "cpu": {"cpu_ns": 50_000_000, "wait_ns": 200_000_000, "slices": 400}}
    (d / "counters.json").write_text(json.dumps({"s1": {"stats": sw}, "s2": {"stats": {"rx": {"1": 5}}}}))
    base = HostCost(rx_packet_s=5e-6)
    got = hostcal.live_cost(base, tmp_path)
    assert got == base.with_wait(0.8 / 400).with_switch(50e-3 / 1000, 0.2 / 400)
    # with the late timer wake-ups recorded (workers' timer_*, switches' io_lag): the shares fitted to them
    for r, (w, n) in enumerate([(0.3, 100), (0.5, 300)]):
        rec = {"kind": "transport", "job": 0, "rank": r, "cpu_wait_s": w / 5, "cpu_slices": n,
               "timer_wakeups": 500, "timer_late_wakeups": 60}
        (d / f"job0-rank{r}.jsonl").write_text(json.dumps(rec) + "\n")
    sw["io_lag"] = {"wakeups": 1000, "late_wakeups": 90}
    (d / "counters.json").write_text(json.dumps({"s1": {"stats": sw}}))
    base = HostCost(rx_packet_s=5e-6, timer_resolution_s=1e-3)
    got = hostcal.live_cost(base, tmp_path)
    share = hostcal.wait_share(0.8 / 5 / 400, 0.12, (0.0, 1e-3))
    sw_share = hostcal.wait_share(0.2 / 400, 0.09, hostcal.SWITCH_TIMER_SPREAD_S)
    assert share < 1 and sw_share < 1
    assert got == base.with_wait(0.8 / 5 / 400, share).with_switch(50e-3 / 1000, 0.2 / 400, sw_share)
    (d / "counters.json").unlink()  # bmv2 or an older run: the switches stay free
    assert hostcal.live_cost(base, tmp_path) == base.with_wait(0.8 / 5 / 400, share)
    # with the workers' CPU time: the CPU terms scaled to it, for the run's wake-ups and data datagrams
    (d / "specs").mkdir()
    for r, (w, n) in enumerate([(0.3, 100), (0.5, 300)]):
        rec = {"kind": "transport", "job": 0, "rank": r, "cpu_wait_s": w / 5, "cpu_slices": n, "cpu_s": 0.05,
               "packets_sent": 1000}
        (d / f"job0-rank{r}.jsonl").write_text(json.dumps(rec) + "\n")
        (d / "specs" / f"job0-rank{r}.json").write_text(json.dumps({"mtu": 1028}))
    base = HostCost(wake_s=1e-4, rx_packet_s=5e-6, rx_byte_s=1e-8)
    predicted = 400 * 1e-4 + 2000 * (5e-6 + 1e-8 * 1000)  # MTU 1028: 1000-byte datagrams
    got = hostcal.live_cost(base, tmp_path)
    assert got == base.scaled_cpu(0.1 / predicted).with_wait(0.8 / 5 / 400)
    assert got.wake_s == pytest.approx(1e-4 * 0.1 / 0.07)
    with pytest.raises(hostcal.CalibrationError, match="no cpu_slices"):
        hostcal.live_cost(base, tmp_path, "symphony")


def test_switch_process_reports_its_cpu() -> None:
    from emu.embedded.switch import process_cpu

    cpu = process_cpu()
    if cpu is None:
        pytest.skip("no /proc/self/schedstat on this kernel")
    assert set(cpu) == {"cpu_ns", "wait_ns", "slices"} and cpu["cpu_ns"] > 0 and cpu["slices"] > 0


def test_host_cost_option_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--host-cost: the host model is for virtual time"):
        runner.run(SINGLE, mode="mininet", out=tmp_path / "m", host_cost=tmp_path / "none.json")
    with pytest.raises(UsageError, match="^--host-cost: .*none.json: cannot read"):
        runner.run(SINGLE, mode="sim", out=tmp_path / "s", host_cost=tmp_path / "none.json")
    named = tmp_path / "named.yaml"
    named.write_text(SINGLE.read_text() + "host_cost: missing.json\n")
    with pytest.raises(UsageError, match=r"^\S*named.yaml: host_cost: \S*missing.json: cannot read"):
        runner.run(named, mode="sim", out=tmp_path / "n")
    scen = tmp_path / "scen.yaml"
    scen.write_text(SINGLE.read_text() + "host_cost: {tx_packet_s: -1}\n")
    with pytest.raises(UsageError, match="host_cost: host cost tx_packet_s = -1"):
        runner.run(scen, mode="sim", out=tmp_path / "t")


def test_scenario_host_cost_file_is_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "cal.json").write_text(json.dumps({"model": HostCost(tx_packet_s=3e-3).as_dict()}))
    scen = tmp_path / "scen.yaml"
    scen.write_text(SINGLE.read_text() + "host_cost: cal.json\n")
    r = runner.run(scen, schemes=("baseline",), iterations=1, mode="sim", out=tmp_path / "r", parallel=1)
    assert r.summary["baseline"]["cct_s"]["mean"] >= DATAGRAMS_PER_ITERATION * 3e-3
    # with the host model virtual time runs the job's warm-up iteration (0) as real time does
    rows = (tmp_path / "r" / "cct.csv").read_text().splitlines()[1:]
    assert [row.split(",")[2] for row in rows] == ["1"]


def test_fit_recovers_a_known_model() -> None:
    """Synthetic callbacks from a known model plus noise: nnls gives the coefficients back."""
    import numpy as np

    rng = np.random.default_rng(1)
    n = 4000
    n_rx, n_tx = rng.integers(0, 6, n), rng.integers(0, 6, n)
    rx_b = n_rx * rng.choice([16, 1472], n)
    tx_b = n_tx * rng.choice([16, 1472], n)
    true = np.array([40e3, 8e3, 3.0, 15e3, 6.0])  # ns, ns per datagram / byte
    cpu = true[0] + true[1] * n_rx + true[2] * rx_b + true[3] * n_tx + true[4] * tx_b + rng.normal(0, 2e3, n)
    samples = np.column_stack([cpu, n_rx, rx_b, n_tx, tx_b]).tolist()
    cost, figures = hostcal.fit([{"samples": samples, "cpu_ns": float(cpu.sum()) + n * 10e3, "wait_ns": 5e6,
                                  "slices": 5000}])
    assert cost.rx_packet_s == pytest.approx(8e-6, rel=0.05) and cost.tx_packet_s == pytest.approx(15e-6, rel=0.05)
    assert cost.rx_byte_s == pytest.approx(3e-9, rel=0.05) and cost.tx_byte_s == pytest.approx(6e-9, rel=0.05)
    assert cost.wake_s == pytest.approx(50e-6, rel=0.05)  # 40 us in the callbacks + 10 us outside
    assert cost.run_wait_s == pytest.approx(1e-6) and figures["r2"] > 0.99


def test_calibrate_host_runs_the_real_worker(tmp_path: Path) -> None:
    """Two real worker processes over loopback: a model with a positive cost per datagram."""
    out = tmp_path / "cal.json"
    doc = hostcal.calibrate(out, ranks=2, size=131072, iterations=2, mtus=(1500,), timeout_s=60, start_delay_s=2.0)
    assert json.loads(out.read_text()) == doc
    cost = hostcost.load(out)
    m = doc["measured"]
    # 2 ranks x 2 iterations x 2 steps of a 64 KiB chunk (46 data datagrams each), plus ACKs
    assert m["datagrams_sent"] > 2 * 2 * 2 * 46 and m["callbacks"] >= 20
    assert cost.per_packet_s(1456) + cost.wake_s > 0 and cost.timer_resolution_s == 1e-3
    assert m["cpu_total_s"] >= m["cpu_in_callbacks_s"] > 0


def test_background_source_waits_for_a_cpu_and_catches_up() -> None:
    """A costed on/off source sends each datagram at or after its time; one that fell due while it
    waited for a CPU goes with the previous one (the real source's catch-up); seeded."""
    from emu.vtime.events import EventLoop, s_to_ns

    def run(wait_s: float) -> tuple[list[int], list[int]]:
        loop = EventLoop()
        sent: list[int] = []

        class Host:
            pass

        host = Host()
        host.loop = loop  # type: ignore[attr-defined]
        host.send = lambda *_: sent.append(loop.now)  # type: ignore[attr-defined]
        times = [i * 1e-3 for i in range(200)]
        hostcost.CostedOnOffSource(host, "10.0.0.2", iter(times), 0.5, 100, lambda: True,  # type: ignore[arg-type]
                                   HostCost(run_wait_s=wait_s, run_wait_share=0.5, run_wait_sigma=0.8), 1, 0)
        loop.run()
        return sent, [s_to_ns(0.5 + t) for t in times]

    sent, due = run(2e-3)
    assert len(sent) == len(due) and sent == sorted(sent)
    assert all(s >= d for s, d in zip(sent, due, strict=True))
    assert all(sent[i] == sent[i - 1] for i in range(1, len(sent)) if due[i] <= sent[i - 1])
    assert len(set(sent)) < len(sent)  # some went together
    assert run(2e-3)[0] == sent  # seeded
    free, due = run(0.0)
    assert free == due  # no wait: on time, as the plain source


@pytest.mark.parametrize("mininet", [True, False])
def test_host_model_links_are_mininets(mininet: bool) -> None:
    """With the host model (``SimNetwork(mininet_links=True)``) a frame crosses its host's link at
    once (a veth pair) and a switch egress in its own bytes' time, as the real-time switch shapes
    it (emu.embedded.switch: no preamble, FCS or gap on a veth); without it, both links serialise
    its bytes plus Ethernet's 24 and add their delay."""
    from emu.topology import parse_topology
    from emu.vtime import frames, network

    topo = parse_topology("""
name: t
defaults: {bandwidth_mbps: 10, delay_ms: 0.1, queue_packets: 64}
hosts: [{name: a}, {name: b}]
switches: [{name: sw1}]
links: [{a: a, b: sw1}, {a: b, b: sw1}]
jobs: [{id: 0, ranks: [a, b]}]
""")
    net = network.SimNetwork(topo, seed=1, mininet_links=mininet)
    net.program("baseline")
    plan = topo.plan
    a, b = plan.host("a"), plan.host("b")
    got: list[int] = []
    link = net.attach_host("a", lambda frame: None)
    net.attach_host("b", lambda frame: got.append(net.loop.now))
    frame = frames.FrameBuilder(a.mac, a.ip, {h.ip: h.mac for h in plan.hosts}).build(b.ip, 5001, 5001, bytes(1000), 0)
    link.send(frame)
    net.loop.run(until=10**9)
    ns_per_byte, delay_ns = 800, 100_000  # 10 Mbit/s; 0.1 ms
    if mininet:
        assert network.MININET_WIRE_OVERHEAD_BYTES == 0
        assert got == [len(frame) * ns_per_byte + delay_ns]
    else:
        assert got == [2 * ((len(frame) + frames.WIRE_OVERHEAD_BYTES) * ns_per_byte + delay_ns)]
