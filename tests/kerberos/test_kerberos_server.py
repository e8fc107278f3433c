"""GSSAPI (Kerberos) against a real ZooKeeper 3.8 server that requires SASL, with the session's KDC:
the identity the server sees, ACLs, refusals, and the session across a sever, a restart and a member
failover with the exchange redone on each new connection, a lock held across a sever; the Java client
beside it sees the same identity."""

from __future__ import annotations

import subprocess
import time

import pytest
import trio
from helpers.faultproxy import open_fault_proxy
from helpers.kerberos import KerberosEnsemble, KerberosServer
from helpers.sasl import lock_lost_then_granted_again

import zkwire
from zkwire import ACL, Id, Perm, SessionState
from zkwire.sasl import Kerberos
from zkwire.testing.embedded import find_java, server_classpath
from zkwire.testing.secured import kerberos_login_section, write_jaas

LIMIT = 20


def only(principal: str) -> list[ACL]:
    return [ACL(Perm.ALL, Id("sasl", principal))]


async def test_a_kerberos_session_reads_and_writes_under_a_sasl_acl(kerberos_server: KerberosServer) -> None:
    principal = kerberos_server.principal
    realm = kerberos_server.kerberos.realm
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(
            kerberos_server.hosts, sasl=Kerberos(ccache=kerberos_server.kerberos.ccache)
        ) as zk:
            assert ("sasl", principal) in await zk.who_am_i()
            await zk.ensure_path("/krb-acl")
            await zk.create("/krb-acl/node", b"for alice", acl=only(principal))
            assert (await zk.get_data("/krb-acl/node"))[0] == b"for alice"
            assert (await zk.get_acl("/krb-acl/node"))[0] == only(principal)
            await zk.set_data("/krb-acl/node", b"alice again")
            carol = await trio.to_thread.run_sync(realm.user_principal, "carol")
            async with zkwire.open_client(
                kerberos_server.hosts, sasl=Kerberos(principal=carol.name, keytab=carol.keytab)
            ) as other:
                assert ("sasl", carol.name) in await other.who_am_i()
                with pytest.raises(zkwire.NoAuthError):
                    await other.get_data("/krb-acl/node")
                with pytest.raises(zkwire.NoAuthError):
                    await other.set_data("/krb-acl/node", b"carol was here")


async def test_without_sasl_the_first_request_names_the_option(kerberos_server: KerberosServer) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(kerberos_server.hosts) as zk:
            with pytest.raises(zkwire.SessionClosedRequireSaslAuthError) as caught:
                await zk.get_children("/")
            assert "sasl=" in str(caught.value)
            assert zk.state is SessionState.AUTH_FAILED


async def test_an_address_in_the_connect_string_needs_canonicalisation(kerberos_server: KerberosServer) -> None:
    by_address = f"127.0.0.1:{kerberos_server.server.port}"
    ccache = kerberos_server.kerberos.ccache
    with trio.fail_after(LIMIT):
        with pytest.raises(zkwire.AuthFailedError) as caught:
            async with zkwire.open_client(by_address, sasl=Kerberos(ccache=ccache)):
                raise AssertionError("must not connect")
        assert "zookeeper/127.0.0.1@ZKWIRE.TEST not found in Kerberos database" in str(caught.value)
        async with zkwire.open_client(by_address, sasl=Kerberos(ccache=ccache, canonicalize_host=True)) as zk:
            assert ("sasl", kerberos_server.principal) in await zk.who_am_i()


async def test_the_session_survives_a_sever_with_gssapi_redone(kerberos_server: KerberosServer) -> None:
    mechanism = Kerberos(ccache=kerberos_server.kerberos.ccache)
    principal = kerberos_server.principal
    with trio.fail_after(LIMIT):
        async with open_fault_proxy("127.0.0.1", kerberos_server.server.port) as proxy:
            hosts = f"localhost:{proxy.port}"  # by name: the proxy is zookeeper/localhost to the client
            async with zkwire.open_client(hosts, sasl=mechanism, session_timeout=8) as zk:
                session = zk.session_id
                await zk.ensure_path("/krb-sever")
                node = await zk.create("/krb-sever/e-", ephemeral=True, sequential=True, acl=only(principal))
                _, _, watch = await zk.get_data(node, watch=True)
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert zk.session_id == session and proxy.connections >= 1
                assert ("sasl", principal) in await zk.who_am_i()
                assert (await zk.get_data(node))[1].ephemeral_owner == session
                await zk.set_data(node, b"changed")
                assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_a_lock_across_a_sever_is_lost_then_granted_again_in_the_same_session(
    kerberos_server: KerberosServer,
) -> None:
    # The proxy is reached by address (127.0.0.1:<port>): the client names the server's principal
    # outright (server_principal=, as zookeeper.server.principal does for the Java client), so no host
    # name is looked at and each new connection asks for a ticket to zookeeper/localhost.
    setup = kerberos_server.kerberos
    mechanism = Kerberos(ccache=setup.ccache, server_principal=setup.service.name)
    with trio.fail_after(40):
        async with open_fault_proxy("127.0.0.1", kerberos_server.server.port) as proxy:
            assert proxy.hosts.startswith("127.0.0.1:")
            async with zkwire.open_client(proxy.hosts, sasl=mechanism, session_timeout=8) as zk:
                await lock_lost_then_granted_again(zk, proxy, "/krb-lock")
                assert ("sasl", kerberos_server.principal) in await zk.who_am_i()


