"""hostapps.compiled.typed_locals: which locals of a generated pipeline the compiled build may
declare as C types (the same values as Python's integers, or the var stays a Python object)."""

from __future__ import annotations

import re

from emu.embedded.codegen import STATE, STATE_CLASS, STATE_NEW, VAR_RANGES
from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline
from hostapps import compiled

B8, B16, B32 = (0, 0xFF), (0, 0xFFFF), (0, 0xFFFFFFFF)

SOURCE = """
def _ingress(_pkt, _port):
    _a = 0
    _b = 0
    _c = 0
    _s = 0
    _ok = False
    _flag = False
    _a, _b, = _S_unpack(_pkt, 0)
    _c = ((_a - 1) & 0xff)
    _h = _hash((_b << 32) | _a)
    _s = (_a << 8) + _a
    _ok = (_a < _c) and not _flag
    _flag = _b
    return (_a, _b, _c, _s, _ok, _flag)
"""


def test_a_var_in_an_expression_that_would_wrap_in_c_stays_a_python_int() -> None:
    typed = compiled.typed_locals(SOURCE, {"_a": B8, "_b": B32, "_c": B8, "_s": B8, "_ok": "bool", "_flag": "bool"})
    got = typed["_ingress"]
    # _b << 32 needs 64 bits: _b stays a Python int (then "| _a" is Python's too); _a is C
    assert "_b" not in got and got["_a"] == "longlong"
    # _c = (_a - 1) & 0xff: the C subtraction may go negative, the mask brings it into bit<8>
    assert got["_c"] == "longlong"
    # (_a << 8) + _a is C and fits, but not in _s's bit<8>: _s stays a Python int
    assert "_s" not in got
    # _ok gets a bool; _flag gets an int (_b) at one point: a C bint would turn it into True
    assert got["_ok"] == "bint" and "_flag" not in got


def test_an_assignment_outside_the_var_s_range_keeps_it_a_python_int() -> None:
    src = "def _egress(_st):\n    _x = 0\n    _x = 300\n    return _x\n"
    assert "_x" not in compiled.typed_locals(src, {"_x": B8})["_egress"]
    assert compiled.typed_locals(src, {"_x": B16})["_egress"] == {"_x": "longlong"}


def test_modulo_by_what_may_be_zero_and_unknown_shifts_are_never_c() -> None:
    src = ("def _ingress(_pkt):\n    _x = 0\n    _y = 0\n    _z = 0\n    _w = 0\n"
           "    _m = _x % _z\n    _n = _y << _z\n    _q = _w % 7\n    return (_m, _n, _q)\n")
    got = compiled.typed_locals(src, {"_x": B8, "_y": B8, "_z": B8, "_w": B8})["_ingress"]
    assert "_x" not in got and "_y" not in got and "_z" not in got  # _z may be 0, or 255: a shift by 255
    # a temporary assigned only C values gets their range: _q = _w % 7 is 0..6
    assert got["_w"] == "longlong" and got["_q"] == "longlong" and "_m" not in got


def _norm(line: str, calls: dict[str, str] | None = None, wrap: tuple = ()) -> str:
    """``line`` with its int literals above a C int and its named C constants (compiled._c_constants)
    both written as the decimal value, the typed calls of ``calls`` (compiled._typed_bindings) as the
    bound callables' calls they stand for, and the operations computed in Python (``wrap``,
    compiled.typed_locals) as they were."""
    for seg, new in wrap:
        line = line.replace(new, seg)
    for name, text in (calls or {}).items():
        line = line.replace(text, name + "(")
    line = re.sub(rf"\b{compiled.C_CONST_PREFIX}(\d+)\b", r"\1", line)
    return re.sub(r"\b0x[0-9a-fA-F]+\b",
                  lambda m: str(int(m.group(), 16)) if int(m.group(), 16) > compiled._C_INT_LITERAL_MAX else m.group(),
                  line)


