"""Compute between collectives: when each collective of a rank may start (pure, no clock).

A rank runs ``iterations`` training iterations of ``buckets`` collectives each (collective
``c = t * buckets + b``). :class:`ComputeSchedule` says how long the rank computes and when
each collective's data is ready; :class:`hostapps.rank.RankWorker` asks it for the wait before
every collective. Both modes take the schedule from the same worker spec (``compute``), so a
straggler is slow the same way in real and in virtual time.

Model (the paper's Figure 6, a transformer trained data-parallel; DDP/NCCL bucketing): training
iteration ``t`` starts at ``T_t`` (the job's start for ``t = 0``, else when the rank's last
collective of ``t - 1`` ended); its compute lasts ``C_t = f_t * (forward_s + backward_s) +
d_t`` (``f_t`` the straggler's factor, ``d_t`` its delay, both 1 and 0 for a normal rank); the
backward pass makes bucket ``b`` ready at ``T_t + d_t + f_t * (forward_s + backward_s * (b + 1)
/ buckets)``, and collective ``b`` starts when its bucket is ready and collective ``b - 1`` has
ended (one stream), so it overlaps the rest of the backward pass. ``overlap = False`` is the
plain ``compute_ms`` of a topology: the compute comes between collectives (none before the
first, only the straggler's delay), ``buckets = 1``.

JCT of a job (emu.metrics) = from the job's start to the end of its last collective; compute
the time each rank spent computing (``compute`` records); exposed communication = JCT minus
that compute.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True)
class ComputeSchedule:
    """One rank's compute (see the module docstring). Times in seconds.

    ``factors[t]`` (>= 1) and ``delays[t]`` (>= 0): the straggler's compute factor and added
    delay in training iteration ``t`` (shorter lists: 1 and 0 for the rest).
    """

    forward_s: float = 0.0
    backward_s: float = 0.0
    buckets: int = 1
    overlap: bool = True
    factors: tuple[float, ...] = ()
    delays: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for name in ("forward_s", "backward_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {self.buckets}")
        if any(not (math.isfinite(f) and f >= 1) for f in self.factors):
            raise ValueError("every factor must be >= 1")
        if any(not (math.isfinite(d) and d >= 0) for d in self.delays):
            raise ValueError("every delay must be >= 0")

    def factor(self, t: int) -> float:
        return self.factors[t] if t < len(self.factors) else 1.0

    def delay(self, t: int) -> float:
        return self.delays[t] if t < len(self.delays) else 0.0

    def compute_s(self, t: int) -> float:
        """Compute time of training iteration ``t`` (s): ``f_t * (forward + backward) + d_t``;
        with ``overlap = False`` none in iteration 0 but the delay."""
        base = self.forward_s + self.backward_s
        if not self.overlap and t == 0:
            base = 0.0
        return self.factor(t) * base + self.delay(t)

    def ready_after_s(self, c: int) -> float:
        """When collective ``c``'s data is ready, after its training iteration's start (s)."""
        t, b = divmod(c, self.buckets)
        if not self.overlap:
            return self.compute_s(t)
        f = self.factor(t)
        return self.delay(t) + f * (self.forward_s + self.backward_s * (b + 1) / self.buckets)

    def as_dict(self) -> dict[str, object]:
        """The worker spec's ``compute`` object."""
        return {"forward_s": self.forward_s, "backward_s": self.backward_s, "buckets": self.buckets,
                "overlap": self.overlap, "factors": list(self.factors), "delays": list(self.delays)}

    @classmethod
    def from_dict(cls, obj: dict[str, object]) -> ComputeSchedule:
        """Inverse of :meth:`as_dict`; ValueError (one line) on a bad field."""
        allowed = {"forward_s", "backward_s", "buckets", "overlap", "factors", "delays"}
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise ValueError(f"unknown field '{unknown[0]}'")
        try:
            return cls(forward_s=float(obj.get("forward_s", 0.0)), backward_s=float(obj.get("backward_s", 0.0)),
                       buckets=int(obj.get("buckets", 1)), overlap=bool(obj.get("overlap", True)),
                       factors=tuple(float(x) for x in obj.get("factors", ())),  # type: ignore[union-attr]
                       delays=tuple(float(x) for x in obj.get("delays", ())))  # type: ignore[union-attr]
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from None


def straggler_pattern(iterations: int, *, factor: float, delay_s: float, every: int, probability: float,
                      seed: Sequence[int]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per training iteration (factors, delays) of one straggler: slow in iterations
    ``every - 1, 2 * every - 1, ...``, each at random with ``probability`` (``random.Random``
    seeded with ``seed``, e.g. (run seed, job, rank), so both modes draw the same)."""
    rng = random.Random(":".join(map(str, seed)))
    factors, delays = [], []
    for t in range(iterations):
        slow = (t + 1) % every == 0 and (probability >= 1 or rng.random() < probability)
        factors.append(factor if slow else 1.0)
        delays.append(delay_s if slow else 0.0)
    return tuple(factors), tuple(delays)
