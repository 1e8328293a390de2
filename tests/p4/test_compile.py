"""Compile checks of both P4 builds with p4lang/Intel compilers, where they are installed.

- ``p4c --target bmv2 --arch v1model`` on p4/symphony.p4;
- the open-source Tofino compiler (``bf-p4c`` or ``p4c-barefoot``) ``--target tofino2 --arch
  t2na`` on p4/tofino/symphony.p4; its resource summary (stages, SRAM/TCAM, stateful ALUs)
  is written to ``$SYMPHONY_TOFINO_RESOURCES`` (default: the test's tmp folder) for
  docs/tofino.md;
- ``p4test -D__TARGET_TOFINO__=2`` (p4c's front and mid end only) on p4/tofino/symphony.p4
  against the T2NA architecture file: p4c's own ``t2na.p4`` when its include folder has one,
  else this project's ``emu/embedded/p4include/t2na.p4``.

Each test skips with the missing tool named; none of them is built here (they come from
p4lang's packages or Intel's open-p4studio, docs/tofino.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
V1MODEL = REPO / "p4" / "symphony.p4"
T2NA = REPO / "p4" / "tofino" / "symphony.p4"
OUR_P4INCLUDE = REPO / "emu" / "embedded" / "p4include"
TIMEOUT_S = 600


def _tool(*names: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"{' / '.join(names)} not installed (p4lang/Intel packages; docs/tofino.md): compile check not run")
    raise AssertionError  # pragma: no cover


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert res.returncode == 0, f"{' '.join(cmd)} exit {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def _p4c_include_dirs(p4c: str) -> list[Path]:
    """Where a p4c installation keeps its architecture files (share/p4c/p4include[/tofino2])."""
    prefix = Path(p4c).resolve().parent.parent
    base = prefix / "share" / "p4c" / "p4include"
    return [base, base / "tofino2", base / "tofino"]


def test_v1model_build_compiles_for_bmv2(tmp_path: Path) -> None:
    p4c = _tool("p4c")
    _run([p4c, "--target", "bmv2", "--arch", "v1model", "-o", str(tmp_path), str(V1MODEL)], REPO)
    assert (tmp_path / "symphony.json").is_file()


def test_t2na_build_compiles_for_tofino2(tmp_path: Path) -> None:
    compiler = _tool("bf-p4c", "p4c-barefoot")
    _run([compiler, "--target", "tofino2", "--arch", "t2na", "-g", "-o", str(tmp_path), str(T2NA)], REPO)
    summary = resource_summary(tmp_path)
    out = Path(os.environ.get("SYMPHONY_TOFINO_RESOURCES", tmp_path / "resources.json"))
    out.write_text(json.dumps(summary, indent=1))


def test_t2na_build_typechecks_with_p4test(tmp_path: Path) -> None:
    p4test = _tool("p4test")
    arch_dirs = [d for d in _p4c_include_dirs(p4test) if (d / "t2na.p4").is_file()]
    if arch_dirs:
        include = arch_dirs[0]
    else:  # ours alone, so that <core.p4> stays p4c's own
        include = tmp_path / "arch"
        include.mkdir()
        shutil.copy(OUR_P4INCLUDE / "t2na.p4", include / "t2na.p4")
    res = _run([p4test, "-D__TARGET_TOFINO__=2", "-I", str(include), "--std", "p4-16", str(T2NA)], tmp_path)
    assert "error" not in res.stderr.lower(), res.stderr


def resource_summary(out_dir: Path) -> dict:
    """Stages, SRAM/TCAM blocks and stateful ALUs from the compiler's ``resources.json``.

    bf-p4c writes ``<out>/<program>/pipe/logs/resources.json``; the keys read here
    (``resources.mau.mau_stages[*].{srams,tcams,meter_alus}.used``) follow its published
    schema but were not checked against a compiler run here (none is installed): a key
    that is absent gives None, never a made-up number. AssertionError when the file is absent.
    """
    found = sorted(out_dir.rglob("resources.json"))
    assert found, f"no resources.json under {out_dir}"
    data = json.loads(found[0].read_text())
    mau = data.get("resources", data).get("mau", {})
    stages = mau.get("mau_stages")
    if not isinstance(stages, list):
        return {"file": str(found[0]), "stages": None, "sram": None, "tcam": None, "stateful_alus": None}

    def total(key: str) -> int | None:
        used = [s[key].get("used") for s in stages if isinstance(s.get(key), dict)]
        return sum(int(u) for u in used if u is not None) if used else None

    return {"file": str(found[0]), "stages": len(stages), "sram": total("srams"), "tcam": total("tcams"),
            "stateful_alus": total("meter_alus")}
