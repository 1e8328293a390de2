"""Virtual-time hosts: the rank worker and background sources driven by the event loop.

A :class:`SimHost` owns the host's access link and hands arriving CTH datagrams (UDP port
:data:`hostapps.wire.CTH_UDP_PORT`) to the rank of their job; background traffic ends there.
A :class:`SimRank` is one rank of one job, built from the same worker spec
(docs/interfaces.md section 4) as a ``hostapps.worker`` process and running the same core,
:class:`hostapps.rank.RankWorker` (transport, DCQCN, one ring collective per iteration,
compute gaps, drain, records), on the event loop instead of asyncio. Its JSON lines have the
worker's schema (:data:`hostapps.rank.RECORD_FIELDS`) with simulated seconds as times.

Verification: every rank's result of every iteration is checked with
:func:`hostapps.rank.check_result` by a :class:`Verifier` per job. The expectation is
computed once per job and iteration from the inputs the ranks generated
(:func:`hostapps.rank.make_input`), accumulated as each rank starts, instead of each
rank regenerating all N inputs as a worker process must; a ring collective completes on a
rank only after every rank has started it, so the expectation is complete by then. An
all-reduce leaves the same buffer on every rank and every rank is checked against the same
expectation, so a result bit for bit equal to one already checked right is right (and has
its SHA-256 digest): only results that differ are checked (and hashed) again. A job with
``payload: digest`` has a :class:`DigestVerifier` (the expected records, exact; :func:`make_verifier`).

An :class:`OnOffSource` sends the background traffic of :func:`hostapps.traffic.send_schedule`
(Not-ECT UDP datagrams) from its host.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from emu.vtime import frames
from emu.vtime.events import REMOVE_ABOVE, EventLoop, s_to_ns
from emu.vtime.network import HostLink
from hostapps import rank as rank_core
from hostapps.collectives import chunk_bounds, digest_present, digest_records
from hostapps.rank import DONE, RankWorker
from hostapps.spec import WorkerSpec, channel_port
from hostapps.transport import Transport
from hostapps.wire import CTH_UDP_PORT, ECN_NOT_ECT

log = logging.getLogger(__name__)

#: UDP port of the background traffic (docs/interfaces.md section 1).
TRAFFIC_PORT = 5001
_PAYLOAD_OFFSET = frames.PAYLOAD_OFFSET
_CTH_PORT = CTH_UDP_PORT  # (compiled: C integers, hosts.pxd)


class Verifier:
    """Expected results of one job, per iteration, from the ranks' inputs.

    :meth:`add_input` as each rank starts an iteration; :meth:`check` as each rank ends it
    (one line why it is wrong, or None). An iteration's arrays are freed after its last check.
    """

    defer = False  #: checks at each iteration's end (hostapps.rank.Verification)
    keeps_inputs = False  #: add_input sums (or copies) an input at once

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.n = spec.nranks
        self._sum: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._gather: dict[int, np.ndarray] = {}
        self._added: dict[int, int] = {}
        self._checked: dict[int, int] = {}
        self._bounds = chunk_bounds(spec.n_elements, self.n)
        # all-reduce: per iteration, a result checked right and its digest ("" until asked for)
        self._right: dict[int, tuple[np.ndarray, str]] = {}
        self._part: np.ndarray | None = None  # scratch of add_input (the inputs' dtype)

    def add_input(self, iteration: int, rank: int, data: np.ndarray) -> None:
        """Rank ``rank``'s input of ``iteration`` (float32, ``size_bytes // 4`` elements)."""
        self._added[iteration] = self._added.get(iteration, 0) + 1
        if self.spec.collective == "allgather":
            buf = self._gather.get(iteration)
            if buf is None:
                buf = self._gather[iteration] = np.empty(self.spec.n_elements, dtype=np.float32)
            a, b = self._bounds[rank]
            buf[a:b] = data[a:b]
            return
        acc = self._sum.get(iteration)
        if acc is None:
            acc = self._sum[iteration] = (np.zeros(self.spec.n_elements), np.zeros(self.spec.n_elements))
        part = self._part
        if part is None or part.shape != data.shape:
            part = self._part = np.empty(data.shape, dtype=data.dtype)
        # acc += data and acc += |data| in float64 (float32 -> float64 is exact, and so is |x| in float32:
        # the same sums as through a float64 copy, one pass less)
        np.add(acc[0], data, out=acc[0])
        np.abs(data, out=part)
        np.add(acc[1], part, out=acc[1])

    def check(self, iteration: int, rank: int, result: np.ndarray) -> str | None:
        """The worker's verification of ``rank``'s result of ``iteration``."""
        return self.check_digest(iteration, rank, result, digest=False)[0]

    def check_digest(self, iteration: int, rank: int, result: np.ndarray, *,
                     digest: bool = True) -> tuple[str | None, str]:
        """:meth:`check` and the result's :func:`hostapps.rank.digest` (``""`` unless ``digest``).

        An all-reduce result bit for bit equal to one already checked right in this iteration
        is right with the same digest, without checking or hashing it again.
        """
        if self._added.get(iteration, 0) != self.n:
            return f"iteration {iteration}: finished before every rank had started it", ""
        right = self._right.get(iteration)
        if right is not None and result.dtype == right[0].dtype and result.shape == right[0].shape and \
                np.array_equal(result.view(np.uint32), right[0].view(np.uint32)):
            known = right[1]
            if digest and not known:
                known = rank_core.digest(result)
                self._right[iteration] = (right[0], known)
            self._count_check(iteration)
            return None, known if digest else ""
        problem = self._check(iteration, rank, result)
        text = rank_core.digest(result) if digest else ""
        if problem is None and right is None and self.spec.collective == "allreduce":
            self._right[iteration] = (result, text)
        self._count_check(iteration)
        return problem, text

    def _count_check(self, iteration: int) -> None:
        self._checked[iteration] = self._checked.get(iteration, 0) + 1
        if self._checked[iteration] == self.n:
            self._sum.pop(iteration, None)
            self._gather.pop(iteration, None)
            self._right.pop(iteration, None)

    def _check(self, iteration: int, rank: int, result: np.ndarray) -> str | None:
        spec = self.spec
        if spec.collective == "allgather":
            expected: tuple[np.ndarray, np.ndarray | None] = (self._gather[iteration], None)
        else:
            ref, mag = self._sum[iteration]
            a, b = (0, spec.n_elements) if spec.collective == "allreduce" else self._bounds[rank]
            expected = (ref[a:b], self.n * rank_core.EPS32 * mag[a:b])
        rank_spec = spec if spec.rank == rank else _with_rank(spec, rank)
        return rank_core.check_result(rank_spec, iteration, result, expected)


