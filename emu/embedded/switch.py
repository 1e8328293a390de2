"""Process entry point of the embedded switch: ``python -m emu.embedded.switch``.

::

    python -m emu.embedded.switch --program p4/symphony.p4 --name s1 \\
        --port 1=s1-eth1 --port 2=s1-eth2 --control /run/symphony-emu/s1.sock \\
        [--seed N] [--log-level info] [--stats-file FILE] [--pcap DIR] \\
        [--p4runtime 127.0.0.1:0 --p4runtime-file FILE --device-id N]

Loads the P4 program (front end + v1model runtime), builds a
:class:`~emu.embedded.core.SwitchCore`, binds the ports with
:class:`~emu.embedded.portio.PortIO` and serves the control API on ``--control``; the
switch is ready once the control socket accepts. SIGTERM, SIGINT or the control
``shutdown`` request stop it: sockets closed, control socket file removed, final
statistics written to ``--stats-file`` (JSON), exit status 0. A user mistake (program
that does not load, missing interface, bad ``--port``) ends with one line on stderr and
exit status 1 (2 for bad usage). Runs on uvloop when it is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from emu.embedded.control import ControlAPI, ControlServer, _jsonable
from emu.embedded.core import SwitchCore
from emu.embedded.portio import PortIO

logger = logging.getLogger("emu.embedded.switch")


def parse_port(text: str) -> tuple[int, str]:
    """``"1=s1-eth1"`` -> ``(1, "s1-eth1")``; ValueError with the fix otherwise."""
    num, sep, ifname = text.partition("=")
    if not sep or not ifname or not num.strip().isdigit():
        raise ValueError(f"--port {text!r}: expected NUMBER=INTERFACE, e.g. 1=s1-eth1")
    port = int(num)
    if not 0 <= port < 511:
        raise ValueError(f"--port {text!r}: port number must be 0..510")
    return port, ifname.strip()


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    ap = argparse.ArgumentParser(prog="python -m emu.embedded.switch",
                                 description="symphony-emu embedded P4 software switch")
    ap.add_argument("--program", required=True, type=Path, help="P4_16 v1model program")
    ap.add_argument("--name", required=True, help="switch name (logs, stats)")
    ap.add_argument("--port", action="append", default=[], metavar="N=IFNAME",
                    help="switch port N bound to interface IFNAME (repeat)")
    ap.add_argument("--control", required=True, type=Path, help="Unix socket path of the control API")
    ap.add_argument("--seed", type=int, default=None, help="seed of the P4 random() extern")
    ap.add_argument("--log-level", default="info",
                    choices=["debug", "info", "warning", "error", "critical"])
    ap.add_argument("--stats-file", type=Path, default=None, help="write final statistics here (JSON)")
    ap.add_argument("--no-rx-ring", action="store_true",
                    help="read frames with recv() instead of a PACKET_MMAP receive ring")
    ap.add_argument("--pcap", type=Path, default=None, metavar="DIR",
                    help="write one pcap per port to DIR/<name>-eth<port>.pcap (frames in and out)")
    ap.add_argument("--p4runtime", default=None, metavar="HOST:PORT",
                    help="serve P4Runtime here (loopback only; port 0 picks a free port)")
    ap.add_argument("--p4runtime-file", type=Path, default=None,
                    help="write the bound P4Runtime address here once it serves")
    ap.add_argument("--device-id", type=int, default=1, help="P4Runtime device id (0 or more; simple_switch_grpc uses 0)")
    ap.add_argument("--cpu-port", type=int, default=None, metavar="PORT",
                    help="the controller's port (as simple_switch_grpc's --cpu-port): frames sent there are "
                         "P4Runtime PacketIns, PacketOuts enter there (needs --p4runtime)")
    return ap


def check_loopback(address: str) -> str:
    """``address`` if its host is a loopback address; ValueError naming the flag otherwise."""
    import ipaddress

    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        ok = bool(sep) and port.isdigit() and (host == "localhost" or ipaddress.ip_address(host).is_loopback)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"--p4runtime {address!r}: expected a loopback HOST:PORT, e.g. 127.0.0.1:0")
    return address


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_stats(path: Path, stats: dict[str, Any]) -> None:
    """Write ``stats`` as JSON to ``path`` atomically (temporary file + rename)."""
    write_text_atomic(path, json.dumps(stats, indent=2, sort_keys=True, default=str) + "\n")




#: Seconds between flushes of the pcap files to disk.
PCAP_FLUSH_S = 1.0


def process_cpu() -> dict[str, int] | None:
    """This process's ``{"cpu_ns", "wait_ns", "slices"}`` so far: ns on a CPU, ns runnable but
    waiting for one, times scheduled onto a CPU (/proc/self/schedstat, Linux ``sched_info``;
    None without it). Per scheme (after - before) they give the switch's CPU per frame and
    its mean wait for a CPU per wake-up (emu.vtime.hostcost's switch terms)."""
    try:
        run_ns, wait_ns, slices = Path("/proc/self/schedstat").read_text().split()[:3]
        return {"cpu_ns": int(run_ns), "wait_ns": int(wait_ns), "slices": int(slices)}
    except (OSError, ValueError):
        return None


class ProcessControlAPI(ControlAPI):
    """The switch process's control API: :meth:`stats` adds ``cpu`` (:func:`process_cpu`),
    which only a real-time switch has (virtual time's in-process ControlAPI leaves it out)."""

    def stats(self) -> dict[str, Any]:
        """``SwitchCore.stats()`` plus this process's ``cpu`` (when the kernel gives it)."""
        out = super().stats()
        cpu = process_cpu()
        if cpu is not None:
            out["cpu"] = cpu
        return out


async def serve(core: SwitchCore, interfaces: dict[int, str], control_path: Path,
                name: str, pcap_dir: Path | None = None, *, p4runtime: str | None = None,
                p4runtime_file: Path | None = None, device_id: int = 1, rx_ring: bool = True,
                cpu_port: int | None = None) -> dict[str, Any]:
    """Run the switch until SIGTERM/SIGINT or a control ``shutdown``; returns final stats.

    ``pcap_dir``: write one capture per port there (:mod:`emu.embedded.pcap`). With
    ``p4runtime`` (a loopback ``HOST:PORT``) a P4Runtime server runs beside the control
    socket; its bound address goes to ``p4runtime_file`` before the control socket accepts.
    ``cpu_port`` (a port of ``core`` with no interface): P4Runtime packet I/O through it.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    capture = None
    if pcap_dir is not None:
        from emu.embedded.pcap import PortCaptures

        capture = PortCaptures(pcap_dir, name, interfaces)

        def flush_captures() -> None:
            capture.flush()
            loop.call_later(PCAP_FLUSH_S, flush_captures)

        loop.call_later(PCAP_FLUSH_S, flush_captures)
    portio = PortIO(core, interfaces, loop, capture=capture, rx_ring=rx_ring)
    try:
        portio.start()
    except OSError:
        if capture is not None:
            capture.close()
        raise
    api = ProcessControlAPI(core, on_shutdown=stop.set)
    server = ControlServer(api, control_path)
    p4rt: Any = None
    started = time.monotonic()
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if p4runtime is not None:
            from emu.embedded.p4runtime_server import P4RuntimeServer, P4RuntimeService, loop_runner

            def inject(frame: bytes) -> None:  # a PacketOut, on the loop: in at the CPU port, out at once
                now_us = time.monotonic_ns() // 1000
                core.receive(cpu_port, frame, now_us)
                portio.flush(now_us)

            service = P4RuntimeService(api, device_id=device_id, run=loop_runner(loop), cpu_port=cpu_port,
                                       inject=inject if cpu_port is not None else None)
            if cpu_port is not None:
                portio.on_cpu_frame = (cpu_port, service.packet_in)
            p4rt = P4RuntimeServer(service, p4runtime)
            bound = p4rt.start()
            if p4runtime_file is not None:
                write_text_atomic(p4runtime_file, bound + "\n")
            logger.info("switch %s: P4Runtime device %d on %s", name, device_id, bound)
        await server.start()
        logger.info("switch %s ready: control %s", name, control_path)
        await stop.wait()
        logger.info("switch %s stopping", name)
    finally:
        portio.close()
        if capture is not None:
            capture.close()
        if p4rt is not None:  # off the loop: a request may be waiting for the loop to run it
            await loop.run_in_executor(None, p4rt.stop)
            if p4runtime_file is not None:
                p4runtime_file.unlink(missing_ok=True)
        await server.close()
        server.remove_socket_file()
    stats = core.stats()
    stats["name"] = name
    stats["uptime_s"] = round(time.monotonic() - started, 3)
    stats["portio"] = portio.stats()
    if capture is not None:
        stats["pcap"] = {"dir": str(pcap_dir), "frames": capture.frames}
    return stats


def _new_loop_factory() -> Any:
    try:
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return None
    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> int:
    """Run the switch process; returns the exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format=f"%(asctime)s {args.name} %(levelname)s %(name)s: %(message)s")
    try:
        interfaces: dict[int, str] = {}
        for text in args.port:
            port, ifname = parse_port(text)
            if port in interfaces:
                raise ValueError(f"--port {text!r}: port {port} given twice")
            interfaces[port] = ifname
        if not interfaces:
            raise ValueError("no --port given; add --port 1=IFNAME for each interface")
        if args.p4runtime is not None:
            check_loopback(args.p4runtime)
        if not 0 <= args.device_id < 1 << 64:
            raise ValueError(f"--device-id {args.device_id}: must be 0..2**64-1")
        if args.cpu_port is not None:
            if args.p4runtime is None:
                raise ValueError("--cpu-port needs --p4runtime (packet I/O goes over P4Runtime)")
            if not 0 <= args.cpu_port < 511 or args.cpu_port in interfaces:
                raise ValueError(f"--cpu-port {args.cpu_port}: must be 0..510 and not a --port")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from emu.embedded.errors import P4FrontendError
    from emu.embedded.frontend import load_program
    from emu.embedded.runtime import Pipeline

    try:
        program = load_program(args.program)
        pipeline = Pipeline(program, seed=args.seed)
    except P4FrontendError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {args.program}: {e.strerror or e}", file=sys.stderr)
        return 1
    core = SwitchCore(pipeline, [*interfaces, *([] if args.cpu_port is None else [args.cpu_port])])
    # The compiled program and its tables live for the whole run: move them out of the
    # collector's view so that collections triggered by per-packet tuples stay cheap.
    gc.collect()
    gc.freeze()

    factory = _new_loop_factory()
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            stats = runner.run(serve(core, interfaces, args.control, args.name, args.pcap,
                                     p4runtime=args.p4runtime, p4runtime_file=args.p4runtime_file,
                                     device_id=args.device_id, rx_ring=not args.no_rx_ring,
                                     cpu_port=args.cpu_port))
    except OSError as e:
        print(f"error: switch {args.name}: {e.strerror or e}", file=sys.stderr)
        return 1
    if args.stats_file is not None:
        try:
            write_stats(args.stats_file, _jsonable(stats))
        except OSError as e:
            print(f"error: --stats-file {args.stats_file}: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
