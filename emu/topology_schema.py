"""Topology schema: the pydantic models of a YAML scenario file (docs/topology-format.md).

A topology file (``topologies/*.yaml``) names the hosts, switches and links of an emulated
network, the ring-collective jobs placed on its hosts, on/off background flows, and the ECN,
Symphony and DCQCN parameters. The models here check each field alone (pydantic v2,
``extra='forbid'`` everywhere); the cross-field checks and the resolution of defaults are
:mod:`emu.topology_checks`, run by the loader :mod:`emu.topology`, which returns a
:class:`Topology` with every default resolved: each link has its bandwidth, delay and queue
depth, each host its IP (docs/DESIGN.md section 6).
"""

from __future__ import annotations

import ipaddress
import math
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, Strict
from pydantic_core import PydanticCustomError

from hostapps.ratecontrol import DCQCN_PRESETS, DcqcnPreset
from hostapps.wire import MAX_CHANNELS, MAX_JOBS

from .topology_plan import NetworkPlan, build_plan
from .units import Bytes, Kind, Mbps, Milliseconds, Seconds

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,7}$"

#: Plausible ranges (a larger value is a typo, or a unit forgotten): 10 Tbit/s, a 10 s
#: one-way delay, an hour for any other time, 100,000 iterations.
MAX_RATE_MBPS = 1e7
MAX_DELAY_MS = 10_000.0
MAX_TIME_MS = 3_600_000.0
MAX_ITERATIONS = 100_000
#: Largest time dilation D (the scenario's ``dilation`` and ``--dilation``): 100 Gbit/s becomes 100 kbit/s.
MAX_DILATION = 1e6

def _dilation(value: Any) -> Any:
    """``auto`` or a finite number 1..:data:`MAX_DILATION` (one error naming the field, not one per union member)."""
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("unit", f"expected a number >= 1 or 'auto', got {value!r}",
                                  {"fix": "give D >= 1 (1 = the scenario's own rates) or auto"})
    if not (math.isfinite(value) and 1 <= value <= MAX_DILATION):
        raise PydanticCustomError("unit", f"must be a number 1..{MAX_DILATION:g} or auto, got {value!r}",
                                  {"fix": "give D >= 1 (1 = the scenario's own rates) or auto"})
    return float(value)


#: Time dilation D: a number 1..1e6, or ``auto`` (emu.runner.choose_dilation).
Dilation = Annotated[float | Literal["auto"], BeforeValidator(_dilation)]

#: A count: a whole number, never a bool or a float (lax pydantic reads ``true`` as 1, ``2.0`` as 2).
Count = Annotated[int, Strict()]
#: A plain number: an int or a float, never a bool; finite where a Field says allow_inf_nan=False.
Number = Annotated[float, Strict()]

Collective = Literal["allreduce", "allgather", "reducescatter"]
#: What the ranks' buffers carry (hostapps.collectives.PAYLOADS).
Payload = Literal["exact", "digest"]

#: ECN step K (packets) when the topology sets neither threshold_packets nor a ramp.
DEFAULT_ECN_THRESHOLD_PACKETS = 10


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LinkDefaults(_Model):
    """Values for links that do not set their own."""

    #: Link rate (Mbit/s, or a value with a unit: ``100Gbit/s``), both directions.
    bandwidth_mbps: Mbps = Field(10.0, gt=0, le=MAX_RATE_MBPS)
    #: One-way propagation delay (ms, or a value with a unit: ``2us``), applied at switch egress.
    delay_ms: Milliseconds = Field(0.1, ge=0, le=MAX_DELAY_MS)
    #: Egress queue depth of a switch port onto this link (packets).
    queue_packets: Count = Field(64, ge=1, lt=2**19)


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
    bandwidth_mbps: Mbps | None = Field(None, gt=0, le=MAX_RATE_MBPS)
    #: One-way delay (ms, or with a unit).
    delay_ms: Milliseconds | None = Field(None, ge=0, le=MAX_DELAY_MS)
    #: Egress queue depth at the switch end(s) (packets).
    queue_packets: Count | None = Field(None, ge=1, lt=2**19)


