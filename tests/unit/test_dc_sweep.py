"""benchmarks/dc_sweep.py: --set parsing, overrides, and one tiny sweep in virtual time."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("dc_sweep", REPO / "benchmarks" / "dc_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


sweep = _load()


def test_parse_set_values_are_yaml_scalars() -> None:
    assert sweep.parse_set("symphony.slope=0.25,0.02") == ("symphony.slope", [0.25, 0.02])
    assert sweep.parse_set("dcqcn.rate_increase_period=55e-6") == ("dcqcn.rate_increase_period", [55e-6])
    assert sweep.parse_set("defaults.delay_ms=1us,2us") == ("defaults.delay_ms", ["1us", "2us"])
    with pytest.raises(sweep.SweepError, match="KEY=VALUE"):
        sweep.parse_set("symphony.slope")


def test_apply_override_paths() -> None:
    doc = {"jobs": [{"id": 0, "size_bytes": 4}], "background": [{"src": "a"}]}
    sweep.apply_override(doc, "symphony.slope", 0.1)
    sweep.apply_override(doc, "jobs.0.size_bytes", 8)
    sweep.apply_override(doc, "background", "none")
    assert doc == {"jobs": [{"id": 0, "size_bytes": 8}], "symphony": {"slope": 0.1}}
    with pytest.raises(sweep.SweepError, match="jobs.3 is not an index"):
        sweep.apply_override(doc, "jobs.3.size_bytes", 1)
    with pytest.raises(sweep.SweepError, match="symphony.slope is not a mapping"):
        sweep.apply_override(doc, "symphony.slope.x", 1)


def test_tiny_sweep_shares_the_baseline_and_applies_the_override(tmp_path: Path, capsys) -> None:
    """Two slopes: one baseline run (it ignores symphony.*) and two Symphony runs on single.yaml."""
    out = tmp_path / "sw"
    rc = sweep.main([str(REPO / "topologies" / "single.yaml"), "--size", "16KiB", "--iterations", "2",
                     "--set", "symphony.slope=0.0,1.0", "--set", "symphony.lead_threshold=0", "--out", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in (out / "sweep.jsonl").read_text().splitlines()]
    assert sorted(r["scheme"] for r in rows) == ["baseline", "symphony", "symphony"]
    assert all(r["verified"] and len(r["ccts"]) == 2 for r in rows)
    by_slope = {dict(map(tuple, r["config"]))["symphony.slope"]: r for r in rows if r["scheme"] == "symphony"}
    assert by_slope[0.0]["symphony_marks"] == 0  # slope 0: the marking table has no entry to hit
    written = (Path(by_slope[1.0]["dir"]).parent / "symphony-seed1.yaml").read_text()
    assert "slope: 1.0" in written and "lead_threshold: 0" in written
    assert "sym/base" in capsys.readouterr().out


def test_a_bad_override_is_refused_before_any_run(tmp_path: Path, capsys) -> None:
    topo = str(REPO / "topologies" / "single.yaml")
    assert sweep.main([topo, "--set", "symphony.slope=0.1,-1", "--out", str(tmp_path / "sw")]) == 2
    out = capsys.readouterr().out
    assert "symphony.slope=-1" in out and "must be >= 0" in out and topo in out
    assert not (tmp_path / "sw").exists()  # nothing ran, nothing written


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_interrupt_with_parallel_runs_leaves_no_process(tmp_path: Path, signame: str) -> None:
    """SIGINT/SIGTERM to a --jobs 2 sweep: it says how to resume, exits 128 + signal, no worker outlives it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    # Started as from a terminal: Ctrl-C's and SIGTERM's default handling, neither blocked,
    # whatever this process inherited or a library left in it (a child inherits ignored and
    # blocked signals); faulthandler dumps every thread's stack on SIGABRT (see the timeout).
    terminal = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "signal.signal(signal.SIGTERM, signal.SIG_DFL); "
                "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
                "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    cmd = [sys.executable, "-X", "faulthandler", "-c", terminal, str(REPO / "benchmarks" / "dc_sweep.py"),
           str(REPO / "topologies" / "single.yaml"), "--size", "64KiB", "--iterations", "2000", "--jobs", "2",
           "--set", "symphony.slope=0.1,0.2", "--out", str(tmp_path / "sw")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def session() -> list[int]:
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.getsid(int(d)) == proc.pid:
                        pids.append(int(d))
                except OSError:
                    pass
        return pids

    try:
        deadline = time.monotonic() + 30
        while len(session()) < 3 and time.monotonic() < deadline:  # the sweep and its 2 workers
            time.sleep(0.2)
        assert len(session()) >= 3, "the sweep did not start its workers"
        time.sleep(1.0)
        signum = getattr(signal, signame)
        with open(f"/proc/{proc.pid}/status") as f:  # what the sweep does with signals when it gets this one
            masks = " ".join(line.strip() for line in f if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
        proc.send_signal(signum)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler: where every thread of the sweep waits
            out, _ = proc.communicate(timeout=30)
            pytest.fail(f"the sweep did not end within 30 s of {signame} ({masks}):\n{out[-6000:]}")
        assert proc.returncode == 128 + signum, f"{masks}\n{out}"
        assert "interrupted" in out and "resumes" in out and "Traceback" not in out
        deadline = time.monotonic() + 10
        while session() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session() == []
    finally:
        for pid in session():
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("args", "words"), [(["--size", "0"], "--size 0"), (["--iterations", "0"], "--iterations 0"),
                                             (["--jobs", "0"], "--jobs 0"),
                                             (["--set", "dcqcn.rate_increse_period=55e-6"], "unknown DCQCN parameter")])
def test_bad_arguments_are_one_line(tmp_path: Path, capsys, args: list[str], words: str) -> None:
    assert sweep.main([str(REPO / "topologies" / "single.yaml"), *args, "--out", str(tmp_path / "sw")]) == 2
    out = capsys.readouterr().out
    assert words in out and "Traceback" not in out and "(line" not in out and not (tmp_path / "sw").exists()


def test_multi_job_sweep_keeps_jobs_apart(tmp_path: Path, capsys) -> None:
    """A topology with two jobs: a row per job in the table, per-job CCTs in sweep.jsonl
    (issue 15: the sweep used to crash on the scheme-level lead, null with several jobs)."""
    out = tmp_path / "sw"
    rc = sweep.main([str(REPO / "tests" / "unit" / "data" / "two_jobs.yaml"), "--iterations", "2",
                     "--out", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in (out / "sweep.jsonl").read_text().splitlines()]
    assert sorted(r["scheme"] for r in rows) == ["baseline", "symphony"]
    for r in rows:
        assert sorted(r["jobs"]) == ["0", "1"] and r["ccts"] is None and r["lead_mean"] is None
        assert all(len(b["ccts"]) == 2 and b["jct_s"] > 0 for b in r["jobs"].values())
    text = capsys.readouterr().out
    assert "job 0" in text and "job 1" in text


def test_out_that_is_a_file_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "afile").write_text("")
    assert sweep.main([str(REPO / "topologies" / "single.yaml"), "--out", str(tmp_path / "afile")]) == 2
    out = capsys.readouterr().out
    assert "--out" in out and "a file, not a folder" in out and "Traceback" not in out
