"""Secured test servers: the server settings SASL needs, and the JAAS file they point at.

``EmbeddedZooKeeper(options)`` with these options starts a server that authenticates clients with
SASL and (``required``, the default) refuses every request from a connection that has not::

    options = digest_sasl_options(directory, {"alice": "secret"})     # DIGEST-MD5 users
    # the same, in steps (another JAAS section, e.g. Kerberos's, goes the same way):
    jaas = write_jaas(directory / "jaas.conf", {"Server": digest_login_section({"alice": "secret"})})
    options = sasl_server_options(jaas)

Kerberos (GSSAPI) is the same with a ``Krb5LoginModule`` section naming the server's keytab, and the
realm's ``krb5.conf`` for the JVM (:mod:`zkwire.testing.kerberos` makes both)::

    service = realm.service_principal("zookeeper", "localhost")
    jaas = write_jaas(directory / "jaas.conf", {"Server": kerberos_login_section(service.keytab, service.name)})
    options = kerberos_server_options(jaas, realm.krb5_conf)

The JAAS file holds the users' passwords: it is written readable by its owner only.  What the server
does with these settings is in protocol-notes/sasl.md (and protocol-notes/sasl-kerberos.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .base import ServerOptions

__all__ = [
    "DIGEST_LOGIN_MODULE",
    "KERBEROS_LOGIN_MODULE",
    "SASL_PROVIDER",
    "digest_login_section",
    "digest_sasl_options",
    "jaas_value",
    "kerberos_login_section",
    "kerberos_server_options",
    "sasl_server_options",
    "write_jaas",
]

#: The server's JAAS login module for DIGEST-MD5 (users and passwords listed in the section).
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
#: The JDK's JAAS login module for Kerberos: the server logs in as its service principal from a keytab.
KERBEROS_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
#: The authentication provider that registers the ``sasl`` scheme (``sasl:`` ACLs, enforcement).
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


def jaas_value(text: str) -> str:
    """``text`` as a quoted JAAS option value."""
    if any(ord(c) < 0x20 for c in text):
        raise ValueError("a JAAS option value cannot hold control characters")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def digest_login_section(users: Mapping[str, str]) -> str:
    """The body of a JAAS section that lets ``users`` (name -> password) authenticate with DIGEST-MD5."""
    if not users:
        raise ValueError("a DIGEST-MD5 section needs at least one user")
    options = []
    for name, password in users.items():
        if not name or not all(c.isalnum() or c in "_-." for c in name):
            raise ValueError(f"user name {name!r}: letters, digits, '_', '-' and '.' only")
        options.append(f"    user_{name}={jaas_value(password)}")
    return f"{DIGEST_LOGIN_MODULE} required\n" + "\n".join(options) + ";"


def kerberos_login_section(keytab: Path | str, principal: str) -> str:
    """The body of a JAAS section that logs in as ``principal`` (``zookeeper/<host>@REALM`` for a
    server's ``Server`` section; a client's ``Client`` section takes a user principal) with the keys of
    ``keytab``, without a ticket cache."""
    options = {
        "useKeyTab": "true",
        "keyTab": jaas_value(str(keytab)),
        "storeKey": "true",
        "useTicketCache": "false",
        "principal": jaas_value(principal),
    }
    return f"{KERBEROS_LOGIN_MODULE} required\n" + "\n".join(f"    {k}={v}" for k, v in options.items()) + ";"


def write_jaas(path: Path, sections: Mapping[str, str]) -> Path:
    """Write a JAAS configuration file (section name -> body, e.g. :func:`digest_login_section`),
    readable by its owner only; returns ``path``."""
    text = "".join(f"{name} {{\n    {body}\n}};\n" for name, body in sections.items())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def sasl_server_options(
    jaas: Path,
    *,
    required: bool = True,
    base: ServerOptions | None = None,
    system_properties: Mapping[str, str] | None = None,
) -> ServerOptions:
    """``base`` (default options) with the server's side of SASL: the JAAS file, the ``sasl``
    provider, and (``required``) enforcement -- a connection that has not authenticated with SASL
    gets error -124 (SESSIONCLOSEDREQUIRESASLAUTH) for any request and is closed.
    ``system_properties``: more ``-D`` flags (Kerberos needs ``java.security.krb5.conf``)."""
    options = base or ServerOptions()
    config = dict(options.extra_config)
    config["authProvider.sasl"] = SASL_PROVIDER
    if required:
        config["enforce.auth.enabled"] = "true"
        config["enforce.auth.schemes"] = "sasl"
    flags = [f"-Djava.security.auth.login.config={jaas}"]
    flags += [f"-D{key}={value}" for key, value in (system_properties or {}).items()]
    return options.replace(extra_config=config, jvm_flags=[*options.jvm_flags, *flags])


def kerberos_server_options(
    jaas: Path,
    krb5_conf: Path | str,
    *,
    required: bool = True,
    base: ServerOptions | None = None,
) -> ServerOptions:
    """:func:`sasl_server_options` for a server whose JAAS ``Server`` section is a
    :func:`kerberos_login_section`: the JVM also gets the realm's ``krb5.conf``
    (``java.security.krb5.conf``; a JVM ignores ``KRB5_CONFIG`` and would otherwise read the machine's
    ``/etc/krb5.conf``)."""
    return sasl_server_options(
        jaas, required=required, base=base, system_properties={"java.security.krb5.conf": str(krb5_conf)}
    )


def digest_sasl_options(
    directory: Path, users: Mapping[str, str], *, required: bool = True, base: ServerOptions | None = None
) -> ServerOptions:
    """:func:`sasl_server_options` for DIGEST-MD5 ``users`` (name -> password), their JAAS file
    written in ``directory`` (``jaas.conf``)."""
    jaas = write_jaas(Path(directory) / "jaas.conf", {"Server": digest_login_section(users)})
    return sasl_server_options(jaas, required=required, base=base)
