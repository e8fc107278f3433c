"""Watches against a real ZooKeeper 3.8.0 server: one-shot watches and their events, checkWatches and
removeWatches, persistent and persistent recursive watches."""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, ensure_path

import zkwire
from zkwire import EventType, WatcherType

# -------------------------------------------------------------------------------------------- watches


async def test_check_and_remove_watches(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            assert await zk.check_watches(zk_path) is False
            _, _, data_watch = await zk.get_data(zk_path, watch=True)
            assert await zk.check_watches(zk_path, WatcherType.DATA) is True
            assert await zk.check_watches(zk_path, WatcherType.CHILDREN) is False
            assert await zk.check_watches(zk_path) is True
            _, child_watch = await zk.get_children(zk_path, watch=True)
            assert await zk.check_watches(zk_path, WatcherType.CHILDREN) is True

            await zk.remove_watches(zk_path, WatcherType.CHILDREN)
            event = await child_watch.wait()
            assert event.type == EventType.CHILD_WATCH_REMOVED and event.path == zk_path
            assert await zk.check_watches(zk_path, WatcherType.CHILDREN) is False
            assert await zk.check_watches(zk_path, WatcherType.DATA) is True
            assert not data_watch.triggered

            await zk.remove_watches(zk_path, WatcherType.ANY)
            event = await data_watch.wait()
            assert event.type == EventType.DATA_WATCH_REMOVED
            try:
                await zk.remove_watches(zk_path)
            except zkwire.NoWatcherError as e:
                assert e.code == -121 and e.path == zk_path
            else:
                raise AssertionError("NoWatcherError expected")
            # an exists watch on a missing node is a real server watch too, and goes once it fired
            _, _ = await zk.exists(f"{zk_path}/later", watch=True)
            assert await zk.check_watches(f"{zk_path}/later", WatcherType.DATA) is True
            await zk.create(f"{zk_path}/later")
            assert await zk.check_watches(f"{zk_path}/later") is False


async def test_one_shot_watches(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/n"
            await writer.create(node, b"1")
            # data change, seen by a getData watch and an exists watch on the existing node
            data, _, w_data = await zk.get_data(node, watch=True)
            assert data == b"1"
            _, w_exists = await zk.exists(node, watch=True)
            await writer.set_data(node, b"2")
            for w in (w_data, w_exists):
                ev = await w.wait()
                assert (ev.type, ev.path, ev.state) == (
                    EventType.NODE_DATA_CHANGED,
                    node,
                    zkwire.KeeperState.SYNC_CONNECTED,
                )
            # one shot: the watch is gone after firing
            assert await zk.check_watches(node, WatcherType.DATA) is False
            # children: the event names the parent
            _, w_children = await zk.get_children(zk_path, watch=True)
            await writer.create(f"{zk_path}/sibling")
            ev = await w_children.wait()
            assert (ev.type, ev.path) == (EventType.NODE_CHILDREN_CHANGED, zk_path)
            # deletion fires data and child watches on the node itself, one event each
            _, _, w_del_data = await zk.get_data(node, watch=True)
            _, w_del_child = await zk.get_children(node, watch=True)
            _, w_del_exists = await zk.exists(node, watch=True)
            await writer.delete(node)
            for w in (w_del_data, w_del_child, w_del_exists):
                ev = await w.wait()
                assert (ev.type, ev.path) == (EventType.NODE_DELETED, node)
            # getData on a missing node sets no watch
            try:
                await zk.get_data(node, watch=True)
            except zkwire.NoNodeError:
                pass
            else:
                raise AssertionError("NoNodeError expected")
            assert await zk.check_watches(node) is False


async def test_exists_watch_on_missing_node_fires_on_create(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/n"
            stat, w_created = await zk.exists(node, watch=True)
            assert stat is None
            # the server did arm the watch
            assert await zk.check_watches(node, WatcherType.DATA) is True
            await writer.create(node, b"1")
            # the notification precedes the create's reply, so it has been received by now
            with trio.move_on_after(2):
                ev = await w_created.wait()
                assert (ev.type, ev.path) == (EventType.NODE_CREATED, node)
            assert w_created.triggered, "the NODE_CREATED event never reached the watch"


async def test_persistent_watch_gets_children_changed(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
            await ensure_path(zk, zk_path)
            async with zk.add_watch(zk_path) as pw:
                assert await zk.check_watches(zk_path, WatcherType.DATA) is True
                await writer.set_data(zk_path, b"1")
                await writer.create(f"{zk_path}/c")
                await writer.set_data(f"{zk_path}/c", b"x")  # a child's data: not reported
                await writer.delete(f"{zk_path}/c")
                await writer.set_data(zk_path, b"2")
                await writer.delete(zk_path)
                await writer.create(zk_path)
                await writer.set_data(zk_path, b"marker")
                got = []
                for _ in range(7):
                    ev = await pw.__anext__()
                    got.append((ev.type, ev.path))
                assert got == [
                    (EventType.NODE_DATA_CHANGED, zk_path),
                    (EventType.NODE_CHILDREN_CHANGED, zk_path),
                    (EventType.NODE_CHILDREN_CHANGED, zk_path),
                    (EventType.NODE_DATA_CHANGED, zk_path),
                    (EventType.NODE_DELETED, zk_path),
                    (EventType.NODE_CREATED, zk_path),  # not removed by firing
                    (EventType.NODE_DATA_CHANGED, zk_path),
                ]
            # leaving the block removed the server watch
            assert await zk.check_watches(zk_path) is False


async def test_recursive_watch_never_gets_children_changed(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
            await ensure_path(zk, zk_path)
            async with zk.add_watch(zk_path, recursive=True) as pw:
                await writer.create(f"{zk_path}/a")
                await writer.create(f"{zk_path}/a/b", b"x")
                await writer.set_data(f"{zk_path}/a/b", b"y")
                await writer.delete(f"{zk_path}/a/b")
                await writer.set_data(zk_path, b"root")
                # a watch event is sent before the reply of the write that caused it, so by now every event
                # is buffered; a marker event closes the sequence
                await writer.create(f"{zk_path}/marker")
                got = []
                while True:
                    ev = await pw.__anext__()
                    got.append((ev.type, ev.path))
                    if ev.path == f"{zk_path}/marker":
                        break
                assert got == [
                    (EventType.NODE_CREATED, f"{zk_path}/a"),
                    (EventType.NODE_CREATED, f"{zk_path}/a/b"),
                    (EventType.NODE_DATA_CHANGED, f"{zk_path}/a/b"),
                    (EventType.NODE_DELETED, f"{zk_path}/a/b"),
                    (EventType.NODE_DATA_CHANGED, zk_path),
                    (EventType.NODE_CREATED, f"{zk_path}/marker"),
                ]
                assert await zk.check_watches(zk_path) is True
            assert await zk.check_watches(zk_path) is False
