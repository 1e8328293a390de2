"""Run reports: summary.json, CSVs, PNG plots and a rich table (docs/DESIGN.md sections 7-8).

Files written into the run's results folder by :func:`write_report`:

- ``summary.json`` (:func:`summary_dict`): per scheme and per job the CCT, CCT/bound and
  step lead; per scheme the switch counters; per compared scheme and job the ratio of mean
  CCTs with its 95% bootstrap interval and a verdict in words. Times in seconds; unknown
  values are ``null``;
- ``cct.csv``: scheme, job, iteration, cct_s, bound_s;
- ``steps.csv``: scheme, job, rank, iteration, step, start, end (worker wall clock, s);
- ``cct_cdf.png``: CCT CDF, one curve per scheme and job, the comparisons under it;
- ``step_lead.png``: step lead over time, a panel per scheme and job (raw + rolling mean).

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

from .cleanup import run_lock_free
from .metrics import (
    FASTER,
    LEAD_SAMPLES,
    NOISE,
    SLOWER,
    TOO_FEW,
    JobMetrics,
    SchemeMetrics,
    StepRecord,
    compare_ccts,
    comparison_words,
    overload,
    step_lead_series,
)

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
#: What ran and how it ended (written by emu.runner: ``status``, ``topology_name``, ``run_id``).
RUN_FILE = "run.json"
CCT_FILE = "cct.csv"
STEPS_FILE = "steps.csv"
CDF_PLOT = "cct_cdf.png"
LEAD_PLOT = "step_lead.png"
CCT_COLUMNS = ("scheme", "job", "iteration", "cct_s", "bound_s")
FLOWS_FILE = "flows.csv"
FLOW_COLUMNS = ("job", "rank", "dst_rank", "channel", "path")
#: Shared links listed in the terminal (the rest are counted in one line).
SHARED_LINKS_SHOWN = 12
STEP_COLUMNS = ("scheme", "job", "rank", "iteration", "step", "start", "end")
#: Order of schemes in tables and plots; others follow alphabetically.
SCHEME_ORDER = ("baseline", "symphony", "placebo", "ideal")


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


def _job_block(jm: JobMetrics) -> dict[str, Any]:
    return {
        "collective": jm.collective,
        "ranks": jm.nranks,
        "iterations": len(jm.ccts),
        "verified": bool(jm.verified),
        "cct_s": jm.cct_summary().as_dict(),
        "cct_over_bound": {"mean": jm.over_bound_summary().mean},
        "step_lead": {"max": jm.step_lead_max, "mean": jm.step_lead_mean},
        "jct_s": jm.jct_s,
        "compute_s": jm.compute_s,
        "exposed_comm_s": jm.exposed_comm_s,
    }


_NULL_JOB = {"cct_s": {"mean": None, "p50": None, "p99": None}, "cct_over_bound": {"mean": None},
             "step_lead": {"max": None, "mean": None}}


def summary_dict(
    metrics: Mapping[str, SchemeMetrics], counters: Mapping[str, Mapping[str, Any]] | None = None,
    *, seed: int = 0,
) -> dict[str, Any]:
    """The ``summary.json`` object.

    Per scheme: ``iterations`` (all jobs), ``verified``, ``marks`` {symphony, queue} and
    ``drops`` (switch counters summed over the switches, missing -> null), and ``jobs``:
    job id (str) -> ``collective``, ``ranks``, ``iterations``, ``verified``, ``cct_s``
    {mean, p50, p99}, ``cct_over_bound`` {mean}, ``step_lead`` {max, mean}, ``jct_s`` (the
    job's completion time, compute included), ``compute_s`` and ``exposed_comm_s`` (JCT minus
    compute; emu.metrics.JobMetrics). The
    scheme-level ``cct_s``, ``cct_over_bound`` and ``step_lead`` repeat the job's when the
    run has one job and are null with several (jobs are never pooled, DESIGN.md 7).

    With a baseline and another scheme: ``comparison``: scheme -> job id -> {``ratio``
    (mean CCT scheme / baseline), ``ci95`` [low, high] or null, ``verdict`` (faster /
    slower / within the noise / too few iterations to tell), ``iterations``}; and
    top-level ``cct_mean_ratio`` and ``verdict`` of symphony's one job (null with several
    jobs). ``seed`` seeds the bootstrap.
    """
    counters = counters or {}
    out: dict[str, Any] = {}
    for scheme in _ordered(metrics):
        m = metrics[scheme]
        c = counters.get(scheme)
        jobs = {str(j): _job_block(m.jobs[j]) for j in sorted(m.jobs)}
        one = next(iter(jobs.values())) if len(jobs) == 1 else _NULL_JOB
        out[scheme] = {
            "iterations": m.iterations,
            "verified": bool(m.verified),
            "cct_s": dict(one["cct_s"]),
            "cct_over_bound": dict(one["cct_over_bound"]),
            "step_lead": dict(one["step_lead"]),
            "marks": {"symphony": _count(c, "symphony_marks"), "queue": _count(c, "queue_marks")},
            "drops": _count(c, "drops"),
            "jobs": jobs,
            "overload": overload(m, c),
        }
    if "baseline" in metrics and len(metrics) > 1:
        base = metrics["baseline"]
        comparison: dict[str, Any] = {}
        for scheme in _ordered(metrics):
            if scheme == "baseline":
                continue
            other = metrics[scheme]
            comparison[scheme] = {
                str(j): compare_ccts(
                    [c.cct_s for c in base.jobs[j].ccts] if j in base.jobs else [],
                    [c.cct_s for c in other.jobs[j].ccts],
                    job=j, scheme=scheme, seed=seed,
                ).as_dict()
                for j in sorted(other.jobs)
            }
        out["comparison"] = comparison
        sym = comparison.get("symphony", {})
        if len(sym) == 1:
            (only,) = sym.values()
            out["cct_mean_ratio"] = only["ratio"]
            out["verdict"] = only["verdict"]
        elif sym:
            out["cct_mean_ratio"] = None
            out["verdict"] = None
    return out


def write_report(
    results_dir: str | Path,
    metrics: Mapping[str, SchemeMetrics],
    counters: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    title: str | None = None,
    dilation: float = 1.0,
    mode: str = "mininet",
    paths: Mapping[str, Any] | None = None,
    order: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> RenderableType:
    """Write summary.json, cct.csv, steps.csv, flows.csv and both PNGs (``plots``); return the terminal table.

    ``paths``: :meth:`emu.routing.Routes.flow_report` (where each ring flow went, flows per
    link), kept in summary.json as ``paths`` and in flows.csv (job, rank, dst_rank, channel, path).

    ``order``: how the schemes' blocks ran (emu.runner.plan_blocks): ``scheme_order``
    (abba, random, sequential), ``blocks`` (scheme, measured and warm-up iterations per job,
    in run order) and ``order_words``; copied into summary.json and said in the caption.

    ``mode``: the back end; a virtual-time run (``"sim"``) gets ``"mode": "sim"`` in
    summary.json and says so in the table's caption.

    ``title`` (e.g. "dumbbell, run 20261130-101500-4242") names the run in the plot titles.
    ``dilation``: D of a time-dilated run (emu.dilation); the metrics are in scenario time
    and summary.json gains ``dilation`` and, per job, ``cct_wall_s`` {mean} (= D x CCT).
    """
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_dict(metrics, counters)
    if mode != "mininet":
        summary["mode"] = mode
    if paths is not None:
        summary["paths"] = dict(paths)
        _write_csv(out / FLOWS_FILE, FLOW_COLUMNS,
                   [(f["job"], f["rank"], f["dst_rank"], f.get("channel", 0), " ".join(f["path"]))
                    for f in paths.get("flows", [])])
    if order:
        summary.update({k: order[k] for k in ("scheme_order", "blocks", "order_words") if k in order})
    if dilation != 1.0:
        summary["dilation"] = dilation
        for scheme in _ordered(metrics):
            for block in summary[scheme]["jobs"].values():
                mean = block["cct_s"].get("mean")
                block["cct_wall_s"] = {"mean": mean * dilation if mean is not None else None}
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
    ccts = {s: {j: [c.cct_s for c in jm.ccts] for j, jm in sorted(metrics[s].jobs.items())}
            for s in _ordered(metrics)}
    leads = {
        s: {j: (jm.lead_times, jm.lead_values) for j, jm in sorted(metrics[s].jobs.items())}
        for s in _ordered(metrics)
    }
    if plots:
        labels = job_labels(summary)
        plot_cct_cdf(out / CDF_PLOT, ccts, title=title, job_labels=labels, notes=comparison_notes(summary))
        plot_step_lead(out / LEAD_PLOT, leads, title=title, job_labels=labels)
    log.info("report written to %s", out)
    return report_table(summary)


def job_labels(summary: Mapping[str, Any]) -> dict[int, str]:
    """Job id -> ``job 0 (allreduce, 8 ranks)`` from a summary's per-job blocks."""
    out: dict[int, str] = {}
    for scheme in _ordered(k for k, v in summary.items() if isinstance(v, dict) and "jobs" in v):
        for j, block in summary[scheme]["jobs"].items():
            what = ", ".join(x for x in (block.get("collective"),
                                         f"{block['ranks']} ranks" if block.get("ranks") else None) if x)
            out.setdefault(int(j), f"job {j}" + (f" ({what})" if what else ""))
    return out


