"""Traffic manager and SwitchCore on a controllable clock (literal microseconds)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from emu.embedded.core import SwitchCore
from emu.embedded.errors import PacketError
from emu.embedded.link import FifoLink, QueueConfig
from emu.embedded.tm import TrafficManager


def frame(n: int, tag: int = 0) -> bytes:
    return bytes([tag]) * n


# -- TrafficManager alone (items are frames, no egress callback) ----------------------------


def drain(tm: TrafficManager, until_us: int) -> list[tuple[int, int, bytes]]:
    """Run the TM deadline by deadline up to ``until_us``: [(time_us, port, frame)]."""
    out = []
    now = 0
    for _ in range(10_000):
        d = tm.next_deadline_us()
        if d is None or d > until_us:
            break
        now = max(now, d)
        tm.service_until(now)
        out += [(now, p, f) for p, f in tm.due(now)]
    return out


def test_service_rate_spaces_frames() -> None:
    tm = TrafficManager([1])
    tm.set_queue(1, QueueConfig(rate_bps=10e6, depth_pkts=64))
    for i in range(3):
        assert tm.enqueue(1, frame(1250, i), 0) == i
    out = drain(tm, 10_000)
    # 1250 bytes at 10 Mbit/s = 1000 us each, back to back
    assert [(t, p, f[0]) for t, p, f in out] == [(1000, 1, 0), (2000, 1, 1), (3000, 1, 2)]
    assert tm.next_deadline_us() is None


def test_unlimited_rate_is_immediate() -> None:
    tm = TrafficManager([1, 2])
    assert tm.enqueue(2, frame(100), 5) == 0
    tm.service_until(5)
    assert tm.due(5) == [(2, frame(100))]


def test_propagation_delay_added_after_serialisation() -> None:
    tm = TrafficManager([1])
    tm.set_queue(1, QueueConfig(rate_bps=10e6, delay_us=500))
    tm.enqueue(1, frame(1250), 100)
    tm.service_until(100)
    assert tm.due(1599) == []
    assert tm.next_deadline_us() == 1600
    assert tm.due(1600) == [(1, frame(1250))]


def test_depth_tail_drop_counted() -> None:
    tm = TrafficManager([1])
    tm.set_queue(1, QueueConfig(rate_bps=10e6, depth_pkts=4))
    # first packet starts service at once (it leaves the queue), four wait, the
    # fifth waiting packet finds the queue full
    assert tm.enqueue(1, frame(1250, 0), 0) == 0
    tm.service_until(0)
    depths = [tm.enqueue(1, frame(1250, i), 0) for i in range(1, 6)]
    assert depths == [0, 1, 2, 3, None]
    assert tm.tail_drops() == {1: 1}
    assert tm.max_qdepth() == {1: 4}
    assert len(drain(tm, 100_000)) == 5


def test_egress_callback_sees_queue_metadata() -> None:
    seen = []

    def egress(port, item, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_ts, start_us):
        seen.append((item, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_ts, start_us))
        return frame(1250, item)

    tm = TrafficManager([3], service=egress)
    tm.set_queue(3, QueueConfig(rate_bps=10e6))
    for i in range(3):
        tm.enqueue(3, i, 10)
    tm.service_until(10)  # first packet in service, two waiting
    drain(tm, 10_000)
    # egress runs at service start: 10, 1010, 2010 (bmv2 runs egress at dequeue)
    assert seen == [(0, 0, 2, 0, 10, 10), (1, 1, 1, 1000, 10, 1010), (2, 2, 0, 2000, 10, 2010)]


def test_egress_drop_frees_port_at_once() -> None:
    tm = TrafficManager([1], service=lambda port, item, *a: None if item == "drop" else frame(1250))
    tm.set_queue(1, QueueConfig(rate_bps=10e6))
    tm.enqueue(1, "drop", 0)
    tm.enqueue(1, "keep", 0)
    assert drain(tm, 10_000) == [(1000, 1, frame(1250))]


def test_late_caller_gets_virtual_times() -> None:
    """Polling late does not change when frames were (virtually) sent."""
    starts = []
    tm = TrafficManager([1], service=lambda port, item, *a: starts.append(a[-1]) or frame(1250))
    tm.set_queue(1, QueueConfig(rate_bps=10e6))
    for i in range(3):
        tm.enqueue(1, i, 0)
    tm.service_until(5000)
    assert starts == [0, 1000, 2000]
    assert [p for p, _ in tm.due(5000)] == [1, 1, 1]


def test_bad_queue_config() -> None:
    with pytest.raises(ValueError, match="depth_pkts"):
        QueueConfig(depth_pkts=0)
    with pytest.raises(ValueError, match="rate_bps"):
        QueueConfig(rate_bps=-1)


# -- SwitchCore with a fake pipeline -------------------------------------------------------


@dataclass
class FakeState:
    egress_spec: int
    frame: bytes


class FakePipeline:
    """Forwards by the first byte (egress port); 0xEE = P4 drop, 0xBA = parser error,
    0xCC = ingress raises (a bug), 0xCB = ingress raises PacketError, 0xDD = egress raises."""

    #: emu.embedded.core.PipelineLike: queue depths in packets, no copies, no recirculation
    qdepth_unit = None
    last_recirculated = False

    def __init__(self) -> None:
        self.pending: list = []
        self.stats = {"parsed": 0, "parser_errors": 0}
        self.egress_calls: list[dict] = []

    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> FakeState | None:
        self.stats["parsed"] += 1
        tag = frame[0]
        if tag == 0xCC:
            raise RuntimeError("boom")
        if tag == 0xCB:
            raise PacketError("bad frame")
        if tag == 0xBA:
            self.stats["parser_errors"] += 1
            return None
        if tag == 0xEE:
            return None
        return FakeState(tag, frame)

    def egress_at(self, st: FakeState, egress_port: int, enq_qdepth: int, deq_qdepth: int,
                  deq_timedelta_us: int, enq_timestamp_us: int, now_us: int) -> bytes | None:
        self.egress_calls.append({"egress_port": egress_port, "enq_qdepth": enq_qdepth, "deq_qdepth": deq_qdepth,
                                  "deq_timedelta_us": deq_timedelta_us, "enq_timestamp_us": enq_timestamp_us,
                                  "now_us": now_us})
        if st.frame[1] == 0xDD:
            raise ValueError("egress boom")
        return st.frame


def pkt(port: int, n: int = 100, second: int = 0) -> bytes:
    return bytes([port, second]) + bytes(n - 2)


def test_core_forwards_and_counts() -> None:
    pipe = FakePipeline()
    core = SwitchCore(pipe, [1, 2])
    core.receive(1, pkt(2), 10)
    assert core.poll(10) == [(2, pkt(2))]
    assert pipe.egress_calls[0] == {"egress_port": 2, "enq_qdepth": 0, "deq_qdepth": 0, "deq_timedelta_us": 0,
                                    "enq_timestamp_us": 10, "now_us": 10}
    s = core.stats()
    assert s["rx"] == {1: 1, 2: 0} and s["tx"] == {1: 0, 2: 1}
    assert core.next_deadline_us() is None


def test_core_drop_reasons_never_raise() -> None:
    pipe = FakePipeline()
    core = SwitchCore(pipe, [1, 2])
    core.receive(1, b"\xee" * 5, 1)             # runt: enters the pipeline, which drops it
    core.receive(1, b"\x02" * 1519, 2)          # oversize
    core.receive(1, pkt(0xEE), 3)               # P4 drop
    core.receive(1, pkt(0xBA), 4)               # parser error
    core.receive(1, pkt(0xCB), 5)               # ingress rejects the frame (PacketError)
    core.receive(1, pkt(7), 7)                  # egress_spec not a port
    core.receive(9, pkt(2), 8)                  # unknown ingress port
    assert core.poll(10) == []
    drops = core.stats()["drops"]
    assert drops["oversize"] == 1
    assert drops["pipeline"] == 2
    assert drops["malformed"] == 2
    assert drops["bad_port"] == 2
    assert drops["internal"] == 0 and core.internal_error is None
    # still alive
    core.receive(1, pkt(2), 20)
    assert core.poll(20) == [(2, pkt(2))]


def test_core_internal_error_is_counted_apart_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """An exception from the pipeline that is not a PacketError is a bug: dropped and counted
    under drops.internal (not malformed), logged once at error level with the exception."""
    core = SwitchCore(FakePipeline(), [1, 2])
    with caplog.at_level(logging.DEBUG, logger="emu.embedded.core"):
        core.receive(1, pkt(0xCC), 1)               # ingress raises
        core.receive(1, pkt(2, second=0xDD), 2)     # egress raises
        core.receive(1, pkt(0xCC), 3)
        assert core.poll(10) == []
    drops = core.stats()["drops"]
    assert drops["internal"] == 3 and drops["malformed"] == 0
    assert isinstance(core.internal_error, RuntimeError)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "RuntimeError: boom" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    core.receive(1, pkt(2), 20)                     # still alive
    assert core.poll(20) == [(2, pkt(2))]


def test_core_shapes_port() -> None:
    core = SwitchCore(FakePipeline(), [1, 2])
    core.set_queue(2, rate_bps=10e6, depth_pkts=2, delay_us=100)
    for _ in range(5):
        core.receive(1, pkt(2, 1250), 0)
    # one in service + 2 waiting; 2 tail drops
    assert core.stats()["drops"]["tail"] == 2
    assert core.stats()["max_qdepth"][2] == 2
    times = []
    for _ in range(10):
        d = core.next_deadline_us()
        if d is None:
            break
        times += [d] * len(core.poll(d))
    assert times == [1100, 2100, 3100]
    core.set_queue(2, rate_bps=0)  # unlimited again, depth and delay kept
    q = core.stats()["queues"][2]
    assert q == {"rate_bps": None, "depth_pkts": 2, "delay_us": 100, "qdepth": 0}
    with pytest.raises(ValueError, match="unknown port 5"):
        core.set_queue(5, rate_bps=1e6)


def test_fast_path_keeps_port_order_after_rate_change() -> None:
    tm = TrafficManager([1])
    tm.set_queue(1, QueueConfig(rate_bps=10e6))
    tm.enqueue(1, frame(1250, 1), 0)
    tm.service_until(0)                       # A departs at 1000 us, not yet collected
    tm.set_queue(1, QueueConfig())            # unlimited again
    tm.service_until(2000)
    tm.enqueue(1, frame(100, 2), 2000)        # B must not overtake A
    tm.service_until(2000)
    assert [f[0] for _, f in tm.due(2000)] == [1, 2]
    tm.enqueue(1, frame(100, 3), 3000)        # idle now: direct, due at once
    assert tm.next_deadline_us() == 3000
    assert tm.due(3000) == [(1, frame(100, 3))]


def test_queue_depth_in_cells_when_the_pipeline_counts_cells() -> None:
    """T2NA's enq_qdepth/deq_qdepth are in 176-byte cells; the depth limit stays in packets."""
    from emu.embedded.t2na import qdepth_cells

    @dataclass
    class Item:
        packet_length: int

    seen: list[tuple[int, int]] = []

    def service(port, item, enq_qdepth, deq_qdepth, *rest):
        seen.append((enq_qdepth, deq_qdepth))
        return bytes(item.packet_length)

    tm = TrafficManager([1], service=service, qdepth_unit=qdepth_cells)
    tm.set_queue(1, QueueConfig(rate_bps=10e6, depth_pkts=3))
    sizes = [1514, 64, 1514, 1000]  # 9, 1, 9 and 6 cells; the fourth finds 3 waiting: dropped
    assert [tm.enqueue(1, Item(n), 0) for n in sizes] == [0, 9, 10, None]
    drain(tm, 100_000)
    # at each service start: cells ahead on arrival, cells still waiting behind
    assert seen == [(0, 10), (9, 9), (10, 0)]
    assert qdepth_cells(Item(176)) == 1 and qdepth_cells(Item(177)) == 2 and qdepth_cells(Item(0)) == 1


