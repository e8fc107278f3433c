"""zkwire.sessions and the data/children watch iterators: carrying on across reconnects and expiry."""

from __future__ import annotations

import pytest
import trio
from helpers.addresses import first_server
from helpers.sessiontools import expire

import zkwire
from zkwire import SessionState


async def test_sessions_yields_a_new_client_after_expiry(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as other:
        await other.create(zk_path)
    seen: list[int] = []
    with trio.fail_after(30):
        async with zkwire.sessions(zk_hosts, session_timeout=4, min_delay=0.05) as stream:
            async for zk in stream:
                assert zk.state is SessionState.CONNECTED
                seen.append(zk.session_id)
                assert stream.current is zk and stream.generation == len(seen)
                await zk.create(f"{zk_path}/member-{len(seen)}", ephemeral=True)
                if len(seen) == 3:
                    break
                await expire(zk, zk_hosts)
                with pytest.raises(zkwire.SessionExpiredError):
                    await zk.get_data(zk_path)  # the application's work fails once the session is gone
    assert len(set(seen)) == 3
    assert zk.state is SessionState.CLOSED  # the last one was closed when the block was left
    async with zkwire.open_client(zk_hosts) as other:
        assert await other.get_children(zk_path) == []  # every session's ephemerals are gone


async def test_sessions_client_waits_for_the_next_session(zk_hosts: str) -> None:
    with trio.fail_after(30):
        async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
            first = await stream.client()
            await expire(first, zk_hosts)
            second = await stream.client()
            assert second is not first and second.session_id != first.session_id
            assert second.state is SessionState.CONNECTED
            second_again = await stream.__anext__()
            assert second_again is second  # the first was skipped: it ended before it was asked for
        with pytest.raises(zkwire.ClientClosedError):
            await stream.client()
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()


async def test_sessions_a_closed_client_is_replaced(zk_hosts: str) -> None:
    with trio.fail_after(30):
        async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
            first = await stream.client()
            await first.close()
            second = await stream.client()
            assert second is not first


async def test_watch_data_follows_a_node_on_one_client(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        follower = zkwire.watch_data(zk, zk_path)
        with trio.fail_after(10):
            assert await follower.__anext__() is None
            await writer.create(zk_path, b"v1")
            node = await follower.__anext__()
            assert node is not None and node.data == b"v1" and node.path == zk_path
            await writer.set_data(zk_path, b"v2")
            node = await follower.__anext__()
            assert node is not None and node.data == b"v2" and node.stat.version == 1
            # coalescing: a slow consumer gets the latest state, never a stale one
            for i in range(3, 10):
                await writer.set_data(zk_path, f"v{i}".encode())
            node = await follower.__anext__()
            assert node is not None and node.data in {f"v{i}".encode() for i in range(3, 10)}
            while node is not None and node.data != b"v9":
                node = await follower.__anext__()
            await writer.delete(zk_path)
            assert await follower.__anext__() is None
            await writer.create(zk_path, b"v9")  # recreated with the same data: still a change
            node = await follower.__anext__()
            assert node is not None and node.stat.version == 0


async def test_watch_children(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        follower = zkwire.watch_children(zk, zk_path)
        with trio.fail_after(10):
            assert await follower.__anext__() is None
            await writer.create(zk_path)
            assert await follower.__anext__() == []
            await writer.create(f"{zk_path}/b")
            await writer.create(f"{zk_path}/a")
            children = await follower.__anext__()
            while children != ["a", "b"]:
                children = await follower.__anext__()
            await writer.set_data(f"{zk_path}/a", b"x")  # not a children change
            await writer.delete(f"{zk_path}/b")
            assert await follower.__anext__() == ["a"]


async def test_watch_data_on_one_client_ends_with_its_session(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts, session_timeout=4) as zk:
        await zk.create(zk_path, b"v1")
        follower = zkwire.watch_data(zk, zk_path)
        with trio.fail_after(30):
            assert (await follower.__anext__()) is not None
            await expire(zk, zk_hosts)
            with pytest.raises(zkwire.SessionExpiredError):
                await follower.__anext__()


async def test_watches_carry_on_across_expiry_with_a_sessions_stream(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as writer:
        await writer.create(zk_path, b"v1")
        with trio.fail_after(30):
            async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
                data = zkwire.watch_data(stream, zk_path)
                children = zkwire.watch_children(stream, zk_path)
                node = await data.__anext__()
                assert node is not None and node.data == b"v1"
                assert await children.__anext__() == []
                first = await stream.client()
                # The session ends; changes made before the next one are still reported.
                await expire(first, zk_hosts)
                await writer.set_data(zk_path, b"v2")
                await writer.create(f"{zk_path}/c")
                node = await data.__anext__()
                assert node is not None and node.data == b"v2"
                assert await children.__anext__() == ["c"]
                assert (await stream.client()) is not first
                await writer.set_data(zk_path, b"v3")
                node = await data.__anext__()
                assert node is not None and node.data == b"v3"
            # the block has ended: so has the iteration
            with pytest.raises(StopAsyncIteration):
                await data.__anext__()


async def test_watch_data_across_a_reconnect(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(zk_hosts) as writer, zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await writer.create(zk_path, b"v1")
            follower = zkwire.watch_data(zk, zk_path)
            with trio.fail_after(15):
                node = await follower.__anext__()
                assert node is not None and node.data == b"v1"
                proxy.refuse(True)
                await proxy.sever()
                await zk.wait_for_state(SessionState.SUSPENDED)
                await writer.set_data(zk_path, b"while-away")
                proxy.refuse(False)
                node = await follower.__anext__()
                assert node is not None and node.data == b"while-away"
                assert zk.session_id  # same session


async def test_a_deadline_on_the_block_leaves_the_session_to_the_bodys_cleanup(zk_hosts: str, zk_path: str) -> None:
    import zklock

    held = False
    with trio.CancelScope() as scope:
        async with zkwire.sessions(zk_hosts) as stream:
            async for zk in stream:
                async with zklock.Mutex(zk, f"{zk_path}/lock"):  # released (shielded) after the deadline
                    held = True
                    # The deadline is set once the lock is held, so however slow the machine, it is
                    # reached inside the block.
                    scope.deadline = trio.current_time() + 0.2
                    await trio.sleep_forever()
    assert scope.cancelled_caught and held
    assert zk.state is SessionState.CLOSED
    async with zkwire.open_client(zk_hosts) as other:
        assert await other.get_children(f"{zk_path}/lock") == []


async def test_sessions_with_a_bad_connect_string_fail() -> None:
    with trio.fail_after(10):
        async with zkwire.sessions("host:notaport") as stream:
            with pytest.raises(zkwire.InvalidInputError):
                await stream.client()
