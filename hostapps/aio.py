"""Asyncio adapter: one UDP socket bound to a sans-I/O core (:class:`UdpDriver`).

The core (:class:`hostapps.transport.Transport`, or :class:`hostapps.rank.RankWorker`, which
owns one) owns no socket and reads no clock; this adapter supplies ``loop.time()`` and does
the I/O (docs/interfaces.md section 4). :class:`Endpoint` is a transport on a socket with its
deliveries in a queue (tests, benchmarks); the worker process drives a rank worker
(:mod:`hostapps.worker`).

- receive: ``loop.add_reader`` + ``recvmsg``; the IP TOS byte comes in an ``IP_TOS``
  control message because ``IP_RECVTOS`` is on (Linux ip(7)); its low two bits are the
  ECN field (RFC 3168 section 5). The source rank is the CTH ``src_rank`` (bytes 6-7).
- send: ``sendmsg`` with an ``IP_TOS`` control message carrying the datagram's ECN
  codepoint (DATA ECT(0), the rest Not-ECT); if the kernel refuses the control message
  the adapter falls back to ``setsockopt(IP_TOS)`` before each send whose TOS differs.
- ``IP_MTU_DISCOVER = IP_PMTUDISC_DO`` sets DF so a datagram never fragments (an
  oversize one fails with EMSGSIZE and is counted); receive and send buffers are sized
  explicitly.
- the core's timers run from ``loop.call_at(core.next_timer(), ...)``.
- ICMP errors reported on the socket (ECONNREFUSED from a dead peer, EHOSTUNREACH,
  ENETUNREACH) are counted in ``stats()["icmp_errors"]`` and never close the endpoint.

Timer wake-ups follow the loop's resolution (epoll: 1 ms) and come late when the CPU is
busy; the transport's token bucket (``TransportConfig.pacing_slack_s``, 2 ms from the
worker, widened by the lateness it measures) sends what fell due meanwhile, so the rate
holds at any line rate the CPU can serve (benchmarks/allreduce_loopback.py).
``Transport.lag`` records how late the wake-ups were.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from hostapps.transport import Delivery, Outgoing, Transport, TransportConfig
from hostapps.wire import CTH_LEN

logger = logging.getLogger(__name__)

#: Linux ``IP_MTU_DISCOVER`` / ``IP_PMTUDISC_DO`` (ip(7)); not exported by ``socket``.
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
#: Requested socket buffer sizes (bytes); the kernel caps them at net.core.[rw]mem_max.
SOCKET_BUFFER_BYTES = 4 * 1024 * 1024
#: Datagrams read per readable callback before yielding to the loop.
RECV_BATCH = 256
#: Token-bucket depth the asyncio worker gives its transport (s): epoll rounds timeouts up
#: to 1 ms and a wake-up takes a little more (TransportConfig.pacing_slack_s).
PACING_SLACK_S = 0.002
_ICMP_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}
_CMSG_SPACE = socket.CMSG_SPACE(4)


class DatagramCore(Protocol):
    """A sans-I/O core fed datagrams by rank: :class:`hostapps.transport.Transport` or
    :class:`hostapps.rank.RankWorker` (times in the loop's clock, s)."""

    def on_datagram(self, src_rank: int, datagram: bytes | memoryview, ecn: int, now: float) -> None:
        """A datagram from ``src_rank`` (-1: unknown) with IP ECN ``ecn`` arrived."""

    def poll(self, now: float) -> list[Outgoing]:
        """Run what is due; return the datagrams to send now."""

    def next_timer(self) -> float | None:
        """When :meth:`poll` must run next, or None."""


class _SendPath:
    """One sending socket and its backlog of datagrams the kernel had no room for."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.backlog: deque[tuple[bytes, int, tuple[str, int]]] = deque()
        self.writer = False
        self.tos: int | None = None  # the socket's IP_TOS when set per send


class UdpDriver:
    """A :class:`DatagramCore` on a UDP socket: receive, send with ECN, the core's timer.

    ``channel_socks``: for a rank of several channels, the sockets that send channels 1.. from
    their own source ports (bound by the caller, send only: every datagram arrives at ``sock``);
    a datagram goes out of the socket of its CTH channel byte. Subclasses react to each poll in
    :meth:`_after_poll` (hand out deliveries, write records).
    """

    def __init__(
        self,
        core: DatagramCore,
        rank: int,
        sock: socket.socket,
        peers: dict[int, tuple[str, int]],
        loop: asyncio.AbstractEventLoop,
        channel_socks: Sequence[socket.socket] = (),
    ) -> None:
        self.core = core
        self.rank = rank
        self.peers = dict(peers)
        self._sock = sock
        self._loop = loop
        self._timer: asyncio.Handle | None = None
        # uvloop's call_at returns a plain Handle (no .when()) for past deadlines,
        # so the deadline is kept beside the handle.
        self._timer_when: float | None = None
        self._paths = [_SendPath(sock)] + [_SendPath(s) for s in channel_socks]
        self._closed = False
        self._tos_cmsg = True  # False after the kernel refused IP_TOS ancillary data
        self._stats = {"icmp_errors": 0, "send_errors": 0, "unknown_source": 0,
                       "datagrams_received": 0, "datagrams_sent": 0}
        loop.add_reader(sock.fileno(), self._on_readable)

    @property
    def local_address(self) -> tuple[str, int]:
        """The bound (ip, port)."""
        return self._sock.getsockname()

    def close(self) -> None:
        """Stop I/O and close the socket; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._loop.remove_reader(self._sock.fileno())
        for path in self._paths:
            if path.writer:
                self._loop.remove_writer(path.sock.fileno())
            path.sock.close()

    def pump(self) -> None:
        """Poll the core now, send its output, re-arm its timer."""
        self._pump()

    # --- I/O ---------------------------------------------------------------------

    def _on_readable(self) -> None:
        sock, tr = self._sock, self.core
        for _ in range(RECV_BATCH):
            try:
                data, ancdata, _flags, _addr = sock.recvmsg(65535, _CMSG_SPACE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._os_error(exc, "recvmsg")
                if exc.errno not in _ICMP_ERRNOS:
                    break
                continue
            self._stats["datagrams_received"] += 1
            tos = 0
            for level, ctype, cdata in ancdata:
                if level == socket.IPPROTO_IP and ctype in (socket.IP_TOS, IP_RECVTOS) and cdata:
                    tos = cdata[0]
            src = (data[6] << 8) | data[7] if len(data) >= CTH_LEN else -1  # CTH src_rank (bytes 6-7)
            if src >= 0 and src not in self.peers:
                self._stats["unknown_source"] += 1
                src = -1  # the transport counts it as garbage
            tr.on_datagram(src, data, tos & 0b11, self._loop.time())
        self._pump()

    def _pump(self) -> None:
        """Poll the core, send its output, let the subclass react, re-arm the timer."""
        if self._closed:
            return
        core = self.core
        for out in core.poll(self._loop.time()):
            self._send_out(out)
        self._after_poll()
        if self._closed:
            return
        when = core.next_timer()
        if self._timer is not None:
            if when is not None and self._timer_when == when:
                return
            self._timer.cancel()
            self._timer = None
            self._timer_when = None
        if when is not None:
            self._timer = self._loop.call_at(when, self._on_timer)
            self._timer_when = when

    def _after_poll(self) -> None:
        """Called after each poll of the core (nothing here)."""

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_when = None
        if self._closed:
            return
        # Read what arrived first: after a stall (CPU taken by other processes) the ACKs
        # that cancel a retransmission timer may be waiting in the socket, and polling
        # before reading them would fire a spurious RTO. _on_readable pumps the transport.
        self._on_readable()

    def _send_out(self, out: Outgoing) -> None:
        addr = self.peers.get(out.dst_rank)
        if addr is None:
            self._stats["send_errors"] += 1
            logger.warning("rank %d: no address for rank %d, dropped a datagram",
                           self.rank, out.dst_rank)
            return
        paths = self._paths
        path = paths[0] if len(paths) == 1 else paths[out.datagram[3]]  # the CTH's channel byte
        if path.backlog:
            path.backlog.append((out.datagram, out.ecn, addr))
            return
        if not self._sendto(out.datagram, out.ecn, addr, path):
            path.backlog.append((out.datagram, out.ecn, addr))
            if not path.writer:
                path.writer = True
                self._loop.add_writer(path.sock.fileno(), self._on_writable, path)

    def _on_writable(self, path: _SendPath) -> None:
        while path.backlog:
            datagram, ecn, addr = path.backlog[0]
            if not self._sendto(datagram, ecn, addr, path):
                return
            path.backlog.popleft()
        path.writer = False
        self._loop.remove_writer(path.sock.fileno())

    def _sendto(self, datagram: bytes, ecn: int, addr: tuple[str, int], path: _SendPath) -> bool:
        """Send one datagram with TOS ``ecn`` from ``path``'s socket; False when its buffer is full."""
        sock = path.sock
        try:
            if self._tos_cmsg:
                try:
                    sock.sendmsg(
                        [datagram], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", ecn))], 0, addr
                    )
                except OSError as exc:
                    if exc.errno not in (errno.EINVAL, errno.ENOPROTOOPT, errno.EOPNOTSUPP):
                        raise
                    logger.info("IP_TOS control message refused (%s); using setsockopt per send", exc)
                    self._tos_cmsg = False
                    return self._sendto(datagram, ecn, addr, path)
            else:
                if path.tos != ecn:
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ecn)
                    path.tos = ecn
                sock.sendto(datagram, addr)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            self._os_error(exc, f"send to {addr[0]}:{addr[1]}")
            return True  # dropped; the transport retransmits
        self._stats["datagrams_sent"] += 1
        return True

    def _os_error(self, exc: OSError, what: str) -> None:
        if exc.errno in _ICMP_ERRNOS:
            self._stats["icmp_errors"] += 1
            logger.debug("rank %d: %s: %s", self.rank, what, exc)
        else:
            self._stats["send_errors"] += 1
            logger.warning("rank %d: %s: %s", self.rank, what, exc)


class Endpoint(UdpDriver):
    """A transport on a UDP socket, deliveries in a queue. Build it with :func:`open_endpoint`."""

    def __init__(
        self,
        transport: Transport,
        sock: socket.socket,
        peers: dict[int, tuple[str, int]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.transport = transport
        self._queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self._idle_waiters: list[asyncio.Future[None]] = []
        super().__init__(transport, transport.rank, sock, peers, loop)

    def send(self, dst_rank: int, step: int, data: bytes, *, offset: int = 0, last: bool = True) -> None:
        """Queue a message (``Transport.send`` at ``loop.time()``); never blocks."""
        if self._closed:
            raise RuntimeError("send on a closed Endpoint")
        if dst_rank not in self.peers:
            raise ValueError(f"dst_rank {dst_rank} is not in peers {sorted(self.peers)}")
        self.transport.send(dst_rank, step, data, self._loop.time(), offset=offset, last=last)
        self._pump()

    async def recv(self) -> Delivery:
        """Wait for the next delivery (in PSN order per source)."""
        return await self._queue.get()

    async def wait_idle(self) -> None:
        """Wait until everything sent so far was acknowledged."""
        if self.transport.idle():
            return
        fut: asyncio.Future[None] = self._loop.create_future()
        self._idle_waiters.append(fut)
        await fut

    def stats(self) -> dict[str, Any]:
        """Transport stats plus adapter counters (icmp_errors, send_errors, ...)."""
        out = self.transport.stats()
        out.update(self._stats)
        return out

    def close(self) -> None:
        """Stop I/O and close the socket; idempotent."""
        super().close()
        for fut in self._idle_waiters:
            if not fut.done():
                fut.cancel()

    async def __aenter__(self) -> Endpoint:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _after_poll(self) -> None:
        tr = self.transport
        for d in tr.deliveries():
            self._queue.put_nowait(d)
        if self._idle_waiters and tr.idle():
            for fut in self._idle_waiters:
                if not fut.done():
                    fut.set_result(None)
            self._idle_waiters.clear()


def bind_udp(bind: tuple[str, int]) -> socket.socket:
    """A non-blocking UDP socket bound to ``bind`` with the options above (OSError if it cannot)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER_BYTES)
        sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        try:
            sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        except OSError as exc:  # pragma: no cover - non-Linux
            logger.warning("cannot set IP_MTU_DISCOVER=DO: %s", exc)
        sock.setblocking(False)
        sock.bind(bind)
    except BaseException:
        sock.close()
        raise
    return sock


async def open_endpoint(
    job_id: int,
    rank: int,
    bind: tuple[str, int],
    peers: dict[int, tuple[str, int]],
    config: TransportConfig | None = None,
    rate_control: str = "dcqcn",
    rate_params: dict[str, Any] | None = None,
) -> Endpoint:
    """Bind a UDP socket to ``bind`` and attach a new Transport for (job_id, rank).

    ``peers`` maps rank -> (ip, port) of every rank this one talks to. Raises OSError
    when the address cannot be bound, ValueError on a bad transport argument.
    """
    loop = asyncio.get_running_loop()
    transport = Transport(job_id, rank, config or TransportConfig(), rate_control, rate_params)
    sock = bind_udp(bind)
    logger.debug("job %d rank %d bound to %s", job_id, rank, sock.getsockname())
    return Endpoint(transport, sock, peers, loop)
