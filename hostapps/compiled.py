"""Optional compiled hot modules (Cython), with the pure-Python source always the reference.

The virtual-time mode spends its time in a few pure-Python modules (:data:`MODULES`: the
traffic manager and switch core glue, the P4 runtime and its tables, the event loop and hosts, the rank worker, the
transport, DCQCN, the collectives, the CTH codec). ``scripts/build_compiled.py`` (run by ``scripts/setup.sh`` when
Cython is installed, the ``compiled`` extra) compiles those same files unchanged with
Cython into extension modules beside them, so that a run is faster and its results are the
same bit for bit (``tests/unit/test_compiled.py`` runs a scenario both ways and compares).

Which one is imported: the extension module only when it was built from the source file
as it is now: the build writes ``<module>.so.sha256`` (the SHA-256 of the ``.py`` it
compiled and of its augmenting ``.pxd``, if any: :func:`source_digest`) beside it, and :class:`SourceFirst`, installed on ``sys.meta_path`` when the
``emu`` or ``hostapps`` package is imported, loads the ``.py`` whenever that digest does not
match (a file edited since the build) or when ``SYMPHONY_EMU_PURE=1`` is set. So an edited
source is never shadowed by a stale build, and ``SYMPHONY_EMU_PURE=1`` gives the reference
path. :func:`status` says which modules are compiled and in use.

The P4 pipeline's generated code (``emu.embedded.runtime.Pipeline``: the ``_ingress`` and
``_egress`` functions that codegen writes for a program at run time) is compiled the same way,
for the programs the build is given (the shipped ``p4/symphony.p4``): :func:`pipeline_module_source`
wraps the generated source, unchanged, in a factory ``make(ns)`` that binds the names the code
uses from its namespace (the tables, registers, counters, ``_rng``, ... of one switch) as closure
variables and returns the two functions; the build compiles that module into
``build/pipelines/`` under a name with the SHA-256 of its source. :func:`pipeline_functions`
uses it only when a module of exactly that source was built (any change of the generated code,
of codegen or of the program, is another digest: the ``exec``'d functions run) and
``SYMPHONY_EMU_PURE`` is not ``1``. The compiled functions call the same objects in the same
order, so the results are the same bit for bit. The module also declares C types for the locals
where that provably gives the same values (:func:`typed_locals`, from the value ranges codegen
records for its storage): header fields, metadata and P4 locals then compute in C.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

#: Modules the build compiles (dotted names; each is one ``.py`` file of this repository).
MODULES: tuple[str, ...] = (
    "emu.embedded.link",
    "emu.embedded.tm",
    "emu.embedded.core",
    "emu.embedded.runtime",
    "emu.embedded.tables",
    "emu.vtime.events",
    "emu.vtime.network",
    "emu.vtime.hosts",
    "emu.vtime.frames",
    "emu.vtime.hugepages",
    "hostapps.rank",
    "hostapps.transport",
    "hostapps.ratecontrol",
    "hostapps.collectives",
    "hostapps.wire",
)
#: Folder of the compiled P4 pipelines (``<name>.so`` and ``<name>.so.sha256``; ignored by git).
PIPELINE_DIR = Path(__file__).resolve().parents[1] / "build" / "pipelines"
#: Prefix of a compiled pipeline's module name (then the first 24 hex digits of its source's SHA-256).
PIPELINE_PREFIX = "_p4pipe_"
#: Environment variable that forces the pure-Python modules (``1``).
PURE_ENV = "SYMPHONY_EMU_PURE"
#: Suffix of the file that records the source digest of an extension module.
DIGEST_SUFFIX = ".sha256"
#: Key of the generated code's namespace that holds codegen's value ranges of its vars
#: (emu.embedded.codegen.VAR_RANGES; not imported: this module is imported first)
VAR_RANGES = "p4:var_ranges"
#: Key of the vars whose bounds the generated code keeps by construction (emu.embedded.codegen.VAR_BOUNDS)
VAR_BOUNDS = "p4:var_bounds"
#: Key of the typed ingress->egress state (emu.embedded.codegen.STATE: ``{"fields", "source", "deparsers"}``),
#: and the names of its class and constructor in the compiled module (codegen.STATE_CLASS, STATE_NEW)
STATE = "p4:state"
STATE_CLASS, STATE_NEW = "_P4State", "_p4state"
#: The frame a generated function parses: always a ``bytes`` (``Pipeline`` passes one to ``_ingress``
#: and egress gets it back in the state tuple), so the compiled build reads ``_pkt[i]`` as a C byte
PACKET_VAR = "_pkt"


_ROOT = Path(__file__).resolve().parents[1]


def _module_py(name: str) -> Path:
    """The ``.py`` of dotted module ``name`` in this repository."""
    return _ROOT.joinpath(*name.split(".")).with_suffix(".py")


def cimports(path: Path) -> list[str]:
    """Modules of :data:`MODULES` that the ``.pxd`` beside ``path`` cimports (``from X cimport ...``,
    ``cimport X``): an extension built with them uses their C declarations and their extensions."""
    pxd = path.with_suffix(".pxd")
    if not pxd.exists():
        return []
    out = []
    for line in pxd.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] == "from" and words[2] == "cimport":
            name = words[1]
        elif len(words) >= 2 and words[0] == "cimport":
            name = words[1].rstrip(",")
        else:
            continue
        if name in MODULES and name not in out:
            out.append(name)
    return out


def source_digest(path: Path) -> str:
    """SHA-256 (hex) of the source the extension of ``path`` is built from.

    That is the ``.py`` at ``path`` and, when one lies beside it, its augmenting ``.pxd``
    (Cython's declarations of types for the same module: ``tm.pxd`` beside ``tm.py``), and the
    ``.pxd`` of every module it cimports (:func:`cimports`, transitively: their C layout is
    compiled in), so an edit of any of them makes an earlier build stale. Without a ``.pxd`` it
    is the SHA-256 of the ``.py`` alone.
    """
    h = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.exists():
        h.update(b"\0augmenting pxd\0")
        h.update(pxd.read_bytes())
        seen: list[str] = []
        todo = cimports(path)
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.append(name)
            dep = _module_py(name)
            h.update(b"\0cimported pxd " + name.encode() + b"\0")
            h.update(dep.with_suffix(".pxd").read_bytes())
            todo += cimports(dep)
    return h.hexdigest()


def extension_path(py: Path) -> Path | None:
    """The extension module built beside ``py`` (``tm.cpython-311-....so``), or None."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        so = py.with_name(py.stem + suffix)
        if so.exists():
            return so
    return None


def usable(py: Path, _seen: tuple[Path, ...] = ()) -> bool:
    """True when an extension module beside ``py`` was built from ``py`` as it is now, and so is
    every module its ``.pxd`` cimports (their extensions are what it calls: one of them running as
    source would leave it nothing to import)."""
    so = extension_path(py)
    if so is None:
        return False
    stamp = so.with_name(so.name + DIGEST_SUFFIX)
    try:
        if stamp.read_text(encoding="ascii").strip() != source_digest(py):
            return False
    except OSError:
        return False
    deps = [_module_py(n) for n in cimports(py)]
    return all(d in _seen or usable(d, (*_seen, py)) for d in deps)


class SourceFirst(importlib.abc.MetaPathFinder):
    """Import a module of :data:`MODULES` from its ``.py`` unless its extension is current."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:  # noqa: ARG002
        if name not in MODULES or not path:
            return None
        leaf = name.rpartition(".")[2]
        for d in path:
            py = Path(d) / f"{leaf}.py"
            if py.exists():
                if os.environ.get(PURE_ENV) == "1" or not usable(py):
                    return importlib.util.spec_from_file_location(name, py)
                return None  # the default finders load the extension module
        return None


def install() -> None:
    """Put :class:`SourceFirst` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFirst())


