"""hostapps/wire.py and p4/include/{constants,headers}.p4 must agree (docs/DESIGN.md section 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emu import p4names
from hostapps import wire
from hostapps.collectives import COLLECTIVE_KINDS, lead_bound

P4_INCLUDE = Path(__file__).resolve().parents[2] / "p4" / "include"


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _p4_constants() -> dict[str, int]:
    text = _strip_comments((P4_INCLUDE / "constants.p4").read_text())
    out: dict[str, int] = {}
    for name, value in re.findall(r"const\s+bit<\d+>\s+(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", text):
        out[name] = int(value, 0)
    for name, value in re.findall(r"#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", text):
        out[name] = int(value, 0)
    return out


def _cth_fields() -> list[tuple[str, int]]:
    text = _strip_comments((P4_INCLUDE / "headers.p4").read_text())
    m = re.search(r"header\s+cth_t\s*\{(.*?)\}", text, flags=re.S)
    assert m, "header cth_t not found in p4/include/headers.p4"
    fields = re.findall(r"bit<(\d+)>\s+(\w+)\s*;", m.group(1))
    assert len(fields) == len(re.findall(r";", m.group(1))), "cth_t has a field that is not bit<N>"
    return [(name, int(width)) for width, name in fields]


@pytest.mark.parametrize(
    "p4_name, py_value",
    [
        ("CTH_UDP_PORT", wire.CTH_UDP_PORT),
        ("CTH_VERSION", wire.CTH_VERSION),
        ("MAX_JOBS", wire.MAX_JOBS),
        ("MAX_RANKS", wire.MAX_RANKS),
        ("MAX_CHANNELS", wire.MAX_CHANNELS),
        ("MAX_JOBS_LOG2", wire.MAX_JOBS_LOG2),
        ("MAX_CHANNELS_LOG2", wire.MAX_CHANNELS_LOG2),
        ("MAX_RANKS_LOG2", wire.MAX_RANKS_LOG2),
        ("STEP_WINDOW_LOG2", wire.STEP_WINDOW_LOG2),
        ("MAX_TRACKERS_LOG2", wire.MAX_TRACKERS_LOG2),
        ("FLOW_SLOTS", wire.FLOW_SLOTS),
        ("STEP_SLOTS", wire.STEP_SLOTS),
        ("STEP_WINDOW", wire.STEP_WINDOW),
        ("MAX_TRACKERS", wire.MAX_TRACKERS),
        ("ECN_NOT_ECT", wire.ECN_NOT_ECT),
        ("ECN_ECT1", wire.ECN_ECT1),
        ("ECN_ECT0", wire.ECN_ECT0),
        ("ECN_CE", wire.ECN_CE),
        ("CTH_TYPE_DATA", wire.CthType.DATA),
        ("CTH_TYPE_ACK", wire.CthType.ACK),
        ("CTH_TYPE_NACK", wire.CthType.NACK),
        ("CTH_TYPE_CNP", wire.CthType.CNP),
        ("QUEUE_ECN_ENTRIES", p4names.QUEUE_ECN_ENTRIES),
        ("PROB_ONE", p4names.PROB_ONE),
    ],
)
def test_constant_agrees(p4_name: str, py_value: int) -> None:
    consts = _p4_constants()
    assert p4_name in consts, f"{p4_name} missing from p4/include/constants.p4"
    assert consts[p4_name] == int(py_value), f"{p4_name}: P4 {consts[p4_name]} != Python {py_value}"


def test_register_slots_follow_from_sizes() -> None:
    consts = _p4_constants()
    assert consts["FLOW_SLOTS"] == wire.MAX_JOBS * wire.MAX_CHANNELS * wire.MAX_RANKS
    assert consts["STEP_SLOTS"] == wire.MAX_TRACKERS * wire.STEP_WINDOW
    assert wire.MAX_TRACKERS > wire.MAX_JOBS  # job-wide trackers first, then per-port ones
    # the window exceeds every lead a one-ring job can have (the loader rejects channel jobs beyond it)
    assert wire.STEP_WINDOW > max(lead_bound(kind, wire.MAX_RANKS) for kind in COLLECTIVE_KINDS)
    assert wire.STEP_WINDOW < 1 << 15  # serial arithmetic on 16-bit steps
    # indices are shifts (no run-time multiplication, docs/DESIGN.md section 4)
    for name in ("MAX_JOBS", "MAX_CHANNELS", "MAX_RANKS", "STEP_WINDOW", "MAX_TRACKERS"):
        assert 1 << consts[name + "_LOG2"] == consts[name], name
    top = wire.flow_index(wire.MAX_JOBS - 1, wire.MAX_CHANNELS - 1, wire.MAX_RANKS - 1)
    assert top == wire.FLOW_SLOTS - 1 and wire.flow_index(1, 0, 0) == wire.MAX_CHANNELS * wire.MAX_RANKS
    assert wire.slot_index(wire.MAX_TRACKERS - 1, wire.STEP_WINDOW - 1) == wire.STEP_SLOTS - 1
    # the wire's fields hold every tracked value
    assert wire.MAX_JOBS <= 1 << 8 and wire.MAX_CHANNELS <= 1 << 8 and wire.MAX_RANKS <= 1 << 16


def test_cth_fields_widths_and_order() -> None:
    assert _cth_fields() == list(wire.CTH_FIELD_BITS)


def test_cth_is_16_bytes() -> None:
    bits = sum(w for _, w in _cth_fields())
    assert bits == 8 * wire.CTH_LEN == 128
    assert sum(w for _, w in wire.CTH_FIELD_BITS) == 128
