"""The Tofino2 (T2NA) build in Mininet: `run --p4 tofino` on the embedded switch processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEAD = REPO / "topologies" / "e2e_lead.yaml"


@pytest.mark.timeout(300)
def test_t2na_build_runs_both_schemes_verified(mininet_env: None, tmp_path: Path) -> None:
    """Every switch process loads p4/tofino/symphony.p4; both schemes verify and only
    Symphony sets Symphony marks (the default scenario's verdict, on the short e2e scenario)."""
    from emu import runner

    result = runner.run(LEAD, iterations=2, out=tmp_path, p4="tofino")
    assert result.ok, result.failure
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["baseline"]["verified"] and summary["symphony"]["verified"]
    assert summary["baseline"]["marks"]["symphony"] == 0
    assert summary["symphony"]["marks"]["symphony"] > 0
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["p4"] == "tofino" and info["status"] == "finished"
    logs = " ".join(p.read_text() for p in (tmp_path / "logs").glob("*.log"))
    assert "T2NA" in logs or "tofino/symphony.p4" in logs, logs[:500]
