"""Network plan: a pure description of what the network builders create from a topology.

:func:`build_plan` turns a validated topology (:class:`emu.topology_schema.Topology`, every
default resolved) into a :class:`NetworkPlan`: switch port numbers, interface names, MACs and
per-port queue shaping. Like Mininet's ``Topo`` it only records names and options; the Mininet
builder and the virtual-time network both build from it.

Conventions of the plan (stable; the routing and the runner rely on them):

- switch ports are numbered 1..n per switch in the order the links appear in the file;
  switch interfaces are ``<switch>-eth<port>``, a host's only interface ``<host>-eth0``;
- host MACs are ``02:00:00:00:HH:LL`` with HHLL = host index + 1 (file order); switch
  port MACs ``02:01:SS:SS:PP:PP`` with SSSS = switch index + 1 and PPPP = port number
  (locally administered, unicast);
- a host's line rate is the bandwidth of its (only) access link.

This module sits below the schema (``Topology.plan`` builds it): it reads a topology through
the small :class:`PlanSource` protocol, the names and link options only.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
from collections.abc import Sequence
from typing import Protocol


class _NodeSource(Protocol):
    @property
    def name(self) -> str: ...


class _HostSource(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ip(self) -> ipaddress.IPv4Address | None: ...


class _LinkSource(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def bandwidth_mbps(self) -> float | None: ...
    @property
    def delay_ms(self) -> float | None: ...
    @property
    def queue_packets(self) -> int | None: ...


class PlanSource(Protocol):
    """What :func:`build_plan` reads of a topology (a loaded ``Topology`` is one)."""

    @property
    def subnet(self) -> ipaddress.IPv4Network: ...
    @property
    def hosts(self) -> Sequence[_HostSource]: ...
    @property
    def switches(self) -> Sequence[_NodeSource]: ...
    @property
    def links(self) -> Sequence[_LinkSource]: ...


@dataclasses.dataclass(frozen=True)
class PortPlan:
    """One switch port: the egress queue onto the link it attaches to."""

    switch: str
    port: int  #: 1..n in link order
    intf: str  #: ``<switch>-eth<port>``
    mac: str  #: MAC of the switch port (source MAC of forwarded frames)
    peer: str  #: node at the other end
    peer_intf: str
    peer_port: int | None  #: the peer switch's port, None when the peer is a host
    link_index: int  #: index in ``Topology.links``
    rate_bps: float  #: egress service rate (bit/s)
    depth_pkts: int  #: egress queue depth (packets)
    delay_us: int  #: propagation delay added at egress (microseconds)


@dataclasses.dataclass(frozen=True)
class SwitchPlan:
    name: str
    index: int  #: position in ``Topology.switches``
    dpid: str  #: 16 hex digits, index + 1 (Mininet needs a unique one per switch)
    ports: tuple[PortPlan, ...]

    def port_to(self, peer: str) -> PortPlan:
        """The port whose link goes to ``peer`` (KeyError if none)."""
        for p in self.ports:
            if p.peer == peer:
                return p
        raise KeyError(peer)


@dataclasses.dataclass(frozen=True)
class HostPlan:
    name: str
    index: int  #: position in ``Topology.hosts``
    ip: str
    prefix_len: int  #: of ``Topology.subnet``; configure ``ip/prefix_len`` on ``intf``
    mac: str
    intf: str  #: ``<host>-eth0``
    switch: str  #: the switch of the access link
    switch_port: int
    line_rate_bps: float  #: access-link bandwidth (bit/s); workers pace at most at this


@dataclasses.dataclass(frozen=True)
class LinkPlan:
    index: int
    a: str
    a_intf: str
    b: str
    b_intf: str
    bandwidth_bps: float
    delay_us: int
    queue_packets: int


@dataclasses.dataclass(frozen=True)
class NetworkPlan:
    """Pure description of the emulated network, in file order."""

    hosts: tuple[HostPlan, ...]
    switches: tuple[SwitchPlan, ...]
    links: tuple[LinkPlan, ...]

    @functools.cached_property
    def _by_name(self) -> tuple[dict[str, HostPlan], dict[str, SwitchPlan]]:
        """(host name -> host, switch name -> switch), the first of a name in file order (the
        plan is frozen: made once, on the first look-up)."""
        hosts: dict[str, HostPlan] = {}
        switches: dict[str, SwitchPlan] = {}
        for h in self.hosts:
            hosts.setdefault(h.name, h)
        for s in self.switches:
            switches.setdefault(s.name, s)
        return hosts, switches

    def host(self, name: str) -> HostPlan:
        """The host named ``name`` (KeyError if none)."""
        return self._by_name[0][name]

    def switch(self, name: str) -> SwitchPlan:
        """The switch named ``name`` (KeyError if none)."""
        return self._by_name[1][name]

    def arp_table(self) -> dict[str, str]:
        """IP -> MAC of every host (for static ARP in each host)."""
        return {h.ip: h.mac for h in self.hosts}


def host_mac(index: int) -> str:
    """MAC of the host at ``index`` in the file: ``02:00:00:00:HH:LL`` of index + 1."""
    n = index + 1
    return f"02:00:00:00:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}"


def switch_port_mac(switch_index: int, port: int) -> str:
    """MAC of a switch port: ``02:01:SS:SS:PP:PP`` (switch index + 1, port number)."""
    s = switch_index + 1
    return f"02:01:{s >> 8 & 0xFF:02x}:{s & 0xFF:02x}:{port >> 8 & 0xFF:02x}:{port & 0xFF:02x}"


def build_plan(topo: PlanSource) -> NetworkPlan:
    """Port numbers, interface names, MACs and queue shaping of ``topo`` (pure).

    ``topo`` has every link default resolved (bandwidth, delay, queue depth) and every host
    its IP, as :func:`emu.topology.load_topology` returns it.
    """
    switch_index = {s.name: i for i, s in enumerate(topo.switches)}
    next_port = {s.name: 1 for s in topo.switches}
    ends: list[tuple[tuple[str, str, int | None], tuple[str, str, int | None]]] = []
    for link in topo.links:
        pair = []
        for node in (link.a, link.b):
            if node in switch_index:
                port = next_port[node]
                next_port[node] += 1
                pair.append((node, f"{node}-eth{port}", port))
            else:
                pair.append((node, f"{node}-eth0", None))
        ends.append((pair[0], pair[1]))

    ports: dict[str, list[PortPlan]] = {s.name: [] for s in topo.switches}
    links: list[LinkPlan] = []
    host_access: dict[str, tuple[str, int, float]] = {}
    for i, (link, (a, b)) in enumerate(zip(topo.links, ends, strict=True)):
        assert link.bandwidth_mbps is not None and link.delay_ms is not None
        assert link.queue_packets is not None
        rate = link.bandwidth_mbps * 1e6
        delay_us = round(link.delay_ms * 1000)
        links.append(LinkPlan(i, a[0], a[1], b[0], b[1], rate, delay_us, link.queue_packets))
        for me, peer in ((a, b), (b, a)):
            if me[2] is None:
                continue
            ports[me[0]].append(
                PortPlan(
                    switch=me[0],
                    port=me[2],
                    intf=me[1],
                    mac=switch_port_mac(switch_index[me[0]], me[2]),
                    peer=peer[0],
                    peer_intf=peer[1],
                    peer_port=peer[2],
                    link_index=i,
                    rate_bps=rate,
                    depth_pkts=link.queue_packets,
                    delay_us=delay_us,
                )
            )
            if peer[2] is None:
                host_access[peer[0]] = (me[0], me[2], rate)

    hosts = []
    for i, h in enumerate(topo.hosts):
        sw, port, rate = host_access[h.name]
        hosts.append(
            HostPlan(
                name=h.name,
                index=i,
                ip=str(h.ip),
                prefix_len=topo.subnet.prefixlen,
                mac=host_mac(i),
                intf=f"{h.name}-eth0",
                switch=sw,
                switch_port=port,
                line_rate_bps=rate,
            )
        )
    switches = tuple(
        SwitchPlan(s.name, i, f"{i + 1:016x}", tuple(ports[s.name])) for i, s in enumerate(topo.switches)
    )
    return NetworkPlan(tuple(hosts), switches, tuple(links))


__all__ = ["HostPlan", "LinkPlan", "NetworkPlan", "PlanSource", "PortPlan", "SwitchPlan", "build_plan", "host_mac",
           "switch_port_mac"]