class DigestVerifier:
    """:class:`Verifier` of a job with ``payload: digest``: the expected records per iteration.

    :meth:`add_input` sums each rank's tokens (modulo 2**64) and keeps the row an all-gather
    copies; the expectation (:func:`hostapps.collectives.digest_records`) is built once per
    iteration at its first check and compared exactly with every rank's result. Memory:
    ``2 * ranks * slices * 8`` bytes per iteration in progress.
    """

    defer = False  #: checks at each iteration's end (hostapps.rank.Verification)
    keeps_inputs = False  #: add_input sums the tokens at once (the own row copied)

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.n = spec.nranks
        self._present = digest_present(self.n, spec.n_elements, spec.slices)
        self._acc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._expected: dict[int, np.ndarray] = {}
        self._added: dict[int, int] = {}
        self._checked: dict[int, int] = {}

    def add_input(self, iteration: int, rank: int, data: np.ndarray) -> None:
        """Rank ``rank``'s tokens of ``iteration`` (:func:`hostapps.rank.digest_input`)."""
        self._added[iteration] = self._added.get(iteration, 0) + 1
        acc = self._acc.get(iteration)
        if acc is None:
            acc = self._acc[iteration] = (np.zeros_like(data), np.zeros_like(data))
        with np.errstate(over="ignore"):
            acc[0].__iadd__(data)
        acc[1][rank] = data[rank]

    def check_digest(self, iteration: int, rank: int, result: np.ndarray, *,
                     digest: bool = True) -> tuple[str | None, str]:
        """(None when ``rank``'s records of ``iteration`` are right else one line why, their digest or ``""``)."""
        if self._added.get(iteration, 0) != self.n:
            return f"iteration {iteration}: finished before every rank had started it", ""
        spec = self.spec
        want = self._expected.get(iteration)
        if want is None:
            total, own = self._acc[iteration]
            want = self._expected[iteration] = digest_records(spec.collective, total, own, self._present, self.n,
                                                              None)
        if spec.collective == "reducescatter":
            want = want[rank:rank + 1]
        problem = rank_core.digest_check(spec, iteration, result, want)
        text = rank_core.digest(result) if digest else ""
        self._checked[iteration] = self._checked.get(iteration, 0) + 1
        if self._checked[iteration] == self.n:
            self._acc.pop(iteration, None)
            self._expected.pop(iteration, None)
        return problem, text


