"""The holder's side of a lock: fencing token, fenced writes, loss and revocation signals."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from types import TracebackType
from typing import Protocol

import trio

from zkwire import (
    Check,
    Client,
    ConnectionLossError,
    EventType,
    NoNodeError,
    SessionExpiredError,
    SessionState,
    Stat,
    WriteOp,
    ZKError,
)

from .errors import LockLostError
from .reporting import report

__all__ = ["Lease", "HeldLock", "REVOKE_DATA", "OWN_NODE_WATCH_DELAY"]

log = logging.getLogger("zklock")

#: Data written into a holder's node to ask it to release (the value Curator's revoker writes).
REVOKE_DATA = b"__REVOKE__"
#: Seconds after a grant before the holder starts watching its own node (for deletion and revocation).
OWN_NODE_WATCH_DELAY = 0.05


class HeldLock(Protocol):
    """What a lease needs of the lock that granted it (every recipe of :mod:`zklock.recipe` is one)."""

    client: Client
    path: str
    lose_on_suspend: bool
    cancel_on_loss: bool
    #: The lock's name in its events (:mod:`zklock.reporting`), None when it reports none.
    event_name: str | None

    @property
    def lease(self) -> Lease | None:
        """The current task's lease of this lock, if it holds it."""
        ...

    async def release(self) -> None:
        """Release one level of the current task's hold."""
        ...


