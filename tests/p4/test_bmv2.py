"""The bmv2 target: control conversions (always) and the STF vectors on bmv2 (where installed).

- Always: :class:`Bmv2Control` checks names and values and builds exactly the
  ``simple_switch_CLI`` commands and P4Runtime entries it would send (fake Thrift CLI,
  fake table back end, and, where p4runtime-shell is installed, a fake P4RuntimeClient
  that receives the real protobuf updates).
- With ``simple_switch``/``simple_switch_grpc``, ``simple_switch_CLI`` and ``p4c`` on PATH
  and root: every ``tests/p4/stf/*.stf`` runs on bmv2 through the same STF parser and
  matcher as the embedded switch (``emu.embedded.stf.run_stf_on``). The switch is plain
  Thrift + JSON, as in p4c's own STF runner; packets go through veth pairs this test
  creates (names ``bNNNNsP``/``bNNNNhP``) and deletes. Elsewhere these tests skip with
  the reason (docs/bmv2.md says how to get bmv2).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from emu.control import ControlError
from emu.embedded.stf import StfResult, run_stf_on
from emu.targets.bmv2_control import (
    CLI_PRIORITY_BASE,
    CLI_PROMPT,
    PRIORITY_QUEUES,
    Bmv2Control,
    CliSession,
    EntrySpec,
    ProgramSchema,
    TableInfo,
    ThriftCli,
    ThriftTables,
    canonical_bytes,
    cli_error,
    split_cli_output,
)

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4" / "symphony.p4"
STF_FILES = sorted((REPO / "tests" / "p4" / "stf").glob("*.stf"))

# -- a bmv2 JSON as p4c writes it for p4/symphony.p4 (the parts the control path reads) ---------

BMV2_JSON: dict[str, Any] = {
    "header_types": [
        {"name": "ethernet_t", "fields": [["dstAddr", 48, False], ["srcAddr", 48, False], ["etherType", 16, False]]},
        {"name": "ipv4_t", "fields": [["version", 4, False], ["ihl", 4, False], ["diffserv", 6, False],
                                      ["ecn", 2, False], ["totalLen", 16, False], ["identification", 16, False],
                                      ["flags", 3, False], ["fragOffset", 13, False], ["ttl", 8, False],
                                      ["protocol", 8, False], ["hdrChecksum", 16, False], ["srcAddr", 32, False],
                                      ["dstAddr", 32, False]]},
        {"name": "cth_t", "fields": [["type", 8, False], ["flags", 8, False], ["job_id", 16, False]]},
        {"name": "standard_metadata", "fields": [["ingress_port", 9, False], ["egress_spec", 9, False],
                                                 ["egress_port", 9, False]]},
        {"name": "scalars_0", "fields": [["meta.x", 8, False], ["meta.egress_port", 9, False],
                                         ["meta.enq_qdepth", 19, False], ["meta.lead", 16, False]]},
    ],
    "headers": [
        {"name": "ethernet", "header_type": "ethernet_t"},
        {"name": "ipv4", "header_type": "ipv4_t"},
        {"name": "cth", "header_type": "cth_t"},
        {"name": "standard_metadata", "header_type": "standard_metadata"},
        {"name": "scalars", "header_type": "scalars_0"},
    ],
    "actions": [
        {"name": "NoAction", "id": 0, "runtime_data": []},
        {"name": "MyIngress.drop", "id": 1, "runtime_data": []},
        {"name": "MyIngress.ipv4_forward", "id": 2, "runtime_data": [
            {"name": "srcAddr", "bitwidth": 48}, {"name": "dstAddr", "bitwidth": 48}, {"name": "port", "bitwidth": 9}]},
        {"name": "MyIngress.set_symphony_config", "id": 3, "runtime_data": [
            {"name": "flows", "bitwidth": 16}, {"name": "queue_gate", "bitwidth": 19}, {"name": "mode", "bitwidth": 8}]},
        {"name": "MyIngress.untracked", "id": 4, "runtime_data": []},
        {"name": "MyEgress.set_ecn_mark", "id": 5, "runtime_data": [{"name": "threshold", "bitwidth": 17}]},
        {"name": "MyEgress.set_symphony_mark", "id": 6, "runtime_data": [{"name": "threshold", "bitwidth": 17}]},
    ],
    "pipelines": [
        {"name": "ingress", "tables": [
            {"name": "MyIngress.ipv4_lpm", "id": 0, "match_type": "lpm",
             "key": [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr", "target": ["ipv4", "dstAddr"], "mask": None}],
             "actions": ["MyIngress.ipv4_forward", "MyIngress.drop"]},
            {"name": "MyIngress.symphony_config", "id": 1, "match_type": "exact",
             "key": [{"match_type": "exact", "name": "hdr.cth.job_id", "target": ["cth", "job_id"], "mask": None}],
             "actions": ["MyIngress.set_symphony_config", "MyIngress.untracked"]},
        ]},
        {"name": "egress", "tables": [
            {"name": "MyEgress.queue_ecn", "id": 2, "match_type": "range",
             "key": [{"match_type": "exact", "name": "meta.egress_port", "target": ["scalars", "meta.egress_port"],
                      "mask": None},
                     {"match_type": "range", "name": "meta.enq_qdepth", "target": ["scalars", "meta.enq_qdepth"],
                      "mask": None}],
             "actions": ["MyEgress.set_ecn_mark", "NoAction"]},
            {"name": "MyEgress.symphony_marking", "id": 4, "match_type": "exact",
             "key": [{"match_type": "exact", "name": "hdr.cth.job_id", "target": ["cth", "job_id"], "mask": None},
                     {"match_type": "exact", "name": "meta.lead", "target": ["scalars", "meta.lead"], "mask": None}],
             "actions": ["MyEgress.set_symphony_mark", "NoAction"]},
            {"name": "MyEgress.acl", "id": 3, "match_type": "ternary",
             "key": [{"match_type": "ternary", "name": "hdr.ipv4.srcAddr", "target": ["ipv4", "srcAddr"], "mask": None}],
             "actions": ["NoAction"]},
        ]},
    ],
    "register_arrays": [
        {"name": "MyIngress.flow_step", "id": 0, "size": 1024, "bitwidth": 16},
        {"name": "MyIngress.frontier", "id": 1, "size": 16, "bitwidth": 16},
    ],
    "counter_arrays": [
        {"name": "MyIngress.drops", "id": 0, "is_direct": False, "size": 512},
        {"name": "MyEgress.symphony_marks", "id": 1, "is_direct": False, "size": 16},
        {"name": "MyEgress.queue_marks", "id": 3, "is_direct": False, "size": 16},
        {"name": "MyIngress.ipv4_lpm_hits", "id": 2, "is_direct": True, "binding": "MyIngress.ipv4_lpm"},
    ],
}


def cli_text(outputs: Sequence[str]) -> str:
    """What simple_switch_CLI prints on stdout for commands with these outputs (then EOF)."""
    head = "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n"
    return head + "".join(CLI_PROMPT + o + ("\n" if o else "") for o in outputs) + CLI_PROMPT + "\n"


class FakeCli:
    """Records command batches; answers each command with ``replies(cmd)``."""

    def __init__(self, replies: dict[str, str] | None = None) -> None:
        self.batches: list[list[str]] = []
        self.replies = replies or {}
        self.next_handle = 0

    @property
    def commands(self) -> list[str]:
        return [c for b in self.batches for c in b]

    def reply(self, cmd: str) -> str:
        for prefix, text in self.replies.items():
            if cmd.startswith(prefix):
                return text
        if cmd.startswith("table_add"):
            self.next_handle += 1
            return (f"Adding entry to lpm match table {cmd.split()[1]}\nmatch key: ...\n"
                    f"Entry has been added with handle {self.next_handle - 1}")
        if cmd.startswith("counter_read"):
            name, index = cmd.split()[1:3]
            return f"{name}[{index}]=  BmCounterValue(packets={int(index) * 2}, bytes={int(index) * 100})"
        return ""

    def __call__(self, commands: Sequence[str]) -> list[str]:
        self.batches.append(list(commands))
        # round trip through the real output splitter, as ThriftCli does
        return split_cli_output(cli_text([self.reply(c) for c in commands]), len(commands))


class FakeTables:
    """Table back end that records what it is asked to write."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def insert(self, entry: EntrySpec) -> None:
        self.calls.append(("insert", entry))

    def modify(self, entry: EntrySpec) -> None:
        self.calls.append(("modify", entry))

    def delete(self, entry: EntrySpec) -> None:
        self.calls.append(("delete", entry))

    def clear(self, table: TableInfo) -> None:
        self.calls.append(("clear", table.name))

    def set_default(self, entry: EntrySpec) -> None:
        self.calls.append(("set_default", entry))


