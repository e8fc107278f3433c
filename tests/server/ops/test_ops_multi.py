"""Multi against a real ZooKeeper 3.8.0 server: transactions that succeed, the results of one that fails,
and read-only multis."""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, ensure_path

import zkwire
from zkwire import Check, Create, Delete, GetChildren, GetData, SetData, Stat

# -------------------------------------------------------------------------------------------- multi


async def test_multi_success(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            await zk.create(f"{zk_path}/old", b"o")
            await zk.create(f"{zk_path}/val", b"1")
            results = await zk.multi(
                [
                    Check(f"{zk_path}/val", 0),
                    Create(f"{zk_path}/new", b"n"),
                    Create(f"{zk_path}/seq-", sequential=True),
                    Delete(f"{zk_path}/old", 0),
                    SetData(f"{zk_path}/val", b"2", 0),
                ]
            )
            assert results[0] is None
            assert results[1] == f"{zk_path}/new"
            assert results[2] == f"{zk_path}/seq-0000000003"
            assert results[3] is None
            stat = results[4]
            assert isinstance(stat, Stat) and stat.version == 1 and stat.data_length == 1
            # all in one transaction: one zxid
            new = await zk.exists(f"{zk_path}/new")
            assert new is not None and new.czxid == stat.mzxid
            assert await zk.exists(f"{zk_path}/old") is None
            assert await zk.multi([]) == []
            txn = zk.transaction().create(f"{zk_path}/t1").set_data(f"{zk_path}/t1", b"x").check(f"{zk_path}/t1", 1)
            out = await txn.commit()
            assert out[0] == f"{zk_path}/t1" and isinstance(out[1], Stat) and out[2] is None
            # containers and TTL nodes inside a multi (sub-ops 19 and 21)
            out = await zk.multi(
                [
                    Create(f"{zk_path}/box", container=True),
                    Create(f"{zk_path}/box/item"),
                    Create(f"{zk_path}/ttl-", ttl=60_000, sequential=True),
                    Create(f"{zk_path}/eph", ephemeral=True),
                ]
            )
            assert out[0] == f"{zk_path}/box" and out[1] == f"{zk_path}/box/item"
            assert isinstance(out[2], str) and out[2].startswith(f"{zk_path}/ttl-")
            eph = await zk.exists(f"{zk_path}/eph")
            box = await zk.exists(f"{zk_path}/box")
            assert eph is not None and eph.ephemeral_owner == zk.session_id
            assert box is not None and box.czxid == eph.czxid and box.ephemeral_owner == 0


async def test_multi_failure_results(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            await zk.create(f"{zk_path}/exists")
            before = await zk.exists(zk_path)
            try:
                await zk.multi(
                    [
                        Create(f"{zk_path}/a"),
                        SetData(f"{zk_path}/exists", b"x"),
                        Create(f"{zk_path}/exists"),
                        Delete(f"{zk_path}/exists"),
                        Check(f"{zk_path}/exists", 0),
                    ]
                )
            except zkwire.NodeExistsError as e:
                assert e.path == f"{zk_path}/exists"
                results = e.results
            else:
                raise AssertionError("NodeExistsError expected")
            assert results is not None and len(results) == 5
            assert results[0] is None and results[1] is None
            assert isinstance(results[2], zkwire.NodeExistsError)
            assert all(isinstance(r, zkwire.RuntimeInconsistencyError) for r in results[3:])
            # nothing applied
            assert await zk.exists(f"{zk_path}/a") is None
            data, stat = await zk.get_data(f"{zk_path}/exists")
            assert data == b"" and stat.version == 0
            assert await zk.exists(zk_path) == before

            try:
                await zk.multi([Check(f"{zk_path}/exists", 3), Delete(f"{zk_path}/exists")])
            except zkwire.BadVersionError as e:
                assert e.results is not None
                assert isinstance(e.results[0], zkwire.BadVersionError)
                assert isinstance(e.results[1], zkwire.RuntimeInconsistencyError)
            else:
                raise AssertionError("BadVersionError expected")


async def test_multi_read_mixed(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            await zk.create(f"{zk_path}/a", b"A")
            await zk.create(f"{zk_path}/a/k")
            out = await zk.multi_read(
                [
                    GetData(f"{zk_path}/a"),
                    GetChildren(f"{zk_path}/missing"),
                    GetChildren(f"{zk_path}/a"),
                    GetData(f"{zk_path}/missing"),
                    GetChildren(zk_path),
                ]
            )
            assert len(out) == 5
            first = out[0]
            assert isinstance(first, tuple) and first[0] == b"A" and first[1] == await zk.exists(f"{zk_path}/a")
            assert isinstance(out[1], zkwire.NoNodeError) and out[1].path == f"{zk_path}/missing"
            assert out[2] == ["k"]
            assert isinstance(out[3], zkwire.NoNodeError)
            assert out[4] == ["a"]
            assert await zk.multi_read([]) == []
