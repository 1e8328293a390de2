"""Host processing time in virtual time: what the real rank worker spends per packet and byte.

Virtual time runs a host's transport, DCQCN and collective in zero simulated time by default
(data-centre hosts: NIC offload, microseconds per message). The real-time worker
(:mod:`hostapps.worker`: Python, asyncio, one UDP socket) is not free: every datagram it
reads, every datagram it sends and every wake-up of its event loop costs CPU time, and on a
shared machine it also waits for a CPU before it runs. :class:`HostCost` is that cost as a
linear model, per rank (one worker process each, so one CPU each):

- a wake-up (the worker becomes runnable: a datagram arrived while it slept, or its timer
  fired) first waits ``run_wait_s`` on average for a CPU (seeded; 0 on a quiet machine), then
  costs ``wake_s`` (the event loop's epoll and dispatch). The wait is exponential when
  ``run_wait_share`` is 1; with a share ``p`` < 1 a wake-up finds its CPU taken with
  probability ``p`` and then waits with mean ``run_wait_s / p``, else it runs at once (the
  same mean, a longer tail: other processes hold a CPU for a slice of milliseconds). That wait
  is exponential when ``run_wait_sigma`` is 0, else lognormal with that shape (log-space
  standard deviation): a longer tail still. :func:`emu.hostcal.wait_shape` fits the share
  and the shape to a run's late wake-ups and its latest one (:func:`draw_wait`);
- each datagram read costs ``rx_packet_s + rx_byte_s * len`` (``recvmsg``, the transport's
  ACK/NACK/CNP bookkeeping, the collective's copy and reduction of the payload);
- each datagram sent costs ``tx_packet_s + tx_byte_s * len`` (the transport's framing and
  pacing, DCQCN, ``sendmsg``); a datagram leaves when its cost has been spent;
- its timer fires at the first multiple of ``timer_resolution_s`` after it went to sleep that
  is not before the time asked (the real worker's asyncio loop waits in ``epoll_wait``, whose
  timeout Python rounds up to whole milliseconds: ``selectors.EpollSelector.select``), so a
  timer is up to that much late (0: on time);
- the worker does one thing at a time: what arrives while it is busy waits in the socket
  and is read in the next batch (as :meth:`hostapps.aio.UdpDriver._on_readable` does, up to
  :data:`hostapps.aio.RECV_BATCH` datagrams), a timer that falls due while it is busy runs
  when it is free.

The switches are processes too (:mod:`emu.embedded.switch`: the same core on an asyncio
loop, uvloop when installed, one per switch) and on a shared machine they wait for a CPU as
the workers do (measured: as long per wake-up as the workers, 55-58 us of CPU per frame).
With the switch terms set, :class:`CostedSimSwitch` makes each switch one CPU in the same way:

- a wake-up (a frame arrived while it slept, or its departure timer fired) first waits
  ``switch_run_wait_s`` on average for a CPU (seeded; its share of wake-ups that wait is
  ``switch_run_wait_share``, its shape ``switch_run_wait_sigma``, as for the workers), then each frame read
  costs ``switch_packet_s`` (AF_PACKET read, the P4 pipeline, the traffic manager, the
  send) and enters the traffic manager at the time it has been read; what arrives meanwhile
  waits for the next run;
- the frames due by the end of the run leave then (a departure is late by what the switch
  waited); its departure timer fires at the deadline. (The real switch's loop timers have
  1 ms resolution but fire early as often as late: uvloop rounds a delay to the nearest ms,
  and :mod:`emu.embedded.portio` takes a timer up to 1 ms early as due, so no rounding here.)

With ``cpus`` set (a whole number > 0; 0, the default: each process a CPU of its own) the ranks
and switches share that many CPUs (:class:`CpuPool`), as a real-time run's processes share the
machine's: a process that wakes first waits its draw (the machine's other work, its mean topped
up so that with the pool's queue it is the measured mean) and then for one of the pool's CPUs
(first come, first served: the run's own processes waking together at a step's end wait for
each other). Background sources do not take a CPU of the pool (their send costs nothing here).

The traffic manager keeps serialising on its own schedule (:mod:`emu.embedded.tm`: a
packet starts service when the port is free, back-dated like a real-time switch's), so a
late switch delays frames, it does not slow the link. With the model on, the links are
Mininet's (:class:`emu.vtime.network.SimNetwork` ``mininet_links``): a host's link is a veth
pair (no serialisation, no delay) and a switch egress serialises a frame's own bytes, as the
real-time switch does (no Ethernet preamble, FCS or gap).

``len`` is the UDP payload (the CTH datagram) in bytes. All times are seconds; the two shares
(:data:`SHARE_FIELDS`) are fractions in (0, 1], the two shapes (:data:`SHAPE_FIELDS`) numbers >= 0,
``cpus`` a whole number >= 0. The values
come from ``symphony-emu calibrate-host`` (:mod:`emu.hostcal`), which runs the real worker
on this machine and fits the model to the CPU time of each event loop callback; the file it
writes is read by :func:`load`. :meth:`HostCost.dilated` gives the cost of a real-time run
dilated by D (emu.dilation: its hosts' CPU time is the same in wall-clock seconds, so D
times smaller in scenario time).

Applied by :class:`emu.vtime.hosts.CostedSimRank` when the topology's ``host_cost`` (or
``symphony-emu run --mode sim --host-cost FILE``) is set; without it nothing changes, bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emu.vtime.events import s_to_ns
from emu.vtime.hosts import OnOffSource, SimHost, SimRank
from emu.vtime.network import SimSwitch
from hostapps.aio import RECV_BATCH
from hostapps.rank import DONE
from hostapps.spec import WorkerSpec
from hostapps.transport import Outgoing

#: The model's coefficients (seconds, seconds per byte), in file order.
FIELDS = ("wake_s", "rx_packet_s", "rx_byte_s", "tx_packet_s", "tx_byte_s", "run_wait_s", "timer_resolution_s",
          "switch_packet_s", "switch_run_wait_s", "run_wait_share", "switch_run_wait_share", "run_wait_sigma",
          "switch_run_wait_sigma", "cpus")
#: The terms ``symphony-emu calibrate-host`` has always written: a calibration file (:func:`load`)
#: without one is refused (it would model that cost as 0). The switch terms, shares and shapes came
#: later and default to the model before them (shipped topologies/host-cost.json has none).
REQUIRED_FIELDS = FIELDS[:7]
#: The switch process's time terms (:class:`CostedSimSwitch`); all 0: switches cost nothing.
SWITCH_FIELDS = ("switch_packet_s", "switch_run_wait_s")
#: The worker's CPU terms (what :meth:`HostCost.scaled_cpu` scales).
CPU_FIELDS = ("wake_s", "rx_packet_s", "rx_byte_s", "tx_packet_s", "tx_byte_s")
#: The shares of wake-ups that wait for a CPU (fractions in (0, 1]; 1: every wake-up waits an
#: exponential time, the model before they existed).
SHARE_FIELDS = ("run_wait_share", "switch_run_wait_share")
#: Dimensionless terms (not scaled by :meth:`HostCost.dilated`): the shares and the shapes of the
#: waits (log-space standard deviation of a lognormal wait; 0: exponential).
SHAPE_FIELDS = (*SHARE_FIELDS, "run_wait_sigma", "switch_run_wait_sigma")
#: Terms :meth:`HostCost.dilated` keeps: the shapes and the count of CPUs the run's processes share.
UNSCALED_FIELDS = (*SHAPE_FIELDS, "cpus")


class HostCostError(ValueError):
    """A host-cost file or value is unusable; ``str()`` names the file and field."""


@dataclasses.dataclass(frozen=True)
class HostCost:
    """Per-rank host processing time (s, s/byte); see the module docstring."""

    wake_s: float = 0.0
    rx_packet_s: float = 0.0
    rx_byte_s: float = 0.0
    tx_packet_s: float = 0.0
    tx_byte_s: float = 0.0
    run_wait_s: float = 0.0
    timer_resolution_s: float = 0.0
    switch_packet_s: float = 0.0
    switch_run_wait_s: float = 0.0
    run_wait_share: float = 1.0
    switch_run_wait_share: float = 1.0
    run_wait_sigma: float = 0.0
    switch_run_wait_sigma: float = 0.0
    cpus: int = 0

    def __post_init__(self) -> None:
        for name in FIELDS:
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise HostCostError(f"host cost {name} = {_shown(v)}: give a finite number >= 0 (seconds)")
            if name in SHARE_FIELDS and not 0 < v <= 1:
                raise HostCostError(f"host cost {name} = {_shown(v)}: give a share in (0, 1]")
        if self.cpus != int(self.cpus):
            raise HostCostError(f"host cost cpus = {_shown(self.cpus)}: give a whole number of CPUs (0: each "
                                f"process its own)")

    def dilated(self, d: float) -> HostCost:
        """The cost in the scenario time of a real-time run dilated by ``d`` (every time term / d;
        the shares and shapes stay)."""
        if not (math.isfinite(d) and d >= 1):
            raise HostCostError(f"host cost dilation {d!r}: give D >= 1")
        return HostCost(**{k: getattr(self, k) if k in UNSCALED_FIELDS else getattr(self, k) / d for k in FIELDS})

    def with_wait(self, run_wait_s: float, share: float = 1.0, sigma: float = 0.0) -> HostCost:
        """The same CPU costs with another mean wait for a CPU per wake-up (s), share of
        wake-ups that wait and shape of their wait."""
        return dataclasses.replace(self, run_wait_s=run_wait_s, run_wait_share=share, run_wait_sigma=sigma)

    def with_switch(self, packet_s: float, run_wait_s: float, share: float = 1.0, sigma: float = 0.0) -> HostCost:
        """The same host terms with a switch process's CPU per frame, mean wait per wake-up (s),
        share of wake-ups that wait and shape of their wait."""
        return dataclasses.replace(self, switch_packet_s=packet_s, switch_run_wait_s=run_wait_s,
                                   switch_run_wait_share=share, switch_run_wait_sigma=sigma)

    def with_cpus(self, cpus: int) -> HostCost:
        """The same terms with the run's processes sharing ``cpus`` CPUs (0: each its own)."""
        return dataclasses.replace(self, cpus=cpus)

    def scaled_cpu(self, factor: float) -> HostCost:
        """The same waits with every worker CPU term (:data:`CPU_FIELDS`) times ``factor``."""
        if not (math.isfinite(factor) and factor > 0):
            raise HostCostError(f"host cost CPU factor {factor!r}: give a number > 0")
        return dataclasses.replace(self, **{k: getattr(self, k) * factor for k in CPU_FIELDS})

    @property
    def switches(self) -> bool:
        """True when any switch term is set (the switches are then :class:`CostedSimSwitch`)."""
        return any(getattr(self, k) for k in SWITCH_FIELDS)

    def as_dict(self) -> dict[str, float]:
        """The coefficients by name (:data:`FIELDS`)."""
        return {k: getattr(self, k) for k in FIELDS}

    def per_packet_s(self, payload: int) -> float:
        """CPU time of one datagram of ``payload`` bytes read plus one sent (s)."""
        return self.rx_packet_s + self.tx_packet_s + (self.rx_byte_s + self.tx_byte_s) * payload


