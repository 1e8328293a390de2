"""Speed of the virtual-time mode: simulated packet-hops per wall-clock second on one core.

Usage::

    taskset -c 1 .venv/bin/python benchmarks/sim_speed.py [TOPOLOGY] [--size 4MiB]
        [--iterations 1] [--scheme baseline] [--payload digest] [--profile] [--repo DIR]
    .venv/bin/python benchmarks/sim_speed.py [TOPOLOGY] --against DIR [--rounds 3]

Runs TOPOLOGY (default ``topologies/dc-leafspine-16.yaml``) in virtual time through the
runner, exactly as ``symphony-emu run --mode sim`` does, pinned to one CPU (the script pins
itself to the first CPU it may use when it is not pinned already), and prints:

- packet-hops: packets that crossed one link (a switch egress port or a host's access link),
  DATA, ACK, CNP and background alike, and hops per wall-clock second of the workload;
- the split of the workload's wall time into the P4 pipeline (``Pipeline.ingress`` and
  ``Pipeline.egress`` of every switch), the host cores (frames arriving at hosts, rank and
  background timers: transport, DCQCN, collective, verification, framing) and the rest,
  event handling (the heap, the traffic managers, the switch cores' bookkeeping);
- per-hop costs in microseconds.

The split costs a wrapper and two ``perf_counter`` calls per timed call (~0.3-0.5 us per
call, about four calls per packet-hop), included in the part it measures; ``--json`` (and so
``--against``) and ``--profile`` leave the timers out, so their figures are the simulation's
alone. ``--profile`` prints the cProfile top 30 instead of timing the parts.
Besides wall-clock time the workload's CPU time (``time.process_time``) is measured: on a
shared machine packet-hops per CPU-second is the steadier figure.

``--repo DIR`` runs the code of another checkout (``git worktree add --detach DIR COMMIT``)
with this script's measurement. ``--against DIR`` is the before/after: ``--rounds`` rounds
(default 3), each one run of DIR's code then one of this checkout's, every run a fresh
process pinned to the same CPU, alternating so that a change of the machine's load hits
both; it prints every round, the median and spread (min-max) of each side, and the ratio
of the medians and of each round's pair (after/before, packet-hops per CPU-second and per
wall-clock second). Every run also says which of the project's modules it imported as compiled
extensions (``--against`` prints it once per side), so an unbuilt or stale checkout, which runs
as Python source, is seen rather than mistaken for a slow change. Run it under ``flock /tmp/symphony-bench.lock`` on a shared machine.
Target (issue 11): at least 50,000 packet-hops/s on one core. Figures vary with the load of
the machine; measure on a quiet one.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _code_root(argv: list[str]) -> Path:
    """The checkout whose code runs: ``--repo DIR`` if given, else this script's own."""
    for i, a in enumerate(argv):
        if a == "--repo" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if a.startswith("--repo="):
            return Path(a.split("=", 1)[1]).resolve()
    return REPO


sys.path.insert(0, str(_code_root(sys.argv[1:])))
DEFAULT = REPO / "topologies" / "dc-leafspine-16.yaml"
TARGET_HOPS_PER_S = 50_000


