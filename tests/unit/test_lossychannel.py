"""The lossy test channel (hostapps.lossychannel): reliability, determinism, DCQCN, routes, app driving."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from hostapps.lossychannel import ChannelError, LinkConfig, LossyChannel
from hostapps.transport import Delivery, Transport, TransportConfig

JOB = 1


def pair(sim: LossyChannel, cfg: TransportConfig, rate_control: str = "dcqcn"):
    return (sim.add_node(Transport(JOB, 0, cfg, rate_control)),
            sim.add_node(Transport(JOB, 1, cfg, rate_control)))


def delivered_bytes(node) -> bytes:
    return b"".join(d.payload for d in node.delivered)


@pytest.mark.parametrize("seed", range(8))
def test_lossy_link_exactly_once(seed: int) -> None:
    sim = LossyChannel(seed=seed, default_link=LinkConfig(loss=0.05, duplicate=0.05, reorder=0.3))
    a, b = pair(sim, TransportConfig())
    data = random.Random(seed).randbytes(300_000)
    sim.send(JOB, 0, 1, 9, data)
    sim.run(until=60, stop=lambda s: a.transport.idle() and len(delivered_bytes(b)) >= len(data))
    assert delivered_bytes(b) == data
    assert [d.step for d in b.delivered] == [9] * len(b.delivered)
    assert [d.last for d in b.delivered] == [False] * (len(b.delivered) - 1) + [True]
    link = sim.links["j1r0->j1r1"].stats
    assert link["lost"] > 0 and link["duplicated"] > 0 and link["reordered"] > 0
    assert a.transport.idle()


def _run_once(seed: int) -> tuple[float, dict, dict]:
    sim = LossyChannel(seed=seed, default_link=LinkConfig(loss=0.02, reorder=0.2))
    a, b = pair(sim, TransportConfig())
    sim.send(JOB, 0, 1, 1, bytes(100_000))
    end = sim.run(until=30, stop=lambda s: a.transport.idle() and len(delivered_bytes(b)) == 100_000)
    return end, a.transport.stats(), sim.stats()


def test_deterministic_per_seed() -> None:
    assert _run_once(5) == _run_once(5)
    assert _run_once(5)[2] != _run_once(6)[2]


def test_transfer_time_matches_link_rate() -> None:
    sim = LossyChannel(default_link=LinkConfig(rate_bps=10e6, delay=0.001))
    a, b = pair(sim, TransportConfig(line_rate_bps=10e6), "none")
    sim.send(JOB, 0, 1, 1, bytes(1456 * 100))
    end = sim.run(stop=lambda s: len(b.delivered) == 100)
    wire_bits = 100 * (1456 + 16 + 42) * 8
    assert wire_bits / 10e6 <= end <= wire_bits / 10e6 + 0.01


def test_tail_drop() -> None:
    sim = LossyChannel(seed=2)
    a, b = pair(sim, TransportConfig(line_rate_bps=10e6), "none")
    link = sim.add_link("narrow", LinkConfig(rate_bps=2e6, queue_packets=8))
    sim.set_route((JOB, 0), (JOB, 1), [link])
    sim.send(JOB, 0, 1, 1, bytes(200_000))
    sim.run(until=60, stop=lambda s: a.transport.idle() and len(delivered_bytes(b)) == 200_000)
    assert delivered_bytes(b) == bytes(200_000)
    assert link.stats["tail_drops"] > 0 and link.stats["max_queue"] <= 8
    assert a.transport.stats()["retransmissions"] > 0


def test_shared_link_carries_both_routes() -> None:
    sim = LossyChannel()
    cfg = TransportConfig()
    nodes = [sim.add_node(Transport(JOB, r, cfg, "none")) for r in range(4)]
    shared = sim.add_link("core", LinkConfig(rate_bps=10e6))
    sim.set_route((JOB, 0), (JOB, 2), [sim.add_link("h0", LinkConfig()), shared])
    sim.set_route((JOB, 1), (JOB, 3), [sim.add_link("h1", LinkConfig()), shared])
    sim.send(JOB, 0, 2, 1, bytes(50 * 1456))
    sim.send(JOB, 1, 3, 1, bytes(50 * 1456))
    end = sim.run(stop=lambda s: len(nodes[2].delivered) == 50 and len(nodes[3].delivered) == 50)
    assert sim.links["core"].stats["packets"] == 100
    assert sim.links["h0"].stats["packets"] == sim.links["h1"].stats["packets"] == 50
    assert end >= 100 * (1456 + 16 + 42) * 8 / 10e6  # the shared link is the bottleneck


@dataclass
class Req:
    dst_rank: int
    step: int
    offset: int
    payload: bytes
    last: bool


class TokenRing:
    """Passes a growing token around the ring for ``rounds`` rounds (App protocol)."""

    def __init__(self, rank: int, nranks: int, rounds: int) -> None:
        self.rank, self.n, self.rounds = rank, nranks, rounds
        self.out: list[Req] = []
        self.seen: list[tuple[int, bytes]] = []
        self.buf = bytearray()
        if rank == 0:
            self.out.append(Req(1 % nranks, 0, 0, b"\x00", True))

    def on_delivery(self, d: Delivery, now: float) -> None:
        self.buf += d.payload
        if d.last:
            token, self.buf = bytes(self.buf), bytearray()
            self.seen.append((d.step, token))
            if d.step + 1 < self.rounds * self.n:
                self.out.append(Req((self.rank + 1) % self.n, d.step + 1, 0,
                                    token + bytes([self.rank]) * 500, True))

    def poll(self, now: float) -> list[Req]:
        out, self.out = self.out, []
        return out

    def next_timer(self) -> float | None:
        return None


def test_apps_drive_a_ring() -> None:
    n, rounds = 5, 3
    sim = LossyChannel(seed=3, default_link=LinkConfig(loss=0.02, reorder=0.1))
    apps = [TokenRing(r, n, rounds) for r in range(n)]
    for r in range(n):
        sim.add_node(Transport(JOB, r, TransportConfig()), apps[r])
    events = []
    sim.on_event = events.append
    sim.run(until=60, stop=lambda s: len(apps[0].seen) == rounds - 1 and len(apps[n - 1].seen) == rounds)
    steps = sorted(step for app in apps for step, _ in app.seen)
    assert steps == list(range(rounds * n - 1))
    last_step, last_token = apps[n - 1].seen[-1]
    assert last_step == rounds * n - 2 and len(last_token) == 1 + 500 * (rounds * n - 2)
    assert events == sorted(events)  # virtual time never goes back


def test_run_until_and_guards() -> None:
    sim = LossyChannel()
    a, b = pair(sim, TransportConfig(), "none")
    sim.send(JOB, 0, 1, 1, bytes(100_000))
    assert sim.run(until=0.01) == 0.01
    assert 0 < len(b.delivered) < 69
    with pytest.raises(ChannelError, match="more than 5 events"):
        sim.run(max_events=5)
    with pytest.raises(ChannelError, match="added twice"):
        sim.add_node(Transport(JOB, 0))
    a.transport.send(7, 1, b"x", sim.now)
    sim.kick(a)
    with pytest.raises(ChannelError, match="rank 7, which has no node"):
        sim.run()


@pytest.mark.parametrize("field, value", [("loss", 1.5), ("duplicate", -0.1), ("rate_bps", 0), ("delay", -1)])
def test_link_config_validation(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        LinkConfig(**{field: value})
