"""The toolbox under faults injected into the client (a reply lost or late, a session ending at a chosen
step), each a bug a review found: the recipe settles the fault instead of stopping, spinning, stranding
or doubling something."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel
from helpers.sessiontools import expire

import zklock
import zkwire
from zklock.persistent import PersistentNode
from zklock.workqueue import LockingQueue, Queue


async def test_a_lost_read_while_adopting_does_not_stop_the_keeper(zk_hosts: str, zk_path: str) -> None:
    """A lost reply while the keeper adopts our own node: it starts over (it used to stop for good)."""
    path = f"{zk_path}/node"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        # Our own ephemeral node, as a create whose reply was lost would leave it.
        await zk.create(path, b"x", ephemeral=True)
        real_get = zk.get_data
        calls = 0

        async def flaky_get(p, *a, **k):  # the connection drops with this read in flight, once
            nonlocal calls
            calls += 1
            if p == path and calls == 1:
                raise zkwire.ConnectionLossError(p)
            return await real_get(p, *a, **k)

        zk.get_data = flaky_get  # type: ignore[method-assign]
        async with PersistentNode(zk, path, b"x") as node:
            with trio.fail_after(5):
                assert await node.wait_created() == path
            await zk.delete(path)
            with trio.fail_after(5):
                while await zk.exists(path) is None:
                    await trio.sleep(0.02)
        assert calls >= 2


async def test_a_cancelled_get_never_strands_an_item(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        qa, qb = LockingQueue(a, zk_path), LockingQueue(b, zk_path)
        await qa.put(b"job")
        real_get = a.get_data

        async def slow_get(p, *args, **kw):  # a slow reply to the item read
            if "/entries/" in p:
                await trio.sleep(2)  # a late reply (a reply that never comes ends the connection)
            return await real_get(p, *args, **kw)

        a.get_data = slow_get  # type: ignore[method-assign]
        with trio.move_on_after(1):
            await qa.get()
        a.get_data = real_get  # type: ignore[method-assign]
        # The item ended up held by qa (and handed out to nobody else) or free again, never stranded.
        if qa.processing is not None:
            assert await qa.release()
        with trio.fail_after(5):
            assert await qb.get() == b"job"


async def test_a_cancelled_take_never_loses_an_item(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        q = Queue(zk, f"{zk_path}/q")
        await q.put(b"job")
        real_multi = zk.multi

        async def slow_reply(ops, *a, **k):  # applied by the server; the reply comes late
            result = await real_multi(ops, *a, **k)
            await trio.sleep(2)  # a late reply (a reply that never comes ends the connection)
            return result

        zk.multi = slow_reply  # type: ignore[method-assign]
        got = None
        with trio.move_on_after(1):  # "Bound a blocking get() with a cancel scope"
            got = await q.get()
        zk.multi = real_multi  # type: ignore[method-assign]
        # Taken exactly once: handed to the cancelled caller (the take completes first) or still there.
        assert got == b"job" or await q.get_nowait() == b"job"


async def test_a_stale_release_never_deletes_another_consumers_lock(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.sessions(zk_hosts, session_timeout=4, min_delay=0.05) as stream:
        async with zkwire.open_client(zk_hosts) as b, zkwire.open_client(zk_hosts) as c:
            qa, qb, qc = LockingQueue(stream, zk_path), LockingQueue(b, zk_path), LockingQueue(c, zk_path)
            await qa.put(b"job")
            assert await qa.get() == b"job"
            a1 = stream.current
            assert a1 is not None
            real_multi = a1.multi

            async def late(ops, *args, **kw):  # A's session ends just before its release goes out
                await expire(a1, zk_hosts)
                with trio.fail_after(5):
                    assert await qb.get() == b"job"  # B now holds the item
                return await real_multi(ops, *args, **kw)

            a1.multi = late  # type: ignore[method-assign]
            assert not await qa.release()  # told: its lock went with its session
            assert await qb.holds_lock(), "B's lock was deleted by A's stale release"
            with trio.move_on_after(1):
                await qc.get()
                pytest.fail("C got the item while B holds it")


async def test_a_missing_taken_node_is_made(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(f"{zk_path}/entries")
        await zk.create(f"{zk_path}/entries/entry-100-", b"job", sequential=True)
        q = LockingQueue(zk, zk_path)
        real = zk.get_children
        calls = 0

        async def counting(*a, **k):
            nonlocal calls
            calls += 1
            return await real(*a, **k)

        zk.get_children = counting  # type: ignore[method-assign]
        with trio.fail_after(5):
            assert await q.get() == b"job"
        assert calls < 10


async def test_a_lost_reply_while_making_the_witness_directory_is_settled(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        q = Queue(zk, f"{zk_path}/q")
        real = zk.ensure_path
        lost = 0

        async def flaky(*a, **k):  # the connection drops while a path is made, the first two times
            nonlocal lost
            if lost < 2:
                lost += 1
                raise zkwire.ConnectionLossError("/x")
            return await real(*a, **k)

        zk.ensure_path = flaky  # type: ignore[method-assign]
        with trio.fail_after(10):
            await q.put(b"job")  # "ConnectionLossError: never"
        del zk.ensure_path
        assert await q.get_nowait() == b"job" and lost == 2


async def test_a_consumer_whose_session_ends_is_told_by_consume(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.sessions(zk_hosts, session_timeout=4, min_delay=0.05) as stream:
        qa = LockingQueue(stream, zk_path)
        await qa.put(b"job")
        assert await qa.get() == b"job"
        a1 = stream.current
        assert a1 is not None
        real_sync = a1.sync

        async def sync_during_partition(*a, **k):  # the session ends while consume() looks
            await expire(a1, zk_hosts)
            return await real_sync(*a, **k)

        a1.sync = sync_during_partition  # type: ignore[method-assign]
        assert not await qa.consume()  # told, not raised: the lock went with the session
        assert qa.processing is None
        with trio.fail_after(10):
            assert await qa.get() == b"job"  # taken again, this time holding its lock
        assert await qa.holds_lock()
        assert await qa.consume()


class _Spun(Exception):
    pass


async def test_a_stopped_keeper_ends_the_partitioner_instead_of_spinning(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.sessions(zk_hosts, session_timeout=4, min_delay=0.05) as stream:
        async with zklock.SetPartitioner(stream, zk_path, [1, 2], time_boundary=0.1) as part:
            node = part._member.node
            await node.wait_created()
            # What test_persistent_node_keeper_dies_on_connection_loss shows can happen to the keeper:
            node._stop(zkwire.ConnectionLossError(node.path))
            real = part._member.wait_joined
            calls = 0
            other_task_ran = False

            async def counting():
                nonlocal calls
                calls += 1
                if calls >= 100_000:
                    raise _Spun
                return await real()

            part._member.wait_joined = counting  # type: ignore[method-assign]

            async def other() -> None:
                nonlocal other_task_ran
                await trio.lowlevel.checkpoint()
                other_task_ran = True

            async with trio.open_nursery() as n:
                n.start_soon(other)
                with pytest.raises(zkwire.ConnectionLossError):  # the keeper's error, raised once
                    await part.__anext__()
            assert other_task_ran and calls == 1


async def test_aclose_during_a_lost_reply_never_double_counts(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        counter = zklock.Counter(zk, f"{zk_path}/c")
        await counter.add(1)  # the witness node exists now
        real_multi = zk.multi
        armed = True
        async with trio.open_nursery() as tidying:

            async def applied_then_lost(ops, *a, **k):
                nonlocal armed
                result = await real_multi(ops, *a, **k)
                if armed:
                    armed = False
                    tidying.start_soon(counter.aclose)  # another task tidies up ("the counter stays usable")
                    await trio.sleep(0.2)
                    raise zkwire.ConnectionLossError("/reply-lost")
                return result

            zk.multi = applied_then_lost  # type: ignore[method-assign]
            await counter.add(1)
        zk.multi = real_multi  # type: ignore[method-assign]
        assert await counter.value() == 2


async def test_an_add_whose_session_ends_while_reading_carries_on(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.sessions(zk_hosts, session_timeout=4, min_delay=0.05) as stream:
        counter = zklock.Counter(stream, f"{zk_path}/c")
        await counter.add(1)
        s1 = stream.current
        assert s1 is not None
        real_get = s1.get_data

        async def during_partition(*a, **k):  # the session ends while add() reads
            await expire(s1, zk_hosts)
            return await real_get(*a, **k)

        s1.get_data = during_partition  # type: ignore[method-assign]
        with trio.fail_after(15):
            assert await counter.add(1) == 2  # a stream is given: it carries on in the next session
        assert await counter.value() == 2