def make_verifier(spec: WorkerSpec) -> Verifier | DigestVerifier:
    """The verifier of ``spec``'s job: :class:`DigestVerifier` for ``payload: digest``, else :class:`Verifier`."""
    return DigestVerifier(spec) if spec.payload == "digest" else Verifier(spec)


def _with_rank(spec: WorkerSpec, rank: int) -> WorkerSpec:
    return dataclasses.replace(spec, rank=rank)


class SimRank:
    """One rank of one job in virtual time: a :class:`hostapps.rank.RankWorker` on the event loop.

    The thin event-loop driver of the core: arriving datagrams (demultiplexed by the host) go
    to :meth:`RankWorker.on_datagram`, one wake-up per :meth:`RankWorker.next_timer` (integer
    ns, the first at or after the time asked, never now), what :meth:`RankWorker.poll` returns
    is framed onto the host's access link. The core's records are written (one JSON line
    each, simulated seconds as times) after each iteration it ends, so a run holds at most one
    iteration's records per rank (2(N-1) step records: 2 million at 1,024 ranks); when the
    core ends the rest are written and ``on_end(self)`` is called.
    """

    def __init__(self, spec: WorkerSpec, host: SimHost, verifier: Verifier,
                 on_end: Callable[[SimRank], None], record_digest: bool = True, barrier: Any = None) -> None:
        self.spec = spec
        self.host = host
        self.loop: EventLoop = host.loop
        self.on_end = on_end
        self.core = RankWorker(spec, verifier=verifier, record_digest=record_digest, barrier=barrier)
        if barrier is not None:  # the ideal reference: a released step wakes this rank 1 ns later
            barrier.wake[spec.rank] = self._poll_soon
        self.ip_of = {a.rank: a.ip for a in spec.ranks}
        self.rank_of = {frames.ip_bytes(a.ip): a.rank for a in spec.ranks}
        self.port = spec.ranks[spec.rank].port
        self.port_of = {a.rank: a.port for a in spec.ranks}
        #: per destination rank (spec.ranks is in rank order): (its frame header parts from the host's
        #: FrameBuilder.dest, None for an address the host does not know, its UDP port): one list index per
        #: datagram sent instead of three dict lookups (ip_of, port_of, the builder's), each a cold miss at 128 ranks
        self._to = [(_dest(host.builder, a.ip), a.port) for a in spec.ranks]
        #: channel c sends from source port port + c (hostapps.spec.channel_port); None: one channel
        self.channel_ports = ([channel_port(self.port, c) for c in range(spec.channels)]
                              if spec.channels > 1 else None)
        self.ended = False
        #: superseded wake-ups taken off the loop's heap: time (ns) -> sequence number (:meth:`_arm`)
        self._parked: dict[int, int] = {}
        self._written = 0  # iterations whose records are in the file
        self._mode = "a" if spec.first_iteration else "w"  # later blocks append
        # the core's entry points, bound once (per-packet path)
        # (getattr: the bound methods, as a subclass looks them up, not the compiled core's C methods)
        self._feed, self._poll, self._next_timer = (getattr(self.core, name) for name in ("on_datagram", "poll",
                                                                                        "next_timer"))
        first = s_to_ns(self.core.start_at)
        self.wake_at: int | None = first
        self.loop.at(first, self._wake, first)

    @property
    def state(self) -> int:
        """The core's state (:data:`hostapps.rank.DONE`, ``FAILED``, ...)."""
        return self.core.state

    @property
    def error(self) -> str | None:
        """Why the rank failed, or None."""
        return self.core.error

    @property
    def iterations_done(self) -> int:
        """Iterations this rank completed."""
        return self.core.iterations_done

    # -- event entry points -------------------------------------------------------------
    def on_datagram(self, src_ip: bytes, datagram: memoryview, ecn: int) -> None:
        """A CTH datagram for this rank arrived now (``src_ip``: 4 bytes)."""
        src = self.rank_of.get(src_ip)
        if src is None:
            return
        now = self.loop.now * 1e-9
        self._feed(src, datagram, ecn, now)
        self._service(now)

    def _poll_soon(self) -> None:
        self.loop.at(self.loop.now + 1, self._barrier_wake, None)

    def _barrier_wake(self, _: Any) -> None:
        if not self.ended:
            self._service(self.loop.now * 1e-9)

    def _wake(self, t: int) -> None:
        if t != self.wake_at:
            return
        self.wake_at = None
        self._service(self.loop.now * 1e-9)

    def _service(self, now: float) -> None:
        """Poll the core at ``now`` (s, the loop's time), send what it returns, arm its timer."""
        core = self.core
        out = core.poll(now)
        if out:
            host = self.host
            # host.send_to(...), inlined (per-packet path: C calls of the link and the builder when compiled)
            link, builder = host.link, host.builder
            assert link is not None
            to, port, cports = self._to, self.port, self.channel_ports
            for o in out:
                dest, dport = to[o.dst_rank]
                if dest is None:
                    dest = builder.dest(self.ip_of[o.dst_rank])  # KeyError: an address the host does not know
                link.send(builder.build_to(dest, port if cports is None else cports[o.datagram[3]], dport, o.datagram,
                                           o.ecn))  # the CTH's channel byte picks the source port
        if core.state >= DONE:
            if not self.ended:
                self._close()
                self.on_end(self)
            return
        if core.iterations_done != self._written:
            self._write()
        t = core.next_timer()
        if t is None:
            return
        tf = t  # s_to_ns(t), inlined (per-packet path): ceil(t * 1e9) as int() and a compare (C when compiled)
        x = tf * 1e9
        ns = int(x)
        if ns < x:
            ns += 1
        if ns * 1e-9 < tf:
            ns += 1
        nowns = self.loop.now
        if ns <= nowns:
            ns = nowns + 1
        self._arm(ns)

    def _arm(self, ns: int) -> None:
        """Wake up at ``ns`` (after now) unless a wake-up at or before it is armed already.

        A wake-up superseded by an earlier one stays on the loop's heap as an event that does
        nothing (:meth:`_wake` sees ``t != wake_at``): at 128 ranks these were 96% of the heap
        (about 10,000 events, some 70 per rank), which made every event's pop deeper. Once the
        loop holds more than ``loop.remove_above`` events they are taken off
        (:func:`_remove_superseded`) and kept here as ``{t: seq}``; arming ``t`` again puts
        back the event of the first push at ``t`` with its sequence number, the one event that
        would have woken the rank, so every wake-up runs where it ran before in the order of
        the events at its nanosecond (bit for bit the same run, fewer events that do nothing).
        """
        if self.wake_at is None or ns < self.wake_at:
            self.wake_at = ns
            loop = self.loop
            parked = self._parked
            if parked and ns in parked:
                loop.seq += 1  # the push this stands for
                loop.push_seq(ns, parked.pop(ns), self._wake, ns)
                return
            loop.at(ns, self._wake, ns)
            if loop.pending() > loop.remove_above:
                _remove_superseded(loop)

    def _write(self) -> None:
        """Append the core's records made so far to the spec's JSON lines file."""
        self._written = self.core.iterations_done
        records = self.core.take_records()
        if not records and self._mode == "a":
            return
        path = self.spec.output_path
        if self._mode == "w":
            path.parent.mkdir(parents=True, exist_ok=True)
        with path.open(self._mode, encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records))
        self._mode = "a"

    def _close(self) -> None:
        """Write the core's remaining records to the spec's JSON lines file; no more wake-ups."""
        self.ended = True
        self.wake_at = None
        self._write()

    def interrupt(self, message: str) -> None:
        """End this rank from outside (time limit, another rank failed): error record, file closed."""
        if not self.ended:
            self.core.interrupt(message)
            self._close()


