"""The holder's side of a lock: fencing token, loss and revocation signals."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from zkwire import SessionState

if TYPE_CHECKING:
    from .recipe import LockRecipe

__all__ = ["Lease", "REVOKE_DATA"]

log = logging.getLogger("zklock")

#: Data written into a holder's node to ask it to release (the value Curator's revoker writes).
REVOKE_DATA = b"__REVOKE__"


class Lease:
    """Proof of holding a lock.

    ``fencing_token`` (the lock node's czxid) strictly increases with every grant of the lock, also when
    the lock path is deleted and recreated: pass it to the resource you protect so that it can refuse
    a stale holder.  ``lost`` / ``wait_lost()`` report a loss; ``revocation_requested`` /
    ``wait_revocation_requested()`` report that another party asked us to release.
    """

    def __init__(self, recipe: LockRecipe, node: str, fencing_token: int, session_id: int) -> None:
        self.recipe = recipe
        self.node = node
        self.fencing_token = fencing_token
        self.session_id = session_id
        self.lost_reason: str | None = None
        self.released = False
        self._lost = trio.Event()
        self._revoke = trio.Event()
        self._scopes: list[trio.CancelScope] = []
        #: Ends the watch on our own node (at release or loss).
        self._watch_scope = trio.CancelScope()
        self._count = 1

    @property
    def path(self) -> str:
        return self.recipe.path

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    @property
    def revocation_requested(self) -> bool:
        return self._revoke.is_set()

    async def wait_lost(self) -> str:
        """Wait until the lock is lost; returns the reason."""
        await self._lost.wait()
        assert self.lost_reason is not None
        return self.lost_reason

    async def wait_revocation_requested(self) -> None:
        """Wait until someone asks this holder to release (see ``request_revocation``)."""
        await self._revoke.wait()

    def _on_state(self, state: SessionState) -> None:
        """Session state listener (runs synchronously in the client task that saw the change)."""
        if state.is_terminal:
            self._mark_lost(f"session {state.value}")
        elif state is SessionState.SUSPENDED and self.recipe.lose_on_suspend:
            self._mark_lost("connection lost (session suspended)")

    def _mark_lost(self, reason: str) -> None:
        if self.lost_reason is not None or self.released:
            return
        log.warning("lock %s lost: %s", self.recipe.path, reason)
        self.lost_reason = reason
        self._lost.set()
        self._watch_scope.cancel()
        if self.recipe.cancel_on_loss:
            for scope in self._scopes:
                scope.cancel()

    def __repr__(self) -> str:
        state = "lost" if self.lost else "released" if self.released else "held"
        return f"<Lease {self.node} token={self.fencing_token} {state}>"
