"""Background traffic: the on/off schedule and a source -> sink exchange on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hostapps.traffic import OnOffConfig, _Stop, run_sink, run_source, schedule_origin, send_schedule

REPO = Path(__file__).resolve().parents[2]


def test_fixed_on_off_schedule() -> None:
    # 1472-byte payload + 28 header bytes = 12 000 bits: 10 ms apart at 1.2 Mbit/s.
    cfg = OnOffConfig(rate_bps=1.2e6, on_s=0.05, off_s=0.05, duration_s=0.2, size=1472)
    times = list(send_schedule(cfg))
    expected = [0.0, 0.01, 0.02, 0.03, 0.04, 0.1, 0.11, 0.12, 0.13, 0.14]
    assert times == pytest.approx(expected)


def test_exponential_schedule_is_seeded_and_bounded() -> None:
    cfg = OnOffConfig(rate_bps=1e6, on_s=0.02, off_s=0.03, duration_s=1.0, size=100, seed=4)
    a, b = list(send_schedule(cfg)), list(send_schedule(cfg))
    assert a == b and a and all(0 <= t < 1.0 for t in a)
    assert a == sorted(a)
    other = list(send_schedule(OnOffConfig(rate_bps=1e6, on_s=0.02, off_s=0.03, duration_s=1.0, size=100, seed=5)))
    assert other != a


def test_packet_cap() -> None:
    cfg = OnOffConfig(rate_bps=1e9, on_s=1.0, off_s=0.0, duration_s=10.0, max_packets=7)
    assert len(list(send_schedule(cfg))) == 7


@pytest.mark.parametrize("field,kw", [("--rate-mbps", {"rate_bps": 0}), ("--size", {"size": 70_000})])
def test_bad_config_names_the_option(field: str, kw: dict) -> None:
    args = {"rate_bps": 1e6, "on_s": 0.01, "off_s": 0.01, "duration_s": 1.0, **kw}
    with pytest.raises(ValueError, match=field):
        OnOffConfig(**args)


def test_source_to_sink_on_loopback(tmp_path: Path) -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    stop, ready, result = _Stop(), threading.Event(), {}

    def sink() -> None:
        result.update(run_sink(port, duration_s=60.0, bind="127.0.0.1", stop=stop, ready=ready))

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hostapps.traffic", "source", "--dst", "127.0.0.1", "--port", str(port),
             "--rate-mbps", "2", "--on-ms", "40", "--off-ms", "20", "--duration-s", "0.3",
             "--size", "500"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
    finally:
        stop.flag = True
        thread.join(30)
    assert proc.returncode == 0, proc.stderr
    sent = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sent["kind"] == "source" and sent["packets"] > 0 and sent["send_errors"] == 0
    # 528 B * 8 / 2 Mbit/s = 2.112 ms: 19 packets per 40 ms on period, 5 periods in 0.3 s.
    assert sent["packets"] == 5 * 19
    assert result["packets"] == sent["packets"] and result["bytes"] == 500 * sent["packets"]
    assert result["max_seq"] == sent["packets"] - 1
    assert result["ecn_capable"] == 0  # Not-ECT


def test_sink_cli_writes_stats(tmp_path: Path) -> None:
    stats = tmp_path / "sink.json"
    proc = subprocess.run(
        [sys.executable, "-m", "hostapps.traffic", "sink", "--port", "0", "--bind", "127.0.0.1",
         "--duration-s", "0.2", "--stats", str(stats)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(stats.read_text())["packets"] == 0


def test_source_cli_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hostapps.traffic", "source", "--dst", "127.0.0.1", "--rate-mbps", "-1",
         "--on-ms", "1", "--off-ms", "1", "--duration-s", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2 and "--rate-mbps" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_source_keeps_its_schedule_from_the_start_it_is_given() -> None:
    """A source launched before its start waits for it; one launched late is behind by as much."""
    assert schedule_origin(None, now_wall=1000.0, now_mono=5.0) == 5.0
    assert schedule_origin(1002.5, now_wall=1000.0, now_mono=5.0) == 7.5  # waits 2.5 s
    assert schedule_origin(999.6, now_wall=1000.0, now_mono=5.0) == pytest.approx(4.6)  # 0.4 s behind
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(10)
    cfg = OnOffConfig(rate_bps=1e6, on_s=0.01, off_s=0.0, duration_s=0.01, size=100)
    start = time.time() + 0.3
    try:
        sent = run_source(cfg, "127.0.0.1", rx.getsockname()[1], start_at=start)
        rx.recv(2048)
        first = time.time()
    finally:
        rx.close()
    assert sent["packets"] > 0
    assert first >= start - 0.005  # nothing before the start it was given (was: at once)


def test_source_start_at_must_be_finite() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hostapps.traffic", "source", "--dst", "127.0.0.1", "--rate-mbps", "1",
         "--on-ms", "1", "--off-ms", "1", "--duration-s", "1", "--start-at", "nan"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2 and "--start-at" in proc.stderr and proc.stderr.count("\n") == 1
