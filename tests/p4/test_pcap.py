"""Per-port captures of the embedded switch (emu/embedded/pcap.py) and the CTH Wireshark dissector."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from emu.embedded.pcap import PortCaptures, capture_path
from hostapps.wire import CTH, CTH_UDP_PORT

REPO = Path(__file__).resolve().parents[2]
DISSECTOR = REPO / "tools" / "wireshark" / "cth.lua"


def cth_frame(**fields: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2")
                 / UDP(sport=40000, dport=CTH_UDP_PORT) / CTH(**fields) / (b"\xab" * 32))


def test_one_file_per_port_with_wall_clock_times(tmp_path: Path) -> None:
    caps = PortCaptures(tmp_path / "pcap", "s1", [2, 1])
    assert caps.paths == [str(capture_path(tmp_path / "pcap", "s1", p)) for p in (1, 2)]
    now_us = time.monotonic_ns() // 1000
    a, b = cth_frame(type=1, psn=1), cth_frame(type=2, psn=2)
    caps.record(1, a, now_us)
    caps.record(2, b, now_us + 1500)
    caps.record(9, a, now_us)  # not a port of the switch: ignored
    caps.close()
    caps.close()
    p1, p2 = rdpcap(str(tmp_path / "pcap" / "s1-eth1.pcap")), rdpcap(str(tmp_path / "pcap" / "s1-eth2.pcap"))
    assert [bytes(p) for p in p1] == [a] and [bytes(p) for p in p2] == [b]
    assert abs(float(p1[0].time) - time.time()) < 60
    assert float(p2[0].time) - float(p1[0].time) == pytest.approx(0.0015, abs=2e-6)


def test_an_empty_capture_is_a_valid_pcap(tmp_path: Path) -> None:
    PortCaptures(tmp_path, "s2", [1]).close()
    assert len(rdpcap(str(tmp_path / "s2-eth1.pcap"))) == 0


def test_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match="--pcap"):
        PortCaptures(tmp_path / "file" / "sub", "s1", [1])


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (Debian package tshark)")
def test_tshark_dissects_the_cth_fields_by_name(tmp_path: Path) -> None:
    caps = PortCaptures(tmp_path, "s1", [1])
    now_us = time.monotonic_ns() // 1000
    caps.record(1, cth_frame(type=1, flags=0x05, job_id=3, channel=2, step=65535, src_rank=1000, dst_rank=2,
                             psn=0xFFFFFE, offset=4096), now_us)
    caps.record(1, cth_frame(type=2, flags=0x02, job_id=3, step=7, src_rank=2, dst_rank=1, psn=100), now_us + 1)
    caps.close()
    fields = ["cth.version", "cth.type", "cth.flags", "cth.flags.last", "cth.flags.ece", "cth.flags.retx",
              "cth.job", "cth.channel", "cth.step", "cth.src_rank", "cth.dst_rank", "cth.psn", "cth.offset"]
    cmd = ["tshark", "-X", f"lua_script:{DISSECTOR}", "-r", str(tmp_path / "s1-eth1.pcap"), "-Y", "cth",
           "-T", "fields", "-E", "separator=,"]
    for f in fields:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    rows = [dict(zip(fields, line.split(","), strict=True)) for line in res.stdout.strip().splitlines()]
    assert rows[0] == {"cth.version": "2", "cth.type": "1", "cth.flags": "0x05", "cth.flags.last": "1",
                       "cth.flags.ece": "0", "cth.flags.retx": "1", "cth.job": "3", "cth.channel": "2",
                       "cth.step": "65535", "cth.src_rank": "1000", "cth.dst_rank": "2", "cth.psn": "16777214",
                       "cth.offset": "4096"}
    assert rows[1]["cth.type"] == "2" and rows[1]["cth.flags.ece"] == "1" and rows[1]["cth.psn"] == "100"
    assert len(rows) == 2
