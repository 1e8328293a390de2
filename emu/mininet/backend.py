"""The Mininet back end: real time, hosts in network namespaces, one process per switch and worker.

:class:`MininetBackend` builds the topology's Mininet network (:func:`emu.mininet.network.build_network`),
programs it with the controller code of :class:`emu.controller.ProgrammedNetwork`, and runs a
workload by starting one ``python -m hostapps.worker`` per rank (spec in docs/interfaces.md
section 4) and the background sources (``python -m hostapps.traffic``) inside the Mininet
hosts, then waits for them. It needs root and Mininet.

Interrupts (Ctrl-C, SIGTERM) stop workers, traffic, switches and Mininet; a safety net
(:func:`emu.cleanup.cleanup` scoped to the run) removes whatever escaped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emu import cleanup as cleanup_mod
from emu.backend import (
    Backend,
    ProgressEvent,
    ProgressFn,
    RunError,
    UsageError,
    WorkerResult,
    Workload,
    exit_reason,
)
from emu.controller import NetworkError
from emu.mininet.network import build_network
from emu.p4build import p4_build
from emu.targets import SwitchOptions, SwitchStartError, target_class

log = logging.getLogger(__name__)

#: Environment variable that tags every process of a run (cleanup finds escaped ones).
RUN_ENV = cleanup_mod.RUN_ENV
#: Repository root (worker processes get it on PYTHONPATH).
REPO_ROOT = Path(__file__).resolve().parent.parent.parent
#: UDP port of the background traffic (docs/interfaces.md section 1).
TRAFFIC_PORT = 5001
#: Time from launching the workers to their common start (s): imports take ~1 s per process
#: on a loaded 2-core machine; the workers start together at ``start_at`` regardless.
START_DELAY_BASE_S = 2.0
START_DELAY_PER_WORKER_S = 0.25
#: A background source is launched this long before its start (s) and waits for it
#: (``hostapps.traffic source --start-at``): its interpreter's start is not in its schedule.
SOURCE_LAUNCH_LEAD_S = START_DELAY_BASE_S
#: Fastest link (Mbit/s, after dilation) a real-time run accepts: a Python switch forwards tens
#: of thousands of packets a second, so links beyond this measure the machine, not the network
#: (a 1 Tbit/s link ran at 42,006 times its bound).
MAX_LINK_MBPS = 1000.0
#: Longest wait between progress updates while workers run (s); worker exits wake it at once.
POLL_INTERVAL_S = 0.5


def require_root() -> None:
    """UsageError unless running as root (Mininet creates namespaces and links)."""
    if os.geteuid() != 0:
        raise UsageError("Mininet needs root: run sudo .venv/bin/symphony-emu ... (or sudo ./scripts/setup.sh run)"
                         "; --mode sim needs neither root nor Mininet")


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


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class _Progress:
    """Counts finished iterations from the workers' growing JSON lines files."""

    def __init__(self, paths: Sequence[Path]) -> None:
        # a scheme's later block appends to its files: count only what this block writes
        self.offsets = {p: p.stat().st_size if p.exists() else 0 for p in paths}
        self.counts = {p: 0 for p in paths}
        self.iterations: dict[Path, set[int]] = {p: set() for p in paths}
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
                elif kind == "iteration" and isinstance(rec.get("iteration"), int):
                    self.iterations[path].add(rec["iteration"])
                    self.counts[path] = max(self.counts[path], len(self.iterations[path]))
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


