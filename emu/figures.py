"""The paper's figures, one command each: ``symphony-emu figure N [--quick]``.

Symphony (arXiv 2604.16880) evaluates step overlap over time (Fig. 2, 4), the CCT
distribution of ring all-reduce (Fig. 5), normalized JCT as compute shrinks (Fig. 6),
robustness across network conditions (Fig. 8) and per-flow rates on its Tofino2 prototype
(Fig. 9); docs/DESIGN.md section 11. Each figure here runs its scenarios (virtual time, except
Fig. 9: real time under Mininet on the P4 switches) with the baseline, Symphony and the
references (docs/DESIGN.md section 11): the placebo (random marks of Symphony's volume, calibrated
from the Symphony run of the same seed) and the ideal alignment (a per-step barrier at the hosts,
hostapps.barrier), then writes into its folder:

- ``figN.png``: the plot;
- ``figN.csv``: the numbers behind it, one row per plotted value;
- ``figN.md``: a table with the paper's claim beside our number, the 95% interval, the runs
  and seeds it comes from, and the baseline's tuning (ECN ramp, DCQCN timers) it ran with;
- ``runs/``: every run's results folder (emu.sweep layout; ``symphony-emu report`` works on
  each), so an interrupted figure resumes.

``--quick`` runs a small version of the same figure (short runs, fewer seeds) for CI; its
numbers are a smoke test, not a result. The scenarios are the shipped files (topologies/,
written by emu.fabric.SCENARIOS): dc-mix-stragglers (several jobs with stragglers sharing one
link) unless a figure says otherwise; ``--quick`` builds a small one with the same builder
(emu.fabric.mix_stragglers). Statistics are emu.metrics.compare_ccts's (BCa bootstrap over the pooled iterations
of every seed) and per-seed ratios.
"""

from __future__ import annotations

import csv
import logging
import re
import shutil
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: The schemes every virtual-time figure runs: the two the paper compares and both references.
FIGURE_SCHEMES = ("baseline", "symphony", "placebo", "ideal")
#: The paper's headline: up to 54% lower job/collective communication time (abstract).
PAPER_BEST_GAIN = 0.54


class FigureError(ValueError):
    """A figure that cannot be made (unknown number, a failed run); one line."""


# --------------------------------------------------------------------------------------
# Scenarios: the shipped files (topologies/, emu.fabric.SCENARIOS), small ones for --quick
# --------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def shipped(name: str) -> dict[str, Any]:
    """The shipped scenario ``topologies/NAME.yaml`` as a document (emu.fabric.SCENARIOS writes it)."""
    import yaml

    return yaml.safe_load((REPO / "topologies" / f"{name}.yaml").read_text())


def quick_mix() -> dict[str, Any]:
    """``--quick``'s dc-mix-stragglers: the same builder (emu.fabric.mix_stragglers), 4-rank rings, short runs."""
    from emu import fabric

    return fabric.mix_stragglers(name="dc-mix-stragglers-quick", description="dc-mix-stragglers, small (--quick)",
                                 ranks=4, straggler_rank=1, big_size="512KiB", big_iterations=2,
                                 small_size="256KiB", small_iterations=4)


def mix(ctx: FigureContext) -> dict[str, Any]:
    """The figures' multi-job scenario: topologies/dc-mix-stragglers.yaml (``--quick``: :func:`quick_mix`)."""
    return quick_mix() if ctx.quick else shipped("dc-mix-stragglers")


def small_job(doc: dict[str, Any]) -> int:
    """The job with the fewest ranks (the last such): the victim of a mix, the only job otherwise."""
    jobs = doc["jobs"]
    return min(jobs, key=lambda j: (len(j["ranks"]), -j["id"]))["id"]


