"""``symphony-emu calibrate-host``: measure the real rank worker's processing time on this machine.

Runs a ring all-reduce of ``ranks`` real worker processes (:mod:`hostapps.worker`: the
:class:`hostapps.rank.RankWorker` core on its asyncio UDP driver) over loopback
(127.0.0.1, free ports, paced at ``rate_mbps``), once per MTU of ``mtus`` (so data
datagrams of different sizes), each bounded by ``timeout_s``. Each worker runs the real
driver with one addition, :class:`TimedDriver`: every event loop callback (socket readable,
timer) is timed with the thread's CPU clock (``time.thread_time_ns``) and counted: datagrams
read and their bytes, datagrams sent and their bytes. Then one non-negative least-squares
fit (scipy.optimize.nnls) over every callback of every rank gives the
:class:`emu.vtime.hostcost.HostCost` coefficients::

    cpu(callback) = wake_s + rx_packet_s * n_rx + rx_byte_s * rx_bytes + tx_packet_s * n_tx + tx_byte_s * tx_bytes

``wake_s`` also gets the event loop's own time outside the callbacks (epoll, dispatch): the
process's CPU time from its first callback to the one that ended it (/proc/self/schedstat)
minus the callbacks', per callback. That last callback (the drain's end, where the worker
verifies the results it kept) is not packet work and is left out. ``run_wait_s`` is the time a worker waited for a CPU per time it was scheduled
(schedstat's wait / timeslices) during the calibration: the machine's load at that moment
(0 on a quiet machine); ``--cpu-only`` writes 0. ``timer_resolution_s`` is the event loop's
(:func:`loop_timer_resolution`: 1 ms with epoll).

The file (JSON) has ``model`` (what :func:`emu.vtime.hostcost.load` reads) and ``measured``:
the runs, callbacks, datagrams, fit quality (R^2, residual), CPU totals, per-rank wait, the
machine (CPUs, load average) and the date. Errors (a worker that fails or overruns) are one
line; every worker is stopped before it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from emu.vtime.hostcost import FIELDS, SHARE_FIELDS, HostCost

#: Seconds from launching the workers to iteration 0 (each imports numpy and the core).
START_DELAY_S = 3.0
#: Default calibration workload: the shipped 10 Mbit/s scenarios' rate and sizes.
DEFAULTS = {"ranks": 4, "size": 262144, "iterations": 4, "rate_mbps": 10.0, "mtus": (1500, 800), "timeout_s": 120.0}


class CalibrationError(RuntimeError):
    """The calibration could not run; ``str()`` is one line."""


def _timed_driver_class() -> type:
    from hostapps.worker import RankDriver

    class TimedDriver(RankDriver):
        """The worker's driver, timing and counting every event loop callback (see the module docstring)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            #: per callback: CPU ns, datagrams read, bytes read, datagrams sent, bytes sent
            self.samples: list[tuple[int, int, int, int, int]] = []
            self._acc = [0, 0, 0, 0]
            self._depth = 0
            #: schedstat at the first callback and at the one that ended the rank
            self.sched: list[tuple[int, int, int]] = []
            feed, acc = self.core.on_datagram, self._acc

            def counted(src: int, datagram: Any, ecn: int, now: float) -> None:
                acc[0] += 1
                acc[1] += len(datagram)
                feed(src, datagram, ecn, now)

            self.core.on_datagram = counted  # RankWorker binds its transport's on_datagram per instance

        def _sendto(self, datagram: bytes, ecn: int, addr: tuple[str, int], path: Any) -> bool:
            ok = super()._sendto(datagram, ecn, addr, path)
            if ok:
                self._acc[2] += 1
                self._acc[3] += len(datagram)
            return ok

        def _timed(self, fn: Any) -> None:
            if self._depth:  # _on_timer reads the socket through _on_readable: one callback
                fn()
                return
            if len(self.sched) >= 2:  # ended: answering resends only
                fn()
                return
            if not self.sched:
                self.sched.append(_sched())
            self._depth = 1
            acc = self._acc
            acc[0] = acc[1] = acc[2] = acc[3] = 0
            t0 = time.thread_time_ns()
            try:
                fn()
            finally:
                cpu = time.thread_time_ns() - t0
                self._depth = 0
                if self.worker.done:  # this callback verified the kept results: not packet work
                    self.sched.append(_sched())
                else:
                    self.samples.append((cpu, acc[0], acc[1], acc[2], acc[3]))

        def _on_readable(self) -> None:
            self._timed(super()._on_readable)

        def _on_timer(self) -> None:
            self._timed(super()._on_timer)

    return TimedDriver