class MininetBackend(Backend):
    """Real time: the topology's Mininet network with one switch process per switch."""

    mode = "mininet"
    wall_clock = True

    def __init__(self, topology: Any, **kwargs: Any) -> None:
        super().__init__(topology, **kwargs)
        self._children: list[subprocess.Popen] = []

    @classmethod
    def check(cls, topology: Any, *, target: str) -> None:
        """Target installed, root, Mininet (another run's network is no obstacle: every run's
        switch links carry its own link tag, emu.linknames)."""
        target_class(target)  # TargetUnavailable: one line
        if topology.mtu != 1500:
            raise UsageError(f"mtu {topology.mtu}: the Mininet hosts and switches run a 1500-byte MTU; run this "
                             "scenario with --mode sim, or in Mininet with --mtu 1500 (the ECN ramp stays in "
                             "the scenario's packets)")
        fastest = max(((i, link.bandwidth_mbps) for i, link in enumerate(topology.links)), key=lambda x: x[1] or 0)
        if fastest[1] and fastest[1] > MAX_LINK_MBPS:
            d = math.ceil(fastest[1] * topology.dilated_by / MAX_LINK_MBPS)
            raise UsageError(f"links[{fastest[0]}]: {fastest[1]:g} Mbit/s in real time is more than the embedded "
                             f"switch forwards (up to about {MAX_LINK_MBPS:g} Mbit/s a link; the run would measure "
                             f"the CPU, not the network); run it dilated, --dilation {d} or more, or --mode sim")
        require_root()
        require_mininet()

    def build(self, progress: ProgressFn) -> None:
        target_cls = target_class(self.target)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        options = SwitchOptions(program=p4_build(self.p4).source, control_dir=self.run_dir, log_dir=self.out_dir / "logs",
                                seed=self.seed, pcap_dir=self.out_dir / "pcap" if self.pcap else None)
        progress(ProgressEvent("network", message=f"starting {len(self.topology.switches)} switches"))
        t0 = time.monotonic()
        try:
            self.network = build_network(self.topology, target_cls=target_cls, options=options, target=self.target)
            self.network.p4 = self.p4
            progress(ProgressEvent("network", message="programming switches"))
            self.network.program("baseline")
        except (SwitchStartError, NetworkError) as exc:
            raise RunError(str(exc)) from None
        progress(ProgressEvent("network", message=f"network ready in {time.monotonic() - t0:.1f} s"))

    def run_facts(self) -> dict[str, Any]:
        """``link_tag``: the tag in the names of this run's switch links (emu.linknames)."""
        tag = getattr(self.network, "link_tag", None)
        return {"link_tag": tag.tag} if tag is not None else {}

    def start_time(self, n_workers: int) -> float:
        """Wall clock now plus the time the worker processes need to start."""
        return time.time() + START_DELAY_BASE_S + START_DELAY_PER_WORKER_S * n_workers

    def run_workload(self, workload: Workload, progress: ProgressFn) -> list[WorkerResult]:
        scheme, results_dir, logs_dir = workload.scheme, workload.results_dir, workload.logs_dir
        total_iters = workload.total_iters
        timeout = workload.timeout_s
        specs_dir = self.run_dir / f"specs-{results_dir.name}"
        specs_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
                   PYTHONUNBUFFERED="1", **{RUN_ENV: self.run_id})
        workers: list[tuple[dict[str, Any], subprocess.Popen, Path]] = []
        traffic: list[subprocess.Popen] = []
        pending_sources = self._traffic_plan(workload)
        try:
            for dst in sorted({src.dst for src in workload.background}):
                stats = results_dir / f"sink-{dst}.json"
                cmd = [sys.executable, "-m", "hostapps.traffic", "sink", "--port", str(TRAFFIC_PORT),
                       "--duration-s", f"{timeout:.0f}", "--stats", str(stats)]
                traffic.append(self._popen(dst, cmd, logs_dir / f"sink-{dst}.log", env))
            for spec in workload.specs:
                spec = dict(spec)
                host = spec.pop("host")
                path = specs_dir / f"job{spec['job_id']}-rank{spec['rank']}.json"
                path.write_text(json.dumps(spec, indent=1))
                logf = logs_dir / f"job{spec['job_id']}-rank{spec['rank']}.log"
                cmd = [sys.executable, "-m", "hostapps.worker", "--spec", str(path)]
                workers.append(({**spec, "host": host}, self._popen(host, cmd, logf, env), logf))
            progress(ProgressEvent("start", scheme, 0, total_iters, f"{len(workers)} workers"))
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
                        progress(ProgressEvent("running", scheme, last_done, total_iters))
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
        return [WorkerResult(spec["job_id"], spec["rank"], spec["host"], proc.returncode, _last_line(logf), logf,
                             results_dir / f"job{spec['job_id']}-rank{spec['rank']}.jsonl")
                for spec, proc, logf in workers]

    def _popen(self, host: str, cmd: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
        """Start ``cmd`` in Mininet host ``host``'s namespace, output to ``log_path``."""
        node = self.network.host(host)
        with open(log_path, "ab") as logf:  # a scheme's later blocks append to its logs
            # Mininet's popen passes keyword arguments on to subprocess.Popen; mnexec execs in place,
            # so the parent-death signal reaches the worker itself.
            proc = node.popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, env=env,
                              cwd=str(log_path.parent), preexec_fn=cleanup_mod.die_with_parent())
        self._children.append(proc)
        return proc

    def _traffic_plan(self, workload: Workload) -> list[tuple[float, str, list[str], Path]]:
        """(wall-clock launch, host, command, log) of each background source, by launch time.

        A source is launched :data:`SOURCE_LAUNCH_LEAD_S` before its start (the common start
        ``workload.start_at`` plus its ``start_s``) and told that start (``--start-at``), so its
        schedule begins then, as in virtual time, and not after the interpreter started (measured
        0.37-0.56 s late on a loaded machine, when it was launched at its start)."""
        plan = self.topology.plan
        out = []
        for src in workload.background:
            duration = src.duration_s if src.duration_s is not None else workload.timeout_s
            cmd = [sys.executable, "-m", "hostapps.traffic", "source", "--dst", plan.host(src.dst).ip,
                   "--port", str(TRAFFIC_PORT), "--rate-mbps", f"{src.rate_bps / 1e6:g}",
                   "--on-ms", f"{src.on_s * 1000:g}", "--off-ms", f"{src.off_s * 1000:g}",
                   "--duration-s", f"{duration:g}", "--size", str(src.packet_bytes),
                   "--start-at", repr(workload.start_at + src.start_s)]
            if src.exponential:
                cmd += ["--seed", str(src.seed)]
            log_path = workload.logs_dir / f"bg{src.index}-{src.src}-{src.dst}.log"
            out.append((workload.start_at + src.start_s - SOURCE_LAUNCH_LEAD_S, src.src, cmd, log_path))
        return sorted(out, key=lambda item: item[0])

    def close(self) -> None:
        """Stop every child, the switches and Mininet, then sweep leftovers of this run."""
        _terminate(self._children)
        self._children.clear()
        tag = getattr(self.network, "link_tag", None)
        tags = [tag.tag] if tag is not None else []
        if self.network is not None:
            try:
                self.network.stop()  # releases the link tag, with whatever links were left
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                log.warning("stopping the network: %s", exc)
        names = [h.name for h in self.topology.hosts] + [s.name for s in self.topology.switches]
        left = cleanup_mod.cleanup(run_tag=self.run_id, run_id=self.run_id, node_names=names, link_tags=tags,
                                   shells_of_run=True)
        if not left.empty():
            log.info("swept leftovers: %s", left)
