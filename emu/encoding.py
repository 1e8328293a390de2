"""Values and match keys of table entries, the same for every target (docs/DESIGN.md section 2).

Every target (the embedded switch's tables, bmv2 over P4Runtime or its Thrift CLI, the
P4Runtime server of the embedded switch) turns the control API's spelling of an entry
into the same checked :class:`FieldMatch` tuple with :func:`build_match` and
:func:`build_params`, so an entry means the same thing everywhere:

- values (:func:`parse_value`): ints, bools, numeric strings (``"0x0a"``, ``"10"``),
  IPv4 ``"a.b.c.d"`` (32-bit fields), MAC ``"aa:bb:cc:dd:ee:ff"`` (48-bit fields), IPv6
  (128-bit fields); a value that does not fit the field's width is an error, never truncated;
- exact keys need a value; an omitted lpm, ternary, optional or range key is a wildcard
  (P4Runtime 1.3 section 9.1.1: an omitted field is "don't care");
- lpm ``"10.0.1.0/24"`` or ``[value, prefix_len]`` (bits below the prefix are cleared);
  ternary/optional ``[value, mask]`` or a bare value (all bits); range ``[low, high]``
  with ``low <= high``;
- ternary/range/optional tables need a priority, higher wins (P4Runtime section 9.1);
  exact/lpm tables take none.

:func:`canonical_bytes` / :func:`bytes_to_int` are P4Runtime's binary strings (P4Runtime
1.3 section 8.4: canonical form has no leading zero bytes; a server also accepts the value
padded to the field's full byte width). Every error is :class:`~emu.control.ControlError`
with one line that names the table, key, action or parameter.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from emu.control import ControlError

__all__ = [
    "ActionInfo", "FieldMatch", "KeyField", "MATCH_KINDS", "build_match", "build_params", "bytes_to_int",
    "canonical_bytes", "check_priority", "closest", "lpm_mask", "needs_priority", "parse_value", "wildcard",
]

#: Match kinds of P4_16 core and v1model (``optional`` from P4Runtime's v1model mapping).
MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
#: Match kinds whose tables need a priority.
PRIORITY_KINDS = ("ternary", "range", "optional")


def closest(name: str, options: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the option closest to ``name``, or ``""``."""
    m = difflib.get_close_matches(name, list(options), n=1, cutoff=0.5)
    return f" (did you mean {m[0]}?)" if m else ""


# -- values --------------------------------------------------------------------------------


def parse_value(value: Any, bitwidth: int, what: str) -> int:
    """``value`` as an unsigned int of ``bitwidth`` bits (see the module docstring).

    ControlError names ``what``: ``"{what}: cannot parse value '10.0.0.256' for a bit<32>
    field"`` or ``"{what}: value 512 does not fit in bit<9>"``.
    """
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        v = value
    elif isinstance(value, str):
        try:
            v = _text_value(value.strip(), bitwidth)
        except ValueError:
            raise ControlError(f"{what}: cannot parse value {value!r} for a bit<{bitwidth}> field") from None
    else:
        raise ControlError(f"{what}: cannot parse value {value!r} (expected an int or a string)")
    if v < 0 or v >> bitwidth:
        raise ControlError(f"{what}: value {value!r} does not fit in bit<{bitwidth}>")
    return v


@functools.lru_cache(maxsize=8192)
def _text_value(text: str, bitwidth: int) -> int:
    """The int a stripped string spells for a ``bitwidth``-bit field (dotted IPv4 for 32 bits, a
    colon MAC for 48, IPv6 for 128, else an int literal); ValueError if it spells none. Cached on
    ``(text, bitwidth)``, of which it is a function (an error is not cached: raised again): a
    network's switches get the same addresses (at 128 ranks 66 x 128 routes)."""
    if text.count(".") == 3 and bitwidth == 32:
        return int(ipaddress.IPv4Address(text))
    if text.count(":") == 5 and bitwidth == 48:
        octets = text.split(":")
        if not all(1 <= len(o) <= 2 for o in octets):
            raise ValueError(text)
        return int("".join(o.zfill(2) for o in octets), 16)
    if ":" in text and bitwidth == 128:
        return int(ipaddress.IPv6Address(text))
    return int(text.replace("_", ""), 0)


