"""The experiment runner: the same network, jobs and background traffic for each scheme.

``run()`` builds the topology's Mininet network once, programs it, and then for each scheme
(baseline, symphony) sets the switches' Symphony mode, zeroes the tracker registers, starts
the background traffic and one worker per rank (``python -m hostapps.worker``, spec in
docs/interfaces.md section 4) inside the Mininet hosts, waits for them, and reads the switch
counters before and after. Everything but the ``mode`` of ``symphony_config`` is shared by
the schemes: routes, queues, ECN thresholds, Symphony parameters, seeds, data, start
offsets, background traffic. Metrics and reports (emu.metrics, emu.report) go into the
results folder.

Interrupts (Ctrl-C, SIGTERM) stop workers, traffic, switches and Mininet; a safety net
(:func:`emu.cleanup.cleanup` scoped to the run) removes whatever escaped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from emu import cleanup as cleanup_mod
from emu.targets import SwitchOptions, SwitchStartError, TargetUnavailable, target_class

log = logging.getLogger(__name__)

#: Environment variable that tags every process of a run (cleanup finds escaped ones).
RUN_ENV = cleanup_mod.RUN_ENV
#: Root of the per-run runtime directories (control sockets, worker specs).
RUN_ROOT = cleanup_mod.RUN_ROOT
#: Schemes in run order.
SCHEMES = ("baseline", "symphony")
#: Repository root (worker processes get it on PYTHONPATH).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: UDP port of the background traffic (docs/interfaces.md section 1).
TRAFFIC_PORT = 5001
#: Time from launching the workers to their common start (s): imports take ~1 s per process
#: on a loaded 2-core machine; the workers start together at ``start_at`` regardless.
START_DELAY_BASE_S = 2.0
START_DELAY_PER_WORKER_S = 0.25
#: Per-scheme time limit = START + iterations * (compute + SLACK * bound + PER_STEP * steps) + EXTRA.
TIMEOUT_BOUND_SLACK = 25.0
TIMEOUT_PER_STEP_S = 0.5
TIMEOUT_EXTRA_S = 30.0
#: Longest wait between progress updates while workers run (s); worker exits wake it at once.
POLL_INTERVAL_S = 0.5


class UsageError(Exception):
    """A user mistake (not root, bad arguments); ``str()`` is one line (CLI exit code 2)."""


class RunError(Exception):
    """The run failed at run time (a worker failed, a switch died, time ran out); one line."""


@dataclass(frozen=True)
class ProgressEvent:
    """A progress report: ``phase`` is "network", "start", "running", "done" or "info".

    scheme: the scheme ("" for network events); done/total: iterations finished (summed over
    ranks of every job, divided by ranks, i.e. collectives completed by all ranks);
    message: free text for the status line.
    """

    phase: str
    scheme: str = ""
    done: int = 0
    total: int = 0
    message: str = ""


ProgressFn = Callable[[ProgressEvent], None]


@dataclass
class WorkerResult:
    """One worker process: exit code, last line of its output, where its log and JSON lines are."""

    job: int
    rank: int
    host: str
    returncode: int | None
    reason: str
    log_path: Path
    jsonl_path: Path


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
COUNTING_STATS = ("rx", "tx", "drops", "tail_drops", "pipeline")


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
    """
    totals = {"symphony_marks": 0, "queue_marks": 0, "drops": 0}
    for entry in delta.values():
        totals["symphony_marks"] += sum(entry.get("symphony_marks", []))
        totals["queue_marks"] += sum(entry.get("queue_marks", []))
        drops = entry.get("stats", {}).get("drops")
        if isinstance(drops, dict):
            totals["drops"] += sum(int(v) for v in drops.values() if isinstance(v, int | float))
        else:
            totals["drops"] += sum(entry.get("drops", []))
    return totals


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
# Checks
# --------------------------------------------------------------------------------------


def require_root() -> None:
    """UsageError unless running as root (Mininet creates namespaces and links)."""
    if os.geteuid() != 0:
        raise UsageError("Mininet needs root: run sudo .venv/bin/symphony-emu ... (or sudo ./scripts/setup.sh run)")


