"""Code generation: an IR program's parsers, controls, actions and tables as Python source.

:class:`CodeGen` turns P4 constructs that every architecture shares (expressions,
statements, actions, tables, parser states, ``extract``/``emit``, headers and structs as
Python locals) into lines of Python. What an architecture adds (its package, its
intrinsic metadata, its extern objects and functions) comes from an
:class:`Architecture` (``v1model.py``): a new extern is one entry in its
``externs``/``functions`` tables, a new statement or expression one branch here.

Generated code is a list of :class:`Line` objects. With ``optimize``, ``extract`` and
``emit`` consult the def-use of the packet state that ``optimize.def_use`` computed on the
IR before emission (``CodeGen.du``): nothing is rewritten after it is emitted.
Errors raise :class:`P4FrontendError` naming the file and line of the construct.
"""

from __future__ import annotations

import logging
import struct as _struct
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from . import ir
from .errors import ControlError, P4FrontendError
from .externs import DirectCounter, DirectMeter, Objects, csum, hash_value
from .tables import ActionProfile, ActionSpec, KeySpec, Table, ValueSet
from .typeinfer import type_text as tname

__all__ = ["ActionRef", "Architecture", "CodeGen", "Compiled", "assemble", "Ctx", "ExternRef", "ExternType",
           "HdrRef", "Leaf", "Line", "PacketRef", "StructRef", "TableRef", "UnionRef", "V", "mask",
           "tname"]

Scopes = list[dict[str, Any]]

logger = logging.getLogger(__name__)


class Exit(Exception):
    """Raised by ``exit;`` inside a control."""


# ----------------------------------------------------------------------- values and bindings

@dataclass
class V:
    """A compiled expression: Python code, P4 type, constant value, may-exceed-width flag."""

    code: str
    type: Any
    const: int | None = None
    dirty: bool = False


@dataclass
class HdrRef:
    """A header instance: validity var and (name, width, var) fields."""

    valid: str
    fields: list[tuple[str, int, str]]
    type: ir.HeaderT
    path: str
    #: a member of a header_union: the validity vars of the other members (made invalid when
    #: this one becomes valid, P4_16 spec 8.20)
    siblings: tuple[str, ...] = ()
    #: varbit field name -> the var holding its current length in bits
    varlen: dict[str, str] = field(default_factory=dict)

    def invalidate_siblings(self) -> list[str]:
        """The lines that make the other members of its union invalid (none outside a union)."""
        return [f"{v} = False" for v in self.siblings]


@dataclass
class VarField:
    """A varbit header field: the var of its value and the var of its length in bits."""

    var: str
    len_var: str
    type: ir.VarbitT


@dataclass
class UnionRef:
    """A header_union instance: its member headers by name."""

    members: dict[str, HdrRef]
    type: ir.UnionT
    path: str


@dataclass
class StructRef:
    """A struct instance: member name -> binding."""

    members: dict[str, Any]
    type: ir.StructT
    path: str


@dataclass
class StackRef:
    """A header stack instance: its elements and the var holding ``nextIndex`` (P4_16 spec 8.18)."""

    elems: list[HdrRef]
    nxt: str
    type: ir.StackT
    path: str


@dataclass
class DynElem:
    """``stack.next`` (``offset`` 0) or ``stack.last`` (``offset`` -1): the element at nextIndex + offset;
    or ``stack[i]`` with a run-time ``i`` (``sel``: the var holding it)."""

    stack: StackRef
    offset: int
    sel: str | None = None

    @property
    def selector(self) -> str:
        """The var whose value selects the element (``dyn_elems`` gives the value of each)."""
        return self.sel or self.stack.nxt


@dataclass
class Leaf:
    """A scalar storage location (Python variable) of a given type.

    ``bits``: the var holds the two's-complement bit pattern of an ``int<N>`` (header fields,
    which extract and emit move as bits), so reads sign-convert and stores mask.
    """

    var: str
    type: Any
    bits: bool = False


@dataclass
class PacketRef:
    """The ``packet_in`` or ``packet_out`` parameter of a parser or deparser."""

    kind: str


@dataclass
class ActionRef:
    """An action declared in a control (or at top level)."""

    action: ir.Action


@dataclass
class TableRef:
    """A table instance: its runtime :class:`Table`, its declaration, its actions, the block context."""

    table: Table
    decl: ir.Table
    actions: list[ir.Action]
    ctx: Ctx


@dataclass
class SubControlRef:
    """A control instantiated inside another (``C() c;``): its declaration named by the instance
    path (``MyIngress.c``, so its tables are ``MyIngress.c.t``), its parameters' storage and the
    context its tables and body are compiled in."""

    decl: ir.ControlDecl
    params: list[tuple[ir.Param, Any]]
    ctx: Ctx


@dataclass
class SubParserRef:
    """A parser instantiated inside another (``P2() p2;``): as :class:`SubControlRef`."""

    decl: ir.ParserDecl
    params: list[tuple[ir.Param, Any]]
    ctx: Ctx


@dataclass
class ExternRef:
    """An extern object instance: the runtime object and the :class:`ExternType` that generates its calls."""

    obj: Any
    ext: ExternType
    #: the extern's P4 type name (``register``), for the declared methods' arity
    type_name: str = ""


@dataclass
class ValueSetRef:
    """A ``value_set`` instance of a parser (its runtime :class:`~.tables.ValueSet`)."""

    vs: ValueSet


@dataclass
class Ctx:
    """Where code is being generated: the block and what the architecture binds in it.

    ``kind`` is ``"parser"`` or ``"control"``; ``scopes`` the block's scopes (parameters,
    then its locals); ``meta`` the architecture's intrinsic metadata by role (v1model:
    ``"sm"`` = standard_metadata); ``depth`` the action-call nesting; ``in_loop`` whether
    ``return`` can leave the current body with ``break`` (functions have none left:
    passes.RemoveReturns).
    """

    kind: str
    block: str
    scopes: Scopes
    meta: dict[str, Any] = field(default_factory=dict)
    depth: int = 0
    in_loop: bool = False


class ExternType(Protocol):
    """How an architecture's extern object type (``register``, ``counter``, ...) compiles."""

    def instantiate(self, gen: CodeGen, fq: str, inst: ir.Instance, scope: dict[str, Any]) -> Any:
        """Create and register (in ``gen.objects``) the runtime object of ``inst`` named ``fq``."""

    def call(self, gen: CodeGen, obj: Any, meth: str, e: ir.Call, scopes: Scopes, ctx: Ctx) -> None:
        """Emit the method call ``e`` (statement) on ``obj``; ``gen.fail`` if unsupported."""


#: Emits a call of an extern function (``mark_to_drop(sm)``, ``hash(...)``) as a statement.
FunctionGen = Any  # Callable[[CodeGen, ir.Call, Scopes, Ctx], None]


@dataclass(frozen=True)
class Architecture:
    """What :class:`CodeGen` needs of an architecture: its externs by type name and its functions by
    name; ``effects``: extern function name -> ``f(walker, call, scopes)`` recording what a call
    reads and writes where its declared directions say too much (``optimize.def_use``)."""

    externs: dict[str, ExternType]
    functions: dict[str, FunctionGen]
    effects: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------- emitted code

@dataclass(eq=False, slots=True)
class Line:
    """One line of generated Python: indentation level and text ("" = left out). ``typed``: its
    text in the compiled build's source (:data:`STATE`), where the ingress->egress state is a
    typed object, not a tuple (None: the same text; it may hold several lines)."""

    ind: int
    text: str
    typed: str | None = None


def render(lines: list[Line], typed: bool = False) -> list[str]:
    """The source lines of ``lines`` (removed lines left out); ``typed``: their :attr:`Line.typed` text."""
    out = []
    for ln in lines:
        text = ln.typed if typed and ln.typed is not None else ln.text
        if text:
            out += ["    " * ln.ind + t for t in text.split("\n")]
    return out


@dataclass
class Compiled:
    """A compiled program: its generated source, the two per-packet functions, its control-plane objects."""

    source: str
    ingress_fn: Any
    egress_fn: Any
    objects: Objects
    #: ``@field_list(n)`` -> the metadata vars it preserves (keys of the ``pres`` dicts)
    field_lists: dict[int, list[str]] = field(default_factory=dict)
    #: with optimize: the def-use of the packet state the code was generated with (``optimize.DefUse``)
    du: Any = None


def assemble(gen: CodeGen, ingress: list[Line], egress: list[Line], arch: str,
             field_lists: dict[int, list[str]] | None = None, state: list[str] | None = None) -> Compiled:
    """The one last step of every architecture: the ``_ingress`` and ``_egress`` functions (their
    whole lines, ``def`` included) rendered, compiled and executed in ``gen.ns``. ``state``: the
    vars of the ingress->egress state tuple, in its order, when the lines' :attr:`Line.typed`
    texts make it a :data:`STATE_CLASS` object instead (published under :data:`STATE`)."""
    source = "\n".join(render(ingress) + [""] + render(egress)) + "\n"
    if state:
        typed = "\n".join(render(ingress, True) + [""] + render(egress, True)) + "\n"
        gen.ns[STATE] = {"fields": tuple(state), "source": typed,  # not a name: the code never sees it
                         "deparsers": dict(gen.deparsers)}
    code = compile(source, f"<p4 pipeline {gen.prog.source}>", "exec")
    gen.ns[VAR_RANGES] = dict(gen.var_ranges)  # not a name: the code never sees it
    gen.ns[VAR_BOUNDS] = {"_pos": (0, POS_MAX), **dict.fromkeys(gen.raw.values(), (0, POS_MAX))}  # (offsets: _pos's values)
    exec(code, gen.ns)  # noqa: S102 - generated from the parsed program by CodeGen
    objs = gen.objects
    logger.info("compiled %s (%s): %d lines of Python, %d tables, %d registers, %d counters",
                gen.prog.source, arch, source.count("\n"), len(objs.tables), len(objs.registers), len(objs.counters))
    return Compiled(source, gen.ns["_ingress"], gen.ns["_egress"], objs, field_lists or {}, gen.du)


#: Key in the generated code's namespace of :attr:`CodeGen.var_ranges` (not an identifier, so no
#: name of the code; hostapps.compiled.pipeline_module_source reads it)
VAR_RANGES = "p4:var_ranges"
#: Key of vars whose bounds the code keeps by construction, not by their type: ``{var: (lo, hi)}``.
#: ``_pos``, the parser's byte offset, starts at 0 and moves on by ``n`` only after ``_pos + n > _n``
#: (the frame's length) was found false, so 0 <= ``_pos`` <= ``len(_pkt)`` < :data:`POS_MAX`.
VAR_BOUNDS = "p4:var_bounds"
#: A bound of every frame length in bytes (2**48: beyond any memory)
POS_MAX = 1 << 48
#: Key of the typed ingress->egress state (``{"fields": (var, ...), "source": str}``): the same
#: functions as the generated source, but ingress returns ``STATE_NEW(var, ...)`` (one argument
#: per field, in order) where the source returns the tuple ``(var, ...)``, and egress reads
#: ``var = _st.var`` where the source unpacks ``var, ... = _st``.
#: hostapps.compiled.pipeline_module_source compiles that source with :data:`STATE_CLASS`, an
#: extension type whose fields are C members of the types egress gives them, and STATE_NEW, a C
#: function that makes one (no tuple, no boxing of C integers); the exec'd source keeps the tuple
#: (in pure Python a tuple is the cheapest record). ``"deparsers"``: ``{name: format}``, the functions
#: the typed source's fast deparser calls (:meth:`CodeGen._deparse_fast`): ``name(_pkt, _t, *args)``
#: is ``struct.pack(format, *args) + _pkt[_t:]``, one bytes object written in C when compiled.
STATE = "p4:state"
#: The typed state's class and constructor (names of the compiled pipeline module)
STATE_CLASS, STATE_NEW = "_P4State", "_p4state"


def mask(w: int) -> int:
    """``2**w - 1``."""
    return (1 << w) - 1