def _sched() -> tuple[int, int, int]:
    """This process's (ns on a CPU, ns waiting for one, timeslices) from /proc/self/schedstat (zeros without it)."""
    try:
        a, b, c = Path("/proc/self/schedstat").read_text().split()[:3]
        return int(a), int(b), int(c)
    except (OSError, ValueError):
        return 0, 0, 0


def worker_main(spec_path: str, samples_path: str) -> int:
    """One timed worker: run the spec like ``python -m hostapps.worker``, write the samples (JSON)."""
    from hostapps.spec import load_spec
    from hostapps.worker import run_worker

    spec = load_spec(spec_path)
    driver_class = _timed_driver_class()

    async def main() -> Any:
        return await run_worker(spec, driver_class=driver_class)

    try:
        driver = asyncio.run(main())
    except Exception as exc:  # noqa: BLE001 - one line to the parent
        print(f"calibration worker rank {spec.rank}: {exc}", file=sys.stderr)
        return 1
    if len(driver.sched) < 2:
        print(f"calibration worker rank {spec.rank}: ended before its first callback", file=sys.stderr)
        return 1
    (a0, b0, c0), (a1, b1, c1) = driver.sched[0], driver.sched[1]
    Path(samples_path).write_text(json.dumps({
        "samples": driver.samples, "cpu_ns": a1 - a0, "wait_ns": b1 - b0, "slices": c1 - c0,
    }))
    return 0