def comparison_notes(summary: Mapping[str, Any]) -> list[str]:
    """One line per compared scheme and job, e.g. ``job 0: symphony/baseline 0.93 (95% CI ...``."""
    notes = []
    for scheme, jobs in (summary.get("comparison") or {}).items():
        for j, comp in jobs.items():
            prefix = f"job {j}: " if len(jobs) > 1 else ""
            notes.append(f"{prefix}{scheme}/baseline {comparison_words(scheme, comp)}")
    return notes


def _write_csv(path: Path, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)  # (the csv module writes None as an empty field)


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
    cli_runs = sorted((p.parent for p in d.glob("cli-*/" + SUMMARY_FILE)), key=_cli_order)
    if not path.is_file() and cli_runs:
        # A `symphony-emu cli` folder: one report per `allreduce` it ran.
        parts: list[RenderableType] = []
        for sub in cli_runs:
            parts.append(Text(f"{sub.name}:", style="bold"))
            parts.append(render_report(sub, plots=plots))
        return Group(*parts)
    if status == "killed":
        raise ReportError(f"{d}: run was killed before its summary was written "
                          f"({run_info.get('failure', 'SIGKILL or a crash')}); run it again")
    if status == "interrupted":
        raise ReportError(f"{d}: run was interrupted before its summary was written; run it again")
    if not path.is_file():
        if status == "failed":
            failure = str(run_info.get("failure") or "see the logs")
            raise ReportError(f"{d}: run failed before its summary was written ({failure})")
        if status in ("starting", "running") and run_lock_free(d):
            raise ReportError(f"{d}: run was killed before its summary was written (its runner ended without "
                              "cleaning up: SIGKILL, the OOM killer or a crash); run it again")
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
    if not scheme_names(summary):  # new-user check, 2026-12-04: `{}` printed empty tables, exit 0
        raise ReportError(f"{path}: holds no scheme's results (no block with iterations and verified); "
                          "re-run the experiment")
    note: Text | None = None
    if plots:
        unwritable = not_writable(d)
        if unwritable is not None:
            note = Text(f"plots not redrawn: {unwritable}; the PNGs there are kept "
                        "(run `sudo symphony-emu report DIR` to redraw them)", style="yellow")
        else:
            try:
                _replot(d, title=run_title(run_info), summary=summary)
            except (OSError, KeyError, ValueError) as exc:
                note = Text(f"plots not redrawn from {d}: {exc}", style="yellow")
    table = report_table(summary)
    return Group(table, note) if note is not None else table


