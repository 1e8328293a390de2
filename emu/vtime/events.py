"""The event loop of virtual time: one heap of timed callbacks (docs/DESIGN.md section 6).

Every part of a virtual-time run schedules on one :class:`EventLoop`: the switch cores and
host NICs (:mod:`emu.vtime.network`), the rank workers and background sources
(:mod:`emu.vtime.hosts`), the run's deadline (:mod:`emu.vtime.backend`). Time is integer
nanoseconds from 0 and events at the same nanosecond run in insertion order, so a run is a
function of its inputs (the same seed gives the same results, bit for bit). Host cores keep
float seconds: :func:`s_to_ns` converts their timers without ever waking them early.
Imports nothing of the emulator.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

#: Nanoseconds per second (the loop's clock).
NS_PER_S = 1_000_000_000


def s_to_ns(t: float) -> int:
    """Seconds (float) -> the first integer nanosecond at or after ``t``."""
    ns = math.ceil(t * 1e9)
    if ns * 1e-9 < t:  # float rounding: never wake before the time asked for
        ns += 1
    return ns


class EventLoop:
    """One heap of timed callbacks; time in integer nanoseconds from 0."""

    def __init__(self) -> None:
        self.now = 0
        self.events = 0
        self._heap: list[tuple[int, int, Callable[[Any], None], Any]] = []
        #: the sequence number of the last event pushed (ties at one nanosecond run in this order);
        #: whoever pushes onto ``_heap`` directly (the host links and switches) adds 1 first
        self.seq = 0
        self._halt = False

    def at(self, t: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at ``t`` ns (not before now)."""
        if t < self.now:
            t = self.now
        self.seq += 1
        heapq.heappush(self._heap, (t, self.seq, fn, arg))

    def halt(self) -> None:
        """Make :meth:`run` return after the event being processed."""
        self._halt = True

    def pending(self) -> int:
        """Events waiting."""
        return len(self._heap)

    def run(self, until: int | None = None, stop: Callable[[], bool] | None = None,
            check_every: int = 4096, on_check: Callable[[], None] | None = None) -> None:
        """Process events in time order until the heap is empty, the next event is after
        ``until`` (now becomes ``until``), :meth:`halt` was called, or ``stop()`` is true
        (checked every ``check_every`` events, and ``on_check()`` called then)."""
        heap = self._heap
        pop = heapq.heappop
        n = 0
        self._halt = False
        bounded = until is not None
        lim = until if bounded else 0
        while heap:
            if bounded and heap[0][0] > lim:
                self.now = lim
                break
            t, _, fn, arg = pop(heap)
            self.now = t
            fn(arg)
            n += 1
            if self._halt:
                break
            if n >= check_every:
                self.events += n
                n = 0
                if on_check is not None:
                    on_check()
                if stop is not None and stop():
                    return
        self.events += n

    def clear(self) -> None:
        """Drop every pending event."""
        self._heap.clear()
