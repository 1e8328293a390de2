"""Passes over the IR between the front end and code generation, as p4c's front and mid end.

Each pass is a class named for the one transformation it makes, with ``run(prog) ->
prog``; it returns a new :class:`~.ir.Program` (declarations it changed are new objects,
the front end's program is left as it was, so one program can be compiled several times).
:func:`lower` runs :data:`PASSES` in order; ``runtime.Pipeline`` calls it before an
architecture compiles the program, so every back end (``v1model.py``, ``t2na.py``) sees
the lowered IR. Adding a piece of language semantics is one more pass here.

- :class:`UniqueLocalNames` (p4c ``UniqueNames``): a block's local that shares its name with
  another declaration gets a name of its own, so inlining never captures.
- :class:`ConstantFolding` (p4c ``ConstantFolding``): top-level constants become literals,
  operators over literals one literal of the operator's type.
- :class:`SideEffectOrdering` (p4c ``SideEffectOrdering``): a call with side effects
  inside an expression is evaluated left to right, after the operands before it are read,
  and ``&&``, ``||``, ``?:`` short-circuit (P4_16 spec 8.1 and 8.5).
- :class:`RemoveReturns` (p4c ``RemoveReturns``): a function's ``return`` becomes an
  assignment of its result variable, the statements after it guarded by a flag.
- :class:`InlineFunctions` (p4c ``InlineFunctions``): each function call becomes the
  function's body with copy-in/copy-out of its arguments (P4_16 spec 6.8), so code
  generation never sees a function call.
- :class:`InlineActions` (p4c ``InlineActions``): a direct call of an action likewise, its
  ``exit`` copying out first (spec 12.5); a table's actions stay actions.
- :class:`RemoveActionParameters` (p4c ``RemoveActionParameters``): a table's action gets its
  directional arguments (bound in the table's actions list) as copy-in/copy-out in its body.
- :class:`CopyInCopyOut` (the copy-in/copy-out p4c's ``InlineControls``/``InlineParsers``
  make): ``c.apply(args)`` of a control or parser instantiated inside another becomes
  assignments of its parameters, the apply (:class:`~.ir.ApplySub`) and its copy-out.
- :class:`~.typeinfer.TypeInference` (p4c ``TypeInference``), last: every name resolved and
  every expression typed (``Program.typed``, which code generation reads), P4_16 type errors
  reported with ``FILE:LINE``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from . import ir
from .errors import P4FrontendError
from .typeinfer import TypeInference

__all__ = ["PASSES", "ConstantFolding", "CopyInCopyOut", "InlineActions", "InlineFunctions", "RemoveActionParameters",
           "RemoveReturns", "SideEffectOrdering", "UniqueLocalNames", "has_effect", "lower"]

logger = logging.getLogger(__name__)

#: methods that read state and change nothing (P4_16 core: ``isValid``, ``packet_in.length``,
#: ``lookahead``, ``minSizeInBits``/``minSizeInBytes``)
PURE_METHODS = frozenset({"isValid", "length", "lookahead", "minSizeInBits", "minSizeInBytes"})

#: prefix of the temporaries passes introduce; ``$`` cannot start a P4 identifier
TEMP = "$"


def _children(e: ir.Expr) -> list[ir.Expr]:
    """Sub-expressions of ``e`` in evaluation order."""
    if isinstance(e, ir.Member):
        return [e.expr]
    if isinstance(e, ir.Index):
        return [e.expr, e.index]
    if isinstance(e, ir.Slice):
        return [e.expr]
    if isinstance(e, ir.Call):
        return [e.func, *e.args]
    if isinstance(e, ir.Unary | ir.Cast):
        return [e.expr]
    if isinstance(e, ir.Binary):
        return [e.left, e.right]
    if isinstance(e, ir.Cond):
        return [e.cond, e.then, e.other]
    if isinstance(e, ir.ListExpr):
        return list(e.items)
    return []


def _impure_call(e: ir.Expr) -> bool:
    """Whether ``e`` is a call that may have side effects (functions, actions, extern methods,
    ``t.apply()``); the methods of :data:`PURE_METHODS` have none."""
    if not isinstance(e, ir.Call):
        return False
    return not (isinstance(e.func, ir.Member) and e.func.name in PURE_METHODS)


def has_effect(e: ir.Expr | None) -> bool:
    """Whether evaluating ``e`` may run a call with side effects."""
    if e is None:
        return False
    return _impure_call(e) or any(has_effect(c) for c in _children(e))


def _is_path(e: ir.Expr) -> bool:
    """``a``, ``a.b``, ``a[i]``: a storage location (an argument that may be ``out``/``inout``)."""
    if isinstance(e, ir.Name):
        return True
    if isinstance(e, ir.Member | ir.Index):
        return _is_path(e.expr)
    return False


class _Lowering:
    """One expression being ordered: the statements it needs before it, in ``out``."""

    def __init__(self, owner: SideEffectOrdering) -> None:
        self.owner = owner
        #: a temporary or a short-circuit was needed (else the expression stays as it was)
        self.changed = False

    def temp(self, loc: ir.Loc, t: Any, init: ir.Expr | None, out: list[ir.Stmt]) -> ir.Name:
        name = self.owner.fresh()
        out.append(ir.VarDecl(loc, t, name, init))
        return ir.Name(loc, name)

    def constant(self, e: ir.Expr) -> bool:
        """Whether ``e`` cannot change value: literals, members of enums/errors, top-level
        constants, temporaries (written once) and operators over those."""
        if isinstance(e, ir.Lit | ir.BoolLit | ir.StringLit | ir.TypeMember):
            return True
        if isinstance(e, ir.Name):
            return e.name.startswith(TEMP) or e.name in self.owner.prog.consts
        if isinstance(e, ir.Unary | ir.Cast | ir.Binary | ir.Slice):
            return all(self.constant(c) for c in _children(e))
        return False

    def lower(self, e: ir.Expr, out: list[ir.Stmt], top: bool = False) -> ir.Expr:
        """``e`` without side effects inside it (with ``top``, ``e`` may itself be a call)."""
        if not has_effect(e):
            return e
        loc = e.loc
        if isinstance(e, ir.Member) and e.name in ("hit", "miss") and isinstance(e.expr, ir.Call):
            call = replace(e.expr, args=self.lower_list(e.expr.args, out, paths_stay=True))
            e = replace(e, expr=call)
            return e if top else self.temp(loc, ir.BoolT(), e, out)
        if isinstance(e, ir.Call):
            args = self.lower_list(e.args, out, paths_stay=True, params=self.owner.params_of(e))
            call = replace(e, args=args)
            if top or not _impure_call(e):
                return call
            return self.temp(loc, ir.TypeOfT((call,)), call, out)
        if isinstance(e, ir.Binary) and e.op in ("&&", "||"):
            left = self.lower(e.left, out)
            if not has_effect(e.right):
                return replace(e, left=left)
            # the right operand runs only when the left one does not decide (spec 8.5)
            self.changed = True
            tmp = self.temp(loc, ir.BoolT(), left, out)
            inner: list[ir.Stmt] = []
            inner.append(ir.Assign(loc, tmp, self.lower(e.right, inner, top=True)))
            cond: ir.Expr = tmp if e.op == "&&" else ir.Unary(loc, "!", tmp)
            out.append(ir.If(loc, cond, ir.Block(loc, inner), None))
            return tmp
        if isinstance(e, ir.Cond):
            cond = self.lower(e.cond, out)
            if not (has_effect(e.then) or has_effect(e.other)):
                return replace(e, cond=cond)
            # only the chosen arm runs
            self.changed = True
            tmp = self.temp(loc, ir.TypeOfT((e.then, e.other)), None, out)
            arms = []
            for arm in (e.then, e.other):
                body: list[ir.Stmt] = []
                body.append(ir.Assign(loc, tmp, self.lower(arm, body, top=True)))
                arms.append(ir.Block(loc, body))
            out.append(ir.If(loc, cond, arms[0], arms[1]))
            return tmp
        if isinstance(e, ir.Binary):
            left, right = self.lower_list([e.left, e.right], out)
            return replace(e, left=left, right=right)
        if isinstance(e, ir.Unary | ir.Cast):
            return replace(e, expr=self.lower(e.expr, out))
        if isinstance(e, ir.Slice):
            return replace(e, expr=self.lower(e.expr, out))
        if isinstance(e, ir.Index):
            base, index = self.lower_list([e.expr, e.index], out, paths_stay=True)
            return replace(e, expr=base, index=index)
        if isinstance(e, ir.Member):
            return replace(e, expr=self.lower(e.expr, out))
        if isinstance(e, ir.ListExpr):
            return replace(e, items=self.lower_list(e.items, out))
        return e

    def lower_list(self, items: list[ir.Expr], out: list[ir.Stmt], paths_stay: bool = False,
                   params: list[ir.Param] | None = None) -> list[ir.Expr]:
        """``items`` evaluated left to right: before an item with a side effect runs, the values of
        the items before it are read into temporaries (a call may write what they read).

        ``paths_stay``: items that are storage locations stay as they are (call arguments, which
        may be ``out``/``inout``; copy-in happens at the call). With the callee's ``params``
        known, only its ``out``/``inout`` arguments stay; an ``in`` or directionless one is
        copied into a temporary of the parameter's type, as its copy-in would (spec 6.8).
        """
        results: list[ir.Expr] = []
        for it in items:
            if has_effect(it):
                for j, r in enumerate(results):
                    p = params[j] if params is not None and j < len(params) else None
                    if self.constant(r):
                        continue
                    if paths_stay and _is_path(r) and (p is None or p.direction in ("out", "inout")):
                        continue
                    self.changed = True
                    results[j] = self.temp(r.loc, p.type if p is not None else ir.TypeOfT((r,)), r, out)
            results.append(self.lower(it, out))
        return results


class SideEffectOrdering:
    """Order the side effects of expressions as P4_16 defines (spec 8.1, 8.5; p4c ``SideEffectOrdering``).

    An expression with a call that may have side effects (a function, an extern method, a
    table's ``apply().hit``) becomes statements before it: operands evaluated before the
    call are read into temporaries first (``v + f(v)``, ``x == f(x)`` see ``v``/``x`` as they
    were), the right operand of ``&&``/``||`` runs inside an ``if`` on the left one, and the
    arms of ``?:`` inside an ``if``/``else`` on the condition. An expression whose calls need
    none of that is left as it is, so programs without such expressions compile to the same
    code as before.
    """

    name = "SideEffectOrdering"

    def __init__(self) -> None:
        self.n = 0
        self.prog: ir.Program | None = None
        #: the actions of the control being ordered
        self.actions: dict[str, ir.Action] = {}

    def fresh(self) -> str:
        self.n += 1
        return f"{TEMP}t{self.n}"

    def params_of(self, call: ir.Call) -> list[ir.Param] | None:
        """The parameters of the function or action ``call`` calls (None: an extern, a method)."""
        assert self.prog is not None
        f = call.func
        if not isinstance(f, ir.Name):
            return None
        decl = self.actions.get(f.name) or self.prog.functions.get(f.name) or self.prog.actions.get(f.name)
        return decl.params if decl is not None else None

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        self.actions = {}
        controls = {k: self.control(c) for k, c in prog.controls.items()}
        self.actions = {}
        parsers = {k: self.parser(p) for k, p in prog.parsers.items()}
        actions = {k: replace(a, body=self.block(a.body)) for k, a in prog.actions.items()}
        functions = {k: replace(f, body=self.block(f.body)) for k, f in prog.functions.items()}
        instances = [self.instance(i) for i in prog.instances]
        return replace(prog, controls=controls, parsers=parsers, actions=actions, functions=functions,
                       instances=instances)

    def control(self, c: ir.ControlDecl) -> ir.ControlDecl:
        self.actions = c.actions
        return replace(c, apply=self.block(c.apply),
                       actions={k: replace(a, body=self.block(a.body)) for k, a in c.actions.items()},
                       instances=[self.instance(i) for i in c.instances])

    def parser(self, p: ir.ParserDecl) -> ir.ParserDecl:
        states = {k: replace(st, stmts=self.stmts(st.stmts)) for k, st in p.states.items()}
        locals_ = [self.instance(x) if isinstance(x, ir.Instance) else x for x in p.locals]
        return replace(p, states=states, locals=locals_)

    def instance(self, inst: ir.Instance) -> ir.Instance:
        if not inst.methods:
            return inst
        return replace(inst, methods={k: replace(m, body=self.block(m.body)) for k, m in inst.methods.items()})

    # -- statements
    def block(self, b: ir.Block) -> ir.Block:
        return replace(b, stmts=self.stmts(b.stmts))

    def stmts(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def nested(self, s: ir.Stmt) -> ir.Stmt:
        """A statement in a branch: one statement (a block when lowering made several)."""
        got = self.stmt(s)
        return got[0] if len(got) == 1 else ir.Block(s.loc, got)

    def expr(self, e: ir.Expr, top: bool) -> tuple[list[ir.Stmt], ir.Expr]:
        """The statements ``e`` needs before it and what replaces it (``e`` itself when none)."""
        if not has_effect(e):
            return [], e
        low = _Lowering(self)
        out: list[ir.Stmt] = []
        new = low.lower(e, out, top=top)
        if not low.changed:  # emission's own order (calls first, in order) is the language's here
            return [], e
        return out, new

    def stmt(self, s: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(s, ir.Block):
            return [self.block(s)]
        if isinstance(s, ir.If):
            pre, cond = self.expr(s.cond, top=False)
            other = self.nested(s.other) if s.other is not None else None
            return [*pre, replace(s, cond=cond, then=self.nested(s.then), other=other)]
        if isinstance(s, ir.Switch):
            cases = [(labels, self.block(b)) for labels, b in s.cases]
            e = s.expr
            if isinstance(e, ir.Member) and e.name == "action_run":
                return [replace(s, cases=cases)]
            pre, e = self.expr(e, top=False)
            return [*pre, replace(s, expr=e, cases=cases)]
        if isinstance(s, ir.Assign):
            pre, v = self.expr(s.value, top=True)
            return [*pre, replace(s, value=v)]
        if isinstance(s, ir.VarDecl) and s.init is not None:
            pre, v = self.expr(s.init, top=True)
            return [*pre, replace(s, init=v)]
        if isinstance(s, ir.Return) and s.value is not None:
            pre, v = self.expr(s.value, top=True)
            return [*pre, replace(s, value=v)]
        if isinstance(s, ir.CallStmt):
            pre, call = self.expr(s.call, top=True)
            return [*pre, replace(s, call=call)]
        return [s]


def _wrap(value: int, t: ir.Type | None) -> int:
    """``value`` as a value of type ``t`` (``bit<N>`` modulo 2^N, ``int<N>`` two's complement)."""
    if isinstance(t, ir.BitT):
        return value & ((1 << t.width) - 1)
    if isinstance(t, ir.IntT):
        half = 1 << (t.width - 1)
        return ((value + half) & ((1 << t.width) - 1)) - half
    return value


_FOLDS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
          "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y}


def _declared(node: Any, out: set[str]) -> None:
    """Every name ``node`` (a declaration or statement, recursively) declares."""
    if isinstance(node, ir.ControlDecl | ir.ParserDecl):
        out.update(p.name for p in node.params)
        for x in node.locals:
            _declared(x, out)
        if isinstance(node, ir.ControlDecl):
            out.update(p.name for p in node.ctor_params)
            out.update(i.name for i in node.instances)
            out.update(node.actions)
            out.update(node.tables)
            for a in node.actions.values():
                _declared(a, out)
            _declared(node.apply, out)
            for i in node.instances:
                for m in i.methods.values():
                    _declared(m, out)
        else:
            for st in node.states.values():
                for x in st.stmts:
                    _declared(x, out)
    elif isinstance(node, ir.Action | ir.Function | ir.Method):
        out.update(p.name for p in node.params)
        _declared(node.body, out)
    elif isinstance(node, ir.Instance):
        out.add(node.name)
    elif isinstance(node, ir.VarDecl | ir.ConstDecl):
        out.add(node.name)
    elif isinstance(node, ir.Block):
        for x in node.stmts:
            _declared(x, out)
    elif isinstance(node, ir.If):
        _declared(node.then, out)
        if node.other is not None:
            _declared(node.other, out)
    elif isinstance(node, ir.Switch):
        for _labels, b in node.cases:
            _declared(b, out)


class UniqueLocalNames:
    """Give a block's local variable or constant a name of its own when a declaration of its
    control or parser (a parameter, local, instance, action or table) or a top-level one has
    the same name: what an inlined body could mean by it (p4c ``UniqueNames``).

    ``{ bit<8> k = 9; a(); }`` where action ``a`` reads the control's ``k``: the block's ``k``
    becomes ``k$1`` (uses in its scope too), so inlining ``a``'s body there reads the control's
    ``k``, as the language scopes it. Other locals keep their names (the generated code of
    programs without such a clash does not change). A new name ends in ``$N``, which no P4
    identifier can.
    """

    name = "UniqueLocalNames"

    def __init__(self) -> None:
        self.n = 0
        self.taken: set[str] = set()

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}{TEMP}{self.n}"

    def run(self, prog: ir.Program) -> ir.Program:
        top = set(prog.consts) | set(prog.actions) | set(prog.functions) | set(prog.extern_functions)
        controls = {k: self.control(c, top) for k, c in prog.controls.items()}
        parsers = {k: self.parser(p, top) for k, p in prog.parsers.items()}
        return replace(prog, controls=controls, parsers=parsers)

    def renamer(self, taken: set[str]) -> _Rename:
        return _Rename({}, self.fresh, rename=lambda name: name in taken)

    def control(self, c: ir.ControlDecl, top: set[str]) -> ir.ControlDecl:
        # what an inlined action or function body may name without declaring it
        taken = set(top) | {p.name for p in c.params} | {p.name for p in c.ctor_params}
        taken |= {x.name for x in c.locals} | {i.name for i in c.instances} | set(c.actions) | set(c.tables)
        ren = self.renamer(taken)
        return replace(c, apply=ren.block(c.apply), actions={k: replace(a, body=ren.block(a.body))
                                                             for k, a in c.actions.items()})

    def parser(self, p: ir.ParserDecl, top: set[str]) -> ir.ParserDecl:
        taken = set(top) | {x.name for x in p.params} | {getattr(x, "name", "") for x in p.locals}
        ren = self.renamer(taken)
        states = {}
        for k, st in p.states.items():
            ren.scopes.append({})  # a state's locals are visible in its select
            try:
                stmts = [ren.stmt(x) for x in st.stmts]
                select = [ren.expr(e) for e in st.select] if st.select is not None else None
                cases = [replace(c, keys=[(k2[0], *[ren.expr(x) for x in k2[1:]]) for k2 in c.keys])
                         for c in st.cases]
            finally:
                ren.scopes.pop()
            states[k] = replace(st, stmts=stmts, select=select, cases=cases)
        return replace(p, states=states)


class ConstantFolding:
    """Fold compile-time constants (P4_16 spec 7.1.6.5, 8.6; p4c ``ConstantFolding``).

    A top-level ``const`` of type ``bit<N>``, ``int<N>``, ``int`` or ``bool``, used in a block
    that declares nothing of the same name, becomes its literal; then ``+ - * & | ^`` of two
    literals of one type (or one unsized), ``<<``/``>>``/unary ``-``/``~`` of unsized literals and
    a cast of a literal to ``bit<N>``/``int<N>`` become one literal of the result's type, wrapped
    to its width. Code generation gives those the same code it gave the unfolded expression,
    so the generated program does not change; the pass gives later passes literals to see.
    """

    name = "ConstantFolding"

    def __init__(self) -> None:
        self.prog: ir.Program | None = None
        self.values: dict[str, ir.Expr] = {}
        self.shadow: set[str] = set()

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        self.values = {}
        for name, c in prog.consts.items():
            self.shadow = set()
            v = self.expr(c.value)
            if isinstance(c.type, ir.BoolT) and isinstance(v, ir.BoolLit):
                self.values[name] = v
            elif isinstance(c.type, ir.BitT | ir.IntT | ir.IntLitT) and isinstance(v, ir.Lit):
                t = None if isinstance(c.type, ir.IntLitT) else c.type
                self.values[name] = ir.Lit(v.loc, _wrap(v.value, t), t)
        controls = {k: self.within(c, self.control) for k, c in prog.controls.items()}
        parsers = {k: self.within(p, self.parser) for k, p in prog.parsers.items()}
        actions = {k: self.within(a, lambda a: replace(a, body=self.block(a.body))) for k, a in prog.actions.items()}
        functions = {k: self.within(f, lambda f: replace(f, body=self.block(f.body)))
                     for k, f in prog.functions.items()}
        return replace(prog, controls=controls, parsers=parsers, actions=actions, functions=functions)

    def within(self, decl: Any, fn: Any) -> Any:
        """``fn(decl)`` with the names ``decl`` declares anywhere shadowing the constants."""
        self.shadow = set()
        _declared(decl, self.shadow)
        return fn(decl)

    def control(self, c: ir.ControlDecl) -> ir.ControlDecl:
        return replace(c, apply=self.block(c.apply),
                       actions={k: replace(a, body=self.block(a.body)) for k, a in c.actions.items()})

    def parser(self, p: ir.ParserDecl) -> ir.ParserDecl:
        states = {}
        for k, st in p.states.items():
            sel = [self.expr(e) for e in st.select] if st.select is not None else None
            cases = [replace(c, keys=[(k2[0], *[self.expr(x) for x in k2[1:]]) for k2 in c.keys]) for c in st.cases]
            states[k] = replace(st, stmts=[self.stmt(x) for x in st.stmts], select=sel, cases=cases)
        return replace(p, states=states)

    # -- statements
    def block(self, b: ir.Block) -> ir.Block:
        return replace(b, stmts=[self.stmt(x) for x in b.stmts])

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return self.block(s)
        if isinstance(s, ir.If):
            return replace(s, cond=self.expr(s.cond), then=self.stmt(s.then),
                           other=self.stmt(s.other) if s.other is not None else None)
        if isinstance(s, ir.Switch):
            cases = [([self.expr(x) if x is not None else None for x in labels], self.block(b))
                     for labels, b in s.cases]
            return replace(s, expr=self.expr(s.expr), cases=cases)
        if isinstance(s, ir.Assign):
            return replace(s, target=self.expr(s.target), value=self.expr(s.value))
        if isinstance(s, ir.VarDecl) and s.init is not None:
            return replace(s, init=self.expr(s.init))
        if isinstance(s, ir.ConstDecl):
            return replace(s, value=self.expr(s.value))
        if isinstance(s, ir.Return) and s.value is not None:
            return replace(s, value=self.expr(s.value))
        if isinstance(s, ir.CallStmt):
            return replace(s, call=self.expr(s.call))
        return s

    # -- expressions
    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Name):
            if e.name in self.values and e.name not in self.shadow:
                v = self.values[e.name]
                return replace(v, loc=e.loc)
            return e
        if isinstance(e, ir.Member):
            return replace(e, expr=self.expr(e.expr)) if not isinstance(e.expr, ir.Name) else e
        if isinstance(e, ir.Index):
            return replace(e, expr=self.expr(e.expr), index=self.expr(e.index))
        if isinstance(e, ir.Slice):
            return replace(e, expr=self.expr(e.expr), hi=self.expr(e.hi), lo=self.expr(e.lo))
        if isinstance(e, ir.Call):
            func = e.func if isinstance(e.func, ir.Name) else self.expr(e.func)
            return replace(e, func=func, args=[self.expr(a) for a in e.args])
        if isinstance(e, ir.ListExpr):
            return replace(e, items=[self.expr(a) for a in e.items])
        if isinstance(e, ir.Cond):
            return replace(e, cond=self.expr(e.cond), then=self.expr(e.then), other=self.expr(e.other))
        if isinstance(e, ir.Cast):
            inner = self.expr(e.expr)
            if isinstance(inner, ir.Lit) and isinstance(e.type, ir.BitT | ir.IntT):
                return ir.Lit(e.loc, _wrap(inner.value, e.type), e.type)
            return replace(e, expr=inner)
        if isinstance(e, ir.Unary):
            inner = self.expr(e.expr)
            if isinstance(inner, ir.Lit) and inner.type is None and e.op in ("-", "~"):
                return ir.Lit(e.loc, -inner.value if e.op == "-" else ~inner.value, None)
            return replace(e, expr=inner)
        if isinstance(e, ir.Binary):
            a, b = self.expr(e.left), self.expr(e.right)
            if isinstance(a, ir.Lit) and isinstance(b, ir.Lit):
                if e.op in ("<<", ">>") and a.type is None and b.type is None and b.value >= 0:
                    return ir.Lit(e.loc, a.value << b.value if e.op == "<<" else a.value >> b.value, None)
                if e.op in _FOLDS and (a.type is None or b.type is None or a.type == b.type):
                    t = a.type or b.type
                    return ir.Lit(e.loc, _wrap(_FOLDS[e.op](a.value, b.value), t), t)
            return replace(e, left=a, right=b)
        return e


