"""Routing: deterministic paths, expected_flows by hand, well-formed table entries."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from emu import ecmp
from emu.embedded.t2na import qdepth_cells
from emu.p4build import P4_BUILDS
from emu.p4names import (
    ACTION_ECMP,
    ACTION_ECN,
    ACTION_FORWARD,
    ACTION_MARKING,
    ACTION_SYMPHONY,
    MAX_QDEPTH,
    PROB_ONE,
    TABLE_ECMP,
    TABLE_LPM,
    TABLE_MARKING,
    TABLE_QUEUE_ECN,
    TABLE_SYMPHONY,
)
from emu.routing import (
    MAX_RAMP_RANGES,
    compute_routes,
    data_frame_bytes,
    ecn_ramp,
    qdepth_unit,
    switch_programs,
    symphony_threshold,
    t2na_qdepth,
)
from emu.topology import Topology, load_topology, parse_topology
from hostapps.collectives import lead_bound
from hostapps.wire import CTH_UDP_PORT

REPO = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((REPO / "topologies").glob("*.yaml"))


def _load(name: str) -> Topology:
    return load_topology(REPO / "topologies" / f"{name}.yaml")


def test_default_paths_by_hand() -> None:
    # h1-h4 (first half of 'hosts') are reached via spine1, h5-h8 via spine2.
    routes = compute_routes(_load("default"))
    paths = [f.nodes for f in routes.ring_flows(0)]
    assert paths == [
        ("h1", "leaf1", "spine2", "leaf3", "h5"),
        ("h5", "leaf3", "spine1", "leaf2", "h3"),
        ("h3", "leaf2", "spine2", "leaf4", "h7"),
        ("h7", "leaf4", "spine1", "leaf1", "h2"),
        ("h2", "leaf1", "spine2", "leaf4", "h8"),
        ("h8", "leaf4", "spine1", "leaf2", "h4"),
        ("h4", "leaf2", "spine2", "leaf3", "h6"),
        ("h6", "leaf3", "spine1", "leaf1", "h1"),
    ]


def test_default_shared_links_by_hand() -> None:
    load = compute_routes(_load("default")).hop_load(0)
    shared = {hop: ranks for hop, ranks in load.items() if len(ranks) > 1}
    assert shared == {
        ("leaf1", "spine2"): [0, 4],
        ("leaf2", "spine2"): [2, 6],
        ("leaf3", "spine1"): [1, 7],
        ("leaf4", "spine1"): [3, 5],
        ("spine2", "leaf3"): [0, 6],
        ("spine2", "leaf4"): [2, 4],
        ("spine1", "leaf1"): [3, 7],
        ("spine1", "leaf2"): [1, 5],
    }
    # Each flow shares its uplink with one flow and its downlink with a different one.
    for flow in compute_routes(_load("default")).ring_flows(0):
        up = set(load[flow.hops[1]]) - {flow.src_rank}
        down = set(load[flow.hops[2]]) - {flow.src_rank}
        assert len(up) == 1 and len(down) == 1 and up != down


def test_expected_flows_default_by_hand() -> None:
    # Each leaf: 2 flows out + 2 in; each spine: 4 of the 8 flows pass through it.
    expected = compute_routes(_load("default")).expected_flows()
    assert expected == {sw: {0: 4} for sw in ("leaf1", "leaf2", "leaf3", "leaf4", "spine1", "spine2")}


def test_expected_flows_single_and_dumbbell() -> None:
    assert compute_routes(_load("single")).expected_flows() == {"s1": {0: 4}}
    assert compute_routes(_load("dumbbell")).expected_flows() == {"s1": {0: 8}, "s2": {0: 8}}


def test_job_bandwidth() -> None:
    default = compute_routes(_load("default")).job_bandwidth(0)
    assert (default.bottleneck_bps, default.fair_share_bps, default.max_flows_per_hop) == (10e6, 5e6, 2)
    dumbbell = compute_routes(_load("dumbbell")).job_bandwidth(0)
    assert (dumbbell.fair_share_bps, dumbbell.max_flows_per_hop) == (2.5e6, 4)
    single = compute_routes(_load("single")).job_bandwidth(0)
    assert (single.bottleneck_bps, single.fair_share_bps) == (10e6, 10e6)


PROGRAMS_AS_JSON = """
import json
from pathlib import Path
from emu.routing import switch_programs
from emu.topology import load_topology
out = {}
for path in sorted(Path("topologies").glob("*.yaml")):
    for scheme in ("baseline", "symphony"):
        progs = switch_programs(load_topology(path), scheme)
        out[f"{path.name}/{scheme}"] = [[name, prog.as_dict()] for name, prog in progs.items()]
