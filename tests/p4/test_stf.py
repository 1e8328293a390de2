"""STF runner: every tests/p4/stf/*.stf against p4/symphony.p4, plus the runner's own rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from emu.embedded.errors import ControlError
from emu.embedded.stf import StfError, run_stf, stf_command

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4" / "symphony.p4"
#: Both builds of the one Symphony algorithm meet the same vectors (docs/DESIGN.md section 10).
BUILDS = {"v1model": PROGRAM, "t2na": REPO / "p4" / "tofino" / "symphony.p4"}
STF_DIR = REPO / "tests" / "p4" / "stf"
STF_FILES = sorted(STF_DIR.glob("*.stf"))


def test_vectors_exist() -> None:
    names = {p.name for p in STF_FILES}
    assert {"forwarding.stf", "lpm.stf", "miss_drop.stf", "symphony.stf", "parser_errors.stf"} <= names


def test_vectors_are_their_scapy_derivation() -> None:
    """The committed .stf files are exactly what tests/p4/make_stf.py derives with scapy
    (expected packets rebuilt from the input, not copied from a switch's output)."""
    from . import make_stf

    assert sorted(make_stf.VECTORS) == [p.name for p in STF_FILES]
    for name, make in make_stf.VECTORS.items():
        assert (STF_DIR / name).read_text() == make(), f"{name}: regenerate with tests/p4/make_stf.py"


def test_vectors_do_not_depend_on_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every address in the vectors is given: scapy's defaults (the MAC of the interface its
    route picks, e.g. an ARP's hwsrc) would hold the MAC of the machine that generated them."""
    import scapy.layers.l2

    from . import make_stf

    class OtherMachine:
        mac = "02:de:ad:be:ef:01"

    monkeypatch.setattr(scapy.layers.l2, "resolve_iface", lambda iface: OtherMachine())
    for name, make in make_stf.VECTORS.items():
        assert (STF_DIR / name).read_text() == make(), f"{name}: a field depends on this machine's interfaces"


@pytest.mark.parametrize("build", sorted(BUILDS))
@pytest.mark.parametrize("stf", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_symphony_vectors(stf: Path, build: str) -> None:
    result = run_stf(BUILDS[build], stf, seed=1)
    report = "\n".join(str(o) for o in result.outcomes)
    assert result.failed == 0, report
    assert result.passed > 0


def test_wrong_expectation_fails(tmp_path: Path) -> None:
    text = (STF_DIR / "forwarding.stf").read_text()
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("expect 2 "))
    # TTL byte 0x3f (63) -> 0x40 (64): as if the switch forgot to decrement it
    assert " 3f11 " in lines[i]
    lines[i] = lines[i].replace(" 3f11 ", " 4011 ", 1)
    bad = tmp_path / "wrong.stf"
    bad.write_text("\n".join(lines) + "\n")
    result = run_stf(PROGRAM, bad)
    assert result.failed == 1
    failed = next(o for o in result.outcomes if not o.ok)
    assert failed.line == i + 1 and "first difference at byte 22" in failed.detail
    out = CliRunner().invoke(stf_command, [str(PROGRAM), str(bad)])
    assert out.exit_code == 1
    assert f"FAIL {bad}:{i + 1}: expect port 2" in out.output
    assert out.output.rstrip().endswith("1 failed")


# -- the runner against a fake pipeline -------------------------------------------------------


@dataclass
class _Key:
    name: str


@dataclass
class _Table:
    """What the runner reads of a table (emu.embedded.stf.StfTable) and ControlAPI keeps."""

    keys: list[_Key]
    actions: list[str]
    default_desc: tuple = ("", {})


@dataclass
class _St:
    egress_spec: int
    frame: bytes


class FakePipeline:
    """Routes on the last byte of the frame through MyIngress.fwd entries {value: port}."""

    #: emu.embedded.core.PipelineLike: queue depths in packets, no copies, no recirculation
    qdepth_unit = None
    last_recirculated = False

    def __init__(self) -> None:
        self.pending: list = []
        self.stats: dict[str, int] = {}
        self.tables = {"MyIngress.fwd": _Table([_Key("hdr.x.dst")], ["MyIngress.set_port", "MyIngress.drop"]),
                       "MyEgress.other": _Table([_Key("hdr.x.dst")], ["MyEgress.noop"])}
        self.meters: dict[str, Any] = {}
        self.registers = {"MyIngress.r": [0] * 4}
        self.counters = {"MyIngress.c": [(0, 0)] * 4}
        self.routes: dict[Any, int] = {}
        self.calls: list[tuple] = []

    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> _St | None:
        port = self.routes.get(frame[-1])
        c = self.counters["MyIngress.c"]
        c[ingress_port] = (c[ingress_port][0] + 1, c[ingress_port][1] + len(frame))
        return None if port is None else _St(port, frame)

    def egress_at(self, st: _St, *args: int) -> bytes:
        return st.frame + b"\xaa"

    def table_add(self, table, match, action, params, priority):
        if table not in self.tables:
            raise ControlError(f"unknown table {table!r}")
        self.calls.append((table, match, action, params, priority))
        value = match["hdr.x.dst"]
        self.routes[value if isinstance(value, int) else value[0]] = params["port"]

    def table_set_default(self, table, action, params):
        self.calls.append((table, action, params))

    def register_read(self, name, index):
        return self.registers[name][index]

    def register_write(self, name, index, value):
        self.registers[name][index] = value

    def counter_read(self, name, index):
        return self.counters[name][index]


def run_text(tmp_path: Path, text: str, pipe: FakePipeline | None = None):
    f = tmp_path / "t.stf"
    f.write_text(text)
    return run_stf("unused.p4", f, pipeline=pipe or FakePipeline())


def test_runner_matching_rules(tmp_path: Path) -> None:
    pipe = FakePipeline()
    r = run_text(tmp_path, """\
# comment
add fwd dst:0x05 set_port(port:2)
add MyIngress.fwd 10 hdr.x.dst:0x06/8 MyIngress.set_port(port:3)   # lpm + priority
setdefault MyIngress.fwd drop()
packet 1 0000 0000 0000 0000 0000 0000 0005
expect 2 0000 0000 0000 0000 0000 0000 0005 aa$
packet 1 00000000000000000000000000 06
expect 3 0000****        # prefix with wildcards: extra bytes allowed
packet 1 0000 0000 0000 0000 0000 0000 0005
expect 2 0000 0000 0000 0000 0000 0000 0005$
register_write r 2 9
register_read MyIngress.r 2 9
check_counter c(1) packets == 3
check_counter MyIngress.c(1) bytes >= 42
""", pipe)
    assert pipe.calls[0] == ("MyIngress.fwd", {"hdr.x.dst": 5}, "MyIngress.set_port", {"port": 2}, None)
    assert pipe.calls[1] == ("MyIngress.fwd", {"hdr.x.dst": [6, 8]}, "MyIngress.set_port", {"port": 3}, 10)
    assert [(o.line, o.ok) for o in r.outcomes] == [(6, True), (8, True), (10, False), (12, True),
                                                    (13, True), (14, True)]
    assert "expected exactly 14" in r.outcomes[2].detail
    assert r.summary() == "5 passed, 1 failed"


def test_runner_missing_and_unexpected(tmp_path: Path) -> None:
    r = run_text(tmp_path, """\
add fwd dst:0x05 set_port(port:2)
add fwd dst:0x07&&&0xff set_port(port:4)
expect 3 00
packet 1 0000 0000 0000 0000 0000 0000 0007
""")
    assert [(str(o)) for o in r.outcomes] == [
        f"FAIL {tmp_path / 't.stf'}:3: expect port 3: no packet",
        f"FAIL {tmp_path / 't.stf'}:4: unexpected packet on port 4: 0000000000000000000000000007aa",
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("digest 1\n", "t.stf:1: unsupported STF command 'digest'"),
    ("mc_node_associate 1 0\n", "t.stf:1: expected 'mc_node_associate GROUP NODE' of a created group and node"),
    ("\n\npacket 1 00zz\n", "t.stf:3: bad character 'z'"),
    ("add fwd dst:5\n", "t.stf:1: expected 'add TABLE"),
    ("add nope dst:5 a()\n", "t.stf:1: unknown table 'nope'"),
    ("\nadd fwd dst:1 set_port(2)\n", "t.stf:2: action argument '2' must be NAME:VALUE"),
    ("check_counter c[1] == 2\n", "t.stf:1: expected 'check_counter"),
])
def test_runner_errors_name_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(StfError, match=message.replace("(", r"\(").replace("[", r"\[")):
        run_text(tmp_path, text)


