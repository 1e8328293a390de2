"""The IR passes of emu/embedded/passes.py on small programs (their STF programs test the semantics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.embedded import ir, passes
from emu.embedded.errors import P4FrontendError
from emu.embedded.frontend import load_program

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _ingress(prog: ir.Program) -> ir.ControlDecl:
    return prog.controls["I"]


def test_lower_leaves_the_front_ends_program_unchanged() -> None:
    prog = load_program(PROGRAMS / "side_effects.p4")
    before = repr(_ingress(prog).apply)
    low = passes.lower(prog)
    assert repr(_ingress(prog).apply) == before
    assert repr(_ingress(low).apply) != before  # the pass did rewrite something


def test_constant_folding_makes_literals_of_top_level_consts(tmp_path: Path) -> None:
    src = (PROGRAMS / "switch_functions.p4").read_text()
    prog = passes.ConstantFolding().run(load_program(PROGRAMS / "switch_functions.p4"))
    assert "OP_ADD" in src
    # switch (hdr.op.op) { OP_ADD: ... }: the label is now the literal 8w1
    sw = [s for s in _ingress(prog).apply.stmts if isinstance(s, ir.Switch)][1]
    label = sw.cases[0][0][0]
    assert isinstance(label, ir.Lit) and label.value == 1 and label.type == ir.BitT(8)


def test_constant_folding_respects_shadowing_and_widths(tmp_path: Path) -> None:
    p = tmp_path / "fold.p4"
    p.write_text((PROGRAMS / "switch_functions.p4").read_text().replace(
        "const bit<8> OP_MAX = 2;", "const bit<8> OP_MAX = 2;\nconst bit<8> BIG = 250;").replace(
        "mark(hdr.op.trace, 0x80);  // skipped after exit",
        "mark(hdr.op.trace, 0x80);\n        hdr.op.r = BIG + 10;\n        bit<8> OP_ADD = 7;\n        hdr.op.a = OP_ADD;"))
    prog = passes.ConstantFolding().run(load_program(p))
    stmts = _ingress(prog).apply.stmts
    wrapped = stmts[-3]
    assert isinstance(wrapped, ir.Assign) and wrapped.value == ir.Lit(wrapped.value.loc, 4, ir.BitT(8))  # 260 mod 256
    shadowed = stmts[-1]
    assert isinstance(shadowed, ir.Assign) and isinstance(shadowed.value, ir.Name)  # the local, not the const


def test_side_effect_ordering_keeps_expressions_that_need_nothing() -> None:
    prog = load_program(PROGRAMS / "switch_functions.p4")
    low = passes.SideEffectOrdering().run(prog)
    # hdr.op.r = add_sat(a, b) and max8(a, b) + 1: calls first is already the language's order
    assert repr(_ingress(low).apply) == repr(_ingress(prog).apply)


def test_side_effect_ordering_short_circuits_calls() -> None:
    prog = passes.SideEffectOrdering().run(load_program(PROGRAMS / "side_effects.p4"))
    text = repr(_ingress(prog).apply)
    assert "TypeOfT" in text  # temporaries of the operands read before bump()
    assert "Unary(loc=" in text and "op='!'" in text  # || became if (!t) { t = yes(n); }


def _stmts_of(node, cls) -> list:
    """Every statement of class ``cls`` inside ``node`` (a statement or a list of them)."""
    out = []
    todo = list(node) if isinstance(node, list) else [node]
    while todo:
        s = todo.pop()
        if isinstance(s, cls):
            out.append(s)
        if isinstance(s, ir.Block):
            todo.extend(s.stmts)
        elif isinstance(s, ir.If):
            todo.extend(x for x in (s.then, s.other) if x is not None)
        elif isinstance(s, ir.Switch):
            todo.extend(b for _labels, b in s.cases)
    return out


def test_remove_returns_guards_what_follows_an_early_return() -> None:
    prog = passes.RemoveReturns().run(load_program(PROGRAMS / "switch_functions.p4"))
    for f in prog.functions.values():
        assert not _stmts_of(f.body, ir.Return), f.name
    # max8: `if (x > y) { return x; } return y;`: the early return sets the flag, `return y` runs under !flag
    body = prog.functions["max8"].body.stmts
    assert isinstance(body[0], ir.VarDecl) and body[0].name == passes.RemoveReturns.RETURNED
    guard = body[-1]
    assert isinstance(guard, ir.If) and isinstance(guard.cond, ir.Unary) and guard.cond.op == "!"
    assert prog.functions["max8"].result == passes.RemoveReturns.RESULT
    # mark (void, no return) is unchanged and has no result
    assert prog.functions["mark"].result is None and not isinstance(prog.functions["mark"].body.stmts[0], ir.VarDecl)


def test_remove_returns_needs_no_flag_when_every_return_ends_the_body(tmp_path: Path) -> None:
    p = tmp_path / "tail.p4"
    p.write_text((PROGRAMS / "switch_functions.p4").read_text().replace(
        "    if (x > y) {\n        return x;\n    }\n    return y;",
        "    if (x > y) {\n        return x;\n    } else {\n        return y;\n    }"))
    body = passes.RemoveReturns().run(load_program(p)).functions["max8"].body.stmts
    assert len(body) == 1 and isinstance(body[0], ir.If)  # two assignments of the result, no flag
    assert all(isinstance(b.stmts[0], ir.Assign) for b in (body[0].then, body[0].other))


def test_inline_functions_copies_in_and_out_with_fresh_names() -> None:
    prog = load_program(PROGRAMS / "switch_functions.p4")
    low = passes.InlineFunctions().run(passes.RemoveReturns().run(prog))
    calls = [c for c in repr(_ingress(low)).split("Call(")[1:] if "name='mark'" in c.split("args=")[0]]
    assert not calls  # no call of a function is left
    blocks = [b for b in _stmts_of(_ingress(low).apply.stmts, ir.Block)
              if b.stmts and isinstance(b.stmts[0], ir.VarDecl) and "_mark_t" in b.stmts[0].name]
    assert blocks
    b = blocks[0]
    # inout t: a local initialised from the argument, assigned back after the body
    t_decl, v_decl = b.stmts[0], b.stmts[1]
    assert t_decl.name.startswith(passes.TEMP) and t_decl.init is not None
    assert v_decl.name.endswith("_mark_bit_value")
    last = b.stmts[-1]
    assert isinstance(last, ir.Assign) and isinstance(last.value, ir.Name) and last.value.name == t_decl.name
    assert repr(last.target) == repr(t_decl.init)  # the same location is written back


def test_inline_functions_refuses_a_free_name_the_caller_redeclares(tmp_path: Path) -> None:
    """Without ConstantFolding first, the function's K would be the caller's K: refused, not captured."""
    p = tmp_path / "capture.p4"
    p.write_text((PROGRAMS / "switch_functions.p4").read_text().replace(
        "    t = t | bit_value;", "    t = t | bit_value | OP_MAX;").replace(
        "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {",
        "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
        "    bit<8> OP_MAX = 0;"))
    prog = load_program(p)
    with pytest.raises(P4FrontendError, match=r"capture.p4:\d+: unsupported: function mark uses OP_MAX, "
                                              "which I declares too"):
        passes.InlineFunctions().run(passes.RemoveReturns().run(prog))
    passes.lower(prog)  # with ConstantFolding first, mark's OP_MAX is the literal: nothing to capture


@pytest.mark.parametrize(("decls", "body", "message"), [
    ("void f(inout bit<8> x) { x = 1; }", "hdr.h.a = f(hdr.h.b);", "function f returns void; it has no value"),
    ("bit<8> f(in bit<8> x) { return f(x); }", "hdr.h.a = f(hdr.h.b);", "function calls nested too deeply"),
    ("bit<8> f(out bit<8> x) { x = 1; return 2; }", "hdr.h.a = f(hdr.h.b + 1);",
     "argument x of f is out: it must be a variable"),
])
def test_inline_functions_names_what_it_cannot_inline(tmp_path: Path, decls: str, body: str, message: str) -> None:
    from emu.embedded.runtime import Pipeline

    from .p4util import write_program

    path = write_program(tmp_path, "apply { " + body + " }", decls=decls)
    with pytest.raises(P4FrontendError, match=r"prog.p4:\d+: " + message):
        Pipeline(load_program(path))


def test_inline_actions_copies_out_before_every_exit() -> None:
    """outer(hdr.t.a) calls set_and_exit(hdr.t.b, hdr.t.c), which exits: set_and_exit's copy-out,
    then outer's, then the exit (spec 12.5); after inlining no direct action call is left."""
    low = passes.InlineActions().run(load_program(PROGRAMS / "exit_copy_out.p4"))
    apply = _ingress(low).apply
    called = [s.call.func.name for s in _stmts_of(apply.stmts, ir.CallStmt) if isinstance(s.call.func, ir.Name)]
    assert not {"set_and_exit", "outer", "maybe_exit"} & set(called)
    blocks = _stmts_of(apply.stmts, ir.Block)

    def copy_back(s: ir.Stmt) -> bool:
        return isinstance(s, ir.Assign) and isinstance(s.value, ir.Name) and s.value.name.startswith(passes.TEMP)

    exits = [b for b in blocks if b.stmts and isinstance(b.stmts[-1], ir.Exit)]
    assert len(exits) == 3  # set_and_exit twice (directly and in outer), maybe_exit once
    assert all(b.stmts[:-1] and all(copy_back(x) for x in b.stmts[:-1]) for b in exits)
    # in outer: set_and_exit's x and y back, then {outer's z back; exit}
    chained = [b for b in blocks if len(b.stmts) == 3 and copy_back(b.stmts[0]) and copy_back(b.stmts[1])
               and isinstance(b.stmts[2], ir.Block) and b.stmts[2] in exits]
    assert len(chained) == 1
    assert "name='a'" in repr(chained[0].stmts[2].stmts[0].target)  # outer's z is hdr.t.a


