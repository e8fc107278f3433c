"""Several locks or leases at once, beside the real peers: MultiLock against Curator's mutexes
(InterProcessMultiLock is a list of them), Semaphore.acquire_leases against Curator's
InterProcessSemaphoreV2 and kazoo's Semaphore; a failed or cancelled acquire keeps nothing."""

from __future__ import annotations

import pytest
import trio
from helpers.curator import CuratorPeer, compile_worker
from helpers.interop import kazoo_client

import zklock
import zkwire


@pytest.fixture
def curator_classes(tmp_path_factory: pytest.TempPathFactory) -> object:
    import shutil

    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    return compile_worker(tmp_path_factory)


async def _peer(classes: object, hosts: str) -> CuratorPeer:
    return await trio.to_thread.run_sync(CuratorPeer, classes, hosts)


async def test_multilock_excludes_curator_and_keeps_nothing_when_it_cannot_have_all(
    zk_hosts: str, zk_path: str, curator_classes: object
) -> None:
    a, b = f"{zk_path}/a", f"{zk_path}/b"
    peer = await _peer(curator_classes, zk_hosts)
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            both = zklock.MultiLock(zk, [a, b])
            async with both as leases:
                assert [lease.path for lease in leases] == [a, b]
                assert not await peer.try_("mutex", b, 300)
            assert await peer.try_("mutex", b, 5000)  # Curator holds b now
            assert not await both.acquire(blocking=False)
            assert await zk.get_children(a) == []  # a was taken and given back
            with trio.move_on_after(0.5):
                await both.acquire()
                pytest.fail("acquired while Curator holds b")
            assert await zk.get_children(a) == []
            await peer.release()
            with trio.fail_after(10):
                assert await both.acquire()
            await both.release()
            assert await zk.get_children(a) == [] and await zk.get_children(b) == []
            with pytest.raises(zkwire.InvalidArgumentError):
                zklock.MultiLock(zk, [a, a])
    finally:
        await trio.to_thread.run_sync(peer.close)


async def test_the_loss_of_one_lock_cancels_the_body(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        with pytest.raises(zklock.LockLostError):
            async with zklock.MultiLock(zk, [f"{zk_path}/a", f"{zk_path}/b"]) as leases:
                await other.delete(leases[1].node)
                await trio.sleep(30)


async def test_several_leases_with_curators_semaphore(zk_hosts: str, zk_path: str, curator_classes: object) -> None:
    path = f"{zk_path}/sem"
    peer = await _peer(curator_classes, zk_hosts)
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            sem = zklock.Semaphore(zk, path, 3)
            async with sem.leases(2) as leases:
                assert len({lease.node for lease in leases}) == 2
                assert await peer.try_("semaphore:3", path, 5000)  # the third
                with trio.move_on_after(0.5):
                    await sem.acquire_leases(1)
                    pytest.fail("a fourth lease of three")
                assert len(await zk.get_children(f"{path}/leases")) == 3
                await peer.release()
            assert await zk.get_children(f"{path}/leases") == []
            # Cancelled half way: the lease already taken is given back.
            assert await peer.try_("semaphore:3", path, 5000)
            with trio.move_on_after(0.5):
                await sem.acquire_leases(3)
                pytest.fail("three leases while Curator holds one")
            assert len(await zk.get_children(f"{path}/leases")) == 1
            await peer.release()
            with pytest.raises(zkwire.InvalidArgumentError):
                await sem.acquire_leases(4)
    finally:
        await trio.to_thread.run_sync(peer.close)


async def test_several_leases_with_kazoos_semaphore(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/sem"
    async with kazoo_client(zk_hosts) as kz, zkwire.open_client(zk_hosts) as zk:
        theirs = kz.Semaphore(path, max_leases=3)
        sem = zklock.Semaphore(zk, path, 3, naming="kazoo")
        leases = await sem.acquire_leases(3)
        assert not await trio.to_thread.run_sync(lambda: theirs.acquire(blocking=False))
        await sem.release_leases(leases)
        assert await trio.to_thread.run_sync(lambda: theirs.acquire(blocking=False))
        await trio.to_thread.run_sync(theirs.release)


async def test_leader_selector_shares_leadership_with_curators(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Curator's LeaderSelector leads first; zklock's waits, leads once Curator's leaves, and Curator's
    (requeued) does not lead meanwhile.  Its nodes are a mutex's: ``-lock-``, not LeaderLatch's."""
    from helpers.curator import curator_recipes

    path = f"{zk_path}/selector"
    async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
        await java.ask("selector-start", path, "java")
        with trio.fail_after(10):
            while await java.ask("selector-leader", path) != "LEADER true":
                await trio.sleep(0.05)
        ours = zklock.LeaderSelector(zk, path, identifier="python")
        assert await ours.leader() == "java"
        assert not await ours.acquire(blocking=False)
        async with trio.open_nursery() as nursery:
            led = trio.Event()

            async def lead() -> None:
                async with ours.leadership():
                    led.set()
                    await trio.sleep_forever()

            nursery.start_soon(lead)
            await trio.sleep(0.3)
            assert not led.is_set()
            await java.ask("selector-stop", path)
            with trio.fail_after(10):
                await led.wait()
            assert await ours.leader() == "python"
            names = await zk.get_children(path)
            assert len(names) == 1 and "-lock-" in names[0]
            await java.ask("selector-start", path, "java2")
            await trio.sleep(0.5)
            assert await java.ask("selector-leader", path) == "LEADER false"
            nursery.cancel_scope.cancel()
        with trio.fail_after(10):
            while await java.ask("selector-leader", path) != "LEADER true":
                await trio.sleep(0.05)
        await java.ask("selector-stop", path)
