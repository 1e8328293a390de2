"""`--p4 tofino`: the T2NA build runs a whole experiment (virtual time, no root) and gives the
v1model build's verdict; the controller rejects it where it cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import runner
from emu.backend import UsageError

REPO = Path(__file__).resolve().parents[2]
LEAD = REPO / "topologies" / "e2e_lead.yaml"
SINGLE = REPO / "topologies" / "single.yaml"


def test_tofino_build_runs_an_experiment_with_the_v1model_verdict(tmp_path: Path) -> None:
    runs = {p4: runner.run(LEAD, mode="sim", out=tmp_path / p4, seed=3, p4=p4) for p4 in ("v1model", "tofino")}
    for p4, result in runs.items():
        assert result.ok, (p4, result.failure)
        summary = result.summary
        assert summary["baseline"]["verified"] and summary["symphony"]["verified"], p4
        assert summary["baseline"]["marks"]["symphony"] == 0, p4  # Symphony marks only with Symphony
        assert summary["symphony"]["marks"]["symphony"] > 0, p4
        assert json.loads((tmp_path / p4 / "run.json").read_text())["p4"] == p4
    # The figures are close, not equal: T2NA marks on queue depth in cells (K packets = 9K
    # cells of full frames), v1model in packets, and a queue holding small ACKs counts less
    # in cells (docs/tofino.md).


def test_tofino_build_without_queues_is_bit_for_bit_the_v1model_run(tmp_path: Path) -> None:
    """With no queue anywhere (single switch, no marks) the two builds forward the same
    packets at the same times: identical results files."""
    for p4 in ("v1model", "tofino"):
        assert runner.run(SINGLE, mode="sim", out=tmp_path / p4, seed=2, iterations=2, p4=p4,
                          schemes=("baseline",)).ok
    for name in ("cct.csv", "steps.csv", "summary.json"):
        assert (tmp_path / "v1model" / name).read_bytes() == (tmp_path / "tofino" / name).read_bytes(), name


@pytest.mark.parametrize(("kw", "words"), [
    ({"p4": "tofino", "target": "bmv2"}, "--p4 tofino: the T2NA build runs on the embedded target only"),
    ({"p4": "psa"}, "unknown --p4 'psa'"),
])
def test_p4_build_mistakes_are_one_line(tmp_path: Path, kw: dict, words: str) -> None:
    with pytest.raises(UsageError, match=words.replace("(", r"\(")):
        runner.run(SINGLE, mode="sim", out=tmp_path / "x", **kw)
