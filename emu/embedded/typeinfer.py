"""Type inference (p4c ``TypeInference``): every name resolved, every expression typed, before emission.

:class:`TypeInference` is the last pass of ``passes.PASSES``. It walks the lowered program
in the scopes code generation will compile it in (a parser's or control's parameters, its
constructor parameters, instances, locals, actions and tables, each block's locals, a
table action's data) and gives each expression its P4_16 type: ``bit<N>`` and ``int<N>``
with their widths (and, for a ``type`` declaration, its name: ``BitT.newtype``), ``bool``,
``int`` (an unsized literal), ``error``, enums, headers, unions, structs, stacks, and the
declared return type of an extern method (its type parameters bound by the instance's type
arguments). The result is :class:`Typed`, ``Program.typed``, which ``codegen.CodeGen`` reads:
``typed.of(e)`` is the type of expression ``e``, ``typed.decl(s)`` that of a temporary
``VarDecl`` of type ``ir.TypeOfT``.

Type errors are :class:`~.errors.P4FrontendError` naming ``FILE:LINE`` as the front end's:
operators on operands of the wrong types (P4_16 spec 8.x), a condition that is not ``bool``,
a bad slice, unknown names, unknown ``error``/enum members, and two that p4c gives and code
generation never checked: ``lastIndex`` of a header stack outside a parser (spec 8.18) and a
``select`` key whose type is a ``type`` declaration (p4c: not a type ``select`` accepts).
What depends on a constant's value (which casts are allowed, slice bounds that are not
literals, literal conversion in assignments) and a missing header/struct member (named with
its storage path) code generation still checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from . import ir
from .errors import P4FrontendError

__all__ = ["TypeInference", "Typed", "type_text"]

Scopes = list[dict[str, Any]]


def type_text(t: Any) -> str:
    """The P4 spelling of type ``t`` for messages (``bit<8>``, ``int``, a header's name)."""
    if isinstance(t, ir.BitT):
        return f"bit<{t.width}>"
    if isinstance(t, ir.IntT):
        return f"int<{t.width}>"
    if isinstance(t, ir.BoolT):
        return "bool"
    if isinstance(t, ir.IntLitT):
        return "int"
    if isinstance(t, ir.ErrorT):
        return "error"
    return getattr(t, "name", type(t).__name__)


def _text(e: ir.Expr) -> str:
    """Source-like text of a path expression for messages (``hdr.hops.lastIndex``)."""
    if isinstance(e, ir.Name):
        return e.name
    if isinstance(e, ir.Member):
        return f"{_text(e.expr)}.{e.name}"
    if isinstance(e, ir.Index):
        return f"{_text(e.expr)}[{_text(e.index)}]"
    if isinstance(e, ir.Lit):
        return str(e.value)
    return type(e).__name__


@dataclass
class Typed:
    """The result of :class:`TypeInference`: expression and declaration types by node identity
    (the node itself is kept with its type, so an id is never mistaken for another node's)."""

    exprs: dict[int, tuple[ir.Expr, Any]] = field(default_factory=dict)
    decls: dict[int, tuple[ir.VarDecl, Any]] = field(default_factory=dict)

    def of(self, e: ir.Expr) -> Any:
        """The type of ``e`` (None: not a value, or a node the pass did not see)."""
        hit = self.exprs.get(id(e))
        return hit[1] if hit is not None and hit[0] is e else None

    def decl(self, s: ir.VarDecl) -> Any:
        """The type of a temporary ``s`` whose declared type is ``ir.TypeOfT``."""
        hit = self.decls.get(id(s))
        return hit[1] if hit is not None and hit[0] is s else None


# kinds of names that are not values: (kind, declaration)
@dataclass(frozen=True)
class _Obj:
    kind: str  # "table", "action", "instance", "control", "parser", "packet", "value_set"
    decl: Any = None


_VALUE = (ir.BitT, ir.IntT, ir.BoolT, ir.ErrorT, ir.EnumT, ir.IntLitT, ir.VarbitT,
          ir.HeaderT, ir.UnionT, ir.StructT, ir.StackT)


class TypeInference:
    """Resolve and type the program (see the module docstring); ``run`` returns the program with
    ``typed`` set, its declarations unchanged."""

    name = "TypeInference"

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        self.typed = Typed()
        self.kind = "control"
        self.ctor_args = False
        glob: dict[str, Any] = {}
        for c in prog.consts.values():
            self.expr(c.value, [])
        for p in prog.parsers.values():
            self.block_decl(p, "parser", glob)
        for c in prog.controls.values():
            self.block_decl(c, "control", glob)
        return replace(prog, typed=self.typed)

    # ---------------------------------------------------------------- helpers
    def fail(self, loc: ir.Loc, msg: str):
        raise P4FrontendError(loc[0], loc[1], msg)

    def rec(self, e: ir.Expr, t: Any) -> Any:
        self.typed.exprs[id(e)] = (e, t)
        return t

    def lookup(self, scopes: Scopes, name: str) -> Any:
        for sc in reversed(scopes):
            if name in sc:
                return sc[name]
        c = self.prog.consts.get(name)
        if c is not None:
            return ("const", c.type if not isinstance(c.type, ir.BoolT) else ir.BoolT(), None)
        return None

    # ---------------------------------------------------------------- blocks
    def param_binding(self, p: ir.Param) -> Any:
        name = getattr(p.type, "name", "")
        if isinstance(p.type, ir.NamedT) and name in ("packet_in", "packet_out"):
            return _Obj("packet", name)
        if isinstance(p.type, _VALUE):
            return ("var", p.type)
        return _Obj("instance", p.type)

    def block_decl(self, decl: ir.ParserDecl | ir.ControlDecl, kind: str, glob: dict[str, Any]) -> None:
        """A parser's or control's declarations and bodies, in the order code generation meets them."""
        self.kind = kind
        scope: dict[str, Any] = dict(glob)
        for p in decl.params:
            scope[p.name] = self.param_binding(p)
        for cp in getattr(decl, "ctor_params", []):
            scope[cp.name] = ("const", cp.type, None)
        scopes = [scope]
        for inst in getattr(decl, "instances", []):
            self.instance(inst, scopes)
        for loc_decl in decl.locals:
            if isinstance(loc_decl, ir.Instance):
                self.instance(loc_decl, scopes)
            else:
                self.stmt(loc_decl, scopes)
        if isinstance(decl, ir.ParserDecl):
            for st in decl.states.values():
                self.state(st, scopes)
            return
        for act in decl.actions.values():
            scope[act.name] = _Obj("action", act)
        for t in decl.tables.values():
            self.table(decl, t, scopes)
            scope[t.name] = _Obj("table", t)
        self.stmt(decl.apply, scopes)

    def instance(self, inst: ir.Instance, scopes: Scopes) -> None:
        tn = inst.type.name
        self.ctor_args = True  # an unknown name here: the architecture says what the argument must be
        try:
            for a in inst.args:
                self.expr(a, scopes)
        finally:
            self.ctor_args = False
        if tn in self.prog.controls:
            kind = _Obj("control", self.prog.controls[tn])
        elif tn in self.prog.parsers:
            kind = _Obj("parser", self.prog.parsers[tn])
        elif tn == "value_set":
            kind = _Obj("value_set", inst)
        else:
            kind = _Obj("instance", inst.type)
        for m in inst.methods.values():  # RegisterAction's apply: compiled where execute() is called
            sc = {p.name: self.param_binding(p) for p in m.params}
            self.stmt(m.body, scopes + [sc])
        scopes[-1][inst.name] = kind

    def table(self, decl: ir.ControlDecl, t: ir.Table, scopes: Scopes) -> None:
        for k in t.keys:
            self.expr(k.expr, scopes)
        refs = list(t.actions) + ([t.default_action] if t.default_action is not None else [])
        for ref in refs:
            for a in ref.args or []:
                self.expr(a, scopes)
        for ent in t.entries or []:
            for k in ent.keys:
                for x in k[1:]:
                    if isinstance(x, ir.Expr):
                        self.expr(x, scopes)
            for a in ent.action.args or []:
                self.expr(a, scopes)
        if isinstance(t.implementation, ir.Ctor):
            for a in t.implementation.args:
                self.expr(a, scopes)
        seen: set[int] = set()
        for ref in t.actions:
            act = ref.action or decl.actions.get(ref.name) or self.prog.actions.get(ref.name)
            if act is None or id(act) in seen:
                continue
            seen.add(id(act))
            sc = {p.name: self.param_binding(p) for p in act.params}
            self.stmt(act.body, scopes + [sc])

    def state(self, st: ir.ParserState, scopes: Scopes) -> None:
        sc = scopes + [{}]
        for s in st.stmts:
            self.stmt(s, sc)
        if st.select is None:
            return
        for e in st.select:
            t = self.expr(e, sc)
            if getattr(t, "newtype", None):
                self.fail(e.loc, f"select key {_text(e)} is of type {t.newtype}, a `type` declaration, which select "
                                 f"does not accept (as p4c): cast it to {type_text(replace(t, newtype=None))}")
        for case in st.cases:
            for k in case.keys:
                for x in k[1:]:
                    if isinstance(x, ir.Expr):
                        b = self.lookup(sc, x.name) if isinstance(x, ir.Name) else None
                        if isinstance(b, _Obj) and b.kind == "value_set":
                            continue
                        self.expr(x, sc)

    # ---------------------------------------------------------------- statements
    def stmt(self, s: ir.Stmt | ir.Block, scopes: Scopes) -> None:
        if isinstance(s, ir.Block):
            sc = scopes + [{}]
            for x in s.stmts:
                self.stmt(x, sc)
        elif isinstance(s, ir.VarDecl):
            t = s.type
            if s.init is not None:
                ti = self.expr(s.init, scopes)
                if isinstance(t, ir.TypeOfT):
                    t = ti
            elif isinstance(t, ir.TypeOfT):
                t = ir.IntLitT()
                for x in t_exprs(s.type):
                    t = self.expr(x, scopes)
                    if not isinstance(t, ir.IntLitT):
                        break
                if isinstance(t, ir.IntLitT):
                    self.fail(s.loc, "cannot tell the width of this expression (cast one operand)")
            if isinstance(s.type, ir.TypeOfT):
                self.typed.decls[id(s)] = (s, t)
            scopes[-1][s.name] = ("var", t)
        elif isinstance(s, ir.ConstDecl):
            self.expr(s.value, scopes)
            scopes[-1][s.name] = ("const", s.type, None)
        elif isinstance(s, ir.Assign):
            self.expr(s.target, scopes)
            self.expr(s.value, scopes)
        elif isinstance(s, ir.If):
            c = self.expr(s.cond, scopes)
            if c is not None and not isinstance(c, ir.BoolT):
                self.fail(s.loc, "type error: if condition is not bool")
            self.stmt(ir.Block(s.loc, [s.then]), scopes)
            if s.other is not None:
                self.stmt(ir.Block(s.loc, [s.other]), scopes)
        elif isinstance(s, ir.CallStmt):
            self.expr(s.call, scopes)
        elif isinstance(s, ir.Return):
            if s.value is not None:
                self.expr(s.value, scopes)
        elif isinstance(s, ir.ApplySub):  # passes.CopyInCopyOut
            self.expr(s.inst, scopes)
            for x in s.packets:
                self.expr(x, scopes)
            for x in s.copy_out:
                self.stmt(x, scopes)
        elif isinstance(s, ir.Switch):
            e = s.expr
            action_run = isinstance(e, ir.Member) and e.name == "action_run" and isinstance(e.expr, ir.Call)
            if action_run:
                self.expr(e.expr, scopes)
            else:
                self.expr(e, scopes)
            for labels, block in s.cases:
                if not action_run:
                    for lab in labels:
                        if lab is not None:
                            self.expr(lab, scopes)
                self.stmt(block, scopes)

    # ---------------------------------------------------------------- expressions
    def expr(self, e: ir.Expr, scopes: Scopes) -> Any:
        """The type of ``e`` (recorded); None for what is not a value (a table, an extern, a list)."""
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            return None
        return self.rec(e, fn(e, scopes))

    def e_Lit(self, e: ir.Lit, scopes) -> Any:
        return e.type or ir.IntLitT()

    def e_BoolLit(self, e: ir.BoolLit, scopes) -> Any:
        return ir.BoolT()

    def e_ListExpr(self, e: ir.ListExpr, scopes) -> Any:
        for it in e.items:
            self.expr(it, scopes)
        return None

    def e_Name(self, e: ir.Name, scopes) -> Any:
        """What the name is bound to in the innermost scope that declares it (a value's type, or a
        table, action, instance, packet: an object)."""
        b = self.lookup(scopes, e.name)
        if b is None and not self.ctor_args:
            self.fail(e.loc, f"unknown name {e.name}")
        if isinstance(b, tuple):
            return b[1]
        return b

    def e_TypeMember(self, e: ir.TypeMember, scopes) -> Any:
        if e.type_name == "error":
            if e.member not in self.prog.errors:
                self.fail(e.loc, f"unknown error {e.member}")
            return ir.ErrorT()
        t = self.prog.types.get(e.type_name)
        ser = self.prog.ser_enums.get(e.type_name)
        if ser is not None and e.member in ser:
            return t
        if isinstance(t, ir.EnumT) and e.member in t.members:
            return t
        self.fail(e.loc, f"unknown member {e.type_name}.{e.member}")

    def e_Member(self, e: ir.Member, scopes) -> Any:
        if e.name in ("hit", "miss") and isinstance(e.expr, ir.Call):
            self.expr(e.expr, scopes)
            return ir.BoolT()
        base = self.expr(e.expr, scopes)
        if isinstance(base, ir.HeaderT | ir.StructT | ir.UnionT):
            ft = dict(base.fields).get(e.name)
            if ft is None:
                return None  # code generation names the missing member with its storage path
            return ft
        if isinstance(base, ir.StackT):
            if e.name in ("next", "last"):
                return base.elem
            if e.name == "lastIndex":
                if self.kind != "parser":
                    self.fail(e.loc, f"{_text(e)}: lastIndex of a header stack is defined only in a parser "
                                     "(P4_16 spec 8.18; p4c refuses it too)")
                return ir.BitT(32)
            if e.name == "size":
                return ir.BitT(32)
        if isinstance(base, _Obj) and base.kind in ("control", "parser"):  # passes.CopyInCopyOut: c.param
            t = next((p.type for p in base.decl.params if p.name == e.name), None)
            return t if isinstance(t, _VALUE) else None
        return None

    def e_Index(self, e: ir.Index, scopes) -> Any:
        base = self.expr(e.expr, scopes)
        self.expr(e.index, scopes)
        if isinstance(base, ir.StackT):
            return base.elem
        if isinstance(base, ir.StructT) and base.name.startswith("tuple<") and isinstance(e.index, ir.Lit):
            return dict(base.fields).get(str(e.index.value))
        return None

    def e_Slice(self, e: ir.Slice, scopes) -> Any:
        """``x[hi:lo]`` is a ``bit<hi - lo + 1>`` (spec 8.6); the bounds are literals after
        ConstantFolding (code generation refuses others)."""
        t = self.expr(e.expr, scopes)
        self.expr(e.hi, scopes)
        self.expr(e.lo, scopes)
        if not isinstance(e.hi, ir.Lit) or not isinstance(e.lo, ir.Lit):
            return None
        hi, lo = e.hi.value, e.lo.value
        if t is not None and (not isinstance(t, ir.BitT | ir.IntT) or not (0 <= lo <= hi < t.width)):
            self.fail(e.loc, "bad slice")
        return ir.BitT(hi - lo + 1)

    def e_Cast(self, e: ir.Cast, scopes) -> Any:
        self.expr(e.expr, scopes)
        return e.type

    def e_Unary(self, e: ir.Unary, scopes) -> Any:
        """``!`` on ``bool``; ``-``, ``~`` on ``bit<N>``, ``int<N>``, ``int``: the operand's type."""
        t = self.expr(e.expr, scopes)
        if t is None:  # not a value: code generation names it
            return None
        if e.op == "!":
            if not isinstance(t, ir.BoolT):
                self.fail(e.loc, "type error: ! needs bool")
        elif not isinstance(t, ir.BitT | ir.IntT | ir.IntLitT):
            self.fail(e.loc, f"type error: {e.op} on {type_text(t)}")
        return t

    def e_Binary(self, e: ir.Binary, scopes) -> Any:
        """The operator's result type (P4_16 spec 8.2-8.7); an unsized literal takes the type of the
        other operand, other operands must agree."""
        a, b = self.expr(e.left, scopes), self.expr(e.right, scopes)
        op = e.op
        if a is None or b is None:  # not a value: code generation names it
            return None
        if op in ("&&", "||"):
            if not (isinstance(a, ir.BoolT) and isinstance(b, ir.BoolT)):
                self.fail(e.loc, f"type error: {op} needs bool operands")
            return ir.BoolT()
        if op == "++":
            if not (isinstance(a, ir.BitT) and isinstance(b, ir.BitT)):
                self.fail(e.loc, "type error: ++ needs bit<N> operands")
            return ir.BitT(a.width + b.width)
        if op in ("<<", ">>"):
            if not isinstance(a, ir.BitT | ir.IntT | ir.IntLitT):  # int: code generation folds it or refuses
                self.fail(e.loc, f"type error: {op} on {type_text(a)}")
            return a
        t = self.unify(a, b, e.loc, op)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if op not in ("==", "!=") and not isinstance(t, ir.BitT | ir.IntT | ir.IntLitT):
                self.fail(e.loc, f"type error: {op} on {type_text(t)}")
            return ir.BoolT()
        if isinstance(t, ir.BoolT) or not isinstance(t, ir.BitT | ir.IntT | ir.IntLitT):
            self.fail(e.loc, f"type error: {op} on {type_text(t)}")
        if op in ("|+|", "|-|") and not isinstance(t, ir.BitT | ir.IntT):
            self.fail(e.loc, f"type error: {op} needs bit<N> or int<N> operands")
        return t

    def e_Cond(self, e: ir.Cond, scopes) -> Any:
        self.expr(e.cond, scopes)
        a, b = self.expr(e.then, scopes), self.expr(e.other, scopes)
        if a is None or b is None:
            return None
        return self.unify(a, b, e.loc, "?:")

    def unify(self, a: Any, b: Any, loc: ir.Loc, op: str) -> Any:
        """The common type of two operands: an unsized literal takes the other's type."""
        if isinstance(a, ir.IntLitT):
            return b
        if isinstance(b, ir.IntLitT):
            return a
        if a != b:
            self.fail(loc, f"type error: {type_text(a)} {op} {type_text(b)}")
        return a

    def e_Ctor(self, e: ir.Ctor, scopes) -> Any:
        for a in e.args:
            self.expr(a, scopes)
        return None

    def e_Call(self, e: ir.Call, scopes) -> Any:
        f = e.func
        base: Any = None
        if isinstance(f, ir.Member):
            base = self.expr(f.expr, scopes)
        for a in e.args:
            self.expr(a, scopes)
        if not isinstance(f, ir.Member):
            return None
        m = f.name
        if isinstance(base, ir.HeaderT | ir.UnionT) and m == "isValid":
            return ir.BoolT()
        if isinstance(base, ir.HeaderT) and m in ("minSizeInBits", "minSizeInBytes"):
            return ir.IntLitT()
        if isinstance(base, _Obj) and base.kind == "packet" and base.decl == "packet_in":
            if m == "length":
                return ir.BitT(32)
            if m == "lookahead" and len(e.type_args) == 1:
                return e.type_args[0]
        if isinstance(base, _Obj) and base.kind == "table" and m == "apply":
            return None
        if isinstance(base, _Obj) and base.kind == "instance" and isinstance(base.decl, ir.NamedT):
            return self.method_type(base.decl, m)
        return None

    def method_type(self, t: ir.NamedT, meth: str) -> Any:
        """The declared return type of ``t``'s method ``meth``, its type parameters bound by ``t.args``."""
        ret = self.prog.method_types.get((t.name, meth))
        if ret is None:
            return None
        params = self.prog.extern_type_params.get(t.name, ())
        if isinstance(ret, ir.NamedT) and ret.name in params:
            i = params.index(ret.name)
            ret = t.args[i] if i < len(t.args) else None  # ``_`` (ir.NamedT("_")) binds no type
        return ret if isinstance(ret, _VALUE) else None



def t_exprs(t: ir.TypeOfT) -> tuple:
    return t.exprs
