"""The ``embedded`` target: one ``python -m emu.embedded.switch`` process per Mininet switch.

The process binds an AF_PACKET socket to each of the switch's interfaces (which live in the
root namespace, as Mininet's software switches do), serves the control API on a Unix
socket (docs/interfaces.md section 3) and P4Runtime on a free loopback port (device id =
switch index + 1; :meth:`EmbeddedSwitch.p4runtime_address` reads where). This class starts it, waits until the control socket
accepts, hands out a :class:`~emu.targets.p4runtime_control.P4RuntimeControl` (P4Runtime
plus the control socket for queues and stats), and stops it.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emu.cleanup import die_with_parent
from emu.embedded.control import ControlClient
from emu.mininet.switch import SwitchTarget, stop_process_group
from emu.targets import SwitchStartError

if TYPE_CHECKING:
    from emu.targets.p4runtime_control import P4RuntimeControl

log = logging.getLogger(__name__)

#: Offloads turned off on switch interfaces, so the AF_PACKET socket sees real frames
#: (no GSO super-frames, no partial checksums).
SWITCH_OFFLOADS = ("tx", "rx", "tso", "gso", "gro")


def disable_offloads(intf: str, features: tuple[str, ...] = SWITCH_OFFLOADS) -> None:
    """Turn off ``features`` on root-namespace interface ``intf`` (features it lacks are ignored)."""
    args = ["ethtool", "-K", intf]
    for feat in features:
        args += [feat, "off"]
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    if res.returncode not in (0, 1):  # 1: some feature is fixed on veth, the others changed
        log.warning("ethtool -K %s failed: %s", intf, res.stderr.strip())


def disable_ipv6(intf: str) -> None:
    """Stop the root namespace from sending IPv6 (router/neighbour solicitations) out of ``intf``."""
    path = Path(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6")
    try:
        path.write_text("1")
    except OSError as exc:  # IPv6 compiled out: nothing to disable
        log.debug("cannot disable IPv6 on %s: %s", intf, exc)


def wait_for_socket(path: Path, proc: subprocess.Popen | None, timeout_s: float, what: str) -> None:
    """Wait until the Unix socket ``path`` accepts a connection.

    Polls with a growing interval (5 ms .. 200 ms) and stops early if ``proc`` exits.
    Raises SwitchStartError after ``timeout_s`` seconds or when the process died.
    """
    import socket

    deadline = time.monotonic() + timeout_s
    interval = 0.005
    while True:
        if proc is not None and proc.poll() is not None:
            raise SwitchStartError(f"{what} exited with code {proc.returncode} before its control socket was ready")
        if path.exists():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                try:
                    sock.connect(str(path))
                    return
                except OSError:
                    pass
        if time.monotonic() >= deadline:
            raise SwitchStartError(f"{what}: control socket {path} not ready after {timeout_s:.0f} s")
        time.sleep(interval)
        interval = min(interval * 1.5, 0.2)


def log_tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` non-empty lines of a log file joined by ' | ' ('' if none)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


class EmbeddedSwitch(SwitchTarget):
    """A Mininet switch backed by an ``emu.embedded.switch`` process.

    ``options`` (a :class:`~emu.targets.SwitchOptions`) says which program to load and where
    the control socket and the log go. Ports are Mininet's port numbers (1, 2, ...).
    """

    target = "embedded"
    supports_pcap = True

    def __init__(self, name: str, *args: Any, **params: Any) -> None:
        super().__init__(name, *args, **params)
        self._control: P4RuntimeControl | None = None

    # -- installation check -------------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether the embedded switch can run here, and if not, why (one line)."""
        if importlib.util.find_spec("emu.embedded.switch") is None:
            return False, "embedded target: module emu.embedded.switch is missing; reinstall with pip install -e ."
        for module, dist in (("grpc", "grpcio"), ("p4.v1", "p4runtime"), ("p4runtime_sh", "p4runtime-shell")):
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:  # the parent package is missing
                found = False
            if not found:
                return False, f"embedded target: {dist} is not installed (P4Runtime): pip install -e . (or ./scripts/setup.sh)"
        return True, ""

    # -- paths ----------------------------------------------------------------------------
    @property
    def control_path(self) -> Path:
        """Unix socket of the control API."""
        return self.options.control_dir / f"{self.name}.sock"

    @property
    def p4runtime_file(self) -> Path:
        """Where the switch writes the address of its P4Runtime server."""
        return self.options.control_dir / f"{self.name}.p4runtime"

    @property
    def device_id(self) -> int:
        """P4Runtime device id: the switch's index + 1 (as on bmv2)."""
        return self.seed_offset + 1

    def p4runtime_address(self) -> str | None:
        """``127.0.0.1:PORT`` of the switch's P4Runtime server (None before it serves)."""
        try:
            return self.p4runtime_file.read_text().strip() or None
        except OSError:
            return None

    @property
    def stats_path(self) -> Path:
        """Where the switch writes its final statistics."""
        return self.options.log_dir / f"{self.name}.stats.json"

    def command(self) -> list[str]:
        """The switch process's command line."""
        opts = self.options
        cmd = [sys.executable, "-m", "emu.embedded.switch", "--program", str(opts.program),
               "--name", self.name]
        for port, intf in sorted(self.port_map().items()):
            cmd += ["--port", f"{port}={intf}"]
        cmd += ["--control", str(self.control_path), "--seed", str(opts.seed + self.seed_offset),
                "--log-level", opts.log_level, "--stats-file", str(self.stats_path),
                "--p4runtime", "127.0.0.1:0", "--p4runtime-file", str(self.p4runtime_file),
                "--device-id", str(self.device_id)]
        if opts.pcap_dir is not None:
            cmd += ["--pcap", str(opts.pcap_dir)]
        cmd += list(opts.extra_args)
        return cmd

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, controllers: list) -> None:  # noqa: ARG002 - Mininet's signature
        """Prepare the interfaces and start the switch process (does not wait for it)."""
        for intf in self.port_map().values():
            disable_offloads(intf)
            disable_ipv6(intf)
        self.options.control_dir.mkdir(parents=True, exist_ok=True)
        self.options.log_dir.mkdir(parents=True, exist_ok=True)
        self.control_path.unlink(missing_ok=True)
        self.p4runtime_file.unlink(missing_ok=True)
        cmd = self.command()
        log.debug("starting %s: %s", self.name, " ".join(cmd))
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=str(self.options.log_dir),
                                         preexec_fn=die_with_parent())

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until the control socket accepts; SwitchStartError names the log otherwise."""
        timeout = self.options.ready_timeout_s if timeout_s is None else timeout_s
        try:
            wait_for_socket(self.control_path, self.proc, timeout, f"switch {self.name}")
        except SwitchStartError as exc:
            tail = log_tail(self.log_path)
            raise SwitchStartError(f"{exc} (log {self.log_path}{': ' + tail if tail else ''})") from None

    def control(self) -> P4RuntimeControl:
        """The switch's control, made once: tables, counters and registers over P4Runtime (the
        same p4runtime-shell client as on bmv2), queues and stats over the control socket."""
        if self._control is None:
            from emu.control import ControlError
            from emu.targets.bmv2_control import open_p4runtime
            from emu.targets.p4runtime_control import P4RuntimeControl, controller_election_id

            address = self.p4runtime_address()
            if address is None:
                raise SwitchStartError(f"switch {self.name}: no P4Runtime address in {self.p4runtime_file} "
                                       f"(log {self.log_path})")
            side = ControlClient(str(self.control_path))
            try:
                client, info = open_p4runtime(self.device_id, address, election_id=controller_election_id())
            except ControlError:
                side.close()
                raise
            self._p4rt = client
            self._control = P4RuntimeControl(info, client, side, registers_over_p4runtime=True,
                                             on_close=self._close_p4rt)
        return self._control

    def stop_process(self, timeout_s: float = 5.0) -> None:
        """Close the control connections, SIGTERM the switch process, SIGKILL it after
        ``timeout_s`` seconds."""
        control, self._control = self._control, None
        if control is not None:
            try:
                control.close()
            except Exception:  # noqa: BLE001 - closing a dead connection
                pass
        self._close_p4rt()
        proc, self.proc = self.proc, None
        stop_process_group(proc, self.name, timeout_s)

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        """Stop the switch process, then let Mininet delete the interfaces."""
        super().stop(deleteIntfs)
        self.control_path.unlink(missing_ok=True)
        self.p4runtime_file.unlink(missing_ok=True)
