"""Topology schema: YAML scenario files validated without root.

A topology file (``topologies/*.yaml``, format in ``docs/topology-format.md``) names the
hosts, switches and links of an emulated network, the ring-collective jobs placed on its
hosts, on/off background flows, and the ECN, Symphony and DCQCN parameters.

- :func:`load_topology` / :func:`parse_topology` return a validated :class:`Topology`
  (pydantic v2, ``extra='forbid'`` everywhere) with every default resolved: each link has
  its bandwidth, delay and queue depth, each host its IP (docs/DESIGN.md section 6).
- Every user mistake raises :class:`TopologyError`, whose ``str()`` is one line:
  ``<file>: <field.path>: <problem>; <fix>``.
- :func:`build_plan` turns a topology into a :class:`NetworkPlan`: a pure description of
  what the Mininet builder creates (switch port numbers, interface names, MACs, per-port
  queue shaping). Like Mininet's ``Topo`` it only records names and options.

Conventions of the plan (stable; the routing and the runner rely on them):

- switch ports are numbered 1..n per switch in the order the links appear in the file;
  switch interfaces are ``<switch>-eth<port>``, a host's only interface ``<host>-eth0``;
- host MACs are ``02:00:00:00:HH:LL`` with HHLL = host index + 1 (file order); switch
  port MACs ``02:01:SS:SS:PP:PP`` with SSSS = switch index + 1 and PPPP = port number
  (locally administered, unicast);
- a host's line rate is the bandwidth of its (only) access link.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import logging
import re
from collections import deque
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from hostapps.ratecontrol import DcqcnParams
from hostapps.wire import MAX_JOBS, MAX_RANKS

from .units import Bytes, Kind, Mbps, Milliseconds, Seconds, UnitError, to_unit

log = logging.getLogger(__name__)

#: Node names: a letter then letters/digits/underscore, at most 8 characters, so that
#: ``<name>-eth<port>`` fits Linux's 15-character interface names (IFNAMSIZ - 1) for
#: ports up to 511 (``bit<9>`` port numbers).
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,7}$"
_NAME_RE = re.compile(NAME_PATTERN)

Collective = Literal["allreduce", "allgather", "reducescatter"]

#: ECN step K (packets) when the topology sets neither threshold_packets nor a ramp.
DEFAULT_ECN_THRESHOLD_PACKETS = 10


class TopologyError(ValueError):
    """A topology file that cannot be used; ``str()`` is one line naming file and field.

    Attributes: ``file`` (path as given), ``field`` (dotted path such as
    ``links[3].bandwidth_mbps``), ``problem`` and ``fix`` (what to do).
    """

    def __init__(self, file: str, field: str, problem: str, fix: str) -> None:
        self.file = file
        self.field = field
        self.problem = _one_line(problem)
        self.fix = _one_line(fix)
        super().__init__(f"{file}: {field}: {self.problem}; {self.fix}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LinkDefaults(_Model):
    """Values for links that do not set their own."""

    #: Link rate (Mbit/s, or a value with a unit: ``100Gbit/s``), both directions.
    bandwidth_mbps: Mbps = Field(10.0, gt=0)
    #: One-way propagation delay (ms, or a value with a unit: ``2us``), applied at switch egress.
    delay_ms: Milliseconds = Field(0.1, ge=0)
    #: Egress queue depth of a switch port onto this link (packets).
    queue_packets: int = Field(64, ge=1)


class HostSpec(_Model):
    """A Mininet host; the IP defaults to the next free address of ``subnet``."""

    name: str = Field(pattern=NAME_PATTERN)
    ip: ipaddress.IPv4Address | None = None


class SwitchSpec(_Model):
    """A P4 switch running ``p4/symphony.p4``."""

    name: str = Field(pattern=NAME_PATTERN)


class LinkSpec(_Model):
    """A full-duplex link between two nodes; unset values come from ``defaults``."""

    a: str
    b: str
    #: Link rate (Mbit/s, or with a unit).
    bandwidth_mbps: Mbps | None = Field(None, gt=0)
    #: One-way delay (ms, or with a unit).
    delay_ms: Milliseconds | None = Field(None, ge=0)
    #: Egress queue depth at the switch end(s) (packets).
    queue_packets: int | None = Field(None, ge=1)


class SymphonyOverride(_Model):
    """Per-job Symphony parameters; unset fields use the top-level ``symphony``."""

    lead_threshold: int | None = Field(None, ge=0, le=0xFFFF)
    slope: float | None = Field(None, ge=0)
    queue_gate: int | None = Field(None, ge=0, lt=2**19)


class SymphonyParams(_Model):
    """Symphony marking parameters (docs/DESIGN.md section 4).

    Mark probability ``min(1, (lead - lead_threshold) * slope)`` when
    ``lead > lead_threshold`` and the egress queue holds at least ``queue_gate`` packets.
    """

    #: T, lead (steps) tolerated before marking. Default 1: a ring's pipeline has one step of
    #: lead by itself (a rank starts step s+1 as soon as its chunk of step s arrived), so
    #: T = 0 marks flows that are merely in pipeline order; on single.yaml (no shared link,
    #: nothing to align) T = 0 made 213 marks and 1.02 [1.00, 1.04] of the baseline's mean
    #: CCT, T = 1 none and 1.00 [0.98, 1.02] (20 iterations, docs/results.md). Scenarios
    #: whose flows share links set T = 0 themselves (default.yaml, dumbbell.yaml).
    lead_threshold: int = Field(1, ge=0, le=0xFFFF)
    #: Mark probability per step of lead beyond T (0..1 meaningful; larger saturates).
    slope: float = Field(0.25, ge=0)
    #: Minimum egress queue depth (packets) for a Symphony mark; 1 = queue non-empty.
    queue_gate: int = Field(1, ge=0, lt=2**19)

    def merged(self, override: SymphonyOverride | None) -> SymphonyParams:
        """These parameters with the set fields of ``override`` applied."""
        if override is None:
            return self
        return self.model_copy(update=override.model_dump(exclude_none=True))


class EcnParams(_Model):
    """Queue-depth ECN marking at every switch port (the baseline's only marking).

    A RED-like ramp as data-centre switches are configured for DCQCN (DCQCN, SIGCOMM 2015,
    section 3): no mark below ``kmin_packets`` packets in the egress queue, a probability
    rising linearly from 0 at ``kmin_packets`` towards ``pmax`` at ``kmax_packets``, and
    every ECT packet marked at or above ``kmax_packets``. ``threshold_packets`` K is the
    shorthand for kmin = kmax = K (a step: mark at or above K). After loading, ``kmin_packets``
    and ``kmax_packets`` are always set (default K = 10).
    """

    enabled: bool = True
    #: K, shorthand for kmin = kmax = K: mark ECT packets when the egress queue holds at
    #: least K packets on arrival.
    threshold_packets: int | None = Field(None, ge=1, lt=2**19)
    #: Start of the ramp (packets): below it no queue mark.
    kmin_packets: int | None = Field(None, ge=1, lt=2**19)
    #: End of the ramp (packets): at or above it every ECT packet is marked.
    kmax_packets: int | None = Field(None, ge=1, lt=2**19)
    #: Marking probability reached at the top of the ramp (just below kmax).
    pmax: float = Field(1.0, gt=0, le=1)


class JobSpec(_Model):
    """A ring collective: rank i runs on host ``ranks[i]``, sends to rank (i+1) % N."""

    id: int = Field(ge=0)
    ranks: list[str]
    collective: Collective = "allreduce"
    #: Bytes per rank per iteration (float32 elements, so a multiple of 4; or ``256KiB``).
    size_bytes: Bytes = Field(262_144, gt=0)
    iterations: int = Field(5, ge=1)
    #: Compute time between collectives (ms, or with a unit); JCT includes it.
    compute_ms: Milliseconds = Field(0.0, ge=0)
    #: NCCL-style slices per step chunk.
    slices: int = Field(1, ge=1)
    #: Delay of this job's start after the run's common start (ms, or with a unit).
    start_offset_ms: Milliseconds = Field(0.0, ge=0)
    #: A step waiting longer than this for data fails the job (s, or with a unit).
    step_timeout_s: Seconds = Field(10.0, gt=0)
    symphony: SymphonyOverride | None = None
    #: DCQCN parameter overrides for this job (names of hostapps.ratecontrol.DcqcnParams;
    #: periods in s or with a unit, ``5ms``; converted to numbers when loaded).
    dcqcn: dict[str, float | int | bool | str] | None = None


class FlowSpec(_Model):
    """On/off UDP background traffic (Not-ECT, UDP port 5001)."""

    src: str
    dst: str
    #: Sending rate while on (Mbit/s, or with a unit).
    rate_mbps: Mbps = Field(gt=0)
    #: Mean on period (ms, or with a unit).
    on_ms: Milliseconds = Field(gt=0)
    #: Mean off period (ms, or with a unit); 0 = always on.
    off_ms: Milliseconds = Field(0.0, ge=0)
    #: Start after the run's common start (ms, or with a unit).
    start_ms: Milliseconds = Field(0.0, ge=0)
    #: How long the source runs (ms, or with a unit); None = until the jobs end.
    duration_ms: Milliseconds | None = Field(None, gt=0)
    #: Exponentially distributed on/off periods (mean on_ms/off_ms) instead of fixed.
    exponential: bool = False
    #: UDP payload per packet (bytes).
    packet_bytes: int = Field(1200, ge=16, le=1472)


class Topology(_Model):
    """A validated scenario. After :func:`load_topology` every default is resolved."""

    name: str
    description: str = ""
    #: Subnet of all host addresses (hosts are on one IP subnet; the switches route /32s).
    subnet: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/24")
    defaults: LinkDefaults = LinkDefaults()
    hosts: list[HostSpec] = Field(min_length=1)
    switches: list[SwitchSpec] = Field(min_length=1)
    links: list[LinkSpec] = Field(min_length=1)
    jobs: list[JobSpec] = []
    background: list[FlowSpec] = []
    ecn: EcnParams = EcnParams()
    symphony: SymphonyParams = SymphonyParams()
    #: DCQCN parameter overrides for every job (names of hostapps.ratecontrol.DcqcnParams;
    #: periods in s or with a unit, ``5ms``; converted to numbers when loaded).
    dcqcn: dict[str, float | int | bool | str] = {}
    #: A named DCQCN, transport and ECN setting (hostapps.ratecontrol.DCQCN_PRESETS, e.g.
    #: ``hpcc-dcqcn-100g``); ``dcqcn`` overrides its rate parameters, an ``ecn`` ramp or
    #: threshold given in the file its ECN ramp (else the preset's Kmin/Kmax/Pmax in packets of the MTU).
    dcqcn_preset: str | None = None
    #: IP MTU of every host (bytes); RoCE's 4096 needs ``--mode sim`` (the Mininet hosts use 1500;
    #: ``--mtu 1500`` runs such a scenario in Mininet).
    mtu: int = Field(1500, ge=576, le=9000)
    #: Time dilation D that ``--mode mininet`` uses for this scenario when ``--dilation`` is
    #: not given: link rates / D, delays and host timers * D (emu.dilation, docs/virtual-time.md).
    dilation: float = Field(1.0, ge=1, allow_inf_nan=False)

    #: TransportConfig overrides applied over the preset's (set by emu.dilation.dilate).
    _transport: dict[str, Any] = PrivateAttr(default_factory=dict)
    #: The dilation applied to this object (1: the scenario as written).
    _dilated_by: float = PrivateAttr(1.0)

    # -- lookups ---------------------------------------------------------------------

    def host(self, name: str) -> HostSpec:
        """The host called ``name`` (KeyError if none)."""
        return self._hosts[name]

    def job(self, job_id: int) -> JobSpec:
        """The job with id ``job_id`` (KeyError if none)."""
        for job in self.jobs:
            if job.id == job_id:
                return job
        raise KeyError(job_id)

    def host_ip(self, name: str) -> str:
        """Dotted-quad IP of host ``name``."""
        ip = self._hosts[name].ip
        assert ip is not None  # resolved by load
        return str(ip)

    def line_rate_bps(self, host: str) -> float:
        """Host ``host``'s line rate (bit/s) = bandwidth of its access link."""
        for link in self.links:
            if host in (link.a, link.b):
                assert link.bandwidth_mbps is not None
                return link.bandwidth_mbps * 1e6
        raise KeyError(host)

    def symphony_for(self, job_id: int) -> SymphonyParams:
        """The job's Symphony parameters (top level merged with its override)."""
        return self.symphony.merged(self.job(job_id).symphony)

    def dcqcn_for(self, job_id: int) -> dict[str, float | int | bool]:
        """DCQCN parameters for the job's workers (the preset's, top level, then the job's own)."""
        base = self.preset.rate_params if self.preset is not None else {}
        return {**base, **self.dcqcn, **(self.job(job_id).dcqcn or {})}

    def transport_for(self, job_id: int) -> dict[str, Any]:  # noqa: ARG002 - per job later
        """TransportConfig overrides for the job's workers (the preset's; none without one)."""
        base = dict(self.preset.transport) if self.preset is not None else {}
        return {**base, **self._transport}

    @property
    def dilated_by(self) -> float:
        """The time dilation D applied to this object by :func:`emu.dilation.dilate` (1: none)."""
        return self._dilated_by

    @property
    def preset(self) -> Any:
        """The :class:`hostapps.ratecontrol.DcqcnPreset` named by ``dcqcn_preset``, or None."""
        from hostapps.ratecontrol import DCQCN_PRESETS

        return DCQCN_PRESETS.get(self.dcqcn_preset) if self.dcqcn_preset else None

    def is_host(self, name: str) -> bool:
        return name in self._hosts

    @cached_property
    def _hosts(self) -> dict[str, HostSpec]:
        return {h.name: h for h in self.hosts}

    @cached_property
    def plan(self) -> NetworkPlan:
        """The :class:`NetworkPlan` of this topology (see :func:`build_plan`)."""
        return build_plan(self)


# --------------------------------------------------------------------------------------
# Network plan: what the Mininet builder creates
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PortPlan:
    """One switch port: the egress queue onto the link it attaches to."""

    switch: str
    port: int  #: 1..n in link order
    intf: str  #: ``<switch>-eth<port>``
    mac: str  #: MAC of the switch port (source MAC of forwarded frames)
    peer: str  #: node at the other end
    peer_intf: str
    peer_port: int | None  #: the peer switch's port, None when the peer is a host
    link_index: int  #: index in ``Topology.links``
    rate_bps: float  #: egress service rate (bit/s)
    depth_pkts: int  #: egress queue depth (packets)
    delay_us: int  #: propagation delay added at egress (microseconds)


@dataclasses.dataclass(frozen=True)
class SwitchPlan:
    name: str
    index: int  #: position in ``Topology.switches``
    dpid: str  #: 16 hex digits, index + 1 (Mininet needs a unique one per switch)
    ports: tuple[PortPlan, ...]

    def port_to(self, peer: str) -> PortPlan:
        """The port whose link goes to ``peer`` (KeyError if none)."""
        for p in self.ports:
            if p.peer == peer:
                return p
        raise KeyError(peer)


@dataclasses.dataclass(frozen=True)
class HostPlan:
    name: str
    index: int  #: position in ``Topology.hosts``
    ip: str
    prefix_len: int  #: of ``Topology.subnet``; configure ``ip/prefix_len`` on ``intf``
    mac: str
    intf: str  #: ``<host>-eth0``
    switch: str  #: the switch of the access link
    switch_port: int
    line_rate_bps: float  #: access-link bandwidth (bit/s); workers pace at most at this


@dataclasses.dataclass(frozen=True)
class LinkPlan:
    index: int
    a: str
    a_intf: str
    b: str
    b_intf: str
    bandwidth_bps: float
    delay_us: int
    queue_packets: int


@dataclasses.dataclass(frozen=True)
class NetworkPlan:
    """Pure description of the emulated network, in file order."""

    hosts: tuple[HostPlan, ...]
    switches: tuple[SwitchPlan, ...]
    links: tuple[LinkPlan, ...]

    def host(self, name: str) -> HostPlan:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def switch(self, name: str) -> SwitchPlan:
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(name)

    def arp_table(self) -> dict[str, str]:
        """IP -> MAC of every host (for static ARP in each host)."""
        return {h.ip: h.mac for h in self.hosts}


def host_mac(index: int) -> str:
    """MAC of the host at ``index`` in the file: ``02:00:00:00:HH:LL`` of index + 1."""
    n = index + 1
    return f"02:00:00:00:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}"


def switch_port_mac(switch_index: int, port: int) -> str:
    """MAC of a switch port: ``02:01:SS:SS:PP:PP`` (switch index + 1, port number)."""
    s = switch_index + 1
    return f"02:01:{s >> 8 & 0xFF:02x}:{s & 0xFF:02x}:{port >> 8 & 0xFF:02x}:{port & 0xFF:02x}"


def build_plan(topo: Topology) -> NetworkPlan:
    """Port numbers, interface names, MACs and queue shaping of ``topo`` (pure)."""
    switch_index = {s.name: i for i, s in enumerate(topo.switches)}
    next_port = {s.name: 1 for s in topo.switches}
    ends: list[tuple[tuple[str, str, int | None], tuple[str, str, int | None]]] = []
    for link in topo.links:
        pair = []
        for node in (link.a, link.b):
            if node in switch_index:
                port = next_port[node]
                next_port[node] += 1
                pair.append((node, f"{node}-eth{port}", port))
            else:
                pair.append((node, f"{node}-eth0", None))
        ends.append((pair[0], pair[1]))

    ports: dict[str, list[PortPlan]] = {s.name: [] for s in topo.switches}
    links: list[LinkPlan] = []
    host_access: dict[str, tuple[str, int, float]] = {}
    for i, (link, (a, b)) in enumerate(zip(topo.links, ends, strict=True)):
        assert link.bandwidth_mbps is not None and link.delay_ms is not None
        assert link.queue_packets is not None
        rate = link.bandwidth_mbps * 1e6
        delay_us = round(link.delay_ms * 1000)
        links.append(LinkPlan(i, a[0], a[1], b[0], b[1], rate, delay_us, link.queue_packets))
        for me, peer in ((a, b), (b, a)):
            if me[2] is None:
                continue
            ports[me[0]].append(
                PortPlan(
                    switch=me[0],
                    port=me[2],
                    intf=me[1],
                    mac=switch_port_mac(switch_index[me[0]], me[2]),
                    peer=peer[0],
                    peer_intf=peer[1],
                    peer_port=peer[2],
                    link_index=i,
                    rate_bps=rate,
                    depth_pkts=link.queue_packets,
                    delay_us=delay_us,
                )
            )
            if peer[2] is None:
                host_access[peer[0]] = (me[0], me[2], rate)

    hosts = []
    for i, h in enumerate(topo.hosts):
        sw, port, rate = host_access[h.name]
        hosts.append(
            HostPlan(
                name=h.name,
                index=i,
                ip=str(h.ip),
                prefix_len=topo.subnet.prefixlen,
                mac=host_mac(i),
                intf=f"{h.name}-eth0",
                switch=sw,
                switch_port=port,
                line_rate_bps=rate,
            )
        )
    switches = tuple(
        SwitchPlan(s.name, i, f"{i + 1:016x}", tuple(ports[s.name])) for i, s in enumerate(topo.switches)
    )
    return NetworkPlan(tuple(hosts), switches, tuple(links))


# --------------------------------------------------------------------------------------
# Loading and error reporting
# --------------------------------------------------------------------------------------

#: Fix hints by the last field name of an error path.
_FIXES: dict[str, str] = {
    "bandwidth_mbps": "give the link rate in Mbit/s (e.g. 10)",
    "delay_ms": "give the one-way delay in ms, 0 or more",
    "queue_packets": "give the egress queue depth in packets, 1 or more",
    "name": f"use a letter then letters/digits/_ , at most 8 characters (regex {NAME_PATTERN})",
    "ip": "give a dotted-quad IPv4 address inside 'subnet', or leave it out",
    "subnet": "give an IPv4 network such as 10.0.0.0/24",
    "id": f"use a job id from 0 to {MAX_JOBS - 1}",
    "ranks": "list the job's hosts in ring order, one rank per host",
    "collective": "use allreduce, allgather or reducescatter",
    "size_bytes": "give bytes per rank, a positive multiple of 4 (float32 elements)",
    "iterations": "give 1 or more iterations",
    "compute_ms": "give the compute time between collectives in ms, 0 or more",
    "slices": "give 1 or more slices per step",
    "start_offset_ms": "give the job's start offset in ms, 0 or more",
    "rate_mbps": "give the on-period sending rate in Mbit/s",
    "on_ms": "give the mean on period in ms, more than 0",
    "off_ms": "give the mean off period in ms, 0 or more",
    "start_ms": "give the start time in ms, 0 or more",
    "duration_ms": "give the duration in ms, or leave it out to run until the jobs end",
    "threshold_packets": "give the ECN marking threshold K in packets, 1 or more",
    "kmin_packets": "give the start of the ECN ramp in packets, 1 or more",
    "kmax_packets": "give the end of the ECN ramp in packets, kmin_packets or more",
    "pmax": "give the marking probability at the top of the ramp, more than 0 and at most 1",
    "lead_threshold": "give the lead threshold T in steps, 0 or more",
    "slope": "give the marking slope per step of lead, 0 or more (0.5 = 50% per step)",
    "queue_gate": "give the queue gate in packets (1 = queue non-empty, 0 = always)",
    "a": "name a host or switch declared in 'hosts' or 'switches'",
    "b": "name a host or switch declared in 'hosts' or 'switches'",
    "src": "name a host declared in 'hosts'",
    "dst": "name a host declared in 'hosts'",
}
_DEFAULT_FIX = "see docs/topology-format.md"


def _loc_to_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _fix_for(loc: tuple[Any, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str) and part in _FIXES:
            return _FIXES[part]
    return _DEFAULT_FIX


def _num(value: Any) -> str:
    """``0.0`` -> ``0``; other values as str."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model that holds the field at ``loc``."""
    model: Any = Topology
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        model = _model_of(field.annotation)
        if model is None:
            return []
    return list(model.model_fields) if hasattr(model, "model_fields") else []


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _pydantic_problem(err: Mapping[str, Any]) -> tuple[str, str | None]:
    """(problem text, fix override) for one pydantic error."""
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    loc = tuple(err.get("loc", ()))
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.75) if loc and allowed else []
        if close:
            fix = f"did you mean {close[0]!r}? (keys here: {', '.join(allowed)})"
        else:
            fix = f"remove it or use one of: {', '.join(allowed)}" if allowed else None
        return (f"unknown key {loc[-1]!r}" if loc else "unknown key", fix)
    if kind == "missing":
        return "required but missing", None
    if kind == "unit":
        return str(err.get("msg", "bad value")), str(ctx.get("fix") or "") or None
    comparisons = {
        "greater_than": (">", "gt"),
        "greater_than_equal": (">=", "ge"),
        "less_than": ("<", "lt"),
        "less_than_equal": ("<=", "le"),
    }
    if kind in comparisons:
        op, key = comparisons[kind]
        return f"must be {op} {_num(ctx.get(key))}, got {_short(value)}", None
    if kind == "string_pattern_mismatch":
        return f"{_short(value)} is not a valid name", None
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)", None
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {_short(value)}", None
    msg = str(err.get("msg", "invalid value"))
    msg = msg[0].lower() + msg[1:] if msg else msg
    if not isinstance(value, dict | list):
        msg += f", got {_short(value)}"
    return msg, None


