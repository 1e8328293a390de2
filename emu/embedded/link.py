"""One FIFO link at a rate: the queue model of a switch egress port and of a host NIC.

docs/DESIGN.md sections 2 and 6. A :class:`FifoLink` is one direction of a link: a FIFO that
holds at most ``depth_pkts`` waiting packets, a server that serialises one frame at a time at
``rate_bps``, then the propagation delay. It is used everywhere a link is modelled:

- each egress port of the embedded switch's traffic manager (:mod:`emu.embedded.tm`), in real
  time (microsecond clock) and in virtual time (nanosecond clock);
- the host NIC of the virtual-time network (:class:`emu.vtime.network.HostLink`).

Pure logic: no clock, no socket, no frame. Times are in ticks of ``1 / ticks_per_us``
microseconds (1: the real-time switch's microseconds; 1000: virtual time's nanoseconds);
``delay_us`` stays in microseconds. The arithmetic is the same for every user, so a
switch port and a host NIC at the same rate give the same times, bit for bit:

- a frame starts service at ``start = max(free_at, arrival)`` (the port is free again at
  ``free_at``, the end of the frame before it);
- it is serialised for ``(len(frame) + wire_overhead_bytes) * ticks_per_byte`` ticks, with
  ``ticks_per_byte = 8e6 * ticks_per_us / rate_bps`` (``wire_overhead_bytes``: what the wire
  adds to each frame: 0 on a veth, Ethernet's preamble, FCS and inter-frame gap in virtual
  time); the port is busy until the end;
- it departs at ``end + delay`` ticks, reached at the first whole tick at or after it (the
  caller rounds up: :func:`ceil_tick`, ``math.ceil``).

Times stay floats so that rounding never drifts a link's rate (a 4096-byte frame at 100
Gbit/s is 329.6 ns; ten of them are 3296 ns, not 3300).

Two ways to drive it:

- with a stage between the queue and the wire (the switch: egress runs at service start and
  may change or drop the frame), the caller keeps the packets in :attr:`FifoLink.queue` and
  calls :meth:`FifoLink.serialise` at each service start (:class:`emu.embedded.tm.TrafficManager`);
- without one (a NIC), a frame's service start is known when it is queued:
  :meth:`FifoLink.transmit` returns its departure at once. It gives the same departures and
  tail drops as the first way with the frames left unchanged (tests/p4/test_tm.py compares them).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any


def ceil_tick(t: float) -> int:
    """``math.ceil(t)`` of a finite time ``t`` in ticks (below 2**53: every time of a run): the first
    whole tick at or after it. Compiled (link.pxd) a C conversion instead of a call and a boxed
    float; the same integer either way."""
    c = int(t)
    return c + 1 if c < t else c


#: Default queue depth in packets (bmv2 ``simple_switch`` default, ``set_queue_depth``).
DEFAULT_DEPTH_PKTS = 64


@dataclass(frozen=True)
class QueueConfig:
    """Shaping of one link direction (a switch egress port, a host NIC).

    rate_bps: service rate in bits per second; None = unlimited (serialisation takes no time).
    depth_pkts: packets that may wait in the queue (the one in service not included), >= 1;
      None = unbounded (never a tail drop).
    delay_us: propagation delay added after serialisation, microseconds, >= 0.
    Raises ValueError naming the field for a value outside these ranges.
    """

    rate_bps: float | None = None
    depth_pkts: int | None = DEFAULT_DEPTH_PKTS
    delay_us: int = 0

    def __post_init__(self) -> None:
        if self.rate_bps is not None and not (self.rate_bps > 0 and math.isfinite(self.rate_bps)):
            raise ValueError(f"queue rate_bps must be a positive finite number or None, got {self.rate_bps!r}")
        if self.depth_pkts is not None and self.depth_pkts < 1:
            raise ValueError(f"queue depth_pkts must be >= 1 or None, got {self.depth_pkts!r}")
        if self.delay_us < 0:
            raise ValueError(f"queue delay_us must be >= 0, got {self.delay_us!r}")


class FifoLink:
    """One direction of a link: a FIFO with a depth, a server at a rate, then a delay.

    ``config``: its shaping (default: unlimited rate, :data:`DEFAULT_DEPTH_PKTS`, no delay);
    ``ticks_per_us``: the clock (>= 1); ``wire_overhead_bytes``: bytes the wire adds to each
    frame (>= 0). Counters: ``enqueued`` (packets accepted), ``serviced`` (service starts),
    ``tail_drops``, ``max_qdepth`` (most packets waiting, the new one included).
    """

    __slots__ = ("config", "ticks_per_us", "wire_overhead_bytes", "ticks_per_byte", "delay", "depth_limit",
                 "direct", "queue", "units", "free_at", "starts", "tail_drops", "max_qdepth", "enqueued",
                 "serviced", "pending")

    def __init__(self, config: QueueConfig | None = None, *, ticks_per_us: int = 1, wire_overhead_bytes: int = 0) -> None:
        if ticks_per_us < 1:
            raise ValueError(f"ticks_per_us must be >= 1, got {ticks_per_us!r}")
        if wire_overhead_bytes < 0:
            raise ValueError(f"wire_overhead_bytes must be >= 0, got {wire_overhead_bytes!r}")
        self.ticks_per_us = ticks_per_us
        self.wire_overhead_bytes = wire_overhead_bytes
        #: waiting packets when the caller keeps them: (item, enq_ticks, enq_qdepth, units)
        self.queue: deque[tuple[Any, int, int, int]] = deque()
        self.units = 0  # queue-depth units of the waiting packets (TrafficManager.qdepth_unit; else packets)
        #: service starts of the frames :meth:`transmit` took that are still waiting
        self.starts: deque[float] = deque()
        self.free_at = -math.inf  # ticks (float) at which the link ends its current serialisation
        self.tail_drops = 0
        self.max_qdepth = 0
        self.enqueued = 0
        self.serviced = 0
        self.pending = 0  # departures of this link the caller still holds (TrafficManager's heap)
        self.set_config(config or QueueConfig())

    def set_config(self, config: QueueConfig) -> None:
        """Replace the shaping. Packets already waiting stay queued, even beyond a smaller
        depth; a frame being serialised keeps its end."""
        self.config = config
        self.ticks_per_byte = 0.0 if config.rate_bps is None else 8e6 * self.ticks_per_us / config.rate_bps
        self.delay = config.delay_us * self.ticks_per_us
        self.depth_limit = math.inf if config.depth_pkts is None else config.depth_pkts
        # unlimited rate and no delay: an idle link forwards at once
        self.direct = config.rate_bps is None and config.delay_us == 0

    def serialise(self, start: float, nbytes: int) -> float:
        """Serialise an ``nbytes``-byte frame from ``start`` (ticks, not before :attr:`free_at`):
        the link is busy until its end; returns its departure, ``end + delay`` (float ticks)."""
        end = start + (nbytes + self.wire_overhead_bytes) * self.ticks_per_byte
        self.free_at = end
        return end + self.delay

    def transmit(self, nbytes: int, now: int) -> float | None:
        """Queue an ``nbytes``-byte frame at ``now`` (ticks) on a link with nothing between
        the queue and the wire: returns its departure (float ticks), or None when
        ``depth_pkts`` frames are already waiting (tail drop, counted)."""
        f = self.free_at
        start = f if f > now else now
        waiting = self.starts
        while waiting and waiting[0] <= now:
            waiting.popleft()
        n = len(waiting)
        if n >= self.depth_limit:
            self.tail_drops += 1
            return None
        if start > now:
            waiting.append(start)
        if n >= self.max_qdepth:
            self.max_qdepth = n + 1
        self.enqueued += 1
        self.serviced += 1
        return self.serialise(start, nbytes)

    def in_flight(self, now: int) -> bool:
        """A frame is still waiting, being serialised or propagating at ``now``."""
        return bool(self.queue) or self.free_at + self.delay > now
