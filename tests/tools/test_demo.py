"""The README's demo runs end to end: embedded ZooKeeper, zklock run workers, a killed holder."""

from __future__ import annotations

import itertools
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zkwire.testing.base import free_port

DEMO = Path(__file__).resolve().parents[2] / "examples" / "lock_demo.py"
SESSION_TIMEOUT = 1.5
TICK = 0.2
HOLD = 1.5  # each job holds the lock this long: far more than a job takes to start


def _stamp(line: str) -> float:
    m = re.match(r"\s*([0-9]+\.[0-9]{2})s  ", line)
    assert m is not None, f"no stamp: {line!r}"
    return float(m.group(1))


@pytest.mark.usefixtures("local_zookeeper")
def test_demo_runs_end_to_end_on_a_given_port() -> None:
    port = free_port()
    args = ["--workers", "2", "--rounds", "2", "--session-timeout", str(SESSION_TIMEOUT), "--hold", str(HOLD)]
    proc = subprocess.run(
        [sys.executable, str(DEMO), *args, "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"ZooKeeper is serving on 127.0.0.1:{port}\n" in out
    lines = out.splitlines()
    grants = [line for line in lines if "fencing token" in line]
    tokens = [int(t) for t in re.findall(r"fencing token (\d+)", out)]
    assert len(grants) == len(tokens) == 4
    assert tokens == sorted(tokens) and len(set(tokens)) == 4
    stamped = [line for line in lines if re.match(r"\s*[0-9]+\.[0-9]{2}s  ", line)]
    assert [_stamp(line) for line in stamped] == sorted(_stamp(line) for line in stamped), out

    kill = next(line for line in lines if "SIGKILL to the victim" in line)
    expiry = re.search(
        r"^ *([0-9.]+)s  the server expired the victim's session and deleted its lock node ([0-9.]+)s after the "
        r"SIGKILL\n",
        out,
        re.M,
    )
    assert expiry is not None, out
    assert "session expired after" not in out  # the old wording, which named no starting point
    expired_at, interval = float(expiry.group(1)), float(expiry.group(2))
    # The interval is the one between the two stamped lines (rounding aside).
    assert abs(_stamp(kill) + interval - expired_at) <= 0.015, out
    assert 0.5 * SESSION_TIMEOUT <= interval <= SESSION_TIMEOUT + TICK + 3, out
    explanation = " ".join(out[expiry.end() :].split("\n\n")[0].split())
    assert explanation.startswith(
        f"(the {SESSION_TIMEOUT:g}s session timeout counts from the last time the server heard from the victim, "
        f"a heartbeat at most {SESSION_TIMEOUT / 3:.2f}s before the kill, and ends at the server's next {TICK:g}s "
        f"tick: {SESSION_TIMEOUT * 2 / 3:.2f}s to {SESSION_TIMEOUT + TICK:.2f}s after the kill)"
    ), explanation

    # A worker's line is stamped when its job started under the lock, not when its zklock run ended: the
    # first comes just after the victim's node was deleted (a job holds the lock HOLD seconds), the next
    # ones a hold apart.
    stamps = [_stamp(line) for line in grants]
    assert expired_at - 0.05 <= stamps[0] < expired_at + HOLD - 0.2, out
    for before, after in itertools.pairwise(stamps):
        assert after - before >= HOLD - 0.05, out
    assert "lock nodes left: 0" in out and out.rstrip().endswith("Done.")
    assert "Traceback" not in proc.stderr


@pytest.mark.usefixtures("local_zookeeper")
def test_demo_on_a_busy_port_fails_at_once_saying_so() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, str(DEMO), "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert time.monotonic() - started < 30
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"demo failed: port {port} of 127.0.0.1 is in use (Address already in use): stop what holds it, "
        "or choose another port\n"
    )


def test_demo_usage_errors() -> None:
    for args in (["--port", "0"], ["--port", "http"], ["--session-timeout", "30"], ["--hold", "nan"]):
        proc = subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and f"argument {args[0]}" in proc.stderr, (args, proc.stderr)
