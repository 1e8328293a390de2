"""Topology schema: every shipped file loads; each mistake gives one line naming file and field."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from emu.topology import TopologyError, load_topology, parse_topology, resolve_topology
from emu.units import to_unit

REPO = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((REPO / "topologies").glob("*.yaml"))

GOOD = """\
name: t
hosts:
  - {name: h1}
  - {name: h2, ip: 10.0.0.9}
  - {name: h3}
switches:
  - {name: s1}
  - {name: s2}
links:
  - {a: h1, b: s1}
  - {a: h2, b: s1, bandwidth_mbps: 20, delay_ms: 0.5, queue_packets: 12}
  - {a: s1, b: s2}
  - {a: s2, b: h3}
jobs:
  - {id: 2, ranks: [h1, h2, h3]}
"""


def test_shipped_topologies_exist() -> None:
    names = {p.stem for p in TOPOLOGIES}
    assert {"default", "dumbbell", "single"} <= names


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_shipped_topology_loads(path: Path) -> None:
    topo = load_topology(path)
    assert topo.jobs, "every shipped scenario runs a job"
    plan = topo.plan
    assert len(plan.hosts) == len(topo.hosts)
    for link in topo.links:
        assert link.bandwidth_mbps and link.delay_ms is not None and link.queue_packets


def test_defaults_and_ips_resolved() -> None:
    topo = parse_topology(GOOD, "t.yaml")
    assert [str(h.ip) for h in topo.hosts] == ["10.0.0.1", "10.0.0.9", "10.0.0.2"]
    assert topo.links[0].bandwidth_mbps == 10.0
    assert topo.links[0].delay_ms == 0.1
    assert topo.links[0].queue_packets == 64
    assert topo.line_rate_bps("h2") == 20e6
    # Issue 9: T = 1 by default (T = 0 over-marked the pipeline's own one-step lead on single.yaml).
    assert topo.symphony_for(2).slope == 0.25 and topo.symphony_for(2).lead_threshold == 1
    job = topo.job(2)
    assert job.collective == "allreduce" and job.iterations == 5


def test_plan_ports_interfaces_macs() -> None:
    plan = parse_topology(GOOD, "t.yaml").plan
    s1 = plan.switch("s1")
    assert [(p.port, p.intf, p.peer) for p in s1.ports] == [
        (1, "s1-eth1", "h1"),
        (2, "s1-eth2", "h2"),
        (3, "s1-eth3", "s2"),
    ]
    assert s1.ports[2].peer_port == 1 and s1.ports[2].peer_intf == "s2-eth1"
    assert s1.ports[1].rate_bps == 20e6 and s1.ports[1].delay_us == 500 and s1.ports[1].depth_pkts == 12
    h3 = plan.host("h3")
    assert (h3.intf, h3.switch, h3.switch_port, h3.mac) == ("h3-eth0", "s2", 2, "02:00:00:00:00:03")
    assert s1.ports[0].mac == "02:01:00:01:00:01"
    assert plan.switch("s2").ports[1].mac == "02:01:00:02:00:02"
    assert plan.arp_table()["10.0.0.9"] == "02:00:00:00:00:02"
    macs = [p.mac for s in plan.switches for p in s.ports] + [h.mac for h in plan.hosts]
    assert len(set(macs)) == len(macs)


def _error(text: str, name: str = "topologies/bad.yaml") -> str:
    with pytest.raises(TopologyError) as info:
        parse_topology(text, name)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{name}: ")
    assert "; " in msg  # problem; fix
    return msg


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("  - {id: 2, ranks", "  - {id: 2, colour: red, ranks", "jobs[0].colour", "unknown key 'colour'"),
        ("name: t\n", "name: t\nswitchez: []\n", "switchez", "unknown key"),
        ("{a: s2, b: h3}", "{a: s2, b: h9}", "links[3].b", "unknown node 'h9'"),
        ("bandwidth_mbps: 20", "bandwidth_mbps: -5", "links[1].bandwidth_mbps", "must be > 0, got -5"),
        ("ranks: [h1, h2, h3]", "ranks: [h1, h7, h3]", "jobs[0].ranks[1]", "rank 1 on 'h7'"),
        ("ranks: [h1, h2, h3]", "ranks: [h1, s1, h3]", "jobs[0].ranks[1]", "a switch, not a host"),
        ("  - {a: s1, b: s2}\n", "", "", "disconnected graph"),
        ("ranks: [h1, h2, h3]", "ranks: [h1, h1, h3]", "jobs[0].ranks[1]", "two ranks"),
        ("ranks: [h1, h2, h3]", "ranks: [h1]", "jobs[0].ranks", "at least 2 ranks"),
        ("{id: 2,", "{id: 16,", "jobs[0].id", "MAX_JOBS"),
        ("{name: h3}", "{name: h3, ip: 10.0.0.9}", "hosts[2].ip", "duplicate IP"),
        ("{name: s2}", "{name: h1}", "switches[1].name", "duplicate name"),
        (
            "  - {a: s2, b: h3}\n",
            "  - {a: s2, b: h3}\n  - {a: s1, b: h3}\n",
            "links[4].b",
            "already has a link",
        ),
        ("{name: h1}", "{name: host-one}", "hosts[0].name", "not a valid name"),
        (
            "  - {id: 2, ranks",
            "  - {id: 2, collective: broadcast, ranks",
            "jobs[0].collective",
            "must be one of",
        ),
        ("{id: 2,", "{id: 2, size_bytes: 10,", "jobs[0].size_bytes", "multiple of 4"),
        ("{id: 2,", "{id: 2, payload: digits,", "jobs[0].payload", "must be one of"),
        ("{id: 2,", "{id: 2, payload: digest, size_bytes: 32,", "jobs[0].payload", "at least 4 elements per slice"),
        # 48 MiB over 3 ranks: a 16 MiB chunk, one byte past the CTH's 24-bit offset
        ("{id: 2,", "{id: 2, size_bytes: 48MiB,", "jobs[0].size_bytes", "must be below 16 MiB"),
        ("name: t\n", "name: t\ndcqcn: {gee: 1}\n", "dcqcn.gee", "unknown DCQCN parameter"),
        ("name: t\n", "name: t\ndcqcn: {g: 0}\n", "dcqcn", "dcqcn param g=0 must be in (0, 1]"),
        ("{id: 2,", "{id: 2, dcqcn: {min_rate_fraction: 2},", "jobs[0].dcqcn",
         "dcqcn param min_rate_fraction=2 must be in (0, 1]"),
        (
            "name: t\n",
            "name: t\nbackground: [{src: h1, dst: h5, rate_mbps: 1, on_ms: 5}]\n",
            "background[0].dst",
            "unknown host 'h5'",
        ),
    ],
)
def test_bad_files(old: str, new: str, field: str, words: str) -> None:
    assert old in GOOD
    msg = _error(GOOD.replace(old, new, 1))
    if field:
        assert f"topologies/bad.yaml: {field}: " in msg, msg
    assert words in msg, msg


def test_disconnected_names_the_node() -> None:
    msg = _error(GOOD.replace("  - {a: s1, b: s2}\n", ""))
    # h3 and s2 are cut off from h1; the first unreachable node (sorted) is named.
    assert "hosts[2].name: not connected to 'h1'" in msg
    assert "unreachable: h3, s2" in msg


def test_unknown_key_lists_allowed_keys() -> None:
    msg = _error(GOOD.replace("{a: h1, b: s1}", "{a: h1, b: s1, bw: 3}"))
    assert msg.startswith(
        "topologies/bad.yaml: links[0].bw: unknown key 'bw' (line 10); remove it or use one of: a, b,"
    )


def test_misspelt_top_level_key_is_reported_first() -> None:
    """hostz: makes hosts: missing too; the misspelling is the cause, so it is named."""
    msg = _error(GOOD.replace("hosts:", "hostz:"))
    assert msg.startswith("topologies/bad.yaml: hostz: unknown key 'hostz' (line 2) (+1 more error); "
                          "did you mean 'hosts'? (keys here: ")
    assert "\n" not in msg


def test_unknown_key_without_close_match_lists_keys() -> None:
    msg = _error(GOOD.replace("jobs:", "colour: red\njobs:"))
    assert "colour: unknown key 'colour' (line 14)" in msg and "remove it or use one of: name," in msg


@pytest.mark.parametrize(
    "old,new,key,line,first",
    [
        ("switches:\n", "hosts:\n  - {name: h9}\nswitches:\n", "hosts", 6, 2),  # top level
        ("{name: h1}", "{name: h1, name: h7}", "name", 3, 3),  # flow mapping in a list
        ("jobs:\n  - {id: 2, ranks: [h1, h2, h3]}", "jobs:\n  - id: 2\n    ranks: [h1, h2, h3]\n    id: 3", "id", 17, 15),
    ],
)
def test_duplicate_keys_are_rejected(old: str, new: str, key: str, line: int, first: int) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    msg = _error(text)
    assert msg == (f"topologies/bad.yaml: line {line}: duplicate key {key!r} (first on line {first}); "
                   "keep one of them (YAML would silently use the last)")


def test_duplicate_key_in_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "dup.yaml"
    bad.write_text(GOOD + "name: u\n")
    with pytest.raises(TopologyError) as info:
        load_topology(bad)
    assert str(info.value).startswith(f"{bad}: line 16: duplicate key 'name' (first on line 1)")


def test_yaml_merge_keys_may_override() -> None:
    text = GOOD.replace("  - {a: h1, b: s1}", "  - &l {a: h1, b: s1}").replace(
        "  - {a: s2, b: h3}", "  - {<<: *l, a: h3, b: s2}")
    topo = parse_topology(text, "m.yaml")
    assert [(link.a, link.b) for link in topo.links][-1] == ("h3", "s2")


def test_negative_bandwidth_exact_message() -> None:
    msg = _error(GOOD.replace("bandwidth_mbps: 20", "bandwidth_mbps: -5"))
    assert msg == (
        "topologies/bad.yaml: links[1].bandwidth_mbps: must be > 0, got -5 (line 11); "
        "give the link rate in Mbit/s (e.g. 10)"
    )


def test_yaml_syntax_error_has_line() -> None:
    msg = _error(GOOD.replace("  - {name: h1}", "  - {name: h1"))
    assert msg.startswith("topologies/bad.yaml: line ")
    assert "YAML syntax error" in msg


def test_not_a_mapping() -> None:
    assert "expected a mapping" in _error("- just\n- a list\n")


def test_missing_required() -> None:
    msg = _error(GOOD.replace("name: t\n", ""))
    assert "topologies/bad.yaml: name: required but missing" in msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(tmp_path / "nope.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'nope.yaml'}: (file): cannot read")
    assert "give a shipped name (" in str(info.value)


def test_a_misspelt_shipped_name_is_answered_with_the_closest(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="did you mean the shipped 'dumbbell'"):
        load_topology(resolve_topology("dumbell"))
    assert resolve_topology("dumbbell").name == "dumbbell.yaml"
    assert resolve_topology(None).name == "default.yaml"


def test_load_from_file_names_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("bandwidth_mbps: 20", "bandwidth_mbps: 0"))
    with pytest.raises(TopologyError) as info:
        load_topology(bad)
    assert str(info.value).startswith(f"{bad}: links[1].bandwidth_mbps: must be > 0, got 0")


def test_symphony_override_merges() -> None:
    topo = parse_topology(
        GOOD.replace("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], symphony: {slope: 1.0}}")
        + "symphony: {lead_threshold: 0}\n",
        "t.yaml",
    )
    params = topo.symphony_for(2)
    assert (params.lead_threshold, params.slope, params.queue_gate) == (0, 1.0, 1)


def test_dcqcn_known_params_pass() -> None:
    topo = parse_topology(GOOD + "dcqcn: {g: 0.125}\n", "t.yaml")
    assert topo.dcqcn_for(2) == {"g": 0.125}


# -- values with units (issue 9: a bare number keeps its documented unit) -------------


def test_values_with_units_convert_to_the_field_unit() -> None:
    text = (
        GOOD.replace("bandwidth_mbps: 20, delay_ms: 0.5", "bandwidth_mbps: 100Gbit/s, delay_ms: 2us")
        .replace("{id: 2, ranks", "{id: 2, size_bytes: 64KiB, compute_ms: 1.5s, step_timeout_s: 500ms, ranks")
        + "background: [{src: h1, dst: h3, rate_mbps: 12.5MB/s, on_ms: 0.1s, off_ms: 250us}]\n"
    )
    topo = parse_topology(text, "t.yaml")
    assert topo.links[1].bandwidth_mbps == 100_000.0 and topo.links[1].delay_ms == 0.002
    job = topo.job(2)
    assert (job.size_bytes, job.compute_ms, job.step_timeout_s) == (65_536, 1500.0, 0.5)
    flow = topo.background[0]
    assert (flow.rate_mbps, flow.on_ms, flow.off_ms) == (100.0, 100.0, 0.25)
    port = topo.plan.switch("s1").ports[1]
    assert port.rate_bps == 100e9 and port.delay_us == 2


def test_bare_numbers_keep_their_documented_unit() -> None:
    topo = parse_topology(GOOD.replace("{id: 2, ranks", "{id: 2, step_timeout_s: 3, ranks"), "t.yaml")
    assert topo.links[1].bandwidth_mbps == 20.0 and topo.links[1].delay_ms == 0.5
    assert topo.job(2).step_timeout_s == 3.0


def test_dcqcn_periods_accept_units() -> None:
    topo = parse_topology(GOOD + "dcqcn: {rate_increase_period: 5ms, byte_counter_bytes: 32KiB}\n", "t.yaml")
    assert topo.dcqcn_for(2) == {"rate_increase_period": 0.005, "byte_counter_bytes": 32768}


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("bandwidth_mbps: 20", "bandwidth_mbps: 5ms", "links[1].bandwidth_mbps", "'5ms' is not a rate"),
        ("bandwidth_mbps: 20", "bandwidth_mbps: 3 Gb/s", "links[1].bandwidth_mbps", "'Gbit/s', not 'Gb/s'"),
        ("delay_ms: 0.5", "delay_ms: 5 blorps", "links[1].delay_ms", "cannot read '5 blorps' as a duration (unknown unit)"),
        ("delay_ms: 0.5", "delay_ms: -2us", "links[1].delay_ms", "must be >= 0"),
        ("{id: 2,", "{id: 2, size_bytes: 1.5B,", "jobs[0].size_bytes", "not a whole number of B"),
        ("name: t\n", "name: t\ndcqcn: {g: 5ms}\n", "dcqcn.g", "not a number"),
        ("name: t\n", "name: t\ndcqcn: {rate_increase_period: 5Mbit/s}\n", "dcqcn.rate_increase_period",
         "is not a duration"),
    ],
)
def test_bad_units(old: str, new: str, field: str, words: str) -> None:
    assert old in GOOD
    msg = _error(GOOD.replace(old, new, 1))
    assert f"topologies/bad.yaml: {field}: " in msg and words in msg, msg
    assert "\n" not in msg


# -- thresholds that cannot work are rejected -------------------------------------------


def test_ecn_threshold_at_or_above_the_queue_depth_is_rejected() -> None:
    # Issue 9: ECN K = 100 on 64-packet queues was accepted and turned ECN off.
    msg = _error(GOOD + "ecn: {threshold_packets: 100}\n")
    assert msg.startswith("topologies/bad.yaml: ecn.threshold_packets: ECN threshold 100 packets is at or above"), msg
    assert "links[1] (h2-s1), 12 packets" in msg and "use a threshold below 12 packets" in msg, msg
    assert "\n" not in msg
    _error(GOOD + "ecn: {threshold_packets: 12}\n")  # == depth: never marks either
    assert parse_topology(GOOD + "ecn: {threshold_packets: 11}\n", "t.yaml").ecn.threshold_packets == 11
    # ECN off: any threshold is fine.
    parse_topology(GOOD + "ecn: {enabled: false, threshold_packets: 100}\n", "t.yaml")


def test_default_ecn_threshold_on_shallow_queues_says_default() -> None:
    msg = _error(GOOD.replace("queue_packets: 12", "queue_packets: 8"))
    assert "ECN threshold 10 packets (the default) is at or above" in msg, msg


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("symphony: {queue_gate: 64}\n", "symphony.queue_gate"),
        ("", "jobs[0].symphony.queue_gate"),
    ],
)
def test_queue_gate_at_or_above_the_depth_is_rejected(extra: str, field: str) -> None:
    text = GOOD + extra
    if not extra:
        text = text.replace("{id: 2, ranks", "{id: 2, symphony: {queue_gate: 20}, ranks")
    msg = _error(text)
    assert f"topologies/bad.yaml: {field}: queue gate" in msg and "Symphony never marks" in msg, msg


def test_dcqcn_timer_longer_than_the_run_is_rejected() -> None:
    # Issue 9: 'rate_increase_period: 5' meant five seconds; the job's whole run takes
    # 5 iterations x 2(3-1)/3 * 256 KiB / 10 Mbit/s = 1.4 s at the bandwidth bound.
    msg = _error(GOOD + "dcqcn: {rate_increase_period: 5}\n")
    assert msg.startswith(
        "topologies/bad.yaml: dcqcn.rate_increase_period: rate_increase_period = 5 s is longer than job 2's whole run"
    ), msg
    assert "'rate_increase_period: 5ms'" in msg and "a bare number is in seconds" in msg, msg
    per_job = GOOD.replace("{id: 2, ranks", "{id: 2, dcqcn: {alpha_update_period: 2}, ranks")
    assert "jobs[0].dcqcn.alpha_update_period" in _error(per_job)
    assert parse_topology(GOOD + "dcqcn: {rate_increase_period: 1}\n", "t.yaml")


def test_ecn_ramp_and_shorthand() -> None:
    """threshold_packets K is kmin = kmax = K; a ramp gives both ends (docs/topology-format.md)."""
    default = parse_topology(GOOD, "t.yaml").ecn
    assert (default.kmin_packets, default.kmax_packets, default.threshold_packets, default.pmax) == (10, 10, 10, 1.0)
    step = parse_topology(GOOD + "ecn: {threshold_packets: 3}\n", "t.yaml").ecn
    assert (step.kmin_packets, step.kmax_packets) == (3, 3)
    ramp = parse_topology(GOOD + "ecn: {kmin_packets: 5, kmax_packets: 20, pmax: 0.2}\n", "t.yaml").ecn
    assert (ramp.kmin_packets, ramp.kmax_packets, ramp.pmax, ramp.threshold_packets) == (5, 20, 0.2, None)


@pytest.mark.parametrize(("ecn", "field", "words"), [
    ("{threshold_packets: 3, kmin_packets: 2}", "ecn.kmin_packets", "given together with threshold_packets"),
    ("{kmin_packets: 2}", "ecn.kmax_packets", "required when the other end of the ramp is given"),
    ("{kmin_packets: 9, kmax_packets: 4}", "ecn.kmax_packets", "must be >= kmin_packets = 9, got 4"),
    ("{kmin_packets: 2, kmax_packets: 4, pmax: 0}", "ecn.pmax", "must be > 0"),
    ("{kmin_packets: 12, kmax_packets: 20}", "ecn.kmin_packets", "ECN threshold 12 packets is at or above"),
    ("{threshold_packets: 3, pmax: 0.5}", "ecn.pmax", "given together with threshold_packets"),
    ("{kmin_packets: 3, kmax_packets: 3, pmax: 0.5}", "ecn.pmax", "no effect when kmin_packets == kmax_packets = 3"),
    ("{pmax: 0.5}", "ecn.pmax", "given without a ramp"),
])
def test_ecn_ramp_errors(ecn: str, field: str, words: str) -> None:
    msg = _error(GOOD + f"ecn: {ecn}\n")
    assert f": {field}: " in msg and words in msg, msg


def test_pmax_with_a_preset_overrides_only_pmax() -> None:
    """A preset's ramp with the file's pmax: pmax alone is not contradictory there."""
    dc = (Path(__file__).resolve().parents[2] / "topologies" / "dc-leafspine-16.yaml").read_text()
    assert "\necn:" not in dc
    ecn = parse_topology(dc + "ecn: {pmax: 0.5}\n", "dc.yaml").ecn
    assert (ecn.kmin_packets, ecn.kmax_packets, ecn.pmax) == (97, 389, 0.5)


# -- networking rate spellings (Kbps/Mbps/Gbps/Tbps are bit/s) -----------------------


@pytest.mark.parametrize(
    ("text", "mbps"),
    [("100Gbps", 100_000.0), ("10Mbps", 10.0), ("1Gbps", 1000.0), ("1.5 Tbps", 1.5e6), ("500Kbps", 0.5),
     ("500kbps", 0.5), ("2e6 bps", 2.0)],
)
def test_networking_rate_spellings_are_bits_per_second(
    text: str, mbps: float, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        topo = parse_topology(GOOD.replace("bandwidth_mbps: 20", f"bandwidth_mbps: {text}", 1), "t.yaml")
        assert topo.links[1].bandwidth_mbps == pytest.approx(mbps)
        topo = parse_topology(GOOD.replace("name: t\n", f"name: t\ndefaults: {{bandwidth_mbps: {text}}}\n"), "t.yaml")
        assert topo.defaults.bandwidth_mbps == pytest.approx(mbps)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.records


def test_pint_ambiguity_warning_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    # 'Gbps/2' goes to pint, which alone logs "Parsing Gbps yield multiple results".
    with caplog.at_level(logging.DEBUG):
        msg = _error(GOOD.replace("bandwidth_mbps: 20", "bandwidth_mbps: 3 Gbps/2", 1))
    assert "is not a rate" in msg and "\n" not in msg, msg
    assert not [r for r in caplog.records if "multiple results" in r.getMessage()]


def test_rate_error_suggests_values_that_are_accepted() -> None:
    msg = _error(GOOD.replace("bandwidth_mbps: 20", "bandwidth_mbps: 3 mbps", 1))
    assert "'3 mbps' is not a rate" in msg and "\n" not in msg, msg
    suggested = re.findall(r"such as ((?:'[^']+'(?:, )?)+)", msg)[0]
    for example in re.findall(r"'([^']+)'", suggested):
        assert to_unit(example, "Mbit/s", "rate") > 0, example


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("delay_ms: 0.5,", "delay_ms: .inf,", "links[1].delay_ms", "not a finite number"),
        ("delay_ms: 0.5,", "delay_ms: 1e400,", "links[1].delay_ms", "not a finite number"),
        ("bandwidth_mbps: 20,", "bandwidth_mbps: .inf,", "links[1].bandwidth_mbps", "not a finite number"),
        ("bandwidth_mbps: 20,", "bandwidth_mbps: 100Tbit/s,", "links[1].bandwidth_mbps", "10000000"),
        ("delay_ms: 0.5,", "delay_ms: 60s,", "links[1].delay_ms", "10000"),
        ("queue_packets: 12", "queue_packets: true", "links[1].queue_packets", "valid integer"),
        ("queue_packets: 12", "queue_packets: 12.0", "links[1].queue_packets", "valid integer"),
        ("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], step_timeout_s: .inf}", "jobs[0].step_timeout_s", "finite"),
        ("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], compute_ms: .nan}", "jobs[0].compute_ms", "finite"),
        ("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], iterations: true}", "jobs[0].iterations", "valid integer"),
        ("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], warmup: -1}", "jobs[0].warmup", ">= 0"),
    ],
)
def test_numbers_finite_plausible_and_typed(old: str, new: str, field: str, words: str) -> None:
    """Issue 19: .inf / 1e400 gave an OverflowError traceback or failed after the network
    started naming no field; `queue_packets: true` was read as 1. Now one line before anything."""
    assert old in GOOD
    msg = _error(GOOD.replace(old, new, 1))
    assert f": {field}: " in msg and words in msg, msg


def test_warmup_defaults_to_one_iteration() -> None:
    topo = parse_topology(GOOD, "t.yaml")
    assert topo.jobs[0].warmup == 1
    assert parse_topology(GOOD.replace("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], warmup: 0}"), "t.yaml").jobs[0].warmup == 0


def test_binary_file_is_one_line(tmp_path: Path) -> None:
    """Issue 19: a binary topology file gave a UnicodeDecodeError traceback."""
    path = tmp_path / "t.yaml"
    path.write_bytes(b"\x8a\x00\xffname: x\n")
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    assert str(err.value) == (f"{path}: (file): not a UTF-8 text file (byte 0x8a at offset 0); "
                              "give a YAML topology file (docs/topology-format.md)")


def _star(hosts: int, ecn: str) -> str:
    """One switch with ``hosts`` hosts, one job of two ranks, the ECN section ``ecn``."""
    names = [f"h{i}" for i in range(1, hosts + 1)]
    return ("name: star\nhosts:\n" + "".join(f"  - {{name: {h}}}\n" for h in names)
            + "switches:\n  - {name: s1}\nlinks:\n" + "".join(f"  - {{a: {h}, b: s1}}\n" for h in names)
            + "jobs:\n  - {id: 0, ranks: [h1, h2], size_bytes: 64KiB}\n" + ecn)


def test_queue_ecn_entries_must_fit_the_p4_table() -> None:
    """65 ports x 32 ramp ranges = 2080 > QUEUE_ECN_ENTRIES (2048): rejected at load, naming the switch,
    its ports and the limit (it used to fail while programming the started switch); 64 ports or a
    step (one entry per port) fit."""
    ramp = "ecn: {kmin_packets: 10, kmax_packets: 200, pmax: 0.2}\n"
    msg = _error(_star(65, ramp))
    assert "switch 's1' has 65 ports x 32 ECN ramp ranges = 2080 queue_ecn entries" in msg and "2048" in msg
    assert "at most 64 ports" in msg
    parse_topology(_star(64, ramp), "t.yaml")
    parse_topology(_star(65, "ecn: {threshold_packets: 10}\n"), "t.yaml")


def test_step_timeout_shorter_than_a_path_delay_is_rejected_at_load() -> None:
    """New-user check, 2026-12-04: a link delay above the step timeout failed only at run time
    (every step timed out). Now the load names the job's field, the flow and its path; a timeout
    just above the path's delay (h2 -> s1 -> s2 -> h3: 0.5 + 3000 + 0.1 ms) loads."""
    slow = GOOD.replace("{a: s1, b: s2}", "{a: s1, b: s2, delay_ms: 3s}")
    msg = _error(slow.replace("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], step_timeout_s: 2s}"))
    assert "jobs[0].step_timeout_s" in msg and "3.0006 s" in msg and "h2 -> s1 -> s2 -> h3" in msg
    topo = parse_topology(slow.replace("ranks: [h1, h2, h3]}", "ranks: [h1, h2, h3], step_timeout_s: 3.001s}"),
                          "t.yaml")
    assert topo.jobs[0].step_timeout_s == pytest.approx(3.001)
