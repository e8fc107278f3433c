"""User code calling zkwire from asyncio: what run_trio and a portal hand back is typed."""

from __future__ import annotations

import asyncio
from typing import assert_type

import zkwire
from zkwire import Stat


async def read_config(hosts: str) -> bytes:
    async with zkwire.open_client(hosts) as zk:
        data, _ = await zk.get_data("/config")
        return data


async def run_once() -> None:
    assert_type(await zkwire.aio.run_trio(read_config, "127.0.0.1:2181"), bytes)


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
