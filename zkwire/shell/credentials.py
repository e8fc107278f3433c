"""The credential options every command line takes: ``--auth`` and SASL, from files or the environment.

Public, like :mod:`zkwire.shell.runtime` (``docs/api/cli.rst``): ``zkwire`` (shell and one-shot
commands) and ``zklock`` parse their credentials here, and so may any command line on zkwire::

    add_credential_arguments(parser)
    opts = parser.parse_args()
    credentials = credentials_from(opts)            # raises CredentialError: exit 2 with its message
    async with zkwire.open_client(hosts, **credentials.client_options()) as zk: ...

Secrets never come from the command line itself (it is visible to every user of the machine in the
process list): passwords come from a file (``--sasl-password-file``, ``--auth-file``) or the
environment (``$ZKWIRE_SASL_PASSWORD``, ``$ZKWIRE_AUTH``).  Nothing here prints or logs them; error
messages name the option or the file, never its content.

Options (and the environment variables used when the option is not given):

* ``--auth SCHEME:CREDENTIAL`` (repeatable): a credential of a scheme without secrets worth hiding
  (``ip``, ``x509``), or one the user accepts to show; ``--auth-file FILE``: one ``SCHEME:CREDENTIAL``
  per line (``#`` comments); ``$ZKWIRE_AUTH``: one ``SCHEME:CREDENTIAL``.
* ``--sasl MECHANISM`` (``$ZKWIRE_SASL``): ``DIGEST-MD5`` or ``GSSAPI`` (Kerberos; needs the
  ``zkwire[kerberos]`` extra).
* ``--sasl-user NAME`` (``$ZKWIRE_SASL_USER``): DIGEST-MD5's user; for GSSAPI the client principal
  (default: the ticket cache's).
* ``--sasl-password-file FILE`` (``$ZKWIRE_SASL_PASSWORD_FILE``, or the password itself in
  ``$ZKWIRE_SASL_PASSWORD``): DIGEST-MD5's password (the file's first line).
* ``--sasl-service NAME`` (default ``zookeeper``) and ``--sasl-keytab FILE``: GSSAPI's service name
  and a keytab holding the client principal's key (default: the ticket cache).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError
from ..sasl import DigestMD5, SaslMechanism

__all__ = [
    "CredentialError",
    "Credentials",
    "add_credential_arguments",
    "credentials_from",
    "SASL_MECHANISMS",
]

#: The mechanisms ``--sasl`` takes (case-insensitive).
SASL_MECHANISMS = ("DIGEST-MD5", "GSSAPI")
#: Longest credential file read (a password or a few auth lines; anything longer is a wrong file).
MAX_FILE = 64 * 1024


class CredentialError(Exception):
    """The credential options are wrong (a usage error, exit 2); the message names the option or the
    file, never a secret."""


@dataclass
class Credentials:
    """What :func:`credentials_from` read: AuthPacket credentials and a SASL mechanism."""

    auth: list[tuple[str, str]] = field(default_factory=list, repr=False)
    sasl: SaslMechanism | None = None

    def client_options(self) -> dict[str, Any]:
        """:func:`zkwire.open_client` keywords (``auth``, ``sasl``)."""
        return {"auth": list(self.auth), "sasl": self.sasl}


def add_credential_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of the module's documentation to ``parser`` (in a group of their own)."""
    group = parser.add_argument_group("credentials (secrets from files or the environment, never the command line)")
    group.add_argument(
        "--auth",
        action="append",
        default=[],
        metavar="SCHEME:CREDENTIAL",
        help="authenticate the session, e.g. ip:10.0.0.1 (repeatable; secrets: --auth-file or $ZKWIRE_AUTH)",
    )
    group.add_argument("--auth-file", metavar="FILE", help="SCHEME:CREDENTIAL lines, e.g. digest:user:password")
    group.add_argument(
        "--sasl",
        metavar="MECHANISM",
        help="authenticate with SASL: DIGEST-MD5 or GSSAPI (Kerberos) (default: $ZKWIRE_SASL)",
    )
    group.add_argument(
        "--sasl-user", metavar="NAME", help="SASL user, or Kerberos principal (default: $ZKWIRE_SASL_USER)"
    )
    group.add_argument(
        "--sasl-password-file",
        metavar="FILE",
        help="DIGEST-MD5 password file (default: $ZKWIRE_SASL_PASSWORD_FILE, or $ZKWIRE_SASL_PASSWORD)",
    )
    group.add_argument("--sasl-service", metavar="NAME", help="GSSAPI service name (default: zookeeper)")
    group.add_argument("--sasl-keytab", metavar="FILE", help="GSSAPI client keytab (default: the ticket cache)")


