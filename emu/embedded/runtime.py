"""The pipeline object of the embedded switch: a compiled P4 program run per packet.

``Pipeline(program)`` compiles an IR Program once, through the architecture its
``main`` package names (``v1model.py`` for ``V1Switch``): code generation in
``codegen.py``, optimizations in ``optimize.py``, tables in ``tables.py``, extern state
in ``externs.py``. Per packet it calls the two generated functions: ingress (parser,
verify checksum, ingress control) and egress (egress control, compute checksum,
deparser). Headers, metadata and ``standard_metadata`` are plain Python locals of those
functions. Semantics follow the P4_16 spec and v1model as bmv2 (simple_switch)
implements them; ``docs/p4-subset.md`` lists them.

``optimize=True`` (the default) makes the same semantics cheaper (``optimize.py``):
headers are read byte by byte (``_pkt[i]``: C reads in the compiled build) and written with
one precompiled ``struct`` per header (one for a run of them), a header that nothing can
have changed since ``extract`` is re-emitted from its original bytes,
extracted fields that nothing reads are not computed, egress receives only the
variables it reads, an acyclic parser is inlined instead of run as a state loop, and
csum16 is inlined as the sum of the fields in their 16-bit word positions
(``CodeGen.field_sum16``: RFC 1071's sum modulo 0xFFFF without the wide integer of the
concatenation). ``optimize=False`` keeps the straightforward code (the reference for
the tests).

Control-plane methods (``table_add`` ... ``counter_read``) take fully qualified P4
names and raise :class:`ControlError` with a one-line message.
"""

from __future__ import annotations

import random as _random
from typing import Any

from hostapps import compiled as _compiled

from . import ir, passes
from .errors import ControlError
from .externs import Counter, Register, csum16
from .t2na import compile_t2na, qdepth_cells
from .tables import ActionProfile, Table, ValueSet, closest, to_int
from .v1model import compile_v1model

__all__ = ["ARCHITECTURES", "ControlError", "IngressResult", "Pipeline", "PipelineCode", "csum16"]

#: main package type name -> compiler of that architecture (v1model.compile_v1model,
#: t2na.compile_t2na)
ARCHITECTURES = {"V1Switch": compile_v1model, "Switch": compile_t2na}
#: main package type name -> how the traffic manager counts queue depth for it (None:
#: packets; a function: units per queued packet, T2NA's 176-byte cells)
QDEPTH_UNITS = {"V1Switch": None, "Switch": qdepth_cells}


#: v1model instance_type values (bmv2 simple_switch PKT_INSTANCE_TYPE_*).
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
#: Most times one received packet may be resubmitted or recirculated (bmv2 has no bound;
#: here a loop in the program must not hang the switch). Beyond it the copy is dropped.
MAX_REENTRIES = 16


class IngressResult:
    """Outcome of ingress for a packet that was not dropped (or that made copies).

    ``egress_spec`` is the port chosen by ingress (bit<9>), ``mcast_grp`` its multicast
    group (0: unicast), ``packet_length`` the received frame length in bytes, ``port``
    the ingress port; ``state`` is opaque state that :meth:`Pipeline.egress` consumes.
    ``rid``/``itype`` are the egress_rid and instance_type egress sees (multicast
    replicas, clones). ``ops`` (clone/resubmit requests), ``frame`` and ``now_us`` are
    set only when the program asked for copies: :meth:`Pipeline.fanout` handles them.
    ``depth`` counts how many times this packet was resubmitted or recirculated (bounded
    by MAX_REENTRIES). One is made per packet: the compiled module makes it an extension
    type with these fields as C members (``runtime.pxd``, Cython's augmenting declarations;
    the pure-Python class has the same ``__slots__``).
    """

    __slots__ = ("egress_spec", "mcast_grp", "packet_length", "state", "port", "rid", "itype", "ops", "frame",
                 "now_us", "depth")

    def __init__(self, egress_spec: int, mcast_grp: int, packet_length: int, state: tuple, port: int = 0,
                 rid: int = 0, itype: int = 0, ops: tuple | None = None, frame: bytes | None = None,
                 now_us: int = 0, depth: int = 0) -> None:
        # written out (a dataclass's generated __init__ is exec'd Python: this one is compiled with
        # the module, and sets C members of the extension type; one per packet)
        self.egress_spec = egress_spec
        self.mcast_grp = mcast_grp
        self.packet_length = packet_length
        self.state = state
        self.port = port
        self.rid = rid
        self.itype = itype
        self.ops = ops
        self.frame = frame
        self.now_us = now_us
        self.depth = depth

    def __repr__(self) -> str:
        return (f"IngressResult(egress_spec={self.egress_spec!r}, mcast_grp={self.mcast_grp!r}, "
                f"packet_length={self.packet_length!r}, port={self.port!r}, rid={self.rid!r}, itype={self.itype!r}, "
                f"now_us={self.now_us!r}, depth={self.depth!r})")


