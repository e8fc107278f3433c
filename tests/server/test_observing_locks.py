"""The lock recipes' events (zklock.reporting: zkwire.observing.RecipeEvent) against the real server:
waits and holds under contention, abandoned acquires, a lost lease with its margin, fencing tokens."""

from __future__ import annotations

import trio
from helpers.addresses import first_server
from helpers.observing import Recorder

import zklock
import zkwire


async def test_waits_and_holds_under_contention(zk_hosts: str, zk_path: str) -> None:
    rec = Recorder()
    async with (
        zkwire.open_client(zk_hosts, observers=[rec], follow_ensemble=False) as a,
        zkwire.open_client(zk_hosts, observers=[rec], follow_ensemble=False) as b,
    ):
        lock_a, lock_b = zklock.Mutex(a, zk_path), zklock.Mutex(b, zk_path)
        b_started = trio.Event()

        async def second() -> None:
            b_started.set()
            async with lock_b:
                await trio.sleep(0.2)

        async with trio.open_nursery() as nursery:
            async with lock_a:
                nursery.start_soon(second)
                await b_started.wait()
                await trio.sleep(0.5)
        assert await a.flush_observers() and await b.flush_observers()
    by_session = {
        sid: [(e.kind, e) for e in rec.recipes() if e.session_id == sid] for sid in (a.session_id, b.session_id)
    }
    kinds_a = [k for k, _ in by_session[a.session_id]]
    kinds_b = [k for k, _ in by_session[b.session_id]]
    assert kinds_a == ["queued", "granted", "released"]
    assert kinds_b == ["queued", "granted", "released"]
    granted_a = by_session[a.session_id][1][1]
    released_a = by_session[a.session_id][2][1]
    granted_b = by_session[b.session_id][1][1]
    released_b = by_session[b.session_id][2][1]
    assert all(e.recipe == "mutex" and e.path == zk_path for _, e in by_session[a.session_id])
    assert granted_a.wait is not None and granted_a.wait < 0.5
    assert released_a.hold is not None and 0.5 <= released_a.hold < 1.5
    assert granted_b.wait is not None and 0.45 <= granted_b.wait < 1.5  # waited for a's hold
    assert released_b.hold is not None and 0.2 <= released_b.hold < 1.0
    assert granted_a.token is not None and granted_b.token is not None and granted_b.token > granted_a.token
    assert released_a.token == granted_a.token


async def test_abandoned_acquires_are_reported_with_their_wait(zk_hosts: str, zk_path: str) -> None:
    rec = Recorder()
    async with zkwire.open_client(zk_hosts, observers=[rec], follow_ensemble=False) as zk:
        holder, other = zklock.Mutex(zk, zk_path), zklock.Semaphore(zk, f"{zk_path}-sem", 1)
        async with trio.open_nursery() as nursery:
            async with holder:

                async def cancelled() -> None:
                    with trio.move_on_after(0.3):
                        await zklock.Mutex(zk, zk_path).acquire()

                await cancelled()
                assert not await zklock.Mutex(zk, zk_path).acquire(blocking=False)
            async with other:
                pass
            nursery.cancel_scope.cancel()
        assert await zk.flush_observers()
    mutex = [(e.kind, e.wait) for e in rec.recipes() if e.recipe == "mutex"]
    assert [k for k, _ in mutex] == ["queued", "granted", "queued", "abandoned", "queued", "abandoned", "released"]
    cancelled_wait = mutex[3][1]
    assert cancelled_wait is not None and 0.3 <= cancelled_wait < 1.0
    # the semaphore reports as one; its inner guard mutex reports nothing
    assert [e.kind for e in rec.recipes() if e.recipe == "semaphore"] == ["queued", "granted", "released"]
    assert {e.path for e in rec.recipes() if e.recipe == "mutex"} == {zk_path}


async def test_a_lost_lease_is_reported_with_its_margin(zk_hosts: str, zk_path: str, faultproxy) -> None:
    rec = Recorder()
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=3, observers=[rec], follow_ensemble=False) as zk:
            timeout = zk.session_timeout
            assert timeout is not None
            lock = zklock.Mutex(zk, zk_path, cancel_on_loss=False)
            lease = await lock.acquire_lease()
            proxy.freeze()
            with trio.fail_after(timeout * 2):
                await lease.wait_lost()
            proxy.thaw(drop=True)
            with trio.fail_after(10):
                await zk.wait_connected()
            await lock.release()
            assert await zk.flush_observers()
    events = [e for e in rec.recipes() if e.recipe == "mutex"]
    assert [e.kind for e in events] == ["queued", "granted", "lost"]
    lost = events[-1]
    assert lost.cause is not None and "suspended" in lost.cause
    # Told two thirds of a timeout after the server last heard from us: a third of it before the
    # servers may expire the session.
    assert lost.margin is not None and timeout / 6 < lost.margin < timeout / 2 + 0.2
    assert lost.hold is not None and timeout / 2 < lost.hold < timeout * 1.5
    assert lost.token == events[1].token