print(json.dumps(out, default=str))
"""


def test_deterministic_across_processes() -> None:
    """Same topology, same entries in the same order, whatever the str hash seed: two
    calls in one process share the seed and could not catch set-order dependence."""
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", PROGRAMS_AS_JSON], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
    assert sorted(runs[0]) == sorted(f"{p.name}/{s}" for p in TOPOLOGIES for s in ("baseline", "symphony"))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
@pytest.mark.parametrize("scheme", ["baseline", "symphony"])
def test_entries_well_formed(path: Path, scheme: str) -> None:
    topo = load_topology(path)
    plan = topo.plan
    routes = compute_routes(topo)
    progs = switch_programs(topo, scheme, routes)  # type: ignore[arg-type]
    assert list(progs) == [s.name for s in topo.switches]
    macs = {h.ip: h.mac for h in plan.hosts}
    for sw in plan.switches:
        prog = progs[sw.name]
        port_macs = {p.port: p.mac for p in sw.ports}
        lpm = [e for e in prog.entries if e.table == TABLE_LPM]
        assert len(lpm) == len(plan.hosts)
        for e in lpm:
            assert set(e.as_dict()) == {"table", "match", "action", "params"}
            net = ipaddress.IPv4Network(e.match["hdr.ipv4.dstAddr"])
            assert net.prefixlen == 32
            if e.action == ACTION_ECMP:  # routing: ecmp, several next hops: a group of this switch
                assert topo.routing == "ecmp" and set(e.params) == {"group", "seed"}
                continue
            assert e.action == ACTION_FORWARD
            assert set(e.params) == {"srcAddr", "dstAddr", "port"}
            assert e.params["dstAddr"] == macs[str(net.network_address)]
            assert port_macs[e.params["port"]] == e.params["srcAddr"]
        groups = {e.params["group"] for e in lpm if e.action == ACTION_ECMP}
        nhop = [e for e in prog.entries if e.table == TABLE_ECMP]
        assert {e.match["meta.ecmp_group"] for e in nhop} == groups
        assert len(nhop) == ecmp.ECMP_BUCKETS * len(groups)
        assert all(port_macs[e.params["port"]] == e.params["srcAddr"] for e in nhop)
        ecn = [e for e in prog.entries if e.table == TABLE_QUEUE_ECN]
        if topo.ecn.kmin_packets == topo.ecn.kmax_packets:  # the shorthand K: a step, one entry per port
            assert topo.ecn.kmin_packets == topo.ecn.threshold_packets
            assert sorted(e.match["meta.egress_port"] for e in ecn) == sorted(port_macs)
            assert all(
                e.action == ACTION_ECN and e.priority == 1 and e.params == {"threshold": PROB_ONE}
                and e.match["meta.enq_qdepth"] == [topo.ecn.threshold_packets, MAX_QDEPTH] for e in ecn
            )
        else:  # a ramp (a DCQCN preset's): every port has entries from kmin up to the full-mark range
            assert {e.match["meta.egress_port"] for e in ecn} == set(port_macs)
            assert topo.ecn.kmin_packets <= min(e.match["meta.enq_qdepth"][0] for e in ecn) < topo.ecn.kmax_packets
            assert all(e.action == ACTION_ECN for e in ecn)
        sym = [e for e in prog.entries if e.table == TABLE_SYMPHONY]
        assert len(sym) == len(prog.expected_flows) >= 1
        for e in sym:
            assert e.action == ACTION_SYMPHONY
            assert set(e.params) == {"flows", "queue_gate", "mode"}
            assert e.params["flows"] == prog.expected_flows[e.match["hdr.cth.job_id"]] >= 1
            assert e.params["mode"] == (1 if scheme == "symphony" else 0)
        marking = [e for e in prog.entries if e.table == TABLE_MARKING]
        # leads 1..lead_bound (N-1 for one channel) of every job here, where a lead beyond T marks
        bound = {j: lead_bound(topo.job(j).collective, len(topo.job(j).ranks)) for j in prog.expected_flows}
        assert {e.match["hdr.cth.job_id"] for e in marking} == {
            j for j in prog.expected_flows if bound[j] > topo.symphony_for(j).lead_threshold}
        for e in marking:  # the same in both schemes: only the mode differs
            params = topo.symphony_for(e.match["hdr.cth.job_id"])
            assert e.action == ACTION_MARKING and 1 <= e.match["meta.lead"] <= bound[e.match["hdr.cth.job_id"]]
            assert e.params == {"threshold": symphony_threshold(e.match["meta.lead"], params.lead_threshold,
                                                                params.slope)}
        assert [(q.port, q.rate_bps, q.depth_pkts, q.delay_us) for q in prog.queues] == [
            (p.port, p.rate_bps, p.depth_pkts, p.delay_us) for p in sw.ports
        ]
    # Following the lpm entries hop by hop from every host reaches every other host.
    by_switch = {sw: {e.match["hdr.ipv4.dstAddr"]: e for e in p.entries if e.table == TABLE_LPM}
                 for sw, p in progs.items()}
    nhops = {sw: {(e.match["meta.ecmp_group"], e.match["meta.ecmp_bucket"]): e.params["port"]
                  for e in p.entries if e.table == TABLE_ECMP} for sw, p in progs.items()}

    def out_port(sw: str, src: str, dst: str) -> int:
        e = by_switch[sw][f"{dst}/32"]
        if e.action == ACTION_FORWARD:
            return e.params["port"]
        bucket = ecmp.bucket(src, dst, CTH_UDP_PORT, CTH_UDP_PORT, e.params["seed"])
        return nhops[sw][(e.params["group"], bucket)]

    for src in plan.hosts:
        for dst in plan.hosts:
            if src is dst:
                continue
            cur, hops = src.switch, 0
            while True:
                port = plan.switch(cur).ports[out_port(cur, src.ip, dst.ip) - 1]
                hops += 1
                if port.peer == dst.name:
                    break
                cur = port.peer
                assert hops <= len(plan.switches)
            assert (cur, port.port) == (dst.switch, dst.switch_port)


def test_default_symphony_entry_values() -> None:
    prog = switch_programs(_load("default"), "symphony")["spine1"]
    (entry,) = [e for e in prog.entries if e.table == TABLE_SYMPHONY]
    assert entry.as_dict() == {
        "table": "MyIngress.symphony_config",
        "match": {"hdr.cth.job_id": 0},
        "action": "MyIngress.set_symphony_config",
        "params": {"flows": 4, "queue_gate": 1, "mode": 1},
    }
    # T = 0, slope 0.25: leads 1, 2, 3 mark with 1/4, 1/2, 3/4; lead 4 up to N-1 = 7 always
    marking = {e.match["meta.lead"]: e.params["threshold"] for e in prog.entries if e.table == TABLE_MARKING}
    assert marking == {1: 16384, 2: 32768, 3: 49152, **{lead: 65536 for lead in range(4, 8)}}


def test_tofino_build_counts_queue_depth_in_cells() -> None:
    """T2NA's enq_qdepth is in 176-byte cells: a full-MTU packet (1514 B) is 9 cells."""
    topo = _load("default")  # ECN K = 3 packets, gate 1 packet, mtu 1500
    assert qdepth_unit("tofino", topo).cells_per_packet == 9
    v1 = switch_programs(topo, "symphony")["spine1"]
    t2 = switch_programs(topo, "symphony", p4="tofino")["spine1"]
    ecn = [e.match["meta.enq_qdepth"] for e in t2.entries if e.table == TABLE_QUEUE_ECN]
    assert set(map(tuple, ecn)) == {(27, MAX_QDEPTH)}
    (sym,) = [e for e in t2.entries if e.table == TABLE_SYMPHONY]
    assert sym.params["queue_gate"] == 9
    # everything else is the same entry
    other = [e for e in v1.entries if e.table not in (TABLE_QUEUE_ECN, TABLE_SYMPHONY)]
    assert other == [e for e in t2.entries if e.table not in (TABLE_QUEUE_ECN, TABLE_SYMPHONY)]
    with pytest.raises(ValueError, match="unknown P4 build 'psa'"):
        switch_programs(topo, "symphony", p4="psa")