def _unicast_result(egress_spec: int, mcast_grp: int, packet_length: int, state: tuple, port: int) -> IngressResult:
    """``IngressResult(egress_spec, mcast_grp, packet_length, state, port)`` (no copies asked for),
    made without a call's argument parsing: in the compiled build ``__new__`` and C member stores
    (one per packet). The other fields get :class:`IngressResult`'s defaults."""
    st = IngressResult.__new__(IngressResult)
    st.egress_spec = egress_spec
    st.mcast_grp = mcast_grp
    st.packet_length = packet_length
    st.state = state
    st.port = port
    st.rid = 0
    st.itype = 0
    st.ops = None
    st.frame = None
    st.now_us = 0
    st.depth = 0
    return st


class PipelineCode:
    """The entry points of a compiled pipeline with C arguments (compiled, ``runtime.pxd``: cpdef
    methods that the generated module's ``_Code`` overrides, called without boxing their integers:
    ``hostapps.compiled.pipeline_module_source``). ``ingress_c`` is the generated ``_ingress(frame,
    ingress_port, now_us)`` (but that its unicast result, ``(egress_spec, mcast_grp, length, state)``,
    comes as the :class:`IngressResult` :meth:`Pipeline.ingress` makes of it) and ``egress_c``
    ``_egress(state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_timestamp_us, now_us)``
    (no rid or instance type: a normal packet), the same code with the same results. A
    :class:`Pipeline` calls them when its compiled ingress function carries one (its ``_p4code``),
    else the functions."""

    def ingress_c(self, frame: bytes, ingress_port: int, now_us: int) -> tuple | None:
        raise NotImplementedError

    def egress_c(self, state: Any, egress_port: int, enq_qdepth: int, deq_qdepth: int, deq_timedelta_us: int,
                 enq_timestamp_us: int, now_us: int) -> Any:
        raise NotImplementedError


