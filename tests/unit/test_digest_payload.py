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
                log.extend((c.rank, q.dst_rank, q.step, q.offset, len(q.payload) + q.pad, q.last) for q in out)
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


def test_the_zero_check_of_a_payload_range_is_the_slice_s() -> None:
    """_nonzero_in(view, a, b) (the receiver's check that a slice's bytes after its record are zeros;
    compiled, compared in place: collectives.pxd) is _nonzero(view[a:b]) for bytes and byte views, any
    range (clamped as a slice), a range longer than the 64 KiB of zeros it compares with, and a view of
    4-byte items (its slice counts items); a released view raises memoryview's ValueError."""
    from hostapps.collectives import _nonzero, _nonzero_in

    for size, hot in ((0, None), (16, 3), (4096, 4095), (70_000, 69_999), (140_000, None), (140_000, 66_000)):
        raw = bytearray(size)
        if hot is not None:
            raw[hot] = 0x40
        frame = bytes(raw)
        for view in (frame, memoryview(frame), memoryview(frame)[2:]):
            for a, b in ((0, size), (0, 3), (3, 4), (hot or 0, (hot or 0) + 1), (size - 1, size + 9), (5, 2),
                         (size + 3, size + 4), (1, 66_000)):
                a, b = max(a, 0), max(b, 0)
                assert _nonzero_in(view, a, b) == _nonzero(view[a:b]), (size, hot, a, b)
    items = memoryview(bytes(8) + b"\x01" + bytes(7)).cast("I")
    assert _nonzero_in(items, 0, 2) is False and _nonzero_in(items, 0, 3) is True  # items 0-1 zero, 2 not
    gone = memoryview(bytes(8))
    gone.release()
    with pytest.raises(ValueError, match="released"):
        _nonzero_in(gone, 0, 4)


def test_a_slice_too_small_for_the_record_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 elements per slice"):
        DigestRingCollective("allreduce", 0, 4, 12, digest_tokens(SEED, 0, 0, 4, 12, 1), step_base=0,
                             step_timeout=1.0)


# --- the option in runs: the rank worker (both modes) and a virtual-time run ------------------

def _workers(n: int, payload: str, **over: object) -> list:
    from hostapps.rank import LocalVerifier, RankWorker
    from hostapps.spec import parse_spec
    from tests.unit.test_worker import base_spec

    specs = [parse_spec(base_spec(rank=r, payload=payload, size_bytes=4 * 3001, **over)) for r in range(n)]
    return [RankWorker(s, verifier=LocalVerifier(s)) for s in specs]


def _run_workers(workers: list, tamper=None) -> None:  # noqa: ANN001
    """The workers' datagrams handed over in memory at once (a perfect network); ``tamper(datagram)``
    may change one in flight."""
    now = 0.0
    for _ in range(200_000):
        moved = False
        for r, w in enumerate(workers):
            for o in w.poll(now):
                data = tamper(o.datagram) if tamper is not None else o.datagram
                workers[o.dst_rank].on_datagram(r, data, o.ecn, now)
                moved = True
        if all(w.done for w in workers):
            return
        if not moved:
            due = [t for w in workers if (t := w.next_timer()) is not None]
            now = max(now + 1e-9, min(due)) if due else now + 1e-3
    raise AssertionError("the workers did not finish")


def test_the_worker_runs_digest_payloads_and_verifies_them() -> None:
    workers = _workers(4, "digest", iterations=2, slices=2)
    _run_workers(workers)
    digests = set()
    for w in workers:
        assert w.error is None and w.iterations_done == 2, w.error
        its = [r for r in w.take_records() if r["kind"] == "iteration"]
        assert [r["verified"] for r in its] == [True, True]
        digests.add(tuple(r["digest"] for r in its))
    assert len(digests) == 1  # every rank holds the same records


@pytest.mark.parametrize("where", [3, DIGEST_RECORD_BYTES + 100])
def test_a_chunk_corrupted_on_the_wire_fails_the_rank(where: int) -> None:
    """One bit of one DATA packet flipped in flight: in the record, then in the zeros after it."""
    from hostapps.wire import CTH_LEN, CthType, decode

    hit = []

    def tamper(datagram: bytes) -> bytes:
        head, _ = decode(datagram)
        if not hit and head.type == CthType.DATA and head.offset == 0 and len(datagram) > CTH_LEN + where:
            hit.append(head)
            b = bytearray(datagram)
            b[CTH_LEN + where] ^= 0x10  # payload byte ``where`` of a slice's first packet
            return bytes(b)
        return datagram

    workers = _workers(4, "digest", iterations=1)
    _run_workers(workers, tamper)
    assert hit
    errors = [w.error for w in workers if w.error is not None]
    assert len(errors) == 4, errors  # the all-gather spreads the bad chunk to every rank
    assert all("digest records differ" in e and "wrong or corrupted" in e for e in errors), errors


def test_a_digest_run_sends_the_exact_runs_packets(tmp_path) -> None:  # noqa: ANN001
    """`--payload digest` in virtual time: the same packets, steps and CCTs as exact data, every rank verified."""
    import json
    from pathlib import Path

    from emu import runner

    single = Path(__file__).resolve().parents[2] / "topologies" / "single.yaml"
    runs = {p: runner.run(single, mode="sim", out=tmp_path / p, schemes=("baseline",), iterations=1, payload=p)
            for p in ("exact", "digest")}
    assert all(r.ok for r in runs.values()), {p: r.failure for p, r in runs.items()}
    for name in ("cct.csv", "steps.csv", "baseline/counters.json"):
        assert (tmp_path / "exact" / name).read_bytes() == (tmp_path / "digest" / name).read_bytes(), name
    info = json.loads((tmp_path / "digest" / "run.json").read_text())
    assert [j["payload"] for j in info["jobs"]] == ["digest"]
    # the folder's topology.yaml is the file as given, headed by where the --payload went (run.json)
    copy = (tmp_path / "digest" / "topology.yaml").read_text()
    assert copy == runner.topology_copy_header(single) + single.read_text()
    assert copy.startswith(f"# {single}, as given") and "--payload" in copy.splitlines()[1]
    from emu.topology import load_topology

    assert load_topology(tmp_path / "digest" / "topology.yaml").model_dump() == load_topology(single).model_dump()
    its = [r for r in map(json.loads, (tmp_path / "digest" / "baseline" / "job0-rank1.jsonl").read_text().splitlines())
           if r["kind"] == "iteration"]
    assert [r["verified"] for r in its] == [True]


def test_a_digest_run_catches_a_frame_corrupted_in_flight(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from pathlib import Path

    from emu import runner
    from emu.vtime import frames, hosts
    from hostapps.wire import CTH_LEN, CthType

    real = hosts.SimHost.receive
    hit = []

    def receive(self: hosts.SimHost, frame: bytes) -> None:
        at = frames.PAYLOAD_OFFSET + CTH_LEN + 5  # a DATA packet's payload byte 5
        if not hit and self.name == "h3" and len(frame) > at + 100 and frame[frames.PAYLOAD_OFFSET] & 0xF == CthType.DATA:
            hit.append(True)
            b = bytearray(frame)
            b[at] ^= 0x01
            frame = bytes(b)
        real(self, frame)

    monkeypatch.setattr(hosts.SimHost, "receive", receive)
    single = Path(__file__).resolve().parents[2] / "topologies" / "single.yaml"
    with pytest.raises(runner.RunError, match=r"failed: iteration 0: allreduce digest records differ: chunk \d slice 0"):
        runner.run(single, mode="sim", out=tmp_path, schemes=("baseline",), iterations=1, payload="digest")
    assert hit
