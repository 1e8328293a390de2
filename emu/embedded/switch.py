"""Process entry point of the embedded switch: ``python -m emu.embedded.switch``.

::

    python -m emu.embedded.switch --program p4/symphony.p4 --name s1 \\
        --port 1=s1-eth1 --port 2=s1-eth2 --control /run/symphony-emu/s1.sock \\
        [--seed N] [--log-level info] [--stats-file FILE] [--pcap DIR]

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
    ap.add_argument("--pcap", type=Path, default=None, metavar="DIR",
                    help="write one pcap per port to DIR/<name>-eth<port>.pcap (frames in and out)")
    return ap


def write_stats(path: Path, stats: dict[str, Any]) -> None:
    """Write ``stats`` as JSON to ``path`` atomically (temporary file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(stats, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)




#: Seconds between flushes of the pcap files to disk.
PCAP_FLUSH_S = 1.0


async def serve(core: SwitchCore, interfaces: dict[int, str], control_path: Path,
                name: str, pcap_dir: Path | None = None) -> dict[str, Any]:
    """Run the switch until SIGTERM/SIGINT or a control ``shutdown``; returns final stats.

    ``pcap_dir``: write one capture per port there (:mod:`emu.embedded.pcap`).
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
    portio = PortIO(core, interfaces, loop, capture=capture)
    try:
        portio.start()
    except OSError:
        if capture is not None:
            capture.close()
        raise
    api = ControlAPI(core, on_shutdown=stop.set)
    server = ControlServer(api, control_path)
    started = time.monotonic()
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await server.start()
        logger.info("switch %s ready: control %s", name, control_path)
        await stop.wait()
        logger.info("switch %s stopping", name)
    finally:
        portio.close()
        if capture is not None:
            capture.close()
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
    core = SwitchCore(pipeline, interfaces)
    # The compiled program and its tables live for the whole run: move them out of the
    # collector's view so that collections triggered by per-packet tuples stay cheap.
    gc.collect()
    gc.freeze()

    factory = _new_loop_factory()
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            stats = runner.run(serve(core, interfaces, args.control, args.name, args.pcap))
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
