"""Virtual-time hosts: the worker's state machines driven by the event loop.

A :class:`SimHost` owns the host's access link and demultiplexes arriving frames by UDP
port: the collective port (:data:`hostapps.wire.CTH_UDP_PORT`) to the host's ranks, the
background port to a sink that counts. A :class:`SimRank` is one rank of one job, built
from the same worker spec (docs/interfaces.md section 4) as a ``hostapps.worker`` process
and running the same cores: :class:`hostapps.transport.Transport` (with DCQCN from
:mod:`hostapps.ratecontrol`) and :class:`hostapps.collectives.RingCollective`, one
collective per iteration, ``compute_s`` between them, then a drain until every packet is
acknowledged. It writes the worker's JSON lines (step, iteration, transport, error
records) with simulated seconds as times.

Verification: every rank's result of every iteration is checked with the worker's
:func:`hostapps.worker.check_result` against :func:`hostapps.worker.expected_result`. The
expectation is computed once per job and iteration from the inputs the ranks generated
(:func:`hostapps.worker.make_input`), accumulated as each rank starts, instead of each
rank regenerating all N inputs as a worker process must; a ring collective completes on a
rank only after every rank has started it, so the expectation is complete by then. An
all-reduce leaves the same buffer on every rank and every rank is checked against the same
expectation, so a result bit for bit equal to one already checked right is right (and has
its SHA-256 digest): only results that differ are checked (and hashed) again.

An :class:`OnOffSource` sends the background traffic of :func:`hostapps.traffic.send_schedule`
(Not-ECT UDP datagrams) from its host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from emu.vtime import frames
from emu.vtime.network import EventLoop, HostLink, s_to_ns
from hostapps import worker as worker_mod
from hostapps.collectives import RingCollective, chunk_bounds, steps_per_collective
from hostapps.transport import Transport
from hostapps.wire import CTH_UDP_PORT, ECN_NOT_ECT

log = logging.getLogger(__name__)

#: UDP port of the background traffic (docs/interfaces.md section 1).
TRAFFIC_PORT = 5001
_PAYLOAD_OFFSET = frames.PAYLOAD_OFFSET


class Verifier:
    """Expected results of one job, per iteration, from the ranks' inputs.

    :meth:`add_input` as each rank starts an iteration; :meth:`check` as each rank ends it
    (one line why it is wrong, or None). An iteration's arrays are freed after its last check.
    """

    def __init__(self, spec: worker_mod.WorkerSpec) -> None:
        self.spec = spec
        self.n = spec.nranks
        self._sum: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._gather: dict[int, np.ndarray] = {}
        self._added: dict[int, int] = {}
        self._checked: dict[int, int] = {}
        self._bounds = chunk_bounds(spec.n_elements, self.n)
        # all-reduce: per iteration, a result checked right and its digest ("" until asked for)
        self._right: dict[int, tuple[np.ndarray, str]] = {}
        self._part: np.ndarray | None = None  # float64 scratch of add_input

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
            part = self._part = np.empty(data.shape, dtype=np.float64)
        np.copyto(part, data)  # data.astype(np.float64) into a reused buffer
        acc[0].__iadd__(part)
        np.abs(part, out=part)
        acc[1].__iadd__(part)

    def check(self, iteration: int, rank: int, result: np.ndarray) -> str | None:
        """The worker's verification of ``rank``'s result of ``iteration``."""
        return self.check_digest(iteration, rank, result, digest=False)[0]

    def check_digest(self, iteration: int, rank: int, result: np.ndarray, *,
                     digest: bool = True) -> tuple[str | None, str]:
        """:meth:`check` and the result's :func:`hostapps.worker.digest` (``""`` unless ``digest``).

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
                known = worker_mod.digest(result)
                self._right[iteration] = (right[0], known)
            self._count_check(iteration)
            return None, known if digest else ""
        problem = self._check(iteration, rank, result)
        text = worker_mod.digest(result) if digest else ""
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
            expected = (ref[a:b], self.n * worker_mod.EPS32 * mag[a:b])
        rank_spec = spec if spec.rank == rank else _with_rank(spec, rank)
        return worker_mod.check_result(rank_spec, iteration, result, expected)


def _with_rank(spec: worker_mod.WorkerSpec, rank: int) -> worker_mod.WorkerSpec:
    import dataclasses

    return dataclasses.replace(spec, rank=rank)


class JsonLines:
    """The worker's JSON lines file, buffered in memory and written at the end."""

    def __init__(self, spec: worker_mod.WorkerSpec) -> None:
        self.path = spec.output_path
        self.head = {"job": spec.job_id, "rank": spec.rank}
        self.lines: list[str] = []

    def write(self, kind: str, **fields: Any) -> None:
        import json

        self.lines.append(json.dumps({"kind": kind, **self.head, **fields}))

    def close(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(line + "\n" for line in self.lines), encoding="utf-8")


