"""zkwire (trio) and zklock.Mutex."""

from __future__ import annotations

import time
import tracemalloc
from contextlib import AsyncExitStack
from typing import Any

import trio

import zklock
import zklock.recipe
import zkwire
import zkwire.client.watchers

from . import (
    Countdown,
    Params,
    Result,
    StopFlag,
    children_path,
    cycle_ms,
    handoff_result,
    handoffs,
    herd_result,
    lock_watch_count,
    measure_counted_async,
    measure_listing_async,
    measure_round_robin_async,
    measure_sequential_async,
    memory_result,
    metric_function,
    rss_bytes,
    server_counters,
    server_watch_count,
    server_watch_triggers,
    settle,
    throughput,
    unique,
    waiters_result,
    within,
)


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return trio.run(metric_function(globals(), metric), hosts, path, p)


async def _seq(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
        return await measure_sequential_async(lambda: zk.get_data(path), p)


async def _pipelined(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:

        async def phase(seconds: float) -> tuple[int, float]:
            done = 0
            flag = StopFlag()

            async def worker() -> None:
                nonlocal done
                while not flag.stop and done < p.max_ops:
                    await zk.get_data(path)
                    done += 1

            t = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flag.after, seconds, trio.sleep)
                for _ in range(p.window):
                    nursery.start_soon(worker)
            return done, time.perf_counter() - t

        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    return throughput(ops, elapsed)


async def _create_delete(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
        prefix = f"{path}/{unique('cd')}-"

        async def create_delete() -> None:
            created = await zk.create(prefix, ephemeral=True, sequential=True)
            await zk.delete(created)

        ops, elapsed = await measure_counted_async(create_delete, p, step=2)
    return throughput(ops, elapsed)


async def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
        mutex = zklock.Mutex(zk, f"{path}/{unique('zklock-cycle')}")

        async def cycle() -> None:
            async with mutex:
                pass

        cycles, elapsed = await measure_counted_async(cycle, p)
    return cycle_ms(cycles, elapsed)


async def _contended(hosts: str, path: str, p: Params) -> Result:
    lock_path = f"{path}/{unique('zklock-contended')}"
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(zkwire.open_client(hosts)) for _ in range(p.sessions)]

        async def phase(seconds: float) -> tuple[int, float]:
            grants = 0
            flag = StopFlag()

            async def worker(client: zkwire.Client) -> None:
                nonlocal grants
                mutex = zklock.Mutex(client, lock_path)
                while not flag.stop and grants < p.max_ops:
                    async with mutex:
                        if not flag.stop:
                            grants += 1

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flag.after, seconds, trio.sleep)
                for i in range(p.workers):
                    nursery.start_soon(worker, clients[i % len(clients)])
            return grants, seconds

        await phase(p.warm)
        grants, elapsed = await phase(p.measure)
    return throughput(grants, elapsed, "grants")


async def _handoff(hosts: str, path: str, p: Params) -> Result:
    """Two sessions pass one lock back and forth; each handoff is timed from the moment the holder
    starts releasing to the moment the waiter's acquire returns (same process, same clock)."""
    lock_path = f"{path}/{unique('zklock-handoff')}"
    async with zkwire.open_client(hosts) as a, zkwire.open_client(hosts) as b:
        clients = [a, b]
        cmd_send, cmd_recv = [], []
        reply_send, reply_recv = [], []
        for _ in range(2):
            s, r = trio.open_memory_channel[str](1)
            cmd_send.append(s)
            cmd_recv.append(r)
            s2, r2 = trio.open_memory_channel[float](1)
            reply_send.append(s2)
            reply_recv.append(r2)

        async def worker(i: int) -> None:
            mutex = zklock.Mutex(clients[i], lock_path)
            async for cmd in cmd_recv[i]:
                if cmd == "acquire":
                    await mutex.acquire()
                    await reply_send[i].send(time.perf_counter())
                else:
                    t0 = time.perf_counter()
                    await mutex.release()
                    await reply_send[i].send(t0)

        async def queued(n: int) -> None:
            with trio.fail_after(p.timeout):
                while len(await a.get_children(lock_path)) < n:
                    await trio.sleep(0.001)
            await trio.sleep(0.005)

        lat: list[float] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker, 0)
            nursery.start_soon(worker, 1)
            await cmd_send[0].send("acquire")
            await reply_recv[0].receive()
            holder = 0
            for measured in handoffs(p):
                waiter = 1 - holder
                await cmd_send[waiter].send("acquire")
                await queued(2)
                await cmd_send[holder].send("release")
                t0 = await reply_recv[holder].receive()
                t1 = await reply_recv[waiter].receive()
                if measured:
                    lat.append(t1 - t0)
                holder = waiter
            await cmd_send[holder].send("release")
            await reply_recv[holder].receive()
            nursery.cancel_scope.cancel()
    return handoff_result(lat)


