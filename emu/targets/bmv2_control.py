"""Control of a bmv2 ``simple_switch(_grpc)`` with the methods of ``ControlClient``.

docs/DESIGN.md section 2; docs/bmv2.md. :class:`Bmv2Control` has the method names and semantics
of :class:`emu.embedded.control.ControlClient` (docs/interfaces.md section 3), so the
network and runner code drive either target the same way:

- tables go through a table back end: :class:`P4RuntimeTables` (P4Runtime over gRPC with
  the p4runtime-shell client, the normal path on ``simple_switch_grpc``) or
  :class:`ThriftTables` (``simple_switch_CLI`` ``table_add`` ..., for plain
  ``simple_switch`` as in p4c's own STF runner);
- registers, counters and queue rate/depth always go through the Thrift CLI
  (:class:`ThriftCli`), since bmv2 serves neither register reads nor queue settings
  over P4Runtime.

Names are fully qualified (``MyIngress.ipv4_lpm``, key ``hdr.ipv4.dstAddr``, action
``MyIngress.ipv4_forward``, params by P4 name) and checked against a
:class:`ProgramSchema` read from the P4Info (P4Runtime ids) or the bmv2 JSON (no ids).
Values and match keys follow :mod:`emu.encoding` (the same on every target). Every error
is a one-line ``ControlError``.

Differences from the embedded switch: bmv2 has no per-port propagation delay
(``set_queue(delay_us=...)`` is logged and ignored), its queue rate is in packets per
second (converted from bit/s with :data:`QUEUE_RATE_PACKET_BYTES` for DATA and, with
priority queues, :data:`CONTROL_FRAME_BYTES` for the ACK/NACK/CNP queue), and ``stats()``
has no per-port rx/tx counts (read the P4 counters instead).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from emu.control import ControlError, EntryExistsError, EntryNotFoundError, SwitchControl, TableEntry
from emu.encoding import (
    ActionInfo,
    FieldMatch,
    KeyField,
    build_match,
    build_params,
    bytes_to_int,
    canonical_bytes,
    check_priority,
    needs_priority,
    parse_value,
)
from emu.p4rt import match_from_proto, match_to_proto, match_to_spelling

__all__ = [
    "ActionInfo", "Bmv2Control", "CliSession", "ControlError", "EntrySpec", "FieldMatch", "KeyField",
    "P4RuntimeTables", "ProgramSchema", "TableInfo", "ThriftCli", "ThriftTables", "build_entry", "canonical_bytes", "cli_match", "open_p4runtime",
]

log = logging.getLogger(__name__)

#: Frame size (bytes, Ethernet header + 1500-byte MTU) used to turn a queue rate in bit/s
#: into bmv2's packets per second (``set_queue_rate`` counts packets, not bits).
QUEUE_RATE_PACKET_BYTES = 1514
#: Egress queues per port that the bmv2 target runs (``--priority-queues``): p4/symphony.p4
#: puts ACK/NACK/CNP in queue :data:`CONTROL_QUEUE` (standard_metadata.priority), DATA in 0.
PRIORITY_QUEUES = 2
CONTROL_QUEUE = 1
#: Frame size (bytes) of an ACK/NACK/CNP: Ethernet 14 + IPv4 20 + UDP 8 + CTH 16. The control
#: queue's packets/s come from the link's bit/s with it, so an ACK costs its own bits (as on
#: the embedded switch, which paces in bits) and not a data frame's slot.
CONTROL_FRAME_BYTES = 58
#: CPU share (cores) at or above which a bmv2 process is taken as saturated: simple_switch
#: forwards in one pipeline thread per direction, so near one busy core it falls behind
#: (the issue's measurement: about 7 kpps per process on this machine, docs/bmv2.md).
SATURATED_CPU_SHARE = 0.9
#: bmv2's CLI ranks the *lowest* priority first; P4Runtime and ControlAPI rank the highest
#: first. CLI priority = BASE - priority (p4c's bmv2 STF runner does the same flip).
CLI_PRIORITY_BASE = 1 << 24
#: Prompt that ``simple_switch_CLI`` prints before reading each command.
CLI_PROMPT = "RuntimeCmd: "
#: Lines of CLI output that mean the command failed (runtime_CLI.handle_bad_input, cmd.Cmd).
_CLI_ERROR_RE = re.compile(r"^(Error:|Invalid |\*\*\* |Could not connect|Traceback)", re.M)
_CLI_HANDLE_RE = re.compile(r"Entry has been added with handle (\d+)")
#: counter_read output: older bmv2 prints ``BmCounterValue(packets=1, bytes=66)``; bmv2 1.15.5
#: prints ``MyEgress.symphony_marks[0]= (66 bytes, 1 packets)``.
_CLI_COUNTER_RES = (
    (re.compile(r"BmCounterValue\(packets=(\d+), bytes=(\d+)\)"), ("packets", "bytes")),
    (re.compile(r"\((\d+) bytes, (\d+) packets\)"), ("bytes", "packets")),
)


def parse_counter_value(output: str) -> tuple[int, int] | None:
    """``(packets, bytes)`` from one ``counter_read`` output of either bmv2 format, or None."""
    for regex, order in _CLI_COUNTER_RES:
        m = regex.search(output)
        if m is not None:
            got = dict(zip(order, (int(m.group(1)), int(m.group(2))), strict=True))
            return got["packets"], got["bytes"]
    return None


# -- program schema ------------------------------------------------------------------------


@dataclass(frozen=True)
class TableInfo:
    """A table: name, key fields in key order, names of its actions, P4Runtime id."""

    name: str
    keys: tuple[KeyField, ...]
    actions: tuple[str, ...]
    id: int = 0


@dataclass
class ProgramSchema:
    """Names, widths and ids of a compiled program's tables, actions, registers, counters.

    registers: name -> (cells, bitwidth); counters: name -> cells.
    """

    tables: dict[str, TableInfo] = field(default_factory=dict)
    actions: dict[str, ActionInfo] = field(default_factory=dict)
    registers: dict[str, tuple[int, int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    #: indexed meters: name -> cells
    meters: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_bmv2_json(cls, data: dict[str, Any] | str | Path) -> ProgramSchema:
        """Read a p4c bmv2 JSON (dict or file); ids stay 0 (Thrift needs names only)."""
        if not isinstance(data, dict):
            data = json.loads(Path(data).read_text())
        widths: dict[str, dict[str, int]] = {}
        for ht in data.get("header_types", []):
            widths[ht["name"]] = {f[0]: int(f[1]) for f in ht.get("fields", [])}
        header_type = {h["name"]: h["header_type"] for h in data.get("headers", [])}
        schema = cls()
        for a in data.get("actions", []):
            params = tuple((p["name"], int(p["bitwidth"]), i + 1) for i, p in enumerate(a.get("runtime_data", [])))
            schema.actions[a["name"]] = ActionInfo(a["name"], params)
        for pipe in data.get("pipelines", []):
            for t in pipe.get("tables", []):
                keys = []
                for k in t.get("key", []):
                    target = k.get("target", [])
                    width = widths.get(header_type.get(target[0], ""), {}).get(target[1], 0) if len(target) == 2 else 0
                    name = k.get("name") or ".".join(target)
                    keys.append(KeyField(name, k["match_type"], width))
                schema.tables[t["name"]] = TableInfo(t["name"], tuple(keys), tuple(t.get("actions", [])))
        for r in data.get("register_arrays", []):
            schema.registers[r["name"]] = (int(r["size"]), int(r["bitwidth"]))
        for c in data.get("counter_arrays", []):
            if not c.get("is_direct"):
                schema.counters[c["name"]] = int(c["size"])
        for m in data.get("meter_arrays", []):
            if not m.get("is_direct"):
                schema.meters[m["name"]] = int(m["size"])
        return schema

    @classmethod
    def from_p4info(cls, p4info: Any) -> ProgramSchema:
        """Read a ``p4.config.v1.P4Info`` message (ids included)."""
        kinds = {2: "exact", 3: "lpm", 4: "ternary", 5: "range", 6: "optional"}
        schema = cls()
        by_id: dict[int, str] = {}
        for a in p4info.actions:
            params = tuple((p.name, int(p.bitwidth), int(p.id)) for p in a.params)
            schema.actions[a.preamble.name] = ActionInfo(a.preamble.name, params, int(a.preamble.id))
            by_id[int(a.preamble.id)] = a.preamble.name
        for t in p4info.tables:
            # MatchField.MatchType: UNSPECIFIED 0, EXACT 2, LPM 3, TERNARY 4, RANGE 5, OPTIONAL 6
            keys = tuple(KeyField(m.name, kinds.get(int(m.match_type), "exact"), int(m.bitwidth), int(m.id))
                         for m in t.match_fields)
            actions = tuple(by_id[r.id] for r in t.action_refs if r.id in by_id)
            schema.tables[t.preamble.name] = TableInfo(t.preamble.name, keys, actions, int(t.preamble.id))
        for r in p4info.registers:
            schema.registers[r.preamble.name] = (int(r.size), int(r.type_spec.bitstring.bit.bitwidth))
        for c in p4info.counters:
            schema.counters[c.preamble.name] = int(c.size)
        for m in p4info.meters:
            schema.meters[m.preamble.name] = int(m.size)
        return schema

    def table(self, name: str) -> TableInfo:
        """The table ``name``; ControlError names the known tables otherwise."""
        try:
            return self.tables[name]
        except KeyError:
            raise ControlError(f"unknown table {name!r} (tables: {', '.join(sorted(self.tables))})") from None

    def action(self, table: TableInfo, name: str) -> ActionInfo:
        """Action ``name`` of ``table``; ControlError if the table has no such action."""
        if name not in table.actions or name not in self.actions:
            raise ControlError(f"{table.name}: unknown action {name!r} (actions: {', '.join(table.actions)})")
        return self.actions[name]

    def register(self, name: str) -> tuple[int, int]:
        """(cells, bitwidth) of register ``name``; ControlError otherwise."""
        try:
            return self.registers[name]
        except KeyError:
            raise ControlError(f"unknown register {name!r} (registers: {', '.join(sorted(self.registers))})") from None

    def counter(self, name: str) -> int:
        """Cells of indirect counter ``name``; ControlError otherwise."""
        try:
            return self.counters[name]
        except KeyError:
            raise ControlError(f"unknown counter {name!r} (counters: {', '.join(sorted(self.counters))})") from None


# -- entries -----------------------------------------------------------------------------


def cli_match(m: FieldMatch) -> str:
    """The simple_switch_CLI spelling of one key field (``0xa000000/8``, ``0x5&&&0xff``, ``1->9``)."""
    if m.key.match == "lpm":
        return f"{m.value:#x}/{m.prefix_len}"
    if m.key.match in ("ternary", "optional"):
        return f"{m.value:#x}&&&{m.mask:#x}"
    if m.key.match == "range":
        return f"{m.value:#x}->{m.high:#x}"
    return f"{m.value:#x}"


@dataclass(frozen=True)
class EntrySpec:
    """A fully checked table entry: table, key fields in key order (empty for the default
    entry), action, ``(param, bitwidth, id, value)`` in declaration order, priority
    (P4Runtime meaning, higher wins; None for tables without ternary/range keys)."""

    table: TableInfo
    match: tuple[FieldMatch, ...]
    action: ActionInfo | None
    params: tuple[tuple[str, int, int, int], ...] = ()
    priority: int | None = None
    default: bool = False

    def key_id(self) -> tuple:
        """Hashable identity of the entry (for handles and duplicates)."""
        return (self.table.name, tuple(m.ident() for m in self.match), self.priority)


# -- Thrift CLI ----------------------------------------------------------------------------


class CliRunner(Protocol):
    """Runs simple_switch_CLI commands; returns one output text per command."""

    def __call__(self, commands: Sequence[str]) -> list[str]: ...


def split_cli_output(text: str, count: int) -> list[str]:
    """Per-command outputs of one ``simple_switch_CLI`` session fed ``count`` commands on stdin.

    The CLI prints :data:`CLI_PROMPT` before reading each command, so the text between the
    n-th and (n+1)-th prompt is the n-th command's output (the preamble comes first).
    """
    chunks = text.split(CLI_PROMPT)[1:]
    chunks = [c.strip() for c in chunks][:count]
    return chunks + [""] * (count - len(chunks))


def cli_error(output: str) -> str | None:
    """The first error line of one command's CLI output, or None."""
    m = _CLI_ERROR_RE.search(output)
    if m is None:
        return None
    return output[m.start():].splitlines()[0].strip()