def test_big_literals_of_c_expressions_become_c_constants() -> None:
    """Cython makes a literal above a C int a Python object, so ``x & 0xffffffff`` of a typed ``x``
    would box it; in an expression of C vars only, the literal becomes a module-level C constant of
    the same value; in a Python expression (``_y`` is not typed) and below 2**31 it stays."""
    src = ("def _egress(_st, _y):\n    _a = 0\n    _b = 0\n    _a = ((_b << 4) & 0xffffffff)\n"
           "    _c = _y & 0xffffffff\n    _ok = _a < 2147483648 and _b != 0xff\n    return (_a, _c, _ok)\n")
    out, consts = compiled._c_constants(src, {"_egress": {"_a": "longlong", "_b": "longlong"}})
    assert consts == [2147483648, 4294967295]
    assert "_a = ((_b << 4) & _CK4294967295)" in out and "_c = _y & 0xffffffff" in out
    assert "_ok = _a < _CK2147483648 and _b != 0xff" in out
    assert compiled._c_constants(src, {}) == (src, [])  # nothing typed: nothing changes
    ns: dict = {"_CK2147483648": 2147483648, "_CK4294967295": 4294967295}
    exec(out, ns)  # noqa: S102
    want: dict = {}
    exec(src, want)  # noqa: S102
    assert ns["_egress"](None, 0x1_2345_6789) == want["_egress"](None, 0x1_2345_6789)


def test_the_shipped_program_declares_its_packet_state_in_the_compiled_module() -> None:
    pipe = Pipeline(load_program("p4/symphony.p4"))
    ns = pipe.generated_functions[0].__globals__
    ttl = next(v for v in ns[VAR_RANGES] if v.startswith("_hdr_ipv4_ttl_"))  # hdr.ipv4.ttl's var
    assert ns[VAR_RANGES][ttl] == B8
    src = compiled.pipeline_module_source(pipe.source, ns)
    # ingress, egress, the typed state's constructor (codegen.STATE), its deparser (one: ethernet
    # and ipv4 re-packed, the rest from the extracted bytes), make's typed tables and the C entry
    # points (ingress_c, egress_c, make_code); ttl a C member of the state
    assert len(ns[STATE]["deparsers"]) == 1
    assert src.count("@cython.locals(") == 8 and f"{ttl}=cython.longlong" in src
    assert "    def ingress_c(self, _a0, _port, _now):" in src and "_eport=cython.longlong" in src
    assert f"    {ttl} = cython.declare(cython.longlong)" in src
    # the name is the source's without the declarations (a build is found before they are worked out)
    bare = compiled.pipeline_module_source(pipe.source, ns, declare=False)
    assert "cython" not in bare
    # the exec'd source is unchanged but for the state (codegen.STATE): every other line of it is in
    # the module, indented; the typed source differs in the lines that make or read the state and
    # in the fast deparser's line (its function instead of pack(...) + _pkt[_t:]) only
    # (big literals of C expressions are named C constants in it: compiled._c_constants; _norm undoes that)
    types, calls = compiled._typed_bindings(ns)
    ranges = frozenset((k, v) for k, v in ns[VAR_RANGES].items() if v is not None)
    _typed, wrap = compiled._typed_wrapped(pipe.source, ranges, frozenset(ns[compiled.VAR_BOUNDS].items()))
    # the ECMP hash's key (src << 32 | dst ...) leaves a C long long: computed in Python there, the
    # addresses stay C (the checksums over them)
    src_addr = next(v for v in ns[VAR_RANGES] if v.startswith("_hdr_ipv4_srcAddr_"))
    assert wrap == ((f"({src_addr}) << 32", f"(cython.cast(object, {src_addr}) << 32)"),)
    assert dict(dict(_typed)["_ingress"])[src_addr] == "longlong" and wrap[0][1] in src
    body = [_norm(ln[4:], calls, wrap) for ln in src.splitlines() if ln.startswith("    ") and "@cython.locals" not in ln]
    state = ns[STATE]
    fields = ", ".join(state["fields"])
    changed = [ln for ln in pipe.source.splitlines() if ln not in state["source"].splitlines()]
    fast = [ln for ln in changed if "_pack_" in ln and ln.lstrip().startswith("_deparsed = ")]
    assert len(fast) == 1 and fast[0].endswith(" + _pkt[_t:]")
    assert all(_norm(ln) in body for ln in pipe.source.splitlines() if ln and f"{fields}," not in ln and ln not in fast)
    assert all(_norm(ln) in body for ln in state["source"].splitlines() if ln)
    assert f"{compiled.C_CONST_PREFIX}4294967295 = cython.declare(cython.longlong, 4294967295)" in src
    # the tables typed (Table, their exact dicts): the lookups are C calls of Table's methods on them
    lpm = next(n for n in calls if "ipv4_lpm_lookup_lpm" in n)
    table = next(n for n, t in types.items() if t == "Table" and "ipv4_lpm" in n)
    assert calls[lpm] == f"_CTable.lookup_lpm({table}, " and ns[lpm] == ns[table].lookup_lpm
    assert f"_CTable.lookup_lpm({table}, " in src and f"{lpm}(" not in src.split("def make")[1].split("\n", 1)[1]
    assert all(calls[n] == f"{x}.get(" and ns[n].__self__ is ns[x] for n in calls if n.startswith("_D_")
               for x in [calls[n][:-5]])
    assert all(t in ("Table", "dict") for t in types.values()) and f"{table}=_CTable" in src.split("def make(")[0].splitlines()[-1]
    assert all(f"({fields},)" in ln or f"{fields}, = _st" in ln for ln in changed if ln not in fast)
    (fn,) = state["deparsers"]
    typed_fast = [ln for ln in state["source"].splitlines() if ln not in pipe.source.splitlines() and fn in ln]
    assert len(typed_fast) == 1 and typed_fast[0].lstrip().startswith(f"_deparsed = {fn}(_pkt, _t, ")


