"""kazoo 2.11 (threading handler): its blocking API, ``get_async`` for pipelining, and kazoo's Lock.

kazoo's Lock blocks a thread per contender, so the lock metrics use one thread per worker / waiter.
"""

from __future__ import annotations

import gc
import statistics
import threading
import time
import tracemalloc
from collections import deque
from typing import Any

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

from . import (
    Params,
    Result,
    children_path,
    lock_watch_count,
    measure_sequential,
    percentiles,
    rss_bytes,
    server_counters,
    server_watch_count,
    server_watch_triggers,
    unique,
)


def _client(hosts: str, p: Params) -> KazooClient:
    kz = KazooClient(hosts=hosts, timeout=10.0)
    kz.start(timeout=p.timeout)
    return kz


def _close(kz: KazooClient) -> None:
    kz.stop()
    kz.close()


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return _METRICS[metric](hosts, path, p)


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
    return {"ops_per_s": ops / elapsed, "ops": ops}


def _create_delete(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)
    prefix = f"{path}/{unique('cd')}-"

    def phase(seconds: float) -> tuple[int, float]:
        n = 0
        t = time.perf_counter()
        deadline = t + seconds
        while n < p.max_ops and time.perf_counter() < deadline:
            created = kz.create(prefix, ephemeral=True, sequence=True)
            kz.delete(created)
            n += 2
        return n, time.perf_counter() - t

    try:
        phase(p.warm)
        ops, elapsed = phase(p.measure)
    finally:
        _close(kz)
    return {"ops_per_s": ops / elapsed, "ops": ops}


