"""Every client operation against a real ZooKeeper 3.8.0 server, through ``zkwire.open_client``.

Each test works in its own ``zk_path`` subtree and checks the values the server really returns (Stat
fields, versions, zxid ordering), not just that a call did not raise.
"""

from __future__ import annotations

import trio
from helpers.rawwire import open_session

import zkwire
from zkwire import (
    ACL,
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    Check,
    Create,
    Delete,
    EventType,
    GetChildren,
    GetData,
    Id,
    Perm,
    SessionState,
    SetData,
    Stat,
    WatcherType,
    digest_acl,
    digest_id,
)
from zkwire.constants import MAX_TTL_MS, OpCode
from zkwire.testing.handles import ServerHandle

# Every test finishes well within this (the server's tickTime is 200 ms).
LIMIT = 10


async def ensure_path(zk: zkwire.Client, path: str) -> Stat:
    """Create ``path`` and any missing parents; return the Stat of ``path``."""
    await zk.ensure_path(path)
    stat = await zk.exists(path)
    assert stat is not None
    return stat


def assert_fresh_stat(stat: Stat, data_length: int, owner: int = 0) -> None:
    """The Stat of a node just created and never changed."""
    assert stat.czxid == stat.mzxid == stat.pzxid > 0
    assert stat.ctime == stat.mtime > 0
    assert (stat.version, stat.cversion, stat.aversion) == (0, 0, 0)
    assert stat.ephemeral_owner == owner
    assert stat.data_length == data_length
    assert stat.num_children == 0


# ------------------------------------------------------------------------------------------- create


