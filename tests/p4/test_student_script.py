"""The P4 tutorials' student script, unchanged, on both targets.

The p4lang tutorials' P4Runtime exercises drive a switch with p4runtime-shell: connect to
device 0 as primary and push p4c's P4Info and bmv2 JSON in ``setup``, insert a table entry,
read it back, read a counter. :func:`student_script` is that script; it runs against the
embedded switch (its P4Runtime server in this process) and against ``simple_switch_grpc``
where bmv2 and p4c are installed. The P4Info and JSON are p4c's where p4c is installed;
without p4c (CI) the P4Info file is the embedded front end's, in the text format p4c
writes (that it equals p4c's is test_p4runtime.py::test_p4info_matches_p4c's job), and
the JSON a stand-in (the embedded switch does not read it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed: pip install -e '.[test]'")

from emu.embedded.control import ControlAPI  # noqa: E402
from emu.embedded.core import SwitchCore  # noqa: E402
from emu.embedded.frontend import load_program  # noqa: E402
from emu.embedded.p4runtime_server import P4RuntimeServer, P4RuntimeService  # noqa: E402
from emu.embedded.runtime import Pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4" / "symphony.p4"


def student_script(grpc_addr: str, p4info_path: str, bmv2_json_path: str) -> dict[str, Any]:
    """The tutorials' P4Runtime exercise, as a student writes it; returns what it read."""
    import p4runtime_sh.shell as sh

    sh.setup(device_id=0, grpc_addr=grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info_path, bmv2_json_path), verbose=False)
    try:
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
        te.match["hdr.ipv4.dstAddr"] = "10.0.1.1/32"
        te.action["srcAddr"] = "08:00:00:00:01:00"
        te.action["dstAddr"] = "08:00:00:00:01:11"
        te.action["port"] = "1"
        te.insert()
        entries = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
        drops = sh.CounterEntry("MyIngress.drops")
        drops.index = 2
        (cell,) = list(drops.read())
        return {"entries": [(e.match["hdr.ipv4.dstAddr"].lpm.value, e.match["hdr.ipv4.dstAddr"].lpm.prefix_len,
                             e.action["port"].value) for e in entries],
                "drops_port2": cell.packet_count}
    finally:
        sh.teardown()


def ipv4_frame(dst: str) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") / IP(src="10.0.0.2", dst=dst)
                 / UDP(sport=5001, dport=5001) / (b"x" * 16))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _p4c_outputs(tmp: Path) -> tuple[Path, Path]:
    """p4c's P4Info and bmv2 JSON for symphony.p4 where p4c is installed, else the embedded
    front end's P4Info as a text file and a stand-in JSON (see the module docstring)."""
    if shutil.which("p4c") is not None:
        from emu.mininet.bmv2 import compile_program

        json_path, p4info = compile_program(PROGRAM, tmp)
        return p4info, json_path
    from google.protobuf import text_format

    from emu.embedded.p4info import build_p4info

    p4info = tmp / "symphony.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(build_p4info(Pipeline(load_program(PROGRAM)))))
    stand_in = tmp / "symphony.json"
    stand_in.write_text("{}\n")
    return p4info, stand_in


@pytest.fixture
def embedded_device0() -> Iterator[tuple[str, SwitchCore]]:
    core = SwitchCore(Pipeline(load_program(PROGRAM), seed=1), [1, 2, 3])
    with P4RuntimeServer(P4RuntimeService(ControlAPI(core), device_id=0)) as server:
        assert server.bound is not None
        yield server.bound, core


def test_student_script_on_embedded(embedded_device0: tuple[str, SwitchCore], tmp_path: Path) -> None:
    addr, core = embedded_device0
    assert core.pipeline.process(ipv4_frame("10.9.9.9"), 2) is None  # unrouted: dropped, counted on port 2
    p4info, bmv2_json = _p4c_outputs(tmp_path)
    got = student_script(addr, str(p4info), str(bmv2_json))
    assert got == {"entries": [(b"\x0a\x00\x01\x01", 32, b"\x01")], "drops_port2": 0}  # the push cleared state
    out = core.pipeline.process(ipv4_frame("10.0.1.1"), 2)
    assert out is not None and out[0] == 1 and out[1][:6] == bytes.fromhex("080000000111")


def test_student_script_on_simple_switch_grpc(tmp_path: Path) -> None:
    missing = [b for b in ("simple_switch_grpc", "p4c") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"bmv2 not installed: {' and '.join(missing)} missing (docs/bmv2.md)")
    p4info, bmv2_json = _p4c_outputs(tmp_path)
    port = _free_port()
    cmd = ["simple_switch_grpc", "--thrift-port", str(_free_port()), "--no-p4",  # device id 0: its default
           "--notifications-addr", f"ipc://{tmp_path}/notifications.ipc", "--", "--grpc-server-addr",
           f"127.0.0.1:{port}"]
    with open(tmp_path / "bmv2.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "simple_switch_grpc did not listen"
            time.sleep(0.05)
        got = student_script(f"127.0.0.1:{port}", str(p4info), str(bmv2_json))
        assert got == {"entries": [(b"\x0a\x00\x01\x01", 32, b"\x01")], "drops_port2": 0}
    finally:
        proc.terminate()
        proc.wait(10)
