"""P4 front end: symphony.p4 is accepted; unsupported constructs name FILE:LINE."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.embedded import ir
from emu.embedded.errors import P4FrontendError
from emu.embedded.frontend import display_path, load_program
from emu.embedded.runtime import Pipeline

from .p4util import TEMPLATE, line_of, write_program

ROOT = Path(__file__).resolve().parents[2]
SYMPHONY = ROOT / "p4" / "symphony.p4"


def test_symphony_is_accepted_with_its_objects() -> None:
    prog = load_program(SYMPHONY)
    ing = prog.controls["MyIngress"]
    assert set(ing.tables) == {"ipv4_lpm", "symphony_config", "ecmp_nhop", "path_pin", "symphony_tracker",
                               "symphony_slack"}
    lpm = ing.tables["ipv4_lpm"]
    assert [(k.text, k.match_kind) for k in lpm.keys] == [("hdr.ipv4.dstAddr", "lpm")]
    assert [a.name for a in lpm.actions] == ["ipv4_forward", "ipv4_ecmp", "drop"]
    assert lpm.size == 1024 and lpm.default_action.name == "drop"
    assert {i.name: i.type.name for i in ing.instances} == {
        "flow_step": "register", "step_count": "register", "frontier": "register",
        "drops": "counter", "parser_errors": "counter"}
    assert prog.errors[:2] == ["NoError", "PacketTooShort"]
    assert "IPv4BadVersion" in prog.errors
    ipv4 = prog.types["ipv4_t"]
    assert isinstance(ipv4, ir.HeaderT) and ipv4.width == 160
    assert prog.types["macAddr_t"] == ir.BitT(48)
    assert prog.main is not None and [a.type.name for a in prog.main.args][0] == "MyParser"


def test_locations_map_back_through_includes() -> None:
    prog = load_program(SYMPHONY)
    lpm = prog.controls["MyIngress"].tables["ipv4_lpm"]
    assert lpm.loc == (display_path(str(SYMPHONY)), line_of(SYMPHONY, "table ipv4_lpm"))
    # a constant of p4/include/constants.p4 (included by include/headers.p4) keeps the
    # file and line it was written on, not those of the preprocessed text
    constants = ROOT / "p4" / "include" / "constants.p4"
    port = prog.consts["CTH_UDP_PORT"]
    assert port.loc == (display_path(str(constants)), line_of(constants, "CTH_UDP_PORT"))


def test_syntax_error_in_included_file_names_that_file(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "bad.p4").write_text("#ifndef BAD\n#define BAD\n\nconst bit<8> X = ;\n#endif\n")
    path = write_program(tmp_path, "apply { }", decls='#include "inc/bad.p4"')
    with pytest.raises(P4FrontendError) as ei:
        load_program(path)
    assert str(ei.value).startswith(f"{display_path(str(inc / 'bad.p4'))}:4: syntax error")


def test_defines_guards_and_quoted_includes(tmp_path: Path) -> None:
    (tmp_path / "c.p4").write_text("#ifndef C_P4\n#define C_P4\n#define SIZE 7\nconst bit<8> K = SIZE;\n#endif\n")
    decls = '#include "c.p4"\n#include "c.p4"\n'
    path = write_program(tmp_path, "register<bit<8>>(SIZE) r;\n apply { r.write(0, K); }", decls=decls)
    prog = load_program(path)
    assert "K" in prog.consts
    inst = prog.controls["I"].instances[0]
    assert inst.type == ir.NamedT("register", (ir.BitT(8),)) and inst.args[0].value == 7


def test_missing_include_is_reported(tmp_path: Path) -> None:
    path = write_program(tmp_path, "apply { }", decls='#include "nope.p4"')
    with pytest.raises(P4FrontendError, match=r"prog\.p4:\d+: include file .*nope\.p4 not found"):
        load_program(path)


UNSUPPORTED = [
    ("varbit local variable", "apply {\n varbit<32> v;\n}", "varbit<32> v"),
    ("non-const entries",
     "action a() {}\ntable t { key = { hdr.h.a: exact; } actions = { a; }\n entries = { 1 : a(); } }\napply { }",
     "entries"),
]


@pytest.mark.parametrize(("construct", "body", "needle"), UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_constructs_name_file_and_line(tmp_path: Path, construct: str, body: str, needle: str) -> None:
    path = write_program(tmp_path, body)
    with pytest.raises(P4FrontendError) as ei:
        load_program(path)
    want = f"{display_path(str(path))}:{line_of(path, needle)}: unsupported {construct}"
    assert str(ei.value) == want
    assert ei.value.line == line_of(path, needle)


def test_unsupported_parser_constructs(tmp_path: Path) -> None:
    src = TEMPLATE.format(ingress="apply { }", decls="").replace(
        "pkt.extract(hdr.h);", "bit<8> x = pkt.lookahead<bit<8>>();\n        pkt.extract(hdr.h);")
    path = tmp_path / "la.p4"
    path.write_text(src)
    Pipeline(load_program(path))  # lookahead is supported now (tests/p4/programs/lookahead.p4)

    path2 = tmp_path / "vb.p4"  # header_union and varbit are supported now (tests/p4/programs/)
    path2.write_text(TEMPLATE.format(ingress="apply { }", decls="header v_t { bit<8> n; varbit<32> a; varbit<8> b; }"))
    with pytest.raises(P4FrontendError, match=r"vb\.p4:\d+: header v_t has more than one varbit field$"):
        load_program(path2)


def test_syntax_error_names_line(tmp_path: Path) -> None:
    path = write_program(tmp_path, "apply {\n  hdr.h.a = ;\n}")
    with pytest.raises(P4FrontendError) as ei:
        load_program(path)
    assert str(ei.value).startswith(f"{display_path(str(path))}:{line_of(path, 'hdr.h.a = ;')}: syntax error")


def test_usual_tutorial_constructs_run(tmp_path: Path) -> None:
    """The constructs load and run packets down each branch (a hit in a condition crashed before)."""
    body = """
    bit<16> tmp = 16w0xFF;
    counter(32w8, CounterType.packets_and_bytes) c;
    action set(bit<8> v) { hdr.h.a = v; }
    action noop() { }
    table t {
        key = { hdr.h.a: exact; hdr.h.c: ternary; hdr.h.d: lpm; }
        actions = { set; noop; NoAction; }
        size = 16;
        const default_action = noop();
    }
    apply {
        if (hdr.h.isValid() && !(hdr.h.b == 8w5)) {
            t.apply();
        } else if (t.apply().hit) {
            hdr.h.c = hdr.h.a ++ hdr.h.b;
        } else {
            hdr.h.setInvalid();
            exit;
        }
        hdr.h.e = (bit<8>)(tmp >> 2) ^ ~hdr.h.b;
        hdr.h.d = hdr.h.c[11:4];
        c.count(0);
    }"""
    prog = load_program(write_program(tmp_path, body))
    t = prog.controls["I"].tables["t"]
    assert t.const_default and [k.match_kind for k in t.keys] == ["exact", "ternary", "lpm"]
    for optimize in (True, False):
        pipe = Pipeline(prog, optimize=optimize)
        pipe.table_add("I.t", {"hdr.h.a": 9, "hdr.h.c": [0, 0], "hdr.h.d": [0, 0]}, "I.set", {"v": 0x77}, 1)
        # valid and b != 5: t.apply() (a miss, noop); e = (0xFF >> 2) ^ ~2; d = c[11:4]
        assert pipe.process(bytes([1, 2, 0x12, 0x34, 3, 4]) + b"pay", 1) == (
            0, bytes([1, 2, 0x12, 0x34, 0x23, 0x3F ^ 0xFD]) + b"pay")
        # b == 5 and a == 9: the hit in the condition runs set(0x77) first; c = a ++ b
        assert pipe.process(bytes([9, 5, 0, 0, 3, 4]) + b"pay", 1) == (
            0, bytes([0x77, 5, 0x77, 5, 0x70, 0x3F ^ 0xFA]) + b"pay")
        # b == 5, a miss: the header is made invalid and exit skips the rest
        assert pipe.process(bytes([1, 5, 0, 0, 3, 4]) + b"pay", 1) == (0, b"pay")


#: Parameter and type-parameter names of p4include/core.p4 and v1model.p4: a program may
#: declare types with these names (P4_16 spec 6.2.2: each lives in its own scope). D and I
#: are left out only because the test template names its controls so.
INCLUDE_PARAM_NAMES = ["H", "M", "T", "O", "hdr", "p", "b", "vr", "ig", "eg", "ck", "dep",
                       "parsedHdr", "meta", "standard_metadata", "data", "result", "base", "max", "index",
                       "value", "size", "algo", "checksum", "condition", "check", "toSignal", "lo", "hi"]


@pytest.mark.parametrize("name", INCLUDE_PARAM_NAMES)
def test_program_types_may_reuse_include_parameter_names(tmp_path: Path, name: str) -> None:
    """``header hdr {...}`` / ``header H {...}`` load (they failed in core.p4/v1model.p4 before)."""
    path = tmp_path / "prog.p4"
    path.write_text(TEMPLATE.replace("h_t", name).format(ingress="apply { sm.egress_spec = 2; }", decls=""))
    prog = load_program(path)
    assert isinstance(prog.types[name], ir.HeaderT)
    pipe = Pipeline(prog)
    assert pipe.process(bytes(range(6)) + b"rest", 1) == (2, bytes(range(6)) + b"rest")


def test_parameter_and_local_shadow_a_type_of_the_same_name(tmp_path: Path) -> None:
    """A parameter ``hdr`` and a local ``x`` hide the program's types ``hdr`` and ``x`` inside their scope."""
    text = TEMPLATE.replace("h_t", "hdr").format(decls="header x { bit<8> v; }", ingress="""
    apply {
        bit<8> x = hdr.h.a;
        hdr.h.b = x + 1;
        sm.egress_spec = 3;
    }""")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    pipe = Pipeline(load_program(path))
    assert pipe.process(bytes([7, 0, 0, 0, 0, 0]), 1) == (3, bytes([7, 8, 0, 0, 0, 0]))


