"""Optimizations of the generated pipeline (``Pipeline(optimize=True)``), decided on the IR's def-use.

Before any code is emitted, :func:`def_use` walks the lowered IR of the blocks an
architecture runs (as p4c's mid end analyses def-use on its IR) and records, for every
location of the packet state (a header's validity, a header field, a field of metadata or
intrinsic metadata, a header stack's nextIndex: the storage the architecture allocated
for its blocks' parameters), in which half of the pipeline (``"ingress"``, ``"egress"``) it
is read and whether anything but an ``extract`` writes it. :class:`CodeGen` consults the
result (:class:`DefUse`) while it emits:

- a header whose validity and fields only ``extract`` writes still holds exactly the bytes
  it was extracted from: the deparser emits those bytes instead of rebuilding them
  (:meth:`DefUse.untouched`);
- extracted fields that nothing reads are not computed, nor the whole-header int read when
  no field of it is left, nor the header's bytes when no deparser emits them
  (:meth:`DefUse.live`, :meth:`DefUse.raw_needed`);
- v1model's egress receives only the state it reads, and ingress initialises only what it
  reads or passes (:meth:`DefUse.reads_in`).

Reads and writes follow the language: an expression reads the locations it names (a whole
header or struct: all of them), an assignment writes its target, ``setValid``/``setInvalid``
write the validity (``setValid`` also the other members' of a header_union), a stack
element chosen at run time (``s[i]``, ``s.next``, ``s.last``) is any element and reads the
index or nextIndex, a table reads its keys and runs its actions, an extern call reads its
``in``/``inout`` arguments and writes its ``out``/``inout`` ones as declared
(``ir.Program.extern_params``/``method_params``; an undeclared one reads and writes every
argument), unless the architecture says better (``Architecture.effects``: ``mark_to_drop``
writes ``egress_spec`` and ``mcast_grp``). A sub-control's or sub-parser's body is walked
where it is applied; its parameters and every local are not packet state and are not
tracked: code generation treats what they hold as read and written by more than
``extract`` (so it does not optimize them). The semantics are those of
``optimize=False`` (tests/p4/test_runtime.py and tests/p4/test_programs.py compare both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ir
from .codegen import HdrRef, Leaf, PacketRef, StackRef, StructRef, UnionRef

__all__ = ["DefUse", "def_use"]

#: a name that is not packet state (a local, a sub-block's parameter, action data, a constant)
LOCAL = object()


@dataclass
class DefUse:
    """Def-use of the packet state of one program (vars of the storage its architecture allocated).

    ``reads`` maps each half to the vars it reads (a deparser emitting an untouched header reads
    only its validity); ``raw_reads`` each half to the validity vars of the headers it emits
    from their extracted bytes; ``other_writes`` the vars anything but ``extract`` writes;
    ``extracted`` the validity vars of headers an ``extract`` fills; ``tracked`` every var
    of the packet state.
    """

    tracked: set[str] = field(default_factory=set)
    reads: dict[str, set[str]] = field(default_factory=lambda: {"ingress": set(), "egress": set()})
    raw_reads: dict[str, set[str]] = field(default_factory=lambda: {"ingress": set(), "egress": set()})
    other_writes: set[str] = field(default_factory=set)
    extracted: set[str] = field(default_factory=set)

    def untouched(self, h: HdrRef) -> bool:
        """Whether only ``extract`` writes header ``h`` (it holds the bytes it was extracted from)."""
        return h.valid in self.extracted and not any(
            v in self.other_writes for v in [h.valid, *(var for _n, _w, var in h.fields)])

    def live(self, var: str) -> bool:
        """Whether ``var`` may be read (untracked vars: always)."""
        return var not in self.tracked or var in self.reads["ingress"] or var in self.reads["egress"]

    def raw_needed(self, h: HdrRef) -> bool:
        """Whether a deparser emits header ``h`` from its extracted bytes."""
        return h.valid in self.raw_reads["ingress"] or h.valid in self.raw_reads["egress"]

    def reads_in(self, half: str) -> set[str]:
        """Vars ``half`` reads."""
        return self.reads[half]


@dataclass
class _Tag:
    """A name that is no storage: ``kind`` is ``table``, ``inst`` (extern or sub-block instance) or ``action``."""

    kind: str
    node: Any
    scopes: list[dict[str, Any]]


def _leaves(b: Any) -> list[str]:
    """Every var of binding ``b`` (a header: validity, fields, varbit lengths)."""
    if isinstance(b, Leaf):
        return [b.var]
    if isinstance(b, HdrRef):
        return [b.valid, *(v for _n, _w, v in b.fields), *b.varlen.values()]
    if isinstance(b, StructRef | UnionRef):
        return [v for m in b.members.values() for v in _leaves(m)]
    if isinstance(b, StackRef):
        return [b.nxt, *(v for h in b.elems for v in _leaves(h))]
    return []


def _headers(b: Any) -> list[HdrRef]:
    """The headers of binding ``b`` in emit order (a struct's recursively, a stack's elements)."""
    if isinstance(b, HdrRef):
        return [b]
    if isinstance(b, StackRef):
        return list(b.elems)
    if isinstance(b, UnionRef):
        return list(b.members.values())
    if isinstance(b, StructRef):
        return [h for m in b.members.values() for h in _headers(m)]
    return []


_STORAGE = (Leaf, HdrRef, StructRef, UnionRef, StackRef)


class _Walker:
    """One walk over the blocks of a program (see :func:`def_use`)."""

    def __init__(self, prog: ir.Program, effects: dict[str, Any]) -> None:
        self.prog = prog
        self.effects = effects
        self.du = DefUse()
        self.half = "ingress"
        #: (half, header) of every emit
        self.emits: list[tuple[str, HdrRef]] = []
        self.depth = 0

    # -- names
    def lookup(self, scopes: list[dict[str, Any]], name: str) -> Any:
        for sc in reversed(scopes):
            if name in sc:
                return sc[name]
        for inst in self.prog.instances:
            if inst.name == name:
                return _Tag("inst", inst, [])
        if name in self.prog.actions:
            return _Tag("action", self.prog.actions[name], [])
        return LOCAL

    def path(self, e: ir.Expr, scopes) -> list[Any]:
        """What the path ``e`` may denote (storage bindings, packets, tags); reads the vars that choose
        among several (a stack's nextIndex, a run-time index)."""
        if isinstance(e, ir.Name):
            b = self.lookup(scopes, e.name)
            return [] if b is LOCAL else [b]
        if isinstance(e, ir.Member):
            out: list[Any] = []
            for b in self.path(e.expr, scopes):
                if isinstance(b, StructRef | UnionRef):
                    if e.name in b.members:
                        out.append(b.members[e.name])
                elif isinstance(b, HdrRef):
                    for fname, _w, var in b.fields:
                        if fname == e.name:
                            out.append(Leaf(var, None))
                            if fname in b.varlen:
                                out.append(Leaf(b.varlen[fname], None))
                elif isinstance(b, StackRef):
                    if e.name in ("next", "last"):
                        self.read([b.nxt])
                        out.extend(b.elems)
                    elif e.name == "lastIndex":
                        self.read([b.nxt])
                elif isinstance(b, _Tag | PacketRef):
                    out.append(("member", b, e.name))
            return out
        if isinstance(e, ir.Index):
            objs = self.path(e.expr, scopes)
            out = []
            for b in objs:
                if isinstance(b, StructRef) and b.type.name.startswith("tuple<") and isinstance(e.index, ir.Lit):
                    if str(e.index.value) in b.members:
                        out.append(b.members[str(e.index.value)])
                elif isinstance(b, StackRef):
                    if isinstance(e.index, ir.Lit) and 0 <= e.index.value < len(b.elems):
                        out.append(b.elems[e.index.value])
                    else:
                        out.extend(b.elems)
            if not isinstance(e.index, ir.Lit):
                self.expr(e.index, scopes)
            return out
        return []

    # -- effects
    def read(self, vars_: list[str]) -> None:
        self.du.reads[self.half].update(vars_)

    def write(self, b: Any) -> None:
        self.du.other_writes.update(_leaves(b))
        if isinstance(b, HdrRef):
            self.du.other_writes.update(b.siblings)

    def write_path(self, e: ir.Expr, scopes) -> None:
        if isinstance(e, ir.Slice):  # a slice keeps the other bits: read and written
            self.expr(e.expr, scopes)
            e = e.expr
        for b in self.path(e, scopes):
            if isinstance(b, HdrRef) and b.siblings:  # copy into a union member tests its validity
                self.read([b.valid])
            if isinstance(b, _STORAGE):
                self.write(b)

    # -- expressions
    def expr(self, e: ir.Expr | None, scopes) -> None:
        if e is None:
            return
        if isinstance(e, ir.Name | ir.Member | ir.Index):
            objs = self.path(e, scopes)
            storage = [b for b in objs if isinstance(b, _STORAGE)]
            for b in storage:
                self.read(_leaves(b))
            if not objs and isinstance(e, ir.Member | ir.Index):
                self.expr(e.expr, scopes)
            return
        if isinstance(e, ir.Call):
            return self.call(e, scopes)
        if isinstance(e, ir.Slice):
            return self.expr(e.expr, scopes)
        if isinstance(e, ir.Unary | ir.Cast):
            return self.expr(e.expr, scopes)
        if isinstance(e, ir.Binary):
            self.expr(e.left, scopes)
            return self.expr(e.right, scopes)
        if isinstance(e, ir.Cond):
            for x in (e.cond, e.then, e.other):
                self.expr(x, scopes)
            return
        if isinstance(e, ir.ListExpr):
            for x in e.items:
                self.expr(x, scopes)

    def args(self, e: ir.Call, overloads: list[list[ir.Param]] | None, scopes) -> None:
        """The arguments of an extern call by their declared directions (undeclared: read and written)."""
        for i, a in enumerate(e.args):
            if isinstance(a, ir.DontCare):
                continue
            dirs = {ps[i].direction for ps in overloads or [] if i < len(ps)}
            if not dirs:
                dirs = {"inout"}
            if dirs & {"in", "inout", ""}:
                self.expr(a, scopes)
            if dirs & {"out", "inout"}:
                self.write_path(a, scopes)

    def call(self, e: ir.Call, scopes) -> None:
        f = e.func
        if isinstance(f, ir.Name):
            effect = self.effects.get(f.name)
            if effect is not None:
                return effect(self, e, scopes)
            return self.args(e, self.prog.extern_params.get(f.name), scopes)
        if not isinstance(f, ir.Member):
            return
        objs = self.path(f.expr, scopes)
        if not objs:
            self.expr(f.expr, scopes)
        meth = f.name
        for b in objs:
            if isinstance(b, HdrRef):
                if meth == "isValid":
                    self.read([b.valid])
                elif meth == "setValid":
                    self.du.other_writes.update([b.valid, *b.siblings])
                elif meth == "setInvalid":
                    self.du.other_writes.add(b.valid)
            elif isinstance(b, UnionRef):
                if meth == "isValid":
                    self.read([h.valid for h in b.members.values()])
            elif isinstance(b, StackRef):
                if meth in ("push_front", "pop_front"):
                    self.read(_leaves(b))
                    self.write(b)
                    self.expr(e.args[0] if e.args else None, scopes)
            elif isinstance(b, PacketRef):
                self.packet(b, meth, e, scopes)
            elif isinstance(b, _Tag) and b.kind == "table" and meth == "apply":
                self.table(b.node, b.scopes)
            elif isinstance(b, _Tag) and b.kind == "inst":
                inst: ir.Instance = b.node
                self.args(e, self.prog.method_params.get((inst.type.name, meth)), scopes)
                for m in inst.methods.values():  # RegisterAction's apply: its parameters are its own
                    self.stmts(m.body.stmts, scopes + [{p.name: LOCAL for p in m.params}])

    def packet(self, b: PacketRef, meth: str, e: ir.Call, scopes) -> None:
        if meth == "extract" and e.args and not isinstance(e.args[0], ir.DontCare):
            if len(e.args) == 2:  # a varbit header: written field by field
                self.expr(e.args[1], scopes)
                for h in self.path(e.args[0], scopes):
                    self.write(h)
                return
            for h in self.path(e.args[0], scopes):
                if isinstance(h, HdrRef):
                    if h.varlen:
                        self.write(h)
                        continue
                    self.du.extracted.add(h.valid)
                    self.du.other_writes.update(h.siblings)
            return
        if meth == "advance":
            for a in e.args:
                self.expr(a, scopes)
        elif meth == "emit" and e.args:
            for x in self.path(e.args[0], scopes):
                self.emits.extend((self.half, h) for h in _headers(x))

    # -- statements
    def stmts(self, stmts: list[ir.Stmt], scopes) -> None:
        scopes = scopes + [{}]
        for s in stmts:
            self.stmt(s, scopes)

    def stmt(self, s: ir.Stmt, scopes) -> None:
        if isinstance(s, ir.Block):
            return self.stmts(s.stmts, scopes)
        if isinstance(s, ir.Assign):
            self.expr(s.value, scopes)
            return self.write_path(s.target, scopes)
        if isinstance(s, ir.VarDecl):
            self.expr(s.init, scopes)
            scopes[-1][s.name] = LOCAL
            return
        if isinstance(s, ir.ConstDecl):
            scopes[-1][s.name] = LOCAL
            return
        if isinstance(s, ir.If):
            self.expr(s.cond, scopes)
            self.stmts([s.then], scopes)
            if s.other is not None:
                self.stmts([s.other], scopes)
            return
        if isinstance(s, ir.Switch):
            self.expr(s.expr, scopes)
            for _labels, b in s.cases:
                self.stmts(b.stmts, scopes)
            return
        if isinstance(s, ir.CallStmt):
            return self.call(s.call, scopes)
        if isinstance(s, ir.ApplySub):
            for b in self.path(s.inst, scopes):
                if isinstance(b, _Tag) and b.kind == "inst":
                    self.sub_block(b.node)
            for x in s.copy_out:
                self.stmt(x, scopes)

    def sub_block(self, inst: ir.Instance) -> None:
        """The body of a control or parser instantiated in another, in a scope of its own."""
        self.depth += 1
        try:
            if self.depth > 16:
                return
            decl = self.prog.controls.get(inst.type.name) or self.prog.parsers.get(inst.type.name)
            if decl is not None:
                self.block(decl, {p.name: PacketRef("packet_in") if getattr(p.type, "name", "") == "packet_in"
                                  else LOCAL for p in decl.params})
        finally:
            self.depth -= 1

    def table(self, t: ir.Table, scopes) -> None:
        for k in t.keys:
            self.expr(k.expr, scopes)
        for r in t.actions:
            act = r.action
            if act is None:
                tag = self.lookup(scopes, r.name)
                act = tag.node if isinstance(tag, _Tag) and tag.kind == "action" else None
            if act is None:
                continue
            for a in r.args or []:
                self.expr(a, scopes)
            self.stmts(act.body.stmts, scopes + [{p.name: LOCAL for p in act.params}])

    # -- blocks
    def block(self, decl: ir.ControlDecl | ir.ParserDecl, params: dict[str, Any]) -> None:
        """Walk control or parser ``decl`` whose parameters are bound as ``params``."""
        scope = dict(params)
        scopes = [scope]
        if isinstance(decl, ir.ControlDecl):
            for p in decl.ctor_params:
                scope[p.name] = LOCAL
            for inst in decl.instances:
                scope[inst.name] = _Tag("inst", inst, scopes)
        for x in decl.locals:
            if isinstance(x, ir.Instance):
                scope[x.name] = _Tag("inst", x, scopes)
            elif isinstance(x, ir.VarDecl | ir.ConstDecl):
                self.expr(x.init if isinstance(x, ir.VarDecl) else None, scopes)
                scope[x.name] = LOCAL
            elif isinstance(x, ir.Block):
                self.stmt(x, scopes)
        if isinstance(decl, ir.ControlDecl):
            for name, act in decl.actions.items():
                scope[name] = _Tag("action", act, scopes)
            for name, t in decl.tables.items():
                scope[name] = _Tag("table", t, scopes)
            self.stmts(decl.apply.stmts, scopes)
            return
        for st in decl.states.values():
            sc = scopes + [{}]
            for s in st.stmts:
                self.stmt(s, sc)
            for e in st.select or []:
                self.expr(e, sc)
            for case in st.cases:
                for k in case.keys:
                    for x in k[1:]:
                        self.expr(x, sc)


def def_use(prog: ir.Program, blocks: list[tuple[Any, dict[str, Any], str]], effects: dict[str, Any] | None = None,
            arch_reads: dict[str, set[str]] | None = None) -> DefUse:
    """The def-use of the packet state of ``prog`` (lowered by ``passes.lower``).

    ``blocks`` are the ``(declaration, parameter bindings, half)`` the architecture runs, the
    bindings those it allocated (``Ctx.scopes[0]``); ``effects`` maps an extern function name
    to ``f(walker, call, scopes)`` recording what the call reads and writes when its declared
    directions say too much; ``arch_reads`` the vars the architecture's own code reads per
    half (v1model: ``egress_spec`` and ``mcast_grp`` after ingress).
    """
    w = _Walker(prog, effects or {})
    for decl, params, half in blocks:
        w.half = half
        for b in params.values():
            w.du.tracked.update(_leaves(b))
        w.block(decl, params)
    du = w.du
    for half, vars_ in (arch_reads or {}).items():
        du.reads[half].update(vars_)
    for half, h in w.emits:
        if du.untouched(h):
            du.reads[half].add(h.valid)
            du.raw_reads[half].add(h.valid)
        else:
            du.reads[half].update(_leaves(h))
    return du
