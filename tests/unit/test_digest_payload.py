"""Digest payloads (hostapps.collectives.DigestRingCollective): the exact collective's messages
with a 16-byte record per slice; verification catches a chunk lost, duplicated, reduced twice
or corrupted."""

from __future__ import annotations

import numpy as np
import pytest

from hostapps.collectives import (
    DIGEST_RECORD_BYTES,
    DigestRingCollective,
    RingCollective,
    digest_expected,
    digest_problem,
    digest_tokens,
)
from tests.unit.test_collectives import inputs, run_ring

SEED = 7


def make_digest(kind: str, n: int, size: int, *, slices: int = 1, iteration: int = 0,
                cls: type = DigestRingCollective) -> list[DigestRingCollective]:
    return [cls(kind, r, n, size, digest_tokens(SEED, iteration, r, n, size, slices), step_base=0, slices=slices,
                step_timeout=10.0) for r in range(n)]


@pytest.mark.parametrize("kind", ["allreduce", "allgather", "reducescatter"])
@pytest.mark.parametrize(("n", "size", "slices"), [(2, 64, 1), (5, 1003, 3), (8, 4096, 2)])
def test_digest_collective_gives_the_expected_records(kind: str, n: int, size: int, slices: int) -> None:
    colls = make_digest(kind, n, size, slices=slices)
    run_ring(colls, seed=n, mss=97)
    for r, c in enumerate(colls):
        assert c.done and c.error is None, c.error
        want = digest_expected(kind, SEED, 0, n, size, slices, r)
        assert digest_problem(c.result, want) is None
    other = digest_expected(kind, SEED, 1, n, size, slices, 0)  # another iteration's: caught
    assert digest_problem(colls[0].result, other) is not None


def test_digest_messages_are_the_exact_collectives_and_its_state_is_small() -> None:
    n, size, slices = 6, 6000, 2

    def sends(colls: list) -> list[tuple]:
        log = []
        for c in colls:
            orig = c.poll

            def poll(now: float, orig=orig, c=c) -> list:  # noqa: ANN001
                out = orig(now)
                log.extend((c.rank, q.dst_rank, q.step, q.offset, len(q.payload), q.last) for q in out)
                return out

            c.poll = poll
        return log

    exact = [RingCollective("allreduce", r, n, d, step_base=0, slices=slices, step_timeout=10.0)
             for r, d in enumerate(inputs(n, size))]
    digest = make_digest("allreduce", n, size, slices=slices)
    a, b = sends(exact), sends(digest)
    run_ring(exact, seed=3)
    run_ring(digest, seed=3)
    assert a == b and len(a) == n * 2 * (n - 1) * slices
    assert not hasattr(digest[0], "_buf")
    assert digest[0]._rec.nbytes == n * slices * DIGEST_RECORD_BYTES


class _ReducesTwice(DigestRingCollective):
    def _apply_slice(self, rs, chunk, j, reduce):  # noqa: ANN001, ANN202
        super()._apply_slice(rs, chunk, j, reduce)
        if reduce and self.rank == 2 and chunk == 0:
            super()._apply_slice(rs, chunk, j, reduce)


class _Loses(DigestRingCollective):
    def _apply_slice(self, rs, chunk, j, reduce):  # noqa: ANN001, ANN202
        if not (reduce and self.rank == 2 and chunk == 0):
            super()._apply_slice(rs, chunk, j, reduce)


class _Duplicates(DigestRingCollective):
    def _slice_payload(self, chunk, j):  # noqa: ANN001, ANN202
        out = super()._slice_payload(chunk, j)
        if self.rank == 1 and chunk == 0 and int(self._rec[chunk, j, 1]) == 1:  # its own contribution, sent doubled
            rec = np.frombuffer(out[:DIGEST_RECORD_BYTES], dtype="<u8") * np.uint64(2)
            out = rec.astype("<u8").tobytes() + out[DIGEST_RECORD_BYTES:]
        return out


@pytest.mark.parametrize(("cls", "why"), [(_ReducesTwice, "reduced twice"), (_Loses, "lost"),
                                          (_Duplicates, "reduced twice or duplicated")])
def test_a_chunk_reduced_twice_lost_or_duplicated_is_caught(cls: type, why: str) -> None:
    n, size = 4, 400
    colls = make_digest("allreduce", n, size, cls=cls)
    run_ring(colls, seed=1)
    assert all(c.done and c.error is None for c in colls)
    problems = [digest_problem(c.result, digest_expected("allreduce", SEED, 0, n, size, 1, r))
                for r, c in enumerate(colls)]
    assert all(p is not None for p in problems), problems
    assert why in problems[0] and "chunk 0 slice 0" in problems[0]


def test_a_corrupted_chunk_is_caught() -> None:
    n, size = 4, 400
    colls = make_digest("allreduce", n, size)
    target = colls[3]
    orig = target.on_delivery
    done = []

    def corrupt(d, now):  # noqa: ANN001, ANN202
        if not done and d.offset == 0 and len(d.payload) >= 8:
            p = bytearray(d.payload)
            p[3] ^= 0x10  # one bit of the record's sum
            d.payload = bytes(p)
            done.append(d.step)
        return orig(d, now)

    target.on_delivery = corrupt
    run_ring(colls, seed=2)
    assert done
    problems = [digest_problem(c.result, digest_expected("allreduce", SEED, 0, n, size, 1, r))
                for r, c in enumerate(colls)]
    assert problems[3] is not None and "corrupted" in problems[3], problems
    assert sum(p is not None for p in problems) == n  # the all-gather spreads the bad chunk to every rank


def test_a_slice_too_small_for_the_record_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 elements per slice"):
        DigestRingCollective("allreduce", 0, 4, 12, digest_tokens(SEED, 0, 0, 4, 12, 1), step_base=0,
                             step_timeout=1.0)
