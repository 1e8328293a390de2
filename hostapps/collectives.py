"""Ring collectives as state machines with no I/O and no clock (docs/DESIGN.md section 5).

:class:`RingCollective` runs one ring all-reduce, all-gather or reduce-scatter on one rank.
It never reads a clock or owns a socket: every entry point takes ``now`` (seconds, any
monotonic origin) and :meth:`RingCollective.poll` returns what to send; the caller hands
the requests to a transport (``Transport.send`` / ``Endpoint.send``) and feeds the
transport's deliveries back through :meth:`RingCollective.on_delivery`.

Ring and chunks
    Rank ``r`` sends to ``(r + 1) % N`` and receives from ``(r - 1) % N``. The buffer of
    ``S`` elements is cut into ``N`` chunks; chunk ``i`` has ``S // N`` elements plus one
    when ``i < S % N`` (:func:`chunk_bounds`), so every size, 0 included, works.

Steps (``s`` is the step inside one collective, the CTH step is ``step_base + s``)
    reduce-scatter, ``s = 0 .. N-2``: send chunk ``(r - s - 1) % N``, receive chunk
    ``(r - s - 2) % N`` and add it into the local copy (``local += received``). After
    ``N-1`` steps rank ``r`` holds the fully reduced chunk ``r`` (NCCL's convention).

    all-gather, ``s = 0 .. N-2``: send chunk ``(r - s) % N``, receive chunk
    ``(r - s - 1) % N`` and copy it unchanged. Rank ``r`` starts owning chunk ``r``.

    all-reduce = reduce-scatter then all-gather: ``2(N-1)`` steps. Each reduced chunk is
    computed exactly once (on its owner rank) and then only copied, so every rank ends
    with bit-identical results.

    The chunk sent at step ``s+1`` is always the chunk received at step ``s``, so slice
    ``j`` of step ``s+1`` leaves as soon as slice ``j`` of step ``s`` has arrived
    (NCCL-style slicing, ``slices > 1``); with ``slices = 1`` whole chunks are forwarded.
    A chunk of ``L`` elements is cut into ``max(1, min(slices, L))`` slices with the
    remainder spread over the first ones; each slice is one transport message, so every
    step sends at least one packet (an empty chunk sends one empty message).

Step numbers
    The worker uses ``step_base = iteration * steps_per_collective(kind, N)``, i.e.
    ``iteration * 2(N-1)`` for all-reduce and ``iteration * (N-1)`` otherwise, so CTH steps
    only move forward within a job (docs/DESIGN.md section 4). The CTH carries the step modulo
    2**16; deliveries are mapped back with serial arithmetic around ``step_base``.

Step log
    ``step_log`` has one ``(step, start, end)`` per completed step: ``start`` is when this
    rank began sending its data for the step (its first slice was handed to the
    transport), ``end`` is when it had received (and applied) all of the step's data from
    its left neighbour. With slicing, a step may start before the previous one ends.

Timeout
    The collective fails when nothing arrives from the left neighbour for
    ``step_timeout`` seconds while a step still waits for data (the clock restarts at
    :meth:`start` and at every delivery from the left). ``error`` then reads
    ``"step 5: no data from rank 2 within 10.0 s"`` with the oldest incomplete step.
"""

from __future__ import annotations

import functools
import logging
import struct
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

logger = logging.getLogger(__name__)

CollectiveKind = Literal["allreduce", "allgather", "reducescatter"]
#: Names accepted by :class:`RingCollective`.
COLLECTIVE_KINDS: tuple[str, ...] = ("allreduce", "allgather", "reducescatter")
#: What a rank's buffer holds: ``exact`` float32 data (:class:`RingCollective`) or ``digest``
#: records, the same packets with state that does not grow with the buffer (:class:`DigestRingCollective`).
PAYLOADS: tuple[str, ...] = ("exact", "digest")

_STEP_MOD = 1 << 16  # the CTH step field is 16 bits (docs/DESIGN.md section 3)
_DTYPE = np.dtype("<f4")  # wire format of the payload: float32 little-endian
_ITEM = _DTYPE.itemsize


class DeliveryLike(Protocol):
    """What :meth:`RingCollective.on_delivery` reads from a transport ``Delivery``."""

    src_rank: int
    step: int  # CTH step, modulo 2**16
    offset: int  # byte offset of ``payload`` in the step's chunk
    payload: bytes | bytearray | memoryview
    last: bool


