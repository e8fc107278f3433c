"""The zklock demo: worker processes contend for one lock with ``zklock run``, on an embedded ZooKeeper.

``python examples/lock_demo.py`` (what ``bash .ci/demo`` runs) starts a local ZooKeeper from the
installed Debian package, starts a "victim" worker that takes the lock and hangs, queues the other
workers behind it, kills the victim with SIGKILL while it holds the lock (its session is not closed: the
lock is freed when the server expires the session), lets every worker run its job under the lock (each
grant printed with its fencing token), and shuts everything down.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

import zkwire
from zklock import Mutex
from zkwire.testing.embedded import EmbeddedZooKeeper

T = TypeVar("T")
LOCK = "/demo/lock"
JOB = (
    "import os, sys, time; "
    'print(f\'    {sys.argv[1]}: holding {os.environ["ZKLOCK_PATH"]}, '
    'fencing token {os.environ["ZKLOCK_FENCING_TOKEN"]}\', flush=True); time.sleep(0.3)'
)


def _zklock_run(hosts: str, name: str, session_timeout: float, command: list[str]) -> list[str]:
    # --foreground keeps COMMAND in zklock run's process group, so killing that group takes both down.
    return [
        sys.executable, "-m", "zklock", "run", "--foreground", "--server", hosts, "--identifier", name,
        "--session-timeout", str(session_timeout), LOCK, "--", *command,
    ]  # fmt: skip


async def _worker(hosts: str, name: str, rounds: int, session_timeout: float, started: float) -> None:
    for _ in range(rounds):
        proc = await trio.run_process(
            _zklock_run(hosts, name, session_timeout, [sys.executable, "-c", JOB, name]),
            check=False,
            capture_stdout=True,
        )
        for line in proc.stdout.decode().splitlines():
            print(f"{time.monotonic() - started:6.2f}s{line}", flush=True)
        if proc.returncode != 0:
            print(f"{time.monotonic() - started:6.2f}s  {name}: zklock run exited {proc.returncode}", flush=True)


async def _until(read: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> None:
    """Poll ZooKeeper until ``done(await read())`` (the demo watches other processes' locks)."""
    while not done(await read()):  # noqa: ASYNC110
        await trio.sleep(0.02)


async def demo(workers: int, rounds: int, session_timeout: float) -> None:
    print("Starting an embedded ZooKeeper (Debian's zookeeper package) ...", flush=True)
    with EmbeddedZooKeeper(tick_time_ms=200) as server:
        hosts = server.hosts
        print(f"ZooKeeper is serving on {hosts}\n", flush=True)
        started = time.monotonic()
        async with zkwire.open_client(hosts) as zk:
            observer = Mutex(zk, LOCK)
            print(f"  victim: takes {LOCK} and hangs (zklock run -- sleep 600)", flush=True)
            victim = await trio.lowlevel.open_process(
                _zklock_run(hosts, "victim", session_timeout, ["sleep", "600"]),
                start_new_session=True,
                stdout=subprocess.DEVNULL,
            )
            try:
                with trio.fail_after(30):
                    await _until(lambda: observer.holder(), lambda holder: holder == "victim")
                print(f"{time.monotonic() - started:6.2f}s  victim holds the lock; {workers} workers queue", flush=True)
                async with trio.open_nursery() as nursery:
                    for i in range(workers):
                        nursery.start_soon(_worker, hosts, f"worker-{i + 1}", rounds, session_timeout, started)
                    with trio.fail_after(30):
                        await _until(observer.contenders, lambda names: len(names) == workers + 1)
                    os.killpg(victim.pid, signal.SIGKILL)
                    killed = time.monotonic()
                    print(
                        f"{killed - started:6.2f}s  SIGKILL to the victim while it holds the lock: no release, "
                        f"its session ({session_timeout:g}s) must expire first",
                        flush=True,
                    )
                    with trio.fail_after(session_timeout * 5 + 10):
                        await _until(observer.holder, lambda holder: holder not in ("victim", None))
                    print(
                        f"{time.monotonic() - started:6.2f}s  the victim's session expired after "
                        f"{time.monotonic() - killed:.2f}s; the next worker got the lock",
                        flush=True,
                    )
            finally:
                if victim.returncode is None:
                    os.killpg(victim.pid, signal.SIGKILL)
                with trio.CancelScope(shield=True):
                    await victim.wait()
            remaining = await observer.contenders()
        print(f"\nAll {workers * rounds} jobs ran one at a time; lock nodes left: {len(remaining)}.", flush=True)
        print("Stopping ZooKeeper.", flush=True)
    print("Done.", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/lock_demo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--session-timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    try:
        trio.run(demo, args.workers, args.rounds, args.session_timeout)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a demo should explain, not dump a traceback
        print(f"demo failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
