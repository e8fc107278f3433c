"""zklock's recipes in both namings against kazoo's *default* recipes (no ``extra_lock_patterns``): the
kazoo half of the README's interoperability matrix, checked cell by cell.

* ``test_matrix_cell``: every lock-queue cell both ways round (ours holds, kazoo tries; kazoo holds, ours
  tries): the pair excludes each other only if neither got in while the other held.
* ``test_exclusion_under_contention``: every cell the matrix says excludes, under contention: zklock
  tasks and kazoo threads take turns on one path; exclusive holders bump a version-checked counter,
  readers read it twice, and every hold's interval is recorded and checked for overlaps.
* the semaphore cell, the stored lease count, and the warning about nodes a default peer would not see.

kazoo is synchronous; its calls run in worker threads (``trio.to_thread``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import trio
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
from zklock.recipe import _WARNED_PATHS

kazoo_client = pytest.importorskip("kazoo.client")
kazoo_exceptions = pytest.importorskip("kazoo.exceptions")

Naming = str
ROUNDS = 8

#: kazoo's default recipes on a path, and the kind of hold each takes (a kazoo Election is a kazoo Lock).
THEIRS: dict[str, str] = {"Lock": "x", "ReadLock": "s", "WriteLock": "x", "Election": "x"}

#: The kazoo half of the README's matrix, for the lock-queue recipes.
MATRIX: Matrix = {
    ("Mutex", "curator"): {"Lock": NO, "ReadLock": NO, "WriteLock": NO, "Election": NO},
    ("Mutex", "kazoo"): {"Lock": X, "ReadLock": X, "WriteLock": X, "Election": X},
    ("ReadLock", "curator"): {"Lock": NO, "ReadLock": SHARE, "WriteLock": NO, "Election": NO},
    ("ReadLock", "kazoo"): {"Lock": NO, "ReadLock": SHARE, "WriteLock": X, "Election": NO},
    ("WriteLock", "curator"): {"Lock": NO, "ReadLock": NO, "WriteLock": NO, "Election": NO},
    ("WriteLock", "kazoo"): {"Lock": X, "ReadLock": X, "WriteLock": X, "Election": X},
    ("Election", "curator"): {"Lock": NO, "ReadLock": NO, "WriteLock": NO, "Election": NO},
    ("Election", "kazoo"): {"Lock": X, "ReadLock": NO, "WriteLock": X, "Election": X},
}
CELLS = cells(MATRIX)
EXCLUDING = excluding(MATRIX)


def kazoo_lock(kz: Any, kind: str, path: str, ident: str = "kazoo") -> Any:
    """A default kazoo recipe object; for an Election, the kazoo Lock it contends with."""
    if kind == "Election":
        return kz.Election(path, ident).lock
    return getattr(kz, kind)(path, ident)


def start_kazoo(hosts: str) -> Any:
    kz = kazoo_client.KazooClient(hosts=hosts, timeout=10)
    kz.start(timeout=10)
    return kz


def stop_kazoo(kz: Any) -> None:
    kz.stop()
    kz.close()


@pytest.fixture
async def kz(zk_hosts: str) -> AsyncIterator[Any]:
    client = await trio.to_thread.run_sync(start_kazoo, zk_hosts)
    try:
        yield client
    finally:
        await trio.to_thread.run_sync(stop_kazoo, client)


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs))


@pytest.mark.parametrize(("ours", "naming", "theirs"), CELLS, ids=cell_ids(CELLS, "kazoo"))
async def test_matrix_cell(zk_hosts: str, zk_path: str, kz: Any, ours: str, naming: Naming, theirs: str) -> None:
    path = f"{zk_path}/lock"
    with trio.fail_after(30):
        async with zkwire.open_client(zk_hosts) as zk:
            # A persistent lock node: a container one (the curator naming's) can be reaped by the server
            # between kazoo's own "ensure path" and its create, which kazoo reports as NoNodeError.
            await zk.ensure_path(path)
            mine = make_recipe(zk, ours, path, naming)
            assert await mine.acquire(blocking=False)
            peer = kazoo_lock(kz, theirs, path)
            they_got_in = await call(peer.acquire, blocking=False)
            if they_got_in:
                await call(peer.release)
            await mine.release()

            peer = kazoo_lock(kz, theirs, path)
            assert await call(peer.acquire, blocking=False)
            mine = make_recipe(zk, ours, path, naming)
            we_got_in = await mine.acquire(blocking=False)
            if we_got_in:
                await mine.release()
            await call(peer.release)
    both_shared = OUR_KIND[ours] == THEIRS[theirs] == "s"
    assert verdict(they_got_in, we_got_in, both_shared) == MATRIX[ours, naming][theirs], (they_got_in, we_got_in)


def hold_body_sync(kz: Any, counter: str, kind: str, holds: Holds, side: str, conflicts: list[int]) -> None:
    start = now_us()
    data, stat = kz.get(counter)
    time.sleep(0.003)
    if kind == "x":
        try:
            kz.set(counter, str(int(data) + 1).encode(), version=stat.version)
        except kazoo_exceptions.BadVersionError:
            conflicts.append(1)
    elif kz.get(counter)[0] != data:
        conflicts.append(1)
    holds.add(side, kind, start, now_us())


@pytest.mark.parametrize(("ours", "naming", "theirs"), EXCLUDING, ids=cell_ids(EXCLUDING, "kazoo"))
async def test_exclusion_under_contention(zk_hosts: str, zk_path: str, ours: str, naming: Naming, theirs: str) -> None:
    path, counter = f"{zk_path}/lock", f"{zk_path}/counter"
    our_kind = OUR_KIND[ours]
    their_kind = THEIRS[theirs]
    holds = Holds()
    conflicts: list[int] = []

    def kazoo_worker(kz: Any) -> None:
        if theirs == "Election":
            election = kz.Election(path, "kazoo")
            for _ in range(ROUNDS):
                election.run(hold_body_sync, kz, counter, their_kind, holds, "kazoo", conflicts)
            return
        lock = kazoo_lock(kz, theirs, path)
        for _ in range(ROUNDS):
            with lock:
                hold_body_sync(kz, counter, their_kind, holds, "kazoo", conflicts)

    async def zklock_worker(zk: zkwire.Client) -> None:
        recipe = make_recipe(zk, ours, path, naming)
        for _ in range(ROUNDS):
            async with recipe:
                await hold_counter(zk, counter, our_kind, holds, "zklock", conflicts)

    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        await a.create(zk_path)
        await a.create(counter, b"0")
        kazoos = [await trio.to_thread.run_sync(start_kazoo, zk_hosts) for _ in range(2)]
        try:
            with trio.fail_after(90):
                async with trio.open_nursery() as nursery:
                    for kz in kazoos:
                        nursery.start_soon(trio.to_thread.run_sync, kazoo_worker, kz)
                    nursery.start_soon(zklock_worker, a)
                    nursery.start_soon(zklock_worker, b)
        finally:
            for kz in kazoos:
                await trio.to_thread.run_sync(stop_kazoo, kz)
        value = int((await a.get_data(counter))[0])
    assert conflicts == []
    assert holds.overlaps() == []
    assert holds.count("kazoo") == holds.count("zklock") == 2 * ROUNDS
    assert holds.switches() >= 2, "the two sides did not take turns"
    assert value == sum(1 for h in holds.holds if h.kind == "x")


async def test_semaphore_kazoo_naming_limits_holders_with_kazoo_semaphore(zk_hosts: str, zk_path: str) -> None:
    path, leases = f"{zk_path}/sem", 2
    holds = Holds()

    def kazoo_worker(kz: Any) -> None:
        semaphore = kz.Semaphore(path, "kazoo", max_leases=leases)
        for _ in range(ROUNDS):
            with semaphore:
                start = now_us()
                time.sleep(0.006)
                holds.add("kazoo", "l", start, now_us())

    async def zklock_worker(zk: zkwire.Client) -> None:
        semaphore = zklock.Semaphore(zk, path, leases, naming="kazoo", identifier="zklock")
        for _ in range(ROUNDS):
            async with semaphore:
                start = now_us()
                await trio.sleep(0.006)
                holds.add("zklock", "l", start, now_us())

    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        kazoos = [await trio.to_thread.run_sync(start_kazoo, zk_hosts) for _ in range(2)]
        try:
            with trio.fail_after(90):
                async with trio.open_nursery() as nursery:
                    for kz in kazoos:
                        nursery.start_soon(trio.to_thread.run_sync, kazoo_worker, kz)
                    nursery.start_soon(zklock_worker, a)
                    nursery.start_soon(zklock_worker, b)
        finally:
            for kz in kazoos:
                await trio.to_thread.run_sync(stop_kazoo, kz)
        assert await a.get_children(path) == []
        assert (await a.get_data(path))[0] == b"2"  # kazoo's layout: the count is the node's data
    assert holds.count("kazoo") == holds.count("zklock") == 2 * ROUNDS
    assert holds.most_at_once() == leases  # the limit was reached, never passed
    assert holds.switches() >= 2


async def test_semaphore_kazoo_naming_checks_the_stored_count(zk_hosts: str, zk_path: str, kz: Any) -> None:
    ours, theirs = f"{zk_path}/ours", f"{zk_path}/theirs"
    async with zkwire.open_client(zk_hosts) as zk:
        # kazoo made the node with 3 leases: zklock with 2 refuses, like kazoo would
        semaphore = kz.Semaphore(theirs, "kazoo", max_leases=3)
        assert await call(semaphore.acquire, blocking=False)
        with pytest.raises(zklock.MaxLeasesMismatchError, match="3 leases, not 2"):
            await zklock.Semaphore(zk, theirs, 2, naming="kazoo").acquire()
        async with zklock.Semaphore(zk, theirs, 3, naming="kazoo") as lease:
            assert len(await zk.get_children(theirs)) == 2
            name = lease.node.rsplit("/", 1)[1]
            assert len(name) == 32 and int(name, 16) >= 0  # kazoo's lease name: a bare uuid hex
        await call(semaphore.release)
        # zklock made the node with 2 leases: kazoo with 3 refuses
        async with zklock.Semaphore(zk, ours, 2, naming="kazoo"):
            with pytest.raises(ValueError, match="Inconsistent max leases"):
                await call(kz.Semaphore(ours, "kazoo", max_leases=3).acquire, blocking=False)


async def test_recipe_warns_once_about_nodes_a_default_peer_does_not_see(
    zk_hosts: str, zk_path: str, kz: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = f"{zk_path}/lock"
    caplog.set_level(logging.WARNING, logger="zklock")
    _WARNED_PATHS.discard(path)
    peer = kazoo_lock(kz, "Lock", path)
    assert await call(peer.acquire, blocking=False)
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            mutex = zklock.Mutex(zk, path)
            for _ in range(3):
                assert await mutex.acquire(blocking=False) is False
            warnings = [r.getMessage() for r in caplog.records if path in r.getMessage()]
            assert len(warnings) == 1
            assert "__lock__" in warnings[0] and "naming='kazoo'" in warnings[0]
            # the kazoo naming has nothing to say about kazoo's own nodes
            assert await zklock.Mutex(zk, f"{zk_path}/other", naming="kazoo").acquire(blocking=False)
    finally:
        await call(peer.release)
        _WARNED_PATHS.discard(path)


async def test_curator_layout_semaphore_warns_about_kazoo_leases_beside_it(
    zk_hosts: str, zk_path: str, kz: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = f"{zk_path}/sem"
    caplog.set_level(logging.WARNING, logger="zklock")
    _WARNED_PATHS.discard(path)
    theirs = kz.Semaphore(path, "kazoo", max_leases=2)
    assert await call(theirs.acquire, blocking=False)
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            semaphore = zklock.Semaphore(zk, path, 2)
            for _ in range(2):
                async with semaphore:  # the layouts do not limit each other: nothing stops us
                    pass
            warnings = [r.getMessage() for r in caplog.records if f"lock {path} holds" in r.getMessage()]
            assert len(warnings) == 1 and "naming='kazoo'" in warnings[0]
    finally:
        await call(theirs.release)
        _WARNED_PATHS.discard(path)
