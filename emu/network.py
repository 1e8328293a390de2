"""Mininet bring-up: build the emulated network of a topology and program its switches.

The topology's :class:`~emu.topology.NetworkPlan` fixes every name, port number and MAC
(pure, no root). :func:`build_network` turns it into a Mininet network:

- hosts are Mininet ``Host`` s with IPv6 off, TX/RX checksum offload off on their interface
  (the embedded switch forwards frames as they are, so a partial checksum would reach the
  receiver and be dropped), MTU 1500 and a static ARP entry for every other host;
- switches are the target's ``Switch`` subclass (one process per switch), whose interfaces
  live in the root namespace with offloads and IPv6 off;
- links are plain veth pairs (no TCLink/netem: the kernel here lacks netem; the switch
  shapes each egress port with the link's rate, delay and queue depth).

:meth:`EmuNetwork.program` installs routes, per-port queues, ECN thresholds and the per-job
Symphony configuration from :mod:`emu.routing`; :meth:`EmuNetwork.set_mode` switches every
job between baseline and Symphony; :meth:`EmuNetwork.reset_jobs` zeroes the tracker registers.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emu.targets import SwitchOptions

if TYPE_CHECKING:
    from emu.control import SwitchControl
    from emu.targets import SwitchTarget
from emu.topology_plan import NetworkPlan
from emu.topology_schema import Topology

log = logging.getLogger(__name__)

#: MTU of every host interface (bytes).
HOST_MTU = 1500
#: Registers that hold a job's Symphony tracker state (docs/interfaces.md section 2).
JOB_REGISTERS = ("MyIngress.flow_step", "MyIngress.step_count", "MyIngress.frontier")
#: Per-job counters (index job id).
JOB_COUNTERS = ("MyEgress.symphony_marks", "MyEgress.queue_marks", "MyEgress.symphony_eligible")
#: Per-port counters (index ingress port).
PORT_COUNTERS = ("MyIngress.drops", "MyIngress.parser_errors")


class NetworkError(Exception):
    """The network could not be built or programmed; ``str()`` is one line."""


def make_topo(plan: NetworkPlan) -> Any:
    """A Mininet ``Topo`` with the plan's hosts, switches and links (records names only)."""
    from mininet.topo import Topo

    topo = Topo()
    for host in plan.hosts:
        topo.addHost(host.name, ip=f"{host.ip}/{host.prefix_len}", mac=host.mac)
    for sw in plan.switches:
        topo.addSwitch(sw.name, dpid=sw.dpid, seed_offset=sw.index)
    port_of = {(p.switch, p.link_index): p for sw in plan.switches for p in sw.ports}
    host_of = {h.name: h for h in plan.hosts}
    for link in plan.links:
        ends = []
        for node in (link.a, link.b):
            if node in host_of:
                ends.append((node, 0, host_of[node].mac))
            else:
                port = port_of[(node, link.index)]
                ends.append((node, port.port, port.mac))
        (n1, p1, m1), (n2, p2, m2) = ends
        topo.addLink(n1, n2, port1=p1, port2=p2, addr1=m1, addr2=m2)
    return topo


