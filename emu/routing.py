"""Routes and switch table entries for a topology (pure; no root, no I/O).

Routing rule, ``routing: deterministic`` (the default; destination-based because
``MyIngress.ipv4_lpm`` matches only ``hdr.ipv4.dstAddr``):

1. For each destination host d, a BFS over the switch graph from d's access switch gives
   every switch its hop distance to d (hosts never forward).
2. At switch s the equal-cost next hops toward d are the neighbour switches one hop
   closer, sorted by name: ``c[0..k-1]``.
3. s forwards d's traffic to ``c[(i * k) // H]``, where i is d's index in the file's
   ``hosts`` list and H the number of hosts ("destination blocks"): the host list is cut
   into k contiguous blocks and block j is reached through the j-th next hop. In a
   leaf-spine with hosts listed leaf by leaf and 2 spines, the first half of the hosts is
   reached via the first spine and the second half via the second, so every leaf uplink
   and spine downlink is used and placement in the file decides which flows share.

``routing: ecmp`` keeps steps 1-2 and replaces 3 by a hash (p4/include/ecmp.p4,
:mod:`emu.ecmp`): where k > 1, s's ``ipv4_lpm`` entry for d is ``ipv4_ecmp(group, seed)``,
one group per distinct set of next hops at s, and the packet's 5-tuple (src and dst IP,
UDP ports) hashed with s's seed picks one of 64 buckets that ``ecmp_nhop`` maps to a member
(a balanced table shuffled by ``ecmp_seed``). A ring flow's path is computed with the same
hash, so ``expected_flows``, the bandwidth bound and the report's flow table know where every
flow went, and different flows to one destination may take different spines (collisions).

``paths`` pins a ring flow (job, rank -> rank + 1) to a switch chain: ``MyIngress.path_pin``
(src IP, dst IP) entries on the chain's switches, applied before ``ipv4_lpm``; its ACKs
follow the routes back.

A flow's path is the chain of these next hops, so paths and forwarding tables agree.

Table entries use the control API form of docs/interfaces.md section 3
(``table, match, action, params``, fully qualified P4 names), so the runner replays
``SwitchProgram.entries`` with ``table_add`` and ``SwitchProgram.queues`` with
``set_queue``. The per-job ``expected_flows`` of ``MyIngress.symphony_config`` is the
number of the job's ring flows (rank r -> rank (r+1) % N, DATA direction) whose path
crosses the switch (docs/DESIGN.md section 4).

Marking is table data, never run-time arithmetic in the P4 (docs/DESIGN.md section 4):
``MyEgress.symphony_marking`` holds one 17-bit threshold per (job, lead) from the job's T
and slope, ``MyEgress.queue_ecn`` one per (egress port, queue-depth range) of the topology's
RED-like ECN ramp; the switch marks when a 16-bit random draw is below the threshold.
Both P4 builds take the same entries (``p4/include/*_tables.p4``); only the queue-depth
unit differs: packets on v1model, buffer cells on Tofino2 (``qdepth_unit``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from emu.control import TableEntry
from emu.p4build import P4_BUILDS, p4_build
from hostapps.collectives import lead_bound
from hostapps.spec import channel_port
from hostapps.transport import TransportConfig
from hostapps.wire import CTH_UDP_PORT, MAX_JOBS, MAX_TRACKERS, STEP_WINDOW

from . import ecmp
from .p4names import (
    ACTION_ECMP,
    ACTION_ECN,
    ACTION_FORWARD,
    ACTION_MARKING,
    ACTION_SLACK,
    ACTION_SPACING,
    ACTION_SYMPHONY,
    ACTION_TRACKER,
    MAX_QDEPTH,
    PROB_ONE,
    SCHEME_MODES,
    TABLE_ECMP,
    TABLE_LPM,
    TABLE_MARKING,
    TABLE_PATH_PIN,
    TABLE_PLACEBO,
    TABLE_QUEUE_ECN,
    TABLE_SLACK,
    TABLE_SPACING,
    TABLE_SYMPHONY,
    TABLE_TRACKER,
)
from .topology_plan import NetworkPlan, PortPlan
from .topology_schema import Topology

log = logging.getLogger(__name__)

Scheme = Literal["baseline", "symphony", "placebo"]

#: At most this many ``queue_ecn`` ranges per port, the ``d >= kmax`` range included: the
#: ramp below kmax is cut into at most ``MAX_RAMP_RANGES - 1`` equal ranges, each marked at
#: its midpoint depth's probability, so the mean over the ramp's depths is unbiased (a
#: table-size bound, as switch ASICs quantize RED profiles). 32 per port keeps a 64-port
#: switch within QUEUE_ECN_ENTRIES (2048, p4/include/constants.p4).
MAX_RAMP_RANGES = 32
#: Ethernet header ahead of every IP packet (bytes; untagged frames, as the hosts send).
ETH_HEADER_BYTES = 14


@dataclasses.dataclass(frozen=True)
class PortQueue:
    """Egress shaping of one switch port, from the attached link: what ``set_queue`` gets
    (the switch holds it as an ``emu.embedded.link.QueueConfig``)."""

    port: int
    rate_bps: float  #: service rate (bit/s)
    depth_pkts: int  #: queue depth (packets)
    delay_us: int  #: propagation delay (microseconds)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SwitchProgram:
    """Everything the runner installs on one switch."""

    switch: str
    entries: tuple[TableEntry, ...]
    queues: tuple[PortQueue, ...]
    #: job id -> expected_flows installed here (jobs with none are absent)
    expected_flows: dict[int, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "switch": self.switch,
            "entries": [e.as_dict() for e in self.entries],
            "queues": [q.as_dict() for q in self.queues],
            "expected_flows": dict(self.expected_flows),
        }


@dataclasses.dataclass(frozen=True)
class FlowPath:
    """The path of one ring flow (DATA direction) of one channel of a job."""

    job: int
    src_rank: int
    dst_rank: int
    nodes: tuple[str, ...]  #: src host, switches..., dst host
    links: tuple[int, ...]  #: index in Topology.links of each hop
    channel: int = 0  #: the job's channel (ring): UDP source port CTH_UDP_PORT + channel

    @property
    def label(self) -> str:
        """``"job:rank"``, or ``"job:rank/channel"`` for a channel after the first."""
        return f"{self.job}:{self.src_rank}" + (f"/{self.channel}" if self.channel else "")

    @property
    def src_host(self) -> str:
        return self.nodes[0]

    @property
    def dst_host(self) -> str:
        return self.nodes[-1]

    @property
    def switches(self) -> tuple[str, ...]:
        return self.nodes[1:-1]

    @property
    def hops(self) -> tuple[tuple[str, str], ...]:
        """Directed hops ``(from, to)``."""
        return tuple(zip(self.nodes[:-1], self.nodes[1:], strict=True))


@dataclasses.dataclass(frozen=True)
class JobBandwidth:
    """Bandwidth available to a job's ring flows, for the bandwidth bound (docs/DESIGN.md 7).

    ``bottleneck_bps``: min link rate over every ring-flow path (the brief's B).
    ``fair_share_bps``: min over directed hops of link rate / number of the job's ring
    flows on that hop: what each flow gets when the ring runs in lockstep, so the tight
    bound when ring flows share links (equal to ``bottleneck_bps`` when none do). With K
    channels a channel flow carries 1/K of a rank's bytes, so a hop's flows count 1/K each:
    the share is the rate a whole ring's worth of bytes gets (K channels of one rank on its
    access link: the link rate), and the bound keeps its single-ring formula.
    ``max_flows_per_hop``: most ring flows (channel flows) of the job sharing one directed hop.
    """

    job: int
    bottleneck_bps: float
    fair_share_bps: float
    max_flows_per_hop: int


@dataclasses.dataclass(frozen=True)
class EcmpGroup:
    """One ECMP group of a switch: its equal-cost next hops and the bucket table."""

    switch: str
    group: int  #: id in ``meta.ecmp_group`` (0.. per switch)
    members: tuple[PortPlan, ...]  #: next hops, sorted by peer name
    buckets: tuple[int, ...]  #: member index of each of the 64 buckets (emu.ecmp.bucket_members)
    seed: int  #: the switch's hash seed (emu.ecmp.switch_seed)


class Routes:
    """Next hops toward every host and the resulting paths (see the module docstring)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.plan: NetworkPlan = topo.plan
        #: "deterministic" or "ecmp" (the topology's routing key)
        self.routing: str = topo.routing
        ecmp_seed = topo.ecmp_seed
        #: switch -> destination host -> egress port (deterministic choice; with ECMP the
        #: port of the group's first member, for destinations that have a group)
        self.next_hop: dict[str, dict[str, PortPlan]] = {s.name: {} for s in self.plan.switches}
        #: switch -> destination host -> ECMP group (``routing: ecmp`` and k > 1 only)
        self.groups: dict[str, dict[str, EcmpGroup]] = {s.name: {} for s in self.plan.switches}
        #: switch -> (src host, dst host) -> egress port of an explicit path
        self.pins: dict[str, dict[tuple[str, str], PortPlan]] = {s.name: {} for s in self.plan.switches}
        self._compute(ecmp_seed)
        self._pin_paths()
        #: job id -> its ring flows (:meth:`ring_flows`), worked out once: they are a function of the
        #: topology and the tables above, which are complete here and never change after
        self._ring_flows: dict[int, tuple[FlowPath, ...]] = {}

    def _compute(self, ecmp_seed: int) -> None:
        plan = self.plan
        sw_ports = {s.name: s.ports for s in plan.switches}
        neighbours = {
            s: sorted({p.peer for p in ports if p.peer in sw_ports}) for s, ports in sw_ports.items()
        }
        n_hosts = len(plan.hosts)
        made: dict[str, dict[tuple[str, ...], EcmpGroup]] = {s.name: {} for s in plan.switches}
        for host in plan.hosts:
            # BFS distances to the host's access switch over switches only.
            dist = {host.switch: 0}
            queue = deque([host.switch])
            while queue:
                cur = queue.popleft()
                for nxt in neighbours[cur]:
                    if nxt not in dist:
                        dist[nxt] = dist[cur] + 1
                        queue.append(nxt)
            for sw in plan.switches:
                if sw.name == host.switch:
                    self.next_hop[sw.name][host.name] = sw.port_to(host.name)
                    continue
                if sw.name not in dist:  # cannot happen in a connected topology
                    continue
                cands = [n for n in neighbours[sw.name] if dist.get(n) == dist[sw.name] - 1]
                if self.routing == "ecmp" and len(cands) > 1:
                    key = tuple(cands)
                    group = made[sw.name].get(key)
                    if group is None:
                        gid = len(made[sw.name])
                        if gid >= ecmp.ECMP_GROUPS:
                            raise ValueError(f"switch {sw.name}: more than ECMP_GROUPS = {ecmp.ECMP_GROUPS} "
                                             "distinct sets of equal-cost next hops")
                        group = EcmpGroup(sw.name, gid, tuple(sw.port_to(c) for c in cands),
                                          tuple(ecmp.bucket_members(len(cands), ecmp_seed * 65536 + sw.index * 256 + gid)),
                                          ecmp.switch_seed(ecmp_seed, sw.index))
                        made[sw.name][key] = group
                    self.groups[sw.name][host.name] = group
                    self.next_hop[sw.name][host.name] = group.members[0]
                    continue
                choice = cands[(host.index * len(cands)) // n_hosts]
                self.next_hop[sw.name][host.name] = sw.port_to(choice)

    def _pin_paths(self) -> None:
        """Explicit paths of ``topo.paths`` (checked by the loader: a chain of linked switches
        from the source's access switch to the destination's)."""
        for pin in self.topo.paths:
            job = self.topo.job(pin.job)
            n = len(job.ranks)
            src, dst = job.ranks[pin.rank], job.ranks[(pin.rank + 1) % n]
            chain = list(pin.via) + [dst]
            for here, nxt in zip(chain[:-1], chain[1:], strict=True):
                self.pins[here][(src, dst)] = self.plan.switch(here).port_to(nxt)

    def egress(self, switch: str, src_host: str, dst_host: str, sport: int = CTH_UDP_PORT,
               dport: int = CTH_UDP_PORT) -> PortPlan:
        """The port ``switch`` sends a UDP packet src -> dst (ports ``sport``, ``dport``) out of:
        an explicit path, else the ECMP member its 5-tuple hashes to, else the route."""
        pin = self.pins[switch].get((src_host, dst_host))
        if pin is not None:
            return pin
        group = self.groups[switch].get(dst_host)
        if group is None:
            return self.next_hop[switch][dst_host]
        b = ecmp.bucket(self.plan.host(src_host).ip, self.plan.host(dst_host).ip, sport, dport, group.seed)
        return group.members[group.buckets[b]]

    def path(self, src_host: str, dst_host: str, sport: int = CTH_UDP_PORT,
             dport: int = CTH_UDP_PORT) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """(nodes, link indices) of a UDP packet from ``src_host`` to ``dst_host``."""
        src = self.plan.host(src_host)
        nodes = [src_host, src.switch]
        links = [self.plan.switch(src.switch).port_to(src_host).link_index]
        cur = src.switch
        while True:
            port = self.egress(cur, src_host, dst_host, sport, dport)
            nodes.append(port.peer)
            links.append(port.link_index)
            if port.peer == dst_host:
                break
            cur = port.peer
            if len(nodes) > len(self.plan.switches) + 2:  # pragma: no cover - defensive
                raise RuntimeError(f"routing loop from {src_host} to {dst_host}")
        return tuple(nodes), tuple(links)

    def ring_flows(self, job_id: int) -> list[FlowPath]:
        """Paths of job ``job_id``'s ring flows, rank r -> (r+1) % N, in rank order, each channel
        c (``channels``; UDP source port ``CTH_UDP_PORT + c``, hostapps.spec.channel_port) in turn.
        Computed once per job (a new list of the same frozen FlowPaths each call): every switch's
        entries read them (:meth:`expected_flows`, :func:`variant_entries`)."""
        flows = self._ring_flows.get(job_id)
        if flows is None:
            job = self.topo.job(job_id)
            n = len(job.ranks)
            out = []
            for r in range(n):
                for c in range(job.channels):
                    nodes, links = self.path(job.ranks[r], job.ranks[(r + 1) % n], channel_port(CTH_UDP_PORT, c))
                    out.append(FlowPath(job.id, r, (r + 1) % n, nodes, links, c))
            flows = self._ring_flows[job_id] = tuple(out)
        return list(flows)

    def link_load(self) -> dict[tuple[str, str], list[str]]:
        """Directed hop ``(from, to)`` -> the :attr:`FlowPath.label` of every job's ring flows on it."""
        load: dict[tuple[str, str], list[str]] = {}
        for job in self.topo.jobs:
            for flow in self.ring_flows(job.id):
                for hop in flow.hops:
                    load.setdefault(hop, []).append(flow.label)
        return load

    def flow_report(self) -> dict[str, Any]:
        """Where every ring flow went and how many share each link (summary.json ``paths``).

        ``routing`` (the mode), ``flows``: per job, rank and channel the path as node names;
        ``links``: per directed hop ``from``, ``to``, ``flows`` (ring flows on it, all jobs and
        channels), ``ring_flows`` (``"job:rank"`` labels, ``"job:rank/channel"`` for channels
        after the first), sorted by most shared first; ``max_flows_per_link``.
        Background traffic is not in it.
        """
        flows = [{"job": f.job, "rank": f.src_rank, "dst_rank": f.dst_rank, "path": list(f.nodes),
                  "channel": f.channel} for job in self.topo.jobs for f in self.ring_flows(job.id)]
        load = self.link_load()
        links = sorted(({"from": a, "to": b, "flows": len(on), "ring_flows": on}
                        for (a, b), on in load.items()), key=lambda x: (-x["flows"], x["from"], x["to"]))
        return {"routing": self.routing, "flows": flows, "links": links,
                "max_flows_per_link": max((x["flows"] for x in links), default=0)}

    def ports_in_use(self) -> dict[str, set[int]]:
        """switch -> egress ports the jobs' traffic takes: every ring flow's DATA path and its
        ACK/CNP path back (receiver to sender). What a run's per-port ``tx`` counters must show
        when no background runs (tests of the ECMP model in both modes)."""
        out: dict[str, set[int]] = {s.name: set() for s in self.plan.switches}
        for job in self.topo.jobs:
            for f in self.ring_flows(job.id):
                sport = channel_port(CTH_UDP_PORT, f.channel)  # the ACKs of channel c come from port + c too
                for a, b in ((f.src_host, f.dst_host), (f.dst_host, f.src_host)):
                    nodes, _ = self.path(a, b, sport)
                    for here, nxt in zip(nodes[1:-1], nodes[2:], strict=True):
                        out[here].add(self.plan.switch(here).port_to(nxt).port)
        return out

    def expected_flows(self) -> dict[str, dict[int, int]]:
        """switch -> job id -> ring flows of the job crossing it (only counts >= 1); each channel's
        flow counts (docs/DESIGN.md section 4: the frontier spans all of a job's channel flows)."""
        out: dict[str, dict[int, int]] = {s.name: {} for s in self.plan.switches}
        for job in self.topo.jobs:
            for flow in self.ring_flows(job.id):
                for sw in set(flow.switches):
                    out[sw][job.id] = out[sw].get(job.id, 0) + 1
        return out

    def port_flows(self, switch: str, job_id: int) -> dict[int, int]:
        """Egress port of ``switch`` -> ring flows of job ``job_id`` that leave on it (the
        ``tracker: port`` variant's expected flows; only counts >= 1)."""
        out: dict[int, int] = {}
        for flow in self.ring_flows(job_id):
            if switch in flow.switches:
                port = self.egress(switch, flow.src_host, flow.dst_host).port
                out[port] = out.get(port, 0) + 1
        return dict(sorted(out.items()))

    def hop_load(self, job_id: int) -> dict[tuple[str, str], list[int]]:
        """Directed hop ``(from, to)`` -> src ranks of the job's ring flows on it."""
        load: dict[tuple[str, str], list[int]] = {}
        for flow in self.ring_flows(job_id):
            for hop in flow.hops:
                load.setdefault(hop, []).append(flow.src_rank)
        return load

    def job_bandwidth(self, job_id: int) -> JobBandwidth:
        """Bottleneck and lockstep fair share of job ``job_id``'s ring flows (bit/s)."""
        rate = {}
        for flow in self.ring_flows(job_id):
            for hop, li in zip(flow.hops, flow.links, strict=True):
                rate[hop] = self.plan.links[li].bandwidth_bps
        load = self.hop_load(job_id)
        k = self.topo.job(job_id).channels
        return JobBandwidth(
            job=job_id,
            bottleneck_bps=min(rate.values()),
            fair_share_bps=min(rate[h] * k / len(ranks) for h, ranks in load.items()),
            max_flows_per_hop=max(len(r) for r in load.values()),
        )


def compute_routes(topo: Topology) -> Routes:
    """The routes of ``topo`` (see the module docstring for the rules)."""
    return Routes(topo)


def data_frame_bytes(mtu: int) -> int:
    """Bytes of a full DATA frame for IP MTU ``mtu``: ``mtu + 14`` (Ethernet header).

    hostapps.transport cuts a message into DATA packets of ``mss = mtu - 20 - 8 - 16``
    payload bytes (IPv4, UDP, CTH), so every DATA packet but a message's last is an
    ``mtu``-byte IP datagram (docs/tofino.md, "Queue depth in cells").
    """
    return mtu + ETH_HEADER_BYTES


@dataclasses.dataclass(frozen=True)
class QdepthUnit:
    """How a P4 build counts ``enq_qdepth``: ``cells_per_packet`` units per queued packet.

    v1model counts packets (1); T2NA counts 176-byte buffer cells, so a threshold of K
    packets becomes K * ceil(DATA frame bytes / 176) cells, the frame of the topology's
    MTU (:func:`t2na_qdepth`; docs/tofino.md).
    """

    name: str
    cells_per_packet: int

    def convert(self, packets: int) -> int:
        """``packets`` -> queue-depth units, capped at :data:`MAX_QDEPTH`."""
        return min(MAX_QDEPTH, packets * self.cells_per_packet)


V1MODEL_QDEPTH = QdepthUnit("packets", 1)


def t2na_qdepth(mtu: int) -> QdepthUnit:
    """T2NA's unit for IP MTU ``mtu`` (bytes): ceil((mtu + 14) / 176) cells per packet.

    1500 -> 1514-byte frames, 9 cells; 4096 -> 4110 bytes, 24 cells. The embedded T2NA
    build counts each queued frame the same way (emu.embedded.t2na.qdepth_cells).
    """
    tofino = P4_BUILDS["tofino"]
    return QdepthUnit(tofino.qdepth_unit, tofino.units_per_frame(data_frame_bytes(mtu)))


def qdepth_unit(p4: str, topo: Topology) -> QdepthUnit:
    """The queue-depth unit of build ``p4`` (:data:`emu.p4build.P4_BUILDS`) on ``topo`` (its
    ``mtu``): a full DATA frame's units; ValueError if the build is unknown."""
    build = p4_build(p4)
    return QdepthUnit(build.qdepth_unit, build.units_per_frame(data_frame_bytes(topo.mtu)))


#: Largest lead a marking entry is installed for: the step_count window minus one (a
#: larger lead would alias its slots; the loader rejects a job whose bound reaches it).
MAX_LEAD = STEP_WINDOW - 1


def symphony_threshold(lead: int, lead_threshold: int, slope: float) -> int:
    """Marking threshold of one lead: ``min(65536, round((lead - T) * slope * 65536))``.

    docs/DESIGN.md section 4; 0 (never) for ``lead <= T``; 65536 marks always. A positive
    product never rounds to 0, so a positive slope always marks beyond T.
    """
    if lead <= lead_threshold or slope <= 0:
        return 0
    return max(1, min(PROB_ONE, round((lead - lead_threshold) * slope * PROB_ONE)))


def _check_job(job_id: int) -> None:
    if not 0 <= job_id < MAX_JOBS:
        raise ValueError(f"job_id {job_id}: Symphony entries need 0 <= job_id < MAX_JOBS = {MAX_JOBS} "
                         "(the tracker's register arrays hold MAX_JOBS jobs)")


def marking_entries(topo: Topology, job_id: int) -> list[TableEntry]:
    """``MyEgress.symphony_marking`` entries of job ``job_id``, leads 1 to the job's lead bound.

    The bound is :func:`hostapps.collectives.lead_bound` of the job's collective, ring size
    and channels (N-1 for one ring): a larger lead cannot occur, so a job of N ranks needs
    at most that many entries, not MAX_RANKS - 1 (docs/DESIGN.md section 4). Leads whose
    threshold is 0 get no entry (a miss never marks). ValueError for a job id outside
    0..MAX_JOBS-1, as :func:`symphony_entry`.
    """
    _check_job(job_id)
    params = topo.symphony_for(job_id)
    job = topo.job(job_id)
    bound = min(lead_bound(job.collective, len(job.ranks), job.channels), MAX_LEAD)
    out = []
    for lead in range(1, bound + 1):
        threshold = symphony_threshold(lead, params.lead_threshold, params.slope)
        if threshold:
            out.append(TableEntry(table=TABLE_MARKING, match={"hdr.cth.job_id": job_id, "meta.lead": lead},
                                  action=ACTION_MARKING, params={"threshold": threshold}))
    return out


def variant_entries(topo: Topology, routes: Routes, switch: str, p4: str = "v1model") -> list[TableEntry]:
    """The variant tables of one switch (docs/DESIGN.md section 4), for every job crossing it:

    - ``tracker: port``: one ``MyIngress.symphony_tracker`` entry per (job, egress port) its ring
      flows leave on, with the flows on that port (:meth:`Routes.port_flows`) and a tracker id
      that is no job id at this switch (a job-wide tracker's id is its job id), the lowest free
      first, in job and port order;
    - ``lead: slack``: ``MyIngress.symphony_slack``, ``round(slack * size_bytes / N)`` bytes;
    - ``marking: spaced``: ``MyEgress.symphony_spacing``, the gap (``mark_gap_ms``, else the job's
      CNP interval) in ticks of the build's egress timestamp (:attr:`P4Build.timestamp_ns`), >= 1.

    Jobs on the defaults (job, step, random) get no entry. ValueError (one line) when the
    per-port trackers of the switch need more ids than MAX_TRACKERS leaves free.
    """
    build = p4_build(p4)
    out: list[TableEntry] = []
    jobs_here = sorted(routes.expected_flows()[switch])
    free = (t for t in range(MAX_TRACKERS) if t not in jobs_here)
    for job_id in jobs_here:
        _check_job(job_id)
        params = topo.symphony_for(job_id)
        job = topo.job(job_id)
        if params.tracker == "port":
            for port, flows in routes.port_flows(switch, job_id).items():
                tracker = next(free, None)
                if tracker is None:
                    raise ValueError(f"switch {switch}: tracker: port needs more than {MAX_TRACKERS - len(jobs_here)} "
                                     f"(job, egress port) trackers beside its {len(jobs_here)} job(s) "
                                     "(MAX_TRACKERS in p4/include/constants.p4)")
                out.append(TableEntry(table=TABLE_TRACKER, match={"hdr.cth.job_id": job_id, "meta.out_port": port},
                                      action=ACTION_TRACKER, params={"tracker": tracker, "flows": flows}))
        if params.lead == "slack":
            chunk = job.size_bytes // len(job.ranks)
            out.append(TableEntry(table=TABLE_SLACK, match={"hdr.cth.job_id": job_id}, action=ACTION_SLACK,
                                  params={"bytes": round(params.slack * chunk)}))
        if params.marking == "spaced":
            gap_s = (params.mark_gap_ms / 1000.0 if params.mark_gap_ms is not None
                     else float(topo.transport_for(job_id).get("cnp_interval", TransportConfig().cnp_interval)))
            ticks = max(1, round(gap_s * 1e9 / build.timestamp_ns))
            out.append(TableEntry(table=TABLE_SPACING, match={"hdr.cth.job_id": job_id}, action=ACTION_SPACING,
                                  params={"gap": min(ticks, 2**31 - 1)}))
    return out


def placebo_entries(placebo: Mapping[int, float]) -> list[TableEntry]:
    """``MyEgress.placebo_marking`` entries: per job id its marking probability (0..1).

    The threshold is ``round(p * 65536)`` (a 16-bit draw below it marks); a job whose
    probability rounds to 0 gets no entry (never marked). ValueError for a probability
    outside 0..1 or a job id outside 0..MAX_JOBS-1.
    """
    out = []
    for job_id, p in sorted(placebo.items()):
        _check_job(job_id)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"placebo probability {p!r} of job {job_id}: give 0..1")
        threshold = min(PROB_ONE, round(p * PROB_ONE))
        if threshold:
            out.append(TableEntry(table=TABLE_PLACEBO, match={"hdr.cth.job_id": job_id},
                                  action=ACTION_MARKING, params={"threshold": threshold}))
    return out


