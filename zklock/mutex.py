"""The distributed mutex (see :mod:`zklock.recipe` for the algorithm)."""

from __future__ import annotations

from .naming import MUTEX_MARKERS
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

    Nodes are named like Apache Curator's InterProcessMutex (``_c_<uuid>-lock-<seq>``) and kazoo's
    ``__lock__`` nodes are honoured, so all three exclude each other on one path.
    """

    marker = "lock-"
    markers = MUTEX_MARKERS
