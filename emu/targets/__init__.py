"""Switch targets: Mininet ``Switch`` subclasses that run ``p4/symphony.p4``.

Two targets share one small lifecycle (docs/DESIGN.md section 2):

- ``embedded`` (:class:`emu.targets.embedded.EmbeddedSwitch`): emu's own software switch,
  one ``python -m emu.embedded.switch`` process per Mininet switch;
- ``bmv2`` (:class:`emu.targets.bmv2.Bmv2Switch`): ``simple_switch_grpc``.

Each target class has ``available() -> (bool, reason)``; :func:`target_class` turns an
unavailable target into a one-line :class:`TargetUnavailable`. A started switch hands out a
control object (:meth:`control`) with the methods of ``emu.embedded.control.ControlClient``
(docs/interfaces.md section 3), which is all the controller uses.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

#: Target name -> "module:Class".
TARGETS: dict[str, str] = {
    "embedded": "emu.targets.embedded:EmbeddedSwitch",
    "bmv2": "emu.targets.bmv2:Bmv2Switch",
}

#: The repository's P4 program, loaded by every target.
DEFAULT_PROGRAM = Path(__file__).resolve().parent.parent.parent / "p4" / "symphony.p4"


class TargetUnavailable(Exception):
    """A switch target cannot run here; ``str()`` is one line naming what is missing."""


class SwitchStartError(Exception):
    """A switch process did not come up; ``str()`` is one line naming the switch and its log."""


class SwitchControl(Protocol):
    """What the controller needs from a running switch (the ControlClient methods)."""

    def table_add(self, table: str, match: dict[str, Any], action: str,
                  params: dict[str, Any] | None = None, priority: int | None = None) -> Any: ...

    def table_clear(self, table: str) -> Any: ...

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> Any: ...

    def register_read(self, name: str, index: int | None = None) -> int | list[int]: ...

    def register_write(self, name: str, index: int, value: int) -> Any: ...

    def register_reset(self, name: str) -> Any: ...

    def counter_read(self, name: str, index: int | None = None) -> Any: ...

    def set_queue(self, port: int, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> Any: ...

    def stats(self) -> dict: ...


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
    """

    program: Path = DEFAULT_PROGRAM
    control_dir: Path = Path("/run/symphony-emu")
    log_dir: Path = Path("/tmp/symphony-emu")
    seed: int = 1
    log_level: str = "info"
    ready_timeout_s: float = 60.0
    extra_args: tuple[str, ...] = field(default_factory=tuple)


def target_class(name: str) -> type:
    """The switch class of target ``name``; raises TargetUnavailable if it cannot run here."""
    if name not in TARGETS:
        raise TargetUnavailable(f"unknown target {name!r}: choose one of {', '.join(sorted(TARGETS))}")
    module_name, _, cls_name = TARGETS[name].partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    ok, reason = cls.available()
    if not ok:
        raise TargetUnavailable(reason)
    return cls


def stop_process_group(proc: Any, name: str, timeout_s: float = 5.0) -> None:
    """SIGTERM the process group of ``proc`` (a ``subprocess.Popen`` started with
    ``start_new_session=True``), SIGKILL it after ``timeout_s`` seconds; no-op when it ended."""
    import logging
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
        logging.getLogger(__name__).warning("switch %s ignored SIGTERM for %.0f s; killing it", name, timeout_s)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


class AvailabilityCheck:
    """Mixin for switch targets: Mininet's ``setup`` hook raises :class:`TargetUnavailable`
    with the one-line reason from the target's ``available()`` classmethod."""

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the target can run here, and if not, why (one line)."""
        raise NotImplementedError

    @classmethod
    def setup(cls) -> None:
        """Mininet's installation hook: raise if the target cannot run."""
        ok, reason = cls.available()
        if not ok:
            raise TargetUnavailable(reason)
