"""Control API of the embedded switch: in process, and as JSON lines over a socket.

docs/interfaces.md section 3. Three pieces:

- :class:`ControlAPI` wraps the pipeline's table/register/counter methods and the core's
  ``set_queue``/``stats``; every error becomes :class:`ControlError` with one line that
  names the table, field or register and the problem;
- :class:`ControlServer` serves a ControlAPI on a Unix socket path (or 127.0.0.1 TCP),
  on an asyncio loop (the switch's own loop, or a private thread);
- :class:`ControlClient` is the synchronous client with the same method names.

Protocol: one JSON object per line. Request ``{"id": N, "method": "table_add",
"params": {...}}``; reply ``{"id": N, "result": ...}`` or ``{"id": N, "error": "one line"}``.
Tuples travel as JSON arrays; the client turns ``counter_read`` results back into
tuples and the numeric keys of ``stats()`` back into ints.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import inspect
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emu.control import CONTRACT_METHODS, ControlError, ReplicationControl, SwitchControl, TableEntry
from emu.control import REPLICATION_METHODS as PRE_METHODS
from emu.encoding import FieldMatch, KeyField
from emu.p4rt import match_to_spelling

__all__ = ["ControlAPI", "ControlClient", "ControlError", "ControlServer", "METHODS"]

logger = logging.getLogger(__name__)

#: The embedded switch's methods beyond the contract: meters and direct counters.
EXTRA_METHODS = ("meter_set_rates", "direct_meter_set_rates", "direct_counter_read",
                 "pvs_add", "pvs_remove", "pvs_clear", "pvs_get")
#: Methods served over the socket: the SwitchControl contract, replication, the extras.
METHODS = CONTRACT_METHODS + PRE_METHODS + EXTRA_METHODS

#: Longest request or reply line accepted (bytes).
MAX_LINE_BYTES = 16 * 1024 * 1024


def _one_line(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    if isinstance(e, KeyError) and len(e.args) == 1 and isinstance(e.args[0], str):
        text = e.args[0]
    return " ".join(text.split())


class ControlAPI(SwitchControl, ReplicationControl):
    """In-process control of one switch (``SwitchCore`` + its pipeline): the
    :class:`~emu.control.SwitchControl` contract and its replication part without any
    process or socket.

    ``on_shutdown`` is called by :meth:`shutdown` (the switch process stops its loop).
    Every method raises :class:`ControlError` on a bad name, width or value. The program's
    default actions are those the tables have when the ControlAPI is made (the switch
    makes it before any control-plane write).
    """

    def __init__(self, core: Any, on_shutdown: Callable[[], None] | None = None) -> None:
        self.core = core
        self.pipeline = core.pipeline
        self._on_shutdown = on_shutdown
        self._program_defaults = {name: t.default_desc for name, t in self.pipeline.tables.items()}

    def _table(self, table: str) -> Any:
        try:
            return self.pipeline.table(table)
        except KeyError as e:
            raise ControlError(f"table_read: {_one_line(e)}") from None

    def _pipe(self, method: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self.pipeline, method, None)
        if fn is None:
            raise ControlError(f"{method}: not supported by this pipeline")
        try:
            return fn(*args, **kwargs)
        except ControlError:
            raise
        except (KeyError, ValueError, TypeError, IndexError, OverflowError) as e:
            raise ControlError(f"{method}: {_one_line(e)}") from None

    # -- tables --------------------------------------------------------------------

    def table_add(self, table: str, match: dict[str, Any], action: str,
                  params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Add an entry. ``match`` maps key field names to values: exact int or string
        (``"10.0.0.1"``, ``"00:00:00:00:00:01"``), lpm ``"10.0.1.0/24"`` or
        ``[value, prefix_len]``, ternary ``[value, mask]``. ControlError on a duplicate."""
        self._pipe("table_add", table, match, action, params or {}, priority)

    def table_modify(self, table: str, match: dict[str, Any], action: str,
                     params: dict[str, Any] | None = None, priority: int | None = None) -> None:
        """Change the action of an existing entry."""
        self._pipe("table_modify", table, match, action, params or {}, priority)

    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """Delete an existing entry."""
        self._pipe("table_delete", table, match, priority)

    def table_clear(self, table: str) -> None:
        """Delete every entry of ``table`` (the default action stays)."""
        self._pipe("table_clear", table)

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """Set the action run on a miss."""
        self._pipe("table_set_default", table, action, params or {})

    def table_reset_default(self, table: str) -> None:
        """The program's default action again (a ``const default_action`` stays as it is)."""
        t = self._table(table)
        action, params = self._program_defaults[t.name]
        if action:
            t.set_default(action, params, force=True)

    def table_read(self, table: str) -> list[TableEntry]:
        """Every entry of ``table``, match in :mod:`emu.encoding` spelling (don't-cares left out)."""
        t = self._table(table)
        keys = [KeyField(k.name, k.kind, k.width) for k in t.keys]
        out = []
        for canon, (_state, _args, prio, action, desc) in t.entries.items():
            fields = []
            for key, c in zip(keys, canon, strict=False):
                if key.match == "exact":
                    fields.append(FieldMatch(key, c))
                elif key.match == "lpm":
                    fields.append(FieldMatch(key, c[0], prefix_len=c[1]))
                elif key.match == "range":
                    fields.append(FieldMatch(key, c[0], high=c[1]))
                else:
                    fields.append(FieldMatch(key, c[0], mask=c[1]))
            out.append(TableEntry(t.name, match_to_spelling(fields), action, dict(desc),
                                  prio if t.needs_priority else None))
        return out

    # -- registers and counters ----------------------------------------------------

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or every cell when ``index`` is None."""
        return self._pipe("register_read", name, index)

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell (value must fit the register width)."""
        self._pipe("register_write", name, index, value)

    def register_reset(self, name: str) -> None:
        """Set every cell to 0."""
        self._pipe("register_reset", name)

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """``(packets, bytes)`` of one cell, or of every cell when ``index`` is None."""
        res = self._pipe("counter_read", name, index)
        if index is None:
            return [tuple(c) for c in res]  # type: ignore[misc]
        return tuple(res)  # type: ignore[return-value]

    def counter_reset(self, name: str) -> None:
        """Every cell of counter ``name`` to (0, 0)."""
        self._pipe("counter_reset", name)

    def reset_state(self) -> None:
        """As a new pipeline: tables emptied (const entries stay), program defaults,
        registers, counters and direct counters 0, no action profile member or group, no
        multicast group or clone session."""
        pipe = self.pipeline
        for name, table in pipe.tables.items():
            if not table.const_entries:
                table.clear()
            self.table_reset_default(name)
        for name in pipe.registers:
            pipe.register_reset(name)
        for name in pipe.counters:
            pipe.counter_reset(name)
        for prof in getattr(pipe, "action_profiles", {}).values():  # after the tables using them
            prof.members.clear()
            prof.groups.clear()
        for vs in getattr(pipe, "value_sets", {}).values():
            vs.clear()
        for group in list(pipe.mcast_groups):
            pipe.mcast_group_delete(group)
        for session in list(pipe.mirror_sessions):
            pipe.mirroring_delete(session)

    # -- switch --------------------------------------------------------------------

    def set_queue(self, port: int, rate_bps: float | None = None, depth_pkts: int | None = None,
                  delay_us: int | None = None) -> None:
        """Shape egress ``port``: bit/s, packets, microseconds; None leaves a value
        unchanged, ``rate_bps=0`` means unlimited."""
        try:
            self.core.set_queue(port, rate_bps=rate_bps, depth_pkts=depth_pkts, delay_us=delay_us)
        except (ValueError, TypeError) as e:
            raise ControlError(_one_line(e)) from None

    def stats(self) -> dict[str, Any]:
        """``SwitchCore.stats()``."""
        return self.core.stats()

    # -- packet replication (v1model PRE, clone sessions) ---------------------------

    def mcast_group_set(self, group: int, replicas: list) -> None:
        """Multicast ``group`` copies a packet to each replica: a port or ``[port, rid]``."""
        self._pipe("mcast_group_set", group, replicas)

    def mcast_group_delete(self, group: int) -> None:
        """Delete multicast ``group``."""
        self._pipe("mcast_group_delete", group)

    def mirroring_add(self, session: int, port: int) -> None:
        """Clone session ``session`` sends its copies to ``port``."""
        self._pipe("mirroring_add", session, port)

    def mirroring_delete(self, session: int) -> None:
        """Delete clone session ``session``."""
        self._pipe("mirroring_delete", session)

    def mcast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """Every multicast group: id -> [(port, rid), ...]."""
        return {g: [tuple(r) for r in reps] for g, reps in self.pipeline.mcast_groups.items()}  # type: ignore[misc]

    def mirror_sessions(self) -> dict[int, int]:
        """Every clone session: id -> egress port."""
        return dict(self.pipeline.mirror_sessions)

    def meter_set_rates(self, name: str, index: int | None, rates: list) -> None:
        """Meter cell (None: all) rates ``[[CIR, CBS], [PIR, PBS]]`` in units per microsecond, bursts in units."""
        self._pipe("meter_set_rates", name, index, rates)

    def direct_meter_set_rates(self, table: str, match: dict[str, Any], rates: list,
                               priority: int | None = None) -> None:
        """Rates of one table entry's direct meter."""
        self._pipe("direct_meter_set_rates", table, match, rates, priority)

    def direct_counter_read(self, table: str, match: dict[str, Any], priority: int | None = None) -> tuple[int, int]:
        """``(packets, bytes)`` of one table entry's direct counter."""
        return tuple(self._pipe("direct_counter_read", table, match, priority))  # type: ignore[return-value]

    # -- action profiles and selectors (runtime.Pipeline.act_prof_*: explicit ids) ------

    def act_prof_create_member(self, profile: str, member: int, action: str,
                               params: dict[str, Any] | None = None) -> None:
        """Member ``member`` of ``profile`` runs ``action(params)``."""
        self._pipe("act_prof_create_member", profile, member, action, params or {})

    def act_prof_modify_member(self, profile: str, member: int, action: str,
                               params: dict[str, Any] | None = None) -> None:
        """Member ``member`` runs ``action(params)`` from now on."""
        self._pipe("act_prof_modify_member", profile, member, action, params or {})

    def act_prof_delete_member(self, profile: str, member: int) -> None:
        """Delete a member no entry or group uses."""
        self._pipe("act_prof_delete_member", profile, member)

    def act_prof_create_group(self, profile: str, group: int) -> None:
        """An empty group of an action selector."""
        self._pipe("act_prof_create_group", profile, group)

    def act_prof_delete_group(self, profile: str, group: int) -> None:
        """Delete a group no entry uses."""
        self._pipe("act_prof_delete_group", profile, group)

    def act_prof_add_member_to_group(self, profile: str, member: int, group: int) -> None:
        """Put ``member`` into ``group``."""
        self._pipe("act_prof_add_member_to_group", profile, member, group)

    def act_prof_remove_member_from_group(self, profile: str, member: int, group: int) -> None:
        """Take ``member`` out of ``group``."""
        self._pipe("act_prof_remove_member_from_group", profile, member, group)

    def table_indirect_add(self, table: str, match: dict[str, Any], member: int,
                           priority: int | None = None) -> None:
        """An entry running action profile member ``member``."""
        self._pipe("table_indirect_add", table, match, member, priority)

    def table_indirect_add_with_group(self, table: str, match: dict[str, Any], group: int,
                                      priority: int | None = None) -> None:
        """An entry running the member of ``group`` the selector's hash picks per packet."""
        self._pipe("table_indirect_add_with_group", table, match, group, priority)

    # -- parser value sets (runtime.Pipeline.pvs_*, bmv2's CLI names) ---------------------

    def pvs_add(self, name: str, value: Any, mask: Any = None) -> None:
        """Add a member (a value; with ``mask`` a ternary one) to parser value set ``name``."""
        self._pipe("pvs_add", name, value, mask)

    def pvs_remove(self, name: str, value: Any, mask: Any = None) -> None:
        """Remove a member of parser value set ``name``."""
        self._pipe("pvs_remove", name, value, mask)

    def pvs_clear(self, name: str) -> None:
        """Remove every member of parser value set ``name``."""
        self._pipe("pvs_clear", name)

    def pvs_get(self, name: str) -> list[tuple[int, int]]:
        """The members of parser value set ``name``: ``(value, mask)`` in insertion order."""
        return [tuple(m) for m in self._pipe("pvs_get", name)]  # type: ignore[misc]

    def ping(self) -> str:
        """Liveness check: returns ``"pong"``."""
        return "pong"

    def shutdown(self) -> None:
        """Ask the switch process to stop (no-op in process without ``on_shutdown``)."""
        if self._on_shutdown is not None:
            self._on_shutdown()