def _map_children(e: ir.Expr, f: Any) -> ir.Expr:
    """``e`` with ``f`` applied to each sub-expression in evaluation order (a called name stays)."""
    if isinstance(e, ir.Member):
        return replace(e, expr=f(e.expr))
    if isinstance(e, ir.Index):
        return replace(e, expr=f(e.expr), index=f(e.index))
    if isinstance(e, ir.Slice):
        return replace(e, expr=f(e.expr), hi=f(e.hi), lo=f(e.lo))
    if isinstance(e, ir.Call):
        func = e.func if isinstance(e.func, ir.Name) else f(e.func)
        return replace(e, func=func, args=[f(a) for a in e.args])
    if isinstance(e, ir.Unary | ir.Cast):
        return replace(e, expr=f(e.expr))
    if isinstance(e, ir.Binary):
        return replace(e, left=f(e.left), right=f(e.right))
    if isinstance(e, ir.Cond):
        return replace(e, cond=f(e.cond), then=f(e.then), other=f(e.other))
    if isinstance(e, ir.ListExpr):
        return replace(e, items=[f(a) for a in e.items])
    return e


def _has_return(s: ir.Stmt | None) -> bool:
    """Whether statement ``s`` contains a ``return``."""
    if isinstance(s, ir.Return):
        return True
    if isinstance(s, ir.Block):
        return any(_has_return(x) for x in s.stmts)
    if isinstance(s, ir.If):
        return _has_return(s.then) or _has_return(s.other)
    if isinstance(s, ir.Switch):
        return any(_has_return(b) for _labels, b in s.cases)
    return False


