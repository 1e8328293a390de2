"""The virtual-time network: switches and host links on one event loop (docs/DESIGN.md section 6).

Built from the topology's :class:`~emu.topology.NetworkPlan`, like the Mininet network:

- each switch is an :class:`emu.embedded.core.SwitchCore`: the ``Pipeline`` compiled from
  ``p4/symphony.p4`` (the file the real-time switches load) plus its traffic manager, on a
  nanosecond clock (``ticks_per_us=1000``; the v1model timestamps stay in microseconds).
  It is programmed through :class:`emu.embedded.control.ControlAPI` by the controller code
  of :class:`emu.controller.ProgrammedNetwork` (routes, queues, ECN, Symphony configuration,
  register resets, counters): the same calls as a real-time switch gets over its socket;
- a switch egress port is the link towards its peer: the traffic manager serialises each
  frame at the link rate (frame bytes plus the Ethernet wire overhead of
  :data:`emu.vtime.frames.WIRE_OVERHEAD_BYTES`; with the host-cost model's Mininet links, the
  frame bytes only, as a real-time switch shapes them), holds at most the link's queue depth and
  adds the propagation delay, as the controller configured it with ``set_queue``;
- a host's access link towards its switch is :class:`HostLink`: the host NIC, the same FIFO
  link model (:class:`emu.embedded.link.FifoLink`) at the host's line rate with the link's
  delay (unbounded depth: hosts pace themselves, so it stays short);
- one :class:`emu.vtime.events.EventLoop` under all of them (and the hosts): a heap of
  ``(time_ns, seq, callback, argument)``, integer nanoseconds, ties broken by insertion order,
  so a run is a function of its inputs.

What it does not model: host processing time (a host's cores run in zero simulated time),
the kernel and its scheduling noise, PFC, link errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emu.controller import NetworkError, ProgrammedNetwork
from emu.embedded.link import FifoLink, QueueConfig, ceil_tick
from emu.p4build import DEFAULT_BUILD
from emu.topology_plan import NetworkPlan
from emu.topology_schema import Topology
from emu.vtime.events import EventLoop
from emu.vtime.frames import FRAME_EXTRA_BYTES, WIRE_OVERHEAD_BYTES

if TYPE_CHECKING:
    from emu.embedded.core import SwitchCore

log = logging.getLogger(__name__)

#: Clock ticks per microsecond of the switch cores (nanoseconds).
TICKS_PER_US = 1000
#: Per-frame wire bytes a real-time switch adds to a frame's own when it shapes an egress port:
#: none (emu.embedded.switch runs its SwitchCore with the default ``wire_overhead_bytes``, 0, on
#: veth pairs, which carry no preamble, FCS or gap). ``SimNetwork(mininet_links=True)`` uses it.
MININET_WIRE_OVERHEAD_BYTES = 0


class HostLink:
    """A host's access link towards its switch: the host NIC, a FIFO link on the event loop.

    ``link`` is the same :class:`emu.embedded.link.FifoLink` as a switch egress port, on the
    nanosecond clock with :data:`WIRE_OVERHEAD_BYTES`: the NIC serialises at ``config.rate_bps``
    and the frame reaches the far end ``config.delay_us`` later, at the first nanosecond at or
    after its departure. Nothing runs between the NIC's queue and the wire, so each frame's
    departure is known when it is sent (:meth:`FifoLink.transmit`) and its arrival is one event.
    The depth is unbounded (``depth_pkts=None``): hosts pace themselves, and a kernel holds
    back a sender rather than drop its datagram.
    """

    __slots__ = ("loop", "link", "deliver")

    def __init__(self, loop: EventLoop, config: QueueConfig, deliver: Callable[[Any], None]) -> None:
        self.loop = loop
        self.link = FifoLink(config, ticks_per_us=TICKS_PER_US, wire_overhead_bytes=WIRE_OVERHEAD_BYTES)
        self.deliver = deliver  #: called with the frame at its arrival at the far end

    @property
    def packets(self) -> int:
        """Frames the host put on the link so far (tail drops not included)."""
        return self.link.enqueued

    def send(self, frame: bytes) -> None:
        """Queue ``frame`` now; it reaches the far end after queueing, serialisation and delay
        (dropped only with a finite ``depth_pkts``: counted in ``link.tail_drops``)."""
        loop = self.loop
        depart = self.link.transmit(len(frame), loop.now)
        if depart is not None:
            # EventLoop.push: the arrival is never before now
            loop.push(ceil_tick(depart), self.deliver, frame)


class SimSwitch:
    """One switch core in the event loop: frames in, departures out to the peers.

    The switch has at most one useful wake-up pending: at the traffic manager's next
    deadline (``wake_at``). An earlier deadline schedules an earlier wake-up; the later
    one then finds ``wake_at`` changed and does nothing.
    """

    __slots__ = ("name", "core", "loop", "peers", "wake_at", "_receive", "_poll", "_deadline", "_wake_fn")

    def __init__(self, name: str, core: Any, loop: EventLoop) -> None:
        self.name = name
        self.core = core
        self.loop = loop
        #: egress port -> callable(frame) of the node at the far end (a switch port or a host)
        self.peers: dict[int, Callable[[bytes], None]] = {}
        self.wake_at: int | None = None
        self._receive = core.receive
        self._poll = core.poll
        self._deadline = core.tm.next_deadline_us  # SwitchCore.next_deadline_us without the wrapper
        self._wake_fn = self._wake

    def port_input(self, port: int) -> Callable[[bytes], None]:
        """The callable that hands a frame arriving on ``port`` to this switch now."""
        def port_arrive(frame: bytes) -> None:
            self._arrive(port, frame)

        return port_arrive

    def _arrive(self, port: int, frame: bytes) -> None:
        """A frame arrives on ``port`` now: the core receives it; the wake-up is re-armed."""
        loop = self.loop
        now = loop.now
        core = self.core
        core.receive(port, frame, now)
        self._rearm(loop, core, now)

    def _arm(self) -> None:
        t = self._deadline()
        if t is not None and (self.wake_at is None or t < self.wake_at):
            self.wake_at = t
            self.loop.at(t, self._wake_fn, t)

    def _wake(self, t: int) -> None:
        if t != self.wake_at:
            return  # superseded by an earlier wake-up
        self.wake_at = None
        loop = self.loop
        now = loop.now
        core = self.core
        out = core.poll(now)
        if out:
            peers = self.peers
            for port, frame in out:
                peers[port](frame)
        self._rearm(loop, core, now)

    def _rearm(self, loop: EventLoop, core: SwitchCore, now: int) -> None:
        """After the core received or sent at ``now`` (ns): a wake-up at its next deadline, unless
        one as early is armed (:meth:`_arm` for the per-packet paths, a C call when compiled; the
        deadline may be before now, the core serviced up to now: the wake-up is then at now)."""
        t = core.tm.next_deadline_us()
        if t is not None:
            tc = t  # (compiled: a C integer to compare with now)
            w = self.wake_at
            if w is None or t < w:
                self.wake_at = t
                loop.push(t if tc > now else now, self._wake_fn, t)


class SimNetwork(ProgrammedNetwork):
    """The topology's switches and links in one :class:`EventLoop`; programmed like Mininet's.

    ``hosts`` attach later (:meth:`attach_host`): a host gets a send function onto its access
    link and gives a receive function for frames that reach it. ``switch_class(name, core, loop)``
    makes each switch (default :class:`SimSwitch`; the host-cost model's
    :class:`emu.vtime.hostcost.CostedSimSwitch` spends a switch process's CPU time). ``mininet_links``:
    the links are what Mininet makes of them (the host-cost model, which reproduces real time): a
    host's access link towards its switch is a veth pair (:mod:`emu.mininet.network`: the switch
    shapes only its own egress), no serialisation and no delay, instead of the link's rate and
    delay; and a switch egress port serialises a frame's own bytes
    (:data:`MININET_WIRE_OVERHEAD_BYTES`), as the real-time switch shapes it, instead of adding
    Ethernet's preamble, FCS and gap (:data:`WIRE_OVERHEAD_BYTES`). Raises NetworkError when the P4
    program does not load.
    """

    def __init__(self, topology: Topology, *, seed: int = 1, mtu: int = 1500, program: Path = DEFAULT_BUILD.source,
                 switch_class: Callable[[str, Any, EventLoop], SimSwitch] | None = None,
                 mininet_links: bool = False) -> None:
        from emu.embedded.control import ControlAPI
        from emu.embedded.core import SwitchCore
        from emu.embedded.errors import P4FrontendError
        from emu.embedded.frontend import load_program
        from emu.embedded.runtime import Pipeline

        self.topology = topology
        self.plan: NetworkPlan = topology.plan
        self.programmed_scheme: str | None = None
        self.loop = EventLoop()
        self.mtu = mtu
        self.mininet_links = mininet_links
        wire_overhead = MININET_WIRE_OVERHEAD_BYTES if mininet_links else WIRE_OVERHEAD_BYTES
        try:
            prog = load_program(program)
        except (P4FrontendError, OSError) as exc:
            raise NetworkError(f"{program}: {exc}") from None
        self.switches: dict[str, SimSwitch] = {}
        self._controls: dict[str, Any] = {}
        for sw in self.plan.switches:
            pipeline = Pipeline(prog, seed=seed + sw.index)  # seed + index, as SwitchOptions gives it
            core = SwitchCore(pipeline, [p.port for p in sw.ports], ticks_per_us=TICKS_PER_US,
                              max_frame_bytes=mtu + FRAME_EXTRA_BYTES, wire_overhead_bytes=wire_overhead)
            self.switches[sw.name] = (switch_class or SimSwitch)(sw.name, core, self.loop)
            self._controls[sw.name] = ControlAPI(core)
        # switch-to-switch ports
        for sw in self.plan.switches:
            node = self.switches[sw.name]
            for p in sw.ports:
                if p.peer_port is not None:
                    node.peers[p.port] = self.switches[p.peer].port_input(p.peer_port)
        self._host_rx: dict[str, Callable[[bytes], None]] = {}
        self.host_links: dict[str, HostLink] = {}
        #: frames that reached a host between workloads (dropped)
        self.stray_frames = 0

    # -- ProgrammedNetwork ------------------------------------------------------------
    def control(self, name: str) -> Any:
        """The in-process ControlAPI of switch ``name``."""
        return self._controls[name]

    def check_switches(self) -> None:
        """Switch cores live in this process: nothing can die on its own."""

    def stop(self) -> None:
        """Drop pending events."""
        self.loop.clear()

    # -- hosts ------------------------------------------------------------------------
    def attach_host(self, name: str, receive: Callable[[bytes], None]) -> HostLink:
        """Connect host ``name``: frames for it go to ``receive(frame)``; returns its access link."""
        host = self.plan.host(name)
        link = next(lk for lk in self.plan.links if name in (lk.a, lk.b))
        sw = self.switches[host.switch]
        sw.peers[host.switch_port] = receive
        self._host_rx[name] = receive
        if self.mininet_links:  # Mininet's host link: a veth pair, frames reach the switch at once
            nic = QueueConfig(rate_bps=None, depth_pkts=None, delay_us=0)
        else:
            nic = QueueConfig(rate_bps=host.line_rate_bps, depth_pkts=None, delay_us=link.delay_us)
        hl = HostLink(self.loop, nic, sw.port_input(host.switch_port))
        self.host_links[name] = hl
        return hl

    def set_host_receiver(self, name: str, receive: Callable[[bytes], None]) -> None:
        """Frames for host ``name`` go to ``receive`` from now on."""
        host = self.plan.host(name)
        self._host_rx[name] = receive
        self.switches[host.switch].peers[host.switch_port] = receive

    def detach_hosts(self) -> None:
        """Frames that reach a host from now on are dropped and counted in ``stray_frames``."""

        def drop(frame: bytes) -> None:  # noqa: ARG001
            self.stray_frames += 1

        for name in self._host_rx:
            host = self.plan.host(name)
            self.switches[host.switch].peers[host.switch_port] = drop

    def reattach_hosts(self) -> None:
        """Undo :meth:`detach_hosts`."""
        for name, receive in self._host_rx.items():
            host = self.plan.host(name)
            self.switches[host.switch].peers[host.switch_port] = receive

    def idle(self) -> bool:
        """No frame queued or in flight in any switch or on any host link."""
        now = self.loop.now
        if any(hl.link.in_flight(now) for hl in self.host_links.values()):
            return False
        return all(sw.core.tm.in_flight() == 0 for sw in self.switches.values())

    def pipeline_packets(self) -> int:
        """Frames the switch pipelines parsed so far (all switches)."""
        return sum(int(s.core.pipeline.stats.get("parsed", 0)) for s in self.switches.values())
