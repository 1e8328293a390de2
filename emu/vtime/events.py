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

#: :attr:`EventLoop.remove_above` of a new loop: pending events below which nobody removes any.
REMOVE_ABOVE = 1024

#: True when this module runs compiled (scripts/build_compiled.py, events.pxd): the heaps are then
#: kept by :class:`Heap` (with its keys in a C array) and by :func:`heap_push` and :func:`heap_pop`
#: themselves, comparing ``(t, seq)`` as C values; as Python they call heapq's own C functions, which
#: are faster there. Both are the same algorithm (heapq's siftdown and siftup) under the same order
#: on unique ``(t, seq)`` keys: the same heap.
_TYPED = not __file__.endswith(".py")


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
        #: pending events ``(t, seq, fn, arg)``: push and pop through the loop
        self._heap = Heap()
        #: the sequence number of the last event pushed (ties at one nanosecond run in this order)
        self.seq = 0
        self._halt = False
        #: :meth:`pending` above which a timer owner may call :meth:`remove` on its superseded
        #: wake-ups (:class:`emu.vtime.hosts.SimRank`); it sets the next limit
        self.remove_above = REMOVE_ABOVE

    def at(self, t: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at ``t`` ns (not before now)."""
        if t < self.now:
            t = self.now
        self.seq += 1
        self._heap.push_key((t, self.seq, fn, arg), t, self.seq)

    def push(self, t: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """:meth:`at` for a ``t`` the caller knows is not before now (the switches, the host links).
        The entry holds the caller's ``t`` object itself (compiled: no new int per push; a switch
        passes the deadline it also keeps and gets back)."""
        tt = t  # (compiled: a C integer, converted to the heap's double in C; an int's own conversion is a call)
        self.seq += 1
        self._heap.push_key((t, self.seq, fn, arg), tt, self.seq)

    def push_seq(self, t: int, seq: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Put back an event that :meth:`remove` took off, under its own ``seq`` (unique: no event
        pending has it); the caller adds 1 to :attr:`seq` for the push it stands for."""
        self._heap.push_key((t, seq, fn, arg), t, seq)

    def halt(self) -> None:
        """Make :meth:`run` return after the event being processed."""
        self._halt = True

    def pending(self) -> int:
        """Events waiting."""
        return len(self._heap.items)

    def run(self, until: int | None = None, stop: Callable[[], bool] | None = None,
            check_every: int = 4096, on_check: Callable[[], None] | None = None) -> None:
        """Process events in time order until the heap is empty, the next event is after
        ``until`` (now becomes ``until``), :meth:`halt` was called, or ``stop()`` is true
        (checked every ``check_every`` events, and ``on_check()`` called then)."""
        heap = self._heap
        items = heap.items
        n = 0
        self._halt = False
        bounded = until is not None
        lim = until if bounded else 0
        while items:
            if bounded and heap.first() > lim:
                self.now = lim
                break
            t, _, fn, arg = heap.pop()
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

    def remove(self, drop: Callable[[tuple], bool]) -> list[tuple]:
        """Take the pending events ``(t, seq, fn, arg)`` for which ``drop(entry)`` is true off the
        heap and return them (in heap order). The others run as they would have: the heap is
        rebuilt from them, and its order is that of their ``(t, seq)``, unique, alone. O(pending)."""
        heap = self._heap
        keep = []
        gone = []
        for e in heap.items:
            if drop(e):
                gone.append(e)
            else:
                keep.append(e)
        if gone:
            heap.items[:] = keep
            heap.heapify()
        return gone

    def clear(self) -> None:
        """Drop every pending event."""
        self._heap.clear()


