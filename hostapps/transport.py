"""Reliable, paced, rate-controlled transport over CTH datagrams; no I/O, no clock.

One :class:`Transport` per (job, rank). A flow is (job, channel, src_rank -> dst_rank); each
flow has PSNs starting at 0 (docs/DESIGN.md section 5). A job of K channels (NCCL-style rings,
:class:`hostapps.collectives.ChannelCollective`) has K flows to its right neighbour in the one
transport, so they share the host's line-rate pacing; internally a flow is keyed
``rank | channel << 16`` (channel 0: the rank). Every entry point takes ``now``
(seconds) and the core returns what to send (:meth:`Transport.poll`) and when it wants
to be called again (:meth:`Transport.next_timer`); :mod:`hostapps.aio` and
:mod:`hostapps.lossychannel` (tests) and :mod:`emu.vtime` drive it. Call :meth:`Transport.poll` after :meth:`Transport.send`
and after :meth:`Transport.on_datagram`.

Protocol (docs/interfaces.md section 4):

- Sender: a message is cut into DATA packets of at most ``config.mss`` payload bytes;
  DATA leaves with ECN ECT(0), everything else Not-ECT. Pacing: a DATA packet may leave
  at ``last + wire_bytes * 8 / rate``, with ``rate = min(rate controller, line rate)``
  per flow and the line rate over all flows, through a token bucket whose depth (in
  sending time) is the largest of ``burst_packets`` packets, ``pacing_slack_s`` and the
  lateness of recent wake-ups: a caller whose timers fire late (an event loop with 1 ms
  granularity) still sends at the rate, in bursts that cover the wake-up interval. At
  most ``window_packets`` packets per flow are unacked.
- Receiver: cumulative ACK (``psn`` = next expected PSN) every ``ack_every`` in-order
  packets, on a LAST packet, on a duplicate, or ``ack_delay`` after the first unacked
  packet. Out-of-order packets (up to ``recv_buffer_packets`` ahead) are buffered,
  duplicates dropped, and each packet is delivered exactly once in PSN order. A gap
  triggers one NACK (``psn`` = first missing PSN, which also acknowledges everything
  before it); the same gap is NACKed again at most once per ``nack_interval``.
- Retransmission is selective on NACK: only the NACKed PSN is resent (once per
  smoothed RTT for a packet already resent); when it fills the hole the receiver NACKs
  the next hole, if any. On a retransmission timeout the sender goes back N: every
  unacked packet is resent, and the RTO doubles up to ``max_rto``. RTO estimation
  follows RFC 6298 (SRTT, RTTVAR, Karn's rule: no sample from retransmitted packets),
  clamped to [``min_rto``, ``max_rto``].
- ECN notification point (DCQCN, Zhu et al. 2015, section 3.1): on a CE-marked DATA
  packet the receiver sends a CNP to the sender, at most one per flow per
  ``cnp_interval``; the next ACK carries ECE. The sender's rate controller
  (:mod:`hostapps.ratecontrol`) reacts to CNPs only.
- Steps travel modulo 2**16; :attr:`Delivery.step` is the wire value for the first
  packet of a flow, then unwrapped against the previous step with serial arithmetic
  (RFC 1982, never below 0), so it equals the step given to :meth:`Transport.send` when
  the flow's first step is below 2**16 and consecutive messages differ by less than
  2**15 steps. PSNs travel modulo 2**24 (the CTH's 24-bit PSN, as RoCEv2's BTH) and are
  unwrapped the same way against the flow's own full counters (oldest unacked, next
  expected), so a flow may send any number of packets: only PSNs within 2**23 of those
  counters are compared, and the window (``window_packets``) and the receive buffer
  (``recv_buffer_packets``) are far smaller.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from hostapps.ratecontrol import RateController, make_rate_controller
from hostapps.wire import (
    CTH_LEN,
    ECN_CE,
    ECN_ECT0,
    ECN_MASK,
    ECN_NOT_ECT,
    MAX_CHANNELS,
    MAX_CHUNK_BYTES,
    MAX_JOBS,
    PSN_BITS,
    CthFlags,
    CthType,
    WireError,
    pack_header,
    unpack_header,
)

logger = logging.getLogger(__name__)

#: IPv4 header without options (RFC 791), bytes.
IPV4_HEADER_LEN = 20
#: UDP header (RFC 768), bytes.
UDP_HEADER_LEN = 8
_PSN_MOD = 1 << PSN_BITS
#: Largest rank the CTH carries (16-bit src_rank / dst_rank).
MAX_WIRE_RANK = 0xFFFF
_STEP_MOD = 1 << 16
# the header's type and flag values as plain ints and members bound once (per-packet code:
# IntFlag arithmetic and enum attribute lookups cost more than the rest of a header)
_DATA, _ACK, _NACK, _CNP = int(CthType.DATA), int(CthType.ACK), int(CthType.NACK), int(CthType.CNP)
_LAST, _ECE, _RETX = int(CthFlags.LAST), int(CthFlags.ECE), int(CthFlags.RETX)


#: Zero bytes that packets of a message's zero padding (:meth:`Transport.send` ``pad``) are views of:
#: one constant, read by every such packet (a digest payload's slices are a record and zeros).
_ZEROS = bytes(1 << 16)
_ZERO_VIEW = memoryview(_ZEROS)


def _zeros(n: int) -> bytes | memoryview:
    """``n`` zero bytes: a read-only view of :data:`_ZEROS` (a new ``bytes`` beyond its 64 KiB)."""
    return _ZERO_VIEW[:n] if n <= len(_ZEROS) else bytes(n)


#: The counters of :meth:`Transport.stats`, in its order.
COUNTERS = (
    "packets_sent", "bytes_sent", "retransmissions", "timeouts",
    "cnps_sent", "cnps_received", "ce_received", "ece_received",
    "acks_sent", "acks_received", "nacks_sent", "nacks_received",
    "packets_received", "duplicates", "out_of_order", "beyond_window",
    "packets_delivered", "bytes_delivered", "garbage",
)

#: A wake-up later than this behind its timer counts as late in ``Transport.lag`` (s):
#: twice epoll's 1 ms timeout granularity.
LATE_WAKEUP_S = 0.002


@dataclass(frozen=True, slots=True)
class TransportConfig:
    """Transport settings; times in seconds, rates in bit/s, sizes in bytes or packets.

    Raises ValueError naming the field when a value is out of range.
    """

    #: Host line rate (bit/s); no flow and no host total is paced above it.
    line_rate_bps: float = 10_000_000.0
    #: IP MTU (bytes); ``mss = mtu - 20 (IPv4) - 8 (UDP) - 16 (CTH)``.
    mtu: int = 1500
    #: Unacked DATA packets per flow (packets); bounds retransmission state.
    window_packets: int = 64
    #: Packets allowed back to back after an idle period (packets): the token bucket's
    #: smallest depth (see ``pacing_slack_s``).
    burst_packets: int = 3
    #: Token-bucket depth in time (s): a flow may catch up this much sending time after a
    #: late wake-up, so pacing keeps the rate when timers fire late. The bucket's depth is
    #: the largest of ``burst_packets`` packets, this, and the lateness of recent wake-ups
    #: as :meth:`Transport.poll` measures it. 0 (exact timers, virtual time) keeps
    #: ``burst_packets``; the asyncio worker uses 2 ms (epoll's 1 ms timeout granularity
    #: plus a wake-up; benchmarks/allreduce_loopback.py).
    pacing_slack_s: float = 0.0
    #: Bytes added to each datagram for pacing: Ethernet 14 + IPv4 20 + UDP 8 (bytes).
    wire_overhead_bytes: int = 42
    #: RTO before the first RTT sample (s); RFC 6298 says 1 s, emulated RTTs are ms.
    initial_rto: float = 0.2
    #: Lower bound of the RTO (s); RFC 6298 uses 1 s for the Internet.
    min_rto: float = 0.02
    #: Upper bound of the RTO after backoff (s).
    max_rto: float = 2.0
    #: Minimum time between two NACKs of the same gap (s).
    nack_interval: float = 0.005
    #: Minimum time between two CNPs of one flow at the receiver (s); DCQCN NP, paper
    #: 3.1 uses 50 us at 40 Gbit/s. 12 ms (about two RTTs with K = 3 packets queued at
    #: 10 Mbit/s, so a flow is cut at most once before the cut shows in the queue):
    #: tuned for emulated 10 Mbit/s links by benchmarks/dcqcn_tuning.py (1.5 ms gave
    #: 54-75% utilisation; 20 ms lets queues reach the drop limit).
    cnp_interval: float = 0.012
    #: Send an ACK after this many in-order DATA packets (packets).
    ack_every: int = 4
    #: Longest delay of an ACK for in-order data (s).
    ack_delay: float = 0.001
    #: Out-of-order packets buffered per flow beyond the next expected PSN (packets).
    recv_buffer_packets: int = 1024

    def __post_init__(self) -> None:
        checks = (
            ("line_rate_bps", self.line_rate_bps > 0, "> 0 bit/s"),
            ("mtu", IPV4_HEADER_LEN + UDP_HEADER_LEN + CTH_LEN < self.mtu <= 65535,
             f"in ({IPV4_HEADER_LEN + UDP_HEADER_LEN + CTH_LEN}, 65535] bytes"),
            ("window_packets", self.window_packets >= 1, ">= 1"),
            ("burst_packets", self.burst_packets >= 1, ">= 1"),
            ("pacing_slack_s", self.pacing_slack_s >= 0, ">= 0 s"),
            ("wire_overhead_bytes", self.wire_overhead_bytes >= 0, ">= 0"),
            ("initial_rto", self.initial_rto > 0, "> 0 s"),
            ("min_rto", self.min_rto > 0, "> 0 s"),
            ("max_rto", self.max_rto >= self.min_rto, ">= min_rto"),
            ("nack_interval", self.nack_interval >= 0, ">= 0 s"),
            ("cnp_interval", self.cnp_interval >= 0, ">= 0 s"),
            ("ack_every", self.ack_every >= 1, ">= 1"),
            ("ack_delay", self.ack_delay >= 0, ">= 0 s"),
            ("recv_buffer_packets", self.recv_buffer_packets >= 1, ">= 1"),
        )
        for field, ok, want in checks:
            if not ok:
                raise ValueError(f"TransportConfig.{field}={getattr(self, field)!r} must be {want}")

    @property
    def mss(self) -> int:
        """Largest DATA payload (bytes): mtu - 20 IPv4 - 8 UDP - 16 CTH."""
        return self.mtu - IPV4_HEADER_LEN - UDP_HEADER_LEN - CTH_LEN


class Outgoing:
    """One datagram to send: UDP payload for ``dst_rank`` with IP ECN codepoint ``ecn``.

    One is made per packet: the compiled module makes it an extension type with these fields as
    C members (``transport.pxd``); this class has the same ``__slots__``. Two are equal when their
    fields are (treat them as read-only values).
    """

    __slots__ = ("dst_rank", "datagram", "ecn")

    def __init__(self, dst_rank: int, datagram: bytes, ecn: int) -> None:
        self.dst_rank = dst_rank
        self.datagram = datagram
        self.ecn = ecn

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outgoing):
            return NotImplemented
        return (self.dst_rank, self.datagram, self.ecn) == (other.dst_rank, other.datagram, other.ecn)

    def __repr__(self) -> str:
        return f"Outgoing(dst_rank={self.dst_rank!r}, datagram={self.datagram!r}, ecn={self.ecn!r})"


class Delivery:
    """One DATA packet's payload, delivered once and in PSN order per source and channel.

    ``payload`` is bytes, or a read-only byte ``memoryview`` of the datagram given to
    :meth:`Transport.on_datagram` (a packet delivered in order: no copy), bytes-like either way.
    One is made per packet: an extension type in the compiled module, as :class:`Outgoing`.
    """

    __slots__ = ("src_rank", "step", "offset", "payload", "last", "channel")

    def __init__(self, src_rank: int, step: int, offset: int, payload: bytes | memoryview, last: bool,
                 channel: int = 0) -> None:
        self.src_rank = src_rank
        self.step = step
        self.offset = offset
        self.payload = payload
        self.last = last
        self.channel = channel

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Delivery):
            return NotImplemented
        return (self.src_rank, self.step, self.offset, self.payload, self.last, self.channel) == \
            (other.src_rank, other.step, other.offset, other.payload, other.last, other.channel)

    def __repr__(self) -> str:
        return (f"Delivery(src_rank={self.src_rank!r}, step={self.step!r}, offset={self.offset!r}, "
                f"payload={self.payload!r}, last={self.last!r}, channel={self.channel!r})")


class _TxPacket:
    __slots__ = ("psn", "step", "offset", "payload", "last", "sent_at", "sends")

    def __init__(self, psn: int, step: int, offset: int, payload: bytes, last: bool) -> None:
        self.psn = psn
        self.step = step
        self.offset = offset
        self.payload = payload
        self.last = last
        self.sent_at = -math.inf
        self.sends = 0


class _SendFlow:
    def __init__(self, dst: int, rc: RateController, rto: float, channel: int = 0) -> None:
        self.dst = dst
        self.channel = channel
        self.rc = rc
        self.next_psn = 0  # next PSN to assign
        self.una = 0  # oldest unacked PSN
        self.pending: deque[_TxPacket] = deque()  # never sent yet
        self.inflight: dict[int, _TxPacket] = {}  # sent, unacked; PSNs in [una, snd_nxt)
        self.snd_nxt = 0  # next never-sent PSN
        self.retx_heap: list[int] = []
        self.retx_set: set[int] = set()
        self.next_send = -math.inf  # pacing: earliest time of the next DATA packet
        self.rto = rto
        self.rto_at: float | None = None
        self.srtt: float | None = None
        self.rttvar = 0.0

    def sendable(self, window: int) -> bool:
        return bool(self.retx_heap) or (bool(self.pending) and self.snd_nxt - self.una < window)


class _RecvFlow:
    def __init__(self) -> None:
        self.expected = 0  # next expected PSN
        self.buffer: dict[int, tuple[int, int, bytes, bool]] = {}
        self.step: int | None = None  # last delivered step, unwrapped
        self.last_cnp = -math.inf
        self.nacked_psn: int | None = None
        self.last_nack = -math.inf
        self.unacked = 0  # in-order packets not yet acknowledged
        self.ack_due: float | None = None
        self.ece = False
        self.last_step_wire = 0


def _paced_next(next_send: float, now: float, wire: int, rate: float, burst: int, slack: float) -> float:
    """The next send time (s) of a token bucket in time after one ``wire``-byte frame at
    ``rate`` (bit/s): the bucket's time may lag ``now`` by at most ``burst`` frames' time or
    ``slack`` s, whichever is more, so a late wake-up sends what was due since, at the rate,
    and no more. Used for a flow's pacing and for the host's line."""
    tx = wire * 8 / rate
    depth = burst * tx
    if slack > depth:
        depth = slack
    t = now - depth
    if next_send > t:
        t = next_send
    return t + tx


def _unwrap(wire: int, ref: int, mod: int) -> int:
    """Full value nearest to ``ref`` congruent to ``wire`` modulo ``mod`` (RFC 1982)."""
    half = mod >> 1
    return ref + ((wire - ref + half) % mod) - half


class Transport:
    """Transport core of one rank of one job.

    Args:
        job_id: job number, 0 <= job_id < MAX_JOBS.
        rank: own rank, 0..65535 (16 bits on the wire).
        config: :class:`TransportConfig`.
        rate_control: name in :data:`hostapps.ratecontrol.RATE_CONTROLLERS` (one
            controller per sending flow).
        rate_params: parameters of that controller (e.g. DcqcnParams fields).
        channels: the job's channels (rings), 1..MAX_CHANNELS: each (channel, peer) is
            its own flow, every header carries its flow's channel, and a datagram of a
            channel >= ``channels`` is garbage (docs/DESIGN.md section 5).

    Raises ValueError (or RateControlError) on a bad argument.
    """

    def __init__(
        self,
        job_id: int,
        rank: int,
        config: TransportConfig | None = None,
        rate_control: str = "dcqcn",
        rate_params: dict[str, Any] | None = None,
        *,
        channels: int = 1,
    ) -> None:
        if not 0 <= job_id < MAX_JOBS:
            raise ValueError(f"job_id {job_id} out of range 0..{MAX_JOBS - 1}")
        if not 0 <= rank <= MAX_WIRE_RANK:
            raise ValueError(f"rank {rank} out of range 0..{MAX_WIRE_RANK}")
        if not 1 <= channels <= MAX_CHANNELS:
            raise ValueError(f"channels {channels} out of range 1..{MAX_CHANNELS}")
        self.job_id = job_id
        self.rank = rank
        self.channels = channels
        self.config = config or TransportConfig()
        self.rate_control = rate_control
        self.rate_params = dict(rate_params or {})
        make_rate_controller(rate_control, self.config.line_rate_bps, self.rate_params)  # validate
        self._send: dict[int, _SendFlow] = {}
        self._recv: dict[int, _RecvFlow] = {}
        self._ctrl: list[Outgoing] = []
        self._ctrl_at: float | None = None
        self._deliveries: list[Delivery] = []
        self._host_next_send = -math.inf
        self._wake_at: float | None = None  # the wake-up asked for by the last next_timer()
        self._last_poll = -math.inf
        self._lag_s = 0.0  # lateness of recent wake-ups (decaying max), s
        #: Wake-up lateness: how far behind its timers the caller polled (s), for overload
        #: detection (the pacing schedule slips when the event loop is starved).
        self.lag = {"wakeups": 0, "late_wakeups": 0, "lag_total_s": 0.0, "lag_max_s": 0.0}
        # the counters of stats() (packets; bytes_* bytes), one attribute each (per-packet path)
        self._n_packets_sent = self._n_bytes_sent = self._n_retransmissions = self._n_timeouts = 0
        self._n_cnps_sent = self._n_cnps_received = self._n_ce_received = self._n_ece_received = 0
        self._n_acks_sent = self._n_acks_received = self._n_nacks_sent = self._n_nacks_received = 0
        self._n_packets_received = self._n_duplicates = self._n_out_of_order = self._n_beyond_window = 0
        self._n_packets_delivered = self._n_bytes_delivered = self._n_garbage = 0
        # the config's values the per-packet path reads, once
        cfg = self.config
        self._window = cfg.window_packets
        self._burst = cfg.burst_packets
        self._slack = cfg.pacing_slack_s
        self._line = cfg.line_rate_bps
        self._overhead = cfg.wire_overhead_bytes
        self._ack_every = cfg.ack_every
        self._ack_delay = cfg.ack_delay
        self._cnp_interval = cfg.cnp_interval
        self._nack_interval = cfg.nack_interval
        self._recv_buffer = cfg.recv_buffer_packets
        self._min_rto = cfg.min_rto
        self._max_rto = cfg.max_rto

    # --- sending -----------------------------------------------------------------

    def send(
        self, dst_rank: int, step: int, data: bytes | bytearray | memoryview, now: float,
        *, offset: int = 0, last: bool = True, channel: int = 0, pad: int = 0,
    ) -> None:
        """Queue one message for ``dst_rank`` on ``channel``: ``data`` followed by ``pad`` zero bytes.

        The message is cut into DATA packets of at most ``config.mss`` payload bytes;
        packet i carries CTH offset ``offset + i * mss`` and the final one the LAST flag
        when ``last``. An empty message still sends one (empty) packet. The padding is not
        materialised: a packet of zeros only is a view of one constant (:data:`_ZEROS`), a
        packet across the end of ``data`` a copy of its part and zeros; the packets' bytes are
        those of ``bytes(data) + bytes(pad)``. Raises ValueError for a bad rank, a negative step
        or pad, or a message ending beyond ``MAX_CHUNK_BYTES`` (the 24-bit CTH offset: a chunk
        is below 16 MiB).
        """
        if not 0 <= dst_rank <= MAX_WIRE_RANK or dst_rank == self.rank:
            raise ValueError(f"dst_rank {dst_rank} must be 0..{MAX_WIRE_RANK} and not own rank {self.rank}")
        if step < 0:
            raise ValueError(f"step {step} must be >= 0")
        if not 0 <= channel < self.channels:
            raise ValueError(f"channel {channel} must be 0..{self.channels - 1}")
        if pad < 0:
            raise ValueError(f"pad {pad} must be >= 0")
        view = memoryview(data).cast("B")
        owned = type(data) is bytes  # immutable: its packets may be views of it (no copy per packet)
        size = len(view)
        total = size + pad
        if offset < 0 or offset + total > MAX_CHUNK_BYTES:
            raise ValueError(f"offset {offset} + {total} bytes does not fit the 24-bit CTH offset "
                             f"(a chunk must be below 16 MiB)")
        flow = self._flow_to(dst_rank | (channel << 16))
        mss = self.config.mss
        n = max(1, -(-total // mss))
        for i in range(n):
            lo = i * mss
            hi = lo + mss
            if hi > total:
                hi = total
            if hi <= size:
                chunk = view[lo:hi]
                if not owned:
                    chunk = bytes(chunk)
            elif lo >= size:
                chunk = _zeros(hi - lo)
            else:
                chunk = bytes(view[lo:]) + _zeros(hi - size)
            pkt = _TxPacket(flow.next_psn, step, offset + lo, chunk, last and i == n - 1)
            flow.next_psn += 1
            flow.pending.append(pkt)

    def _flow_to(self, key: int) -> _SendFlow:
        """The send flow of ``key`` = dst rank | channel << 16, made on first use."""
        flow = self._send.get(key)
        if flow is None:
            rc = make_rate_controller(self.rate_control, self.config.line_rate_bps, self.rate_params)
            flow = _SendFlow(key & 0xFFFF, rc, self.config.initial_rto, key >> 16)
            self._send[key] = flow
        return flow

    def pending_bytes(self, dst_rank: int | None = None, channel: int = 0) -> int:
        """Payload bytes queued or unacked (to ``dst_rank`` on ``channel``, or to all)."""
        flows = self._send.values() if dst_rank is None else [self._send.get(dst_rank | (channel << 16))]
        return sum(
            sum(len(p.payload) for p in f.pending) + sum(len(p.payload) for p in f.inflight.values())
            for f in flows if f is not None
        )

    def idle(self) -> bool:
        """True when every queued packet was acknowledged and no control packet waits."""
        if self._ctrl:
            return False
        for f in self._send.values():  # all(not f.pending and not f.inflight ...), without a generator
            if f.pending or f.inflight:
                return False
        return True

    # --- receiving ---------------------------------------------------------------

    def on_datagram(self, src_rank: int, datagram: bytes | memoryview, ecn: int, now: float) -> None:
        """Process one UDP payload from ``src_rank`` that arrived with IP ECN ``ecn``.

        Garbage (short, bad version or type, another job or channel, not for this rank,
        or a ``src_rank`` that disagrees with the CTH) is counted in ``stats()["garbage"]``
        and ignored; this method never raises on packet contents.
        """
        try:
            ptype, flags, job_id, channel, step, hsrc, hdst, psn, offset, payload = unpack_header(datagram)
        except WireError as exc:
            self._garbage(f"from rank {src_rank}: {exc}")
            return
        if job_id != self.job_id or hdst != self.rank or hsrc != src_rank or channel >= self.channels:
            self._garbage(
                f"job {job_id} channel {channel} {hsrc}->{hdst} (from rank {src_rank}) "
                f"is not for job {self.job_id} channels 0..{self.channels - 1} rank {self.rank}"
            )
            return
        key = (src_rank | (channel << 16)) if channel else src_rank  # the flow: peer | channel << 16
        if ptype == _DATA:
            self._on_data(key, step, psn, offset, flags, payload, ecn & ECN_MASK, now)
            return
        flow = self._send.get(key)
        if flow is None:
            self._garbage(f"{CthType(ptype).name} from rank {src_rank} without a flow to it")
            return
        if ptype == _CNP:
            self._n_cnps_received += 1
            flow.rc.on_cnp(now)
        elif ptype == _ACK:
            self._n_acks_received += 1
            if flags & _ECE:
                self._n_ece_received += 1
            self._on_ack(flow, psn, now)
        else:  # NACK
            self._n_nacks_received += 1
            self._on_nack(flow, psn, now)

    def _garbage(self, why: str) -> None:
        self._n_garbage += 1
        logger.debug("job %d rank %d: ignored datagram %s", self.job_id, self.rank, why)

    def _on_ack(self, flow: _SendFlow, wire_psn: int, now: float) -> bool:
        """Cumulative ACK up to (not including) ``wire_psn``; True when it was valid."""
        ack = _unwrap(wire_psn, flow.una, _PSN_MOD)
        if ack > flow.snd_nxt:
            self._garbage(f"ACK psn {ack} beyond sent psn {flow.snd_nxt} to rank {flow.dst}")
            return False
        if ack < flow.una:
            return False  # stale: reordered behind a newer ACK
        if ack == flow.una:
            return True
        newest = flow.inflight.get(ack - 1)
        if newest is not None and newest.sends == 1:
            self._rtt_sample(flow, now - newest.sent_at)
        for psn in range(flow.una, ack):
            flow.inflight.pop(psn, None)
            flow.retx_set.discard(psn)
        while flow.retx_heap and flow.retx_heap[0] < ack:
            heapq.heappop(flow.retx_heap)
        flow.una = ack
        flow.rto_at = now + flow.rto if flow.inflight else None
        return True

    def _rtt_sample(self, flow: _SendFlow, r: float) -> None:
        """RFC 6298 section 2: SRTT, RTTVAR, RTO = SRTT + max(G, 4 RTTVAR), clamped."""
        r = max(r, 0.0)
        if flow.srtt is None:
            flow.srtt, flow.rttvar = r, r / 2
        else:
            flow.rttvar = 0.75 * flow.rttvar + 0.25 * abs(flow.srtt - r)
            flow.srtt = 0.875 * flow.srtt + 0.125 * r
        flow.rto = min(self._max_rto, max(self._min_rto, flow.srtt + 4 * flow.rttvar))

    def _on_nack(self, flow: _SendFlow, wire_psn: int, now: float) -> None:
        if not self._on_ack(flow, wire_psn, now):
            return
        psn = _unwrap(wire_psn, flow.una, _PSN_MOD)
        pkt = flow.inflight.get(psn)
        if pkt is None or psn in flow.retx_set:
            return
        guard = flow.srtt if flow.srtt is not None else self._min_rto
        if pkt.sends > 1 and now - pkt.sent_at < guard:
            return  # its retransmission may still be on the way
        self._queue_retx(flow, psn)

    def _queue_retx(self, flow: _SendFlow, psn: int) -> None:
        if psn not in flow.retx_set:
            flow.retx_set.add(psn)
            heapq.heappush(flow.retx_heap, psn)

    def _on_data(self, src: int, step: int, wire_psn: int, offset: int, flags: int, payload: memoryview, ecn: int,
                 now: float) -> None:
        """A DATA packet's header fields (CTH values: step mod 2**16, PSN mod 2**24) and payload;
        ``src`` is the flow's key (peer rank | channel << 16)."""
        flow = self._recv.get(src)
        if flow is None:
            flow = self._recv[src] = _RecvFlow()
        self._n_packets_received += 1
        if ecn == ECN_CE:
            self._n_ce_received += 1
            flow.ece = True
            if now - flow.last_cnp >= self._cnp_interval:
                flow.last_cnp = now
                self._n_cnps_sent += 1
                self._control(src, _CNP, wire_psn, now, step, False)
        psn = _unwrap(wire_psn, flow.expected, _PSN_MOD)
        if psn < flow.expected or psn in flow.buffer:
            self._n_duplicates += 1
            self._send_ack(src, flow, now)
            return
        if psn >= flow.expected + self._recv_buffer:
            self._n_beyond_window += 1
            return
        last = bool(flags & _LAST)
        if psn > flow.expected:
            self._n_out_of_order += 1
            flow.buffer[psn] = (step, offset, bytes(payload), last)
            self._maybe_nack(src, flow, now)
            return
        # in order: deliver it (a view of an immutable datagram, else a copy) and whatever it releases
        self._deliver(src, flow, step, offset, payload if payload.readonly else bytes(payload), last)
        ack_now = last
        while flow.expected in flow.buffer:
            step, offset, data, blast = flow.buffer.pop(flow.expected)
            self._deliver(src, flow, step, offset, data, blast)
            ack_now = ack_now or blast
        if flow.buffer:
            self._maybe_nack(src, flow, now)  # the next hole, NACKed at once
        elif ack_now or flow.unacked >= self._ack_every:
            self._send_ack(src, flow, now)
        elif flow.ack_due is None:
            flow.ack_due = now + self._ack_delay

    def _deliver(self, src: int, flow: _RecvFlow, step_wire: int, offset: int, data: bytes, last: bool) -> None:
        step = step_wire if flow.step is None else _unwrap(step_wire, flow.step, _STEP_MOD)
        flow.step = step if step >= 0 else step_wire
        flow.expected += 1
        flow.unacked += 1
        self._n_packets_delivered += 1
        self._n_bytes_delivered += len(data)
        self._deliveries.append(Delivery(src & 0xFFFF, flow.step, offset, data, last, src >> 16))

    def _maybe_nack(self, src: int, flow: _RecvFlow, now: float) -> None:
        if flow.nacked_psn == flow.expected and now - flow.last_nack < self._nack_interval:
            return
        flow.nacked_psn = flow.expected
        flow.last_nack = now
        self._n_nacks_sent += 1
        self._control(src, _NACK, flow.expected % _PSN_MOD, now, 0, flow.ece)
        flow.ece = False
        flow.unacked = 0
        flow.ack_due = None

    def _send_ack(self, src: int, flow: _RecvFlow, now: float) -> None:
        self._n_acks_sent += 1
        self._control(src, _ACK, flow.expected % _PSN_MOD, now, 0, flow.ece)
        flow.ece = False
        flow.unacked = 0
        flow.ack_due = None

    def _control(self, key: int, ctype: int, psn: int, now: float, step: int = 0, ece: bool = False) -> None:
        """Queue an ACK, NACK or CNP on flow ``key`` (peer rank | channel << 16)."""
        dst = key & 0xFFFF
        datagram = pack_header(ctype, self.job_id, step, self.rank, dst, psn, 0, _ECE if ece else 0, key >> 16)
        self._ctrl.append(Outgoing(dst, datagram, ECN_NOT_ECT))
        if self._ctrl_at is None:
            self._ctrl_at = now

    # --- timers and output -------------------------------------------------------

    def poll(self, now: float) -> list[Outgoing]:
        """Run due timers and return the datagrams to send at ``now`` (control first).

        A poll at or after the time :meth:`next_timer` last returned is a wake-up; its
        lateness (``now`` minus that time) is recorded in :attr:`lag` and widens the pacing
        token bucket (``TransportConfig.pacing_slack_s``).
        """
        self._last_poll = now
        if self._wake_at is not None and now >= self._wake_at and math.isfinite(self._wake_at):
            late = now - self._wake_at
            self._wake_at = None
            lag = self.lag
            lag["wakeups"] += 1
            lag["lag_total_s"] += late
            if late > lag["lag_max_s"]:
                lag["lag_max_s"] = late
            if late > LATE_WAKEUP_S:
                lag["late_wakeups"] += 1
            # Decaying max: one very late wake-up widens the bucket for a few dozen wake-ups.
            self._lag_s = max(late, self._lag_s * 0.95)
        for src, rflow in self._recv.items():
            if rflow.ack_due is not None and rflow.ack_due <= now:
                self._send_ack(src, rflow, now)
        for flow in self._send.values():
            t = flow.rc.next_timer()
            if t is not None and t <= now:
                flow.rc.on_timer(now)
            # A caller that wakes late (CPU taken by other processes) has peers that answer
            # late too: the RTO waits the recent lateness longer (0 in virtual time).
            if flow.rto_at is not None and flow.rto_at + self._lag_s <= now:
                self._timeout(flow, now)
        out, self._ctrl, self._ctrl_at = self._ctrl, [], None
        window = self._window
        while self._host_next_send <= now:
            best: _SendFlow | None = None
            for flow in self._send.values():
                if flow.next_send <= now and flow.sendable(window) and (
                    best is None or flow.next_send < best.next_send
                ):
                    best = flow
            if best is None:
                break
            out.append(self._transmit(best, now))
        return out

    def _timeout(self, flow: _SendFlow, now: float) -> None:
        self._n_timeouts += 1
        logger.debug("job %d rank %d: RTO %.3f s to rank %d, resending %d packets",
                     self.job_id, self.rank, flow.rto, flow.dst, len(flow.inflight))
        for psn in flow.inflight:
            self._queue_retx(flow, psn)
        flow.rto = min(self._max_rto, flow.rto * 2)
        flow.rto_at = now + flow.rto

    def _transmit(self, flow: _SendFlow, now: float) -> Outgoing:
        if flow.retx_heap:
            psn = heapq.heappop(flow.retx_heap)
            flow.retx_set.discard(psn)
            pkt = flow.inflight[psn]
            self._n_retransmissions += 1
        else:
            pkt = flow.pending.popleft()
            flow.inflight[pkt.psn] = pkt
            flow.snd_nxt = pkt.psn + 1
        flags = (_LAST if pkt.last else 0) | (_RETX if pkt.sends else 0)
        datagram = pack_header(_DATA, self.job_id, pkt.step, self.rank, flow.dst, pkt.psn % _PSN_MOD, pkt.offset,
                               flags, flow.channel) + pkt.payload
        pkt.sends += 1
        pkt.sent_at = now
        if flow.rto_at is None:
            flow.rto_at = now + flow.rto
        n = len(datagram)
        wire = n + self._overhead
        # Token bucket in time: next_send may lag ``now`` by at most the bucket's depth, so a
        # late wake-up sends what was due since, at the rate, and no more.
        slack = self._slack
        if self._lag_s > slack:  # max(pacing_slack_s, lag)
            slack = self._lag_s
        rc = flow.rc
        rate = rc.rate_bps
        line = self._line
        if line < rate:  # min(rate, line)
            rate = line
        burst = self._burst - 1
        flow.next_send = _paced_next(flow.next_send, now, wire, rate, burst, slack)
        self._host_next_send = _paced_next(self._host_next_send, now, wire, line, burst, slack)
        rc.on_packet_sent(wire, now)
        self._n_packets_sent += 1
        self._n_bytes_sent += n
        return Outgoing(flow.dst, datagram, ECN_ECT0)

    def next_timer(self) -> float | None:
        """Absolute time (s) :meth:`poll` wants to run next, or None when idle."""
        # the earliest of: control packets, each flow's next paced send (when it may send),
        # RTO and rate-control timer, each receive flow's delayed ACK
        when = self._ctrl_at
        window = self._window
        host_next = self._host_next_send
        for flow in self._send.values():
            if flow.retx_heap or (flow.pending and flow.snd_nxt - flow.una < window):  # flow.sendable(window)
                t = flow.next_send if flow.next_send > host_next else host_next
                if when is None or t < when:
                    when = t
            if flow.rto_at is not None:
                t = flow.rto_at + self._lag_s
                if when is None or t < when:
                    when = t
            t = flow.rc.next_timer()
            if t is not None and (when is None or t < when):
                when = t
        for rflow in self._recv.values():
            t = rflow.ack_due
            if t is not None and (when is None or t < when):
                when = t
        # Lateness counts from the asked time, or from the last poll when that was already past.
        self._wake_at = None if when is None else max(when, self._last_poll)
        return when

    def deliveries(self) -> list[Delivery]:
        """Return and forget the deliveries made since the last call."""
        out, self._deliveries = self._deliveries, []
        return out

    def rate_bps(self, dst_rank: int, channel: int = 0) -> float:
        """Current pacing rate of the flow to ``dst_rank`` on ``channel`` (bit/s); line rate if none."""
        flow = self._send.get(dst_rank | (channel << 16))
        if flow is None:
            return self.config.line_rate_bps
        return min(flow.rc.rate_bps, self.config.line_rate_bps)

    def stats(self) -> dict[str, Any]:
        """Counters plus rate samples.

        ``packets_sent``/``bytes_sent`` count DATA datagrams (retransmissions included)
        and their UDP payload bytes; ``retransmissions``, ``timeouts``, ``cnps_sent``,
        ``cnps_received``, ``ce_received``, ``nacks_sent``, ``acks_sent`` and the other
        counters are packets. ``rate_samples`` is ``[[t, bps], ...]`` of every sending
        flow merged in time order; ``rate_samples_by_dst`` keeps them per flow.
        """
        out: dict[str, Any] = {name: getattr(self, "_n_" + name) for name in COUNTERS}
        by_dst = {dst: [[t, r] for t, r in f.rc.rate_samples] for dst, f in sorted(self._send.items())}
        out["rate_samples"] = sorted((s for v in by_dst.values() for s in v), key=lambda s: s[0])
        out["rate_samples_by_dst"] = by_dst
        return out
