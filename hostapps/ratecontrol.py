"""Sender rate control: a small base class, a registry by name, and DCQCN.

A rate controller is pure logic: every hook takes the time ``now`` (seconds, any
monotonic origin) and the controller never reads a clock. The transport asks it for
``rate_bps`` before pacing each DATA packet and calls :meth:`RateController.on_timer`
at :meth:`RateController.next_timer`.

DCQCN follows the reaction point (RP) of Zhu et al., "Congestion Control for Large-Scale
RDMA Deployments", SIGCOMM 2015, section 3.1 and figure 8 (rate decrease on CNP, alpha
update, fast recovery / additive increase / hyper increase driven by a timer and a byte
counter), with the ns-3 structure of HPCC (Li et al., SIGCOMM 2019, ``rdma-hw.cc``:
alpha initialised to 1, rate floor ``MinRate``). The notification point (CNP generation,
at most one CNP per flow per interval) lives in :mod:`hostapps.transport`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar

logger = logging.getLogger(__name__)

#: Rates closer than this to the line rate snap to it, so recovery ends (bit/s).
K_RATE_EPSILON_BPS = 1.0
#: Timers due within this much of ``now`` fire, absorbing float drift of periodic sums (s).
K_TIME_EPSILON_S = 1e-9


class RateControlError(ValueError):
    """Unknown rate controller name or bad parameter."""


class RateController:
    """Base class: a fixed rate at ``line_rate_bps``; subclasses override the hooks.

    Args:
        line_rate_bps: the host's line rate in bit/s (> 0); no rate ever exceeds it.
        max_samples: bound on :attr:`rate_samples`; when full, every other sample is
            dropped (the series keeps its shape at half the resolution).
    """

    #: Registry name (see :data:`RATE_CONTROLLERS`).
    name: ClassVar[str] = "base"

    def __init__(self, line_rate_bps: float, *, max_samples: int = 10_000) -> None:
        if not line_rate_bps > 0:
            raise RateControlError(f"line_rate_bps must be > 0, got {line_rate_bps!r}")
        self.line_rate_bps = float(line_rate_bps)
        self._max_samples = max(2, int(max_samples))
        #: ``[(t, bps), ...]``: the rate each time it changed (first at the first packet).
        self.rate_samples: list[tuple[float, float]] = []
        self._sampled_once = False

    @property
    def rate_bps(self) -> float:
        """Current sending rate in bit/s, at most ``line_rate_bps``."""
        return self.line_rate_bps

    def on_packet_sent(self, nbytes: int, now: float) -> None:
        """A DATA packet of ``nbytes`` bytes (as counted for pacing) left at ``now``."""
        if not self._sampled_once:
            self._sample(now)

    def on_cnp(self, now: float) -> None:
        """A congestion notification packet for this flow arrived at ``now``."""

    def on_timer(self, now: float) -> None:
        """Run every timer due at or before ``now``."""

    def next_timer(self) -> float | None:
        """Absolute time (s) :meth:`on_timer` wants to run next, or None when idle."""
        return None

    def _sample(self, now: float) -> None:
        self._sampled_once = True
        self.rate_samples.append((now, self.rate_bps))
        if len(self.rate_samples) > self._max_samples:
            self.rate_samples = self.rate_samples[::2]


class FixedRate(RateController):
    """No congestion control: always the line rate (registry name ``none``)."""

    name = "none"


@dataclass(frozen=True, slots=True)
class DcqcnParams:
    """DCQCN reaction-point parameters, scaled to emulated 5-20 Mbit/s links.

    The paper's values (Zhu et al. 2015, section 5 and table 2: timers of 55 us, a 10 MB
    byte counter, R_AI of 40 Mbit/s at 40 Gbit/s) assume microsecond RTTs; here RTTs are
    milliseconds, so timers are milliseconds and rates are fractions of the line rate.
    Defaults tuned for emulated 10 Mbit/s links by benchmarks/dcqcn_tuning.py (2-8 flows
    on a 10 Mbit/s bottleneck and 1 flow 10 -> 5 Mbit/s, ECN at K = 3 and 10 packets,
    with ``TransportConfig.cnp_interval`` = 12 ms): >= 99% bottleneck utilisation for 2
    and 4 flows, Jain >= 0.99 (docs/host-runtime.md, "DCQCN tuning").
    """

    #: g, alpha EWMA gain (dimensionless). Paper: 1/256 with a 55 us alpha timer (alpha
    #: time constant ~14 ms). 1/64 with the 20 ms period below (time constant ~1.3 s, so
    #: alpha stays high and each CNP cuts hard): tuned for emulated 10 Mbit/s links by
    #: benchmarks/dcqcn_tuning.py (1/16 gave 54-75% utilisation).
    g: float = 1.0 / 64
    #: alpha at start (dimensionless, 0..1). Paper 3.1 / HPCC ``m_alpha = 1``.
    alpha_init: float = 1.0
    #: K, alpha decay period without CNP (s). Paper: 55 us. 20 ms, longer than the CNP
    #: interval: tuned for emulated 10 Mbit/s links by benchmarks/dcqcn_tuning.py.
    alpha_update_period: float = 0.020
    #: T, rate-increase timer period (s). Paper/HPCC RP timer: 55-300 us; 5 ms here
    #: (about one RTT with a few packets queued at 10 Mbit/s), confirmed by
    #: benchmarks/dcqcn_tuning.py (1-2 ms overshoot and drop, 10-20 ms recover slowly).
    rate_increase_period: float = 0.005
    #: B, byte counter: one rate-increase event per B bytes sent (bytes). Paper: 10 MB
    #: at 40 Gbit/s; 64 KiB is ~50 ms of a 10 Mbit/s link (benchmarks/dcqcn_tuning.py:
    #: 16 KiB-1 MiB make no measurable difference; the timer dominates).
    byte_counter_bytes: int = 65_536
    #: F, number of fast-recovery stages (count). Paper: 5; 3 tuned for emulated
    #: 10 Mbit/s links by benchmarks/dcqcn_tuning.py.
    fast_recovery_stages: int = 3
    #: R_AI as a fraction of the line rate (dimensionless). Paper: 40 Mbit/s of 40 Gbit/s
    #: (0.1%); 0.5% here (50 kbit/s per 5 ms at 10 Mbit/s, i.e. 10 Mbit/s per second):
    #: tuned for emulated 10 Mbit/s links by benchmarks/dcqcn_tuning.py (2% overshoots).
    rate_ai_fraction: float = 0.005
    #: R_HAI as a fraction of the line rate (dimensionless), 10x R_AI as in the paper
    #: (benchmarks/dcqcn_tuning.py: 0.05-0.5 make no measurable difference).
    rate_hai_fraction: float = 0.05
    #: Rate floor as a fraction of the line rate (dimensionless). HPCC ``MinRate``; kept
    #: low so that many flows (rings of 16-32 ranks) can still share one link.
    min_rate_fraction: float = 0.01
    #: Bound on the stored rate samples (count).
    max_samples: int = 10_000
    #: On a CNP, set Rt <- Rc always (True, the DCQCN paper's figure 8) or only when a rate
    #: increase happened since the last cut (False: HPCC's ns-3 ``CLAMP_TARGET_RATE 0``, so a
    #: burst of CNPs keeps the target and fast recovery returns to it).
    clamp_target_rate: bool = True

    def validate(self) -> None:
        """Raise :class:`RateControlError` naming the first out-of-range or non-numeric field."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "clamp_target_rate":
                if not isinstance(value, bool):
                    raise RateControlError(f"dcqcn param {f.name}={value!r} must be true or false")
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RateControlError(f"dcqcn param {f.name}={value!r} must be a number")
        checks = (
            ("g", 0 < self.g <= 1, "in (0, 1]"),
            ("alpha_init", 0 <= self.alpha_init <= 1, "in [0, 1]"),
            ("alpha_update_period", self.alpha_update_period > 0, "> 0 s"),
            ("rate_increase_period", self.rate_increase_period > 0, "> 0 s"),
            ("byte_counter_bytes", self.byte_counter_bytes > 0, "> 0 bytes"),
            ("fast_recovery_stages", self.fast_recovery_stages >= 0, ">= 0"),
            ("rate_ai_fraction", self.rate_ai_fraction >= 0, ">= 0"),
            ("rate_hai_fraction", self.rate_hai_fraction >= 0, ">= 0"),
            ("min_rate_fraction", 0 < self.min_rate_fraction <= 1, "in (0, 1]"),
            ("max_samples", self.max_samples >= 2, ">= 2"),
        )
        for field, ok, want in checks:
            if not ok:
                raise RateControlError(
                    f"dcqcn param {field}={getattr(self, field)!r} must be {want}"
                )


