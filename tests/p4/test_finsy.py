"""A finsy script (tests/p4/finsy/student.py) against the embedded P4Runtime server: action
profile members and groups, a batch read with a bad entity, ``delete_all``, and packet-out /
packet-in through a ``@controller_header`` program.

finsy needs protobuf 5 or later and p4runtime-shell pins 3.20, so finsy has a venv of its
own, ``.venv-finsy`` (made by ./scripts/setup.sh); without it the test skips and says so.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="grpcio is not installed (run ./scripts/setup.sh)")

from google.protobuf import text_format  # noqa: E402

from emu.embedded.control import ControlAPI  # noqa: E402
from emu.embedded.core import SwitchCore  # noqa: E402
from emu.embedded.frontend import load_program  # noqa: E402
from emu.embedded.p4info import build_p4info  # noqa: E402
from emu.embedded.p4runtime_server import P4RuntimeServer, P4RuntimeService  # noqa: E402
from emu.embedded.runtime import Pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FINSY_PYTHON = REPO / ".venv-finsy" / "bin" / "python"
SCRIPT = Path(__file__).resolve().parent / "finsy" / "student.py"
PROGRAMS = REPO / "tests" / "p4" / "programs"
CPU_PORT = 255


def _finsy_missing() -> str | None:
    if not FINSY_PYTHON.exists():
        return (f"finsy has no venv here ({FINSY_PYTHON.parent.parent} is missing): ./scripts/setup.sh makes it "
                "(finsy needs protobuf >= 5, p4runtime-shell pins 3.20, so they cannot share .venv)")
    r = subprocess.run([str(FINSY_PYTHON), "-c", "import finsy"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return f"finsy does not import in .venv-finsy: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def _server(program: Path, tmp: Path, **kwargs: object) -> tuple[SwitchCore, P4RuntimeService, Path]:
    core = SwitchCore(Pipeline(load_program(program)), [1, 2, 3, CPU_PORT])
    svc = P4RuntimeService(ControlAPI(core), device_id=1, **kwargs)
    info = tmp / f"{program.stem}.p4info.txtpb"
    info.write_text(text_format.MessageToString(build_p4info(core.pipeline)))
    return core, svc, info


@pytest.mark.timeout(120)
def test_finsy_script(tmp_path: Path) -> None:
    reason = _finsy_missing()
    if reason is not None:
        pytest.skip(reason)
    _sel_core, sel, sel_info = _server(PROGRAMS / "action_selector.p4", tmp_path)
    core, pio, pio_info = _server(PROGRAMS / "packet_io.p4", tmp_path, cpu_port=CPU_PORT)
    pio.inject = lambda frame: core.receive(CPU_PORT, frame, 0)
    stop = threading.Event()

    def wire() -> None:  # port 1 is looped back; what goes to the CPU port is a PacketIn
        while not stop.wait(0.01):
            for port, frame in pio.run(lambda: core.poll(0)):
                if port == CPU_PORT:
                    pio.packet_in(frame)
                elif port == 1:
                    pio.run(lambda f=frame: core.receive(1, f, 0))

    loop = threading.Thread(target=wire, daemon=True)
    with P4RuntimeServer(sel) as s1, P4RuntimeServer(pio) as s2:
        loop.start()
        try:
            r = subprocess.run([str(FINSY_PYTHON), str(SCRIPT), s1.bound, str(sel_info), s2.bound, str(pio_info)],
                               capture_output=True, text=True, timeout=90)
        finally:
            stop.set()
            loop.join(5)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["members"] == [1, 2] and got["groups"] == [7] and got["entries"] == 1
    assert got["batch"] == ["UNKNOWN", ["P4TableEntry"]]  # the good entity answered, then UNKNOWN (13.3)
    assert got["after_delete_all"] == [0, 0, 0]
    assert got["payload"] == got["sent"] and got["ingress_port"] == 1
