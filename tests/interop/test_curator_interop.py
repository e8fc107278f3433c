"""zklock's recipes in both namings against Apache Curator 5.4 (Debian's libcurator-recipes-java): the
Curator half of the README's interoperability matrix, checked cell by cell.

* ``test_matrix_cell``: every lock-queue cell both ways round, against one long-lived Curator process
  (``CuratorLockWorker serve``): the pair excludes each other only if neither got in while the other held.
* ``test_exclusion_under_contention`` and the semaphore test: every cell the matrix says excludes, under
  contention: a Curator process and two zklock sessions take turns on one path, starting together;
  exclusive holders bump a version-checked counter, readers read it twice, lease holders count
  themselves in and out, and every hold's interval (one machine, one clock) is checked for overlaps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from helpers.curator import CuratorPeer, CuratorWorker, compile_worker
from helpers.holds import Holds, now_us
from helpers.interop import DOES_NOT_EXCLUDE as NO
from helpers.interop import EXCLUDES as X
from helpers.interop import (
    OUR_KIND,
    Matrix,
    cell_ids,
    cells,
    excluding,
    hold_counter,
    make_recipe,
    verdict,
)
from helpers.interop import SHARES as SHARE

import zklock
import zkwire

ROUNDS = 10

#: The Curator half of the README's matrix for the lock-queue recipes (peer modes of the worker:
#: mutex = InterProcessMutex, read / write = InterProcessReadWriteLock's sides, latch = LeaderLatch).
MATRIX: Matrix = {
    ("Mutex", "curator"): {"mutex": X, "read": NO, "write": NO, "latch": NO},
    ("Mutex", "kazoo"): {"mutex": NO, "read": NO, "write": NO, "latch": NO},
    ("ReadLock", "curator"): {"mutex": NO, "read": SHARE, "write": X, "latch": NO},
    ("ReadLock", "kazoo"): {"mutex": NO, "read": SHARE, "write": NO, "latch": NO},
    ("WriteLock", "curator"): {"mutex": NO, "read": X, "write": X, "latch": NO},
    ("WriteLock", "kazoo"): {"mutex": NO, "read": NO, "write": NO, "latch": NO},
    ("Election", "curator"): {"mutex": NO, "read": NO, "write": NO, "latch": X},
    ("Election", "kazoo"): {"mutex": NO, "read": NO, "write": NO, "latch": NO},
}
CELLS = cells(MATRIX)
EXCLUDING = excluding(MATRIX)
THEIR_KIND = {"mutex": "x", "read": "s", "write": "x", "latch": "x"}


@pytest.fixture(scope="session")
def curator_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_worker(tmp_path_factory)


@pytest.fixture(scope="module")
def curator_peer(curator_classes: Path, zk_hosts: str) -> Iterator[CuratorPeer]:
    peer = CuratorPeer(curator_classes, zk_hosts)
    try:
        yield peer
    finally:
        peer.close()


@pytest.mark.parametrize(("ours", "naming", "theirs"), CELLS, ids=cell_ids(CELLS, "curator"))
async def test_matrix_cell(
    zk_hosts: str, zk_path: str, curator_peer: CuratorPeer, ours: str, naming: str, theirs: str
) -> None:
    path = f"{zk_path}/lock"
    with trio.fail_after(60):
        async with zkwire.open_client(zk_hosts) as zk:
            try:
                mine = make_recipe(zk, ours, path, naming)
                assert await mine.acquire(blocking=False)
                they_got_in = await curator_peer.try_(theirs, path, 300)
                await curator_peer.release()
                await mine.release()

                assert await curator_peer.try_(theirs, path, 10_000)
                mine = make_recipe(zk, ours, path, naming)
                we_got_in = await mine.acquire(blocking=False)
                if we_got_in:
                    await mine.release()
            finally:
                with trio.CancelScope(shield=True):
                    await curator_peer.release()
    both_shared = OUR_KIND[ours] == THEIR_KIND[theirs] == "s"
    assert verdict(they_got_in, we_got_in, both_shared) == MATRIX[ours, naming][theirs], (they_got_in, we_got_in)


async def _setup(zk_hosts: str, zk_path: str, counter: str) -> None:
    async with zkwire.open_client(zk_hosts) as setup:
        try:
            await setup.create("/zkwire-tests")
        except zkwire.NodeExistsError:
            pass
        await setup.create(zk_path)
        await setup.create(counter, b"0")


@pytest.mark.parametrize(("ours", "naming", "theirs"), EXCLUDING, ids=cell_ids(EXCLUDING, "curator"))
async def test_exclusion_under_contention(
    curator_classes: Path, zk_hosts: str, zk_path: str, ours: str, naming: str, theirs: str
) -> None:
    lock_path, counter = f"{zk_path}/lock", f"{zk_path}/counter"
    kind = OUR_KIND[ours]
    holds = Holds()
    conflicts: list[int] = []
    await _setup(zk_hosts, zk_path, counter)

    async def zklock_worker(zk: zkwire.Client) -> None:
        recipe = make_recipe(zk, ours, lock_path, naming)
        for _ in range(ROUNDS):
            async with recipe:
                await hold_counter(zk, counter, kind, holds, "zklock", conflicts)

    with trio.fail_after(240):
        async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
            # Both zklock sessions connected before the Curator worker says READY, so all start together.
            worker = await CuratorWorker.start(curator_classes, zk_hosts, lock_path, counter, str(2 * ROUNDS), theirs)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(zklock_worker, a)
                    nursery.start_soon(zklock_worker, b)
                output = await worker.finish()
            finally:
                worker.kill()
            value = int((await a.get_data(counter))[0])
    curator_conflicts = holds.add_java_output("curator", output)
    assert conflicts == [] and curator_conflicts == 0
    assert holds.overlaps() == []
    assert holds.count("zklock") == holds.count("curator") == 2 * ROUNDS
    assert holds.switches() >= 2, "the two sides did not take turns"
    assert value == sum(1 for h in holds.holds if h.kind == "x")


async def test_semaphore_limits_holders_with_curator_semaphore_v2(
    curator_classes: Path, zk_hosts: str, zk_path: str
) -> None:
    sem_path, inside = f"{zk_path}/sem", f"{zk_path}/inside"
    leases = 2
    holds = Holds()
    over: list[int] = []
    await _setup(zk_hosts, zk_path, inside)

    async def add(zk: zkwire.Client, delta: int) -> int:
        while True:
            data, stat = await zk.get_data(inside)
            value = int(data) + delta
            try:
                await zk.set_data(inside, str(value).encode(), version=stat.version)
                return value
            except zkwire.BadVersionError:
                continue

    async def zklock_worker(zk: zkwire.Client) -> None:
        semaphore = zklock.Semaphore(zk, sem_path, leases, identifier="zklock")
        for _ in range(ROUNDS):
            async with semaphore:
                start = now_us()
                if await add(zk, 1) > leases:
                    over.append(1)
                await trio.sleep(0.004)
                await add(zk, -1)
                holds.add("zklock", "l", start, now_us())

    with trio.fail_after(240):
        async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
            workers = [
                await CuratorWorker.start(
                    curator_classes, zk_hosts, sem_path, inside, str(ROUNDS), f"semaphore:{leases}"
                )
                for _ in range(2)
            ]
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(zklock_worker, a)
                    nursery.start_soon(zklock_worker, b)
                outputs = [await w.finish() for w in workers]
            finally:
                for w in workers:
                    w.kill()
            assert (await a.get_data(inside))[0] == b"0"
            try:
                assert await a.get_children(f"{sem_path}/leases") == []
            except zkwire.NoNodeError:  # the empty container may already be reaped
                pass
    curator_over = sum(holds.add_java_output(f"curator{i}", out) for i, out in enumerate(outputs))
    assert over == [] and curator_over == 0
    assert holds.most_at_once() == leases  # the limit was reached, never passed
    assert holds.count("zklock") == 2 * ROUNDS
    assert holds.count("curator0") == holds.count("curator1") == ROUNDS
    assert holds.switches() >= 2