def not_writable(d: Path) -> str | None:
    """Why the plots of folder ``d`` cannot be rewritten by this user (None when they can)."""
    import os
    import pwd

    me = pwd.getpwuid(os.geteuid()).pw_name
    for target in (d, d / CDF_PLOT, d / LEAD_PLOT):
        if target.exists() and not os.access(target, os.W_OK):
            try:
                owner = pwd.getpwuid(target.stat().st_uid).pw_name
            except (KeyError, OSError):
                owner = "another user"
            return f"{target} is not writable by {me} (it belongs to {owner})"
    return None


def _cli_order(path: Path) -> tuple[int, str]:
    """``cli-<n>-<mode>`` folders in run order."""
    parts = path.name.split("-")
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0, path.name)


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


def _replot(d: Path, title: str | None = None, summary: Mapping[str, Any] | None = None) -> None:
    summary = summary or {}
    labels = job_labels(summary)
    if (d / CCT_FILE).is_file():
        ccts: dict[str, dict[int, list[float]]] = {}
        for row in _read_csv(d / CCT_FILE):
            ccts.setdefault(row["scheme"], {}).setdefault(int(row["job"]), []).append(float(row["cct_s"]))
        plot_cct_cdf(d / CDF_PLOT, {s: ccts[s] for s in _ordered(ccts)}, title=title, job_labels=labels,
                     notes=comparison_notes(summary))
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
            s: {j: step_lead_series(recs, LEAD_SAMPLES) for j, recs in sorted(steps[s].items())}
            for s in _ordered(steps)
        }
        plot_step_lead(d / LEAD_PLOT, leads, title=title, job_labels=labels)


