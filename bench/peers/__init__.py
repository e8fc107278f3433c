"""The Python peers of bench/run.py, one module per client, and what they share.

Each Python peer module has ``run(metric, hosts, path, params)``, which returns a dict of figures;
:data:`PEERS` says which metrics each peer supports.  ``bench/run.py`` calls it in a child process of its own (one per
metric, peer and round), so no peer sees another's imports, threads or heap.

``path`` names an existing node holding 100 bytes; everything a peer creates goes under it.  ``params``
holds the bounds of every loop (see :class:`Params`): each loop stops at a count and at a deadline,
whichever comes first.

The measurement loops are here, once, each for a blocking and an async peer alike (a peer passes the
call to measure, or drives the timer's iterators itself): :func:`measure_sequential` (the seq and payload
rows), :func:`measure_counted` (create+delete, the uncontended lock cycle), :func:`measure_listing`
(getChildren of many children), :func:`measure_round_robin` (one getData per session in turn), and
:func:`handoffs` (the handoff row's schedule).  A peer keeps only what is its own: opening its client,
running its tasks or threads, and its library's lock.
"""

from __future__ import annotations

import gc
import os
import re
import socket
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Sized
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from typing import Any

Result = dict[str, Any]

ALL_METRICS = frozenset(
    {"seq", "pipelined", "create_delete", "lock_cycle", "contended", "handoff", "herd", "mem_session", "mem_waiter"}
)
#: The scale metrics a peer implements itself (``Params.arg`` is the size); the depth and payload rows
#: of bench/run.py reuse ``pipelined`` and ``seq`` with another window or node.
SCALE_METRICS = frozenset({"waiters", "sessions", "children"})

#: Peer name -> (module under bench/peers, name in the table, metrics supported).
PEERS: dict[str, tuple[str, str, frozenset[str]]] = {
    "zkwire": ("zkwire_peer", "zkwire / zklock", ALL_METRICS | SCALE_METRICS),
    "raw": ("raw_peer", "raw socket", frozenset({"seq", "pipelined", "create_delete", "children"})),
    "trio": ("trio_peer", "one trio task (floor)", frozenset({"seq"})),
    "least": ("least_peer", "least work (one trio task)", frozenset({"seq"})),
    "kazoo": ("kazoo_peer", "kazoo 2.11", ALL_METRICS | SCALE_METRICS),
    "aiozk": ("aiozk_peer", "aiozk 0.32", ALL_METRICS | SCALE_METRICS),
    "java": ("java_peer", "Java client / Curator", ALL_METRICS | SCALE_METRICS),
}


@dataclass
class Params:
    """Bounds of one child run.  Durations in seconds."""

    warm: float = 1.0  # warm-up phase of every metric (same code path, not measured)
    jit_warm: float = 2.0  # the Java peer only: added to its warm-up phases, so its JIT reaches steady state
    measure: float = 2.0  # measured phase of the time-bounded metrics
    samples: int = 3000  # sequential getData: measured calls (also bounded by ``measure``)
    window: int = 128  # pipelined getData: requests in flight
    max_ops: int = 2_000_000  # cap on any counted loop
    workers: int = 4  # contended lock: workers ...
    sessions: int = 2  # ... over this many sessions
    handoffs: int = 100  # lock handoff: measured handoffs
    waiters: int = 100  # herd check: waiters on one lock, in one session
    idle_sessions: int = 20  # memory: sessions opened for the per-session figure
    mem_waiters: int = 100  # memory: waiting contenders for the per-waiter figure
    timeout: float = 30.0  # bound on any single wait (enqueueing, a drain, a connection)
    arg: int = 0  # scale metrics: waiters on the lock, sessions, or children of the listed node
    calls: int = 200  # scale getChildren: measured calls (also bounded by ``measure``, at least 3)
    heap_max: int = 2000  # scale waiters: heap (a second queue under tracemalloc) only up to this many

    def wait_bound(self) -> float:
        """Bound on a wait that grows with the size: ``timeout`` plus 10 ms per waiter or session."""
        return self.timeout + self.arg / 100

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Params:
        return cls(**d)


