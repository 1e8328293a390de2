"""Scheme order (issue 19): blocks in ABBA or seeded random order after warm-up iterations,
so neither a cost on whichever scheme runs first nor a drift of the machine moves the ratio.

The runner's whole path is exercised (block plan, worker specs, JSON lines, metrics with the
warm-ups left out, the bootstrap comparison) over a fake network whose "workers" write the
records the real ones write, with iteration times from a model: a per-scheme base time, a
linear drift over the run's clock, a delay injected into the run's first iterations and 1%
seeded noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from emu import cleanup as cleanup_mod
from emu import runner
from emu.backend import WorkerResult
from emu.mininet import backend as mininet_backend

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"


def test_abba_for_two_schemes() -> None:
    blocks = runner.plan_blocks(("baseline", "symphony"), {0: 20}, {0: 1}, order="abba")
    assert [(b.scheme, b.iterations[0], b.warmup[0], b.first_iteration[0]) for b in blocks] == [
        ("baseline", 10, 1, 0), ("symphony", 20, 1, 0), ("baseline", 10, 1, 11)]
    assert [b.index for b in blocks] == [0, 1, 2]
    assert runner.order_words(blocks, "abba") == "abba: baseline, symphony, baseline; 1 warm-up iteration per block left out"


@pytest.mark.parametrize("order", runner.ORDERS)
@pytest.mark.parametrize("schemes", [("baseline", "symphony"), ("baseline", "symphony", "placebo", "ideal")])
def test_every_scheme_gets_its_iterations_in_any_order(order: str, schemes: tuple[str, ...]) -> None:
    """Any list of schemes (paper-fig's placebo and ideal too): each gets every measured
    iteration once, numbered on from block to block, one warm-up per block."""
    iters, warm = {0: 21, 3: 7}, {0: 1, 3: 2}
    blocks = runner.plan_blocks(schemes, iters, warm, order=order, seed=5)
    for scheme in schemes:
        mine = [b for b in blocks if b.scheme == scheme]
        for job, n in iters.items():
            assert sum(b.iterations[job] for b in mine) == n
            labels = [b.first_iteration[job] + k for b in mine for k in range(b.warmup[job] + b.iterations[job])]
            assert labels == list(range(len(labels)))  # no label used twice, none skipped
    assert all(a.scheme != b.scheme for a, b in zip(blocks, blocks[1:], strict=False))  # merged
    if order == "abba":
        names = [b.scheme for b in blocks]
        assert names == [*schemes, *reversed(schemes[:-1])]


@pytest.mark.parametrize("order", runner.ORDERS)
def test_the_placebo_runs_after_a_symphony_block(order: str) -> None:
    """The placebo is calibrated from Symphony's marks: its first block follows one of Symphony's."""
    for seed in range(8):
        for schemes in (("baseline", "symphony", "placebo"), ("placebo", "baseline", "symphony")):
            names = [b.scheme for b in runner.plan_blocks(schemes, {0: 10}, {0: 1}, order=order, seed=seed)]
            assert names.index("symphony") < names.index("placebo"), names


def test_random_order_comes_from_the_seed() -> None:
    schemes = ("baseline", "symphony", "placebo")
    a = [b.scheme for b in runner.plan_blocks(schemes, {0: 12}, {0: 1}, order="random", seed=3)]
    b = [b.scheme for b in runner.plan_blocks(schemes, {0: 12}, {0: 1}, order="random", seed=3)]
    orders = {tuple(x.scheme for x in runner.plan_blocks(schemes, {0: 12}, {0: 1}, order="random", seed=s))
              for s in range(12)}
    assert a == b and len(orders) > 3


# -- the whole runner over a modelled network ----------------------------------------------


@dataclass
class Model:
    """Iteration times (s): base[scheme] * (1 + drift * t) + delay for the run's first iterations."""

    base: dict[str, float]
    drift: float = 0.0  #: relative slow-down per second of the run's clock
    delay_s: float = 0.0  #: added to each of the run's first ``delayed`` iterations, whatever their scheme
    delayed: int = 0
    noise: float = 0.01
    clock: float = 1000.0
    done: int = 0
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(7))

    def iteration(self, scheme: str) -> tuple[float, float]:
        d = self.base[scheme] * (1 + self.drift * (self.clock - 1000.0)) * (1 + self.noise * self.rng.standard_normal())
        if self.done < self.delayed:
            d += self.delay_s
        start, self.clock, self.done = self.clock, self.clock + d, self.done + 1
        return start, self.clock


