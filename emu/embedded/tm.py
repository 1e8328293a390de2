"""Traffic manager of the embedded switch: one FIFO queue per egress port.

Pure logic: it never reads a clock and owns no socket. Every entry point takes the
current time ``now_us`` (integer microseconds, any monotonic origin) and the caller asks
:meth:`TrafficManager.due` for the frames to put on the wire and
:meth:`TrafficManager.next_deadline_us` for when to call again.

Model (docs/DESIGN.md sections 2 and 6, bmv2 ``simple_switch`` queueing semantics): each port
is a :class:`emu.embedded.link.FifoLink`, the one link model (rate, depth, delay, clock ticks,
serialisation arithmetic; the virtual-time host NIC is one too). The traffic manager adds
what a switch does around it:

- a packet is enqueued after ingress; ``enq_qdepth`` is the number of packets waiting
  in the port's queue ahead of it (bmv2 reads ``egress_buffers.size(port)`` before the
  push), or with ``qdepth_unit`` the units they occupy (T2NA: 176-byte buffer cells). A
  packet that finds ``depth_pkts`` packets waiting is tail-dropped and counted;
- the packet in service has left the queue (bmv2 runs egress after the dequeue), so a
  port holds at most ``depth_pkts`` waiting packets plus the one being serialised;
- a packet starts service as soon as the port is free; the egress callback runs at
  service start with ``enq_qdepth``, ``deq_qdepth`` (packets still waiting behind it)
  and ``deq_timedelta`` (microseconds spent waiting), as bmv2 runs egress at dequeue;
- the port then serialises the frame egress produced (plus ``wire_overhead_bytes``: 0 by
  default; the virtual-time network adds Ethernet's preamble, FCS and inter-frame gap) and
  the frame leaves ``delay_us`` after serialisation ends (the link's propagation delay,
  modelled here because the kernel lacks netem); the departures of all ports are released
  in time order (FIFO per port) by :meth:`TrafficManager.due`.

``rate_bps=None`` means an unlimited rate (serialisation takes no time). Deadlines are
reported rounded up to whole clock ticks.

Clock: every ``now_us`` is in ticks of ``1 / ticks_per_us`` microseconds. The default
(``ticks_per_us=1``) is the real-time switch's microsecond clock; the virtual-time network
(emu.vtime) runs the same code on a nanosecond clock (``ticks_per_us=1000``), which a
4096-byte frame at 100 Gbit/s (328 ns) needs. ``delay_us`` stays in microseconds.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from emu.embedded.link import FifoLink, QueueConfig, ceil_tick
from emu.vtime.events import Heap, heap_pop, heap_push

logger = logging.getLogger(__name__)

_INF = math.inf
# the queues' deque methods, looked up once (a method call looks the name up on the type each time)
_append = deque.append
_popleft = deque.popleft

def _units_by(q: Any, start: float) -> int:
    """The units of the packets in queue ``q`` (entries ``(item, enq_us, ahead, units)``) enqueued
    at or before ``start``. A function of its own: a generator inside :meth:`TrafficManager._service_ports`
    would make its every local a closure variable, allocated per call when compiled."""
    return sum(e[3] for e in q if e[1] <= start)


#: Egress callback: ``(port, item, enq_qdepth, deq_qdepth, deq_timedelta_us,
#: enq_timestamp_us, start_us) -> frame bytes or None (dropped in egress)``.
ServiceFn = Callable[[int, Any, int, int, int, int, int], "bytes | None"]


class EgressStage:
    """What a traffic manager may call at each service start instead of a ``service`` function:
    an object whose :meth:`_run_egress` takes the :data:`ServiceFn` arguments (the switch core,
    :class:`emu.embedded.core.SwitchCore`). The same call as ``service=stage._run_egress``;
    compiled (scripts/build_compiled.py) it is a C call without boxing its arguments."""

    __slots__ = ()

    def _run_egress(self, port: int, item: Any, enq_qdepth: int, deq_qdepth: int, deq_timedelta_us: int,
                    enq_timestamp_us: int, now_us: int) -> bytes | None:
        raise NotImplementedError


class TrafficManager:
    """Per-port FIFO queues with a service rate, a depth and a propagation delay.

    ``service`` is called at each service start to run the egress pipeline (or ``stage``'s
    :meth:`EgressStage._run_egress`, the same call); with ``service=None`` and no stage the
    queued items must be frames (``bytes``) and leave unchanged.
    Raises ``KeyError`` for a port not given to the constructor, ``ValueError`` for an
    invalid queue configuration. Exceptions raised by ``service`` propagate to the
    caller after the port's state has been updated (the packet counts as serviced and
    the port as free), so the caller may catch them per packet and call again.
    """

    def __init__(self, ports: Iterable[int], service: ServiceFn | None = None,
                 default: QueueConfig | None = None, *, ticks_per_us: int = 1,
                 wire_overhead_bytes: int = 0, qdepth_unit: Callable[[Any], int] | None = None,
                 stage: EgressStage | None = None) -> None:
        cfg = default or QueueConfig()
        ports = [int(p) for p in ports]
        self._ports: dict[int, FifoLink] = {p: FifoLink(cfg, ticks_per_us=ticks_per_us,
                                                       wire_overhead_bytes=wire_overhead_bytes) for p in ports}
        #: the same links indexed by port number (None where there is no port; a list read in C when
        #: compiled, not a dict's hash and lookup per packet); a port beyond it (negative) is looked up
        #: in ``_ports``
        self._links: list[FifoLink | None] = [None] * (max((p for p in ports if p >= 0), default=-1) + 1)
        for n, link in self._ports.items():
            if n >= 0:
                self._links[n] = link
        self.ticks_per_us = ticks_per_us
        #: bytes each frame costs on the wire beyond its own (0: the frame only, as on a veth)
        self.wire_overhead_bytes = wire_overhead_bytes
        #: units a queued item counts for in enq_qdepth/deq_qdepth (None: 1, packets); the
        #: depth limit stays in packets. T2NA counts 176-byte buffer cells (t2na.qdepth_cells).
        self.qdepth_unit = qdepth_unit
        self._stage = stage
        self._service = stage._run_egress if stage is not None else service
        #: ``(free_at, port)`` of every port with waiting packets, a heap (:func:`heap_push`): a port
        #: is in it exactly while its queue is not empty, under the ``free_at`` it has had since then
        #: (only its own service changes it), so the ports due for service are popped off its top
        #: instead of sorting and scanning every such port (a spine at 128 ranks has up to 32)
        self._waiting: list[tuple[float, int]] = []
        # earliest free_at over the waiting ports (inf when none): service_until returns at once
        # before it, and next_deadline_us reads it instead of scanning the ports
        self._next_service = math.inf
        self._departures = Heap()  # (time_us, seq, port, frame)
        self._seq = 0
        # frames of idle direct ports, due at once (older than any heap entry of their port)
        self._ready: list[tuple[int, bytes]] = []
        self._ready_at: int | None = None

    # -- configuration -------------------------------------------------------------

    @property
    def ports(self) -> list[int]:
        """Port numbers, ascending."""
        return sorted(self._ports)

    def config(self, port: int) -> QueueConfig:
        """Current shaping of ``port``; KeyError if unknown."""
        return self._ports[port].config

    def set_queue(self, port: int, config: QueueConfig) -> None:
        """Replace the shaping of ``port`` (:meth:`FifoLink.set_config`)."""
        self._ports[port].set_config(config)

    # -- data path -----------------------------------------------------------------

    def enqueue(self, port: int, item: Any, now_us: int) -> int | None:
        """Queue ``item`` on ``port`` at ``now_us``.

        Returns the enq_qdepth (packets, or ``qdepth_unit`` units, waiting ahead of it), or
        None when the queue is full and the packet is tail-dropped (counted per port). Call
        :meth:`service_until` first so that packets due to leave the queue have left it.
        On an idle port with unlimited rate and no delay the packet is serviced at once
        (egress runs inside this call) and its frame is due at ``now_us``.
        """
        links = self._links
        p = links[port] if 0 <= port < len(links) else None
        if p is None:
            p = self._ports[port]  # a negative port, or KeyError
        q = p.queue
        depth = len(q)
        if p.direct and not depth and not p.pending and p.free_at <= now_us:
            # fast path: idle port without shaping, service starts and ends now
            p.enqueued += 1
            p.serviced += 1
            if p.max_qdepth == 0:
                p.max_qdepth = 1
            stage = self._stage
            if stage is not None:
                frame = stage._run_egress(port, item, 0, 0, 0, now_us, now_us)
            else:
                frame = item if self._service is None else self._service(port, item, 0, 0, 0, now_us, now_us)
            if frame is not None:
                if self._ready_at is None:
                    self._ready_at = now_us
                self._ready.append((port, frame))
            return 0
        if depth >= p.depth_limit:
            p.tail_drops += 1
            return None
        if self.qdepth_unit is None:
            units, ahead = 1, depth
        else:
            units, ahead = self.qdepth_unit(item), p.units
        p.units += units
        _append(q, (item, now_us, ahead, units))
        p.enqueued += 1
        if depth + 1 > p.max_qdepth:
            p.max_qdepth = depth + 1
        if not depth:  # the port starts waiting
            heap_push(self._waiting, (p.free_at, port))
        if p.free_at < self._next_service:
            self._next_service = p.free_at
        return ahead

    def enqueue_service(self, port: int, item: Any, now_us: int) -> int | None:
        """:meth:`enqueue`, then :meth:`service_until` ``(now_us)`` if a port is due: one call.

        The same result as the two calls. The common case takes a short path: the port is
        idle (nothing waiting, free by ``now_us``) and no other port with waiting packets is
        free yet, so the packet starts service at once, alone, exactly as
        :meth:`service_until` would start it (``enq_qdepth`` and ``deq_qdepth`` 0, no wait).
        """
        links = self._links
        p = links[port] if 0 <= port < len(links) else None
        if p is None:
            p = self._ports[port]  # a negative port, or KeyError
        if p.direct or p.queue or p.free_at > now_us or self._next_service <= now_us:
            ahead = self.enqueue(port, item, now_us)
            if ahead is not None and now_us >= self._next_service:
                self.service_until(now_us)
            return ahead
        # enqueue + _service_ports for this one packet, without the queue and the active set
        p.enqueued += 1
        if p.max_qdepth == 0:
            p.max_qdepth = 1
        p.serviced += 1
        start = float(now_us)
        p.free_at = start  # port free until a frame is produced
        stage = self._stage
        if stage is not None:
            frame = stage._run_egress(port, item, 0, 0, 0, now_us, now_us)
        else:
            service = self._service
            frame = item if service is None else service(port, item, 0, 0, 0, now_us, now_us)
        if frame is not None:
            self._seq += 1
            p.pending += 1
            dep = p.serialise(start, len(frame))
            self._departures.push_key((dep, self._seq, port, frame), dep, self._seq)
        return 0

    def service_until(self, now_us: int) -> None:
        """Start service of every packet whose port becomes free at or before ``now_us``.

        Each service start runs the egress callback at the virtual start time
        ``max(port free time, enqueue time)``, so results do not depend on how late the
        caller is. Frames produced are held until their departure time.
        """
        if now_us < self._next_service:  # no port with waiting packets is free yet
            return
        try:
            self._service_ports(now_us)
        finally:
            waiting = self._waiting
            self._next_service = waiting[0][0] if waiting else _INF

    def _service_ports(self, now_us: int) -> None:
        """Serve the waiting ports free at ``now_us`` in ascending port order, each until it is
        busy past ``now_us`` or empty (the same order as a scan of every waiting port)."""
        waiting = self._waiting
        due = []
        while waiting:
            free = waiting[0][0]
            if free > now_us:
                break
            due.append(heap_pop(waiting)[1])
        if len(due) > 1:
            due.sort()
        ports = self._ports
        links = self._links
        service = self._service
        stage = self._stage
        unit = self.qdepth_unit
        deps = self._departures
        served = 0
        try:
            for port in due:
                p = links[port] if 0 <= port < len(links) else ports[port]
                q = p.queue
                while q and p.free_at <= now_us:
                    item, enq_us, enq_qdepth, units = _popleft(q)
                    p.units -= units
                    start = p.free_at if p.free_at > enq_us else float(enq_us)
                    # packets still waiting that had arrived by the (virtual) start time
                    deq_qdepth = len(q) if unit is None else p.units
                    if deq_qdepth and q[-1][1] > start:
                        deq_qdepth = _units_by(q, start)
                    p.serviced += 1
                    p.free_at = start  # port free until a frame is produced
                    start_us = ceil_tick(start)
                    if service is None:
                        frame = item
                    elif stage is not None:
                        frame = stage._run_egress(port, item, enq_qdepth, deq_qdepth, start_us - enq_us, enq_us,
                                                  start_us)
                    else:
                        frame = service(port, item, enq_qdepth, deq_qdepth, start_us - enq_us, enq_us, start_us)
                    if frame is None:
                        continue
                    self._seq += 1
                    p.pending += 1
                    dep = p.serialise(start, len(frame))
                    deps.push_key((dep, self._seq, port, frame), dep, self._seq)
                served += 1
                if q:
                    heap_push(waiting, (p.free_at, port))
        finally:
            if served < len(due):  # egress raised: its port and those after it wait on (their state updated)
                for port in due[served:]:
                    p = ports[port]
                    if p.queue:
                        heap_push(waiting, (p.free_at, port))

    def due(self, now_us: int) -> list[tuple[int, bytes]]:
        """Pop the frames whose departure time is at or before ``now_us``, in departure
        order (FIFO per port): ``[(port, frame), ...]``."""
        out = self._ready
        if out:
            self._ready = []
            self._ready_at = None
        else:
            out = []
        deps = self._departures
        waiting = deps.items
        if waiting and deps.first() <= now_us:
            ports = self._ports
            links = self._links
            while waiting and deps.first() <= now_us:
                _, _, port, frame = deps.pop()
                p = links[port] if 0 <= port < len(links) else ports[port]
                p.pending -= 1
                out.append((port, frame))
        return out

    def next_deadline_us(self) -> int | None:
        """Earliest time (us, rounded up) at which a frame departs or a service starts;
        None when the traffic manager is idle."""
        if self._ready_at is not None:
            return self._ready_at
        deps = self._departures
        t = deps.first() if deps.items else _INF
        if self._next_service < t:
            t = self._next_service
        if t == _INF:
            return None
        return 0 if t == -_INF else ceil_tick(t)

    # -- statistics ----------------------------------------------------------------

    def qdepth(self, port: int) -> int:
        """Packets waiting on ``port`` now (the one in service not included)."""
        return len(self._ports[port].queue)

    def tail_drops(self) -> dict[int, int]:
        """Tail drops per port."""
        return {n: p.tail_drops for n, p in sorted(self._ports.items())}

    def max_qdepth(self) -> dict[int, int]:
        """Largest number of packets that waited on each port (the new packet included)."""
        return {n: p.max_qdepth for n, p in sorted(self._ports.items())}

    def in_flight(self) -> int:
        """Packets queued or serialised but not yet handed out by :meth:`due`."""
        return sum(len(p.queue) for p in self._ports.values()) + len(self._departures) + len(self._ready)