def test_a_block_local_that_hides_what_an_action_uses_is_renamed_apart(tmp_path: Path) -> None:
    """{ bit<8> k = 9; a(); } where a reads the control's k (3): UniqueLocalNames renames the
    block's k, so the inlined a reads 3 (P4_16 scoping); InlineActions alone refuses to capture."""
    from emu.embedded.runtime import Pipeline

    from .p4util import write_program

    path = write_program(tmp_path, "    bit<8> k = 3;\n    action a() { hdr.h.a = k; }\n"
                                   "    apply { if (hdr.h.b == 1) { bit<8> k = 9; a(); hdr.h.e = k; } sm.egress_spec = 1; }")
    prog = load_program(path)
    with pytest.raises(P4FrontendError, match=r"prog.p4:\d+: unsupported: action a uses k, which a block "
                                              "around its call declares too"):
        passes.InlineActions().run(prog)
    renamed = passes.UniqueLocalNames().run(prog)
    decls = _stmts_of(_ingress(renamed).apply.stmts, ir.VarDecl)
    assert [d.name for d in decls] == [f"k{passes.TEMP}1"]
    pipe = Pipeline(prog)
    r = pipe.ingress(bytes([0, 1, 0, 0, 0, 0]), 0, 0)
    out = pipe.egress_at(r, r.egress_spec, 0, 0, 0, 0, 0)
    assert (out[0], out[5]) == (3, 9)  # a() wrote the control's k; the block's k is 9


