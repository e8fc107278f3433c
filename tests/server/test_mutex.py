"""zklock.Mutex against the real server: exclusion, fencing, cancellation, lost replies, loss detection."""

from __future__ import annotations

import importlib

import pytest
import trio
from helpers.addresses import first_server

import zklock
import zkwire
from zkwire.constants import OpCode


async def _children(zk: zkwire.Client, path: str) -> list[str]:
    try:
        return await zk.get_children(path)
    except zkwire.NoNodeError:
        return []


async def test_exclusion_and_increasing_fencing_tokens(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    holders: list[str] = []
    tokens: list[int] = []
    max_inside = 0
    inside = 0

    async def worker(name: str) -> None:
        nonlocal inside, max_inside
        async with zkwire.open_client(zk_hosts) as zk:
            for _ in range(3):
                async with zklock.Mutex(zk, path, identifier=name) as lease:
                    inside += 1
                    max_inside = max(max_inside, inside)
                    holders.append(name)
                    tokens.append(lease.fencing_token)
                    await trio.sleep(0.01)
                    inside -= 1

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(worker, f"w{i}")
    assert max_inside == 1
    assert len(holders) == 12
    assert tokens == sorted(tokens) and len(set(tokens)) == 12


async def test_node_name_is_curator_protected_and_data_is_identifier(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        mutex = zklock.Mutex(zk, path, identifier="job-runner-7")
        async with mutex as lease:
            name = lease.node.rsplit("/", 1)[1]
            assert name.startswith("_c_") and "-lock-" in name
            assert len(name.rsplit("-lock-", 1)[1]) == 10
            assert await mutex.holder() == "job-runner-7"
            assert await mutex.is_locked()
            stat = await zk.exists(lease.node)
            assert stat is not None
            assert stat.ephemeral_owner == zk.session_id
            assert stat.czxid == lease.fencing_token
        assert not await mutex.is_locked()
        assert await mutex.holder() is None
        # The parent is a container: it exists but holds no lock node after release.
        assert await _children(zk, path) == []


async def test_nonblocking_acquire_leaves_no_node(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        async with zklock.Mutex(a, path):
            mb = zklock.Mutex(b, path)
            assert await mb.acquire(blocking=False) is False
            assert len(await _children(a, path)) == 1
        assert await mb.acquire(blocking=False) is True
        assert len(await _children(a, path)) == 1
        await mb.release()
        assert await _children(a, path) == []


async def test_cancelled_waiter_removes_its_node(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        async with zklock.Mutex(a, path):
            with trio.move_on_after(0.5) as scope:
                async with zklock.Mutex(b, path):
                    pytest.fail("must not get the lock")
            assert scope.cancelled_caught
            assert len(await _children(a, path)) == 1
        assert await _children(a, path) == []


async def test_waiter_cancelled_by_an_outer_deadline_removes_its_node_at_once(zk_hosts: str, zk_path: str) -> None:
    # The deadline is outside open_client: the waiter's shielded clean-up must still delete its node
    # (not leave it to the session's end).
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as a:
        async with zklock.Mutex(a, path):
            with trio.move_on_after(0.5) as scope:
                async with zkwire.open_client(zk_hosts) as b, zklock.Mutex(b, path):
                    pytest.fail("must not get the lock")
            assert scope.cancelled_caught
            assert len(await _children(a, path)) == 1


async def test_fifo_order_and_reentrancy(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    order: list[int] = []
    async with zkwire.open_client(zk_hosts) as zk:
        mutex = zklock.Mutex(zk, path)
        assert await mutex.acquire()
        lease = mutex.lease
        assert lease is not None
        async with mutex as inner:  # same task: reentrant, same node
            assert inner is lease
        assert not lease.released and len(await _children(zk, path)) == 1

        async def contender(i: int) -> None:
            async with mutex:  # other tasks of this process queue like any other contender
                order.append(i)

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(contender, i)
                with trio.fail_after(5):  # wait until its node exists, so the queue order is known
                    while len(await _children(zk, path)) < i + 2:
                        await trio.sleep(0.02)
            order.append(-1)
            await mutex.release()
        assert lease.released
        assert order == [-1, 0, 1, 2]
        with pytest.raises(zklock.NotHeldError):
            await mutex.release()


async def test_lock_lost_when_node_deleted_cancels_body(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        reached_end = False
        with pytest.raises(zklock.LockLostError, match="deleted"), trio.fail_after(5):
            async with zklock.Mutex(zk, path) as lease:
                await other.delete(lease.node)
                await trio.sleep(3)
                reached_end = True
        assert not reached_end
        assert lease.lost


async def test_poll_mode_keeps_body_running(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        mutex = zklock.Mutex(zk, path, cancel_on_loss=False)
        with trio.fail_after(5):
            async with mutex as lease:
                await zk.delete(lease.node)
                reason = await lease.wait_lost()
                assert "deleted" in reason
                assert lease.lost


async def test_kazoo_with_extra_lock_patterns_and_a_curator_named_mutex_exclude_each_other(
    zk_hosts: str, zk_path: str
) -> None:
    """Not kazoo's default: a kazoo Lock given extra_lock_patterns=["-lock-"] also counts Curator-style
    mutex nodes (a default one does not: tests/interop/test_interop_matrix_kazoo.py)."""
    from kazoo.client import KazooClient

    path = f"{zk_path}/lock"
    kz = KazooClient(hosts=zk_hosts)
    await trio.to_thread.run_sync(kz.start)
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            mutex = zklock.Mutex(zk, path)
            async with mutex:
                klock = kz.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
                got = await trio.to_thread.run_sync(lambda: klock.acquire(blocking=False))
                assert got is False
            klock = kz.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
            assert await trio.to_thread.run_sync(lambda: klock.acquire(timeout=5))
            try:
                assert await mutex.acquire(blocking=False) is False
                names = await mutex.contenders()
                assert len(names) == 1 and "__lock__" in names[0]
            finally:
                await trio.to_thread.run_sync(klock.release)
            assert await mutex.acquire(blocking=False) is True
            await mutex.release()
    finally:
        await trio.to_thread.run_sync(kz.stop)
        await trio.to_thread.run_sync(kz.close)


async def test_lost_create_reply_adopts_the_node(zk_server: object, zk_hosts: str, zk_path: str) -> None:
    faultproxy = importlib.import_module("helpers.faultproxy")  # the suite's own: never skipped
    path = f"{zk_path}/lock"
    host, port = first_server(zk_hosts)
    async with faultproxy.open_fault_proxy(host, port) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await zk.create(zk_path)
            await zk.create(path, container=True)
            swallow = proxy.swallow_reply(op=OpCode.CREATE2, path_prefix=path)
            with trio.fail_after(15):
                async with zklock.Mutex(zk, path) as lease:
                    with trio.fail_after(1):
                        await swallow.wait()  # the create's reply really was lost
                    names = await zk.get_children(path)
                    assert names == [lease.node.rsplit("/", 1)[1]]  # one node, not two
            assert await zk.get_children(path) == []


async def test_suspension_counts_as_loss(zk_server: object, zk_hosts: str, zk_path: str) -> None:
    faultproxy = importlib.import_module("helpers.faultproxy")  # the suite's own: never skipped
    path = f"{zk_path}/lock"
    host, port = first_server(zk_hosts)
    async with faultproxy.open_fault_proxy(host, port) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            with pytest.raises(zklock.LockLostError, match="suspended"), trio.fail_after(10):
                async with zklock.Mutex(zk, path) as lease:
                    await proxy.sever()
                    await trio.sleep(5)
            assert lease.lost
            await zk.wait_connected()
            # The session survived; the released node is gone (deleted on reconnect).
            with trio.fail_after(5):
                while await _children(zk, path):
                    await trio.sleep(0.05)


async def test_kazoo_and_zklock_contend_with_counter(zk_hosts: str, zk_path: str) -> None:
    """kazoo's Lock (seeing our Curator-style nodes through extra_lock_patterns, not kazoo's default) and
    zklock bump one counter."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import BadVersionError as KazooBadVersion

    path, counter, rounds = f"{zk_path}/lock", f"{zk_path}/counter", 15
    conflicts = 0

    def kazoo_worker() -> int:
        kz = KazooClient(hosts=zk_hosts)
        kz.start(timeout=10)
        bad = 0
        try:
            lock = kz.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
            for _ in range(rounds):
                with lock:
                    data, stat = kz.get(counter)
                    try:
                        kz.set(counter, str(int(data) + 1).encode(), version=stat.version)
                    except KazooBadVersion:
                        bad += 1
        finally:
            kz.stop()
            kz.close()
        return bad

    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(counter, b"0")

        async def zklock_worker() -> None:
            nonlocal conflicts
            mutex = zklock.Mutex(zk, path)
            for _ in range(rounds):
                async with mutex:
                    data, stat = await zk.get_data(counter)
                    await trio.sleep(0.001)
                    try:
                        await zk.set_data(counter, str(int(data) + 1).encode(), version=stat.version)
                    except zkwire.BadVersionError:
                        conflicts += 1

        kazoo_conflicts: list[int] = []

        async def run_kazoo() -> None:
            kazoo_conflicts.append(await trio.to_thread.run_sync(kazoo_worker))

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_kazoo)
                nursery.start_soon(zklock_worker)
        data, _ = await zk.get_data(counter)
    assert conflicts == 0 and kazoo_conflicts == [0]
    assert int(data) == 2 * rounds
