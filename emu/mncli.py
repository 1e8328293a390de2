"""Mininet CLI with Symphony commands (``symphony-emu cli TOPOLOGY``).

Besides Mininet's own commands (``h1 ping h2``, ``net``, ``dump``, ``xterm`` ...):

- ``allreduce [SIZE] [ITERATIONS]``: run the topology's jobs once in the current mode
  (SIZE bytes per rank, a multiple of 4, e.g. 65536 or 64K, default the topology's;
  ITERATIONS >= 1, default 1) and print the CCT of each iteration, whether the results were verified and the marks;
- ``switch NAME``: a switch's port counters, queue maxima, mark counters and Symphony
  registers (frontier and flow_step of each job it tracks);
- ``mode [baseline|symphony]``: show or set the mode of every switch.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from mininet.cli import CLI
from mininet.log import output

log = logging.getLogger(__name__)


class SymphonyCLI(CLI):
    """Mininet's CLI on an :class:`emu.runner.Experiment`'s network."""

    prompt = "symphony-emu> "

    def __init__(self, experiment: Any, **kwargs: Any) -> None:
        self.experiment = experiment
        self.runs = 0
        output(f"*** {experiment.topology.name}: {len(experiment.topology.hosts)} hosts, "
               f"{len(experiment.topology.switches)} {experiment.target} switches, mode "
               f"{experiment.network.mode}\n*** extra commands: allreduce [SIZE] [ITERATIONS], switch NAME, "
               f"mode [baseline|symphony]\n")
        super().__init__(experiment.network.net, **kwargs)

    # -- allreduce ------------------------------------------------------------------------
    def do_allreduce(self, line: str) -> None:
        """allreduce [SIZE] [ITERATIONS]: run the topology's jobs once in the current mode."""
        from emu import metrics
        from emu.cli import ALLREDUCE_USAGE, parse_allreduce_args
        from emu.runner import RunError, counter_totals

        try:
            size, iterations = parse_allreduce_args(line)
        except ValueError as exc:
            output(f"*** {exc} (usage: {ALLREDUCE_USAGE})\n")
            return
        exp = self.experiment
        scheme = exp.network.mode or "baseline"
        self.runs += 1
        results = exp.out_dir / f"cli-{self.runs}-{scheme}"
        output(f"*** running {len(exp.topology.jobs)} job(s), mode {scheme}, results in {results}\n")
        try:
            run = exp.run_scheme(scheme, iterations=iterations, size=size, results_dir=results)
        except RunError as exc:
            output(f"*** failed: {exc}\n")
            return
        except KeyboardInterrupt:
            output("*** interrupted; workers stopped\n")
            return
        infos = {
            j: dataclasses.replace(info, size_bytes=size or info.size_bytes, iterations=iterations)
            for j, info in metrics.job_infos(exp.topology).items()
        }
        m = metrics.compute_metrics(results, scheme=scheme, jobs=infos)
        for cct in m.ccts:
            ratio = f" ({cct.over_bound:.2f} x bound)" if cct.over_bound is not None else ""
            output(f"job {cct.job} iteration {cct.iteration}: CCT {cct.cct_s * 1000:.1f} ms{ratio}\n")
        totals = counter_totals(run.counter_delta())
        output(f"verified: {'yes' if m.verified else 'no'}; Symphony marks {totals['symphony_marks']}, "
               f"queue marks {totals['queue_marks']}, drops {totals['drops']}\n")
        for err in m.errors[:5]:
            output(f"  {err}\n")

    # -- switch ---------------------------------------------------------------------------
    def do_switch(self, line: str) -> None:
        """switch NAME: counters, queues and Symphony registers of switch NAME."""
        exp = self.experiment
        name = line.strip()
        if name not in exp.network.switch_names:
            output(f"usage: switch NAME (one of {', '.join(exp.network.switch_names)})\n")
            return
        try:
            counters = exp.network.read_counters()[name]
        except Exception as exc:  # noqa: BLE001 - a dead switch: say so, keep the CLI
            output(f"*** switch {name}: {exc}\n")
            return
        stats = counters.get("stats", {})
        sw_plan = exp.network.plan.switch(name)
        output(f"switch {name} (mode {exp.network.mode})\n")
        output(f"{'port':>4} {'intf':<12} {'peer':<8} {'rx':>9} {'tx':>9} {'max q':>6} {'tail drops':>10}\n")
        for port in sw_plan.ports:
            p = port.port
            output(f"{p:>4} {port.intf:<12} {port.peer:<8} {_get(stats, 'rx', p):>9} {_get(stats, 'tx', p):>9} "
                   f"{_get(stats, 'max_qdepth', p):>6} {_get(stats, 'tail_drops', p):>10}\n")
        drops = stats.get("drops", {})
        if drops:
            output("drops: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())) + "\n")
        from emu import routing

        expected = routing.compute_routes(exp.topology).expected_flows().get(name, {})
        for job in exp.topology.jobs:
            marks = counters.get("symphony_marks", [])
            qmarks = counters.get("queue_marks", [])
            sym = marks[job.id] if job.id < len(marks) else 0
            qm = qmarks[job.id] if job.id < len(qmarks) else 0
            line_out = f"job {job.id}: expected_flows {expected.get(job.id, 0)}, Symphony marks {sym}, queue marks {qm}"
            if job.id in expected:
                try:
                    regs = exp.network.read_registers(name, job.id)
                    line_out += f", frontier {regs['frontier']}, flow_step {regs['flow_step']}"
                except Exception as exc:  # noqa: BLE001
                    line_out += f", registers unreadable: {exc}"
            output(line_out + "\n")

    # -- mode -----------------------------------------------------------------------------
    def do_mode(self, line: str) -> None:
        """mode [baseline|symphony]: show or set every switch's Symphony mode."""
        scheme = line.strip()
        if not scheme:
            output(f"mode {self.experiment.network.mode}\n")
            return
        try:
            self.experiment.set_mode(scheme)
        except Exception as exc:  # noqa: BLE001 - NetworkError: one line
            output(f"*** {exc}\n")
            return
        output(f"mode {scheme}\n")


def _get(stats: dict[str, Any], key: str, port: int) -> Any:
    """stats[key][port] with int or str port keys (JSON), '-' when missing."""
    table = stats.get(key, {})
    if not isinstance(table, dict):
        return "-"
    return table.get(port, table.get(str(port), "-"))
