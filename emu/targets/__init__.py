"""Switch targets: Mininet ``Switch`` subclasses that run ``p4/symphony.p4``.

Two targets share one small lifecycle (docs/DESIGN.md section 2):

- ``embedded`` (:class:`emu.targets.embedded.EmbeddedSwitch`): emu's own software switch,
  one ``python -m emu.embedded.switch`` process per Mininet switch;
- ``bmv2`` (:class:`emu.targets.bmv2.Bmv2Switch`): ``simple_switch_grpc``.

Every target subclasses :class:`SwitchTarget` (a Mininet ``Switch`` with ``start``,
``wait_ready``, ``control``, ``stop`` and the class method ``available() -> (bool, reason)``).
:data:`TARGETS` is the registry: the CLI's ``--target`` choices and ``doctor`` come from
it; :func:`target_class` turns an unavailable target into a one-line
:class:`TargetUnavailable`. A started switch hands out an :class:`emu.control.SwitchControl`
(:meth:`SwitchTarget.control`), which is all the controller uses. A new target is one
subclass and one registry line.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mininet.node import Switch

from emu.p4build import DEFAULT_BUILD
from emu.p4build import P4_BUILDS as BUILDS

if TYPE_CHECKING:
    from emu.control import SwitchControl

from emu.targets.registry import TARGETS, target_names

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_PROGRAM", "P4_BUILDS", "Requirement", "SwitchOptions", "SwitchStartError", "SwitchTarget", "TARGETS",
           "TargetUnavailable", "load_target", "target_class", "target_names"]

#: The repository's P4 program, loaded by every target.
DEFAULT_PROGRAM = DEFAULT_BUILD.source
#: The builds' source files (``--p4``): v1model (every target) and Tofino2 (T2NA; the
#: embedded target runs it, docs/tofino.md); the records are emu.p4build.P4_BUILDS.
P4_BUILDS: dict[str, Path] = {name: build.source for name, build in BUILDS.items()}


class TargetUnavailable(Exception):
    """A switch target cannot run here; ``str()`` is one line naming what is missing."""


class SwitchStartError(Exception):
    """A switch process did not come up; ``str()`` is one line naming the switch and its log."""


@dataclass(frozen=True)
class SwitchOptions:
    """How to start one switch of any target.

    program: P4 source file.
    control_dir: directory of the control sockets (``<control_dir>/<name>.sock``).
    log_dir: directory of the switch logs (``<log_dir>/<name>.log``).
    seed: seed of the switch's ``random`` extern (each switch adds its index).
    log_level: the switch process's log level (``debug``, ``info``, ``warning``).
    ready_timeout_s: seconds to wait for the control socket to accept, in seconds.
    extra_args: more command-line arguments for the switch process.
    pcap_dir: where the switch writes one pcap per port (None: no capture); only targets
        whose ``supports_pcap`` is True honour it.
    """

    program: Path = DEFAULT_PROGRAM
    control_dir: Path = Path("/run/symphony-emu")
    log_dir: Path = Path("/tmp/symphony-emu")
    seed: int = 1
    log_level: str = "info"
    ready_timeout_s: float = 60.0
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    pcap_dir: Path | None = None


def load_target(name: str) -> type[SwitchTarget]:
    """The switch class of target ``name`` (installed or not); TargetUnavailable if unknown."""
    if name not in TARGETS:
        raise TargetUnavailable(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")
    module_name, _, cls_name = TARGETS[name].partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    assert issubclass(cls, SwitchTarget), cls
    return cls


def target_class(name: str) -> type[SwitchTarget]:
    """The switch class of target ``name``; raises TargetUnavailable if it cannot run here."""
    cls = load_target(name)
    ok, reason = cls.available()
    if not ok:
        raise TargetUnavailable(reason)
    return cls


def stop_process_group(proc: Any, name: str, timeout_s: float = 5.0) -> None:
    """SIGTERM the process group of ``proc`` (a ``subprocess.Popen`` started with
    ``start_new_session=True``), SIGKILL it after ``timeout_s`` seconds; no-op when it ended."""
    import os
    import signal
    import subprocess

    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("switch %s ignored SIGTERM for %.0f s; killing it", name, timeout_s)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


@dataclass(frozen=True)
class Requirement:
    """One thing a target needs, for ``symphony-emu doctor``: name, whether it is there,
    what was found (version, path) and the command or document that gets it."""

    name: str
    ok: bool
    detail: str
    fix: str


class SwitchTarget(Switch):
    """Base class of every switch target: a Mininet ``Switch`` with a small lifecycle.

    A target subclasses it and implements :meth:`available`, :meth:`start`,
    :meth:`wait_ready`, :meth:`control`, :meth:`stop_process` and :meth:`running`; it
    sets :attr:`proc` (the switch's ``subprocess.Popen``) and :attr:`log_path`. Mininet
    calls ``start`` (non-blocking) then the network waits with ``wait_ready``; ``stop``
    ends the process, then lets Mininet delete the interfaces. ``options`` says which
    program to load and where logs and sockets go; ``seed_offset`` is the switch's index in
    the topology (seed of ``random``, per-switch ports).
    """

    #: The target's name in the registry (``--target``).
    target: str = ""
    #: Whether the switch writes per-port captures when ``options.pcap_dir`` is set.
    supports_pcap: bool = False

    def __init__(self, name: str, options: SwitchOptions | None = None, seed_offset: int = 0,
                 **params: Any) -> None:
        params.setdefault("inNamespace", False)
        super().__init__(name, **params)
        self.options = options or SwitchOptions()
        self.seed_offset = seed_offset
        self.proc: Any = None
        #: The P4Runtime client session of :meth:`control`, if one is open.
        self._p4rt: Any = None

    def _close_p4rt(self) -> None:
        """Tear down the P4Runtime client session, if any (a dead connection is only logged)."""
        client, self._p4rt = self._p4rt, None
        if client is not None:
            try:
                client.tear_down()
            except Exception as exc:  # noqa: BLE001 - closing a dead connection
                log.debug("P4Runtime tear down on %s: %s", self.name, exc)

    # -- installation -----------------------------------------------------------------------
    @classmethod
    def requirements(cls) -> list[Requirement]:
        """What the target needs, each checked (``symphony-emu doctor`` shows them)."""
        ok, reason = cls.available()
        return [Requirement(f"{cls.target} target", ok, "installed" if ok else reason, "" if ok else reason)]

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the target can run here, and if not, one line naming what is missing and
        how to get it."""
        raise NotImplementedError

    @classmethod
    def setup(cls) -> None:
        """Mininet's installation hook: raise TargetUnavailable if the target cannot run."""
        ok, reason = cls.available()
        if not ok:
            raise TargetUnavailable(reason)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        """The switch process's log file."""
        return self.options.log_dir / f"{self.name}.log"

    def port_map(self) -> dict[int, str]:
        """Port number -> interface name for every data interface."""
        return {port: intf.name for intf, port in self.ports.items() if intf.name != "lo"}

    def start(self, controllers: list) -> None:  # noqa: ARG002 - Mininet's signature
        """Start the switch process (does not wait for it)."""
        raise NotImplementedError

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until the switch can be programmed; SwitchStartError (naming the log) otherwise."""
        raise NotImplementedError

    def control(self) -> SwitchControl:
        """The switch's control object (after :meth:`wait_ready`)."""
        raise NotImplementedError

    @property
    def device_id(self) -> int:
        """The switch's P4Runtime device id (index + 1)."""
        return self.seed_offset + 1

    def p4runtime_address(self) -> str | None:
        """``HOST:PORT`` of the switch's P4Runtime server, None if it has none (yet)."""
        return None

    def running(self) -> bool:
        """Whether the switch process is alive."""
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """The switch process's exit status (None while it runs or before it started)."""
        return None if self.proc is None else self.proc.poll()

    def stop_process(self, timeout_s: float = 5.0) -> None:
        """End the switch process: SIGTERM, SIGKILL after ``timeout_s`` seconds (idempotent)."""
        raise NotImplementedError

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        """Stop the switch process, then let Mininet delete the interfaces."""
        self.stop_process()
        super().stop(deleteIntfs)
