"""PersistentNode and PersistentTtlNode beside Curator 5.4's on the real server: the same layouts, neither
takes over the other's live ephemeral node from our side, and a TTL node outlives a cut-off owner by
about one TTL."""

from __future__ import annotations

import pytest
import trio
from helpers.addresses import first_server
from helpers.curator import curator_recipes

import zklock
import zkwire


async def _until(predicate: object, seconds: float = 20) -> None:
    assert callable(predicate)
    with trio.fail_after(seconds):
        while not await predicate():
            await trio.sleep(0.05)


async def test_a_curator_persistent_node_is_waited_for_and_followed(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = f"{zk_path}/node"
    async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
        assert await java.ask("pnode-start", path, "from-java") == "OK true"
        async with zklock.PersistentNode(zk, path, b"from-python") as node:
            with trio.move_on_after(0.5):
                await node.wait_created()
                pytest.fail("took over Curator's live ephemeral node")
            assert (await zk.get_data(path))[0] == b"from-java"
            await java.ask("pnode-stop", path)
            with trio.fail_after(10):
                await node.wait_created()
            data, stat = await zk.get_data(path)
            assert data == b"from-python" and stat.ephemeral_owner == zk.session_id
        assert await zk.exists(path) is None


async def test_ttl_nodes_share_curators_layout(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    theirs, ours = f"{zk_path}/java-ttl", f"{zk_path}/python-ttl"
    async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
        assert await java.ask("ttlnode-start", theirs, 1000, "java-data") == "OK true"
        async with zklock.PersistentTtlNode(zk, ours, 1.0, b"python-data") as node:
            with trio.fail_after(10):
                assert await node.wait_created() == ours

            async def both_touched() -> bool:
                stats = [await zk.exists(f"{p}/touch") for p in (theirs, ours)]
                return all(s is not None and s.version >= 2 for s in stats)

            await _until(both_touched)  # each side writes its touch node every half TTL
            for path, data in ((theirs, b"java-data"), (ours, b"python-data")):
                assert await zk.get_children(path) == ["touch"]
                parent = await zk.get_data(path)
                assert parent[0] == data and parent[1].ephemeral_owner == 0
        await java.ask("ttlnode-stop", theirs)

        async def both_gone() -> bool:
            return await zk.exists(theirs) is None and await zk.exists(ours) is None

        await _until(both_gone)


async def test_a_ttl_node_outlives_a_cut_off_owner_by_about_a_ttl(zk_hosts: str, zk_path: str, faultproxy) -> None:
    path = f"{zk_path}/ttl"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=30) as zk, zkwire.open_client(zk_hosts) as other:
            async with zklock.PersistentTtlNode(zk, path, 1.0, b"d") as node:
                with trio.fail_after(10):
                    await node.wait_created()
                await trio.sleep(2.5)
                assert await other.exists(path) is not None  # touched: kept past its TTL
                proxy.freeze()
                cut = trio.current_time()

                async def gone() -> bool:
                    return await other.exists(path) is None

                await _until(gone)
                # The touch node's TTL, then the server's container check (every second here).
                assert trio.current_time() - cut < 6
                proxy.thaw()

                async def back() -> bool:
                    return await other.exists(f"{path}/touch") is not None

                await _until(back)
