"""Extern objects and functions of the embedded switch that the generated code calls.

Runtime state of ``register`` and ``counter`` instances, and the checksum and hash
functions with bmv2's definitions (``HashAlgorithm`` members). Code generation for the
extern calls lives with the architecture that declares them (``v1model.py``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Counter", "Objects", "Register", "crc16", "csum", "csum16", "hash_value"]


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



@dataclass
class Objects:
    """The control-plane visible state of a compiled program, by fully qualified P4 name."""

    tables: dict[str, Any] = field(default_factory=dict)
    registers: dict[str, Register] = field(default_factory=dict)
    counters: dict[str, Counter] = field(default_factory=dict)
