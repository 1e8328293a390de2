"""Values with units in topology files: ``"5ms"``, ``"100Gbit/s"``, ``"2us"``, ``"64KiB"``.

A field of the topology schema has a documented unit in its name (``delay_ms``,
``bandwidth_mbps``, ``step_timeout_s``). It takes either a bare number, read in that unit,
or a string with a unit, converted to it: ``delay_ms: 2us`` is 0.002 ms and
``bandwidth_mbps: 100Gbit/s`` is 100000 Mbit/s. Parsing and conversion use pint (SI and
binary prefixes, ``bit``/``byte``/``B``, ``s``/``ms``/``us``/``ns``, ``/s``, and ``bps``
for bit/s). The networking spellings ``bps``, ``Kbps``/``kbps``, ``Mbps``, ``Gbps``, ``Tbps``
are bits per second (decimal prefixes) and are read before pint, which would take ``bps`` as
baud and ``Gbps`` as ambiguous (gilbert-picosecond); pint's "yield multiple results" log
warnings are dropped. The unit registry is built on first use (about 0.1 s), so files with
bare numbers never pay for it.

- :func:`to_unit` converts one value and raises :class:`UnitError` (one line with a fix).
- :data:`Mbps`, :data:`Milliseconds`, :data:`Seconds`, :data:`Bytes` are pydantic
  annotated float/int types for schema fields; an error becomes a pydantic error of type
  ``unit`` whose context carries the fix.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

Kind = Literal["duration", "rate", "size"]

#: Unit kind -> an example written with a unit (for error messages).
_EXAMPLES: dict[Kind, str] = {"duration": "'5ms', '2us'", "rate": "'100Gbps', '10Mbit/s'", "size": "'64KiB'"}

#: Networking rate spellings -> bit/s per unit (decimal prefixes, as in IEEE 802.3 "100GBASE").
_BPS: dict[str, float] = {"bps": 1.0, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12}
_BPS_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(bps|[kK]bps|Mbps|Gbps|Tbps)$")


_BIT_HINT = " (bits are 'bit', bytes 'B': 'Gbit/s', not 'Gb/s')"


class UnitError(ValueError):
    """A value whose unit is missing, unknown or of the wrong kind; ``fix`` says what to write."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}")


class _DropAmbiguityWarnings(logging.Filter):
    """Drops pint's ``Parsing X yield multiple results`` warnings (our error says what to write)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "yield multiple results" not in record.getMessage()


@functools.cache
def _registry() -> Any:
    import pint  # deferred: only strings with units need it

    for name in ("pint", "pint.util"):
        logging.getLogger(name).addFilter(_DropAmbiguityWarnings())
    ureg = pint.UnitRegistry(cache_folder=None)
    if "bps" not in ureg:  # pint >= 0.24 defines it
        ureg.define("bps = bit / second")
    return ureg


def _is_information(units: Any) -> bool:
    """True when the unit expression contains bit or byte (pint treats both as dimensionless)."""
    names = str(units)
    return "bit" in names or "byte" in names or "bps" in names


def to_unit(value: Any, unit: str, kind: Kind) -> float:
    """``value`` in ``unit``: a bare number is already in it, a string is parsed with its unit.

    Args:
        value: an int/float (taken as ``unit``) or a string such as ``"5ms"``, ``"100Gbit/s"``
            or ``"5"`` (no unit: taken as ``unit``).
        unit: pint unit the result is expressed in (``"ms"``, ``"s"``, ``"Mbit/s"``, ``"B"``).
        kind: what the value measures; a string of another kind is rejected.

    Returns the magnitude in ``unit`` (float). Raises :class:`UnitError` for an unparsable
    string, an unknown unit or a unit of another kind (``"5ms"`` for a rate, ``"3 Gb/s"``,
    which pint reads as gilbert per second). ``bps``/``Kbps``/``Mbps``/``Gbps``/``Tbps`` are
    bit/s (a rate; for another kind they are rejected).
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a number, got {value!r}", f"give a number in {unit} or a value with a unit")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise UnitError(
            f"expected a number or a string with a unit, got {type(value).__name__}",
            f"give a number in {unit} or e.g. {_EXAMPLES[kind]}",
        )
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    match = _BPS_RE.match(text)
    if match:
        number, suffix = match.groups()
        if kind == "rate" and unit == "Mbit/s":  # the common case, without loading pint
            return float(f"{float(number) * _BPS[suffix] / 1e6:.12g}")
        text = f"{number} {suffix[:-3].replace('K', 'k')}bit/s"
    import pint

    ureg = _registry()
    try:
        qty = ureg.Quantity(text)
    except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError, ValueError, TypeError,
            AttributeError, SyntaxError, AssertionError) as exc:
        raise UnitError(
            f"cannot read {value!r} as a {kind} "
            f"({'unknown unit' if isinstance(exc, pint.errors.UndefinedUnitError) else 'not a number and a unit'})",
            f"write a number and a unit, e.g. {_EXAMPLES[kind]}, or a bare number in {unit}",
        ) from None
    if not isinstance(qty, ureg.Quantity):  # a bare expression such as "2*3"
        return float(qty)
    target = ureg.Unit(unit)
    if qty.dimensionless and not _is_information(qty.units):
        return float(qty.to(ureg.dimensionless).magnitude)
    wrong_kind = (
        (kind == "rate" and not _is_information(qty.units))
        or (kind == "size" and not _is_information(qty.units))
        or not qty.is_compatible_with(target)
    )
    if wrong_kind:
        raise UnitError(
            f"{value!r} is not a {kind} (pint reads it as {qty.units:~})",
            f"write a {kind} such as {_EXAMPLES[kind]}{_BIT_HINT if kind != 'duration' else ''},"
            f" or a bare number in {unit}",
        )
    # 12 significant digits: '2ns' in ms is 2e-06, not 2.0000000000000003e-06.
    return float(f"{qty.to(target).magnitude:.12g}")


