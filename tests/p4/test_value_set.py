"""Parser value sets through the control API alone (no P4Runtime): tests/p4/programs/value_set.p4.

What a member is (P4_16 spec 12.11), the set's size, struct members by field, errors naming
the set, ``reset_state`` emptying it, and the refusals of the compiler.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.control import EntryExistsError, EntryNotFoundError, TableFullError
from emu.embedded.control import ControlAPI
from emu.embedded.core import SwitchCore
from emu.embedded.errors import ControlError, P4FrontendError
from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline

from .p4util import TEMPLATE, line_of

PROGRAM = Path(__file__).resolve().parent / "programs" / "value_set.p4"
ETH = bytes.fromhex("000000000002" "000000000001")


def _out(pipe: Pipeline, ethertype: int, proto: int, port: int) -> tuple[int, int] | None:
    """(egress port, tag.seen) of one packet, or None when dropped."""
    frame = ETH + ethertype.to_bytes(2, "big") + bytes([proto, port, 0])
    r = pipe.ingress(frame, 0, 0)
    if r is None:
        return None
    out = pipe.egress_at(r, r.egress_spec, 0, 0, 0, 0, 0)
    return r.egress_spec, out[14 + 2]


@pytest.fixture(scope="module")
def program():
    return load_program(PROGRAM)


def test_members_by_value_by_field_and_by_mask(program) -> None:
    pipe = Pipeline(program, seed=1)
    api = ControlAPI(SwitchCore(pipe, [0, 1, 2]))
    assert _out(pipe, 0x88B5, 6, 7) == (1, 0)  # empty sets match nothing
    api.pvs_add("P.tag_types", "0x88b5")
    api.pvs_add("special", {"proto": 6, "port": 7})  # a struct member by field, short name
    assert _out(pipe, 0x88B5, 6, 7) == (2, 0x12)
    assert _out(pipe, 0x88B5, 7, 6) == (2, 0x10)  # the fields are not interchangeable
    assert api.pvs_get("special") == [(0x0607, 0xFFFF)]
    api.pvs_add("tag_types", 0x9900, 0xFF00)
    assert _out(pipe, 0x99AB, 6, 7) == (2, 0x12)
    assert _out(pipe, 0x98AB, 6, 7) == (1, 0)
    api.reset_state()
    assert api.pvs_get("tag_types") == [] and _out(pipe, 0x88B5, 6, 7) == (1, 0)


def test_errors_name_the_value_set(program) -> None:
    api = ControlAPI(SwitchCore(Pipeline(program, seed=1), [0, 1, 2]))
    api.pvs_add("special", 0x0101)
    with pytest.raises(EntryExistsError, match="P.special: value 0x101 mask 0xffff already in the value set"):
        api.pvs_add("special", 0x0101)
    api.pvs_add("special", 0x0202)
    with pytest.raises(TableFullError, match=r"P.special: value set full \(2 members\)"):
        api.pvs_add("special", 0x0303)
    with pytest.raises(EntryNotFoundError, match="not in the value set"):
        api.pvs_remove("tag_types", 0x0800)
    with pytest.raises(ControlError, match="unknown value set tag_typez.*tag_types"):
        api.pvs_add("tag_typez", 1)
    with pytest.raises(ControlError, match="P.special: no field prot"):
        api.pvs_add("special", {"prot": 1})
    with pytest.raises(ControlError, match="tag_types"):
        api.pvs_add("tag_types", 0x10000)  # wider than bit<16>


@pytest.mark.parametrize(("parser_local", "select", "message"), [
    ("value_set<bit<8>>(4) vs;", "hdr.h.c", "value set P.vs of 8 bits matched against keys of 16 bits"),
    ("value_set<bool>(4) vs;", "hdr.h.a", "unsupported value_set element type bool"),
])
def test_refused_value_sets(tmp_path: Path, parser_local: str, select: str, message: str) -> None:
    src = TEMPLATE.format(ingress="apply { }", decls="").replace(
        "        pkt.extract(hdr.h);\n        transition accept;",
        f"        pkt.extract(hdr.h);\n        transition select({select}) {{ vs: accept; default: accept; }}")
    src = src.replace("state start {{".replace("{{", "{"), f"{parser_local}\n    state start {{", 1)
    path = tmp_path / "prog.p4"
    path.write_text(src)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert message in str(ei.value)
    assert str(ei.value).split(":")[1] == str(line_of(path, "value_set" if "element" in message else "vs: accept"))
