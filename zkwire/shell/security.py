"""The options every command line takes to reach a secured ensemble: TLS, ``--auth`` and SASL, with
their secrets from files or the environment.

Public, like :mod:`zkwire.shell.runtime` (``docs/api/cli.rst``): ``zkwire`` (shell and one-shot
commands), ``zklock`` and ``zkwire trace`` (its TLS towards the servers) parse them here, and so may any
command line on zkwire::

    add_security_options(parser)
    opts = parser.parse_args()
    security = security_options(opts)               # raises InvalidArgumentError: exit 2 with its message
    async with zkwire.open_client(hosts, **security.client_options()) as zk: ...

Secrets never come from the command line itself (it is visible to every user of the machine in the
process list): passwords come from a file (``--sasl-password-file``, ``--auth-file``) or the
environment (``$ZKWIRE_SASL_PASSWORD``, ``$ZKWIRE_AUTH``).  Nothing here prints or logs them; error
messages name the option or the file, never its content.

Options (and the environment variables used when the option is not given):

* ``--tls`` (``$ZKWIRE_TLS``), ``--tls-ca FILE``, ``--tls-cert FILE``, ``--tls-key FILE``,
  ``--tls-key-password-file FILE`` (or the password itself in ``$ZKWIRE_TLS_KEY_PASSWORD``),
  ``--tls-no-hostname-check``: TLS, with a client certificate for servers that require one
  (:data:`TLS_VARIABLES` lists the variables);
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
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..client.tls import tls_context
from ..errors import InvalidArgumentError
from ..sasl import DigestMD5, SaslMechanism
from .runtime import is_utf8, read_text_file

__all__ = [
    "CredentialError",
    "SecurityOptions",
    "SASL_MECHANISMS",
    "TLS_VARIABLES",
    "add_security_options",
    "security_options",
]

#: The mechanisms ``--sasl`` takes (case-insensitive).
SASL_MECHANISMS = ("DIGEST-MD5", "GSSAPI")
#: Longest credential file read (a password or a few auth lines; anything longer is a wrong file).
MAX_FILE = 64 * 1024


class CredentialError(InvalidArgumentError):
    """The credential options are wrong (a usage error, exit 2); the message names the option or the
    file, never a secret."""


class _RefusePassword(argparse.Action):
    """An option that would put a password on the command line: a usage error that does not repeat it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            f"{option_string}: a password is not taken on the command line (every user of the machine can "
            f"read it there): use {option_string}-file FILE, or the environment"
        )


def _add_credential_arguments(parser: argparse.ArgumentParser) -> None:
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
    # A password given on the command line itself (visible to every user of the machine) is refused, and
    # these exact names keep argparse from taking --sasl-password as an abbreviation of
    # --sasl-password-file (which would quote the password as a file name in its error).
    group.add_argument("--sasl-password", nargs="?", action=_RefusePassword, help=argparse.SUPPRESS)
    group.add_argument("--sasl-service", metavar="NAME", help="GSSAPI service name (default: zookeeper)")
    group.add_argument("--sasl-keytab", metavar="FILE", help="GSSAPI client keytab (default: the ticket cache)")


def _read_secret_file(option: str, name: str) -> str:
    try:
        return read_text_file(name, MAX_FILE)
    except OSError as e:
        raise CredentialError(f"{option}: cannot read {name!r}: {e.strerror or type(e).__name__}") from None
    except ValueError as e:
        raise CredentialError(f"{option}: {name!r} {e}") from None


def _auth_entry(where: str, item: str) -> tuple[str, str]:
    scheme, sep, credential = item.partition(":")
    if not sep or not scheme.strip():
        raise CredentialError(f"{where}: expected SCHEME:CREDENTIAL, e.g. digest:user:password")
    if any(ord(c) < 0x20 for c in scheme) or not is_utf8(item):
        raise CredentialError(f"{where}: not valid UTF-8 text")
    return scheme.strip(), credential


