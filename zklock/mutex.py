"""A distributed mutex that stays correct when replies are lost, waiters are cancelled and sessions die.

Algorithm (one ephemeral sequential node per contender under the lock path; lowest sequence holds):

1. Create ``<path>/_c_<uuid>-lock-`` (ephemeral, sequential) and list the children *in one round trip*:
   both requests go out back to back and the server applies them in order.  A missing parent is created
   as a container node (the server removes it once it is empty again).
2. If the create's reply is lost (connection loss), wait for the session to reconnect, list the children
   and adopt the node carrying our uuid -- only if its ephemeralOwner is our session; one left by an older
   session is deleted.  Never two nodes for one acquire.
3. If ours is the lowest node (and its ephemeralOwner is our current session), we hold the lock.
   Otherwise watch only the immediate predecessor, with a getData watch, and re-list when it fires.
4. Any failure or cancellation before the lock is held deletes our node (shielded); if the session is
   disconnected at that moment, the delete is retried in the background while the session lives.

While held, the lease watches its own node and the session.  Suspension (connection lost: the session may
be expiring on the server and another contender may get the lock), expiry, or the deletion of our node
mark the lease lost; ``async with`` then cancels its body and raises :class:`LockLostError`.
"""

from __future__ import annotations

import logging
import os
import socket
from types import TracebackType

import trio

from zkwire import Client, Create, EventType, GetChildren, SessionState
from zkwire.errors import (
    ConnectionLossError,
    NodeExistsError,
    NoNodeError,
    ZKError,
)

from .errors import LockLostError, NotHeldError
from .naming import Contender, new_protected_prefix, sort_contenders

__all__ = ["Mutex", "Lease", "default_identifier"]

log = logging.getLogger("zklock.mutex")

#: How long shielded clean-up may take before it is handed to the background.
CLEANUP_TIMEOUT = 5.0


def default_identifier() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Lease:
    """Proof of holding a lock.  ``fencing_token`` strictly increases with every grant of the lock."""

    def __init__(self, mutex: Mutex, node: str, fencing_token: int, session_id: int) -> None:
        self.mutex = mutex
        self.node = node
        self.fencing_token = fencing_token
        self.session_id = session_id
        self.lost_reason: str | None = None
        self.released = False
        self._lost = trio.Event()
        self._scopes: list[trio.CancelScope] = []
        self._count = 1

    @property
    def path(self) -> str:
        return self.mutex.path

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    async def wait_lost(self) -> str:
        """Wait until the lock is lost; returns the reason."""
        await self._lost.wait()
        assert self.lost_reason is not None
        return self.lost_reason

    def _on_state(self, state: SessionState) -> None:
        """Session state listener (runs synchronously in the client's task that saw the change)."""
        if state.is_terminal:
            self._mark_lost(f"session {state.value}")
        elif state is SessionState.SUSPENDED and self.mutex.lose_on_suspend:
            self._mark_lost("connection lost (session suspended)")

    def _mark_lost(self, reason: str) -> None:
        if self.lost_reason is not None or self.released:
            return
        log.warning("lock %s lost: %s", self.mutex.path, reason)
        self.lost_reason = reason
        self._lost.set()
        if self.mutex.cancel_on_loss:
            for scope in self._scopes:
                scope.cancel()

    def __repr__(self) -> str:
        state = "lost" if self.lost else "released" if self.released else "held"
        return f"<Lease {self.node} token={self.fencing_token} {state}>"


