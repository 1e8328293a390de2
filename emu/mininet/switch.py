"""The Mininet side of a switch target: :class:`SwitchTarget`, a Mininet ``Switch`` with a small lifecycle.

Every target (:mod:`emu.mininet.embedded`, :mod:`emu.mininet.bmv2`) subclasses it; the registry
of targets, their options and errors are :mod:`emu.targets` (no Mininet there). A started
switch hands out an :class:`emu.control.SwitchControl` (:meth:`SwitchTarget.control`), which
is all the controller uses.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from mininet.node import Switch

from emu.control import SwitchControl
from emu.targets import Requirement, SwitchOptions, TargetUnavailable

log = logging.getLogger(__name__)


def stop_process_group(proc: Any, name: str, timeout_s: float = 5.0) -> None:
    """SIGTERM the process group of ``proc`` (a ``subprocess.Popen`` started with
    ``start_new_session=True``), SIGKILL it after ``timeout_s`` seconds; no-op when it ended."""
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


__all__ = ["SwitchTarget", "stop_process_group"]
