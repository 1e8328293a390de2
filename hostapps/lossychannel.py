"""A lossy test channel for :class:`hostapps.transport.Transport` cores (no switch model).

The cores take ``now`` and own no socket, so tests run transports and collectives over
faulty links in one process: loss, duplication, reordering, tail drop. A :class:`LossyChannel` holds
nodes (one transport each, optionally with an application such as
:class:`hostapps.collectives.RingCollective`) and links. It has no ECN marking and no
Symphony logic: the virtual-time mode of the emulator (:mod:`emu.vtime`, docs/DESIGN.md
section 6) runs the P4 switches themselves, so marking exists only in ``p4/symphony.p4``.
Nor is it the emulator's link model (:class:`emu.embedded.link.FifoLink`, which both modes'
switch ports and the virtual-time host NIC use) or its event loop (:mod:`emu.vtime.network`):
``hostapps`` imports nothing of ``emu``, and a channel that loses, duplicates and reorders
packets in float seconds is a test fixture, not a mode.

A packet from node A to node B crosses the links of the route (A, B) in order (by
default one private link per ordered pair, built from ``default_link``). At each link:

1. it is lost with probability ``loss``;
2. it is dropped when ``queue_packets`` packets are already queued or in service;
3. it is duplicated with probability ``duplicate`` (the copy queues right behind it);
4. it is served FIFO at ``rate_bps`` (``len(datagram) + wire_overhead_bytes`` bytes),
   then propagates for ``delay`` s, plus, with probability ``reorder``, an extra delay
   uniform in [0, ``reorder_delay``] that lets later packets overtake it.

Randomness comes from one ``random.Random`` per link seeded by ``(seed, link name)``,
so a run is a function of the seed. Time is float seconds from 0.

Application protocol (duck-typed, :class:`App`): ``on_delivery(d, now)``,
``poll(now) -> [request]`` where each request has ``dst_rank, step, offset, payload,
last`` and ``next_timer() -> float | None``. Nodes without an app collect deliveries in
``Node.delivered``.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hostapps.transport import Delivery, Outgoing, Transport

logger = logging.getLogger(__name__)

NodeKey = tuple[int, int]  # (job_id, rank)


class ChannelError(RuntimeError):
    """A simulation set-up mistake (duplicate node, unknown destination, runaway loop)."""


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """One direction of a link; rates in bit/s, times in seconds, sizes in packets."""

    #: Serialization rate (bit/s).
    rate_bps: float = 10_000_000.0
    #: One-way propagation delay (s).
    delay: float = 0.0005
    #: Probability that a packet is lost (0..1).
    loss: float = 0.0
    #: Probability that a packet is duplicated (0..1).
    duplicate: float = 0.0
    #: Probability that a packet gets an extra delay (0..1).
    reorder: float = 0.0
    #: Largest extra delay of a reordered packet (s), drawn uniformly.
    reorder_delay: float = 0.002
    #: Tail-drop limit: packets queued or in service (None: unbounded).
    queue_packets: int | None = None
    #: Bytes added to each UDP payload on the wire: Ethernet 14 + IPv4 20 + UDP 8.
    wire_overhead_bytes: int = 42

    def __post_init__(self) -> None:
        for name in ("loss", "duplicate", "reorder"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"LinkConfig.{name}={p!r} must be a probability in [0, 1]")
        if self.rate_bps <= 0:
            raise ValueError(f"LinkConfig.rate_bps={self.rate_bps!r} must be > 0")
        if self.delay < 0 or self.reorder_delay < 0:
            raise ValueError("LinkConfig.delay and reorder_delay must be >= 0 s")


@dataclass(slots=True)
class ChannelPacket:
    """A datagram in flight: source and destination node, UDP payload and IP ECN bits."""

    src: NodeKey
    dst: NodeKey
    datagram: bytes
    ecn: int


class Link:
    """A FIFO queue with a server at ``config.rate_bps`` and a propagation delay."""

    def __init__(self, name: str, config: LinkConfig, seed: int) -> None:
        self.name = name
        self.config = config
        self.rng = random.Random(f"{seed}:{name}")
        self._busy_until = 0.0
        self._departures: deque[float] = deque()
        self.stats: dict[str, int] = dict.fromkeys(
            ("packets", "bytes", "lost", "tail_drops", "duplicated", "reordered", "max_queue"), 0
        )

    def queue_len(self, now: float) -> int:
        """Packets queued or in service at ``now``."""
        dep = self._departures
        while dep and dep[0] <= now:
            dep.popleft()
        return len(dep)

    def enter(self, pkt: ChannelPacket, now: float) -> list[tuple[float, ChannelPacket]]:
        """Offer ``pkt`` at ``now``; return ``[(arrival time at the far end, packet)]``."""
        cfg, rng, st = self.config, self.rng, self.stats
        if cfg.loss and rng.random() < cfg.loss:
            st["lost"] += 1
            return []
        copies = [pkt]
        if cfg.duplicate and rng.random() < cfg.duplicate:
            st["duplicated"] += 1
            copies.append(ChannelPacket(pkt.src, pkt.dst, pkt.datagram, pkt.ecn))
        out = []
        for p in copies:
            q = self.queue_len(now)
            if cfg.queue_packets is not None and q >= cfg.queue_packets:
                st["tail_drops"] += 1
                continue
            size = len(p.datagram) + cfg.wire_overhead_bytes
            depart = max(now, self._busy_until) + size * 8 / cfg.rate_bps
            self._busy_until = depart
            self._departures.append(depart)
            st["packets"] += 1
            st["bytes"] += size
            st["max_queue"] = max(st["max_queue"], q + 1)
            arrive = depart + cfg.delay
            if cfg.reorder and rng.random() < cfg.reorder:
                st["reordered"] += 1
                arrive += rng.uniform(0.0, cfg.reorder_delay)
            out.append((arrive, p))
        return out


class App(Protocol):
    """What a node's application offers the simulator (RingCollective fits)."""

    def on_delivery(self, d: Delivery, now: float) -> None: ...

    def poll(self, now: float) -> list[Any]: ...

    def next_timer(self) -> float | None: ...