#: Tracker variant (docs/DESIGN.md section 4): one frontier per job at a switch (``job``), or one
#: per (job, egress port) over the job's ring flows that leave on that port (``port``).
Tracker = Literal["job", "port"]
#: Lead variant: steps ahead of the frontier (``step``), or the same with the first ``slack``
#: of a step's chunk counted as one step less (``slack``: a flow just into the next step is
#: pipelining, one deep into it has slack).
LeadKind = Literal["step", "slack"]
#: Marking variant: each packet the curve draws is marked (``random``), or at most one per flow
#: per ``mark_gap_ms`` (``spaced``: marks spread to the CNP interval, so DCQCN sees a steady
#: stream of CNPs however fast the flow sends).
Marking = Literal["random", "spaced"]


class SymphonyOverride(_Model):
    """Per-job Symphony parameters; unset fields use the top-level ``symphony``."""

    lead_threshold: Count | None = Field(None, ge=0, le=0xFFFF)
    slope: Number | None = Field(None, ge=0, allow_inf_nan=False)
    queue_gate: Count | None = Field(None, ge=0, lt=2**19)
    tracker: Tracker | None = None
    lead: LeadKind | None = None
    slack: Number | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    marking: Marking | None = None
    mark_gap_ms: Milliseconds | None = Field(None, gt=0, le=1000)


class SymphonyParams(_Model):
    """Symphony marking parameters (docs/DESIGN.md section 4).

    Mark probability ``min(1, (lead - lead_threshold) * slope)`` when
    ``lead > lead_threshold`` and the egress queue holds at least ``queue_gate`` packets.
    ``tracker``, ``lead`` (with ``slack``) and ``marking`` (with ``mark_gap_ms``) pick the
    variants of section 4; the P4 program holds all of them, table entries select.
    """

    #: T, lead (steps) tolerated before marking. Default 1: a ring's pipeline has one step of
    #: lead by itself (a rank starts step s+1 as soon as its chunk of step s arrived), so
    #: T = 0 marks flows that are merely in pipeline order; on single.yaml (no shared link,
    #: nothing to align) T = 0 made 213 marks and 1.02 [1.00, 1.04] of the baseline's mean
    #: CCT, T = 1 none and 1.00 [0.98, 1.02] (20 iterations, docs/results.md). Scenarios
    #: whose flows share links set T = 0 themselves (default.yaml, dumbbell.yaml).
    lead_threshold: Count = Field(1, ge=0, le=0xFFFF)
    #: Mark probability per step of lead beyond T (0..1 meaningful; larger saturates).
    slope: Number = Field(0.25, ge=0, allow_inf_nan=False)
    #: Minimum egress queue depth (packets) for a Symphony mark; 1 = queue non-empty.
    queue_gate: Count = Field(1, ge=0, lt=2**19)
    #: Tracker variant: ``job`` (one frontier per job and switch) or ``port`` (per egress port).
    tracker: Tracker = "job"
    #: Lead variant: ``step`` or ``slack`` (the first ``slack`` of a step ahead counts one less).
    lead: LeadKind = "step"
    #: Fraction of a step's chunk (``size_bytes / N``) a flow ahead may send before ``lead:
    #: slack`` counts its full lead (0..1).
    slack: Number = Field(0.5, ge=0, le=1, allow_inf_nan=False)
    #: Marking variant: ``random`` (every draw below the curve marks) or ``spaced``.
    marking: Marking = "random"
    #: ``marking: spaced``: least time between two marks of one flow (ms, or with a unit,
    #: ``4us``); unset: the job's CNP interval (the transport's ``cnp_interval``).
    mark_gap_ms: Milliseconds | None = Field(None, gt=0, le=1000)

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
    threshold_packets: Count | None = Field(None, ge=1, lt=2**19)
    #: Start of the ramp (packets): below it no queue mark.
    kmin_packets: Count | None = Field(None, ge=1, lt=2**19)
    #: End of the ramp (packets): at or above it every ECT packet is marked.
    kmax_packets: Count | None = Field(None, ge=1, lt=2**19)
    #: Marking probability reached at the top of the ramp (just below kmax).
    pmax: Number = Field(1.0, gt=0, le=1)


