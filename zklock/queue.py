"""What one process knows of one lock path's queue, shared by all its waiters on that path.

Why this is enough to hand a lock over without listing the queue again: sequence numbers are handed
out in order, and a contender's listing comes after its own create (in the same round trip), so every
node below ours is in that listing -- or in any newer listing (a higher child version of the lock
node, which every create and delete under it raises).  Nodes below ours can only disappear.  So the
newest listing, minus the nodes known to be gone, is a superset of the nodes below any waiter: if it
shows nothing that blocks a waiter, nothing does.  Nodes are counted gone only on proof: a deletion
notification, a NoNode reply, or our own successful delete.  (Newest is decided by the child version,
not by the order in which waiters' tasks happen to run.)

One listing per (client, lock path) is kept (memory O(N) per process, whatever the number of local
waiters), sorted lazily, only when a waiter needs to walk it; a waiter queueing finds its blocker in
one pass over its own, unsorted listing.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Sequence

from zkwire import Client

from .naming import Contender, parse_contender, sort_contenders

__all__ = ["SharedQueue", "shared_queue", "nearest_below"]

#: A recipe's rule: does ``other`` (a node below ours) block us?
Blocks = Callable[[Contender], bool]


def nearest_below(
    children: Sequence[str], mine: str, markers: Sequence[str], blocks: Blocks
) -> tuple[bool, Contender | None]:
    """One pass over an unsorted listing: (is ``mine`` there?, the nearest node below it that blocks it)."""
    me = parse_contender(mine, markers)
    if me is None:
        return False, None
    seen = False
    best: Contender | None = None
    key = (me.sequence, me.name)
    for name in children:
        if name == mine:
            seen = True
            continue
        c = parse_contender(name, markers)
        if c is None or (c.sequence, c.name) >= key or not blocks(c):
            continue
        if best is None or (c.sequence, c.name) > (best.sequence, best.name):
            best = c
    return seen, best


class SharedQueue:
    """The newest listing of one lock path and the nodes known gone since it was received."""

    __slots__ = ("__weakref__", "_gone", "_names", "_sorted", "_version", "checked_foreign", "markers", "users")

    def __init__(self, markers: Sequence[str]) -> None:
        self.markers = tuple(markers)
        self._names: Sequence[str] = ()
        self._version = -1
        self._sorted: list[Contender] | None = []
        self._gone: set[str] = set()
        #: Waiters of this process currently relying on this view.
        self.users = 0
        #: Whether a listing was checked for nodes of the other naming family (warned once per view).
        self.checked_foreign = False

    def saw_listing(self, names: Sequence[str], cversion: int) -> None:
        """A listing of the lock node whose child version was ``cversion``; kept if it is the newest."""
        if cversion <= self._version:
            return
        self._names = names
        self._version = cversion
        self._sorted = None

    def saw_gone(self, name: str) -> None:
        """``name`` is known to be deleted (notification, NoNode, or our own delete)."""
        self._gone.add(name)
        view = self._sorted
        if view is None:
            return
        c = parse_contender(name, self.markers)
        if c is None:
            return
        i = bisect.bisect_left(view, (c.sequence, c.name), key=lambda x: (x.sequence, x.name))
        if i < len(view) and view[i].name == name:
            del view[i]

    def _view(self) -> list[Contender]:
        view = self._sorted
        if view is None:
            gone = self._gone
            view = sort_contenders(self._names, self.markers)
            if gone:
                # Names are never reused: what the listing no longer shows need not be remembered.
                self._gone = gone = {c.name for c in view if c.name in gone}
                view = [c for c in view if c.name not in gone]
            self._sorted = view
        return view

    def blocker(self, mine: Contender, blocks: Blocks) -> tuple[bool, Contender | None]:
        """(is ``mine`` still queued as far as we know?, the nearest node below it that blocks it)."""
        view = self._view()
        i = bisect.bisect_left(view, (mine.sequence, mine.name), key=lambda x: (x.sequence, x.name))
        if i == len(view) or view[i].name != mine.name:
            return False, None
        for j in range(i - 1, -1, -1):
            if blocks(view[j]):
                return True, view[j]
        return True, None

    def __len__(self) -> int:
        return len(self._view())


_QUEUES: weakref.WeakKeyDictionary[Client, dict[tuple[str, tuple[str, ...]], SharedQueue]] = weakref.WeakKeyDictionary()


def shared_queue(client: Client, path: str, markers: Sequence[str]) -> SharedQueue:
    """The queue view shared by this process's waiters on ``path`` through ``client``."""
    per_client = _QUEUES.setdefault(client, {})
    key = (path, tuple(markers))
    queue = per_client.get(key)
    if queue is None:
        queue = per_client[key] = SharedQueue(markers)
    return queue


def release_queue(client: Client, path: str, queue: SharedQueue) -> None:
    """A waiter stopped relying on ``queue``; the last one lets it go."""
    queue.users -= 1
    if queue.users <= 0:
        per_client = _QUEUES.get(client)
        if per_client is not None and per_client.get((path, queue.markers)) is queue:
            del per_client[(path, queue.markers)]
