"""A student's p4runtime-shell on a running ``symphony-emu cli`` (root, Mininet).

The CLI prints how to connect p4runtime-shell to each switch; the test connects with the
printed address and device id exactly as printed (p4runtime-shell's default election id),
reads the routes and the Symphony configuration the controller installed, writes an entry
of its own and reads it back, then disconnects; the CLI's ``mode`` command then programs
the switch again (the controller takes it back once no client is primary), and exit
leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from .test_run import NODES_1SW, SINGLE, assert_nothing_left, cli

pytest.importorskip("p4runtime_sh", reason="p4runtime-shell not installed: pip install -e .")

ADDRESS_RE = re.compile(r"s1 \(device (\d+), (127\.0\.0\.1:\d+)\): \S+ -m p4runtime_sh --grpc-addr (\S+) "
                        r"--device-id (\d+) --election-id 1,0")


def read_until(proc: subprocess.Popen, pattern: re.Pattern[str], timeout_s: float) -> tuple[re.Match[str], str]:
    """Read the CLI's stdout and stderr until ``pattern`` matches (bounded in time)."""
    seen = ""
    deadline = time.monotonic() + timeout_s
    fds = [proc.stdout.fileno(), proc.stderr.fileno()]
    while time.monotonic() < deadline:
        ready, _, _ = select.select(fds, [], [], 0.2)
        for fd in ready:  # raw reads: the prompt has no newline, so readline() could block
            seen += os.read(fd, 65536).decode(errors="replace")
            m = pattern.search(seen)
            if m is not None:
                return m, seen
        if proc.poll() is not None:
            break
    raise AssertionError(f"no {pattern.pattern!r} in the CLI's output:\n{seen}")


@pytest.mark.timeout(180)
def test_student_p4runtime_shell_on_the_cli(mininet_env: None, tmp_path: Path) -> None:
    from p4runtime_sh import shell as sh

    proc = cli("cli", str(SINGLE), "--out", str(tmp_path), stdin=subprocess.PIPE)
    try:
        m, banner = read_until(proc, ADDRESS_RE, 90)
        device_id, addr = int(m.group(1)), m.group(2)
        assert m.group(3) == addr and int(m.group(4)) == device_id
        sh.setup(device_id=device_id, grpc_addr=addr, election_id=(1, 0), verbose=False)
        try:
            routes = {e.match["hdr.ipv4.dstAddr"].lpm.value for e in sh.TableEntry("MyIngress.ipv4_lpm").read()}
            assert routes == {bytes([10, 0, 0, h]) for h in (1, 2, 3, 4)}  # the controller's /32 per host
            (job,) = list(sh.TableEntry("MyIngress.symphony_config").read())
            assert job.match["hdr.cth.job_id"].exact.value == b"\x00"
            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.drop")
            te.match["hdr.ipv4.dstAddr"] = "10.9.0.0/16"
            te.insert()
            assert len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())) == 5
            c = sh.CounterEntry("MyIngress.drops")
            c.index = 1
            (cell,) = list(c.read())
            assert cell.packet_count >= 0
            te.delete()
        finally:
            sh.teardown()
        proc.stdin.write("mode baseline\nexit\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=120)
        text = banner + out + err
        assert proc.returncode == 0, text
        assert re.search(r"^(symphony-emu> )*mode baseline$", text, re.M), text  # printed only on success
        # the controller was a backup after the student's session: its writes went through
        # only because it took the switch back (no PERMISSION_DENIED, no error line)
        assert "PERMISSION_DENIED" not in text and "failed" not in text.split("mode baseline")[-1], text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert_nothing_left(tmp_path, NODES_1SW)
