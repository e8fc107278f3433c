"""Certificates for tests of TLS and mutual TLS: a CA, a server keystore, a truststore, client keys.

:func:`make_test_certificates` writes, into a directory of the caller's (a temporary one in tests)::

    ca.pem                  the test CA's certificate (a client's ``ca=``: it signs the server's)
    server.p12              the server's key and certificate (SAN localhost and 127.0.0.1, signed by
                            the CA), PKCS12: ZooKeeper's ``ssl.keyStore.*``
    truststore.p12          the CA's certificate, PKCS12: ZooKeeper's ``ssl.trustStore.*`` (which
                            client certificates the server accepts)
    <name>.pem, <name>.key  one client certificate and key (PEM) per name, signed by the CA, with the
                            subject ``CN=<name>,O=zkwire test``
    untrusted.pem/.key      a self-signed client certificate (``CN=untrusted,O=zkwire test``) that
                            the server refuses

``EmbeddedZooKeeper(certificates=certs)`` starts a server with them that requires a client
certificate (``ssl.clientAuth=need``) on its TLS port, where every client is identified by the
``x509`` scheme with its certificate's subject::

    certs = make_test_certificates(tmp_path)
    with EmbeddedZooKeeper(certificates=certs) as server:
        context = zkwire.tls_context(ca=certs.ca, cert=certs.clients["alice"].cert,
                                     key=certs.clients["alice"].key)
        ...  # open_client(server.secure_hosts, ssl_context=context): who_am_i() is x509 / certs.clients["alice"].dn

The keys are made with the ``openssl`` command, the truststore with the JDK's ``keytool`` (which a
server needs anyway); the stores' password is random, handed to both through the environment (never a
command-line argument), and kept in :attr:`TestCertificates.store_password` for the server's config.
Keys are written readable by their owner only.  Standard library only.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sansio.hosts import is_ip_address
from .errors import EmbeddedZooKeeperError

__all__ = ["ClientCertificate", "TestCertificates", "make_test_certificates", "ORGANIZATION", "TLS13_ONLY"]

#: The organisation in every subject made here (so a DN reads ``CN=alice,O=zkwire test``).
ORGANIZATION = "zkwire test"
#: Server settings (``extra_config``) for TLS 1.3 only.  ZooKeeper 3.8.0 negotiates TLS 1.2 by default
#: (``ssl.protocol``), and its default cipher suites are all TLS 1.2 ones, so both must be set; under
#: TLS 1.3 the server's refusal of a client certificate reaches the client only after its handshake.
TLS13_ONLY: Mapping[str, str] = {
    "ssl.protocol": "TLSv1.3",
    "ssl.enabledProtocols": "TLSv1.3",
    "ssl.ciphersuites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256",
}
_TIMEOUT = 60.0
_STORE_PASSWORD_VAR = "ZKWIRE_CERTS_STORE_PASSWORD"
_KEY_PASSWORD_VAR = "ZKWIRE_CERTS_KEY_PASSWORD"


@dataclass(frozen=True)
class ClientCertificate:
    """A client's certificate and key (PEM files) and the name the server gives it."""

    cert: Path
    key: Path
    #: The subject as the server's ``x509`` provider names it (RFC 2253: most specific first), the
    #: ``<id>`` of an ``x509:<id>`` ACL and what ``who_am_i()`` shows.
    dn: str
    #: The key file's password (None: the key is not encrypted).
    key_password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TestCertificates:
    """What :func:`make_test_certificates` wrote (see the module)."""

    __test__ = False  # not a pytest test class

    directory: Path
    #: The CA certificate (PEM): what a client trusts to verify the server.
    ca: Path
    #: The server's key and certificate, PKCS12 (``ssl.keyStore.location``).
    server_keystore: Path
    #: The CA certificate in a PKCS12 truststore (``ssl.trustStore.location``).
    server_truststore: Path
    #: The password of both stores (``ssl.keyStore.password``, ``ssl.trustStore.password``).
    store_password: str = field(repr=False)
    #: Client certificates signed by the CA, by name.
    clients: Mapping[str, ClientCertificate] = field(default_factory=dict)
    #: A self-signed client certificate, which the server does not trust.
    untrusted: ClientCertificate | None = None

    def server_config(self, client_auth: str = "need") -> dict[str, str]:
        """The ``zoo.cfg`` settings of a server with these stores (besides its ``secureClientPort``
        and the netty connection factory): ``ssl.clientAuth`` is ``client_auth``."""
        return {
            "ssl.keyStore.location": str(self.server_keystore),
            "ssl.keyStore.password": self.store_password,
            "ssl.keyStore.type": "PKCS12",
            "ssl.trustStore.location": str(self.server_truststore),
            "ssl.trustStore.password": self.store_password,
            "ssl.trustStore.type": "PKCS12",
            "ssl.clientAuth": client_auth,
        }


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        hint = "the openssl package" if name == "openssl" else "a Java runtime (Debian: default-jre-headless)"
        raise EmbeddedZooKeeperError(f"{name} is needed to make test certificates: install {hint}")
    return found


