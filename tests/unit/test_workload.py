"""Compute schedules (hostapps.workload) and the schema of stragglers and models, by hand."""

from __future__ import annotations

import pytest

from emu.runner import compute_schedule
from emu.topology import TopologyError, parse_topology
from hostapps.workload import ComputeSchedule, straggler_pattern

BASE = """
name: w
defaults: {bandwidth_mbps: 100Gbit/s, delay_ms: 1us, queue_packets: 256}
hosts: [{name: h1}, {name: h2}, {name: h3}]
switches: [{name: s1}]
links: [{a: h1, b: s1}, {a: h2, b: s1}, {a: h3, b: s1}]
"""


def test_model_schedule_by_hand() -> None:
    """forward 3, backward 6, 3 buckets: bucket b ready at 3 + 2 (b + 1); a factor 2 doubles it."""
    s = ComputeSchedule(forward_s=3.0, backward_s=6.0, buckets=3, factors=(1.0, 2.0), delays=(0.0, 0.5))
    assert [s.ready_after_s(c) for c in range(3)] == [5.0, 7.0, 9.0]
    assert [s.ready_after_s(c) for c in range(3, 6)] == [0.5 + 10.0, 0.5 + 14.0, 0.5 + 18.0]
    assert s.compute_s(0) == 9.0 and s.compute_s(1) == 18.5 and s.compute_s(2) == 9.0
    assert ComputeSchedule.from_dict(s.as_dict()) == s


def test_plain_compute_has_none_before_the_first_collective() -> None:
    s = ComputeSchedule(forward_s=2.0, overlap=False, delays=(1.0, 1.0))
    assert s.ready_after_s(0) == 1.0 and s.ready_after_s(1) == 3.0 and s.compute_s(2) == 2.0


@pytest.mark.parametrize("bad", [{"forward_s": -1}, {"buckets": 0}, {"factors": [0.5]}, {"colour": 1}])
def test_bad_schedule_is_one_line(bad: dict) -> None:
    with pytest.raises(ValueError) as exc:
        ComputeSchedule.from_dict(bad)
    assert "\n" not in str(exc.value)


def test_straggler_patterns() -> None:
    f, d = straggler_pattern(6, factor=2.0, delay_s=0.1, every=3, probability=1.0, seed=(1, 0, 2))
    assert f == (1.0, 1.0, 2.0, 1.0, 1.0, 2.0) and d == (0.0, 0.0, 0.1, 0.0, 0.0, 0.1)
    a = straggler_pattern(40, factor=2.0, delay_s=0.0, every=1, probability=0.5, seed=(1, 0, 2))
    assert a == straggler_pattern(40, factor=2.0, delay_s=0.0, every=1, probability=0.5, seed=(1, 0, 2))
    assert a != straggler_pattern(40, factor=2.0, delay_s=0.0, every=1, probability=0.5, seed=(2, 0, 2))
    assert 5 < a[0].count(2.0) < 35


def test_schema_model_and_stragglers() -> None:
    topo = parse_topology(BASE + """
jobs:
  - id: 0
    ranks: [h1, h2, h3]
    iterations: 4
    model: {layers: 8, layer_bytes: 64KiB, bucket_layers: 2, forward_ms: 2, reduction: 4}
    stragglers:
      - {rank: 1, compute_factor: 3}
      - {rank: 2, nic_mbps: 25Gbit/s}
""")
    job = topo.jobs[0]
    assert job.size_bytes == 2 * 65536 and job.collectives_per_iteration == 4
    assert topo.line_rate_bps("h3") == 25e9 and topo.line_rate_bps("h1") == 100e9
    assert compute_schedule(job, 0, 4, seed=1) == ComputeSchedule(forward_s=0.0005, backward_s=0.001, buckets=4)
    slow = compute_schedule(job, 1, 4, seed=1)
    assert slow.factors == (3.0,) * 4 and slow.compute_s(0) == pytest.approx(3 * 0.0015)
    assert compute_schedule(job, 2, 4, seed=1).factors == ()  # a NIC straggler computes normally


@pytest.mark.parametrize(("job", "words"), [
    ("{id: 0, ranks: [h1, h2], stragglers: [{rank: 2, compute_factor: 2}]}", "ranks 0..1, got 2"),
    ("{id: 0, ranks: [h1, h2], stragglers: [{rank: 1}, {rank: 1}]}", "rank 1 is listed twice"),
    ("{id: 0, ranks: [h1, h2], compute_ms: 1, model: {layers: 2, layer_bytes: 4096, forward_ms: 1}}",
     "takes its compute from the model"),
    ("{id: 0, ranks: [h1, h2], model: {layers: 3, layer_bytes: 4096, bucket_layers: 2, forward_ms: 1}}",
     "do not make whole buckets"),
    ("{id: 0, ranks: [h1, h2], model: {layers: 2, layer_bytes: 4094, forward_ms: 1}}", "multiple of 4"),
    ("{id: 0, ranks: [h1, h2], model: {layers: 2, layer_bytes: 4096, forward_ms: 1, reduction: 0.5}}",
     "reduction"),
])
def test_bad_workloads_are_one_line(job: str, words: str) -> None:
    with pytest.raises(TopologyError, match=words) as exc:
        parse_topology(BASE + f"jobs:\n  - {job}\n")
    assert "\n" not in str(exc.value)


