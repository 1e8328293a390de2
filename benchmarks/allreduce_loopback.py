"""Ring all-reduce of N worker processes over UDP on 127.0.0.1: bus bandwidth vs line rate.

Usage::

    .venv/bin/python benchmarks/allreduce_loopback.py [--ranks 4] [--size 1048576] \\
        [--rate 10] [--iterations 5] [--out DIR] [--rate-control none|dcqcn] [--slices 1]

Starts ``--ranks`` ``python -m hostapps.worker`` processes on 127.0.0.1 with distinct free
ports, all paced at ``--rate`` Mbit/s (the host line rate of the spec), waits for them,
checks that every rank wrote its JSON lines file and verified every iteration, and prints
per-iteration figures and, on the LAST line, the bus bandwidth over the line rate.

Definitions (nccl-tests, doc/PERFORMANCE.md):

- ``CCT`` of iteration k = last rank's iteration end - first rank's iteration start
  (docs/DESIGN.md section 7);
- ``algbw = size / CCT``; ``busbw = algbw * 2(N-1)/N`` for all-reduce;
- the figure printed last is ``busbw / line rate`` using the **median** CCT over the
  iterations (robust to a slow first iteration).

Pacing follows the line rate at any timer resolution (the transport's token bucket covers
the event loop's 1 ms wake-ups), so the figure holds from 10 Mbit/s up to what the CPU
serves: with 4 ranks on 2 cores, about 100 Mbit/s; at 1 Gbit/s the ratio reports the CPU
limit. The line before the last gives the timer lag: when many wake-ups are late, other
processes took the CPU and the figure is disturbed (pin with ``taskset`` and run on a quiet
machine).

The line rate counts wire bytes (Ethernet + IPv4 + UDP + CTH headers, 58 bytes per
1456-byte payload at MTU 1500), so the ceiling of the ratio is about 1456/1514 = 0.96.
Loopback never ECN-marks, so ``dcqcn`` behaves like ``none`` here.
Exit status 0 when everything verified, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emu.hostcal import free_ports

REPO = Path(__file__).resolve().parents[1]
#: Seconds between launching the workers and iteration 0 (imports take ~0.5 s each).
START_DELAY_S = 2.5


def write_specs(args: argparse.Namespace, out: Path) -> list[Path]:
    """Write one spec per rank into ``out``; return their paths."""
    ports = free_ports(args.ranks)
    ranks = [{"rank": r, "ip": "127.0.0.1", "port": p} for r, p in enumerate(ports)]
    start_at = time.time() + START_DELAY_S
    paths = []
    for r in range(args.ranks):
        spec = {
            "job_id": 0, "rank": r, "ranks": ranks, "collective": "allreduce",
            "size_bytes": args.size, "iterations": args.iterations, "compute_s": 0.0,
            "start_at": start_at, "line_rate_bps": args.rate * 1e6,
            "rate_control": {"name": args.rate_control, "params": {}}, "mtu": 1500,
            "step_timeout_s": args.step_timeout, "slices": args.slices, "seed": 1,
            "results_dir": str(out),
        }
        path = out / f"spec-rank{r}.json"
        path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
        paths.append(path)
    return paths


def read_iterations(out: Path, nranks: int) -> dict[int, list[dict]]:
    """Iteration records by iteration number; raises SystemExit naming a missing file."""
    by_iter: dict[int, list[dict]] = {}
    for r in range(nranks):
        path = out / f"job0-rank{r}.jsonl"
        if not path.exists():
            raise SystemExit(f"missing results file {path}")
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["kind"] == "iteration":
                by_iter.setdefault(rec["iteration"], []).append(rec)
    return by_iter


def read_lag(out: Path, nranks: int) -> dict[str, float]:
    """Wake-up lateness over all ranks (the transport records' ``timer_*`` fields)."""
    lag = {"wakeups": 0, "late_wakeups": 0, "lag_max_s": 0.0}
    for r in range(nranks):
        for line in (out / f"job0-rank{r}.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["kind"] == "transport":
                lag["wakeups"] += rec.get("timer_wakeups", 0)
                lag["late_wakeups"] += rec.get("timer_late_wakeups", 0)
                lag["lag_max_s"] = max(lag["lag_max_s"], rec.get("timer_lag_max_s", 0.0))
    return lag


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=4, help="ring size N (default 4)")
    parser.add_argument("--size", type=int, default=1_048_576, help="buffer bytes per rank (default 1 MiB)")
    parser.add_argument("--rate", type=float, default=10.0, help="line rate, Mbit/s (default 10, the emulated links' rate)")
    parser.add_argument("--iterations", type=int, default=5, help="all-reduces to run (default 5)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder, kept (default: a temp dir, removed at the end)")
    parser.add_argument("--rate-control", choices=("none", "dcqcn"), default="none")
    parser.add_argument("--slices", type=int, default=1, help="slices per chunk (default 1)")
    parser.add_argument("--step-timeout", type=float, default=10.0, help="worker step timeout, s")
    parser.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="asyncio",
                        help="worker event loop (default asyncio, the worker's default; auto: uvloop when installed)")
    args = parser.parse_args(argv)
    if args.ranks < 2:
        parser.error("--ranks must be >= 2")
    if args.size <= 0 or args.size % 4:
        parser.error("--size must be a positive multiple of 4 (float32 elements)")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        return run(args, args.out)
    with tempfile.TemporaryDirectory(prefix="allreduce-loopback-") as tmp:
        return run(args, Path(tmp))