def require_mininet() -> None:
    """UsageError unless the mininet module and mnexec are installed."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("mininet") is None:
        raise UsageError("the mininet Python module is missing: run sudo ./scripts/setup.sh "
                         "(apt-get install mininet; the venv needs --system-site-packages)")
    for binary in ("mnexec", "ip", "ethtool"):
        if shutil.which(binary) is None:
            raise UsageError(f"{binary} is not installed: run sudo ./scripts/setup.sh")


def new_run_id() -> str:
    """A run id: timestamp plus pid (unique on one machine)."""
    return datetime.now().strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def default_out_dir(run_id: str) -> Path:
    """results/<run id>/ (timestamp plus pid) under the current directory.

    The pid stays in the name so that two runs started in the same second get two folders.
    """
    return Path.cwd() / "results" / run_id


def make_out_dir(path: Path, *, given: bool = True) -> Path:
    """Create the results folder ``path`` and check that files can be written in it.

    ``given``: whether the user named it (``--out``). Raises UsageError (one line) when it
    cannot be created or written.
    """
    import tempfile

    action = "create"
    try:
        path.mkdir(parents=True, exist_ok=True)
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
# Signals
# --------------------------------------------------------------------------------------


def _raise_interrupt(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt like Ctrl-C (main thread only)."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM within the block (teardown must finish)."""
    try:
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


# --------------------------------------------------------------------------------------
# Worker specs and processes
# --------------------------------------------------------------------------------------


def collective_bound_s(topology: Any, job_id: int, size_bytes: int) -> float:
    """The bandwidth bound of one collective (s): ``2(N-1)/N * S / B`` for all-reduce
    (docs/DESIGN.md section 7), ``(N-1)/N * S / B`` for all-gather and reduce-scatter, where B
    is the job's lockstep fair share (emu.routing.JobBandwidth.fair_share_bps)."""
    from emu import routing

    job = topology.job(job_id)
    n = len(job.ranks)
    bw = routing.compute_routes(topology).job_bandwidth(job_id).fair_share_bps
    factor = 2 * (n - 1) / n if job.collective == "allreduce" else (n - 1) / n
    return factor * size_bytes * 8 / bw