def test_ambiguous_name(tmp_path: Path) -> None:
    pipe = FakePipeline()
    pipe.tables["MyOther.fwd"] = pipe.tables["MyIngress.fwd"]
    with pytest.raises(StfError, match=r"t.stf:1: table name 'fwd' is ambiguous: MyIngress.fwd, MyOther.fwd"):
        run_text(tmp_path, "add fwd dst:1 set_port(port:2)\n", pipe)


def test_pipeline_crash_fails_loudly_not_as_no_packet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside the pipeline (a bug in generated code) is no drop: the runner and
    ``symphony-emu stf`` (exit 2) name the packet's line and the exception."""
    from hostapps import compiled

    stf = tmp_path / "crash.stf"
    stf.write_text("add ipv4_lpm hdr.ipv4.dstAddr:0x0a000000/8 drop()\n"
                   "packet 1 " + "00" * 60 + "\nexpect 2 " + "00" * 60 + "\n")

    def crash(*_: Any) -> None:  # the generated ingress function, broken
        raise UnboundLocalError("cannot access local variable '_e_3'")

    # every Pipeline made from now on runs ``crash`` as its generated ingress (Pipeline itself is an
    # extension type in the compiled build: its methods cannot be patched)
    monkeypatch.setattr(compiled, "pipeline_functions", lambda _source, _ingress, egress: (crash, egress, "source"))
    with pytest.raises(StfError, match=rf"^{stf}:2: internal error in the switch pipeline on this "
                                       r"packet: UnboundLocalError: cannot access local variable '_e_3'$"):
        run_stf(PROGRAM, stf)
    out = CliRunner().invoke(stf_command, [str(PROGRAM), str(stf)])
    assert out.exit_code == 2
    assert "UnboundLocalError" in out.output and "no packet" not in out.output


