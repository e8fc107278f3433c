"""The coordination toolbox beside kazoo and Curator, in one run on one embedded ZooKeeper.

Rows (each peer's runs alternate, ABBA, over ``--rounds`` rounds; medians):

* ``counter``: 4 workers (each its own session) add 1 to one counter ``--increments`` times each, by
  compare-and-set: increments/s.  zklock's ``SharedCount`` exact (witnessed, the default) and
  ``exact=False`` (one op, as the peers); kazoo's ``Counter`` (4 clients, 4 threads); Curator's
  ``SharedCount`` (4 clients, 4 threads, ``trySetCount`` loops).
* ``queue``: ``--items`` puts, then as many takes: items/s.  zklock's ``LockingQueue`` against kazoo's
  ``LockingQueue`` (take = lock + consume); zklock's ``Queue(naming="curator")`` against Curator's
  ``SimpleDistributedQueue`` (take = read + delete).
* ``membership``: 100 watchers of one party (one client); a member joins and leaves ``--changes`` times:
  milliseconds from the join until the last watcher has seen it.  zklock's ``watch_party`` against
  kazoo's ``ChildrenWatch``.
* ``discovery``: ``queryForInstances`` of a service with 10 instances, median milliseconds.  zklock's
  ``query_for_instances`` against Curator's.

    .venv/bin/python bench/toolbox.py [--rounds 2] [--increments 200] [--items 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

import zklock
import zkwire
from zkwire.testing.embedded import EmbeddedZooKeeper

SHARE = Path("/usr/share/java")
JARS = (
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "curator-x-discovery.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
    "jackson-databind.jar",
    "jackson-core.jar",
    "jackson-annotations.jar",
)
SOURCE = Path(__file__).resolve().parent / "java" / "ToolboxBench.java"
WORKERS = 4
WATCHERS = 100


def _path() -> str:
    return f"/bench-toolbox/{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------------------------------ the peers' sides


def kazoo_client(hosts: str) -> Any:
    from kazoo.client import KazooClient

    kz = KazooClient(hosts=hosts, timeout=10)
    kz.start(timeout=10)
    return kz


def kazoo_counter(hosts: str, increments: int) -> float:
    path = _path()
    clients = [kazoo_client(hosts) for _ in range(WORKERS)]
    counters = [kz.Counter(path) for kz in clients]
    counters[0].value  # noqa: B018 - creates the node before the clock starts
    start = time.perf_counter()
    threads = [threading.Thread(target=lambda c=c: [c.__add__(1) for _ in range(increments)]) for c in counters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    assert counters[0].value == WORKERS * increments
    for kz in clients:
        kz.stop()
        kz.close()
    return WORKERS * increments / elapsed


def kazoo_queue(hosts: str, items: int) -> float:
    kz = kazoo_client(hosts)
    queue = kz.LockingQueue(_path())
    start = time.perf_counter()
    for n in range(items):
        queue.put(f"item-{n}".encode())
    for _ in range(items):
        assert queue.get(5) is not None
        assert queue.consume()
    elapsed = time.perf_counter() - start
    kz.stop()
    kz.close()
    return items / elapsed


def kazoo_membership(hosts: str, changes: int) -> float:
    from kazoo.recipe.party import Party

    kz = kazoo_client(hosts)
    path = _path()
    kz.ensure_path(path)
    lock = threading.Lock()
    state = {"want": 0, "seen": 0, "done": threading.Event()}

    def watcher(children: list[str]) -> None:
        with lock:
            if len(children) == state["want"]:
                state["seen"] += 1  # type: ignore[operator]
                if state["seen"] == WATCHERS:
                    state["done"].set()  # type: ignore[union-attr]

    for _ in range(WATCHERS):
        kz.ChildrenWatch(path, watcher)
    times = []
    for n in range(changes):
        member = Party(kz, path, f"m{n}")
        with lock:
            state["want"], state["seen"], state["done"] = 1, 0, threading.Event()
        start = time.perf_counter()
        member.join()
        assert state["done"].wait(10)  # type: ignore[union-attr]
        times.append(time.perf_counter() - start)
        with lock:
            state["want"], state["seen"], state["done"] = 0, 0, threading.Event()
        member.leave()
        assert state["done"].wait(10)  # type: ignore[union-attr]
    kz.stop()
    kz.close()
    return statistics.median(times) * 1000


def java(classes: str, *args: object) -> float:
    out = subprocess.run(
        ["java", "-cp", classes, "ToolboxBench", *map(str, args)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return float(out.stdout.split()[-1])


# ------------------------------------------------------------------------------------------ zklock's side


async def zklock_counter(hosts: str, increments: int, exact: bool) -> float:
    path = _path()
    async with trio.open_nursery() as nursery:
        clients = []
        for _ in range(WORKERS):
            clients.append(await nursery.start(_hold_client, hosts))
        counters = [zklock.SharedCount(zk, path, exact=exact) for zk in clients]
        await counters[0].get()
        start = time.perf_counter()

        async def work(counter: zklock.SharedCount) -> None:
            for _ in range(increments):
                await counter.add(1)

        async with trio.open_nursery() as workers:
            for counter in counters:
                workers.start_soon(work, counter)
        elapsed = time.perf_counter() - start
        assert await counters[0].get() == WORKERS * increments
        for counter in counters:
            await counter.aclose()
        nursery.cancel_scope.cancel()
    return WORKERS * increments / elapsed


async def _hold_client(hosts: str, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        task_status.started(zk)
        await trio.sleep_forever()


async def zklock_locking_queue(hosts: str, items: int) -> float:
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        queue = zklock.LockingQueue(zk, _path())
        start = time.perf_counter()
        for n in range(items):
            await queue.put(f"item-{n}".encode())
        for _ in range(items):
            await queue.get()
            assert await queue.consume()
        elapsed = time.perf_counter() - start
        await queue.aclose()
    return items / elapsed


async def zklock_simple_queue(hosts: str, items: int) -> float:
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        queue = zklock.Queue(zk, _path(), naming="curator")
        start = time.perf_counter()
        for n in range(items):
            await queue.put(f"item-{n}".encode())
        for _ in range(items):
            assert await queue.get_nowait() is not None
        elapsed = time.perf_counter() - start
        await queue.aclose()
    return items / elapsed


async def zklock_membership(hosts: str, changes: int) -> float:
    path = _path()
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        await zk.ensure_path(path)
        want = trio.Event()
        target = [0]
        seen = [0]
        done = [trio.Event()]

        async def watcher() -> None:
            async for members in zklock.watch_party(zk, path):
                if len(members) == target[0]:
                    seen[0] += 1
                    if seen[0] == WATCHERS:
                        done[0].set()

        times = []
        async with trio.open_nursery() as nursery:
            for _ in range(WATCHERS):
                nursery.start_soon(watcher)
            await trio.sleep(0.5)
            del want
            for n in range(changes):
                target[0], seen[0], done[0] = 1, 0, trio.Event()
                start = time.perf_counter()
                async with zklock.Party(zk, path, f"m{n}"):
                    with trio.fail_after(10):
                        await done[0].wait()
                    times.append(time.perf_counter() - start)
                    target[0], seen[0], done[0] = 0, 0, trio.Event()
                with trio.fail_after(10):
                    await done[0].wait()
            nursery.cancel_scope.cancel()
    return statistics.median(times) * 1000


async def zklock_discovery(hosts: str, base: str, queries: int) -> float:
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        discovery = zklock.ServiceDiscovery(zk, base)
        for _ in range(50):
            await discovery.query_for_instances("api")
        times = []
        for _ in range(queries):
            start = time.perf_counter()
            found = await discovery.query_for_instances("api")
            times.append(time.perf_counter() - start)
        assert len(found) == 10
    return statistics.median(times) * 1000


async def register_instances(hosts: str, base: str) -> None:
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        for n in range(10):
            instance = zklock.ServiceInstance("api", id=f"i{n}", address="10.0.0.1", port=8000 + n, payload={"n": n})
            await zk.ensure_path(f"{base}/api/{instance.id}", data=instance.to_json())


# ------------------------------------------------------------------------------------------ the run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--increments", type=int, default=200, help="per worker")
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--changes", type=int, default=20)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    have_java = shutil.which("javac") is not None and (SHARE / "curator-x-discovery.jar").exists()
    classes = ""
    if have_java:
        out = tempfile.mkdtemp(prefix="toolbox-bench-")
        cp = ":".join(str(SHARE / j) for j in JARS)
        subprocess.run(["javac", "-nowarn", "-Xlint:none", "-d", out, "-cp", cp, str(SOURCE)], check=True)
        classes = f"{out}:{cp}:{SHARE}/*"
    rows: dict[str, dict[str, list[float]]] = {}

    def add(row: str, peer: str, value: float) -> None:
        rows.setdefault(row, {}).setdefault(peer, []).append(value)

    with EmbeddedZooKeeper() as server:
        hosts = server.hosts
        base = _path()
        trio.run(register_instances, hosts, base)
        runs: list[tuple[str, str, Callable[[], float]]] = [
            ("counter (increments/s)", "zklock exact", lambda: trio.run(zklock_counter, hosts, args.increments, True)),
            (
                "counter (increments/s)",
                "zklock exact=False",
                lambda: trio.run(zklock_counter, hosts, args.increments, False),
            ),
            ("counter (increments/s)", "kazoo", lambda: kazoo_counter(hosts, args.increments)),
            ("locking queue (items/s)", "zklock", lambda: trio.run(zklock_locking_queue, hosts, args.items)),
            ("locking queue (items/s)", "kazoo", lambda: kazoo_queue(hosts, args.items)),
            ("simple queue (items/s)", "zklock", lambda: trio.run(zklock_simple_queue, hosts, args.items)),
            ("membership, 100 watchers (ms)", "zklock", lambda: trio.run(zklock_membership, hosts, args.changes)),
            ("membership, 100 watchers (ms)", "kazoo", lambda: kazoo_membership(hosts, args.changes)),
            ("discovery query (ms)", "zklock", lambda: trio.run(zklock_discovery, hosts, base, args.queries)),
        ]
        if have_java:
            runs += [
                (
                    "counter (increments/s)",
                    "Curator",
                    lambda: (
                        WORKERS * args.increments / java(classes, "counter", hosts, _path(), WORKERS, args.increments)
                    ),
                ),
                (
                    "simple queue (items/s)",
                    "Curator",
                    lambda: args.items / java(classes, "squeue", hosts, _path(), args.items),
                ),
                (
                    "discovery query (ms)",
                    "Curator",
                    lambda: java(classes, "discovery", hosts, base, "api", args.queries),
                ),
            ]
        for r in range(args.rounds):
            for row, peer, fn in runs if r % 2 == 0 else list(reversed(runs)):
                value = fn()
                add(row, peer, value)
                print(f"round {r + 1}: {row:32} {peer:20} {value:10.1f}", flush=True)
    print()
    summary: dict[str, dict[str, float]] = {}
    for row, peers in rows.items():
        summary[row] = {peer: statistics.median(values) for peer, values in peers.items()}
        ours = summary[row].get("zklock exact", summary[row].get("zklock"))
        cells = []
        for peer, value in summary[row].items():
            ratio = "" if ours is None or peer.startswith("zklock") else f" (zklock/peer {ours / value:.2f})"
            cells.append(f"{peer} {value:.1f}{ratio}")
        print(f"{row:32} " + "; ".join(cells))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "medians": summary, "args": vars(args)}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
