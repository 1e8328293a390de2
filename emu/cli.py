"""The ``symphony-emu`` command line (click); the only module that prints.

User mistakes (a bad topology file, not root, a target that is not installed, a bad
option) end in one line on stderr and exit code 2, never a traceback. A run that fails at run time (a worker
fails, a switch dies) ends in one line and exit code 1. Ctrl-C stops a run and removes
everything it started (exit code 130).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from emu import units
from emu.backend import BACKENDS
from emu.interrupts import signals_as_interrupt
from emu.targets.registry import target_names
from emu.topology import resolve_topology
from emu.topology_schema import MAX_ITERATIONS

#: Exit code of user mistakes.
EXIT_USAGE = 2
#: Exit code of a run that failed at run time.
EXIT_FAILED = 1
#: Exit code after Ctrl-C / SIGTERM.
EXIT_INTERRUPTED = 130

#: The shipped scenarios (the checkout's topologies/, else the installed copy's).

log = logging.getLogger("emu.cli")


def interrupted(exc: BaseException, what: str) -> NoReturn:
    """Exit after Ctrl-C (130) or SIGTERM/SIGHUP (128 + signal), saying ``what`` was done.

    After a hang-up the terminal may be gone: a failed write is ignored.
    """
    signum = getattr(exc, "signum", None)
    name = f"interrupted by {signal.Signals(signum).name}" if signum else "interrupted"
    try:
        click.echo(f"symphony-emu: {name}; {what}", err=True)
    except OSError:
        pass
    sys.exit(128 + signum if signum else EXIT_INTERRUPTED)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``symphony-emu: error: message`` on stderr and exit with ``code``."""
    click.echo(f"symphony-emu: error: {message}", err=True)
    sys.exit(code)


def scheme_list(text: str, mode: str = "sim") -> tuple[str, ...]:
    """``--scheme``: "both" (baseline, symphony), "all" (every scheme of emu.runner.SCHEMES that
    ``mode`` runs: the ideal reference is virtual time's only) or a comma list of scheme names; a
    bad name is one line (exit 2)."""
    from emu import runner

    if text == "both":
        return runner.DEFAULT_SCHEMES
    if text == "all":
        return tuple(s for s in runner.SCHEMES if mode == "sim" or s not in runner.SIM_ONLY)
    names = tuple(part.strip() for part in text.split(","))
    if "" in names:  # "baseline," or "a,,b": a name left out, not a shorter list
        fail(f"--scheme {text}: an empty name in the list; use both, all or a comma list of "
             f"{', '.join(runner.SCHEMES)} without empty entries")
    bad = [n for n in names if n not in runner.SCHEMES]
    if bad:
        fail(f"--scheme {text}: use both, all or a comma list of {', '.join(runner.SCHEMES)}")
    return names


def out_folder(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:  # noqa: ARG001
    """``--out``: a folder path; an empty one (``--out ''``, which would be the current folder) is a
    ``click.BadParameter`` (new-user check, 2026-12-04: the results went into the checkout)."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("an empty folder name; give a folder (e.g. results/run1, or . for this one)")
    return Path(value)


def parse_size(value: str | int | None) -> int | None:
    """:func:`emu.units.parse_size` for click: a bad size is a ``click.BadParameter``."""
    try:
        return units.parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:  # noqa: ARG001
    """click callback of ``--size``: bytes, a positive multiple of 4 (float32 elements)."""
    size = parse_size(value)
    if size is not None and size % 4:
        raise click.BadParameter(f"{value!r} is {size} bytes: give a multiple of 4 (float32 elements)")
    return size


#: Usage of the Mininet CLI's ``allreduce`` command (emu.mininet.cli).
ALLREDUCE_USAGE = "allreduce [SIZE] [ITERATIONS]"


def parse_allreduce_args(line: str) -> tuple[int | None, int | None]:
    """(size in bytes, iterations) of ``allreduce [SIZE] [ITERATIONS]``; None = the topology's.

    SIZE as for :func:`parse_size` and a multiple of 4 (float32 elements); ITERATIONS an
    integer >= 1. Raises ValueError with a one-line message naming the argument.
    """
    args = line.split()
    if len(args) > 2:
        raise ValueError(f"too many arguments ({len(args)}): {ALLREDUCE_USAGE}")
    size: int | None = None
    if args:
        try:
            size = parse_size(args[0])
        except click.BadParameter as exc:
            raise ValueError(f"SIZE {exc.message}") from None
        if size is not None and size % 4:
            raise ValueError(f"SIZE {args[0]!r} is {size} bytes: give a positive multiple of 4 (float32 elements)")
    iterations: int | None = None
    if len(args) > 1:
        try:
            iterations = int(args[1])
        except ValueError:
            raise ValueError(f"ITERATIONS {args[1]!r} is not an integer") from None
        if iterations < 1:
            raise ValueError(f"ITERATIONS {iterations}: give at least 1")
    return size, iterations


def make_console(stderr: bool = False) -> Any:
    """A rich console; when the output is not a terminal (logs, CI) ``COLUMNS`` columns if set, else 140."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else 140
    return Console(stderr=stderr, width=None if stream.isatty() else width)


def setup_logging(verbose: int) -> None:
    """Library logs go to stderr through rich: warnings by default, info with -v, debug with -vv."""
    from rich.logging import RichHandler

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(message)s", datefmt="[%X]",
                        handlers=[RichHandler(console=make_console(stderr=True), show_path=False,
                                              rich_tracebacks=False)])
    try:
        from mininet.log import lg, setLogLevel
    except ImportError:
        return
    untangle_mininet_logging(lg)
    lg.propagate = False  # Mininet prints through its own handler; not twice via the root logger
    setLogLevel("info" if verbose >= 2 else "warning" if verbose == 1 else "error")


