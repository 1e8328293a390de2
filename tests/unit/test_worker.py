"""Worker: spec validation, verification, and real worker processes on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from emu.hostcal import free_ports
from hostapps.collectives import RingCollective
from hostapps.rank import RECORD_FIELDS, digest, make_input, verify
from hostapps.spec import SpecError, WorkerSpec, parse_spec
from hostapps.transport import Delivery

REPO = Path(__file__).resolve().parents[2]
#: Event loop of the worker processes under test ("auto" = uvloop when installed).
LOOP = os.environ.get("SYMPHONY_TEST_LOOP", "auto")
#: Bound on any worker process run (s); a hang fails the test instead of blocking CI.
PROC_TIMEOUT_S = 60


def base_spec(**over) -> dict:
    spec = {
        "job_id": 0, "rank": 1,
        "ranks": [{"rank": i, "ip": "127.0.0.1", "port": 40000 + i} for i in range(4)],
        "collective": "allreduce", "size_bytes": 4096, "iterations": 2, "compute_s": 0.0,
        "start_at": None, "line_rate_bps": 20e6, "rate_control": {"name": "dcqcn", "params": {}},
        "mtu": 1500, "step_timeout_s": 5.0, "slices": 1, "seed": 7, "results_dir": "/tmp/x",
    }
    spec.update(over)
    return spec


def test_parse_valid_spec() -> None:
    spec = parse_spec(base_spec())
    assert isinstance(spec, WorkerSpec)
    assert spec.nranks == 4 and spec.n_elements == 1024 and spec.rate_control == "dcqcn"
    assert spec.output_path == Path("/tmp/x/job0-rank1.jsonl")


@pytest.mark.parametrize(
    "over,field",
    [
        ({"rank": 4}, "'rank'"),
        ({"job_id": 16}, "'job_id'"),
        ({"collective": "broadcast"}, "'collective'"),
        ({"size_bytes": -4}, "'size_bytes'"),
        ({"size_bytes": 4098}, "field 'size_bytes' must be a multiple of 4"),
        ({"iterations": 0}, "'iterations'"),
        ({"line_rate_bps": 0}, "'line_rate_bps'"),
        ({"step_timeout_s": "10"}, "'step_timeout_s'"),
        ({"slices": True}, "'slices'"),
        ({"rate_control": {"name": "reno"}}, "'rate_control'"),
        ({"rate_control": {"name": "dcqcn", "params": {"gain": 1}}}, "'rate_control'"),
        ({"ranks": [{"rank": 0, "ip": "10.0.0.300", "port": 1}]}, "ranks[0]: field 'ip'"),
        ({"ranks": [{"rank": 0, "ip": "10.0.0.1", "port": 1}, {"rank": 0, "ip": "10.0.0.2", "port": 2}]},
         "ranks[1]"),
        ({"colective": "allreduce"}, "unknown field 'colective'"),
        ({"payload": "sampled"}, "field 'payload' must be one of exact, digest"),
        ({"payload": "digest", "size_bytes": 32}, "field 'payload': digest payloads need at least 4 elements"),
        ({"channels": 5}, "field 'channels' must be in 1..4"),
        ({"channels": 2, "collective": "allgather"}, "field 'channels': 2 channels need collective allreduce"),
    ],
)
def test_spec_errors_name_the_field(over: dict, field: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(base_spec(**over), "s.json")
    message = str(info.value)
    assert message.startswith("s.json: ") and field in message and "\n" not in message


@pytest.mark.parametrize("size", [0, 4, 4096])
def test_size_bytes_multiple_of_4_accepted(size: int) -> None:
    assert parse_spec(base_spec(size_bytes=size)).size_bytes == size


def test_missing_field_is_named() -> None:
    spec = base_spec()
    del spec["results_dir"]
    with pytest.raises(SpecError, match="missing field 'results_dir'"):
        parse_spec(spec)


def test_cli_spec_error_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(base_spec(mtu=20)))
    proc = subprocess.run(
        [sys.executable, "-m", "hostapps.worker", "--spec", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=PROC_TIMEOUT_S,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert str(path) in proc.stderr and "'mtu'" in proc.stderr


def test_verify_accepts_the_ring_result_and_rejects_a_wrong_one() -> None:
    spec = parse_spec(base_spec(size_bytes=4 * 1001, rank=2))
    datas = [make_input(spec, r, 1) for r in range(4)]
    colls = [RingCollective("allreduce", r, 4, datas[r], step_base=6, step_timeout=5.0) for r in range(4)]
    for c in colls:
        c.start(0.0)
    while not all(c.done for c in colls):  # perfect in-memory ring, one message per request
        for r, c in enumerate(colls):
            for req in c.poll(0.0):
                colls[req.dst_rank].on_delivery(
                    Delivery(r, req.step, req.offset, req.payload, req.last), 0.0
                )
    result = colls[2].result
    assert verify(spec, 1, result) is None
    bad = result.copy()
    bad[17] += 1e-3
    problem = verify(spec, 1, bad)
    assert problem is not None and "element 17" in problem and problem.startswith("iteration 1:")
    assert len(digest(result)) == 64


def test_inputs_follow_the_contract() -> None:
    spec = parse_spec(base_spec(seed=3, job_id=2))
    expected = np.random.default_rng([3, 2, 1, 4]).standard_normal(1024).astype(np.float32)
    assert make_input(spec, 1, 4).tobytes() == expected.tobytes()


# --- worker processes over real UDP sockets ---------------------------------------------


def write_specs(tmp_path: Path, n: int, **over) -> list[Path]:
    ports = free_ports(n)
    ranks = [{"rank": r, "ip": "127.0.0.1", "port": p} for r, p in enumerate(ports)]
    paths = []
    for r in range(n):
        spec = base_spec(rank=r, ranks=ranks, results_dir=str(tmp_path / "results"), **over)
        path = tmp_path / f"spec{r}.json"
        path.write_text(json.dumps(spec))
        paths.append(path)
    return paths


def start_worker(path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hostapps.worker", "--spec", str(path), "--loop", LOOP],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    out = []
    try:
        for p in procs:
            _, err = p.communicate(timeout=PROC_TIMEOUT_S)
            out.append((p.returncode, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


def read_lines(tmp_path: Path, rank: int) -> list[dict]:
    text = (tmp_path / "results" / f"job0-rank{rank}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_four_workers_allreduce_on_loopback(tmp_path: Path) -> None:
    n, iterations = 4, 3
    paths = write_specs(
        tmp_path, n, size_bytes=4 * 50_001, iterations=iterations, start_at=time.time() + 1.0,
        step_timeout_s=10.0, slices=2,
    )
    results = finish([start_worker(p) for p in paths])
    assert all(rc == 0 for rc, _ in results), results
    digests: dict[int, set[str]] = {}
    for r in range(n):
        lines = read_lines(tmp_path, r)
        kinds = [ln["kind"] for ln in lines]
        assert kinds.count("step") == iterations * 2 * (n - 1)
        assert kinds.count("iteration") == iterations and kinds[-1] == "transport"
        assert "error" not in kinds
        for ln in lines:
            assert ln["job"] == 0 and ln["rank"] == r
            if ln["kind"] == "step":
                assert set(ln) == {"kind", "job", "rank", "iteration", "step", "start", "end"}
                assert ln["step"] // (2 * (n - 1)) == ln["iteration"]
                assert ln["start"] <= ln["end"] or ln["step"] % (2 * (n - 1)) > 0
            elif ln["kind"] == "iteration":
                assert set(ln) == {"kind", "job", "rank", "iteration", "start", "end", "verified", "digest", "warmup"}
                assert ln["verified"] is True and ln["start"] < ln["end"]
                digests.setdefault(ln["iteration"], set()).add(ln["digest"])
            elif ln["kind"] == "transport":
                assert set(ln) == {"kind", "job", "rank", "packets_sent", "retransmissions", "timeouts",
                                   "nacks_received", "duplicates", "cnps_sent", "cnps_received",
                                   "timer_wakeups", "timer_late_wakeups", "timer_lag_total_s",
                                   "timer_lag_max_s", "cpu_s", "cpu_wait_s", "cpu_wall_s", "cpu_slices",
                                   "start_lateness_s", "rate_samples"}
                assert ln["start_lateness_s"] >= 0
                assert ln["cpu_s"] > 0 and ln["cpu_wait_s"] >= 0 and ln["cpu_wall_s"] > 0 and ln["cpu_slices"] > 0
                assert ln["timer_wakeups"] > 0 and ln["timer_lag_max_s"] >= 0
                assert ln["packets_sent"] > 0
    assert all(len(d) == 1 for d in digests.values())  # every rank has the same bits


def test_a_later_block_appends_numbers_on_and_flags_its_warmup(tmp_path: Path) -> None:
    """Issue 19: a scheme's second block (first_iteration 4, one warm-up) appends iterations
    4..6 to the first block's records, the first flagged a warm-up; a rank that began 1.5 s
    after the common start says so (start_lateness_s)."""
    paths = write_specs(tmp_path, 2, iterations=3, warmup=1, first_iteration=4, start_at=time.time() - 1.5)
    earlier = '{"kind": "iteration", "job": 0, "rank": 0, "iteration": 3, "start": 1.0, "end": 2.0, "verified": true}'
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "job0-rank0.jsonl").write_text(earlier + "\n")
    assert all(rc == 0 for rc, _ in finish([start_worker(p) for p in paths]))
    lines = read_lines(tmp_path, 0)
    assert json.dumps(lines[0]) == json.dumps(json.loads(earlier))  # the first block's records stay
    its = [ln for ln in lines[1:] if ln["kind"] == "iteration"]
    assert [(ln["iteration"], ln["warmup"]) for ln in its] == [(4, True), (5, False), (6, False)]
    assert all(ln["verified"] for ln in its)
    assert {ln["iteration"] for ln in lines if ln["kind"] == "step"} == {4, 5, 6}
    (transport,) = [ln for ln in lines if ln["kind"] == "transport"]
    assert transport["start_lateness_s"] >= 1.5


def _keys_by_kind(paths: list[Path]) -> dict[str, list[str]]:
    """Each record kind's keys (in order) over JSON-lines files; a kind whose records differ in keys fails."""
    keys: dict[str, list[str]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            assert keys.setdefault(rec["kind"], list(rec)) == list(rec), (path, rec)
    return keys


def test_records_have_one_schema_in_both_modes(tmp_path: Path) -> None:
    """Worker processes on loopback and virtual time write records with the same keys (RECORD_FIELDS);
    the machine fields are measured in real time and null in virtual time."""
    from emu import runner
    from hostapps.rank import CPU_FIELDS, RECORD_FIELDS, TIMER_FIELDS

    (tmp_path / "rt").mkdir()
    paths = write_specs(tmp_path / "rt", 3, iterations=1, start_at=time.time() + 0.5, step_timeout_s=10.0)
    procs = [start_worker(p) for p in paths]
    try:  # virtual time in this process while the workers run
        result = runner.run(REPO / "topologies" / "single.yaml", mode="sim", out=tmp_path / "sim",
                            schemes=("baseline",), iterations=1, size=4096)
    finally:
        results = finish(procs)
    assert all(rc == 0 for rc, _ in results), results
    assert result.ok, result.failure
    real = sorted((tmp_path / "rt" / "results").glob("*.jsonl"))
    virtual = sorted((tmp_path / "sim" / "baseline").glob("*.jsonl"))
    assert len(real) == 3 and len(virtual) == 4
    expected = {k: list(v) for k, v in RECORD_FIELDS.items() if k not in ("error", "compute")}  # no compute here
    assert _keys_by_kind(real) == _keys_by_kind(virtual) == expected
    for path, measured in [(real[0], True), (virtual[0], False)]:
        (transport,) = [r for r in map(json.loads, path.read_text().splitlines()) if r["kind"] == "transport"]
        for key in (*TIMER_FIELDS, *CPU_FIELDS):
            assert (transport[key] is not None) == measured, (path, key)


def test_dead_neighbour_is_named(tmp_path: Path) -> None:
    """Rank 2 of 3 never starts: rank 0 (its right neighbour) names it after the timeout."""
    paths = write_specs(tmp_path, 3, iterations=1, start_at=time.time() + 0.5, step_timeout_s=2.0)
    results = finish([start_worker(p) for p in paths[:2]])
    rc0, err0 = results[0]
    assert rc0 == 1
    assert err0.strip().splitlines()[-1].endswith("step 0: no data from rank 2 within 2 s")
    errors = [ln for ln in read_lines(tmp_path, 0) if ln["kind"] == "error"]
    assert errors == [{"kind": "error", "job": 0, "rank": 0, "message": "step 0: no data from rank 2 within 2 s"}]
    assert results[1][0] == 1  # rank 1 starves too


def test_sigterm_exits_promptly(tmp_path: Path) -> None:
    (path,) = write_specs(tmp_path, 2, start_at=time.time() + 3600)[:1]
    proc = start_worker(path)
    out = tmp_path / "results" / "job0-rank0.jsonl"
    try:
        for _ in range(PROC_TIMEOUT_S * 20):  # wait for the worker to be up (file created)
            if out.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert out.exists(), proc.stderr.read() if proc.poll() is not None else "no results file"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=PROC_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1 and "stopped by SIGTERM" in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["error", "transport"]
    assert list(records[0]) == list(RECORD_FIELDS["error"]) and records[0]["message"] == "interrupted"
