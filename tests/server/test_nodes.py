"""ensure_path, ensure_ephemeral, delete_recursive and chroot-aware NoNode messages, against the real server."""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

import zkwire
from zkwire.constants import OpCode
from zkwire.sansio.paths import chroot_hint


async def test_ensure_path_creates_parents_and_is_idempotent(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        assert await zk.ensure_path(f"{zk_path}/a/b/c", data=b"leaf") is True
        assert (await zk.get_data(f"{zk_path}/a/b/c"))[0] == b"leaf"
        assert (await zk.get_data(f"{zk_path}/a"))[0] == b""
        assert await zk.ensure_path(f"{zk_path}/a/b/c", data=b"other") is False
        assert (await zk.get_data(f"{zk_path}/a/b/c"))[0] == b"leaf"  # an existing node is left alone
        assert await zk.ensure_path(f"{zk_path}/a/b") is False
        assert await zk.ensure_path("/") is False


async def test_ensure_path_containers(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.ensure_path(f"{zk_path}/c1/c2", container=True)
        await zk.create(f"{zk_path}/c1/c2/x")
        await zk.delete(f"{zk_path}/c1/c2/x")
        # The server (container check every second in the tests) removes emptied containers.
        with trio.fail_after(15):
            while await zk.exists(f"{zk_path}/c1") is not None:
                await trio.sleep(0.2)
        assert await zk.exists(zk_path) is not None


async def test_ensure_path_concurrent_callers(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        created: list[bool] = []

        async def one(zk: zkwire.Client, i: int) -> None:
            created.append(await zk.ensure_path(f"{zk_path}/x/y/z"))

        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(one, a if i % 2 else b, i)
        assert created.count(True) == 1
        assert await a.exists(f"{zk_path}/x/y/z") is not None


async def test_ensure_path_creates_a_missing_chroot(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(f"{zk_hosts}{zk_path}/app/deep") as zk:
        assert await zk.ensure_path("/config", data=b"v1") is True
        assert (await zk.get_data("/config"))[0] == b"v1"
    async with zkwire.open_client(zk_hosts) as root:
        assert (await root.get_data(f"{zk_path}/app/deep/config"))[0] == b"v1"


async def test_nonode_names_the_missing_chroot(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(f"{zk_hosts}{zk_path}/app") as zk:
        with pytest.raises(zkwire.NoNodeError) as info:
            await zk.create("/config", b"v1")
        assert info.value.path == "/config"
        assert f"the chroot {zk_path}/app does not exist" in str(info.value)
        with pytest.raises(zkwire.NoNodeError, match="does not exist; create it"):
            await zk.get_children("/")
        with pytest.raises(zkwire.NoNodeError, match=f"server path {zk_path}/app/a/b"):
            await zk.get_data("/a/b")
        assert await zk.exists("/config") is None  # exists still answers None
        await zk.ensure_path("/")
        with pytest.raises(zkwire.NoNodeError, match=f"server path {zk_path}/app/a/b"):
            await zk.create("/a/b")
        await zk.create("/config", b"v1")


async def test_nonode_without_chroot_is_unchanged(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        with pytest.raises(zkwire.NoNodeError) as info:
            await zk.get_data(zk_path)
        assert str(info.value) == f"Node does not exist: {zk_path}"


def test_chroot_hint_rules() -> None:
    from zkwire.constants import OpCode

    assert chroot_hint("", OpCode.CREATE, "/a") is None
    assert "does not exist" in (chroot_hint("/app", OpCode.CREATE2, "/a") or "")
    assert "does not exist" in (chroot_hint("/app", OpCode.GET_DATA, "/") or "")
    assert chroot_hint("/app", OpCode.GET_DATA, "/a") == "server path /app/a, under the chroot /app"
    assert chroot_hint("/app", OpCode.CREATE, "/a/b") == "server path /app/a/b, under the chroot /app"


async def test_delete_recursive(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        for i in range(30):
            await zk.ensure_path(f"{zk_path}/t/n{i % 3}/m{i}")
        await zk.create(f"{zk_path}/t/n0/m0/leaf")
        assert await zk.delete_recursive(f"{zk_path}/t", batch=7) == 1 + 3 + 30 + 1
        assert await zk.exists(f"{zk_path}/t") is None
        assert await zk.exists(zk_path) is not None
        assert await zk.delete_recursive(f"{zk_path}/t") == 0
        await zk.create(f"{zk_path}/single")
        assert await zk.delete_recursive(f"{zk_path}/single") == 1
        with pytest.raises(zkwire.InvalidArgumentError):
            await zk.delete_recursive("/")


async def test_delete_recursive_with_a_concurrent_writer(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as writer:
        await zk.ensure_path(f"{zk_path}/w/a")
        stop = trio.Event()

        async def write() -> None:
            i = 0
            while not stop.is_set() and i < 200:
                try:
                    await writer.create(f"{zk_path}/w/a/n{i}")
                except (zkwire.NoNodeError, zkwire.NodeExistsError):
                    return
                i += 1
                await trio.sleep(0.005)  # a busy writer, not one that owns the server

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await trio.sleep(0.01)
            await zk.delete_recursive(f"{zk_path}/w")
            stop.set()
        assert await zk.exists(f"{zk_path}/w") is None


async def test_delete_recursive_of_a_chroot(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(f"{zk_hosts}{zk_path}") as zk:
        await zk.ensure_path("/a/b")
        assert await zk.delete_recursive("/") == 3
    async with zkwire.open_client(zk_hosts) as root:
        assert await root.exists(zk_path) is None


async def test_ensure_path_of_a_chroot_whose_parents_are_missing(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(f"{zk_hosts}{zk_path}/x/y") as zk:
        assert await zk.ensure_path("/") is True
        assert await zk.ensure_path("/") is False
        assert await zk.get_children("/") == []


async def test_ensure_ephemeral_creates_the_node_and_its_parents(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        stat = await zk.ensure_ephemeral(f"{zk_path}/workers/w1", b"ready")
        assert stat.ephemeral_owner == zk.session_id
        data, again = await zk.get_data(f"{zk_path}/workers/w1")
        assert data == b"ready" and again == stat
        parent = await zk.exists(f"{zk_path}/workers")
        assert parent is not None and parent.ephemeral_owner == 0
        assert await zk.ensure_ephemeral(f"{zk_path}/workers/w1", b"other") == stat  # its own: kept as it is
    async with zkwire.open_client(zk_hosts) as zk:
        assert await zk.exists(f"{zk_path}/workers/w1") is None  # it went with its session


async def test_ensure_ephemeral_adopts_its_node_after_a_lost_create_reply(
    zk_hosts: str, zk_path: str, faultproxy: ModuleType
) -> None:
    node = f"{zk_path}/w1"
    async with zkwire.open_client(zk_hosts) as admin:
        await admin.create(zk_path)
        async with faultproxy.open_fault_proxy(zk_hosts) as proxy, zkwire.open_client(proxy.hosts) as zk:
            lost = proxy.swallow_reply(op=OpCode.CREATE2, path_prefix=node)
            with trio.fail_after(20):
                stat = await zk.ensure_ephemeral(node, b"ready")
            assert lost.triggered  # the create was applied, its reply dropped with the connection
            assert stat.ephemeral_owner == zk.session_id
            assert await admin.get_children(zk_path) == ["w1"]


async def test_ensure_ephemeral_never_takes_another_sessions_node(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        await other.ensure_ephemeral(f"{zk_path}/w1")
        with pytest.raises(zkwire.NodeExistsError, match=f"owned by session 0x{other.session_id:x}"):
            await zk.ensure_ephemeral(f"{zk_path}/w1", b"mine")
        await other.create(f"{zk_path}/persistent")
        with pytest.raises(zkwire.NodeExistsError, match="a persistent node"):
            await zk.ensure_ephemeral(f"{zk_path}/persistent")
        assert (await zk.get_data(f"{zk_path}/w1"))[0] == b""  # untouched
        with pytest.raises(zkwire.NoChildrenForEphemeralsError):
            await zk.ensure_ephemeral(f"{zk_path}/w1/child")
