"""The client's TLS context from files: the CA that signs the servers' certificates, and the client's
own certificate and key for servers that require one (mutual TLS, the ``x509`` scheme).

:func:`tls_context` is what ``open_client(ssl_context=...)`` takes, built from paths; every command line
of the project builds its context with it (``--tls-ca``, ``--tls-cert``, ``--tls-key``: see
:mod:`zkwire.shell.runtime`).  An :class:`ssl.SSLContext` built by hand does as well.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable

from ..errors import InvalidArgumentError

__all__ = ["tls_context", "KeyPassword"]

#: A private key's password: the text, or a function returning it (called only if the key is encrypted).
KeyPassword = str | bytes | Callable[[], str | bytes]

_PathLike = str | os.PathLike[str]


def tls_context(
    *,
    ca: _PathLike | None = None,
    cert: _PathLike | None = None,
    key: _PathLike | None = None,
    key_password: KeyPassword | None = None,
    check_hostname: bool = True,
) -> ssl.SSLContext:
    """A client-side TLS context for :func:`~zkwire.open_client`'s ``ssl_context``.

    ``ca``: a PEM file (or a directory prepared with ``openssl rehash``) of the CAs whose signature on
    the server's certificate the client accepts; None: the system's CAs.  ``cert``: the client's
    certificate (PEM, followed by any intermediate CA certificates), presented to servers that ask for
    one; ``key``: its private key (PEM), unless it is in ``cert``'s file too.  ``key_password``: the
    key's password if it is encrypted (text, bytes, or a function that returns it: read it from a file
    or the environment, not from a command-line argument).  ``check_hostname``: the server's
    certificate must name the host connected to (its subjectAltName); turn it off only for servers
    whose certificates name no host, the certificate itself is still verified.

    Raises:
        InvalidArgumentError: a file cannot be read, is not what it should be, the key does not match
            the certificate or cannot be decrypted (the message names the option and the file, never
            the password), or a key is given without its certificate.
    """
    if key is not None and cert is None:
        raise InvalidArgumentError("a client key (key=) needs its certificate (cert=)")
    if key_password is not None and cert is None:
        raise InvalidArgumentError("a key password (key_password=) is for a client key (cert=, key=)")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if ca is not None:
        where = os.fspath(ca)
        try:
            if os.path.isdir(where):
                context.load_verify_locations(capath=where)
            else:
                context.load_verify_locations(cafile=where)
        except (OSError, ssl.SSLError, ValueError) as e:
            raise InvalidArgumentError(f"ca={where!r}: cannot load CA certificates ({_why(e)})") from None
    context.check_hostname = check_hostname
    if cert is not None:
        _load_client(context, os.fspath(cert), None if key is None else os.fspath(key), key_password)
    return context


class _NoPassword(Exception):
    pass


def _load_client(context: ssl.SSLContext, cert: str, key: str | None, key_password: KeyPassword | None) -> None:
    """Load the client's certificate and key into ``context``, or say which file is wrong and how.  A
    password is always handed to OpenSSL through a function, so that an encrypted key without one is an
    error here and never a prompt on the terminal."""
    key_file = cert if key is None else key
    where = "key" if key is not None else "cert"
    for option, path in (("cert", cert), ("key", key)):
        if path is not None and not os.path.isfile(path):
            raise InvalidArgumentError(f"{option}={path!r}: no such file")
    try:
        with open(key_file, "rb") as f:
            encrypted = b"ENCRYPTED" in f.read(1 << 20)
        ssl.create_default_context(cafile=cert)  # the certificate alone: is it one?
    except ssl.SSLError:  # (an OSError too)
        raise InvalidArgumentError(f"cert={cert!r}: not a PEM certificate") from None
    except OSError as e:
        raise InvalidArgumentError(f"{where}={key_file!r}: cannot read it ({_why(e)})") from None
    where = "key" if key is not None else "cert"
    if encrypted and key_password is None:
        raise InvalidArgumentError(f"{where}={key_file!r}: the key is encrypted, and no password was given")

    def password() -> str | bytes:
        if key_password is None:
            raise _NoPassword
        return key_password() if callable(key_password) else key_password

    try:
        context.load_cert_chain(cert, key, password=password)
    except _NoPassword:
        raise InvalidArgumentError(f"{where}={key_file!r}: the key is encrypted, and no password was given") from None
    except (OSError, ssl.SSLError, ValueError, TypeError) as e:
        if isinstance(e, ssl.SSLError) and "key values mismatch" in (e.reason or "").replace("_", " ").lower():
            why = "the key does not match the certificate"
        elif encrypted:
            why = "cannot decrypt the key: wrong password"
        else:
            why = f"not a PEM private key ({_why(e)})"
        raise InvalidArgumentError(f"{where}={key_file!r}: {why}") from None


def _why(error: BaseException) -> str:
    """What went wrong loading a file, without quoting what was given (a password never appears)."""
    if isinstance(error, ssl.SSLError):
        return (error.reason or "").replace("_", " ").lower() or "not a PEM file of the expected kind"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return type(error).__name__
