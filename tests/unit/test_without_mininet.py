"""Virtual time where Mininet is absent: processes in which ``import mininet`` fails.

A ``sitecustomize`` on PYTHONPATH puts a meta-path finder first that refuses ``mininet`` and
its submodules (as on a laptop without Mininet), in the test process's children only. In
such a process ``symphony-emu run --mode sim`` runs a tiny scenario (both schemes, in
parallel scheme processes, which inherit the blocker) and the virtual-time tests pass, while
``--mode mininet`` is one clear line. The installed-copy check (a plain venv) is
tests/unit/test_install.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BLOCKER = '''
import sys


class _NoMininet:
    """Refuse the mininet package, as where it is not installed (tests/unit/test_without_mininet.py)."""

    def find_spec(self, name, path=None, target=None):
        if name == "mininet" or name.startswith("mininet."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, _NoMininet())
'''


def no_mininet_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a child whose ``import mininet`` fails."""
    site = tmp_path / "no-mininet"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
                COLUMNS="120")


def run_child(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_the_blocker_blocks_and_the_mininet_mode_says_so(tmp_path: Path) -> None:
    env = no_mininet_env(tmp_path)
    blocked = run_child(["-c", "import mininet.node"], env, 60)
    assert blocked.returncode != 0 and "blocked by the test" in blocked.stderr
    code = ("import emu.cli, emu.runner, emu.controller, emu.targets, emu.vtime.backend, emu.vtime.parallel\n"
            "from emu.backend import UsageError, backend_class\n"
            "assert backend_class('sim').__name__ == 'SimBackend'\n"
            "try:\n    backend_class('mininet')\nexcept UsageError as exc:\n    print(exc)\n"
            "import sys\nassert not [m for m in sys.modules if m.split('.')[0] == 'mininet']\n")
    out = run_child(["-c", code], env, 120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert "\n" not in line and line.startswith("--mode mininet needs the mininet Python module"), line


def test_mode_sim_runs_without_mininet(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    proc = run_child(["-m", "emu.cli", "run", "topologies/single.yaml", "--mode", "sim", "--iterations", "1",
                      "--size", "64K", "--parallel", "2", "--out", str(out_dir)], no_mininet_env(tmp_path), 240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["mode"] == "sim"
    assert summary["baseline"]["verified"] and summary["symphony"]["verified"]


@pytest.mark.timeout(600)
def test_virtual_time_tests_pass_without_mininet(tmp_path: Path) -> None:
    # test_vtime's one Mininet-mode test (the MTU refusal of --mode mininet) needs the mininet
    # module to reach that check; without it the answer is "--mode mininet needs the mininet
    # Python module", which test_the_blocker_blocks_and_the_mininet_mode_says_so checks.
    # The bit-for-bit test runs the same scenario three times to compare seeds, not imports: it
    # runs once, in the main process (the suite's time budget; every code path it takes, the
    # others take here too)
    proc = run_child(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/unit/test_vtime.py",
                      "--deselect", "tests/unit/test_vtime.py::test_mininet_mode_refuses_a_4096_byte_mtu",
                      "--deselect", "tests/unit/test_vtime.py::test_sim_same_seed_same_results_bit_for_bit"],
                     no_mininet_env(tmp_path), 540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-500:]