def ecn_ramp(kmin: int, kmax: int, pmax: float, *, max_ranges: int = MAX_RAMP_RANGES) -> list[tuple[int, int, int]]:
    """The RED-like ramp as ``(low, high, threshold)`` queue-depth ranges (inclusive).

    Depth d < kmin: no range (never marked). kmin <= d < kmax: probability
    ``pmax * (d - kmin) / (kmax - kmin)`` (DCQCN, SIGCOMM 2015, section 3), as a threshold
    in 1/65536; ranges whose threshold rounds to 0 are left out. d >= kmax: 65536 (always).
    kmin == kmax is a step at K. Ranges of the ramp are single depths, or ``max_ranges - 1``
    equal pieces when the ramp is longer (so at most ``max_ranges`` ranges in all), each at the probability of its midpoint depth
    ``(low + high) / 2`` (the error averages out over a piece; the lowest depth would
    bias marking down and leave the first piece unmarked).
    Units are whatever ``kmin``/``kmax`` are in (packets or cells). ValueError if kmin > kmax.
    """
    if not 0 <= kmin <= kmax:
        raise ValueError(f"ECN ramp needs 0 <= kmin <= kmax, got kmin={kmin}, kmax={kmax}")
    out = []
    span = kmax - kmin
    pieces = min(span, max_ranges - 1)
    for i in range(pieces):
        low = kmin + (span * i) // pieces
        high = kmin + (span * (i + 1)) // pieces - 1
        mid = (low + high) / 2  # a single depth is its own midpoint
        threshold = round(pmax * (mid - kmin) / span * PROB_ONE)
        if threshold:
            out.append((low, high, min(PROB_ONE, threshold)))
    out.append((min(kmax, MAX_QDEPTH), MAX_QDEPTH, PROB_ONE))
    return out


