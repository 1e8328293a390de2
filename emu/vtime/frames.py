"""Ethernet / IPv4 / UDP framing of the virtual-time hosts (docs/DESIGN.md section 3).

In Mininet the kernel wraps a worker's UDP datagram into a frame; in virtual time
:class:`FrameBuilder` does, so the switches' P4 parser sees the same bytes: Ethernet II
(destination = the destination host's MAC, as the hosts' static ARP gives it), IPv4 without
options (DF set, TTL 64, the ECN codepoint in the low two bits of the TOS byte, a correct
header checksum, RFC 791 / RFC 1071), UDP with checksum 0 (allowed over IPv4, RFC 768).

On the wire a frame also costs :data:`WIRE_OVERHEAD_BYTES` that it does not carry in
its bytes: preamble and start delimiter (8), frame check sequence (4) and the minimum
inter-frame gap (12) of IEEE 802.3.
"""

from __future__ import annotations

import functools
import ipaddress
import struct

#: Ethernet II header (bytes).
ETH_LEN = 14
#: IPv4 header without options (bytes).
IPV4_LEN = 20
#: UDP header (bytes).
UDP_LEN = 8
#: Offset of the UDP payload in a frame (bytes).
PAYLOAD_OFFSET = ETH_LEN + IPV4_LEN + UDP_LEN
#: Per-frame wire cost beyond the frame's bytes: preamble + SFD 8, FCS 4, IFG 12 (IEEE 802.3).
WIRE_OVERHEAD_BYTES = 24
#: Largest frame for an IP MTU: MTU + Ethernet header + a VLAN tag (bytes).
FRAME_EXTRA_BYTES = ETH_LEN + 4

_IPUDP = struct.Struct("!BBHHHBBH4s4sHHHH")
_ETHERTYPE_IPV4 = b"\x08\x00"
#: IPv4 and UDP headers (bytes): a C integer when compiled (frames.pxd)
_IPUDP_LEN = IPV4_LEN + UDP_LEN
#: compiled (frames.pxd): FrameBuilder.build_to writes a frame's bytes in C (_frame_c)
_TYPED = not __file__.endswith(".py")


def mac_bytes(mac: str) -> bytes:
    """``"00:00:00:00:00:01"`` -> 6 bytes."""
    return bytes(int(x, 16) for x in mac.split(":"))


@functools.lru_cache(maxsize=4096)
def ip_bytes(ip: str) -> bytes:
    """``"10.0.0.1"`` -> 4 bytes (ValueError for anything else). Cached: every rank maps every peer's
    address (128 x 128 at 128 ranks, ~16 K Ir each through ipaddress)."""
    return ipaddress.IPv4Address(ip).packed


class FrameBuilder:
    """Frames from one host: ``build(dst_ip, sport, dport, datagram, ecn) -> bytes``.

    ``macs`` maps every destination IP (dotted quad) to its MAC. Raises KeyError for an
    unknown destination.
    """

    def __init__(self, src_mac: str, src_ip: str, macs: dict[str, str]) -> None:
        self.src_ip = ip_bytes(src_ip)
        src_words = int.from_bytes(self.src_ip[:2], "big") + int.from_bytes(self.src_ip[2:], "big")
        # constant words of the IPv4 header: id 0, flags DF (0x4000), TTL 64 | protocol 17
        base = 0x4000 + ((64 << 8) | 17) + src_words
        self._dst: dict[str, tuple[bytes, bytes, int]] = {}
        smac = mac_bytes(src_mac)
        for ip, mac in macs.items():
            dip = ip_bytes(ip)
            words = base + int.from_bytes(dip[:2], "big") + int.from_bytes(dip[2:], "big")
            self._dst[ip] = (mac_bytes(mac) + smac + _ETHERTYPE_IPV4, dip, words)

    def dest(self, dst_ip: str) -> tuple[bytes, bytes, int]:
        """What :meth:`build_to` needs of destination ``dst_ip``: (Ethernet header, IPv4 address, the IPv4
        checksum's constant word sum). Raises KeyError for an unknown destination."""
        return self._dst[dst_ip]

    def build(self, dst_ip: str, sport: int, dport: int, datagram: bytes, ecn: int) -> bytes:
        """The frame carrying UDP ``datagram`` to ``dst_ip`` with ECN codepoint ``ecn`` (0..3)."""
        return self.build_to(self._dst[dst_ip], sport, dport, datagram, ecn)

    def build_to(self, dest: tuple[bytes, bytes, int], sport: int, dport: int, datagram: bytes, ecn: int) -> bytes:
        """:meth:`build` to the destination :meth:`dest` gave (a sender that keeps it per peer: no lookup per frame)."""
        eth, dip, words = dest
        n = len(datagram)
        total = _IPUDP_LEN + n
        tos = ecn & 3
        s = words + (0x4500 | tos) + total
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        if _TYPED and type(datagram) is bytes and type(sport) is int and type(dport) is int and 0 <= sport <= 0xFFFF \
                and 0 <= dport <= 0xFFFF and total <= 0xFFFF and len(self.src_ip) == 4 and len(dip) == 4:
            # compiled: the same bytes written in C (frames.pxd), one allocation, no struct call; any
            # value _IPUDP would refuse takes the struct path below (its error)
            return _frame_c(eth, self.src_ip, dip, tos, total, ~s & 0xFFFF, sport, dport, datagram)  # noqa: F821
        hdr = _IPUDP.pack(0x45, tos, total, 0, 0x4000, 64, 17, ~s & 0xFFFF, self.src_ip, dip, sport, dport,
                          UDP_LEN + n, 0)
        return b"".join((eth, hdr, datagram))  # one copy of the datagram (eth + hdr + datagram made two)


def parse(frame: bytes) -> tuple[int, bytes, int, memoryview] | None:
    """``(ecn, src_ip 4 bytes, udp dport, udp payload)`` of an IPv4/UDP frame, else None."""
    if len(frame) < PAYLOAD_OFFSET or frame[12:14] != _ETHERTYPE_IPV4 or frame[23] != 17 or frame[14] != 0x45:
        return None
    dport = (frame[36] << 8) | frame[37]
    return frame[15] & 3, frame[26:30], dport, memoryview(frame)[PAYLOAD_OFFSET:]
