"""The TLS options every tool takes (``--tls-ca``, ``--tls-cert``, ``--tls-key``,
``--tls-key-password-file`` and their ``$ZKWIRE_TLS_...`` variables; parsed once, in
zkwire.shell.runtime), run as the real commands against a server that requires client certificates:
``zkwire`` one-shot and shell, ``zklock run`` and ``status``, and ``zkwire trace``'s upstream."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from helpers.cli import Result
from helpers.tls import KEY_PASSWORD, MtlsServer

import zkwire
from zkwire.testing.base import free_port
from zkwire.testing.certs import ClientCertificate

LIMIT = 30.0


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZKWIRE_TLS", "ZKWIRE_SERVER", "ZKLOCK_"))}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


async def run(*args: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> Result:
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            [sys.executable, "-m", *args],
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=_env(env),
        )
    result = Result(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result


@pytest.fixture(scope="module")
def password_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "key-password"
    path.write_text(KEY_PASSWORD + "\n")
    path.chmod(0o600)
    return path


def options(server: MtlsServer, client: ClientCertificate | None, password_file: Path) -> list[str]:
    opts = ["--tls-ca", str(server.certs.ca)]
    if client is not None:
        opts += [
            "--tls-cert",
            str(client.cert),
            "--tls-key",
            str(client.key),
            "--tls-key-password-file",
            str(password_file),
        ]
    return opts


async def test_zkwire_one_shot_commands_with_a_client_certificate(mtls_server: MtlsServer, password_file: Path) -> None:
    alice = mtls_server.certs.clients["alice"]
    base = ["zkwire", "--server", mtls_server.hosts, *options(mtls_server, alice, password_file)]
    result = await run(*base, "whoami")
    assert result.code == 0, result.err
    assert "x509" in result.out and alice.dn in result.out
    await run(*base, "delete", "/cli-x509")
    result = await run(*base, "create", "/cli-x509", "for alice", "x509:" + alice.dn + ":cdrwa")
    assert result.code == 0, result.err
    assert (await run(*base, "get", "/cli-x509")).out.strip() == "for alice"
    bob = mtls_server.certs.clients["bob"]
    refused = await run(
        "zkwire", "--server", mtls_server.hosts, *options(mtls_server, bob, password_file), "get", "/cli-x509"
    )
    assert refused.code == 1 and "Not authorized" in refused.err


async def test_the_environment_gives_the_same_options(mtls_server: MtlsServer) -> None:
    alice = mtls_server.certs.clients["alice"]
    env = {
        "ZKWIRE_SERVER": mtls_server.hosts,
        "ZKWIRE_TLS_CA": str(mtls_server.certs.ca),
        "ZKWIRE_TLS_CERT": str(alice.cert),
        "ZKWIRE_TLS_KEY": str(alice.key),
        "ZKWIRE_TLS_KEY_PASSWORD": KEY_PASSWORD,
    }
    result = await run("zkwire", "whoami", env=env)
    assert result.code == 0 and alice.dn in result.out, result.err


async def test_the_interactive_shell_with_a_client_certificate(mtls_server: MtlsServer, password_file: Path) -> None:
    alice = mtls_server.certs.clients["alice"]
    args = ["zkwire", "--server", mtls_server.hosts, *options(mtls_server, alice, password_file)]
    result = await run(*args, stdin=b"whoami\ncreate /cli-shell-x509 x\nls /\ndelete /cli-shell-x509\nquit\n")
    assert result.code == 0, result.err
    assert alice.dn in result.out and "cli-shell-x509" in result.out


@pytest.mark.parametrize("which", ["none", "untrusted", "server"])
async def test_a_refused_certificate_exits_3_at_once_naming_the_cause(
    mtls_server: MtlsServer, password_file: Path, which: str
) -> None:
    certs = mtls_server.certs
    if which == "server":  # the client trusts only the system's CAs
        opts = ["--tls-cert", str(certs.clients["alice"].cert), "--tls-key", str(certs.clients["alice"].key)]
        env = {"ZKWIRE_TLS_KEY_PASSWORD": KEY_PASSWORD}
    else:
        opts, env = options(mtls_server, None if which == "none" else certs.untrusted, password_file), {}
    started = trio.current_time()
    result = await run("zkwire", "--server", mtls_server.hosts, "--timeout", "20", *opts, "ls", "/", env=env)
    assert trio.current_time() - started < 15  # not the 20 s of --timeout
    assert result.code == 3, result
    line = result.err.strip()
    assert len(line.splitlines()) == 1 and mtls_server.hosts in line
    expected = {"none": "refused the client's TLS certificate", "untrusted": "refused the client's TLS certificate"}
    assert expected.get(which, "TLS certificate is not trusted") in line
    assert KEY_PASSWORD not in line


async def test_bad_tls_options_are_usage_errors_never_showing_the_password(
    mtls_server: MtlsServer, tmp_path: Path
) -> None:
    alice = mtls_server.certs.clients["alice"]
    wrong = tmp_path / "wrong"
    wrong.write_text("not-" + KEY_PASSWORD + "\n")
    cases = [
        ["--tls-cert", str(alice.cert), "--tls-key", str(alice.key), "--tls-key-password-file", str(wrong)],
        ["--tls-cert", str(alice.cert), "--tls-key", str(alice.key)],  # encrypted, no password
        ["--tls-key", str(alice.key)],
        ["--tls-ca", str(tmp_path / "missing.pem")],
        ["--tls-cert", str(alice.cert), "--tls-key", str(alice.key), "--tls-key-password-file", str(tmp_path / "no")],
    ]
    for tool in (["zkwire"], ["zklock", "status"]):
        for opts in cases:
            result = await run(
                *tool, "--server", mtls_server.hosts, *opts, *(["/x"] if tool[0] == "zklock" else ["ls", "/"])
            )
            assert result.code == 2, (opts, result)
            assert len(result.err.strip().splitlines()) == 1, result.err
            assert "--tls-" in result.err and KEY_PASSWORD not in result.err


async def test_zklock_run_and_status_with_a_client_certificate(mtls_server: MtlsServer, password_file: Path) -> None:
    alice = mtls_server.certs.clients["alice"]
    opts = ["--server", mtls_server.hosts, *options(mtls_server, alice, password_file)]
    result = await run("zklock", "run", *opts, "/cli-tls-lock", "--", "sh", "-c", 'echo "token=$ZKLOCK_FENCING_TOKEN"')
    assert result.code == 0 and "token=" in result.out, result
    status = await run("zklock", "status", *opts, "/cli-tls-lock")
    assert status.code == 0, status
    refused = await run(
        "zklock", "status", "--server", mtls_server.hosts, *options(mtls_server, None, password_file), "/x"
    )
    assert refused.code == 69 and "refused the client's TLS certificate" in refused.err, refused


async def test_trace_presents_the_client_certificate_upstream(
    mtls_server: MtlsServer, password_file: Path, tmp_path: Path
) -> None:
    alice = mtls_server.certs.clients["alice"]
    port = free_port()
    upstream = ["--upstream-tls-ca", str(mtls_server.certs.ca), "--upstream-tls-cert", str(alice.cert)]
    upstream += ["--upstream-tls-key", str(alice.key), "--upstream-tls-key-password-file", str(password_file)]
    cmd = [sys.executable, "-m", "zkwire", "trace", "--listen", f"127.0.0.1:{port}", "--server", mtls_server.hosts]
    log = tmp_path / "trace.out"
    with log.open("wb") as out:
        tracer = await trio.lowlevel.open_process([*cmd, *upstream], stdout=out, stderr=subprocess.STDOUT, env=_env())
    try:
        with trio.fail_after(LIMIT):
            while True:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert tracer.poll() is None, log.read_text()
                await trio.sleep(0.05)
            # A plain client of the proxy: the server sees the proxy's certificate, alice's.
            async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
                assert ("x509", alice.dn) in await zk.who_am_i()
    finally:
        tracer.terminate()
        with trio.fail_after(10):
            await tracer.wait()
    text = log.read_text()
    assert "(TLS)" in text and KEY_PASSWORD not in text and "Traceback" not in text