class FakeNetwork:
    def set_mode(self, scheme: str, placebo: object = None) -> None:
        self.programmed_scheme = scheme

    def reset_jobs(self) -> None:
        pass

    def read_counters(self) -> dict:
        return {}

    def check_switches(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _modelled_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Model, *, order: str,
                  warmup: int, iterations: int = 20, dilation: str | None = None) -> dict:
    monkeypatch.setattr(mininet_backend, "target_class", lambda name: object)
    monkeypatch.setattr(mininet_backend, "require_root", lambda: None)
    monkeypatch.setattr(mininet_backend, "require_mininet", lambda: None)
    monkeypatch.setattr(cleanup_mod, "find_links", lambda names=None: [])
    monkeypatch.setattr(cleanup_mod, "cleanup", lambda **kw: cleanup_mod.CleanupReport())
    monkeypatch.setattr(runner, "job_warmup", lambda job: warmup)

    def build(self: mininet_backend.MininetBackend, progress: object) -> None:
        self.network = FakeNetwork()

    def run_workload(self: mininet_backend.MininetBackend, workload: object, progress: object) -> list:
        """What the workers write: per iteration the same times on every rank (the model's CCT)."""
        specs = workload.specs  # type: ignore[attr-defined]
        n, warm, first = specs[0]["iterations"], specs[0].get("warmup", 0), specs[0].get("first_iteration", 0)
        times = [model.iteration(workload.scheme) for _ in range(n)]  # type: ignore[attr-defined]
        model.clock += 5.0  # the next block's workers start
        out = []
        for spec in specs:
            path = workload.results_dir / f"job{spec['job_id']}-rank{spec['rank']}.jsonl"  # type: ignore[attr-defined]
            with path.open("a") as fh:
                for k, (start, end) in enumerate(times):
                    head = {"job": spec["job_id"], "rank": spec["rank"], "iteration": first + k}
                    fh.write(json.dumps({"kind": "step", **head, "step": 0, "start": start, "end": end}) + "\n")
                    rec = {"kind": "iteration", **head, "start": start, "end": end, "verified": True}
                    fh.write(json.dumps({**rec, "warmup": True} if k < warm else rec) + "\n")
            out.append(WorkerResult(spec["job_id"], spec["rank"], spec["host"], 0, "", path, path))
        return out

    monkeypatch.setattr(mininet_backend.MininetBackend, "build", build)
    monkeypatch.setattr(mininet_backend.MininetBackend, "run_workload", run_workload)
    monkeypatch.setattr(mininet_backend.MininetBackend, "start_time", lambda self, n: model.clock)
    monkeypatch.setattr(mininet_backend.MininetBackend, "close", lambda self: None)
    result = runner.run(SINGLE, out=tmp_path, iterations=iterations, order=order, dilation=dilation)
    assert result.ok, result.failure
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(result.table)
    return {**result.summary, "_table": " ".join(console.export_text().split())}


def _ratio(summary: dict) -> tuple[float, list[float]]:
    comp = summary["comparison"]["symphony"]["0"]
    return comp["ratio"], comp["ci95"]


def test_a_delay_on_whichever_scheme_runs_first_does_not_move_the_ratio(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's first iteration costs 3x an iteration (the start: ARP-free but cold
    processes, late ranks, the first timers). Before: the baseline always ran first and paid
    it, a 13% "gain". Now it is a warm-up iteration of the first block."""
    base = {"baseline": 1.0, "symphony": 1.0}
    quiet = _modelled_run(tmp_path / "quiet", monkeypatch, Model(base), order="abba", warmup=1)
    hit = _modelled_run(tmp_path / "hit", monkeypatch, Model(base, delay_s=3.0, delayed=1), order="abba", warmup=1)
    old = _modelled_run(tmp_path / "old", monkeypatch, Model(base, delay_s=3.0, delayed=1), order="sequential",
                        warmup=0)
    # the same iterations measured: the same ratio and interval (to rounding: the clock moved by 3 s)
    assert _ratio(hit)[0] == pytest.approx(_ratio(quiet)[0], rel=1e-9)
    assert _ratio(hit)[1] == pytest.approx(_ratio(quiet)[1], rel=1e-9)
    assert hit["symphony"]["iterations"] == hit["baseline"]["iterations"] == 20
    old_ratio, old_ci = _ratio(old)  # the old way: the cost counted against the baseline
    assert old_ratio < 0.9, (old_ratio, old_ci)  # a 13% "gain" from nothing
    assert hit["scheme_order"] == "abba" and [b["scheme"] for b in hit["blocks"]] == ["baseline", "symphony",
                                                                                      "baseline"]
    assert hit["order_words"] == "abba: baseline, symphony, baseline; 1 warm-up iteration per block left out"


def test_abba_cancels_a_linear_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine slows down by 0.2% per second of the run (a warming CPU, a growing load):
    run one after the other the second scheme looks ~5% slower, beyond the noise; in ABBA
    blocks the ratio is the true one (1.0) to well within its noise."""
    base = {"baseline": 1.0, "symphony": 1.0}
    abba = _modelled_run(tmp_path / "abba", monkeypatch, Model(base, drift=0.002, noise=0.002), order="abba",
                         warmup=1)
    seq = _modelled_run(tmp_path / "seq", monkeypatch, Model(base, drift=0.002, noise=0.002), order="sequential",
                        warmup=1)
    ratio, ci = _ratio(abba)
    assert abs(ratio - 1.0) < 0.003 and ci[0] <= 1.0 <= ci[1], (ratio, ci)
    seq_ratio, seq_ci = _ratio(seq)
    assert seq_ratio > 1.04 and seq_ci[0] > 1.0 and seq["verdict"] == "slower", (seq_ratio, seq_ci)