class RemoveReturns:
    """Remove ``return`` from function bodies (p4c ``RemoveReturns``).

    ``return e;`` becomes an assignment of ``e`` to the function's result variable
    (:attr:`ir.Function.result`, :data:`RESULT`); a ``return`` that is not the last thing the body
    runs also sets the flag :data:`RETURNED`, and the statements after the one that contains
    it run under ``if (!RETURNED)``. A body whose returns all end it gets no flag. The body is
    then a plain block a caller can inline (:class:`InlineFunctions`).
    """

    name = "RemoveReturns"
    RESULT = f"{TEMP}result"
    RETURNED = f"{TEMP}returned"

    def __init__(self) -> None:
        self.flag = False

    def run(self, prog: ir.Program) -> ir.Program:
        if not prog.functions:
            return prog
        return replace(prog, functions={k: self.function(f) for k, f in prog.functions.items()})

    def function(self, f: ir.Function) -> ir.Function:
        self.flag = False
        stmts = self.stmts(f.body.stmts, tail=True)
        if self.flag:
            stmts = [ir.VarDecl(f.loc, ir.BoolT(), self.RETURNED, ir.BoolLit(f.loc, False)), *stmts]
        return replace(f, body=replace(f.body, stmts=stmts), result=self.RESULT if f.ret is not None else None)

    def stmts(self, stmts: list[ir.Stmt], tail: bool) -> list[ir.Stmt]:
        """``stmts`` without returns; ``tail``: nothing of the body runs after them."""
        out: list[ir.Stmt] = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, ir.Return):
                if s.value is not None:
                    out.append(ir.Assign(s.loc, ir.Name(s.loc, self.RESULT), s.value))
                if not tail:
                    self.flag = True
                    out.append(ir.Assign(s.loc, ir.Name(s.loc, self.RETURNED), ir.BoolLit(s.loc, True)))
                return out  # what follows a return never runs
            if not _has_return(s):
                out.append(s)
                continue
            out.append(self.stmt(s, tail and not rest))
            guarded = self.stmts(rest, tail)
            if guarded:
                cond = ir.Unary(s.loc, "!", ir.Name(s.loc, self.RETURNED))
                out.append(ir.If(s.loc, cond, ir.Block(s.loc, guarded), None))
            return out
        return out

    def nested(self, s: ir.Stmt, tail: bool) -> ir.Stmt:
        got = self.stmts([s], tail)
        return got[0] if len(got) == 1 else ir.Block(s.loc, got)

    def stmt(self, s: ir.Stmt, tail: bool) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return replace(s, stmts=self.stmts(s.stmts, tail))
        if isinstance(s, ir.If):
            other = self.nested(s.other, tail) if s.other is not None else None
            return replace(s, then=self.nested(s.then, tail), other=other)
        if isinstance(s, ir.Switch):
            return replace(s, cases=[(labels, replace(b, stmts=self.stmts(b.stmts, tail))) for labels, b in s.cases])
        return s


