"""User code iterating over every public async iterator: each element has its precise type."""

from __future__ import annotations

from typing import assert_type, reveal_type

import zkwire
from zkwire import NodeData, SessionState, TreeEvent, WatchedEvent


async def follow(zk: zkwire.Client, stream: zkwire.Sessions) -> None:
    async for node in zkwire.watch_data(zk, "/config"):
        assert_type(node, NodeData | None)
        if node is not None:
            assert_type(node.data, bytes)
            print(node.no_such_field)  # type: ignore[attr-defined]  # were node Any, this ignore would be unused
    async for node in zkwire.watch_data(stream, "/config"):
        reveal_type(node)  # revealed: zkwire.client.nodewatch.NodeData | None
    async for children in zkwire.watch_children(zk, "/workers"):
        assert_type(children, list[str] | None)
    async for children in zkwire.watch_children(stream, "/workers"):
        assert_type(children, list[str] | None)
        children.append("x")  # type: ignore[union-attr]  # None is part of the type
    data_watch: zkwire.DataWatch = zkwire.watch_data(zk, "/config")
    assert_type(await data_watch.__anext__(), NodeData | None)
    assert_type(aiter(zkwire.watch_children(zk, "/w")), zkwire.ChildrenWatch)


async def sessions_and_states(zk: zkwire.Client) -> None:
    async with zkwire.sessions("127.0.0.1:2181", session_timeout=5.0) as stream:
        assert_type(stream, zkwire.Sessions)
        async for client in stream:
            assert_type(client, zkwire.Client)
        assert_type(await stream.client(), zkwire.Client)
    async for state in zk.states():
        assert_type(state, SessionState)
        print(state.no_such_field)  # type: ignore[attr-defined]


async def watches(zk: zkwire.Client) -> None:
    async with zk.add_watch("/app", recursive=True) as watch:
        assert_type(watch, zkwire.PersistentWatch)
        async for event in watch:
            assert_type(event, WatchedEvent)
            assert_type(event.path, str)


async def tree_cache(zk: zkwire.Client, stream: zkwire.Sessions) -> None:
    async with zkwire.open_tree_cache(zk, "/app") as cache:
        assert_type(cache, zkwire.TreeCache)
        assert_type(cache.get("/app/x"), NodeData | None)
        for node in cache:
            assert_type(node, NodeData)
        async for event in cache.events():
            assert_type(event, TreeEvent)
            assert_type(event.type, zkwire.TreeEventType)
            assert_type(event.node, NodeData | None)
    async with zkwire.open_tree_cache(stream, "/app", wait_initialized=False) as cache:
        async for event in cache.events(max_buffered=10):
            reveal_type(event)  # revealed: zkwire.client.treecache.TreeEvent
