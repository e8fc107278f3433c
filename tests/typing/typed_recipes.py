"""User code taking zklock's recipes with ``async with``: the block gets a Lease, typed."""

from __future__ import annotations

from typing import assert_type

import trio

import zklock
import zkwire
from zklock import Lease


async def locks(zk: zkwire.Client) -> None:
    mutex = zklock.Mutex(zk, "/locks/a", identifier="me", naming="kazoo")
    async with mutex as lease:
        assert_type(lease, Lease)
        assert_type(lease.lost, bool)
        assert_type(await lease.wait_lost(), str)
        assert_type(await lease.fenced([zkwire.SetData("/a", b"")]), list[str | zkwire.Stat | None])
        print(lease.no_such_field)  # type: ignore[attr-defined]
    assert_type(await mutex.acquire(blocking=False), bool)
    assert_type(await mutex.acquire_lease(), Lease)
    assert_type(mutex.lease, Lease | None)
    assert_type(await mutex.holders(), list[str])
    zklock.Mutex(zk, "/locks/a", naming="other")  # type: ignore[arg-type]  # "curator" or "kazoo"

    rw = zklock.ReadWriteLock(zk, "/locks/rw")
    assert_type(rw.read_lock, zklock.ReadLock)
    async with rw.read_lock as lease:
        assert_type(lease, Lease)
    async with rw.write_lock as lease:
        assert_type(lease, Lease)

    semaphore = zklock.Semaphore(zk, "/locks/s", 3)
    async with semaphore as lease:
        assert_type(lease, Lease)
    zklock.Semaphore(zk, "/locks/s")  # type: ignore[call-arg]  # max_leases is required


async def elections(zk: zkwire.Client) -> None:
    election = zklock.Election(zk, "/election")
    async with election.leadership() as lease:
        assert_type(lease, Lease)
    async with election as lease:
        assert_type(lease, Lease)
    assert_type(await election.leader(), str | None)

    async def lead(lease: Lease) -> None:
        await trio.sleep_forever()

    await election.run(lead)

    async def idle() -> None:
        await trio.sleep(1)

    await election.run(idle)  # type: ignore[arg-type]  # fn takes the lease


async def toolbox(zk: zkwire.Client, stream: zkwire.Sessions) -> None:
    async with zklock.PersistentNode(stream, "/n", b"d", mode="ttl", ttl=5.0) as node:
        assert_type(await node.wait_created(), str)
        assert_type(node.actual_path, str | None)
    zklock.PersistentNode(zk, "/n", mode="sticky")  # type: ignore[arg-type]
    async with zklock.GroupMember(zk, "/g", "me", b"p") as member:
        assert_type(await member.current_members(), dict[str, bytes])
    async with zklock.open_group_view(zk, "/g") as view:
        assert_type(view.members, dict[str, bytes])
        async for members in view.changes():
            assert_type(members, dict[str, bytes])
    async for identifiers in zklock.watch_party(stream, "/p"):
        assert_type(identifiers, list[str])
    assert_type(await zklock.SharedCount(zk, "/c").add(1), int)
    assert_type(await zklock.AtomicLong(zk, "/l").add(1), zklock.AtomicValue)
    assert_type(await zklock.Counter(zk, "/k", 0.5).add(0.5), int | float)
    queue = zklock.LockingQueue(stream, "/q")
    async with queue.take() as item:
        assert_type(item, bytes)
    assert_type(await zklock.Queue(zk, "/q2", naming="curator").get_nowait(), bytes | None)
    async with zklock.SetPartitioner(stream, "/parts", range(4)) as partitioner:
        async for assignment in partitioner:
            assert_type(assignment.partitions, list[object])
    async with zklock.Semaphore(zk, "/s", 3).leases(2) as leases:
        assert_type(leases, list[Lease])
    async with zklock.MultiLock(zk, ["/a", "/b"]) as held:
        assert_type(held, list[Lease])
    assert_type(await zklock.non_blocking_lease(zk, "/lease", 60.0), bool)
    discovery = zklock.ServiceDiscovery(stream, "/services")
    async with discovery.open_cache("api") as cache:
        provider = zklock.ServiceProvider(cache, "random")
        assert_type(provider.get_instance(), zklock.ServiceInstance | None)
    zklock.ServiceProvider(cache, "sticky")  # type: ignore[arg-type]
