"""What the pytest fixtures hand to tests: a server or an ensemble, with ``async`` controls for trio.

The blocking work (starting a JVM or a container, waiting for a quorum) runs in a worker thread
(``trio.to_thread``), so a trio test stays responsive while a server restarts: its clients keep
running, see the disconnection and reconnect. The objects underneath (``.server``, ``.ensemble``) have
the same operations as blocking calls, for code that is not async.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import trio

from .base import EmbeddedZooKeeperError, ZooKeeperEnsemble, ZooKeeperServer
from .netns import NetnsEnsemble

__all__ = ["EnsembleHandle", "NetnsEnsembleHandle", "ServerHandle"]

# Bound of the blocking waits behind start/restart (a worker thread cannot be cancelled).
_START_LIMIT = 60.0


class ServerHandle:
    """The session's ZooKeeper server, as the ``zk_server`` fixture gives it.

    ``await stop()`` / ``await start()`` / ``await restart()`` keep the server's address and data (a
    session of a client may survive a restart). A server a test left stopped is started again after it.
    """

    def __init__(self, server: ZooKeeperServer) -> None:
        self.server = server

    @property
    def backend(self) -> str:
        return self.server.backend

    @property
    def hosts(self) -> str:
        """The connect string (no chroot)."""
        return self.server.hosts

    @property
    def client_address(self) -> str:
        """The address the server sees this process's clients connect from."""
        return self.server.client_address

    @property
    def controllable(self) -> bool:
        return self.server.controllable

    @property
    def running(self) -> bool:
        return self.server.running

    @property
    def secure_hosts(self) -> str:
        """The connect string of the server's TLS port (a server started with ``zk_server_certificates``).

        Raises:
            EmbeddedZooKeeperError: the server has no TLS port.
        """
        secure: str | None = getattr(self.server, "secure_hosts", None)
        if secure is None:
            raise EmbeddedZooKeeperError("the server has no TLS port (override zk_server_certificates)")
        return secure

    def connect_string(self, chroot: str = "") -> str:
        return self.server.hosts + ("/" + chroot.strip("/") if chroot.strip("/") else "")

    def log_tail(self, lines: int = 200) -> str:
        return self.server.log_tail(lines)

    def four_letter_word(self, cmd: str, timeout: float = 5.0) -> str:
        return self.server.four_letter_word(cmd, timeout)

    def _check(self) -> None:
        if not self.server.controllable:
            raise EmbeddedZooKeeperError(f"the {self.server.backend} server cannot be stopped or started from here")

    async def stop(self, *, kill: bool = False) -> None:
        """Stop the server (SIGKILL with ``kill``), keeping its data and address."""
        self._check()
        await trio.to_thread.run_sync(lambda: self.server.stop(keep_data=True, kill=kill))

    async def start(self) -> None:
        """Start the server again and wait until it serves (at most a minute)."""
        self._check()
        await trio.to_thread.run_sync(lambda: self.server.start(_START_LIMIT))

    async def restart(self, *, kill: bool = False) -> None:
        self._check()
        await trio.to_thread.run_sync(lambda: self.server.restart(_START_LIMIT, kill=kill))

    def __repr__(self) -> str:
        return f"<ServerHandle {self.server!r}>"


class EnsembleHandle:
    """The session's ensemble, as the ``zk_ensemble`` fixture gives it. Members a test stopped are
    started again after it."""

    def __init__(self, ensemble: ZooKeeperEnsemble) -> None:
        self.ensemble = ensemble

    @property
    def backend(self) -> str:
        return self.ensemble.backend

    @property
    def size(self) -> int:
        return self.ensemble.size

    @property
    def hosts(self) -> str:
        return self.ensemble.hosts

    @property
    def client_address(self) -> str:
        return self.ensemble.client_address

    def member_hosts(self, index: int) -> str:
        return self.ensemble.member_hosts(index)

    def member_mode(self, index: int) -> str | None:
        return self.ensemble.member_mode(index)

    def running_members(self) -> list[int]:
        return self.ensemble.running_members()

    def log_tail(self, index: int | None = None, lines: int = 200) -> str:
        return self.ensemble.log_tail(index, lines)

    def four_letter_word(self, index: int, cmd: str, timeout: float = 5.0) -> str:
        return self.ensemble.four_letter_word(index, cmd, timeout)

    async def leader(self) -> int:
        """The index of the leader, once there is one (waits at most 30 s; cancellable)."""
        return await trio.to_thread.run_sync(lambda: self.ensemble.leader_index(30.0), abandon_on_cancel=True)

    async def followers(self) -> list[int]:
        leader = await self.leader()
        return [i for i in range(self.size) if i != leader]

    async def stop_member(self, index: int, *, kill: bool = False) -> None:
        await trio.to_thread.run_sync(lambda: self.ensemble.stop_member(index, kill=kill))

    async def start_member(self, index: int) -> None:
        """Start a stopped member and wait until every running member serves (at most a minute)."""
        await trio.to_thread.run_sync(lambda: self.ensemble.start_member(index, _START_LIMIT))

    async def restart_member(self, index: int, *, kill: bool = False) -> None:
        await trio.to_thread.run_sync(lambda: self.ensemble.restart_member(index, _START_LIMIT, kill=kill))

    async def wait_until_serving(self) -> None:
        """Wait until every running member serves (at most a minute; cancellable)."""
        await trio.to_thread.run_sync(lambda: self.ensemble.wait_until_serving(_START_LIMIT), abandon_on_cancel=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ensemble!r}>"


class NetnsEnsembleHandle(EnsembleHandle):
    """``zk_netns_ensemble``: an ensemble in network namespaces, with its links under the test's
    control (these calls take milliseconds and block). After each test the links are healed."""

    def __init__(self, ensemble: NetnsEnsemble) -> None:
        super().__init__(ensemble)
        self._net = ensemble

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        return self._net.blocked

    def peer_hosts(self, index: int) -> str:
        return self._net.peer_hosts(index)

    def client_command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run in the ensemble's client namespace (its clients are cut like this process's)."""
        return self._net.client_command(argv)

    def isolate(self, index: int) -> None:
        self._net.isolate(index)

    def partition(self, *groups: Iterable[int]) -> None:
        self._net.partition(*groups)

    def cut(self, a: int, b: int, *, both_ways: bool = True) -> None:
        self._net.cut(a, b, both_ways=both_ways)

    def cut_clients(self, *indices: int, both_ways: bool = True) -> None:
        self._net.cut_clients(*indices, both_ways=both_ways)

    def heal(self) -> None:
        self._net.heal()
