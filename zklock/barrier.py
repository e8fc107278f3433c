"""Barriers: Curator's ``DistributedBarrier``/``DistributedDoubleBarrier`` and kazoo's
``Barrier``/``DoubleBarrier``, on one path with the peers.

**Barrier** (one node): while ``<path>`` exists the barrier is up; :meth:`Barrier.wait` returns once it
is gone.  Curator and kazoo use the same layout, so the three interoperate.

**DoubleBarrier** (``members`` processes enter together and leave together).  Each member is an
ephemeral node ``<path>/<name>``; the last one to arrive creates ``<path>/ready``, which releases every
member waiting in :meth:`DoubleBarrier.enter`.  To leave, members delete their node in an order that
wakes one process at a time: the lowest name waits for the highest to go, every other member deletes
its node and waits for the lowest to go; :meth:`DoubleBarrier.leave` returns when every member node is
gone.  ``naming`` picks the peer whose details we follow: ``"curator"`` (default; member names are
36-character uuids, parents are containers, ``ready`` is deleted last) or ``"kazoo"`` (32-hex-digit
names holding the identifier, persistent parents, ``ready`` deleted first).  Members of both namings
may share a path.

Session ends: given a :class:`zkwire.Sessions` stream, a member whose session expired while it waited
to enter creates its node again in the next session and goes on waiting; one that expired while
leaving has left (its node went with the session) and waits for the others to go.  The layout, shared
with the peers, has one limit here: if the others counted our node, entered and left (deleting
``ready``) while our session was ending, nothing on the path says so any more, and our enter waits
for a round that has passed.  Bound :meth:`DoubleBarrier.enter` with a cancel scope where a session
can end.  A member node is
created with a name of its own, so a create whose reply was lost is found (``NodeExists`` in our own
session) and kept, never made twice.
"""

from __future__ import annotations

import uuid
from types import TracebackType
from typing import Self

import trio

from zkwire import (
    AuthFailedError,
    Client,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SessionSource,
    current_client,
    validate_path,
)

from .naming import Naming, check_naming
from .recipe import default_identifier, delete_node
from .retrying import repeat

__all__ = ["Barrier", "DoubleBarrier", "READY"]

#: The name of the node that releases a double barrier's members.
READY = "ready"
_ENDED = (SessionExpiredError, AuthFailedError, ClientClosedError)


async def _session(source: SessionSource, ended: BaseException) -> Client:
    """The next session after ``ended`` ended one; re-raises with a single client."""
    if isinstance(source, Client):
        raise ended
    return await current_client(source)


class Barrier:
    """A barrier node at ``path`` (Curator's ``DistributedBarrier``, kazoo's ``Barrier``).

    Raises:
        InvalidPathError: a bad ``path`` (at construction).
    """

    def __init__(self, source: SessionSource, path: str) -> None:
        self.source = source
        self.path = validate_path(path)

    async def set(self) -> None:
        """Raise the barrier (create the node; already up is fine)."""

        async def make(zk: Client) -> None:
            await zk.ensure_path(self.path)

        await repeat(self.source, make)

    async def remove(self) -> None:
        """Lower the barrier (delete the node; already down is fine)."""

        async def delete(zk: Client) -> None:
            try:
                await zk.delete(self.path)
            except NoNodeError:
                pass

        await repeat(self.source, delete)

    async def wait(self) -> None:
        """Wait until the barrier is down (bound it with a cancel scope)."""
        while True:
            zk = await current_client(self.source)
            try:
                stat, watch = await zk.exists(self.path, watch=True)
                if stat is None:
                    return
                await watch.wait()
            except ConnectionLossError:
                continue
            except _ENDED as e:
                await _session(self.source, e)


