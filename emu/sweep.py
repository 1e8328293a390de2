"""Parameter sweeps in virtual time: ``symphony-emu sweep SPEC.yaml``.

A sweep is a grid of dotted-key overrides of one or more scenario files (their Cartesian
product), each run once per seed with a list of schemes (emu.runner.SCHEMES), on a local
process pool or a Dask distributed cluster (``--scheduler ADDRESS``). The spec file::

    topology: topologies/dc-leafspine-16.yaml    # or a list: one grid per file (ring sizes, jobs)
    schemes: [baseline, symphony, placebo]
    seeds: [1, 2, 3]
    size: 4MiB                                   # optional: bytes per rank (default: the file's)
    iterations: 5                                # optional
    grid:                                        # dotted keys into the scenario file
      symphony.slope: [0.02, 0.1]
      ecn.kmin_packets: [50, 100]
      dcqcn.rate_increase_period: [55us, 300us]
      links.18.bandwidth_mbps: [25Gbit/s]        # a straggler: one host's access link
      background: [none]                         # drop the background sources

Keys are paths into the scenario's YAML (``jobs.0.size_bytes``; list indices as numbers);
``background: none`` removes the background. Paths relative to the spec file resolve there.

Runs: a configuration and seed are two runs of :func:`emu.runner.run` (``--mode sim``, schemes
one after the other in the task's process): the schemes that do not read Symphony's settings
(baseline) with the ``symphony.*`` keys left out, so configurations that differ only there
share one baseline per seed, and the rest (symphony, placebo: the placebo is calibrated from
the symphony run of the same task) with every key. Each run's folder is
``OUT/<config id>/seed<N>-<schemes>/`` with the run's ``summary.json``; a folder with a summary
is reused, a partial one redone, so an interrupted sweep resumes where it stopped. Virtual
time is deterministic: results do not depend on the machine's load or the pool's order.

Output: ``OUT/sweep.csv`` (one row per configuration, seed, scheme and job: mean CCT, JCT,
CCT/bound, step lead, marks) and ``OUT/sweep.md`` (per configuration and job: each scheme's
mean CCT over the pooled iterations of every seed and its ratio to the baseline with the 95%
BCa interval, emu.metrics.compare_ccts, and the verdict), plus the placebo's achieved volume.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import re
import shutil
import signal
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from emu.topology import pydantic_problem, resolve_topology, shipped_topologies
from emu.units import parse_size

log = logging.getLogger(__name__)

#: Key prefixes the baseline does not read: configurations that differ only there share its runs.
SYMPHONY_ONLY_PREFIXES = ("symphony.",)
#: The schemes that read the ``symphony.*`` keys (the rest run with them left out).
SYMPHONY_SCHEMES = ("symphony", "placebo")


class SweepError(ValueError):
    """A bad spec, key or value; ``str()`` is one line naming it."""


# --------------------------------------------------------------------------------------
# Overrides of a scenario file
# --------------------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A command-line value: a number (``0.01``, ``55e-6``), else YAML scalar syntax (``true``, ``300us``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    value = yaml.safe_load(text)
    return text if value is None and text not in ("null", "~") else value


def parse_set(arg: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2`` -> (KEY, [V1, V2])."""
    key, sep, values = arg.partition("=")
    if not sep or not key or not values:
        raise SweepError(f"--set {arg!r}: give KEY=VALUE[,VALUE...]")
    return key, [parse_value(v) for v in values.split(",")]


