"""Sweep a scenario's DCQCN, ECN and Symphony settings in virtual time; compare the schemes.

Usage::

    .venv/bin/python benchmarks/dc_sweep.py TOPOLOGY [--set KEY=V1,V2,...]... [--seeds 1,2,3]
        [--size 16MiB] [--iterations 5] [--scheme both|baseline|symphony] [--jobs 1]
        [--out DIR]

Every combination of the ``--set`` values (their Cartesian product) is one configuration; a
KEY is a dotted path into the topology file (``dcqcn.rate_increase_period``,
``ecn.kmin_packets``, ``symphony.slope``, ``jobs.0.size_bytes``, ``background`` = ``none``
to drop the background sources). Each configuration runs once per seed and scheme with
``symphony-emu run --mode sim`` (emu.runner.run), each scheme as its own simulation of the
same scenario and seed, so the two schemes share everything but Symphony's marking. A
baseline run does not depend on the ``symphony.*`` keys, so configurations that differ only
there share one baseline run per seed.

Output: one row per configuration with the baseline's and Symphony's mean and p99 CCT (ms,
pooled over seeds) and CCT/bound, the mean step lead of each, Symphony's and the queue's
marks per run, and the ratio of mean CCTs Symphony/baseline with its 95% BCa bootstrap
interval over the pooled iterations (emu.metrics.compare_ccts) and the verdict; per-seed
ratios follow. ``--out`` keeps each run's results folder (``report`` works on them) and
``sweep.jsonl``, one line per run; an existing run folder is reused, so an interrupted sweep
resumes. Virtual time is deterministic: a run's result does not depend on the machine's
load, only its wall time does, so a sweep may share the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The sweep's core, shared with `symphony-emu sweep` (emu.sweep); apply_override and parse_value
# are re-exported for tests/unit/test_dc_sweep.py.
from emu.sweep import (  # noqa: E402
    SweepError,
    _worker_init,
    apply_override,  # noqa: F401
    check_configs,
    config_id,
    config_label,
    config_yaml,
    parse_set,
    parse_value,  # noqa: F401
)
from emu.sweep import stop_pool as _stop_pool  # noqa: E402


def run_one(topology: str, config: list[tuple[str, Any]], scheme: str, seed: int, size: int | None,
            iterations: int | None, out: str, lock: str | None = None) -> dict[str, Any]:
    """One scheme of one configuration and seed; returns the row for ``sweep.jsonl``.

    ``lock``: a file to hold a shared flock on while the run lasts (so a benchmark that
    needs the whole machine can take it exclusively between two runs).
    """
    import fcntl

    from emu import runner

    out_dir = Path(out)
    summary_file = out_dir / "summary.json"
    if not summary_file.exists():
        if out_dir.exists():  # an interrupted run's partial folder
            shutil.rmtree(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        topo_file = out_dir.parent / f"{out_dir.name}.yaml"
        topo_file.write_text(config_yaml(Path(topology).read_text(), config))
        lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666) if lock else None
        try:
            if lock_fd is not None:
                fcntl.flock(lock_fd, fcntl.LOCK_SH)
            t0 = time.perf_counter()
            result = runner.run(topo_file, schemes=(scheme,), iterations=iterations, size=size, mode="sim",
                                out=out_dir, seed=seed)
            (out_dir / "wall_s").write_text(f"{time.perf_counter() - t0:.3f}\n")
        finally:
            if lock_fd is not None:
                os.close(lock_fd)
        if not result.ok:
            raise RuntimeError(f"{out_dir}: {result.failure}")
    return run_row(out_dir, config, scheme, seed)


def run_row(out_dir: Path, config: Sequence[tuple[str, Any]], scheme: str, seed: int) -> dict[str, Any]:
    """The ``sweep.jsonl`` row of one finished run folder.

    ``jobs``: job id (str) -> ``ccts`` (s, per iteration), ``cct_over_bound``, ``lead_mean``,
    ``lead_max``, ``jct_s`` (or null); jobs are never pooled (DESIGN.md 7). The top-level
    ``ccts``, ``cct_over_bound``, ``lead_mean`` and ``lead_max`` repeat the job's when the run has
    one job and are null with several.
    """
    s = json.loads((out_dir / "summary.json").read_text())[scheme]
    ccts: dict[str, list[float]] = {}
    with (out_dir / "cct.csv").open() as f:
        for r in csv.DictReader(f):
            if r["scheme"] == scheme:
                ccts.setdefault(str(int(r["job"])), []).append(float(r["cct_s"]))
    jobs = {j: {"ccts": ccts.get(j, []), "cct_over_bound": b["cct_over_bound"]["mean"],
                "lead_mean": b["step_lead"]["mean"], "lead_max": b["step_lead"]["max"],
                "jct_s": b.get("jct_s")}
            for j, b in s["jobs"].items()}
    one = next(iter(jobs.values())) if len(jobs) == 1 else None
    return {"config": config, "scheme": scheme, "seed": seed, "verified": s["verified"], "jobs": jobs,
            "ccts": one["ccts"] if one else None,
            "cct_over_bound": one["cct_over_bound"] if one else None,
            "lead_mean": one["lead_mean"] if one else None, "lead_max": one["lead_max"] if one else None,
            "symphony_marks": s["marks"]["symphony"], "queue_marks": s["marks"]["queue"], "drops": s["drops"],
            "dir": str(out_dir)}


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def _job_means(row: dict[str, Any]) -> str:
    """``job 0 1.234 ms lead 2.10, job 1 ...`` for the progress line."""
    return ", ".join(f"job {j} {1e3 * statistics.fmean(b['ccts']):.3f} ms lead {_fmt(b['lead_mean'], '.2f')}"
                     for j, b in row["jobs"].items() if b["ccts"])


def comparison_rows(configs: Sequence[Sequence[tuple[str, Any]]], rows: dict[tuple[str, str, int], dict[str, Any]],
                    seeds: Sequence[int], scenario: Sequence[Any]) -> list[list[str]]:
    """The results table's cells: one row per configuration and job (jobs are never pooled).

    A baseline run is shared by the configurations that differ only in ``symphony.*`` keys.
    """
    from emu.metrics import compare_ccts, comparison_words

    out = []
    for config in configs:
        base_id = config_id([(k, v) for k, v in config if not k.startswith("symphony.")], *scenario)
        base = [rows[(base_id, "baseline", s)] for s in seeds if (base_id, "baseline", s) in rows]
        sym_id = config_id(config, *scenario)
        sym = [rows[(sym_id, "symphony", s)] for s in seeds if (sym_id, "symphony", s) in rows]
        job_ids = sorted({j for r in base + sym for j in r["jobs"]}, key=int)
        for job in job_ids:
            cells = [config_label(config) + (f" job {job}" if len(job_ids) > 1 else "")]
            per = {"base": [r["jobs"][job] for r in base if job in r["jobs"]],
                   "sym": [r["jobs"][job] for r in sym if job in r["jobs"]]}
            b_ccts = [c for b in per["base"] for c in b["ccts"]]
            s_ccts = [c for b in per["sym"] for c in b["ccts"]]
            for runs, blocks, ccts, is_base in ((base, per["base"], b_ccts, True), (sym, per["sym"], s_ccts, False)):
                if not ccts:
                    cells += ["-"] * (4 if is_base else 3)
                    continue
                cells.append(f"{1e3 * statistics.fmean(ccts):.3f}/{1e3 * _pct(ccts, 99):.3f}")
                if is_base:
                    cells.append(_fmt(_mean([b["cct_over_bound"] for b in blocks]), ".2f"))
                cells.append(_fmt(_mean([b["lead_mean"] for b in blocks]), ".2f"))
                marks = statistics.fmean(r["queue_marks"] if is_base else r["symphony_marks"] for r in runs)
                cells.append(f"{marks:.0f}" if is_base else
                             f"{marks:.0f}+{statistics.fmean(r['queue_marks'] for r in runs):.0f}q")
            if b_ccts and s_ccts:
                comp = compare_ccts(b_ccts, s_ccts)
                cells.append(comparison_words("symphony", comp.as_dict()).split(" (")[0] +
                             (f" [{comp.ci_low:.2f}, {comp.ci_high:.2f}] {comp.verdict}" if comp.ci_low is not None
                              else f" {comp.verdict}"))
                cells.append(" ".join(f"{statistics.fmean(sb['ccts']) / statistics.fmean(bb['ccts']):.2f}"
                                      for bb, sb in zip(per["base"], per["sym"], strict=False)
                                      if bb["ccts"] and sb["ccts"]))
            else:
                cells += ["-", "-"]
            out.append(cells)
    return out


class _Terminated(KeyboardInterrupt):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise _Terminated(signum)


def _pct(values: Sequence[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("topology")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2", help="a swept key (repeatable)")
    ap.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    ap.add_argument("--size", default=None, help="bytes per rank, e.g. 4MiB (default: the topology's)")
    ap.add_argument("--iterations", type=int, default=None, help="collectives per run (default: the topology's)")
    ap.add_argument("--scheme", choices=["both", "baseline", "symphony"], default="both")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel (processes; default 1)")
    ap.add_argument("--lock", default=None, metavar="FILE",
                    help="hold a shared flock on FILE during each run (e.g. /tmp/symphony-quiet.lock)")
    ap.add_argument("--out", default=None, help="keep the runs here (default: a folder under /tmp)")
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from emu.cli import parse_size

    console = Console(width=None if sys.stdout.isatty() else 220)
    try:
        axes = [parse_set(a) for a in args.set]
        seeds = [int(s) for s in args.seeds.split(",")]
    except (SweepError, ValueError) as exc:
        console.print(f"error: {exc}")
        return 2
    try:
        size = parse_size(args.size) if args.size else None
    except Exception as exc:  # click.BadParameter: the CLI's own message  # noqa: BLE001
        console.print(f"error: --size {args.size}: {getattr(exc, 'message', exc)}")
        return 2
    for name, value in (("--size", size), ("--iterations", args.iterations), ("--jobs", args.jobs)):
        if value is not None and value < 1:
            console.print(f"error: {name} {value}: give 1 or more")
            return 2
    schemes = ["baseline", "symphony"] if args.scheme == "both" else [args.scheme]
    out_root = Path(args.out or f"/tmp/dc_sweep-{os.getpid()}")
    configs = [list(zip([k for k, _ in axes], values, strict=True))
               for values in itertools.product(*[v for _, v in axes])]
    scenario = (str(Path(args.topology).resolve()), size, args.iterations)
    tasks: dict[tuple[str, str, int], tuple[Any, ...]] = {}
    for config in configs:
        base_config = [(k, v) for k, v in config if not k.startswith("symphony.")]
        for seed in seeds:
            for scheme in schemes:
                cfg = base_config if scheme == "baseline" else config
                run_dir = out_root / config_id(cfg, *scenario) / f"{scheme}-seed{seed}"
                tasks[(config_id(cfg, *scenario), scheme, seed)] = (args.topology, cfg, scheme, seed, size, args.iterations,
                                                         str(run_dir), args.lock)
    try:  # every configuration must load before any run starts
        check_configs(args.topology, configs)
    except (SweepError, OSError, yaml.YAMLError) as exc:
        console.print(f"error: {exc}")
        return 2
    console.print(f"{len(configs)} configuration(s) x {len(seeds)} seed(s): {len(tasks)} run(s) in {out_root}")
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    try:
        out_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "a file, not a folder" if out_root.is_file() else exc.strerror or exc
        console.print(f"error: --out {out_root}: {why}")
        return 2
    from emu.backend import RunError, UsageError
    from emu.topology import TopologyError

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with contextlib.ExitStack() as stack:
            log = stack.enter_context((out_root / "sweep.jsonl").open("a"))
            if args.jobs > 1:  # processes; with one job the runs stay in this process, in order
                pool = ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("fork"),
                                           initializer=_worker_init, initargs=(os.getpid(),))
                stack.callback(_stop_pool, pool)
                pending = {key: pool.submit(run_one, *task) for key, task in tasks.items()}
                results = ((key, fut.result()) for key, fut in pending.items())
            else:
                results = ((key, run_one(*task)) for key, task in tasks.items())
            for key, row in results:
                rows[key] = row
                log.write(json.dumps(row) + "\n")
                log.flush()
                console.print(f"  {config_label(row['config'])} {row['scheme']} seed {row['seed']}: mean CCT"
                              f" {_job_means(row)}, marks {row['symphony_marks']}+{row['queue_marks']}")
    except KeyboardInterrupt as exc:
        console.print(f"interrupted: the finished runs are kept in {out_root}; the same command resumes")
        return 128 + getattr(exc, "signum", signal.SIGINT)
    except (SweepError, TopologyError, UsageError, RunError, RuntimeError) as exc:
        console.print(f"error: {exc}")
        return 1

    title = f"{Path(args.topology).name}, size {args.size or 'as given'}, seeds {args.seeds}"
    table = Table(title=title)
    for col in ("configuration", "base mean/p99 ms", "base CCT/bound", "base lead", "base q-marks",
                "sym mean/p99 ms", "sym lead", "sym marks", "sym/base [95% CI]", "per seed"):
        table.add_column(col, overflow="fold")
    for cells in comparison_rows(configs, rows, seeds, scenario):
        table.add_row(*cells)
    console.print(table)
    console.print("CCTs pooled over seeds; the interval is over the pooled iterations; marks per run.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