def _dest(builder: frames.FrameBuilder, ip: str) -> tuple | None:
    """``builder.dest(ip)``, None for an address it does not know (a send there raises KeyError then)."""
    try:
        return builder.dest(ip)
    except KeyError:
        return None


def _superseded(entry: tuple) -> bool:
    """Whether the loop's event ``entry`` is a :class:`SimRank` wake-up that does nothing now
    (another wake-up, earlier, superseded it, or the rank ended)."""
    fn = entry[2]
    rank = getattr(fn, "__self__", None)
    return isinstance(rank, SimRank) and fn.__name__ == "_wake" and entry[3] != rank.wake_at \
        and entry[0] == entry[3]


def _remove_superseded(loop: EventLoop) -> None:
    """Take the superseded rank wake-ups off ``loop`` (:meth:`EventLoop.remove`) into their
    ranks' ``_parked`` (the first push at each time; those before now forgotten, they would
    have run by now doing nothing); the next removal when the loop holds twice as many events."""
    now = loop.now
    ranks = {}
    for t, seq, fn, _arg in loop.remove(_superseded):
        rank = fn.__self__
        parked = rank._parked
        s = parked.get(t)
        if s is None or seq < s:
            parked[t] = seq
        ranks[id(rank)] = rank
    for rank in ranks.values():
        parked = rank._parked
        for t in [t for t in parked if t <= now]:
            del parked[t]
    loop.remove_above = max(REMOVE_ABOVE, 2 * loop.pending())