def _credentials(
    opts: argparse.Namespace, env: Mapping[str, str]
) -> tuple[list[tuple[str, str]], SaslMechanism | None]:
    """``--auth`` credentials and the SASL mechanism the options and ``env`` give."""
    auth = [_auth_entry(f"--auth (#{n})", item) for n, item in enumerate(getattr(opts, "auth", None) or [], 1)]
    auth_file = getattr(opts, "auth_file", None)
    if auth_file:
        text = _read_secret_file("--auth-file", auth_file)
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                auth.append(_auth_entry(f"--auth-file line {n}", line))
    if env.get("ZKWIRE_AUTH"):
        auth.append(_auth_entry("$ZKWIRE_AUTH", env["ZKWIRE_AUTH"]))
    mechanism = getattr(opts, "sasl", None) or env.get("ZKWIRE_SASL")
    if mechanism:
        return auth, _mechanism(mechanism, opts, env)
    if getattr(opts, "sasl_user", None) or getattr(opts, "sasl_password_file", None):
        raise CredentialError("--sasl-user/--sasl-password-file need --sasl MECHANISM (e.g. --sasl DIGEST-MD5)")
    return auth, None


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
            if not password:
                raise CredentialError(f"--sasl-password-file: {password_file!r} holds no password (its first line)")
        elif "ZKWIRE_SASL_PASSWORD" in env:
            password = env["ZKWIRE_SASL_PASSWORD"]
        else:
            raise CredentialError(
                "--sasl DIGEST-MD5 needs a password: --sasl-password-file FILE, or $ZKWIRE_SASL_PASSWORD"
            )
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
    try:
        mechanism: SaslMechanism = Kerberos(**kwargs)
    except ImportError:  # the gssapi package is imported when a Kerberos is made
        raise CredentialError("--sasl GSSAPI needs the Kerberos extra: pip install 'zkwire[kerberos]'") from None
    except InvalidArgumentError as e:
        raise CredentialError(f"--sasl GSSAPI: {e}") from None
    return mechanism


# ------------------------------------------------------------------------------------------------ TLS

#: The environment variable of each TLS option (``--tls-ca`` -> ``ZKWIRE_TLS_CA``...), read when the option
#: is not given; ``ZKWIRE_TLS_KEY_PASSWORD`` holds the key's password itself (or use
#: ``--tls-key-password-file`` / ``ZKWIRE_TLS_KEY_PASSWORD_FILE``).
TLS_VARIABLES: dict[str, str] = {
    "tls": "ZKWIRE_TLS",
    "tls_ca": "ZKWIRE_TLS_CA",
    "tls_cert": "ZKWIRE_TLS_CERT",
    "tls_key": "ZKWIRE_TLS_KEY",
    "tls_key_password_file": "ZKWIRE_TLS_KEY_PASSWORD_FILE",
    "tls_key_password": "ZKWIRE_TLS_KEY_PASSWORD",
}


@dataclass(frozen=True)
class SecurityOptions:
    """What a tool's security options (:func:`add_security_options`) asked for, each field a keyword of
    :func:`~zkwire.open_client` of the same name (:meth:`client_options`: all of them)."""

    #: The TLS context (None: plain TCP).
    ssl_context: ssl.SSLContext | None = None
    #: ``--auth`` credentials (scheme, credential), in order.
    auth: list[tuple[str, str]] = field(default_factory=list, repr=False)
    #: The SASL mechanism (None: no SASL).
    sasl: SaslMechanism | None = None

    def client_options(self) -> dict[str, Any]:
        """The :func:`zkwire.open_client` keywords: ``ssl_context``, ``auth``, ``sasl``."""
        return {"ssl_context": self.ssl_context, "auth": list(self.auth), "sasl": self.sasl}


