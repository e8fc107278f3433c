"""Profile zkwire's hot paths under cProfile: where the client's time goes per operation.

    .venv/bin/python bench/profile_zkwire.py [--scenario seq|pipelined|lock_cycle|all] [--ops N]
                                             [--top K] [--hosts H:P]

Starts a fresh local ZooKeeper (like bench/run.py) unless ``--hosts`` is given, warms up, then runs
``--ops`` operations of each scenario under cProfile and prints the top entries by own time (tottime)
with their share of the run, and the wall time per operation with and without the profiler.
``select.epoll.poll`` is the time spent waiting for the server (or for nothing to do).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import zklock  # noqa: E402
import zkwire  # noqa: E402


async def _scenario(name: str, zk: zkwire.Client, path: str) -> Callable[[int], Awaitable[None]]:
    if name == "seq":

        async def seq(n: int) -> None:
            for _ in range(n):
                await zk.get_data(path)

        return seq
    if name == "pipelined":

        async def pipelined(n: int) -> None:
            per = max(1, n // 128)

            async def worker() -> None:
                for _ in range(per):
                    await zk.get_data(path)

            async with trio.open_nursery() as nursery:
                for _ in range(128):
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
        short = filename.split("site-packages/")[-1].split("/work/main/")[-1]
        rows.append((tt, tt / total * 100 if total else 0.0, nc, f"{short}:{line}({func})"))
    rows.sort(reverse=True)
    return rows[:k]


async def profile(hosts: str, scenarios: list[str], ops: int, top: int) -> None:
    async with zkwire.open_client(hosts) as zk:
        path = f"/zkbench-profile-{int(time.time() * 1000)}"
        await zk.create(path, bytes(100))
        for name in scenarios:
            n = ops if name != "lock_cycle" else max(1, ops // 5)
            run = await _scenario(name, zk, path)
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
            print(f"\n## {name}: {n} ops, {plain * 1e6:.0f} µs/op ({profiled * 1e6:.0f} µs/op under cProfile)\n")
            print("| tottime s | share | calls | function |")
            print("|---:|---:|---:|---|")
            for tt, share, nc, where in _top(prof, top):
                print(f"| {tt:.3f} | {share:.1f}% | {nc} | `{where}` |")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scenario", default="all", choices=["seq", "pipelined", "lock_cycle", "all"])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--hosts")
    args = parser.parse_args()
    scenarios = ["seq", "pipelined", "lock_cycle"] if args.scenario == "all" else [args.scenario]
    if args.hosts:
        trio.run(profile, args.hosts, scenarios, args.ops, args.top)
        return 0
    from zkwire.embedded import EmbeddedZooKeeper

    with EmbeddedZooKeeper(tick_time_ms=2000, jvm_flags=["-XX:TieredStopAtLevel=4", "-Xms256m", "-Xmx1g"]) as server:
        trio.run(profile, server.hosts, scenarios, args.ops, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
