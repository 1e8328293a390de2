"""The ``bmv2`` target: ``simple_switch_grpc`` per Mininet switch (DESIGN.md section 2).

Status: the installation check, the compile step (``p4c --target bmv2 --arch v1model``) and
the process start are here; the control path (tables over P4Runtime with p4runtime-shell,
queues and register reads through ``simple_switch_CLI``) is not written yet, so
:meth:`Bmv2Switch.available` reports the target as unavailable even where the binaries exist.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

from mininet.node import Switch

from emu.targets import SwitchOptions, SwitchStartError

log = logging.getLogger(__name__)

#: Binaries the target needs, with how to get them.
REQUIRED_BINARIES = {
    "simple_switch_grpc": "build behavioral-model with --with-pi (github.com/p4lang/behavioral-model)",
    "p4c": "install p4c (apt package p4lang-p4c from the p4lang OBS repository)",
}
#: Whether the P4Runtime/Thrift control path is implemented.
CONTROL_IMPLEMENTED = False
#: First gRPC port; switch i listens on BASE + i.
GRPC_PORT_BASE = 9559
#: First Thrift port; switch i listens on BASE + i.
THRIFT_PORT_BASE = 9090


def missing_binaries() -> list[str]:
    """Names of the required binaries not on PATH."""
    return [name for name in REQUIRED_BINARIES if shutil.which(name) is None]


def compile_program(program: Path, out_dir: Path) -> tuple[Path, Path]:
    """Compile ``program`` with p4c for bmv2/v1model; returns (bmv2 JSON, P4Info text) paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / (program.stem + ".json")
    p4info = out_dir / (program.stem + ".p4info.txtpb")
    cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", "-o", str(out_dir),
           "--p4runtime-files", str(p4info), str(program)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        first = (res.stderr.strip().splitlines() or ["no output"])[0]
        raise SwitchStartError(f"p4c failed on {program}: {first}")
    return json_path, p4info


class Bmv2Switch(Switch):
    """A Mininet switch backed by ``simple_switch_grpc`` (control path not implemented yet)."""

    target = "bmv2"

    def __init__(self, name: str, options: SwitchOptions | None = None, seed_offset: int = 0,
                 **params: Any) -> None:
        params.setdefault("inNamespace", False)
        super().__init__(name, **params)
        self.options = options or SwitchOptions()
        self.index = seed_offset
        self.proc: subprocess.Popen | None = None

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether bmv2 can run here, and if not, why (one line)."""
        missing = missing_binaries()
        if missing:
            how = "; ".join(f"{name}: {REQUIRED_BINARIES[name]}" for name in missing)
            return False, (f"bmv2 target needs simple_switch_grpc and p4c, which are not installed: "
                           f"missing {', '.join(missing)} ({how}); use --target embedded")
        if importlib.util.find_spec("p4runtime_sh") is None:
            return False, "bmv2 target needs p4runtime-shell: pip install -e '.[bmv2]'"
        if not CONTROL_IMPLEMENTED:
            return False, ("bmv2 target: the P4Runtime control path is not implemented yet; "
                           "use --target embedded")
        return True, ""

    @classmethod
    def setup(cls) -> None:
        """Mininet's installation hook: raise if the target cannot run."""
        from emu.targets import TargetUnavailable

        ok, reason = cls.available()
        if not ok:
            raise TargetUnavailable(reason)

    def start(self, controllers: list) -> None:  # noqa: ARG002 - Mininet's signature
        """Compile the program (once per run folder) and start simple_switch_grpc."""
        build = self.options.log_dir / "bmv2"
        json_path = build / (self.options.program.stem + ".json")
        if not json_path.exists():
            json_path, _ = compile_program(self.options.program, build)
        cmd = ["simple_switch_grpc", "--device-id", str(self.index + 1), "--thrift-port",
               str(THRIFT_PORT_BASE + self.index)]
        for intf, port in sorted(self.ports.items(), key=lambda kv: kv[1]):
            if intf.name != "lo":
                cmd += ["-i", f"{port}@{intf.name}"]
        cmd += [str(json_path), "--", "--grpc-server-addr", f"127.0.0.1:{GRPC_PORT_BASE + self.index}"]
        logf = open(self.options.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115 - lives with proc
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Not implemented: see the module docstring."""
        raise SwitchStartError("bmv2 target: the P4Runtime control path is not implemented yet")

    def control(self) -> Any:
        """Not implemented: see the module docstring."""
        raise SwitchStartError("bmv2 target: the P4Runtime control path is not implemented yet")

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        """Stop simple_switch_grpc and delete the interfaces."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        super().stop(deleteIntfs)