def run_facts() -> dict[str, Any]:
    """What run.json records of the compiled build (:func:`status`): ``{"compiled": n, "of": len(MODULES),
    "not_compiled": {module: status}}`` (empty when every module is compiled), so that a run that
    fell back to Python source, e.g. after a source edit made a build stale, says so (new-user check,
    2026-12-04: it ran 1.9x slower without a word)."""
    st = status()
    missing = {m: v for m, v in st.items() if v != "compiled"}
    return {"compiled": len(st) - len(missing), "of": len(st), "not_compiled": missing}


def status() -> dict[str, str]:
    """``{module: "compiled" | "source" | "stale build" | "not built"}`` for :data:`MODULES`
    (what an import now loads, given ``SYMPHONY_EMU_PURE``); imports nothing."""
    out = {}
    pure = os.environ.get(PURE_ENV) == "1"
    for name in MODULES:
        py = _module_py(name)
        if extension_path(py) is None:
            out[name] = "not built"
        elif not usable(py):
            out[name] = "stale build"
        else:
            out[name] = "source" if pure else "compiled"
    return out


#: Interval a C ``long long`` expression of the compiled pipeline may take (kept a bit inside the
#: type's range: every intermediate value of a typed expression must lie in it).
_C_MIN, _C_MAX = -(1 << 62), (1 << 62)
#: Operators whose C result equals Python's for operands and result in range.
_C_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift, ast.Mod,
             ast.FloorDiv)


