"""Ring collectives over an in-memory channel and over the lossy test channel (hostapps.lossychannel)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from hostapps import lossychannel
from hostapps.collectives import (
    RingCollective,
    SendRequest,
    chunk_bounds,
    slice_bounds,
    steps_per_collective,
)

EPS32 = float(np.finfo(np.float32).eps)


@dataclass
class FakeDelivery:
    """Stand-in for ``transport.Delivery``: the CTH step is modulo 2**16."""

    src_rank: int
    step: int
    offset: int
    payload: bytes
    last: bool


def packetize(src: int, req: SendRequest, mss: int) -> list[FakeDelivery]:
    """Cut a send request (its payload and ``pad`` zeros) into deliveries of at most ``mss`` bytes, as a transport would."""
    p = bytes(req.payload) + bytes(req.pad)
    pieces = [p[i : i + mss] for i in range(0, len(p), mss)] or [b""]
    out, off = [], req.offset
    for k, piece in enumerate(pieces):
        last = req.last and k == len(pieces) - 1
        out.append(FakeDelivery(src, req.step % 65536, off, piece, last))
        off += len(piece)
    return out


def run_ring(
    colls: list[RingCollective],
    *,
    seed: int = 0,
    mss: int = 1001,
    kill: int | None = None,
    kill_after: int = 0,
    hold: set[int] | None = None,
) -> float:
    """Run collectives over a perfect FIFO-per-flow channel in a seeded random order.

    Every delivery advances the virtual clock by 1 ms. ``kill``: that rank stops sending
    after ``kill_after`` of its packets. Returns the final virtual time (time-outs fire
    by jumping the clock to the earliest timer once no packet is in flight).
    """
    n = len(colls)
    queues: list[list[FakeDelivery]] = [[] for _ in range(n)]
    sent = [0] * n
    order = random.Random(seed)
    t = 0.0
    for c in colls:
        c.start(t)
    while True:
        for r, c in enumerate(colls):
            for req in c.poll(t):
                for d in packetize(r, req, mss):
                    if kill == r and sent[r] >= kill_after:
                        continue
                    sent[r] += 1
                    queues[req.dst_rank].append(d)
        ready = [r for r in range(n) if queues[r]]
        if not ready:
            timers = [c.next_timer() for c in colls if not c.done]
            timers = [x for x in timers if x is not None]
            if not timers:
                return t
            t = max(t, min(timers))
            continue
        r = order.choice(ready)
        t += 0.001
        assert colls[r].on_delivery(queues[r].pop(0), t)


def make(kind: str, datas: list[np.ndarray], **kw) -> list[RingCollective]:
    n = len(datas)
    kw.setdefault("step_base", 0)
    kw.setdefault("step_timeout", 10.0)
    return [RingCollective(kind, r, n, datas[r], **kw) for r in range(n)]


def inputs(n: int, size: int, seed: int = 1) -> list[np.ndarray]:
    return [np.random.default_rng([seed, r]).standard_normal(size).astype(np.float32) for r in range(n)]


def assert_allreduce(colls: list[RingCollective], datas: list[np.ndarray]) -> None:
    """All ranks bit-identical and within float32 rounding of the float64 sum."""
    assert all(c.done and c.error is None for c in colls), [c.error for c in colls]
    first = colls[0].result.tobytes()
    for c in colls:
        assert c.result.dtype == np.float32
        assert c.result.tobytes() == first
    stacked = np.array(datas, dtype=np.float64).reshape(len(datas), -1)
    ref = stacked.sum(axis=0)
    bound = len(datas) * EPS32 * np.abs(stacked).sum(axis=0)
    assert np.all(np.abs(colls[0].result.astype(np.float64) - ref) <= bound)


def test_chunk_bounds_spread_remainder() -> None:
    assert chunk_bounds(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert chunk_bounds(0, 3) == [(0, 0), (0, 0), (0, 0)]
    assert chunk_bounds(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert slice_bounds(0, 4) == [(0, 0)]
    assert slice_bounds(2, 4) == [(0, 1), (1, 2)]
    assert steps_per_collective("allreduce", 4) == 6
    assert steps_per_collective("allgather", 4) == 3


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size_kind", ["zero", "one", "n-1", "n+1"])
def test_allreduce_small_sizes(n: int, size_kind: str) -> None:
    size = {"zero": 0, "one": 1, "n-1": n - 1, "n+1": n + 1}[size_kind]
    datas = inputs(n, size)
    colls = make("allreduce", datas)
    run_ring(colls, seed=n + size)
    assert_allreduce(colls, datas)
    assert [s for s, _, _ in colls[0].step_log] == list(range(2 * (n - 1)))


@pytest.mark.parametrize("n", [2, 4])
def test_allreduce_million_elements(n: int) -> None:
    datas = inputs(n, 1_000_003)
    colls = make("allreduce", datas)
    run_ring(colls, mss=200_000)
    assert_allreduce(colls, datas)


def test_allreduce_eight_ranks_medium() -> None:
    datas = inputs(8, 10_007)
    colls = make("allreduce", datas)
    run_ring(colls, seed=3)
    assert_allreduce(colls, datas)


def test_single_rank_is_identity() -> None:
    data = inputs(1, 5)[0]
    c = RingCollective("allreduce", 0, 1, data, step_base=0, step_timeout=1.0)
    c.start(0.0)
    assert c.done and c.poll(0.0) == [] and c.result.tobytes() == data.tobytes()


@pytest.mark.parametrize("n,size", [(2, 7), (4, 0), (4, 5), (5, 1001)])
def test_allgather(n: int, size: int) -> None:
    datas = inputs(n, size)
    colls = make("allgather", datas)
    run_ring(colls, seed=size)
    expected = np.concatenate([datas[i][a:b] for i, (a, b) in enumerate(chunk_bounds(size, n))])
    for c in colls:
        assert c.error is None and c.result.tobytes() == expected.astype(np.float32).tobytes()
        assert len(c.step_log) == n - 1


@pytest.mark.parametrize("n,size", [(2, 7), (4, 0), (4, 5), (5, 1001)])
def test_reducescatter(n: int, size: int) -> None:
    datas = inputs(n, size)
    colls = make("reducescatter", datas)
    run_ring(colls, seed=size)
    ref = np.array(datas, dtype=np.float64).reshape(n, -1).sum(axis=0)
    for r, c in enumerate(colls):
        a, b = chunk_bounds(size, n)[r]
        assert c.error is None and c.result.shape == (b - a,)
        assert np.allclose(c.result, ref[a:b], rtol=0, atol=n * EPS32 * 10)


@pytest.mark.parametrize("slices", [2, 3, 8])
def test_slicing_gives_identical_bits(slices: int) -> None:
    datas = inputs(4, 4099)
    whole = make("allreduce", datas)
    run_ring(whole, seed=5)
    sliced = make("allreduce", datas, slices=slices)
    run_ring(sliced, seed=6, mss=333)
    assert_allreduce(sliced, datas)
    assert sliced[0].result.tobytes() == whole[0].result.tobytes()


def test_slices_are_forwarded_before_the_step_completes() -> None:
    """Slice 0 of step 1 leaves as soon as slice 0 of step 0 has arrived."""
    datas = inputs(3, 300)
    c = RingCollective("allreduce", 1, 3, datas[1], step_base=0, slices=2, step_timeout=5.0)
    c.start(0.0)
    first = c.poll(0.0)
    assert [(s.step, s.offset, s.last) for s in first] == [(0, 0, False), (0, 200, True)]
    left = RingCollective("allreduce", 0, 3, datas[0], step_base=0, slices=2, step_timeout=5.0)
    left.start(0.0)
    slice0 = left.poll(0.0)[0]
    c.on_delivery(FakeDelivery(0, slice0.step, slice0.offset, slice0.payload, slice0.last), 0.5)
    out = c.poll(0.5)
    assert [(s.step, s.offset) for s in out] == [(1, 0)]
    assert c.step_log == []  # step 0 not complete yet


def test_future_step_data_is_buffered() -> None:
    """Data of step s+1 arriving before step s never overwrites step s."""
    n, size = 3, 9
    datas = inputs(n, size)
    ref_colls = make("allreduce", datas)
    run_ring(ref_colls)
    colls = make("allreduce", datas)
    for c in colls:
        c.start(0.0)
    pending = {r: [] for r in range(n)}
    # Let ranks 0 and 2 run step 0 and 1 among themselves while rank 1's step-0 data is held.
    for r, c in enumerate(colls):
        for req in c.poll(0.0):
            pending[req.dst_rank] += packetize(r, req, 1000)
    held = pending[2]  # rank 1 -> rank 2, step 0
    pending[2] = []
    colls[0].on_delivery(pending[0].pop(), 0.1)  # rank 2 -> rank 0 step 0
    colls[1].on_delivery(pending[1].pop(), 0.1)  # rank 0 -> rank 1 step 0
    # Rank 1 now sends its step-1 data to rank 2, which still waits for step 0.
    step1 = [d for req in colls[1].poll(0.1) for d in packetize(1, req, 1000)]
    assert [d.step for d in step1] == [1]
    assert colls[2].on_delivery(step1[0], 0.2)
    assert colls[2].step_log == []
    for d in held:
        colls[2].on_delivery(d, 0.3)
    assert [s for s, _, _ in colls[2].step_log] == [0, 1]
    # Finish the run and compare bits with an undisturbed run.
    queues = {r: [] for r in range(n)}
    for r, c in enumerate(colls):
        for req in c.poll(0.3):
            queues[req.dst_rank] += packetize(r, req, 1000)
    for r in range(n):
        for d in pending[r]:
            colls[r].on_delivery(d, 0.3)
    t = 0.4
    while any(queues.values()) or not all(c.done for c in colls):
        for r in range(n):
            while queues[r]:
                colls[r].on_delivery(queues[r].pop(0), t)
        for r, c in enumerate(colls):
            for req in c.poll(t):
                queues[req.dst_rank] += packetize(r, req, 1000)
        t += 0.1
        assert t < 10
    for c in colls:
        assert c.result.tobytes() == ref_colls[0].result.tobytes()


def test_next_collective_data_is_refused() -> None:
    """A delivery for a step after this collective returns False for the caller to keep."""
    c = RingCollective("allreduce", 1, 4, inputs(1, 8)[0], step_base=6, step_timeout=5.0)
    c.start(0.0)
    assert c.on_delivery(FakeDelivery(0, 12, 0, b"", True), 0.1) is False
    assert c.on_delivery(FakeDelivery(0, 11, 0, b"", False), 0.1) is True


def test_steps_wrap_modulo_2_16() -> None:
    datas = inputs(4, 33)
    base = 65536 - 3  # steps 65533 .. 65538 travel as 65533, 65534, 65535, 0, 1, 2
    colls = make("allreduce", datas, step_base=base)
    run_ring(colls)
    assert_allreduce(colls, datas)
    assert [s for s, _, _ in colls[0].step_log] == list(range(base, base + 6))


def test_step_log_definitions() -> None:
    datas = inputs(4, 100)
    colls = make("allreduce", datas, step_base=12)
    run_ring(colls, seed=2)
    for c in colls:
        log = c.step_log
        assert [s for s, _, _ in log] == list(range(12, 18))
        assert log[0][1] == 0.0  # step 0 starts at start()
        for (_, start, end), (_, nstart, _) in zip(log, log[1:], strict=False):
            assert start <= end and nstart == end  # whole chunks: forwarded on arrival


def test_dead_rank_names_itself_in_the_error() -> None:
    """Rank 2 stops after a few packets: rank 3 reports it, the others time out too."""
    datas = inputs(4, 4000)
    colls = make("allreduce", datas, step_timeout=10.0)
    run_ring(colls, kill=2, kill_after=6, mss=1000)
    assert all(c.done for c in colls)
    assert colls[3].error is not None and colls[3].error.endswith("no data from rank 2 within 10 s")
    assert colls[3].error.startswith("step ")
    assert colls[3].result is None
    for r in (0, 1):  # the failure propagates: each waits for its own left neighbour
        assert colls[r].error is not None and f"from rank {(r - 1) % 4} " in colls[r].error


def test_invalid_arguments() -> None:
    data = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="collective"):
        RingCollective("broadcast", 0, 2, data, step_base=0, step_timeout=1.0)
    with pytest.raises(ValueError, match="rank"):
        RingCollective("allreduce", 2, 2, data, step_base=0, step_timeout=1.0)
    with pytest.raises(TypeError, match="float32"):
        RingCollective("allreduce", 0, 2, data.astype(np.float64), step_base=0, step_timeout=1.0)
    with pytest.raises(ValueError, match="slices"):
        RingCollective("allreduce", 0, 2, data, step_base=0, slices=0, step_timeout=1.0)


# --- over the lossy test channel (hostapps.lossychannel) ------------------------------------


def run_sim(colls: list[RingCollective], link, *, seed: int = 0, until: float = 120.0, on_event=None):
    from hostapps.transport import Transport, TransportConfig

    net = lossychannel.LossyChannel(seed=seed, default_link=link, on_event=on_event)
    cfg = TransportConfig(line_rate_bps=link.rate_bps, mtu=1500)
    for c in colls:
        c.start(0.0)
        net.add_node(Transport(0, c.rank, cfg, rate_control="dcqcn"), c)
    net.run(until=until, stop=lambda s: all(c.done for c in colls), max_events=5_000_000)
    return net


@pytest.mark.parametrize(
    "n,size,slices,seed",
    [(2, 1_001, 1, 1), (4, 10_007, 1, 2), (4, 10_007, 3, 3), (8, 9, 1, 4), (8, 0, 2, 5)],
)
def test_allreduce_over_lossy_sim(n: int, size: int, slices: int, seed: int) -> None:
    link = lossychannel.LinkConfig(rate_bps=10e6, delay=0.0005, loss=0.02, duplicate=0.02, reorder=0.1)
    datas = inputs(n, size, seed)
    colls = make("allreduce", datas, slices=slices, step_base=3 * 2 * (n - 1))
    net = run_sim(colls, link, seed=seed)
    assert_allreduce(colls, datas)
    lost = sum(s["lost"] for s in net.stats()["links"].values())
    assert size < 10_000 or lost > 0  # the big cases really exercised retransmission


def test_dead_rank_over_sim_names_it() -> None:
    """Rank 1 goes silent at t = 100 ms (in step 1): rank 2 fails naming rank 1 in time."""
    import dataclasses

    link = lossychannel.LinkConfig(rate_bps=10e6, delay=0.0005)
    datas = inputs(4, 100_000)  # ~80 ms per step at 10 Mbit/s: dies mid-collective
    colls = make("allreduce", datas, step_timeout=2.0)
    killed: list[float] = []

    def kill(now: float) -> None:
        if now >= 0.1 and not killed:
            killed.append(now)
            for name, ln in net_ref[0].links.items():
                if name.startswith("j0r1->") or name.endswith("->j0r1"):
                    ln.config = dataclasses.replace(ln.config, loss=1.0)

    net_ref: list = []
    from hostapps.transport import Transport, TransportConfig

    net = lossychannel.LossyChannel(seed=0, default_link=link, on_event=kill)
    net_ref.append(net)
    for c in colls:
        c.start(0.0)
        net.add_node(Transport(0, c.rank, TransportConfig(line_rate_bps=10e6), rate_control="none"), c)
    for src in range(4):  # create every link now so the kill sees them
        for dst in range(4):
            if src != dst:
                net.route((0, src), (0, dst))
    end = net.run(until=60.0, stop=lambda s: colls[2].done, max_events=5_000_000)
    assert colls[2].error is not None and "no data from rank 1 within 2 s" in colls[2].error
    assert colls[2].error.startswith("step 1:")
    # Bound: packets already in flight (< 50 ms of queue) plus one timeout.
    assert end <= killed[0] + 0.05 + 2.0
