"""The controller: what programs a network of P4 switches, whichever back end runs it.

:class:`ProgrammedNetwork` holds the controller's operations over each switch's control
interface (an :class:`emu.control.SwitchControl`): :meth:`~ProgrammedNetwork.program`
installs queues, routes, ECN thresholds and the per-job Symphony configuration from
:mod:`emu.routing`; :meth:`~ProgrammedNetwork.set_mode` switches every job between baseline
and Symphony; :meth:`~ProgrammedNetwork.reset_jobs` zeroes the tracker registers;
:meth:`~ProgrammedNetwork.read_counters` and :meth:`~ProgrammedNetwork.read_registers` read
them back. The P4 names come from :mod:`emu.p4names`.

Each back end subclasses it with its network: the Mininet one (:class:`emu.mininet.network.EmuNetwork`,
switch processes reached over sockets) and the virtual-time one
(:class:`emu.vtime.network.SimNetwork`, switch cores in process). It imports no Mininet.
"""

from __future__ import annotations

import logging
from typing import Any

from hostapps.wire import STEP_WINDOW, flow_index, slot_index

from . import p4names, routing
from .control import SwitchControl
from .topology_plan import NetworkPlan
from .topology_schema import Topology

log = logging.getLogger(__name__)


class NetworkError(Exception):
    """The network could not be built or programmed; ``str()`` is one line."""


