"""P4Runtime against the embedded switch, programmed with p4runtime-shell as a student would.

The embedded switch's P4Runtime server runs in this process (one per module) on a loopback
port; every test connects ``p4runtime_sh.shell`` to it, writes and reads the Symphony
tables, and where a packet can prove it, sends one through the switch core. The same
tests run against ``simple_switch_grpc`` when bmv2 and p4c are installed (the pipeline
is compiled and pushed first); otherwise those variants skip with the reason.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed: pip install -e '.[test]'")

import grpc  # noqa: E402
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc  # noqa: E402
from p4runtime_sh import shell as sh  # noqa: E402
from p4runtime_sh.p4runtime import P4RuntimeClient, P4RuntimeWriteException  # noqa: E402

from emu.embedded.control import ControlAPI  # noqa: E402
from emu.embedded.core import SwitchCore  # noqa: E402
from emu.embedded.frontend import load_program  # noqa: E402
from emu.embedded.p4info import build_p4info, jenkins_hash  # noqa: E402
from emu.embedded.p4runtime_server import P4RuntimeServer, P4RuntimeService  # noqa: E402
from emu.embedded.runtime import Pipeline  # noqa: E402
from hostapps.wire import MAX_TRACKERS  # noqa: E402

from .p4util import write_program  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4" / "symphony.p4"
LPM = "MyIngress.ipv4_lpm"


@dataclass
class Target:
    """A switch under test: its P4Runtime address, device id and (embedded) its core."""

    name: str
    addr: str
    device_id: int
    core: SwitchCore | None = None
    election: list[int] | None = None

    def next_election_id(self) -> tuple[int, int]:
        """A fresh, higher election id (the server remembers the highest one it saw)."""
        assert self.election is not None
        self.election[0] += 1
        return (0, self.election[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def embedded_target() -> Iterator[Target]:
    pipe = Pipeline(load_program(PROGRAM), seed=1)
    core = SwitchCore(pipe, [1, 2, 3])
    with P4RuntimeServer(P4RuntimeService(ControlAPI(core), device_id=1)) as server:
        assert server.bound is not None
        yield Target("embedded", server.bound, 1, core, [0])


@contextlib.contextmanager
def bmv2_target(tmp: Path) -> Iterator[Target]:
    """simple_switch_grpc with the program compiled by p4c and pushed over P4Runtime."""
    missing = [b for b in ("simple_switch_grpc", "p4c") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"bmv2 not installed: {' and '.join(missing)} missing (docs/bmv2.md)")
    from emu.mininet.bmv2 import compile_program

    json_path, p4info = compile_program(PROGRAM, tmp)
    port = _free_port()
    cmd = ["simple_switch_grpc", "--device-id", "1", "--thrift-port", str(_free_port()), "--no-p4",
           "--notifications-addr", f"ipc://{tmp}/notifications.ipc", "--", "--grpc-server-addr",
           f"127.0.0.1:{port}"]
    with open(tmp / "bmv2.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "simple_switch_grpc did not listen"
            time.sleep(0.05)
        client = P4RuntimeClient(1, f"127.0.0.1:{port}", (0, 1))
        client.set_fwd_pipe_config(str(p4info), str(json_path))
        client.tear_down()
        yield Target("bmv2", f"127.0.0.1:{port}", 1, None, [1])
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module", params=["embedded", "bmv2"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if request.param == "embedded":
        with embedded_target() as t:
            yield t
    else:
        with bmv2_target(tmp_path_factory.mktemp("bmv2")) as t:
            yield t


@pytest.fixture
def shell(target: Target) -> Iterator[Target]:
    """p4runtime-shell connected as primary, as in the P4 tutorials; the tables are emptied after."""
    sh.setup(device_id=target.device_id, grpc_addr=target.addr, election_id=target.next_election_id(),
             verbose=False)
    try:
        yield target
    finally:
        for name in sorted({t.preamble.name for _n, t in sh.context.get_objs(sh.P4Type.table)}):
            sh.TableEntry(name).read(lambda e: e.delete())
        sh.teardown()


def ipv4_frame(dst: str, ttl: int = 64) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") / IP(src="10.0.0.2", dst=dst, ttl=ttl)
                 / UDP(sport=5001, dport=5001) / (b"x" * 16))


def route(dst: str, port: int) -> Any:
    te = sh.TableEntry(LPM)(action="MyIngress.ipv4_forward")
    te.match["hdr.ipv4.dstAddr"] = dst
    te.action["srcAddr"] = "02:01:00:01:00:01"
    te.action["dstAddr"] = "02:00:00:00:00:03"
    te.action["port"] = str(port)
    return te


# -- as a student would ------------------------------------------------------------------------------


def test_insert_read_and_forward(shell: Target) -> None:
    route("10.0.3.0/24", 3).insert()
    entries = list(sh.TableEntry(LPM).read())
    assert len(entries) == 1
    (e,) = entries
    assert e.match["hdr.ipv4.dstAddr"].lpm.value == b"\x0a\x00\x03\x00"
    assert e.match["hdr.ipv4.dstAddr"].lpm.prefix_len == 24
    assert [(p.param_id, p.value) for p in e.action.msg().params] == [
        (1, b"\x02\x01\x00\x01\x00\x01"), (2, b"\x02\x00\x00\x00\x00\x03"), (3, b"\x03")]
    if shell.core is not None:  # the entry forwards packets
        out = shell.core.pipeline.process(ipv4_frame("10.0.3.7"), 1)
        assert out is not None and out[0] == 3 and out[1][:6] == bytes.fromhex("020000000003")
        assert shell.core.pipeline.process(ipv4_frame("10.0.4.7"), 1) is None  # default: drop


def test_counters_read_and_modify(shell: Target) -> None:
    if shell.core is not None:  # an unrouted packet is dropped and counted on its ingress port
        before = shell.core.pipeline.counter_read("MyIngress.drops", 2)[0]
        assert shell.core.pipeline.process(ipv4_frame("10.9.9.9"), 2) is None
        c = sh.CounterEntry("MyIngress.drops")
        c.index = 2
        (got,) = list(c.read())
        assert got.packet_count == before + 1
    c = sh.CounterEntry("MyEgress.symphony_marks")
    c.index = 3
    c.packet_count = 7  # a packets counter: p4runtime-shell refuses a byte_count
    c.modify()
    c2 = sh.CounterEntry("MyEgress.symphony_marks")
    c2.index = 3
    (got,) = list(c2.read())
    assert (got.packet_count, got.byte_count) == (7, 0)
    wildcard = list(sh.CounterEntry("MyEgress.symphony_marks").read())
    assert len(wildcard) == 16 and wildcard[3].packet_count == 7


def test_duplicate_insert_is_already_exists(shell: Target) -> None:
    route("10.0.5.0/24", 2).insert()
    with pytest.raises(P4RuntimeWriteException) as exc:
        route("10.0.5.0/24", 1).insert()
    assert "ALREADY_EXISTS" in str(exc.value)
    (e,) = list(sh.TableEntry(LPM).read())
    assert e.action["port"].value == b"\x02"  # the existing entry stays unchanged


def test_modify_and_delete_missing_are_not_found(shell: Target) -> None:
    with pytest.raises(P4RuntimeWriteException, match="NOT_FOUND"):
        route("10.0.6.0/24", 2).modify()
    with pytest.raises(P4RuntimeWriteException, match="NOT_FOUND"):
        route("10.0.6.0/24", 2).delete()
    route("10.0.6.0/24", 2).insert()
    route("10.0.6.0/24", 1).modify()
    (e,) = list(sh.TableEntry(LPM).read())
    assert e.action["port"].value == b"\x01"
    route("10.0.6.0/24", 1).delete()
    assert list(sh.TableEntry(LPM).read()) == []


def test_default_entry(shell: Target) -> None:
    te = sh.TableEntry(LPM)(is_default=True, action="MyIngress.ipv4_forward")
    te.action["srcAddr"] = "02:01:00:01:00:01"
    te.action["dstAddr"] = "02:00:00:00:00:03"
    te.action["port"] = "3"
    te.modify()
    (d,) = list(sh.TableEntry(LPM)(is_default=True).read())
    assert d.is_default and d.action["port"].value == b"\x03"
    if shell.core is not None:  # a miss now forwards
        assert shell.core.pipeline.process(ipv4_frame("10.7.7.7"), 1)[0] == 3
    with pytest.raises(P4RuntimeWriteException, match="INVALID_ARGUMENT"):
        sh.TableEntry(LPM)(is_default=True, action="MyIngress.drop").insert()
    sh.TableEntry(LPM)(is_default=True).modify()  # no action: back to the program's default_action
    (d,) = list(sh.TableEntry(LPM)(is_default=True).read())
    assert d.action.msg().action_id == sh.context.get_obj_id(sh.P4Type.action, "MyIngress.drop")
    if shell.core is not None:
        assert shell.core.pipeline.process(ipv4_frame("10.7.7.7"), 1) is None


def test_narrow_lpm_prefix_round_trips(shell: Target) -> None:
    """A prefix that ends inside a byte (/20) reads back as written and matches as lpm."""
    route("10.0.16.0/20", 2).insert()
    route("10.0.0.0/8", 1).insert()
    got = {e.match["hdr.ipv4.dstAddr"].lpm.prefix_len: e.match["hdr.ipv4.dstAddr"].lpm.value
           for e in sh.TableEntry(LPM).read()}
    assert got == {20: b"\x0a\x00\x10\x00", 8: b"\x0a\x00\x00\x00"}
    if shell.core is not None:
        assert shell.core.pipeline.process(ipv4_frame("10.0.31.1"), 3)[0] == 2   # in the /20
        assert shell.core.pipeline.process(ipv4_frame("10.0.32.1"), 3)[0] == 1   # only the /8


def test_every_symphony_table_takes_an_entry(shell: Target) -> None:
    """Each table of the program (whatever its keys) takes an entry built from the P4Info alone."""
    tables = {t.preamble.name: t for _n, t in sh.context.get_objs(sh.P4Type.table)}
    assert {LPM, "MyIngress.symphony_config"} <= set(tables)
    for table in tables.values():
        action_id = table.action_refs[0].id
        action = sh.context.get_name_from_id(action_id)
        te = sh.TableEntry(table.preamble.name)(action=action)
        for mf in table.match_fields:
            kind = mf.match_type
            value = {2: "1", 3: f"1/{mf.bitwidth}", 4: "1&&&1", 5: "1..2", 6: "1"}[kind]
            te.match[mf.name] = value
            if kind in (4, 5, 6):
                te.priority = 10
        for p in sh.context.get_obj(sh.P4Type.action, action).params:
            te.action[p.name] = "1"
        te.insert()
        (e,) = list(sh.TableEntry(table.preamble.name).read())
        assert [m.field_id for m in e.msg().match] == [m.id for m in table.match_fields]
        assert [p.value for p in e.action.msg().params] == [b"\x01"] * len(e.action.msg().params)


def test_same_election_id_is_refused(shell: Target) -> None:
    """A second client with the primary's election id is refused (spec 5.4: INVALID_ARGUMENT)."""
    primary_id = (0, shell.election[0]) if shell.election else (0, 1)
    with pytest.raises(SystemExit):  # p4runtime-shell exits when its arbitration stream is refused
        P4RuntimeClient(shell.device_id, shell.addr, primary_id)
    backup = P4RuntimeClient(shell.device_id, shell.addr, (0, 0) if primary_id != (0, 0) else (0, 9))
    try:
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        upd.entity.table_entry.table_id = sh.TableEntry(LPM).id
        with pytest.raises(grpc.RpcError) as exc:
            backup.write_update(upd)
        assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        backup.tear_down()


