"""AF_PACKET port I/O: binds a :class:`~emu.embedded.core.SwitchCore` to Linux interfaces.

The thin adapter around the clock-free core (docs/DESIGN.md section 6): one ``AF_PACKET``
``SOCK_RAW`` socket per switch port, bound to its interface with ``ETH_P_ALL`` and set
non-blocking; an asyncio loop watches them with ``add_reader``, drains each readable
socket in batches, hands every frame to ``core.receive`` with
``now_us = time.monotonic_ns() // 1000``, sends what ``core.poll`` returns and arms one
timer at ``core.next_deadline_us()``.

Frames the switch itself sent are seen again by a packet socket as ``PACKET_OUTGOING``;
they are ignored (the kernel is asked not to deliver them with
``PACKET_IGNORE_OUTGOING`` where supported, and ``recvfrom``'s address is checked anyway).
A send that fails (``ENOBUFS``, ``EAGAIN``, ``EMSGSIZE``, the interface went away) counts
as a ``tx_error`` drop and never stops the switch. Needs ``CAP_NET_RAW``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mmap
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

from emu.embedded.core import SwitchCore

logger = logging.getLogger(__name__)

#: ``ETH_P_ALL`` from <linux/if_ether.h>: receive every protocol.
ETH_P_ALL = 0x0003
#: ``PACKET_OUTGOING`` packet type (<linux/if_packet.h>): a frame this host sent.
PACKET_OUTGOING = 4
#: ``SOL_PACKET`` / ``PACKET_IGNORE_OUTGOING`` (<linux/if_packet.h>, Linux >= 4.20).
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
#: Socket buffer size asked for each port (bytes); SO_*BUFFORCE as root, else capped by sysctl.
SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
#: Frames read from one socket per readiness callback before yielding to the loop.
RECV_BATCH = 64
#: How early a loop timer may fire and still count as on time (microseconds).
TIMER_SLACK_US = 1000
#: A departure timer firing later than this behind its deadline counts as late (us): twice
#: the event loop's 1 ms timer granularity (core.io_lag).
LATE_WAKEUP_US = 2000
#: Largest frame read (bytes); the core drops anything above 1518 bytes as oversize.
RECV_BYTES = 65535


#: ``PACKET_VERSION`` / ``PACKET_RX_RING`` socket options and ``TPACKET_V2`` (<linux/if_packet.h>).
PACKET_VERSION = 10
PACKET_RX_RING = 5
TPACKET_V2 = 1
#: ``struct tpacket2_hdr``: tp_status, tp_len, tp_snaplen, tp_mac (u32, u32, u32, u16 at 0, 4, 8, 12).
_TP2_HDR = struct.Struct("=IIIH")
#: Offset of ``sll_pkttype`` in the ``sockaddr_ll`` after a tpacket2_hdr (TPACKET_ALIGN(32) + 10).
_TP2_PKTTYPE = 42
_ZERO4 = bytes(4)
#: RX ring size: blocks of 64 KiB (one mmap'd region of RX_RING_BLOCKS * 64 KiB per port).
RX_RING_BLOCK_BYTES = 1 << 16
RX_RING_BLOCKS = 64


class RxRing:
    """A ``PACKET_MMAP`` receive ring (``TPACKET_V2``) of one AF_PACKET socket.

    The kernel copies each frame into the next free slot and marks it ``TP_STATUS_USER``;
    :meth:`frames` takes the ready ones without a system call per frame and hands the
    slots back (``TP_STATUS_KERNEL``). TPACKET_V2 rather than V3: a V3 block reaches user
    space only when full or after its retire timeout (>= 1 ms), which would delay every
    packet of a slow flow; V2 hands over each frame at once. Slots are
    ``frame_bytes`` long (a power of two >= the largest frame + headers); a longer frame
    arrives truncated and is reported with its real length so the core drops it.
    Source: Linux Documentation/networking/packet_mmap.rst. Raises OSError when the
    kernel refuses the ring (the caller falls back to ``recv``).
    """

    def __init__(self, sock: socket.socket, max_frame_bytes: int) -> None:
        frame = 1 << max(11, (max_frame_bytes + 128 - 1).bit_length())
        block = max(RX_RING_BLOCK_BYTES, frame)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        per_block = block // frame
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING,
                        struct.pack("=IIII", block, RX_RING_BLOCKS, frame, per_block * RX_RING_BLOCKS))
        self.mm = mmap.mmap(sock.fileno(), block * RX_RING_BLOCKS, mmap.MAP_SHARED,
                            mmap.PROT_READ | mmap.PROT_WRITE)
        self.offsets = [b * block + f * frame for b in range(RX_RING_BLOCKS) for f in range(per_block)]
        self.nframes = len(self.offsets)
        self.next = 0
        self.frame_bytes = frame

    def close(self) -> None:
        """Unmap the ring (the socket's close frees it)."""
        with contextlib.suppress(BufferError, ValueError):
            self.mm.close()


def open_port_socket(ifname: str) -> tuple[socket.socket, bool]:
    """A non-blocking AF_PACKET raw socket bound to ``ifname`` (all protocols), and
    whether the kernel filters out the frames this host sends (``PACKET_IGNORE_OUTGOING``).

    Raises OSError with the interface name if it does not exist or the process lacks
    CAP_NET_RAW.
    """
    try:  # protocol 0: no frame is queued until bind() names the interface and ETH_P_ALL (packet(7)),
        # else the frames of every interface of the namespace arriving before bind() would be read as this port's
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError as e:
        raise OSError(e.errno, f"interface {ifname}: AF_PACKET socket needs root (CAP_NET_RAW)") from None
    try:
        for force, plain in ((getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF),
                             (getattr(socket, "SO_SNDBUFFORCE", 32), socket.SO_SNDBUF)):
            try:
                sock.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER_BYTES)
            except OSError:
                sock.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER_BYTES)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            ignores_outgoing = True
        except OSError:
            ignores_outgoing = False
        sock.bind((ifname, ETH_P_ALL))
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"interface {ifname}: {e.strerror or e}") from None
    return sock, ignores_outgoing


