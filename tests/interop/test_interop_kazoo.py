"""zkwire and kazoo on one server: what one writes, the other reads back identically.

kazoo's client is synchronous (it runs its own connection thread); every kazoo call here goes through
``trio.to_thread.run_sync`` so the trio client keeps running meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import trio

import zkwire
from zkwire import ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, EventType, Id, Perm, Stat, digest_acl

kazoo_client = pytest.importorskip("kazoo.client")
kazoo_security = pytest.importorskip("kazoo.security")
kazoo_exceptions = pytest.importorskip("kazoo.exceptions")

T = TypeVar("T")
LIMIT = 20


async def kz(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one blocking kazoo call in a worker thread."""
    return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs))


@pytest.fixture
def kazoo(zk_hosts: str) -> Iterator[Any]:
    client = kazoo_client.KazooClient(hosts=zk_hosts, timeout=10)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def stat_tuple(kstat: Any) -> Stat:
    """kazoo's ZnodeStat as zkwire's Stat (same 11 fields in the same order)."""
    return Stat(*kstat)


def assert_same_stat(ours: Stat, theirs: Any) -> None:
    names = [
        ("czxid", "czxid"),
        ("mzxid", "mzxid"),
        ("ctime", "ctime"),
        ("mtime", "mtime"),
        ("version", "version"),
        ("cversion", "cversion"),
        ("aversion", "aversion"),
        ("ephemeral_owner", "ephemeralOwner"),
        ("data_length", "dataLength"),
        ("num_children", "numChildren"),
        ("pzxid", "pzxid"),
    ]
    for mine, kazoos in names:
        assert getattr(ours, mine) == getattr(theirs, kazoos), mine


def as_zkwire_acl(kacl: Any) -> ACL:
    return ACL(kacl.perms, Id(kacl.id.scheme, kacl.id.id))


async def test_zkwire_writes_kazoo_reads(zk_hosts: str, zk_path: str, kazoo: Any) -> None:
    alice = digest_acl("alice", "pw", Perm.ALL)
    payload = bytes(range(256)) * 3
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(zk_path)
            await zk.create(f"{zk_path}/data", payload)
            await zk.set_data(f"{zk_path}/data", payload[::-1])
            await zk.create(f"{zk_path}/empty", b"")
            await zk.create(f"{zk_path}/acl", b"a", acl=[alice, READ_ACL_UNSAFE[0]])
            eph = await zk.create(f"{zk_path}/eph", b"e", ephemeral=True)
            seq = [await zk.create(f"{zk_path}/seq-", str(i).encode(), sequential=True) for i in range(3)]
            box = await zk.create(f"{zk_path}/box", container=True)
            await zk.create(f"{box}/inside")
            ttl = await zk.create(f"{zk_path}/ttl", b"t", ttl=600_000)
            await zk.multi([zkwire.Create(f"{zk_path}/txn", b"x"), zkwire.SetData(f"{zk_path}/txn", b"y")])
            unicode_name = await zk.create(f"{zk_path}/名前-ü", "välue".encode())

            # getACL masks digest ids for a reader without ADMIN: both readers authenticate as alice
            await zk.add_auth("digest", "alice:pw")
            await kz(kazoo.add_auth, "digest", "alice:pw")
            for path in [
                zk_path,
                f"{zk_path}/data",
                f"{zk_path}/empty",
                f"{zk_path}/acl",
                eph,
                *seq,
                box,
                ttl,
                f"{zk_path}/txn",
                unicode_name,
            ]:
                data, stat = await zk.get_data(path)
                kdata, kstat = await kz(kazoo.get, path)
                assert kdata == data, path
                assert_same_stat(stat, kstat)
                acl, acl_stat = await zk.get_acl(path)
                kacl, kacl_stat = await kz(kazoo.get_acls, path)
                assert [as_zkwire_acl(a) for a in kacl] == acl, path
                assert_same_stat(acl_stat, kacl_stat)
                assert sorted(await kz(kazoo.get_children, path)) == await zk.get_children(path)

            assert (await kz(kazoo.get, f"{zk_path}/data"))[0] == payload[::-1]
            kacl, _ = await kz(kazoo.get_acls, f"{zk_path}/acl")
            assert [as_zkwire_acl(a) for a in kacl] == [alice, READ_ACL_UNSAFE[0]]
            kstat = await kz(kazoo.exists, eph)
            assert kstat.ephemeralOwner == zk.session_id
            assert (await kz(kazoo.get, f"{zk_path}/txn"))[0] == b"y"
            assert sorted(await kz(kazoo.get_children, zk_path)) == sorted(
                [
                    *("data", "empty", "acl", "eph", "box", "ttl", "txn", "名前-ü"),
                    *("seq-0000000004", "seq-0000000005", "seq-0000000006"),
                ]
            )
        # closing our session removed the ephemeral node for kazoo too
        assert await kz(kazoo.exists, eph) is None