def test_reads_of_ids_the_switch_lacks(shell: Target) -> None:
    """An unknown id is INVALID_ARGUMENT, as PI's server (simple_switch_grpc) answers it."""
    entity = p4runtime_pb2.Entity()
    entity.counter_entry.counter_id = 0x12FFFFFF
    with pytest.raises(grpc.RpcError) as exc:  # raised while iterating the Read stream
        list(sh.client.read_one(entity))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# -- the embedded server only: what the spec asks of a server ---------------------------------------


@pytest.fixture
def embedded(target: Target) -> Target:
    if target.core is None:
        pytest.skip("checks the embedded server's own answers")
    return target


def _raw_update(kind: int, te: Any) -> Any:
    u = p4runtime_pb2.Update(type=kind)
    u.entity.table_entry.CopyFrom(te)
    return u


def test_server_checks_match_format(shell: Target, embedded: Target) -> None:  # noqa: ARG001
    tid = sh.TableEntry(LPM).id
    te = route("10.0.7.0/24", 2).msg()  # the message p4runtime-shell builds
    bad = p4runtime_pb2.TableEntry()
    bad.CopyFrom(te)
    bad.match[0].lpm.value = b"\x0a\x00\x07\x01"  # a host bit below /24
    with pytest.raises(P4RuntimeWriteException, match=r"INVALID_ARGUMENT.*bits set beyond /24"):
        sh.client.write_update(_raw_update(p4runtime_pb2.Update.INSERT, bad))
    bad.CopyFrom(te)
    bad.match[0].lpm.value = b"\x01\x0a\x00\x07\x00"  # 33 bits
    with pytest.raises(P4RuntimeWriteException, match="OUT_OF_RANGE"):
        sh.client.write_update(_raw_update(p4runtime_pb2.Update.INSERT, bad))
    bad.CopyFrom(te)
    bad.match[0].lpm.value = b"\x00\x0a\x00\x07\x00"  # zero-padded: accepted, read back canonical
    sh.client.write_update(_raw_update(p4runtime_pb2.Update.INSERT, bad))
    (e,) = list(sh.TableEntry(LPM).read())
    assert e.match["hdr.ipv4.dstAddr"].lpm.value == b"\x0a\x00\x07\x00"
    bad.CopyFrom(te)
    bad.priority = 3  # an lpm table takes no priority
    with pytest.raises(P4RuntimeWriteException, match="INVALID_ARGUMENT"):
        sh.client.write_update(_raw_update(p4runtime_pb2.Update.MODIFY, bad))
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = 0  # wildcard over every table
    assert [x.table_entry.table_id for rep in sh.client.read_one(entity) for x in rep.entities] == [tid]


