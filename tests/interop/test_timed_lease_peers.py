"""Timed leases on one path with kazoo 2.11's NonBlockingLease and MultiNonBlockingLease."""

from __future__ import annotations

import datetime
import json

import pytest
import trio
from helpers.interop import kazoo_client

import zklock
import zkwire

HOUR = datetime.timedelta(hours=1)


async def test_one_holder_among_kazoo_and_zklock_and_renewal(zk_hosts: str, zk_path: str) -> None:
    from kazoo.recipe.lease import NonBlockingLease

    path = f"{zk_path}/lease"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        assert await trio.to_thread.run_sync(lambda: bool(NonBlockingLease(kz, path, HOUR, identifier="kazoo-host")))
        assert not await zklock.non_blocking_lease(zk, path, HOUR, identifier="zklock-host")
        assert await zklock.non_blocking_lease(zk, path, 60.0, identifier="kazoo-host")  # a renewal, by identity
        data = json.loads((await zk.get_data(f"{path}/lease_holder"))[0])
        assert data["version"] == 1 and data["holder"] == "kazoo-host"
        # Two hours later the lease has run out: another holder gets it, and kazoo sees it taken.
        later = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + 2 * HOUR
        assert await zklock.non_blocking_lease(zk, path, 3 * HOUR, identifier="zklock-host", clock=lambda: later)
        assert not await trio.to_thread.run_sync(lambda: bool(NonBlockingLease(kz, path, HOUR, identifier="other")))
        # The lock nodes are gone again; only the holder is left.
        assert await zk.get_children(path) == ["lease_holder"]


async def test_multi_lease_hands_out_count_leases(zk_hosts: str, zk_path: str) -> None:
    from kazoo.recipe.lease import MultiNonBlockingLease

    path = f"{zk_path}/multi"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        assert await trio.to_thread.run_sync(lambda: bool(MultiNonBlockingLease(kz, 2, path, HOUR, identifier="k")))
        assert await zklock.multi_non_blocking_lease(zk, 2, path, HOUR, identifier="z")
        assert not await zklock.multi_non_blocking_lease(zk, 2, path, HOUR, identifier="third")
        assert not await trio.to_thread.run_sync(lambda: bool(MultiNonBlockingLease(kz, 2, path, HOUR, identifier="x")))
        holders = [json.loads((await zk.get_data(f"{path}/{n}/lease_holder"))[0])["holder"] for n in range(2)]
        assert holders == ["k", "z"]


async def test_bad_arguments(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        for duration in (0, -1.0, "1h", True):
            with pytest.raises(zkwire.InvalidArgumentError):
                await zklock.non_blocking_lease(zk, zk_path, duration)  # type: ignore[arg-type]
        with pytest.raises(zkwire.InvalidArgumentError):
            await zklock.multi_non_blocking_lease(zk, 0, zk_path, HOUR)
        assert await zk.exists(zk_path) is None
