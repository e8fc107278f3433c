"""aiozk 0.32 (asyncio) and its Lock recipe."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from aiozk import ZKClient
from aiozk.recipes.sequential import SequentialRecipe

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
    return asyncio.run(metric_function(globals(), metric)(hosts, path, p))


async def _client(hosts: str, p: Params) -> ZKClient:
    zk = ZKClient(hosts)
    await asyncio.wait_for(zk.start(), p.timeout)
    return zk


async def _seq(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)
    try:
        return await measure_sequential_async(lambda: zk.get_data(path), p)
    finally:
        await zk.close()


async def _pipelined(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)

    async def phase(seconds: float) -> tuple[int, float]:
        done = 0
        flag = StopFlag()

        async def worker() -> None:
            nonlocal done
            while not flag.stop and done < p.max_ops:
                await zk.get_data(path)
                done += 1

        t = time.perf_counter()
        await asyncio.gather(flag.after(seconds, asyncio.sleep), *(worker() for _ in range(p.window)))
        return done, time.perf_counter() - t

    try:
        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    finally:
        await zk.close()
    return throughput(ops, elapsed)


async def _create_delete(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)
    prefix = f"{path}/{unique('cd')}-"

    async def create_delete() -> None:
        created = await zk.create(prefix, ephemeral=True, sequential=True)
        await zk.delete(created)

    try:
        ops, elapsed = await measure_counted_async(create_delete, p, step=2)
    finally:
        await zk.close()
    return throughput(ops, elapsed)


async def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)
    lock = zk.recipes.Lock(f"{path}/{unique('aiozk-cycle')}")

    async def cycle() -> None:
        async with lock:
            pass

    try:
        cycles, elapsed = await measure_counted_async(cycle, p)
    finally:
        await zk.close()
    return cycle_ms(cycles, elapsed)


async def _contended(hosts: str, path: str, p: Params) -> Result:
    clients = [await _client(hosts, p) for _ in range(p.sessions)]
    lock_path = f"{path}/{unique('aiozk-contended')}"

    async def phase(seconds: float) -> int:
        grants = 0
        flag = StopFlag()

        async def worker(zk: ZKClient) -> None:
            nonlocal grants
            lock = zk.recipes.Lock(lock_path)
            while not flag.stop and grants < p.max_ops:
                async with lock:
                    if not flag.stop:
                        grants += 1

        await asyncio.wait_for(
            asyncio.gather(
                flag.after(seconds, asyncio.sleep), *(worker(clients[i % len(clients)]) for i in range(p.workers))
            ),
            seconds + p.timeout,
        )
        return grants

    try:
        await phase(p.warm)
        grants = await phase(p.measure)
    finally:
        for zk in clients:
            await zk.close()
    return throughput(grants, p.measure, "grants")


async def _handoff(hosts: str, path: str, p: Params) -> Result:
    a, b = await _client(hosts, p), await _client(hosts, p)
    lock_path = f"{path}/{unique('aiozk-handoff')}"
    locks = [a.recipes.Lock(lock_path), b.recipes.Lock(lock_path)]

    async def acquire(i: int) -> float:
        await locks[i].acquire()
        return time.perf_counter()

    async def queued() -> bool:
        return len(await a.get_children(lock_path)) >= 2

    lat: list[float] = []
    try:
        await locks[0].acquire()
        holder = 0
        for measured in handoffs(p):
            waiter = 1 - holder
            pending = asyncio.create_task(acquire(waiter))
            await _wait_until(queued, p.timeout, "waiter did not queue", 0.001)
            await asyncio.sleep(0.005)
            t0 = time.perf_counter()
            await locks[holder].release()
            t1 = await asyncio.wait_for(pending, p.timeout)
            if measured:
                lat.append(t1 - t0)
            holder = waiter
        await locks[holder].release()
    finally:
        await a.close()
        await b.close()
    return handoff_result(lat)


async def _herd(hosts: str, path: str, p: Params) -> Result:
    holder_zk, zk = await _client(hosts, p), await _client(hosts, p)
    lock_path = f"{path}/{unique('aiozk-herd')}"
    wakeups = 0
    original = SequentialRecipe.wait_on_sibling

    async def counting(self: Any, sibling: str, timeout: float | None = None) -> None:  # noqa: ASYNC109
        nonlocal wakeups
        await original(self, sibling, timeout)
        wakeups += 1

    SequentialRecipe.wait_on_sibling = counting  # type: ignore[method-assign]
    try:
        holder = holder_zk.recipes.Lock(lock_path)
        await holder.acquire()
        drained = Countdown(p.waiters, asyncio.Event())

        async def waiter() -> None:
            async with zk.recipes.Lock(lock_path):
                pass
            drained.done()

        watches = await asyncio.to_thread(server_watch_count, hosts) + p.waiters - 1
        tasks = [asyncio.create_task(waiter()) for _ in range(p.waiters)]
        await _wait_until(_queue_holds(holder_zk, hosts, lock_path, p.waiters + 1, watches), p.timeout)
        await asyncio.sleep(0.2)
        before = await asyncio.to_thread(server_watch_triggers, hosts)
        wakeups = 0
        t = time.perf_counter()
        await holder.release()
        await asyncio.wait_for(drained.event.wait(), p.timeout)
        drain = time.perf_counter() - t
        await asyncio.sleep(0.2)
        after = await asyncio.to_thread(server_watch_triggers, hosts)
        await asyncio.gather(*tasks)
    finally:
        SequentialRecipe.wait_on_sibling = original  # type: ignore[method-assign]
        await zk.close()
        await holder_zk.close()
    return herd_result(before, after, wakeups, drain, p.waiters)


async def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions
    first = await _client(hosts, p)

    async def open_n() -> list[ZKClient]:
        clients = [await _client(hosts, p) for _ in range(n)]
        await asyncio.sleep(0.3)
        settle()
        return clients

    try:
        settle()
        rss0 = rss_bytes()
        clients = await open_n()
        rss = rss_bytes() - rss0
        for zk in clients:
            await zk.close()
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        clients = await open_n()
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        for zk in clients:
            await zk.close()
    finally:
        await first.close()
    return memory_result(rss, heap, n)


async def _mem_waiter(hosts: str, path: str, p: Params) -> Result:
    n = p.mem_waiters
    holder_zk, zk = await _client(hosts, p), await _client(hosts, p)
    lock_path = f"{path}/{unique('aiozk-mem')}"
    holder = holder_zk.recipes.Lock(lock_path)
    await holder.acquire()
    tasks: list[asyncio.Task[None]] = []

    async def waiter() -> None:
        async with zk.recipes.Lock(lock_path):
            pass

    async def queue(k: int) -> None:
        watches = await asyncio.to_thread(server_watch_count, hosts) + k - 1
        tasks.extend(asyncio.create_task(waiter()) for _ in range(k))
        await _wait_until(_queue_holds(holder_zk, hosts, lock_path, len(tasks) + 1, watches), p.timeout)
        await asyncio.sleep(0.2)
        settle()

    try:
        await queue(1)
        settle()
        rss0 = rss_bytes()
        await queue(n)
        rss = rss_bytes() - rss0
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        await queue(n)
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await zk.close()
        await holder_zk.close()
    return memory_result(rss, heap, n)


async def _wait_until(
    done: Callable[[], Awaitable[bool]], bound: float, what: str = "waiters did not queue", interval: float = 0.01
) -> None:
    """Poll ``done`` every ``interval`` seconds until it is true; ``TimeoutError(what)`` after ``bound``."""
    limit = time.monotonic() + bound
    while not await done():
        if time.monotonic() > limit:
            raise TimeoutError(what)
        await asyncio.sleep(interval)


def _queue_holds(
    holder_zk: ZKClient, hosts: str, lock_path: str, nodes: int, watches: int
) -> Callable[[], Awaitable[bool]]:
    """Whether the lock has ``nodes`` children and the server holds ``watches`` watches (``mntr``, in a
    thread): every waiter has queued and parked."""

    async def done() -> bool:
        return (
            len(await holder_zk.get_children(lock_path)) >= nodes
            and await asyncio.to_thread(server_watch_count, hosts) >= watches
        )

    return done


async def _queued(holder_zk: ZKClient, hosts: str, lock_path: str, nodes: int, watches: int, p: Params) -> None:
    """Wait (bounded) until the server holds ``watches`` watches (polled in a thread) and the lock has
    ``nodes`` children: every waiter has queued and parked."""
    limit = p.wait_bound()
    started = time.monotonic()

    async def watched() -> bool:
        return await asyncio.to_thread(lock_watch_count, hosts, lock_path) >= watches

    async def listed() -> bool:
        return len(await holder_zk.get_children(lock_path)) >= nodes

    await _wait_until(watched, limit, interval=0.02)
    await _wait_until(listed, limit - (time.monotonic() - started), interval=0.02)


async def _close_quietly(zk: ZKClient) -> bool:
    """Close ``zk``; False if aiozk's close timed out (it can, after many waiters were cancelled): the
    figures taken before stand."""
    try:
        await zk.close()
    except TimeoutError:
        return False
    return True


async def _waiters(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` waiters in one session behind a holder in another (see zkwire_peer._waiters)."""
    n = p.arg
    holder_zk, zk = await _client(hosts, p), await _client(hosts, p)
    lock_path = f"{path}/{unique('aiozk-scale')}"
    holder = holder_zk.recipes.Lock(lock_path)
    drained = Countdown(n, asyncio.Event())

    async def waiter() -> None:
        async with zk.recipes.Lock(lock_path):
            pass
        drained.done()

    heap: float | None = None
    try:
        await holder.acquire()
        settle()
        rss0 = rss_bytes()
        watches = await asyncio.to_thread(lock_watch_count, hosts, lock_path) + n - 1
        t = time.perf_counter()
        tasks = [asyncio.create_task(waiter()) for _ in range(n)]
        await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
        queue_s = time.perf_counter() - t
        settle()
        rss = rss_bytes() - rss0
        before = await asyncio.to_thread(server_counters, hosts)
        cpu0, t = time.process_time(), time.perf_counter()
        await holder.release()
        await asyncio.wait_for(drained.event.wait(), p.wait_bound())
        drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
        after = await asyncio.to_thread(server_counters, hosts)
        await asyncio.gather(*tasks)
        if n <= p.heap_max:
            await holder.acquire()
            tracemalloc.start()
            settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            watches = await asyncio.to_thread(lock_watch_count, hosts, lock_path) + n - 1
            tasks = [asyncio.create_task(waiter()) for _ in range(n)]
            await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
            settle()
            heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
            tracemalloc.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        closed = await _close_quietly(zk) and await _close_quietly(holder_zk)
    return {"closed_in_time": closed, **waiters_result(n, queue_s, drain, cpu, rss, heap, before, after)}


async def _sessions(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` sessions in one process (see zkwire_peer._sessions)."""
    n = p.arg
    first = await _client(hosts, p)
    clients: list[ZKClient] = []
    try:
        await first.get_data(path)
        settle()
        rss0 = rss_bytes()
        t = time.perf_counter()
        for _ in within(n, p.wait_bound(), "sessions did not open"):
            clients.append(await _client(hosts, p))
        open_s = time.perf_counter() - t
        await asyncio.sleep(0.3)
        settle()
        rss = rss_bytes() - rss0
        loop = await measure_round_robin_async(lambda i: clients[i].get_data(path), n, p)
    finally:
        for zk in clients:
            await zk.close()
        await first.close()
    return loop.result(rss, open_s)


async def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call."""
    node = children_path(path, p.arg)
    zk = await _client(hosts, p)
    try:
        return await measure_listing_async(lambda: zk.get_children(node), node, p)
    finally:
        await zk.close()
