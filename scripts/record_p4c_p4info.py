#!/usr/bin/env python3
"""Record p4c's P4Info of every v1model program the embedded switch loads, for CI.

Where p4c is installed, ``tests/p4/test_p4info_matches_p4c`` compares the embedded front
end's P4Info with p4c's own; where it is not (CI), it compares with what this script
recorded: ``tests/p4/p4c/<program>.p4info.txtpb``, p4c's output for ``p4/symphony.p4`` and
``tests/p4/programs/*.p4``, with p4c's version in a first comment line.

Usage (with p4c on PATH): ``.venv/bin/python scripts/record_p4c_p4info.py`` (exit 2 without p4c).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "p4" / "p4c"


def programs() -> list[Path]:
    """The programs recorded: the project's and the test programs (test_p4runtime's list)."""
    return [REPO / "p4" / "symphony.p4", *sorted((REPO / "tests" / "p4" / "programs").glob("*.p4"))]


def main() -> int:
    if shutil.which("p4c") is None:
        print("record_p4c_p4info: p4c is not on PATH (docs/bmv2.md)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from emu.mininet.bmv2 import compile_program
    from emu.targets import SwitchStartError

    version = subprocess.run(["p4c", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    OUT.mkdir(parents=True, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for program in programs():
            try:
                _, p4info = compile_program(program, Path(tmp) / program.stem)
            except SwitchStartError as e:
                print(f"{program.name}: {e}", file=sys.stderr)
                failed += 1
                continue
            body = "\n".join(ln for ln in p4info.read_text().splitlines() if not ln.startswith("#"))
            (OUT / f"{program.stem}.p4info.txtpb").write_text(
                f"# p4c's P4Info of {program.relative_to(REPO)} ({' '.join(version[-1:]) or 'p4c'}), "
                "recorded by scripts/record_p4c_p4info.py\n" + body.strip() + "\n")
            print(f"recorded {program.stem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
