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
from collections.abc import Iterator, Sequence
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
from emu.vtime import parallel as par
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
#: Per-scheme time limit = START + iterations * (compute + SLACK * bound + PER_STEP * steps) + EXTRA.
TIMEOUT_BOUND_SLACK = 25.0
TIMEOUT_PER_STEP_S = 0.5
TIMEOUT_EXTRA_S = 30.0


@dataclass
class SchemeRun:
    """What one scheme's run produced."""

    scheme: str
    results_dir: Path
    workers: list[WorkerResult]
    counters_before: dict[str, Any]
    counters_after: dict[str, Any]
    start_at: float
    wall_s: float
    traffic: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every worker exited 0."""
        return all(w.returncode == 0 for w in self.workers)

    def counter_delta(self) -> dict[str, dict[str, Any]]:
        """Per switch: counters during this scheme (after - before) and the final core stats."""
        out: dict[str, dict[str, Any]] = {}
        for sw, after in self.counters_after.items():
            before = self.counters_before.get(sw, {})
            entry: dict[str, Any] = {}
            for key, values in after.items():
                if key == "stats":
                    entry["stats"] = _stats_delta(before.get("stats", {}), values)
                    continue
                prev = before.get(key, [0] * len(values))
                entry[key] = [a - b for a, b in zip(values, prev, strict=False)]
            out[sw] = entry
        return out


#: Keys of the switch core's stats() that count (subtracted per scheme); others are kept as read.
COUNTING_STATS = ("rx", "tx", "drops", "tail_drops", "pipeline", "io_lag")


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
               "topology.yaml", "logs", "pcap")
#: Held by the runner while it writes the folder (emu.cleanup.hold_run_lock).
RUN_LOCK = cleanup_mod.RUN_LOCK


def holds_run(path: Path) -> bool:
    """Whether ``path`` holds (part of) an earlier run: a run.json, a summary.json or workers' JSON lines."""
    return path.is_dir() and ((path / RUN_FILE).exists() or (path / "summary.json").exists()
                              or any(path.glob("*/job*-rank*.jsonl")) or any(path.glob("cli-*/")))


