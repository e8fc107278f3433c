"""A real ZooKeeper server with TLS on its client port (keytool-made certificate, valid two days), as a
module-scoped fixture for the TLS tests of the client and of the tracer."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkwire.testing.embedded import EmbeddedZooKeeper

__all__ = ["PASSWORD", "tls_server"]

PASSWORD = "zkwire-test-pass"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedZooKeeper, Path]]:
    if shutil.which("keytool") is None:
        pytest.skip("keytool (a JDK) is not installed")
    d = tmp_path_factory.mktemp("tls")
    keystore, truststore, cert = d / "server.p12", d / "trust.p12", d / "server.pem"
    run = lambda *args: subprocess.run(args, check=True, capture_output=True, timeout=60)  # noqa: E731
    run(
        "keytool",
        "-genkeypair",
        "-keystore",
        str(keystore),
        "-storetype",
        "PKCS12",
        "-alias",
        "zk",
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-dname",
        "CN=localhost",
        "-ext",
        "SAN=ip:127.0.0.1,dns:localhost",
        "-storepass",
        PASSWORD,
        "-keypass",
        PASSWORD,
        "-validity",
        "2",
    )
    pem = run("keytool", "-exportcert", "-rfc", "-keystore", str(keystore), "-storepass", PASSWORD, "-alias", "zk")
    cert.write_bytes(pem.stdout)
    run(
        "keytool",
        "-importcert",
        "-noprompt",
        "-keystore",
        str(truststore),
        "-storetype",
        "PKCS12",
        "-storepass",
        PASSWORD,
        "-alias",
        "ca",
        "-file",
        str(cert),
    )
    server = EmbeddedZooKeeper(
        tls_keystore=str(keystore),
        tls_keystore_password=PASSWORD,
        tls_truststore=str(truststore),
        tls_truststore_password=PASSWORD,
    )
    server.start()
    try:
        yield server, cert
    finally:
        server.stop()
