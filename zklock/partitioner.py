"""Partitioning a set among the members of a party: kazoo's ``SetPartitioner``, on one path with it.

::

    async with zklock.SetPartitioner(stream, "/jobs/partitions", range(12)) as partitioner:
        async for assignment in partitioner:          # once per stable party
            async with trio.open_nursery() as nursery:
                for p in assignment.partitions:
                    nursery.start_soon(work_on, p, assignment)  # stop when assignment.changed is set
                await assignment.changed.wait()
                nursery.cancel_scope.cancel()

Layout (kazoo's): the members are a :class:`~zklock.ShallowParty` at ``<path>/party``
(``<uuid hex>-<identifier>``), and each partition ``p`` is owned by holding a kazoo-layout
:class:`~zklock.Mutex` at ``<path>/locks/<str(p)>``.  The rule is kazoo's: once the party has not changed
for ``time_boundary`` seconds, the members' identifiers and the partitions are sorted, and the member at
index ``i`` of ``n`` takes ``partitions[i::n]``.  Identifiers must therefore be unique.

Each assignment holds the locks of its partitions until the next one is asked for (the iterator's next
step releases them first), so no partition is ever owned by two members at once -- whatever the timing,
the lock is the proof (kazoo's states map to this: *allocating* is the wait for the next assignment,
*acquired* an assignment, *release* ``assignment.changed`` being set, *failure* ``assignment.lost``).
``assignment.changed`` is set when the party changes (a member joins or leaves) or a lock is lost (the
session was suspended or expired); ``assignment.lost`` says which.  Given a :class:`zkwire.Sessions`
stream, the partitioner carries on in the next session after an expiry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import trio

from zkwire import (
    Client,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    NoNodeError,
    SessionExpiredError,
    SessionSource,
    current_client,
    task_nursery,
    validate_path,
)

from .group import ShallowParty, _identities
from .lease import Lease
from .mutex import Mutex
from .persistent import first_of
from .recipe import default_identifier

__all__ = ["SetPartitioner", "Assignment", "partition"]


def partition(identifier: str, members: Iterable[str], partitions: Iterable[object]) -> list[object]:
    """kazoo's rule: the partitions of the member ``identifier`` among ``members``."""
    workers = sorted(members)
    return sorted(partitions)[workers.index(identifier) :: len(workers)]  # type: ignore[type-var]


@dataclass
class Assignment:
    """The partitions this member owns until :attr:`changed` is set and the next assignment is asked
    for."""

    partitions: list[object]
    #: The party the assignment was made for (sorted identifiers).
    members: list[str]
    #: Set when the party changed or a lock was lost: finish with these partitions.
    changed: trio.Event = field(default_factory=trio.Event)
    #: Whether a lock was lost (the session was suspended or expired): another member may own one of
    #: the partitions already.
    lost: bool = False