def canonical_bytes(value: int, bitwidth: int) -> bytes:
    """P4Runtime's canonical binary string of ``value``: big-endian, no leading zero bytes,
    at least one byte (P4Runtime 1.3 section 8.4.2). ValueError if it does not fit."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value} does not fit in bit<{bitwidth}>")
    raw = value.to_bytes(max(1, (bitwidth + 7) // 8), "big")
    return raw.lstrip(b"\x00") or b"\x00"


def bytes_to_int(data: bytes, bitwidth: int, what: str) -> int:
    """The value of a P4Runtime binary string for a ``bitwidth``-bit field.

    Accepts the canonical form and any zero-padded form (P4Runtime 1.3 section 8.4.2);
    ControlError when it is empty or the value does not fit ``bitwidth`` bits.
    """
    if not data:
        raise ControlError(f"{what}: empty bytestring")
    v = int.from_bytes(data, "big")
    if v >> bitwidth:
        raise ControlError(f"{what}: value 0x{data.hex()} does not fit in bit<{bitwidth}>")
    return v


# -- keys ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyField:
    """One table key field: P4 name (``hdr.ipv4.dstAddr``), match kind, width in bits, P4Runtime id."""

    name: str
    match: str
    bitwidth: int
    id: int = 0


@dataclass(frozen=True)
class FieldMatch:
    """One key field of an entry: ``value`` plus ``prefix_len`` (lpm), ``mask``
    (ternary/optional) or ``high`` (range; ``value`` is the low end). A wildcard is
    lpm ``/0``, mask 0 or the full range."""

    key: KeyField
    value: int
    prefix_len: int | None = None
    mask: int | None = None
    high: int | None = None

    @property
    def dont_care(self) -> bool:
        """Whether the field matches everything (P4Runtime omits such fields)."""
        k = self.key
        return ((k.match == "lpm" and self.prefix_len == 0)
                or (k.match in ("ternary", "optional") and self.mask == 0)
                or (k.match == "range" and self.value == 0 and self.high == (1 << k.bitwidth) - 1))

    def ident(self) -> tuple:
        """Hashable identity (value and match parameters)."""
        return (self.value, self.prefix_len, self.mask, self.high)


def wildcard(key: KeyField) -> FieldMatch:
    """The don't-care match of a non-exact key."""
    if key.match == "lpm":
        return FieldMatch(key, 0, prefix_len=0)
    if key.match == "range":
        return FieldMatch(key, 0, high=(1 << key.bitwidth) - 1)
    return FieldMatch(key, 0, mask=0)


def lpm_mask(prefix_len: int, bitwidth: int) -> int:
    """The mask of the top ``prefix_len`` bits of a ``bitwidth``-bit field."""
    return ((1 << prefix_len) - 1) << (bitwidth - prefix_len)