async def test_create_plain_and_parent_stat(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            parent_before = await ensure_path(zk, zk_path)
            assert await zk.create(f"{zk_path}/a", b"hello") == f"{zk_path}/a"
            data, stat = await zk.get_data(f"{zk_path}/a")
            assert data == b"hello"
            assert_fresh_stat(stat, 5)
            assert stat.czxid > parent_before.czxid
            assert stat.czxid <= zk.last_zxid
            # the parent counts the child: cversion +1, pzxid = the child's creation
            parent = await zk.exists(zk_path)
            assert parent is not None
            assert parent.num_children == 1
            assert parent.cversion == parent_before.cversion + 1
            assert parent.pzxid == stat.czxid
            assert parent.mzxid == parent_before.mzxid  # data of the parent untouched
            assert parent.version == parent_before.version

            with_stat = await zk.create_with_stat(f"{zk_path}/b", b"")
            assert with_stat[0] == f"{zk_path}/b"
            assert_fresh_stat(with_stat[1], 0)
            assert with_stat[1].czxid > stat.czxid
            assert await zk.exists(f"{zk_path}/b") == with_stat[1]


async def test_create_errors(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            await zk.create(f"{zk_path}/a")
            try:
                await zk.create(f"{zk_path}/a")
            except zkwire.NodeExistsError as e:
                assert e.code == -110
                assert e.path == f"{zk_path}/a"
            else:
                raise AssertionError("NodeExistsError expected")
            try:
                await zk.create(f"{zk_path}/missing/child")
            except zkwire.NoNodeError as e:
                assert e.path == f"{zk_path}/missing/child"
            else:
                raise AssertionError("NoNodeError expected")
            # an empty ACL list never leaves the client; "auth" with no credentials is refused by the server
            try:
                await zk.create(f"{zk_path}/c", acl=CREATOR_ALL_ACL)
            except zkwire.InvalidACLError:
                pass
            else:
                raise AssertionError("InvalidACLError expected")
            assert await zk.exists(f"{zk_path}/c") is None


async def test_create_ephemeral(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as watcher:
            await ensure_path(watcher, zk_path)
            async with zkwire.open_client(zk_hosts) as zk:
                path, stat = await zk.create_with_stat(f"{zk_path}/e", b"x", ephemeral=True)
                assert path == f"{zk_path}/e"
                assert_fresh_stat(stat, 1, owner=zk.session_id)
                seen = await watcher.exists(path)
                assert seen == stat  # another session sees the owner too
                try:
                    await zk.create(f"{path}/child")
                except zkwire.NoChildrenForEphemeralsError as e:
                    assert e.code == -108
                else:
                    raise AssertionError("NoChildrenForEphemeralsError expected")
                _, watch = await watcher.exists(path, watch=True)
            # closing the session deletes the node at once, firing the watch
            event = await watch.wait()
            assert event.type == EventType.NODE_DELETED and event.path == path
            assert await watcher.exists(path) is None


async def test_create_sequential_suffix_is_parent_cversion(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            first = await zk.create(f"{zk_path}/q-", sequential=True)
            assert first == f"{zk_path}/q-0000000000"
            await zk.create(f"{zk_path}/plain")  # any child creation counts
            await zk.delete(f"{zk_path}/plain")  # deletions do not
            second = await zk.create(f"{zk_path}/q-", b"d", sequential=True)
            assert second == f"{zk_path}/q-0000000002"
            parent = await zk.exists(zk_path)
            # the visible cversion counts creates and deletes (3 + 1); the counter counts creates only
            assert parent is not None and parent.cversion == 4 and parent.num_children == 2
            assert (parent.cversion + parent.num_children) // 2 == 3
            # "parent/" + sequential: the name is the bare counter
            bare, stat = await zk.create_with_stat(f"{zk_path}/", sequential=True)
            assert bare == f"{zk_path}/0000000003"
            assert_fresh_stat(stat, 0)
            suffix = bare.rsplit("/", 1)[1]
            assert len(suffix) == 10 and suffix.isdigit()
            assert sorted(await zk.get_children(zk_path)) == ["0000000003", "q-0000000000", "q-0000000002"]


async def test_create_ephemeral_sequential(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            a, sa = await zk.create_with_stat(f"{zk_path}/n-", ephemeral=True, sequential=True)
            b = await zk.create(f"{zk_path}/n-", ephemeral=True, sequential=True)
            assert a == f"{zk_path}/n-0000000000" and b == f"{zk_path}/n-0000000001"
            assert_fresh_stat(sa, 0, owner=zk.session_id)
            assert await zk.get_ephemerals(zk_path) == [a, b]


async def test_create_container(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            path, stat = await zk.create_with_stat(f"{zk_path}/c", b"box", container=True)
            assert path == f"{zk_path}/c"
            # observed on 3.8.0: a container's Stat shows ephemeral_owner 0 (not a special marker)
            assert_fresh_stat(stat, 3, owner=0)
            # unlike an ephemeral node it may have children
            await zk.create(f"{path}/child")
            parent = await zk.exists(path)
            assert parent is not None and parent.num_children == 1
            assert await zk.create(f"{zk_path}/c2", container=True) == f"{zk_path}/c2"


async def test_create_ttl(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            path, stat = await zk.create_with_stat(f"{zk_path}/t", b"ttl", ttl=60_000)
            assert path == f"{zk_path}/t"
            assert_fresh_stat(stat, 3, owner=0)  # observed: 0, not an encoded TTL
            assert await zk.exists(path) == stat
            seq = await zk.create(f"{zk_path}/s-", ttl=MAX_TTL_MS, sequential=True)
            assert seq == f"{zk_path}/s-0000000001"
            await zk.create(f"{path}/child")  # a TTL node may have children


# ------------------------------------------------------------------------------------------- delete


async def test_delete_versions_and_errors(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/d"
            await zk.create(node, b"0")
            await zk.set_data(node, b"1")
            try:
                await zk.delete(node, version=0)
            except zkwire.BadVersionError as e:
                assert e.code == -103 and e.path == node
            else:
                raise AssertionError("BadVersionError expected")
            await zk.create(f"{node}/kid")
            try:
                await zk.delete(node, version=1)
            except zkwire.NotEmptyError as e:
                assert e.code == -111
            else:
                raise AssertionError("NotEmptyError expected")
            before = await zk.exists(zk_path)
            await zk.delete(f"{node}/kid", version=0)
            await zk.delete(node, version=1)
            assert await zk.exists(node) is None
            after = await zk.exists(zk_path)
            assert before is not None and after is not None
            # a delete moves the parent's pzxid, and its visible cversion too
            assert after.pzxid > before.pzxid
            assert after.cversion == before.cversion + 1
            assert after.num_children == before.num_children - 1
            try:
                await zk.delete(node)
            except zkwire.NoNodeError as e:
                assert e.path == node
            else:
                raise AssertionError("NoNodeError expected")
            try:
                await zk.delete("/zookeeper")
            except zkwire.BadArgumentsError:
                pass
            else:
                raise AssertionError("BadArgumentsError expected")


# ------------------------------------------------------------------------------------ exists / data


async def test_exists_present_and_absent(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            assert await zk.exists(zk_path) is None
            stat = await ensure_path(zk, zk_path)
            assert stat.num_children == 0
            root = await zk.exists("/")
            assert root is not None and root.czxid == 0 and root.num_children >= 2


async def test_get_data_null_and_empty(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            await zk.create(f"{zk_path}/empty", b"")

            def create_null() -> None:
                from zkwire.protocol.records import CreateRequest

                with open_session(zk_hosts) as raw:
                    reply = raw.call(1, OpCode.CREATE, CreateRequest(f"{zk_path}/null", None, OPEN_ACL_UNSAFE, 0))
                    assert reply.header.err == 0

            await trio.to_thread.run_sync(create_null)
            # the wire differs (length 0 vs -1); the API gives b"" for both, with data_length 0
            for name in ("empty", "null"):
                data, stat = await zk.get_data(f"{zk_path}/{name}")
                assert data == b"" and stat.data_length == 0
            big = bytes(range(256)) * 4000  # 1,024,000 bytes still fits a frame
            stat = await zk.set_data(f"{zk_path}/empty", big)
            assert stat.data_length == len(big)
            data, _ = await zk.get_data(f"{zk_path}/empty")
            assert data == big


async def test_set_data_versions(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/v"
            _, created = await zk.create_with_stat(node, b"a")
            s1 = await zk.set_data(node, b"bb", version=0)
            assert s1.version == 1 and s1.data_length == 2
            assert s1.czxid == created.czxid and s1.ctime == created.ctime
            assert s1.mzxid > created.mzxid and s1.mtime >= created.mtime
            assert s1.pzxid == created.pzxid and s1.cversion == 0 and s1.aversion == 0
            try:
                await zk.set_data(node, b"c", version=0)
            except zkwire.BadVersionError as e:
                assert e.path == node
            else:
                raise AssertionError("BadVersionError expected")
            s2 = await zk.set_data(node, b"ccc")  # -1: any version
            assert s2.version == 2 and s2.mzxid > s1.mzxid
            data, stat = await zk.get_data(node)
            assert data == b"ccc" and stat == s2
            try:
                await zk.set_data(f"{zk_path}/missing", b"")
            except zkwire.NoNodeError:
                pass
            else:
                raise AssertionError("NoNodeError expected")


# --------------------------------------------------------------------------------------------- ACLs


async def test_acl_digest_and_auth(zk_hosts: str, zk_path: str) -> None:
    alice = digest_acl("alice", "secret")
    assert alice.id == Id("digest", "alice:" + digest_id("alice", "secret").id.split(":", 1)[1])
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/locked"
            acl, stat = await zk.get_acl(zk_path)
            assert acl == list(OPEN_ACL_UNSAFE) and stat.aversion == 0
            await zk.create(node, b"private", acl=[alice, READ_ACL_UNSAFE[0]])
            acl, stat = await zk.get_acl(node)
            # without ADMIN on the node the digest hash is masked
            assert acl == [ACL(Perm.ALL, Id("digest", "alice:x")), ACL(Perm.READ, Id("world", "anyone"))]
            assert stat.aversion == 0
            # read is open, write is not
            assert (await zk.get_data(node))[0] == b"private"
            try:
                await zk.set_data(node, b"x")
            except zkwire.NoAuthError as e:
                assert e.code == -102 and e.path == node
            else:
                raise AssertionError("NoAuthError expected")
            try:
                await zk.set_acl(node, [alice])
            except zkwire.NoAuthError:
                pass
            else:
                raise AssertionError("NoAuthError expected")

            await zk.add_auth("digest", "alice:secret")
            stat = await zk.set_data(node, b"mine")
            assert stat.version == 1
            try:
                await zk.set_acl(node, [alice], version=5)
            except zkwire.BadVersionError:
                pass
            else:
                raise AssertionError("BadVersionError expected")
            acl, _ = await zk.get_acl(node)
            assert acl == [alice, ACL(Perm.READ, Id("world", "anyone"))]
            stat = await zk.set_acl(node, [alice], version=0)
            assert stat.aversion == 1 and stat.version == 1
            # "auth" ACL: the server writes the session's authenticated ids in its place
            await zk.create(f"{zk_path}/creator", acl=CREATOR_ALL_ACL)
            acl, _ = await zk.get_acl(f"{zk_path}/creator")
            assert acl == [ACL(Perm.ALL, digest_id("alice", "secret"))]

        async with zkwire.open_client(zk_hosts) as other:
            try:
                await other.get_data(node)
            except zkwire.NoAuthError:
                pass
            else:
                raise AssertionError("NoAuthError expected")
            # exists needs no permission on 3.8.0
            seen = await other.exists(node)
            assert seen is not None and seen.aversion == 1
            await other.add_auth("digest", "alice:secret")
            assert (await other.get_data(node))[0] == b"mine"
            await other.delete(f"{zk_path}/creator")  # DELETE on the parent is open


async def test_auth_via_open_client_and_who_am_i(zk_server: ServerHandle, zk_hosts: str) -> None:
    ip = zk_server.client_address  # 127.0.0.1, or the container network's gateway
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            # 3.8.0 does implement whoAmI: the connection's ip is always there
            assert await zk.who_am_i() == [("ip", ip)]
            await zk.add_auth("digest", "bob:pw")
            assert sorted(await zk.who_am_i()) == [("digest", "bob"), ("ip", ip)]
        async with zkwire.open_client(zk_hosts, auth=[("digest", "carol:pw"), ("digest", "dave:pw")]) as zk:
            assert sorted(await zk.who_am_i()) == [("digest", "carol"), ("digest", "dave"), ("ip", ip)]


async def test_add_auth_unknown_scheme(zk_server: ServerHandle, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            try:
                await zk.add_auth("nosuchscheme", "x")
            except zkwire.AuthFailedError as e:
                assert e.code == -115
            else:
                raise AssertionError("AuthFailedError expected")
            # the server dropped the connection; the session itself lives on, without the credential
            assert await zk.exists(zk_path) is not None
            assert zk.state is SessionState.CONNECTED and zk.session_id == sid
            assert await zk.who_am_i() == [("ip", zk_server.client_address)]


# ----------------------------------------------------------------------------------------- children


async def test_get_children_and_with_stat(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            assert await zk.get_children(zk_path) == []
            names = ["b", "a", "c-", "ü"]
            created = [await zk.create(f"{zk_path}/{n}", sequential=n.endswith("-")) for n in names]
            expected = sorted(c.rsplit("/", 1)[1] for c in created)
            assert await zk.get_children(zk_path) == expected
            children, stat = await zk.get_children_with_stat(zk_path)
            assert children == expected
            assert stat.num_children == 4 and stat.cversion == 4
            last = await zk.exists(created[-1])
            assert last is not None and stat.pzxid == last.czxid
            assert await zk.get_all_children_number(zk_path) == 4
            try:
                await zk.get_children(f"{zk_path}/none")
            except zkwire.NoNodeError:
                pass
            else:
                raise AssertionError("NoNodeError expected")
            assert "zookeeper" in await zk.get_children("/")


async def test_get_all_children_number_counts_descendants(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, f"{zk_path}/a/b/c")
            await zk.create(f"{zk_path}/a/x")
            await zk.create(f"{zk_path}/y")
            assert await zk.get_all_children_number(zk_path) == 5
            assert await zk.get_all_children_number(f"{zk_path}/a/b/c") == 0
            try:
                await zk.get_all_children_number(f"{zk_path}/nope")
            except zkwire.NoNodeError:
                pass
            else:
                raise AssertionError("NoNodeError expected")


async def test_sync(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            assert await zk.sync(zk_path) == zk_path
            assert await zk.sync() == "/"


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


# ------------------------------------------------------------------------------- ephemerals listing


async def test_get_ephemerals_with_prefix(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, f"{zk_path}/x")
            await ensure_path(zk, f"{zk_path}/y")
            await zk.create(f"{zk_path}/x/e1", ephemeral=True)
            await zk.create(f"{zk_path}/x/e2", ephemeral=True)
            await zk.create(f"{zk_path}/y/e3", ephemeral=True)
            await zk.create(f"{zk_path}/x/persistent")
            assert await zk.get_ephemerals(f"{zk_path}/x") == [f"{zk_path}/x/e1", f"{zk_path}/x/e2"]
            # the prefix is a string prefix, not a path boundary
            assert await zk.get_ephemerals(f"{zk_path}/x/e") == [f"{zk_path}/x/e1", f"{zk_path}/x/e2"]
            assert await zk.get_ephemerals(zk_path) == [f"{zk_path}/x/e1", f"{zk_path}/x/e2", f"{zk_path}/y/e3"]
            everything = await zk.get_ephemerals()
            assert everything == [f"{zk_path}/x/e1", f"{zk_path}/x/e2", f"{zk_path}/y/e3"]
            async with zkwire.open_client(zk_hosts) as other:
                assert await other.get_ephemerals() == []  # only the caller's own session


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


# ------------------------------------------------------------------------------------------ reconfig


async def test_reconfig_disabled_on_standalone(zk_hosts: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            try:
                await zk.reconfig(joining="server.9=127.0.0.1:1:2:participant;127.0.0.1:3")
            except zkwire.ReconfigDisabledError as e:
                assert e.code == -123
            else:
                raise AssertionError("ReconfigDisabledError expected")
            # the session is unharmed
            assert zk.state is SessionState.CONNECTED
            assert await zk.exists("/") is not None


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


async def test_unreadable_data(zk_hosts: str, zk_path: str) -> None:
    """Both ends limit frames to jute.maxbuffer (1 MiB - 1).  A getData reply is 88 bytes longer than the
    data, a setData request only 20 + path bytes longer: with a short path, data that fits a request
    cannot come back.  The server sends the reply anyway; the client skips it and fails only that
    request (ReplyTooLargeError, the connection is kept), and only a client with a larger ``max_frame``
    can read the node."""
    n = 0xFFFFF - 88 + 1  # the getData reply is one byte over the limit
    assert 8 + (4 + len(zk_path.encode())) + (4 + n) + 4 <= 0xFFFFF, "zk_path too long for this test"
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            stat = await zk.set_data(zk_path, b"z" * n)
            assert stat.data_length == n
            try:
                await zk.get_data(zk_path)
            except zkwire.ReplyTooLargeError as e:
                assert e.size == 0xFFFFF + 1 and e.max_frame == 0xFFFFF
            else:
                raise AssertionError("ReplyTooLargeError expected")
            stat2 = await zk.exists(zk_path)  # on the same connection
            assert stat2 == stat and zk.session_id == sid and zk.state is zkwire.SessionState.CONNECTED
        async with zkwire.open_client(zk_hosts, max_frame=2 << 20) as big:
            data, stat3 = await big.get_data(zk_path)
            assert len(data) == n and stat3 == stat
            await big.set_data(zk_path, b"")


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


# ----------------------------------------------------------------------------------------- bad input


async def test_bad_input_is_rejected_before_sending(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            zxid = zk.last_zxid
            bad_paths = ["", "a", f"{zk_path}/", f"{zk_path}//x", f"{zk_path}/./x", f"{zk_path}/..", f"{zk_path}/\x00"]
            for p in bad_paths:
                for call in (zk.create(p), zk.get_data(p), zk.delete(p), zk.exists(p)):
                    try:
                        await call
                    except zkwire.InvalidPathError:
                        pass
                    else:
                        raise AssertionError(f"InvalidPathError expected for {p!r}")
            try:
                await zk.create(f"{zk_path}/big", b"x" * (1 << 20))
            except zkwire.DataTooLargeError:
                pass
            else:
                raise AssertionError("DataTooLargeError expected")
            try:
                await zk.set_data(zk_path, b"x" * (1 << 20))
            except zkwire.DataTooLargeError:
                pass
            else:
                raise AssertionError("DataTooLargeError expected")
            for kwargs in (
                {"ttl": 1000, "ephemeral": True},
                {"ttl": 0},
                {"ttl": MAX_TTL_MS + 1},
                {"container": True, "sequential": True},
                {"container": True, "ephemeral": True},
            ):
                try:
                    await zk.create(f"{zk_path}/bad", **kwargs)  # type: ignore[arg-type]
                except zkwire.InvalidArgumentError:
                    pass
                else:
                    raise AssertionError(f"InvalidArgumentError expected for {kwargs}")
            for version in (-2, 1 << 31):
                try:
                    await zk.set_data(zk_path, b"", version=version)
                except zkwire.InvalidArgumentError:
                    pass
                else:
                    raise AssertionError("InvalidArgumentError expected")
            try:
                await zk.create(f"{zk_path}/bad", acl=[])
            except zkwire.InvalidArgumentError:
                pass
            else:
                raise AssertionError("InvalidArgumentError expected")
            # nothing reached the server: same session, no write happened, and it still works
            assert zk.state is SessionState.CONNECTED and zk.session_id == sid
            assert zk.last_zxid == zxid
            assert await zk.get_children(zk_path) == []
            assert await zk.create(f"{zk_path}/ok") == f"{zk_path}/ok"