# --------------------------------------------------------------------------------------
# Plots (matplotlib, Agg canvas: no display, no pyplot global state)
# --------------------------------------------------------------------------------------

#: Colour of each scheme in every plot (matplotlib's default cycle, fixed per scheme).
SCHEME_COLOURS = {"baseline": "tab:blue", "symphony": "tab:orange", "placebo": "tab:grey", "ideal": "tab:green"}
_JOB_STYLES = ("-", "--", ":", "-.")
#: Rolling-mean window of the step-lead plot, as a fraction of the run's span.
LEAD_WINDOW_FRACTION = 0.02


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _colour(scheme: str, index: int) -> str:
    return SCHEME_COLOURS.get(scheme, f"C{index + 2}")


def _as_jobs(values: Any) -> dict[int, Any]:
    """A per-job mapping; a bare list (older callers) is job 0's."""
    return dict(values) if isinstance(values, Mapping) else {0: values}


def plot_cct_cdf(path: str | Path, ccts: Mapping[str, Any], *, title: str | None = None,
                 job_labels: Mapping[int, str] | None = None, notes: list[str] | None = None) -> None:
    """Save :func:`cct_cdf_figure` as a PNG."""
    cct_cdf_figure(ccts, title=title, job_labels=job_labels, notes=notes).savefig(str(path))


def cct_cdf_figure(ccts: Mapping[str, Any], *, title: str | None = None,
                   job_labels: Mapping[int, str] | None = None, notes: list[str] | None = None) -> Any:
    """CCT CDF (ms): one step curve per scheme and job, never pooled (DESIGN.md 7).

    ``ccts``: scheme -> job id -> CCTs (s) (a bare list is job 0's). Colour = scheme, line
    style = job. ``title`` (the topology/run) goes on a second title line so it fits;
    ``notes`` (the comparisons with their intervals) are printed under the plot.
    """
    notes = list(notes or [])
    notes_in = 0.17 * len(notes) + (0.1 if notes else 0)  # height of the notes under the plot (inches)
    fig = _figure(7, 4.6 + notes_in)
    ax = fig.add_subplot(1, 1, 1)
    per_scheme = {s: _as_jobs(v) for s, v in ccts.items()}
    all_jobs = sorted({j for jobs in per_scheme.values() for j in jobs})
    labels = job_labels or {}
    drawn = False
    for si, (scheme, jobs) in enumerate(per_scheme.items()):
        for job, values in sorted(jobs.items()):
            if not values:
                continue
            xs = np.sort(np.asarray(values, dtype=float)) * 1000
            ys = np.arange(1, xs.size + 1) / xs.size
            label = scheme if len(all_jobs) == 1 else f"{scheme}, {labels.get(job, f'job {job}')}"
            ax.step(np.concatenate([[xs[0]], xs]), np.concatenate([[0], ys]), where="post",
                    color=_colour(scheme, si), linestyle=_JOB_STYLES[all_jobs.index(job) % len(_JOB_STYLES)],
                    label=f"{label} (n={xs.size})")
            drawn = True
    ax.set_xlabel("CCT (ms)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    if drawn:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Collective completion time" + (f"\n{title}" if title else ""), fontsize=11)
    if notes:
        fig.text(0.02, 0.02, "\n".join(notes), va="bottom", ha="left", fontsize=8)
    fig.tight_layout(rect=(0, notes_in / (4.6 + notes_in), 1, 1))
    return fig


