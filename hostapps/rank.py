"""One rank of one job as a state machine with no I/O and no clock: :class:`RankWorker`.

What a rank does lives here once (docs/DESIGN.md section 5, HOUSE_STYLE "Two modes, one
core"); two thin drivers run it: the asyncio worker process of real time
(:mod:`hostapps.worker`, over a UDP socket) and the event loop of virtual time
(:class:`emu.vtime.hosts.SimRank`). Like :class:`hostapps.transport.Transport`, which it owns,
the core never reads a clock or a socket; its four entry points are

- :meth:`RankWorker.on_datagram` ``(src_rank, datagram, ecn, now)``: a CTH datagram arrived;
- :meth:`RankWorker.poll` ``(now) -> [Outgoing]``: run everything due at ``now`` (start an
  iteration, feed deliveries to the collective, end it, drain) and return the datagrams to
  send (:class:`hostapps.transport.Outgoing`, addressed by rank);
- :meth:`RankWorker.next_timer` ``() -> float | None``: when :meth:`poll` must run next;
- :meth:`RankWorker.take_records` ``() -> [dict]``: the JSON-lines records made so far.

Lifecycle (``state``): ``WAITING`` until ``start_at``, then per iteration ``k``: ``RUNNING``
one :class:`hostapps.collectives.RingCollective` (step base ``k * steps_per_collective``),
``COMPUTING`` for :meth:`RankWorker.compute_gap` seconds between iterations (and before the
first with a compute schedule, :mod:`hostapps.workload`), and after the
last one ``DRAINING`` until every packet sent was acknowledged (at most ``step_timeout_s``:
the right neighbour needs our last step's data), then ``DONE``, or ``FAILED`` with ``error``.
Deliveries for a later collective (a faster left neighbour) wait in a backlog and are
replayed when that collective starts. After the end the core still acknowledges what the
left neighbour resends (:meth:`poll` then only runs the transport).

Times: ``now`` is the driver's clock (s); records carry ``now + clock_offset``, the run's
clock: wall-clock ``time.time()`` seconds in real time (the driver's monotonic loop clock
plus the offset to the wall clock sampled once at start; the Mininet hosts share that
clock), simulated seconds in virtual time (offset 0). ``spec.start_at`` is in the run's clock.

Records (:data:`RECORD_FIELDS`, the same keys in both modes, docs/interfaces.md section 4):

- ``{"kind": "step", "job", "rank", "iteration", "step", "start", "end"}`` per ring step
  (step-log definitions in :mod:`hostapps.collectives`);
- ``{"kind": "iteration", "job", "rank", "iteration", "start", "end", "verified",
  "digest", "warmup"}`` per collective: ``start`` when this rank started it, ``end`` when it
  had all its data, ``digest`` the SHA-256 hex digest of the result's float32 bytes (``""``
  when the driver asked for no digests), ``warmup`` true for the spec's first ``warmup``
  iterations (left out of the statistics, emu.metrics). Iterations are numbered from the
  spec's ``first_iteration`` (a scheme's blocks number theirs on, emu.runner.plan_blocks);
  the inputs follow those numbers;
- ``{"kind": "transport", "job", "rank", "packets_sent", "retransmissions", "timeouts",
  "nacks_received", "duplicates", "cnps_sent", "cnps_received", "timer_wakeups",
  "timer_late_wakeups", "timer_lag_total_s", "timer_lag_max_s", "cpu_s", "cpu_wait_s",
  "cpu_wall_s", "cpu_slices", "start_lateness_s", "rate_samples"}`` once at the end: the transport's counters (packets,
  :meth:`hostapps.transport.Transport.stats`); ``timer_*`` how late the driver woke the
  transport (``Transport.lag``: wake-ups, those over 2 ms late, total and largest lateness in
  s); ``cpu_s``, ``cpu_wait_s`` (runnable but waiting for a CPU), ``cpu_wall_s`` and
  ``cpu_slices`` (times scheduled onto a CPU) of the iterations (:func:`schedstat`); ``start_lateness_s`` how much later than the common
  start ``spec.start_at`` this rank began its first iteration (s; null when it never began
  or had no start time; 0 in virtual time, where every rank starts on time);
  ``rate_samples`` ``[[t, bit/s], ...]`` in the run's clock.
  ``timer_*`` and ``cpu_*`` measure the machine a real-time run shares: they are null in
  virtual time (``measured=False``: every timer fires on its due time and nothing competes
  for a CPU), and ``cpu_*`` are null too where the kernel has no /proc/self/schedstat;
- ``{"kind": "error", "job", "rank", "message"}`` when the rank fails (then the transport
  record follows);
- ``{"kind": "compute", "job", "rank", "iteration", "start", "end"}`` per training iteration
  that computes (hostapps.workload): ``iteration`` is the training iteration (collectives
  ``iteration * buckets ...``), ``start``/``end`` its compute (a model's overlaps its buckets'
  collectives; a straggler's factor and delay included).

Inputs and verification: rank ``r``'s input of iteration ``k`` is
``default_rng([seed, job_id, r, k]).standard_normal(size_bytes // 4).astype(float32)``
(:func:`make_input`). A result is checked against the float64 sum: all-reduce per element
``|x - ref| <= N * eps32 * sum_i |x_i|`` (``eps32 = 2**-23``; a float32 sum of N terms in any
order has error at most ``(N-1) * u * sum|x_i|`` with ``u = eps32 / 2``, Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., section 4.2, so the bound leaves a factor of 2
plus the rounding of the final value); reduce-scatter the same on chunk ``rank``; all-gather
bit-exact. With ``payload: digest`` (:class:`hostapps.collectives.DigestRingCollective`) a rank's
"input" is its :func:`digest_input` tokens (one uint64 per chunk and slice, from ``seed``,
``job_id``, rank and iteration) and its result the ``(sum, count)`` records per chunk and
slice, checked exactly against :func:`hostapps.collectives.digest_records` (a chunk lost,
duplicated, reduced twice or corrupted is named); ``digest`` is then the SHA-256 of the
records' uint64 bytes. Who computes the expectation is the driver's :class:`Verification`: a worker
process regenerates every rank's input (:class:`LocalVerifier`; results are kept and checked
after the drain when they fit in :data:`DEFER_VERIFY_BYTES`, so the check never delays the
next collective), virtual time sums the inputs once per job (:class:`emu.vtime.hosts.Verifier`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hostapps.collectives import (
    ChannelCollective,
    DigestRingCollective,
    RingCollective,
    SendRequest,
    chunk_bounds,
    digest_expected,
    digest_problem,
    digest_tokens,
    steps_per_collective,
)
from hostapps.spec import WorkerSpec, transport_config
from hostapps.transport import Outgoing, Transport, TransportConfig

logger = logging.getLogger(__name__)

#: float32 machine epsilon (2**-23), the unit of the verification bound.
EPS32 = float(np.finfo(np.float32).eps)
#: Inputs and results of all iterations are kept (and verified at the end) below this size.
DEFER_VERIFY_BYTES = 256 * 1024 * 1024

#: The transport record's counters, from :meth:`hostapps.transport.Transport.stats` (packets).
TRANSPORT_COUNTERS = ("packets_sent", "retransmissions", "timeouts", "nacks_received", "duplicates",
                      "cnps_sent", "cnps_received")
#: The transport record's machine fields (null in virtual time, see the module docstring).
TIMER_FIELDS = ("timer_wakeups", "timer_late_wakeups", "timer_lag_total_s", "timer_lag_max_s")
CPU_FIELDS = ("cpu_s", "cpu_wait_s", "cpu_wall_s", "cpu_slices")
#: Every record kind and its keys in order, the same in both modes.
RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "step": ("kind", "job", "rank", "iteration", "step", "start", "end"),
    "iteration": ("kind", "job", "rank", "iteration", "start", "end", "verified", "digest", "warmup"),
    "transport": ("kind", "job", "rank", *TRANSPORT_COUNTERS, *TIMER_FIELDS, *CPU_FIELDS, "start_lateness_s",
                  "rate_samples"),
    "error": ("kind", "job", "rank", "message"),
    "compute": ("kind", "job", "rank", "iteration", "start", "end"),
}

#: :attr:`RankWorker.state` values, in order (``state >= DONE``: ended).
WAITING, RUNNING, COMPUTING, DRAINING, DONE, FAILED = range(6)


# --- inputs and verification ---------------------------------------------------------


#: Elements generated, cast or checked at a time (512 KiB of float64: a scratch buffer that stays in
#: the cache, instead of a whole buffer's float64 temporaries on fresh pages).
CHUNK_ELEMENTS = 1 << 16


def make_input(spec: WorkerSpec, rank: int, iteration: int) -> np.ndarray:
    """Rank ``rank``'s float32 input of ``iteration``, shape ``(size_bytes // 4,)``:
    ``default_rng([seed, job_id, rank, iteration]).standard_normal(n).astype(float32)``.

    Generated :data:`CHUNK_ELEMENTS` at a time into one float64 scratch buffer and cast into the
    result: the same values bit for bit (the generator's normals do not depend on how many are
    asked at once; the cast rounds each the same), without the whole float64 array.
    """
    rng = np.random.default_rng([spec.seed, spec.job_id, rank, iteration])
    n = spec.n_elements
    out = np.empty(n, dtype=np.float32)
    scratch = np.empty(min(n, CHUNK_ELEMENTS), dtype=np.float64)
    for a in range(0, n, CHUNK_ELEMENTS):
        part = scratch if n - a >= CHUNK_ELEMENTS else scratch[:n - a]
        rng.standard_normal(out=part)
        out[a:a + len(part)] = part
    return out


def digest_input(spec: WorkerSpec, rank: int, iteration: int) -> np.ndarray:
    """Rank ``rank``'s tokens of ``iteration`` with ``payload: digest`` (:func:`hostapps.collectives.digest_tokens`)."""
    return digest_tokens(spec.seed, iteration, rank, spec.nranks, spec.n_elements, spec.slices, job=spec.job_id)


