"""``symphony-emu figure N --quick`` for every figure: each writes its PNG, CSV and table.

The virtual-time figures (2, 4, 5, 6, 8: the shipped dc-mix-stragglers family, small) share one folder, so Fig. 2, 4, 5 and Fig. 8's
reference share their runs, as a user's ``results/figures-quick`` does; Fig. 9 runs in real
time under Mininet (root). Quick figures are smoke tests of the pipeline (scenario, runs,
statistics, plot), not results: their numbers are not checked here (docs/paper.md has the
full figures').
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from emu import figures


def _check_outputs(out: Path, number: int) -> str:
    png, table, md = (out / f"fig{number}.{ext}" for ext in ("png", "csv", "md"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.reader(table.open()))
    assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows)
    text = md.read_text()
    assert text.startswith(f"# Fig. {number}:") and "- paper (arXiv 2604.16880):" in text
    assert f"`symphony-emu figure {number} --quick`" in text and "baseline tuning:" in text
    return text


def test_quick_virtual_time_figures(tmp_path: Path) -> None:
    for number in (2, 4, 5, 6, 8):
        md = figures.make_figure(number, out=tmp_path, quick=True, workers=2)
        text = _check_outputs(tmp_path, number)
        assert md.read_text() == text
        assert "| placebo |" in text or "placebo" in text.split("\n\n", 2)[-1]
    # Fig. 2, 4, 5 and 8's reference ran the same scenario: one set of runs
    assert len(list((tmp_path / "runs").glob("*/seed1-baseline+ideal"))) == 1 + 1 + 2  # mix, no straggler, 2x compute
    # the quick mix is the shipped dc-mix-stragglers' builder (emu.fabric.mix_stragglers), 4-rank rings
    assert "dc-mix-stragglers-quick" in (tmp_path / "fig5.md").read_text()


def test_unknown_figure_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(figures.FigureError, match="figure 3: the paper's figures here are 2, 4, 5, 6, 8, 9"):
        figures.make_figure(3, out=tmp_path, quick=True)


def test_quick_flow_rates_figure_in_real_time(mininet_env: None, tmp_path: Path) -> None:
    figures.make_figure(9, out=tmp_path, quick=True)
    text = _check_outputs(tmp_path, 9)
    assert "| symphony | 0 |" in text and "| baseline | 0 |" in text
