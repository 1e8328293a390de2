"""Collective worker process: ``python -m hostapps.worker --spec FILE.json``.

One worker runs one rank of one job (docs/DESIGN.md section 5, docs/interfaces.md section 4):
it opens a UDP endpoint (:func:`hostapps.aio.open_endpoint`) on its own ``ip:port``,
waits until the wall-clock ``start_at``, then runs ``iterations`` ring collectives
(:class:`hostapps.collectives.RingCollective`), sleeping ``compute_s`` between them, and
writes JSON lines to ``results_dir/job{J}-rank{R}.jsonl``:

- ``{"kind": "step", "job", "rank", "iteration", "step", "start", "end"}`` per ring step
  (step-log definitions in :mod:`hostapps.collectives`);
- ``{"kind": "iteration", "job", "rank", "iteration", "start", "end", "verified",
  "digest"}`` per collective: ``start`` when this rank started it, ``end`` when it had
  all its data, ``digest`` the SHA-256 hex digest of the result's float32 bytes;
- ``{"kind": "transport", "job", "rank", "packets_sent", "retransmissions", "timeouts",
  "nacks_received", "duplicates", "cnps_sent", "cnps_received", "timer_wakeups",
  "timer_late_wakeups", "timer_lag_total_s", "timer_lag_max_s", "rate_samples"}`` once at
  the end (``timer_*``: how late the event loop woke the transport, ``Transport.lag``),
  with ``cpu_s``, ``cpu_wait_s`` (runnable but waiting for a CPU) and ``cpu_wall_s`` of the
  iterations (see :func:`schedstat`);
- ``{"kind": "error", "job", "rank", "message"}`` when the run fails.

All times are ``time.time()`` seconds (wall clock, shared by the Mininet hosts). Exit
status 0 when every iteration verified, else 1 with one line on stderr.

Inputs and verification: rank ``r``'s input of iteration ``k`` is
``default_rng([seed, job_id, r, k]).standard_normal(size_bytes // 4).astype(float32)``.
Every worker regenerates all ranks' inputs and checks its own result against the float64
sum: all-reduce per element ``|x - ref| <= N * eps32 * sum_i |x_i|`` (``eps32 = 2**-23``;
a float32 sum of N terms in any order has error at most ``(N-1) * u * sum|x_i|`` with
``u = eps32 / 2``, Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
section 4.2, so the bound leaves a factor of 2 plus the rounding of the final value);
reduce-scatter the same on chunk ``rank``; all-gather bit-exact. Results are kept and
verified after the last iteration when they fit in :data:`DEFER_VERIFY_BYTES`, so the
check never delays the next collective; otherwise right after each one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from hostapps.collectives import RingCollective, steps_per_collective
from hostapps.rank import DEFER_VERIFY_BYTES, digest, make_input, schedstat, verify
from hostapps.spec import SpecError, WorkerSpec, load_spec, transport_config

logger = logging.getLogger(__name__)


# --- the asyncio driver ---------------------------------------------------------------


class WorkerFailed(Exception):
    """The run failed; ``str()`` is the one-line reason."""


class _JsonLines:
    def __init__(self, path: Path, job: int, rank: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO = path.open("w", encoding="utf-8")
        self._head = {"job": job, "rank": rank}

    def write(self, kind: str, **fields: Any) -> None:
        self._fh.write(json.dumps({"kind": kind, **self._head, **fields}) + "\n")

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class _Driver:
    """Feeds endpoint deliveries to the current collective and its sends to the endpoint."""

    def __init__(self, endpoint: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.endpoint = endpoint
        self.loop = loop
        self.coll: RingCollective | None = None
        self.backlog: list[Any] = []  # deliveries for later collectives
        self.finished = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

    def run(self, coll: RingCollective, now: float) -> None:
        self.coll = coll
        self.finished.clear()
        coll.start(now)
        backlog, self.backlog = self.backlog, []
        for d in backlog:
            if not coll.on_delivery(d, now):
                self.backlog.append(d)
        self._after(now)

    def feed(self, d: Any) -> None:
        coll = self.coll
        if coll is None or coll.done:
            self.backlog.append(d)
            return
        now = time.time()
        if not coll.on_delivery(d, now):
            self.backlog.append(d)
        self._after(now)

    def _after(self, now: float) -> None:
        coll = self.coll
        assert coll is not None
        for req in coll.poll(now):
            self.endpoint.send(req.dst_rank, req.step, req.payload, offset=req.offset, last=req.last)
        if coll.done:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.finished.set()
        elif self._timer is None:
            self._arm()

    def _arm(self) -> None:
        assert self.coll is not None
        due = self.coll.next_timer()
        if due is not None:
            self._timer = self.loop.call_later(max(0.0, due - time.time()), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self.coll is not None and not self.coll.done:
            self._after(time.time())


async def _pump(endpoint: Any, driver: _Driver) -> None:
    while True:
        driver.feed(await endpoint.recv())


async def _sleep_until(t: float) -> None:
    while (left := t - time.time()) > 0:
        await asyncio.sleep(min(left, 1.0))


async def run_worker(spec: WorkerSpec) -> None:
    """Run every iteration of ``spec`` and write the JSON lines; raise :class:`WorkerFailed`.

    Cancellation (SIGTERM/SIGINT in :func:`main`) closes the endpoint and the file.
    """
    from hostapps import aio

    loop = asyncio.get_running_loop()
    me = spec.ranks[spec.rank]
    peers = {a.rank: (a.ip, a.port) for a in spec.ranks if a.rank != spec.rank}
    overrides = {"pacing_slack_s": aio.PACING_SLACK_S, **(spec.transport or {})}  # the event loop's wake-ups
    config = transport_config(spec.line_rate_bps, spec.mtu, overrides)
    out = _JsonLines(spec.output_path, spec.job_id, spec.rank)
    try:
        endpoint = await aio.open_endpoint(
            spec.job_id, spec.rank, (me.ip, me.port), peers, config, spec.rate_control, spec.rate_params
        )
    except (OSError, ValueError) as exc:
        message = f"cannot open UDP endpoint {me.ip}:{me.port}: {exc}"
        out.write("error", message=message)
        out.close()
        raise WorkerFailed(message) from None
    driver = _Driver(endpoint, loop)
    pump = asyncio.create_task(_pump(endpoint, driver))
    steps = steps_per_collective(spec.collective, spec.nranks)
    defer = 2 * spec.iterations * spec.n_elements * 4 <= DEFER_VERIFY_BYTES
    kept: list[tuple[int, float, float, np.ndarray, np.ndarray]] = []
    failures: list[str] = []
    sched0: tuple[float, float, float] | None = None
    try:
        pre = [make_input(spec, spec.rank, k) for k in range(spec.iterations)] if defer else None
        if spec.start_at is not None:
            await _sleep_until(spec.start_at)
        sched0 = schedstat()
        for k in range(spec.iterations):
            data = pre[k] if pre is not None else make_input(spec, spec.rank, k)
            coll = RingCollective(
                spec.collective, spec.rank, spec.nranks, data, step_base=k * steps,
                slices=spec.slices, step_timeout=spec.step_timeout_s,
            )
            start = time.time()
            driver.run(coll, start)
            await driver.finished.wait()
            end = max(e for _, _, e in coll.step_log) if coll.step_log else time.time()
            for step, s_start, s_end in coll.step_log:
                out.write("step", iteration=k, step=step, start=s_start, end=s_end)
            if coll.error is not None:
                raise WorkerFailed(coll.error)
            assert coll.result is not None
            if defer:
                kept.append((k, start, end, coll.result, data))
            else:
                _record(spec, out, k, start, end, coll.result, data, failures)
            out.flush()
            if spec.compute_s > 0 and k + 1 < spec.iterations:
                await asyncio.sleep(spec.compute_s)
        await _drain(endpoint, spec.step_timeout_s)
        for k, start, end, result, data in kept:
            _record(spec, out, k, start, end, result, data, failures)
        if failures:
            raise WorkerFailed(failures[0])
    except WorkerFailed as exc:
        out.write("error", message=str(exc))
        raise
    except asyncio.CancelledError:
        out.write("error", message="interrupted")
        raise
    finally:
        pump.cancel()
        stats = endpoint.stats()
        cpu = _cpu_record(sched0, schedstat())
        out.write(
            "transport",
            **{k: stats.get(k, 0) for k in ("packets_sent", "retransmissions", "timeouts", "nacks_received",
                                            "duplicates", "cnps_sent", "cnps_received")},
            **{f"timer_{k}": v for k, v in endpoint.transport.lag.items()},
            **cpu,
            rate_samples=stats.get("rate_samples", []),
        )
        out.close()
        endpoint.close()


def _cpu_record(start: tuple[float, float, float] | None, end: tuple[float, float, float] | None) -> dict[str, float]:
    """``cpu_s``, ``cpu_wait_s`` and ``cpu_wall_s`` between two :func:`schedstat` samples ({} if unknown)."""
    if start is None or end is None:
        return {}
    return {"cpu_s": round(end[0] - start[0], 6), "cpu_wait_s": round(end[1] - start[1], 6),
            "cpu_wall_s": round(end[2] - start[2], 6)}


def _record(
    spec: WorkerSpec, out: _JsonLines, k: int, start: float, end: float,
    result: np.ndarray, data: np.ndarray, failures: list[str],
) -> None:
    problem = verify(spec, k, result, data)
    if problem is not None:
        failures.append(problem)
        logger.error("rank %d: %s", spec.rank, problem)
    out.write("iteration", iteration=k, start=start, end=end, verified=problem is None, digest=digest(result))


async def _drain(endpoint: Any, limit_s: float) -> None:
    """Wait (at most ``limit_s``) until every packet we sent was acknowledged.

    The right neighbour needs our last step's data; leaving earlier would strand it.
    """
    try:
        await asyncio.wait_for(endpoint.wait_idle(), limit_s)
    except TimeoutError:
        logger.warning("last packets not acknowledged within %.1f s", limit_s)


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
