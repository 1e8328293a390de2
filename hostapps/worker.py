"""Collective worker process: ``python -m hostapps.worker --spec FILE.json``.

One worker runs one rank of one job (docs/DESIGN.md section 5, docs/interfaces.md section 4):
the rank worker core (:class:`hostapps.rank.RankWorker`: transport, DCQCN, one ring
collective per iteration, compute gaps, drain, verification, records) on a UDP socket bound
to its own ``ip:port`` (:class:`hostapps.aio.UdpDriver`), in asyncio. This module is the
thin driver: it reads the spec (:mod:`hostapps.spec`), pre-generates the inputs when the
results are verified after the drain, gives the core ``loop.time()`` as its clock and the
offset to the wall clock, and writes the core's records as JSON lines to
``results_dir/job{J}-rank{R}.jsonl`` as they come (schema: :data:`hostapps.rank.RECORD_FIELDS`,
the same as virtual time's). All times in the records are ``time.time()`` seconds (wall clock,
shared by the Mininet hosts); the ``timer_*`` and ``cpu_*`` fields are measured.

Exit status 0 when every iteration verified, else 1 with one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import socket
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from hostapps import aio
from hostapps.rank import LocalVerifier, RankWorker, rank_input
from hostapps.spec import SpecError, WorkerSpec, channel_port, load_spec, transport_config

logger = logging.getLogger(__name__)


class WorkerFailed(Exception):
    """The run failed; ``str()`` is the one-line reason."""


class RankDriver(aio.UdpDriver):
    """A :class:`RankWorker` on a UDP socket; its records go to ``out`` after each poll."""

    def __init__(self, worker: RankWorker, sock: socket.socket, peers: dict[int, tuple[str, int]],
                 loop: asyncio.AbstractEventLoop, out: TextIO, channel_socks: Sequence[socket.socket] = ()) -> None:
        self.worker = worker
        self.out = out
        self.finished: asyncio.Future[None] = loop.create_future()
        super().__init__(worker, worker.spec.rank, sock, peers, loop, channel_socks)

    def write_records(self) -> None:
        """Write (and flush) the records the worker made since the last call."""
        records = self.worker.take_records()
        if records:
            self.out.write("".join(json.dumps(r) + "\n" for r in records))
            self.out.flush()

    def _after_poll(self) -> None:
        self.write_records()
        if self.worker.done and not self.finished.done():
            self.finished.set_result(None)


async def run_worker(spec: WorkerSpec, driver_class: type[RankDriver] = RankDriver) -> RankDriver:
    """Run every iteration of ``spec`` and write the JSON lines; raise :class:`WorkerFailed`.

    ``driver_class``: the driver (a :class:`RankDriver`; ``symphony-emu calibrate-host`` gives
    one that times each event loop callback, emu.hostcal). Returns the driver once it ended.
    Cancellation (SIGTERM/SIGINT in :func:`main`) ends the rank with an "interrupted" error
    record, closes the socket and the file.
    """
    loop = asyncio.get_running_loop()
    me = spec.ranks[spec.rank]
    peers = {a.rank: (a.ip, a.port) for a in spec.ranks if a.rank != spec.rank}
    overrides = {"pacing_slack_s": aio.PACING_SLACK_S, **(spec.transport or {})}  # the event loop's wake-ups
    verifier = LocalVerifier(spec)
    first = spec.first_iteration
    pre = [rank_input(spec, spec.rank, first + k) for k in range(spec.iterations)] if verifier.defer else None
    worker = RankWorker(
        spec, verifier=verifier, config=transport_config(spec.line_rate_bps, spec.mtu, overrides),
        inputs=(lambda label: pre[label - first]) if pre is not None else None,
        clock_offset=time.time() - loop.time(), measured=True,
    )
    spec.output_path.parent.mkdir(parents=True, exist_ok=True)
    # a scheme's later block appends to its JSON lines (emu.runner.plan_blocks)
    with spec.output_path.open("a" if first else "w", encoding="utf-8") as out:
        socks: list[socket.socket] = []
        try:  # the rank's port, then one send socket per further channel (hostapps.spec.channel_port)
            for c in range(spec.channels):
                port = channel_port(me.port, c)
                socks.append(aio.bind_udp((me.ip, port)))
        except OSError as exc:
            for s in socks:
                s.close()
            message = f"cannot open UDP endpoint {me.ip}:{port}: {exc}"
            worker.interrupt(message)
            out.write("".join(json.dumps(r) + "\n" for r in worker.take_records()))
            raise WorkerFailed(message) from None
        driver = driver_class(worker, socks[0], peers, loop, out, socks[1:])
        try:
            driver.pump()  # arms the timer of the first iteration
            await driver.finished
        except asyncio.CancelledError:
            worker.interrupt("interrupted")
            raise
        finally:
            driver.close()
            driver.write_records()
    if worker.error is not None:
        raise WorkerFailed(worker.error)
    return driver


# --- CLI ------------------------------------------------------------------------------


def _install_loop(choice: str) -> None:
    """Use uvloop for ``uvloop`` (error when missing) and ``auto`` (when installed)."""
    if choice == "asyncio":
        return
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise SpecError("--loop uvloop: uvloop is not installed (pip install uvloop)") from None
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


async def _main_async(spec: WorkerSpec) -> str | None:
    """Run the worker with SIGTERM/SIGINT cancelling it; return a failure line or None."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    got: list[str] = []

    def _stop(sig: signal.Signals) -> None:
        got.append(sig.name)
        task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _stop, sig)
    try:
        await run_worker(spec)
    except WorkerFailed as exc:
        return str(exc)
    except asyncio.CancelledError:
        if got:
            return f"stopped by {got[0]}"
        raise
    return None


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: 0 when every iteration verified, 1 otherwise (reason on stderr)."""
    parser = argparse.ArgumentParser(prog="python -m hostapps.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--spec", required=True, help="worker spec JSON file (docs/interfaces.md section 4)")
    parser.add_argument("--log-level", default="warning", help="logging level (default warning)")
    parser.add_argument(
        "--loop", choices=("auto", "uvloop", "asyncio"), default="asyncio",
        help="event loop: the stdlib asyncio loop (default: its timers follow the pacing schedule "
             "to well under 1 ms, where libuv's timers have 1 ms resolution), uvloop, or auto "
             "(uvloop when installed)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        spec = load_spec(args.spec)
        _install_loop(args.loop)
    except SpecError as exc:
        print(f"hostapps.worker: {exc}", file=sys.stderr)
        return 1
    try:
        problem = asyncio.run(_main_async(spec))
    except OSError as exc:
        problem = f"rank {spec.rank}: {exc}"
    if problem is not None:
        print(f"hostapps.worker: job {spec.job_id} rank {spec.rank}: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
