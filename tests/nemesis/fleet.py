"""The worker processes: start, signal, kill and restart them, stop them cleanly, and follow their
histories while they run (who holds, who waits, which session belongs to whom).

Each worker runs in its own process group (a Ctrl-C of the terminal reaches only the parent, which
then decides) and is told to stop by closing its stdin (which also happens when the parent dies).
:meth:`Fleet.kill_all` is the last resort in every exit path of the parent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from .history import ParentLog, Record, Tail
from .worker import WorkerConfig

__all__ = ["Fleet", "WorkerProc", "SessionInfo", "ContenderState"]

_PACKAGE = __package__ or "tests.nemesis"
#: The directory the package is imported from (``tests`` under pytest, the repository root otherwise).
_IMPORT_ROOT = Path(__file__).resolve().parents[len(_PACKAGE.split("."))]


@dataclass
class SessionInfo:
    session: int
    worker: int
    incarnation: int
    pid: int
    start: float
    end: float | None = None
    end_reason: str | None = None


@dataclass
class ContenderState:
    """What one contender of a worker is doing, as its history says."""

    state: str = "starting"
    since: float = 0.0
    node: str | None = None
    last_grant: float | None = None


#: A worker's state is the first of these that one of its contenders is in ("resting" only when all rest).
_STATE_ORDER = ("holding", "releasing", "waiting", "idle", "starting", "resting", "exited")


@dataclass
class WorkerProc:
    """One incarnation of a worker, and what its history says it is doing (summed up over its
    contenders: ``state`` is "holding" if one of them holds, and so on, see ``_STATE_ORDER``)."""

    worker: int
    incarnation: int
    process: trio.Process
    history: Path
    tail: Tail
    started: float
    state: str = "starting"  #: starting, idle, waiting, holding, exited
    state_since: float = 0.0
    session: int = 0
    node: str | None = None
    grants: int = 0
    last_grant: float | None = None
    stopped: bool = False  #: SIGSTOPped by the nemesis
    killed: bool = False
    exited: bool = False
    rc: int | None = None
    done: trio.Event = field(default_factory=trio.Event)
    contender_count: int = 1
    session_count: int = 1
    contenders: dict[int, ContenderState] = field(default_factory=dict)
    #: session slot -> its current session id (the worker's ``session`` is slot 0's)
    slot_sessions: dict[int, int] = field(default_factory=dict)
    #: session slot -> the server ("host:port") its connection is open to now (None: none)
    slot_servers: dict[int, str | None] = field(default_factory=dict)

    def contender(self, c: int) -> ContenderState:
        cs = self.contenders.get(c)
        if cs is None:
            cs = self.contenders[c] = ContenderState(since=self.started)
        return cs

    def owns_session(self, session: int) -> bool:
        """Is ``session`` one of the sessions this incarnation has now?"""
        return session != 0 and session in self.slot_sessions.values()

    def holds_node(self, name: str) -> bool:
        """Does one of its contenders hold the lock through the node named ``name``?"""
        return any(
            cs.state == "holding" and cs.node is not None and cs.node.endswith("/" + name)
            for cs in self.contenders.values()
        )

    def holding_servers(self) -> list[str]:
        """The servers the sessions of its holding contenders are connected to (as last recorded)."""
        slots = sorted({c % self.session_count for c, cs in self.contenders.items() if cs.state == "holding"})
        return [h for s in slots if (h := self.slot_servers.get(s))]

    def any_in(self, *states: str) -> bool:
        return any(cs.state in states for cs in self.contenders.values())

    def granted_all_since(self, t: float) -> bool:
        """Was every contender granted after ``t``?"""
        return all((self.contender(c).last_grant or 0) > t for c in range(self.contender_count))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return not self.exited


class Fleet:
    """``size`` workers (ids 0..size-1); ``make_config(worker, incarnation)`` describes each incarnation."""

    def __init__(
        self, run_dir: Path, log: ParentLog, size: int, make_config: Callable[[int, int, Path], WorkerConfig]
    ) -> None:
        self.run_dir = run_dir
        self.log = log
        self.size = size
        self.make_config = make_config
        self.current: dict[int, WorkerProc] = {}
        self.all: list[WorkerProc] = []
        self.sessions: dict[int, SessionInfo] = {}
        self.last_grant: float | None = None
        self.total_grants = 0
        self.waiting_since: float | None = None
        self.stopping = False
        #: Incarnations that exited on their own before the fleet was stopped (a harness failure).
        self.unexpected_exits: list[WorkerProc] = []
        self._nursery: trio.Nursery | None = None

    # ------------------------------------------------------------------ processes

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Owns the reaper tasks; start with ``nursery.start(fleet.run)``; cancel to leave."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._poll_loop)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self.kill_all()

    async def spawn(self, worker: int) -> WorkerProc:
        assert self._nursery is not None
        prev = self.current.get(worker)
        incarnation = 0 if prev is None else prev.incarnation + 1
        history = self.run_dir / f"w{worker:02d}-{incarnation:02d}.jsonl"
        cfg = self.make_config(worker, incarnation, history)
        out = (self.run_dir / f"w{worker:02d}-{incarnation:02d}.log").open("wb")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(_IMPORT_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", f"{_PACKAGE}.worker", cfg.to_json()],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        finally:
            out.close()
        wp = WorkerProc(worker, incarnation, process, history, Tail(history), time.monotonic())
        wp.state_since = wp.started
        wp.contender_count, wp.session_count = cfg.contenders, cfg.sessions
        self.current[worker] = wp
        self.all.append(wp)
        self.log.write("spawn", w=worker, inc=incarnation, pid=process.pid)
        self._nursery.start_soon(self._reap, wp)
        return wp

    async def _reap(self, wp: WorkerProc) -> None:
        rc = await wp.process.wait()
        wp.exited, wp.rc = True, rc
        self.poll()  # its last records
        if wp.state != "exited":
            wp.state, wp.state_since = "exited", time.monotonic()
        expected = wp.killed or self.stopping
        if not expected:
            self.unexpected_exits.append(wp)
        self.log.write("exit", w=wp.worker, inc=wp.incarnation, pid=wp.pid, rc=rc, expected=expected)
        wp.done.set()

    async def start_all(self) -> None:
        for w in range(self.size):
            await self.spawn(w)

    def _signal(self, wp: WorkerProc, sig: signal.Signals) -> bool:
        if wp.exited:
            return False
        try:
            os.kill(wp.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def extend_hold(self, wp: WorkerProc, until: float) -> bool:
        """Ask a worker to keep its current (or next) lease until ``until`` (time.monotonic())."""
        wp.history.with_suffix(".extend").write_text(f"{until!r}")
        return self._signal(wp, signal.SIGUSR1)

    def request_idle(self, wp: WorkerProc, until: float) -> bool:
        """Ask a worker to start no acquire before ``until`` (time.monotonic())."""
        wp.history.with_suffix(".idle").write_text(f"{until!r}")
        return self._signal(wp, signal.SIGUSR2)

    def sigstop(self, wp: WorkerProc) -> bool:
        self.log.write("sigstop", w=wp.worker, inc=wp.incarnation, pid=wp.pid, state=wp.state)
        ok = self._signal(wp, signal.SIGSTOP)
        wp.stopped = ok
        return ok

    def sigcont(self, wp: WorkerProc) -> bool:
        ok = self._signal(wp, signal.SIGCONT)
        wp.stopped = False
        self.log.write("sigcont", w=wp.worker, inc=wp.incarnation, pid=wp.pid)
        return ok

    async def kill(self, wp: WorkerProc) -> None:
        """SIGKILL one incarnation and wait until it is reaped."""
        self.log.write("kill", w=wp.worker, inc=wp.incarnation, pid=wp.pid, state=wp.state)
        wp.killed = True
        self._signal(wp, signal.SIGKILL)
        with trio.move_on_after(10):
            await wp.done.wait()

    async def stop_all(self, grace: float) -> list[WorkerProc]:
        """Ask every live worker to stop (stdin EOF) and wait; returns those that had to be killed."""
        self.stopping = True
        live = [wp for wp in self.current.values() if not wp.exited]
        for wp in live:
            if wp.stopped:
                self.sigcont(wp)
            if wp.process.stdin is not None:
                try:
                    await wp.process.stdin.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
        with trio.move_on_after(grace):
            for wp in live:
                await wp.done.wait()
        stragglers = [wp for wp in live if not wp.exited]
        for wp in stragglers:
            await self.kill(wp)
        return stragglers

    def kill_all(self) -> None:
        """Synchronous last resort: SIGCONT and SIGKILL every incarnation still running."""
        self.stopping = True
        for wp in self.all:
            if wp.process.returncode is None:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.kill(wp.pid, sig)
                    except ProcessLookupError:
                        break

    # ------------------------------------------------------------------ what the histories say

    async def _poll_loop(self) -> None:
        while True:
            self.poll()
            await trio.sleep(0.2)

    def poll(self) -> list[Record]:
        new: list[Record] = []
        for wp in self.all:
            if wp.state == "exited" and wp.exited:
                continue
            for r in wp.tail.poll():
                self._apply(wp, r)
                new.append(r)
        since = [
            cs.since
            for wp in self.current.values()
            if not wp.exited
            for cs in wp.contenders.values()
            if cs.state == "waiting"
        ]
        if since and self.waiting_since is None:
            self.waiting_since = min(since)
        elif not since:
            self.waiting_since = None
        return new

    def _apply(self, wp: WorkerProc, r: Record) -> None:
        ev, t = r["ev"], r["t"]
        if ev == "session":
            wp.slot_sessions[r.get("s", 0)] = r["sid"]
            self.sessions[r["sid"]] = SessionInfo(r["sid"], wp.worker, wp.incarnation, wp.pid, t)
        elif ev == "session_end":
            slot = r.get("s", 0)
            info = self.sessions.get(wp.slot_sessions.get(slot, 0))
            if info is not None:
                info.end, info.end_reason = t, r.get("reason")
            wp.slot_sessions.pop(slot, None)
            wp.slot_servers.pop(slot, None)
            for c in range(slot, wp.contender_count, wp.session_count):
                cs = wp.contender(c)
                cs.state, cs.since = "idle", t
        elif ev == "server":
            wp.slot_servers[r.get("s", 0)] = r.get("host")
        elif ev == "exit":
            for c in range(wp.contender_count):
                cs = wp.contender(c)
                cs.state, cs.since = "exited", t
        elif ev in ("attempt", "grant", "release", "lost", "body_error", "outcome", "acquire_fail", "idle"):
            self._apply_contender(wp, wp.contender(r.get("c", 0)), ev, t, r)
        wp.session = wp.slot_sessions.get(0, 0)
        self._sum_up(wp, t)

    def _apply_contender(self, wp: WorkerProc, cs: ContenderState, ev: str, t: float, r: Record) -> None:
        if ev == "attempt":
            cs.state, cs.since = "waiting", t
        elif ev == "grant":
            cs.state, cs.since, cs.node = "holding", t, r["node"]
            cs.last_grant = t
            wp.grants += 1
            wp.last_grant = t
            self.total_grants += 1
            self.last_grant = t if self.last_grant is None else max(self.last_grant, t)
        elif ev in ("release", "lost", "body_error") and cs.state == "holding":
            cs.state, cs.since = "releasing", t
        elif ev in ("outcome", "acquire_fail"):
            cs.state, cs.since, cs.node = "idle", t, None
        elif ev == "idle":
            cs.state, cs.since = "resting", t

    @staticmethod
    def _sum_up(wp: WorkerProc, t: float) -> None:
        states = {wp.contender(c).state for c in range(wp.contender_count)}
        state = next(s for s in _STATE_ORDER if s in states)
        if state != wp.state:
            wp.state, wp.state_since = state, t
        wp.node = next((cs.node for cs in wp.contenders.values() if cs.state == "holding"), None)

    def output_tail(self, wp: WorkerProc, lines: int = 15) -> str:
        path = wp.history.with_suffix(".log")
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def live(self) -> list[WorkerProc]:
        return [wp for wp in self.current.values() if not wp.exited]

    def in_state(self, *states: str) -> list[WorkerProc]:
        return [wp for wp in self.live() if wp.state in states and not wp.stopped]

    async def wait_for(self, states: tuple[str, ...], within: float) -> list[WorkerProc]:
        """Poll the histories closely until some running worker is in one of ``states`` (or ``within``
        passes): a worker seen holding this way is very likely still holding when it is hit."""
        with trio.move_on_after(within):
            while True:
                self.poll()
                found = self.in_state(*states)
                if found:
                    return found
                await trio.sleep(0.005)
        return []

    async def wait_for_worker(self, wp: WorkerProc, states: tuple[str, ...], within: float) -> bool:
        """Poll closely until ``wp`` is in one of ``states``; False if ``within`` passed first."""
        with trio.move_on_after(within):
            while True:
                self.poll()
                if wp.state in states:
                    return True
                if wp.exited:
                    return False
                await trio.sleep(0.005)
        return False

    def owner_of(self, session: int) -> SessionInfo | None:
        return self.sessions.get(session)

    def describe_session(self, session: int) -> str:
        info = self.sessions.get(session)
        if info is None:
            return f"0x{session:x} (no worker recorded this session)"
        wp = next((p for p in self.all if p.worker == info.worker and p.incarnation == info.incarnation), None)
        alive = wp is not None and not wp.exited
        current = info.end is None and wp is not None and wp.owns_session(session)
        doing = wp.state if wp is not None else "?"
        extra = f", holding {wp.node}" if wp is not None and wp.state == "holding" else ""
        return (
            f"0x{session:x} of worker {info.worker}.{info.incarnation} pid {info.pid} "
            f"({'alive' if alive else 'dead'}, session {'current' if current else 'ended: ' + str(info.end_reason)}, "
            f"{doing}{extra}{', SIGSTOPped' if wp is not None and wp.stopped else ''})"
        )
