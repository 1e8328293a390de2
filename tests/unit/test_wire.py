"""CTH codec and scapy layer: round trips of every type and field (docs/DESIGN.md section 3)."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP

from hostapps.wire import (
    CTH,
    CTH_LEN,
    CTH_UDP_PORT,
    CTH_VERSION,
    Cth,
    CthFlags,
    CthType,
    WireError,
    decode,
    encode,
    serial_newer,
)

FIELDS = dict(job_id=15, channel=3, step=0xBEEF, src_rank=1023, dst_rank=0x0207, psn=0xADBEEF, offset=0xFFFFFE)


@pytest.mark.parametrize("ctype", list(CthType))
@pytest.mark.parametrize("flags", [0, CthFlags.LAST, CthFlags.ECE, CthFlags.RETX,
                                   CthFlags.LAST | CthFlags.ECE | CthFlags.RETX])
def test_round_trip_every_type_and_flag(ctype: CthType, flags: int) -> None:
    hdr = Cth(ctype, flags=flags, **FIELDS)
    payload = bytes(range(37))
    datagram = encode(hdr, payload)
    assert len(datagram) == CTH_LEN + len(payload)
    got, rest = decode(datagram)
    assert got == hdr
    assert got.type is ctype and got.version == CTH_VERSION
    assert (got.job_id, got.channel, got.step, got.src_rank, got.dst_rank, got.psn, got.offset, got.flags) == (
        15, 3, 0xBEEF, 1023, 0x0207, 0xADBEEF, 0xFFFFFE, int(flags))
    assert bytes(rest) == payload


def test_byte_layout_is_network_order() -> None:
    # version 2: job 8 bit | channel 8 bit | step 16 | src 16 | dst 16 | psn 24 | offset 24
    raw = Cth(CthType.NACK, job_id=0x01, channel=0x02, step=0x0304, src_rank=0x0506, dst_rank=0x0708,
              psn=0x090A0B, offset=0x0C0D0E, flags=CthFlags.ECE).pack()
    assert raw == bytes([0x23, 0x02, 0x01, 0x02, 0x03, 0x04, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])


def test_step_and_psn_wrap_on_pack() -> None:
    got, _ = decode(Cth(CthType.DATA, 0, step=0x1_0005, src_rank=0, dst_rank=1, psn=(1 << 24) + 9).pack())
    assert got.step == 5 and got.psn == 9


@pytest.mark.parametrize(
    "datagram, message",
    [
        (b"", "shorter"),
        (bytes(15), "shorter"),
        (bytes([0x11]) + bytes(15), "version 1"),
        (bytes([0x25]) + bytes(15), "unknown CTH type 5"),
        (bytes([0x20]) + bytes(15), "unknown CTH type 0"),
    ],
)
def test_decode_rejects_garbage(datagram: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        decode(datagram)


@pytest.mark.parametrize("ctype", list(CthType))
def test_unpack_header_of_a_frame_s_view_is_the_codec_s(ctype: CthType) -> None:
    """unpack_header of a memoryview into a frame (the hosts' datagrams; compiled, read in C: wire.pxd)
    gives decode's fields and a view of the payload in the same frame; a short one, a wrong version or
    type raises decode's WireError; a released view, or one of 4-byte items, what memoryview gives."""
    from hostapps.wire import unpack_header

    payload = bytes(range(37))
    frame = bytes(42) + encode(Cth(ctype, flags=CthFlags.LAST | CthFlags.RETX, **FIELDS), payload)
    view = memoryview(frame)[42:]
    got = unpack_header(view)
    hdr, body = decode(bytes(view))
    assert got[:9] == (ctype, hdr.flags, hdr.job_id, hdr.channel, hdr.step, hdr.src_rank, hdr.dst_rank,
                       hdr.psn, hdr.offset)
    assert bytes(got[9]) == payload == bytes(body) and got[9].obj is frame and got[9].format == "B"
    for bad, message in ((view[:15], "shorter"), (memoryview(bytes([0x11]) + bytes(15)), "version 1"),
                         (memoryview(bytes([0x25]) + bytes(15)), "unknown CTH type 5")):
        with pytest.raises(WireError, match=message):
            unpack_header(bad)
    gone = memoryview(frame)[42:]
    gone.release()
    with pytest.raises(ValueError, match="released"):
        unpack_header(gone)
    with pytest.raises(WireError, match="datagram of 8 bytes"):  # 8 items of 4 bytes (len counts items)
        unpack_header(memoryview(frame[42:42 + 32]).cast("I"))


def test_pack_header_of_plain_ints_is_the_struct_s() -> None:
    """pack_header of plain ints (the transport's; compiled, written in C: wire.pxd) gives the struct's
    bytes, the step and psn wrapped; a value out of its field raises the struct's WireError."""
    import struct

    from hostapps.wire import pack_header

    layout = struct.Struct("!BBBBHHHHI")
    for ctype, job, step, src, dst, psn, offset, flags, channel in (
            (1, 0, 0, 0, 0, 0, 0, 0, 0), (4, 255, 0xFFFF, 0xFFFF, 0xFFFF, (1 << 24) - 1, (1 << 24) - 1, 255, 255),
            (2, 15, -3, 1023, 7, (5 << 24) + 9, 77, 6, 3), (3, 1, 0x1_0005, 2, 1, 1 << 40, 4096, 1, 0)):
        p = psn & 0xFFFFFF
        want = layout.pack((CTH_VERSION << 4) | ctype, flags, job, channel, step & 0xFFFF, src, dst, p >> 8,
                           ((p & 0xFF) << 24) | offset)
        assert pack_header(ctype, job, step, src, dst, psn, offset, flags, channel) == want
    for bad in (dict(job_id=256), dict(src_rank=-1), dict(dst_rank=1 << 16), dict(channel=1 << 70), dict(flags=-1),
                dict(offset=-1)):
        with pytest.raises(WireError, match="out of range"):
            pack_header(**{"ctype": 1, "job_id": 0, "step": 0, "src_rank": 0, "dst_rank": 0, **bad})


def test_pack_overflow_raises_wire_error() -> None:
    with pytest.raises(WireError, match="out of range"):
        Cth(CthType.DATA, job_id=0x100, step=0, src_rank=0, dst_rank=0).pack()
    with pytest.raises(WireError):
        Cth(CthType.DATA, job_id=0, step=0, src_rank=0x1_0000, dst_rank=0).pack()
    with pytest.raises(WireError):
        Cth(CthType.DATA, job_id=0, step=0, src_rank=0, dst_rank=0, channel=256).pack()
    with pytest.raises(WireError, match="offset"):  # 24 bits: a chunk is below 16 MiB
        Cth(CthType.DATA, job_id=0, step=0, src_rank=0, dst_rank=0, offset=1 << 24).pack()


def test_serial_newer() -> None:
    assert serial_newer(1, 0) and not serial_newer(0, 1) and not serial_newer(5, 5)
    assert serial_newer(0, 0xFFFF)  # wrap
    assert not serial_newer(0x8000, 0)  # exactly half: undefined, treated as not newer


@pytest.mark.parametrize("ctype", list(CthType))
def test_scapy_layer_build_matches_codec(ctype: CthType) -> None:
    hdr = Cth(ctype, flags=CthFlags.LAST | CthFlags.RETX, **FIELDS)
    layer = CTH(type=int(ctype), flags=int(hdr.flags), **FIELDS)
    assert bytes(layer) == hdr.pack()
    assert len(bytes(layer)) == CTH_LEN


@pytest.mark.parametrize("ctype", list(CthType))
def test_scapy_dissects_udp_4793(ctype: CthType) -> None:
    raw = bytes(IP(src="10.0.0.1", dst="10.0.0.2", tos=0b10) / UDP(sport=40000, dport=CTH_UDP_PORT)
                / encode(Cth(ctype, flags=CthFlags.ECE, **FIELDS), b"xyz"))
    pkt = IP(raw)
    assert pkt.haslayer(CTH)
    cth = pkt[CTH]
    assert cth.version == CTH_VERSION
    assert cth.type == int(ctype)
    assert int(cth.flags) == int(CthFlags.ECE)
    assert cth.flags.ECE and not cth.flags.LAST and not cth.flags.RETX
    for name, value in FIELDS.items():
        assert getattr(cth, name) == value, name
    assert bytes(cth.payload) == b"xyz"
    assert pkt[IP].tos & 0b11 == 0b10