class Dcqcn(RateController):
    """DCQCN reaction point (registry name ``dcqcn``).

    State: current rate Rc, target rate Rt, alpha, the timer stage count T_s and the
    byte-counter stage count BC_s (paper figure 8). Before the first CNP the flow runs at
    the line rate and no timer is armed.

    - CNP (paper 3.1): ``Rt <- Rc; Rc <- max(min_rate, Rc (1 - alpha/2));
      alpha <- (1-g) alpha + g``; stage counters and the byte counter reset; the
      rate-increase timer restarts one period later; the alpha timer restarts.
    - alpha timer: each ``alpha_update_period`` without a CNP, ``alpha <- (1-g) alpha``.
      alpha only matters at the next CNP, so it is brought up to date lazily at every
      hook (the result equals a periodic timer's, on the same period grid).
    - rate increase event, when the timer fires (T_s += 1) or B bytes were sent
      (BC_s += 1): if ``max(T_s, BC_s) <= F`` fast recovery; else if
      ``min(T_s, BC_s) <= F`` additive increase ``Rt += R_AI``; else hyper increase
      ``Rt += i R_HAI`` with ``i = min(T_s, BC_s) - F``. Then ``Rt <- min(Rt, line)``,
      ``Rc <- (Rt + Rc) / 2``. Recovery ends (timer disarmed) when Rc reaches the line
      rate.
    """

    name = "dcqcn"

    def __init__(self, line_rate_bps: float, params: DcqcnParams | None = None) -> None:
        self.params = params or DcqcnParams()
        self.params.validate()
        super().__init__(line_rate_bps, max_samples=self.params.max_samples)
        p = self.params
        self.min_rate_bps = p.min_rate_fraction * self.line_rate_bps
        self.rate_ai_bps = p.rate_ai_fraction * self.line_rate_bps
        self.rate_hai_bps = p.rate_hai_fraction * self.line_rate_bps
        self.rc = self.line_rate_bps  #: current rate Rc (bit/s)
        self.rt = self.line_rate_bps  #: target rate Rt (bit/s)
        self.alpha = p.alpha_init  #: congestion estimate (0..1), as of ``_alpha_ref``
        self.timer_stage = 0  #: T_s
        self.byte_stage = 0  #: BC_s
        self._bytes = 0  # bytes since the last byte-counter event
        self._alpha_ref: float | None = None  # start of the current alpha period grid
        self._increase_at: float | None = None  # next rate-increase timer expiry
        self.cnps = 0
        self._byte_counter = p.byte_counter_bytes  # B, read once (per-packet path)

    @property
    def rate_bps(self) -> float:
        return self.rc

    @property
    def recovering(self) -> bool:
        """True between a rate cut and the return to line rate."""
        return self._increase_at is not None

    def alpha_at(self, now: float) -> float:
        """alpha after every decay due by ``now`` (does not change state)."""
        if self._alpha_ref is None or now < self._alpha_ref:
            return self.alpha
        k = math.floor((now - self._alpha_ref + K_TIME_EPSILON_S) / self.params.alpha_update_period)
        return self.alpha * (1.0 - self.params.g) ** k

    def _update_alpha(self, now: float) -> None:
        if self._alpha_ref is None:
            return
        period = self.params.alpha_update_period
        k = math.floor((now - self._alpha_ref + K_TIME_EPSILON_S) / period)
        if k > 0:
            self.alpha *= (1.0 - self.params.g) ** k
            self._alpha_ref += k * period

    def on_cnp(self, now: float) -> None:
        self._update_alpha(now)
        p = self.params
        self.cnps += 1
        if p.clamp_target_rate or self.timer_stage or self.byte_stage:
            self.rt = self.rc
        self.rc = max(self.min_rate_bps, self.rc * (1.0 - self.alpha / 2.0))
        self.alpha = (1.0 - p.g) * self.alpha + p.g
        self._alpha_ref = now
        self.timer_stage = 0
        self.byte_stage = 0
        self._bytes = 0
        self._increase_at = now + p.rate_increase_period
        self._sample(now)

    def on_packet_sent(self, nbytes: int, now: float) -> None:
        if not self._sampled_once:
            self._sample(now)
        if self._increase_at is None:
            return
        self._bytes += nbytes
        while self._bytes >= self._byte_counter and self._increase_at is not None:
            self._bytes -= self._byte_counter
            self.byte_stage += 1
            self._increase(now)

    def on_timer(self, now: float) -> None:
        self._update_alpha(now)
        while self._increase_at is not None and self._increase_at <= now + K_TIME_EPSILON_S:
            at = self._increase_at
            self._increase_at = at + self.params.rate_increase_period
            self.timer_stage += 1
            self._increase(at)

    def next_timer(self) -> float | None:
        return self._increase_at

    def _increase(self, now: float) -> None:
        f = self.params.fast_recovery_stages
        hi, lo = max(self.timer_stage, self.byte_stage), min(self.timer_stage, self.byte_stage)
        if hi <= f:
            pass  # fast recovery: Rt unchanged
        elif lo <= f:
            self.rt += self.rate_ai_bps  # additive increase
        else:
            self.rt += (lo - f) * self.rate_hai_bps  # hyper increase
        self.rt = min(self.rt, self.line_rate_bps)
        self.rc = min((self.rt + self.rc) / 2.0, self.line_rate_bps)
        if self.line_rate_bps - self.rc < K_RATE_EPSILON_BPS:
            self.rc = self.rt = self.line_rate_bps
            self._increase_at = None
            self._bytes = 0
        self._sample(now)


