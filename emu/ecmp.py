"""The ECMP hash of ``p4/include/ecmp.p4`` in Python: which bucket a packet takes.

Both P4 builds hash ``{srcAddr, dstAddr, protocol, l4_src, l4_dst, seed}`` (32 + 32 + 8 +
16 + 16 + 16 = 120 bits, 15 bytes in network order) with CRC-16/ARC (v1model
``HashAlgorithm.crc16`` as bmv2 defines it, T2NA ``HashAlgorithm_t.CRC16``) and keep the low
``ECMP_BUCKET_BITS`` bits; the controller fills the 64 buckets of a k-member group with a
balanced, seeded assignment of members (:func:`bucket_members`). A CRC is linear, so a seed in
the hashed data only XORs every bucket with one constant and never changes which flows share
a bucket; the seeded bucket table is what changes which flows collide on a member, as a
switch vendor's hash-seed knob does. The controller uses this model to know where every ring flow
goes (expected_flows, the report's flow table); tests/p4/stf/ecmp.stf checks that the
switches agree with it.
"""

from __future__ import annotations

import ipaddress
import random

from .embedded.externs import crc16

#: Buckets per ECMP group (``ECMP_BUCKETS`` in p4/include/constants.p4).
ECMP_BUCKETS = 64
#: ECMP groups per switch (``ECMP_GROUPS``).
ECMP_GROUPS = 64
#: IP protocol number of UDP.
PROTO_UDP = 17


def bucket(src_ip: str, dst_ip: str, sport: int, dport: int, seed: int, proto: int = PROTO_UDP) -> int:
    """ECMP bucket (0..ECMP_BUCKETS-1) of a packet at a switch whose hash seed is ``seed``."""
    data = (int(ipaddress.IPv4Address(src_ip)).to_bytes(4, "big") + int(ipaddress.IPv4Address(dst_ip)).to_bytes(4, "big")
            + bytes([proto]) + sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + (seed & 0xFFFF).to_bytes(2, "big"))
    return crc16(data) & (ECMP_BUCKETS - 1)


def bucket_members(members: int, seed: int) -> list[int]:
    """Member (0..members-1) of each of the ECMP_BUCKETS buckets of a group.

    Balanced (every member holds ``64 // k`` or one more bucket) and shuffled by ``seed``
    (``random.Random(seed)``), so another seed makes other flows collide. ValueError for
    ``members`` outside 1..ECMP_BUCKETS.
    """
    if not 1 <= members <= ECMP_BUCKETS:
        raise ValueError(f"an ECMP group has 1..{ECMP_BUCKETS} members, got {members}")
    table = [b % members for b in range(ECMP_BUCKETS)]
    random.Random(seed).shuffle(table)
    return table


def switch_seed(seed: int, switch_index: int) -> int:
    """The 16-bit hash seed of the ``switch_index``-th switch for the topology's ``ecmp_seed``.

    Each switch hashes with its own seed (so two tiers do not pick correlated next hops):
    ``(seed * 40503 + 0x9E37 * (switch_index + 1)) mod 2^16`` (40503 and 0x9E37 are the
    16-bit Fibonacci-hashing constant; any odd multiplier would do).
    """
    return (seed * 40503 + 0x9E37 * (switch_index + 1)) & 0xFFFF
