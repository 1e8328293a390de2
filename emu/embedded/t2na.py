"""The Tofino2 Native Architecture (T2NA) of the embedded switch: the subset that
``p4/tofino/symphony.p4`` uses.

:func:`compile_t2na` compiles a ``Switch(Pipeline(...)) main`` program (declarations in
``p4include/t2na.p4``) into the same two per-packet functions that ``runtime.Pipeline``
calls for v1model, so the switch core, the traffic manager, the STF runner and the
control plane work unchanged:

- ``_ingress(frame, port, now_us)``: the ingress buffer's prefix (the
  ``ingress_intrinsic_metadata_t`` header, then ``PORT_METADATA_SIZE`` bits of port
  metadata, zero) is put before the frame; ingress parser, ingress control, ingress
  deparser. Returns None when ``ig_intr_md_for_dprsr.drop_ctl`` bit 0 is set, else
  ``(ucast_egress_port, 0, frame length, (deparsed bytes,))``: only what the deparser
  emitted reaches egress (user metadata travels in a bridged header, as on Tofino).
- ``_egress(state, port, enq_qdepth, deq_qdepth, deq_td_us, enq_ts_us, now_us)``: the
  traffic manager's ``egress_intrinsic_metadata_t`` header before the bytes from
  ingress; egress parser, egress control, egress deparser; None when
  ``eg_intr_md_for_dprsr.drop_ctl`` bit 0 is set. Queue depths arrive in buffer cells
  (:data:`CELL_BYTES`), times become nanoseconds.

A parser error does not drop the packet here: the ingress control sees it in
``ig_intr_md_from_prsr.parser_err`` (NoMatch -> PARSER_ERROR_NO_MATCH, PacketTooShort ->
PARSER_ERROR_PARTIAL_HDR) and decides, as the program's explicit checks expect.

Externs (semantics from the public TNA documentation): ``Register<T, I>`` (T is bit<W>
or a struct of bit fields, kept packed in declaration order, first field in the high
bits), ``RegisterAction<T, I, U>`` whose ``apply(inout value, out rv)`` body runs as one
read-modify-write at ``execute(index)``, ``Random<W>.get()`` (the pipeline's seeded RNG:
``getrandbits(W)``, the same draws as v1model's ``random(r, 0, 2^W - 1)``),
``Hash<W>.get(data)`` (IDENTITY, CRC16, CRC32), ``Checksum`` (``add``/``verify`` in a
parser, ``update`` in a deparser; ones' complement, RFC 1071) and ``Counter<W, I>``.
"""

from __future__ import annotations

import logging
import random as _random
import zlib
from dataclasses import dataclass
from typing import Any

from emu.p4build import T2NA_CELL_BYTES

from . import ir
from .codegen import (
    Architecture,
    CodeGen,
    Compiled,
    Ctx,
    ExternRef,
    HdrRef,
    Leaf,
    Line,
    PacketRef,
    Scopes,
    StructRef,
    V,
    assemble,
    mask,
)
from .errors import P4FrontendError
from .externs import Register, crc16
from .optimize import def_use
from .tables import ActionProfile
from .v1model import ActionProfileExtern as V1ActionProfileExtern
from .v1model import CounterExtern as V1CounterExtern

__all__ = ["CELL_BYTES", "T2NA", "compile_t2na", "qdepth_cells"]

logger = logging.getLogger(__name__)

#: Bytes per buffer cell of the Tofino2 traffic manager: the unit of enq_qdepth/deq_qdepth
#: (the tofino build's emu.p4build.P4Build.cell_bytes).
CELL_BYTES = T2NA_CELL_BYTES


