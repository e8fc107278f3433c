"""One worker process: lock loops on zkwire sessions, recording everything it observes.

``python -m <package>.worker '<WorkerConfig as JSON>'`` (started by ``fleet.py``).  The worker:

- opens ``sessions`` sessions (default one) through its own fault proxies (one per ensemble member),
  or to the members directly while following the ensemble's configuration (``follow_ensemble``, the
  membership mode), and, when a session expires (expiry is final for a Client), opens a new client in
  its place (on the members the ensemble had last, when it follows them); it records the server each
  session is connected to whenever that changes;
- runs ``contenders`` lock contenders (default one; trio tasks, contender k on session k mod
  ``sessions``), so that the waiters of one process share one client on one lock path; each records
  with its own ``c`` and loops: acquire the recipe under test, record the grant, do a version-checked
  read-modify-write of the counter node (mutex, writers and semaphore holders; readers only read it,
  at the start and the end of their hold), hold for a random short time, release;
- records the loss of a lease the moment it observes it: a task waiting on ``lease.wait_lost()``, or
  the exception that ends the body, whichever comes first;
- keeps a persistent recursive watch on the run's directory (the lock queue and the counter), so that
  other workers' activity reaches it as server->client traffic, as in an application that watches
  shared state (``watch_path``); a one-way partition then still delivers frames to the client;
- stops when its stdin reaches EOF (the parent closes it, or dies), when it is re-parented, on SIGTERM,
  or after ``max_runtime``.  (No PR_SET_PDEATHSIG: trio forks from a worker thread, and the kernel
  would send the signal when that thread exits.)

Nothing here works around the library: the worker uses the public API as an application would.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import trio

import zklock
import zkwire
from zkwire.errors import BadVersionError, ConnectionLossError, NoNodeError, WatchOverflowError, ZKError

from .history import HistoryWriter

__all__ = ["WorkerConfig", "main"]

#: A counter write that failed with one of these was certainly not applied.
DEFINITE_WRITE_FAILURES = (BadVersionError, NoNodeError)


@dataclass
class WorkerConfig:
    worker: int
    incarnation: int
    hosts: str
    recipe: str  # mutex, rwlock, semaphore
    lock_path: str
    counter_path: str
    history: str
    parent_pid: int
    session_timeout: float = 4.0
    seed: int = 0
    max_leases: int = 2
    write_ratio: float = 0.3
    hold_min: float = 0.01
    hold_max: float = 0.1
    think_max: float = 0.05
    acquire_timeout: float = 60.0
    max_runtime: float = 900.0
    #: A persistent recursive watch on this path (the run's directory: the lock queue and the counter),
    #: so that other workers' activity reaches this worker as server->client traffic; "" for none.
    watch_path: str = ""
    #: Lock contenders (trio tasks) in this process, each with its own loop and history identity (``c``).
    contenders: int = 1
    #: zkwire sessions in this process; contender k uses session k mod ``sessions``.
    sessions: int = 1
    #: ``open_client``'s ``follow_ensemble``: off when ``hosts`` names fault proxies (following the
    #: configuration would replace them with the members' own addresses), on when it names the members.
    follow_ensemble: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        return cls(**json.loads(text))


class _Hold:
    def __init__(self, lease: zklock.Lease, cycle: int) -> None:
        self.lease = lease
        self.cycle = cycle
        self.lost_recorded = False
        self.watcher = trio.CancelScope()


class _Slot:
    """One of the worker's session slots: the session it has now (reopened after an expiry)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.session_id = 0


