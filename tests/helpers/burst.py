"""A burst of pipelined requests from one zkwire client, for live-capture tests and benches.

``tasks`` tasks share one session and send ``requests`` requests in all (getData mostly, with
getChildren and setData now and then) on a node of ``size`` bytes; with ``rate``, the requests are
paced to that many a second.  Run as a process so that its CPU is not the capturer's::

    python -m helpers.burst HOSTS PATH REQUESTS [--tasks N] [--rate R] [--size BYTES]

It prints one JSON line: requests sent by op, seconds taken.  Bounded: every request has a deadline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import trio

import zkwire
from zkwire.errors import NodeExistsError


async def burst(
    hosts: str, path: str, requests: int, *, tasks: int = 64, rate: float = 0.0, size: int = 64
) -> dict[str, object]:
    sent: Counter[str] = Counter()
    started = time.monotonic()
    async with zkwire.open_client(hosts) as zk:
        try:
            await zk.create(path, b"b" * size)
        except NodeExistsError:
            await zk.set_data(path, b"b" * size)
        sent["create"] += 1
        begin = trio.current_time()
        counter = iter(range(requests))

        async def worker() -> None:
            for n in counter:
                if rate:
                    await trio.sleep_until(begin + n / rate)
                with trio.fail_after(30):
                    if n % 50 == 1:
                        await zk.get_children(path)
                        sent["getChildren"] += 1
                    elif n % 50 == 2:
                        await zk.set_data(path, b"s" * size)
                        sent["setData"] += 1
                    else:
                        await zk.get_data(path)
                        sent["getData"] += 1

        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(worker)
        elapsed = trio.current_time() - begin
    return {"sent": dict(sent), "seconds": elapsed, "total_seconds": time.monotonic() - started}


def main() -> int:
    p = argparse.ArgumentParser(prog="burst")
    p.add_argument("hosts")
    p.add_argument("path")
    p.add_argument("requests", type=int)
    p.add_argument("--tasks", type=int, default=64)
    p.add_argument("--rate", type=float, default=0.0)
    p.add_argument("--size", type=int, default=64)
    a = p.parse_args()
    result = trio.run(lambda: burst(a.hosts, a.path, a.requests, tasks=a.tasks, rate=a.rate, size=a.size))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
