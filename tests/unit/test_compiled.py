"""The optional compiled hot modules (hostapps.compiled, scripts/build_compiled.py) give the
pure-Python results bit for bit, and a stale build is never used."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostapps import compiled

REPO = Path(__file__).resolve().parents[2]


def _run(tmp: Path, pure: bool) -> tuple[Path, str, bool]:
    """Run dc-leafspine-16 in a child (pure or compiled); its folder, its pipelines' code_status and whether
    its arenas were in huge pages."""
    out = tmp / ("pure" if pure else "compiled")
    env = dict(os.environ, SYMPHONY_EMU_PURE="1" if pure else "0", SYMPHONY_EMU_PARALLEL="1")
    code = ("import sys; from hostapps import compiled; from emu import runner; from emu.embedded import runtime; "
            "st = compiled.status(); want = 'source' if sys.argv[2] == '1' else 'compiled'; "
            "assert all(v == want for v in st.values()), st; "
            "seen = set(); functions = compiled.pipeline_functions; "  # what every Pipeline runs: its code_status
            "compiled.pipeline_functions = lambda *a: (lambda r: (seen.add(r[2]), r)[1])(functions(*a)); "
            "r = runner.run('topologies/dc-leafspine-16.yaml', mode='sim', iterations=1, size=32768, out=sys.argv[1]); "
            "assert len(seen) == 1, seen; print('PIPELINE', *seen); "  # the P4 pipeline's generated code
            "from emu.vtime import hugepages; print('HUGEPAGES', hugepages.stats()['chunks'] > 0); "  # its arenas
            "sys.exit(0 if r.ok else 1)")
    proc = subprocess.run([sys.executable, "-c", code, str(out), "1" if pure else "0"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    status = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("PIPELINE ")]
    huge = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("HUGEPAGES ")]
    return out, status[-1], huge[-1] == "True"


@pytest.mark.timeout(300)
def test_compiled_modules_give_the_pure_results_bit_for_bit(tmp_path: Path) -> None:
    st = compiled.status()
    if any(v != "compiled" for v in st.values()):
        pytest.skip(f"compiled modules not built or stale (scripts/build_compiled.py): {st}")
    (a, pipe_a, huge_a), (b, pipe_b, huge_b) = _run(tmp_path, pure=True), _run(tmp_path, pure=False)
    # the compiled run's objects lay in huge-page arenas (emu.vtime.hugepages), the pure run's could not
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    want = thp.exists() and "[never]" not in thp.read_text() and os.environ.get("SYMPHONY_EMU_HUGEPAGES") != "0"
    assert (huge_a, huge_b) == (False, want), (huge_a, huge_b)
    # the P4 pipeline: "source" on the pure side means a build of this very generated code exists,
    # and then the other side must have run it; "not built" (codegen changed since the build) on both
    assert (pipe_a, pipe_b) in (("source", "compiled"), ("not built", "not built")), (pipe_a, pipe_b)
    for name in ("summary.json", "cct.csv", "steps.csv"):
        assert (a / name).read_text() == (b / name).read_text(), name
    for scheme in ("baseline", "symphony"):
        files = sorted(p.name for p in (a / scheme).iterdir() if p.suffix == ".jsonl" or p.name == "counters.json")
        assert files
        for f in files:
            assert (a / scheme / f).read_bytes() == (b / scheme / f).read_bytes(), (scheme, f)


def test_a_build_is_used_only_while_its_source_is_unchanged(tmp_path: Path) -> None:
    import importlib.machinery

    py = tmp_path / "mod.py"
    py.write_text("X = 1\n")
    assert not compiled.usable(py)  # nothing built
    so = tmp_path / ("mod" + importlib.machinery.EXTENSION_SUFFIXES[0])
    so.write_bytes(b"not really an extension")
    assert not compiled.usable(py)  # built, digest missing
    stamp = so.with_name(so.name + compiled.DIGEST_SUFFIX)
    stamp.write_text(compiled.source_digest(py) + "\n")
    assert compiled.usable(py)
    py.write_text("X = 2\n")  # edited after the build: the source wins
    assert not compiled.usable(py)
    stamp.write_text(compiled.source_digest(py) + "\n")
    assert compiled.usable(py)
    py.with_suffix(".pxd").write_text("cdef int X\n")  # an augmenting .pxd added after the build
    assert not compiled.usable(py)
    stamp.write_text(compiled.source_digest(py) + "\n")
    assert compiled.usable(py)
    py.with_suffix(".pxd").write_text("cdef long X\n")  # and edited after the build
    assert not compiled.usable(py)


def test_a_build_needs_the_builds_of_what_its_pxd_cimports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """b.pxd cimports a: b's build is usable only while a's is (a's .py edited: both run as source),
    and b's digest covers a.pxd (a's C layout is compiled into b)."""
    import importlib.machinery

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    monkeypatch.setattr(compiled, "_ROOT", tmp_path)
    monkeypatch.setattr(compiled, "MODULES", ("pkg.a", "pkg.b"))
    (pkg / "a.py").write_text("class A: pass\n")
    (pkg / "a.pxd").write_text("cdef class A:\n    cdef public long x\n")
    (pkg / "b.py").write_text("from pkg.a import A\n")
    (pkg / "b.pxd").write_text("from pkg.a cimport A\n")
    assert compiled.cimports(pkg / "b.py") == ["pkg.a"] and compiled.cimports(pkg / "a.py") == []

    def build(name: str) -> None:
        py = pkg / f"{name}.py"
        so = pkg / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
        so.write_bytes(b"")
        so.with_name(so.name + compiled.DIGEST_SUFFIX).write_text(compiled.source_digest(py) + "\n")

    build("a")
    build("b")
    assert compiled.usable(pkg / "a.py") and compiled.usable(pkg / "b.py")
    (pkg / "a.py").write_text("class A:\n    pass\n")  # a edited after the build
    assert not compiled.usable(pkg / "a.py") and not compiled.usable(pkg / "b.py")
    build("a")
    assert compiled.usable(pkg / "b.py")
    (pkg / "a.pxd").write_text("cdef class A:\n    cdef public double x\n")
    build("a")  # a rebuilt with its new layout, b not: b is stale
    assert compiled.usable(pkg / "a.py") and not compiled.usable(pkg / "b.py")


def test_every_shipped_pxd_augments_a_compiled_module() -> None:
    """A .pxd in the source tree types a module of MODULES (the build compiles that module with it,
    and its digest covers it): one left beside a module the build skips would do nothing."""
    pxds = sorted(p.relative_to(REPO) for d in ("emu", "hostapps") for p in (REPO / d).rglob("*.pxd"))
    modules = {str(Path(*m.split(".")).with_suffix(".pxd")) for m in compiled.MODULES}
    assert [str(p) for p in pxds if str(p) not in modules] == []
    for p in pxds:  # the digest of the module is not the .py's alone
        py = REPO / p.with_suffix(".py")
        assert compiled.source_digest(py) != hashlib.sha256(py.read_bytes()).hexdigest(), p


def test_the_finder_loads_the_source_when_pure_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    tm_dir = REPO / "emu" / "embedded"
    spec = compiled.SourceFirst().find_spec("emu.embedded.tm", [str(tm_dir)])
    assert spec is not None and spec.origin == str(tm_dir / "tm.py")
    assert compiled.SourceFirst().find_spec("emu.embedded.codegen", [str(tm_dir)]) is None  # not one of MODULES


def test_a_pipeline_build_is_used_only_for_its_very_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns: dict = {"_K": 5}
    exec("def _ingress(x):\n    return x + _K\n\ndef _egress(y):\n    return y - _K\n", ns)  # noqa: S102
    ing, eg = ns["_ingress"], ns["_egress"]
    src = "def _ingress(x):\n    return x + _K\n\ndef _egress(y):\n    return y - _K\n"
    module = compiled.pipeline_module_source(src, ns)
    assert "    _K = _ns['_K']" in module and "__builtins__" not in module
    made: dict = {}
    exec(module, made)  # noqa: S102  (what the build compiles, run as Python)
    f, g = made["make"](ns)
    assert (f(1), g(1)) == (ing(1), eg(1)) == (6, -4)
    bare = compiled.pipeline_module_source(src, ns, declare=False)  # what names the module
    name = compiled.pipeline_module_name(bare)
    assert name == compiled.pipeline_module_name(bare) != compiled.pipeline_module_name(bare + "#")
    monkeypatch.setattr(compiled, "PIPELINE_DIR", tmp_path)
    assert compiled.pipeline_functions(src, ing, eg) == (ing, eg, "not built")
    import importlib.machinery

    so = tmp_path / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
    so.write_bytes(b"not an extension")  # no digest stamp: not used
    assert compiled.pipeline_functions(src, ing, eg)[2] == "not built"
    so.with_name(so.name + compiled.DIGEST_SUFFIX).write_text("0" * 64 + "\n")  # another source's digest
    assert compiled.pipeline_functions(src, ing, eg)[2] == "not built"
    # a build cimports Table (emu.embedded.tables): it is not loaded while tables runs as source
    asked: list = []
    monkeypatch.setattr(compiled, "usable", lambda py, *_a: asked.append(py) or False)
    assert compiled.pipeline_functions(src, ing, eg)[2] == "not built"
    assert asked == [compiled._module_py(compiled.TABLES_MODULE)]
    monkeypatch.undo()
    monkeypatch.setattr(compiled, "PIPELINE_DIR", tmp_path)
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert compiled.pipeline_functions(src, ing, eg) == (ing, eg, "source")


def test_a_network_s_pipelines_share_one_module_source_and_its_key_is_what_it_reads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from emu.embedded.codegen import VAR_RANGES
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline
    from emu.embedded.tables import Table

    prog = load_program(str(REPO / "p4" / "symphony.p4"))
    a, b = Pipeline(prog, seed=1), Pipeline(prog, seed=2)  # two switches of one network
    ns_a, ns_b = (p.generated_functions[0].__globals__ for p in (a, b))
    table = next(n for n, v in ns_a.items() if type(v) is Table)
    assert ns_a[table] is not ns_b[table] and a.source == b.source
    compiled._module_source.cache_clear()
    src_a = compiled.pipeline_module_source(a.source, ns_a)
    assert compiled.pipeline_module_source(b.source, ns_b) == src_a
    assert compiled._module_source.cache_info()[:2] == (1, 1)  # (hits, misses): computed once
    # every input it reads is in the key: another binding, range or .pxd layout is another source
    other = dict(ns_a, **{table: object()})  # not a Table: not typed, its lookups not C calls
    assert compiled.pipeline_module_source(a.source, other) != src_a
    var = next(v for v, r in ns_a[VAR_RANGES].items() if r is not None)
    assert compiled.pipeline_module_source(a.source, dict(ns_a, **{VAR_RANGES: {**ns_a[VAR_RANGES], var: None}})) != src_a
    monkeypatch.setattr(compiled, "_pxd_digest", lambda module: "0" * 64)
    assert compiled.pipeline_module_source(a.source, ns_a) != src_a
    monkeypatch.undo()
    compiled._module_source.cache_clear()
    assert compiled.pipeline_module_source(a.source, ns_a) == src_a  # computed anew: the same
