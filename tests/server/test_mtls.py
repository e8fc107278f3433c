"""Mutual TLS against real servers requiring a client certificate (``ssl.clientAuth=need``), where the
``x509`` scheme identifies each client by its certificate's subject: the identity, ``x509:`` ACLs, the
session across a restart and a severed connection (the identity comes again with the new handshake),
and the typed errors of a certificate refused by either side, on TLS 1.2 (refused during the handshake)
and TLS 1.3 (refused on the first read after it), while a host that is merely down is retried."""

from __future__ import annotations

import ssl

import pytest
import trio
from helpers.faultproxy import open_fault_proxy
from helpers.sasl import lock_lost_then_granted_again
from helpers.tls import KEY_PASSWORD, MtlsServer

import zkwire
from zkwire import ACL, Id, Perm, SessionState
from zkwire.testing.base import free_port
from zkwire.testing.certs import ClientCertificate, TestCertificates
from zkwire.testing.embedded import EmbeddedEnsemble

LIMIT = 20


def context(server: MtlsServer, client: ClientCertificate | None, *, ca: bool = True) -> ssl.SSLContext:
    return zkwire.tls_context(
        ca=server.certs.ca if ca else None,
        cert=None if client is None else client.cert,
        key=None if client is None else client.key,
        key_password=None if client is None else KEY_PASSWORD,
    )


def alice(server: MtlsServer) -> ssl.SSLContext:
    return context(server, server.certs.clients["alice"])


def only(dn: str) -> list[ACL]:
    return [ACL(Perm.ALL, Id("x509", dn))]


def _upstream(hosts: str) -> tuple[str, int]:
    host, _, port = hosts.rpartition(":")
    return host, int(port)


def down_host() -> str:
    return f"127.0.0.1:{free_port()}"  # nothing listens there: connection refused


@pytest.fixture(params=["tls1.2", "tls1.3"])
def any_mtls(request: pytest.FixtureRequest) -> MtlsServer:
    name = "mtls_server" if request.param == "tls1.2" else "mtls13_server"
    server: MtlsServer = request.getfixturevalue(name)
    return server


async def test_who_am_i_is_the_certificate_subject(any_mtls: MtlsServer) -> None:
    certs = any_mtls.certs
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(any_mtls.hosts, ssl_context=alice(any_mtls)) as zk:
            ids = await zk.who_am_i()
    assert ("x509", "CN=alice,O=zkwire test") in ids
    assert certs.clients["alice"].dn == "CN=alice,O=zkwire test"
    assert [scheme for scheme, _ in ids].count("x509") == 1


async def test_an_x509_acl_admits_its_subject_and_refuses_another(mtls_server: MtlsServer) -> None:
    certs = mtls_server.certs
    alice_dn = certs.clients["alice"].dn
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(mtls_server.hosts, ssl_context=alice(mtls_server)) as zk:
            await zk.ensure_path("/x509-acl")
            if await zk.exists("/x509-acl/node"):
                await zk.delete("/x509-acl/node")
            await zk.create("/x509-acl/node", b"for alice", acl=only(alice_dn))
            assert (await zk.get_acl("/x509-acl/node"))[0] == only(alice_dn)
            await zk.set_data("/x509-acl/node", b"alice wrote")
            assert (await zk.get_data("/x509-acl/node"))[0] == b"alice wrote"
            bob_context = context(mtls_server, certs.clients["bob"])
            async with zkwire.open_client(mtls_server.hosts, ssl_context=bob_context) as bob:
                assert ("x509", "CN=bob,O=zkwire test") in await bob.who_am_i()
                with pytest.raises(zkwire.NoAuthError):
                    await bob.get_data("/x509-acl/node")
                with pytest.raises(zkwire.NoAuthError):
                    await bob.set_data("/x509-acl/node", b"bob was here")
            assert (await zk.get_data("/x509-acl/node"))[0] == b"alice wrote"


async def test_the_session_survives_a_sever_with_the_identity_back(mtls_server: MtlsServer) -> None:
    dn = mtls_server.certs.clients["alice"].dn
    with trio.fail_after(LIMIT):
        async with open_fault_proxy(*_upstream(mtls_server.hosts)) as proxy:  # TLS passes through it
            async with zkwire.open_client(proxy.hosts, ssl_context=alice(mtls_server), session_timeout=8) as zk:
                session = zk.session_id
                await zk.ensure_path("/x509-sever")
                node = await zk.create("/x509-sever/e-", ephemeral=True, sequential=True, acl=only(dn))
                _, _, watch = await zk.get_data(node, watch=True)
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert zk.session_id == session
                # The identity belongs to the connection: the new TLS handshake brought it again.
                assert ("x509", dn) in await zk.who_am_i()
                _, stat = await zk.get_data(node)  # readable only by that identity
                assert stat.ephemeral_owner == session
                async with zkwire.open_client(mtls_server.hosts, ssl_context=alice(mtls_server)) as other:
                    await other.set_data(node, b"changed")
                assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_the_session_survives_a_server_restart_with_the_identity_back(mtls_server: MtlsServer) -> None:
    dn = mtls_server.certs.clients["alice"].dn
    with trio.fail_after(60):
        async with zkwire.open_client(mtls_server.hosts, ssl_context=alice(mtls_server), session_timeout=20) as zk:
            session = zk.session_id
            await zk.ensure_path("/x509-restart")
            node = await zk.create("/x509-restart/e-", ephemeral=True, sequential=True, acl=only(dn))
            _, _, watch = await zk.get_data(node, watch=True)
            await trio.to_thread.run_sync(mtls_server.server.restart)
            await zk.wait_connected()
            assert zk.session_id == session
            assert ("x509", dn) in await zk.who_am_i()
            assert (await zk.get_data(node))[1].ephemeral_owner == session
            await zk.set_data(node, b"after the restart")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