def test_tofino_cells_follow_the_topology_mtu() -> None:
    """mtu 4096: a DATA frame is 4110 B = 24 cells, so kmax = 389 packets is 9336 cells, the
    depth the embedded T2NA switch reaches with 389 such frames queued."""
    topo = load_topology(REPO / "topologies" / "dc-leafspine-16.yaml")
    assert topo.mtu == 4096 and (topo.ecn.kmin_packets, topo.ecn.kmax_packets) == (97, 389)
    assert data_frame_bytes(topo.mtu) == 4110
    unit = qdepth_unit("tofino", topo)
    assert unit.cells_per_packet == 24 == qdepth_cells(SimpleNamespace(packet_length=4110))
    assert t2na_qdepth(1500).cells_per_packet == 9 and t2na_qdepth(9000).cells_per_packet == 52
    sw = next(iter(switch_programs(topo, "baseline", p4="tofino").values()))
    ramp = [(e.match["meta.enq_qdepth"], e.params["threshold"]) for e in sw.entries
            if e.table == TABLE_QUEUE_ECN and e.match["meta.egress_port"] == 1]
    assert ramp[-1] == ([389 * 24, MAX_QDEPTH], 65536)
    assert ramp[0][0][0] >= 97 * 24
    assert qdepth_unit("v1model", topo).convert(389) == 389


