"""Metrics on synthetic worker JSON lines, checked against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emu.metrics import (
    JobInfo,
    StepRecord,
    Summary,
    bandwidth_bound_s,
    compute_metrics,
    job_infos,
    step_lead_series,
)
from emu.topology import load_topology

REPO = Path(__file__).resolve().parents[2]


def write_rank(folder: Path, job: int, rank: int, records: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"job{job}-rank{rank}.jsonl").open("w") as fh:
        for rec in records:
            fh.write(json.dumps({"job": job, "rank": rank, **rec}) + "\n")


def it(k: int, start: float, end: float, verified: bool = True) -> dict[str, Any]:
    return {
        "kind": "iteration",
        "iteration": k,
        "start": start,
        "end": end,
        "verified": verified,
        "digest": "x",
    }


def steps(k: int, starts: list[float], end: float, base: int = 0) -> list[dict[str, Any]]:
    ends = starts[1:] + [end]
    return [
        {"kind": "step", "iteration": k, "step": base + s, "start": a, "end": b}
        for s, (a, b) in enumerate(zip(starts, ends, strict=True))
    ]


def make_run(folder: Path) -> None:
    """3 ranks, 2 iterations. CCTs: it0 1.2 - 0.0 = 1.2 s; it1 3.5 - 2.0 = 1.5 s."""
    tr = {
        "kind": "transport",
        "packets_sent": 100,
        "retransmissions": 2,
        "cnps_sent": 1,
        "cnps_received": 3,
        "rate_samples": [[0.0, 1e7]],
    }
    write_rank(
        folder,
        0,
        0,
        [
            *steps(0, [0.0, 0.2, 0.4, 0.6], 1.0),
            it(0, 0.0, 1.0),
            *steps(1, [2.0, 2.2, 2.4, 2.6], 3.0, 4),
            it(1, 2.0, 3.0),
            tr,
        ],
    )
    write_rank(
        folder,
        0,
        1,
        [
            *steps(0, [0.1, 0.3, 0.5, 0.7], 1.2),
            it(0, 0.1, 1.2),
            *steps(1, [2.0, 2.3, 2.5, 2.7], 2.9, 4),
            it(1, 2.0, 2.9),
            tr,
        ],
    )
    write_rank(
        folder,
        0,
        2,
        [
            *steps(0, [0.05, 0.25, 0.45, 0.65], 1.1),
            it(0, 0.05, 1.1),
            *steps(1, [2.1, 2.4, 2.8, 3.2], 3.5, 4),
            it(1, 2.1, 3.5),
            tr,
        ],
    )


INFO = {0: JobInfo("allreduce", 3, 3_000_000, 8e6, iterations=2)}


def test_bandwidth_bound() -> None:
    # 2(N-1)/N * S / B: 2 * 2/3 * 3e6 B * 8 / 8e6 bit/s = 4/3 * 3 = 4 s
    assert bandwidth_bound_s("allreduce", 3, 3_000_000, 8e6) == pytest.approx(4.0)
    assert bandwidth_bound_s("allgather", 3, 3_000_000, 8e6) == pytest.approx(2.0)
    assert bandwidth_bound_s("reducescatter", 4, 1_000_000, 1e6) == pytest.approx(6.0)
    with pytest.raises(ValueError):
        bandwidth_bound_s("allreduce", 3, 10, 0)


def test_cct_by_hand(tmp_path: Path) -> None:
    make_run(tmp_path)
    m = compute_metrics(tmp_path, scheme="baseline", jobs=INFO)
    assert [c.cct_s for c in m.ccts] == pytest.approx([1.2, 1.5])
    assert [c.over_bound for c in m.ccts] == pytest.approx([0.3, 0.375])
    assert m.iterations == 2
    assert m.verified and not m.errors
    s = m.cct_summary()
    assert s.mean == pytest.approx(1.35)
    assert s.p50 == pytest.approx(1.35)
    assert s.p99 == pytest.approx(1.2 + 0.99 * 0.3)
    assert m.over_bound_summary().mean == pytest.approx(0.3375)
    job = m.jobs[0]
    assert job.jct_s == pytest.approx(3.5)
    assert job.transport == {"packets_sent": 300, "retransmissions": 6, "cnps_sent": 3, "cnps_received": 9}
    assert len(m.steps) == 24


def test_step_lead_by_hand() -> None:
    # rank 0 enters steps 0..3 at 0, 1, 2, 3; rank 1 at 0, 2.5, 3, 3.5; both end at 4.
    # lead: [0,1) 0, [1,2) 1, [2,2.5) 2, [2.5,3) 1, [3,3.5) 1, [3.5,4] 0
    # max 2, time average (1 + 2*0.5 + 0.5 + 0.5) / 4 = 0.75
    recs = [StepRecord(0, 0, 0, s, t, t + 1) for s, t in enumerate([0.0, 1.0, 2.0, 3.0])]
    starts1 = [0.0, 2.5, 3.0, 3.5]
    recs += [StepRecord(0, 1, 0, s, t, (starts1 + [4.0])[s + 1]) for s, t in enumerate(starts1)]
    times, lead = step_lead_series(recs, samples=40_001)
    assert times[0] == 0.0 and times[-1] == 4.0
    assert lead.max() == 2
    assert lead.mean() == pytest.approx(0.75, abs=1e-3)


def test_step_lead_in_metrics(tmp_path: Path) -> None:
    make_run(tmp_path)
    m = compute_metrics(tmp_path, scheme="baseline", jobs=INFO, lead_samples=20_001)
    # Step ordinals (iteration 0: 0-3, iteration 1: 4-7) entered by rank 0/1/2 over [0, 3.5] s:
    # iteration 0: in each 0.2 s block rank 0 leads by 1 for 0.1 s (0.0-0.1, ..., 0.6-0.7): 0.4
    # 0.7-2.0 all in step 3: 0; 2.0-2.1 rank 2 still in 3: 0.1; 2.1-2.2 all in 4: 0
    # 2.2-2.6 one rank a step ahead of rank 2 (5/4, 5/5/4, 6/5/5, 6/6/5): 4 * 0.1 = 0.4
    # 2.6-2.8 ranks 0 and 1 in 7, rank 2 in 5: lead 2 for 0.2 s: 0.4
    # 2.8-3.2 rank 2 in 6: 0.4; 3.2-3.5 all in 7: 0
    # max 2, time average (0.4 + 0.1 + 0.4 + 0.4 + 0.4) / 3.5 = 1.7 / 3.5
    assert m.step_lead_max == 2
    assert m.step_lead_mean == pytest.approx(1.7 / 3.5, abs=1e-3)


def test_incomplete_and_unverified(tmp_path: Path) -> None:
    make_run(tmp_path)
    # rank 2 failed iteration 1: drop its record, add an error; rank 1 did not verify it0.
    lines = (tmp_path / "job0-rank2.jsonl").read_text().splitlines()
    lines = [ln for ln in lines if '"iteration": 1, "start": 2.1' not in ln]
    lines.append(json.dumps({"kind": "error", "job": 0, "rank": 2, "message": "step 7: no data"}))
    lines.append("{truncated")
    (tmp_path / "job0-rank2.jsonl").write_text("\n".join(lines) + "\n")
    text = (tmp_path / "job0-rank1.jsonl").read_text().replace('"verified": true', '"verified": false', 1)
    (tmp_path / "job0-rank1.jsonl").write_text(text)
    m = compute_metrics(tmp_path, scheme="symphony", jobs=INFO)
    assert [c.iteration for c in m.ccts] == [0]
    assert not m.ccts[0].verified
    assert not m.verified
    joined = " | ".join(m.errors)
    assert "step 7: no data" in joined
    assert "iteration 1: 2 of 3 ranks" in joined
    assert "1 of 2 iterations complete" in joined
    assert "malformed" in joined


def test_missing_job_is_not_verified(tmp_path: Path) -> None:
    m = compute_metrics(tmp_path, scheme="baseline", jobs=INFO)
    assert not m.verified and m.iterations == 0
    assert m.cct_summary() == Summary(None, None, None, 0)
    assert m.step_lead_max is None


def test_without_job_info(tmp_path: Path) -> None:
    make_run(tmp_path)
    m = compute_metrics(tmp_path, scheme="baseline")
    assert m.jobs[0].nranks == 3
    assert m.ccts[0].bound_s is None and m.over_bound_summary().mean is None
    assert m.verified


def test_job_infos_from_topology() -> None:
    info = job_infos(load_topology(REPO / "topologies" / "default.yaml"))[0]
    assert (info.collective, info.nranks, info.size_bytes, info.bandwidth_bps) == (
        "allreduce",
        8,
        262144,
        5e6,
    )
    # 2 * 7/8 * 262144 B * 8 / 5e6 bit/s
    assert info.bound_s == pytest.approx(0.73400, abs=1e-5)


# -- comparing schemes: a ratio with its interval and a verdict (issue 9) -------------


def test_compare_few_iterations_is_not_a_gain() -> None:
    """Issue 9: a setting that never marks read "3.0% lower with Symphony" after 4 iterations."""
    from emu.metrics import TOO_FEW, compare_ccts

    comp = compare_ccts([1.0, 1.1, 0.95, 1.05], [0.97, 1.02, 0.96, 0.99])
    assert comp.verdict == TOO_FEW and comp.ci_low is None
    assert comp.ratio == pytest.approx(0.985 / 1.025)
    assert comp.words() == "0.96 (4 vs 4 iterations, 5 needed): too few iterations to tell"


@pytest.mark.parametrize(
    ("effect", "verdict"),
    [(0.93, "faster"), (1.0, "within the noise"), (1.08, "slower")],
)
def test_compare_verdicts(effect: float, verdict: str) -> None:
    import numpy as np

    from emu.metrics import compare_ccts

    rng = np.random.default_rng(3)
    base = rng.normal(1.0, 0.03, 20)
    other = rng.normal(effect, 0.03, 20)
    comp = compare_ccts(base, other, seed=1)
    assert comp.verdict == verdict, comp
    assert comp.ci_low < comp.ratio < comp.ci_high
    assert comp.ratio == pytest.approx(other.mean() / base.mean())
    assert (comp.ci_high - comp.ci_low) < 0.06  # 20 iterations at 3% spread: a tight interval
    if verdict == "within the noise":
        assert comp.ci_low < 1 < comp.ci_high
    assert compare_ccts(base, other, seed=1) == comp  # seeded: reproducible


def test_compare_identical_values() -> None:
    from emu.metrics import NOISE, compare_ccts

    comp = compare_ccts([2.0] * 6, [2.0] * 6)
    assert (comp.ratio, comp.ci_low, comp.ci_high, comp.verdict) == (1.0, 1.0, 1.0, NOISE)


def test_overload_says_when_the_machine_disturbed_a_run(tmp_path: Path) -> None:
    """Issue 9: with a nice-19 compiler beside it a run gave 1.007 instead of 0.949, and said nothing."""
    from emu.metrics import overload

    def run(late: int, wait_s: float) -> Any:
        tr = {"kind": "transport", "packets_sent": 10, "timer_wakeups": 100, "timer_late_wakeups": late,
              "timer_lag_max_s": 0.041 if late else 0.0008, "cpu_s": 1.0, "cpu_wait_s": wait_s, "cpu_wall_s": 2.0}
        folder = tmp_path / f"r{late}-{wait_s}"
        for rank in range(2):
            write_rank(folder, 0, rank, [*steps(0, [0.0, 0.1], 0.2), it(0, 0.0, 0.2), tr])
        return compute_metrics(folder, scheme="baseline")

    quiet = overload(run(1, 0.02), {"io_wakeups": 1000, "io_late_wakeups": 3, "io_lag_max_us": 2500})
    assert quiet["disturbed"] is False and quiet["reasons"] == []
    assert quiet["worker_late_wakeups"] == 0.01 and quiet["worker_cpu_wait"] == 0.01
    busy = overload(run(21, 0.5), {"io_wakeups": 1000, "io_late_wakeups": 90, "io_lag_max_us": 30_000})
    assert busy["disturbed"] is True
    assert busy["reasons"] == ["21% of worker wake-ups over 2 ms late (max 41 ms)",
                               "workers waited for a CPU 25% of the time",
                               "9% of switch departures over 2 ms late (max 30 ms)"]
    none = overload(compute_metrics(tmp_path / "empty", scheme="x"))  # virtual time: nothing measured
    assert none["disturbed"] is False and none["worker_late_wakeups"] is None
