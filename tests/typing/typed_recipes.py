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
