"""End-to-end tests: Mininet, embedded switches, real workers (root; docs/DESIGN.md section 9).

Every test is bounded in time (pytest-timeout) and leaves nothing behind: each checks that
no process, Mininet node shell (namespace) or link of its run is left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emu.cleanup import find_leftovers

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"
BAD = Path(__file__).resolve().parent / "bad_topology.yaml"
NODES_1SW = ["h1", "h2", "h3", "h4", "s1"]


def cli(*args: str, **kwargs: object) -> subprocess.Popen:
    """Start ``symphony-emu ARGS`` (python -m emu.cli) in its own process group."""
    return subprocess.Popen([sys.executable, "-m", "emu.cli", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs)  # type: ignore[call-overload]


def assert_nothing_left(folder: Path, nodes: list[str]) -> None:
    """No process, node shell (namespace) of ``nodes`` or link of the run in results folder
    ``folder`` remains (its run id and link tag from run.json; other runs may be going)."""
    from emu import linknames

    info = json.loads((folder / "run.json").read_text())
    run_id, tag = info["run_id"], info.get("link_tag")
    assert tag, f"run.json names no link tag: {info}"
    # The run released its tag when it ended; a live holder of it now is another run or a
    # bmv2 STF test (tests beside this one, pytest-xdist), whose links are its own.
    tags = [] if tag in linknames.held_tags() else [tag]
    left = find_leftovers(run_tag=run_id, run_id=run_id, node_names=nodes, link_tags=tags, shells_of_run=True)
    assert left.empty(), f"left behind: {left}"


def test_bad_topology_fails_with_one_line_and_exit_2() -> None:
    """A bad file is rejected before anything starts: one line on stderr, exit 2 (no root needed)."""
    proc = cli("run", str(BAD), "--out", "/nonexistent/never-created")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "bad_topology.yaml: links[0].bandwidth_mbps: must be > 0" in lines[0]
    assert "Traceback" not in err
    assert not Path("/nonexistent/never-created").exists()


@pytest.mark.timeout(300)
def test_run_pcap_writes_one_capture_per_switch_port(mininet_env: None, tmp_path: Path) -> None:
    """``run --pcap``: s1 writes s1-eth1..4.pcap itself; each DATA packet shows on the port it
    came in on and on the port it left by, and tshark (when installed) reads the CTH fields."""
    import shutil

    from scapy.utils import rdpcap

    from hostapps.wire import CTH

    proc = cli("run", str(SINGLE), "--scheme", "baseline", "--iterations", "1", "--size", "4096", "--pcap",
               "--out", str(tmp_path))
    out, err = proc.communicate(timeout=280)
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    files = sorted((tmp_path / "pcap").glob("*.pcap"))
    assert [f.name for f in files] == [f"s1-eth{p}.pcap" for p in (1, 2, 3, 4)]
    seen: dict[tuple[int, int, int], set[str]] = {}
    for f in files:
        for pkt in rdpcap(str(f)):
            if CTH in pkt and pkt[CTH].type == 1:
                c = pkt[CTH]
                seen.setdefault((c.src_rank, c.step, c.psn), set()).add(f.name)
    assert seen, "no CTH DATA packet captured"
    assert all(len(names) == 2 for names in seen.values())  # in on one port, out on another
    if shutil.which("tshark") is not None:
        res = subprocess.run(["tshark", "-X", f"lua_script:{REPO / 'tools' / 'wireshark' / 'cth.lua'}", "-r",
                              str(files[0]), "-Y", "cth.type == 1", "-T", "fields", "-e", "cth.job",
                              "-e", "cth.step", "-e", "cth.psn"], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        rows = [line.split("\t") for line in res.stdout.strip().splitlines()]
        assert rows and all(r[0] == "0" and r[1].isdigit() and r[2].isdigit() for r in rows)
    assert_nothing_left(tmp_path, NODES_1SW)


def wait_for_workers(proc: subprocess.Popen, folder: Path, deadline_s: float = 150) -> None:
    """Wait until the run's workers write their step logs (so a signal lands mid-run)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"run ended before the signal (exit {proc.returncode}):\n{out}\n{err}")
        logs = list(folder.glob("job0-rank*.jsonl"))
        if logs and any(p.stat().st_size > 0 for p in logs):
            return
        time.sleep(0.2)
    pytest.fail("workers never started")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "sighup"])
