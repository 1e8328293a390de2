"""The ideal-alignment reference: a per-step barrier across the ranks of one job (no I/O).

docs/DESIGN.md section 11: beside the baseline and Symphony every figure runs an ideal
alignment, in which no rank sends step s before every rank of its job has reached step s, so
all ring flows of a job are always in the same step (lockstep: step lead 0 by construction).
It is a host-side reference, not a mechanism a network could run: it needs every rank's
progress at once, which one process has only in virtual time.

:class:`StepBarrier` is shared by the :class:`hostapps.rank.RankWorker` s of one job. A rank
hands it the send requests of its collective (:meth:`submit`); requests of a step every rank has
asked to send (a *released* step) pass at once, others are held. When the last rank reaches a
step, the held requests of every rank become ready (in their order) and that rank's ``wake``
callback runs, so its driver polls it (:meth:`take` returns them). Step ids increase within a
job (iteration k's steps are k * 2(N-1) + s), so a released step never comes back.

No deadlock: a rank asks to send step s only after it received step s - 1 from its left
neighbour, which was sent once step s - 1 was released, i.e. once every rank had reached s - 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class StepBarrier:
    """A per-step barrier over ``nranks`` ranks of one job (see the module docstring)."""

    def __init__(self, nranks: int) -> None:
        if nranks < 1:
            raise ValueError(f"StepBarrier needs at least one rank, got {nranks}")
        self.nranks = nranks
        self.arrived: dict[int, set[int]] = {}  #: step -> ranks that asked to send it (until released)
        self.released: set[int] = set()
        self.held: dict[int, list[Any]] = {r: [] for r in range(nranks)}
        self.ready: dict[int, list[Any]] = {r: [] for r in range(nranks)}
        self.wake: dict[int, Callable[[], None]] = {}  #: rank -> its driver's "poll me now"
        self.releases = 0  #: steps released so far

    def submit(self, rank: int, requests: list[Any]) -> list[Any]:
        """``rank``'s send requests (objects with ``.step``); returns those that may go now."""
        out = []
        for req in requests:
            step = req.step
            if step in self.released:
                out.append(req)
                continue
            ranks = self.arrived.setdefault(step, set())
            ranks.add(rank)
            if len(ranks) == self.nranks:
                out = self._release(step, skip=rank) + out  # this rank's earlier requests go first
                out.append(req)
            else:
                self.held[rank].append(req)
        return out

    def take(self, rank: int) -> list[Any]:
        """The requests of ``rank`` released since the last call, in submission order."""
        out, self.ready[rank] = self.ready[rank], []
        return out

    def _release(self, step: int, *, skip: int) -> list[Any]:
        """Release ``step``: every other rank's held requests of it become ready (and the rank is
        woken); returns those of ``skip``, the rank whose request released it."""
        self.released.add(step)
        del self.arrived[step]
        self.releases += 1
        mine: list[Any] = []
        for rank, held in self.held.items():
            if not held:
                continue
            go = [r for r in held if r.step in self.released]
            if not go:
                continue
            self.held[rank] = [r for r in held if r.step not in self.released]
            if rank == skip:
                mine = go
                continue
            self.ready[rank].extend(go)
            wake = self.wake.get(rank)
            if wake is not None:
                wake()
        return mine