def _lock_cycle(hosts: str, path: str, p: Params) -> Result:
    kz = _client(hosts, p)
    lock = kz.Lock(f"{path}/{unique('kazoo-cycle')}")

    def phase(seconds: float) -> tuple[int, float]:
        n = 0
        t = time.perf_counter()
        deadline = t + seconds
        while n < p.max_ops and time.perf_counter() < deadline:
            with lock:
                pass
            n += 1
        return n, time.perf_counter() - t

    try:
        phase(p.warm)
        cycles, elapsed = phase(p.measure)
    finally:
        _close(kz)
    return {"ms": elapsed / cycles * 1e3, "cycles": cycles}


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
    return {"grants_per_s": grants / p.measure, "grants": grants}


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
        total = p.handoffs + max(5, p.handoffs // 10)
        deadline = time.perf_counter() + p.timeout
        for k in range(total):
            if time.perf_counter() > deadline:
                break
            waiter = 1 - holder
            workers[waiter].command("acquire")
            limit = time.monotonic() + p.timeout
            while len(a.get_children(lock_path)) < 2:
                if time.monotonic() > limit:
                    raise TimeoutError("waiter did not queue")
                time.sleep(0.001)
            time.sleep(0.005)
            workers[holder].command("release")
            t0 = workers[holder].reply(p.timeout)
            t1 = workers[waiter].reply(p.timeout)
            if k >= total - p.handoffs:
                lat.append(t1 - t0)
            holder = waiter
        workers[holder].command("release")
        workers[holder].reply(p.timeout)
    finally:
        for w in workers:
            w.command("stop")
        _close(a)
        _close(b)
    pc = percentiles(lat, 1e3)
    return {"p50_ms": pc["p50"], "p99_ms": pc["p99"], "handoffs": len(lat)}


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
    done = [0]
    all_done = threading.Event()
    guard = threading.Lock()

    def waiter() -> None:
        with kz.Lock(lock_path):
            pass
        with guard:
            done[0] += 1
            if done[0] == p.waiters:
                all_done.set()

    threads = [threading.Thread(target=waiter, daemon=True) for _ in range(p.waiters)]
    try:
        watches = server_watch_count(hosts) + p.waiters - 1
        for th in threads:
            th.start()
        limit = time.monotonic() + p.timeout
        while len(holder_kz.get_children(lock_path)) < p.waiters + 1 or server_watch_count(hosts) < watches:
            if time.monotonic() > limit:
                raise TimeoutError("waiters did not queue")
            time.sleep(0.01)
        time.sleep(0.2)
        before = server_watch_triggers(hosts)
        wakeups[0] = 0
        t = time.perf_counter()
        holder.release()
        if not all_done.wait(p.timeout):
            raise TimeoutError("the queue did not drain")
        drain = time.perf_counter() - t
        time.sleep(0.2)
        after = server_watch_triggers(hosts)
    finally:
        Lock._watch_predecessor = original  # type: ignore[method-assign]
        _close(kz)
        _close(holder_kz)
    n = p.waiters
    return {
        "server_triggers_per_release": (after - before) / n,
        "wakeups_per_release": wakeups[0] / n,
        "drain_grants_per_s": n / drain,
        "waiters": n,
    }


def _settle() -> None:
    for _ in range(3):
        gc.collect()


def _mem_session(hosts: str, path: str, p: Params) -> Result:
    n = p.idle_sessions
    first = _client(hosts, p)  # one-time costs go here

    def open_n() -> list[KazooClient]:
        clients = [_client(hosts, p) for _ in range(n)]
        time.sleep(0.3)
        _settle()
        return clients

    try:
        _settle()
        rss0 = rss_bytes()
        clients = open_n()
        rss = rss_bytes() - rss0
        for kz in clients:
            _close(kz)
        tracemalloc.start()
        _settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        clients = open_n()
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        for kz in clients:
            _close(kz)
    finally:
        _close(first)
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


def _mem_waiter(hosts: str, path: str, p: Params) -> Result:
    n = p.mem_waiters
    holder_kz, kz = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-mem')}"
    holder = holder_kz.Lock(lock_path)
    holder.acquire()
    locks: list[Lock] = []

    def waiter(lock: Lock) -> None:
        try:
            lock.acquire()
            lock.release()
        except Exception:
            pass  # cancelled

    def queue(k: int) -> list[threading.Thread]:
        batch = [kz.Lock(lock_path) for _ in range(k)]
        locks.extend(batch)
        threads = [threading.Thread(target=waiter, args=(lk,), daemon=True) for lk in batch]
        watches = server_watch_count(hosts) + k - 1
        for th in threads:
            th.start()
        limit = time.monotonic() + p.timeout
        while len(holder_kz.get_children(lock_path)) < len(locks) + 1 or server_watch_count(hosts) < watches:
            if time.monotonic() > limit:
                raise TimeoutError("waiters did not queue")
            time.sleep(0.01)
        time.sleep(0.2)
        _settle()
        return threads

    threads: list[threading.Thread] = []
    try:
        threads += queue(1)  # one-time costs
        _settle()
        rss0 = rss_bytes()
        threads += queue(n)
        rss = rss_bytes() - rss0
        tracemalloc.start()
        _settle()
        heap0 = tracemalloc.get_traced_memory()[0]
        batch = queue(n)
        heap = tracemalloc.get_traced_memory()[0] - heap0
        tracemalloc.stop()
        _cancel_and_join(locks, threads + batch, p)
    finally:
        _close(kz)
        _close(holder_kz)
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


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


def _queued(holder_kz: KazooClient, hosts: str, lock_path: str, nodes: int, watches: int, p: Params) -> None:
    """Wait (bounded) until the server holds ``watches`` watches and the lock has ``nodes`` children."""
    limit = time.monotonic() + p.wait_bound()
    while lock_watch_count(hosts, lock_path) < watches or len(holder_kz.get_children(lock_path)) < nodes:
        if time.monotonic() > limit:
            raise TimeoutError("waiters did not queue")
        time.sleep(0.02)


def _waiters(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` waiters (one thread each: kazoo's Lock blocks) in one session behind a holder in
    another (see zkwire_peer._waiters)."""
    n = p.arg
    holder_kz, kz = _client(hosts, p), _client(hosts, p)
    lock_path = f"{path}/{unique('kazoo-scale')}"
    holder = holder_kz.Lock(lock_path)
    done = [0]
    all_done = threading.Event()
    guard = threading.Lock()

    def waiter() -> None:
        with kz.Lock(lock_path):
            pass
        with guard:
            done[0] += 1
            if done[0] == n:
                all_done.set()

    def cancellable(lock: Lock) -> None:
        try:
            lock.acquire()
            lock.release()
        except Exception:
            pass  # cancelled

    heap: float | None = None
    try:
        holder.acquire()
        _settle()
        rss0 = rss_bytes()
        watches = lock_watch_count(hosts, lock_path) + n - 1
        threads = [threading.Thread(target=waiter, daemon=True) for _ in range(n)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        _queued(holder_kz, hosts, lock_path, n + 1, watches, p)
        queue_s = time.perf_counter() - t
        _settle()
        rss = rss_bytes() - rss0
        before = server_counters(hosts)
        cpu0, t = time.process_time(), time.perf_counter()
        holder.release()
        if not all_done.wait(p.wait_bound()):
            raise TimeoutError("the queue did not drain")
        drain, cpu = time.perf_counter() - t, time.process_time() - cpu0
        after = server_counters(hosts)
        if n <= p.heap_max:
            holder.acquire()
            locks = [kz.Lock(lock_path) for _ in range(n)]
            tracemalloc.start()
            _settle()
            heap0 = tracemalloc.get_traced_memory()[0]
            watches = lock_watch_count(hosts, lock_path) + n - 1
            threads = [threading.Thread(target=cancellable, args=(lk,), daemon=True) for lk in locks]
            for th in threads:
                th.start()
            _queued(holder_kz, hosts, lock_path, n + 1, watches, p)
            _settle()
            heap = (tracemalloc.get_traced_memory()[0] - heap0) / n / 1024
            tracemalloc.stop()
            _cancel_and_join(locks, threads, p)
    finally:
        _close(kz)
        _close(holder_kz)
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


def _sessions(hosts: str, path: str, p: Params) -> Result:
    """Scale: ``arg`` sessions in one process (see zkwire_peer._sessions)."""
    n = p.arg
    first = _client(hosts, p)
    clients: list[KazooClient] = []
    try:
        first.get(path)
        _settle()
        rss0 = rss_bytes()
        t = time.perf_counter()
        limit = time.monotonic() + p.wait_bound()
        for _ in range(n):
            if time.monotonic() > limit:
                raise TimeoutError("sessions did not open")
            clients.append(_client(hosts, p))
        open_s = time.perf_counter() - t
        time.sleep(0.3)
        _settle()
        rss = rss_bytes() - rss0

        def phase(seconds: float) -> tuple[int, float, float]:
            i = 0
            cpu0, t = time.process_time(), time.perf_counter()
            deadline = t + seconds
            while i < p.max_ops and (i < n or time.perf_counter() < deadline):
                clients[i % n].get(path)
                i += 1
            return i, time.perf_counter() - t, time.process_time() - cpu0

        phase(p.warm)
        ops, elapsed, cpu = phase(p.measure)
    finally:
        for kz in clients:
            _close(kz)
        _close(first)
    return {
        "rss_kib": rss / n / 1024,
        "open_ms": open_s / n * 1e3,
        "ops_per_s": ops / elapsed,
        "cpu_us_per_op": cpu / ops * 1e6,
        "sessions": n,
    }


def _children(hosts: str, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children: wall time and process CPU per call."""
    node = children_path(path, p.arg)
    kz = _client(hosts, p)
    try:
        deadline = time.perf_counter() + p.warm
        i = 0
        while i < p.calls and time.perf_counter() < deadline:
            kz.get_children(node)
            i += 1
        lat: list[float] = []
        count = 0
        cpu0 = time.process_time()
        deadline = time.perf_counter() + p.measure
        while len(lat) < p.calls and (len(lat) < 3 or time.perf_counter() < deadline):
            t = time.perf_counter()
            count = len(kz.get_children(node))
            lat.append(time.perf_counter() - t)
        cpu = time.process_time() - cpu0
    finally:
        _close(kz)
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
