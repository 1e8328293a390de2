"""Cross-check of the two modes (root, Mininet): the same scenario in real time and in virtual time.

Tolerances (docs/virtual-time.md, "Cross-check"):

- ``single.yaml`` (one switch, 4 ranks, no background): the real-time mean CCT no more than
  15% below the virtual-time one and no more than 35% above it (measured 0.3% apart, 95.0 vs
  94.7 ms, on a quiet machine; 15-25% above with another process on the 2 cores). Virtual time
  does not model host CPU time or scheduling, which only ever make a real-time run slower;
  a real-time run *faster* than the model would mean the model is wrong;
- ``tests/e2e/xcheck.yaml`` (one switch, 4 ranks, background into one rank's downlink):
  Symphony marks only with Symphony and some with it, in both modes; the same maximum step
  lead within one step and the mean step lead within 0.75 steps (measured: baseline 0.94 vs
  1.22, Symphony 0.64-0.74 vs 1.14 over four real-time runs); mean CCT within 35%
  (measured 24% apart: the real-time hosts' timers and bursts make the DCQCN dynamics of
  the marked flow differ, see docs/virtual-time.md).

The upper bounds hold on a quiet machine. A loaded one (issue 19: 0.43 with other work on
the 2 cores) makes every real-time run slower than the model by the CPU its workers waited
for, which each run measures (``overload.worker_cpu_wait``): the bound grows by exactly that
share, 1 / (1 - w), and no more; the lower bounds (a real-time run faster than the model)
never move.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emu import runner

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"
XCHECK = Path(__file__).resolve().parent / "xcheck.yaml"


def _got_cpu(summary: dict, scheme: str) -> float:
    """The share 1 - w of their wall time the real-time workers had a CPU when they wanted
    one (w: the run's own ``overload.worker_cpu_wait``, 0 on a quiet machine). Their wall
    time is then up to 1 / (1 - w) of what they needed; host CPU time only ever makes a
    real-time run slower than the model."""
    wait = (summary[scheme].get("overload") or {}).get("worker_cpu_wait") or 0.0
    return 1 - min(wait, 0.9)


def _both(topology: Path, tmp_path: Path, **kw: object) -> tuple[dict, dict]:
    mn = runner.run(topology, out=tmp_path / "mininet", mode="mininet", **kw)  # type: ignore[arg-type]
    sim = runner.run(topology, out=tmp_path / "sim", mode="sim", **kw)  # type: ignore[arg-type]
    assert mn.ok and sim.ok, (mn.failure, sim.failure)
    return mn.summary, sim.summary


@pytest.mark.timeout(300)
def test_single_switch_cct_agrees(mininet_env: None, tmp_path: Path) -> None:
    mn, sim = _both(SINGLE, tmp_path, schemes=("baseline",), iterations=3)
    a, b = mn["baseline"]["cct_s"]["mean"], sim["baseline"]["cct_s"]["mean"]
    assert 0.85 <= a / b <= 1.35 / _got_cpu(mn, "baseline"), (a, b, mn["baseline"].get("overload"))


@pytest.mark.timeout(420)
def test_marks_and_step_lead_agree(mininet_env: None, tmp_path: Path) -> None:
    mn, sim = _both(XCHECK, tmp_path)
    for summary in (mn, sim):
        assert summary["baseline"]["marks"]["symphony"] == 0
        assert summary["symphony"]["marks"]["symphony"] > 0
    for scheme in ("baseline", "symphony"):
        la, lb = mn[scheme]["step_lead"], sim[scheme]["step_lead"]
        assert abs(la["max"] - lb["max"]) <= 1, (scheme, la, lb)
        assert abs(la["mean"] - lb["mean"]) <= 0.75, (scheme, la, lb)
        a, b = mn[scheme]["cct_s"]["mean"], sim[scheme]["cct_s"]["mean"]
        assert 0.65 * _got_cpu(mn, scheme) <= b / a <= 1.35, (scheme, a, b, mn[scheme].get("overload"))