def _run(args: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
    try:
        subprocess.run(
            list(args),
            check=True,
            capture_output=True,
            timeout=_TIMEOUT,
            env={**os.environ, **env},
            cwd=cwd,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.CalledProcessError as e:
        # The tools' own error output names files and options, never the passwords (given in env).
        output = (e.stderr or b"").decode("utf-8", "replace").strip()[-2000:]
        raise EmbeddedZooKeeperError(f"{Path(args[0]).name} {args[1]} failed: {output}") from None
    except subprocess.TimeoutExpired:
        raise EmbeddedZooKeeperError(f"{Path(args[0]).name} {args[1]} took over {_TIMEOUT} s") from None


def _subject(common_name: str) -> str:
    return f"/O={ORGANIZATION}/CN={common_name}"


def _dn(common_name: str) -> str:
    return f"CN={common_name},O={ORGANIZATION}"


def _check_name(name: str) -> None:
    if not name or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise ValueError(f"certificate name {name!r}: ASCII letters, digits, '-', '_' and '.' only")


def make_test_certificates(
    directory: Path | str,
    *,
    clients: Sequence[str] = ("alice", "bob"),
    hosts: Sequence[str] = ("localhost", "127.0.0.1"),
    days: int = 2,
    key_password: str | None = None,
) -> TestCertificates:
    """Write a CA, a server keystore and truststore and client certificates into ``directory`` (which
    must exist), valid ``days`` days; see the module.

    ``clients``: the common names of the CA-signed client certificates.  ``hosts``: the names and
    addresses in the server certificate's subjectAltName (clients check them).  ``key_password``: the
    client keys are encrypted with it (None: not encrypted).

    Raises:
        EmbeddedZooKeeperError: ``openssl`` or ``keytool`` is missing or failed.
        ValueError: a client name that cannot be a plain common name.
    """
    for name in [*clients, "ca", "server", "untrusted"]:
        _check_name(name)
    if len(set(clients)) != len(clients) or {"ca", "server", "untrusted"} & set(clients):
        raise ValueError("client names must be distinct and not 'ca', 'server' or 'untrusted'")
    openssl, keytool = _tool("openssl"), _tool("keytool")
    d = Path(directory).resolve()
    store_password = secrets.token_hex(16)
    env = {_STORE_PASSWORD_VAR: store_password}
    if key_password is not None:
        env[_KEY_PASSWORD_VAR] = key_password
    old_umask = os.umask(0o077)  # keys and stores readable by their owner only
    try:
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _run(
            [
                openssl,
                "req",
                "-x509",
                *ec,
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                str(days),
                "-subj",
                _subject("zkwire test CA"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
            env,
            d,
        )

        def signed(name: str, common_name: str, extensions: str) -> None:
            req = [openssl, "req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr"]
            _run([*req, "-subj", _subject(common_name)], env, d)
            (d / f"{name}.ext").write_text(extensions)
            _run(
                [
                    openssl,
                    "x509",
                    "-req",
                    "-in",
                    f"{name}.csr",
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-set_serial",
                    str(secrets.randbits(63)),
                    "-days",
                    str(days),
                    "-extfile",
                    f"{name}.ext",
                    "-out",
                    f"{name}.pem",
                ],
                env,
                d,
            )
            (d / f"{name}.csr").unlink()
            (d / f"{name}.ext").unlink()

        alt_names = ",".join(f"IP:{h}" if is_ip_address(h) else f"DNS:{h}" for h in hosts)
        signed(
            "server",
            hosts[0] if hosts else "localhost",
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\n"
            "extendedKeyUsage=serverAuth,clientAuth\n" + (f"subjectAltName={alt_names}\n" if alt_names else ""),
        )
        _run(
            [
                openssl,
                "pkcs12",
                "-export",
                "-in",
                "server.pem",
                "-inkey",
                "server.key",
                "-certfile",
                "ca.pem",
                "-name",
                "server",
                "-out",
                "server.p12",
                "-passout",
                f"env:{_STORE_PASSWORD_VAR}",
            ],
            env,
            d,
        )
        _run(
            [
                keytool,
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "ca.pem",
                "-keystore",
                "truststore.p12",
                "-storetype",
                "PKCS12",
                "-storepass:env",
                _STORE_PASSWORD_VAR,
            ],
            env,
            d,
        )
        client_ext = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
        made: dict[str, ClientCertificate] = {}
        for name in clients:
            signed(name, name, client_ext)
            made[name] = _client(openssl, d, name, env, key_password)
        _run(
            [
                openssl,
                "req",
                "-x509",
                *ec,
                "-keyout",
                "untrusted.key",
                "-out",
                "untrusted.pem",
                "-days",
                str(days),
                "-subj",
                _subject("untrusted"),
                "-addext",
                "extendedKeyUsage=clientAuth",
            ],
            env,
            d,
        )
        untrusted = _client(openssl, d, "untrusted", env, key_password)
        for leftover in ("server.key", "server.pem", "ca.srl"):
            (d / leftover).unlink(missing_ok=True)
    finally:
        os.umask(old_umask)
    return TestCertificates(
        directory=d,
        ca=d / "ca.pem",
        server_keystore=d / "server.p12",
        server_truststore=d / "truststore.p12",
        store_password=store_password,
        clients=made,
        untrusted=untrusted,
    )


def _client(openssl: str, d: Path, name: str, env: Mapping[str, str], key_password: str | None) -> ClientCertificate:
    if key_password is not None:
        _run(
            [
                openssl,
                "pkey",
                "-in",
                f"{name}.key",
                "-out",
                f"{name}.key.enc",
                "-aes256",
                "-passout",
                f"env:{_KEY_PASSWORD_VAR}",
            ],
            env,
            d,
        )
        os.replace(d / f"{name}.key.enc", d / f"{name}.key")
    return ClientCertificate(d / f"{name}.pem", d / f"{name}.key", _dn(name), key_password)