def plot_step_lead(
    path: str | Path,
    leads: Mapping[str, Mapping[int, tuple[np.ndarray, np.ndarray]]],
    *,
    title: str | None = None,
    job_labels: Mapping[int, str] | None = None,
) -> None:
    """Save :func:`step_lead_figure` as a PNG."""
    step_lead_figure(leads, title=title, job_labels=job_labels).savefig(str(path))


def rolling_mean(times: np.ndarray, values: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Centred moving average of ``values`` over ``window`` samples (times of the centres)."""
    window = max(1, min(int(window), len(values)))
    if window <= 1 or len(values) < 2:
        return np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    kernel = np.ones(window) / window
    smooth = np.convolve(values, kernel, mode="valid")
    centres = np.convolve(times, kernel, mode="valid")
    return centres, smooth


def step_lead_figure(
    leads: Mapping[str, Mapping[int, tuple[np.ndarray, np.ndarray]]], *, title: str | None = None,
    job_labels: Mapping[int, str] | None = None,
) -> Any:
    """Step lead (steps) over time since the scheme's first step: a panel per job (rows)
    and scheme (columns), the raw trace faint and its rolling mean (window
    :data:`LEAD_WINDOW_FRACTION` of the span) bold, so that 20+ iterations stay readable;
    integer y ticks, one y scale for all panels. ``title`` names the topology/run."""
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    schemes = list(leads) or ["(none)"]
    jobs = sorted({j for s in schemes for j in leads.get(s, {})}) or [0]
    labels = job_labels or {}
    fig = _figure(5.0 * len(schemes) + 1.0, 2.3 * len(jobs) + 1.0)
    fig.suptitle("Step lead" + (f": {title}" if title else ""), fontsize=11)
    ymax = 1.0
    axes = []
    for r, job in enumerate(jobs):
        for c, scheme in enumerate(schemes):
            ax = fig.add_subplot(len(jobs), len(schemes), r * len(schemes) + c + 1)
            axes.append(ax)
            per_job = leads.get(scheme, {})
            starts = [t[0] for t, _ in per_job.values() if len(t)]
            t0 = min(starts) if starts else 0.0
            times, values = per_job.get(job, (np.zeros(0), np.zeros(0)))
            colour = _colour(scheme, c)
            if len(times):
                rel = np.asarray(times, dtype=float) - t0
                ax.plot(rel, values, drawstyle="steps-post", color=colour, alpha=0.25, linewidth=0.5,
                        label="raw")
                window = max(1, round(len(values) * LEAD_WINDOW_FRACTION))
                mt, mv = rolling_mean(rel, np.asarray(values, dtype=float), window)
                span_ms = (rel[-1] - rel[0]) * LEAD_WINDOW_FRACTION * 1000
                ax.plot(mt, mv, color=colour, linewidth=1.6, label=f"rolling mean ({span_ms:.0f} ms)")
                ymax = max(ymax, float(np.max(values)))
                ax.legend(loc="upper right", fontsize=7)
            name = scheme if len(jobs) == 1 else f"{scheme}, {labels.get(job, f'job {job}')}"
            ax.set_title(name, fontsize=9)
            if c == 0:
                ax.set_ylabel("step lead (steps)")
            if r == len(jobs) - 1:
                ax.set_xlabel("time (s)")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
    for ax in axes:
        ax.set_ylim(0, ymax + 0.5)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------
# Terminal table
# --------------------------------------------------------------------------------------


def _ms(v: Any) -> str:
    """Seconds as milliseconds with at least 3 significant digits (5.829, 61.07, 1470.3)."""
    if v is None:
        return "-"
    ms = v * 1000
    return f"{ms:.3f}" if abs(ms) < 10 else f"{ms:.2f}" if abs(ms) < 100 else f"{ms:.1f}"


def _num(v: Any, fmt: str = "{:.2f}") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return fmt.format(v)


_VERDICT_STYLE = {FASTER: "green", SLOWER: "red", NOISE: "yellow", TOO_FEW: "dim"}


#: Verdict -> the compact mark in the table's ``vs baseline`` cell (the legend says which is which).
_VERDICT_MARK = {FASTER: "+", SLOWER: "-", NOISE: "~", TOO_FEW: "?"}
_LEGEND = "+ faster, - slower, ~ within the noise, ? too few iterations"


def _vs_baseline(comp: Mapping[str, Any] | None) -> str:
    """``0.99 [0.92,1.17] ~``: mean CCT ratio, its 95% CI and the verdict's mark (:data:`_VERDICT_MARK`)."""
    if not comp or comp.get("ratio") is None:
        return "-"
    ci = comp.get("ci95")
    verdict = str(comp.get("verdict"))
    style = _VERDICT_STYLE.get(verdict, "")
    mark = _VERDICT_MARK.get(verdict, verdict)
    interval = f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else ""
    return f"{comp['ratio']:.2f}{interval} [{style}]{mark}[/]" if style else f"{comp['ratio']:.2f}{interval} {mark}"


def _machine(load: Mapping[str, Any] | None) -> str:
    """The table's machine column: ``quiet``, or ``disturbed:`` and the figures."""
    if not isinstance(load, Mapping) or load.get("worker_late_wakeups") is None and load.get("worker_cpu_wait") is None:
        return "-"
    if not load.get("disturbed"):
        return "[green]quiet[/]"
    figures = []
    late, step = load.get("start_lateness_max_ms"), load.get("step_ms")
    if late is not None and step is not None and late > step:
        figures.append(f"late start {late:.0f} ms")
    if load.get("worker_late_wakeups") is not None:
        figures.append(f"{load['worker_late_wakeups']:.0%} late")
    if load.get("worker_cpu_wait") is not None:
        figures.append(f"{load['worker_cpu_wait']:.0%} wait")
    return "[yellow]busy: " + ", ".join(figures) + "[/]"


def scheme_names(summary: Mapping[str, Any]) -> list[str]:
    """The schemes of a summary.json, in report order: its blocks that hold a scheme's results
    (``iterations`` and ``verified``), not the run's other top-level keys (``comparison``,
    ``paths``, ``placebo_calibration``, ``blocks``, ...)."""
    return _ordered(k for k, v in summary.items() if isinstance(v, Mapping) and "iterations" in v and "verified" in v)


def _jobs_of(s: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Per-job blocks of a scheme summary; an older summary without ``jobs`` is one row."""
    jobs = s.get("jobs")
    if isinstance(jobs, Mapping) and jobs:
        return sorted(jobs.items(), key=lambda kv: int(kv[0]))
    return [("-", s)]


def _column(table: Table, header: str, justify: str = "right", wrap: bool = False) -> None:
    table.add_column(header, justify=justify, no_wrap=not wrap)  # type: ignore[arg-type]


def paths_table(paths: Mapping[str, Any] | None) -> RenderableType | None:
    """The links that carry two ring flows or more (most shared first), or None without ``paths``."""
    if not isinstance(paths, Mapping) or not paths.get("links"):
        return None
    links = [x for x in paths["links"] if x.get("flows", 0) >= 2]
    table = Table(header_style="bold", caption_justify="left",
                  caption=f"routing {paths.get('routing')}: {len(paths.get('flows', []))} ring flows, at most "
                          f"{paths.get('max_flows_per_link')} on one link; every path in flows.csv"
                          + (f"; {len(links) - SHARED_LINKS_SHOWN} more shared links in summary.json"
                             if len(links) > SHARED_LINKS_SHOWN else ""))
    _column(table, "shared link", "left")
    _column(table, "ring flows")
    _column(table, "job:rank", "left", wrap=True)
    for x in links[:SHARED_LINKS_SHOWN]:
        table.add_row(f"{x['from']} -> {x['to']}", str(x["flows"]), " ".join(x.get("ring_flows", [])))
    if not links:
        table.add_row("(none: no link carries two ring flows)", "", "")
    return table


def report_table(summary: Mapping[str, Any]) -> RenderableType:
    """Rich tables of a summary (see :func:`summary_dict`), readable at 100 columns: timing
    (CCTs, the bound, the comparison as ``ratio [95% CI] mark``) and counters (step lead,
    marks, drops, verified, machine), a row per scheme and job in each; then one closing line
    per job with the verdict in words."""
    dilation = (f"; times in scenario time, run dilated by D = {summary['dilation']:g} "
                f"(wall-clock CCT = D x CCT, cct_wall_s in summary.json)"
                if isinstance(summary.get("dilation"), int | float) else "")
    if summary.get("mode") == "sim":
        dilation += "; virtual time: every time is simulated (docs/virtual-time.md)"
    probes = summary.get("dilation_auto")
    if isinstance(probes, list) and probes:
        chosen = summary.get("dilation", 1)
        words = ", ".join(f"D = {p.get('dilation', 0):g} {'busy' if p.get('disturbed') else 'kept up'}"
                          for p in probes if isinstance(p, Mapping))
        dilation += f"; --dilation auto chose D = {chosen:g} ({words})"
    if isinstance(summary.get("order_words"), str):
        dilation += f"; order {summary['order_words']}"
    timing = Table(title="symphony-emu results", header_style="bold", caption_justify="left",
                   caption="CCT/bound: mean CCT over the bandwidth bound; JCT: the job's completion time; vs baseline: mean CCT ratio "
                           f"[95% CI] and {_LEGEND}{dilation}")
    counters = Table(header_style="bold", caption_justify="left",
                     caption="step lead in steps; marks and drops: all switches, whole run of the scheme")
    _column(timing, "scheme", "left")
    _column(timing, "job", "left", wrap=True)
    for header in ("iters", "CCT\nmean ms", "p50\nms", "p99\nms", "CCT/\nbound", "JCT\nms"):
        _column(timing, header)
    _column(timing, "vs baseline\nratio [CI]", "left")
    _column(counters, "scheme", "left")
    _column(counters, "job", "left", wrap=True)
    for header in ("lead\nmax", "lead\nmean", "Symphony\nmarks", "queue\nmarks", "drops"):
        _column(counters, header)
    _column(counters, "verified", "center")
    _column(counters, "machine", "left", wrap=True)  # quiet, or busy with the late wake-ups and CPU wait
    comparison = summary.get("comparison") or {}
    schemes = scheme_names(summary)
    for scheme in schemes:
        s = summary[scheme]
        marks = s.get("marks", {})
        for i, (job, block) in enumerate(_jobs_of(s)):
            cct = block.get("cct_s", {})
            lead = block.get("step_lead", {})
            what = ", ".join(str(x) for x in (block.get("collective"),
                                               f"{block['ranks']} ranks" if block.get("ranks") else None) if x)
            first = i == 0
            name, job_cell = scheme if first else "", f"{job} ({what})" if what else str(job)
            timing.add_row(
                name,
                job_cell,
                _num(block.get("iterations"), "{}"),
                _ms(cct.get("mean")),
                _ms(cct.get("p50")),
                _ms(cct.get("p99")),
                _num(block.get("cct_over_bound", {}).get("mean")),
                _ms(block.get("jct_s")),
                "" if scheme == "baseline" else _vs_baseline(comparison.get(scheme, {}).get(str(job))),
            )
            counters.add_row(
                name,
                job_cell,
                _num(lead.get("max"), "{:.0f}"),
                _num(lead.get("mean")),
                _num(marks.get("symphony"), "{}") if first else "",
                _num(marks.get("queue"), "{}") if first else "",
                _num(s.get("drops"), "{}") if first else "",
                ("[green]yes[/]" if block.get("verified", s.get("verified")) else "[red]no[/]"),
                _machine(s.get("overload")) if first else "",
            )
    lines: list[RenderableType] = [timing, counters]
    shared = paths_table(summary.get("paths"))
    if shared is not None:
        lines.append(shared)
    for sch in schemes:
        load = summary[sch].get("overload") or {}
        if load.get("disturbed"):
            lines.append(Text(f"the machine disturbed the {sch} run ({'; '.join(load.get('reasons', []))}): CPU "
                              "contention (other processes, or more busy processes than cores), so its CCTs are the "
                              "machine's as much as the network's; re-run on a quiet machine", style="yellow"))
    if not comparison:
        lines.append(Text("CCT mean ratio symphony/baseline: - (needs both schemes)", style="dim"))
    for scheme, jobs in comparison.items():
        for job, comp in jobs.items():
            prefix = f"job {job} " if len(jobs) > 1 else ""
            style = _VERDICT_STYLE.get(str(comp.get("verdict")), "")
            lines.append(Text(f"{prefix}CCT mean ratio {scheme}/baseline: {comparison_words(scheme, comp)}",
                              style=f"bold {style}".strip()))
    return Group(*lines)
