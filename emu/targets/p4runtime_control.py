"""The controller's view of a switch over P4Runtime, the same client for every target.

docs/DESIGN.md section 2. :class:`P4RuntimeControl` is the
:class:`~emu.control.SwitchControl` that ``emu.controller`` uses on both targets in Mininet
runs: one p4runtime-shell ``P4RuntimeClient`` per switch writes the table entries
(:class:`~emu.targets.bmv2_control.P4RuntimeTables`) and reads the counters; what
P4Runtime does not carry goes through the target's side channel (``side``, a
SwitchControl):

- embedded: registers over P4Runtime too; queue rate/depth/delay, ``stats()`` and
  ``shutdown`` over the switch's control socket (``ControlClient``);
- bmv2: registers, queue rate/depth through the Thrift CLI
  (:class:`~emu.targets.bmv2_control.Bmv2Control`), since bmv2 serves neither register
  reads nor queue settings over P4Runtime.

Every failure is a one-line ControlError; a write refused because another P4Runtime
client (a student's p4runtime-shell with a higher election id) became primary says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emu.control import ControlError, SwitchControl, TableEntry
from emu.encoding import canonical_bytes, parse_value
from emu.targets.bmv2_control import P4RuntimeTables, ProgramSchema, build_entry

__all__ = ["P4RuntimeControl", "controller_election_id"]

#: Election id of the controller: (high, low). A student's client takes over with a higher one.
CONTROLLER_ELECTION_ID = (0, 1)


def controller_election_id() -> tuple[int, int]:
    """The controller's P4Runtime election id (a client with a higher one becomes primary)."""
    return CONTROLLER_ELECTION_ID


def _one_line(e: BaseException) -> str:
    text = " ".join((str(e) or type(e).__name__).split())
    if "PERMISSION_DENIED" in text:
        text += " (another P4Runtime client is primary: disconnect it to let the controller write)"
    return text


