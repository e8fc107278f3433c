"""Work queues in the peers' layouts: kazoo's ``Queue`` and ``LockingQueue``, and Curator's
``SimpleDistributedQueue``.

* :class:`Queue` -- items are persistent sequential children of ``path``, taken lowest name first: kazoo's
  ``<path>/entry-<priority:03d>-<seq>`` (``naming="kazoo"``, priority 0-999, lower first, FIFO within a
  priority) or Curator's ``<path>/qn-<seq>`` (``naming="curator"``, no priority).  Taking an item reads
  and deletes it: an item taken by a consumer that dies before using it is lost (as with the peers);
  use :class:`LockingQueue` when that matters.
* :class:`LockingQueue` (kazoo's) -- items are ``<path>/entries/entry-<priority:03d>-<seq>``; a consumer
  locks the lowest free item with an ephemeral ``<path>/taken/<item>`` holding its id, and deletes
  both once done (:meth:`LockingQueue.consume`).  A consumer that dies, or whose session expires, before
  consuming loses its lock with its session, and the item is taken again by another consumer.

Curator's ``DistributedQueue`` is not provided: it frames several items in one node with its own
serializer and takes them under a lock of its own, a design the other queues do not share; its simple
sibling is here instead.

**Exactly once.**  A put whose reply is lost could otherwise be applied twice (kazoo's is), and a take
whose delete reply is lost could return an item that another consumer also got, or lose it.  Puts and
takes are transactions with a witness (:mod:`zklock.witness`): settled exactly once across a lost reply
and, with a :class:`zkwire.Sessions` stream, across expiry.  Witnesses live in ``<path>/zklock-witness``
(a :class:`LockingQueue`, whose peers ignore it) or in the sibling ``<path>-zklock-witness`` (a
:class:`Queue`, whose peers take every child of ``path`` as an item); both are containers.

A :class:`Queue` lists the items when it has tried every item of its last listing (as kazoo's does), so
a take costs a read and a delete; waiting on an empty queue costs one listing per change (the listing
sets the watch).  Bound a blocking ``get()`` with a cancel scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import TracebackType
from typing import Literal, Self

import trio

from zkwire import (
    BadVersionError,
    Client,
    ConnectionLossError,
    Create,
    Delete,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SessionSource,
    Watch,
    current_client,
    validate_path,
)

from .persistent import first_of
from .retrying import repeat
from .witness import Witnessed

__all__ = ["Queue", "LockingQueue", "QueueNaming", "WITNESS_DIRECTORY"]

QueueNaming = Literal["kazoo", "curator"]
#: Where a queue's put and take witnesses live: this name under a LockingQueue's path, this suffix
#: after a Queue's path.
WITNESS_DIRECTORY = "zklock-witness"
#: Errors after which the stream's next session goes on.
_ENDED = (SessionExpiredError,)


def _check_item(path: str, value: object, priority: object) -> None:
    if not isinstance(value, bytes):
        raise InvalidArgumentError(path, f"an item is bytes, not {type(value).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 999:
        raise InvalidArgumentError(path, f"priority must be an int from 0 to 999, not {priority!r}")


class _ItemQueue:
    """What both queues share: the item directory, its names, puts and waiting."""

    def __init__(self, source: SessionSource, path: str, items: str, prefix: str, witnesses: str) -> None:
        self.source = source
        self.path = validate_path(path)
        if self.path == "/":
            raise InvalidArgumentError(path, "the root cannot be a queue")
        self.items = items
        self.prefix = prefix
        self._writes = Witnessed(source, witnesses)

    def _item_path(self, priority: int) -> str:
        raise NotImplementedError

    def _is_item(self, name: str) -> bool:
        return name.startswith(self.prefix)

    async def _ensure(self, zk: Client) -> None:
        await zk.ensure_path(self.items)

    async def put(self, value: bytes, priority: int = 100) -> None:
        """Add an item (exactly once).

        Raises:
            InvalidArgumentError: ``value`` is not bytes, or ``priority`` is not an int from 0 to 999.
        """
        await self.put_all([value], priority)

    async def put_all(self, values: Sequence[bytes], priority: int = 100) -> None:
        """Add several items atomically (all or none; exactly once), in order.

        Raises:
            InvalidArgumentError: a value is not bytes, or ``priority`` is not an int from 0 to 999.
        """
        for value in values:
            _check_item(self.path, value, priority)
        if not values:
            return
        ops = [Create(self._item_path(priority), value, sequential=True) for value in values]
        while True:
            zk = await current_client(self.source)
            try:
                await self._writes.apply(zk, ops)
                return
            except NoNodeError:
                await repeat(self.source, self._ensure)

    async def _listing(self, zk: Client, watch: bool) -> tuple[list[str], Watch | None]:
        """The item names, sorted, and (with ``watch``) the watch of the next change."""
        while True:
            try:
                if not watch:
                    return sorted(n for n in await zk.get_children(self.items) if self._is_item(n)), None
                names, w = await zk.get_children(self.items, watch=True)
                return sorted(n for n in names if self._is_item(n)), w
            except NoNodeError:
                await self._ensure(zk)
            except ConnectionLossError:
                continue

    async def size(self) -> int:
        """How many items are in the queue now (taken ones included, until consumed)."""
        zk = await current_client(self.source)
        return len((await self._listing(zk, False))[0])

    async def aclose(self) -> None:
        """Delete the witness of this object's last put or take."""
        await self._writes.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()


