"""The shipped data-centre scenarios are scripts/make_dc_leafspine.py's output, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("ranks", "background"), [(16, 2), (128, 8)])
def test_shipped_file_is_the_generators_output(tmp_path: Path, ranks: int, background: int) -> None:
    out = tmp_path / f"dc{ranks}.yaml"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_dc_leafspine.py"), str(ranks),
                    "--background", str(background), "--out", str(out)], check=True, capture_output=True)
    shipped = REPO / "topologies" / f"dc-leafspine-{ranks}.yaml"
    assert out.read_text() == shipped.read_text(), (
        f"{shipped.name} differs from make_dc_leafspine.py {ranks} --background {background}: regenerate it")


def test_generator_refuses_a_ring_it_cannot_place(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "make_dc_leafspine.py"), "6",
                          "--out", str(tmp_path / "x.yaml")], capture_output=True, text=True)
    assert res.returncode == 2 and "multiple of 4" in res.stderr and not (tmp_path / "x.yaml").exists()


def test_generator_output_loads_without_background(tmp_path: Path) -> None:
    from emu.topology import load_topology

    out = tmp_path / "dc8.yaml"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_dc_leafspine.py"), "8", "--background", "0",
                    "--out", str(out)], check=True, capture_output=True)
    assert load_topology(out).background == []
