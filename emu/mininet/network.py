"""Mininet bring-up: build the emulated network of a topology, ready for the controller.

The topology's :class:`~emu.topology_plan.NetworkPlan` fixes every name, port number and MAC
(pure, no root). :func:`build_network` turns it into a Mininet network:

- hosts are Mininet ``Host`` s with IPv6 off, TX/RX checksum offload off on their interface
  (the embedded switch forwards frames as they are, so a partial checksum would reach the
  receiver and be dropped), MTU 1500 and a static ARP entry for every other host;
- switches are the target's ``Switch`` subclass (one process per switch), whose interfaces
  live in the root namespace with offloads and IPv6 off;
- links are plain veth pairs (no TCLink/netem: the kernel here lacks netem; the switch
  shapes each egress port with the link's rate, delay and queue depth);
- a switch port's interface is named ``<tag>-<switch>-<port>`` with the run's link tag
  (:mod:`emu.linknames`; a host's stays ``<host>-eth0``, inside its own namespace), so two
  networks on one machine never share a name.

:class:`EmuNetwork` is the controller's :class:`emu.controller.ProgrammedNetwork` over the
running switches: the controller code (routes, queues, ECN, Symphony configuration, resets,
counters) is the same as in virtual time.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Host
from mininet.topo import Topo

from emu.cleanup import RUN_ENV
from emu.control import SwitchControl
from emu.controller import NetworkError, ProgrammedNetwork
from emu.linknames import LinkTag, LinkTagError, switch_intf
from emu.mininet.switch import SwitchTarget
from emu.targets import SwitchOptions
from emu.topology_plan import NetworkPlan
from emu.topology_schema import Topology

log = logging.getLogger(__name__)

#: MTU of every host interface (bytes).
HOST_MTU = 1500


def make_topo(plan: NetworkPlan, tag: str) -> Any:
    """A Mininet ``Topo`` with the plan's hosts, switches and links (records names only).

    ``tag``: the run's link tag; switch ports are named :func:`emu.linknames.switch_intf`,
    host interfaces as in the plan.
    """

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
                ends.append((node, 0, host_of[node].mac, host_of[node].intf))
            else:
                port = port_of[(node, link.index)]
                ends.append((node, port.port, port.mac, switch_intf(tag, node, port.port)))
        (n1, p1, m1, i1), (n2, p2, m2, i2) = ends
        topo.addLink(n1, n2, port1=p1, port2=p2, addr1=m1, addr2=m2, intfName1=i1, intfName2=i2)
    return topo


def host_setup_commands(plan: NetworkPlan, host: str) -> list[str]:
    """The shell commands that prepare ``host``'s namespace (IPv6 off, checksum offloads off,
    MTU, static ARP); each must succeed (docs/DESIGN.md section 6)."""
    me = plan.host(host)
    cmds = [
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        f"sysctl -qw net.ipv6.conf.{me.intf}.disable_ipv6=1",
        f"ethtool -K {me.intf} tx off rx off >/dev/null",
        f"ip link set dev {me.intf} mtu {HOST_MTU}",
    ]
    for other in plan.hosts:
        if other.name != host:
            cmds.append(f"ip neigh replace {other.ip} lladdr {other.mac} dev {me.intf} nud permanent")
    return cmds


#: Marks in a host set-up script's output: a command that failed (with its index), the end.
SETUP_FAILED, SETUP_DONE = "__failed__:", "__done__"


def host_setup_script(plan: NetworkPlan, host: str) -> str:
    """:func:`host_setup_commands` as one shell line: every command runs, each failure prints
    ``__failed__:<index>`` after the command's own error output (a Mininet shell sends stderr
    to its output), and ``__done__`` ends it."""
    cmds = host_setup_commands(plan, host)
    return " ; ".join(f"{cmd} || echo {SETUP_FAILED}{i}" for i, cmd in enumerate(cmds)) + f" ; echo {SETUP_DONE}"


def check_host_setup(plan: NetworkPlan, host: str, output: str) -> None:
    """NetworkError naming the first command of ``host``'s set-up that failed, and why.

    A command that fails inside a host is an error, never silence: without ``sysctl``
    (procps, missing from a minimal Debian) IPv6 stayed on and its frames were counted as
    drops; every other command is checked the same way.
    """
    cmds = host_setup_commands(plan, host)
    lines = output.splitlines()
    for n, line in enumerate(lines):
        if line.strip().startswith(SETUP_FAILED):
            i = int(line.strip()[len(SETUP_FAILED):])
            said = [ln.strip() for ln in lines[:n] if ln.strip() and not ln.strip().startswith(SETUP_FAILED)]
            why = said[-1] if said else "no output"
            raise NetworkError(f"preparing host {host} failed: `{cmds[i]}`: {why} "
                               "(run sudo ./scripts/setup.sh; symphony-emu doctor says what is missing)")
    if SETUP_DONE not in output:
        raise NetworkError(f"preparing host {host} failed: its shell ended early ({lines[-1:] or 'no output'})")


@dataclass
class EmuNetwork(ProgrammedNetwork):
    """A running Mininet network of one topology with its switches ready to program.

    topology/plan: what was built; net: the ``mininet.net.Mininet``; target: target name;
    options: how the switches were started; link_tag: the run's claim on its interface
    names (released by :meth:`stop`). Use :func:`build_network`; call :meth:`stop`.
    """

    topology: Topology
    plan: NetworkPlan
    net: Any
    target: str
    options: SwitchOptions
    programmed_scheme: str | None = None
    link_tag: LinkTag | None = None
    _stopped: bool = field(default=False, repr=False)

    # -- access ---------------------------------------------------------------------------
    def host(self, name: str) -> Any:
        """The Mininet host ``name``."""
        return self.net.get(name)

    def switch(self, name: str) -> SwitchTarget:
        """The Mininet switch ``name`` (a target's :class:`~emu.mininet.switch.SwitchTarget`)."""
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
        if self.link_tag is not None:  # whatever links Mininet left, then the tag
            self.link_tag.release()


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
    plan = topology.plan
    switch_cls = functools.partial(target_cls, options=options)
    t0 = time.monotonic()
    try:
        tag = LinkTag.claim(os.environ.get(RUN_ENV, ""))
    except LinkTagError as exc:
        raise NetworkError(str(exc)) from None
    try:
        net = Mininet(topo=make_topo(plan, tag.tag), switch=switch_cls, host=Host, link=Link, controller=None,
                      autoSetMacs=False, autoStaticArp=False, build=False, waitConnected=False,
                      inNamespace=False)
    except BaseException:
        tag.release()
        raise
    emu = EmuNetwork(topology, plan, net, target, options, link_tag=tag)
    try:
        net.build()
        for host in plan.hosts:
            check_host_setup(plan, host.name, net.get(host.name).cmd(host_setup_script(plan, host.name)))
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


__all__ = ["HOST_MTU", "SETUP_DONE", "SETUP_FAILED", "EmuNetwork", "NetworkError", "build_network", "check_host_setup",
           "host_setup_commands", "host_setup_script", "make_topo"]
