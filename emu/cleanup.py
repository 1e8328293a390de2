"""Remove what earlier runs left behind: ``symphony-emu clean`` (like ``mn -c``, for us).

Leftovers of an interrupted run are:

- processes: ``python -m emu.embedded.switch``, ``python -m hostapps.worker``,
  ``python -m hostapps.traffic``, ``simple_switch_grpc``;
- Mininet node shells (``bash ... -is mininet:<node>``): each host shell holds a network
  namespace, which disappears with it (Mininet's namespaces are unnamed);
- veth links of the switches in the root namespace, named ``<tag>-<switch>-<port>`` with
  the run's link tag (:mod:`emu.linknames`);
- control sockets under ``/run/symphony-emu``.

Everything can be scoped to one run (``run_tag``: its run id, in the process's
SYMPHONY_EMU_RUN or command line; ``link_tags``: its link tag), which is how the runner's
safety net and the end-to-end tests use it. ``symphony-emu clean`` takes only what belongs
to dead runs (:func:`clean_dead`): another run that is going keeps its network.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from emu import linknames

log = logging.getLogger(__name__)

#: Python modules whose processes belong to symphony-emu runs.
OUR_MODULES = ("emu.embedded.switch", "hostapps.worker", "hostapps.traffic")
#: Programs (by file name) whose processes belong to symphony-emu runs (the bmv2 target's switches).
OUR_PROGRAMS = ("simple_switch_grpc",)
#: Root of the runtime directories (control sockets).
RUN_ROOT = Path("/run/symphony-emu")
#: Environment variable that tags every process of a run with the run id (set by emu.runner).
RUN_ENV = "SYMPHONY_EMU_RUN"


#: prctl(2) option: the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    """libc's prctl(2) (Linux), or None where there is none."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        log.debug("prctl not available: children will not get a parent-death signal")
        return None


def _arm_parent_death(prctl: Callable[..., int], parent: int, signum: int) -> None:
    prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signum)


def parent_death_signal(parent: int, sig: signal.Signals = signal.SIGTERM) -> None:
    """In a child process (spawned or forked): get ``sig`` when ``parent`` (a pid) dies.

    PR_SET_PDEATHSIG (prctl(2), Linux only; nothing elsewhere), or ``sig`` at once when
    ``parent`` is already gone. For a child started by Popen see :func:`die_with_parent`.
    """
    prctl = _prctl()
    if prctl is not None:
        _arm_parent_death(prctl, parent, int(sig))


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None] | None:
    """A Popen ``preexec_fn`` that makes the child get ``sig`` when this process dies.

    Sets PR_SET_PDEATHSIG (prctl(2), Linux only; None elsewhere), so switches, workers and
    traffic do not outlive a runner killed with SIGKILL. The setting survives ``exec`` (and
    Mininet's ``mnexec``, which execs in place) but is tied to the *thread* that starts the
    child: start children from a thread that lives as long as the run (the main thread).
    libc's prctl is looked up here, before the fork, so the child only makes the system call.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    signum = int(sig)

    def preexec() -> None:
        _arm_parent_death(prctl, parent, signum)

    return preexec


@dataclass
class CleanupReport:
    """What a cleanup found (and removed unless it was a dry run)."""

    processes: list[tuple[int, str]] = field(default_factory=list)
    shells: list[tuple[int, str]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    #: (what, why) of what belongs to a live run, or to no run, and was left alone.
    left_alone: list[tuple[str, str]] = field(default_factory=list)
    mn_ran: bool = False
    #: (run id, results folder) of runs killed without cleaning up, whose run.json was marked "killed".
    killed: list[tuple[str, Path]] = field(default_factory=list)

    def empty(self) -> bool:
        """True when nothing was left behind."""
        return not (self.processes or self.shells or self.links or self.paths)


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _pids() -> Iterable[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _run_env(pid: int) -> str | None:
    """The process's SYMPHONY_EMU_RUN environment variable (the run id), if any."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(RUN_ENV.encode() + b"="):
            return item.split(b"=", 1)[1].decode(errors="replace")
    return None


def _ours(argv: list[str]) -> bool:
    """Whether a command line is one of our module processes or programs."""
    return (any(argv[i] == "-m" and argv[i + 1] in OUR_MODULES for i in range(len(argv) - 1))
            or os.path.basename(argv[0]) in OUR_PROGRAMS)