class SetPartitioner:
    """kazoo's ``SetPartitioner``; see :mod:`zklock.partitioner`.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``identifier`` or time (at construction).
    """

    def __init__(
        self,
        source: SessionSource,
        path: str,
        partitions: Iterable[object],
        *,
        identifier: str | None = None,
        time_boundary: float = 30.0,
        max_reaction_time: float = 1.0,
    ) -> None:
        self.source = source
        self.path = validate_path(path)
        self.partitions = list(partitions)
        if time_boundary < 0 or max_reaction_time <= 0:
            raise InvalidArgumentError(path, "time_boundary must be >= 0 and max_reaction_time > 0")
        self.identifier = identifier if identifier is not None else default_identifier()
        self.time_boundary = time_boundary
        self.max_reaction_time = max_reaction_time
        base = self.path.rstrip("/")
        self.party_path = f"{base}/party"
        self.locks_path = f"{base}/locks"
        self._member = ShallowParty(source, self.party_path, self.identifier)
        self._held: list[tuple[Mutex, Lease]] = []
        self._current: Assignment | None = None
        self._nursery: trio.Nursery | None = None
        self._manager: object = None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Assignment:
        """Release the previous assignment's partitions, wait for the party to be stable, and take this
        member's share.  Ends when the block is left."""
        await self._release()
        while True:
            # The member's node first: its keeper carries on through lost connections and expiries, and
            # an error from it (no permission, the block left) ends the iteration.
            try:
                await self._member.wait_joined()
            except ClientClosedError:
                raise StopAsyncIteration from None
            try:
                assignment = await self._allocate()
            except ClientClosedError:
                raise StopAsyncIteration from None
            except (SessionExpiredError, ConnectionLossError):
                await self._release()
                if isinstance(self.source, Client) and self.source.ended is not None:
                    raise
                await trio.lowlevel.checkpoint()
                continue
            if assignment is not None:
                self._current = assignment
                return assignment
            await trio.lowlevel.checkpoint()

    async def _allocate(self) -> Assignment | None:
        """One attempt; None if the party changed while locks were taken (everything is released)."""
        zk = await current_client(self.source)
        members, changed = await self._stable_party(zk)
        if self.identifier not in members:
            return None  # our node is not there yet (re-created after an expiry)
        assignment = Assignment(partition(self.identifier, members, self.partitions), members)
        for p in assignment.partitions:
            mutex = Mutex(
                zk, f"{self.locks_path}/{p}", identifier=self.identifier, naming="kazoo", cancel_on_loss=False
            )
            while True:
                with trio.move_on_after(self.max_reaction_time):
                    self._held.append((mutex, await mutex.acquire_lease()))
                    break
                if changed.triggered:
                    await self._release()
                    return None
            if changed.triggered:
                await self._release()
                return None
        assert self._nursery is not None
        self._nursery.start_soon(self._watch, assignment, changed, [lease for _, lease in self._held])
        return assignment

    async def _stable_party(self, zk: Client) -> tuple[list[str], _Changed]:
        """The party's identifiers once unchanged for ``time_boundary``, and its change signal."""
        while True:
            try:
                names, watch = await zk.get_children(self.party_path, watch=True)
            except NoNodeError:
                await zk.ensure_path(self.party_path)
                continue
            changed = _Changed(watch)
            with trio.move_on_after(self.time_boundary):
                await watch.wait()
                continue
            return await _identities(zk, self.party_path, names, True, {}), changed

    async def _watch(self, assignment: Assignment, changed: _Changed, leases: list[Lease]) -> None:
        """End ``assignment`` when the party changes or one of its locks is lost."""

        def lost(lease: Lease) -> Callable[[], Awaitable[None]]:
            async def wait() -> None:
                await lease.wait_lost()
                assignment.lost = True

            return wait

        await first_of(changed.wait, assignment.changed.wait, *(lost(lease) for lease in leases))
        assignment.changed.set()

    async def _release(self) -> None:
        if self._current is not None:
            self._current.changed.set()
            self._current = None
        held, self._held = self._held, []
        with trio.CancelScope(shield=True):
            for mutex, _ in reversed(held):
                try:
                    await mutex.release()
                except Exception:  # the session is gone: its nodes went with it
                    pass

    async def __aenter__(self) -> Self:
        manager = task_nursery(f"zklock.SetPartitioner {self.path}")
        self._nursery = await manager.__aenter__()
        self._manager = manager
        try:
            await self._member.__aenter__()
        except BaseException as e:
            await manager.__aexit__(type(e), e, e.__traceback__)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        assert self._nursery is not None and self._manager is not None
        try:
            await self._release()
            await self._member.__aexit__(None, None, None)
        finally:
            self._nursery.cancel_scope.cancel()
            suppressed = await self._manager.__aexit__(exc_type, exc, tb)  # type: ignore[attr-defined]
        return bool(suppressed)


class _Changed:
    """A party watch as an event one can look at without waiting."""

    def __init__(self, watch: object) -> None:
        self._watch = watch
        self._event = trio.Event()

    @property
    def triggered(self) -> bool:
        return bool(self._watch.triggered) or self._event.is_set()  # type: ignore[attr-defined]

    async def wait(self) -> None:
        try:
            await self._watch.wait()  # type: ignore[attr-defined]
        except Exception:  # a session end changes the party for us as well
            pass
        self._event.set()