def _shown(v: Any) -> str:
    """A value as the JSON file spells it (null, true, "text", 1e-06; NaN and Infinity as Python's)."""
    try:
        return json.dumps(v, allow_nan=True)
    except (TypeError, ValueError):
        return repr(v)


def from_dict(data: Any, where: str) -> HostCost:
    """A :class:`HostCost` from a calibration file's ``model`` (or a topology's inline ``host_cost``)."""
    if not isinstance(data, dict):
        raise HostCostError(f"{where}: expected a mapping of {', '.join(FIELDS)}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise HostCostError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
    try:
        return HostCost(**{k: data[k] for k in FIELDS if k in data})
    except HostCostError as exc:
        raise HostCostError(f"{where}: {exc}") from None


def load(path: str | Path) -> HostCost:
    """The model of a calibration file written by ``symphony-emu calibrate-host``.

    The file is JSON with a ``model`` mapping (:data:`FIELDS`, every one of :data:`REQUIRED_FIELDS`
    present) beside what the calibration measured. Raises :class:`HostCostError` (one line naming
    the file and the field) when it cannot be read or a required term is missing.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HostCostError(f"{path}: cannot read the host-cost file: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise HostCostError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict) or "model" not in doc:
        raise HostCostError(f"{path}: no 'model' (write it with symphony-emu calibrate-host)")
    model = doc["model"]
    if isinstance(model, dict):
        missing = [k for k in REQUIRED_FIELDS if k not in model]
        if missing:
            raise HostCostError(f"{path}: model: {missing[0]!r} missing (calibrate-host always writes "
                                f"{', '.join(REQUIRED_FIELDS)}; without it that cost would be 0)")
    return from_dict(model, f"{path}: model")


def draw_wait(rng: random.Random, mean_ns: float, share: float, sigma: float) -> int:
    """One wait for a CPU (ns) of mean ``mean_ns``: with probability ``share`` (all when 1) a wait
    of mean ``mean_ns / share``, exponential when ``sigma`` is 0, else lognormal with log-space
    standard deviation ``sigma``; otherwise 0. With share 1 and sigma 0 one exponential draw."""
    if share >= 1.0:
        if sigma <= 0:
            return round(rng.expovariate(1.0) * mean_ns)
    elif rng.random() >= share:
        return 0
    mean = mean_ns / share
    if sigma <= 0:
        return round(rng.expovariate(1.0) * mean)
    return round(rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma))


class CpuPool:
    """The CPUs a run's costed workers and switches share (:attr:`HostCost.cpus`), as in real time
    every worker and switch process of a run is on the machine's few CPUs.

    A process that becomes runnable asks for a CPU (:meth:`acquire`); when every one is taken it
    waits in a first-come first-served queue until a run ends (:meth:`release` hands the CPU to
    the first one waiting). A run keeps its CPU until it ends (no preemption: the runs are
    tenths of a millisecond, shorter than the kernel's slice). So processes that wake together
    (the ranks and switches at a step's end) make each other wait, in the order they woke.
    ``queued[kind]`` and ``queued_ns[kind]`` count, per kind of process (``"rank"``,
    ``"switch"``), the wake-ups and the time (ns) they waited here; a process's wait for the
    machine's other work is topped up to the measured mean from them (:meth:`_OneCpu._runnable`).
    """

    def __init__(self, cpus: int) -> None:
        if cpus < 1:
            raise HostCostError(f"host cost cpus = {cpus}: a shared pool needs at least 1 CPU")
        self.cpus = cpus
        self.idle = cpus
        self._queue: deque[_OneCpu] = deque()
        self.queued: dict[str, int] = {}
        self.queued_ns: dict[str, int] = {}

    def acquire(self, proc: _OneCpu) -> bool:
        """A CPU for ``proc`` now (True), or ``proc`` queued until :meth:`release` grants it one."""
        if self.idle:
            self.idle -= 1
            return True
        self._queue.append(proc)
        return False

    def release(self) -> None:
        """A run ended: its CPU goes to the first process waiting (which runs now), else it is idle."""
        if self._queue:
            self._queue.popleft()._granted()
        else:
            self.idle += 1


class _OneCpu:
    """The one CPU a costed rank or switch runs on (shared by :class:`CostedSimRank` and
    :class:`CostedSimSwitch`). The class using it sets ``loop``, ``wake_at``, ``_busy_until``
    and ``_run_at`` (ns), ``_wait_ns`` (mean wait for a CPU, ns), ``_wait_share``, ``_wait_sigma``, ``_rng``, the counters
    ``woken`` and ``waited_ns``, ``_pool`` (a :class:`CpuPool` or None), ``_kind`` and defines
    ``_run(t)``, one run due at ``t``; with a pool ``_run`` calls :meth:`_ran` with its end.

    Without a pool each process has a CPU of its own and a wake-up waits one draw of
    :func:`draw_wait` for the machine's load. With a pool the wait is two parts: the draw (the
    machine's other work), then the pool's queue (the run's own processes). The draw's mean is
    the measured mean less what the pool's queue gave this kind of process on average so far,
    so that the two add up to the measured mean per wake-up (``cpu_wait_s / cpu_slices`` of the
    real run counts both); it is taken off the share of wake-ups that wait (the conditional wait,
    what the other processes' slices cost, keeps its measured length)."""

    _pool: CpuPool | None = None
    _holding = False  # has a CPU of the pool (from its grant to the end of its last run)
    _ready_at = 0
    queued_ns = 0

    def _wake(self, t: int) -> None:
        if t != self.wake_at:
            return  # superseded by an earlier wake-up
        self.wake_at = None
        if self._run_at is None:
            self._runnable()

    def _runnable(self) -> None:
        """Schedule a run: at the end of the current one, or after a wait for a CPU when asleep
        (:func:`draw_wait` of mean ``_wait_ns``, ``_wait_share`` and ``_wait_sigma``; with a pool,
        topped up, then the pool's queue)."""
        now = self.loop.now
        pool = self._pool
        if pool is not None:
            if self._holding:  # still on its CPU: the next run follows this one
                t = self._busy_until if self._busy_until > now else now
                self._run_at = t
                self.loop.at(t, self._run, t)
                return
            self.woken += 1
            kind = self._kind
            n = pool.queued[kind] = pool.queued.get(kind, 0) + 1
            w = 0
            if self._wait_ns > 0:
                ext = self._wait_ns - pool.queued_ns.get(kind, 0) / n
                if ext > 0:
                    w = draw_wait(self._rng, ext, self._wait_share * ext / self._wait_ns, self._wait_sigma)
                    self.waited_ns += w
            self._run_at = -1  # waiting for a CPU
            self.loop.at(now + w, self._ready, None)
            return
        if now <= self._busy_until:
            t = self._busy_until
        else:
            t = now
            self.woken += 1
            if self._wait_ns > 0:
                w = draw_wait(self._rng, self._wait_ns, self._wait_share, self._wait_sigma)
                self.waited_ns += w
                t += w
        self._run_at = t
        self.loop.at(t, self._run, t)

    def _ready(self, _: Any) -> None:
        """The machine's other work let this process go: a CPU of the pool, now or when one is free."""
        self._ready_at = self.loop.now
        if self._pool.acquire(self):  # type: ignore[union-attr]
            self._granted()

    def _granted(self) -> None:
        """The pool gave this process a CPU now: its run."""
        now = self.loop.now
        q = now - self._ready_at
        if q:
            self.queued_ns += q
            self.waited_ns += q
            pool = self._pool
            pool.queued_ns[self._kind] = pool.queued_ns.get(self._kind, 0) + q  # type: ignore[union-attr]
        self._holding = True
        self._run_at = now
        self._run(now)

    def _ran(self, end: int) -> None:
        """A run (with a pool) ends at ``end``: then its CPU goes back unless it runs again at once."""
        if self._run_at is None:
            self.loop.at(end, self._release, end)

    def _release(self, _: Any) -> None:
        if self._run_at is not None:
            return  # it runs again right away (something arrived or fell due meanwhile): keeps its CPU
        self._holding = False
        self._pool.release()  # type: ignore[union-attr]


class CostedSimRank(_OneCpu, SimRank):
    """A :class:`emu.vtime.hosts.SimRank` whose worker spends :class:`HostCost` time per event.

    The worker is one CPU: ``_busy_until`` (ns) is when it finishes what it is doing. It
    becomes runnable when a datagram arrives while it sleeps, when its timer fires or when
    the ideal reference's barrier releases a step; it then runs after a wait for a CPU
    (``run_wait_s`` on average, shaped by ``run_wait_share``, from a generator seeded by the run's seed, job
    and rank) or, when still busy, as soon as it is free. A run is one event loop callback of
    the real worker: read up to :data:`hostapps.aio.RECV_BATCH` datagrams (each costs its rx
    time and is fed to the core at the time it has been read), poll the core once, send what
    it returns (each datagram is put on the access link when its tx time has been spent),
    arm the timer (never before the run ends). The core's ``now`` is the worker's clock
    within the run, so its records (step and iteration times, hence CCT) include the cost.
    """

    def __init__(self, spec: WorkerSpec, host: SimHost, verifier: Any, on_end: Callable[[SimRank], None],
                 cost: HostCost, seed: int, record_digest: bool = True, barrier: Any = None,
                 pool: CpuPool | None = None) -> None:
        self.cost = cost
        self._pool, self._kind = pool, "rank"
        self._rxq: deque[tuple[int, memoryview, int]] = deque()
        self._busy_until = 0  # ns: the worker's CPU is busy until then
        self._run_at: int | None = None  # ns of the run that is due
        self._wake_ns = cost.wake_s * 1e9
        self._rx_ns, self._rx_byte_ns = cost.rx_packet_s * 1e9, cost.rx_byte_s * 1e9
        self._tx_ns, self._tx_byte_ns = cost.tx_packet_s * 1e9, cost.tx_byte_s * 1e9
        self._wait_ns = cost.run_wait_s * 1e9
        self._wait_share, self._wait_sigma = cost.run_wait_share, cost.run_wait_sigma
        self._res_ns = round(cost.timer_resolution_s * 1e9)
        # a string seed is hashed with SHA-512 (random.seed, version 2): the same on every run
        self._rng = random.Random(f"host-cost {seed} {spec.job_id} {spec.rank}")
        #: runs of the worker, of them after a wait for a CPU, and the time waited and busy (ns)
        self.runs = self.woken = self.waited_ns = 0
        self.busy_ns = 0.0
        super().__init__(spec, host, verifier, on_end, record_digest=record_digest, barrier=barrier)

    # -- becoming runnable --------------------------------------------------------------
    def on_datagram(self, src_ip: bytes, datagram: memoryview, ecn: int) -> None:
        """A CTH datagram for this rank arrived now: it waits in the socket until the worker reads it."""
        src = self.rank_of.get(src_ip)
        if src is None:
            return
        self._rxq.append((src, datagram, ecn))
        if self._run_at is None:
            self._runnable()

    def _barrier_wake(self, _: Any) -> None:
        if not self.ended and self._run_at is None:
            self._runnable()

    # -- one run of the worker ------------------------------------------------------------
    def _run(self, t: int) -> None:
        if t != self._run_at:
            return
        self._run_at = None
        clock = self.loop.now + self._wake_ns
        q, feed = self._rxq, self._feed
        n = 0
        while q and n < RECV_BATCH:
            src, datagram, ecn = q.popleft()
            clock += self._rx_ns + self._rx_byte_ns * len(datagram)
            feed(src, datagram, ecn, clock * 1e-9)
            n += 1
        out = self._poll(clock * 1e-9)
        if out:
            at, send = self.loop.at, self._send_one
            for o in out:
                clock += self._tx_ns + self._tx_byte_ns * len(o.datagram)
                at(math.ceil(clock), send, o)
        end = math.ceil(clock)
        self.runs += 1
        self.busy_ns += clock - self.loop.now
        self._busy_until = end
        if q:  # more arrived meanwhile: the next batch right away
            self._run_at = end
            self.loop.at(end, self._run, end)
        if self._pool is not None:
            self._ran(end)
        if self.core.state >= DONE:
            if not self.ended:
                self._close()
                self.on_end(self)
            return
        if self.core.iterations_done != self._written:  # an iteration ended: its records to the file
            self._write()
        tn = self._next_timer()
        if tn is None:
            return
        ns = s_to_ns(tn)
        if ns <= self.loop.now:
            ns = self.loop.now + 1
        if ns < end:
            ns = end
        elif self._res_ns and ns > end:  # epoll_wait from the end of this run, in whole ticks
            ns = end + -(-(ns - end) // self._res_ns) * self._res_ns
        self._arm(ns)

    def _send_one(self, o: Outgoing) -> None:
        dst = o.dst_rank
        cports = self.channel_ports  # channel c sends from port + c (SimRank)
        self.host.send(self.ip_of[dst], self.port if cports is None else cports[o.datagram[3]], self.port_of[dst],
                       o.datagram, o.ecn)


class CostedSimSwitch(_OneCpu, SimSwitch):
    """A :class:`emu.vtime.network.SimSwitch` that is one CPU spending :class:`HostCost`'s switch terms.

    See the module docstring. ``_busy_until`` (ns) is when its current run ends; a run reads
    every frame that waits (each costs ``switch_packet_s``, received by the core at the time it
    has been read), then polls the core once and hands the due frames to the peers at the
    run's end. Make one per switch with :meth:`factory` (seeded by the run's seed and the
    switch's name).
    """

    def __init__(self, name: str, core: Any, loop: Any, cost: HostCost, seed: int,
                 pool: CpuPool | None = None) -> None:
        super().__init__(name, core, loop)
        self.cost = cost
        self._pool, self._kind = pool, "switch"
        self._rxq: deque[tuple[int, bytes]] = deque()
        self._busy_until = 0
        self._run_at: int | None = None
        self._pkt_ns = cost.switch_packet_s * 1e9
        self._wait_ns = cost.switch_run_wait_s * 1e9
        self._wait_share, self._wait_sigma = cost.switch_run_wait_share, cost.switch_run_wait_sigma
        self._rng = random.Random(f"switch-cost {seed} {name}")
        #: runs, of them after a wait for a CPU, and the time waited (ns)
        self.runs = self.woken = self.waited_ns = 0

    @classmethod
    def factory(cls, cost: HostCost, seed: int, pool: CpuPool | None = None) -> Callable[[str, Any, Any], CostedSimSwitch]:
        """``switch_class`` for :class:`emu.vtime.network.SimNetwork` (``pool``: the CPUs the
        switches share with the ranks, None: each its own)."""
        return lambda name, core, loop: cls(name, core, loop, cost, seed, pool)

    def port_input(self, port: int) -> Callable[[bytes], None]:
        """A frame arriving on ``port`` waits in the socket until the switch reads it."""
        q = self._rxq

        def arrive(frame: bytes) -> None:
            q.append((port, frame))
            if self._run_at is None:
                self._runnable()

        return arrive

    def _run(self, t: int) -> None:
        if t != self._run_at:
            return
        self._run_at = None
        clock = float(self.loop.now)
        q, receive, pkt = self._rxq, self._receive, self._pkt_ns
        while q:
            port, frame = q.popleft()
            clock += pkt
            receive(port, frame, math.ceil(clock))
        end = math.ceil(clock)
        self.runs += 1
        self._busy_until = end
        if self._pool is not None:
            self._ran(end)
        out = self._poll(end)
        if out:
            at, peers = self.loop.at, self.peers
            for port, frame in out:
                at(end, peers[port], frame)
        deadline = self._deadline()
        if deadline is None or (self.wake_at is not None and deadline >= self.wake_at):
            return
        ns = deadline if deadline > end else end
        self.wake_at = deadline
        self.loop.at(ns, self._wake, deadline)


class CostedOnOffSource(OnOffSource):
    """A :class:`emu.vtime.hosts.OnOffSource` that waits for a CPU as the real source process does.

    The real source (:func:`hostapps.traffic.run_source`) sleeps until a datagram's time of the
    schedule, then (on a shared machine) waits for a CPU, and sends every datagram that fell due
    meanwhile at once (the schedule's times are absolute; Mininet's veth does not serialise
    them). Here a datagram due after the previous send sleeps until its time and then waits as
    a worker's wake-up does (``run_wait_s``, shaped by ``run_wait_share``; a generator seeded by
    the run's seed and the source's index); one already due is sent with the previous one.
    """

    def __init__(self, host: SimHost, dst_ip: str, schedule: Any, start_s: float, size: int,
                 active: Callable[[], bool], cost: HostCost, seed: int, index: int) -> None:
        self._wait_ns = cost.run_wait_s * 1e9
        self._wait_share, self._wait_sigma = cost.run_wait_share, cost.run_wait_sigma
        self._rng = random.Random(f"background-cost {seed} {index}")
        self._sent_at = 0  # ns of the last send
        #: wake-ups after a sleep and the time waited for a CPU (ns)
        self.woken = self.waited_ns = 0
        super().__init__(host, dst_ip, schedule, start_s, size, active)

    def _next(self) -> None:
        t = next(self.schedule, None)
        if t is None:
            return
        due = s_to_ns(self.start_s + t)
        if due > self._sent_at:  # sleeps until then, then waits for a CPU
            self.woken += 1
            if self._wait_ns > 0:
                w = draw_wait(self._rng, self._wait_ns, self._wait_share, self._wait_sigma)
                self.waited_ns += w
                due += w
        else:
            due = self._sent_at
        self.host.loop.at(due, self._send, None)

    def _send(self, arg: Any) -> None:
        self._sent_at = self.host.loop.now
        super()._send(arg)