def _run(tmp_path, text: str, mode: str = "sim"):
    import json

    from emu import runner

    f = tmp_path / "w.yaml"
    f.write_text(BASE + text)
    result = runner.run(f, schemes=("baseline",), mode=mode, out=tmp_path / "out")  # type: ignore[arg-type]
    assert result.ok, result.failure
    recs = [json.loads(line) for p in sorted((tmp_path / "out" / "baseline").glob("job*-rank*.jsonl"))
            for line in p.read_text().splitlines()]
    return result.summary["baseline"]["jobs"]["0"], recs


MODEL_JOB = """ecn: {threshold_packets: 50}
jobs:
  - id: 0
    ranks: [h1, h2, h3]
    iterations: 3
    model: {layers: 4, layer_bytes: 64KiB, bucket_layers: BL, forward_ms: 0.1, reduction: 1}
    stragglers: STRAGGLERS
"""


def test_jct_is_compute_plus_exposed_communication(tmp_path) -> None:
    """4 buckets of 64 KiB (a ~16 us all-reduce each at 100 Gbit/s) behind a 200 us backward pass:
    every bucket's all-reduce but the last hides under the backward, so JCT = 3 x 300 us of
    compute + the 3 last buckets' all-reduces; the per-iteration compute is in the records."""
    job, recs = _run(tmp_path, MODEL_JOB.replace("BL", "1").replace("STRAGGLERS", "[]"))
    assert job["iterations"] == 12 and job["verified"]
    assert job["compute_s"] == pytest.approx(3 * 0.0003)
    last = [r for r in recs if r["kind"] == "iteration" and r["iteration"] % 4 == 3]
    by_iter: dict[int, list[dict]] = {}
    for r in last:
        by_iter.setdefault(r["iteration"], []).append(r)
    exposed = sum(max(r["end"] for r in rs) - min(r["start"] for r in rs) for rs in by_iter.values())
    assert job["jct_s"] == pytest.approx(job["compute_s"] + job["exposed_comm_s"])
    assert job["exposed_comm_s"] == pytest.approx(exposed, rel=0.05)
    comp = [r for r in recs if r["kind"] == "compute"]
    assert len(comp) == 9 and all(r["end"] - r["start"] == pytest.approx(0.0003) for r in comp)


def test_one_bucket_exposes_every_all_reduce(tmp_path) -> None:
    """One bucket: no overlap, JCT = compute + the sum of the CCTs (known case)."""
    job, recs = _run(tmp_path, MODEL_JOB.replace("BL", "4").replace("STRAGGLERS", "[]"))
    assert job["iterations"] == 3
    ccts = {}
    for r in (r for r in recs if r["kind"] == "iteration"):
        lo, hi = ccts.get(r["iteration"], (r["start"], r["end"]))
        ccts[r["iteration"]] = (min(lo, r["start"]), max(hi, r["end"]))
    assert job["jct_s"] == pytest.approx(3 * 0.0003 + sum(b - a for a, b in ccts.values()), rel=0.02)


def test_compute_straggler_slows_exactly_its_rank(tmp_path) -> None:
    """Rank 1 computes 3x as long; the others compute as before and wait for it."""
    job, recs = _run(tmp_path, MODEL_JOB.replace("BL", "4").replace("STRAGGLERS", "[{rank: 1, compute_factor: 3}]"))
    comp = {(r["rank"], r["iteration"]): r["end"] - r["start"] for r in recs if r["kind"] == "compute"}
    assert all(d == pytest.approx(0.0009 if rank == 1 else 0.0003) for (rank, _), d in comp.items())
    assert job["compute_s"] == pytest.approx(3 * 0.0009)
    starts = {(r["rank"], r["iteration"]): r["start"] for r in recs if r["kind"] == "iteration"}
    assert all(starts[(1, k)] > starts[(0, k)] + 0.0005 for k in range(3))  # it starts its collectives late


def test_nic_straggler_paces_its_rank(tmp_path) -> None:
    """A 10 Gbit/s NIC on rank 2: its transport never paces above 10 Gbit/s, the others reach 100."""
    job, recs = _run(tmp_path, """ecn: {threshold_packets: 50}
jobs:
  - {id: 0, ranks: [h1, h2, h3], iterations: 2, size_bytes: 256KiB, stragglers: [{rank: 2, nic_mbps: 10Gbit/s}]}
""")
    assert job["verified"]
    peak = {r["rank"]: max(bps for _, bps in r["rate_samples"]) for r in recs if r["kind"] == "transport"}
    assert peak[2] <= 10e9 and peak[0] > 50e9 and peak[1] > 50e9
