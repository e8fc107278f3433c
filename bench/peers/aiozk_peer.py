"""aiozk 0.32 (asyncio) and its Lock recipe."""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
import tracemalloc
from typing import Any

from aiozk import ZKClient
from aiozk.recipes.sequential import SequentialRecipe

from . import (
    Params,
    Result,
    children_path,
    lock_watch_count,
    measure_sequential_async,
    percentiles,
    rss_bytes,
    server_counters,
    server_watch_count,
    server_watch_triggers,
    unique,
)


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return asyncio.run(_METRICS[metric](hosts, path, p))


async def _client(hosts: str, p: Params) -> ZKClient:
    zk = ZKClient(hosts)
    await asyncio.wait_for(zk.start(), p.timeout)
    return zk


class _Stop:
    def __init__(self) -> None:
        self.stop = False

    async def after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self.stop = True


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
        flag = _Stop()

        async def worker() -> None:
            nonlocal done
            while not flag.stop and done < p.max_ops:
                await zk.get_data(path)
                done += 1

        t = time.perf_counter()
        await asyncio.gather(flag.after(seconds), *(worker() for _ in range(p.window)))
        return done, time.perf_counter() - t

    try:
        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    finally:
        await zk.close()
    return {"ops_per_s": ops / elapsed, "ops": ops}


async def _create_delete(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)
    prefix = f"{path}/{unique('cd')}-"

    async def phase(seconds: float) -> tuple[int, float]:
        n = 0
        t = time.perf_counter()
        deadline = t + seconds
        while n < p.max_ops and time.perf_counter() < deadline:
            created = await zk.create(prefix, ephemeral=True, sequential=True)
            await zk.delete(created)
            n += 2
        return n, time.perf_counter() - t

    try:
        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    finally:
        await zk.close()
    return {"ops_per_s": ops / elapsed, "ops": ops}


async def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    zk = await _client(hosts, p)
    lock = zk.recipes.Lock(f"{path}/{unique('aiozk-cycle')}")

    async def phase(seconds: float) -> tuple[int, float]:
        n = 0
        t = time.perf_counter()
        deadline = t + seconds
        while n < p.max_ops and time.perf_counter() < deadline:
            async with lock:
                pass
            n += 1
        return n, time.perf_counter() - t

    try:
        await phase(p.warm)
        cycles, elapsed = await phase(p.measure)
    finally:
        await zk.close()
    return {"ms": elapsed / cycles * 1e3, "cycles": cycles}


async def _contended(hosts: str, path: str, p: Params) -> Result:
    clients = [await _client(hosts, p) for _ in range(p.sessions)]
    lock_path = f"{path}/{unique('aiozk-contended')}"

    async def phase(seconds: float) -> int:
        grants = 0
        flag = _Stop()

        async def worker(zk: ZKClient) -> None:
            nonlocal grants
            lock = zk.recipes.Lock(lock_path)
            while not flag.stop and grants < p.max_ops:
                async with lock:
                    if not flag.stop:
                        grants += 1

        await asyncio.wait_for(
            asyncio.gather(flag.after(seconds), *(worker(clients[i % len(clients)]) for i in range(p.workers))),
            seconds + p.timeout,
        )
        return grants

    try:
        await phase(p.warm)
        grants = await phase(p.measure)
    finally:
        for zk in clients:
            await zk.close()
    return {"grants_per_s": grants / p.measure, "grants": grants}