def find_processes(run_tag: str | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of our module processes and programs (:data:`OUR_PROGRAMS`).

    With ``run_tag`` only those of one run: the tag (a run id) is their SYMPHONY_EMU_RUN
    environment variable or appears in their command line.
    """
    found = []
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        argv = _cmdline(pid)
        if not argv or not _ours(argv):
            continue
        line = " ".join(argv)
        if run_tag is not None and run_tag not in line and _run_env(pid) != run_tag:
            continue
        found.append((pid, line))
    return found


def find_shells(node_names: Iterable[str] | None = None, run_tag: str | None = None) -> list[tuple[int, str]]:
    """(pid, node) of Mininet node shells, optionally only those of ``node_names`` and of
    run ``run_tag`` (its id in the shell's SYMPHONY_EMU_RUN, which the runner sets)."""
    wanted = set(node_names) if node_names is not None else None
    found = []
    for pid in _pids():
        argv = _cmdline(pid)
        if not argv or not argv[-1].startswith("mininet:"):
            continue
        if "bash" not in os.path.basename(argv[0]) and not any("bash" in a for a in argv[:3]):
            continue
        node = argv[-1].removeprefix("mininet:")
        if (wanted is None or node in wanted) and (run_tag is None or _run_env(pid) == run_tag):
            found.append((pid, node))
    return found


def find_links(link_tags: Iterable[str] | None = None) -> list[str]:
    """Root-namespace switch links named ``<tag>-<switch>-<port>`` (emu.linknames), only
    those of ``link_tags`` when given."""
    return linknames.tagged_links(set(link_tags) if link_tags is not None else None)


def find_paths(run_id: str | None = None) -> list[str]:
    """Runtime directories under /run/symphony-emu (only /run/symphony-emu/<run_id> when given)."""
    if not RUN_ROOT.is_dir():
        return []
    return [str(p) for p in sorted(RUN_ROOT.iterdir()) if run_id is None or p.name == run_id]


#: Where each run notes its results folder (one file per run id), apart from RUN_ROOT so
#: that a run without a network (virtual time) is no leftover for ``clean`` (emu.runner).
#: (Earlier versions noted runs in /run/symphony-emu-runs by pid alone; they would take a
#: locked note for stale, so the notes moved.)
RESULTS_ROOT = Path("/run/symphony-emu-notes")

#: Open, exclusively locked notes of the runs this process registered (run id -> fd). The
#: kernel releases an flock(2) lock when its holder dies, in whatever PID namespace it ran,
#: so a free lock on a note is proof that its runner is dead (a pid is not: the pid in a run
#: id means nothing in another PID namespace, a container or ``unshare --pid``).
_HELD: dict[str, int] = {}


#: Lock file in a results folder, held (flock) by its runner while it writes there: a free
#: lock on a folder whose run.json says "running" means its runner died (any PID namespace).
RUN_LOCK = "run.lock"


def hold_run_lock(out_dir: Path) -> int:
    """Lock ``out_dir/run.lock`` (flock, exclusive) for this run; returns the fd to close at the end.

    Raises OSError when the folder cannot be written, BlockingIOError when another live
    run holds the lock (the runner turns both into one-line errors).
    """
    import fcntl

    fd = os.open(out_dir / RUN_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def run_lock_free(out_dir: Path) -> bool:
    """Whether no live runner holds ``out_dir``'s run lock (its runner is known to have ended).

    False when there is no lock file (an older run) or it cannot be read: not known.
    """
    return linknames.lock_free(out_dir / RUN_LOCK)


def register_run(run_id: str, out_dir: Path, node_names: Iterable[str] = ()) -> None:
    """Note where run ``run_id`` writes its results, so a SIGKILLed run can be recognised.

    Writes /run/symphony-emu-notes/<run id> (JSON: ``out_dir``, the Mininet ``nodes`` whose
    leftovers are its) and holds an exclusive flock(2) on it until :func:`unregister_run`
    or this process ends. Without write access (not root) nothing is noted (a debug log).
    """
    import fcntl
    import json

    path = RESULTS_ROOT / run_id
    try:
        RESULTS_ROOT.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        log.debug("run %s not registered under %s: %s", run_id, RESULTS_ROOT, exc)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, (json.dumps({"out_dir": str(Path(out_dir).resolve()), "nodes": list(node_names),
                                  "locked": True}) + "\n").encode())
    except OSError as exc:
        os.close(fd)
        log.debug("run %s not registered under %s: %s", run_id, RESULTS_ROOT, exc)
        return
    _HELD[run_id] = fd


def unregister_run(run_id: str) -> None:
    """Remove what :func:`register_run` wrote (the run ended and cleaned up)."""
    try:
        (RESULTS_ROOT / run_id).unlink(missing_ok=True)
    except OSError:
        pass
    fd = _HELD.pop(run_id, None)
    if fd is not None:
        os.close(fd)


@dataclass(frozen=True)
class RunNote:
    """A registered run whose runner is known to be dead (its note's lock is free)."""

    run_id: str
    pointer: Path  #: /run/symphony-emu-notes/<run id>
    out_dir: Path | None
    nodes: tuple[str, ...]


def _read_note(pointer: Path) -> RunNote | None:
    """The note ``pointer`` if its runner is known to be dead, else None (alive, or unknown).

    Dead means: the note is one :func:`register_run` locked and nobody holds the lock now.
    A note whose lock is held (a live runner, in any PID namespace), that cannot be opened
    or that carries no lock (an older version's, which named its runner only by a pid of
    its own namespace) is not known to be dead.
    """
    import fcntl
    import json

    try:
        fd = os.open(pointer, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: the runner lives
            return None
        try:
            note = json.loads(pointer.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(note, dict) or note.get("locked") is not True:
            return None
        out = note.get("out_dir")
        nodes = note.get("nodes") or []
        return RunNote(pointer.name, pointer, Path(out) if isinstance(out, str) else None,
                       tuple(str(n) for n in nodes if isinstance(n, str)))
    finally:
        os.close(fd)


def dead_runs() -> list[RunNote]:
    """Registered runs whose runner is known to be dead (SIGKILL, OOM killer, a crash)."""
    pointers = sorted(RESULTS_ROOT.iterdir()) if RESULTS_ROOT.is_dir() else []
    return [note for pointer in pointers if (note := _read_note(pointer)) is not None]


def mark_killed_runs(*, dry_run: bool = False) -> list[tuple[str, Path]]:
    """Runs whose runner died without cleaning up (SIGKILL, OOM killer, a crash): mark them.

    A run noted in /run/symphony-emu-notes/<run id> whose runner is known to be dead (the
    note's lock is free, :func:`dead_runs`), and whose results folder's run.json still says
    "starting" or "running", gets ``status: "killed"`` with ``failure`` saying so and
    ``killed_found`` (when this noticed it). Returns (run id, results folder) of each such
    run. A dead run's note is removed (``dry_run``: nothing is changed); its leftovers are
    :func:`clean_dead_runs`'s.
    """
    found = []
    for note in dead_runs():
        if _mark_killed(note, dry_run=dry_run):
            found.append((note.run_id, note.out_dir))
        if not dry_run:
            _unlink(note.pointer)
    return found


def _mark_killed(note: RunNote, *, dry_run: bool) -> bool:
    """Mark the dead run's run.json killed if it says it is still going; True if it did."""
    import json
    from datetime import datetime

    if note.out_dir is None:
        return False
    run_file = note.out_dir / "run.json"
    try:
        info = json.loads(run_file.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict) or info.get("run_id") != note.run_id or info.get("status") not in ("starting",
                                                                                                      "running"):
        return False
    if dry_run:
        return True
    tail = note.run_id.rsplit("-", 1)[-1]
    info.update(status="killed", killed_found=datetime.now().isoformat(timespec="seconds"),
                failure=f"the runner (pid {tail}) ended without cleaning up (SIGKILL, the OOM killer or a "
                        f"crash) while the run was {info.get('status')}")
    try:
        run_file.write_text(json.dumps(info, indent=1) + "\n")
    except OSError as exc:
        log.warning("cannot mark %s killed: %s", run_file, exc)
    return True


def clean_dead_runs() -> list[tuple[str, Path | None, CleanupReport]]:
    """What every dead run left, removed: processes and Mininet shells tagged with its run id,
    the links of its link tag, its /run/symphony-emu/<run id>; its run.json marked killed and
    its note removed. Returns (run id, results folder, what was removed) per dead run. The
    links of every other dead link tag (a network built outside a run) go too.

    The next ``run`` calls it, so a SIGKILLed run's namespaces, links and processes do not
    stay. A run in another PID namespace whose runner lives is left alone (its note's lock
    is held).
    """
    if os.geteuid() != 0:  # a user's run (virtual time) cannot remove root's leftovers: mark only
        return [(run_id, out_dir, CleanupReport()) for run_id, out_dir in mark_killed_runs()]
    out = []
    dead_tags = linknames.dead_tags()
    for note in dead_runs():
        _mark_killed(note, dry_run=False)
        tags = [tag for tag, run_id in dead_tags.items() if run_id == note.run_id]
        report = cleanup(run_tag=note.run_id, run_id=note.run_id, node_names=note.nodes or (), link_tags=tags,
                         shells_of_run=True)
        _unlink(note.pointer)
        out.append((note.run_id, note.out_dir, report))
    linknames.release_dead_tags()
    return out


def _unlink(path: Path) -> None:
    """Remove ``path``; a note another user wrote (root's, read by a user run) stays, logged."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("cannot remove %s: %s", path, exc.strerror or exc)


def _note_nodes(pointer: Path) -> bool:
    """Whether the run note ``pointer`` lists Mininet nodes (True when it cannot be read:
    a run we know nothing of may own a network)."""
    import json

    try:
        note = json.loads(pointer.read_text())
    except (OSError, ValueError):
        return True
    return not isinstance(note, dict) or bool(note.get("nodes", True))


def live_runs(*, networked: bool = False) -> list[tuple[str, int]]:
    """(run id, pid) of runs whose runner is still alive.

    ``networked``: only runs that own Mininet nodes (their note lists ``nodes``), so a
    virtual-time run, which owns no namespace, link or switch process, never makes
    ``symphony-emu clean`` refuse to remove another run's leftovers.

    A run id ends in its runner's pid (emu.runner.new_run_id, the pid in the runner's own
    PID namespace). A runner is alive while it holds the lock on its note
    (:func:`register_run`), whatever namespace it runs in; a run without a note (an older
    version, no write access) counts as alive while /run/symphony-emu/<run id> exists and
    the pid's command line is ours.
    """
    import fcntl

    live = []
    noted = sorted(RESULTS_ROOT.iterdir()) if RESULTS_ROOT.is_dir() else []
    for pointer in noted:
        try:
            fd = os.open(pointer, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            if networked and not _note_nodes(pointer):
                continue
            tail = pointer.name.rsplit("-", 1)[-1]
            live.append((pointer.name, int(tail) if tail.isdigit() else -1))
        finally:
            os.close(fd)
    known = {run_id for run_id, _ in live}
    for path in find_paths():
        name = Path(path).name
        tail = name.rsplit("-", 1)[-1]
        if name in known or not tail.isdigit():
            continue
        argv = _cmdline(int(tail))
        if any("symphony-emu" in a or a == "emu.cli" for a in argv):
            live.append((name, int(tail)))
    return live


def find_leftovers(*, run_tag: str | None = None, run_id: str | None = None,
                   node_names: Iterable[str] | None = None, link_tags: Iterable[str] | None = None,
                   shells_of_run: bool = False) -> CleanupReport:
    """What is left behind, without removing anything (arguments as for :func:`cleanup`)."""
    names = list(node_names) if node_names is not None else None
    paths = find_paths(run_id) if run_id is not None or run_tag is None else []
    if link_tags is not None:
        links = find_links(link_tags) if link_tags else []
    else:
        links = find_links() if run_tag is None and names is None else []
    return CleanupReport(processes=find_processes(run_tag),
                         shells=find_shells(names, run_tag if shells_of_run else None), links=links, paths=paths)


def find_dead_leftovers() -> CleanupReport:
    """What runs that are no longer going left behind (nothing removed; see :func:`clean_dead`).

    A process or Mininet shell belongs to the run named by its SYMPHONY_EMU_RUN; a link to
    its link tag (emu.linknames); /run/symphony-emu/<run id> to that run. What belongs to a
    live run (:func:`live_runs`; a held link tag) or to no run (no SYMPHONY_EMU_RUN: a test
    or a network started by hand) is listed in ``left_alone``, not taken.
    """
    live = {run_id for run_id, _ in live_runs()}
    report = CleanupReport()
    for pid, line in find_processes():
        owner = _run_env(pid)
        if owner is not None and owner not in live:
            report.processes.append((pid, line))
        else:
            report.left_alone.append((f"process {pid}: {line}",
                                      f"run {owner} is going" if owner else "it belongs to no run"))
    for pid, node in find_shells():
        owner = _run_env(pid)
        if owner is not None and owner not in live:
            report.shells.append((pid, node))
        else:
            report.left_alone.append((f"Mininet node {node} (shell {pid})",
                                      f"run {owner} is going" if owner else "it belongs to no run"))
    report.links = find_links(linknames.dead_tags())
    for tag, owner in linknames.held_tags().items():
        if find_links([tag]):
            report.left_alone.append((f"links of tag {tag}", f"run {owner or '?'} holds it"))
    for path in find_paths():
        if Path(path).name in live:
            report.left_alone.append((path, f"run {Path(path).name} is going"))
        else:
            report.paths.append(path)
    return report


def clean_dead(*, dry_run: bool = False, mn: bool = False) -> CleanupReport:
    """``symphony-emu clean``: remove what dead runs left (:func:`find_dead_leftovers`), mark
    their run.json killed; a run that is going, and what belongs to no run, stay."""
    report = find_dead_leftovers()
    report.killed = mark_killed_runs(dry_run=dry_run)
    if dry_run:
        return report
    _remove(report, link_tags=linknames.dead_tags())
    linknames.release_dead_tags()
    if mn:
        report.mn_ran = run_mn_clean()
    return report


def _kill(pids: list[int], timeout_s: float = 3.0, sig: signal.Signals = signal.SIGTERM) -> None:
    """Send ``sig`` to ``pids``, then SIGKILL whatever still runs after ``timeout_s`` seconds."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
        if alive:
            time.sleep(0.05)
    for pid in alive:
        log.warning("process %d ignored %s; killing it", pid, sig.name)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def run_mn_clean() -> bool:
    """Run Mininet's own ``mn -c`` if installed (its OVS steps fail harmlessly without OVS)."""
    mn = shutil.which("mn")
    if mn is None:
        return False
    try:
        subprocess.run([mn, "-c"], capture_output=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        log.warning("mn -c did not finish within 60 s")
    return True


def _remove(report: CleanupReport, *, link_tags: Iterable[str] | None) -> None:
    """Kill the report's processes (workers, then switches) and shells, delete the links of
    ``link_tags`` (None: every tagged link) still there, remove its directories."""
    switch_marks = ("emu.embedded.switch", *OUR_PROGRAMS)
    workers = [pid for pid, line in report.processes if not any(m in line for m in switch_marks)]
    switches = [pid for pid, line in report.processes if any(m in line for m in switch_marks)]
    _kill(workers)
    _kill(switches)
    # Mininet's node shells are interactive bash (``bash -is``), which ignores SIGTERM; SIGHUP ends it.
    _kill([pid for pid, _ in report.shells], sig=signal.SIGHUP)
    tags = list(link_tags) if link_tags is not None else None
    if tags is None or tags:  # re-read: those of killed namespaces are gone
        linknames.delete_links(find_links(tags))
    for path in report.paths:
        shutil.rmtree(path, ignore_errors=True)


def cleanup(*, run_tag: str | None = None, run_id: str | None = None,
            node_names: Iterable[str] | None = None, link_tags: Iterable[str] | None = None, mn: bool = False,
            dry_run: bool = False, shells_of_run: bool = False) -> CleanupReport:
    """Find and (unless ``dry_run``) remove leftovers; returns what was found.

    run_tag: only processes of that run (its id in SYMPHONY_EMU_RUN or the command line).
    run_id: only /run/symphony-emu/<run_id> (with run_tag and no run_id: no directory).
    node_names: only shells of these Mininet nodes (empty: none).
    link_tags: only links of these link tags (emu.linknames; empty: none). Without it, every
    tagged link when neither run_tag nor node_names is given (a forced clean of everything),
    else none.
    shells_of_run: only the shells of run ``run_tag`` (their SYMPHONY_EMU_RUN).
    mn: also run ``mn -c`` (which also kills every ``ping``, removes /tmp/*.log, ...).
    With no scope at all this takes everything, a live run's too (``clean --force``);
    ``symphony-emu clean`` is :func:`clean_dead`.
    """
    names = list(node_names) if node_names is not None else None
    tags = list(link_tags) if link_tags is not None else None
    report = find_leftovers(run_tag=run_tag, run_id=run_id, node_names=names, link_tags=tags,
                            shells_of_run=shells_of_run)
    if run_id is None and run_tag is None:  # a general clean: say which runs were killed
        report.killed = mark_killed_runs(dry_run=dry_run)
    if dry_run:
        return report
    if tags is None and (run_tag is not None or names is not None):
        tags = []
    _remove(report, link_tags=tags)
    if mn:
        report.mn_ran = run_mn_clean()
    return report