def test_user_syntax_error_names_the_user_file_not_an_include(tmp_path: Path) -> None:
    """With a type named like an include's parameter, a later error still names the program's line."""
    path = tmp_path / "prog.p4"
    path.write_text(TEMPLATE.replace("h_t", "hdr").format(decls="", ingress="apply { sm.egress_spec = ; }"))
    with pytest.raises(P4FrontendError) as ei:
        load_program(path)
    assert str(ei.value).startswith(f"{display_path(str(path))}:{line_of(path, 'egress_spec = ;')}: syntax error")


def test_whole_header_store_to_a_run_time_stack_index_names_its_line(tmp_path: Path) -> None:
    """hs[i].f with a run-time i is supported (tests/p4/programs/stack_index.p4); hs[i] = h is not."""
    text = TEMPLATE.replace("struct headers {{ h_t h; }}", "struct headers {{ h_t h; h_t[2] hs; }}").format(
        decls="", ingress="apply {\n  hdr.h.a = hdr.hs[meta.m].a;\n  hdr.hs[meta.m] = hdr.h;\n}")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == (f"{display_path(str(path))}:{line_of(path, 'hdr.hs[meta.m] = hdr.h')}: "
                             "unsupported assignment of a whole header to a header stack element chosen at run time")


@pytest.mark.parametrize(("body", "needle", "message"), [
    ("register<bit<8>>(4) r;\n apply {\n  r.read(hdr.h.a);\n}", "r.read", "register.read takes 2 arguments, got 1"),
    ("counter(4, CounterType.packets) c;\n apply {\n  c.count();\n}", "c.count", "counter.count takes 1 argument, got 0"),
    ("apply {\n  random(hdr.h.a, 8w1);\n}", "random(", "random takes 3 arguments, got 2"),
])
def test_extern_calls_with_missing_arguments_name_the_users_line(tmp_path: Path, body: str, needle: str,
                                                                   message: str) -> None:
    path = write_program(tmp_path, body)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == f"{display_path(str(path))}:{line_of(path, needle)}: {message}"