class Worker:
    def __init__(self, cfg: WorkerConfig) -> None:
        if cfg.contenders < 1 or not 1 <= cfg.sessions <= cfg.contenders:
            raise ValueError("need contenders >= 1 and 1 <= sessions <= contenders")
        self.cfg = cfg
        self.hist = HistoryWriter(Path(cfg.history), cfg.worker, cfg.incarnation)
        self.rng = random.Random(cfg.seed * 1_000_003 + cfg.worker * 101 + cfg.incarnation)
        self.stop = trio.Event()
        #: Acquire attempts of this process, all contenders together: (worker, incarnation, cycle) names one.
        self.cycle = 0
        self.identifier = f"nemesis-w{cfg.worker}-{os.getpid()}"
        self._wait_scopes: set[trio.CancelScope] = set()
        self._nursery: trio.Nursery | None = None
        self.extend_until = 0.0
        self.idle_until = 0.0
        self._extended = trio.Event()
        #: The hosts a new session is opened with: the configuration's, but once a session followed the
        #: ensemble, the members it saw last (an application that reopens a session after an expiry
        #: must not go back to a connect string whose members may all have been replaced since).
        self.hosts = cfg.hosts
        self._hosts_version = -1

    def _remember_members(self, zk: zkwire.Client) -> None:
        config = zk.ensemble
        if config is None or config.version <= self._hosts_version:
            return
        hosts = [str(m.client) for m in config.members if m.client is not None]
        if hosts:
            self.hosts, self._hosts_version = ",".join(hosts), config.version

    @property
    def _several(self) -> bool:
        return self.cfg.contenders > 1 or self.cfg.sessions > 1

    def _write(self, ev: str, contender: int, slot: _Slot, **fields: Any) -> None:
        """A contender's record: with ``c`` (its index) when the process runs several, and its slot's session."""
        if self._several:
            fields["c"] = contender
        self.hist.write(ev, sid=slot.session_id, **fields)

    def _write_slot(self, ev: str, slot: _Slot, **fields: Any) -> None:
        if self._several:
            fields["s"] = slot.index
        self.hist.write(ev, sid=slot.session_id, **fields)

    # ------------------------------------------------------------------ process life

    def request_stop(self) -> None:
        self.stop.set()
        for scope in self._wait_scopes:
            scope.cancel()  # a waiting acquire gives up; a hold runs to its end

    async def _watch_stdin(self) -> None:
        stream = trio.lowlevel.FdStream(os.dup(0))
        try:
            while await stream.receive_some(4096):
                pass
        except (trio.BrokenResourceError, OSError):
            pass
        self.request_stop()

    async def _watch_parent(self) -> None:
        # Stdin reaches EOF when the parent dies; this catches a parent that died while we were stopped.
        while os.getppid() == self.cfg.parent_pid:
            await trio.sleep(1.0)
        self.request_stop()

    async def _watch_signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2) as signals:
            async for signum in signals:
                if signum == signal.SIGUSR1:
                    self._extend_hold()
                elif signum == signal.SIGUSR2:
                    self._request_idle()
                else:
                    self.request_stop()

    def _request_idle(self) -> None:
        """SIGUSR2: start no acquire before the time.monotonic() in ``<history>.idle`` (an application
        that needs the lock only now and then; its session sees no reply meanwhile, only pings)."""
        try:
            until = float(Path(self.cfg.history).with_suffix(".idle").read_text())
        except (OSError, ValueError):
            return
        self.idle_until = max(self.idle_until, until)

    def _extend_hold(self) -> None:
        """SIGUSR1: hold the current (or next) leases until the time.monotonic() in ``<history>.extend``.

        The nemesis does this before a fault aimed at the holder, so that the fault finds it holding.
        """
        try:
            until = float(Path(self.cfg.history).with_suffix(".extend").read_text())
        except (OSError, ValueError):
            return
        self.extend_until = max(self.extend_until, until)
        self.hist.write("extend", until=until)
        self._extended.set()
        self._extended = trio.Event()

    async def _hold(self, seconds: float) -> None:
        """Hold for ``seconds``, or until the extension the nemesis asked for, whichever is later."""
        deadline = time.monotonic() + seconds
        while True:
            end = max(deadline, self.extend_until)
            if time.monotonic() >= end:
                return
            with trio.move_on_after(end - time.monotonic()):
                await self._extended.wait()

    async def run(self) -> None:
        self.hist.write(
            "start",
            recipe=self.cfg.recipe,
            hosts=self.cfg.hosts,
            contenders=self.cfg.contenders,
            sessions=self.cfg.sessions,
        )
        reason = "stopped"
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._watch_stdin)
            nursery.start_soon(self._watch_signals)
            nursery.start_soon(self._watch_parent)
            with trio.move_on_after(self.cfg.max_runtime) as runtime:
                async with trio.open_nursery() as slots:
                    for s in range(self.cfg.sessions):
                        slots.start_soon(self._slot_loop, _Slot(s))
            if runtime.cancelled_caught:
                reason = "max_runtime"
            nursery.cancel_scope.cancel()
        self.hist.write("exit", reason=reason)

    async def _slot_loop(self, slot: _Slot) -> None:
        while not self.stop.is_set():
            await self._one_session(slot)
            if not self.stop.is_set():
                with trio.move_on_after(0.1 + self.rng.uniform(0, 0.2)):
                    await self.stop.wait()

    # ------------------------------------------------------------------ one session

    def _contenders_of(self, slot: _Slot) -> list[int]:
        """Contender k uses session slot k mod the number of slots."""
        return [c for c in range(self.cfg.contenders) if c % self.cfg.sessions == slot.index]

    async def _one_session(self, slot: _Slot) -> None:
        cfg = self.cfg
        reason = "stopped"
        try:
            async with zkwire.open_client(
                self.hosts,
                session_timeout=cfg.session_timeout,
                wait_connected=False,
                follow_ensemble=cfg.follow_ensemble,
            ) as zk:
                with trio.move_on_after(3 * cfg.session_timeout) as connecting:
                    await zk.wait_connected()
                if connecting.cancelled_caught:
                    self._write_slot("session_end", slot, reason="connect timeout", connected=False)
                    return
                slot.session_id = zk.session_id
                self._write_slot("session", slot, timeout=zk.session_timeout)
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._watch_server, zk, slot)
                        if cfg.watch_path:
                            nursery.start_soon(self._watch_traffic, zk)
                        async with trio.open_nursery() as contenders:
                            for c in self._contenders_of(slot):
                                contenders.start_soon(self._lock_loop, zk, c, slot)
                        reason = "stopped" if self.stop.is_set() else f"session {zk.state.value}"
                        nursery.cancel_scope.cancel()
                finally:
                    self._remember_members(zk)
                    self._write_slot(
                        "session_end", slot, reason=reason, connected=zk.state.is_connected, state=zk.state.value
                    )
                    slot.session_id = 0
        except ZKError as e:  # the session could not be had (expired while connecting)
            if slot.session_id == 0:
                self._write_slot("session_end", slot, reason=f"connect failed: {type(e).__name__}", connected=False)
            slot.session_id = 0

    async def _watch_server(self, zk: zkwire.Client, slot: _Slot) -> None:
        """Record the server the session is connected to each time it changes (None: no connection);
        the nemesis aims at a holder's member with it, and the report counts the moves.  Also keeps
        the members the session follows, for the next session (see ``hosts``)."""
        last: str | None = ""
        while True:
            host = zk.connected_host
            now = None if host is None else str(host)
            if now != last:
                self._write_slot("server", slot, host=now)
                last = now
            self._remember_members(zk)
            await trio.sleep(0.02)

    async def _watch_traffic(self, zk: zkwire.Client) -> None:
        while not zk.state.is_terminal:
            try:
                async with zk.add_watch(self.cfg.watch_path, recursive=True) as events:
                    async for _ in events:
                        pass
            except WatchOverflowError:
                pass
            except ConnectionLossError:
                with trio.move_on_after(self.cfg.session_timeout):
                    await zk.wait_connected()
            except ZKError:
                return
            await trio.sleep(0.05)

    def _lock(
        self, zk: zkwire.Client, role: str
    ) -> zklock.Mutex | zklock.ReadLock | zklock.WriteLock | zklock.Semaphore:
        cfg, ident = self.cfg, self.identifier
        if cfg.recipe == "mutex":
            return zklock.Mutex(zk, cfg.lock_path, identifier=ident)
        if cfg.recipe == "semaphore":
            return zklock.Semaphore(zk, cfg.lock_path, cfg.max_leases, identifier=ident)
        rw = zklock.ReadWriteLock(zk, cfg.lock_path, identifier=ident)
        return rw.write_lock if role == "write" else rw.read_lock

    def _role(self) -> str:
        if self.cfg.recipe == "mutex":
            return "mutex"
        if self.cfg.recipe == "semaphore":
            return "lease"
        return "write" if self.rng.random() < self.cfg.write_ratio else "read"

    async def _lock_loop(self, zk: zkwire.Client, contender: int, slot: _Slot) -> None:
        """One contender's loop on its slot's session, until the session ends or the worker stops."""
        while not self.stop.is_set():
            if zk.state.is_terminal:
                return
            if time.monotonic() < self.idle_until:
                self._write("idle", contender, slot, until=self.idle_until)
                with trio.move_on_after(self.idle_until - time.monotonic()):
                    await self.stop.wait()
                continue
            role = self._role()
            await self._cycle(zk, self._lock(zk, role), role, contender, slot)
            await trio.sleep(self.rng.uniform(0, self.cfg.think_max))

    # ------------------------------------------------------------------ one acquire / hold

    def _record_lost(self, hold: _Hold, via: str, contender: int, slot: _Slot, exc: str | None = None) -> None:
        if hold.lost_recorded:
            return
        hold.lost_recorded = True
        self._write("lost", contender, slot, cycle=hold.cycle, reason=hold.lease.lost_reason, via=via, exc=exc)

    async def _watch_loss(self, hold: _Hold, contender: int, slot: _Slot) -> None:
        with hold.watcher:
            await hold.lease.wait_lost()
            self._record_lost(hold, "wait_lost", contender, slot)

    async def _cycle(self, zk: zkwire.Client, lock: Any, role: str, contender: int, slot: _Slot) -> None:
        self.cycle += 1
        c = self.cycle

        def write(ev: str, **fields: Any) -> None:
            self._write(ev, contender, slot, **fields)

        write("attempt", cycle=c, role=role)
        hold: _Hold | None = None
        wait_scope = trio.CancelScope(deadline=trio.current_time() + self.cfg.acquire_timeout)
        try:
            with wait_scope:
                self._wait_scopes.add(wait_scope)
                if self.stop.is_set():
                    wait_scope.cancel()
                async with lock as lease:
                    wait_scope.deadline = math.inf
                    self._wait_scopes.discard(wait_scope)
                    hold = _Hold(lease, c)
                    write("grant", cycle=c, role=role, token=lease.fencing_token, node=lease.node, lost=lease.lost)
                    assert self._nursery is not None
                    self._nursery.start_soon(self._watch_loss, hold, contender, slot)
                    try:
                        await self._body(zk, role, c, write)
                    except BaseException as e:
                        if lease.lost:
                            self._record_lost(hold, "exception", contender, slot, type(e).__name__)
                            write("body_exc", cycle=c, exc=type(e).__name__)
                        else:
                            write("body_error", cycle=c, exc=type(e).__name__)
                        raise
                    write("release", cycle=c)
            if hold is None:
                write("acquire_fail", cycle=c, exc="Stopped" if self.stop.is_set() else "AcquireTimeout")
            else:
                write("outcome", cycle=c, exc=None)
        except Exception as e:
            if hold is None:
                write("acquire_fail", cycle=c, exc=type(e).__name__, detail=str(e)[:200])
            else:
                write("outcome", cycle=c, exc=type(e).__name__)
        finally:
            self._wait_scopes.discard(wait_scope)
            if hold is not None:
                hold.watcher.cancel()

    async def _body(self, zk: zkwire.Client, role: str, c: int, write: Callable[..., None]) -> None:
        cfg = self.cfg
        hold_for = self.rng.uniform(cfg.hold_min, cfg.hold_max)
        if role == "read":
            data, stat = await zk.get_data(cfg.counter_path)
            write("read", cycle=c, value=int(data), version=stat.version, when="start")
            await self._hold(hold_for)
            data, stat = await zk.get_data(cfg.counter_path)
            write("read", cycle=c, value=int(data), version=stat.version, when="end")
            return
        t0 = time.monotonic()
        try:
            data, stat = await zk.get_data(cfg.counter_path)
        except BaseException as e:
            write("inc_fail", cycle=c, err=type(e).__name__, stage="read", indeterminate=False)
            raise
        value = int(data) + 1
        write("inc_write", cycle=c, expected_version=stat.version, value=value)
        try:
            new = await zk.set_data(cfg.counter_path, str(value).encode(), version=stat.version)
        except DEFINITE_WRITE_FAILURES as e:
            write(
                "inc_fail",
                cycle=c,
                err=type(e).__name__,
                stage="write",
                indeterminate=False,
                expected_version=stat.version,
                value=value,
            )
        except BaseException as e:
            write(
                "inc_fail",
                cycle=c,
                err=type(e).__name__,
                stage="write",
                indeterminate=True,
                expected_version=stat.version,
                value=value,
            )
            raise
        else:
            write("inc_ok", cycle=c, value=value, version=new.version, t0=t0)
        await self._hold(hold_for)


class _MonotonicFormatter(logging.Formatter):
    """Log lines stamped with time.monotonic(), the clock of the histories."""

    def format(self, record: logging.LogRecord) -> str:
        record.monotonic = time.monotonic()
        return super().format(record)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.nemesis.worker '<WorkerConfig JSON>'", file=sys.stderr)
        return 2
    cfg = WorkerConfig.from_json(args[0])
    if os.getppid() != cfg.parent_pid:
        return 3  # the parent is already gone
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the parent decides
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)  # until trio listens for them (see _watch_signals)
    # zklock's and zkwire's own account goes to the worker's .log file, beside its history.
    handler = logging.StreamHandler()
    handler.setFormatter(_MonotonicFormatter("%(monotonic).6f %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("zklock").setLevel(logging.INFO)
    logging.getLogger("zkwire").setLevel(logging.INFO)  # connections: which member, when, why they ended
    trio.run(Worker(cfg).run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
