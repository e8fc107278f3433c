"""The documented patterns for living through faults, run as the docs print them, under those faults.

docs/sessions.rst and docs/watching.rst carry complete programs (a registration kept across expiry, a
lock competed for across disconnection and expiry, a node followed across expiry).  Each is taken from
the page (the block after its ``.. _pattern-...:`` label), its ``HOSTS``, ``SESSION_TIMEOUT`` and
``RUN_FOR`` set for the test, and run in a process of its own against a server of this module (tickTime
2 s, so that the server expires a session up to a tick after its timeout, as production servers do)
through the fault proxy.  The faults: a connection severed for a moment, every connection frozen until
the client gives the session up by itself (the server still holding it), the server paused past the
session timeout, the program itself paused past it.  Each test asserts what the page promises: the
registration exists again, owned by the program's current session; the lock is held again with a newer
fencing token; the follower reports a change made after the fault; and the program ends with exit 0
(no exception escaped).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import ModuleType

import pytest
import trio

import zkwire
from zkwire.testing.embedded import EmbeddedZooKeeper

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_zookeeper")]

ROOT = Path(__file__).resolve().parents[2]
SESSION_TIMEOUT = 4.0
PAUSE = 10.0  # a pause past the session timeout, as in the report the patterns were fixed for
#: How long after a fault ends the program must have re-established what it had.
RECOVERY = 12.0


def _pattern(page: str, label: str) -> str:
    """The code block after ``.. _<label>:`` on ``docs/<page>``."""
    lines = (ROOT / "docs" / page).read_text().splitlines()
    start = lines.index(f".. _{label}:")
    i = start + 1
    while lines[i].strip() != ".. code-block:: python":
        i += 1
    block: list[str] = []
    for line in lines[i + 1 :]:
        if line.strip() and not line.startswith(" "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip("\n") + "\n"


def _configure(code: str, hosts: str, run_for: float) -> str:
    for name, value in (("HOSTS", repr(hosts)), ("SESSION_TIMEOUT", repr(SESSION_TIMEOUT)), ("RUN_FOR", repr(run_for))):
        code, count = re.subn(rf"^{name} = .*$", f"{name} = {value}", code, count=1, flags=re.M)
        assert count == 1, f"the documented program has no {name} constant"
    return code


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedZooKeeper]:
    with EmbeddedZooKeeper(tick_time_ms=2000) as zk:
        yield zk


class Program:
    """A documented program in a process of its own; its output lines, as they come."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = trio.Event()

    async def _collect(self, stream: trio.abc.ReceiveStream, into: list[str]) -> None:
        pending = b""
        while chunk := await stream.receive_some():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            into.extend(line.decode(errors="replace") for line in lines)
            self._changed.set()
            self._changed = trio.Event()

    async def wait_for(self, what: str, predicate: Callable[[], bool], limit: float) -> None:
        with trio.move_on_after(limit):
            while not predicate():
                if self.process.returncode is not None:
                    break
                with trio.move_on_after(0.1):
                    await self._changed.wait()
            if predicate():
                return
        raise AssertionError(f"{what}: not within {limit} s\n{self.transcript()}")

    async def line(self, pattern: str, limit: float, *, after: int = 0) -> re.Match[str]:
        """The first stdout line from index ``after`` on that matches ``pattern``."""
        found: list[re.Match[str]] = []

        def seen() -> bool:
            found[:] = [m for line in self.stdout[after:] if (m := re.search(pattern, line))]
            return bool(found)

        await self.wait_for(f"a line matching {pattern!r}", seen, limit)
        return found[0]

    def transcript(self) -> str:
        return "stdout:\n" + "\n".join(self.stdout) + "\nstderr:\n" + "\n".join(self.stderr[-40:])

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)


