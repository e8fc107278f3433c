"""Work queues on one path with the real peers: kazoo 2.11's Queue and LockingQueue, Curator 5.4's
SimpleDistributedQueue; priorities kept, an item of a consumer that died taken again, a lost reply
neither loses an item nor makes two, and an expiry never hands one item to two consumers unknowingly."""

from __future__ import annotations

import pytest
import trio
from helpers.addresses import first_server
from helpers.curator import curator_recipes
from helpers.interop import kazoo_client
from helpers.sessiontools import expire

import zklock
import zkwire
from zkwire.constants import OpCode


async def test_kazoo_queue_both_ways_in_priority_order(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/queue"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        theirs = kz.Queue(path)
        async with zklock.Queue(zk, path) as ours:
            await ours.put(b"low", priority=200)
            await ours.put(b"first", priority=5)
            await trio.to_thread.run_sync(lambda: theirs.put(b"kazoo", priority=100))
            await ours.put_all([b"a", b"b"], priority=100)
            got = [await trio.to_thread.run_sync(theirs.get) for _ in range(2)]
            assert got == [b"first", b"kazoo"]
            assert [await ours.get(), await ours.get(), await ours.get()] == [b"a", b"b", b"low"]
            assert await ours.get_nowait() is None
            assert await trio.to_thread.run_sync(theirs.get) is None
        assert await zk.get_children(path) == []
        assert (
            await zk.exists(f"{path}-zklock-witness") is None or await zk.get_children(f"{path}-zklock-witness") == []
        )


async def test_a_blocked_get_wakes_on_a_peers_put(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = f"{zk_path}/simple"
    async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
        ours = zklock.Queue(zk, path, naming="curator")
        got: list[bytes] = []
        async with trio.open_nursery() as nursery:

            async def consume() -> None:
                got.append(await ours.get())

            nursery.start_soon(consume)
            await trio.sleep(0.3)
            assert got == []
            await java.ask("squeue-offer", path, "from-java")
        assert got == [b"from-java"]
        await ours.put(b"from-zklock")
        assert await java.ask("squeue-poll", path) == "ITEM from-zklock"
        assert await java.ask("squeue-poll", path) == "EMPTY"
        with pytest.raises(zkwire.InvalidArgumentError):
            await ours.put(b"x", priority=1)


async def test_locking_queue_both_ways_and_a_dead_consumers_item_comes_back(zk_hosts: str, zk_path: str) -> None:
    from kazoo.recipe.queue import LockingQueue

    path = f"{zk_path}/locking"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        theirs = LockingQueue(kz, path)
        ours = zklock.LockingQueue(zk, path)
        await trio.to_thread.run_sync(lambda: theirs.put(b"k1", priority=50))
        await ours.put(b"z1", priority=10)
        async with ours.take() as item:
            assert item == b"z1"  # priority first
            assert ours.processing is not None
            assert await zk.get_children(f"{path}/taken") == [ours.processing[0]]
        assert await trio.to_thread.run_sync(theirs.get, 5) == b"k1"
        assert await trio.to_thread.run_sync(theirs.consume)
        # A zklock consumer dies (its session closes) before consuming: kazoo gets the item.
        await ours.put(b"orphan")
        async with zkwire.open_client(zk_hosts) as doomed_zk:
            doomed = zklock.LockingQueue(doomed_zk, path)
            assert await doomed.get() == b"orphan"
            assert await trio.to_thread.run_sync(theirs.get, 0.3) is None  # locked meanwhile
        assert await trio.to_thread.run_sync(theirs.get, 10) == b"orphan"
        assert await trio.to_thread.run_sync(theirs.consume)
        # A kazoo consumer dies: zklock gets its item.
        await ours.put(b"orphan2")
        async with kazoo_client(zk_hosts) as kz2:
            dying = LockingQueue(kz2, path)
            assert await trio.to_thread.run_sync(dying.get, 5) == b"orphan2"
        with trio.fail_after(10):
            async with ours.take() as item:
                assert item == b"orphan2"
        assert await zk.get_children(f"{path}/entries") == []
        assert await zk.get_children(f"{path}/taken") == []


@pytest.mark.parametrize("what", ["put", "take", "locking-put", "locking-consume"])
async def test_a_lost_reply_neither_loses_nor_doubles(zk_hosts: str, zk_path: str, faultproxy, what: str) -> None:
    """The reply of the put's or take's transaction is lost after the server applied it: one item made,
    one taken, none left (the witness settles it)."""
    path = f"{zk_path}/queue"
    locking = what.startswith("locking")
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk, zkwire.open_client(zk_hosts) as other:
            queue: zklock.Queue | zklock.LockingQueue = (
                zklock.LockingQueue(zk, path) if locking else zklock.Queue(zk, path)
            )
            items = f"{path}/entries" if locking else path
            if what in ("take", "locking-consume"):
                await queue.put(b"only")
            swallow = proxy.swallow_reply(op=OpCode.MULTI, path_prefix=path)
            with trio.fail_after(15):
                if what.endswith("put"):
                    await queue.put(b"only")
                elif isinstance(queue, zklock.LockingQueue):
                    assert await queue.get() == b"only"
                    assert await queue.consume()
                else:
                    assert await queue.get() == b"only"
            assert swallow.triggered and swallow.reply is not None and swallow.reply.err == 0
            await other.sync(path)
            left = await other.get_children(items)
            assert len(left) == (1 if what.endswith("put") else 0), left
            if what.endswith("put"):
                if isinstance(queue, zklock.LockingQueue):
                    async with queue.take() as item:
                        assert item == b"only"
                else:
                    assert await queue.get() == b"only"
            assert await other.get_children(items) == []
            await queue.aclose()


async def test_an_expired_consumer_is_told_and_the_item_goes_to_another(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/locking"
    async with zkwire.sessions(zk_hosts, session_timeout=4) as stream, zkwire.open_client(zk_hosts) as zk:
        first = zklock.LockingQueue(stream, path)
        await first.put(b"job")
        assert await first.get() == b"job"
        old = stream.current
        assert old is not None
        await expire(old, zk_hosts)
        second = zklock.LockingQueue(zk, path)
        with trio.fail_after(10):
            assert await second.get() == b"job"
        assert not await first.holds_lock()
        assert not await first.consume()  # told: it no longer owns the item
        assert await second.consume()
        assert await zk.get_children(f"{path}/entries") == []


async def test_bad_items_are_refused(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        queue = zklock.LockingQueue(zk, f"{zk_path}/q")
        for value, priority in ((b"x", 1000), (b"x", -1), ("text", 1), (b"x", True)):
            with pytest.raises(zkwire.InvalidArgumentError):
                await queue.put(value, priority)  # type: ignore[arg-type]
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.Queue(zk, f"{zk_path}/q", naming="java")  # type: ignore[arg-type]
        assert await zk.exists(f"{zk_path}/q") is None  # nothing written


async def test_a_lost_read_after_locking_an_item_does_not_strand_it(zk_hosts: str, zk_path: str, faultproxy) -> None:
    """The connection is cut while the consumer reads the item it has just locked: it reads it again
    and gets it (before, it started over, found the item taken -- by its own lock -- and waited)."""
    path = f"{zk_path}/locking"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            queue = zklock.LockingQueue(zk, path)
            await queue.put(b"job")
            swallow = proxy.swallow_reply(op=OpCode.GET_DATA, path_prefix=f"{path}/entries/")
            with trio.fail_after(15):
                assert await queue.get() == b"job"
            assert swallow.triggered
            assert await queue.consume()
            await queue.aclose()
