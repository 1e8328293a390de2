"""Report: summary.json with exactly the agreed keys, CSVs, PNGs, the rich table."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from emu.metrics import JobInfo, compute_metrics
from emu.report import ReportError, render_report, summary_dict, write_report

sys.path.insert(0, str(Path(__file__).parent))
from test_metrics import make_run  # noqa: E402

INFO = {0: JobInfo("allreduce", 3, 3_000_000, 8e6, iterations=2)}
SCHEME_KEYS = {"iterations", "verified", "cct_s", "cct_over_bound", "step_lead", "marks", "drops", "jobs", "overload"}
JOB_KEYS = {"collective", "ranks", "iterations", "verified", "cct_s", "cct_over_bound", "step_lead", "jct_s", "compute_s", "exposed_comm_s"}
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
    assert list(summary) == ["baseline", "symphony", "comparison", "cct_mean_ratio", "verdict"]
    for scheme in ("baseline", "symphony"):
        s = summary[scheme]
        assert set(s) == SCHEME_KEYS
        assert set(s["cct_s"]) == {"mean", "p50", "p99"}
        assert set(s["cct_over_bound"]) == {"mean"}
        assert set(s["step_lead"]) == {"max", "mean"}
        assert set(s["marks"]) == {"symphony", "queue"}
        assert s["iterations"] == 2 and s["verified"] is True
        assert list(s["jobs"]) == ["0"] and set(s["jobs"]["0"]) == JOB_KEYS
        assert s["jobs"]["0"]["cct_s"] == s["cct_s"]  # one job: the scheme's figures are the job's
    assert summary["baseline"]["cct_s"]["mean"] == pytest.approx(1.35)
    assert summary["symphony"]["cct_s"]["mean"] == pytest.approx(1.2)
    assert summary["cct_mean_ratio"] == pytest.approx(1.2 / 1.35)
    # Two iterations per scheme: the ratio is never called a gain.
    assert summary["verdict"] == "too few iterations to tell"
    assert summary["comparison"]["symphony"]["0"] == {
        "ratio": pytest.approx(1.2 / 1.35), "ci95": None, "verdict": "too few iterations to tell",
        "iterations": {"baseline": 2, "symphony": 2}}
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
    assert "CCT mean ratio symphony/baseline: 0.89 (2 vs 2 iterations, 5 needed): too few iterations to tell" in text
    assert "lower with Symphony" not in text
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
    assert cdf.axes[0].get_title() == "Collective completion time\ndumbbell, run 7"
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
        ({"status": "killed", "failure": "the runner (pid 7) ended without cleaning up"},
         "run was killed before its summary was written (the runner (pid 7) ended without cleaning up)"),
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
    monkeypatch.setattr(report, "plot_step_lead", lambda path, leads, *, title=None, job_labels=None: titles.append(title))
    render_report(out)
    assert titles == ["single, run r3"]


# -- statistics and per-job reporting (issue 9) --------------------------------------


def make_jobs_run(folder: Path, jobs: dict[int, list[float]], nranks: int = 2) -> None:
    """Job j's iteration k takes ``jobs[j][k]`` s; ranks step 4 times per iteration, rank 1 one step late."""
    from test_metrics import it, steps, write_rank

    for job, ccts in jobs.items():
        for rank in range(nranks):
            recs: list[dict] = []
            t = 0.0
            for k, cct in enumerate(ccts):
                lag = 0.25 * cct * rank
                recs += steps(k, [t + lag + i * cct / 5 for i in range(4)], t + cct, 4 * k)
                recs.append(it(k, t, t + cct))
                t += cct + 0.01
            write_rank(folder, job, rank, recs)


TWO_JOBS = {0: JobInfo("allreduce", 2, 1_000_000, 8e6, iterations=20),
            1: JobInfo("allgather", 2, 1_000_000, 8e6, iterations=20)}


