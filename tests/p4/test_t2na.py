"""The Tofino2 build (p4/tofino/symphony.p4) on the embedded switch's T2NA architecture:
the same packets, table entries and seed give the same output and state as the v1model
build (docs/DESIGN.md section 10), and the T2NA-specific semantics (cells, bridging,
RegisterAction, Hash, Checksum) behave as emu/embedded/t2na.py documents."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emu.embedded.core import SwitchCore
from emu.embedded.errors import P4FrontendError
from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline
from emu.embedded.t2na import CELL_BYTES, qdepth_cells
from emu.p4names import TABLE_QUEUE_ECN, TABLE_SYMPHONY
from emu.routing import switch_programs
from emu.topology import load_topology
from hostapps.wire import CTH

from .test_runtime import MAC_D, MAC_S, _random_frames, _state, queue_step
from .test_runtime import program_mixed as program

ROOT = Path(__file__).resolve().parents[2]
V1MODEL = load_program(ROOT / "p4" / "symphony.p4")
T2NA = load_program(ROOT / "p4" / "tofino" / "symphony.p4")


@pytest.mark.parametrize("optimize", [True, False])
def test_same_packets_entries_and_seed_give_the_same_output_and_state(optimize: bool) -> None:
    """v1model and T2NA builds, fed the same 800 seeded frames (valid, malformed, every job
    mode) and the same queue depths, emit the same frames and end in the same registers,
    counters and drop counts: one algorithm, two architectures."""
    pipes = [Pipeline(V1MODEL, seed=11, optimize=optimize), Pipeline(T2NA, seed=11, optimize=optimize)]
    for pl in pipes:
        program(pl)
    assert pipes[0].qdepth_unit is None and pipes[1].qdepth_unit is qdepth_cells
    rng = random.Random(99)
    frames = _random_frames(rng, 800)
    outs: list[list] = [[], []]
    for i, f in enumerate(frames):
        port = rng.randrange(1, 5)
        q = rng.choice([0, 1, 3, 4, 9, 10, 11, 40, (1 << 19) - 1])
        for pl, out in zip(pipes, outs, strict=True):
            st = pl.ingress(f, port, 1000 + i)
            if st is None:
                out.append(None)
                continue
            res = pl.egress(st, egress_port=st.egress_spec, enq_qdepth=q, deq_qdepth=q, deq_timedelta_us=i,
                            enq_timestamp_us=1000 + i, now_us=1010 + i)
            out.append((st.egress_spec, st.packet_length, res))
    assert outs[0] == outs[1]
    forwarded = [o for o in outs[0] if o is not None and o[2] is not None]
    assert len(forwarded) > 100
    assert sum(1 for o, f in zip(outs[0], frames, strict=True) if o and o[2] and o[2] != f) > 100
    s0, s1 = _state(pipes[0]), _state(pipes[1])
    assert s0[0] == s1[0]  # registers (step_count read as step << 16 | count on both)
    assert s0[1] == s1[1]  # counters
    assert {k: s0[2][k] for k in ("ingress_drops", "egress_drops", "packets_out")} == \
           {k: s1[2][k] for k in ("ingress_drops", "egress_drops", "packets_out")}
    # the comparison covered marking of both kinds, drops and parser errors
    for counter in ("MyEgress.symphony_marks", "MyEgress.queue_marks", "MyIngress.drops", "MyIngress.parser_errors"):
        assert sum(p for p, _b in s0[1][counter]) > 0, counter


def test_the_controller_programs_both_builds() -> None:
    """Every entry switch_programs makes for the T2NA build (cells) is accepted by it."""
    topo = load_topology(ROOT / "topologies" / "default.yaml")
    for p4, prog in (("v1model", V1MODEL), ("tofino", T2NA)):
        for sw, sp in switch_programs(topo, "symphony", p4=p4).items():
            pl = Pipeline(prog)
            for e in sp.entries:
                pl.table_add(e.table, e.match, e.action, e.params, e.priority)
            gate = [e.params["queue_gate"] for e in sp.entries if e.table == TABLE_SYMPHONY]
            assert gate and set(gate) == {9 if p4 == "tofino" else 1}, sw
            kmin = {e.match["meta.enq_qdepth"][0] for e in sp.entries if e.table == TABLE_QUEUE_ECN}
            assert kmin == {27 if p4 == "tofino" else 3}, sw


def test_queue_depth_reaches_egress_in_cells() -> None:
    """On a switch core, a T2NA packet sees the cells (not packets) queued ahead of it."""
    pl = Pipeline(T2NA, seed=1)
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"}, "MyIngress.ipv4_forward",
                 {"srcAddr": MAC_S, "dstAddr": MAC_D, "port": 2})
    queue_step(pl, 2, 9)
    core = SwitchCore(pl, [1, 2])
    core.set_queue(2, rate_bps=1e6, depth_pkts=8, delay_us=0)
    big = bytes(Ether() / IP(dst="10.0.1.2", tos=2) / UDP(sport=1, dport=5001) / bytes(1472))
    small = bytes(Ether() / IP(dst="10.0.1.2", tos=2) / UDP(sport=1, dport=5001) / bytes(20))
    assert qdepth_cells(type("I", (), {"packet_length": len(big)})()) == -(-len(big) // CELL_BYTES) == 9
    for f in (big, small, big, small):
        core.receive(1, f, 0)
    out = []
    for t in range(0, 100_000, 100):
        out += [fr for _p, fr in core.poll(t)]
    ecn = [Ether(f)[IP].tos & 3 for f in out]
    # the first is in service at once; the second finds 0 cells waiting, the third 1 (the
    # small frame), the fourth 1 + 9 = 10 >= 9: CE. In packets, none would reach 9.
    assert ecn == [2, 2, 2, 3]


def test_t2na_programs_name_what_is_unsupported(tmp_path: Path) -> None:
    text = (ROOT / "p4" / "tofino" / "symphony.p4").read_text().replace(
        "Random<bit<16>>() ecn_random;", "Meter<bit<16>>(4) ecn_random;")
    bad = tmp_path / "bad.p4"
    bad.write_text(text.replace('"../include/', f'"{ROOT}/p4/include/'))
    with pytest.raises(P4FrontendError, match=r"bad.p4:\d+: unsupported extern Meter"):
        Pipeline(load_program(bad))


def test_cth_header_in_scapy_is_what_the_t2na_parser_reads() -> None:
    pl = Pipeline(T2NA, seed=1)
    program(pl)
    data = bytes(Ether() / IP(dst="10.0.1.2", tos=2) / UDP(sport=4793, dport=4793)
                 / CTH(type=1, job_id=0, step=3, src_rank=0, dst_rank=1, psn=1) / b"x")
    port, out = pl.process(data, 1)
    assert port == 2 and Ether(out)[IP].tos & 3 == 3  # lead 3 > T = 1: marked with probability 1
    assert pl.register_read("MyIngress.flow_step", 0) == 3
    assert pl.register_read("MyIngress.step_count", 3) == (3 << 16) | 1


def test_both_builds_expose_the_same_control_plane() -> None:
    """Tables, keys, actions, parameters, registers and counters: the same names, widths and
    P4Runtime ids (P4Info from the front end), so one controller programs both builds."""
    from emu.embedded.p4info import build_p4info

    infos = [build_p4info(Pipeline(prog)) for prog in (V1MODEL, T2NA)]
    for part in ("tables", "actions", "registers", "counters"):
        a, b = (sorted(getattr(i, part), key=lambda x: x.preamble.name) for i in infos)
        assert [x.SerializeToString(deterministic=True) for x in a] == \
               [x.SerializeToString(deterministic=True) for x in b], part
    assert {t.preamble.name for t in infos[0].tables} == {
        "MyIngress.ipv4_lpm", "MyIngress.symphony_config", "MyIngress.ecmp_nhop", "MyIngress.path_pin",
        "MyEgress.queue_ecn", "MyEgress.symphony_marking", "MyEgress.placebo_marking",
        "MyIngress.symphony_tracker", "MyIngress.symphony_slack", "MyEgress.symphony_spacing"}


@pytest.mark.parametrize(("old", "new", "words"), [
    ("    RegisterAction<bit<16>, tracker_index_t, bit<16>>(frontier) advance_frontier = {\n        void apply(",
     "    RegisterAction<bit<16>, tracker_index_t, bit<16>>(frontier) advance_frontier = {\n        void other(",
     "RegisterAction advance_frontier does not implement apply"),
    ("void apply(inout bit<16> value, out bit<1> entered)", "void apply(in bit<16> value, out bit<1> entered)",
     "apply must be (inout T value[, out U rv])"),
    ("RegisterAction<bit<16>, flow_index_t, bit<1>>(flow_step)", "RegisterAction<bit<16>, flow_index_t, bit<1>>(drops)",
     "drops is not a Register of this control"),
    ("Hash<flow_index_t>(HashAlgorithm_t.IDENTITY) flow_index_hash;",
     "Hash<flow_index_t>(HashAlgorithm_t.CRC64) flow_index_hash;", "unsupported hash algorithm CRC64"),
])
def test_t2na_mistakes_name_file_and_line(tmp_path: Path, old: str, new: str, words: str) -> None:
    text = (ROOT / "p4" / "tofino" / "symphony.p4").read_text()
    assert old in text
    bad = tmp_path / "bad.p4"
    bad.write_text(text.replace(old, new, 1).replace('"../include/', f'"{ROOT}/p4/include/'))
    with pytest.raises(P4FrontendError, match=r"bad.p4:\d+: " + words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        Pipeline(load_program(bad))


def test_egress_intrinsic_metadata_has_tofino2_widths() -> None:
    """enq_tstamp and deq_timedelta are 32-bit on Tofino2 (Tofino1: 18): 300 us = 300,000 ns
    in the queue and an enqueue at 5 s arrive whole; the header is 28 bytes (a trailing pad
    byte), so the fields after it (enq_qdepth, pkt_length) are read at the right offsets."""
    prog = load_program(ROOT / "tests" / "p4" / "t2na" / "egress_md.p4")
    pl = Pipeline(prog, seed=1)
    frame = bytes(14) + bytes(16) + bytes(30)
    st = pl.ingress(frame, 1, 0)
    assert st is not None and st.egress_spec == 2
    out = pl.egress(st, egress_port=2, enq_qdepth=12345, deq_qdepth=0, deq_timedelta_us=300,
                    enq_timestamp_us=5_000_000, now_us=5_000_300)
    assert out is not None
    stamp = out[14:30]
    enq_ts, deq_td, qdepth = (int.from_bytes(stamp[i:i + 4], "big") for i in (0, 4, 8))
    assert deq_td == 300_000  # > 2^18 ns
    assert enq_ts == (5_000_000 * 1000) & 0xFFFFFFFF
    assert qdepth == 12345
    assert int.from_bytes(stamp[12:14], "big") == len(frame)


SELECTOR = ROOT / "tests" / "p4" / "t2na" / "action_selector.p4"


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "reference"])
def test_action_selector_vectors(optimize: bool) -> None:
    """ActionProfile + ActionSelector (both forms): the members action_selector.stf computes by hand."""
    from emu.embedded.stf import run_stf

    result = run_stf(SELECTOR, SELECTOR.with_suffix(".stf"),
                     pipeline=Pipeline(load_program(SELECTOR), seed=1, optimize=optimize))
    failed = [str(o) for o in result.outcomes if not o.ok]
    assert not failed, "\n".join(failed)
    assert len(result.outcomes) == 8


def test_action_selector_group_limits_and_mistakes(tmp_path: Path) -> None:
    from emu.control import TableFullError

    pl = Pipeline(load_program(SELECTOR), seed=1)
    assert pl.action_profile("Ig.paths") is pl.action_profile("Ig.paths_ap")  # one object, two names
    for m in range(5):
        pl.act_prof_create_member("paths", m, "Ig.set_port", {"p": m})
    pl.act_prof_create_group("paths", 1)
    pl.act_prof_create_group("paths", 2)
    with pytest.raises(TableFullError, match="Ig.paths_ap: 2 groups already"):
        pl.act_prof_create_group("paths", 3)
    for m in range(4):
        pl.act_prof_add_member_to_group("paths", m, 1)
    with pytest.raises(TableFullError, match="group 1 has 4 members already"):
        pl.act_prof_add_member_to_group("paths", 4, 1)
    text = SELECTOR.read_text()
    bad = tmp_path / "bad.p4"
    bad.write_text(text.replace("ActionSelector(paths_ap, path_hash,", "ActionSelector(lane_hash, path_hash,"))
    with pytest.raises(P4FrontendError, match=r"bad.p4:\d+: ActionSelector paths: its first argument must be an "
                                              "ActionProfile"):
        Pipeline(load_program(bad))