class Heap:
    """A heap of tuples ``(t, seq, ...)`` in the order of their ``(t, seq)``, unique: ``t`` a float
    or an int below 2**53 (compared as a C double when compiled: exact there; 2**53 ns is 104 days),
    ``seq`` an int (64 bits). heapq's algorithm on :attr:`items` (the same list heapq would keep);
    compiled, each entry's ``(t, seq)`` is also kept at its index in a C array (``_keys``), so a
    sift compares packed numbers instead of reading a tuple and its number per comparison (at 128
    ranks the tuples are spread over a large working set). The event loop's heap and the traffic
    managers' departures."""

    def __init__(self) -> None:
        #: the entries, heapq's heap (read it; change it only through the methods)
        self.items: list[tuple] = []
        if _TYPED:
            self._cap = 0  # entries _keys has room for

    def __len__(self) -> int:
        return len(self.items)

    def first(self) -> float:
        """The ``t`` of the first entry (IndexError when empty, as Python)."""
        if _TYPED:
            if not self.items:
                raise IndexError("first of an empty heap")
            return self._keys[0].t
        return self.items[0][0]

    def heapify(self) -> None:
        """Make :attr:`items`, changed in place, a heap again (``heapq.heapify``)."""
        heap = self.items
        heapq.heapify(heap)
        if _TYPED:
            if len(heap) > self._cap:
                self._keys = _grow(self._keys, len(heap))  # noqa: F821  (events.pxd, compiled only)
                self._cap = len(heap)
            keys = self._keys
            for i, e in enumerate(heap):
                keys[i].t = e[0]
                keys[i].seq = e[1]

    def clear(self) -> None:
        """Drop every entry."""
        self.items.clear()

    def push(self, entry: tuple) -> None:
        """``heapq.heappush(self.items, entry)``; compiled, with the entry's key in ``_keys``."""
        self.push_key(entry, entry[0], entry[1])

    def push_key(self, entry: tuple, t: float, seq: int) -> None:
        """:meth:`push` of ``entry`` whose ``t`` and ``seq`` (``entry[0]``, ``entry[1]``) the caller
        also passes: compiled, as C values (the event loop's and the traffic managers' pushes), not
        read back out of the tuple (an int's conversion to a double is a call)."""
        if not _TYPED:
            heapq.heappush(self.items, entry)
            return
        heap = self.items
        n = len(heap)
        if n >= self._cap:
            self._keys = _grow(self._keys, 2 * n + 256)  # noqa: F821  (events.pxd, compiled only)
            self._cap = 2 * n + 256
        heap.append(entry)
        self._settle(n, entry, t, seq)

    def pop(self) -> tuple:
        """``heapq.heappop(self.items)``: the first entry (IndexError when empty); compiled, on ``_keys``."""
        if not _TYPED:
            return heapq.heappop(self.items)
        heap = self.items
        last = heap.pop()
        end = len(heap)
        if not end:
            return last
        keys = self._keys
        top = heap[0]
        lt = keys[end].t  # the key of last, which was at the end
        lseq = keys[end].seq
        # heapq's _siftup: move the smaller child up until a leaf, put last there, sift it down
        pos = 0
        child = 1
        while child < end:
            right = child + 1
            if right < end:
                ct = keys[child].t
                rt = keys[right].t
                if rt < ct or (rt == ct and keys[right].seq < keys[child].seq):
                    child = right
            _put(heap, pos, _item(heap, child))  # noqa: F821  (heap[pos] = heap[child]; events.pxd)
            keys[pos] = keys[child]
            pos = child
            child = 2 * pos + 1
        self._settle(pos, last, lt, lseq)
        return top

    def _settle(self, pos: int, entry: tuple, t: float, seq: int) -> None:
        """heapq's ``_siftdown`` on the compiled keys (compiled only): move the parents of slot
        ``pos`` whose key is above ``(t, seq)`` down one level each, then put ``entry``, of that
        key, in the slot left."""
        heap = self.items
        keys = self._keys
        while pos > 0:
            up = (pos - 1) >> 1
            pt = keys[up].t
            if t < pt or (t == pt and seq < keys[up].seq):
                _put(heap, pos, _item(heap, up))  # noqa: F821  (heap[pos] = heap[up]; events.pxd)
                keys[pos] = keys[up]
                pos = up
                continue
            break
        _put(heap, pos, entry)  # noqa: F821  (heap[pos] = entry; events.pxd)
        keys[pos].t = t
        keys[pos].seq = seq

    def __dealloc__(self) -> None:
        if _TYPED:
            free(self._keys)  # noqa: F821  (events.pxd, compiled only)


def heap_push(heap: list, entry: tuple) -> None:
    """``heapq.heappush(heap, entry)`` for entries ``(t, seq, ...)``: ``(t, seq)`` unique, ``t`` a
    float or an int below 2**53 (compared as a C double when compiled: exact there; 2**53 ns is
    104 days), ``seq`` an int (64 bits): the traffic managers' ports waiting for service (a small heap each)."""
    if not _TYPED:
        heapq.heappush(heap, entry)
        return
    heap.append(entry)
    _sift_down(heap, 0, len(heap) - 1)


def heap_pop(heap: list) -> tuple:
    """``heapq.heappop(heap)`` for the entries of :func:`heap_push`."""
    if not _TYPED:
        return heapq.heappop(heap)
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    # heapq's _siftup: move the smaller child up until a leaf, put last there, sift it down
    end = len(heap)
    pos = 0
    child = 1
    # (compiled only: the list moves are events.pxd's _item/_put, on the heap's own indices)
    while child < end:
        right = child + 1
        if right < end:
            a = _item(heap, child)  # noqa: F821  (heap[child]; events.pxd)
            b = _item(heap, right)  # noqa: F821
            at = a[0]
            bt = b[0]
            if bt < at or (bt == at and b[1] < a[1]):  # not heap[child] < heap[right], keys unique
                child = right
        _put(heap, pos, _item(heap, child))  # noqa: F821  (heap[pos] = heap[child])
        pos = child
        child = 2 * pos + 1
    _put(heap, pos, last)  # noqa: F821  (heap[pos] = last)
    _sift_down(heap, 0, pos)
    return top


def _sift_down(heap: list, start: int, pos: int) -> None:
    """heapq's _siftdown: move ``heap[pos]`` up towards ``start`` while it is smaller than its parent
    (compiled only: the list moves are events.pxd's _item/_put, on the heap's own indices)."""
    entry = _item(heap, pos)  # noqa: F821  (heap[pos]; events.pxd)
    t = entry[0]
    seq = entry[1]
    while pos > start:
        up = (pos - 1) >> 1
        parent = _item(heap, up)  # noqa: F821
        pt = parent[0]
        if t < pt or (t == pt and seq < parent[1]):
            _put(heap, pos, parent)  # noqa: F821  (heap[pos] = parent)
            pos = up
            continue
        break
    _put(heap, pos, entry)  # noqa: F821  (heap[pos] = entry)
