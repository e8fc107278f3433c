"""zklock.PersistentNode on the real server: deleted, expired, a lost create reply, someone else's node."""

from __future__ import annotations

import pytest
import trio
from helpers.addresses import first_server
from helpers.sessiontools import expire

import zklock
import zkwire
from zkwire.constants import OpCode


async def _until(predicate: object, what: str, seconds: float = 15) -> None:
    assert callable(predicate)
    with trio.fail_after(seconds):
        while not await predicate():
            await trio.sleep(0.02)


async def test_created_recreated_after_deletion_updated_and_removed(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/parent/node"
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        async with zklock.PersistentNode(zk, path, b"one") as node:
            with trio.fail_after(10):
                assert await node.wait_created() == path
            data, stat = await other.get_data(path)
            assert data == b"one" and stat.ephemeral_owner == zk.session_id
            parent = await other.exists(f"{zk_path}/parent")
            assert parent is not None  # created as a container
            await other.delete(path)

            async def back() -> bool:
                return await other.exists(path) is not None

            await _until(back, "re-created")
            with trio.fail_after(10):
                await node.set_data(b"two")
            assert (await other.get_data(path))[0] == b"two"
            await other.delete(path)
            await _until(back, "re-created with the new data")
            assert (await other.get_data(path))[0] == b"two"
        assert await other.exists(path) is None


async def test_a_stream_recreates_it_in_the_next_session(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/member"
    async with zkwire.open_client(zk_hosts) as other, zkwire.sessions(zk_hosts, session_timeout=4) as stream:
        async with zklock.PersistentNode(stream, path, b"me") as node:
            with trio.fail_after(10):
                await node.wait_created()
            first = (await other.exists(path)) or pytest.fail("no node")
            old = stream.current
            assert old is not None and first.ephemeral_owner == old.session_id
            await expire(old, zk_hosts)

            async def in_new_session() -> bool:
                stat = await other.exists(path)
                return stat is not None and stat.ephemeral_owner not in (0, old.session_id)

            await _until(in_new_session, "created by the next session")
            assert stream.current is not old and (await other.get_data(path))[0] == b"me"
            with trio.fail_after(10):
                assert await node.wait_created() == path


async def test_one_client_stops_at_expiry_and_says_so(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts, session_timeout=4) as zk:
        async with zklock.PersistentNode(zk, f"{zk_path}/n") as node:
            with trio.fail_after(10):
                await node.wait_created()
            await expire(zk, zk_hosts)
            with trio.fail_after(10), pytest.raises(zkwire.SessionExpiredError):
                await node.wait_created()


@pytest.mark.parametrize("sequential", [False, True], ids=["plain", "protected-sequential"])
async def test_lost_create_reply_makes_one_node(zk_hosts: str, zk_path: str, faultproxy, sequential: bool) -> None:
    parent = f"{zk_path}/group"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk, zkwire.open_client(zk_hosts) as other:
            await other.ensure_path(parent)
            swallow = proxy.swallow_reply(op=OpCode.CREATE2, path_prefix=f"{parent}/")
            async with zklock.PersistentNode(zk, f"{parent}/m-", b"x", sequential=sequential) as node:
                with trio.fail_after(15):
                    actual = await node.wait_created()
                assert swallow.triggered
                await other.sync(parent)
                names = await other.get_children(parent)
                assert names == [actual.rsplit("/", 1)[1]], names
                if sequential:
                    assert names[0].startswith("_c_") and names[0][-10:].isdigit()
                stat = await other.exists(actual)
                assert stat is not None and stat.ephemeral_owner == zk.session_id
            await other.sync(parent)
            assert await other.get_children(parent) == []


async def test_a_sequential_node_comes_back_under_its_name(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        async with zklock.PersistentNode(zk, f"{zk_path}/worker-", sequential=True) as node:
            with trio.fail_after(10):
                name = await node.wait_created()
            await other.delete(name)

            async def back() -> bool:
                return await other.exists(name) is not None

            await _until(back, "re-created under its name")
            assert await other.get_children(zk_path) == [name.rsplit("/", 1)[1]]


async def test_someone_elses_ephemeral_node_is_waited_for(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/taken"
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        await other.create(zk_path)
        await other.create(path, b"theirs", ephemeral=True)
        async with zklock.PersistentNode(zk, path, b"mine") as node:
            with trio.move_on_after(0.5):
                await node.wait_created()
                pytest.fail("took over a node of another live session")
            assert (await other.get_data(path))[0] == b"theirs"
            await other.delete(path)
            with trio.fail_after(10):
                await node.wait_created()
            data, stat = await other.get_data(path)
            assert data == b"mine" and stat.ephemeral_owner == zk.session_id


@pytest.mark.parametrize("mode", ["persistent", "container", "ttl"])
async def test_other_modes(zk_hosts: str, zk_path: str, mode: zklock.NodeMode) -> None:
    path = f"{zk_path}/{mode}"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(path, b"left over")  # a persistent node is adopted and given our data
        if mode != "persistent":
            await zk.delete(path)
        async with zklock.PersistentNode(zk, path, b"d", mode=mode, ttl=0.5 if mode == "ttl" else None) as node:
            with trio.fail_after(10):
                await node.wait_created()
            data, stat = await zk.get_data(path)
            assert data == b"d" and stat.ephemeral_owner == 0  # what clients see of every non-ephemeral mode
        assert await zk.exists(path) is None


async def test_a_ttl_node_lasts_while_touched_and_goes_when_its_owner_stops(
    zk_hosts: str, zk_path: str, faultproxy
) -> None:
    """TTL mode: the keeper touches the node every half TTL, so the server (checking every second here)
    never reaps it; once the owner is cut off (frozen), the server reaps it; back, the keeper makes it
    again."""
    path = f"{zk_path}/ttl"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=30) as zk, zkwire.open_client(zk_hosts) as other:
            async with zklock.PersistentNode(zk, path, b"d", mode="ttl", ttl=1.0) as node:
                with trio.fail_after(10):
                    await node.wait_created()
                first = await other.exists(path)
                assert first is not None
                await trio.sleep(3.5)
                kept = await other.exists(path)
                assert kept is not None and kept.czxid == first.czxid and kept.version > first.version

                async def gone() -> bool:
                    return await other.exists(path) is None

                proxy.freeze()
                await _until(gone, "reaped once nobody touches it")
                proxy.thaw()

                async def remade() -> bool:
                    again = await other.exists(path)
                    return again is not None and again.czxid != first.czxid

                await _until(remade, "made again by the keeper")


def test_bad_arguments_are_refused_at_once() -> None:
    zk = object()
    for kwargs in (
        {"mode": "sticky"},
        {"mode": "ttl"},
        {"ttl": 5.0},
        {"mode": "container", "sequential": True},
        {"mode": "ttl", "ttl": -1.0},
    ):
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.PersistentNode(zk, "/a", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(zkwire.InvalidArgumentError):
        zklock.PersistentNode(zk, "/a", "text")  # type: ignore[arg-type]
    with pytest.raises(zkwire.InvalidPathError):
        zklock.PersistentNode(zk, "a")  # type: ignore[arg-type]
