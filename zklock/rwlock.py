"""A read/write lock: any number of readers, or one writer.

Nodes are named like Apache Curator's InterProcessReadWriteLock (``_c_<uuid>-__READ__<seq>`` and
``_c_<uuid>-__WRIT__<seq>``, both markers of equal length) and kazoo's (``__rlock__`` / ``__lock__``),
in one queue under the lock path.  A reader waits only for the nearest writer queued before it; a writer
waits for its immediate predecessor, whatever it is.  So readers that arrive after a waiting writer
queue behind it (no writer starvation).
"""

from __future__ import annotations

from zkwire import Client

from .naming import READ_MARKERS, WRITE_MARKERS, Contender
from .recipe import LockRecipe

__all__ = ["ReadWriteLock", "ReadLock", "WriteLock"]


class ReadLock(LockRecipe):
    marker = "__READ__"
    markers = READ_MARKERS + WRITE_MARKERS

    def _blocked_by(self, other: Contender) -> bool:
        return other.marker in WRITE_MARKERS


class WriteLock(LockRecipe):
    marker = "__WRIT__"
    markers = READ_MARKERS + WRITE_MARKERS


class ReadWriteLock:
    """``async with rw.read_lock as lease:`` for shared access, ``async with rw.write_lock:`` exclusive."""

    def __init__(self, client: Client, path: str, *, identifier: str | None = None, **options: bool) -> None:
        self.read_lock = ReadLock(client, path, identifier=identifier, **options)
        self.write_lock = WriteLock(client, path, identifier=identifier, **options)