@dataclass(frozen=True, slots=True, init=False)
class SendRequest:
    """One message for the transport:
    ``Transport.send(dst_rank, step, payload, now, offset=, last=, channel=, pad=)``.

    ``payload`` followed by ``pad`` zero bytes is a float32 little-endian slice of the step's
    chunk starting at byte ``offset`` of the chunk (``pad`` is 0 for exact data; a digest
    payload is its 16-byte record and the slice's other bytes as ``pad``, so that the zeros
    are not made per slice: :meth:`hostapps.transport.Transport.send`); ``last`` marks the
    step's final slice; ``channel`` the ring (NCCL-style channel) of the collective that sends it.
    """

    dst_rank: int
    step: int
    offset: int
    payload: bytes
    last: bool
    channel: int = 0
    pad: int = 0

    def __init__(self, dst_rank: int, step: int, offset: int, payload: bytes, last: bool, channel: int = 0,
                 pad: int = 0) -> None:
        # written out: the dataclass's generated __init__ is exec'd Python, this one is compiled
        # with the module (one object per message)
        _setfield = object.__setattr__
        _setfield(self, "dst_rank", dst_rank)
        _setfield(self, "step", step)
        _setfield(self, "offset", offset)
        _setfield(self, "payload", payload)
        _setfield(self, "last", last)
        _setfield(self, "channel", channel)
        _setfield(self, "pad", pad)


class CollectiveError(RuntimeError):
    """A collective failed (timeout or protocol violation); ``str()`` is one line."""


def steps_per_collective(kind: str, nranks: int) -> int:
    """Ring steps of one collective: ``2(N-1)`` for all-reduce, ``N-1`` otherwise."""
    if kind not in COLLECTIVE_KINDS:
        raise ValueError(f"unknown collective {kind!r}; expected one of {', '.join(COLLECTIVE_KINDS)}")
    return (2 if kind == "allreduce" else 1) * (nranks - 1)


def lead_bound(kind: str, nranks: int, channels: int = 1) -> int:
    """Largest step lead (steps) a switch's frontier can see for one job (docs/DESIGN.md section 4).

    A rank enters step s+1 of a ring only after its left neighbour entered s, so within one
    ring two ranks' steps differ by at most ``N-1``. With ``channels`` > 1 rings (NCCL-style,
    unsynchronised within a collective) a rank's channels share only the collective's start
    (every channel of collective k starts once all of that rank's channels ended k-1), so one
    rank's channels differ by at most ``S-1`` steps (``S`` = :func:`steps_per_collective`) and
    any two flows of the job by ``S-1 + N-1``. The controller installs marking entries for
    leads 1 to this bound; ``hostapps.wire.STEP_WINDOW`` exceeds it for every job the P4 tracks.
    """
    if channels < 1:
        raise ValueError(f"channels must be >= 1, got {channels}")
    ring = max(nranks - 1, 0)
    if channels == 1:
        return ring
    return steps_per_collective(kind, nranks) - 1 + ring