def _interval_op(op: ast.operator, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """The values ``a op b`` may take for ``a``, ``b`` in those intervals, or None (not known: a
    shift by an amount that may be negative or 63 and more, an operator not in ``_C_BINOPS``)."""
    (alo, ahi), (blo, bhi) = a, b
    if isinstance(op, ast.Add):
        return alo + blo, ahi + bhi
    if isinstance(op, ast.Sub):
        return alo - bhi, ahi - blo
    if isinstance(op, ast.Mult):
        p = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
        return min(p), max(p)
    if isinstance(op, ast.LShift | ast.RShift):
        if blo < 0 or bhi > 62:
            return None
        sh = (lambda x, n: x << n) if isinstance(op, ast.LShift) else (lambda x, n: x >> n)
        p = (sh(alo, blo), sh(alo, bhi), sh(ahi, blo), sh(ahi, bhi))
        return min(p), max(p)
    if isinstance(op, ast.Mod | ast.FloorDiv):
        if alo < 0 or blo <= 0:
            return None
        return (0, min(ahi, bhi - 1)) if isinstance(op, ast.Mod) else (alo // bhi, ahi // blo)
    if isinstance(op, ast.BitAnd) and (alo >= 0 or blo >= 0):
        return 0, min(h for lo, h in (a, b) if lo >= 0)
    if isinstance(op, ast.BitAnd | ast.BitOr | ast.BitXor):
        if alo >= 0 and blo >= 0:
            return 0, (1 << max(ahi, bhi).bit_length()) - 1
        k = max(abs(x) for x in (alo, ahi, blo, bhi)).bit_length() + 1
        return -(1 << k), (1 << k) - 1
    return None


def _ev_c(e: ast.AST, ints: set[str], bools: set[str], ranges: dict[str, Any]) -> tuple[str, tuple[int, int]] | None:
    """("int" | "bool", interval) of ``e`` when all of it is C (vars ``ints``/``bools``, small
    literals, the operators of :func:`_interval_op`, comparisons, ``not``, ``and``/``or``, ``x if c
    else y``) and in range, else None."""
    if isinstance(e, ast.Constant):
        if isinstance(e.value, bool):
            return "bool", (int(e.value), int(e.value))
        if isinstance(e.value, int) and _C_MIN <= e.value <= _C_MAX:
            return "int", (e.value, e.value)
        return None
    if isinstance(e, ast.Name):
        return ("int", ranges[e.id]) if e.id in ints else ("bool", (0, 1)) if e.id in bools else None
    if isinstance(e, ast.BinOp):
        a, b = _ev_c(e.left, ints, bools, ranges), _ev_c(e.right, ints, bools, ranges)
        if a is None or b is None or not isinstance(e.op, _C_BINOPS):
            return None
        iv = _interval_op(e.op, a[1], b[1])
        return None if iv is None or iv[0] < _C_MIN or iv[1] > _C_MAX else ("int", iv)
    if isinstance(e, ast.UnaryOp):
        a = _ev_c(e.operand, ints, bools, ranges)
        if a is None:
            return None
        if isinstance(e.op, ast.Not):
            return "bool", (0, 1)
        lo, hi = a[1]
        return "int", ((-hi - 1, -lo - 1) if isinstance(e.op, ast.Invert) else
                       (-hi, -lo) if isinstance(e.op, ast.USub) else (lo, hi))
    if isinstance(e, ast.Compare):
        ok = all(_ev_c(x, ints, bools, ranges) is not None for x in (e.left, *e.comparators)) and not any(
            isinstance(o, ast.Is | ast.IsNot | ast.In | ast.NotIn) for o in e.ops)
        return ("bool", (0, 1)) if ok else None
    if isinstance(e, ast.BoolOp | ast.IfExp):  # (an IfExp's test may be any object: Cython takes its truth)
        parts = [_ev_c(x, ints, bools, ranges) for x in (e.values if isinstance(e, ast.BoolOp) else (e.body, e.orelse))]
        if any(p is None for p in parts):
            return None
        kinds = {p[0] for p in parts}  # type: ignore[index]
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        return kind, (min(p[1][0] for p in parts), max(p[1][1] for p in parts))  # type: ignore[index]
    return None


def _is_bool(e: ast.AST, bools: set[str]) -> bool:
    """Whether ``e`` is a bool in Python (so a C ``bint`` holds the same value)."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, bool)
    if isinstance(e, ast.Name):
        return e.id in bools
    if isinstance(e, ast.Compare):
        return not any(isinstance(o, ast.Is | ast.IsNot | ast.In | ast.NotIn) for o in e.ops)
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, ast.Not)
    if isinstance(e, ast.BoolOp):
        return all(_is_bool(x, bools) for x in e.values)
    if isinstance(e, ast.IfExp):
        return _is_bool(e.body, bools) and _is_bool(e.orelse, bools)
    return False


def typed_locals(source: str, ranges: dict[str, Any], bounds: dict[str, tuple[int, int]] | None = None,
                 wrap: list[tuple[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """Locals of the generated functions in ``source`` that the compiled build may declare as C
    types, with the same values as the Python code: ``{function: {var: "longlong" | "bint"}}``.

    ``ranges`` maps the storage vars CodeGen allocated to ``(lo, hi)``, the values their P4 type
    holds (``bit<W>``: 0 .. 2**W-1; an ``int<W>``: its two's-complement range), or ``"bool"``.
    A var is declared when its range fits a C ``long long`` and every expression Cython would
    then evaluate in C (its operands typed vars and small literals) provably stays in
    [-2**62, 2**62] with operators whose C result is Python's (``+ - * & | ^``, shifts by 0-62;
    not ``/ **``; ``%`` and ``//`` of a non-negative value by a positive one), and a value
    assigned to it from such an expression lies in its range and is no bool; a temporary that is
    no storage (a checksum's sum, a select key, an index) counts when every value assigned to it
    is such an expression, with their range; a ``bool`` var only when every value assigned to it
    is a bool (a literal, a comparison, ``not``, another such var) or comes from the egress state
    tuple; a var of ``bounds`` (``{var: (lo, hi)}``: values the code keeps in those bounds by
    construction, as ``_pos``) as a storage var of that range whose stores are not checked against
    it; :data:`PACKET_VAR` as ``bytes`` where it is a parameter or comes from the egress state
    tuple and is assigned nothing else. Anything else stays a Python object,
    so C arithmetic never wraps where Python's integers would grow: the results are the same bit
    for bit. An assignment from a Python object (a struct field, a table's action data, a
    register) is converted with Cython's overflow check; that its value lies in the var's range is
    codegen's invariant (every store to a var of its storage is of the var's type).

    With ``wrap`` (a list), an operation of C operands whose C result could leave that interval
    (the ECMP hash's ``src << 32``) does not make its vars Python objects: it is appended to ``wrap``
    as ``(its source, the same operation with its left operand a Python object, (cython.cast(object,
    ...) op ...))``, which the compiled module computes with Python's operator instead (:func:`_wrapped`);
    its vars stay C everywhere else (the checksum over the same addresses).
    """
    tree = ast.parse(source)
    out: dict[str, dict[str, str]] = {}
    bounds = bounds or {}
    storage = {**ranges, **bounds}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        ranges = storage  # this function's temporaries are added below
        params = {a.arg for a in fn.args.args}
        stores: dict[str, list[tuple[str, ast.AST | None]]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        stores.setdefault(t.id, []).append(("expr", node.value))
                    elif isinstance(t, ast.Tuple):
                        src = "state" if isinstance(node.value, ast.Name) and node.value.id == "_st" else "object"
                        for el in t.elts:
                            if isinstance(el, ast.Name):
                                stores.setdefault(el.id, []).append((src, None))
                    else:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                                stores.setdefault(n.id, []).append(("other", None))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                stores.setdefault(node.target.id, []).append(
                    ("expr", ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op, right=node.value)))
            elif isinstance(node, ast.For | ast.With | ast.NamedExpr | ast.comprehension | ast.ExceptHandler):
                for n in ast.walk(node.target if hasattr(node, "target") else node):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        stores.setdefault(n.id, []).append(("other", None))
        ints = {v for v in stores if v not in params and isinstance(ranges.get(v), tuple)
                and _C_MIN <= ranges[v][0] and ranges[v][1] <= _C_MAX}
        bools = {v for v in stores if v not in params and ranges.get(v) == "bool"}
        # temporaries (no storage of codegen's: a checksum's sum, a select key, an index) assigned
        # only from C expressions get the union of those values as their range, level by level
        fn_ranges = dict(ranges)
        temps: set[str] = set()
        for _round in range(8):
            ivs = {}
            for v, sts in stores.items():
                if v in params or v in ranges or not all(k == "expr" for k, _e in sts):
                    continue
                rs = [_ev_c(e, ints | temps, bools, fn_ranges) for _k, e in sts]
                if all(r is not None and r[0] == "int" for r in rs):
                    lo, hi = min(r[1][0] for r in rs), max(r[1][1] for r in rs)  # type: ignore[index]
                    if _C_MIN <= lo and hi <= _C_MAX:
                        ivs[v] = (lo, hi)
            if all(fn_ranges.get(v) == iv for v, iv in ivs.items()) and set(ivs) == temps:
                break
            temps = set(ivs)
            fn_ranges = {**ranges, **ivs}
        else:
            temps, fn_ranges = set(), dict(ranges)
        ranges = fn_ranges
        ints |= temps
        while True:
            bad: set[str] = set()
            cvars = ints | bools
            wide = []
            for node in ast.walk(fn):  # a C operation out of range or not Python's: its vars stay Python's
                if (isinstance(node, ast.BinOp) and _ev_c(node, ints, bools, ranges) is None
                        and _ev_c(node.left, ints, bools, ranges) is not None
                        and _ev_c(node.right, ints, bools, ranges) is not None):
                    seg = ast.get_source_segment(source, node) if wrap is not None else None
                    if seg:  # (or the operation is Python's: wrapped below)
                        py = ast.BinOp(left=ast.Call(func=ast.Attribute(value=ast.Name(id="cython", ctx=ast.Load()),
                                                                        attr="cast", ctx=ast.Load()),
                                                     args=[ast.Name(id="object", ctx=ast.Load()), node.left],
                                                     keywords=[]), op=node.op, right=node.right)
                        wide.append((seg, f"({ast.unparse(py)})"))
                        continue
                    bad.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in cvars)
            for v in ints:
                for kind, e in stores[v]:
                    if kind == "other":
                        bad.add(v)
                    elif v in bounds:  # kept in its bounds by the code, whatever is stored
                        continue
                    elif kind == "expr":
                        r = _ev_c(e, ints, bools, ranges)
                        if (r is None and v in temps) or (r is not None and (r[0] != "int" or not (
                                ranges[v][0] <= r[1][0] and r[1][1] <= ranges[v][1]))):
                            bad.add(v)
                    elif v in temps:
                        bad.add(v)
            for v in bools:
                for kind, e in stores[v]:
                    if kind in ("other", "object") or (kind == "expr" and not _is_bool(e, bools)):
                        bad.add(v)
            if not bad & cvars:
                break
            ints -= bad
            bools -= bad
        if wrap is not None:
            wrap += wide
        out[fn.name] = {**{v: "longlong" for v in sorted(ints)}, **{v: "bint" for v in sorted(bools)}}
        pkt = stores.get(PACKET_VAR, [])
        if (PACKET_VAR in params and not pkt) or (PACKET_VAR not in params and pkt
                                                  and all(k == "state" for k, _e in pkt)):
            out[fn.name][PACKET_VAR] = "bytes"
    return out


@functools.lru_cache(maxsize=64)
def _typed(source: str, ranges: frozenset, bounds: frozenset = frozenset()) -> tuple[tuple[str, tuple], ...]:
    """:func:`typed_locals` as ``((function, ((var, type), ...)), ...)``, cached per generated source."""
    try:
        typed = typed_locals(source, dict(ranges), dict(bounds))
    except (SyntaxError, ValueError, TypeError, RecursionError):  # never a reason to fail a pipeline
        return ()
    return tuple((fn, tuple(d.items())) for fn, d in typed.items())


@functools.lru_cache(maxsize=64)
def _typed_wrapped(source: str, ranges: frozenset, bounds: frozenset = frozenset()
                   ) -> tuple[tuple[tuple[str, tuple], ...], tuple[tuple[str, str], ...]]:
    """:func:`typed_locals` with ``wrap`` (its operations out of a C range computed in Python), cached:
    ``(((function, ((var, type), ...)), ...), ((source, wrapped source), ...))``."""
    wrap: list[tuple[str, str]] = []
    try:
        typed = typed_locals(source, dict(ranges), dict(bounds), wrap)
    except (SyntaxError, ValueError, TypeError, RecursionError):  # never a reason to fail a pipeline
        return (), ()
    return tuple((fn, tuple(d.items())) for fn, d in typed.items()), tuple(dict.fromkeys(wrap))


def _wrapped(source: str, wrap: tuple[tuple[str, str], ...]) -> str:
    """``source`` with each operation of ``wrap`` (:func:`typed_locals`) written as its wrapped form
    (its left operand a Python object, so Cython computes it with Python's operator: the same value)."""
    for seg, new in sorted(wrap, key=lambda sw: -len(sw[0])):
        source = source.replace(seg, new)
    return source


def _ctype(t: str) -> str:
    """The Cython pure-mode name of a :func:`typed_locals` type."""
    return t if t in ("bytes", "object", STATE_CLASS, CODE_CLASS) else "cython." + t


def _locals_line(d: dict[str, str]) -> str:
    return "@cython.locals(" + ", ".join(f"{v}={_ctype(t)}" for v, t in d.items()) + ")"


def _state_lines(fields: tuple[str, ...], types: dict[str, str] | None) -> list[str]:
    """The typed state's class and constructor (module level; :data:`STATE`). ``types``: the C
    type of each field (egress's :func:`typed_locals`, the types egress converted the tuple's values
    to; a field egress keeps as an object stays one); None: the same code without declarations."""
    lines = []
    if types is not None:
        lines += ["@cython.freelist(256)", "@cython.cclass"]
    lines += [f"class {STATE_CLASS}:", "    \"\"\"A packet's state from ingress to egress (one per packet).\"\"\""]
    if types is not None:
        lines += [f"    {v} = cython.declare({_ctype(types.get(v, 'object'))})" for v in fields]
    lines += ["", ""]
    if types is not None:
        lines += ["@cython.cfunc", _locals_line({**{v: types.get(v, "object") for v in fields}, "_s": STATE_CLASS})]
    lines.append(f"def {STATE_NEW}({', '.join(fields)}):")
    lines.append(f"    _s = {STATE_CLASS}.__new__({STATE_CLASS})")
    lines += [f"    _s.{v} = {v}" for v in fields]
    lines += ["    return _s", "", ""]
    return lines


#: Bytes of a struct format's items (:func:`_deparser_lines`: the codes codegen's deparsers use)
_ITEM_BYTES = {"B": 1, "H": 2, "I": 4}


def _deparser_lines(deparsers: dict[str, str], declare: bool) -> list[str]:
    """The typed source's deparsers (``STATE["deparsers"]``, ``{name: struct format}``, module level):
    ``name(_pkt, _t, *args)`` returns ``struct.pack(format, *args) + _pkt[_t:]``. Compiled, one bytes
    object of the whole frame is allocated, the items' bytes written into it big-endian (the format's
    "!" order, no padding) and the rest of ``_pkt`` copied after them: one allocation and one copy
    where the expression makes three objects and copies the rest twice. An argument out of its item's
    range (or ``_t < 0``) runs the expression, so struct's error is the same. ``declare=False``: the
    expression only (no Cython)."""
    if not deparsers:
        return []
    lines = ["import struct as _struct", ""]
    if declare:
        lines += ["if cython.compiled:",
                  "    from cython.cimports.cpython.bytes import PyBytes_AS_STRING, PyBytes_FromStringAndSize",
                  "    from cython.cimports.libc.string import memcpy", ""]
    for name, fmt in deparsers.items():
        codes = fmt.lstrip("!")
        args = [f"_a{i}" for i in range(len(codes))]
        expr = f"{name}_struct.pack({', '.join(args)}) + _pkt[_t:]"
        lines += [f"{name}_struct = _struct.Struct({fmt!r})", ""]
        if not declare:
            lines += [f"def {name}(_pkt, _t, {', '.join(args)}):", f"    return {expr}", "", ""]
            continue
        size = sum(_ITEM_BYTES[c] for c in codes)
        types = {"_pkt": "bytes", "_t": "Py_ssize_t", **dict.fromkeys(args, "longlong"), "_n": "Py_ssize_t",
                 "_o": "bytes", "_q": "p_uchar"}
        # a value outside 0 .. 2**(8 * bytes) - 1 has bits left above its item's (a negative one
        # too: >> keeps the sign): one C shift each, where a literal above a C int's range (Cython
        # makes 0xffffffff a Python object) would box the argument for a Python comparison
        out_of_range = " or ".join(f"({a} >> {8 * _ITEM_BYTES[c]}) != 0" for a, c in zip(args, codes, strict=True))
        lines += ["@cython.cfunc", _locals_line(types),
                  f"def {name}(_pkt, _t, {', '.join(args)}):",
                  f"    if not cython.compiled or _t < 0 or {out_of_range}:",
                  f"        return {expr}",
                  "    _n = len(_pkt) - _t",
                  "    if _n < 0:",
                  "        _n = 0",
                  f"    _o = PyBytes_FromStringAndSize(cython.NULL, {size} + _n)",
                  "    _q = cython.cast(cython.p_uchar, PyBytes_AS_STRING(_o))"]
        off = 0
        for a, c in zip(args, codes, strict=True):
            nb = _ITEM_BYTES[c]
            for i in range(nb):
                sh = 8 * (nb - 1 - i)
                lines.append(f"    _q[{off}] = ({a} >> {sh}) & 0xff" if sh else f"    _q[{off}] = {a} & 0xff")
                off += 1
        lines += [f"    memcpy(_q + {size}, cython.cast(cython.p_uchar, PyBytes_AS_STRING(_pkt)) + _t, _n)",
                  "    return _o", "", ""]
    return lines


#: Largest literal Cython types as a C integer (beyond a C ``int`` it makes the literal a Python object:
#: it may not fit a C ``long`` everywhere), so ``x & 0xffffffff`` of a typed ``x`` would box ``x`` and run
#: Python's ``&`` (:func:`_c_constants`)
_C_INT_LITERAL_MAX = (1 << 31) - 1
#: Prefix of the module-level C constants of :func:`_c_constants` (then the value in decimal)
C_CONST_PREFIX = "_CK"


def _all_c(e: ast.AST, cvars: set[str]) -> bool:
    """Whether every part of expression ``e`` is C in the compiled build: vars of ``cvars`` (typed
    ``long long`` or ``bint``), int literals within a ``long long``'s range kept by
    :func:`typed_locals` (or bools), and the operators :func:`typed_locals` lets Cython compute in C
    (``_C_BINOPS``, unary ``- + ~ not``, comparisons but ``is``/``in``, ``and``/``or``, ``x if c else y``)."""
    if isinstance(e, ast.Name):
        return e.id in cvars
    if isinstance(e, ast.Constant):
        return type(e.value) is bool or (type(e.value) is int and _C_MIN <= e.value <= _C_MAX)
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, _C_BINOPS) and _all_c(e.left, cvars) and _all_c(e.right, cvars)
    if isinstance(e, ast.UnaryOp):
        return _all_c(e.operand, cvars)
    if isinstance(e, ast.Compare):
        return not any(isinstance(o, ast.Is | ast.IsNot | ast.In | ast.NotIn) for o in e.ops) and all(
            _all_c(x, cvars) for x in (e.left, *e.comparators))
    if isinstance(e, ast.BoolOp):
        return all(_all_c(x, cvars) for x in e.values)
    if isinstance(e, ast.IfExp):
        return all(_all_c(x, cvars) for x in (e.test, e.body, e.orelse))
    return False


def _c_constants(source: str, typed: dict[str, dict[str, str]]) -> tuple[str, list[int]]:
    """``source`` with every int literal above a C ``int`` (:data:`_C_INT_LITERAL_MAX`, up to 2**62)
    that is an operand of an all-C operation or comparison (:func:`_all_c`, with the C vars of
    ``typed``, :func:`typed_locals`) replaced by the name of a module-level C ``long long`` constant
    of that value (:data:`C_CONST_PREFIX` + value), and those values. The same value in the same
    operation: Cython then computes it in C instead of boxing the other operand for Python's operator
    with a Python int literal (``_flow_index & 0xffffffff``: a box, Python's ``&``, an unbox). Literals
    in Python expressions stay (there a C constant would be boxed at each use)."""
    tree = ast.parse(source)
    spans: list[tuple[int, int, int, int]] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        cvars = {v for v, t in typed.get(fn.name, {}).items() if t in ("longlong", "bint")}
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp):
                operands = [node.left, node.right]
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            else:
                continue
            if not _all_c(node, cvars):
                continue
            for c in operands:
                if (isinstance(c, ast.Constant) and type(c.value) is int and _C_INT_LITERAL_MAX < c.value <= _C_MAX
                        and c.end_lineno == c.lineno):
                    spans.append((c.lineno, c.col_offset, c.end_col_offset or c.col_offset, c.value))
    if not spans:
        return source, []
    lines = source.splitlines(keepends=True)
    for lineno, start, end, value in sorted(set(spans), reverse=True):
        ln = lines[lineno - 1]
        lines[lineno - 1] = ln[:start] + f"{C_CONST_PREFIX}{value}" + ln[end:]
    return "".join(lines), sorted({v for *_x, v in spans})


#: The table lookups the generated code calls as bound methods (codegen's ``CodeGen.method``): the
#: compiled module calls them on the table, typed (:func:`_typed_bindings`)
_TABLE_LOOKUPS = ("lookup", "lookup_lpm", "lookup_scan")
#: The module the compiled pipeline cimports ``Table`` from (its ``.pxd`` is the C layout it is built against)
TABLES_MODULE = "emu.embedded.tables"


def _typed_bindings(ns: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """What the compiled module binds typed of the generated code's namespace ``ns``:
    ``({name: "Table" | "dict"}, {callee: replacement})``. A table (``emu.embedded.tables.Table``)
    is a typed local of ``make``, so ``_T_x.default`` is a C member read; a bound lookup of a table
    bound in ``ns`` (``_T_x_lookup_lpm_7 = _T_x.lookup_lpm``, codegen's ``CodeGen.method``) is called
    as ``_CTable.lookup_lpm(_T_x, ...)``, a C call of Table's cpdef method without the override lookup
    (the method the bound one is: the table is a Table, not of a subclass, with no such attribute of
    its own); an exact table's bound ``get``
    (``_D_x_get_8 = _X_x.get``, its dict, cleared but never replaced) as ``_X_x.get(...)`` on the
    dict typed ``dict`` (``PyDict_GetItem`` in C). The same objects and the same calls."""
    from emu.embedded.tables import Table

    by_id = {id(v): n for n, v in ns.items() if n.isidentifier() and (type(v) is Table or type(v) is dict)}
    types: dict[str, str] = {}
    calls: dict[str, str] = {}
    for n, v in ns.items():
        if not n.isidentifier():
            continue
        if type(v) is Table:
            types[n] = "Table"
            continue
        owner = getattr(v, "__self__", None)
        meth = getattr(v, "__name__", None)
        if owner is None or id(owner) not in by_id:
            continue
        if type(owner) is Table and meth in _TABLE_LOOKUPS and meth not in getattr(owner, "__dict__", {}):
            calls[n] = f"_CTable.{meth}({by_id[id(owner)]}, "
        elif type(owner) is dict and meth == "get":
            calls[n] = f"{by_id[id(owner)]}.get("
            types[by_id[id(owner)]] = "dict"
    return types, calls


def _typed_calls(source: str, calls: dict[str, str]) -> str:
    """``source`` with every call ``name(...)`` of a ``calls`` name written as ``calls[name]...)``
    (``calls[name]`` ends in ``(``: ``f(``, or ``f(obj, `` for a call with ``obj`` first)."""
    tree = ast.parse(source)
    spans = [(f.lineno, f.col_offset, (f.end_col_offset or f.col_offset) + 1, calls[f.id])
             for node in ast.walk(tree) if isinstance(node, ast.Call)
             for f in (node.func,) if isinstance(f, ast.Name) and f.id in calls and f.end_lineno == f.lineno
             and source.splitlines()[f.lineno - 1][f.end_col_offset or 0:].startswith("(")]
    lines = source.splitlines(keepends=True)
    for lineno, start, end, text in sorted(spans, reverse=True):
        ln = lines[lineno - 1]
        lines[lineno - 1] = ln[:start] + text + ln[end:]
    return "".join(lines)


#: The module of the compiled pipeline's C entry points (``PipelineCode``, whose ``.pxd`` layout the
#: generated ``_Code`` is built against)
RUNTIME_MODULE = "emu.embedded.runtime"
#: Name of the C entry points' class in a compiled pipeline, of its factory, and the attribute of the
#: compiled ingress function that carries its instance (``runtime.Pipeline`` reads it)
CODE_CLASS, CODE_NEW, CODE_ATTR = "_Code", "make_code", "_p4code"
#: ``{generated function: (C entry method, the C type of its first parameter, the number of parameters
#: after it that it takes as C integers)}``: runtime.pxd's ``PipelineCode`` signatures
_ENTRIES = {"_ingress": ("ingress_c", "bytes", 2), "_egress": ("egress_c", "object", 6)}


def _masked_only(fn: ast.FunctionDef, names: set[str]) -> bool:
    """Whether every read of ``names`` in ``fn`` is ``name & K`` with ``K`` a literal >= 0: then a C
    ``long long`` of the argument's value gives the same result as Python's int (the mask's bits)."""
    ok: set[int] = set()
    for node in ast.walk(fn):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd) and isinstance(node.left, ast.Name)
                and node.left.id in names and isinstance(node.right, ast.Constant)
                and type(node.right.value) is int and node.right.value >= 0):
            ok.add(id(node.left))
    return all(id(n) in ok for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in names
               and isinstance(n.ctx, ast.Load))


def _entry_lines(source: str, typed: dict[str, dict[str, str]], names: list[str],
                 types: dict[str, str]) -> tuple[list[str], list[int]]:
    """The compiled pipeline's C entry points (module level): a cdef class :data:`CODE_CLASS`, a
    ``runtime.PipelineCode`` whose ``ingress_c``/``egress_c`` are the bodies of ``_ingress``/``_egress``
    of ``source`` (the generated functions, unchanged but for the names of the namespace, read as
    the instance's typed attributes, ``self.name``, and its big literals, :func:`_c_constants`; a
    unicast result of ingress, ``(egress_spec, mcast_grp, length, state)``, is runtime's IngressResult
    of it and the ingress port, made there: ``_unicast_result``), with
    their integer parameters as C ``long long`` and their optional ones at their defaults, and
    :data:`CODE_NEW` ``(_ns)`` that binds the attributes; and the values of the C constants its bodies
    name. Empty when a function is missing or reads an integer parameter otherwise than masked
    (:func:`_masked_only`: the C value would not be Python's)."""
    tree = ast.parse(source)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    if set(_ENTRIES) - set(fns):
        return [], []
    src_lines = source.splitlines()
    used: set[str] = set()
    methods: list[str] = []
    consts: set[int] = set()
    for fname, (meth, first_type, nint) in _ENTRIES.items():
        fn = fns[fname]
        args = [a.arg for a in fn.args.args]
        if len(args) < 1 + nint or len(args) - len(fn.args.defaults) > 1 + nint or fn.args.vararg \
                or fn.args.kwonlyargs or fn.args.kwarg or fn.decorator_list:
            return [], []
        cargs = args[1:1 + nint]
        if not _masked_only(fn, set(cargs)):
            return [], []
        nsn = set(names)
        spans = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id in nsn:
                if not isinstance(node.ctx, ast.Load) or node.end_lineno != node.lineno:
                    return [], []
                spans.append((node.lineno, node.col_offset, node.end_col_offset or node.col_offset, "self." + node.id))
                used.add(node.id)
        if fname == "_ingress":  # a unicast result, (egress_spec, mcast_grp, length, state): runtime's IngressResult
            for node in ast.walk(fn):
                v = node.value if isinstance(node, ast.Return) else None
                if (isinstance(v, ast.Tuple) and len(v.elts) == 4 and v.lineno == v.end_lineno
                        and not any(isinstance(e, ast.Starred) for e in v.elts)
                        and src_lines[v.lineno - 1][v.col_offset] == "("
                        and src_lines[v.lineno - 1][(v.end_col_offset or 0) - 1] == ")"):
                    spans.append((v.lineno, v.col_offset, v.col_offset + 1, "_CUnicast("))
                    spans.append((v.lineno, (v.end_col_offset or 0) - 1, v.end_col_offset or 0, f", {cargs[0]})"))
        body_first = fn.body[0].lineno
        if isinstance(fn.body[0], ast.Expr) and isinstance(getattr(fn.body[0], "value", None), ast.Constant):
            body_first = fn.body[1].lineno if len(fn.body) > 1 else fn.end_lineno + 1  # skip a docstring
        lines = src_lines[:]
        for lineno, start, end, text in sorted(spans, reverse=True):
            ln = lines[lineno - 1]
            lines[lineno - 1] = ln[:start] + text + ln[end:]
        body = "\n".join(lines[body_first - 1:fn.end_lineno])
        fn_typed = dict(typed.get(fname, {}))
        for a in cargs:
            fn_typed[a] = "longlong"
        body, more = _c_constants("def _f():\n" + body, {"_f": fn_typed})
        consts.update(more)
        body = body.split("\n", 1)[1]
        defaults = dict(zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults, strict=True))
        # the first parameter has the base's type (bytes, object) and is stored into the function's
        # own first local (typed as in the function: the state class, bytes)
        locs = {**fn_typed, "_a0": first_type}
        methods += ["    @cython.ccall", "    " + _locals_line(locs),
                    f"    def {meth}(self, _a0, {', '.join(cargs)}):", f"        {args[0]} = _a0"]
        methods += [f"        {a} = {ast.unparse(d)}" for a, d in defaults.items() if a not in args[:1 + nint]]
        methods += ["    " + ln if ln else "" for ln in body.splitlines()]
        methods.append("")
    attrs = sorted(used)
    ctype = {"Table": "_CTable", "dict": "dict"}
    out = ["@cython.cclass", f"class {CODE_CLASS}(_CCode):",
           '    """The C entry points of this module\'s pipeline (runtime.PipelineCode)."""']
    out += [f"    {n} = cython.declare({ctype.get(types.get(n, ''), 'object')})" for n in attrs]
    out += ["", *methods, "", _locals_line({"_c": CODE_CLASS}), f"def {CODE_NEW}(_ns):", f"    _c = {CODE_CLASS}()"]
    out += [f"    _c.{n} = _ns[{n!r}]" for n in attrs]
    out += ["    return _c", "", ""]
    return out, sorted(consts)


def _pxd_digest(module: str) -> str:
    """The sha256 of ``module``'s ``.pxd`` (hex; "none" without one): a compiled pipeline that cimports
    from it names it in its source, so that another C layout is another module."""
    pxd = _module_py(module).with_suffix(".pxd")
    return hashlib.sha256(pxd.read_bytes()).hexdigest() if pxd.exists() else "none"


def pipeline_module_source(source: str, ns: dict[str, Any], *, declare: bool = True) -> str:
    """The module a compiled pipeline is built from: ``make(_ns)`` binds every name of ``ns``
    (the generated code's globals, ``__builtins__`` and the two functions left out) as a local,
    defines the generated functions ``source`` unchanged as closures, and returns
    ``(_ingress, _egress)``. Each function gets the C types of :func:`typed_locals` as a
    ``@cython.locals`` declaration (from the value ranges codegen recorded in ``ns``, key
    ``emu.embedded.codegen.VAR_RANGES``): only the compiled build sees them, the code is the same.
    Where codegen published a typed state (``ns[STATE]``), the functions are that source's (the
    same code but for the state: a :data:`STATE_CLASS` made by :data:`STATE_NEW`, defined at module
    level by :func:`_state_lines`; its fast deparsers' functions by :func:`_deparser_lines`), declared
    with the types worked out on ``source``.
    ``declare=False``: without them and without the deparsers' C code (what
    :func:`pipeline_module_name` names the module by).

    It is :func:`_module_source` of what it reads of ``ns`` (:func:`_source_inputs`), computed once
    per distinct inputs: every switch of a network runs the same program, whose generated code and
    namespace names are the same, so a network's switches share one computation."""
    return _module_source(source, declare, *_source_inputs(ns, declare))


def _source_inputs(ns: dict[str, Any], declare: bool) -> tuple:
    """Everything :func:`_module_source` reads of a pipeline's namespace ``ns``, as hashable values
    (its cache key, with the source and ``declare``): the names ``make`` binds (sorted); the value
    ranges (:data:`VAR_RANGES`, those not None) and bounds (:data:`VAR_BOUNDS`), as frozensets (they
    are read as dicts); the typed state (:data:`STATE`: its fields, source and deparsers, in their
    order) or None; and with ``declare``, :func:`_typed_bindings` of ``ns`` (as items, in their
    order) and the digests of the ``.pxd`` files whose C layouts the source names (:func:`_pxd_digest`,
    read now: an edited ``.pxd`` is another key). So two namespaces with equal inputs give the same
    module source, which is exactly what :func:`_module_source` would compute again."""
    names = tuple(sorted(n for n in ns if n.isidentifier() and n not in ("__builtins__", "_ingress", "_egress", "_ns")))
    ranges = frozenset((k, v) for k, v in (ns.get(VAR_RANGES) or {}).items() if v is not None)
    bounds = frozenset((ns.get(VAR_BOUNDS) or {}).items())
    st = ns.get(STATE)
    state = (tuple(st["fields"]), st["source"], tuple((st.get("deparsers") or {}).items())) if st else None
    if not declare:
        return names, ranges, bounds, state, (), (), "", ""
    types, calls = _typed_bindings(ns)
    return (names, ranges, bounds, state, tuple(types.items()), tuple(calls.items()),
            _pxd_digest(TABLES_MODULE), _pxd_digest(RUNTIME_MODULE))


@functools.lru_cache(maxsize=16)
def _module_source(source: str, declare: bool, names: tuple[str, ...], ranges: frozenset, bounds: frozenset,
                   state: tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]] | None,
                   types_items: tuple[tuple[str, str], ...], calls_items: tuple[tuple[str, str], ...],
                   tables_pxd: str, runtime_pxd: str) -> str:
    """:func:`pipeline_module_source` of its inputs (:func:`_source_inputs`), a pure function of its
    arguments (cached): ``types_items``/``calls_items`` are :func:`_typed_bindings`' two dicts as
    items, ``tables_pxd``/``runtime_pxd`` the ``.pxd`` digests the source names ("" without
    ``declare``, which names none)."""
    typed_w, wrap = _typed_wrapped(source, ranges, bounds) if declare else ((), ())
    typed = {fn: dict(d) for fn, d in typed_w}
    head: list[str] = []
    if state:
        fields, state_source, deparsers = state
        egress = typed.get("_egress", {})
        head = _state_lines(fields, egress if declare else None)
        head += _deparser_lines(dict(deparsers), declare)
        source = state_source
        if declare:
            typed["_egress"] = {**egress, "_st": STATE_CLASS}
    decl = {fn: _locals_line(d) for fn, d in typed.items() if d}
    consts: list[int] = []
    make_decl: list[str] = []
    if declare:
        source = _wrapped(source, wrap)
        source, consts = _c_constants(source, typed)
        head = [*(f"{C_CONST_PREFIX}{v} = cython.declare(cython.longlong, {v})" for v in consts),
                *([""] if consts else []), *head]
        types, calls = dict(types_items), dict(calls_items)
        source = _typed_calls(source, calls)
        if types:
            # the C layout of Table this module is built against: another tables.pxd is another source
            head = [f"# Table's C layout: {TABLES_MODULE} .pxd sha256 {tables_pxd}",
                    "if cython.compiled:",
                    f"    from cython.cimports.{TABLES_MODULE} import Table as _CTable",
                    "else:",
                    f"    from {TABLES_MODULE} import Table as _CTable", "", *head]
            make_decl = ["@cython.locals(" + ", ".join(
                f"{n}={'_CTable' if t == 'Table' else t}" for n, t in sorted(types.items())) + ")"]
        entry, more = _entry_lines(source, typed, list(names), types)
        if entry:
            # the C layout of PipelineCode, whose methods _Code overrides: another runtime.pxd is another source
            head += [f"# PipelineCode's C layout: {RUNTIME_MODULE} .pxd sha256 {runtime_pxd}",
                     "if cython.compiled:",
                     f"    from cython.cimports.{RUNTIME_MODULE} import PipelineCode as _CCode",
                     f"    from cython.cimports.{RUNTIME_MODULE} import _unicast_result as _CUnicast",
                     "else:",
                     f"    from {RUNTIME_MODULE} import IngressResult as _IngressResult",
                     f"    from {RUNTIME_MODULE} import PipelineCode as _CCode", "",
                     "    def _CUnicast(egress_spec, mcast_grp, packet_length, state, port):",
                     "        return _IngressResult(egress_spec, mcast_grp, packet_length, state, port)", "",
                     *(f"{C_CONST_PREFIX}{v} = cython.declare(cython.longlong, {v})" for v in more if v not in consts),
                     "", *entry]
    lines = ["# generated by hostapps.compiled.pipeline_module_source: a P4 pipeline's generated code",
             *(["import cython"] if decl or consts or make_decl else []), "", *head, *make_decl, "def make(_ns):"]
    lines += [f"    {n} = _ns[{n!r}]" for n in names]
    for ln in source.splitlines():
        if ln.startswith("def ") and ln[4:].split("(", 1)[0] in decl:
            lines.append("    " + decl[ln[4:].split("(", 1)[0]])
        lines.append(("    " + ln) if ln else "")
    lines += ["    return _ingress, _egress", ""]
    return "\n".join(lines)


