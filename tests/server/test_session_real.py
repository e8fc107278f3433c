"""The trio session against the real server, with faults injected by a TCP proxy."""

from __future__ import annotations

import random
import time

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire import EventType, SessionState


async def _through_suspension(states: zkwire.StateStream) -> None:
    """Consume states (subscribed before the fault) until a reconnection that followed a suspension."""
    suspended = False
    async for state in states:
        if state is SessionState.SUSPENDED:
            suspended = True
        elif state is SessionState.CONNECTED and suspended:
            return
        assert not state.is_terminal, state


async def test_states_and_close(zk_hosts: str) -> None:
    async with zkwire.open_client(zk_hosts, session_timeout=4) as zk:
        assert zk.state is SessionState.CONNECTED
        assert zk.session_id != 0
        assert zk.session_timeout is not None and 0 < zk.session_timeout <= 4
        states = zk.states()
        assert await states.__anext__() is SessionState.CONNECTED
    assert zk.state is SessionState.CLOSED
    with pytest.raises(zkwire.ClientClosedError):
        await zk.get_data("/")


async def test_close_removes_ephemerals(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as other:
        await other.create(zk_path)
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.create(f"{zk_path}/e", ephemeral=True)
        # closeSession removed it at once, not after the session timeout
        assert await other.exists(f"{zk_path}/e") is None


async def test_pipelined_burst_replies_in_order(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        results: dict[int, str] = {}

        async def one(i: int) -> None:
            results[i] = await zk.create(f"{zk_path}/n{i:04d}", str(i).encode())

        async with trio.open_nursery() as nursery:
            for i in range(300):
                nursery.start_soon(one, i)
        assert results == {i: f"{zk_path}/n{i:04d}" for i in range(300)}
        assert len(await zk.get_children(zk_path)) == 300


async def test_severed_mid_burst_every_request_ends(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            sid = zk.session_id
            await zk.create(zk_path)
            outcomes: list[str] = []

            async def one(i: int) -> None:
                try:
                    await zk.set_data(zk_path, str(i).encode())
                    outcomes.append("ok")
                except zkwire.ConnectionLossError:
                    outcomes.append("loss")

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    for i in range(200):
                        nursery.start_soon(one, i)
                    await trio.sleep(0.005)
                    await proxy.sever()
            assert len(outcomes) == 200
            await zk.wait_connected()
            assert zk.session_id == sid
            await zk.get_data(zk_path)


async def test_watch_fires_for_change_made_while_disconnected(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(zk_hosts) as other, zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await other.create(zk_path, b"v1")
            _, _, watch = await zk.get_data(zk_path, watch=True)
            _, child_watch = await zk.get_children(zk_path, watch=True)
            proxy.refuse(True)
            await proxy.sever()
            with trio.fail_after(5):
                await zk.wait_for_state(SessionState.SUSPENDED)
            await other.set_data(zk_path, b"v2")
            await other.create(f"{zk_path}/child")
            proxy.refuse(False)
            with trio.fail_after(10):
                event = await watch.wait()
                child_event = await child_watch.wait()
            assert event.type is EventType.NODE_DATA_CHANGED and event.path == zk_path
            assert child_event.type is EventType.NODE_CHILDREN_CHANGED
            # The server sends the events it triggers while re-registering the watches before the reply
            # to SetWatches, and the session reports connected once that reply has come.
            with trio.fail_after(5):
                await zk.wait_for_state(SessionState.CONNECTED)
            assert zk.state is SessionState.CONNECTED


async def test_persistent_watch_survives_reconnect(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(zk_hosts) as other, zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await other.create(zk_path)
            async with zk.add_watch(zk_path, recursive=True) as events:
                states = zk.states()
                await proxy.sever()
                with trio.fail_after(10):
                    await _through_suspension(states)
                await other.create(f"{zk_path}/a")
                with trio.fail_after(5):
                    ev = await events.__anext__()
                assert ev.type is EventType.NODE_CREATED and ev.path == f"{zk_path}/a"


async def test_frozen_traffic_expires_session_locally(zk_hosts: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=2) as zk:
            timeout = zk.session_timeout
            assert timeout is not None
            proxy.freeze()
            proxy.refuse(True)
            seen: list[SessionState] = []
            with trio.fail_after(timeout * 3 + 2):
                async for state in zk.states():
                    seen.append(state)
            assert seen[-1] is SessionState.EXPIRED
            assert SessionState.SUSPENDED in seen
            with pytest.raises(zkwire.SessionExpiredError):
                await zk.get_data("/")


async def test_expired_session_reported_by_server(zk_hosts: str, zk_path: str, faultproxy) -> None:
    """Another connection takes over our session and closes it; our reconnect hears 'expired'."""
    import socket

    from zkwire.constants import OpCode
    from zkwire.protocol.codec import decode_connect_response, encode_connect_request, encode_request
    from zkwire.protocol.records import ConnectRequest

    def close_session_elsewhere(session_id: int, passwd: bytes) -> None:
        host, port = first_server(zk_hosts)
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(encode_connect_request(ConnectRequest(0, 0, 10000, session_id, passwd, False)))
            head = sock.recv(4)
            assert decode_connect_response(sock.recv(int.from_bytes(head, "big"))).session_id == session_id
            sock.sendall(encode_request(1, OpCode.CLOSE_SESSION))
            sock.recv(64)

    async with (
        faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy,
        zkwire.open_client(proxy.hosts, session_timeout=10) as zk,
    ):
        await zk.create(zk_path)
        await zk.create(f"{zk_path}/mine", ephemeral=True)
        _, _, watch = await zk.get_data(zk_path, watch=True)
        proxy.refuse(True)  # our client cannot come back until the session is gone
        await proxy.sever()
        await trio.to_thread.run_sync(close_session_elsewhere, zk.session_id, zk._core._passwd)
        proxy.refuse(False)
        with trio.fail_after(10):
            await zk.wait_for_state(SessionState.EXPIRED)
        with pytest.raises(zkwire.SessionExpiredError):
            await zk.get_data(zk_path)
        with pytest.raises(zkwire.SessionExpiredError):
            await watch.wait()  # outstanding watches learn it too
        assert zk.state is SessionState.EXPIRED


async def test_auth_resent_after_reconnect(zk_hosts: str, zk_path: str, faultproxy) -> None:
    acl = [zkwire.digest_acl("alice", "secret")]
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await zk.add_auth("digest", "alice:secret")
            await zk.create(zk_path, b"private", acl=acl)
            states = zk.states()
            await proxy.sever()
            with trio.fail_after(10):
                await _through_suspension(states)
                data, _ = await zk.get_data(zk_path)  # NoAuth unless the credential was re-sent
            assert data == b"private"
        async with zkwire.open_client(zk_hosts) as stranger:
            with pytest.raises(zkwire.NoAuthError):
                await stranger.get_data(zk_path)


async def test_rejected_auth_scheme(zk_hosts: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        with pytest.raises(zkwire.AuthFailedError):
            await zk.add_auth("nosuchscheme", "x")
        with trio.fail_after(10):
            await zk.wait_connected()
            await zk.get_data("/")  # the session is still usable without that credential


async def test_chroot(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as root:
        await root.create(zk_path)
        async with zkwire.open_client(zk_hosts + zk_path) as zk:
            assert zk.chroot == zk_path
            assert await zk.create("/a", b"1") == "/a"
            path, _ = await zk.create_with_stat("/s-", sequential=True)
            assert path.startswith("/s-")
            _, _, watch = await zk.get_data("/a", watch=True)
            await root.set_data(f"{zk_path}/a", b"2")
            with trio.fail_after(5):
                event = await watch.wait()
            assert event.path == "/a"
            assert sorted(await zk.get_children("/")) == sorted(["a", path[1:]])
        assert (await root.get_data(f"{zk_path}/a"))[0] == b"2"


async def test_cancellation_storm_keeps_session_in_sync(zk_hosts: str, zk_path: str) -> None:
    rng = random.Random(1234)
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"x" * 100)
        sid = zk.session_id

        async def caller() -> None:
            with trio.move_on_after(rng.uniform(0, 0.01)):
                await zk.get_data(zk_path)

        with trio.fail_after(30):
            for _ in range(5):
                async with trio.open_nursery() as nursery:
                    for _ in range(200):
                        nursery.start_soon(caller)
        data, stat = await zk.get_data(zk_path)
        assert data == b"x" * 100 and stat.data_length == 100
        assert zk.session_id == sid and zk.state is SessionState.CONNECTED


async def test_lone_requests_cancelled_at_random_keep_session_in_sync(zk_hosts: str, zk_path: str) -> None:
    # One request at a time: the caller reads its own reply from the socket; cancelling it there must
    # hand the socket back to the reader, which consumes the late reply.
    rng = random.Random(99)
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"y" * 10)
        sid = zk.session_id
        cancelled = 0
        with trio.fail_after(30):
            # At least 300 rounds and 5 cancelled ones: on a loaded machine a reply is often in the socket
            # before its caller runs again, and the caller then reads it without waiting (nothing to
            # cancel), so rounds go on until enough of them were cancelled mid-request.
            for i in range(5000):
                with trio.move_on_after(rng.uniform(0, 0.0008)) as scope:
                    data, _ = await zk.get_data(zk_path)
                    assert data == b"y" * 10
                cancelled += scope.cancelled_caught
                if i % 10 == 0:
                    await trio.sleep(0.002)  # let late replies arrive while nobody waits
                if i >= 300 and cancelled >= 5:
                    break
            assert cancelled >= 5
            await zk.set_data(zk_path, b"z")
            assert (await zk.get_data(zk_path))[0] == b"z"
        assert zk.session_id == sid and zk.state is SessionState.CONNECTED


async def test_watch_event_reaches_its_waiter_while_another_task_reads_replies(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        await zk.create(zk_path)
        _, watch = await zk.exists(f"{zk_path}/n", watch=True)
        got: list[zkwire.WatchedEvent] = []

        async def waiter() -> None:
            got.append(await watch.wait())

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(waiter)
                await other.create(f"{zk_path}/n")
                while not got:  # sequential requests: this task reads the socket most of the time
                    await zk.get_data(zk_path)
        assert got[0].type is EventType.NODE_CREATED and got[0].path == f"{zk_path}/n"


async def test_a_reader_woken_before_a_caller_takes_the_socket_leaves_the_reply_to_it(
    zk_hosts: str, zk_path: str
) -> None:
    # Force the interleaving: the reader is woken by a watch event already in the socket, and in the
    # same scheduling batch a caller sends a lone request and takes the socket, then another task
    # blocks the loop until the reply is in the socket too.  Whoever reads must wake the caller.
    # trio runs a batch in order or reversed, so about half the rounds hit that order.
    async with zkwire.open_client(zk_hosts, session_timeout=30) as zk, zkwire.open_client(zk_hosts) as other:
        await zk.create(zk_path, b"v")

        async def caller() -> None:
            with trio.fail_after(2):  # without a fix it waits for the next ping (10 s)
                data, _ = await zk.get_data(zk_path)
            assert data.isdigit()

        async def blocker() -> None:
            time.sleep(0.01)  # noqa: ASYNC251 -- blocks the loop on purpose

        for i in range(30):
            _, _, watch = await zk.get_data(zk_path, watch=True)
            await other.set_data(zk_path, b"%d" % i)
            time.sleep(0.01)  # noqa: ASYNC251 -- the event reaches the socket while the loop is held
            async with trio.open_nursery() as nursery:
                nursery.start_soon(caller)
                nursery.start_soon(blocker)
            with trio.fail_after(2):
                assert (await watch.wait()).type is EventType.NODE_DATA_CHANGED


async def test_lone_request_fails_fast_when_connection_is_severed(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=10) as zk:
            await zk.create(zk_path)
            sid = zk.session_id
            proxy.freeze()
            with trio.fail_after(5):
                async with trio.open_nursery() as nursery:

                    async def sever_soon() -> None:
                        await trio.sleep(0.2)
                        await proxy.sever()

                    nursery.start_soon(sever_soon)
                    with pytest.raises(zkwire.ConnectionLossError):
                        await zk.get_data(zk_path)
            proxy.thaw()
            with trio.fail_after(10):
                await zk.wait_connected()
            assert zk.session_id == sid
            await zk.get_data(zk_path)


async def test_lone_request_on_a_silent_connection_fails_at_the_read_timeout(
    zk_hosts: str, zk_path: str, faultproxy
) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await zk.create(zk_path)
            sid = zk.session_id
            read_timeout = zk.session_timeout * 2 / 3  # type: ignore[operator]
            proxy.freeze()
            started = trio.current_time()
            with trio.fail_after(read_timeout + 3), pytest.raises(zkwire.ConnectionLossError):
                await zk.get_data(zk_path)
            assert trio.current_time() - started >= read_timeout * 0.5
            proxy.thaw()
            with trio.fail_after(10):
                await zk.wait_connected()
            assert zk.session_id == sid
            await zk.get_data(zk_path)


async def test_shielded_cleanup_in_a_cancelled_block_still_has_a_session(zk_hosts: str, zk_path: str) -> None:
    # The caller's deadline cancels the body, not the client's own tasks: requests made during the
    # body's shielded clean-up are answered, also several at once (read by the reader task).
    with trio.move_on_after(0.5) as outer:
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.create(zk_path)
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True), trio.fail_after(5):
                    async with trio.open_nursery() as nursery:
                        for i in range(5):
                            nursery.start_soon(zk.create, f"{zk_path}/c{i}")
                    await zk.create(f"{zk_path}/last")
    assert outer.cancelled_caught
    async with zkwire.open_client(zk_hosts) as check:
        assert sorted(await check.get_children(zk_path)) == ["c0", "c1", "c2", "c3", "c4", "last"]


async def test_slow_persistent_watch_consumer_overflows_without_blocking(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        async with zk.add_watch(zk_path, max_buffered=5) as events:
            for i in range(10):
                await zk.set_data(zk_path, str(i).encode())
            # the reader kept going: replies still arrive while nobody consumes events
            await zk.get_data(zk_path)
            got = []
            with pytest.raises(zkwire.WatchOverflowError):
                async for ev in events:
                    got.append(ev)
            assert len(got) == 5 and events.dropped == 5


async def test_bad_input_sends_nothing(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        for bad in ["", "a", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\x00b"]:
            with pytest.raises(zkwire.InvalidPathError):
                await zk.create(bad)
        with pytest.raises(zkwire.DataTooLargeError):
            await zk.create(zk_path, b"x" * (1 << 20))
        with pytest.raises(zkwire.InvalidArgumentError):
            await zk.create(zk_path, ttl=1000, ephemeral=True)
        with pytest.raises(zkwire.InvalidArgumentError):
            await zk.create(zk_path, b"", container=True, sequential=True)
        with pytest.raises(zkwire.InvalidArgumentError):
            await zk.set_data(zk_path, "text")  # type: ignore[arg-type]
        assert zk.state is SessionState.CONNECTED
        assert await zk.create(zk_path) == zk_path


async def test_one_shot_watch_does_not_break_persistent_watch_on_same_path(zk_hosts: str, zk_path: str) -> None:
    """On 3.8 a second watch on a path would reset the persistent one; the client keeps it local."""
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await zk.create(zk_path, b"0")
        async with zk.add_watch(zk_path) as events:
            _, _, one_shot = await zk.get_data(zk_path, watch=True)
            _, child_watch = await zk.get_children(zk_path, watch=True)
            with trio.fail_after(5):
                await writer.set_data(zk_path, b"1")
                assert (await one_shot.wait()).type is EventType.NODE_DATA_CHANGED
                assert (await events.__anext__()).type is EventType.NODE_DATA_CHANGED
                await writer.create(f"{zk_path}/c")
                assert (await child_watch.wait()).type is EventType.NODE_CHILDREN_CHANGED
                assert (await events.__anext__()).type is EventType.NODE_CHILDREN_CHANGED
                await writer.set_data(zk_path, b"2")  # the persistent watch still works after both fired
                assert (await events.__anext__()).type is EventType.NODE_DATA_CHANGED
                await writer.set_data(zk_path, b"3")
                assert (await events.__anext__()).type is EventType.NODE_DATA_CHANGED


@pytest.mark.ensemble
async def test_ensemble_member_stopped_client_moves_with_session_and_watches(ensemble) -> None:  # type: ignore[no-untyped-def]
    async with zkwire.open_client(ensemble.hosts, session_timeout=8) as zk, zkwire.open_client(ensemble.hosts) as other:
        try:
            await zk.create("/failover")
        except zkwire.NodeExistsError:
            pass
        sid = zk.session_id
        _, _, watch = await zk.get_data("/failover", watch=True)
        await zk.create("/failover/eph", ephemeral=True)
        host = zk.connected_host
        assert host is not None
        index = next(i for i in range(ensemble.size) if ensemble.member_hosts(i) == str(host))
        states = zk.states()
        await trio.to_thread.run_sync(ensemble.stop_member, index)
        with trio.fail_after(20):
            await _through_suspension(states)
        assert zk.session_id == sid and zk.connected_host != host
        await other.set_data("/failover", b"after failover")
        with trio.fail_after(10):
            assert (await watch.wait()).type is EventType.NODE_DATA_CHANGED
        assert await other.exists("/failover/eph") is not None  # the session and its ephemerals live on
        await zk.delete("/failover/eph")


@pytest.mark.ensemble
async def test_majority_lost_suspends_then_recovers_same_session(ensemble) -> None:  # type: ignore[no-untyped-def]
    async with zkwire.open_client(ensemble.hosts, session_timeout=20) as zk:
        sid = zk.session_id
        leader = ensemble.leader_index()
        others = [i for i in range(ensemble.size) if i != leader]
        await trio.to_thread.run_sync(ensemble.stop_member, leader)
        await trio.to_thread.run_sync(ensemble.stop_member, others[0])
        with trio.fail_after(20):
            await zk.wait_for_state(SessionState.SUSPENDED)
        with pytest.raises(trio.TooSlowError), trio.fail_after(1):
            await zk.get_data("/")  # requests wait while suspended
        await trio.to_thread.run_sync(ensemble.start_member, leader)
        await trio.to_thread.run_sync(ensemble.start_member, others[0])
        with trio.fail_after(30):
            await zk.wait_for_state(SessionState.CONNECTED)
            await zk.get_data("/")
        assert zk.session_id == sid
