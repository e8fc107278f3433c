"""The distributed mutex (see :mod:`zklock.recipe` for the algorithm)."""

from __future__ import annotations

from .naming import KAZOO_LOCK, LOCK_MARKERS, MUTEX
from .recipe import LockRecipe

__all__ = ["Mutex"]


class Mutex(LockRecipe):
    """A fair, reentrant (per trio task) distributed mutex on ``path``.

    ``async with Mutex(client, "/locks/job") as lease:`` acquires, and releases on exit; bound the wait
    with a cancel scope.  ``identifier`` (default ``hostname:pid``) is stored as the node's data so others
    can see who holds the lock.  With ``lose_on_suspend`` (default) a lost connection counts as losing the
    lock; with ``cancel_on_loss`` (default) the ``async with`` body is cancelled on loss and
    :class:`~zklock.LockLostError` is raised whatever the body ended with -- set it to False to poll
    ``lease.lost`` / ``await lease.wait_lost()`` instead.  :class:`~zklock.Lease` says which losses are
    told before anyone else can be granted the lock, and offers writes fenced by the server.

    ``naming`` picks the peers it excludes (README: interoperability matrix):

    * ``"curator"`` (default): nodes ``_c_<uuid>-lock-<seq>``, like Curator's InterProcessMutex, which
      it excludes.  It does **not** exclude kazoo's default recipes (they do not see these nodes), nor
      Curator's read/write lock or LeaderLatch (they ignore ``lock-`` nodes).
    * ``"kazoo"``: nodes ``<uuid hex>__lock__<seq>``, like kazoo's Lock / WriteLock / Election; it
      excludes those three and kazoo's ReadLock.  It does **not** exclude any Curator recipe (Curator
      cannot order these nodes).

    In both namings the mutex waits for every lock node queued before its own, of either family
    (mutexes, writers and readers of zklock, Curator and kazoo), so zklock users of one path exclude
    each other whatever naming each uses.  A path that holds nodes of the other family is logged once
    (a default peer of that family would not see ours).
    """

    event_name: str | None = "mutex"
    curator_marker = MUTEX
    kazoo_marker = KAZOO_LOCK
    markers = LOCK_MARKERS
