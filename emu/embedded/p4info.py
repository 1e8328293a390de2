"""P4Info of a program loaded by the embedded front end (P4Runtime 1.3 section 6).

:func:`build_p4info` describes a compiled :class:`~emu.embedded.runtime.Pipeline` as a
``p4.config.v1.P4Info`` message: tables (match fields with their P4 names, widths and
match kinds, action references, size -- 1024 where the program gives none, as p4c --,
const default action, direct resources), the actions the tables use and those a control
calls directly (``mark_ce();``), parameters with widths, indexed counters, meters and
registers, direct counters and meters, action profiles and selectors (``action_profiles``,
the tables' ``implementation_id``; a table's ``selector`` keys are no match fields), the
``@controller_header`` headers (``controller_packet_metadata``: packet-in / packet-out
metadata), ``pkg_info.arch = "v1model"``.

Ids are chosen the way p4c chooses them when a program has no ``@id`` annotations
(p4c's ``control-plane/p4RuntimeSymbolTable``): the resource-type prefix in the top byte
(P4Ids: action 0x01, table 0x02, controller header 0x04, action profile 0x11, counter
0x12, direct counter 0x13, meter 0x14, direct meter 0x15, register 0x16) and the low 24 bits of the
Jenkins one-at-a-time hash of the fully qualified name, names hashed in sorted order with
linear probing on a collision. So a P4Info made by p4c for the same program has the same
ids (e.g. ``NoAction`` is 21257015), and a student's p4c-built P4Info is accepted by
``SetForwardingPipelineConfig``. Match-field and parameter ids count from 1 in
declaration order, as in p4c. Aliases are the shortest unique dotted suffix of a name.

:func:`p4info_mismatch` compares two P4Infos on what the data plane depends on (ids,
names, widths, match kinds, sizes) and names the first difference.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from p4.config.v1 import p4info_pb2

from emu.embedded import ir

__all__ = ["DEFAULT_TABLE_SIZE", "INLINE_PROFILE_NAME", "build_p4info", "controller_headers", "jenkins_hash",
           "p4info_mismatch", "profile_p4_names"]

#: P4Ids.Prefix values (p4/config/v1/p4info.proto).
PREFIX_ACTION = p4info_pb2.P4Ids.ACTION
PREFIX_TABLE = p4info_pb2.P4Ids.TABLE
PREFIX_COUNTER = p4info_pb2.P4Ids.COUNTER
PREFIX_REGISTER = p4info_pb2.P4Ids.REGISTER
PREFIX_METER = p4info_pb2.P4Ids.METER
PREFIX_DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
PREFIX_DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
PREFIX_ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
PREFIX_CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
#: ActionSpec.scope -> P4Info ActionRef.scope (P4Runtime section 6.3, ``@defaultonly`` / ``@tableonly``)
_SCOPES = {"default_only": p4info_pb2.ActionRef.DEFAULT_ONLY, "table_only": p4info_pb2.ActionRef.TABLE_ONLY}
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


#: Size p4c gives a table that declares none (p4c's ``P4RuntimeSymbolTable``: defaultTableSize).
DEFAULT_TABLE_SIZE = 1024


def _called_names(node: Any, out: set[str]) -> None:
    """Names of every ``f(...)`` call in ``node`` (an IR tree of dataclasses and lists)."""
    if isinstance(node, list | tuple):
        for n in node:
            _called_names(n, out)
        return
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return
    if isinstance(node, ir.Call) and isinstance(node.func, ir.Name):
        out.add(node.func.name)
    for f in dataclasses.fields(node):
        if f.name != "loc":
            _called_names(getattr(node, f.name), out)


def _direct_actions(program: Any) -> dict[str, list[tuple[str, int]]]:
    """Actions that a control of ``program``'s ``main`` calls directly (``mark_ce();``), by
    fully qualified name, with their control-plane (directionless ``bit<W>``) parameters.

    p4c's P4Info lists them beside the tables' actions (a controller may read a direct
    counter of one, and their ids are reserved), so the embedded P4Info lists them too."""
    out: dict[str, list[tuple[str, int]]] = {}
    main = getattr(program, "main", None)
    if main is None:
        return out
    instances = {i.name: i for i in getattr(program, "instances", [])}
    used: list[str] = []
    todo = list(main.args)
    while todo:  # V1Switch(MyIngress(), ...) main; or T2NA's Pipeline(...) pipe; Switch(pipe) main;
        arg = todo.pop(0)
        if isinstance(arg, ir.Ctor):
            used.append(arg.type.name)
            todo.extend(arg.args)
        elif isinstance(arg, ir.Name) and arg.name in instances:
            todo.extend(instances.pop(arg.name).args)
    todo_controls = [(cname, cname) for cname in used]  # (prefix, control type)
    while todo_controls:
        prefix, cname = todo_controls.pop(0)
        decl = program.controls.get(cname)
        if decl is None:
            continue
        called: set[str] = set()
        _called_names(decl.apply, called)
        for act in decl.actions.values():
            _called_names(act.body, called)
        for aname in sorted(called & set(decl.actions)):
            act = decl.actions[aname]
            out[f"{prefix}.{aname}"] = [(p.name, p.type.width) for p in act.params
                                        if p.direction == "" and isinstance(p.type, ir.BitT)]
        for inst in decl.instances:  # sub-controls (Route() r1;): named under the instance, as p4c
            if inst.type.name in program.controls:
                todo_controls.append((f"{prefix}.{inst.name}", inst.type.name))
    return out


#: P4Info name of an action profile constructed in a table's ``implementation`` property
#: without ``@name``: the property's control-plane name, as p4c names it
#: (control-plane/p4RuntimeArchStandard.h, getTableImplementationName).
INLINE_PROFILE_NAME = "implementation"


def profile_p4_names(pipeline: Any) -> dict[str, str]:
    """Action profile name in the pipeline -> its P4Info name: a declared instance keeps its
    fully qualified name (``I.tags``); one constructed in place (named after its table in the
    pipeline) is :data:`INLINE_PROFILE_NAME`, as p4c names it."""
    profiles = getattr(pipeline, "action_profiles", {}) or {}
    return {name: INLINE_PROFILE_NAME if name in pipeline.tables else name for name in profiles}


#: ``@controller_header("NAME") header TYPE`` in a program's source.
_CONTROLLER_HEADER_RE = re.compile(r'@controller_header\s*\(\s*"([^"]+)"\s*\)\s*header\s+([A-Za-z_]\w*)')


def _read(path: str) -> str:
    """The text of ``path`` ("" when it is no readable file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def controller_headers(program: Any) -> list[tuple[str, str, list[tuple[str, int]]]]:
    """``(annotation name, header type, [(field, width), ...])`` of every header annotated
    ``@controller_header("packet_in")`` / ``("packet_out")`` (P4Runtime section 16.1), in
    source order. The front end keeps no header annotations, so they are read from the
    program's preprocessed source (``program.source`` is its path; the annotation must be in
    that file, the header may come from an include) and
    the fields from its type."""
    from emu.embedded.frontend import preprocess

    out: list[tuple[str, str, list[tuple[str, int]]]] = []
    path = getattr(program, "source", "") or ""
    if "@controller_header" not in _read(path):
        return out
    text, _linemap = preprocess(str(path), ())
    types = getattr(program, "types", {}) or {}
    for name, type_name in _CONTROLLER_HEADER_RE.findall(text):
        t = types.get(type_name)
        if isinstance(t, ir.HeaderT):
            out.append((name, type_name, [(f, ft.width) for f, ft in t.fields]))
    return out


def build_p4info(pipeline: Any) -> p4info_pb2.P4Info:
    """The P4Info of ``pipeline`` (a compiled ``runtime.Pipeline``)."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    actions: dict[str, list[tuple[str, int]]] = {}
    for table in pipeline.tables.values():
        for spec in table.actions.values():
            actions.setdefault(spec.name, list(spec.params))
    for name, params in _direct_actions(getattr(pipeline, "program", None)).items():
        actions.setdefault(name, params)
    meters = getattr(pipeline, "meters", {})
    direct_counters = {t.direct_counter.name: (tname, t.direct_counter) for tname, t in pipeline.tables.items()
                       if getattr(t, "direct_counter", None) is not None}
    direct_meters = {t.direct_meter.name: (tname, t.direct_meter) for tname, t in pipeline.tables.items()
                     if getattr(t, "direct_meter", None) is not None}
    ids = _Ids()
    action_ids = ids.assign(PREFIX_ACTION, actions)
    table_ids = ids.assign(PREFIX_TABLE, pipeline.tables)
    counter_ids = ids.assign(PREFIX_COUNTER, pipeline.counters)
    dcounter_ids = ids.assign(PREFIX_DIRECT_COUNTER, direct_counters)
    meter_ids = ids.assign(PREFIX_METER, meters)
    dmeter_ids = ids.assign(PREFIX_DIRECT_METER, direct_meters)
    register_ids = ids.assign(PREFIX_REGISTER, pipeline.registers)
    profiles = getattr(pipeline, "action_profiles", {}) or {}
    profile_names = profile_p4_names(pipeline)
    profile_ids = ids.assign(PREFIX_ACTION_PROFILE, profile_names.values())
    program = getattr(pipeline, "program", None)
    cheaders = controller_headers(program)
    cheader_ids = {}
    for name, type_name, _fields in cheaders:  # p4c hashes the header type's name, names it by the annotation
        cheader_ids[name] = ids.assign(PREFIX_CONTROLLER_HEADER, [type_name])[type_name]
    aliases = _aliases([*actions, *pipeline.tables, *pipeline.counters, *direct_counters, *meters,
                        *direct_meters, *pipeline.registers, *profile_names.values(), *cheader_ids])

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
            ref = t.action_refs.add()
            ref.id = action_ids[spec.name]
            if spec.scope:  # as p4c writes it: the annotation and the scope
                ref.annotations.append("@defaultonly" if spec.scope == "default_only" else "@tableonly")
                ref.scope = _SCOPES[spec.scope]
        if table.const_default and table.default_desc[0]:
            t.const_default_action_id = action_ids[table.default_desc[0]]
        for direct, dids in ((getattr(table, "direct_counter", None), dcounter_ids),
                             (getattr(table, "direct_meter", None), dmeter_ids)):
            if direct is not None:
                t.direct_resource_ids.append(dids[direct.name])
        prof = getattr(table, "profile", None)
        if prof is not None:
            t.implementation_id = profile_ids[profile_names[prof.name]]
        t.size = DEFAULT_TABLE_SIZE if table.size is None else table.size
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
    for name in sorted(direct_counters, key=dcounter_ids.__getitem__):
        tname, dc = direct_counters[name]
        c = info.direct_counters.add()
        preamble(c, name, dcounter_ids[name])
        c.spec.unit = _COUNTER_UNITS.get(dc.kind, p4info_pb2.CounterSpec.BOTH)
        c.direct_table_id = table_ids[tname]
    for name in sorted(meters, key=meter_ids.__getitem__):
        meter = meters[name]
        m = info.meters.add()
        preamble(m, name, meter_ids[name])
        m.spec.unit = _METER_UNITS.get(meter.kind, p4info_pb2.MeterSpec.BYTES)
        m.size = meter.size
    for name in sorted(direct_meters, key=dmeter_ids.__getitem__):
        tname, dm = direct_meters[name]
        m = info.direct_meters.add()
        preamble(m, name, dmeter_ids[name])
        m.spec.unit = _METER_UNITS.get(dm.kind, p4info_pb2.MeterSpec.BYTES)
        m.direct_table_id = table_ids[tname]
    for name in sorted(pipeline.registers, key=register_ids.__getitem__):
        register = pipeline.registers[name]
        r = info.registers.add()
        preamble(r, name, register_ids[name])
        r.type_spec.bitstring.bit.bitwidth = register.width
        r.size = register.size
    for name in sorted(profiles, key=lambda n: profile_ids[profile_names[n]]):
        prof = profiles[name]
        ap = info.action_profiles.add()
        preamble(ap, profile_names[name], profile_ids[profile_names[name]])
        ap.table_ids.extend(table_ids[t] for t in sorted(t.name for t in prof.tables))
        ap.with_selector = prof.is_selector
        ap.size = prof.size
    for name, _type_name, fields in cheaders:
        cpm = info.controller_packet_metadata.add()
        preamble(cpm, name, cheader_ids[name])
        cpm.preamble.annotations.append(f'@controller_header("{name}")')
        for i, (fname, width) in enumerate(fields, start=1):
            md = cpm.metadata.add()
            md.id, md.name, md.bitwidth = i, fname, width
    return info


def _summary(info: p4info_pb2.P4Info) -> dict[str, dict[int, tuple]]:
    """What the data plane depends on, by kind and id."""
    return {
        "table": {t.preamble.id: (t.preamble.name, tuple((m.id, m.name, m.bitwidth, m.match_type)
                                                          for m in t.match_fields),
                                  tuple(sorted((r.id, r.scope) for r in t.action_refs)), t.const_default_action_id,
                                  t.size, tuple(sorted(t.direct_resource_ids)), t.implementation_id)
                  for t in info.tables},
        "action": {a.preamble.id: (a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params))
                   for a in info.actions},
        "counter": {c.preamble.id: (c.preamble.name, c.size) for c in info.counters},
        "register": {r.preamble.id: (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
                     for r in info.registers},
        "direct counter": {c.preamble.id: (c.preamble.name, c.spec.unit, c.direct_table_id)
                           for c in info.direct_counters},
        "meter": {m.preamble.id: (m.preamble.name, m.spec.unit, m.size) for m in info.meters},
        "direct meter": {m.preamble.id: (m.preamble.name, m.spec.unit, m.direct_table_id)
                         for m in info.direct_meters},
        "action profile": {a.preamble.id: (a.preamble.name, a.with_selector, a.size, tuple(sorted(a.table_ids)))
                           for a in info.action_profiles},
        "controller header": {c.preamble.id: (c.preamble.name, tuple((m.id, m.name, m.bitwidth) for m in c.metadata))
                              for c in info.controller_packet_metadata},
    }


def p4info_mismatch(loaded: p4info_pb2.P4Info, given: p4info_pb2.P4Info) -> str | None:
    """None if ``given`` describes the same program as ``loaded``, else one line naming the
    first table, action, counter, register or meter that differs (or is missing on either
    side). A table's size counts: the switch runs the sizes it was built with, so a P4Info
    asking for others is refused rather than silently not honoured."""
    ours, theirs = _summary(loaded), _summary(given)
    for kind in ours:
        a, b = ours[kind], theirs[kind]
        for pid in sorted(set(a) | set(b)):
            if pid not in b:
                return f"{kind} {a[pid][0]} (id {pid}) of the loaded program is missing from the given P4Info"
            if pid not in a:
                return f"{kind} {b[pid][0]} (id {pid}) of the given P4Info is not in the loaded program"
            if a[pid] != b[pid]:
                if kind == "table" and a[pid][:4] + a[pid][5:] == b[pid][:4] + b[pid][5:]:
                    return (f"table {a[pid][0]} (id {pid}): size {b[pid][4]} in the given P4Info, but the loaded "
                            f"program's is {a[pid][4]}; the switch runs the program's sizes (change the size in "
                            "the P4 program, or push the P4Info p4c made for it)")
                return f"{kind} {a[pid][0]} (id {pid}) differs: loaded {a[pid][1:]}, given {b[pid][1:]}"
    return None