async def _handoff(hosts: str, path: str, p: Params) -> Result:
    a, b = await _client(hosts, p), await _client(hosts, p)
    lock_path = f"{path}/{unique('aiozk-handoff')}"
    locks = [a.recipes.Lock(lock_path), b.recipes.Lock(lock_path)]

    async def acquire(i: int) -> float:
        await locks[i].acquire()
        return time.perf_counter()

    lat: list[float] = []
    try:
        await locks[0].acquire()
        holder = 0
        total = p.handoffs + max(5, p.handoffs // 10)
        deadline = time.perf_counter() + p.timeout
        for k in range(total):
            if time.perf_counter() > deadline:
                break
            waiter = 1 - holder
            pending = asyncio.create_task(acquire(waiter))
            limit = time.monotonic() + p.timeout
            while len(await a.get_children(lock_path)) < 2:
                if time.monotonic() > limit:
                    raise TimeoutError("waiter did not queue")
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.005)
            t0 = time.perf_counter()
            await locks[holder].release()
            t1 = await asyncio.wait_for(pending, p.timeout)
            if k >= total - p.handoffs:
                lat.append(t1 - t0)
            holder = waiter
        await locks[holder].release()
    finally:
        await a.close()
        await b.close()
    pc = percentiles(lat, 1e3)
    return {"p50_ms": pc["p50"], "p99_ms": pc["p99"], "handoffs": len(lat)}


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
        done = 0
        all_done = asyncio.Event()

        async def waiter() -> None:
            nonlocal done
            async with zk.recipes.Lock(lock_path):
                pass
            done += 1
            if done == p.waiters:
                all_done.set()

        watches = await asyncio.to_thread(server_watch_count, hosts) + p.waiters - 1
        tasks = [asyncio.create_task(waiter()) for _ in range(p.waiters)]
        limit = time.monotonic() + p.timeout
        while (
            len(await holder_zk.get_children(lock_path)) < p.waiters + 1
            or await asyncio.to_thread(server_watch_count, hosts) < watches
        ):
            if time.monotonic() > limit:
                raise TimeoutError("waiters did not queue")
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        before = await asyncio.to_thread(server_watch_triggers, hosts)
        wakeups = 0
        t = time.perf_counter()
        await holder.release()
        await asyncio.wait_for(all_done.wait(), p.timeout)
        drain = time.perf_counter() - t
        await asyncio.sleep(0.2)
        after = await asyncio.to_thread(server_watch_triggers, hosts)
        await asyncio.gather(*tasks)
    finally:
        SequentialRecipe.wait_on_sibling = original  # type: ignore[method-assign]
        await zk.close()
        await holder_zk.close()
    n = p.waiters
    return {
        "server_triggers_per_release": (after - before) / n,
        "wakeups_per_release": wakeups / n,
        "drain_grants_per_s": n / drain,
        "waiters": n,
    }


def _settle() -> None:
    for _ in range(3):
        gc.collect()


async def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions
    first = await _client(hosts, p)

    async def open_n() -> list[ZKClient]:
        clients = [await _client(hosts, p) for _ in range(n)]
        await asyncio.sleep(0.3)
        _settle()
        return clients

    try:
        _settle()
        rss0 = rss_bytes()
        clients = await open_n()
        rss = rss_bytes() - rss0
        for zk in clients:
            await zk.close()
        tracemalloc.start()
        _settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        clients = await open_n()
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        for zk in clients:
            await zk.close()
    finally:
        await first.close()
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


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
        limit = time.monotonic() + p.timeout
        while (
            len(await holder_zk.get_children(lock_path)) < len(tasks) + 1
            or await asyncio.to_thread(server_watch_count, hosts) < watches
        ):
            if time.monotonic() > limit:
                raise TimeoutError("waiters did not queue")
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        _settle()

    try:
        await queue(1)
        _settle()
        rss0 = rss_bytes()
        await queue(n)
        rss = rss_bytes() - rss0
        tracemalloc.start()
        _settle()
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
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