def ecn_entries(topo: Topology, port: int, unit: QdepthUnit = V1MODEL_QDEPTH) -> list[TableEntry]:
    """``MyEgress.queue_ecn`` entries of one egress port from the topology's ``ecn`` ramp.

    Range entries need a priority (P4Runtime); the ranges never overlap, so every entry
    has priority 1. Empty when ``ecn.enabled`` is false.
    """
    ecn = topo.ecn
    if not ecn.enabled:
        return []
    assert ecn.kmin_packets is not None and ecn.kmax_packets is not None  # resolved by load
    kmin, kmax = unit.convert(ecn.kmin_packets), unit.convert(ecn.kmax_packets)
    return [TableEntry(table=TABLE_QUEUE_ECN,
                       match={"meta.egress_port": port, "meta.enq_qdepth": [low, high]},
                       action=ACTION_ECN, params={"threshold": threshold}, priority=1)
            for low, high, threshold in ecn_ramp(kmin, kmax, ecn.pmax)]


def ecn_entries_per_port(topo: Topology) -> int:
    """``queue_ecn`` entries one egress port takes (:func:`ecn_entries`), the most over the P4
    builds (:data:`emu.p4build.P4_BUILDS`: the topology file does not say which one runs it, and
    T2NA's cells cut a short ramp into more ranges). 0 when ``ecn.enabled`` is false; at most
    :data:`MAX_RAMP_RANGES`. Needs the resolved ramp (the loader's ``resolve_ecn_ramp``)."""
    if not topo.ecn.enabled:
        return 0
    return max(len(ecn_entries(topo, 0, qdepth_unit(name, topo))) for name in P4_BUILDS)


