"""Metrics from the workers' JSON lines (docs/DESIGN.md section 7, docs/interfaces.md section 4).

A scheme's results folder holds ``job{J}-rank{R}.jsonl`` files with ``step``,
``iteration``, ``transport`` and ``error`` records. From them:

- **CCT** of iteration k of a job: last rank's ``end`` minus first rank's ``start``
  (seconds, wall clock of the workers);
- **bandwidth bound**: ``2(N-1)/N * S / B`` for all-reduce, ``(N-1)/N * S / B`` for
  all-gather and reduce-scatter (S bytes per rank, B bit/s per ring flow), and CCT/bound;
- **step lead** over time: at evenly spaced instants, each rank's step in progress is the
  ordinal of the newest step it has started (-1 before its first); the lead is max - min
  across the job's ranks (the paper's "degree of step overlap"). Ordinals of the rank's
  distinct ``(iteration, step)`` pairs are used, so global and per-iteration step numbers
  work alike. Reported as the max and the time average over the job's span;
- **JCT**: the end of the job's last collective minus its start (its first compute or
  collective, whichever began first; includes compute); ``compute_s`` the most any rank
  computed (``compute`` records of hostapps.rank) and ``exposed_comm_s = JCT - compute_s``;
  for a scheme run in blocks (emu.runner.plan_blocks) the sum over its blocks of that span
  of their measured iterations. Warm-up iterations (``"warmup": true``) are recorded and
  left out of the CCTs, the step lead and the JCT;
- transport totals (sums over ranks) and the verified flags;
- **comparison of schemes** (:func:`compare_ccts`): per job, the ratio of mean CCTs
  (other / baseline) with a 95% bootstrap confidence interval over iterations and a
  verdict in words (docs/DESIGN.md section 7).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .routing import compute_routes
from .topology_schema import Topology

log = logging.getLogger(__name__)

_FILE_RE = re.compile(r"^job(\d+)-rank(\d+)\.jsonl$")
#: Samples of the step-lead time series per job.
LEAD_SAMPLES = 2000


@dataclasses.dataclass(frozen=True)
class JobInfo:
    """What the metrics need to know about a job beyond its logs."""

    collective: str  #: allreduce | allgather | reducescatter
    nranks: int
    size_bytes: int  #: bytes per rank per iteration
    bandwidth_bps: float  #: B of the bound: per-ring-flow bandwidth (bit/s)
    iterations: int | None = None  #: expected iterations (None = unchecked)

    @property
    def bound_s(self) -> float:
        return bandwidth_bound_s(self.collective, self.nranks, self.size_bytes, self.bandwidth_bps)


@dataclasses.dataclass(frozen=True)
class StepRecord:
    job: int
    rank: int
    iteration: int
    step: int
    start: float  #: s (worker wall clock)
    end: float  #: s


@dataclasses.dataclass(frozen=True)
class IterationRecord:
    job: int
    rank: int
    iteration: int
    start: float
    end: float
    verified: bool
    warmup: bool = False  #: a warm-up iteration of its block: recorded, left out of the statistics


@dataclasses.dataclass(frozen=True)
class IterationCct:
    """One collective of one job."""

    job: int
    iteration: int
    start: float  #: first rank's start (s)
    end: float  #: last rank's end (s)
    ranks: int  #: ranks that logged this iteration
    verified: bool  #: every rank logged it and verified its result
    bound_s: float | None  #: bandwidth bound (s), None when the job is unknown

    @property
    def cct_s(self) -> float:
        return self.end - self.start

    @property
    def over_bound(self) -> float | None:
        return self.cct_s / self.bound_s if self.bound_s else None


@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean, median and 99th percentile (linear interpolation); None when empty."""

    mean: float | None
    p50: float | None
    p99: float | None
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Summary:
        arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
        if arr.size == 0:
            return cls(None, None, None, 0)
        return cls(
            float(arr.mean()), float(np.percentile(arr, 50)), float(np.percentile(arr, 99)), int(arr.size)
        )

    def as_dict(self) -> dict[str, float | None]:
        return {"mean": self.mean, "p50": self.p50, "p99": self.p99}