def untangle_mininet_logging(mininet_logger: logging.Logger) -> None:
    """Undo what importing ``mininet.log`` does to every other logger.

    mininet.log calls ``logging.setLoggerClass(MininetLogger)``, so each logger created after
    that import (``emu.runner``, ``emu.controller``, ... when imported later) gets its own
    stderr handler that writes without a newline, plus its own level: their records would
    print twice, run together. Restore the standard class for loggers created from now on,
    and strip that handler and level from the ones created already, so that they propagate
    to the root handler like any other logger. ``mininet_logger`` (Mininet's own) is kept.
    """
    logging.setLoggerClass(logging.Logger)
    mininet_class = type(mininet_logger)
    if mininet_class is logging.Logger:
        return
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if not isinstance(logger, mininet_class) or logger is mininet_logger:
            continue
        own = getattr(logger, "ch", None)
        for handler in list(logger.handlers):
            if handler is own or type(handler).__name__ == "StreamHandlerNoNewline":
                logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that are user mistakes (exit 2, one line)."""
    errors: list[type[BaseException]] = []
    try:
        from emu.topology import TopologyError

        errors.append(TopologyError)
    except ImportError:
        pass
    from emu.runner import UsageError
    from emu.targets import TargetUnavailable

    errors += [UsageError, TargetUnavailable]
    return tuple(errors)


def usage_error_line(exc: click.ClickException) -> str:
    """One line for a click error: its message, plus where the usage is for a wrong command line."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    wrong_value = isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter)
    if isinstance(exc, click.UsageError) and not wrong_value and ctx is not None:
        message += f" (see {ctx.command_path} --help)"
    return message


class RichProgress:
    """Progress bars (one per scheme) and a status line, as an emu.runner ProgressFn context manager.

    In virtual time (events with ``sim_s``) a scheme's bar also shows the simulated time
    reached and the simulated-to-wall-clock rate.
    """

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=console,
                                 transient=False)
        self.tasks: dict[str, Any] = {}
        self._t0: dict[str, float] = {}

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

    def __call__(self, event: Any) -> None:
        import time

        self._start()
        if event.phase == "network":
            self.progress.update(self.tasks["network"], note=event.message)
            if event.message.startswith("network ready"):
                self.progress.update(self.tasks["network"], total=1, completed=1)
            return
        task = self.tasks.get(event.scheme)
        if task is None:
            task = self.tasks[event.scheme] = self.progress.add_task(event.scheme, total=event.total or None, note="")
            self._t0[event.scheme] = time.monotonic()
        note = event.message if event.phase in ("start", "done") else ""
        if event.sim_s is not None and event.phase == "running":
            wall = max(1e-9, time.monotonic() - self._t0[event.scheme])
            note = f"sim {format_sim_time(event.sim_s)}, {event.sim_s / wall:.3g} sim-s per wall-s"
            if event.message:
                note += f", {event.message}"
        self.progress.update(task, completed=event.done, total=event.total or None, note=note)


