"""SwitchCore: the embedded switch without I/O (P4 pipeline + traffic manager).

docs/interfaces.md section 3. The core never reads a clock and owns no socket: the
caller hands it frames with :meth:`SwitchCore.receive`, collects frames to transmit with
:meth:`SwitchCore.poll` and calls again at :meth:`SwitchCore.next_deadline_us`. Port I/O
(``portio.py``) and the STF runner (``stf.py``, virtual clock) both drive it.

Per frame: size check -> ``pipeline.ingress`` (parser, verify checksum, ingress) ->
traffic manager queue of ``egress_spec`` -> ``pipeline.egress`` when the packet starts
service (egress, compute checksum, deparser) -> departure after serialisation + delay.

A frame never makes the core raise: every failure is counted by reason in
``stats()["drops"]`` and logged at debug level, at most once per second per reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from emu.embedded.errors import PacketError
from emu.embedded.link import QueueConfig
from emu.embedded.runtime import IngressResult, Pipeline
from emu.embedded.tm import EgressStage, TrafficManager

logger = logging.getLogger(__name__)

#: Largest frame accepted: 1500-byte MTU + 14-byte Ethernet header + 4-byte VLAN tag (bytes).
MAX_FRAME_BYTES = 1514 + 4

#: Drop reasons reported by ``stats()["drops"]``.
DROP_REASONS = ("tail", "pipeline", "malformed", "oversize", "bad_port", "tx_error", "internal")

#: Pipeline statistics keys that count parser errors (see runtime.Pipeline.stats).
_PARSER_ERROR_KEYS = ("parser_errors", "parser_error")


class PipelineLike(Protocol):
    """What SwitchCore needs of ``runtime.Pipeline`` (docs/interfaces.md section 3): every
    member is required (no probing), so a test double says what it stands in for."""

    #: counters by name; ``parser_errors`` (packets whose parser_error is not NoError) if kept.
    #: Always the same dict, in which ``parser_errors`` is counted as it happens (the core
    #: reads it per packet through the reference it took at construction)
    stats: dict[str, int]
    #: None: enq_qdepth in packets; else units per queued packet (T2NA: cells)
    qdepth_unit: Any
    #: copies egress asked for (E2E clones, recirculations), taken by the core after each packet
    pending: list
    #: the last egress run sent its packet back to ingress (not a drop)
    last_recirculated: bool

    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> Any | None: ...

    def egress_at(self, st: Any, egress_port: int, enq_qdepth: int, deq_qdepth: int,
                  deq_timedelta_us: int, enq_timestamp_us: int, now_us: int) -> bytes | None: ...


class _RateLimitedLog:
    """Debug logging of per-packet problems, at most one record per reason per interval.

    Driven by the caller's ``now_us`` so the core stays clock-free.
    """

    def __init__(self, interval_us: int = 1_000_000) -> None:
        self.interval_us = interval_us
        self._last: dict[str, int] = {}
        self._suppressed: dict[str, int] = {}

    def __call__(self, reason: str, now_us: int, msg: str, *args: Any, exc_info: bool = False) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        last = self._last.get(reason)
        if last is not None and now_us - last < self.interval_us:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1
            return
        self._last[reason] = now_us
        n = self._suppressed.pop(reason, 0)
        if n:
            msg += " (%d similar suppressed)"
            args = (*args, n)
        logger.debug(msg, *args, exc_info=exc_info)


class SwitchCore(EgressStage):
    """P4 pipeline plus traffic manager, driven by explicit time.

    ``pipeline`` follows docs/interfaces.md (``runtime.Pipeline``); ``ports`` are the
    switch's port numbers (0..510; 511 is the v1model drop port). Every port starts with
    an unlimited rate, a depth of ``link.DEFAULT_DEPTH_PKTS`` packets and no delay.

    ``ticks_per_us``: the unit of every ``now_us`` argument and deadline is 1/ticks_per_us
    microseconds (default 1: microseconds; the virtual-time network uses 1000, nanoseconds);
    the pipeline's ``ingress_global_timestamp``, ``enq_timestamp`` and ``deq_timedelta``
    stay in microseconds, as on v1model. ``max_frame_bytes``: largest frame accepted
    (default 1518: a 1500-byte MTU; a scenario with a 4096-byte MTU passes 4096 + 18).
    ``wire_overhead_bytes``: bytes each frame costs on an egress link beyond its own
    (default 0; see ``tm.TrafficManager``).
    """

    def __init__(self, pipeline: PipelineLike, ports: Iterable[int], *, ticks_per_us: int = 1,
                 max_frame_bytes: int = MAX_FRAME_BYTES, wire_overhead_bytes: int = 0) -> None:
        self.pipeline = pipeline
        port_list = sorted({int(p) for p in ports})
        for p in port_list:
            if not 0 <= p < 511:
                raise ValueError(f"switch port {p} out of range 0..510")
        if max_frame_bytes < 14:
            raise ValueError(f"max_frame_bytes must be >= 14 (an Ethernet header), got {max_frame_bytes!r}")
        #: clock ticks per microsecond of every ``now_us`` argument (1: microseconds, 1000: ns);
        #: the pipeline's v1model timestamps stay in microseconds (ticks // ticks_per_us).
        self.ticks_per_us = int(ticks_per_us)
        self.max_frame_bytes = int(max_frame_bytes)
        self.tm = TrafficManager(port_list, stage=self, ticks_per_us=self.ticks_per_us,
                                 wire_overhead_bytes=wire_overhead_bytes,
                                 qdepth_unit=pipeline.qdepth_unit)
        self._ports = frozenset(port_list)
        # 1 at each port number of the switch (0..510): a byte read in C when compiled, where the
        # frozenset's membership test hashes a boxed int (twice per frame)
        self._portmask = bytes(1 if p in self._ports else 0 for p in range(511))
        # frames received and sent per port, indexed by port number (0..510; stats() gives the
        # switch's ports): a list indexed in C when compiled, not a dict's hash and store per frame
        self._rx = [0] * 511
        self._tx = [0] * 511
        self._drops = dict.fromkeys(DROP_REASONS, 0)
        #: Real-time port I/O lateness (emu.embedded.portio): timer wake-ups, those later
        #: than 2 ms behind the traffic manager's next departure, and the worst (us). A late
        #: departure means the switch fell behind its modelled queues (CPU contention).
        self.io_lag = {"wakeups": 0, "late_wakeups": 0}
        self.io_lag_max_us = 0
        self._log = _RateLimitedLog(1_000_000 * self.ticks_per_us)
        #: the pipeline's counters (PipelineLike.stats: the same dict, parser errors counted live)
        self._pstats: dict = pipeline.stats
        self._parser_key = next((k for k in _PARSER_ERROR_KEYS if k in self._pstats), None)
        #: copies egress asked for (E2E clones, recirculations): the pipeline's list
        self._pending: list = pipeline.pending
        #: the first internal error (an exception from the pipeline that is not a PacketError)
        self.internal_error: Exception | None = None
        # Pipeline.egress_at: positional arguments, one call per packet
        self._egress_at = pipeline.egress_at
        #: the pipeline when it is a runtime.Pipeline, else None (a test double): the core then calls
        #: Pipeline.ingress and Pipeline.egress_at on it directly (C calls when compiled), not what its
        #: instance ``__dict__`` may put in their place; set it to None to call ``pipeline.ingress``
        #: and ``_egress_at`` as attributes (benchmarks/sim_speed.py's timers replace them)
        self._cpipe: Pipeline | None = pipeline if isinstance(pipeline, Pipeline) else None

    def _internal(self, exc: Exception, now_us: int, where: str) -> None:
        """An exception out of the pipeline that is not a :class:`PacketError`: a bug in the
        program's generated code or the runtime. The packet is dropped and counted under
        ``drops.internal``; the first one is logged at error level with its traceback (and
        kept in :attr:`internal_error`), later ones at debug level, rate-limited."""
        self._drops["internal"] += 1
        if self.internal_error is None:
            self.internal_error = exc
            logger.error("%s: internal error in the P4 pipeline, packet dropped (%s: %s); later ones "
                         "are counted under drops.internal", where, type(exc).__name__, exc, exc_info=exc)
        else:
            self._log("internal", now_us, "%s: internal error in the P4 pipeline: %s: %s",
                      where, type(exc).__name__, exc)

    @property
    def ports(self) -> list[int]:
        """The switch's port numbers, ascending."""
        return sorted(self._ports)

    # -- data path -----------------------------------------------------------------

    def receive(self, port: int, frame: bytes, now_us: int) -> None:
        """Process one frame that arrived on ``port`` at ``now_us`` (microseconds).

        Runs ingress now and queues the packet; egress runs when it starts service.
        Never raises because of the frame's contents.
        """
        tm = self.tm
        if now_us >= tm._next_service:  # tm.service_until(now_us) without the call when it has nothing to do
            tm.service_until(now_us)
        if not (0 <= port < 511 and self._portmask[port]):  # port not in self._ports
            self._drops["bad_port"] += 1
            self._log("bad_port", now_us, "frame received on unknown port %r", port)
            return
        self._rx[port] += 1
        n = len(frame)
        if n > self.max_frame_bytes:
            # a frame of any smaller length enters the parser, as on bmv2 (short: PacketTooShort)
            self._drops["oversize"] += 1
            self._log("oversize", now_us, "port %d: %d-byte frame longer than %d bytes, dropped",
                      port, n, self.max_frame_bytes)
            return
        self._ingress(frame, port, now_us, None)
        if self._pending:
            self._copies(now_us)

    def _ingress(self, frame: bytes, port: int, now_us: int, copy: tuple | None) -> None:
        """Ingress of a received frame, or (``copy`` = (instance_type, preserved, depth)) of a
        resubmitted/recirculated one, then the packets it makes enter their queues."""
        tm = self.tm
        n = len(frame)
        pipe = self.pipeline
        key = self._parser_key
        perr = self._pstats.get(key, 0) if key else 0
        tpu = self.ticks_per_us
        cp = self._cpipe
        try:
            if copy is None:
                if cp is not None:
                    st = Pipeline.ingress(cp, frame, port, now_us if tpu == 1 else now_us // tpu)
                else:
                    st = pipe.ingress(frame, port, now_us if tpu == 1 else now_us // tpu)
            else:
                st = pipe.ingress_copy(frame, port, now_us if tpu == 1 else now_us // tpu, *copy)
        except PacketError as e:
            self._drops["malformed"] += 1
            self._log("malformed", now_us, "port %d: %d-byte frame %s dropped: %s", port, n, frame[:64].hex(), e)
            return
        except Exception as e:
            self._internal(e, now_us, f"port {port}: ingress of a {n}-byte frame {frame[:64].hex()}")
            return
        if st is None:
            if key and self._pstats.get(key, 0) != perr:
                self._drops["malformed"] += 1
                self._log("malformed", now_us, "port %d: parser error, dropped", port)
            else:
                self._drops["pipeline"] += 1
            return
        if type(st) is IngressResult:  # runtime.Pipeline's (C member reads when compiled)
            ist = st
            out_port = ist.egress_spec
            fan = ist.mcast_grp or ist.ops is not None
        else:
            try:
                out_port = st.egress_spec
            except AttributeError:
                self._drops["malformed"] += 1
                self._log("malformed", now_us, "port %d: ingress result without egress_spec", port,
                          exc_info=True)
                return
            try:
                fan = st.mcast_grp or st.ops is not None
            except AttributeError:  # a pipeline without multicast or copies (tests' fakes)
                fan = False
        if fan:
            self._fanout(st, port, now_us)
            return
        if not (0 <= out_port < 511 and self._portmask[out_port]):  # out_port not in self._ports
            self._drops["bad_port"] += 1
            self._log("bad_port", now_us, "port %d: egress_spec %d is not a switch port, dropped",
                      port, out_port)
            return
        if tm.enqueue_service(out_port, st, now_us) is None:  # enqueue, then service_until(now_us) if due
            self._drops["tail"] += 1

    def _enqueue_copy(self, out_port: int, st: Any, now_us: int, from_port: int) -> None:
        if out_port not in self._ports:
            self._drops["bad_port"] += 1
            self._log("bad_port", now_us, "port %d: copy to %d, not a switch port, dropped", from_port, out_port)
        elif self.tm.enqueue(out_port, st, now_us) is None:
            self._drops["tail"] += 1

    def _fanout(self, st: Any, port: int, now_us: int) -> None:
        """Multicast replicas, clones, resubmission (Pipeline.fanout) of one ingress result."""
        try:
            tasks = self.pipeline.fanout(st)
        except PacketError as e:
            self._drops["malformed"] += 1
            self._log("malformed", now_us, "port %d: replication dropped: %s", port, e)
            return
        except Exception as e:
            self._internal(e, now_us, f"port {port}: replication")
            return
        if not tasks:
            self._drops["pipeline"] += 1
            return
        for task in tasks:
            if task[0] == "egress":
                self._enqueue_copy(task[1], task[2], now_us, port)
            else:
                _kind, frame, in_port, itype, preserved, depth = task
                self._ingress(frame, in_port, now_us, (itype, preserved, depth))
        self.tm.service_until(now_us)

    def _copies(self, now_us: int) -> None:
        """Enqueue the E2E clones and re-run ingress for the recirculations egress asked for."""
        pending = self._pending
        rounds = 0
        while pending and rounds < 64:  # bounded: each copy has a re-entry depth limit too
            rounds += 1
            tasks = pending[:]
            del pending[:]
            for task in tasks:
                if task[0] == "egress":
                    self._enqueue_copy(task[1], task[2], now_us, task[2].port)
                else:
                    _kind, frame, in_port, itype, preserved, depth = task
                    self._ingress(frame, in_port, now_us, (itype, preserved, depth))
            self.tm.service_until(now_us)

    def _run_egress(self, port: int, st: Any, enq_qdepth: int, deq_qdepth: int,
                    deq_timedelta_us: int, enq_timestamp_us: int, now_us: int) -> bytes | None:
        """Traffic manager callback at service start: egress + deparser, never raises."""
        tpu = self.ticks_per_us
        if tpu != 1:
            deq_timedelta_us //= tpu
            enq_timestamp_us //= tpu
            now_tick, now_us = now_us, now_us // tpu
        else:
            now_tick = now_us
        cp = self._cpipe
        try:
            if cp is not None and type(st) is IngressResult:
                out = Pipeline.egress_at(cp, st, port, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_timestamp_us,
                                         now_us)
            else:
                out = self._egress_at(st, port, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_timestamp_us, now_us)
        except PacketError as e:
            self._drops["malformed"] += 1
            self._log("malformed", now_tick, "port %d: egress dropped the packet: %s", port, e)
            return None
        except Exception as e:
            self._internal(e, now_tick, f"port {port}: egress")
            return None
        if out is None and not self.pipeline.last_recirculated:
            self._drops["pipeline"] += 1
        return out

    def poll(self, now_us: int) -> list[tuple[int, bytes]]:
        """Frames to put on the wire at ``now_us``: ``[(port, frame), ...]``, FIFO per port."""
        tm = self.tm
        if now_us >= tm._next_service:  # tm.service_until(now_us) without the call when it has nothing to do
            tm.service_until(now_us)
        if self._pending:
            self._copies(now_us)
        out = tm.due(now_us)
        if out:
            tx = self._tx
            for port, _ in out:
                tx[port] += 1
        return out

    def next_deadline_us(self) -> int | None:
        """Time (us) at which :meth:`poll` has work next; None when idle."""
        return self.tm.next_deadline_us()

    # -- control -------------------------------------------------------------------

    def set_queue(self, port: int, *, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> None:
        """Shape egress ``port``: rate in bit/s, depth in packets, delay in microseconds.

        None leaves a setting unchanged; ``rate_bps=0`` restores an unlimited rate.
        Raises ValueError for an unknown port or an invalid value (names both).
        """
        if port not in self._ports:
            raise ValueError(f"set_queue: unknown port {port!r} (ports: {self.ports})")
        old = self.tm.config(port)
        rate = old.rate_bps if rate_bps is None else (None if rate_bps == 0 else float(rate_bps))
        try:
            cfg = QueueConfig(
                rate_bps=rate,
                depth_pkts=old.depth_pkts if depth_pkts is None else int(depth_pkts),
                delay_us=old.delay_us if delay_us is None else int(delay_us),
            )
        except ValueError as e:
            raise ValueError(f"set_queue port {port}: {e}") from None
        self.tm.set_queue(port, cfg)
        logger.info("port %d queue: rate %s bit/s, depth %d packets, delay %d us",
                    port, cfg.rate_bps or "unlimited", cfg.depth_pkts, cfg.delay_us)

    def note_drop(self, reason: str, n: int = 1) -> None:
        """Count ``n`` drops that happened outside the core (e.g. ``"tx_error"`` in port I/O)."""
        self._drops[reason] = self._drops.get(reason, 0) + n

    def stats(self) -> dict[str, Any]:
        """Counters: ``{"rx": {port: n}, "tx": {port: n}, "drops": {reason: n},
        "max_qdepth": {port: packets}, "tail_drops": {port: n}, "queues": {port: {...}},
        "pipeline": {...}, "io_lag": {"wakeups", "late_wakeups"}, "io_lag_max_us"}``. Drop reasons: tail, pipeline (P4 drop), malformed (parser
        error or a :class:`PacketError` from the pipeline), internal (any other exception
        from the pipeline: a bug, logged at error level), oversize (frame longer than ``max_frame_bytes``),
        bad_port (unknown ingress or egress port), tx_error (send failed, port I/O)."""
        tm = self.tm
        port_list = sorted(self._ports)
        return {
            "rx": {p: self._rx[p] for p in port_list},
            "tx": {p: self._tx[p] for p in port_list},
            "drops": dict(self._drops),
            "max_qdepth": tm.max_qdepth(),
            "tail_drops": tm.tail_drops(),
            "queues": {p: {"rate_bps": tm.config(p).rate_bps, "depth_pkts": tm.config(p).depth_pkts,
                           "delay_us": tm.config(p).delay_us, "qdepth": tm.qdepth(p)}
                       for p in tm.ports},
            "pipeline": dict(self.pipeline.stats),
            "io_lag": dict(self.io_lag),
            "io_lag_max_us": self.io_lag_max_us,
        }
