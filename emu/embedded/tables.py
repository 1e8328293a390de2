"""Match-action tables of the embedded switch and their control-plane encoding.

:class:`Table` holds the entries of one P4 table and answers the lookups the generated
code makes (exact: one dict; lpm: one dict per prefix length, longest first;
ternary/range/optional: a priority-ordered scan). Control-plane values and match keys are
encoded by :mod:`emu.encoding`, the same module every target uses. Errors raise
:class:`ControlError` with a one-line message naming the table, key or action.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from emu import encoding
from emu.control import EntryExistsError, EntryNotFoundError, TableFullError

from .errors import ControlError
from .externs import DirectState, hash_value

__all__ = ["GROUP", "MEMBER", "ActionProfile", "ActionSpec", "KeySpec", "Table", "ValueSet", "closest", "to_int"]


closest = encoding.closest

#: the action id of an entry that points at an action profile's member or group
MEMBER, GROUP = -3, -2


def to_int(value: Any, width: int, what: str) -> int:
    """A control-plane value as an int of ``width`` bits (:func:`emu.encoding.parse_value`)."""
    return encoding.parse_value(value, width, what)


@dataclass
class KeySpec:
    """One table key field: name as written, match kind, width in bits."""

    name: str
    kind: str
    width: int


@dataclass
class ActionSpec:
    """An action a table may use: fully qualified name, id in the table, params (name, width);
    ``scope`` "default_only" (``@defaultonly``: only the default action), "table_only"
    (``@tableonly``: only in entries) or "" (both; P4_16 spec 14.2.1.2, P4Runtime ActionRef.scope)."""

    name: str
    aid: int
    params: list[tuple[str, int]]
    short: str = ""
    scope: str = ""


def _segments(rows: list[tuple[tuple, tuple, tuple]], i: int) -> tuple[list[int], list[tuple | None]]:
    """The range field ``i`` of ``rows`` (scan rows ``(vals, masks, entry)`` in priority order, each
    ``vals[i]`` a ``(lo, hi)`` range, inclusive) cut into segments: ``(starts, winners)``, ``starts``
    ascending, every value from ``starts[j]`` up to ``starts[j + 1] - 1`` (the last: upwards) held by
    the same rows, ``winners[j]`` the entry of the first of them in ``rows`` (None: no row). A value
    below ``starts[0]`` is in no row. A sweep over the starts with a heap of the rows begun so far
    (by their order, the ended ones dropped when on top): O((S + R) log R)."""
    starts = sorted({v for vals, _m, _e in rows for v in (vals[i][0], vals[i][1] + 1)})
    by_lo = sorted(range(len(rows)), key=lambda n: rows[n][0][i][0])
    active: list[int] = []
    winners: list[tuple | None] = []
    nxt = 0
    for b in starts:
        while nxt < len(by_lo) and rows[by_lo[nxt]][0][i][0] <= b:
            heapq.heappush(active, by_lo[nxt])
            nxt += 1
        while active and rows[active[0]][0][i][1] < b:
            heapq.heappop(active)
        winners.append(rows[active[0]][2] if active else None)
    return starts, winners


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
        self.default: tuple = (0, (), False, None)
        #: ``const entries``: set at compile time, refused to the control plane
        self.const_entries = False
        #: the table's ``counters = ...`` / ``meters = ...`` (DirectCounter / DirectMeter), if any
        self.direct_counter: Any = None
        self.direct_meter: Any = None
        #: ``implementation = ...``: the ActionProfile, and the width of its selector keys
        self.profile: ActionProfile | None = None
        self.selector_bits = 0
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
        # scan tables with exact fields: rows grouped by the exact fields' values, each group
        # with the (field, lowest, highest) bounds of its range fields (see _rebuild)
        self._group_by: tuple[int, ...] = tuple(i for i, k in enumerate(kinds) if k == "exact") \
            if self.mode == "scan" else ()
        self._groups: dict[tuple, tuple[list[tuple[int, int, int]], list[tuple[tuple, tuple, tuple]]]] = {}
        #: a scan table whose fields are exact but one range field (the key's field ``_seg_i``; -1:
        #: another table): each group as the segments of that field's values, ``(starts, winners)``:
        #: ``winners[j]`` (an entry or None) is the first row in priority order whose range holds
        #: every value from ``starts[j]`` to the next start (see _rebuild_scan); keyed by the exact
        #: field's value when there is one exact field, else by the tuple of their values
        self._seg_i = -1
        range_fields = [i for i, k in enumerate(kinds) if k == "range"]
        if self.mode == "scan" and len(range_fields) == 1 and all(k in ("exact", "range") for k in kinds):
            self._seg_i = range_fields[0]
        self._segments: dict[Any, tuple[list[int], list[tuple | None]]] = {}
        # scan rows are rebuilt at the next lookup after a change (programming N entries costs O(N))
        self._stale = False

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
        return self.lookup_scan(key)

    def lookup_scan(self, key: Any) -> tuple:
        """:meth:`lookup` of a table that is neither exact nor lpm (ternary, range, optional:
        entries scanned in priority order, grouped by their exact key fields)."""
        if self._stale:
            self._rebuild_scan()
        k = key if isinstance(key, tuple) else (key,)
        si = self._seg_i
        if si >= 0:  # exact fields and one range field: the segment that holds the key's value
            gb = self._group_by
            seg = self._segments.get(k[gb[0]] if len(gb) == 1 else tuple([k[i] for i in gb]))
            if seg is None:
                return self.default
            starts, winners = seg
            v = k[si]
            if v < starts[0]:  # below every range (the common case: an ECN ramp's empty queue)
                return self.default
            lo, hi = 1, len(starts)  # bisect_right(starts, v) - 1, inline (no call)
            while lo < hi:
                mid = (lo + hi) >> 1
                if v < starts[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            e = winners[lo - 1]
            return self.default if e is None else e
        rows = self._scan
        if self._group_by:
            # rows of the entries whose exact key fields equal the key's, in priority order
            group = self._groups.get(tuple([k[i] for i in self._group_by]))
            if group is None:
                return self.default
            bounds, rows = group
            for i, lo, hi in bounds:  # outside every entry's range of a range field: a miss
                if not (lo <= k[i] <= hi):
                    return self.default
        for vals, masks, entry in rows:
            for kv, v, m in zip(k, vals, masks, strict=True):
                if m is None:
                    if not (v[0] <= kv <= v[1]):
                        break
                elif kv & m != v:
                    break
            else:
                return entry
        return self.default

    @property
    def has_direct(self) -> bool:
        """Whether entries carry a :class:`DirectState` (direct counter or meter)."""
        return self.direct_counter is not None or self.direct_meter is not None

    def entry_state(self, match: dict[str, Any], priority: int | None = None) -> DirectState:
        """The direct counter/meter state of the entry with ``match`` (ControlError if none)."""
        key, _ = self._canon(match, priority)
        e = self.entries.get(key)
        if e is None:
            raise ControlError(f"{self.name}: no entry with match {match}")
        if e[0][3] is None:
            raise ControlError(f"{self.name}: the table has no direct counter or meter")
        return e[0][3]

    # -- control plane
    def _action(self, action: str) -> ActionSpec:
        a = self.actions.get(action) or self.by_short.get(action)
        if a is None:
            raise ControlError(f"{self.name}: unknown action {action}{closest(action, self.actions)}")
        return a

    def _args(self, a: ActionSpec, params: dict[str, Any] | None) -> tuple[tuple, dict[str, int]]:
        info = encoding.ActionInfo(a.name, tuple((p, w, i + 1) for i, (p, w) in enumerate(a.params)))
        args = encoding.build_params(self.name, info, params)
        return args, {p: v for (p, _w), v in zip(a.params, args, strict=True)}

    def _canon(self, match: dict[str, Any], priority: int | None) -> tuple[tuple, int]:
        """The entry's key in table order (:func:`emu.encoding.build_match`): exact value,
        lpm ``(value, prefix_len)``, ternary/optional ``(value, mask)``, range ``(low, high)``;
        plus its priority (lpm: the prefix length)."""
        keys = [encoding.KeyField(k.name, k.kind, k.width) for k in self.keys]
        fields = encoding.build_match(self.name, keys, match)
        canon: list[Any] = []
        plen_total = 0
        for f in fields:
            if f.key.match == "exact":
                canon.append(f.value)
            elif f.key.match == "lpm":
                canon.append((f.value, f.prefix_len))
                plen_total += int(f.prefix_len or 0)
            elif f.key.match == "range":
                canon.append((f.value, f.high))
            else:
                canon.append((f.value, f.mask))
        prio = encoding.check_priority(self.name, keys, priority)
        if prio is not None:
            return tuple(canon) + (("priority", prio),), prio
        return tuple(canon), plen_total

    def canonical_key(self, match: dict[str, Any], priority: int | None = None) -> tuple:
        """The key under which :attr:`entries` holds the entry of ``match`` (ControlError if bad)."""
        return self._canon(match, priority)[0]

    def _check_mutable(self) -> None:
        if self.const_entries:
            raise ControlError(f"{self.name}: the table has const entries; they cannot be changed")

    def add(self, match, action, params=None, priority=None, *, modify: bool = False, force: bool = False) -> None:
        """Insert (or with ``modify`` replace) an entry; ``force`` also into a const-entries table."""
        if not force:
            self._check_mutable()
        if self.profile is not None:
            raise ControlError(f"{self.name}: the table's actions come from action profile "
                               f"{self.profile.name}: add an entry with a member or a group")
        key, prio = self._canon(match, priority)
        a = self._action(action)
        if a.scope == "default_only":
            raise ControlError(f"{self.name}: action {a.name} is @defaultonly: it cannot be used in an entry")
        args, desc = self._args(a, params)
        if modify:
            if key not in self.entries:
                raise EntryNotFoundError(f"{self.name}: no entry with match {match}")
        else:
            if key in self.entries:
                raise EntryExistsError(f"{self.name}: duplicate entry for match {match}")
            if self.size is not None and len(self.entries) >= self.size:
                raise TableFullError(f"{self.name}: table full ({self.size} entries)")
        state = DirectState(self.direct_meter is not None) if self.has_direct else None
        if modify:  # a modified entry keeps its direct counter and meter
            state = self.entries[key][0][3]
        self.entries[key] = ((a.aid, args, True, state), args, prio, a.name, desc)
        self._rebuild()

    def delete(self, match, priority=None) -> None:
        """Remove an entry."""
        self._check_mutable()
        key, _ = self._canon(match, priority)
        if self.entries.pop(key, None) is None:
            raise EntryNotFoundError(f"{self.name}: no entry with match {match}")
        self._rebuild()

    def clear(self) -> None:
        """Remove every entry (the default action stays)."""
        self._check_mutable()
        self.entries.clear()
        self._rebuild()

    def set_default(self, action, params=None, *, force: bool = False) -> None:
        """Set the default (miss) action; refused for ``const default_action``."""
        if self.const_default and not force:
            raise ControlError(f"{self.name}: default action is const")
        a = self._action(action)
        if a.scope == "table_only":
            raise ControlError(f"{self.name}: action {a.name} is @tableonly: it cannot be the default action")
        args, desc = self._args(a, params)
        self.default = (a.aid, args, False, None)
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
            self._stale = True

    def _rebuild_scan(self) -> None:
        """The scan rows (by priority, then insertion order) and their groups, from :attr:`entries`."""
        self._stale = False
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
        self._groups.clear()
        for row in self._scan:
            gkey = tuple([row[0][i] for i in self._group_by])
            self._groups.setdefault(gkey, ([], []))[1].append(row)
        ranges = [i for i, ks in enumerate(self.keys) if ks.kind == "range"]
        for bounds, grows in self._groups.values():
            for i in ranges:
                bounds.append((i, min(r[0][i][0] for r in grows), max(r[0][i][1] for r in grows)))
        self._segments.clear()
        if self._seg_i >= 0:
            one = len(self._group_by) == 1
            for gkey, (_bounds, grows) in self._groups.items():
                self._segments[gkey[0] if one else gkey] = _segments(grows, self._seg_i)

    def indirect_add(self, match, *, member: int | None = None, group: int | None = None,
                     priority: int | None = None) -> None:
        """Insert an entry of a table with ``implementation``: it runs ``member``, or a member of
        ``group`` (selector) chosen per packet (:meth:`Table.resolve`)."""
        prof = self.profile
        if prof is None:
            raise ControlError(f"{self.name}: the table has no action profile (implementation)")
        self._check_mutable()
        key, prio = self._canon(match, priority)
        if key in self.entries:
            raise EntryExistsError(f"{self.name}: duplicate entry for match {match}")
        if self.size is not None and len(self.entries) >= self.size:
            raise TableFullError(f"{self.name}: table full ({self.size} entries)")
        if (member is None) == (group is None):
            raise ControlError(f"{self.name}: an indirect entry names a member or a group")
        if member is not None:
            prof._check_member(member)
            entry, name = (MEMBER, member), f"member {member}"
        else:
            prof._group(group)
            entry, name = (GROUP, group), f"group {group}"
        state = DirectState(self.direct_meter is not None) if self.has_direct else None
        self.entries[key] = ((entry[0], entry[1], True, state), (), prio, name, {})
        self._rebuild()

    def resolve(self, e: tuple, x: int = 0) -> tuple:
        """The entry ``(aid, args, True, state)`` of a member or group entry ``e``; ``x`` is the
        selector keys' bits (:attr:`selector_bits` wide). An empty group is a miss (the default)."""
        prof = self.profile
        if e[0] == MEMBER:
            mid = e[1]
        else:
            mids = prof.groups[e[1]]
            if not mids:
                return self.default
            if prof.hash_fn is not None:
                h = prof.hash_fn(x, self.selector_bits)
            else:
                h = hash_value(prof.algo, x, self.selector_bits) if prof.algo != "random" else x
            mid = mids[h % len(mids)]
        name, args, _desc = prof.members[mid]
        return (self.actions[name].aid, args, True, e[3])

    def dump(self) -> list[dict[str, Any]]:
        """Entries as dicts (match canon, action, params, priority)."""
        return [{"match": k, "action": n, "params": d, "priority": p}
                for k, (_e, _a, p, n, d) in self.entries.items()]



