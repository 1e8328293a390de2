"""Optional compiled hot modules (Cython), with the pure-Python source always the reference.

The virtual-time mode spends its time in a few pure-Python modules (:data:`MODULES`: the
traffic manager and switch core glue, the event loop and hosts, the rank worker, the
transport, DCQCN, the collectives, the CTH codec). ``scripts/build_compiled.py`` (run by ``scripts/setup.sh`` when
Cython is installed, the ``compiled`` extra) compiles those same files unchanged with
Cython into extension modules beside them, so that a run is faster and its results are the
same bit for bit (``tests/unit/test_compiled.py`` runs a scenario both ways and compares).

Which one is imported: the extension module only when it was built from the source file
as it is now: the build writes ``<module>.so.sha256`` (the SHA-256 of the ``.py`` it
compiled) beside it, and :class:`SourceFirst`, installed on ``sys.meta_path`` when the
``emu`` or ``hostapps`` package is imported, loads the ``.py`` whenever that digest does not
match (a file edited since the build) or when ``SYMPHONY_EMU_PURE=1`` is set. So an edited
source is never shadowed by a stale build, and ``SYMPHONY_EMU_PURE=1`` gives the reference
path. :func:`status` says which modules are compiled and in use.
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
#: Environment variable that forces the pure-Python modules (``1``).
PURE_ENV = "SYMPHONY_EMU_PURE"
#: Suffix of the file that records the source digest of an extension module.
DIGEST_SUFFIX = ".sha256"


def source_digest(path: Path) -> str:
    """SHA-256 (hex) of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


install()
