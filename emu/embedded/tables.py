"""Match-action tables of the embedded switch and their control-plane encoding.

:class:`Table` holds the entries of one P4 table and answers the lookups the generated
code makes (exact: one dict; lpm: one dict per prefix length, longest first;
ternary/range/optional: a priority-ordered scan). Control-plane values are parsed by
:func:`to_int` (ints, dotted IPv4, IPv6, MAC, ``0x..``). Errors raise
:class:`ControlError` with a one-line message naming the table, key or action.
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import ControlError

__all__ = ["ActionSpec", "KeySpec", "Table", "closest", "to_int"]


def closest(name: str, options: Iterable[str]) -> str:
    m = difflib.get_close_matches(name, list(options), n=1, cutoff=0.5)
    return f" (did you mean {m[0]}?)" if m else ""


def to_int(value: Any, width: int, what: str) -> int:
    """Convert a control-plane value (int, '10.0.0.1', 'aa:bb:..', '0x..', '12') to an int."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        v = value
    elif isinstance(value, str):
        s = value.strip()
        try:
            if ":" in s and width == 48:
                parts = s.split(":")
                if len(parts) != 6:
                    raise ValueError
                v = int("".join(p.zfill(2) for p in parts), 16)
            elif s.count(".") == 3:
                v = int(ipaddress.IPv4Address(s))
            elif ":" in s:
                v = int(ipaddress.IPv6Address(s))
            else:
                v = int(s, 0)
        except ValueError:
            raise ControlError(f"{what}: cannot parse value {value!r}") from None
    else:
        raise ControlError(f"{what}: expected int or string, got {type(value).__name__}")
    if v < 0 or v >> width:
        raise ControlError(f"{what}: value {value!r} does not fit in bit<{width}>")
    return v


@dataclass
class KeySpec:
    """One table key field: name as written, match kind, width in bits."""

    name: str
    kind: str
    width: int


@dataclass
class ActionSpec:
    """An action a table may use: fully qualified name, id in the table, params (name, width)."""

    name: str
    aid: int
    params: list[tuple[str, int]]
    short: str = ""