def test_registers_over_p4runtime(shell: Target, embedded: Target) -> None:
    reg = next(r for r in build_p4info(embedded.core.pipeline).registers if r.preamble.name == "MyIngress.frontier")
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    u.entity.register_entry.register_id = reg.preamble.id
    u.entity.register_entry.index.index = 4
    u.entity.register_entry.data.bitstring = b"\x01\x02"
    sh.client.write_update(u)
    assert embedded.core.pipeline.register_read("MyIngress.frontier", 4) == 0x102
    entity = p4runtime_pb2.Entity()
    entity.register_entry.register_id = reg.preamble.id
    cells = [x.register_entry for rep in sh.client.read_one(entity) for x in rep.entities]
    assert len(cells) == MAX_TRACKERS and cells[4].data.bitstring == b"\x01\x02" and cells[0].data.bitstring == b"\x00"
    embedded.core.pipeline.register_reset("MyIngress.frontier")


def test_pipeline_config(shell: Target, embedded: Target, tmp_path: Path) -> None:
    from google.protobuf import text_format

    info = build_p4info(embedded.core.pipeline)
    route("10.0.8.0/24", 2).insert()
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1)
    req.election_id.high, req.election_id.low = sh.client.election_id
    req.action = req.VERIFY
    req.config.p4info.CopyFrom(info)
    sh.client.stub.SetForwardingPipelineConfig(req)
    assert len(list(sh.TableEntry(LPM).read())) == 1  # VERIFY leaves the state alone
    wrong = p4runtime_pb2.SetForwardingPipelineConfigRequest()
    wrong.CopyFrom(req)
    next(t for t in wrong.config.p4info.tables if t.preamble.name == LPM).match_fields[0].bitwidth = 16
    with pytest.raises(grpc.RpcError) as exc:
        sh.client.stub.SetForwardingPipelineConfig(wrong)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not match the program" in exc.value.details() and LPM in exc.value.details()
    # p4runtime-shell's own push of a P4Info file (as p4c writes it) commits and clears the state
    p4info_txt = tmp_path / "symphony.p4info.txtpb"
    p4info_txt.write_text(text_format.MessageToString(info))
    (tmp_path / "symphony.json").write_text("{}")
    sh.client.set_fwd_pipe_config(str(p4info_txt), str(tmp_path / "symphony.json"))
    assert list(sh.TableEntry(LPM).read()) == []
    assert sh.client.api_version()