@dataclasses.dataclass
class JobMetrics:
    job: int
    nranks: int
    ccts: list[IterationCct]
    lead_times: np.ndarray  #: sample instants (s, absolute)
    lead_values: np.ndarray  #: step lead at each instant (steps)
    jct_s: float | None
    transport: dict[str, float]  #: numeric transport stats summed over ranks
    errors: list[str]
    verified: bool
    collective: str | None = None  #: allreduce | allgather | reducescatter, None when unknown
    #: the warm-up iterations (complete ones), left out of ``ccts`` and of the step lead
    warmup_ccts: list[IterationCct] = dataclasses.field(default_factory=list)
    #: compute time of the job (s): the most any rank spent computing (``compute`` records,
    #: hostapps.workload); 0 without compute records
    compute_s: float = 0.0

    @property
    def exposed_comm_s(self) -> float | None:
        """JCT minus compute: the communication the compute did not hide (s)."""
        return None if self.jct_s is None else self.jct_s - self.compute_s

    def cct_summary(self) -> Summary:
        """CCT (s) over the job's complete iterations."""
        return Summary.of(c.cct_s for c in self.ccts)

    def over_bound_summary(self) -> Summary:
        return Summary.of(c.over_bound for c in self.ccts if c.over_bound is not None)

    @property
    def step_lead_max(self) -> float | None:
        return float(self.lead_values.max()) if self.lead_values.size else None

    @property
    def step_lead_mean(self) -> float | None:
        return float(self.lead_values.mean()) if self.lead_values.size else None


@dataclasses.dataclass
class SchemeMetrics:
    """Everything measured for one scheme of a run."""

    scheme: str
    jobs: dict[int, JobMetrics]
    steps: list[StepRecord]
    errors: list[str]  #: ``error`` records and missing/unreadable data
    verified: bool  #: every expected iteration of every job present and verified, no errors

    @property
    def ccts(self) -> list[IterationCct]:
        return [c for j in sorted(self.jobs) for c in self.jobs[j].ccts]

    @property
    def iterations(self) -> int:
        """Collectives measured (complete iterations over all jobs)."""
        return len(self.ccts)

    def cct_summary(self) -> Summary:
        """CCT (s) over every complete iteration of every job."""
        return Summary.of(c.cct_s for c in self.ccts)

    def over_bound_summary(self) -> Summary:
        return Summary.of(c.over_bound for c in self.ccts if c.over_bound is not None)

    @property
    def step_lead_max(self) -> float | None:
        vals = [j.step_lead_max for j in self.jobs.values() if j.step_lead_max is not None]
        return max(vals) if vals else None

    @property
    def step_lead_mean(self) -> float | None:
        vals = [j.step_lead_mean for j in self.jobs.values() if j.step_lead_mean is not None]
        return float(np.mean(vals)) if vals else None


def bandwidth_bound_s(collective: str, nranks: int, size_bytes: int, bandwidth_bps: float) -> float:
    """Bandwidth bound of one ring collective (s).

    All-reduce ``2(N-1)/N * S / B``; all-gather and reduce-scatter ``(N-1)/N * S / B``
    (ring algorithm lower bound, e.g. Patarasuk & Yuan 2009; docs/DESIGN.md section 7).
    S in bytes per rank, B in bit/s; headers are not counted.
    """
    if nranks < 1 or bandwidth_bps <= 0:
        raise ValueError(f"need nranks >= 1 and bandwidth > 0, got {nranks}, {bandwidth_bps}")
    factor = 2 if collective == "allreduce" else 1
    return factor * (nranks - 1) / nranks * size_bytes * 8 / bandwidth_bps


