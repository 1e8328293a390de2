"""The names the controller uses of ``p4/symphony.p4``: tables, actions, registers, counters, modes.

One place for every P4 name the Python side writes or reads (docs/interfaces.md section 2,
docs/DESIGN.md section 10): the routing builds table entries with them, the controller
(:mod:`emu.controller`) resets registers and reads counters with them, the Mininet CLI and
the reports name them. Names are fully qualified, as P4Runtime and the control API take them.
Both builds (v1model ``p4/symphony.p4`` and T2NA ``p4/tofino/symphony.p4``; their records,
source files and queue-depth units are :mod:`emu.p4build`) declare the same tables, actions,
registers and counters (``p4/include/*_tables.p4``).

Imports nothing: the schema, the routing and both back ends sit above it.
"""

from __future__ import annotations

# -- tables and their actions (p4/include/ingress_tables.p4, egress_tables.p4) -------------
TABLE_LPM = "MyIngress.ipv4_lpm"
#: ECMP (p4/include/ecmp.p4): (group, bucket) -> next hop, and (src, dst) pins ahead of routing.
TABLE_ECMP = "MyIngress.ecmp_nhop"
TABLE_PATH_PIN = "MyIngress.path_pin"
ACTION_ECMP = "MyIngress.ipv4_ecmp"
TABLE_SYMPHONY = "MyIngress.symphony_config"
TABLE_QUEUE_ECN = "MyEgress.queue_ecn"
TABLE_MARKING = "MyEgress.symphony_marking"
#: The placebo's per-job marking probability (docs/DESIGN.md section 11); action ACTION_MARKING.
TABLE_PLACEBO = "MyEgress.placebo_marking"
ACTION_FORWARD = "MyIngress.ipv4_forward"
ACTION_SYMPHONY = "MyIngress.set_symphony_config"
ACTION_ECN = "MyEgress.set_ecn_mark"
ACTION_MARKING = "MyEgress.set_symphony_mark"
#: The variants of docs/DESIGN.md section 4 (p4/include/*_tables.p4); no entry keeps the default.
#: ``tracker: port``: (job, egress port) -> its own tracker id and expected flows.
TABLE_TRACKER = "MyIngress.symphony_tracker"
ACTION_TRACKER = "MyIngress.set_tracker"
#: ``lead: slack``: job -> the bytes of a step ahead that count one step less.
TABLE_SLACK = "MyIngress.symphony_slack"
ACTION_SLACK = "MyIngress.set_slack"
#: ``marking: spaced``: job -> least time between two marks of a flow (the build's timestamp unit).
TABLE_SPACING = "MyEgress.symphony_spacing"
ACTION_SPACING = "MyEgress.set_mark_gap"

#: ``mode`` parameter of ``MyIngress.set_symphony_config`` per scheme (``MODE_BASELINE``,
#: ``MODE_SYMPHONY``, ``MODE_PLACEBO`` in p4/include/constants.p4). The schemes differ only in
#: it: the placebo marks at random with a per-job probability (:data:`TABLE_PLACEBO`) where
#: Symphony would look its lead up (docs/DESIGN.md section 11).
SCHEME_MODES: dict[str, int] = {"baseline": 0, "symphony": 1, "placebo": 2}

# -- registers (a job's Symphony tracker state, docs/DESIGN.md section 4) --------------------
#: ``[hostapps.wire.flow_index(job, channel, rank)]``: the step each ring flow last entered.
REGISTER_FLOW_STEP = "MyIngress.flow_step"
#: ``[hostapps.wire.slot_index(tracker, step)]``: step id (high 16 bits), flows that entered it (low 16).
REGISTER_STEP_COUNT = "MyIngress.step_count"
#: ``[tracker]``: the tracker's frontier step (tracker = job id, or a ``TABLE_TRACKER`` id).
REGISTER_FRONTIER = "MyIngress.frontier"
#: ``[hostapps.wire.flow_index(job, channel, rank)]``: time of the flow's last spaced mark (``marking: spaced``).
REGISTER_MARK_CLOCK = "MyEgress.mark_clock"
#: The registers zeroed before each run of the jobs (every index: all jobs start together).
JOB_REGISTERS = (REGISTER_FLOW_STEP, REGISTER_STEP_COUNT, REGISTER_FRONTIER, REGISTER_MARK_CLOCK)

# -- counters the runner reads (docs/interfaces.md section 2) --------------------------------
#: Per job (index job id): packets Symphony (or the placebo) marked, packets the queue-depth
#: ECN ramp marked, packets at the Symphony/placebo decision (eligible for a mark).
COUNTER_SYMPHONY_MARKS = "MyEgress.symphony_marks"
COUNTER_QUEUE_MARKS = "MyEgress.queue_marks"
COUNTER_SYMPHONY_ELIGIBLE = "MyEgress.symphony_eligible"
JOB_COUNTERS = (COUNTER_SYMPHONY_MARKS, COUNTER_QUEUE_MARKS, COUNTER_SYMPHONY_ELIGIBLE)
#: Per ingress port: packets the P4 program dropped, frames its parser rejected.
COUNTER_DROPS = "MyIngress.drops"
COUNTER_PARSER_ERRORS = "MyIngress.parser_errors"
PORT_COUNTERS = (COUNTER_DROPS, COUNTER_PARSER_ERRORS)

#: Marking threshold of probability 1: a 16-bit draw (0..65535) is always below it
#: (``PROB_ONE`` in p4/include/constants.p4).
PROB_ONE = 65536
#: Largest ``enq_qdepth`` (``bit<19>``), the top of the last ``queue_ecn`` range.
MAX_QDEPTH = 2**19 - 1
#: Size of ``MyEgress.queue_ecn`` (``QUEUE_ECN_ENTRIES`` in p4/include/constants.p4): every port's
#: ECN ramp ranges of a switch together (tests/unit/test_wire_p4_constants.py checks the two agree).
QUEUE_ECN_ENTRIES = 2048


def short_name(name: str) -> str:
    """``MyEgress.symphony_marks`` -> ``symphony_marks`` (the key of counter reads and reports)."""
    return name.split(".", 1)[1]
