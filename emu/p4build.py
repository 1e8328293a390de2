"""The P4 builds of Symphony: one record per build (docs/DESIGN.md sections 4 and 10).

A :class:`P4Build` says which file a switch loads, for which architecture, and how that
architecture counts queue depth (``standard_metadata.enq_qdepth`` in packets on v1model,
``eg_intr_md.enq_qdepth`` in 176-byte buffer cells on Tofino2). The controller converts
queue-depth thresholds with it (:func:`emu.routing.qdepth_unit`), the embedded T2NA build
counts its queues with the same cell size (``emu.embedded.t2na.qdepth_cells``), the runner
and the targets pick the source file from :data:`P4_BUILDS` (in the checkout's ``p4/`` or an
installed copy's, :mod:`emu.data`). Imports nothing of the project but :mod:`emu.data`, so
every layer may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .data import data_dir

__all__ = ["DEFAULT_BUILD", "P4_BUILDS", "T2NA_CELL_BYTES", "P4Build", "p4_build"]

_P4_DIR = data_dir("p4")

#: Bytes of a Tofino2 traffic-manager buffer cell (docs/tofino.md, "Queue depth in cells").
T2NA_CELL_BYTES = 176


@dataclass(frozen=True)
class P4Build:
    """One P4 build: ``name`` (the ``--p4`` value), ``source`` (the P4 file), ``architecture``
    (``v1model`` or ``t2na``), ``qdepth_unit`` (what ``enq_qdepth`` counts: ``packets`` or
    ``cells``) and ``cell_bytes`` (bytes per cell; None when depth is in packets)."""

    name: str
    source: Path
    architecture: Literal["v1model", "t2na"]
    qdepth_unit: Literal["packets", "cells"]
    cell_bytes: int | None = None
    #: Nanoseconds per tick of the egress timestamp the ``spaced`` marking compares
    #: (v1model ``egress_global_timestamp``: microseconds; T2NA ``global_tstamp``: ns).
    timestamp_ns: int = 1000

    def units_per_frame(self, frame_bytes: int) -> int:
        """Queue-depth units one queued frame of ``frame_bytes`` bytes occupies: 1 packet, or
        ceil(frame_bytes / cell_bytes) cells (at least 1)."""
        if self.cell_bytes is None:
            return 1
        return max(1, -(-int(frame_bytes) // self.cell_bytes))


#: ``--p4`` name -> build.
P4_BUILDS: dict[str, P4Build] = {
    "v1model": P4Build("v1model", _P4_DIR / "symphony.p4", "v1model", "packets"),
    "tofino": P4Build("tofino", _P4_DIR / "tofino" / "symphony.p4", "t2na", "cells", T2NA_CELL_BYTES, 1),
}
#: The build a run uses unless ``--p4`` says otherwise.
DEFAULT_BUILD = P4_BUILDS["v1model"]


def p4_build(name: str) -> P4Build:
    """The build called ``name``; ValueError naming the known builds otherwise."""
    try:
        return P4_BUILDS[name]
    except KeyError:
        raise ValueError(f"unknown P4 build {name!r}; use one of {', '.join(P4_BUILDS)}") from None
