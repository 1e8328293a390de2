"""emu.encoding: values and match keys mean the same on every target."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from emu import encoding
from emu.control import CONTRACT_METHODS, ControlError, SwitchControl
from emu.embedded.tables import ActionSpec, KeySpec, Table
from emu.encoding import ActionInfo, KeyField, build_match, bytes_to_int, canonical_bytes, parse_value
from emu.targets.bmv2_control import Bmv2Control, EntrySpec, ProgramSchema, TableInfo


@pytest.mark.parametrize(("value", "width", "expected"), [
    ("10.0.1.5", 32, 0x0A000105),
    ("00:00:00:00:aa:02", 48, 0xAA02),
    ("0:0:0:0:AA:2", 48, 0xAA02),
    ("::1", 128, 1),
    ("0x1ff", 9, 511),
    ("42", 16, 42),
    (7, 3, 7),
    (True, 1, 1),
])
def test_parse_value(value: Any, width: int, expected: int) -> None:
    assert parse_value(value, width, "f") == expected


@pytest.mark.parametrize(("value", "width", "message"), [
    (512, 9, "f: value 512 does not fit in bit<9>"),
    (-1, 8, "f: value -1 does not fit in bit<8>"),
    ("10.0.0.256", 32, "f: cannot parse value '10.0.0.256' for a bit<32> field"),
    ("10.0.0.1", 16, "f: cannot parse value '10.0.0.1' for a bit<16> field"),
    ("aa:bb", 48, "f: cannot parse value 'aa:bb' for a bit<48> field"),
    (1.5, 8, "f: cannot parse value 1.5"),
])
def test_parse_value_errors(value: Any, width: int, message: str) -> None:
    with pytest.raises(ControlError) as exc:
        parse_value(value, width, "f")
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_canonical_bytestrings() -> None:
    """P4Runtime 1.3 section 8.4.2: no leading zero bytes, at least one byte; padded accepted."""
    assert canonical_bytes(0x0A000105, 32) == b"\x0a\x00\x01\x05"
    assert canonical_bytes(2, 9) == b"\x02"
    assert canonical_bytes(0x100, 9) == b"\x01\x00"
    assert canonical_bytes(0, 48) == b"\x00"
    assert canonical_bytes(0xAA02, 48) == b"\xaa\x02"
    with pytest.raises(ValueError):
        canonical_bytes(512, 9)
    assert bytes_to_int(b"\x00\x00\x00\x00\xaa\x02", 48, "f") == 0xAA02
    assert bytes_to_int(b"\x01\xff", 9, "f") == 511
    with pytest.raises(ControlError, match=r"^f: value 0x0200 does not fit in bit<9>$"):
        bytes_to_int(b"\x02\x00", 9, "f")
    with pytest.raises(ControlError, match="empty"):
        bytes_to_int(b"", 9, "f")


KEYS = (KeyField("hdr.a", "exact", 8, 1), KeyField("hdr.b", "lpm", 12, 2),
        KeyField("hdr.c", "ternary", 16, 3), KeyField("hdr.d", "range", 8, 4))


def test_build_match_wildcards_and_normalisation() -> None:
    a, b, c, d = build_match("T", KEYS, {"hdr.a": 5, "hdr.b": "0xfff/4", "hdr.c": [0xFFFF, 0x00F0]})
    assert (a.value, a.dont_care) == (5, False)
    assert (b.value, b.prefix_len) == (0xF00, 4)  # bits below the prefix cleared
    assert (c.value, c.mask) == (0xF0, 0xF0)
    assert (d.value, d.high, d.dont_care) == (0, 255, True)  # omitted range key: wildcard
    (b2,) = build_match("T", KEYS[1:2], {})
    assert b2.dont_care and b2.prefix_len == 0


@pytest.mark.parametrize(("match", "message"), [
    ({}, "T: key hdr.a: missing from match (exact keys need a value)"),
    ({"hdr.a": 1, "hdr.d": [9, 3]}, "T: key hdr.d: range low 9 > high 3"),
    ({"hdr.a": 1, "hdr.b": "0x1/13"}, "T: key hdr.b: prefix length 13 outside 0..12"),
    ({"hdr.a": 1, "hdr.x": 1}, "T: unknown key field hdr.x"),
    ({"hdr.a": [1, 2]}, "T: key hdr.a: an exact key takes one value"),
])
def test_build_match_errors(match: dict[str, Any], message: str) -> None:
    with pytest.raises(ControlError) as exc:
        build_match("T", KEYS, match)
    assert str(exc.value).startswith(message)


class _Recorder:
    def __init__(self) -> None:
        self.entries: list[EntrySpec] = []

    def insert(self, entry: EntrySpec) -> None:
        self.entries.append(entry)

    modify = delete = set_default = insert

    def clear(self, table: TableInfo) -> None:  # noqa: ARG002
        self.entries.clear()


def _targets() -> tuple[Table, Bmv2Control, _Recorder]:
    """The same table on the embedded runtime and behind bmv2's control object."""
    emb = Table("T", [KeySpec(k.name, k.match, k.bitwidth) for k in KEYS],
                [ActionSpec("act", 1, [("p", 9)], "act")], size=None, const_default=False)
    schema = ProgramSchema(tables={"T": TableInfo("T", KEYS, ("act",), 7)},
                           actions={"act": ActionInfo("act", (("p", 9, 1),), 9)})
    rec = _Recorder()
    return emb, Bmv2Control(schema, rec, lambda cmds: [""] * len(cmds)), rec