async def test_kazoo_writes_zkwire_reads(zk_hosts: str, zk_path: str, kazoo: Any) -> None:
    bob = kazoo_security.make_digest_acl("bob", "pw", all=True)
    anyone_read = kazoo_security.make_acl("world", "anyone", read=True)
    with trio.fail_after(LIMIT):
        await kz(kazoo.ensure_path, zk_path)
        await kz(kazoo.create, f"{zk_path}/data", b"\x00\x01kazoo\xff")
        await kz(kazoo.set, f"{zk_path}/data", b"second")
        await kz(kazoo.create, f"{zk_path}/acl", b"secret", acl=[bob, anyone_read])
        eph = await kz(kazoo.create, f"{zk_path}/eph", b"e", ephemeral=True)
        seq = [await kz(kazoo.create, f"{zk_path}/s-", b"", sequence=True) for _ in range(2)]
        await kz(kazoo.create, f"{zk_path}/deep/er/est", b"d", makepath=True)
        txn = kazoo.transaction()
        txn.create(f"{zk_path}/t1", b"1")
        txn.create(f"{zk_path}/t2", b"2")
        await kz(txn.commit)
        kazoo_session = kazoo.client_id[0]

        await kz(kazoo.add_auth, "digest", "bob:pw")
        async with zkwire.open_client(zk_hosts, auth=[("digest", "bob:pw")]) as zk:
            for path in [zk_path, f"{zk_path}/data", f"{zk_path}/acl", eph, *seq, f"{zk_path}/deep/er/est"]:
                kdata, kstat = await kz(kazoo.get, path)
                data, stat = await zk.get_data(path)
                assert data == kdata, path
                assert_same_stat(stat, kstat)
                assert await zk.exists(path) == stat_tuple(kstat)
                kacl, _ = await kz(kazoo.get_acls, path)
                acl, _ = await zk.get_acl(path)
                assert acl == [as_zkwire_acl(a) for a in kacl], path
                kchildren, kparent = await kz(kazoo.get_children, path, include_data=True)
                children, parent = await zk.get_children_with_stat(path)
                assert children == sorted(kchildren)
                assert_same_stat(parent, kparent)

            assert (await zk.get_data(f"{zk_path}/data"))[0] == b"second"
            acl, _ = await zk.get_acl(f"{zk_path}/acl")
            assert acl == [digest_acl("bob", "pw"), ACL(Perm.READ, Id("world", "anyone"))]
            stat = await zk.exists(eph)
            assert stat is not None and stat.ephemeral_owner == kazoo_session != zk.session_id
            assert seq == [f"{zk_path}/s-0000000003", f"{zk_path}/s-0000000004"]
            assert await zk.get_ephemerals(zk_path) == []  # not ours
            assert await zk.get_children(zk_path) == sorted(
                ["acl", "data", "deep", "eph", "s-0000000003", "s-0000000004", "t1", "t2"]
            )
            # the kazoo transaction was one zxid
            t1, t2 = await zk.exists(f"{zk_path}/t1"), await zk.exists(f"{zk_path}/t2")
            assert t1 is not None and t2 is not None and t1.czxid == t2.czxid


async def test_watches_across_clients(zk_hosts: str, zk_path: str, kazoo: Any) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(zk_path)
            # kazoo writes, zkwire's watches fire
            _, _, data_watch = await zk.get_data(zk_path, watch=True)
            _, child_watch = await zk.get_children(zk_path, watch=True)
            await kz(kazoo.set, zk_path, b"k")
            ev = await data_watch.wait()
            assert (ev.type, ev.path) == (EventType.NODE_DATA_CHANGED, zk_path)
            await kz(kazoo.create, f"{zk_path}/k")
            ev = await child_watch.wait()
            assert (ev.type, ev.path) == (EventType.NODE_CHILDREN_CHANGED, zk_path)

            # zkwire writes, kazoo's watch fires
            fired = trio.Event()
            seen: list[Any] = []
            token = trio.lowlevel.current_trio_token()

            def on_event(event: Any) -> None:
                seen.append(event)
                trio.from_thread.run_sync(fired.set, trio_token=token)

            await kz(kazoo.get, f"{zk_path}/k", watch=on_event)
            await zk.set_data(f"{zk_path}/k", b"from zkwire")
            await fired.wait()
            assert seen[0].type == "CHANGED" and seen[0].path == f"{zk_path}/k"


async def test_empty_and_null_data_through_both(zk_hosts: str, zk_path: str, kazoo: Any) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(zk_path)
            await kz(kazoo.create, f"{zk_path}/k-empty", b"")
            await zk.create(f"{zk_path}/z-empty", b"")
            for name in ("k-empty", "z-empty"):
                data, stat = await zk.get_data(f"{zk_path}/{name}")
                kdata, kstat = await kz(kazoo.get, f"{zk_path}/{name}")
                assert data == kdata == b""
                assert stat.data_length == kstat.dataLength == 0


async def test_open_acl_default_matches(zk_hosts: str, zk_path: str, kazoo: Any) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(zk_path)
            await zk.create(f"{zk_path}/z")
            await kz(kazoo.create, f"{zk_path}/k")
            for name in ("z", "k"):
                acl, _ = await zk.get_acl(f"{zk_path}/{name}")
                kacl, _ = await kz(kazoo.get_acls, f"{zk_path}/{name}")
                assert acl == [as_zkwire_acl(a) for a in kacl] == list(OPEN_ACL_UNSAFE)
