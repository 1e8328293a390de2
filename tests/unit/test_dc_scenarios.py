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


def _generator():  # noqa: ANN202
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_dc_leafspine", REPO / "scripts" / "make_dc_leafspine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_planes_keep_two_ring_flows_per_link(tmp_path: Path) -> None:
    """--hosts-per-leaf 4: two planes of the pattern, the plane crossings pinned; every flow at the 50 Gbit/s share."""
    from emu.routing import compute_routes
    from emu.topology import parse_topology

    topo = parse_topology(_generator().gen_planes(32, 4, 2, 1, 2), "dc32.yaml")
    routes = compute_routes(topo)
    bw = routes.job_bandwidth(0)
    assert bw.max_flows_per_hop == 2 and bw.fair_share_bps == 50e9
    assert all(len(f.switches) == 3 for f in routes.ring_flows(0))  # leaf, spine, leaf
    assert len(topo.paths) == 2 and len(topo.switches) == 8 + 4


def test_1024_ranks_fit_the_switches() -> None:
    """1,024 ranks: 64 leaves of 16 hosts and 16 spines, no switch over 64 ports (32 ECN ranges each fit
    QUEUE_ECN_ENTRIES), a subnet with room for every host."""
    import collections
    import ipaddress

    import yaml

    doc = yaml.load(_generator().gen_planes(1024, 16, 1, 16, 8), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    ports = collections.Counter(x for link in doc["links"] for x in (link["a"], link["b"]))
    switches = [s["name"] for s in doc["switches"]]
    assert len(switches) == 64 + 16 and max(ports[s] for s in switches) == 64
    assert len(doc["jobs"][0]["ranks"]) == len(set(doc["jobs"][0]["ranks"])) == len(doc["hosts"]) == 1024
    assert ipaddress.IPv4Network(doc["subnet"]).num_addresses - 2 >= 1024


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


@pytest.mark.parametrize(("argv", "words"), [
    (["1028"], "ranks 1028: at most 1024 ranks"),
    (["148"], "ranks 148: no --hosts-per-leaf fits"),
    (["1024", "--hosts-per-leaf", "2"], "--hosts-per-leaf 2: "),
])
def test_generator_refuses_what_the_switches_cannot_hold(tmp_path: Path, argv: list[str], words: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Refused with one line naming what was given and what works, no file (1024 at H 2 has 512-port spines;
    148 ranks fit no H within 64 ports a switch, the queue_ecn limit)."""
    out = tmp_path / "x.yaml"
    monkeypatch.setattr(sys, "argv", ["make_dc_leafspine.py", *argv, "--out", str(out)])
    with pytest.raises(SystemExit) as info:
        _generator().main()
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert info.value.code == 2 and words in last and not out.exists(), last
    if argv == ["148"]:
        assert "nearest that work: 144, 152" in last
    if argv[-1] == "2":
        assert "give one of 16, 32" in last


def test_generator_default_fits_the_queue_ecn_table() -> None:
    """132 ranks (default H used to be 2: 66-port spines, 2112 queue_ecn entries, "table full" while
    programming): the smallest H that fits, 6, and the file loads."""
    from emu.topology import parse_topology

    gen = _generator()
    assert gen.hosts_per_leaf_choices(132)[0] == 6 and gen.hosts_per_leaf_choices(128)[0] == 2
    assert gen.hosts_per_leaf_choices(1024) == [16, 32] and gen.hosts_per_leaf_choices(148) == []
    topo = parse_topology(gen.gen_planes(132, 6, 1, 1, 0), "dc132.yaml")
    assert len(topo.switches) == 22 + 6