def test_ecn_ramp_from_topology() -> None:
    topo = parse_topology(
        """
name: t
hosts: [{name: h1}, {name: h2}]
switches: [{name: s1}]
links: [{a: h1, b: s1}, {a: h2, b: s1}]
ecn: {kmin_packets: 4, kmax_packets: 8, pmax: 0.5}
""",
        "t.yaml",
    )
    entries = [e for e in switch_programs(topo, "baseline")["s1"].entries if e.table == TABLE_QUEUE_ECN]
    port1 = [(e.match["meta.enq_qdepth"], e.params["threshold"]) for e in entries if e.match["meta.egress_port"] == 1]
    # depth 4 (= kmin): probability 0, no entry; 5, 6, 7: 0.5 * 1/4, 2/4, 3/4; 8 and more: always
    assert port1 == [([5, 5], 8192), ([6, 6], 16384), ([7, 7], 24576), ([8, MAX_QDEPTH], 65536)]
    assert topo.ecn.threshold_packets is None


def test_ecn_ramp_shapes() -> None:
    assert ecn_ramp(10, 10, 1.0) == [(10, MAX_QDEPTH, PROB_ONE)]  # the step of threshold_packets
    assert ecn_ramp(0, 2, 1.0) == [(1, 1, 32768), (2, MAX_QDEPTH, PROB_ONE)]
    long = ecn_ramp(100, 1100, 0.2, max_ranges=5)  # 1000-deep ramp in 4 pieces of 250 (+ d >= kmax), each at its midpoint
    assert long == [(100, 349, 1632), (350, 599, 4909), (600, 849, 8185), (850, 1099, 11462),
                    (1100, MAX_QDEPTH, PROB_ONE)]  # 0.2 * (224.5 - 100) / 1000 * 65536 = 1632
    assert len(ecn_ramp(97, 389 * 24, 0.2)) <= MAX_RAMP_RANGES  # the kmax range counts in the budget
    with pytest.raises(ValueError, match="kmin <= kmax"):
        ecn_ramp(5, 4, 1.0)


