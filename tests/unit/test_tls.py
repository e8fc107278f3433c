"""The client's TLS pieces without a server: zkwire.tls_context (files, key passwords, the errors naming
the option and file, never the password) and the classification of a failed TLS connection
(zkwire.client.connectlog.tls_failure): a certificate refused by either side, or anything else."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import pytest
import trio

import zkwire
from zkwire.client.connectlog import tls_failure
from zkwire.testing.certs import TestCertificates, make_test_certificates

PASSWORD = "unit-key-password"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    if shutil.which("openssl") is None or shutil.which("keytool") is None:
        pytest.skip("openssl and keytool are needed to make test certificates")
    return make_test_certificates(tmp_path_factory.mktemp("certs"), key_password=PASSWORD)


def test_the_files_made(certs: TestCertificates) -> None:
    alice = certs.clients["alice"]
    assert alice.dn == "CN=alice,O=zkwire test" and certs.clients["bob"].dn == "CN=bob,O=zkwire test"
    assert certs.untrusted is not None and certs.untrusted.dn == "CN=untrusted,O=zkwire test"
    for path in (certs.ca, certs.server_keystore, certs.server_truststore, alice.cert, alice.key):
        assert path.is_file()
    assert alice.key.stat().st_mode & 0o077 == 0  # keys readable by their owner only
    assert b"ENCRYPTED" in alice.key.read_bytes()
    assert certs.store_password not in repr(certs) and PASSWORD not in repr(alice)
    config = certs.server_config()
    assert config["ssl.clientAuth"] == "need" and config["ssl.keyStore.type"] == "PKCS12"


def test_a_context_with_a_client_certificate(certs: TestCertificates) -> None:
    alice = certs.clients["alice"]
    context = zkwire.tls_context(ca=certs.ca, cert=alice.cert, key=alice.key, key_password=PASSWORD)
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert zkwire.tls_context(ca=str(certs.ca), cert=alice.cert, key=alice.key, key_password=lambda: PASSWORD)
    assert zkwire.tls_context(ca=certs.ca, cert=alice.cert, key=alice.key, key_password=PASSWORD.encode())
    assert not zkwire.tls_context(ca=certs.ca, check_hostname=False).check_hostname


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("wrong password", "key=.*alice.key.*: cannot decrypt the key: wrong password"),
        ("no password", "key=.*alice.key.*: the key is encrypted, and no password was given"),
        ("other key", "key=.*bob.key.*: the key does not match the certificate"),
        ("key as cert", "cert=.*alice.key.*: not a PEM certificate"),
        ("missing", "cert=.*nowhere.pem.*: no such file"),
        ("key alone", r"a client key \(key=\) needs its certificate"),
        ("ca", "ca=.*alice.key.*: cannot load CA certificates"),
    ],
)
def test_bad_files_name_the_option_and_the_file_never_the_password(
    certs: TestCertificates, kind: str, message: str
) -> None:
    alice, bob = certs.clients["alice"], certs.clients["bob"]
    calls = {
        "wrong password": lambda: zkwire.tls_context(cert=alice.cert, key=alice.key, key_password="not-" + PASSWORD),
        "no password": lambda: zkwire.tls_context(cert=alice.cert, key=alice.key),
        "other key": lambda: zkwire.tls_context(cert=alice.cert, key=bob.key, key_password=PASSWORD),
        "key as cert": lambda: zkwire.tls_context(cert=alice.key, key=alice.key, key_password=PASSWORD),
        "missing": lambda: zkwire.tls_context(cert=Path("/nowhere.pem"), key=alice.key),
        "key alone": lambda: zkwire.tls_context(key=alice.key),
        "ca": lambda: zkwire.tls_context(ca=alice.key),
    }
    with pytest.raises(zkwire.InvalidArgumentError, match=message) as caught:
        calls[kind]()
    assert PASSWORD not in str(caught.value)


def _ssl_error(reason: str, cls: type[ssl.SSLError] = ssl.SSLError) -> ssl.SSLError:
    error = cls(1, f"[SSL: {reason}] {reason.lower()}")
    error.reason = reason
    return error


def test_a_server_certificate_not_verified_is_the_servers_fault() -> None:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "self-signed certificate in certificate chain"
    error.reason = "CERTIFICATE_VERIFY_FAILED"
    wrapped = trio.BrokenResourceError()
    wrapped.__cause__ = error  # how trio's SSLStream reports it
    found = tls_failure(wrapped, "zk1:2281")
    assert type(found) is zkwire.ServerCertificateError and found.host == "zk1:2281"
    assert str(found) == (
        "The server's TLS certificate is not trusted (zk1:2281: self-signed certificate in certificate chain)"
    )


@pytest.mark.parametrize(
    "reason",
    ["SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV13_ALERT_CERTIFICATE_REQUIRED"],
)
def test_an_alert_about_the_clients_certificate(reason: str) -> None:
    found = tls_failure(_ssl_error(reason), "zk1:2281")
    assert type(found) is zkwire.ClientCertificateRejectedError
    assert str(found).startswith("The server refused the client's TLS certificate (zk1:2281: the server answered ")


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionResetError(104, "Connection reset by peer"),
        trio.BrokenResourceError(),
        _ssl_error("UNEXPECTED_EOF_WHILE_READING", ssl.SSLEOFError),  # closed without an alert
        _ssl_error("WRONG_VERSION_NUMBER"),  # not a TLS server
        _ssl_error("TLSV1_ALERT_PROTOCOL_VERSION"),
    ],
    ids=repr,
)
def test_anything_else_is_retried(error: Exception) -> None:
    assert tls_failure(error, "zk1:2281") is None


def test_a_tls_error_copies_with_its_host() -> None:
    error = zkwire.ClientCertificateRejectedError(detail="zk1:2281: the server answered x", host="zk1:2281")
    copy = zkwire.copy_error(error)
    assert type(copy) is type(error) and str(copy) == str(error) and copy.host == "zk1:2281"
    with_path = zkwire.copy_error(error, "/a")
    assert with_path.host == "zk1:2281" and with_path.path == "/a"
