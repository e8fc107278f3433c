"""The lock recipes' own logic without a server, on an in-memory tree (tests/helpers/memorytree.py): queue order,
shared listings, requests per handoff, readers and writers, a semaphore's wait.

These count requests exactly, which the real server cannot show; tests/server/test_lock_drain.py and
tests/server/test_recipes.py test the same behaviour against the real server.
"""

from __future__ import annotations

from typing import cast

import trio
import trio.testing
from helpers.memorytree import MemoryClient

import zklock
from zklock.lease import OWN_NODE_WATCH_DELAY
from zkwire import Client

PATH = "/locks/job"


def _sequence(node: str) -> int:
    return int(node[-10:])


async def _settle() -> None:
    """Until every task waits for something (the holders' own-node watches have started)."""
    await trio.sleep(OWN_NODE_WATCH_DELAY * 2)
    await trio.testing.wait_all_tasks_blocked()


async def test_many_waiters_of_one_process_share_listings_and_hand_over_with_one_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Virtual time: which waiters queue "at once" (and share a listing) does not depend on how busy the
    # machine is (on a loaded machine, real time passed while 300 waiters started).
    n = 300
    granted: list[int] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as outer:
            zk = MemoryClient(outer)
            holder = zklock.Mutex(cast(Client, zk), PATH)
            await holder.acquire()
            lock = zklock.Mutex(cast(Client, zk), PATH)
            async with trio.open_nursery() as nursery:

                async def waiter() -> None:
                    async with lock as lease:
                        granted.append(_sequence(lease.node))

                before = zk.requests.copy()
                for _ in range(n):
                    nursery.start_soon(waiter)
                await _settle()
                queueing = zk.requests - before
                assert len(zk.children(PATH)) == n + 1
                zk.requests.clear()
                await holder.release()
            draining = zk.requests.copy()
            outer.cancel_scope.cancel()
    assert granted == sorted(granted) and len(granted) == n
    # Queueing: a create and a watch on its predecessor per waiter (and the holder's own-node watch);
    # the listings are shared by the waiters that queued at once.
    assert queueing["Create"] == n and queueing["GetData"] == n + 1
    assert 1 <= queueing["GetChildren"] <= 5, queueing
    # Draining: each handoff is one delete; nobody lists the queue or sets another watch.
    assert draining == {"Delete": n + 1}, draining
    assert zk.children(PATH) == []


async def test_readers_between_writers_hold_together_and_writers_alone() -> None:
    kinds = ["read", "read", "write", "read", "read", "read", "write", "write", "read"]
    holding = {"read": 0, "write": 0}
    overlaps: list[dict[str, int]] = []
    batches: list[list[str]] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as outer:
            zk = MemoryClient(outer)
            rw = zklock.ReadWriteLock(cast(Client, zk), PATH)
            await rw.write_lock.acquire()
            go = trio.Event()
            async with trio.open_nursery() as nursery:

                async def contender(kind: str) -> None:
                    lock = rw.read_lock if kind == "read" else rw.write_lock
                    async with lock:
                        holding[kind] += 1
                        if holding["write"] > 1 or (holding["write"] and holding["read"]):
                            overlaps.append(dict(holding))
                        batches.append([k for k, v in holding.items() for _ in range(v)])
                        await go.wait()
                        holding[kind] -= 1

                for kind in kinds:
                    nursery.start_soon(contender, kind)
                    await trio.testing.wait_all_tasks_blocked()  # queue in this order
                zk.requests.clear()
                await rw.write_lock.release()
                await trio.testing.wait_all_tasks_blocked()
                first = max(batches, key=len) if batches else []
                go.set()
            draining = zk.requests.copy()
            outer.cancel_scope.cancel()
    assert overlaps == []
    assert sorted(first) == ["read", "read"]  # the first two readers hold together
    assert len(batches) == len(kinds)
    assert draining["GetChildren"] == 0, draining


async def test_a_semaphore_acquirer_lists_once_per_change() -> None:
    """The acquirer waiting for a lease lists the lease parent once per change it is told of (that
    listing also sets the watch for the next change)."""
    with trio.fail_after(30):
        async with trio.open_nursery() as outer:
            zk = MemoryClient(outer)
            client = cast(Client, zk)
            first, second = zklock.Semaphore(client, PATH, 2), zklock.Semaphore(client, PATH, 2)
            waiting = zklock.Semaphore(client, PATH, 2)
            release_first = trio.Event()
            async with trio.open_nursery() as nursery:

                async def hold(sem: zklock.Semaphore, until: trio.Event) -> None:
                    async with sem:
                        await until.wait()

                nursery.start_soon(hold, first, release_first)
                nursery.start_soon(hold, second, trio.Event())
                await _settle()
                got = trio.Event()

                async def acquire() -> None:
                    await waiting.acquire()
                    got.set()

                nursery.start_soon(acquire)
                await _settle()
                assert not got.is_set()
                leases = f"{PATH}/leases"
                zk.requests.clear()
                await zk.create(f"{leases}/not-a-lease")  # a child no recipe wrote takes a lease too
                await _settle()
                release_first.set()
                await _settle()
                assert not got.is_set()  # the second holder and the foreign child fill both leases
                zk.remove(f"{leases}/not-a-lease")
                await _settle()
                assert got.is_set()
                # Three changes (a child created, a lease released, a child deleted): one listing each.
                assert zk.requests["GetChildren"] == 3, zk.requests
                nursery.cancel_scope.cancel()
            outer.cancel_scope.cancel()