def job_infos(topo: Topology, routes: Any = None) -> dict[int, JobInfo]:
    """JobInfo of every job; B = the lockstep fair share of its ring flows (routing)."""
    routes = routes or compute_routes(topo)
    out = {}
    for job in topo.jobs:
        bw = routes.job_bandwidth(job.id)
        out[job.id] = JobInfo(
            job.collective, len(job.ranks), job.size_bytes, bw.fair_share_bps,
            job.iterations * job.collectives_per_iteration
        )
    return out


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class RunRecords:
    """The parsed JSON lines of one scheme folder."""

    steps: list[StepRecord] = dataclasses.field(default_factory=list)
    iterations: list[IterationRecord] = dataclasses.field(default_factory=list)
    transport: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: ``compute`` records: (job, rank, training iteration, start, end) (hostapps.workload)
    compute: list[tuple[int, int, int, float, float]] = dataclasses.field(default_factory=list)
    ranks: dict[int, set[int]] = dataclasses.field(default_factory=dict)  #: job -> ranks with a file
    bad_lines: int = 0


def load_records(scheme_dir: str | Path) -> RunRecords:
    """Parse every ``job*-rank*.jsonl`` in ``scheme_dir``; malformed lines are counted."""
    out = RunRecords()
    d = Path(scheme_dir)
    for path in sorted(d.glob("job*-rank*.jsonl")):
        m = _FILE_RE.match(path.name)
        if not m:
            continue
        out.ranks.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    _add_record(out, rec)
                except (ValueError, KeyError, TypeError) as exc:
                    out.bad_lines += 1
                    log.warning("%s:%d: skipped malformed record (%s)", path, lineno, exc)
    return out


def _add_record(out: RunRecords, rec: dict[str, Any]) -> None:
    kind = rec.get("kind")
    if kind == "step":
        out.steps.append(
            StepRecord(
                int(rec["job"]),
                int(rec["rank"]),
                int(rec["iteration"]),
                int(rec["step"]),
                float(rec["start"]),
                float(rec["end"]),
            )
        )
    elif kind == "iteration":
        out.iterations.append(
            IterationRecord(
                int(rec["job"]),
                int(rec["rank"]),
                int(rec["iteration"]),
                float(rec["start"]),
                float(rec["end"]),
                bool(rec.get("verified", False)),
                bool(rec.get("warmup", False)),
            )
        )
    elif kind == "transport":
        out.transport.append(rec)
    elif kind == "error":
        out.errors.append(rec)
    elif kind == "compute":
        out.compute.append((int(rec["job"]), int(rec["rank"]), int(rec["iteration"]), float(rec["start"]),
                            float(rec["end"])))
    else:
        raise ValueError(f"unknown kind {kind!r}")


# --------------------------------------------------------------------------------------
# Computing
# --------------------------------------------------------------------------------------


