#!/usr/bin/env python3
"""``pip install .`` into a plain venv (no system site-packages), then ``symphony-emu run --mode sim``.

The check a new user's laptop makes (README: virtual time needs neither root nor Mininet): a
fresh venv without the system's site-packages (so no Debian mininet module), the project
installed with all its dependencies by pip as configured (indices, find-links, the local
cache; nothing passes ``--no-deps``), then a one-iteration run of a shipped scenario by name
from a folder outside the checkout. Prints the time of each step; exit 0 when the run
verified both schemes, 1 otherwise, 2 on bad arguments.

It takes minutes (scipy, matplotlib, grpcio, numpy wheels), so the test suite runs the
lighter tests/unit/test_install.py (the wheel, installed without dependencies, running
``--mode sim``) and this is run by hand or in CI's long jobs:

    python3 benchmarks/plain_install.py [--keep DIR] [--scenario single]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: What a source distribution of the project holds (setup.cfg's packages and data files); the
#: build runs on a copy of them, so nothing is written into the checkout.
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "emu", "hostapps", "p4", "topologies")


def step(name: str, cmd: list[str], **kwargs: object) -> float:
    """Run ``cmd`` (output to this terminal); the seconds it took. Exits 1 when it fails."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, check=False, **kwargs)  # type: ignore[call-overload]
    took = time.monotonic() - t0
    print(f"{name}: {took:.1f} s (exit {proc.returncode})", flush=True)
    if proc.returncode != 0:
        sys.exit(1)
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, default=None, help="make the venv in DIR and keep it (default: a temp dir)")
    parser.add_argument("--scenario", default="single", help="shipped scenario to run (default: single)")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="symphony-plain-install-"))
    try:
        env_dir = root / "venv"
        t0 = time.monotonic()
        venv.EnvBuilder(system_site_packages=False, with_pip=True, clear=True).create(env_dir)
        print(f"venv (no system site-packages): {time.monotonic() - t0:.1f} s", flush=True)
        py = env_dir / "bin" / "python"
        src = root / "src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        for name in SOURCES:
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
            else:
                shutil.copy2(REPO / name, src / name)
        # --no-cache-dir: a wheel of the same version cached from an older tree would be installed instead
        step("pip install . (with dependencies)", [str(py), "-m", "pip", "install", "-q", "--no-cache-dir", str(src)])
        run_dir = root / "elsewhere"
        run_dir.mkdir(exist_ok=True)
        out = run_dir / "out"
        step(f"symphony-emu run {args.scenario} --mode sim --iterations 1",
             [str(env_dir / "bin" / "symphony-emu"), "run", args.scenario, "--mode", "sim", "--iterations", "1",
              "--out", str(out)], cwd=run_dir)
        summary = json.loads((out / "summary.json").read_text())
        ok = summary.get("mode") == "sim" and all(summary[s]["verified"] for s in ("baseline", "symphony"))
        print("verified: both schemes" if ok else "NOT verified", flush=True)
        return 0 if ok else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