def host_setup_script(plan: NetworkPlan, host: str) -> str:
    """Shell commands that prepare ``host``'s namespace (IPv6, offloads, MTU, static ARP)."""
    me = plan.host(host)
    cmds = [
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        f"sysctl -qw net.ipv6.conf.{me.intf}.disable_ipv6=1",
        f"ethtool -K {me.intf} tx off rx off >/dev/null 2>&1",
        f"ip link set dev {me.intf} mtu {HOST_MTU}",
    ]
    for other in plan.hosts:
        if other.name != host:
            cmds.append(f"ip neigh replace {other.ip} lladdr {other.mac} dev {me.intf} nud permanent")
    return "; ".join(cmds) + "; echo __done__:$?"


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
    mode: str | None
    #: the P4 build the switches run (emu.targets.P4_BUILDS): entries use its queue-depth unit
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
        from emu import routing

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
        self.mode = scheme
        log.info("programmed %d switches (%s)", len(self.plan.switches), scheme)

    def set_mode(self, scheme: str, placebo: dict[int, float] | None = None) -> None:
        """Reinstall every job's ``symphony_config`` entry with mode baseline (0), symphony (1)
        or placebo (2), and the ``placebo_marking`` entries (``placebo``: job id -> marking
        probability, placebo only; emu.routing.placebo_entries).

        Everything else (routes, queues, thresholds, slope, gate, expected flows) is the same
        in every mode: the schemes differ only in Symphony's marking.
        """
        from emu import routing

        if scheme not in routing.MODES:
            raise NetworkError(f"unknown scheme {scheme!r}: use one of {', '.join(routing.MODES)}")
        if scheme == self.mode and scheme != "placebo":
            return
        programs = routing.switch_programs(self.topology, scheme, p4=self.p4,  # type: ignore[arg-type]
                                           placebo=placebo)
        for sw in self.plan.switches:
            ctl = self.control(sw.name)
            try:
                ctl.table_clear(routing.TABLE_SYMPHONY)
                ctl.table_clear(routing.TABLE_PLACEBO)
                for entry in programs[sw.name].entries:
                    if entry.table in (routing.TABLE_SYMPHONY, routing.TABLE_PLACEBO):
                        ctl.table_add(entry.table, entry.match, entry.action, entry.params, entry.priority)
            except Exception as exc:
                raise NetworkError(f"configuring Symphony on switch {sw.name} failed: {exc}") from None
        self.mode = scheme

    def reset_jobs(self) -> None:
        """Zero the Symphony tracker registers on every switch (before each run of the jobs)."""
        for name in self.switch_names:
            ctl = self.control(name)
            for reg in JOB_REGISTERS:
                ctl.register_reset(reg)

    def read_counters(self) -> dict[str, dict[str, Any]]:
        """Per switch: per-job mark counters, per-port drops, and the switch core's stats.

        Shape: ``{switch: {"symphony_marks": [pkts per job], "queue_marks": [...],
        "drops": [pkts per port], "parser_errors": [...], "stats": core.stats()}}``.
        """
        out: dict[str, dict[str, Any]] = {}
        for name in self.switch_names:
            ctl = self.control(name)
            entry: dict[str, Any] = {}
            for counter in (*JOB_COUNTERS, *PORT_COUNTERS):
                values = ctl.counter_read(counter)
                entry[counter.split(".", 1)[1]] = [int(v[0]) for v in values]
            entry["stats"] = ctl.stats()
            if entry["stats"].get("kept_up") is False:  # bmv2: its process was CPU-bound since the last read
                log.warning("switch %s (%s) was busy %.0f%% of a CPU core since the last read: it did not keep "
                            "up with the links, so queues and drops are the switch's, not the network's "
                            "(docs/bmv2.md)", name, entry["stats"].get("target", "?"),
                            100 * float(entry["stats"].get("cpu_share", 0)))
            out[name] = entry
        return out

    def read_registers(self, name: str, job: int) -> dict[str, Any]:
        """Symphony registers of ``job`` on switch ``name``.

        ``{"frontier": step, "flow_step": [step per rank], "step_count": [[step, count] per
        slot s mod W]}``: a step_count slot holds the step id in its high 16 bits and the
        number of flows that entered it in the low 16 (docs/DESIGN.md section 4).
        """
        from hostapps.wire import MAX_RANKS, STEP_WINDOW

        ctl = self.control(name)
        nranks = len(self.topology.job(job).ranks)
        slots = [int(ctl.register_read("MyIngress.step_count", job * STEP_WINDOW + s)) for s in range(STEP_WINDOW)]
        return {
            "frontier": ctl.register_read("MyIngress.frontier", job),
            "flow_step": [ctl.register_read("MyIngress.flow_step", job * MAX_RANKS + r) for r in range(nranks)],
            "step_count": [[v >> 16, v & 0xFFFF] for v in slots],
        }