def with_changes(doc: dict[str, Any], change: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """A deep copy of ``doc`` that ``change`` edited in place."""
    import copy

    out = copy.deepcopy(doc)
    if change:
        change(out)
    return out


def tuning(doc: dict[str, Any]) -> str:
    """The baseline's tuning and Symphony's curve in words, for a figure's table."""
    ecn = doc.get("ecn")
    if ecn:
        ramp = f"ECN ramp {ecn.get('kmin_packets')}-{ecn.get('kmax_packets')} packets, pmax {ecn.get('pmax', 1.0):g}"
    else:
        ramp = "ECN ramp of HPCC's DCQCN preset (97-389 packets, pmax 0.2)"
    timer = (doc.get("dcqcn") or {}).get("rate_increase_period", "300us")
    sym = doc.get("symphony") or {}
    return (f"{ramp}, DCQCN rate-increase timer {timer}; Symphony T = {sym.get('lead_threshold')}, "
            f"slope {sym.get('slope')}, gate {sym.get('queue_gate')}")


# --------------------------------------------------------------------------------------
# Running a figure's scenarios
# --------------------------------------------------------------------------------------


@dataclass
class FigureContext:
    """Where a figure writes and how big it runs."""

    number: int
    out: Path
    quick: bool
    workers: int = 1
    scheduler: str | None = None

    @property
    def seeds(self) -> list[int]:
        return [1] if self.quick else [1, 2, 3]


def run_grid(ctx: FigureContext, scenarios: dict[str, dict[str, Any]], *,
             schemes: Sequence[str] = FIGURE_SCHEMES, seeds: Sequence[int] | None = None) -> dict[str, dict[str, Any]]:
    """Run every scenario (label -> topology document) with ``schemes`` over the seeds.

    Each document is written to ``ctx.out/scenarios/LABEL.yaml`` (figures that use the same
    label and document share its runs; a label whose document changed, e.g. after an edit of a
    shipped file, has its old runs removed and run again). Returns label -> ``{"results": {(scheme, job):
    emu.sweep.SchemeJobResult}, "placebo": [...], "dirs": {scheme: [run folders]}, "scenario":
    path, "doc": document}``. Runs live in ``ctx.out/runs`` (reused: an interrupted figure resumes).
    """
    import yaml

    from emu import sweep

    runs = ctx.out / "runs"
    scen_dir = ctx.out / "scenarios"
    scen_dir.mkdir(parents=True, exist_ok=True)
    all_tasks, plans = [], {}
    for label, doc in scenarios.items():
        path = scen_dir / f"{re.sub(r'[^A-Za-z0-9._-]+', '-', label).strip('-')}.yaml"
        text = yaml.safe_dump(doc, sort_keys=False)
        stale = path.exists() and path.read_text() != text
        if stale or not path.exists():
            path.write_text(text)
        spec = sweep.SweepSpec(topology=[str(path)], schemes=list(schemes), seeds=list(seeds or ctx.seeds))
        tasks, configs = sweep.plan_tasks(spec, [path], runs)
        if stale:  # a run folder is named by the file's path: runs of the old text must not be reused
            for task in tasks:
                shutil.rmtree(task.out, ignore_errors=True)
        all_tasks += tasks
        plans[label] = (configs[0], path, doc)
    done = sweep.execute(all_tasks, workers=ctx.workers, scheduler=ctx.scheduler)
    out = {}
    for label, (config, path, doc) in plans.items():
        collected = sweep.collect([config], done)[0]
        dirs = {s: [k for k in keys if k in done] for s, keys in config["tasks"].items()}
        out[label] = {"results": collected["results"], "placebo": collected["placebo"], "dirs": dirs,
                      "scenario": path, "doc": doc}
    return out


def ratio_cell(results: dict[tuple[str, int], Any], scheme: str, job: int) -> tuple[str, Any]:
    """``0.71 [0.65, 0.78] faster`` of scheme vs baseline for one job, and the Comparison."""
    from emu import sweep

    comp = sweep.comparisons(results).get((scheme, job))
    if comp is None or comp.ratio is None:
        return "-", comp
    ci = f" [{comp.ci_low:.2f}, {comp.ci_high:.2f}]" if comp.ci_low is not None else ""
    return f"{comp.ratio:.2f}{ci} {comp.verdict}", comp


def per_seed_ratios(results: dict[tuple[str, int], Any], scheme: str, job: int) -> list[float]:
    base, other = results.get(("baseline", job)), results.get((scheme, job))
    if base is None or other is None:
        return []
    return [other.per_seed[s] / base.per_seed[s] for s in sorted(other.per_seed) if s in base.per_seed]


def placebo_volume_text(placebo: Sequence[dict[str, Any]]) -> str:
    """Placebo marks / Symphony marks per seed, over the jobs Symphony marked."""
    parts = []
    for cal in placebo:
        sym = sum(c["symphony_marks"] for c in cal.values())
        pla = sum(c["placebo_marks"] for c in cal.values())
        parts.append(f"{pla}/{sym}" if sym else "0/0")
    return ", ".join(parts) or "-"


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def new_figure(width: float, height: float, ncols: int = 1) -> tuple[Any, Any]:
    from emu.report import _figure

    fig = _figure(width, height)
    axes = fig.subplots(1, ncols)
    return fig, axes


def scheme_colour(scheme: str, index: int = 0) -> str:
    from emu.report import _colour

    return _colour(scheme, index)


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def figure_header(ctx: FigureContext, title: str, claim: str, runs_text: str, tuning: str) -> str:
    mode = "quick (a smoke test: too few runs for a result)" if ctx.quick else "full"
    return (f"# Fig. {ctx.number}: {title}\n\n"
            f"- paper (arXiv 2604.16880): {claim}\n"
            f"- ours: `symphony-emu figure {ctx.number}{' --quick' if ctx.quick else ''}`, {mode}; {runs_text}\n"
            f"- baseline tuning: {tuning}\n\n")


# --------------------------------------------------------------------------------------
# The figures
# --------------------------------------------------------------------------------------


def _lead_series(run_dir: Path, scheme: str, job: int) -> tuple[np.ndarray, np.ndarray]:
    from emu import metrics

    records = metrics.load_records(run_dir / scheme)
    return metrics.step_lead_series([s for s in records.steps if s.job == job])


def fig_step_overlap(ctx: FigureContext, *, cdf: bool) -> str:
    """Fig. 2 (step lead over time, ``cdf`` False) and Fig. 4 (its distribution, ``cdf`` True)."""
    doc = mix(ctx)
    res = run_grid(ctx, {"mix": doc})["mix"]
    job = 0  # a big job: its straggler makes the lead
    fig, ax = new_figure(7.0, 3.6)
    rows, table = [], []
    for i, scheme in enumerate(FIGURE_SCHEMES):
        leads_all = []
        for d in res["dirs"].get(scheme, []):
            seed = int(Path(d).name.split("-")[0][4:])
            t, lead = _lead_series(Path(d), scheme, job)
            if not t.size:
                continue
            leads_all.append(lead)
            if not cdf and seed == ctx.seeds[0]:
                ax.plot((t - t[0]) * 1e3, lead, drawstyle="steps-post", color=scheme_colour(scheme, i), label=scheme,
                        linewidth=1)
            rows += [(scheme, seed, f"{(tt - t[0]) * 1e3:.6f}", f"{v:g}") for tt, v in zip(t, lead, strict=True)]
        if not leads_all:
            continue
        pooled = np.concatenate(leads_all)
        if cdf:
            xs = np.sort(pooled)
            ax.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=scheme_colour(scheme, i), label=scheme)
        r = res["results"].get((scheme, job))
        table.append([scheme, f"{pooled.mean():.2f}", f"{np.percentile(pooled, 99):.0f}", f"{pooled.max():.0f}",
                      f"{1e3 * r.mean:.3f}" if r and r.mean else "-",
                      "" if scheme == "baseline" else ratio_cell(res["results"], scheme, job)[0]])
    if cdf:
        ax.set_xlabel("step lead (steps)")
        ax.set_ylabel("CDF over time")
    else:
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("step lead (steps)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"job {job} of {doc['name']} ({len(doc['jobs'][job]['ranks'])} ranks, one straggler), "
                 f"{'distribution' if cdf else 'seed 1'}", fontsize=10)
    name = f"fig{ctx.number}"
    fig.savefig(ctx.out / f"{name}.png")
    write_csv(ctx.out / f"{name}.csv", ("scheme", "seed", "time_ms", "step_lead"), rows)
    claim = ("the degree of step overlap grows over time in the baseline" if not cdf else
             "with Symphony the step overlap stays bounded, the baseline's spreads")
    text = figure_header(ctx, "step overlap over time" if not cdf else "step overlap, baseline vs Symphony", claim,
                         f"job {job} of {doc['name']}, seeds {ctx.seeds}, lead sampled over each run",
                         tuning(doc))
    text += md_table(("scheme", "lead mean", "lead p99", "lead max", f"job {job} mean CCT ms",
                      "CCT vs baseline [95% CI]"), table)
    text += f"\nPlacebo marks / Symphony marks per seed: {placebo_volume_text(res['placebo'])}\n"
    return text


