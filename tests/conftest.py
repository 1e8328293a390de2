"""Shared pytest configuration: markers and the gate of the end-to-end (Mininet) tests.

End-to-end tests (``tests/e2e``, marker ``root``) need root, Debian's ``mininet`` Python
module and ``mnexec``. Elsewhere they skip with the reason; under CI (``CI=true``), where
``.ci/run`` installs everything, a missing prerequisite fails them instead, so CI can never
pass by skipping them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """Register markers (also declared in pyproject.toml, for runs from other directories)."""
    config.addinivalue_line("markers", "root: needs root and Mininet (end-to-end)")
    config.addinivalue_line("markers", "bmv2: needs simple_switch_grpc and p4c")


#: Test files (beside tests/e2e) whose tests wait on real time: namespaces, veths, switch
#: processes. Each group runs in one pytest-xdist worker, in order, beside the CPU-bound rest.
WALL_CLOCK_GROUPS = {
    "mininet": ("tests/p4/test_portio.py", "tests/p4/test_pcap.py"),
    "bmv2": ("tests/p4/test_bmv2.py", "tests/p4/test_student_script.py", "tests/p4/test_finsy.py"),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/e2e gets the ``root`` marker. With ``--dist loadgroup``
    (pyproject.toml's addopts) the end-to-end tests and the Mininet P4 tests are one group and
    the bmv2 tests another: each group runs in one worker, its tests one after another as
    without xdist, while the other worker takes the unit and P4 tests."""
    e2e = REPO / "tests" / "e2e"
    groups = {REPO / f: name for name, files in WALL_CLOCK_GROUPS.items() for f in files}
    for item in items:
        path = Path(str(item.path))
        if e2e in path.parents:
            item.add_marker(pytest.mark.root)
            item.add_marker(pytest.mark.xdist_group("mininet"))
        elif path in groups:
            item.add_marker(pytest.mark.xdist_group(groups[path]))


def mininet_missing() -> str | None:
    """Why end-to-end tests cannot run here (None when they can)."""
    if os.geteuid() != 0:
        return "end-to-end tests need root (Mininet): run sudo .venv/bin/pytest"
    if importlib.util.find_spec("mininet") is None:
        return "end-to-end tests need the mininet module: apt-get install mininet, venv with --system-site-packages"
    for binary in ("mnexec", "ip", "ethtool"):
        if shutil.which(binary) is None:
            return f"end-to-end tests need {binary}: ./scripts/setup.sh installs it"
    return None


#: Nice value of the CPU-bound tests while wall-clock tests run in the other xdist worker.
CPU_BOUND_NICE = 10


@pytest.fixture(autouse=True)
def _wall_clock_tests_first_for_the_cpu(request: pytest.FixtureRequest) -> None:
    """Under pytest-xdist, as root: a test of a WALL_CLOCK_GROUPS group (real-time runs,
    switch processes) runs at nice 0 and every other test at nice 10, and what they start
    inherits it, so a real-time run beside a CPU-bound virtual-time test gets the CPU it
    wants as on a quiet machine (CFS weights 1024 against 110) and its timing checks hold."""
    if os.geteuid() != 0 or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    wall = request.node.get_closest_marker("xdist_group") is not None
    os.setpriority(os.PRIO_PROCESS, 0, 0 if wall else CPU_BOUND_NICE)


@pytest.fixture(scope="session")
def mininet_env() -> None:
    """Skip (or under CI, fail) unless root, Mininet and mnexec are available."""
    reason = mininet_missing()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run the end-to-end tests, but: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture
def nobody_can_run_checkout() -> None:
    """Skip unless uid 65534 (nobody) can run this checkout's Python and import ``emu``.

    Tests that run a command as another user need the checkout and its ``.venv`` readable by
    that user; a clone under a private directory (``mktemp -d`` makes it 0700) is not. As a
    non-root user nothing is checked (those tests then run as the current user).
    """
    import subprocess
    import sys

    if os.geteuid() != 0:
        return
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run a command as another user")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-c", "import emu.cli"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"uid 65534 cannot run {sys.executable} in {REPO} (a private parent directory?): {why}")
