"""Collective transport header (CTH) codec, docs/DESIGN.md section 3.

The CTH is 16 bytes in network byte order, carried in UDP to :data:`CTH_UDP_PORT`
(version 2; version 1 had a 16-bit job, 8-bit ranks and 32-bit PSN and offset)::

    byte 0      version:4 | type:4     DATA=1, ACK=2, NACK=3, CNP=4
    byte 1      flags                  bit0 LAST, bit1 ECE, bit2 RETX
    byte 2      job_id                 < MAX_JOBS
    byte 3      channel                < MAX_CHANNELS (NCCL-style channel: one ring of the job)
    bytes 4-5   step                   collective-global step, serial arithmetic mod 2**16
    bytes 6-7   src_rank               sender's rank in the job (< MAX_RANKS tracked)
    bytes 8-9   dst_rank               receiver's rank
    bytes 10-12 psn                    24 bits, as RoCEv2's BTH PSN: serial arithmetic mod 2**24
                                       (DATA: packet sequence number; ACK: next expected PSN)
    bytes 13-15 offset                 24 bits, DATA: byte offset of the payload in the step's
                                       chunk, so a chunk is below 16 MiB (:data:`MAX_CHUNK_BYTES`)

Every constant here is also declared in ``p4/include/constants.p4``;
``tests/unit/test_wire_p4_constants.py`` checks that both agree.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

#: UDP destination port of the CTH (``CTH_UDP_PORT`` in p4/include/constants.p4).
CTH_UDP_PORT = 4793
#: Protocol version carried in the high nibble of byte 0 (2: the layout above).
CTH_VERSION = 2
#: Header length in bytes.
CTH_LEN = 16
#: Jobs a switch tracks (register sizes in the P4 program).
MAX_JOBS = 16
#: Ranks per job a switch tracks (the wire carries 16-bit ranks).
MAX_RANKS = 1024
#: Channels (rings) per job a switch tracks.
MAX_CHANNELS = 4
#: Step window W of the ``step_count`` register: W exceeds the largest step lead a tracked job
#: can have (:func:`hostapps.collectives.lead_bound`: N-1 <= 1023 for one ring; the loader
#: rejects a job of several channels whose bound reaches W), so slots never alias
#: (docs/DESIGN.md section 4).
STEP_WINDOW = 2048
#: Tracker instances of ``step_count`` and ``frontier``: a job-wide tracker's id is its job id,
#: per-(job, egress port) trackers take the ids of no job at the switch (docs/DESIGN.md section 4).
MAX_TRACKERS = 32
#: log2 of the register sizes: a register index is shifts and ORs (p4/include/constants.p4).
MAX_JOBS_LOG2, MAX_CHANNELS_LOG2, MAX_RANKS_LOG2, STEP_WINDOW_LOG2, MAX_TRACKERS_LOG2 = 4, 2, 10, 11, 5
#: ``flow_step`` slots: MAX_JOBS * MAX_CHANNELS * MAX_RANKS; ``step_count`` slots: MAX_TRACKERS * STEP_WINDOW.
FLOW_SLOTS = MAX_JOBS * MAX_CHANNELS * MAX_RANKS
STEP_SLOTS = MAX_TRACKERS * STEP_WINDOW
#: Bits of the PSN field; PSNs are compared in serial arithmetic modulo ``2**PSN_BITS``.
PSN_BITS = 24
#: Bits of the offset field.
OFFSET_BITS = 24
#: Largest chunk a step may carry (bytes): its last byte's offset must fit the 24-bit field.
MAX_CHUNK_BYTES = (1 << OFFSET_BITS) - 1

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
    ("job_id", 8),
    ("channel", 8),
    ("step", 16),
    ("src_rank", 16),
    ("dst_rank", 16),
    ("psn", PSN_BITS),
    ("offset", OFFSET_BITS),
)

# bytes 10-15 (psn:24 | offset:24) as a 16-bit and a 32-bit word: psn >> 8, (psn & 0xFF) << 24 | offset
_STRUCT = struct.Struct("!BBBBHHHHI")
assert _STRUCT.size == CTH_LEN
_PSN_MASK = (1 << PSN_BITS) - 1
_OFFSET_MASK = (1 << OFFSET_BITS) - 1


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
    ``psn`` modulo 2**24; ``offset`` must be below 2**24.
    """

    type: CthType
    job_id: int
    step: int
    src_rank: int
    dst_rank: int
    psn: int = 0
    offset: int = 0
    flags: int = 0
    channel: int = 0
    version: int = CTH_VERSION

    def pack(self) -> bytes:
        """Encode to 16 bytes, network byte order. Raises :class:`WireError` on overflow."""
        try:
            return _pack(self.type, self.job_id, self.step, self.src_rank, self.dst_rank, self.psn, self.offset,
                         self.flags, self.channel, self.version)
        except struct.error as exc:
            raise WireError(f"CTH field out of range in {self!r}: {exc}") from None


