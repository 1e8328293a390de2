#!/usr/bin/env python3
"""Dump the Python the embedded compiler generates for programs, to compare two trees byte for byte.

``python scripts/dump_generated.py OUTDIR [PROGRAM ...]`` writes ``OUTDIR/<name>.<on|off>.py``
(optimize on and off) for each program (default: ``p4/symphony.p4`` and
``p4/tofino/symphony.p4``), then prints one sha256 per file. Run it in each tree (or at each
revision) and ``diff -r`` the two folders: identical files mean identical generated code.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import sys

from emu.embedded.frontend import load_program
from emu.embedded.runtime import Pipeline

DEFAULT = ["p4/symphony.p4", "p4/tofino/symphony.p4"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0],
                                 epilog="Run it in each tree and diff -r the two folders.")
    ap.add_argument("outdir", type=pathlib.Path, help="folder for <name>.<on|off>.py (created)")
    ap.add_argument("programs", nargs="*", default=DEFAULT, help=f"P4 programs (default: {' '.join(DEFAULT)})")
    args = ap.parse_args(argv)
    out = args.outdir
    out.mkdir(parents=True, exist_ok=True)
    for prog_path in args.programs:
        prog = load_program(prog_path)
        stem = prog_path.replace("/", "_").removesuffix(".p4")
        for opt in (True, False):
            src = Pipeline(prog, seed=1, optimize=opt).source
            f = out / f"{stem}.{'on' if opt else 'off'}.py"
            f.write_text(src)
            print(hashlib.sha256(src.encode()).hexdigest()[:16], f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
