"""A Kerberos realm (a real MIT KDC) for the session, and a real ZooKeeper server that requires GSSAPI.

Nothing is skipped in CI: where the KDC's programs or the ``gssapi`` package are missing, the fixtures
fail with what to install when ``CI`` is set (as ``.ci/run`` sets it), and skip with that reason only on
a developer's machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkwire.testing.embedded import EmbeddedEnsemble, EmbeddedZooKeeper
from zkwire.testing.kerberos import KerberosPrincipal, KerberosRealm, kerberos_missing
from zkwire.testing.secured import kerberos_login_section, kerberos_server_options, write_jaas

__all__ = [
    "KerberosEnsemble",
    "KerberosServer",
    "KerberosSetup",
    "kerberos_ensemble",
    "kerberos_realm",
    "kerberos_server",
    "kerberos_unavailable",
]


def kerberos_unavailable(what: str) -> None:
    """Fail (in CI) or skip (elsewhere) because ``what`` is missing."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the Kerberos tests cannot run in CI: {what} (bash .ci/setup installs it)", pytrace=False)
    pytest.skip(f"Kerberos: {what}")


@dataclass
class KerberosSetup:
    """The session's realm: the server's principal and a client principal, ``alice``, whose ticket is
    in ``ccache`` (``FILE:...``); ``realm.activate()`` is in force for the whole session."""

    realm: KerberosRealm
    service: KerberosPrincipal
    alice: KerberosPrincipal
    ccache: str

    def fresh_ccache(self, name: str, *, lifetime: str | None = None) -> str:
        """A new ticket cache holding a new ticket of alice's (``lifetime``: a short one)."""
        return self.realm.kinit(self.alice, self.realm.directory / f"{name}.cc", lifetime=lifetime)

    def initial_tickets_issued(self, principal: KerberosPrincipal) -> int:
        """How many ticket-granting tickets the KDC has issued to ``principal`` (its log's AS_REQ lines)."""
        text = self.realm.kdc_log.read_text(errors="replace")
        return sum(
            1
            for line in text.splitlines()
            if "AS_REQ" in line and "ISSUE" in line and f" {principal.name} for krbtgt/" in line
        )


@pytest.fixture(scope="session")
def kerberos_realm() -> Iterator[KerberosSetup]:
    missing = kerberos_missing()
    if missing is not None:
        kerberos_unavailable(missing)
    try:
        import gssapi  # noqa: F401
    except ImportError:
        kerberos_unavailable("the gssapi package is missing (pip install -e '.[kerberos]')")
    with KerberosRealm() as realm, realm.activate():
        service = realm.service_principal("zookeeper", "localhost")
        alice = realm.user_principal("alice")
        yield KerberosSetup(realm, service, alice, realm.kinit(alice))


@dataclass
class KerberosServer:
    server: EmbeddedZooKeeper
    kerberos: KerberosSetup

    @property
    def hosts(self) -> str:
        """The connect string by name: ``localhost:<port>`` (the service principal is ``zookeeper/localhost``)."""
        return f"localhost:{self.server.port}"

    @property
    def principal(self) -> str:
        return self.kerberos.alice.name


def _jaas(directory: Path, service: KerberosPrincipal) -> Path:
    return write_jaas(directory / "jaas.conf", {"Server": kerberos_login_section(service.keytab, service.name)})


@pytest.fixture(scope="module")
def kerberos_server(
    kerberos_realm: KerberosSetup, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KerberosServer]:
    jaas = _jaas(tmp_path_factory.mktemp("kerberos"), kerberos_realm.service)
    server = EmbeddedZooKeeper(kerberos_server_options(jaas, kerberos_realm.realm.krb5_conf))
    server.start()
    try:
        yield KerberosServer(server, kerberos_realm)
    finally:
        server.stop()


@dataclass
class KerberosEnsemble:
    """Three members on loopback, each with the same JAAS ``Server`` section: they all run on this
    machine, so they share the principal ``zookeeper/localhost`` and its keytab."""

    ensemble: EmbeddedEnsemble
    kerberos: KerberosSetup

    @property
    def hosts(self) -> str:
        """Every member by name: ``localhost:<port>,...``."""
        return ",".join(f"localhost:{self.ensemble.member_port(i)}" for i in range(self.ensemble.size))

    @property
    def principal(self) -> str:
        return self.kerberos.alice.name


@pytest.fixture
def kerberos_ensemble(
    kerberos_realm: KerberosSetup, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KerberosEnsemble]:
    jaas = _jaas(tmp_path_factory.mktemp("kerberos-ensemble"), kerberos_realm.service)
    ensemble = EmbeddedEnsemble(options=kerberos_server_options(jaas, kerberos_realm.realm.krb5_conf))
    ensemble.start()
    try:
        yield KerberosEnsemble(ensemble, kerberos_realm)
    finally:
        ensemble.stop()
