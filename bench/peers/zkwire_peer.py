"""zkwire (trio) and zklock.Mutex."""

from __future__ import annotations

import gc
import statistics
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
    return trio.run(_METRICS[metric], hosts, path, p)


class _Stop:
    """A flag raised at a deadline by a timer task: cheaper than reading the clock on every op."""

    def __init__(self) -> None:
        self.stop = False

    async def after(self, seconds: float) -> None:
        await trio.sleep(seconds)
        self.stop = True


async def _seq(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
        return await measure_sequential_async(lambda: zk.get_data(path), p)


async def _pipelined(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:

        async def phase(seconds: float) -> tuple[int, float]:
            done = 0
            flag = _Stop()

            async def worker() -> None:
                nonlocal done
                while not flag.stop and done < p.max_ops:
                    await zk.get_data(path)
                    done += 1

            t = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flag.after, seconds)
                for _ in range(p.window):
                    nursery.start_soon(worker)
            return done, time.perf_counter() - t

        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    return {"ops_per_s": ops / elapsed, "ops": ops}


async def _create_delete(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
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

        await phase(p.warm)
        ops, elapsed = await phase(p.measure)
    return {"ops_per_s": ops / elapsed, "ops": ops}


async def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    async with zkwire.open_client(hosts) as zk:
        mutex = zklock.Mutex(zk, f"{path}/{unique('zklock-cycle')}")

        async def phase(seconds: float) -> tuple[int, float]:
            n = 0
            t = time.perf_counter()
            deadline = t + seconds
            while n < p.max_ops and time.perf_counter() < deadline:
                async with mutex:
                    pass
                n += 1
            return n, time.perf_counter() - t

        await phase(p.warm)
        cycles, elapsed = await phase(p.measure)
    return {"ms": elapsed / cycles * 1e3, "cycles": cycles}


async def _contended(hosts: str, path: str, p: Params) -> Result:
    lock_path = f"{path}/{unique('zklock-contended')}"
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(zkwire.open_client(hosts)) for _ in range(p.sessions)]

        async def phase(seconds: float) -> tuple[int, float]:
            grants = 0
            flag = _Stop()

            async def worker(client: zkwire.Client) -> None:
                nonlocal grants
                mutex = zklock.Mutex(client, lock_path)
                while not flag.stop and grants < p.max_ops:
                    async with mutex:
                        if not flag.stop:
                            grants += 1

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flag.after, seconds)
                for i in range(p.workers):
                    nursery.start_soon(worker, clients[i % len(clients)])
            return grants, seconds

        await phase(p.warm)
        grants, elapsed = await phase(p.measure)
    return {"grants_per_s": grants / elapsed, "grants": grants}


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
            total = p.handoffs + max(5, p.handoffs // 10)  # the first few are warm-up
            deadline = time.perf_counter() + p.timeout
            for k in range(total):
                if time.perf_counter() > deadline:
                    break
                waiter = 1 - holder
                await cmd_send[waiter].send("acquire")
                await queued(2)
                await cmd_send[holder].send("release")
                t0 = await reply_recv[holder].receive()
                t1 = await reply_recv[waiter].receive()
                if k >= total - p.handoffs:
                    lat.append(t1 - t0)
                holder = waiter
            await cmd_send[holder].send("release")
            await reply_recv[holder].receive()
            nursery.cancel_scope.cancel()
    pc = percentiles(lat, 1e3)
    return {"p50_ms": pc["p50"], "p99_ms": pc["p99"], "handoffs": len(lat)}


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
        done = 0
        all_done = trio.Event()

        async def waiter() -> None:
            nonlocal done
            async with zklock.Mutex(zk, lock_path):
                pass
            done += 1
            if done == p.waiters:
                all_done.set()

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
                await all_done.wait()
            drain = time.perf_counter() - t
            await trio.sleep(0.2)
            after = await trio.to_thread.run_sync(server_watch_triggers, hosts)
    zklock.recipe._Attempt._list = original_list  # type: ignore[method-assign]
    zkwire.client.watchers.Watch._deliver = original_deliver  # type: ignore[method-assign]
    n = p.waiters
    return {
        "server_triggers_per_release": (after - before) / n,
        "wakeups_per_release": deliveries / n,
        "relists_per_release": relists / n,
        "drain_grants_per_s": n / drain,
        "waiters": n,
    }


def _settle() -> None:
    for _ in range(3):
        gc.collect()


async def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions

    async def open_n(stack: AsyncExitStack) -> None:
        for _ in range(n):
            await stack.enter_async_context(zkwire.open_client(hosts))
        await trio.sleep(0.3)
        _settle()

    async with zkwire.open_client(hosts):  # one-time costs (imports, first connection) go here
        await trio.sleep(0.1)
        _settle()
        rss0 = rss_bytes()
        async with AsyncExitStack() as stack:
            await open_n(stack)
            rss = rss_bytes() - rss0
        tracemalloc.start()
        _settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        async with AsyncExitStack() as stack:
            await open_n(stack)
            heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


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
            _settle()

        # One waiter first: its one-time costs are not counted.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            with trio.fail_after(p.timeout):
                while len(await holder_zk.get_children(lock_path)) < 2:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        _settle()
        rss0 = rss_bytes()
        async with trio.open_nursery() as nursery:
            watches = await trio.to_thread.run_sync(server_watch_count, hosts) + n - 1
            for _ in range(n):
                nursery.start_soon(waiter)
            await queue_n(watches)
            rss = rss_bytes() - rss0
            nursery.cancel_scope.cancel()
        tracemalloc.start()
        _settle()
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
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


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
        done = 0
        all_done = trio.Event()

        async def waiter() -> None:
            nonlocal done
            async with zklock.Mutex(zk, lock_path):
                pass
            done += 1
            if done == n:
                all_done.set()

        _settle()
        rss0 = rss_bytes()
        watches = await trio.to_thread.run_sync(lock_watch_count, hosts, lock_path) + n - 1
        async with trio.open_nursery() as nursery:
            t = time.perf_counter()
            for _ in range(n):
                nursery.start_soon(waiter)
            await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
            queue_s = time.perf_counter() - t
            _settle()
            rss = rss_bytes() - rss0
            before = await trio.to_thread.run_sync(server_counters, hosts)
            cpu0, t = time.process_time(), time.perf_counter()
            await holder.release()
            with trio.fail_after(p.wait_bound()):
                await all_done.wait()
            drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
            after = await trio.to_thread.run_sync(server_counters, hosts)
        heap: float | None = None
        if n <= p.heap_max:
            await holder.acquire()
            done = 0
            all_done = trio.Event()
            tracemalloc.start()
            _settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            async with trio.open_nursery() as nursery:
                watches = await trio.to_thread.run_sync(lock_watch_count, hosts, lock_path) + n - 1
                for _ in range(n):
                    nursery.start_soon(waiter)
                await _queued(holder_zk, hosts, lock_path, n + 1, watches, p)
                _settle()
                heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
                nursery.cancel_scope.cancel()
            tracemalloc.stop()
            await holder.release()
    return {
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
    """Scale: ``arg`` sessions in one process (after a first one that takes the one-time costs): RSS
    growth per session, then one getData per session in turn (round-robin, one in flight): ops/s and
    process CPU per op."""
    n = p.arg
    async with zkwire.open_client(hosts) as first:
        await first.get_data(path)
        _settle()
        rss0 = rss_bytes()
        async with AsyncExitStack() as stack:
            t = time.perf_counter()
            clients = []
            limit = time.monotonic() + p.wait_bound()
            for _ in range(n):
                if time.monotonic() > limit:
                    raise TimeoutError("sessions did not open")
                clients.append(await stack.enter_async_context(zkwire.open_client(hosts)))
            open_s = time.perf_counter() - t
            await trio.sleep(0.3)
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
    return {
        "rss_kib": rss / n / 1024,
        "open_ms": open_s / n * 1e3,
        "ops_per_s": ops / elapsed,
        "cpu_us_per_op": cpu / ops * 1e6,
        "sessions": n,
    }


async def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call.

    ``sort=False``: the same contract as every peer's getChildren (the server's order); zkwire's default
    sorts, which for 100,000 names adds about 11 ms of client CPU per call."""
    node = children_path(path, p.arg)
    async with zkwire.open_client(hosts) as zk:
        deadline = time.perf_counter() + p.warm
        i = 0
        while i < p.calls and time.perf_counter() < deadline:
            await zk.get_children(node, sort=False)
            i += 1
        lat: list[float] = []
        count = 0
        cpu0 = time.process_time()
        deadline = time.perf_counter() + p.measure
        while len(lat) < p.calls and (len(lat) < 3 or time.perf_counter() < deadline):
            t = time.perf_counter()
            count = len(await zk.get_children(node, sort=False))
            lat.append(time.perf_counter() - t)
        cpu = time.process_time() - cpu0
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
