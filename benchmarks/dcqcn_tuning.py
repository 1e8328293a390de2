"""Tune DCQCN for the emulated link rates in virtual time (emu.vtime).

Usage::

    .venv/bin/python benchmarks/dcqcn_tuning.py [--duration 5] [--seeds 3] [--jobs 1]
        [--search] [--rounds 1] [--params JSON] [--symphony]

Each run uses the real :class:`hostapps.transport.Transport` with the real
:class:`hostapps.ratecontrol.Dcqcn` on the virtual-time network of :mod:`emu.vtime`: two
embedded switch cores running ``p4/symphony.p4``, programmed by the controller
(emu.routing) from a dumbbell topology, so the ECN marks come from the P4 program's
queue-depth marking (``MyEgress.queue_ecn``, a step at K) and nowhere else. Topology:
sender ``i`` (rank ``i+1``, host ``s<i+1>``) -> its access link at the host line rate ->
switch ``sw1`` -> the bottleneck link -> ``sw2`` -> the receiver (rank 0, host ``r0``) on
a link at the line rate. Every link has 0.2 ms propagation delay and 100-packet queues;
ACKs/NACKs/CNPs come back the same way, uncongested. Senders are always backlogged (an app
tops the transport up), start at a random offset in [0, 20 ms] drawn from the seed (the
links have no randomness, so the seed only moves the start times), and the first
``--warmup`` seconds are not measured. (Before the virtual-time network existed, this
benchmark ran on hostapps/lossychannel.py's own link and marker models, with one hop less; the
figures in docs/host-runtime.md come from that model.)

Scenarios (each at K = 3 and K = 10 packets; ``--scale`` multiplies every rate):

- ``2x10->10``: 2 senders at 10 Mbit/s line rate share a 10 Mbit/s bottleneck;
- ``4x10->10``: 4 senders at 10 Mbit/s share a 10 Mbit/s bottleneck;
- ``1x10->5``:  1 sender at 10 Mbit/s into a 5 Mbit/s bottleneck;
- ``8x10->10``: 8 senders (robustness: the floor and gains must still hold 8 flows).

Metrics per run, averaged over seeds (ratios, not timings):

- ``util``: bytes the bottleneck served in the measured window / its capacity (wire
  bytes, retransmissions included); ``util min``: the worst seed;
- ``q mean``/``q max``: bottleneck queue (packets queued or in service) sampled every ms;
- ``jain``: Jain's fairness index of the per-flow delivered bytes (1 = equal shares);
- ``cnp/s``: CNPs the receiver sent per second (all flows); ``drops``: tail drops and
  ``retx``: retransmissions in the measured window; ``RTOs``: retransmission timeouts.

``--search`` runs a small coordinate search: starting from the current defaults it
sweeps one parameter at a time over a few values (the other parameters at the best
values found so far), keeps a value when it raises the score, and does ``--rounds``
passes. The score favours the worst and the mean utilisation of the 2- and 4-flow
scenarios and penalises unfairness, drops and queues beyond the marking threshold (see
:func:`score`). The table shows the defaults' row and the best row per scenario.

Symphony itself is measured with the runner on whole scenarios (``symphony-emu run
TOPOLOGY --mode sim``): the tracker exists only in the P4 program. The ``before`` row uses
:data:`PRE_TUNING` (the defaults before this tuning).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from emu.topology import parse_topology  # noqa: E402
from emu.vtime.events import s_to_ns  # noqa: E402
from emu.vtime.frames import WIRE_OVERHEAD_BYTES  # noqa: E402
from emu.vtime.hosts import AppEndpoint, SimHost  # noqa: E402
from emu.vtime.network import SimNetwork  # noqa: E402
from hostapps.collectives import SendRequest  # noqa: E402
from hostapps.ratecontrol import DcqcnParams  # noqa: E402
from hostapps.transport import Delivery, Transport, TransportConfig  # noqa: E402
from hostapps.wire import CTH_LEN, CTH_UDP_PORT  # noqa: E402

JOB = 0
#: Propagation delay of every hop (s).
HOP_DELAY_S = 0.0002
#: Tail-drop limit of the bottleneck (packets).
QUEUE_LIMIT = 100
#: Largest random start offset of a sender (s).
START_JITTER_S = 0.02
#: Queue sampling period (s).
SAMPLE_DT = 0.001
#: A sender keeps at least this many payload bytes queued in its transport.
BACKLOG_BYTES = 64 * 1456
#: Bytes per message the bulk sender hands to the transport (one "step").
MESSAGE_BYTES = 32 * 1456


@dataclass(frozen=True)
class Scenario:
    name: str
    flows: int
    line_bps: float
    bottleneck_bps: float


SCENARIOS = (
    Scenario("2x10->10", 2, 10e6, 10e6),
    Scenario("4x10->10", 4, 10e6, 10e6),
    Scenario("1x10->5", 1, 10e6, 5e6),
    # robustness: the floor and the gains must still hold more flows back
    Scenario("8x10->10", 8, 10e6, 10e6),
)
THRESHOLDS = (3, 10)


class BulkSender:
    """Always-backlogged app: tops the transport up with ``MESSAGE_BYTES`` messages."""

    def __init__(self, transport: Transport, dst: int, start_at: float) -> None:
        self.transport = transport
        self.dst = dst
        self.start_at = start_at
        self.step = 0
        self._payload = bytes(MESSAGE_BYTES)

    def on_delivery(self, d: Delivery, now: float) -> None:
        pass

    def poll(self, now: float) -> list[SendRequest]:
        if now < self.start_at:
            return []
        out = []
        pending = self.transport.pending_bytes(self.dst)
        while pending < BACKLOG_BYTES:
            out.append(SendRequest(self.dst, self.step, 0, self._payload, True))
            self.step += 1
            pending += MESSAGE_BYTES
        return out

    def next_timer(self) -> float | None:
        return self.start_at if self.step == 0 else None


class Sink:
    """Receiver app: counts delivered wire bytes per source after ``measure_from``."""

    def __init__(self, measure_from: float, overhead: int) -> None:
        self.measure_from = measure_from
        self.overhead = overhead
        self.bytes_by_src: dict[int, int] = {}

    def on_delivery(self, d: Delivery, now: float) -> None:
        if now >= self.measure_from:
            self.bytes_by_src[d.src_rank] = (
                self.bytes_by_src.get(d.src_rank, 0) + len(d.payload) + CTH_LEN + self.overhead
            )

    def poll(self, now: float) -> list[SendRequest]:
        return []

    def next_timer(self) -> float | None:
        return None


def jain(xs: Iterable[float]) -> float:
    xs = list(xs)
    if not xs or sum(xs) == 0:
        return 0.0
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def dumbbell_yaml(scn: Scenario, k: int) -> str:
    """The dumbbell as a topology file: senders s1..sN on sw1, the bottleneck sw1-sw2, r0 on sw2."""
    senders = [f"s{i + 1}" for i in range(scn.flows)]
    lines = [
        "name: dcqcn-dumbbell",
        f"defaults: {{bandwidth_mbps: {scn.line_bps / 1e6!r}, delay_ms: {HOP_DELAY_S * 1e3!r}, "
        f"queue_packets: {QUEUE_LIMIT}}}",
        "hosts:", "  - {name: r0}", *[f"  - {{name: {h}}}" for h in senders],
        "switches: [{name: sw1}, {name: sw2}]",
        "links:", "  - {a: r0, b: sw2}", *[f"  - {{a: {h}, b: sw1}}" for h in senders],
        f"  - {{a: sw1, b: sw2, bandwidth_mbps: {scn.bottleneck_bps / 1e6!r}}}",
        f"ecn: {{threshold_packets: {k}}}",
    ]
    return "\n".join(lines) + "\n"


def run_one(scn: Scenario, k: int, params: dict[str, Any], cnp_interval: float, seed: int,
            duration: float, warmup: float) -> dict[str, float]:
    """One dumbbell run; returns the metrics of the measured window."""
    topo = parse_topology(dumbbell_yaml(scn, k), "<dcqcn dumbbell>")
    net = SimNetwork(topo, seed=seed)
    net.program("baseline")
    plan = topo.plan
    macs = {h.ip: h.mac for h in plan.hosts}
    hosts = {}
    for h in plan.hosts:
        host = SimHost(h.name, h.ip, h.mac, macs, net.loop)
        host.link = net.attach_host(h.name, host.receive)
        hosts[h.name] = host
    addrs = {0: (plan.host("r0").ip, CTH_UDP_PORT)}
    addrs.update({i + 1: (plan.host(f"s{i + 1}").ip, CTH_UDP_PORT) for i in range(scn.flows)})
    rng = random.Random(seed)
    cfg_send = TransportConfig(line_rate_bps=scn.line_bps, cnp_interval=cnp_interval)
    recv_tr = Transport(JOB, 0, cfg_send, "dcqcn", params)
    sink = Sink(warmup, cfg_send.wire_overhead_bytes)
    AppEndpoint(recv_tr, sink, hosts["r0"], addrs)
    senders = []
    for i in range(scn.flows):
        tr = Transport(JOB, i + 1, cfg_send, "dcqcn", params)
        AppEndpoint(tr, BulkSender(tr, 0, rng.uniform(0.0, START_JITTER_S)), hosts[f"s{i + 1}"], addrs)
        senders.append(tr)
    # the bottleneck: sw1's port towards sw2; count the bits it serves as they reach sw2
    bn_port = plan.switch("sw1").port_to("sw2").port
    core = net.switches["sw1"].core
    served = [0]
    forward = net.switches["sw1"].peers[bn_port]

    def count(frame: bytes) -> None:
        served[0] += (len(frame) + WIRE_OVERHEAD_BYTES) * 8
        forward(frame)

    net.switches["sw1"].peers[bn_port] = count
    qs: list[int] = []
    start: dict[str, float] = {}

    def sample(_: Any) -> None:
        if not start:
            start.update(bits=served[0], drops=core.tm.tail_drops()[bn_port],
                         retx=sum(s.stats()["retransmissions"] for s in senders))
        qs.append(core.tm.qdepth(bn_port))

    nsteps = int(round(duration / SAMPLE_DT))
    for n in range(1, nsteps + 1):
        t = n * SAMPLE_DT
        if t >= warmup - 1e-12:
            net.loop.at(s_to_ns(t), sample)
    net.loop.run(until=s_to_ns(duration))
    window = duration - warmup
    cap = scn.bottleneck_bps * window
    recv_stats = recv_tr.stats()
    per_flow = [sink.bytes_by_src.get(i + 1, 0) * 8 for i in range(scn.flows)]
    return {
        "util": (served[0] - start["bits"]) / cap,
        "qmean": statistics.fmean(qs),
        "qmax": max(qs),
        "jain": jain(per_flow) if scn.flows > 1 else 1.0,
        "cnps": recv_stats["cnps_sent"] / duration,
        "drops": core.tm.tail_drops()[bn_port] - start["drops"],
        "retx": sum(s.stats()["retransmissions"] for s in senders) - start["retx"],
        "timeouts": sum(s.stats()["timeouts"] for s in senders),
    }


@dataclass
class Candidate:
    """DcqcnParams overrides plus the receiver's CNP interval."""

    params: dict[str, Any] = field(default_factory=dict)
    cnp_interval: float = TransportConfig().cnp_interval

    def label(self) -> str:
        d = {**self.params}
        if self.cnp_interval != TransportConfig().cnp_interval:
            d["cnp_interval"] = self.cnp_interval
        return json.dumps(d, sort_keys=True) if d else "defaults"