@dataclass(eq=False)
class Node:
    """One endpoint: a transport, an optional app, and deliveries when there is no app."""

    transport: Transport
    app: App | None = None
    delivered: list[Delivery] = field(default_factory=list)
    wake_at: float | None = None
    wake_version: int = 0

    @property
    def key(self) -> NodeKey:
        """(job_id, rank)."""
        return (self.transport.job_id, self.transport.rank)


_ARRIVE, _WAKE = 0, 1


class LossyChannel:
    """Discrete-event loop over nodes and links.

    Args:
        seed: seeds every link's random stream.
        default_link: config of the private link made for a pair without a route.
        on_event: called as ``on_event(now)`` after every processed event.
    """

    def __init__(
        self,
        seed: int = 0,
        default_link: LinkConfig | None = None,
        on_event: Callable[[float], None] | None = None,
    ) -> None:
        self.seed = seed
        self.default_link = default_link or LinkConfig()
        self.on_event = on_event
        self.now = 0.0
        self.events = 0
        self.nodes: dict[NodeKey, Node] = {}
        self.links: dict[str, Link] = {}
        self._routes: dict[tuple[NodeKey, NodeKey], list[Link]] = {}
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()

    # --- set-up ----------------------------------------------------------------

    def add_node(self, transport: Transport, app: App | None = None) -> Node:
        """Add a node keyed by (transport.job_id, transport.rank); it is serviced at ``now``."""
        node = Node(transport, app)
        if node.key in self.nodes:
            raise ChannelError(f"node job {node.key[0]} rank {node.key[1]} added twice")
        self.nodes[node.key] = node
        self.kick(node)
        return node

    def node(self, job_id: int, rank: int) -> Node:
        """The node of (job_id, rank); KeyError if absent."""
        return self.nodes[(job_id, rank)]

    def add_link(self, name: str, config: LinkConfig | None = None) -> Link:
        """Create a named link (shareable between routes)."""
        if name in self.links:
            raise ChannelError(f"link {name!r} added twice")
        link = Link(name, config or self.default_link, self.seed)
        self.links[name] = link
        return link

    def set_route(self, src: NodeKey, dst: NodeKey, links: Iterable[Link]) -> None:
        """Packets from ``src`` to ``dst`` (both (job, rank)) cross ``links`` in order."""
        self._routes[(src, dst)] = list(links)

    def route(self, src: NodeKey, dst: NodeKey) -> list[Link]:
        """The links from ``src`` to ``dst``; a private default link when none was set."""
        r = self._routes.get((src, dst))
        if r is None:
            name = f"j{src[0]}r{src[1]}->j{dst[0]}r{dst[1]}"
            r = self._routes[(src, dst)] = [self.links.get(name) or self.add_link(name)]
        return r

    # --- running ---------------------------------------------------------------

    def kick(self, node: Node) -> None:
        """Service ``node`` at the current time (after an outside ``transport.send``)."""
        self._schedule_wake(node, self.now)

    def send(self, job_id: int, rank: int, dst_rank: int, step: int, data: bytes,
             *, offset: int = 0, last: bool = True) -> None:
        """``Transport.send`` on node (job_id, rank) at ``now``, then kick the node."""
        node = self.node(job_id, rank)
        node.transport.send(dst_rank, step, data, self.now, offset=offset, last=last)
        self.kick(node)

    def run(
        self,
        until: float | None = None,
        stop: Callable[[LossyChannel], bool] | None = None,
        max_events: int | None = None,
    ) -> float:
        """Process events in time order and return the final ``now``.

        Stops when ``stop(sim)`` is true (checked after each event), when the next event
        is later than ``until`` (``now`` becomes ``until``), or when no event is left.
        Raises :class:`ChannelError` after ``max_events`` events (a runaway timer).
        """
        heap = self._heap
        count = 0
        if stop is not None and stop(self):
            return self.now
        while heap:
            t, _, kind, data = heap[0]
            if until is not None and t > until:
                self.now = until
                return self.now
            heapq.heappop(heap)
            if kind == _WAKE:
                node, version = data
                if version != node.wake_version:
                    continue  # superseded
                node.wake_at = None
                self.now = max(self.now, t)
                self._service(node)
            else:
                hop, pkt = data
                self.now = max(self.now, t)
                self._arrive(pkt, hop)
            self.events += 1
            count += 1
            if self.on_event is not None:
                self.on_event(self.now)
            if stop is not None and stop(self):
                return self.now
            if max_events is not None and count >= max_events:
                raise ChannelError(f"more than {max_events} events by t={self.now:.6f} s; a timer loops?")
        if until is not None:
            self.now = max(self.now, until)
        return self.now

    def _push(self, t: float, kind: int, data: Any) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, data))

    def _schedule_wake(self, node: Node, t: float) -> None:
        t = max(t, self.now)
        if node.wake_at is not None and node.wake_at <= t:
            return
        node.wake_version += 1
        node.wake_at = t
        self._push(t, _WAKE, (node, node.wake_version))

    def _service(self, node: Node) -> None:
        now, tr, app = self.now, node.transport, node.app
        deliveries = tr.deliveries()
        if app is None:
            node.delivered.extend(deliveries)
        else:
            for d in deliveries:
                app.on_delivery(d, now)
            for req in app.poll(now):
                tr.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last,
                        pad=getattr(req, "pad", 0))
        for out in tr.poll(now):
            self._inject(node, out)
        nxt = tr.next_timer()
        if app is not None:
            ta = app.next_timer()
            if ta is not None and (nxt is None or ta < nxt):
                nxt = ta
        if nxt is not None and math.isfinite(nxt):
            self._schedule_wake(node, nxt)

    def _inject(self, node: Node, out: Outgoing) -> None:
        dst = (node.key[0], out.dst_rank)
        if dst not in self.nodes:
            raise ChannelError(f"job {dst[0]} rank {node.key[1]} sent to rank {dst[1]}, which has no node")
        self._arrive(ChannelPacket(node.key, dst, out.datagram, out.ecn), 0)

    def _arrive(self, pkt: ChannelPacket, hop: int) -> None:
        links = self.route(pkt.src, pkt.dst)
        if hop < len(links):
            for t, p in links[hop].enter(pkt, self.now):
                self._push(t, _ARRIVE, (hop + 1, p))
            return
        node = self.nodes[pkt.dst]
        node.transport.on_datagram(pkt.src[1], pkt.datagram, pkt.ecn, self.now)
        self._schedule_wake(node, self.now)

    def stats(self) -> dict[str, Any]:
        """``{"now": s, "events": n, "links": {name: counters}}``."""
        return {"now": self.now, "events": self.events,
                "links": {name: dict(link.stats) for name, link in self.links.items()}}
