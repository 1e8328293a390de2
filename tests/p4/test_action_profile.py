"""action_profile / action_selector on the embedded switch: the control plane's refusals and
the compiler's (tests/p4/programs/action_selector.* checks what packets see)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.control import EntryExistsError, EntryNotFoundError
from emu.embedded.control import ControlAPI
from emu.embedded.errors import ControlError, P4FrontendError
from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline

from .p4util import line_of, write_program

PROGRAM = Path(__file__).resolve().parent / "programs" / "action_selector.p4"


def test_control_plane_refusals() -> None:
    pipe = Pipeline(load_program(PROGRAM), seed=1)
    pipe.act_prof_create_member("tags", 1, "set_tag", {"t": 5})
    with pytest.raises(EntryExistsError, match="I.tags: member 1 exists"):
        pipe.act_prof_create_member("tags", 1, "set_tag", {"t": 6})
    with pytest.raises(ControlError, match="unknown action"):
        pipe.act_prof_create_member("tags", 2, "set_port", {"p": 1})
    with pytest.raises(ControlError, match="an action_profile has no groups"):
        pipe.act_prof_create_group("tags", 1)
    with pytest.raises(ControlError, match="actions come from action profile I.tags"):
        pipe.table_add("tag_t", {"hdr.f.proto": 6}, "set_tag", {"t": 1})
    with pytest.raises(EntryNotFoundError, match="no member 9"):
        pipe.table_indirect_add("tag_t", {"hdr.f.proto": 6}, 9)
    pipe.table_indirect_add("tag_t", {"hdr.f.proto": 6}, 1)
    with pytest.raises(ControlError, match="member 1 is still used by I.tag_t"):
        pipe.act_prof_delete_member("tags", 1)
    for i in range(2, 5):
        pipe.act_prof_create_member("tags", i, "NoAction")
    with pytest.raises(ControlError, match=r"full \(4 members\)"):
        pipe.act_prof_create_member("tags", 5, "NoAction")
    pipe.act_prof_create_member("paths", 3, "set_port", {"p": 3})
    pipe.act_prof_create_group("paths", 1)
    pipe.act_prof_add_member_to_group("paths", 3, 1)
    with pytest.raises(ControlError, match="member 3 is still used by group 1"):
        pipe.act_prof_delete_member("paths", 3)
    api = ControlAPI(type("Core", (), {"pipeline": pipe})())
    api.table_indirect_add_with_group("ecmp", {"hdr.f.dst": "10.0.0.0/8"}, 1)
    with pytest.raises(ControlError, match="group 1 is still used by I.ecmp"):
        api.act_prof_delete_group("paths", 1)
    assert [(e.action, e.match) for e in api.table_read("ecmp")] == [("group 1", {"hdr.f.dst": [0x0A000000, 8]})]
    with pytest.raises(ControlError, match="unknown action profile nope"):
        api.act_prof_create_group("nope", 1)
    api.reset_state()  # as a new pipeline: no entries, members or groups
    assert api.table_read("ecmp") == [] and not pipe.action_profile("paths").members
    assert not pipe.action_profile("paths").groups
    api.act_prof_create_group("paths", 1)


@pytest.mark.parametrize(("body", "needle", "message"), [
    ("action a() {}\ntable t { key = { hdr.h.a: exact; } actions = { a; }\n implementation = foo; }\napply { }",
     "table t", "table t: implementation = foo is not an action_profile or action_selector declared before it"),
    ("action a() {}\ntable t { key = {\n hdr.h.a: selector; } actions = { a; } }\napply { }",
     "selector;", "table t: a selector key needs implementation = action_selector(...)"),
    ("action a() {}\ntable t { key = { hdr.h.a: exact; } actions = { a; }\n"
     " implementation = action_selector(HashAlgorithm.crc16, 32w4, 32w8); }\napply { }",
     "table t", "table t: an action_selector needs selector keys"),
    ("action a() {}\ntable t { key = { hdr.h.a: exact; } actions = { a; }\n"
     " implementation = action_selector(HashAlgorithm.crc32_custom, 32w4, 32w8); }\napply { }",
     "implementation", "unsupported hash algorithm crc32_custom"),
])
def test_compile_refusals(tmp_path: Path, body: str, needle: str, message: str) -> None:
    path = write_program(tmp_path, body)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path), seed=1)
    assert message in str(ei.value) and ei.value.line in (line_of(path, needle), line_of(path, needle) + 1)


def test_random_selector_draws_every_member_of_the_group_and_no_other() -> None:
    """HashAlgorithm.random (tests/p4/programs/selector_hashes.p4): the member of a packet is a
    uniform draw from the group, the same flow included; 300 draws over 3 members reach each
    (the chance that a uniform draw misses one is 3 * (2/3)**300, about 1e-52) and nothing else."""
    pipe = Pipeline(load_program(PROGRAM.with_name("selector_hashes.p4")), seed=1)
    for m in (1, 2, 3):
        pipe.act_prof_create_member("s_random", m, "set4", {"v": 0x40 | m})
    pipe.act_prof_create_member("s_random", 4, "set4", {"v": 0x44})  # a member outside the group
    pipe.act_prof_create_group("s_random", 9)
    for m in (1, 2, 3):
        pipe.act_prof_add_member_to_group("s_random", m, 9)
    pipe.table_indirect_add_with_group("t_random", {"hdr.eth.etherType": 0x88B5}, 9)
    frame = bytes.fromhex("000000000002" "000000000001" "88b5" "0a000001" "04d2") + bytes(4)
    seen = []
    for i in range(300):
        r = pipe.ingress(frame, 0, i)
        assert r is not None
        seen.append(pipe.egress_at(r, r.egress_spec, 0, 0, 0, i, i)[14 + 6 + 3])
    assert set(seen) == {0x41, 0x42, 0x43}
