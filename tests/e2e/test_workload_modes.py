"""Compute, stragglers and JCT in both modes (root, Mininet for real time; tests/e2e/workload.yaml):
the straggler's compute is twice the others', it starts its collectives that much later, and the
JCT is the compute plus the collectives' time (one bucket: nothing overlaps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import runner

WORKLOAD = Path(__file__).resolve().parent / "workload.yaml"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["mininet", "sim"])
def test_straggler_and_jct(mininet_env: None, tmp_path: Path, mode: str) -> None:
    result = runner.run(WORKLOAD, schemes=("baseline",), mode=mode, out=tmp_path)  # type: ignore[arg-type]
    assert result.ok, result.failure
    job = result.summary["baseline"]["jobs"]["0"]
    recs = [json.loads(line) for p in sorted((tmp_path / "baseline").glob("job*-rank*.jsonl"))
            for line in p.read_text().splitlines()]
    # Real time starts its block with a warm-up iteration, recorded and left out of the statistics
    # (its compute too, so compute_s and JCT cover the same iterations).
    warm = {r["iteration"] for r in recs if r["kind"] == "iteration" and r.get("warmup")}
    assert len(warm) == (1 if mode == "mininet" else 0)
    recs = [r for r in recs if r.get("iteration") not in warm]
    comp = {(r["rank"], r["iteration"]): r["end"] - r["start"] for r in recs if r["kind"] == "compute"}
    assert len(comp) == 9
    for (rank, _), d in comp.items():
        assert d == pytest.approx(0.12 if rank == 1 else 0.06, abs=1e-5), (rank, d)  # epoch-time rounding
    assert job["compute_s"] == pytest.approx(0.36, abs=1e-4)
    its = [r for r in recs if r["kind"] == "iteration"]
    start1 = {r["iteration"]: r["start"] for r in its if r["rank"] == 1}
    for r in its:  # the others start each collective a compute time (60 ms) before the straggler
        if r["rank"] != 1:
            assert start1[r["iteration"]] - r["start"] == pytest.approx(0.06, abs=0.02), r
    end = {k: max(r["end"] for r in its if r["iteration"] == k) for k in start1}
    comm = sum(end[k] - start1[k] for k in start1)  # from the straggler's start: what it waits for
    assert job["jct_s"] == pytest.approx(job["compute_s"] + comm, rel=0.1), (job, comm)
    assert job["exposed_comm_s"] == pytest.approx(comm, rel=0.3)
