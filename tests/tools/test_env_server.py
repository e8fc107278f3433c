"""Both command-line tools take their default server from $ZKWIRE_SERVER; zklock's old $ZKLOCK_SERVER
still works when it is unset."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("ZKWIRE_SERVER", "ZKLOCK_SERVER")}


def _zklock_status(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zklock", "status", "--timeout", "5", "/zkwire-tests/env-server-lock"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("variable", ["ZKWIRE_SERVER", "ZKLOCK_SERVER"])
def test_zklock_reads_the_server_from_the_environment(zk_hosts: str, variable: str) -> None:
    env = _clean_env()
    env[variable] = zk_hosts
    proc = _zklock_status(env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zkwire_server_wins_over_the_old_name(zk_hosts: str) -> None:
    env = _clean_env()
    env["ZKWIRE_SERVER"] = zk_hosts
    env["ZKLOCK_SERVER"] = "127.0.0.1:1"  # unreachable: would fail if it were used
    proc = _zklock_status(env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zkwire_tool_reads_zkwire_server(zk_hosts: str) -> None:
    env = _clean_env()
    env["ZKWIRE_SERVER"] = zk_hosts
    proc = subprocess.run(
        [sys.executable, "-m", "zkwire", "--timeout", "5", "ls", "/"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "zookeeper" in proc.stdout
