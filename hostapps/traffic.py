"""On/off UDP background traffic (docs/DESIGN.md section 5), Not-ECT, to UDP port 5001.

Usage::

    python -m hostapps.traffic source --dst IP [--port 5001] --rate-mbps R --on-ms A \\
        --off-ms B --duration-s S [--size 1200] [--seed N] [--max-packets M]
    python -m hostapps.traffic sink [--port 5001] --duration-s S [--stats FILE]

The source alternates on periods of ``A`` ms, in which it sends ``--size``-byte UDP
payloads paced at ``R`` Mbit/s, and silent off periods of ``B`` ms. With ``--seed`` the
period lengths are exponential with means ``A`` and ``B`` (a Markov on/off source) drawn
from ``numpy.random.default_rng(seed)``; without it they are fixed. The rate counts IP
datagram bytes (payload + 28 bytes of IPv4 and UDP headers). The source stops after
``--duration-s`` seconds or ``--max-packets`` packets, whichever comes first. Packets
carry a big-endian 64-bit sequence number in their first 8 bytes (when they are that
long) and are sent with TOS 0 (Not-ECT), so the switch never ECN-marks them.

The sink counts packets and bytes (UDP payload) until ``--duration-s`` elapses or it gets
SIGTERM/SIGINT (then it still counts what is already queued on its socket), and writes
``{"packets", "bytes", "first", "last", "max_seq", "ecn_capable", "sources"}`` as JSON to
``--stats`` (and a one-line summary on stdout). ``first``/``last`` are ``time.time()`` of
the first and last packet (null when none arrived); ``ecn_capable`` counts packets whose
IP ECN field was not Not-ECT (read with ``IP_RECVTOS``; 0 for this module's sources).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

#: UDP port of background traffic (docs/interfaces.md section 1).
TRAFFIC_UDP_PORT = 5001
#: IPv4 (20) + UDP (8) header bytes counted in the pacing rate.
IP_UDP_HEADER_BYTES = 28
#: Linux ``IP_RECVTOS`` (ip(7)); not exported by every Python build.
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
#: Default packet cap of a source.
DEFAULT_MAX_PACKETS = 10_000_000
_SEQ = struct.Struct("!Q")


@dataclass(frozen=True, slots=True)
class OnOffConfig:
    """Parameters of one on/off source.

    Attributes:
        rate_bps: sending rate during on periods, bits/s of IP datagrams (> 0).
        on_s: (mean) on-period length, seconds (> 0).
        off_s: (mean) off-period length, seconds (>= 0).
        duration_s: total run time, seconds (> 0).
        size: UDP payload bytes per packet (1..65507).
        seed: exponential on/off periods from ``default_rng(seed)``; None = fixed periods.
        max_packets: upper bound on packets sent (>= 1).
    """

    rate_bps: float
    on_s: float
    off_s: float
    duration_s: float
    size: int = 1200
    seed: int | None = None
    max_packets: int = DEFAULT_MAX_PACKETS

    def __post_init__(self) -> None:
        checks = [
            (self.rate_bps > 0, "--rate-mbps must be > 0"),
            (self.on_s > 0, "--on-ms must be > 0"),
            (self.off_s >= 0, "--off-ms must be >= 0"),
            (self.duration_s > 0, "--duration-s must be > 0"),
            (1 <= self.size <= 65507, "--size must be 1..65507 bytes"),
            (self.max_packets >= 1, "--max-packets must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


def send_schedule(cfg: OnOffConfig) -> Iterator[float]:
    """Yield the send times (seconds from the start, ascending) of an on/off source.

    Pure: no clock, no socket. Packets in an on period are spaced by
    ``(size + 28) * 8 / rate_bps``; the generator ends at ``duration_s`` or after
    ``max_packets`` times.
    """
    gap = (cfg.size + IP_UDP_HEADER_BYTES) * 8 / cfg.rate_bps
    rng = np.random.default_rng(cfg.seed) if cfg.seed is not None else None
    t = 0.0
    sent = 0
    while t < cfg.duration_s:
        if rng is None:
            on, off = cfg.on_s, cfg.off_s
        else:
            on = float(rng.exponential(cfg.on_s))
            off = float(rng.exponential(cfg.off_s)) if cfg.off_s > 0 else 0.0
        end_on = min(t + on, cfg.duration_s)
        k = 0
        while True:
            ts = t + k * gap
            if ts >= end_on:
                break
            yield ts
            sent += 1
            if sent >= cfg.max_packets:
                return
            k += 1
        t = end_on + off


class _Stop:
    """Set by SIGTERM/SIGINT so the loops end cleanly."""

    def __init__(self) -> None:
        self.flag = False

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.flag = True


def schedule_origin(start_at: float | None, now_wall: float, now_mono: float) -> float:
    """The ``time.monotonic()`` value at which a source's schedule (send times from 0) begins:
    now when ``start_at`` is None, else the wall-clock instant ``start_at`` (``time.time()``,
    s) on the monotonic clock, so that a source started early waits for it and one started
    late sends what it is behind at once (as a source whose CPU was taken catches up)."""
    return now_mono if start_at is None else now_mono + (start_at - now_wall)


#: Longest single sleep of a source (s): a long wait for its start still sees SIGTERM soon.
_SLEEP_SLICE_S = 0.1


def run_source(cfg: OnOffConfig, dst: str, port: int, stop: _Stop | None = None,
               start_at: float | None = None) -> dict:
    """Send the on/off schedule to ``(dst, port)`` in real time; return counters.

    ``start_at`` (wall clock, ``time.time()`` s): when the schedule's time 0 is, e.g. the
    run's common start plus the source's ``start_s`` (:func:`schedule_origin`); default: now.
    Returns ``{"packets": n, "bytes": payload bytes, "send_errors": n}``. Socket send
    errors (e.g. ``ENOBUFS``, unreachable) are counted, not raised.
    """
    stop = stop or _Stop()
    payload = bytearray(cfg.size)
    packets = nbytes = errors = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)  # Not-ECT
        t0 = schedule_origin(start_at, time.time(), time.monotonic())
        for ts in send_schedule(cfg):
            if stop.flag:
                break
            delay = t0 + ts - time.monotonic()
            while delay > _SLEEP_SLICE_S and not stop.flag:
                time.sleep(_SLEEP_SLICE_S)
                delay = t0 + ts - time.monotonic()
            if stop.flag:
                break
            if delay > 0:
                time.sleep(delay)
            if cfg.size >= _SEQ.size:
                _SEQ.pack_into(payload, 0, packets)
            try:
                sock.sendto(payload, (dst, port))
            except OSError as exc:
                errors += 1
                logger.debug("send failed: %s", exc)
                continue
            packets += 1
            nbytes += cfg.size
    return {"packets": packets, "bytes": nbytes, "send_errors": errors}


def run_sink(port: int, duration_s: float, bind: str = "0.0.0.0", stop: _Stop | None = None,
             ready: object | None = None) -> dict:
    """Count datagrams arriving on UDP ``port`` for ``duration_s`` seconds; return stats.

    ``ready``, when given, is an object with a ``set()`` method called once the socket is
    bound (e.g. a ``threading.Event``). Returns the dictionary described in the module
    docstring.
    """
    stop = stop or _Stop()
    stats: dict = {"packets": 0, "bytes": 0, "first": None, "last": None, "max_seq": None,
                   "ecn_capable": 0, "sources": []}
    sources: set[str] = set()
    cmsg_space = socket.CMSG_SPACE(4)

    def count(data: bytes, ancdata: list, addr: tuple[str, int]) -> None:
        now = time.time()
        stats["packets"] += 1
        stats["bytes"] += len(data)
        stats["first"] = stats["first"] or now
        stats["last"] = now
        sources.add(f"{addr[0]}:{addr[1]}")
        for level, ctype, cdata in ancdata:
            if level == socket.IPPROTO_IP and ctype == socket.IP_TOS and cdata and cdata[0] & 0b11:
                stats["ecn_capable"] += 1
        if len(data) >= _SEQ.size:
            seq = _SEQ.unpack_from(data)[0]
            stats["max_seq"] = seq if stats["max_seq"] is None else max(stats["max_seq"], seq)

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        sock.bind((bind, port))
        if ready is not None:
            ready.set()  # type: ignore[attr-defined]
        deadline = time.monotonic() + duration_s
        while not stop.flag:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(min(left, 0.2))
            try:
                data, ancdata, _flags, addr = sock.recvmsg(65535, cmsg_space)
            except TimeoutError:
                continue
            count(data, ancdata, addr)
        sock.setblocking(False)  # count what is already queued, then stop
        while True:
            try:
                data, ancdata, _flags, addr = sock.recvmsg(65535, cmsg_space)
            except BlockingIOError:
                break
            count(data, ancdata, addr)
    stats["sources"] = sorted(sources)
    return stats


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hostapps.traffic", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    src = sub.add_parser("source", help="on/off UDP source (Not-ECT)")
    src.add_argument("--dst", required=True, help="destination IPv4 address")
    src.add_argument("--port", type=int, default=TRAFFIC_UDP_PORT, help="destination UDP port")
    src.add_argument("--rate-mbps", type=float, required=True, help="rate during on periods, Mbit/s")
    src.add_argument("--on-ms", type=float, required=True, help="(mean) on period, ms")
    src.add_argument("--off-ms", type=float, required=True, help="(mean) off period, ms")
    src.add_argument("--duration-s", type=float, required=True, help="total run time, s")
    src.add_argument("--size", type=int, default=1200, help="UDP payload bytes per packet")
    src.add_argument("--seed", type=int, default=None, help="exponential on/off periods with this seed")
    src.add_argument("--max-packets", type=int, default=DEFAULT_MAX_PACKETS, help="packet cap")
    src.add_argument("--start-at", type=float, default=None,
                     help="wall-clock time (time.time(), s) of the schedule's start (default: now)")
    snk = sub.add_parser("sink", help="count UDP packets and bytes")
    snk.add_argument("--port", type=int, default=TRAFFIC_UDP_PORT, help="UDP port to listen on")
    snk.add_argument("--bind", default="0.0.0.0", help="address to bind")
    snk.add_argument("--duration-s", type=float, required=True, help="how long to listen, s")
    snk.add_argument("--stats", default=None, help="write the counters as JSON to this file")
    parser.add_argument("--log-level", default="warning", help="logging level")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (2 for usage errors, 1 for run errors)."""
    args = _build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    stop = _Stop()
    stop.install()
    try:
        if args.command == "source":
            cfg = OnOffConfig(
                rate_bps=args.rate_mbps * 1e6, on_s=args.on_ms / 1e3, off_s=args.off_ms / 1e3,
                duration_s=args.duration_s, size=args.size, seed=args.seed, max_packets=args.max_packets,
            )
            if args.start_at is not None and not math.isfinite(args.start_at):
                raise ValueError("--start-at must be a finite time")
            result = run_source(cfg, args.dst, args.port, stop, start_at=args.start_at)
            print(json.dumps({"kind": "source", "dst": f"{args.dst}:{args.port}", **result}))
            return 0
        if not math.isfinite(args.duration_s) or args.duration_s <= 0:
            raise ValueError("--duration-s must be > 0")
        stats = run_sink(args.port, args.duration_s, args.bind, stop)
        if args.stats:
            with open(args.stats, "w", encoding="utf-8") as fh:
                json.dump(stats, fh)
        print(json.dumps({"kind": "sink", "port": args.port, "packets": stats["packets"], "bytes": stats["bytes"]}))
        return 0
    except ValueError as exc:
        print(f"hostapps.traffic: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"hostapps.traffic: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
