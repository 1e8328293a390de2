"""Extern objects and functions of the embedded switch that the generated code calls.

Runtime state of ``register`` and ``counter`` instances, and the checksum and hash
functions with bmv2's definitions (``HashAlgorithm`` members). Code generation for the
extern calls lives with the architecture that declares them (``v1model.py``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Counter", "DirectCounter", "DirectMeter", "DirectState", "Meter", "MeterCell", "Objects", "Register",
           "crc16", "csum", "csum16", "hash_value"]


def csum16(x: int, bits: int) -> int:
    """RFC 1071 ones'-complement checksum of the ``bits``-bit big-endian value ``x``.

    The value is zero-padded at the end to a multiple of 16 bits. Uses
    sum(words) == x mod 0xFFFF (2**16 == 1 mod 0xFFFF) with 0xFFFF for a non-zero
    multiple (ones' complement has two zeros). Returns the 16-bit checksum (~sum).
    """
    pad = (-bits) % 16
    if pad:
        x <<= pad
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return 0xFFFF - s


def csum(x: int) -> int:
    """:func:`csum16` of a value already padded to a multiple of 16 bits."""
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return 0xFFFF - s


_CRC16_TABLE: list[int] = []


def crc16(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0), bmv2's ``crc16``."""
    if not _CRC16_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0xA001 if c & 1 else c >> 1
            _CRC16_TABLE.append(c)
    crc = 0
    for b in data:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ b) & 0xFF]
    return crc


def hash_value(algo: str, x: int, bits: int) -> int:
    """v1model ``hash`` of the ``bits``-bit value ``x`` with ``HashAlgorithm`` member ``algo``.

    The data is ``x`` left-aligned in whole bytes (bmv2 packs a field list that way).
    crc32 is zlib's (CRC-32/ISO-HDLC), crc16 CRC-16/ARC, csum16 RFC 1071, identity the
    value itself, xor16 the XOR of its 16-bit words. Raises ValueError for another name.
    """
    nbytes = (bits + 7) // 8
    x <<= nbytes * 8 - bits
    data = x.to_bytes(nbytes, "big")
    if algo == "crc32":
        return zlib.crc32(data)
    if algo == "crc16":
        return crc16(data)
    if algo == "csum16":
        return csum16(x, nbytes * 8)
    if algo == "identity":
        return x
    if algo == "xor16":
        r = 0
        while x:
            r ^= x & 0xFFFF
            x >>= 16
        return r
    raise ValueError(algo)


class Register:
    """``register<bit<W>>(N)``: values in a list (bmv2: out-of-range read 0, write ignored)."""

    def __init__(self, name: str, width: int, size: int) -> None:
        self.name, self.width, self.size = name, width, size
        self.values = [0] * size


class Counter:
    """``counter(N, type)``: per-index packet and byte counts."""

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.size, self.kind = name, size, kind
        self.packets = [0] * size
        self.bytes = [0] * size



class MeterCell:
    """One two-rate three-colour meter (RFC 2698, colour-blind) as bmv2 computes it.

    ``set_rates([(cir, cbs), (pir, pbs)])``: rates in units (packets or bytes) per
    microsecond, bursts in units (bmv2 ``meter_set_rates``; CIR <= PIR). Buckets start
    full. :meth:`execute` refills each bucket with ``floor(now_us * rate)`` tokens counted
    from time 0 (bmv2 counts from the meter's creation), checks the peak bucket first (short
    of tokens: RED = 2), then the committed one (YELLOW = 1), else GREEN = 0, taking the
    packet's units from every bucket it passed. An unconfigured meter gives GREEN.
    Source: bmv2 src/bm_sim/meters.cpp (Meter::set_rates, Meter::execute).
    """

    __slots__ = ("rates",)

    def __init__(self) -> None:
        self.rates: list[list] = []  # [info_rate, burst, tokens, tokens_last, colour], peak first

    def set_rates(self, rates: list[tuple[float, int]]) -> None:
        """Configure ``[(cir, cbs), (pir, pbs)]`` (raises ValueError when CIR > PIR or a value is negative)."""
        if len(rates) != 2:
            raise ValueError("a meter takes two rates: [[CIR, CBS], [PIR, PBS]] (units per microsecond, units)")
        (cir, cbs), (pir, pbs) = rates
        if min(cir, cbs, pir, pbs) < 0:
            raise ValueError("meter rates and bursts must not be negative")
        if cir > pir:
            raise ValueError(f"committed rate {cir} above peak rate {pir}")
        self.rates = [[float(pir), int(pbs), int(pbs), 0, 2], [float(cir), int(cbs), int(cbs), 0, 1]]

    def execute(self, now_us: int, units: int) -> int:
        """Colour of a packet of ``units`` (1 packet, or its bytes) at ``now_us``: 0 green, 1 yellow, 2 red."""
        colour = 0
        for r in self.rates:
            since = int(now_us * r[0])
            r[2] = min(r[2] + since - r[3], r[1])
            r[3] = since
            if r[2] < units:
                colour = r[4]
                break
            r[2] -= units
        return colour


class Meter:
    """``meter(N, MeterType)``: N :class:`MeterCell` (``kind`` "packets" or "bytes")."""

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.size, self.kind = name, size, kind
        self.cells = [MeterCell() for _ in range(size)]


class DirectCounter:
    """``direct_counter(CounterType)`` of a table: packets and bytes per entry, counted on hits."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind


class DirectMeter:
    """``direct_meter<T>(MeterType)`` of a table: one :class:`MeterCell` per entry, run on hits."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind


class DirectState:
    """What a table entry carries for its table's direct counter and meter."""

    __slots__ = ("bytes", "meter", "packets")

    def __init__(self, meter: bool) -> None:
        self.packets = 0
        self.bytes = 0
        self.meter = MeterCell() if meter else None


@dataclass
class Objects:
    """The control-plane visible state of a compiled program, by fully qualified P4 name."""

    tables: dict[str, Any] = field(default_factory=dict)
    registers: dict[str, Register] = field(default_factory=dict)
    counters: dict[str, Counter] = field(default_factory=dict)
    meters: dict[str, Meter] = field(default_factory=dict)
    #: action_profile / action_selector instances (tables.ActionProfile)
    action_profiles: dict[str, Any] = field(default_factory=dict)
    #: parser value sets (tables.ValueSet)
    value_sets: dict[str, Any] = field(default_factory=dict)