@dataclass
class EmuNetwork(ProgrammedNetwork):
    """A running Mininet network of one topology with its switches ready to program.

    topology/plan: what was built; net: the ``mininet.net.Mininet``; target: target name;
    options: how the switches were started. Use :func:`build_network`; call :meth:`stop`.
    """

    topology: Topology
    plan: NetworkPlan
    net: Any
    target: str
    options: SwitchOptions
    mode: str | None = None
    _stopped: bool = field(default=False, repr=False)

    # -- access ---------------------------------------------------------------------------
    def host(self, name: str) -> Any:
        """The Mininet host ``name``."""
        return self.net.get(name)

    def switch(self, name: str) -> SwitchTarget:
        """The Mininet switch ``name`` (a target's :class:`~emu.targets.SwitchTarget`)."""
        return self.net.get(name)

    def p4runtime_endpoints(self) -> dict[str, tuple[str, int]]:
        """Switch name -> (P4Runtime ``host:port``, device id), in file order."""
        out = {}
        for name in self.switch_names:
            sw = self.switch(name)
            addr = sw.p4runtime_address()
            if addr is not None:
                out[name] = (addr, sw.device_id)
        return out

    def control(self, name: str) -> SwitchControl:
        """The control object of switch ``name``."""
        return self.switch(name).control()

    def check_switches(self) -> None:
        """Raise NetworkError if a switch process died (naming it and its log)."""
        for name in self.switch_names:
            sw = self.switch(name)
            if not sw.running():
                code = "?" if sw.returncode is None else sw.returncode
                raise NetworkError(f"switch {name} stopped (exit {code}); see {sw.log_path}")

    # -- teardown -------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop switches and hosts and delete every link (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        for node in [*getattr(self.net, "hosts", []), *getattr(self.net, "switches", [])]:
            node.waitOutput = functools.partial(_wait_output_unless_dead, node)
        switches: list[SwitchTarget] = list(getattr(self.net, "switches", []))
        for sw in switches:  # processes first: links vanish under them next
            try:
                sw.stop_process()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                log.warning("stopping switch %s: %s", sw.name, exc)
        try:
            self.net.stop()
        except Exception as exc:  # noqa: BLE001 - keep tearing down
            log.warning("mininet stop: %r", exc)


def _wait_output_unless_dead(node: Any, verbose: bool = False, findPid: bool = True) -> str:  # noqa: N803
    """Mininet's Node.waitOutput, but giving up once the node's shell has died.

    A dead shell never prints Mininet's sentinel, and the runner holds its pty's slave end
    open, so the original would block forever (in net.stop(), with Ctrl-C deferred) when a
    node shell was killed (OOM killer, `mn -c`, `symphony-emu clean` during a run).
    """
    out = ""
    while node.waiting:
        shell = getattr(node, "shell", None)
        if shell is None or shell.poll() is not None:
            log.warning("node %s: its shell is gone; skipping its teardown commands", node.name)
            node.waiting = False
            break
        out += node.monitor(timeoutms=200, findPid=findPid)
    return out


def build_network(topology: Topology, *, target_cls: type, options: SwitchOptions,
                  target: str = "embedded", ready_timeout_s: float | None = None) -> EmuNetwork:
    """Build, start and wait for the network of ``topology``; switches are not programmed yet.

    Raises NetworkError / SwitchStartError (one line). On failure everything built so far is
    stopped again before the exception leaves.
    """
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Host

    plan = topology.plan
    switch_cls = functools.partial(target_cls, options=options)
    t0 = time.monotonic()
    net = Mininet(topo=make_topo(plan), switch=switch_cls, host=Host, link=Link, controller=None,
                  autoSetMacs=False, autoStaticArp=False, build=False, waitConnected=False,
                  inNamespace=False)
    emu = EmuNetwork(topology, plan, net, target, options)
    try:
        net.build()
        for host in plan.hosts:
            out = net.get(host.name).cmd(host_setup_script(plan, host.name))
            if "__done__:0" not in out:
                raise NetworkError(f"preparing host {host.name} failed: {out.strip().splitlines()[-1:]}")
        net.start()  # starts every switch process; they come up in parallel
        timeout = options.ready_timeout_s if ready_timeout_s is None else ready_timeout_s
        deadline = time.monotonic() + timeout
        for sw in plan.switches:
            node = net.get(sw.name)
            node.wait_ready(max(1.0, deadline - time.monotonic()))
        log.info("network %s up in %.1f s (%d hosts, %d switches)", topology.name, time.monotonic() - t0,
                 len(plan.hosts), len(plan.switches))
        return emu
    except BaseException:
        emu.stop()
        raise


def node_names(plan: NetworkPlan) -> Iterable[str]:
    """Every host and switch name of ``plan``."""
    yield from (h.name for h in plan.hosts)
    yield from (s.name for s in plan.switches)