def symphony_entry(topo: Topology, job_id: int, flows: int, scheme: Scheme,
                   unit: QdepthUnit = V1MODEL_QDEPTH) -> TableEntry:
    """The ``MyIngress.symphony_config`` entry of one job on one switch.

    ValueError (one line) for a job id outside 0..MAX_JOBS-1: the register arrays hold
    MAX_JOBS jobs, and both P4 builds leave such a job untracked.
    """
    _check_job(job_id)
    params = topo.symphony_for(job_id)
    return TableEntry(
        table=TABLE_SYMPHONY,
        match={"hdr.cth.job_id": job_id},
        action=ACTION_SYMPHONY,
        params={
            "flows": flows,
            "queue_gate": unit.convert(params.queue_gate),
            "mode": SCHEME_MODES[scheme],
        },
    )


def ecmp_entries(routes: Routes, switch: str) -> list[TableEntry]:
    """``MyIngress.ecmp_nhop`` entries of one switch: every bucket of every group.

    The destination MAC of a next hop that is a switch is never read (the next switch
    rewrites it), so an ECMP next hop writes the peer switch port's address.
    """
    plan = routes.plan
    out = []
    seen: set[int] = set()
    for group in routes.groups[switch].values():
        if group.group in seen:
            continue
        seen.add(group.group)
        for b, m in enumerate(group.buckets):
            port = group.members[m]
            peer_mac = (plan.switch(port.peer).port_to(switch).mac if port.peer_port is not None
                        else plan.host(port.peer).mac)
            out.append(TableEntry(table=TABLE_ECMP, match={"meta.ecmp_group": group.group, "meta.ecmp_bucket": b},
                                  action=ACTION_FORWARD,
                                  params={"srcAddr": port.mac, "dstAddr": peer_mac, "port": port.port}))
    return out


