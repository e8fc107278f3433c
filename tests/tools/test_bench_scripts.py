"""The benchmark scripts still start: each one's ``--help`` runs (an import that rotted when a module it
used was reorganised fails here, not in the next full benchmark run), and every peer module imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py"))
PEERS = sorted(p.stem for p in (ROOT / "bench" / "peers").glob("*_peer.py"))


def test_there_are_scripts_and_peers() -> None:
    assert {"run.py", "decode_bench.py", "instructions.py"} <= set(SCRIPTS)
    assert {"zkwire_peer", "kazoo_peer", "java_peer"} <= set(PEERS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, f"bench/{script}", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout


@pytest.mark.parametrize("peer", PEERS)
def test_peer_imports(peer: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import bench.peers.{peer}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
