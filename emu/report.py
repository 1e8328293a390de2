"""Run reports: summary.json, CSVs, PNG plots and a rich table (docs/DESIGN.md sections 7-8).

Files written into the run's results folder by :func:`write_report`:

- ``summary.json``: per scheme ``iterations``, ``verified``, ``cct_s`` {mean, p50, p99},
  ``cct_over_bound`` {mean}, ``step_lead`` {max, mean}, ``marks`` {symphony, queue},
  ``drops``; top-level ``cct_mean_ratio`` (symphony / baseline) when both ran. Times in
  seconds; unknown values are ``null``;
- ``cct.csv``: scheme, job, iteration, cct_s, bound_s;
- ``steps.csv``: scheme, job, rank, iteration, step, start, end (worker wall clock, s);
- ``cct_cdf.png``: CCT CDF, one curve per scheme;
- ``step_lead.png``: step lead over time, one panel per scheme, one line per job.

Library code returns the rich renderable; only the CLI prints it.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .metrics import LEAD_SAMPLES, SchemeMetrics, StepRecord, step_lead_series

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
#: What ran and how it ended (written by emu.runner: ``status``, ``topology_name``, ``run_id``).
RUN_FILE = "run.json"
CCT_FILE = "cct.csv"
STEPS_FILE = "steps.csv"
CDF_PLOT = "cct_cdf.png"
LEAD_PLOT = "step_lead.png"
CCT_COLUMNS = ("scheme", "job", "iteration", "cct_s", "bound_s")
STEP_COLUMNS = ("scheme", "job", "rank", "iteration", "step", "start", "end")
#: Order of schemes in tables and plots; others follow alphabetically.
SCHEME_ORDER = ("baseline", "symphony")


class ReportError(RuntimeError):
    """A results folder that cannot be reported; ``str()`` is one line with the fix."""


def _ordered(names: Any) -> list[str]:
    names = list(names)
    return [s for s in SCHEME_ORDER if s in names] + sorted(s for s in names if s not in SCHEME_ORDER)


def _count(counters: Mapping[str, Any] | None, key: str) -> int | None:
    if counters is None:
        return None
    val = counters.get(key)
    return int(val) if val is not None else None


def summary_dict(
    metrics: Mapping[str, SchemeMetrics], counters: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``summary.json`` object.

    ``counters[scheme]`` holds ``symphony_marks``, ``queue_marks`` and ``drops`` summed
    over the switches (missing -> null).
    """
    counters = counters or {}
    out: dict[str, Any] = {}
    for scheme in _ordered(metrics):
        m = metrics[scheme]
        c = counters.get(scheme)
        out[scheme] = {
            "iterations": m.iterations,
            "verified": bool(m.verified),
            "cct_s": m.cct_summary().as_dict(),
            "cct_over_bound": {"mean": m.over_bound_summary().mean},
            "step_lead": {"max": m.step_lead_max, "mean": m.step_lead_mean},
            "marks": {"symphony": _count(c, "symphony_marks"), "queue": _count(c, "queue_marks")},
            "drops": _count(c, "drops"),
        }
    ratio = cct_mean_ratio(out)
    if ratio is not None:
        out["cct_mean_ratio"] = ratio
    return out


def cct_mean_ratio(summary: Mapping[str, Any]) -> float | None:
    """symphony / baseline mean CCT from a summary, None unless both have one."""
    try:
        base = summary["baseline"]["cct_s"]["mean"]
        sym = summary["symphony"]["cct_s"]["mean"]
    except (KeyError, TypeError):
        return None
    if base is None or sym is None or base <= 0:
        return None
    return sym / base


def write_report(
    results_dir: str | Path,
    metrics: Mapping[str, SchemeMetrics],
    counters: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    title: str | None = None,
) -> RenderableType:
    """Write summary.json, cct.csv, steps.csv and both PNGs; return the terminal table.

    ``title`` (e.g. "dumbbell, run 20261130-101500-4242") names the run in the plot titles.
    """
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_dict(metrics, counters)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    cct_rows = [
        (scheme, c.job, c.iteration, c.cct_s, c.bound_s)
        for scheme in _ordered(metrics)
        for c in metrics[scheme].ccts
    ]
    _write_csv(out / CCT_FILE, CCT_COLUMNS, cct_rows)
    step_rows = [
        (scheme, s.job, s.rank, s.iteration, s.step, s.start, s.end)
        for scheme in _ordered(metrics)
        for s in metrics[scheme].steps
    ]
    _write_csv(out / STEPS_FILE, STEP_COLUMNS, step_rows)
    ccts = {s: [c.cct_s for c in metrics[s].ccts] for s in _ordered(metrics)}
    leads = {
        s: {j: (jm.lead_times, jm.lead_values) for j, jm in metrics[s].jobs.items()}
        for s in _ordered(metrics)
    }
    plot_cct_cdf(out / CDF_PLOT, ccts, title=title)
    plot_step_lead(out / LEAD_PLOT, leads, title=title)
    log.info("report written to %s", out)
    return report_table(summary)


