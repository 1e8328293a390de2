"""Runner pieces that need no network: results folder, run.json, interrupted runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from emu import cleanup as cleanup_mod
from emu import runner
from emu.mininet import backend as mininet_backend
from emu.report import ReportError, render_report
from emu.topology import load_topology

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"


def test_default_out_dir_keeps_the_pid() -> None:
    run_id = runner.new_run_id()
    assert run_id.endswith(f"-{os.getpid()}")
    out = runner.default_out_dir(run_id)
    assert out == Path.cwd() / "results" / run_id
    # Two runs started in the same second differ in their pids, hence in their folders.
    assert runner.default_out_dir("20261130-101500-41") != runner.default_out_dir("20261130-101500-42")


def test_make_out_dir_creates_and_checks(tmp_path: Path) -> None:
    out = runner.make_out_dir(tmp_path / "a" / "b")
    assert out.is_dir() and list(out.iterdir()) == []


@pytest.mark.parametrize("given", [True, False])
def test_make_out_dir_error_is_one_line(given: bool) -> None:
    with pytest.raises(runner.UsageError) as info:
        runner.make_out_dir(Path("/proc/nope"), given=given)
    message = str(info.value)
    assert "\n" not in message
    if given:
        assert message.startswith("--out /proc/nope: cannot create the results folder (")
        assert message.endswith("); give a writable directory")
    else:
        assert message.startswith("/proc/nope: cannot create the results folder (")
        assert message.endswith("give --out DIR")


def test_resolved_workload_from_topology_and_overrides() -> None:
    topo = load_topology(SINGLE)
    job = topo.jobs[0]
    got = runner.resolved_workload(topo, iterations=None, size=None)
    assert got["iterations"] == job.iterations and got["size"] == job.size_bytes
    assert got["iterations_override"] is None and got["size_override"] is None
    assert got["jobs"] == [{"job": job.id, "collective": job.collective, "ranks": len(job.ranks),
                            "iterations": job.iterations, "size_bytes": job.size_bytes, "payload": "exact"}]
    got = runner.resolved_workload(topo, iterations=7, size=4096)
    assert (got["iterations"], got["size"], got["iterations_override"], got["size_override"]) == (7, 4096, 7, 4096)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Experiment.open without root, Mininet or a network: _build does nothing, cleanup is faked."""
    calls: list[str] = []
    monkeypatch.setattr(mininet_backend, "target_class", lambda name: object)
    monkeypatch.setattr(mininet_backend, "require_root", lambda: None)
    monkeypatch.setattr(mininet_backend, "require_mininet", lambda: None)
    monkeypatch.setattr(cleanup_mod, "find_links", lambda names=None: [])
    monkeypatch.setattr(cleanup_mod, "cleanup", lambda **kw: calls.append("cleanup") or cleanup_mod.CleanupReport())
    monkeypatch.setattr(mininet_backend.MininetBackend, "build", lambda self, progress: calls.append("build"))
    return calls