def worker_specs(topology: Any, *, iterations: int | None, size: int | None, seed: int, start_at: float,
                 results_dir: Path) -> list[dict[str, Any]]:
    """One worker spec per rank of every job (docs/interfaces.md section 4)."""
    from hostapps.wire import CTH_UDP_PORT

    plan = topology.plan
    specs = []
    for job in topology.jobs:
        ranks = [{"rank": r, "ip": plan.host(h).ip, "port": CTH_UDP_PORT} for r, h in enumerate(job.ranks)]
        for r, host in enumerate(job.ranks):
            specs.append({
                "job_id": job.id, "rank": r, "host": host, "ranks": ranks,
                "collective": job.collective,
                "size_bytes": size if size is not None else job.size_bytes,
                "iterations": iterations if iterations is not None else job.iterations,
                "compute_s": job.compute_ms / 1000.0,
                "start_at": start_at + job.start_offset_ms / 1000.0,
                "line_rate_bps": plan.host(host).line_rate_bps,
                "rate_control": {"name": "dcqcn", "params": topology.dcqcn_for(job.id)},
                "mtu": 1500, "step_timeout_s": job.step_timeout_s, "slices": job.slices,
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
        per_iter = (job.compute_ms / 1000.0 + TIMEOUT_BOUND_SLACK * collective_bound_s(topology, job.id, nbytes)
                    + TIMEOUT_PER_STEP_S * steps)
        total = job.start_offset_ms / 1000.0 + iters * per_iter + 2 * job.step_timeout_s
        worst = max(worst, total)
    return start_delay + worst + TIMEOUT_EXTRA_S


def exit_reason(code: int) -> str:
    """A worker's exit status in words: a negative code is the signal that killed it."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory? see dmesg)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class _Progress:
    """Counts finished iterations from the workers' growing JSON lines files."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.offsets = {p: 0 for p in paths}
        self.counts = {p: 0 for p in paths}
        #: iterations whose step records a rank wrote (it writes them when the collective ends;
        #: its "iteration" records may come only after the last one, see hostapps.worker).
        self.stepped: dict[Path, set[int]] = {p: set() for p in paths}
        self.errors: dict[Path, str] = {}

    def update(self) -> None:
        for path, offset in self.offsets.items():
            try:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1
            if end == 0:
                continue
            self.offsets[path] = offset + end
            for line in chunk[:end].splitlines():
                if b'"iteration"' not in line and b'"error"' not in line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                kind = rec.get("kind")
                if kind == "step" and isinstance(rec.get("iteration"), int):
                    self.stepped[path].add(rec["iteration"])
                    self.counts[path] = max(self.counts[path], len(self.stepped[path]))
                elif kind == "iteration":
                    self.counts[path] = max(self.counts[path], rec.get("iteration", -1) + 1)
                elif kind == "error":
                    self.errors.setdefault(path, str(rec.get("message", "")))

    def done(self) -> int:
        """Collectives completed by all ranks (minimum over ranks, summed over jobs is not needed)."""
        return min(self.counts.values()) if self.counts else 0


class _ExitWaiter:
    """Wait until one of some processes exits (pidfds in select), or a timeout."""

    def __init__(self, procs: Sequence[subprocess.Popen]) -> None:
        self.fds: list[int] = []
        for proc in procs:
            try:
                self.fds.append(os.pidfd_open(proc.pid))
            except (OSError, AttributeError):  # exited already / no pidfd: fall back to the timeout
                pass

    def __enter__(self) -> _ExitWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()

    def wait(self, timeout_s: float) -> None:
        """Return after ``timeout_s`` seconds or as soon as one of the processes exits."""
        import select

        ready, _, _ = select.select(self.fds, [], [], timeout_s) if self.fds else ([], [], [])
        for fd in ready:  # an exited process stays readable: stop watching it
            self.fds.remove(fd)
            os.close(fd)
        if not self.fds and not ready:
            time.sleep(timeout_s)


def _terminate(procs: Sequence[subprocess.Popen], timeout_s: float = 3.0) -> None:
    """SIGTERM every live process, SIGKILL those still alive after ``timeout_s`` seconds."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for p in live:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()


# --------------------------------------------------------------------------------------
# Experiment: one network, several runs of the jobs
# --------------------------------------------------------------------------------------


class Experiment:
    """A programmed network of one topology on which the jobs run once per scheme.

    Use :meth:`open` (a context manager) to build and always tear down the network.
    """

    def __init__(self, topology: Any, topology_path: Path, *, target: str, out_dir: Path, seed: int,
                 run_id: str) -> None:
        self.topology = topology
        self.topology_path = topology_path
        self.target = target
        self.out_dir = out_dir
        self.seed = seed
        self.run_id = run_id
        self.run_dir = RUN_ROOT / run_id
        self.network: Any = None
        self._children: list[subprocess.Popen] = []
        self._cli_runs = 0

    @classmethod
    @contextlib.contextmanager
    def open(cls, topology_path: Path, *, target: str = "embedded", out: Path | None = None, seed: int = 1,
             progress: ProgressFn | None = None, run_id: str | None = None) -> Iterator[Experiment]:
        """Validate, check the machine, build and program the network; tear it down on exit.

        Raises TopologyError / UsageError / TargetUnavailable before anything starts.
        """
        from emu.topology import load_topology

        topology = load_topology(topology_path)
        target_cls = target_class(target)  # TargetUnavailable: one line
        require_root()
        require_mininet()
        if not topology.jobs:
            raise UsageError(f"{topology_path}: jobs: the topology has no job to run; add one (docs/topology-format.md)")
        names = [h.name for h in topology.hosts] + [s.name for s in topology.switches]
        stale = cleanup_mod.find_links(names)
        if stale:
            raise UsageError(f"links {', '.join(stale[:4])}{' ...' if len(stale) > 4 else ''} already exist (another "
                             "network, or a killed run): stop it or run sudo .venv/bin/symphony-emu clean")
        run_id = run_id or new_run_id()
        out_dir = make_out_dir((out or default_out_dir(run_id)).resolve(), given=out is not None)
        exp = cls(topology, Path(topology_path), target=target, out_dir=out_dir, seed=seed, run_id=run_id)
        exp.update_run_file(run_id=run_id, topology=str(topology_path), topology_name=topology.name, target=target,
                            seed=seed, started=datetime.now().isoformat(timespec="seconds"), status="starting")
        previous = os.environ.get(RUN_ENV)
        os.environ[RUN_ENV] = run_id  # inherited by switches, workers, traffic: cleanup finds them
        end: dict[str, Any] = {"status": "interrupted"}  # unless the block ends or fails otherwise
        try:
            with sigterm_as_interrupt():
                exp._build(target_cls, progress)
                exp.update_run_file(status="running")
                yield exp
            end = {"status": "finished"}
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM
            raise
        except BaseException as exc:  # RunError, or a bug: say so in run.json
            end = {"status": "failed", "failure": str(exc) or type(exc).__name__}
            raise
        finally:
            with interrupts_deferred():
                exp.close()
                exp.update_run_file(ended=datetime.now().isoformat(timespec="seconds"), **end)
            if previous is None:
                os.environ.pop(RUN_ENV, None)
            else:
                os.environ[RUN_ENV] = previous

    def _build(self, target_cls: type, progress: ProgressFn | None) -> None:
        from emu.network import NetworkError, build_network

        emit = progress or (lambda event: None)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        options = SwitchOptions(control_dir=self.run_dir, log_dir=self.out_dir / "logs", seed=self.seed)
        emit(ProgressEvent("network", message=f"starting {len(self.topology.switches)} switches"))
        t0 = time.monotonic()
        try:
            self.network = build_network(self.topology, target_cls=target_cls, options=options, target=self.target)
            emit(ProgressEvent("network", message="programming switches"))
            self.network.program("baseline")
        except (SwitchStartError, NetworkError) as exc:
            raise RunError(str(exc)) from None
        emit(ProgressEvent("network", message=f"network ready in {time.monotonic() - t0:.1f} s"))
        (self.out_dir / "topology.yaml").write_text(self.topology_path.read_text())

    def update_run_file(self, **fields: Any) -> None:
        """Merge ``fields`` into the results folder's run.json (what ran and how it ended).

        ``status`` is "starting" (building the network), "running", "finished" (network torn
        down normally), "failed" (with ``failure``) or "interrupted" (Ctrl-C, SIGTERM); a run
        killed with SIGKILL stays "starting" or "running". Write errors are logged, not raised.
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
        """Stop every child, the switches and Mininet, then sweep leftovers of this run."""
        _terminate(self._children)
        self._children.clear()
        if self.network is not None:
            try:
                self.network.stop()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                log.warning("stopping the network: %s", exc)
        names = [h.name for h in self.topology.hosts] + [s.name for s in self.topology.switches]
        left = cleanup_mod.cleanup(run_tag=self.run_id, run_id=self.run_id, node_names=names)
        if not left.empty():
            log.info("swept leftovers: %s", left)

    def set_mode(self, scheme: str) -> None:
        """Put every switch in ``scheme``'s mode."""
        self.network.set_mode(scheme)

    # -- one run of the jobs --------------------------------------------------------------
    def run_scheme(self, scheme: str, *, iterations: int | None = None, size: int | None = None,
                   progress: ProgressFn | None = None, results_dir: Path | None = None) -> SchemeRun:
        """Run every job once with ``scheme``'s marking; RunError if a worker fails."""
        from emu.network import NetworkError

        emit = progress or (lambda event: None)
        results_dir = results_dir or self.out_dir / scheme
        results_dir.mkdir(parents=True, exist_ok=True)
        logs_dir = results_dir / "logs"
        logs_dir.mkdir(exist_ok=True)
        specs_dir = self.run_dir / f"specs-{results_dir.name}"
        specs_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.network.set_mode(scheme)
            self.network.reset_jobs()
            before = self.network.read_counters()
        except (NetworkError, ConnectionError) as exc:
            raise RunError(f"switch control failed before {scheme}: {exc}") from None

        n_workers = sum(len(job.ranks) for job in self.topology.jobs)
        start_delay = START_DELAY_BASE_S + START_DELAY_PER_WORKER_S * n_workers
        start_at = time.time() + start_delay
        specs = worker_specs(self.topology, iterations=iterations, size=size, seed=self.seed, start_at=start_at,
                             results_dir=results_dir)
        timeout = scheme_timeout_s(self.topology, iterations=iterations, size=size, start_delay=start_delay)
        total_iters = max(spec["iterations"] for spec in specs)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
                   PYTHONUNBUFFERED="1", **{RUN_ENV: self.run_id})

        workers: list[tuple[dict[str, Any], subprocess.Popen, Path]] = []
        traffic: list[subprocess.Popen] = []
        pending_sources = self._traffic_plan(start_at, timeout, logs_dir)
        t0 = time.monotonic()
        try:
            for dst in sorted({flow.dst for flow in self.topology.background}):
                stats = results_dir / f"sink-{dst}.json"
                cmd = [sys.executable, "-m", "hostapps.traffic", "sink", "--port", str(TRAFFIC_PORT),
                       "--duration-s", f"{timeout:.0f}", "--stats", str(stats)]
                traffic.append(self._popen(dst, cmd, logs_dir / f"sink-{dst}.log", env))
            for spec in specs:
                host = spec.pop("host")
                path = specs_dir / f"job{spec['job_id']}-rank{spec['rank']}.json"
                path.write_text(json.dumps(spec, indent=1))
                (results_dir / "specs").mkdir(exist_ok=True)
                (results_dir / "specs" / path.name).write_text(path.read_text())
                logf = logs_dir / f"job{spec['job_id']}-rank{spec['rank']}.log"
                cmd = [sys.executable, "-m", "hostapps.worker", "--spec", str(path)]
                workers.append(({**spec, "host": host}, self._popen(host, cmd, logf, env), logf))
            emit(ProgressEvent("start", scheme, 0, total_iters, f"{len(workers)} workers"))
            jsonl = [results_dir / f"job{s['job_id']}-rank{s['rank']}.jsonl" for s, _, _ in workers]
            tracker = _Progress(jsonl)
            deadline = time.monotonic() + timeout
            last_done = -1
            with _ExitWaiter([proc for _, proc, _ in workers]) as waiter:
                while True:
                    now_wall = time.time()
                    while pending_sources and pending_sources[0][0] <= now_wall:
                        _, host, cmd, logf = pending_sources.pop(0)
                        traffic.append(self._popen(host, cmd, logf, env))
                    codes = [proc.poll() for _, proc, _ in workers]
                    for (spec, _, logf), code in zip(workers, codes, strict=True):
                        if code not in (None, 0):
                            reason = _last_line(logf) or exit_reason(code)
                            raise RunError(f"{scheme}: job {spec['job_id']} rank {spec['rank']} on {spec['host']} "
                                           f"failed: {reason} (log {logf})")
                    tracker.update()
                    if tracker.done() != last_done:
                        last_done = tracker.done()
                        emit(ProgressEvent("running", scheme, last_done, total_iters))
                    if all(code == 0 for code in codes):
                        break
                    self.network.check_switches()
                    if time.monotonic() > deadline:
                        slow = [f"job{s['job_id']}-rank{s['rank']}"
                                for (s, _, _), c in zip(workers, codes, strict=True) if c is None]
                        raise RunError(f"{scheme}: workers {', '.join(slow)} still running after the time limit "
                                       f"of {timeout:.0f} s; see {logs_dir}")
                    wake = POLL_INTERVAL_S
                    if pending_sources:
                        wake = min(wake, max(0.0, pending_sources[0][0] - time.time()))
                    waiter.wait(wake)  # returns early when a worker exits
        except NetworkError as exc:
            raise RunError(f"{scheme}: {exc}") from None
        finally:
            _terminate([proc for _, proc, _ in workers] + traffic)
            for proc in [proc for _, proc, _ in workers] + traffic:
                with contextlib.suppress(ValueError):
                    self._children.remove(proc)
        wall = time.monotonic() - t0
        try:
            after = self.network.read_counters()
        except (ConnectionError, Exception) as exc:  # noqa: BLE001
            raise RunError(f"reading switch counters after {scheme} failed: {exc}") from None
        results = [WorkerResult(spec["job_id"], spec["rank"], spec["host"], proc.returncode, _last_line(logf), logf,
                                results_dir / f"job{spec['job_id']}-rank{spec['rank']}.jsonl")
                   for spec, proc, logf in workers]
        emit(ProgressEvent("done", scheme, total_iters, total_iters, f"{wall:.1f} s"))
        run = SchemeRun(scheme, results_dir, results, before, after, start_at, wall)
        (results_dir / "counters.json").write_text(json.dumps(run.counter_delta(), indent=1, default=str))
        return run

    def _popen(self, host: str, cmd: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
        """Start ``cmd`` in Mininet host ``host``'s namespace, output to ``log_path``."""
        node = self.network.host(host)
        with open(log_path, "wb") as logf:
            # Mininet's popen passes keyword arguments on to subprocess.Popen; mnexec execs in place,
            # so the parent-death signal reaches the worker itself.
            proc = node.popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, env=env,
                              cwd=str(log_path.parent), preexec_fn=cleanup_mod.die_with_parent())
        self._children.append(proc)
        return proc

    def _traffic_plan(self, start_at: float, timeout: float, logs_dir: Path) -> list[tuple[float, str, list[str], Path]]:
        """(wall-clock start, host, command, log) of each background source, by start time."""
        plan = self.topology.plan
        out = []
        for i, flow in enumerate(self.topology.background):
            duration = flow.duration_ms / 1000.0 if flow.duration_ms is not None else timeout
            cmd = [sys.executable, "-m", "hostapps.traffic", "source", "--dst", plan.host(flow.dst).ip,
                   "--port", str(TRAFFIC_PORT), "--rate-mbps", f"{flow.rate_mbps:g}", "--on-ms", f"{flow.on_ms:g}",
                   "--off-ms", f"{flow.off_ms:g}", "--duration-s", f"{duration:g}", "--size", str(flow.packet_bytes)]
            if flow.exponential:
                cmd += ["--seed", str(self.seed * 1000 + i)]
            log_path = logs_dir / f"bg{i}-{flow.src}-{flow.dst}.log"
            out.append((start_at + flow.start_ms / 1000.0, flow.src, cmd, log_path))
        return sorted(out, key=lambda item: item[0])


# --------------------------------------------------------------------------------------
# The main job
# --------------------------------------------------------------------------------------


def run(topology_path: str | os.PathLike[str], schemes: Sequence[str] = SCHEMES, iterations: int | None = None,
        size: int | None = None, target: str = "embedded", out: str | os.PathLike[str] | None = None, seed: int = 1,
        progress: ProgressFn | None = None) -> RunResult:
    """Run the topology's jobs once per scheme on one network; write the results folder.

    Returns a RunResult (``ok`` False when a result was not verified). Raises TopologyError,
    UsageError, TargetUnavailable (user mistakes, before anything starts), RunError (a
    worker failed, a switch died, the time limit passed) and KeyboardInterrupt (Ctrl-C or
    SIGTERM; everything started was stopped before it propagates).
    """
    for scheme in schemes:
        if scheme not in SCHEMES:
            raise UsageError(f"unknown scheme {scheme!r}: use baseline, symphony or both")
    if size is not None and (size <= 0 or size % 4):
        raise UsageError(f"--size {size}: give a positive multiple of 4 bytes (float32 elements)")
    topology_path = Path(topology_path)
    from emu.topology import load_topology

    check_memory(load_topology(topology_path), size=size)
    runs: dict[str, SchemeRun] = {}
    with Experiment.open(topology_path, target=target, out=Path(out) if out else None, seed=seed,
                         progress=progress) as exp:
        exp.update_run_file(schemes=list(schemes), **resolved_workload(exp.topology, iterations=iterations, size=size))
        for scheme in schemes:
            runs[scheme] = exp.run_scheme(scheme, iterations=iterations, size=size, progress=progress)
        out_dir = exp.out_dir
        topology = exp.topology
    summary, table = summarize(topology, out_dir, runs, iterations=iterations, size=size,
                               title=f"{topology.name}, run {exp.run_id}")
    from emu import report

    exp.update_run_file(summary=report.SUMMARY_FILE)
    verified = all(summary.get(s, {}).get("verified", False) for s in runs)
    ok = verified and all(r.ok for r in runs.values())
    failure = None if ok else f"not every result was verified; see the logs in {out_dir}"
    return RunResult(out_dir, topology_path, runs, summary, ok, failure, table)


#: Bytes a worker holds per byte of its collective: input, result, receive buffers and the
#: float64 reference it verifies against (hostapps.worker), with headroom.
WORKER_BYTES_PER_BYTE = 16


def mem_available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo in bytes, or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(topology: Any, *, size: int | None, available: int | None = None) -> None:
    """UsageError when the workers of every job together would not fit in memory.

    Estimate: ``WORKER_BYTES_PER_BYTE * size`` per rank, summed over the jobs' ranks.
    """
    available = mem_available_bytes() if available is None else available
    if available is None:
        return
    need = sum(WORKER_BYTES_PER_BYTE * (size if size is not None else job.size_bytes) * len(job.ranks)
               for job in topology.jobs)
    if need > available:
        raise UsageError(f"--size: the workers would need about {need / 2**30:.1f} GiB and "
                         f"{available / 2**30:.1f} GiB is available; give a smaller --size")


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
              size: int | None = None, title: str | None = None) -> tuple[dict[str, Any], Any]:
    """Compute the metrics and write summary.json, cct.csv, steps.csv and the PNGs into ``out_dir``.

    Returns (summary dict, rich table). Per-switch counters of each scheme are in
    ``<scheme>/counters.json``.
    """
    import dataclasses

    from emu import metrics, report

    infos = {
        job_id: dataclasses.replace(info, size_bytes=size if size is not None else info.size_bytes,
                                    iterations=iterations if iterations is not None else info.iterations)
        for job_id, info in metrics.job_infos(topology).items()
    }
    scheme_metrics = {scheme: metrics.compute_metrics(run.results_dir, scheme=scheme, jobs=infos)
                      for scheme, run in runs.items()}
    counters = {scheme: counter_totals(run.counter_delta()) for scheme, run in runs.items()}
    table = report.write_report(out_dir, scheme_metrics, counters, title=title)
    summary = json.loads((out_dir / report.SUMMARY_FILE).read_text())
    return summary, table


