"""The schemes of a virtual-time run in parallel processes, one per scheme.

In virtual time every scheme runs on a network of its own, built afresh from the run's seed
(:attr:`emu.backend.Backend.network_per_scheme`), so the schemes are independent
simulations: :func:`run_schemes` runs each in a child process (``multiprocessing``'s spawn
start method: a fresh interpreter, no state shared with the parent but what is passed) and
returns the same :class:`emu.runner.SchemeRun` objects as running them one after the other
in this process would. What a child runs is the task's ``run`` function (the runner's, passed
in: this module does not import the runner). A scheme's results are a function of the scenario and seed alone, so
``summary.json`` is bit-for-bit the same, parallel or sequential.

What the children report reaches this process over one pipe per child and is handled in its main
thread: progress events go to the run's ProgressFn (the CLI's progress bars), log records
to this process's loggers (the library never prints).

Failures and interrupts: the first child that fails (a RunError, an exception, or a process
that dies) ends the run with a one-line RunError naming the scheme; Ctrl-C, SIGTERM or
SIGHUP in this process (a KeyboardInterrupt, see emu.interrupts.signals_as_interrupt) ends it
too. Either way every child still running is terminated (SIGTERM, then SIGKILL after
:data:`TERMINATE_GRACE_S`) and reaped before the exception propagates. Children ignore
SIGINT (Ctrl-C reaches the whole process group; the parent decides) and get SIGTERM when
the parent dies (PR_SET_PDEATHSIG), so nothing outlives the run.
"""

from __future__ import annotations

import logging
import logging.handlers
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from emu.backend import ProgressEvent, ProgressFn, RunError
from emu.cleanup import parent_death_signal
from emu.interrupts import interrupts_deferred

log = logging.getLogger(__name__)

#: Seconds a terminated child gets to exit before SIGKILL.
TERMINATE_GRACE_S = 3.0
#: Seconds the parent waits for a message before it starts the next waiting scheme.
POLL_S = 0.5
#: Seconds to wait for the exit code of a child whose pipe ended early.
DEATH_GRACE_S = 1.0
#: Environment variable with the default number of scheme processes (``--parallel``).
PARALLEL_ENV = "SYMPHONY_EMU_PARALLEL"


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under ``taskset``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_parallel(n_schemes: int) -> int:
    """Schemes at once by default: ``$SYMPHONY_EMU_PARALLEL`` if set, else one per scheme up to
    the CPUs this process may use (1 = sequential, in this process).

    Raises ValueError when ``$SYMPHONY_EMU_PARALLEL`` is not a positive integer.
    """
    env = os.environ.get(PARALLEL_ENV)
    if env is not None and env.strip():
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"${PARALLEL_ENV}={env!r}: give a positive integer (1 = the schemes one after the other)")
        return min(n, max(1, n_schemes))
    return max(1, min(n_schemes, available_cpus()))


@dataclass(frozen=True)
class SchemeTask:
    """What a child needs to run one scheme (pickled to it): the Experiment's settings and
    ``run(task, progress) -> SchemeRun``, the function that runs it there (a module-level
    function, so it pickles by name: the child imports its module)."""

    run: Callable[[SchemeTask, ProgressFn], Any]
    scheme: str
    topology: Any
    topology_path: Path
    target: str
    out_dir: Path
    seed: int
    run_id: str
    mode: str
    p4: str
    iterations: int | None
    size: int | None
    log_level: int
    placebo: dict[int, float] | None = None  #: job id -> probability, scheme "placebo" only
    block: Any = None  #: the scheme's emu.runner.Block (warm-up, iterations), None: iterations, no warm-up


