"""TLS (certificates made by zkwire.testing.certs) and read-only mode, each against servers started here."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import zkwire
from zkwire import SessionState
from zkwire.testing.embedded import EmbeddedEnsemble, EmbeddedZooKeeper


async def test_tls_session(tls_server: tuple[EmbeddedZooKeeper, Path]) -> None:
    server, cert = tls_server
    context = ssl.create_default_context(cafile=str(cert))
    with trio.fail_after(20):
        async with zkwire.open_client(server.secure_hosts, ssl_context=context) as zk:
            await zk.create("/over-tls", b"secret data")
            data, stat = await zk.get_data("/over-tls")
            assert data == b"secret data" and stat.data_length == 11
            _, _, watch = await zk.get_data("/over-tls", watch=True)
            await zk.set_data("/over-tls", b"changed")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_tls_rejects_untrusted_certificate(tls_server: tuple[EmbeddedZooKeeper, Path]) -> None:
    server, _ = tls_server
    context = ssl.create_default_context()  # system CAs only: the test certificate is not trusted
    # A typed error after one pass over the hosts, not a silent retry until the deadline.
    with pytest.raises(zkwire.ServerCertificateError, match="not trusted") as caught, trio.fail_after(3):
        async with zkwire.open_client(server.secure_hosts, ssl_context=context):
            pass
    assert caught.value.host == server.secure_hosts


@pytest.fixture
def read_only_ensemble() -> Iterator[EmbeddedEnsemble]:
    # Local sessions let a read-only server create sessions (3.8.0 refuses otherwise).
    ensemble = EmbeddedEnsemble(
        read_only_mode=True,
        extra_config={"localSessionsEnabled": "true", "localSessionsUpgradingEnabled": "true"},
    )
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop()


@pytest.mark.ensemble
async def test_read_only_mode_and_back(read_only_ensemble: EmbeddedEnsemble) -> None:
    ensemble = read_only_ensemble
    async with zkwire.open_client(ensemble.hosts, session_timeout=10) as setup:
        await setup.create("/ro-data", b"kept")
    survivor = ensemble.leader_index()
    for i in range(ensemble.size):
        if i != survivor:
            await trio.to_thread.run_sync(ensemble.stop_member, i)
    with trio.fail_after(30):
        while (await trio.to_thread.run_sync(lambda: ensemble.four_letter_word(survivor, "isro"))).strip() != "ro":
            await trio.sleep(0.2)
    with trio.fail_after(30):
        async with zkwire.open_client(ensemble.hosts, session_timeout=10, allow_read_only=True) as zk:
            assert zk.state is SessionState.READ_ONLY
            data, _ = await zk.get_data("/ro-data")
            assert data == b"kept"
            with pytest.raises(zkwire.NotReadOnlyError):
                await zk.create("/ro-write")
            _, _, watch = await zk.get_data("/ro-data", watch=True)
            for i in range(ensemble.size):
                if i != survivor:
                    await trio.to_thread.run_sync(ensemble.start_member, i)
            await zk.wait_for_state(SessionState.CONNECTED)  # the prober found a read-write server
            await zk.create("/rw-again", ephemeral=True)
            async with zkwire.open_client(ensemble.hosts) as other:
                await other.set_data("/ro-data", b"changed")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED
