"""Write topologies/dc-leafspine-N.yaml: the data-centre leaf-spine of docs/virtual-time.md.

Usage::

    .venv/bin/python scripts/make_dc_leafspine.py N [--iterations K] [--size-mib S] [--background B]
    .venv/bin/python scripts/make_dc_leafspine.py --leaves L --hosts-per-leaf H --spines S
        --jobs 8,8,2 [--placement packed|random|by-job] [--oversubscription X] [--routing ecmp]
        [--ecmp-seed K] [--placement-seed K] [--size-mib S] [--iterations K] --out FILE
    .venv/bin/python scripts/make_dc_leafspine.py --scenario NAME    # a shipped scenario (emu.fabric)

N ranks (a multiple of 4) on N/2 leaves with 2 hosts each and 2 spines, 100 Gbit/s links with
1 us delay, mtu 4096, the hpcc-dcqcn-100g preset, a ring placed so that every flow crosses two
contended hops, B on/off background sources, DCQCN's rate-increase timer and Symphony's
marking curve as tuned in virtual time (docs/virtual-time.md, "Tuning"). The shipped
dc-leafspine-16 (``16 --background 2``) and dc-leafspine-128 (``128 --background 8``) are
its output; 32 and 64 ranks for the scaling measurements:
``make_dc_leafspine.py 32 --background 4 --out /tmp/dc32.yaml``.

Above 128 ranks two spines would need more than 64 ports, and a port's ECN ramp takes 32
``queue_ecn`` entries of QUEUE_ECN_ENTRIES = 2048 (p4/include/constants.p4; v1model's 9-bit
ports stop at 510), so no switch may have more than 64 ports. So ``--hosts-per-leaf H`` (even,
N/H leaves an even number, 2H <= 64 and N/H <= 64; default the smallest such H: 2 up to 128
ranks, N/64 for a multiple of 128, e.g. 16 for 1,024, 6 for 132) builds the same pattern H/2 times over: N/H leaves of H hosts, H spines, every leaf
linked to every spine (non-blocking). Slot pair (2q, 2q+1) of every leaf is plane q with its
two spines 2q ("first half" role) and 2q+1 ("second half"), routed by destination blocks (the
hosts are listed block by block, emu/routing.py); the ring runs the two-host pattern once per
slot p, and the H/2 flows that cross from one plane to the next (and the wrap) are pinned
(``paths``) through links the pattern leaves idle, so no link carries more than two ring
flows: ``make_dc_leafspine.py 1024 --background 8 --out /tmp/dc1024.yaml`` gives 64 leaves of
16 hosts and 16 spines of 64 ports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hostapps.wire import MAX_RANKS  # noqa: E402

_COMMON = """mtu: 4096
# --mode mininet runs it dilated by D = 5000 (docs/virtual-time.md, "Time dilation"): 100 Gbit/s
# links become 20 Mbit/s, 1 us delays 5 ms, every DCQCN and transport timer x 5000, queues and the
# ECN ramp in packets unchanged; the report gives CCTs in scenario time. The Mininet hosts run a
# 1500-byte MTU: symphony-emu run THIS --mode mininet --mtu 1500.
dilation: 5000
dcqcn_preset: hpcc-dcqcn-100g
dcqcn:
  # The DCQCN paper's rate-increase timer (Zhu et al. 2015, 55 us) instead of HPCC's 300 us:
  # the baseline's mean CCT stays within 0.6% over {55, 300 us} x {1, 5} fast-recovery stages
  # x alpha_init {1, 0.25} (dc-leafspine-16, seed 1), and a flow Symphony slows recovers in
  # steps of 55 us rather than 300 (benchmarks/dc_sweep.py; docs/virtual-time.md, "Tuning").
  rate_increase_period: 55us"""
_SYMPHONY = """symphony:
  # T = 2, slope 0.02 (2% more marking probability per step of lead beyond T), any queue:
  # tuned in virtual time (docs/virtual-time.md, "Tuning"); T <= 1 and steeper slopes mark the
  # ring's normal pipeline lead and slow the collective.
  lead_threshold: 2
  slope: 0.02
  queue_gate: 1"""


def gen(n: int, iterations: int, size_mib: int, bg: int, bg_gbps: int = 20, on_us: int = 200, off_us: int = 800) -> str:
    """The YAML text of the n-rank scenario (n a multiple of 4); background sources of ``bg_gbps`` Gbit/s while on,
    mean ``on_us`` on / ``off_us`` off (exponential)."""
    L = n // 2
    half = L // 2
    hosts = [f"h{i}" for i in range(1, n + 1)]
    leaf_hosts = {lf: (hosts[2*(lf-1)], hosts[2*(lf-1)+1]) for lf in range(1, L+1)}
    order = []
    for p in (0, 1):
        for i in range(half):
            a = 1 + i
            b = 1 + half + (i + p) % half
            order += [leaf_hosts[a][p], leaf_hosts[b][p]]
    assert len(set(order)) == n
    out = []
    out.append(f"""# Data-centre leaf-spine for virtual time (docs/virtual-time.md): {n} ranks at 100 Gbit/s.
#
# {L} leaves x 2 hosts, 2 spines, every link 100 Gbit/s with 1 us of propagation delay,
# RoCE's 4096-byte MTU, DCQCN and the ECN threshold as HPCC's ns-3 simulator sets them for
# 100 Gbit/s (dcqcn_preset hpcc-dcqcn-100g: ECN ramp Kmin 400 KB, Kmax 1600 KB, Pmax 0.2 -> 97 to
# 389 packets of 4110 bytes).
#
# Routing (emu/routing.py): a leaf reaches h1-h{n//2} (first half of 'hosts', leaves 1-{half}) via
# spine1 and h{n//2+1}-h{n} (leaves {half+1}-{L}) via spine2. The ring visits leaf i and leaf
# {half}+i alternately, the first host of each leaf in the first pass, the second host in the
# second (leaf {half}+i+1 then), so every ring flow crosses a leaf uplink it shares with one
# other ring flow and a spine downlink it shares with another: the two-contended-hop pattern
# of topologies/default.yaml at {n} ranks. The lockstep fair share is 50 Gbit/s per flow.
#
# Traffic per iteration: each flow carries 2(N-1)/N * S = {2*(n-1)/n*size_mib:.2f} MiB; the bandwidth
# bound at 50 Gbit/s is {2*(n-1)/n*size_mib*2**20*8/50e9*1e3:.2f} ms. Background: on/off Not-ECT sources
# (exponential, {bg_gbps} Gbit/s while on, mean {on_us} us on / {off_us} us off) across the spines.
#
# Run: symphony-emu run topologies/dc-leafspine-{n}.yaml --mode sim""")
    out.append(f"name: dc-leafspine-{n}")
    out.append(f"description: >-\n  {L}-leaf, 2-spine leaf-spine at 100 Gbit/s, one {n}-rank ring all-reduce of {size_mib} MiB per\n  rank whose flows each cross two contended hops, HPCC's DCQCN at 100 Gbit/s (rate-increase timer\n"
               "  55 us), on/off background, Symphony T = 2, slope 0.02 (docs/virtual-time.md, \"Tuning\").")
    out.append("defaults:\n  bandwidth_mbps: 100Gbit/s\n  delay_ms: 1us\n  queue_packets: 1024")
    out.append(_COMMON)
    out.append("hosts:")
    out += [f"  - {{name: {h}}}" for h in hosts]
    out.append("switches:")
    out += [f"  - {{name: leaf{lf}}}" for lf in range(1, L+1)]
    out += ["  - {name: spine1}", "  - {name: spine2}"]
    out.append("links:")
    for lf in range(1, L+1):
        for h in leaf_hosts[lf]:
            out.append(f"  - {{a: {h}, b: leaf{lf}}}")
    for lf in range(1, L+1):
        out.append(f"  - {{a: leaf{lf}, b: spine1}}")
        out.append(f"  - {{a: leaf{lf}, b: spine2}}")
    out.append("jobs:\n  - id: 0")
    out.append("    ranks: [" + ", ".join(order) + "]")
    out.append(f"    collective: allreduce\n    size_bytes: {size_mib}MiB\n    iterations: {iterations}\n    step_timeout_s: 1")
    out.append("background:" if bg else "background: []")
    for k in range(bg):
        # from the second host of a first-half leaf to the first host of a second-half leaf
        src = leaf_hosts[1 + (2 * k) % half][1]
        dst = leaf_hosts[half + 1 + (2 * k + 1) % half][0]
        out.append(f"  - {{src: {src}, dst: {dst}, rate_mbps: {bg_gbps}Gbit/s, on_ms: {on_us}us, off_ms: {off_us}us, start_ms: {k*100}us, exponential: true, packet_bytes: 1472}}")
    out.append(_SYMPHONY)
    return "\n".join(out) + "\n"


