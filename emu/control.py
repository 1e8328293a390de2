"""The control interface of a switch, the same for every target (docs/DESIGN.md section 2).

:class:`SwitchControl` is the one typed contract that the controller (``emu.controller``),
the CLI, the STF runner and the tests use to program a running switch. Its
implementations:

- ``emu.embedded.control.ControlAPI``: in process, on a ``SwitchCore`` (no process, no
  socket: the STF runner and the virtual-time mode drive cores through it);
- ``emu.embedded.control.ControlClient``: the same calls over the embedded switch's
  control socket;
- ``emu.targets.bmv2_control.Bmv2Control``: bmv2 (P4Runtime for tables, the Thrift CLI
  for registers, counters and queues);
- ``emu.targets.p4runtime_control.P4RuntimeControl``: either target over P4Runtime.

The contract writes and reads back: :meth:`SwitchControl.table_read` gives a table's
entries as :class:`TableEntry` (what was written, in the same spelling), so a controller
or the CLI sees the switch's state, not its own memory of it (a student's p4runtime-shell
may have changed it). :meth:`SwitchControl.reset_state` is what a new pipeline starts
with. :class:`ReplicationControl` is an optional part (the packet replication engine:
multicast groups, clone sessions) that a target implements when it has one; callers ask
with ``isinstance``.

Names are fully qualified P4 names (``MyIngress.ipv4_lpm``, key ``hdr.ipv4.dstAddr``,
action ``MyIngress.ipv4_forward``, parameters by their P4 names). Values and match keys
follow :mod:`emu.encoding` on every target. Every method raises :class:`ControlError`
with one line naming the table, field, register or port and the problem; a switch that
cannot be reached raises ``ConnectionError``.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

__all__ = ["CONTRACT_METHODS", "REPLICATION_METHODS", "ControlError", "EntryExistsError", "EntryNotFoundError",
           "ReplicationControl", "SwitchControl", "TableEntry", "TableFullError"]


class ControlError(Exception):
    """A control-plane request that cannot be applied (unknown name, width, duplicate key);
    ``str()`` is one line."""


class EntryExistsError(ControlError):
    """An insert whose key is already in the table (P4Runtime ``ALREADY_EXISTS``)."""


class EntryNotFoundError(ControlError):
    """A modify or delete of a key the table does not hold (P4Runtime ``NOT_FOUND``)."""


class TableFullError(ControlError):
    """An insert into a table that holds ``size`` entries (P4Runtime ``RESOURCE_EXHAUSTED``)."""


@dataclasses.dataclass(frozen=True)
class TableEntry:
    """One table entry of the control API (docs/interfaces.md section 3): what ``table_add``
    takes and ``table_read`` gives back. ``match`` is spelled as :mod:`emu.encoding` spells
    it (``table_read``: canonical ints, ``[value, prefix_len]``, ``[value, mask]``,
    ``[low, high]``; don't-care fields left out), ``params`` by parameter name; ``priority``
    only for ternary/range/optional tables."""

    table: str
    match: dict[str, Any]
    action: str
    params: dict[str, Any]
    priority: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """``{"table", "match", "action", "params"}`` (+ ``priority`` when set)."""
        out: dict[str, Any] = {
            "table": self.table,
            "match": dict(self.match),
            "action": self.action,
            "params": dict(self.params),
        }
        if self.priority is not None:
            out["priority"] = self.priority
        return out


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

    @abc.abstractmethod
    def table_reset_default(self, table: str) -> None:
        """The action run on a miss back to the program's ``default_action``."""

    @abc.abstractmethod
    def table_read(self, table: str) -> list[TableEntry]:
        """Every entry of ``table`` as the switch holds it (const entries too), in no set order."""

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

    @abc.abstractmethod
    def counter_reset(self, name: str) -> None:
        """Set every cell of counter ``name`` to (0, 0)."""

    @abc.abstractmethod
    def reset_state(self) -> None:
        """The state a new pipeline starts with: every table emptied (``const entries``
        stay: they are the program's), every default action back to the program's, every
        register and counter 0 (P4Runtime's VERIFY_AND_COMMIT, section 16.2)."""

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


class ReplicationControl(abc.ABC):
    """The optional part of the contract: v1model's packet replication engine (multicast
    groups, clone sessions), as bmv2's ``mc_*`` / ``mirroring_*`` and P4Runtime's
    ``PacketReplicationEngineEntry`` (section 9.5) program it."""

    @abc.abstractmethod
    def mcast_group_set(self, group: int, replicas: list) -> None:
        """Multicast ``group`` (1..65535) copies a packet to each replica: a port or ``[port, rid]``."""

    @abc.abstractmethod
    def mcast_group_delete(self, group: int) -> None:
        """Delete multicast ``group``."""

    @abc.abstractmethod
    def mcast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """Every multicast group: id -> ``[(port, rid), ...]``."""

    @abc.abstractmethod
    def mirroring_add(self, session: int, port: int) -> None:
        """Clone session ``session`` sends its copies to egress ``port``."""

    @abc.abstractmethod
    def mirroring_delete(self, session: int) -> None:
        """Delete clone session ``session``."""

    @abc.abstractmethod
    def mirror_sessions(self) -> dict[int, int]:
        """Every clone session: id -> egress port."""


#: The contract's method names (what a control socket serves).
CONTRACT_METHODS: tuple[str, ...] = tuple(sorted(SwitchControl.__abstractmethods__))
#: The optional replication part's method names.
REPLICATION_METHODS: tuple[str, ...] = tuple(sorted(ReplicationControl.__abstractmethods__))
