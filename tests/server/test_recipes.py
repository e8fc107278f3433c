"""ReadWriteLock, Semaphore, Election and revocation against the real server."""

from __future__ import annotations

import itertools

import pytest
import trio

import zklock
import zkwire


async def _children(zk: zkwire.Client, path: str) -> list[str]:
    try:
        return await zk.get_children(path)
    except zkwire.NoNodeError:
        return []


async def _wait_children(zk: zkwire.Client, path: str, n: int) -> None:
    with trio.fail_after(5):
        while len(await _children(zk, path)) < n:
            await trio.sleep(0.02)


async def test_readers_share_writer_excludes(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/rw"
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        ra, rb = zklock.ReadWriteLock(a, path), zklock.ReadWriteLock(b, path)
        async with ra.read_lock, rb.read_lock:  # two readers at once
            assert len(await ra.read_lock.holders()) == 2
            assert await rb.write_lock.acquire(blocking=False) is False
        async with ra.write_lock as lease:
            assert "__WRIT__" in lease.node
            assert await rb.read_lock.acquire(blocking=False) is False
            assert await rb.write_lock.acquire(blocking=False) is False
        assert await _children(a, path) == []


async def test_reader_after_waiting_writer_queues_behind_it(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/rw"
    events: list[str] = []
    async with zkwire.open_client(zk_hosts) as zk:
        reader1 = zklock.ReadWriteLock(zk, path).read_lock
        writer = zklock.ReadWriteLock(zk, path).write_lock
        reader2 = zklock.ReadWriteLock(zk, path).read_lock
        assert await reader1.acquire()

        async def write() -> None:
            async with writer:
                events.append("writer")

        async def read2() -> None:
            async with reader2:
                events.append("reader2")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await _wait_children(zk, path, 2)
            nursery.start_soon(read2)
            await _wait_children(zk, path, 3)
            await trio.sleep(0.2)
            assert events == []  # reader2 waits for the writer queued before it
            events.append("reader1 done")
            await reader1.release()
        assert events == ["reader1 done", "writer", "reader2"]


async def test_semaphore_limits_holders(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/sem"
    inside = 0
    most = 0
    grants = 0

    async def worker(zk: zkwire.Client) -> None:
        nonlocal inside, most, grants
        for _ in range(3):
            async with zklock.Semaphore(zk, path, max_leases=2):
                inside += 1
                grants += 1
                most = max(most, inside)
                await trio.sleep(0.02)
                inside -= 1

    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for zk in (a, b, a, b, a):
                    nursery.start_soon(worker, zk)
        assert most == 2 and grants == 15
        assert await _children(a, f"{path}/leases") == []


async def test_semaphore_nonblocking_and_no_orphans(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/sem"
    async with zkwire.open_client(zk_hosts) as zk:
        s1 = zklock.Semaphore(zk, path, max_leases=1)
        s2 = zklock.Semaphore(zk, path, max_leases=1)
        async with s1:
            assert await s2.acquire(blocking=False) is False
            with trio.move_on_after(0.3):
                await s2.acquire()
            assert len(await _children(zk, f"{path}/leases")) == 1
        assert await _children(zk, f"{path}/leases") == []
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.Semaphore(zk, path, max_leases=0)


async def test_election_leadership_and_requeue(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/election"
    led: list[str] = []
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        ea = zklock.Election(a, path, identifier="a")
        eb = zklock.Election(b, path, identifier="b")

        async def lead(name: str, lease: zklock.Lease) -> None:
            led.append(name)
            await trio.sleep(0.1)

        with trio.move_on_after(2):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ea.run, lambda lease: lead("a", lease))
                nursery.start_soon(eb.run, lambda lease: lead("b", lease))
        assert led.count("a") >= 2 and led.count("b") >= 2
        # leaders alternate: each run re-queues behind the other contender
        assert all(x != y for x, y in itertools.pairwise(led))
        assert await _children(a, path) == []


async def test_leadership_lost_cancels_body(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/election"
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        election = zklock.Election(zk, path, identifier="me")
        with pytest.raises(zklock.LockLostError), trio.fail_after(5):
            async with election.leadership() as lease:
                assert await election.leader() == "me"
                await other.delete(lease.node)
                await trio.sleep(3)


async def test_revocation_request_reaches_holder(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        holder = zklock.Mutex(a, path)
        waiter = zklock.Mutex(b, path)
        with trio.fail_after(10):
            async with holder as lease:
                assert not lease.revocation_requested
                assert await waiter.request_revocation() is True
                await lease.wait_revocation_requested()
                assert lease.revocation_requested and not lease.lost
            # the holder released; the requester can take the lock now
            assert await waiter.acquire(blocking=False)
            await waiter.release()
        assert await zklock.Mutex(b, path).request_revocation() is False
