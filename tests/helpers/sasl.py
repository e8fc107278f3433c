"""A real ZooKeeper server that requires SASL (DIGEST-MD5 users from a JAAS file), as a module-scoped
fixture for the SASL tests of the client, the tools and the peers; and the lock-across-a-sever scenario
the DIGEST-MD5 and the Kerberos tests share; a mechanism that records its tokens, for the secrets tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import zklock
import zkwire
from helpers.faultproxy import FaultProxy
from zkwire.sasl import DigestMD5
from zkwire.sasl.mechanism import SaslExchange, SaslMechanism
from zkwire.testing.embedded import EmbeddedEnsemble, EmbeddedZooKeeper
from zkwire.testing.secured import digest_login_section, sasl_server_options, write_jaas

__all__ = [
    "SASL_USERS",
    "RecordingExchange",
    "RecordingMechanism",
    "SaslServer",
    "lock_lost_then_granted_again",
    "sasl_ensemble",
    "sasl_server",
]

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


async def lock_lost_then_granted_again(zk: zkwire.Client, proxy: FaultProxy, parent: str) -> None:
    """A :class:`zklock.Mutex` under ``parent`` held by ``zk`` (connected through ``proxy``) when the
    proxy severs the connection: lost; then granted again in the same session once it has reconnected
    (SASL redone: the server refuses a connection that has not), with a newer fencing token."""
    await zk.ensure_path(parent)
    path = f"{parent}/mutex"
    with pytest.raises(zklock.LockLostError):
        async with zklock.Mutex(zk, path) as lease:
            first = lease.fencing_token
            await zk.set_data(parent, b"fenced", version=-1)
            await proxy.sever()
            await lease.wait_lost()
    session = zk.session_id
    async with zklock.Mutex(zk, path) as again:
        assert zk.session_id == session and again.fencing_token > first
        assert (await zk.get_data(again.node))[1].ephemeral_owner == session


class RecordingMechanism:
    """A SASL mechanism that keeps every token of every exchange, both ways (copies, in order): what
    the secrets tests look for."""

    def __init__(self, inner: SaslMechanism) -> None:
        self.inner = inner
        self.name = inner.name
        self.blocking = inner.blocking
        self.tokens: list[bytes] = []

    def identity(self) -> str:
        return self.inner.identity()

    def exchange(self, host: str) -> RecordingExchange:
        return RecordingExchange(self.inner.exchange(host), self.tokens)


class RecordingExchange:
    def __init__(self, inner: SaslExchange, tokens: list[bytes]) -> None:
        self.inner = inner
        self.tokens = tokens

    def initial_response(self) -> bytes:
        return self._keep(self.inner.initial_response())

    def evaluate(self, challenge: bytes) -> bytes | None:
        self._keep(challenge)
        token = self.inner.evaluate(challenge)
        return None if token is None else self._keep(token)

    def _keep(self, token: bytes) -> bytes:
        self.tokens.append(bytes(bytearray(token)))
        return token

    @property
    def complete(self) -> bool:
        return self.inner.complete

    def __repr__(self) -> str:
        return repr(self.inner)