def format_sim_time(seconds: float) -> str:
    """``12.3 ms``-style simulated time."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def print_result(console: Any, result: Any) -> None:
    """The comparison table of a finished run (emu.runner.RunResult) and where its files are."""
    from emu import report

    console.print(result.table if result.table is not None else report.report_table(result.summary))
    console.print(f"results: {result.out_dir}")


class LazyGroup(click.Group):
    """The ``symphony-emu`` group: one-line usage errors; the commands of other layers are
    imported only when used: ``stf`` (it loads the P4 front end) and ``cli`` (Mininet's CLI,
    :mod:`emu.mininet.cli`: it imports Mininet, which virtual time never needs)."""

    #: command name -> (module, attribute, what it is: the help of a command that cannot load here)
    lazy = {"stf": ("emu.embedded.stf", "stf_command", "Run STF tests on the embedded switch"),
            "cli": ("emu.mininet.cli", "cli_command", "Mininet CLI on a topology's programmed network")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Eager commands plus the lazy ones."""
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import a lazy command on first use; a missing module gives a one-line error."""
        if cmd_name in self.lazy:
            module_name, attr, what = self.lazy[cmd_name]
            try:
                import importlib

                return getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                reason = str(exc)

                @click.command(name=cmd_name, context_settings={"ignore_unknown_options": True},
                               help=f"{what} (not available here: {reason}).")
                @click.argument("args", nargs=-1, type=click.UNPROCESSED)
                def unavailable(args: tuple[str, ...]) -> None:  # noqa: ARG001
                    fail(f"{cmd_name} is not available: {reason}")

                return unavailable
        return super().get_command(ctx, cmd_name)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """click's main, but a usage error is one line ``symphony-emu: error: ...`` (exit 2),
        not click's Usage/Try/Error block; ``--help`` and ``--version`` work as usual."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `symphony-emu`: click prints the help
                exc.show()
                sys.exit(exc.exit_code)
            fail(usage_error_line(exc), exc.exit_code)
        except click.Abort:
            click.echo("symphony-emu: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.version_option(package_name="symphony-emu")
def cli(verbose: int) -> None:
    """Emulate Symphony: in-network step alignment of ring collectives (arXiv 2604.16880)."""
    setup_logging(verbose)


@cli.command()
@click.argument("topology", required=False)
@click.option("--scheme", default="both", show_default=True,
              help="Which schemes to run on the same network, jobs and traffic: both (baseline, symphony), "
                   "all (with the references: the placebo, random marks of Symphony's volume calibrated from "
                   "the symphony run, and in --mode sim the ideal, a per-step barrier at the hosts) or a comma list "
                   "of baseline, symphony, placebo, ideal.")
@click.option("--iterations", type=click.IntRange(1, MAX_ITERATIONS), default=None,
              help="Collectives per job (default: the topology's).")
@click.option("--size", default=None, callback=_size_option,
              help="Bytes per collective, a multiple of 4, e.g. 262144 or 256K (default: the topology's).")
@click.option("--target", type=click.Choice(target_names()), default=target_names()[0], show_default=True,
              help="Switch target (symphony-emu doctor says which are installed).")
@click.option("--out", type=click.Path(file_okay=False), callback=out_folder, default=None,
              help="Results folder (default: results/<timestamp>-<pid>/); one holding an earlier run is "
                   "refused unless --force.")
@click.option("--force", is_flag=True, help="Remove what an earlier run wrote in the --out folder first (other files stay).")
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True,
              help="Seed of data, traffic and switches.")
@click.option("--mode", type=click.Choice(list(BACKENDS)), default=next(iter(BACKENDS)), show_default=True,
              help="mininet: real time in Mininet (root); sim: virtual time in one process (no root, "
                   "docs/virtual-time.md).")
@click.option("--pcap", is_flag=True, help="Switches write one pcap per port to <out>/pcap/ "
              "(dissect the CTH with tools/wireshark/cth.lua).")
@click.option("--p4", "p4", type=click.Choice(["v1model", "tofino"]), default="v1model", show_default=True,
              help="P4 build the switches run: p4/symphony.p4 (v1model) or p4/tofino/symphony.p4 (T2NA, "
                   "embedded target; docs/tofino.md).")