def qdepth_cells(item: Any) -> int:
    """Buffer cells a queued packet occupies: ceil(frame bytes / :data:`CELL_BYTES`), at least 1.

    ``item`` is the ingress result the traffic manager queues (``packet_length`` bytes).
    """
    n = int(getattr(item, "packet_length", 0))
    return max(1, -(-n // CELL_BYTES))


# ----------------------------------------------------------------------- extern objects

def _bits_of(gen: CodeGen, t: Any, loc: ir.Loc) -> tuple[int, list[tuple[str, int]] | None]:
    """Width of a register element type and, for a struct, its (field, width) list."""
    if isinstance(t, ir.BitT):
        return t.width, None
    if isinstance(t, ir.StructT) and t.fields and all(isinstance(ft, ir.BitT) for _n, ft in t.fields):
        fields = [(n, ft.width) for n, ft in t.fields]  # type: ignore[union-attr]
        return sum(w for _n, w in fields), fields
    gen.fail(loc, "unsupported register element type (need bit<W> or a struct of bit<W> fields)")
    raise AssertionError  # pragma: no cover


@dataclass
class _RegisterObj:
    reg: Register
    fields: list[tuple[str, int]] | None
    elem: Any


class RegisterExtern:
    """``Register<T, I>(size[, initial_value])``: the state of a stateful ALU's memory."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> _RegisterObj:
        if len(inst.type.args) != 2:
            gen.fail(inst.loc, "Register needs <T, I> type arguments")
        width, fields = _bits_of(gen, inst.type.args[0], inst.loc)
        reg = Register(fq, width, gen.const_of(inst.args[0], [scope]))
        if len(inst.args) > 1:
            init = gen.const_of(inst.args[1], [scope]) & mask(width)
            reg.values[:] = [init] * reg.size
        gen.objects.registers[fq] = reg
        return _RegisterObj(reg, fields, inst.type.args[0])

    def call(self, gen: CodeGen, obj: _RegisterObj, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        gen.fail(e.loc, f"unsupported Register.{meth}() in the data plane (use a RegisterAction)")


@dataclass
class _RegisterActionObj:
    name: str
    reg: _RegisterObj
    apply: ir.Method
    rv_type: Any


class RegisterActionExtern:
    """``RegisterAction<T, I, U>(reg) name = { void apply(inout T value, out U rv) {...} };``.

    ``execute(index)`` reads the cell (0 out of range), runs ``apply`` on a copy, writes the
    copy back (ignored out of range) and returns ``rv`` (0 when apply does not set it).
    """

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> _RegisterActionObj:
        if len(inst.type.args) != 3 or len(inst.args) != 1 or not isinstance(inst.args[0], ir.Name):
            gen.fail(inst.loc, "RegisterAction needs <T, I, U> and one Register argument")
        target = scope.get(inst.args[0].name)  # type: ignore[union-attr]
        if not isinstance(target, ExternRef) or not isinstance(target.obj, _RegisterObj):
            gen.fail(inst.loc, f"{inst.args[0].name} is not a Register of this control")  # type: ignore[union-attr]
        apply = inst.methods.get("apply")
        if apply is None:
            gen.fail(inst.loc, f"RegisterAction {inst.name} does not implement apply")
        params = apply.params  # type: ignore[union-attr]
        if not 1 <= len(params) <= 2 or params[0].direction != "inout" or (
                len(params) == 2 and params[1].direction != "out"):
            gen.fail(apply.loc, "apply must be (inout T value[, out U rv])")  # type: ignore[union-attr]
        if params[0].type != target.obj.elem:  # type: ignore[union-attr]
            gen.fail(apply.loc, "apply's value parameter must have the Register's element type")  # type: ignore[union-attr]
        return _RegisterActionObj(fq, target.obj, apply, inst.type.args[2])  # type: ignore[union-attr, arg-type]

    def call(self, gen: CodeGen, obj: _RegisterActionObj, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        self.call_expr(gen, obj, meth, e, scopes)
        gen.flush_pre()

    def call_expr(self, gen: CodeGen, obj: _RegisterActionObj, meth: str, e: ir.Call, scopes: Scopes) -> V:
        if meth != "execute" or len(e.args) != 1:
            gen.fail(e.loc, f"unsupported RegisterAction.{meth}() (use execute(index))")
        rv_t = obj.rv_type
        if not isinstance(rv_t, ir.BitT):
            gen.fail(e.loc, "RegisterAction return type must be bit<W>")
        reg = obj.reg.reg
        rvar = gen.glob("R_" + reg.name, reg.values)
        out = gen.fresh("rv")
        idx = gen.clean(gen.expr(e.args[0], scopes))
        apply = obj.apply

        def body() -> None:
            iv, cell = gen.fresh("i"), gen.fresh("cell")
            gen.emit(f"{iv} = {idx}")
            gen.emit(f"{cell} = {rvar}[{iv}] if {iv} < {reg.size} else 0")
            pscope: dict[str, Any] = {}
            vparam = apply.params[0]
            if obj.reg.fields is None:
                pscope[vparam.name] = Leaf(cell, vparam.type)
                pack = cell
            else:
                members, shift, parts = {}, reg.width, []
                for fname, w in obj.reg.fields:
                    shift -= w
                    var = gen.fresh(f"{vparam.name}.{fname}")
                    gen.emit(f"{var} = ({cell} >> {shift}) & {hex(mask(w))}" if shift else f"{var} = {cell} & {hex(mask(w))}")
                    members[fname] = Leaf(var, ir.BitT(w))
                    parts.append(f"({var} << {shift})" if shift else var)
                pscope[vparam.name] = StructRef(members, vparam.type, vparam.name)  # type: ignore[arg-type]
                pack = " | ".join(parts)
            gen.emit(f"{out} = 0")
            if len(apply.params) == 2:
                pscope[apply.params[1].name] = Leaf(out, apply.params[1].type)
            ctx = Ctx("control", obj.name, scopes + [pscope])
            gen.block(apply.body.stmts, scopes + [pscope], ctx)
            gen.emit(f"if {iv} < {reg.size}: {rvar}[{iv}] = {pack}")

        gen.pre_lines(body)
        return V(out, rv_t)


class RandomExtern:
    """``Random<W>()`` with ``get()``: uniform 0 .. 2^W - 1 from the pipeline's seeded RNG."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> int:
        if len(inst.type.args) != 1 or not isinstance(inst.type.args[0], ir.BitT):
            gen.fail(inst.loc, "Random needs a bit<W> type argument")
        return inst.type.args[0].width  # type: ignore[union-attr]

    def call(self, gen: CodeGen, width: int, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        gen.fail(e.loc, "Random.get() returns a value: assign it")

    def call_expr(self, gen: CodeGen, width: int, meth: str, e: ir.Call, scopes: Scopes) -> V:
        if meth != "get" or e.args:
            gen.fail(e.loc, f"unsupported Random.{meth}()")
        out = gen.fresh("rnd")
        gen.pre_lines(lambda: gen.emit(f"{out} = _rng.getrandbits({width})"))
        return V(out, ir.BitT(width))


def _crc16(x: int, nbytes: int) -> int:
    return crc16(x.to_bytes(nbytes, "big"))


def _crc32(x: int, nbytes: int) -> int:
    return zlib.crc32(x.to_bytes(nbytes, "big"))


def hash_get(algo: str, width: int, x: int, bits: int) -> int:
    """What ``Hash<bit<width>>(HashAlgorithm_t.algo).get(data)`` returns for the ``bits``-bit
    data ``x``: IDENTITY its low ``width`` bits, CRC16/CRC32 of it left-aligned in whole bytes,
    to ``width`` bits (the code :class:`HashExtern` generates computes the same)."""
    if algo == "IDENTITY":
        return x & mask(width)
    nbytes = (bits + 7) // 8
    data = x << (nbytes * 8 - bits)
    return (_crc16(data, nbytes) if algo == "CRC16" else _crc32(data, nbytes)) & mask(width)


class HashExtern:
    """``Hash<W>(HashAlgorithm_t.X)`` with ``get(data)``: IDENTITY (the data's low W bits),
    CRC16 (CRC-16/ARC) or CRC32 (zlib) of the data left-aligned in whole bytes, to W bits."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> tuple[int, str]:
        if len(inst.type.args) != 1 or not isinstance(inst.type.args[0], ir.BitT) or len(inst.args) != 1:
            gen.fail(inst.loc, "Hash needs <bit<W>> and an algorithm")
        algo = gen.expr(inst.args[0], [scope])
        enum_t = gen.prog.types.get("HashAlgorithm_t")
        name = enum_t.members[algo.const] if isinstance(enum_t, ir.EnumT) and algo.const is not None else "?"
        if name not in ("IDENTITY", "CRC16", "CRC32"):
            gen.fail(inst.loc, f"unsupported hash algorithm {name}")
        return inst.type.args[0].width, name  # type: ignore[union-attr]

    def call(self, gen: CodeGen, obj: tuple[int, str], meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        gen.fail(e.loc, "Hash.get() returns a value: assign it")

    def call_expr(self, gen: CodeGen, obj: tuple[int, str], meth: str, e: ir.Call, scopes: Scopes) -> V:
        width, algo = obj
        if meth != "get" or len(e.args) != 1:
            gen.fail(e.loc, f"unsupported Hash.{meth}() (use get(data))")
        data, bits = gen.field_list(e.args[0], scopes)
        out = gen.fresh("h")
        if algo == "IDENTITY":
            code = f"({data}) & {hex(mask(width))}"
        else:
            nbytes = (bits + 7) // 8
            shifted = f"(({data}) << {nbytes * 8 - bits})" if nbytes * 8 != bits else f"({data})"
            fn = gen.glob("_crc16" if algo == "CRC16" else "_crc32", _crc16 if algo == "CRC16" else _crc32)
            code = f"{fn}({shifted}, {nbytes}) & {hex(mask(width))}"
        gen.pre_lines(lambda: gen.emit(f"{out} = {code}"))
        return V(out, ir.BitT(width))


class ChecksumExtern:
    """``Checksum()``: ``add(data)`` accumulates the ones' complement sum of 16-bit words,
    ``verify()`` is true when the sum is not 0xffff (the checksum is wrong), ``update(data)``
    returns the RFC 1071 checksum of ``data``. Data must be whole 16-bit words."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> str:
        acc = gen.fresh("csum_acc")
        gen.emit(f"{acc} = 0")
        return acc

    def _data(self, gen: CodeGen, e: ir.Call, scopes: Scopes) -> str:
        if len(e.args) != 1:
            gen.fail(e.loc, "Checksum method takes one argument")
        data, bits = gen.field_list(e.args[0], scopes)
        if bits % 16:
            gen.fail(e.loc, f"unsupported checksum data of {bits} bits (need whole 16-bit words)")
        return data

    def call(self, gen: CodeGen, acc: str, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        if meth not in ("add", "subtract"):
            gen.fail(e.loc, f"unsupported Checksum.{meth}() as a statement")
        data = self._data(gen, e, scopes)
        gen.flush_pre()
        sign = "+" if meth == "add" else "-"
        gen.emit(f"{acc} = {acc} {sign} (({data}) % 0xffff or (0xffff if ({data}) else 0))")

    def call_expr(self, gen: CodeGen, acc: str, meth: str, e: ir.Call, scopes: Scopes) -> V:
        out = gen.fresh("csum")
        if meth == "verify":
            gen.pre_lines(lambda: gen.emit(f"{out} = not ({acc} and {acc} % 0xffff == 0)"))
            return V(out, ir.BoolT())
        if meth == "get":
            gen.pre_lines(lambda: gen.emit(f"{out} = 0xffff - ({acc} % 0xffff or (0xffff if {acc} else 0))"))
            return V(out, ir.BitT(16))
        if meth == "update":
            data = self._data(gen, e, scopes)
            gen.pre_lines(lambda: gen.emit(f"{out} = _csum({data})"))
            return V(out, ir.BitT(16))
        gen.fail(e.loc, f"unsupported Checksum.{meth}()")
        raise AssertionError  # pragma: no cover


class CounterExtern(V1CounterExtern):
    """``Counter<W, I>(size, CounterType_t.X)`` with ``count(index)``: packets and bytes per
    index, as v1model's ``counter`` (TNA names its kinds ``PACKETS``/``BYTES``/...)."""

    kind_enum = "CounterType_t"


class ActionProfileExtern(V1ActionProfileExtern):
    """``ActionProfile(size)``: members the control plane creates for the tables whose
    ``implementation`` it is, or for an ActionSelector built on it (tables.ActionProfile);
    v1model's action_profile under TNA's name."""

    P4_NAME = "ActionProfile"


class ActionSelectorExtern(ActionProfileExtern):
    """``ActionSelector(ActionProfile ap, Hash<W> hash, SelectorMode_t mode, max_group_size,
    num_groups)`` (or the deprecated ``ActionSelector(size, hash, mode)``, which makes its own
    profile): groups of ``ap``'s members; a packet runs the member ``hash.get(selector keys) %
    group size`` of its entry's group, members in ascending id order (:func:`hash_get`).

    The selector and its profile are one object (members and groups through either name, as
    bfrt splits them between the profile's and the selector's tables). ``max_group_size`` and
    ``num_groups`` bound the groups. The hardware's member layout in its selector RAM words,
    FAIR vs RESILIENT, is not modelled (docs/tofino.md).
    """

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> ActionProfile:
        if len(inst.args) not in (3, 5):
            gen.fail(inst.loc, "ActionSelector takes (ActionProfile, Hash, SelectorMode_t, max_group_size, "
                               "num_groups) or (size, Hash, SelectorMode_t)")
        new_form = len(inst.args) == 5
        if new_form:
            ref = scope.get(inst.args[0].name) if isinstance(inst.args[0], ir.Name) else None
            if not isinstance(ref, ExternRef) or not isinstance(ref.obj, ActionProfile) or ref.obj.is_selector:
                gen.fail(inst.loc, f"ActionSelector {inst.name}: its first argument must be an ActionProfile "
                                   "declared before it (and not another selector's)")
            prof = ref.obj
        else:
            prof = ActionProfile(fq, gen.const_of(inst.args[0], [scope]))
        h = scope.get(inst.args[1].name) if isinstance(inst.args[1], ir.Name) else None
        if not isinstance(h, ExternRef) or not isinstance(h.ext, HashExtern):
            gen.fail(inst.loc, f"ActionSelector {inst.name}: its hash must be a Hash<bit<W>> declared before it")
        width, algo = h.obj
        prof.algo = algo
        prof.hash_fn = lambda x, bits: hash_get(algo, width, x, bits)
        if new_form:
            prof.max_group_size = gen.const_of(inst.args[3], [scope])
            prof.num_groups = gen.const_of(inst.args[4], [scope])
        gen.objects.action_profiles[fq] = prof
        return prof


#: T2NA: extern object types by P4 name; no extern functions.
T2NA = Architecture(
    externs={"Register": RegisterExtern(), "RegisterAction": RegisterActionExtern(), "Random": RandomExtern(),
             "Hash": HashExtern(), "Checksum": ChecksumExtern(), "Counter": CounterExtern(),
             "ActionProfile": ActionProfileExtern(), "ActionSelector": ActionSelectorExtern()},
    functions={},
)


# ----------------------------------------------------------------------- assembly

#: intrinsic metadata types by the role their parameter plays
_INTRINSIC = {
    "ingress_intrinsic_metadata_t": "ig_intr_md",
    "ingress_intrinsic_metadata_from_parser_t": "ig_prsr_md",
    "ingress_intrinsic_metadata_for_deparser_t": "ig_dprsr_md",
    "ingress_intrinsic_metadata_for_tm_t": "ig_tm_md",
    "egress_intrinsic_metadata_t": "eg_intr_md",
    "egress_intrinsic_metadata_from_parser_t": "eg_prsr_md",
    "egress_intrinsic_metadata_for_deparser_t": "eg_dprsr_md",
    "egress_intrinsic_metadata_for_output_port_t": "eg_oport_md",
}
_PARSER_ERR_FLAGS = {"NoMatch": 0x0001, "PacketTooShort": 0x0002}
_PARSER_ERR_OTHER = 0x0008  #: any other P4 error (a user timeout in the TNA flags)


def _blocks(prog: ir.Program) -> list[Any]:
    main = prog.main
    if main is None or main.type.name != "Switch" or len(main.args) != 1:
        raise P4FrontendError(prog.source, 0, "unsupported package (need Switch(pipe) main)")
    arg = main.args[0]
    pipe: Any = None
    if isinstance(arg, ir.Name):
        pipe = next((i for i in prog.instances if i.name == arg.name), None)
    elif isinstance(arg, ir.Ctor):
        pipe = arg
    if pipe is None or pipe.type.name != "Pipeline" or len(pipe.args) != 6:
        raise P4FrontendError(main.loc[0], main.loc[1], "Switch needs one Pipeline of 6 blocks")
    blocks: list[Any] = []
    for i, a in enumerate(pipe.args):
        if not isinstance(a, ir.Ctor) or not isinstance(a.type, ir.NamedT):
            raise P4FrontendError(pipe.loc[0], pipe.loc[1], "Pipeline arguments must be MyBlock()")
        is_parser = i in (0, 3)
        decl = prog.parsers.get(a.type.name) if is_parser else prog.controls.get(a.type.name)
        if decl is None:
            raise P4FrontendError(a.loc[0], a.loc[1], f"unknown {'parser' if is_parser else 'control'} {a.type.name}")
        blocks.append(decl)
    return blocks


def _header_prefix(h: HdrRef, values: dict[str, str]) -> str:
    """Python expression: the bytes of header ``h`` with the named fields set (others 0)."""
    shift, parts = h.type.width, []
    for fname, w, _var in h.fields:
        shift -= w
        if fname in values:
            v = f"(({values[fname]}) & {hex(mask(w))})"
            parts.append(f"({v} << {shift})" if shift else v)
    code = " | ".join(parts) or "0"
    return f"({code}).to_bytes({h.type.width // 8}, 'big')"


def compile_t2na(prog: ir.Program, *, optimize_code: bool, rng: _random.Random,
                 stats: dict[str, int]) -> Compiled:
    """Compile a T2NA ``Switch(Pipeline(...))`` program (see module docstring).

    Raises :class:`P4FrontendError` (FILE:LINE) for what the runtime does not support.
    """
    iparser, ingress, ideparser, eparser, egress, edeparser = _blocks(prog)
    c = CodeGen(prog, T2NA, optimize=optimize_code)
    c.ns["_rng"] = rng
    c.ns["_STATS"] = stats
    for p in (iparser, eparser):
        if len(p.params) < 3:
            raise P4FrontendError(p.loc[0], p.loc[1], f"{p.name} needs (packet_in, out H, out M, ...)")
    side_slots: list[list[str]] = []
    roots_by_side = []
    for side, parser in (("ig", iparser), ("eg", eparser)):
        start = len(c.slots)
        htype, mtype = parser.params[1].type, parser.params[2].type
        for t, what in ((htype, "headers"), (mtype, "metadata")):
            if not isinstance(t, ir.StructT):
                raise P4FrontendError(parser.loc[0], parser.loc[1], f"{what} type must be a struct")
        roots: dict[str, Any] = {"H": c.alloc_struct(htype, f"{side}_hdr"), "M": c.alloc_struct(mtype, f"{side}_md")}
        for tname_, role in _INTRINSIC.items():
            if not role.startswith(side):
                continue
            t = prog.types.get(tname_)
            if isinstance(t, ir.HeaderT):
                roots[role] = c.alloc_header(t, role)
            elif isinstance(t, ir.StructT):
                roots[role] = c.alloc_struct(t, role)
            else:
                raise P4FrontendError(prog.source, 0, f"t2na.p4 lacks {tname_}")
        side_slots.append([v for v, _ in c.slots[start:]])
        roots_by_side.append(roots)
    ig, eg = roots_by_side

    def ctx_for(decl: Any, roots: dict[str, Any], kind: str) -> Ctx:
        scope: dict[str, Any] = {}
        for p in decl.params:
            t = p.type
            tn = getattr(t, "name", "")
            if tn == "packet_in" or tn == "packet_out":
                scope[p.name] = PacketRef(tn)
            elif tn in _INTRINSIC:
                role = _INTRINSIC[tn]
                if role not in roots:
                    raise P4FrontendError(p.loc[0], p.loc[1], f"{tn} is not available in {decl.name}")
                scope[p.name] = roots[role]
            elif isinstance(t, ir.StructT) and t == roots["H"].type:
                scope[p.name] = roots["H"]
            elif isinstance(t, ir.StructT) and t == roots["M"].type:
                scope[p.name] = roots["M"]
            else:
                raise P4FrontendError(p.loc[0], p.loc[1], f"unsupported parameter {p.name} of {decl.name}")
        return Ctx(kind, decl.name, [scope], {})

    ig_prsr = ig["ig_prsr_md"].members
    ig_dprsr = ig["ig_dprsr_md"].members
    ig_tm = ig["ig_tm_md"].members
    eg_dprsr = eg["eg_dprsr_md"].members
    ig_intr: HdrRef = ig["ig_intr_md"]
    eg_intr: HdrRef = eg["eg_intr_md"]
    port_md = prog.consts.get("PORT_METADATA_SIZE")
    port_md_bytes = (c.const_of(port_md.value, [{}]) // 8) if port_md is not None else 0
    errmap = {i: _PARSER_ERR_FLAGS.get(name, _PARSER_ERR_OTHER) for name, i in c.errors.items() if i}

    def perr_flags(line_var: str) -> None:
        c.emit("if _perr:")
        c.emit("    _STATS['parser_errors'] += 1")
        c.emit(f"    {line_var} = {c.glob('_PERRMAP', errmap)}.get(_perr, {_PARSER_ERR_OTHER})")

    ig_ctx = [ctx_for(iparser, ig, "parser"), ctx_for(ingress, ig, "control"), ctx_for(ideparser, ig, "control")]
    eg_ctx = [ctx_for(eparser, eg, "parser"), ctx_for(egress, eg, "control"), ctx_for(edeparser, eg, "control")]
    if optimize_code:
        # the v1model optimizations that apply per block (optimize.py, on the IR before emission):
        # re-emit untouched headers from their extracted bytes, skip extracted fields nothing reads
        decls = [iparser, ingress, ideparser, eparser, egress, edeparser]
        c.du = def_use(prog, [(d, x.scopes[0], "ingress" if i < 3 else "egress")
                              for i, (d, x) in enumerate(zip(decls, ig_ctx + eg_ctx, strict=True))], T2NA.effects)

    # ---- ingress: parser, control, deparser
    c.lines, c.ind = [], 1
    c.emit("_pos = 0")
    c.emit("_perr = 0")
    c.gen_parser(iparser, ig_ctx[0])
    perr_flags(ig_prsr["parser_err"].var)
    c.gen_control(ingress, ig_ctx[1])
    c.emit(f"if {ig_dprsr['drop_ctl'].var} & 1: return None")
    c.gen_deparser(ideparser, ig_ctx[2])
    c.emit(f"return ({ig_tm['ucast_egress_port'].var}, 0, _plen, (_deparsed, _plen))")
    ingress_body = c.lines

    # ---- egress: parser, control, deparser
    c.lines, c.ind = [], 1
    c.emit("_pos = 0")
    c.emit("_perr = 0")
    c.gen_parser(eparser, eg_ctx[0])
    perr_flags(eg["eg_prsr_md"].members["parser_err"].var)
    c.gen_control(egress, eg_ctx[1])
    c.emit(f"if {eg_dprsr['drop_ctl'].var} & 1: return None")
    c.gen_deparser(edeparser, eg_ctx[2])
    c.emit("return _deparsed")
    egress_body = c.lines

    inits = dict(c.slots)
    raw_init: list[Line] = []
    if optimize_code:
        raw_init = [Line(1, f"{v} = 0") for v in c.raw.values()]  # (offsets in _pkt)
    ig_prefix = _header_prefix(ig_intr, {"ingress_port": "_port", "ingress_mac_tstamp": "_now * 1000"})
    head = [Line(0, "def _ingress(_frame, _port, _now):")]
    head += [Line(1, f"{v} = {inits[v]!r}") for v in side_slots[0]] + raw_init
    head += [Line(1, "_plen = len(_frame)"),
             Line(1, f"_pkt = {ig_prefix} + {bytes(port_md_bytes)!r} + bytes(_frame)"),
             Line(1, "_n = len(_pkt)"),
             Line(1, f"{ig_prsr['global_tstamp'].var} = (_now * 1000) & 0xffffffffffff")]

    eg_prefix = _header_prefix(eg_intr, {
        "egress_port": "_eport", "enq_qdepth": "_enq_qdepth", "deq_qdepth": "_deq_qdepth",
        "enq_tstamp": "_enq_ts * 1000", "deq_timedelta": "_deq_td * 1000", "pkt_length": "len(_bytes)"})
    ehead = [Line(0, "def _egress(_st, _eport, _enq_qdepth, _deq_qdepth, _deq_td, _enq_ts, _now):")]
    ehead += [Line(1, f"{v} = {inits[v]!r}") for v in side_slots[1]] + raw_init
    ehead += [Line(1, "_bytes, _plen = _st"),
              Line(1, f"_pkt = {eg_prefix} + _bytes"),
              Line(1, "_n = len(_pkt)"),
              Line(1, f"{eg['eg_prsr_md'].members['global_tstamp'].var} = (_now * 1000) & 0xffffffffffff")]
    return assemble(c, head + ingress_body, ehead + egress_body, "T2NA")