def _read_status(entities: list[Any], addr: str, device_id: int = 1) -> tuple[list[Any], Any]:
    """Read ``entities`` in one batch: (entities read, the RPC's error or None)."""
    channel = grpc.insecure_channel(addr)
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        req = p4runtime_pb2.ReadRequest(device_id=device_id, entities=entities)
        got: list[Any] = []
        try:
            for rep in stub.Read(req, timeout=10):
                got.extend(rep.entities)
        except grpc.RpcError as e:
            return got, e
        return got, None
    finally:
        channel.close()


def _details(err: Any) -> list[int]:
    from google.rpc import status_pb2

    raw = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    status = status_pb2.Status.FromString(raw)
    out = []
    for d in status.details:
        e = p4runtime_pb2.Error()
        d.Unpack(e)
        out.append(e.canonical_code)
    return out


def test_read_batch_with_a_bad_request(shell: Target, embedded: Target) -> None:  # noqa: ARG001
    """Spec 13.3: the valid requests are answered, the RPC ends UNKNOWN with one p4.Error per
    request in order; 13.2: an empty Entity is INVALID_ARGUMENT."""
    from google.rpc import code_pb2

    route("10.0.9.0/24", 2).insert()
    good = p4runtime_pb2.Entity()
    good.table_entry.table_id = sh.TableEntry(LPM).id
    bad = p4runtime_pb2.Entity()
    bad.counter_entry.counter_id = 0x12FFFFFF
    got, err = _read_status([good, bad, p4runtime_pb2.Entity(), good], embedded.addr)
    assert [e.table_entry.table_id for e in got] == [good.table_entry.table_id] * 2
    assert err is not None and err.code() == grpc.StatusCode.UNKNOWN
    assert _details(err) == [code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    got, err = _read_status([p4runtime_pb2.Entity()], embedded.addr)
    assert got == [] and err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_wildcard_reads_of_kinds_the_program_lacks(shell: Target, embedded: Target) -> None:  # noqa: ARG001
    """finsy's delete_all reads action profile members and groups: no action profile, no entity."""
    entities = []
    for kind in ("action_profile_member", "action_profile_group", "meter_entry", "digest_entry"):
        e = p4runtime_pb2.Entity()
        getattr(e, kind).SetInParent()
        entities.append(e)
    got, err = _read_status(entities, embedded.addr)
    assert (got, err) == ([], None)
    one = p4runtime_pb2.Entity()
    one.action_profile_group.action_profile_id = 0x11000001
    assert _read_status([one], embedded.addr)[1].code() == grpc.StatusCode.INVALID_ARGUMENT


def test_p4info_with_other_table_sizes_is_refused(shell: Target, embedded: Target) -> None:
    """The switch runs the sizes it was built with: a P4Info asking for others is refused,
    naming the table (not accepted and silently not honoured)."""
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=p4runtime_pb2.
                                                          SetForwardingPipelineConfigRequest.VERIFY)
    req.election_id.high, req.election_id.low = sh.client.election_id
    req.config.p4info.CopyFrom(build_p4info(embedded.core.pipeline))
    next(t for t in req.config.p4info.tables if t.preamble.name == LPM).size = 4096
    with pytest.raises(grpc.RpcError) as exc:
        sh.client.stub.SetForwardingPipelineConfig(req)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT and LPM in exc.value.details()