@click.option("--dilation", default=None,
              help="Mininet mode: time dilation D (rates / D, delays and host timers * D; CCTs reported in "
                   "scenario time), or auto: the smallest of 1, 2, 4 at which this machine keeps up (a short "
                   "probe each). Default: the scenario's `dilation` (1 if unset); docs/virtual-time.md.")
@click.option("--mtu", type=int, default=None,
              help="Override the scenario's IP MTU (bytes), e.g. --mtu 1500 to run a 4096-byte scenario "
                   "in Mininet.")
@click.option("--parallel", type=click.IntRange(min=1), default=None,
              help="--mode sim: schemes run at once, each in a process of its own (default: "
                   "$SYMPHONY_EMU_PARALLEL, else one per scheme up to the CPUs the run may use; 1 = one after "
                   "the other in one process). Results are the same bit for bit.")
@click.option("--order", type=click.Choice(["abba", "random", "sequential"]), default=None,
              help="Mininet mode: order of the schemes' blocks on the one network, each block after the jobs' "
                   "`warmup` iterations (left out of the statistics): abba (default: A B B A, cancels a drift), "
                   "random (seeded rounds) or sequential (each scheme once).")
@click.option("--payload", type=click.Choice(["exact", "digest"]), default=None,
              help="What the ranks' buffers carry, for every job: exact float32 data (the default of a job) or "
                   "digest records, the same packets with memory that does not grow with --size "
                   "(docs/virtual-time.md, \"Digest payloads\"). Default: the jobs' `payload`.")
@click.option("--host-cost", "host_cost", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="--mode sim: model the hosts' processing time with this calibration file (symphony-emu "
                   "calibrate-host; docs/virtual-time.md), replacing the scenario's `host_cost`. Default: the "
                   "scenario's (unset: hosts process in zero time).")
def run(topology: str | None, scheme: str, iterations: int | None, size: int | None, target: str,
        out: Path | None, force: bool, seed: int, mode: str, pcap: bool, p4: str, dilation: str | None,
        mtu: int | None, parallel: int | None, order: str | None, payload: str | None,
        host_cost: Path | None) -> None:
    """Run TOPOLOGY's jobs with each scheme and compare them (default: topologies/default.yaml)."""
    from emu import runner

    size_bytes = size
    schemes = scheme_list(scheme, mode)
    console = make_console()
    try:
        with RichProgress(console) as progress:
            result = runner.run(resolve_topology(topology), schemes=schemes, iterations=iterations,
                                size=size_bytes, target=target, out=out, seed=seed, progress=progress, mode=mode,
                                pcap=pcap, p4=p4, dilation=dilation, mtu=mtu, parallel=parallel, force=force,
                                order=order, payload=payload, host_cost=host_cost)
    except user_errors() as exc:
        fail(str(exc))
    except runner.RunError as exc:
        fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt as exc:
        interrupted(exc, "everything the run started was stopped")
    print_result(console, result)
    if not result.ok:
        fail(result.failure or "some results were not verified", EXIT_FAILED)


@cli.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def report(directory: Path) -> None:
    """Print the comparison table of a results folder and (re)draw its plots."""
    from emu import runner

    try:
        make_console().print(runner.report_table(directory))
    except user_errors() as exc:
        fail(str(exc))
    except runner.RunError as exc:
        fail(str(exc), EXIT_FAILED)


@cli.command()
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False), callback=out_folder, default=None,
              help="The sweep's folder (default: results/sweep-<spec name>); the same folder resumes.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs at once on this machine (processes; 1 = one after the other).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="A Dask distributed scheduler (tcp://host:8786): the runs go to its workers, which see "
                   "the scenario files and --out at the same paths.")
