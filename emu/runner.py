"""The experiment runner: the same network, jobs and background traffic for each scheme.

Written once over a network back end (:mod:`emu.backend`): ``mininet`` (real time,
:mod:`emu.mininet.backend`) or ``sim`` (virtual time, :mod:`emu.vtime`). ``run()`` loads
the topology once, builds and programs its network once (virtual time: a fresh network per
scheme from the same seed, the schemes in parallel processes, :mod:`emu.vtime.parallel`),
and then for each scheme (baseline, symphony) sets the switches' Symphony mode, zeroes the tracker registers, runs
the workload (one worker per rank of every job plus the background sources, worker spec in
docs/interfaces.md section 4) and reads the switch counters before and after. Everything
but the ``mode`` of ``symphony_config`` is shared by the schemes: routes, queues, ECN
thresholds, Symphony parameters, seeds, data, start offsets, background traffic. Metrics and
reports (emu.metrics, emu.report) go into the results folder.

The runner logs and reports progress through a callback (:class:`ProgressEvent`); it
never prints (the CLI draws progress bars and tables). Interrupts (Ctrl-C, SIGTERM) stop
everything the back end started.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from emu import cleanup as cleanup_mod
from emu import metrics, report, routing
from emu.backend import (
    BACKENDS,
    Backend,
    BackgroundSource,
    ProgressEvent,
    ProgressFn,
    RunError,
    UsageError,
    WorkerResult,
    Workload,
    backend_class,
    exit_reason,
    no_progress,
)
from emu.controller import NetworkError
from emu.dilation import dilate
from emu.interrupts import SignalInterrupt, interrupts_deferred, signals_as_interrupt
from emu.p4build import P4_BUILDS
from emu.targets import TargetUnavailable, target_class
from emu.topology import load_topology
from emu.topology_checks import chunk_problem
from emu.topology_schema import MAX_DILATION
from emu.vtime import parallel as par
from hostapps import compiled as compiled_mod
from hostapps.collectives import PAYLOADS, digest_too_small
from hostapps.wire import CTH_UDP_PORT

log = logging.getLogger(__name__)

#: Root of the per-run runtime directories (control sockets, worker specs).
RUN_ROOT = cleanup_mod.RUN_ROOT
#: Every scheme a run can hold: the two the paper compares, the placebo reference (random
#: marks of Symphony's volume, docs/DESIGN.md section 11; calibrated from the symphony run of
#: the same run, so it runs after it) and the ideal alignment (a per-step barrier at the hosts).
SCHEMES = ("baseline", "symphony", "placebo", "ideal")
#: The schemes a run holds unless told otherwise.
DEFAULT_SCHEMES = ("baseline", "symphony")
#: Schemes that need another scheme's result first: scheme -> the one it is calibrated from.
CALIBRATED_FROM = {"placebo": "symphony"}
#: The switches' mode of a scheme that is not a switch mode: the ideal alignment (a per-step
#: barrier at the hosts, hostapps.barrier; virtual time only) runs on baseline switches.
SWITCH_MODE = {"ideal": "baseline"}
#: Schemes only virtual time can run (the barrier needs every rank's progress in one process).
SIM_ONLY = ("ideal",)
#: Orders of the schemes' blocks on one network (``symphony-emu run --order``, see :func:`plan_blocks`).
ORDERS = ("abba", "random", "sequential")
#: Default order in real time: ABBA cancels a linear drift of the machine or the network.
DEFAULT_ORDER = "abba"
#: Rounds of a ``random`` order: each round runs every scheme once, in a seeded random order.
RANDOM_ROUNDS = 2
#: Per-scheme time limit = START + iterations * (compute + SLACK * bound + PER_STEP * steps) + EXTRA.
TIMEOUT_BOUND_SLACK = 25.0
TIMEOUT_PER_STEP_S = 0.5
TIMEOUT_EXTRA_S = 30.0


@dataclass(frozen=True)
class Block:
    """One run of every job with one scheme, a part of a run's scheme order (:func:`plan_blocks`).

    ``index``: position in the run's order (0 first); per job id: ``iterations`` measured,
    ``warmup`` iterations run before them (recorded, left out of the statistics) and
    ``first_iteration``, the number the block's first (warm-up) iteration gets, so a
    scheme's blocks number their iterations on from one another.
    """

    index: int
    scheme: str
    iterations: dict[int, int]
    warmup: dict[int, int]
    first_iteration: dict[int, int]

    def as_dict(self) -> dict[str, Any]:
        """summary.json's ``blocks`` entry: scheme, measured iterations and warm-ups per job."""
        return {"scheme": self.scheme, "iterations": {str(j): n for j, n in self.iterations.items()},
                "warmup": {str(j): n for j, n in self.warmup.items()}}


def _slots(schemes: Sequence[str], order: str, seed: int) -> list[str]:
    """The order of scheme slots before merging: every scheme once (sequential), forward then
    backward (abba: A B B A, A B C C B A), or RANDOM_ROUNDS seeded random permutations."""
    import random

    if order == "sequential":
        return list(schemes)
    if order == "abba":
        return [*schemes, *reversed(schemes)]
    if order == "random":
        rng = random.Random(seed)
        out: list[str] = []
        for _ in range(RANDOM_ROUNDS):
            perm = list(schemes)
            rng.shuffle(perm)
            out += perm
        return out
    raise UsageError(f"unknown --order {order!r}: use {', '.join(ORDERS)}")


def _split(n: int, parts: int) -> list[int]:
    """``n`` iterations in ``parts`` parts that differ by at most one, larger ones first."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def plan_blocks(schemes: Sequence[str], iterations: dict[int, int], warmup: dict[int, int], *,
                order: str = DEFAULT_ORDER, seed: int = 1) -> list[Block]:
    """The blocks a run executes, in order, for any list of schemes.

    ``iterations``/``warmup``: per job id, measured iterations per scheme and warm-up
    iterations per block. The order's slots (:func:`_slots`) are merged where a scheme
    follows itself (ABBA is A, BB, A: three blocks, three starts), each scheme's iterations
    are split evenly over its slots, and every block starts with its warm-up iterations:
    each start of the workers (process start, ARP-free but cold caches, the first timers)
    costs every scheme alike and is left out. ABBA puts the mean time of every scheme's
    measured iterations at the same instant of the run, so a linear drift of the machine
    or the network adds the same to every scheme's mean (exactly when the iterations take
    equally long); ``random`` makes any drift a zero-mean error. A calibrated scheme
    (:data:`CALIBRATED_FROM`) gets its first block after one of its source's. A block left
    with no measured iteration (fewer iterations than slots) is dropped.
    """
    if not schemes:
        return []
    slots = _slots(schemes, order, seed)
    for later, source in CALIBRATED_FROM.items():  # the placebo's first block after a symphony block
        if later in slots and source in slots and slots.index(later) < slots.index(source):
            i, j = slots.index(later), slots.index(source)
            slots[i], slots[j] = slots[j], slots[i]
    merged: list[tuple[str, int]] = []  # (scheme, slots merged)
    for scheme in slots:
        if merged and merged[-1][0] == scheme:
            merged[-1] = (scheme, merged[-1][1] + 1)
        else:
            merged.append((scheme, 1))
    parts = {scheme: {job: _split(n, slots.count(scheme)) for job, n in iterations.items()} for scheme in schemes}
    used = {scheme: 0 for scheme in schemes}
    next_label = {scheme: dict.fromkeys(iterations, 0) for scheme in schemes}
    blocks: list[Block] = []
    for scheme, count in merged:
        lo, used[scheme] = used[scheme], used[scheme] + count
        measured = {job: sum(parts[scheme][job][lo:lo + count]) for job in iterations}
        if not any(measured.values()):
            continue
        first = dict(next_label[scheme])
        for job in iterations:
            next_label[scheme][job] += measured[job] + warmup.get(job, 0)
        blocks.append(Block(len(blocks), scheme, measured, {job: warmup.get(job, 0) for job in iterations}, first))
    return blocks


def order_words(blocks: Sequence[Block], order: str) -> str:
    """The order in a few words for the table, e.g. ``abba: baseline, symphony, baseline; 1 warm-up per block``."""
    names = ", ".join(b.scheme for b in blocks)
    warm = sorted({w for b in blocks for w in b.warmup.values()})
    if warm == [0]:
        warm_words = "no warm-up"
    else:
        n = "/".join(str(w) for w in warm)
        warm_words = f"{n} warm-up iteration{'s' if warm != [1] else ''} per block left out"
    return f"{order}: {names}; {warm_words}"


@dataclass
class SchemeRun:
    """What one scheme's run produced (one block, or every block of the scheme merged)."""

    scheme: str
    results_dir: Path
    workers: list[WorkerResult]
    counters_before: dict[str, Any]
    counters_after: dict[str, Any]
    start_at: float
    wall_s: float
    traffic: list[dict[str, Any]] = field(default_factory=list)
    #: (before, after) counters of the scheme's later blocks (its first block's are above)
    more_counters: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every worker exited 0."""
        return all(w.returncode == 0 for w in self.workers)

    def merge(self, later: SchemeRun) -> None:
        """Add a later block of the same scheme: its workers, counters and wall time."""
        self.workers += later.workers
        self.more_counters.append((later.counters_before, later.counters_after))
        self.more_counters += later.more_counters
        self.wall_s += later.wall_s

    def counter_delta(self) -> dict[str, dict[str, Any]]:
        """Per switch: counters during this scheme (after - before, summed over its blocks)
        and the final core stats (maxima as read after its last block)."""
        out: dict[str, dict[str, Any]] = {}
        for before_all, after_all in [(self.counters_before, self.counters_after), *self.more_counters]:
            for sw, after in after_all.items():
                before = before_all.get(sw, {})
                entry = out.setdefault(sw, {})
                for key, values in after.items():
                    if key == "stats":
                        delta = _stats_delta(before.get("stats", {}), values)
                        entry["stats"] = _stats_add(entry["stats"], delta) if "stats" in entry else delta
                        continue
                    prev = before.get(key, [0] * len(values))
                    diff = [a - b for a, b in zip(values, prev, strict=False)]
                    entry[key] = [a + b for a, b in zip(entry[key], diff, strict=False)] if key in entry else diff
        return out


#: Keys of the switch core's stats() that count (subtracted per scheme); others are kept as read.
COUNTING_STATS = ("rx", "tx", "drops", "tail_drops", "pipeline", "io_lag", "cpu")


def _stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The switch stats of one scheme: counting keys after - before, the rest (maxima) as read."""

    def sub(a: Any, b: Any) -> Any:
        if isinstance(a, dict):
            b = b if isinstance(b, dict) else {}
            return {k: sub(v, b.get(k)) for k, v in a.items()}
        if isinstance(a, int | float) and isinstance(b, int | float):
            return a - b
        return a

    return {key: sub(value, before.get(key)) if key in COUNTING_STATS else value for key, value in after.items()}


