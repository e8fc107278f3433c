"""The peers on the same SASL-requiring server: kazoo (through pure-sasl) and the Java client (JAAS
``Client`` section, ZooKeeper's own command line) authenticate as the same users and see the same
identities and ACLs as zkwire."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from helpers.sasl import SASL_USERS, SaslServer

import zkwire
from zkwire import ACL, Id, Perm
from zkwire.testing.embedded import find_java, server_classpath
from zkwire.testing.secured import jaas_value, write_jaas

kazoo_client = pytest.importorskip("kazoo.client")
kazoo_exceptions = pytest.importorskip("kazoo.exceptions")
pytest.importorskip("puresasl")

T = TypeVar("T")
LIMIT = 30


async def kz(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs))


def acl_for(user: str) -> list[ACL]:
    return [ACL(Perm.ALL, Id("sasl", user))]


@pytest.fixture
def kazoo_as() -> Iterator[Callable[[str, str], Any]]:
    clients: list[Any] = []

    def connect(hosts: str, user: str) -> Any:
        options = {"mechanism": "DIGEST-MD5", "username": user, "password": SASL_USERS[user]}
        client = kazoo_client.KazooClient(hosts=hosts, timeout=10, sasl_options=options)
        clients.append(client)
        client.start(timeout=10)
        return client

    yield connect
    for client in clients:
        client.stop()
        client.close()


def java_cli(hosts: str, user: str, directory: Path, *command: str) -> str:
    """ZooKeeper's own command line (the Java client) authenticating as ``user``: its output."""
    body = (
        "org.apache.zookeeper.server.auth.DigestLoginModule required "
        f"username={jaas_value(user)} password={jaas_value(SASL_USERS[user])};"
    )
    jaas = write_jaas(directory / f"client-{user}.conf", {"Client": body})
    args = [
        find_java(),
        "-cp",
        ":".join(server_classpath()),
        f"-Djava.security.auth.login.config={jaas}",
        "org.apache.zookeeper.ZooKeeperMain",
        "-server",
        hosts,
        *command,
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    return done.stdout + done.stderr


async def test_kazoo_and_zkwire_share_sasl_identities_and_acls(
    sasl_server: SaslServer, kazoo_as: Callable[[str, str], Any]
) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice")) as alice:
            await alice.ensure_path("/sasl-peers")
            ours = await alice.create("/sasl-peers/k-", b"from zkwire", acl=acl_for("alice"), sequential=True)
            kazoo_alice = await kz(kazoo_as, sasl_server.hosts, "alice")
            data, _ = await kz(kazoo_alice.get, ours)
            assert data == b"from zkwire"
            theirs = await kz(
                kazoo_alice.create, "/sasl-peers/k-", b"from kazoo", acl=[_kazoo_acl("alice")], sequence=True
            )
            assert (await alice.get_data(theirs))[0] == b"from kazoo"
            assert (await alice.get_acl(theirs))[0] == acl_for("alice")
            kazoo_bob = await kz(kazoo_as, sasl_server.hosts, "bob")
            with pytest.raises(kazoo_exceptions.NoAuthError):
                await kz(kazoo_bob.get, ours)
            async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("bob")) as bob:
                with pytest.raises(zkwire.NoAuthError):
                    await bob.get_data(theirs)


def _kazoo_acl(user: str) -> Any:
    from kazoo.security import make_acl

    return make_acl("sasl", user, all=True)


async def test_the_java_client_sees_the_identity_and_acls_zkwire_sees(sasl_server: SaslServer, tmp_path: Path) -> None:
    with trio.fail_after(120):
        async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice")) as alice:
            assert ("sasl", "alice") in await alice.who_am_i()
            await alice.ensure_path("/sasl-peers")
            node = await alice.create("/sasl-peers/j-", b"for alice only", acl=acl_for("alice"), sequential=True)
            out = await trio.to_thread.run_sync(java_cli, sasl_server.hosts, "alice", tmp_path, "whoami")
            assert "sasl: alice" in out
            out = await trio.to_thread.run_sync(java_cli, sasl_server.hosts, "alice", tmp_path, "get", node)
            assert "for alice only" in out
            out = await trio.to_thread.run_sync(java_cli, sasl_server.hosts, "alice", tmp_path, "getAcl", node)
            assert "'sasl,'alice" in out
            out = await trio.to_thread.run_sync(java_cli, sasl_server.hosts, "bob", tmp_path, "get", node)
            assert "for alice only" not in out and "Insufficient permission" in out