def sweep(spec: Path, out: Path | None, workers: int, scheduler: str | None) -> None:
    """Run a parameter grid of SPEC (YAML: topology, schemes, seeds, grid) in virtual time.

    Writes sweep.csv, sweep.jsonl and sweep.md (every scheme's mean CCT per configuration and
    job, its ratio to the baseline with the 95% interval); resumes an interrupted sweep.
    """
    from emu import runner
    from emu import sweep as sweep_mod

    console = make_console()

    def progress(task: Any, value: dict[str, Any]) -> None:
        means = {(r["scheme"], r["job"]): r["ccts"] for r in value["rows"]}
        text = " ".join(f"{s}/job{j} {1e3 * sum(c) / len(c):.3f} ms" for (s, j), c in means.items() if c)
        console.print(f"  {sweep_mod.config_label(task.config)} seed {task.seed}: {text}", highlight=False)

    try:
        with signals_as_interrupt():
            md, _ = sweep_mod.run_sweep(spec, out=out, workers=workers, scheduler=scheduler, on_result=progress)
    except sweep_mod.SweepError as exc:
        fail(str(exc))
    except user_errors() as exc:
        fail(str(exc))
    except (runner.RunError, RuntimeError) as exc:
        fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt as exc:
        interrupted(exc, "the finished runs are kept; the same command resumes")
    console.print(md.read_text(), highlight=False)
    console.print(f"results: {md.parent}")


@cli.command()
@click.argument("number", type=int)
@click.option("--quick", is_flag=True, help="A small version (short runs, one seed): a smoke test for CI, not a result.")
@click.option("--out", type=click.Path(file_okay=False), callback=out_folder, default=None,
              help="The figures' folder (default: results/figures[-quick], shared by the figures so that they share runs); the same folder resumes.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Virtual-time runs at once (processes).")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Run the virtual-time runs on a Dask cluster.")
def figure(number: int, quick: bool, out: Path | None, workers: int, scheduler: str | None) -> None:
    """Make the paper's figure NUMBER (2, 4, 5, 6, 8, 9): PNG, CSV and a markdown table with the
    paper's claim beside ours (docs/paper.md). Fig. 9 runs in real time under Mininet (root)."""
    from emu import figures, runner
    from emu import sweep as sweep_mod

    console = make_console()
    try:
        with signals_as_interrupt():
            md = figures.make_figure(number, out=out, quick=quick, workers=workers, scheduler=scheduler)
    except (figures.FigureError, sweep_mod.SweepError) as exc:
        fail(str(exc))
    except user_errors() as exc:
        fail(str(exc))
    except (runner.RunError, RuntimeError) as exc:
        fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt as exc:
        interrupted(exc, "the finished runs are kept; the same command resumes")
    console.print(md.read_text(), highlight=False)
    console.print(f"results: {md.parent}")


@cli.command()
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--mn/--no-mn", default=False, show_default=True,
              help="Also run Mininet's `mn -c` (it also kills every ping and removes /tmp/*.log).")
@click.option("--force", is_flag=True,
              help="Remove every run's network and processes, those of runs still going too (they will fail).")