@pytest.fixture()
def schema() -> ProgramSchema:
    return ProgramSchema.from_bmv2_json(BMV2_JSON)


def thrift_control(schema: ProgramSchema, cli: FakeCli) -> Bmv2Control:
    return Bmv2Control(schema, ThriftTables(cli), cli)


# -- schema and values ------------------------------------------------------------------------


def test_schema_from_bmv2_json(schema: ProgramSchema) -> None:
    lpm = schema.tables["MyIngress.ipv4_lpm"]
    assert [(k.name, k.match, k.bitwidth) for k in lpm.keys] == [("hdr.ipv4.dstAddr", "lpm", 32)]
    assert lpm.actions == ("MyIngress.ipv4_forward", "MyIngress.drop")
    ecn = schema.tables["MyEgress.queue_ecn"]
    assert [(k.name, k.match, k.bitwidth) for k in ecn.keys] == [("meta.egress_port", "exact", 9),
                                                                 ("meta.enq_qdepth", "range", 19)]
    assert schema.actions["MyIngress.ipv4_forward"].params == (("srcAddr", 48, 1), ("dstAddr", 48, 2), ("port", 9, 3))
    assert schema.registers == {"MyIngress.flow_step": (1024, 16), "MyIngress.frontier": (16, 16)}
    assert schema.counters == {"MyIngress.drops": 512, "MyEgress.symphony_marks": 16,
                               "MyEgress.queue_marks": 16}  # the direct counter is left out


# -- tables through the Thrift CLI ------------------------------------------------------------


def test_table_add_cli_commands(schema: ProgramSchema) -> None:
    cli = FakeCli()
    ctl = thrift_control(schema, cli)
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.7/24"}, "MyIngress.ipv4_forward",
                  {"srcAddr": "00:00:00:00:aa:02", "dstAddr": "00:00:00:00:00:02", "port": 2})
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": [0x0A000105, 32]}, "MyIngress.ipv4_forward",
                  {"srcAddr": 0xAA02, "dstAddr": 2, "port": 5})
    ctl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": 2}, "MyIngress.set_symphony_config",
                  {"flows": 2, "queue_gate": 0, "mode": 1}, priority=9)
    ctl.table_add("MyEgress.acl", {"hdr.ipv4.srcAddr": ["10.0.0.0", "255.0.0.255"]}, "NoAction", priority=10)
    ctl.table_set_default("MyIngress.ipv4_lpm", "MyIngress.drop")
    ctl.table_set_default("MyEgress.queue_ecn", "MyEgress.set_ecn_mark", {"threshold": 5})
    assert cli.batches == [
        # host bits below the prefix are cleared; MACs and ports as ints in declaration order
        ["table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0xa000100/24 => 43522 2 2"],
        ["table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0xa000105/32 => 43522 2 5"],
        # exact table: the priority is dropped (bmv2 rejects one)
        ["table_add MyIngress.symphony_config MyIngress.set_symphony_config 0x2 => 2 0 1"],
        # ternary: value masked; priority flipped (the CLI ranks the lowest number first)
        [f"table_add MyEgress.acl NoAction 0xa000000&&&0xff0000ff => {CLI_PRIORITY_BASE - 10}"],
        ["table_set_default MyIngress.ipv4_lpm MyIngress.drop"],
        ["table_set_default MyEgress.queue_ecn MyEgress.set_ecn_mark 5"],
    ]