class ActionProfile:
    """``action_profile(N)`` / ``action_selector(algo, N, W)`` (v1model; bmv2's action profiles).

    Members are ``id -> (action name, args, params)``, groups ``id -> sorted member ids``.
    A table whose ``implementation`` is this profile holds, per entry, a member
    ``(MEMBER, id, True, state)`` or a group ``(GROUP, id, True, state)``; the generated code
    resolves it with :meth:`Table.resolve` after the lookup. A selector picks the member of a
    group as bmv2 does (src/bm_sim/action_profile.cpp ``choose_from_group``): the hash ``algo``
    of the ``selector`` key fields (bits concatenated, zero-padded to whole bytes) modulo the
    group's size, members in ascending id order; ``outputWidth`` is not used, as in bmv2.
    ``random`` draws the index uniformly from the pipeline's seeded generator.
    """

    def __init__(self, name: str, size: int, algo: str | None = None) -> None:
        self.name, self.size, self.algo = name, size, algo
        self.members: dict[int, tuple[str, tuple, dict[str, int]]] = {}
        self.groups: dict[int, list[int]] = {}
        self.tables: list[Table] = []
        #: ``hash_fn(x, bits)``: the selector's hash of the ``bits``-bit key value ``x`` when the
        #: architecture defines it (T2NA: its ``Hash<W>``), else :func:`hash_value` of ``algo``
        self.hash_fn: Any = None
        #: most members per group and most groups (T2NA's ActionSelector; None: no limit)
        self.max_group_size: int | None = None
        self.num_groups: int | None = None

    @property
    def is_selector(self) -> bool:
        return self.algo is not None

    def _table(self) -> Table:
        if not self.tables:
            raise ControlError(f"{self.name}: no table uses this action profile")
        return self.tables[0]

    def _check_member(self, member: int) -> None:
        if member not in self.members:
            raise EntryNotFoundError(f"{self.name}: no member {member}")

    def _refs(self, kind: int, ident: int) -> list[str]:
        return [t.name for t in self.tables for e in t.entries.values()
                if e[0][0] == kind and e[0][1] == ident]

    def add_member(self, member: int, action: str, params: dict[str, Any] | None = None, *,
                   modify: bool = False) -> None:
        """Create (``modify``: replace) member ``member`` running ``action(params)``."""
        member = to_int(member, 32, f"{self.name}: member id")
        if modify:
            self._check_member(member)
        elif member in self.members:
            raise EntryExistsError(f"{self.name}: member {member} exists")
        elif len(self.members) >= self.size:
            raise TableFullError(f"{self.name}: action profile full ({self.size} members)")
        t = self._table()
        a = t._action(action)
        args, desc = t._args(a, params)
        self.members[member] = (a.name, args, desc)

    def delete_member(self, member: int) -> None:
        """Delete a member no entry and no group refers to (bmv2 refuses it otherwise)."""
        self._check_member(member)
        users = self._refs(MEMBER, member) + [f"group {g}" for g, ms in self.groups.items() if member in ms]
        if users:
            raise ControlError(f"{self.name}: member {member} is still used by {', '.join(users)}")
        del self.members[member]

    def add_group(self, group: int) -> None:
        """Create an empty group (selectors only)."""
        if not self.is_selector:
            raise ControlError(f"{self.name}: an action_profile has no groups (an action_selector has)")
        group = to_int(group, 32, f"{self.name}: group id")
        if group in self.groups:
            raise EntryExistsError(f"{self.name}: group {group} exists")
        if self.num_groups is not None and len(self.groups) >= self.num_groups:
            raise TableFullError(f"{self.name}: {self.num_groups} groups already (num_groups)")
        self.groups[group] = []

    def _group(self, group: int) -> list[int]:
        g = self.groups.get(group)
        if g is None:
            raise EntryNotFoundError(f"{self.name}: no group {group}")
        return g

    def delete_group(self, group: int) -> None:
        """Delete a group no entry refers to."""
        self._group(group)
        users = self._refs(GROUP, group)
        if users:
            raise ControlError(f"{self.name}: group {group} is still used by {', '.join(users)}")
        del self.groups[group]

    def add_to_group(self, group: int, member: int) -> None:
        """Put ``member`` into ``group`` (kept in ascending member order)."""
        g = self._group(group)
        self._check_member(member)
        if member in g:
            raise EntryExistsError(f"{self.name}: member {member} is already in group {group}")
        if self.max_group_size is not None and len(g) >= self.max_group_size:
            raise TableFullError(f"{self.name}: group {group} has {self.max_group_size} members already "
                                 "(max_group_size)")
        g.append(member)
        g.sort()

    def remove_from_group(self, group: int, member: int) -> None:
        """Take ``member`` out of ``group``."""
        g = self._group(group)
        if member not in g:
            raise EntryNotFoundError(f"{self.name}: member {member} is not in group {group}")
        g.remove(member)