@asynccontextmanager
async def run_pattern(page: str, label: str, hosts: str, run_for: float) -> AsyncIterator[Program]:
    """Run the documented program; after the block, wait for it to end and check it exited 0."""
    code = _configure(_pattern(page, label), hosts, run_for)
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert process.stdout is not None and process.stderr is not None
    program = Program(process)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(program._collect, process.stdout, program.stdout)
        nursery.start_soon(program._collect, process.stderr, program.stderr)
        try:
            yield program
            with trio.move_on_after(run_for + 30):
                await process.wait()
            assert process.returncode == 0, f"exit {process.returncode}\n{program.transcript()}"
        finally:
            if process.returncode is None:
                program.resume()
                process.kill()
                await process.wait()


async def _expire_by_client(programs: list[Program], proxy: object) -> None:
    """Freeze every connection until each program has declared its session expired by itself, then let
    the new connections through at once: the server still holds the old sessions (it expires a session
    up to a tick after its timeout), with their ephemeral nodes."""
    proxy.freeze()  # type: ignore[attr-defined]
    marks = [len(program.stderr) for program in programs]
    for program, mark in zip(programs, marks, strict=True):
        await program.wait_for(
            "the client gave its session up",
            lambda program=program, mark=mark: any("treating it as expired" in line for line in program.stderr[mark:]),
            SESSION_TIMEOUT * 3,
        )
    proxy.thaw(drop=True)  # type: ignore[attr-defined]
    await proxy.sever()  # type: ignore[attr-defined]


async def _inflict(fault: str, programs: list[Program], proxy: object, server: EmbeddedZooKeeper) -> None:
    if fault == "sever":
        await proxy.sever()  # type: ignore[attr-defined]
    elif fault == "client-gives-up":
        await _expire_by_client(programs, proxy)
    elif fault == "server-paused":
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            await trio.sleep(PAUSE)
        finally:
            os.kill(pid, signal.SIGCONT)
    else:
        for program in programs:
            program.pause()
        try:
            await trio.sleep(PAUSE)
        finally:
            for program in programs:
                program.resume()


#: Each fault, and how long the programs run with it (long enough to recover, then they end by themselves).
FAULTS = {"sever": 8.0, "client-gives-up": 18.0, "server-paused": 26.0, "program-paused": 26.0}

REGISTERED = r"registered by session (0x[0-9a-f]+)"
HOLDING = r"holding, fencing token (\d+)"


async def _owner(checker: zkwire.Client, path: str) -> int | None:
    stat = await zkwire.retry(checker.exists, path)
    return stat.ephemeral_owner if stat is not None else None


async def _lock_children(checker: zkwire.Client, path: str) -> list[tuple[str, int]]:
    try:
        children = await zkwire.retry(checker.get_children, path)
    except zkwire.NoNodeError:
        return []  # a container: the server removes it once empty
    owners = []
    for name in children:
        stat = await checker.exists(f"{path}/{name}")
        if stat is not None:
            owners.append((name, stat.ephemeral_owner))
    return owners


class Registration:
    """docs/sessions.rst, "Reopening after expiry": the ephemeral registration exists again after the
    fault, owned by the program's current session (the same one after a short disconnection)."""

    page, label = "sessions.rst", "pattern-registration"

    def __init__(self, checker: zkwire.Client, chroot: str) -> None:
        self.checker = checker
        self.node = f"{chroot}/workers/worker-1"

    async def established(self, program: Program) -> None:
        self.first = int((await program.line(REGISTERED, 20)).group(1), 16)
        assert await _owner(self.checker, self.node) == self.first

    async def recovered(self, program: Program, fault: str, mark: int) -> None:
        if fault == "sever":  # the session re-attaches, the node stays
            await trio.sleep(1)
            assert await _owner(self.checker, self.node) == self.first
            assert not [line for line in program.stdout[mark:] if re.search(REGISTERED, line)]
            return
        owner = int((await program.line(REGISTERED, RECOVERY, after=mark)).group(1), 16)
        assert owner != self.first
        assert await _owner(self.checker, self.node) == owner

    async def ended(self) -> None:
        assert await _owner(self.checker, self.node) is None  # the program closed its session


