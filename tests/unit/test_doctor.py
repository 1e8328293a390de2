"""What the docs and `scripts/setup.sh` say agrees with the code: `doctor`, host set-up, limits (issue 19)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from emu import doctor

REPO = Path(__file__).resolve().parents[2]


def _setup_packages() -> list[str]:
    m = re.search(r"^packages=\(([^)]*)\)", (REPO / "scripts" / "setup.sh").read_text(), re.M)
    assert m, "scripts/setup.sh: no packages=(...) line"
    return m.group(1).split()


def test_setup_installs_every_package_the_doctor_checks() -> None:
    packages = _setup_packages()
    missing = [pkg for _, pkg, _ in doctor.SYSTEM_COMMANDS if pkg not in packages]
    assert not missing, f"scripts/setup.sh does not install {missing}"
    assert "procps" in packages  # sysctl: a minimal Debian (debootstrap, a fresh VM) lacks it


def test_readme_lists_the_packages_setup_installs() -> None:
    text = " ".join((REPO / "README.md").read_text().split())
    m = re.search(r"installs what is missing \(`([^`]*)`", text)
    assert m, "README.md: the setup.sh package list is gone"
    assert m.group(1).split() == _setup_packages()


def test_every_host_setup_command_is_checked() -> None:
    """Each command a Mininet host's set-up runs is one the doctor checks (and setup.sh installs)."""
    from emu.mininet.network import host_setup_script
    from emu.topology import load_topology

    plan = load_topology(REPO / "topologies" / "single.yaml").plan
    script = host_setup_script(plan, plan.hosts[0].name)
    commands = {part.split()[0] for part in script.split(";") if part.strip()} - {"echo"}
    known = {cmd for cmd, _, _ in doctor.SYSTEM_COMMANDS}
    assert commands <= known, f"host set-up runs {sorted(commands - known)}, which the doctor does not check"


def test_binary_found_in_sbin_without_it_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A normal user's PATH has no /usr/sbin, where Debian installs ethtool and sysctl."""
    sbin = tmp_path / "sbin"
    sbin.mkdir()
    tool = sbin / "ethtool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(doctor, "SBIN_DIRS", (str(sbin),))
    ok, detail = doctor._binary("ethtool")
    assert ok and detail == str(tool)
    ok, detail = doctor._binary("no-such-tool-here")
    assert not ok and "not on PATH" in detail
    assert os.environ["PATH"] == str(tmp_path / "bin")


def test_topology_format_doc_gives_the_rank_limit() -> None:
    """docs/topology-format.md gives the limit the checks enforce (MAX_RANKS), twice."""
    from hostapps.wire import MAX_RANKS

    text = " ".join((REPO / "docs" / "topology-format.md").read_text().split())
    assert f"2..{MAX_RANKS} ranks" in text
    assert f"fewer than 2 or more than {MAX_RANKS} ranks" in text


def _run_setup(tmp_path: Path, tools: tuple[str, ...]) -> str:
    """A host's set-up script in a shell whose PATH has only ``tools`` (each succeeds)."""
    import subprocess

    from emu.mininet.network import host_setup_script
    from emu.topology import load_topology

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    plan = load_topology(REPO / "topologies" / "single.yaml").plan
    proc = subprocess.run(["/bin/sh", "-c", host_setup_script(plan, "h1")], env={"PATH": str(bin_dir)},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30, check=False)
    return proc.stdout


def test_a_failing_host_setup_command_is_an_error(tmp_path: Path) -> None:
    """Issue 19: without procps `sysctl` failed in every Mininet host, silently (only the
    last command's status was checked), and IPv6 stayed on. Now the first failing command is
    named with its error, before anything runs."""
    from emu.mininet.network import NetworkError, check_host_setup
    from emu.topology import load_topology

    plan = load_topology(REPO / "topologies" / "single.yaml").plan
    out = _run_setup(tmp_path, ("ip", "ethtool"))  # a minimal Debian: no sysctl
    with pytest.raises(NetworkError) as err:
        check_host_setup(plan, "h1", out)
    msg = str(err.value)
    assert msg.startswith("preparing host h1 failed: `sysctl -qw net.ipv6.conf.all.disable_ipv6=1"), msg
    assert "not found" in msg and "setup.sh" in msg and "\n" not in msg
    check_host_setup(plan, "h1", _run_setup(tmp_path, ("ip", "ethtool", "sysctl")))  # all there: no error
    with pytest.raises(NetworkError, match="ended early"):
        check_host_setup(plan, "h1", "bash: killed")


def test_links_too_fast_for_real_time_are_refused_before_anything_starts() -> None:
    """Issue 19: 1 Tbit/s links ran in Mininet (CCT/bound 42,006) with only the busy note as a
    hint; a link faster than the embedded switch forwards is one line naming it and the fix."""
    from emu.backend import UsageError
    from emu.mininet.backend import MininetBackend
    from emu.topology import parse_topology

    text = (REPO / "topologies" / "single.yaml").read_text()
    topo = parse_topology(text.replace("bandwidth_mbps: 10", "bandwidth_mbps: 1Tbit/s"), "t.yaml")
    with pytest.raises(UsageError) as err:
        MininetBackend.check(topo, target="embedded")
    msg = str(err.value)
    assert msg.startswith("links[0]: 1e+06 Mbit/s in real time") and "--dilation 1000" in msg, msg
    assert "--mode sim" in msg and "\n" not in msg