def clean(dry_run: bool, mn: bool, force: bool) -> None:
    """Remove what dead runs left: namespaces, links, processes, sockets (a run still going keeps its own)."""
    from emu.cleanup import clean_dead, cleanup

    if os.geteuid() != 0 and not dry_run:
        fail("clean needs root: sudo .venv/bin/symphony-emu clean")
    found = cleanup(mn=mn, dry_run=dry_run) if force else clean_dead(mn=mn, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for pid, line in found.processes:
        click.echo(f"{verb} process {pid}: {line}")
    for pid, node in found.shells:
        click.echo(f"{verb} Mininet node {node} (shell {pid}, its namespace)")
    for link in found.links:
        click.echo(f"{verb} link {link}")
    for path in found.paths:
        click.echo(f"{verb} {path}")
    if found.mn_ran:
        click.echo("ran mn -c")
    for run_id, folder in found.killed:
        click.echo(f"{'would mark' if dry_run else 'marked'} run {run_id} killed (it ended without cleaning up): "
                   f"{folder / 'run.json'}")
    for what, why in found.left_alone:
        click.echo(f"left alone {what}: {why}")
    if found.empty() and not found.killed:
        click.echo("nothing left behind")


def _unwritable(out: Path) -> str | None:
    """Why file ``out`` cannot be written (its folder missing or not a folder, ``out`` a folder, the
    open refused: /proc, read-only, permissions), or None. Opens it for appending (nothing is
    truncated) and removes it again if the open created it; creates no folder."""
    parent = out.parent
    if not parent.exists():
        return f"folder {parent} does not exist; create it first"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if out.is_dir():
        return "it is a directory"
    existed = out.exists()
    try:
        with open(out, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        out.unlink(missing_ok=True)
    return None


@cli.command(name="calibrate-host")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("host-cost.json"),
              show_default=True, help="Calibration file to write (read by `run --mode sim --host-cost FILE`).")
@click.option("--ranks", type=click.IntRange(2, 16), default=4, show_default=True, help="Worker processes.")
@click.option("--size", default="256K", show_default=True, callback=_size_option, help="Bytes per all-reduce.")
@click.option("--iterations", type=click.IntRange(1, 50), default=4, show_default=True, help="All-reduces per MTU.")
@click.option("--rate", "rate_mbps", type=click.FloatRange(0.1, 1000), default=10.0, show_default=True,
              help="Line rate (Mbit/s).")
@click.option("--mtu", "mtus", type=click.IntRange(576, 9000), multiple=True,
              help="MTUs to run (repeat; default 1500 and 800).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 3600), default=120.0, show_default=True,
              help="Seconds one run may take before it is stopped.")
@click.option("--cpu-only", is_flag=True, help="Write run_wait_s = 0 (CPU costs only, as on a quiet machine).")
def calibrate_host(out: Path, ranks: int, size: int, iterations: int, rate_mbps: float, mtus: tuple[int, ...],
                   timeout_s: float, cpu_only: bool) -> None:
    """Measure the real rank worker on this machine (loopback) and write the host-cost model."""
    from emu import hostcal

    problem = _unwritable(out)  # before the measuring: where the result goes must take it
    if problem:
        fail(f"--out {out}: cannot write the calibration there ({problem})")
    console = make_console()
    console.print(f"calibrating: {ranks} worker processes on 127.0.0.1, {size} bytes x {iterations} all-reduces "
                  f"at {rate_mbps:g} Mbit/s per MTU ...")
    try:
        with signals_as_interrupt():  # SIGTERM/SIGHUP as Ctrl-C: workers stopped, temporary folder removed
            doc = hostcal.calibrate(out, ranks=ranks, size=size, iterations=iterations, rate_mbps=rate_mbps,
                                    mtus=mtus or hostcal.DEFAULTS["mtus"], timeout_s=timeout_s, cpu_only=cpu_only)
    except hostcal.CalibrationError as exc:
        fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt as exc:
        interrupted(exc, "the calibration workers were stopped")
    m, f = doc["model"], doc["measured"]
    console.print(f"per wake-up {m['wake_s'] * 1e6:.1f} us, per datagram read {m['rx_packet_s'] * 1e6:.1f} us + "
                  f"{m['rx_byte_s'] * 1e9:.2f} ns/byte, sent {m['tx_packet_s'] * 1e6:.1f} us + "
                  f"{m['tx_byte_s'] * 1e9:.2f} ns/byte; wait for a CPU {m['run_wait_s'] * 1e6:.0f} us per wake-up "
                  f"(it waited {f['cpu_wait_share']:.0%} of the time it was runnable; load {f['machine']['load_avg_before'][0]:.1f} "
                  f"on {f['machine']['cpus']} CPUs)")
    console.print(f"fit over {f['callbacks']} callbacks: R^2 {f['r2']}, residual {f['residual_rms_us']} us rms; "
                  f"written to {out}")


@cli.command()
def doctor() -> None:
    """Show what is installed, what is missing and how to get it."""
    from rich.markup import escape
    from rich.table import Table

    from emu.doctor import run_checks

    checks = run_checks()
    table = Table(title="symphony-emu doctor")
    for col in ("", "component", "needed for", "found", "to get it"):
        table.add_column(col)
    for check in checks:
        word = "busy" if check.name == "machine quiet" else "missing"
        mark = "[green]ok[/]" if check.ok else (f"[red]{word}[/]" if check.required else f"[yellow]{word}[/]")
        table.add_row(mark, escape(check.name), check.needed_for, escape(check.detail),
                      "" if check.ok else escape(check.fix))
    console = make_console()
    console.print(table)
    for check in checks:
        if check.name == "machine quiet" and not check.ok:
            console.print(f"[yellow]warning: the machine is busy ({escape(check.detail)}): real-time results will be "
                          "disturbed; wait for a quiet machine or use --mode sim[/]")
    if any(check.required and not check.ok for check in checks):
        sys.exit(1)


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point (setup.cfg: symphony-emu = emu.cli:main).

    Ctrl-C always interrupts: a SIGINT that was ignored when this process started (``nohup``,
    a background job of a non-interactive shell) would otherwise leave no way to stop a run.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return cli.main(args=argv, prog_name="symphony-emu")


if __name__ == "__main__":
    main()