def test_the_typed_state_gives_the_tuple_s_results() -> None:
    """The compiled module's functions, run as Python (Cython's pure-mode shadow), pass the state as
    a ``_P4State`` and give the exec'd functions' frames, bit for bit; the constants agree. So do the
    compiled functions when the build is there (its fast deparser writes the frame in C)."""
    assert (STATE, STATE_CLASS, STATE_NEW) == (compiled.STATE, compiled.STATE_CLASS, compiled.STATE_NEW)
    pipes = [Pipeline(load_program("p4/symphony.p4"), seed=3) for _ in range(3)]
    for pl in pipes:
        pl.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": "10.0.0.0/8"}, "MyIngress.ipv4_forward",
                     {"srcAddr": "00:00:00:00:08:01", "dstAddr": "00:00:00:00:08:02", "port": 3})
    ns = pipes[1].generated_functions[0].__globals__
    made: dict = {}
    exec(compiled.pipeline_module_source(pipes[1].source, ns), made)  # noqa: S102  (what the build compiles)
    ing, eg = made["make"](ns)
    code = made[compiled.CODE_NEW](ns)  # the C entry points (runtime.PipelineCode), as Python here
    frame = bytes.fromhex("00000000000200000000000108004501005c000100004011658d0a0000010a0001020035")
    frame += bytes(range(256))[:0x5c - 20 - 6]
    for n in (len(frame), 14, 30):  # a whole frame, a lone Ethernet header, a cut IPv4 header
        a = pipes[0].generated_functions[0](frame[:n], 1, 0)
        b = ing(frame[:n], 1, 0)
        e = code.ingress_c(frame[:n], 1, 0)
        assert (a is None) == (b is None) == (e is None) == (n != len(frame))  # the whole frame is forwarded (port 3)
        if a is None:
            continue
        assert a[:3] == b[:3] and isinstance(a[3], tuple) and type(b[3]).__name__ == STATE_CLASS
        assert [getattr(b[3], v) for v in ns[STATE]["fields"]] == list(a[3])
        # (the C entry's unicast result is the IngressResult Pipeline.ingress makes of the tuple)
        assert type(e).__name__ == "IngressResult" and (e.egress_spec, e.mcast_grp, e.packet_length, e.port) == (*a[:3], 1)
        assert [getattr(e.state, v) for v in ns[STATE]["fields"]] == list(a[3])
        c = pipes[2]._ingress_fn(frame[:n], 1, 0) if pipes[2].code_status == "compiled" else None
        cc = pipes[2]._code.ingress_c(frame[:n], 1, 0) if pipes[2]._code is not None else None
        for q in (0, 5000):
            want = pipes[0].generated_functions[1](a[3], 3, q, q, 0, 0, 10)
            assert want == eg(b[3], 3, q, q, 0, 0, 10) == code.egress_c(e.state, 3, q, q, 0, 0, 10)
            if c is not None:
                assert want == pipes[2]._egress_fn(c[3], 3, q, q, 0, 0, 10)
            if cc is not None:
                assert want == pipes[2]._code.egress_c(cc.state, 3, q, q, 0, 0, 10)