def match_field(table: str, key: KeyField, v: Any) -> FieldMatch:
    """One key's value in the control API's spelling -> FieldMatch (checked)."""
    what = f"{table}: key {key.name}"
    if key.match == "exact":
        if isinstance(v, (list, tuple)):
            raise ControlError(f"{what}: an exact key takes one value, got {v!r}")
        return FieldMatch(key, parse_value(v, key.bitwidth, what))
    if key.match == "lpm":
        if isinstance(v, str) and "/" in v:
            text, _, plen_text = v.rpartition("/")
            v = [text, plen_text]
        if isinstance(v, (list, tuple)):
            if len(v) != 2:
                raise ControlError(f"{what}: an lpm value is 'VALUE/LEN' or [value, prefix_len], got {v!r}")
            value = parse_value(v[0], key.bitwidth, what)
            try:
                plen = int(v[1])
            except (TypeError, ValueError):
                raise ControlError(f"{what}: bad prefix length {v[1]!r}") from None
        else:
            value, plen = parse_value(v, key.bitwidth, what), key.bitwidth
        if not 0 <= plen <= key.bitwidth:
            raise ControlError(f"{what}: prefix length {plen} outside 0..{key.bitwidth}")
        return FieldMatch(key, value & lpm_mask(plen, key.bitwidth), prefix_len=plen)
    if key.match in ("ternary", "optional"):
        if isinstance(v, (list, tuple)):
            if len(v) != 2:
                raise ControlError(f"{what}: a {key.match} value is [value, mask] or one value, got {v!r}")
            value, mask = parse_value(v[0], key.bitwidth, what), parse_value(v[1], key.bitwidth, what + " mask")
            if key.match == "optional" and mask not in (0, (1 << key.bitwidth) - 1):
                raise ControlError(f"{what}: an optional key's mask is 0 or all ones, got {mask:#x}")
        else:
            value, mask = parse_value(v, key.bitwidth, what), (1 << key.bitwidth) - 1
        return FieldMatch(key, value & mask, mask=mask)
    if key.match == "range":
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            raise ControlError(f"{what}: a range value is [low, high], got {v!r}")
        low, high = parse_value(v[0], key.bitwidth, what), parse_value(v[1], key.bitwidth, what)
        if low > high:
            raise ControlError(f"{what}: range low {low} > high {high}")
        return FieldMatch(key, low, high=high)
    raise ControlError(f"{what}: match kind {key.match!r} not supported (kinds: {', '.join(MATCH_KINDS)})")


def build_match(table: str, keys: Sequence[KeyField], match: dict[str, Any] | None) -> tuple[FieldMatch, ...]:
    """``match`` ({key name: value}) as FieldMatch in key order; omitted non-exact keys are
    wildcards. ControlError on an unknown or missing key or a bad value."""
    if match is None:
        match = {}
    if not isinstance(match, dict):
        raise ControlError(f"{table}: match must be an object {{key: value}}, got {type(match).__name__}")
    names = [k.name for k in keys]
    for name in match:
        if name not in names:
            raise ControlError(f"{table}: unknown key field {name}{closest(str(name), names)} "
                               f"(keys: {', '.join(names) or 'none'})")
    out = []
    for key in keys:
        if key.name in match:
            out.append(match_field(table, key, match[key.name]))
        elif key.match == "exact":
            raise ControlError(f"{table}: key {key.name}: missing from match (exact keys need a value)")
        else:
            out.append(wildcard(key))
    return tuple(out)


def needs_priority(keys: Sequence[KeyField]) -> bool:
    """Whether a table with these keys orders its entries by priority."""
    return any(k.match in PRIORITY_KINDS for k in keys)


def check_priority(table: str, keys: Sequence[KeyField], priority: int | None) -> int | None:
    """The entry's priority: an int >= 1 for ternary/range/optional tables (ControlError
    when missing), None for exact/lpm tables (a given priority is ignored, as bmv2 does)."""
    if not needs_priority(keys):
        return None
    if priority is None:
        raise ControlError(f"{table}: ternary/range/optional table needs a priority (higher wins)")
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority < 1 << 31:
        raise ControlError(f"{table}: priority {priority!r} outside 1..{(1 << 31) - 1}")
    return priority


# -- actions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionInfo:
    """An action: fully qualified name, ``(param name, bitwidth, P4Runtime id)`` in declaration
    order, P4Runtime id."""

    name: str
    params: tuple[tuple[str, int, int], ...] = ()
    id: int = 0


def build_params(table: str, action: ActionInfo, params: dict[str, Any] | None) -> tuple[int, ...]:
    """``params`` ({P4 name: value}) as ints in declaration order; ControlError names the
    table, action and parameter of a missing, unknown or bad value."""
    params = dict(params or {})
    names = [p[0] for p in action.params]
    for name in params:
        if name not in names:
            raise ControlError(f"{table}: action {action.name} has no parameter {name}{closest(str(name), names)} "
                               f"(parameters: {', '.join(names) or 'none'})")
    out = []
    for name, width, _pid in action.params:
        if name not in params:
            raise ControlError(f"{table}: action {action.name} needs parameter {name}")
        out.append(parse_value(params[name], width, f"{table}: action {action.name} parameter {name}"))
    return tuple(out)
