"""An installed copy runs ``--mode sim``: the wheel carries the code and the data (P4 sources, scenarios).

The whole check, ``pip install .`` with its dependencies into a plain venv (no system
site-packages) and a ``--mode sim`` run, takes minutes (scipy, matplotlib, grpcio wheels): it
is ``benchmarks/plain_install.py``. This lighter test builds the project's wheel from a copy of
the sources, installs it without dependencies into a plain venv that reaches this
interpreter's site directories through a ``.pth`` file (no venv system site-packages, no checkout,
no editable finder; ``import mininet`` blocked as well) and runs ``symphony-emu run --mode
sim`` there on a shipped scenario by name.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.unit.test_without_mininet import BLOCKER

REPO = Path(__file__).resolve().parents[2]
#: What a source distribution of the project holds (setup.cfg's packages and data files).
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "emu", "hostapps", "p4", "topologies")


@pytest.mark.timeout(300)
def test_an_installed_wheel_runs_mode_sim(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.c"))
        else:
            shutil.copy2(path, src / name)
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "--no-index", "--no-cache-dir", "-w", str(wheels), str(src)],
                           capture_output=True, text=True, timeout=240, check=False)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("symphony_emu-*.whl")

    plain = tmp_path / "plain"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(plain)
    py = plain / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                              "--no-index", "--no-cache-dir", str(wheel)], capture_output=True, text=True, timeout=240, check=False)
    assert install.returncode == 0, install.stderr[-2000:]
    plain_site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                              text=True).strip())
    # the dependencies: this interpreter's site directories, as plain directories (their .pth files,
    # the editable install of the checkout among them, are not processed from there)
    deps = [d for d in site.getsitepackages() if Path(d).is_dir()]
    (plain_site / "zz_test_deps.pth").write_text("".join(f"{d}\n" for d in deps))
    # as in a real install, p4runtime's ``p4`` package sits beside ``emu`` (it is no P4 source folder)
    p4_package = next((Path(d) / "p4" for d in deps if (Path(d) / "p4" / "v1").is_dir()), None)
    if p4_package is not None:
        (plain_site / "p4").symlink_to(p4_package, target_is_directory=True)
    blocker = tmp_path / "no-mininet"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PYTHONPATH=str(blocker), COLUMNS="120")
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()

    where = subprocess.run([str(py), "-c", "import emu, emu.p4build as b, emu.topology as t; "
                            "print(emu.__file__); print(b.DEFAULT_BUILD.source); print(t.resolve_topology(None).parent)"],
                           cwd=run_dir, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert where.returncode == 0, where.stderr[-2000:]
    for line in where.stdout.split():
        assert line.startswith(str(plain)), where.stdout  # nothing from the checkout
    out = run_dir / "out"
    proc = subprocess.run([str(plain / "bin" / "symphony-emu"), "run", "single", "--mode", "sim", "--iterations",
                           "1", "--size", "64K", "--parallel", "1", "--out", str(out)],
                          cwd=run_dir, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "sim" and summary["baseline"]["verified"] and summary["symphony"]["verified"]