async def test_the_session_survives_a_server_restart_with_gssapi_redone(kerberos_server: KerberosServer) -> None:
    principal = kerberos_server.principal
    with trio.fail_after(60):
        async with zkwire.open_client(
            kerberos_server.hosts, sasl=Kerberos(ccache=kerberos_server.kerberos.ccache), session_timeout=20
        ) as zk:
            session = zk.session_id
            await zk.ensure_path("/krb-restart")
            node = await zk.create("/krb-restart/e-", ephemeral=True, sequential=True, acl=only(principal))
            _, _, watch = await zk.get_data(node, watch=True)
            await trio.to_thread.run_sync(kerberos_server.server.restart)
            await zk.wait_connected()
            assert zk.session_id == session
            assert ("sasl", principal) in await zk.who_am_i()
            assert (await zk.get_data(node))[1].ephemeral_owner == session
            await zk.set_data(node, b"after the restart")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_an_expired_ticket_is_auth_failed_then_renewal_connects(kerberos_server: KerberosServer) -> None:
    setup = kerberos_server.kerberos
    ccache = await trio.to_thread.run_sync(lambda: setup.fresh_ccache("server-expiring", lifetime="2s"))
    mechanism = Kerberos(ccache=ccache)
    with trio.fail_after(LIMIT):
        await trio.sleep(3)
        with pytest.raises(zkwire.AuthFailedError) as caught:
            async with zkwire.open_client(kerberos_server.hosts, sasl=mechanism):
                raise AssertionError("must not connect")
        assert "expired" in str(caught.value) and "GSSAPI" in str(caught.value)
        await trio.to_thread.run_sync(lambda: setup.fresh_ccache("server-expiring"))  # kinit again
        async with zkwire.open_client(kerberos_server.hosts, sasl=mechanism) as zk:
            assert ("sasl", kerberos_server.principal) in await zk.who_am_i()


async def _until_expired(ccache: str) -> None:
    """Return once the ticket in ``ccache`` has expired (looked at every 0.2 s)."""
    probe = Kerberos(ccache=ccache)
    while True:
        try:
            await trio.to_thread.run_sync(probe.credentials)
        except zkwire.AuthFailedError:
            return
        await trio.sleep(0.2)


async def test_a_ticket_that_expires_during_the_session_ends_it_at_the_next_connection(
    kerberos_server: KerberosServer,
) -> None:
    # Ticket-cache mode: the client cannot get a new ticket by itself. The connection authenticated
    # while the ticket was valid stays so (the server does not look at it again); the next connection
    # cannot authenticate, and retrying would not help: AUTH_FAILED, saying to renew with kinit.
    setup = kerberos_server.kerberos
    ccache = await trio.to_thread.run_sync(lambda: setup.fresh_ccache("mid-session", lifetime="5s"))
    principal = kerberos_server.principal
    with trio.fail_after(LIMIT):
        async with open_fault_proxy("127.0.0.1", kerberos_server.server.port) as proxy:
            hosts = f"localhost:{proxy.port}"
            async with zkwire.open_client(hosts, sasl=Kerberos(ccache=ccache), session_timeout=20) as zk:
                await zk.ensure_path("/krb-expiring")
                await zk.create("/krb-expiring/e-", ephemeral=True, sequential=True, acl=only(principal))
                await _until_expired(ccache)
                assert ("sasl", principal) in await zk.who_am_i()  # the same connection: still authenticated
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                with pytest.raises(zkwire.AuthFailedError) as caught:
                    await zk.wait_connected()
                assert zk.state is SessionState.AUTH_FAILED
                text = str(caught.value)
                assert "GSSAPI" in text and "expired" in text and "kinit" in text, text
                with pytest.raises(zkwire.AuthFailedError, match="expired"):
                    await zk.exists("/")
        # What the message says to do: a new ticket in the same cache, and a new session connects.
        await trio.to_thread.run_sync(lambda: setup.fresh_ccache("mid-session"))
        async with zkwire.open_client(kerberos_server.hosts, sasl=Kerberos(ccache=ccache)) as zk:
            assert ("sasl", principal) in await zk.who_am_i()