def _write_csv(path: Path, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None else v for v in row])


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def render_report(results_dir: str | Path, *, plots: bool = True) -> RenderableType:
    """Re-render a finished run's folder (``symphony-emu report DIR``).

    Reads summary.json for the table and, with ``plots``, redraws both PNGs from cct.csv
    and steps.csv. Raises :class:`ReportError` when the folder holds no report.
    """
    d = Path(results_dir)
    path = d / SUMMARY_FILE
    run_info = read_run_file(d)
    status = run_info.get("status")
    if status == "interrupted":
        raise ReportError(f"{d}: run was interrupted before its summary was written; run it again")
    if not path.is_file():
        if status == "failed":
            failure = str(run_info.get("failure") or "see the logs")
            raise ReportError(f"{d}: run failed before its summary was written ({failure})")
        if status in ("starting", "running"):
            raise ReportError(f"{d}: run has not finished (it is still running, or it was killed); "
                              "wait for it, or run it again")
        raise ReportError(f"{path}: not found; give the folder of a finished run (it holds {SUMMARY_FILE})")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: unreadable ({exc}); re-run the experiment") from None
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: not a JSON object; re-run the experiment")
    if plots:
        try:
            _replot(d, title=run_title(run_info))
        except (OSError, KeyError, ValueError) as exc:
            log.warning("plots not redrawn from %s: %s", d, exc)
    return report_table(summary)