class SimHost:
    """One host: its access link, its ranks (by job) and a background sink."""

    def __init__(self, name: str, ip: str, mac: str, macs: dict[str, str], loop: EventLoop) -> None:
        self.name = name
        self.ip = ip
        self.loop = loop
        self.builder = frames.FrameBuilder(mac, ip, macs)
        self.link: HostLink | None = None
        self.ranks: dict[int, SimRank] = {}  #: job id -> rank on this host

    def send(self, dst_ip: str, sport: int, dport: int, datagram: bytes, ecn: int) -> None:
        """Frame ``datagram`` and put it on the access link now."""
        assert self.link is not None
        self.link.send(self.builder.build(dst_ip, sport, dport, datagram, ecn))

    def send_to(self, dest: tuple, sport: int, dport: int, datagram: bytes, ecn: int) -> None:
        """:meth:`send` to the destination ``self.builder.dest(dst_ip)`` gave."""
        assert self.link is not None
        self.link.send(self.builder.build_to(dest, sport, dport, datagram, ecn))

    def receive(self, frame: bytes) -> None:
        """A frame reached this host (IPv4/UDP as :func:`emu.vtime.frames.parse` reads it).

        A CTH datagram goes to the rank of its job; anything else (background traffic to
        :data:`TRAFFIC_PORT`, a frame for no rank here) ends here.
        """
        _receive(self.ranks, frame if type(frame) is bytes else bytes(frame))