#: The module simple_switch_CLI imports first (Apache Thrift's Python library).
CLI_PYTHON_MODULE = "thrift"


def _interpreters(script: str) -> list[str]:
    """Pythons that may run ``script``: its shebang's, the system's, this one (no duplicates)."""
    import sys

    found: list[str] = []
    try:
        with open(script, "rb") as f:
            first = f.readline().decode(errors="replace").strip()
    except OSError:
        first = ""
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts and parts[0].endswith("/env") and len(parts) > 1:
            parts = [shutil.which(parts[1]) or parts[1]]
        if parts:
            found.append(parts[0])
    for candidate in ("/usr/bin/python3", sys.executable):
        if candidate not in found:
            found.append(candidate)
    return [c for c in found if c and os.access(c, os.X_OK)]


@functools.lru_cache(maxsize=8)
def cli_argv(binary: str = "simple_switch_CLI", module: str = CLI_PYTHON_MODULE) -> tuple[tuple[str, ...], str]:
    """How to run ``binary`` (a Python script): ``(argv prefix, "")``, the first interpreter
    that imports ``module``; or ``((), one-line reason)`` naming the interpreters tried."""
    script = shutil.which(binary)
    if script is None:
        return (), f"{binary} is not on PATH (it ships with behavioral-model; docs/bmv2.md)"
    tried = _interpreters(script)
    if tried and not os.path.basename(tried[0]).startswith("python"):
        return (script,), ""  # not a Python script: run it as it is
    for python in tried:
        res = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False, timeout=30)
        if res.returncode == 0:
            return (python, script), ""
    return (), (f"{binary} needs a Python with the {module} module, and none of {', '.join(tried) or 'no python'} "
                f"has it: apt-get install python3-thrift (docs/bmv2.md)")