async def _queued(holder_zk: ZKClient, hosts: str, lock_path: str, nodes: int, watches: int, p: Params) -> None:
    """Wait (bounded) until the server holds ``watches`` watches (polled in a thread) and the lock has
    ``nodes`` children: every waiter has queued and parked."""
    limit = time.monotonic() + p.wait_bound()
    while await asyncio.to_thread(lock_watch_count, hosts, lock_path) < watches:
        if time.monotonic() > limit:
            raise TimeoutError("waiters did not queue")
        await asyncio.sleep(0.02)
    while len(await holder_zk.get_children(lock_path)) < nodes:
        if time.monotonic() > limit:
            raise TimeoutError("waiters did not queue")
        await asyncio.sleep(0.02)


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
    done = 0
    all_done = asyncio.Event()

    async def waiter() -> None:
        nonlocal done
        async with zk.recipes.Lock(lock_path):
            pass
        done += 1
        if done == n:
            all_done.set()

    heap: float | None = None
    try:
        await holder.acquire()
        _settle()
        rss0 = rss_bytes()
        watches = await asyncio.to_thread(lock_watch_count, hosts, lock_path) + n - 1
        t = time.perf_counter()
        tasks = [asyncio.create_task(waiter()) for _ in range(n)]
        await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
        queue_s = time.perf_counter() - t
        _settle()
        rss = rss_bytes() - rss0
        before = await asyncio.to_thread(server_counters, hosts)
        cpu0, t = time.process_time(), time.perf_counter()
        await holder.release()
        await asyncio.wait_for(all_done.wait(), p.wait_bound())
        drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
        after = await asyncio.to_thread(server_counters, hosts)
        await asyncio.gather(*tasks)
        if n <= p.heap_max:
            await holder.acquire()
            tracemalloc.start()
            _settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            watches = await asyncio.to_thread(lock_watch_count, hosts, lock_path) + n - 1
            tasks = [asyncio.create_task(waiter()) for _ in range(n)]
            await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
            _settle()
            heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
            tracemalloc.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        closed = await _close_quietly(zk) and await _close_quietly(holder_zk)
    return {
        "closed_in_time": closed,
        "queue_s": queue_s,
        "drain_grants_per_s": n / drain,
        "rss_kib": rss / n / 1024,
        "heap_kib": heap,
        "cpu_us_per_grant": cpu / n * 1e6,
        "server_bytes_per_grant": (after["tcp_bytes_sent"] - before["tcp_bytes_sent"]) / n,
        "server_packets_per_grant": (after["zk_packets_sent"] - before["zk_packets_sent"]) / n,
        "waiters": n,
    }


async def _sessions(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` sessions in one process (see zkwire_peer._sessions)."""
    n = p.arg
    first = await _client(hosts, p)
    clients: list[ZKClient] = []
    try:
        await first.get_data(path)
        _settle()
        rss0 = rss_bytes()
        t = time.perf_counter()
        limit = time.monotonic() + p.wait_bound()
        for _ in range(n):
            if time.monotonic() > limit:
                raise TimeoutError("sessions did not open")
            clients.append(await _client(hosts, p))
        open_s = time.perf_counter() - t
        await asyncio.sleep(0.3)
        _settle()
        rss = rss_bytes() - rss0

        async def phase(seconds: float) -> tuple[int, float, float]:
            i = 0
            cpu0, t = time.process_time(), time.perf_counter()
            deadline = t + seconds
            while i < p.max_ops and (i < n or time.perf_counter() < deadline):
                await clients[i % n].get_data(path)
                i += 1
            return i, time.perf_counter() - t, time.process_time() - cpu0

        await phase(p.warm)
        ops, elapsed, cpu = await phase(p.measure)
    finally:
        for zk in clients:
            await zk.close()
        await first.close()
    return {
        "rss_kib": rss / n / 1024,
        "open_ms": open_s / n * 1e3,
        "ops_per_s": ops / elapsed,
        "cpu_us_per_op": cpu / ops * 1e6,
        "sessions": n,
    }


async def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call."""
    node = children_path(path, p.arg)
    zk = await _client(hosts, p)
    try:
        deadline = time.perf_counter() + p.warm
        i = 0
        while i < p.calls and time.perf_counter() < deadline:
            await zk.get_children(node)
            i += 1
        lat: list[float] = []
        count = 0
        cpu0 = time.process_time()
        deadline = time.perf_counter() + p.measure
        while len(lat) < p.calls and (len(lat) < 3 or time.perf_counter() < deadline):
            t = time.perf_counter()
            count = len(await zk.get_children(node))
            lat.append(time.perf_counter() - t)
        cpu = time.process_time() - cpu0
    finally:
        await zk.close()
    if count != p.arg:
        raise RuntimeError(f"{node} has {count} children, expected {p.arg}")
    return {"ms_per_call": statistics.median(lat) * 1e3, "cpu_ms_per_call": cpu / len(lat) * 1e3, "calls": len(lat)}


_METRICS = {
    "seq": _seq,
    "pipelined": _pipelined,
    "create_delete": _create_delete,
    "lock_cycle": _lock_cycle,
    "contended": _contended,
    "handoff": _handoff,
    "herd": _herd,
    "mem_session": _mem_session,
    "mem_waiter": _mem_waiter,
    "waiters": _waiters,
    "sessions": _sessions,
    "children": _children,
}
