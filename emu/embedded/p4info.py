"""P4Info of a program loaded by the embedded front end (P4Runtime 1.3 section 6).

:func:`build_p4info` describes a compiled :class:`~emu.embedded.runtime.Pipeline` as a
``p4.config.v1.P4Info`` message: tables (match fields with their P4 names, widths and
match kinds, action references, size, const default action), the actions the tables use
(parameters with widths), indexed counters and registers, ``pkg_info.arch = "v1model"``.

Ids are chosen the way p4c chooses them when a program has no ``@id`` annotations
(p4c's ``control-plane/p4RuntimeSymbolTable``): the resource-type prefix in the top byte
(P4Ids: action 0x01, table 0x02, counter 0x12, register 0x16) and the low 24 bits of the
Jenkins one-at-a-time hash of the fully qualified name, names hashed in sorted order with
linear probing on a collision. So a P4Info made by p4c for the same program has the same
ids (e.g. ``NoAction`` is 21257015), and a student's p4c-built P4Info is accepted by
``SetForwardingPipelineConfig``. Match-field and parameter ids count from 1 in
declaration order, as in p4c. Aliases are the shortest unique dotted suffix of a name.

:func:`p4info_mismatch` compares two P4Infos on what the data plane depends on (ids,
names, widths, match kinds, sizes) and names the first difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from p4.config.v1 import p4info_pb2

__all__ = ["build_p4info", "jenkins_hash", "p4info_mismatch"]

#: P4Ids.Prefix values (p4/config/v1/p4info.proto).
PREFIX_ACTION = p4info_pb2.P4Ids.ACTION
PREFIX_TABLE = p4info_pb2.P4Ids.TABLE
PREFIX_COUNTER = p4info_pb2.P4Ids.COUNTER
PREFIX_REGISTER = p4info_pb2.P4Ids.REGISTER

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {"packets": p4info_pb2.CounterSpec.PACKETS, "bytes": p4info_pb2.CounterSpec.BYTES,
                  "packets_and_bytes": p4info_pb2.CounterSpec.BOTH}


def jenkins_hash(name: str) -> int:
    """Jenkins one-at-a-time hash of ``name``'s UTF-8 bytes (32 bits)."""
    h = 0
    for b in name.encode():
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


class _Ids:
    """Id assignment shared by every resource type (ids are unique across types)."""

    def __init__(self) -> None:
        self.used: set[int] = set()

    def assign(self, prefix: int, names: Iterable[str]) -> dict[str, int]:
        out = {}
        for name in sorted(set(names)):
            low = jenkins_hash(name) & 0xFFFFFF
            for step in range(1 << 24):
                candidate = (prefix << 24) | ((low + step) & 0xFFFFFF)
                if candidate not in self.used:
                    break
            else:  # pragma: no cover - 16 million names of one type
                raise ValueError(f"no P4Runtime id left for {name}")
            self.used.add(candidate)
            out[name] = candidate
        return out


def _aliases(names: Iterable[str]) -> dict[str, str]:
    """Shortest dotted suffix of each name that no other name ends with."""
    names = list(names)
    out = {}
    for name in names:
        parts = name.split(".")
        for n in range(1, len(parts) + 1):
            suffix = ".".join(parts[-n:])
            if not any(o != name and (o == suffix or o.endswith("." + suffix)) for o in names):
                out[name] = suffix
                break
        else:
            out[name] = name
    return out


def build_p4info(pipeline: Any) -> p4info_pb2.P4Info:
    """The P4Info of ``pipeline`` (a compiled ``runtime.Pipeline``)."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    actions: dict[str, list[tuple[str, int]]] = {}
    for table in pipeline.tables.values():
        for spec in table.actions.values():
            actions.setdefault(spec.name, list(spec.params))
    ids = _Ids()
    action_ids = ids.assign(PREFIX_ACTION, actions)
    table_ids = ids.assign(PREFIX_TABLE, pipeline.tables)
    counter_ids = ids.assign(PREFIX_COUNTER, pipeline.counters)
    register_ids = ids.assign(PREFIX_REGISTER, pipeline.registers)
    aliases = _aliases([*actions, *pipeline.tables, *pipeline.counters, *pipeline.registers])

    def preamble(msg: Any, name: str, pid: int) -> None:
        msg.preamble.id = pid
        msg.preamble.name = name
        msg.preamble.alias = aliases[name]

    for name in sorted(pipeline.tables, key=table_ids.__getitem__):
        table = pipeline.tables[name]
        t = info.tables.add()
        preamble(t, name, table_ids[name])
        for i, key in enumerate(table.keys, start=1):
            mf = t.match_fields.add()
            mf.id, mf.name, mf.bitwidth, mf.match_type = i, key.name, key.width, _MATCH_TYPES[key.kind]
        for spec in table.actions.values():
            t.action_refs.add().id = action_ids[spec.name]
        if table.const_default and table.default_desc[0]:
            t.const_default_action_id = action_ids[table.default_desc[0]]
        if table.size is not None:
            t.size = table.size
        if getattr(table, "const_entries", False):  # ``const entries``: read-only to the control plane
            t.is_const_table = True
            t.has_initial_entries = bool(table.entries)
    for name in sorted(actions, key=action_ids.__getitem__):
        a = info.actions.add()
        preamble(a, name, action_ids[name])
        for i, (pname, width) in enumerate(actions[name], start=1):
            p = a.params.add()
            p.id, p.name, p.bitwidth = i, pname, width
    for name in sorted(pipeline.counters, key=counter_ids.__getitem__):
        counter = pipeline.counters[name]
        c = info.counters.add()
        preamble(c, name, counter_ids[name])
        c.spec.unit = _COUNTER_UNITS.get(counter.kind, p4info_pb2.CounterSpec.BOTH)
        c.size = counter.size
    for name in sorted(pipeline.registers, key=register_ids.__getitem__):
        register = pipeline.registers[name]
        r = info.registers.add()
        preamble(r, name, register_ids[name])
        r.type_spec.bitstring.bit.bitwidth = register.width
        r.size = register.size
    return info


def _summary(info: p4info_pb2.P4Info) -> dict[str, dict[int, tuple]]:
    """What the data plane depends on, by kind and id."""
    return {
        "table": {t.preamble.id: (t.preamble.name, tuple((m.id, m.name, m.bitwidth, m.match_type)
                                                          for m in t.match_fields),
                                  tuple(sorted(r.id for r in t.action_refs)), t.const_default_action_id)
                  for t in info.tables},
        "action": {a.preamble.id: (a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params))
                   for a in info.actions},
        "counter": {c.preamble.id: (c.preamble.name, c.size) for c in info.counters},
        "register": {r.preamble.id: (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
                     for r in info.registers},
    }


def p4info_mismatch(loaded: p4info_pb2.P4Info, given: p4info_pb2.P4Info) -> str | None:
    """None if ``given`` describes the same program as ``loaded``, else one line naming the
    first table, action, counter or register that differs (or is missing on either side)."""
    ours, theirs = _summary(loaded), _summary(given)
    for kind in ("table", "action", "counter", "register"):
        a, b = ours[kind], theirs[kind]
        for pid in sorted(set(a) | set(b)):
            if pid not in b:
                return f"{kind} {a[pid][0]} (id {pid}) of the loaded program is missing from the given P4Info"
            if pid not in a:
                return f"{kind} {b[pid][0]} (id {pid}) of the given P4Info is not in the loaded program"
            if a[pid] != b[pid]:
                return f"{kind} {a[pid][0]} (id {pid}) differs: loaded {a[pid][1:]}, given {b[pid][1:]}"
    return None