# -- JSON-lines server ---------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, TableEntry):
        return _jsonable(value.as_dict())
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class ControlServer:
    """Serve a :class:`ControlAPI` as JSON lines.

    ``path``: a Unix socket path (a stale file is replaced, the parent directory is
    created); or ``tcp_port`` (0 = any) to listen on 127.0.0.1 only. Use
    ``await start()`` / ``await close()`` on a running loop (requests then run on that
    loop's thread, between packets), or ``start_in_thread()`` / ``stop_thread()``.
    """

    def __init__(self, api: ControlAPI, path: str | os.PathLike[str] | None = None, *,
                 tcp_port: int | None = None) -> None:
        if (path is None) == (tcp_port is None):
            raise ValueError("ControlServer needs exactly one of path and tcp_port")
        self.api = api
        self.path = None if path is None else Path(path)
        self.tcp_port = tcp_port
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    @property
    def address(self) -> str | tuple[str, int]:
        """The Unix socket path, or ``("127.0.0.1", port)`` once started."""
        if self.path is not None:
            return str(self.path)
        assert self._server is not None, "server not started"
        return self._server.sockets[0].getsockname()[:2]

    async def start(self) -> None:
        """Bind and start accepting; once this returns clients can connect."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._server = await asyncio.start_unix_server(self._handle, path=str(self.path),
                                                           limit=MAX_LINE_BYTES)
        else:
            self._server = await asyncio.start_server(self._handle, host="127.0.0.1",
                                                      port=self.tcp_port, limit=MAX_LINE_BYTES)
        logger.info("control server listening on %s", self.address)

    async def close(self) -> None:
        """Stop accepting, drop connections and remove the socket file."""
        if self._server is not None:
            self._server.close()
            for w in list(self._writers):
                w.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
        self.remove_socket_file()

    def remove_socket_file(self) -> None:
        """Remove the Unix socket file if it exists (safe to call twice)."""
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    writer.write(b'{"id": null, "error": "request line too long"}\n')
                    break
                except (ConnectionError, OSError):
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                reply, after = self.dispatch(line)
                writer.write(reply)
                await writer.drain()
                if after is not None:
                    asyncio.get_running_loop().call_soon(after)
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def dispatch(self, line: bytes) -> tuple[bytes, Callable[[], None] | None]:
        """Run one request line; returns the reply line and an optional callable to run
        after the reply was sent (``shutdown``)."""
        rid: Any = None
        after = None
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise ControlError(f"bad request: not JSON ({e})") from None
            if not isinstance(req, dict):
                raise ControlError("bad request: expected a JSON object")
            rid = req.get("id")
            method = req.get("method")
            params = req.get("params") or {}
            if method not in METHODS:
                raise ControlError(f"unknown method {method!r} (methods: {', '.join(METHODS)})")
            if not isinstance(params, (dict, list)):
                raise ControlError(f"{method}: params must be an object or an array")
            if method == "shutdown":
                result = None
                after = self.api.shutdown
            else:
                fn = getattr(self.api, method)
                try:
                    result = fn(**params) if isinstance(params, dict) else fn(*params)
                except TypeError as e:
                    if "argument" in str(e):
                        raise ControlError(f"{method}: bad params: {_one_line(e)}") from None
                    raise
            reply = {"id": rid, "result": _jsonable(result)}
        except ControlError as e:
            reply = {"id": rid, "error": _one_line(e)}
        except Exception as e:  # a bug, not a user mistake: keep serving
            logger.exception("control request failed: %r", line[:200])
            reply = {"id": rid, "error": f"internal error: {type(e).__name__}: {_one_line(e)}"}
        return (json.dumps(reply, separators=(",", ":")) + "\n").encode(), after

    # -- private-thread mode (tests, tools) ----------------------------------------

    def start_in_thread(self, timeout: float = 10.0) -> None:
        """Run the server on its own loop in a daemon thread; returns once it accepts.

        Requests then run on that thread: only for cores nothing else drives at the
        same time (tests, offline tools). RuntimeError if it did not start in time.
        """
        started = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._thread_loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as e:  # reported to the caller
                failure.append(e)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.close())
            loop.close()

        self._thread = threading.Thread(target=run, name="control-server", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            raise RuntimeError(f"control server on {self.path or self.tcp_port} did not start in {timeout} s")
        if failure:
            raise failure[0]

    def stop_thread(self, timeout: float = 5.0) -> None:
        """Stop a server started with :meth:`start_in_thread`."""
        if self._thread is None or self._thread_loop is None:
            return
        self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
        self._thread.join(timeout)
        self._thread = None
        self._thread_loop = None


# -- synchronous client ---------------------------------------------------------------


def _int_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {(int(k) if isinstance(k, str) and k.isdigit() else k): _int_keys(v)
                for k, v in value.items()}
    return value


class ControlClient(SwitchControl, ReplicationControl):
    """Synchronous client of a :class:`ControlServer`: the :class:`~emu.control.SwitchControl`
    methods, each sent as one request with the contract's signature.

    ``address``: the Unix socket path, or ``(host, port)`` for TCP. ``connect_timeout``
    (s) retries until the server accepts (the switch is ready then); ``timeout`` (s)
    bounds each request. Raises :class:`ControlError` for an error reply and
    ``ConnectionError`` when the server cannot be reached or goes away.
    """

    def __init__(self, address: str | os.PathLike[str] | tuple[str, int], *,
                 timeout: float = 30.0, connect_timeout: float = 0.0) -> None:
        self.address = address
        self.timeout = timeout
        self._lock = threading.Lock()
        self._next_id = 0
        self._sock = self._connect(connect_timeout)
        self._rfile = self._sock.makefile("rb")

    def _connect(self, connect_timeout: float) -> socket.socket:
        deadline = time.monotonic() + connect_timeout
        delay = 0.01
        while True:
            if isinstance(self.address, tuple):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                target: Any = self.address
            else:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                target = os.fspath(self.address)
            sock.settimeout(self.timeout)
            try:
                sock.connect(target)
                return sock
            except OSError as e:
                sock.close()
                if time.monotonic() >= deadline:
                    raise ConnectionError(f"control socket {self.address}: cannot connect ({e})") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def close(self) -> None:
        """Close the connection."""
        with contextlib.suppress(OSError):
            self._rfile.close()
            self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, **params: Any) -> Any:
        """Send one request and wait for its reply; ControlError on an error reply."""
        with self._lock:
            self._next_id += 1
            rid = self._next_id
            data = (json.dumps({"id": rid, "method": method, "params": params},
                               separators=(",", ":")) + "\n").encode()
            try:
                self._sock.sendall(data)
                line = self._rfile.readline(MAX_LINE_BYTES)
            except OSError as e:
                raise ConnectionError(f"control socket {self.address}: {e}") from None
            if not line:
                raise ConnectionError(f"control socket {self.address}: closed by the switch")
            reply = json.loads(line)
            if reply.get("id") != rid:
                raise ConnectionError(f"control socket {self.address}: reply id {reply.get('id')} != {rid}")
            if "error" in reply:
                raise ControlError(reply["error"])
            return reply.get("result")

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """See :meth:`emu.control.SwitchControl.counter_read` (JSON arrays back to tuples)."""
        res = self.call("counter_read", name=name, index=index)
        if index is None:
            return [tuple(c) for c in res]  # type: ignore[misc]
        return tuple(res)  # type: ignore[return-value]

    def stats(self) -> dict[str, Any]:
        """See :meth:`emu.control.SwitchControl.stats`; port keys come back as ints."""
        return _int_keys(self.call("stats"))

    def table_read(self, table: str) -> list[TableEntry]:
        """See :meth:`emu.control.SwitchControl.table_read`."""
        return [TableEntry(**e) for e in self.call("table_read", table=table)]

    def mcast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """See :meth:`ControlAPI.mcast_groups` (JSON keys back to ints)."""
        return {int(g): [tuple(r) for r in reps] for g, reps in self.call("mcast_groups").items()}  # type: ignore[misc]

    def mirror_sessions(self) -> dict[int, int]:
        """See :meth:`ControlAPI.mirror_sessions`."""
        return {int(s): int(p) for s, p in self.call("mirror_sessions").items()}

    def mcast_group_set(self, group: int, replicas: list) -> None:
        """See :meth:`ControlAPI.mcast_group_set`."""
        self.call("mcast_group_set", group=group, replicas=[list(r) if isinstance(r, tuple) else r for r in replicas])

    def mcast_group_delete(self, group: int) -> None:
        """See :meth:`ControlAPI.mcast_group_delete`."""
        self.call("mcast_group_delete", group=group)

    def mirroring_add(self, session: int, port: int) -> None:
        """See :meth:`ControlAPI.mirroring_add`."""
        self.call("mirroring_add", session=session, port=port)

    def mirroring_delete(self, session: int) -> None:
        """See :meth:`ControlAPI.mirroring_delete`."""
        self.call("mirroring_delete", session=session)

    def meter_set_rates(self, name: str, index: int | None, rates: list) -> None:
        """See :meth:`ControlAPI.meter_set_rates`."""
        self.call("meter_set_rates", name=name, index=index, rates=[list(r) for r in rates])

    def direct_meter_set_rates(self, table: str, match: dict[str, Any], rates: list,
                               priority: int | None = None) -> None:
        """See :meth:`ControlAPI.direct_meter_set_rates`."""
        self.call("direct_meter_set_rates", table=table, match=match, rates=[list(r) for r in rates],
                  priority=priority)

    def direct_counter_read(self, table: str, match: dict[str, Any], priority: int | None = None) -> tuple[int, int]:
        """See :meth:`ControlAPI.direct_counter_read`."""
        return tuple(self.call("direct_counter_read", table=table, match=match, priority=priority))  # type: ignore[return-value]


def _remote(name: str) -> Callable[..., Any]:
    """A ControlClient method that sends ``name`` with the contract's signature."""
    proto = getattr(SwitchControl, name)
    sig = inspect.signature(proto)

    @functools.wraps(proto)
    def method(self: ControlClient, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            raise ControlError(f"{name}: {e}") from None
        bound.apply_defaults()
        params = dict(bound.arguments)
        params.pop("self")
        return self.call(name, **params)

    method.__isabstractmethod__ = False  # type: ignore[attr-defined]
    return method


for _name in CONTRACT_METHODS:
    if _name not in ControlClient.__dict__:
        setattr(ControlClient, _name, _remote(_name))
abc.update_abstractmethods(ControlClient)
