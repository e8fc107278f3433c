"""The watchdog on the standalone test server: it must see a ghost node and a stalled queue."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import trio

import zkwire
from zklock.naming import LOCK_MARKERS

from .fleet import Fleet
from .history import ParentLog, read_records
from .watchdog import Queue, Watchdog
from .worker import WorkerConfig


def _watchdog(tmp_path: Path, queue: str, windows: list[tuple[float, float]]) -> tuple[Watchdog, Fleet, ParentLog]:
    log = ParentLog(tmp_path / "parent.jsonl")

    def no_workers(worker: int, incarnation: int, history: Path) -> WorkerConfig:
        raise AssertionError("no worker is started here")

    fleet = Fleet(tmp_path, log, 0, no_workers)
    return Watchdog(fleet, log, [Queue(queue, LOCK_MARKERS)], 4.0, lambda: windows), fleet, log


async def test_two_nodes_for_one_acquire_are_a_ghost(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    queue = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(queue)
        prefix = f"{queue}/_c_{uuid.uuid4()}-lock-"
        first = await zk.create(prefix, ephemeral=True, sequential=True)
        await zk.create(f"{queue}/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequential=True)  # someone else
        watchdog, _, log = _watchdog(tmp_path, queue, [])
        await watchdog._census(zk)
        assert watchdog.ghosts == []  # one node per acquire so far
        second = await zk.create(prefix, ephemeral=True, sequential=True)
        await watchdog._census(zk)
        log.close()
    assert len(watchdog.ghosts) == 1
    ghost = watchdog.ghosts[0]
    assert ghost["kind"] == "same-uuid"
    assert sorted(n["path"] for n in ghost["nodes"]) == sorted([first, second])
    assert [r["ev"] for r in read_records(tmp_path / "parent.jsonl")] == ["ghost"]


async def test_stalled_queue_is_reported_with_its_head(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    queue = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(queue)
        head = await zk.create(f"{queue}/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequential=True)
        now = time.monotonic()
        # 20 s without a grant while a worker waits, 5 s of it under a fault: 15 s > 3T = 12 s
        watchdog, fleet, log = _watchdog(tmp_path, queue, [(now - 10, now - 5)])
        fleet.last_grant = now - 20
        fleet.waiting_since = now - 25
        with trio.move_on_after(1.0):
            await watchdog.run(zk)
        # one report per episode, however long it lasts
        assert len(watchdog.stuck_episodes) == 1
        record = watchdog.stuck_episodes[0]
        assert record["queues"][0]["nodes"][0]["path"] == head
        assert record["queues"][0]["nodes"][0]["owner"] == zk.session_id
        assert "no worker recorded this session" in record["message"]
        # the same stall under faults for all but 10 s of it is within the bound
        (tmp_path / "b").mkdir()
        watchdog2, fleet2, log2 = _watchdog(tmp_path / "b", queue, [(now - 20, now - 10)])
        fleet2.last_grant = now - 20
        fleet2.waiting_since = now - 25
        with trio.move_on_after(0.6):
            await watchdog2.run(zk)
        assert watchdog2.stuck_episodes == []
        log.close()
        log2.close()


async def test_short_lived_ghost_is_caught_by_the_queue_watch(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    queue = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(queue)
        watchdog, _, log = _watchdog(tmp_path, queue, [])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watchdog.follow, zk, watchdog.queues[0])
            await trio.sleep(0.3)  # the watch is in place
            prefix = f"{queue}/_c_{uuid.uuid4()}-lock-"
            first = await zk.create(prefix, ephemeral=True, sequential=True)
            await zk.delete(first)  # one after the other: not a ghost
            first = await zk.create(prefix, ephemeral=True, sequential=True)
            second = await zk.create(prefix, ephemeral=True, sequential=True)
            await zk.delete(second)  # gone well before any census would look
            with trio.fail_after(5):
                while not watchdog.ghosts:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
        log.close()
    assert len(watchdog.ghosts) == 1
    assert sorted(n["path"] for n in watchdog.ghosts[0]["nodes"]) == sorted([first, second])
