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
order, so the results are the same bit for bit.
"""

from __future__ import annotations

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


def source_digest(path: Path) -> str:
    """SHA-256 (hex) of the source the extension of ``path`` is built from.

    That is the ``.py`` at ``path`` and, when one lies beside it, its augmenting ``.pxd``
    (Cython's declarations of types for the same module: ``tm.pxd`` beside ``tm.py``), so an
    edit of either makes an earlier build stale. Without a ``.pxd`` it is the SHA-256 of the
    ``.py`` alone.
    """
    h = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.exists():
        h.update(b"\0augmenting pxd\0")
        h.update(pxd.read_bytes())
    return h.hexdigest()


def extension_path(py: Path) -> Path | None:
    """The extension module built beside ``py`` (``tm.cpython-311-....so``), or None."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        so = py.with_name(py.stem + suffix)
        if so.exists():
            return so
    return None


def usable(py: Path) -> bool:
    """True when an extension module beside ``py`` was built from ``py`` as it is now."""
    so = extension_path(py)
    if so is None:
        return False
    stamp = so.with_name(so.name + DIGEST_SUFFIX)
    try:
        return stamp.read_text(encoding="ascii").strip() == source_digest(py)
    except OSError:
        return False


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


def status() -> dict[str, str]:
    """``{module: "compiled" | "source" | "stale build" | "not built"}`` for :data:`MODULES`
    (what an import now loads, given ``SYMPHONY_EMU_PURE``); imports nothing."""
    root = Path(__file__).resolve().parents[1]
    out = {}
    pure = os.environ.get(PURE_ENV) == "1"
    for name in MODULES:
        py = root.joinpath(*name.split(".")).with_suffix(".py")
        if extension_path(py) is None:
            out[name] = "not built"
        elif not usable(py):
            out[name] = "stale build"
        else:
            out[name] = "source" if pure else "compiled"
    return out


def pipeline_module_source(source: str, ns: dict[str, Any]) -> str:
    """The module a compiled pipeline is built from: ``make(_ns)`` binds every name of ``ns``
    (the generated code's globals, ``__builtins__`` and the two functions left out) as a local,
    defines the generated functions ``source`` unchanged as closures, and returns
    ``(_ingress, _egress)``."""
    names = sorted(n for n in ns if n.isidentifier() and n not in ("__builtins__", "_ingress", "_egress", "_ns"))
    lines = ["# generated by hostapps.compiled.pipeline_module_source: a P4 pipeline's generated code", "",
             "def make(_ns):"]
    lines += [f"    {n} = _ns[{n!r}]" for n in names]
    lines += [("    " + ln) if ln else "" for ln in source.splitlines()]
    lines += ["    return _ingress, _egress", ""]
    return "\n".join(lines)


def pipeline_module_name(module_source: str) -> str:
    """The extension module name of a compiled pipeline: :data:`PIPELINE_PREFIX` + 24 hex digits."""
    return PIPELINE_PREFIX + hashlib.sha256(module_source.encode()).hexdigest()[:24]


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
    module_source = pipeline_module_source(source, ns)
    name = pipeline_module_name(module_source)
    so = pipeline_extension(name)
    if so is None:
        return ingress, egress, "not built"
    if os.environ.get(PURE_ENV) == "1":
        return ingress, egress, "source"
    mod = _pipeline_modules.get(name)
    if mod is None:
        try:
            stamp = so.with_name(so.name + DIGEST_SUFFIX).read_text(encoding="ascii").strip()
            if stamp != hashlib.sha256(module_source.encode()).hexdigest():
                return ingress, egress, "not built"
            loader = importlib.machinery.ExtensionFileLoader(name, str(so))
            spec = importlib.util.spec_from_file_location(name, so, loader=loader)
            assert spec is not None
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
        except (OSError, ImportError, AssertionError):
            return ingress, egress, "not built"
        _pipeline_modules[name] = mod
    ing, eg = mod.make(ns)
    return ing, eg, "compiled"


install()