class CodeGen:
    """Generates the Python source of one program's blocks; the architecture assembles the functions.

    ``objects`` collects the tables, registers and counters instantiated while
    generating; ``ns`` the globals the generated code needs; ``slots`` the
    ``(var, initial value)`` of every header field, metadata field and validity bit.
    """

    def __init__(self, prog: ir.Program, arch: Architecture, *, optimize: bool = True) -> None:
        self.prog = prog
        self.arch = arch
        self.optimize = optimize
        self.objects = Objects()
        self.lines: list[Line] = []
        self.ind = 1
        self.n = 0
        self.slots: list[tuple[str, Any]] = []  # (var, initial value)
        self.ns: dict[str, Any] = {"_Exit": Exit, "_csum": csum, "_hash": hash_value}
        self.errors = {e: i for i, e in enumerate(prog.errors)}
        self.pre: list[Line] = []  # lines to emit before the current statement, indentation relative
        self._globs: dict[int, str] = {}
        self._meths: dict[tuple[int, str], str] = {}  # (id(obj), method) -> global (CodeGen.method)
        #: var -> the values its P4 type holds: ``(lo, hi)`` or ``"bool"`` (None: two types seen);
        #: the compiled build declares C types from it (hostapps.compiled.typed_locals)
        self.var_ranges: dict[str, Any] = {}
        self._keep: list[Any] = []
        #: optimize: header valid var -> var holding the offset in ``_pkt`` of its last extract (its
        #: bytes are ``_pkt[off:off + width]``: ``_pkt`` is never rebound)
        self.raw: dict[str, str] = {}
        #: while :meth:`gen_deparser` runs: what each emitted header's line appends (see there)
        self.dep_items: list[tuple] | None = None
        #: optimize: the def-use of the packet state (``optimize.def_use``), set by the architecture
        #: before it emits (None: every field live, no header emitted from its bytes)
        self.du: Any = None
        #: whether code emitted since the architecture last cleared it reads the packet length ``_plen``
        self.plen_used = False
        self.structs: dict[str, _struct.Struct] = {}
        #: the typed source's deparsers (:data:`STATE` ``"deparsers"``): function name -> struct format
        self.deparsers: dict[str, str] = {}
        #: the context of the statement being generated (function calls inside expressions need it)
        self.cur_ctx: Ctx | None = None
        #: id(direct_meter) -> var holding the colour of the table entry being applied (None: miss)
        self.direct_colour: dict[int, str] = {}

    # ---------------------------------------------------------------- helpers
    def fresh(self, base: str) -> str:
        """A new Python identifier derived from ``base``."""
        self.n += 1
        clean = "".join(c if c.isalnum() else "_" for c in base)
        return f"_{clean}_{self.n}"

    def emit(self, text: str) -> Line:
        """Append a line at the current indentation and return it."""
        ln = Line(self.ind, text)
        self.lines.append(ln)
        return ln

    def fail(self, loc: ir.Loc, msg: str):
        """Raise :class:`P4FrontendError` at ``loc``."""
        raise P4FrontendError(loc[0], loc[1], msg)

    def glob(self, base: str, obj: Any) -> str:
        """Bind ``obj`` as a global of the generated code (one name per object)."""
        name = self._globs.get(id(obj))
        if name is None:
            name = self._globs[id(obj)] = self.fresh(base)
            self.ns[name] = obj
        return name

    def method(self, base: str, obj: Any, meth: str) -> str:
        """The method ``meth`` of ``obj`` as a callable of the generated code: with ``optimize``
        a global bound once to ``getattr(obj, meth)`` (a call then looks up no attribute; the
        objects bound so never change identity: a table's ``exact`` dict is cleared, not
        replaced), else ``NAME.meth`` on the global of ``obj``."""
        if not self.optimize:
            return f"{self.glob(base, obj)}.{meth}"
        key = (id(obj), meth)
        name = self._meths.get(key)
        if name is None:
            name = self._meths[key] = self.fresh(f"{base}_{meth}")
            self.ns[name] = getattr(obj, meth)
            self._keep.append(obj)  # the id stays this object's
        return name

    def note_range(self, var: str, t: Any, bits: bool = False) -> None:
        """Record in :attr:`var_ranges` the values storage ``var`` of type ``t`` holds (``bit<W>``
        and an ``int<W>`` held as its bits: 0 .. 2**W-1, another ``int<W>``: its two's-complement
        range, ``bool``); other types are not recorded."""
        if isinstance(t, ir.BoolT):
            r: Any = "bool"
        elif isinstance(t, ir.BitT) or (isinstance(t, ir.IntT) and bits):
            r = (0, mask(t.width))
        elif isinstance(t, ir.IntT):
            r = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1)
        else:
            return
        if self.var_ranges.setdefault(var, r) != r:
            self.var_ranges[var] = None

    def snapshot(self) -> tuple:
        """State to :meth:`restore` to discard everything generated after this call."""
        return (len(self.lines), self.ind)

    def restore(self, snap: tuple) -> None:
        """Drop the lines generated since ``snap`` was taken."""
        n_lines, self.ind = snap
        del self.lines[n_lines:]

    def plen(self) -> str:
        """The packet length in bytes (``_plen``), recording that the code reads it."""
        self.plen_used = True
        return "_plen"

    # ---------------------------------------------------------------- storage
    def alloc_struct(self, t: ir.StructT, path: str) -> StructRef:
        members: dict[str, Any] = {}
        for fname, ftype in t.fields:
            p = f"{path}.{fname}"
            if isinstance(ftype, ir.HeaderT):
                members[fname] = self.alloc_header(ftype, p)
            elif isinstance(ftype, ir.UnionT):
                members[fname] = self.alloc_union(ftype, p)
            elif isinstance(ftype, ir.StackT):
                nxt = self.fresh(p + "_next")
                self.slots.append((nxt, 0))
                members[fname] = StackRef([self.alloc_header(ftype.elem, f"{p}[{i}]") for i in range(ftype.size)],
                                          nxt, ftype, p)
            elif isinstance(ftype, ir.StructT):
                members[fname] = self.alloc_struct(ftype, p)
            elif isinstance(ftype, ir.BitT | ir.IntT | ir.BoolT | ir.ErrorT | ir.EnumT):
                var = self.fresh(p)
                self.slots.append((var, False if isinstance(ftype, ir.BoolT) else 0))
                self.note_range(var, ftype)
                members[fname] = Leaf(var, ftype)
            else:
                self.fail((self.prog.source, 0), f"unsupported struct member type in {t.name}.{fname}")
        return StructRef(members, t, path)

    def alloc_union(self, t: ir.UnionT, path: str) -> UnionRef:
        members = {name: self.alloc_header(ht, f"{path}.{name}") for name, ht in t.fields}  # type: ignore[arg-type]
        for h in members.values():
            h.siblings = tuple(o.valid for o in members.values() if o is not h)
        return UnionRef(members, t, path)

    def alloc_header(self, t: ir.HeaderT, path: str) -> HdrRef:
        valid = self.fresh(path + "_valid")
        self.slots.append((valid, False))
        self.note_range(valid, ir.BoolT())
        fields = []
        varlen = {}
        for fname, ftype in t.fields:
            var = self.fresh(f"{path}.{fname}")
            self.slots.append((var, 0))
            self.note_range(var, ftype, bits=True)
            fields.append((fname, ftype.width, var))  # type: ignore[union-attr]
            if isinstance(ftype, ir.VarbitT):
                varlen[fname] = self.fresh(f"{path}.{fname}_len")
                self.slots.append((varlen[fname], 0))
        return HdrRef(valid, fields, t, path, varlen=varlen)

    # ---------------------------------------------------------------- typing helpers
    def clean(self, v: V) -> str:
        """Code of ``v`` reduced to its width."""
        if v.dirty and isinstance(v.type, ir.BitT):
            return f"(({v.code}) & {hex(mask(v.type.width))})"
        if v.dirty and isinstance(v.type, ir.IntT):
            w = v.type.width
            return f"(((({v.code}) + {1 << (w - 1)}) & {hex(mask(w))}) - {1 << (w - 1)})"
        return v.code

    def const(self, value: int, t: Any) -> V:
        if isinstance(t, ir.BitT):
            value &= mask(t.width)
        elif isinstance(t, ir.IntT):
            w = t.width
            value = ((value + (1 << (w - 1))) & mask(w)) - (1 << (w - 1))
        return V(repr(value), t, value)

    def unify(self, a: V, b: V, t: Any) -> tuple[V, V]:
        """``a`` and ``b`` as operands of type ``t`` (TypeInference's): an unsized literal becomes a
        constant of ``t``."""
        if isinstance(a.type, ir.IntLitT) and a.const is not None:
            a = self.const(a.const, t)
        if isinstance(b.type, ir.IntLitT) and b.const is not None:
            b = self.const(b.const, t)
        return a, b

    def convert(self, v: V, t: Any, loc: ir.Loc) -> str:
        """Code of ``v`` as a value of type ``t`` (implicit literal conversion only)."""
        if isinstance(v.type, ir.IntLitT) and isinstance(t, ir.BitT | ir.IntT):
            if v.const is None:
                return f"(({v.code}) & {hex(mask(t.width))})"
            return self.const(v.const, t).code
        if isinstance(t, ir.BitT) and isinstance(v.type, ir.BitT) and t.width != v.type.width:
            self.fail(loc, f"type error: cannot assign {tname(v.type)} to {tname(t)}")
        if isinstance(t, ir.BoolT) != isinstance(v.type, ir.BoolT):
            self.fail(loc, f"type error: cannot assign {tname(v.type)} to {tname(t)}")
        return self.clean(v)

    # ---------------------------------------------------------------- scopes
    def lookup(self, scopes: list[dict[str, Any]], name: str, loc: ir.Loc) -> Any:
        for s in reversed(scopes):
            if name in s:
                return s[name]
        if name in self.prog.consts:
            c = self.prog.consts[name]
            v = self.expr(c.value, scopes[:1])
            if v.const is None:
                self.fail(c.loc, f"const {name} is not a compile-time constant")
            return self.const(v.const, c.type) if not isinstance(c.type, ir.BoolT) else v
        self.fail(loc, f"unknown name {name}")

    # ---------------------------------------------------------------- expressions
    def ref(self, e: ir.Expr, scopes) -> Any:
        """Resolve a name/member chain to a binding (Leaf, HdrRef, StructRef, objects)."""
        if isinstance(e, ir.Name):
            return self.lookup(scopes, e.name, e.loc)
        if isinstance(e, ir.Member):
            base = self.ref(e.expr, scopes)
            if isinstance(base, UnionRef):
                if e.name not in base.members:
                    self.fail(e.loc, f"{base.path} (header_union {base.type.name}) has no member {e.name}")
                return base.members[e.name]
            if isinstance(base, StructRef):
                if e.name not in base.members:
                    self.fail(e.loc, f"{base.path} (struct {base.type.name}) has no member {e.name}")
                return base.members[e.name]
            if isinstance(base, HdrRef):
                for (fname, w, var), (_n, ftype) in zip(base.fields, base.type.fields, strict=True):
                    if fname == e.name:
                        if isinstance(ftype, ir.IntT):
                            return Leaf(var, ftype, bits=True)
                        if isinstance(ftype, ir.VarbitT):
                            return VarField(var, base.varlen[fname], ftype)
                        return Leaf(var, ir.BitT(w))
                self.fail(e.loc, f"header {base.type.name} has no field {e.name}")
            if isinstance(base, StackRef):
                if e.name == "next":
                    return DynElem(base, 0)
                if e.name == "last":
                    return DynElem(base, -1)
                if e.name == "lastIndex":  # nextIndex - 1 as bit<32> (spec 8.18)
                    return V(f"(({base.nxt} - 1) & 0xffffffff)", ir.BitT(32))
                if e.name == "size":
                    return V(str(base.type.size), ir.BitT(32), base.type.size)
                self.fail(e.loc, f"header stack {base.path} has no member {e.name}")
            if isinstance(base, DynElem):
                return self.dyn_field(base, e.name, e.loc)
            if isinstance(base, SubControlRef | SubParserRef):  # passes.CopyInCopyOut: a parameter's storage
                for p, b in base.params:
                    if p.name == e.name:
                        return b
            if base is None and isinstance(e.expr, ir.Call) and self._is_lookahead(e.expr, scopes):
                code, t = self.lookahead(e.expr, scopes)
                if not isinstance(t, ir.HeaderT):
                    self.fail(e.loc, "member of a lookahead of a non-header type")
                off = 0
                for fname, ftype in t.fields:
                    if fname == e.name:
                        shift = t.width - off - ftype.width  # type: ignore[union-attr]
                        return V(f"(({code} >> {shift}) & {hex(mask(ftype.width))})", ftype,  # type: ignore[union-attr]
                                 dirty=isinstance(ftype, ir.IntT))
                    off += ftype.width  # type: ignore[union-attr]
                self.fail(e.loc, f"header {t.name} has no field {e.name}")
            return ("member", base, e.name)
        if isinstance(e, ir.Index):
            base = self.ref(e.expr, scopes)
            if isinstance(base, StructRef) and base.type.name.startswith("tuple<"):  # t[i], constant i
                i = self.expr(e.index, scopes)
                if i.const is None or str(i.const) not in base.members:
                    self.fail(e.loc, f"tuple index must be a constant 0..{len(base.members) - 1}")
                return base.members[str(i.const)]
            if not isinstance(base, StackRef):
                self.fail(e.loc, "unsupported index of something that is not a header stack")
            i = self.expr(e.index, scopes)
            if i.const is None:  # a run-time index: read once, before the statement (spec 8.18)
                if not isinstance(i.type, ir.BitT | ir.IntT):
                    self.fail(e.loc, f"header stack index of type {tname(i.type)}")
                sel = self.fresh("i")
                self.pre.append(Line(0, f"{sel} = {self.clean(i)}"))
                return DynElem(base, 0, sel)
            if not 0 <= i.const < base.type.size:
                self.fail(e.loc, f"header stack index {i.const} out of range 0..{base.type.size - 1}")
            return base.elems[i.const]
        return None

    def dyn_elems(self, d: DynElem) -> list[tuple[int, HdrRef]]:
        """``(value of d.selector, element)`` pairs that ``d`` selects between."""
        if d.sel is not None:
            return list(enumerate(d.stack.elems))
        return [(i - d.offset, h) for i, h in enumerate(d.stack.elems)]

    def dyn_field(self, d: DynElem, name: str, loc: ir.Loc) -> V:
        """A field of ``stack.next``/``stack.last`` read as a chain on nextIndex (0 out of range)."""
        t = d.stack.type.elem
        widths = dict(t.fields)
        if name not in widths:
            self.fail(loc, f"header {t.name} has no field {name}")
        code = "0"
        for n, h in reversed(self.dyn_elems(d)):
            var = next(v for fn, _w, v in h.fields if fn == name)
            code = f"({var} if {d.selector} == {n} else {code})"
        return V(code, widths[name], dirty=isinstance(widths[name], ir.IntT))

    def expr(self, e: ir.Expr, scopes) -> V:
        """Compile expression ``e``: the emitter registered for its IR class in :data:`EXPR_EMITTERS`."""
        fn = EXPR_EMITTERS.get(type(e))
        if fn is None:
            self.fail(e.loc, f"unsupported expression {type(e).__name__}")
        return fn(self, e, scopes)

    def typeof(self, e: ir.Expr) -> Any:
        """The type ``typeinfer.TypeInference`` (the last pass) gave expression ``e``; an expression
        it did not type is a defect of the compiler, named as such."""
        t = self.prog.typed.of(e)
        if t is None:
            self.fail(e.loc, f"internal error: TypeInference gave no type to this {type(e).__name__}")
        return t

    def expr_lit(self, e: ir.Lit, scopes) -> V:
        return V(repr(e.value), self.typeof(e), e.value)

    def expr_bool(self, e: ir.BoolLit, scopes) -> V:
        return V("True" if e.value else "False", self.typeof(e), int(e.value))

    def expr_path(self, e: ir.Name | ir.Member | ir.Index, scopes) -> V:
        if isinstance(e, ir.Member) and e.name in ("hit", "miss") and isinstance(e.expr, ir.Call):
            return self.table_hit(e, scopes)
        b = self.ref(e, scopes)
        if isinstance(b, Leaf):
            return V(b.var, self.typeof(e), dirty=b.bits)  # clean() sign-converts a bit pattern
        if isinstance(b, V):  # a constant, a stack's size or lastIndex, a field of stack.next/last
            return replace(b, type=self.typeof(e))
        if isinstance(b, VarField):
            self.fail(e.loc, "unsupported use of a varbit field as a value (it may be extracted, emitted and "
                             "assigned to a varbit field)")
        self.fail(e.loc, "unsupported use of a header, struct or object as a value")

    def expr_type_member(self, e: ir.TypeMember, scopes) -> V:
        """``error.X``, ``E.X`` (its number) or a serializable enum's member (its value); TypeInference
        refused unknown members."""
        t = self.typeof(e)
        if isinstance(t, ir.ErrorT):
            return V(str(self.errors[e.member]), t, self.errors[e.member])
        if isinstance(t, ir.EnumT):
            i = t.members.index(e.member)
            return V(str(i), t, i)
        return self.const(self.prog.ser_enums[e.type_name][e.member], t)

    def expr_slice(self, e: ir.Slice, scopes) -> V:
        """``x[hi:lo]``; TypeInference typed it (and checked literal bounds); bounds that are other
        constants (a control's ``const``) are evaluated and checked here."""
        v = self.expr(e.expr, scopes)
        hi, lo = self.const_of(e.hi, scopes), self.const_of(e.lo, scopes)
        t = self.prog.typed.of(e)
        if t is None:
            if not isinstance(v.type, ir.BitT | ir.IntT) or not (0 <= lo <= hi < v.type.width):
                self.fail(e.loc, "bad slice")
            t = ir.BitT(hi - lo + 1)
        code = f"(({self.clean(v)} >> {lo}) & {hex(mask(t.width))})" if lo else f"({self.clean(v)} & {hex(mask(t.width))})"
        return V(code, t)

    def expr_cond(self, e: ir.Cond, scopes) -> V:
        c = self.expr(e.cond, scopes)
        t = self.typeof(e)
        a, b = self.unify(self.expr(e.then, scopes), self.expr(e.other, scopes), t)
        return V(f"({self.clean(a)} if {c.code} else {self.clean(b)})", t)

    def const_of(self, e: ir.Expr, scopes) -> int:
        v = self.expr(e, scopes)
        if v.const is None:
            self.fail(e.loc, "expected a compile-time constant")
        return v.const  # type: ignore[return-value]

    def cast(self, e: ir.Cast, scopes) -> V:
        """``(T) x``; which casts are supported depends on whether ``x`` is a constant, so it is
        checked here."""
        v = self.expr(e.expr, scopes)
        t, s = self.typeof(e), v.type
        if isinstance(t, ir.BitT):
            if v.const is not None and not isinstance(s, ir.BoolT):
                return self.const(v.const, t)
            if isinstance(s, ir.BoolT):
                return V(f"(1 if {v.code} else 0)", t)
            if isinstance(s, ir.BitT) and s.width <= t.width:
                return V(self.clean(v), t)
            if isinstance(s, ir.BitT | ir.IntT):
                return V(f"({v.code} & {hex(mask(t.width))})", t)
        elif isinstance(t, ir.IntT):
            if v.const is not None:
                return self.const(v.const, t)
            if isinstance(s, ir.BitT | ir.IntT):
                return V(v.code, t, dirty=True)
        elif isinstance(t, ir.BoolT):
            if isinstance(s, ir.BoolT):
                return v
            if isinstance(s, ir.BitT) and s.width == 1:
                return V(f"({v.code} != 0)", t)
        elif t == s:
            return v
        self.fail(e.loc, f"unsupported cast from {tname(s)} to {tname(t)}")

    def unary(self, e: ir.Unary, scopes) -> V:
        """``!``, ``~``, ``-`` of the type TypeInference gave (and checked): an ``int`` literal folded."""
        v = self.expr(e.expr, scopes)
        t = self.typeof(e)
        if e.op == "!":
            return V(f"(not {v.code})", t)
        if v.const is not None and isinstance(t, ir.IntLitT):
            return V(repr(-v.const if e.op == "-" else ~v.const), t, -v.const if e.op == "-" else ~v.const)
        if isinstance(t, ir.BitT):
            m = hex(mask(t.width))
            if e.op == "~":
                return V(f"({self.clean(v)} ^ {m})", t)
            return V(f"(-{self.clean(v)})", t, dirty=True)
        if isinstance(t, ir.IntT):
            return V(f"({'~' if e.op == '~' else '-'}{self.clean(v)})", t, dirty=True)
        self.fail(e.loc, f"type error: {e.op} on {tname(t)}")

    def binary(self, e: ir.Binary, scopes) -> V:
        """Operator ``e`` of the type TypeInference gave (and checked); operators over constants fold."""
        op = e.op
        a, b = self.expr(e.left, scopes), self.expr(e.right, scopes)
        t = self.typeof(e)
        if op in ("&&", "||"):
            return V(f"({a.code} {'and' if op == '&&' else 'or'} {b.code})", t)
        if op == "++":
            return V(f"(({self.clean(a)} << {b.type.width}) | {self.clean(b)})", t)
        if op in ("<<", ">>"):
            if a.const is not None and b.const is not None and isinstance(t, ir.IntLitT):
                val = a.const << b.const if op == "<<" else a.const >> b.const
                return V(repr(val), t, val)
            if isinstance(t, ir.IntLitT):  # an int shifted by a run-time amount has no width
                self.fail(e.loc, f"type error: {op} on {tname(t)}")
            if op == "<<":
                return V(f"({a.code} << {self.clean(b)})", t, dirty=True)
            return V(f"({self.clean(a)} >> {self.clean(b)})", t)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            a, b = self.unify(a, b, b.type if isinstance(a.type, ir.IntLitT) else a.type)
            return V(f"({self.clean(a)} {op} {self.clean(b)})", t)
        a, b = self.unify(a, b, t)
        if a.const is not None and b.const is not None:
            folds = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                     "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
                     "/": lambda x, y: x // y if y else 0, "%": lambda x, y: x % y if y else 0}
            if op in folds:
                val = folds[op](a.const, b.const)
                return self.const(val, t) if not isinstance(t, ir.IntLitT) else V(repr(val), t, val)
        if op in ("|+|", "|-|"):  # saturating (P4_16 spec 8.6/8.7): clamp to the type's range
            w = t.width
            lo, hi = (0, mask(w)) if isinstance(t, ir.BitT) else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
            raw = f"({self.clean(a)} {op[1]} {self.clean(b)})"
            return V(f"min(max({raw}, {lo}), {hi})", t)
        if op in ("+", "-", "*"):
            return V(f"({a.code} {op} {b.code})", t, dirty=True)
        if op == "&":
            dirty = a.dirty and b.dirty or isinstance(t, ir.IntT) and (a.dirty or b.dirty)
            return V(f"({a.code} & {b.code})", t, dirty=dirty)
        if op in ("|", "^"):
            return V(f"({a.code} {op} {b.code})", t, dirty=a.dirty or b.dirty)
        if op in ("/", "%"):
            ca, cb = self.clean(a), self.clean(b)
            pop = "//" if op == "/" else "%"
            return V(f"(({ca} {pop} {cb}) if {cb} else 0)", t)
        self.fail(e.loc, f"unsupported operator {op}")

    # ---------------------------------------------------------------- calls
    def call_target(self, e: ir.Call, scopes):
        """Return (kind, obj, method) for a call."""
        f = e.func
        if isinstance(f, ir.Name):
            name = f.name
            counts = self.prog.extern_arity.get(name)
            if counts is not None and not any(name in sc for sc in scopes) \
                    and name not in self.prog.actions and name not in self.prog.functions:
                self.check_arity(e, name, counts)
            return ("func", name, None)
        if isinstance(f, ir.Member):
            base = self.ref(f.expr, scopes)
            if isinstance(base, TableRef) and f.name == "apply":
                self.check_arity(e, f"{base.decl.name}.apply", {0})
            elif isinstance(base, ExternRef):
                counts = self.prog.method_arity.get((base.type_name, f.name))
                if counts is not None:
                    self.check_arity(e, f"{base.type_name}.{f.name}", counts)
            return ("method", base, f.name)
        self.fail(e.loc, "unsupported call")

    def check_arity(self, e: ir.Call, what: str, counts: set[int]) -> None:
        """``FILE:LINE: WHAT takes N arguments, got M`` unless ``len(e.args)`` is in ``counts``
        (as p4c rejects such calls)."""
        n = len(e.args)
        if n in counts:
            return
        want = " or ".join(str(c) for c in sorted(counts))
        plural = "" if counts == {1} else "s"
        self.fail(e.loc, f"{what} takes {want} argument{plural}, got {n}")

    def call_expr(self, e: ir.Call, scopes) -> V:
        kind, obj, meth = self.call_target(e, scopes)
        t = self.prog.typed.of(e)  # the core methods' result types; an extern's V comes from its architecture
        if kind == "method" and isinstance(obj, HdrRef) and meth == "isValid":
            return V(obj.valid, t)
        if kind == "method" and isinstance(obj, HdrRef) and meth in ("minSizeInBits", "minSizeInBytes"):
            bits = obj.type.fixed_width  # without the varbit field (spec 8.17)
            n = bits if meth == "minSizeInBits" else bits // 8
            return V(str(n), t, n)
        if kind == "method" and isinstance(obj, UnionRef) and meth == "isValid":  # any member valid (spec 8.20)
            return V("(" + " or ".join(h.valid for h in obj.members.values()) + ")", t)
        if kind == "method" and isinstance(obj, DynElem) and meth == "isValid":
            code = "False"
            for n, h in reversed(self.dyn_elems(obj)):
                code = f"({h.valid} if {obj.selector} == {n} else {code})"
            return V(code, t)
        if kind == "method" and isinstance(obj, PacketRef) and obj.kind == "packet_in" and meth == "length":
            return V("_n", t)  # the whole frame in bytes (P4_16 spec packet_in.length())
        if kind == "method" and isinstance(obj, PacketRef) and obj.kind == "packet_in" and meth == "lookahead":
            code, _ = self.lookahead(e, scopes)
            if not isinstance(t, ir.BitT):
                self.fail(e.loc, "unsupported lookahead of a header as a value (use .field)")
            return V(code, t)
        if kind == "func" and obj in self.prog.functions and not any(obj in sc for sc in scopes):
            # passes.InlineFunctions inlines every call it can reach
            self.fail(e.loc, f"unsupported call of function {obj} here")
        if kind == "method" and isinstance(obj, ExternRef):
            call_expr = getattr(obj.ext, "call_expr", None)  # optional part of ExternType
            if call_expr is not None:
                return call_expr(self, obj.obj, meth, e, scopes)
        self.fail(e.loc, f"unsupported call in an expression: {desc_call(e)}")

    def _is_lookahead(self, e: ir.Call, scopes) -> bool:
        f = e.func
        return (isinstance(f, ir.Member) and f.name == "lookahead"
                and isinstance(self.ref(f.expr, scopes), PacketRef))

    def lookahead(self, e: ir.Call, scopes) -> tuple[str, Any]:
        """``pkt.lookahead<T>()`` (P4_16 spec 12.8.3): the next ``width(T)`` bits as one int, not
        consumed; PacketTooShort (the parser stops) when the frame ends first."""
        if len(e.type_args) != 1 or e.args:
            self.fail(e.loc, "lookahead takes one type argument and no arguments")
        if self.cur_ctx is None or self.cur_ctx.kind != "parser":
            self.fail(e.loc, "lookahead outside a parser")
        t = e.type_args[0]
        if isinstance(t, ir.HeaderT) and t.varbit is not None:
            self.fail(e.loc, "unsupported lookahead of a header with a varbit field")
        width = t.width if isinstance(t, ir.BitT | ir.HeaderT) else 0
        if width <= 0 or width % 8 and isinstance(t, ir.HeaderT):
            self.fail(e.loc, "unsupported lookahead type (need bit<N> or a header)")
        nbytes = (width + 7) // 8
        self.pre.append(Line(0, f"if _pos + {nbytes} > _n:"))
        self.pre.append(Line(1, f"_perr = {self.errors['PacketTooShort']}"))
        self.pre.append(Line(1, "break"))
        code = f"int.from_bytes(_pkt[_pos:_pos + {nbytes}], 'big')"
        if nbytes * 8 != width:
            code = f"({code} >> {nbytes * 8 - width})"
        return code, t

    def pre_lines(self, gen_fn) -> None:
        """Run ``gen_fn()`` (which emits lines) so that its lines precede the current statement.

        Extern calls inside expressions (``RegisterAction.execute``, ``Hash.get``) use this:
        their code goes to ``pre``, the expression's value is a variable it sets.
        """
        saved_lines, saved_ind = self.lines, self.ind
        self.lines, self.ind = [], 0
        try:
            self.flush_pre()
            gen_fn()
            body = self.lines
        finally:
            self.lines, self.ind = saved_lines, saved_ind
        self.pre.extend(body)

    def table_hit(self, e: ir.Member, scopes) -> V:
        call = e.expr
        assert isinstance(call, ir.Call)
        kind, obj, meth = self.call_target(call, scopes)
        if not (kind == "method" and isinstance(obj, TableRef) and meth == "apply"):
            self.fail(e.loc, f"unsupported .{e.name}")
        hitvar = self.apply_table(obj, scopes, call.loc, want_hit=True)
        return V(hitvar if e.name == "hit" else f"(not {hitvar})", self.typeof(e))

    # ---------------------------------------------------------------- statements
    def flush_pre(self) -> None:
        """Emit the pending lines (a table applied inside a condition) before the current statement."""
        pre, self.pre = self.pre, []
        for ln in pre:
            ln.ind += self.ind
            self.lines.append(ln)

    def block(self, stmts: list[ir.Stmt], scopes, ctx) -> None:
        start = len(self.lines)
        scopes = scopes + [{}]
        for s in stmts:
            self.stmt(s, scopes, ctx)
        if len(self.lines) == start:
            self.emit("pass")

    def stmt(self, s: ir.Stmt, scopes, ctx) -> None:
        prev, self.cur_ctx = self.cur_ctx, ctx
        try:
            self._stmt(s, scopes, ctx)
        finally:
            self.cur_ctx = prev

    def _stmt(self, s: ir.Stmt, scopes, ctx) -> None:
        """Emit statement ``s``: the emitter registered for its IR class in :data:`STMT_EMITTERS`."""
        fn = STMT_EMITTERS.get(type(s))
        if fn is None:
            self.fail(s.loc, f"unsupported statement {type(s).__name__}")
        fn(self, s, scopes, ctx)

    def stmt_block(self, s: ir.Block, scopes, ctx) -> None:
        self.block(s.stmts, scopes, ctx)

    def stmt_empty(self, s: ir.Empty, scopes, ctx) -> None:
        pass

    def stmt_var(self, s: ir.VarDecl, scopes, ctx) -> None:
        if isinstance(s.type, ir.TypeOfT):
            return self.temp_decl(s, scopes)
        if isinstance(s.type, ir.HeaderT | ir.StructT | ir.StackT | ir.UnionT):
            return self.value_decl(s, scopes)
        if isinstance(s.type, ir.VarbitT):
            self.fail(s.loc, "unsupported varbit local variable")
        var = self.fresh(s.name)
        if s.init is not None:
            v = self.expr(s.init, scopes)
            code = self.convert(v, s.type, s.loc)
        else:
            code = "False" if isinstance(s.type, ir.BoolT) else "0"
        self.flush_pre()
        self.emit(f"{var} = {code}")
        self.note_range(var, s.type)
        scopes[-1][s.name] = Leaf(var, s.type)

    def stmt_const(self, s: ir.ConstDecl, scopes, ctx) -> None:
        v = self.expr(s.value, scopes)
        if v.const is None:
            self.fail(s.loc, "const initialiser is not a compile-time constant")
        scopes[-1][s.name] = self.const(v.const, s.type) if not isinstance(s.type, ir.BoolT) else v

    def stmt_assign(self, s: ir.Assign, scopes, ctx) -> None:
        self.assign(s.target, s.value, scopes, s.loc)

    def stmt_if(self, s: ir.If, scopes, ctx) -> None:
        c = self.expr(s.cond, scopes)  # TypeInference checked it is a bool
        self.flush_pre()
        self.emit(f"if {c.code}:")
        self.ind += 1
        self.block([s.then], scopes, ctx)
        self.ind -= 1
        if s.other is not None:
            self.emit("else:")
            self.ind += 1
            self.block([s.other], scopes, ctx)
            self.ind -= 1

    def stmt_call(self, s: ir.CallStmt, scopes, ctx) -> None:
        self.call_stmt(s.call, scopes, ctx)

    def stmt_exit(self, s: ir.Exit, scopes, ctx) -> None:
        if ctx.kind != "control":
            self.fail(s.loc, "unsupported exit outside a control")
        self.emit("raise _Exit")

    def stmt_return(self, s: ir.Return, scopes, ctx) -> None:
        if s.value is not None:  # passes.RemoveReturns took those out of functions
            self.fail(s.loc, "return with a value outside a function")
        if not ctx.in_loop:
            self.fail(s.loc, "unsupported return here")
        self.emit("break")

    def value_decl(self, s: ir.VarDecl, scopes) -> None:
        """A header, struct or header stack local (P4_16 spec 11.3): without an initialiser a header
        is invalid, a struct's members 0 (as bmv2 leaves them)."""
        local = self.alloc_local(s.type, s.name)
        if s.init is None:
            self.clear_ref(local)
        else:
            self.assign_value(local, s.init, scopes, s.loc)
        scopes[-1][s.name] = local

    def assign_value(self, dst: Any, e: ir.Expr, scopes, loc) -> None:
        """Emit ``dst = e`` for a header, struct or stack binding ``dst``: ``e`` is a list
        ``{a, b, ...}`` (members in order; a header becomes valid, spec 8.13), ``c ? x : y`` or
        another value of the same type (copied)."""
        if isinstance(e, ir.ListExpr) and isinstance(dst, HdrRef | StructRef):
            if isinstance(dst, HdrRef):
                members: list[Any] = [Leaf(var, ft, bits=True) if isinstance(ft, ir.IntT) else Leaf(var, ft)
                                      for (_n, _w, var), (_n2, ft) in zip(dst.fields, dst.type.fields, strict=True)]
            else:
                members = list(dst.members.values())
            if e.names is not None:  # {name = value, ...}: every member once, any order
                order = [n for n, _t in dst.type.fields]
                if sorted(e.names) != sorted(order):
                    self.fail(loc, f"the initialiser of a {tname(dst.type)} must name its members "
                                   f"{', '.join(order)} once each")
                by_name = dict(zip(e.names, e.items, strict=True))
                e = ir.ListExpr(e.loc, [by_name[n] for n in order])
            if len(e.items) != len(members):
                self.fail(loc, f"{tname(dst.type)} has {len(members)} members, the list has {len(e.items)}")
            for m, it in zip(members, e.items, strict=True):
                if isinstance(m, Leaf):
                    code = self.store_code(m, self.convert(self.expr(it, scopes), m.type, loc))
                    self.flush_pre()
                    self.emit(f"{m.var} = {code}")
                else:
                    self.assign_value(m, it, scopes, loc)
            if isinstance(dst, HdrRef):
                self.emit(f"{dst.valid} = True")
                for ln in dst.invalidate_siblings():
                    self.emit(ln)
            return
        if isinstance(e, ir.Cond):
            c = self.expr(e.cond, scopes)
            self.flush_pre()
            self.emit(f"if {c.code}:")
            self.ind += 1
            self.assign_value(dst, e.then, scopes, loc)
            self.ind -= 1
            self.emit("else:")
            self.ind += 1
            self.assign_value(dst, e.other, scopes, loc)
            self.ind -= 1
            return
        src = self.ref(e, scopes) if isinstance(e, ir.Name | ir.Member | ir.Index) else None
        if type(src) is not type(dst) or src.type != dst.type:
            self.fail(loc, f"cannot assign this to a {tname(dst.type)} (need a {tname(dst.type)}, a list or ?:)")
        self.copy_ref(dst, src)

    def temp_decl(self, s: ir.VarDecl, scopes) -> None:
        """A temporary of a pass (``passes.py``, type ``ir.TypeOfT``) of the type TypeInference gave it."""
        t = self.prog.typed.decl(s)
        if s.init is not None:
            v = self.expr(s.init, scopes)
            if v.const is not None:  # a constant needs no storage
                scopes[-1][s.name] = v
                return
            code = self.clean(v)
        else:
            code = "False" if isinstance(t, ir.BoolT) else "0"
        if not isinstance(t, ir.BitT | ir.IntT | ir.BoolT | ir.ErrorT | ir.EnumT):
            self.fail(s.loc, f"unsupported value of type {tname(t)} here")
        var = self.fresh("t")
        self.flush_pre()
        self.emit(f"{var} = {code}")
        self.note_range(var, t)
        scopes[-1][s.name] = Leaf(var, t)

    def switch(self, s: ir.Switch, scopes, ctx: Ctx) -> None:
        """``switch (t.apply().action_run)`` on the action the table ran, or ``switch (expr)`` on a value."""
        e = s.expr
        labels: list[tuple[list[str | None], ir.Block]] = []
        if isinstance(e, ir.Member) and e.name == "action_run" and isinstance(e.expr, ir.Call):
            kind, obj, meth = self.call_target(e.expr, scopes)
            if not (kind == "method" and isinstance(obj, TableRef) and meth == "apply"):
                self.fail(e.loc, "unsupported .action_run")
            names = [a.name for a in obj.actions]
            for labs, block in s.cases:
                codes: list[str | None] = []
                for lab in labs:
                    if lab is None:
                        codes.append(None)
                        continue
                    if not isinstance(lab, ir.Name) or lab.name not in names:
                        self.fail(getattr(lab, "loc", s.loc),
                                  f"switch label is not an action of table {obj.decl.name}")
                    codes.append(str(names.index(lab.name)))
                labels.append((codes, block))
            ent = self.apply_table(obj, scopes, e.loc)
            key = f"{ent}[0]"
        else:
            v = self.expr(e, scopes)
            if not isinstance(v.type, ir.BitT | ir.IntT | ir.EnumT | ir.ErrorT):
                self.fail(s.loc, "unsupported switch expression type")
            key = self.fresh("sw")
            self.flush_pre()
            self.emit(f"{key} = {self.clean(v)}")
            for labs, block in s.cases:
                codes = []
                for lab in labs:
                    if lab is None:
                        codes.append(None)
                        continue
                    lv = self.expr(lab, scopes)
                    if lv.const is None:
                        self.fail(lab.loc, "switch label must be a compile-time constant")
                    codes.append(self.convert(lv, v.type, lab.loc))
                labels.append((codes, block))
        first = True
        default: ir.Block | None = None
        for codes, block in labels:
            if None in codes:
                default = block
                continue
            cond = f"{key} == {codes[0]}" if len(codes) == 1 else f"{key} in ({', '.join(codes)},)"
            self.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            self.ind += 1
            self.block(block.stmts, scopes, ctx)
            self.ind -= 1
        if default is not None:
            if first:
                self.block(default.stmts, scopes, ctx)
            else:
                self.emit("else:")
                self.ind += 1
                self.block(default.stmts, scopes, ctx)
                self.ind -= 1

    def assign(self, target: ir.Expr, value: ir.Expr, scopes, loc) -> None:
        if isinstance(target, ir.Slice):
            if isinstance(target.expr, ir.Member):
                d = self.ref(target.expr.expr, scopes)
                if isinstance(d, DynElem):
                    return self.assign_dyn_slice(d, target, value, scopes, loc)
            b = self.ref(target.expr, scopes)
            if not isinstance(b, Leaf) or not isinstance(b.type, ir.BitT):
                self.fail(loc, "unsupported slice assignment target")
            hi, lo = self.const_of(target.hi, scopes), self.const_of(target.lo, scopes)
            w = hi - lo + 1
            v = self.expr(value, scopes)
            code = self.convert(v, ir.BitT(w), loc)
            keep = mask(b.type.width) ^ (mask(w) << lo)
            self.flush_pre()
            self.emit(f"{b.var} = ({b.var} & {hex(keep)}) | ({code} << {lo})")
            return
        if isinstance(target, ir.Member):
            d = self.ref(target.expr, scopes)
            if isinstance(d, DynElem):
                return self.assign_dyn(d, target.name, value, scopes, loc)
        b = self.ref(target, scopes)
        if isinstance(b, Leaf):
            v = self.expr(value, scopes)
            code = self.store_code(b, self.convert(v, b.type, loc))
            self.flush_pre()
            self.emit(f"{b.var} = {code}")
            return
        if isinstance(b, HdrRef | StructRef | StackRef | UnionRef):
            self.assign_value(b, value, scopes, loc)
            return
        if isinstance(b, DynElem):
            self.fail(loc, "unsupported assignment of a whole header to a header stack element chosen at run time")
        if isinstance(b, VarField):
            src = self.ref(value, scopes) if isinstance(value, ir.Name | ir.Member) else None
            if not isinstance(src, VarField) or src.type.width > b.type.width:
                self.fail(loc, f"a varbit<{b.type.width}> field can only be assigned a varbit field of at most "
                               "that width")
            self.flush_pre()
            self.emit(f"{b.var} = {src.var}")
            self.emit(f"{b.len_var} = {src.len_var}")
            return
        self.fail(loc, "unsupported assignment target")

    def assign_dyn_slice(self, d: DynElem, target: ir.Slice, value: ir.Expr, scopes, loc) -> None:
        """``stack[i].f[hi:lo] = v``: those bits of the selected element's field; none when the
        index is out of range (as :meth:`assign_dyn`)."""
        assert isinstance(target.expr, ir.Member)
        t = d.stack.type.elem
        name = target.expr.name
        ftype = dict(t.fields).get(name)
        if not isinstance(ftype, ir.BitT):
            self.fail(loc, "unsupported slice assignment target")
        hi, lo = self.const_of(target.hi, scopes), self.const_of(target.lo, scopes)
        w = hi - lo + 1
        code = self.convert(self.expr(value, scopes), ir.BitT(w), loc)
        keep = mask(ftype.width) ^ (mask(w) << lo)
        self.flush_pre()
        for k, (n, h) in enumerate(self.dyn_elems(d)):
            var = next(v for fn, _w, v in h.fields if fn == name)
            self.emit(f"{'if' if k == 0 else 'elif'} {d.selector} == {n}:")
            self.emit(f"    {var} = ({var} & {hex(keep)}) | ({code} << {lo})")

    def assign_dyn(self, d: DynElem, name: str, value: ir.Expr, scopes, loc) -> None:
        """``stack[i].f = v`` / ``stack.next.f = v``: a store into the selected element; none
        when the index is out of range (spec 8.18 leaves it undefined)."""
        t = d.stack.type.elem
        ftype = dict(t.fields).get(name)
        if ftype is None:
            self.fail(loc, f"header {t.name} has no field {name}")
        code = self.convert(self.expr(value, scopes), ftype, loc)
        self.flush_pre()
        for k, (n, h) in enumerate(self.dyn_elems(d)):
            var = next(v for fn, _w, v in h.fields if fn == name)
            leaf = Leaf(var, ftype, bits=isinstance(ftype, ir.IntT))
            self.emit(f"{'if' if k == 0 else 'elif'} {d.selector} == {n}:")
            self.emit(f"    {var} = {self.store_code(leaf, code)}")

    def store_code(self, b: Leaf, code: str) -> str:
        """``code`` (a value of ``b.type``) as stored in ``b``: masked to its bits for a bit-pattern leaf."""
        return f"({code}) & {hex(mask(b.type.width))}" if b.bits else code

    def copy_ref(self, dst, src) -> None:
        """Emit ``dst = src`` for a header, header stack or struct binding."""
        if isinstance(dst, HdrRef):
            self.emit(f"{dst.valid} = {src.valid}")
            for (_n, _w, dv), (_n2, _w2, sv) in zip(dst.fields, src.fields, strict=True):
                self.emit(f"{dv} = {sv}")
            for name, lv in dst.varlen.items():
                self.emit(f"{lv} = {src.varlen[name]}")
            if dst.siblings:  # a valid header assigned to a union member: the others become invalid
                self.emit(f"if {dst.valid}: " + "; ".join(dst.invalidate_siblings()))
        elif isinstance(dst, UnionRef):
            for name, d in dst.members.items():
                self.emit(f"{d.valid} = {src.members[name].valid}")
                for (_n, _w, dv), (_n2, _w2, sv) in zip(d.fields, src.members[name].fields, strict=True):
                    self.emit(f"{dv} = {sv}")
        elif isinstance(dst, StackRef):
            self.emit(f"{dst.nxt} = {src.nxt}")
            for d, s in zip(dst.elems, src.elems, strict=True):
                self.copy_ref(d, s)
        else:
            for name, d in dst.members.items():
                s = src.members[name]
                if isinstance(d, Leaf):
                    self.emit(f"{d.var} = {s.var}")
                else:
                    self.copy_ref(d, s)

    def stack_shift(self, st: StackRef, meth: str, e: ir.Call, scopes) -> None:
        """``push_front(n)`` / ``pop_front(n)`` (P4_16 spec 8.18): shift elements by n, invalidate the
        vacated ones, nextIndex moves by n (clamped to 0..size)."""
        if len(e.args) != 1:
            self.fail(e.loc, f"{meth} takes one argument")
        n = self.const_of(e.args[0], scopes)
        size = st.type.size
        if n < 0:
            self.fail(e.loc, f"{meth}: count must not be negative")
        els = st.elems
        if meth == "push_front":
            for i in range(size - 1, -1, -1):
                if i >= n:
                    self.copy_ref(els[i], els[i - n])
                else:
                    self.emit(f"{els[i].valid} = False")
            self.emit(f"{st.nxt} = min({st.nxt} + {n}, {size})")
        else:
            for i in range(size):
                if i + n < size:
                    self.copy_ref(els[i], els[i + n])
                else:
                    self.emit(f"{els[i].valid} = False")
            self.emit(f"{st.nxt} = max({st.nxt} - {n}, 0)")

    def out_target(self, e: ir.Expr, scopes, loc) -> Leaf:
        b = self.ref(e, scopes)
        if not isinstance(b, Leaf):
            self.fail(loc, "out argument must be a scalar variable or field")
        return b

    def call_stmt(self, e: ir.Call, scopes, ctx) -> None:
        kind, obj, meth = self.call_target(e, scopes)
        loc = e.loc
        if kind == "method":
            if isinstance(obj, HdrRef):
                if meth in ("setValid", "setInvalid"):
                    self.emit(f"{obj.valid} = {meth == 'setValid'}")
                    if meth == "setValid":
                        for ln in obj.invalidate_siblings():
                            self.emit(ln)
                    return
            if isinstance(obj, DynElem) and meth in ("setValid", "setInvalid"):
                self.flush_pre()
                for k, (n, h) in enumerate(self.dyn_elems(obj)):
                    self.emit(f"{'if' if k == 0 else 'elif'} {obj.selector} == {n}:")
                    self.emit(f"    {h.valid} = {meth == 'setValid'}")
                return
                if meth == "isValid":
                    return
            if isinstance(obj, StackRef) and meth in ("push_front", "pop_front"):
                return self.stack_shift(obj, meth, e, scopes)
            if isinstance(obj, PacketRef):
                if obj.kind == "packet_in" and meth == "extract":
                    return self.extract(e, scopes, ctx)
                if obj.kind == "packet_in" and meth == "advance":
                    return self.advance(e, scopes, ctx)
                if obj.kind == "packet_in" and meth == "lookahead":  # as a statement: only the length check
                    self.lookahead(e, scopes)
                    self.flush_pre()
                    return
                if obj.kind == "packet_out" and meth == "emit":
                    return self.emit_hdr(e, scopes)
            if isinstance(obj, TableRef) and meth == "apply":
                self.apply_table(obj, scopes, loc)
                return
            if isinstance(obj, SubControlRef | SubParserRef) and meth == "apply":  # passes.CopyInCopyOut lowers these
                self.fail(loc, f"unsupported call {desc_call(e)} here")
            if isinstance(obj, ExternRef):
                try:
                    return obj.ext.call(self, obj.obj, meth, e, scopes, ctx)
                except IndexError:  # the handler read an argument the call does not have
                    self.fail(loc, f"{desc_call(e)}: too few arguments ({len(e.args)})")
            self.fail(loc, f"unsupported method call {desc_call(e)}")
        name = obj
        if any(isinstance(sc.get(name), ActionRef) for sc in scopes) or (
                name in self.prog.actions and not any(name in sc for sc in scopes)):
            self.fail(loc, f"unsupported call of action {name} here")  # passes.InlineActions inlines the others
        if name in self.prog.functions and not any(name in sc for sc in scopes):
            self.fail(loc, f"unsupported call of function {name} here")  # passes.InlineFunctions inlines the others
        if name == "verify":
            if ctx.kind != "parser":
                self.fail(loc, "verify() outside a parser")
            c = self.expr(e.args[0], scopes)
            err = self.expr(e.args[1], scopes)
            self.flush_pre()
            self.emit(f"if not {c.code}:")
            self.emit(f"    _perr = {err.code}")
            self.emit("    break")
            return
        fn = self.arch.functions.get(name)
        if fn is not None:
            try:
                return fn(self, e, scopes, ctx)
            except IndexError:  # the generator read an argument the call does not have
                self.fail(loc, f"{name}(): too few arguments ({len(e.args)})")
        if name in self.prog.extern_functions:
            self.fail(loc, f"unsupported extern {name}")
        self.fail(loc, f"unknown function {name}")

    # -- actions
    def table_action(self, act: ir.Action, ctx, bound: dict) -> None:
        """The body of table action ``act`` with ``bound`` binding its action data (its directional
        parameters were made copy-in/copy-out locals by ``passes.RemoveActionParameters``; direct
        calls of actions were inlined by ``passes.InlineActions``). The body sees its control's
        scopes plus its parameters; a ``return`` leaves it (``while True`` ... ``break``)."""
        body_sc = ctx.scopes + [{p.name: bound[p.name] for p in act.params}]
        uses_return = contains(act.body, ir.Return)
        sub = replace(ctx, depth=ctx.depth + 1, in_loop=uses_return or ctx.in_loop)
        self.body_with_copy_out(act.body.stmts, body_sc, sub, [], False, uses_return)

    def body_with_copy_out(self, stmts: list[ir.Stmt], scopes, ctx: Ctx, copy_out: list[ir.Stmt],
                           guard: bool, uses_return: bool, out_scopes=None, out_ctx: Ctx | None = None) -> None:
        """Emit ``stmts`` (in a ``while True`` when they ``return``), then the copy-out statements
        (in ``out_scopes``/``out_ctx``, the caller's); with ``guard`` the copy-out also runs when
        ``exit`` raises ``_Exit`` through them (spec 12.5)."""
        if guard:
            self.emit("try:")
            self.ind += 1
        if uses_return:
            self.emit("while True:")
            self.ind += 1
        self.block(stmts, scopes, ctx)
        if uses_return:
            self.emit("break")
            self.ind -= 1
        if guard:
            self.ind -= 1
            self.emit("finally:")
            self.ind += 1
        for s in copy_out:
            self.stmt(s, out_scopes, out_ctx)
        if guard:
            self.ind -= 1

    def alloc_local(self, t: Any, path: str) -> Any:
        """Storage for a local header, struct or header stack value (not part of the packet state)."""
        saved, self.slots = self.slots, []
        try:
            if isinstance(t, ir.HeaderT):
                ref = self.alloc_header(t, path)
            elif isinstance(t, ir.UnionT):
                ref = self.alloc_union(t, path)
            elif isinstance(t, ir.StackT):
                nxt = self.fresh(path + "_next")
                ref = StackRef([self.alloc_header(t.elem, f"{path}[{i}]") for i in range(t.size)], nxt, t, path)
            else:
                ref = self.alloc_struct(t, path)
        finally:
            self.slots = saved
        return ref

    def clear_ref(self, dst: Any) -> None:
        """Emit the initial value of a header (invalid, fields 0), stack or struct binding."""
        if isinstance(dst, HdrRef):
            self.emit(f"{dst.valid} = False")
            for _n, _w, v in dst.fields:
                self.emit(f"{v} = 0")
            for lv in dst.varlen.values():
                self.emit(f"{lv} = 0")
        elif isinstance(dst, StackRef):
            self.emit(f"{dst.nxt} = 0")
            for h in dst.elems:
                self.clear_ref(h)
        elif isinstance(dst, UnionRef):
            for h in dst.members.values():
                self.clear_ref(h)
        else:
            for d in dst.members.values():
                if isinstance(d, Leaf):
                    self.emit(f"{d.var} = {'False' if isinstance(d.type, ir.BoolT) else '0'}")
                else:
                    self.clear_ref(d)

    # -- tables
    def apply_table(self, t: TableRef, scopes, loc, want_hit: bool = False) -> str | None:
        """Emit ``t.apply()``; with ``want_hit`` the lookup and actions go to ``pre`` and the hit var is returned."""
        table, decl, actions, ctx = t.table, t.decl, t.actions, t.ctx
        keys = []
        for k in decl.keys:
            if k.match_kind == "selector":  # the action selector's hash input, not the match key
                continue
            b = self.ref(k.expr, ctx.scopes)
            v = self.expr(k.expr, ctx.scopes)
            code = self.clean(v)
            if isinstance(v.type, ir.BoolT):
                code = f"(1 if {code} else 0)"
            hdr = self.key_header(k.expr, ctx.scopes)
            if hdr is not None and isinstance(b, Leaf):
                code = f"({code} if {hdr.valid} else 0)"
            keys.append(code)
        tname = self.glob("T_" + table.name, table)
        ent = self.fresh("e")
        if not keys:
            self.pre_or_emit(f"{ent} = {tname}.default", want_hit)
        elif table.mode == "exact":
            key = keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ",)"
            get = self.method("D_" + table.name, table.exact, "get")
            if self.optimize and not any(_has_call(k.expr) for k in decl.keys):
                # an empty table (its exact dict: cleared, never replaced) misses without a key being
                # built; a key with a call in it is always evaluated (the call may have effects)
                self.pre_or_emit(f"{ent} = {get}({key}) if {self.glob('X_' + table.name, table.exact)} else None",
                                 want_hit)
            else:
                self.pre_or_emit(f"{ent} = {get}({key})", want_hit)
            self.pre_or_emit(f"if {ent} is None: {ent} = {tname}.default", want_hit)
        else:
            key = keys[0] if len(keys) == 1 and table.mode != "scan" else "(" + ", ".join(keys) + ",)"
            meth = {"lpm": "lookup_lpm", "scan": "lookup_scan"}.get(table.mode, "lookup") if self.optimize else "lookup"
            self.pre_or_emit(f"{ent} = {self.method('T_' + table.name, table, meth)}({key})", want_hit)
        if table.profile is not None:  # a member or group entry: the action it runs
            self.resolve_indirect(table, decl, tname, ent, ctx, want_hit)
        if table.direct_counter is not None:  # counted on a hit, per entry (bmv2)
            d = self.fresh("d")
            self.pre_or_emit(f"if {ent}[2]: {d} = {ent}[3]; {d}.packets += 1; {d}.bytes += {self.plen()}", want_hit)
        if table.direct_meter is not None:  # run on a hit; read() in the action gets the colour
            col = self.fresh("colour")
            units = self.plen() if table.direct_meter.kind == "bytes" else "1"
            self.pre_or_emit(f"{col} = {ent}[3].meter.execute(_now, {units}) if {ent}[2] else None", want_hit)
            self.direct_colour[id(table.direct_meter)] = col
        if want_hit:
            # hit/miss in a condition: the lookup (queued in ``pre`` above) and then the actions
            # run before the condition is tested. The lookup goes out first, at the statement's
            # level: flushed by the first action statement it would land inside ``if ent[0] == 0``.
            saved_lines, saved_ind = self.lines, self.ind
            self.lines, self.ind = [], 0
            try:
                self.flush_pre()
                self.dispatch(table, decl, actions, ctx, ent, loc)
                self.flush_pre()
                body = self.lines
            finally:
                self.lines, self.ind = saved_lines, saved_ind
            self.pre.extend(body)
            return f"{ent}[2]"
        self.dispatch(table, decl, actions, ctx, ent, loc)
        return ent

    def resolve_indirect(self, table: Table, decl: ir.Table, tname: str, ent: str, ctx,
                         want_hit: bool) -> None:
        """After the lookup of a table with ``implementation``: the member the entry names, or
        the member of its group the hash of the ``selector`` keys picks (Table.resolve)."""
        prof = table.profile
        data = "0"
        sel = [k.expr for k in decl.keys if k.match_kind == "selector"]
        if prof.is_selector and prof.algo == "random":
            data = "_rng.getrandbits(32)"
        elif prof.is_selector and sel:
            data, table.selector_bits = self.field_list(ir.ListExpr(decl.loc, sel), ctx.scopes)
        self.pre_or_emit(f"if {ent}[0] < -1: {ent} = {tname}.resolve({ent}, {data})", want_hit)

    def pre_or_emit(self, line: str, to_pre: bool) -> None:
        """Emit ``line`` now, or queue it to precede the current statement when ``to_pre``."""
        if to_pre:
            self.pre.append(Line(0, line))
        else:
            self.flush_pre()
            self.emit(line)

    def key_header(self, e: ir.Expr, scopes) -> HdrRef | None:
        if isinstance(e, ir.Member):
            b = self.ref(e.expr, scopes)
            if isinstance(b, HdrRef):
                return b
        if isinstance(e, ir.Slice | ir.Cast):
            return self.key_header(e.expr, scopes)
        return None

    def dispatch(self, table: Table, decl: ir.Table, actions: list[ir.Action], ctx, ent: str, loc) -> None:
        """The actions of entry ``ent``: its action id read once (a C integer in the compiled build:
        ids are below 2**15, the indirect markers tables.MEMBER/GROUP negative), one branch per action."""
        first = True
        aid_var = self.fresh("a")
        self.var_ranges[aid_var] = (-(1 << 15), (1 << 15) - 1)
        self.emit(f"{aid_var} = {ent}[0]")
        for aid, act in enumerate(actions):
            self.emit(f"{'if' if first else 'elif'} {aid_var} == {aid}:")
            first = False
            self.ind += 1
            bound = {}
            names = []
            for p in act.params:
                if p.direction == "":
                    var = self.fresh(p.name)
                    names.append(var)
                    self.note_range(var, p.type)
                    bound[p.name] = Leaf(var, p.type)
            if names:
                self.emit(f"{', '.join(names)}, = {ent}[1]")
            start = len(self.lines)
            self.table_action(act, ctx, bound)
            if len(self.lines) == start:
                self.emit("pass")
            self.ind -= 1

    # -- externs
    def field_list(self, e: ir.Expr, scopes) -> tuple[str, int]:
        """Code and width of the bit-concatenation of a checksum/hash data argument.

        ``e`` is a tuple ``{a, b, ...}`` (nested tuples allowed), a header (its fields), a
        struct (its members in order, recursively) or one ``bit<N>``/``int<N>``/``bool``
        expression (bool as one bit). Fields come first-to-last, most significant first.
        """
        code, width = "", 0
        for c, w in self.field_leaves(e, scopes):
            code = c if not code else f"(({code}) << {w} | {c})"
            width += w
        return code or "0", width

    def field_sum16(self, e: ir.Expr, scopes) -> tuple[str, int]:
        """Code of a sum ``S`` congruent to :meth:`field_list`'s concatenation ``x``, zero-padded
        at the end to whole 16-bit words, modulo 0xFFFF, and zero exactly when ``x`` is; and the
        unpadded width.

        That is all the RFC 1071 checksum needs (RFC 1071 section 2: the ones'-complement sum of
        the 16-bit words is the sum modulo 0xFFFF, 0xFFFF for a non-zero multiple), and since
        2**16 == 1 modulo 0xFFFF a field whose lowest bit lies at bit ``p`` of the padded value
        adds ``field << (p % 16)``: no wide integer is built (the IPv4 header's 160 bits become
        twelve small terms). Every field is a non-negative value of its width, so ``S`` is 0
        only when every field is 0.
        """
        leaves = self.field_leaves(e, scopes)
        width = sum(w for _c, w in leaves)
        p = (-width) % 16  # the padding below the last field
        terms: list[str] = []
        for c, w in reversed(leaves):
            s = p % 16
            if not (c.isidentifier() or c.isdigit()):
                c = f"({c})"
            terms.append(c if s == 0 else f"({c} << {s})")
            p += w
        return " + ".join(reversed(terms)) or "0", width

    def field_leaves(self, e: ir.Expr, scopes) -> list[tuple[str, int]]:
        """The fields of a checksum/hash data argument (:meth:`field_list`), first to last, as
        ``(code, width)``: each code a non-negative value of that many bits."""
        leaves: list[tuple[str, int]] = []

        def walk_binding(b: Any, loc: ir.Loc) -> None:
            if isinstance(b, HdrRef):
                if b.varlen:
                    self.fail(loc, "unsupported varbit field in checksum/hash data")
                leaves.extend((var, w) for _n, w, var in b.fields)
            elif isinstance(b, StackRef):
                for h in b.elems:
                    walk_binding(h, loc)
            elif isinstance(b, UnionRef):
                for h in b.members.values():
                    walk_binding(h, loc)
            elif isinstance(b, StructRef):
                for m in b.members.values():
                    walk_binding(m, loc)
            elif isinstance(b, Leaf):
                walk_value(V(b.var, b.type), loc)
            else:
                self.fail(loc, "checksum/hash data must be bit<N> fields, headers, structs or tuples")

        def walk_value(v: V, loc: ir.Loc) -> None:
            if isinstance(v.type, ir.BoolT):
                leaves.append((f"(1 if {v.code} else 0)", 1))
            elif isinstance(v.type, ir.BitT | ir.IntT):
                w = v.type.width
                code = self.clean(v)
                leaves.append((f"({code} & {hex(mask(w))})" if isinstance(v.type, ir.IntT) else code, w))
            else:
                self.fail(loc, "checksum/hash data must be bit<N> fields, headers, structs or tuples")

        def walk(it: ir.Expr) -> None:
            if isinstance(it, ir.ListExpr):
                for x in it.items:
                    walk(x)
                return
            b = self.ref(it, scopes) if isinstance(it, ir.Name | ir.Member | ir.Index) else None
            if isinstance(b, HdrRef | StackRef | StructRef | UnionRef):
                walk_binding(b, it.loc)
            else:
                walk_value(self.expr(it, scopes), it.loc)

        walk(e)
        return leaves

    # -- parser pieces
    def extract(self, e: ir.Call, scopes, ctx) -> None:
        if ctx.kind != "parser":
            self.fail(e.loc, "extract outside a parser")
        if len(e.args) == 2:  # extract(hdr, bits): a header with a varbit field (spec 12.8.2)
            h = self.ref(e.args[0], scopes)
            if not isinstance(h, HdrRef) or not h.varlen:
                self.fail(e.loc, "two-argument extract needs a header with a varbit field")
            bits = self.expr(e.args[1], scopes)
            if not isinstance(bits.type, ir.BitT | ir.IntT | ir.IntLitT):
                self.fail(e.loc, f"extract's length must be bit<32>, got {tname(bits.type)}")
            self.flush_pre()
            return self.extract_varbit(h, self.clean(bits))
        if len(e.args) != 1:
            self.fail(e.loc, "extract takes one or two arguments")
        if isinstance(e.args[0], ir.DontCare):  # extract<T>(_): skip a T (spec 12.8.1)
            t = e.type_args[0] if len(e.type_args) == 1 else None
            if not isinstance(t, ir.HeaderT) or t.width % 8:
                self.fail(e.loc, "extract(_) needs a header type argument, extract<T>(_)")
            return self.skip_bytes(str(t.width // 8))
        h = self.ref(e.args[0], scopes)
        if isinstance(h, DynElem):
            if h.offset != 0 or h.sel is not None:
                self.fail(e.loc, "extract into a header stack needs .next")
            # extract(stack.next): the element at nextIndex, StackOutOfBounds past the end (spec 12.8.1)
            st = h.stack
            self.emit(f"if {st.nxt} >= {st.type.size}:")
            self.emit(f"    _perr = {self.errors['StackOutOfBounds']}")
            self.emit("    break")
            for i, elem in enumerate(st.elems):
                self.emit(f"{'if' if i == 0 else 'elif'} {st.nxt} == {i}:")
                self.ind += 1
                self.extract_header(elem)
                self.ind -= 1
            self.emit(f"{st.nxt} += 1")
            return
        if not isinstance(h, HdrRef):
            self.fail(e.loc, "extract needs a header")
        if h.varlen:
            self.fail(e.loc, f"{h.path} has a varbit field: extract it with its length, extract(hdr, bits)")
        self.extract_header(h)

    def extract_varbit(self, h: HdrRef, bits: str) -> None:
        """Extract header ``h`` whose varbit field is ``bits`` long (code): HeaderTooShort when that
        exceeds its width, ParserInvalidArgument when not whole bytes, PacketTooShort past the end."""
        name = h.type.varbit
        vmax = dict(h.type.fields)[name].width  # type: ignore[union-attr,index]
        vb = self.fresh("vb")
        self.emit(f"{vb} = {bits}")
        self.emit(f"if {vb} > {vmax}:")
        self.emit(f"    _perr = {self.errors['HeaderTooShort']}")
        self.emit("    break")
        self.emit(f"if {vb} & 7:")
        self.emit(f"    _perr = {self.errors['ParserInvalidArgument']}")
        self.emit("    break")
        nb = f"(({h.type.fixed_width} + {vb}) >> 3)"
        self.emit(f"if _pos + {nb} > _n:")
        self.emit(f"    _perr = {self.errors['PacketTooShort']}")
        self.emit("    break")
        self.emit(f"_x = int.from_bytes(_pkt[_pos:_pos + {nb}], 'big')")
        self.emit(f"_pos += {nb}")
        after = 0  # fixed bits after the field being split
        parts = []
        seen_var = False
        for fname, w, var in reversed(h.fields):
            if fname == name:
                parts.append(f"{var} = (_x >> {after}) & ((1 << {vb}) - 1)")
                seen_var = True
                continue
            shift = f"({after} + {vb})" if seen_var else str(after)
            parts.append(f"{var} = (_x >> {shift}) & {hex(mask(w))}")
            after += w
        for ln in reversed(parts):
            self.emit(ln)
        self.emit(f"{h.varlen[name]} = {vb}")
        self.emit(f"{h.valid} = True")
        for ln in h.invalidate_siblings():
            self.emit(ln)

    def extract_header(self, h: HdrRef) -> None:
        """Emit the extract of header ``h`` at ``_pos`` (PacketTooShort when the frame ends first)."""
        if h.varlen:
            self.fail((self.prog.source, 0), f"{h.path} has a varbit field: extract it with a length, "
                                             "extract(hdr, bits)")
        nbytes = h.type.width // 8
        self.emit(f"if _pos + {nbytes} > _n:")
        self.emit(f"    _perr = {self.errors['PacketTooShort']}")
        self.emit("    break")
        if not self.optimize:
            self.emit(f"_x = int.from_bytes(_pkt[_pos:_pos + {nbytes}], 'big')")
            self.emit(f"_pos += {nbytes}")
            self._split(h.fields, "_x", h.type.width)
            self.emit(f"{h.valid} = True")
            for ln in h.invalidate_siblings():
                self.emit(ln)
            return
        raw = self.raw.get(h.valid)
        if raw is None:
            raw = self.raw[h.valid] = self.fresh(h.path + "_off")
        du = self.du
        live = (lambda var: True) if du is None else du.live
        if du is not None and du.raw_needed(h):  # a deparser emits the header from these bytes (their offset)
            self.emit(f"{raw} = _pos")
        layout = self.struct_layout(h)
        if layout is None:
            if any(live(v) for _n, _w, v in h.fields):
                self.emit(f"_x = int.from_bytes(_pkt[_pos:_pos + {nbytes}], 'big')")
            self.emit(f"_pos += {nbytes}")
            self._split(h.fields, "_x", h.type.width, live)
        else:
            # the byte-aligned chunks holding a live field, each from its bytes (``_pkt[i]``: an int
            # 0..255; in the compiled build a C read, the bytes in vars of C type), then the chunks
            # holding several fields split
            off = 0
            for nb, fs, _pieces in layout[1]:
                at, off = off, off + nb
                if not any(live(var) for _n, _w, var in fs):
                    continue
                if nb == 1 and len(fs) == 1:
                    self.emit(f"{fs[0][2]} = _pkt[_pos + {at}]" if at else f"{fs[0][2]} = _pkt[_pos]")
                    continue
                bvars = []
                for j in range(nb):
                    bv = self.fresh("b")
                    self.note_range(bv, ir.BitT(8))
                    self.emit(f"{bv} = _pkt[_pos + {at + j}]" if at + j else f"{bv} = _pkt[_pos]")
                    bvars.append(bv)
                code = " | ".join(f"({bv} << {8 * (nb - 1 - j)})" if j < nb - 1 else bv for j, bv in enumerate(bvars))
                if len(fs) == 1:
                    self.emit(f"{fs[0][2]} = {code}")
                    continue
                src = bvars[0]
                if nb > 1:
                    src = self.fresh("p")
                    self.note_range(src, ir.BitT(nb * 8))
                    self.emit(f"{src} = {code}")
                self._split(fs, src, nb * 8, live)
            self.emit(f"_pos += {nbytes}")
        self.emit(f"{h.valid} = True")
        for ln in h.invalidate_siblings():
            self.emit(ln)

    def advance(self, e: ir.Call, scopes, ctx) -> None:
        """``packet_in.advance(bits)``: skip whole bytes; past the end is PacketTooShort."""
        if ctx.kind != "parser":
            self.fail(e.loc, "advance outside a parser")
        if len(e.args) != 1:
            self.fail(e.loc, "advance takes one argument")
        v = self.expr(e.args[0], scopes)
        if v.const is None:  # a run-time length (bit<32>): whole bytes, else ParserInvalidArgument
            if not isinstance(v.type, ir.BitT | ir.IntT):
                self.fail(e.loc, f"advance takes a bit<32> length, got {tname(v.type)}")
            bits = self.fresh("adv")
            self.flush_pre()
            self.emit(f"{bits} = {self.clean(v)}")
            self.emit(f"if {bits} & 7:")
            self.emit(f"    _perr = {self.errors['ParserInvalidArgument']}")
            self.emit("    break")
            return self.skip_bytes(f"({bits} >> 3)")
        bits = v.const
        if bits < 0 or bits % 8:
            self.fail(e.loc, f"unsupported advance by {bits} bits (need a whole number of bytes)")
        self.skip_bytes(str(bits // 8))

    def skip_bytes(self, nbytes: str) -> None:
        """Move ``_pos`` on by ``nbytes`` (code); past the end of the frame: PacketTooShort, the parser stops."""
        self.emit(f"if _pos + {nbytes} > _n:")
        self.emit(f"    _perr = {self.errors['PacketTooShort']}")
        self.emit("    break")
        self.emit(f"_pos += {nbytes}")

    def _split(self, fields, src: str, width: int, live: Any = None) -> None:
        """Assign ``fields`` (name, width, var) from the ``width``-bit value in ``src``; with ``live``
        (var -> bool) only the fields it says may be read."""
        shift = width
        for _n, w, var in fields:
            shift -= w
            if live is not None and not live(var):
                continue
            if shift == 0:
                self.emit(f"{var} = {src} & {hex(mask(w))}")
            elif shift + w == width:
                self.emit(f"{var} = {src} >> {shift}")
            else:
                self.emit(f"{var} = ({src} >> {shift}) & {hex(mask(w))}")

    def struct_layout(self, h: HdrRef) -> tuple[str, list[tuple[int, list, list[int]]]] | None:
        """A ``struct.Struct`` (global name) covering header ``h`` in byte-aligned pieces, and its chunks.

        Fields are grouped into chunks that start and end on byte boundaries; a chunk is
        one struct item of 1, 2, 4 or 8 bytes, or one field split over several items.
        None when a header does not fit that scheme (then the int path is used).
        """
        chunks, cur, bits = [], [], 0
        for f in h.fields:
            if f[1] <= 0:
                return None
            cur.append(f)
            bits += f[1]
            if bits % 8 == 0:
                chunks.append((bits // 8, cur))
                cur, bits = [], 0
        if cur:
            return None
        out, fmt = [], "!"
        for nb, fs in chunks:
            pieces, left = [], nb
            for size in (8, 4, 2, 1):
                while left >= size:
                    pieces.append(size)
                    left -= size
            if len(pieces) > 1 and len(fs) > 1:
                return None
            fmt += "".join({8: "Q", 4: "I", 2: "H", 1: "B"}[x] for x in pieces)
            out.append((nb, fs, pieces))
        st = self.structs.get(fmt)
        if st is None:
            st = self.structs[fmt] = _struct.Struct(fmt)
        return self.glob("S_" + h.type.name, st), out

    def emit_hdr(self, e: ir.Call, scopes) -> None:
        b = self.ref(e.args[0], scopes)
        hdrs: list[HdrRef] = []

        def walk(x):
            if isinstance(x, HdrRef):
                hdrs.append(x)
            elif isinstance(x, StackRef):
                hdrs.extend(x.elems)
            elif isinstance(x, UnionRef):  # the valid member, if any (members in order)
                hdrs.extend(x.members.values())
            elif isinstance(x, StructRef):
                for m in x.members.values():
                    walk(m)

        walk(b)
        if not hdrs:
            self.fail(e.loc, "emit needs a header or a struct of headers")
        items = self.dep_items
        for h in hdrs:
            if h.varlen:  # a varbit field: its current length (spec 15.2)
                code, lv = "", next(iter(h.varlen.values()))
                for n, w, var in h.fields:
                    sh = lv if n in h.varlen else str(w)
                    code = var if not code else f"({code} << {sh} | {var})"
                ln = self.emit(f"if {h.valid}: _out.append(({code}).to_bytes(({h.type.fixed_width} + {lv}) >> 3, 'big'))")
                if items is not None:
                    items.append(("other", h, ln))
                continue
            code = ""
            for _n, w, var in h.fields:
                code = var if not code else f"({code} << {w} | {var})"
            code = f"({code}).to_bytes({h.type.width // 8}, 'big')"
            layout = self.struct_layout(h) if self.optimize else None
            if layout is not None:
                args = []
                for nb, fs, pieces in layout[1]:
                    if len(pieces) == 1:
                        part = ""
                        for _n, w, var in fs:
                            part = var if not part else f"{part} << {w} | {var}"
                        args.append(part)
                        continue
                    var, off = fs[0][2], nb * 8
                    for size in pieces:
                        off -= size * 8
                        part = f"{var} >> {off}" if off else var
                        args.append(part if off + size * 8 == nb * 8 else f"({part}) & {hex(mask(size * 8))}")
                code = f"{self.method(layout[0].strip('_'), self.ns[layout[0]], 'pack')}({', '.join(args)})"
                item: tuple = ("packed", h, layout[0], args)
            else:
                item = ("other", h)
            if self.optimize and self.du is not None and self.du.untouched(h) and h.valid in self.raw:
                # only extract wrote it: the bytes it was extracted from
                off, nbytes = self.raw[h.valid], h.type.width // 8
                code = f"_pkt[{off}:{off} + {nbytes}]"
                item = ("raw", h, off, nbytes)
            ln = self.emit(f"if {h.valid}: _out.append({code})")
            if items is not None:
                items.append((*item, ln))

    # ---------------------------------------------------------------- blocks
    def declare_locals(self, decl, ctx: Ctx) -> None:
        """Control/parser locals, instances, actions and tables into the block scope."""
        scope = ctx.scopes[0]
        for inst in getattr(decl, "instances", []):
            self._instance(decl, inst, scope, ctx)
        for loc_decl in decl.locals:
            if isinstance(loc_decl, ir.Instance):
                self._instance(decl, loc_decl, scope, ctx)
            elif isinstance(loc_decl, ir.ConstDecl | ir.VarDecl | ir.Block):  # a Block: passes.InlineFunctions'
                self.stmt(loc_decl, ctx.scopes, ctx)
        for act in getattr(decl, "actions", {}).values():
            scope[act.name] = ActionRef(act)
        for t in getattr(decl, "tables", {}).values():
            scope[t.name] = self._table(decl, t, ctx)

    def _instance(self, decl, inst: ir.Instance, scope: dict[str, Any], ctx: Ctx | None = None) -> None:
        fq = f"{decl.name}.{inst.name}"
        if inst.type.name in self.prog.controls and ctx is not None:
            scope[inst.name] = self.instantiate_control(self.prog.controls[inst.type.name], fq, inst, ctx)
            return
        if inst.type.name in self.prog.parsers:
            if ctx is None or ctx.kind != "parser":
                self.fail(inst.loc, f"parser {inst.type.name} instantiated outside a parser")
            scope[inst.name] = self.instantiate_parser(self.prog.parsers[inst.type.name], fq, inst, ctx)
            return
        if inst.type.name == "value_set":
            scope[inst.name] = self.value_set(fq, inst, scope, ctx)
            return
        ext = self.arch.externs.get(inst.type.name)
        if ext is None:
            self.fail(inst.loc, f"unsupported extern {inst.type.name}")
        scope[inst.name] = ExternRef(ext.instantiate(self, fq, inst, scope), ext, inst.type.name)

    def value_set(self, fq: str, inst: ir.Instance, scope: dict[str, Any], ctx: Ctx | None) -> ValueSetRef:
        """``value_set<T>(size) name;`` in a parser (P4_16 spec 12.11): ``T`` a ``bit<W>`` or a
        struct of ``bit<W>`` fields; its members are written by the control plane."""
        if ctx is None or ctx.kind != "parser":
            self.fail(inst.loc, f"value_set {inst.name} outside a parser")
        if len(inst.type.args) != 1 or len(inst.args) != 1:
            self.fail(inst.loc, f"value_set {inst.name} needs one type argument and a size: value_set<T>(size)")
        t = inst.type.args[0]
        if isinstance(t, ir.BitT):
            fields = [("", t.width)]
        elif isinstance(t, ir.StructT) and t.fields and all(isinstance(ft, ir.BitT) for _n, ft in t.fields):
            fields = [(n, ft.width) for n, ft in t.fields]  # type: ignore[union-attr]
        else:
            self.fail(inst.loc, f"unsupported value_set element type {tname(t)} (need bit<W> or a struct of bit<W>)")
        vs = ValueSet(fq, fields, self.const_of(inst.args[0], [scope]))
        self.objects.value_sets[fq] = vs
        return ValueSetRef(vs)

    def select_value_set(self, k: ir.Expr, scopes) -> ValueSet | None:
        """The value set a select keyset ``k`` names, if it names one."""
        if not isinstance(k, ir.Name):
            return None
        for sc in reversed(scopes):
            if k.name in sc:
                b = sc[k.name]
                return b.vs if isinstance(b, ValueSetRef) else None
        return None

    def instantiate_control(self, decl: ir.ControlDecl, fq: str, inst: ir.Instance, ctx: Ctx) -> SubControlRef:
        """``C() c;`` inside a control: storage for C's parameters (copied in and out at each
        ``c.apply(...)``), then C's locals, instances, actions and tables, named under ``fq``."""
        if len(inst.args) != len(decl.ctor_params):
            self.fail(inst.loc, f"{decl.name} takes {len(decl.ctor_params)} constructor arguments, "
                                f"got {len(inst.args)}")
        sub = replace(decl, name=fq)
        scope: dict[str, Any] = {}
        for cp, arg in zip(decl.ctor_params, inst.args, strict=True):  # compile-time values (spec 14.1)
            if not isinstance(cp.type, ir.BitT | ir.IntT | ir.BoolT):
                self.fail(cp.loc, f"unsupported constructor parameter type {tname(cp.type)} of {decl.name}")
            v = self.expr(arg, ctx.scopes)
            if v.const is None:
                self.fail(arg.loc, f"constructor argument {cp.name} of {decl.name} must be a compile-time constant")
            scope[cp.name] = v if isinstance(cp.type, ir.BoolT) else self.const(v.const, cp.type)
        params = []
        for p in decl.params:
            b = self.param_storage(p, fq, f"control {decl.name} instantiated in another control")
            scope[p.name] = b
            params.append((p, b))
        sub_ctx = replace(ctx, block=fq, scopes=[scope], in_loop=False)
        self.emit(f"# control {decl.name} as {fq}")
        self.declare_locals(sub, sub_ctx)
        return SubControlRef(sub, params, sub_ctx)

    def param_storage(self, p: ir.Param, fq: str, what: str) -> Any:
        """Storage for parameter ``p`` of a sub-control or sub-parser instantiated as ``fq``:
        a local header/struct/stack/union, or a scalar initialised to 0/False; ``what`` names
        the block in the error for any other type."""
        if isinstance(p.type, ir.HeaderT | ir.StructT | ir.StackT | ir.UnionT):
            return self.alloc_local(p.type, f"{fq}.{p.name}")
        if isinstance(p.type, ir.BitT | ir.IntT | ir.BoolT | ir.ErrorT | ir.EnumT):
            b = Leaf(self.fresh(f"{fq}.{p.name}"), p.type)
            self.note_range(b.var, p.type)
            self.emit(f"{b.var} = {'False' if isinstance(p.type, ir.BoolT) else '0'}")
            return b
        self.fail(p.loc, f"unsupported parameter type {tname(p.type)} of {what}")

    def instantiate_parser(self, decl: ir.ParserDecl, fq: str, inst: ir.Instance, ctx: Ctx) -> SubParserRef:
        """``P2() p2;`` inside a parser: storage for P2's parameters (its ``packet_in`` is the
        caller's packet), then its locals."""
        if inst.args:
            self.fail(inst.loc, f"unsupported parser constructor parameters ({decl.name})")
        sub = replace(decl, name=fq)
        scope: dict[str, Any] = {}
        params = []
        for p in decl.params:
            if getattr(p.type, "name", "") == "packet_in":
                b: Any = PacketRef("packet_in")
            else:
                b = self.param_storage(p, fq, f"parser {decl.name} instantiated in another parser")
            scope[p.name] = b
            params.append((p, b))
        sub_ctx = replace(ctx, block=fq, scopes=[scope], in_loop=False)
        self.declare_locals(sub, sub_ctx)
        return SubParserRef(sub, params, sub_ctx)

    def stmt_apply_sub(self, s: ir.ApplySub, scopes, ctx: Ctx) -> None:
        """``c.apply()`` of a control or parser instantiated in this one, its arguments copied in by
        ``passes.CopyInCopyOut``: its body, then ``s.copy_out`` (in the caller's scopes)."""
        c = self.ref(s.inst, scopes)
        if isinstance(c, SubControlRef):
            return self.apply_control(c, s, scopes, ctx)
        if isinstance(c, SubParserRef):
            return self.apply_parser(c, s, scopes, ctx)
        self.fail(s.loc, f"{s.inst.name} is not a control or parser instance")

    def apply_parser(self, c: SubParserRef, s: ir.ApplySub, scopes, ctx: Ctx) -> None:
        """The sub-parser's states as a state loop of their own, then the copy-out; when it rejects
        or sets an error the calling parser stops too (after the copy-out)."""
        if ctx.kind != "parser":
            self.fail(s.loc, f"{c.decl.name}.apply outside a parser")
        for a in s.packets:
            if not isinstance(self.ref(a, scopes), PacketRef):
                self.fail(a.loc, f"the packet argument of {c.decl.name}.apply must be the packet_in")
        decl = c.decl
        names = ["start"] + [n for n in decl.states if n != "start"]
        idx = {n: i for i, n in enumerate(names)}
        st, rej = self.fresh("st"), self.fresh("rejected")
        self.emit(f"{st} = 0")
        self.emit(f"{rej} = False")

        def goto(target: str, loc) -> None:
            if target == "accept":
                self.emit("break")
            elif target == "reject":
                self.emit(f"{rej} = True")
                self.emit("break")
            elif target in idx:
                self.emit(f"{st} = {idx[target]}")
                self.emit("continue")
            else:
                self.fail(loc, f"unknown parser state {target}")

        self.emit("while True:")
        self.ind += 1
        for k, name in enumerate(names):
            self.emit(f"{'if' if k == 0 else 'elif'} {st} == {k}:  # state {decl.name}.{name}")
            self.ind += 1
            self._gen_state(decl.states[name], c.ctx.scopes, replace(c.ctx, depth=ctx.depth + 1), goto)
            self.ind -= 1
        self.emit("else:")
        self.emit("    break")
        self.ind -= 1
        for x in s.copy_out:
            self.stmt(x, scopes, ctx)
        self.emit(f"if _perr or {rej}: break  # the sub-parser rejected: so does this parser")

    def apply_control(self, c: SubControlRef, s: ir.ApplySub, scopes, ctx: Ctx) -> None:
        """The control's apply block, then the copy-out (also after ``exit``, P4_16 spec 12.5 and 6.8)."""
        uses_return = contains(c.decl.apply, ir.Return)
        guard = bool(s.copy_out) and control_may_exit(c.decl, self.prog)
        self.body_with_copy_out(c.decl.apply.stmts, c.ctx.scopes,
                                replace(c.ctx, in_loop=uses_return, depth=ctx.depth + 1), s.copy_out, guard,
                                uses_return, scopes, ctx)

    def _table(self, decl, t: ir.Table, ctx: Ctx) -> TableRef:
        fq = f"{decl.name}.{t.name}"
        scopes = ctx.scopes
        keys = []
        for k in t.keys:
            v = self.expr(k.expr, scopes)
            if k.match_kind == "selector":
                if t.implementation is None:
                    self.fail(k.loc, f"table {t.name}: a selector key needs "
                                     "implementation = action_selector(...)")
                continue
            if isinstance(v.type, ir.BoolT):
                w = 1
            elif isinstance(v.type, ir.BitT):
                w = v.type.width
            else:
                raise P4FrontendError(k.loc[0], k.loc[1], f"unsupported key type {tname(v.type)}")
            keys.append(KeySpec(k.text, k.match_kind, w))
        self.pre = []
        actions: list[ir.Action] = []
        specs: list[ActionSpec] = []
        for aid, ref in enumerate(t.actions):
            act = ref.action or self._find_action(decl, ref.name, ref.loc)  # passes.RemoveActionParameters' copy
            actions.append(act)
            params = []
            for p in act.params:
                if p.direction == "":
                    if not isinstance(p.type, ir.BitT):
                        raise P4FrontendError(p.loc[0], p.loc[1], "unsupported action data type (need bit<W>)")
                    params.append((p.name, p.type.width))
            owner = decl.name if act.name in getattr(decl, "actions", {}) else ""
            spec_name = f"{owner}.{act.name}" if owner else act.name
            specs.append(ActionSpec(spec_name, aid, params, act.name, ref.scope))
        no_action = self.prog.actions.get("NoAction")
        if t.default_action is None and no_action is not None and "NoAction" not in [a.name for a in actions]:
            # p4c's front end (CreateBuiltins) gives a table without default_action
            # ``@defaultonly NoAction`` among its actions and ``default_action = NoAction()``
            # (P4_16 spec 14.2.1.3: a miss without a default action changes nothing)
            actions.append(no_action)
            specs.append(ActionSpec("NoAction", len(specs), [], "NoAction", "default_only"))
        table = Table(fq, keys, specs, t.size, t.const_default)
        if t.implementation is not None:
            self._implementation(table, t, fq, scopes)
        for prop, inst_name in t.direct.items():  # counters = c; meters = m;
            b = next((sc[inst_name] for sc in reversed(scopes) if inst_name in sc), None)
            want = DirectCounter if prop == "counters" else DirectMeter
            if not isinstance(b, ExternRef) or not isinstance(b.obj, want):
                self.fail(t.loc, f"table {t.name}: {prop} = {inst_name} is not a "
                                 f"{'direct_counter' if prop == 'counters' else 'direct_meter'} declared before it")
            if prop == "counters":
                table.direct_counter = b.obj
            else:
                table.direct_meter = b.obj
        if t.default_action is not None:
            ref = t.default_action
            names = [a.name for a in actions]
            if ref.name not in names:
                raise P4FrontendError(ref.loc[0], ref.loc[1],
                                      f"default action {ref.name} is not in the actions of table {t.name}")
            aid = names.index(ref.name)
            spec = specs[aid]
            if spec.scope == "table_only":
                raise P4FrontendError(ref.loc[0], ref.loc[1],
                                      f"default action {ref.name} of table {t.name} is @tableonly")
            vals = [self.const_of(a, scopes) for a in (ref.args or [])]
            if len(vals) != len(spec.params):
                raise P4FrontendError(ref.loc[0], ref.loc[1], f"default action {ref.name} needs {len(spec.params)} arguments")
            table.set_default(spec.name, {n: v & mask(w) for (n, w), v in zip(spec.params, vals, strict=True)}, force=True)
        else:
            names = [a.name for a in actions]
            if "NoAction" in names:
                table.set_default("NoAction", force=True)
            else:  # no NoAction declared (no core.p4): no action at all on a miss
                table.default = (-1, (), False, None)
        if t.entries is not None:
            self._const_entries(table, t, specs, actions, scopes)
        self.objects.tables[fq] = table
        return TableRef(table, t, actions, ctx)

    def _implementation(self, table: Table, t: ir.Table, fq: str, scopes) -> None:
        """``implementation = ap;`` (an action_profile/action_selector instance declared before
        the table) or ``= action_selector(...)`` constructed in place (ir.Ctor), named as the table."""
        impl = t.implementation
        if isinstance(impl, ir.Name):
            b = next((sc[impl.name] for sc in reversed(scopes) if impl.name in sc), None)
            if not isinstance(b, ExternRef) or not isinstance(b.obj, ActionProfile):
                self.fail(t.loc, f"table {t.name}: implementation = {impl.name} is not an action_profile "
                                 "or action_selector declared before it")
            prof = b.obj
        elif isinstance(impl, ir.Ctor) and impl.type.name in ("action_profile", "action_selector") \
                and impl.type.name in self.arch.externs:
            inst = ir.Instance(impl.loc, impl.type, impl.args, t.name)
            visible = {k: v for sc in scopes for k, v in sc.items()}
            prof = self.arch.externs[impl.type.name].instantiate(self, fq, inst, visible)
        else:
            self.fail(t.loc, f"table {t.name}: implementation must be an action_profile or action_selector")
        selectors = [k for k in t.keys if k.match_kind == "selector"]
        if prof.is_selector and not selectors and prof.algo != "random":
            self.fail(t.loc, f"table {t.name}: an action_selector needs selector keys")
        if not prof.is_selector and selectors:
            self.fail(t.loc, f"table {t.name}: selector keys need an action_selector, "
                             f"{prof.name} is an action_profile")
        if t.entries is not None:
            self.fail(t.loc, f"table {t.name}: unsupported const entries with an action profile")
        table.profile = prof
        prof.tables.append(table)

    def _const_entries(self, table: Table, t: ir.Table, specs: list[ActionSpec], actions: list[ir.Action],
                       scopes) -> None:
        """Install ``const entries`` (P4_16 spec 14.2.1.4): in source order, the first one has the
        highest priority unless ``@priority(n)`` says otherwise (the smaller n wins, as p4c's bmv2
        back end passes it to bmv2); ``_``/``default`` is a wildcard; the table then refuses
        control-plane changes."""
        names = [a.name for a in actions]
        # bmv2 priorities as p4c's bmv2 back end gives them (the smaller wins): @priority(n), else
        # the entry's position 1, 2, ...; the table's priorities are the other way round
        prios = [i + 1 if ent.priority is None else ent.priority for i, ent in enumerate(t.entries or [])]
        top = max(prios, default=0) + 1
        for i, ent in enumerate(t.entries or []):
            if len(ent.keys) != len(table.keys):
                self.fail(ent.loc, f"entry has {len(ent.keys)} keys, table {t.name} has {len(table.keys)}")
            match: dict[str, Any] = {}
            for ks, k in zip(table.keys, ent.keys, strict=True):
                full = mask(ks.width)
                if k[0] == "default":
                    if ks.kind == "exact":
                        self.fail(ent.loc, f"key {ks.name} is exact: an entry cannot leave it out")
                    if ks.kind == "lpm":
                        match[ks.name] = [0, 0]
                    elif ks.kind == "range":
                        match[ks.name] = [0, full]
                    continue
                if k[0] == "value":
                    v = self.const_of(k[1], scopes) & full
                    match[ks.name] = {"exact": v, "lpm": [v, ks.width], "range": [v, v]}.get(ks.kind, [v, full])
                elif k[0] == "mask":
                    v, m = self.const_of(k[1], scopes) & full, self.const_of(k[2], scopes) & full
                    if ks.kind == "lpm":
                        plen = bin(m).count("1")
                        if m != (mask(plen) << (ks.width - plen)):
                            self.fail(ent.loc, f"key {ks.name}: lpm mask {m:#x} is not a prefix")
                        match[ks.name] = [v, plen]
                    elif ks.kind in ("ternary", "optional"):
                        match[ks.name] = [v, m]
                    else:
                        self.fail(ent.loc, f"key {ks.name} is {ks.kind}: no &&& mask")
                else:
                    if ks.kind != "range":
                        self.fail(ent.loc, f"key {ks.name} is {ks.kind}: no .. range")
                    match[ks.name] = [self.const_of(k[1], scopes) & full, self.const_of(k[2], scopes) & full]
            ref = ent.action
            if ref.name not in names:
                self.fail(ref.loc, f"action {ref.name} is not in the actions of table {t.name}")
            act_i = names.index(ref.name)
            spec = specs[act_i]
            vals = [self.const_of(a, scopes) for a in (ref.args or [])]
            if len(vals) != len(spec.params):
                self.fail(ref.loc, f"action {ref.name} needs {len(spec.params)} arguments")
            params = {p: v & mask(w) for (p, w), v in zip(spec.params, vals, strict=True)}
            try:
                table.add(match, spec.name, params, top - prios[i] if table.needs_priority else None, force=True)
            except ControlError as e:
                self.fail(ent.loc, str(e))
        table.const_entries = True

    def _find_action(self, decl, name: str, loc) -> ir.Action:
        acts = getattr(decl, "actions", {})
        if name in acts:
            return acts[name]
        if name in self.prog.actions:
            return self.prog.actions[name]
        raise P4FrontendError(loc[0], loc[1], f"unknown action {name}")

    def gen_parser(self, decl: ir.ParserDecl, ctx: Ctx) -> None:
        """Emit parser ``decl``: a state loop, or (optimize, acyclic, small) its states inlined.

        The code leaves ``_perr`` at the error code (0: NoError) and ``_pos`` after the
        last extracted byte.
        """
        scopes = ctx.scopes
        self.declare_locals(decl, ctx)
        names = list(decl.states)
        idx = {n: i for i, n in enumerate(names)}
        inline = self.optimize and _parser_inline_cost(decl) <= _PARSER_INLINE_LIMIT
        if inline:
            # the state-machine form is still generated (so every state is checked as before), then replaced
            snap = self.snapshot()
        self.emit("_st = 0")
        self.emit("while True:")
        self.ind += 1
        first = True
        order = ["start"] + [n for n in names if n != "start"]
        for name in order:
            st = decl.states[name]
            self.emit(f"{'if' if first else 'elif'} _st == {idx[name]}:  # state {name}")
            first = False
            self.ind += 1
            self._gen_state(st, scopes, ctx, lambda target, loc: self._goto(target, idx, loc))
            self.ind -= 1
        self.emit("else:")
        self.emit("    break")
        self.ind -= 1
        if inline:
            # acyclic and small: each transition becomes the target state's code, inline
            self.restore(snap)

            def goto(target: str, loc) -> None:
                if target in ("accept", "reject"):
                    self.emit("break" if target == "accept" else "break  # reject")
                else:
                    self.emit(f"# state {target}")
                    self._gen_state(decl.states[target], scopes, ctx, goto)

            self.emit("while True:")
            self.ind += 1
            goto("start", decl.loc)
            self.ind -= 1

    def _gen_state(self, st: ir.ParserState, scopes, ctx, goto) -> None:
        """The statements and the transition of parser state ``st``; ``goto(target, loc)`` emits a transition."""
        prev, self.cur_ctx = self.cur_ctx, ctx
        try:
            self._gen_state_body(st, scopes, ctx, goto)
        finally:
            self.cur_ctx = prev

    def _gen_state_body(self, st: ir.ParserState, scopes, ctx, goto) -> None:
        sc = scopes + [{}]
        for s in st.stmts:
            self.stmt(s, sc, ctx)
        if st.select is None:
            goto(st.next_state or "reject", st.loc)
            return
        keys = []
        for e in st.select:
            v = self.expr(e, sc)
            kv = self.fresh("k")
            self.flush_pre()
            self.emit(f"{kv} = {self.clean(v)}")
            keys.append((kv, v.type))
        cfirst = True
        has_default = False
        for case in st.cases:
            conds = []
            for pos, ((kv, kt), k) in enumerate(zip(keys, case.keys, strict=True)):
                if k[0] == "default":
                    continue
                vs = self.select_value_set(k[1], sc) if k[0] in ("value", "set") else None
                if vs is not None:
                    conds.append(self.value_set_match(vs, keys if k[0] == "set" else [keys[pos]], case.loc))
                elif k[0] == "set":
                    self.fail(case.loc, f"select case has 1 key, expected {len(keys)}")
                elif k[0] == "value":
                    conds.append(f"{kv} == {self.convert(self.expr(k[1], sc), kt, case.loc)}")
                elif k[0] == "mask":
                    val = self.convert(self.expr(k[1], sc), kt, case.loc)
                    m = self.convert(self.expr(k[2], sc), kt, case.loc)
                    conds.append(f"{kv} & {m} == {val} & {m}")
                else:
                    lo = self.convert(self.expr(k[1], sc), kt, case.loc)
                    hi = self.convert(self.expr(k[2], sc), kt, case.loc)
                    conds.append(f"{lo} <= {kv} <= {hi}")
            if not conds:
                if cfirst:
                    goto(case.next_state, case.loc)
                else:
                    self.emit("else:")
                    self.ind += 1
                    goto(case.next_state, case.loc)
                    self.ind -= 1
                has_default = True
                break
            self.emit(f"{'if' if cfirst else 'elif'} {' and '.join(conds)}:")
            cfirst = False
            self.ind += 1
            goto(case.next_state, case.loc)
            self.ind -= 1
        if not has_default:
            if cfirst:
                self.emit(f"_perr = {self.errors['NoMatch']}")
                self.emit("break")
            else:
                self.emit("else:")
                self.emit(f"    _perr = {self.errors['NoMatch']}")
                self.emit("    break")

    def value_set_match(self, vs: ValueSet, keys: list[tuple[str, Any]], loc: ir.Loc) -> str:
        """The condition that the select keys ``keys`` (concatenated, first high) are in ``vs``."""
        widths = []
        for _kv, kt in keys:
            if not isinstance(kt, ir.BitT | ir.IntT):
                self.fail(loc, f"value set {vs.name} matched against a {tname(kt)} key")
            widths.append(kt.width)
        if widths != [w for _n, w in vs.fields]:
            self.fail(loc, f"value set {vs.name} of {'+'.join(str(w) for _n, w in vs.fields)} bits matched "
                           f"against keys of {'+'.join(str(w) for w in widths)} bits")
        code, shift = [], 0
        for (kv, kt), w in zip(reversed(keys), reversed(widths), strict=True):
            bits = f"({kv} & {hex(mask(w))})" if isinstance(kt, ir.IntT) else kv  # int<N>: its bits
            code.append(f"({bits} << {shift})" if shift else bits)
            shift += w
        return f"{self.glob('PVS_' + vs.name, vs)}.match({' | '.join(reversed(code))})"

    def _goto(self, target: str, idx: dict[str, int], loc) -> None:
        if target == "accept":
            self.emit("break")
        elif target == "reject":
            self.emit("break  # reject")
        elif target in idx:
            self.emit(f"_st = {idx[target]}")
            self.emit("continue")
        else:
            raise P4FrontendError(loc[0], loc[1], f"unknown parser state {target}")

    def gen_control(self, decl: ir.ControlDecl, ctx: Ctx) -> None:
        """Emit control ``decl``'s locals and apply block (``exit`` and ``return`` included)."""
        if decl.ctor_params:
            self.fail(decl.loc, f"unsupported constructor parameters of {decl.name}, a block of the architecture's "
                                "package (they are supported in a control instantiated inside another)")
        self.emit(f"# control {decl.name}")
        self.declare_locals(decl, ctx)
        uses_exit = control_may_exit(decl, self.prog)
        uses_return = contains(decl.apply, ir.Return)
        if uses_exit:
            self.emit("try:")
            self.ind += 1
        if uses_return:
            self.emit("while True:")
            self.ind += 1
        sub = replace(ctx, in_loop=uses_return)
        self.block(decl.apply.stmts, ctx.scopes, sub)
        if uses_return:
            self.emit("break")
            self.ind -= 1
        if uses_exit:
            self.ind -= 1
            self.emit("except _Exit:")
            self.emit("    pass")


    def gen_deparser(self, decl: ir.ControlDecl, ctx: Ctx) -> None:
        """Emit deparser ``decl``; the frame it makes is then in ``_deparsed`` (bytes): the headers it
        emits (appended to ``_out``), then the payload ``_pkt[_pos:]``.

        With optimize, a deparser that is only ``emit`` calls, of headers that are a run re-packed from
        their fields (each with a struct layout) and then a run emitted from their extracted bytes
        (either may be empty), first tries a fast path: when every header of the first run is valid
        and the valid ones of the second lie back to back in ``_pkt`` ending at ``_pos`` (``_t``, walking
        back from ``_pos``, is then where the first of them starts), the frame is one ``pack`` of a
        struct whose format is the first run's formats concatenated (big-endian, no padding: the same
        bytes) plus ``_pkt[_t:]`` (the second run's bytes and the payload, as they lie in ``_pkt``): one
        call and two byte strings instead of one per header, and no list. Otherwise the general code runs.
        """
        start, ind = len(self.lines), self.ind
        self.dep_items = items = []
        try:
            self.emit("_out = []")
            self.gen_control(decl, ctx)
            self.emit("_out.append(_pkt[_pos:])")
            self.emit("_deparsed = b''.join(_out)")
        finally:
            self.dep_items = None
        fast = self._deparse_fast(items, self.lines[start:]) if self.optimize else None
        if fast is None:
            return
        body = self.lines[start:]
        del self.lines[start:]
        self.lines += [Line(ind + i, text, typed) for i, text, typed in fast]
        self.lines.append(Line(ind, "else:"))
        for ln in body:
            ln.ind += 1
        self.lines += body

    def _deparse_fast(self, items: list[tuple], body: list[Line]) -> list[tuple[int, str, str | None]] | None:
        """The fast path of :meth:`gen_deparser` as ``(relative indentation, text, typed text)`` lines, or
        None when ``body`` (the general code) is more than the emit lines of ``items`` (comments aside) or
        the headers are not a re-packed run then a run from extracted bytes. When the packed run's items
        are all of 1, 2 or 4 bytes (values the compiled code holds as C integers), the typed source
        (:data:`STATE`) makes the frame with a function of :attr:`deparsers` instead of ``pack(...) +
        _pkt[_t:]``: the same bytes, one allocation and one copy of the rest of ``_pkt``."""
        own = {id(it[-1]) for it in items}
        if not items or any(ln.text and not ln.text.startswith("#") and id(ln) not in own for ln in body[1:-2]):
            return None
        k = len(items)
        while k and items[k - 1][0] == "raw":
            k -= 1
        packed, raws = items[:k], items[k:]
        if any(it[0] != "packed" for it in packed):
            return None
        out: list[tuple[int, str, str | None]] = []
        conds = []
        if raws:
            out.append((0, "_t = _pos", None))
            for i, (_kind, h, off, nbytes, _ln) in enumerate(reversed(raws)):
                out.append((0, f"if {h.valid if i == 0 else '_t >= 0 and ' + h.valid}: "
                               f"_t = {off} if {off} + {nbytes} == _t else -1", None))
            conds.append("_t >= 0")
        conds += [it[1].valid for it in packed]
        rest = "_t" if raws else "_pos"
        code, typed = f"_pkt[{rest}:]", None
        if packed:
            fmt = "!" + "".join(self.ns[it[2]].format.lstrip("!") for it in packed)
            st = self.structs.get(fmt)
            if st is None:
                st = self.structs[fmt] = _struct.Struct(fmt)
            name = self.glob("S_deparse", st)
            args = ", ".join(a for it in packed for a in it[3])
            code = f"{self.method(name.strip('_'), st, 'pack')}({args}) + {code}"
            if set(fmt[1:]) <= set("BHI"):
                fn = f"_p4{name}"  # one per struct (its global's name): not a name of the exec'd code
                self.deparsers[fn] = fmt
                typed = f"_deparsed = {fn}(_pkt, {rest}, {args})"
        out.append((0, f"if {' and '.join(conds)}:", None))
        out.append((1, f"_deparsed = {code}", typed))
        return out


_PARSER_INLINE_LIMIT = 64  #: most state copies an inlined (acyclic) parser may have


def _parser_inline_cost(decl: ir.ParserDecl) -> float:
    """Number of state copies inlining ``decl`` from ``start`` makes; inf if cyclic or unknown states."""
    memo: dict[str, float] = {}
    active: set[str] = set()

    def targets(st: ir.ParserState) -> list[str]:
        if st.select is None:
            return [st.next_state or "reject"]
        out = []
        for case in st.cases:
            out.append(case.next_state)
            if all(k[0] == "default" for k in case.keys):
                break
        return out

    def cost(name: str) -> float:
        if name in ("accept", "reject"):
            return 0
        if name in memo:
            return memo[name]
        if name in active or name not in decl.states:
            return float("inf")
        active.add(name)
        total = 1 + sum(cost(t) for t in targets(decl.states[name]))
        active.discard(name)
        memo[name] = total
        return total

    return cost("start")


def _has_call(e: Any) -> bool:
    """Whether expression ``e`` is or contains a call (of a function, method or extern)."""
    if isinstance(e, ir.Call):
        return True
    if isinstance(e, list | tuple):
        return any(_has_call(x) for x in e)
    if isinstance(e, ir.Expr):
        return any(_has_call(getattr(e, f.name)) for f in fields(e))
    return False


def contains(node: Any, cls: type) -> bool:
    """Whether statement ``node`` is or (through blocks and ifs) contains a ``cls``."""
    if isinstance(node, cls):
        return True
    if isinstance(node, ir.Block):
        return any(contains(s, cls) for s in node.stmts)
    if isinstance(node, ir.If):
        return contains(node.then, cls) or (node.other is not None and contains(node.other, cls))
    if isinstance(node, ir.Switch):
        return any(contains(b, cls) for _labels, b in node.cases)
    return False


def desc_call(e: ir.Call) -> str:
    """``name()`` of the function or method that ``e`` calls, for messages."""
    f = e.func
    if isinstance(f, ir.Member):
        return f"{f.name}()"
    if isinstance(f, ir.Name):
        return f"{f.name}()"
    return "call"


def control_may_exit(decl: ir.ControlDecl, prog: ir.Program, depth: int = 0) -> bool:
    """Whether ``decl`` or a control instantiated in it (recursively) contains ``exit``."""
    if contains_deep(decl, ir.Exit):
        return True
    return depth < 16 and any(control_may_exit(prog.controls[i.type.name], prog, depth + 1)
                              for i in decl.instances if i.type.name in prog.controls)


def contains_deep(decl: ir.ControlDecl, cls: type) -> bool:
    """Whether the apply block or any action of ``decl`` contains a statement of class ``cls``."""
    return contains(decl.apply, cls) or any(contains(a.body, cls) for a in decl.actions.values())


#: IR expression class -> its emitter (``CodeGen`` method returning a :class:`V`); a new
#: expression is one method and one entry here
EXPR_EMITTERS: dict[type, Any] = {
    ir.Lit: CodeGen.expr_lit,
    ir.BoolLit: CodeGen.expr_bool,
    ir.Name: CodeGen.expr_path,
    ir.Member: CodeGen.expr_path,
    ir.Index: CodeGen.expr_path,
    ir.TypeMember: CodeGen.expr_type_member,
    ir.Cast: CodeGen.cast,
    ir.Slice: CodeGen.expr_slice,
    ir.Unary: CodeGen.unary,
    ir.Binary: CodeGen.binary,
    ir.Cond: CodeGen.expr_cond,
    ir.Call: CodeGen.call_expr,
}

#: IR statement class -> its emitter (``CodeGen`` method emitting lines); a new statement is
#: one method and one entry here
STMT_EMITTERS: dict[type, Any] = {
    ir.Block: CodeGen.stmt_block,
    ir.Empty: CodeGen.stmt_empty,
    ir.VarDecl: CodeGen.stmt_var,
    ir.ConstDecl: CodeGen.stmt_const,
    ir.Assign: CodeGen.stmt_assign,
    ir.If: CodeGen.stmt_if,
    ir.CallStmt: CodeGen.stmt_call,
    ir.Exit: CodeGen.stmt_exit,
    ir.Return: CodeGen.stmt_return,
    ir.Switch: CodeGen.switch,
    ir.ApplySub: CodeGen.stmt_apply_sub,
}
