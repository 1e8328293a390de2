"""Scan tables (ternary/range keys): the entry a lookup returns is the highest-priority match, first
added among equal priorities, whichever way the table finds it (``Table.lookup_scan``: rows, or the
segments of a table whose keys are exact but one range field)."""

from __future__ import annotations

import random

import pytest

from emu.embedded.tables import ActionSpec, KeySpec, Table


def _table(kinds: list[str]) -> Table:
    keys = [KeySpec(f"k{i}", kind, 8) for i, kind in enumerate(kinds)]
    return Table("T", keys, [ActionSpec("act", 0, [("p", 16)], "act")], size=None, const_default=False)


def _expected(entries: list[tuple[dict, int, int]], kinds: list[str], key: tuple) -> int | None:
    """The ``p`` of the entry a P4 lookup matches (highest priority, then the first added)."""
    best = None
    for match, prio, p in entries:
        ok = True
        for i, kind in enumerate(kinds):
            m = match[f"k{i}"]
            if kind == "exact":
                ok = ok and key[i] == m
            elif kind == "range":
                ok = ok and m[0] <= key[i] <= m[1]
            else:  # ternary [value, mask]
                ok = ok and key[i] & m[1] == m[0]
        if ok and (best is None or prio > best[0]):
            best = (prio, p)
    return None if best is None else best[1]


@pytest.mark.parametrize("kinds", [["exact", "range"], ["range"], ["exact", "exact", "range"],
                                   ["exact", "range", "ternary"], ["range", "range"]])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_scan_lookup_returns_the_first_highest_priority_match(kinds: list[str], seed: int) -> None:
    rng = random.Random(seed)
    t = _table(kinds)
    assert (t._seg_i >= 0) == (kinds.count("range") == 1 and "ternary" not in kinds)
    entries: list[tuple[dict, int, int]] = []
    for p in range(60):
        match: dict = {}
        for i, kind in enumerate(kinds):
            if kind == "exact":
                match[f"k{i}"] = rng.randrange(3)
            elif kind == "range":
                lo = rng.randrange(0, 200)
                match[f"k{i}"] = [lo, min(255, lo + rng.choice([0, 1, 5, 20, 80]))]
            else:
                match[f"k{i}"] = [rng.randrange(4), 3]
        prio = rng.randrange(5)  # ties: the first added wins
        try:
            t.add(match, "act", {"p": p}, priority=prio)
        except Exception:  # noqa: BLE001  (the same match twice: refused, not an entry)
            continue
        entries.append((match, prio, p))
        if p % 20 == 19:  # lookups between additions: the rows are rebuilt after each change
            _check(t, entries, kinds, rng)
    _check(t, entries, kinds, rng)
    t.delete(entries[0][0], entries[0][1])
    _check(t, entries[1:], kinds, rng)


def _check(t: Table, entries: list[tuple[dict, int, int]], kinds: list[str], rng: random.Random) -> None:
    for _ in range(400):
        key = tuple(rng.randrange(4) if kind != "range" else rng.randrange(0, 260) for kind in kinds)
        want = _expected(entries, kinds, key)
        got = t.lookup_scan(key)
        assert (got[1][0] if got[2] else None) == want, key
        assert t.lookup(key) == got