def add_security_options(parser: argparse.ArgumentParser, *, prefix: str = "", credentials: bool = True) -> None:
    """Add the options to reach a secured ensemble to ``parser`` (read them with :func:`security_options`).

    ``prefix``: put before every TLS option name (``zkwire trace`` takes ``--upstream-tls-ca``...: its
    own listening side is not what they configure).  ``credentials``: also ``--auth`` and the SASL
    options (not for a proxy, which forwards its clients' own)."""
    if credentials:
        _add_credential_arguments(parser)
    group = parser.add_argument_group("TLS (each option also from its $ZKWIRE_TLS_... variable)")
    p = f"--{prefix}tls"
    group.add_argument(p, dest="tls", action="store_true", default=None, help="TLS, trusting the system's CAs")
    group.add_argument(f"{p}-ca", dest="tls_ca", metavar="FILE", help="TLS, trusting the CA certificates of FILE (PEM)")
    group.add_argument(
        f"{p}-cert", dest="tls_cert", metavar="FILE", help="TLS, presenting the client certificate of FILE (PEM)"
    )
    group.add_argument(
        f"{p}-key", dest="tls_key", metavar="FILE", help="the client certificate's key (PEM), if not in --tls-cert"
    )
    group.add_argument(f"{p}-key-password", nargs="?", action=_RefusePassword, help=argparse.SUPPRESS)
    group.add_argument(
        f"{p}-key-password-file",
        dest="tls_key_password_file",
        metavar="FILE",
        help="the key's password, the first line of FILE (or $ZKWIRE_TLS_KEY_PASSWORD)",
    )
    group.add_argument(
        f"{p}-no-hostname-check",
        dest="tls_no_hostname_check",
        action="store_true",
        help="accept a server certificate that names another host (it is still verified)",
    )


def security_options(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None, *, prefix: str = ""
) -> SecurityOptions:
    """The :class:`SecurityOptions` of parsed ``args`` (options of :func:`add_security_options`), each
    missing option taken from its environment variable (:data:`TLS_VARIABLES`, and the module's list for
    the credentials) in ``environ`` (default: the process's).  TLS is on when ``--tls`` or a CA,
    certificate or key is given.

    Raises:
        InvalidArgumentError: an option is wrong or a file cannot be used (the message names the option
            and the file, never a password): the tool's usage error, before anything connects.
            :class:`CredentialError` for the credential options.
    """
    env = os.environ if environ is None else environ
    name = f"--{prefix}tls"
    auth, sasl = _credentials(args, env)

    def value(dest: str) -> str | None:
        given: str | None = getattr(args, dest, None)
        if given is None:
            given = env.get(TLS_VARIABLES[dest]) or None
        return given

    ca, cert, key, password_file = value("tls_ca"), value("tls_cert"), value("tls_key"), value("tls_key_password_file")
    flag = getattr(args, "tls", None) or env.get(TLS_VARIABLES["tls"], "") not in ("", "0")
    if not (flag or ca or cert or key):
        return SecurityOptions(None, auth, sasl)
    if key is not None and cert is None:
        raise InvalidArgumentError(f"{name}-key needs {name}-cert (the certificate the key belongs to)")
    password: str | None = None
    if password_file is not None:
        if cert is None:
            raise InvalidArgumentError(f"{name}-key-password-file is for a key ({name}-cert, {name}-key)")
        try:
            with open(password_file, encoding="utf-8") as f:
                password = f.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
            raise InvalidArgumentError(f"{name}-key-password-file {password_file!r}: cannot read it ({why})") from None
    elif cert is not None:
        password = env.get(TLS_VARIABLES["tls_key_password"]) or None
    try:
        context = tls_context(
            ca=ca,
            cert=cert,
            key=key,
            key_password=password,
            check_hostname=not getattr(args, "tls_no_hostname_check", False),
        )
    except InvalidArgumentError as e:
        option = {"ca": f"{name}-ca", "cert": f"{name}-cert", "key": f"{name}-key"}
        text = str(e)
        for word, flag_name in option.items():
            if text.startswith(f"{word}="):
                text = f"{flag_name} {text[len(word) + 1 :]}"
                break
        raise InvalidArgumentError(text) from None
    return SecurityOptions(context, auth, sasl)