def test_remove_action_parameters_gives_a_table_its_copy_of_the_action() -> None:
    """count_into(hdr.t.a) in t's actions list: t runs a copy with only `step` as a parameter,
    whose body copies hdr.t.a in and out; the default action keeps only its action data."""
    prog = load_program(PROGRAMS / "table_dir_params.p4")
    t = passes.RemoveActionParameters().run(prog).controls["I"].tables["t"]
    ref = t.actions[0]
    local = ref.action
    assert ref.args is None and local is not None and [p.name for p in local.params] == ["step"]
    first, last = local.body.stmts[0], local.body.stmts[-1]
    assert isinstance(first, ir.VarDecl) and first.name.startswith(passes.TEMP) and "name='a'" in repr(first.init)
    assert isinstance(last, ir.Assign) and last.value == ir.Name(last.value.loc, first.name)
    put = t.actions[1].action
    assert put is not None and put.body.stmts[0].init is None  # out: not copied in
    assert [a.value for a in t.default_action.args] == [0x10]
    assert prog.controls["I"].tables["t"].actions[0].action is None  # the front end's program is unchanged


def test_remove_action_parameters_names_a_missing_directional_argument(tmp_path: Path) -> None:
    p = tmp_path / "missing.p4"
    p.write_text((PROGRAMS / "table_dir_params.p4").read_text().replace(
        "actions = { count_into(hdr.t.a); put(hdr.t.b); }", "actions = { count_into; put(hdr.t.b); }"))
    with pytest.raises(P4FrontendError, match=r"missing.p4:\d+: table t: action count_into needs its 1 "
                                              r"directional argument\(s\) in the actions list, got 0"):
        passes.RemoveActionParameters().run(load_program(p))


def test_type_inference_types_every_expression_with_signedness_and_type_names() -> None:
    """TypeInference (the last pass) records each expression's type where code generation reads it:
    int<8> stays signed, a `type` declaration keeps its name, a comparison is bool, an unsized
    literal beside a field takes nothing (it is int) and the operator takes the field's type."""
    low = passes.lower(load_program(PROGRAMS / "new_types.p4"))
    typed = low.typed
    ing = _ingress(low)
    found: dict[str, object] = {}

    def walk(node: object) -> None:
        if isinstance(node, ir.Binary) and node.op in ("<", "|"):
            found[node.op] = node
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, ir.Type):
            for f in node.__dataclass_fields__:
                walk(getattr(node, f))

    walk(ing.apply)
    lt, bor = found["<"], found["|"]
    assert typed.of(lt) == ir.BoolT()
    assert typed.of(lt.left) == ir.IntT(8) and isinstance(typed.of(lt.left), ir.IntT)
    assert typed.of(lt.left.expr).newtype == "delta_t"  # (int<8>)hdr.t.d: the field is a delta_t
    assert typed.of(bor) == ir.BitT(8) and isinstance(typed.of(bor.right), ir.IntLitT)
    assert typed.of(ir.Lit(lt.loc, 1)) is None  # a node the pass never saw has no type