def test_table_modify_delete_clear_use_handles(schema: ProgramSchema) -> None:
    cli = FakeCli()
    ctl = thrift_control(schema, cli)
    for job in (0, 1):
        ctl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": job}, "MyIngress.untracked")
    ctl.table_modify("MyIngress.symphony_config", {"hdr.cth.job_id": 1}, "MyIngress.set_symphony_config",
                     {"flows": 4, "queue_gate": 3, "mode": 0})
    ctl.table_delete("MyIngress.symphony_config", {"hdr.cth.job_id": 0})
    ctl.table_clear("MyIngress.symphony_config")
    assert cli.commands[2:] == [
        "table_modify MyIngress.symphony_config MyIngress.set_symphony_config 1 4 3 0",
        "table_delete MyIngress.symphony_config 0",
        "table_clear MyIngress.symphony_config",
    ]
    with pytest.raises(ControlError, match=r"MyIngress.symphony_config: no such entry 0x1"):
        ctl.table_delete("MyIngress.symphony_config", {"hdr.cth.job_id": 1})  # cleared above


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.table_add("MyIngress.nope", {}, "x"), "unknown table 'MyIngress.nope' (tables: MyEgress.acl, "),
    (lambda c: c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.src": 1}, "MyIngress.drop"),
     "MyIngress.ipv4_lpm: unknown key field hdr.ipv4.src (did you mean hdr.ipv4.dstAddr?) (keys: hdr.ipv4.dstAddr)"),
    (lambda c: c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/33"}, "MyIngress.drop"),
     "MyIngress.ipv4_lpm: key hdr.ipv4.dstAddr: prefix length 33 outside 0..32"),
    (lambda c: c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.1/32"}, "MyIngress.untracked"),
     "MyIngress.ipv4_lpm: unknown action 'MyIngress.untracked'"),
    (lambda c: c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.1/32"}, "MyIngress.ipv4_forward",
                           {"srcAddr": 1, "dstAddr": 2}), "MyIngress.ipv4_lpm: action MyIngress.ipv4_forward needs parameter port"),
    (lambda c: c.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.1/32"}, "MyIngress.ipv4_forward",
                           {"srcAddr": 1, "dstAddr": 2, "port": 600}),
     "MyIngress.ipv4_lpm: action MyIngress.ipv4_forward parameter port: value 600 does not fit in bit<9>"),
    (lambda c: c.table_add("MyIngress.symphony_config", {}, "MyIngress.untracked"),
     "MyIngress.symphony_config: key hdr.cth.job_id: missing from match"),
    (lambda c: c.table_add("MyEgress.acl", {"hdr.ipv4.srcAddr": [1, 1]}, "NoAction"),
     "MyEgress.acl: ternary/range/optional table needs a priority"),
])
def test_table_errors_are_one_line(schema: ProgramSchema, call: Any, message: str) -> None:
    cli = FakeCli()
    with pytest.raises(ControlError) as exc:
        call(thrift_control(schema, cli))
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
    assert cli.batches == []  # nothing reached the switch


def test_duplicate_and_cli_errors(schema: ProgramSchema) -> None:
    cli = FakeCli({"table_add MyIngress.ipv4_lpm": "Invalid table operation (DUPLICATE_ENTRY)"})
    ctl = thrift_control(schema, cli)
    with pytest.raises(ControlError, match=r"^MyIngress.ipv4_lpm: table_add: Invalid table operation "
                                           r"\(DUPLICATE_ENTRY\)$"):
        ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.1/32"}, "MyIngress.drop")
    ctl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": 3}, "MyIngress.untracked")
    with pytest.raises(ControlError, match="duplicate entry 0x3"):
        ctl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": 3}, "MyIngress.untracked")


# -- tables as P4Runtime entries --------------------------------------------------------------


def p4info_schema() -> ProgramSchema:
    """The JSON schema with P4Runtime ids, as ProgramSchema.from_p4info gives them."""
    s = ProgramSchema.from_bmv2_json(BMV2_JSON)
    ids = {"MyIngress.ipv4_lpm": 37375156, "MyIngress.symphony_config": 41234567, "MyEgress.queue_ecn": 45000001,
           "MyEgress.acl": 45000002, "MyEgress.symphony_marking": 45000003}
    for name, t in list(s.tables.items()):
        keys = tuple(type(k)(k.name, k.match, k.bitwidth, i + 1) for i, k in enumerate(t.keys))
        s.tables[name] = TableInfo(t.name, keys, t.actions, ids[name])
    for i, (name, a) in enumerate(list(s.actions.items())):
        s.actions[name] = type(a)(a.name, a.params, 28792405 + i)
    return s


def test_p4runtime_entries_from_control_calls() -> None:
    tables = FakeTables()
    ctl = Bmv2Control(p4info_schema(), tables, FakeCli())
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.2.9/24"}, "MyIngress.ipv4_forward",
                  {"srcAddr": "00:00:00:00:aa:02", "dstAddr": "00:00:00:00:00:02", "port": 2})
    ctl.table_set_default("MyIngress.ipv4_lpm", "MyIngress.drop")
    ctl.table_clear("MyIngress.ipv4_lpm")
    (op, e), (op2, d), (op3, cleared) = tables.calls
    assert (op, op2, op3, cleared) == ("insert", "set_default", "clear", "MyIngress.ipv4_lpm")
    assert (e.table.id, e.action.id, e.priority, e.default) == (37375156, 28792405 + 2, None, False)
    (m,) = e.match
    assert (m.key.id, m.key.match, m.value, m.prefix_len) == (1, "lpm", 0x0A000200, 24)
    assert [(name, pid, canonical_bytes(v, w)) for name, w, pid, v in e.params] == [
        ("srcAddr", 1, b"\xaa\x02"), ("dstAddr", 2, b"\x02"), ("port", 3, b"\x02")]
    assert (d.default, d.match, d.action.name, d.params) == (True, (), "MyIngress.drop", ())


