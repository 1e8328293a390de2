"""P4Runtime server of the embedded switch (P4Runtime 1.3; docs/embedded-switch.md).

Any P4Runtime client (p4runtime-shell, finsy, ONOS...) programs the embedded switch as it
programs bmv2's ``simple_switch_grpc``:

- ``GetForwardingPipelineConfig`` returns the P4Info that the embedded front end generates
  for the loaded program (:mod:`emu.embedded.p4info`, p4c's ids);
- ``SetForwardingPipelineConfig`` VERIFY / VERIFY_AND_SAVE / VERIFY_AND_COMMIT / COMMIT /
  RECONCILE_AND_COMMIT with a P4Info that describes the loaded program (a p4c-built one
  included); another P4Info is refused with INVALID_ARGUMENT naming the first difference.
  The switch keeps running the program it was started with (``p4_device_config`` is
  not interpreted); VERIFY_AND_COMMIT clears the forwarding state (entries, default
  actions, registers, counters) as a new pipeline would;
- ``StreamChannel`` arbitration by election id per (device id, role), section 5: the
  highest election id ever seen is primary; an election id already used by another live
  client is refused (the stream ends with INVALID_ARGUMENT); every arbitration change is
  advertised to the clients (OK to the primary, ALREADY_EXISTS / NOT_FOUND to backups);
- ``Write`` (primary only, else PERMISSION_DENIED): table entries INSERT / MODIFY /
  DELETE (an entry of a table with an action profile names a member or a group; MODIFY
  replaces it), action profile members and groups (spec 9.2; member weights 1), default
  entries by MODIFY (no action: back to the program's default), counter
  and register cells by MODIFY, multicast groups and clone sessions (the packet replication
  engine) by INSERT / MODIFY / DELETE; per-update errors as ``p4.Error`` details of an UNKNOWN
  status (section 12.4): ALREADY_EXISTS, NOT_FOUND, RESOURCE_EXHAUSTED, INVALID_ARGUMENT,
  OUT_OF_RANGE, PERMISSION_DENIED, UNIMPLEMENTED;
- ``Read``: table entries (wildcard over tables, entries, default entries, filtered by
  match / priority / action), counters and registers (wildcard over ids and indices),
  multicast groups and clone sessions, action profile members and groups (wildcard over
  profiles and ids); a wildcard read of a kind the program has none of (digests, ...) is empty. A batch answers its valid requests and ends
  UNKNOWN with one ``p4.Error`` per request (section 13.3); a lone bad request ends with its
  own code, as PI's server answers; an unknown id is INVALID_ARGUMENT (as PI);
- ``StreamChannel`` packet I/O (section 16.1) when the switch has a CPU port: a PacketOut
  from the primary enters at the CPU port with the program's ``@controller_header("packet_out")``
  header made from its metadata; a frame the program sends to the CPU port reaches the
  primary as a PacketIn, its ``packet_in`` header given as metadata;
- ``Capabilities``: the p4runtime protos' API version.

Values are P4Runtime bytestrings (:mod:`emu.p4rt`); entries go through the same
:class:`~emu.embedded.control.ControlAPI` as every other control path, so they mean the
same as on the control socket. Every pipeline access runs through ``run`` (the switch's
event loop thread in the switch process, so a request never races a packet).
"""

from __future__ import annotations

import importlib.metadata
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emu.control import ControlError, EntryExistsError, EntryNotFoundError, TableFullError
from emu.embedded.p4info import build_p4info, p4info_mismatch, profile_p4_names
from emu.embedded.tables import GROUP, MEMBER
from emu.encoding import ActionInfo, KeyField, canonical_bytes, needs_priority
from emu.p4rt import P4RuntimeStatus, decode_bytes, match_from_proto, match_to_proto, match_to_spelling

__all__ = ["P4RuntimeServer", "P4RuntimeService", "locked_runner", "loop_runner"]

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Most StreamChannel clients per switch at once (more: RESOURCE_EXHAUSTED).
MAX_STREAMS = 8
#: Longest wait for the switch loop to run one request (s).
RUN_TIMEOUT_S = 30.0
_KINDS = {2: "exact", 3: "lpm", 4: "ternary", 5: "range", 6: "optional"}


def locked_runner() -> Callable[[Callable[[], T]], T]:
    """``run`` for a core nothing else drives concurrently: calls under one lock."""
    lock = threading.Lock()

    def run(fn: Callable[[], T]) -> T:
        with lock:
            return fn()

    return run


def loop_runner(loop: Any, timeout_s: float = RUN_TIMEOUT_S) -> Callable[[Callable[[], T]], T]:
    """``run`` that executes each call on asyncio ``loop``'s thread (between packets)."""

    def run(fn: Callable[[], T]) -> T:
        fut: futures.Future = futures.Future()

        def call() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                fut.set_exception(e)

        loop.call_soon_threadsafe(call)
        return fut.result(timeout_s)

    return run


def _code(name: str) -> int:
    return int(code_pb2.Code.Value(name))


def _eid(msg: Any) -> tuple[int, int]:
    return (int(msg.high), int(msg.low))


@dataclass(frozen=True)
class _Table:
    name: str
    id: int
    keys: tuple[KeyField, ...]
    actions: dict[int, ActionInfo]
    const_default: bool
    #: ``const entries``: the program's, read-only to the control plane (spec 9.1.5)
    const_entries: bool = False
    #: the P4Runtime id of the table's action profile or selector (``implementation``), 0 if none
    profile_id: int = 0
    #: action id -> P4Info ActionRef.scope of the actions that are not TABLE_AND_DEFAULT
    scopes: dict[int, int] = field(default_factory=dict)

    @property
    def priority_required(self) -> bool:
        return needs_priority(self.keys)


@dataclass(frozen=True)
class _Profile:
    """An action profile or selector: its pipeline name (the control API's), P4Info name and
    id, whether it has groups, and one table using it (whose actions its members may run)."""

    name: str
    p4_name: str
    id: int
    selector: bool
    table: _Table