class Pipeline:
    """A P4 program compiled to Python (see module docstring).

    ``tables``, ``registers``, ``counters`` map fully qualified names
    (``MyIngress.ipv4_lpm``) to :class:`Table`, :class:`Register`, :class:`Counter`.
    ``stats`` counts ``parsed`` (frames given to ingress), ``parser_errors`` (packets whose parser_error is
    not NoError), ``ingress_drops``, ``egress_drops``, ``packets_out``, then ``clones``, ``resubmits``,
    ``recirculations``, ``replicas``, ``copy_drops`` (see :attr:`stats`).
    ``source`` is the generated Python (for debugging).

    Raises :class:`P4FrontendError` (FILE:LINE) for constructs the runtime does not
    support, e.g. a program that is not a V1Switch.
    """

    def __init__(self, program: ir.Program, seed: int | None = None, *, optimize: bool = True) -> None:
        self.program = program
        self.optimize = optimize
        self.rng = _random.Random(seed)
        # the four per-packet counters are attributes (C members in the compiled build: no dict
        # lookup per packet); ``stats`` brings them into _stats when it is read
        self._parsed = self._ingress_drops = self._egress_drops = self._packets_out = 0
        #: counters by name (``stats``): the generated code increments parser_errors here
        self._stats: dict[str, int] = {"parsed": 0, "parser_errors": 0, "ingress_drops": 0,
                                       "egress_drops": 0, "packets_out": 0}
        self.error_codes = {e: i for i, e in enumerate(program.errors)}
        main = program.main
        arch_name = main.type.name if main is not None else ""
        arch = ARCHITECTURES.get(arch_name, compile_v1model)
        #: None (queue depths in packets) or the units a queued packet counts for (T2NA: cells)
        self.qdepth_unit = QDEPTH_UNITS.get(arch_name)
        compiled = arch(passes.lower(program), optimize_code=optimize, rng=self.rng, stats=self._stats)
        self.source = compiled.source
        #: the generated functions this pipeline runs: compiled (hostapps.compiled.pipeline_functions,
        #: when built from this very source) or the exec'd source; ``code_status`` says which
        self._ingress_fn, self._egress_fn, self.code_status = _compiled.pipeline_functions(
            compiled.source, compiled.ingress_fn, compiled.egress_fn)
        #: the compiled functions' C entry points (PipelineCode), when their module has them, else None
        self._code = getattr(self._ingress_fn, "_p4code", None)
        #: the exec'd generated functions (``_ingress``, ``_egress``; their globals are the namespace)
        self.generated_functions = (compiled.ingress_fn, compiled.egress_fn)
        self.tables: dict[str, Table] = compiled.objects.tables
        self.registers: dict[str, Register] = compiled.objects.registers
        self.counters: dict[str, Counter] = compiled.objects.counters
        self.meters: dict[str, Any] = compiled.objects.meters
        self.action_profiles: dict[str, ActionProfile] = compiled.objects.action_profiles
        #: parser value sets by fully qualified name (``MyParser.pvs``)
        self.value_sets: dict[str, ValueSet] = compiled.objects.value_sets
        self._field_lists = compiled.field_lists
        #: packet replication engine: multicast group -> [(egress port, egress_rid)]
        self.mcast_groups: dict[int, list[tuple[int, int]]] = {}
        #: clone (mirroring) sessions: session id -> egress port
        self.mirror_sessions: dict[int, int] = {}
        #: copies egress asked for (E2E clone, recirculate), taken by the switch core:
        #: ``("egress", port, IngressResult)`` / ``("ingress", frame, port, instance_type, preserved, depth)``
        self.pending: list[tuple] = []
        #: the last egress run sent its packet back to ingress (not a drop)
        self.last_recirculated = False
        for k in ("clones", "resubmits", "recirculations", "replicas", "copy_drops"):
            self._stats.setdefault(k, 0)

    @property
    def stats(self) -> dict[str, int]:
        """The counters by name (see the class docstring): always the same dict, whose ``parsed``,
        ``ingress_drops``, ``egress_drops`` and ``packets_out`` are brought up to date on each read
        of this attribute (the others, ``parser_errors`` among them, are counted in it live)."""
        d = self._stats
        d["parsed"] = self._parsed
        d["ingress_drops"] = self._ingress_drops
        d["egress_drops"] = self._egress_drops
        d["packets_out"] = self._packets_out
        return d

    # ------------------------------------------------------------ per packet
    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> IngressResult | None:
        """Run parser, verify-checksum and ingress on ``frame`` (bytes of an Ethernet frame).

        ``now_us`` is the ingress_global_timestamp in microseconds. Returns None when the
        packet is dropped (``mark_to_drop`` / egress_spec 511); never raises on malformed
        frames (they get a parser_error and follow the program's logic).
        """
        self._parsed += 1
        if type(frame) is not bytes:
            frame = bytes(frame)
        code = self._code
        if code is not None:
            out = code.ingress_c(frame, ingress_port, now_us)
            if type(out) is IngressResult:  # a unicast result (_unicast_result, made there)
                return out
            r = out
        else:
            r = self._ingress_fn(frame, ingress_port, now_us)
        if r is None:
            self._ingress_drops += 1
            return None
        if len(r) == 5:
            return IngressResult(r[0], r[1], r[2], r[3], ingress_port, ops=r[4], frame=frame, now_us=now_us)
        return _unicast_result(r[0], r[1], r[2], r[3], ingress_port)

    def ingress_copy(self, frame: bytes, ingress_port: int, now_us: int, instance_type: int,
                     preserved: dict[str, Any] | None, depth: int = 0) -> IngressResult | None:
        """:meth:`ingress` for a resubmitted or recirculated packet (bmv2 instance_type 6 or 4).

        ``preserved`` holds the field list's metadata values; ``depth`` counts the
        re-entries so far (kept in the result's ``depth``).
        """
        self._parsed += 1
        r = self._ingress_fn(bytes(frame), ingress_port, now_us, instance_type, preserved)
        if r is None:
            self._ingress_drops += 1
            return None
        if len(r) == 5:
            return IngressResult(r[0], r[1], r[2], r[3], ingress_port, ops=r[4], frame=bytes(frame),
                                 now_us=now_us, depth=depth)
        return IngressResult(*r, ingress_port, depth=depth)

    def _preserved(self, values: dict[str, Any], index: int) -> dict[str, Any]:
        keep = self._field_lists.get(index, ())
        return {v: values[v] for v in keep if v in values}

    def fanout(self, st: IngressResult) -> list[tuple]:
        """What follows ingress for ``st``, in bmv2 simple_switch's order (ingress_thread).

        I2E clone (the received packet parsed again, to the session's port), resubmit
        (the received packet enters ingress again; nothing else happens to it), multicast
        (one replica per ``(port, rid)`` of the group, instance_type 5; the original is
        discarded), else unicast to ``egress_spec`` unless it is 511. Returns tasks
        ``("egress", port, IngressResult)`` and ``("ingress", frame, port, instance_type,
        preserved, depth)``.
        """
        tasks: list[tuple] = []
        depth = st.depth
        if st.ops is not None:
            clone, resub, values = st.ops
            if clone is not None:
                session, index = clone
                port = self.mirror_sessions.get(session)
                if port is None:
                    self._stats["copy_drops"] += 1
                else:
                    r = self._ingress_fn(st.frame, st.port, st.now_us, INGRESS_CLONE,
                                         self._preserved(values, index), True)
                    self._stats["clones"] += 1
                    tasks.append(("egress", port, IngressResult(0, 0, r[2], r[3], st.port, itype=INGRESS_CLONE,
                                                                depth=depth)))
            if resub is not None:
                if depth >= MAX_REENTRIES:
                    self._stats["copy_drops"] += 1
                else:
                    self._stats["resubmits"] += 1
                    tasks.append(("ingress", st.frame, st.port, RESUBMIT, self._preserved(values, resub), depth + 1))
                return tasks
        if st.mcast_grp:
            for port, rid in self.mcast_groups.get(st.mcast_grp, ()):
                self._stats["replicas"] += 1
                tasks.append(("egress", port, IngressResult(st.egress_spec, st.mcast_grp, st.packet_length, st.state,
                                                            st.port, rid=rid, itype=REPLICATION, depth=depth)))
            return tasks
        if st.egress_spec != 511:
            tasks.append(("egress", st.egress_spec, st))
        return tasks

    def egress(self, st: IngressResult, *, egress_port: int, enq_qdepth: int = 0, deq_qdepth: int = 0,
               deq_timedelta_us: int = 0, enq_timestamp_us: int = 0, now_us: int = 0) -> bytes | None:
        """Run egress, compute-checksum and the deparser; return the frame or None (dropped).

        Queue depths are in packets (v1model enq_qdepth/deq_qdepth, 19 bits), times in us.
        The payload after the last extracted header is appended unchanged.
        """
        return self.egress_at(st, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_timestamp_us, now_us)

    def egress_at(self, st: IngressResult, egress_port: int, enq_qdepth: int, deq_qdepth: int,
                  deq_timedelta_us: int, enq_timestamp_us: int, now_us: int) -> bytes | None:
        """:meth:`egress` with positional arguments (the switch core's per-packet call)."""
        if st.itype or st.rid:  # a replica or a clone (v1model's _egress takes rid and instance_type)
            out = self._egress_fn(st.state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us,
                                  enq_timestamp_us, now_us, st.rid, st.itype)
        elif self._code is not None:
            code = self._code
            out = code.egress_c(st.state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us, enq_timestamp_us,
                                now_us)
        else:
            out = self._egress_fn(st.state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us,
                                  enq_timestamp_us, now_us)
        self.last_recirculated = False
        if type(out) is tuple:
            out = self._egress_copies(st, out)
            if out is None and self.last_recirculated:
                return None  # not a drop: the packet went back to ingress
        if out is None:
            self._egress_drops += 1
        else:
            self._packets_out += 1
        return out

    def _egress_copies(self, st: IngressResult, res: tuple) -> bytes | None:
        """E2E clone and recirculate requests of one egress run (bmv2 egress_thread) -> ``pending``."""
        out, clone, recirc = res
        if clone is not None:
            session, _index, state = clone
            port = self.mirror_sessions.get(session)
            if port is None:
                self._stats["copy_drops"] += 1
            else:
                self._stats["clones"] += 1
                self.pending.append(("egress", port, IngressResult(0, 0, st.packet_length, state, st.port,
                                                                   itype=EGRESS_CLONE, depth=st.depth)))
        if recirc is not None:
            frame, index, values = recirc
            depth = st.depth
            if depth >= MAX_REENTRIES:
                self._stats["copy_drops"] += 1
            else:
                self._stats["recirculations"] += 1
                self.last_recirculated = True
                self.pending.append(("ingress", frame, st.port, RECIRC, self._preserved(values, index), depth + 1))
        return out

    # ------------------------------------------------------------ meters and direct counters
    def _meter(self, name: str) -> Any:
        m = self.meters.get(name)
        if m is None:
            matches = [v for k, v in self.meters.items() if k.split(".")[-1] == name]
            if len(matches) != 1:
                raise ControlError(f"unknown meter {name}{closest(name, self.meters)}")
            m = matches[0]
        return m

    @staticmethod
    def _rates(what: str, rates: Any) -> list[tuple[float, int]]:
        try:
            out = [(float(r), int(b)) for r, b in rates]
        except (TypeError, ValueError):
            raise ControlError(f"{what}: rates must be [[CIR, CBS], [PIR, PBS]]") from None
        return out

    def meter_set_rates(self, name: str, index: int | None, rates: list) -> None:
        """Configure meter cell ``index`` (every cell when None) with ``[[CIR, CBS], [PIR, PBS]]``.

        Rates in packets or bytes (the meter's MeterType) per microsecond, bursts in
        packets or bytes: bmv2's ``meter_set_rates NAME INDEX CIR:CBS PIR:PBS``.
        """
        m = self._meter(name)
        cells = m.cells if index is None else None
        if cells is None:
            if not 0 <= index < m.size:
                raise ControlError(f"{m.name}: index {index} out of range 0..{m.size - 1}")
            cells = [m.cells[index]]
        parsed = self._rates(m.name, rates)
        try:
            for c in cells:
                c.set_rates(parsed)
        except ValueError as e:
            raise ControlError(f"{m.name}: {e}") from None

    def direct_meter_set_rates(self, table: str, match: dict[str, Any], rates: list,
                               priority: int | None = None) -> None:
        """Configure the direct meter of one table entry (rates as :meth:`meter_set_rates`)."""
        t = self.table(table)
        state = t.entry_state(match, priority)
        if state.meter is None:
            raise ControlError(f"{t.name}: the table has no direct meter")
        try:
            state.meter.set_rates(self._rates(t.name, rates))
        except ValueError as e:
            raise ControlError(f"{t.name}: {e}") from None

    def direct_counter_read(self, table: str, match: dict[str, Any], priority: int | None = None) -> tuple[int, int]:
        """``(packets, bytes)`` that the table's direct counter counted for one entry's hits."""
        t = self.table(table)
        if t.direct_counter is None:
            raise ControlError(f"{t.name}: the table has no direct counter")
        state = t.entry_state(match, priority)
        return (state.packets, state.bytes)

    # ------------------------------------------------------------ replication (control plane)
    def mcast_group_set(self, group: int, replicas: list) -> None:
        """Set multicast ``group`` (1..65535) to ``replicas``: ports, or ``[port, rid]`` pairs (rid 0 if omitted).

        A replica is one copy of the packet to that egress port with that egress_rid
        (bmv2's mc_mgrp_create / mc_node_create / mc_node_associate in one call).
        """
        g = to_int(group, 16, "multicast group")
        if g == 0:
            raise ControlError("multicast group 0 means unicast; use 1..65535")
        out = []
        for r in replicas:
            port, rid = (r, 0) if isinstance(r, int | str) else tuple(r)
            out.append((to_int(port, 9, f"multicast group {g}: port"), to_int(rid, 16, f"multicast group {g}: rid")))
        self.mcast_groups[g] = out

    def mcast_group_delete(self, group: int) -> None:
        """Delete multicast ``group`` (packets sent to it then make no copies)."""
        if self.mcast_groups.pop(to_int(group, 16, "multicast group"), None) is None:
            raise ControlError(f"no multicast group {group}")

    def mirroring_add(self, session: int, port: int) -> None:
        """Clone session ``session`` sends its copies to egress ``port`` (bmv2 mirroring_add)."""
        self.mirror_sessions[to_int(session, 32, "clone session")] = to_int(port, 9, f"clone session {session}: port")

    def mirroring_delete(self, session: int) -> None:
        """Delete clone session ``session`` (clones to it are then not made)."""
        if self.mirror_sessions.pop(to_int(session, 32, "clone session"), None) is None:
            raise ControlError(f"no clone session {session}")

    def process(self, frame: bytes, ingress_port: int, now_us: int = 0, *, enq_qdepth: int = 0,
                deq_qdepth: int = 0) -> tuple[int, bytes] | None:
        """Ingress then egress on the port ingress chose, no queue: ``(port, frame)`` or None."""
        st = self.ingress(frame, ingress_port, now_us)
        if st is None:
            return None
        out = self.egress(st, egress_port=st.egress_spec, enq_qdepth=enq_qdepth, deq_qdepth=deq_qdepth,
                          now_us=now_us)
        return None if out is None else (st.egress_spec, out)

    # ------------------------------------------------------------ control plane
    def table(self, name: str) -> Table:
        """The table ``name`` (fully qualified; a unique short name is accepted)."""
        t = self.tables.get(name)
        if t is None:
            matches = [v for k, v in self.tables.items() if k.split(".")[-1] == name]
            if len(matches) == 1:
                return matches[0]
            raise ControlError(f"unknown table {name}{closest(name, self.tables)}")
        return t

    def table_add(self, table: str, match: dict[str, Any], action: str, params: dict[str, Any] | None = None,
                  priority: int | None = None) -> None:
        """Add an entry. Match values: exact int/str, lpm 'a.b.c.d/len' or [v, len], ternary [v, mask]."""
        self.table(table).add(match, action, params, priority)

    def table_modify(self, table: str, match: dict[str, Any], action: str, params: dict[str, Any] | None = None,
                     priority: int | None = None) -> None:
        """Replace the action of an existing entry."""
        self.table(table).add(match, action, params, priority, modify=True)

    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """Delete an entry."""
        self.table(table).delete(match, priority)

    def table_clear(self, table: str) -> None:
        """Delete every entry of a table."""
        self.table(table).clear()

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """Set the default action (refused when the program declares it const)."""
        self.table(table).set_default(action, params)

    def _register(self, name: str) -> Register:
        r = self.registers.get(name)
        if r is None:
            matches = [v for k, v in self.registers.items() if k.split(".")[-1] == name]
            if len(matches) == 1:
                return matches[0]
            raise ControlError(f"unknown register {name}{closest(name, self.registers)}")
        return r

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or the whole array when ``index`` is None."""
        r = self._register(name)
        if index is None:
            return list(r.values)
        if not 0 <= index < r.size:
            raise ControlError(f"{r.name}: index {index} out of range 0..{r.size - 1}")
        return r.values[index]

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell (value must fit the register width)."""
        r = self._register(name)
        if not 0 <= index < r.size:
            raise ControlError(f"{r.name}: index {index} out of range 0..{r.size - 1}")
        r.values[index] = to_int(value, r.width, f"{r.name}[{index}]")

    def register_reset(self, name: str) -> None:
        """Zero every cell."""
        r = self._register(name)
        r.values[:] = [0] * r.size

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """(packets, bytes) of one index, or of every index when ``index`` is None."""
        c = self.counters.get(name)
        if c is None:
            matches = [v for k, v in self.counters.items() if k.split(".")[-1] == name]
            if len(matches) != 1:
                raise ControlError(f"unknown counter {name}{closest(name, self.counters)}")
            c = matches[0]
        if index is None:
            return list(zip(c.packets, c.bytes, strict=True))
        if not 0 <= index < c.size:
            raise ControlError(f"{c.name}: index {index} out of range 0..{c.size - 1}")
        return (c.packets[index], c.bytes[index])

    def counter_reset(self, name: str) -> None:
        """Zero a counter array."""
        self.counter_read(name)
        c = self.counters.get(name) or next(v for k, v in self.counters.items() if k.split(".")[-1] == name)
        c.packets[:] = [0] * c.size
        c.bytes[:] = [0] * c.size

    # action profiles and selectors (bmv2's act_prof_* commands, explicit ids as P4Runtime)
    def action_profile(self, name: str) -> ActionProfile:
        """The action profile or selector ``name`` (fully qualified; a unique short name is accepted)."""
        p = self.action_profiles.get(name)
        if p is None:
            matches = [v for k, v in self.action_profiles.items() if k.split(".")[-1] == name]
            if len(matches) != 1:
                raise ControlError(f"unknown action profile {name}{closest(name, self.action_profiles)}")
            p = matches[0]
        return p

    def act_prof_create_member(self, profile: str, member: int, action: str,
                               params: dict[str, Any] | None = None) -> None:
        """Member ``member`` of ``profile`` runs ``action(params)``."""
        self.action_profile(profile).add_member(member, action, params)

    def act_prof_modify_member(self, profile: str, member: int, action: str,
                               params: dict[str, Any] | None = None) -> None:
        """Member ``member`` runs ``action(params)`` from now on (its entries and groups too)."""
        self.action_profile(profile).add_member(member, action, params, modify=True)

    def act_prof_delete_member(self, profile: str, member: int) -> None:
        """Delete a member no entry or group uses."""
        self.action_profile(profile).delete_member(member)

    def act_prof_create_group(self, profile: str, group: int) -> None:
        """An empty group of selector ``profile``."""
        self.action_profile(profile).add_group(group)

    def act_prof_delete_group(self, profile: str, group: int) -> None:
        """Delete a group no entry uses."""
        self.action_profile(profile).delete_group(group)

    def act_prof_add_member_to_group(self, profile: str, member: int, group: int) -> None:
        """Put ``member`` into ``group``."""
        self.action_profile(profile).add_to_group(group, member)

    def act_prof_remove_member_from_group(self, profile: str, member: int, group: int) -> None:
        """Take ``member`` out of ``group``."""
        self.action_profile(profile).remove_from_group(group, member)

    # parser value sets (bmv2's pvs_* commands; P4_16 spec 12.11)
    def value_set(self, name: str) -> ValueSet:
        """The value set ``name`` (fully qualified; a unique short name is accepted)."""
        v = self.value_sets.get(name)
        if v is None:
            matches = [x for k, x in self.value_sets.items() if k.split(".")[-1] == name]
            if len(matches) != 1:
                raise ControlError(f"unknown value set {name}{closest(name, self.value_sets)}")
            v = matches[0]
        return v

    def pvs_add(self, name: str, value: Any, mask: Any = None) -> None:
        """Add ``value`` (an int, a string as table values, or a struct's ``{field: value}``;
        with ``mask``, a ternary member) to value set ``name``."""
        self.value_set(name).add(value, mask)

    def pvs_remove(self, name: str, value: Any, mask: Any = None) -> None:
        """Remove a member of value set ``name``."""
        self.value_set(name).remove(value, mask)

    def pvs_clear(self, name: str) -> None:
        """Remove every member of value set ``name``."""
        self.value_set(name).clear()

    def pvs_get(self, name: str) -> list[tuple[int, int]]:
        """The members of value set ``name`` as ``(value, mask)``, in insertion order."""
        return list(self.value_set(name).members)

    def table_indirect_add(self, table: str, match: dict[str, Any], member: int,
                           priority: int | None = None) -> None:
        """An entry of a table with an action profile that runs ``member``."""
        self.table(table).indirect_add(match, member=member, priority=priority)

    def table_indirect_add_with_group(self, table: str, match: dict[str, Any], group: int,
                                      priority: int | None = None) -> None:
        """An entry of a table with an action selector that runs a member of ``group``."""
        self.table(table).indirect_add(match, group=group, priority=priority)