def test_an_operation_beyond_c_is_computed_in_python_and_its_vars_stay_c() -> None:
    """With ``wrap``, ``_a << 40`` of a bit<32> ``_a`` (beyond 2**62) does not make ``_a`` a Python
    object (its checksum-like sum stays C): the operation is listed, its left operand cast to object."""
    src = ("def _ingress(_pkt):\n    _a = 0\n    _b = 0\n    _a, _b, = _S(_pkt)\n"
           "    _h = _hash(((_a) << 40) | _b)\n    _c = _a + _b\n    return (_h, _c)\n")
    assert "_a" not in compiled.typed_locals(src, {"_a": B32, "_b": B8})["_ingress"]  # without wrap: Python
    wrap: list = []
    got = compiled.typed_locals(src, {"_a": B32, "_b": B8}, None, wrap)["_ingress"]
    assert got["_a"] == "longlong" and got["_b"] == "longlong" and got["_c"] == "longlong"
    assert wrap == [("(_a) << 40", "(cython.cast(object, _a) << 40)")]
    ns = {"_S": lambda p: (p, 3), "_hash": lambda x: x}
    exec(compiled._wrapped(src, tuple(wrap)), ns2 := {"cython": __import__("cython"), **ns})  # noqa: S102
    exec(src, ns)  # noqa: S102
    assert ns2["_ingress"](0xFFFF_FFFF) == ns["_ingress"](0xFFFF_FFFF) == ((0xFFFF_FFFF << 40) | 3, 0xFFFF_FFFF + 3)


def test_c_entry_points_only_where_the_integer_parameters_are_masked() -> None:
    """The C entry points take the integer parameters as C long long: only when every read of them
    is ``param & K`` (K >= 0: the same bits as Python's int); else the module has none."""
    ing = "def _ingress(_pkt, _port, _now, _itype=0):\n    _p = 0\n    _p = _port & 0x1ff\n    return (_p, _K)\n\n"
    eg = ("def _egress(_st, _eport, _a, _b, _c, _d, _now, _rid=0, _itype=0):\n"
          "    _x = _eport & 0x1ff\n    return (_x, _now & 0xffffffffffff)\n")
    lines, consts = compiled._entry_lines(ing + eg, {"_ingress": {"_p": "longlong"}}, ["_K"], {})
    assert lines and consts == [0xffffffffffff]
    assert "        _itype = 0" in lines and "        _rid = 0" in lines
    assert "        return (_p, self._K)" in lines and f"        return (_x, _now & {compiled.C_CONST_PREFIX}281474976710655)" in lines
    assert compiled._entry_lines(ing + eg.replace("_now & 0xffffffffffff", "_now << 20"), {}, ["_K"], {}) == ([], [])
    assert compiled._entry_lines(ing, {}, ["_K"], {}) == ([], [])  # no _egress: none


def test_a_bounded_var_is_c_whatever_is_stored_and_the_packet_is_bytes() -> None:
    """``bounds`` (codegen.VAR_BOUNDS: ``_pos``, kept <= the frame's length by the parser's checks)
    are C with their range although ``_pos + n`` is not inside it; ``_pkt`` is ``bytes`` as a
    parameter or from the egress state, not when it is assigned something else; a byte read
    ``_pkt[i]`` into a bit<8> var is a C store."""
    src = ("def _ingress(_pkt, _n):\n    _pos = 0\n    _b = 0\n    _pos += 14\n    _b = _pkt[_pos + 1]\n"
           "    _x = (_b << 8) | _b\n    return (_pkt, _pos, _x)\n\n"
           "def _egress(_st):\n    _pkt, _pos, = _st\n    _t = _pos\n    return _pkt[_t:]\n\n"
           "def _other(_frame):\n    _pkt = b'x' + _frame\n    return _pkt\n")
    got = compiled.typed_locals(src, {"_b": B8}, {"_pos": (0, 1 << 48)})
    assert got["_ingress"] == {"_b": "longlong", "_pos": "longlong", "_x": "longlong", "_pkt": "bytes"}
    assert got["_egress"] == {"_pos": "longlong", "_t": "longlong", "_pkt": "bytes"}
    assert got["_other"] == {}
    assert "_pos" not in compiled.typed_locals(src, {"_b": B8})["_ingress"]  # without its bound: _pos + 14 grows