@dataclass(eq=False)
class _Stream:
    """One StreamChannel client."""

    out: queue.Queue = field(default_factory=queue.Queue)
    device_id: int | None = None
    role: str = ""
    election_id: tuple[int, int] | None = None
    abort: P4RuntimeStatus | None = None


@dataclass
class _Arbitration:
    """Clients of one (device id, role)."""

    streams: list[_Stream] = field(default_factory=list)
    primary: _Stream | None = None
    highest: tuple[int, int] | None = None


class P4RuntimeService:
    """The P4Runtime semantics over a ControlAPI, without gRPC (tests drive it directly).

    api: the switch's :class:`~emu.embedded.control.ControlAPI`; device_id: the P4Runtime
    device id (0..2**64-1; simple_switch_grpc's default is 0); run: how a pipeline access is executed (:func:`loop_runner` in the
    switch process, :func:`locked_runner` otherwise).
    """

    def __init__(self, api: Any, *, device_id: int = 1, run: Callable[[Callable[[], Any]], Any] | None = None,
                 cpu_port: int | None = None, inject: Callable[[bytes], None] | None = None) -> None:
        if not 0 <= device_id < 1 << 64:
            raise ValueError(f"device id must be 0..2**64-1, got {device_id}")
        self.api = api
        #: the switch port of the controller (P4Runtime 16.1): a frame the program sends there is
        #: a PacketIn, a PacketOut enters there; None: no packet I/O
        self.cpu_port = cpu_port
        #: how a PacketOut's frame enters the switch at ``cpu_port`` (called through ``run``);
        #: default: ``api.core.receive(cpu_port, frame, now)``
        self.inject = inject
        self.pipeline = api.pipeline
        self.device_id = device_id
        self.run = run or locked_runner()
        self.p4info = build_p4info(self.pipeline)
        self.cookie = 0
        self.saved: Any = None
        self._lock = threading.Lock()
        self._arb: dict[str, _Arbitration] = {}
        self.tables: dict[int, _Table] = {}
        actions = {a.preamble.id: ActionInfo(a.preamble.name, tuple((p.name, p.bitwidth, p.id) for p in a.params),
                                             a.preamble.id) for a in self.p4info.actions}
        for t in self.p4info.tables:
            keys = tuple(KeyField(m.name, _KINDS[m.match_type], m.bitwidth, m.id) for m in t.match_fields)
            self.tables[t.preamble.id] = _Table(t.preamble.name, t.preamble.id, keys,
                                                {r.id: actions[r.id] for r in t.action_refs},
                                                bool(t.const_default_action_id), bool(t.is_const_table),
                                                int(t.implementation_id),
                                                {r.id: r.scope for r in t.action_refs if r.scope})
        by_table = {t.name: t for t in self.tables.values()}
        self.profiles: dict[int, _Profile] = {}
        for name, prof in (getattr(self.pipeline, "action_profiles", {}) or {}).items():
            table = by_table[prof.tables[0].name]
            self.profiles[table.profile_id] = _Profile(name, profile_p4_names(self.pipeline)[name], table.profile_id,
                                                       prof.is_selector, table)
        self.action_ids = {a.name: pid for pid, a in actions.items()}
        self.counters = {c.preamble.id: (c.preamble.name, c.size) for c in self.p4info.counters}
        self.counter_units = {c.preamble.id: c.spec.unit for c in self.p4info.counters}
        self.registers = {r.preamble.id: (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
                          for r in self.p4info.registers}
        #: "packet_in" / "packet_out" -> [(metadata id, name, width), ...] (controller_packet_metadata)
        self.controller_headers = {c.preamble.name: [(m.id, m.name, m.bitwidth) for m in c.metadata]
                                   for c in self.p4info.controller_packet_metadata}
        self.packet_ins = 0

    # -- arbitration (section 5) ---------------------------------------------------------------
    def open_stream(self) -> _Stream:
        """A new StreamChannel client (RESOURCE_EXHAUSTED beyond :data:`MAX_STREAMS`)."""
        with self._lock:
            if sum(len(a.streams) for a in self._arb.values()) >= MAX_STREAMS:
                raise P4RuntimeStatus("RESOURCE_EXHAUSTED", f"more than {MAX_STREAMS} P4Runtime streams")
        return _Stream()

    def arbitrate(self, stream: _Stream, update: Any) -> None:
        """Apply a MasterArbitrationUpdate; P4RuntimeStatus ends the stream (spec 5.4)."""
        role = update.role.name
        if update.role.HasField("config"):
            raise P4RuntimeStatus("INVALID_ARGUMENT", "role.config is not supported (full pipeline access only)")
        eid = _eid(update.election_id) if update.HasField("election_id") else None
        with self._lock:
            if stream.device_id is None:
                if update.device_id != self.device_id:
                    raise P4RuntimeStatus("NOT_FOUND", f"unknown device id {update.device_id} "
                                                       f"(this switch is device {self.device_id})")
            else:
                if update.device_id != stream.device_id:
                    raise P4RuntimeStatus("FAILED_PRECONDITION", "the device id of a stream cannot change")
                if role != stream.role:
                    raise P4RuntimeStatus("FAILED_PRECONDITION", "the role of a stream cannot change")
            arb = self._arb.setdefault(role, _Arbitration())
            if eid is not None and any(s is not stream and s.election_id == eid for s in arb.streams):
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"election id {eid[0]},{eid[1]} is already used by "
                                                          "another client")
            if stream.device_id is None:
                stream.device_id, stream.role = update.device_id, role
                arb.streams.append(stream)
            was_primary = arb.primary is stream
            stream.election_id = eid
            if eid is not None and (arb.highest is None or eid >= arb.highest):
                arb.primary, arb.highest = stream, eid
                self._notify(arb, list(arb.streams))
            else:
                if was_primary:
                    arb.primary = None
                    self._notify(arb, list(arb.streams))
                else:
                    self._notify(arb, [stream])

    def close_stream(self, stream: _Stream) -> None:
        """The client went away: a primary's leaving is advertised to the backups."""
        with self._lock:
            arb = self._arb.get(stream.role)
            if arb is None or stream not in arb.streams:
                return
            arb.streams.remove(stream)
            if arb.primary is stream:
                arb.primary = None
                self._notify(arb, list(arb.streams))

    def _notify(self, arb: _Arbitration, streams: list[_Stream]) -> None:
        for s in streams:
            msg = p4runtime_pb2.StreamMessageResponse()
            a = msg.arbitration
            a.device_id = self.device_id
            if s.role:
                a.role.name = s.role
            if arb.highest is not None:
                a.election_id.high, a.election_id.low = arb.highest
            if arb.primary is s:
                a.status.code, a.status.message = code_pb2.OK, "primary"
            elif arb.primary is not None:
                a.status.code, a.status.message = code_pb2.ALREADY_EXISTS, "backup: another client is primary"
            else:
                a.status.code, a.status.message = code_pb2.NOT_FOUND, "backup: there is no primary"
            s.out.put(msg)

    def stream_message(self, stream: _Stream, req: Any) -> None:
        """One StreamMessageRequest: arbitration, or a PacketOut (section 16.1) from the
        primary; anything else, or a PacketOut that cannot be sent, is a StreamError."""
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            self.arbitrate(stream, req.arbitration)
            return
        if kind == "packet":
            try:
                self.packet_out(stream, req.packet)
                return
            except P4RuntimeStatus as e:
                code, message = _code(e.code), str(e)
        else:
            code, message = code_pb2.UNIMPLEMENTED, f"stream message {kind} is not supported by the embedded switch"
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.error.canonical_code = code
        msg.error.message = message
        if kind == "packet":
            msg.error.packet_out.packet_out.CopyFrom(req.packet)
        stream.out.put(msg)

    # -- packet I/O (section 16.1) ----------------------------------------------------------------
    def packet_out(self, stream: _Stream, packet: Any) -> None:
        """Send a PacketOut: its ``packet_out`` metadata become the program's
        ``@controller_header("packet_out")`` header (fields in order, most significant bit
        first), put before the payload; the frame enters the switch at the CPU port."""
        with self._lock:
            arb = self._arb.get(stream.role)
            primary = arb is not None and arb.primary is stream
        if not primary:
            raise P4RuntimeStatus("PERMISSION_DENIED", "PacketOut: not the primary client")
        fields = self.controller_headers.get("packet_out")
        if self.cpu_port is None or fields is None:
            raise P4RuntimeStatus("FAILED_PRECONDITION", "PacketOut: "
                                  + ("the switch has no CPU port (--cpu-port)" if self.cpu_port is None else
                                     "the program has no @controller_header(\"packet_out\") header"))
        given = {m.metadata_id: m.value for m in packet.metadata}
        unknown = sorted(set(given) - {fid for fid, _n, _w in fields})
        if unknown:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"PacketOut: unknown metadata id {unknown[0]}")
        value, bits = 0, 0
        for fid, name, width in fields:
            v = decode_bytes(given[fid], width, f"packet_out metadata {name}") if fid in given else 0
            value, bits = (value << width) | v, bits + width
        frame = value.to_bytes(bits // 8, "big") + bytes(packet.payload)
        if self.inject is not None:
            inject = self.inject
        else:
            import time

            def inject(f: bytes) -> None:
                self.api.core.receive(self.cpu_port, f, time.monotonic_ns() // 1000)
        self.run(lambda: inject(frame))

    def packet_in(self, frame: bytes) -> None:
        """A frame the switch sent to the CPU port: a PacketIn to the primary client of the
        default role, its ``@controller_header("packet_in")`` header taken off the front and
        given as metadata (a program without one sends the frame as the payload)."""
        msg = p4runtime_pb2.StreamMessageResponse()
        pin = msg.packet
        fields = self.controller_headers.get("packet_in") or []
        nbytes = sum(w for _i, _n, w in fields) // 8
        if fields and len(frame) >= nbytes:
            value, shift = int.from_bytes(frame[:nbytes], "big"), nbytes * 8
            for fid, _name, width in fields:
                shift -= width
                md = pin.metadata.add()
                md.metadata_id, md.value = fid, canonical_bytes((value >> shift) & ((1 << width) - 1), width)
            frame = frame[nbytes:]
        pin.payload = frame
        with self._lock:
            arb = self._arb.get("")
            primary = arb.primary if arb is not None else None
        if primary is not None:
            primary.out.put(msg)
            self.packet_ins += 1

    def _check_primary(self, device_id: int, role: str, election_id: Any, what: str) -> None:
        if device_id != self.device_id:
            raise P4RuntimeStatus("NOT_FOUND", f"unknown device id {device_id} (this switch is device "
                                               f"{self.device_id})")
        with self._lock:
            arb = self._arb.get(role)
            if arb is None and role:
                raise P4RuntimeStatus("NOT_FOUND", f"unknown role {role!r}")
            primary = None if arb is None else arb.primary
            if primary is None or primary.election_id != _eid(election_id):
                raise P4RuntimeStatus("PERMISSION_DENIED", f"{what}: not the primary client (election id "
                                                           f"{election_id.high},{election_id.low})")

    # -- pipeline config (sections 15, 16) --------------------------------------------------
    def set_pipeline(self, req: Any) -> None:
        """SetForwardingPipelineConfig; P4RuntimeStatus when refused."""
        self._check_primary(req.device_id, req.role, req.election_id, "SetForwardingPipelineConfig")
        A = p4runtime_pb2.SetForwardingPipelineConfigRequest  # noqa: N806
        action = req.action
        if action == A.COMMIT:
            if req.HasField("config"):
                raise P4RuntimeStatus("INVALID_ARGUMENT", "COMMIT takes no config")
            if self.saved is None:
                raise P4RuntimeStatus("NOT_FOUND", "COMMIT: no config saved by VERIFY_AND_SAVE")
            self.cookie, self.saved = self.saved, None
            return
        if action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT, A.RECONCILE_AND_COMMIT):
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown action {action}")
        if not req.HasField("config") or not req.config.HasField("p4info"):
            raise P4RuntimeStatus("INVALID_ARGUMENT", "no config/P4Info given")
        problem = p4info_mismatch(self.p4info, req.config.p4info)
        if problem is not None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"the P4Info does not match the program this switch runs: "
                                                      f"{problem}")
        cookie = req.config.cookie.cookie if req.config.HasField("cookie") else 0
        if action == A.VERIFY_AND_SAVE:
            self.saved = cookie
        elif action == A.VERIFY_AND_COMMIT:
            self.run(self.api.reset_state)
            self.cookie = cookie
        elif action == A.RECONCILE_AND_COMMIT:
            self.cookie = cookie

    def get_pipeline(self, req: Any) -> Any:
        """GetForwardingPipelineConfig."""
        if req.device_id != self.device_id:
            raise P4RuntimeStatus("NOT_FOUND", f"unknown device id {req.device_id}")
        rep = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        R = p4runtime_pb2.GetForwardingPipelineConfigRequest  # noqa: N806
        if req.response_type in (R.ALL, R.P4INFO_AND_COOKIE):
            rep.config.p4info.CopyFrom(self.p4info)
        rep.config.cookie.cookie = self.cookie
        return rep

    def capabilities(self) -> Any:
        """Capabilities: the version of the p4runtime protos served."""
        rep = p4runtime_pb2.CapabilitiesResponse()
        try:
            rep.p4runtime_api_version = importlib.metadata.version("p4runtime")
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - installed from a checkout
            rep.p4runtime_api_version = "1.3.0"
        return rep

    # -- Write (section 12) ------------------------------------------------------------------------
    def write(self, req: Any) -> list[tuple[str, str]]:
        """Apply every update; returns ``(code name, message)`` per update (``"OK"``)."""
        self._check_primary(req.device_id, req.role, req.election_id, "Write")
        if req.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            raise P4RuntimeStatus("UNIMPLEMENTED", "only CONTINUE_ON_ERROR batches are supported")
        results = []
        for update in req.updates:
            try:
                self.run(lambda u=update: self._apply(u))
                results.append(("OK", ""))
            except P4RuntimeStatus as e:
                results.append((e.code, str(e)))
            except EntryExistsError as e:
                results.append(("ALREADY_EXISTS", str(e)))
            except EntryNotFoundError as e:
                results.append(("NOT_FOUND", str(e)))
            except TableFullError as e:
                results.append(("RESOURCE_EXHAUSTED", str(e)))
            except ControlError as e:
                results.append(("INVALID_ARGUMENT", str(e)))
        return results

    def _apply(self, update: Any) -> None:
        U = p4runtime_pb2.Update  # noqa: N806
        kind = update.entity.WhichOneof("entity")
        if update.type not in (U.INSERT, U.MODIFY, U.DELETE):
            raise P4RuntimeStatus("INVALID_ARGUMENT", "update type unspecified")
        if kind == "table_entry":
            self._write_table_entry(update.type, update.entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            self._write_pre(update.type, update.entity.packet_replication_engine_entry)
        elif kind == "action_profile_member":
            self._write_member(update.type, update.entity.action_profile_member)
        elif kind == "action_profile_group":
            self._write_group(update.type, update.entity.action_profile_group)
        elif kind in ("counter_entry", "register_entry"):
            if update.type != U.MODIFY:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{kind}: only MODIFY is allowed")
            if kind == "counter_entry":
                self._write_counter(update.entity.counter_entry)
            else:
                self._write_register(update.entity.register_entry)
        else:
            raise P4RuntimeStatus("UNIMPLEMENTED", f"{kind} is not supported by the embedded switch")

    def _table(self, table_id: int) -> _Table:
        t = self.tables.get(table_id)
        if t is None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown table id {table_id}")
        return t

    def _action(self, t: _Table, te: Any) -> tuple[str, dict[str, int]]:
        """The action of a direct table's entry or default entry; an action whose scope forbids
        the use is PERMISSION_DENIED, as PI's server answers (P4Info ActionRef.scope)."""
        if te.action.WhichOneof("type") != "action":
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: a direct table takes an action")
        scope = t.scopes.get(te.action.action.action_id, 0)
        if scope == p4info_pb2.ActionRef.TABLE_ONLY and te.is_default_action:
            raise P4RuntimeStatus("PERMISSION_DENIED", f"{t.name}: a TABLE_ONLY (@tableonly) action cannot be the "
                                                       "default action")
        if scope == p4info_pb2.ActionRef.DEFAULT_ONLY and not te.is_default_action:
            raise P4RuntimeStatus("PERMISSION_DENIED", f"{t.name}: a DEFAULT_ONLY (@defaultonly) action cannot be "
                                                       "used in a table entry")
        return self._decode_action(t, te.action.action)

    def _decode_action(self, t: _Table, act: Any) -> tuple[str, dict[str, int]]:
        """(action name, parameters) of a P4Runtime ``Action`` one of ``t``'s actions."""
        info = t.actions.get(act.action_id)
        if info is None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: action id {act.action_id} is not an action of "
                                                      "this table")
        by_id = {pid: (name, width) for name, width, pid in info.params}
        params: dict[str, int] = {}
        for p in act.params:
            if p.param_id not in by_id:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{info.name}: unknown parameter id {p.param_id}")
            name, width = by_id[p.param_id]
            if name in params:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{info.name}: parameter {name} given twice")
            params[name] = decode_bytes(p.value, width, f"{info.name} parameter {name}")
        missing = [name for name, _w, _pid in info.params if name not in params]
        if missing:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{info.name}: parameter {missing[0]} is missing")
        return info.name, params

    def _write_table_entry(self, utype: int, te: Any) -> None:
        U = p4runtime_pb2.Update  # noqa: N806
        t = self._table(te.table_id)
        if te.is_const:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: is_const must be false in a write")
        if t.const_entries and not te.is_default_action:
            raise P4RuntimeStatus("PERMISSION_DENIED", f"{t.name}: the table has const entries (spec 9.1.5)")
        if te.is_default_action:
            if utype != U.MODIFY:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: the default entry is only MODIFYed")
            if len(te.match) or te.priority:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: a default entry has no match and priority 0")
            if t.const_default:
                raise P4RuntimeStatus("PERMISSION_DENIED", f"{t.name}: the default action is const")
            if te.HasField("action"):
                action, params = self._action(t, te)
                self.api.table_set_default(t.name, action, params)
            else:  # back to the program's default
                self.api.table_reset_default(t.name)
            return
        fields = match_from_proto(t.name, t.keys, te.match)
        if t.priority_required:
            if te.priority <= 0:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: a ternary/range/optional table needs "
                                                          "priority > 0")
            priority: int | None = te.priority
        else:
            if te.priority:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: an exact/lpm table takes priority 0")
            priority = None
        match = match_to_spelling(fields)
        if utype == U.DELETE:
            self.api.table_delete(t.name, match, priority)
            return
        if t.profile_id:
            self._write_indirect_entry(utype, t, te, match, priority)
            return
        if utype == U.MODIFY and not te.HasField("action"):  # spec 9.1.2: the action stays; a no-op
            if not any(e.match == match and e.priority == priority for e in self.api.table_read(t.name)):
                raise EntryNotFoundError(f"{t.name}: no entry with match {match}")
            return
        action, params = self._action(t, te)
        if utype == U.INSERT:
            self.api.table_add(t.name, match, action, params, priority)
        else:
            self.api.table_modify(t.name, match, action, params, priority)

    # -- action profiles and selectors (spec 9.2) ----------------------------------------------------
    def _write_indirect_entry(self, utype: int, t: _Table, te: Any, match: dict[str, Any],
                              priority: int | None) -> None:
        """An entry of a table with an action profile: it names a member or (selector) a group.
        MODIFY replaces the entry (its direct counter starts again from 0)."""
        U = p4runtime_pb2.Update  # noqa: N806
        kind = te.action.WhichOneof("type")
        if kind not in ("action_profile_member_id", "action_profile_group_id"):
            if kind is None and utype == U.MODIFY:  # spec 9.1.2: the action stays
                if not any(e.match == match and e.priority == priority for e in self.api.table_read(t.name)):
                    raise EntryNotFoundError(f"{t.name}: no entry with match {match}")
                return
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: a table with an action profile takes an "
                                                      "action_profile_member_id or action_profile_group_id "
                                                      f"(got {kind or 'no action'})")
        prof = self.profiles[t.profile_id]
        ident = int(getattr(te.action, kind))
        if kind == "action_profile_group_id" and not prof.selector:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{t.name}: {prof.p4_name} is an action_profile (no groups)")
        if utype == U.MODIFY:
            if not any(e.match == match and e.priority == priority for e in self.api.table_read(t.name)):
                raise EntryNotFoundError(f"{t.name}: no entry with match {match}")
            self.api.table_delete(t.name, match, priority)
        if kind == "action_profile_member_id":
            self.api.table_indirect_add(t.name, match, ident, priority)
        else:
            self.api.table_indirect_add_with_group(t.name, match, ident, priority)

    def _profile(self, pid: int) -> _Profile:
        prof = self.profiles.get(pid)
        if prof is None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown action profile id {pid}")
        return prof

    def _write_member(self, utype: int, m: Any) -> None:
        U = p4runtime_pb2.Update  # noqa: N806
        prof = self._profile(m.action_profile_id)
        if utype == U.DELETE:
            self.api.act_prof_delete_member(prof.name, int(m.member_id))
            return
        if not m.HasField("action"):
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{prof.p4_name} member {m.member_id}: no action")
        action, params = self._decode_action(prof.table, m.action)
        if utype == U.INSERT:
            self.api.act_prof_create_member(prof.name, int(m.member_id), action, params)
        else:
            self.api.act_prof_modify_member(prof.name, int(m.member_id), action, params)

    def _write_group(self, utype: int, g: Any) -> None:
        """INSERT (with its members), MODIFY (the members become those given), DELETE. A
        member's weight must be 1 (0 is read as 1): the selector picks members uniformly."""
        U = p4runtime_pb2.Update  # noqa: N806
        prof = self._profile(g.action_profile_id)
        gid, what = int(g.group_id), f"{prof.p4_name} group {g.group_id}"
        if utype == U.DELETE:
            self.api.act_prof_delete_group(prof.name, gid)
            return
        members = [int(m.member_id) for m in g.members]
        if any(m.weight > 1 for m in g.members):
            raise P4RuntimeStatus("UNIMPLEMENTED", f"{what}: member weights other than 1 (the selector picks "
                                                   "members uniformly, as bmv2's)")
        if len(set(members)) != len(members):
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: a member is given twice")
        if g.max_size and len(members) > g.max_size:
            raise P4RuntimeStatus("RESOURCE_EXHAUSTED", f"{what}: {len(members)} members, max_size {g.max_size}")
        pipe_prof = self.pipeline.action_profile(prof.name)
        for mid in members:
            if mid not in pipe_prof.members:
                raise EntryNotFoundError(f"{what}: no member {mid}")
        if utype == U.INSERT:
            self.api.act_prof_create_group(prof.name, gid)
            old: list[int] = []
        else:
            if gid not in pipe_prof.groups:
                raise EntryNotFoundError(f"no {what}")
            old = list(pipe_prof.groups[gid])
        for mid in old:
            if mid not in members:
                self.api.act_prof_remove_member_from_group(prof.name, mid, gid)
        for mid in members:
            if mid not in old:
                self.api.act_prof_add_member_to_group(prof.name, mid, gid)

    def _read_profiles(self, kind: str, query: Any) -> list[Any]:
        """Members or groups of one profile (``action_profile_id``) or of all (0); one
        (``member_id`` / ``group_id``) or all (0)."""
        pid = int(query.action_profile_id)
        profs = [self._profile(pid)] if pid else [self.profiles[i] for i in sorted(self.profiles)]
        out = []
        for prof in profs:
            pipe_prof = self.pipeline.action_profile(prof.name)
            if kind == "action_profile_member":
                want = int(query.member_id)
                for mid in sorted(pipe_prof.members):
                    if want and mid != want:
                        continue
                    action, _args, desc = pipe_prof.members[mid]
                    e = p4runtime_pb2.Entity()
                    m = e.action_profile_member
                    m.action_profile_id, m.member_id = prof.id, mid
                    aid = self.action_ids[action]
                    m.action.action_id = aid
                    for name, width, param_id in prof.table.actions[aid].params:
                        p = m.action.params.add()
                        p.param_id, p.value = param_id, canonical_bytes(desc[name], width)
                    out.append(e)
            else:
                want = int(query.group_id)
                for gid in sorted(pipe_prof.groups):
                    if want and gid != want:
                        continue
                    e = p4runtime_pb2.Entity()
                    g = e.action_profile_group
                    g.action_profile_id, g.group_id = prof.id, gid
                    for mid in pipe_prof.groups[gid]:
                        gm = g.members.add()
                        gm.member_id, gm.weight = mid, 1
                    out.append(e)
        return out

    # -- packet replication engine (spec 9.5): multicast groups and clone sessions ------------------
    @staticmethod
    def _replica(r: Any, what: str) -> tuple[int, int]:
        if r.WhichOneof("port_kind") == "port":
            port = decode_bytes(r.port, 9, f"{what} port")
        else:
            port = int(r.egress_port)
        if port >= 511:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: port {port} outside 0..510")
        return port, int(r.instance)

    def _write_pre(self, utype: int, pre: Any) -> None:
        U = p4runtime_pb2.Update  # noqa: N806
        kind = pre.WhichOneof("type")
        if kind == "multicast_group_entry":
            g = pre.multicast_group_entry
            gid, what = int(g.multicast_group_id), f"multicast group {g.multicast_group_id}"
            if not 0 < gid < 1 << 16:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: the id must be 1..65535")
            exists = gid in self.api.mcast_groups()
        elif kind == "clone_session_entry":
            c = pre.clone_session_entry
            gid, what = int(c.session_id), f"clone session {c.session_id}"
            if gid <= 0:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: the id must be > 0")
            exists = gid in self.api.mirror_sessions()
        else:
            raise P4RuntimeStatus("INVALID_ARGUMENT", "packet_replication_engine_entry without an entry")
        if utype == U.INSERT and exists:
            raise EntryExistsError(f"{what} exists")
        if utype in (U.MODIFY, U.DELETE) and not exists:
            raise EntryNotFoundError(f"no {what}")
        if kind == "multicast_group_entry":
            if utype == U.DELETE:
                self.api.mcast_group_delete(gid)
            else:
                self.api.mcast_group_set(gid, [list(self._replica(r, what)) for r in g.replicas])
            return
        if utype == U.DELETE:
            self.api.mirroring_delete(gid)
            return
        if len(c.replicas) != 1 or c.class_of_service or c.packet_length_bytes:
            raise P4RuntimeStatus("UNIMPLEMENTED", f"{what}: one replica, class of service 0 and no truncation "
                                                   "only (as bmv2's mirroring_add)")
        self.api.mirroring_add(gid, self._replica(c.replicas[0], what)[0])

    def _read_pre(self, query: Any) -> list[Any]:
        kind = query.WhichOneof("type")
        out = []
        if kind == "multicast_group_entry":
            want = int(query.multicast_group_entry.multicast_group_id)
            groups = self.api.mcast_groups()
            for gid in sorted(groups):
                if want and gid != want:
                    continue
                e = p4runtime_pb2.Entity()
                g = e.packet_replication_engine_entry.multicast_group_entry
                g.multicast_group_id = gid
                for port, rid in groups[gid]:
                    r = g.replicas.add()
                    r.egress_port, r.instance = port, rid
                out.append(e)
        elif kind == "clone_session_entry":
            want = int(query.clone_session_entry.session_id)
            sessions = self.api.mirror_sessions()
            for sid in sorted(sessions):
                if want and sid != want:
                    continue
                e = p4runtime_pb2.Entity()
                c = e.packet_replication_engine_entry.clone_session_entry
                c.session_id = sid
                c.replicas.add().egress_port = sessions[sid]
                out.append(e)
        else:
            raise P4RuntimeStatus("INVALID_ARGUMENT", "packet_replication_engine_entry without an entry")
        return out

    def _index(self, name: str, size: int, msg: Any) -> int | None:
        if not msg.HasField("index"):
            return None
        i = int(msg.index.index)
        if i < 0:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{name}: negative index {i}")
        if i >= size:
            raise P4RuntimeStatus("OUT_OF_RANGE", f"{name}: index {i} outside 0..{size - 1}")
        return i

    def _write_counter(self, ce: Any) -> None:
        if ce.counter_id not in self.counters:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown counter id {ce.counter_id}")
        name, size = self.counters[ce.counter_id]
        index = self._index(name, size, ce)
        if not ce.HasField("data"):
            return
        c = self.pipeline.counters[name]
        for i in range(size) if index is None else [index]:
            c.packets[i], c.bytes[i] = int(ce.data.packet_count), int(ce.data.byte_count)

    def _write_register(self, re: Any) -> None:
        if re.register_id not in self.registers:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown register id {re.register_id}")
        name, size, width = self.registers[re.register_id]
        index = self._index(name, size, re)
        if re.data.WhichOneof("data") != "bitstring":
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{name}: data must be a bitstring")
        value = decode_bytes(re.data.bitstring, width, f"{name} data")
        for i in range(size) if index is None else [index]:
            self.api.register_write(name, i, value)

    # -- Read (section 13) ---------------------------------------------------------------------------
    def read(self, req: Any) -> tuple[Any, list[tuple[str, str]]]:
        """The entities the request selects and one ``(code name, message)`` per entity of
        the batch, in order (section 13.3: the valid requests are answered, the others get
        their own code; the RPC's status is then UNKNOWN with one ``p4.Error`` each).

        An unknown id is INVALID_ARGUMENT, as PI's server says it; an ``Entity`` with no
        entity set is INVALID_ARGUMENT (section 13.2); a wildcard read of an entity kind the
        program has none of (action profiles, value sets, digests, externs) is empty."""
        if req.device_id != self.device_id:
            raise P4RuntimeStatus("NOT_FOUND", f"unknown device id {req.device_id}")
        rep = p4runtime_pb2.ReadResponse()
        results = []
        for entity in req.entities:
            try:
                rep.entities.extend(self._read_one(entity))
                results.append(("OK", ""))
            except P4RuntimeStatus as e:
                results.append((e.code, str(e)))
        return rep, results

    def _read_one(self, entity: Any) -> list[Any]:
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            return self.run(lambda e=entity.table_entry: self._read_table_entries(e))
        if kind == "counter_entry":
            return self.run(lambda e=entity.counter_entry: self._read_counters(e))
        if kind == "register_entry":
            return self.run(lambda e=entity.register_entry: self._read_registers(e))
        if kind == "packet_replication_engine_entry":
            return self.run(lambda e=entity.packet_replication_engine_entry: self._read_pre(e))
        if kind in ("action_profile_member", "action_profile_group"):
            query = getattr(entity, kind)
            return self.run(lambda: self._read_profiles(kind, query))
        if kind is None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", "an Entity with no entity set (section 13.2: no wildcard "
                                                      "read of the whole state)")
        # kinds this switch has no instance of: a wildcard read is empty, an id is unknown
        ids = {"value_set_entry": "value_set_id", "digest_entry": "digest_id", "extern_entry": "extern_type_id",
               "meter_entry": "meter_id", "direct_meter_entry": None, "direct_counter_entry": None}
        if kind not in ids:
            raise P4RuntimeStatus("UNIMPLEMENTED", f"reading {kind} is not supported by the embedded switch")
        msg = getattr(entity, kind)
        field_name = ids[kind]
        if field_name is not None:
            pid = int(getattr(msg, field_name))
            if pid == 0:
                if kind == "meter_entry" and self.p4info.meters:
                    raise P4RuntimeStatus("UNIMPLEMENTED", "reading meter configurations is not supported by the "
                                                           "embedded switch")
                return []
            if kind == "meter_entry" and any(m.preamble.id == pid for m in self.p4info.meters):
                raise P4RuntimeStatus("UNIMPLEMENTED", "reading meter configurations is not supported by the "
                                                       "embedded switch")
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{kind}: unknown id {pid}")
        table_id = int(msg.table_entry.table_id)
        if table_id and table_id not in self.tables:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{kind}: unknown table id {table_id}")
        raise P4RuntimeStatus("UNIMPLEMENTED", f"reading {kind} is not supported by the embedded switch")

    def _entry_proto(self, t: _Table, canon: tuple, entry: tuple) -> Any:
        from emu.encoding import FieldMatch

        _e, _args, prio, action, desc = entry
        e = p4runtime_pb2.Entity()
        te = e.table_entry
        te.table_id = t.id
        for key, c in zip(t.keys, canon, strict=False):
            if key.match == "exact":
                m = FieldMatch(key, c)
            elif key.match == "lpm":
                m = FieldMatch(key, c[0], prefix_len=c[1])
            elif key.match == "range":
                m = FieldMatch(key, c[0], high=c[1])
            else:
                m = FieldMatch(key, c[0], mask=c[1])
            if not m.dont_care:
                match_to_proto(m, te.match.add())
        if t.priority_required:
            te.priority = prio
        if t.const_entries:
            te.is_const = True
        ref = _e[0]
        if t.profile_id and ref in (MEMBER, GROUP):  # an entry naming a member or a group
            if ref == MEMBER:
                te.action.action_profile_member_id = _e[1]
            else:
                te.action.action_profile_group_id = _e[1]
            return e
        self._action_proto(te, action, desc)
        return e

    def _action_proto(self, te: Any, action: str, desc: dict[str, int]) -> None:
        aid = self.action_ids[action]
        te.action.action.action_id = aid
        t = self.tables[te.table_id]
        for name, width, pid in t.actions[aid].params:
            p = te.action.action.params.add()
            p.param_id, p.value = pid, canonical_bytes(desc[name], width)

    def _read_table_entries(self, query: Any) -> list[Any]:
        tables = [self._table(query.table_id)] if query.table_id else list(self.tables.values())
        out = []
        for t in tables:
            table = self.pipeline.table(t.name)
            if query.is_default_action:
                action, desc = table.default_desc
                e = p4runtime_pb2.Entity()
                e.table_entry.table_id = t.id
                e.table_entry.is_default_action = True
                if action:
                    self._action_proto(e.table_entry, action, desc)
                out.append(e)
                continue
            wanted = None
            if query.table_id and len(query.match):
                wanted = tuple(m.ident() for m in match_from_proto(t.name, t.keys, query.match))
            want_action = query.action.action.action_id if query.HasField("action") else 0
            for canon, entry in table.entries.items():
                e = self._entry_proto(t, canon, entry)
                te = e.table_entry
                if query.priority and te.priority != query.priority:
                    continue
                if want_action and te.action.action.action_id != want_action:
                    continue
                if wanted is not None:
                    got = tuple(m.ident() for m in match_from_proto(t.name, t.keys, te.match))
                    if got != wanted:
                        continue
                out.append(e)
        return out

    def _read_counters(self, query: Any) -> list[Any]:
        if query.counter_id and query.counter_id not in self.counters:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown counter id {query.counter_id}")
        ids = [query.counter_id] if query.counter_id else sorted(self.counters)
        out = []
        for cid in ids:
            name, size = self.counters[cid]
            index = self._index(name, size, query)
            values = self.api.counter_read(name)
            for i in range(size) if index is None else [index]:
                e = p4runtime_pb2.Entity()
                ce = e.counter_entry
                ce.counter_id, ce.index.index = cid, i
                packets, nbytes = values[i]
                unit = self.counter_units[cid]  # a packets-only counter reports no bytes (and vice versa)
                if unit != p4info_pb2.CounterSpec.BYTES:
                    ce.data.packet_count = packets
                if unit != p4info_pb2.CounterSpec.PACKETS:
                    ce.data.byte_count = nbytes
                out.append(e)
        return out

    def _read_registers(self, query: Any) -> list[Any]:
        if query.register_id and query.register_id not in self.registers:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"unknown register id {query.register_id}")
        ids = [query.register_id] if query.register_id else sorted(self.registers)
        out = []
        for rid in ids:
            name, size, width = self.registers[rid]
            index = self._index(name, size, query)
            values = self.api.register_read(name)
            for i in range(size) if index is None else [index]:
                e = p4runtime_pb2.Entity()
                re = e.register_entry
                re.register_id, re.index.index = rid, i
                re.data.bitstring = canonical_bytes(values[i], width)
                out.append(e)
        return out


