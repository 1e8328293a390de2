"""The placebo reference: its table entries and its calibration from the symphony run."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu import p4names, routing
from emu.runner import SchemeRun, placebo_probabilities, placebo_volume
from emu.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]


def _run(scheme: str, marks: list[list[int]], eligible: list[list[int]]) -> SchemeRun:
    after = {f"s{i}": {"symphony_marks": m, "symphony_eligible": e} for i, (m, e) in enumerate(zip(marks, eligible, strict=True))}
    return SchemeRun(scheme, Path("."), [], {}, after, 0.0, 0.0)


def test_probability_is_marks_over_eligible_summed_over_switches() -> None:
    sym = _run("symphony", [[3, 0, 1], [1, 0, 0]], [[100, 50, 10], [300, 0, 0]])
    p = placebo_probabilities(sym, [0, 1, 2, 3])
    assert p == {0: 4 / 400, 1: 0.0, 2: 1 / 10, 3: 0.0}  # job 3: never at the decision -> 0


def test_volume_ratio_per_job() -> None:
    sym = _run("symphony", [[4, 0]], [[400, 0]])
    pla = _run("placebo", [[5, 0]], [[410, 0]])
    vol = placebo_volume({"symphony": sym, "placebo": pla}, {0: 0.01, 1: 0.0})
    assert vol["0"] == {"probability": 0.01, "symphony_marks": 4, "placebo_marks": 5, "volume_ratio": 1.25}
    assert vol["1"]["volume_ratio"] is None


def test_placebo_entries_only_in_placebo_mode() -> None:
    topo = load_topology(ROOT / "topologies" / "default.yaml")
    job = topo.jobs[0].id
    sym = routing.switch_programs(topo, "symphony", placebo={job: 0.5})
    pla = routing.switch_programs(topo, "placebo", placebo={job: 0.5})
    for sw in sym:
        assert not [e for e in sym[sw].entries if e.table == p4names.TABLE_PLACEBO]
        config = [e for e in pla[sw].entries if e.table == p4names.TABLE_SYMPHONY]
        placebo = [e for e in pla[sw].entries if e.table == p4names.TABLE_PLACEBO]
        assert all(e.params["mode"] == p4names.SCHEME_MODES["placebo"] for e in config)
        assert [e.params["threshold"] for e in placebo] == [32768] * len(config)


def test_placebo_entries_reject_bad_probabilities() -> None:
    assert routing.placebo_entries({0: 0.0}) == []  # rounds to 0: no entry, never marked
    assert routing.placebo_entries({0: 1.0})[0].params["threshold"] == p4names.PROB_ONE
    with pytest.raises(ValueError, match="placebo probability"):
        routing.placebo_entries({0: 1.5})
