"""Control API in process and as JSON lines over a Unix socket (fake pipeline)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from emu.embedded.control import ControlAPI, ControlClient, ControlError, ControlServer
from emu.embedded.core import SwitchCore


class FakeControlPipeline:
    """A pipeline with one table, one register and one counter; names checked like the runtime."""

    #: emu.embedded.core.PipelineLike: queue depths in packets, no copies, no recirculation
    qdepth_unit = None
    last_recirculated = False

    TABLE = "MyIngress.ipv4_lpm"

    def __init__(self) -> None:
        self.pending: list = []
        self.stats: dict[str, int] = {}
        self.entries: dict[str, tuple[str, dict]] = {}
        self.default: tuple[str, dict] = ("MyIngress.drop", {})
        self.regs = {"MyIngress.frontier": [0] * 16}
        self.counters = {"MyIngress.drops": [(0, 0)] * 4}
        self.tables: dict[str, Any] = {}  # no runtime Table objects: ControlAPI keeps no program defaults

    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> None:
        return None

    def egress_at(self, st: Any, *args: int) -> None:
        return None

    def _table(self, table: str) -> None:
        if table != self.TABLE:
            raise ControlError(f"unknown table {table!r}")

    def table_add(self, table, match, action, params, priority):
        self._table(table)
        key = json.dumps(match, sort_keys=True)
        if key in self.entries:
            raise ControlError(f"{table}: duplicate entry {match}")
        self.entries[key] = (action, params)

    def table_set_default(self, table, action, params):
        self._table(table)
        self.default = (action, params)

    def table_clear(self, table):
        self._table(table)
        self.entries.clear()

    def register_read(self, name, index):
        if name not in self.regs:
            raise KeyError(f"unknown register {name!r}")
        return self.regs[name] if index is None else self.regs[name][index]

    def register_write(self, name, index, value):
        if name not in self.regs:
            raise KeyError(f"unknown register {name!r}")
        if not 0 <= value < 1 << 16:
            raise ValueError(f"register {name}: value {value} does not fit bit<16>")
        self.regs[name][index] = value

    def counter_read(self, name, index):
        if name not in self.counters:
            raise ControlError(f"unknown counter {name!r}")
        return self.counters[name] if index is None else self.counters[name][index]


@pytest.fixture
def pipe() -> FakeControlPipeline:
    return FakeControlPipeline()


@pytest.fixture
def api(pipe: FakeControlPipeline) -> ControlAPI:
    return ControlAPI(SwitchCore(pipe, [1, 2]))


def exercise(ctl: Any, pipe: FakeControlPipeline) -> None:
    """The same checks for ControlAPI and ControlClient; ``pipe`` is the pipeline behind ``ctl``."""
    assert ctl.ping() == "pong"
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"}, "MyIngress.ipv4_forward",
                  {"port": 2})
    lpm_entry = json.dumps({"hdr.ipv4.dstAddr": "10.0.1.0/24"}, sort_keys=True)
    assert pipe.entries == {lpm_entry: ("MyIngress.ipv4_forward", {"port": 2})}
    with pytest.raises(ControlError, match="duplicate"):
        ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.0/24"}, "MyIngress.drop")
    with pytest.raises(ControlError, match="MyIngress.nope"):
        ctl.table_add("MyIngress.nope", {}, "MyIngress.drop")
    with pytest.raises(ControlError, match="MyIngress.missing"):
        ctl.register_read("MyIngress.missing", 0)
    with pytest.raises(ControlError, match="does not fit"):
        ctl.register_write("MyIngress.frontier", 1, 1 << 20)
    with pytest.raises(ControlError, match="MyEgress.nothing"):
        ctl.counter_read("MyEgress.nothing", 0)
    with pytest.raises(ControlError, match="not supported"):
        ctl.register_reset("MyIngress.frontier")  # the fake has no register_reset
    ctl.register_write("MyIngress.frontier", 3, 7)
    assert ctl.register_read("MyIngress.frontier", 3) == 7
    assert ctl.register_read("MyIngress.frontier")[3] == 7
    assert ctl.counter_read("MyIngress.drops", 1) == (0, 0)
    assert ctl.counter_read("MyIngress.drops") == [(0, 0)] * 4
    assert pipe.entries == {lpm_entry: ("MyIngress.ipv4_forward", {"port": 2})}  # the duplicate changed nothing
    ctl.table_set_default("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward", {"port": 1})
    assert pipe.default == ("MyIngress.ipv4_forward", {"port": 1})
    ctl.table_set_default("MyIngress.ipv4_lpm", "MyIngress.drop")
    assert pipe.default == ("MyIngress.drop", {})
    ctl.table_clear("MyIngress.ipv4_lpm")
    assert pipe.entries == {}
    ctl.set_queue(2, rate_bps=10e6, depth_pkts=8, delay_us=50)
    with pytest.raises(ControlError, match="port 9"):
        ctl.set_queue(9, rate_bps=10e6)
    with pytest.raises(ControlError, match="depth_pkts"):
        ctl.set_queue(1, depth_pkts=0)
    s = ctl.stats()
    assert s["queues"][2] == {"rate_bps": 10e6, "depth_pkts": 8, "delay_us": 50, "qdepth": 0}
    assert s["rx"] == {1: 0, 2: 0}


def test_in_process(api: ControlAPI, pipe: FakeControlPipeline) -> None:
    exercise(api, pipe)


def test_over_unix_socket(api: ControlAPI, pipe: FakeControlPipeline, tmp_path) -> None:
    stopped = []
    api._on_shutdown = lambda: stopped.append(True)
    path = tmp_path / "ctl" / "s1.sock"
    server = ControlServer(api, path)
    server.start_in_thread()
    try:
        with ControlClient(path, timeout=5.0) as client:
            exercise(client, pipe)
            with pytest.raises(ControlError, match="unknown method"):
                client.call("rm_rf")
            with pytest.raises(ControlError, match="bad params"):
                client.call("register_read", nme="x")
            client.shutdown()
        # raw protocol: one JSON object per line, id echoed, bad JSON answered
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5.0)
            s.connect(str(path))
            f = s.makefile("rwb")
            f.write(b'{"id": 7, "method": "ping"}\nnot json\n')
            f.flush()
            assert json.loads(f.readline()) == {"id": 7, "result": "pong"}
            bad = json.loads(f.readline())
            assert bad["id"] is None and "not JSON" in bad["error"]
    finally:
        server.stop_thread()
    assert stopped == [True]
    assert not path.exists()


def test_over_tcp_localhost(api: ControlAPI) -> None:
    server = ControlServer(api, tcp_port=0)
    server.start_in_thread()
    try:
        host, port = server.address
        assert host == "127.0.0.1"
        with ControlClient((host, port), timeout=5.0) as client:
            assert client.ping() == "pong"
    finally:
        server.stop_thread()


def test_client_connect_timeout(tmp_path) -> None:
    with pytest.raises(ConnectionError, match="cannot connect"):
        ControlClient(tmp_path / "absent.sock", connect_timeout=0.05)


def test_replication_through_the_control_api() -> None:
    """Multicast groups and clone sessions are configured through ControlAPI (and the socket)."""
    from emu.embedded.control import METHODS, ControlAPI
    from emu.embedded.core import SwitchCore
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline

    prog = Path(__file__).resolve().parent / "programs" / "replication.p4"
    pipe = Pipeline(load_program(prog))
    core = SwitchCore(pipe, [1, 2, 3, 4])
    api = ControlAPI(core)
    assert {"mcast_group_set", "mirroring_add"} <= set(METHODS)
    api.mcast_group_set(5, [2, [3, 7]])
    assert pipe.mcast_groups[5] == [(2, 0), (3, 7)]
    frame = bytes.fromhex("000000000002" "000000000001" "0900" "010000000000")
    core.receive(1, frame, 0)
    out = dict(core.poll(0))
    assert sorted(out) == [2, 3] and out[3][16] == 7 and out[3][17] == 5  # rid 7, instance_type 5
    api.mcast_group_delete(5)
    core.receive(1, frame, 1)
    assert core.poll(1) == [] and core.stats()["drops"]["pipeline"] == 1
    api.mirroring_add(7, 4)
    api.mirroring_delete(7)
    with pytest.raises(ControlError, match="no clone session 7"):
        api.mirroring_delete(7)
    with pytest.raises(ControlError, match="multicast group 0"):
        api.mcast_group_set(0, [1])
    with pytest.raises(ControlError, match="does not fit"):
        api.mcast_group_set(1, [512])


def _read_back_contract(ctl: Any, pipe: Any) -> None:
    """table_read, table_reset_default, counter_reset, reset_state on symphony.p4."""
    lpm = "MyIngress.ipv4_lpm"
    params = {"srcAddr": 0x020100010001, "dstAddr": 0x020000000003, "port": 3}
    ctl.table_add(lpm, {"hdr.ipv4.dstAddr": "10.0.3.0/24"}, "MyIngress.ipv4_forward", params)
    (e,) = ctl.table_read(lpm)
    assert (e.table, e.match, e.action, e.params, e.priority) == (
        lpm, {"hdr.ipv4.dstAddr": [0x0A000300, 24]}, "MyIngress.ipv4_forward", params, None)
    ctl.table_set_default(lpm, "MyIngress.ipv4_forward", params)
    assert pipe.table(lpm).default_desc[0] == "MyIngress.ipv4_forward"
    ctl.table_reset_default(lpm)
    assert pipe.table(lpm).default_desc[0] == "MyIngress.drop"  # the program's default_action
    pipe.counters["MyIngress.drops"].packets[1] = 4
    ctl.counter_reset("MyIngress.drops")
    assert ctl.counter_read("MyIngress.drops", 1) == (0, 0)
    ctl.register_write("MyIngress.frontier", 2, 9)
    ctl.table_set_default(lpm, "MyIngress.ipv4_forward", params)
    ctl.reset_state()
    assert ctl.table_read(lpm) == [] and ctl.register_read("MyIngress.frontier", 2) == 0
    assert pipe.table(lpm).default_desc[0] == "MyIngress.drop"
    with pytest.raises(ControlError, match="MyIngress.nope"):
        ctl.table_read("MyIngress.nope")


def test_contract_reads_back_in_process_and_over_the_socket(tmp_path: Path) -> None:
    from emu.control import ReplicationControl
    from emu.embedded.core import SwitchCore
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline

    program = Path(__file__).resolve().parents[2] / "p4" / "symphony.p4"
    pipe = Pipeline(load_program(program))
    api = ControlAPI(SwitchCore(pipe, [1, 2, 3]))
    _read_back_contract(api, pipe)
    server = ControlServer(api, tmp_path / "s1.sock")
    server.start_in_thread()
    try:
        with ControlClient(tmp_path / "s1.sock", timeout=5.0) as client:
            _read_back_contract(client, pipe)
            assert isinstance(client, ReplicationControl)
            client.mcast_group_set(3, [1, [2, 5]])
            client.mirroring_add(4, 2)
            assert client.mcast_groups() == {3: [(1, 0), (2, 5)]} and client.mirror_sessions() == {4: 2}
            client.reset_state()
            assert client.mcast_groups() == {} and client.mirror_sessions() == {}
    finally:
        server.stop_thread()


def test_contract_reads_what_another_p4runtime_client_wrote() -> None:
    """P4RuntimeControl (the controller's view on both targets) reads the switch, so it sees
    an entry that a student's p4runtime-shell wrote."""
    pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed: pip install -e '.[test]'")
    from p4runtime_sh.p4runtime import P4RuntimeClient

    from emu.embedded.core import SwitchCore
    from emu.embedded.frontend import load_program
    from emu.embedded.p4info import build_p4info
    from emu.embedded.p4runtime_server import P4RuntimeServer, P4RuntimeService
    from emu.embedded.runtime import Pipeline
    from emu.targets.p4runtime_control import P4RuntimeControl

    program = Path(__file__).resolve().parents[2] / "p4" / "symphony.p4"
    pipe = Pipeline(load_program(program))
    api = ControlAPI(SwitchCore(pipe, [1, 2, 3]))
    with P4RuntimeServer(P4RuntimeService(api, device_id=1)) as server:
        client = P4RuntimeClient(1, server.bound, (0, 1))
        try:
            ctl = P4RuntimeControl(build_p4info(pipe), client, api, registers_over_p4runtime=True)
            # as if another client wrote it (the controller never did)
            api.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.7.0/24"}, "MyIngress.drop")
            (e,) = ctl.table_read("MyIngress.ipv4_lpm")
            assert (e.match, e.action, e.params) == ({"hdr.ipv4.dstAddr": [0x0A000700, 24]}, "MyIngress.drop", {})
            ctl.table_delete("MyIngress.ipv4_lpm", e.match)
            _read_back_contract(ctl, pipe)
        finally:
            client.tear_down()
