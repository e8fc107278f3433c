"""Profile zkwire's hot paths under cProfile: where the client's time goes per operation.

    .venv/bin/python bench/profile_zkwire.py [--scenario seq|pipelined|lock_cycle|floor|memory|drain|children|all]
                                             [--ops N] [--top K] [--window W] [--waiters N] [--children N]
                                             [--hosts H:P]

Starts a fresh local ZooKeeper (like bench/run.py) unless ``--hosts`` is given, warms up, then runs
``--ops`` operations of each scenario under cProfile and prints the top entries by own time (tottime)
with their share of the run, and the wall time per operation with and without the profiler.
``select.epoll.poll`` is the time spent waiting for the server (or for nothing to do).

``floor`` profiles nothing: it times a sequential getData (p50, in one process, interleaved rounds)
with a blocking socket, with a single trio task that sends and reads itself, with a trio reader task
that wakes the caller through a ``trio.Event`` (zkwire's structure, without zkwire), and with zkwire:
the cost of the architecture apart from zkwire's own code.

``drain`` queues ``--waiters`` zklock waiters (default 1,000) in one session behind a holder in another
and profiles the queueing (every waiter's create + getChildren) and, apart, the drain (the holder
releases, each waiter releases as soon as it holds).  ``children`` creates ``--children`` children
(default 100,000) under one node and profiles getChildren of it in the server's order.  ``pipelined``
keeps ``--window`` requests in flight (default 128).  These three are not part of ``all``.

``memory`` profiles nothing either: the heap (tracemalloc) per idle session of bare trio structures
that hold one TCP connection (one task that waits on the socket with a deadline; two tasks, a reader
and a timer, each in a shielded scope) and of a zkwire session: what trio itself costs per session.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import socket
import struct
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import trio
import trio.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import zklock  # noqa: E402
import zkwire  # noqa: E402


async def _scenario(name: str, zk: zkwire.Client, path: str, window: int = 128) -> Callable[[int], Awaitable[None]]:
    if name == "seq":

        async def seq(n: int) -> None:
            for _ in range(n):
                await zk.get_data(path)

        return seq
    if name == "pipelined":

        async def pipelined(n: int) -> None:
            per = max(1, n // window)

            async def worker() -> None:
                for _ in range(per):
                    await zk.get_data(path)

            async with trio.open_nursery() as nursery:
                for _ in range(window):
                    nursery.start_soon(worker)

        return pipelined
    if name == "lock_cycle":
        mutex = zklock.Mutex(zk, f"{path}/profile-lock")

        async def lock_cycle(n: int) -> None:
            for _ in range(n):
                async with mutex:
                    pass

        return lock_cycle
    raise ValueError(name)


def _top(profile: cProfile.Profile, k: int) -> list[tuple[float, float, int, str]]:
    stats = pstats.Stats(profile)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        short = filename.split("site-packages/")[-1].removeprefix(str(HERE.parent) + "/")
        rows.append((tt, tt / total * 100 if total else 0.0, nc, f"{short}:{line}({func})"))
    rows.sort(reverse=True)
    return rows[:k]


_LEN = struct.Struct(">i")


def _frames(buf: bytearray) -> int:
    """Drop the complete frames at the head of ``buf``; return how many there were."""
    n = 0
    while len(buf) >= 4:
        size = _LEN.unpack_from(buf)[0]
        if len(buf) < 4 + size:
            break
        del buf[: 4 + size]
        n += 1
    return n


async def floor(hosts: str, path: str, ops: int, rounds: int = 5) -> None:
    """p50 of sequential getData: blocking socket, one trio task, reader task + Event, zkwire."""
    from zkwire.protocol.codec import encode_connect_request, encode_request
    from zkwire.protocol.records import ConnectRequest, GetDataRequest

    host, port = hosts.split(",")[0].rsplit(":", 1)
    hello = encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False))
    request = GetDataRequest(path, False)

    def blocking(n: int) -> list[float]:
        s = socket.create_connection((host, int(port)))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(hello)
        buf = bytearray()
        while not _frames(buf):
            buf += s.recv(65536)
        lat = []
        for i in range(n):
            t = time.perf_counter()
            s.sendall(encode_request(i + 1, 4, request))
            while not _frames(buf):
                buf += s.recv(65536)
            lat.append(time.perf_counter() - t)
        s.close()
        return lat

    async def connect() -> tuple[trio.SocketStream, bytearray]:
        stream = await trio.open_tcp_stream(host, int(port))
        stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await stream.send_all(hello)
        buf = bytearray()
        while not _frames(buf):
            buf += await stream.receive_some(65536)
        return stream, buf

    async def single_task(n: int) -> list[float]:
        stream, buf = await connect()
        sock = stream.socket
        lat = []
        for i in range(n):
            t = time.perf_counter()
            await sock.send(encode_request(i + 1, 4, request))
            while not _frames(buf):
                buf += await sock.recv(65536)
            lat.append(time.perf_counter() - t)
        await stream.aclose()
        return lat

    async def single_task_raw(n: int) -> list[float]:
        # The proposed fast path's floor: non-blocking send/recv on the raw socket, and
        # trio.lowlevel.wait_readable only when the reply is not there yet (no checkpoint per call).
        stream, buf = await connect()
        raw = stream.socket._sock  # type: ignore[attr-defined]
        lat = []
        for i in range(n):
            t = time.perf_counter()
            raw.send(encode_request(i + 1, 4, request))
            while not _frames(buf):
                try:
                    buf += raw.recv(65536)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(raw)
            lat.append(time.perf_counter() - t)
        await stream.aclose()
        return lat

    async def reader_task(n: int) -> list[float]:
        stream, buf = await connect()
        waiting: list[trio.Event] = []

        async def reader() -> None:
            nonlocal buf
            while True:
                buf += await stream.receive_some(65536)
                for _ in range(_frames(buf)):
                    waiting.pop(0).set()

        lat = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            for i in range(n):
                t = time.perf_counter()
                done = trio.Event()
                waiting.append(done)
                await stream.send_all(encode_request(i + 1, 4, request))
                await done.wait()
                lat.append(time.perf_counter() - t)
            nursery.cancel_scope.cancel()
        await stream.aclose()
        return lat

    async def with_zkwire(n: int) -> list[float]:
        lat = []
        async with zkwire.open_client(hosts) as zk:
            for _ in range(n):
                t = time.perf_counter()
                await zk.get_data(path)
                lat.append(time.perf_counter() - t)
        return lat

    async def run_blocking(n: int) -> list[float]:
        return blocking(n)

    ways = [
        ("blocking socket (the raw peer)", run_blocking),
        ("one trio task, trio socket API (send, recv)", single_task),
        ("one trio task, raw socket + wait_readable", single_task_raw),
        ("trio reader task wakes the caller (Event): zkwire's structure", reader_task),
        ("zkwire Client.get_data", with_zkwire),
    ]
    p50s: dict[str, list[float]] = {name: [] for name, _ in ways}
    cpus: dict[str, list[float]] = {name: [] for name, _ in ways}
    for _ in range(rounds):
        for name, way in ways:
            cpu = time.process_time()
            lat = await way(ops + ops // 4)
            cpus[name].append((time.process_time() - cpu) / len(lat) * 1e6)  # connecting included
            lat = sorted(lat[ops // 4 :])  # the first fifth is warm-up
            p50s[name].append(lat[len(lat) // 2] * 1e6)
    print(f"\n## floor: sequential getData p50, {ops} calls x {rounds} interleaved rounds\n")
    print("| client structure | p50 µs (median of rounds) | rounds | client CPU µs per call (median) | rounds |")
    print("|---|---:|---|---:|---|")
    for name, vals in p50s.items():
        cpu = cpus[name]
        print(
            f"| {name} | {sorted(vals)[len(vals) // 2]:.0f} | {', '.join(f'{v:.0f}' for v in vals)} "
            f"| {sorted(cpu)[len(cpu) // 2]:.0f} | {', '.join(f'{v:.0f}' for v in cpu)} |"
        )


async def memory(hosts: str, sessions: int = 200) -> None:
    # The bare structures connect to the server too (and send nothing; it keeps such a connection open
    # for a while), so that no accepting side is counted.
    host, port_text = hosts.split(",")[0].split("/")[0].rsplit(":", 1)
    port = int(port_text)

    @asynccontextmanager
    async def skeleton(tasks: int) -> AsyncIterator[None]:
        sock = trio.socket.socket()
        await sock.connect((host, port))
        wakeup = trio.Event()
        scopes = [trio.CancelScope(shield=True) for _ in range(tasks)]

        async def reader() -> None:
            with scopes[0]:
                while True:
                    with trio.move_on_after(3600):  # the reader also keeps time
                        await trio.lowlevel.wait_readable(sock)
                        if not await sock.recv(100):
                            return

        async def timer() -> None:
            with scopes[1]:
                while True:
                    with trio.move_on_after(3600):
                        await wakeup.wait()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            if tasks > 1:
                nursery.start_soon(timer)
            yield
            for scope in scopes:
                scope.cancel()
        sock.close()

    def per_session(kind: str) -> Callable[[AsyncExitStack], Awaitable[None]]:
        async def open_one(stack: AsyncExitStack) -> None:
            if kind == "zkwire":
                await stack.enter_async_context(zkwire.open_client(hosts))
            else:
                await stack.enter_async_context(skeleton(1 if kind == "one" else 2))

        return open_one

    labels = {
        "one": "one trio task waiting on a TCP socket (with a deadline)",
        "two": "two trio tasks (reader, timer), each in a shielded scope",
        "zkwire": "zkwire `open_client` session",
    }
    print(f"\n## memory: heap per idle session (tracemalloc, {sessions} sessions)\n")
    print("| structure | KiB per session |")
    print("|---|---:|")
    for kind, label in labels.items():
        open_one = per_session(kind)
        async with AsyncExitStack() as stack:
            await open_one(stack)  # one-time costs
            await trio.sleep(0.1)
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(sessions):
                await open_one(stack)
            await trio.sleep(0.2)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
        print(f"| {label} | {grown / sessions / 1024:.2f} |")


#: Bound on the drain scenario's waits (queueing, draining), in seconds.
WAIT = 120.0


def _print_top(title: str, prof: cProfile.Profile, top: int) -> None:
    print(f"\n## {title}\n")
    print("| tottime s | share | calls | function |")
    print("|---:|---:|---:|---|")
    for tt, share, nc, where in _top(prof, top):
        print(f"| {tt:.3f} | {share:.1f}% | {nc} | `{where}` |")


async def drain(hosts: str, path: str, waiters: int, top: int) -> None:
    """Profile the queueing of ``waiters`` zklock waiters in one session and, apart, their drain."""
    lock_path = f"{path}/drain-lock"
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
            if done == waiters:
                all_done.set()

        queue_prof, drain_prof = cProfile.Profile(), cProfile.Profile()
        async with trio.open_nursery() as nursery:
            t = time.perf_counter()
            queue_prof.enable()
            for _ in range(waiters):
                nursery.start_soon(waiter)
            with trio.fail_after(WAIT):
                # Every waiter has created its node and read the queue once all nodes are there and
                # the client has had no work for a while (its task queue is empty).
                while len(await holder_zk.get_children(lock_path)) < waiters + 1:
                    await trio.sleep(0.02)
                await trio.testing.wait_all_tasks_blocked(0.05)
            queue_prof.disable()
            queued = time.perf_counter() - t
            t = time.perf_counter()
            drain_prof.enable()
            await holder.release()
            with trio.fail_after(WAIT):
                await all_done.wait()
            drain_prof.disable()
            drained = time.perf_counter() - t
    _print_top(f"drain queueing: {waiters} waiters queued in {queued:.2f} s (under cProfile)", queue_prof, top)
    _print_top(
        f"drain: {waiters} grants in {drained:.2f} s, {waiters / drained:.0f} grants/s (under cProfile)",
        drain_prof,
        top,
    )


async def children(hosts: str, path: str, count: int, calls: int, top: int) -> None:
    """Profile getChildren of a node with ``count`` children (created here, 256 creates in flight), in
    the server's order (``sort=False``, the contract of every peer's getChildren and of the benchmark's
    row); one sorted call is timed beside it."""
    parent = f"{path}/children-{count}"
    async with zkwire.open_client(hosts) as zk:
        await zk.create(parent)
        width = max(5, len(str(count - 1)))
        names = iter(range(count))

        async def creator() -> None:
            for i in names:
                await zk.create(f"{parent}/{i:0{width}d}")

        t = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(256):
                nursery.start_soon(creator)
        created = time.perf_counter() - t
        await zk.get_children(parent, sort=False)  # warm-up
        t = time.perf_counter()
        for _ in range(calls):
            await zk.get_children(parent, sort=False)
        plain = (time.perf_counter() - t) / calls
        t = time.perf_counter()
        for _ in range(calls):
            await zk.get_children(parent)
        ordered = (time.perf_counter() - t) / calls
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            got = await zk.get_children(parent, sort=False)
        prof.disable()
        if len(got) != count:
            raise RuntimeError(f"{parent} has {len(got)} children, expected {count}")
    _print_top(
        f"children: getChildren of {count} children, {calls} calls, {plain * 1e3:.1f} ms/call in the server's "
        f"order, {ordered * 1e3:.1f} sorted (created in {created:.1f} s)",
        prof,
        top,
    )


async def profile(
    hosts: str, scenarios: list[str], ops: int, top: int, window: int = 128, waiters: int = 1000, count: int = 100_000
) -> None:
    async with zkwire.open_client(hosts) as zk:
        path = f"/zkbench-profile-{int(time.time() * 1000)}"
        await zk.create(path, bytes(100))
        for name in scenarios:
            if name == "floor":
                await floor(hosts, path, ops)
                continue
            if name == "memory":
                await memory(hosts)
                continue
            if name == "drain":
                await drain(hosts, path, waiters, top)
                continue
            if name == "children":
                await children(hosts, path, count, max(3, ops // 500), top)
                continue
            n = ops if name != "lock_cycle" else max(1, ops // 5)
            run = await _scenario(name, zk, path, window)
            await run(n // 2)  # warm-up
            t = time.perf_counter()
            await run(n)
            plain = (time.perf_counter() - t) / n
            prof = cProfile.Profile()
            t = time.perf_counter()
            prof.enable()
            await run(n)
            prof.disable()
            profiled = (time.perf_counter() - t) / n
            label = f"{name} ({window} in flight)" if name == "pipelined" else name
            _print_top(
                f"{label}: {n} ops, {plain * 1e6:.0f} µs/op ({profiled * 1e6:.0f} µs/op under cProfile)", prof, top
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--scenario",
        default="all",
        choices=["seq", "pipelined", "lock_cycle", "floor", "memory", "drain", "children", "all"],
    )
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--window", type=int, default=128, help="pipelined: requests in flight")
    parser.add_argument("--waiters", type=int, default=1000, help="drain: waiters on the lock")
    parser.add_argument("--children", type=int, default=100_000, help="children: children of the listed node")
    parser.add_argument("--hosts")
    args = parser.parse_args()
    scenarios = ["seq", "pipelined", "lock_cycle", "floor", "memory"] if args.scenario == "all" else [args.scenario]
    extra = (args.window, max(1, args.waiters), max(1, args.children))
    if args.hosts:
        trio.run(profile, args.hosts, scenarios, args.ops, args.top, *extra)
        return 0
    from zkwire.testing.embedded import EmbeddedZooKeeper

    with EmbeddedZooKeeper(tick_time_ms=2000, jvm_flags=["-XX:TieredStopAtLevel=4", "-Xms256m", "-Xmx1g"]) as server:
        trio.run(profile, server.hosts, scenarios, args.ops, args.top, *extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