class Lease:
    """Proof of holding a lock.

    ``fencing_token`` (the lock node's czxid) strictly increases with every grant of the lock, also when
    the lock path is deleted and recreated: pass it to the resource you protect so that it can refuse
    a stale holder.  For writes to ZooKeeper itself, :meth:`fenced` makes the server refuse them once
    this lease's node is gone.

    ``lost`` / ``lost_reason`` / ``lost_at`` / ``wait_lost()`` report a loss; ``revocation_requested`` /
    ``wait_revocation_requested()`` report that another party asked us to release.

    What is told, and when:

    * a lost connection (suspension) and session expiry are told at least a third of the session
      timeout before the server can expire the session -- so before anyone else can be granted the lock
      -- as long as this process runs (a process that is paused, or a machine whose clock stops, cannot
      be told anything: that is what fencing is for);
    * the deletion of the lock node by another party is told only eventually: the server notifies the
      holder and grants the next contender independently, so both may briefly believe they hold the
      lock.  Fencing tokens and :meth:`fenced` writes are refused for the stale holder in that window.

    ``async with lease:`` runs a body under the lease: the body is cancelled if the lease is lost (with
    the recipe's ``cancel_on_loss``), :class:`~zklock.LockLostError` is raised out of it, and the lease
    is released at the end.  ``async with lock`` is ``acquire_lease()`` followed by this.

    The lock that grants a lease calls :meth:`start` once, :meth:`hold_again` for each reentrant
    acquire and :meth:`let_go` for each release; the lease watches its node and the session from
    :meth:`start` until the last :meth:`let_go` (or the loss).
    """

    def __init__(
        self,
        recipe: HeldLock,
        node: str,
        fencing_token: int,
        session_id: int,
        *,
        create_uuid: str | None = None,
        context: object = None,
    ) -> None:
        self.recipe = recipe
        self.node = node
        self.fencing_token = fencing_token
        self.session_id = session_id
        self.lost_reason: str | None = None
        #: When the loss was noticed, on the trio clock (``trio.current_time()``), or None.
        self.lost_at: float | None = None
        self.released = False
        self._lost = trio.Event()
        self._revoke = trio.Event()
        #: The cancel scopes of the open ``async with`` blocks under this lease (innermost last).
        self._scopes: list[trio.CancelScope] = []
        #: Ends the watch on our own node (at release or loss).
        self._watch_scope = trio.CancelScope()
        self._count = 1
        #: The acquire's uuid if it ever lost a create reply: release then sweeps every node carrying it.
        self.create_uuid = create_uuid
        #: When granted, on the trio clock.
        self.granted_at = trio.current_time()
        #: The acquiring task's context, for the observers (:mod:`zklock.reporting`).
        self._context = context

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

    # ------------------------------------------------------------------ fenced writes

    def guard(self) -> Check:
        """The op that makes a multi fail unless this lease's node still exists.

        ``await client.multi([lease.guard(), SetData(...), ...])`` is applied only while the lease
        holds; :meth:`fenced` does this and reports a refusal as :class:`~zklock.LockLostError`.
        """
        return Check(self.node, -1)

    async def fenced(self, ops: Iterable[WriteOp]) -> list[str | Stat | None]:
        """Apply ``ops`` atomically, only if this lease still holds the lock when the server applies them.

        The check runs on the server, in the same transaction: a holder that has lost the lock without
        knowing it yet (paused, or its node deleted by another party) cannot write.  Returns the ops'
        results (as :meth:`zkwire.Client.multi`, without the check's).

        Raises:
            LockLostError: the lease's node is gone or the session has ended; nothing was applied (the
                lease is marked lost).
            zkwire.ZKError: any other failure of ``ops`` (e.g. ``BadVersionError``), with nothing applied;
                ``ConnectionLossError`` when the outcome is unknown, as for any write.
        """
        try:
            results = await self.recipe.client.multi([self.guard(), *ops])
        except NoNodeError as e:
            if not e.results or not isinstance(e.results[0], NoNodeError):
                raise  # another op's node is missing
            self._mark_lost("lock node was deleted")
            raise LockLostError(self.path, "lock node was deleted") from e
        except SessionExpiredError as e:
            self._mark_lost("session expired")
            raise LockLostError(self.path, "session expired") from e
        return results[1:]

    # ------------------------------------------------------------------ the holder's block

    async def __aenter__(self) -> Lease:
        scope = trio.CancelScope()
        scope.__enter__()
        self._scopes.append(scope)
        if self.lost and self.recipe.cancel_on_loss:
            scope.cancel()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        scope = self._scopes.pop()
        swallowed = bool(scope.__exit__(exc_type, exc, tb))
        recipe = self.recipe
        if recipe.lease is self:
            with trio.CancelScope(shield=True):
                await recipe.release()
        # Whatever the body ended with (our cancellation, a ConnectionLossError from a request that
        # failed with the connection, any error of its own), the loss is what the caller is told, with
        # the body's exception chained.  A cancellation from outside, and KeyboardInterrupt and the
        # like, go on as they are.
        if self.lost and recipe.cancel_on_loss and (exc is None or swallowed or isinstance(exc, Exception)):
            raise LockLostError(self.path, self.lost_reason or "lost") from (None if swallowed else exc)
        return swallowed and exc is not None and not self.lost

    # ------------------------------------------------------------------ the lock's side

    def start(self) -> None:
        """Start telling losses: the session's state now (a session that is not connected at the grant
        marks the lease lost at once, with ``lose_on_suspend``), the node's deletion and revocation
        requests from a watch on the node started :data:`OWN_NODE_WATCH_DELAY` later (so that a short
        hold costs no request and no watch event; nothing is missed meanwhile: a deletion shows up as
        NoNode, a revocation request as the node's data)."""
        client = self.recipe.client
        client.add_state_listener(self._on_state)
        if self.recipe.lose_on_suspend and client.state is not SessionState.CONNECTED:
            self._mark_lost(f"session {client.state.value}")
        client.spawn(self._watch_node, name=f"zklock watch {self.node}")

    def hold_again(self) -> None:
        """One more level of hold (a reentrant acquire by the holding task)."""
        self._count += 1

    def let_go(self) -> bool:
        """One level of hold fewer; True when that was the last: the lease is then released (its
        watches end) and the lock deletes the node."""
        self._count -= 1
        if self._count > 0:
            return False
        self.released = True
        self._watch_scope.cancel()
        self.recipe.client.remove_state_listener(self._on_state)
        if not self.lost:  # a lost lease's hold ended when it was told
            self._report("released")
        return True

    async def _watch_node(self) -> None:
        with self._watch_scope:
            await trio.sleep(OWN_NODE_WATCH_DELAY)
            await self._watch_own_node()

    async def _watch_own_node(self) -> None:
        client = self.recipe.client
        while not self.released and not self.lost:
            try:
                data, _, w = await client.get_data(self.node, watch=True)
                if data == REVOKE_DATA:
                    self._revoke.set()
                event = await w.wait()
                if self.released:
                    return
                if event.type == EventType.NODE_DELETED:
                    self._mark_lost("lock node was deleted")
                    return
            except NoNodeError:
                self._mark_lost("lock node was deleted")
                return
            except ConnectionLossError:
                await client.wait_connected()
            except ZKError as e:
                self._mark_lost(f"session ended ({e})")
                return

    # ------------------------------------------------------------------ signals from the session

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
        self.lost_at = trio.current_time()
        if self.recipe.event_name is not None and self.recipe.client.observed:
            deadline = self.recipe.client.expiry_deadline
            margin = None if deadline is None else deadline - self.lost_at
            self._report("lost", margin=margin, cause=reason)
        self._lost.set()
        self._watch_scope.cancel()
        if self.recipe.cancel_on_loss:
            for scope in self._scopes:
                scope.cancel()

    def _report(self, kind: str, **figures: object) -> None:
        recipe = self.recipe
        held = trio.current_time() - self.granted_at
        report(
            recipe.client,
            recipe.event_name,
            kind,
            recipe.path,
            context=self._context,
            hold=held,
            token=self.fencing_token,
            **figures,
        )

    def __repr__(self) -> str:
        state = "lost" if self.lost else "released" if self.released else "held"
        return f"<Lease {self.node} token={self.fencing_token} {state}>"