class ThriftCli:
    """``simple_switch_CLI --thrift-port PORT``, one process per batch of commands.

    ``timeout_s`` bounds each batch (seconds). Calling it returns one output string per
    command; ControlError (one line) when the CLI cannot run or reach the switch. The CLI
    runs under a Python that has ``thrift`` (:func:`cli_argv`), not whichever is first on PATH.
    """

    def __init__(self, thrift_port: int, *, binary: str = "simple_switch_CLI", timeout_s: float = 30.0) -> None:
        self.thrift_port = thrift_port
        self.binary = binary
        self.timeout_s = timeout_s

    def __call__(self, commands: Sequence[str]) -> list[str]:
        prefix, reason = cli_argv(self.binary)
        if not prefix:
            raise ControlError(reason)
        cmd = [*prefix, "--thrift-port", str(self.thrift_port)]
        try:
            res = subprocess.run(cmd, input="\n".join(commands) + "\n", capture_output=True, text=True,
                                 timeout=self.timeout_s, check=False)
        except FileNotFoundError:
            raise ControlError(f"{self.binary} not found: install bmv2 (docs/bmv2.md)") from None
        except subprocess.TimeoutExpired:
            raise ControlError(f"{self.binary} --thrift-port {self.thrift_port}: no answer in "
                               f"{self.timeout_s:.0f} s") from None
        if CLI_PROMPT not in res.stdout:
            detail = (res.stdout + res.stderr).strip().splitlines()
            raise ControlError(f"{self.binary} --thrift-port {self.thrift_port} failed (exit {res.returncode}): "
                               f"{detail[0] if detail else 'no output'}")
        return split_cli_output(res.stdout, len(commands))


