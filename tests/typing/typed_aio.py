"""User code calling zkwire from asyncio: what run_trio and a portal hand back is typed."""

from __future__ import annotations

import asyncio
from typing import assert_type

import zkwire
from zkwire import Stat, Watch


async def read_config(hosts: str) -> bytes:
    async with zkwire.open_client(hosts) as zk:
        data, _ = await zk.get_data("/config")
        return data


async def read_node(hosts: str, path: str, *, watch: bool = False) -> bytes:
    async with zkwire.open_client(hosts) as zk:
        data, _ = await zk.get_data(path)
        return data


async def run_once() -> None:
    assert_type(await zkwire.aio.run_trio(read_config, "127.0.0.1:2181"), bytes)
    assert_type(await zkwire.aio.run_trio(read_node, "127.0.0.1:2181", "/a", watch=True), bytes)
    assert_type(await zkwire.aio.run_trio(lambda: read_node("127.0.0.1:2181", "/a")), bytes)
    await zkwire.aio.run_trio(read_config, 2181)  # type: ignore[arg-type]  # the arguments are checked
    await zkwire.aio.run_trio(read_node, "h", "/a", watch="yes")  # type: ignore[arg-type]


async def with_a_portal() -> None:
    async with zkwire.aio.open_portal() as portal:
        assert_type(portal, zkwire.aio.TrioPortal)
        zk = await portal.enter(zkwire.open_client("127.0.0.1:2181"))
        assert_type(zk, zkwire.Client)
        assert_type(await portal.call(zk.ensure_path, "/config"), bool)
        assert_type(await portal.call(zk.set_data, "/config", b"v2"), Stat)
        assert_type(await portal.call(zk.get_data, "/config"), tuple[bytes, Stat])
        results = await asyncio.gather(*(portal.call(zk.get_children, "/config") for _ in range(3)))
        assert_type(results, list[list[str]])

        # Keyword arguments keep the overloads: each call has the type of the overload it picks.
        assert_type(await portal.call(zk.get_data, "/config", watch=True), tuple[bytes, Stat, Watch])
        assert_type(await portal.call(zk.get_data, "/config", watch=False), tuple[bytes, Stat])
        assert_type(await portal.call(zk.exists, "/config", watch=True), tuple[Stat | None, Watch])
        assert_type(await portal.call(zk.get_children, "/config", watch=True, sort=False), tuple[list[str], Watch])
        assert_type(await portal.call(zk.create, "/c", b"", ephemeral=True, sequential=True), str)
        # ... and so does a closure of no arguments.
        assert_type(await portal.call(lambda: zk.get_data("/config", watch=True)), tuple[bytes, Stat, Watch])
        assert_type(await portal.call(lambda: zk.exists("/config")), Stat | None)
        await portal.call(zk.get_data, "/config", watch=1)  # type: ignore[arg-type]  # checked against the overloads
        await portal.call(zk.get_data, "/config", wait=True)  # type: ignore[arg-type]  # no such keyword
        await portal.call(zk.get_data)  # type: ignore[arg-type]  # the path is missing
