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
headers are read and written with one precompiled ``struct`` per header, a header that
nothing can have changed since ``extract`` is re-emitted from its original bytes,
extracted fields that nothing reads are not computed, egress receives only the
variables it reads, an acyclic parser is inlined instead of run as a state loop, and
csum16 is inlined. ``optimize=False`` keeps the straightforward code (the reference for
the tests).

Control-plane methods (``table_add`` ... ``counter_read``) take fully qualified P4
names and raise :class:`ControlError` with a one-line message.
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass, field
from typing import Any

from . import ir
from .errors import ControlError
from .externs import Counter, Register, csum16
from .t2na import compile_t2na, qdepth_cells
from .tables import Table, closest, to_int
from .v1model import compile_v1model

__all__ = ["ARCHITECTURES", "ControlError", "IngressResult", "Pipeline", "csum16"]

#: main package type name -> compiler of that architecture (v1model.compile_v1model,
#: t2na.compile_t2na)
ARCHITECTURES = {"V1Switch": compile_v1model, "Switch": compile_t2na}
#: main package type name -> how the traffic manager counts queue depth for it (None:
#: packets; a function: units per queued packet, T2NA's 176-byte cells)
QDEPTH_UNITS = {"V1Switch": None, "Switch": qdepth_cells}


@dataclass(slots=True)
class IngressResult:
    """Outcome of ingress for a packet that was not dropped.

    ``egress_spec`` is the port chosen by ingress (bit<9>), ``mcast_grp`` its multicast
    group (0: unicast), ``packet_length`` the received frame length in bytes; the rest
    is opaque state that :meth:`Pipeline.egress` consumes.
    """

    egress_spec: int
    mcast_grp: int
    packet_length: int
    state: tuple = field(repr=False)


class Pipeline:
    """A P4 program compiled to Python (see module docstring).

    ``tables``, ``registers``, ``counters`` map fully qualified names
    (``MyIngress.ipv4_lpm``) to :class:`Table`, :class:`Register`, :class:`Counter`.
    ``stats`` counts ``parsed`` (frames given to ingress), ``parser_errors`` (packets whose parser_error is
    not NoError), ``ingress_drops``, ``egress_drops``, ``packets_out``.
    ``source`` is the generated Python (for debugging).

    Raises :class:`P4FrontendError` (FILE:LINE) for constructs the runtime does not
    support, e.g. a program that is not a V1Switch.
    """

    def __init__(self, program: ir.Program, seed: int | None = None, *, optimize: bool = True) -> None:
        self.program = program
        self.optimize = optimize
        self.rng = _random.Random(seed)
        self.stats: dict[str, int] = {"parsed": 0, "parser_errors": 0, "ingress_drops": 0,
                                      "egress_drops": 0, "packets_out": 0}
        self.error_codes = {e: i for i, e in enumerate(program.errors)}
        main = program.main
        arch_name = main.type.name if main is not None else ""
        arch = ARCHITECTURES.get(arch_name, compile_v1model)
        #: None (queue depths in packets) or the units a queued packet counts for (T2NA: cells)
        self.qdepth_unit = QDEPTH_UNITS.get(arch_name)
        compiled = arch(program, optimize_code=optimize, rng=self.rng, stats=self.stats)
        self.source = compiled.source
        self._ingress_fn = compiled.ingress_fn
        self._egress_fn = compiled.egress_fn
        self.tables: dict[str, Table] = compiled.objects.tables
        self.registers: dict[str, Register] = compiled.objects.registers
        self.counters: dict[str, Counter] = compiled.objects.counters

    # ------------------------------------------------------------ per packet
    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> IngressResult | None:
        """Run parser, verify-checksum and ingress on ``frame`` (bytes of an Ethernet frame).

        ``now_us`` is the ingress_global_timestamp in microseconds. Returns None when the
        packet is dropped (``mark_to_drop`` / egress_spec 511); never raises on malformed
        frames (they get a parser_error and follow the program's logic).
        """
        self.stats["parsed"] += 1
        r = self._ingress_fn(bytes(frame), ingress_port, now_us)
        if r is None:
            self.stats["ingress_drops"] += 1
            return None
        return IngressResult(*r)

    def egress(self, st: IngressResult, *, egress_port: int, enq_qdepth: int = 0, deq_qdepth: int = 0,
               deq_timedelta_us: int = 0, enq_timestamp_us: int = 0, now_us: int = 0) -> bytes | None:
        """Run egress, compute-checksum and the deparser; return the frame or None (dropped).

        Queue depths are in packets (v1model enq_qdepth/deq_qdepth, 19 bits), times in us.
        The payload after the last extracted header is appended unchanged.
        """
        out = self._egress_fn(st.state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us,
                              enq_timestamp_us, now_us)
        if out is None:
            self.stats["egress_drops"] += 1
        else:
            self.stats["packets_out"] += 1
        return out

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


