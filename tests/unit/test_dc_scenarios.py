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


def test_shipped_fabric_scenarios_are_the_generators_output() -> None:
    """topologies/NAME.yaml of every emu.fabric scenario is scenario_yaml(NAME) (make_dc_leafspine.py
    --scenario NAME) byte for byte, and it loads."""
    from emu import fabric
    from emu.topology import load_topology

    assert fabric.SCENARIOS
    for name in fabric.SCENARIOS:
        shipped = REPO / "topologies" / f"{name}.yaml"
        assert shipped.read_text() == fabric.scenario_yaml(name), f"regenerate {name}: make_dc_leafspine.py --scenario {name}"
        assert load_topology(shipped).description


@pytest.mark.parametrize(("placement", "rings"), [
    ("packed", [["h1", "h2", "h3"], ["h4", "h5"]]),
    ("by-job", [["h1", "h4", "h2"], ["h7", "h10"]]),
    ("striped", [["h1", "h4", "h7"], ["h2", "h5"]]),
])
def test_placements_by_hand(placement: str, rings: list[list[str]]) -> None:
    """4 leaves of 3 hosts (h1-h3 on leaf1, ...), jobs of 3 and 2 ranks."""
    from emu.fabric import place

    assert place([3, 2], 4, 3, placement) == rings


def test_random_placement_is_seeded_and_uses_distinct_hosts() -> None:
    from emu.fabric import place

    a, b = place([4, 4], 4, 2, "random", seed=1), place([4, 4], 4, 2, "random", seed=2)
    assert a == place([4, 4], 4, 2, "random", seed=1) and a != b
    assert len({h for ring in a for h in ring}) == 8


def test_oversubscription_sets_the_uplink_rate() -> None:
    from emu.fabric import leaf_spine

    doc = leaf_spine(name="x", description="x", leaves=2, hosts_per_leaf=4, spines=2, oversubscription=2,
                     jobs=[{"ranks": 4}], placement="packed")
    uplinks = [lk for lk in doc["links"] if lk["b"].startswith("spine")]
    assert all("bandwidth_mbps" not in lk for lk in uplinks)  # 4 x 100 / (2 x 2) = the default 100 Gbit/s
    doc = leaf_spine(name="x", description="x", leaves=2, hosts_per_leaf=4, spines=2, oversubscription=4,
                     jobs=[{"ranks": 4}], placement="packed")
    assert {lk["bandwidth_mbps"] for lk in doc["links"] if lk["b"].startswith("spine")} == {"50Gbit/s"}


def test_fabric_cli_refuses_too_many_ranks(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "make_dc_leafspine.py"), "--leaves", "2",
                          "--hosts-per-leaf", "2", "--jobs", "4,2", "--placement", "packed",
                          "--out", str(tmp_path / "x.yaml")], capture_output=True, text=True)
    assert res.returncode == 2 and "6 ranks need more than the fabric's 4 hosts" in res.stderr
    assert not (tmp_path / "x.yaml").exists()