def rank_input(spec: WorkerSpec, rank: int, iteration: int) -> np.ndarray:
    """Rank ``rank``'s input of ``iteration`` for the spec's payload: :func:`make_input` or :func:`digest_input`."""
    if spec.payload == "digest":
        return digest_input(spec, rank, iteration)
    return make_input(spec, rank, iteration)


def verify(spec: WorkerSpec, iteration: int, result: np.ndarray, own_input: np.ndarray | None = None) -> str | None:
    """Check this rank's result of ``iteration``; return None when right, else one line why."""
    n = spec.nranks
    if spec.payload == "digest":  # the tokens are cheap: every rank's, O(ranks**2)
        want = digest_expected(spec.collective, spec.seed, iteration, n, spec.n_elements, spec.slices, spec.rank,
                               job=spec.job_id)
        return digest_check(spec, iteration, result, want)
    inputs = [
        own_input if (r == spec.rank and own_input is not None) else make_input(spec, r, iteration)
        for r in range(n)
    ]
    return check_result(spec, iteration, result, expected_result(spec, inputs))


def expected_result(spec: WorkerSpec, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """What rank ``spec.rank`` must hold given every rank's input (list in rank order).

    Returns ``(expected, tol)``: all-gather, the gathered float32 buffer and None (bit-exact);
    all-reduce / reduce-scatter, the float64 sum over ``[a, b)`` (the whole buffer or chunk
    ``rank``) and the per-element bound ``N * eps32 * sum_i |x_i|`` (module docstring).
    """
    n = spec.nranks
    bounds = chunk_bounds(spec.n_elements, n)
    if spec.collective == "allgather":
        return np.concatenate([inputs[i][a:b] for i, (a, b) in enumerate(bounds)]), None
    a, b = (0, spec.n_elements) if spec.collective == "allreduce" else bounds[spec.rank]
    ref = np.zeros(b - a, dtype=np.float64)
    mag = np.zeros(b - a, dtype=np.float64)
    for x in inputs:
        part = x[a:b].astype(np.float64)
        ref += part
        mag += np.abs(part)
    return ref, n * EPS32 * mag


def check_result(spec: WorkerSpec, iteration: int, result: np.ndarray,
                 expected: tuple[np.ndarray, np.ndarray | None]) -> str | None:
    """None when ``result`` matches :func:`expected_result`'s ``(expected, tol)``, else one line why."""
    ref, tol = expected
    if tol is None:
        if result.shape == ref.shape and result.tobytes() == ref.tobytes():
            return None
        bad = _first_mismatch(result, ref.astype(np.float64), np.zeros(ref.shape))
        return f"iteration {iteration}: all-gather result differs from the inputs {bad}"
    if result.shape == ref.shape and _within(result, ref, tol):
        return None
    return f"iteration {iteration}: {spec.collective} result differs from the float64 sum {_first_mismatch(result, ref, tol)}"


def _within(result: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> bool:
    """``np.all(np.abs(result.astype(np.float64) - ref) <= tol)`` (same shapes), :data:`CHUNK_ELEMENTS`
    at a time in one scratch buffer instead of three whole-buffer temporaries."""
    n = len(ref)
    scratch = np.empty(min(n, CHUNK_ELEMENTS), dtype=np.float64)
    for a in range(0, n, CHUNK_ELEMENTS):
        b = min(n, a + CHUNK_ELEMENTS)
        d = scratch[:b - a]
        np.copyto(d, result[a:b])  # result[a:b].astype(np.float64)
        np.subtract(d, ref[a:b], out=d)
        np.abs(d, out=d)
        if not np.all(d <= tol[a:b]):
            return False
    return True


def digest_check(spec: WorkerSpec, iteration: int, result: np.ndarray, expected: np.ndarray) -> str | None:
    """None when a digest result equals the records ``expected``, else one line why."""
    problem = digest_problem(result, expected)
    if problem is None:
        return None
    return f"iteration {iteration}: {spec.collective} digest records differ: {problem}"


def _first_mismatch(result: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> str:
    if result.shape != ref.shape:
        return f"(shape {result.shape}, expected {ref.shape})"
    bad = np.nonzero(np.abs(result.astype(np.float64) - ref) > tol)[0]
    i = int(bad[0])
    return f"at element {i} ({float(result[i])!r} vs {float(ref[i])!r}, {len(bad)} elements off)"


def digest(result: np.ndarray) -> str:
    """SHA-256 hex digest of the result's float32 little-endian bytes (digest payloads: the
    records' uint64 little-endian bytes)."""
    dtype = "<u8" if result.dtype.kind == "u" else "<f4"
    return hashlib.sha256(np.ascontiguousarray(result, dtype=dtype).tobytes()).hexdigest()


_digest_of = digest  # for methods whose keyword argument ``digest`` hides the function


def schedstat() -> tuple[float, float, float, int] | None:
    """(time on a CPU, time runnable but waiting for one, wall clock (s), timeslices) of this process.

    From /proc/self/schedstat (Linux, ``sched_info``: ns on CPU, ns waiting on a runqueue,
    times it was scheduled onto a CPU); the waiting time is CPU the process wanted while
    other processes had it, and per timeslice it is the mean wait for a CPU each time the
    worker woke (emu.vtime.hostcost's ``run_wait_s``). None when the kernel does not provide it.
    """
    try:
        run_ns, wait_ns, slices = Path("/proc/self/schedstat").read_text().split()[:3]
    except (OSError, ValueError):
        return None
    return int(run_ns) / 1e9, int(wait_ns) / 1e9, time.monotonic(), int(slices)


class Verification(Protocol):
    """Who checks a rank's results: :class:`LocalVerifier` or ``emu.vtime.hosts.Verifier``.

    ``defer``: results are kept and checked after the drain instead of at each iteration's end.
    """

    defer: bool
    #: the verifier keeps the array given to :meth:`add_input` (so the collective must not reduce into it)
    keeps_inputs: bool

    def add_input(self, iteration: int, rank: int, data: np.ndarray) -> None:
        """Rank ``rank`` starts ``iteration`` with ``data`` (float32, ``size_bytes // 4``)."""

    def check_digest(self, iteration: int, rank: int, result: np.ndarray, *,
                     digest: bool = True) -> tuple[str | None, str]:
        """(None when right else one line why, :func:`digest` of the result or ``""``)."""


class LocalVerifier:
    """A worker process's verification: every rank's input regenerated (:func:`verify`).

    Keeps this rank's own inputs from :meth:`add_input` until their check. ``defer`` when
    ``2 * iterations * size_bytes <= DEFER_VERIFY_BYTES`` (inputs and results kept), and
    always with digest payloads (small records).
    """

    keeps_inputs = True  #: this rank's own inputs wait for their check

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.defer = spec.payload == "digest" or 2 * spec.iterations * spec.n_elements * 4 <= DEFER_VERIFY_BYTES
        self._own: dict[int, np.ndarray] = {}

    def add_input(self, iteration: int, rank: int, data: np.ndarray) -> None:  # noqa: ARG002
        """Keep this rank's input of ``iteration`` for its check."""
        self._own[iteration] = data

    def check_digest(self, iteration: int, rank: int, result: np.ndarray, *,  # noqa: ARG002
                     digest: bool = True) -> tuple[str | None, str]:
        """:func:`verify` and the digest of ``result``."""
        problem = verify(self.spec, iteration, result, self._own.pop(iteration, None))
        return problem, _digest_of(result) if digest else ""


class RankWorker:
    """One rank of one job: a :class:`Transport` (with DCQCN) and one collective per iteration.

    Args:
        spec: the rank's validated spec (:class:`hostapps.spec.WorkerSpec`).
        verifier: checks the results (default :class:`LocalVerifier`).
        config: the transport's configuration (default ``transport_config`` of the spec).
        inputs: ``inputs(k)`` is this rank's input of iteration ``k`` (default
            :func:`rank_input`: float32 data, or digest tokens; a driver may pass pre-generated ones).
        clock_offset: run's clock minus the driver's clock (s; 0 in virtual time).
        measured: the driver runs on a real machine: the transport record's ``timer_*`` and
            ``cpu_*`` are measured (else null, see the module docstring).
        record_digest: put the result's SHA-256 in the iteration records (else ``""``).
        barrier: the job's :class:`hostapps.barrier.StepBarrier` (the ideal-alignment
            reference): the collective's send requests wait until every rank reached their step.

    Where workload features plug in: :meth:`compute_gap` (compute time between
    collectives), :meth:`make_collective` (the collective of an iteration: kind, size, step
    base), :meth:`_send` (every send request of the collective passes here: a per-step
    barrier holds requests back), ``start_at`` (time of the first iteration, run's clock).
    """

    def __init__(self, spec: WorkerSpec, *, verifier: Verification | None = None,
                 config: TransportConfig | None = None, inputs: Callable[[int], np.ndarray] | None = None,
                 clock_offset: float = 0.0, measured: bool = False, record_digest: bool = True,
                 barrier: Any = None) -> None:
        self.spec = spec
        self.barrier = barrier
        self.verifier: Verification = verifier if verifier is not None else LocalVerifier(spec)
        if config is None:
            config = transport_config(spec.line_rate_bps, spec.mtu, spec.transport)
        self.transport = Transport(spec.job_id, spec.rank, config, spec.rate_control, spec.rate_params,
                                   channels=spec.channels)
        self.inputs = inputs if inputs is not None else (lambda k: rank_input(spec, spec.rank, k))
        #: the inputs are generated here for this iteration alone and the verifier does not keep them:
        #: the collective may reduce into them instead of a copy (RingCollective copy=False)
        self._give_inputs = inputs is None and not getattr(self.verifier, "keeps_inputs", True)
        self.clock_offset = clock_offset
        self.measured = measured
        self.record_digest = record_digest
        self.steps = steps_per_collective(spec.collective, spec.nranks)
        #: time of iteration 0 in the driver's clock
        self.start_at = (spec.start_at or 0.0) - clock_offset
        self.state = WAITING
        self.iteration = 0  #: the iteration running or next
        self.iterations_done = 0
        self.coll: RingCollective | None = None
        self.coll_start = 0.0
        self.backlog: list[Any] = []  # deliveries for later collectives
        self.phase_at: float | None = self.start_at  # next start / end of compute / drain limit
        #: the compute schedule (hostapps.workload); None: plain ``compute_s`` between collectives
        self.schedule = spec.compute
        self.train_start = self.start_at  #: start of the current training iteration (driver's clock)
        self.error: str | None = None
        self.failures: list[str] = []
        self._kept: list[tuple[int, float, float, np.ndarray]] = []  # deferred checks
        self._records: list[dict[str, Any]] = []
        self._head = {"job": spec.job_id, "rank": spec.rank}
        self._sched0: tuple[float, float, float] | None = None
        #: how late this rank began its first iteration after ``start_at`` (s), once it has
        self.start_lateness: float | None = None
        if self.schedule is not None:  # iteration 0 computes before its first collective
            self._record_compute(0, self.start_at)
            self.phase_at = self.start_at + self.schedule.ready_after_s(0)
        # on_datagram only feeds the transport: bind it straight through (one call less per packet)
        # (getattr: the bound method; a compiled worker's typed transport would give its C method instead)
        self.on_datagram = getattr(self.transport, "on_datagram")  # noqa: B009

    # -- entry points ----------------------------------------------------------------
    def on_datagram(self, src_rank: int, datagram: bytes | memoryview, ecn: int, now: float) -> None:
        """A CTH datagram from ``src_rank`` (-1 if unknown) with IP ECN ``ecn`` arrived at ``now``.

        (Each instance binds this name to its transport's ``on_datagram``, which it calls.)
        """
        self.transport.on_datagram(src_rank, datagram, ecn, now)

    def poll(self, now: float) -> list[Outgoing]:
        """Run everything due at ``now``; return the datagrams to send now."""
        tr = self.transport
        if self.state >= DONE:  # ended: still acknowledge what the left neighbour resends
            return tr.poll(now)
        coll = self.coll
        deliveries = tr.deliveries()
        if deliveries:
            if coll is None or coll.done or self.state != RUNNING:
                self.backlog.extend(deliveries)
            else:
                for d in deliveries:
                    if not coll.on_delivery(d, now):
                        self.backlog.append(d)
        state = self.state
        if (state == WAITING or state == COMPUTING) and self.phase_at is not None and now >= self.phase_at:
            self._start_iteration(now)
        if self.barrier is not None:
            released = self.barrier.take(self.spec.rank)
            if released:
                self._transmit(released, now)
        if self.state == RUNNING:  # _run_collective, inlined (per-packet path)
            coll = self.coll
            requests = coll.poll(now)  # type: ignore[union-attr]
            if requests:
                self._send(requests, now)
            if coll.done:  # type: ignore[union-attr]
                self._end_iteration(now)
        if self.state == DRAINING and (tr.idle() or (self.phase_at is not None and now >= self.phase_at)):
            self._finish()
        if self.state >= DONE:
            return []
        out = tr.poll(now)
        if out and self.state == DRAINING and tr.idle():
            self._finish()
        return out

    def next_timer(self) -> float | None:
        """When :meth:`poll` must run next (driver's clock, s), or None (nothing due; ended)."""
        state = self.state
        if state >= DONE:
            return None
        t = self.transport.next_timer()
        if state == RUNNING:
            coll = self.coll
            if coll is not None:
                tc = coll.next_timer()
                if tc is not None and (t is None or tc < t):
                    t = tc
        elif self.phase_at is not None and (t is None or self.phase_at < t):
            t = self.phase_at  # WAITING, COMPUTING, DRAINING
        return t

    def take_records(self) -> list[dict[str, Any]]:
        """Return (and forget) the records made since the last call (:data:`RECORD_FIELDS`)."""
        out, self._records = self._records, []
        return out

    def interrupt(self, message: str) -> None:
        """End this rank from outside (signal, time limit, another rank failed): error and transport records."""
        if self.state < DONE:
            self._fail(message)

    @property
    def done(self) -> bool:
        """True once the rank ended (``DONE`` or ``FAILED``)."""
        return self.state >= DONE

    # -- workload: where features plug in ----------------------------------------------
    def compute_gap(self, iteration: int, now: float) -> float:
        """Wait (s) after collective ``iteration`` ended at ``now`` before the next one starts.

        With a schedule (hostapps.workload): a new training iteration computes from ``now``
        (its ``compute`` record) and its first bucket is ready after ``ready_after_s``; a later
        bucket waits until it is ready (0 if the backward pass already made it). Without one:
        ``compute_s``, recorded as that iteration's compute.
        """
        nxt = iteration + 1
        sched = self.schedule
        if sched is None:
            if self.spec.compute_s > 0:
                self._record_compute(nxt, now, self.spec.compute_s)
            return self.spec.compute_s
        t, b = divmod(nxt, sched.buckets)
        if b == 0:
            self.train_start = now
            self._record_compute(t, now)
        return max(0.0, self.train_start + sched.ready_after_s(nxt) - now)

    def _record_compute(self, t: int, start: float, duration: float | None = None) -> None:
        """A ``compute`` record: training iteration ``t`` computes from ``start`` for its compute time."""
        if duration is None:
            assert self.schedule is not None
            duration = self.schedule.compute_s(t)
        off = self.clock_offset
        self._records.append({"kind": "compute", **self._head, "iteration": t, "start": start + off,
                              "end": start + duration + off})

    def make_collective(self, iteration: int, data: np.ndarray) -> RingCollective:
        """The collective of ``iteration`` on ``data`` (steps from ``iteration * steps``); with
        ``payload: digest`` ``data`` is the tokens of a :class:`DigestRingCollective`."""
        spec = self.spec
        if spec.channels > 1:  # NCCL-style channels: the buffer over that many rings
            return ChannelCollective(spec.collective, spec.rank, spec.nranks, data,  # type: ignore[return-value]
                                     step_base=iteration * self.steps, channels=spec.channels,
                                     slices=spec.slices, step_timeout=spec.step_timeout_s)
        if spec.payload == "digest":
            return DigestRingCollective(spec.collective, spec.rank, spec.nranks, spec.n_elements, data,
                                        step_base=iteration * self.steps, slices=spec.slices,
                                        step_timeout=spec.step_timeout_s)
        return RingCollective(spec.collective, spec.rank, spec.nranks, data, step_base=iteration * self.steps,
                              slices=spec.slices, step_timeout=spec.step_timeout_s, copy=not self._give_inputs)

    def _send(self, requests: list[SendRequest], now: float) -> None:
        """Hand the collective's send requests to the transport (through the barrier, if any)."""
        if self.barrier is not None:
            requests = self.barrier.submit(self.spec.rank, requests)
        self._transmit(requests, now)

    def _transmit(self, requests: list[SendRequest], now: float) -> None:
        tr = self.transport
        for req in requests:
            tr.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last, channel=req.channel,
                    pad=req.pad)

    # -- the lifecycle -------------------------------------------------------------------
    def _run_collective(self, now: float) -> None:
        coll = self.coll
        assert coll is not None
        requests = coll.poll(now)
        if requests:
            self._send(requests, now)
        if coll.done:
            self._end_iteration(now)

    def _start_iteration(self, now: float) -> None:
        spec, k = self.spec, self.iteration
        if k == 0:
            if self.measured:
                self._sched0 = schedstat()
            if spec.start_at is not None:  # against its scheduled start (after a compute schedule's first compute)
                due = self.phase_at if self.phase_at is not None else self.start_at
                self.start_lateness = round(max(0.0, now - due), 6)
        label = spec.first_iteration + k
        data = self.inputs(label)
        self.verifier.add_input(label, spec.rank, data)
        coll = self.make_collective(k, data)  # steps from k: the switches' trackers restart with each block
        del data
        self.coll = coll
        self.coll_start = now
        self.state = RUNNING
        self.phase_at = None
        coll.start(now)
        backlog, self.backlog = self.backlog, []
        for d in backlog:
            if not coll.on_delivery(d, now):
                self.backlog.append(d)

    def _end_iteration(self, now: float) -> None:
        spec, k, coll = self.spec, self.iteration, self.coll
        assert coll is not None
        off = self.clock_offset
        end = max(e for _, _, e in coll.step_log) if coll.step_log else now
        rec, head = self._records.append, self._head
        label = spec.first_iteration + k
        for step, s_start, s_end in coll.step_log:
            rec({"kind": "step", **head, "iteration": label, "step": step, "start": s_start + off,
                 "end": s_end + off})
        if coll.error is not None:
            self._fail(coll.error)
            return
        assert coll.result is not None
        if self.verifier.defer:
            self._kept.append((label, self.coll_start, end, coll.result))
        else:
            self._check(label, self.coll_start, end, coll.result)
        self.coll = None
        self.iterations_done = k + 1
        self.iteration = k + 1
        if self.iteration < spec.iterations:
            gap = self.compute_gap(k, now)
            if gap > 0:
                self.state = COMPUTING
                self.phase_at = now + gap
            else:
                self._start_iteration(now)
                self._run_collective(now)
        else:
            self.state = DRAINING
            self.phase_at = now + spec.step_timeout_s

    def _check(self, k: int, start: float, end: float, result: np.ndarray) -> None:
        problem, text = self.verifier.check_digest(k, self.spec.rank, result, digest=self.record_digest)
        if problem is not None:
            self.failures.append(problem)
            logger.error("job %d rank %d: %s", self.spec.job_id, self.spec.rank, problem)
        off = self.clock_offset
        self._records.append({"kind": "iteration", **self._head, "iteration": k, "start": start + off,
                              "end": end + off, "verified": problem is None, "digest": text,
                              "warmup": k - self.spec.first_iteration < self.spec.warmup})

    def _finish(self) -> None:
        if not self.transport.idle():
            logger.warning("job %d rank %d: last packets not acknowledged within %.1f s",
                           self.spec.job_id, self.spec.rank, self.spec.step_timeout_s)
        kept, self._kept = self._kept, []
        for k, start, end, result in kept:
            self._check(k, start, end, result)
        if self.failures:
            self._fail(self.failures[0])
            return
        self.state = DONE
        self._close()

    def _fail(self, message: str) -> None:
        self.error = message
        self.state = FAILED
        self._records.append({"kind": "error", **self._head, "message": message})
        self._close()

    def _close(self) -> None:
        stats = self.transport.stats()
        off = self.clock_offset
        samples = stats.get("rate_samples", [])
        if off:
            samples = [[t + off, r] for t, r in samples]
        timer: dict[str, Any] = dict.fromkeys(TIMER_FIELDS)
        cpu: dict[str, Any] = dict.fromkeys(CPU_FIELDS)
        if self.measured:
            timer = {f"timer_{k}": v for k, v in self.transport.lag.items()}
            end = schedstat()
            if self._sched0 is not None and end is not None:
                start = self._sched0
                cpu = {"cpu_s": round(end[0] - start[0], 6), "cpu_wait_s": round(end[1] - start[1], 6),
                       "cpu_wall_s": round(end[2] - start[2], 6), "cpu_slices": end[3] - start[3]}
        self._records.append({"kind": "transport", **self._head, **{k: stats.get(k, 0) for k in TRANSPORT_COUNTERS},
                              **timer, **cpu, "start_lateness_s": self.start_lateness, "rate_samples": samples})
