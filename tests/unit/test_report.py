"""Report: summary.json with exactly the agreed keys, CSVs, PNGs, the rich table."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from emu.metrics import JobInfo, compute_metrics
from emu.report import ReportError, render_report, write_report

sys.path.insert(0, str(Path(__file__).parent))
from test_metrics import make_run  # noqa: E402

INFO = {0: JobInfo("allreduce", 3, 3_000_000, 8e6, iterations=2)}
SCHEME_KEYS = {"iterations", "verified", "cct_s", "cct_over_bound", "step_lead", "marks", "drops"}
COUNTERS = {
    "baseline": {"symphony_marks": 0, "queue_marks": 40, "drops": 1},
    "symphony": {"symphony_marks": 25, "queue_marks": 30, "drops": 0},
}


def _text(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, dict]:
    make_run(tmp_path / "baseline")
    make_run(tmp_path / "symphony")
    # Make symphony's last rank finish iteration 1 earlier: 3.2 instead of 3.5 s.
    p = tmp_path / "symphony" / "job0-rank2.jsonl"
    p.write_text(p.read_text().replace('"start": 2.1, "end": 3.5', '"start": 2.1, "end": 3.2'))
    metrics = {s: compute_metrics(tmp_path / s, scheme=s, jobs=INFO) for s in ("symphony", "baseline")}
    return tmp_path, metrics


def test_summary_json_exact_keys(run: tuple[Path, dict]) -> None:
    out, metrics = run
    write_report(out, metrics, COUNTERS)
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["baseline", "symphony", "cct_mean_ratio"]
    for scheme in ("baseline", "symphony"):
        s = summary[scheme]
        assert set(s) == SCHEME_KEYS
        assert set(s["cct_s"]) == {"mean", "p50", "p99"}
        assert set(s["cct_over_bound"]) == {"mean"}
        assert set(s["step_lead"]) == {"max", "mean"}
        assert set(s["marks"]) == {"symphony", "queue"}
        assert s["iterations"] == 2 and s["verified"] is True
    assert summary["baseline"]["cct_s"]["mean"] == pytest.approx(1.35)
    assert summary["symphony"]["cct_s"]["mean"] == pytest.approx(1.2)
    assert summary["cct_mean_ratio"] == pytest.approx(1.2 / 1.35)
    assert summary["symphony"]["marks"] == {"symphony": 25, "queue": 30}
    assert summary["baseline"]["drops"] == 1
    assert summary["baseline"]["cct_over_bound"]["mean"] == pytest.approx(0.3375)


def test_one_scheme_has_no_ratio(run: tuple[Path, dict]) -> None:
    out, metrics = run
    write_report(out, {"baseline": metrics["baseline"]})
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["baseline"]
    assert summary["baseline"]["marks"] == {"symphony": None, "queue": None}
    assert summary["baseline"]["drops"] is None


def test_csvs_and_plots(run: tuple[Path, dict]) -> None:
    out, metrics = run
    write_report(out, metrics, COUNTERS)
    with (out / "cct.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["scheme", "job", "iteration", "cct_s", "bound_s"]
    assert [r[:3] for r in rows[1:]] == [
        ["baseline", "0", "0"],
        ["baseline", "0", "1"],
        ["symphony", "0", "0"],
        ["symphony", "0", "1"],
    ]
    assert float(rows[2][3]) == pytest.approx(1.5) and float(rows[2][4]) == pytest.approx(4.0)
    with (out / "steps.csv").open() as fh:
        steps = list(csv.reader(fh))
    assert steps[0] == ["scheme", "job", "rank", "iteration", "step", "start", "end"]
    assert len(steps) == 1 + 2 * 24
    for png in ("cct_cdf.png", "step_lead.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_and_render(run: tuple[Path, dict]) -> None:
    out, metrics = run
    text = _text(write_report(out, metrics, COUNTERS))
    assert "baseline" in text and "symphony" in text
    assert "1350.0" in text  # baseline mean CCT in ms
    assert "CCT mean ratio symphony/baseline: 0.889 (11.1% lower with Symphony)" in text
    (out / "cct_cdf.png").unlink()
    (out / "step_lead.png").unlink()
    again = _text(render_report(out))
    assert again == text
    assert (out / "cct_cdf.png").is_file() and (out / "step_lead.png").is_file()


def test_render_missing(tmp_path: Path) -> None:
    with pytest.raises(ReportError) as info:
        render_report(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'summary.json'}: not found;")
    assert "\n" not in str(info.value)


def test_step_lead_plot_has_integer_ticks_and_names_the_run() -> None:
    from matplotlib.ticker import MaxNLocator

    from emu.report import cct_cdf_figure, step_lead_figure

    leads = {"baseline": {0: (np.array([0.0, 0.5, 1.0]), np.array([0, 3, 1]))}}
    fig = step_lead_figure(leads, title="dumbbell, run 20261130-101500-42")
    assert fig._suptitle.get_text() == "Step lead: dumbbell, run 20261130-101500-42"
    (ax,) = fig.axes
    fig.canvas.draw()
    assert isinstance(ax.yaxis.get_major_locator(), MaxNLocator)
    ticks = [t for t in ax.get_yticks() if 0 <= t <= 3.5]
    assert ticks and all(float(t).is_integer() for t in ticks)
    cdf = cct_cdf_figure({"baseline": [0.1, 0.2]}, title="dumbbell, run 7")
    assert cdf.axes[0].get_title() == "Collective completion time: dumbbell, run 7"
    assert step_lead_figure(leads)._suptitle.get_text() == "Step lead"


def test_run_title_from_run_json(tmp_path: Path) -> None:
    from emu.report import read_run_file, run_title

    assert read_run_file(tmp_path) == {} and run_title({}) is None
    (tmp_path / "run.json").write_text(json.dumps({"topology": "/x/topologies/single.yaml", "run_id": "r1"}))
    assert run_title(read_run_file(tmp_path)) == "single, run r1"
    assert run_title({"topology_name": "leaf-spine", "run_id": "r2"}) == "leaf-spine, run r2"


@pytest.mark.parametrize(
    "run_info,message",
    [
        ({"status": "interrupted"}, "run was interrupted before its summary was written"),
        ({"status": "failed", "failure": "baseline: job 0 rank 1 failed"},
         "run failed before its summary was written (baseline: job 0 rank 1 failed)"),
        ({"status": "running"}, "run has not finished"),
    ],
)
def test_render_unfinished_run(tmp_path: Path, run_info: dict, message: str) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "r1", **run_info}))
    with pytest.raises(ReportError) as info:
        render_report(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}: {message}")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_interrupted_run_with_stale_summary_is_not_reported(run: tuple[Path, dict]) -> None:
    """A reused --out folder: the summary of an earlier run must not pass for this one."""
    out, metrics = run
    write_report(out, metrics, COUNTERS)
    (out / "run.json").write_text(json.dumps({"run_id": "r2", "status": "interrupted"}))
    with pytest.raises(ReportError, match="run was interrupted before its summary was written"):
        render_report(out)


def test_render_titles_plots_from_run_json(run: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    import emu.report as report

    out, metrics = run
    write_report(out, metrics, COUNTERS)
    (out / "run.json").write_text(json.dumps({"run_id": "r3", "topology_name": "single", "status": "finished"}))
    titles = []
    monkeypatch.setattr(report, "plot_step_lead", lambda path, leads, *, title=None: titles.append(title))
    render_report(out)
    assert titles == ["single, run r3"]
