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


def test_a_killed_run_is_marked_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9: after kill -9, run.json said "running" for ever; the next run or clean marks it."""
    import json

    root = tmp_path / "runs"
    monkeypatch.setattr(cleanup, "RESULTS_ROOT", root)
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer exists
    runs = {
        f"20261201-090000-{dead.pid}": "running",  # killed: its runner is gone
        f"20261201-090001-{os.getpid()}": "running",  # alive (this process)
        f"20261201-090002-{dead.pid}x": "running",  # not a run id
    }
    for run_id, status in runs.items():
        out = tmp_path / run_id
        out.mkdir()
        (out / "run.json").write_text(json.dumps({"run_id": run_id, "status": status}))
        cleanup.register_run(run_id, out)
    finished = f"20261201-090003-{dead.pid}"
    (tmp_path / finished).mkdir()
    (tmp_path / finished / "run.json").write_text(json.dumps({"run_id": finished, "status": "finished"}))
    cleanup.register_run(finished, tmp_path / finished)
    killed_id = f"20261201-090000-{dead.pid}"
    assert cleanup.mark_killed_runs(dry_run=True) == [(killed_id, tmp_path / killed_id)]
    assert json.loads((tmp_path / killed_id / "run.json").read_text())["status"] == "running"  # dry run
    assert cleanup.mark_killed_runs() == [(killed_id, tmp_path / killed_id)]
    info = json.loads((tmp_path / killed_id / "run.json").read_text())
    assert info["status"] == "killed" and f"pid {dead.pid}" in info["failure"] and "SIGKILL" in info["failure"]
    for run_id in (f"20261201-090001-{os.getpid()}", finished):
        assert json.loads((tmp_path / run_id / "run.json").read_text())["status"] in ("running", "finished")
    assert cleanup.mark_killed_runs() == []  # marked once, and its note removed
    assert not (root / killed_id).exists() and not (root / finished).exists()  # stale notes go too
    cleanup.unregister_run(f"20261201-090001-{os.getpid()}")
    assert not (root / f"20261201-090001-{os.getpid()}").exists()
