"""ECMP in both modes (root, Mininet for real time): the per-port counters of a run show the
traffic exactly where emu.routing's hash model says (tests/e2e/ecmp.yaml), and a job's channels
take the paths the report gives them (tests/e2e/channels.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import runner
from emu.routing import compute_routes
from emu.topology import load_topology

ECMP = Path(__file__).resolve().parent / "ecmp.yaml"
CHANNELS = Path(__file__).resolve().parent / "channels.yaml"


def _ports(out: Path) -> dict[str, set[int]]:
    counters = json.loads((out / "baseline" / "counters.json").read_text())
    return {sw: {int(p) for p, n in c["stats"]["tx"].items() if n} for sw, c in counters.items()}


@pytest.mark.timeout(300)
def test_ecmp_ports_in_both_modes(mininet_env: None, tmp_path: Path) -> None:
    routes = compute_routes(load_topology(ECMP))
    expected = routes.ports_in_use()
    assert len(expected["leaf1"]) == 3 and len(expected["leaf2"]) == 4  # the file's comment
    for mode in ("mininet", "sim"):
        result = runner.run(ECMP, schemes=("baseline",), mode=mode, out=tmp_path / mode)  # type: ignore[arg-type]
        assert result.ok, (mode, result.failure)
        assert result.summary["paths"] == routes.flow_report(), mode
        assert _ports(tmp_path / mode) == expected, mode


@pytest.mark.timeout(300)
def test_channels_spread_and_verify_in_both_modes(mininet_env: None, tmp_path: Path) -> None:
    """channels: 2 (UDP source ports 4793, 4794): each direction's two channel flows take both
    spines, as the flow report says; the ports that carry traffic are the model's; the K=2
    all-reduce verifies in real time and in virtual time."""
    routes = compute_routes(load_topology(CHANNELS))
    report = routes.flow_report()
    spine = {(f["rank"], f["channel"]): f["path"][2] for f in report["flows"]}
    assert {spine[(0, 0)], spine[(0, 1)]} == {spine[(1, 0)], spine[(1, 1)]} == {"spine1", "spine2"}  # the comment
    expected = routes.ports_in_use()
    for mode in ("mininet", "sim"):
        result = runner.run(CHANNELS, schemes=("baseline",), mode=mode, out=tmp_path / mode)  # type: ignore[arg-type]
        assert result.ok, (mode, result.failure)
        assert result.summary["baseline"]["verified"] is True, mode
        assert result.summary["paths"] == report, mode
        assert _ports(tmp_path / mode) == expected, mode
