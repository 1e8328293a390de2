"""benchmarks/sim_speed.py runs as docs/virtual-time.md ("Speed") gives it, with its time split,
compiled (the extension types' methods cannot be replaced) and as Python source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled-if-built", "pure"])
def test_the_benchmark_splits_its_time(pure: bool) -> None:
    """Issue (new-user check, 2026-12-04): with the compiled modules built (setup.sh's default) the
    split crashed: "cannot set '_wake' attribute of immutable type 'emu.vtime.hosts.SimRank'"."""
    env = {k: v for k, v in os.environ.items() if k != "SYMPHONY_EMU_PURE"}
    if pure:
        env["SYMPHONY_EMU_PURE"] = "1"
    proc = subprocess.run([sys.executable, "benchmarks/sim_speed.py", "topologies/dc-leafspine-16.yaml",
                           "--size", "256KiB"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    parts = dict(re.findall(r"^  (P4 pipeline|host cores|event handling) +([\d.]+) s", proc.stdout, re.M))
    assert set(parts) == {"P4 pipeline", "host cores", "event handling"}, proc.stdout
    assert float(parts["host cores"]) > 0 and float(parts["P4 pipeline"]) > 0, proc.stdout