class StragglerSpec(_Model):
    """One slow rank of a job: its NIC rate, or its compute, or both.

    ``nic_mbps`` sets the access link of the rank's host (the host's line rate and the switch
    port towards it). ``compute_factor`` multiplies and ``compute_delay_ms`` adds to the rank's
    compute before each collective (a training iteration's with ``model``, else
    ``compute_ms``); a delay makes a straggler even without compute. ``every`` n: only
    iterations n-1, 2n-1, ... (1 = always); ``probability`` p < 1: each such iteration at
    random with probability p, drawn from the run's seed (the same in both modes).
    """

    rank: int = Field(ge=0)
    nic_mbps: Mbps | None = Field(None, gt=0)
    compute_factor: float = Field(1.0, ge=1)
    compute_delay_ms: Milliseconds = Field(0.0, ge=0)
    every: int = Field(1, ge=1)
    probability: float = Field(1.0, gt=0, le=1)


class ModelSpec(_Model):
    """A transformer-like training job (the paper's Figure 6): per iteration a forward pass,
    then a backward pass that makes one gradient bucket every ``bucket_layers`` layers, last
    layers first; each bucket's all-reduce starts when the bucket is ready and the previous
    one is done (one communication stream, as NCCL's), overlapping the rest of the backward.

    Compute per iteration: ``forward_ms * (1 + backward_ratio) / reduction`` (the paper's
    computation-reduction ratio, 1x..64x: faster compute, more exposed communication). Each
    bucket all-reduces ``layer_bytes * bucket_layers`` bytes per rank (the job's ``size_bytes``
    is derived; ``iterations`` counts training iterations).
    """

    layers: int = Field(ge=1, le=4096)
    #: Gradient bytes per layer per rank (float32, a multiple of 4; or with a unit).
    layer_bytes: Bytes = Field(gt=0)
    bucket_layers: int = Field(1, ge=1)
    #: Forward pass of the whole model at reduction 1 (ms, or with a unit).
    forward_ms: Milliseconds = Field(gt=0)
    backward_ratio: float = Field(2.0, ge=0)
    reduction: float = Field(1.0, ge=1, le=1024)

    @property
    def buckets(self) -> int:
        """Gradient buckets (all-reduces) per iteration: ceil(layers / bucket_layers)."""
        return -(-self.layers // self.bucket_layers)


class JobSpec(_Model):
    """A ring collective: rank i runs on host ``ranks[i]``, sends to rank (i+1) % N."""

    id: Count = Field(ge=0)
    ranks: list[str]
    collective: Collective = "allreduce"
    #: Bytes per rank per iteration (float32 elements, so a multiple of 4; or ``256KiB``).
    size_bytes: Bytes = Field(262_144, gt=0)
    iterations: Count = Field(5, ge=1, le=MAX_ITERATIONS)
    #: Iterations each block of a scheme runs first and leaves out of the statistics
    #: (recorded with ``"warmup": true``; emu.runner.plan_blocks): the workers' start costs
    #: every block alike.
    warmup: Count = Field(1, ge=0, le=100)
    #: Compute time between collectives (ms, or with a unit); JCT includes it.
    compute_ms: Milliseconds = Field(0.0, ge=0, le=MAX_TIME_MS)
    #: NCCL-style slices per step chunk.
    slices: Count = Field(1, ge=1, le=1024)
    #: ``exact``: float32 data, verified against the float64 sum; ``digest``: the same packets,
    #: each slice a 16-byte (sum, count) record of the ranks' tokens, verified exactly, so a
    #: rank's memory does not grow with ``size_bytes`` (hostapps.collectives.DigestRingCollective).
    payload: Payload = "exact"
    #: NCCL-style channels: each collective's buffer is split over this many independent rings,
    #: channel c on UDP source port 4793 + c, so ECMP can hash the channels apart; the collective
    #: ends when every channel has (exact all-reduce only; hostapps.collectives.ChannelCollective).
    channels: Count = Field(1, ge=1, le=MAX_CHANNELS)
    #: Delay of this job's start after the run's common start (ms, or with a unit).
    start_offset_ms: Milliseconds = Field(0.0, ge=0, le=MAX_TIME_MS)
    #: A step waiting longer than this for data fails the job (s, or with a unit).
    step_timeout_s: Seconds = Field(10.0, gt=0, le=MAX_TIME_MS / 1000)
    symphony: SymphonyOverride | None = None
    #: DCQCN parameter overrides for this job (names of hostapps.ratecontrol.DcqcnParams;
    #: periods in s or with a unit, ``5ms``; converted to numbers when loaded).
    dcqcn: dict[str, float | int | bool | str] | None = None
    #: Slow ranks (NIC rate, compute).
    stragglers: list[StragglerSpec] = []
    #: A transformer-like training workload (compute with gradient buckets); replaces compute_ms.
    model: ModelSpec | None = None

    @property
    def collectives_per_iteration(self) -> int:
        """Collectives of one (training) iteration: the model's gradient buckets, else 1."""
        return self.model.buckets if self.model is not None else 1


class PathSpec(_Model):
    """An explicit path of one ring flow (job ``job``, rank ``rank`` -> rank + 1): the switches
    it crosses, from the sender's access switch to the receiver's (MyIngress.path_pin)."""

    job: int = Field(ge=0)
    rank: int = Field(ge=0)
    via: list[str] = Field(min_length=1)


class FlowSpec(_Model):
    """On/off UDP background traffic (Not-ECT, UDP port 5001)."""

    src: str
    dst: str
    #: Sending rate while on (Mbit/s, or with a unit).
    rate_mbps: Mbps = Field(gt=0, le=MAX_RATE_MBPS)
    #: Mean on period (ms, or with a unit).
    on_ms: Milliseconds = Field(gt=0, le=MAX_TIME_MS)
    #: Mean off period (ms, or with a unit); 0 = always on.
    off_ms: Milliseconds = Field(0.0, ge=0, le=MAX_TIME_MS)
    #: Start after the run's common start (ms, or with a unit).
    start_ms: Milliseconds = Field(0.0, ge=0, le=MAX_TIME_MS)
    #: How long the source runs (ms, or with a unit); None = until the jobs end.
    duration_ms: Milliseconds | None = Field(None, gt=0, le=MAX_TIME_MS)
    #: Exponentially distributed on/off periods (mean on_ms/off_ms) instead of fixed.
    exponential: bool = False
    #: UDP payload per packet (bytes).
    packet_bytes: Count = Field(1200, ge=16, le=1472)


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
    #: ``deterministic`` (destination blocks, emu.routing) or ``ecmp`` (a hash of the 5-tuple
    #: picks among equal-cost next hops, p4/include/ecmp.p4).
    routing: Literal["deterministic", "ecmp"] = "deterministic"
    #: Seed of the ECMP bucket tables (``routing: ecmp``): another seed, other collisions.
    ecmp_seed: int = Field(0, ge=0, lt=2**32)
    #: Explicit paths of ring flows, ahead of ``routing``.
    paths: list[PathSpec] = []
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
    mtu: Count = Field(1500, ge=576, le=9000)
    #: Time dilation D that ``--mode mininet`` uses for this scenario when ``--dilation`` is
    #: not given: link rates / D, delays and host timers * D (emu.dilation, docs/virtual-time.md);
    #: ``auto``: the smallest D at which this machine keeps up (emu.runner.choose_dilation).
    dilation: Dilation = 1.0
    #: Host processing time in virtual time (emu.vtime.hostcost, docs/virtual-time.md): the
    #: path of a calibration file written by ``symphony-emu calibrate-host`` (relative to this
    #: file), or the model's fields inline; unset: hosts process in zero time (data-centre
    #: hosts). ``--mode mininet`` ignores it (its hosts are real).
    host_cost: str | dict[str, float] | None = None

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
    def preset(self) -> DcqcnPreset | None:
        """The :class:`hostapps.ratecontrol.DcqcnPreset` named by ``dcqcn_preset``, or None."""
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


def ecn_lowest_threshold(ecn: EcnParams) -> int:
    """Queue depth (packets) at which ECN starts marking: K, or Kmin of a RED-like ramp."""
    kmin = ecn.kmin_packets if ecn.kmin_packets is not None else ecn.threshold_packets
    return int(kmin if kmin is not None else DEFAULT_ECN_THRESHOLD_PACKETS)


#: Fix hints by the last field name of an error path.
FIXES: dict[str, str] = {
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
    "payload": "use exact or digest",
    "channels": f"give 1 to {MAX_CHANNELS} channels (MAX_CHANNELS, hostapps/wire.py)",
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
DEFAULT_FIX = "see docs/topology-format.md"
