"""A read/write lock: any number of readers, or one writer.

Nodes are named like Apache Curator's InterProcessReadWriteLock (``_c_<uuid>-__READ__<seq>`` and
``_c_<uuid>-__WRIT__<seq>``, both markers of equal length) with ``naming="curator"`` (default), like
kazoo's ReadLock / WriteLock (``<uuid hex>__rlock__<seq>`` / ``<uuid hex>__lock__<seq>``) with
``naming="kazoo"``; both families, and mutex nodes, share one queue under the lock path.  A reader waits
only for the nearest exclusive node (a writer's or a mutex's) queued before it; a writer waits for its
immediate predecessor, whatever it is.  So readers that arrive after a waiting writer queue behind it
(no writer starvation), and a :class:`~zklock.Mutex` on the same path acts as a writer.
"""

from __future__ import annotations

from zkwire import Client

from .naming import EXCLUSIVE_MARKERS, KAZOO_LOCK, KAZOO_READ, LOCK_MARKERS, READ, WRITE, Contender, Naming
from .recipe import LockRecipe

__all__ = ["ReadWriteLock", "ReadLock", "WriteLock"]


class ReadLock(LockRecipe):
    """The shared side of a :class:`ReadWriteLock` (it takes the same keyword arguments as
    :class:`~zklock.Mutex`)."""

    event_name: str | None = "read"
    curator_marker = READ
    kazoo_marker = KAZOO_READ
    markers = LOCK_MARKERS

    def _blocked_by(self, other: Contender) -> bool:
        return other.marker in EXCLUSIVE_MARKERS


class WriteLock(LockRecipe):
    """The exclusive side of a :class:`ReadWriteLock` (it takes the same keyword arguments as
    :class:`~zklock.Mutex`)."""

    event_name: str | None = "write"
    curator_marker = WRITE
    kazoo_marker = KAZOO_LOCK
    markers = LOCK_MARKERS


class ReadWriteLock:
    """``async with rw.read_lock as lease:`` for shared access, ``async with rw.write_lock:`` exclusive.

    Which peers each side excludes (readers never exclude readers):

    * ``naming="curator"`` (default): the read side excludes Curator's InterProcessReadWriteLock write
      side; the write side excludes both of its sides.  Neither excludes Curator's InterProcessMutex or
      LeaderLatch (they ignore these nodes) nor any of kazoo's default recipes (they do not see them).
    * ``naming="kazoo"``: the read side excludes kazoo's WriteLock only (kazoo's Lock and Election ignore
      readers); the write side excludes kazoo's Lock, ReadLock, WriteLock and Election.  Neither
      excludes any Curator recipe (Curator cannot order these nodes).

    The other arguments are those of :class:`~zklock.Mutex`.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        lose_on_suspend: bool = True,
        cancel_on_loss: bool = True,
        naming: Naming = "curator",
    ) -> None:
        self.read_lock = ReadLock(
            client,
            path,
            identifier=identifier,
            lose_on_suspend=lose_on_suspend,
            cancel_on_loss=cancel_on_loss,
            naming=naming,
        )
        self.write_lock = WriteLock(
            client,
            path,
            identifier=identifier,
            lose_on_suspend=lose_on_suspend,
            cancel_on_loss=cancel_on_loss,
            naming=naming,
        )
