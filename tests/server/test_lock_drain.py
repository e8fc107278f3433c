"""Long queues on the real server: thousands of waiters of one process on one lock queue at the
default session timeout, are granted in order, leave nothing behind, and cost the server O(1)
requests per handoff (counted with ``mntr``'s packets received) and a few listings to queue."""

from __future__ import annotations

import uuid

import pytest
import trio
import trio.lowlevel
from helpers.faultproxy import open_fault_proxy

import zklock
import zkwire
from zklock.sharedqueue import shared_queue
from zkwire.constants import OpCode
from zkwire.testing import four_letter_word

#: Waiters in the long-queue test (about 6 s here on 2 shared cores; bounded by DEADLINE).
WAITERS = 5000
DEADLINE = 60.0


def _mntr(hosts: str) -> dict[str, str]:
    reply = four_letter_word(hosts, "mntr")
    out = dict(line.split("\t", 1) for line in reply.splitlines() if "\t" in line)
    if "zk_packets_received" not in out:
        pytest.skip(f"mntr is not answered: {reply[:80]!r}")
    return out


def _packets(hosts: str) -> int:
    return int(_mntr(hosts)["zk_packets_received"])


async def _until_watching(hosts: str, watches: int) -> None:
    """Until the server holds ``watches`` watches (every waiter watches its blocker)."""
    while int(_mntr(hosts)["zk_watch_count"]) < watches:
        await trio.sleep(0.05)


async def _watched_nodes(zk: zkwire.Client, path: str, count: int) -> int:
    """Once ``count`` nodes are queued: how many distinct nodes their waiters watch (a writer watches
    its predecessor, a reader the nearest writer below; the server counts a node watched by several
    waiters of one session once)."""
    while len(children := await zk.get_children(path)) < count:
        await trio.sleep(0.05)
    queue = sorted(children, key=_sequence)
    watched: set[str] = set()
    last_writer = None
    for i, name in enumerate(queue):
        if i:
            watched.add(last_writer if "__READ__" in name else queue[i - 1])  # type: ignore[arg-type]
        if "__WRIT__" in name:
            last_writer = name
    return len(watched)


def _sequence(node: str) -> int:
    return int(node[-10:])


