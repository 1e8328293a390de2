"""emu.vtime.hugepages: Python's object arenas in transparent huge pages (compiled build only),
arenas reused once freed, off with SYMPHONY_EMU_HUGEPAGES=0 and as Python source. That the
results do not change is test_compiled's bit-for-bit test (its compiled run installs it, its
pure run cannot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostapps import compiled

REPO = Path(__file__).resolve().parents[2]
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

#: A fresh interpreter: install, fill ~100 MB of arenas, free them, fill again; print what it saw.
CHILD = """
import gc, json, sys
from emu.vtime import hugepages

def huge_kb():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0

seen = {"installed": hugepages.install(), "again": hugepages.install(), "before_kb": huge_kb()}
x = [list(range(40)) for _ in range(300_000)]
seen["filled"] = hugepages.stats()
seen["filled_kb"] = huge_kb()
del x
gc.collect()
seen["freed"] = hugepages.stats()
y = [list(range(40)) for _ in range(150_000)]
seen["refilled"] = hugepages.stats()
print(json.dumps(seen))
"""


def _child(**env: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_arenas_come_from_huge_pages_and_are_reused() -> None:
    if compiled.status().get("emu.vtime.hugepages") != "compiled":
        pytest.skip(f"emu.vtime.hugepages is not built (scripts/build_compiled.py): {compiled.status()}")
    if not THP.exists() or "[never]" in THP.read_text():
        pytest.skip(f"the kernel's transparent huge pages are off ({THP}: "
                    f"{THP.read_text().strip() if THP.exists() else 'missing'})")
    seen = _child(SYMPHONY_EMU_HUGEPAGES="1")
    assert seen["installed"] and seen["again"], seen
    filled, freed, refilled = seen["filled"], seen["freed"], seen["refilled"]
    assert filled["arenas_out"] >= 64 and filled["chunks"] >= 2 and filled["fallback"] == 0, seen  # ~100 MB of 1 MiB arenas
    assert freed["arenas_free"] >= filled["arenas_out"] // 2 and freed["arenas_out"] < filled["arenas_out"], seen
    assert refilled["chunks"] == freed["chunks"] and refilled["arenas_free"] < freed["arenas_free"], seen  # reused, none new
    assert seen["filled_kb"] - seen["before_kb"] >= 32 * 1024, seen  # the arenas' memory is in 2 MiB pages


@pytest.mark.parametrize("env", [{"SYMPHONY_EMU_HUGEPAGES": "0"}, {"SYMPHONY_EMU_PURE": "1"}], ids=["off", "source"])
def test_off_by_env_and_as_python_source(env: dict[str, str]) -> None:
    seen = _child(**env)
    assert not seen["installed"] and not seen["again"], seen
    assert seen["filled"] == seen["freed"] == {"chunks": 0, "arenas_out": 0, "arenas_free": 0, "fallback": 0}, seen