def fig_cct_cdf(ctx: FigureContext) -> str:
    """Fig. 5: CCT CDF of every job, every scheme; the ratios with their intervals."""
    doc = mix(ctx)
    res = run_grid(ctx, {"mix": doc})["mix"]
    jobs = sorted({job for _, job in res["results"]})
    fig, axes = new_figure(4.0 * len(jobs), 3.4, len(jobs))
    axes = np.atleast_1d(axes)
    rows, table = [], []
    for ax, job in zip(axes, jobs, strict=True):
        for i, scheme in enumerate(FIGURE_SCHEMES):
            r = res["results"].get((scheme, job))
            if not r or not r.ccts:
                continue
            xs = np.sort(np.asarray(r.ccts)) * 1e3
            ax.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=scheme_colour(scheme, i), label=scheme)
            rows += [(scheme, job, f"{c:.6f}") for c in xs]
            cell, _ = ratio_cell(res["results"], scheme, job) if scheme != "baseline" else ("", None)
            seeds = per_seed_ratios(res["results"], scheme, job)
            table.append([job, scheme, len(r.ccts), f"{1e3 * r.mean:.3f}", f"{np.percentile(xs, 99):.3f}", cell,
                          " ".join(f"{x:.2f}" for x in seeds)])
        role = "small job" if job == small_job(doc) else "straggler job"
        ax.set_title(f"job {job} ({role})", fontsize=9)
        ax.set_xlabel("CCT (ms)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("CDF")
    axes[0].legend(fontsize=7)
    fig.savefig(ctx.out / "fig5.png")
    write_csv(ctx.out / "fig5.csv", ("scheme", "job", "cct_ms"), rows)
    text = figure_header(ctx, "CCT distribution of ring all-reduce",
                         f"Symphony shifts the CCT CDF left; up to {PAPER_BEST_GAIN:.0%} lower job/collective "
                         "communication time", f"{doc['name']}, seeds {ctx.seeds}", tuning(doc))
    text += md_table(("job", "scheme", "CCTs", "mean ms", "p99 ms", "vs baseline [95% CI]", "per seed"), table)
    text += f"\nPlacebo marks / Symphony marks per seed: {placebo_volume_text(res['placebo'])}\n"
    return text


def _training_mix(ctx: FigureContext) -> dict[str, Any]:
    """dc-mix-stragglers whose small job trains a model (compute between its all-reduces)."""
    def change(doc: dict[str, Any]) -> None:
        job = doc["jobs"][small_job(doc)]
        job.pop("size_bytes", None)
        job["iterations"] = 3 if ctx.quick else 5  # the DCQCN timer check counts iterations, not buckets
        job["model"] = {"layers": 8, "layer_bytes": "128KiB" if ctx.quick else "512KiB", "bucket_layers": 2,
                        "forward_ms": "0.2ms", "backward_ratio": 2, "reduction": 1}
    doc = with_changes(mix(ctx), change)
    doc["name"] += "-training"
    return doc


def compute_families(ctx: FigureContext) -> dict[str, tuple[dict[str, Any], list[int]]]:
    """Fig. 6's scenarios: family -> (document, the reductions it runs at), in run order."""
    if ctx.quick:
        return {"mix": (_training_mix(ctx), [1, 16])}
    return {"train": (shipped("dc-train-8"), [1, 4, 16, 64]), "mix": (_training_mix(ctx), [1, 64])}


def fig_jct_compute(ctx: FigureContext) -> str:
    """Fig. 6: normalized JCT (scheme / baseline) as the compute shrinks 1x-64x (the model's reduction).

    Two families: the shipped training job dc-train-8 (one job, ECMP leaf-spine) and
    dc-mix-stragglers whose small job trains a model (4 buckets of 2 layers per iteration)
    beside the two straggler jobs (at 1x and 64x only: a mix run costs about five of dc-train-8's).
    ``--quick``: the mix only, at 1x and 16x.
    """
    families = {fam: doc for fam, (doc, _) in compute_families(ctx).items()}
    factors = {fam: fs for fam, (_, fs) in compute_families(ctx).items()}

    def reduced(doc: dict[str, Any], f: int) -> dict[str, Any]:
        return with_changes(doc, lambda d: d["jobs"][small_job(d)]["model"].__setitem__("reduction", f))

    scenarios = {f"{fam}-compute-{f}x": reduced(doc, f) for fam, doc in families.items() for f in factors[fam]}
    res = run_grid(ctx, scenarios)
    fig, axes = new_figure(5.0 * len(families), 3.6, len(families))
    rows, table = [], []
    for ax, (fam, doc) in zip(np.atleast_1d(axes), families.items(), strict=True):
        job = small_job(doc)
        for i, scheme in enumerate(s for s in FIGURE_SCHEMES if s != "baseline"):
            ys, lo, hi = [], [], []
            for f in factors[fam]:
                r = res[f"{fam}-compute-{f}x"]["results"]
                base, other = r.get(("baseline", job)), r.get((scheme, job))
                seeds = sorted(set(base.jct) & set(other.jct)) if base and other else []
                ratios = [other.jct[s] / base.jct[s] for s in seeds]
                mean = statistics.fmean(ratios) if ratios else float("nan")
                ci = _seed_ci(ratios)
                ys.append(mean)
                lo.append(ci[0])
                hi.append(ci[1])
                base_jct = statistics.fmean(base.jct.values()) if base and base.jct else float("nan")
                rows.append((doc["name"], scheme, job, f, f"{mean:.4f}", f"{ci[0]:.4f}", f"{ci[1]:.4f}", len(ratios),
                             f"{1e3 * base_jct:.4f}"))
                table.append([doc["name"], f"{f}x", scheme, f"{1e3 * base_jct:.3f}",
                              f"{mean:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]", len(ratios), ratio_cell(r, scheme, job)[0]])
            ax.errorbar(factors[fam], ys, yerr=[np.subtract(ys, lo), np.subtract(hi, ys)], marker="o", capsize=3,
                        color=scheme_colour(scheme, i + 1), label=scheme)
        ax.axhline(1.0, color="tab:blue", linewidth=0.8, linestyle="--", label="baseline")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("computation reduction (model.reduction)")
        ax.set_ylabel(f"JCT / baseline JCT (job {job})")
        ax.set_title(doc["name"], fontsize=9)
        ax.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.savefig(ctx.out / "fig6.png")
    write_csv(ctx.out / "fig6.csv", ("scenario", "scheme", "job", "factor", "jct_ratio_mean", "ci_low", "ci_high",
                                     "seeds", "baseline_jct_ms"), rows)
    text = figure_header(ctx, "normalized JCT as computation shrinks",
                         "Symphony's JCT gain grows as compute shrinks (1x-64x), communication-bound jobs gain most",
                         f"{', '.join(d['name'] for d in families.values())} (the training job: the small job of the "
                         f"mix, job 0 of dc-train-8); JCT ratio per seed, mean and 95% bootstrap interval over seeds "
                         f"{ctx.seeds}; CCT ratio over pooled iterations",
                         "; ".join(f"{d['name']}: {tuning(d)}" for d in families.values()))
    text += md_table(("scenario", "reduction", "scheme", "baseline JCT ms", "JCT / baseline [95% CI over seeds]",
                      "seeds", "CCT vs baseline [95% CI]"), table)
    return text


def _seed_ci(values: Sequence[float]) -> tuple[float, float]:
    """95% bootstrap (percentile) interval of the mean of per-seed values; (v, v) for one value."""
    vals = [v for v in values if np.isfinite(v)]
    if not vals:
        return float("nan"), float("nan")
    if len(vals) < 2 or len(set(vals)) == 1:
        return vals[0] if len(vals) == 1 else min(vals), max(vals)
    from scipy.stats import bootstrap

    res = bootstrap((np.asarray(vals),), np.mean, confidence_level=0.95, n_resamples=2000, method="percentile",
                    random_state=0)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def robustness_conditions(ctx: FigureContext) -> dict[str, tuple[dict[str, Any], int]]:
    """Fig. 8's conditions: label -> (scenario document, the job compared). Each changes one thing
    of the reference (dc-mix-stragglers; its small job); the last is the shipped ECMP leaf-spine.

    The baseline's own tuning (ECN ramp, DCQCN timer) is not a condition here: on the reference
    every other ramp and timer tried makes the baseline's small job slower (docs/paper.md), so
    such a row would compare Symphony with an untuned baseline.
    """
    ref = mix(ctx)
    victim = small_job(ref)
    big = [j["id"] for j in ref["jobs"] if j["id"] != victim]

    def stragglers(rate: str | None) -> Callable[[dict[str, Any]], None]:
        def change(doc: dict[str, Any]) -> None:
            for j in big:
                if rate is None:
                    doc["jobs"][j].pop("stragglers", None)
                else:
                    doc["jobs"][j]["stragglers"][0]["nic_mbps"] = rate
        return change

    def background(doc: dict[str, Any]) -> None:
        small = doc["jobs"][victim]["ranks"]
        doc["background"] = [{"src": small[0], "dst": small[1], "rate_mbps": "20Gbit/s", "on_ms": "200us",
                              "off_ms": "800us", "start_ms": "0us", "exponential": True, "packet_bytes": 1472}]

    out = {"reference": (ref, victim), "no straggler": (with_changes(ref, stragglers(None)), victim)}
    if ctx.quick:
        return out
    from emu import fabric

    three = fabric.mix_stragglers(name="dc-mix-stragglers-3", description="dc-mix-stragglers with three big jobs",
                                  big_jobs=3)
    out.update({
        "straggler 10G": (with_changes(ref, stragglers("10Gbit/s")), victim),
        "three straggler jobs": (three, small_job(three)),
        "background 20G": (with_changes(ref, background), victim),
        "ECMP leaf-spine (dc-ecmp-16)": (shipped("dc-ecmp-16"), 0),
    })
    return out


def fig_robustness(ctx: FigureContext) -> str:
    """Fig. 8: one job's CCT ratio across network conditions (:func:`robustness_conditions`)."""
    conditions = robustness_conditions(ctx)
    labels = list(conditions)
    # the reference is Fig. 2/4/5's scenario under the same label: the same runs
    res = run_grid(ctx, {("mix" if label == "reference" else label): doc for label, (doc, _) in conditions.items()})
    res["reference"] = res.pop("mix")
    fig, ax = new_figure(8.0, 3.8)
    compared = ("symphony", "placebo", "ideal")
    width = 0.8 / len(compared)
    rows, table = [], []
    for i, scheme in enumerate(compared):
        ys, err = [], []
        for label in labels:
            doc, job = conditions[label]
            r = res[label]["results"]
            cell, comp = ratio_cell(r, scheme, job)
            ratio = comp.ratio if comp and comp.ratio else float("nan")
            lo = comp.ci_low if comp and comp.ci_low is not None else ratio
            hi = comp.ci_high if comp and comp.ci_high is not None else ratio
            ys.append(ratio)
            err.append((ratio - lo, hi - ratio))
            others = [j for (s, j), c in _comps(r).items() if s == scheme and j != job and c.ratio]
            worst_job = max(others, key=lambda j: _comps(r)[(scheme, j)].ratio, default=None)
            worst = _comps(r)[(scheme, worst_job)].ratio if worst_job is not None else float("nan")
            rows.append((label, doc["name"], scheme, job, f"{ratio:.4f}", f"{lo:.4f}", f"{hi:.4f}", f"{worst:.4f}"))
            table.append([label, job, scheme, cell,
                          "-" if worst_job is None else f"job {worst_job}: {ratio_cell(r, scheme, worst_job)[0]}",
                          placebo_volume_text(res[label]["placebo"]) if scheme == "placebo" else ""])
        x = np.arange(len(labels)) + (i - (len(compared) - 1) / 2) * width
        ax.bar(x, ys, width, yerr=np.array(err).T, capsize=2, color=scheme_colour(scheme, i + 1), label=scheme)
    ax.axhline(1.0, color="tab:blue", linewidth=0.8, linestyle="--")
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel("mean CCT / baseline (the job compared)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(ctx.out / "fig8.png", bbox_inches="tight")
    write_csv(ctx.out / "fig8.csv", ("condition", "scenario", "scheme", "job", "ratio", "ci_low", "ci_high",
                                     "worst_other_job_ratio"), rows)
    ref, victim = conditions["reference"]
    text = figure_header(ctx, "robustness across network conditions",
                         "Symphony's gain holds across network conditions",
                         f"{ref['name']}'s small job {victim} (each row changes one thing; the last row is "
                         f"dc-ecmp-16's one job); seeds {ctx.seeds}",
                         tuning(ref) + " (the reference)")
    text += md_table(("condition", "job", "scheme", "CCT vs baseline [95% CI]", "the other job it slows most [95% CI]",
                      "placebo/Symphony marks"), table)
    return text


def _comps(results: dict[tuple[str, int], Any]) -> dict[tuple[str, int], Any]:
    from emu import sweep

    return sweep.comparisons(results)


def fig_flow_rates(ctx: FigureContext) -> str:
    """Fig. 9: per-flow DCQCN rates over time, from a real-time run on the P4 switches (Mininet).

    Baseline and Symphony only: the references need virtual time (the ideal) or a calibration
    run (the placebo) that a one-run hardware-style figure does not have.
    """
    from emu import metrics, runner

    repo = Path(__file__).resolve().parent.parent
    topology = repo / "topologies" / "e2e_lead.yaml"
    iterations, size = (2, 16384) if ctx.quick else (10, 65536)
    run_dir = ctx.out / "runs" / "mininet"
    summary = run_dir / "summary.json"
    if not summary.exists():
        result = runner.run(topology, schemes=("baseline", "symphony"), iterations=iterations, size=size,
                            mode="mininet", out=run_dir, seed=1)
        if not result.ok:
            raise FigureError(f"figure 9: the real-time run failed: {result.failure}")
    import json

    s = json.loads(summary.read_text())
    fig, axes = new_figure(9.0, 3.4, 2)
    rows, table = [], []
    for ax, scheme in zip(np.atleast_1d(axes), ("baseline", "symphony"), strict=True):
        records = metrics.load_records(run_dir / scheme)
        flows = [r for r in sorted(records.transport, key=lambda r: r.get("rank", 0)) if r.get("rate_samples")]
        # rate samples are on the transport's clock, steps on the worker's: align the first sample
        # with the run's start and draw each rate until the run's end (the steps' span)
        t0 = min((r["rate_samples"][0][0] for r in flows), default=0.0)
        span = (max(x.end for x in records.steps) - min(x.start for x in records.steps)) if records.steps else 0.0
        blocks: dict[int, int] = {}
        for rec in flows:
            samples = rec["rate_samples"]
            blocks[rec["rank"]] = blocks.get(rec["rank"], 0) + 1  # a scheme's blocks (--order abba: 2 of baseline)
            t = np.array([p[0] for p in samples] + [max(t0 + span, samples[-1][0])]) - t0
            rate = np.array([p[1] for p in samples] + [samples[-1][1]]) / 1e6
            ax.plot(t, rate, drawstyle="steps-post", label=f"rank {rec['rank']}", linewidth=1)
            rows += [(scheme, rec["rank"], blocks[rec["rank"]], f"{a:.6f}", f"{b:.4f}") for a, b in zip(t, rate, strict=True)]
            table.append([scheme, rec["rank"], blocks[rec["rank"]], len(samples), f"{rate.min():.2f}", f"{statistics.fmean(rate):.2f}",
                          rec.get("cnps_received", "-")])
        marks = s.get(scheme, {}).get("marks", {})
        ax.set_title(f"{scheme}: Symphony marks {marks.get('symphony')}, queue marks {marks.get('queue')}",
                     fontsize=9)
        ax.set_xlabel("time (s)")
        ax.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("DCQCN rate (Mbit/s)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.savefig(ctx.out / "fig9.png")
    write_csv(ctx.out / "fig9.csv", ("scheme", "rank", "block", "time_s", "rate_mbps"), rows)
    comp = (s.get("comparison") or {}).get("symphony", {}).get("0", {})
    text = figure_header(ctx, "per-flow rates over time on the P4 switches",
                         "on the Tofino2 prototype the ahead flows are throttled and the lagging flow catches up",
                         f"real time under Mininet, {topology.name}, {iterations} iterations of {size} bytes, one run "
                         "(the embedded P4 switch runs p4/symphony.p4; the schemes' blocks in the runner's order, "
                         "one row per rank and block)", "the scenario's own (10 Mbit/s, ECN K)")
    text += md_table(("scheme", "rank (flow rank -> rank+1)", "block", "rate samples", "min Mbit/s", "mean of samples Mbit/s",
                      "CNPs received"), table)
    ratio = comp.get("ratio")
    ci = comp.get("ci95")
    text += (f"\nCCT symphony/baseline: {ratio:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "") +
             f" {comp.get('verdict', '')}\n" if ratio else "\nCCT symphony/baseline: -\n")
    return text


@dataclass(frozen=True)
class Figure:
    number: int
    title: str
    make: Callable[[FigureContext], str]
    realtime: bool = False  #: runs under Mininet (root, the Mininet lock)


FIGURES: dict[int, Figure] = {
    2: Figure(2, "step overlap over time", lambda ctx: fig_step_overlap(ctx, cdf=False)),
    4: Figure(4, "step overlap, baseline vs Symphony", lambda ctx: fig_step_overlap(ctx, cdf=True)),
    5: Figure(5, "CCT CDF of ring all-reduce", fig_cct_cdf),
    6: Figure(6, "normalized JCT as computation shrinks", fig_jct_compute),
    8: Figure(8, "robustness across network conditions", fig_robustness),
    9: Figure(9, "per-flow rates over time (real time, P4 switches)", fig_flow_rates, realtime=True),
}


def make_figure(number: int, *, out: Path | None = None, quick: bool = False, workers: int = 1,
                scheduler: str | None = None) -> Path:
    """Run figure ``number``; write figN.png, figN.csv and figN.md into ``out``; return the .md path.

    ``out`` default: ``results/figures[-quick]``, shared by the figures so that those that run the
    same scenario (Fig. 2, 4, 5 and Fig. 8's reference) share its runs. FigureError for an unknown
    number or a failed run.
    """
    if number not in FIGURES:
        raise FigureError(f"figure {number}: the paper's figures here are {', '.join(map(str, FIGURES))}")
    out = Path(out) if out else Path.cwd() / "results" / f"figures{'-quick' if quick else ''}"
    out.mkdir(parents=True, exist_ok=True)
    ctx = FigureContext(number, out, quick, workers, scheduler)
    text = FIGURES[number].make(ctx)
    md = out / f"fig{number}.md"
    md.write_text(text)
    return md
