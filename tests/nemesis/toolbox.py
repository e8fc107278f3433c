"""The toolbox nemesis: counters, locking queues, double barriers and partitioners under faults.

    .venv/bin/python -m tests.nemesis.toolbox --recipe all --duration 60 --seed 7

Each worker is a task with a :func:`zkwire.sessions` stream of its own, connected through a fault proxy
of its own to a server of the ensemble (a single server when none is given).  While the workers run,
the nemesis picks a worker at random every 0.2-1.2 s and cuts its connection, freezes it for less than
the session timeout (the session survives), freezes it for longer (the session expires on the server,
the stream opens the next one), or expires its session from another connection.  Then every fault is
undone and the workers finish; the checks:

* **counter** (:class:`zklock.SharedCount`): the final value is exactly the number of ``add`` calls that
  returned -- no update lost, none counted twice.
* **queue** (:class:`zklock.LockingQueue`): producers put items (priorities at random) while consumers
  take and consume them; once drained, every item put was consumed exactly once (``consume()`` returned
  True once), none is left, and each consumer took the items it consumed in priority order (aside: an
  item handed back to the queue after its consumer's session ended, and an item another consumer locked
  in a session that then ended, which was rightly passed over while that lock lasted).
* **barrier** (:class:`zklock.DoubleBarrier`): rounds of every worker entering and leaving; no worker got
  out of ``enter`` before the last one had called it, nor out of ``leave`` before the last one had
  called that (a worker whose session ended during the round has left: its rounds are not judged for
  leaving), and every call returned within the bound.
* **partitioner** (:class:`zklock.SetPartitioner`): the intervals during which workers owned each
  partition (from the assignment to the moment the worker was told it changed) never overlap; once the
  faults are over and the party stable, every partition has exactly one owner.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

_TESTS_DIR = str(Path(__file__).resolve().parents[1])
if _TESTS_DIR not in sys.path:  # the suite's helpers are imported from tests/ (pytest puts it on the path)
    sys.path.insert(0, _TESTS_DIR)

from helpers import faultproxy  # noqa: E402
from helpers.sessiontools import expire  # noqa: E402

import zklock  # noqa: E402
import zkwire  # noqa: E402
from zklock.status import lock_status  # noqa: E402

__all__ = ["ToolboxConfig", "ToolboxResult", "run_toolbox", "TOOLBOX_RECIPES"]

TOOLBOX_RECIPES = ("counter", "queue", "barrier", "partitioner")
PARTITIONS = 12


@dataclass
class ToolboxConfig:
    recipe: str = "counter"
    duration: float = 20.0
    workers: int = 4
    seed: int | None = None
    session_timeout: float = 3.0


@dataclass
class ToolboxResult:
    recipe: str
    seed: int
    ok: bool
    problems: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)


class Nemesis:
    """Faults on the workers' proxies and sessions, until stopped."""

    def __init__(self, proxies: list[Any], streams: list[zkwire.Sessions], hosts: str, rng: random.Random, t: float):
        self.proxies = proxies
        self.streams = streams
        self.hosts = hosts
        self.rng = rng
        self.t = t
        self.done: Counter[str] = Counter()

    async def run(self, until: float) -> None:
        while time.monotonic() < until:
            await trio.sleep(self.rng.uniform(0.2, 1.2))
            i = self.rng.randrange(len(self.proxies))
            proxy = self.proxies[i]
            kind = self.rng.choice(["sever", "sever", "short-freeze", "long-freeze", "expire"])
            if kind == "sever":
                await proxy.sever()
            elif kind == "short-freeze":
                proxy.freeze()
                await trio.sleep(self.rng.uniform(0.2, self.t * 0.5))
                proxy.thaw()
            elif kind == "long-freeze":
                proxy.freeze()
                await trio.sleep(self.t * 1.5)
                proxy.thaw()
            else:
                zk = self.streams[i].current
                if zk is None or zk.ended is not None:
                    continue
                with trio.move_on_after(5):
                    await expire(zk, self.hosts, wait=False)
            self.done[kind] += 1

    def heal(self) -> None:
        for proxy in self.proxies:
            proxy.thaw()


Worker = Callable[[int, zkwire.Sessions, trio.Event], Awaitable[None]]


