"""Mininet CLI with Symphony commands (``symphony-emu cli TOPOLOGY``).

Besides Mininet's own commands (``h1 ping h2``, ``net``, ``dump``, ``xterm`` ...):

- ``allreduce [SIZE] [ITERATIONS]``: run the topology's jobs once in the current mode
  (SIZE bytes per rank, a multiple of 4, e.g. 65536 or 64K; ITERATIONS >= 1; both default
  to the topology's) and print the CCT of each iteration, whether the results were
  verified and the marks of that run; the results folder is a normal one
  (``symphony-emu report`` works on it);
- ``switch NAME``: a switch's port counters, queue maxima, the marks of the last
  ``allreduce`` (as that command printed them) and since the network started, and the
  Symphony registers (frontier and flow_step of each job it tracks);
- ``mode [baseline|symphony]``: show or set the mode of every switch;
- ``iperf [SRC DST [SECONDS]]`` and ``iperfudp BW SRC DST [SECONDS]``: Mininet's, bounded in
  time and working with iperf >= 2.1 (see :func:`iperf`);
- ``p4runtime``: how to connect p4runtime-shell to each switch (also printed at the start).

Every switch serves P4Runtime on loopback: a student's p4runtime-shell reads and writes the
Symphony tables there. The controller holds election id (0, 1); a client with a higher one
becomes primary, and once it disconnects the controller takes the switch back on its next
write (``mode``, ``allreduce``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import click
from mininet.cli import CLI
from mininet.log import error, lg, output, setLogLevel
from mininet.util import quietRun, waitListening

from emu import metrics, report, routing, runner
from emu.cli import (
    ALLREDUCE_USAGE,
    EXIT_FAILED,
    fail,
    interrupted,
    parse_allreduce_args,
    resolve_topology,
    user_errors,
)
from emu.interrupts import SignalInterrupt
from emu.runner import RunError, counter_totals
from emu.targets.p4runtime_control import controller_election_id
from emu.targets.registry import target_names

log = logging.getLogger(__name__)


class SymphonyCLI(CLI):
    """Mininet's CLI on an :class:`emu.runner.Experiment`'s network."""

    prompt = "symphony-emu> "

    def __init__(self, experiment: Any, **kwargs: Any) -> None:
        self.experiment = experiment
        self.runs = 0
        #: (results folder name, mode, emu.runner.SchemeRun) of the last ``allreduce``.
        self.last_run: tuple[str, str, Any] | None = None
        output(f"*** {experiment.topology.name}: {len(experiment.topology.hosts)} hosts, "
               f"{len(experiment.topology.switches)} {experiment.target} switches, mode "
               f"{experiment.network.programmed_scheme}\n*** extra commands: allreduce [SIZE] [ITERATIONS], switch NAME, "
               f"mode [baseline|symphony], p4runtime; iperf [SRC DST [SECONDS]]\n")
        self.do_p4runtime("")
        super().__init__(experiment.network.net, **kwargs)

    def run(self) -> None:
        """Mininet's command loop; Ctrl-C keeps the prompt, SIGTERM/SIGHUP end it (and the network)."""
        while True:
            try:
                if self.isatty():
                    quietRun("stty echo sane intr ^C")
                self.cmdloop()
                break
            except SignalInterrupt:
                raise  # the terminal closed or the process was told to stop: clean up
            except KeyboardInterrupt:
                output("\nInterrupt\n")

    # -- p4runtime --------------------------------------------------------------------------
    def do_p4runtime(self, line: str) -> None:  # noqa: ARG002 - cmd.Cmd's signature
        """How to connect p4runtime-shell to each switch."""
        endpoints = self.experiment.network.p4runtime_endpoints()
        if not endpoints:
            output("*** no switch serves P4Runtime\n")
            return
        output(p4runtime_help(endpoints))

    # -- allreduce ------------------------------------------------------------------------
    def do_allreduce(self, line: str) -> None:
        """allreduce [SIZE] [ITERATIONS]: run the topology's jobs once in the current mode."""
        try:
            size, iterations = parse_allreduce_args(line)
        except ValueError as exc:
            output(f"*** {exc} (usage: {ALLREDUCE_USAGE})\n")
            return
        exp = self.experiment
        try:  # the mode the switches hold (a p4runtime-shell write included), else the controller's
            held = exp.network.mode_summary()
        except Exception:  # noqa: BLE001 - an unreadable switch: the run says so itself
            held = ""
        from emu.p4names import SCHEME_MODES

        scheme = held if held in SCHEME_MODES else (exp.network.programmed_scheme or "baseline")
        self.runs += 1
        results = exp.out_dir / f"cli-{self.runs}-{scheme}"
        output(f"*** running {len(exp.topology.jobs)} job(s), mode {scheme}, results in {results}\n")
        try:
            run = exp.run_scheme(scheme, iterations=iterations, size=size, results_dir=results)
        except RunError as exc:
            output(f"*** failed: {exc}\n")
            return
        except KeyboardInterrupt as exc:
            if isinstance(exc, SignalInterrupt):
                raise
            output("*** interrupted; workers stopped\n")
            return
        infos = {
            j: dataclasses.replace(info, size_bytes=size or info.size_bytes,
                                   iterations=iterations if iterations is not None else info.iterations)
            for j, info in metrics.job_infos(exp.topology).items()
        }
        self.last_run = (results.name, scheme, run)
        m = metrics.compute_metrics(results, scheme=scheme, jobs=infos)
        for cct in m.ccts:
            ratio = f" ({cct.over_bound:.2f} x bound)" if cct.over_bound is not None else ""
            output(f"job {cct.job} iteration {cct.iteration}: CCT {cct.cct_s * 1000:.1f} ms{ratio}\n")
        totals = counter_totals(run.counter_delta())
        output(f"verified: {'yes' if m.verified else 'no'}; this run: Symphony marks {totals['symphony_marks']}, "
               f"queue marks {totals['queue_marks']}, drops {totals['drops']}\n")
        try:
            _write_cli_report(results, m, totals)
        except OSError as exc:
            output(f"*** report not written: {exc}\n")
        for err in m.errors[:5]:
            output(f"  {err}\n")

    # -- switch ---------------------------------------------------------------------------
    def do_switch(self, line: str) -> None:
        """switch NAME: counters, queues and Symphony registers of switch NAME."""
        exp = self.experiment
        name = line.strip()
        names = ", ".join(exp.network.switch_names)
        if not name:
            output(f"usage: switch NAME (one of {names})\n")
            return
        if name not in exp.network.switch_names:
            what = "a host" if exp.topology.is_host(name) else "not in this topology"
            error(f"*** no switch {name!r} ({what}); the switches are: {names}\n")
            return
        try:
            counters = exp.network.read_counters()[name]
        except Exception as exc:  # noqa: BLE001 - a dead switch: say so, keep the CLI
            output(f"*** switch {name}: {exc}\n")
            return
        stats = counters.get("stats", {})
        sw_plan = exp.network.plan.switch(name)
        try:
            mode = exp.network.read_modes().get(name, "none")
        except Exception as exc:  # noqa: BLE001 - shown, the CLI goes on
            mode = f"unreadable: {exc}"
        output(f"switch {name} (mode {mode})\n")
        output(f"{'port':>4} {'intf':<15} {'peer':<8} {'rx':>9} {'tx':>9} {'max q':>6} {'tail drops':>10}\n")
        tag = getattr(exp.network, "link_tag", None)  # the kernel's name (emu.linknames), as `s1 ip link` shows it
        for port in sw_plan.ports:
            p = port.port
            intf = tag.intf(name, p) if tag is not None else port.intf
            output(f"{p:>4} {intf:<15} {port.peer:<8} {_get(stats, 'rx', p):>9} {_get(stats, 'tx', p):>9} "
                   f"{_get(stats, 'max_qdepth', p):>6} {_get(stats, 'tail_drops', p):>10}\n")
        drops = stats.get("drops", {})
        if drops:
            output("drops: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())) + "\n")
        expected = routing.compute_routes(exp.topology).expected_flows().get(name, {})
        last = self.last_run[2].counter_delta().get(name, {}) if self.last_run else None
        if self.last_run:
            output(f"marks: last allreduce ({self.last_run[0]}, mode {self.last_run[1]}) / since the network "
                   f"started\n")
        else:
            output("marks: since the network started (no allreduce run yet)\n")
        for job in exp.topology.jobs:
            sym, qm = _job_marks(counters, job.id)
            marks = f"Symphony marks {sym}, queue marks {qm}"
            if last is not None:
                lsym, lqm = _job_marks(last, job.id)
                marks = f"Symphony marks {lsym} / {sym}, queue marks {lqm} / {qm}"
            line_out = f"job {job.id}: expected_flows {expected.get(job.id, 0)}, {marks}"
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
            try:  # what the switches hold: a student's p4runtime-shell may have written it
                output(f"mode {self.experiment.network.mode_summary()}\n")
            except Exception as exc:  # noqa: BLE001 - a dead switch: say so, keep the CLI
                output(f"*** mode: {exc}\n")
            return
        try:
            self.experiment.set_mode(scheme)
        except Exception as exc:  # noqa: BLE001 - NetworkError: one line
            output(f"*** {exc}\n")
            return
        output(f"mode {scheme}\n")


    # -- iperf ----------------------------------------------------------------------------
    def do_iperf(self, line: str) -> None:
        """iperf [SRC DST [SECONDS]]: TCP bandwidth from SRC to DST (default 5 s), bounded in time."""
        self._iperf(line, "TCP")

    def do_iperfudp(self, line: str) -> None:
        """iperfudp BW SRC DST [SECONDS]: UDP at BW (e.g. 5M) from SRC to DST, bounded in time."""
        self._iperf(line, "UDP")

    def _iperf(self, line: str, l4_type: str) -> None:
        args = line.split()
        udp_bw = "10M"
        if l4_type == "UDP":
            if not args:
                error("usage: iperfudp BW SRC DST [SECONDS] (bw e.g. 10M)\n")
                return
            udp_bw = args.pop(0)
        hosts = None
        seconds = 5.0
        if args:
            if len(args) not in (2, 3):
                error(f"usage: {'iperfudp BW' if l4_type == 'UDP' else 'iperf'} SRC DST [SECONDS]\n")
                return
            missing = [a for a in args[:2] if a not in self.mn]
            if missing:
                error(f"*** node {missing[0]!r} not in the network\n")
                return
            hosts = [self.mn[a] for a in args[:2]]
            if len(args) == 3:
                try:
                    seconds = float(args[2])
                except ValueError:
                    seconds = -1
                if not 0 < seconds <= 600:
                    error(f"*** SECONDS {args[2]!r}: give a duration from 0 to 600 s\n")
                    return
        try:
            iperf(self.mn, hosts, l4_type=l4_type, udp_bw=udp_bw, seconds=seconds)
        except IperfError as exc:
            error(f"*** iperf: {exc}\n")


class IperfError(RuntimeError):
    """iperf could not run (no server listening, no report within the deadline)."""


def iperf(net: Any, hosts: list[Any] | None = None, *, l4_type: str = "TCP", udp_bw: str = "10M",
          seconds: float = 5.0, port: int = 5001, report_timeout_s: float = 5.0) -> list[str]:
    """Mininet's ``Mininet.iperf``, bounded in time and working with iperf >= 2.1.

    Why Mininet's hangs here: for TCP it waits for two ``/sec`` lines from the server, one
    for the ``telnet`` probe of ``waitListening`` and one for the test, with no deadline.
    iperf 2.1 (Debian 12 ships 2.1.8) prints no report for the probe, only ``read tcp flags
    (peer close) failed``, so the second line never comes. Here the server's output is
    read until the client's connection has reported (or ``report_timeout_s`` after the
    client ended), the server is interrupted either way, and no ``killall iperf`` touches
    other namespaces' iperf (Mininet hosts share the PID namespace).

    Returns ``[server rate, client rate]`` (plus the UDP bandwidth first for UDP), like Mininet's.
    Raises :class:`IperfError` when the server never listens.
    """
    client, server = hosts or [net.hosts[0], net.hosts[-1]]
    output(f"*** Iperf: testing {l4_type} bandwidth between {client} and {server} ({seconds:g} s)\n")
    args = f"iperf -p {port} " + ("-u " if l4_type == "UDP" else "")
    server.sendCmd(args + "-s")
    try:
        if l4_type == "TCP" and not waitListening(client, server.IP(), port, timeout=5):
            raise IperfError(f"no iperf server listening on {server}:{port} within 5 s")
        bw = f"-b {udp_bw} " if l4_type == "UDP" else ""
        cliout = client.cmd(f"timeout {seconds + 10:g} {args}-t {seconds:g} -c {server.IP()} {bw}")
        servout = ""
        deadline = time.monotonic() + report_timeout_s
        # The server's report of the client's connection follows the line naming its port.
        local = re.search(r"local \S+ port (\d+) connected", cliout)
        marker = f"port {local.group(1)}" if local else ""
        while time.monotonic() < deadline:
            servout += server.monitor(timeoutms=200)
            if marker in servout and "/sec" in servout.split(marker, 1)[1]:
                break
    finally:
        server.sendInt()
        servout_end = server.waitOutput()
    servout += servout_end
    result = [net._parseIperf(servout), net._parseIperf(cliout)]
    if l4_type == "UDP":
        result.insert(0, udp_bw)
    output(f"*** Results: {result}\n")
    return result


def _job_marks(counters: dict[str, Any], job: int) -> tuple[int, int]:
    """(Symphony marks, queue marks) of ``job`` in a switch's counters."""
    marks = counters.get("symphony_marks", [])
    qmarks = counters.get("queue_marks", [])
    return (marks[job] if job < len(marks) else 0, qmarks[job] if job < len(qmarks) else 0)


def _write_cli_report(results: Any, m: Any, totals: dict[str, int]) -> None:
    """summary.json, CSVs and plots of one ``allreduce`` in its folder, so ``symphony-emu
    report`` works on it like on a ``run`` folder."""
    report.write_report(results, {m.scheme: m}, {m.scheme: totals}, title=results.name)
    (results / report.RUN_FILE).write_text(json.dumps(
        {"status": "finished", "run_id": results.name, "topology_name": results.parent.name,
         "schemes": [m.scheme], "summary": report.SUMMARY_FILE}, indent=2) + "\n", encoding="utf-8")


def p4runtime_help(endpoints: dict[str, tuple[str, int]]) -> str:
    """The lines that tell a student how to program each switch with p4runtime-shell."""
    high, low = controller_election_id()
    lines = ["*** P4Runtime: one p4runtime-shell per switch; the P4Info comes from the switch; its default "
             f"election id (1, 0) is above the controller's ({high}, {low}), so you are primary (if it says you "
             "are not, use a higher one):"]
    for name, (addr, device_id) in endpoints.items():
        lines.append(f"***   {name} (device {device_id}, {addr}): {sys.executable} -m p4runtime_sh --grpc-addr {addr} "
                     f"--device-id {device_id} --election-id 1,0")
    name, (addr, device_id) = next(iter(endpoints.items()))
    lines.append(f"***   in Python: import p4runtime_sh.shell as sh; sh.setup(device_id={device_id}, "
                 f"grpc_addr=\"{addr}\", election_id=(1, 0))")
    lines.append("***   then e.g. TableEntry(\"MyIngress.ipv4_lpm\").read(lambda e: print(e)); "
                 "CounterEntry(\"MyEgress.symphony_marks\").read(lambda c: print(c))")
    return "\n".join(lines) + "\n"


def _get(stats: dict[str, Any], key: str, port: int) -> Any:
    """stats[key][port] with int or str port keys (JSON), '-' when missing."""
    table = stats.get(key, {})
    if not isinstance(table, dict):
        return "-"
    return table.get(port, table.get(str(port), "-"))


@click.command(name="cli")
@click.argument("topology", required=False)
@click.option("--target", type=click.Choice(target_names()), default=target_names()[0], show_default=True,
              help="Switch target.")
@click.option("--scheme", type=click.Choice(["baseline", "symphony"]), default="symphony", show_default=True,
              help="Mode the switches start in (the `mode` command changes it).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--pcap", is_flag=True, help="Switches write one pcap per port to <out>/pcap/.")
@click.option("--p4", "p4", type=click.Choice(["v1model", "tofino"]), default="v1model", show_default=True,
              help="P4 build the switches run (tofino: T2NA on the embedded target).")
def cli_command(topology: str | None, target: str, scheme: str, out: Path | None, seed: int, pcap: bool,
                p4: str) -> None:
    """Mininet CLI on TOPOLOGY's programmed network, with allreduce/switch/mode commands."""
    try:
        with runner.Experiment.open(resolve_topology(topology), target=target, out=out, seed=seed,
                                    pcap=pcap, p4=p4) as exp:
            exp.set_mode(scheme)
            if lg.getEffectiveLevel() > 25:  # show the CLI's output (Mininet's "output" level)
                setLogLevel("output")
            SymphonyCLI(exp)
    except user_errors() as exc:
        fail(str(exc))
    except runner.RunError as exc:
        fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt as exc:
        interrupted(exc, "the network was torn down")