def test_interrupted_run_leaves_nothing(mininet_env: None, tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C, or the terminal closing (SIGHUP, issue 9), mid-run: exit 128 + signal, and
    no worker, switch, namespace or link is left; run.json says interrupted."""
    proc = cli("run", str(SINGLE), "--scheme", "baseline", "--iterations", "200", "--out", str(tmp_path))
    try:
        wait_for_workers(proc, tmp_path / "baseline")
        os.killpg(proc.pid, sig)  # what the terminal does on Ctrl-C, or when it closes
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + sig, f"stdout:\n{out}\nstderr:\n{err}"
    assert "interrupted" in err
    assert "Traceback" not in err
    assert_nothing_left(tmp_path, NODES_1SW)
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["status"] == "interrupted"
    assert info.get("signal") == (None if sig == signal.SIGINT else "SIGHUP")
    report = cli("report", str(tmp_path))
    _, report_err = report.communicate(timeout=60)
    assert report.returncode == 2
    assert "run was interrupted before its summary was written" in report_err


def test_bmv2_target_says_what_is_missing() -> None:
    """--target bmv2 without bmv2 installed: one clear line, exit 2, nothing started."""
    import shutil

    if shutil.which("simple_switch_grpc") and shutil.which("p4c"):
        pytest.skip("bmv2 is installed here")
    proc = cli("run", str(SINGLE), "--target", "bmv2")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)
    assert err.strip().splitlines() == [err.strip()]
    assert "bmv2 target: " in err and "not on PATH" in err and "docs/bmv2.md" in err
    # issues 9 and 10: how to get it, and that p4lang has no Debian 12 packages (the VM's)
    assert "install-bmv2.sh" in err and "not Debian 12" in err


@pytest.mark.timeout(240)
def test_mininet_cli_runs_allreduce_and_shows_switch_state(mininet_env: None, tmp_path: Path) -> None:
    """`symphony-emu cli` driven through stdin: an all-reduce verifies, `switch` shows the
    tracker of the 4 flows crossing s1, and exit leaves nothing behind."""
    proc = cli("cli", str(SINGLE), "--out", str(tmp_path), "--pcap", stdin=subprocess.PIPE)
    commands = ["allreduce", "switch s1", "mode baseline", "allreduce 64K 1", "switch s1", "switch s9",
                "switch h1", "iperf h1 h2 1", "exit"]
    out, err = proc.communicate("\n".join(commands) + "\n", timeout=200)
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    text = out + err  # Mininet's CLI writes command output through its logger (stderr)
    assert "verified: yes" in text
    # Issue 9: no arguments runs the topology's 3 iterations (it ran 1).
    assert "job 0 iteration 2: CCT" in text.split("switch s1")[0]
    assert "job 0: expected_flows 4" in text
    # 3 x 2(N-1) = 18 steps of three all-reduces: every flow at s1 reached step 17, so did the frontier.
    assert "frontier 17, flow_step [17, 17, 17, 17]" in text
    # Issue 9: in baseline, `switch` shows the last run's marks (0) as `allreduce` printed them,
    # beside the total since the network started, never a cumulative count passed for this run.
    baseline_part = text.split("mode baseline", 1)[1]
    assert "this run: Symphony marks 0" in baseline_part
    assert "marks: last allreduce (cli-2-baseline, mode baseline) / since the network started" in baseline_part
    assert "job 0: expected_flows 4, Symphony marks 0 / " in baseline_part
    # Issue 9: an unknown switch says so; a host is named as one.
    assert "no switch 's9' (not in this topology); the switches are: s1" in text
    assert "no switch 'h1' (a host)" in text
    # Issue 9: stock iperf hung forever (iperf 2.1 prints no report for Mininet's telnet probe).
    assert re.search(r"\*\*\* Results: \['[\d.]+ [KMG]?bits/sec', '[\d.]+ [KMG]?bits/sec'\]", text), text
    # Issue 9: `report` on a cli results folder shows each allreduce's table.
    report = cli("report", str(tmp_path))
    rep_out, rep_err = report.communicate(timeout=60)
    assert report.returncode == 0, (rep_out, rep_err)
    assert "cli-1-symphony:" in rep_out and "cli-2-baseline:" in rep_out and "symphony-emu results" in rep_out
    # --pcap: the switch wrote one capture per port, with the all-reduce's frames in it
    assert sorted(f.name for f in (tmp_path / "pcap").glob("*.pcap")) == [f"s1-eth{p}.pcap" for p in (1, 2, 3, 4)]
    assert all(f.stat().st_size > 24 for f in (tmp_path / "pcap").glob("*.pcap"))
    assert_nothing_left(tmp_path, NODES_1SW)


@pytest.mark.timeout(240)
def test_killed_run_is_marked_by_clean(mininet_env: None, tmp_path: Path) -> None:
    """Issue 9: after kill -9 run.json said "running"; `clean` removes the leftovers and marks it killed."""
    proc = cli("run", str(SINGLE), "--scheme", "baseline", "--iterations", "200", "--out", str(tmp_path))
    try:
        wait_for_workers(proc, tmp_path / "baseline")
        run_id = json.loads((tmp_path / "run.json").read_text())["run_id"]
        proc.kill()  # SIGKILL the runner only: its switches, workers and namespaces stay behind
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "running"
    clean = cli("clean")
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, (out, err)
    info = json.loads((tmp_path / "run.json").read_text())
    # else another run's start (any mode, as root: emu.cleanup.clean_dead_runs) was first on a shared machine
    assert f"marked run {run_id} killed" in out or "killed_found" in info, out
    assert info["status"] == "killed" and "ended without cleaning up" in info["failure"]
    assert_nothing_left(tmp_path, NODES_1SW)


@pytest.mark.timeout(240)
def test_cli_hangup_cleans_up(mininet_env: None, tmp_path: Path) -> None:
    """Issue 9: closing the terminal of `symphony-emu cli` (SIGHUP) skipped all cleanup."""
    proc = cli("cli", str(SINGLE), "--out", str(tmp_path), stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = json.loads((tmp_path / "run.json").read_text()) if (tmp_path / "run.json").is_file() else {}
            if info.get("status") == "running":
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # at the prompt
        os.killpg(proc.pid, signal.SIGHUP)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signal.SIGHUP, (out, err)
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["status"] == "interrupted" and info["signal"] == "SIGHUP"
    assert "Traceback" not in err
    assert_nothing_left(tmp_path, NODES_1SW)


DILATED = Path(__file__).resolve().parent / "dilated.yaml"


@pytest.mark.timeout(240)
def test_dilated_run_reports_scenario_time(mininet_env: None, tmp_path: Path) -> None:
    """``run --mtu 1500`` of a scenario with ``dilation: 50``: Mininet runs it at 1/50 of its
    rates; the report's CCT is in scenario time (CCT/bound against the undilated 1 Gbit/s bound
    is near 1, not near 50) and the wall-clock CCT beside it is 50 times that."""
    proc = cli("run", str(DILATED), "--scheme", "baseline", "--mtu", "1500", "--out", str(tmp_path))
    out, err = proc.communicate(timeout=220)
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    run_info = json.loads((tmp_path / "run.json").read_text())
    assert summary["dilation"] == 50 and run_info["dilation"] == 50 and run_info["mtu"] == 1500
    job = summary["baseline"]["jobs"]["0"]
    assert job["verified"]
    assert 0.9 <= job["cct_over_bound"]["mean"] < 10, job
    assert job["cct_wall_s"]["mean"] == pytest.approx(50 * job["cct_s"]["mean"])
    assert re.search(r"dilated\s+by\s+D\s+=\s+50", out), out
    assert_nothing_left(tmp_path, ["h1", "h2", "h3", "s1"])


@pytest.mark.timeout(240)
def test_two_runs_at_once_both_verify(mininet_env: None, tmp_path: Path) -> None:
    """4-rank all-reduce through one embedded switch, twice at once: every iteration verified,
    no Symphony marks. Issue 21: a second run of the same topology stopped with "links s1-eth1
    already exist"; now each run's switch links carry its own link tag, `clean` while both go
    leaves both alone, and both verify and leave nothing behind. Issue 19: a run killed with
    kill -9 before them left its namespaces and links; the runs' start removes them and marks
    it killed."""
    killed = tmp_path / "killed"
    proc = cli("run", str(SINGLE), "--scheme", "baseline", "--iterations", "200", "--out", str(killed))
    try:
        wait_for_workers(proc, killed / "baseline")
        proc.kill()  # SIGKILL the runner only: its Mininet shells, namespaces and links stay
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    from emu import cleanup

    assert cleanup.find_links([json.loads((killed / "run.json").read_text())["link_tag"]]), "no links left to test"
    folders = [tmp_path / "a", tmp_path / "b"]
    procs = [cli("run", str(SINGLE), "--scheme", "baseline", "--iterations", "2", "--size", "32K", "--out", str(f))
             for f in folders]
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and not all(
                any(f.joinpath("baseline").glob("job0-rank*.jsonl")) for f in folders):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
            time.sleep(0.2)
        tags = [json.loads((f / "run.json").read_text()).get("link_tag") for f in folders]
        assert None not in tags and tags[0] != tags[1], tags
        clean = cli("clean")
        clean_out, clean_err = clean.communicate(timeout=120)
        assert clean.returncode == 0, (clean_out, clean_err)
        outs = [p.communicate(timeout=200) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}\nclean said:\n{clean_out}"
    for f in folders:
        base = json.loads((f / "summary.json").read_text())["baseline"]
        assert base["verified"] is True and base["iterations"] == 2
        assert base["cct_s"]["mean"] > 0
        assert base["cct_over_bound"]["mean"] >= 1.0  # nothing beats the bandwidth bound
        assert base["marks"]["symphony"] == 0
        for name in ("cct.csv", "steps.csv", "cct_cdf.png"):
            assert (f / name).is_file(), name
        assert_nothing_left(f, NODES_1SW)
    info = json.loads((killed / "run.json").read_text())
    assert info["status"] == "killed" and "ended without cleaning up" in info["failure"]
    assert_nothing_left(killed, NODES_1SW)
