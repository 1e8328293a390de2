"""hostapps.barrier.StepBarrier (the ideal reference) and the ideal scheme in virtual time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from emu import runner
from emu.backend import UsageError
from hostapps.barrier import StepBarrier

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Req:
    step: int
    tag: str


def test_a_step_goes_when_every_rank_reached_it() -> None:
    b = StepBarrier(3)
    woken: list[int] = []
    for r in range(3):
        b.wake[r] = lambda r=r: woken.append(r)
    assert b.submit(0, [Req(0, "0a"), Req(0, "0b")]) == []  # held: ranks 1, 2 not at step 0
    assert b.submit(1, [Req(0, "1a")]) == []
    assert woken == []
    out = b.submit(2, [Req(0, "2a")])  # the last rank releases step 0: its request goes at once
    assert [r.tag for r in out] == ["2a"] and woken == [0, 1]
    assert [r.tag for r in b.take(0)] == ["0a", "0b"] and [r.tag for r in b.take(1)] == ["1a"]
    assert b.take(0) == [] and b.take(2) == []
    assert [r.tag for r in b.submit(0, [Req(0, "0c")])] == ["0c"]  # a released step passes
    assert b.releases == 1 and b.arrived == {}


def test_the_releasing_rank_sends_its_held_requests_first() -> None:
    b = StepBarrier(2)
    assert b.submit(0, [Req(5, "slice0")]) == []
    assert b.submit(1, [Req(5, "x")]) == [Req(5, "x")]
    assert b.submit(1, [Req(6, "y")]) == []
    assert [r.tag for r in b.submit(0, [Req(6, "slice1")])] == ["slice1"]
    assert b.take(1) == [Req(6, "y")]
    c = StepBarrier(2)
    c.submit(0, [Req(1, "a")])
    c.submit(1, [Req(1, "b")])  # released by rank 1
    c.submit(0, [Req(2, "c")])
    out = c.submit(1, [Req(2, "d")])
    assert [r.tag for r in out] == ["d"]


def test_bad_rank_count() -> None:
    with pytest.raises(ValueError, match="at least one rank"):
        StepBarrier(0)


def test_ideal_scheme_runs_in_virtual_time_in_lockstep(tmp_path: Path) -> None:
    """The ideal reference on single.yaml: verified results, every rank in one step (lead <= 1 as
    the step logs sample it: a rank that finished step s waits at s + 1's barrier)."""
    result = runner.run(REPO / "topologies" / "single.yaml", schemes=("ideal",), size=16384, iterations=2,
                        mode="sim", out=tmp_path / "r", parallel=1)
    assert result.ok
    assert result.summary["ideal"]["step_lead"]["max"] <= 1


def test_ideal_is_refused_in_real_time() -> None:
    with pytest.raises(UsageError, match="scheme ideal: the per-step barrier at the hosts runs in virtual time only"):
        runner.run(REPO / "topologies" / "single.yaml", schemes=("baseline", "ideal"), mode="mininet")
