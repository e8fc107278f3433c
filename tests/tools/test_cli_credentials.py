"""The credential options of the command lines (zkwire.shell.security) against a server requiring
SASL: ``zkwire`` one-shot commands and ``zklock run/status`` authenticate with DIGEST-MD5 from a password
file or the environment, ``--auth`` and ``--auth-file`` add AuthPacket credentials, and every mistake is
a one-line usage error or connection error naming the option -- never a secret."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest
import trio
from helpers.cli import zkw
from helpers.kerberos import KerberosServer
from helpers.sasl import SASL_USERS, SaslServer

from zkwire.sasl import DigestMD5
from zkwire.shell.outcomes import EXIT_CONNECTION, EXIT_USAGE
from zkwire.shell.security import CredentialError, add_security_options, security_options

ALICE_PW = SASL_USERS["alice"]


def _password_file(tmp_path: Path, password: str = ALICE_PW) -> str:
    path = tmp_path / "alice.pw"
    path.write_text(password + "\n")
    path.chmod(0o600)
    return str(path)


def _sasl(tmp_path: Path, password: str = ALICE_PW) -> tuple[str, ...]:
    return ("--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-password-file", _password_file(tmp_path, password))


async def test_zkwire_one_shot_with_a_password_file(sasl_server: SaslServer, tmp_path: Path) -> None:
    result = await zkw(sasl_server.hosts, "whoami", options=_sasl(tmp_path))
    assert result.code == 0, result.err
    assert "sasl" in result.out and "alice" in result.out
    assert ALICE_PW not in result.out + result.err


async def test_zkwire_with_the_password_in_the_environment(sasl_server: SaslServer) -> None:
    env = {"ZKWIRE_SASL": "digest-md5", "ZKWIRE_SASL_USER": "alice", "ZKWIRE_SASL_PASSWORD": ALICE_PW}
    result = await zkw(sasl_server.hosts, "whoami", env=env)
    assert result.code == 0 and "alice" in result.out, result.err


async def test_zkwire_with_a_wrong_password_names_mechanism_and_user(sasl_server: SaslServer, tmp_path: Path) -> None:
    result = await zkw(sasl_server.hosts, "ls", "/", options=_sasl(tmp_path, "wrong-pw-3e1f"))
    assert result.code == EXIT_CONNECTION
    assert "DIGEST-MD5" in result.err and "'alice'" in result.err
    assert "wrong-pw-3e1f" not in result.out + result.err


async def test_zkwire_without_sasl_names_the_option(sasl_server: SaslServer) -> None:
    result = await zkw(sasl_server.hosts, "ls", "/")
    assert result.code != 0 and "--sasl" in result.err, result.err


async def test_auth_file_and_auth_options_add_credentials(sasl_server: SaslServer, tmp_path: Path) -> None:
    auth_file = tmp_path / "auth"
    auth_file.write_text("# the application's digest identity\ndigest:carol:carol-pw-8d2\n")
    options = (*_sasl(tmp_path), "--auth-file", str(auth_file), "--auth", "ip:127.0.0.1")
    result = await zkw(sasl_server.hosts, "whoami", options=options)
    assert result.code == 0, result.err
    assert "carol" in result.out and "carol-pw-8d2" not in result.out + result.err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--sasl", "DIGEST-MD5"), "needs --sasl-user"),
        (("--sasl", "DIGEST-MD5", "--sasl-user", "alice"), "needs a password"),
        (
            ("--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-password-file", "/nonexistent/pw"),
            "/nonexistent/pw",
        ),
        (("--sasl", "PLAIN"), "unknown mechanism 'PLAIN'"),
        (("--sasl-user", "alice"), "need --sasl MECHANISM"),
        (("--auth", "nocolon"), "SCHEME:CREDENTIAL"),
    ],
    ids=["no-user", "no-password", "missing-file", "unknown", "user-without-sasl", "bad-auth"],
)
async def test_credential_mistakes_are_usage_errors(
    sasl_server: SaslServer, options: tuple[str, ...], message: str
) -> None:
    result = await zkw(sasl_server.hosts, "ls", "/", options=options)
    assert result.code == EXIT_USAGE and message in result.err and result.err.count("\n") == 1, result.err


def _zklock_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZKWIRE_", "ZKLOCK_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def _zklock(*args: str) -> tuple[int, str, str]:
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, "-m", "zklock", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=_zklock_env(),
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_zklock_run_and_status_with_sasl(sasl_server: SaslServer, tmp_path: Path) -> None:
    sasl = _sasl(tmp_path)
    code, out, err = await _zklock("run", "--server", sasl_server.hosts, *sasl, "/cli-sasl/lock", "--", "echo", "held")
    assert (code, out) == (0, "held\n"), err
    code, out, err = await _zklock("status", "--server", sasl_server.hosts, *sasl, "/cli-sasl/lock")
    assert code == 0, err
    code, _, err = await _zklock("run", "--server", sasl_server.hosts, "/cli-sasl/lock", "--", "true")
    assert code == 69 and "--sasl" in err, err
    code, _, err = await _zklock(
        "run", "--server", sasl_server.hosts, *_sasl(tmp_path, "bad-4c"), "/cli-sasl/lock", "--", "true"
    )
    assert code == 69 and "DIGEST-MD5" in err and "bad-4c" not in err, err


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_security_options(parser)
    return parser.parse_args(argv)


def test_credentials_from_options_and_environment(tmp_path: Path) -> None:
    creds = security_options(_parse(*_sasl(tmp_path)), {})
    assert isinstance(creds.sasl, DigestMD5) and creds.sasl.username == "alice" and creds.sasl.password == ALICE_PW
    creds = security_options(
        _parse(),
        {
            "ZKWIRE_AUTH": "digest:u:p",
            "ZKWIRE_SASL": "digest-md5",
            "ZKWIRE_SASL_USER": "bob",
            "ZKWIRE_SASL_PASSWORD": "x",
        },
    )
    assert creds.auth == [("digest", "u:p")] and isinstance(creds.sasl, DigestMD5) and creds.sasl.username == "bob"
    assert "u:p" not in repr(creds) and "x'" not in repr(creds)
    with pytest.raises(CredentialError, match="longer than"):
        big = tmp_path / "big"
        big.write_bytes(b"x" * 70_000)
        security_options(_parse("--auth-file", str(big)), {})


async def test_zkwire_with_kerberos_from_the_ticket_cache_and_a_keytab(kerberos_server: KerberosServer) -> None:
    setup = kerberos_server.kerberos
    result = await zkw(kerberos_server.hosts, "whoami", options=("--sasl", "GSSAPI"), env={"KRB5CCNAME": setup.ccache})
    assert result.code == 0 and setup.alice.name in result.out, result.err
    # a principal of its own (the realm lives for the whole test session)
    frank = await trio.to_thread.run_sync(setup.realm.user_principal, "frank")
    options = ("--sasl", "gssapi", "--sasl-user", frank.name, "--sasl-keytab", str(frank.keytab))
    result = await zkw(kerberos_server.hosts, "whoami", options=options)
    assert result.code == 0 and frank.name in result.out, result.err
    code, out, err = await _zklock(
        "run", "--server", kerberos_server.hosts, *options, "/cli-krb/lock", "--", "echo", "ok"
    )
    assert (code, out) == (0, "ok\n"), err


@pytest.mark.parametrize(
    "options",
    [
        ("--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-password", "hunter2-9f"),
        ("--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-pass", "hunter2-9f"),
        ("--tls-key-password", "hunter2-9f"),
        ("--tls-key-pass", "hunter2-9f"),
    ],
    ids=["sasl-password", "sasl-pass", "tls-key-password", "tls-key-pass"],
)
async def test_a_password_on_the_command_line_is_refused_without_repeating_it(
    sasl_server: SaslServer, options: tuple[str, ...]
) -> None:
    # argparse would take --sasl-password for an abbreviation of --sasl-password-file and quote the
    # password as a file name in its error.
    result = await zkw(sasl_server.hosts, "ls", "/", options=options)
    assert result.code == EXIT_USAGE and result.err.count("\n") == 1, result.err
    assert "hunter2" not in result.out + result.err


async def test_an_empty_password_file_is_a_usage_error(sasl_server: SaslServer, tmp_path: Path) -> None:
    empty = tmp_path / "empty.pw"
    empty.write_text("\n")
    options = ("--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-password-file", str(empty))
    result = await zkw(sasl_server.hosts, "ls", "/", options=options)
    assert result.code == EXIT_USAGE and "holds no password" in result.err, result.err


async def test_the_refusal_reason_is_in_zkwires_own_error_line(sasl_server: SaslServer, tmp_path: Path) -> None:
    result = await zkw(sasl_server.hosts, "ls", "/", options=_sasl(tmp_path, "wrong-pw-77"))
    [line] = [line for line in result.err.splitlines() if line.startswith("zkwire:") or "Cannot connect" in line]
    assert "DIGEST-MD5" in line and "'alice'" in line and "wrong-pw-77" not in result.err, result.err


async def test_gssapi_without_the_kerberos_extra_is_a_usage_error(sasl_server: SaslServer) -> None:
    code = (
        "import sys; sys.modules['gssapi'] = None\n"
        "from zkwire.shell.main import main\n"
        f"sys.exit(main(['--server', {sasl_server.hosts!r}, '--sasl', 'GSSAPI', 'ls', '/']))\n"
    )
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, "-c", code], capture_stdout=True, capture_stderr=True, check=False
        )
    err = done.stderr.decode()
    assert done.returncode == EXIT_USAGE and "zkwire[kerberos]" in err and "Traceback" not in err, err