class Queue(_ItemQueue):
    """kazoo's ``Queue`` (``naming="kazoo"``) or Curator's ``SimpleDistributedQueue``
    (``naming="curator"``); see :mod:`zklock.workqueue`.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path`` or ``naming`` (at construction).
    """

    def __init__(self, source: SessionSource, path: str, *, naming: QueueNaming = "kazoo") -> None:
        if naming not in ("kazoo", "curator"):
            raise InvalidArgumentError(path, f"naming must be 'kazoo' or 'curator', not {naming!r}")
        self.naming: QueueNaming = naming
        self._names: list[str] = []  # the newest listing's items not yet tried
        base = validate_path(path).rstrip("/")
        super().__init__(source, path, base, "entry-" if naming == "kazoo" else "qn-", f"{base}-{WITNESS_DIRECTORY}")

    def _item_path(self, priority: int) -> str:
        if self.naming == "kazoo":
            return f"{self.items}/entry-{priority:03d}-"
        return f"{self.items}/qn-"

    async def put_all(self, values: Sequence[bytes], priority: int = 100) -> None:
        if self.naming == "curator" and priority != 100:
            raise InvalidArgumentError(self.path, "Curator's simple queue has no priorities")
        await super().put_all(values, priority)

    async def get(self) -> bytes:
        """Take the first item, waiting for one (bound it with a cancel scope)."""
        while True:
            item = await self._take(wait=True)
            if item is not None:
                return item

    async def get_nowait(self) -> bytes | None:
        """Take the first item, or None if the queue is empty."""
        return await self._take(wait=False)

    async def _take(self, *, wait: bool) -> bytes | None:
        """The first item of the newest listing that is still there.  A listing serves until its items
        are gone (as kazoo's does), so taking costs a read and a delete, not a listing, per item; an item
        put meanwhile waits for the next listing even when its priority is better."""
        while True:
            zk = await current_client(self.source)
            try:
                if not self._names:
                    self._names, changed = await self._listing(zk, wait)
                    if not self._names:
                        if changed is None:
                            return None
                        await changed.wait()
                        continue
                while self._names:
                    path = f"{self.items}/{self._names.pop(0)}"
                    try:
                        data, stat = await zk.get_data(path)
                        # Shielded: a take the server may have applied is settled and its item
                        # returned; a cancellation takes effect after.
                        with trio.CancelScope(shield=True):
                            await self._writes.apply(zk, [Delete(path, stat.version)])
                    except (NoNodeError, BadVersionError):
                        continue  # taken by another consumer
                    return data
            except ConnectionLossError:
                continue
            except _ENDED:
                if isinstance(self.source, Client):
                    raise