#: SimRank states.
WAITING, RUNNING, COMPUTING, DRAINING, DONE, FAILED = range(6)


class SimRank:
    """One rank of one job: transport, DCQCN and one RingCollective per iteration."""

    def __init__(self, spec: worker_mod.WorkerSpec, host: SimHost, verifier: Verifier,
                 on_end: Callable[[SimRank], None], record_digest: bool = True) -> None:
        self.spec = spec
        self.host = host
        self.loop: EventLoop = host.loop
        self.verifier = verifier
        self.on_end = on_end
        self.record_digest = record_digest
        config = worker_mod.transport_config(spec.line_rate_bps, spec.mtu, spec.transport)
        self.transport = Transport(spec.job_id, spec.rank, config, spec.rate_control, spec.rate_params)
        self.ip_of = {a.rank: a.ip for a in spec.ranks}
        self.rank_of = {frames.ip_bytes(a.ip): a.rank for a in spec.ranks}
        self.port = spec.ranks[spec.rank].port
        self.port_of = {a.rank: a.port for a in spec.ranks}
        self.out = JsonLines(spec)
        self.steps = steps_per_collective(spec.collective, spec.nranks)
        self.state = WAITING
        self.iteration = 0
        self.coll: RingCollective | None = None
        self.coll_start = 0.0
        self.backlog: list[Any] = []
        self.phase_at: float | None = spec.start_at or 0.0  # next start / end of compute / drain limit
        self.error: str | None = None
        self.failures: list[str] = []
        self.wake_at: int | None = None
        self.iterations_done = 0
        self.loop.at(s_to_ns(self.phase_at), self._wake, s_to_ns(self.phase_at))
        self.wake_at = s_to_ns(self.phase_at)

    # -- event entry points -------------------------------------------------------------
    def on_datagram(self, src_ip: bytes, datagram: memoryview, ecn: int) -> None:
        """A CTH datagram for this rank arrived now (``src_ip``: 4 bytes)."""
        src = self.rank_of.get(src_ip)
        if src is None:
            return
        now = self.loop.now * 1e-9
        self.transport.on_datagram(src, datagram, ecn, now)
        if self.state >= DONE:  # ended: still acknowledge what the left neighbour resends
            for o in self.transport.poll(now):
                self.host.send(self.ip_of[o.dst_rank], self.port, self.port_of[o.dst_rank], o.datagram, o.ecn)
            return
        self._service()

    def _wake(self, t: int) -> None:
        if t != self.wake_at:
            return
        self.wake_at = None
        self._service()

    # -- the worker's loop --------------------------------------------------------------
    def _service(self) -> None:
        if self.state >= DONE:
            return
        now = self.loop.now * 1e-9
        tr = self.transport
        coll = self.coll
        deliveries = tr.deliveries()
        if deliveries:
            if coll is None or coll.done or self.state != RUNNING:
                self.backlog.extend(deliveries)
            else:
                for d in deliveries:
                    if not coll.on_delivery(d, now):
                        self.backlog.append(d)
        if self.state == WAITING and self.phase_at is not None and now >= self.phase_at:
            self._start_iteration(now)
        elif self.state == COMPUTING and self.phase_at is not None and now >= self.phase_at:
            self._start_iteration(now)
        if self.state == RUNNING:
            coll = self.coll
            assert coll is not None
            for req in coll.poll(now):
                tr.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last)
            if coll.done:
                self._end_iteration(now)
        if self.state == DRAINING and (tr.idle() or (self.phase_at is not None and now >= self.phase_at)):
            self._finish(now)
        if self.state >= DONE:
            return
        out = tr.poll(now)
        if out:
            send = self.host.send
            ip_of, port, port_of = self.ip_of, self.port, self.port_of
            for o in out:
                dst = o.dst_rank
                send(ip_of[dst], port, port_of[dst], o.datagram, o.ecn)
            if self.state == DRAINING and tr.idle():
                self._finish(now)
                return
        self._arm()

    def _arm(self) -> None:
        t = self.transport.next_timer()
        state = self.state
        if state == RUNNING:
            coll = self.coll
            if coll is not None:
                tc = coll.next_timer()
                if tc is not None and (t is None or tc < t):
                    t = tc
        elif state != DONE and state != FAILED and self.phase_at is not None and (t is None or self.phase_at < t):
            t = self.phase_at  # WAITING, COMPUTING, DRAINING
        if t is None:
            return
        ns = s_to_ns(t)
        now = self.loop.now
        if ns <= now:
            ns = now + 1
        if self.wake_at is None or ns < self.wake_at:
            self.wake_at = ns
            self.loop.at(ns, self._wake, ns)

    def _start_iteration(self, now: float) -> None:
        spec, k = self.spec, self.iteration
        data = worker_mod.make_input(spec, spec.rank, k)
        self.verifier.add_input(k, spec.rank, data)
        coll = RingCollective(spec.collective, spec.rank, spec.nranks, data, step_base=k * self.steps,
                              slices=spec.slices, step_timeout=spec.step_timeout_s)
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
        end = max(e for _, _, e in coll.step_log) if coll.step_log else now
        for step, s_start, s_end in coll.step_log:
            self.out.write("step", iteration=k, step=step, start=s_start, end=s_end)
        if coll.error is not None:
            self._fail(coll.error)
            return
        assert coll.result is not None
        problem, digest = self.verifier.check_digest(k, spec.rank, coll.result, digest=self.record_digest)
        if problem is not None:
            self.failures.append(problem)
            log.error("job %d rank %d: %s", spec.job_id, spec.rank, problem)
        self.out.write("iteration", iteration=k, start=self.coll_start, end=end, verified=problem is None,
                       digest=digest)
        self.coll = None
        self.iterations_done = k + 1
        self.iteration = k + 1
        if self.iteration < spec.iterations:
            if spec.compute_s > 0:
                self.state = COMPUTING
                self.phase_at = now + spec.compute_s
            else:
                self._start_iteration(now)
                coll = self.coll
                assert coll is not None
                for req in coll.poll(now):
                    self.transport.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last)
                if coll.done:
                    self._end_iteration(now)
        else:
            self.state = DRAINING
            self.phase_at = now + spec.step_timeout_s

    def _finish(self, now: float) -> None:  # noqa: ARG002
        if self.failures:
            self._fail(self.failures[0])
            return
        self.state = DONE
        self._close()
        self.on_end(self)

    def _fail(self, message: str) -> None:
        self.error = message
        self.state = FAILED
        self.out.write("error", message=message)
        self._close()
        self.on_end(self)

    def _close(self) -> None:
        stats = self.transport.stats()
        self.out.write("transport",
                       **{k: stats.get(k, 0) for k in ("packets_sent", "retransmissions", "cnps_sent", "cnps_received")},
                       rate_samples=stats.get("rate_samples", []))
        self.out.close()

    def interrupt(self, message: str) -> None:
        """End this rank from outside (time limit, another rank failed): error record, file closed."""
        if self.state < DONE:
            self.error = message
            self.state = FAILED
            self.out.write("error", message=message)
            self._close()


