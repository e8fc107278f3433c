"""The node operations against a real ZooKeeper 3.8.0 server, through ``zkwire.open_client``: create (plain,
ephemeral, sequential, container, TTL), delete, exists, getData, setData, the children, sync and the
ephemerals listing.

Each test works in its own ``zk_path`` subtree and checks the values the server really returns (Stat
fields, versions, zxid ordering), not just that a call did not raise.
"""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, assert_fresh_stat, ensure_path
from helpers.rawwire import open_session

import zkwire
from zkwire import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, EventType
from zkwire.constants import MAX_TTL_MS, OpCode

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
