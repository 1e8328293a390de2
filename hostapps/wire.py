"""Collective transport header (CTH) codec, docs/DESIGN.md section 3.

The CTH is 16 bytes in network byte order, carried in UDP to :data:`CTH_UDP_PORT`::

    byte 0      version:4 | type:4     DATA=1, ACK=2, NACK=3, CNP=4
    byte 1      flags                  bit0 LAST, bit1 ECE, bit2 RETX
    bytes 2-3   job_id                 < MAX_JOBS
    bytes 4-5   step                   collective-global step, serial arithmetic mod 2**16
    byte 6      src_rank
    byte 7      dst_rank
    bytes 8-11  psn                    DATA: packet sequence number; ACK: next expected PSN
    bytes 12-15 offset                 DATA: byte offset of the payload in the step's chunk

Every constant here is also declared in ``p4/include/constants.p4``;
``tests/unit/test_wire_p4_constants.py`` checks that both agree.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

#: UDP destination port of the CTH (``CTH_UDP_PORT`` in p4/include/constants.p4).
CTH_UDP_PORT = 4793
#: Protocol version carried in the high nibble of byte 0.
CTH_VERSION = 1
#: Header length in bytes.
CTH_LEN = 16
#: Jobs a switch tracks (register sizes in the P4 program).
MAX_JOBS = 16
#: Ranks per job a switch tracks.
MAX_RANKS = 128
#: Step window W of the ``step_count`` register; W > MAX_RANKS (docs/DESIGN.md section 4).
STEP_WINDOW = 256
#: Tracker instances of ``step_count`` and ``frontier``: a job-wide tracker's id is its job id,
#: per-(job, egress port) trackers take the ids of no job at the switch (docs/DESIGN.md section 4).
MAX_TRACKERS = 32

#: ECN codepoints, low two bits of the IPv4 TOS byte (RFC 3168 section 5).
ECN_NOT_ECT = 0b00
ECN_ECT1 = 0b01
ECN_ECT0 = 0b10
ECN_CE = 0b11
ECN_MASK = 0b11

#: Bit widths of the CTH fields in wire order (checked against ``cth_t`` in the P4).
CTH_FIELD_BITS: tuple[tuple[str, int], ...] = (
    ("version", 4),
    ("type", 4),
    ("flags", 8),
    ("job_id", 16),
    ("step", 16),
    ("src_rank", 8),
    ("dst_rank", 8),
    ("psn", 32),
    ("offset", 32),
)

_STRUCT = struct.Struct("!BBHHBBII")
assert _STRUCT.size == CTH_LEN


class CthType(enum.IntEnum):
    """CTH packet types (low nibble of byte 0)."""

    DATA = 1
    ACK = 2
    NACK = 3
    CNP = 4


class CthFlags(enum.IntFlag):
    """CTH flag bits (byte 1)."""

    NONE = 0
    LAST = 0x01  #: last packet of this step's chunk
    ECE = 0x02  #: ACK echoes a CE mark
    RETX = 0x04  #: retransmission


class WireError(ValueError):
    """A datagram that is not a valid CTH packet."""


@dataclass(frozen=True, slots=True)
class Cth:
    """One decoded collective transport header.

    Attributes are the fields of docs/DESIGN.md section 3; ``step`` is modulo 2**16,
    ``psn`` and ``offset`` modulo 2**32.
    """

    type: CthType
    job_id: int
    step: int
    src_rank: int
    dst_rank: int
    psn: int = 0
    offset: int = 0
    flags: int = 0
    version: int = CTH_VERSION

    def pack(self) -> bytes:
        """Encode to 16 bytes, network byte order. Raises :class:`WireError` on overflow."""
        try:
            return _pack(self.type, self.job_id, self.step, self.src_rank, self.dst_rank, self.psn, self.offset,
                         self.flags, self.version)
        except struct.error as exc:
            raise WireError(f"CTH field out of range in {self!r}: {exc}") from None


def _pack(ctype: int, job_id: int, step: int, src_rank: int, dst_rank: int, psn: int, offset: int, flags: int,
          version: int) -> bytes:
    """The 16 header bytes (``step`` modulo 2**16, ``psn`` modulo 2**32); struct.error on overflow."""
    return _STRUCT.pack(((version & 0xF) << 4) | (int(ctype) & 0xF), flags, job_id, step & 0xFFFF, src_rank,
                        dst_rank, psn & 0xFFFFFFFF, offset)


def pack_header(ctype: int, job_id: int, step: int, src_rank: int, dst_rank: int, psn: int = 0, offset: int = 0,
                flags: int = 0) -> bytes:
    """``Cth(ctype, job_id, step, src_rank, dst_rank, psn, offset, flags).pack()`` without the object
    (the transport's per-packet path). Raises :class:`WireError` on overflow."""
    try:
        return _pack(ctype, job_id, step, src_rank, dst_rank, psn, offset, flags, CTH_VERSION)
    except struct.error as exc:
        raise WireError(f"CTH field out of range (type {int(ctype)}, job {job_id}, step {step}, ranks "
                        f"{src_rank}->{dst_rank}, psn {psn}, offset {offset}, flags {flags}): {exc}") from None


def encode(header: Cth, payload: bytes | memoryview = b"") -> bytes:
    """Return ``header`` packed and followed by ``payload``."""
    return header.pack() + bytes(payload)


def decode(datagram: bytes | memoryview) -> tuple[Cth, memoryview]:
    """Split a UDP payload into its CTH and the payload after it.

    Raises :class:`WireError` naming the problem for a short datagram, a wrong version
    or an unknown type.
    """
    ptype, flags, job_id, step, src, dst, psn, offset, payload = unpack_header(datagram)
    return Cth(_TYPES[ptype], job_id, step, src, dst, psn, offset, flags, CTH_VERSION), payload


def unpack_header(datagram: bytes | memoryview) -> tuple[int, int, int, int, int, int, int, int, memoryview]:
    """:func:`decode` without the object (the transport's per-packet path): ``(type, flags,
    job_id, step, src_rank, dst_rank, psn, offset, payload)``, the type a :class:`CthType`
    value. Raises :class:`WireError` as :func:`decode`.
    """
    view = memoryview(datagram)
    if len(view) < CTH_LEN:
        raise WireError(f"datagram of {len(view)} bytes is shorter than the {CTH_LEN}-byte CTH")
    vt, flags, job_id, step, src, dst, psn, offset = _STRUCT.unpack_from(view, 0)
    version, ptype = vt >> 4, vt & 0xF
    if version != CTH_VERSION:
        raise WireError(f"CTH version {version}, expected {CTH_VERSION}")
    if ptype not in _TYPES:
        raise WireError(f"unknown CTH type {ptype}")
    return ptype, flags, job_id, step, src, dst, psn, offset, view[CTH_LEN:]


_TYPES = {t.value: t for t in CthType}


def serial_newer(a: int, b: int, bits: int = 16) -> bool:
    """True when ``a`` is newer than ``b`` in serial-number arithmetic (RFC 1982)."""
    half = 1 << (bits - 1)
    diff = (a - b) % (1 << bits)
    return 0 < diff < half


# --- scapy layer -----------------------------------------------------------------

try:  # scapy is a dependency, but keep the codec importable in minimal environments
    from scapy.fields import BitEnumField, BitField, ByteField, FlagsField, IntField, ShortField
    from scapy.layers.inet import UDP
    from scapy.packet import Packet, bind_layers
except ImportError:  # pragma: no cover - exercised only without scapy
    CTH = None  # type: ignore[assignment]
else:

    class CTH(Packet):  # type: ignore[no-redef]
        """Scapy layer of the collective transport header, bound to UDP :data:`CTH_UDP_PORT`."""

        name = "CTH"
        fields_desc = [
            BitField("version", CTH_VERSION, 4),
            BitEnumField("type", CthType.DATA, 4, {t.value: t.name for t in CthType}),
            FlagsField("flags", 0, 8, ["LAST", "ECE", "RETX", "rsv3", "rsv4", "rsv5", "rsv6", "rsv7"]),
            ShortField("job_id", 0),
            ShortField("step", 0),
            ByteField("src_rank", 0),
            ByteField("dst_rank", 0),
            IntField("psn", 0),
            IntField("offset", 0),
        ]

    bind_layers(UDP, CTH, dport=CTH_UDP_PORT)
