"""P4Runtime messages <-> :mod:`emu.encoding`, for the bmv2 client and the embedded server.

One place turns a checked :class:`~emu.encoding.FieldMatch` into a ``p4.v1.FieldMatch``
(canonical bytestrings, don't-care fields omitted: P4Runtime 1.3 section 9.1.1) and back,
with the checks the specification asks of a server (section 9.1.1 "Match Format",
section 8.4 "Bytestrings"). A violated check raises :class:`P4RuntimeStatus`, a
:class:`~emu.control.ControlError` that carries the gRPC status code name the
specification prescribes (``INVALID_ARGUMENT``, ``OUT_OF_RANGE``, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from emu.control import ControlError
from emu.encoding import FieldMatch, KeyField, bytes_to_int, canonical_bytes, lpm_mask, wildcard

__all__ = ["P4RuntimeStatus", "decode_bytes", "match_from_proto", "match_to_proto", "match_to_spelling"]


class P4RuntimeStatus(ControlError):
    """A request the P4Runtime specification says to refuse: ``code`` is the name of a
    ``grpc.StatusCode`` / ``google.rpc.Code`` (``"INVALID_ARGUMENT"``), ``str()`` one line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def decode_bytes(data: bytes, bitwidth: int, what: str) -> int:
    """A received bytestring as an int; OUT_OF_RANGE when empty or wider than ``bitwidth``
    (P4Runtime 1.3 section 8.4.2)."""
    try:
        return bytes_to_int(data, bitwidth, what)
    except ControlError as e:
        raise P4RuntimeStatus("OUT_OF_RANGE", str(e)) from None


def match_to_proto(m: FieldMatch, fm: Any) -> None:
    """Fill ``fm`` (a ``p4.v1.FieldMatch``) from ``m`` (not a don't-care)."""
    fm.field_id = m.key.id
    width = m.key.bitwidth
    kind = m.key.match
    if kind == "exact":
        fm.exact.value = canonical_bytes(m.value, width)
    elif kind == "lpm":
        fm.lpm.value = canonical_bytes(m.value, width)
        fm.lpm.prefix_len = int(m.prefix_len or 0)
    elif kind == "ternary":
        fm.ternary.value = canonical_bytes(m.value, width)
        fm.ternary.mask = canonical_bytes(int(m.mask or 0), width)
    elif kind == "optional":
        fm.optional.value = canonical_bytes(m.value, width)
    else:
        fm.range.low = canonical_bytes(m.value, width)
        fm.range.high = canonical_bytes(int(m.high or 0), width)


def match_from_proto(table: str, keys: Sequence[KeyField], fields: Iterable[Any]) -> tuple[FieldMatch, ...]:
    """The ``p4.v1.FieldMatch`` list of an entry as FieldMatch in key order.

    Omitted non-exact fields are wildcards; INVALID_ARGUMENT for an unknown or repeated
    field id, a wrong match kind, an omitted exact field, an explicit don't-care, bits set
    beyond an lpm prefix or outside a ternary mask, a range with low > high;
    OUT_OF_RANGE for a bytestring that does not fit the field.
    """
    by_id = {k.id: k for k in keys}
    got: dict[int, FieldMatch] = {}
    for fm in fields:
        key = by_id.get(fm.field_id)
        if key is None:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{table}: unknown match field id {fm.field_id}")
        if key.id in got:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{table}: match field {key.name} given twice")
        kind = fm.WhichOneof("field_match_type")
        if kind != key.match:
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{table}: match field {key.name} is {key.match}, got {kind}")
        what = f"{table}: match field {key.name}"
        w = key.bitwidth
        if kind == "exact":
            m = FieldMatch(key, decode_bytes(fm.exact.value, w, what))
        elif kind == "lpm":
            value, plen = decode_bytes(fm.lpm.value, w, what), fm.lpm.prefix_len
            if not 0 < plen <= w:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: prefix length {plen} outside 1..{w} "
                                                          "(a /0 don't-care is omitted)")
            if value & ~lpm_mask(plen, w):
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: value {value:#x} has bits set beyond /{plen}")
            m = FieldMatch(key, value, prefix_len=plen)
        elif kind == "ternary":
            value, mask = decode_bytes(fm.ternary.value, w, what), decode_bytes(fm.ternary.mask, w, what)
            if mask == 0:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: mask 0 is a don't-care and must be omitted")
            if value & ~mask:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: value {value:#x} has bits outside mask {mask:#x}")
            m = FieldMatch(key, value, mask=mask)
        elif kind == "optional":
            m = FieldMatch(key, decode_bytes(fm.optional.value, w, what), mask=(1 << w) - 1)
        else:
            low, high = decode_bytes(fm.range.low, w, what), decode_bytes(fm.range.high, w, what)
            if low > high:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: range low {low} > high {high}")
            m = FieldMatch(key, low, high=high)
            if m.dont_care:
                raise P4RuntimeStatus("INVALID_ARGUMENT", f"{what}: the full range is a don't-care and must be "
                                                          "omitted")
        got[key.id] = m
    out = []
    for key in keys:
        if key.id in got:
            out.append(got[key.id])
        elif key.match == "exact":
            raise P4RuntimeStatus("INVALID_ARGUMENT", f"{table}: exact match field {key.name} is missing")
        else:
            out.append(wildcard(key))
    return tuple(out)


def match_to_spelling(fields: Iterable[FieldMatch]) -> dict[str, Any]:
    """FieldMatch -> the control API's ``match`` dict (don't-cares left out)."""
    out: dict[str, Any] = {}
    for m in fields:
        if m.dont_care:
            continue
        if m.key.match == "exact":
            out[m.key.name] = m.value
        elif m.key.match == "lpm":
            out[m.key.name] = [m.value, m.prefix_len]
        elif m.key.match == "range":
            out[m.key.name] = [m.value, m.high]
        else:
            out[m.key.name] = [m.value, m.mask]
    return out
