"""STF runner: p4c's Simple Test Framework files on the embedded switch.

``run_stf(program_path, stf_path, seed=None) -> StfResult`` and the click command
:data:`stf_command` (``symphony-emu stf PROGRAM.p4 TEST.stf [--seed N]``);
``run_stf_on(stf_path, device, names)`` runs the same file on any :class:`StfDevice`
(tests/p4/test_bmv2.py drives bmv2 with it).

Supported commands (the subset of p4c's STF format that bmv2 tests use, plus register
access)::

    # comment
    add TABLE [PRIORITY] KEY:VALUE ... ACTION(ARG:VALUE, ...)
    setdefault TABLE ACTION(ARG:VALUE, ...)
    packet PORT HEX                   hex may contain spaces
    expect PORT HEX[$]                '*' = any nibble; '$' = exact length, else the
                                      packet may be longer than the expectation
    wait
    register_write NAME INDEX VALUE
    register_read NAME INDEX VALUE    expectation on a register cell
    check_counter NAME(INDEX) [packets|bytes] [==|!=|<|<=|>|>=] VALUE
    meter_set_rates NAME INDEX CIR:CBS PIR:PBS   bmv2 units: per microsecond, units
    mirroring_add SESSION PORT        clone session -> egress port
    mc_mgrp_create GROUP              multicast group (p4c STF / bmv2 CLI names);
    mc_node_create RID PORT...        node handles are 0, 1, ... in creation order
    mc_node_associate GROUP NODE
    pvs_add NAME VALUE[&&&MASK]       parser value set member (bmv2 CLI names; a mask: ternary)
    pvs_remove NAME VALUE[&&&MASK]
    pvs_clear NAME

Key values: ``0x0a000001`` or decimal (exact), ``0x0a000000/24`` (lpm),
``VALUE&&&MASK`` (ternary), ``LOW->HIGH`` (range, inclusive); other text (``10.0.0.1``)
goes to the control API as is.
Table, action, key, register and counter names may be unqualified when unique
(``ipv4_lpm`` for ``MyIngress.ipv4_lpm``). PRIORITY is passed to the runtime unchanged
(bmv2 meaning).

Packets go through :class:`~emu.embedded.core.SwitchCore` on a virtual clock with
unlimited port rates; every packet is fully processed before the next command runs, so
``register_read``/``check_counter`` see the effect of every packet above them. Outputs
are matched against the ``expect`` lines in order, per port; an output on a port with no
expectation left is a failure ("unexpected packet"). A missing or unsupported command,
or a program the front end rejects, raises :class:`StfError` naming ``FILE:LINE``; so does
an internal error of the embedded pipeline (an exception from its generated code, not a
drop): ``FILE:LINE`` of the packet, then the exception (``symphony-emu stf`` exits 2).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import click

from emu.control import ReplicationControl, SwitchControl
from emu.embedded.control import ControlAPI
from emu.embedded.core import SwitchCore
from emu.embedded.errors import ControlError, P4FrontendError

__all__ = ["EmbeddedStfDevice", "StfDevice", "StfError", "StfProgram", "StfTable", "StfOutcome", "StfResult", "run_stf", "run_stf_on",
           "stf_command"]

#: Ports of the STF switch: every v1model port but 511 (the drop port).
STF_PORTS = range(0, 511)


class StfError(Exception):
    """The STF file or program cannot be run: ``str()`` is ``FILE:LINE: problem``."""


@dataclass(frozen=True)
class StfOutcome:
    """Result of one expectation: ``expect``, ``register_read``, ``check_counter``, or an
    unexpected output packet (then ``line`` is the line of the packet that caused it).

    ``skipped``: the device could not send a packet (``detail`` says why: a veth carries no
    frame shorter than an Ethernet header), so that packet and every expectation that
    depends on it were not checked; ``ok`` is then True (nothing failed)."""

    file: str
    line: int
    what: str
    ok: bool
    detail: str = ""
    skipped: bool = False

    def __str__(self) -> str:
        status = "SKIP" if self.skipped else "PASS" if self.ok else "FAIL"
        tail = f": {self.detail}" if self.detail else ""
        return f"{status} {self.file}:{self.line}: {self.what}{tail}"


@dataclass
class StfResult:
    """Outcomes in file order (unexpected packets last) and their totals."""

    outcomes: list[StfOutcome] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return sum(1 for o in self.outcomes if o.ok and not o.skipped)

    @property
    def skipped(self) -> int:
        return sum(1 for o in self.outcomes if o.skipped)

    @property
    def failed(self) -> int:
        return sum(1 for o in self.outcomes if not o.ok)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.failed == 0

    def summary(self) -> str:
        """``"N passed, N failed"`` (``", N skipped"`` when a packet could not be sent)."""
        tail = f", {self.skipped} skipped" if self.skipped else ""
        return f"{self.passed} passed, {self.failed} failed{tail}"


# -- parsing helpers ---------------------------------------------------------------------

_INT_RE = re.compile(r"^(?:0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7_]+|\d[\d_]*)$")
_ACTION_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*\((.*)\)\s*$", re.S)
_COUNTER_RE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.]*)\s*\(\s*(?P<index>\w+)\s*\)\s*"
    r"(?:(?P<kind>packets|bytes|count)\b)?\s*(?P<op>==|!=|<=|>=|<|>)?\s*(?P<value>\w+)\s*$")
_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _int(text: str) -> int:
    return int(text.replace("_", ""), 0)


def _value(text: str) -> int | str:
    """A key or argument value: int for numeric text, else the text for the control API."""
    return _int(text) if _INT_RE.match(text) else text


def _key_value(text: str) -> Any:
    """``V`` (exact), ``V/LEN`` (lpm), ``V&&&MASK`` (ternary) or ``LO->HI`` (range, inclusive,
    simple_switch_CLI's form, which p4c's bmv2 STF runner passes through) as the control API
    wants them."""
    if "->" in text:
        lo, hi = text.split("->", 1)
        return [_value(lo), _value(hi)]
    if "&&&" in text:
        v, m = text.split("&&&", 1)
        return [_value(v), _value(m)]
    if "/" in text:
        v, n = text.rsplit("/", 1)
        return [_value(v), _int(n)]
    return _value(text)


def _hex(text: str, where: str, wildcards: bool) -> str:
    h = "".join(text.split()).lower()
    if h.startswith("0x"):
        h = h[2:]
    allowed = "0123456789abcdef*" if wildcards else "0123456789abcdef"
    bad = next((c for c in h if c not in allowed), None)
    if bad is not None:
        raise StfError(f"{where}: bad character {bad!r} in packet hex")
    if len(h) % 2:
        raise StfError(f"{where}: packet hex has an odd number of digits ({len(h)})")
    return h


def _match_packet(expected: str, exact: bool, got: bytes) -> str | None:
    """None if ``got`` matches ``expected`` (hex with '*' nibbles); else why not."""
    g = got.hex()
    if len(g) < len(expected):
        return f"packet is {len(got)} bytes, expected {len(expected) // 2}: got {g}"
    if exact and len(g) != len(expected):
        return f"packet is {len(got)} bytes, expected exactly {len(expected) // 2}: got {g}"
    for i, c in enumerate(expected):
        if c != "*" and c != g[i]:
            return f"first difference at byte {i // 2}: expected {expected}, got {g}"
    return None


def _names(obj: Collection[str]) -> list[str]:
    """Names held by a program's ``tables``/``registers``/``counters``/``meters``."""
    return [str(k) for k in obj]