# -- gRPC ------------------------------------------------------------------------------------------


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """gRPC adapter: P4RuntimeStatus -> the RPC's status (Write: per-update p4.Error details)."""

    def __init__(self, service: P4RuntimeService) -> None:
        self.service = service

    @staticmethod
    def _abort(context: Any, e: P4RuntimeStatus) -> None:
        context.abort(grpc.StatusCode[e.code], str(e))

    def Write(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
        try:
            results = self.service.write(request)
        except P4RuntimeStatus as e:
            self._abort(context, e)
        if all(code == "OK" for code, _ in results):
            return p4runtime_pb2.WriteResponse()
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
        for code, message in results:
            err = p4runtime_pb2.Error(canonical_code=_code(code), message=message)
            status.details.add().Pack(err)
        first = next(m for c, m in results if c != "OK")
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.set_code(grpc.StatusCode.UNKNOWN)
        context.set_details(f"Write failure: {first}")
        return p4runtime_pb2.WriteResponse()

    def Read(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        try:
            rep, results = self.service.read(request)
        except P4RuntimeStatus as e:
            self._abort(context, e)
        if rep.entities or all(code == "OK" for code, _ in results):
            yield rep
        bad = [(c, m) for c, m in results if c != "OK"]
        if not bad:
            return
        if len(results) == 1:  # one request: its own code, as PI's server answers it
            context.abort(grpc.StatusCode[bad[0][0]], bad[0][1])
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message=f"Read failure: {bad[0][1]}")
        for code, message in results:
            status.details.add().Pack(p4runtime_pb2.Error(canonical_code=_code(code), message=message))
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.set_code(grpc.StatusCode.UNKNOWN)
        context.set_details(status.message)

    def SetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        try:
            self.service.set_pipeline(request)
        except P4RuntimeStatus as e:
            self._abort(context, e)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        try:
            return self.service.get_pipeline(request)
        except P4RuntimeStatus as e:
            self._abort(context, e)

    def Capabilities(self, request: Any, context: Any) -> Any:  # noqa: N802, ARG002
        return self.service.capabilities()

    def StreamChannel(self, request_iterator: Iterator[Any], context: Any) -> Iterator[Any]:  # noqa: N802
        try:
            stream = self.service.open_stream()
        except P4RuntimeStatus as e:
            self._abort(context, e)
        context.add_callback(lambda: stream.out.put(None))

        def reader() -> None:
            try:
                for req in request_iterator:
                    self.service.stream_message(stream, req)
            except P4RuntimeStatus as e:
                stream.abort = e
            except Exception as e:  # noqa: BLE001 - the client went away (grpc cancels the iterator)
                log.debug("P4Runtime stream ended: %r", e)
            finally:
                self.service.close_stream(stream)
                stream.out.put(None)

        threading.Thread(target=reader, name="p4rt-stream", daemon=True).start()
        while True:
            msg = stream.out.get()
            if msg is None:
                break
            yield msg
        if stream.abort is not None:
            self._abort(context, stream.abort)


class P4RuntimeServer:
    """A gRPC server of a :class:`P4RuntimeService` on ``address`` (``127.0.0.1:0``: any
    free port on loopback). :meth:`start` returns the bound ``host:port``."""

    def __init__(self, service: P4RuntimeService, address: str = "127.0.0.1:0", *, max_workers: int = 16) -> None:
        self.service = service
        self.address = address
        self.max_workers = max_workers
        self._server: Any = None
        self.bound: str | None = None

    def start(self) -> str:
        """Bind and serve; OSError if the address cannot be bound."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="p4rt"))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(_Servicer(self.service), server)
        host = self.address.rpartition(":")[0] or "127.0.0.1"
        try:
            port = server.add_insecure_port(self.address)
        except RuntimeError as e:
            raise OSError(f"P4Runtime server: cannot bind {self.address}: {e}") from None
        if port == 0:
            raise OSError(f"P4Runtime server: cannot bind {self.address}")
        server.start()
        self._server = server
        self.bound = f"{host}:{port}"
        log.info("P4Runtime server (device %d) on %s", self.service.device_id, self.bound)
        return self.bound

    def stop(self, grace_s: float = 0.5) -> None:
        """Stop serving (open streams end); safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace_s).wait(grace_s + 1.0)

    def __enter__(self) -> P4RuntimeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
