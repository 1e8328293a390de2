"""The v1model architecture of the embedded switch: package, standard_metadata, externs.

:data:`V1MODEL` is what :class:`~.codegen.CodeGen` asks of an architecture (its extern
object types and extern functions); :func:`compile_v1model` assembles a ``V1Switch``'s
six blocks into two Python functions, ``_ingress`` (parser, verify checksum, ingress)
and ``_egress`` (egress, compute checksum, deparser), as bmv2's simple_switch runs them.
Semantics follow v1model.p4 as bmv2 implements it; ``docs/p4-subset.md`` lists them.

Another architecture is another module like this one: its package's blocks, its
intrinsic metadata, its externs; the core code generation stays in ``codegen.py``.
"""

from __future__ import annotations

import logging
import random as _random
from typing import Any

from . import ir
from .codegen import (
    STATE_NEW,
    Architecture,
    CodeGen,
    Compiled,
    Ctx,
    Leaf,
    Line,
    PacketRef,
    Scopes,
    StructRef,
    assemble,
    mask,
)
from .errors import P4FrontendError
from .externs import Counter, DirectCounter, DirectMeter, Meter, Register
from .optimize import def_use
from .tables import ActionProfile

__all__ = ["DROP_PORT", "SM_FIELDS", "V1MODEL", "Compiled", "compile_v1model"]

logger = logging.getLogger(__name__)

DROP_PORT = 511  #: v1model: egress_spec value that drops the packet (bmv2 default drop port)

#: standard_metadata fields that the runtime sets (v1model.p4 names).
SM_FIELDS = (
    "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
    "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp",
    "egress_global_timestamp", "mcast_grp", "egress_rid", "checksum_error", "parser_error",
    "priority",
)

#: V1Switch(p, vr, ig, eg, ck, dep): each block's role and what its parameters bind to.
_ROLES = (
    ("parser", ["packet_in", "H", "M", "S"]),
    ("verify", ["H", "M"]),
    ("ingress", ["H", "M", "S"]),
    ("egress", ["H", "M", "S"]),
    ("compute", ["H", "M"]),
    ("deparser", ["packet_out", "H"]),
)


# ----------------------------------------------------------------------- extern objects