def apply_override(doc: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of the loaded scenario ``doc`` to ``value`` (in place).

    ``background`` = ``none`` drops the background sources. SweepError for a path that does
    not fit the document (an index past a list, a scalar on the way).
    """
    if key == "background" and value == "none":
        doc.pop("background", None)
        return
    parts = key.split(".")
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise SweepError(f"{key}: {'.'.join(parts[: i + 1])} is not an index of the list")
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
        if not isinstance(node, (dict, list)):
            raise SweepError(f"{key}: {'.'.join(parts[: i + 1])} is not a mapping")
    if isinstance(node, list):
        raise SweepError(f"{key}: the last part must name a field, not an index")
    node[parts[-1]] = value


def config_yaml(text: str, config: Sequence[tuple[str, Any]]) -> str:
    """The scenario file ``text`` with the configuration's overrides applied, as YAML."""
    doc = yaml.safe_load(text)
    for key, value in config:
        apply_override(doc, key, value)
    return yaml.safe_dump(doc, sort_keys=False)


def config_label(config: Sequence[tuple[str, Any]]) -> str:
    """``key=value key=value``, or ``(file as given)`` for no override."""
    return " ".join(f"{k}={v}" for k, v in config) or "(file as given)"


def config_id(config: Sequence[tuple[str, Any]], *scenario: Any) -> str:
    """Folder name of one configuration of one scenario (file, size, iterations): 10 hex digits."""
    return hashlib.sha1(json.dumps([list(config), *scenario], default=str).encode()).hexdigest()[:10]


def check_configs(topology: str | Path, configs: Sequence[Sequence[tuple[str, Any]]]) -> None:
    """Load the scenario with each configuration's overrides; SweepError naming the first bad one."""
    import tempfile

    from emu.topology import TopologyError, load_topology

    text = Path(topology).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:
            path = Path(tmp) / Path(topology).name
            path.write_text(config_yaml(text, config))
            try:
                load_topology(path)
            except TopologyError as exc:
                text_err = re.sub(r" \(line \d+\)", "", str(exc).replace(str(path), str(topology)))
                raise SweepError(f"{config_label(config)}: {text_err}") from None


def base_config(config: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The configuration without the keys the baseline does not read (``symphony.*``, and
    ``symphony`` itself: a whole section per grid value, e.g. one variant per entry)."""
    return [(k, v) for k, v in config if k != "symphony" and not k.startswith(SYMPHONY_ONLY_PREFIXES)]


# --------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------


class SweepSpec(BaseModel):
    """A sweep spec file (see the module docstring); paths relative to the file resolve there."""

    model_config = ConfigDict(extra="forbid")

    topology: list[str] = Field(min_length=1)
    schemes: list[str] = Field(default_factory=lambda: ["baseline", "symphony"], min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [1], min_length=1)
    size: int | str | None = None
    iterations: int | None = Field(default=None, ge=1)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("topology", mode="before")
    @classmethod
    def _one_or_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("schemes")
    @classmethod
    def _known_schemes(cls, value: list[str]) -> list[str]:
        from emu.runner import CALIBRATED_FROM, SCHEMES

        for s in value:
            if s not in SCHEMES:
                raise ValueError(f"unknown scheme {s!r}: use {', '.join(SCHEMES)}")
            if s in CALIBRATED_FROM and CALIBRATED_FROM[s] not in value:
                raise ValueError(f"{s} is calibrated from {CALIBRATED_FROM[s]}: add it")
        if len(set(value)) != len(value):
            raise ValueError("each scheme once")
        return value

    @field_validator("grid")
    @classmethod
    def _non_empty_axes(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in value.items():
            if not values:
                raise ValueError(f"{key}: give at least one value")
        return value


def load_spec(path: str | Path) -> tuple[SweepSpec, list[Path]]:
    """Parse a spec file; (spec, scenario paths resolved). SweepError (one line) when it is bad."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SweepError(f"{path}: cannot read the sweep spec ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise SweepError(f"{path}: a sweep spec is a mapping (topology, schemes, seeds, grid, ...)")
    try:
        spec = SweepSpec.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
        where = ".".join(str(p) for p in err["loc"]) or "(top)"
        problem, fix = pydantic_problem(err, SweepSpec)
        raise SweepError(f"{path}: {where}: {problem}" + (f"; {fix}" if fix else "")) from None
    topologies = []
    for t in spec.topology:
        p = resolve_topology(t, base=path.parent)
        if not p.exists():
            shipped = shipped_topologies()
            close = difflib.get_close_matches(Path(t).stem, shipped, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; give a path or a shipped name ({', '.join(shipped)})"
            raise SweepError(f"{path}: topology: {t}: no such file{hint}")
        topologies.append(p.resolve())
    return spec, topologies


# --------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepTask:
    """One run of :func:`emu.runner.run`: some schemes of one configuration, scenario and seed."""

    topology: str
    config: tuple[tuple[str, Any], ...]
    schemes: tuple[str, ...]
    seed: int
    size: int | None
    iterations: int | None
    out: str

    @property
    def key(self) -> str:
        return self.out


def plan_tasks(spec: SweepSpec, topologies: Sequence[Path], out: Path) -> tuple[list[SweepTask], list[dict[str, Any]]]:
    """The runs of a sweep and its configurations.

    Returns (tasks in run order, configurations: ``{"topology", "config", "tasks": {scheme:
    [task out per seed]}}``). Baseline-like schemes run with :func:`base_config`, so they are
    shared by configurations that differ only in the ``symphony.*`` keys.
    """
    size = parse_size(spec.size) if spec.size is not None else None
    if size is not None and size % 4:
        raise SweepError(f"size {spec.size}: give a positive multiple of 4 bytes (float32 elements)")
    keys = list(spec.grid)
    combos = [list(zip(keys, values, strict=True)) for values in itertools.product(*spec.grid.values())]
    sym_schemes = tuple(s for s in spec.schemes if s in SYMPHONY_SCHEMES)
    base_schemes = tuple(s for s in spec.schemes if s not in SYMPHONY_SCHEMES)
    tasks: dict[str, SweepTask] = {}
    configs: list[dict[str, Any]] = []
    for topo in topologies:
        scenario = (str(topo), size, spec.iterations)
        for config in combos:
            entry: dict[str, Any] = {"topology": str(topo), "config": config, "tasks": {}}
            for schemes, cfg in ((base_schemes, base_config(config)), (sym_schemes, config)):
                if not schemes:
                    continue
                cid = config_id(cfg, *scenario)
                for seed in spec.seeds:
                    run_dir = out / cid / f"seed{seed}-{'+'.join(schemes)}"
                    task = SweepTask(str(topo), tuple(cfg), schemes, seed, size, spec.iterations, str(run_dir))
                    tasks.setdefault(task.key, task)
                    for s in schemes:
                        entry["tasks"].setdefault(s, []).append(task.key)
            configs.append(entry)
    return list(tasks.values()), configs


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one task (or reuse its finished folder); its rows: one per scheme and job.

    A folder without ``summary.json`` (an interrupted run) is removed and run again. Raises
    RuntimeError (one line) when a result was not verified.
    """
    from emu import runner

    out_dir = Path(task.out)
    summary_file = out_dir / "summary.json"
    if not summary_file.exists():
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        topo_file = out_dir.parent / f"{out_dir.name}.yaml"
        topo_file.write_text(config_yaml(Path(task.topology).read_text(), task.config))
        result = runner.run(topo_file, schemes=task.schemes, iterations=task.iterations, size=task.size,
                            mode="sim", out=out_dir, seed=task.seed, parallel=1, plots=False)
        if not result.ok:
            raise RuntimeError(f"{out_dir}: {result.failure}")
    return read_task(task)


def read_task(task: SweepTask) -> dict[str, Any]:
    """What a finished task's folder holds: ``{"rows": [...], "placebo": {...} | None}``.

    A row: ``scheme, job, seed, ccts`` (s, per iteration), ``jct_s``, ``cct_over_bound``,
    ``lead_mean``, ``lead_max``, ``symphony_marks``, ``queue_marks`` (the scheme's, all jobs),
    ``dir``.
    """
    out_dir = Path(task.out)
    summary = json.loads((out_dir / "summary.json").read_text())
    ccts: dict[tuple[str, int], list[float]] = {}
    with (out_dir / "cct.csv").open() as f:
        for r in csv.DictReader(f):
            ccts.setdefault((r["scheme"], int(r["job"])), []).append(float(r["cct_s"]))
    rows = []
    for scheme in task.schemes:
        s = summary[scheme]
        jobs = s.get("jobs") or {"0": s}
        for job, jb in jobs.items():
            rows.append({"scheme": scheme, "job": int(job), "seed": task.seed,
                         "ccts": ccts.get((scheme, int(job)), []),
                         "jct_s": jb.get("jct_s"),
                         "cct_over_bound": (jb.get("cct_over_bound") or {}).get("mean"),
                         "lead_mean": (jb.get("step_lead") or {}).get("mean"),
                         "lead_max": (jb.get("step_lead") or {}).get("max"),
                         "symphony_marks": s["marks"]["symphony"], "queue_marks": s["marks"]["queue"],
                         "drops": s.get("drops"), "dir": str(out_dir)})
    return {"rows": rows, "placebo": summary.get("placebo_calibration")}


# --------------------------------------------------------------------------------------
# Executors: a local process pool or a Dask cluster
# --------------------------------------------------------------------------------------


def _worker_init(parent: int) -> None:
    """The pool's initializer: a worker dies with the sweep (SIGKILL) and leaves Ctrl-C to it."""
    from emu.cleanup import parent_death_signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_death_signal(parent, signal.SIGKILL)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill the workers: a run in progress is abandoned.

    SIGKILL, not SIGTERM: a worker's runner turns SIGTERM into an exception the pool would
    report and go on from. A virtual-time run owns no namespace, link or process, so nothing
    is left behind; its partial folder is redone on resume (:func:`run_task`).
    """
    pool.shutdown(wait=False, cancel_futures=True)
    for child in multiprocessing.active_children():
        child.kill()
    for child in multiprocessing.active_children():
        child.join(5)


def local_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool of ``workers`` forked processes that die with this one."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_init, initargs=(os.getpid(),))


def execute(tasks: Sequence[SweepTask], *, workers: int = 1, scheduler: str | None = None,
            on_result: Callable[[SweepTask, dict[str, Any]], None] | None = None) -> dict[str, dict[str, Any]]:
    """Run every task; task key -> :func:`read_task`'s dict, as they finish.

    ``scheduler``: a Dask distributed scheduler address (``tcp://host:8786``, or a
    ``distributed.LocalCluster``'s ``scheduler_address``): tasks are submitted to its workers,
    which need this package installed and the scenario files and output folder at the same
    paths (a shared file system). Else ``workers`` local processes (1: in this process, in
    order). Finished folders are read, not run again. KeyboardInterrupt stops the pool
    (a Dask cluster's running tasks are cancelled).
    """
    done: dict[str, dict[str, Any]] = {}
    todo = []
    for task in tasks:
        if (Path(task.out) / "summary.json").exists():
            done[task.key] = read_task(task)
            if on_result:
                on_result(task, done[task.key])
        else:
            todo.append(task)

    def finish(task: SweepTask, value: dict[str, Any]) -> None:
        done[task.key] = value
        if on_result:
            on_result(task, value)

    if not todo:
        return done
    if scheduler:
        from distributed import Client, as_completed

        with Client(scheduler, timeout="30s") as client:
            futures = {client.submit(run_task, t, key=f"sweep-{config_id(list(t.config), t.out)}",
                                     pure=False): t for t in todo}
            try:
                for fut in as_completed(futures):
                    finish(futures[fut], fut.result())
            except BaseException:
                client.cancel(list(futures))
                raise
    elif workers > 1:
        pool = local_pool(workers)
        try:
            futures = {pool.submit(run_task, t): t for t in todo}
            from concurrent.futures import as_completed as local_completed

            for fut in local_completed(futures):
                finish(futures[fut], fut.result())
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown()
    else:
        for task in todo:
            finish(task, run_task(task))
    return done


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


CSV_COLUMNS = ("topology", "config", "scheme", "job", "seed", "iterations", "cct_mean_s", "jct_s",
               "cct_over_bound", "lead_mean", "lead_max", "symphony_marks", "queue_marks", "dir")


@dataclass
class SchemeJobResult:
    """One scheme and job of one configuration, pooled over the seeds."""

    scheme: str
    job: int
    ccts: list[float] = field(default_factory=list)
    per_seed: dict[int, float] = field(default_factory=dict)  #: seed -> mean CCT (s)
    jct: dict[int, float] = field(default_factory=dict)  #: seed -> JCT (s), where the run gives one
    lead_mean: list[float] = field(default_factory=list)
    symphony_marks: list[int] = field(default_factory=list)
    queue_marks: list[int] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.ccts) if self.ccts else None


def collect(configs: Sequence[dict[str, Any]], done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration: ``{"topology", "config", "results": {(scheme, job): SchemeJobResult},
    "placebo": [calibration per seed]}``."""
    out = []
    for entry in configs:
        results: dict[tuple[str, int], SchemeJobResult] = {}
        placebo = []
        for scheme, keys in entry["tasks"].items():
            for key in keys:
                value = done.get(key)
                if value is None:
                    continue
                if scheme == "placebo" and value.get("placebo"):
                    placebo.append(value["placebo"])
                for row in value["rows"]:
                    if row["scheme"] != scheme:
                        continue
                    r = results.setdefault((scheme, row["job"]), SchemeJobResult(scheme, row["job"]))
                    r.ccts.extend(row["ccts"])
                    if row["ccts"]:
                        r.per_seed[row["seed"]] = statistics.fmean(row["ccts"])
                    if row.get("jct_s") is not None:
                        r.jct[row["seed"]] = row["jct_s"]
                    if row.get("lead_mean") is not None:
                        r.lead_mean.append(row["lead_mean"])
                    r.symphony_marks.append(row["symphony_marks"])
                    r.queue_marks.append(row["queue_marks"])
        out.append({"topology": entry["topology"], "config": entry["config"], "tasks": entry["tasks"], "results": results,
                    "placebo": placebo})
    return out


def comparisons(results: dict[tuple[str, int], SchemeJobResult]) -> dict[tuple[str, int], Any]:
    """(scheme, job) -> emu.metrics.Comparison of its mean CCT over the baseline's (pooled iterations)."""
    from emu.metrics import compare_ccts

    out = {}
    for (scheme, job), r in results.items():
        base = results.get(("baseline", job))
        if scheme == "baseline" or base is None:
            continue
        out[(scheme, job)] = compare_ccts(base.ccts, r.ccts, job=job, scheme=scheme)
    return out


def write_outputs(out: Path, collected: Sequence[dict[str, Any]], done: dict[str, dict[str, Any]],
                  title: str) -> Path:
    """Write ``sweep.csv``, ``sweep.jsonl`` and ``sweep.md`` into ``out``; returns the .md path."""
    with (out / "sweep.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for entry in collected:
            for key in sorted(k for k in _task_keys(entry) if k in done):
                for row in done[key]["rows"]:
                    w.writerow([Path(entry["topology"]).name, config_label(entry["config"]), row["scheme"],
                                row["job"], row["seed"], len(row["ccts"]),
                                f"{statistics.fmean(row['ccts']):.9g}" if row["ccts"] else "",
                                row.get("jct_s") or "", row.get("cct_over_bound") or "", row.get("lead_mean"),
                                row.get("lead_max"), row["symphony_marks"], row["queue_marks"], row["dir"]])
    with (out / "sweep.jsonl").open("w") as f:
        for key, value in done.items():
            f.write(json.dumps({"task": key, **value}) + "\n")
    md = out / "sweep.md"
    md.write_text(markdown_table(collected, title))
    return md


def _task_keys(entry: dict[str, Any]) -> set[str]:
    return {k for keys in entry["tasks"].values() for k in keys}


def markdown_table(collected: Sequence[dict[str, Any]], title: str) -> str:
    """Per configuration and job: every scheme's mean CCT and its ratio to the baseline [95% CI]."""
    lines = [f"# {title}", "",
             "Mean CCT pooled over the seeds' iterations; ratio = scheme / baseline with its 95% BCa "
             "interval (emu.metrics.compare_ccts); per seed: the ratio of each seed's means.", "",
             "| scenario | configuration | job | scheme | mean CCT ms | vs baseline [95% CI] | verdict "
             "| per seed | lead mean | Symphony marks | queue marks |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for entry in collected:
        results = entry["results"]
        comps = comparisons(results)
        for (scheme, job), r in sorted(results.items(), key=lambda kv: (kv[0][1], _scheme_rank(kv[0][0]))):
            comp = comps.get((scheme, job))
            base = results.get(("baseline", job))
            ratio = "" if comp is None or comp.ratio is None else (
                f"{comp.ratio:.3f}" + (f" [{comp.ci_low:.3f}, {comp.ci_high:.3f}]" if comp.ci_low is not None else ""))
            per_seed = "" if base is None or scheme == "baseline" else " ".join(
                f"{r.per_seed[s] / base.per_seed[s]:.2f}" for s in sorted(r.per_seed) if s in base.per_seed)
            name, label = Path(entry["topology"]).stem, config_label(entry["config"])
            if r.mean is None:
                lines.append(f"| {name} | {label} | {job} | {scheme} | - | | | | | | |")
                continue
            lead = f"{statistics.fmean(r.lead_mean):.2f}" if r.lead_mean else "-"
            lines.append(f"| {name} | {label} | {job} | {scheme} | {1e3 * r.mean:.4g} | {ratio} "
                         f"| {comp.verdict if comp else ''} | {per_seed} | {lead} "
                         f"| {statistics.fmean(r.symphony_marks):.0f} | {statistics.fmean(r.queue_marks):.0f} |")
        for cal in entry["placebo"]:
            vol = ", ".join(f"job {j}: p={c['probability']:.2g}, {c['placebo_marks']} vs {c['symphony_marks']} marks"
                            for j, c in cal.items() if c["symphony_marks"])
            if vol:
                lines.append(f"| {Path(entry['topology']).stem} | {config_label(entry['config'])} | | placebo volume "
                             f"| {vol} | | | | | | |")
    return "\n".join(lines) + "\n"


def _scheme_rank(scheme: str) -> int:
    from emu.report import SCHEME_ORDER

    return SCHEME_ORDER.index(scheme) if scheme in SCHEME_ORDER else len(SCHEME_ORDER)


def run_sweep(spec_path: str | Path, *, out: str | Path | None = None, workers: int = 1,
              scheduler: str | None = None,
              on_result: Callable[[SweepTask, dict[str, Any]], None] | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run (or resume) the sweep of ``spec_path``; write its outputs; (markdown path, collected).

    ``out``: the sweep's folder (default: ``results/sweep-<spec name>`` under the current
    directory). SweepError before anything runs when the spec or a configuration is bad.
    """
    spec, topologies = load_spec(spec_path)
    out_dir = Path(out) if out else Path.cwd() / "results" / f"sweep-{Path(spec_path).stem}"
    combos = [list(zip(spec.grid, values, strict=True)) for values in itertools.product(*spec.grid.values())]
    for topo in topologies:
        try:
            check_configs(topo, combos)
        except SweepError as exc:
            raise SweepError(f"{Path(topo).name}: {exc}") from None
    try:
        tasks, configs = plan_tasks(spec, topologies, out_dir)
    except SweepError as exc:
        raise SweepError(f"{spec_path}: size: {exc}") from None
    except ValueError as exc:  # parse_size
        raise SweepError(f"{spec_path}: size: {getattr(exc, 'message', exc)}") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "spec.yaml").write_text(Path(spec_path).read_text())
    done = execute(tasks, workers=workers, scheduler=scheduler, on_result=on_result)
    collected = collect(configs, done)
    md = write_outputs(out_dir, collected, done, f"sweep {Path(spec_path).name}")
    return md, collected
