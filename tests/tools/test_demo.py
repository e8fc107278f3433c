"""The README's demo runs end to end: embedded ZooKeeper, zklock run workers, a killed holder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "lock_demo.py"


@pytest.mark.usefixtures("local_zookeeper")
def test_demo_runs_end_to_end() -> None:
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--workers", "2", "--rounds", "2", "--session-timeout", "1.5"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    tokens = [int(t) for t in re.findall(r"fencing token (\d+)", out)]
    assert len(tokens) == 4
    assert tokens == sorted(tokens) and len(set(tokens)) == 4
    assert "SIGKILL to the victim" in out
    expired = re.search(r"session expired after ([0-9.]+)s", out)
    assert expired is not None and 1.0 <= float(expired.group(1)) < 15
    assert "lock nodes left: 0" in out and out.rstrip().endswith("Done.")
    assert "Traceback" not in proc.stderr