class P4RuntimeControl(SwitchControl):
    """SwitchControl over one P4Runtime client plus a target side channel.

    p4info: the switch's P4Info (names, widths, ids); client: p4runtime-shell's
    ``P4RuntimeClient`` (``write_update``, ``read_one``); side: the target's SwitchControl
    for what P4Runtime does not serve; registers_over_p4runtime: whether register reads and
    writes go over P4Runtime (embedded) or to ``side`` (bmv2); on_close: tears the client
    down.
    """

    def __init__(self, p4info: Any, client: Any, side: SwitchControl, *,
                 registers_over_p4runtime: bool, on_close: Callable[[], None] | None = None) -> None:
        from p4.v1 import p4runtime_pb2

        self.pb = p4runtime_pb2
        self.schema = ProgramSchema.from_p4info(p4info)
        self.client = client
        self.side = side
        self.registers_over_p4runtime = registers_over_p4runtime
        self.tables = P4RuntimeTables(client)
        self._on_close = on_close
        self._counter_ids = {c.preamble.name: c.preamble.id for c in p4info.counters}
        self._register_ids = {r.preamble.name: r.preamble.id for r in p4info.registers}

    # -- tables ------------------------------------------------------------------------------
    def _tables(self, op: str, *args: Any) -> None:
        try:
            getattr(self.tables, op)(*args)
        except ControlError as e:
            if "PERMISSION_DENIED" in str(e) and self.reclaim():
                getattr(self.tables, op)(*args)
                return
            raise ControlError(_one_line(e)) from None

    def table_add(self, table: str, match: dict[str, Any], action: str,
                  params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """INSERT over P4Runtime."""
        self._tables("insert", build_entry(self.schema, table, match, action, params, priority))

    def table_modify(self, table: str, match: dict[str, Any], action: str,
                     params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """MODIFY over P4Runtime."""
        self._tables("modify", build_entry(self.schema, table, match, action, params, priority))

    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """DELETE over P4Runtime."""
        self._tables("delete", build_entry(self.schema, table, match, None, None, priority))

    def table_clear(self, table: str) -> None:
        """Read every entry of ``table`` and DELETE each."""
        self._tables("clear", self.schema.table(table))

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """MODIFY of the default entry."""
        self._tables("set_default", build_entry(self.schema, table, None, action, params))

    def table_reset_default(self, table: str) -> None:
        """MODIFY of the default entry with no action (the program's default again)."""
        self._tables("reset_default", self.schema.table(table))

    def table_read(self, table: str) -> list[TableEntry]:
        """Every entry of ``table``, read over P4Runtime (what any client wrote)."""
        try:
            return self.tables.read(self.schema.table(table), self.schema)
        except ControlError as e:
            raise ControlError(_one_line(e)) from None

    # -- counters and registers ---------------------------------------------------------------
    def _read(self, entity: Any, what: str) -> list[Any]:
        try:
            return [e for rep in self.client.read_one(entity) for e in rep.entities]
        except Exception as e:  # noqa: BLE001 - grpc.RpcError / P4RuntimeException: one line
            raise ControlError(f"{what}: read: {_one_line(e)}") from None

    def _write(self, update: Any, what: str) -> None:
        try:
            self.client.write_update(update)
        except Exception as e:  # noqa: BLE001 - P4RuntimeWriteException / grpc.RpcError: one line
            if "PERMISSION_DENIED" in str(e) and self.reclaim():
                self._write(update, what)
                return
            raise ControlError(f"{what}: {_one_line(e)}") from None

    def reclaim(self, timeout_s: float = 2.0) -> bool:
        """Become primary again if no client is primary now (a student's p4runtime-shell that
        took over has gone): re-arbitrate with an election id above the highest one the
        switch has seen (P4Runtime 1.3 section 5.4). False while another client is primary."""
        from google.rpc import code_pb2

        client = self.client
        queues = getattr(client, "stream_in_q", None)
        if queues is None:
            return False
        last = None
        while True:  # the newest arbitration notice says who is primary
            msg = client.get_stream_packet("arbitration", timeout=0)
            if msg is None:
                break
            last = msg
        if last is None or last.arbitration.status.code != code_pb2.NOT_FOUND:
            return False
        high, low = last.arbitration.election_id.high, last.arbitration.election_id.low + 1
        req = self.pb.StreamMessageRequest()
        req.arbitration.device_id = client.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = high, low
        client.stream_out_q.put(req)
        rep = client.get_stream_packet("arbitration", timeout=timeout_s)
        if rep is None or rep.arbitration.status.code != code_pb2.OK:
            return False
        client.election_id = (high, low)
        return True

    def _cell(self, name: str, index: Any, size: int) -> int:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
            raise ControlError(f"{name}: index {index!r} outside 0..{size - 1}")
        return index

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """``(packets, bytes)`` over P4Runtime (one wildcard read for every cell)."""
        size = self.schema.counter(name)
        entity = self.pb.Entity()
        entity.counter_entry.counter_id = self._counter_ids[name]
        if index is not None:
            entity.counter_entry.index.index = self._cell(name, index, size)
        cells = {e.counter_entry.index.index: (int(e.counter_entry.data.packet_count),
                                               int(e.counter_entry.data.byte_count))
                 for e in self._read(entity, f"counter {name}")}
        if index is not None:
            return cells.get(index, (0, 0))
        return [cells.get(i, (0, 0)) for i in range(size)]

    def counter_reset(self, name: str) -> None:
        """Every cell to (0, 0): a P4Runtime write without an index on embedded (it covers the
        whole array), ``counter_reset`` through the Thrift CLI on bmv2 (PI writes one cell)."""
        if not self.registers_over_p4runtime:
            self.side.counter_reset(name)
            return
        self.schema.counter(name)
        update = self.pb.Update(type=self.pb.Update.MODIFY)
        update.entity.counter_entry.counter_id = self._counter_ids[name]
        update.entity.counter_entry.data.packet_count = 0
        update.entity.counter_entry.data.byte_count = 0
        self._write(update, f"counter {name}")

    def reset_state(self) -> None:
        """Every table emptied and back to its default, every register and counter 0."""
        for name in self.schema.tables:
            self.table_clear(name)
            self.table_reset_default(name)
        for name in self.schema.registers:
            self.register_reset(name)
        for name in self.schema.counters:
            self.counter_reset(name)

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or every cell (P4Runtime on embedded, Thrift on bmv2)."""
        if not self.registers_over_p4runtime:
            return self.side.register_read(name, index)
        size, _width = self.schema.register(name)
        entity = self.pb.Entity()
        entity.register_entry.register_id = self._register_ids[name]
        if index is not None:
            entity.register_entry.index.index = self._cell(name, index, size)
        cells = {e.register_entry.index.index: int.from_bytes(e.register_entry.data.bitstring, "big")
                 for e in self._read(entity, f"register {name}")}
        if index is not None:
            return cells.get(index, 0)
        return [cells.get(i, 0) for i in range(size)]

    def _register_update(self, name: str, index: int | None, value: int) -> None:
        size, width = self.schema.register(name)
        update = self.pb.Update(type=self.pb.Update.MODIFY)
        entry = update.entity.register_entry
        entry.register_id = self._register_ids[name]
        if index is not None:
            entry.index.index = self._cell(name, index, size)
        entry.data.bitstring = canonical_bytes(parse_value(value, width, f"register {name}"), width)
        self._write(update, f"register {name}")

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell."""
        if not self.registers_over_p4runtime:
            self.side.register_write(name, index, value)
            return
        self._register_update(name, index, value)

    def register_reset(self, name: str) -> None:
        """Every cell to 0 (a P4Runtime write without an index covers the whole array)."""
        if not self.registers_over_p4runtime:
            self.side.register_reset(name)
            return
        self._register_update(name, None, 0)

    # -- what P4Runtime does not carry ---------------------------------------------------------------
    def set_queue(self, port: int, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> None:
        """Through the target's side channel (P4Runtime has no queue configuration)."""
        self.side.set_queue(port, rate_bps=rate_bps, depth_pkts=depth_pkts, delay_us=delay_us)

    def stats(self) -> dict[str, Any]:
        """The side channel's statistics."""
        return self.side.stats()

    def ping(self) -> str:
        """The side channel's liveness check."""
        return self.side.ping()

    def shutdown(self) -> None:
        """Ask the switch to stop (side channel)."""
        self.side.shutdown()

    def close(self) -> None:
        """Tear the P4Runtime client down and close the side channel (safe twice)."""
        cb, self._on_close = self._on_close, None
        if cb is not None:
            cb()
        self.side.close()