def _job(args: tuple) -> tuple[str, int, dict[str, float]]:
    scn, k, params, cnp, seed, duration, warmup = args
    return scn.name, k, run_one(scn, k, params, cnp, seed, duration, warmup)


def evaluate(cand: Candidate, seeds: int, duration: float, warmup: float,
             pool: ProcessPoolExecutor | None) -> dict[tuple[str, int], dict[str, float]]:
    """Mean metrics per (scenario, K) over ``seeds`` seeds (max for ``qmax``)."""
    jobs = [(scn, k, cand.params, cand.cnp_interval, seed, duration, warmup)
            for scn in SCENARIOS for k in THRESHOLDS for seed in range(seeds)]
    results = list(pool.map(_job, jobs)) if pool else [_job(j) for j in jobs]
    grouped: dict[tuple[str, int], list[dict[str, float]]] = {}
    for name, k, m in results:
        grouped.setdefault((name, k), []).append(m)
    out = {}
    for key, ms in grouped.items():
        out[key] = {m: (max if m == "qmax" else statistics.fmean)(r[m] for r in ms) for m in ms[0]}
        out[key]["util_min"] = min(r["util"] for r in ms)
    return out


def score(res: dict[tuple[str, int], dict[str, float]]) -> float:
    """Higher is better; about 3 when everything is perfect.

    Mean plus worst (per seed) utilisation of the 2- and 4-flow runs, plus half the mean
    utilisation of the 1-flow and of the 8-flow runs; minus twice the mean unfairness
    (1 - Jain) of the multi-flow runs; minus 0.002 per tail drop (per run, measured
    window) and 0.01 per packet of mean queue beyond 2 K.
    """
    core = [m for (name, _), m in res.items() if name[0] in "24"]
    single = [m for (name, _), m in res.items() if name.startswith("1x")]
    many = [m for (name, _), m in res.items() if name.startswith("8x")]
    s = statistics.fmean(m["util"] for m in core) + min(m["util_min"] for m in core)
    s += 0.5 * statistics.fmean(m["util"] for m in single)
    s += 0.5 * statistics.fmean(m["util"] for m in many)
    s -= 2.0 * statistics.fmean(1.0 - m["jain"] for m in core + many)
    for (_, k), m in res.items():
        s -= 0.002 * m["drops"]
        s -= 0.01 * max(0.0, m["qmean"] - 2 * k)
    return s