def step_lead_series(
    steps: Iterable[StepRecord], samples: int = LEAD_SAMPLES,
    windows: Iterable[tuple[float, float]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(instants, lead) of one job's step records; see the module docstring.

    Instants are ``samples`` evenly spaced points from the first step start to the last
    step end of the job (absolute seconds); with ``windows`` ((start, end) s) only those
    inside one (a scheme's blocks: not the time between them, when other schemes ran).
    Empty arrays when fewer than 2 ranks logged.
    """
    by_rank: dict[int, dict[tuple[int, int], float]] = {}
    t0, t1 = math.inf, -math.inf
    for s in steps:
        starts = by_rank.setdefault(s.rank, {})
        key = (s.iteration, s.step)
        starts[key] = min(starts.get(key, math.inf), s.start)
        t0 = min(t0, s.start)
        t1 = max(t1, s.end)
    if len(by_rank) < 2 or not t1 > t0:
        return np.zeros(0), np.zeros(0)
    times = np.linspace(t0, t1, samples)
    if windows is not None:
        inside = np.zeros(times.shape, dtype=bool)
        for lo, hi in windows:
            inside |= (times >= lo) & (times <= hi)
        times = times[inside]
        if times.size == 0:
            return np.zeros(0), np.zeros(0)
    progress = []
    for starts in by_rank.values():
        ordered = np.maximum.accumulate(np.array([starts[k] for k in sorted(starts)], dtype=float))
        progress.append(np.searchsorted(ordered, times, side="right") - 1)
    stack = np.vstack(progress)
    return times, (stack.max(axis=0) - stack.min(axis=0)).astype(float)


def compute_metrics(
    scheme_dir: str | Path,
    *,
    scheme: str,
    jobs: Mapping[int, JobInfo] | None = None,
    lead_samples: int = LEAD_SAMPLES,
    time_scale: float = 1.0,
) -> SchemeMetrics:
    """Metrics of one scheme from its results folder.

    ``jobs`` (from :func:`job_infos`) gives each job's size and bandwidth for the bound,
    its rank count (an iteration is complete when every rank logged it) and its expected
    iterations (checked for ``verified``). Without it, ranks are the files found and no
    bound is computed. ``time_scale`` multiplies every logged time (1 / D for a run dilated
    by D, emu.dilation: the metrics are then in scenario time).
    """
    recs = load_records(scheme_dir)
    if time_scale != 1.0:
        recs.steps = [dataclasses.replace(s, start=s.start * time_scale, end=s.end * time_scale) for s in recs.steps]
        recs.iterations = [dataclasses.replace(it, start=it.start * time_scale, end=it.end * time_scale)
                           for it in recs.iterations]
        recs.compute = [(j, r, t, a * time_scale, b * time_scale) for j, r, t, a, b in recs.compute]
    jobs = dict(jobs or {})
    errors = [f"job {e.get('job')} rank {e.get('rank')}: {e.get('message', '')}" for e in recs.errors]
    if recs.bad_lines:
        errors.append(f"{recs.bad_lines} malformed JSON line(s) in {scheme_dir}")
    job_ids = sorted(set(jobs) | set(recs.ranks))
    out: dict[int, JobMetrics] = {}
    for job_id in job_ids:
        info = jobs.get(job_id)
        nranks = info.nranks if info else len(recs.ranks.get(job_id, ()))
        job_errors = [e for e in errors if e.startswith(f"job {job_id} ")]
        if job_id not in recs.ranks:
            job_errors.append(f"job {job_id}: no results in {scheme_dir}")
            errors.append(job_errors[-1])
        iters: dict[int, list[IterationRecord]] = {}
        warm_iters: dict[int, list[IterationRecord]] = {}
        for it in recs.iterations:
            if it.job == job_id:
                (warm_iters if it.warmup else iters).setdefault(it.iteration, []).append(it)
        ccts = []
        warmup_ccts = []
        for k in sorted(set(iters) | set(warm_iters)):
            warm = k in warm_iters
            rows = warm_iters[k] if warm else iters[k]
            ranks = {r.rank for r in rows}
            complete = len(ranks) >= nranks
            if not complete:
                msg = f"job {job_id} iteration {k}: {len(ranks)} of {nranks} ranks logged it"
                job_errors.append(msg)
                errors.append(msg)
                continue
            (warmup_ccts if warm else ccts).append(
                IterationCct(
                    job=job_id,
                    iteration=k,
                    start=min(r.start for r in rows),
                    end=max(r.end for r in rows),
                    ranks=len(ranks),
                    verified=all(r.verified for r in rows),
                    bound_s=info.bound_s if info else None,
                )
            )
        expected = info.iterations if info and info.iterations is not None else None
        if expected is not None and len(ccts) < expected:
            msg = f"job {job_id}: {len(ccts)} of {expected} iterations complete"
            job_errors.append(msg)
            errors.append(msg)
        all_rows = [r for rows in iters.values() for r in rows]
        comp = [c for c in recs.compute if c[0] == job_id and c[2] not in warm_iters]  # warm-ups left out
        jct = None
        if all_rows:
            first = min([r.start for r in all_rows] + [c[3] for c in comp])
            jct = max(r.end for r in all_rows) - first
        per_rank: dict[int, float] = {}
        for _, rank, _, a, b in comp:
            per_rank[rank] = per_rank.get(rank, 0.0) + (b - a)
        compute_s = max(per_rank.values()) if per_rank else 0.0
        if warm_iters and ccts:  # in blocks, other schemes between them: the measured spans summed,
            # each from its first iteration's compute (or collective) start to its last collective's end
            comp_start: dict[int, float] = {}
            for _, _, k, a, _ in comp:
                comp_start[k] = min(a, comp_start.get(k, a))
            jct = sum(seg[-1].end - min([seg[0].start] + [comp_start[c.iteration] for c in seg
                                                          if c.iteration in comp_start])
                      for seg in _segments(ccts))
        transport: dict[str, float] = {}
        for t in recs.transport:
            if t.get("job") != job_id:
                continue
            for key, val in t.items():
                if key in ("job", "rank", "kind") or isinstance(val, bool):
                    continue
                if isinstance(val, int | float):
                    # Maxima (timer_lag_max_s, a rank's start lateness: in the metrics' clock, so
                    # scenario time in a dilated run, like the CCTs) combine by max over ranks
                    # and blocks, counts by sum.
                    if key == "start_lateness_s":
                        transport[key] = max(transport.get(key, 0), val * time_scale)
                    elif key.endswith("_max_s"):
                        transport[key] = max(transport.get(key, 0), val)
                    else:
                        transport[key] = transport.get(key, 0) + val
        measured_steps = (s for s in recs.steps if s.job == job_id and s.iteration not in warm_iters)
        windows = [(seg[0].start, seg[-1].end) for seg in _segments(ccts)] if warm_iters else None
        times, lead = step_lead_series(measured_steps, lead_samples, windows)
        verified = (bool(ccts) and all(c.verified for c in ccts) and all(c.verified for c in warmup_ccts)
                    and not job_errors)
        out[job_id] = JobMetrics(job_id, nranks, ccts, times, lead, jct, transport, job_errors, verified,
                                 collective=info.collective if info else None, compute_s=compute_s,
                                 warmup_ccts=warmup_ccts)
    verified = bool(out) and all(j.verified for j in out.values()) and not errors
    log.info(
        "%s: %d iterations over %d job(s), verified=%s",
        scheme,
        sum(len(j.ccts) for j in out.values()),
        len(out),
        verified,
    )
    return SchemeMetrics(scheme, out, sorted(recs.steps, key=_step_key), errors, verified)


def _segments(ccts: list[IterationCct]) -> list[list[IterationCct]]:
    """Runs of consecutively numbered iterations: a scheme's blocks (warm-ups between them)."""
    out: list[list[IterationCct]] = []
    for c in sorted(ccts, key=lambda c: c.iteration):
        if out and c.iteration == out[-1][-1].iteration + 1:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def _step_key(s: StepRecord) -> tuple[int, int, int, int]:
    return (s.job, s.rank, s.iteration, s.step)


# --------------------------------------------------------------------------------------
# Comparing schemes (docs/DESIGN.md section 7: a ratio always comes with its interval)
# --------------------------------------------------------------------------------------

#: Fewer complete iterations than this in either scheme: "too few iterations to tell".
#: A bootstrap over 4 values has only 35 distinct resamples and badly understates the
#: spread (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13).
MIN_ITERATIONS = 5
#: Confidence level of the interval.
CONFIDENCE = 0.95
#: Bootstrap resamples (scipy.stats.bootstrap); 9999 keeps the interval's end points
#: stable to about 0.005 for 20-iteration runs at ~10 ms of CPU.
N_RESAMPLES = 9999

FASTER, SLOWER, NOISE, TOO_FEW = "faster", "slower", "within the noise", "too few iterations to tell"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Mean CCT of a scheme over the baseline's, for one job.

    ``ratio`` = mean(other) / mean(baseline); ``ci_low``/``ci_high``: its 95% bootstrap
    confidence interval (BCa, iterations of each scheme resampled independently; None when
    too few iterations); ``verdict``: :data:`FASTER` (interval wholly below 1),
    :data:`SLOWER` (wholly above 1), :data:`NOISE` (contains 1) or :data:`TOO_FEW`.
    """

    job: int
    scheme: str
    baseline_n: int
    other_n: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        ci = [self.ci_low, self.ci_high] if self.ci_low is not None else None
        return {"ratio": self.ratio, "ci95": ci, "verdict": self.verdict,
                "iterations": {"baseline": self.baseline_n, self.scheme: self.other_n}}

    def words(self) -> str:
        """One line, e.g. ``0.93 (95% CI 0.90-0.96, 20 vs 20 iterations): faster with symphony``."""
        return comparison_words(self.scheme, self.as_dict())


def comparison_words(scheme: str, comp: Mapping[str, Any]) -> str:
    """The closing-line text of a comparison dict (:meth:`Comparison.as_dict` shape)."""
    n = comp.get("iterations") or {}
    counts = f"{n.get('baseline', '?')} vs {n.get(scheme, '?')} iterations"
    ratio, ci, verdict = comp.get("ratio"), comp.get("ci95"), comp.get("verdict")
    if ratio is None:
        return f"- ({counts}): {verdict}"
    if verdict == TOO_FEW or not ci:
        return f"{ratio:.2f} ({counts}, {MIN_ITERATIONS} needed): {TOO_FEW}"
    what = {FASTER: f"{scheme} faster", SLOWER: f"{scheme} slower", NOISE: "within the noise"}.get(
        str(verdict), str(verdict))
    return f"{ratio:.2f} (95% CI {ci[0]:.2f}-{ci[1]:.2f}, {counts}): {what}"


def compare_ccts(
    baseline: Iterable[float],
    other: Iterable[float],
    *,
    job: int = 0,
    scheme: str = "symphony",
    confidence: float = CONFIDENCE,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    min_iterations: int = MIN_ITERATIONS,
) -> Comparison:
    """Ratio of mean CCTs ``mean(other) / mean(baseline)`` with a bootstrap interval.

    Args: the two schemes' per-iteration CCTs (s) of one job; ``seed`` makes the interval
    reproducible. Iterations are treated as independent samples (back-to-back
    collectives of one run are mildly correlated, so the interval is somewhat optimistic;
    repeat runs or seeds for a paper figure).

    The interval is scipy.stats.bootstrap's BCa interval for the two-sample statistic
    (each sample resampled on its own); where BCa is undefined (identical values) the
    percentile interval is used, and with no spread at all the interval is the ratio itself.
    """
    from scipy.stats import bootstrap  # noqa: PLC0415 - scipy loads in ~0.3 s; only reports need it

    base = np.asarray([v for v in baseline if v is not None and math.isfinite(v)], dtype=float)
    oth = np.asarray([v for v in other if v is not None and math.isfinite(v)], dtype=float)
    ratio = float(oth.mean() / base.mean()) if base.size and oth.size and base.mean() > 0 else None
    if ratio is None or base.size < min_iterations or oth.size < min_iterations:
        return Comparison(job, scheme, int(base.size), int(oth.size), ratio, None, None, TOO_FEW)

    def statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    if np.ptp(base) == 0 and np.ptp(oth) == 0:
        low = high = ratio
    else:
        low = high = math.nan
        for method in ("BCa", "percentile"):
            # BCa is undefined on degenerate samples (scipy warns, returns nan): fall back.
            with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = bootstrap((oth, base), statistic, n_resamples=n_resamples, confidence_level=confidence,
                                method=method, vectorized=True, rng=np.random.default_rng(seed))
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if math.isfinite(low) and math.isfinite(high):
                break
    if high < 1.0:
        verdict = FASTER
    elif low > 1.0:
        verdict = SLOWER
    else:
        verdict = NOISE
    return Comparison(job, scheme, int(base.size), int(oth.size), ratio, low, high, verdict)



# --------------------------------------------------------------------------------------
# Overload: was a real-time run disturbed by the machine? (issue 9)
# --------------------------------------------------------------------------------------

#: A run is disturbed when more than this fraction of the workers' timer wake-ups (or the
#: switches' departure timers) fired later than 2 ms behind their schedule ...
LATE_WAKEUP_FRACTION = 0.05
#: ... or the workers spent more than this fraction of their run time runnable but waiting
#: for a CPU (/proc/self/schedstat): CPU time taken by other processes.
CPU_WAIT_FRACTION = 0.10


def _start_lateness(m: SchemeMetrics) -> tuple[float, float] | None:
    """(latest start of any rank after the common start, the mean step time of that job) in s,
    over the jobs and blocks of one scheme; None when no rank recorded its lateness."""
    from hostapps.collectives import steps_per_collective  # noqa: PLC0415

    worst: tuple[float, float] | None = None
    for jm in m.jobs.values():
        late = jm.transport.get("start_lateness_s")
        mean = jm.cct_summary().mean
        if late is None or mean is None or jm.nranks < 2:
            continue
        step = mean / steps_per_collective(jm.collective or "allreduce", jm.nranks)
        if worst is None or late - step > worst[0] - worst[1]:
            worst = (float(late), step)
    return worst


def overload(m: SchemeMetrics, counters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How much the machine disturbed one scheme's real-time run, with the figures.

    From the workers' transport records (timer wake-up lateness, time waiting for a CPU)
    and the switch totals of ``emu.runner.counter_totals`` (departure-timer lateness).
    A rank that began its first iteration more than a step (the job's mean CCT over its
    steps) after the common start disturbs it too (``start_lateness_max_ms``, ``step_ms``).
    ``{"disturbed": bool, "reasons": [words], "start_lateness_max_ms", "step_ms",
    "worker_late_wakeups", "worker_lag_max_ms",
    "worker_cpu_wait", "switch_late_wakeups", "switch_lag_max_ms"}`` (fractions 0..1; null
    when not measured, e.g. in virtual time, where nothing can disturb the run).
    """
    tot: dict[str, float] = {}
    lag_max = 0.0
    for jm in m.jobs.values():
        for key in ("timer_wakeups", "timer_late_wakeups", "cpu_wait_s", "cpu_wall_s"):
            tot[key] = tot.get(key, 0.0) + float(jm.transport.get(key, 0) or 0)
        lag_max = max(lag_max, float(jm.transport.get("timer_lag_max_s", 0) or 0))
    c = counters or {}

    def frac(a: float, b: float) -> float | None:
        return round(a / b, 4) if b > 0 else None

    late = _start_lateness(m)
    out: dict[str, Any] = {
        "start_lateness_max_ms": round(late[0] * 1000, 2) if late else None,
        "step_ms": round(late[1] * 1000, 2) if late else None,
        "worker_late_wakeups": frac(tot.get("timer_late_wakeups", 0), tot.get("timer_wakeups", 0)),
        "worker_lag_max_ms": round(lag_max * 1000, 2) if tot.get("timer_wakeups") else None,
        "worker_cpu_wait": frac(tot.get("cpu_wait_s", 0), tot.get("cpu_wall_s", 0)),
        "switch_late_wakeups": frac(float(c.get("io_late_wakeups", 0) or 0), float(c.get("io_wakeups", 0) or 0)),
        "switch_lag_max_ms": round(float(c["io_lag_max_us"]) / 1000, 2) if c.get("io_wakeups") else None,
    }
    reasons = []
    if late and late[0] > late[1]:
        reasons.append(f"a rank began {late[0] * 1000:.0f} ms after the common start, more than a step "
                       f"({late[1] * 1000:.0f} ms)")
    if (out["worker_late_wakeups"] or 0) > LATE_WAKEUP_FRACTION:
        reasons.append(f"{out['worker_late_wakeups']:.0%} of worker wake-ups over 2 ms late "
                       f"(max {out['worker_lag_max_ms']:.0f} ms)")
    if (out["worker_cpu_wait"] or 0) > CPU_WAIT_FRACTION:
        reasons.append(f"workers waited for a CPU {out['worker_cpu_wait']:.0%} of the time")
    if (out["switch_late_wakeups"] or 0) > LATE_WAKEUP_FRACTION:
        reasons.append(f"{out['switch_late_wakeups']:.0%} of switch departures over 2 ms late "
                       f"(max {out['switch_lag_max_ms']:.0f} ms)")
    out["disturbed"] = bool(reasons)
    out["reasons"] = reasons
    return out