def switch_programs(topo: Topology, scheme: Scheme, routes: Routes | None = None, *,
                    p4: str = "v1model", placebo: Mapping[int, float] | None = None) -> dict[str, SwitchProgram]:
    """Per switch (file order): table entries and queue configs for ``scheme``.

    Entries, in install order: ``ipv4_lpm`` (one /32 per host, hosts in file order),
    ``queue_ecn`` (the ECN ramp of every port, when ``ecn.enabled``), ``symphony_config``
    (one per job crossing the switch; installed in both schemes so the per-job mark
    counters count, ``mode`` 0 for baseline and 1 for symphony) and ``symphony_marking``
    (that job's thresholds per lead, both schemes: the P4 marks only in symphony mode),
    then, for ``scheme`` "placebo" only, ``placebo_marking`` (per job its probability from
    ``placebo``, job id -> 0..1; a job not in it is never marked), then the variant tables of
    the jobs that pick one (:func:`variant_entries`; the placebo keeps the job's tracker, lead
    and spacing, so it differs from Symphony only in ignoring the lead).
    ``p4`` is the build (a key of :data:`emu.p4build.P4_BUILDS`): queue depths are converted to
    its unit for the topology's MTU (:func:`qdepth_unit`).
    """
    if scheme not in SCHEME_MODES:
        raise ValueError(f"unknown scheme {scheme!r}; use one of {', '.join(SCHEME_MODES)}")
    unit = qdepth_unit(p4, topo)
    routes = routes or compute_routes(topo)
    plan = routes.plan
    expected = routes.expected_flows()
    out: dict[str, SwitchProgram] = {}
    for sw in plan.switches:
        entries: list[TableEntry] = []
        for host in plan.hosts:
            group = routes.groups[sw.name].get(host.name)
            if group is not None:
                entries.append(TableEntry(table=TABLE_LPM, match={"hdr.ipv4.dstAddr": f"{host.ip}/32"},
                                          action=ACTION_ECMP, params={"group": group.group, "seed": group.seed}))
                continue
            port = routes.next_hop[sw.name][host.name]
            entries.append(
                TableEntry(
                    table=TABLE_LPM,
                    match={"hdr.ipv4.dstAddr": f"{host.ip}/32"},
                    action=ACTION_FORWARD,
                    params={"srcAddr": port.mac, "dstAddr": host.mac, "port": port.port},
                )
            )
        entries.extend(ecmp_entries(routes, sw.name))
        for (src, dst), port in sorted(routes.pins[sw.name].items()):
            entries.append(TableEntry(
                table=TABLE_PATH_PIN, match={"hdr.ipv4.srcAddr": plan.host(src).ip, "hdr.ipv4.dstAddr": plan.host(dst).ip},
                action=ACTION_FORWARD, params={"srcAddr": port.mac, "dstAddr": plan.host(dst).mac, "port": port.port}))
        for port in sw.ports:
            entries.extend(ecn_entries(topo, port.port, unit))
        for job_id, flows in sorted(expected[sw.name].items()):
            entries.append(symphony_entry(topo, job_id, flows, scheme, unit))
            entries.extend(marking_entries(topo, job_id))
            if scheme == "placebo" and placebo and job_id in placebo:
                entries.extend(placebo_entries({job_id: placebo[job_id]}))
        entries.extend(variant_entries(topo, routes, sw.name, p4))
        queues = tuple(PortQueue(p.port, p.rate_bps, p.depth_pkts, p.delay_us) for p in sw.ports)
        out[sw.name] = SwitchProgram(sw.name, tuple(entries), queues, dict(sorted(expected[sw.name].items())))
        log.debug("switch %s: %d entries, %d queues", sw.name, len(entries), len(queues))
    return out