class Mutex:
    """A fair, reentrant (per trio task) distributed mutex on ``path``.

    ``async with Mutex(client, "/locks/job") as lease:`` acquires, and releases on exit; bound the wait
    with a cancel scope.  ``identifier`` (default ``hostname:pid``) is stored as the node's data so others
    can see who holds the lock.  With ``lose_on_suspend`` (default) a lost connection counts as losing the
    lock; with ``cancel_on_loss`` (default) the ``async with`` body is cancelled on loss and
    :class:`LockLostError` is raised -- set it to False to poll ``lease.lost`` / ``await
    lease.wait_lost()`` instead.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        lose_on_suspend: bool = True,
        cancel_on_loss: bool = True,
    ) -> None:
        from zkwire.paths import validate_path

        self.client = client
        self.path = validate_path(path)
        self.identifier = identifier if identifier is not None else default_identifier()
        self.lose_on_suspend = lose_on_suspend
        self.cancel_on_loss = cancel_on_loss
        self._held: dict[trio.lowlevel.Task, Lease] = {}
        #: Per task, the cancel scopes of its open ``async with`` blocks (innermost last).
        self._blocks: dict[trio.lowlevel.Task, list[tuple[trio.CancelScope, Lease]]] = {}

    # ------------------------------------------------------------------ inspection

    async def contenders(self) -> list[str]:
        """Node names of all contenders, in lock order (the holder first)."""
        try:
            children = await self.client.get_children(self.path)
        except NoNodeError:
            return []
        return [c.name for c in sort_contenders(children)]

    async def holder(self) -> str | None:
        """The identifier (node data) of the current holder, or None if nobody holds the lock."""
        for name in await self.contenders():
            try:
                data, _ = await self.client.get_data(f"{self.path}/{name}")
            except NoNodeError:
                continue
            return data.decode("utf-8", "replace")
        return None

    async def is_locked(self) -> bool:
        return bool(await self.contenders())

    @property
    def lease(self) -> Lease | None:
        """The current task's lease, if it holds this lock."""
        return self._held.get(trio.lowlevel.current_task())

    # ------------------------------------------------------------------ acquire / release

    async def acquire(self, blocking: bool = True) -> bool:
        """Acquire the lock; with ``blocking=False`` give up at once (returning False) if it is held."""
        return await self._acquire(blocking) is not None

    async def _acquire(self, blocking: bool) -> Lease | None:
        task = trio.lowlevel.current_task()
        held = self._held.get(task)
        if held is not None and not held.lost:
            held._count += 1
            return held
        attempt = _Attempt(self)
        try:
            lease = await attempt.run(blocking)
        except BaseException:
            with trio.CancelScope(shield=True):
                await attempt.abandon()
            raise
        if lease is None:
            with trio.CancelScope(shield=True):
                await attempt.abandon()
            return None
        self._held[task] = lease
        return lease

    async def release(self) -> None:
        """Release one level of the current task's hold; the last one deletes the lock node."""
        task = trio.lowlevel.current_task()
        lease = self._held.get(task)
        if lease is None:
            raise NotHeldError(f"the current task does not hold {self.path}")
        lease._count -= 1
        if lease._count > 0:
            return
        del self._held[task]
        await self._release_lease(lease)

    async def _release_lease(self, lease: Lease) -> None:
        lease.released = True
        self.client.remove_state_listener(lease._on_state)
        with trio.CancelScope(shield=True):
            await _delete_node(self.client, lease.node, lease.session_id)

    async def __aenter__(self) -> Lease:
        lease = await self._acquire(True)
        assert lease is not None
        scope = trio.CancelScope()
        scope.__enter__()
        lease._scopes.append(scope)
        self._blocks.setdefault(trio.lowlevel.current_task(), []).append((scope, lease))
        if lease.lost and self.cancel_on_loss:
            scope.cancel()
        return lease

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        task = trio.lowlevel.current_task()
        blocks = self._blocks[task]
        scope, lease = blocks.pop()
        if not blocks:
            del self._blocks[task]
        lease._scopes.remove(scope)
        swallowed = bool(scope.__exit__(exc_type, exc, tb))
        if self._held.get(task) is lease:
            with trio.CancelScope(shield=True):
                await self.release()
        if lease.lost and self.cancel_on_loss and (swallowed or exc is None):
            raise LockLostError(self.path, lease.lost_reason or "lost")
        return swallowed and exc is not None and not lease.lost