class CliSession:
    """One ``simple_switch_CLI --thrift-port PORT`` kept running: each command is written to
    its stdin and its output read up to the next :data:`CLI_PROMPT` (the CLI prints the prompt
    before it reads a command). The same interface as :class:`ThriftCli` without a process
    start per batch (about 0.2-0.5 s each on a 2-core machine); ``timeout_s`` bounds each
    answer. ControlError (one line) when the CLI cannot start, exits or does not answer;
    :meth:`close` ends it (also as a context manager)."""

    def __init__(self, thrift_port: int, *, binary: str = "simple_switch_CLI", timeout_s: float = 30.0) -> None:
        self.thrift_port = thrift_port
        self.binary = binary
        self.timeout_s = timeout_s
        prefix, reason = cli_argv(binary)
        if not prefix:
            raise ControlError(reason)
        try:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                [*prefix, "--thrift-port", str(thrift_port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, bufsize=0)
        except FileNotFoundError:
            raise ControlError(f"{binary} not found: install bmv2 (docs/bmv2.md)") from None
        self._buf = b""
        try:
            self._answer()  # the banner, up to the first prompt
        except ControlError:
            self.close()
            raise

    def _answer(self) -> str:
        prompt = CLI_PROMPT.encode()
        deadline = time.monotonic() + self.timeout_s
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while prompt not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError(f"{self.binary} --thrift-port {self.thrift_port}: no answer in "
                                   f"{self.timeout_s:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    lines = self._buf.decode(errors="replace").strip().splitlines()
                    raise ControlError(f"{self.binary} --thrift-port {self.thrift_port} exited: "
                                       f"{lines[-1] if lines else 'no output'}")
                self._buf += chunk
        out, _, self._buf = self._buf.partition(prompt)
        return out.decode(errors="replace").strip()

    def __call__(self, commands: Sequence[str]) -> list[str]:
        if self.proc is None:
            raise ControlError(f"{self.binary} --thrift-port {self.thrift_port}: the session is closed")
        outs = []
        for command in commands:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(command.encode() + b"\n")
            except BrokenPipeError:
                raise ControlError(f"{self.binary} --thrift-port {self.thrift_port} exited") from None
            outs.append(self._answer())
        return outs

    def close(self) -> None:
        """End the CLI (EOF on its stdin, then SIGKILL after 5 s)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]

    def __enter__(self) -> CliSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- table back ends ----------------------------------------------------------------------


class TableBackend(Protocol):
    """Writes checked entries to the switch, and reads them back."""

    def read(self, table: TableInfo, schema: ProgramSchema) -> list[TableEntry]: ...

    def reset_default(self, table: TableInfo) -> None: ...

    def insert(self, entry: EntrySpec) -> None: ...

    def modify(self, entry: EntrySpec) -> None: ...

    def delete(self, entry: EntrySpec) -> None: ...

    def clear(self, table: TableInfo) -> None: ...

    def set_default(self, entry: EntrySpec) -> None: ...


class ThriftTables:
    """Tables through ``simple_switch_CLI`` commands (plain ``simple_switch``, STF runner).

    The CLI addresses entries by handle, so the handles returned by ``table_add`` are kept
    to serve ``modify``/``delete``.
    """

    def __init__(self, cli: CliRunner) -> None:
        self.cli = cli
        self.handles: dict[tuple, int] = {}

    @staticmethod
    def add_command(entry: EntrySpec) -> str:
        """``table_add TABLE ACTION KEYS => PARAMS [PRIORITY]``."""
        assert entry.action is not None
        keys = " ".join(cli_match(m) for m in entry.match)
        params = " ".join(str(p[3]) for p in entry.params)
        cmd = f"table_add {entry.table.name} {entry.action.name} {keys} => {params}".rstrip()
        if entry.priority is not None:
            cmd += f" {CLI_PRIORITY_BASE - entry.priority}"
        return cmd

    @staticmethod
    def set_default_command(entry: EntrySpec) -> str:
        """``table_set_default TABLE ACTION PARAMS``."""
        assert entry.action is not None
        params = " ".join(str(p[3]) for p in entry.params)
        return f"table_set_default {entry.table.name} {entry.action.name} {params}".rstrip()

    def _run(self, command: str, what: str) -> str:
        out = self.cli([command])[0]
        err = cli_error(out)
        if err is not None:
            raise ControlError(f"{what}: {err}")
        return out

    def _handle(self, entry: EntrySpec) -> int:
        try:
            return self.handles[entry.key_id()]
        except KeyError:
            raise EntryNotFoundError(f"{entry.table.name}: no such entry {self._key_text(entry)}") from None

    @staticmethod
    def _key_text(entry: EntrySpec) -> str:
        return " ".join(cli_match(m) for m in entry.match)

    def insert(self, entry: EntrySpec) -> None:
        if entry.key_id() in self.handles:
            raise EntryExistsError(f"{entry.table.name}: duplicate entry {self._key_text(entry)}")
        out = self._run(self.add_command(entry), f"{entry.table.name}: table_add")
        m = _CLI_HANDLE_RE.search(out)
        if m is None:
            raise ControlError(f"{entry.table.name}: table_add gave no entry handle: {out[:200]!r}")
        self.handles[entry.key_id()] = int(m.group(1))

    def modify(self, entry: EntrySpec) -> None:
        assert entry.action is not None
        params = " ".join(str(p[3]) for p in entry.params)
        cmd = f"table_modify {entry.table.name} {entry.action.name} {self._handle(entry)} {params}".rstrip()
        self._run(cmd, f"{entry.table.name}: table_modify")

    def delete(self, entry: EntrySpec) -> None:
        self._run(f"table_delete {entry.table.name} {self._handle(entry)}", f"{entry.table.name}: table_delete")
        del self.handles[entry.key_id()]

    def clear(self, table: TableInfo) -> None:
        self._run(f"table_clear {table.name}", f"{table.name}: table_clear")
        for k in [k for k in self.handles if k[0] == table.name]:
            del self.handles[k]

    def set_default(self, entry: EntrySpec) -> None:
        self._run(self.set_default_command(entry), f"{entry.table.name}: table_set_default")

    def reset_default(self, table: TableInfo) -> None:
        self._run(f"table_reset_default {table.name}", f"{table.name}: table_reset_default")

    def read(self, table: TableInfo, schema: ProgramSchema) -> list[TableEntry]:  # noqa: ARG002
        """Not over the Thrift CLI: its ``table_dump`` is text for people, not a read."""
        raise ControlError(f"{table.name}: table_read is served over P4Runtime (simple_switch_grpc), "
                           "not over the Thrift CLI")


def _p4runtime_modules() -> tuple[Any, Any]:
    """``(p4runtime_sh.p4runtime, p4.v1.p4runtime_pb2)``, imported on first use."""
    try:
        from p4.v1 import p4runtime_pb2
        from p4runtime_sh import p4runtime as sh_p4runtime
    except ImportError as e:
        raise ControlError(f"bmv2 P4Runtime needs p4runtime-shell ({e}): pip install -e '.[bmv2]'") from None
    return sh_p4runtime, p4runtime_pb2


def _one_line(e: BaseException) -> str:
    return " ".join((str(e) or type(e).__name__).split())


class P4RuntimeTables:
    """Tables over P4Runtime through a p4runtime-shell ``P4RuntimeClient``.

    ``client`` has p4runtime-shell's ``write_update(update)`` and ``read_one(entity)``
    (a fake in tests). Entries are built as ``p4.v1.TableEntry`` messages from the ids in
    the schema; values are canonical binary strings (P4Runtime 1.3 section 8.4).
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        _, self.pb = _p4runtime_modules()

    def table_entry(self, entry: EntrySpec) -> Any:
        """The ``p4.v1.TableEntry`` of ``entry``."""
        te = self.pb.TableEntry()
        te.table_id = entry.table.id
        for m in entry.match:
            if not m.dont_care:
                match_to_proto(m, te.match.add())
        if entry.action is not None:
            te.action.action.action_id = entry.action.id
            for _name, width, pid, value in entry.params:
                p = te.action.action.params.add()
                p.param_id = pid
                p.value = canonical_bytes(value, width)
        if entry.priority is not None:
            te.priority = entry.priority
        if entry.default:
            te.is_default_action = True
        return te

    def _write(self, kind: str, te: Any, what: str) -> None:
        update = self.pb.Update()
        update.type = getattr(self.pb.Update, kind)
        update.entity.table_entry.CopyFrom(te)
        try:
            self.client.write_update(update)
        except Exception as e:  # noqa: BLE001 - P4RuntimeWriteException / grpc.RpcError: one line
            raise ControlError(f"{what}: {_one_line(e)}") from None

    def insert(self, entry: EntrySpec) -> None:
        self._write("INSERT", self.table_entry(entry), f"{entry.table.name}: insert")

    def modify(self, entry: EntrySpec) -> None:
        self._write("MODIFY", self.table_entry(entry), f"{entry.table.name}: modify")

    def delete(self, entry: EntrySpec) -> None:
        self._write("DELETE", self.table_entry(entry), f"{entry.table.name}: delete")

    def set_default(self, entry: EntrySpec) -> None:
        self._write("MODIFY", self.table_entry(entry), f"{entry.table.name}: set default")

    def reset_default(self, table: TableInfo) -> None:
        """MODIFY of the default entry with no action: back to the program's (spec 9.1.4)."""
        te = self.pb.TableEntry()
        te.table_id = table.id
        te.is_default_action = True
        self._write("MODIFY", te, f"{table.name}: reset default")

    def _entries(self, table: TableInfo) -> list[Any]:
        """The P4Runtime TableEntry messages of ``table`` (its default entry left out)."""
        entity = self.pb.Entity()
        entity.table_entry.table_id = table.id
        try:
            return [e.table_entry for rep in self.client.read_one(entity) for e in rep.entities
                    if not e.table_entry.is_default_action]
        except Exception as e:  # noqa: BLE001 - P4RuntimeException: one line
            raise ControlError(f"{table.name}: read: {_one_line(e)}") from None

    def read(self, table: TableInfo, schema: ProgramSchema) -> list[TableEntry]:
        """Every entry of ``table`` read over P4Runtime, decoded with ``schema``."""
        found = self._entries(table)
        by_id = {a.id: a for a in schema.actions.values()}
        out = []
        for te in found:
            fields = match_from_proto(table.name, table.keys, te.match)
            act = by_id.get(te.action.action.action_id)
            if act is None:
                raise ControlError(f"{table.name}: read an entry with unknown action id {te.action.action.action_id}")
            given = {p.param_id: p.value for p in te.action.action.params}
            params = {name: bytes_to_int(given.get(pid, b"\0"), width, f"{table.name} {act.name} {name}")
                      for name, width, pid in act.params}
            prio = int(te.priority) if needs_priority(table.keys) else None
            out.append(TableEntry(table.name, match_to_spelling(fields), act.name, params, prio))
        return out

    def clear(self, table: TableInfo) -> None:
        """Read every entry of ``table`` and delete each (P4Runtime has no 'clear')."""
        found = self._entries(table)
        for te in found:
            self._write("DELETE", te, f"{table.name}: delete")


def build_entry(schema: ProgramSchema, table: str, match: dict[str, Any] | None, action: str | None,
                params: dict[str, Any] | None = None, priority: int | None = None) -> EntrySpec:
    """A checked entry of ``table`` (``match=None``: the default entry) from the control API's
    spelling (:mod:`emu.encoding`); ControlError (one line) on a bad name or value."""
    info = schema.table(table)
    fields = () if match is None else build_match(info.name, info.keys, match)
    act = None if action is None else schema.action(info, action)
    values = () if act is None else build_params(info.name, act, params)
    params_spec = () if act is None else tuple((n, w, pid, v) for (n, w, pid), v in zip(act.params, values,
                                                                                       strict=True))
    if match is not None:
        # exact/lpm tables: None (bmv2 rejects a priority)
        priority = check_priority(info.name, info.keys, priority)
        if priority is not None and priority >= CLI_PRIORITY_BASE:
            raise ControlError(f"{table}: priority {priority} outside 1..{CLI_PRIORITY_BASE - 1} on bmv2")
    return EntrySpec(info, fields, act, params_spec, priority, default=match is None)


# -- the control object ------------------------------------------------------------------


class Bmv2Control(SwitchControl):
    """The :class:`~emu.control.SwitchControl` contract for one bmv2 switch.

    schema: the program's names and widths; tables: a :class:`P4RuntimeTables` or
    :class:`ThriftTables`; cli: the Thrift CLI runner (registers, counters, queues);
    on_close / on_shutdown: called by :meth:`close` / :meth:`shutdown` (the switch class
    tears down the gRPC client / stops the process); alive: liveness check for :meth:`ping`.
    """

    def __init__(self, schema: ProgramSchema, tables: TableBackend, cli: CliRunner, *,
                 on_close: Callable[[], None] | None = None, on_shutdown: Callable[[], None] | None = None,
                 alive: Callable[[], bool] | None = None,
                 usage: Callable[[], tuple[float, float] | None] | None = None, priority_queues: int = 1) -> None:
        self.schema = schema
        #: egress queues per port the switch was started with (--priority-queues)
        self.priority_queues = priority_queues
        self.tables = tables
        self.cli = cli
        self._on_close = on_close
        self._on_shutdown = on_shutdown
        self._alive = alive
        self._usage = usage
        self._last_usage: tuple[float, float] | None = None
        self._delay_warned: set[int] = set()

    # -- entries --------------------------------------------------------------------------
    def entry(self, table: str, match: dict[str, Any] | None, action: str | None,
              params: dict[str, Any] | None = None, priority: int | None = None) -> EntrySpec:
        """Check names and values and build the entry (``match=None``: the default entry)."""
        return build_entry(self.schema, table, match, action, params, priority)

    def table_add(self, table: str, match: dict[str, Any], action: str,
                  params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Add an entry; ControlError on a bad name/value or a duplicate key."""
        self.tables.insert(self.entry(table, match, action, params, priority))

    def table_modify(self, table: str, match: dict[str, Any], action: str,
                     params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Change the action of an existing entry."""
        self.tables.modify(self.entry(table, match, action, params, priority))

    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """Delete an existing entry."""
        spec = self.entry(table, match, None, None, priority)
        self.tables.delete(spec)

    def table_clear(self, table: str) -> None:
        """Delete every entry of ``table`` (the default action stays)."""
        self.tables.clear(self.schema.table(table))

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """Set the action run on a miss."""
        self.tables.set_default(self.entry(table, None, action, params))

    def table_reset_default(self, table: str) -> None:
        """The program's default action again."""
        self.tables.reset_default(self.schema.table(table))

    def table_read(self, table: str) -> list[TableEntry]:
        """Every entry of ``table`` as the switch holds it (over P4Runtime)."""
        return self.tables.read(self.schema.table(table), self.schema)

    # -- registers and counters (Thrift CLI) ------------------------------------------------
    def _cli(self, commands: Sequence[str], what: str) -> list[str]:
        outs = self.cli(list(commands))
        for out in outs:
            err = cli_error(out)
            if err is not None:
                raise ControlError(f"{what}: {err}")
        return outs

    def _index(self, name: str, index: Any, size: int) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise ControlError(f"{name}: index must be an int, got {index!r}")
        if not 0 <= index < size:
            raise ControlError(f"{name}: index {index} outside 0..{size - 1}")
        return index

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or every cell when ``index`` is None (``register_read NAME [INDEX]``)."""
        size, _ = self.schema.register(name)
        if index is None:
            out = self._cli([f"register_read {name}"], f"register {name}")[0]
            _, sep, rest = out.rpartition("=")
            try:
                values = [int(v) for v in rest.replace(",", " ").split()] if sep else []
            except ValueError:
                values = []
            if len(values) != size:
                raise ControlError(f"register {name}: cannot parse register_read output {out[:120]!r}")
            return values
        i = self._index(name, index, size)
        out = self._cli([f"register_read {name} {i}"], f"register {name}")[0]
        m = re.search(rf"{re.escape(name)}\[{i}\]\s*=\s*(\d+)", out)
        if m is None:
            raise ControlError(f"register {name}: cannot parse register_read output {out[:120]!r}")
        return int(m.group(1))

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell (value must fit the register width)."""
        size, width = self.schema.register(name)
        i = self._index(name, index, size)
        v = parse_value(value, width, f"register {name}[{i}]")
        self._cli([f"register_write {name} {i} {v}"], f"register {name}")

    def register_reset(self, name: str) -> None:
        """Set every cell to 0."""
        self.schema.register(name)
        self._cli([f"register_reset {name}"], f"register {name}")

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """``(packets, bytes)`` of one cell, or of every cell when ``index`` is None."""
        size = self.schema.counter(name)
        indices = range(size) if index is None else [self._index(name, index, size)]
        outs = self._cli([f"counter_read {name} {i}" for i in indices], f"counter {name}")
        values = []
        for i, out in zip(indices, outs, strict=True):
            value = parse_counter_value(out)
            if value is None:
                raise ControlError(f"counter {name}[{i}]: cannot parse counter_read output {out[:120]!r}")
            values.append(value)
        return values if index is None else values[0]

    def counter_reset(self, name: str) -> None:
        """Every cell to (0, 0) (``counter_reset NAME``)."""
        self.schema.counter(name)
        self._cli([f"counter_reset {name}"], f"counter {name}")

    def reset_state(self) -> None:
        """Every table emptied and back to its default, every register and counter 0."""
        for info in self.schema.tables.values():
            self.tables.clear(info)
            self.tables.reset_default(info)
        for name in self.schema.registers:
            self.register_reset(name)
        for name in self.schema.counters:
            self.counter_reset(name)

    # -- switch -------------------------------------------------------------------------------
    def set_queue(self, port: int, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> None:
        """Shape egress ``port``: bit/s (sent as packets/s of :data:`QUEUE_RATE_PACKET_BYTES`),
        packets; ``rate_bps=0`` means unlimited. ``delay_us`` is not modelled on bmv2."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 511:
            raise ControlError(f"set_queue: bad port {port!r} (0..510)")
        cmds = []
        if rate_bps is not None:
            if rate_bps < 0:
                raise ControlError(f"set_queue port {port}: rate_bps {rate_bps} < 0")
            if self.priority_queues > CONTROL_QUEUE:  # data and control queues, each at its frame size
                for queue, frame in ((0, QUEUE_RATE_PACKET_BYTES), (CONTROL_QUEUE, CONTROL_FRAME_BYTES)):
                    pps = 0 if rate_bps == 0 else max(1, round(rate_bps / (8 * frame)))
                    cmds.append(f"set_queue_rate {pps} {port} {queue}")
            else:
                pps = 0 if rate_bps == 0 else max(1, round(rate_bps / (8 * QUEUE_RATE_PACKET_BYTES)))
                cmds.append(f"set_queue_rate {pps} {port}")
        if depth_pkts is not None:
            if isinstance(depth_pkts, bool) or not isinstance(depth_pkts, int) or depth_pkts < 1:
                raise ControlError(f"set_queue port {port}: depth_pkts must be an int >= 1, got {depth_pkts!r}")
            cmds.append(f"set_queue_depth {depth_pkts} {port}")
        if delay_us and port not in self._delay_warned:
            self._delay_warned.add(port)
            log.warning("bmv2 has no per-port delay: port %d delay %d us is not modelled (docs/bmv2.md)",
                        port, delay_us)
        if cmds:
            self._cli(cmds, f"set_queue port {port}")

    def stats(self) -> dict[str, Any]:
        """What bmv2 can say without the P4 counters: the target, ports with ignored delays and,
        with ``usage``, the switch process's CPU: ``cpu_s`` / ``wall_s`` since it started and
        ``cpu_share`` (cores busy) and ``kept_up`` since the previous ``stats()`` call (a
        process busy >= :data:`SATURATED_CPU_SHARE` of a core did not keep up: docs/bmv2.md)."""
        out: dict[str, Any] = {"target": "bmv2", "delay_not_modelled": sorted(self._delay_warned)}
        sample = self._usage() if self._usage is not None else None
        if sample is not None:
            cpu_s, wall_s = sample
            prev = self._last_usage or (0.0, 0.0)
            self._last_usage = sample
            share = (cpu_s - prev[0]) / (wall_s - prev[1]) if wall_s > prev[1] else 0.0
            out.update(cpu_s=round(cpu_s, 3), wall_s=round(wall_s, 3), cpu_share=round(share, 3),
                       kept_up=share < SATURATED_CPU_SHARE)
        return out

    def ping(self) -> str:
        """``"pong"`` when the switch is alive; ConnectionError otherwise."""
        if self._alive is not None and not self._alive():
            raise ConnectionError("bmv2 switch is not running")
        return "pong"

    def shutdown(self) -> None:
        """Ask the switch to stop."""
        if self._on_shutdown is not None:
            self._on_shutdown()

    def close(self) -> None:
        """Drop the P4Runtime connection (safe to call twice)."""
        cb, self._on_close = self._on_close, None
        if cb is not None:
            cb()

    def __enter__(self) -> Bmv2Control:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def process_usage(pid: int, started: float, now: float | None = None) -> tuple[float, float] | None:
    """``(CPU seconds, wall seconds)`` of process ``pid`` (all threads) since ``started``
    (``time.monotonic()``), from ``/proc/PID/stat``; None when the process is gone."""
    import time

    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # after "pid (comm)": state is fields[0]
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return cpu, (time.monotonic() if now is None else now) - started


def open_p4runtime(device_id: int, grpc_addr: str, *, p4info_path: Path | None = None,
                   json_path: Path | None = None, election_id: tuple[int, int] = (0, 1)) -> tuple[Any, Any]:
    """Connect a p4runtime-shell client, push the pipeline if given, and read the P4Info.

    Returns ``(client, p4info)`` (a ``p4.config.v1.P4Info``); the caller calls ``client.tear_down()``. ControlError
    (one line) when p4runtime-shell is missing or the switch refuses.
    """
    sh_p4runtime, _ = _p4runtime_modules()
    try:
        client = sh_p4runtime.P4RuntimeClient(device_id, grpc_addr, election_id)
    except SystemExit:  # p4runtime-shell exits when the arbitration fails
        raise ControlError(f"P4Runtime {grpc_addr} device {device_id}: no arbitration answer") from None
    except Exception as e:  # noqa: BLE001 - grpc errors: one line
        raise ControlError(f"P4Runtime {grpc_addr}: {_one_line(e)}") from None
    try:
        if p4info_path is not None and json_path is not None:
            client.set_fwd_pipe_config(str(p4info_path), str(json_path))
        p4info = client.get_p4info()
    except Exception as e:  # noqa: BLE001 - P4RuntimeException: one line
        client.tear_down()
        raise ControlError(f"P4Runtime {grpc_addr}: pushing/reading the pipeline failed: {_one_line(e)}") from None
    return client, p4info