class RegisterExtern:
    """``register<bit<W>>(N)`` with ``read(out, index)`` / ``write(index, value)``.

    bmv2: a read out of range gives 0, a write out of range is ignored.
    """

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> Register:
        if len(inst.type.args) != 1 or not isinstance(inst.type.args[0], ir.BitT):
            gen.fail(inst.loc, "unsupported register element type (need bit<W>)")
        reg = Register(fq, inst.type.args[0].width, gen.const_of(inst.args[0], [scope]))
        gen.objects.registers[fq] = reg
        return reg

    def call(self, gen: CodeGen, reg: Register, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        rv = gen.glob("R_" + reg.name, reg.values)
        if meth == "read":
            out = gen.out_target(e.args[0], scopes, e.loc)
            idx = gen.clean(gen.expr(e.args[1], scopes))
            iv = gen.fresh("i")
            gen.flush_pre()
            gen.emit(f"{iv} = {idx}")
            gen.emit(f"{out.var} = {rv}[{iv}] if {iv} < {reg.size} else 0")
        elif meth == "write":
            idx = gen.clean(gen.expr(e.args[0], scopes))
            val = gen.convert(gen.expr(e.args[1], scopes), ir.BitT(reg.width), e.loc)
            iv = gen.fresh("i")
            gen.flush_pre()
            gen.emit(f"{iv} = {idx}")
            gen.emit(f"if {iv} < {reg.size}: {rv}[{iv}] = {val}")
        else:
            gen.fail(e.loc, f"unsupported method call {meth}() on register {reg.name}")


class CounterExtern:
    """``counter(N, CounterType)`` with ``count(index)``: packets and bytes (frame length) per index.

    Another architecture's indexed counter with the same semantics subclasses it and names
    its counter-type enum (:attr:`kind_enum`).
    """

    #: The architecture's enum of counter kinds (members ``packets``/``bytes``/..., any case).
    kind_enum = "CounterType"

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> Counter:
        size = gen.const_of(inst.args[0], [scope])
        kind_v = gen.expr(inst.args[1], [scope]) if len(inst.args) > 1 else None
        enum_t = gen.prog.types.get(self.kind_enum)
        kind = (enum_t.members[kind_v.const].lower() if isinstance(enum_t, ir.EnumT) and kind_v
                and kind_v.const is not None else "packets")
        cnt = Counter(fq, size, kind)
        gen.objects.counters[fq] = cnt
        return cnt

    def call(self, gen: CodeGen, c: Counter, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        if meth != "count":
            gen.fail(e.loc, f"unsupported method call {meth}() on counter {c.name}")
        pv = gen.glob("CP_" + c.name, c.packets)
        bv = gen.glob("CB_" + c.name, c.bytes)
        idx = gen.clean(gen.expr(e.args[0], scopes))
        iv = gen.fresh("i")
        gen.flush_pre()
        gen.emit(f"{iv} = {idx}")
        gen.emit(f"if {iv} < {c.size}:")
        gen.emit(f"    {pv}[{iv}] += 1")
        gen.emit(f"    {bv}[{iv}] += {gen.plen()}")


def _meter_kind(gen: CodeGen, inst: ir.Instance, arg: int, scope: dict[str, Any]) -> str:
    v = gen.expr(inst.args[arg], [scope]) if len(inst.args) > arg else None
    enum_t = gen.prog.types.get("MeterType")
    if v is None or not isinstance(enum_t, ir.EnumT) or v.const is None:
        gen.fail(inst.loc, f"{inst.type.name} needs a MeterType")
    return enum_t.members[v.const]


class MeterExtern:
    """``meter(N, MeterType)`` with ``execute_meter(index, out colour)``: colours as bmv2 (externs.MeterCell)."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> Meter:
        m = Meter(fq, gen.const_of(inst.args[0], [scope]), _meter_kind(gen, inst, 1, scope))
        gen.objects.meters[fq] = m
        return m

    def call(self, gen: CodeGen, m: Meter, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        if meth != "execute_meter" or len(e.args) != 2:
            gen.fail(e.loc, f"unsupported method call {meth}() on meter {m.name} (execute_meter(index, out colour))")
        cells = gen.glob("MC_" + m.name, m.cells)
        idx = gen.clean(gen.expr(e.args[0], scopes))
        out = gen.out_target(e.args[1], scopes, e.loc)
        iv = gen.fresh("i")
        units = gen.plen() if m.kind == "bytes" else "1"
        gen.flush_pre()
        gen.emit(f"{iv} = {idx}")
        gen.emit(f"{out.var} = {cells}[{iv}].execute(_now, {units}) if {iv} < {m.size} else 0")

#: v1model HashAlgorithm members the embedded switch computes (externs.hash_value)
HASH_ALGORITHMS = ("crc32", "crc16", "csum16", "identity", "xor16")


class ActionProfileExtern:
    """``action_profile(N)``: a table's actions as N members the control plane creates
    (``implementation = ap;``); no methods."""

    #: the extern's name in the architecture (error messages)
    P4_NAME = "action_profile"

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> ActionProfile:
        if len(inst.args) != 1:
            gen.fail(inst.loc, f"{self.P4_NAME} takes 1 argument (size)")
        prof = ActionProfile(fq, gen.const_of(inst.args[0], [scope]))
        gen.objects.action_profiles[fq] = prof
        return prof

    def call(self, gen: CodeGen, prof: ActionProfile, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        gen.fail(e.loc, f"unsupported method call {meth}() on {prof.name} (an action profile has no methods)")


class ActionSelectorExtern(ActionProfileExtern):
    """``action_selector(HashAlgorithm, N, outputWidth)``: an action profile whose groups pick
    a member by the hash of the table's ``selector`` keys (tables.ActionProfile)."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> ActionProfile:
        if len(inst.args) != 3:
            gen.fail(inst.loc, "action_selector takes 3 arguments (algorithm, size, outputWidth)")
        algo = gen.expr(inst.args[0], [scope])
        enum_t = gen.prog.types.get("HashAlgorithm")
        aname = enum_t.members[algo.const] if isinstance(enum_t, ir.EnumT) and algo.const is not None else "?"
        if aname not in HASH_ALGORITHMS + ("random",):
            gen.fail(inst.loc, f"unsupported hash algorithm {aname}")
        prof = ActionProfile(fq, gen.const_of(inst.args[1], [scope]), aname)
        gen.objects.action_profiles[fq] = prof
        return prof


class DirectCounterExtern:
    """``direct_counter(CounterType)``: counts the hits of each entry of the table naming it in ``counters``."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> DirectCounter:
        return DirectCounter(fq, "packets_and_bytes")

    def call(self, gen: CodeGen, c: DirectCounter, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        if meth != "count":
            gen.fail(e.loc, f"unsupported method call {meth}() on direct_counter {c.name}")
        # count() is optional in v1model: the table counts every hit itself (bmv2)


class DirectMeterExtern:
    """``direct_meter<T>(MeterType)`` with ``read(out colour)`` in an action of its table."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> DirectMeter:
        return DirectMeter(fq, _meter_kind(gen, inst, 0, scope))

    def call(self, gen: CodeGen, m: DirectMeter, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        if meth != "read" or len(e.args) != 1:
            gen.fail(e.loc, f"unsupported method call {meth}() on direct_meter {m.name} (read(out colour))")
        col = gen.direct_colour.get(id(m))
        if col is None:
            gen.fail(e.loc, f"{m.name}.read() outside an action of the table that names it in meters")
        out = gen.out_target(e.args[0], scopes, e.loc)
        gen.emit(f"if {col} is not None: {out.var} = {col}")  # a miss leaves the target unchanged


# ----------------------------------------------------------------------- extern functions

def _sm(ctx: Ctx) -> StructRef:
    return ctx.meta["sm"]


def gen_mark_to_drop(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``mark_to_drop(standard_metadata)``: egress_spec = 511 and mcast_grp = 0 (bmv2)."""
    sm = _sm(ctx)
    gen.emit(f"{sm.members['egress_spec'].var} = {DROP_PORT}")
    gen.emit(f"{sm.members['mcast_grp'].var} = 0")


def gen_random(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``random(out result, lo, hi)``: uniform in [lo, hi] from the pipeline's seeded RNG."""
    out = gen.out_target(e.args[0], scopes, e.loc)
    lo, hi = gen.expr(e.args[1], scopes), gen.expr(e.args[2], scopes)
    w = out.type.width
    if lo.const == 0 and hi.const is not None and hi.const & (hi.const + 1) == 0 and hi.const:
        bits = hi.const.bit_length()
        draw = gen.method("rng", gen.ns["_rng"], "getrandbits") if gen.optimize else "_rng.getrandbits"
        code = f"{draw}({bits})"
        if bits > w:
            code = f"({code} & {hex(mask(w))})"
    else:
        code = f"(_rng.randint({gen.clean(lo)}, {gen.clean(hi)}) & {hex(mask(w))})"
    gen.flush_pre()
    gen.emit(f"{out.var} = {code}")


def _checksum(gen: CodeGen, name: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    if len(e.args) != 4:
        gen.fail(e.loc, f"{name} takes 4 arguments")
    algo = gen.expr(e.args[3], scopes)
    enum_t = gen.prog.types.get("HashAlgorithm")
    if not isinstance(enum_t, ir.EnumT) or algo.const is None or enum_t.members[algo.const] != "csum16":
        gen.fail(e.loc, f"unsupported {name} algorithm (only HashAlgorithm.csum16)")
    cond = gen.expr(e.args[0], scopes)
    if gen.optimize:  # the sum of the fields in 16-bit word positions (CodeGen.field_sum16), not the wide int
        data, width = gen.field_sum16(e.args[1], scopes)
    else:
        data, width = gen.field_list(e.args[1], scopes)
        pad = (-width) % 16
        if pad:
            data = f"(({data}) << {pad})"
    tgt = gen.out_target(e.args[2], scopes, e.loc)
    err = _sm(ctx).members["checksum_error"].var
    gen.flush_pre()
    gen.emit(f"if {cond.code}:")
    if gen.optimize:
        # csum inlined: S % 0xffff, 0xffff for a non-zero multiple (RFC 1071), ones' complement
        t = gen.fresh("c")
        gen.emit(f"    {t} = {data}")
        data = f"(0xffff - ({t} % 0xffff or (0xffff if {t} else 0)))"
    else:
        data = f"_csum({data})"
    if name == "verify_checksum":
        gen.emit(f"    if {data} != {tgt.var}:")
        gen.emit(f"        {err} = 1")
    else:
        gen.emit(f"    {tgt.var} = {data}")


def gen_verify_checksum(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``verify_checksum(cond, data, checksum, csum16)``: checksum_error = 1 on a mismatch."""
    _checksum(gen, "verify_checksum", e, scopes, ctx)


def gen_update_checksum(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``update_checksum(cond, data, checksum, csum16)``: checksum = RFC 1071 sum of data."""
    _checksum(gen, "update_checksum", e, scopes, ctx)




def gen_hash(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``hash(out result, algo, base, data, max)``: base + (h mod max) (bmv2; max 0 = no modulo)."""
    if len(e.args) != 5:
        gen.fail(e.loc, "hash takes 5 arguments")
    out = gen.out_target(e.args[0], scopes, e.loc)
    algo = gen.expr(e.args[1], scopes)
    enum_t = gen.prog.types.get("HashAlgorithm")
    aname = enum_t.members[algo.const] if isinstance(enum_t, ir.EnumT) and algo.const is not None else "?"
    if aname not in HASH_ALGORITHMS:
        gen.fail(e.loc, f"unsupported hash algorithm {aname}")
    base = gen.clean(gen.expr(e.args[2], scopes))
    data, width = gen.field_list(e.args[3], scopes)
    mx = gen.clean(gen.expr(e.args[4], scopes))
    h = gen.fresh("h")
    m = gen.fresh("m")
    gen.flush_pre()
    gen.emit(f"{h} = _hash({aname!r}, {data}, {width})")
    gen.emit(f"{m} = {mx}")
    gen.emit(f"{out.var} = ({base} + ({h} % {m} if {m} else {h})) & {hex(mask(out.type.width))}")


def _list_index(gen: CodeGen, e: ir.Call, arg: int, scopes: Scopes) -> int:
    if len(e.args) <= arg:
        return 0
    n = gen.const_of(e.args[arg], scopes)
    if n not in gen.prog.field_lists and n != 0:
        gen.fail(e.loc, f"no metadata field has @field_list({n})")
    return n


def gen_clone(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``clone(type, session)`` / ``clone_preserving_field_list(type, session, index)``.

    bmv2: I2E (from ingress) copies the packet as received, parsed again, to the session's
    port; E2E (from egress) copies it as it leaves egress (headers kept, metadata reset but
    for the field list); a later call replaces an earlier one.
    """
    if len(e.args) not in (2, 3):
        gen.fail(e.loc, f"{desc(e)} takes 2 or 3 arguments")
    kind = gen.expr(e.args[0], scopes)
    enum_t = gen.prog.types.get("CloneType")
    name = enum_t.members[kind.const] if isinstance(enum_t, ir.EnumT) and kind.const is not None else "?"
    role = ctx.meta.get("role")
    if (name, role) not in (("I2E", "ingress"), ("E2E", "egress")):
        gen.fail(e.loc, f"clone with CloneType.{name} is not allowed in {role or ctx.block}")
    session = gen.clean(gen.expr(e.args[1], scopes))
    n = _list_index(gen, e, 2, scopes)
    ctx.meta["ops"].add("clone")
    gen.flush_pre()
    gen.emit(f"_clone = ({session}, {n})")


def gen_resubmit(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``resubmit_preserving_field_list(index)`` (ingress): the packet as received enters ingress again."""
    if ctx.meta.get("role") != "ingress":
        gen.fail(e.loc, "resubmit is only allowed in ingress")
    n = _list_index(gen, e, 0, scopes)
    ctx.meta["ops"].add("resubmit")
    gen.emit(f"_resub = {n}")


def gen_recirculate(gen: CodeGen, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
    """``recirculate_preserving_field_list(index)`` (egress): the deparsed packet enters ingress again."""
    if ctx.meta.get("role") != "egress":
        gen.fail(e.loc, "recirculate is only allowed in egress")
    n = _list_index(gen, e, 0, scopes)
    ctx.meta["ops"].add("recirculate")
    gen.emit(f"_recirc = {n}")


def desc(e: ir.Call) -> str:
    """``name()`` of the called function, for messages."""
    return f"{e.func.name}()" if isinstance(e.func, ir.Name) else "call"


def _drop_effect(w: Any, e: ir.Call, scopes: Scopes) -> None:
    """``mark_to_drop(sm)`` writes ``egress_spec`` and ``mcast_grp`` (gen_mark_to_drop), nothing else."""
    for sm in w.path(e.args[0], scopes) if e.args else []:
        if isinstance(sm, StructRef):
            for f in ("egress_spec", "mcast_grp"):
                if f in sm.members:
                    w.write(sm.members[f])


def _update_checksum_effect(w: Any, e: ir.Call, scopes: Scopes) -> None:
    """``update_checksum(cond, data, checksum, algo)`` reads the condition and the data and only
    writes the checksum (its ``inout`` is not read: gen_update_checksum)."""
    for a in e.args[:2]:
        w.expr(a, scopes)
    if len(e.args) > 2:
        w.write_path(e.args[2], scopes)


#: The v1model architecture: extern types and functions by P4 name.
V1MODEL = Architecture(
    externs={"register": RegisterExtern(), "counter": CounterExtern(), "meter": MeterExtern(),
             "direct_counter": DirectCounterExtern(), "direct_meter": DirectMeterExtern(),
             "action_profile": ActionProfileExtern(), "action_selector": ActionSelectorExtern()},
    functions={"mark_to_drop": gen_mark_to_drop, "random": gen_random, "hash": gen_hash,
               "verify_checksum": gen_verify_checksum, "update_checksum": gen_update_checksum,
               "clone": gen_clone, "clone_preserving_field_list": gen_clone,
               "resubmit_preserving_field_list": gen_resubmit,
               "recirculate_preserving_field_list": gen_recirculate},
    effects={"mark_to_drop": _drop_effect, "update_checksum": _update_checksum_effect},
)


# ----------------------------------------------------------------------- assembly

def _blocks(prog: ir.Program) -> list[Any]:
    main = prog.main
    if main is None or main.type.name != "V1Switch" or len(main.args) != 6:
        raise P4FrontendError(prog.source, 0, "unsupported package (need V1Switch with 6 blocks)")
    blocks: list[Any] = []
    for i, a in enumerate(main.args):
        if not isinstance(a, ir.Ctor) or not isinstance(a.type, ir.NamedT):
            raise P4FrontendError(main.loc[0], main.loc[1], "V1Switch arguments must be MyBlock()")
        name = a.type.name
        decl = prog.parsers.get(name) if i == 0 else prog.controls.get(name)
        if decl is None:
            raise P4FrontendError(a.loc[0], a.loc[1], f"unknown {'parser' if i == 0 else 'control'} {name}")
        blocks.append(decl)
    return blocks


def _leaves(b: Any) -> list[str]:
    """Every scalar var of a struct binding (recursively), headers excluded."""
    if isinstance(b, Leaf):
        return [b.var]
    if isinstance(b, StructRef):
        return [v for m in b.members.values() for v in _leaves(m)]
    return []


def _field_list_vars(prog: ir.Program, meta: StructRef) -> dict[int, list[str]]:
    """``@field_list(n)`` -> the vars of those user-metadata members (nested structs searched)."""
    found: dict[tuple[str, str], str] = {}

    def walk(ref: StructRef) -> None:
        for name, m in ref.members.items():
            if isinstance(m, Leaf):
                found[(ref.type.name, name)] = m.var
            elif isinstance(m, StructRef):
                walk(m)

    walk(meta)
    return {n: [found[k] for k in members if k in found] for n, members in prog.field_lists.items()}


def compile_v1model(prog: ir.Program, *, optimize_code: bool, rng: _random.Random,
                    stats: dict[str, int]) -> Compiled:
    """Compile a ``V1Switch`` program.

    ``_ingress(pkt, port, now_us, itype=0, pres=None, parse_only=False)`` returns None
    (dropped) or ``(egress_spec, mcast_grp, packet_length, state)``, plus a fifth item
    ``(clone, resubmit, preserved)`` when the program called clone/resubmit; ``itype`` is
    the instance_type, ``pres`` a dict of preserved metadata vars, ``parse_only`` stops
    after verify checksum (an I2E clone is parsed again, as bmv2 does).
    ``_egress(state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us,
    enq_timestamp_us, now_us, rid=0, itype=0)`` returns the frame or None (dropped), or
    ``(frame or None, clone, recirculate)`` when the program uses E2E clone or recirculate.
    ``rng`` serves ``random``; ``stats["parser_errors"]`` is incremented per parser error.
    Raises :class:`P4FrontendError` (FILE:LINE) for what the runtime does not support.
    """
    blocks = _blocks(prog)
    c = CodeGen(prog, V1MODEL, optimize=optimize_code)
    parser = blocks[0]
    if len(parser.params) != 4:
        raise P4FrontendError(parser.loc[0], parser.loc[1],
                              f"{parser.name} has {len(parser.params)} parameters, v1model expects 4")
    htype, mtype = parser.params[1].type, parser.params[2].type
    stype = prog.types.get("standard_metadata_t")
    for t, what in ((htype, "headers"), (mtype, "metadata"), (stype, "standard_metadata_t")):
        if not isinstance(t, ir.StructT):
            raise P4FrontendError(parser.loc[0], parser.loc[1], f"{what} type must be a struct")
    H = c.alloc_struct(htype, "hdr")
    M = c.alloc_struct(mtype, "meta")
    S = c.alloc_struct(stype, "sm")
    for f in SM_FIELDS:
        if f not in S.members:
            raise P4FrontendError(parser.loc[0], parser.loc[1], f"standard_metadata_t lacks {f}")
    roots = {"H": H, "M": M, "S": S, "packet_in": PacketRef("packet_in"), "packet_out": PacketRef("packet_out")}
    ops_in: set[str] = set()
    ops_eg: set[str] = set()
    ctxs = []
    for i, decl in enumerate(blocks):
        kind, roles = _ROLES[i]
        if len(decl.params) != len(roles):
            raise P4FrontendError(decl.loc[0], decl.loc[1],
                                  f"{decl.name} has {len(decl.params)} parameters, v1model expects {len(roles)}")
        scope = {p.name: roots[r] for p, r in zip(decl.params, roles, strict=True)}
        meta = {"sm": S, "role": kind, "ops": ops_eg if i >= 3 else ops_in}
        ctxs.append(Ctx("parser" if i == 0 else "control", decl.name, [scope], meta))
    all_slots = [v for v, _ in c.slots]
    c.ns["_rng"] = rng
    c.ns["_STATS"] = stats
    sm: dict[str, Leaf] = S.members
    lists = _field_list_vars(prog, M)
    pres_vars = sorted({v for vs in lists.values() for v in vs})
    meta_vars, sm_vars = set(_leaves(M)), set(_leaves(S))
    espec, mgrp = sm["egress_spec"].var, sm["mcast_grp"].var
    pres_dict = "{" + ", ".join(f"{v!r}: {v}" for v in pres_vars) + "}"
    if optimize_code:
        # def-use of the packet state on the IR, before anything is emitted (optimize.py); v1model's
        # own code reads egress_spec and mcast_grp after ingress, egress_spec in egress, and the
        # preserved field lists at the start of ingress
        halves = ["ingress"] * 3 + ["egress"] * 3
        c.du = def_use(prog, [(decl, ctx.scopes[0], h) for decl, ctx, h in zip(blocks, ctxs, halves, strict=True)],
                       V1MODEL.effects, {"ingress": {espec, mgrp, *pres_vars}, "egress": {espec}})

    def restore() -> None:  # preserved metadata of a resubmitted/recirculated/cloned packet
        if pres_vars:
            c.emit("if _pres is not None:")
            for v in pres_vars:
                c.emit(f"    {v} = _pres.get({v!r}, {v})")

    # ---- ingress body (parser, verify checksum, ingress control)
    c.lines = []
    c.ind = 1
    restore()
    c.emit("_pos = 0")
    c.emit("_perr = 0")
    c.gen_parser(parser, ctxs[0])
    c.emit(f"{sm['parser_error'].var} = _perr")
    c.emit("if _perr: _STATS['parser_errors'] += 1")
    c.gen_control(blocks[1], ctxs[1])
    parse_only_at = len(c.lines)
    c.gen_control(blocks[2], ctxs[2])
    state_in = None  # filled in below, once the live state is known
    ret_ops = Line(1, "")
    c.lines.append(ret_ops)
    c.emit(f"if {espec} == {DROP_PORT} and not {mgrp}: return None")
    ingress_body = c.lines

    # ---- egress body (egress control, compute checksum, deparser)
    c.lines = []
    c.ind = 1
    c.plen_used = False
    c.gen_control(blocks[3], ctxs[3])
    e2e_line = Line(1, "")
    c.lines.append(e2e_line)
    c.emit(f"if {espec} == {DROP_PORT}: return {'(None, _cl, None)' if ops_eg else 'None'}")
    c.gen_control(blocks[4], ctxs[4])
    c.gen_deparser(blocks[5], ctxs[5])
    if ops_eg:
        c.emit("if _recirc is not None:")
        c.emit(f"    return (None, _cl, (_deparsed, _recirc, {pres_dict}))")
        c.emit("return (_deparsed, _cl, None)")
    else:
        c.emit("return _deparsed")
    egress_body = c.lines

    # standard_metadata set from the arguments: (var, code)
    ingress_setup = [(sm["ingress_port"].var, "_port & 0x1ff"), (sm["packet_length"].var, "_n"),
                     (sm["ingress_global_timestamp"].var, "_now & 0xffffffffffff"),
                     (sm["instance_type"].var, "_itype")]
    egress_setup = [(sm["egress_port"].var, "_eport & 0x1ff"), (sm["enq_qdepth"].var, "_enq_qdepth & 0x7ffff"),
                    (sm["deq_qdepth"].var, "_deq_qdepth & 0x7ffff"),
                    (sm["deq_timedelta"].var, "_deq_td & 0xffffffff"),
                    (sm["enq_timestamp"].var, "_enq_ts & 0xffffffff"),
                    (sm["egress_global_timestamp"].var, "_now & 0xffffffffffff"),
                    (sm["egress_rid"].var, "_rid"), (sm["instance_type"].var, "_itype"),
                    (espec, "0")]  # bmv2 sets egress_spec to drop_port + 1 (512, 0 in 9 bits) before egress
    inits = dict(c.slots)
    egress_plen = c.plen_used
    if optimize_code:
        # egress receives only the state it reads (its setup assigns some first: no need to pass
        # those); ingress initialises only what it reads or passes
        load_eg = set(c.du.reads_in("egress")) | {c.raw[v] for v in c.du.raw_reads["egress"]}
        if egress_plen:
            load_eg.add(sm["packet_length"].var)
        egress_setup = [(v, code) for v, code in egress_setup if v in load_eg]
        set_first = {v for v, _code in egress_setup}
        passed = [v for v in all_slots + list(c.raw.values()) if v in load_eg and v not in set_first]
        live_in = c.du.reads_in("ingress") | set(passed) | {espec, mgrp}
        ingress_setup = [(v, code) for v, code in ingress_setup if v in live_in]
        init_vars = [v for v in all_slots + list(c.raw.values()) if v in live_in]
        inits.update((v, 0) for v in c.raw.values())  # (offsets in _pkt)
    else:
        passed = all_slots
        init_vars = all_slots
    state_vars = ["_pkt", "_pos", *passed]
    state_in = ", ".join(state_vars)
    state_new = f"{STATE_NEW}({state_in})"  # the typed state (codegen.STATE) of the compiled build
    if ops_in:
        ret_ops.text = (f"if _clone is not None or _resub is not None: "
                        f"return ({espec}, {mgrp}, _plen, ({state_in},), (_clone, _resub, {pres_dict}))")
        ret_ops.typed = ret_ops.text.replace(f"({state_in},)", state_new)
    if "clone" in ops_in:
        # an I2E clone is the received packet parsed again, with the field list's metadata
        ln = Line(1, "if _parse_only:")
        body = [Line(2, f"{v} = _pres.get({v!r}, {v})") for v in pres_vars] if pres_vars else []
        body.append(Line(2, f"return (0, 0, _plen, ({state_in},))", f"return (0, 0, _plen, {state_new})"))
        ingress_body[parse_only_at:parse_only_at] = [ln, Line(2, "if _pres is None: _pres = {}"), *body]
    if ops_eg:
        # E2E clone: the packet as egress leaves it, metadata reset but for the field list
        keep = set(pres_vars)
        items = ["_pkt", "_pos"]
        for v in passed:
            if (v in meta_vars or v in sm_vars) and v not in keep:
                items.append("False" if isinstance(inits.get(v), bool) else "0")
            else:
                items.append(v)
        e2e_line.text = (f"_cl = None if _clone is None else (_clone[0], _clone[1], ({', '.join(items)},))"
                         if "clone" in ops_eg else "_cl = None")
        e2e_line.typed = e2e_line.text.replace(f"({', '.join(items)},)", f"{STATE_NEW}({', '.join(items)})")

    head = [Line(0, "def _ingress(_pkt, _port, _now, _itype=0, _pres=None, _parse_only=False):")]
    head += [Line(1, f"{v} = {inits[v]!r}") for v in init_vars]
    head.append(Line(1, "_n = _plen = len(_pkt)"))
    if ops_in:
        head.append(Line(1, "_clone = _resub = None"))
    head += [Line(1, f"{v} = {code}") for v, code in ingress_setup]
    tail = [Line(1, f"return ({espec}, {mgrp}, _plen, ({state_in},))", f"return ({espec}, {mgrp}, _plen, {state_new})")]

    ehead = [Line(0, "def _egress(_st, _eport, _enq_qdepth, _deq_qdepth, _deq_td, _enq_ts, _now, _rid=0, _itype=0):"),
             Line(1, f"{state_in}, = _st", "\n".join(f"{v} = _st.{v}" for v in state_vars))]
    if ops_eg:
        ehead.append(Line(1, "_clone = _recirc = None"))
    if not optimize_code or egress_plen:
        ehead.append(Line(1, f"_plen = {sm['packet_length'].var}"))
    ehead += [Line(1, f"{v} = {code}") for v, code in egress_setup]
    return assemble(c, head + ingress_body + tail, ehead + egress_body, "v1model", lists, state_vars)