class _Rename:
    """Fresh names for a function body's parameters and locals, scope by scope (one inlined copy)."""

    def __init__(self, names: dict[str, str], fresh: Any, rename: Any = None) -> None:
        self.scopes = [names]
        self.fresh = fresh
        #: ``rename(name)``: whether a local of that name gets a fresh one (None: every local)
        self.rename = rename
        #: names the body uses that it does not declare: (name, loc, called)
        self.free: list[tuple[str, ir.Loc, bool]] = []

    def name(self, n: str) -> str | None:
        for sc in reversed(self.scopes):
            if n in sc:
                return sc[n]
        return None

    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Name):
            new = self.name(e.name)
            if new is None:
                self.free.append((e.name, e.loc, False))
                return e
            return replace(e, name=new)
        if isinstance(e, ir.Call) and isinstance(e.func, ir.Name):
            self.free.append((e.func.name, e.loc, True))
        return _map_children(e, self.expr)

    def block(self, b: ir.Block) -> ir.Block:
        self.scopes.append({})
        try:
            return replace(b, stmts=[self.stmt(x) for x in b.stmts])
        finally:
            self.scopes.pop()

    def nested(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return self.block(s)
        self.scopes.append({})
        try:
            return self.stmt(s)
        finally:
            self.scopes.pop()

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return self.block(s)
        if isinstance(s, ir.VarDecl | ir.ConstDecl):
            field = "init" if isinstance(s, ir.VarDecl) else "value"
            v = getattr(s, field)
            v = self.expr(v) if v is not None else None  # the initialiser sees the outer name
            new = self.fresh(s.name) if self.rename is None or self.rename(s.name) else s.name
            self.scopes[-1][s.name] = new
            return replace(s, name=new, **{field: v})
        if isinstance(s, ir.If):
            other = self.nested(s.other) if s.other is not None else None
            return replace(s, cond=self.expr(s.cond), then=self.nested(s.then), other=other)
        if isinstance(s, ir.Switch):
            return replace(s, expr=self.expr(s.expr),
                           cases=[([self.expr(x) if x is not None else None for x in labels], self.block(b))
                                  for labels, b in s.cases])
        if isinstance(s, ir.Assign):
            return replace(s, target=self.expr(s.target), value=self.expr(s.value))
        if isinstance(s, ir.Return) and s.value is not None:
            return replace(s, value=self.expr(s.value))
        if isinstance(s, ir.CallStmt):
            return replace(s, call=self.expr(s.call))
        return s


def _out_lvalue(a: ir.Expr, callee: str, p: ir.Param, fresh: Any, out: list[ir.Stmt]) -> ir.Expr:
    """The location of ``out``/``inout`` argument ``a`` of ``callee``'s parameter ``p``, evaluated
    now: each run-time index in it (``hs[i]``, also under a member or a slice: ``hs[i].f``) is
    read into a fresh temporary declared in ``out`` (name ``fresh("idx")``), and the lvalue
    returned reads the temporary, so the copy-in and the copy-out after the body, which may change
    ``i``, use the same element (P4_16 spec 6.8: the lvalue is evaluated once, left to right with
    the other arguments, before the call). A literal index stays, so ``a`` comes back unchanged
    when it has none to take. Raises :class:`P4FrontendError` when ``a`` is not a variable.
    """
    if not (_is_path(a) or (isinstance(a, ir.Slice) and _is_path(a.expr))):
        raise P4FrontendError(a.loc[0], a.loc[1], f"argument {p.name} of {callee} is {p.direction}: it must be a variable")

    def fix(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Member | ir.Slice):
            inner = fix(e.expr)
            return e if inner is e.expr else replace(e, expr=inner)
        if isinstance(e, ir.Index):
            base, index = fix(e.expr), e.index
            if not isinstance(index, ir.Lit):
                name = fresh("idx")
                out.append(ir.VarDecl(index.loc, ir.TypeOfT((index,)), name, index))
                index = ir.Name(index.loc, name)
            return e if base is e.expr and index is e.index else replace(e, expr=base, index=index)
        return e

    return fix(a)


class InlineFunctions:
    """Replace each call of a function by its body, with copy-in/copy-out (p4c ``InlineFunctions``;
    P4_16 spec 6.8, 10.3).

    Runs after :class:`RemoveReturns` and :class:`SideEffectOrdering`. A call inside an
    expression is taken out of it, in evaluation order, into the statements before the
    statement (SideEffectOrdering has already made that order the language's), and the
    expression reads the function's result variable. The inlined block declares one fresh
    local per parameter: an ``in``/``inout``/directionless one initialised from its argument
    (a copy, also of a header or struct), an ``out`` one uninitialised; after the body, each
    ``out``/``inout`` argument is assigned its local, left to right. The body's own locals get
    fresh names too, so nothing of the caller is captured; a name the body uses without
    declaring it (a top-level constant, a called action or extern) that the caller's block
    declares as well is refused. Functions calling functions are inlined in turn (at most
    16 deep: P4 has no recursion).
    """

    name = "InlineFunctions"
    MAX_DEPTH = 16

    def __init__(self) -> None:
        self.n = 0
        self.prog: ir.Program | None = None
        #: names declared anywhere in the block being rewritten (ConstantFolding's ``_declared``)
        self.shadow: set[str] = set()
        self.owner = ""

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{TEMP}f{self.n}_{base}"

    def run(self, prog: ir.Program) -> ir.Program:
        if not prog.functions:
            return prog
        self.prog = prog
        controls = {k: self.within(c, self.control) for k, c in prog.controls.items()}
        parsers = {k: self.within(p, self.parser) for k, p in prog.parsers.items()}
        actions = {k: self.within(a, lambda a: replace(a, body=self.block(a.body))) for k, a in prog.actions.items()}
        return replace(prog, controls=controls, parsers=parsers, actions=actions)

    def within(self, decl: Any, fn: Any) -> Any:
        self.shadow = set()
        _declared(decl, self.shadow)
        self.owner = decl.name
        return fn(decl)

    def control(self, c: ir.ControlDecl) -> ir.ControlDecl:
        return replace(c, apply=self.block(c.apply), locals=self.locals(c.locals),
                       actions={k: replace(a, body=self.block(a.body)) for k, a in c.actions.items()},
                       instances=[self.instance(i) for i in c.instances])

    def parser(self, p: ir.ParserDecl) -> ir.ParserDecl:
        states = {}
        for k, st in p.states.items():
            stmts = self.stmts(st.stmts)
            select = st.select
            if select is not None:
                pre: list[ir.Stmt] = []
                select = [self.expr(e, pre, 0) for e in select]
                stmts += pre
            states[k] = replace(st, stmts=stmts, select=select)
        locals_ = [self.instance(x) if isinstance(x, ir.Instance) else x for x in p.locals]
        return replace(p, states=states, locals=self.locals(locals_))

    def locals(self, items: list[Any]) -> list[Any]:
        """A control's or parser's locals, a call in an initialiser inlined before its variable
        (the block's statements then run where the locals start, codegen.declare_locals)."""
        out: list[Any] = []
        for x in items:
            out.extend(self.stmt(x, 0) if isinstance(x, ir.VarDecl) else [x])
        return out

    def instance(self, inst: ir.Instance) -> ir.Instance:
        if not inst.methods:
            return inst
        return replace(inst, methods={k: replace(m, body=self.block(m.body)) for k, m in inst.methods.items()})

    # -- statements
    def block(self, b: ir.Block, depth: int = 0) -> ir.Block:
        return replace(b, stmts=self.stmts(b.stmts, depth))

    def stmts(self, stmts: list[ir.Stmt], depth: int = 0) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s, depth))
        return out

    def nested(self, s: ir.Stmt, depth: int) -> ir.Stmt:
        got = self.stmt(s, depth)
        return got[0] if len(got) == 1 else ir.Block(s.loc, got)

    def stmt(self, s: ir.Stmt, depth: int) -> list[ir.Stmt]:
        pre: list[ir.Stmt] = []
        if isinstance(s, ir.Block):
            return [self.block(s, depth)]
        if isinstance(s, ir.If):
            cond = self.expr(s.cond, pre, depth)
            other = self.nested(s.other, depth) if s.other is not None else None
            return pre + [replace(s, cond=cond, then=self.nested(s.then, depth), other=other)]
        if isinstance(s, ir.Switch):
            cases = [(labels, self.block(b, depth)) for labels, b in s.cases]
            e = s.expr
            if not (isinstance(e, ir.Member) and e.name == "action_run"):
                e = self.expr(e, pre, depth)
            return pre + [replace(s, expr=e, cases=cases)]
        if isinstance(s, ir.Assign):
            value = self.expr(s.value, pre, depth)
            return pre + [replace(s, value=value)]
        if isinstance(s, ir.VarDecl) and isinstance(s.type, ir.TypeOfT):
            s = replace(s, type=ir.TypeOfT(tuple(self.typed(e) for e in s.type.exprs)))
        if isinstance(s, ir.VarDecl) and s.init is not None:
            init = self.expr(s.init, pre, depth)
            return pre + [replace(s, init=init)]
        if isinstance(s, ir.Return) and s.value is not None:
            value = self.expr(s.value, pre, depth)
            return pre + [replace(s, value=value)]
        if isinstance(s, ir.CallStmt):
            fn = self.function(s.call)
            if fn is not None:
                args = [self.expr(a, pre, depth) for a in s.call.args]
                got, _result = self.inline(fn, args, s.call.loc, depth)
                return pre + got
            call = self.expr(s.call, pre, depth)
            return pre + [replace(s, call=call)]
        return [s]

    def typed(self, e: ir.Expr) -> ir.Expr:
        """``e`` for the type of a temporary (:class:`ir.TypeOfT`, never evaluated): a call of a
        function with a ``bit<N>``/``int<N>``/``bool`` result becomes a literal of that type."""
        fn = self.function(e)
        if fn is None:
            return _map_children(e, self.typed)
        if isinstance(fn.ret, ir.BitT | ir.IntT):
            return ir.Lit(e.loc, 0, fn.ret)
        if isinstance(fn.ret, ir.BoolT):
            return ir.BoolLit(e.loc, False)
        return e

    def function(self, e: ir.Expr) -> ir.Function | None:
        """The function ``e`` calls, when it calls one the current block does not shadow."""
        assert self.prog is not None
        if isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.name not in self.shadow:
            return self.prog.functions.get(e.func.name)
        return None

    def expr(self, e: ir.Expr, pre: list[ir.Stmt], depth: int) -> ir.Expr:
        """``e`` with its function calls inlined into ``pre`` (evaluation order: operands first)."""
        fn = self.function(e)
        if fn is None:
            return _map_children(e, lambda c: self.expr(c, pre, depth))
        assert isinstance(e, ir.Call)
        args = [self.expr(a, pre, depth) for a in e.args]
        got, result = self.inline(fn, args, e.loc, depth)
        if result is None:
            raise P4FrontendError(e.loc[0], e.loc[1], f"function {fn.name} returns void; it has no value")
        pre.extend(got)
        return result

    def inline(self, fn: ir.Function, args: list[ir.Expr], loc: ir.Loc, depth: int) -> tuple[list[ir.Stmt], ir.Name | None]:
        """The statements of one call of ``fn`` and the name holding its value (None: void)."""
        if depth >= self.MAX_DEPTH:
            raise P4FrontendError(loc[0], loc[1], "function calls nested too deeply")
        if len(args) != len(fn.params):
            raise P4FrontendError(loc[0], loc[1], f"function {fn.name} takes {len(fn.params)} arguments, got {len(args)}")
        out: list[ir.Stmt] = []
        names: dict[str, str] = {}
        result = None
        if fn.ret is not None:
            rname = self.fresh(f"{fn.name}_result")
            out.append(ir.VarDecl(loc, fn.ret, rname, None))
            names[RemoveReturns.RESULT] = rname
            result = ir.Name(loc, rname)
        body: list[ir.Stmt] = []
        copy_out: list[ir.Stmt] = []
        for p, a in zip(fn.params, args, strict=True):
            local = self.fresh(f"{fn.name}_{p.name}")
            names[p.name] = local
            if p.direction in ("out", "inout"):
                a = _out_lvalue(a, fn.name, p, self.fresh, body)
                copy_out.append(ir.Assign(a.loc, a, ir.Name(a.loc, local)))
            body.append(ir.VarDecl(a.loc, p.type, local, None if p.direction == "out" else a))
        ren = _Rename(names, self.fresh)
        renamed = ren.block(fn.body)
        for n, where, called in ren.free:
            if n in self.shadow:
                raise P4FrontendError(where[0], where[1], f"unsupported: function {fn.name} uses {n}, "
                                      f"which {self.owner} declares too")
            if not called and self.prog is not None and n not in self.prog.consts:
                raise P4FrontendError(where[0], where[1], f"unknown name {n}")
        body += self.stmts(renamed.stmts, depth + 1)
        body += copy_out
        out.append(ir.Block(loc, body))
        return out, result