@pytest.fixture
def two_jobs(tmp_path: Path) -> tuple[Path, dict]:
    rng = np.random.default_rng(7)
    base = {0: list(rng.normal(1.0, 0.03, 20)), 1: list(rng.normal(0.5, 0.02, 20))}
    # symphony: job 0 7% faster, job 1 the same distribution (no effect).
    sym = {0: list(rng.normal(0.93, 0.03, 20)), 1: list(rng.normal(0.5, 0.02, 20))}
    make_jobs_run(tmp_path / "baseline", base)
    make_jobs_run(tmp_path / "symphony", sym)
    metrics = {s: compute_metrics(tmp_path / s, scheme=s, jobs=TWO_JOBS) for s in ("baseline", "symphony")}
    return tmp_path, metrics


def test_two_jobs_are_never_pooled(two_jobs: tuple[Path, dict]) -> None:
    """Issue 9: an all-reduce and an all-gather in one run got one row and one CDF."""
    out, metrics = two_jobs
    text = _text(write_report(out, metrics, COUNTERS, title="two, run 1"))
    summary = json.loads((out / "summary.json").read_text())
    for scheme in ("baseline", "symphony"):
        assert list(summary[scheme]["jobs"]) == ["0", "1"]
        assert summary[scheme]["jobs"]["1"]["collective"] == "allgather"
        assert summary[scheme]["cct_s"] == {"mean": None, "p50": None, "p99": None}  # not pooled
    assert summary["baseline"]["jobs"]["1"]["cct_s"]["mean"] == pytest.approx(0.5, abs=0.02)
    comp = summary["comparison"]["symphony"]
    assert comp["0"]["verdict"] == "faster" and comp["0"]["ci95"][1] < 1
    assert comp["1"]["verdict"] == "within the noise" and comp["1"]["ci95"][0] < 1 < comp["1"]["ci95"][1]
    assert summary["cct_mean_ratio"] is None and summary["verdict"] is None
    rows = [line for line in text.splitlines() if "ranks)" in line]
    assert len(rows) == 8, text  # a row per scheme and job in each of the two tables
    assert re.search(r"│ symphony │ 0 \(allreduce, 2 ranks\) .*│ 0\.94 \[0\.9\d,0\.9\d\] \+ │", text), text
    assert re.search(r"│ +│ 1 \(allgather, 2 ranks\) .*│ 1\.02 \[0\.9\d,1\.0\d\] ~ │", text), text
    assert "0 (allreduce, 2 ranks)" in text and "1 (allgather, 2 ranks)" in text
    assert "job 0 CCT mean ratio symphony/baseline: 0.9" in text and ": symphony faster" in text
    assert "job 1 CCT mean ratio symphony/baseline: 1.0" in text and ": within the noise" in text
    from emu.report import cct_cdf_figure, job_labels, step_lead_figure

    ccts = {s: {j: [c.cct_s for c in jm.ccts] for j, jm in metrics[s].jobs.items()} for s in metrics}
    cdf = cct_cdf_figure(ccts, job_labels=job_labels(summary))
    assert len(cdf.axes[0].get_lines()) == 4  # a curve per scheme and job
    legend = [t.get_text() for t in cdf.axes[0].get_legend().get_texts()]
    assert "symphony, job 1 (allgather, 2 ranks) (n=20)" in legend
    leads = {s: {j: (jm.lead_times, jm.lead_values) for j, jm in metrics[s].jobs.items()} for s in metrics}
    fig = step_lead_figure(leads)
    assert len(fig.axes) == 4  # a panel per scheme and job
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2, 2, 2]  # raw trace and its rolling mean


def test_titles_fit_inside_the_figure(two_jobs: tuple[Path, dict]) -> None:
    """Issue 9: the CCT CDF's title was cut off at the right edge."""
    from emu.report import cct_cdf_figure, step_lead_figure

    _, metrics = two_jobs
    title = "default, run 20261201-093000-123456 (a long topology name)"
    ccts = {s: {j: [c.cct_s for c in jm.ccts] for j, jm in metrics[s].jobs.items()} for s in metrics}
    leads = {s: {j: (jm.lead_times, jm.lead_values) for j, jm in metrics[s].jobs.items()} for s in metrics}
    for fig, texts in ((cct_cdf_figure(ccts, title=title), lambda f: [f.axes[0].title]),
                       (step_lead_figure(leads, title=title), lambda f: [f._suptitle])):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        width, height = fig.canvas.get_width_height()
        for text in texts(fig):
            box = text.get_window_extent(renderer)
            assert box.x0 >= 0 and box.x1 <= width and box.y1 <= height, (text.get_text(), box, width)