def _timed(fn, acc: list[float]):  # type: ignore[no-untyped-def]
    clock = time.perf_counter

    @functools.wraps(fn)  # its __name__: emu.vtime.hosts._superseded knows a rank's wake-up by it
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[0] += clock() - t0

    return wrapper


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("topology", nargs="?", default=str(DEFAULT))
    ap.add_argument("--size", default="4MiB", help="bytes per rank (default 4MiB; K/M/G or KiB/MiB suffixes)")
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--scheme", choices=["baseline", "symphony"], default="baseline")
    ap.add_argument("--payload", choices=["exact", "digest"], default=None,
                    help="the jobs' payload (run --payload; default the topology's: exact)")
    ap.add_argument("--profile", action="store_true", help="print the cProfile top 30 instead of the split")
    ap.add_argument("--repo", type=Path, help="run the code of this checkout (default: this script's)")
    ap.add_argument("--against", type=Path, metavar="DIR",
                    help="before/after: alternate runs of DIR's code and this checkout's, --rounds times")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --against (default 3)")
    ap.add_argument("--json", action="store_true", help="print one JSON line of the figures (for --against)")
    args = ap.parse_args(argv)
    if args.repo is not None and not (args.repo / "emu" / "vtime").is_dir():
        ap.error(f"--repo {args.repo}: not a symphony-emu checkout (no emu/vtime)")
    if args.against is not None:
        if not (args.against / "emu" / "vtime").is_dir():
            ap.error(f"--against {args.against}: not a symphony-emu checkout (no emu/vtime)")
        if args.rounds < 1:
            ap.error(f"--rounds {args.rounds}: give 1 or more")
        return _against(args)

    from emu.cli import parse_size

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[0]})
    cpu = sorted(os.sched_getaffinity(0))

    from emu import runner
    from emu.vtime import backend as sim_backend
    from emu.vtime import hosts, network

    pipe_t, host_t, cpu_t = [0.0], [0.0], [0.0]
    split = not (args.profile or args.json)  # the split's timers only when it is printed
    made: list[sim_backend.SimBackend] = []
    orig_build = sim_backend.SimBackend.build
    orig_run_workload = sim_backend.SimBackend.run_workload

    def run_workload(self, *a, **kw):  # type: ignore[no-untyped-def]
        c0 = time.process_time()
        try:
            return orig_run_workload(self, *a, **kw)
        finally:
            cpu_t[0] += time.process_time() - c0

    sim_backend.SimBackend.run_workload = run_workload  # type: ignore[method-assign]

    def build(self: sim_backend.SimBackend, progress):  # type: ignore[no-untyped-def]
        orig_build(self, progress)
        made.append(self)
        if split:
            for sw in self.network.switches.values():
                pipe = sw.core.pipeline
                pipe.ingress = _timed(pipe.ingress, pipe_t)
                pipe.egress = _timed(pipe.egress, pipe_t)
                if sw.core._egress_at is not None:  # the core's positional egress call (Pipeline.egress_at)
                    sw.core._egress_at = _timed(sw.core._egress_at, pipe_t)
                if getattr(sw.core, "_cpipe", None) is not None:  # calls Pipeline's own methods: not these
                    sw.core._cpipe = None
            for host in self.hosts.values():
                host.receive = _timed(host.receive, host_t)
                self.network.set_host_receiver(host.name, host.receive)

    sim_backend.SimBackend.build = build  # type: ignore[method-assign]
    if split:
        # The compiled SimRank is an extension type, whose methods cannot be replaced: the ranks the
        # backend builds are of a subclass whose _wake is timed (both builds, so that they measure alike).
        class _TimedSimRank(hosts.SimRank):  # type: ignore[misc, valid-type]
            _wake = _timed(hosts.SimRank._wake, host_t)

        sim_backend.SimRank = _TimedSimRank  # type: ignore[misc]
        hosts.OnOffSource._send = _timed(hosts.OnOffSource._send, host_t)  # type: ignore[method-assign]
    try:
        size = parse_size(args.size)
    except Exception as exc:  # click.BadParameter, with the CLI's own message  # noqa: BLE001
        ap.error(f"--size {args.size}: {getattr(exc, 'message', exc)}")
    if args.iterations < 1:
        ap.error(f"--iterations {args.iterations}: give 1 or more")
    from emu.cli import resolve_topology
    from emu.topology import TopologyError, load_topology

    args.topology = str(resolve_topology(args.topology))
    try:
        load_topology(args.topology)
    except TopologyError as exc:
        ap.error(str(exc))
    with tempfile.TemporaryDirectory() as out:
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
        t0 = time.perf_counter()
        extra = {"payload": args.payload} if args.payload is not None else {}  # (a checkout before it has none)
        result = runner.run(args.topology, schemes=(args.scheme,), iterations=args.iterations, size=size,
                            mode="sim", out=out, **extra)
        total = time.perf_counter() - t0
        if args.profile:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    backend = made[0]
    st = backend.last_stats
    net: network.SimNetwork = backend.network
    switch_hops = sum(sum(sw.core.stats()["tx"].values()) for sw in net.switches.values())
    host_hops = sum(hl.packets for hl in net.host_links.values())
    hops = switch_hops + host_hops
    wall = st["wall_s"]
    if args.json:
        import json

        print(json.dumps({"hops": hops, "wall_s": wall, "cpu_s": cpu_t[0], "events": st["events"],
                          "sim_s": st["sim_s"], "verified": bool(result.ok), "compiled": _compiled_loaded()}))
        return 0 if result.ok else 1
    print(f"topology {Path(args.topology).name}, {args.scheme}, {args.iterations} iteration(s) of {size} bytes per rank,"
          f" CPU {cpu}; verified: {result.ok}")
    loaded = _compiled_loaded()
    print(f"compiled extension modules loaded: {len(loaded)}" + (f" ({', '.join(loaded)})" if loaded else
                                                                 " (every module ran as Python source)"))
    print(f"simulated {st['sim_s'] * 1e3:.3f} ms in {wall:.2f} s of workload wall time ({total:.2f} s with build,"
          f" compile, metrics and report)")
    print(f"packet-hops {hops} ({switch_hops} switch egress, {host_hops} host uplink), pipeline passes"
          f" {st['pipeline_packets']}, events {st['events']}")
    print(f"packet-hops per wall-clock second: {hops / wall:,.0f} (target >= {TARGET_HOPS_PER_S:,}),"
          f" per CPU-second: {hops / cpu_t[0]:,.0f} ({cpu_t[0]:.2f} CPU-s)")
    if split:
        rest = wall - pipe_t[0] - host_t[0]
        for name, t in (("P4 pipeline", pipe_t[0]), ("host cores", host_t[0]), ("event handling", rest)):
            print(f"  {name:<15} {t:7.2f} s  {100 * t / wall:5.1f}%  {1e6 * t / hops:6.2f} us per packet-hop")
    return 0 if result.ok else 1