def _exits_copy_out(stmts: list[ir.Stmt], copy_out: list[ir.Stmt]) -> list[ir.Stmt]:
    """``stmts`` with each ``exit`` preceded by ``copy_out`` (spec 12.5: an action's ``out`` and
    ``inout`` arguments are copied out when ``exit`` leaves it)."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Exit):
            out.append(ir.Block(s.loc, [*copy_out, s]))
        elif isinstance(s, ir.Block):
            out.append(replace(s, stmts=_exits_copy_out(s.stmts, copy_out)))
        elif isinstance(s, ir.If):
            then = ir.Block(s.then.loc, _exits_copy_out([s.then], copy_out))
            other = ir.Block(s.other.loc, _exits_copy_out([s.other], copy_out)) if s.other is not None else None
            out.append(replace(s, then=then, other=other))
        elif isinstance(s, ir.Switch):
            out.append(replace(s, cases=[(labels, replace(b, stmts=_exits_copy_out(b.stmts, copy_out)))
                                         for labels, b in s.cases]))
        else:
            out.append(s)
    return out


def _contains_exit(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.Exit):
            return True
        if isinstance(s, ir.Block) and _contains_exit(s.stmts):
            return True
        if isinstance(s, ir.If) and _contains_exit([x for x in (s.then, s.other) if x is not None]):
            return True
        if isinstance(s, ir.Switch) and any(_contains_exit(b.stmts) for _labels, b in s.cases):
            return True
    return False


class InlineActions:
    """Replace each direct call of an action, ``a(args);``, by its body with copy-in/copy-out
    (p4c ``InlineActions``; P4_16 spec 6.8, 12.5).

    The block declares one fresh local per parameter (directionless and ``in``/``inout`` ones
    initialised from the argument, ``out`` ones uninitialised), then runs the body (its locals
    renamed, its ``return``s removed as :class:`RemoveReturns` does, the actions it calls
    inlined in turn, at most 16 deep), then assigns each ``out``/``inout`` argument its local,
    left to right; every ``exit`` in the body runs that copy-out first. The body of an action
    of the control sees the control's names: a local variable of a block around the call with
    the name of one of them is refused rather than captured (likewise a control's declaration
    with the name of one a top-level action uses). A table's actions stay actions (the table's
    dispatch binds their data, :class:`RemoveActionParameters` their arguments); direct calls
    inside them are inlined.
    """

    name = "InlineActions"
    MAX_DEPTH = 16

    def __init__(self) -> None:
        self.n = 0
        self.prog: ir.Program | None = None
        self.actions: dict[str, ir.Action] = {}
        self.local_actions: set[str] = set()
        self.shadow: set[str] = set()
        self.owner = ""
        #: names declared by the blocks around the statement being rewritten
        self.blocks: list[set[str]] = []

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{TEMP}a{self.n}_{base}"

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        controls = {k: self.control(c) for k, c in prog.controls.items()}
        self.actions, self.local_actions, self.shadow, self.owner = dict(prog.actions), set(), set(), ""
        actions = {k: replace(a, body=self.block(a.body)) for k, a in prog.actions.items()}
        return replace(prog, controls=controls, actions=actions)

    def control(self, c: ir.ControlDecl) -> ir.ControlDecl:
        assert self.prog is not None
        self.actions = {**self.prog.actions, **c.actions}
        self.local_actions = set(c.actions)
        self.shadow = set()
        _declared(c, self.shadow)
        self.owner = c.name
        return replace(c, apply=self.block(c.apply),
                       actions={k: replace(a, body=self.block(a.body)) for k, a in c.actions.items()})

    # -- statements
    def block(self, b: ir.Block, depth: int = 0) -> ir.Block:
        self.blocks.append(set())
        try:
            return replace(b, stmts=self.stmts(b.stmts, depth))
        finally:
            self.blocks.pop()

    def stmts(self, stmts: list[ir.Stmt], depth: int) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s, depth))
        return out

    def nested(self, s: ir.Stmt, depth: int) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return self.block(s, depth)
        self.blocks.append(set())
        try:
            got = self.stmt(s, depth)
        finally:
            self.blocks.pop()
        return got[0] if len(got) == 1 else ir.Block(s.loc, got)

    def stmt(self, s: ir.Stmt, depth: int) -> list[ir.Stmt]:
        if isinstance(s, ir.Block):
            return [self.block(s, depth)]
        if isinstance(s, ir.VarDecl | ir.ConstDecl):
            if self.blocks:
                self.blocks[-1].add(s.name)
            return [s]
        if isinstance(s, ir.If):
            other = self.nested(s.other, depth) if s.other is not None else None
            return [replace(s, then=self.nested(s.then, depth), other=other)]
        if isinstance(s, ir.Switch):
            return [replace(s, cases=[(labels, self.block(b, depth)) for labels, b in s.cases])]
        if isinstance(s, ir.CallStmt) and isinstance(s.call.func, ir.Name):
            act = self.actions.get(s.call.func.name)
            if act is not None and not any(s.call.func.name in sc for sc in self.blocks):
                return self.inline(act, s.call.args, s.call.loc, depth)
        return [s]

    def inline(self, act: ir.Action, args: list[ir.Expr], loc: ir.Loc, depth: int) -> list[ir.Stmt]:
        """The block of one call of ``act``."""
        if depth >= self.MAX_DEPTH:
            raise P4FrontendError(loc[0], loc[1], "action calls nested too deeply")
        if len(args) != len(act.params):
            raise P4FrontendError(loc[0], loc[1], f"action {act.name} takes {len(act.params)} arguments, "
                                                  f"got {len(args)}")
        names: dict[str, str] = {}
        body: list[ir.Stmt] = []
        copy_out: list[ir.Stmt] = []
        for p, a in zip(act.params, args, strict=True):
            local = self.fresh(f"{act.name}_{p.name}")
            names[p.name] = local
            if p.direction in ("out", "inout"):
                a = _out_lvalue(a, act.name, p, self.fresh, body)
                copy_out.append(ir.Assign(a.loc, a, ir.Name(a.loc, local)))
            body.append(ir.VarDecl(a.loc, p.type, local, None if p.direction == "out" else a))
        ren = _Rename(names, self.fresh)
        renamed = ren.block(act.body)
        top_level = act.name not in self.local_actions
        for n, where, _called in ren.free:
            if any(n in sc for sc in self.blocks) or (top_level and n in self.shadow):
                raise P4FrontendError(where[0], where[1], f"unsupported: action {act.name} uses {n}, which "
                                      f"{'a block around its call' if not top_level else self.owner} "
                                      "declares too")
        rr = RemoveReturns()
        rr.RETURNED = self.fresh("returned")
        stmts = rr.stmts(renamed.stmts, tail=True)
        if rr.flag:
            stmts = [ir.VarDecl(loc, ir.BoolT(), rr.RETURNED, ir.BoolLit(loc, False)), *stmts]
        saved, self.blocks = self.blocks, []  # the body does not see the caller's blocks
        try:
            stmts = self.stmts(stmts, depth + 1)
        finally:
            self.blocks = saved
        if copy_out and _contains_exit(stmts):
            stmts = _exits_copy_out(stmts, copy_out)
        return [ir.Block(loc, body + stmts + copy_out)]


def _directional(act: ir.Action) -> int:
    """How many of ``act``'s parameters have a direction (they come first, spec 14.1)."""
    return sum(1 for p in act.params if p.direction)


