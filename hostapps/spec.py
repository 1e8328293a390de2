"""The worker spec: what one rank of one job runs (docs/interfaces.md section 4).

A spec is the JSON object the runner writes per rank; :func:`parse_spec` validates it into a
frozen :class:`WorkerSpec` (errors are one line naming the file and field). The same spec
drives a ``python -m hostapps.worker`` process (real time) and an
:class:`emu.vtime.hosts.SimRank` (virtual time), both running :class:`hostapps.rank.RankWorker`.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostapps.collectives import COLLECTIVE_KINDS, PAYLOADS, digest_too_small
from hostapps.ratecontrol import RateControlError, make_rate_controller
from hostapps.transport import TransportConfig
from hostapps.wire import MAX_CHANNELS, MAX_JOBS, MAX_RANKS
from hostapps.workload import ComputeSchedule


class SpecError(ValueError):
    """An invalid worker spec; ``str()`` is one line naming the file and field."""


@dataclass(frozen=True, slots=True)
class RankAddr:
    """Address of one rank: IPv4 ``ip`` and UDP ``port``."""

    rank: int
    ip: str
    port: int


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A validated worker spec (docs/interfaces.md section 4).

    Attributes:
        job_id: job number, ``0 <= job_id < MAX_JOBS``.
        rank: own rank, one of ``ranks``.
        ranks: every rank's address, in rank order ``0 .. N-1``.
        collective: ``allreduce``, ``allgather`` or ``reducescatter``.
        size_bytes: buffer size in bytes, a multiple of 4 (>= 0); ``size_bytes // 4`` float32 elements.
        iterations: number of collectives (>= 1).
        compute_s: sleep between collectives (s, >= 0).
        start_at: wall-clock time (``time.time()``) of iteration 0; None = at once.
        line_rate_bps: host line rate, the transport's pacing ceiling (bit/s, > 0).
        rate_control: rate controller name (``dcqcn`` or ``none``).
        rate_params: rate controller parameters (e.g. ``DcqcnParams`` fields).
        mtu: IP MTU (bytes).
        step_timeout_s: seconds without data from the left neighbour before failing.
        slices: slices per chunk for pipelined forwarding (>= 1).
        seed: input seed (>= 0).
        results_dir: directory of the JSON lines file (created if missing).
        transport: :class:`hostapps.transport.TransportConfig` fields that differ from its
            defaults (times in s, e.g. ``cnp_interval``), besides ``line_rate_bps`` and ``mtu``.
        compute: the rank's compute schedule (:class:`hostapps.workload.ComputeSchedule`:
            model compute with gradient buckets, a straggler's factor/delay), or None for the
            plain ``compute_s`` between collectives.
        warmup: how many of the first ``iterations`` are warm-ups (recorded with
            ``"warmup": true``, left out of the statistics; ``0 <= warmup < iterations``).
        first_iteration: the number of this worker's first iteration in its records and
            inputs (>= 0): a scheme run in blocks numbers its iterations on (emu.runner.Block).
        payload: ``exact`` (float32 data, verified against the float64 sum) or ``digest`` (the
            same packets carrying one 16-byte record per slice, :class:`hostapps.collectives.DigestRingCollective`:
            a rank's memory does not grow with ``size_bytes``; every slice needs 16 bytes).
        channels: NCCL-style channels (1..MAX_CHANNELS): the buffer over that many rings,
            channel c sending from UDP source port ``port + c`` (:func:`channel_port`);
            more than one needs an exact all-reduce.
    """

    job_id: int
    rank: int
    ranks: tuple[RankAddr, ...]
    collective: str
    size_bytes: int
    iterations: int
    compute_s: float
    start_at: float | None
    line_rate_bps: float
    rate_control: str
    rate_params: dict[str, Any] = field(default_factory=dict)
    mtu: int = 1500
    step_timeout_s: float = 10.0
    slices: int = 1
    seed: int = 1
    results_dir: str = "."
    transport: dict[str, Any] = field(default_factory=dict)
    compute: ComputeSchedule | None = None
    warmup: int = 0
    first_iteration: int = 0
    payload: str = "exact"
    channels: int = 1

    @property
    def nranks(self) -> int:
        """Ring size N."""
        return len(self.ranks)

    @property
    def n_elements(self) -> int:
        """float32 elements per rank buffer."""
        return self.size_bytes // 4

    @property
    def output_path(self) -> Path:
        """``results_dir/job{J}-rank{R}.jsonl``."""
        return Path(self.results_dir) / f"job{self.job_id}-rank{self.rank}.jsonl"