async def _herd(hosts: str, path: str, p: Params) -> Result:
    """``waiters`` contenders in one session queue behind a holder in another; the holder releases and
    the queue drains (each waiter releases as soon as it holds).  Counts the watchers the server
    triggered and, on the client, how many waiters were woken (watch events delivered) and how often a
    woken waiter listed the queue again (zklock finds its next blocker without listing)."""
    lock_path = f"{path}/{unique('zklock-herd')}"
    relists = 0
    original_list = zklock.recipe._Attempt._list

    async def counting_list(self: Any) -> Any:
        nonlocal relists
        relists += 1
        return await original_list(self)

    zklock.recipe._Attempt._list = counting_list  # type: ignore[method-assign]
    deliveries = 0
    original_deliver = zkwire.client.watchers.Watch._deliver

    def counting_deliver(self: Any, event: Any) -> None:
        nonlocal deliveries
        deliveries += 1
        original_deliver(self, event)

    zkwire.client.watchers.Watch._deliver = counting_deliver  # type: ignore[method-assign]
    async with zkwire.open_client(hosts) as holder_zk, zkwire.open_client(hosts) as zk:
        holder = zklock.Mutex(holder_zk, lock_path)
        await holder.acquire()
        drained = Countdown(p.waiters, trio.Event())

        async def waiter() -> None:
            async with zklock.Mutex(zk, lock_path):
                pass
            drained.done()

        watches = await trio.to_thread.run_sync(server_watch_count, hosts) + p.waiters - 1
        async with trio.open_nursery() as nursery:
            for _ in range(p.waiters):
                nursery.start_soon(waiter)
            with trio.fail_after(p.timeout):
                while len(await holder_zk.get_children(lock_path)) < p.waiters + 1:
                    await trio.sleep(0.01)
                while await trio.to_thread.run_sync(server_watch_count, hosts) < watches:
                    await trio.sleep(0.01)
            await trio.sleep(0.2)
            before = await trio.to_thread.run_sync(server_watch_triggers, hosts)
            relists = deliveries = 0
            t = time.perf_counter()
            await holder.release()
            with trio.fail_after(p.timeout):
                await drained.event.wait()
            drain = time.perf_counter() - t
            await trio.sleep(0.2)
            after = await trio.to_thread.run_sync(server_watch_triggers, hosts)
    zklock.recipe._Attempt._list = original_list  # type: ignore[method-assign]
    zkwire.client.watchers.Watch._deliver = original_deliver  # type: ignore[method-assign]
    return herd_result(before, after, deliveries, drain, p.waiters, relists)


async def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions

    async def open_n(stack: AsyncExitStack) -> None:
        for _ in range(n):
            await stack.enter_async_context(zkwire.open_client(hosts))
        await trio.sleep(0.3)
        settle()

    async with zkwire.open_client(hosts):  # one-time costs (imports, first connection) go here
        await trio.sleep(0.1)
        settle()
        rss0 = rss_bytes()
        async with AsyncExitStack() as stack:
            await open_n(stack)
            rss = rss_bytes() - rss0
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        async with AsyncExitStack() as stack:
            await open_n(stack)
            heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
    return memory_result(rss, heap, n)


async def _mem_waiter(hosts: str, path: str, p: Params) -> Result:
    n = p.mem_waiters
    lock_path = f"{path}/{unique('zklock-mem')}"
    async with zkwire.open_client(hosts) as holder_zk, zkwire.open_client(hosts) as zk:
        holder = zklock.Mutex(holder_zk, lock_path)
        await holder.acquire()

        async def waiter() -> None:
            async with zklock.Mutex(zk, lock_path):
                pass

        async def queue_n(watches: int) -> None:
            with trio.fail_after(p.timeout):
                while len(await holder_zk.get_children(lock_path)) < n + 1:
                    await trio.sleep(0.01)
                while await trio.to_thread.run_sync(server_watch_count, hosts) < watches:
                    await trio.sleep(0.01)
            await trio.sleep(0.2)
            settle()

        # One waiter first: its one-time costs are not counted.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            with trio.fail_after(p.timeout):
                while len(await holder_zk.get_children(lock_path)) < 2:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        settle()
        rss0 = rss_bytes()
        async with trio.open_nursery() as nursery:
            watches = await trio.to_thread.run_sync(server_watch_count, hosts) + n - 1
            for _ in range(n):
                nursery.start_soon(waiter)
            await queue_n(watches)
            rss = rss_bytes() - rss0
            nursery.cancel_scope.cancel()
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        async with trio.open_nursery() as nursery:
            watches = await trio.to_thread.run_sync(server_watch_count, hosts) + n - 1
            for _ in range(n):
                nursery.start_soon(waiter)
            await queue_n(watches)
            heap = tracemalloc.get_traced_memory()[0] - heap0
            nursery.cancel_scope.cancel()
        tracemalloc.stop()
        await holder.release()
    return memory_result(rss, heap, n)