class ValueSet:
    """``value_set<T>(size)`` (P4_16 spec 12.11): the keysets a parser ``select`` case matches,
    written by the control plane (bmv2's ``pvs_add``/``pvs_remove``/``pvs_clear``/``pvs_get``).

    ``fields`` are ``(name, width)``: one field ``""`` for ``T = bit<W>``, a struct's members in
    order otherwise (a case ``vs: state`` of a ``select`` over as many expressions compares them
    all). A member is a value, or a value and a mask (a ternary member, as P4Runtime's
    ``ValueSetMember`` may give); a member matches a key ``k`` when ``k & mask == value & mask``.
    A struct's value is its fields concatenated, the first field high (bmv2), or a dict
    ``{field: value}``. At most ``size`` members.
    """

    def __init__(self, name: str, fields: list[tuple[str, int]], size: int) -> None:
        self.name, self.fields, self.size = name, fields, size
        self.width = sum(w for _n, w in fields)
        self.full = (1 << self.width) - 1
        #: members in insertion order: (value, mask), value already masked
        self.members: list[tuple[int, int]] = []
        #: members with every bit significant (the common case: a set lookup)
        self.exact: set[int] = set()
        #: the other members
        self.masked: list[tuple[int, int]] = []

    def _value(self, value: Any, what: str) -> int:
        if isinstance(value, dict) and self.fields[0][0]:
            names = [n for n, _w in self.fields]
            unknown = [k for k in value if k not in names]
            if unknown:
                raise ControlError(f"{self.name}: no field {unknown[0]}{closest(unknown[0], names)}")
            out = 0
            for n, w in self.fields:
                out = (out << w) | to_int(value.get(n, 0), w, f"{self.name}.{n}")
            return out
        return to_int(value, self.width, f"{self.name} {what}")

    def _member(self, value: Any, mask: Any) -> tuple[int, int]:
        m = self.full if mask is None else self._value(mask, "mask")
        return self._value(value, "value") & m, m

    def _rebuild(self) -> None:
        self.exact = {v for v, m in self.members if m == self.full}
        self.masked = [(v, m) for v, m in self.members if m != self.full]

    def add(self, value: Any, mask: Any = None) -> None:
        """Add a member (``mask`` None: every bit significant)."""
        mem = self._member(value, mask)
        if mem in self.members:
            raise EntryExistsError(f"{self.name}: value {mem[0]:#x} mask {mem[1]:#x} already in the value set")
        if len(self.members) >= self.size:
            raise TableFullError(f"{self.name}: value set full ({self.size} members)")
        self.members.append(mem)
        self._rebuild()

    def remove(self, value: Any, mask: Any = None) -> None:
        """Remove a member."""
        mem = self._member(value, mask)
        if mem not in self.members:
            raise EntryNotFoundError(f"{self.name}: value {mem[0]:#x} mask {mem[1]:#x} not in the value set")
        self.members.remove(mem)
        self._rebuild()

    def clear(self) -> None:
        """Remove every member."""
        self.members.clear()
        self._rebuild()

    def match(self, key: int) -> bool:
        """Whether ``key`` (the select expressions' values concatenated) is in the set."""
        if key in self.exact:
            return True
        return any(key & m == v for v, m in self.masked)