def test_other_device_id_is_not_found(embedded: Target) -> None:
    with pytest.raises(SystemExit):
        P4RuntimeClient(2, embedded.addr, (0, 99))


# -- a narrow (9-bit) lpm key in its own program ------------------------------------------------------


def test_nine_bit_lpm_key(tmp_path: Path) -> None:
    prog = write_program(tmp_path, """
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table by_port {
        key = { sm.ingress_port: lpm; }
        actions = { fwd; drop; }
        size = 8;
        default_action = drop();
    }
    apply { by_port.apply(); }""")
    core = SwitchCore(Pipeline(load_program(prog)), [1, 2])
    with P4RuntimeServer(P4RuntimeService(ControlAPI(core), device_id=1)) as server:
        sh.setup(device_id=1, grpc_addr=server.bound, election_id=(0, 1), verbose=False)
        try:
            te = sh.TableEntry("I.by_port")(action="I.fwd")
            te.match["sm.ingress_port"] = "0x1f0/5"  # top 5 of 9 bits
            te.action["port"] = "2"
            te.insert()
            (e,) = list(sh.TableEntry("I.by_port").read())
            assert (e.match["sm.ingress_port"].lpm.value, e.match["sm.ingress_port"].lpm.prefix_len) == (b"\x01\xf0", 5)
            frame = bytes(6)
            assert core.pipeline.process(frame, 0x1F3)[0] == 2     # 1 1111 0011: in the prefix
            assert core.pipeline.process(frame, 0x0F3) is None     # 0 1111 0011: not
        finally:
            sh.teardown()


# -- arbitration rules (spec 5.4) on the service itself ---------------------------------------------


def test_arbitration_notifications() -> None:
    from google.rpc import code_pb2

    svc = P4RuntimeService(ControlAPI(SwitchCore(Pipeline(load_program(PROGRAM)), [1])), device_id=7)

    def hello(stream: Any, low: int) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 7
        req.arbitration.election_id.low = low
        svc.stream_message(stream, req)

    def statuses(stream: Any) -> list[int]:
        out = []
        while not stream.out.empty():
            out.append(stream.out.get().arbitration.status.code)
        return out

    a, b = svc.open_stream(), svc.open_stream()
    hello(a, 5)
    assert statuses(a) == [code_pb2.OK]
    hello(b, 3)  # lower: backup, only b hears of it
    assert statuses(b) == [code_pb2.ALREADY_EXISTS] and statuses(a) == []
    hello(b, 9)  # higher: b takes over, both hear it
    assert statuses(a) == [code_pb2.ALREADY_EXISTS] and statuses(b) == [code_pb2.OK]
    svc.close_stream(b)  # the primary leaves: no primary
    assert statuses(a) == [code_pb2.NOT_FOUND]
    hello(a, 6)  # below the highest id ever seen (9): still a backup
    assert statuses(a) == [code_pb2.NOT_FOUND]
    hello(a, 10)
    assert statuses(a) == [code_pb2.OK]
    c = svc.open_stream()
    with pytest.raises(Exception, match="already used"):
        hello(c, 10)


#: Every v1model program the embedded switch loads: the project's and the test programs.
V1MODEL_PROGRAMS = [PROGRAM, *sorted((REPO / "tests" / "p4" / "programs").glob("*.p4"))]


#: Programs p4c 1.2.4.9 refuses for its bmv2 back end or P4Runtime, not for the language: the
#: embedded switch runs them (it has neither restriction), p4c gives no P4Info to compare.
P4C_TARGET_REFUSES = {
    "action_selector": "an action_selector constructed in place has no @name (P4Runtime needs one)",
    "exit_copy_out": "exit under a condition inside an action (bmv2 back end)",
    "firewall_hit_miss": "a table applied on two paths of one control (bmv2 back end)",
}
#: Known divergences from p4c 1.2.4.9, found with p4c installed: each a defect of the embedded
#: front end (issue 18) or P4Info (issue 21), reported as an expected failure until it is fixed
#: (then remove its line: the comparison runs again).
P4C_DIVERGES: dict[str, str] = {}