_REQUIRED = (
    "job_id", "rank", "ranks", "collective", "size_bytes", "iterations", "start_at",
    "line_rate_bps", "results_dir",
)
_OPTIONAL_DEFAULTS: dict[str, Any] = {
    "compute_s": 0.0, "rate_control": {"name": "dcqcn", "params": {}}, "mtu": 1500,
    "step_timeout_s": 10.0, "slices": 1, "seed": 1, "transport": {}, "compute": None, "warmup": 0, "first_iteration": 0,
    "payload": "exact", "channels": 1,
}


def _int(obj: dict, key: str, where: str, lo: int, hi: int | None = None) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: field '{key}' must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise SpecError(f"{where}: field '{key}' must be {rng}, got {value}")
    return value


def _num(obj: dict, key: str, where: str, *, lo: float, strict: bool) -> float:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{where}: field '{key}' must be a finite number, got {value!r}")
    if value < lo or (strict and value == lo):
        raise SpecError(f"{where}: field '{key}' must be {'>' if strict else '>='} {lo:g}, got {value}")
    return float(value)


def parse_spec(obj: Any, where: str = "spec") -> WorkerSpec:
    """Validate a decoded spec; raise :class:`SpecError` naming ``where`` and the field."""
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(_REQUIRED) - set(_OPTIONAL_DEFAULTS))
    if unknown:
        raise SpecError(f"{where}: unknown field '{unknown[0]}'")
    for key in _REQUIRED:
        if key not in obj:
            raise SpecError(f"{where}: missing field '{key}'")
    obj = {**_OPTIONAL_DEFAULTS, **obj}
    job_id = _int(obj, "job_id", where, 0, MAX_JOBS - 1)
    ranks_raw = obj["ranks"]
    if not isinstance(ranks_raw, list) or not ranks_raw:
        raise SpecError(f"{where}: field 'ranks' must be a non-empty list of {{rank, ip, port}}")
    if len(ranks_raw) > MAX_RANKS:
        raise SpecError(f"{where}: field 'ranks' has {len(ranks_raw)} entries, at most {MAX_RANKS}")
    addrs: dict[int, RankAddr] = {}
    for i, entry in enumerate(ranks_raw):
        sub = f"{where}: ranks[{i}]"
        if not isinstance(entry, dict):
            raise SpecError(f"{sub} must be an object with rank, ip, port")
        for key in ("rank", "ip", "port"):
            if key not in entry:
                raise SpecError(f"{sub}: missing field '{key}'")
        extra = sorted(set(entry) - {"rank", "ip", "port"})
        if extra:
            raise SpecError(f"{sub}: unknown field '{extra[0]}'")
        r = _int(entry, "rank", sub, 0, len(ranks_raw) - 1)
        port = _int(entry, "port", sub, 1, 65535)
        try:
            ip = str(ipaddress.IPv4Address(entry["ip"]))
        except (ipaddress.AddressValueError, ValueError, TypeError):
            raise SpecError(f"{sub}: field 'ip' must be an IPv4 address, got {entry['ip']!r}") from None
        if r in addrs:
            raise SpecError(f"{sub}: rank {r} listed twice in field 'ranks'")
        addrs[r] = RankAddr(r, ip, port)
    rank = _int(obj, "rank", where, 0, len(addrs) - 1)
    collective = obj["collective"]
    if collective not in COLLECTIVE_KINDS:
        raise SpecError(f"{where}: field 'collective' must be one of {', '.join(COLLECTIVE_KINDS)}, got {collective!r}")
    size_bytes = _int(obj, "size_bytes", where, 0)
    if size_bytes % 4:
        raise SpecError(f"{where}: field 'size_bytes' must be a multiple of 4 (float32 elements), got {size_bytes}")
    iterations = _int(obj, "iterations", where, 1)
    compute_s = _num(obj, "compute_s", where, lo=0.0, strict=False)
    start_at = None if obj["start_at"] is None else _num(obj, "start_at", where, lo=0.0, strict=False)
    line_rate_bps = _num(obj, "line_rate_bps", where, lo=0.0, strict=True)
    rc = obj["rate_control"]
    if not isinstance(rc, dict) or not isinstance(rc.get("name"), str):
        raise SpecError(f"{where}: field 'rate_control' must be {{\"name\": ..., \"params\": {{...}}}}")
    params = rc.get("params", {}) or {}
    if not isinstance(params, dict) or set(rc) - {"name", "params"}:
        raise SpecError(f"{where}: field 'rate_control' takes only 'name' and an object 'params'")
    try:
        make_rate_controller(rc["name"], line_rate_bps, params)
    except (RateControlError, ValueError, TypeError) as exc:
        raise SpecError(f"{where}: field 'rate_control': {exc}") from None
    mtu = _int(obj, "mtu", where, 68, 65535)
    step_timeout_s = _num(obj, "step_timeout_s", where, lo=0.0, strict=True)
    slices = _int(obj, "slices", where, 1)
    seed = _int(obj, "seed", where, 0)
    results_dir = obj["results_dir"]
    if not isinstance(results_dir, str) or not results_dir:
        raise SpecError(f"{where}: field 'results_dir' must be a non-empty path string")
    transport = obj["transport"]
    if not isinstance(transport, dict):
        raise SpecError(f"{where}: field 'transport' must be an object of TransportConfig fields")
    try:
        transport_config(line_rate_bps, mtu, transport)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{where}: field 'transport': {exc}") from None
    compute = obj["compute"]
    if compute is not None:
        if not isinstance(compute, dict):
            raise SpecError(f"{where}: field 'compute' must be an object (hostapps.workload.ComputeSchedule)")
        try:
            compute = ComputeSchedule.from_dict(compute)
        except ValueError as exc:
            raise SpecError(f"{where}: field 'compute': {exc}") from None
        if iterations % compute.buckets:
            raise SpecError(f"{where}: field 'iterations' ({iterations}) must be a multiple of compute.buckets"
                            f" ({compute.buckets})")
    warmup = _int(obj, "warmup", where, 0, iterations - 1)
    first_iteration = _int(obj, "first_iteration", where, 0)
    payload = obj["payload"]
    if payload not in PAYLOADS:
        raise SpecError(f"{where}: field 'payload' must be one of {', '.join(PAYLOADS)}, got {payload!r}")
    if payload == "digest":
        why = digest_too_small(size_bytes // 4, len(addrs), slices)
        if why is not None:
            raise SpecError(f"{where}: field 'payload': {why}")
    channels = _int(obj, "channels", where, 1, MAX_CHANNELS)
    if channels > 1 and (collective != "allreduce" or payload != "exact"):
        raise SpecError(f"{where}: field 'channels': {channels} channels need collective allreduce and payload "
                        f"exact, got {collective} and {payload}")
    for a in addrs.values():
        if a.port + channels - 1 > 65535:
            raise SpecError(f"{where}: ranks[{a.rank}]: port {a.port} leaves no source port for channel "
                            f"{channels - 1} (port + channel <= 65535)")
    return WorkerSpec(
        job_id=job_id, rank=rank, ranks=tuple(addrs[r] for r in range(len(addrs))),
        collective=collective, size_bytes=size_bytes, iterations=iterations, compute_s=compute_s,
        start_at=start_at, line_rate_bps=line_rate_bps, rate_control=rc["name"],
        rate_params=dict(params), mtu=mtu, step_timeout_s=step_timeout_s, slices=slices, seed=seed,
        results_dir=results_dir, transport=dict(transport), compute=compute,
        warmup=warmup, first_iteration=first_iteration, payload=payload, channels=channels,
    )


def channel_port(port: int, channel: int) -> int:
    """UDP source port of ``channel`` of a rank whose port is ``port``: ``port + channel``.

    Channel 0 sends from the rank's own port (so one channel is exactly the single ring);
    every channel sends to the peer's port, the CTH port the switches parse. A distinct
    source port gives each channel its own 5-tuple, so ECMP hashes channels apart.
    """
    return port + channel


def transport_config(line_rate_bps: float, mtu: int, overrides: dict[str, Any] | None = None) -> TransportConfig:
    """The :class:`hostapps.transport.TransportConfig` of a rank: line rate, MTU, overrides.

    Raises TypeError for an unknown field and ValueError for a value out of range.
    """
    overrides = dict(overrides or {})
    names = {f.name for f in dataclasses.fields(TransportConfig)} - {"line_rate_bps", "mtu"}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise TypeError(f"unknown TransportConfig field '{unknown[0]}'")
    return TransportConfig(line_rate_bps=line_rate_bps, mtu=mtu, **overrides)


def load_spec(path: str | Path) -> WorkerSpec:
    """Read and validate a JSON spec file; :class:`SpecError` names the file and field."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec: {exc.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    return parse_spec(obj, str(path))