#: Values swept per knob by --search (the current value is always included).
GRID: dict[str, list[float]] = {
    "cnp_interval": [0.0015, 0.003, 0.005, 0.008, 0.012, 0.02],
    "g": [1 / 256, 1 / 64, 1 / 16, 1 / 4],
    "rate_increase_period": [0.001, 0.002, 0.005, 0.01, 0.02],
    "alpha_update_period": [0.001, 0.002, 0.005, 0.01, 0.02],
    "byte_counter_bytes": [16_384, 65_536, 262_144, 1_048_576],
    "rate_ai_fraction": [0.005, 0.02, 0.05, 0.1],
    "rate_hai_fraction": [0.05, 0.2, 0.5],
    "fast_recovery_stages": [1, 3, 5],
    "min_rate_fraction": [0.01, 0.02, 0.05],
}


def with_value(c: Candidate, knob: str, v: float) -> Candidate:
    if knob == "cnp_interval":
        return Candidate(dict(c.params), v)
    p = dict(c.params)
    default = getattr(DcqcnParams(), knob)
    if v == default:
        p.pop(knob, None)
    else:
        p[knob] = type(default)(v)
    return Candidate(p, c.cnp_interval)


def current_value(c: Candidate, knob: str) -> float:
    if knob == "cnp_interval":
        return c.cnp_interval
    return c.params.get(knob, getattr(DcqcnParams(), knob))


