"""What one process knows of one lock path's queue, shared by all its waiters on that path.

Why this is enough to hand a lock over without listing the queue again: sequence numbers are handed
out in order, and a listing made after a contender's create (in the same round trip, or sent once the
create's reply has come) shows every node below it that still exists -- as does any newer listing of
the same lock node.  Nodes below ours can only disappear.  So the newest listing, minus the nodes known
to be gone, is a superset of the nodes below any waiter whose node it shows: if it shows nothing that
blocks a waiter, nothing does.  Nodes are counted gone only on proof: a deletion notification, a NoNode
reply, or our own successful delete.  Newest is decided by the lock node's czxid (a lock path deleted
and created again is a new queue) and then its child version (which every create and delete under it
raises), not by the order in which waiters' tasks happen to run.

One listing per (client, lock path) is kept (memory O(N) per process, whatever the number of local
waiters), sorted lazily, only when a waiter needs to walk it; a lone waiter queueing finds its blocker
in one pass over its own, unsorted listing.  Waiters that need a listing made after a point in time
(after their create, after a request failed with the connection) share one:
:meth:`SharedQueue.listing_after` sends one at a time, and every waiter that asked before it was sent is
served by it.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import trio

from zkwire import Client

from .naming import Contender, parse_contender, sort_contenders

__all__ = ["SharedQueue", "shared_queue", "nearest_below"]

#: A recipe's rule: does ``other`` (a node below ours) block us?
Blocks = Callable[[Contender], bool]
#: A listing of the lock node: child names in the server's order, its child version and its czxid.
Listing = tuple[Sequence[str], int, int]
ListingT = TypeVar("ListingT", Listing, Listing | None)


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

    __slots__ = (
        "__weakref__",
        "_fetched",
        "_gone",
        "_in_flight",
        "_names",
        "_sent",
        "_sorted",
        "_version",
        "checked_foreign",
        "listings",
        "markers",
        "users",
    )

    def __init__(self, markers: Sequence[str]) -> None:
        self.markers = tuple(markers)
        self._names: Sequence[str] = ()
        #: (czxid, child version) of the lock node in the listing kept.
        self._version = (0, -1)
        self._sorted: list[Contender] | None = []
        self._gone: set[str] = set()
        #: Listings sent through :meth:`send_listing` (numbered from 1), and the number of the newest
        #: answered.
        self._sent = 0
        self._fetched = 0
        self._in_flight: trio.Event | None = None
        #: Listings received through :meth:`send_listing` (what queueing and recovery cost).
        self.listings = 0
        #: Waiters of this process currently relying on this view.
        self.users = 0
        #: Whether a listing was checked for nodes of the other naming family (warned once per view).
        self.checked_foreign = False

    @property
    def names(self) -> Sequence[str]:
        """The names of the listing kept (in the server's order; nodes known gone included)."""
        return self._names

    def saw_listing(self, names: Sequence[str], cversion: int, parent_czxid: int = 0) -> None:
        """A listing of the lock node whose child version was ``cversion`` (and whose czxid was
        ``parent_czxid``); kept if it is the newest."""
        version = (parent_czxid, cversion)
        if version <= self._version:
            return
        if parent_czxid != self._version[0]:
            self._gone = set()  # another incarnation of the lock path: nothing known of it yet
        self._names = names
        self._version = version
        self._sorted = None

    def mark(self) -> int:
        """A point in time for :meth:`listing_after`: listings sent so far are before it."""
        return self._sent

    @property
    def listing_in_flight(self) -> bool:
        """Whether a listing of the lock node is on its way (a waiter may join it or the next one)."""
        return self._in_flight is not None

    async def listing_after(self, mark: int, fetch: Callable[[], Awaitable[Listing]]) -> None:
        """Make sure the view has seen a listing sent after ``mark`` (see :meth:`mark`).

        One listing is in flight at a time: a waiter that finds one sent after its mark waits for it;
        one that finds an older one in flight waits for it and then sends the next, which serves every
        waiter that asked meanwhile.  If the waiter sending a listing is cancelled or fails, the others
        go on and send their own.
        """
        while self._fetched <= mark:
            flight = self._in_flight
            if flight is not None:
                await flight.wait()
                continue
            await self.send_listing(fetch)

    async def send_listing(self, fetch: Callable[[], Awaitable[ListingT]]) -> ListingT:
        """Run ``fetch``, whose requests list the lock node (with others, in one round trip), as the
        listing in flight; the listing it returns (if any) feeds the view before anyone waiting for it
        runs."""
        self._sent += 1
        number = self._sent
        done = self._in_flight = trio.Event()
        try:
            listing = await fetch()
            if listing is not None:
                names, cversion, czxid = listing
                self.listings += 1
                self.saw_listing(names, cversion, czxid)
                self._fetched = max(self._fetched, number)
            return listing
        finally:
            if self._in_flight is done:
                self._in_flight = None
            done.set()

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
