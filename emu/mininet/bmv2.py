"""The ``bmv2`` target: ``simple_switch_grpc`` per Mininet switch (docs/DESIGN.md section 2, docs/bmv2.md).

Lifecycle of a :class:`Bmv2Switch`:

- ``start``: compile ``p4/symphony.p4`` once per run folder with
  ``p4c --target bmv2 --arch v1model --p4runtime-files symphony.p4info.txtpb``, then start
  ``simple_switch_grpc --no-p4`` with ``-i PORT@INTF`` per port, ``--device-id``,
  ``--thrift-port`` and ``-- --grpc-server-addr 127.0.0.1:PORT``;
- ``wait_ready``: wait (bounded) until the Thrift and gRPC ports accept, connect a
  p4runtime-shell client, push the pipeline (P4Info + bmv2 JSON) and build a
  :class:`~emu.targets.p4runtime_control.P4RuntimeControl` (tables and counters over
  P4Runtime; registers and queues through ``simple_switch_CLI``, which bmv2 does not serve
  over P4Runtime);
- ``stop``: tear the client down and terminate the process group.

bmv2 has no per-port propagation delay: link delays are not modelled on this target.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emu.cleanup import die_with_parent
from emu.mininet.switch import SwitchTarget, stop_process_group
from emu.targets import Requirement, SwitchStartError

if TYPE_CHECKING:
    from emu.targets.p4runtime_control import P4RuntimeControl

log = logging.getLogger(__name__)

#: Binaries the target needs, with where they come from (docs/bmv2.md says how to install them).
REQUIRED_BINARIES = {
    "simple_switch_grpc": "behavioral-model built with PI/P4Runtime",
    "p4c": "p4lang's p4c",
}
#: Distributions p4lang publishes bmv2/p4c packages for (OBS home:p4lang; docs/bmv2.md).
PUBLISHED = "Debian 11, Ubuntu 20.04-23.04; not Debian 12"
#: Where the install steps of the target are.
INSTALL_DOC = "docs/bmv2.md"
#: The Thrift CLI (ships with behavioral-model).
CLI_BINARY = "simple_switch_CLI"
#: Timeout of one p4c run, in seconds.
COMPILE_TIMEOUT_S = 300.0


def missing_binaries() -> list[str]:
    """Names of the required binaries not on PATH."""
    return [name for name in REQUIRED_BINARIES if shutil.which(name) is None]


def build_paths(program: Path, out_dir: Path) -> tuple[Path, Path]:
    """(bmv2 JSON, P4Info text) that :func:`compile_program` writes for ``program``."""
    return out_dir / (program.stem + ".json"), out_dir / (program.stem + ".p4info.txtpb")


def compile_command(program: Path, out_dir: Path) -> list[str]:
    """The p4c command line for bmv2/v1model with a P4Info text file."""
    _, p4info = build_paths(program, out_dir)
    return ["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(p4info),
            "-o", str(out_dir), str(program)]


def compile_program(program: Path, out_dir: Path) -> tuple[Path, Path]:
    """Compile ``program`` with p4c unless its outputs are newer; returns (bmv2 JSON, P4Info).

    Raises SwitchStartError (one line with p4c's first error line).
    """
    json_path, p4info = build_paths(program, out_dir)
    if (json_path.exists() and p4info.exists()
            and min(json_path.stat().st_mtime, p4info.stat().st_mtime) >= program.stat().st_mtime):
        return json_path, p4info
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        res = subprocess.run(compile_command(program, out_dir), capture_output=True, text=True, check=False,
                             timeout=COMPILE_TIMEOUT_S)
    except FileNotFoundError:
        raise SwitchStartError(f"p4c not found: install p4lang's packages ({INSTALL_DOC})") from None
    except subprocess.TimeoutExpired:
        raise SwitchStartError(f"p4c on {program} took more than {COMPILE_TIMEOUT_S:.0f} s") from None
    if res.returncode != 0 or not json_path.exists():
        lines = [ln for ln in (res.stderr + res.stdout).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no output")
        raise SwitchStartError(f"p4c failed on {program}: {first.strip()}")
    return json_path, p4info


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP server accepts on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


class Bmv2Switch(SwitchTarget):
    """A Mininet switch backed by ``simple_switch_grpc``.

    ``options`` (a :class:`~emu.targets.SwitchOptions`): program, log folder (the build goes
    to ``<log_dir>/bmv2``), ready timeout. ``seed_offset`` (the switch index) picks the
    device id (index + 1); the Thrift and gRPC ports are free ports picked per switch and the
    notification socket is unique per run, so concurrent runs and tests never collide.
    """

    target = "bmv2"

    def __init__(self, name: str, *args: Any, **params: Any) -> None:
        super().__init__(name, *args, **params)
        self._control: P4RuntimeControl | None = None
        self._started = 0.0

    # -- installation check -------------------------------------------------------------
    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether bmv2 can run here, and if not, why and how to get it (one line)."""
        missing = missing_binaries()
        if shutil.which(CLI_BINARY) is None and CLI_BINARY not in missing:
            missing.append(CLI_BINARY)
        no_shell = importlib.util.find_spec("p4runtime_sh") is None
        if not missing and not no_shell:
            from emu.targets.bmv2_control import cli_argv

            prefix, reason = cli_argv(CLI_BINARY)
            if not prefix:
                return False, f"bmv2 target: {reason}, or use --target embedded"
            return True, ""
        parts = []
        if missing:
            whence = "; ".join(f"{name}: {REQUIRED_BINARIES.get(name, 'ships with behavioral-model')}"
                               for name in missing)
            parts.append(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH ({whence})")
        if no_shell:
            parts.append("the Python package p4runtime-shell is not installed (pip install -e '.[bmv2]')")
        how = (f"install them with sudo ./scripts/install-bmv2.sh where p4lang publishes packages ({PUBLISHED}), "
               "or build them from source" if missing else "install it into .venv")
        return False, f"bmv2 target: {', and '.join(parts)}; {how} ({INSTALL_DOC}), or use --target embedded"

    @classmethod
    def requirements(cls) -> list[Requirement]:
        """The binaries and the Python client bmv2 needs, each checked."""
        out = []
        for name, whence in {**REQUIRED_BINARIES, CLI_BINARY: "ships with behavioral-model"}.items():
            path = shutil.which(name)
            out.append(Requirement(name, path is not None, path or "not on PATH",
                                   f"{whence}: sudo ./scripts/install-bmv2.sh ({PUBLISHED}), or build it from "
                                   f"source ({INSTALL_DOC})"))
        if shutil.which(CLI_BINARY) is not None:
            from emu.targets.bmv2_control import CLI_PYTHON_MODULE, cli_argv

            prefix, reason = cli_argv(CLI_BINARY)
            out.append(Requirement(f"{CLI_BINARY}'s Python ({CLI_PYTHON_MODULE})", bool(prefix),
                                   prefix[0] if prefix else reason, "apt-get install python3-thrift"))
        found = importlib.util.find_spec("p4runtime_sh") is not None
        out.append(Requirement("p4runtime-shell", found, "importable" if found else "not importable",
                               "pip install -e ."))
        return out

    # -- paths and ports -------------------------------------------------------------------
    @property
    def build_dir(self) -> Path:
        """Where p4c's outputs go (shared by every switch of a run)."""
        return self.options.log_dir / "bmv2"


    @property
    def index(self) -> int:
        """The switch's index in the topology (picks its ports and device id)."""
        return self.seed_offset

    def _chosen_ports(self) -> tuple[int, int]:
        """(Thrift, gRPC) ports, picked once per switch from the free loopback ports, so that
        runs and tests on one machine never collide (bmv2's defaults 9090/9559 would)."""
        ports = self.__dict__.get("_ports")
        if ports is None:
            ports = (free_port(), free_port())
            self.__dict__["_ports"] = ports
        return ports

    @property
    def thrift_port(self) -> int:
        """simple_switch_grpc's Thrift port (the CLI's)."""
        return self._chosen_ports()[0]

    @property
    def grpc_addr(self) -> str:
        """simple_switch_grpc's P4Runtime address."""
        return f"127.0.0.1:{self._chosen_ports()[1]}"

    @property
    def notifications_addr(self) -> str:
        """bmv2's nanomsg notification socket, unique to this run and switch (bmv2's default
        ``/tmp/bmv2-<device id>-notifications.ipc`` collides between runs)."""
        return f"ipc://{self.notifications_path}"

    @property
    def notifications_path(self) -> Path:
        """The file behind :attr:`notifications_addr` (short: a Unix socket path has <= 107 bytes)."""
        return Path(tempfile.gettempdir()) / f"symphony-bmv2-{os.getpid()}-{self.name}.ipc"

    def p4runtime_address(self) -> str | None:
        """``127.0.0.1:PORT`` of simple_switch_grpc's P4Runtime server."""
        return self.grpc_addr

    def command(self) -> list[str]:
        """The simple_switch_grpc command line (the pipeline is pushed over P4Runtime)."""
        from emu.targets.bmv2_control import PRIORITY_QUEUES

        cmd = ["simple_switch_grpc", "--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
               "--notifications-addr", self.notifications_addr]
        for port, intf in sorted(self.port_map().items()):
            cmd += ["-i", f"{port}@{intf}"]
        # --priority-queues is a target option of simple_switch(_grpc): after "--" (bmv2 refuses
        # it among the generic options: "Error while parsing command line arguments")
        cmd += ["--no-p4", *self.options.extra_args, "--", "--priority-queues", str(PRIORITY_QUEUES),
                "--grpc-server-addr", self.grpc_addr]
        return cmd

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, controllers: list) -> None:  # noqa: ARG002 - Mininet's signature
        """Compile the program (once per run folder) and start simple_switch_grpc (no wait)."""
        from emu.mininet.embedded import disable_ipv6, disable_offloads

        compile_program(self.options.program, self.build_dir)
        for intf in self.port_map().values():
            disable_offloads(intf)
            disable_ipv6(intf)
        self.options.log_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        log.debug("starting %s: %s", self.name, " ".join(cmd))
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=die_with_parent())
        self._started = time.monotonic()

    def _fail(self, message: str) -> SwitchStartError:
        from emu.mininet.embedded import log_tail

        tail = log_tail(self.log_path)
        return SwitchStartError(f"switch {self.name}: {message} (log {self.log_path}{': ' + tail if tail else ''})")

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait for Thrift + gRPC, push the pipeline and connect the control object.

        Polls every 5..200 ms, stops early if the process exits; SwitchStartError names the
        log otherwise.
        """
        from emu.control import ControlError
        from emu.targets.bmv2_control import (
            PRIORITY_QUEUES,
            Bmv2Control,
            P4RuntimeTables,
            ProgramSchema,
            ThriftCli,
            open_p4runtime,
            process_usage,
        )
        from emu.targets.p4runtime_control import P4RuntimeControl, controller_election_id

        timeout = self.options.ready_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        grpc_port = self._chosen_ports()[1]
        interval = 0.005
        while not (port_open(self.thrift_port) and port_open(grpc_port)):
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise self._fail(f"simple_switch_grpc exited with code {code} before it listened")
            if time.monotonic() >= deadline:
                raise self._fail(f"Thrift port {self.thrift_port} / gRPC {self.grpc_addr} not ready after "
                                 f"{timeout:.0f} s")
            time.sleep(interval)
            interval = min(interval * 1.5, 0.2)
        json_path, p4info = build_paths(self.options.program, self.build_dir)
        try:
            client, info = open_p4runtime(self.device_id, self.grpc_addr, p4info_path=p4info, json_path=json_path,
                                          election_id=controller_election_id())
        except ControlError as exc:
            raise self._fail(str(exc)) from None
        self._p4rt = client
        proc, started = self.proc, self._started
        thrift = Bmv2Control(ProgramSchema.from_p4info(info), P4RuntimeTables(client),
                             ThriftCli(self.thrift_port, binary=CLI_BINARY), on_shutdown=self.stop_process,
                             alive=self.running,
                             usage=lambda: None if proc is None else process_usage(proc.pid, started),
                             priority_queues=PRIORITY_QUEUES)
        self._control = P4RuntimeControl(info, client, thrift, registers_over_p4runtime=False,
                                         on_close=self._close_p4rt)

    def control(self) -> P4RuntimeControl:
        """The switch's control (after :meth:`wait_ready`): tables and counters over P4Runtime,
        registers and queues through the Thrift CLI."""
        if self._control is None:
            raise SwitchStartError(f"switch {self.name}: not ready (call wait_ready first)")
        return self._control

    def stop_process(self, timeout_s: float = 5.0) -> None:
        """Close the P4Runtime client, SIGTERM the switch, SIGKILL it after ``timeout_s`` s."""
        if self._control is not None:
            self._control.close()
            self._control = None
        self._close_p4rt()
        proc, self.proc = self.proc, None
        stop_process_group(proc, self.name, timeout_s)
        self.notifications_path.unlink(missing_ok=True)


