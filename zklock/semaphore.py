"""A counting semaphore: at most ``max_leases`` holders at once.

Acquirers are serialised by an internal mutex (the *guard*); the one holding it creates its lease node
and, while there are more than ``max_leases`` lease nodes, waits on a children watch (only this one
acquirer watches, so releases wake one process, not a herd).  Then it lets the guard go and holds its
lease until it deletes the node.  Every child of the lease parent takes a lease, whoever wrote it (both
peers below count that way).  Lost replies, cancellation and session loss are handled as for every
recipe in :mod:`zklock.recipe`.

The two namings are two layouts:

* ``naming="curator"`` (default), Curator's InterProcessSemaphoreV2: the guard is a mutex at
  ``<path>/locks``, leases are ``<path>/leases/_c_<uuid>-lease-<seq>`` (ephemeral, sequential).
* ``naming="kazoo"``, kazoo's Semaphore: the guard is a kazoo-named mutex at ``<path>-__lock__`` (a
  sibling of ``path``), leases are ``<path>/<uuid hex>`` (ephemeral, *not* sequential: the uuid alone
  finds the node after a lost create reply), and ``path`` is a persistent node whose data is
  ``max_leases`` in decimal: a semaphore whose stored count differs raises
  :class:`~zklock.MaxLeasesMismatchError` (kazoo raises ValueError in that case).

So ``naming="curator"`` limits holders together with Curator's InterProcessSemaphoreV2 only, and
``naming="kazoo"`` together with kazoo's Semaphore only.  The layouts do not share a single node: a
Curator-layout and a kazoo-layout semaphore on one path do not limit each other (and kazoo counts the
``locks`` and ``leases`` children of a Curator-layout path as taken leases).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from zkwire import Client, ConnectionLossError, InvalidArgumentError, NoNodeError, validate_path

from .errors import MaxLeasesMismatchError
from .lease import Lease
from .mutex import Mutex
from .naming import KAZOO_LEASE, KAZOO_LOCK, LEASE, Contender, Naming, check_naming, lease_contenders
from .recipe import ANY_CHANGE, LockRecipe, _Attempt, delete_node, delete_uuid_nodes

__all__ = ["Semaphore"]


class Semaphore(LockRecipe):
    """``async with Semaphore(client, "/sem/pool", max_leases=3) as lease:`` holds one of the leases.

    ``naming`` chooses the layout (see :mod:`zklock.semaphore`): ``"curator"`` (default) limits
    holders together with Curator's InterProcessSemaphoreV2, ``"kazoo"`` together with kazoo's
    Semaphore.  The other arguments are those of :class:`~zklock.Mutex`.
    """

    event_name: str | None = "semaphore"
    curator_marker = LEASE
    kazoo_marker = KAZOO_LEASE
    watches_children = True

    def __init__(
        self,
        client: Client,
        path: str,
        max_leases: int,
        *,
        identifier: str | None = None,
        lose_on_suspend: bool = True,
        cancel_on_loss: bool = True,
        naming: Naming = "curator",
    ) -> None:
        if isinstance(max_leases, bool) or not isinstance(max_leases, int) or max_leases < 1:
            raise InvalidArgumentError(f"max_leases must be a positive int, not {max_leases!r}")
        naming = check_naming(naming)
        path = validate_path(path)
        base = path.rstrip("/")
        super().__init__(
            client,
            f"{base}/leases" if naming == "curator" else path,
            identifier=identifier,
            lose_on_suspend=lose_on_suspend,
            cancel_on_loss=cancel_on_loss,
            naming=naming,
        )
        self.semaphore_path = path
        self.max_leases = max_leases
        self.sequential = naming == "curator"
        self._guard = Mutex(
            client,
            f"{base}/locks" if naming == "curator" else f"{base}-{KAZOO_LOCK}",
            identifier=identifier,
            lose_on_suspend=False,
            cancel_on_loss=False,
            naming=naming,
        )
        self._guard.event_name = None  # the guard's grants are the semaphore's business, not reported
        #: Whether the semaphore node was looked at (once per object): in kazoo's layout the count it
        #: stores is checked; in Curator's, kazoo-layout leases beside ours are warned about.
        self._checked = False

    def _contenders(self, children: list[str]) -> list[Contender]:
        return lease_contenders(children)

    def _blocker(self, contenders: list[Contender], index: int) -> Contender | None:
        return None if len(contenders) <= self.max_leases else ANY_CHANGE

    async def _ensure_parent(self) -> None:
        if self.naming == "kazoo":
            await self.client.ensure_path(self.path, data=str(self.max_leases).encode())
        else:
            await self.client.ensure_path(self.path, container=True)

    async def _check_layout(self) -> None:
        """Curator layout: warn (once per path) if kazoo-layout leases sit beside ours, which no side
        counts against the other; a peer's lease nodes under our lease parent are seen at each acquire."""
        while True:
            try:
                children = await self.client.get_children(self.semaphore_path)
            except NoNodeError:
                return
            except ConnectionLossError:
                continue
            break
        self._warn_foreign([c for c in lease_contenders(children) if c.marker == KAZOO_LEASE], self.semaphore_path)

    async def _check_count(self) -> None:
        """kazoo layout: create the semaphore node holding ``max_leases``, or check the count it holds."""
        while True:
            try:
                data, _ = await self.client.get_data(self.path)
            except NoNodeError:
                await self._ensure_parent()
                continue
            except ConnectionLossError:
                continue
            break
        try:
            stored = int(data.decode())
        except (UnicodeDecodeError, ValueError):
            return  # not a count (kazoo ignores such data too)
        if stored != self.max_leases:
            raise MaxLeasesMismatchError(self.path, stored, self.max_leases)

    async def _acquire(self, blocking: bool) -> Lease | None:
        if self.lease is not None and not self.lease.lost:
            return await super()._acquire(blocking)
        await self._check_once()
        if not await self._guard.acquire(blocking):
            return None
        try:
            return await super()._acquire(blocking)
        finally:
            await self._guard.release()

    async def _check_once(self) -> None:
        if not self._checked:
            await (self._check_count() if self.naming == "kazoo" else self._check_layout())
            self._checked = True

    async def acquire_leases(self, count: int) -> list[Lease]:
        """Acquire ``count`` leases (Curator's ``acquire(qty)``): one after another, each like
        :meth:`acquire`; if the wait is cancelled or fails, the leases already acquired are released
        (shielded) before it raises.  Give them back with :meth:`release_leases`, or use
        ``async with semaphore.leases(count) as leases:``.

        Raises:
            InvalidArgumentError: ``count`` is not from 1 to ``max_leases`` (more could never be had).
        """
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= self.max_leases:
            raise InvalidArgumentError(self.path, f"count must be from 1 to {self.max_leases}, not {count!r}")
        await self._check_once()
        leases: list[Lease] = []
        try:
            for _ in range(count):
                await self._guard.acquire()
                try:
                    attempt = _Attempt(self)
                    try:
                        lease = await attempt.run(True)
                    except BaseException:
                        with trio.CancelScope(shield=True):
                            await attempt.abandon()
                        raise
                finally:
                    await self._guard.release()
                assert lease is not None
                leases.append(lease)
        except BaseException:
            await self.release_leases(leases)
            raise
        return leases

    async def release_leases(self, leases: list[Lease]) -> None:
        """Give back leases from :meth:`acquire_leases` (shielded; the newest first)."""
        with trio.CancelScope(shield=True):
            for lease in reversed(leases):
                if not lease.released and lease.let_go():
                    await delete_node(self.client, lease.node)
                    if lease.create_uuid is not None:
                        await delete_uuid_nodes(self.client, self.path, lease.create_uuid, self._contenders)

    @asynccontextmanager
    async def leases(self, count: int) -> AsyncIterator[list[Lease]]:
        """``async with semaphore.leases(count) as leases:`` -- :meth:`acquire_leases`, given back at
        the end of the block."""
        held = await self.acquire_leases(count)
        try:
            yield held
        finally:
            await self.release_leases(held)

    async def holders(self) -> list[str]:
        """Identifiers (node data) of the lease holders, oldest first (at most ``max_leases``: a lease
        node beyond that is the newest acquirer's, still waiting)."""
        try:
            children = await self.client.get_children(self.path)
        except NoNodeError:
            return []
        found: list[tuple[int, str]] = []
        for name in children:
            try:
                data, stat = await self.client.get_data(f"{self.path}/{name}")
            except NoNodeError:
                continue
            found.append((stat.czxid, data.decode("utf-8", "replace")))
        found.sort()
        return [ident for _, ident in found[: self.max_leases]]