class RichProgress:
    """Progress bars (one per scheme) and a status line, as a ProgressFn context manager."""

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=console,
                                 transient=False)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tasks:
            self.progress.__exit__(*exc)

    def _start(self) -> None:
        """Show the bars at the first event (so early user errors print only their line)."""
        if not self.tasks:
            self.progress.__enter__()
            self.tasks["network"] = self.progress.add_task("network", total=None, note="")

    def __call__(self, event: ProgressEvent) -> None:
        self._start()
        if event.phase == "network":
            self.progress.update(self.tasks["network"], note=event.message)
            if event.message.startswith("network ready"):
                self.progress.update(self.tasks["network"], total=1, completed=1)
            return
        task = self.tasks.get(event.scheme)
        if task is None:
            task = self.tasks[event.scheme] = self.progress.add_task(event.scheme, total=event.total or None, note="")
        note = event.message if event.phase in ("start", "done") else ""
        self.progress.update(task, completed=event.done, total=event.total or None, note=note)


def print_result(console: Any, result: RunResult) -> None:
    """The comparison table and where the files are (called by the CLI)."""
    from emu import report

    console.print(result.table if result.table is not None else report.report_table(result.summary))
    console.print(f"results: {result.out_dir}")


def report_dir(directory: Path, console: Any) -> None:
    """``symphony-emu report DIR``: redraw the plots of a results folder and print its table."""
    from emu import report

    try:
        table = report.render_report(directory)
    except report.ReportError as exc:
        raise UsageError(str(exc)) from None
    console.print(table)


__all__ = ["Experiment", "ProgressEvent", "RichProgress", "RunError", "RunResult", "SchemeRun", "TargetUnavailable",
           "UsageError", "run"]