class LockHolder:
    """docs/sessions.rst, "Locks across disconnection and expiry": after the lease is lost (a short
    disconnection in the same session, or expiry), the program holds the lock again with a newer fencing
    token, and only its current session has a node under the lock path."""

    page, label = "sessions.rst", "pattern-lock"

    def __init__(self, checker: zkwire.Client, chroot: str) -> None:
        self.checker = checker
        self.lock = f"{chroot}/locks/report"

    async def established(self, program: Program) -> None:
        self.token = int((await program.line(HOLDING, 20)).group(1))

    async def recovered(self, program: Program, fault: str, mark: int) -> None:
        again = int((await program.line(HOLDING, RECOVERY, after=mark)).group(1))
        assert again > self.token
        assert any(line.startswith("lost:") for line in program.stdout[mark:])
        nodes = await _lock_children(self.checker, self.lock)
        assert len(nodes) == 1, nodes

    async def ended(self) -> None:
        assert await _lock_children(self.checker, self.lock) == []  # the program released it


class Follower:
    """docs/watching.rst, "Following a node across expiry": a change made after the fault is reported."""

    page, label = "watching.rst", "pattern-follow"

    def __init__(self, checker: zkwire.Client, chroot: str) -> None:
        self.checker = checker
        self.node = f"{chroot}/config/feature-x"

    async def established(self, program: Program) -> None:
        await program.line(r"^feature-x: v1$", 20)

    async def recovered(self, program: Program, fault: str, mark: int) -> None:
        mark = len(program.stdout)
        await zkwire.retry(self.checker.set_data, self.node, b"v2")
        await program.line(r"^feature-x: v2$", RECOVERY, after=mark)

    async def ended(self) -> None:
        pass


Pattern = Registration | LockHolder | Follower


async def _run_under(
    fault: str,
    kinds: list[type[Registration] | type[LockHolder] | type[Follower]],
    server: EmbeddedZooKeeper,
    faultproxy: ModuleType,
    zk_path: str,
) -> None:
    """Run each documented program (a chroot of its own) through one proxy, inflict ``fault`` on all of
    them at once, and check what each page promises; then that each ended with exit 0."""
    async with zkwire.open_client(server.hosts, session_timeout=30) as checker:
        patterns: list[Pattern] = []
        for i, kind in enumerate(kinds):
            chroot = f"{zk_path}/{i}"
            await checker.ensure_path(chroot)
            patterns.append(kind(checker, chroot))
        await checker.ensure_path(
            f"{zk_path}/{kinds.index(Follower)}/config/feature-x", data=b"v1"
        ) if Follower in kinds else None
        async with faultproxy.open_fault_proxy(server.hosts) as proxy, AsyncExitStack() as stack:
            programs = [
                await stack.enter_async_context(
                    run_pattern(p.page, p.label, f"{proxy.hosts}{zk_path}/{i}", FAULTS[fault])
                )
                for i, p in enumerate(patterns)
            ]
            for pattern, program in zip(patterns, programs, strict=True):
                await pattern.established(program)
            marks = [len(program.stdout) for program in programs]
            await _inflict(fault, programs, proxy, server)
            for pattern, program, mark in zip(patterns, programs, marks, strict=True):
                await pattern.recovered(program, fault, mark)
        for pattern in patterns:
            await pattern.ended()


@pytest.mark.parametrize("fault", ["sever", "server-paused", "program-paused"])
async def test_documented_patterns_live_through(
    fault: str, server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    await _run_under(fault, [Registration, LockHolder, Follower], server, faultproxy, zk_path)


async def test_registration_when_the_client_gives_its_session_up(
    server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    """The race of the report: the client declares its session expired while the server still holds it
    and its node; the next session's registration must not collide with it.  Alone, so that the
    connections are let through the moment the program gives up."""
    await _run_under("client-gives-up", [Registration], server, faultproxy, zk_path)


async def test_lock_and_follower_when_the_client_gives_its_session_up(
    server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    await _run_under("client-gives-up", [LockHolder, Follower], server, faultproxy, zk_path)
