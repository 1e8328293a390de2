"""A finsy (asyncio P4Runtime client) script, as a student writes one: run by the finsy venv
against two embedded P4Runtime servers that tests/p4/test_finsy.py starts.

argv: SELECTOR_ADDR SELECTOR_P4INFO PACKET_IO_ADDR PACKET_IO_P4INFO. Prints one JSON line of
what it saw; any exception ends it with a traceback (the test shows it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import finsy as fy
from finsy.proto import p4r


async def selector(addr: str, p4info: Path) -> dict:
    out: dict = {}
    async with fy.Switch("sel", addr, fy.SwitchOptions(p4info=p4info, device_id=1)) as sw:
        await sw.write([
            +fy.P4ActionProfileMember("paths", member_id=1, action=fy.P4TableAction("set_port", p=1)),
            +fy.P4ActionProfileMember("paths", member_id=2, action=fy.P4TableAction("set_port", p=2)),
            +fy.P4ActionProfileGroup("paths", group_id=7, members=[fy.P4Member(1, weight=1), fy.P4Member(2, weight=1)]),
            +fy.P4TableEntry("ecmp", match=fy.P4TableMatch(dst="10.0.0.0/8"), action=fy.P4IndirectAction(group_id=7)),
        ])
        out["members"] = sorted([m.member_id async for m in sw.read(fy.P4ActionProfileMember())])
        out["groups"] = [g.group_id async for g in sw.read(fy.P4ActionProfileGroup())]
        out["entries"] = len([e async for e in sw.read(fy.P4TableEntry())])
        # one batch with a bad entity: the good ones come back, one p4.Error per entity (13.3)
        good = fy.P4TableEntry().encode(sw.p4info)
        bad = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=0x12FFFFFF))
        seen = []
        try:
            async for entity in sw.read([good, bad]):  # type: ignore[list-item]
                seen.append(type(entity).__name__)
            out["batch"] = ["no error", seen]
        except fy.P4ClientError as e:
            out["batch"] = [e.code.name, seen]
        await sw.delete_all()
        out["after_delete_all"] = [len([x async for x in sw.read(kind)]) for kind in
                                   (fy.P4TableEntry(), fy.P4ActionProfileGroup(), fy.P4ActionProfileMember())]
    return out


async def packet_io(addr: str, p4info: Path) -> dict:
    async with fy.Switch("pio", addr, fy.SwitchOptions(p4info=p4info, device_id=1)) as sw:
        frame = bytes.fromhex("000000000002000000000001" "0800") + b"finsy"
        packets = sw.read_packets()
        await sw.write([fy.P4PacketOut(frame, egress_port=1, _pad=0)])
        pkt = await asyncio.wait_for(anext(packets), 10)  # the wire on port 1 loops it back
        return {"payload": pkt.payload.hex(), "ingress_port": pkt["ingress_port"], "sent": frame.hex()}


async def main() -> None:
    sel_addr, sel_info, pio_addr, pio_info = sys.argv[1:5]
    out = await selector(sel_addr, Path(sel_info))
    out.update(await packet_io(pio_addr, Path(pio_info)))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