def max_chunk_bytes(size_bytes: int, nranks: int, channels: int = 1) -> int:
    """Bytes of the largest step chunk of a ring collective of ``size_bytes`` per rank.

    Each of ``channels`` rings carries its share of the float32 elements
    (:func:`chunk_bounds` over channels, then over the ``nranks`` chunks of a ring); the
    CTH's 24-bit offset needs this below 16 MiB (``hostapps.wire.MAX_CHUNK_BYTES``).
    """
    per_channel = -(-(size_bytes // 4) // max(channels, 1))
    return 4 * -(-per_channel // max(nranks, 1))


def chunk_bounds(size: int, parts: int) -> list[tuple[int, int]]:
    """Cut ``size`` elements into ``parts`` contiguous ``(start, stop)`` ranges.

    Part ``i`` has ``size // parts`` elements plus one for ``i < size % parts``; parts may
    be empty. Raises ``ValueError`` for ``parts < 1`` or ``size < 0``.
    """
    if parts < 1 or size < 0:
        raise ValueError(f"cannot cut {size} elements into {parts} parts")
    base, extra = divmod(size, parts)
    bounds = []
    start = 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def slice_bounds(length: int, slices: int) -> list[tuple[int, int]]:
    """Slices of a chunk of ``length`` elements: ``max(1, min(slices, length))`` ranges.

    No slice is empty unless the chunk is (then there is exactly one), so byte offsets
    identify slices uniquely.
    """
    return chunk_bounds(length, max(1, min(slices, length)))


@functools.lru_cache(maxsize=16)
def _layout(size: int, nranks: int, slices: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[tuple[int, int], ...], ...],
                                                          tuple[tuple[int, ...], ...]]:
    """(chunk bounds, each chunk's slice bounds, each chunk's slice starts in bytes), shared read-only."""
    chunks = tuple(chunk_bounds(size, nranks))
    sl = tuple(tuple(slice_bounds(b - a, slices)) for a, b in chunks)
    return chunks, sl, tuple(tuple(a * _ITEM for a, _ in x) for x in sl)


def _slice_at(starts: tuple[int, ...], lo: int) -> int:
    """The slice holding byte ``lo``: ``max(0, bisect.bisect_right(starts, lo) - 1)`` (``starts`` ascending)."""
    a, b = 0, len(starts)
    while a < b:
        mid = (a + b) >> 1
        if lo < starts[mid]:
            b = mid
        else:
            a = mid + 1
    return a - 1 if a > 0 else 0


def _sent_all(sent: list[list[bool]], steps: tuple[int, ...], j: int) -> bool:
    """``all(sent[k][j] for k in steps)``, without a generator (per slice)."""
    for k in steps:
        if not sent[k][j]:
            return False
    return True


class _RecvStep:
    """Receive state of one step: a byte buffer and bytes received per slice."""

    __slots__ = ("buf", "got", "seen", "complete", "applied", "napplied")

    def __init__(self, nbytes: int, nslices: int) -> None:
        self.buf = bytearray(nbytes)
        self.got = [0] * nslices
        self.seen = False  # any delivery at all (needed for empty chunks)
        self.complete = [False] * nslices
        self.applied = [False] * nslices
        self.napplied = 0


class RingCollective:
    """One ring collective on one rank, driven by explicit times (no I/O).

    Args:
        kind: ``"allreduce"``, ``"allgather"`` or ``"reducescatter"``.
        rank: this rank, ``0 <= rank < nranks``.
        nranks: ring size ``N >= 1``.
        data: 1-D float32 array of ``S`` elements, the full buffer on every rank (copied;
            for all-gather only chunk ``rank`` of it is this rank's contribution).
        step_base: CTH step of this collective's first step (``>= 0``).
        slices: slices per chunk for pipelined forwarding (``>= 1``).
        step_timeout: seconds without data from the left neighbour before failing.
        channel: the channel its send requests carry (:class:`ChannelCollective`; 0 alone).
        copy: keep a copy of ``data`` (default); False: ``data`` (C-contiguous and writable, else it
            is copied anyway) becomes the buffer the collective reduces into, so the caller gives it up.

    Results: ``result`` is the reduced ``S``-element buffer (all-reduce), the gathered
    buffer (all-gather, chunk ``i`` from rank ``i``) or the reduced chunk ``rank``
    (reduce-scatter, ``chunk_bounds(S, N)[rank]``); ``None`` until ``done`` without error.

    Raises ``ValueError`` for invalid arguments and ``TypeError`` for non-float32 data.
    """

    def __init__(
        self,
        kind: str,
        rank: int,
        nranks: int,
        data: np.ndarray,
        *,
        step_base: int,
        slices: int = 1,
        step_timeout: float,
        channel: int = 0,
        copy: bool = True,
    ) -> None:
        if kind not in COLLECTIVE_KINDS:
            raise ValueError(f"unknown collective {kind!r}; expected one of {', '.join(COLLECTIVE_KINDS)}")
        if nranks < 1:
            raise ValueError(f"nranks must be >= 1, got {nranks}")
        if not 0 <= rank < nranks:
            raise ValueError(f"rank {rank} outside 0..{nranks - 1}")
        if not isinstance(data, np.ndarray) or data.dtype != np.float32 or data.ndim != 1:
            raise TypeError("data must be a 1-D numpy float32 array")
        if step_base < 0:
            raise ValueError(f"step_base must be >= 0, got {step_base}")
        if slices < 1:
            raise ValueError(f"slices must be >= 1, got {slices}")
        if not step_timeout > 0:
            raise ValueError(f"step_timeout must be > 0 s, got {step_timeout}")
        self.kind = kind
        self.rank = rank
        self.nranks = nranks
        self.step_base = step_base
        self.slices = slices
        self.step_timeout = float(step_timeout)
        self.channel = channel
        self.left = (rank - 1) % nranks
        self.right = (rank + 1) % nranks
        self._copy = copy

        # the chunk and slice layout is the same on every rank of a job: one copy (1,024 ranks)
        self._chunks, self._slices, self._slice_byte_starts = _layout(self._init_buffer(data), nranks, slices)

        n = nranks
        plan: list[tuple[int, int, bool]] = []  # (send chunk, recv chunk, reduce?)
        if kind in ("allreduce", "reducescatter"):
            plan += [((rank - s - 1) % n, (rank - s - 2) % n, True) for s in range(n - 1)]
        if kind in ("allreduce", "allgather"):
            plan += [((rank - s) % n, (rank - s - 1) % n, False) for s in range(n - 1)]
        self._plan = plan
        self.nsteps = len(plan)
        # A received slice may be applied only after every earlier send of the same chunk
        # has copied it out (the all-gather overwrites chunks the reduce-scatter sent).
        # (each chunk is sent at most twice, so this is O(steps), not O(steps**2): 1,024 ranks)
        sends_of: dict[int, list[int]] = {}
        for k, p in enumerate(plan):
            sends_of.setdefault(p[0], []).append(k)
        self._hazards = [tuple(k for k in sends_of.get(plan[i][1], ()) if k <= i) for i in range(self.nsteps)]
        self._sent = [[False] * len(self._slices[p[0]]) for p in plan]
        self._recv: list[_RecvStep | None] = [None] * self.nsteps
        self._waiting: set[tuple[int, int]] = set()  # complete, not yet applied
        self._starts: list[float | None] = [None] * self.nsteps
        self._ends: list[float | None] = [None] * self.nsteps
        self._nended = 0
        self._outbox: list[SendRequest] = []
        self._started = False
        self._last_rx = 0.0
        self.done = False
        self.error: str | None = None
        self.result: np.ndarray | None = None

    # --- public API ---------------------------------------------------------------

    @property
    def step_log(self) -> list[tuple[int, float, float]]:
        """``(step, start, end)`` for every completed step, CTH step numbers, ascending."""
        out = []
        for i in range(self.nsteps):
            start, end = self._starts[i], self._ends[i]
            if start is not None and end is not None:
                out.append((self.step_base + i, start, end))
        return out

    @property
    def last_step(self) -> int:
        """CTH step number after this collective's last step (next ``step_base``)."""
        return self.step_base + self.nsteps

    def start(self, now: float) -> None:
        """Begin: queue step 0's slices (raises ``RuntimeError`` when called twice)."""
        if self._started:
            raise RuntimeError("collective already started")
        self._started = True
        self._last_rx = now
        if self.nsteps == 0:
            self._finish()
            return
        for j in range(len(self._sent[0])):
            self._send_slice(0, j, now)
        self._progress(now)

    def on_delivery(self, d: DeliveryLike, now: float) -> bool:
        """Take one transport delivery; return False when it belongs to a later collective.

        A ``False`` delivery (a step at or after :attr:`last_step`) is left to the caller,
        who hands it to the next collective. Deliveries for steps before ``step_base``,
        from a rank other than the left neighbour or after the end are dropped with a
        warning (return True). Data outside the step's chunk fails the collective.
        """
        diff = (d.step - self.step_base) % _STEP_MOD
        if diff >= _STEP_MOD // 2:
            logger.warning("rank %d: dropped data of old step %d from rank %d", self.rank, d.step, d.src_rank)
            return True
        if diff >= self.nsteps:
            return False
        if d.src_rank != self.left:
            logger.warning(
                "rank %d: dropped step %d data from rank %d (left neighbour is %d)",
                self.rank, d.step, d.src_rank, self.left,
            )
            return True
        if self.done:
            return True
        self._last_rx = now
        i = diff
        chunk = self._plan[i][1]
        a, b = self._chunks[chunk]
        nbytes = (b - a) * _ITEM
        rs = self._recv[i]
        if rs is None:
            rs = self._recv[i] = self._new_recv(chunk, nbytes)
        payload = d.payload
        if type(payload) is not bytes and not (type(payload) is memoryview and payload.format == "B"):
            payload = memoryview(payload).cast("B")  # (the transport delivers bytes or byte views)
        lo = d.offset
        hi = lo + len(payload)
        if hi > nbytes:
            self._fail(
                f"step {self.step_base + i}: rank {d.src_rank} sent bytes {lo}..{hi} "
                f"beyond the {nbytes}-byte chunk"
            )
            return True
        rs.seen = True
        self._store(rs, chunk, lo, payload)
        starts = self._slice_byte_starts[chunk]
        slices = self._slices[chunk]
        j = _slice_at(starts, lo)
        while True:
            s_lo, s_hi = slices[j][0] * _ITEM, slices[j][1] * _ITEM
            rs.got[j] += max(0, min(hi, s_hi) - max(lo, s_lo))
            if rs.got[j] > s_hi - s_lo:
                self._fail(f"step {self.step_base + i}: rank {d.src_rank} sent slice {j} twice")
                return True
            if not rs.complete[j] and rs.got[j] == s_hi - s_lo:
                rs.complete[j] = True
                self._waiting.add((i, j))
            j += 1
            if j >= len(slices) or slices[j][0] * _ITEM >= hi:
                break
        self._progress(now)
        return True

    def poll(self, now: float) -> list[SendRequest]:
        """Return (and forget) the messages to send now; fires the step timeout when due."""
        if not self.done and self._started and now >= self._last_rx + self.step_timeout:
            i = self._nended_first_incomplete()
            self._fail(
                f"step {self.step_base + i}: no data from rank {self.left} within {self.step_timeout:g} s"
            )
        out, self._outbox = self._outbox, []
        return out

    def next_timer(self) -> float | None:
        """Absolute time at which :meth:`poll` must run next (the step timeout), or None."""
        if self.done or not self._started:
            return None
        return self._last_rx + self.step_timeout

    # --- internals ----------------------------------------------------------------

    def _nended_first_incomplete(self) -> int:
        for i in range(self.nsteps):
            if self._ends[i] is None:
                return i
        return self.nsteps - 1

    # The data model: the buffer, what a slice carries, how a received slice is applied and
    # what the result is. Here the real float32 data; DigestRingCollective overrides them.

    def _init_buffer(self, data: np.ndarray) -> int:
        """Keep this rank's copy of ``data`` (or ``data`` itself with ``copy=False``); return the buffer's
        length in elements."""
        if not self._copy and data.dtype == _DTYPE and data.flags.c_contiguous and data.flags.writeable:
            self._buf = data
        else:
            self._buf = np.array(data, dtype=_DTYPE, copy=True)
        return len(self._buf)

    def _new_recv(self, chunk: int, nbytes: int) -> _RecvStep:
        return _RecvStep(nbytes, len(self._slices[chunk]))

    def _store(self, rs: _RecvStep, chunk: int, lo: int, payload: memoryview) -> None:  # noqa: ARG002
        rs.buf[lo:lo + len(payload)] = payload

    def _slice_payload(self, chunk: int, j: int) -> bytes:
        """The bytes slice ``j`` of ``chunk`` starts with; zeros follow up to its length (the message's pad)."""
        a, _ = self._chunks[chunk]
        sa, sb = self._slices[chunk][j]
        return self._buf[a + sa : a + sb].tobytes()

    def _apply_slice(self, rs: _RecvStep, chunk: int, j: int, reduce: bool) -> None:
        a, _ = self._chunks[chunk]
        sa, sb = self._slices[chunk][j]
        if sb > sa:
            incoming = np.frombuffer(rs.buf, dtype=_DTYPE, count=sb - sa, offset=sa * _ITEM)
            target = self._buf[a + sa : a + sb]
            if reduce:
                np.add(target, incoming, out=target)
            else:
                target[:] = incoming

    def _final_result(self) -> np.ndarray:
        if self.kind == "reducescatter":
            a, b = self._chunks[self.rank]
            return self._buf[a:b].copy()
        return self._buf

    def _send_slice(self, i: int, j: int, now: float) -> None:
        chunk = self._plan[i][0]
        sa, sb = self._slices[chunk][j]
        payload = self._slice_payload(chunk, j)
        last = j == len(self._slices[chunk]) - 1
        self._outbox.append(SendRequest(self.right, self.step_base + i, sa * _ITEM, payload, last, self.channel,
                                        (sb - sa) * _ITEM - len(payload)))
        self._sent[i][j] = True
        if self._starts[i] is None:
            self._starts[i] = now

    def _progress(self, now: float) -> None:
        """Apply every complete slice whose hazards are clear, forwarding as we go."""
        changed = True
        while changed and self._waiting and not self.done:
            changed = False
            for i, j in sorted(self._waiting):
                if not _sent_all(self._sent, self._hazards[i], j):
                    continue
                self._waiting.discard((i, j))
                self._apply(i, j, now)
                changed = True
        if self._nended == self.nsteps and not self.done:
            self._finish()

    def _apply(self, i: int, j: int, now: float) -> None:
        _, chunk, reduce = self._plan[i]
        rs = self._recv[i]
        assert rs is not None
        self._apply_slice(rs, chunk, j, reduce)
        rs.applied[j] = True
        rs.napplied += 1
        if i + 1 < self.nsteps:
            self._send_slice(i + 1, j, now)
        if rs.napplied == len(rs.applied):
            self._ends[i] = now
            self._nended += 1
            self._recv[i] = None  # free the receive buffer

    def _finish(self) -> None:
        self.done = True
        self.result = self._final_result()

    def _fail(self, message: str) -> None:
        logger.warning("rank %d: %s", self.rank, message)
        self.error = message
        self.done = True
        self.result = None


class ChannelCollective:
    """One collective over ``channels`` rings (NCCL-style channels) on one rank.

    The buffer is cut into ``channels`` contiguous parts (:func:`chunk_bounds`); part c is an
    independent :class:`RingCollective` (same kind, ranks and step numbers) whose messages
    carry channel c, so each channel is its own transport flow with its own UDP source port
    (docs/DESIGN.md section 5). As in NCCL the channels are not synchronised within a
    collective: each runs its ring at its own pace, and the collective ends when every
    channel has. Only the all-reduce is split (its result, the whole reduced buffer, is the
    channels' results in order; an all-gather's or reduce-scatter's chunk ownership would
    change with the split). Same interface as :class:`RingCollective`: ``start``, ``poll``,
    ``on_delivery`` (routed by the delivery's ``channel``), ``next_timer``, ``done``,
    ``error`` (the first channel's, named), ``result``, ``step_log`` (per step the first
    channel's start and the last channel's end).

    Raises ``ValueError`` for ``channels < 1`` or a collective other than all-reduce with
    several channels, as :class:`RingCollective` for the rest.
    """

    def __init__(self, kind: str, rank: int, nranks: int, data: np.ndarray, *, step_base: int, channels: int,
                 slices: int = 1, step_timeout: float) -> None:
        if channels < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        if channels > 1 and kind != "allreduce":
            raise ValueError(f"{kind} over {channels} channels: only the all-reduce is split over channels")
        self.rings = [RingCollective(kind, rank, nranks, data[a:b], step_base=step_base, slices=slices,
                                     step_timeout=step_timeout, channel=c)
                      for c, (a, b) in enumerate(chunk_bounds(len(data), channels))]
        self.step_base = step_base
        self.nsteps = self.rings[0].nsteps
        self.result: np.ndarray | None = None

    @property
    def done(self) -> bool:
        """Every channel ended, or one failed."""
        return self.error is not None or all(r.done for r in self.rings)

    @property
    def error(self) -> str | None:
        """The first failed channel's error, ``"channel c: ..."``, or None."""
        for r in self.rings:
            if r.error is not None:
                return f"channel {r.channel}: {r.error}"
        return None

    @property
    def last_step(self) -> int:
        """CTH step number after this collective's last step (next ``step_base``)."""
        return self.step_base + self.nsteps

    @property
    def step_log(self) -> list[tuple[int, float, float]]:
        """``(step, start, end)`` per step every channel completed: the first channel's start, the last one's end."""
        logs = [{s: (a, b) for s, a, b in r.step_log} for r in self.rings]
        return [(s, min(lg[s][0] for lg in logs), max(lg[s][1] for lg in logs))
                for s in sorted(logs[0]) if all(s in lg for lg in logs)]

    def start(self, now: float) -> None:
        """Begin every channel."""
        for r in self.rings:
            r.start(now)
        self._check_result()

    def on_delivery(self, d: DeliveryLike, now: float) -> bool:
        """Hand a delivery to its channel's ring (:meth:`RingCollective.on_delivery`)."""
        c = getattr(d, "channel", 0)
        if not 0 <= c < len(self.rings):
            logger.warning("dropped data of channel %d (the collective has %d)", c, len(self.rings))
            return True
        taken = self.rings[c].on_delivery(d, now)
        self._check_result()
        return taken

    def poll(self, now: float) -> list[SendRequest]:
        """Every channel's messages to send now (and their step timeouts)."""
        out: list[SendRequest] = []
        for r in self.rings:
            out += r.poll(now)
        self._check_result()
        return out

    def next_timer(self) -> float | None:
        """The earliest channel timer, or None."""
        times = [t for t in (r.next_timer() for r in self.rings) if t is not None]
        return min(times) if times else None

    def _check_result(self) -> None:
        if self.result is None and all(r.done and r.error is None for r in self.rings):
            self.result = np.concatenate([r.result for r in self.rings])  # type: ignore[misc]


# --- digest payloads: exact, small per-rank state ---------------------------------------------

#: Bytes of the record a slice carries in a digest payload: (sum, count), two uint64 little-endian.
DIGEST_RECORD_BYTES = 16
_MASK64 = (1 << 64) - 1
_RECORD = struct.Struct("<QQ")  # a record on the wire
assert _RECORD.size == DIGEST_RECORD_BYTES


def digest_too_small(n_elements: int, nranks: int, slices: int) -> str | None:
    """Why a digest payload cannot carry this collective (a slice under 16 bytes), or None.

    The smallest slice is that of the smallest chunk (``n_elements // nranks`` elements) cut
    into ``min(slices, length)`` slices; every slice must hold the 16-byte record.
    """
    length = n_elements // nranks
    smallest = length // max(1, min(slices, length)) if length else 0
    if smallest * _ITEM >= DIGEST_RECORD_BYTES:
        return None
    return (f"digest payloads need at least {DIGEST_RECORD_BYTES // _ITEM} elements per slice: {n_elements * _ITEM} "
            f"bytes over {nranks} ranks x {slices} slices leave {smallest}")


def digest_present(nranks: int, n_elements: int, slices: int) -> np.ndarray:
    """``bool[nranks, max slices]``: which (chunk, slice) exist (a small chunk has fewer slices)."""
    counts = np.array([len(slice_bounds(b - a, slices)) for a, b in chunk_bounds(n_elements, nranks)])
    return np.arange(int(counts.max()))[None, :] < counts[:, None]


def digest_tokens(seed: int, iteration: int, rank: int, nranks: int, n_elements: int, slices: int, *,
                  job: int = 0) -> np.ndarray:
    """Rank ``rank``'s contribution tokens: ``uint64[nranks, max slices]``, one per (chunk, slice).

    Each token is SplitMix64 (Steele et al., OOPSLA 2014; the finaliser of Java's
    SplittableRandom) of the mixed ``(seed, job, iteration, rank, chunk, slice)``; slices a chunk
    does not have are 0. A digest all-reduce sums the tokens of every rank per (chunk, slice)
    modulo 2**64 and counts them: a lost, duplicated or twice-reduced contribution changes
    the count, a wrong or corrupted one the sum (with probability 1 - 2**-64).
    """
    present = digest_present(nranks, n_elements, slices)
    chunk = np.arange(nranks, dtype=np.uint64)[:, None]
    sl = np.arange(present.shape[1], dtype=np.uint64)[None, :]
    base = (((seed & _MASK64) * 0x9E3779B97F4A7C15 + (iteration & _MASK64) * 0xBF58476D1CE4E5B9
             + (rank & _MASK64) * 0x94D049BB133111EB + (job & _MASK64) * 0xE7037ED1A0B428DB) & _MASK64)
    with np.errstate(over="ignore"):
        z = np.uint64(base) + chunk * np.uint64(0xD6E8FEB86659FD93) + sl * np.uint64(0xA0761D6478BD642F) \
            + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return np.where(present, z, np.uint64(0))


def digest_records(kind: str, token_sum: np.ndarray, own: np.ndarray, present: np.ndarray, nranks: int,
                   rank: int | None) -> np.ndarray:
    """The records a digest collective must leave on ``rank``: ``uint64[chunks, max slices, 2]``
    of (sum, count) per (chunk, slice); reduce-scatter: chunk ``rank`` only (``[1, ...]``), every
    chunk for ``rank=None``.

    ``token_sum``: every rank's :func:`digest_tokens` summed modulo 2**64; ``own``: row ``c``
    is rank ``c``'s tokens of chunk ``c`` (what an all-gather copies); ``present``:
    :func:`digest_present`. (A verifier accumulates the two as the ranks start.)
    """
    if kind == "allgather":
        recs, count = own, 1
    else:
        recs, count = token_sum, nranks
    out = np.zeros(recs.shape + (2,), dtype=np.uint64)
    out[..., 0] = np.where(present, recs, np.uint64(0))
    out[..., 1] = np.where(present, np.uint64(count), np.uint64(0))
    return out[rank:rank + 1] if kind == "reducescatter" and rank is not None else out


def digest_expected(kind: str, seed: int, iteration: int, nranks: int, n_elements: int, slices: int,
                    rank: int, *, job: int = 0) -> np.ndarray:
    """:func:`digest_records` of rank ``rank`` from every rank's :func:`digest_tokens` (O(ranks**2))."""
    toks = np.stack([digest_tokens(seed, iteration, r, nranks, n_elements, slices, job=job) for r in range(nranks)])
    with np.errstate(over="ignore"):
        total = np.sum(toks, axis=0, dtype=np.uint64)
    own = toks[np.arange(nranks), np.arange(nranks)]
    return digest_records(kind, total, own, digest_present(nranks, n_elements, slices), nranks, rank)


def digest_problem(result: np.ndarray, expected: np.ndarray) -> str | None:
    """One line naming the first (chunk, slice) whose record differs, or None when equal."""
    if result.shape != expected.shape:
        return f"digest result of shape {result.shape}, expected {expected.shape}"
    bad = np.argwhere(np.any(result != expected, axis=-1))
    if not len(bad):
        return None
    c, j = (int(x) for x in bad[0])
    got_n, want_n = int(result[c, j, 1]), int(expected[c, j, 1])
    if got_n < want_n:
        why = "a contribution lost"
    elif got_n > want_n:
        why = "a contribution reduced twice or duplicated"
    else:
        why = "a contribution wrong or corrupted"
    return (f"chunk {c} slice {j}: {got_n} contributions, expected {want_n}, sum "
            f"{'right' if result[c, j, 0] == expected[c, j, 0] else 'wrong'} ({why}); "
            f"{len(bad)} (chunk, slice) records differ")


class DigestRingCollective(RingCollective):
    """:class:`RingCollective` whose chunks carry a 16-byte record instead of their elements.

    The messages, packets, sizes, steps and timing are those of the exact collective over
    ``n_elements`` float32 elements (every slice's payload has its real length: the record
    ``(sum, count)`` of :data:`DIGEST_RECORD_BYTES`, then zeros), but a rank keeps only one
    record per (chunk, slice), so its memory is ``nranks * slices * 16`` bytes plus the steps
    in flight, not the buffer. Reducing adds records (sum modulo 2**64, count); copying
    copies them. ``result`` is ``uint64[chunks, max slices, 2]`` (reduce-scatter: chunk
    ``rank`` only, ``[1, max slices, 2]``), to compare with :func:`digest_expected` by
    :func:`digest_problem`. ``tokens`` is this rank's :func:`digest_tokens`.

    Raises ``ValueError`` when a slice has fewer than 4 elements (16 bytes): the record must
    fit in every slice; other arguments as :class:`RingCollective`.
    """

    def __init__(self, kind: str, rank: int, nranks: int, n_elements: int, tokens: np.ndarray, *,
                 step_base: int, slices: int = 1, step_timeout: float) -> None:
        self._n_elements = int(n_elements)
        self._tokens = tokens
        super().__init__(kind, rank, nranks, np.empty(0, dtype=_DTYPE), step_base=step_base, slices=slices,
                         step_timeout=step_timeout)
        why = digest_too_small(self._n_elements, nranks, slices)
        if why is not None:
            raise ValueError(why)
        width = max(len(sl) for sl in self._slices)
        if tokens.shape != (nranks, width):
            raise ValueError(f"tokens of shape {tokens.shape}, expected {(nranks, width)}")
        rec = np.zeros((nranks, width, 2), dtype=np.uint64)
        if kind == "allgather":
            rec[rank, :, 0] = tokens[rank]
            rec[rank, :len(self._slices[rank]), 1] = 1
        else:
            rec[:, :, 0] = tokens
            for c, sl in enumerate(self._slices):
                rec[c, :len(sl), 1] = 1
        self._rec = rec
        # the same memory as flat uint64s (per-slice record reads and writes as Python ints, no numpy call)
        self._recq = memoryview(rec).cast("B").cast("Q")
        self._width = width

    def _init_buffer(self, data: np.ndarray) -> int:  # noqa: ARG002
        return self._n_elements

    def _new_recv(self, chunk: int, nbytes: int) -> _RecvStep:  # noqa: ARG002
        return _RecvStep(len(self._slices[chunk]) * DIGEST_RECORD_BYTES, len(self._slices[chunk]))

    def _store(self, rs: _RecvStep, chunk: int, lo: int, payload: memoryview) -> None:
        """Keep only the bytes of the slices' records (the first 16 bytes of each slice).

        The rest of a slice must be zeros: a packet with a byte set there was corrupted, and
        the record of that slice is spoilt (its sum inverted), so the check of the result names
        the slice as corrupted: the whole payload is checked, not only the records.
        """
        hi = lo + len(payload)
        starts = self._slice_byte_starts[chunk]
        n = len(starts)
        j = _slice_at(starts, lo)
        pos = lo  # payload bytes before ``pos`` are checked
        buf = rs.buf
        while j < n and starts[j] < hi:
            r_lo = starts[j]
            a = lo if lo > r_lo else r_lo
            b = r_lo + DIGEST_RECORD_BYTES
            if hi < b:
                b = hi
            if a < b:
                if a > pos and _nonzero_in(payload, pos - lo, a - lo):
                    self._spoil(rs, j - 1)
                k = j * DIGEST_RECORD_BYTES
                buf[k + a - r_lo:k + b - r_lo] = payload[a - lo:b - lo]
                pos = b
            j += 1
        if pos < hi and _nonzero_in(payload, pos - lo, hi - lo):
            self._spoil(rs, j - 1)

    def _spoil(self, rs: _RecvStep, j: int) -> None:
        """Slice ``j``'s padding was not zero: invert the sum of its record (received before it)."""
        k = j * DIGEST_RECORD_BYTES
        rs.buf[k:k + 8] = bytes(x ^ 0xFF for x in rs.buf[k:k + 8])
        logger.warning("rank %d: a digest payload from rank %d had bytes set beyond its record (corrupted)",
                       self.rank, self.left)

    def _slice_payload(self, chunk: int, j: int) -> bytes:
        """The slice's record (16 bytes); the zeros after it are the message's pad (the transport's
        packets of zeros are views of one constant, not a slice-long buffer per slice and step)."""
        q, k = self._recq, (chunk * self._width + j) * 2  # record (chunk, j) of _rec, as Python ints
        return _RECORD.pack(q[k], q[k + 1])

    def _apply_slice(self, rs: _RecvStep, chunk: int, j: int, reduce: bool) -> None:
        s, c = _RECORD.unpack_from(rs.buf, j * DIGEST_RECORD_BYTES)
        q, k = self._recq, (chunk * self._width + j) * 2  # record (chunk, j) of _rec, as Python ints
        if reduce:  # uint64 addition modulo 2**64, as numpy's
            s += q[k]
            c += q[k + 1]
            s &= _MASK64
            c &= _MASK64
        q[k] = s
        q[k + 1] = c

    def _final_result(self) -> np.ndarray:
        if self.kind == "reducescatter":
            return self._rec[self.rank:self.rank + 1].copy()
        return self._rec


def _nonzero(view: bytes | memoryview) -> bool:
    """True when any byte of ``view`` is not zero."""
    if len(view) <= len(_ZEROS):
        return not _ZEROS.startswith(view)  # a prefix of zeros: compared in place, no copy
    return bytes(view) != bytes(len(view))


def _nonzero_in(view: bytes | memoryview, a: int, b: int) -> bool:
    """``_nonzero(view[a:b])`` (``0 <= a``, ``0 <= b``); compiled, of a bytes or a contiguous byte view,
    compared in place in C (collectives.pxd: no slice, no call)."""
    if _TYPED:
        r = _nonzero_c(view, a, b, _ZEROS)  # noqa: F821  (-1: not such a view)
        if r >= 0:
            return r == 1
    return _nonzero(view[a:b])


_ZEROS = bytes(1 << 16)
#: compiled (collectives.pxd): _nonzero_in compares in C (_nonzero_c)
_TYPED = not __file__.endswith(".py")
