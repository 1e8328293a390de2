"""ECMP and explicit paths: the controller's model (emu.ecmp, emu.routing) against the P4."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from emu import ecmp
from emu.routing import ACTION_ECMP, TABLE_ECMP, TABLE_LPM, TABLE_PATH_PIN, compute_routes, switch_programs
from emu.topology import TopologyError, parse_topology
from hostapps.wire import CTH_UDP_PORT, Cth, CthType, encode

REPO = Path(__file__).resolve().parents[2]
BUILDS = {"v1model": REPO / "p4" / "symphony.p4", "tofino": REPO / "p4" / "tofino" / "symphony.p4"}


def leaf_spine(extra: str = "", *, leaves: int = 4, per_leaf: int = 2, spines: int = 4) -> str:
    hosts = [f"h{i}" for i in range(1, leaves * per_leaf + 1)]
    lines = ["name: ecmp-test", "defaults: {bandwidth_mbps: 100Gbit/s, delay_ms: 1us, queue_packets: 256}",
             "hosts:"] + [f"  - {{name: {h}}}" for h in hosts]
    lines += ["switches:"] + [f"  - {{name: leaf{i}}}" for i in range(1, leaves + 1)]
    lines += [f"  - {{name: spine{i}}}" for i in range(1, spines + 1)]
    lines += ["links:"] + [f"  - {{a: {h}, b: leaf{1 + i // per_leaf}}}" for i, h in enumerate(hosts)]
    lines += [f"  - {{a: leaf{i}, b: spine{s}}}" for i in range(1, leaves + 1) for s in range(1, spines + 1)]
    # a ring that crosses leaves at every hop: h1 h3 h5 h7 h2 h4 h6 h8
    ring = hosts[0::per_leaf] + hosts[1::per_leaf]
    lines += ["jobs:", f"  - {{id: 0, ranks: [{', '.join(ring)}], size_bytes: 64KiB, iterations: 1}}"]
    return "\n".join(lines) + "\n" + extra


def _frame(src: str, dst: str, rank: int) -> bytes:
    cth = encode(Cth(type=CthType.DATA, job_id=0, step=1, src_rank=rank, dst_rank=rank + 1, psn=0), b"x" * 32)
    return bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:aa:01") / IP(src=src, dst=dst, tos=2)
                 / UDP(sport=CTH_UDP_PORT, dport=CTH_UDP_PORT) / Raw(cth))


@functools.cache
def _program(build: str):
    from emu.embedded.frontend import load_program

    return load_program(BUILDS[build])


def _switch(build: str, topo, name: str):
    from emu.embedded.control import ControlAPI
    from emu.embedded.core import SwitchCore
    from emu.embedded.runtime import Pipeline

    sw = topo.plan.switch(name)
    core = SwitchCore(Pipeline(_program(build), seed=1), [p.port for p in sw.ports])
    ctl = ControlAPI(core)
    for e in switch_programs(topo, "baseline", p4=build)[name].entries:
        ctl.table_add(e.table, e.match, e.action, e.params, e.priority)
    return core


def test_bucket_table_is_balanced_and_seeded() -> None:
    t = ecmp.bucket_members(3, 7)
    assert len(t) == ecmp.ECMP_BUCKETS and sorted(set(t)) == [0, 1, 2]
    assert max(t.count(m) for m in range(3)) - min(t.count(m) for m in range(3)) <= 1
    assert ecmp.bucket_members(3, 7) == t and ecmp.bucket_members(3, 8) != t
    with pytest.raises(ValueError, match="1..64 members"):
        ecmp.bucket_members(0, 1)


def test_deterministic_routing_is_unchanged_without_the_key() -> None:
    topo = parse_topology(leaf_spine())
    assert topo.routing == "deterministic"
    progs = switch_programs(topo, "baseline")
    assert not any(e.table in (TABLE_ECMP, TABLE_PATH_PIN) or e.action == ACTION_ECMP
                   for p in progs.values() for e in p.entries)


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_ecmp_flows_leave_where_the_controller_says(build: str) -> None:
    """Every ring flow's first hop (its leaf's uplink) is the spine emu.routing computed with
    the hash, on both P4 builds; the flows spread over more than one spine."""
    topo = parse_topology(leaf_spine("routing: ecmp\necmp_seed: 3\n"))
    routes = compute_routes(topo)
    flows = routes.ring_flows(0)
    spines = {f.nodes[2] for f in flows}
    assert len(spines) > 1, spines
    cores = {}
    for f in flows:
        leaf = f.nodes[1]
        core = cores.setdefault(leaf, _switch(build, topo, leaf))
        src, dst = topo.plan.host(f.src_host), topo.plan.host(f.dst_host)
        core.receive(topo.plan.switch(leaf).port_to(f.src_host).port, _frame(src.ip, dst.ip, f.src_rank), 0)
        out = core.poll(10**9)
        assert [p for p, _ in out] == [topo.plan.switch(leaf).port_to(f.nodes[2]).port], f


def test_ecmp_seed_changes_collisions_and_the_bound_follows() -> None:
    """Another seed puts the flows on other spines; the bound's fair share is from the hashed paths."""
    loads = {}
    for seed in range(6):
        routes = compute_routes(parse_topology(leaf_spine(f"routing: ecmp\necmp_seed: {seed}\n")))
        loads[seed] = tuple(f.nodes[2] for f in routes.ring_flows(0))
        bw = routes.job_bandwidth(0)
        assert bw.fair_share_bps == 100e9 / bw.max_flows_per_hop
    assert len(set(loads.values())) > 1