def _run_json(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


def test_interrupted_run_is_recorded_and_reported(no_network: list[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict = {}

    def interrupted_scheme(self: runner.Experiment, scheme: str, **kw: object) -> None:
        seen.update(_run_json(self.out_dir))
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.Experiment, "run_scheme", interrupted_scheme)
    with pytest.raises(KeyboardInterrupt):
        runner.run(SINGLE, schemes=("baseline",), out=tmp_path, size=8192)
    assert no_network == ["build", "cleanup"]
    topo = load_topology(SINGLE)
    assert seen["status"] == "running"
    assert seen["iterations"] == topo.jobs[0].iterations  # resolved from the topology
    assert seen["size"] == 8192 and seen["size_override"] == 8192 and seen["iterations_override"] is None
    info = _run_json(tmp_path)
    assert info["status"] == "interrupted" and info["topology_name"] == "single" and "ended" in info
    with pytest.raises(ReportError) as err:
        render_report(tmp_path)
    assert str(err.value) == f"{tmp_path}: run was interrupted before its summary was written; run it again"


def test_failed_run_is_recorded(no_network: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_scheme(self: runner.Experiment, scheme: str, **kw: object) -> None:
        raise runner.RunError("baseline: job 0 rank 1 on h2 failed: boom")

    monkeypatch.setattr(runner.Experiment, "run_scheme", failing_scheme)
    with pytest.raises(runner.RunError):
        runner.run(SINGLE, schemes=("baseline",), out=tmp_path)
    info = _run_json(tmp_path)
    assert info["status"] == "failed" and info["failure"].endswith("boom")


def test_experiment_closed_normally_is_finished(no_network: list[str], tmp_path: Path) -> None:
    stale = {"run_id": "someone-else", "status": "interrupted", "schemes": ["x"]}
    (tmp_path / "run.json").write_text(json.dumps(stale))  # a reused --out folder, emptied by force
    with runner.Experiment.open(SINGLE, out=tmp_path, run_id="r1", force=True) as exp:
        assert _run_json(tmp_path)["status"] == "running"
        assert exp.out_dir == tmp_path.resolve()
    info = _run_json(tmp_path)
    assert info["status"] == "finished" and info["run_id"] == "r1" and "schemes" not in info


def test_bad_out_folder_fails_before_building(no_network: list[str]) -> None:
    with pytest.raises(runner.UsageError, match=r"^--out /proc/nope: cannot create the results folder"):
        with runner.Experiment.open(SINGLE, out=Path("/proc/nope")):
            pass
    assert no_network == []


def test_progress_counts_iterations_from_step_records(tmp_path: Path) -> None:
    """Workers that defer verification write "iteration" records only at the end: the
    progress must still advance as each collective's step records appear."""
    from emu.mininet.backend import _Progress

    paths = [tmp_path / "job0-rank0.jsonl", tmp_path / "job0-rank1.jsonl"]
    tracker = _Progress(paths)
    tracker.update()
    assert tracker.done() == 0

    def step(path: Path, it: int, st: int) -> None:
        with path.open("a") as fh:
            fh.write(json.dumps({"kind": "step", "job": 0, "rank": 0, "iteration": it, "step": st,
                                  "start": 0.0, "end": 1.0}) + "\n")

    for it in range(3):
        for p in paths:
            step(p, it, 2 * it)
            step(p, it, 2 * it + 1)
    step(paths[0], 3, 6)
    tracker.update()
    assert tracker.done() == 3
    for p in paths:
        with p.open("a") as fh:
            for it in range(3):
                fh.write(json.dumps({"kind": "iteration", "iteration": it, "verified": True}) + "\n")
    tracker.update()
    assert tracker.done() == 3


def test_memory_check_rejects_a_size_that_cannot_fit() -> None:
    """8 ranks x 1 GiB cannot fit in 4 GiB: a one-line UsageError naming --size; 1 MiB fits."""
    from emu.topology import load_topology

    topo = load_topology(REPO / "topologies" / "default.yaml")
    with pytest.raises(runner.UsageError, match="--size") as err:
        runner.check_memory(topo, size=2**30, available=4 * 2**30)
    assert "\n" not in str(err.value)
    runner.check_memory(topo, size=2**20, available=4 * 2**30)


def test_memory_check_names_the_file_when_the_size_came_from_it() -> None:
    """No --size given: the message names the topology's size_bytes, not a --size nobody gave."""
    from emu.topology import load_topology

    path = REPO / "topologies" / "default.yaml"
    topo = load_topology(path)
    with pytest.raises(runner.UsageError) as err:
        runner.check_memory(topo, size=None, available=2**20, path=path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: jobs[0].size_bytes: ") and "lower the jobs' size_bytes" in msg, msg
    assert "\n" not in msg


def test_exit_reason_names_the_signal() -> None:
    assert runner.exit_reason(1) == "exit code 1"
    assert runner.exit_reason(-9) == "killed by SIGKILL (out of memory? see dmesg)"
    assert runner.exit_reason(-15) == "killed by SIGTERM"


def _earlier_run(folder: Path) -> None:
    """What an earlier run left in a results folder: its run.json and a rank's JSON lines."""
    (folder / "baseline").mkdir(parents=True)
    (folder / "baseline" / "job3-rank0.jsonl").write_text('{"kind": "iteration"}\n')
    (folder / "run.json").write_text(json.dumps({"run_id": "20261201-090000-1", "status": "finished"}))
    (folder / "summary.json").write_text("{}")


def test_out_folder_holding_a_run_is_refused_or_emptied_with_force(tmp_path: Path) -> None:
    """Issue 19: reusing --out mixed the earlier run's ranks into the new summary (a phantom
    "job 3 (4 ranks)"): refused in one line naming the fix; --force empties what a run wrote."""
    out = tmp_path / "r1"
    _earlier_run(out)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(runner.UsageError, match="holds an earlier run.*--force") as err:
        runner.make_out_dir(out)
    assert "\n" not in str(err.value) and (out / "baseline" / "job3-rank0.jsonl").exists()
    assert runner.make_out_dir(out, force=True) == out
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # the user's own file stays
    assert runner.make_out_dir(tmp_path / "new") == tmp_path / "new"  # a new or empty folder is fine
    assert runner.make_out_dir(tmp_path / "new") == tmp_path / "new"


def test_out_folder_of_a_live_run_is_refused_even_with_force(tmp_path: Path) -> None:
    from emu import cleanup

    _earlier_run(tmp_path)
    fd = cleanup.hold_run_lock(tmp_path)  # a run writing there now
    try:
        with pytest.raises(runner.UsageError, match="another run is writing there now"):
            runner.make_out_dir(tmp_path, force=True)
        assert (tmp_path / "baseline" / "job3-rank0.jsonl").exists()
        assert not cleanup.run_lock_free(tmp_path)
    finally:
        os.close(fd)
    assert cleanup.run_lock_free(tmp_path)


def test_report_on_a_killed_run_says_killed(tmp_path: Path) -> None:
    """Issue 19: `report` on a virtual-time run killed with SIGKILL (no root: nobody marks it)
    said "still running"; its free run lock shows its runner is gone."""
    from emu import cleanup, report

    (tmp_path / "run.json").write_text(json.dumps({"run_id": "20261201-090000-1", "status": "running"}))
    fd = cleanup.hold_run_lock(tmp_path)
    with pytest.raises(report.ReportError, match="still running"):
        report.render_report(tmp_path)
    os.close(fd)  # the runner died
    with pytest.raises(report.ReportError, match="killed before its summary was written"):
        report.render_report(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_results_folder_under_sudo_belongs_to_the_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: `sudo ... run` left results/ owned by root, after which the README's
    no-root virtual-time commands could not write there."""
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    monkeypatch.chdir(tmp_path)
    out = runner.make_out_dir(runner.default_out_dir("20261201-090000-1"), given=False)
    assert out.parent == tmp_path / "results"
    st = out.parent.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534)


def test_progress_counts_only_this_blocks_iterations(tmp_path: Path) -> None:
    """A scheme's later block appends to its files (iterations numbered on from 11): the
    progress counts what this block wrote, 0..n, not the earlier block's lines or numbers."""
    from emu.mininet.backend import _Progress

    path = tmp_path / "job0-rank0.jsonl"
    path.write_text("".join(json.dumps({"kind": "iteration", "iteration": k, "verified": True}) + "\n"
                            for k in range(11)))
    tracker = _Progress([path])
    tracker.update()
    assert tracker.done() == 0
    with path.open("a") as fh:
        for k in (11, 12):
            fh.write(json.dumps({"kind": "iteration", "iteration": k, "verified": True}) + "\n")
    tracker.update()
    assert tracker.done() == 2


@pytest.mark.parametrize("error", [KeyboardInterrupt, ValueError])
def test_a_run_stopped_while_its_results_are_written_says_so(no_network: list[str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              error: type[BaseException]) -> None:
    """Issue (new-user check, 2026-12-04): a Ctrl-C after the network was torn down but before
    summary.json was written left run.json at "finished", and `report` then asked for a finished run."""
    def scheme(self: runner.Experiment, scheme: str, **kw: object) -> dict:
        return {}

    def summarize(*a: object, **kw: object) -> None:
        assert _run_json(tmp_path)["status"] == "finished"  # the schemes ended: the network is down
        raise error("stopped")

    monkeypatch.setattr(runner.Experiment, "run_schemes", scheme)
    monkeypatch.setattr(runner, "summarize", summarize)
    with pytest.raises(error):
        runner.run(SINGLE, schemes=("baseline",), out=tmp_path, size=8192)
    info = _run_json(tmp_path)
    if error is KeyboardInterrupt:
        assert info["status"] == "interrupted" and "ended" in info
        with pytest.raises(ReportError) as err:
            render_report(tmp_path)
        assert str(err.value) == f"{tmp_path}: run was interrupted before its summary was written; run it again"
    else:
        assert info["status"] == "failed" and info["failure"] == "writing the results: stopped"


def test_an_input_topology_where_the_run_writes_is_refused_and_kept(tmp_path: Path) -> None:
    """New-user check, 2026-12-04: ``run X/topology.yaml --out X`` rewrote the input file (the copy's
    header prepended); with ``--force`` it deleted it, then failed with a traceback. Now both are one
    UsageError before anything is written, and the file is unchanged; a topology elsewhere in the
    folder is fine without --force."""
    out = tmp_path / "X"
    out.mkdir()
    topo = out / "topology.yaml"
    topo.write_text(SINGLE.read_text())
    for force in (False, True):
        with pytest.raises(runner.UsageError, match=r"it holds the topology file .* and the run writes its copy"):
            with runner.Experiment.open(topo, out=out, mode="sim", force=force):
                pass
        assert topo.read_text() == SINGLE.read_text()
    (out / "logs").mkdir()
    logs_topo = out / "logs" / "mine.yaml"
    logs_topo.write_text(SINGLE.read_text())
    (out / "run.json").write_text("{}")  # an earlier run: --force would empty the folder
    with pytest.raises(runner.UsageError, match=r"--force removes logs there first"):
        with runner.Experiment.open(logs_topo, out=out, mode="sim", force=True):
            pass
    assert logs_topo.read_text() == SINGLE.read_text()
    assert runner.input_in_out_dir(out, out / "own" / "t.yaml", force=True) is None
    assert runner.input_in_out_dir(out, logs_topo, force=False) is None
    assert runner.input_in_out_dir(tmp_path / "elsewhere", topo, force=True) is None


def test_run_json_says_which_compiled_modules_ran_and_a_stale_one_is_warned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """New-user check, 2026-12-04: after a source edit a stale build ran as Python source, 1.9x
    slower, and nothing said so. run.json's ``compiled_modules`` counts them; a stale one is a warning."""
    from hostapps import compiled

    real = compiled.status()
    monkeypatch.setattr(compiled, "status", lambda: {**real, "hostapps.wire": "stale build"})
    with caplog.at_level("WARNING", logger="emu.runner"):
        res = runner.run(SINGLE, mode="sim", out=tmp_path, schemes=("baseline",), iterations=1, size=65536)
    assert res.ok
    facts = _run_json(tmp_path)["compiled_modules"]
    assert facts["of"] == len(compiled.MODULES) and facts["compiled"] + len(facts["not_compiled"]) == facts["of"]
    assert facts["not_compiled"]["hostapps.wire"] == "stale build"
    assert any("run as Python source" in r.getMessage() and "hostapps.wire" in r.getMessage() for r in caplog.records)