def test_p4runtime_protobuf_updates() -> None:
    """Where p4runtime-shell is installed: the protobuf updates a P4RuntimeClient receives."""
    pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed (pip install -e '.[bmv2]')")
    from emu.targets.bmv2_control import P4RuntimeTables

    class FakeP4RuntimeClient:
        def __init__(self) -> None:
            self.updates: list[Any] = []
            self.existing: list[Any] = []

        def write_update(self, update: Any) -> None:
            self.updates.append(update)

        def read_one(self, entity: Any) -> Any:
            self.read = entity
            from p4.v1 import p4runtime_pb2

            rep = p4runtime_pb2.ReadResponse()
            for te in self.existing:
                rep.entities.add().table_entry.CopyFrom(te)
            return [rep]

    client = FakeP4RuntimeClient()
    ctl = Bmv2Control(p4info_schema(), P4RuntimeTables(client), FakeCli())
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.1.5/32"}, "MyIngress.ipv4_forward",
                  {"srcAddr": "00:00:00:00:aa:02", "dstAddr": "00:00:00:00:00:02", "port": 5})
    ctl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "0.0.0.0/0"}, "MyIngress.drop")
    ctl.table_add("MyEgress.acl", {"hdr.ipv4.srcAddr": ["10.0.0.1", "255.255.255.255"]}, "NoAction", priority=7)
    ctl.table_set_default("MyEgress.queue_ecn", "MyEgress.set_ecn_mark", {"threshold": 3})
    u0, u1, u2, u3 = client.updates
    assert u0.type == u0.INSERT
    te = u0.entity.table_entry
    assert te.table_id == 37375156 and not te.is_default_action
    assert [(f.field_id, f.lpm.value, f.lpm.prefix_len) for f in te.match] == [(1, b"\x0a\x00\x01\x05", 32)]
    assert te.action.action.action_id == 28792405 + 2
    assert [(p.param_id, p.value) for p in te.action.action.params] == [(1, b"\xaa\x02"), (2, b"\x02"), (3, b"\x05")]
    assert list(u1.entity.table_entry.match) == []  # /0 is a don't-care: the field is omitted
    acl = u2.entity.table_entry
    assert acl.priority == 7  # P4Runtime: higher wins, sent as is
    assert [(f.ternary.value, f.ternary.mask) for f in acl.match] == [(b"\x0a\x00\x00\x01", b"\xff\xff\xff\xff")]
    assert u3.type == u3.MODIFY and u3.entity.table_entry.is_default_action
    assert [p.value for p in u3.entity.table_entry.action.action.params] == [b"\x03"]
    # clear = read every entry, delete each one
    client.existing = [u0.entity.table_entry, u1.entity.table_entry]
    client.updates.clear()
    ctl.table_clear("MyIngress.ipv4_lpm")
    assert client.read.table_entry.table_id == 37375156
    assert [(u.type, u.entity.table_entry) for u in client.updates] == [
        (u0.DELETE, u0.entity.table_entry), (u0.DELETE, u1.entity.table_entry)]

    class Refusing(FakeP4RuntimeClient):
        def write_update(self, update: Any) -> None:
            raise RuntimeError("Error(s) during Write:\n\t* At index 0: ALREADY_EXISTS, 'Match entry exists'\n")

    ctl = Bmv2Control(p4info_schema(), P4RuntimeTables(Refusing()), FakeCli())
    with pytest.raises(ControlError, match=r"^MyIngress.symphony_config: insert: Error\(s\) during Write: \* At index 0: "
                                           r"ALREADY_EXISTS, 'Match entry exists'$"):
        ctl.table_add("MyIngress.symphony_config", {"hdr.cth.job_id": 1}, "MyIngress.untracked")


# -- registers, counters, queues through the Thrift CLI ----------------------------------------


def test_register_commands_and_parsing(schema: ProgramSchema) -> None:
    cli = FakeCli({"register_read MyIngress.frontier 3": "MyIngress.frontier[3]= 17",
                   "register_read MyIngress.frontier": "MyIngress.frontier= " + ", ".join(str(i) for i in range(16))})
    ctl = thrift_control(schema, cli)
    assert ctl.register_read("MyIngress.frontier", 3) == 17
    assert ctl.register_read("MyIngress.frontier") == list(range(16))
    ctl.register_write("MyIngress.flow_step", 64, 65535)
    ctl.register_reset("MyIngress.flow_step")
    assert cli.commands == ["register_read MyIngress.frontier 3", "register_read MyIngress.frontier",
                            "register_write MyIngress.flow_step 64 65535", "register_reset MyIngress.flow_step"]
    with pytest.raises(ControlError, match=r"^register MyIngress.flow_step\[0\]: value 65536 does not fit in bit<16>$"):
        ctl.register_write("MyIngress.flow_step", 0, 65536)
    with pytest.raises(ControlError, match=r"^MyIngress.frontier: index 16 outside 0..15$"):
        ctl.register_read("MyIngress.frontier", 16)
    with pytest.raises(ControlError, match=r"^unknown register 'frontier' \(registers: "):
        ctl.register_read("frontier", 0)


def test_counter_commands_and_parsing(schema: ProgramSchema) -> None:
    cli = FakeCli()
    ctl = thrift_control(schema, cli)
    assert ctl.counter_read("MyIngress.drops", 3) == (6, 300)
    assert ctl.counter_read("MyEgress.symphony_marks") == [(2 * i, 100 * i) for i in range(16)]
    assert cli.batches == [["counter_read MyIngress.drops 3"],
                           [f"counter_read MyEgress.symphony_marks {i}" for i in range(16)]]  # one CLI run


def test_set_queue_commands(schema: ProgramSchema, caplog: pytest.LogCaptureFixture) -> None:
    cli = FakeCli()
    ctl = thrift_control(schema, cli)
    ctl.set_queue(2, rate_bps=10e6, depth_pkts=64, delay_us=500)
    ctl.set_queue(3, rate_bps=0)
    ctl.set_queue(4, depth_pkts=8)
    ctl.set_queue(5, delay_us=100)  # nothing bmv2 can do: no command
    # 10 Mbit/s of 1514-byte frames = 825.6 packets/s
    assert cli.batches == [["set_queue_rate 826 2", "set_queue_depth 64 2"], ["set_queue_rate 0 3"],
                           ["set_queue_depth 8 4"]]
    assert "bmv2 has no per-port delay: port 2 delay 500 us is not modelled" in caplog.text
    assert ctl.stats() == {"target": "bmv2", "delay_not_modelled": [2, 5]}
    with pytest.raises(ControlError, match=r"^set_queue port 2: depth_pkts must be an int >= 1, got 0$"):
        ctl.set_queue(2, depth_pkts=0)


