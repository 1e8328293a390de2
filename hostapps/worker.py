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
import hashlib
import ipaddress
import json
import logging
import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from hostapps.collectives import COLLECTIVE_KINDS, RingCollective, chunk_bounds, steps_per_collective
from hostapps.ratecontrol import RateControlError, make_rate_controller
from hostapps.wire import MAX_JOBS, MAX_RANKS

logger = logging.getLogger(__name__)

#: float32 machine epsilon (2**-23), the unit of the verification bound.
EPS32 = float(np.finfo(np.float32).eps)
#: Inputs and results of all iterations are kept (and verified at the end) below this size.
DEFER_VERIFY_BYTES = 256 * 1024 * 1024


class SpecError(ValueError):
    """An invalid worker spec; ``str()`` is one line naming the file and field."""


@dataclass(frozen=True, slots=True)
class RankAddr:
    """Address of one rank: IPv4 ``ip`` and UDP ``port``."""

    rank: int
    ip: str
    port: int


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A validated worker spec (docs/interfaces.md section 4).

    Attributes:
        job_id: job number, ``0 <= job_id < MAX_JOBS``.
        rank: own rank, one of ``ranks``.
        ranks: every rank's address, in rank order ``0 .. N-1``.
        collective: ``allreduce``, ``allgather`` or ``reducescatter``.
        size_bytes: buffer size in bytes, a multiple of 4 (>= 0); ``size_bytes // 4`` float32 elements.
        iterations: number of collectives (>= 1).
        compute_s: sleep between collectives (s, >= 0).
        start_at: wall-clock time (``time.time()``) of iteration 0; None = at once.
        line_rate_bps: host line rate, the transport's pacing ceiling (bit/s, > 0).
        rate_control: rate controller name (``dcqcn`` or ``none``).
        rate_params: rate controller parameters (e.g. ``DcqcnParams`` fields).
        mtu: IP MTU (bytes).
        step_timeout_s: seconds without data from the left neighbour before failing.
        slices: slices per chunk for pipelined forwarding (>= 1).
        seed: input seed (>= 0).
        results_dir: directory of the JSON lines file (created if missing).
        transport: :class:`hostapps.transport.TransportConfig` fields that differ from its
            defaults (times in s, e.g. ``cnp_interval``), besides ``line_rate_bps`` and ``mtu``.
    """

    job_id: int
    rank: int
    ranks: tuple[RankAddr, ...]
    collective: str
    size_bytes: int
    iterations: int
    compute_s: float
    start_at: float | None
    line_rate_bps: float
    rate_control: str
    rate_params: dict[str, Any] = field(default_factory=dict)
    mtu: int = 1500
    step_timeout_s: float = 10.0
    slices: int = 1
    seed: int = 1
    results_dir: str = "."
    transport: dict[str, Any] = field(default_factory=dict)

    @property
    def nranks(self) -> int:
        """Ring size N."""
        return len(self.ranks)

    @property
    def n_elements(self) -> int:
        """float32 elements per rank buffer."""
        return self.size_bytes // 4

    @property
    def output_path(self) -> Path:
        """``results_dir/job{J}-rank{R}.jsonl``."""
        return Path(self.results_dir) / f"job{self.job_id}-rank{self.rank}.jsonl"


_REQUIRED = (
    "job_id", "rank", "ranks", "collective", "size_bytes", "iterations", "start_at",
    "line_rate_bps", "results_dir",
)
_OPTIONAL_DEFAULTS: dict[str, Any] = {
    "compute_s": 0.0, "rate_control": {"name": "dcqcn", "params": {}}, "mtu": 1500,
    "step_timeout_s": 10.0, "slices": 1, "seed": 1, "transport": {},
}


def _int(obj: dict, key: str, where: str, lo: int, hi: int | None = None) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: field '{key}' must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise SpecError(f"{where}: field '{key}' must be {rng}, got {value}")
    return value


def _num(obj: dict, key: str, where: str, *, lo: float, strict: bool) -> float:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{where}: field '{key}' must be a finite number, got {value!r}")
    if value < lo or (strict and value == lo):
        raise SpecError(f"{where}: field '{key}' must be {'>' if strict else '>='} {lo:g}, got {value}")
    return float(value)


def parse_spec(obj: Any, where: str = "spec") -> WorkerSpec:
    """Validate a decoded spec; raise :class:`SpecError` naming ``where`` and the field."""
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(_REQUIRED) - set(_OPTIONAL_DEFAULTS))
    if unknown:
        raise SpecError(f"{where}: unknown field '{unknown[0]}'")
    for key in _REQUIRED:
        if key not in obj:
            raise SpecError(f"{where}: missing field '{key}'")
    obj = {**_OPTIONAL_DEFAULTS, **obj}
    job_id = _int(obj, "job_id", where, 0, MAX_JOBS - 1)
    ranks_raw = obj["ranks"]
    if not isinstance(ranks_raw, list) or not ranks_raw:
        raise SpecError(f"{where}: field 'ranks' must be a non-empty list of {{rank, ip, port}}")
    if len(ranks_raw) > MAX_RANKS:
        raise SpecError(f"{where}: field 'ranks' has {len(ranks_raw)} entries, at most {MAX_RANKS}")
    addrs: dict[int, RankAddr] = {}
    for i, entry in enumerate(ranks_raw):
        sub = f"{where}: ranks[{i}]"
        if not isinstance(entry, dict):
            raise SpecError(f"{sub} must be an object with rank, ip, port")
        for key in ("rank", "ip", "port"):
            if key not in entry:
                raise SpecError(f"{sub}: missing field '{key}'")
        extra = sorted(set(entry) - {"rank", "ip", "port"})
        if extra:
            raise SpecError(f"{sub}: unknown field '{extra[0]}'")
        r = _int(entry, "rank", sub, 0, len(ranks_raw) - 1)
        port = _int(entry, "port", sub, 1, 65535)
        try:
            ip = str(ipaddress.IPv4Address(entry["ip"]))
        except (ipaddress.AddressValueError, ValueError, TypeError):
            raise SpecError(f"{sub}: field 'ip' must be an IPv4 address, got {entry['ip']!r}") from None
        if r in addrs:
            raise SpecError(f"{sub}: rank {r} listed twice in field 'ranks'")
        addrs[r] = RankAddr(r, ip, port)
    rank = _int(obj, "rank", where, 0, len(addrs) - 1)
    collective = obj["collective"]
    if collective not in COLLECTIVE_KINDS:
        raise SpecError(f"{where}: field 'collective' must be one of {', '.join(COLLECTIVE_KINDS)}, got {collective!r}")
    size_bytes = _int(obj, "size_bytes", where, 0)
    if size_bytes % 4:
        raise SpecError(f"{where}: field 'size_bytes' must be a multiple of 4 (float32 elements), got {size_bytes}")
    iterations = _int(obj, "iterations", where, 1)
    compute_s = _num(obj, "compute_s", where, lo=0.0, strict=False)
    start_at = None if obj["start_at"] is None else _num(obj, "start_at", where, lo=0.0, strict=False)
    line_rate_bps = _num(obj, "line_rate_bps", where, lo=0.0, strict=True)
    rc = obj["rate_control"]
    if not isinstance(rc, dict) or not isinstance(rc.get("name"), str):
        raise SpecError(f"{where}: field 'rate_control' must be {{\"name\": ..., \"params\": {{...}}}}")
    params = rc.get("params", {}) or {}
    if not isinstance(params, dict) or set(rc) - {"name", "params"}:
        raise SpecError(f"{where}: field 'rate_control' takes only 'name' and an object 'params'")
    try:
        make_rate_controller(rc["name"], line_rate_bps, params)
    except (RateControlError, ValueError, TypeError) as exc:
        raise SpecError(f"{where}: field 'rate_control': {exc}") from None
    mtu = _int(obj, "mtu", where, 68, 65535)
    step_timeout_s = _num(obj, "step_timeout_s", where, lo=0.0, strict=True)
    slices = _int(obj, "slices", where, 1)
    seed = _int(obj, "seed", where, 0)
    results_dir = obj["results_dir"]
    if not isinstance(results_dir, str) or not results_dir:
        raise SpecError(f"{where}: field 'results_dir' must be a non-empty path string")
    transport = obj["transport"]
    if not isinstance(transport, dict):
        raise SpecError(f"{where}: field 'transport' must be an object of TransportConfig fields")
    try:
        transport_config(line_rate_bps, mtu, transport)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{where}: field 'transport': {exc}") from None
    return WorkerSpec(
        job_id=job_id, rank=rank, ranks=tuple(addrs[r] for r in range(len(addrs))),
        collective=collective, size_bytes=size_bytes, iterations=iterations, compute_s=compute_s,
        start_at=start_at, line_rate_bps=line_rate_bps, rate_control=rc["name"],
        rate_params=dict(params), mtu=mtu, step_timeout_s=step_timeout_s, slices=slices, seed=seed,
        results_dir=results_dir, transport=dict(transport),
    )


def transport_config(line_rate_bps: float, mtu: int, overrides: dict[str, Any] | None = None) -> Any:
    """The :class:`hostapps.transport.TransportConfig` of a rank: line rate, MTU, overrides.

    Raises TypeError for an unknown field and ValueError for a value out of range.
    """
    import dataclasses

    from hostapps.transport import TransportConfig

    overrides = dict(overrides or {})
    names = {f.name for f in dataclasses.fields(TransportConfig)} - {"line_rate_bps", "mtu"}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise TypeError(f"unknown TransportConfig field '{unknown[0]}'")
    return TransportConfig(line_rate_bps=line_rate_bps, mtu=mtu, **overrides)


def load_spec(path: str | Path) -> WorkerSpec:
    """Read and validate a JSON spec file; :class:`SpecError` names the file and field."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec: {exc.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    return parse_spec(obj, str(path))