def _finite(value: Any, out: float, unit: str) -> float:
    """``out`` unless it is infinite or NaN (YAML's ``.inf``, ``1e400``): UnitError naming it."""
    if not math.isfinite(out):
        raise UnitError(f"{value!r} is not a finite number", f"give a finite number in {unit}")
    return out


def _validator(unit: str, kind: Kind) -> BeforeValidator:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        try:
            return _finite(value, to_unit(value, unit, kind), unit)
        except UnitError as exc:
            raise PydanticCustomError("unit", exc.problem, {"fix": exc.fix}) from None

    return BeforeValidator(convert)


def _int_validator(unit: str, kind: Kind) -> BeforeValidator:
    def convert(value: Any) -> Any:
        if value is None or isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            out = _finite(value, to_unit(value, unit, kind), unit)
        except UnitError as exc:
            raise PydanticCustomError("unit", exc.problem, {"fix": exc.fix}) from None
        if not out.is_integer():
            raise PydanticCustomError(
                "unit", f"{value!r} is not a whole number of {unit} ({out:g})", {"fix": f"give a whole number of {unit}"}
            )
        return int(out)

    return BeforeValidator(convert)


#: Rate in Mbit/s (bare number) or with a unit (``"100Gbit/s"``, ``"10Mbps"``).
Mbps = Annotated[float, _validator("Mbit/s", "rate")]
#: Duration in ms (bare number) or with a unit (``"2us"``, ``"1.5s"``).
Milliseconds = Annotated[float, _validator("ms", "duration")]
#: Duration in s (bare number) or with a unit (``"500ms"``).
Seconds = Annotated[float, _validator("s", "duration")]
#: Size in bytes (bare integer) or with a unit (``"64KiB"``, ``"1MB"``); a whole number of bytes.
Bytes = Annotated[int, _int_validator("B", "size")]


def parse_size(value: str | int | None) -> int | None:
    """Bytes from ``262144``, ``256K``, ``256KiB``, ``1M``, ``1MB`` (K/M/G are powers of 1024; None stays None).

    The command line's and the sweeps' size syntax (``--size``). Raises ValueError, whose
    ``str()`` is one line naming the value, when it is not a positive size.
    """
    if value is None or isinstance(value, int):
        return value
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    scale = 1
    if text and text[-1] in "KMG":
        scale = 1024 ** ("KMG".index(text[-1]) + 1)
        text = text[:-1]
    try:
        size = int(float(text) * scale)
    except (ValueError, OverflowError):  # OverflowError: inf, 1e400 (new-user check 2026-12-04: a traceback)
        raise ValueError(f"{value!r} is not a size in bytes (e.g. 262144, 256K, 1M)") from None
    if size <= 0:
        raise ValueError(f"{value!r}: the size must be positive")
    return size