def _compiled_loaded() -> list[str]:
    """Sorted names of the project's modules this process imported as compiled extensions
    (``emu.*`` and ``hostapps.*`` whose file is not a ``.py``): what actually ran, for any
    checkout, including one from before the compiled build existed."""
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None) or ""
        if name.split(".")[0] in ("emu", "hostapps") and f and not f.endswith((".py", ".pyc")):
            out.append(name)
    return sorted(out)


def _against(args: argparse.Namespace) -> int:
    """Alternating before/after rounds in fresh processes; prints medians, spreads, ratios."""
    import json
    import statistics
    import subprocess

    cpus = sorted(os.sched_getaffinity(0))
    cpu = cpus[-1] if len(cpus) > 1 else cpus[0]
    common = [args.topology, "--size", args.size, "--iterations", str(args.iterations), "--scheme", args.scheme,
              "--json", *(["--payload", args.payload] if args.payload is not None else [])]
    sides = {"before": args.against.resolve(), "after": REPO}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    print(f"before: {sides['before']}  after: {sides['after']}  CPU {cpu}, {args.rounds} round(s)")
    for k in range(args.rounds):
        for side, root in sides.items():
            cmd = ["taskset", "-c", str(cpu), sys.executable, str(Path(__file__).resolve()), *common,
                   "--repo", str(root)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                print(f"round {k + 1} {side}: failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
                return 1
            r = json.loads(lines[-1])
            if not runs[side]:
                mods = r.get("compiled", [])
                print(f"{side}: {len(mods)} compiled extension module(s) loaded"
                      + (f" ({', '.join(mods)})" if mods else ", every module ran as Python source"))
            runs[side].append(r)
            print(f"round {k + 1} {side:<6} {r['hops'] / r['cpu_s']:>9,.0f} packet-hops/CPU-s"
                  f" {r['hops'] / r['wall_s']:>9,.0f} packet-hops/s  ({r['hops']} hops, {r['events']} events,"
                  f" {r['cpu_s']:.2f} CPU-s, {r['wall_s']:.2f} s)")
    if [r["hops"] for r in runs["before"]][:1] != [r["hops"] for r in runs["after"]][:1]:
        print("note: the two sides simulated different numbers of packet-hops")
    for key, label in (("cpu_s", "packet-hops per CPU-second"), ("wall_s", "packet-hops per wall-clock second")):
        med = {}
        for side in sides:
            vals = [r["hops"] / r[key] for r in runs[side]]
            med[side] = statistics.median(vals)
            print(f"{label:<34} {side:<6} median {med[side]:>9,.0f}  spread {min(vals):,.0f}-{max(vals):,.0f}")
        pair = [(a["hops"] / a[key]) / (b["hops"] / b[key]) for a, b in zip(runs["after"], runs["before"], strict=True)]
        print(f"{label:<34} after/before: {med['after'] / med['before']:.2f}x on the medians, per round"
              f" {', '.join(f'{x:.2f}' for x in pair)} (median {statistics.median(pair):.2f},"
              f" {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