@pytest.mark.parametrize("unit", [None, len])
def test_enqueue_service_is_enqueue_then_service_until(unit) -> None:  # noqa: ANN001
    """The one-call path (its short cut for an idle port included) gives the same egress calls,
    departures, drops and counters as enqueue followed by service_until, on random traffic."""
    import random

    def run(one_call: bool) -> tuple:
        calls: list[tuple] = []

        def service(port, item, enq, deq, wait, enq_ts, start):  # noqa: ANN001, ANN202
            calls.append((port, item, enq, deq, wait, enq_ts, start))
            return None if item[0] == 7 else item  # egress drops some packets

        tm = TrafficManager([1, 2, 3], service=service, ticks_per_us=1000, wire_overhead_bytes=24,
                            qdepth_unit=unit)
        tm.set_queue(1, QueueConfig(rate_bps=100e9, depth_pkts=4, delay_us=1))
        tm.set_queue(2, QueueConfig(rate_bps=25e9, depth_pkts=2))
        rng = random.Random(5)
        now, out, ahead = 0, [], []
        for _ in range(3000):
            now += rng.choice([0, 0, 1, 37, 200, 900])
            d = tm.next_deadline_us()
            if d is not None and d <= now:
                tm.service_until(now)
                out += [(now, p, f) for p, f in tm.due(now)]
            item = bytes([rng.randrange(9)]) + bytes(rng.choice([60, 1000, 4000]))
            port = rng.choice([1, 1, 2, 3])
            if one_call:
                ahead.append(tm.enqueue_service(port, item, now))
            else:
                a = tm.enqueue(port, item, now)
                ahead.append(a)
                if a is not None:
                    tm.service_until(now)
        return calls, out, ahead, tm.tail_drops(), tm.max_qdepth(), tm.next_deadline_us()

    a, b = run(False), run(True)
    assert a == b
    assert any(x is None for x in a[2]) and len(a[1]) > 1000  # drops and departures happened