def _node_line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its nearest existing parent)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            nxt = None
            for key, val in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    nxt = val
                    line = key.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
        if node is None:
            break
    return line


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of the YAML file names the same key twice (PyYAML keeps the last silently)."""

    def __init__(self, key: Any, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key {key!r} (line {line}, first on line {first_line})")


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (merge keys ``<<`` may repeat keys)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable: SafeLoader reports it
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise DuplicateKeyError(key, line, first)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def parse_topology(text: str, source: str = "<string>") -> Topology:
    """Validate topology YAML ``text``; ``source`` names it in errors.

    Raises :class:`TopologyError` (one line) on YAML syntax errors, duplicate keys, schema
    errors (an unknown key is reported before the missing ones it causes) and cross-check failures (unknown or duplicate names, hosts with other than one link,
    disconnected graph, duplicate IPs, job id >= MAX_JOBS, ranks outside 2..MAX_RANKS).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as exc:
        raise TopologyError(
            source, f"line {exc.line}", f"duplicate key {exc.key!r} (first on line {exc.first_line})",
            "keep one of them (YAML would silently use the last)",
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "YAML"
        raise TopologyError(
            source, where, f"YAML syntax error: {exc.problem or exc}", "fix the YAML syntax at that line"
        ) from None
    except yaml.YAMLError as exc:
        raise TopologyError(source, "YAML", f"YAML error: {exc}", "fix the YAML syntax") from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise TopologyError(
            source,
            "(top level)",
            f"expected a mapping of keys, got {got}",
            "start the file with 'name:', 'hosts:', 'switches:', 'links:'",
        )
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key (hostz:) also makes the right one missing (hosts:): name the cause first.
        err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
        loc = tuple(err.get("loc", ()))
        problem, fix = _pydantic_problem(err)
        line = _node_line(root, loc)
        if line is not None:
            problem += f" (line {line})"
        more = exc.error_count() - 1
        if more:
            problem += f" (+{more} more error{'s' if more > 1 else ''})"
        raise TopologyError(source, _loc_to_path(loc), problem, fix or _fix_for(loc)) from None

    def fail(loc: tuple[Any, ...], problem: str, fix: str) -> TopologyError:
        line = _node_line(root, loc)
        if line is not None:
            problem += f" (line {line})"
        return TopologyError(source, _loc_to_path(loc), problem, fix)

    _resolve_and_check(topo, fail)
    log.debug("loaded topology %s from %s", topo.name, source)
    return topo


def load_topology(path: str | Path) -> Topology:
    """Read and validate the topology file at ``path`` (see :func:`parse_topology`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        shipped = sorted(f.stem for f in (Path(__file__).resolve().parent.parent / "topologies").glob("*.yaml"))
        hint = f" or give a shipped name ({', '.join(shipped)})" if shipped else ""
        raise TopologyError(
            str(path), "(file)", f"cannot read: {exc.strerror or exc}", f"check the path{hint}"
        ) from None
    return parse_topology(text, source=str(path))


def _resolve_and_check(topo: Topology, fail: Any) -> None:
    """Fill defaults in place and run the cross-field checks; ``fail`` builds errors."""
    # Names: unique across hosts and switches.
    seen: dict[str, tuple[Any, ...]] = {}
    for kind, nodes in (("hosts", topo.hosts), ("switches", topo.switches)):
        for i, node in enumerate(nodes):
            if node.name in seen:
                raise fail(
                    (kind, i, "name"),
                    f"duplicate name {node.name!r}",
                    "give every host and switch its own name",
                )
            seen[node.name] = (kind, i)
    hosts = {h.name for h in topo.hosts}
    switches = {s.name for s in topo.switches}
    nodes = hosts | switches

    # Links: endpoints exist, resolve defaults, no self/duplicate links, hosts have one.
    host_links: dict[str, int] = {}
    pairs: set[frozenset[str]] = set()
    resolved = []
    for i, link in enumerate(topo.links):
        for end in ("a", "b"):
            name = getattr(link, end)
            if name not in nodes:
                raise fail(
                    ("links", i, end),
                    f"unknown node {name!r}",
                    f"name one of: {', '.join(sorted(nodes))}",
                )
        if link.a == link.b:
            raise fail(("links", i), f"link from {link.a!r} to itself", "connect two different nodes")
        if link.a in hosts and link.b in hosts:
            raise fail(
                ("links", i),
                f"link between two hosts {link.a!r} and {link.b!r}",
                "connect every host to a switch",
            )
        pair = frozenset((link.a, link.b))
        if pair in pairs:
            raise fail(
                ("links", i),
                f"second link between {link.a!r} and {link.b!r}",
                "keep one link per pair of nodes",
            )
        pairs.add(pair)
        for end in ("a", "b"):
            name = getattr(link, end)
            if name in hosts:
                if name in host_links:
                    raise fail(
                        ("links", i, end),
                        f"host {name!r} already has a link (links[{host_links[name]}])",
                        "give each host exactly one link, to a switch",
                    )
                host_links[name] = i
        resolved.append(
            link.model_copy(
                update={
                    "bandwidth_mbps": link.bandwidth_mbps
                    if link.bandwidth_mbps is not None
                    else topo.defaults.bandwidth_mbps,
                    "delay_ms": link.delay_ms if link.delay_ms is not None else topo.defaults.delay_ms,
                    "queue_packets": link.queue_packets
                    if link.queue_packets is not None
                    else topo.defaults.queue_packets,
                }
            )
        )
    topo.links = resolved
    for i, h in enumerate(topo.hosts):
        if h.name not in host_links:
            raise fail(("hosts", i, "name"), f"host {h.name!r} has no link", "add a link from it to a switch")
    ports: dict[str, int] = {}
    for link in topo.links:
        for end in (link.a, link.b):
            if end in switches:
                ports[end] = ports.get(end, 0) + 1
    for i, s in enumerate(topo.switches):
        if ports.get(s.name, 0) > 510:
            raise fail(("switches", i, "name"), f"switch {s.name!r} has more than 510 ports", "split it")

    # Connectivity (BFS from the first host).
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for link in topo.links:
        adj[link.a].add(link.b)
        adj[link.b].add(link.a)
    start = topo.hosts[0].name
    reached = {start}
    queue = deque([start])
    while queue:
        for nxt in adj[queue.popleft()]:
            if nxt not in reached:
                reached.add(nxt)
                queue.append(nxt)
    missing = sorted(nodes - reached)
    if missing:
        name = missing[0]
        loc = (
            ("hosts", [h.name for h in topo.hosts].index(name), "name")
            if name in hosts
            else ("switches", [s.name for s in topo.switches].index(name), "name")
        )
        raise fail(
            loc,
            f"not connected to {start!r} (disconnected graph; unreachable: {', '.join(missing)})",
            "add links so every node is reachable",
        )

    # IPs: explicit ones unique and inside the subnet; others get the next free address.
    net = topo.subnet
    used: dict[ipaddress.IPv4Address, int] = {}
    for i, h in enumerate(topo.hosts):
        if h.ip is None:
            continue
        if h.ip not in net or h.ip in (net.network_address, net.broadcast_address):
            raise fail(("hosts", i, "ip"), f"{h.ip} is not a host address of subnet {net}", _FIXES["ip"])
        if h.ip in used:
            raise fail(
                ("hosts", i, "ip"),
                f"duplicate IP {h.ip} (also hosts[{used[h.ip]}])",
                "give each host its own IP, or leave 'ip' out",
            )
        used[h.ip] = i
    free = (ip for ip in net.hosts() if ip not in used)
    for i, h in enumerate(topo.hosts):
        if h.ip is None:
            ip = next(free, None)
            if ip is None:
                raise fail(
                    ("hosts", i, "ip"), f"subnet {net} has no free address left", "use a larger subnet"
                )
            topo.hosts[i] = h.model_copy(update={"ip": ip})
    topo.__dict__.pop("_hosts", None)

    # A DCQCN preset brings its source's ECN ramp, in packets of this MTU, unless the file
    # sets the ramp itself.
    ecn_given = set(topo.ecn.model_fields_set)  # what the file itself gave
    if topo.dcqcn_preset is not None:
        from hostapps.ratecontrol import DCQCN_PRESETS, ecn_ramp_packets

        preset = DCQCN_PRESETS.get(topo.dcqcn_preset)
        if preset is None:
            raise fail(("dcqcn_preset",), f"unknown preset {topo.dcqcn_preset!r}",
                       f"use one of: {', '.join(sorted(DCQCN_PRESETS))}")
        if not {"threshold_packets", "kmin_packets", "kmax_packets"} & ecn_given:
            kmin, kmax = ecn_ramp_packets(preset, topo.mtu + 14)  # Ethernet header + IP MTU
            update: dict[str, Any] = {"kmin_packets": kmin, "kmax_packets": kmax}
            if "pmax" not in ecn_given:  # a pmax in the file overrides the preset's
                update["pmax"] = preset.ecn_pmax
            topo.ecn = topo.ecn.model_copy(update=update)

    # ECN ramp: threshold_packets is the shorthand for kmin = kmax. The resolved values
    # keep the set of fields the file gave (model_fields_set), which errors name.
    ecn = topo.ecn
    kmin, kmax, k = ecn.kmin_packets, ecn.kmax_packets, ecn.threshold_packets
    if k is not None:
        for key in ("kmin_packets", "kmax_packets"):
            if getattr(ecn, key) is not None:
                raise fail(("ecn", key), "given together with threshold_packets",
                           "give either threshold_packets (a step at K) or kmin_packets and kmax_packets")
        kmin = kmax = k
    elif kmin is None and kmax is None:
        kmin = kmax = k = DEFAULT_ECN_THRESHOLD_PACKETS
    elif kmin is None or kmax is None:
        missing = "kmin_packets" if kmin is None else "kmax_packets"
        raise fail(("ecn", missing), "required when the other end of the ramp is given",
                   "give both kmin_packets and kmax_packets, or threshold_packets alone")
    elif kmin > kmax:
        raise fail(("ecn", "kmax_packets"), f"must be >= kmin_packets = {kmin}, got {kmax}",
                   "give kmin_packets <= kmax_packets")
    elif kmin == kmax:
        k = kmin
    if "pmax" in ecn_given and kmin == kmax:  # pmax shapes a ramp; a step has none
        if ecn.threshold_packets is not None:
            problem = "given together with threshold_packets (a step at K has no ramp)"
        elif {"kmin_packets", "kmax_packets"} & ecn_given:
            problem = f"has no effect when kmin_packets == kmax_packets = {kmin} (a step)"
        else:
            problem = "given without a ramp (kmin_packets and kmax_packets), so it would be ignored"
        raise fail(("ecn", "pmax"), problem,
                   "give kmin_packets < kmax_packets with pmax, or leave pmax out")
    topo.ecn = EcnParams.model_construct(
        _fields_set=set(ecn.model_fields_set),
        **{**ecn.model_dump(), "kmin_packets": kmin, "kmax_packets": kmax, "threshold_packets": k},
    )

    # Jobs.
    job_ids: dict[int, int] = {}
    job_of_host: dict[str, int] = {}
    for j, job in enumerate(topo.jobs):
        if job.id >= MAX_JOBS:
            raise fail(("jobs", j, "id"), f"must be < MAX_JOBS = {MAX_JOBS}, got {job.id}", _FIXES["id"])
        if job.id in job_ids:
            raise fail(
                ("jobs", j, "id"),
                f"duplicate job id {job.id} (also jobs[{job_ids[job.id]}])",
                "give each job its own id",
            )
        job_ids[job.id] = j
        if len(job.ranks) < 2:
            raise fail(
                ("jobs", j, "ranks"), f"a ring needs at least 2 ranks, got {len(job.ranks)}", _FIXES["ranks"]
            )
        if len(job.ranks) > MAX_RANKS:
            raise fail(
                ("jobs", j, "ranks"),
                f"at most MAX_RANKS = {MAX_RANKS} ranks, got {len(job.ranks)}",
                "use fewer ranks",
            )
        for r, host in enumerate(job.ranks):
            if host not in hosts:
                what = "a switch, not a host" if host in switches else "not a declared host"
                raise fail(
                    ("jobs", j, "ranks", r),
                    f"rank {r} on {host!r}, which is {what}",
                    f"place every rank on a host from 'hosts' ({', '.join(sorted(hosts))})",
                )
            if host in job.ranks[:r]:
                raise fail(
                    ("jobs", j, "ranks", r),
                    f"host {host!r} holds two ranks of job {job.id}",
                    "place one rank per host",
                )
            other = job_of_host.get(host)
            if other is not None and other != job.id:
                raise fail(
                    ("jobs", j, "ranks", r),
                    f"host {host!r} already holds a rank of job {other}",
                    "give each job its own hosts (a host receives CTH on one UDP port, 4793)",
                )
            job_of_host[host] = job.id
        if job.size_bytes % 4:
            raise fail(
                ("jobs", j, "size_bytes"),
                f"must be a multiple of 4, got {job.size_bytes}",
                _FIXES["size_bytes"],
            )
        if job.dcqcn:
            _check_dcqcn(job.dcqcn, ("jobs", j, "dcqcn"), fail)
    if topo.dcqcn:
        _check_dcqcn(topo.dcqcn, ("dcqcn",), fail)
    # Background flows.
    for f, flow in enumerate(topo.background):
        for end in ("src", "dst"):
            name = getattr(flow, end)
            if name not in hosts:
                raise fail(
                    ("background", f, end),
                    f"unknown host {name!r}",
                    f"name one of: {', '.join(sorted(hosts))}",
                )
        if flow.src == flow.dst:
            raise fail(("background", f, "dst"), f"same as src {flow.src!r}", "send to another host")

    _check_thresholds(topo, fail)


def dcqcn_unit(name: str) -> tuple[str, Kind] | None:
    """(unit, kind) of a DCQCN parameter of ``hostapps.ratecontrol.DcqcnParams``, by its name.

    Periods and intervals (``*_period``, ``*_interval``) are in seconds, ``*_bytes`` in
    bytes, ``*_bps`` in bit/s; other parameters are dimensionless (None).
    """
    if name.endswith(("_period", "_interval")):
        return "s", "duration"
    if name.endswith("_bytes"):
        return "B", "size"
    if name.endswith("_bps"):
        return "bit/s", "rate"
    return None


def _check_dcqcn(params: dict[str, Any], loc: tuple[Any, ...], fail: Any) -> None:
    """Check DCQCN overrides against ``hostapps.ratecontrol.DcqcnParams``: names, then values.

    Values with a unit (``rate_increase_period: 5ms``) are converted in place to the
    parameter's unit (see :func:`dcqcn_unit`).
    """
    names = [f.name for f in dataclasses.fields(DcqcnParams)]
    for key in list(params):
        if key not in names:
            raise fail(loc + (key,), f"unknown DCQCN parameter {key!r}", f"use one of: {', '.join(names)}")
        unit = dcqcn_unit(key)
        value = params[key]
        if isinstance(value, str):
            if unit is None:
                raise fail(loc + (key,), f"{value!r} is not a number", "give a plain number (no unit)")
            try:
                number = to_unit(value, *unit)
            except UnitError as exc:
                raise fail(loc + (key,), exc.problem, exc.fix) from None
            params[key] = int(number) if unit[1] == "size" and number.is_integer() else number
    try:
        DcqcnParams(**params).validate()
    except Exception as exc:  # RateControlError names the field
        raise fail(loc, str(exc), "see the field docs in hostapps/ratecontrol.py") from None


def ecn_lowest_threshold(ecn: EcnParams) -> int:
    """Queue depth (packets) at which ECN starts marking: K, or Kmin of a RED-like ramp."""
    kmin = ecn.kmin_packets if ecn.kmin_packets is not None else ecn.threshold_packets
    return int(kmin if kmin is not None else DEFAULT_ECN_THRESHOLD_PACKETS)


def _ecn_loc(ecn: EcnParams) -> tuple[str, str]:
    """The field the user wrote for the lowest threshold (threshold_packets when neither)."""
    return ("ecn", "kmin_packets") if "kmin_packets" in ecn.model_fields_set else ("ecn", "threshold_packets")


def _check_thresholds(topo: Topology, fail: Any) -> None:
    """Reject marking thresholds that can never fire and DCQCN timers longer than the run.

    The traffic manager gives ``enq_qdepth`` = packets waiting ahead on arrival, at most
    depth - 1 (a packet that finds ``depth`` waiting is dropped; emu/embedded/tm.py), and the
    P4 program marks when ``enq_qdepth >= threshold``: a threshold at or above a port's
    queue depth never marks there.
    """
    shallowest = min(range(len(topo.links)), key=lambda i: topo.links[i].queue_packets or 0)
    depth = topo.links[shallowest].queue_packets
    assert depth is not None
    where = f"links[{shallowest}] ({topo.links[shallowest].a}-{topo.links[shallowest].b})"
    if topo.ecn.enabled:
        k = ecn_lowest_threshold(topo.ecn)
        loc = _ecn_loc(topo.ecn)
        default = "" if loc[1] in topo.ecn.model_fields_set else " (the default)"
        if k >= depth:
            raise fail(
                loc,
                f"ECN threshold {k} packets{default} is at or above the queue depth of {where}, {depth} packets,"
                " so ECN never marks there (a full queue drops instead)",
                f"use a threshold below {depth} packets, or deeper queues (queue_packets)",
            )
    gates: list[tuple[tuple[Any, ...], int]] = [(("symphony", "queue_gate"), topo.symphony.queue_gate)]
    for j, job in enumerate(topo.jobs):
        if job.symphony is not None and job.symphony.queue_gate is not None:
            gates.append((("jobs", j, "symphony", "queue_gate"), job.symphony.queue_gate))
    for loc, gate in gates:
        if gate >= depth:
            raise fail(
                loc,
                f"queue gate {gate} packets is at or above the queue depth of {where}, {depth} packets,"
                " so Symphony never marks there",
                f"use a gate below {depth} packets (1 = queue non-empty)",
            )
    if not topo.jobs:
        return
    from .metrics import bandwidth_bound_s  # deferred: metrics imports heavier modules
    from .routing import compute_routes

    routes = compute_routes(topo)
    for j, job in enumerate(topo.jobs):
        explicit = [(("dcqcn", k), k, v) for k, v in topo.dcqcn.items()]
        explicit += [(("jobs", j, "dcqcn", k), k, v) for k, v in (job.dcqcn or {}).items()]
        timers = [(loc, k, float(v)) for loc, k, v in explicit if dcqcn_unit(k) == ("s", "duration")]
        if not timers:
            continue
        bound = bandwidth_bound_s(
            job.collective, len(job.ranks), job.size_bytes, routes.job_bandwidth(job.id).fair_share_bps
        )
        run_s = job.iterations * bound + (job.iterations - 1) * job.compute_ms / 1000
        for loc, key, value in timers:
            if value > run_s:
                raise fail(
                    loc,
                    f"{key} = {value:g} s is longer than job {job.id}'s whole run"
                    f" ({job.iterations} iterations at the bandwidth bound: {run_s:.3g} s), so it never fires",
                    f"give it with a unit (e.g. '{key}: 5ms'); a bare number is in seconds",
                )