class RemoveActionParameters:
    """Give each table's action its directional arguments as copy-in/copy-out in its body (p4c
    ``RemoveActionParameters``; P4_16 spec 6.8, 14.2.1.2).

    ``actions = { a(hdr.x); }`` binds ``a``'s directional parameters for that table: the entry
    of the actions list gets its own copy of ``a`` (:attr:`ir.ActionRef.action`) whose
    parameters are the action data alone and whose body declares one fresh local per
    directional parameter (initialised from its argument; ``out``: uninitialised), runs the body
    (its ``return``s removed as :class:`RemoveReturns` does), then assigns each ``out``/``inout``
    argument its local, left to right, also before each ``exit`` (spec 12.5). The directional
    arguments that ``default_action`` and ``const entries`` repeat are dropped (the actions list
    binds them). The control plane still sees ``a`` with its action data.
    """

    name = "RemoveActionParameters"

    def __init__(self) -> None:
        self.n = 0

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{TEMP}p{self.n}_{base}"

    def run(self, prog: ir.Program) -> ir.Program:
        controls = {}
        for k, c in prog.controls.items():
            acts = {**prog.actions, **c.actions}
            controls[k] = replace(c, tables={n: self.table(t, acts) for n, t in c.tables.items()})
        return replace(prog, controls=controls)

    def table(self, t: ir.Table, acts: dict[str, ir.Action]) -> ir.Table:
        if not any(r.name in acts and _directional(acts[r.name]) for r in t.actions):
            return t
        refs = [self.localize(t, r, acts[r.name]) if r.name in acts and _directional(acts[r.name]) else r
                for r in t.actions]

        def strip(r: ir.ActionRef | None) -> ir.ActionRef | None:
            if r is None or r.name not in acts or not r.args:
                return r
            return replace(r, args=r.args[_directional(acts[r.name]):])

        entries = t.entries
        if entries is not None:
            entries = [replace(e, action=strip(e.action)) for e in entries]
        return replace(t, actions=refs, default_action=strip(t.default_action), entries=entries)

    def localize(self, t: ir.Table, ref: ir.ActionRef, act: ir.Action) -> ir.ActionRef:
        """Table ``t``'s copy of ``act`` with the directional arguments of ``ref`` bound."""
        nd = _directional(act)
        args = list(ref.args or [])
        if len(args) != nd:
            raise P4FrontendError(ref.loc[0], ref.loc[1], f"table {t.name}: action {act.name} needs its {nd} "
                                  f"directional argument(s) in the actions list, got {len(args)}")
        data = [p.name for p in act.params[nd:]]
        names: dict[str, str] = {}
        body: list[ir.Stmt] = []
        copy_out: list[ir.Stmt] = []
        for p, a in zip(act.params[:nd], args, strict=True):
            local = self.fresh(f"{act.name}_{p.name}")
            names[p.name] = local
            if p.direction in ("out", "inout"):
                a = _out_lvalue(a, act.name, p, self.fresh, body)
                copy_out.append(ir.Assign(a.loc, a, ir.Name(a.loc, local)))
            body.append(ir.VarDecl(a.loc, p.type, local, None if p.direction == "out" else a))
        for a in args:  # the arguments must not read the action's data parameters by accident
            probe = _Rename({}, self.fresh)
            probe.expr(a)
            hit = next((n for n, _l, called in probe.free if not called and n in data), None)
            if hit is not None:
                raise P4FrontendError(a.loc[0], a.loc[1], f"unsupported: an argument of {act.name} in the "
                                      f"actions list uses {hit}, the name of one of its action data parameters")
        ren = _Rename(dict(names, **{d: d for d in data}), self.fresh)
        renamed = ren.block(act.body)
        rr = RemoveReturns()
        rr.RETURNED = self.fresh("returned")
        stmts = rr.stmts(renamed.stmts, tail=True)
        if rr.flag:
            stmts = [ir.VarDecl(act.loc, ir.BoolT(), rr.RETURNED, ir.BoolLit(act.loc, False)), *stmts]
        if copy_out and _contains_exit(stmts):
            stmts = _exits_copy_out(stmts, copy_out)
        local = replace(act, params=act.params[nd:], body=ir.Block(act.body.loc, body + stmts + copy_out))
        return replace(ref, args=None, action=local)


