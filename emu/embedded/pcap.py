"""Packet captures of the embedded switch: one pcap file per switch port (``--pcap DIR``).

The switch process writes what each port received (at its arrival time) and what it
sent (at its departure from the traffic manager), so queueing delay, drops and the ECN
marks the P4 program set all show in the capture. Files are classic pcap (Ethernet link
type, microsecond timestamps on the wall clock), written with scapy's ``PcapWriter``;
like ``tcpdump -i IF`` the file of a port holds both directions: the Ethernet/IP
addresses tell them apart. Files are named ``<switch>-eth<port>.pcap`` (Mininet's
interface names). Dissect the CTH with ``tools/wireshark/cth.lua``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

from scapy.data import DLT_EN10MB
from scapy.utils import PcapWriter

__all__ = ["PortCaptures", "capture_path"]

logger = logging.getLogger(__name__)


def capture_path(directory: Path, switch: str, port: int) -> Path:
    """The pcap file of ``switch``'s port ``port`` in ``directory``."""
    return Path(directory) / f"{switch}-eth{port}.pcap"


class PortCaptures:
    """Writers of the pcap files of ``ports`` of ``switch`` in ``directory`` (created if missing).

    ``record(port, frame, now_us)`` appends a frame; ``now_us`` is the switch's monotonic
    clock (``time.monotonic_ns() // 1000``), converted to the wall clock with the offset
    measured at construction. Writes are buffered: ``flush()`` pushes them to the files
    (the switch does so every second and at exit), ``close()`` flushes and closes. Raises
    OSError naming the file when one cannot be created.
    """

    def __init__(self, directory: Path, switch: str, ports: Iterable[int]) -> None:
        self.directory = Path(directory)
        self._offset_us = time.time_ns() // 1000 - time.monotonic_ns() // 1000
        self._writers: dict[int, PcapWriter] = {}
        self.frames = 0
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for port in sorted(set(ports)):
                path = capture_path(self.directory, switch, port)
                w = PcapWriter(str(path), linktype=DLT_EN10MB, sync=False)
                w.write_header(None)  # an empty capture is still a valid pcap file
                self._writers[port] = w
        except OSError as e:
            self.close()
            raise OSError(e.errno, f"--pcap {self.directory}: {e.strerror or e}") from None
        logger.info("capturing ports %s to %s", ", ".join(map(str, sorted(self._writers))), self.directory)

    @property
    def paths(self) -> list[str]:
        """The capture files, by port."""
        return [w.filename for _p, w in sorted(self._writers.items())]

    def record(self, port: int, frame: bytes, now_us: int) -> None:
        """Append ``frame`` seen on ``port`` at monotonic time ``now_us`` (microseconds)."""
        w = self._writers.get(port)
        if w is None:
            return
        t = now_us + self._offset_us
        w.write_packet(frame, sec=t // 1_000_000, usec=t % 1_000_000)
        self.frames += 1

    def flush(self) -> None:
        """Write buffered frames to the files."""
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        """Flush and close every file (safe to call twice)."""
        for w in self._writers.values():
            try:
                w.close()
            except OSError as e:
                logger.warning("closing capture %s: %s", w.filename, e)
        self._writers.clear()