@pytest.mark.parametrize("which", ["none", "untrusted"])
async def test_a_client_certificate_the_server_refuses_is_a_typed_error(any_mtls: MtlsServer, which: str) -> None:
    client = None if which == "none" else any_mtls.certs.untrusted
    hosts = f"{down_host()},{any_mtls.hosts},{down_host()}"  # down hosts beside it change nothing
    started = trio.current_time()
    with trio.fail_after(LIMIT), pytest.raises(zkwire.ClientCertificateRejectedError) as caught:
        async with zkwire.open_client(hosts, ssl_context=context(any_mtls, client)):
            raise AssertionError("must not connect")
    assert trio.current_time() - started < 5  # one pass over the hosts, not the deadline
    error = caught.value
    assert isinstance(error, zkwire.TLSError) and isinstance(error, zkwire.AuthFailedError)
    assert error.host == any_mtls.hosts and any_mtls.hosts in str(error)
    assert ("bad certificate" if which == "none" else "certificate unknown") in str(error)
    assert KEY_PASSWORD not in str(error) and "PRIVATE" not in str(error)


async def test_a_server_certificate_the_client_does_not_trust_is_a_typed_error(any_mtls: MtlsServer) -> None:
    hosts = f"{any_mtls.hosts},{down_host()}"
    started = trio.current_time()
    with trio.fail_after(LIMIT), pytest.raises(zkwire.ServerCertificateError) as caught:
        # The system's CAs only: the test CA is not among them.
        async with zkwire.open_client(hosts, ssl_context=context(any_mtls, any_mtls.certs.clients["alice"], ca=False)):
            raise AssertionError("must not connect")
    assert trio.current_time() - started < 5
    assert caught.value.host == any_mtls.hosts
    assert "certificate" in str(caught.value) and any_mtls.hosts in str(caught.value)


async def test_the_typed_error_with_wait_connected_false_ends_the_session(mtls_server: MtlsServer) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(
            mtls_server.hosts, ssl_context=context(mtls_server, None), wait_connected=False
        ) as zk:
            with pytest.raises(zkwire.ClientCertificateRejectedError):
                await zk.wait_connected()
            assert zk.state is SessionState.AUTH_FAILED
            with pytest.raises(zkwire.ClientCertificateRejectedError):
                await zk.exists("/")


async def test_a_host_that_is_merely_down_is_retried(mtls_server: MtlsServer) -> None:
    # Down hosts only: retried until the caller's deadline, as before.
    with pytest.raises(trio.TooSlowError), trio.fail_after(1.5):
        async with zkwire.open_client(f"{down_host()},{down_host()}", ssl_context=alice(mtls_server)):
            raise AssertionError("must not connect")
    # A down host beside a good one: the good one is reached whatever the order.
    for _ in range(3):
        with trio.fail_after(LIMIT):
            async with zkwire.open_client(f"{down_host()},{mtls_server.hosts}", ssl_context=alice(mtls_server)) as zk:
                assert ("x509", mtls_server.certs.clients["alice"].dn) in await zk.who_am_i()


async def test_a_tls_client_at_the_plain_port_is_retried(mtls_server: MtlsServer) -> None:
    # The plain (non-TLS) port is another server as far as certificates go: a TLS client sent there
    # gets no alert, just a closed connection -- that is retried, never taken for a refused certificate.
    plain = f"{mtls_server.server.host}:{mtls_server.server.port}"
    with pytest.raises(trio.TooSlowError), trio.fail_after(1.5):
        async with zkwire.open_client(plain, ssl_context=alice(mtls_server)):
            raise AssertionError("must not connect")


@pytest.mark.ensemble
@pytest.mark.usefixtures("local_zookeeper")
async def test_the_identity_follows_the_session_to_another_member(tls_certs: TestCertificates) -> None:
    alice = tls_certs.clients["alice"]
    ensemble = EmbeddedEnsemble(certificates=tls_certs)
    await trio.to_thread.run_sync(ensemble.start)
    try:
        ports = {int(h.rpartition(":")[2]): i for i, h in enumerate(ensemble.secure_hosts.split(","))}
        context = zkwire.tls_context(ca=tls_certs.ca, cert=alice.cert, key=alice.key, key_password=KEY_PASSWORD)
        with trio.fail_after(90):
            async with zkwire.open_client(ensemble.secure_hosts, ssl_context=context, session_timeout=20) as zk:
                session = zk.session_id
                await zk.ensure_path("/x509-failover")
                node = await zk.create("/x509-failover/e-", ephemeral=True, sequential=True, acl=only(alice.dn))
                _, _, watch = await zk.get_data(node, watch=True)
                first = zk.connected_host
                assert first is not None
                await trio.to_thread.run_sync(ensemble.stop_member, ports[first.port])
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert zk.session_id == session and zk.connected_host is not None and zk.connected_host != first
                assert ("x509", alice.dn) in await zk.who_am_i()
                assert (await zk.get_data(node))[1].ephemeral_owner == session
                await zk.set_data(node, b"on another member")
                assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED
    finally:
        await trio.to_thread.run_sync(ensemble.stop)


async def test_a_lock_across_a_sever_is_lost_then_granted_again_in_the_same_session(mtls_server: MtlsServer) -> None:
    with trio.fail_after(40):
        async with open_fault_proxy(*_upstream(mtls_server.hosts)) as proxy:  # TLS passes through it
            async with zkwire.open_client(proxy.hosts, ssl_context=alice(mtls_server), session_timeout=8) as zk:
                await lock_lost_then_granted_again(zk, proxy, "/mtls-lock")
                assert ("x509", mtls_server.certs.clients["alice"].dn) in await zk.who_am_i()