def percentiles(samples: list[float], scale: float) -> dict[str, float]:
    """p50 and p99 (nearest rank) of ``samples``, multiplied by ``scale``."""
    if not samples:
        return {"p50": float("nan"), "p99": float("nan")}
    s = sorted(samples)
    return {"p50": s[len(s) // 2] * scale, "p99": s[min(len(s) - 1, int(len(s) * 0.99))] * scale}


class SequentialTimer:
    """The seq metric's loop, for a blocking or an async peer alike: ``for _ in timer.warm_up(): call()``,
    then ``for _ in timer.samples(): call()`` (each pass between two steps is one timed call), then
    :meth:`result`."""

    def __init__(self, p: Params) -> None:
        self.p = p
        self.lat: list[float] = []
        self.cpu = self.elapsed = 0.0

    def warm_up(self) -> Iterator[None]:
        return iter(Phase(self.p.warm, self.p.max_ops))

    def samples(self) -> Iterator[None]:
        lat = self.lat
        cpu0, t0 = time.process_time(), time.perf_counter()
        deadline = t0 + self.p.measure
        while len(lat) < self.p.samples and time.perf_counter() < deadline:
            t = time.perf_counter()
            yield
            lat.append(time.perf_counter() - t)
        self.cpu, self.elapsed = time.process_time() - cpu0, time.perf_counter() - t0

    def result(self) -> Result:
        pc = percentiles(self.lat, 1e6)
        n = max(1, len(self.lat))
        return {
            "p50_us": pc["p50"],
            "p99_us": pc["p99"],
            "mean_us": self.elapsed / n * 1e6,
            "cpu_us_per_op": self.cpu / n * 1e6,
            "samples": len(self.lat),
        }


def measure_sequential(call: Callable[[], object], p: Params) -> Result:
    """The seq metric for a blocking ``call`` (one getData)."""
    timer = SequentialTimer(p)
    for _ in timer.warm_up():
        call()
    for _ in timer.samples():
        call()
    return timer.result()


async def measure_sequential_async(call: Callable[[], Awaitable[object]], p: Params) -> Result:
    """The seq metric for a coroutine function (trio or asyncio)."""
    timer = SequentialTimer(p)
    for _ in timer.warm_up():
        await call()
    for _ in timer.samples():
        await call()
    return timer.result()


class Phase:
    """One phase of a counted loop: ``for _ in phase: <one pass>`` runs until ``limit`` is counted (``step``
    per pass) or ``seconds`` have passed, whichever comes first; then :attr:`count` and :attr:`elapsed` hold
    what it did."""

    def __init__(self, seconds: float, limit: int, step: int = 1) -> None:
        self.seconds, self.limit, self.step = seconds, limit, step
        self.count = 0
        self.elapsed = 0.0

    def __iter__(self) -> Iterator[None]:
        self.count = 0
        t = time.perf_counter()
        deadline = t + self.seconds
        while self.count < self.limit and time.perf_counter() < deadline:
            yield
            self.count += self.step
        self.elapsed = time.perf_counter() - t


def counted_phases(p: Params, step: int = 1) -> tuple[Phase, Phase]:
    """The warm-up phase and the measured one of a loop bounded by ``max_ops``."""
    return Phase(p.warm, p.max_ops, step), Phase(p.measure, p.max_ops, step)


def measure_counted(call: Callable[[], object], p: Params, step: int = 1) -> tuple[int, float]:
    """``call`` in a loop for the warm-up phase, then for the measured one: (count, seconds) of the
    measured phase, each call counting ``step``."""
    for phase in counted_phases(p, step):
        for _ in phase:
            call()
    return phase.count, phase.elapsed


async def measure_counted_async(call: Callable[[], Awaitable[object]], p: Params, step: int = 1) -> tuple[int, float]:
    """:func:`measure_counted` for a coroutine function."""
    for phase in counted_phases(p, step):
        for _ in phase:
            await call()
    return phase.count, phase.elapsed


def throughput(count: int, elapsed: float, what: str = "ops") -> Result:
    """``{"<what>_per_s": count / elapsed, "<what>": count}``."""
    return {f"{what}_per_s": count / elapsed, what: count}


def cycle_ms(count: int, elapsed: float) -> Result:
    """Milliseconds per cycle, and the cycles."""
    return {"ms": elapsed / count * 1e3, "cycles": count}


class ListingTimer:
    """The scale getChildren loop (up to ``calls`` calls in each phase, at least 3 measured):
    ``for _ in timer.warm_up(): call()``, then ``for _ in timer.samples(): timer.count = len(call())``,
    then :meth:`result`."""

    def __init__(self, p: Params) -> None:
        self.p = p
        self.lat: list[float] = []
        self.count = 0
        self.cpu = 0.0

    def warm_up(self) -> Iterator[None]:
        return iter(Phase(self.p.warm, self.p.calls))

    def samples(self) -> Iterator[None]:
        lat = self.lat
        cpu0 = time.process_time()
        deadline = time.perf_counter() + self.p.measure
        while len(lat) < self.p.calls and (len(lat) < 3 or time.perf_counter() < deadline):
            t = time.perf_counter()
            yield
            lat.append(time.perf_counter() - t)
        self.cpu = time.process_time() - cpu0

    def result(self, node: str) -> Result:
        """The figures; a listing of the wrong length is an error."""
        if self.count != self.p.arg:
            raise RuntimeError(f"{node} has {self.count} children, expected {self.p.arg}")
        n = len(self.lat)
        return {"ms_per_call": statistics.median(self.lat) * 1e3, "cpu_ms_per_call": self.cpu / n * 1e3, "calls": n}


def measure_listing(call: Callable[[], Sized], node: str, p: Params) -> Result:
    """The scale getChildren row for a blocking ``call`` that lists ``node``."""
    timer = ListingTimer(p)
    for _ in timer.warm_up():
        call()
    for _ in timer.samples():
        timer.count = len(call())
    return timer.result(node)


async def measure_listing_async(call: Callable[[], Awaitable[Sized]], node: str, p: Params) -> Result:
    """:func:`measure_listing` for a coroutine function."""
    timer = ListingTimer(p)
    for _ in timer.warm_up():
        await call()
    for _ in timer.samples():
        timer.count = len(await call())
    return timer.result(node)


class RoundRobin:
    """One getData at a time on session 0, 1, ..., n-1, 0, ...: ``for i in phase: get(i)`` over
    :meth:`phases` (the warm-up, then the measured one; each at least one call per session), then
    :meth:`result`."""

    def __init__(self, n: int, p: Params) -> None:
        self.n, self.p = n, p
        self.ops = 0
        self.elapsed = self.cpu = 0.0

    def phases(self) -> Iterator[Iterator[int]]:
        yield self._phase(self.p.warm)
        yield self._phase(self.p.measure)

    def _phase(self, seconds: float) -> Iterator[int]:
        i = 0
        cpu0, t = time.process_time(), time.perf_counter()
        deadline = t + seconds
        while i < self.p.max_ops and (i < self.n or time.perf_counter() < deadline):
            yield i % self.n
            i += 1
        self.ops, self.elapsed, self.cpu = i, time.perf_counter() - t, time.process_time() - cpu0

    def result(self, rss: float, open_s: float) -> Result:
        """The scale sessions row: ``rss`` bytes and ``open_s`` seconds for opening the ``n`` sessions."""
        n = self.n
        return {
            "rss_kib": rss / n / 1024,
            "open_ms": open_s / n * 1e3,
            "ops_per_s": self.ops / self.elapsed,
            "cpu_us_per_op": self.cpu / self.ops * 1e6,
            "sessions": n,
        }


def measure_round_robin(get: Callable[[int], object], n: int, p: Params) -> RoundRobin:
    """``get(i)`` on session ``i`` in turn, warm-up then measured (see :class:`RoundRobin`)."""
    loop = RoundRobin(n, p)
    for phase in loop.phases():
        for i in phase:
            get(i)
    return loop


async def measure_round_robin_async(get: Callable[[int], Awaitable[object]], n: int, p: Params) -> RoundRobin:
    """:func:`measure_round_robin` for a coroutine function."""
    loop = RoundRobin(n, p)
    for phase in loop.phases():
        for i in phase:
            await get(i)
    return loop


def within(n: int, bound: float, what: str) -> Iterator[int]:
    """``range(n)``, raising ``TimeoutError(what)`` once ``bound`` seconds have passed."""
    limit = time.monotonic() + bound
    for i in range(n):
        if time.monotonic() > limit:
            raise TimeoutError(what)
        yield i


def handoffs(p: Params) -> Iterator[bool]:
    """The handoff row's schedule: one item per handoff, true for the measured ones (the last
    ``handoffs``; a few warm-up ones come first); stops early after ``timeout`` seconds."""
    total = p.handoffs + max(5, p.handoffs // 10)
    deadline = time.perf_counter() + p.timeout
    for k in range(total):
        if time.perf_counter() > deadline:
            return
        yield k >= total - p.handoffs


def handoff_result(lat: list[float]) -> Result:
    pc = percentiles(lat, 1e3)
    return {"p50_ms": pc["p50"], "p99_ms": pc["p99"], "handoffs": len(lat)}


class StopFlag:
    """A flag raised at a deadline by a timer task (trio or asyncio: ``after`` takes the library's
    ``sleep``): cheaper than reading the clock on every op."""

    def __init__(self) -> None:
        self.stop = False

    async def after(self, seconds: float, sleep: Callable[[float], Awaitable[object]]) -> None:
        await sleep(seconds)
        self.stop = True


class Countdown:
    """Counts the waiters of a drain as each lets the lock go; ``event`` (trio's, asyncio's or
    threading's) is set by the ``n``-th.  ``guard`` serialises threads (none needed for tasks)."""

    def __init__(self, n: int, event: Any, guard: AbstractContextManager[object] | None = None) -> None:
        self.n, self.event = n, event
        self.guard = guard if guard is not None else nullcontext()
        self.count = 0

    def done(self) -> None:
        with self.guard:
            self.count += 1
            if self.count == self.n:
                self.event.set()


def metric_function(namespace: dict[str, Any], metric: str) -> Any:
    """A peer module's function for ``metric``, named ``_<metric>`` in ``namespace`` (its ``globals()``);
    :data:`PEERS` says which metrics each peer has."""
    return namespace[f"_{metric}"]


def settle() -> None:
    """Collect garbage until it is gone, before reading a memory figure."""
    for _ in range(3):
        gc.collect()


def memory_result(rss: float, heap: float, n: int) -> Result:
    """Memory per session or per waiter: ``rss`` and ``heap`` bytes of growth for ``n`` of them."""
    return {"rss_kib": rss / n / 1024, "heap_kib": heap / n / 1024, "n": n}


def herd_result(before: int, after: int, wakeups: int, drain: float, n: int, relists: int | None = None) -> Result:
    """The herd row: server triggers and client wake-ups (and, when counted, re-listings of the queue)
    per release, over ``n`` waiters."""
    out: Result = {"server_triggers_per_release": (after - before) / n, "wakeups_per_release": wakeups / n}
    if relists is not None:
        out["relists_per_release"] = relists / n
    return {**out, "drain_grants_per_s": n / drain, "waiters": n}


def waiters_result(
    n: int, queue_s: float, drain: float, cpu: float, rss: float, heap: float | None, before: Result, after: Result
) -> Result:
    """The scale waiters row for ``n`` waiters: ``before`` and ``after`` are the :func:`server_counters`
    around the drain; ``heap`` is KiB per waiter already (None: not measured)."""
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


def rss_bytes() -> int:
    """Resident set size of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def four_letter_word(hosts: str, cmd: str, timeout: float = 5.0) -> str:
    host, port = hosts.split(",")[0].split("/")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(cmd.encode())
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


#: The server's per-event summaries of watchers triggered (mntr, ZooKeeper 3.6+).
WATCH_SUMS = (
    "zk_sum_node_created_watch_count",
    "zk_sum_node_deleted_watch_count",
    "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count",
)


def server_watch_triggers(hosts: str) -> int:
    """Watchers the server has triggered so far (all sessions), from ``mntr``."""
    total = 0
    for line in four_letter_word(hosts, "mntr").splitlines():
        key, _, value = line.partition("\t")
        if key in WATCH_SUMS:
            total += int(float(value))
    return total


def server_watch_count(hosts: str) -> int:
    """Watches the server holds now (all sessions), from ``mntr``'s ``zk_watch_count``.

    Waiting until it has grown by the number of queued waiters (each watches its own predecessor)
    means every waiter has read the queue and is parked: a waiter's reply to create + getChildren
    holds the whole queue, so before that point the client is still decoding O(N^2) names.
    """
    for line in four_letter_word(hosts, "mntr").splitlines():
        key, _, value = line.partition("\t")
        if key == "zk_watch_count":
            return int(float(value))
    raise RuntimeError("the server's mntr has no zk_watch_count")


def lock_watch_count(hosts: str, lock_path: str) -> int:
    """Watches the server holds on ``lock_path`` and the nodes under it (all sessions), from ``wchp``.

    Unlike ``zk_watch_count`` this does not move with other sessions' watches, such as those of an
    earlier child run whose session the server has not yet closed or expired."""
    count = 0
    inside = False
    prefix = lock_path.rstrip("/") + "/"
    for line in four_letter_word(hosts, "wchp", 30.0).splitlines():
        if not line.strip():
            continue
        if line[0] in " \t":
            count += inside
        else:
            inside = line == lock_path or line.startswith(prefix)
    return count


def server_counters(hosts: str) -> dict[str, int]:
    """What the server has sent so far: ``tcp_bytes_sent``, the bytes its established client
    connections have sent (``ss``'s ``bytes_sent``: replies, notifications and pings with their length
    prefixes, as written to the socket), and ``mntr``'s ``zk_packets_sent`` (replies and notifications).
    ``mntr``'s own ``zk_response_bytes`` leaves watch notifications out, hence ``ss``."""
    out = {"tcp_bytes_sent": server_tcp_bytes_sent(hosts), "zk_packets_sent": 0}
    for line in four_letter_word(hosts, "mntr").splitlines():
        key, _, value = line.partition("\t")
        if key == "zk_packets_sent":
            out[key] = int(float(value))
    return out


def server_tcp_bytes_sent(hosts: str) -> int:
    """Sum of ``bytes_sent`` over the server's established connections (``ss -ti``, Linux)."""
    port = hosts.split(",")[0].split("/")[0].rsplit(":", 1)[1]
    out = subprocess.run(
        ["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    return sum(int(n) for n in re.findall(r"bytes_sent:(\d+)", out))


def children_path(path: str, n: int) -> str:
    """The node with ``n`` children that bench/run.py sets up for the scale getChildren rows."""
    return f"{path}/children-{n}"


def payload_path(path: str, size: int) -> str:
    """The node with ``size`` bytes of data that bench/run.py sets up for the scale payload rows."""
    return f"{path}/payload-{size}"


def unique(prefix: str) -> str:
    """A node name no other child run uses."""
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 1_000_000_000}"