class _PipeQueue:
    """What :class:`logging.handlers.QueueHandler` needs of a queue, over a child's pipe."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def put_nowait(self, record: logging.LogRecord) -> None:
        self.conn.send(record)


def _child_main(task: SchemeTask, conn: Any, parent: int) -> None:
    """Entry point of a scheme process: run ``task``; send progress, log records, then
    ("result", scheme, SchemeRun) or ("error", scheme, one line) over ``conn``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and terminates us
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent around start()
    parent_death_signal(parent)  # SIGTERM when the runner dies
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(logging.handlers.QueueHandler(_PipeQueue(conn)))  # type: ignore[arg-type]
    root.setLevel(task.log_level)

    def progress(event: ProgressEvent) -> None:
        conn.send(("progress", task.scheme, event))

    try:
        conn.send(("result", task.scheme, task.run(task, progress)))
    except RunError as exc:
        conn.send(("error", task.scheme, str(exc)))
    except BaseException as exc:  # noqa: BLE001 - a bug: one line to the parent, the traceback to the log
        logging.getLogger(__name__).exception("%s: the scheme's process failed", task.scheme)
        conn.send(("error", task.scheme, f"{task.scheme}: {type(exc).__name__}: {exc}"))
    else:
        # The result is sent, the scheme's files written and closed (the run closed its network first):
        # exit without the interpreter's teardown, which frees the network object by object (0.2-0.4 s at
        # 128 ranks, that the parent waits for in its join), as multiprocessing's fork start method ends a
        # child (os._exit once the target returned).
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    finally:
        conn.close()


def _exit_text(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"ended with exit code {exitcode}"


def run_schemes(tasks: list[SchemeTask], progress: ProgressFn, parallel: int,
                on_result: Callable[[str, Any], None] | None = None) -> dict[str, Any]:
    """Run each task's scheme in a child process, at most ``parallel`` at a time.

    ``on_result(scheme, result)``, if given, is called in this process with each result that
    arrives while no scheme waits to start (its child has exited, and the CPU it ran on is free
    while the others still run: the runner works out that scheme's metrics there).

    Returns scheme -> :class:`emu.runner.SchemeRun` in the order of ``tasks``. Raises
    RunError (one line, naming the scheme) when a child fails or dies, KeyboardInterrupt
    when this process is interrupted; in both cases after every child was stopped.

    Each child has a pipe of its own (a child killed mid-message cannot block the others):
    the parent waits on all of them, and a pipe that ends before its child sent a result
    means the child died.
    """
    ctx = multiprocessing.get_context("spawn")
    waiting = list(tasks)
    running: dict[str, tuple[Any, Any]] = {}  # scheme -> (process, reading end of its pipe)
    results: dict[str, Any] = {}
    parent = os.getpid()
    try:
        while waiting or running:
            while waiting and len(running) < max(1, parallel):
                task = waiting.pop(0)
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child_main, args=(task, writer, parent),
                                   name=f"symphony-emu {task.scheme}", daemon=True)
                # SIGINT blocked across the start: the child inherits the mask and ignores Ctrl-C
                # before it unblocks, so an early Ctrl-C cannot give it a traceback of its own
                old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                try:
                    proc.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
                    writer.close()  # the child holds the writing end; EOF here when it is gone
                running[task.scheme] = (proc, reader)
                log.info("%s: running in process %d", task.scheme, proc.pid)
            by_conn = {reader: scheme for scheme, (_, reader) in running.items()}
            for conn in wait(list(by_conn), timeout=POLL_S):
                scheme = by_conn[conn]
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    proc, _ = running[scheme]
                    proc.join(DEATH_GRACE_S)
                    raise RunError(f"{scheme}: the scheme's process {_exit_text(proc.exitcode)} "
                                   "before it finished") from None
                done = _handle(message, running, progress, results)
                if done is not None and on_result is not None and not waiting:
                    on_result(done, results[done])
    finally:
        _stop(running)
    return {task.scheme: results[task.scheme] for task in tasks}


def _handle(message: Any, running: dict[str, tuple[Any, Any]], progress: ProgressFn,
            results: dict[str, Any]) -> str | None:
    """Handle one message of a child; the scheme when it was its result (its child joined), else None."""
    if isinstance(message, logging.LogRecord):
        logging.getLogger(message.name).handle(message)
        return None
    kind, scheme, payload = message
    if kind == "progress":
        progress(payload)
    elif kind == "result":
        results[scheme] = payload
        proc, reader = running.pop(scheme)
        proc.join()
        reader.close()
        return scheme
    elif kind == "error":
        raise RunError(payload)
    return None


def _stop(running: dict[str, Any]) -> None:
    """Terminate and reap every child still running (a second Ctrl-C does not cut it short)."""
    with interrupts_deferred():
        for proc, _ in running.values():
            if proc.is_alive():
                proc.terminate()
        for scheme, (proc, reader) in running.items():
            proc.join(TERMINATE_GRACE_S)
            if proc.is_alive():
                log.warning("%s: process %d did not stop on SIGTERM; killing it", scheme, proc.pid)
                proc.kill()
                proc.join()
            reader.close()
        running.clear()
