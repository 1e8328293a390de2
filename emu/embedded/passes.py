"""Passes over the IR between the front end and code generation, as p4c's front and mid end.

Each pass is a class named for the one transformation it makes, with ``run(prog) ->
prog``; it returns a new :class:`~.ir.Program` (declarations it changed are new objects,
the front end's program is left as it was, so one program can be compiled several times).
:func:`lower` runs :data:`PASSES` in order; ``runtime.Pipeline`` calls it before an
architecture compiles the program, so every back end (``v1model.py``, ``t2na.py``) sees
the lowered IR. Adding a piece of language semantics is one more pass here.

- :class:`SideEffectOrdering` (p4c ``SideEffectOrdering``): a call with side effects
  inside an expression is evaluated left to right, after the operands before it are read,
  and ``&&``, ``||``, ``?:`` short-circuit (P4_16 spec 8.1 and 8.5).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from . import ir

__all__ = ["PASSES", "SideEffectOrdering", "has_effect", "lower"]

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
            args = self.lower_list(e.args, out, paths_stay=True)
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

    def lower_list(self, items: list[ir.Expr], out: list[ir.Stmt], paths_stay: bool = False) -> list[ir.Expr]:
        """``items`` evaluated left to right: before an item with a side effect runs, the values of
        the items before it are read into temporaries (a call may write what they read).

        ``paths_stay``: items that are storage locations stay as they are (call arguments, which
        may be ``out``/``inout``; copy-in happens at the call).
        """
        results: list[ir.Expr] = []
        for it in items:
            if has_effect(it):
                for j, r in enumerate(results):
                    if self.constant(r) or (paths_stay and _is_path(r)):
                        continue
                    self.changed = True
                    results[j] = self.temp(r.loc, ir.TypeOfT((r,)), r, out)
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

    def fresh(self) -> str:
        self.n += 1
        return f"{TEMP}t{self.n}"

    def run(self, prog: ir.Program) -> ir.Program:
        self.prog = prog
        controls = {k: self.control(c) for k, c in prog.controls.items()}
        parsers = {k: self.parser(p) for k, p in prog.parsers.items()}
        actions = {k: replace(a, body=self.block(a.body)) for k, a in prog.actions.items()}
        functions = {k: replace(f, body=self.block(f.body)) for k, f in prog.functions.items()}
        instances = [self.instance(i) for i in prog.instances]
        return replace(prog, controls=controls, parsers=parsers, actions=actions, functions=functions,
                       instances=instances)

    def control(self, c: ir.ControlDecl) -> ir.ControlDecl:
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


#: the passes :func:`lower` runs, in order
PASSES: tuple[type, ...] = (SideEffectOrdering,)


def lower(prog: ir.Program) -> ir.Program:
    """``prog`` after every pass of :data:`PASSES` (a new program; ``prog`` is unchanged)."""
    for cls in PASSES:
        prog = cls().run(prog)
        logger.debug("pass %s done", cls.name)
    return prog
