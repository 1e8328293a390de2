"""Time dilation: a data-centre scenario slowed down by D so that real time can run it.

``dilate(topology, D)`` is the one place where a dilation is applied (docs/virtual-time.md,
"Time dilation"). It returns a copy of a loaded :class:`emu.topology.Topology` in which

- every link rate and background source rate is divided by D;
- every link delay, job compute time, job start offset and step timeout, and every
  background on/off/start/duration time is multiplied by D;
- every DCQCN timer (``DcqcnParams`` fields ending in ``_period`` / ``_interval``: the
  alpha-update and rate-increase timers) and every transport timer (CNP interval, NACK
  interval, ACK delay, RTO bounds, pacing slack) is multiplied by D, the defaults'
  and the preset's included; DCQCN rates given in bit/s are divided by D;
- nothing counted in packets or bytes changes: queue depths, the ECN ramp (Kmin/Kmax in
  packets, already resolved from the preset at load), Symphony's thresholds, the MTU, the
  byte counter, the rate fractions (AI, HAI, MinRate are fractions of the line rate).

So the bandwidth-delay product in packets, the marking thresholds in packets and every
timer measured in RTTs are those of the scenario as written (time-dilation emulation, as in
Gupta et al., "To infinity and beyond: time-warped network emulation", NSDI 2006). Times
measured on the dilated network are D times the scenario's: the runner divides them by D.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hostapps.ratecontrol import DcqcnParams
from hostapps.transport import TransportConfig

from .topology_schema import dcqcn_unit

#: TransportConfig fields that are times (s) and scale with the RTT.
TRANSPORT_TIMERS = ("pacing_slack_s", "initial_rto", "min_rto", "max_rto", "nack_interval", "cnp_interval",
                    "ack_delay")


def _dcqcn_kind(name: str) -> str | None:
    unit = dcqcn_unit(name)
    return unit[1] if unit else None


def _scale_dcqcn(params: dict[str, Any], d: float) -> dict[str, Any]:
    out = dict(params)
    for key, value in params.items():
        kind = _dcqcn_kind(key)
        if kind == "duration":
            out[key] = float(value) * d
        elif kind == "rate":
            out[key] = float(value) / d
    return out


def dilate(topology: Any, d: float) -> Any:
    """A copy of the loaded ``topology`` dilated by ``d`` (>= 1; 1 returns an equal copy).

    Shapes/units: rates in Mbit/s or bit/s are divided by ``d``; times in ms or s are
    multiplied by ``d``; packet and byte counts are unchanged (see the module docstring).
    Raises ValueError when ``d`` < 1 or the topology is already dilated.
    """
    if not d >= 1:
        raise ValueError(f"dilation must be >= 1, got {d!r}")
    if topology.dilated_by != 1:
        raise ValueError(f"topology already dilated by {topology.dilated_by}")
    t = topology.model_copy(deep=True)
    for cached in ("_hosts", "plan"):
        t.__dict__.pop(cached, None)
    t.defaults.bandwidth_mbps = topology.defaults.bandwidth_mbps / d
    t.defaults.delay_ms = topology.defaults.delay_ms * d
    for link in t.links:
        assert link.bandwidth_mbps is not None and link.delay_ms is not None  # resolved by load
        link.bandwidth_mbps = link.bandwidth_mbps / d
        link.delay_ms = link.delay_ms * d
    if t.symphony.mark_gap_ms is not None:
        t.symphony.mark_gap_ms *= d
    for job in t.jobs:
        if job.symphony is not None and job.symphony.mark_gap_ms is not None:
            job.symphony.mark_gap_ms *= d
        job.compute_ms *= d
        job.start_offset_ms *= d
        job.step_timeout_s *= d
        if job.model is not None:
            job.model.forward_ms *= d
        for st in job.stragglers:
            st.compute_delay_ms *= d
        if job.dcqcn:
            job.dcqcn = _scale_dcqcn(job.dcqcn, d)
    for flow in t.background:
        flow.rate_mbps /= d
        flow.on_ms *= d
        flow.off_ms *= d
        flow.start_ms *= d
        if flow.duration_ms is not None:
            flow.duration_ms *= d
    # Every DCQCN timer, the defaults' and the preset's too, explicitly at the top level
    # (a job's own override was scaled above and still wins).
    defaults = {f.name: f.default for f in dataclasses.fields(DcqcnParams)}
    base = {**defaults, **(topology.preset.rate_params if topology.preset is not None else {}), **topology.dcqcn}
    t.dcqcn = {**topology.dcqcn, **{k: v for k, v in _scale_dcqcn(base, d).items() if _dcqcn_kind(k) is not None
                                    and k in defaults}}
    transport = {f.name: f.default for f in dataclasses.fields(TransportConfig) if f.name in TRANSPORT_TIMERS}
    transport.update({k: v for k, v in topology.transport_for(0).items() if k in TRANSPORT_TIMERS})
    t._transport = {k: float(v) * d for k, v in transport.items()}
    t._dilated_by = float(d)
    return t


__all__ = ["TRANSPORT_TIMERS", "dilate"]