def _pack(ctype: int, job_id: int, step: int, src_rank: int, dst_rank: int, psn: int, offset: int, flags: int,
          channel: int, version: int) -> bytes:
    """The 16 header bytes (``step`` modulo 2**16, ``psn`` modulo 2**24); struct.error on overflow."""
    if offset > _OFFSET_MASK:
        raise struct.error(f"offset {offset} does not fit {OFFSET_BITS} bits")
    psn &= _PSN_MASK
    if _TYPED and type(ctype) is int and type(version) is int and type(flags) is int and type(job_id) is int \
            and type(channel) is int and type(step) is int and type(src_rank) is int and type(dst_rank) is int \
            and type(offset) is int and 0 <= flags <= 0xFF and 0 <= job_id <= 0xFF and 0 <= channel <= 0xFF \
            and 0 <= src_rank <= 0xFFFF and 0 <= dst_rank <= 0xFFFF and 0 <= offset and 0 <= ctype <= 0xFF \
            and 0 <= version <= 0xFF and -0x7FFFFFFF <= step <= 0x7FFFFFFF:
        # compiled (wire.pxd): the same 16 bytes written in C; a value the struct refuses takes its path
        return _pack_c(version, ctype, flags, job_id, channel, step, src_rank, dst_rank, psn, offset)  # noqa: F821
    return _STRUCT.pack(((version & 0xF) << 4) | (int(ctype) & 0xF), flags, job_id, channel, step & 0xFFFF,
                        src_rank, dst_rank, psn >> 8, ((psn & 0xFF) << 24) | offset)


def pack_header(ctype: int, job_id: int, step: int, src_rank: int, dst_rank: int, psn: int = 0, offset: int = 0,
                flags: int = 0, channel: int = 0) -> bytes:
    """``Cth(ctype, job_id, step, src_rank, dst_rank, psn, offset, flags, channel).pack()`` without the
    object (the transport's per-packet path). Raises :class:`WireError` on overflow."""
    try:
        return _pack(ctype, job_id, step, src_rank, dst_rank, psn, offset, flags, channel, CTH_VERSION)
    except struct.error as exc:
        raise WireError(f"CTH field out of range (type {int(ctype)}, job {job_id}, channel {channel}, step "
                        f"{step}, ranks {src_rank}->{dst_rank}, psn {psn}, offset {offset}, flags {flags}): "
                        f"{exc}") from None


def encode(header: Cth, payload: bytes | memoryview = b"") -> bytes:
    """Return ``header`` packed and followed by ``payload``."""
    return header.pack() + bytes(payload)


def decode(datagram: bytes | memoryview) -> tuple[Cth, memoryview]:
    """Split a UDP payload into its CTH and the payload after it.

    Raises :class:`WireError` naming the problem for a short datagram, a wrong version
    or an unknown type.
    """
    ptype, flags, job_id, channel, step, src, dst, psn, offset, payload = unpack_header(datagram)
    return Cth(_TYPES[ptype], job_id, step, src, dst, psn, offset, flags, channel, CTH_VERSION), payload


def unpack_header(datagram: bytes | memoryview) -> tuple[int, int, int, int, int, int, int, int, int, memoryview]:
    """:func:`decode` without the object (the transport's per-packet path): ``(type, flags,
    job_id, channel, step, src_rank, dst_rank, psn, offset, payload)``, the type a
    :class:`CthType` value. Raises :class:`WireError` as :func:`decode`.
    """
    if _TYPED and type(datagram) is memoryview:
        # compiled (wire.pxd): the fields read in C from a byte view (the hosts' datagrams), the type
        # checked here; anything else, or a header this refuses, takes the path below (its error)
        r = _unpack_c(datagram, CTH_VERSION)  # noqa: F821
        if r is not None and r[0] in _TYPES:
            return r
    view = memoryview(datagram)
    if len(view) < CTH_LEN:
        raise WireError(f"datagram of {len(view)} bytes is shorter than the {CTH_LEN}-byte CTH")
    vt, flags, job_id, channel, step, src, dst, psn_hi, low = _STRUCT.unpack_from(view, 0)
    version, ptype = vt >> 4, vt & 0xF
    if version != CTH_VERSION:
        raise WireError(f"CTH version {version}, expected {CTH_VERSION}")
    if ptype not in _TYPES:
        raise WireError(f"unknown CTH type {ptype}")
    return ptype, flags, job_id, channel, step, src, dst, (psn_hi << 8) | (low >> 24), low & _OFFSET_MASK, \
        view[CTH_LEN:]


_TYPES = {t.value: t for t in CthType}
#: compiled (wire.pxd): _pack writes a header and unpack_header reads a byte view's fields in C
#: (_pack_c, _unpack_c)
_TYPED = not __file__.endswith(".py")


def flow_index(job_id: int, channel: int, rank: int) -> int:
    """The ``flow_step`` index of flow (job, channel, rank), as both P4 builds compute it:
    ``job << (MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2) | channel << MAX_RANKS_LOG2 | rank``."""
    return (job_id << (MAX_CHANNELS_LOG2 + MAX_RANKS_LOG2)) | (channel << MAX_RANKS_LOG2) | rank


def slot_index(tracker: int, step: int) -> int:
    """The ``step_count`` index of ``step`` of tracker ``tracker`` (a job-wide tracker's id is its
    job id): ``tracker << STEP_WINDOW_LOG2 | step mod W``."""
    return (tracker << STEP_WINDOW_LOG2) | (step & (STEP_WINDOW - 1))


def serial_newer(a: int, b: int, bits: int = 16) -> bool:
    """True when ``a`` is newer than ``b`` in serial-number arithmetic (RFC 1982)."""
    half = 1 << (bits - 1)
    diff = (a - b) % (1 << bits)
    return 0 < diff < half


# --- scapy layer -----------------------------------------------------------------

try:  # scapy is a dependency, but keep the codec importable in minimal environments
    from scapy.fields import BitEnumField, BitField, ByteField, FlagsField, ShortField
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
            ByteField("job_id", 0),
            ByteField("channel", 0),
            ShortField("step", 0),
            ShortField("src_rank", 0),
            ShortField("dst_rank", 0),
            BitField("psn", 0, PSN_BITS),
            BitField("offset", 0, OFFSET_BITS),
        ]

    bind_layers(UDP, CTH, dport=CTH_UDP_PORT)