def search(base: Candidate, rounds: int, ev, console: Console) -> tuple[Candidate, dict, list]:
    best, best_res = base, ev(base)
    best_s = score(best_res)
    seen = {best.label(): best_s}
    log = [(best.label(), best_s)]
    console.print(f"start {best.label()}: score {best_s:.3f}")
    for r in range(rounds):
        improved = False
        for knob, values in GRID.items():
            cur = current_value(best, knob)
            for v in values:
                if math.isclose(v, cur):
                    continue
                c = with_value(best, knob, v)
                if c.label() in seen:
                    continue
                t0 = time.monotonic()
                res = ev(c)
                s = score(res)
                seen[c.label()] = s
                log.append((c.label(), s))
                console.print(f"  round {r} {knob}={v:g}: score {s:.3f} "
                              f"({time.monotonic() - t0:.0f} s)")
                if s > best_s + 1e-3:
                    best, best_res, best_s, improved = c, res, s, True
            console.print(f"after {knob}: best {best.label()} score {best_s:.3f}")
        if not improved:
            break
    return best, best_res, log


def print_table(console: Console, rows: list[tuple[str, dict]], title: str) -> None:
    table = Table(title=title)
    for col in ("row", "scenario", "K", "util", "util min", "q mean", "q max", "jain",
                "cnp/s", "drops", "retx", "RTOs"):
        table.add_column(col, justify="left" if col in ("row", "scenario") else "right")
    order = [s.name for s in SCENARIOS]
    for label, res in rows:
        for (name, k), m in sorted(res.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
            table.add_row(label, name, str(k), f"{m['util']:.1%}", f"{m['util_min']:.1%}",
                          f"{m['qmean']:.1f}", f"{m['qmax']:.0f}", f"{m['jain']:.3f}",
                          f"{m['cnps']:.0f}", f"{m['drops']:.1f}", f"{m['retx']:.1f}",
                          f"{m['timeouts']:.1f}")
        table.add_section()
    console.print(table)


#: The defaults before the tuning (the ``before`` row).
PRE_TUNING = {"g": 1 / 16, "alpha_update_period": 0.005, "rate_increase_period": 0.005,
              "byte_counter_bytes": 65_536, "fast_recovery_stages": 5,
              "rate_ai_fraction": 0.02, "rate_hai_fraction": 0.2, "min_rate_fraction": 0.01,
              "cnp_interval": 0.0015}


def candidate_from(over: dict[str, Any]) -> Candidate:
    """A Candidate from DcqcnParams fields plus ``cnp_interval``; defaults dropped."""
    over = dict(over)
    cnp = over.pop("cnp_interval", TransportConfig().cnp_interval)
    defaults = DcqcnParams()
    return Candidate({k: v for k, v in over.items() if getattr(defaults, k) != v}, cnp)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0, help="virtual seconds per run")
    ap.add_argument("--warmup", type=float, default=0.5, help="unmeasured virtual seconds")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--search", action="store_true", help="coordinate search from the defaults")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--params", default=None,
                    help='JSON overrides to compare with the defaults, e.g. \'{"g": 0.0625, '
                         '"cnp_interval": 0.004}\'')
    ap.add_argument("--no-before", action="store_true",
                    help="skip the row of the pre-tuning defaults")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every line and link rate (0.5: 5 Mbit/s hosts, 2: 20 Mbit/s)")
    args = ap.parse_args(argv)
    if args.scale != 1.0:
        global SCENARIOS
        SCENARIOS = tuple(
            Scenario(f"{sc.flows}x{sc.line_bps * args.scale / 1e6:g}->"
                     f"{sc.bottleneck_bps * args.scale / 1e6:g}", sc.flows,
                     sc.line_bps * args.scale, sc.bottleneck_bps * args.scale)
            for sc in SCENARIOS)
    console = Console(width=max(Console().width, 110))
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None

    def ev(c: Candidate) -> dict:
        return evaluate(c, args.seeds, args.duration, args.warmup, pool)

    try:
        t0 = time.monotonic()
        rows: list[tuple[str, dict]] = []
        labels: dict[str, str] = {}
        if not args.no_before:
            before = candidate_from(PRE_TUNING)
            rows.append(("before", ev(before)))
            labels["before"] = before.label()
        base = Candidate()
        base_res = ev(base)
        rows.append(("defaults", base_res))
        labels["defaults"] = "current DcqcnParams() and TransportConfig().cnp_interval = " + \
            json.dumps({**dataclasses.asdict(DcqcnParams()), "cnp_interval": base.cnp_interval})
        best = base
        if args.params:
            best = candidate_from(json.loads(args.params))
            rows.append(("params", ev(best)))
            labels["params"] = best.label()
        elif args.search:
            best, best_res, _ = search(base, args.rounds, ev, console)
            if best.label() != base.label():
                rows.append(("best", best_res))
                labels["best"] = best.label()
        print_table(console, rows, f"DCQCN tuning: rates x{args.scale:g}, {args.duration:g} s virtual "
                                   f"({args.warmup:g} s warm-up), {args.seeds} seeds")
        for name, res in rows:
            console.print(f"{name}: score {score(res):.3f}  {labels[name]}", soft_wrap=True)
        console.print(f"wall time {time.monotonic() - t0:.0f} s")
    finally:
        if pool:
            pool.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