@pytest.mark.parametrize("p4", sorted(P4_BUILDS))
def test_shipped_topologies_fit_the_p4_tables(p4: str) -> None:
    """Every shipped scenario's entries fit the table sizes each build declares.

    A 64-port spine (dc-leafspine-128) needs 64 ramps in ``queue_ecn``; the switch refuses an
    entry past ``size`` ("table full"), which would end the run while programming.
    """
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline

    pipe = Pipeline(load_program(P4_BUILDS[p4].source))
    for path in sorted((REPO / "topologies").glob("*.yaml")):
        topo = load_topology(path)
        for scheme in ("baseline", "symphony"):
            for sw, prog in switch_programs(topo, scheme, p4=p4).items():
                counts: dict[str, int] = {}
                for entry in prog.entries:
                    counts[entry.table] = counts.get(entry.table, 0) + 1
                for table, n in counts.items():
                    size = pipe.table(table).size
                    assert n <= size, f"{path.name} {scheme} {sw}: {n} {table} entries > size {size}"


def test_symphony_threshold_formula() -> None:
    """threshold(lead) = min(65536, round((lead - T) * slope * 65536)) for lead > T (DESIGN 4)."""
    assert symphony_threshold(1, 0, 0.5) == 32768
    assert symphony_threshold(2, 0, 0.5) == 65536
    assert symphony_threshold(9, 0, 7.0) == 65536  # capped: probability 1
    assert symphony_threshold(3, 3, 1.0) == 0  # lead <= T: never
    assert symphony_threshold(5, 0, 0.0) == 0
    assert symphony_threshold(1, 0, 1e-9) == 1  # a positive slope never rounds to 0


def test_switch_without_job_flows_gets_no_symphony_entry() -> None:
    topo = parse_topology(
        """
name: t
hosts: [{name: h1}, {name: h2}, {name: h3}]
switches: [{name: s1}, {name: s2}]
links: [{a: h1, b: s1}, {a: h2, b: s1}, {a: s1, b: s2}, {a: h3, b: s2}]
jobs: [{id: 3, ranks: [h1, h2]}]
ecn: {enabled: false}
""",
        "t.yaml",
    )
    progs = switch_programs(topo, "baseline")
    assert progs["s1"].expected_flows == {3: 2}
    assert progs["s2"].expected_flows == {}
    assert not [e for e in progs["s2"].entries if e.table in (TABLE_SYMPHONY, TABLE_QUEUE_ECN, TABLE_MARKING)]


def test_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="unknown scheme"):
        switch_programs(_load("single"), "fast")  # type: ignore[arg-type]


def _ramp_mean_error(kmin: int, kmax: int, pmax: float) -> tuple[float, float]:
    """Mean and largest |error| of the quantized ramp's probability over depths kmin..kmax-1."""
    ranges = ecn_ramp(kmin, kmax, pmax)
    errors = []
    for d in range(kmin, kmax):
        q = next((t / PROB_ONE for low, high, t in ranges if low <= d <= high), 0.0)
        errors.append(q - pmax * (d - kmin) / (kmax - kmin))
    return sum(errors) / len(errors), max(map(abs, errors))


@pytest.mark.parametrize(("kmin", "kmax", "pmax"), [(97 * 24, 389 * 24, 0.2), (97 * 9, 389 * 9, 0.2),
                                                    (10, 1010, 1.0), (5, 40, 0.5)])
def test_long_ecn_ramp_is_unbiased(kmin: int, kmax: int, pmax: float) -> None:
    """Pieces of a long ramp mark at their midpoint's probability: the mean error over the
    ramp's depths is within rounding (1/65536 per range), the largest within half a piece."""
    mean, worst = _ramp_mean_error(kmin, kmax, pmax)
    pieces = min(kmax - kmin, MAX_RAMP_RANGES - 1)
    assert abs(mean) < 2 / PROB_ONE + pmax / (kmax - kmin), (mean, worst)
    assert worst <= pmax / pieces / 2 + pmax / (kmax - kmin) + 1 / PROB_ONE, (mean, worst)
    assert ecn_ramp(kmin, kmax, pmax)[0][2] > 0  # the first piece marks too


