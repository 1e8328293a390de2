"""emu.dilation: a dilated plan has rates / D, delays and DCQCN/transport timers * D, and every
count in packets (queues, ECN ramp, Symphony thresholds, MTU) unchanged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from emu.dilation import TRANSPORT_TIMERS, dilate
from emu.topology import load_topology, parse_topology
from hostapps.ratecontrol import DcqcnParams
from hostapps.transport import TransportConfig

REPO = Path(__file__).resolve().parents[2]
D = 5000.0


def test_dc_scenario_dilated_plan() -> None:
    topo = load_topology(REPO / "topologies" / "dc-leafspine-16.yaml")
    assert topo.dilation == D  # the scenario's Mininet default
    dil = dilate(topo, D)
    assert dil.dilated_by == D and topo.dilated_by == 1
    for a, b in zip(topo.plan.links, dil.plan.links, strict=True):
        assert b.bandwidth_bps == pytest.approx(a.bandwidth_bps / D)
        assert b.delay_us == round(a.delay_us * D)
        assert b.queue_packets == a.queue_packets
    for a, b in zip(topo.plan.hosts, dil.plan.hosts, strict=True):
        assert b.line_rate_bps == pytest.approx(a.line_rate_bps / D)
    # DCQCN: every timer * D (the preset's), the rest (fractions of the line rate, B) unchanged.
    before, after = topo.dcqcn_for(0), dil.dcqcn_for(0)
    assert after["alpha_update_period"] == pytest.approx(before["alpha_update_period"] * D)
    assert after["rate_increase_period"] == pytest.approx(before["rate_increase_period"] * D)
    for key in ("g", "rate_ai_fraction", "rate_hai_fraction", "min_rate_fraction", "byte_counter_bytes",
                "fast_recovery_stages"):
        assert after[key] == before[key], key
    # Transport timers * D (CNP interval, NACK interval, ACK delay, RTO bounds), counts unchanged.
    t0, t1 = topo.transport_for(0), dil.transport_for(0)
    for key in ("cnp_interval", "nack_interval", "ack_delay", "initial_rto", "min_rto", "max_rto"):
        assert t1[key] == pytest.approx(t0[key] * D), key
    assert t1["ack_every"] == t0["ack_every"]
    # Thresholds in packets, MTU, Symphony and the work unchanged; background rate / D, times * D.
    assert dil.ecn == topo.ecn and (dil.ecn.kmin_packets, dil.ecn.kmax_packets) == (97, 389)
    assert dil.symphony == topo.symphony and dil.mtu == topo.mtu
    assert [j.size_bytes for j in dil.jobs] == [j.size_bytes for j in topo.jobs]
    for a, b in zip(topo.background, dil.background, strict=True):
        assert b.rate_mbps == pytest.approx(a.rate_mbps / D)
        assert (b.on_ms, b.off_ms) == pytest.approx((a.on_ms * D, a.off_ms * D))
    assert dil.jobs[0].step_timeout_s == pytest.approx(topo.jobs[0].step_timeout_s * D)


SMALL = """
name: small
defaults: {bandwidth_mbps: 1000, delay_ms: 0.02}
hosts: [{name: h1}, {name: h2}]
switches: [{name: s1}]
links: [{a: h1, b: s1}, {a: h2, b: s1, delay_ms: 0.05}]
jobs:
  - {id: 0, ranks: [h1, h2], compute_ms: 1, dcqcn: {rate_increase_period: 2ms}}
dcqcn: {alpha_update_period: 10ms}
ecn: {threshold_packets: 12}
"""


def test_defaults_and_overrides_are_dilated() -> None:
    topo = parse_topology(SMALL)
    dil = dilate(topo, 50)
    # The file's override, a job's override, and a default nobody set: all * D.
    assert dil.dcqcn_for(0)["alpha_update_period"] == pytest.approx(0.010 * 50)
    assert dil.dcqcn_for(0)["rate_increase_period"] == pytest.approx(0.002 * 50)
    dcqcn_timers = [f.name for f in dataclasses.fields(DcqcnParams) if f.name.endswith(("_period", "_interval"))]
    assert set(dcqcn_timers) <= set(dil.dcqcn)
    for name in TRANSPORT_TIMERS:  # no preset: TransportConfig's defaults * D
        assert dil.transport_for(0)[name] == pytest.approx(getattr(TransportConfig(), name) * 50)
    assert [link.delay_ms for link in dil.links] == pytest.approx([1.0, 2.5])
    assert dil.jobs[0].compute_ms == pytest.approx(50)
    assert dil.ecn.kmin_packets == dil.ecn.kmax_packets == 12
    assert topo.plan.links[1].delay_us == 50 and dil.plan.links[1].delay_us == 2500


def test_bad_dilation() -> None:
    topo = parse_topology(SMALL)
    with pytest.raises(ValueError, match=">= 1"):
        dilate(topo, 0.5)
    with pytest.raises(ValueError, match="already dilated"):
        dilate(dilate(topo, 2), 2)


def test_runner_refuses_dilation_outside_mininet(tmp_path: Path) -> None:
    from emu import runner

    with pytest.raises(runner.UsageError, match="--dilation: only --mode mininet"):
        runner.run(REPO / "topologies" / "single.yaml", mode="sim", dilation=10, out=tmp_path)
    with pytest.raises(runner.UsageError, match="--dilation 0.5: give D from 1"):
        runner.run(REPO / "topologies" / "single.yaml", dilation=0.5, out=tmp_path)
    # new-user check, 2026-12-04: 1e9 was taken (10 Mbit/s / 1e9) and the run sat at its first iteration
    with pytest.raises(runner.UsageError, match=r"--dilation 1e\+09: give D from 1 .* to 1e\+06, or auto"):
        runner.run(REPO / "topologies" / "single.yaml", dilation="1e9", out=tmp_path)
    with pytest.raises(runner.UsageError, match="--mtu 100"):
        runner.run(REPO / "topologies" / "single.yaml", mtu=100, out=tmp_path)


def test_metrics_in_scenario_time(tmp_path: Path) -> None:
    """compute_metrics(time_scale=1/D) divides every logged time by D."""
    import json

    from emu import metrics

    lines = [{"kind": "step", "job": 0, "rank": r, "iteration": 0, "step": 0, "start": 10.0, "end": 15.0}
             for r in range(2)]
    lines += [{"kind": "iteration", "job": 0, "rank": r, "iteration": 0, "start": 10.0, "end": 20.0, "verified": True}
              for r in range(2)]
    for r in range(2):
        (tmp_path / f"job0-rank{r}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines if x["rank"] == r))
    plain = metrics.compute_metrics(tmp_path, scheme="baseline")
    scaled = metrics.compute_metrics(tmp_path, scheme="baseline", time_scale=1 / 50)
    assert plain.ccts[0].cct_s == pytest.approx(10.0)
    assert scaled.ccts[0].cct_s == pytest.approx(0.2)


def test_spaced_mark_gap_is_dilated() -> None:
    """marking: spaced's mark_gap_ms (top level and a job's own) is a time: D times longer."""
    from emu.topology_schema import SymphonyOverride

    topo = load_topology(REPO / "topologies" / "dc-mix-stragglers.yaml")
    topo.symphony.mark_gap_ms = 0.004
    topo.job(1).symphony = SymphonyOverride(mark_gap_ms=0.008)
    t = dilate(topo, 10)
    assert t.symphony.mark_gap_ms == pytest.approx(0.04)
    assert t.job(1).symphony.mark_gap_ms == pytest.approx(0.08)
