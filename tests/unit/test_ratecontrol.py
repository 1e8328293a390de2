"""DCQCN reaction point on literal timestamps against the formulas of Zhu et al. 2015, 3.1."""

from __future__ import annotations

import pytest

from hostapps.ratecontrol import (
    RATE_CONTROLLERS,
    Dcqcn,
    DcqcnParams,
    FixedRate,
    RateControlError,
    make_rate_controller,
)

LINE = 10e6  # bit/s
G = 1 / 16
#: Explicit parameters the formula tests below are written against (independent of the
#: tuned defaults of DcqcnParams).
FORMULA_PARAMS = {
    "g": G, "alpha_update_period": 0.005, "rate_increase_period": 0.005,
    "byte_counter_bytes": 65_536, "fast_recovery_stages": 5, "rate_ai_fraction": 0.02,
    "rate_hai_fraction": 0.2, "min_rate_fraction": 0.01,
}


def dcqcn(**params: float) -> Dcqcn:
    rc = make_rate_controller("dcqcn", LINE, {**FORMULA_PARAMS, **params})
    assert isinstance(rc, Dcqcn)
    return rc


def test_registry_and_factory() -> None:
    assert RATE_CONTROLLERS == {"dcqcn": Dcqcn, "none": FixedRate}
    none = make_rate_controller("none", LINE, {})
    assert isinstance(none, FixedRate) and none.rate_bps == LINE and none.next_timer() is None
    none.on_cnp(1.0)
    none.on_timer(2.0)
    assert none.rate_bps == LINE


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("cubic", {}, "unknown rate controller 'cubic'"),
        ("dcqcn", {"gain": 0.1}, r"unknown dcqcn param\(s\) \['gain'\]"),
        ("dcqcn", {"g": 0}, "g=0 must be in"),
        ("dcqcn", {"g": "0.1"}, "g='0.1' must be a number"),
        ("dcqcn", {"min_rate_fraction": 2}, "min_rate_fraction"),
        ("none", {"g": 0.1}, "takes no params"),
    ],
)
def test_factory_errors(name: str, params: dict, message: str) -> None:
    with pytest.raises(RateControlError, match=message):
        make_rate_controller(name, LINE, params)


def test_line_rate_must_be_positive() -> None:
    with pytest.raises(RateControlError, match="line_rate_bps"):
        make_rate_controller("none", 0, {})


def test_defaults_documented_scale() -> None:
    p = DcqcnParams()  # tuned by benchmarks/dcqcn_tuning.py, docs/host-runtime.md
    assert p.g == 1 / 64 and p.fast_recovery_stages == 3
    assert p.alpha_update_period == 0.020 and p.rate_increase_period == 0.005
    rc = make_rate_controller("dcqcn", LINE, {})
    assert isinstance(rc, Dcqcn)
    assert rc.rate_ai_bps == pytest.approx(0.005 * LINE)
    assert rc.rate_hai_bps == pytest.approx(10 * rc.rate_ai_bps)
    assert rc.min_rate_bps == pytest.approx(0.01 * LINE)
    assert rc.rate_bps == LINE and rc.next_timer() is None  # idle before the first CNP


def test_explicit_params_override_defaults() -> None:
    rc = dcqcn()
    assert rc.params == DcqcnParams(**FORMULA_PARAMS)
    assert rc.rate_ai_bps == pytest.approx(0.02 * LINE)
    assert rc.rate_hai_bps == pytest.approx(0.2 * LINE)


def test_one_cnp_exact() -> None:
    rc = dcqcn(alpha_init=0.5)
    rc.on_cnp(1.0)
    assert rc.rt == LINE
    assert rc.rc == LINE * (1 - 0.5 / 2) == 7.5e6
    assert rc.alpha == (1 - G) * 0.5 + G == 0.53125
    assert rc.rate_bps == 7.5e6
    assert rc.timer_stage == 0 and rc.byte_stage == 0
    assert rc.next_timer() == pytest.approx(1.005)


def test_burst_of_cnps() -> None:
    rc = dcqcn(alpha_init=0.5)
    rcur, rt, alpha = LINE, LINE, 0.5
    for t in (1.0, 1.001, 1.002, 1.003):  # inside one alpha period: no decay between them
        rc.on_cnp(t)
        rt = rcur
        rcur = rcur * (1 - alpha / 2)
        alpha = (1 - G) * alpha + G
        assert rc.rt == pytest.approx(rt)
        assert rc.rc == pytest.approx(rcur)
        assert rc.alpha == pytest.approx(alpha)
    assert rc.next_timer() == pytest.approx(1.008)  # timer restarts at every CNP