def test_set_queue_with_a_control_queue(schema: ProgramSchema) -> None:
    """With --priority-queues 2 (the bmv2 target), DATA's queue 0 is paced at 1514-byte frames
    and the ACK/NACK/CNP queue 1 at 58-byte ones: an ACK costs its own bits, not a data slot."""
    cli = FakeCli()
    ctl = Bmv2Control(schema, ThriftTables(cli), cli, priority_queues=2)
    ctl.set_queue(2, rate_bps=10e6, depth_pkts=64)
    ctl.set_queue(3, rate_bps=0)
    # 10 Mbit/s: 825.6 frames/s of 1514 bytes, 21551.7 frames/s of 58 bytes
    assert cli.batches == [["set_queue_rate 826 2 0", "set_queue_rate 21552 2 1", "set_queue_depth 64 2"],
                           ["set_queue_rate 0 3 0", "set_queue_rate 0 3 1"]]


def test_cli_output_splitting_and_errors() -> None:
    text = cli_text(["MyIngress.frontier[0]= 3", "Error: Invalid register name (MyIngress.nope)", ""])
    outs = split_cli_output(text, 3)
    assert outs == ["MyIngress.frontier[0]= 3", "Error: Invalid register name (MyIngress.nope)", ""]
    assert cli_error(outs[0]) is None
    assert cli_error(outs[1]) == "Error: Invalid register name (MyIngress.nope)"
    assert cli_error("*** Unknown syntax: frob") == "*** Unknown syntax: frob"
    cli = FakeCli({"register_read": "Error: Invalid register name (MyIngress.frontier)"})
    ctl = thrift_control(ProgramSchema.from_bmv2_json(BMV2_JSON), cli)
    with pytest.raises(ControlError, match=r"^register MyIngress.frontier: Error: Invalid register name"):
        ctl.register_read("MyIngress.frontier", 0)


def test_thrift_cli_runs_the_binary(tmp_path: Path) -> None:
    """ThriftCli feeds commands on stdin and splits the prompts (a stand-in binary)."""
    fake = tmp_path / "fake_cli"
    fake.write_text("#!/bin/sh\necho \"port $2\"\nwhile read -r line; do printf 'RuntimeCmd: got %s\\n' \"$line\"; "
                    "done\nprintf 'RuntimeCmd: '\n")
    fake.chmod(0o755)
    assert ThriftCli(9091, binary=str(fake))(["a 1", "b 2"]) == ["got a 1", "got b 2"]
    with pytest.raises(ControlError, match="is not on PATH"):
        ThriftCli(9091, binary=str(tmp_path / "missing"))(["x"])


def test_cli_session_keeps_one_cli_running(tmp_path: Path) -> None:
    """CliSession writes each command to one running CLI and reads its answer up to the next
    prompt (a stand-in binary); a CLI that exits or is missing is a one-line ControlError."""
    fake = tmp_path / "fake_cli"
    fake.write_text("#!/bin/sh\necho \"Obtaining JSON from switch... port $2\"\nprintf 'RuntimeCmd: '\n"
                    "while read -r line; do [ \"$line\" = quit ] && exit 0; "
                    "printf 'got %s\\nRuntimeCmd: ' \"$line\"; done\n")
    fake.chmod(0o755)
    with CliSession(9091, binary=str(fake)) as cli:
        assert cli(["a 1", "b 2"]) == ["got a 1", "got b 2"]
        assert cli(["c"]) == ["got c"]
        with pytest.raises(ControlError, match="exited"):
            cli(["quit"])
    with pytest.raises(ControlError, match="is not on PATH"):
        CliSession(9091, binary=str(tmp_path / "missing"))


def test_thrift_cli_runs_under_a_python_with_thrift(tmp_path: Path) -> None:
    """simple_switch_CLI is a Python script: it runs under the first interpreter (shebang,
    system, ours) that imports its module, or the reason is one line naming those tried."""
    from emu.targets.bmv2_control import cli_argv

    script = tmp_path / "simple_switch_CLI"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    script.chmod(0o755)
    cli_argv.cache_clear()
    prefix, reason = cli_argv(str(script), module="json")
    assert reason == "" and prefix[-1] == str(script) and "python" in Path(prefix[0]).name
    prefix, reason = cli_argv(str(script), module="no_such_module_xyz")
    assert prefix == () and reason.startswith(f"{script} needs a Python with the no_such_module_xyz module, "
                                              "and none of ") and "python3-thrift" in reason and "\n" not in reason
    cli_argv.cache_clear()


def test_stf_add_lines_become_cli_commands(schema: ProgramSchema) -> None:
    """The STF runner on bmv2 turns 'add'/'setdefault' lines into these commands."""

    class NoWire:
        def __init__(self, api: Any) -> None:
            self.api = api

        def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
            return []

        def drain(self) -> list[tuple[int, bytes]]:
            return []

        def stats(self) -> dict[str, Any]:
            return {}

        def cannot_send(self, frame: bytes) -> str | None:
            return None

        def internal_error(self) -> Exception | None:
            return None

    cli = FakeCli({"register_read MyIngress.frontier 0": "MyIngress.frontier[0]= 0"})
    result = run_stf_on(REPO / "tests" / "p4" / "stf" / "queue_ecn.stf", NoWire(thrift_control(schema, cli)), schema)
    assert cli.commands[:7] == [
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0xa000002/32 => 43522 2 2",
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0xa000003/32 => 43522 2 3",
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 0xa000004/32 => 43522 2 4",
        "table_add MyIngress.symphony_config MyIngress.set_symphony_config 0x2 => 2 0 1",
        "table_add MyEgress.symphony_marking MyEgress.set_symphony_mark 0x2 0x1 => 65536",
        # range keys as LOW->HIGH; STF priority 1 flipped for the CLI
        f"table_add MyEgress.queue_ecn MyEgress.set_ecn_mark 0x2 0x0->0x7ffff => 65536 {CLI_PRIORITY_BASE - 1}",
        f"table_add MyEgress.queue_ecn MyEgress.set_ecn_mark 0x3 0x1->0x1 => 16384 {CLI_PRIORITY_BASE - 1}",
    ]
    assert "counter_read MyEgress.symphony_marks 2" in cli.commands
    assert not result.ok  # no wire: every expect fails with "no packet"
    assert {o.detail for o in result.outcomes if o.what.startswith("expect")} == {"no packet"}


# -- the target class ---------------------------------------------------------------------------


