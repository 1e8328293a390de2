"""The virtual-time back end of the runner (``symphony-emu run --mode sim``).

:class:`SimBackend` builds a :class:`emu.vtime.network.SimNetwork` (no root, no Mininet),
lets the runner program it through the same controller code as Mininet's, and runs a
workload in simulated time: one :class:`emu.vtime.hosts.SimRank` per worker spec, the
background sources, all in one event loop until every rank has ended. Every scheme gets a
network of its own (``network_per_scheme``), built from the run's seed, whose clock starts
at 0; the workload starts :data:`WORKLOAD_GAP_S` later. So the schemes share everything but
Symphony's marking (the same switch seeds, start time and background schedule), can run in
parallel processes (:mod:`emu.vtime.parallel`), and every time in the results folder is
simulated seconds.
"""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path
from typing import Any

from emu.backend import Backend, ProgressEvent, ProgressFn, RunError, UsageError, WorkerResult, Workload
from emu.controller import NetworkError
from emu.p4build import p4_build
from emu.vtime import hugepages
from emu.vtime.events import NS_PER_S, s_to_ns
from emu.vtime.hostcost import CostedOnOffSource, CostedSimRank, CostedSimSwitch, CpuPool
from emu.vtime.hosts import OnOffSource, SimHost, SimRank, make_verifier
from emu.vtime.network import SimNetwork
from hostapps.rank import DONE, FAILED

log = logging.getLogger(__name__)

#: Simulated time from the end of one workload (or the start) to the next workload (s).
WORKLOAD_GAP_S = 0.001
#: Wall-clock seconds between two progress events.
PROGRESS_INTERVAL_S = 0.5