#: Rate controllers by name (``rate_control`` in TransportConfig users and worker specs).
RATE_CONTROLLERS: dict[str, type[RateController]] = {"dcqcn": Dcqcn, "none": FixedRate}


def make_rate_controller(
    name: str, line_rate_bps: float, params: dict[str, Any] | None = None
) -> RateController:
    """Build the controller registered as ``name``.

    ``params`` maps :class:`DcqcnParams` field names to values for ``dcqcn``; ``none``
    takes no params. Raises :class:`RateControlError` with one line naming the unknown
    controller or parameter and the valid choices.
    """
    params = dict(params or {})
    cls = RATE_CONTROLLERS.get(name)
    if cls is None:
        raise RateControlError(
            f"unknown rate controller {name!r}; choose one of {sorted(RATE_CONTROLLERS)}"
        )
    if cls is Dcqcn:
        fields = {f.name for f in dataclasses.fields(DcqcnParams)}
        unknown = sorted(set(params) - fields)
        if unknown:
            raise RateControlError(
                f"unknown dcqcn param(s) {unknown}; valid: {sorted(fields)}"
            )
        try:
            return Dcqcn(line_rate_bps, DcqcnParams(**params))
        except TypeError as exc:  # pragma: no cover - guarded above
            raise RateControlError(f"bad dcqcn params: {exc}") from None
    if params:
        raise RateControlError(f"rate controller {name!r} takes no params, got {sorted(params)}")
    return cls(line_rate_bps)