# --- inputs and verification ---------------------------------------------------------


def make_input(spec: WorkerSpec, rank: int, iteration: int) -> np.ndarray:
    """Rank ``rank``'s float32 input of ``iteration``, shape ``(size_bytes // 4,)``."""
    rng = np.random.default_rng([spec.seed, spec.job_id, rank, iteration])
    return rng.standard_normal(spec.n_elements).astype(np.float32)


def verify(spec: WorkerSpec, iteration: int, result: np.ndarray, own_input: np.ndarray | None = None) -> str | None:
    """Check this rank's result of ``iteration``; return None when right, else one line why."""
    n = spec.nranks
    inputs = [
        own_input if (r == spec.rank and own_input is not None) else make_input(spec, r, iteration)
        for r in range(n)
    ]
    return check_result(spec, iteration, result, expected_result(spec, inputs))


def expected_result(spec: WorkerSpec, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """What rank ``spec.rank`` must hold given every rank's input (list in rank order).

    Returns ``(expected, tol)``: all-gather, the gathered float32 buffer and None (bit-exact);
    all-reduce / reduce-scatter, the float64 sum over ``[a, b)`` (the whole buffer or chunk
    ``rank``) and the per-element bound ``N * eps32 * sum_i |x_i|`` (module docstring).
    """
    n = spec.nranks
    bounds = chunk_bounds(spec.n_elements, n)
    if spec.collective == "allgather":
        return np.concatenate([inputs[i][a:b] for i, (a, b) in enumerate(bounds)]), None
    a, b = (0, spec.n_elements) if spec.collective == "allreduce" else bounds[spec.rank]
    ref = np.zeros(b - a, dtype=np.float64)
    mag = np.zeros(b - a, dtype=np.float64)
    for x in inputs:
        part = x[a:b].astype(np.float64)
        ref += part
        mag += np.abs(part)
    return ref, n * EPS32 * mag


def check_result(spec: WorkerSpec, iteration: int, result: np.ndarray,
                 expected: tuple[np.ndarray, np.ndarray | None]) -> str | None:
    """None when ``result`` matches :func:`expected_result`'s ``(expected, tol)``, else one line why."""
    ref, tol = expected
    if tol is None:
        if result.shape == ref.shape and result.tobytes() == ref.tobytes():
            return None
        bad = _first_mismatch(result, ref.astype(np.float64), np.zeros(ref.shape))
        return f"iteration {iteration}: all-gather result differs from the inputs {bad}"
    if result.shape == ref.shape and np.all(np.abs(result.astype(np.float64) - ref) <= tol):
        return None
    return f"iteration {iteration}: {spec.collective} result differs from the float64 sum {_first_mismatch(result, ref, tol)}"


def _first_mismatch(result: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> str:
    if result.shape != ref.shape:
        return f"(shape {result.shape}, expected {ref.shape})"
    bad = np.nonzero(np.abs(result.astype(np.float64) - ref) > tol)[0]
    i = int(bad[0])
    return f"at element {i} ({float(result[i])!r} vs {float(ref[i])!r}, {len(bad)} elements off)"


def digest(result: np.ndarray) -> str:
    """SHA-256 hex digest of the result's float32 little-endian bytes."""
    return hashlib.sha256(np.ascontiguousarray(result, dtype="<f4").tobytes()).hexdigest()


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


def schedstat() -> tuple[float, float, float] | None:
    """(time on a CPU, time runnable but waiting for one, wall clock) of this process (s).

    From /proc/self/schedstat (Linux, ``sched_info``: ns on CPU, ns waiting on a runqueue);
    the waiting time is CPU the process wanted while other processes had it. None when the
    kernel does not provide it.
    """
    try:
        run_ns, wait_ns, _ = Path("/proc/self/schedstat").read_text().split()[:3]
    except (OSError, ValueError):
        return None
    return int(run_ns) / 1e9, int(wait_ns) / 1e9, time.monotonic()


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
