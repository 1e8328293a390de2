#!/usr/bin/env python3
"""Build (or remove) the optional compiled hot modules: ``hostapps.compiled.MODULES`` with Cython.

Usage::

    .venv/bin/python scripts/build_compiled.py [--clean] [--jobs N]

Compiles each listed ``.py`` file unchanged (Cython, language level 3) into an extension
module beside it, and writes ``<extension>.sha256`` with the digest of the source it was
built from (:mod:`hostapps.compiled` uses the extension only while that digest matches).
C files and objects go to ``build/cython/`` (ignored by git). Exit 2 when Cython or a C
compiler is missing (the pure-Python modules then run as before), 1 when a build fails.
``--clean`` removes the extension modules and digests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clean", action="store_true", help="remove the extension modules and their digests")
    ap.add_argument("--jobs", type=int, default=max(1, len(os.sched_getaffinity(0))), help="parallel compiles")
    args = ap.parse_args(argv)
    from hostapps import compiled

    sources = [REPO.joinpath(*m.split(".")).with_suffix(".py") for m in compiled.MODULES]
    if args.clean:
        for py in sources:
            so = compiled.extension_path(py)
            while so is not None:
                so.unlink()
                so.with_name(so.name + compiled.DIGEST_SUFFIX).unlink(missing_ok=True)
                so = compiled.extension_path(py)
        shutil.rmtree(REPO / "build" / "cython", ignore_errors=True)
        shutil.rmtree(compiled.PIPELINE_DIR, ignore_errors=True)
        print("build_compiled: removed the compiled modules")
        return 0
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
        from setuptools.dist import Distribution
    except ImportError as exc:
        print(f"build_compiled: {exc.name or exc} is not installed (pip install '.[compiled]'); "
              "the pure-Python modules stay in use", file=sys.stderr)
        return 2
    if shutil.which(os.environ.get("CC", "cc")) is None:
        print("build_compiled: no C compiler (cc); the pure-Python modules stay in use", file=sys.stderr)
        return 2
    digests = {py: compiled.source_digest(py) for py in sources}
    exts = [Extension(m, [str(py.relative_to(REPO))]) for m, py in zip(compiled.MODULES, sources, strict=True)]
    os.chdir(REPO)
    try:
        # A module with an augmenting .pxd takes its C types from the .pxd alone: the .py's
        # annotations (int = any Python int, float) are not read as C types there.
        typed = [e for e, py in zip(exts, sources, strict=True) if py.with_suffix(".pxd").exists()]
        plain = [e for e in exts if e not in typed]
        modules = cythonize(plain, language_level=3, build_dir="build/cython", nthreads=args.jobs, quiet=True)
        if typed:
            modules += cythonize(typed, language_level=3, build_dir="build/cython", nthreads=args.jobs, quiet=True,
                                 compiler_directives={"annotation_typing": False})
        dist = Distribution({"name": "symphony-emu-compiled", "ext_modules": modules})
        cmd = dist.get_command_obj("build_ext")
        cmd.inplace = True
        cmd.build_temp = "build/cython/tmp"
        cmd.parallel = args.jobs
        cmd.ensure_finalized()
        cmd.run()
    except Exception as exc:  # noqa: BLE001  (Cython's and distutils' errors have no common base)
        print(f"build_compiled: build failed: {exc}; the pure-Python modules stay in use", file=sys.stderr)
        return 1
    for py, digest in digests.items():
        so = compiled.extension_path(py)
        if so is None:
            print(f"build_compiled: {py.relative_to(REPO)}: no extension module was built", file=sys.stderr)
            return 1
        so.with_name(so.name + compiled.DIGEST_SUFFIX).write_text(digest + "\n", encoding="ascii")
    st = compiled.status()
    print(f"build_compiled: {sum(v == 'compiled' for v in st.values())} of {len(st)} modules compiled")
    try:
        name = build_pipeline(cythonize, Extension, Distribution, args.jobs)
    except Exception as exc:  # noqa: BLE001  (as above)
        print(f"build_compiled: the P4 pipeline's build failed: {exc}; its generated code runs as source",
              file=sys.stderr)
        return 1
    print(f"build_compiled: the P4 pipeline of {PROGRAMS[0]} compiled ({name})")
    return 0


#: Programs whose generated pipeline code is compiled (the one the virtual-time switches run).
PROGRAMS = ("p4/symphony.p4",)


def build_pipeline(cythonize, Extension, Distribution, jobs: int) -> str:  # type: ignore[no-untyped-def]
    """Compile the generated code of :data:`PROGRAMS` (``hostapps.compiled.pipeline_module_source``)
    into ``build/pipelines/``, with its digest stamp; returns the module name. Older builds
    there are removed."""
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline
    from hostapps import compiled

    pipe = Pipeline(load_program(REPO / PROGRAMS[0]))
    ns = pipe.generated_functions[0].__globals__
    module_source = compiled.pipeline_module_source(pipe.source, ns)
    name = compiled.pipeline_module_name(compiled.pipeline_module_source(pipe.source, ns, declare=False))
    out = compiled.PIPELINE_DIR
    shutil.rmtree(out, ignore_errors=True)
    src = REPO / "build" / "cython" / "pipelines" / f"{name}.py"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(module_source, encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    modules = cythonize([Extension(name, [str(src.relative_to(REPO))])], language_level=3,
                        build_dir="build/cython", quiet=True)
    dist = Distribution({"name": "symphony-emu-pipeline", "ext_modules": modules})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(out)
    cmd.build_temp = "build/cython/tmp"
    cmd.parallel = jobs
    cmd.ensure_finalized()
    cmd.run()
    so = compiled.pipeline_extension(name)
    if so is None:
        raise RuntimeError(f"no extension module {name} in {out}")
    digest = hashlib.sha256(module_source.encode()).hexdigest()
    so.with_name(so.name + compiled.DIGEST_SUFFIX).write_text(digest + "\n", encoding="ascii")
    return name


if __name__ == "__main__":
    sys.exit(main())