async def test_with_a_keytab_a_ticket_that_expires_during_the_session_is_renewed(
    kerberos_server: KerberosServer,
) -> None:
    # Keytab mode: the mechanism gets a new ticket-granting ticket from the keytab when the next
    # connection needs one, and the session goes on (ephemeral node, watch, identity).
    setup = kerberos_server.kerberos
    dave = await trio.to_thread.run_sync(lambda: setup.realm.user_principal("dave", max_life="5s"))
    mechanism = Kerberos(principal=dave.name, keytab=dave.keytab)
    with trio.fail_after(LIMIT):
        async with open_fault_proxy("127.0.0.1", kerberos_server.server.port) as proxy:
            hosts = f"localhost:{proxy.port}"
            started = trio.current_time()
            async with zkwire.open_client(hosts, sasl=mechanism, session_timeout=20) as zk:
                session = zk.session_id
                await zk.ensure_path("/krb-renewed")
                node = await zk.create("/krb-renewed/e-", ephemeral=True, sequential=True, acl=only(dave.name))
                _, _, watch = await zk.get_data(node, watch=True)
                issued = setup.initial_tickets_issued(dave)
                assert issued >= 1
                await trio.sleep_until(started + 6)  # the ticket had at most 5 s from the connection on
                assert ("sasl", dave.name) in await zk.who_am_i()
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert zk.session_id == session
                assert setup.initial_tickets_issued(dave) > issued  # a new ticket from the keytab
                assert ("sasl", dave.name) in await zk.who_am_i()
                assert (await zk.get_data(node))[1].ephemeral_owner == session
                await zk.set_data(node, b"renewed")
                assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


def test_the_java_client_sees_the_same_identity(kerberos_server: KerberosServer) -> None:
    setup = kerberos_server.kerberos
    jaas = write_jaas(
        setup.realm.directory / "java-client.jaas",
        {"Client": kerberos_login_section(setup.alice.keytab, setup.alice.name)},
    )
    started = time.monotonic()
    done = subprocess.run(
        [
            find_java(),
            f"-Djava.security.auth.login.config={jaas}",
            f"-Djava.security.krb5.conf={setup.realm.krb5_conf}",
            "-cp",
            ":".join(server_classpath()),
            "org.apache.zookeeper.ZooKeeperMain",
            "-server",
            kerberos_server.hosts,
            "whoami",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"sasl: {setup.alice.name}" in done.stdout, done.stdout[-2000:]
    assert time.monotonic() - started < 60


@pytest.mark.ensemble
@pytest.mark.slow
async def test_gssapi_is_redone_on_the_member_a_session_fails_over_to(kerberos_ensemble: KerberosEnsemble) -> None:
    ensemble = kerberos_ensemble.ensemble
    principal = kerberos_ensemble.principal
    mechanism = Kerberos(ccache=kerberos_ensemble.kerberos.ccache)
    with trio.fail_after(90):
        # Every member accepts tickets for the one principal they share (zookeeper/localhost).
        for i in range(ensemble.size):
            async with zkwire.open_client(f"localhost:{ensemble.member_port(i)}", sasl=mechanism) as member:
                assert ("sasl", principal) in await member.who_am_i()
        async with zkwire.open_client(kerberos_ensemble.hosts, sasl=mechanism, session_timeout=20) as zk:
            session = zk.session_id
            node = await zk.create("/krb-failover", ephemeral=True, acl=only(principal))
            _, _, watch = await zk.get_data(node, watch=True)
            host = zk.connected_host
            assert host is not None and host.host == "localhost"
            index = next(i for i in range(ensemble.size) if ensemble.member_port(i) == host.port)
            await trio.to_thread.run_sync(ensemble.stop_member, index)
            await zk.wait_connected()
            assert zk.connected_host is not None and zk.connected_host.port != host.port
            assert zk.session_id == session
            assert ("sasl", principal) in await zk.who_am_i()
            assert (await zk.get_data(node))[1].ephemeral_owner == session
            await zk.set_data(node, b"after the failover")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_a_kdc_out_of_reach_is_retried_not_a_refusal(kerberos_server: KerberosServer) -> None:
    # Keytab mode with a fresh memory cache: the first connection needs the KDC for a ticket.  While no
    # KDC answers, the attempts are dropped and retried (a KDC outage during a failover must not end a
    # session); once it is back, the session connects.
    realm = kerberos_server.kerberos.realm
    erin = await trio.to_thread.run_sync(realm.user_principal, "erin")
    mechanism = Kerberos(principal=erin.name, keytab=erin.keytab)
    await trio.to_thread.run_sync(realm.stop_kdc)
    try:
        with trio.fail_after(40):
            async with zkwire.open_client(kerberos_server.hosts, sasl=mechanism, wait_connected=False) as zk:
                with trio.move_on_after(2):
                    await zk.wait_connected()
                assert zk.state is SessionState.CONNECTING, zk.ended
                await trio.to_thread.run_sync(realm.start_kdc)
                await zk.wait_connected()
                assert ("sasl", erin.name) in await zk.who_am_i()
    finally:
        await trio.to_thread.run_sync(realm.start_kdc)