def test_a_file_without_expectations_passes_when_nothing_comes_out(tmp_path: Path) -> None:
    """No expect lines is a legitimate test ("nothing leaves"); a packet that does leave fails it."""
    lines = (STF_DIR / "miss_drop.stf").read_text().splitlines()
    dropped = [ln for ln in lines if ln.startswith("add ") or (ln.startswith("packet 1 ") and " 0b00 0001 " in ln)]
    quiet = tmp_path / "quiet.stf"
    quiet.write_text("\n".join(dropped) + "\n")
    out = CliRunner().invoke(stf_command, [str(PROGRAM), str(quiet)])
    assert out.exit_code == 0, out.output
    assert "no expectations, and no packet came out" in out.output
    forwarded = next(ln for ln in lines if ln.startswith("packet 1 ") and " 0a00 0101 " in ln)
    loud = tmp_path / "loud.stf"
    loud.write_text("\n".join([*dropped, forwarded]) + "\n")
    out = CliRunner().invoke(stf_command, [str(PROGRAM), str(loud)])
    assert out.exit_code == 1
    assert "unexpected" in out.output


def test_frames_a_device_cannot_send_are_skipped_with_the_reason() -> None:
    """bmv2 on veths cannot send a 5- or 13-byte frame: the packet, the expects after it and
    every state check after it are skipped with the reason, nothing fails."""
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline
    from emu.embedded.stf import EmbeddedStfDevice, run_stf_on

    class VethLike(EmbeddedStfDevice):
        def cannot_send(self, frame: bytes) -> str | None:
            return "shorter than an Ethernet header" if len(frame) < 14 else None

    stf = Path(__file__).resolve().parent / "stf" / "parser_errors.stf"
    pipe = Pipeline(load_program(PROGRAM))
    r = run_stf_on(stf, VethLike(pipe), pipe)
    skipped = [o for o in r.outcomes if o.skipped]
    assert (r.failed, r.passed, len(skipped)) == (0, 1, 6), "\n".join(map(str, r.outcomes))
    assert skipped[0].detail == "5-byte frame: shorter than an Ethernet header"
    assert skipped[2].what.startswith("counter MyIngress.parser_errors(1)")
    assert "depends on the packet at line" in skipped[2].detail
    assert r.summary() == "1 passed, 0 failed, 6 skipped"
    assert str(skipped[0]).startswith(f"SKIP {stf}:")