@pytest.mark.parametrize("program", V1MODEL_PROGRAMS, ids=[p.stem for p in V1MODEL_PROGRAMS])
def test_p4info_matches_p4c(program: Path, tmp_path: Path) -> None:
    """p4c's P4Info for each program has our tables, actions (directly called ones too),
    fields, widths, sizes, counters, meters, registers, action profiles, controller headers
    and ids: p4c's own where it is installed, else what scripts/record_p4c_p4info.py recorded
    (tests/p4/p4c/)."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from emu.embedded.p4info import p4info_mismatch

    recorded = REPO / "tests" / "p4" / "p4c" / f"{program.stem}.p4info.txtpb"
    if program.stem in P4C_DIVERGES:
        pytest.xfail(P4C_DIVERGES[program.stem])
    if shutil.which("p4c") is not None:
        from emu.mininet.bmv2 import compile_program
        from emu.targets import SwitchStartError

        try:
            _, p4info_path = compile_program(program, tmp_path)
        except SwitchStartError as e:
            if program.stem in P4C_TARGET_REFUSES:
                pytest.skip(f"p4c refuses it for its target: {P4C_TARGET_REFUSES[program.stem]} ({e})")
            raise
    elif recorded.exists():
        p4info_path = recorded
    else:
        pytest.skip("p4c not installed (docs/bmv2.md) and no recorded P4Info of it (scripts/record_p4c_p4info.py "
                    "records one where p4c is): cannot compare with p4c's P4Info")
    theirs = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info(), allow_unknown_field=True)
    assert p4info_mismatch(build_p4info(Pipeline(load_program(program))), theirs) is None


@pytest.mark.parametrize("program", V1MODEL_PROGRAMS, ids=[p.stem for p in V1MODEL_PROGRAMS])
def test_every_program_has_a_consistent_p4info(program: Path) -> None:
    """Without p4c: every program's P4Info has unique ids, every action ref and direct
    resource resolves (a crash or a dangling id in the P4Info builder shows here)."""
    from emu.embedded.p4info import p4info_mismatch

    info = build_p4info(Pipeline(load_program(program)))
    entities = [*info.tables, *info.actions, *info.counters, *info.direct_counters, *info.meters,
                *info.direct_meters, *info.registers]
    ids = [e.preamble.id for e in entities]
    assert len(ids) == len(set(ids))
    actions = {a.preamble.id for a in info.actions}
    direct = {d.preamble.id for d in (*info.direct_counters, *info.direct_meters)}
    for t in info.tables:
        assert {r.id for r in t.action_refs} <= actions and set(t.direct_resource_ids) <= direct, t.preamble.name
    assert p4info_mismatch(info, info) is None


def test_ids_are_p4cs() -> None:
    """Ids of names p4c assigns in every tutorial P4Info (basic.p4: NoAction, the ipv4_lpm table)."""
    assert 0x01000000 | jenkins_hash("NoAction") & 0xFFFFFF == 21257015
    ids = {t.preamble.name: t.preamble.id for t in build_p4info(Pipeline(load_program(PROGRAM))).tables}
    assert ids[LPM] == 37375156


def test_const_entries_are_read_only() -> None:
    """``const entries`` (the calculator exercise): read back with is_const; writes PERMISSION_DENIED."""
    prog = REPO / "tests" / "p4" / "programs" / "const_entries.p4"
    core = SwitchCore(Pipeline(load_program(prog)), [1, 2])
    info = {t.preamble.name: t for t in build_p4info(core.pipeline).tables}
    assert info["I.calculate"].is_const_table and info["I.calculate"].has_initial_entries
    with P4RuntimeServer(P4RuntimeService(ControlAPI(core), device_id=1)) as server:
        sh.setup(device_id=1, grpc_addr=server.bound, election_id=(0, 1), verbose=False)
        try:
            ops = list(sh.TableEntry("I.calculate").read())
            entity = p4runtime_pb2.Entity()
            entity.table_entry.table_id = info["I.calculate"].preamble.id
            raw = [x.table_entry for rep in sh.client.read_one(entity) for x in rep.entities]
            assert len(ops) == len(raw) == 3 and all(te.is_const for te in raw)
            classes = list(sh.TableEntry("I.classes").read())
            assert len(classes) == 3 and all(e.priority > 0 for e in classes)
            with pytest.raises(P4RuntimeWriteException, match="PERMISSION_DENIED"):
                ops[0].delete()
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=3)  # VERIFY_AND_COMMIT
            req.election_id.low = 1
            req.config.p4info.CopyFrom(build_p4info(core.pipeline))
            sh.client.stub.SetForwardingPipelineConfig(req)
            assert len(list(sh.TableEntry("I.calculate").read())) == 3  # the program's entries stay
        finally:
            sh.teardown()


def test_table_without_default_action_gets_defaultonly_noaction(tmp_path: Path) -> None:
    """As p4c's front end (CreateBuiltins): a table with no default_action has
    ``@defaultonly NoAction`` among its actions and NoAction as its (not const) default, so a
    miss runs NoAction (action_run) and a P4Info made by p4c is accepted; a DEFAULT_ONLY action
    in an entry and a TABLE_ONLY one as the default are PERMISSION_DENIED, as PI's server says."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    prog = write_program(tmp_path, """
    action set_b(bit<8> v) { hdr.h.b = v; }
    action keep() { }
    table t { key = { hdr.h.a: exact; } actions = { set_b; @tableonly keep; } }
    apply {
        sm.egress_spec = 2;
        switch (t.apply().action_run) { NoAction: { hdr.h.e = 7; } default: { } }
    }""")
    core = SwitchCore(Pipeline(load_program(prog)), [1, 2])
    info = build_p4info(core.pipeline)
    (t,) = info.tables
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    scopes = {r.id: (r.scope, list(r.annotations)) for r in t.action_refs}
    assert scopes == {actions["I.set_b"]: (0, []),
                      actions["I.keep"]: (p4info_pb2.ActionRef.TABLE_ONLY, ["@tableonly"]),
                      actions["NoAction"]: (p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])}
    assert not t.const_default_action_id
    assert core.pipeline.process(bytes(6), 1) == (2, bytes([0, 0, 0, 0, 0, 7]))  # a miss: NoAction ran
    svc = P4RuntimeService(ControlAPI(core), device_id=1)
    svc.arbitrate(svc.open_stream(), text_format.Parse("device_id: 1 election_id { low: 1 }",
                                                       p4runtime_pb2.MasterArbitrationUpdate()))

    def write(kind: int, entry: str) -> str:
        req = text_format.Parse(f"device_id: 1 election_id {{ low: 1 }} updates {{ type: {kind} entity {{ "
                                f"table_entry {{ table_id: {t.preamble.id} {entry} }} }} }}", p4runtime_pb2.WriteRequest())
        return svc.write(req)[0][0]

    ins, mod = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY
    hit = "match { field_id: 1 exact { value: '\\x00' } } "
    assert write(ins, hit + f"action {{ action {{ action_id: {actions['NoAction']} }} }}") == "PERMISSION_DENIED"
    assert write(mod, f"is_default_action: true action {{ action {{ action_id: {actions['I.keep']} }} }}") \
        == "PERMISSION_DENIED"
    assert write(ins, hit + f"action {{ action {{ action_id: {actions['I.keep']} }} }}") == "OK"
    assert core.pipeline.process(bytes(6), 1) == (2, bytes(6))  # a hit on keep
    assert write(mod, f"is_default_action: true action {{ action {{ action_id: {actions['NoAction']} }} }}") == "OK"


def test_multicast_groups_and_clone_sessions(shell: Target, embedded: Target) -> None:
    """The packet replication engine as in the tutorials' multicast exercise (p4runtime-shell's
    MulticastGroupEntry / CloneSessionEntry): insert, read back, duplicate, modify, delete."""
    pipe = embedded.core.pipeline
    sh.MulticastGroupEntry(1).add(1, 1).add(2, 1).add(3, 2).insert()
    assert pipe.mcast_groups[1] == [(1, 1), (2, 1), (3, 2)]
    (g,) = list(sh.MulticastGroupEntry(1).read())
    assert [(r.egress_port, r.instance) for r in g.msg().multicast_group_entry.replicas] == [(1, 1), (2, 1), (3, 2)]
    with pytest.raises(P4RuntimeWriteException, match="ALREADY_EXISTS"):
        sh.MulticastGroupEntry(1).add(1, 1).insert()
    sh.MulticastGroupEntry(1).add(2, 0).modify()
    assert pipe.mcast_groups[1] == [(2, 0)]
    sh.CloneSessionEntry(5).add(3, 0).insert()
    assert pipe.mirror_sessions[5] == 3
    (c,) = list(sh.CloneSessionEntry(5).read())
    assert [r.egress_port for r in c.msg().clone_session_entry.replicas] == [3]
    sh.MulticastGroupEntry(1).delete()
    sh.CloneSessionEntry(5).delete()
    assert 1 not in pipe.mcast_groups and 5 not in pipe.mirror_sessions
    with pytest.raises(P4RuntimeWriteException, match="NOT_FOUND"):
        sh.MulticastGroupEntry(1).delete()


def test_action_profiles_over_p4runtime() -> None:
    """Members, groups and entries naming them (spec 9.2), as finsy's delete_all reads and
    deletes them: the P4Info lists the profiles (p4c's names, the tables' implementation_id),
    the wildcard reads answer what was written, deletes in delete_all's order empty them."""
    from google.protobuf import text_format

    prog = REPO / "tests" / "p4" / "programs" / "action_selector.p4"
    core = SwitchCore(Pipeline(load_program(prog)), [1, 2, 3])
    info = build_p4info(core.pipeline)
    profs = {p.preamble.name: p for p in info.action_profiles}
    tables = {t.preamble.name: t for t in info.tables}
    assert sorted(profs) == ["I.paths", "I.tags", "implementation"]
    assert (profs["I.paths"].with_selector, profs["I.paths"].size, profs["I.tags"].with_selector) == (True, 16, False)
    assert tables["I.ecmp"].implementation_id == profs["I.paths"].preamble.id
    assert [m.name for m in tables["I.ecmp"].match_fields] == ["hdr.f.dst"]  # selector keys are no match fields
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    svc = P4RuntimeService(ControlAPI(core), device_id=1)
    svc.arbitrate(svc.open_stream(), text_format.Parse("device_id: 1 election_id { low: 1 }",
                                                       p4runtime_pb2.MasterArbitrationUpdate()))

    def write(kind: int, text: str) -> list[tuple[str, str]]:
        req = text_format.Parse(f"device_id: 1 election_id {{ low: 1 }} updates {{ type: {kind} entity {{ {text} }} }}",
                                p4runtime_pb2.WriteRequest())
        return svc.write(req)

    def read(text: str) -> list[Any]:
        rep, results = svc.read(text_format.Parse(f"device_id: 1 entities {{ {text} }}", p4runtime_pb2.ReadRequest()))
        assert all(code == "OK" for code, _ in results), results
        return list(rep.entities)

    paths, ecmp = profs["I.paths"].preamble.id, tables["I.ecmp"].preamble.id
    ins, dele = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.DELETE
    for mid in (1, 2):
        member = (f"action_profile_member {{ action_profile_id: {paths} member_id: {mid} action {{ "
                  f"action_id: {actions['I.set_port']} params {{ param_id: 1 value: '\\x0{mid}' }} }} }}")
        assert write(ins, member) == [("OK", "")]
    group = f"action_profile_group {{ action_profile_id: {paths} group_id: 7 members {{ member_id: 1 weight: 1 }} "
    assert write(ins, group + "members { member_id: 2 weight: 1 } }") == [("OK", "")]
    missing = f"action_profile_group {{ action_profile_id: {paths} group_id: 8 members {{ member_id: 9 }} }}"
    assert write(ins, missing)[0][0] == "NOT_FOUND"
    entry = (f"table_entry {{ table_id: {ecmp} match {{ field_id: 1 lpm {{ value: '\\x0a\\x00\\x00\\x00' "
             "prefix_len: 8 } } action { action_profile_group_id: 7 } }")
    assert write(ins, entry) == [("OK", "")]
    assert write(dele, f"action_profile_member {{ action_profile_id: {paths} member_id: 1 }}")[0][0] != "OK"  # used
    members = read("action_profile_member { }")
    assert [(e.action_profile_member.member_id, e.action_profile_member.action.params[0].value) for e in members] \
        == [(1, b"\x01"), (2, b"\x02")]
    (g,) = read("action_profile_group { }")
    assert (g.action_profile_group.group_id, [m.member_id for m in g.action_profile_group.members]) == (7, [1, 2])
    (te,) = read(f"table_entry {{ table_id: {ecmp} }}")
    assert te.table_entry.action.action_profile_group_id == 7
    assert write(dele, entry) == [("OK", "")]  # delete_all's order: entries, groups, members
    assert write(dele, f"action_profile_group {{ action_profile_id: {paths} group_id: 7 }}") == [("OK", "")]
    for mid in (1, 2):
        assert write(dele, f"action_profile_member {{ action_profile_id: {paths} member_id: {mid} }}") == [("OK", "")]
    assert read("action_profile_member { }") == [] and read("action_profile_group { }") == []
    _, results = svc.read(text_format.Parse("device_id: 1 entities { action_profile_group { action_profile_id: "
                                            "285212673 } }", p4runtime_pb2.ReadRequest()))
    assert results[0][0] == "INVALID_ARGUMENT"


