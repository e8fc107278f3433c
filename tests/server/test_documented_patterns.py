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
from contextlib import asynccontextmanager
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


async def _expire_by_client(program: Program, proxy: object) -> None:
    """Freeze every connection until the program declares its session expired by itself, then let the
    new connections through at once: the server still holds the old session (it expires it up to a
    tick after the timeout), with its ephemeral nodes."""
    proxy.freeze()  # type: ignore[attr-defined]
    mark = len(program.stderr)
    await program.wait_for(
        "the client gave its session up",
        lambda: any("treating it as expired" in line for line in program.stderr[mark:]),
        SESSION_TIMEOUT * 3,
    )
    proxy.thaw(drop=True)  # type: ignore[attr-defined]
    await proxy.sever()  # type: ignore[attr-defined]


async def _pause_server(server: EmbeddedZooKeeper) -> None:
    pid = server.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        await trio.sleep(PAUSE)
    finally:
        os.kill(pid, signal.SIGCONT)


async def _pause_program(program: Program) -> None:
    program.pause()
    try:
        await trio.sleep(PAUSE)
    finally:
        program.resume()


#: Each fault, and how long the program runs with it (long enough to recover, then it ends by itself).
FAULTS = {"sever": 8.0, "client-gives-up": 18.0, "server-paused": 26.0, "program-paused": 26.0}


async def _inflict(fault: str, program: Program, proxy: object, server: EmbeddedZooKeeper) -> None:
    if fault == "sever":
        await proxy.sever()  # type: ignore[attr-defined]
    elif fault == "client-gives-up":
        await _expire_by_client(program, proxy)
    elif fault == "server-paused":
        await _pause_server(server)
    else:
        await _pause_program(program)


async def _owner(checker: zkwire.Client, path: str) -> int | None:
    stat = await zkwire.retry(checker.exists, path)
    return stat.ephemeral_owner if stat is not None else None


@pytest.mark.parametrize("fault", FAULTS)
async def test_registration_is_kept(
    fault: str, server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    """docs/sessions.rst, "Reopening after expiry": the ephemeral registration exists again after the
    fault, owned by the program's current session, and the program ends cleanly."""
    node = f"{zk_path}/workers/worker-1"
    async with zkwire.open_client(server.hosts, session_timeout=30) as checker:
        async with (
            faultproxy.open_fault_proxy(server.hosts) as proxy,
            run_pattern("sessions.rst", "pattern-registration", proxy.hosts + zk_path, FAULTS[fault]) as program,
        ):
            first = int((await program.line(r"registered by session (0x[0-9a-f]+)", 20)).group(1), 16)
            assert await _owner(checker, node) == first
            mark = len(program.stdout)
            await _inflict(fault, program, proxy, server)
            if fault == "sever":  # a short disconnection: the session re-attaches, the node stays
                await trio.sleep(1)
                assert await _owner(checker, node) == first
                assert program.stdout[mark:] == []
            else:
                found = await program.line(r"registered by session (0x[0-9a-f]+)", RECOVERY, after=mark)
                owner = int(found.group(1), 16)
                assert owner != first
                assert await _owner(checker, node) == owner
        assert await _owner(checker, node) is None  # the program ended (exit 0) and closed its session


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


@pytest.mark.parametrize("fault", FAULTS)
async def test_lock_is_competed_for_again(
    fault: str, server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    """docs/sessions.rst, "Locks across disconnection and expiry": after the lease is lost (a short
    disconnection in the same session, or expiry), the program holds the lock again with a newer
    fencing token, and only its current session has a node under the lock path."""
    lock = f"{zk_path}/locks/report"
    async with zkwire.open_client(server.hosts, session_timeout=30) as checker:
        await checker.ensure_path(zk_path)  # the chroot the program's HOSTS names
        async with (
            faultproxy.open_fault_proxy(server.hosts) as proxy,
            run_pattern("sessions.rst", "pattern-lock", proxy.hosts + zk_path, FAULTS[fault]) as program,
        ):
            token = int((await program.line(r"holding, fencing token (\d+)", 20)).group(1))
            mark = len(program.stdout)
            await _inflict(fault, program, proxy, server)
            again = int((await program.line(r"holding, fencing token (\d+)", RECOVERY, after=mark)).group(1))
            assert again > token
            assert any(line.startswith("lost:") for line in program.stdout[mark:])
            nodes = await _lock_children(checker, lock)
            assert len(nodes) == 1, nodes
        assert await _lock_children(checker, lock) == []  # the program ended (exit 0) and released it


@pytest.mark.parametrize("fault", FAULTS)
async def test_follower_reports_a_change_after_the_fault(
    fault: str, server: EmbeddedZooKeeper, faultproxy: ModuleType, zk_path: str
) -> None:
    """docs/watching.rst, "Following a node across expiry": a change made after the fault is reported."""
    node = f"{zk_path}/config/feature-x"
    async with zkwire.open_client(server.hosts, session_timeout=30) as writer:
        await writer.ensure_path(node, data=b"v1")
        async with (
            faultproxy.open_fault_proxy(server.hosts) as proxy,
            run_pattern("watching.rst", "pattern-follow", proxy.hosts + zk_path, FAULTS[fault]) as program,
        ):
            await program.line(r"^feature-x: v1$", 20)
            await _inflict(fault, program, proxy, server)
            mark = len(program.stdout)
            await zkwire.retry(writer.set_data, node, b"v2")
            await program.line(r"^feature-x: v2$", RECOVERY, after=mark)
