"""zkwire.open_tree_cache against the real server: concurrent writers, severed and frozen connections,
session expiry, overflow."""

from __future__ import annotations

import random

import pytest
import trio
from helpers.addresses import first_server
from helpers.sessiontools import expire

import zkwire
from zkwire import TreeEventType
from zkwire.client.nodes import _list_tree

Tree = dict[str, tuple[bytes, int, int]]


async def server_tree(zk: zkwire.Client, root: str) -> Tree:
    out: Tree = {}
    for level in await _list_tree(zk, root, 500):
        for path in level:
            try:
                data, stat = await zk.get_data(path)
            except zkwire.NoNodeError:
                continue
            out[path] = (data, stat.czxid, stat.mzxid)
    return out


def cache_tree(cache: zkwire.TreeCache) -> Tree:
    return {n.path: (n.data, n.stat.czxid, n.stat.mzxid) for n in cache}


class Model:
    """The tree as the cache's events describe it."""

    def __init__(self, cache: zkwire.TreeCache) -> None:
        self.tree: Tree = cache_tree(cache)
        self.events = cache.events()
        self.types: list[TreeEventType] = []

    async def run(self) -> None:
        async for ev in self.events:
            self.types.append(ev.type)
            if ev.type in (TreeEventType.NODE_ADDED, TreeEventType.NODE_CHANGED):
                assert ev.node is not None and ev.node.path == ev.path
                if ev.type is TreeEventType.NODE_ADDED:
                    assert ev.path not in self.tree, ev
                else:
                    assert ev.path in self.tree, ev
                self.tree[ev.path] = (ev.node.data, ev.node.stat.czxid, ev.node.stat.mzxid)
            elif ev.type is TreeEventType.NODE_REMOVED:
                assert ev.old is not None
                assert self.tree.pop(ev.path, None) is not None, ev


async def converge(cache: zkwire.TreeCache, checker: zkwire.Client, root: str, limit: float = 20) -> Tree:
    expected: Tree = {}
    with trio.move_on_after(limit):
        while True:
            expected = await server_tree(checker, root)
            if cache_tree(cache) == expected:
                return expected
            await trio.sleep(0.05)
    assert cache_tree(cache) == expected  # shows the difference
    return expected


async def random_writer(zk: zkwire.Client, root: str, seed: int, ops: int) -> None:
    rng = random.Random(seed)
    universe = [f"{root}/a{i}" for i in range(4)] + [f"{root}/a{i}/b{j}" for i in range(4) for j in range(3)]
    universe += [f"{root}/a0/b0/c{k}" for k in range(3)]
    for n in range(ops):
        path = rng.choice(universe)
        action = rng.random()
        try:
            if action < 0.45:
                await zk.create(path, f"{seed}-{n}".encode())
            elif action < 0.8:
                await zk.set_data(path, f"{seed}-{n}".encode())
            else:
                await zk.delete(path)
        except (zkwire.NoNodeError, zkwire.NodeExistsError, zkwire.NotEmptyError, zkwire.ConnectionLossError):
            pass
        if n % 10 == 0:
            await trio.sleep(rng.uniform(0, 0.01))