def test_packet_out_and_packet_in() -> None:
    """Packet I/O as the tutorials' controller does it (p4runtime-shell's PacketOut /
    PacketIn, section 16.1): the P4Info has the controller headers as p4c makes them; a
    PacketOut leaves by the port its metadata names, without its header; a frame the program
    sends to the CPU port arrives as a PacketIn with its ingress port as metadata."""
    prog = REPO / "tests" / "p4" / "programs" / "packet_io.p4"
    core = SwitchCore(Pipeline(load_program(prog)), [1, 2, 3, 255])
    cpm = {c.preamble.name: c for c in build_p4info(core.pipeline).controller_packet_metadata}
    assert (cpm["packet_out"].preamble.id, cpm["packet_in"].preamble.id) == (76689799, 81826293)  # p4c's ids
    assert [(m.id, m.name, m.bitwidth) for m in cpm["packet_in"].metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]
    svc = P4RuntimeService(ControlAPI(core), device_id=1, cpu_port=255,
                           inject=lambda frame: core.receive(255, frame, 0))
    eth = bytes.fromhex("000000000002 000000000001 0800") + b"hello"
    with P4RuntimeServer(svc) as server:
        sh.setup(device_id=1, grpc_addr=server.bound, election_id=(0, 1), verbose=False)
        try:
            sh.PacketOut(eth, egress_port="2").send()
            deadline = time.monotonic() + 10
            out: list[tuple[int, bytes]] = []
            while not out and time.monotonic() < deadline:  # the stream thread injects it
                time.sleep(0.01)
                with contextlib.suppress(Exception):
                    out = svc.run(lambda: core.poll(0))
            assert out == [(2, eth)]
            core.receive(3, eth, 0)
            ((port, frame),) = core.poll(0)
            assert port == 255 and frame[:2] == bytes.fromhex("0180")  # packet_in {ingress_port 3}
            svc.packet_in(frame)
            got: list[Any] = []
            sh.PacketIn().sniff(got.append, timeout=0.3)
            assert len(got) == 1 and got[0].packet.payload == eth
            assert {m.metadata_id: m.value for m in got[0].packet.metadata} == {1: b"\x03", 2: b"\x00"}
        finally:
            sh.teardown()
    assert svc.packet_ins == 1