async def _queued(holder_zk: zkwire.Client, hosts: str, lock_path: str, nodes: int, watches: int, p: Params) -> None:
    """Wait (bounded) until the server holds ``watches`` watches and the lock has ``nodes`` children:
    every waiter has queued and parked.  The watch count (polled in a thread) comes first, so the
    queue is listed once or twice, not every 20 ms."""
    with trio.fail_after(p.wait_bound()):
        while await trio.to_thread.run_sync(lock_watch_count, hosts, lock_path) < watches:
            await trio.sleep(0.02)
        while len(await holder_zk.get_children(lock_path)) < nodes:
            await trio.sleep(0.02)


async def _waiters(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` waiters in one session queue behind a holder in another.  Time until all are
    queued and parked, RSS growth per waiter, then the drain (each waiter releases as soon as it holds):
    grants per second, process CPU per grant, the server's reply bytes and packets per grant.  The heap
    per waiter comes from a second queue under tracemalloc (up to ``heap_max`` waiters)."""
    n = p.arg
    lock_path = f"{path}/{unique('zklock-scale')}"
    async with zkwire.open_client(hosts) as holder_zk, zkwire.open_client(hosts) as zk:
        holder = zklock.Mutex(holder_zk, lock_path)
        await holder.acquire()
        drained = Countdown(n, trio.Event())

        async def waiter() -> None:
            async with zklock.Mutex(zk, lock_path):
                pass
            drained.done()

        settle()
        rss0 = rss_bytes()
        watches = await trio.to_thread.run_sync(lock_watch_count, hosts, lock_path) + n - 1
        async with trio.open_nursery() as nursery:
            t = time.perf_counter()
            for _ in range(n):
                nursery.start_soon(waiter)
            await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
            queue_s = time.perf_counter() - t
            settle()
            rss = rss_bytes() - rss0
            before = await trio.to_thread.run_sync(server_counters, hosts)
            cpu0, t = time.process_time(), time.perf_counter()
            await holder.release()
            with trio.fail_after(p.wait_bound()):
                await drained.event.wait()
            drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
            after = await trio.to_thread.run_sync(server_counters, hosts)
        heap: float | None = None
        if n <= p.heap_max:
            await holder.acquire()
            drained = Countdown(n, trio.Event())
            tracemalloc.start()
            settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            async with trio.open_nursery() as nursery:
                watches = await trio.to_thread.run_sync(lock_watch_count, hosts, lock_path) + n - 1
                for _ in range(n):
                    nursery.start_soon(waiter)
                await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
                settle()
                heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
                nursery.cancel_scope.cancel()
            tracemalloc.stop()
            await holder.release()
    return waiters_result(n, queue_s, drain, cpu, rss, heap, before, after)


async def _sessions(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` sessions in one process (after a first one that takes the one-time costs): RSS
    growth per session, then one getData per session in turn (round-robin, one in flight): ops/s and
    process CPU per op."""
    n = p.arg
    async with zkwire.open_client(hosts) as first:
        await first.get_data(path)
        settle()
        rss0 = rss_bytes()
        async with AsyncExitStack() as stack:
            t = time.perf_counter()
            clients = []
            for _ in within(n, p.wait_bound(), "sessions did not open"):
                clients.append(await stack.enter_async_context(zkwire.open_client(hosts)))
            open_s = time.perf_counter() - t
            await trio.sleep(0.3)
            settle()
            rss = rss_bytes() - rss0
            loop = await measure_round_robin_async(lambda i: clients[i].get_data(path), n, p)
    return loop.result(rss, open_s)


async def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call.

    ``sort=False``: the same contract as every peer's getChildren (the server's order); zkwire's default
    sorts, which for 100,000 names adds about 11 ms of client CPU per call."""
    node = children_path(path, p.arg)
    async with zkwire.open_client(hosts) as zk:
        return await measure_listing_async(lambda: zk.get_children(node, sort=False), node, p)
