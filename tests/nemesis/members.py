"""The ensemble as the nemesis sees it: member addresses, the leader (by the ``srvr`` four-letter word),
killing and restarting a member, pausing a member's JVM (SIGSTOP) for a moment, and -- on a
reconfigurable ensemble -- removing a member and adding a fresh one.

Members are named by their ensemble index.  The membership may change during a run (the ``reconfig``
fault): :attr:`Members.indices` is the current configuration's, an added member takes the next index,
and a removed one's index is not used again.  :meth:`Members.heal` brings the ensemble back to the size
it had when the run began."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import trio

from zkwire.testing.embedded import EmbeddedEnsemble, four_letter_word

__all__ = ["Members"]


class Members:
    def __init__(self, ensemble: EmbeddedEnsemble) -> None:
        self.ensemble = ensemble
        #: The number of members the run begins with, and that :meth:`heal` restores.
        self.target_size = ensemble.size
        self.paused: set[int] = set()
        #: Every index a member had during the run (removed ones included), for :meth:`member_of`.
        self.known: set[int] = set(ensemble.members())
        #: Members removed from the configuration but left running for a while (stopped by :meth:`heal`).
        self.lingering: set[int] = set()

    @property
    def reconfigurable(self) -> bool:
        return self.ensemble.reconfigurable

    @property
    def indices(self) -> list[int]:
        """The members of the current configuration."""
        return self.ensemble.members()

    @property
    def size(self) -> int:
        return len(self.indices)

    def address(self, index: int) -> tuple[str, int]:
        return self.ensemble.host, self.ensemble.member_port(index)

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """The current members' client addresses, in index order."""
        return [self.address(i) for i in self.indices]

    @property
    def hosts(self) -> str:
        return self.ensemble.hosts

    def member_of(self, host: str | None) -> int | None:
        """The member (current or removed) whose client address is ``host`` ("host:port"), if any."""
        if not host:
            return None
        for i in sorted(self.known):
            h, p = self.address(i)
            if host == f"{h}:{p}":
                return i
        return None

    def mode(self, index: int) -> str | None:
        """``leader``, ``follower``..., from ``srvr``; None if the member does not answer."""
        try:
            text = four_letter_word(self.address(index), "srvr", 1.0)
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> int | None:
        for i in self.indices:
            if i not in self.paused and self.mode(i) == "leader":
                return i
        return None

    async def find_leader(self, within: float = 10.0) -> int | None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            leader = await trio.to_thread.run_sync(self.leader)
            if leader is not None:
                return leader
            await trio.sleep(0.2)
        return None

    async def kill(self, index: int) -> None:
        await trio.to_thread.run_sync(lambda: self.ensemble.stop_member(index, kill=True))

    async def restart(self, index: int, within: float = 60.0) -> None:
        """Start a stopped member again and wait until every running member serves."""
        await trio.to_thread.run_sync(lambda: self.ensemble.start_member(index, within), abandon_on_cancel=True)

    # ------------------------------------------------------------------ membership (reconfigurable only)

    async def remove(self, index: int, within: float) -> None:
        """Remove member ``index`` from the configuration and leave it running (see :meth:`stop_removed`)."""
        self.lingering.add(index)
        await trio.to_thread.run_sync(lambda: self.ensemble.remove_member(index, stop=False, timeout=within))

    async def stop_removed(self, index: int) -> None:
        """Stop a member removed by :meth:`remove` (SIGTERM)."""
        await trio.to_thread.run_sync(lambda: self.ensemble.stop_member(index))
        self.lingering.discard(index)

    async def add(self, within: float) -> int:
        """Start a fresh server and add it to the configuration; its index."""
        index = await trio.to_thread.run_sync(lambda: self.ensemble.add_member(timeout=within))
        self.known.add(index)
        return index

    async def restore_membership(self, within: float = 60.0) -> list[int]:
        """Stop the removed members still running, and add fresh members until the ensemble has
        :attr:`target_size` members again; the indices added."""
        for index in sorted(self.lingering):
            await self.stop_removed(index)
        added = []
        while self.reconfigurable and self.size < self.target_size:
            added.append(await self.add(within))
        return added

    # ------------------------------------------------------------------ JVMs

    def pid(self, index: int) -> int | None:
        """The JVM of member ``index``: the process whose command line names that member's zoo.cfg."""
        log_path = self.ensemble.log_path(index)
        if log_path is None:
            return None
        cfg = str(Path(log_path).parent / "zoo.cfg").encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if cfg in args:
                return int(entry)
        return None

    def pause(self, index: int, pid: int | None = None) -> int | None:
        """SIGSTOP member ``index`` (``pid``: its JVM, if already looked up); returns the pid."""
        pid = self.pid(index) if pid is None else pid
        if pid is None:
            return None
        os.kill(pid, signal.SIGSTOP)
        self.paused.add(index)
        return pid

    def resume(self, index: int) -> None:
        self.paused.discard(index)
        pid = self.pid(index)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    async def heal(self) -> None:
        """Resume paused members, start stopped ones (waits until they serve), and bring the
        membership back to :attr:`target_size` members."""
        for i in list(self.paused):
            self.resume(i)
        for i in self.indices:
            pid = self.pid(i)
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        if len(self.ensemble.running_members()) < self.size:
            await trio.to_thread.run_sync(self.ensemble.start, abandon_on_cancel=True)
        await self.restore_membership()