@pytest.mark.parametrize(("body", "needle", "message"), [
    ("apply {\n  mark_to_drop();\n}", "mark_to_drop(", "mark_to_drop takes 1 argument, got 0"),
    ("apply {\n  mark_to_drop(sm, 1);\n}", "mark_to_drop(", "mark_to_drop takes 1 argument, got 2"),
    ("table t { key = { hdr.h.a: exact; } actions = { NoAction; } }\napply {\n  t.apply(1, 2);\n}",
     "t.apply(", "t.apply takes 0 arguments, got 2"),
    ("table t { key = { hdr.h.a: exact; } actions = { NoAction; } }\napply {\n  if (t.apply(1).hit) { }\n}",
     "t.apply(", "t.apply takes 0 arguments, got 1"),
    ("register<bit<8>>(4) r;\napply {\n  r.write(1);\n}", "r.write(", "register.write takes 2 arguments, got 1"),
])
def test_call_arity_is_checked_as_p4c_does(tmp_path: Path, body: str, needle: str, message: str) -> None:
    path = write_program(tmp_path, body)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == f"{display_path(str(path))}:{line_of(path, needle)}: {message}"


def test_for_loop_is_named_unsupported(tmp_path: Path) -> None:
    path = write_program(tmp_path, "apply {\n  for (bit<8> i = 0; i < 4; i = i + 1) { hdr.h.a = i; }\n}")
    with pytest.raises(P4FrontendError) as ei:
        load_program(path)
    assert str(ei.value) == f"{display_path(str(path))}:{line_of(path, 'for (')}: unsupported for loop"