def _stats_add(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """Two blocks' switch stats: counting keys added, the rest (maxima) from ``more`` (the later)."""

    def add(a: Any, b: Any) -> Any:
        if isinstance(b, dict):
            a = a if isinstance(a, dict) else {}
            return {k: add(a.get(k), v) for k, v in b.items()}
        if isinstance(a, int | float) and isinstance(b, int | float):
            return a + b
        return b

    return {key: add(total.get(key), value) if key in COUNTING_STATS else value for key, value in more.items()}


def counter_totals(delta: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Symphony marks, queue marks and drops of one scheme summed over the switches.

    Drops are every drop the switches counted: tail drops, P4 drops, malformed frames
    (the core's ``stats()["drops"]``), falling back to the P4 ``MyIngress.drops`` counter.
    ``io_wakeups``/``io_late_wakeups``/``io_lag_max_us``: the embedded switches' departure
    timers and how late they fired (``SwitchCore.io_lag``; the max is since the switch started).
    """
    totals = {"symphony_marks": 0, "queue_marks": 0, "drops": 0,
              "io_wakeups": 0, "io_late_wakeups": 0, "io_lag_max_us": 0}
    for entry in delta.values():
        stats = entry.get("stats", {})
        lag = stats.get("io_lag") if isinstance(stats, dict) else None
        if isinstance(lag, dict):  # embedded switch: departures later than their schedule
            totals["io_wakeups"] += int(lag.get("wakeups", 0))
            totals["io_late_wakeups"] += int(lag.get("late_wakeups", 0))
            totals["io_lag_max_us"] = max(totals["io_lag_max_us"], int(stats.get("io_lag_max_us", 0)))
        totals["symphony_marks"] += sum(entry.get("symphony_marks", []))
        totals["queue_marks"] += sum(entry.get("queue_marks", []))
        drops = entry.get("stats", {}).get("drops")
        if isinstance(drops, dict):
            totals["drops"] += sum(int(v) for v in drops.values() if isinstance(v, int | float))
        else:
            totals["drops"] += sum(entry.get("drops", []))
    return totals


def job_counter_sums(delta: dict[str, dict[str, Any]], counter: str) -> dict[int, int]:
    """Per job id: one per-job counter (``symphony_marks``, ``symphony_eligible``, ...) summed over
    the switches of a scheme's :meth:`SchemeRun.counter_delta`; jobs with 0 are left out."""
    out: dict[int, int] = {}
    for entry in delta.values():
        for job, value in enumerate(entry.get(counter, [])):
            if value:
                out[job] = out.get(job, 0) + int(value)
    return out


def placebo_probabilities(symphony: SchemeRun, jobs: Sequence[int]) -> dict[int, float]:
    """The placebo's marking probability per job: Symphony's marks over the packets that reached
    its mark decision (``MyEgress.symphony_eligible``) in the symphony run, summed over switches.

    The placebo marks the same packets (tracked, ECT, not queue-marked, queue at the gate) with
    that probability whatever their lead, so its expected mark count is Symphony's when as many
    packets reach the decision; the achieved volume is reported (:func:`placebo_volume`).
    """
    delta = symphony.counter_delta()
    marks = job_counter_sums(delta, "symphony_marks")
    eligible = job_counter_sums(delta, "symphony_eligible")
    return {job: (marks.get(job, 0) / eligible[job]) if eligible.get(job) else 0.0 for job in jobs}


def placebo_volume(runs: dict[str, SchemeRun], probabilities: dict[int, float]) -> dict[str, Any]:
    """How well the placebo matched Symphony's mark volume, per job (for summary.json).

    ``{job: {"probability", "symphony_marks", "placebo_marks", "volume_ratio"}}``, the ratio
    placebo / symphony marks (null when Symphony marked nothing).
    """
    sym = job_counter_sums(runs["symphony"].counter_delta(), "symphony_marks")
    pla = job_counter_sums(runs["placebo"].counter_delta(), "symphony_marks")
    return {str(job): {"probability": p, "symphony_marks": sym.get(job, 0), "placebo_marks": pla.get(job, 0),
                       "volume_ratio": pla.get(job, 0) / sym[job] if sym.get(job) else None}
            for job, p in probabilities.items()}


@dataclass
class RunResult:
    """A finished run: folder, per-scheme runs and the summary written to summary.json."""

    out_dir: Path
    topology_path: Path
    schemes: dict[str, SchemeRun]
    summary: dict[str, Any]
    ok: bool
    failure: str | None = None
    table: Any = None  #: the rich renderable of the comparison (emu.report)


# --------------------------------------------------------------------------------------
# Results folder
# --------------------------------------------------------------------------------------


def new_run_id() -> str:
    """A run id: timestamp plus pid (unique on one machine)."""
    return datetime.now().strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def default_out_dir(run_id: str) -> Path:
    """results/<run id>/ (timestamp plus pid) under the current directory.

    The pid stays in the name so that two runs started in the same second get two folders.
    """
    return Path.cwd() / "results" / run_id


#: What a run writes at the top of its results folder (besides one folder per scheme).
RUN_OUTPUTS = ("run.json", "run.lock", "summary.json", "cct.csv", "steps.csv", "cct_cdf.png", "step_lead.png",
               "topology.yaml", "logs", "pcap", "calibration")
#: Held by the runner while it writes the folder (emu.cleanup.hold_run_lock).
RUN_LOCK = cleanup_mod.RUN_LOCK


def topology_copy_header(path: Path) -> str:
    """The comment lines that head the results folder's copy of the topology file ``path``: the
    copy is the file as given, and the command line's changes to it are in run.json (new-user
    check, 2026-12-04: a copy that read ``size_bytes: 16MiB`` of a run with ``--size 4M``)."""
    return (f"# {path}, as given to symphony-emu run. What the command line changed (--iterations, --size,\n"
            "# --mtu, --payload, --dilation) is in run.json: iterations, size, mtu, dilation, jobs.\n")


def holds_run(path: Path) -> bool:
    """Whether ``path`` holds (part of) an earlier run: a run.json, a summary.json or workers' JSON lines."""
    return path.is_dir() and ((path / RUN_FILE).exists() or (path / "summary.json").exists()
                              or any(path.glob("*/job*-rank*.jsonl")) or any(path.glob("cli-*/")))


def _run_entry(entry: Path) -> bool:
    """Whether ``entry`` (a file or folder at the top of a results folder) is one a run writes:
    :data:`RUN_OUTPUTS`, a ``cli-*`` folder or a scheme's folder (its specs, JSON lines or counters)."""
    is_scheme = entry.is_dir() and ((entry / "specs").is_dir() or any(entry.glob("job*-rank*.json*"))
                                    or (entry / "counters.json").exists())
    return entry.name in RUN_OUTPUTS or entry.name.startswith("cli-") or is_scheme


def input_in_out_dir(out_dir: Path, path: Path, *, force: bool) -> str | None:
    """The problem when the run's input file ``path`` lies where the run would overwrite it in
    ``out_dir`` (its ``topology.yaml``) or, with ``force``, where :func:`empty_run_folder` removes
    (new-user check, 2026-12-04: ``run X/topology.yaml --out X`` rewrote the input; with ``--force``
    it deleted it, then failed with a traceback); else None. Both paths resolved."""
    try:
        rel = path.resolve().relative_to(out_dir.resolve())
    except ValueError:
        return None
    if rel == Path("topology.yaml"):
        return "the run writes its copy of the topology there"
    if force and rel.parts and _run_entry(out_dir / rel.parts[0]):
        return f"--force removes {rel.parts[0]} there first"
    return None


def empty_run_folder(path: Path) -> list[str]:
    """Remove what a run wrote in ``path`` (:data:`RUN_OUTPUTS`, scheme and ``cli-*`` folders:
    :func:`_run_entry`); anything else stays. Returns the names removed."""
    import shutil

    removed = []
    for entry in sorted(path.iterdir()):
        if _run_entry(entry):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry.name)
    return removed


def _sudo_owner() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran ``sudo``, when this runs as root under sudo."""
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if os.geteuid() == 0 and uid != 0 else None


def make_out_dir(path: Path, *, given: bool = True, force: bool = False) -> Path:
    """Create the results folder ``path`` and check that files can be written in it.

    ``given``: whether the user named it (``--out``). A folder that holds an earlier run
    (:func:`holds_run`) is refused, unless ``force``, which empties it first
    (:func:`empty_run_folder`): a reused folder would mix the earlier run's ranks into the
    new summary. Under ``sudo`` the default ``results/`` parent is given to the user who
    ran sudo, so later runs without root (virtual time) can write there. Raises UsageError
    (one line) when it cannot be created, written or reused.
    """
    import tempfile

    if holds_run(path):
        if (path / RUN_LOCK).exists() and not cleanup_mod.run_lock_free(path):
            raise UsageError(f"--out {path}: another run is writing there now; give another folder")
        if not force:
            raise UsageError(f"--out {path}: the folder holds an earlier run (run.json, results); give a new "
                             "folder, or pass --force to remove that run's files first")
        empty_run_folder(path)
    action = "create"
    try:
        parent_existed = path.parent.exists()
        path.mkdir(parents=True, exist_ok=True)
        owner = _sudo_owner()
        if owner is not None and not given and path.parent.name == "results":
            st = path.parent.stat()
            if not parent_existed or st.st_uid == 0:  # ours, or left root-owned by an earlier sudo run
                os.chown(path.parent, *owner)
        action = "write in"
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if given:
            raise UsageError(f"--out {path}: cannot {action} the results folder ({reason}); "
                             "give a writable directory") from None
        raise UsageError(f"{path}: cannot {action} the results folder ({reason}); "
                         "run from a writable directory or give --out DIR") from None
    return path


#: What ran and how it ended, in the results folder (see :meth:`Experiment.update_run_file`).
RUN_FILE = "run.json"


# --------------------------------------------------------------------------------------
# Worker specs and workloads
# --------------------------------------------------------------------------------------


def collective_bound_s(topology: Any, job_id: int, size_bytes: int) -> float:
    """The bandwidth bound of one collective of job ``job_id`` (s): :func:`emu.metrics.bandwidth_bound_s`
    at the job's lockstep fair share (emu.routing.JobBandwidth.fair_share_bps)."""
    job = topology.job(job_id)
    bw = routing.compute_routes(topology).job_bandwidth(job_id).fair_share_bps
    return metrics.bandwidth_bound_s(job.collective, len(job.ranks), size_bytes, bw)


def max_compute_s(job: Any) -> float:
    """The longest compute of one training iteration of any rank of ``job`` (s, straggler included)."""
    base = job.compute_ms / 1000.0
    if job.model is not None:
        base = job.model.forward_ms / 1000 / job.model.reduction * (1 + job.model.backward_ratio)
    worst = base
    for st in job.stragglers:
        worst = max(worst, base * st.compute_factor + st.compute_delay_ms / 1000)
    return worst


def compute_schedule(job: Any, rank: int, iterations: int, seed: int) -> Any:
    """Rank ``rank``'s :class:`hostapps.workload.ComputeSchedule` (None: the plain ``compute_ms``
    with no straggler, which the worker runs as ``compute_s``). Times in scenario seconds; a
    random straggler draws from (seed, job, rank), the same in both modes."""
    from hostapps.workload import ComputeSchedule, straggler_pattern

    st = next((s for s in job.stragglers if s.rank == rank), None)
    slow = st is not None and (st.compute_factor > 1 or st.compute_delay_ms > 0)
    if job.model is None and not slow:
        return None
    factors: tuple[float, ...] = ()
    delays: tuple[float, ...] = ()
    if slow:
        factors, delays = straggler_pattern(iterations, factor=st.compute_factor, delay_s=st.compute_delay_ms / 1000,
                                            every=st.every, probability=st.probability, seed=(seed, job.id, rank))
    m = job.model
    if m is None:
        return ComputeSchedule(forward_s=job.compute_ms / 1000, overlap=False, factors=factors, delays=delays)
    forward = m.forward_ms / 1000 / m.reduction
    return ComputeSchedule(forward_s=forward, backward_s=forward * m.backward_ratio, buckets=m.buckets,
                           factors=factors, delays=delays)


def worker_specs(topology: Any, *, iterations: int | None, size: int | None, seed: int, start_at: float,
                 results_dir: Path, block: Block | None = None) -> list[dict[str, Any]]:
    """One worker spec per rank of every job (docs/interfaces.md section 4).

    With ``block`` the workers run the block's warm-up plus measured iterations of each job
    (``iterations`` counts both, ``warmup`` the first ones, ``first_iteration`` numbers
    the first) and append to the scheme's JSON lines; without, ``iterations`` (or the
    job's) from iteration 0 with no warm-up.
    """

    plan = topology.plan
    specs = []
    for job in topology.jobs:
        ranks = [{"rank": r, "ip": plan.host(h).ip, "port": CTH_UDP_PORT} for r, h in enumerate(job.ranks)]
        cpi = job.collectives_per_iteration
        if block is not None:  # warm-ups and numbers count the worker's collectives
            iters = block.iterations[job.id] + block.warmup[job.id]
            in_block = {"warmup": block.warmup[job.id] * cpi, "first_iteration": block.first_iteration[job.id] * cpi}
        else:
            iters = iterations if iterations is not None else job.iterations
            in_block = {}
        channels = {"channels": job.channels} if job.channels > 1 else {}  # one channel: the spec as before
        for r, host in enumerate(job.ranks):
            schedule = compute_schedule(job, r, iters, seed)
            extra = {} if schedule is None else {"compute": schedule.as_dict()}
            specs.append({
                "job_id": job.id, "rank": r, "host": host, "ranks": ranks,
                "collective": job.collective,
                "size_bytes": size if size is not None else job.size_bytes,
                "iterations": iters * job.collectives_per_iteration, **in_block,
                "compute_s": job.compute_ms / 1000.0, **extra,
                "start_at": start_at + job.start_offset_ms / 1000.0,
                "line_rate_bps": plan.host(host).line_rate_bps,
                "rate_control": {"name": "dcqcn", "params": topology.dcqcn_for(job.id)},
                "mtu": topology.mtu, "transport": topology.transport_for(job.id),
                "step_timeout_s": job.step_timeout_s, "slices": job.slices, **channels, "payload": job.payload,
                "seed": seed, "results_dir": str(results_dir),
            })
    return specs


def scheme_timeout_s(topology: Any, *, iterations: int | None, size: int | None, start_delay: float) -> float:
    """Upper bound on one scheme's duration (s), from sizes, bandwidths and step timeouts."""
    worst = 0.0
    for job in topology.jobs:
        iters = iterations if iterations is not None else job.iterations
        nbytes = size if size is not None else job.size_bytes
        steps = 2 * (len(job.ranks) - 1)
        k = job.collectives_per_iteration
        per_iter = (max_compute_s(job) + k * (TIMEOUT_BOUND_SLACK * collective_bound_s(topology, job.id, nbytes)
                                              + TIMEOUT_PER_STEP_S * steps))
        total = job.start_offset_ms / 1000.0 + iters * per_iter + 2 * job.step_timeout_s
        worst = max(worst, total)
    return start_delay + worst + TIMEOUT_EXTRA_S


def background_sources(topology: Any, seed: int) -> list[BackgroundSource]:
    """The topology's background flows as workload sources (seed ``seed * 1000 + index``)."""
    return [BackgroundSource(index=i, src=f.src, dst=f.dst, rate_bps=f.rate_mbps * 1e6, on_s=f.on_ms / 1000.0,
                             off_s=f.off_ms / 1000.0, start_s=f.start_ms / 1000.0,
                             duration_s=f.duration_ms / 1000.0 if f.duration_ms is not None else None,
                             exponential=f.exponential, packet_bytes=f.packet_bytes, seed=seed * 1000 + i)
            for i, f in enumerate(topology.background)]


# --------------------------------------------------------------------------------------
# Experiment: one network, several runs of the jobs
# --------------------------------------------------------------------------------------


class Experiment:
    """A programmed network of one topology on which the jobs run once per scheme.

    Use :meth:`open` (a context manager) to build and always tear down the network.
    ``backend`` is the :class:`emu.backend.Backend` that runs it; ``network`` its
    programmed network (``set_mode``, ``reset_jobs``, ``read_counters``, ...).
    """

    def __init__(self, topology: Any, topology_path: Path, *, target: str, out_dir: Path, seed: int,
                 run_id: str, mode: str = "mininet", pcap: bool = False, p4: str = "v1model") -> None:
        self.topology = topology
        self.topology_path = topology_path
        self.target = target
        self.out_dir = out_dir
        self.seed = seed
        self.run_id = run_id
        self.mode = mode
        self.run_dir = RUN_ROOT / run_id
        self.p4 = p4
        self.placebo: dict[int, float] = {}  #: the placebo's probabilities per job, once calibrated
        kwargs: dict[str, Any] = {"pcap": True} if pcap else {}
        self.backend: Backend = backend_class(mode)(topology, out_dir=out_dir, run_dir=self.run_dir, run_id=run_id,
                                                    seed=seed, target=target, p4=p4, **kwargs)

    @property
    def network(self) -> Any:
        """The back end's programmed network (None before it is built)."""
        return self.backend.network

    @classmethod
    @contextlib.contextmanager
    def open(cls, topology_path: str | os.PathLike[str], *, target: str = "embedded", out: Path | None = None,
             seed: int = 1, progress: ProgressFn | None = None, run_id: str | None = None,
             mode: str = "mininet", topology: Any = None, pcap: bool = False,
             p4: str = "v1model", force: bool = False) -> Iterator[Experiment]:
        """Validate, check the machine, build and program the network; tear it down on exit.

        ``p4``: the P4 build the switches run, ``v1model`` (p4/symphony.p4) or ``tofino``
        (p4/tofino/symphony.p4, T2NA: embedded target only, else UsageError).

        ``pcap``: every switch writes one capture per port to ``<out>/pcap/`` (Mininet back
        end and a target that supports it, else UsageError).

        ``out``: the results folder (default results/<run id>/); one holding an earlier run
        is refused unless ``force`` (which empties it, :func:`make_out_dir`).

        ``topology``: the already loaded :class:`emu.topology.Topology` of ``topology_path``
        (so a run loads its file once), else it is loaded here. Raises TopologyError /
        UsageError / TargetUnavailable before anything starts.
        """
        for killed_id, folder, left in cleanup_mod.clean_dead_runs():
            where = f"; marked {folder / RUN_FILE} killed" if folder is not None else ""
            log.warning("run %s was killed before it could clean up%s%s", killed_id, where,
                        f"; removed its leftovers ({left})" if not left.empty() else "")
        if topology is None:
            topology = load_topology(topology_path)
        if p4 not in P4_BUILDS:
            raise UsageError(f"unknown --p4 {p4!r}: use {' or '.join(P4_BUILDS)}")
        if p4 != "v1model" and target != "embedded":
            raise UsageError(f"--p4 {p4}: the T2NA build runs on the embedded target only (docs/tofino.md); "
                             "use --target embedded")
        klass = backend_class(mode)
        klass.check(topology, target=target)
        if pcap:
            if mode != "mininet" or not target_class(target).supports_pcap:
                raise UsageError(f"--pcap: only the embedded target in Mininet mode writes captures "
                                 f"(here: target {target}, mode {mode})")
        if not topology.jobs:
            raise UsageError(f"{topology_path}: jobs: the topology has no job to run; add one (docs/topology-format.md)")
        run_id = run_id or new_run_id()
        wanted = (out or default_out_dir(run_id)).resolve()
        clash = input_in_out_dir(wanted, Path(topology_path), force=force)
        if clash is not None:
            raise UsageError(f"--out {wanted}: it holds the topology file {topology_path} and {clash}; "
                             "copy the file elsewhere or give another --out")
        out_dir = make_out_dir(wanted, given=out is not None, force=force)
        try:
            lock_fd = cleanup_mod.hold_run_lock(out_dir)
        except BlockingIOError:
            raise UsageError(f"--out {out_dir}: another run is writing there now; give another folder") from None
        exp = cls(topology, Path(topology_path), target=target, out_dir=out_dir, seed=seed, run_id=run_id, mode=mode,
                  pcap=pcap, p4=p4)
        exp.update_run_file(run_id=run_id, topology=str(topology_path), topology_name=topology.name, target=target,
                            p4=p4, mode=mode, seed=seed, started=datetime.now().isoformat(timespec="seconds"),
                            status="starting")
        previous = os.environ.get(cleanup_mod.RUN_ENV)
        os.environ[cleanup_mod.RUN_ENV] = run_id  # inherited by switches, workers, traffic: cleanup finds them
        end: dict[str, Any] = {"status": "interrupted"}  # unless the block ends or fails otherwise
        nodes = [n.name for n in (*topology.hosts, *topology.switches)] if mode == "mininet" else []
        cleanup_mod.register_run(run_id, out_dir, nodes)  # so a SIGKILL is recognised by the next run or clean
        try:
            with signals_as_interrupt():
                exp._build(progress or no_progress)
                exp.update_run_file(status="running")
                yield exp
            end = {"status": "finished"}
        except SignalInterrupt as exc:  # SIGTERM or SIGHUP
            end["signal"] = signal.Signals(exc.signum).name
            raise
        except KeyboardInterrupt:  # Ctrl-C
            raise
        except BaseException as exc:  # RunError, or a bug: say so in run.json
            end = {"status": "failed", "failure": str(exc) or type(exc).__name__}
            raise
        finally:
            with interrupts_deferred():
                exp.close()
                exp.update_run_file(ended=datetime.now().isoformat(timespec="seconds"), **end)
                cleanup_mod.unregister_run(run_id)
                os.close(lock_fd)
            if previous is None:
                os.environ.pop(cleanup_mod.RUN_ENV, None)
            else:
                os.environ[cleanup_mod.RUN_ENV] = previous

    def _build(self, progress: ProgressFn) -> None:
        if not self.backend.network_per_scheme:  # else run_scheme builds a fresh network per scheme
            self.backend.build(progress)
            self.update_run_file(**self.backend.run_facts())
        (self.out_dir / "topology.yaml").write_text(topology_copy_header(self.topology_path) + self.topology_path.read_text())

    def update_run_file(self, **fields: Any) -> None:
        """Merge ``fields`` into the results folder's run.json (what ran and how it ended).

        ``status`` is "starting" (building the network), "running", "finished" (network torn
        down normally), "failed" (with ``failure``) or "interrupted" (Ctrl-C, or SIGTERM/SIGHUP
        with ``signal``); a run killed with SIGKILL is marked "killed" by the next ``run`` or
        ``clean`` (emu.cleanup.mark_killed_runs). Write errors are logged, not raised.
        """
        path = self.out_dir / RUN_FILE
        try:
            current = json.loads(path.read_text()) if path.is_file() else {}
        except (OSError, ValueError):
            current = {}
        if not isinstance(current, dict) or current.get("run_id", self.run_id) != self.run_id:
            current = {}  # a previous run's file in a reused --out folder
        current.update(fields)
        try:
            path.write_text(json.dumps(current, indent=1) + "\n")
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc.strerror or exc)

    def close(self) -> None:
        """Stop everything the back end started."""
        self.backend.close()

    def plan(self, schemes: Sequence[str], *, iterations: int | None = None,
             order: str = DEFAULT_ORDER) -> list[Block]:
        """The blocks :meth:`run_schemes` runs (:func:`plan_blocks`). A back end with a fresh
        network per scheme (virtual time: no drift, nothing shared, a start that costs
        nothing) runs each scheme as one block, without warm-up unless the host model is on
        (``host_cost``: it reproduces a real-time run, whose statistics leave out the warm-up,
        so the model's leave out the same cold first iterations)."""
        measured = {job.id: iterations if iterations is not None else job.iterations for job in self.topology.jobs}
        warmup = {job.id: job_warmup(job) for job in self.topology.jobs}
        if self.backend.network_per_scheme:
            order = "sequential"
            if getattr(self.topology, "host_cost", None) is None:
                warmup = dict.fromkeys(warmup, 0)
        return plan_blocks(schemes, measured, warmup, order=order, seed=self.seed)

    def run_schemes(self, schemes: Sequence[str], *, iterations: int | None = None, size: int | None = None,
                    progress: ProgressFn | None = None, parallel: int = 1, order: str = DEFAULT_ORDER,
                    blocks: Sequence[Block] | None = None,
                    on_result: Callable[[str, SchemeRun], None] | None = None) -> dict[str, SchemeRun]:
        """Run every job per scheme in the blocks of ``order`` (:meth:`plan`, or ``blocks``);
        scheme -> SchemeRun (its blocks merged) in the order of ``schemes``.

        ``parallel``: how many schemes run at the same time. 1 runs the blocks one after the
        other in this process; more (back ends with ``network_per_scheme`` only: virtual
        time, one block per scheme) runs each scheme in a process of its own
        (emu.vtime.parallel), with the same results bit for bit. A calibrated scheme
        (:data:`CALIBRATED_FROM`: the placebo) is calibrated from what the blocks of the
        scheme it follows measured before its first block (:func:`plan_blocks` puts that
        one first; in parallel: after the others); ``self.placebo`` then holds the placebo's
        probabilities. ``on_result(scheme, run)``: in parallel, called with each scheme's
        final run as it ends while the others still run (emu.vtime.parallel.run_schemes).
        Raises as :meth:`run_scheme`.
        """
        blocks = list(blocks) if blocks is not None else self.plan(schemes, iterations=iterations, order=order)
        if parallel > 1 and len(blocks) > 1 and self.backend.network_per_scheme:
            runs = self._run_parallel([b for b in blocks if b.scheme not in CALIBRATED_FROM], iterations=iterations,
                                      size=size, progress=progress, parallel=parallel, on_result=on_result)
            later = [b for b in blocks if b.scheme in CALIBRATED_FROM]
            if later:
                self._calibrate(runs)
                runs.update(self._run_parallel(later, iterations=iterations, size=size, progress=progress,
                                               parallel=parallel, placebo=self.placebo, on_result=on_result))
            return {scheme: runs[scheme] for scheme in schemes if scheme in runs}
        runs = {}
        for block in blocks:
            placebo = None
            if block.scheme in CALIBRATED_FROM:
                if not self.placebo:
                    self._calibrate(runs)
                placebo = self.placebo
            run = self.run_scheme(block.scheme, size=size, progress=progress, block=block, placebo=placebo)
            if block.scheme in runs:
                runs[block.scheme].merge(run)
            else:
                runs[block.scheme] = run
        for run in runs.values():
            (run.results_dir / "counters.json").write_text(json.dumps(run.counter_delta(), indent=1, default=str))
        return {scheme: runs[scheme] for scheme in schemes if scheme in runs}

    def _calibrate(self, runs: dict[str, SchemeRun]) -> None:
        """The placebo's probabilities from the symphony blocks run so far (:func:`placebo_probabilities`)."""
        source = CALIBRATED_FROM["placebo"]
        if source not in runs:
            raise RunError(f"placebo: calibrated from the {source} scheme, which must run before it "
                           f"(run both: --scheme ... {source} placebo)")
        self.placebo = placebo_probabilities(runs[source], [job.id for job in self.topology.jobs])
        log.info("placebo marking probabilities per job (from the %s blocks so far): %s", source,
                 {j: round(p, 6) for j, p in self.placebo.items()})

    def _run_parallel(self, blocks: Sequence[Block], *, iterations: int | None, size: int | None,
                      progress: ProgressFn | None, parallel: int, placebo: dict[int, float] | None = None,
                      on_result: Callable[[str, SchemeRun], None] | None = None) -> dict[str, SchemeRun]:
        """Virtual time: one block per scheme, each in a process of its own (emu.vtime.parallel)."""
        if len(blocks) < 2:
            return {b.scheme: self.run_scheme(b.scheme, size=size, progress=progress, block=b, placebo=placebo)
                    for b in blocks}
        level = logging.getLogger().getEffectiveLevel()
        tasks = [par.SchemeTask(run=run_scheme_task, scheme=b.scheme, topology=self.topology, topology_path=self.topology_path,
                                target=self.target, out_dir=self.out_dir, seed=self.seed, run_id=self.run_id,
                                mode=self.mode, p4=self.p4, iterations=iterations, size=size, log_level=level,
                                placebo=placebo, block=b)
                 for b in blocks]
        return par.run_schemes(tasks, progress or no_progress, parallel, on_result)

    def rebuild(self, topology: Any, progress: ProgressFn | None = None) -> None:
        """Stop the network and build and program it again for ``topology`` (another dilation)."""
        self.backend.close()
        self.topology = topology
        self.backend.topology = topology
        self.backend.network = None
        self.backend.build(progress or no_progress)
        self.update_run_file(**self.backend.run_facts())

    def probe(self, scheme: str, *, dilation: float, topology: Any, size: int | None = None,
              progress: ProgressFn | None = None) -> dict[str, Any]:
        """A calibration block of ``scheme`` (warm-up plus :data:`CALIBRATION_ITERATIONS`) in
        ``<out>/calibration/D<dilation>/``; returns its emu.metrics.overload figures.
        ``topology``: the scenario as written (its bounds are in scenario time)."""
        import dataclasses

        jobs = [job.id for job in self.topology.jobs]
        block = Block(-1, scheme, dict.fromkeys(jobs, CALIBRATION_ITERATIONS),
                      {job.id: job_warmup(job) for job in self.topology.jobs}, dict.fromkeys(jobs, 0))
        folder = self.out_dir / "calibration" / f"D{dilation:g}"
        run = self.run_scheme(scheme, size=size, progress=progress, block=block, results_dir=folder)
        infos = {j: dataclasses.replace(info, iterations=CALIBRATION_ITERATIONS * topology.job(j).collectives_per_iteration,
                                        size_bytes=size if size is not None else info.size_bytes)
                 for j, info in metrics.job_infos(topology).items()}
        m = metrics.compute_metrics(folder, scheme=scheme, jobs=infos, time_scale=1.0 / dilation)
        return metrics.overload(m, counter_totals(run.counter_delta()))

    def set_mode(self, scheme: str) -> None:
        """Put every switch in ``scheme``'s mode."""
        self.network.set_mode(scheme)

    # -- one run of the jobs --------------------------------------------------------------
    def run_scheme(self, scheme: str, *, iterations: int | None = None, size: int | None = None,
                   progress: ProgressFn | None = None, results_dir: Path | None = None,
                   placebo: dict[int, float] | None = None, block: Block | None = None) -> SchemeRun:
        """Run every job once with ``scheme``'s marking; RunError if a worker fails.

        ``placebo``: job id -> marking probability, for scheme "placebo" (see
        :func:`placebo_probabilities`). ``block``: one block of the run's order (its
        iterations, warm-ups and iteration numbers; :func:`plan_blocks`), else
        ``iterations`` (or the jobs') with no warm-up.
        A back end with ``network_per_scheme`` (virtual time) first builds and programs a
        fresh network from the run's seed, so every scheme starts from the same state.
        """
        emit = progress or no_progress
        if self.backend.network_per_scheme:
            self.backend.close()
            self.backend.build(emit)
        results_dir = results_dir or self.out_dir / scheme
        results_dir.mkdir(parents=True, exist_ok=True)
        logs_dir = results_dir / "logs"
        logs_dir.mkdir(exist_ok=True)
        try:
            self.network.set_mode(SWITCH_MODE.get(scheme, scheme), placebo=placebo)
            self.network.reset_jobs()
            before = self.network.read_counters()
        except (NetworkError, ConnectionError) as exc:
            raise RunError(f"switch control failed before {scheme}: {exc}") from None

        n_workers = sum(len(job.ranks) for job in self.topology.jobs)
        start_at = self.backend.start_time(n_workers)
        specs = worker_specs(self.topology, iterations=iterations, size=size, seed=self.seed, start_at=start_at,
                             results_dir=results_dir, block=block)
        (results_dir / "specs").mkdir(exist_ok=True)
        for spec in specs:
            later = f".block{block.index}" if block is not None and any(block.first_iteration.values()) else ""
            name = f"job{spec['job_id']}-rank{spec['rank']}{later}.json"
            (results_dir / "specs" / name).write_text(json.dumps({k: v for k, v in spec.items() if k != "host"},
                                                                 indent=1))
        start_delay = max(0.0, start_at - self.backend.start_time(0)) if self.backend.wall_clock else 0.0
        timeout = scheme_timeout_s(self.topology, iterations=iterations, size=size, start_delay=start_delay)
        workload = Workload(scheme=scheme, specs=specs, background=background_sources(self.topology, self.seed),
                            results_dir=results_dir, logs_dir=logs_dir, timeout_s=timeout,
                            total_iters=max(spec["iterations"] for spec in specs), start_at=start_at,
                            extra={"barrier": True} if scheme == "ideal" else {})
        t0 = _monotonic()
        results = self.backend.run_workload(workload, emit)
        wall = _monotonic() - t0
        try:
            after = self.network.read_counters()
        except Exception as exc:  # noqa: BLE001 - ConnectionError, ControlError: one line
            raise RunError(f"reading switch counters after {scheme} failed: {exc}") from None
        emit(ProgressEvent("done", scheme, workload.total_iters, workload.total_iters, f"{wall:.1f} s"))
        run = SchemeRun(scheme, results_dir, results, before, after, start_at, wall)
        (results_dir / "counters.json").write_text(json.dumps(run.counter_delta(), indent=1, default=str))
        return run


def _monotonic() -> float:
    import time

    return time.monotonic()


def run_scheme_task(task: par.SchemeTask, progress: ProgressFn) -> SchemeRun:
    """Run one scheme of ``task`` on a network of its own (in a scheme process, emu.vtime.parallel)."""
    exp = Experiment(task.topology, task.topology_path, target=task.target, out_dir=task.out_dir,
                     seed=task.seed, run_id=task.run_id, mode=task.mode, p4=task.p4)
    try:
        return exp.run_scheme(task.scheme, iterations=task.iterations, size=task.size, progress=progress,
                              placebo=task.placebo, block=task.block)
    finally:
        exp.close()


# --------------------------------------------------------------------------------------
# The main job
# --------------------------------------------------------------------------------------


def run(topology_path: str | os.PathLike[str], schemes: Sequence[str] = DEFAULT_SCHEMES, iterations: int | None = None,
        size: int | None = None, target: str = "embedded", out: str | os.PathLike[str] | None = None, seed: int = 1,
        progress: ProgressFn | None = None, mode: str = "mininet", pcap: bool = False,
        p4: str = "v1model", dilation: float | str | None = None, mtu: int | None = None,
        parallel: int | None = None, force: bool = False, order: str | None = None,
        payload: str | None = None, plots: bool = True,
        host_cost: str | os.PathLike[str] | Any = None) -> RunResult:
    """Run the topology's jobs once per scheme; write the results folder.

    Mininet runs the schemes one after the other on one network. Virtual time gives every
    scheme a fresh network from the same seed and runs ``parallel`` schemes at once, each in
    a process of its own (None: ``$SYMPHONY_EMU_PARALLEL``, else one per scheme up to the CPUs
    this process may use, see emu.vtime.parallel.default_parallel; 1: one after the other in this process), with
    the same results bit for bit either way.

    ``dilation``: Mininet mode only, time dilation D (emu.dilation.dilate: rates / D, delays
    and host timers * D); None uses the scenario's ``dilation`` field (default 1). The
    report's times are the scenario's (wall-clock times / D); summary.json gives ``dilation``
    and each job's ``cct_wall_s``. ``"auto"`` (or the scenario's ``dilation: auto``): the
    smallest D of :data:`AUTO_DILATIONS` at which the machine keeps up (:func:`choose_dilation`;
    summary.json's ``dilation`` and ``dilation_auto``, the probes). ``mtu``: override of the
    scenario's MTU (bytes). ``payload``: ``exact`` or ``digest`` for every job instead of the
    jobs' own (hostapps.collectives.PAYLOADS; None: the topology's, ``exact`` by default).

    ``out``: the results folder; one holding an earlier run is refused unless ``force``
    (which empties it first; Experiment.open).
    ``order``: Mininet mode, the order of the schemes' blocks on the one network
    (:data:`ORDERS`, :func:`plan_blocks`; None: ``abba``). Every block starts with the
    jobs' ``warmup`` iterations, recorded and left out of the statistics. Virtual time runs
    each scheme as one block on a fresh network, without warm-up (nothing drifts, and a
    simulated start costs nothing: the results stay those of earlier versions, bit for bit),
    except with ``host_cost``, which runs the warm-up as real time does.
    ``host_cost``: virtual time only, host processing time (emu.vtime.hostcost): a calibration
    file (``symphony-emu calibrate-host``) or a :class:`emu.vtime.hostcost.HostCost`; it
    replaces the scenario's ``host_cost``; None keeps the scenario's (unset: hosts cost nothing).
    run.json records the model used (``host_cost``).
    ``p4``: the P4 build, "v1model" or "tofino" (T2NA on the embedded target; see Experiment.open).
    ``mode``: the back end, "mininet" (real time, root) or "sim" (virtual time).
    ``pcap``: the switches write one capture per port to ``<out>/pcap/`` (see Experiment.open).
    ``plots``: False leaves out the two PNGs (a sweep's runs: about 1 s of CPU each; the CSVs
    and summary.json have every number, ``symphony-emu report`` draws them later).
    Returns a RunResult (``ok`` False when a result was not verified). Raises TopologyError,
    UsageError, TargetUnavailable (user mistakes, before anything starts), RunError (a
    worker failed, a switch died, the time limit passed) and KeyboardInterrupt (Ctrl-C or
    SIGTERM; everything started was stopped before it propagates).
    """
    for scheme in schemes:
        if scheme not in SCHEMES:
            raise UsageError(f"unknown scheme {scheme!r}: use {', '.join(SCHEMES)}")
        if scheme in CALIBRATED_FROM and CALIBRATED_FROM[scheme] not in schemes:
            raise UsageError(f"scheme {scheme}: it is calibrated from {CALIBRATED_FROM[scheme]} in the same run; "
                             f"add {CALIBRATED_FROM[scheme]} to the schemes")
    if mode != "sim" and any(s in SIM_ONLY for s in schemes):
        raise UsageError(f"scheme ideal: the per-step barrier at the hosts runs in virtual time only "
                         f"(here --mode {mode}); use --mode sim or drop it")
    if len(set(schemes)) != len(schemes):
        raise UsageError(f"schemes {', '.join(schemes)}: each scheme once")
    if mode not in BACKENDS:
        raise UsageError(f"unknown --mode {mode!r}: use {' or '.join(BACKENDS)}")
    if order is not None and order not in ORDERS:
        raise UsageError(f"unknown --order {order!r}: use {', '.join(ORDERS)}")
    if order is not None and mode != "mininet":
        raise UsageError(f"--order: virtual time runs each scheme once on a fresh network from the seed (nothing "
                         f"drifts; here --mode {mode}); drop --order")
    order = order or (DEFAULT_ORDER if mode == "mininet" else "sequential")
    if size is not None and (size <= 0 or size % 4):
        raise UsageError(f"--size {size}: give a positive multiple of 4 bytes (float32 elements)")
    topology_path = Path(topology_path)
    topology = load_topology(topology_path)
    if mtu is not None:
        if not 576 <= mtu <= 9000:
            raise UsageError(f"--mtu {mtu}: give 576..9000 bytes")
        topology = topology.model_copy(update={"mtu": mtu})
        topology.__dict__.pop("plan", None)
    if payload is not None:
        if payload not in PAYLOADS:
            raise UsageError(f"--payload {payload}: use {' or '.join(PAYLOADS)}")
        topology = topology.model_copy(update={"jobs": [j.model_copy(update={"payload": payload})
                                                        for j in topology.jobs]})
        topology.__dict__.pop("plan", None)
    for j, job in enumerate(topology.jobs):
        why = job.payload == "digest" and digest_too_small((size if size is not None else job.size_bytes) // 4,
                                                           len(job.ranks), job.slices)
        if why:
            where = "--size" if size is not None else f"{topology_path}: jobs[{j}].size_bytes"
            raise UsageError(f"{where}: job {job.id}: {why}; give a larger size or --payload exact")
    if host_cost is not None and mode != "sim":
        raise UsageError(f"--host-cost: the host model is for virtual time (here --mode {mode}, whose hosts are "
                         "real); drop --host-cost or use --mode sim")
    if mode == "sim":
        topology = resolve_host_cost(topology, topology_path, host_cost)
    if dilation is not None and mode != "mininet":
        raise UsageError(f"--dilation: only --mode mininet dilates time (here --mode {mode}); drop --dilation")
    if isinstance(dilation, str) and dilation != "auto":
        try:
            dilation = float(dilation)
        except ValueError:
            raise UsageError(f"--dilation {dilation}: give D >= 1 (1 = the scenario's own rates) or auto") from None
    if dilation is not None and dilation != "auto" and not (math.isfinite(dilation) and 1 <= dilation <= MAX_DILATION):
        raise UsageError(f"--dilation {dilation:g}: give D from 1 (the scenario's own rates) to {MAX_DILATION:g}, "
                         "or auto")
    if parallel is not None and parallel < 1:
        raise UsageError(f"--parallel {parallel}: give 1 or more (1 = the schemes one after the other)")
    if parallel is not None and parallel > 1 and mode != "sim":
        raise UsageError(f"--parallel {parallel}: only --mode sim runs schemes in parallel (here --mode {mode}); "
                         "drop --parallel")
    if mode == "sim" and parallel is None:
        try:
            parallel = par.default_parallel(len(schemes))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    parallel = max(1, min(parallel or 1, len(schemes)))
    wanted = (dilation if dilation is not None else topology.dilation) if mode == "mininet" else 1.0
    auto = wanted == "auto"
    d = AUTO_DILATIONS[0] if auto else float(wanted)

    run_topology = dilate(topology, d) if d != 1 else topology
    check_memory(topology, size=size, per_process=mode == "mininet", copies=parallel, path=topology_path)
    check_chunks(topology, size=size, path=topology_path)
    tried: list[dict[str, Any]] = []
    with Experiment.open(topology_path, topology=run_topology, target=target, out=Path(out) if out else None,
                         seed=seed, progress=progress, mode=mode, pcap=pcap, p4=p4, force=force) as exp:
        if auto:
            d, tried = choose_dilation(exp, topology, schemes[0], size=size, progress=progress)
            exp.update_run_file(dilation_auto=tried)
        blocks = exp.plan(schemes, iterations=iterations, order=order)
        if exp.backend.network_per_scheme:
            order = "sequential"
        if topology.host_cost is not None:
            exp.update_run_file(host_cost=topology.host_cost)
        built = compiled_mod.run_facts()
        stale = sorted(m for m, v in built["not_compiled"].items() if v == "stale build")
        if stale:
            log.warning("%d compiled module(s) are older than their source and run as Python source, slower "
                        "(%s); rebuild them with scripts/build_compiled.py", len(stale), ", ".join(stale))
        exp.update_run_file(compiled_modules=built)
        exp.update_run_file(schemes=list(schemes), dilation=d, mtu=topology.mtu, order=order,
                            blocks=[b.as_dict() for b in blocks],
                            **resolved_workload(exp.topology, iterations=iterations, size=size))
        # a scheme's metrics, worked out as soon as its process ended while the others still run (on the CPU
        # it freed; summarize works out the rest): the same function of the same files, so the same results
        early: dict[str, metrics.SchemeMetrics] = {}
        jobs = scheme_jobs(topology, iterations=iterations, size=size)

        def on_result(scheme: str, run: SchemeRun) -> None:
            try:
                early[scheme] = metrics.compute_metrics(run.results_dir, scheme=scheme, jobs=jobs, time_scale=1.0 / d)
            except Exception:  # noqa: BLE001 - summarize works it out again, and fails there as it would
                early.pop(scheme, None)

        runs = exp.run_schemes(schemes, iterations=iterations, size=size, progress=progress, parallel=parallel,
                               blocks=blocks, on_result=on_result)
        out_dir = exp.out_dir
    extra: dict[str, Any] | None = {"placebo_calibration": placebo_volume(runs, exp.placebo)} \
        if "placebo" in runs else None
    if auto:
        extra = {**(extra or {}), "dilation": d, "dilation_auto": tried}
    from emu import report

    # "finished" (the network torn down normally) is in run.json now; a signal or an error while the
    # summary, CSVs and plots are written says so there too, so that `report` does not read a run
    # whose outputs are missing or stale (and a Ctrl-C here gives rc 130, as during the schemes).
    fail: dict[str, Any] = {"status": "interrupted"}
    try:
        with signals_as_interrupt():
            summary, table = summarize(topology, out_dir, runs, iterations=iterations, size=size,
                                       title=f"{topology.name}, run {exp.run_id}", dilation=d, mode=mode,
                                       extra=extra, order=(order, blocks), plots=plots, computed=early)
            exp.update_run_file(summary=report.SUMMARY_FILE,
                                overload={s: summary[s].get("overload") for s in runs
                                          if isinstance(summary.get(s), dict)})
        fail = {}
    except SignalInterrupt as exc:  # SIGTERM or SIGHUP
        fail["signal"] = signal.Signals(exc.signum).name
        raise
    except KeyboardInterrupt:  # Ctrl-C
        raise
    except BaseException as exc:  # a bug in the metrics or plots: say so in run.json
        fail = {"status": "failed", "failure": f"writing the results: {exc or type(exc).__name__}"}
        raise
    finally:
        if fail:
            with interrupts_deferred():
                exp.update_run_file(ended=datetime.now().isoformat(timespec="seconds"), **fail)
    verified = all(summary.get(s, {}).get("verified", False) for s in runs)
    ok = verified and all(r.ok for r in runs.values())
    failure = None if ok else f"not every result was verified; see the logs in {out_dir}"
    return RunResult(out_dir, topology_path, runs, summary, ok, failure, table)


def resolve_host_cost(topology: Any, topology_path: Path, override: Any = None) -> Any:
    """``topology`` with its ``host_cost`` as the model's fields inline (emu.vtime.hostcost).

    ``override`` (``--host-cost``: a file or a HostCost) replaces the scenario's value; a
    path in the scenario is relative to its file. The copy is what every scheme's process
    gets. Raises UsageError (one line naming the file and field) for a bad file or value; for
    a file, the line begins with where it was named (``--host-cost`` or the scenario's ``host_cost``).
    """
    from emu.vtime import hostcost

    spec = override if override is not None else topology.host_cost
    if spec is None:
        return topology
    try:
        if isinstance(spec, hostcost.HostCost):
            cost = spec
        elif isinstance(spec, dict):
            cost = hostcost.from_dict(spec, f"{topology_path}: host_cost")
        else:
            path = Path(spec)
            if override is None and not path.is_absolute():
                path = topology_path.parent / path
            cost = hostcost.load(path)
    except hostcost.HostCostError as exc:
        where = "--host-cost" if override is not None else f"{topology_path}: host_cost"
        raise UsageError(f"{where}: {exc}" if not isinstance(spec, dict) else str(exc)) from None
    out = topology.model_copy(update={"host_cost": cost.as_dict()})
    out.__dict__.pop("plan", None)
    return out


#: ``--dilation auto``: the dilations tried, smallest first (the largest is used when none keeps up).
AUTO_DILATIONS = (1.0, 2.0, 4.0)
#: Measured iterations of each calibration probe (after the jobs' warm-up).
CALIBRATION_ITERATIONS = 2


def choose_dilation(exp: Experiment, topology: Any, scheme: str, *, size: int | None = None,
                    progress: ProgressFn | None = None,
                    candidates: Sequence[float] = AUTO_DILATIONS) -> tuple[float, list[dict[str, Any]]]:
    """``--dilation auto``: the smallest D of ``candidates`` at which the machine keeps up.

    ``exp`` holds the network built at ``candidates[0]``. At each D a short probe runs the
    whole workload of ``scheme`` (warm-up plus :data:`CALIBRATION_ITERATIONS`, background
    traffic included; results in ``<out>/calibration/D<D>/``, never in the statistics) and
    reads the run's own machine figures (emu.metrics.overload: workers' late wake-ups and
    CPU wait, switches' late departures, ranks' start lateness). The first D whose probe is
    not disturbed is kept, on the network the probe ran on; otherwise the network is
    rebuilt at the next D (``topology`` is the scenario as written). When none keeps up the
    largest is used and the run's table says the machine was busy. Returns (D, the probes:
    ``[{"dilation", "disturbed", "reasons"}, ...]``).
    """

    tried: list[dict[str, Any]] = []
    emit = progress or no_progress
    for i, d in enumerate(candidates):
        if i:
            emit(ProgressEvent("network", message=f"--dilation auto: rebuilding the network at D = {d:g}"))
            exp.rebuild(dilate(topology, d) if d != 1 else topology, emit)
        emit(ProgressEvent("network", message=f"--dilation auto: probing D = {d:g}"))
        load = exp.probe(scheme, dilation=d, topology=topology, size=size, progress=progress)
        tried.append({"dilation": d, "disturbed": bool(load.get("disturbed")), "reasons": load.get("reasons", [])})
        log.info("--dilation auto: D = %g %s", d, "keeps up" if not load.get("disturbed")
                 else f"disturbed ({'; '.join(load.get('reasons', []))})")
        if not load.get("disturbed"):
            return float(d), tried
    return float(candidates[-1]), tried


def job_warmup(job: Any) -> int:
    """Warm-up iterations of ``job`` per block: the topology's ``warmup`` (default 1)."""
    return int(job.warmup)


#: Bytes a worker holds per byte of its collective: input, result, receive buffers and the
#: float64 reference it verifies against (hostapps.worker), with headroom.
WORKER_BYTES_PER_BYTE = 16
#: The same in virtual time: the collective's buffer and its receive buffers per rank.
SIM_BYTES_PER_BYTE = 3
#: With ``payload: digest``, per byte of one chunk (``size / ranks``): the step's message in the
#: transport, sent and received, with headroom (the records themselves are ``ranks x slices x 16`` bytes).
DIGEST_BYTES_PER_CHUNK_BYTE = 4


def mem_available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo in bytes, or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(topology: Any, *, size: int | None, available: int | None = None,
                 per_process: bool = True, copies: int = 1, path: str | os.PathLike[str] | None = None) -> None:
    """UsageError when the workers of every job together would not fit in memory.

    Estimate: ``WORKER_BYTES_PER_BYTE * size`` per rank (worker processes, ``per_process``)
    or ``SIM_BYTES_PER_BYTE * size`` (virtual time: one process per scheme, no deferred
    verification), summed over the jobs' ranks, times ``copies`` (schemes running at once); a job
    with ``payload: digest`` ``DIGEST_BYTES_PER_CHUNK_BYTE * size / ranks`` per rank.
    The message names ``--size`` when it was given, else the jobs' ``size_bytes`` in the
    topology file ``path``.
    """
    per_byte = WORKER_BYTES_PER_BYTE if per_process else SIM_BYTES_PER_BYTE
    available = mem_available_bytes() if available is None else available
    if available is None:
        return
    need = copies * sum((DIGEST_BYTES_PER_CHUNK_BYTE if job.payload == "digest" else per_byte * len(job.ranks))
                        * (size if size is not None else job.size_bytes) for job in topology.jobs)
    if need > available:
        at_once = f" ({copies} schemes at once; --parallel 1 runs one at a time)" if copies > 1 else ""
        if size is not None:
            where, fix = "--size", "give a smaller --size"
        else:
            biggest = max(range(len(topology.jobs)), key=lambda i: topology.jobs[i].size_bytes * len(topology.jobs[i].ranks))
            where = f"{path or 'topology'}: jobs[{biggest}].size_bytes"
            fix = "lower the jobs' size_bytes, or give a smaller --size"
        raise UsageError(f"{where}: the workers would need about {need / 2**30:.1f} GiB{at_once} and "
                         f"{available / 2**30:.1f} GiB is available; {fix}")


def check_chunks(topology: Any, *, size: int | None, path: str | os.PathLike[str] | None = None) -> None:
    """UsageError (one line naming ``--size`` or the job's ``size_bytes``) when a job's step
    chunk would not fit the CTH's 24-bit offset (:func:`emu.topology_checks.chunk_problem`)."""
    for j, job in enumerate(topology.jobs):
        problem = chunk_problem(size if size is not None else job.size_bytes, len(job.ranks), job.channels)
        if problem is not None:
            where = "--size" if size is not None else f"{path or 'topology'}: jobs[{j}].size_bytes"
            raise UsageError(f"{where}: {problem}")


def resolved_workload(topology: Any, *, iterations: int | None, size: int | None) -> dict[str, Any]:
    """The iterations and sizes the jobs run with, for run.json.

    ``iterations`` / ``size``: one number when every job uses the same, else a list in job
    order; ``jobs``: per job; ``iterations_override`` / ``size_override``: what was given on
    the command line (null: the topology's).
    """
    jobs = [{"job": job.id, "collective": job.collective, "ranks": len(job.ranks),
             "iterations": iterations if iterations is not None else job.iterations,
             "size_bytes": size if size is not None else job.size_bytes, "payload": job.payload}
            for job in topology.jobs]

    def one_or_list(key: str) -> Any:
        values = [job[key] for job in jobs]
        return values[0] if len(set(values)) == 1 else values

    return {"iterations": one_or_list("iterations") if jobs else iterations,
            "size": one_or_list("size_bytes") if jobs else size, "jobs": jobs,
            "iterations_override": iterations, "size_override": size}


def scheme_jobs(topology: Any, *, iterations: int | None = None, size: int | None = None) -> dict[int, Any]:
    """The :class:`emu.metrics.JobInfo` of every job a scheme's metrics are computed with: the
    topology's (:func:`emu.metrics.job_infos`) with the run's ``size`` (bytes per rank) and
    ``iterations`` (times each job's collectives per iteration) where given."""
    import dataclasses

    return {
        job_id: dataclasses.replace(info, size_bytes=size if size is not None else info.size_bytes,
                                    iterations=(iterations * topology.job(job_id).collectives_per_iteration
                                                if iterations is not None else info.iterations))
        for job_id, info in metrics.job_infos(topology).items()
    }


def summarize(topology: Any, out_dir: Path, runs: dict[str, SchemeRun], *, iterations: int | None = None,
              size: int | None = None, title: str | None = None, dilation: float = 1.0,
              mode: str = "mininet", extra: dict[str, Any] | None = None,
              order: tuple[str, Sequence[Block]] | None = None, plots: bool = True,
              computed: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """Compute the metrics and write summary.json, cct.csv, steps.csv and the PNGs (``plots``) into ``out_dir``.

    Returns (summary dict, rich table). Per-switch counters of each scheme are in
    ``<scheme>/counters.json``. ``topology``: the scenario as written (its bounds are in
    scenario time); ``dilation``: D of a dilated run, whose logged wall-clock times are
    divided by D (emu.dilation). ``extra``: top-level keys merged into summary.json (the
    placebo's calibration and achieved volume, :func:`placebo_volume`). ``order``: (name,
    blocks) of the scheme order, written to summary.json (``scheme_order``, ``blocks``) and
    the table's caption. ``computed``: scheme -> its metrics already worked out from its final
    folder (``compute_metrics(run.results_dir, scheme=..., jobs=scheme_jobs(...), time_scale=1 /
    dilation)``, as here; :func:`run` does it for a scheme whose process ended while others ran).
    """
    infos = scheme_jobs(topology, iterations=iterations, size=size)
    computed = computed or {}
    scheme_metrics = {scheme: computed[scheme] if scheme in computed else
                      metrics.compute_metrics(run.results_dir, scheme=scheme, jobs=infos, time_scale=1.0 / dilation)
                      for scheme, run in runs.items()}
    counters = {scheme: counter_totals(run.counter_delta()) for scheme, run in runs.items()}
    from emu.routing import compute_routes

    order_info = None
    if order is not None:
        name, blocks = order
        order_info = {"scheme_order": name, "blocks": [b.as_dict() for b in blocks],
                      "order_words": order_words(blocks, name)}
    table = report.write_report(out_dir, scheme_metrics, counters, title=title, dilation=dilation, mode=mode,
                                paths=compute_routes(topology).flow_report() if topology.jobs else None,
                                order=order_info, plots=plots)
    summary = json.loads((out_dir / report.SUMMARY_FILE).read_text())
    if extra:
        summary.update(extra)
        (out_dir / report.SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        table = report.report_table(summary)  # the extra keys (--dilation auto's probes) are in the caption too
    return summary, table




def report_table(directory: Path) -> Any:
    """``symphony-emu report DIR``: redraw the plots of a results folder; return its rich table.

    UsageError (one line) when the folder holds no complete run.
    """
    try:
        return report.render_report(directory)
    except report.ReportError as exc:
        raise UsageError(str(exc)) from None


__all__ = ["Experiment", "ProgressEvent", "RunError", "RunResult", "SchemeRun", "TargetUnavailable", "UsageError",
           "WorkerResult", "exit_reason", "report_table", "run"]