class SimBackend(Backend):
    """Virtual time: every switch core and host state machine in one discrete-event loop."""

    mode = "sim"
    wall_clock = False
    network_per_scheme = True

    def __init__(self, topology: Any, **kwargs: Any) -> None:
        super().__init__(topology, **kwargs)
        self.hosts: dict[str, SimHost] = {}
        self.cpu_pool: CpuPool | None = None
        #: per workload: events processed, wall seconds, simulated seconds
        self.last_stats: dict[str, Any] = {}

    @classmethod
    def check(cls, topology: Any, *, target: str) -> None:
        """Only the embedded switch core runs in virtual time."""
        if target != "embedded":
            raise UsageError(f"--target {target}: --mode sim runs the embedded switch core only; "
                             "use --target embedded or --mode mininet")

    def build(self, progress: ProgressFn) -> None:
        hugepages.install()  # the network's and the ranks' objects in 2 MiB pages (compiled build; emu.vtime.hugepages)
        mtu = int(getattr(self.topology, "mtu", 1500) or 1500)
        progress(ProgressEvent("network", message=f"compiling the {self.p4} build for {len(self.topology.switches)} switches"))
        t0 = time.monotonic()
        self.hosts = {}
        try:
            cost = self.host_cost()
            # the CPUs the run's ranks and switches share (emu.vtime.hostcost.CpuPool), one set per network
            self.cpu_pool = CpuPool(int(cost.cpus)) if cost is not None and cost.cpus else None
            switch_class = (CostedSimSwitch.factory(cost, self.seed, self.cpu_pool)
                            if cost is not None and cost.switches else None)
            self.network = SimNetwork(self.topology, seed=self.seed, mtu=mtu, program=p4_build(self.p4).source,
                                      switch_class=switch_class, mininet_links=cost is not None)
            self.network.p4 = self.p4
            progress(ProgressEvent("network", message="programming switches"))
            self.network.program("baseline")
        except NetworkError as exc:
            raise RunError(str(exc)) from None
        plan = self.topology.plan
        macs = {h.ip: h.mac for h in plan.hosts}
        for h in plan.hosts:
            host = SimHost(h.name, h.ip, h.mac, macs, self.network.loop)
            host.link = self.network.attach_host(h.name, host.receive)
            self.hosts[h.name] = host
        progress(ProgressEvent("network", message=f"network ready in {time.monotonic() - t0:.1f} s (virtual time)"))

    def host_cost(self) -> Any:
        """The topology's :class:`emu.vtime.hostcost.HostCost` (resolved inline by the runner), or None."""
        spec = getattr(self.topology, "host_cost", None)
        if spec is None:
            return None
        from emu.vtime.hostcost import HostCostError, from_dict

        if not isinstance(spec, dict):
            raise UsageError(f"host_cost {spec!r}: the runner resolves a file to its model first "
                             "(emu.runner.resolve_host_cost)")
        try:
            return from_dict(spec, "host_cost")
        except HostCostError as exc:
            raise UsageError(str(exc)) from None

    def start_time(self, n_workers: int) -> float:  # noqa: ARG002
        """Simulated now plus :data:`WORKLOAD_GAP_S`."""
        return self.network.loop.now / NS_PER_S + WORKLOAD_GAP_S

    def run_workload(self, workload: Workload, progress: ProgressFn) -> list[WorkerResult]:
        from hostapps import traffic
        from hostapps.barrier import StepBarrier
        from hostapps.spec import SpecError, parse_spec

        loop = self.network.loop
        plan = self.topology.plan
        for host in self.hosts.values():
            host.ranks.clear()
        self.network.reattach_hosts()
        ended: list[SimRank] = []
        n_ranks = len(workload.specs)

        def on_end(rank: SimRank) -> None:
            ended.append(rank)
            if rank.state == FAILED or len(ended) == n_ranks:
                loop.halt()

        ranks: list[SimRank] = []
        verifiers: dict[int, Any] = {}
        barriers: dict[int, StepBarrier] = {}
        cost = self.host_cost()
        try:
            for spec_dict in workload.specs:
                spec_obj = {k: v for k, v in spec_dict.items() if k != "host"}
                spec = parse_spec(spec_obj, f"job {spec_dict['job_id']} rank {spec_dict['rank']}")
                host = self.hosts[spec_dict["host"]]
                verifier = verifiers.get(spec.job_id) or verifiers.setdefault(spec.job_id, make_verifier(spec))
                barrier = None
                if workload.extra.get("barrier"):  # the ideal reference (hostapps.barrier)
                    barrier = barriers.get(spec.job_id) or barriers.setdefault(spec.job_id, StepBarrier(spec.nranks))
                if cost is None:
                    rank = SimRank(spec, host, verifier, on_end, barrier=barrier)
                else:  # the hosts' processing time (emu.vtime.hostcost)
                    rank = CostedSimRank(spec, host, verifier, on_end, cost, self.seed, barrier=barrier,
                                         pool=self.cpu_pool)
                host.ranks[spec.job_id] = rank
                ranks.append(rank)
        except SpecError as exc:
            raise RunError(f"{workload.scheme}: {exc}") from None
        running = [True]
        sources = []
        for src in workload.background:
            duration = src.duration_s if src.duration_s is not None else workload.timeout_s
            cfg = traffic.OnOffConfig(rate_bps=src.rate_bps, on_s=src.on_s, off_s=src.off_s, duration_s=duration,
                                      size=src.packet_bytes, seed=src.seed if src.exponential else None)
            if cost is None:
                sources.append(OnOffSource(self.hosts[src.src], plan.host(src.dst).ip, traffic.send_schedule(cfg),
                                           workload.start_at + src.start_s, src.packet_bytes, lambda: running[0]))
            else:  # a process waiting for a CPU as the workers do (emu.vtime.hostcost)
                sources.append(CostedOnOffSource(self.hosts[src.src], plan.host(src.dst).ip,
                                                 traffic.send_schedule(cfg), workload.start_at + src.start_s,
                                                 src.packet_bytes, lambda: running[0], cost, self.seed, len(sources)))
        total = workload.total_iters
        n = len(ranks)
        progress(ProgressEvent("start", workload.scheme, 0, total, f"{n} ranks", sim_s=0.0))
        deadline = s_to_ns(workload.start_at + workload.timeout_s)
        t_wall = time.monotonic()
        events0 = loop.events
        hops0 = self.network.pipeline_packets()
        state = {"last": time.monotonic(), "done": -1}

        def finished() -> bool:
            return len(ended) == n or any(r.state == FAILED for r in ended)

        def report() -> None:
            now = time.monotonic()
            if now - state["last"] < PROGRESS_INTERVAL_S:
                return
            state["last"] = now
            done = min(r.iterations_done for r in ranks) if ranks else 0
            progress(ProgressEvent("running", workload.scheme, done, total, sim_s=loop.now / NS_PER_S - workload.start_at))

        # Everything the run needs exists now (switches, tables, registers, ranks) and lives until its end: the
        # cyclic collector's full collections would traverse it all, for nothing (at 128 ranks the 66 switches'
        # registers alone are 17 million list slots: 110 ms per collection, 4 per 16 MiB iteration, each also
        # evicting the caches). gc.freeze() keeps it out of the collections until the workload ends.
        gc.freeze()
        try:
            loop.run(until=deadline, stop=finished, check_every=2048, on_check=report)
            if not finished():
                loop.run(until=deadline, stop=finished, check_every=1)
        finally:
            running[0] = False
            gc.unfreeze()
        wall = time.monotonic() - t_wall
        failed = [r for r in ended if r.state == FAILED]
        if failed:
            first = failed[0]
            self._stop_ranks(ranks, f"stopped: job {first.spec.job_id} rank {first.spec.rank} failed")
            raise RunError(f"{workload.scheme}: job {first.spec.job_id} rank {first.spec.rank} on {first.host.name} "
                           f"failed: {first.error}")
        if len(ended) < n:
            slow = [f"job{r.spec.job_id}-rank{r.spec.rank}" for r in ranks if r.state < DONE]
            self._stop_ranks(ranks, "time limit")
            raise RunError(f"{workload.scheme}: ranks {', '.join(slow[:8])}{' ...' if len(slow) > 8 else ''} still "
                           f"running after the simulated time limit of {workload.timeout_s:.3g} s")
        # drain what is still in flight (last ACKs, background) with the hosts detached
        for host in self.hosts.values():
            host.ranks.clear()
        self.network.detach_hosts()
        if not self.network.idle():
            loop.run(stop=self.network.idle, check_every=16)
        end_s = loop.now / NS_PER_S
        self.last_stats = {"events": loop.events - events0, "wall_s": wall,
                           "pipeline_packets": self.network.pipeline_packets() - hops0,
                           "sim_s": end_s - workload.start_at}
        log.info("%s: %d events, %d pipeline passes in %.1f s wall for %.6f s simulated", workload.scheme,
                 self.last_stats["events"], self.last_stats["pipeline_packets"], wall, self.last_stats["sim_s"])
        if cost is not None:
            log.info("%s: host cost: %d worker runs, %d after sleeping, %.3f s waited for a CPU (%.3f s of it "
                     "for the run's own processes), %.3f s busy",
                     workload.scheme, sum(r.runs for r in ranks), sum(r.woken for r in ranks),
                     sum(r.waited_ns for r in ranks) / NS_PER_S, sum(r.queued_ns for r in ranks) / NS_PER_S,
                     sum(r.busy_ns for r in ranks) / NS_PER_S)
            pool = self.cpu_pool
            if pool is not None:
                log.info("%s: %d CPUs shared: wait in their queue per wake-up %s", workload.scheme, pool.cpus,
                         ", ".join(f"{k} {pool.queued_ns.get(k, 0) / n * 1e-3:.0f} us ({n} wake-ups)"
                                   for k, n in sorted(pool.queued.items())))
        results = []
        for spec_dict, rank in zip(workload.specs, ranks, strict=True):
            name = f"job{rank.spec.job_id}-rank{rank.spec.rank}"
            log_path = workload.logs_dir / f"{name}.log"
            log_path.write_text(f"virtual time: workload ended at {end_s:.9f} s, "
                                f"{rank.iterations_done} iterations\n")
            results.append(WorkerResult(rank.spec.job_id, rank.spec.rank, spec_dict["host"],
                                        0 if rank.state == DONE else 1, rank.error or "", log_path,
                                        Path(rank.spec.output_path)))
        return results

    @staticmethod
    def _stop_ranks(ranks: list[SimRank], message: str) -> None:
        for r in ranks:
            r.interrupt(message)

    def close(self) -> None:
        if self.network is not None:
            self.network.stop()