class DoubleBarrier:
    """``members`` processes enter together and leave together at ``path``; see :mod:`zklock.barrier`.

    ``async with barrier:`` enters and, at the end of the block, leaves.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``members`` (at least 1) or ``naming``.
    """

    def __init__(
        self,
        source: SessionSource,
        path: str,
        members: int,
        *,
        identifier: str | None = None,
        naming: Naming = "curator",
    ) -> None:
        self.source = source
        self.path = validate_path(path)
        if isinstance(members, bool) or not isinstance(members, int) or members < 1:
            raise InvalidArgumentError(path, f"members must be a positive int, not {members!r}")
        self.members = members
        self.naming: Naming = check_naming(naming)
        self.identifier = identifier if identifier is not None else default_identifier()
        self.name = str(uuid.uuid4()) if self.naming == "curator" else uuid.uuid4().hex
        self._base = self.path.rstrip("/")
        self.node = f"{self._base}/{self.name}"
        self.ready = f"{self._base}/{READY}"

    async def enter(self) -> None:
        """Create our member node and wait until ``members`` have entered (bound it with a cancel scope;
        a cancelled or failed enter deletes our node)."""
        try:
            await self._enter()
        except BaseException:
            await self._abandon()
            raise

    async def _abandon(self) -> None:
        """Delete our member node, shielded (after a failure or a cancellation)."""
        zk = self.source if isinstance(self.source, Client) else self.source.current
        if zk is not None:
            with trio.CancelScope(shield=True):
                await delete_node(zk, self.node)

    async def _enter(self) -> None:
        zk = await current_client(self.source)
        while True:
            try:
                ready, watch = await zk.exists(self.ready, watch=True)
                await self._create_member(zk)
                if ready is not None:
                    return
                children = await zk.get_children(self.path)
                if len([c for c in children if c != READY]) >= self.members:
                    await self._create_ready(zk)
                    return
                await watch.wait()
                return
            except ConnectionLossError:
                continue
            except _ENDED as e:
                zk = await _session(self.source, e)

    async def _create_member(self, zk: Client) -> None:
        data = self.identifier.encode()
        while True:
            try:
                await zk.create(self.node, data, ephemeral=True)
                return
            except NodeExistsError:
                stat = await zk.exists(self.node)
                if stat is None:
                    continue
                if stat.ephemeral_owner == zk.session_id:
                    return  # made by a create whose reply was lost
                raise
            except NoNodeError:
                await zk.ensure_path(self.path, container=self.naming == "curator")
            except ConnectionLossError:
                continue  # sent again: NodeExists in our own session if the first one was applied

    async def _create_ready(self, zk: Client) -> None:
        try:
            await zk.create(self.ready)
        except NodeExistsError:
            pass

    async def leave(self) -> None:
        """Delete our member node and wait until every member has left (bound it with a cancel scope)."""
        zk = await current_client(self.source)
        ready_first = self.naming == "kazoo"  # kazoo deletes ``ready`` first, Curator last
        left = False
        while True:
            try:
                if ready_first:
                    await self._delete(zk, self.ready)
                    ready_first = False
                if not left:
                    left = await self._leave_step(zk)
                    continue
                if self.naming == "curator":
                    await self._delete(zk, self.ready)
                return
            except ConnectionLossError:
                continue
            except _ENDED as e:
                zk = await _session(self.source, e)

    async def _leave_step(self, zk: Client) -> bool:
        """One turn of the leave loop; True once every member node is gone."""
        try:
            children = sorted(c for c in await zk.get_children(self.path) if c != READY)
        except NoNodeError:
            return True
        if not children:
            return True
        if children == [self.name]:
            await self._delete(zk, self.node)
            return True
        if children[0] == self.name:
            target = children[-1]  # the lowest waits for the highest
        else:
            await self._delete(zk, self.node)
            target = children[0]
        stat, watch = await zk.exists(f"{self._base}/{target}", watch=True)
        if stat is not None:
            await watch.wait()
        return False

    @staticmethod
    async def _delete(zk: Client, path: str) -> None:
        try:
            await zk.delete(path)
        except NoNodeError:
            pass

    async def __aenter__(self) -> Self:
        await self.enter()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            # The body failed: do not hold the others up; our node goes, they see us leave.
            await self._abandon()
            return
        await self.leave()