class LockingQueue(_ItemQueue):
    """kazoo's ``LockingQueue``; see :mod:`zklock.workqueue`.

    One item at a time per object, as kazoo's: :meth:`get` takes (locks) an item, :meth:`consume`
    deletes it, :meth:`release` hands it back.  ``async with queue.take() as item:`` consumes at the end
    of the block, and releases if the block fails or is cancelled.

    Raises:
        InvalidPathError: a bad ``path`` (at construction).
    """

    def __init__(self, source: SessionSource, path: str) -> None:
        base = validate_path(path).rstrip("/")
        super().__init__(source, path, f"{base}/entries", "entry-", f"{base}/{WITNESS_DIRECTORY}")
        self.taken = f"{base}/taken"
        #: This consumer's id, the data of its lock nodes (kazoo's: 32 hex digits).
        self.id = uuid.uuid4().hex.encode()
        #: The item this object holds: (name, data), or None.
        self.processing: tuple[str, bytes] | None = None
        self._lock_owner = 0
        self._candidates: list[str] = []  # free items of the newest listing, not tried yet

    def _item_path(self, priority: int) -> str:
        return f"{self.items}/entry-{priority:03d}-"

    async def _ensure(self, zk: Client) -> None:
        await zk.ensure_path(self.items)
        await zk.ensure_path(self.taken)

    async def get(self) -> bytes:
        """Lock the first free item and return it, waiting for one (bound it with a cancel scope); the
        item this object holds already, if any.  The free items of one listing are tried in order before
        the queue is listed again, so taking costs a lock, a read and (later) a delete, not a listing."""
        if self.processing is not None:
            return self.processing[1]
        while True:
            zk = await current_client(self.source)
            try:
                if not self._candidates:
                    names, changed = await self._listing(zk, True)
                    try:
                        taken, taken_watch = await zk.get_children(self.taken, watch=True)
                    except NoNodeError:
                        await self._ensure(zk)
                        continue
                    busy = set(taken)
                    self._candidates = [n for n in names if n not in busy]
                    if not self._candidates:
                        assert changed is not None
                        await first_of(changed.wait, taken_watch.wait)
                        continue
                while self._candidates:
                    name = self._candidates.pop(0)
                    # Shielded: once the lock may be ours, the item must end up held (and then
                    # returned) or unlocked; a cancellation takes effect after.
                    with trio.CancelScope(shield=True):
                        data = await self._lock(zk, name)
                    if data is not None:
                        self.processing = (name, data)
                        return data
            except (ConnectionLossError, NoNodeError):
                continue
            except _ENDED:
                self._candidates = []
                if isinstance(self.source, Client):
                    raise

    async def _lock(self, zk: Client, name: str) -> bytes | None:
        """Lock item ``name``; its data, or None if someone else has it (or it is gone)."""
        lock = f"{self.taken}/{name}"
        while True:
            try:
                await zk.create(lock, self.id, ephemeral=True)
                break
            except NodeExistsError:
                try:
                    data, stat = await zk.get_data(lock)
                except (NoNodeError, ConnectionLossError):
                    continue  # released meanwhile, or not known yet: try again
                if data == self.id and stat.ephemeral_owner == zk.session_id:
                    break  # ours: made by a create whose reply was lost
                return None
            except ConnectionLossError:
                continue
        self._lock_owner = zk.session_id
        while True:  # our lock is there: the item is read, however long the connection takes
            try:
                data, _ = await zk.get_data(f"{self.items}/{name}")
            except NoNodeError:
                await self._delete_lock(zk, lock)
                return None
            except ConnectionLossError:
                continue
            return data

    @staticmethod
    async def _delete_lock(zk: Client, lock: str) -> None:
        try:
            await zk.delete(lock)
        except NoNodeError:
            pass

    async def holds_lock(self) -> bool:
        """Whether this object still holds the lock of its item (checked on the server after a ``sync``;
        False once the session that locked it has ended)."""
        if self.processing is None:
            return False
        lock = f"{self.taken}/{self.processing[0]}"
        while True:
            zk = await current_client(self.source)
            if zk.session_id != self._lock_owner:
                return False  # the lock went with the session that made it
            try:
                await zk.sync(lock)
                data, stat = await zk.get_data(lock)
            except NoNodeError:
                return False
            except ConnectionLossError:
                continue
            except SessionExpiredError:
                if isinstance(self.source, Client):
                    raise
                return False
            return data == self.id and stat.ephemeral_owner == zk.session_id

    async def consume(self) -> bool:
        """Delete the held item (exactly once); False if this object no longer holds its lock (its
        session ended: another consumer may have taken the item)."""
        return await self._finish(consume=True)

    async def release(self) -> bool:
        """Hand the held item back to the queue; False if the lock was no longer held."""
        return await self._finish(consume=False)

    async def _finish(self, *, consume: bool) -> bool:
        if self.processing is None or not await self.holds_lock():
            self.processing = None
            return False
        name = self.processing[0]
        lock = f"{self.taken}/{name}"
        ops = [Delete(f"{self.items}/{name}"), Delete(lock)] if consume else [Delete(lock)]
        zk = await current_client(self.source)
        try:
            # Only in the session that holds the lock: sent again in another one, the deletes could
            # remove another consumer's lock (and item).
            await self._writes.apply(zk, ops, same_session=True)
        except NoNodeError:
            return False
        except SessionExpiredError:
            if isinstance(self.source, Client):
                raise
            return False  # not applied, and the lock went with the session
        finally:
            self.processing = None
        return True

    def take(self) -> _Taken:
        """``async with queue.take() as item:`` -- the item consumed at the end of the block, released
        (shielded) if the block fails or is cancelled."""
        return _Taken(self)


class _Taken:
    def __init__(self, queue: LockingQueue) -> None:
        self.queue = queue

    async def __aenter__(self) -> bytes:
        return await self.queue.get()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with trio.CancelScope(shield=True):
            if exc is None:
                await self.queue.consume()
            else:
                await self.queue.release()
