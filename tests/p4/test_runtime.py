"""v1model runtime: symphony.p4 packet in -> packet out + register/counter state (scapy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emu.embedded.errors import ControlError
from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline, csum16
from emu.p4names import MAX_QDEPTH, PROB_ONE
from emu.routing import symphony_threshold
from hostapps.wire import CTH, ECN_CE, ECN_ECT0, ECN_NOT_ECT, STEP_WINDOW

from .p4util import write_program

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = load_program(ROOT / "p4" / "symphony.p4")
MAC_S, MAC_D = "00:00:00:00:0a:01", "00:00:00:00:0a:02"


def frame(dst: str = "10.0.1.2", *, tos: int = ECN_ECT0, ttl: int = 64, job: int = 0, step: int = 0,
          rank: int = 0, ctype: int = 1, size: int = 200, cth: bool = True, dport: int = 4793) -> bytes:
    p = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IP(src="10.0.0.1", dst=dst, tos=tos, ttl=ttl)
    p = p / UDP(sport=1234, dport=dport)
    if cth:
        p = p / CTH(type=ctype, job_id=job, step=step, src_rank=rank, dst_rank=(rank + 1) % 64, psn=7)
    pad = size - len(p)
    return bytes(p / (bytes(range(256)) * 8)[:max(pad, 0)])


@pytest.fixture
def pipe() -> Pipeline:
    pl = Pipeline(PROGRAM, seed=7)
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.ipv4_forward",
                 {"srcAddr": "00:00:00:00:08:01", "dstAddr": "00:00:00:00:08:02", "port": 3})
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"}, "MyIngress.ipv4_forward",
                 {"srcAddr": MAC_S, "dstAddr": MAC_D, "port": 2})
    queue_step(pl, 2, 10)
    return pl


def queue_step(pl: Pipeline, port: int, k: int) -> None:
    """Queue-depth ECN at K packets on ``port`` (kmin = kmax = K: always at or above K)."""
    pl.table_add("MyEgress.queue_ecn", {"meta.egress_port": port, "meta.enq_qdepth": [k, MAX_QDEPTH]},
                 "MyEgress.set_ecn_mark", {"threshold": PROB_ONE}, priority=1)


def configure(pl: Pipeline, *, flows: int = 2, threshold: int = 1, slope: float = 1.0, gate: int = 0,
              mode: int = 1, job: int = 0) -> None:
    """symphony_config of ``job`` plus its symphony_marking curve from T and slope (emu.routing)."""
    pl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": job}, "MyIngress.set_symphony_config",
                 {"flows": flows, "queue_gate": gate, "mode": mode})
    for lead in range(1, 64):
        value = symphony_threshold(lead, threshold, slope)
        if value:
            pl.table_add("MyEgress.symphony_marking", {"hdr.cth.job_id": job, "meta.lead": lead},
                         "MyEgress.set_symphony_mark", {"threshold": value})


def slot(step: int, count: int) -> int:
    """A step_count slot: step id in the high 16 bits, count in the low 16."""
    return (step << 16) | count


def run(pl: Pipeline, data: bytes, *, port: int = 1, qdepth: int = 0) -> tuple[int, Ether] | None:
    st = pl.ingress(data, port, 1000)
    if st is None:
        return None
    out = pl.egress(st, egress_port=st.egress_spec, enq_qdepth=qdepth, deq_qdepth=qdepth,
                    deq_timedelta_us=0, enq_timestamp_us=1000, now_us=1010)
    return None if out is None else (st.egress_spec, Ether(out))


def test_lpm_longest_prefix_wins(pipe: Pipeline) -> None:
    assert run(pipe, frame("10.0.1.9"))[0] == 2
    assert run(pipe, frame("10.7.7.7"))[0] == 3
    pipe.table_delete("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"})
    assert run(pipe, frame("10.0.1.9"))[0] == 3


def test_exact_table_empty_then_filled_then_cleared(pipe: Pipeline) -> None:
    """An exact table's lookup is skipped while it is empty (CodeGen.apply_table: its dict is tested
    first); entries added later, and a clear, are seen by the next packet."""
    assert "if _X_MyIngress_path_pin" in pipe.source
    assert run(pipe, frame("10.0.1.9"))[0] == 2
    pin = {"hdr.ipv4.srcAddr": "10.0.0.1", "hdr.ipv4.dstAddr": "10.0.1.9"}
    pipe.table_add("MyIngress.path_pin", pin, "MyIngress.ipv4_forward",
                   {"srcAddr": MAC_S, "dstAddr": MAC_D, "port": 7})
    assert run(pipe, frame("10.0.1.9"))[0] == 7
    assert run(pipe, frame("10.0.1.8"))[0] == 2
    pipe.table_clear("MyIngress.path_pin")
    assert run(pipe, frame("10.0.1.9"))[0] == 2


def test_miss_drops_and_counts(pipe: Pipeline) -> None:
    assert run(pipe, frame("192.168.1.1"), port=4) is None
    assert pipe.counter_read("MyIngress.drops", 4)[0] == 1
    assert pipe.counter_read("MyIngress.parser_errors", 4) == (0, 0)
    assert pipe.stats["ingress_drops"] == 1


def test_forward_rewrites_macs_ttl_and_checksum(pipe: Pipeline) -> None:
    data = frame("10.0.1.2", ttl=9, size=300)
    port, out = run(pipe, data)
    assert port == 2
    assert (out.src, out.dst) == (MAC_S, MAC_D)
    assert out[IP].ttl == 8
    got = out[IP].chksum
    ip = out[IP].copy()
    del ip.chksum
    assert IP(bytes(ip))[IP].chksum == got
    assert bytes(out)[14 + 20:] == data[14 + 20:]  # UDP, CTH and payload untouched
    assert len(bytes(out)) == len(data)


def test_ttl_one_is_dropped(pipe: Pipeline) -> None:
    assert run(pipe, frame(ttl=1)) is None


def test_csum16_matches_rfc1071_example() -> None:
    # RFC 1071 section 3 example words: 0x0001 0xf203 0xf4f5 0xf6f7 -> sum 0xddf2, checksum 0x220d
    assert csum16(0x0001F203F4F5F6F7, 64) == 0x220D
    assert csum16(0, 32) == 0xFFFF


def test_queue_ce_marking_at_threshold_only_on_ect(pipe: Pipeline) -> None:
    configure(pipe, mode=0)
    assert run(pipe, frame(tos=ECN_ECT0), qdepth=9)[1][IP].tos & 3 == ECN_ECT0
    assert run(pipe, frame(tos=ECN_ECT0), qdepth=10)[1][IP].tos & 3 == ECN_CE
    assert run(pipe, frame(tos=ECN_ECT0 | 0xB8), qdepth=500)[1][IP].tos == 0xB8 | ECN_CE  # DSCP kept
    assert run(pipe, frame(tos=ECN_NOT_ECT), qdepth=500)[1][IP].tos & 3 == ECN_NOT_ECT
    assert run(pipe, frame(tos=ECN_NOT_ECT, cth=False, dport=5001), qdepth=500)[1][IP].tos == 0
    assert pipe.counter_read("MyEgress.queue_marks", 0)[0] == 2
    assert pipe.counter_read("MyEgress.symphony_marks", 0)[0] == 0


def test_frontier_advances_only_when_every_flow_entered(pipe: Pipeline) -> None:
    configure(pipe, flows=3)
    front = lambda: pipe.register_read("MyIngress.frontier", 0)  # noqa: E731
    run(pipe, frame(rank=0, step=1))
    run(pipe, frame(rank=1, step=1))
    assert front() == 0
    assert pipe.register_read("MyIngress.step_count", 1) == slot(1, 2)
    run(pipe, frame(rank=1, step=1))  # same flow again: not counted twice
    assert pipe.register_read("MyIngress.step_count", 1) == slot(1, 2) and front() == 0
    run(pipe, frame(rank=2, step=1))
    assert front() == 1
    assert pipe.register_read("MyIngress.flow_step", 2) == 1
    # other job untouched
    assert pipe.register_read("MyIngress.frontier", 1) == 0


def test_lead_wraps_at_16_bits(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=0, slope=1.0)
    for r in (0, 1):
        pipe.register_write("MyIngress.flow_step", r, 65535)
    pipe.register_write("MyIngress.frontier", 0, 65535)
    pipe.register_write("MyIngress.step_count", 65535 % STEP_WINDOW, slot(65535, 2))
    _, out = run(pipe, frame(rank=0, step=0))  # lead = 0 - 65535 = 1 (mod 2^16) > T=0
    assert out[IP].tos & 3 == ECN_CE
    assert pipe.register_read("MyIngress.step_count", 0) == slot(0, 1)
    _, out = run(pipe, frame(rank=1, step=65535))  # lagging flow, lead 0
    assert out[IP].tos & 3 == ECN_ECT0
    _, out = run(pipe, frame(rank=1, step=0))  # everyone in step 0: frontier wraps to 0
    assert pipe.register_read("MyIngress.frontier", 0) == 0
    assert out[IP].tos & 3 == ECN_ECT0
    assert pipe.counter_read("MyEgress.symphony_marks", 0)[0] == 1


def test_lost_steps_never_stall_the_frontier(pipe: Pipeline) -> None:
    """A flow whose packets of several steps were all lost upstream re-enters further on."""
    configure(pipe, flows=2)
    front = lambda: pipe.register_read("MyIngress.frontier", 0)  # noqa: E731
    for step in range(1, 8):
        run(pipe, frame(rank=0, step=step))
    run(pipe, frame(rank=1, step=1))
    assert front() == 1
    run(pipe, frame(rank=1, step=6))  # steps 2-5 of rank 1 never came
    assert front() == 6
    run(pipe, frame(rank=1, step=7))
    assert front() == 7


def test_step_count_slots_reset_lazily_across_windows(pipe: Pipeline) -> None:
    """Step s + k*W reuses slot s mod W: the stale count is replaced, never added to."""
    configure(pipe, flows=2)
    for k in range(3):
        step = 9 + k * STEP_WINDOW
        for r in (0, 1):
            pipe.register_write("MyIngress.flow_step", r, step - 1)
        pipe.register_write("MyIngress.frontier", 0, step - 1)
        run(pipe, frame(rank=0, step=step))
        assert pipe.register_read("MyIngress.step_count", 9) == slot(step, 1)
        assert pipe.register_read("MyIngress.frontier", 0) == step - 1
        run(pipe, frame(rank=1, step=step))
        assert pipe.register_read("MyIngress.step_count", 9) == slot(step, 2)
        assert pipe.register_read("MyIngress.frontier", 0) == step


def test_each_tracker_register_is_accessed_once_per_packet() -> None:
    """DESIGN 4: one read and one write per register, at one index, so one RegisterAction on
    Tofino; and no run-time multiplication (indices are shifts)."""
    import re

    text = (ROOT / "p4" / "symphony.p4").read_text()
    ingress = text[text.index("control MyIngress("):text.index("control MyEgress(")]
    code = re.sub(r"/\*.*?\*/", "", ingress, flags=re.S)
    for reg in ("flow_step", "step_count", "frontier"):
        assert len(re.findall(rf"\b{reg}\.read\(", code)) == 1, reg
        assert len(re.findall(rf"\b{reg}\.write\(", code)) == 1, reg
        read_index = re.search(rf"\b{reg}\.read\(\w+, (\w+)\)", code).group(1)
        write_index = re.search(rf"\b{reg}\.write\((\w+),", code).group(1)
        assert read_index == write_index, reg
    egress = text[text.index("control MyEgress("):text.index("control MyComputeChecksum(")]
    assert not re.search(r"[\w)]\s*\*\s*[\w(]", re.sub(r"/\*.*?\*/", "", ingress + egress, flags=re.S))


def test_outpacing_flows_marked_lagging_not(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=1, slope=1.0)  # probability 1 once lead > T
    marks = {0: 0, 1: 0}
    for _ in range(40):
        for rank, step in ((0, 3), (1, 0)):
            _, out = run(pipe, frame(rank=rank, step=step))
            marks[rank] += (out[IP].tos & 3) == ECN_CE
    assert marks == {0: 40, 1: 0}
    assert pipe.counter_read("MyEgress.symphony_marks", 0)[0] == 40


def test_slope_gives_fractional_probability(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=1, slope=0.25)  # lead 2 -> (2-1)*0.25
    run(pipe, frame(rank=1, step=0))
    # n ~ Binomial(400, 0.25): mean 100, sd 8.7; the bounds are 4.6 sd away, and probabilities of
    # 0.125 (mean 50) or 0.5 (mean 200), a slope or lead off by one, fall outside them
    n = sum((run(pipe, frame(rank=0, step=2))[1][IP].tos & 3) == ECN_CE for _ in range(400))
    assert 60 < n < 140


def test_queue_gate_blocks_symphony_marks(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=0, slope=1.0, gate=5)
    assert run(pipe, frame(rank=0, step=4), qdepth=4)[1][IP].tos & 3 == ECN_ECT0
    assert run(pipe, frame(rank=0, step=4), qdepth=5)[1][IP].tos & 3 == ECN_CE


def test_baseline_mode_never_symphony_marks(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=0, slope=1.0, mode=0)
    for _ in range(20):
        assert run(pipe, frame(rank=0, step=9))[1][IP].tos & 3 == ECN_ECT0
    assert pipe.counter_read("MyEgress.symphony_marks", 0) == (0, 0)


def test_non_data_and_unconfigured_not_tracked(pipe: Pipeline) -> None:
    configure(pipe, flows=2, threshold=0)
    ack = run(pipe, frame(rank=0, step=5, ctype=2))  # ACK
    other = run(pipe, frame(rank=0, step=5, job=3))  # no config for job 3
    # both forwarded unmarked: a tracked DATA packet of step 5 (rank 1 still at 0) would have
    # lead 5 > T = 0 and be marked with probability 1 (slope 1), as the last one below is
    assert ack is not None and ack[0] == 2 and ack[1][IP].tos & 3 == ECN_ECT0
    assert other is not None and other[0] == 2 and other[1][IP].tos & 3 == ECN_ECT0
    assert pipe.register_read("MyIngress.flow_step", 0) == 0
    assert pipe.register_read("MyIngress.flow_step", 3 * 64) == 0
    assert pipe.register_read("MyIngress.step_count", 5) == 0
    assert pipe.register_read("MyIngress.step_count", 3 * STEP_WINDOW + 5) == 0
    # the same DATA packet of the configured job is tracked (proves the reads above can see it)
    assert run(pipe, frame(rank=0, step=5))[1][IP].tos & 3 == ECN_CE
    assert pipe.register_read("MyIngress.flow_step", 0) == 5
    assert pipe.register_read("MyIngress.step_count", 5) == slot(5, 1)


def _truncated(n: int) -> bytes:
    return frame(size=60)[:n]


@pytest.mark.parametrize(("name", "data"), [
    ("runt", b"\x00" * 10),
    ("truncated ipv4", _truncated(14 + 12)),
    ("truncated udp", _truncated(14 + 20 + 4)),
    ("truncated cth", _truncated(14 + 20 + 8 + 9)),
    ("bad ihl", bytes(Ether() / IP(dst="10.0.1.2", ihl=6, options=[]) / bytes(30))),
    ("bad version", bytes(Ether() / IP(dst="10.0.1.2", version=6) / UDP() / bytes(30))),
    ("bad checksum", bytes(Ether() / IP(dst="10.0.1.2", chksum=0x1234) / UDP() / bytes(30))),
])
def test_malformed_frames_dropped_and_counted(pipe: Pipeline, name: str, data: bytes) -> None:
    assert run(pipe, data, port=5) is None
    assert pipe.counter_read("MyIngress.parser_errors", 5)[0] == 1
    assert pipe.counter_read("MyIngress.drops", 5)[0] == 1


def test_bad_checksum_counts_in_p4_parser_errors_but_not_as_a_parser_error(pipe: Pipeline) -> None:
    """docs/embedded-switch.md: MyIngress.parser_errors also counts checksum errors; the
    runtime's parser_errors stat (the core's ``malformed`` drops) counts parser errors only."""
    bad_checksum = bytes(Ether() / IP(dst="10.0.1.2", chksum=0x1234) / UDP() / bytes(30))
    assert run(pipe, bad_checksum, port=5) is None
    assert pipe.counter_read("MyIngress.parser_errors", 5)[0] == 1
    assert pipe.stats["parser_errors"] == 0
    assert run(pipe, _truncated(14 + 12), port=5) is None
    assert pipe.counter_read("MyIngress.parser_errors", 5)[0] == 2
    assert pipe.stats["parser_errors"] == 1


def test_stats_is_one_dict_brought_up_to_date_when_read(pipe: Pipeline) -> None:
    """``Pipeline.stats``: the per-packet counters are attributes, copied into the same dict on
    each read; parser_errors (counted by the generated code) is live in a reference kept before."""
    held = pipe.stats
    assert list(held) == ["parsed", "parser_errors", "ingress_drops", "egress_drops", "packets_out",
                          "clones", "resubmits", "recirculations", "replicas", "copy_drops"]
    st = pipe.ingress(frame(), 1, 0)
    assert st is not None and pipe.egress(st, egress_port=st.egress_spec) is not None
    assert run(pipe, frame(ttl=1), port=5) is None  # a P4 drop in ingress
    assert run(pipe, _truncated(14 + 12), port=5) is None  # a parser error (then dropped)
    assert held["parser_errors"] == 1 and held["parsed"] == 0  # not read since: still the old copy
    assert pipe.stats is held
    assert held == {"parsed": 3, "parser_errors": 1, "ingress_drops": 2, "egress_drops": 0, "packets_out": 1,
                    "clones": 0, "resubmits": 0, "recirculations": 0, "replicas": 0, "copy_drops": 0}


def test_parser_error_code_reaches_ingress(tmp_path: Path) -> None:
    body = """apply {
        if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 7; }
        else { sm.egress_spec = 1; }
    }"""
    pl = Pipeline(load_program(write_program(tmp_path, body)))
    st = pl.ingress(b"\x01\x02", 0, 0)
    assert st is not None and st.egress_spec == 7
    assert pl.egress(st, egress_port=7) == b"\x01\x02"  # header invalid, bytes kept as payload
    assert pl.ingress(b"\x01\x02\x03\x04\x05\x06", 0, 0).egress_spec == 1


@pytest.mark.parametrize("n", [0, 1, 5, 13, 14, 15])
def test_frames_of_any_length_enter_the_parser_in_the_switch_core(tmp_path: Path, n: int) -> None:
    """bmv2 semantics: no minimum frame size; a frame shorter than h_t (6 bytes) reaches
    ingress with parser_error = PacketTooShort and the program decides (here: forward it)."""
    from emu.embedded.core import SwitchCore
    body = """apply {
        if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 2; }
        else { sm.egress_spec = 3; }
    }"""
    pl = Pipeline(load_program(write_program(tmp_path, body)))
    core = SwitchCore(pl, [1, 2, 3])
    data = bytes(range(1, n + 1))
    core.receive(1, data, 0)
    assert core.poll(0) == [(2 if n < 6 else 3, data)]
    assert pl.stats["parsed"] == 1 and pl.stats["parser_errors"] == (1 if n < 6 else 0)
    assert core.stats()["drops"]["oversize"] == 0


def test_packet_length_is_the_frame_length(tmp_path: Path) -> None:
    """``packet.length()`` in the parser: the whole frame in bytes (bit<32>)."""
    text = write_program(tmp_path, "apply { sm.egress_spec = (bit<9>)meta.m; }").read_text().replace(
        "pkt.extract(hdr.h);", "pkt.extract(hdr.h);\n        meta.m = (bit<8>)pkt.length();")
    path = tmp_path / "len.p4"
    path.write_text(text)
    for opt in (True, False):
        pl = Pipeline(load_program(path), optimize=opt)
        for n in (6, 9, 40):
            assert pl.process(bytes(n), 1) == (n, bytes(n))


CHECKSUM_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<3> x; bit<13> y; bit<8> z; bit<7> w; bit<1> v; bit<16> ck; bit<32> q; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) {
    apply { verify_checksum(hdr.h.v == 1, { hdr.h.z, hdr.h.w, hdr.h.q }, hdr.h.ck, HashAlgorithm.csum16); }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)sm.checksum_error + 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) {
    apply { update_checksum(hdr.h.v == 0, { hdr.h.x, hdr.h.z, hdr.h.w, hdr.h.q, hdr.h.y, hdr.h.v == 0 },
                            hdr.h.ck, HashAlgorithm.csum16); }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_checksums_of_odd_widths_are_rfc1071_with_and_without_optimize(tmp_path: Path) -> None:
    """verify_checksum/update_checksum over fields that straddle 16-bit words and a total width
    that is not whole words (zero-padded at the end): the optimized code sums the fields in their
    word positions (CodeGen.field_sum16), the reference builds the wide integer; both must give
    the RFC 1071 checksum of the concatenation (externs.csum16), also for all-zero data."""
    import random

    path = tmp_path / "csum.p4"
    path.write_text(CHECKSUM_PROGRAM)
    prog = load_program(path)
    pipes = [Pipeline(prog, optimize=opt) for opt in (True, False)]
    rng = random.Random(5)
    frames = [bytes(10), bytes([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), bytes([0xff] * 10)]
    frames += [rng.randbytes(10) for _ in range(300)]
    for data in frames:
        bits = int.from_bytes(data, "big")
        x, y, z = bits >> 77, (bits >> 64) & 0x1FFF, (bits >> 56) & 0xFF
        w, v, ck, q = (bits >> 49) & 0x7F, (bits >> 48) & 1, (bits >> 32) & 0xFFFF, bits & 0xFFFFFFFF
        if v:  # verified (sum of 8 + 7 + 32 = 47 bits, padded to 48), not updated
            good = csum16((z << 39) | (w << 32) | q, 47) == ck
            want = (1 if good else 2, data)
        else:  # updated over 3 + 8 + 7 + 32 + 13 + 1 = 64 bits
            new = csum16((((((((x << 8 | z) << 7 | w) << 32 | q) << 13) | y) << 1) | 1), 64)
            want = (1, data[:4] + new.to_bytes(2, "big") + data[6:])
        for pl in pipes:
            assert pl.process(data, 0) == want, (data.hex(), pl.optimize)


WRAP_BODY = """
    action setb(bit<8> v) { hdr.h.b = v; }
    apply {
        bit<8> x = 8w250;
        x = x + 10;                      // 260 mod 256 = 4
        hdr.h.a = x;
        hdr.h.b = hdr.h.b - 5;           // 3 - 5 = 254
        hdr.h.c = hdr.h.a ++ (hdr.h.e << 4);   // 0x04 ++ (0x0F << 4 = 0xF0 in 8 bits)
        hdr.h.d = ~hdr.h.d;              // 0x0F -> 0xF0
        hdr.h.e = hdr.h.c[11:4] * 3;     // 0x4F * 3 = 0xED
        bit<16> big = 16w0xFFFF;
        big = big + 1;
        if (big == 0 && (bit<1>)hdr.h.a[2:2] == 1) { sm.egress_spec = 3; }
        else { sm.egress_spec = 4; }
    }"""


def test_bit_width_wrap_arithmetic(tmp_path: Path) -> None:
    pl = Pipeline(load_program(write_program(tmp_path, WRAP_BODY)))
    port, out = pl.process(bytes([1, 3, 0, 0, 0x0F, 0x0F]) + b"tail", 1)
    assert port == 3
    assert out == bytes([4, 254, 0x04, 0xF0, 0xF0, 0xED]) + b"tail"


TERNARY_BODY = """
    action setb(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a: ternary; }
        actions = { setb; NoAction; }
        size = 8;
        default_action = setb(99);
    }
    apply { t.apply(); sm.egress_spec = 1; }"""


def test_ternary_higher_priority_wins(tmp_path: Path) -> None:
    pl = Pipeline(load_program(write_program(tmp_path, TERNARY_BODY)))
    pl.table_add("I.t", {"hdr.h.a": [0x10, 0xF0]}, "I.setb", {"v": 1}, priority=10)
    pl.table_add("I.t", {"hdr.h.a": [0x12, 0xFF]}, "I.setb", {"v": 2}, priority=20)
    assert pl.process(bytes([0x12, 0, 0, 0, 0, 0]), 0)[1][1] == 2
    assert pl.process(bytes([0x13, 0, 0, 0, 0, 0]), 0)[1][1] == 1
    assert pl.process(bytes([0x23, 0, 0, 0, 0, 0]), 0)[1][1] == 99
    pl.table_modify("I.t", {"hdr.h.a": [0x12, 0xFF]}, "I.setb", {"v": 5}, priority=20)
    assert pl.process(bytes([0x12, 0, 0, 0, 0, 0]), 0)[1][1] == 5
    pl.table_set_default("I.t", "NoAction")
    assert pl.process(bytes([0x23, 7, 0, 0, 0, 0]), 0)[1][1] == 7


def test_register_read_write_reset_and_bounds(tmp_path: Path) -> None:
    body = """
    register<bit<8>>(4) r;
    apply {
        bit<8> v;
        r.read(v, (bit<32>)hdr.h.a);     // out of range -> 0
        hdr.h.b = v;
        r.write((bit<32>)hdr.h.a, hdr.h.c[7:0]);   // ignored when out of range
        sm.egress_spec = 1;
    }"""
    pl = Pipeline(load_program(write_program(tmp_path, body)))
    pl.register_write("I.r", 2, 42)
    assert pl.process(bytes([2, 0, 0, 77, 0, 0]), 0)[1][1] == 42
    assert pl.register_read("I.r", 2) == 77
    assert pl.process(bytes([9, 5, 0, 66, 0, 0]), 0)[1][1] == 0
    assert pl.register_read("I.r") == [0, 0, 77, 0]
    pl.register_reset("I.r")
    assert pl.register_read("I.r") == [0, 0, 0, 0]
    with pytest.raises(ControlError, match=r"I\.r: index 4 out of range"):
        pl.register_read("I.r", 4)
    with pytest.raises(ControlError, match=r"I\.r\[0\]: value 256 does not fit in bit<8>"):
        pl.register_write("I.r", 0, 256)


def test_control_errors(pipe: Pipeline) -> None:
    with pytest.raises(ControlError, match=r"unknown table MyIngress\.ipv4_lmp \(did you mean MyIngress\.ipv4_lpm\?\)"):
        pipe.table_add("MyIngress.ipv4_lmp", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.drop")
    with pytest.raises(ControlError, match=r"MyIngress\.ipv4_lpm: action MyIngress\.ipv4_forward parameter port: "
                       r"value 512 does not fit in bit<9>"):
        pipe.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "11.0.0.0/8"}, "MyIngress.ipv4_forward",
                       {"srcAddr": 1, "dstAddr": 2, "port": 512})
    with pytest.raises(ControlError, match=r"MyIngress\.ipv4_lpm: duplicate entry"):
        pipe.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.drop")
    with pytest.raises(ControlError, match=r"unknown key field hdr\.ipv4\.dstAdr \(did you mean hdr\.ipv4\.dstAddr\?\)"):
        pipe.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAdr": "12.0.0.0/8"}, "MyIngress.drop")
    with pytest.raises(ControlError, match=r"unknown action MyIngress\.dorp"):
        pipe.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "12.0.0.0/8"}, "MyIngress.dorp")
    with pytest.raises(ControlError, match=r"MyIngress\.symphony_config: key hdr\.cth\.job_id: value 65536"):
        configure(pipe, job=65536)
    with pytest.raises(ControlError, match=r"unknown register MyIngress\.frontiers"):
        pipe.register_read("MyIngress.frontiers", 0)
    with pytest.raises(ControlError, match=r"prefix length 33"):
        pipe.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ["10.0.0.0", 33]}, "MyIngress.drop")


def test_seeded_random_is_reproducible() -> None:
    def marks(seed: int) -> list[int]:
        pl = Pipeline(PROGRAM, seed=seed)
        pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.ipv4_forward",
                     {"srcAddr": 1, "dstAddr": 2, "port": 2})
        configure(pl, flows=2, threshold=0, slope=20000 / 65536)
        return [run(pl, frame(rank=0, step=1))[1][IP].tos & 3 for _ in range(64)]

    assert marks(3) == marks(3)
    assert marks(3) != marks(4)


def _random_frames(rng, n: int) -> list[bytes]:
    """Seeded mix of valid CTH/UDP/TCP/ARP frames and malformed ones (truncated, bad checksum/ihl, junk)."""
    from scapy.layers.inet import TCP
    from scapy.layers.l2 import ARP

    frames = []
    for _ in range(n):
        kind = rng.randrange(9)
        ip = IP(src=f"10.0.{rng.randrange(3)}.{rng.randrange(1, 9)}", dst=rng.choice(
            ["10.0.1.2", "10.0.1.9", "10.2.0.1", "192.168.0.1"]), tos=rng.randrange(256), ttl=rng.choice([0, 1, 2, 64]))
        eth = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        if kind <= 2:
            cth = CTH(type=rng.choice([1, 1, 1, 2]), job_id=rng.randrange(4), step=rng.randrange(70),
                      src_rank=rng.randrange(70), dst_rank=rng.randrange(64), psn=rng.randrange(1 << 24),
                      flags=rng.randrange(256))
            f = bytes(eth / ip / UDP(sport=rng.randrange(65536), dport=4793) / cth / payload)
        elif kind == 3:
            f = bytes(eth / ip / UDP(sport=5001, dport=rng.choice([5001, 4793])) / payload)
        elif kind == 4:
            f = bytes(eth / ip / TCP(sport=1, dport=2) / payload)
        elif kind == 5:
            f = bytes(eth / ARP())
        elif kind == 6:  # truncated anywhere
            f = bytes(eth / ip / UDP(dport=4793) / CTH(step=rng.randrange(9)) / payload)
            f = f[:rng.randrange(len(f) + 1)]
        elif kind == 7:  # corrupted header byte (checksum, version/ihl, ...)
            b = bytearray(bytes(eth / ip / UDP(dport=4793) / CTH(step=rng.randrange(9)) / payload))
            b[rng.randrange(14, min(len(b), 58))] ^= 1 << rng.randrange(8)
            f = bytes(b)
        else:
            f = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        frames.append(f)
    return frames


def _state(pl: Pipeline) -> tuple:
    return ({n: pl.register_read(n) for n in pl.registers}, {n: pl.counter_read(n) for n in pl.counters},
            dict(pl.stats))


def program_mixed(pl: Pipeline) -> None:
    """Routes (one drop), an ECN step and a range, and three jobs: Symphony on, a gate, baseline."""
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.ipv4_forward",
                 {"srcAddr": "00:00:00:00:08:01", "dstAddr": "00:00:00:00:08:02", "port": 3})
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"}, "MyIngress.ipv4_forward",
                 {"srcAddr": MAC_S, "dstAddr": MAC_D, "port": 2})
    pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.9/32"}, "MyIngress.drop", {})
    queue_step(pl, 2, 10)
    pl.table_add("MyEgress.queue_ecn", {"meta.egress_port": 3, "meta.enq_qdepth": [3, 9]},
                 "MyEgress.set_ecn_mark", {"threshold": 30000}, priority=1)
    configure(pl, job=0, flows=2, threshold=1, slope=1.0, gate=0, mode=1)
    configure(pl, job=1, flows=3, threshold=0, slope=0.25, gate=4, mode=1)
    configure(pl, job=2, flows=1, threshold=2, slope=100 / 65536, gate=0, mode=0)


def test_optimized_pipeline_matches_unoptimized() -> None:
    """optimize=True (raw-byte deparse, byte-wise extract, pruned state, inlined parser) is bit-exact."""
    import random

    pipes = []
    for opt in (True, False):
        pl = Pipeline(PROGRAM, seed=11, optimize=opt)
        program_mixed(pl)
        pipes.append(pl)
    assert "_pkt[_pos + 1]" in pipes[0].source and "int.from_bytes" not in pipes[0].source
    assert "int.from_bytes" in pipes[1].source
    rng = random.Random(1234)
    frames = _random_frames(rng, 600)
    outs: list[list] = [[], []]
    for i, f in enumerate(frames):
        port = rng.randrange(1, 5)
        q = rng.choice([0, 1, 3, 9, 10, 11, 40, 1 << 20])
        for pl, out in zip(pipes, outs, strict=True):
            st = pl.ingress(f, port, 1000 + i)
            if st is None:
                out.append(None)
                continue
            res = pl.egress(st, egress_port=st.egress_spec, enq_qdepth=q, deq_qdepth=q, deq_timedelta_us=i,
                            enq_timestamp_us=1000 + i, now_us=1010 + i)
            out.append((st.egress_spec, st.mcast_grp, st.packet_length, res))
    assert outs[0] == outs[1]
    assert sum(o is not None and o[3] is not None for o in outs[0]) > 50  # many frames went through
    assert any(o is not None and o[3] is not None and o[3] != f for o, f in zip(outs[0], frames, strict=True))
    assert _state(pipes[0]) == _state(pipes[1])
    assert any(any(v) for v in _state(pipes[0])[0].values())


def test_hash_algorithms_give_their_check_values() -> None:
    """CRC catalogue check values over b"123456789": CRC-16/ARC 0xBB3D (bmv2 crc16), CRC-32 0xCBF43926."""
    from emu.embedded.externs import crc16, hash_value

    data = int.from_bytes(b"123456789", "big")
    assert crc16(b"123456789") == 0xBB3D
    assert hash_value("crc16", data, 72) == 0xBB3D
    assert hash_value("crc32", data, 72) == 0xCBF43926
    assert hash_value("identity", 0x1234, 16) == 0x1234
    # a 12-bit value is left-aligned in 2 bytes (zero-padded at the end), as bmv2 packs field lists
    assert hash_value("crc16", 0xABC, 12) == crc16(bytes([0xAB, 0xC0]))


def test_direct_meter_and_direct_counter_per_entry() -> None:
    """meters.p4: a bytes direct meter (CIR 0, CBS 100; PIR 0, PBS 150) on one entry of by_key
    colours 18-byte packets as bmv2 would: 5 green (100 // 18), then yellow until the peak
    bucket (150) runs short at the 9th packet: red. A miss leaves the read target unchanged;
    the direct counter counts the hits of its entry only."""
    from emu.embedded.core import SwitchCore

    pipe = Pipeline(load_program(ROOT / "tests" / "p4" / "programs" / "meters.p4"))
    core = SwitchCore(pipe, [1, 2])
    pipe.table_add("by_key", {"hdr.m.key": 5}, "metered")
    pipe.table_add("count_key", {"hdr.m.key": 5}, "counted")
    pipe.direct_meter_set_rates("by_key", {"hdr.m.key": 5}, [[0.0, 100], [0.0, 150]])

    def send(key: int, t: int) -> int:
        frame = bytes.fromhex("000000000002" "000000000001" "0900") + bytes([0, key, 0, 0xEE])
        core.receive(1, frame, t)
        (port, out), = core.poll(t)
        return out[17]

    colours = [send(5, t) for t in range(1, 10)]
    assert colours == [0, 0, 0, 0, 0, 1, 1, 1, 2]
    assert send(6, 20) == 0xEE  # miss: the direct meter does not run, read() writes nothing
    assert pipe.direct_counter_read("count_key", {"hdr.m.key": 5}) == (9, 9 * 18)
    with pytest.raises(ControlError, match="no entry"):
        pipe.direct_counter_read("count_key", {"hdr.m.key": 6})
    with pytest.raises(ControlError, match="no direct counter"):
        pipe.direct_counter_read("by_key", {"hdr.m.key": 5})
    with pytest.raises(ControlError, match="committed rate 2.0 above peak rate 1.0"):
        pipe.meter_set_rates("pmeter", 0, [[2, 1], [1, 1]])


def test_const_entries_refuse_control_plane_changes() -> None:
    pipe = Pipeline(load_program(ROOT / "tests" / "p4" / "programs" / "const_entries.p4"))
    assert len(pipe.table("calculate").entries) == 3
    with pytest.raises(ControlError, match="const entries"):
        pipe.table_add("calculate", {"hdr.c.op": 1}, "op_add")
    with pytest.raises(ControlError, match="const entries"):
        pipe.table_clear("classes")


DEF_USE_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; bit<8> y; }
header b_t { bit<8> p; bit<8> q; bit<8> r; }
struct headers { a_t a; b_t b; }
struct metadata { bit<8> m; bit<8> unused; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); pkt.extract(hdr.b); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        meta.m = hdr.b.q;
        hdr.b.q = hdr.b.q - 1;
        meta.unused = 1;
        if (hdr.b.p == 0) { mark_to_drop(sm); }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { hdr.b.r = meta.m; } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


DEPARSE_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header e_t { bit<16> k; bit<8> t; }
header a_t { bit<8> x; bit<8> y; }
header b_t { bit<8> p; bit<8> q; }
struct headers { e_t e; a_t a; b_t b; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.e); transition select(hdr.e.t) { 1: ab; 2: b_only; 3: gap; 4: ba; default: accept; } }
    state ab { pkt.extract(hdr.a); pkt.extract(hdr.b); transition accept; }
    state b_only { pkt.extract(hdr.b); transition accept; }
    state gap { pkt.extract(hdr.a); pkt.advance(8); pkt.extract(hdr.b); transition accept; }
    state ba { pkt.extract(hdr.b); pkt.extract(hdr.a); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.e.k = hdr.e.k + 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.e); pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_deparser_fast_path_gives_the_general_bytes(tmp_path: Path) -> None:
    """CodeGen.gen_deparser: one pack of the re-packed headers plus ``_pkt[_t:]`` when the headers
    emitted from their bytes lie back to back up to the payload (a, b; b alone), the general code
    when not (bytes skipped between them, extracted in the other order, e too short to extract):
    the frames are those of ``optimize=False`` either way."""
    path = tmp_path / "deparse.p4"
    path.write_text(DEPARSE_PROGRAM)
    fast, ref = (Pipeline(load_program(path), optimize=o) for o in (True, False))
    assert "_pkt[_t:]" in fast.source and "_t = " in fast.source
    frames = [bytes([0, 7, t]) + bytes(range(10, 20)) for t in (0, 1, 2, 3, 4)] + [b"\x00\x07", b""]
    outs = [fast.process(f, 0) for f in frames]
    assert outs == [ref.process(f, 0) for f in frames]
    assert outs[1] == (1, bytes([0, 8, 1]) + bytes(range(10, 20)))
    assert outs[3] == (1, bytes([0, 8, 3, 10, 11, 13, 14, 15, 16, 17, 18, 19]))  # the skipped byte (12) is not emitted


def test_def_use_of_the_packet_state_on_the_ir(tmp_path: Path) -> None:
    """optimize.def_use: what the optimizations of extract/emit/egress state are decided from."""
    import random

    from emu.embedded import passes
    from emu.embedded.v1model import compile_v1model

    path = tmp_path / "du.p4"
    path.write_text(DEF_USE_PROGRAM)
    du = compile_v1model(passes.lower(load_program(path)), optimize_code=True, rng=random.Random(1), stats={}).du

    def var(prefix: str) -> str:
        (v,) = [t for t in du.tracked if t.startswith(f"_{prefix}_")]
        return v

    # a: only extract writes it, so the deparser emits its bytes and its fields are not computed
    a_valid = var("hdr_a_valid")
    assert a_valid in du.extracted and not {a_valid, var("hdr_a_x"), var("hdr_a_y")} & du.other_writes
    assert du.raw_reads["egress"] == {a_valid} and not du.live(var("hdr_a_x")) and not du.live(var("hdr_a_y"))
    # b: written in both halves; its fields are read (ingress: p, q; egress: all, by the rebuild)
    assert {var("hdr_b_q"), var("hdr_b_r")} <= du.other_writes
    assert {var("hdr_b_p"), var("hdr_b_q")} <= du.reads["ingress"] and var("hdr_b_r") not in du.reads["ingress"]
    assert {var("hdr_b_p"), var("hdr_b_q"), var("hdr_b_r")} <= du.reads["egress"]
    # metadata: m goes to egress, unused is only written; mark_to_drop reads nothing of sm
    assert var("meta_m") in du.reads["egress"] and not du.live(var("meta_unused"))
    assert var("sm_ingress_port") not in du.reads["ingress"] and var("sm_egress_spec") in du.other_writes
