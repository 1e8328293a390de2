"""ECMP in both modes (root, Mininet for real time): the per-port counters of a run show the
traffic exactly where emu.routing's hash model says (tests/e2e/ecmp.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import runner
from emu.routing import compute_routes
from emu.topology import load_topology

ECMP = Path(__file__).resolve().parent / "ecmp.yaml"


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