def run(args: argparse.Namespace, out: Path) -> int:
    """Run the workers with results in ``out``; print the figures; 0 when everything verified."""
    specs = write_specs(args, out)
    bound_s = 2 * (args.ranks - 1) / args.ranks * args.size * 8 / (args.rate * 1e6)
    deadline = START_DELAY_S + 30.0 + 5 * args.iterations * bound_s + args.step_timeout
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    procs: list[subprocess.Popen] = []
    failed = []
    try:
        for p in specs:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "hostapps.worker", "--spec", str(p), "--loop", args.loop],
                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            ))
        t_end = time.monotonic() + deadline
        for r, proc in enumerate(procs):
            try:
                _, err = proc.communicate(timeout=max(0.1, t_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                failed.append(f"rank {r}: no exit within {deadline:.0f} s")
                continue
            if proc.returncode != 0:
                last = err.strip().splitlines()[-1] if err.strip() else ""
                failed.append(f"rank {r}: exit {proc.returncode}: {last}")
    finally:  # Ctrl-C: no worker outlives the benchmark (nor writes into a removed temp dir)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if failed:
        for line in failed:
            print(line, file=sys.stderr)
        if args.out is None:
            print("rerun with --out DIR to keep the workers' files", file=sys.stderr)
        return 1
    by_iter = read_iterations(out, args.ranks)
    ccts = []
    if args.out is not None:
        print(f"results in {out}")
    print(f"{args.ranks} ranks, {args.size} bytes, line rate {args.rate:g} Mbit/s, "
          f"bound 2(N-1)/N*S/B = {bound_s * 1e3:.1f} ms, rate control {args.rate_control}")
    print("iter   CCT ms   algbw Mbit/s   busbw Mbit/s   busbw/line")
    for k in range(args.iterations):
        recs = by_iter.get(k, [])
        if len(recs) != args.ranks or not all(r["verified"] for r in recs):
            print(f"iteration {k}: {len(recs)} records, not all verified", file=sys.stderr)
            return 1
        if len({r["digest"] for r in recs}) != 1:
            print(f"iteration {k}: ranks disagree on the result digest", file=sys.stderr)
            return 1
        cct = max(r["end"] for r in recs) - min(r["start"] for r in recs)
        ccts.append(cct)
        algbw = args.size * 8 / cct / 1e6
        busbw = algbw * 2 * (args.ranks - 1) / args.ranks
        print(f"{k:4d} {cct * 1e3:8.1f} {algbw:14.2f} {busbw:14.2f} {busbw / args.rate:12.3f}")
    cct = statistics.median(ccts)
    busbw = args.size * 8 / cct / 1e6 * 2 * (args.ranks - 1) / args.ranks
    print(f"median CCT {cct * 1e3:.1f} ms (CCT/bound {cct / bound_s:.3f}), busbw {busbw:.2f} Mbit/s")
    lag = read_lag(out, args.ranks)
    if lag["wakeups"]:
        late = lag["late_wakeups"] / lag["wakeups"]
        note = " (CPU contention: other processes or more ranks than cores; the figure is disturbed)" \
            if late > 0.05 else ""
        print(f"timer lag: max {lag['lag_max_s'] * 1e3:.1f} ms, {late:.0%} of {lag['wakeups']} wake-ups "
              f"later than 2 ms{note}")
    print(f"busbw/line_rate = {busbw / args.rate:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
