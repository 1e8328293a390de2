"""Process cleanup: signals that really end what runs leave behind (no Mininet needed)."""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emu import cleanup


def _interactive_bash() -> subprocess.Popen:
    """A shell like Mininet's node shells (``bash -is``): interactive bash ignores SIGTERM.

    Returns once the shell has run a first command, so its signal dispositions are set."""
    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    proc = subprocess.Popen(["bash", "--norc", "--noprofile", "-is"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"echo ready\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], 30)  # bound only: normally at once
    if not ready or proc.stdout.readline() != b"ready\n":
        _close(proc)
        pytest.fail("interactive bash did not answer 'echo ready' within 30 s")
    return proc


def _close(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if still running, reap it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def test_sighup_ends_an_interactive_shell(caplog: pytest.LogCaptureFixture) -> None:
    proc = _interactive_bash()
    try:
        with caplog.at_level(logging.WARNING, logger="emu.cleanup"):
            cleanup._kill([proc.pid], timeout_s=60.0, sig=signal.SIGHUP)
        assert caplog.records == []  # ended by SIGHUP, no SIGKILL needed
        assert proc.wait(5) == -signal.SIGHUP
    finally:
        _close(proc)


def test_sigterm_falls_back_to_sigkill_and_names_the_signal(caplog: pytest.LogCaptureFixture) -> None:
    proc = _interactive_bash()
    try:
        with caplog.at_level(logging.WARNING, logger="emu.cleanup"):
            cleanup._kill([proc.pid], timeout_s=0.5, sig=signal.SIGTERM)
        assert proc.wait(5) == -signal.SIGKILL
        assert [r.getMessage() for r in caplog.records] == [f"process {proc.pid} ignored SIGTERM; killing it"]
    finally:
        _close(proc)


def test_children_die_with_their_parent() -> None:
    """die_with_parent: a child started with it gets SIGTERM when its parent dies."""
    preexec = cleanup.die_with_parent()
    if preexec is None:
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    code = ("import subprocess, sys, os\n"
            "from emu.cleanup import die_with_parent\n"
            "p = subprocess.Popen(['sleep', '30'], preexec_fn=die_with_parent())\n"
            "print(p.pid, flush=True)\n"
            "os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    pid = int(out.stdout)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and not cleanup._zombie(pid):
        time.sleep(0.05)
    alive = os.path.exists(f"/proc/{pid}") and not cleanup._zombie(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the child outlived its parent"


def _dead_runner_note(root: Path, run_id: str, out: Path, nodes: list[str] | None = None) -> None:
    """The note a runner killed with SIGKILL leaves: written and locked by it, the lock gone with it."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    (root / run_id).write_text(json.dumps({"out_dir": str(out), "nodes": nodes or [], "locked": True}) + "\n")


def test_a_killed_run_is_marked_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9: after kill -9, run.json said "running" for ever; the next run or clean marks it."""
    import json

    root = tmp_path / "runs"
    monkeypatch.setattr(cleanup, "RESULTS_ROOT", root)
    monkeypatch.setattr(cleanup, "find_paths", lambda run_id=None: [])  # other runs on this machine
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer exists
    killed_id, alive_id, finished = (f"20261201-09000{i}-{dead.pid}" for i in (0, 1, 3))
    for run_id, status in ((killed_id, "running"), (alive_id, "running"), (finished, "finished")):
        out = tmp_path / run_id
        out.mkdir()
        (out / "run.json").write_text(json.dumps({"run_id": run_id, "status": status}))
    _dead_runner_note(root, killed_id, tmp_path / killed_id)
    _dead_runner_note(root, finished, tmp_path / finished)
    cleanup.register_run(alive_id, tmp_path / alive_id)  # this process holds its lock: alive
    assert cleanup.mark_killed_runs(dry_run=True) == [(killed_id, tmp_path / killed_id)]
    assert json.loads((tmp_path / killed_id / "run.json").read_text())["status"] == "running"  # dry run
    assert cleanup.mark_killed_runs() == [(killed_id, tmp_path / killed_id)]
    info = json.loads((tmp_path / killed_id / "run.json").read_text())
    assert info["status"] == "killed" and f"pid {dead.pid}" in info["failure"] and "SIGKILL" in info["failure"]
    for run_id in (alive_id, finished):
        assert json.loads((tmp_path / run_id / "run.json").read_text())["status"] in ("running", "finished")
    assert cleanup.mark_killed_runs() == []  # marked once, and its note removed
    assert not (root / killed_id).exists() and not (root / finished).exists()  # stale notes go too
    assert [run_id for run_id, _ in cleanup.live_runs()] == [alive_id]
    cleanup.unregister_run(alive_id)
    assert not (root / alive_id).exists()


def test_a_run_in_another_pid_namespace_is_not_marked_killed(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: the pid in a run id is its runner's pid in its own PID namespace (a container,
    ``unshare --pid``); absent here, it proved nothing, and a running run was marked killed.
    Only a free lock on the note proves the runner dead."""
    import json

    root = tmp_path / "runs"
    monkeypatch.setattr(cleanup, "RESULTS_ROOT", root)
    monkeypatch.setattr(cleanup, "find_paths", lambda run_id=None: [])  # other runs on this machine
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_id = f"20261201-090000-{dead.pid}"  # its pid means nothing here: no such process
    out = tmp_path / run_id
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"run_id": run_id, "status": "running"}))
    code = ("import sys, time; from pathlib import Path; from emu import cleanup; "
            f"cleanup.RESULTS_ROOT = Path({str(root)!r}); cleanup.register_run({run_id!r}, Path({str(out)!r})); "
            "print('registered', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "registered"
        assert cleanup.mark_killed_runs() == []
        assert cleanup.clean_dead_runs() == []
        assert json.loads((out / "run.json").read_text())["status"] == "running"
        assert (root / run_id).exists()
        assert [r for r, _ in cleanup.live_runs()] == [run_id]
    finally:
        holder.kill()  # its lock goes with it: now it is known to be dead
        holder.wait()
    assert cleanup.mark_killed_runs() == [(run_id, out)]
    assert json.loads((out / "run.json").read_text())["status"] == "killed"


def test_a_note_without_a_lock_proves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older version's note (the folder on one line, no lock) is left alone: not known dead."""
    import json

    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setattr(cleanup, "RESULTS_ROOT", root)
    run_id = "20261201-090000-999999999"
    (tmp_path / "run.json").write_text(json.dumps({"run_id": run_id, "status": "running"}))
    (root / run_id).write_text(f"{tmp_path}\n")
    assert cleanup.mark_killed_runs() == [] and (root / run_id).exists()


def test_a_virtual_time_run_does_not_stop_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live virtual-time run owns no namespace, link or switch: `clean` (live_runs(networked=True))
    must not refuse to remove a dead Mininet run's leftovers because of it; a live Mininet run still counts."""
    root = tmp_path / "runs"
    monkeypatch.setattr(cleanup, "RESULTS_ROOT", root)
    monkeypatch.setattr(cleanup, "find_paths", lambda run_id=None: [])  # other runs on this machine
    sim_id, mn_id = "20261201-090000-11", "20261201-090001-12"
    cleanup.register_run(sim_id, tmp_path / sim_id)
    cleanup.register_run(mn_id, tmp_path / mn_id, ["h1", "s1"])
    try:
        assert sorted(r for r, _ in cleanup.live_runs()) == [sim_id, mn_id]
        assert [r for r, _ in cleanup.live_runs(networked=True)] == [mn_id]
    finally:
        cleanup.unregister_run(sim_id)
        cleanup.unregister_run(mn_id)
    assert cleanup.live_runs(networked=True) == []