def pipeline_module_name(bare_source: str) -> str:
    """The extension module name of a compiled pipeline: :data:`PIPELINE_PREFIX` + 24 hex digits of
    the SHA-256 of ``bare_source``, its module source without the C declarations and C code
    (:func:`pipeline_module_source` with ``declare=False``; so :func:`pipeline_functions` finds a
    build before it works them out; the build's stamp, the digest of the whole source, says whether
    they are the same)."""
    return PIPELINE_PREFIX + hashlib.sha256(bare_source.encode()).hexdigest()[:24]


def pipeline_extension(name: str) -> Path | None:
    """The built extension module ``name`` in :data:`PIPELINE_DIR` whose stamp holds the full
    digest of the module source it was built from, or None."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        so = PIPELINE_DIR / (name + suffix)
        if so.exists():
            return so
    return None


_pipeline_modules: dict[str, Any] = {}


def pipeline_functions(source: str, ingress: Any, egress: Any) -> tuple[Any, Any, str]:
    """The functions a pipeline runs: the compiled ones of ``source`` if built (see the module
    docstring), else ``ingress`` and ``egress`` (the ``exec``'d generated code, whose globals are
    the namespace). Returns ``(ingress, egress, status)``, status ``"compiled"``, ``"source"``
    (``SYMPHONY_EMU_PURE=1``) or ``"not built"``. A build that does not load is ignored."""
    ns = ingress.__globals__
    name = pipeline_module_name(pipeline_module_source(source, ns, declare=False))
    so = pipeline_extension(name)
    if so is None:
        return ingress, egress, "not built"
    if os.environ.get(PURE_ENV) == "1":
        return ingress, egress, "source"
    if not (usable(_module_py(TABLES_MODULE)) and usable(_module_py(RUNTIME_MODULE))):
        return ingress, egress, "not built"  # it cimports Table and PipelineCode: only with those compiled, as built
    module_source = pipeline_module_source(source, ns)  # with the C declarations (typed_locals, cached)
    digest = hashlib.sha256(module_source.encode()).hexdigest()
    mod = _pipeline_modules.get(digest)
    if mod is None:
        try:
            stamp = so.with_name(so.name + DIGEST_SUFFIX).read_text(encoding="ascii").strip()
            if stamp != digest:
                return ingress, egress, "not built"
            loader = importlib.machinery.ExtensionFileLoader(name, str(so))
            spec = importlib.util.spec_from_file_location(name, so, loader=loader)
            assert spec is not None
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
        except (OSError, ImportError, AssertionError, ValueError, TypeError):  # (a type import that does not match)
            return ingress, egress, "not built"
        _pipeline_modules[digest] = mod
    ing, eg = mod.make(ns)
    new = getattr(mod, CODE_NEW, None)
    if new is not None:  # the C entry points (runtime.Pipeline calls them when the function carries them)
        setattr(ing, CODE_ATTR, new(ns))
    return ing, eg, "compiled"


install()