def test_available_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9: the message names every missing piece, p4runtime-shell too, and where p4lang's
    packages exist (issue 10: not for Debian 12, so not for the Vagrant box either)."""
    pytest.importorskip("mininet", reason="mininet module not installed")
    from emu.mininet import bmv2

    real_find_spec = bmv2.importlib.util.find_spec
    monkeypatch.setattr(bmv2.shutil, "which", lambda name: None)
    monkeypatch.setattr(bmv2.importlib.util, "find_spec",
                        lambda name: None if name == "p4runtime_sh" else real_find_spec(name))
    ok, reason = bmv2.Bmv2Switch.available()
    assert not ok
    assert reason.startswith("bmv2 target: simple_switch_grpc and p4c and simple_switch_CLI are not on PATH "
                             "(simple_switch_grpc: behavioral-model built with PI/P4Runtime; p4c: p4lang's p4c; "
                             "simple_switch_CLI: ships with behavioral-model), and the Python package p4runtime-shell "
                             "is not installed (pip install -e '.[bmv2]'); "), reason
    assert "sudo ./scripts/install-bmv2.sh" in reason and "not Debian 12" in reason and "from source" in reason
    assert reason.endswith("(docs/bmv2.md), or use --target embedded") and "\n" not in reason
    monkeypatch.setattr(bmv2.importlib.util, "find_spec", real_find_spec)
    monkeypatch.setattr(bmv2.shutil, "which", lambda name: None if name == "p4c" else f"/usr/bin/{name}")
    ok, reason = bmv2.Bmv2Switch.available()
    if real_find_spec("p4runtime_sh") is not None:
        assert reason.startswith("bmv2 target: p4c is not on PATH (p4c: p4lang's p4c); ")
    assert "simple_switch_grpc" not in reason and "install-bmv2.sh" in reason
    monkeypatch.setattr(bmv2.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(bmv2.importlib.util, "find_spec", lambda name: None)
    assert bmv2.Bmv2Switch.available() == (False, "bmv2 target: the Python package p4runtime-shell is not installed "
                                                  "(pip install -e '.[bmv2]'); install it into .venv "
                                                  "(docs/bmv2.md), or use --target embedded")


def test_compile_and_switch_command_lines(tmp_path: Path) -> None:
    pytest.importorskip("mininet", reason="mininet module not installed")
    from emu.mininet import bmv2
    from emu.targets import SwitchOptions

    assert bmv2.compile_command(PROGRAM, tmp_path) == [
        "p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(tmp_path / "symphony.p4info.txtpb"),
        "-o", str(tmp_path), str(PROGRAM)]
    sw = bmv2.Bmv2Switch.__new__(bmv2.Bmv2Switch)  # no Mininet node: only the command line
    sw.name, sw.seed_offset, sw.options = "s2", 1, SwitchOptions(log_dir=tmp_path)
    sw.ports = {type("I", (), {"name": n})(): p for n, p in (("s2-eth2", 2), ("s2-eth1", 1), ("lo", 0))}
    thrift, grpc_port = sw.thrift_port, int(sw.grpc_addr.rsplit(":", 1)[1])
    assert thrift != grpc_port and min(thrift, grpc_port) > 1024  # free ports, picked once per switch
    assert sw.command() == ["simple_switch_grpc", "--device-id", "2", "--thrift-port", str(thrift),
                            "--notifications-addr", f"ipc://{sw.notifications_path}", "-i", "1@s2-eth1",
                            "-i", "2@s2-eth2", "--no-p4", "--", "--priority-queues", "2", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"]
    assert sw.command() == sw.command()  # stable
    other = bmv2.Bmv2Switch.__new__(bmv2.Bmv2Switch)
    other.name, other.seed_offset, other.options = "s3", 2, SwitchOptions(log_dir=tmp_path)
    assert other.notifications_path != sw.notifications_path and str(os.getpid()) in sw.notifications_path.name
    assert len(str(sw.notifications_path)) < 100


# -- the STF vectors on a real bmv2 -------------------------------------------------------------

SWITCH_BINARIES = ("simple_switch", "simple_switch_grpc")
#: A switch is idle when no frame came out for this long (s); p4c's STF runner waits too.
QUIET_S = 0.3
#: Longest wait for the outputs of one packet (s).
MAX_WAIT_S = 5.0
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def bmv2_missing() -> str | None:
    """Why the STF vectors cannot run on bmv2 here (None when they can)."""
    switch = next((b for b in SWITCH_BINARIES if shutil.which(b)), None)
    missing = [n for n, found in (("simple_switch_grpc", switch), ("p4c", shutil.which("p4c")),
                                  ("simple_switch_CLI", shutil.which("simple_switch_CLI"))) if not found]
    if missing:
        return f"bmv2 not installed: {' and '.join(missing)} missing (install p4lang packages, see docs/bmv2.md)"
    if os.geteuid() != 0:
        return "bmv2 STF tests need root (they create veth pairs): run sudo .venv/bin/pytest"
    if shutil.which("ip") is None:
        return "bmv2 STF tests need iproute2 (ip)"
    return None


def _ports(stf: Path) -> list[int]:
    ports = set()
    for line in stf.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] in ("packet", "expect") and words[1].isdigit():
            ports.add(int(words[1]))
    return sorted(ports)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Shortest frame the kernel sends on a veth (an Ethernet header): shorter ones get EINVAL.
VETH_MIN_FRAME_BYTES = 14


class Bmv2StfDevice:
    """simple_switch on veth pairs: ``-i P@<tag>-stf-P``; the test talks on the ``<tag>-stfh-P``
    ends (root namespace: named with a link tag of its own, emu.linknames, as a run's are)."""

    def __init__(self, json_path: Path, ports: list[int], log_path: Path) -> None:
        from emu.linknames import LinkTag

        self.link_tag = LinkTag.claim(f"pytest-{os.getpid()}")  # deletes what a killed holder left
        self.veths = {p: (self.link_tag.intf("stf", p), self.link_tag.intf("stfh", p)) for p in ports}
        self.socks: dict[int, socket.socket] = {}
        #: the last receive ended in a quiet wait (nothing was sent since)
        self.quiet = False
        self.proc: subprocess.Popen | None = None
        try:
            for sw_end, host_end in self.veths.values():
                subprocess.run(["ip", "link", "add", sw_end, "type", "veth", "peer", "name", host_end], check=True)
                for end in (sw_end, host_end):
                    with contextlib.suppress(OSError):  # IPv6 compiled out: nothing to silence
                        Path(f"/proc/sys/net/ipv6/conf/{end}/disable_ipv6").write_text("1")
                    subprocess.run(["ip", "link", "set", end, "up"], check=True)
            for p, (_, host_end) in self.veths.items():
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # nothing queued before bind (packet(7))
                s.bind((host_end, ETH_P_ALL))
                s.setblocking(False)
                self.socks[p] = s
            self.thrift_port = _free_port()
            binary = next(b for b in SWITCH_BINARIES if shutil.which(b))
            cmd = [binary, "--device-id", "0", "--thrift-port", str(self.thrift_port),
                   "--notifications-addr", f"ipc://{log_path.parent}/bmv2-{os.getpid()}-notifications.ipc"]
            for p, (sw_end, _) in self.veths.items():
                cmd += ["-i", f"{p}@{sw_end}"]
            # as the bmv2 target runs it: p4/symphony.p4 sends ACK/NACK/CNP to egress queue 1
            # (standard_metadata.priority), which a one-queue bmv2 drops ("Priority out of range")
            cmd += [str(json_path), "--", "--priority-queues", str(PRIORITY_QUEUES)]
            with open(log_path, "ab") as logf:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 20
            while True:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", self.thrift_port)) == 0:
                        break
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{binary} did not listen on Thrift port {self.thrift_port}; see {log_path}")
                time.sleep(0.05)
            self.cli: CliSession | None = None
            self.cli = CliSession(self.thrift_port)  # one CLI process for every command of the device
            self.schema = ProgramSchema.from_bmv2_json(json_path)
            self.api = Bmv2Control(self.schema, ThriftTables(self.cli), self.cli)
        except BaseException:
            self.close()
            raise

    def reset(self) -> None:
        """The switch as just started, for the next STF file: frames still in flight drained,
        bmv2's ``reset_state`` (every table entry and default, action profile, counter, meter
        and register back to the JSON's) and a control object with no entry handles. Left as
        they were: clone sessions and multicast groups (an STF file that sets them gets a
        switch of its own, :data:`SHARED_SWITCH_SKIPS`) and the RNG of ``random()``."""
        self.drain()
        err = cli_error(self.cli(["reset_state"])[0])
        if err is not None:
            raise RuntimeError(f"bmv2 reset_state failed: {err}")
        self.api = Bmv2Control(self.schema, ThriftTables(self.cli), self.cli)

    def _receive(self, quiet_s: float) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        by_fd = {s.fileno(): p for p, s in self.socks.items()}
        deadline = time.monotonic() + MAX_WAIT_S
        self.quiet = False
        while time.monotonic() < deadline:
            ready, _, _ = select.select(list(self.socks.values()), [], [], quiet_s)
            if not ready:
                self.quiet = True  # the switch is idle
                break
            for s in ready:
                frame, addr = s.recvfrom(65535)
                if addr[2] != PACKET_OUTGOING:  # our own injected frames show up as outgoing
                    out.append((by_fd[s.fileno()], frame))
        return out

    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        self.socks[port].send(frame)
        return self._receive(QUIET_S)

    def drain(self) -> list[tuple[int, bytes]]:
        """Frames still coming: after a quiet wait with no packet sent since (a register or
        counter read after a packet's outputs, a ``wait``), only what already arrived, unless
        something did (then a full quiet wait again)."""
        if self.quiet:
            out = self._receive(0.0)
            if not out:
                self.quiet = True
                return out
            return out + self._receive(QUIET_S)
        return self._receive(QUIET_S)

    def stats(self) -> dict[str, Any]:
        return {"target": "bmv2"}

    def cannot_send(self, frame: bytes) -> str | None:
        """A veth refuses (EINVAL) a frame shorter than an Ethernet header: such STF vectors
        are skipped on bmv2 with this reason (the embedded switch runs them)."""
        if len(frame) < VETH_MIN_FRAME_BYTES:
            return f"a veth carries no frame shorter than {VETH_MIN_FRAME_BYTES} bytes (an Ethernet header)"
        return None

    def internal_error(self) -> Exception | None:
        return None  # bmv2 logs its own errors (switch.log)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "cli", None) is not None:
            self.cli.close()
        for s in self.socks.values():
            s.close()
        self.link_tag.release()  # deletes its veths


@pytest.fixture(scope="module")
def bmv2_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """p4/symphony.p4 compiled for bmv2 once (skips with the reason where bmv2 is missing)."""
    reason = bmv2_missing()
    if reason is not None:
        pytest.skip(reason)
    from emu.mininet.bmv2 import compile_program

    json_path, _ = compile_program(PROGRAM, tmp_path_factory.mktemp("bmv2"))
    return json_path


#: STF commands whose state bmv2's ``reset_state`` keeps: a file with one runs on a switch of its own.
SHARED_SWITCH_SKIPS = ("mirroring_add", "mc_mgrp_create", "mc_node_create", "mc_node_associate")


def _needs_own_switch(stf: Path) -> bool:
    return any(line.split()[:1] and line.split()[0] in SHARED_SWITCH_SKIPS for line in stf.read_text().splitlines())


@pytest.fixture(scope="module")
def bmv2_stf_switch(bmv2_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One simple_switch on the ports of every STF file, shared by the module's STF tests
    (each starts from :meth:`Bmv2StfDevice.reset`): one switch start instead of one per file."""
    ports = sorted({p for stf in STF_FILES for p in _ports(stf)})
    device = Bmv2StfDevice(bmv2_build, ports, tmp_path_factory.mktemp("bmv2-stf") / "switch.log")
    try:
        yield device
    finally:
        device.close()


@pytest.mark.bmv2
@pytest.mark.parametrize("stf", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_symphony_vectors_on_bmv2(stf: Path, bmv2_build: Path, bmv2_stf_switch: Bmv2StfDevice,
                                  tmp_path: Path) -> None:
    own = _needs_own_switch(stf)
    device = Bmv2StfDevice(bmv2_build, _ports(stf), tmp_path / "switch.log") if own else bmv2_stf_switch
    try:
        if not own:
            device.reset()
        result: StfResult = run_stf_on(stf, device, device.schema)
    finally:
        if own:
            device.close()
    report = "\n".join(str(o) for o in result.outcomes)
    assert result.failed == 0, report
    assert result.passed > 0
    for o in result.outcomes:  # frames a veth cannot carry: reported, not failed
        if o.skipped:
            print(o)


def test_bmv2_skip_reason_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert bmv2_missing() == ("bmv2 not installed: simple_switch_grpc and p4c and simple_switch_CLI missing "
                              "(install p4lang packages, see docs/bmv2.md)")


def test_importable_without_p4runtime_shell() -> None:
    """The control module never imports p4runtime-shell (or its protobufs) at import time.

    A fresh interpreter where importing ``p4runtime_sh`` or ``p4`` fails, as where the
    extra is not installed; the Thrift path works there and the P4Runtime path says what
    to install."""
    code = ("import sys\n"
            "sys.modules['p4runtime_sh'] = None\n"  # None in sys.modules: importing it raises ImportError
            "sys.modules['p4'] = None\n"
            "import emu.targets.bmv2_control as mod\n"
            "try:\n"
            "    mod._p4runtime_modules()\n"
            "except mod.ControlError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bmv2 P4Runtime needs p4runtime-shell (")
    assert proc.stdout.rstrip().endswith("pip install -e '.[bmv2]'")


P4INFO_TEXT = """
pkg_info { arch: "v1model" }
tables {
  preamble { id: 37375156 name: "MyIngress.ipv4_lpm" alias: "ipv4_lpm" }
  match_fields { id: 1 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }
  action_refs { id: 28792405 }
  action_refs { id: 25652968 }
  size: 1024
}
tables {
  preamble { id: 45000002 name: "MyEgress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ipv4.srcAddr" bitwidth: 32 match_type: TERNARY }
  action_refs { id: 21257015 }
  size: 16
}
actions { preamble { id: 21257015 name: "NoAction" alias: "NoAction" annotations: "@noWarn(\\"unused\\")" } }
actions { preamble { id: 25652968 name: "MyIngress.drop" alias: "drop" } }
actions {
  preamble { id: 28792405 name: "MyIngress.ipv4_forward" alias: "ipv4_forward" }
  params { id: 1 name: "srcAddr" bitwidth: 48 }
  params { id: 2 name: "dstAddr" bitwidth: 48 }
  params { id: 3 name: "port" bitwidth: 9 }
}
counters { preamble { id: 302 name: "MyIngress.drops" alias: "drops" } spec { unit: PACKETS } size: 512 }
registers {
  preamble { id: 371 name: "MyIngress.frontier" alias: "frontier" }
  type_spec { bitstring { bit { bitwidth: 16 } } }
  size: 16
}
"""


def test_schema_from_p4info() -> None:
    """Where p4runtime-shell (and so the P4Runtime protobufs) is installed."""
    pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed (pip install -e '.[bmv2]')")
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    schema = ProgramSchema.from_p4info(text_format.Parse(P4INFO_TEXT, p4info_pb2.P4Info()))
    lpm = schema.tables["MyIngress.ipv4_lpm"]
    assert (lpm.id, lpm.actions) == (37375156, ("MyIngress.ipv4_forward", "MyIngress.drop"))
    assert [(k.name, k.match, k.bitwidth, k.id) for k in lpm.keys] == [("hdr.ipv4.dstAddr", "lpm", 32, 1)]
    assert schema.tables["MyEgress.acl"].keys[0].match == "ternary"
    fwd = schema.actions["MyIngress.ipv4_forward"]
    assert (fwd.id, fwd.params) == (28792405, (("srcAddr", 48, 1), ("dstAddr", 48, 2), ("port", 9, 3)))
    assert schema.registers == {"MyIngress.frontier": (16, 16)}
    assert schema.counters == {"MyIngress.drops": 512}


@pytest.mark.parametrize(("output", "expected"), [
    # recorded from bmv2 1.15.5's simple_switch_CLI (the issue's failing STF runs)
    ("RuntimeCmd: MyEgress.symphony_marks[0]= (66 bytes, 1 packets)", (1, 66)),
    ("MyIngress.drops[3]=  (0 bytes, 0 packets)", (0, 0)),
    # older bmv2 (Thrift's BmCounterValue repr)
    ("MyIngress.drops[3]=  BmCounterValue(packets=6, bytes=300)", (6, 300)),
    ("Invalid counter operation (INVALID_INDEX)", None),
])
def test_counter_read_output_of_both_bmv2_formats(output: str, expected: tuple[int, int] | None) -> None:
    from emu.targets.bmv2_control import parse_counter_value

    assert parse_counter_value(output) == expected


def test_counter_read_on_bmv2_1_15_format(schema: ProgramSchema) -> None:
    cli = FakeCli({"counter_read MyEgress.symphony_marks 0": "MyEgress.symphony_marks[0]= (66 bytes, 1 packets)"})
    assert thrift_control(schema, cli).counter_read("MyEgress.symphony_marks", 0) == (1, 66)


def test_stats_say_whether_bmv2_kept_up(schema: ProgramSchema) -> None:
    """CPU share since the previous stats() call: a process near one busy core did not keep up."""
    from emu.targets.bmv2_control import SATURATED_CPU_SHARE, process_usage

    samples = iter([(1.0, 10.0), (10.5, 20.0), (10.6, 30.0)])  # (cpu s, wall s)
    ctl = Bmv2Control(schema, ThriftTables(FakeCli()), FakeCli(), usage=lambda: next(samples))
    first, busy, idle = ctl.stats(), ctl.stats(), ctl.stats()
    assert (first["cpu_share"], first["kept_up"]) == (0.1, True)
    assert (busy["cpu_share"], busy["kept_up"]) == (0.95, False) and 0.95 >= SATURATED_CPU_SHARE
    assert (idle["cpu_share"], idle["kept_up"], idle["cpu_s"], idle["wall_s"]) == (0.01, True, 10.6, 30.0)
    assert "cpu_share" not in Bmv2Control(schema, ThriftTables(FakeCli()), FakeCli()).stats()
    t0 = time.monotonic()
    sum(i * i for i in range(200_000))  # some CPU of our own
    cpu, wall = process_usage(os.getpid(), t0 - 1.0)
    assert cpu > 0 and wall >= 1.0
    assert process_usage(2**22 + 12345, t0) is None  # no such process