class SimHost:
    """One host: its access link, its ranks (by job) and a background sink."""

    def __init__(self, name: str, ip: str, mac: str, macs: dict[str, str], loop: EventLoop) -> None:
        self.name = name
        self.ip = ip
        self.loop = loop
        self.builder = frames.FrameBuilder(mac, ip, macs)
        self.link: HostLink | None = None
        self.ranks: dict[int, SimRank] = {}  #: job id -> rank on this host
        self.sink_packets = 0
        self.sink_bytes = 0
        self.garbage = 0

    def send(self, dst_ip: str, sport: int, dport: int, datagram: bytes, ecn: int) -> None:
        """Frame ``datagram`` and put it on the access link now."""
        assert self.link is not None
        self.link.send(self.builder.build(dst_ip, sport, dport, datagram, ecn))

    def receive(self, frame: bytes) -> None:
        """A frame reached this host (IPv4/UDP as :func:`emu.vtime.frames.parse` reads it)."""
        n = len(frame)
        if n < _PAYLOAD_OFFSET or frame[12] != 8 or frame[13] != 0 or frame[23] != 17 or frame[14] != 0x45:
            self.garbage += 1
            return
        dport = (frame[36] << 8) | frame[37]
        if dport == CTH_UDP_PORT and n >= _PAYLOAD_OFFSET + 4:
            rank = self.ranks.get((frame[_PAYLOAD_OFFSET + 2] << 8) | frame[_PAYLOAD_OFFSET + 3])
            if rank is not None:
                rank.on_datagram(frame[26:30], memoryview(frame)[_PAYLOAD_OFFSET:], frame[15] & 3)
                return
            self.garbage += 1
            return
        if dport == TRAFFIC_PORT:
            self.sink_packets += 1
            self.sink_bytes += len(frame) - _PAYLOAD_OFFSET
        else:
            self.garbage += 1


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
            tr.send(req.dst_rank, req.step, req.payload, now, offset=req.offset, last=req.last)
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
