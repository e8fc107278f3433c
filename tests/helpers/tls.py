"""Real ZooKeeper servers with TLS on a secure client port, as module-scoped fixtures, on certificates
made by :mod:`zkwire.testing.certs` (a test CA, valid two days):

* ``tls_server``: TLS without client certificates (``ssl.clientAuth=none``): ``(server, ca.pem)``;
* ``mtls_server``: mutual TLS (``ssl.clientAuth=need``; clients identified by the ``x509`` scheme),
  TLS 1.2 as the 3.8 server negotiates by default: a refused client certificate is alerted during
  the handshake;
* ``mtls13_server``: the same on TLS 1.3 only: the server's refusal of a client certificate reaches
  the client on its first read after the handshake.

The two mutual-TLS fixtures give an :class:`MtlsServer`: the server and the certificates.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkwire.testing.certs import TLS13_ONLY, TestCertificates, make_test_certificates
from zkwire.testing.embedded import EmbeddedZooKeeper

__all__ = ["KEY_PASSWORD", "MtlsServer", "mtls13_server", "mtls_server", "tls_certs", "tls_server"]

#: The password of the client keys of :func:`tls_certs` (encrypted ones, as users keep them).
KEY_PASSWORD = "zkwire-test-key-pass"


@dataclass(frozen=True)
class MtlsServer:
    server: EmbeddedZooKeeper
    certs: TestCertificates

    @property
    def hosts(self) -> str:
        return self.server.secure_hosts


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    if shutil.which("keytool") is None or shutil.which("openssl") is None:
        pytest.skip("openssl and keytool (a JDK) are needed to make test certificates")
    return make_test_certificates(tmp_path_factory.mktemp("certs"), key_password=KEY_PASSWORD)


@contextmanager
def _running(server: EmbeddedZooKeeper) -> Iterator[EmbeddedZooKeeper]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tls_server(tls_certs: TestCertificates) -> Iterator[tuple[EmbeddedZooKeeper, Path]]:
    with _running(EmbeddedZooKeeper(certificates=tls_certs, tls_client_auth="none")) as server:
        yield server, tls_certs.ca


@pytest.fixture(scope="module")
def mtls_server(tls_certs: TestCertificates) -> Iterator[MtlsServer]:
    with _running(EmbeddedZooKeeper(certificates=tls_certs)) as server:
        yield MtlsServer(server, tls_certs)


@pytest.fixture(scope="module")
def mtls13_server(tls_certs: TestCertificates) -> Iterator[MtlsServer]:
    with _running(EmbeddedZooKeeper(certificates=tls_certs, extra_config=TLS13_ONLY)) as server:
        yield MtlsServer(server, tls_certs)