def test_alpha_decays_each_period_without_cnp() -> None:
    rc = dcqcn(alpha_init=0.5)
    rc.on_cnp(1.0)
    a1 = rc.alpha
    assert rc.alpha_at(1.0049) == a1
    assert rc.alpha_at(1.0051) == pytest.approx(a1 * (1 - G))
    rc.on_timer(1.0151)  # three periods elapsed
    assert rc.alpha == pytest.approx(a1 * (1 - G) ** 3)
    rc.on_timer(1.0201)  # a fourth, on the same grid
    assert rc.alpha == pytest.approx(a1 * (1 - G) ** 4)
    # the next CNP cuts with the decayed alpha
    a4 = rc.alpha
    before = rc.rc
    rc.on_cnp(1.021)
    assert rc.rc == pytest.approx(before * (1 - a4 / 2))
    assert rc.alpha == pytest.approx((1 - G) * a4 + G)


def test_fast_recovery_then_additive_then_hyper() -> None:
    rc = dcqcn()  # alpha_init 1: each cut halves
    rc.on_cnp(0.0)  # Rt 10, Rc 5 (Mbit/s)
    rc.on_cnp(0.001)  # Rt 5, Rc 2.5
    assert (rc.rt, rc.rc) == (5e6, 2.5e6)
    expected_rc = 2.5e6
    for k in range(1, 6):  # timer events T=1..5: fast recovery, Rt unchanged
        rc.on_timer(0.001 + 0.005 * k)
        expected_rc = (5e6 + expected_rc) / 2
        assert rc.timer_stage == k
        assert rc.rt == 5e6
        assert rc.rc == pytest.approx(expected_rc)
    assert rc.rc == pytest.approx(4.921875e6)
    rc.on_timer(0.031)  # T=6 > F, BC=0: additive increase
    assert rc.rt == pytest.approx(5.2e6)
    assert rc.rc == pytest.approx((5.2e6 + 4.921875e6) / 2)
    rt, rcur = rc.rt, rc.rc
    b = rc.params.byte_counter_bytes
    for bc in range(1, 6):  # BC=1..5 with T=6: still additive
        rc.on_packet_sent(b, 0.032)
        rt += 0.02 * LINE
        rcur = (rt + rcur) / 2
        assert rc.byte_stage == bc
        assert rc.rt == pytest.approx(rt) and rc.rc == pytest.approx(rcur)
    rc.on_packet_sent(b, 0.033)  # BC=6, T=6: hyper increase, i = min(T, BC) - F = 1
    rt = min(LINE, rt + 1 * 0.2 * LINE)
    rcur = (rt + rcur) / 2
    assert rc.rt == pytest.approx(rt) and rc.rc == pytest.approx(rcur)
    rc.on_timer(0.036)  # T=7, BC=6: i = 1 again; Rt capped at the line rate
    rt = min(LINE, rt + 0.2 * LINE)
    rcur = (rt + rcur) / 2
    assert rc.rt == pytest.approx(rt) and rc.rc == pytest.approx(rcur)
    assert rc.rt <= LINE


def test_byte_counter_accumulates_partial_packets() -> None:
    rc = dcqcn(byte_counter_bytes=3000)
    rc.on_cnp(0.0)
    for _ in range(5):
        rc.on_packet_sent(1000, 0.001)
    assert rc.byte_stage == 1  # 5000 bytes: one event, 2000 carried
    rc.on_packet_sent(1000, 0.001)
    assert rc.byte_stage == 2


def test_floor_and_recovery_in_silence() -> None:
    rc = dcqcn()
    t = 0.0
    for _ in range(50):
        rc.on_cnp(t)
        t += 0.001
        assert rc.rc >= rc.min_rate_bps
    assert rc.rc == pytest.approx(rc.min_rate_bps)
    last = rc.rate_bps
    steps = 0
    while rc.next_timer() is not None:
        nt = rc.next_timer()
        assert nt is not None
        rc.on_timer(nt)
        assert rc.min_rate_bps <= rc.rate_bps <= LINE
        assert rc.rate_bps >= last  # silence never lowers the rate
        last = rc.rate_bps
        steps += 1
        assert steps < 10_000
    assert rc.rate_bps == LINE and rc.rt == LINE
    assert not rc.recovering


def test_on_timer_catches_up_missed_periods() -> None:
    a, b = dcqcn(), dcqcn()
    for rc in (a, b):
        rc.on_cnp(0.0)
    for k in range(1, 9):
        a.on_timer(0.005 * k)
    b.on_timer(0.040)  # one late call runs all 8 timer events
    assert (a.rc, a.rt, a.timer_stage) == pytest.approx((b.rc, b.rt, b.timer_stage))


def test_rate_samples() -> None:
    rc = dcqcn()
    rc.on_packet_sent(1500, 0.5)
    rc.on_cnp(1.0)
    rc.on_timer(1.005)
    assert rc.rate_samples[0] == (0.5, LINE)
    assert rc.rate_samples[1] == (1.0, LINE / 2)
    assert rc.rate_samples[2][0] == pytest.approx(1.005)


def test_rate_samples_bounded() -> None:
    rc = dcqcn(max_samples=10)
    for k in range(100):
        rc.on_cnp(k * 0.001)
    assert len(rc.rate_samples) <= 10
    times = [t for t, _ in rc.rate_samples]
    assert times == sorted(times)