def test_copy_in_copy_out_makes_sub_block_arguments_assignments() -> None:
    prog = passes.CopyInCopyOut().run(load_program(PROGRAMS / "sub_copy_in.p4"))
    # pair.apply(meta.p, meta.p, hdr.t.e): pair.old = meta.p; pair.p = meta.p; pair.r = 0; then the
    # apply with the copy-out hdr.t.e = pair.r... (the in parameter old is not copied back)
    block = _ingress(prog).apply.stmts[3]
    assert isinstance(block, ir.Block)
    *copy_in, apply = block.stmts
    assert [(s.target.expr.name, s.target.name) for s in copy_in] == [("pair", "old"), ("pair", "p"), ("pair", "r")]
    assert isinstance(copy_in[2].value, ir.Lit) and copy_in[2].value.value == 0  # out: uninitialised
    assert isinstance(apply, ir.ApplySub) and apply.inst.name == "pair" and apply.packets == []
    assert [(s.value.name, type(s.target).__name__) for s in apply.copy_out] == [("p", "Member"), ("r", "Member")]
    # the sub-parser shares the packet_in: subp.apply(pkt, hdr, hdr)
    sub = prog.parsers["P"].states["start"].stmts[1]
    assert isinstance(sub.stmts[-1], ir.ApplySub) and [a.name for a in sub.stmts[-1].packets] == ["pkt"]
    assert len(sub.stmts) == 3  # snap and h copied in


def test_copy_in_copy_out_names_a_wrong_call(tmp_path: Path) -> None:
    p = tmp_path / "bad.p4"
    p.write_text((PROGRAMS / "sub_copy_in.p4").read_text().replace("ex.apply(hdr.t, hdr.t);", "ex.apply(hdr.t, 8w1);"))
    with pytest.raises(P4FrontendError, match=r"bad.p4:\d+: argument t of Ex.apply is inout: it must be a variable"):
        passes.CopyInCopyOut().run(load_program(p))
    p.write_text((PROGRAMS / "sub_copy_in.p4").read_text().replace("ex.apply(hdr.t, hdr.t);", "ex.apply(hdr.t);"))
    with pytest.raises(P4FrontendError, match=r"Ex.apply takes 2 arguments, got 1"):
        passes.CopyInCopyOut().run(load_program(p))


def test_out_argument_lvalue_is_evaluated_before_the_call(tmp_path: Path) -> None:
    """bump(hdr.idx.i, hdr.s[hdr.idx.i].x): the index is read into a temporary before the copy-in,
    and the copy-out writes hdr.s[<temporary>].x, not hdr.s[hdr.idx.i].x after bump changed i
    (spec 6.8); a literal index needs none (tests/p4/programs/out_lvalue.p4 has the vectors)."""
    prog = passes.InlineActions().run(load_program(PROGRAMS / "out_lvalue.p4"))
    block = _ingress(prog).apply.stmts[1]
    assert isinstance(block, ir.Block)
    _local_i, idx, local_v = block.stmts[:3]  # left to right: i copied in, then v's index read
    assert isinstance(idx, ir.VarDecl) and idx.name.startswith(passes.TEMP)
    assert (idx.init.expr.name, idx.init.name) == ("idx", "i")  # hdr.idx.i, read once
    assert isinstance(local_v.init.expr.index, ir.Name) and local_v.init.expr.index.name == idx.name
    last = block.stmts[-1]  # the copy-out of v: hdr.s[<temporary>].x = v
    assert isinstance(last, ir.Assign) and last.target.expr.index.name == idx.name
    p = tmp_path / "lit.p4"
    p.write_text((PROGRAMS / "out_lvalue.p4").read_text().replace("bump(hdr.idx.i, hdr.s[hdr.idx.i].x);",
                                                                  "bump(hdr.idx.i, hdr.s[2].x);"))
    block = _ingress(passes.InlineActions().run(load_program(p))).apply.stmts[1]
    assert [type(s).__name__ for s in block.stmts[:2]] == ["VarDecl", "VarDecl"]
    assert block.stmts[-1].target.expr.index.value == 2  # no temporary for a literal index