def test_a_real_difference_still_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The order removes the bias, not the effect: Symphony 8% faster stays 8% faster."""
    summary = _modelled_run(tmp_path, monkeypatch, Model({"baseline": 1.0, "symphony": 0.92}, drift=0.005,
                                                         delay_s=3.0, delayed=1), order="abba", warmup=1)
    ratio, ci = _ratio(summary)
    assert abs(ratio - 0.92) < 0.01 and ci[1] < 1.0 and summary["verdict"] == "faster"


@pytest.mark.parametrize(("late_s", "flagged"), [(0.01, False), (0.5, True)])
def test_a_rank_that_starts_more_than_a_step_late_is_flagged(tmp_path: Path, late_s: float, flagged: bool) -> None:
    """Issue 19: the baseline's ranks began 0.35-1.08 s after the common start, unseen. Each
    rank records its lateness; more than a step (here 1 s / 6 steps) marks the run disturbed."""
    from emu import metrics, report

    for rank in range(4):
        with (tmp_path / f"job0-rank{rank}.jsonl").open("w") as fh:
            for k in range(5):
                head = {"job": 0, "rank": rank, "iteration": k}
                fh.write(json.dumps({"kind": "iteration", **head, "start": float(k), "end": k + 1.0,
                                     "verified": True}) + "\n")
            fh.write(json.dumps({"kind": "transport", "job": 0, "rank": rank, "timer_wakeups": 100,
                                 "timer_late_wakeups": 0, "cpu_wait_s": 0.0, "cpu_wall_s": 5.0,
                                 "start_lateness_s": late_s if rank == 2 else 0.001}) + "\n")
    info = {0: metrics.JobInfo("allreduce", 4, 4096, 1e6, 5)}
    load = metrics.overload(metrics.compute_metrics(tmp_path, scheme="baseline", jobs=info))
    assert load["start_lateness_max_ms"] == pytest.approx(late_s * 1000)
    assert load["step_ms"] == pytest.approx(1000 / 6, rel=1e-3)
    assert load["disturbed"] is flagged
    assert ("late start" in report._machine(load)) is flagged
    if flagged:
        assert load["reasons"] == ["a rank began 500 ms after the common start, more than a step (167 ms)"]


class _ProbedExperiment:
    """What choose_dilation needs of an Experiment: probes that are busy below ``keeps_up_at``."""

    def __init__(self, keeps_up_at: float) -> None:
        self.keeps_up_at = keeps_up_at
        self.built: list[float] = []

    def rebuild(self, topology: object, progress: object) -> None:
        self.built.append(topology.dilated_by)  # type: ignore[attr-defined]

    def probe(self, scheme: str, *, dilation: float, **kw: object) -> dict:
        busy = dilation < self.keeps_up_at
        return {"disturbed": busy, "reasons": ["workers waited for a CPU 14% of the time"] if busy else []}


@pytest.mark.parametrize(("keeps_up_at", "chosen", "rebuilt"), [(1, 1, []), (2, 2, [2]), (3, 4, [2, 4]),
                                                                 (100, 4, [2, 4])])
def test_dilation_auto_takes_the_smallest_d_that_keeps_up(keeps_up_at: float, chosen: float,
                                                          rebuilt: list[float]) -> None:
    from emu.topology import load_topology

    exp = _ProbedExperiment(keeps_up_at)
    d, tried = runner.choose_dilation(exp, load_topology(SINGLE), "baseline")  # type: ignore[arg-type]
    assert d == chosen and exp.built == rebuilt
    assert [t["dilation"] for t in tried] == [1.0, *rebuilt]
    assert [t["disturbed"] for t in tried] == [t["dilation"] < keeps_up_at for t in tried]


def test_dilation_auto_is_said_in_the_table() -> None:
    from rich.console import Console

    from emu import report

    summary = {"baseline": {"iterations": 5, "jobs": {}}, "dilation": 2.0,
               "dilation_auto": [{"dilation": 1.0, "disturbed": True}, {"dilation": 2.0, "disturbed": False}]}
    console = Console(width=200, record=True)
    console.print(report.report_table(summary))
    text = " ".join(console.export_text().split())
    assert "--dilation auto chose D = 2 (D = 1 busy, D = 2 kept up)" in text


def test_dilation_auto_through_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--dilation auto probes on the run's own network (a calibration block, kept out of the
    statistics) and the live table says what it chose."""
    summary = _modelled_run(tmp_path, monkeypatch, Model({"baseline": 1.0, "symphony": 1.0}), order="abba",
                            warmup=1, iterations=6, dilation="auto")
    assert summary["dilation_auto"] == [{"dilation": 1.0, "disturbed": False, "reasons": []}]
    assert summary["dilation"] == 1.0 and summary["baseline"]["iterations"] == 6
    assert (tmp_path / "calibration" / "D1" / "job0-rank0.jsonl").is_file()
    assert "--dilation auto chose D = 1 (D = 1 kept up)" in summary["_table"]
