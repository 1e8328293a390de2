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
