"""A counting semaphore: at most ``max_leases`` holders at once (Curator's InterProcessSemaphoreV2 scheme).

Acquirers are serialised by an internal mutex at ``<path>/locks``; the one holding it creates its lease
node ``<path>/leases/_c_<uuid>-lease-<seq>`` and, while there are more than ``max_leases`` lease nodes,
waits on a children watch (only this one acquirer watches, so releases wake one process, not a herd).
Then it lets the internal mutex go and holds its lease until it deletes the node.  Lost replies,
cancellation and session loss are handled as for every recipe in :mod:`zklock.recipe`.
"""

from __future__ import annotations

from zkwire import Client
from zkwire.errors import InvalidArgumentError

from .lease import Lease
from .mutex import Mutex
from .naming import Contender
from .recipe import ANY_CHANGE, LockRecipe

__all__ = ["Semaphore"]


class Semaphore(LockRecipe):
    """``async with Semaphore(client, "/sem/pool", max_leases=3) as lease:`` holds one of the leases."""

    marker = "lease-"
    markers = ("lease-",)
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
    ) -> None:
        if isinstance(max_leases, bool) or not isinstance(max_leases, int) or max_leases < 1:
            raise InvalidArgumentError(f"max_leases must be a positive int, not {max_leases!r}")
        super().__init__(
            client,
            f"{path.rstrip('/')}/leases",
            identifier=identifier,
            lose_on_suspend=lose_on_suspend,
            cancel_on_loss=cancel_on_loss,
        )
        self.semaphore_path = path
        self.max_leases = max_leases
        self._guard = Mutex(
            client, f"{path.rstrip('/')}/locks", identifier=identifier, lose_on_suspend=False, cancel_on_loss=False
        )

    def _blocker(self, contenders: list[Contender], index: int) -> Contender | None:
        return None if len(contenders) <= self.max_leases else ANY_CHANGE

    async def _acquire(self, blocking: bool) -> Lease | None:
        if self.lease is not None and not self.lease.lost:
            return await super()._acquire(blocking)
        if not await self._guard.acquire(blocking):
            return None
        try:
            return await super()._acquire(blocking)
        finally:
            await self._guard.release()
