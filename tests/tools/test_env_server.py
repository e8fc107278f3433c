"""Both command-line tools take their default server from $ZKWIRE_SERVER (zklock's old $ZKLOCK_SERVER
still works when it is unset), and name the built-in default, localhost:2181, when they cannot reach it."""

from __future__ import annotations

import os
import socket
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


# -- the default server: named in the connection error, so that a user who gave none learns where the tool
# looked.  The default is set through the module constant both tools read (a test-only means: nothing else
# on this machine may be listening on the port), then, if nothing listens on 2181, the real one.

ZKWIRE_NOTE = "(the default: no --server and no $ZKWIRE_SERVER given)"
ZKLOCK_NOTE = "(the default: no --server, $ZKWIRE_SERVER or $ZKLOCK_SERVER given)"


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_default(
    module: str, default: str | None, *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``module``'s main(args) in a subprocess, with DEFAULT_SERVER set to ``default`` (None: the real one)."""
    code = (
        "import sys, zkwire.shell.runtime as runtime\n"
        "if sys.argv[1]: runtime.DEFAULT_SERVER = sys.argv[1]\n"
        f"from {module} import main\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, default or "", *args],
        capture_output=True,
        text=True,
        env=env if env is not None else _clean_env(),
        input=stdin,
        timeout=60,
    )


def test_zkwire_names_its_default_server_when_it_cannot_connect() -> None:
    nowhere = f"127.0.0.1:{_refused_port()}"
    refused = f"Cannot connect to {nowhere}: Connection refused"
    for args, stdin in ((["ls", "/"], ""), ([], "ls /\n"), (["four", "ruok"], "")):
        proc = _with_default("zkwire.shell.main", nowhere, "--timeout", "2", *args, stdin=stdin)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        if args[:1] == ["four"]:
            assert proc.stderr == f"{nowhere}: Connection refused {ZKWIRE_NOTE}\n"
        else:
            assert proc.stderr == f"{refused} {ZKWIRE_NOTE}\n"
    # A server the user named is not called the default.
    named = _with_default("zkwire.shell.main", nowhere, "--timeout", "2", "--server", nowhere, "ls", "/")
    assert (named.returncode, named.stderr) == (3, f"{refused}\n")
    env = _clean_env()
    env["ZKWIRE_SERVER"] = nowhere
    from_env = _with_default("zkwire.shell.main", None, "--timeout", "2", "ls", "/", env=env)
    assert (from_env.returncode, from_env.stderr) == (3, f"{refused}\n")


def test_zklock_names_its_default_server_when_it_cannot_connect() -> None:
    nowhere = f"127.0.0.1:{_refused_port()}"
    refused = f"zklock: cannot connect to ZooKeeper at {nowhere} within 1s"
    for args in (["status", "/lock"], ["run", "/lock", "--", "true"]):
        proc = _with_default("zklock.cli", nowhere, args[0], "--timeout", "1", *args[1:])
        assert (proc.returncode, proc.stderr) == (69, f"{refused} {ZKLOCK_NOTE}\n")
    named = _with_default("zklock.cli", nowhere, "status", "--timeout", "1", "--server", nowhere, "/lock")
    assert (named.returncode, named.stderr) == (69, f"{refused}\n")
    for variable in ("ZKWIRE_SERVER", "ZKLOCK_SERVER"):
        env = _clean_env()
        env[variable] = nowhere
        from_env = _with_default("zklock.cli", None, "status", "--timeout", "1", "/lock", env=env)
        assert (from_env.returncode, from_env.stderr) == (69, f"{refused}\n"), variable


def test_zklock_help_names_zkwire_server_and_the_old_name_as_deprecated() -> None:
    for action in ("run", "status"):
        proc = subprocess.run(
            [sys.executable, "-m", "zklock", action, "--help"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        text = " ".join(proc.stdout.split())  # argparse wraps the help
        assert "(default: $ZKWIRE_SERVER, else the deprecated $ZKLOCK_SERVER, else localhost:2181)" in text


def _listening(port: int) -> bool:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as s:
            s.settimeout(1)
            try:
                s.connect((host, port))
            except OSError:
                continue
            return True
    return False


def test_the_real_default_is_named_when_nothing_listens_on_2181() -> None:
    if _listening(2181):
        pytest.skip("something listens on port 2181 of this machine")
    proc = _with_default("zkwire.shell.main", None, "--timeout", "2", "ls", "/")
    assert proc.returncode == 3 and proc.stderr.endswith(f"localhost:2181: Connection refused {ZKWIRE_NOTE}\n"), (
        proc.stderr
    )
    proc = _with_default("zklock.cli", None, "status", "--timeout", "1", "/lock")
    assert (proc.returncode, proc.stderr) == (
        69,
        f"zklock: cannot connect to ZooKeeper at localhost:2181 within 1s {ZKLOCK_NOTE}\n",
    )
