"""Switch targets: the registry, the options that start a switch, and the targets' errors (no Mininet).

Two targets run ``p4/symphony.p4`` behind one small lifecycle (docs/DESIGN.md section 2):

- ``embedded`` (:class:`emu.mininet.embedded.EmbeddedSwitch`): emu's own software switch,
  one ``python -m emu.embedded.switch`` process per Mininet switch;
- ``bmv2`` (:class:`emu.mininet.bmv2.Bmv2Switch`): ``simple_switch_grpc``.

Each is a Mininet ``Switch`` subclass of :class:`emu.mininet.switch.SwitchTarget` with
``start``, ``wait_ready``, ``control``, ``stop`` and the class method
``available() -> (bool, reason)``. :data:`TARGETS` is the registry (``"module:Class"``, so
nothing is imported until a target is used): the CLI's ``--target`` choices and ``doctor``
come from it; :func:`target_class` turns an unavailable target into a one-line
:class:`TargetUnavailable`. This package imports no Mininet: :class:`SwitchOptions`, the
errors and the control clients (:mod:`emu.targets.bmv2_control`,
:mod:`emu.targets.p4runtime_control`) serve every back end. A new target is one subclass and
one registry line.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emu.p4build import DEFAULT_BUILD
from emu.targets.registry import TARGETS, target_names

log = logging.getLogger(__name__)

__all__ = ["Requirement", "SwitchOptions", "SwitchStartError", "TARGETS", "TargetUnavailable", "load_target",
           "target_class", "target_names"]


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

    program: Path = DEFAULT_BUILD.source
    control_dir: Path = Path("/run/symphony-emu")
    log_dir: Path = Path("/tmp/symphony-emu")
    seed: int = 1
    log_level: str = "info"
    ready_timeout_s: float = 60.0
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    pcap_dir: Path | None = None


def load_target(name: str) -> Any:
    """The switch class of target ``name`` (installed or not); TargetUnavailable if unknown."""
    if name not in TARGETS:
        raise TargetUnavailable(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")
    module_name, _, cls_name = TARGETS[name].partition(":")
    return getattr(importlib.import_module(module_name), cls_name)


def target_class(name: str) -> Any:
    """The switch class of target ``name``; raises TargetUnavailable if it cannot run here."""
    cls = load_target(name)
    ok, reason = cls.available()
    if not ok:
        raise TargetUnavailable(reason)
    return cls


@dataclass(frozen=True)
class Requirement:
    """One thing a target needs, for ``symphony-emu doctor``: name, whether it is there,
    what was found (version, path) and the command or document that gets it."""

    name: str
    ok: bool
    detail: str
    fix: str