def _variant_entries(topo: Topology, p4: str = "v1model") -> dict[str, list]:
    from emu.p4names import TABLE_SLACK, TABLE_SPACING, TABLE_TRACKER

    return {sw: [e for e in prog.entries if e.table in (TABLE_TRACKER, TABLE_SLACK, TABLE_SPACING)]
            for sw, prog in switch_programs(topo, "symphony", p4=p4).items()}


def test_variants_default_to_no_entries() -> None:
    """tracker: job, lead: step, marking: random (the defaults) install no variant entry."""
    assert all(not entries for entries in _variant_entries(_load("default")).values())


def test_port_tracker_entries_count_the_flows_of_each_egress_port() -> None:
    """tracker: port: one entry per (job, egress port) the job's ring flows leave on, tracker ids
    1, 2, ... per switch (0 is job 0's own id), the flows of each port summing to expected_flows."""
    from emu.p4names import TABLE_TRACKER

    topo = _load("default")
    topo.symphony.tracker = "port"
    routes = compute_routes(topo)
    expected = routes.expected_flows()
    for sw, entries in _variant_entries(topo).items():
        tracker = [e for e in entries if e.table == TABLE_TRACKER]
        assert [e.params["tracker"] for e in tracker] == list(range(1, 1 + len(tracker)))
        assert sum(e.params["flows"] for e in tracker) == expected[sw].get(0, 0)
        # every port is where a ring flow of job 0 leaves this switch
        ports = {routes.egress(sw, f.src_host, f.dst_host).port for f in routes.ring_flows(0) if sw in f.switches}
        assert {e.match["meta.out_port"] for e in tracker} == ports
    # spine1 in default.yaml: its 4 ring flows leave on 2 ports, 2 flows each
    assert [e.params["flows"] for e in _variant_entries(topo)["spine1"]] == [2, 2]


def test_port_trackers_beyond_max_trackers_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import emu.routing

    topo = _load("default")
    topo.symphony.tracker = "port"
    monkeypatch.setattr(emu.routing, "MAX_TRACKERS", 3)
    with pytest.raises(ValueError, match=r"tracker: port needs more than 2 \(job, egress port\) trackers beside its 1 job"):
        switch_programs(topo, "symphony")


def test_slack_and_spacing_entries_per_build() -> None:
    """lead: slack gives round(slack * size / N) bytes; marking: spaced the gap in the build's
    timestamp ticks (v1model us, T2NA ns), the CNP interval when mark_gap_ms is unset."""
    from emu.p4names import TABLE_SLACK, TABLE_SPACING

    topo = load_topology(REPO / "topologies" / "dc-leafspine-16.yaml")  # HPCC preset: CNP interval 4 us
    topo.symphony.lead, topo.symphony.slack, topo.symphony.marking = "slack", 0.25, "spaced"
    job = topo.job(0)
    for p4, gap in (("v1model", 4), ("tofino", 4000)):
        entries = [e for es in _variant_entries(topo, p4).values() for e in es]
        assert {e.params["bytes"] for e in entries if e.table == TABLE_SLACK} == \
            {round(0.25 * job.size_bytes // len(job.ranks))}
        assert {e.params["gap"] for e in entries if e.table == TABLE_SPACING} == {gap}
    topo.symphony.mark_gap_ms = 0.016
    entries = [e for es in _variant_entries(topo, "v1model").values() for e in es]
    assert {e.params["gap"] for e in entries if e.table == TABLE_SPACING} == {16}


def test_variant_keys_in_the_schema() -> None:
    text = (REPO / "topologies" / "single.yaml").read_text()
    topo = parse_topology(text + "\n" if "symphony:" in text else text)
    assert (topo.symphony.tracker, topo.symphony.lead, topo.symphony.marking) == ("job", "step", "random")
    bad = text.replace("jobs:", "symphony: {tracker: flow}\njobs:", 1)
    with pytest.raises(Exception, match="tracker"):
        parse_topology(bad)
