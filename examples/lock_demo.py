"""The zklock demo: worker processes contend for one lock with ``zklock run``, on an embedded ZooKeeper.

``python examples/lock_demo.py`` (what ``bash .ci/demo`` runs) starts a local ZooKeeper from the
installed Debian package (on a free port, or on ``--port``), starts a "victim" worker that takes the lock
and hangs, queues the other workers behind it, kills the victim with SIGKILL while it holds the lock (its
session is not closed: the lock is freed when the server expires the session), lets every worker run its
job under the lock, and shuts everything down.

Every line is stamped with the seconds since the victim was started.  A worker's line is stamped by its
job itself as the job starts, which is when its ``zklock run`` was granted the lock (``zklock run``
starts COMMAND once granted), and names the fencing token of that grant.  The expiry line gives the time
from the SIGKILL to the deletion of the victim's lock node by the server, seen through a watch on that
node: the server expires a session one session timeout after it last heard from the client (the victim's
last heartbeat, not the kill), at its next tick, so the interval can be shorter than the timeout.
"""

from __future__ import annotations

import argparse
import math
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
from zkwire.testing.embedded import EmbeddedZooKeeper, EmbeddedZooKeeperError

T = TypeVar("T")
LOCK = "/demo/lock"
TICK_TIME_MS = 200
# A worker's job, run by `zklock run` once it holds the lock: it stamps its own line as it starts (argv:
# name, the demo's start on the monotonic clock, which every process of the machine shares, and how long
# to hold the lock), writing straight to the demo's output.
JOB = (
    "import os, sys, time; "
    "stamp = time.monotonic() - float(sys.argv[2]); "
    'print(f\'{stamp:6.2f}s    {sys.argv[1]}: granted {os.environ["ZKLOCK_PATH"]}, '
    'fencing token {os.environ["ZKLOCK_FENCING_TOKEN"]}\', flush=True); time.sleep(float(sys.argv[3]))'
)


def _zklock_run(hosts: str, name: str, session_timeout: float, command: list[str]) -> list[str]:
    # --foreground keeps COMMAND in zklock run's process group, so killing that group takes both down.
    return [
        sys.executable, "-m", "zklock", "run", "--foreground", "--server", hosts, "--identifier", name,
        "--session-timeout", str(session_timeout), LOCK, "--", *command,
    ]  # fmt: skip


async def _worker(hosts: str, name: str, rounds: int, session_timeout: float, hold: float, started: float) -> None:
    for _ in range(rounds):
        job = [sys.executable, "-c", JOB, name, repr(started), repr(hold)]
        proc = await trio.run_process(_zklock_run(hosts, name, session_timeout, job), check=False)
        if proc.returncode != 0:
            print(f"{time.monotonic() - started:6.2f}s    {name}: zklock run exited {proc.returncode}", flush=True)


async def _until(read: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> None:
    """Poll ZooKeeper until ``done(await read())`` (the demo watches other processes' locks)."""
    while not done(await read()):  # noqa: ASYNC110
        await trio.sleep(0.02)


async def demo(workers: int, rounds: int, session_timeout: float, hold: float, port: int | None) -> None:
    print("Starting an embedded ZooKeeper (Debian's zookeeper package) ...", flush=True)
    with EmbeddedZooKeeper(tick_time_ms=TICK_TIME_MS, port=port) as server:
        hosts = server.hosts
        print(f"ZooKeeper is serving on {hosts}\n", flush=True)
        tick = TICK_TIME_MS / 1000
        async with zkwire.open_client(hosts) as zk:
            observer = Mutex(zk, LOCK)
            started = time.monotonic()
            print(f"  0.00s  victim: takes {LOCK} and hangs (zklock run -- sleep 600)", flush=True)
            victim = await trio.lowlevel.open_process(
                _zklock_run(hosts, "victim", session_timeout, ["sleep", "600"]),
                start_new_session=True,
                stdout=subprocess.DEVNULL,
            )
            try:
                with trio.fail_after(30):
                    await _until(lambda: observer.holder(), lambda holder: holder == "victim")
                (victim_node,) = await observer.contenders()
                print(f"{time.monotonic() - started:6.2f}s  victim holds the lock; {workers} workers queue", flush=True)
                async with trio.open_nursery() as nursery:
                    for i in range(workers):
                        nursery.start_soon(_worker, hosts, f"worker-{i + 1}", rounds, session_timeout, hold, started)
                    with trio.fail_after(30):
                        await _until(observer.contenders, lambda names: len(names) == workers + 1)
                    # Watched before the kill: the event is the moment the server deletes the node.
                    _, deleted = await zk.exists(f"{LOCK}/{victim_node}", watch=True)
                    os.killpg(victim.pid, signal.SIGKILL)
                    killed = time.monotonic()
                    print(
                        f"{killed - started:6.2f}s  SIGKILL to the victim while it holds the lock: no release, "
                        f"its session ({session_timeout:g}s timeout) must expire first",
                        flush=True,
                    )
                    with trio.fail_after(session_timeout * 5 + 10):
                        await deleted.wait()
                    gone = time.monotonic()
                    print(
                        f"{gone - started:6.2f}s  the server expired the victim's session and deleted its lock node "
                        f"{gone - killed:.2f}s after the SIGKILL\n"
                        f"         (the {session_timeout:g}s session timeout counts from the last time the server "
                        f"heard from the victim, a heartbeat at most {session_timeout / 3:.2f}s before the kill,\n"
                        f"         and ends at the server's next {tick:g}s tick: {session_timeout * 2 / 3:.2f}s to "
                        f"{session_timeout + tick:.2f}s after the kill)",
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


def _port(text: str) -> int:
    if not text.isdecimal() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port (1 to 65535): {text!r}")
    return int(text)


def _session_timeout(text: str) -> float:
    # The server grants session timeouts from 2 to 20 ticks; the demo's explanation needs the one asked for.
    low, high = 2 * TICK_TIME_MS / 1000, 20 * TICK_TIME_MS / 1000
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"not a number of seconds from {low:g} to {high:g}: {text!r}")
    return value


def _hold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"not a number of seconds from 0 to 60: {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/lock_demo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--session-timeout", type=_session_timeout, default=2.0, metavar="SECONDS")
    parser.add_argument("--hold", type=_hold, default=0.3, metavar="SECONDS", help="how long each job holds the lock")
    parser.add_argument("--port", type=_port, help="ZooKeeper's client port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    try:
        trio.run(demo, args.workers, args.rounds, args.session_timeout, args.hold, args.port)
    except KeyboardInterrupt:
        return 130
    except EmbeddedZooKeeperError as e:  # no server: say why (a port in use, no Java...)
        print(f"demo failed: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a demo should explain, not dump a traceback
        print(f"demo failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
