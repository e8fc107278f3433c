"""A real ZooKeeper server that requires SASL (DIGEST-MD5 users from a JAAS file), as a module-scoped
fixture for the SASL tests of the client, the tools and the peers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkwire.sasl import DigestMD5
from zkwire.testing.embedded import EmbeddedEnsemble, EmbeddedZooKeeper
from zkwire.testing.secured import digest_login_section, sasl_server_options, write_jaas

__all__ = ["SASL_USERS", "SaslServer", "sasl_ensemble", "sasl_server"]

#: Users of the test servers (name -> password); the passwords are what the secrets tests look for.
SASL_USERS = {"alice": "alice-pw-7f3a9c", "bob": "bob-pw-51e0d2"}


@dataclass
class SaslServer:
    server: EmbeddedZooKeeper
    jaas: Path

    @property
    def hosts(self) -> str:
        return self.server.hosts

    @staticmethod
    def mechanism(user: str = "alice", password: str | None = None) -> DigestMD5:
        return DigestMD5(user, SASL_USERS[user] if password is None else password)


def _jaas(directory: Path) -> Path:
    return write_jaas(directory / "jaas.conf", {"Server": digest_login_section(SASL_USERS)})


@pytest.fixture(scope="module")
def sasl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslServer]:
    jaas = _jaas(tmp_path_factory.mktemp("sasl"))
    server = EmbeddedZooKeeper(sasl_server_options(jaas))
    server.start()
    try:
        yield SaslServer(server, jaas)
    finally:
        server.stop()


@pytest.fixture
def sasl_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEnsemble]:
    jaas = _jaas(tmp_path_factory.mktemp("sasl-ensemble"))
    ensemble = EmbeddedEnsemble(options=sasl_server_options(jaas))
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop()
