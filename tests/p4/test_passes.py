"""The IR passes of emu/embedded/passes.py on small programs (their STF programs test the semantics)."""

from __future__ import annotations

from pathlib import Path

from emu.embedded import ir, passes
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