class Table:
    """A match-action table and its entries (P4_16 spec 14.2; bmv2 match semantics).

    Entries are stored as ``(aid, args, True)``; the default as ``(aid, args, False)``.
    Ternary/range/optional: the entry with the highest ``priority`` wins (P4Runtime
    and p4c STF convention; bmv2's CLI numbers priorities the other way round).
    """

    def __init__(self, name: str, keys: list[KeySpec], actions: list[ActionSpec],
                 size: int | None, const_default: bool) -> None:
        self.name = name
        self.keys = keys
        self.actions = {a.name: a for a in actions}
        self.by_short = {a.short: a for a in actions}
        self.size = size
        self.const_default = const_default
        self.default: tuple = (0, (), False)
        self.default_desc: tuple[str, dict[str, int]] = ("", {})
        self.entries: dict[tuple, tuple[int, tuple, int, str, dict[str, int]]] = {}
        kinds = [k.kind for k in keys]
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)
        if all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif len(kinds) == 1 and kinds[0] == "lpm":
            self.mode = "lpm"
        else:
            self.mode = "scan"
        self.exact: dict[Any, tuple] = {}
        self._lpm: list[tuple[int, dict[int, tuple]]] = []
        self._scan: list[tuple[tuple, tuple, tuple]] = []

    # -- lookups (called from generated code)
    def lookup_lpm(self, key: int) -> tuple:
        """:meth:`lookup` of an lpm table."""
        for mask, d in self._lpm:
            e = d.get(key & mask)
            if e is not None:
                return e
        return self.default

    def lookup(self, key: Any) -> tuple:
        """Return the matching entry ``(aid, args, hit)`` or the default."""
        if self.mode == "exact":
            return self.exact.get(key, self.default)
        if self.mode == "lpm":
            for mask, d in self._lpm:
                e = d.get(key & mask)
                if e is not None:
                    return e
            return self.default
        k = key if isinstance(key, tuple) else (key,)
        for vals, masks, entry in self._scan:
            for kv, v, m in zip(k, vals, masks, strict=True):
                if m is None:
                    if not (v[0] <= kv <= v[1]):
                        break
                elif kv & m != v:
                    break
            else:
                return entry
        return self.default

    # -- control plane
    def _action(self, action: str) -> ActionSpec:
        a = self.actions.get(action) or self.by_short.get(action)
        if a is None:
            raise ControlError(f"{self.name}: unknown action {action}{closest(action, self.actions)}")
        return a

    def _args(self, a: ActionSpec, params: dict[str, Any] | None) -> tuple[tuple, dict[str, int]]:
        params = dict(params or {})
        out, desc = [], {}
        for pname, width in a.params:
            if pname not in params:
                raise ControlError(f"{self.name}: action {a.name} needs parameter {pname}")
            v = to_int(params.pop(pname), width, f"{self.name}: action {a.name} parameter {pname}")
            out.append(v)
            desc[pname] = v
        if params:
            extra = next(iter(params))
            names = [p for p, _ in a.params]
            raise ControlError(f"{self.name}: action {a.name} has no parameter {extra}{closest(extra, names)}")
        return tuple(out), desc

    def _canon(self, match: dict[str, Any], priority: int | None) -> tuple[tuple, int]:
        match = dict(match or {})
        canon = []
        plen_total = 0
        for ks in self.keys:
            what = f"{self.name}: key {ks.name}"
            if ks.name not in match:
                if ks.kind in ("ternary", "optional", "lpm"):
                    canon.append((0, 0) if ks.kind != "lpm" else (0, 0))
                    continue
                raise ControlError(f"{what}: missing from match")
            v = match.pop(ks.name)
            if ks.kind == "exact":
                canon.append(to_int(v, ks.width, what))
            elif ks.kind == "lpm":
                if isinstance(v, str) and "/" in v:
                    addr, _, ln = v.partition("/")
                    value, plen = to_int(addr, ks.width, what), int(ln)
                elif isinstance(v, list | tuple) and len(v) == 2:
                    value, plen = to_int(v[0], ks.width, what), int(v[1])
                else:
                    value, plen = to_int(v, ks.width, what), ks.width
                if not 0 <= plen <= ks.width:
                    raise ControlError(f"{what}: prefix length {plen} out of range 0..{ks.width}")
                mask = ((1 << plen) - 1) << (ks.width - plen)
                canon.append((value & mask, plen))
                plen_total += plen
            elif ks.kind in ("ternary", "optional"):
                if isinstance(v, list | tuple) and len(v) == 2:
                    value, mask = to_int(v[0], ks.width, what), to_int(v[1], ks.width, what + " mask")
                else:
                    value, mask = to_int(v, ks.width, what), (1 << ks.width) - 1
                canon.append((value & mask, mask))
            elif ks.kind == "range":
                if not (isinstance(v, list | tuple) and len(v) == 2):
                    raise ControlError(f"{what}: range match needs [low, high]")
                canon.append((to_int(v[0], ks.width, what), to_int(v[1], ks.width, what)))
        if match:
            extra = next(iter(match))
            raise ControlError(f"{self.name}: unknown key field {extra}{closest(extra, [k.name for k in self.keys])}")
        if self.needs_priority:
            if priority is None:
                raise ControlError(f"{self.name}: ternary/range/optional table needs a priority")
            return tuple(canon) + (("priority", int(priority)),), int(priority)
        return tuple(canon), plen_total

    def add(self, match, action, params=None, priority=None, *, modify: bool = False) -> None:
        """Insert (or with ``modify`` replace) an entry."""
        key, prio = self._canon(match, priority)
        a = self._action(action)
        args, desc = self._args(a, params)
        if modify:
            if key not in self.entries:
                raise ControlError(f"{self.name}: no entry with match {match}")
        else:
            if key in self.entries:
                raise ControlError(f"{self.name}: duplicate entry for match {match}")
            if self.size is not None and len(self.entries) >= self.size:
                raise ControlError(f"{self.name}: table full ({self.size} entries)")
        self.entries[key] = ((a.aid, args, True), args, prio, a.name, desc)
        self._rebuild()

    def delete(self, match, priority=None) -> None:
        """Remove an entry."""
        key, _ = self._canon(match, priority)
        if self.entries.pop(key, None) is None:
            raise ControlError(f"{self.name}: no entry with match {match}")
        self._rebuild()

    def clear(self) -> None:
        """Remove every entry (the default action stays)."""
        self.entries.clear()
        self._rebuild()

    def set_default(self, action, params=None, *, force: bool = False) -> None:
        """Set the default (miss) action; refused for ``const default_action``."""
        if self.const_default and not force:
            raise ControlError(f"{self.name}: default action is const")
        a = self._action(action)
        args, desc = self._args(a, params)
        self.default = (a.aid, args, False)
        self.default_desc = (a.name, desc)

    def _rebuild(self) -> None:
        if self.mode == "exact":
            self.exact.clear()
            single = len(self.keys) == 1
            for key, (entry, *_rest) in self.entries.items():
                self.exact[key[0] if single else key] = entry
        elif self.mode == "lpm":
            w = self.keys[0].width
            by_len: dict[int, dict[int, tuple]] = {}
            for key, (entry, *_rest) in self.entries.items():
                value, plen = key[0]
                by_len.setdefault(plen, {})[value] = entry
            self._lpm[:] = [(((1 << p) - 1) << (w - p), by_len[p]) for p in sorted(by_len, reverse=True)]
        else:
            rows = []
            for order, (key, (entry, _args, prio, _n, _d)) in enumerate(self.entries.items()):
                vals, masks = [], []
                for ks, c in zip(self.keys, key, strict=False):
                    if ks.kind == "exact":
                        vals.append(c)
                        masks.append((1 << ks.width) - 1)
                    elif ks.kind == "lpm":
                        vals.append(c[0])
                        masks.append(((1 << c[1]) - 1) << (ks.width - c[1]))
                    elif ks.kind == "range":
                        vals.append(c)
                        masks.append(None)
                    else:
                        vals.append(c[0])
                        masks.append(c[1])
                rows.append((-prio, order, tuple(vals), tuple(masks), entry))
            rows.sort(key=lambda r: (r[0], r[1]))
            self._scan[:] = [(v, m, e) for _p, _o, v, m, e in rows]

    def dump(self) -> list[dict[str, Any]]:
        """Entries as dicts (match canon, action, params, priority)."""
        return [{"match": k, "action": n, "params": d, "priority": p}
                for k, (_e, _a, p, n, d) in self.entries.items()]

