"""``symphony-emu doctor``: what is installed, what is missing and how to get it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass

#: Set-up command that installs everything the embedded target and the tests need.
SETUP = "sudo ./scripts/setup.sh"


@dataclass(frozen=True)
class Check:
    """One item of the doctor's table.

    name: what was checked; ok: whether it is there; needed_for: "all", "speed", "tests" or a
    target's name (emu.targets.TARGETS); detail: version or path found; fix: command to get it.
    """

    name: str
    ok: bool
    needed_for: str
    detail: str
    fix: str

    @property
    def required(self) -> bool:
        """Whether the default (embedded) target needs it."""
        return self.needed_for in ("all", "embedded")


def _module(name: str, dist: str | None = None) -> tuple[bool, str]:
    if importlib.util.find_spec(name) is None:
        return False, "not importable"
    try:
        return True, importlib.metadata.version(dist or name)
    except importlib.metadata.PackageNotFoundError:
        spec = importlib.util.find_spec(name)
        return True, str(spec.origin if spec else "")


#: Where system tools live besides PATH: a normal user's PATH lacks the sbin folders, where
#: Debian puts ``ethtool`` and ``sysctl`` (root finds them there; the doctor runs without root).
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")

#: Every system command a run, a Mininet host or a test runs: (command, Debian package,
#: needed for). ``scripts/setup.sh`` installs each package (tests/unit/test_doctor.py checks
#: that the lists agree, and that every command of a host's set-up is here).
SYSTEM_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("mnexec", "mininet", "all"),
    ("ip", "iproute2", "all"),
    ("ethtool", "ethtool", "all"),  # host set-up: checksum offload off
    ("sysctl", "procps", "all"),  # host set-up: IPv6 off (a minimal Debian has no procps)
    ("ping", "iputils-ping", "tests"),
    ("killall", "psmisc", "all"),  # Mininet's clean-up
    ("tshark", "tshark", "tests"),  # reads the --pcap captures (tests/e2e/test_run.py)
)


def _binary(name: str) -> tuple[bool, str]:
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN_DIRS))
    return path is not None, path or "not on PATH (nor in /usr/sbin, /sbin)"


def run_checks() -> list[Check]:
    """All checks, in the order the table shows them."""
    checks: list[Check] = []
    py_ok = sys.version_info >= (3, 11)
    checks.append(Check("python >= 3.11", py_ok, "all", sys.version.split()[0],
                        "use Debian 12 / Ubuntu 24.04 (python3 >= 3.11)"))
    in_venv = sys.prefix != sys.base_prefix
    checks.append(Check("virtual environment", in_venv, "all", sys.prefix if in_venv else "system python",
                        f"{SETUP}  (creates .venv/)"))
    is_root = os.geteuid() == 0
    checks.append(Check("root", is_root, "all", "uid 0" if is_root else f"uid {os.geteuid()}",
                        "run with sudo (Mininet needs root)"))
    ok, detail = _module("mininet")
    checks.append(Check("mininet (python)", ok, "all", detail,
                        "apt-get install -y --no-install-recommends mininet; venv with --system-site-packages"))
    for binary, pkg, needed_for in SYSTEM_COMMANDS:
        ok, detail = _binary(binary)
        checks.append(Check(binary, ok, needed_for, detail, f"apt-get install -y --no-install-recommends {pkg}"))
    for module, dist in (("lark", None), ("pcpp", None), ("scapy", None), ("numpy", None), ("yaml", "PyYAML"),
                         ("pydantic", None), ("rich", None), ("click", None), ("matplotlib", None)):
        ok, detail = _module(module, dist)
        checks.append(Check(module, ok, "all", detail, "pip install -e ."))
    ok, detail = _module("uvloop")
    checks.append(Check("uvloop", ok, "speed", detail, "pip install -e '.[fast]'"))
    for module, dist in (("pytest", None), ("pytest_timeout", "pytest-timeout"),
                         ("pytest_asyncio", "pytest-asyncio")):
        ok, detail = _module(module, dist)
        checks.append(Check(module, ok, "tests", detail, "pip install -e '.[test]'"))
    # compile checks of tests/p4/test_compile.py (optional: they skip without these)
    ok, detail = _binary("p4test")
    checks.append(Check("p4test", ok, "tests", detail, "optional: p4lang's p4c package (type-checks the T2NA build)"))
    tofino = shutil.which("bf-p4c") or shutil.which("p4c-barefoot")
    checks.append(Check("bf-p4c / p4c-barefoot", tofino is not None, "tests", tofino or "not on PATH",
                        "optional: Intel's open-p4studio (compiles the T2NA build; docs/tofino.md)"))
    checks.append(machine_load())
    checks += target_checks()
    return checks


#: Share of all CPU time busy (outside this process) above which the machine counts as busy.
BUSY_FRACTION = 0.25


def machine_load(sample_s: float = 0.5) -> Check:
    """Whether the machine is quiet enough for real-time runs: CPU busy over ``sample_s``.

    From /proc/stat (all CPUs: user+nice+system+irq+softirq+steal over the total) and the
    1-minute load average. Real-time results depend on it (a nice-19 compiler beside the
    loopback benchmark took it from 0.94 to 0.51 busbw/line); the run reports it too.
    """
    import time

    def sample() -> tuple[int, int] | None:
        try:
            fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]  # noqa: SIM115, PTH123
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields) - idle, sum(fields)

    first = sample()
    time.sleep(sample_s)
    second = sample()
    cores = os.cpu_count() or 1
    if first is None or second is None or second[1] <= first[1]:
        return Check("machine quiet", True, "real time", "unknown (no /proc/stat)", "")
    busy = (second[0] - first[0]) / (second[1] - first[1])
    load1 = os.getloadavg()[0]
    detail = f"{busy:.0%} of {cores} cores busy, load average {load1:.2f}"
    ok = busy < BUSY_FRACTION and load1 < 0.5 * cores
    fix = ("" if ok else "other processes use the CPU: real-time runs will be disturbed (they say so in their "
           "table); wait for a quiet machine, or use --mode sim")
    return Check("machine quiet", ok, "real time", detail, fix)


def target_checks() -> list[Check]:
    """What each registered target needs (emu.targets.TARGETS), each checked by the target."""
    from emu.targets import load_target, target_names

    checks = []
    for name in target_names():
        try:
            requirements = load_target(name).requirements()
        except Exception as exc:  # noqa: BLE001 - a target that cannot even load is reported, not raised
            checks.append(Check(f"{name} target", False, name, f"cannot load: {exc}", "pip install -e ."))
            continue
        checks += [Check(r.name, r.ok, name, r.detail, r.fix) for r in requirements]
    return checks