@dataclass(frozen=True)
class DcqcnPreset:
    """A named set of DCQCN, transport and ECN settings taken from a published source.

    rate_params: :class:`DcqcnParams` fields; transport: ``hostapps.transport.TransportConfig``
    fields (times in s); ecn_kmin_bytes / ecn_kmax_bytes / ecn_pmax: the source's RED-like ECN
    ramp (queue bytes where marking starts, where it reaches ``ecn_pmax``), turned into
    packets by :func:`ecn_ramp_packets`.
    """

    name: str
    source: str
    rate_params: dict[str, Any]
    transport: dict[str, Any]
    ecn_kmin_bytes: int
    ecn_kmax_bytes: int
    ecn_pmax: float


#: DCQCN at 100 Gbit/s as HPCC's ns-3 simulator runs it (Li et al., SIGCOMM 2019; the
#: public simulator's ``run.py --cc dcqcn --bw 100``): ALPHA_RESUME_INTERVAL 1 us,
#: RATE_DECREASE_INTERVAL 4 us, RP_TIMER 300 us, EWMA_GAIN 1/256, FAST_RECOVERY_TIMES 1,
#: RATE_AI 5 * bw / 25 = 20 Mbit/s, RATE_HAI 50 * bw / 25 = 200 Mbit/s, MIN_RATE 1000 Mbit/s,
#: CLAMP_TARGET_RATE 0, the ECN ramp KMIN 100 * bw / 25 = 400 KB, KMAX 400 * bw / 25 = 1600 KB,
#: PMAX 0.2, NACK generation interval 500 us. The simulator has no byte counter in its DCQCN
#: config; B is the DCQCN paper's 10 MB (Zhu et al. 2015, table 2). Its rate-decrease interval
#: (at most one cut per 4 us) becomes the CNP interval of the notification point here. ACK
#: timing and RTO bounds are ours (the simulator ACKs every packet and has no RTO): one ACK
#: per 4 packets or 10 us, RTO 1-100 ms.
HPCC_DCQCN_100G = DcqcnPreset(
    name="hpcc-dcqcn-100g",
    source="HPCC ns-3 simulator (Li et al., SIGCOMM 2019), run.py --cc dcqcn --bw 100",
    rate_params={
        "g": 1.0 / 256,
        "alpha_init": 1.0,
        "alpha_update_period": 1e-6,
        "rate_increase_period": 300e-6,
        "byte_counter_bytes": 10_000_000,
        "fast_recovery_stages": 1,
        "rate_ai_fraction": 20e6 / 100e9,
        "rate_hai_fraction": 200e6 / 100e9,
        "min_rate_fraction": 1e9 / 100e9,
        "clamp_target_rate": False,
    },
    transport={
        "cnp_interval": 4e-6,
        "nack_interval": 500e-6,
        "ack_every": 4,
        "ack_delay": 10e-6,
        "initial_rto": 1e-3,
        "min_rto": 1e-3,
        "max_rto": 0.1,
    },
    ecn_kmin_bytes=400_000,
    ecn_kmax_bytes=1_600_000,
    ecn_pmax=0.2,
)

#: Presets by name (the topology's ``dcqcn_preset``).
DCQCN_PRESETS: dict[str, DcqcnPreset] = {HPCC_DCQCN_100G.name: HPCC_DCQCN_100G}


def ecn_ramp_packets(preset: DcqcnPreset, frame_bytes: int) -> tuple[int, int]:
    """The preset's ECN ramp (Kmin, Kmax) in packets of ``frame_bytes``: ``round(K / frame)``, >= 1."""
    return (max(1, round(preset.ecn_kmin_bytes / frame_bytes)), max(1, round(preset.ecn_kmax_bytes / frame_bytes)))