async def test_thousands_of_waiters_drain_in_order_with_one_request_per_handoff(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    granted: list[int] = []
    with trio.fail_after(DEADLINE):
        async with zkwire.open_client(zk_hosts) as zk:
            lock = zklock.Mutex(zk, path)
            await lock.acquire()
            async with trio.open_nursery() as nursery:

                async def waiter() -> None:
                    async with lock as lease:
                        granted.append(_sequence(lease.node))

                before_queue = _packets(zk_hosts)
                for _ in range(WAITERS):
                    nursery.start_soon(waiter)
                await _until_watching(zk_hosts, WAITERS)
                queued = _packets(zk_hosts) - before_queue
                before_drain = _packets(zk_hosts)
                await lock.release()
            drained = _packets(zk_hosts) - before_drain
            try:
                left = await zk.get_children(path)
            except zkwire.NoNodeError:
                left = []  # the container was reaped
    assert len(granted) == WAITERS and granted == sorted(granted)
    assert left == []
    # Queueing: a create and a watch per waiter, and a few shared listings (polling mntr costs none).
    assert queued <= 2 * WAITERS + 50, queued
    # Draining: each handoff is the holder's delete (the next waiter's watch was set while queueing).
    assert drained <= WAITERS * 1.1 + 20, drained


async def test_readers_and_writers_hand_over_down_a_long_queue(zk_hosts: str, zk_path: str) -> None:
    """A mix of readers and writers queued behind a writer: readers overlap only with readers, writers
    hold alone, grants follow the queue, and the handoffs need no listing."""
    path = f"{zk_path}/rw"
    n = 400
    holding: dict[str, int] = {"read": 0, "write": 0}
    overlaps: list[tuple[str, dict[str, int]]] = []
    granted: list[tuple[int, str]] = []
    with trio.fail_after(DEADLINE):
        async with zkwire.open_client(zk_hosts) as zk:
            rw = zklock.ReadWriteLock(zk, path)
            await rw.write_lock.acquire()
            async with trio.open_nursery() as nursery:

                async def contender(kind: str) -> None:
                    lock = rw.read_lock if kind == "read" else rw.write_lock
                    async with lock as lease:
                        holding[kind] += 1
                        if holding["write"] > 1 or (holding["write"] and holding["read"]):
                            overlaps.append((kind, dict(holding)))
                        granted.append((_sequence(lease.node), kind))
                        await trio.sleep(0.001)
                        holding[kind] -= 1

                for i in range(n):
                    nursery.start_soon(contender, "write" if i % 10 == 0 else "read")
                await _until_watching(zk_hosts, await _watched_nodes(zk, path, n + 1))
                before_drain = _packets(zk_hosts)
                await rw.write_lock.release()
            drained = _packets(zk_hosts) - before_drain
            left = await zk.get_children(path)
    assert overlaps == []
    assert len(granted) == n
    writers = [seq for seq, kind in granted if kind == "write"]
    assert writers == sorted(writers)
    assert left == []
    # Per contender: its release, and for a reader whose blocker went while it was queued a watch on
    # the next writer below; never a listing of the queue.
    assert drained <= 2 * n + 20, drained


async def test_waiters_whose_watch_requests_were_lost_share_one_listing(zk_hosts: str, zk_path: str) -> None:
    """Every waiter's watch request is lost with the connection at once: after the reconnect they share
    one listing of the queue (not one each), then drain in order."""
    path = f"{zk_path}/lock"
    n = 200
    granted: list[int] = []
    with trio.fail_after(DEADLINE):
        async with (
            zkwire.open_client(zk_hosts) as direct,
            open_fault_proxy(zk_hosts) as proxy,
            zkwire.open_client(proxy.hosts) as zk,
        ):
            holder = zklock.Mutex(direct, path)
            await holder.acquire()
            lock = zklock.Mutex(zk, path)
            queue = shared_queue(zk, lock.path, lock.markers)
            async with trio.open_nursery() as nursery:

                async def waiter() -> None:
                    async with lock as lease:
                        granted.append(_sequence(lease.node))

                # The queue alternates: a node of the other session, then one of ours, each of ours
                # watching the other session's node just below it.
                others: list[str] = []
                for i in range(n):
                    others.append(
                        await direct.create(f"{path}/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequential=True)
                    )
                    nursery.start_soon(waiter)
                    await _until_queued(direct, path, 2 * (i + 1) + 1)
                await _until_watching(zk_hosts, n + 1)  # ours, and the holder's on its own node
                listed = queue.listings
                proxy.freeze(to_client=False)
                for node in others:
                    await direct.delete(node)  # each of ours now watches the next of ours below
                [conn] = proxy.live
                while conn.held("to_server") < n * (17 + len(path) + 56):
                    await trio.sleep(0.02)
                await proxy.sever()
                proxy.thaw(drop=True)
                await _until_watching(zk_hosts, n + 1)
                await holder.release()
            # The recovery, and the drain after it (which lists nothing).
            recovery = queue.listings - listed
    assert 1 <= recovery <= 3, recovery
    assert len(granted) == n and granted == sorted(granted)


async def _until_queued(zk: zkwire.Client, path: str, count: int) -> None:
    while len(await zk.get_children(path)) < count:
        await trio.sleep(0.01)


async def test_waiters_queueing_at_once_survive_a_lost_create_reply(zk_hosts: str, zk_path: str) -> None:
    """Waiters of one process queue at once (sharing listings) while one create's reply is lost with the
    connection: every waiter ends up with exactly one node, all are granted in order, one at a time,
    and nothing is left behind."""
    path = f"{zk_path}/lock"
    n = 60
    holding = 0
    overlaps = 0
    granted: list[int] = []
    with trio.fail_after(DEADLINE):
        async with (
            zkwire.open_client(zk_hosts) as direct,
            open_fault_proxy(zk_hosts) as proxy,
            zkwire.open_client(proxy.hosts) as zk,
        ):
            holder = zklock.Mutex(direct, path)
            await holder.acquire()
            lock = zklock.Mutex(zk, path)
            async with trio.open_nursery() as nursery:

                async def waiter() -> None:
                    nonlocal holding, overlaps
                    async with lock as lease:
                        holding += 1
                        overlaps += holding > 1
                        granted.append(_sequence(lease.node))
                        await trio.lowlevel.checkpoint()
                        holding -= 1

                for _ in range(n // 2):
                    nursery.start_soon(waiter)
                await _until_queued(direct, path, n // 2 + 1)
                lost = proxy.swallow_reply(op=OpCode.CREATE2, path_prefix=path)
                for _ in range(n // 2):
                    nursery.start_soon(waiter)
                await lost.wait()
                await _until_queued(direct, path, n + 1)
                await _until_watching(zk_hosts, n + 1)
                assert len(await direct.get_children(path)) == n + 1  # no second node of any acquire
                await holder.release()
            try:
                left = await direct.get_children(path)
            except zkwire.NoNodeError:
                left = []
    assert overlaps == 0 and len(granted) == n and granted == sorted(granted)
    assert left == []


def _heap_used_mib(pid: int) -> float | None:
    """The JVM's used heap (``jcmd PID GC.heap_info``), or None where jcmd cannot attach."""
    import re
    import shutil
    import subprocess

    if shutil.which("jcmd") is None:
        return None
    try:
        out = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    used = [int(k) for k in re.findall(r"used (\d+)K", out)]
    return sum(used[:2]) / 1024 if used else None  # the young and the old generation (serial collector)


@pytest.mark.slow
async def test_ten_thousand_waiters_on_one_lock_at_the_default_timeout() -> None:
    """10,000 waiters of one process on one lock, default session timeout, against a server of its own
    with the test servers' 256 MiB heap (which exits on running out of memory): every waiter is granted,
    in queue order, nothing is left behind, and the server lives with its heap well inside the bound."""
    from zkwire.testing.embedded import EmbeddedZooKeeper

    waiters = 10_000
    server = EmbeddedZooKeeper()
    server.start()
    try:
        pid = server.pid
        assert pid is not None
        peak: list[float] = []
        granted: list[int] = []

        async def sample_heap(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            task_status.started()
            while True:
                used = await trio.to_thread.run_sync(_heap_used_mib, pid)
                if used is not None:
                    peak.append(used)
                await trio.sleep(0.5)

        with trio.fail_after(150):
            async with zkwire.open_client(server.hosts) as zk, trio.open_nursery() as sampler:
                await sampler.start(sample_heap)
                path = "/ten-thousand"
                lock = zklock.Mutex(zk, path)
                await lock.acquire()
                async with trio.open_nursery() as nursery:

                    async def waiter() -> None:
                        async with lock as lease:
                            granted.append(_sequence(lease.node))

                    for _ in range(waiters):
                        nursery.start_soon(waiter)
                    await _until_watching(server.hosts, waiters)
                    await lock.release()
                try:
                    left = await zk.get_children(path)
                except zkwire.NoNodeError:
                    left = []
                sampler.cancel_scope.cancel()
        assert len(granted) == waiters and granted == sorted(granted)
        assert left == []
        assert server.running, "the server died under the queue"
        print(f"server heap: {len(peak)} samples, peak {max(peak, default=0):.0f} MiB")
        if peak:  # jcmd attached: the heap stayed far from the 256 MiB bound
            assert max(peak) < 200, f"server heap peaked at {max(peak):.0f} MiB"
    finally:
        server.stop()