def _read_secret_file(option: str, name: str) -> str:
    path = Path(name)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise CredentialError(f"{option}: cannot read {name!r}: {e.strerror or type(e).__name__}") from None
    if len(data) > MAX_FILE:
        raise CredentialError(f"{option}: {name!r} is longer than {MAX_FILE} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CredentialError(f"{option}: {name!r} is not UTF-8 text") from None


def _auth_entry(where: str, item: str) -> tuple[str, str]:
    scheme, sep, credential = item.partition(":")
    if not sep or not scheme.strip():
        raise CredentialError(f"{where}: expected SCHEME:CREDENTIAL, e.g. digest:user:password")
    if any(ord(c) < 0x20 for c in scheme) or _has_surrogates(item):
        raise CredentialError(f"{where}: not valid UTF-8 text")
    return scheme.strip(), credential


def _has_surrogates(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def credentials_from(opts: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Credentials:
    """The credentials the options (added by :func:`add_credential_arguments`) and ``environ`` (default:
    the process's environment) give.

    Raises:
        CredentialError: an option is wrong or a file unreadable (the message names which, never a secret).
    """
    env = os.environ if environ is None else environ
    creds = Credentials()
    for n, item in enumerate(getattr(opts, "auth", None) or [], 1):
        creds.auth.append(_auth_entry(f"--auth (#{n})", item))
    auth_file = getattr(opts, "auth_file", None)
    if auth_file:
        text = _read_secret_file("--auth-file", auth_file)
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                creds.auth.append(_auth_entry(f"--auth-file line {n}", line))
    if env.get("ZKWIRE_AUTH"):
        creds.auth.append(_auth_entry("$ZKWIRE_AUTH", env["ZKWIRE_AUTH"]))
    mechanism = getattr(opts, "sasl", None) or env.get("ZKWIRE_SASL")
    if mechanism:
        creds.sasl = _mechanism(mechanism, opts, env)
    elif getattr(opts, "sasl_user", None) or getattr(opts, "sasl_password_file", None):
        raise CredentialError("--sasl-user/--sasl-password-file need --sasl MECHANISM (e.g. --sasl DIGEST-MD5)")
    return creds


def _mechanism(name: str, opts: argparse.Namespace, env: Mapping[str, str]) -> SaslMechanism:
    upper = name.strip().upper()
    user = getattr(opts, "sasl_user", None) or env.get("ZKWIRE_SASL_USER")
    if upper == "DIGEST-MD5":
        if not user:
            raise CredentialError("--sasl DIGEST-MD5 needs --sasl-user (or $ZKWIRE_SASL_USER)")
        password_file = getattr(opts, "sasl_password_file", None) or env.get("ZKWIRE_SASL_PASSWORD_FILE")
        if password_file:
            lines = _read_secret_file("--sasl-password-file", password_file).splitlines()
            password = lines[0] if lines else ""
        elif "ZKWIRE_SASL_PASSWORD" in env:
            password = env["ZKWIRE_SASL_PASSWORD"]
        else:
            raise CredentialError(
                "--sasl DIGEST-MD5 needs a password: --sasl-password-file FILE, or $ZKWIRE_SASL_PASSWORD"
            )
        if _has_surrogates(user) or _has_surrogates(password):
            raise CredentialError("--sasl-user or the password is not valid UTF-8 text")
        try:
            return DigestMD5(user, password)
        except InvalidArgumentError as e:  # names the field, not its value
            raise CredentialError(f"--sasl DIGEST-MD5: {e}") from None
    if upper == "GSSAPI":
        return _kerberos(opts, user)
    raise CredentialError(f"--sasl: unknown mechanism {name!r} (one of {', '.join(SASL_MECHANISMS)})")


def _kerberos(opts: argparse.Namespace, principal: str | None) -> SaslMechanism:
    try:
        from ..sasl.kerberos import Kerberos
    except ImportError:
        raise CredentialError("--sasl GSSAPI needs the Kerberos extra: pip install 'zkwire[kerberos]'") from None
    kwargs: dict[str, Any] = {}
    if principal:
        kwargs["principal"] = principal
    if getattr(opts, "sasl_service", None):
        kwargs["service"] = opts.sasl_service
    if getattr(opts, "sasl_keytab", None):
        kwargs["keytab"] = opts.sasl_keytab
    mechanism: SaslMechanism = Kerberos(**kwargs)
    return mechanism