def _zero(loc: ir.Loc, t: ir.Type) -> ir.Expr:
    """The value an uninitialised scalar reads (0, false: as bmv2 leaves it)."""
    return ir.BoolLit(loc, False) if isinstance(t, ir.BoolT) else ir.Lit(loc, 0)


class CopyInCopyOut:
    """Make the copy-in/copy-out of a sub-control's or sub-parser's ``apply`` explicit (P4_16
    spec 6.8: a parameter is never an alias of its argument; 12.5: ``exit`` copies out).

    ``c.apply(a1, a2)`` where ``c`` is a control instantiated in the calling control (or a
    parser in the calling parser) becomes one block: ``c.p1 = a1;`` for each ``in``, ``inout``
    or directionless parameter (``c.p1``, a member of the instance, is the storage of its
    parameter ``p1``), ``out`` ones set as uninitialised (scalars 0/false; headers invalid and
    structs zero, through a fresh local declared without initialiser), left to right; then
    :class:`~.ir.ApplySub` with the copy-out ``a2 = c.p2;`` of each ``out``/``inout``
    argument, which code generation runs when the body ends, when an ``exit`` leaves it and
    when the sub-parser rejects. A sub-parser's ``packet_in`` argument is shared, not copied.
    Raises :class:`P4FrontendError` for a wrong number of arguments or an ``out``/``inout``
    argument that is not a variable.
    """

    name = "CopyInCopyOut"

    def __init__(self) -> None:
        self.n = 0
        self.prog: ir.Program | None = None
        #: instance name -> its control or parser declaration, in the block being rewritten
        self.subs: dict[str, ir.ControlDecl | ir.ParserDecl] = {}

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{TEMP}c{self.n}_{base}"

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        controls = {}
        for k, c in prog.controls.items():
            self.subs = {i.name: prog.controls[i.type.name] for i in c.instances if i.type.name in prog.controls}
            if not self.subs:
                controls[k] = c
                continue
            controls[k] = replace(c, apply=self.block(c.apply),
                                  actions={n: replace(a, body=self.block(a.body)) for n, a in c.actions.items()})
        parsers = {}
        for k, p in prog.parsers.items():
            self.subs = {i.name: prog.parsers[i.type.name] for i in p.locals
                         if isinstance(i, ir.Instance) and i.type.name in prog.parsers}
            if not self.subs:
                parsers[k] = p
                continue
            parsers[k] = replace(p, states={n: replace(st, stmts=self.stmts(st.stmts)) for n, st in p.states.items()})
        return replace(prog, controls=controls, parsers=parsers)

    def block(self, b: ir.Block) -> ir.Block:
        return replace(b, stmts=self.stmts(b.stmts))

    def stmts(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        return [self.stmt(s) for s in stmts]

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Block):
            return self.block(s)
        if isinstance(s, ir.If):
            return replace(s, then=self.stmt(s.then), other=self.stmt(s.other) if s.other is not None else None)
        if isinstance(s, ir.Switch):
            return replace(s, cases=[(labels, self.block(b)) for labels, b in s.cases])
        if isinstance(s, ir.CallStmt):
            f = s.call.func
            if isinstance(f, ir.Member) and f.name == "apply" and isinstance(f.expr, ir.Name) \
                    and f.expr.name in self.subs:
                return self.apply(f.expr, self.subs[f.expr.name], s.call.args, s.call.loc)
        return s

    def apply(self, inst: ir.Name, decl: ir.ControlDecl | ir.ParserDecl, args: list[ir.Expr],
              loc: ir.Loc) -> ir.Stmt:
        """The block of one ``inst.apply(args)``."""
        if len(args) != len(decl.params):
            raise P4FrontendError(loc[0], loc[1], f"{decl.name}.apply takes {len(decl.params)} arguments, "
                                                  f"got {len(args)}")
        body: list[ir.Stmt] = []
        packets: list[ir.Expr] = []
        copy_out: list[ir.Stmt] = []
        for p, a in zip(decl.params, args, strict=True):
            if isinstance(decl, ir.ParserDecl) and getattr(p.type, "name", "") == "packet_in":
                packets.append(a)
                continue
            param = ir.Member(a.loc, inst, p.name)
            if p.direction in ("out", "inout"):
                a = _out_lvalue(a, f"{decl.name}.apply", p, self.fresh, body)
                copy_out.append(ir.Assign(a.loc, a, ir.Member(a.loc, inst, p.name)))
            if p.direction == "out":
                if isinstance(p.type, ir.HeaderT | ir.StructT | ir.StackT | ir.UnionT):
                    undef = self.fresh(p.name)
                    body.append(ir.VarDecl(a.loc, p.type, undef, None))
                    body.append(ir.Assign(a.loc, param, ir.Name(a.loc, undef)))
                else:
                    body.append(ir.Assign(a.loc, param, _zero(a.loc, p.type)))
            else:
                body.append(ir.Assign(a.loc, param, a))
        body.append(ir.ApplySub(loc, inst, packets, copy_out))
        return ir.Block(loc, body)


#: the passes :func:`lower` runs, in order
PASSES: tuple[type, ...] = (UniqueLocalNames, ConstantFolding, SideEffectOrdering, RemoveReturns, InlineFunctions,
                            InlineActions, RemoveActionParameters, CopyInCopyOut, TypeInference)


def lower(prog: ir.Program) -> ir.Program:
    """``prog`` after every pass of :data:`PASSES` (a new program; ``prog`` is unchanged)."""
    for cls in PASSES:
        prog = cls().run(prog)
        logger.debug("pass %s done", cls.name)
    return prog
