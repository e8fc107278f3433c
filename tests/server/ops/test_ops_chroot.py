"""A chrooted client against a real ZooKeeper 3.8.0 server: paths in requests, replies, errors and sequential
names are relative to the chroot."""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, ensure_path

import zkwire
from zkwire import Create, EventType

# -------------------------------------------------------------------------------------------- chroot


async def test_chroot_paths_are_relative(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as root:
            await ensure_path(root, zk_path)
            async with zkwire.open_client(zk_hosts + zk_path) as zk:
                assert zk.chroot == zk_path
                assert await zk.create("/a", b"1") == "/a"
                assert await zk.create("/s-", sequential=True) == "/s-0000000001"
                assert (await zk.create_with_stat("/e", ephemeral=True))[0] == "/e"
                assert await zk.get_children("/") == ["a", "e", "s-0000000001"]
                assert await zk.get_ephemerals() == ["/e"]
                assert await zk.sync("/a") == "/a"
                assert await zk.multi([Create("/m"), Create("/q-", sequential=True)]) == ["/m", "/q-0000000004"]
                # the server sees absolute paths
                assert (await root.get_data(f"{zk_path}/a"))[0] == b"1"
                # watch events come back relative
                _, _, w = await zk.get_data("/a", watch=True)
                _, wc = await zk.get_children("/", watch=True)
                await root.set_data(f"{zk_path}/a", b"2")
                await root.create(f"{zk_path}/b")
                assert ((await w.wait()).type, (await w.wait()).path) == (EventType.NODE_DATA_CHANGED, "/a")
                assert ((await wc.wait()).type, (await wc.wait()).path) == (EventType.NODE_CHILDREN_CHANGED, "/")
                async with zk.add_watch("/", recursive=True) as pw:
                    await root.create(f"{zk_path}/b/c")
                    ev = await pw.__anext__()
                    assert (ev.type, ev.path) == (EventType.NODE_CREATED, "/b/c")
                try:
                    await zk.multi([Create("/a")])
                except zkwire.NodeExistsError as e:
                    assert e.path == "/a"
                else:
                    raise AssertionError("NodeExistsError expected")


async def test_chroot_error_paths_are_relative(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as root:
            await ensure_path(root, zk_path)
            async with zkwire.open_client(zk_hosts + zk_path) as zk:
                try:
                    await zk.get_data("/missing")
                except zkwire.NoNodeError as e:
                    assert e.path == "/missing"
                else:
                    raise AssertionError("NoNodeError expected")


async def test_chroot_sequential_create_of_root_stays_inside(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as root:
            await ensure_path(root, zk_path)
            parent = zk_path.rsplit("/", 1)[0]
            try:
                async with zkwire.open_client(zk_hosts + zk_path) as zk:
                    created = await zk.create("/", sequential=True)
                    assert created == "/0000000000"
                    assert await zk.get_children("/") == ["0000000000"]
            finally:
                # clean up a node that escaped next to the chroot
                for name in await root.get_children(parent):
                    if f"{parent}/{name}".startswith(zk_path) and f"{parent}/{name}" != zk_path:
                        await root.delete(f"{parent}/{name}")