def empty_run_folder(path: Path) -> list[str]:
    """Remove what a run wrote in ``path`` (:data:`RUN_OUTPUTS`, scheme and ``cli-*`` folders);
    anything else stays. Returns the names removed."""
    import shutil

    removed = []
    for entry in sorted(path.iterdir()):
        is_scheme = entry.is_dir() and ((entry / "specs").is_dir() or any(entry.glob("job*-rank*.json*"))
                                        or (entry / "counters.json").exists())
        if entry.name in RUN_OUTPUTS or entry.name.startswith("cli-") or is_scheme:
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
                             "folder, or pass --force to empty it first")
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
                 results_dir: Path) -> list[dict[str, Any]]:
    """One worker spec per rank of every job (docs/interfaces.md section 4)."""
    plan = topology.plan
    specs = []
    for job in topology.jobs:
        ranks = [{"rank": r, "ip": plan.host(h).ip, "port": CTH_UDP_PORT} for r, h in enumerate(job.ranks)]
        iters = iterations if iterations is not None else job.iterations
        for r, host in enumerate(job.ranks):
            schedule = compute_schedule(job, r, iters, seed)
            extra = {} if schedule is None else {"compute": schedule.as_dict()}
            specs.append({
                "job_id": job.id, "rank": r, "host": host, "ranks": ranks,
                "collective": job.collective,
                "size_bytes": size if size is not None else job.size_bytes,
                "iterations": iters * job.collectives_per_iteration,
                "compute_s": job.compute_ms / 1000.0, **extra,
                "start_at": start_at + job.start_offset_ms / 1000.0,
                "line_rate_bps": plan.host(host).line_rate_bps,
                "rate_control": {"name": "dcqcn", "params": topology.dcqcn_for(job.id)},
                "mtu": topology.mtu, "transport": topology.transport_for(job.id),
                "step_timeout_s": job.step_timeout_s, "slices": job.slices,
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
        out_dir = make_out_dir((out or default_out_dir(run_id)).resolve(), given=out is not None, force=force)
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
        (self.out_dir / "topology.yaml").write_text(self.topology_path.read_text())

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

    def run_schemes(self, schemes: Sequence[str], *, iterations: int | None = None, size: int | None = None,
                    progress: ProgressFn | None = None, parallel: int = 1) -> dict[str, SchemeRun]:
        """Run every job once per scheme; scheme -> SchemeRun in the order of ``schemes``.

        ``parallel``: how many schemes run at the same time. 1 runs them one after the other in
        this process; more (back ends with ``network_per_scheme`` only: virtual time) runs
        each scheme in a process of its own (emu.vtime.parallel), with the same results bit
        for bit. A calibrated scheme (:data:`CALIBRATED_FROM`: the placebo) runs after the
        others, with what the scheme it is calibrated from measured; ``self.placebo`` then
        holds the placebo's probabilities. Raises as :meth:`run_scheme`.
        """
        first = [s for s in schemes if s not in CALIBRATED_FROM]
        later = [s for s in schemes if s in CALIBRATED_FROM]
        runs = self._run_schemes(first, iterations=iterations, size=size, progress=progress, parallel=parallel)
        if later:
            self.placebo = placebo_probabilities(runs["symphony"], [job.id for job in self.topology.jobs])
            log.info("placebo marking probabilities per job (from the symphony run): %s",
                     {j: round(p, 6) for j, p in self.placebo.items()})
            runs.update(self._run_schemes(later, iterations=iterations, size=size, progress=progress,
                                          parallel=parallel, placebo=self.placebo))
        return {scheme: runs[scheme] for scheme in schemes}

    def _run_schemes(self, schemes: Sequence[str], *, iterations: int | None, size: int | None,
                     progress: ProgressFn | None, parallel: int,
                     placebo: dict[int, float] | None = None) -> dict[str, SchemeRun]:
        if parallel <= 1 or len(schemes) < 2 or not self.backend.network_per_scheme:
            return {scheme: self.run_scheme(scheme, iterations=iterations, size=size, progress=progress,
                                            placebo=placebo)
                    for scheme in schemes}
        level = logging.getLogger().getEffectiveLevel()
        tasks = [par.SchemeTask(run=run_scheme_task, scheme=scheme, topology=self.topology, topology_path=self.topology_path,
                                     target=self.target, out_dir=self.out_dir, seed=self.seed, run_id=self.run_id,
                                     mode=self.mode, p4=self.p4, iterations=iterations, size=size, log_level=level,
                                     placebo=placebo)
                 for scheme in schemes]
        return par.run_schemes(tasks, progress or no_progress, parallel)

    def set_mode(self, scheme: str) -> None:
        """Put every switch in ``scheme``'s mode."""
        self.network.set_mode(scheme)

    # -- one run of the jobs --------------------------------------------------------------
    def run_scheme(self, scheme: str, *, iterations: int | None = None, size: int | None = None,
                   progress: ProgressFn | None = None, results_dir: Path | None = None,
                   placebo: dict[int, float] | None = None) -> SchemeRun:
        """Run every job once with ``scheme``'s marking; RunError if a worker fails.

        ``placebo``: job id -> marking probability, for scheme "placebo" (see
        :func:`placebo_probabilities`).

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
                             results_dir=results_dir)
        (results_dir / "specs").mkdir(exist_ok=True)
        for spec in specs:
            name = f"job{spec['job_id']}-rank{spec['rank']}.json"
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
                              placebo=task.placebo)
    finally:
        exp.close()


# --------------------------------------------------------------------------------------
# The main job
# --------------------------------------------------------------------------------------


def run(topology_path: str | os.PathLike[str], schemes: Sequence[str] = DEFAULT_SCHEMES, iterations: int | None = None,
        size: int | None = None, target: str = "embedded", out: str | os.PathLike[str] | None = None, seed: int = 1,
        progress: ProgressFn | None = None, mode: str = "mininet", pcap: bool = False,
        p4: str = "v1model", dilation: float | None = None, mtu: int | None = None,
        parallel: int | None = None, force: bool = False) -> RunResult:
    """Run the topology's jobs once per scheme; write the results folder.

    Mininet runs the schemes one after the other on one network. Virtual time gives every
    scheme a fresh network from the same seed and runs ``parallel`` schemes at once, each in
    a process of its own (None: ``$SYMPHONY_EMU_PARALLEL``, else one per scheme up to the CPUs
    this process may use, see emu.vtime.parallel.default_parallel; 1: one after the other in this process), with
    the same results bit for bit either way.

    ``dilation``: Mininet mode only, time dilation D (emu.dilation.dilate: rates / D, delays
    and host timers * D); None uses the scenario's ``dilation`` field (default 1). The
    report's times are the scenario's (wall-clock times / D); summary.json gives ``dilation``
    and each job's ``cct_wall_s``. ``mtu``: override of the scenario's MTU (bytes).

    ``out``: the results folder; one holding an earlier run is refused unless ``force``
    (which empties it first; Experiment.open).
    ``p4``: the P4 build, "v1model" or "tofino" (T2NA on the embedded target; see Experiment.open).
    ``mode``: the back end, "mininet" (real time, root) or "sim" (virtual time).
    ``pcap``: the switches write one capture per port to ``<out>/pcap/`` (see Experiment.open).
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
    if size is not None and (size <= 0 or size % 4):
        raise UsageError(f"--size {size}: give a positive multiple of 4 bytes (float32 elements)")
    topology_path = Path(topology_path)
    topology = load_topology(topology_path)
    if mtu is not None:
        if not 576 <= mtu <= 9000:
            raise UsageError(f"--mtu {mtu}: give 576..9000 bytes")
        topology = topology.model_copy(update={"mtu": mtu})
        topology.__dict__.pop("plan", None)
    if dilation is not None and mode != "mininet":
        raise UsageError(f"--dilation: only --mode mininet dilates time (here --mode {mode}); drop --dilation")
    if dilation is not None and not (math.isfinite(dilation) and dilation >= 1):
        raise UsageError(f"--dilation {dilation}: give D >= 1 (1 = the scenario's own rates)")
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
    d = (dilation if dilation is not None else topology.dilation) if mode == "mininet" else 1.0
    run_topology = dilate(topology, d) if d != 1 else topology
    check_memory(topology, size=size, per_process=mode == "mininet", copies=parallel, path=topology_path)
    with Experiment.open(topology_path, topology=run_topology, target=target, out=Path(out) if out else None,
                         seed=seed, progress=progress, mode=mode, pcap=pcap, p4=p4, force=force) as exp:
        exp.update_run_file(schemes=list(schemes), dilation=d, mtu=topology.mtu,
                            **resolved_workload(exp.topology, iterations=iterations, size=size))
        runs = exp.run_schemes(schemes, iterations=iterations, size=size, progress=progress, parallel=parallel)
        out_dir = exp.out_dir
    extra = {"placebo_calibration": placebo_volume(runs, exp.placebo)} if "placebo" in runs else None
    summary, table = summarize(topology, out_dir, runs, iterations=iterations, size=size,
                               title=f"{topology.name}, run {exp.run_id}", dilation=d, mode=mode, extra=extra)
    exp.update_run_file(summary=report.SUMMARY_FILE,
                        overload={s: summary[s].get("overload") for s in runs if isinstance(summary.get(s), dict)})
    verified = all(summary.get(s, {}).get("verified", False) for s in runs)
    ok = verified and all(r.ok for r in runs.values())
    failure = None if ok else f"not every result was verified; see the logs in {out_dir}"
    return RunResult(out_dir, topology_path, runs, summary, ok, failure, table)


#: Bytes a worker holds per byte of its collective: input, result, receive buffers and the
#: float64 reference it verifies against (hostapps.worker), with headroom.
WORKER_BYTES_PER_BYTE = 16
#: The same in virtual time: the collective's buffer and its receive buffers per rank.
SIM_BYTES_PER_BYTE = 3


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
    verification), summed over the jobs' ranks, times ``copies`` (schemes running at once).
    The message names ``--size`` when it was given, else the jobs' ``size_bytes`` in the
    topology file ``path``.
    """
    per_byte = WORKER_BYTES_PER_BYTE if per_process else SIM_BYTES_PER_BYTE
    available = mem_available_bytes() if available is None else available
    if available is None:
        return
    need = copies * sum(per_byte * (size if size is not None else job.size_bytes) * len(job.ranks)
                        for job in topology.jobs)
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


def resolved_workload(topology: Any, *, iterations: int | None, size: int | None) -> dict[str, Any]:
    """The iterations and sizes the jobs run with, for run.json.

    ``iterations`` / ``size``: one number when every job uses the same, else a list in job
    order; ``jobs``: per job; ``iterations_override`` / ``size_override``: what was given on
    the command line (null: the topology's).
    """
    jobs = [{"job": job.id, "collective": job.collective, "ranks": len(job.ranks),
             "iterations": iterations if iterations is not None else job.iterations,
             "size_bytes": size if size is not None else job.size_bytes} for job in topology.jobs]

    def one_or_list(key: str) -> Any:
        values = [job[key] for job in jobs]
        return values[0] if len(set(values)) == 1 else values

    return {"iterations": one_or_list("iterations") if jobs else iterations,
            "size": one_or_list("size_bytes") if jobs else size, "jobs": jobs,
            "iterations_override": iterations, "size_override": size}


def summarize(topology: Any, out_dir: Path, runs: dict[str, SchemeRun], *, iterations: int | None = None,
              size: int | None = None, title: str | None = None, dilation: float = 1.0,
              mode: str = "mininet", extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """Compute the metrics and write summary.json, cct.csv, steps.csv and the PNGs into ``out_dir``.

    Returns (summary dict, rich table). Per-switch counters of each scheme are in
    ``<scheme>/counters.json``. ``topology``: the scenario as written (its bounds are in
    scenario time); ``dilation``: D of a dilated run, whose logged wall-clock times are
    divided by D (emu.dilation). ``extra``: top-level keys merged into summary.json (the
    placebo's calibration and achieved volume, :func:`placebo_volume`).
    """
    import dataclasses

    infos = {
        job_id: dataclasses.replace(info, size_bytes=size if size is not None else info.size_bytes,
                                    iterations=(iterations * topology.job(job_id).collectives_per_iteration
                                                if iterations is not None else info.iterations))
        for job_id, info in metrics.job_infos(topology).items()
    }
    scheme_metrics = {scheme: metrics.compute_metrics(run.results_dir, scheme=scheme, jobs=infos,
                                                      time_scale=1.0 / dilation)
                      for scheme, run in runs.items()}
    counters = {scheme: counter_totals(run.counter_delta()) for scheme, run in runs.items()}
    from emu.routing import compute_routes

    table = report.write_report(out_dir, scheme_metrics, counters, title=title, dilation=dilation, mode=mode,
                                paths=compute_routes(topology).flow_report() if topology.jobs else None)
    summary = json.loads((out_dir / report.SUMMARY_FILE).read_text())
    if extra:
        summary.update(extra)
        (out_dir / report.SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
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