class ProgrammedNetwork:
    """Controller-side operations over the switches' control interface, for any back end.

    A subclass provides ``topology``, ``plan``, ``mode`` and :meth:`control` (the control
    object of one switch, an :class:`emu.control.SwitchControl`: ``ControlAPI`` in process,
    its socket client, or a target's client) plus :meth:`check_switches` and :meth:`stop`. Routes, queues, ECN
    thresholds, the Symphony configuration, register resets and counter reads are written
    once here, so every back end is programmed by the same code (emu.routing).
    """

    topology: Topology
    plan: NetworkPlan
    #: the scheme this controller last programmed (None before program); the switches may hold
    #: another since (a p4runtime-shell write): :meth:`read_modes` reads what they hold
    programmed_scheme: str | None
    #: the P4 build the switches run (emu.p4build.P4_BUILDS): entries use its queue-depth unit
    p4: str = "v1model"

    def control(self, name: str) -> SwitchControl:
        """The control object of switch ``name`` (:class:`emu.control.SwitchControl`)."""
        raise NotImplementedError

    def check_switches(self) -> None:
        """Raise NetworkError if a switch died."""

    def p4runtime_endpoints(self) -> dict[str, tuple[str, int]]:
        """Switch name -> (P4Runtime ``host:port``, device id) of every switch that serves one."""
        return {}

    def stop(self) -> None:
        """Stop the network (idempotent)."""

    @property
    def switch_names(self) -> list[str]:
        """Switch names in file order."""
        return [s.name for s in self.plan.switches]

    @property
    def node_names(self) -> list[str]:
        """Every host and switch name."""
        return [h.name for h in self.plan.hosts] + self.switch_names

    # -- programming ----------------------------------------------------------------------
    def program(self, scheme: str = "baseline") -> None:
        """Install queues, routes, ECN thresholds and Symphony configuration on every switch.

        The entries come from :func:`emu.routing.switch_programs`; ``scheme`` sets the mode of
        the per-job ``symphony_config`` entries (see :meth:`set_mode`).
        """
        programs = routing.switch_programs(self.topology, scheme, p4=self.p4)  # type: ignore[arg-type]
        for sw in self.plan.switches:
            prog = programs[sw.name]
            ctl = self.control(sw.name)
            try:
                for queue in prog.queues:
                    ctl.set_queue(queue.port, rate_bps=queue.rate_bps, depth_pkts=queue.depth_pkts,
                                  delay_us=queue.delay_us)
                for entry in prog.entries:
                    ctl.table_add(entry.table, entry.match, entry.action, entry.params, entry.priority)
            except Exception as exc:  # ControlError / ConnectionError: one line
                raise NetworkError(f"programming switch {sw.name} failed: {exc}") from None
        self.programmed_scheme = scheme
        log.info("programmed %d switches (%s)", len(self.plan.switches), scheme)

    def set_mode(self, scheme: str, placebo: dict[int, float] | None = None) -> None:
        """Reinstall every job's ``symphony_config`` entry with mode baseline (0), symphony (1)
        or placebo (2), and the ``placebo_marking`` entries (``placebo``: job id -> marking
        probability, placebo only; emu.routing.placebo_entries).

        Everything else (routes, queues, thresholds, slope, gate, expected flows) is the same
        in every mode: the schemes differ only in Symphony's marking.
        """
        if scheme not in p4names.SCHEME_MODES:
            raise NetworkError(f"unknown scheme {scheme!r}: use one of {', '.join(p4names.SCHEME_MODES)}")
        if scheme != "placebo" and set(self.read_modes().values()) == {scheme}:
            return  # what the switches hold (a p4runtime-shell write may have changed it), not self.programmed_scheme
        programs = routing.switch_programs(self.topology, scheme, p4=self.p4,  # type: ignore[arg-type]
                                           placebo=placebo)
        for sw in self.plan.switches:
            ctl = self.control(sw.name)
            try:
                ctl.table_clear(p4names.TABLE_SYMPHONY)
                ctl.table_clear(p4names.TABLE_PLACEBO)
                for entry in programs[sw.name].entries:
                    if entry.table in (p4names.TABLE_SYMPHONY, p4names.TABLE_PLACEBO):
                        ctl.table_add(entry.table, entry.match, entry.action, entry.params, entry.priority)
            except Exception as exc:
                raise NetworkError(f"configuring Symphony on switch {sw.name} failed: {exc}") from None
        self.programmed_scheme = scheme

    def read_modes(self) -> dict[str, str]:
        """Per switch, the mode its ``symphony_config`` entries hold, read from the switch
        (``SwitchControl.table_read``): a scheme name, ``"mixed"`` when its jobs differ,
        ``"none"`` without an entry, ``"mode N"`` for a value no scheme uses."""
        names = {v: k for k, v in p4names.SCHEME_MODES.items()}
        out = {}
        for name in self.switch_names:
            modes = {e.params.get("mode") for e in self.control(name).table_read(p4names.TABLE_SYMPHONY)}
            if not modes:
                out[name] = "none"
            elif len(modes) > 1:
                out[name] = "mixed"
            else:
                (m,) = modes
                out[name] = names.get(m, f"mode {m}")
        return out

    def mode_summary(self) -> str:
        """One word when every switch (with Symphony entries) holds the same mode, else each
        switch's: ``symphony`` / ``mixed: s1 symphony, s2 baseline``; read from the switches."""
        modes = {k: v for k, v in self.read_modes().items() if v != "none"}
        if not modes:
            return "none"
        if len(set(modes.values())) == 1:
            return next(iter(modes.values()))
        return "mixed: " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items()))

    def reset_jobs(self) -> None:
        """Zero the Symphony tracker registers on every switch (before each run of the jobs)."""
        for name in self.switch_names:
            ctl = self.control(name)
            for reg in p4names.JOB_REGISTERS:
                ctl.register_reset(reg)

    def read_counters(self) -> dict[str, dict[str, Any]]:
        """Per switch: per-job mark counters, per-port drops, and the switch core's stats.

        Shape: ``{switch: {"symphony_marks": [pkts per job], "queue_marks": [...],
        "symphony_eligible": [...], "drops": [pkts per port], "parser_errors": [...],
        "stats": ctl.stats()}}`` (the keys are ``p4names.short_name`` of ``JOB_COUNTERS`` and
        ``PORT_COUNTERS``). Counters are never reset: a caller takes differences of two reads.
        """
        out: dict[str, dict[str, Any]] = {}
        for name in self.switch_names:
            ctl = self.control(name)
            entry: dict[str, Any] = {}
            for counter in (*p4names.JOB_COUNTERS, *p4names.PORT_COUNTERS):
                values = ctl.counter_read(counter)
                entry[p4names.short_name(counter)] = [int(v[0]) for v in values]
            entry["stats"] = ctl.stats()
            if entry["stats"].get("kept_up") is False:  # bmv2: its process was CPU-bound since the last read
                log.warning("switch %s (%s) was busy %.0f%% of a CPU core since the last read: it did not keep "
                            "up with the links, so queues and drops are the switch's, not the network's "
                            "(docs/bmv2.md)", name, entry["stats"].get("target", "?"),
                            100 * float(entry["stats"].get("cpu_share", 0)))
            out[name] = entry
        return out

    def read_registers(self, name: str, job: int, channel: int = 0) -> dict[str, Any]:
        """Symphony registers of ``job`` on switch ``name``.

        ``{"frontier": step, "flow_step": [step per rank], "step_count": [[step, count] per
        slot s mod W]}``: a step_count slot holds the step id in its high 16 bits and the
        number of flows that entered it in the low 16 (docs/DESIGN.md section 4).
        ``channel``: whose flows ``flow_step`` lists (:func:`hostapps.wire.flow_index`).
        """
        ctl = self.control(name)
        nranks = len(self.topology.job(job).ranks)
        slots = [int(ctl.register_read(p4names.REGISTER_STEP_COUNT, slot_index(job, s)))
                 for s in range(STEP_WINDOW)]
        return {
            "frontier": ctl.register_read(p4names.REGISTER_FRONTIER, job),
            "flow_step": [ctl.register_read(p4names.REGISTER_FLOW_STEP, flow_index(job, channel, r))
                          for r in range(nranks)],
            "step_count": [[v >> 16, v & 0xFFFF] for v in slots],
        }


__all__ = ["NetworkError", "ProgrammedNetwork"]
