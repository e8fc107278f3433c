"""Bad input and refused credentials against the real server: typed errors, no poisoned session."""

from __future__ import annotations

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire import SessionState
from zkwire.testing import ServerHandle

LIMIT = 20


# ------------------------------------------------------------------------------ item: poisoned credentials


async def test_credential_that_cannot_be_sent_does_not_poison_the_session(
    zk_server: ServerHandle, zk_hosts: str, faultproxy
) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        with trio.fail_after(LIMIT):
            async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
                sid = zk.session_id
                with pytest.raises(zkwire.DataTooLargeError):
                    await zk.add_auth("digest", "u:" + "x" * 2_000_000)
                with pytest.raises(zkwire.InvalidArgumentError):
                    await zk.add_auth("digest", "u:\ud800")
                await zk.add_auth("digest", "good:pw")
                states = zk.states()
                await proxy.sever()
                # The reconnect re-sends the credentials kept: only the good one.  (The stream starts
                # with the current state, CONNECTED: the reconnection is the CONNECTED after SUSPENDED.)
                suspended = False
                async for state in states:
                    suspended = suspended or state is SessionState.SUSPENDED
                    if state is SessionState.CONNECTED and suspended:
                        break
                    assert not state.is_terminal, state
                assert zk.session_id == sid
                assert sorted(await zk.who_am_i()) == [("digest", "good"), ("ip", zk_server.client_address)]
                with trio.CancelScope(shield=True):
                    await zk.get_data("/")  # a shielded clean-up still has a live session
            assert zk.state is SessionState.CLOSED


@pytest.mark.parametrize(
    ("credential", "error"),
    [("u:" + "x" * 2_000_000, zkwire.DataTooLargeError), ("u:\ud800", zkwire.InvalidArgumentError)],
    ids=["2 MB", "lone surrogate"],
)
async def test_open_client_refuses_a_credential_that_cannot_be_sent_before_connecting(
    credential: str, error: type[Exception]
) -> None:
    # Nothing listens on port 1: the error must come at once, not from a connection that never comes.
    with trio.fail_after(5):
        with pytest.raises(error):
            async with zkwire.open_client("127.0.0.1:1", auth=[("digest", credential)]):
                raise AssertionError("not reached")


# ---------------------------------------------------------------------- item: a refused initial credential


@pytest.mark.parametrize("scheme", ["Digest", "nosuchscheme"])
async def test_open_client_with_a_refused_credential_raises_auth_failed(zk_hosts: str, scheme: str) -> None:
    with trio.fail_after(LIMIT):
        with pytest.raises(zkwire.AuthFailedError) as caught:
            async with zkwire.open_client(zk_hosts, auth=[("digest", "ok:pw"), (scheme, "u:p")]):
                raise AssertionError("the session must not report connected")
    # The reason names the refused credential's scheme, never its value.
    assert caught.value.detail == f"the server rejected the {scheme!r} credential"
    assert "u:p" not in str(caught.value)


async def test_refused_credential_without_waiting_for_the_connection(zk_hosts: str) -> None:
    with trio.fail_after(LIMIT):
        with pytest.raises(zkwire.AuthFailedError):
            async with zkwire.open_client(zk_hosts, auth=[("Digest", "u:p")], wait_connected=False) as zk:
                with pytest.raises(zkwire.AuthFailedError):
                    await zk.wait_connected()
                assert zk.state is SessionState.AUTH_FAILED
                with pytest.raises(zkwire.AuthFailedError) as caught:
                    await zk.get_data("/")
                assert caught.value.detail == "the server rejected the 'Digest' credential"
                assert zk.ended is not None and zk.ended.detail == caught.value.detail
                raise zkwire.AuthFailedError(detail="as the body saw it")


async def test_accepted_initial_credentials_are_all_in_place_when_connected(
    zk_server: ServerHandle, zk_hosts: str
) -> None:
    ip = zk_server.client_address  # 127.0.0.1, or the container network's gateway
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts, auth=[("digest", "carol:pw"), ("digest", "dave:pw")]) as zk:
            assert sorted(await zk.who_am_i()) == [("digest", "carol"), ("digest", "dave"), ("ip", ip)]


async def test_only_the_connection_wait_is_bounded(zk_hosts: str) -> None:
    """The documented way to bound the connection wait alone: wait_connected under a scope of its own."""
    from zkwire.testing import free_port

    nowhere = f"127.0.0.1:{free_port()}"
    started = trio.current_time()
    with pytest.raises(trio.TooSlowError):
        async with zkwire.open_client(nowhere, wait_connected=False) as zk:
            with trio.fail_after(0.5):
                await zk.wait_connected()
    assert trio.current_time() - started < 3
    async with zkwire.open_client(zk_hosts, wait_connected=False) as zk:
        with trio.fail_after(5):
            await zk.wait_connected()
        await trio.sleep(0.6)  # longer than a bound of 0.5 s would allow: the work is not bounded
        assert await zk.exists("/") is not None