def _receive(ranks: dict[int, SimRank], frame: bytes) -> None:
    """:meth:`SimHost.receive` of ``frame`` for the host's ``ranks`` (by job id). Compiled, a C function
    of a typed ``bytes`` (hosts.pxd): the header bytes are read in C."""
    if len(frame) < _PAYLOAD_OFFSET + 4 or frame[12] != 8 or frame[13] != 0 or frame[23] != 17 \
            or frame[14] != 0x45 or ((frame[36] << 8) | frame[37]) != _CTH_PORT:
        return
    rank = ranks.get(frame[_PAYLOAD_OFFSET + 2])  # the CTH's job_id byte
    if rank is not None:
        rank.on_datagram(frame[26:30], memoryview(frame)[_PAYLOAD_OFFSET:], frame[15] & 3)


class OnOffSource:
    """A background source: Not-ECT datagrams at the times of ``hostapps.traffic.send_schedule``."""

    def __init__(self, host: SimHost, dst_ip: str, schedule: Any, start_s: float, size: int,
                 active: Callable[[], bool]) -> None:
        self.host = host
        self.dst_ip = dst_ip
        self.schedule = iter(schedule)
        self.start_s = start_s
        self.payload = bytes(size)
        self.active = active
        self.sent = 0
        self._next()

    def _next(self) -> None:
        t = next(self.schedule, None)
        if t is not None:
            self.host.loop.at(s_to_ns(self.start_s + t), self._send, None)

    def _send(self, _: Any) -> None:
        if not self.active():
            return
        self.host.send(self.dst_ip, TRAFFIC_PORT, TRAFFIC_PORT, self.payload, ECN_NOT_ECT)
        self.sent += 1
        self._next()


class AppEndpoint:
    """A transport driven by an application object, attached to a :class:`SimHost` like a rank.

    The application has ``on_delivery(d, now)``, ``poll(now) -> [request]`` (requests with
    ``dst_rank, step, offset, payload, last``, as :class:`hostapps.collectives.SendRequest`)
    and ``next_timer() -> float | None``; :class:`hostapps.collectives.RingCollective` fits.
    For benchmarks and tests that need a traffic pattern other than the worker's (e.g.
    always-backlogged senders, benchmarks/dcqcn_tuning.py). ``addrs`` maps rank -> (ip, port).
    """

    def __init__(self, transport: Transport, app: Any, host: SimHost, addrs: dict[int, tuple[str, int]]) -> None:
        self.transport = transport
        self.app = app
        self.host = host
        self.loop = host.loop
        self.addrs = addrs
        self.port = addrs[transport.rank][1]
        self.rank_of = {frames.ip_bytes(ip): r for r, (ip, _) in addrs.items()}
        self.wake_at: int | None = None
        host.ranks[transport.job_id] = self  # type: ignore[assignment]
        self.loop.at(self.loop.now, self._wake, self.loop.now)
        self.wake_at = self.loop.now

    def on_datagram(self, src_ip: bytes, datagram: memoryview, ecn: int) -> None:
        """A datagram for this endpoint arrived now."""
        src = self.rank_of.get(bytes(src_ip))
        if src is not None:
            self.transport.on_datagram(src, datagram, ecn, self.loop.now * 1e-9)
            self._service()

    def _wake(self, t: int) -> None:
        if t == self.wake_at:
            self.wake_at = None
            self._service()

    def _service(self) -> None:
        now = self.loop.now * 1e-9
        tr, app = self.transport, self.app
        for d in tr.deliveries():
            app.on_delivery(d, now)
        for req in app.poll(now):
            tr.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last,
                    pad=getattr(req, "pad", 0))
        for o in tr.poll(now):
            ip, port = self.addrs[o.dst_rank]
            self.host.send(ip, self.port, port, o.datagram, o.ecn)
        t = tr.next_timer()
        ta = app.next_timer()
        if ta is not None and (t is None or ta < t):
            t = ta
        if t is None:
            return
        ns = max(s_to_ns(t), self.loop.now + 1)
        if self.wake_at is None or ns < self.wake_at:
            self.wake_at = ns
            self.loop.at(ns, self._wake, ns)
