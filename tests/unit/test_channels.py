"""NCCL-style channels (jobs[].channels): K rings per job, each its own flow and UDP source port."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from emu import runner
from emu.routing import compute_routes, marking_entries
from emu.topology import TopologyError, load_topology, parse_topology
from emu.topology_checks import channels_fit
from hostapps.collectives import lead_bound
from hostapps.transport import Transport, TransportConfig
from hostapps.wire import ECN_ECT0, STEP_WINDOW, Cth, CthFlags, CthType, decode, encode

CHANNELS = Path(__file__).resolve().parents[1] / "e2e" / "channels.yaml"


def test_sim_channels_spread_over_spines_and_verify(tmp_path: Path) -> None:
    """Virtual time (the real-time twin is tests/e2e/test_ecmp_modes.py): the two channels of each
    direction take both spines as the flow report says, the traffic is on the model's ports, the
    switches count channel flows (expected_flows) and the 2-channel all-reduce verifies."""
    topo = load_topology(CHANNELS)
    routes = compute_routes(topo)
    spine = {(f["rank"], f["channel"]): f["path"][2] for f in routes.flow_report()["flows"]}
    assert {spine[(0, 0)], spine[(0, 1)]} == {spine[(1, 0)], spine[(1, 1)]} == {"spine1", "spine2"}
    flows = routes.expected_flows()
    assert flows["leaf1"] == flows["leaf2"] == {0: 4} and flows["spine1"] == flows["spine2"] == {0: 2}
    result = runner.run(CHANNELS, schemes=("baseline",), mode="sim", out=tmp_path / "out", size=8192)
    assert result.ok and result.summary["baseline"]["verified"] is True, result.failure
    assert result.summary["paths"] == routes.flow_report()
    counters = json.loads((tmp_path / "out" / "baseline" / "counters.json").read_text())
    assert {sw: {int(p) for p, n in c["stats"]["tx"].items() if n} for sw, c in counters.items()} == \
        routes.ports_in_use()
    assert (tmp_path / "out" / "flows.csv").read_text().splitlines()[1:3] == [
        f"0,0,1,0,h1 leaf1 {spine[(0, 0)]} leaf2 h3", f"0,0,1,1,h1 leaf1 {spine[(0, 1)]} leaf2 h3"]


def test_transport_keeps_a_flow_per_channel() -> None:
    """Channel c of a peer is its own flow (PSNs from 0, the channel in every header); a channel
    beyond the transport's is garbage."""
    a = Transport(0, 0, TransportConfig(line_rate_bps=1e9), "none", channels=2)
    a.send(1, 5, b"x" * 10, 0.0)
    a.send(1, 5, b"y" * 10, 0.0, channel=1)
    heads = [decode(o.datagram)[0] for o in a.poll(0.0)]
    assert sorted((h.channel, h.psn) for h in heads) == [(0, 0), (1, 0)]
    b = Transport(0, 1, TransportConfig(line_rate_bps=1e9), "none", channels=2)
    last = CthFlags.LAST  # acknowledged at once
    for h, payload in ((Cth(CthType.DATA, 0, 5, 0, 1, 0, flags=last, channel=1), b"y"),
                       (Cth(CthType.DATA, 0, 5, 0, 1, 0, flags=last), b"x")):
        b.on_datagram(0, encode(h, payload), ECN_ECT0, 0.0)
    assert sorted((d.channel, bytes(d.payload)) for d in b.deliveries()) == [(0, b"x"), (1, b"y")]
    acks = [decode(o.datagram)[0] for o in b.poll(0.0)]
    assert sorted(h.channel for h in acks) == [0, 1]
    b.on_datagram(0, encode(Cth(CthType.DATA, 0, 5, 0, 1, 0, channel=2), b"z"), ECN_ECT0, 0.0)
    assert b.stats()["garbage"] == 1 and not b.deliveries()
    with pytest.raises(ValueError, match="channel 2"):
        a.send(1, 5, b"", 0.0, channel=2)


def test_lead_bound_and_marking_entries_follow_channels() -> None:
    assert lead_bound("allreduce", 8) == 7
    assert lead_bound("allreduce", 8, 2) == 2 * 7 - 1 + 7  # one collective's steps - 1, plus the ring's
    text = CHANNELS.read_text()
    leads = [e.match["meta.lead"] for e in marking_entries(parse_topology(text, "c.yaml"), 0)]
    assert leads == [2] and lead_bound("allreduce", 2, 2) == 2  # T = 1: leads 2..bound
    # one channel: a 2-rank ring leads by at most 1 = T, so no lead can mark and no entry is made
    assert marking_entries(parse_topology(text.replace("channels: 2, ", ""), "c.yaml"), 0) == []


def test_channels_are_checked_before_anything_starts() -> None:
    text = CHANNELS.read_text()
    with pytest.raises(TopologyError, match=r"jobs\[0\]\.channels: .*need collective allreduce"):
        parse_topology(text.replace("channels: 2,", "channels: 2, collective: allgather,"), "c.yaml")
    with pytest.raises(TopologyError, match=r"jobs\[0\]\.channels"):
        parse_topology(text.replace("channels: 2,", "channels: 5,"), "c.yaml")
    # a ring whose channels could lead by STEP_WINDOW or more (an all-reduce over 684+ ranks)
    big = SimpleNamespace(jobs=[SimpleNamespace(channels=2, collective="allreduce", payload="exact",
                                                ranks=[f"h{i}" for i in range(684)])])
    assert lead_bound("allreduce", 684, 2) >= STEP_WINDOW > lead_bound("allreduce", 683, 2)
    with pytest.raises(ValueError, match="can lead by 2048 steps"):
        channels_fit(big, lambda loc, problem, fix: ValueError(f"{loc}: {problem}; {fix}"))  # type: ignore[arg-type]
