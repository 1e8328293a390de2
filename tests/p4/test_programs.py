"""The P4 exercise constructs: each tests/p4/programs/NAME.p4 against its NAME.stf vectors.

Every program runs twice, through the optimized pipeline and the reference one
(``optimize=False``), and each expectation of its STF file must pass on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline
from emu.embedded.stf import run_stf

PROGRAMS = Path(__file__).resolve().parent / "programs"
CASES = sorted(p for p in PROGRAMS.glob("*.p4") if p.with_suffix(".stf").exists())


def test_every_program_has_vectors() -> None:
    assert sorted(p.stem for p in PROGRAMS.glob("*.p4")) == [p.stem for p in CASES]
    assert len(CASES) >= 1


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "reference"])
@pytest.mark.parametrize("program", CASES, ids=[p.stem for p in CASES])
def test_program_vectors(program: Path, optimize: bool) -> None:
    pipe = Pipeline(load_program(program), seed=1, optimize=optimize)
    result = run_stf(program, program.with_suffix(".stf"), pipeline=pipe)
    failed = [str(o) for o in result.outcomes if not o.ok]
    assert not failed, "\n".join(failed)
    assert len(result.outcomes) >= 3  # the file checks something
