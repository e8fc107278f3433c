"""SASL (DIGEST-MD5) against a real server that requires it (``enforce.auth.enabled``): the exchange,
refusals, and the session across a severed connection, a server restart and a member failover, with
SASL redone on each new connection."""

from __future__ import annotations

import pytest
import trio
from helpers.faultproxy import open_fault_proxy
from helpers.sasl import SASL_USERS, SaslServer, lock_lost_then_granted_again

import zkwire
from zkwire import ACL, Id, Perm, SessionState
from zkwire.sasl import DigestMD5
from zkwire.testing.embedded import EmbeddedEnsemble

LIMIT = 20


def _upstream(hosts: str) -> tuple[str, int]:
    host, _, port = hosts.split(",")[0].rpartition(":")
    return host, int(port)


def alice_only() -> list[ACL]:
    return [ACL(Perm.ALL, Id("sasl", "alice"))]


async def test_digest_session_reads_and_writes_under_a_sasl_acl(sasl_server: SaslServer) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice")) as alice:
            assert ("sasl", "alice") in await alice.who_am_i()
            await alice.ensure_path("/sasl-acl")
            await alice.delete_recursive("/sasl-acl/node") if await alice.exists("/sasl-acl/node") else None
            await alice.create("/sasl-acl/node", b"for alice", acl=alice_only())
            data, _ = await alice.get_data("/sasl-acl/node")
            assert data == b"for alice"
            assert (await alice.get_acl("/sasl-acl/node"))[0] == alice_only()
            async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("bob")) as bob:
                assert ("sasl", "bob") in await bob.who_am_i()
                with pytest.raises(zkwire.NoAuthError):
                    await bob.get_data("/sasl-acl/node")
                with pytest.raises(zkwire.NoAuthError):
                    await bob.set_data("/sasl-acl/node", b"bob was here")


async def test_a_wrong_password_is_auth_failed_naming_the_mechanism_and_user(sasl_server: SaslServer) -> None:
    with trio.fail_after(LIMIT), pytest.raises(zkwire.AuthFailedError) as caught:
        async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice", "not-the-password")):
            raise AssertionError("must not connect")
    text = str(caught.value)
    assert "DIGEST-MD5" in text and "'alice'" in text and "not-the-password" not in text
    assert "-124" in text  # the server's code: it requires SASL, and the exchange failed


async def test_a_wrong_password_with_wait_connected_false_ends_the_session(sasl_server: SaslServer) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(
            sasl_server.hosts, sasl=sasl_server.mechanism("bob", "wrong"), wait_connected=False
        ) as zk:
            with pytest.raises(zkwire.AuthFailedError):
                await zk.wait_connected()
            assert zk.state is SessionState.AUTH_FAILED
            with pytest.raises(zkwire.AuthFailedError, match="DIGEST-MD5"):
                await zk.exists("/")


async def test_without_sasl_the_first_request_names_the_option(sasl_server: SaslServer) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(sasl_server.hosts) as zk:
            with pytest.raises(zkwire.SessionClosedRequireSaslAuthError) as caught:
                await zk.get_children("/")
            assert "sasl=" in str(caught.value)
            assert zk.state is SessionState.AUTH_FAILED
            with pytest.raises(zkwire.SessionClosedRequireSaslAuthError):
                await zk.exists("/")


async def test_a_plain_credential_and_sasl_both_apply(sasl_server: SaslServer) -> None:
    # The AuthPacket goes after the SASL exchange (a server requiring SASL refuses anything before).
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(
            sasl_server.hosts, sasl=sasl_server.mechanism("alice"), auth=[("digest", "carol:pw")]
        ) as zk:
            ids = await zk.who_am_i()
            assert ("sasl", "alice") in ids and ("digest", "carol") in ids
            await zk.add_auth("digest", "dave:pw")
            assert ("digest", "dave") in await zk.who_am_i()


