"""The controller's marking tables on the P4 pipeline: the ECN ramp over queue depth and the
Symphony curve over lead, with the entries emu.routing computes (docs/DESIGN.md section 4).

STF packets meet an empty queue; here ``enq_qdepth`` is given to egress directly, so the
whole ramp is swept: no mark below kmin, the linear part, always at and above kmax.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline
from emu.p4names import TABLE_MARKING, TABLE_QUEUE_ECN, TABLE_SYMPHONY
from emu.routing import (
    marking_entries,
    switch_programs,
    symphony_entry,
    t2na_qdepth,
)
from emu.topology import parse_topology
from hostapps.wire import CTH, ECN_CE, ECN_ECT0, MAX_JOBS

ROOT = Path(__file__).resolve().parents[2]
TOS_BYTE = 14 + 1  # IPv4 TOS (DSCP, ECN) after the Ethernet header
#: build -> (program, queue-depth units per full-size packet: v1model packets, T2NA 176-byte cells)
BUILDS = {"v1model": (load_program(ROOT / "p4" / "symphony.p4"), 1),
          "tofino": (load_program(ROOT / "p4" / "tofino" / "symphony.p4"), t2na_qdepth(1500).cells_per_packet)}

NRANKS = 8  # an 8-rank ring: leads up to N-1 = 7 can occur (hostapps.collectives.lead_bound)
TOPO = f"""
name: ramp
hosts: [{", ".join(f"{{name: h{i}}}" for i in range(1, NRANKS + 1))}]
switches: [{{name: s1}}]
links: [{", ".join(f"{{a: h{i}, b: s1}}" for i in range(1, NRANKS + 1))}]
jobs: [{{id: 0, ranks: [{", ".join(f"h{i}" for i in range(1, NRANKS + 1))}]}}]
ecn: {{kmin_packets: 4, kmax_packets: 8, pmax: 0.5}}
symphony: {{lead_threshold: 1, slope: 0.25, queue_gate: 0}}
"""


def frame(step: int, rank: int = 0, job: int = 0) -> bytes:
    return bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=ECN_ECT0) / UDP(sport=4793, dport=4793)
                 / CTH(type=1, job_id=job, step=step, src_rank=rank, dst_rank=1 - rank, psn=0) / (b"x" * 20))


def pipeline(scheme: str, build: str = "v1model") -> Pipeline:
    pl = Pipeline(BUILDS[build][0], seed=5)
    entries = switch_programs(parse_topology(TOPO, "ramp.yaml"), scheme, p4=build)["s1"].entries  # type: ignore[arg-type]
    for e in entries:
        pl.table_add(e.table, e.match, e.action, e.params, e.priority)
    return pl


def mark_rate(pl: Pipeline, step: int, depth: int, n: int) -> float:
    data = frame(step)
    marked = 0
    for _ in range(n):
        st = pl.ingress(data, 1, 0)
        assert st is not None and st.egress_spec == 2
        out = pl.egress(st, egress_port=2, enq_qdepth=depth, deq_qdepth=depth)
        assert out is not None
        marked += (out[TOS_BYTE] & 3) == ECN_CE
    return marked / n


@pytest.mark.parametrize("build", sorted(BUILDS))
@pytest.mark.parametrize(("depth", "p"), [(0, 0.0), (3, 0.0), (4, 0.0), (5, 0.125), (6, 0.25), (7, 0.375),
                                          (8, 1.0), (9, 1.0), (50_000, 1.0)])
def test_ecn_ramp_over_queue_depth(depth: int, p: float, build: str) -> None:
    """kmin=4, kmax=8, pmax=0.5: 0 up to kmin, pmax*(d-kmin)/(kmax-kmin) below kmax, 1 from kmax
    (depth in full-size packets; the T2NA build sees 9 cells each)."""
    pl = pipeline("baseline", build)
    n = 1600
    rate = mark_rate(pl, step=0, depth=min(depth * BUILDS[build][1], 2**19 - 1), n=n)
    if p in (0.0, 1.0):
        assert rate == p
    else:  # binomial: 4 standard deviations
        assert abs(rate - p) < 4 * (p * (1 - p) / n) ** 0.5
    assert pl.counter_read("MyEgress.queue_marks", 0)[0] == round(rate * n)
    assert pl.counter_read("MyEgress.symphony_marks", 0)[0] == 0


@pytest.mark.parametrize("build", sorted(BUILDS))
@pytest.mark.parametrize(("lead", "p"), [(1, 0.0), (2, 0.25), (3, 0.5), (5, 1.0), (NRANKS - 1, 1.0)])
def test_symphony_curve_over_lead(lead: int, p: float, build: str) -> None:
    """T=1, slope 0.25: min(1, (lead - T) * 0.25) beyond T; in symphony mode only."""
    n = 1600
    for scheme, expected in (("symphony", p), ("baseline", 0.0)):
        pl = pipeline(scheme, build)
        rate = mark_rate(pl, step=lead, depth=0, n=n)  # rank 1 stays at step 0: lead = step
        if expected in (0.0, 1.0):
            assert rate == expected, scheme
        else:
            assert abs(rate - expected) < 4 * (expected * (1 - expected) / n) ** 0.5
        assert pl.counter_read("MyEgress.symphony_marks", 0)[0] == round(rate * n)


def test_entries_install_on_the_pipeline() -> None:
    """Every entry the controller makes is accepted by the P4 program (names, widths, ranges)."""
    pl = pipeline("symphony")
    assert len(pl.table(TABLE_QUEUE_ECN).dump()) == NRANKS * 4  # a port per host: depths 5, 6, 7 and [8, max]
    leads = sorted(e.match["meta.lead"] for e in marking_entries(parse_topology(TOPO, "ramp.yaml"), 0))
    assert leads == list(range(2, NRANKS))  # T = 1: leads 2..N-1, none a ring of N cannot reach
    assert len(pl.table(TABLE_MARKING).dump()) == NRANKS - 2
    assert len(pl.table(TABLE_SYMPHONY).dump()) == 1


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_job_beyond_max_jobs_is_untracked(build: str) -> None:
    """A job id >= MAX_JOBS is never tracked or Symphony-marked, even with entries installed
    by hand (the controller never makes them): v1model would index past the registers and
    T2NA alias job_id mod MAX_JOBS (job 16 onto job 0's registers)."""
    pl = pipeline("symphony", build)  # job 0: flows 2, T = 1, slope 0.25 (lead 5: always)
    pl.table_add(TABLE_SYMPHONY, {"hdr.cth.job_id": MAX_JOBS}, "MyIngress.set_symphony_config",
                 {"flows": 2, "queue_gate": 0, "mode": 1})
    pl.table_add(TABLE_MARKING, {"hdr.cth.job_id": MAX_JOBS, "meta.lead": 5}, "MyEgress.set_symphony_mark",
                 {"threshold": 65536})
    for _ in range(3):
        st = pl.ingress(frame(5, job=MAX_JOBS), 1, 0)
        assert st is not None
        out = pl.egress(st, egress_port=2, enq_qdepth=0, deq_qdepth=0)
        assert out is not None and out[TOS_BYTE] & 3 == ECN_ECT0  # forwarded, not marked
    assert pl.register_read("MyIngress.flow_step", 0) == 0  # job 0's state is untouched
    assert pl.register_read("MyIngress.frontier", 0) == 0
    assert [c[0] for c in pl.counter_read("MyEgress.symphony_marks")] == [0] * MAX_JOBS  # type: ignore[union-attr]
    # job 0 itself is tracked as before: step 5 with rank 1 at 0 has lead 5, always marked
    assert mark_rate(pl, step=5, depth=0, n=4) == 1.0
    assert pl.register_read("MyIngress.flow_step", 0) == 5


def test_controller_rejects_a_job_beyond_max_jobs() -> None:
    topo = parse_topology(TOPO, "ramp.yaml")
    with pytest.raises(ValueError, match=f"job_id {MAX_JOBS}: .*< MAX_JOBS = {MAX_JOBS}") as info:
        symphony_entry(topo, MAX_JOBS, 2, "symphony")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=f"job_id {MAX_JOBS}: "):
        marking_entries(topo, MAX_JOBS)