def gen_planes(n: int, hosts_per_leaf: int, iterations: int, size_mib: int, bg: int, bg_gbps: int = 20,
               on_us: int = 200, off_us: int = 800) -> str:
    """The YAML text of the n-rank scenario on n / hosts_per_leaf leaves and hosts_per_leaf spines
    (the module docstring); hosts_per_leaf even, n / hosts_per_leaf even."""
    H = hosts_per_leaf
    L = n // H
    half = L // 2
    S = H
    lw = len(str(L))
    sw = len(str(S))
    leaf = [f"leaf{b + 1:0{lw}d}" for b in range(L)]
    spine = [f"spine{j + 1:0{sw}d}" for j in range(S)]  # zero-padded: name order is the routing's order

    def block(b: int, p: int) -> int:  # the spine through which host (leaf b, slot p) is reached
        return 2 * (p // 2) + (1 if b >= half else 0)

    slots = sorted(((b, p) for b in range(L) for p in range(H)), key=lambda bp: (block(*bp), bp[0], bp[1]))
    name = {bp: f"h{i + 1}" for i, bp in enumerate(slots)}
    order: list[tuple[int, int]] = []
    for p in range(H):
        for i in range(half):
            order += [(i, p), (half + (i + p) % half, p)]
    assert len(set(order)) == n
    pins = []  # (rank, [switches]): the flows from plane to plane, through links the pattern leaves idle
    for k in range(n):
        (b, p), (b2, p2) = order[k], order[(k + 1) % n]
        if p2 // 2 != p // 2:
            pins.append((k, [leaf[b], spine[2 * (p2 // 2) + 1], leaf[b2]]))
    bound = 2 * (n - 1) / n * size_mib * 2**20 * 8 / 50e9 * 1e3
    out = [f"""# Data-centre leaf-spine for virtual time (docs/virtual-time.md): {n} ranks at 100 Gbit/s.
#
# {L} leaves x {H} hosts, {S} spines (every leaf linked to every spine), every link 100 Gbit/s
# with 1 us of propagation delay, RoCE's 4096-byte MTU, DCQCN and the ECN threshold as HPCC's
# ns-3 simulator sets them for 100 Gbit/s (dcqcn_preset hpcc-dcqcn-100g: ECN ramp Kmin 400 KB,
# Kmax 1600 KB, Pmax 0.2 -> 97 to 389 packets of 4110 bytes).
#
# The pattern of dc-leafspine-16 and -128 (scripts/make_dc_leafspine.py), {H // 2} times: slots
# 2q and 2q+1 of every leaf form plane q, reached through spine 2q+1 (leaves 1-{half}) or 2q+2
# (leaves {half + 1}-{L}) by destination blocks (the hosts are listed block by block,
# emu/routing.py). The ring runs the two-host pattern once per slot, so every ring flow crosses a
# leaf uplink it shares with one other ring flow and a spine downlink it shares with another;
# the {len(pins)} flows from one plane to the next are pinned ('paths') through links the pattern
# leaves idle. No switch has more than {max(2 * H, L)} ports. The lockstep fair share is 50 Gbit/s per flow.
#
# Traffic per iteration: each flow carries 2(N-1)/N * S = {2 * (n - 1) / n * size_mib:.2f} MiB; the
# bandwidth bound at 50 Gbit/s is {bound:.2f} ms. Background: on/off Not-ECT sources
# (exponential, {bg_gbps} Gbit/s while on, mean {on_us} us on / {off_us} us off) across the spines.
# Exact payloads hold every rank's buffer (about 3 x size per rank); --payload digest does not.
#
# Run: symphony-emu run THIS --mode sim --payload digest""",
           f"name: dc-leafspine-{n}",
           f"description: >-\n  {L}-leaf, {S}-spine leaf-spine at 100 Gbit/s, one {n}-rank ring all-reduce of {size_mib} MiB "
           f"per\n  rank whose flows each cross two contended hops, HPCC's DCQCN at 100 Gbit/s (rate-increase timer\n"
           "  55 us), on/off background, Symphony T = 2, slope 0.02 (docs/virtual-time.md, \"Tuning\").",
           f"subnet: 10.0.0.0/{min(24, 32 - (n + 2).bit_length())}",
           "defaults:\n  bandwidth_mbps: 100Gbit/s\n  delay_ms: 1us\n  queue_packets: 1024",
           _COMMON, "hosts:"]
    out += [f"  - {{name: {name[bp]}}}" for bp in slots]
    out.append("switches:")
    out += [f"  - {{name: {x}}}" for x in leaf + spine]
    out.append("links:")
    for b in range(L):
        out += [f"  - {{a: {name[(b, p)]}, b: {leaf[b]}}}" for p in range(H)]
    for b in range(L):
        out += [f"  - {{a: {leaf[b]}, b: {x}}}" for x in spine]
    out.append("jobs:\n  - id: 0")
    out.append("    ranks: [" + ", ".join(name[bp] for bp in order) + "]")
    out.append(f"    collective: allreduce\n    size_bytes: {size_mib}MiB\n    iterations: {iterations}\n    step_timeout_s: 1")
    out.append("paths:" if pins else "paths: []")
    out += [f"  - {{job: 0, rank: {k}, via: [{', '.join(via)}]}}" for k, via in pins]
    out.append("background:" if bg else "background: []")
    for k in range(bg):  # from slot 1 of a first-half leaf to slot 0 of a second-half leaf, as gen() does
        src = name[((2 * k) % half, 1)]
        dst = name[(half + (2 * k + 1) % half, 0)]
        out.append(f"  - {{src: {src}, dst: {dst}, rate_mbps: {bg_gbps}Gbit/s, on_ms: {on_us}us, off_ms: {off_us}us, "
                   f"start_ms: {k * 100}us, exponential: true, packet_bytes: 1472}}")
    out.append(_SYMPHONY)
    return "\n".join(out) + "\n"


def max_ports() -> int:
    """Ports a switch of these scenarios may have: the hpcc-dcqcn-100g ramp takes MAX_RAMP_RANGES
    (32) ``queue_ecn`` entries per port of QUEUE_ECN_ENTRIES (2048) -> 64 (the loader's check
    ``queue_ecn_fits``, emu/topology_checks.py); v1model's 510-port limit is above it."""
    from emu.p4names import QUEUE_ECN_ENTRIES
    from emu.routing import MAX_RAMP_RANGES

    return min(510, QUEUE_ECN_ENTRIES // MAX_RAMP_RANGES)


def hosts_per_leaf_choices(n: int) -> list[int]:
    """The hosts per leaf H (ascending) that build n ranks: H even, n / H leaves an even number >= 2,
    every switch within :func:`max_ports` (a leaf has 2 H ports, a spine n / H); [] if none."""
    most = max_ports()
    return [h for h in range(2, n + 1, 2)
            if n % h == 0 and (n // h) % 2 == 0 and 2 * h <= most and n // h <= most]


def nearest_ranks(n: int) -> list[int]:
    """The nearest rank counts below and above n (multiples of 4 up to MAX_RANKS) that some H builds."""
    below = next((m for m in range(n - n % 4, 3, -4) if m != n and hosts_per_leaf_choices(m)), None)
    above = next((m for m in range(n - n % 4 + 4, MAX_RANKS + 1, 4) if hosts_per_leaf_choices(m)), None)
    return [m for m in (below, above) if m is not None]


def main() -> None:
    if any(a == "--scenario" or a.startswith("--scenario=") or a == "--leaves" or a.startswith("--leaves=")
           for a in sys.argv[1:]):
        fabric_main()
        return
    classic_main()


def fabric_main() -> None:
    """A general leaf-spine (emu.fabric.leaf_spine), or a shipped scenario by name."""
    from emu import fabric

    ap = argparse.ArgumentParser(description="Write a leaf-spine scenario (emu/fabric.py).")
    ap.add_argument("--scenario", choices=sorted(fabric.SCENARIOS), help="a shipped scenario, to topologies/NAME.yaml")
    ap.add_argument("--leaves", type=int)
    ap.add_argument("--hosts-per-leaf", type=int, default=2)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--jobs", default="8", help="ranks per job, comma-separated (8,8,2)")
    ap.add_argument("--placement", choices=fabric.PLACEMENTS, default="by-job")
    ap.add_argument("--placement-seed", type=int, default=1)
    ap.add_argument("--oversubscription", type=float, default=1.0, help="leaf host bandwidth / uplink bandwidth")
    ap.add_argument("--host-gbps", type=float, default=100.0)
    ap.add_argument("--routing", choices=("ecmp", "deterministic"), default="ecmp")
    ap.add_argument("--ecmp-seed", type=int, default=0)
    ap.add_argument("--size-mib", type=float, default=4)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.scenario:
        out = args.out or REPO / "topologies" / f"{args.scenario}.yaml"
        text = fabric.scenario_yaml(args.scenario)
    else:
        if args.out is None or args.leaves is None:
            ap.error("--leaves and --out are needed (or --scenario NAME)")
        try:
            ranks = [int(x) for x in args.jobs.split(",")]
            doc = fabric.leaf_spine(
                name=args.out.stem, description=f"leaf-spine {args.leaves}x{args.hosts_per_leaf}, {args.spines} spines, "
                f"jobs {args.jobs}, {args.placement} placement", leaves=args.leaves,
                hosts_per_leaf=args.hosts_per_leaf, spines=args.spines,
                jobs=[{"ranks": n, "size_bytes": f"{args.size_mib:g}MiB", "iterations": args.iterations} for n in ranks],
                placement=args.placement, placement_seed=args.placement_seed, host_gbps=args.host_gbps,
                oversubscription=args.oversubscription, routing=args.routing, ecmp_seed=args.ecmp_seed)
        except ValueError as exc:
            ap.error(str(exc))
        text = fabric.to_yaml(doc)
    try:
        out.write_text(text)
    except OSError as exc:
        ap.error(f"--out {out}: {exc.strerror}")
    print(f"wrote {out}")


def classic_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ranks", type=int)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=16)
    ap.add_argument("--background", type=int, default=2)
    ap.add_argument("--background-gbps", type=int, default=20, help="a source's rate while on (Gbit/s)")
    ap.add_argument("--on-us", type=int, default=200, help="mean on period (us)")
    ap.add_argument("--off-us", type=int, default=800, help="mean off period (us)")
    ap.add_argument("--hosts-per-leaf", type=int, default=None,
                    help="hosts per leaf, an even number that divides ranks into an even number of leaves "
                         "(as many spines; at most 64 ports per switch; default the smallest that fits: 2 up to "
                         "128 ranks, ranks / 64 for a multiple of 128)")
    ap.add_argument("--out", type=Path, default=None, help="output file (default topologies/dc-leafspine-N.yaml)")
    args = ap.parse_args()
    if args.ranks < 4 or args.ranks % 4:
        ap.error(f"ranks {args.ranks}: give a multiple of 4, at least 4")
    if args.ranks > MAX_RANKS:
        ap.error(f"ranks {args.ranks}: at most {MAX_RANKS} ranks (MAX_RANKS, p4/include/constants.p4)")
    fits = hosts_per_leaf_choices(args.ranks)
    if args.hosts_per_leaf is None:
        if not fits:
            ap.error(f"ranks {args.ranks}: no --hosts-per-leaf fits (an even H with an even number of leaves "
                     f"ranks / H, at most {max_ports()} ports per switch); nearest that work: "
                     + ", ".join(str(n) for n in nearest_ranks(args.ranks)))
        h = fits[0]
    else:
        h = args.hosts_per_leaf
        if h not in fits:
            works = (f"for {args.ranks} ranks give one of {', '.join(map(str, fits))}" if fits else
                     f"no H fits {args.ranks} ranks; nearest that work: "
                     + ", ".join(str(n) for n in nearest_ranks(args.ranks)))
            ap.error(f"--hosts-per-leaf {h}: give an even number that cuts {args.ranks} ranks into an even number "
                     f"of leaves with at most {max_ports()} ports per switch (2 x H per leaf, ranks / H per spine); "
                     + works)
    for name in ("iterations", "size_mib", "background_gbps", "on_us", "off_us"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)}: give 1 or more")
    if args.background < 0:
        ap.error(f"--background {args.background}: give 0 or more")
    out = args.out or REPO / "topologies" / f"dc-leafspine-{args.ranks}.yaml"
    try:
        if h == 2:
            text = gen(args.ranks, args.iterations, args.size_mib, args.background, args.background_gbps,
                       args.on_us, args.off_us)
        else:
            text = gen_planes(args.ranks, h, args.iterations, args.size_mib, args.background, args.background_gbps,
                              args.on_us, args.off_us)
        out.write_text(text)
    except OSError as exc:
        ap.error(f"--out {out}: {exc.strerror}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
