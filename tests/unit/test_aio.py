"""Asyncio adapter on 127.0.0.1: reliable bulk exchange, ECN in and out, garbage, dead peers."""

from __future__ import annotations

import asyncio
import socket

import pytest

from hostapps.aio import Endpoint, open_endpoint
from hostapps.transport import TransportConfig
from hostapps.wire import ECN_CE, ECN_ECT0, Cth, CthType, decode, encode

JOB = 2
TIMEOUT = 60.0  # s, generous bound for a loaded CI machine; not a performance assertion
CFG = TransportConfig(line_rate_bps=100e6)


async def pair(rate_control: str = "dcqcn") -> tuple[Endpoint, Endpoint]:
    a = await open_endpoint(JOB, 0, ("127.0.0.1", 0), {}, CFG, rate_control, None)
    b = await open_endpoint(JOB, 1, ("127.0.0.1", 0), {0: a.local_address}, CFG, rate_control, None)
    a.peers[1] = b.local_address
    return a, b


async def receive_bytes(ep: Endpoint, n: int, step: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        d = await ep.recv()
        assert d.step == step and d.offset == len(buf)
        buf += d.payload
    return bytes(buf)


async def exchange_1mb() -> None:
    a, b = await pair()
    async with a, b:
        to_b = bytes(range(256)) * 4096  # 1 MiB
        to_a = bytes(reversed(range(256))) * 4096
        a.send(1, 11, to_b)
        b.send(0, 12, to_a)
        got_b, got_a = await asyncio.wait_for(
            asyncio.gather(receive_bytes(b, len(to_b), 11), receive_bytes(a, len(to_a), 12)), TIMEOUT)
        await asyncio.wait_for(asyncio.gather(a.wait_idle(), b.wait_idle()), TIMEOUT)
        assert got_b == to_b and got_a == to_a
        sa = a.stats()
        assert sa["bytes_delivered"] == len(to_a) and sa["garbage"] == 0
        assert sa["packets_sent"] >= len(to_b) // CFG.mss
        assert sa["send_errors"] == 0


async def test_exchange_1mb_asyncio() -> None:
    await exchange_1mb()


def test_exchange_1mb_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop", reason="uvloop not installed (pip install -e '.[fast]')")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(exchange_1mb())


def plain_socket(tos: int | None = None) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    if tos is not None:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.setblocking(False)
    return s


async def recv_cth(s: socket.socket) -> tuple[Cth, int]:
    """Next datagram on ``s`` as (header, ECN bits from the TOS control message)."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(s.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(s.fileno())
    data, anc, _, _ = s.recvmsg(65535, socket.CMSG_SPACE(4))
    tos = next((c[0] for lvl, typ, c in anc if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS), 0)
    return decode(data)[0], tos & 0b11


async def test_ce_mark_read_and_cnp_emitted() -> None:
    raw = plain_socket(tos=ECN_CE)  # a plain socket plays rank 0 and sends CE-marked DATA
    b = await open_endpoint(JOB, 1, ("127.0.0.1", 0), {0: raw.getsockname()}, CFG)
    with raw:
        async with b:
            raw.sendto(encode(Cth(CthType.DATA, JOB, 4, 0, 1, psn=0, flags=1), b"hello"), b.local_address)
            seen = {}
            while len(seen) < 2:
                hdr, ecn = await asyncio.wait_for(recv_cth(raw), TIMEOUT)
                seen[hdr.type] = (hdr, ecn)
            cnp, cnp_ecn = seen[CthType.CNP]
            ack, ack_ecn = seen[CthType.ACK]
            assert (cnp.job_id, cnp.src_rank, cnp.dst_rank) == (JOB, 1, 0)
            assert cnp_ecn == ack_ecn == 0  # control packets are Not-ECT
            assert ack.psn == 1 and ack.flags & 0x02  # ECE
            d = await asyncio.wait_for(b.recv(), TIMEOUT)
            assert (d.src_rank, d.step, d.payload, d.last) == (0, 4, b"hello", True)
            st = b.stats()
            assert st["ce_received"] == 1 and st["cnps_sent"] == 1


async def test_data_leaves_ect0_and_garbage_counted() -> None:
    raw = plain_socket()  # plays rank 1
    a = await open_endpoint(JOB, 0, ("127.0.0.1", 0), {1: raw.getsockname()}, CFG, "none", None)
    with raw:
        async with a:
            a.send(1, 3, b"payload")
            hdr, ecn = await asyncio.wait_for(recv_cth(raw), TIMEOUT)
            assert hdr.type == CthType.DATA and ecn == ECN_ECT0
            for junk in (b"", b"short", bytes([0x51]) + bytes(15), encode(Cth(CthType.ACK, 9, 0, 1, 0))):
                raw.sendto(junk, a.local_address)
            # an ACK after the junk: when it is processed, the junk was too (same socket, in order)
            raw.sendto(Cth(CthType.ACK, JOB, 3, 1, 0, psn=1).pack(), a.local_address)
            await asyncio.wait_for(a.wait_idle(), TIMEOUT)
            st = a.stats()
            assert st["garbage"] == 4 and st["acks_received"] == 1


async def test_dead_peer_does_not_kill_endpoint() -> None:
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dead.bind(("127.0.0.1", 0))
    dead_addr = dead.getsockname()
    dead.close()  # nothing listens there now: the kernel answers with ICMP port unreachable
    a, b = await pair("none")
    a.peers[5] = dead_addr
    async with a, b:
        a.send(5, 1, bytes(3000))
        a.send(1, 2, bytes(5000))
        got = await asyncio.wait_for(receive_bytes(b, 5000, 2), TIMEOUT)
        assert got == bytes(5000)
        st = a.stats()
        assert st["send_errors"] == 0  # ICMP errors, if reported at all, are counted apart


async def test_send_to_unknown_rank_rejected() -> None:
    a, b = await pair()
    async with a, b:
        with pytest.raises(ValueError, match="not in peers"):
            a.send(9, 1, b"x")
    with pytest.raises(RuntimeError, match="closed"):
        a.send(1, 1, b"x")