def free_ports(n: int) -> list[int]:
    """``n`` distinct UDP ports that are free on 127.0.0.1 right now (all bound at once, then
    released: a worker started next binds one; another process may take it meanwhile)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _run_once(work: Path, ranks: int, size: int, iterations: int, rate_mbps: float, mtu: int,
              timeout_s: float, start_delay_s: float) -> list[dict[str, Any]]:
    """One loopback all-reduce of timed workers; their samples (one dict per rank)."""
    ports = free_ports(ranks)
    addrs = [{"rank": r, "ip": "127.0.0.1", "port": p} for r, p in enumerate(ports)]
    start_at = time.time() + start_delay_s
    procs = []
    try:
        for r in range(ranks):
            spec = {"job_id": 0, "rank": r, "ranks": addrs, "collective": "allreduce", "size_bytes": size,
                    "iterations": iterations, "compute_s": 0.0, "start_at": start_at,
                    "line_rate_bps": rate_mbps * 1e6, "rate_control": {"name": "dcqcn", "params": {}},
                    "mtu": mtu, "step_timeout_s": 5.0, "slices": 1, "seed": 1, "results_dir": str(work)}
            path = work / f"spec-mtu{mtu}-rank{r}.json"
            path.write_text(json.dumps(spec))
            procs.append(subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "emu.hostcal", "--worker", str(path), str(work / f"samples-mtu{mtu}-rank{r}.json")],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + start_delay_s + timeout_s
        for r, p in enumerate(procs):
            try:
                _, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise CalibrationError(f"calibration: rank {r} still running after {timeout_s:g} s "
                                       f"(MTU {mtu}); a machine this busy cannot calibrate") from None
            if p.returncode != 0:
                last = (err or "").strip().splitlines()
                raise CalibrationError(f"calibration: rank {r} failed (MTU {mtu}): "
                                       f"{last[-1] if last else f'exit status {p.returncode}'}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    return [json.loads((work / f"samples-mtu{mtu}-rank{r}.json").read_text()) for r in range(ranks)]


def fit(per_rank: list[dict[str, Any]]) -> tuple[HostCost, dict[str, Any]]:
    """The model from the timed workers' samples (scipy.optimize.nnls); the fit's figures.

    ``per_rank``: dicts with ``samples`` ([cpu_ns, n_rx, rx_bytes, n_tx, tx_bytes] per
    callback), ``cpu_ns``, ``wait_ns`` and ``slices`` (the process's schedstat over its run).
    """
    from scipy.optimize import nnls

    rows = np.array([s for d in per_rank for s in d["samples"]], dtype=float)
    if len(rows) < 20:  # 5 coefficients; a busy machine batches many datagrams per callback
        raise CalibrationError(f"calibration: only {len(rows)} callbacks timed; too few to fit")
    y = rows[:, 0]
    x = np.column_stack([np.ones(len(rows)), rows[:, 1:]])
    # scale the columns so that nnls sees numbers of one size (bytes are ~1000x packets)
    scale = np.maximum(x.max(axis=0), 1.0)
    coef, _ = nnls(x / scale, y)
    coef = coef / scale
    pred = x @ coef
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum()) or 1.0
    in_callbacks = float(y.sum())
    total = float(sum(d["cpu_ns"] for d in per_rank))
    outside = max(0.0, total - in_callbacks) / len(rows)  # the event loop's own time per callback
    slices = sum(d["slices"] for d in per_rank)
    wait = float(sum(d["wait_ns"] for d in per_rank))
    cost = HostCost(wake_s=(coef[0] + outside) * 1e-9, rx_packet_s=coef[1] * 1e-9, rx_byte_s=coef[2] * 1e-9,
                    tx_packet_s=coef[3] * 1e-9, tx_byte_s=coef[4] * 1e-9,
                    run_wait_s=wait / slices * 1e-9 if slices else 0.0)
    figures = {
        "callbacks": len(rows), "datagrams_read": int(rows[:, 1].sum()), "bytes_read": int(rows[:, 2].sum()),
        "datagrams_sent": int(rows[:, 3].sum()), "bytes_sent": int(rows[:, 4].sum()),
        "r2": round(1 - ss_res / ss_tot, 4), "residual_rms_us": round((ss_res / len(rows)) ** 0.5 / 1e3, 2),
        "cpu_in_callbacks_s": round(in_callbacks * 1e-9, 6), "cpu_total_s": round(total * 1e-9, 6),
        "loop_outside_callbacks_us": round(outside / 1e3, 2),
        "cpu_wait_s": round(wait * 1e-9, 6), "timeslices": slices,
        "cpu_wait_share": round(wait / (wait + total), 4) if wait + total else 0.0,
    }
    return cost, figures


#: A wake-up this much behind its timer counts as late, in the workers' records
#: (``timer_late_wakeups``: hostapps.transport.LATE_WAKEUP_S) and the switches' ``io_lag``
#: (emu.embedded.portio.LATE_WAKEUP_US), s.
LATE_S = 2e-3
#: Where a real switch's departure timer fires around its deadline before any wait for a CPU
#: (s): uvloop rounds a delay to the nearest ms and emu.embedded.portio takes a timer up to
#: 1 ms early as due, so from half a ms early to half a ms late.
SWITCH_TIMER_SPREAD_S = (-0.5e-3, 0.5e-3)


def _survival(x: float, mean: float, sigma: float) -> float:
    """P(W > x) of a wait W of mean ``mean``: exponential when ``sigma`` is 0, else lognormal with
    log-space standard deviation ``sigma`` (:func:`emu.vtime.hostcost.draw_wait`)."""
    if x <= 0:
        return 1.0
    if sigma <= 0:
        return math.exp(-x / mean)
    mu = math.log(mean) - sigma * sigma / 2
    return 0.5 * math.erfc((math.log(x) - mu) / (sigma * math.sqrt(2)))


def late_share(share: float, mean_s: float, spread_s: tuple[float, float], late_s: float = LATE_S,
               sigma: float = 0.0) -> float:
    """The share of wake-ups later than ``late_s`` behind their timers in the model.

    A wake-up's lateness is ``R + W``: ``R`` uniform on ``spread_s`` (where the event loop's
    timer fires before any wait, s) and ``W`` the wait for a CPU of :class:`HostCost` (with
    probability ``share`` a wait of mean ``mean_s / share``, exponential for ``sigma`` 0, else
    lognormal of shape ``sigma``; else 0)::

        P(R + W > late_s) = share * mean over R of P(W > late_s - R | it waits)

    (the mean over ``R`` by the midpoint rule, 64 points).
    """
    lo, hi = spread_s
    mean = mean_s / share
    n = 64
    return share * sum(_survival(late_s - (lo + (i + 0.5) * (hi - lo) / n), mean, sigma) for i in range(n)) / n


def wait_share(mean_s: float, late_fraction: float, spread_s: tuple[float, float], late_s: float = LATE_S,
               sigma: float = 0.0) -> float:
    """The share of wake-ups that wait for a CPU (:class:`HostCost` ``run_wait_share``) that gives
    the model a run's measured share of late wake-ups with the measured mean wait ``mean_s``
    (and the wait's shape ``sigma``).

    1 (every wake-up waits) when that already gives ``late_fraction`` or more, or when ``mean_s``
    is 0; else the largest share (the root nearest 1) of :func:`late_share` = ``late_fraction``
    (scipy.optimize.brentq), or the share with the longest tail when no share gives that many.
    """
    from scipy.optimize import brentq, minimize_scalar

    def f(p: float) -> float:
        return late_share(p, mean_s, spread_s, late_s, sigma)

    if mean_s <= 0 or late_fraction <= f(1.0):
        return 1.0
    peak = minimize_scalar(lambda p: -f(p), bounds=(1e-4, 1.0), method="bounded", options={"xatol": 1e-6})
    p_max = float(peak.x)
    if f(p_max) <= late_fraction:
        return p_max
    return float(brentq(lambda p: f(p) - late_fraction, p_max, 1.0, xtol=1e-6))


#: The lognormal shapes :func:`wait_shape` considers (log-space standard deviation).
SIGMA_RANGE = (0.05, 3.0)


def wait_shape(mean_s: float, late_fraction: float, lag_max_s: float | None, wakeups: int,
               spread_s: tuple[float, float], late_s: float = LATE_S) -> tuple[float, float]:
    """The share and shape ``(share, sigma)`` of the waits for a CPU that give the model a run's
    mean wait ``mean_s``, its share of wake-ups over ``late_s`` late and its latest wake-up.

    Exponential waits (sigma 0) with the share of :func:`wait_share` are kept when the latest
    of ``wakeups`` wake-ups (``lag_max_s``, s) is within the 95% range of the largest of that
    many of their draws (P(max > lag) = 1 - exp(-wakeups * survival) >= 5%): then
    ``(share, 0)``. Otherwise the lognormal shape in :data:`SIGMA_RANGE` whose share
    (:func:`wait_share` for that shape) puts the survival at ``lag_max_s`` to ln 2 / ``wakeups``
    (the latest wake-up is the median largest draw; scipy.optimize.brentq); the longest shape
    when none is long enough. No ``lag_max_s`` or wake-ups: ``(wait_share(...), 0)``.
    """
    from scipy.optimize import brentq

    share = wait_share(mean_s, late_fraction, spread_s, late_s)
    if mean_s <= 0 or not lag_max_s or wakeups <= 0:
        return share, 0.0
    x = lag_max_s - (spread_s[0] + spread_s[1]) / 2  # the wait of the latest wake-up
    if wakeups * share * _survival(x, mean_s / share, 0.0) >= -math.log(0.95):
        return share, 0.0
    target = math.log(2) / wakeups

    def tail(sigma: float) -> float:
        p = wait_share(mean_s, late_fraction, spread_s, late_s, sigma)
        return p * _survival(x, mean_s / p, sigma) - target

    lo, hi = SIGMA_RANGE
    if tail(hi) <= 0:
        sigma = hi
    elif tail(lo) >= 0:
        sigma = lo
    else:
        sigma = float(brentq(tail, lo, hi, xtol=1e-4))
    return wait_share(mean_s, late_fraction, spread_s, late_s, sigma), sigma


#: Bytes of IPv4 and UDP headers in an IP MTU: a data datagram's CTH payload is MTU - 28.
IP_UDP_HEADERS = 28


def _spec_mtu(path: Path) -> int:
    """The IP MTU of a worker's spec file (1500 when it is missing or gives none)."""
    try:
        return int(json.loads(path.read_text(encoding="utf-8")).get("mtu") or 1500)
    except (OSError, ValueError, AttributeError):
        return 1500


def live_cost(base: HostCost, results: Path, scheme: str = "baseline", cpus: int | None = None) -> HostCost:
    """``base``'s CPU terms with the waits of a real-time run and its switches' CPU per frame.

    ``results``: a Mininet run's folder. The workers' mean wait for a CPU per wake-up is the sum
    of their ``cpu_wait_s`` over the sum of their ``cpu_slices`` (the ``transport`` records of
    ``<scheme>/job*-rank*.jsonl``); the switches' CPU per frame and wait per wake-up come from
    the embedded switches' ``stats.cpu`` in ``<scheme>/counters.json`` (``cpu_ns`` over the frames
    received, ``wait_ns`` over ``slices``; /proc/self/schedstat of each switch process). The
    shares of wake-ups that wait (``run_wait_share``, ``switch_run_wait_share``) are fitted by
    :func:`wait_share` to the run's late timer wake-ups: the workers' ``timer_late_wakeups`` over
    ``timer_wakeups`` (their timers fire up to ``base.timer_resolution_s`` after the time asked),
    the switches' ``io_lag`` (:data:`SWITCH_TIMER_SPREAD_S`); 1 where the run recorded none.
    ``cpus``: the CPUs the run's processes shared (:attr:`HostCost.cpus`, :class:`emu.vtime.hostcost.CpuPool`;
    :func:`machine_cpus` for a run on this machine); None: ``base.cpus`` (0: each process its own).
    Raises :class:`CalibrationError` (one line naming the folder) when the run recorded neither.
    """
    wait, slices = 0.0, 0
    wakeups = late = 0
    lag_max = 0.0
    cpu, predicted = 0.0, 0.0
    for path in sorted((results / scheme).glob("job*-rank*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("kind") == "transport" and rec.get("cpu_slices"):
                wait += rec["cpu_wait_s"]
                slices += rec["cpu_slices"]
                wakeups += rec.get("timer_wakeups") or 0
                late += rec.get("timer_late_wakeups") or 0
                lag_max = max(lag_max, rec.get("timer_lag_max_s") or 0.0)
                if rec.get("cpu_s"):
                    cpu += rec["cpu_s"]
                    payload = _spec_mtu(results / scheme / "specs" / f"{path.stem}.json") - IP_UDP_HEADERS
                    predicted += rec["cpu_slices"] * base.wake_s + (rec.get("packets_sent") or 0) * base.per_packet_s(
                        payload)
    if not slices:
        raise CalibrationError(f"{results / scheme}: no cpu_slices in the workers' records (not a real-time run?)")
    mean = wait / slices
    share, sigma = (wait_shape(mean, late / wakeups, lag_max, wakeups, (0.0, base.timer_resolution_s))
                    if wakeups else (1.0, 0.0))
    cost = base.with_wait(mean, share, sigma)
    if cpu > 0 and predicted > 0:
        cost = cost.scaled_cpu(cpu / predicted)
    counters = results / scheme / "counters.json"
    sw_cpu = sw_wait = 0
    sw_slices = frames = sw_wakeups = sw_late = 0
    sw_lag_max = 0.0
    if counters.exists():
        for entry in json.loads(counters.read_text(encoding="utf-8")).values():
            stats = entry.get("stats") or {}
            cpu = stats.get("cpu")
            if isinstance(cpu, dict) and cpu.get("slices"):
                sw_cpu += cpu["cpu_ns"]
                sw_wait += cpu["wait_ns"]
                sw_slices += cpu["slices"]
                frames += sum(int(v) for v in (stats.get("rx") or {}).values())
                io_lag = stats.get("io_lag") or {}
                sw_wakeups += int(io_lag.get("wakeups") or 0)
                sw_late += int(io_lag.get("late_wakeups") or 0)
                sw_lag_max = max(sw_lag_max, float(stats.get("io_lag_max_us") or 0) * 1e-6)
    if sw_slices and frames:
        sw_mean = sw_wait / sw_slices * 1e-9
        sw_share, sw_sigma = (wait_shape(sw_mean, sw_late / sw_wakeups, sw_lag_max, sw_wakeups,
                                         SWITCH_TIMER_SPREAD_S) if sw_wakeups else (1.0, 0.0))
        cost = cost.with_switch(sw_cpu / frames * 1e-9, sw_mean, sw_share, sw_sigma)
    return cost if cpus is None else cost.with_cpus(cpus)


def machine_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def loop_timer_resolution() -> float:
    """How finely the real worker's asyncio loop times its sleeps (s): 1 ms with epoll or poll,
    whose timeouts Python rounds up to whole milliseconds (``selectors.EpollSelector.select``);
    0 for ``select``, whose timeout has microseconds (kqueue: nanoseconds)."""
    import selectors

    cls = selectors.DefaultSelector
    return 1e-3 if cls.__name__ in ("EpollSelector", "PollSelector", "DevpollSelector") else 0.0


def calibrate(out: Path, *, ranks: int = DEFAULTS["ranks"], size: int = DEFAULTS["size"],
              iterations: int = DEFAULTS["iterations"], rate_mbps: float = DEFAULTS["rate_mbps"],
              mtus: tuple[int, ...] = DEFAULTS["mtus"], timeout_s: float = DEFAULTS["timeout_s"],
              cpu_only: bool = False, start_delay_s: float = START_DELAY_S) -> dict[str, Any]:
    """Measure, fit and write the calibration file ``out``; return its contents."""
    if not 2 <= ranks <= 16:
        raise CalibrationError(f"--ranks {ranks}: give 2..16")
    if size <= 0 or size % 4:
        raise CalibrationError(f"--size {size}: give a positive multiple of 4 bytes")
    if not 1 <= iterations <= 50:
        raise CalibrationError(f"--iterations {iterations}: give 1..50")
    if not 0.1 <= rate_mbps <= 1000:
        raise CalibrationError(f"--rate {rate_mbps}: give 0.1..1000 Mbit/s")
    for m in mtus:
        if not 576 <= m <= 9000:
            raise CalibrationError(f"--mtu {m}: give 576..9000 bytes")
    t0 = time.monotonic()
    load0 = os.getloadavg()
    per_rank: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="symphony-hostcal-") as tmp:
        for mtu in mtus:
            per_rank += _run_once(Path(tmp), ranks, size, iterations, rate_mbps, mtu, timeout_s, start_delay_s)
    cost, figures = fit(per_rank)
    cost = dataclasses.replace(cost, timer_resolution_s=loop_timer_resolution())
    if cpu_only:
        cost = cost.with_wait(0.0)
    doc = {
        "model": cost.as_dict(),
        "measured": {
            "workload": {"ranks": ranks, "size_bytes": size, "iterations": iterations, "rate_mbps": rate_mbps,
                         "mtus": list(mtus), "transport": "loopback 127.0.0.1, one process per rank"},
            **figures,
            "cpu_only": cpu_only,
            "wall_s": round(time.monotonic() - t0, 1),
            "machine": {"cpus": os.cpu_count(), "load_avg_before": [round(v, 2) for v in load0],
                        "load_avg_after": [round(v, 2) for v in os.getloadavg()],
                        "python": platform.python_version(), "kernel": platform.release()},
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "fields": {k: "share of wake-ups" if k in SHARE_FIELDS else "s per UDP payload byte" if k.endswith("byte_s")
                   else "s" for k in FIELDS},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return doc


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emu.hostcal", description="internal: one timed calibration worker")
    parser.add_argument("--worker", nargs=2, metavar=("SPEC", "SAMPLES"), required=True)
    args = parser.parse_args(argv)
    return worker_main(*args.worker)


if __name__ == "__main__":
    sys.exit(_main())
