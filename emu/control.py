"""The control interface of a switch, the same for every target (docs/DESIGN.md section 2).

:class:`SwitchControl` is the one typed contract that the controller (``emu.network``),
the CLI, the STF runner and the tests use to program a running switch. Its
implementations:

- ``emu.embedded.control.ControlAPI``: in process, on a ``SwitchCore`` (no process, no
  socket: the STF runner and the virtual-time mode drive cores through it);
- ``emu.embedded.control.ControlClient``: the same calls over the embedded switch's
  control socket;
- ``emu.targets.bmv2_control.Bmv2Control``: bmv2 (P4Runtime for tables, the Thrift CLI
  for registers, counters and queues).

Names are fully qualified P4 names (``MyIngress.ipv4_lpm``, key ``hdr.ipv4.dstAddr``,
action ``MyIngress.ipv4_forward``, parameters by their P4 names). Values and match keys
follow :mod:`emu.encoding` on every target. Every method raises :class:`ControlError`
with one line naming the table, field, register or port and the problem; a switch that
cannot be reached raises ``ConnectionError``.
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["CONTRACT_METHODS", "ControlError", "EntryExistsError", "EntryNotFoundError", "SwitchControl",
           "TableFullError"]


class ControlError(Exception):
    """A control-plane request that cannot be applied (unknown name, width, duplicate key);
    ``str()`` is one line."""


class EntryExistsError(ControlError):
    """An insert whose key is already in the table (P4Runtime ``ALREADY_EXISTS``)."""


class EntryNotFoundError(ControlError):
    """A modify or delete of a key the table does not hold (P4Runtime ``NOT_FOUND``)."""


class TableFullError(ControlError):
    """An insert into a table that holds ``size`` entries (P4Runtime ``RESOURCE_EXHAUSTED``)."""


class SwitchControl(abc.ABC):
    """What every target's control object does (docs/interfaces.md section 3)."""

    # -- tables -------------------------------------------------------------------------
    @abc.abstractmethod
    def table_add(self, table: str, match: dict[str, Any], action: str,
                  params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Add an entry (match spelled as in :mod:`emu.encoding`); ControlError on a duplicate."""

    @abc.abstractmethod
    def table_modify(self, table: str, match: dict[str, Any], action: str,
                     params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Change the action of an existing entry; ControlError if there is none."""

    @abc.abstractmethod
    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """Delete an existing entry; ControlError if there is none."""

    @abc.abstractmethod
    def table_clear(self, table: str) -> None:
        """Delete every entry of ``table`` (the default action stays)."""

    @abc.abstractmethod
    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """Set the action run on a miss."""

    # -- registers and counters -----------------------------------------------------------
    @abc.abstractmethod
    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or every cell when ``index`` is None."""

    @abc.abstractmethod
    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell (the value must fit the register's width)."""

    @abc.abstractmethod
    def register_reset(self, name: str) -> None:
        """Set every cell to 0."""

    @abc.abstractmethod
    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """``(packets, bytes)`` of one cell, or of every cell when ``index`` is None."""

    # -- switch ---------------------------------------------------------------------------
    @abc.abstractmethod
    def set_queue(self, port: int, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> None:
        """Shape egress ``port``: rate in bit/s (0 = unlimited), depth in packets, delay in
        microseconds; None leaves a value unchanged. A target that cannot model one says so
        in its log and in :meth:`stats`."""

    @abc.abstractmethod
    def stats(self) -> dict[str, Any]:
        """Target statistics (the embedded switch: ``SwitchCore.stats()``; port keys are ints)."""

    @abc.abstractmethod
    def ping(self) -> str:
        """``"pong"`` when the switch answers; ConnectionError otherwise."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Ask the switch to stop."""

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release the connection to the switch (safe to call twice)."""

    def __enter__(self) -> SwitchControl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The contract's method names (what a control socket serves).
CONTRACT_METHODS: tuple[str, ...] = tuple(sorted(SwitchControl.__abstractmethods__))