async def _with_workers(
    cfg: ToolboxConfig,
    hosts: str,
    rng: random.Random,
    worker: Worker,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> dict[str, int]:
    """Run ``worker`` on each stream for ``duration`` seconds of faults, then (after ``settle``, run once
    the faults are undone) until it returns."""
    async with AsyncExitStack() as stack:
        proxies = [await stack.enter_async_context(faultproxy.open_fault_proxy(hosts)) for _ in range(cfg.workers)]
        streams = [
            await stack.enter_async_context(
                zkwire.sessions(p.hosts, session_timeout=cfg.session_timeout, follow_ensemble=False, max_delay=1.0)
            )
            for p in proxies
        ]
        nemesis = Nemesis(proxies, streams, hosts, rng, cfg.session_timeout)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for i, stream in enumerate(streams):
                nursery.start_soon(worker, i, stream, stop)
            try:
                await nemesis.run(time.monotonic() + cfg.duration)
            finally:
                nemesis.heal()
            try:
                if settle is not None:
                    await settle()
            finally:
                stop.set()
        return dict(nemesis.done)


# ------------------------------------------------------------------------------------------------ counter


async def _counter(cfg: ToolboxConfig, hosts: str, base: str, rng: random.Random, result: ToolboxResult) -> None:
    path = f"{base}/count"
    returned = [0] * cfg.workers
    failed: Counter[str] = Counter()

    async def worker(i: int, stream: zkwire.Sessions, stop: trio.Event) -> None:
        async with zklock.SharedCount(stream, path) as count:
            while not stop.is_set():
                try:
                    await count.add(1)
                except zkwire.ZKError as e:
                    failed[type(e).__name__] += 1  # raised before the write went out
                    await trio.sleep(0.05)
                    continue
                returned[i] += 1

    result.faults = await _with_workers(cfg, hosts, rng, worker)
    async with zkwire.open_client(hosts) as zk:
        await zk.sync(path)
        value = struct_int(await zk.get_data(path))
    total = sum(returned)
    result.figures = {"adds returned": total, "final value": value, "errors before a write": dict(failed)}
    if value != total:
        result.problems.append(f"counter is {value}, but {total} adds returned")


def struct_int(read: tuple[bytes, zkwire.Stat]) -> int:
    import struct

    return int(struct.unpack(">i", read[0])[0])


# ------------------------------------------------------------------------------------------------ queue


async def _queue(cfg: ToolboxConfig, hosts: str, base: str, rng: random.Random, result: ToolboxResult) -> None:
    """Producers put during the first half of the faults, consumers drain afterwards (still under
    faults), so that every item is there before any is taken and the order can be judged."""
    path = f"{base}/queue"
    put: dict[bytes, int] = {}
    consumed: Counter[bytes] = Counter()
    handed_back: Counter[bytes] = Counter()
    taken: dict[int, list[tuple[int, bytes, str]]] = defaultdict(list)
    left_locked: set[str] = set()  # items a consumer may have locked in a session that then ended
    producers = max(1, cfg.workers // 2)
    produce_until = time.monotonic() + cfg.duration / 2
    produced = trio.Event()
    producing = [producers]

    async def worker(i: int, stream: zkwire.Sessions, stop: trio.Event) -> None:
        queue = _WatchedQueue(stream, path, left_locked)
        async with queue:
            if i < producers:
                n = 0
                while time.monotonic() < produce_until:
                    item = f"w{i}-{n}".encode()
                    priority = rng.randrange(5)
                    try:
                        await queue.put(item, priority)
                    except zkwire.ZKError:
                        await trio.sleep(0.05)
                        continue
                    put[item] = priority
                    n += 1
                    await trio.sleep(0.01)
                producing[0] -= 1
                if producing[0] == 0:
                    produced.set()
                return
            await produced.wait()
            while True:
                with trio.move_on_after(3.0) as idle:
                    try:
                        item = await queue.get()
                    except zkwire.ZKError:
                        continue
                if idle.cancelled_caught:
                    if stop.is_set():
                        return  # drained, and the faults are over
                    continue
                name = queue.processing[0] if queue.processing else ""
                priority = int(name.split("-")[1]) if name else -1
                try:
                    ok = await queue.consume()
                except zkwire.ZKError:
                    ok = False
                if ok:
                    consumed[item] += 1
                    taken[i].append((priority, item, name))
                else:
                    handed_back[item] += 1  # the lock went with the session: another consumer takes it

    result.faults = await _with_workers(cfg, hosts, rng, worker)
    twice = [item for item, n in consumed.items() if n > 1]
    lost = [item for item in put if consumed[item] == 0]
    unknown = [item for item in consumed if item not in put]
    out_of_order = []
    excused = 0
    for i, seq in taken.items():
        # Every item was put before any was taken: an item must not come after one of a later priority
        # that the consumer took before it -- unless it was unavailable then: handed back (locked by a
        # consumer whose consume then failed), or locked in a session that then ended, and rightly passed
        # over while that lock lasted.  Such an item is still judged as an earlier one.
        highest: tuple[int, bytes] | None = None
        for p, item, name in seq:
            if highest is not None and p < highest[0]:
                if handed_back[item] or name in left_locked:
                    excused += 1
                else:
                    out_of_order.append(
                        f"consumer {i}: {item!r} (priority {p}) after {highest[1]!r} (priority {highest[0]})"
                    )
            if highest is None or p > highest[0]:
                highest = (p, item)
    async with zkwire.open_client(hosts) as zk:
        left = await zk.get_children(f"{path}/entries")
    result.figures = {
        "items put": len(put),
        "consumed": sum(consumed.values()),
        "handed back after a session ended": sum(handed_back.values()),
        "locked in a session that ended": len(left_locked),
        "taken out of order, excused": excused,
        "left in the queue": len(left),
    }
    if twice:
        result.problems.append(f"{len(twice)} items consumed twice, e.g. {twice[:3]}")
    if lost or left:
        result.problems.append(f"{len(lost)} items never consumed ({len(left)} left in the queue), e.g. {lost[:3]}")
    if unknown:
        result.problems.append(f"{len(unknown)} consumed items were never put, e.g. {unknown[:3]}")
    result.problems += out_of_order[:5]
    if not put:
        result.problems.append("no item was put")


class _WatchedQueue(zklock.LockingQueue):
    """A LockingQueue that notes each item whose lock it may have left behind: ``_lock`` failed with the
    session's end after its create may have reached the server.  Another consumer then finds the item
    locked and rightly takes a later one first, until the ended session's lock node goes.  Any error of
    the session counts: its end shows as SessionExpiredError, or as ClientClosedError from a client the
    stream has replaced; a NoNodeError (the directory missing) comes before any lock, and only makes
    the check a little less strict.  Not a Cancelled: ``_lock`` runs shielded."""

    def __init__(self, source: zkwire.Sessions, path: str, left_locked: set[str]) -> None:
        super().__init__(source, path)
        self._left_locked = left_locked

    async def _lock(self, zk: zkwire.Client, name: str) -> bytes | None:
        try:
            return await super()._lock(zk, name)
        except zkwire.ZKError:
            self._left_locked.add(name)
            raise


# ------------------------------------------------------------------------------------------------ barrier


async def _barrier(cfg: ToolboxConfig, hosts: str, base: str, rng: random.Random, result: ToolboxResult) -> None:
    bound = 6 * cfg.session_timeout + 10
    times: dict[int, dict[int, dict[str, float]]] = defaultdict(dict)
    ended_during: set[tuple[int, int]] = set()
    late: list[str] = []
    started = [0] * cfg.workers
    final: list[int] = []
    missed: list[tuple[int, int]] = []

    async def passed_without_us(
        i: int, r: int, stream: zkwire.Sessions, generation: int, enter: trio.CancelScope
    ) -> None:
        """The documented limit (zklock.barrier): worker ``i``'s session ended while it waited to enter
        round ``r``, and the others entered and left meanwhile; it can only go on to the next round."""
        while not (stream.generation != generation and all(started[j] > r for j in range(cfg.workers) if j != i)):
            await trio.sleep(0.1)
        missed.append((r, i))
        enter.cancel()

    async def worker(i: int, stream: zkwire.Sessions, stop: trio.Event) -> None:
        r = 0
        while True:
            if stop.is_set():
                if not final:
                    final.append(max(started))  # every worker finishes the newest round begun
                if r >= final[0]:
                    return
            r += 1
            started[i] = r
            barrier = zklock.DoubleBarrier(stream, f"{base}/round-{r}", cfg.workers, identifier=f"w{i}")
            mark = times[r].setdefault(i, {})
            generation = stream.generation
            mark["arrive"] = time.monotonic()
            with trio.move_on_after(bound) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(passed_without_us, i, r, stream, generation, nursery.cancel_scope)
                    await barrier.enter()
                    nursery.cancel_scope.cancel()
            if scope.cancelled_caught:
                late.append(f"round {r}: worker {i} waited {bound:.0f} s to enter")
                return
            if (r, i) in missed:
                continue
            mark["entered"] = time.monotonic()
            await trio.sleep(rng.uniform(0, 0.2))
            mark["leave"] = time.monotonic()
            with trio.move_on_after(bound) as scope:
                await barrier.leave()
            if scope.cancelled_caught:
                late.append(f"round {r}: worker {i} waited {bound:.0f} s to leave")
                return
            mark["left"] = time.monotonic()
            if stream.generation != generation:
                ended_during.add((r, i))

    result.faults = await _with_workers(cfg, hosts, rng, worker)
    judged = 0
    for r, marks in sorted(times.items()):
        if len(marks) < cfg.workers or not all("left" in m for m in marks.values()):
            continue  # the last round, cut short by the stop
        judged += 1
        last_arrival = max(m["arrive"] for m in marks.values())
        early = [i for i, m in marks.items() if m["entered"] < last_arrival]
        if early:
            late.append(f"round {r}: workers {early} entered before the last arrival")
        if not any((r, i) in ended_during for i in marks):
            last_leave = max(m["leave"] for m in marks.values())
            gone = [i for i, m in marks.items() if m["left"] < last_leave]
            if gone:
                late.append(f"round {r}: workers {gone} left before the last one started leaving")
    result.figures = {
        "rounds judged": judged,
        "rounds with a session end": len({r for r, _ in ended_during}),
        "rounds a member missed after its session ended": len(missed),
    }
    result.problems += late[:10]
    if judged == 0:
        result.problems.append("no complete round")


# ------------------------------------------------------------------------------------------------ partitioner


async def _partitioner(cfg: ToolboxConfig, hosts: str, base: str, rng: random.Random, result: ToolboxResult) -> None:
    path = f"{base}/partitioner"
    intervals: dict[object, list[tuple[float, float, int, bool]]] = defaultdict(list)
    assignments = [0] * cfg.workers

    async def worker(i: int, stream: zkwire.Sessions, stop: trio.Event) -> None:
        async with zklock.SetPartitioner(
            stream, path, range(PARTITIONS), identifier=f"w{i}", time_boundary=0.5, max_reaction_time=0.5
        ) as partitioner:
            async for assignment in partitioner:
                start = time.monotonic()
                assignments[i] += 1
                async with trio.open_nursery() as nursery:

                    async def stopper() -> None:
                        await stop.wait()
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(stopper)
                    await assignment.changed.wait()
                    nursery.cancel_scope.cancel()
                end = time.monotonic()
                for p in assignment.partitions:
                    intervals[p].append((start, end, i, assignment.lost))
                if stop.is_set():
                    return

    settled: list[str] = []

    async def settle() -> None:
        """Once the faults are over: every partition owned by exactly one worker (bounded)."""
        async with zkwire.open_client(hosts) as zk:
            with trio.move_on_after(30 + 6 * cfg.session_timeout):
                while True:
                    owners = [await lock_status(zk, f"{path}/locks/{p}") for p in range(PARTITIONS)]
                    if all(len(s.holders) == 1 for s in owners):
                        settled.append("ok")
                        return
                    await trio.sleep(0.2)

    result.faults = await _with_workers(cfg, hosts, rng, worker, settle)
    if not settled:
        result.problems.append("the partitions did not settle to one owner each after the faults")
    overlaps = []
    for p, spans in intervals.items():
        spans.sort()
        latest_end, latest_worker = float("-inf"), -1
        for start, end, w, _lost in spans:
            if w != latest_worker and start < latest_end:
                overlaps.append(f"partition {p}: workers {latest_worker} and {w} overlap by {latest_end - start:.3f} s")
            if end > latest_end:
                latest_end, latest_worker = end, w
    result.figures = {"assignments": sum(assignments), "partitions": PARTITIONS}
    result.problems += overlaps[:10]


RUNS = {"counter": _counter, "queue": _queue, "barrier": _barrier, "partitioner": _partitioner}


async def run_toolbox(cfg: ToolboxConfig, hosts: str) -> ToolboxResult:
    """One bounded run of ``cfg.recipe`` against the server(s) at ``hosts``."""
    seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    base = f"/nemesis-toolbox/{cfg.recipe}-{seed}-{random.SystemRandom().randrange(1 << 30):x}"
    result = ToolboxResult(cfg.recipe, seed, False)
    with trio.fail_after(cfg.duration + 30 * cfg.session_timeout + 120):
        await RUNS[cfg.recipe](cfg, hosts, base, rng, result)
    result.ok = not result.problems
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.nemesis.toolbox", description=__doc__.split("\n")[0])
    p.add_argument("--recipe", choices=[*TOOLBOX_RECIPES, "all"], default="all")
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--seed", type=int)
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    from zkwire.testing.embedded import EmbeddedZooKeeper

    recipes = list(TOOLBOX_RECIPES) if args.recipe == "all" else [args.recipe]
    results: list[ToolboxResult] = []
    with EmbeddedZooKeeper() as server:
        for n, recipe in enumerate(recipes):
            seed = None if args.seed is None else args.seed + n
            cfg = ToolboxConfig(recipe, args.duration, args.workers, seed)
            result = trio.run(run_toolbox, cfg, server.hosts)
            results.append(result)
            verdict = "ok" if result.ok else "FAILED"
            print(f"{recipe}: {verdict} (seed {result.seed}) {result.figures} faults {result.faults}")
            for problem in result.problems:
                print(f"  {problem}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1, default=str))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