def read_run_file(results_dir: str | Path) -> dict[str, Any]:
    """The folder's run.json as a dict; empty when missing or unreadable (older runs)."""
    try:
        info = json.loads((Path(results_dir) / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def run_title(run_info: Mapping[str, Any]) -> str | None:
    """"<topology>, run <id>" from a run.json dict, or what of it is known (None: nothing)."""
    name = run_info.get("topology_name")
    if not name and run_info.get("topology"):
        name = Path(str(run_info["topology"])).stem
    run_id = run_info.get("run_id")
    parts = [str(name)] if name else []
    if run_id:
        parts.append(f"run {run_id}")
    return ", ".join(parts) or None


def _replot(d: Path, title: str | None = None) -> None:
    if (d / CCT_FILE).is_file():
        ccts: dict[str, list[float]] = {}
        for row in _read_csv(d / CCT_FILE):
            ccts.setdefault(row["scheme"], []).append(float(row["cct_s"]))
        plot_cct_cdf(d / CDF_PLOT, {s: ccts[s] for s in _ordered(ccts)}, title=title)
    if (d / STEPS_FILE).is_file():
        steps: dict[str, dict[int, list[StepRecord]]] = {}
        for row in _read_csv(d / STEPS_FILE):
            rec = StepRecord(
                int(row["job"]),
                int(row["rank"]),
                int(row["iteration"]),
                int(row["step"]),
                float(row["start"]),
                float(row["end"]),
            )
            steps.setdefault(row["scheme"], {}).setdefault(rec.job, []).append(rec)
        leads = {
            s: {j: step_lead_series(recs, LEAD_SAMPLES) for j, recs in steps[s].items()}
            for s in _ordered(steps)
        }
        plot_step_lead(d / LEAD_PLOT, leads, title=title)


# --------------------------------------------------------------------------------------
# Plots (matplotlib, Agg canvas: no display, no pyplot global state)
# --------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def plot_cct_cdf(path: str | Path, ccts: Mapping[str, list[float]], *, title: str | None = None) -> None:
    """Save :func:`cct_cdf_figure` as a PNG."""
    cct_cdf_figure(ccts, title=title).savefig(str(path))


def cct_cdf_figure(ccts: Mapping[str, list[float]], *, title: str | None = None) -> Any:
    """CCT CDF (ms), one step curve per scheme; ``title`` names the topology/run when known."""
    fig = _figure(6, 4)
    ax = fig.add_subplot(1, 1, 1)
    for scheme, values in ccts.items():
        if not values:
            continue
        xs = np.sort(np.asarray(values, dtype=float)) * 1000
        ys = np.arange(1, xs.size + 1) / xs.size
        ax.step(np.concatenate([[xs[0]], xs]), np.concatenate([[0], ys]), where="post", label=scheme)
    ax.set_xlabel("CCT (ms)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    if any(ccts.values()):
        ax.legend()
    ax.set_title("Collective completion time" + (f": {title}" if title else ""))
    fig.tight_layout()
    return fig


def plot_step_lead(
    path: str | Path,
    leads: Mapping[str, Mapping[int, tuple[np.ndarray, np.ndarray]]],
    *,
    title: str | None = None,
) -> None:
    """Save :func:`step_lead_figure` as a PNG."""
    step_lead_figure(leads, title=title).savefig(str(path))


def step_lead_figure(
    leads: Mapping[str, Mapping[int, tuple[np.ndarray, np.ndarray]]], *, title: str | None = None
) -> Any:
    """Step lead (steps, integer ticks) over time since the scheme's first step, a panel per
    scheme; ``title`` names the topology/run when known."""
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    schemes = list(leads) or ["(none)"]
    fig = _figure(7, 2.4 * len(schemes) + 0.6)
    fig.suptitle("Step lead" + (f": {title}" if title else ""))
    axes = [fig.add_subplot(len(schemes), 1, i + 1) for i in range(len(schemes))]
    ymax = 1.0
    for ax, scheme in zip(axes, schemes, strict=True):
        jobs = leads.get(scheme, {})
        starts = [t[0] for t, _ in jobs.values() if len(t)]
        t0 = min(starts) if starts else 0.0
        for job, (times, values) in sorted(jobs.items()):
            if len(times):
                ax.plot(times - t0, values, drawstyle="steps-post", label=f"job {job}", linewidth=0.9)
                ymax = max(ymax, float(np.max(values)))
        ax.set_title(scheme)
        ax.set_ylabel("step lead")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        if len(jobs) > 1:
            ax.legend()
    for ax in axes:
        ax.set_ylim(0, ymax + 0.5)
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------
# Terminal table
# --------------------------------------------------------------------------------------


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def _num(v: Any, fmt: str = "{:.2f}") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return fmt.format(v)


def report_table(summary: Mapping[str, Any]) -> RenderableType:
    """Rich table of a summary (see :func:`summary_dict`) plus the ratio line."""
    table = Table(title="symphony-emu results", header_style="bold")
    for col, justify in (
        ("scheme", "left"),
        ("iters", "right"),
        ("CCT mean ms", "right"),
        ("p50 ms", "right"),
        ("p99 ms", "right"),
        ("CCT/bound", "right"),
        ("max lead", "right"),
        ("mean lead", "right"),
        ("Symphony marks", "right"),
        ("queue marks", "right"),
        ("drops", "right"),
        ("verified", "center"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    schemes = _ordered(k for k, v in summary.items() if isinstance(v, dict))
    for scheme in schemes:
        s = summary[scheme]
        cct = s.get("cct_s", {})
        lead = s.get("step_lead", {})
        marks = s.get("marks", {})
        table.add_row(
            scheme,
            _num(s.get("iterations"), "{}"),
            _ms(cct.get("mean")),
            _ms(cct.get("p50")),
            _ms(cct.get("p99")),
            _num(s.get("cct_over_bound", {}).get("mean")),
            _num(lead.get("max"), "{:.0f}"),
            _num(lead.get("mean")),
            _num(marks.get("symphony"), "{}"),
            _num(marks.get("queue"), "{}"),
            _num(s.get("drops"), "{}"),
            "[green]yes[/]" if s.get("verified") else "[red]no[/]",
        )
    ratio = summary.get("cct_mean_ratio")
    if ratio is None:
        line = Text("CCT mean ratio symphony/baseline: - (needs both schemes)", style="dim")
    else:
        change = (1 - ratio) * 100
        word = "lower" if change >= 0 else "higher"
        line = Text(
            f"CCT mean ratio symphony/baseline: {ratio:.3f} ({abs(change):.1f}% {word} with Symphony)",
            style="bold",
        )
    return Group(table, line)