async def test_the_session_survives_a_sever_with_sasl_redone(sasl_server: SaslServer) -> None:
    with trio.fail_after(LIMIT):
        async with open_fault_proxy(*_upstream(sasl_server.hosts)) as proxy:
            async with zkwire.open_client(proxy.hosts, sasl=sasl_server.mechanism("alice"), session_timeout=8) as zk:
                session = zk.session_id
                await zk.ensure_path("/sasl-sever")
                node = await zk.create("/sasl-sever/e-", ephemeral=True, sequential=True, acl=alice_only())
                _, _, watch = await zk.get_data(node, watch=True)
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert zk.session_id == session
                # The identity belongs to the connection: it is there again because SASL was redone.
                assert ("sasl", "alice") in await zk.who_am_i()
                _, stat = await zk.get_data(node)
                assert stat.ephemeral_owner == session
                async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice")) as other:
                    await other.set_data(node, b"changed")
                assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_the_session_survives_a_server_restart_with_sasl_redone(sasl_server: SaslServer) -> None:
    with trio.fail_after(60):
        async with zkwire.open_client(sasl_server.hosts, sasl=sasl_server.mechanism("alice"), session_timeout=20) as zk:
            session = zk.session_id
            await zk.ensure_path("/sasl-restart")
            node = await zk.create("/sasl-restart/e-", ephemeral=True, sequential=True, acl=alice_only())
            _, _, watch = await zk.get_data(node, watch=True)
            await trio.to_thread.run_sync(sasl_server.server.restart)
            await zk.wait_connected()
            assert zk.session_id == session
            assert ("sasl", "alice") in await zk.who_am_i()
            assert (await zk.get_data(node))[1].ephemeral_owner == session
            await zk.set_data(node, b"after the restart")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_a_lock_across_a_sever_is_lost_then_granted_again_in_the_same_session(sasl_server: SaslServer) -> None:
    with trio.fail_after(40):
        async with open_fault_proxy(*_upstream(sasl_server.hosts)) as proxy:
            async with zkwire.open_client(proxy.hosts, sasl=sasl_server.mechanism("alice"), session_timeout=8) as zk:
                await lock_lost_then_granted_again(zk, proxy, "/sasl-lock")


@pytest.mark.ensemble
@pytest.mark.slow
async def test_sasl_is_redone_on_the_member_a_session_fails_over_to(
    sasl_ensemble: EmbeddedEnsemble,
) -> None:
    ensemble = sasl_ensemble
    mechanism = SaslServer.mechanism("alice")
    with trio.fail_after(90):
        async with zkwire.open_client(ensemble.hosts, sasl=mechanism, session_timeout=20) as zk:
            node = await zk.create("/sasl-failover", ephemeral=True, acl=alice_only())
            _, _, watch = await zk.get_data(node, watch=True)
            host = zk.connected_host
            assert host is not None
            index = next(i for i in range(ensemble.size) if ensemble.member_port(i) == host.port)
            await trio.to_thread.run_sync(ensemble.stop_member, index)
            await zk.wait_connected()
            assert zk.connected_host is not None and zk.connected_host.port != host.port
            assert ("sasl", "alice") in await zk.who_am_i()
            await zk.set_data(node, b"after the failover")
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED


async def test_sessions_ends_with_the_sasl_refusal_of_a_reconnect(sasl_server: SaslServer) -> None:
    # The password changes under a running stream (rotated on the client only): the reconnect's SASL is
    # refused, and the stream ends with that refusal -- mechanism, user, server code -- not a generic one.
    mechanism = DigestMD5("alice", SASL_USERS["alice"])
    with trio.fail_after(LIMIT):
        async with open_fault_proxy(*_upstream(sasl_server.hosts)) as proxy:
            async with zkwire.sessions(proxy.hosts, sasl=mechanism, session_timeout=8) as stream:
                first = await stream.client()
                mechanism.password = "rotated-too-early"
                await proxy.sever()
                with pytest.raises(zkwire.AuthFailedError) as caught:
                    await first.wait_for_state(SessionState.CLOSED)
                with pytest.raises(zkwire.AuthFailedError) as from_stream:
                    await stream.client()
    for error in (caught.value, from_stream.value):
        assert "DIGEST-MD5" in str(error) and "'alice'" in str(error) and "rotated" not in str(error)