def test_missing_member_names_the_struct_type_when_a_parameter_shadows_a_type(tmp_path: Path) -> None:
    """``hdr`` is a header type and the parser's parameter (of struct ``headers``): the error says which."""
    path = tmp_path / "prog.p4"
    path.write_text(TEMPLATE.replace("h_t", "hdr").replace("pkt.extract(hdr.h);", "pkt.extract(hdr.ipv5);")
                    .format(ingress="apply { }", decls=""))
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == (f"{display_path(str(path))}:{line_of(path, 'hdr.ipv5')}: "
                             "hdr (struct headers) has no member ipv5")


def test_type_declaration_beside_a_field_named_type(tmp_path: Path) -> None:
    """`type bit<8> T_t;` declares a type (spec 7.6) while `type` stays a field name (CTH's);
    a `type` over a struct is refused by name."""
    ok = write_program(tmp_path, "apply { }", decls="type bit<8> T_t;\nheader k_t { T_t type; bit<8> x; }",
                       name="ok.p4")
    prog = load_program(ok)
    assert prog.types["k_t"].fields[0] == ("type", ir.BitT(8))
    bad = write_program(tmp_path, "apply { }", decls="struct s_t { bit<8> a; }\ntype s_t S2;", name="bad.p4")
    with pytest.raises(P4FrontendError) as ei:
        load_program(bad)
    assert str(ei.value) == (f"{display_path(str(bad))}:{line_of(bad, 'type s_t')}: "
                             "unsupported type declaration of S2 (need bit<N>, int<N> or bool)")


def test_dont_care_type_argument_in_extern_declaration(tmp_path: Path) -> None:
    """``_`` is a type argument (``Hash<_>``, as TNA declares ActionSelector's hash) but not a type."""
    decls = ("extern Box<T> { Box(); }\n"
             "extern Holder { Holder(Box<_> b); }")
    ok = write_program(tmp_path, "apply { }", decls=decls, name="ok.p4")
    load_program(ok)
    bad = write_program(tmp_path, "apply { }", decls="extern Holder2 { Holder2(_ b); }", name="bad.p4")
    with pytest.raises(P4FrontendError) as ei:
        load_program(bad)
    assert str(ei.value).startswith(f"{display_path(str(bad))}:{line_of(bad, 'Holder2(_')}:")