def test_rolling_mean() -> None:
    from emu.report import rolling_mean

    t, v = rolling_mean(np.arange(6.0), np.array([0, 2, 0, 2, 0, 2.0]), 2)
    assert list(v) == [1, 1, 1, 1, 1] and list(t) == [0.5, 1.5, 2.5, 3.5, 4.5]


def test_report_on_old_summary_without_jobs(tmp_path: Path) -> None:
    """A summary.json written before per-job blocks still renders (one row per scheme)."""
    old = {"baseline": {"iterations": 3, "verified": True, "cct_s": {"mean": 0.1, "p50": 0.1, "p99": 0.1},
                        "cct_over_bound": {"mean": 1.2}, "step_lead": {"max": 1, "mean": 0.2},
                        "marks": {"symphony": 0, "queue": 3}, "drops": 0}}
    (tmp_path / "summary.json").write_text(json.dumps(old))
    text = _text(render_report(tmp_path, plots=False))
    assert "100.0" in text and "needs both schemes" in text


def test_report_on_a_cli_folder(run: tuple[Path, dict], tmp_path: Path) -> None:
    """Issue 9: `report` on a `symphony-emu cli` results folder said there was no summary."""
    _, metrics = run
    top = tmp_path / "cli-out"
    for n, scheme in ((1, "symphony"), (2, "baseline")):
        write_report(top / f"cli-{n}-{scheme}", {scheme: metrics[scheme]}, {scheme: COUNTERS[scheme]})
    (top / "run.json").write_text(json.dumps({"status": "finished", "run_id": "r9"}))
    text = _text(render_report(top, plots=False))
    assert text.index("cli-1-symphony:") < text.index("cli-2-baseline:")
    assert text.count("symphony-emu results") == 2


def test_report_as_another_user_says_why_plots_are_not_redrawn(run: tuple[Path, dict],
                                                               nobody_can_run_checkout: None) -> None:
    """Issue 9: `report` as non-root skipped redrawing the plots silently."""
    import os
    import pwd
    import shutil
    import subprocess
    import tempfile

    out, metrics = run
    write_report(out, metrics, COUNTERS)
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the command as another user")
    nobody = pwd.getpwnam("nobody")
    shared = Path(tempfile.mkdtemp(prefix="report-perm-"))
    try:
        shutil.copytree(out, shared / "run")
        shared.chmod(0o755)
        for p in [shared / "run", *(shared / "run").rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        before = (shared / "run" / "cct_cdf.png").read_bytes()
        proc = subprocess.run(
            ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
             sys.executable, "-m", "emu.cli", "report", str(shared / "run")],
            cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=60,
            env={**os.environ, "HOME": str(shared), "MPLCONFIGDIR": str(shared)},
        )
        assert proc.returncode == 0, proc.stderr
        text = " ".join(proc.stdout.split())
        assert f"plots not redrawn: {shared / 'run'} is not writable by nobody (it belongs to root)" in text, text
        assert (shared / "run" / "cct_cdf.png").read_bytes() == before
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_disturbed_run_says_so_in_its_row() -> None:
    load = {"disturbed": True, "reasons": ["21% of worker wake-ups over 2 ms late (max 41 ms)"],
            "worker_late_wakeups": 0.21, "worker_lag_max_ms": 41.0, "worker_cpu_wait": 0.02,
            "switch_late_wakeups": None, "switch_lag_max_ms": None}
    summary = {"baseline": {"iterations": 5, "verified": True, "marks": {}, "drops": 0, "overload": load,
                            "jobs": {"0": {"collective": "allreduce", "ranks": 4, "iterations": 5,
                                           "cct_s": {"mean": 0.1}, "step_lead": {}}}}}
    from emu.report import report_table

    text = " ".join(_text(report_table(summary)).split())
    assert "busy: 21% late, 2% wait" in text
    assert ("the machine disturbed the baseline run (21% of worker wake-ups over 2 ms late (max 41 ms)): CPU "
            "contention") in text