def _resolve(kind: str, name: str, candidates: Iterable[str], where: str) -> str:
    """Qualify ``name`` against ``candidates`` (exact, else unique ``.name`` suffix)."""
    cands = list(candidates)
    if not cands or name in cands:
        return name
    hits = [c for c in cands if c.endswith("." + name)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise StfError(f"{where}: {kind} name {name!r} is ambiguous: {', '.join(sorted(hits))}")
    return name  # unknown: the control API names it in its error


def _split_args(text: str, where: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, val = part.partition(":")
        if not sep:
            raise StfError(f"{where}: action argument {part!r} must be NAME:VALUE")
        args[name.strip()] = _value(val.strip())
    return args


# -- runner -------------------------------------------------------------------------------


class StfTable(Protocol):
    """What the runner reads of a table to qualify names: action and key names."""

    actions: Collection[str]  # action names (a dict by name, or a tuple of names)
    keys: Sequence[Any]  # each with ``.name`` (runtime KeySpec, encoding KeyField)


class StfProgram(Protocol):
    """The names of a program (``runtime.Pipeline`` or bmv2's ``ProgramSchema``): tables,
    registers, counters and meters by fully qualified name."""

    tables: Mapping[str, StfTable]
    registers: Mapping[str, Any]
    counters: Mapping[str, Any]
    meters: Mapping[str, Any]


class StfDevice(Protocol):
    """A switch the STF runner drives: ``api`` is its control (the SwitchControl contract;
    multicast groups and clone sessions when it is also a ReplicationControl); ``send``
    injects a frame and returns the frames it caused so far; ``drain`` returns what is
    still to come once the switch is idle; ``stats`` goes into the result;
    ``cannot_send`` is None, or why this device cannot inject ``frame`` (one line)."""

    api: SwitchControl

    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]: ...

    def drain(self) -> list[tuple[int, bytes]]: ...

    def stats(self) -> dict[str, Any]: ...

    def cannot_send(self, frame: bytes) -> str | None: ...

    def internal_error(self) -> Exception | None: ...


class EmbeddedStfDevice:
    """The embedded switch on a virtual clock with unlimited port rates."""

    def __init__(self, pipeline: Any) -> None:
        self.core = SwitchCore(pipeline, STF_PORTS)
        self.api = ControlAPI(self.core)
        self.now = 0

    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        self.now += 1
        self.core.receive(port, frame, self.now)
        return self.drain()

    def drain(self) -> list[tuple[int, bytes]]:
        core = self.core
        out = list(core.poll(self.now))
        for _ in range(1_000_000):
            d = core.next_deadline_us()
            if d is None:
                return out
            self.now = max(self.now, d)
            out.extend(core.poll(self.now))
        raise RuntimeError("STF switch did not go idle")  # pragma: no cover - a TM bug

    def stats(self) -> dict[str, Any]:
        return self.core.stats()

    def cannot_send(self, frame: bytes) -> str | None:  # noqa: ARG002 - the core takes any frame
        """None: a frame of any length enters the parser, as on bmv2."""
        return None

    def internal_error(self) -> Exception | None:
        """The first exception out of the generated pipeline code (a bug, not a drop)."""
        return self.core.internal_error


class _Runner:
    def __init__(self, pipeline: StfProgram, file: str, device: StfDevice | None = None) -> None:
        self.file = file
        self.pipe = pipeline
        self.device = device if device is not None else EmbeddedStfDevice(pipeline)
        self.api = self.device.api
        self.expects: dict[int, list[tuple[int, str, bool]]] = defaultdict(list)
        self.outputs: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        self.outcomes: list[tuple[int, StfOutcome]] = []  # (order key, outcome)
        self.in_line = 0
        #: multicast as p4c's STF writes it: node handle -> (rid, ports), group -> handles
        self.mc_nodes: list[tuple[int, list[int]]] = []
        self.mc_groups: dict[int, list[int]] = {}
        #: (line, reason) of the last packet the device could not send: the expects after it
        #: (until the next packet) are skipped, and so is every state check after it
        self.unsent: tuple[int, str] | None = None
        self.state_unsent: tuple[int, str] | None = None

    # name lookups against the pipeline
    def _table(self, name: str, where: str) -> str:
        return _resolve("table", name, _names(self.pipe.tables), where)

    def _action(self, table: str, name: str, where: str) -> str:
        info = self.pipe.tables.get(table)
        return _resolve("action", name, _names(info.actions) if info is not None else [], where)

    def _key(self, table: str, name: str, where: str) -> str:
        info = self.pipe.tables.get(table)
        if info is None:
            return name
        return _resolve("key", name, [k.name for k in info.keys], where)

    def _register(self, name: str, where: str) -> str:
        return _resolve("register", name, _names(self.pipe.registers), where)

    def _counter(self, name: str, where: str) -> str:
        return _resolve("counter", name, _names(self.pipe.counters), where)

    def _record(self, line: int, what: str, ok: bool, detail: str = "") -> None:
        self.outcomes.append((line, StfOutcome(self.file, line, what, ok, detail)))

    def _skip(self, line: int, what: str, unsent: tuple[int, str]) -> None:
        at, reason = unsent
        detail = reason if at == line else f"depends on the packet at line {at}, not sent: {reason}"
        self.outcomes.append((line, StfOutcome(self.file, line, what, True, detail, skipped=True)))

    def _collect(self, frames: Iterable[tuple[int, bytes]]) -> None:
        for port, frame in frames:
            self.outputs[port].append((self.in_line, frame))
        # a crash in the pipeline is a bug, not a drop: fail naming the packet that caused it
        exc = self.device.internal_error()
        if exc is not None:
            where = f"{self.file}:{self.in_line}" if self.in_line else self.file
            raise StfError(f"{where}: internal error in the switch pipeline on this packet: "
                           f"{type(exc).__name__}: {exc}")

    def _drain(self) -> None:
        self._collect(self.device.drain())

    def _control(self, where: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ControlError as e:
            raise StfError(f"{where}: {e}") from None

    def run_line(self, lineno: int, text: str) -> None:
        where = f"{self.file}:{lineno}"
        cmd, _, rest = text.partition(" ")
        rest = rest.strip()
        if cmd == "add":
            self._add(where, rest)
        elif cmd == "setdefault":
            parts = rest.split(None, 1)
            if len(parts) != 2:
                raise StfError(f"{where}: expected 'setdefault TABLE ACTION(ARGS)'")
            table = self._table(parts[0], where)
            m = _ACTION_RE.match(parts[1])
            if not m:
                raise StfError(f"{where}: expected ACTION(ARG:VALUE, ...) after the table name")
            action = self._action(table, m.group(1), where)
            self._control(where, self.api.table_set_default, table, action, _split_args(m.group(2), where))
        elif cmd == "packet":
            port_s, _, data = rest.partition(" ")
            if not port_s.isdigit() or not data.strip():
                raise StfError(f"{where}: expected 'packet PORT HEX'")
            frame = bytes.fromhex(_hex(data, where, wildcards=False))
            why = self.device.cannot_send(frame)
            if why is not None:
                self.unsent = self.state_unsent = (lineno, f"{len(frame)}-byte frame: {why}")
                self._skip(lineno, f"packet port {port_s}", self.unsent)
                return
            self.unsent = None
            self.in_line = lineno
            self._collect(self.device.send(int(port_s), frame))
        elif cmd == "expect":
            port_s, _, data = rest.partition(" ")
            if not port_s.isdigit():
                raise StfError(f"{where}: expected 'expect PORT HEX[$]'")
            data = data.strip()
            exact = data.endswith("$")
            pattern = _hex(data.rstrip("$"), where, wildcards=True)
            if self.unsent is not None:
                self._skip(lineno, f"expect port {port_s}", self.unsent)
                return
            self.expects[int(port_s)].append((lineno, pattern, exact))
        elif cmd == "wait":
            self._drain()
        elif cmd == "register_write":
            parts = rest.split()
            if len(parts) != 3:
                raise StfError(f"{where}: expected 'register_write NAME INDEX VALUE'")
            name = self._register(parts[0], where)
            self._control(where, self.api.register_write, name, _int(parts[1]), _int(parts[2]))
        elif cmd == "register_read":
            parts = rest.split()
            if len(parts) != 3:
                raise StfError(f"{where}: expected 'register_read NAME INDEX VALUE'")
            name = self._register(parts[0], where)
            self._drain()
            want = _int(parts[2])
            if self.state_unsent is not None:
                self._skip(lineno, f"register {name}[{_int(parts[1])}] == {want}", self.state_unsent)
                return
            got = self._control(where, self.api.register_read, name, _int(parts[1]))
            self._record(lineno, f"register {name}[{_int(parts[1])}] == {want}", got == want,
                         "" if got == want else f"got {got}")
        elif cmd == "check_counter":
            m = _COUNTER_RE.match(rest)
            if not m:
                raise StfError(f"{where}: expected 'check_counter NAME(INDEX) [packets|bytes] == VALUE'")
            name = self._counter(m.group("name"), where)
            index = _int(m.group("index"))
            kind = m.group("kind") or "packets"
            op = m.group("op") or "=="
            want = _int(m.group("value"))
            self._drain()
            if self.state_unsent is not None:
                self._skip(lineno, f"counter {name}({index}) {kind} {op} {want}", self.state_unsent)
                return
            pkts, nbytes = self._control(where, self.api.counter_read, name, index)
            got = nbytes if kind == "bytes" else pkts
            ok = _OPS[op](got, want)
            self._record(lineno, f"counter {name}({index}) {kind} {op} {want}", ok, "" if ok else f"got {got}")
        elif cmd == "meter_set_rates":
            parts = rest.split()
            if len(parts) != 4 or not all(":" in p for p in parts[2:]):
                raise StfError(f"{where}: expected 'meter_set_rates NAME INDEX CIR:CBS PIR:PBS'")
            name = _resolve("meter", parts[0], _names(self.pipe.meters), where)
            try:
                rates = [(float(r), int(b)) for r, b in (p.split(":") for p in parts[2:])]
            except ValueError:
                raise StfError(f"{where}: rates are RATE:BURST numbers (units per microsecond, units)") from None
            self._control(where, self.api.meter_set_rates, name, _int(parts[1]), rates)
        elif cmd in ("mirroring_add", "mc_mgrp_create", "mc_node_create", "mc_node_associate"):
            self._replication(where, cmd, rest.split())
        elif cmd.startswith("act_prof_") or cmd.startswith("table_indirect_add"):
            self._action_profile(where, cmd, rest)
        elif cmd in ("pvs_add", "pvs_remove", "pvs_clear"):
            self._value_set(where, cmd, rest.split())
        else:
            raise StfError(f"{where}: unsupported STF command {cmd!r}")

    def _pre(self, where: str, what: str) -> ReplicationControl:
        if not isinstance(self.api, ReplicationControl):
            raise StfError(f"{where}: this switch has no {what}")
        return self.api

    def _replication(self, where: str, cmd: str, args: list[str]) -> None:
        """p4c STF's bmv2 replication commands: clone sessions and multicast groups."""
        try:
            nums = [_int(a) for a in args]
        except ValueError:
            raise StfError(f"{where}: {cmd}: arguments must be numbers") from None
        if cmd == "mirroring_add":
            if len(nums) != 2:
                raise StfError(f"{where}: expected 'mirroring_add SESSION PORT'")
            self._control(where, self._pre(where, "clone sessions").mirroring_add, nums[0], nums[1])
            return
        if cmd == "mc_mgrp_create":
            if len(nums) != 1:
                raise StfError(f"{where}: expected 'mc_mgrp_create GROUP'")
            self.mc_groups[nums[0]] = []
        elif cmd == "mc_node_create":
            if len(nums) < 2:
                raise StfError(f"{where}: expected 'mc_node_create RID PORT...'")
            self.mc_nodes.append((nums[0], nums[1:]))  # its handle is its index, 0, 1, ...
            return
        else:
            if len(nums) != 2 or nums[0] not in self.mc_groups or not 0 <= nums[1] < len(self.mc_nodes):
                raise StfError(f"{where}: expected 'mc_node_associate GROUP NODE' of a created group and node")
            self.mc_groups[nums[0]].append(nums[1])
        fn = self._pre(where, "multicast groups").mcast_group_set
        for group, handles in self.mc_groups.items():
            self._control(where, fn, group, [(p, self.mc_nodes[h][0]) for h in handles for p in self.mc_nodes[h][1]])

    def _action_profile(self, where: str, cmd: str, rest: str) -> None:
        """bmv2's action profile commands with explicit ids (as P4Runtime gives them):
        ``act_prof_create_member PROFILE MEMBER ACTION(ARGS)`` (and ``_modify_member``),
        ``act_prof_delete_member PROFILE MEMBER``, ``act_prof_create_group PROFILE GROUP``
        (``_delete_group``), ``act_prof_add_member_to_group PROFILE MEMBER GROUP``
        (``_remove_member_from_group``), ``table_indirect_add TABLE [PRIORITY] KEY:VALUE ... MEMBER``
        and ``table_indirect_add_with_group TABLE [PRIORITY] KEY:VALUE ... GROUP``."""
        fn = getattr(self.api, cmd, None)
        profiles = getattr(self.pipe, "action_profiles", None)
        if fn is None or profiles is None:
            raise StfError(f"{where}: {cmd}: this switch has no action profiles")
        words = rest.split()
        if cmd.startswith("table_indirect_add"):
            if len(words) < 2 or not _INT_RE.match(words[-1]):
                raise StfError(f"{where}: expected '{cmd} TABLE [PRIORITY] KEY:VALUE ... "
                               f"{'GROUP' if cmd.endswith('group') else 'MEMBER'}'")
            table = self._table(words[0], where)
            tokens = words[1:-1]
            priority = None
            if tokens and _INT_RE.match(tokens[0]):
                priority = _int(tokens.pop(0))
            match: dict[str, Any] = {}
            for tok in tokens:
                k, sep, v = tok.partition(":")
                if not sep or not v:
                    raise StfError(f"{where}: match key {tok!r} must be KEY:VALUE")
                match[self._key(table, k, where)] = _key_value(v)
            self._control(where, fn, table, match, _int(words[-1]), priority)
            return
        if not words:
            raise StfError(f"{where}: expected '{cmd} PROFILE ...'")
        profile = _resolve("action profile", words[0], _names(profiles), where)
        if cmd in ("act_prof_create_member", "act_prof_modify_member"):
            m = _ACTION_RE.match(" ".join(words[2:]))
            if len(words) < 3 or not _INT_RE.match(words[1]) or not m:
                raise StfError(f"{where}: expected '{cmd} PROFILE MEMBER ACTION(ARG:VALUE, ...)'")
            tables = profiles[profile].tables
            action = self._action(tables[0].name, m.group(1), where) if tables else m.group(1)
            self._control(where, fn, profile, _int(words[1]), action, _split_args(m.group(2), where))
            return
        want = 3 if cmd in ("act_prof_add_member_to_group", "act_prof_remove_member_from_group") else 2
        if len(words) != want or not all(_INT_RE.match(w) for w in words[1:]):
            raise StfError(f"{where}: expected '{cmd} PROFILE {'MEMBER GROUP' if want == 3 else 'ID'}'")
        self._control(where, fn, profile, *(_int(w) for w in words[1:]))

    def _value_set(self, where: str, cmd: str, words: list[str]) -> None:
        """bmv2's parser value set commands: ``pvs_add NAME VALUE[&&&MASK]``, ``pvs_remove``, ``pvs_clear NAME``."""
        fn = getattr(self.api, cmd, None)
        sets = getattr(self.pipe, "value_sets", None)
        if fn is None or sets is None:
            raise StfError(f"{where}: {cmd}: this switch has no parser value sets")
        want = 1 if cmd == "pvs_clear" else 2
        if len(words) != want:
            raise StfError(f"{where}: expected '{cmd} NAME{'' if want == 1 else ' VALUE[&&&MASK]'}'")
        name = _resolve("value set", words[0], _names(sets), where)
        if want == 1:
            self._control(where, fn, name)
            return
        value, sep, mask = words[1].partition("&&&")
        try:
            args = [_int(value)] + ([_int(mask)] if sep else [])
        except ValueError:
            raise StfError(f"{where}: {cmd}: VALUE and MASK must be numbers") from None
        self._control(where, fn, name, *args)

    def _add(self, where: str, rest: str) -> None:
        paren = rest.find("(")
        if paren < 0:
            raise StfError(f"{where}: expected 'add TABLE [PRIORITY] KEY:VALUE ... ACTION(ARGS)'")
        head = rest[:paren].split()
        if len(head) < 2:
            raise StfError(f"{where}: expected 'add TABLE [PRIORITY] KEY:VALUE ... ACTION(ARGS)'")
        table = self._table(head[0], where)
        action_name = head[-1]
        tokens = head[1:-1]
        priority = None
        if tokens and _INT_RE.match(tokens[0]):
            priority = _int(tokens[0])
            tokens = tokens[1:]
        m = _ACTION_RE.match(action_name + rest[paren:])
        if not m:
            raise StfError(f"{where}: expected ACTION(ARG:VALUE, ...) at the end of 'add'")
        match: dict[str, Any] = {}
        for tok in tokens:
            k, sep, v = tok.partition(":")
            if not sep or not v:
                raise StfError(f"{where}: match key {tok!r} must be KEY:VALUE")
            match[self._key(table, k, where)] = _key_value(v)
        action = self._action(table, m.group(1), where)
        self._control(where, self.api.table_add, table, match, action,
                      _split_args(m.group(2), where), priority)

    def finish(self) -> StfResult:
        self._drain()
        late: list[StfOutcome] = []
        for port in sorted(set(self.expects) | set(self.outputs)):
            exps = self.expects.get(port, [])
            outs = self.outputs.get(port, [])
            for i, (lineno, hexpat, exact) in enumerate(exps):
                what = f"expect port {port}"
                if i >= len(outs):
                    self._record(lineno, what, False, "no packet")
                    continue
                why = _match_packet(hexpat, exact, outs[i][1])
                self._record(lineno, what, why is None, why or "")
            for in_line, frame in outs[len(exps):]:
                late.append(StfOutcome(self.file, in_line, f"unexpected packet on port {port}", False,
                                       frame.hex()))
        outcomes = [o for _, o in sorted(self.outcomes, key=lambda t: t[0])] + late
        return StfResult(outcomes=outcomes, stats=self.device.stats())


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """``(line number, command)`` with comments and blank lines removed; a trailing
    backslash continues a command on the next line."""
    pending = ""
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            yield start, line
    if pending.strip():
        yield start, pending.strip()


def run_stf(program_path: str | Path, stf_path: str | Path, seed: int | None = None,
            pipeline: Any = None) -> StfResult:
    """Run the STF file ``stf_path`` against ``program_path`` on the embedded switch.

    ``seed`` seeds the P4 ``random()`` extern. ``pipeline`` replaces the compiled
    program (tests). Raises :class:`StfError` (``FILE:LINE: problem``) for a program
    the front end rejects, an unsupported or malformed command, or a control-plane
    error (unknown table, bad width), or an exception inside the pipeline (naming the
    packet's line and the exception); failed expectations are in the result.
    """
    stf_path = Path(stf_path)
    try:
        text = stf_path.read_text()
    except OSError as e:
        raise StfError(f"{stf_path}: {e.strerror or e}") from None
    if pipeline is None:
        from emu.embedded.frontend import load_program
        from emu.embedded.runtime import Pipeline

        try:
            pipeline = Pipeline(load_program(program_path), seed=seed)
        except P4FrontendError as e:
            raise StfError(str(e)) from None
        except OSError as e:
            raise StfError(f"{program_path}: {e.strerror or e}") from None
    return run_stf_on(stf_path, EmbeddedStfDevice(pipeline), pipeline, text=text)


def run_stf_on(stf_path: str | Path, device: StfDevice, names: StfProgram, *,
               text: str | None = None) -> StfResult:
    """Run the STF file ``stf_path`` on ``device`` (any :class:`StfDevice`, e.g. bmv2).

    ``names`` (:class:`StfProgram`) qualifies short names. Same commands, matching and
    errors as :func:`run_stf`; a packet the device cannot send is skipped with its reason,
    and so is every expectation that depends on it (``StfOutcome.skipped``).
    """
    stf_path = Path(stf_path)
    if text is None:
        try:
            text = stf_path.read_text()
        except OSError as e:
            raise StfError(f"{stf_path}: {e.strerror or e}") from None
    runner = _Runner(names, str(stf_path), device)
    for lineno, line in _logical_lines(text):
        runner.run_line(lineno, line)
    return runner.finish()


@click.command("stf")
@click.argument("program", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("test", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--seed", type=int, default=None, help="Seed of the P4 random() extern.")
def stf_command(program: Path, test: Path, seed: int | None) -> None:
    """Run an STF test file (p4c format) against PROGRAM on the embedded switch."""
    try:
        result = run_stf(program, test, seed=seed)
    except StfError as e:
        click.echo(f"symphony-emu: error: {e}", err=True)
        sys.exit(2)
    if not result.outcomes:  # no expectation and nothing came out: "no packet leaves" is a test too
        click.echo(f"{test}: no expectations, and no packet came out")
    for outcome in result.outcomes:
        click.echo(str(outcome))
    click.echo(result.summary())
    if not result.ok:
        sys.exit(1)
