"""kazoo 2.11 (threading handler): its blocking API, ``get_async`` for pipelining, and kazoo's Lock.

kazoo's Lock blocks a thread per contender, so the lock metrics use one thread per worker / waiter.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections import deque
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

from . import (
    Countdown,
    Params,
    Result,
    children_path,
    cycle_ms,
    handoff_result,
    handoffs,
    herd_result,
    lock_watch_count,
    measure_counted,
    measure_listing,
    measure_round_robin,
    measure_sequential,
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


def _client(hosts: str, p: Params) -> KazooClient:
    kz = KazooClient(hosts=hosts, timeout=10.0)
    kz.start(timeout=p.timeout)
    return kz


def _close(kz: KazooClient) -> None:
    kz.stop()
    kz.close()


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return metric_function(globals(), metric)(hosts, path, p)


def _seq(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)
    try:
        return measure_sequential(lambda: kz.get(path), p)
    finally:
        _close(kz)


def _pipelined(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)

    def phase(seconds: float) -> tuple[int, float]:
        window: deque[Any] = deque()
        done = 0
        t = time.perf_counter()
        deadline = t + seconds
        while done < p.max_ops and time.perf_counter() < deadline:
            window.append(kz.get_async(path))
            if len(window) >= p.window:
                window.popleft().get(timeout=p.timeout)
                done += 1
        while window:
            window.popleft().get(timeout=p.timeout)
            done += 1
        return done, time.perf_counter() - t

    try:
        phase(p.warm)
        ops, elapsed = phase(p.measure)
    finally:
        _close(kz)
    return throughput(ops, elapsed)


def _create_delete(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)
    prefix = f"{path}/{unique('cd')}-"

    def create_delete() -> None:
        created = kz.create(prefix, ephemeral=True, sequence=True)
        kz.delete(created)

    try:
        ops, elapsed = measure_counted(create_delete, p, step=2)
    finally:
        _close(kz)
    return throughput(ops, elapsed)


def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)
    lock = kz.Lock(f"{path}/{unique('kazoo-cycle')}")

    def cycle() -> None:
        with lock:
            pass

    try:
        cycles, elapsed = measure_counted(cycle, p)
    finally:
        _close(kz)
    return cycle_ms(cycles, elapsed)


def _contended(hosts: str, path: str, p: Params) -> Result:
    clients = [_client(hosts, p) for _ in range(p.sessions)]
    lock_path = f"{path}/{unique('kazoo-contended')}"

    def phase(seconds: float) -> int:
        grants = [0]
        stop = time.monotonic() + seconds
        guard = threading.Lock()

        def worker(client: KazooClient) -> None:
            lock = client.Lock(lock_path)
            while time.monotonic() < stop and grants[0] < p.max_ops:
                with lock:
                    if time.monotonic() < stop:
                        with guard:
                            grants[0] += 1

        threads = [threading.Thread(target=worker, args=(clients[i % len(clients)],)) for i in range(p.workers)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(seconds + p.timeout)
        return grants[0]

    try:
        phase(p.warm)
        grants = phase(p.measure)
    finally:
        for kz in clients:
            _close(kz)
    return throughput(grants, p.measure, "grants")


class _Worker(threading.Thread):
    """Acquires and releases one lock on command (kazoo's Lock is used from one thread at a time)."""

    def __init__(self, lock: Lock) -> None:
        super().__init__(daemon=True)
        self.lock = lock
        self.commands: list[str] = []
        self.cv = threading.Condition()
        self.replies: list[float] = []

    def command(self, cmd: str) -> None:
        with self.cv:
            self.commands.append(cmd)
            self.cv.notify_all()

    def reply(self, timeout: float) -> float:
        with self.cv:
            if not self.cv.wait_for(lambda: self.replies, timeout):
                raise TimeoutError("worker did not answer")
            return self.replies.pop(0)

    def run(self) -> None:
        while True:
            with self.cv:
                self.cv.wait_for(lambda: self.commands)
                cmd = self.commands.pop(0)
            if cmd == "stop":
                return
            if cmd == "acquire":
                self.lock.acquire()
                t = time.perf_counter()
            else:
                t = time.perf_counter()
                self.lock.release()
            with self.cv:
                self.replies.append(t)
                self.cv.notify_all()


def _handoff(hosts: str, path: str, p: Params) -> Result:
    a, b = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-handoff')}"
    workers = [_Worker(a.Lock(lock_path)), _Worker(b.Lock(lock_path))]
    for w in workers:
        w.start()
    lat: list[float] = []
    try:
        workers[0].command("acquire")
        workers[0].reply(p.timeout)
        holder = 0
        for measured in handoffs(p):
            waiter = 1 - holder
            workers[waiter].command("acquire")
            _wait_until(lambda: len(a.get_children(lock_path)) >= 2, p.timeout, "waiter did not queue", 0.001)
            time.sleep(0.005)
            workers[holder].command("release")
            t0 = workers[holder].reply(p.timeout)
            t1 = workers[waiter].reply(p.timeout)
            if measured:
                lat.append(t1 - t0)
            holder = waiter
        workers[holder].command("release")
        workers[holder].reply(p.timeout)
    finally:
        for w in workers:
            w.command("stop")
        _close(a)
        _close(b)
    return handoff_result(lat)


def _herd(hosts: str, path: str, p: Params) -> Result:
    holder_kz, kz = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-herd')}"
    wakeups = [0]
    original = Lock._watch_predecessor

    def counting(self: Lock, event: Any) -> None:
        wakeups[0] += 1
        original(self, event)

    Lock._watch_predecessor = counting  # type: ignore[method-assign]
    holder = holder_kz.Lock(lock_path)
    holder.acquire()
    drained = Countdown(p.waiters, threading.Event(), threading.Lock())

    def waiter() -> None:
        with kz.Lock(lock_path):
            pass
        drained.done()

    threads = [threading.Thread(target=waiter, daemon=True) for _ in range(p.waiters)]
    try:
        watches = server_watch_count(hosts) + p.waiters - 1
        for th in threads:
            th.start()
        _wait_until(
            lambda: len(holder_kz.get_children(lock_path)) >= p.waiters + 1 and server_watch_count(hosts) >= watches,
            p.timeout,
            "waiters did not queue",
        )
        time.sleep(0.2)
        before = server_watch_triggers(hosts)
        wakeups[0] = 0
        t = time.perf_counter()
        holder.release()
        if not drained.event.wait(p.timeout):
            raise TimeoutError("the queue did not drain")
        drain = time.perf_counter() - t
        time.sleep(0.2)
        after = server_watch_triggers(hosts)
    finally:
        Lock._watch_predecessor = original  # type: ignore[method-assign]
        _close(kz)
        _close(holder_kz)
    return herd_result(before, after, wakeups[0], drain, p.waiters)


def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions
    first = _client(hosts, p)  # one-time costs go here

    def open_n() -> list[KazooClient]:
        clients = [_client(hosts, p) for _ in range(n)]
        time.sleep(0.3)
        settle()
        return clients

    try:
        settle()
        rss0 = rss_bytes()
        clients = open_n()
        rss = rss_bytes() - rss0
        for kz in clients:
            _close(kz)
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        clients = open_n()
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        for kz in clients:
            _close(kz)
    finally:
        _close(first)
    return memory_result(rss, heap, n)


def _mem_waiter(hosts: str, path: str, p: Params) -> Result:
    n = p.mem_waiters
    holder_kz, kz = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-mem')}"
    holder = holder_kz.Lock(lock_path)
    holder.acquire()
    locks: list[Lock] = []

    def queue(k: int) -> list[threading.Thread]:
        batch = [kz.Lock(lock_path) for _ in range(k)]
        locks.extend(batch)
        threads = [threading.Thread(target=_waiter_until_cancelled, args=(lk,), daemon=True) for lk in batch]
        watches = server_watch_count(hosts) + k - 1
        for th in threads:
            th.start()
        _wait_until(
            lambda: len(holder_kz.get_children(lock_path)) >= len(locks) + 1 and server_watch_count(hosts) >= watches,
            p.timeout,
            "waiters did not queue",
        )
        time.sleep(0.2)
        settle()
        return threads

    threads: list[threading.Thread] = []
    try:
        threads += queue(1)  # one-time costs
        settle()
        rss0 = rss_bytes()
        threads += queue(n)
        rss = rss_bytes() - rss0
        tracemalloc.start()
        settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        batch = queue(n)
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        _cancel_and_join(locks, threads + batch, p)
    finally:
        _close(kz)
        _close(holder_kz)
    return memory_result(rss, heap, n)


def _waiter_until_cancelled(lock: Lock) -> None:
    """A waiter's thread: acquires and releases ``lock``, or ends when the lock is cancelled."""
    try:
        lock.acquire()
        lock.release()
    except Exception:
        pass  # cancelled


def _cancel_and_join(locks: list[Lock], threads: list[threading.Thread], p: Params) -> None:
    """Cancel waiting locks, then wait (bounded) for their threads before the client is stopped.

    Each cancelled waiter sends a clean-up delete, and every kazoo request writes a byte to the client's
    wake-up socketpair, which its connection thread reads one per request sent.  Stopped at once, the
    client's close can be answered while hundreds of waiters are still sending: its connection thread
    then exits, nobody reads the socketpair again, and once it is full (about 280 unread bytes here)
    ``stop()`` and the waiters block on it for good (the 1,000-waiter child hung so in about half the
    rounds until its bound)."""
    for lk in locks:
        lk.cancel()
    limit = time.monotonic() + p.wait_bound()
    for th in threads:
        th.join(max(0.0, limit - time.monotonic()))


def _wait_until(done: Callable[[], bool], bound: float, what: str, interval: float = 0.01) -> None:
    """Poll ``done`` every ``interval`` seconds until it is true; ``TimeoutError(what)`` after ``bound``."""
    limit = time.monotonic() + bound
    while not done():
        if time.monotonic() > limit:
            raise TimeoutError(what)
        time.sleep(interval)


def _queued(holder_kz: KazooClient, hosts: str, lock_path: str, nodes: int, watches: int, p: Params) -> None:
    """Wait (bounded) until the server holds ``watches`` watches and the lock has ``nodes`` children."""
    _wait_until(
        lambda: lock_watch_count(hosts, lock_path) >= watches and len(holder_kz.get_children(lock_path)) >= nodes,
        p.wait_bound(),
        "waiters did not queue",
        0.02,
    )


def _waiters(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` waiters (one thread each: kazoo's Lock blocks) in one session behind a holder in
    another (see zkwire_peer._waiters)."""
    n = p.arg
    holder_kz, kz = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-scale')}"
    holder = holder_kz.Lock(lock_path)
    drained = Countdown(n, threading.Event(), threading.Lock())

    def waiter() -> None:
        with kz.Lock(lock_path):
            pass
        drained.done()

    heap: float | None = None
    try:
        holder.acquire()
        settle()
        rss0 = rss_bytes()
        watches = lock_watch_count(hosts, lock_path) + n - 1
        threads = [threading.Thread(target=waiter, daemon=True) for _ in range(n)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        _queued(holder_kz, hosts, lock_path, n + 1, watches, p)
        queue_s = time.perf_counter() - t
        settle()
        rss = rss_bytes() - rss0
        before = server_counters(hosts)
        cpu0, t = time.process_time(), time.perf_counter()
        holder.release()
        if not drained.event.wait(p.wait_bound()):
            raise TimeoutError("the queue did not drain")
        drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
        after = server_counters(hosts)
        if n <= p.heap_max:
            holder.acquire()
            locks = [kz.Lock(lock_path) for _ in range(n)]
            tracemalloc.start()
            settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            watches = lock_watch_count(hosts, lock_path) + n - 1
            threads = [threading.Thread(target=_waiter_until_cancelled, args=(lk,), daemon=True) for lk in locks]
            for th in threads:
                th.start()
            _queued(holder_kz, hosts, lock_path, n + 1, watches, p)
            settle()
            heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
            tracemalloc.stop()
            _cancel_and_join(locks, threads, p)
    finally:
        _close(kz)
        _close(holder_kz)
    return waiters_result(n, queue_s, drain, cpu, rss, heap, before, after)


def _sessions(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` sessions in one process (see zkwire_peer._sessions)."""
    n = p.arg
    first = _client(hosts, p)
    clients: list[KazooClient] = []
    try:
        first.get(path)
        settle()
        rss0 = rss_bytes()
        t = time.perf_counter()
        for _ in within(n, p.wait_bound(), "sessions did not open"):
            clients.append(_client(hosts, p))
        open_s = time.perf_counter() - t
        time.sleep(0.3)
        settle()
        rss = rss_bytes() - rss0
        loop = measure_round_robin(lambda i: clients[i].get(path), n, p)
    finally:
        for kz in clients:
            _close(kz)
        _close(first)
    return loop.result(rss, open_s)


def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call."""
    node = children_path(path, p.arg)
    kz = _client(hosts, p)
    try:
        return measure_listing(lambda: kz.get_children(node), node, p)
    finally:
        _close(kz)
