"""Client-side watch bookkeeping, pure: which watchers wait on which server path, and who an event wakes.

The server keeps at most one watch per (connection, path, table) and sends one notification per event, so
the client fans each notification out to every local watcher it registered for that path.  The tables
mirror the server's:

* ``data``: set by getData, and by exists on a node that exists; fired by created, deleted, data changed.
* ``exist``: set by exists on a node that does not exist; fired by created (or deleted/changed after a race).
* ``child``: set by getChildren; fired by children changed, and by the node's own deletion.
* ``persistent``: addWatch mode 0; all four event types for the path itself; not removed by firing.
* ``recursive``: addWatch mode 1; created, deleted, data changed for the path and every descendant.

Watchers are opaque objects to this module; the I/O layer decides how to wake them.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Generic, TypeVar

from ..constants import EventType, OpCode, WatcherType
from ..errors import NoNodeError

__all__ = ["WatchKind", "WatchRegistry", "removed_watch_kinds"]


class WatchKind(Enum):
    DATA = "data"
    EXIST = "exist"
    CHILD = "child"
    PERSISTENT = "persistent"
    RECURSIVE = "recursive"


_ONE_SHOT_FIRED_BY: dict[int, tuple[WatchKind, ...]] = {
    EventType.NODE_CREATED: (WatchKind.DATA, WatchKind.EXIST),
    EventType.NODE_DATA_CHANGED: (WatchKind.DATA, WatchKind.EXIST),
    EventType.NODE_DELETED: (WatchKind.DATA, WatchKind.EXIST, WatchKind.CHILD),
    EventType.NODE_CHILDREN_CHANGED: (WatchKind.CHILD,),
}


def _ancestors(path: str) -> Iterator[str]:
    """``path`` itself, then each ancestor up to "/"."""
    yield path
    while path != "/":
        parent = path.rsplit("/", 1)[0] or "/"
        if parent == path:  # not an absolute path (a malformed notification): no ancestors
            return
        path = parent
        yield path


def removed_watch_kinds(watcher_type: WatcherType) -> list[tuple[WatchKind, EventType]]:
    """The local watch tables a removeWatches of ``watcher_type`` empties, and the event each of their
    one-shot watchers is woken with."""
    kinds: list[tuple[WatchKind, EventType]] = []
    if watcher_type in (WatcherType.DATA, WatcherType.ANY):
        kinds += [(WatchKind.DATA, EventType.DATA_WATCH_REMOVED), (WatchKind.EXIST, EventType.DATA_WATCH_REMOVED)]
    if watcher_type in (WatcherType.CHILDREN, WatcherType.ANY):
        kinds.append((WatchKind.CHILD, EventType.CHILD_WATCH_REMOVED))
    if watcher_type == WatcherType.ANY:
        kinds += [
            (WatchKind.PERSISTENT, EventType.PERSISTENT_WATCH_REMOVED),
            (WatchKind.RECURSIVE, EventType.PERSISTENT_WATCH_REMOVED),
        ]
    return kinds


#: Whatever the I/O layer uses as a watcher.
W = TypeVar("W")


class WatchRegistry(Generic[W]):
    """Server path -> watchers, per table."""

    def __init__(self) -> None:
        self._tables: dict[WatchKind, dict[str, list[W]]] = {kind: {} for kind in WatchKind}

    def add(self, kind: WatchKind, path: str, watcher: W) -> None:
        self._tables[kind].setdefault(path, []).append(watcher)

    def answered(self, op: int, kind: WatchKind, path: str, watcher: W, err: int) -> None:
        """A request of ``op`` carrying a ``kind`` watch on ``path`` was answered with error code ``err``:
        register the watch as the server did.  Only a success arms it, except that exists arms a data
        watch on a node that exists and an exist watch on one that does not (NoNode), whatever table the
        caller named."""
        if op == OpCode.EXISTS:
            if err == 0:
                self.add(WatchKind.DATA, path, watcher)
            elif err == NoNodeError.code:
                self.add(WatchKind.EXIST, path, watcher)
        elif err == 0:
            self.add(kind, path, watcher)

    def removed(self, path: str, watcher_type: WatcherType) -> list[tuple[EventType, W]]:
        """The server removed the session's watches of ``watcher_type`` on ``path`` (a removeWatches
        answered without error): forget the local watchers of the tables it empties, and return each with
        the event it is to be woken with."""
        return [
            (event, w) for kind, event in removed_watch_kinds(watcher_type) for w in self._tables[kind].pop(path, ())
        ]

    def discard(self, kind: WatchKind, path: str, watcher: W) -> bool:
        """Forget one watcher; True if no watcher of this kind is left on the path."""
        table = self._tables[kind]
        watchers = table.get(path)
        if watchers is None:
            return True
        try:
            watchers.remove(watcher)
        except ValueError:
            pass
        if not watchers:
            del table[path]
            return True
        return False

    def has(self, kind: WatchKind, path: str) -> bool:
        return path in self._tables[kind]

    def covered(self, kind: WatchKind, path: str) -> bool:
        """Whether a persistent watch on ``path`` already brings every event a one-shot ``kind`` watch
        would get.  Then the one-shot watch is kept locally only: on 3.8 servers a second watch on the
        same path would turn the persistent one into a one-shot one."""
        if path in self._tables[WatchKind.PERSISTENT]:
            return True
        return kind in (WatchKind.DATA, WatchKind.EXIST) and path in self._tables[WatchKind.RECURSIVE]

    def has_any(self, path: str) -> bool:
        return any(path in table for table in self._tables.values())

    def fire(self, event_type: int, path: str) -> list[W]:
        """Watchers an event wakes; one-shot ones are removed.  Each watcher appears once."""
        woken: list[W] = []
        seen: set[int] = set()

        def take(ws: list[W]) -> None:
            for w in ws:
                if id(w) not in seen:
                    seen.add(id(w))
                    woken.append(w)

        for kind in _ONE_SHOT_FIRED_BY.get(event_type, ()):
            take(self._tables[kind].pop(path, []))
        if event_type in _ONE_SHOT_FIRED_BY:
            take(self._tables[WatchKind.PERSISTENT].get(path, []))
        if event_type != EventType.NODE_CHILDREN_CHANGED:
            recursive = self._tables[WatchKind.RECURSIVE]
            if recursive:
                for p in _ancestors(path):
                    take(recursive.get(p, []))
        return woken

    def paths(self, kind: WatchKind) -> list[str]:
        return list(self._tables[kind])

    def all_watchers(self) -> list[W]:
        seen: dict[int, W] = {}
        for table in self._tables.values():
            for ws in table.values():
                for w in ws:
                    seen.setdefault(id(w), w)
        return list(seen.values())

    def clear(self) -> None:
        for table in self._tables.values():
            table.clear()

    def __bool__(self) -> bool:
        return any(self._tables.values())

    def beyond(self, path: str) -> bool:
        """Some watch is registered on a path other than ``path`` (five table checks, in a loop rather than
        ``any()`` over a generator: it is on the request path)."""
        for table in self._tables.values():  # noqa: SIM110
            if table and (len(table) > 1 or path not in table):
                return True
        return False