@pytest.mark.parametrize("width", [100, 140])
def test_the_table_is_readable_at_100_columns(run: tuple[Path, dict], tmp_path: Path, width: int) -> None:
    """Issue: at 100 columns headers were cut to 'sc…', values to '1.…' and the verdict wrapped."""
    from emu.report import report_table

    _, metrics = run
    summary = summary_dict(metrics, COUNTERS)
    summary["baseline"]["overload"] = {"disturbed": True, "reasons": ["21% of worker wake-ups over 2 ms late"],
                                       "worker_late_wakeups": 0.21, "worker_cpu_wait": 0.02}
    console = Console(width=width, record=True, color_system=None)
    console.print(report_table(summary))
    text = console.export_text()
    assert "…" not in text, text
    assert all(len(line.rstrip()) <= width for line in text.splitlines()), text
    header = " ".join(text.split())
    for label in ("scheme", "job", "iters", "CCT mean ms", "p50 ms", "p99 ms", "CCT/ bound", "vs baseline ratio [CI]",
                  "lead max", "lead mean", "Symphony marks", "queue marks", "drops", "verified", "machine"):
        assert all(word in header for word in label.split()), label
    row = next(line for line in text.splitlines() if line.startswith("│ symphony"))  # the timing table's
    assert re.search(r"│ 0\.89 (\[\d\.\d\d,\d\.\d\d\] )?\? +│$", row.rstrip()), row  # ratio and mark on one line
    assert "? too few iterations" in header and "too few iterations to tell" in header  # legend, closing line


def test_the_table_has_a_row_per_scheme_and_none_for_the_placebo_calibration() -> None:
    """Issue (new-user check, 2026-12-04): `--scheme all` showed a `placebo_calibration` row,
    '-' everywhere and verified 'no', because every dict of summary.json was taken for a scheme."""
    block = {"iterations": 1, "verified": True, "marks": {}, "drops": 0,
             "jobs": {"0": {"collective": "allreduce", "ranks": 4, "iterations": 1, "cct_s": {"mean": 0.1},
                            "step_lead": {}}}}
    summary = {"baseline": block, "symphony": block, "placebo": block,
               "placebo_calibration": {"0": {"probability": 0.01, "symphony_marks": 10, "placebo_marks": 9,
                                             "volume_ratio": 0.9}},
               "paths": {"routing": "deterministic", "flows": {}, "links": {}, "max_flows_per_link": 1},
               "blocks": [{"scheme": "baseline", "iterations": {"0": 1}, "warmup": {"0": 0}}]}
    from emu.report import report_table, scheme_names

    assert scheme_names(summary) == ["baseline", "symphony", "placebo"]
    console = Console(width=140, record=True, color_system=None)
    console.print(report_table(summary))
    text = console.export_text()
    assert "placebo_calibration" not in text, text
    assert sum(1 for line in text.splitlines() if line.startswith("│ placebo ")) == 2, text  # timing and counters


@pytest.mark.parametrize("text", ["{}", '{"comparison": {}, "paths": {}}'])
def test_a_summary_without_schemes_is_refused(tmp_path: Path, text: str) -> None:
    """New-user check, 2026-12-04: a summary.json of ``{}`` printed empty tables and exited 0."""
    (tmp_path / "summary.json").write_text(text)
    with pytest.raises(ReportError) as info:
        render_report(tmp_path)
    assert str(info.value) == (f"{tmp_path / 'summary.json'}: holds no scheme's results (no block with iterations "
                               "and verified); re-run the experiment")