class PortIO:
    """Connect ``core`` to interfaces ``{port: ifname}`` on the running asyncio loop.

    ``start()`` opens the sockets (OSError naming the interface on failure) and registers
    the readers; ``capture`` (a :class:`~emu.embedded.pcap.PortCaptures`) records each
    frame received and each frame sent; ``close()`` unregisters and closes them. Counters: ``rx_frames``,
    ``tx_frames``, ``tx_errors`` (also counted in ``core.stats()["drops"]["tx_error"]``).
    """

    def __init__(self, core: SwitchCore, interfaces: Mapping[int, str],
                 loop: asyncio.AbstractEventLoop | None = None, capture: Any = None,
                 rx_ring: bool = True) -> None:
        unknown = sorted(set(interfaces) - set(core.ports))
        if unknown:
            raise ValueError(f"ports {unknown} are not ports of the switch core")
        self.core = core
        self.interfaces = dict(interfaces)
        self._loop = loop
        #: a :class:`~emu.embedded.pcap.PortCaptures` recording every frame in and out, or None
        self.capture = capture
        self._socks: dict[int, socket.socket] = {}
        self._filtered: dict[int, bool] = {}  # kernel drops our own frames (PACKET_IGNORE_OUTGOING)
        #: use a PACKET_MMAP receive ring where the kernel allows one (else recv per frame)
        self.use_rx_ring = rx_ring
        self._rings: dict[int, RxRing] = {}
        self._ring_ports: list[int] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self.rx_frames = 0
        self.tx_frames = 0
        self.tx_errors = 0
        #: ``(port, handler)``: frames the core sends to ``port`` (the CPU port, which has no
        #: interface) go to ``handler(frame)`` (the P4Runtime server's PacketIn), or None
        self.on_cpu_frame: tuple[int, Any] | None = None
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def start(self) -> None:
        """Open and bind every port's socket and start reading."""
        loop = self.loop
        try:
            for port, ifname in sorted(self.interfaces.items()):
                self._socks[port], ignores = open_port_socket(ifname)
                self._filtered[port] = ignores
        except OSError:
            self.close()
            raise
        for port, sock in self._socks.items():
            ring = None
            if self.use_rx_ring:
                try:
                    ring = RxRing(sock, getattr(self.core, "max_frame_bytes", 1518))
                except OSError as e:
                    logger.info("port %d: no receive ring (%s); reading with recv", port, e)
            if ring is not None:
                self._rings[port] = ring
                self._ring_ports.append(port)
                loop.add_reader(sock.fileno(), self._on_ring, port, ring)
            elif self._filtered[port]:
                loop.add_reader(sock.fileno(), self._on_readable_filtered, port, sock)
            else:
                loop.add_reader(sock.fileno(), self._on_readable, port, sock)
        logger.info("ports up: %s", ", ".join(f"{p}={i}" for p, i in sorted(self.interfaces.items())))

    def close(self) -> None:
        """Stop reading and close every socket (safe to call twice)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for sock in self._socks.values():
            with contextlib.suppress(Exception):
                self.loop.remove_reader(sock.fileno())
        for ring in self._rings.values():
            ring.close()
        self._rings.clear()
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()

    # -- data path -------------------------------------------------------------------

    def _on_readable(self, port: int, sock: socket.socket) -> None:
        core = self.core
        recvfrom = sock.recvfrom
        now_us = time.monotonic_ns() // 1000
        n = 0
        for _ in range(RECV_BATCH):
            try:
                frame, addr = recvfrom(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:  # interface gone or similar: keep the switch alive
                logger.debug("port %d: recv failed: %s", port, e)
                break
            if addr[2] == PACKET_OUTGOING:
                continue
            n += 1
            if self.capture is not None:
                self.capture.record(port, frame, now_us)
            core.receive(port, frame, now_us)
        self.rx_frames += n
        self.flush(now_us)

    def _on_ring(self, port: int, ring: RxRing) -> None:
        # Frames ready in the receive ring, in order, until a slot the kernel still owns.
        receive = self.core.receive
        capture = self.capture
        mm, offsets, nframes = ring.mm, ring.offsets, ring.nframes
        unpack = _TP2_HDR.unpack_from
        check_outgoing = not self._filtered[port]
        i = ring.next
        now_us = time.monotonic_ns() // 1000
        n = 0
        for _ in range(RECV_BATCH * 4):
            off = offsets[i]
            if not mm[off] & 1:  # TP_STATUS_USER
                break
            _status, length, snaplen, mac = unpack(mm, off)
            if check_outgoing and mm[off + _TP2_PKTTYPE] == PACKET_OUTGOING:
                frame = None
            else:
                start = off + mac
                frame = mm[start:start + snaplen]
            mm[off:off + 4] = _ZERO4  # TP_STATUS_KERNEL: the slot is the kernel's again
            i = i + 1 if i + 1 < nframes else 0
            if frame is None:
                continue
            if snaplen < length:  # longer than a slot: truncated; the core drops it as oversize
                frame += bytes(length - snaplen)
            n += 1
            if capture is not None:
                capture.record(port, frame, now_us)
            receive(port, frame, now_us)
        ring.next = i
        self.rx_frames += n
        self.flush(now_us)

    def _on_readable_filtered(self, port: int, sock: socket.socket) -> None:
        # PACKET_IGNORE_OUTGOING: no PACKET_OUTGOING frames arrive, so recv() without the
        # address tuple is enough (cheaper than recvfrom).
        receive = self.core.receive
        recv = sock.recv
        capture = self.capture
        now_us = time.monotonic_ns() // 1000
        n = 0
        for _ in range(RECV_BATCH):
            try:
                frame = recv(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                logger.debug("port %d: recv failed: %s", port, e)
                break
            n += 1
            if capture is not None:
                capture.record(port, frame, now_us)
            receive(port, frame, now_us)
        self.rx_frames += n
        self.flush(now_us)

    def flush(self, now_us: int | None = None) -> None:
        """Send every frame the core has ready and re-arm the timer."""
        if self._closed:
            return
        if now_us is None:
            now_us = time.monotonic_ns() // 1000
        out = self.core.poll(now_us)
        if out:
            socks = self._socks
            capture = self.capture
            sent = 0
            cpu = self.on_cpu_frame
            for port, frame in out:
                if cpu is not None and port == cpu[0]:
                    cpu[1](frame)
                    continue
                try:
                    socks[port].send(frame)
                    sent += 1
                    if capture is not None:
                        capture.record(port, frame, now_us)
                except (OSError, KeyError) as e:
                    self.tx_errors += 1
                    self.core.note_drop("tx_error")
                    logger.debug("port %d: send of %d bytes failed: %s", port, len(frame), e)
            self.tx_frames += sent
        self._arm(self.core.next_deadline_us(), now_us)

    def _arm(self, deadline_us: int | None, now_us: int) -> None:
        if deadline_us is None:
            return
        if self._timer is not None:
            if self._timer_at is not None and self._timer_at <= deadline_us:
                return  # an earlier (or equal) wake-up is already armed
            self._timer.cancel()
        self._timer_at = deadline_us
        self._timer = self.loop.call_later(max(0.0, (deadline_us - now_us) / 1e6), self._on_timer)

    def _on_timer(self) -> None:
        # Loop timers have about 1 ms resolution (uvloop, epoll): a timer that fires
        # slightly early polls at its deadline instead of spinning until it.
        due = self._timer_at
        self._timer = None
        self._timer_at = None
        now_us = time.monotonic_ns() // 1000
        if due is not None and 0 < due - now_us <= TIMER_SLACK_US:
            now_us = due
        if due is not None:
            late = now_us - due
            lag = self.core.io_lag
            lag["wakeups"] += 1
            if late > LATE_WAKEUP_US:
                lag["late_wakeups"] += 1
            if late > self.core.io_lag_max_us:
                self.core.io_lag_max_us = late
        self.flush(now_us)

    def stats(self) -> dict[str, Any]:
        """Port I/O counters, and the ports read through a receive ring."""
        return {"rx_frames": self.rx_frames, "tx_frames": self.tx_frames, "tx_errors": self.tx_errors,
                "rx_ring_ports": sorted(self._ring_ports)}