async def test_loads_a_tree_and_follows_changes(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await writer.ensure_path(f"{zk_path}/a/b", data=b"b")
        await writer.create(f"{zk_path}/c", b"c")
        with trio.fail_after(20):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                assert cache.initialized and cache.resyncs == 1
                assert cache.paths() == [zk_path, f"{zk_path}/a", f"{zk_path}/a/b", f"{zk_path}/c"]
                assert cache.children(zk_path) == ["a", "c"]
                node = cache.get(f"{zk_path}/a/b")
                assert node is not None and node.data == b"b"
                assert cache.get(f"{zk_path}/nope") is None and cache.children(f"{zk_path}/nope") is None
                events = cache.events()
                await writer.create(f"{zk_path}/a/x", b"1")
                ev = await events.__anext__()
                assert (ev.type, ev.path, ev.old) == (TreeEventType.NODE_ADDED, f"{zk_path}/a/x", None)
                await writer.set_data(f"{zk_path}/a/x", b"2")
                ev = await events.__anext__()
                assert ev.type is TreeEventType.NODE_CHANGED and ev.node is not None and ev.old is not None
                assert (ev.old.data, ev.node.data) == (b"1", b"2")
                await writer.delete(f"{zk_path}/a/x")
                ev = await events.__anext__()
                assert ev.type is TreeEventType.NODE_REMOVED and ev.node is None and ev.old is not None
                assert cache.children(f"{zk_path}/a") == ["b"]
                await writer.delete_recursive(f"{zk_path}/a")
                removed = {(await events.__anext__()).path for _ in range(2)}
                assert removed == {f"{zk_path}/a", f"{zk_path}/a/b"}
                assert cache.children(zk_path) == ["c"]
            with pytest.raises(StopAsyncIteration):
                await events.__anext__()  # the cache is closed


async def test_a_root_that_does_not_exist_yet(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        with trio.fail_after(20):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                assert len(cache) == 0
                events = cache.events()
                await writer.ensure_path(f"{zk_path}/x/y")
                seen = [(await events.__anext__()).path for _ in range(3)]
                assert seen == [zk_path, f"{zk_path}/x", f"{zk_path}/x/y"]
                await writer.delete_recursive(zk_path)
                await converge(cache, writer, zk_path)
                assert len(cache) == 0


async def test_initialized_event_and_events_during_the_load(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        for i in range(50):
            await writer.ensure_path(f"{zk_path}/n{i % 5}/m{i}")
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(random_writer, writer, zk_path, 7, 200)
                async with zkwire.open_tree_cache(zk, zk_path, wait_initialized=False) as cache:
                    events = cache.events()
                    types = []
                    async for ev in events:
                        types.append(ev.type)
                        if ev.type is TreeEventType.INITIALIZED:
                            break
                    assert types.count(TreeEventType.INITIALIZED) == 1
                    assert cache.initialized
                    await converge(cache, writer, zk_path)  # the writer may still run: retried


async def test_concurrent_writers_with_severed_and_frozen_connections(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with (
        faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy,
        zkwire.open_client(proxy.hosts, session_timeout=6) as zk,
        zkwire.open_client(zk_hosts) as w1,
        zkwire.open_client(zk_hosts) as w2,
    ):
        await w1.ensure_path(f"{zk_path}/a0/b0")
        with trio.fail_after(60):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                model = Model(cache)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(model.run)
                    async with trio.open_nursery() as writers:
                        writers.start_soon(random_writer, w1, zk_path, 1, 400)
                        writers.start_soon(random_writer, w2, zk_path, 2, 400)
                        for _ in range(3):
                            await trio.sleep(0.15)
                            await proxy.sever()  # changes made while away are found by the resync
                            await trio.sleep(0.15)
                            proxy.freeze()
                            await trio.sleep(0.5)  # under the read timeout: the connection stays
                            proxy.thaw()
                    expected = await converge(cache, w1, zk_path)
                    assert cache.resyncs >= 2
                    with trio.fail_after(10):
                        while model.tree != expected:
                            await trio.sleep(0.02)
                    nursery.cancel_scope.cancel()
                assert model.tree == cache_tree(cache)


async def test_expiry_with_a_sessions_stream_resyncs(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as w1:
        await w1.ensure_path(f"{zk_path}/a0")
        with trio.fail_after(60):
            async with (
                zkwire.sessions(zk_hosts, session_timeout=4) as stream,
                zkwire.open_tree_cache(stream, zk_path) as cache,
            ):
                model = Model(cache)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(model.run)
                    async with trio.open_nursery() as writers:
                        writers.start_soon(random_writer, w1, zk_path, 3, 300)
                        first = await stream.client()
                        await trio.sleep(0.2)
                        await expire(first, zk_hosts)
                        await trio.sleep(0.2)
                        await expire(await stream.client(), zk_hosts)
                    third = await stream.client()
                    assert stream.generation == 3 and third.session_id != first.session_id
                    expected = await converge(cache, w1, zk_path)
                    with trio.fail_after(10):
                        while model.tree != expected:
                            await trio.sleep(0.02)
                    nursery.cancel_scope.cancel()


async def test_watch_overflow_falls_back_to_a_resync(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await writer.create(zk_path)
        with trio.fail_after(30):
            async with zkwire.open_tree_cache(zk, zk_path, watch_buffer=3) as cache:
                burst = [zkwire.Create(f"{zk_path}/n{i}", b"x") for i in range(100)]
                await writer.pipeline(burst)
                await writer.pipeline([zkwire.SetData(f"{zk_path}/n{i}", b"y") for i in range(100)])
                await converge(cache, writer, zk_path)
                assert cache.resyncs >= 2


async def test_slow_subscriber_overflows_alone(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await writer.create(zk_path)
        with trio.fail_after(30):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                slow = cache.events(max_buffered=3)
                await writer.pipeline([zkwire.Create(f"{zk_path}/n{i}") for i in range(10)])
                await converge(cache, writer, zk_path)
                got = [await slow.__anext__() for _ in range(3)]
                assert all(ev.type is TreeEventType.NODE_ADDED for ev in got)
                with pytest.raises(zkwire.WatchOverflowError):
                    await slow.__anext__()
                assert len(cache) == 11  # the cache itself is unaffected


async def test_a_single_client_source_ends_with_its_session(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts, session_timeout=4) as zk:
        await zk.create(zk_path)
        with trio.fail_after(30):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                events = cache.events()
                await expire(zk, zk_hosts)
                with pytest.raises(zkwire.SessionExpiredError):
                    await events.__anext__()
                assert cache.get(zk_path) is not None  # the last view stays readable


async def test_a_removed_watch_is_set_again(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await writer.create(zk_path)
        with trio.fail_after(20):
            async with zkwire.open_tree_cache(zk, zk_path) as cache:
                await zk.remove_watches(zk_path)  # someone removes the cache's watch on the same client
                await trio.sleep(0.2)
                await writer.create(f"{zk_path}/after")
                await converge(cache, writer, zk_path)


@pytest.mark.slow
async def test_member_stopped_under_the_cache(ensemble) -> None:  # type: ignore[no-untyped-def]
    """The cache's member goes away mid-writes: the client moves with its session, the cache resyncs."""
    root = f"/treecache-failover-{random.randrange(1 << 30):x}"
    async with (
        zkwire.open_client(ensemble.hosts, session_timeout=8) as zk,
        zkwire.open_client(ensemble.hosts, session_timeout=8) as writer,
    ):
        await writer.ensure_path(f"{root}/a0")
        with trio.fail_after(60):
            async with zkwire.open_tree_cache(zk, root) as cache:
                host = zk.connected_host
                assert host is not None
                index = next(i for i in range(ensemble.size) if ensemble.member_hosts(i) == str(host))
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(random_writer, writer, root, 11, 300)
                    await trio.sleep(0.2)
                    await trio.to_thread.run_sync(ensemble.stop_member, index)
                # The writer may have been on the stopped member too: it reconnects like the cache.
                await writer.wait_connected()
                await converge(cache, writer, root, limit=30)
                assert cache.resyncs >= 2 and zk.connected_host != host
        await writer.delete_recursive(root)