@pytest.mark.parametrize("depth", [None, 3])
def test_fifo_link_transmit_is_the_traffic_managers_port(depth) -> None:  # noqa: ANN001
    """One link model: a FifoLink driven frame by frame (transmit: the host NIC) gives the same
    departures (rounded up to the ns), tail drops and largest depth as a traffic-manager port
    with the same shaping and no egress stage, on random traffic."""
    import math
    import random

    cfg = QueueConfig(rate_bps=25e9, depth_pkts=depth, delay_us=2)
    tm = TrafficManager([1], ticks_per_us=1000, wire_overhead_bytes=24)
    tm.set_queue(1, cfg)
    link = FifoLink(cfg, ticks_per_us=1000, wire_overhead_bytes=24)
    rng = random.Random(3)
    now, from_tm, from_link, drops = 0, [], [], 0
    for i in range(3000):
        now += rng.choice([0, 0, 1, 50, 300, 2000])
        while (d := tm.next_deadline_us()) is not None and d <= now:
            tm.service_until(d)
            from_tm += [(d, f) for _, f in tm.due(d)]
        item = i.to_bytes(4, "big") + bytes(rng.choice([60, 1000, 4000]))
        tm.service_until(now)
        if tm.enqueue(1, item, now) is None:
            drops += 1
        tm.service_until(now)
        depart = link.transmit(len(item), now)
        if depart is not None:
            from_link.append((math.ceil(depart), item))
    from_tm += [(t, f) for t, _, f in drain(tm, 10**12)]
    assert from_tm == from_link
    assert link.tail_drops == drops == tm.tail_drops()[1]
    assert link.max_qdepth == tm.max_qdepth()[1]
    assert (drops > 100) == (depth is not None)