@pytest.mark.parametrize(("match", "priority", "error"), [
    ({"hdr.a": 1}, 5, None),                                 # omitted lpm/ternary/range: wildcards
    ({"hdr.a": 1, "hdr.d": [3, 9]}, 5, None),
    ({"hdr.a": 1, "hdr.d": [9, 3]}, 5, "range low 9 > high 3"),  # low > high refused everywhere
    ({"hdr.a": 1}, None, "needs a priority"),
    ({"hdr.a": 300}, 5, "does not fit in bit<8>"),
    ({"hdr.b": "0x1/4"}, 5, "missing from match"),
])
def test_same_meaning_on_every_target(match: dict[str, Any], priority: int | None, error: str | None) -> None:
    emb, bmv2, rec = _targets()
    outcomes = []
    for add in (lambda: emb.add(match, "act", {"p": 3}, priority),
                lambda: bmv2.table_add("T", match, "act", {"p": 3}, priority)):
        try:
            add()
            outcomes.append("ok")
        except ControlError as e:
            outcomes.append(str(e))
    if error is None:
        assert outcomes == ["ok", "ok"]
        (entry,) = rec.entries
        ((canon, (_e, args, prio, _n, _d)),) = emb.entries.items()
        assert args == (3,) and prio == priority == entry.priority
        kinds = [m.ident() for m in entry.match]
        assert [c if isinstance(c, tuple) else (c,) for c in canon[:4]] == [
            (kinds[0][0],), (kinds[1][0], kinds[1][1]), (kinds[2][0], kinds[2][2]), (kinds[3][0], kinds[3][3])]
    else:
        assert outcomes[0] == outcomes[1] and error in outcomes[0]


def test_every_control_object_has_the_contract() -> None:
    from emu.embedded.control import ControlAPI, ControlClient

    for cls in (ControlAPI, ControlClient, Bmv2Control):
        assert issubclass(cls, SwitchControl) and not inspect.isabstract(cls), cls
        for name in CONTRACT_METHODS:
            mine, theirs = inspect.signature(getattr(cls, name)), inspect.signature(getattr(SwitchControl, name))
            assert list(mine.parameters) == list(theirs.parameters), (cls, name)
    assert encoding.needs_priority(KEYS) and not encoding.needs_priority(KEYS[:2])
