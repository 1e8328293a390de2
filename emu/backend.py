"""The network back end of an experiment: what the runner needs of a network, whatever runs it.

The experiment logic (schemes, register resets, workloads, metrics, reports) lives once in
:mod:`emu.runner` and drives a :class:`Backend`. Two implementations (docs/DESIGN.md
section 6):

- ``mininet`` (:mod:`emu.mininet.backend`): real time; hosts are network namespaces,
  switches are processes, workers are ``python -m hostapps.worker`` processes;
- ``sim`` (:mod:`emu.vtime.backend`): virtual time; the same switch core, controller code
  and host state machines in one discrete-event process.

:data:`BACKENDS` is the registry (``"module:Class"``, as :data:`emu.targets.TARGETS`): this
module imports neither back end, so choosing ``sim`` never imports Mininet. A back end builds
its network, programs it through the switches' control interface with the controller code of
:mod:`emu.controller` (routes, queues, ECN, Symphony configuration, register resets,
counters), runs one :class:`Workload` (the worker specs of docs/interfaces.md section 4 plus
the background sources) and stops.
"""

from __future__ import annotations

import abc
import importlib
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The back-end registry: ``symphony-emu run --mode`` name -> ``"module:Class"``; the first is the default.
BACKENDS: dict[str, str] = {
    "mininet": "emu.mininet.backend:MininetBackend",
    "sim": "emu.vtime.backend:SimBackend",
}


class UsageError(Exception):
    """A user mistake (not root, bad arguments); ``str()`` is one line (CLI exit code 2)."""


class RunError(Exception):
    """The run failed at run time (a worker failed, a switch died, time ran out); one line."""


@dataclass(frozen=True)
class ProgressEvent:
    """A progress report: ``phase`` is "network", "start", "running", "done" or "info".

    scheme: the scheme ("" for network events); done/total: iterations finished (collectives
    completed by all ranks); message: free text for the status line; sim_s: simulated time
    since the scheme's workload started (s, virtual-time back end only, else None).
    """

    phase: str
    scheme: str = ""
    done: int = 0
    total: int = 0
    message: str = ""
    sim_s: float | None = None
    sim_total_s: float | None = None


ProgressFn = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:  # noqa: ARG001
    """A ProgressFn that ignores every event."""


@dataclass
class WorkerResult:
    """One rank's worker: exit code, one line why, where its log and JSON lines are."""

    job: int
    rank: int
    host: str
    returncode: int | None
    reason: str
    log_path: Path
    jsonl_path: Path


@dataclass(frozen=True)
class BackgroundSource:
    """One on/off background source of a workload (times in s from the workload's start)."""

    index: int
    src: str
    dst: str
    rate_bps: float
    on_s: float
    off_s: float
    start_s: float
    duration_s: float | None  #: None = until the jobs end
    exponential: bool
    packet_bytes: int
    seed: int


@dataclass
class Workload:
    """One run of every job with one scheme.

    specs: worker specs (docs/interfaces.md section 4) with ``host``; ``start_at`` is in the
    back end's clock (wall-clock seconds for Mininet, simulated seconds for virtual time).
    background: the on/off sources; timeout_s: time limit in the back end's clock;
    total_iters: the most iterations of any job (progress total).
    """

    scheme: str
    specs: list[dict[str, Any]]
    background: list[BackgroundSource]
    results_dir: Path
    logs_dir: Path
    timeout_s: float
    total_iters: int
    start_at: float
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(abc.ABC):
    """A network on which the runner programs switches and runs workloads.

    Lifecycle: :meth:`check` (user mistakes, before anything starts), :meth:`build` (start
    and program the network), then per scheme :attr:`network`'s ``set_mode`` /
    ``reset_jobs`` / ``read_counters`` around :meth:`run_workload`; :meth:`close` always.
    """

    #: "mininet" or "sim" (run.json's ``mode``).
    mode: str = ""
    #: The workers' clock: True when ``start_at`` and the JSON lines are wall-clock times.
    wall_clock: bool = True
    #: True: every scheme runs on a network of its own, built and programmed afresh from the
    #: run's seed (virtual time: the schemes share everything but Symphony's marking and can
    #: run in parallel processes); False: one network for the whole run (Mininet).
    network_per_scheme: bool = False

    def __init__(self, topology: Any, *, out_dir: Path, run_dir: Path, run_id: str, seed: int,
                 target: str, pcap: bool = False, p4: str = "v1model") -> None:
        self.topology = topology
        self.out_dir = out_dir
        self.run_dir = run_dir
        self.run_id = run_id
        self.seed = seed
        self.target = target
        #: the P4 build the switches run (a key of emu.p4build.P4_BUILDS)
        self.p4 = p4
        #: write one pcap per switch port to ``<out_dir>/pcap/`` (Mininet back end, embedded target)
        self.pcap = pcap
        #: the programmed network (an :class:`emu.controller.ProgrammedNetwork`); None before build
        self.network: Any = None

    @classmethod
    @abc.abstractmethod
    def check(cls, topology: Any, *, target: str) -> None:
        """Raise UsageError / TargetUnavailable when this back end cannot run here."""

    @abc.abstractmethod
    def build(self, progress: ProgressFn) -> None:
        """Start the network and program it in baseline mode; RunError on failure."""

    @abc.abstractmethod
    def start_time(self, n_workers: int) -> float:
        """The common start of a workload's workers in the back end's clock (s)."""

    @abc.abstractmethod
    def run_workload(self, workload: Workload, progress: ProgressFn) -> list[WorkerResult]:
        """Run every worker and background source of ``workload`` to the end.

        Raises RunError naming the first rank that failed (or the time limit) and
        KeyboardInterrupt after stopping what it started.
        """

    def run_facts(self) -> dict[str, Any]:
        """What the built network adds to run.json (e.g. the Mininet run's ``link_tag``)."""
        return {}

    def close(self) -> None:
        """Stop everything the back end started (idempotent)."""
        if self.network is not None:
            self.network.stop()


def backend_class(mode: str) -> type[Backend]:
    """The Backend subclass of ``mode`` (a key of :data:`BACKENDS`).

    Raises UsageError (one line) for an unknown mode, or when the back end's modules cannot be
    imported here (``mininet`` without the mininet Python module).
    """
    if mode not in BACKENDS:
        raise UsageError(f"unknown --mode {mode!r}: use {' or '.join(BACKENDS)}")
    module_name, _, cls_name = BACKENDS[mode].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] in ("emu", "hostapps"):
            raise
        raise UsageError(f"--mode {mode} needs the {exc.name} Python module, which is missing: run sudo "
                         "./scripts/setup.sh (apt-get install mininet; the venv needs --system-site-packages)"
                         "; --mode sim needs neither root nor Mininet") from None
    return getattr(module, cls_name)


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
