"""Virtual time's schemes in parallel processes (emu.vtime.parallel): the same results as one
after the other, and failures or interrupts that leave no process behind."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emu import runner
from emu.vtime import parallel

REPO = Path(__file__).resolve().parents[2]
LEAD = REPO / "topologies" / "e2e_lead.yaml"
DC16 = REPO / "topologies" / "dc-leafspine-16.yaml"
SAME = ("summary.json", "cct.csv", "steps.csv", "baseline/counters.json", "symphony/counters.json",
        *(f"{s}/job0-rank{r}.jsonl" for s in ("baseline", "symphony") for r in range(4)))


def test_parallel_and_sequential_give_the_same_results_bit_for_bit(tmp_path: Path) -> None:
    par = runner.run(LEAD, mode="sim", out=tmp_path / "par", seed=2, iterations=2, parallel=2)
    seq = runner.run(LEAD, mode="sim", out=tmp_path / "seq", seed=2, iterations=2, parallel=1)
    assert par.ok and seq.ok
    for name in SAME:
        assert (tmp_path / "par" / name).read_bytes() == (tmp_path / "seq" / name).read_bytes(), name
    assert par.summary["symphony"]["marks"]["symphony"] > 0 == par.summary["baseline"]["marks"]["symphony"]


def test_a_scheme_s_metrics_are_worked_out_once_as_its_process_ends(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """In parallel, each scheme's metrics are computed when its process has ended (the others may still
    run: emu.vtime.parallel.run_schemes' on_result), once, and summarize uses them: the same files."""
    from emu import metrics

    calls: list[tuple[str, bool]] = []
    compute = metrics.compute_metrics

    def counted(folder, **kw):  # type: ignore[no-untyped-def]
        calls.append((kw["scheme"], any(f.function == "summarize" for f in inspect.stack())))
        return compute(folder, **kw)

    monkeypatch.setattr(metrics, "compute_metrics", counted)
    par = runner.run(LEAD, mode="sim", out=tmp_path / "par", seed=2, iterations=2, parallel=2)
    assert par.ok and sorted(calls) == [("baseline", False), ("symphony", False)]  # none in summarize
    calls.clear()
    seq = runner.run(LEAD, mode="sim", out=tmp_path / "seq", seed=2, iterations=2, parallel=1)
    assert seq.ok and sorted(calls) == [("baseline", True), ("symphony", True)]
    for name in ("summary.json", "cct.csv", "steps.csv"):
        assert (tmp_path / "par" / name).read_bytes() == (tmp_path / "seq" / name).read_bytes(), name


def test_each_scheme_gets_a_fresh_network_from_the_seed(tmp_path: Path) -> None:
    """A scheme's results do not depend on which schemes ran before it in the run."""
    both = runner.run(LEAD, mode="sim", out=tmp_path / "both", seed=2, iterations=2, parallel=1)
    alone = runner.run(LEAD, mode="sim", out=tmp_path / "alone", seed=2, iterations=2, schemes=("symphony",))
    assert both.ok and alone.ok
    for rank in range(4):
        name = f"symphony/job0-rank{rank}.jsonl"
        assert (tmp_path / "both" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes(), name


def test_a_failing_scheme_process_ends_the_run_with_one_line(tmp_path: Path) -> None:
    """A rank that fails in a child (a step time limit of 0.5 ms: above the paths' 0.2 ms delay, which the
    load checks, far below one packet's 1.2 ms at 10 Mbit/s) is a RunError
    naming the scheme and the rank, raised after both children were stopped."""
    topo = tmp_path / "t.yaml"
    topo.write_text(LEAD.read_text().replace("step_timeout_s: 10", "step_timeout_s: 0.0005"))
    with pytest.raises(runner.RunError, match=r"^(baseline|symphony): job 0 rank \d on h\d failed: ") as info:
        runner.run(topo, mode="sim", out=tmp_path / "out", iterations=2, parallel=2)
    assert "\n" not in str(info.value)
    assert not _children(os.getpid(), "spawn_main")


def test_parallel_env_and_option_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.PARALLEL_ENV, "1")
    assert parallel.default_parallel(2) == 1
    monkeypatch.setenv(parallel.PARALLEL_ENV, "many")
    with pytest.raises(runner.UsageError, match=r"SYMPHONY_EMU_PARALLEL='many': give a positive integer"):
        runner.run(LEAD, mode="sim", out=tmp_path / "a")
    monkeypatch.delenv(parallel.PARALLEL_ENV)
    assert parallel.default_parallel(2) == min(2, parallel.available_cpus())
    with pytest.raises(runner.UsageError, match=r"--parallel 2: only --mode sim runs schemes in parallel"):
        runner.run(LEAD, mode="mininet", out=tmp_path / "b", parallel=2)


# -- the CLI in a process of its own, interrupted mid-run ---------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # fields from the state on (comm may hold spaces)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _children(parent: int, word: str) -> list[int]:
    out = []
    for pid in _pids():
        st = _stat(pid)
        if st is not None and st[0] != "Z" and int(st[1]) == parent and word in _cmdline(pid):
            out.append(pid)
    return out


def _in_session(sid: int) -> list[int]:
    out = []
    for pid in _pids():
        st = _stat(pid)
        if st is not None and st[0] != "Z" and int(st[3]) == sid:
            out.append(pid)
    return out


def _start_run(out: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """``run dc-leafspine-16 --mode sim --parallel 2`` in a new session; returns it once both scheme
    processes are simulating (each wrote its worker specs)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from emu.cli import main; main(sys.argv[1:])",
                             "run", str(DC16), "--mode", "sim", "--parallel", "2", "--out", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = _children(proc.pid, "spawn_main")
        if len(kids) == 2 and all((out / s / "specs").is_dir() for s in ("baseline", "symphony")):
            time.sleep(0.2)
            return proc, kids
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    pytest.fail(f"the scheme processes did not start: {err}")


def _assert_nothing_left(sid: int) -> None:
    deadline = time.monotonic() + 10
    while _in_session(sid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _in_session(sid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, [_cmdline(p) for p in left]


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_interrupt_stops_every_scheme_process(tmp_path: Path, how: str) -> None:
    proc, _ = _start_run(tmp_path / "out")
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:  # Ctrl-C: the terminal sends SIGINT to the whole foreground process group
        os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    _assert_nothing_left(proc.pid)
    expected = 128 + signal.SIGTERM if how == "sigterm" else 130
    assert proc.returncode == expected, err
    assert err.count("\n") == 1 and err.startswith("symphony-emu: interrupted"), err
    assert '"status": "interrupted"' in (tmp_path / "out" / "run.json").read_text()


def test_a_scheme_process_that_dies_ends_the_run(tmp_path: Path) -> None:
    proc, kids = _start_run(tmp_path / "out")
    os.kill(kids[-1], signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    _assert_nothing_left(proc.pid)
    assert proc.returncode == 1, err
    assert err.count("\n") == 1, err
    assert "the scheme's process was killed by SIGKILL before it finished" in err, err


def test_scheme_processes_die_with_a_killed_parent(tmp_path: Path) -> None:
    from emu import cleanup

    proc, _ = _start_run(tmp_path / "out")
    proc.kill()
    proc.communicate(timeout=30)
    _assert_nothing_left(proc.pid)
    cleanup.mark_killed_runs()  # what the next run does (and it removes the run's note, when root wrote one)
    if os.geteuid() == 0:
        assert '"status": "killed"' in (tmp_path / "out" / "run.json").read_text()
