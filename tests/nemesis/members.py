"""The ensemble as the nemesis sees it: member addresses, the leader (by the ``srvr`` four-letter word),
killing and restarting a member, and pausing a member's JVM (SIGSTOP) for a moment."""

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
        self.size = ensemble.size
        self.addresses = [(ensemble.host, ensemble.member_port(i)) for i in range(ensemble.size)]
        self.paused: set[int] = set()

    @property
    def hosts(self) -> str:
        return self.ensemble.hosts

    def mode(self, index: int) -> str | None:
        """``leader``, ``follower``..., from ``srvr``; None if the member does not answer."""
        try:
            text = four_letter_word(self.addresses[index], "srvr", 1.0)
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> int | None:
        for i in range(self.size):
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
        """Resume paused members and start stopped ones (waits until they serve)."""
        for i in list(self.paused):
            self.resume(i)
        for i in range(self.size):
            pid = self.pid(i)
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        if len(self.ensemble.running_members()) < self.size:
            await trio.to_thread.run_sync(self.ensemble.start, abandon_on_cancel=True)
