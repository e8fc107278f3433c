"""SetPartitioner on one path with kazoo 2.11's: the set split by kazoo's rule between a kazoo member and
zklock members, never a partition owned by two at once, re-split when a member leaves or expires."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio
from helpers.interop import kazoo_client
from helpers.sessiontools import expire

import zklock
import zkwire

PARTITIONS = list(range(6))


async def _next(partitioner: zklock.SetPartitioner, seconds: float = 20) -> zklock.Assignment:
    with trio.fail_after(seconds):
        return await partitioner.__anext__()


async def test_split_with_kazoo_and_taken_over_when_it_leaves(zk_hosts: str, zk_path: str) -> None:
    from kazoo.recipe.partitioner import SetPartitioner

    path = f"{zk_path}/partitioner"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        theirs: Any = None
        kazoo_set: list[int] = []
        done = threading.Event()

        def kazoo_member() -> None:
            nonlocal theirs
            theirs = SetPartitioner(kz, path, PARTITIONS, identifier="b-kazoo", time_boundary=0.5)
            while not theirs.acquired:
                theirs.wait_for_acquire(10)
                if theirs.release:
                    theirs.release_set()
            kazoo_set.extend(theirs)
            done.wait(30)
            theirs.finish()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, kazoo_member)
            async with zklock.SetPartitioner(zk, path, PARTITIONS, identifier="a-zklock", time_boundary=0.5) as ours:
                first = await _next(ours)
                while first.members != ["a-zklock", "b-kazoo"]:
                    first = await _next(ours)
                assert first.partitions == [0, 2, 4]  # index 0 of 2 in sorted identifiers
                with trio.fail_after(20):
                    while not kazoo_set:
                        await trio.sleep(0.05)
                assert kazoo_set == [1, 3, 5]
                done.set()  # kazoo leaves: the party changes
                with trio.fail_after(20):
                    await first.changed.wait()
                assert not first.lost
                second = await _next(ours)
                assert second.members == ["a-zklock"] and second.partitions == PARTITIONS
                holders = {p: await zk.get_children(f"{path}/locks/{p}") for p in PARTITIONS}
                assert all(len(names) == 1 for names in holders.values()), holders


async def test_no_partition_is_owned_twice_while_members_come_and_go(zk_hosts: str, zk_path: str) -> None:
    """Three zklock members join one after another and one leaves; every partition's lock node list is
    checked on every assignment: at most one holder each, always."""
    path = f"{zk_path}/partitioner"
    owned: dict[object, str] = {}
    violations: list[str] = []
    async with zkwire.open_client(zk_hosts) as zk:

        async def member(name: str, stop: trio.Event) -> None:
            async with zklock.SetPartitioner(zk, path, PARTITIONS, identifier=name, time_boundary=0.3) as p:
                async for assignment in p:
                    for part in assignment.partitions:
                        if owned.get(part) not in (None, name):
                            violations.append(f"{part}: {owned[part]} and {name}")
                        owned[part] = name
                    with trio.move_on_after(30):
                        await first_event(assignment.changed, stop)
                    for part in assignment.partitions:
                        owned.pop(part, None)
                    if stop.is_set():
                        return

        stops = [trio.Event() for _ in range(3)]
        async with trio.open_nursery() as nursery:
            for i, stop in enumerate(stops):
                nursery.start_soon(member, f"m{i}", stop)
                await trio.sleep(0.5)
            with trio.fail_after(20):
                while len(owned) < len(PARTITIONS) or len(set(owned.values())) < 3:
                    await trio.sleep(0.05)
            stops[1].set()
            with trio.fail_after(20):
                while len(owned) < len(PARTITIONS) or set(owned.values()) != {"m0", "m2"}:
                    await trio.sleep(0.05)
            for stop in stops:
                stop.set()
    assert violations == []


async def first_event(*events: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        for event in events:

            async def wait(event: trio.Event = event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(wait)


async def test_an_expired_member_is_told_and_rejoins(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/partitioner"
    async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
        async with zklock.SetPartitioner(stream, path, PARTITIONS, identifier="solo", time_boundary=0.2) as ours:
            first = await _next(ours)
            assert first.partitions == PARTITIONS
            old = stream.current
            assert old is not None
            await expire(old, zk_hosts)
            with trio.fail_after(15):
                await first.changed.wait()
            assert first.lost
            second = await _next(ours)
            assert second.partitions == PARTITIONS and stream.current is not old


def test_the_rule_and_bad_arguments() -> None:
    assert zklock.partitioner.partition("b", ["c", "a", "b"], [5, 1, 4, 2, 3]) == [2, 5]
    with pytest.raises(zkwire.InvalidArgumentError):
        zklock.SetPartitioner(object(), "/p", [1], max_reaction_time=0)  # type: ignore[arg-type]