def test_last_index_outside_a_parser_is_a_type_error(tmp_path: Path) -> None:
    """``stack.lastIndex`` is defined in a parser only (spec 8.18); p4c 1.2.4.9 refuses it in a
    control, so does TypeInference (tests/p4/programs/header_stack.p4 reads it in its parser)."""
    text = TEMPLATE.replace("struct headers {{ h_t h; }}", "struct headers {{ h_t h; h_t[2] hs; }}").format(
        decls="", ingress="apply {\n  hdr.h.a = (bit<8>)hdr.hs.lastIndex;\n}")
    path = tmp_path / "prog.p4"
    path.write_text(text)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == (f"{display_path(str(path))}:{line_of(path, 'hdr.hs.lastIndex')}: hdr.hs.lastIndex: "
                             "lastIndex of a header stack is defined only in a parser (P4_16 spec 8.18; p4c "
                             "refuses it too)")


def test_select_on_a_type_declared_key_is_a_type_error(tmp_path: Path) -> None:
    """A ``type``-declared value is no ``select`` key (p4c 1.2.4.9); cast to its bit<N>, it is
    (tests/p4/programs/new_types.p4)."""
    base = (TEMPLATE.replace("header h_t {{", "type bit<8> T_t;\nheader h_t {{").replace("bit<8>  a;", "T_t a;")
            .replace("transition accept;", "transition select(KEY) {{ 1: accept; default: reject; }}"))
    bad = tmp_path / "bad.p4"
    bad.write_text(base.replace("KEY", "hdr.h.a").format(decls="", ingress="apply { }"))
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(bad))
    assert str(ei.value) == (f"{display_path(str(bad))}:{line_of(bad, 'select(hdr.h.a)')}: select key hdr.h.a is "
                             "of type T_t, a `type` declaration, which select does not accept (as p4c): cast it "
                             "to bit<8>")
    ok = tmp_path / "ok.p4"
    ok.write_text(base.replace("KEY", "(bit<8>)hdr.h.a").format(decls="", ingress="apply { }"))
    Pipeline(load_program(ok))


@pytest.mark.parametrize(("body", "needle", "message"), [
    ("apply {\n  hdr.h.c = hdr.h.a + hdr.h.c;\n}", "hdr.h.a +", "type error: bit<8> + bit<16>"),
    ("apply {\n  hdr.h.a = nosuch + 1;\n}", "nosuch", "unknown name nosuch"),
    ("apply {\n  if (hdr.h.a) { hdr.h.b = 1; }\n}", "if (hdr.h.a)", "type error: if condition is not bool"),
    ("apply {\n  if (!hdr.h.a == 1) { hdr.h.b = 1; }\n}", "if (!", "type error: ! needs bool"),
    ("apply {\n  bool f = true;\n  hdr.h.a = hdr.h.a[3:0] ++ (bit<4>)hdr.h.b;\n  if (f & f) { }\n}", "f & f",
     "type error: & on bool"),
])
def test_type_errors_name_the_line(tmp_path: Path, body: str, needle: str, message: str) -> None:
    """TypeInference reports operator and condition type errors with FILE:LINE, before any code is generated."""
    path = write_program(tmp_path, body)
    with pytest.raises(P4FrontendError) as ei:
        Pipeline(load_program(path))
    assert str(ei.value) == f"{display_path(str(path))}:{line_of(path, needle)}: {message}"


def test_the_parser_loaded_from_its_cache_parses_as_a_fresh_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from emu.embedded import frontend

    cache = tmp_path / "lark" / "p4-grammar.cache"
    monkeypatch.setattr(frontend, "PARSER_CACHE", cache)
    monkeypatch.setattr(frontend, "_PARSER", None)
    fresh = load_program(SYMPHONY)  # the grammar analysed now, and written to the cache
    assert cache.is_file()
    monkeypatch.setattr(frontend, "_PARSER", None)
    cached = load_program(SYMPHONY)  # the parser loaded from the cache
    assert cached == fresh and repr(cached) == repr(fresh)
    # a file that is not this grammar's (another grammar, lark or options) is not used: analysed again, rewritten
    cache.write_bytes(b"0" * 64 + b"\n")
    monkeypatch.setattr(frontend, "_PARSER", None)
    assert load_program(SYMPHONY) == fresh and not cache.read_bytes().startswith(b"0" * 64)
    with pytest.raises(P4FrontendError, match=r"symphony.p4:\d+: syntax error"):
        frontend.parse_text("control C() {", source="symphony.p4")