class _Attempt:
    """One acquire attempt: its uuid, its node once known, and the clean-up if it fails."""

    def __init__(self, mutex: Mutex) -> None:
        self.mutex = mutex
        self.client = mutex.client
        self.uuid, prefix = new_protected_prefix()
        self.node_prefix = f"{mutex.path}/{prefix}"
        self.node: str | None = None
        self.node_session = 0
        self.czxid = 0
        self.create_sent = False

    async def run(self, blocking: bool) -> Lease | None:
        children = await self._create_and_list()
        while True:
            contenders = sort_contenders(children)
            ours = self._find_ours(contenders)
            if ours is None:
                # Our node vanished (deleted by someone, or the session was replaced): start over.
                self.node = None
                children = await self._create_and_list()
                continue
            index = contenders.index(ours)
            if index == 0:
                return await self._grant()
            if not blocking:
                return None
            predecessor = contenders[index - 1]
            try:
                _, _, watch = await self.client.get_data(f"{self.mutex.path}/{predecessor.name}", watch=True)
            except NoNodeError:
                children = await self._list()
                continue
            except ConnectionLossError:
                children = await self._list()
                continue
            event = await watch.wait()
            log.debug("lock %s: predecessor %s: %s", self.mutex.path, predecessor.name, event.type)
            children = await self._list()

    def _find_ours(self, contenders: list[Contender]) -> Contender | None:
        for c in contenders:
            if c.uuid == self.uuid:
                return c
        return None

    async def _list(self) -> list[str]:
        while True:
            try:
                return await self.client.get_children(self.mutex.path)
            except NoNodeError:
                return []
            except ConnectionLossError:
                continue

    async def _create_and_list(self) -> list[str]:
        client = self.client
        data = self.mutex.identifier.encode()
        while True:
            self.create_sent = True
            created, children = await client.pipeline(
                [Create(self.node_prefix, data, ephemeral=True, sequential=True), GetChildren(self.mutex.path)]
            )
            if isinstance(created, NoNodeError):
                await self._ensure_parent()
                continue
            if isinstance(created, ConnectionLossError):
                if await self._recover_lost_create():
                    return await self._list()
                continue
            if isinstance(created, BaseException):
                raise created
            assert isinstance(created, tuple)
            self.node, stat = created
            self.node_session = stat.ephemeral_owner
            self.czxid = stat.czxid
            if isinstance(children, ConnectionLossError):
                return await self._list()
            if isinstance(children, BaseException):
                raise children
            assert isinstance(children, list)
            return children

    async def _recover_lost_create(self) -> bool:
        """After a lost create reply: adopt our node if the server made it in this session."""
        await self.client.wait_connected()
        for c in sort_contenders(await self._list()):
            if c.uuid != self.uuid:
                continue
            path = f"{self.mutex.path}/{c.name}"
            try:
                stat = await self.client.exists(path)
            except ConnectionLossError:
                return await self._recover_lost_create()
            if stat is None:
                continue
            if stat.ephemeral_owner == self.client.session_id:
                log.info("lock %s: adopted %s after a lost create reply", self.mutex.path, c.name)
                self.node, self.node_session, self.czxid = path, stat.ephemeral_owner, stat.czxid
                return True
            await _delete_node(self.client, path, None)
        return False

    async def _ensure_parent(self) -> None:
        parts = self.mutex.path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            try:
                await self.client.create(p, container=True)
            except NodeExistsError:
                pass

    async def _grant(self) -> Lease:
        client = self.client
        assert self.node is not None
        if self.node_session != client.session_id:
            raise ConnectionLossError(self.node, "lock node belongs to an older session")
        lease = Lease(self.mutex, self.node, self.czxid, self.node_session)
        client.add_state_listener(lease._on_state)
        _, _, watch = await client.get_data(self.node, watch=True)
        if self.mutex.lose_on_suspend and client.state is not SessionState.CONNECTED:
            lease._mark_lost(f"session {client.state.value}")

        async def watch_node() -> None:
            w = watch
            while not lease.released and not lease.lost:
                try:
                    event = await w.wait()
                except ZKError as e:
                    lease._mark_lost(f"session ended ({e})")
                    return
                if lease.released:
                    return
                if event.type == EventType.NODE_DELETED:
                    lease._mark_lost("lock node was deleted")
                    return
                try:
                    _, _, w = await client.get_data(self.node or "", watch=True)
                except NoNodeError:
                    lease._mark_lost("lock node was deleted")
                    return

        client.spawn(watch_node, name=f"zklock watch {self.node}")
        self.node = None  # ownership passes to the lease
        return lease

    async def abandon(self) -> None:
        """Remove whatever this attempt created (shielded by the caller)."""
        client = self.client
        if self.node is not None:
            await _delete_node(client, self.node, self.node_session)
            self.node = None
            return
        if not self.create_sent:
            return
        # The create may or may not have reached the server: look for our uuid.
        uuid_ = self.uuid
        path = self.mutex.path

        async def find_and_delete() -> None:
            await client.wait_connected()
            try:
                children = await client.get_children(path)
            except NoNodeError:
                return
            for c in sort_contenders(children):
                if c.uuid == uuid_:
                    await _delete_node(client, f"{path}/{c.name}", None)

        with trio.move_on_after(CLEANUP_TIMEOUT) as scope:
            if client.state.is_connected:
                await find_and_delete()
                return
        if scope.cancelled_caught or not client.state.is_connected:
            _spawn(client, find_and_delete, f"zklock cleanup {path}")


def _spawn(client: Client, fn: object, name: str) -> None:
    try:
        client.spawn(fn, name=name)  # type: ignore[arg-type]
    except ZKError:
        pass


async def _delete_node(client: Client, path: str, session_id: int | None) -> None:
    """Delete a lock node now, or keep trying in the background while the session lives."""

    async def attempt() -> bool:
        try:
            await client.delete(path)
        except NoNodeError:
            pass
        except ConnectionLossError:
            return False
        return True

    if client.state.is_terminal:
        return
    with trio.move_on_after(CLEANUP_TIMEOUT):
        if client.state.is_connected and await attempt():
            return

    async def retry() -> None:
        while not client.state.is_terminal:
            await client.wait_connected()
            if await attempt():
                return

    _spawn(client, retry, f"zklock delete {path}")
