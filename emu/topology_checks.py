"""The cross-field checks of a topology, each a small named function, run in order by the loader.

A check takes the schema-valid :class:`~emu.topology_schema.Topology` and a ``fail`` function
(``fail(loc, problem, fix)`` returns the exception to raise; the loader makes it name the file,
the field path and its YAML line) and either raises or returns. Some checks also resolve
defaults in place (link defaults, host IPs, the ECN ramp); later checks see the resolved
values, so :data:`CHECKS` is an ordered list and the first failing check names the error.

The last check, :func:`dcqcn_timers_fire`, compares DCQCN timers with each job's run at its
bandwidth bound: it needs the routes (:mod:`emu.routing`) and the bound's formula
(:mod:`emu.metrics`), so this module sits above both, and the schema below them.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections import deque
from collections.abc import Callable
from typing import Any

from hostapps.collectives import digest_too_small, lead_bound, max_chunk_bytes
from hostapps.ratecontrol import DCQCN_PRESETS, DcqcnParams, ecn_ramp_packets
from hostapps.wire import MAX_CHUNK_BYTES, MAX_JOBS, MAX_RANKS, STEP_WINDOW

from .metrics import bandwidth_bound_s
from .p4names import QUEUE_ECN_ENTRIES
from .routing import compute_routes, ecn_entries_per_port
from .topology_schema import (
    DEFAULT_ECN_THRESHOLD_PACKETS,
    FIXES,
    EcnParams,
    Topology,
    dcqcn_unit,
    ecn_lowest_threshold,
)
from .units import UnitError, to_unit

#: ``fail(loc, problem, fix)``: the exception (a TopologyError) a check raises for the field at
#: ``loc`` (a pydantic-style path such as ``("links", 3, "bandwidth_mbps")``).
Fail = Callable[[tuple[Any, ...], str, str], Exception]
#: A check: raises ``fail(...)`` or returns (having resolved what it owns in place).
Check = Callable[[Topology, Fail], None]


def _node_names(topo: Topology) -> tuple[set[str], set[str]]:
    """(host names, switch names)."""
    return {h.name for h in topo.hosts}, {s.name for s in topo.switches}


def unique_names(topo: Topology, fail: Fail) -> None:
    """Names are unique across hosts and switches."""
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


def links_join_nodes(topo: Topology, fail: Fail) -> None:
    """Link endpoints exist; no self link, host-host link or second link per pair; a host has one link."""
    hosts, switches = _node_names(topo)
    nodes = hosts | switches
    host_links: dict[str, int] = {}
    pairs: set[frozenset[str]] = set()
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


def resolve_link_defaults(topo: Topology, fail: Fail) -> None:  # noqa: ARG001 - cannot fail
    """Every link gets its bandwidth, delay and queue depth (its own, else ``defaults``)."""
    topo.links = [
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
        for link in topo.links
    ]


def hosts_have_a_link(topo: Topology, fail: Fail) -> None:
    """Every host has a link (to a switch, by :func:`links_join_nodes`)."""
    linked = {end for link in topo.links for end in (link.a, link.b)}
    for i, h in enumerate(topo.hosts):
        if h.name not in linked:
            raise fail(("hosts", i, "name"), f"host {h.name!r} has no link", "add a link from it to a switch")


def _switch_ports(topo: Topology) -> dict[str, int]:
    """``{switch: number of its links}`` (a switch without links is absent)."""
    _, switches = _node_names(topo)
    ports: dict[str, int] = {}
    for link in topo.links:
        for end in (link.a, link.b):
            if end in switches:
                ports[end] = ports.get(end, 0) + 1
    return ports


def switch_ports_fit(topo: Topology, fail: Fail) -> None:
    """At most 510 ports per switch (``bit<9>`` port numbers; 511 is the drop port)."""
    ports = _switch_ports(topo)
    for i, s in enumerate(topo.switches):
        if ports.get(s.name, 0) > 510:
            raise fail(("switches", i, "name"), f"switch {s.name!r} has more than 510 ports", "split it")


def connected(topo: Topology, fail: Fail) -> None:
    """Every node is reachable from the first host (BFS)."""
    hosts, switches = _node_names(topo)
    nodes = hosts | switches
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


def assign_ips(topo: Topology, fail: Fail) -> None:
    """Explicit IPs are unique host addresses of ``subnet``; the others get the next free one."""
    net = topo.subnet
    used: dict[ipaddress.IPv4Address, int] = {}
    for i, h in enumerate(topo.hosts):
        if h.ip is None:
            continue
        if h.ip not in net or h.ip in (net.network_address, net.broadcast_address):
            raise fail(("hosts", i, "ip"), f"{h.ip} is not a host address of subnet {net}", FIXES["ip"])
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


def _apply_preset_ecn(topo: Topology, fail: Fail) -> None:
    """A DCQCN preset exists and brings its ECN ramp, in packets of this MTU, unless the file sets one."""
    if topo.dcqcn_preset is None:
        return
    ecn_given = set(topo.ecn.model_fields_set)  # what the file itself gave
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


def resolve_ecn_ramp(topo: Topology, fail: Fail) -> None:
    """The ECN ramp: a DCQCN preset's unless the file gives one; ``threshold_packets`` K is the
    shorthand for kmin = kmax = K (default K = 10); ``pmax`` only with a ramp.

    The errors name what the file gave (its ``model_fields_set``, taken before the preset's
    ramp is applied); the resolved values keep the fields set after it.
    """
    ecn_given = set(topo.ecn.model_fields_set)  # what the file itself gave
    _apply_preset_ecn(topo, fail)
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


def queue_ecn_fits(topo: Topology, fail: Fail) -> None:
    """Every switch's ECN ramp entries fit ``MyEgress.queue_ecn``: ports x entries per port
    (:func:`emu.routing.ecn_entries_per_port`) <= QUEUE_ECN_ENTRIES (p4/include/constants.p4),
    else programming the switch would fail with "table full" after the network started."""
    per_port = ecn_entries_per_port(topo)
    if not per_port:
        return
    ports = _switch_ports(topo)
    most = QUEUE_ECN_ENTRIES // per_port
    for i, s in enumerate(topo.switches):
        n = ports.get(s.name, 0)
        if n > most:
            raise fail(("switches", i, "name"),
                       f"switch {s.name!r} has {n} ports x {per_port} ECN ramp ranges = {n * per_port} queue_ecn "
                       f"entries, more than the P4 table's {QUEUE_ECN_ENTRIES} (QUEUE_ECN_ENTRIES, "
                       "p4/include/constants.p4)",
                       f"give it at most {most} ports, or a shorter ECN ramp (ecn.threshold_packets: one entry per port)")


def jobs_fit(topo: Topology, fail: Fail) -> None:
    """Job ids unique and < MAX_JOBS; 2..MAX_RANKS ranks, one per host, a host in one job; sizes of
    whole float32 elements; each job's DCQCN overrides, then the top level's (:func:`check_dcqcn`)."""
    hosts, switches = _node_names(topo)
    job_ids: dict[int, int] = {}
    job_of_host: dict[str, int] = {}
    for j, job in enumerate(topo.jobs):
        if job.id >= MAX_JOBS:
            raise fail(("jobs", j, "id"), f"must be < MAX_JOBS = {MAX_JOBS}, got {job.id}", FIXES["id"])
        if job.id in job_ids:
            raise fail(
                ("jobs", j, "id"),
                f"duplicate job id {job.id} (also jobs[{job_ids[job.id]}])",
                "give each job its own id",
            )
        job_ids[job.id] = j
        if len(job.ranks) < 2:
            raise fail(
                ("jobs", j, "ranks"), f"a ring needs at least 2 ranks, got {len(job.ranks)}", FIXES["ranks"]
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
                FIXES["size_bytes"],
            )
        if job.dcqcn:
            check_dcqcn(job.dcqcn, ("jobs", j, "dcqcn"), fail)
    if topo.dcqcn:
        check_dcqcn(topo.dcqcn, ("dcqcn",), fail)


def workloads_fit(topo: Topology, fail: Fail) -> None:
    """Stragglers name a rank of their job once; a straggler's ``nic_mbps`` becomes its host's
    access-link bandwidth; a ``model`` has whole buckets of whole float32 elements, no
    ``compute_ms`` beside it, and gives the job's ``size_bytes`` (bytes per bucket); a job with
    ``payload: digest`` has room for the 16-byte record in every slice."""
    link_of = {name: i for i, link in enumerate(topo.links) for name in (link.a, link.b)}
    for j, job in enumerate(topo.jobs):
        seen: set[int] = set()
        for s, st in enumerate(job.stragglers):
            if st.rank >= len(job.ranks):
                raise fail(("jobs", j, "stragglers", s, "rank"),
                           f"job {job.id} has ranks 0..{len(job.ranks) - 1}, got {st.rank}", "name a rank of the job")
            if st.rank in seen:
                raise fail(("jobs", j, "stragglers", s, "rank"), f"rank {st.rank} is listed twice",
                           "give each slow rank one entry")
            seen.add(st.rank)
            if st.nic_mbps is not None:
                i = link_of[job.ranks[st.rank]]
                topo.links[i] = topo.links[i].model_copy(update={"bandwidth_mbps": st.nic_mbps})
        m = job.model
        if m is None:
            continue
        if job.compute_ms:
            raise fail(("jobs", j, "compute_ms"), "a job with a 'model' takes its compute from the model",
                       "leave compute_ms out (the model's forward_ms and reduction set the compute)")
        if m.layers % m.bucket_layers:
            raise fail(("jobs", j, "model", "bucket_layers"),
                       f"{m.layers} layers do not make whole buckets of {m.bucket_layers}",
                       "use a bucket_layers that divides layers")
        if m.layer_bytes % 4:
            raise fail(("jobs", j, "model", "layer_bytes"), f"must be a multiple of 4, got {m.layer_bytes}",
                       FIXES["size_bytes"])
        topo.jobs[j] = job.model_copy(update={"size_bytes": m.layer_bytes * m.bucket_layers})
    for j, job in enumerate(topo.jobs):
        why = job.payload == "digest" and digest_too_small(job.size_bytes // 4, len(job.ranks), job.slices)
        if why:
            raise fail(("jobs", j, "payload"), why, f"give size_bytes of at least {16 * len(job.ranks) * job.slices} "
                       "bytes, fewer slices, or payload: exact")


def chunks_fit(topo: Topology, fail: Fail) -> None:
    """Every step chunk (``size_bytes`` over the ring's ranks) is below 16 MiB: the CTH carries a
    payload's byte offset in its chunk in 24 bits (docs/DESIGN.md section 3)."""
    for j, job in enumerate(topo.jobs):
        problem = chunk_problem(job.size_bytes, len(job.ranks), job.channels)
        if problem is not None:
            field = ("jobs", j, "model", "layer_bytes") if job.model is not None else ("jobs", j, "size_bytes")
            raise fail(field, problem, "use a smaller size, more ranks or more channels")


def channels_fit(topo: Topology, fail: Fail) -> None:
    """A job of several channels runs an exact all-reduce, and its lead bound
    (:func:`hostapps.collectives.lead_bound`) stays below the switches' step window."""
    for j, job in enumerate(topo.jobs):
        if job.channels == 1:
            continue
        if job.collective != "allreduce" or job.payload != "exact":
            raise fail(("jobs", j, "channels"),
                       f"{job.channels} channels need collective allreduce and payload exact, got "
                       f"{job.collective} and {job.payload}", "use channels: 1 for this job")
        bound = lead_bound(job.collective, len(job.ranks), job.channels)
        if bound >= STEP_WINDOW:
            raise fail(("jobs", j, "channels"),
                       f"{job.channels} channels over {len(job.ranks)} ranks can lead by {bound} steps, not "
                       f"below the switches' step window STEP_WINDOW = {STEP_WINDOW}",
                       "use channels: 1, or at most 683 ranks for an all-reduce over channels")


def chunk_problem(size_bytes: int, nranks: int, channels: int = 1) -> str | None:
    """One line why a job of ``size_bytes`` per rank over ``nranks`` ranks cannot travel in the
    CTH (a chunk of 16 MiB or more), else None (:func:`hostapps.collectives.max_chunk_bytes`)."""
    chunk = max_chunk_bytes(size_bytes, nranks, channels)
    if chunk <= MAX_CHUNK_BYTES:
        return None
    over = f"{nranks} ranks" if channels == 1 else f"{nranks} ranks and {channels} channels"
    return (f"a step chunk of {chunk} bytes ({size_bytes} bytes over {over}) must be below 16 MiB "
            f"(the CTH's 24-bit offset)")


def background_hosts(topo: Topology, fail: Fail) -> None:
    """A background flow runs between two different declared hosts."""
    hosts, _ = _node_names(topo)
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


def check_dcqcn(params: dict[str, Any], loc: tuple[Any, ...], fail: Fail) -> None:
    """Check DCQCN overrides against ``hostapps.ratecontrol.DcqcnParams``: names, then values.

    Values with a unit (``rate_increase_period: 5ms``) are converted in place to the
    parameter's unit (see :func:`emu.topology_schema.dcqcn_unit`).
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


def _shallowest_link(topo: Topology) -> tuple[int, str]:
    """(queue depth in packets, ``links[i] (a-b)``) of the link with the shallowest queue."""
    shallowest = min(range(len(topo.links)), key=lambda i: topo.links[i].queue_packets or 0)
    depth = topo.links[shallowest].queue_packets
    assert depth is not None
    return depth, f"links[{shallowest}] ({topo.links[shallowest].a}-{topo.links[shallowest].b})"


def _ecn_loc(ecn: EcnParams) -> tuple[str, str]:
    """The field the user wrote for the lowest threshold (threshold_packets when neither)."""
    return ("ecn", "kmin_packets") if "kmin_packets" in ecn.model_fields_set else ("ecn", "threshold_packets")


def ecn_can_mark(topo: Topology, fail: Fail) -> None:
    """The ECN threshold is below the shallowest queue depth, so ECN can mark there.

    The traffic manager gives ``enq_qdepth`` = packets waiting ahead on arrival, at most
    depth - 1 (a packet that finds ``depth`` waiting is dropped; emu/embedded/tm.py), and the
    P4 program marks when ``enq_qdepth >= threshold``: a threshold at or above a port's
    queue depth never marks there.
    """
    if not topo.ecn.enabled:
        return
    depth, where = _shallowest_link(topo)
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


def symphony_can_mark(topo: Topology, fail: Fail) -> None:
    """Every Symphony queue gate is below the shallowest queue depth (see :func:`ecn_can_mark`)."""
    depth, where = _shallowest_link(topo)
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


def dcqcn_timers_fire(topo: Topology, fail: Fail) -> None:
    """A DCQCN timer the file gives is not longer than its job's whole run at the bandwidth bound.

    The run is ``iterations`` collectives at :func:`emu.metrics.bandwidth_bound_s` of the job's
    fair share (:meth:`emu.routing.Routes.job_bandwidth`) plus the compute gaps between them;
    a longer timer (most often a bare number meant in ms) never fires.
    """
    if not topo.jobs:
        return
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


def step_timeout_covers_paths(topo: Topology, fail: Fail) -> None:
    """Each job's ``step_timeout_s`` is longer than the one-way propagation delay of every ring
    flow's path (the sum of its links' ``delay_ms``): the first data of a step cannot arrive
    sooner, so a shorter timeout fails every run at its first step.

    When the delays of all links together are below every job's timeout, no path can reach it
    and the routes are not computed (the shipped topologies; routing 1,024 ranks takes seconds).
    """
    if not topo.jobs:
        return
    total_s = sum(link.delay_ms for link in topo.links) / 1000.0
    if total_s < min(job.step_timeout_s for job in topo.jobs):
        return
    routes = compute_routes(topo)
    for j, job in enumerate(topo.jobs):
        for flow in routes.ring_flows(job.id):
            delay_s = sum(topo.links[i].delay_ms for i in flow.links) / 1000.0
            if delay_s >= job.step_timeout_s:
                raise fail(
                    ("jobs", j, "step_timeout_s"),
                    f"step_timeout_s = {job.step_timeout_s:g} s is not longer than the one-way delay"
                    f" {delay_s:g} s of ring flow {flow.label} ({' -> '.join(flow.nodes)}), so no step"
                    " can receive data in time",
                    f"give step_timeout_s above {delay_s:g} s plus a step's sending time (the default is"
                    " 10 s), or shorter link delays",
                )


def explicit_paths_valid(topo: Topology, fail: Fail) -> None:
    """Each explicit path (``paths``) names a job's ring flow once and is a loop-free chain of
    linked switches from the sender's access switch to the receiver's."""
    switches = {s.name for s in topo.switches}
    linked = {frozenset((link.a, link.b)) for link in topo.links}
    access = {link.a if link.b in switches else link.b: link.b if link.b in switches else link.a
              for link in topo.links if (link.a in switches) != (link.b in switches)}
    jobs = {job.id: job for job in topo.jobs}
    seen: set[tuple[int, int]] = set()
    for p, pin in enumerate(topo.paths):
        job = jobs.get(pin.job)
        if job is None:
            raise fail(("paths", p, "job"), f"no job {pin.job}",
                       f"name one of: {', '.join(map(str, sorted(jobs))) or '(no jobs)'}")
        n = len(job.ranks)
        if pin.rank >= n:
            raise fail(("paths", p, "rank"), f"job {job.id} has ranks 0..{n - 1}, got {pin.rank}",
                       "name the sending rank of a ring flow")
        if (pin.job, pin.rank) in seen:
            raise fail(("paths", p), f"second path for job {pin.job} rank {pin.rank}", "give each flow one path")
        seen.add((pin.job, pin.rank))
        src, dst = job.ranks[pin.rank], job.ranks[(pin.rank + 1) % n]
        for v, name in enumerate(pin.via):
            if name not in switches:
                raise fail(("paths", p, "via", v), f"{name!r} is not a switch", "list switches only")
        if pin.via[0] != access[src] or pin.via[-1] != access[dst]:
            raise fail(("paths", p, "via"),
                       f"the flow {src} -> {dst} enters at {access[src]!r} and leaves at {access[dst]!r}",
                       f"start the path at {access[src]!r} and end it at {access[dst]!r}")
        for v, (a, b) in enumerate(zip(pin.via[:-1], pin.via[1:], strict=True)):
            if frozenset((a, b)) not in linked:
                raise fail(("paths", p, "via", v + 1), f"no link between {a!r} and {b!r}",
                           "list switches that are linked one to the next")
        if len(set(pin.via)) != len(pin.via):
            raise fail(("paths", p, "via"), "a switch appears twice (a loop)", "give a loop-free path")


#: The checks in the order the loader runs them (the first failing one names the error).
CHECKS: tuple[Check, ...] = (
    unique_names,
    links_join_nodes,
    resolve_link_defaults,
    hosts_have_a_link,
    switch_ports_fit,
    connected,
    assign_ips,
    resolve_ecn_ramp,
    queue_ecn_fits,
    jobs_fit,
    workloads_fit,
    chunks_fit,
    channels_fit,
    background_hosts,
    explicit_paths_valid,
    ecn_can_mark,
    symphony_can_mark,
    dcqcn_timers_fire,
    step_timeout_covers_paths,
)


def run_checks(topo: Topology, fail: Fail) -> None:
    """Run :data:`CHECKS` in order on ``topo`` (resolving defaults in place); raises ``fail(...)``."""
    for check in CHECKS:
        check(topo, fail)
