"""The command line: one-line usage errors, logging through one handler, argument parsing."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest

from emu.cli import _size_option, parse_allreduce_args

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, **kw: object) -> subprocess.CompletedProcess:
    """``symphony-emu ARGS`` in a fresh interpreter (logging and signals are process-wide)."""
    return subprocess.run([sys.executable, "-c", "import sys; from emu.cli import main; main(sys.argv[1:])", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=60, **kw)


@pytest.mark.parametrize(
    "args,words",
    [
        (["run", "--size", "0"], "Invalid value for '--size': '0': the size must be positive"),
        (["run", "--size", "6"], "give a multiple of 4"),
        (["run", "--iterations", "0"], "Invalid value for '--iterations'"),
        (["report"], "Missing argument 'DIRECTORY'. (see symphony-emu report --help)"),
        (["report", "/nonexistent-results"], "'/nonexistent-results' does not exist"),
        (["run", "--bogus"], "No such option '--bogus'"),
        (["run", "--size", "inf"], "'inf' is not a size in bytes"),  # was: an OverflowError traceback
        (["run", "--size", "1e400"], "'1e400' is not a size in bytes"),
        (["run", "--iterations", "100001"], "100001 is not in the range 1<=x<=100000"),
        (["run", "--out", ""], "Invalid value for '--out': an empty folder name"),  # was: the current folder
        (["run", "--scheme", "baseline,"], "--scheme baseline,: an empty name in the list"),  # was: baseline only
        (["run", "--scheme", "baseline,,symphony"], "an empty name in the list"),
        (["run", "--scheme", "basline"], "--scheme basline: use both, all or a comma list of baseline"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], words: str) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("symphony-emu: error: "), proc.stderr
    assert words in proc.stderr


def test_help_and_version_still_work() -> None:
    proc = cli("run", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: symphony-emu run") and proc.stderr == ""
    proc = cli("--version")
    assert proc.returncode == 0 and "symphony-emu, version" in proc.stdout


def test_topology_error_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "t.yaml"
    bad.write_text("name: t\nname: u\n")
    proc = cli("run", str(bad))
    assert proc.returncode == 2
    assert proc.stderr == f"symphony-emu: error: {bad}: line 2: duplicate key 'name' (first on line 1); " \
                          "keep one of them (YAML would silently use the last)\n"


def test_sigint_stops_even_when_inherited_ignored() -> None:
    code = ("import signal, sys\n"
            "import emu.cli\n"
            "emu.cli.cli.main = lambda **kw: print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
            "emu.cli.main([])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.stdout.strip() == "True", proc


LOG_SCRIPT = """
import logging
{pre}
from emu.cli import setup_logging
setup_logging(0)
import emu.runner  # created after setup_logging when not imported above
logging.getLogger("emu.runner").warning("runner warning")
logging.getLogger("emu.created.later").warning("later warning")
"""


@pytest.mark.parametrize("pre", ["", "import mininet.log\nimport emu.runner"], ids=["after", "before"])
def test_library_warning_prints_once_with_newline(pre: str) -> None:
    """mininet.log gives loggers created after its import a second, newline-less handler."""
    if pre and importlib.util.find_spec("mininet") is None:
        pytest.skip("mininet module not installed")
    proc = subprocess.run([sys.executable, "-c", LOG_SCRIPT.format(pre=pre)], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # logs go to stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and proc.stderr.endswith("\n"), proc.stderr
    assert "runner warning" in lines[0] and "WARNING" in lines[0]
    assert "later warning" in lines[1]


@pytest.mark.parametrize(
    "line,expected",
    [
        ("", (None, None)),  # issue 9: no arguments = the topology's iterations, not 1
        ("65536", (65536, None)),
        ("64K 3", (65536, 3)),
        ("  4   2 ", (4, 2)),
    ],
)
def test_allreduce_args(line: str, expected: tuple[int | None, int | None]) -> None:
    assert parse_allreduce_args(line) == expected


@pytest.mark.parametrize(
    "line,words",
    [
        ("0", "SIZE '0': the size must be positive"),
        ("6", "SIZE '6' is 6 bytes: give a positive multiple of 4"),
        ("1.001K", "SIZE '1.001K' is 1025 bytes"),
        ("lots", "SIZE 'lots' is not a size in bytes"),
        ("64K 0", "ITERATIONS 0: give at least 1"),
        ("64K -2", "ITERATIONS -2: give at least 1"),
        ("64K two", "ITERATIONS 'two' is not an integer"),
        ("64K 2 3", "too many arguments (3): allreduce [SIZE] [ITERATIONS]"),
    ],
)
def test_allreduce_args_rejected_in_one_line(line: str, words: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_allreduce_args(line)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_size_option() -> None:
    assert _size_option(None, None, None) is None  # type: ignore[arg-type]
    assert _size_option(None, None, "256K") == 262144  # type: ignore[arg-type]
    with pytest.raises(click.BadParameter, match="multiple of 4"):
        _size_option(None, None, "10")  # type: ignore[arg-type]


def test_doctor_warns_when_the_machine_is_busy() -> None:
    """Issue 9: real-time results depend on what else the machine does, and nothing said so."""
    import os
    import re
    import sys

    from emu.doctor import machine_load

    spinners = [subprocess.Popen([sys.executable, "-c", "import time\nt = time.time() + 5\nwhile time.time() < t: pass"])
                for _ in range(os.cpu_count() or 1)]
    try:
        check = machine_load(0.4)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert check.ok is False and check.needed_for == "real time"
    assert re.fullmatch(r"\d+% of \d+ cores busy, load average [\d.]+", check.detail), check.detail
    assert "real-time runs will be disturbed" in check.fix


def test_run_mode_sim_needs_no_root_and_report_reads_it(nobody_can_run_checkout: None) -> None:
    """``run --mode sim`` as any user: the table, a results folder that ``report`` redraws."""
    import os

    def as_nobody() -> None:  # no root: Mininet mode would refuse; virtual time must not care
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)

    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="symphony-sim-cli-"))  # pytest's tmp_path is root-only
    base.chmod(0o777)
    out = base / "r"
    try:
        _run_as_nobody(out, as_nobody)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_as_nobody(out: Path, as_nobody: object) -> None:
    proc = subprocess.run([sys.executable, "-c", "import sys; from emu.cli import main; main(sys.argv[1:])",
                           "run", "single", "--mode", "sim", "--iterations", "2", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, preexec_fn=as_nobody)
    assert proc.returncode == 0, proc.stderr
    assert "symphony-emu results" in proc.stdout and f"results: {out}" in proc.stdout
    proc = cli("report", str(out))
    assert proc.returncode == 0 and "symphony-emu results" in proc.stdout, proc.stderr


def test_calibrate_host_checks_its_out_before_measuring(tmp_path: Path) -> None:
    """``calibrate-host --out`` under a file: one line and exit 2 at once, not a traceback after
    minutes of measuring (nothing is measured: no worker starts)."""
    (tmp_path / "afile").write_text("")
    proc = cli("calibrate-host", "--out", str(tmp_path / "afile" / "x.json"), "--iterations", "1")
    assert proc.returncode == 2, proc
    assert "--out" in proc.stderr and "cannot write the calibration there" in proc.stderr
    assert "Traceback" not in proc.stderr and "calibrating:" not in proc.stdout


def test_calibrate_host_out_is_checked_by_opening_it(tmp_path: Path) -> None:
    """--out's folder must exist and be a folder (nothing is created), the file must open (/proc refuses
    a new file; it used to fail after the measuring with a traceback); a new file is not left behind,
    an existing one is not truncated."""
    from emu.cli import _unwritable

    missing = tmp_path / "none" / "h.json"
    assert "folder" in (_unwritable(missing) or "") and "does not exist" in (_unwritable(missing) or "")
    assert not missing.parent.exists()
    (tmp_path / "afile").write_text("")
    assert "is not a directory" in (_unwritable(tmp_path / "afile" / "h.json") or "")
    assert _unwritable(tmp_path) == "it is a directory"
    if Path("/proc/self").is_dir():
        assert _unwritable(Path("/proc/h.json"))
    assert _unwritable(tmp_path / "new.json") is None and not (tmp_path / "new.json").exists()
    (tmp_path / "old.json").write_text("keep")
    assert _unwritable(tmp_path / "old.json") is None and (tmp_path / "old.json").read_text() == "keep"


def test_calibrate_host_sigterm_ends_it_as_ctrl_c_does(tmp_path: Path) -> None:
    """SIGTERM while measuring: one line, exit 143, the temporary folder removed (it used to die
    silently and leave /tmp/symphony-hostcal-*/ behind). The measuring is replaced by a SIGTERM to
    the process itself, so no worker starts."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = ("import os, signal, sys, time\n"
              "from emu import hostcal\n"
              "def run_once(*a, **k):\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "    time.sleep(5)\n"
              "hostcal._run_once = run_once\n"
              "from emu.cli import main\n"
              "main(sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-c", script, "calibrate-host", "--out", str(tmp_path / "h.json"),
                           "--iterations", "1"], capture_output=True, text=True, cwd=REPO, timeout=60,
                          env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 143, proc
    assert proc.stderr.strip().splitlines()[-1].startswith("symphony-emu: interrupted by SIGTERM; "), proc.stderr
    assert list(tmp.iterdir()) == [] and not (tmp_path / "h.json").exists()


def test_negative_seed_is_refused_before_anything_starts(tmp_path: Path) -> None:
    proc = cli("run", "single", "--mode", "sim", "--seed", "-1", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "'--seed'" in proc.stderr, proc
    assert not (tmp_path / "r").exists()