def test_entries_of_an_ecmp_leaf() -> None:
    topo = parse_topology(leaf_spine("routing: ecmp\n"))
    entries = switch_programs(topo, "baseline")["leaf1"].entries
    lpm = [e for e in entries if e.table == TABLE_LPM]
    assert sum(e.action == ACTION_ECMP for e in lpm) == 6  # hosts behind other leaves
    nhop = [e for e in entries if e.table == TABLE_ECMP]
    assert len(nhop) == ecmp.ECMP_BUCKETS  # one group: the 4 spines
    assert sorted({e.params["port"] for e in nhop}) == [3, 4, 5, 6]


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_explicit_path_is_pinned(build: str) -> None:
    text = leaf_spine("routing: ecmp\npaths:\n  - {job: 0, rank: 0, via: [leaf1, spine4, leaf2]}\n")
    topo = parse_topology(text)
    flow = compute_routes(topo).ring_flows(0)[0]
    assert flow.nodes == ("h1", "leaf1", "spine4", "leaf2", "h3")
    core = _switch(build, topo, "leaf1")
    core.receive(1, _frame(topo.plan.host("h1").ip, topo.plan.host("h3").ip, 0), 0)
    assert [p for p, _ in core.poll(10**9)] == [topo.plan.switch("leaf1").port_to("spine4").port]


@pytest.mark.parametrize(("paths", "words"), [
    ("  - {job: 1, rank: 0, via: [leaf1]}", "no job 1"),
    ("  - {job: 0, rank: 9, via: [leaf1]}", "ranks 0..7"),
    ("  - {job: 0, rank: 0, via: [leaf1, leaf2]}", "no link between 'leaf1' and 'leaf2'"),
    ("  - {job: 0, rank: 0, via: [leaf1, spine1, leaf3]}", "leaves at 'leaf2'"),
    ("  - {job: 0, rank: 0, via: [leaf1, h2]}", "'h2' is not a switch"),
])
def test_bad_paths_are_one_line(paths: str, words: str) -> None:
    with pytest.raises(TopologyError, match=words) as exc:
        parse_topology(leaf_spine("paths:\n" + paths + "\n"))
    assert "\n" not in str(exc.value)


def test_routing_must_be_known() -> None:
    with pytest.raises(TopologyError, match="routing"):
        parse_topology(leaf_spine("routing: hashed\n"))


def ports_with_traffic(counters: dict) -> dict[str, set[int]]:
    """switch -> egress ports whose ``tx`` counter moved in a run (``<scheme>/counters.json``)."""
    return {sw: {int(p) for p, n in c["stats"]["tx"].items() if n} for sw, c in counters.items()}


def test_sim_run_sends_where_the_report_says(tmp_path: Path) -> None:
    """Virtual time: the ports that carry traffic are exactly those the ECMP model predicts,
    summary.json's ``paths`` is the model's, and some uplink is shared while another is idle."""
    import json

    from emu import runner

    topo_file = tmp_path / "ecmp.yaml"
    topo_file.write_text(leaf_spine("routing: ecmp\necmp_seed: 3\n"))
    result = runner.run(topo_file, schemes=("baseline",), mode="sim", out=tmp_path / "out", size=16384)
    assert result.ok, result.failure
    routes = compute_routes(parse_topology(topo_file.read_text()))
    paths = result.summary["paths"]
    assert paths == routes.flow_report()
    assert paths["max_flows_per_link"] == 2
    counters = json.loads((tmp_path / "out" / "baseline" / "counters.json").read_text())
    assert ports_with_traffic(counters) == routes.ports_in_use()
    uplinks = {p.port for p in routes.plan.switch("leaf1").ports if p.peer.startswith("spine")}
    assert uplinks - routes.ports_in_use()["leaf1"], "leaf1 should leave an uplink idle with seed 3"
    assert (tmp_path / "out" / "flows.csv").read_text().startswith("job,rank,dst_rank,channel,path\n")
