"""An in-memory view of a subtree, kept current from one persistent recursive watch.

::

    async with zkwire.open_tree_cache(zk, "/services") as cache:    # returns once the tree is loaded
        node = cache.get("/services/web/1")           # NodeData or None, no round trip
        names = cache.children("/services/web")
        async for event in cache.events():            # NODE_ADDED / NODE_CHANGED / NODE_REMOVED
            print(event.type.name, event.path)

How it stays correct:

* **Watch before read.**  The persistent recursive watch (addWatch) on the root is set first, then the
  whole tree is read (level by level, pipelined); a change made while reading is notified and the node
  read again afterwards.  The watch also works when the root does not exist yet.
* **Notifications name a path, the cache re-reads it.**  Events that arrive together are coalesced per
  path and the paths re-read in one pipelined burst; a node read as missing is removed with everything
  under it.  Each change is applied once a read shows it, so the cache never holds a state older than one
  it has held (reads on one session are monotonic; on a new session the cache runs ``sync`` first).
* **Reconnects and expiry: resync.**  The server does not replay what a persistent watch missed while
  the client was disconnected, so after every reconnect the whole tree is read again and compared with
  the cache; the differences are applied and reported as ordinary events.  After an expiry (with a
  :class:`~zkwire.Sessions` source) the watch is set on the new session and the same resync runs.  With
  a single client as the source, the cache stops at its expiry and :meth:`TreeCache.events` iterators
  raise the session's error.
* **Overflow.**  If the watch's own buffer overflows (the cache fell ``watch_buffer`` notifications
  behind), the watch is set again and the tree resynced: the view stays correct.  Each
  :meth:`TreeCache.events` iterator holds up to ``max_buffered`` events for its consumer; a consumer that
  falls further behind gets the buffered events and then :class:`~zkwire.errors.WatchOverflowError`
  (the cache itself is unaffected: read it and subscribe again).

Costs: memory for every node's data and Stat; one read per change notification (coalesced); a full
read of the subtree at start, after every reconnect and after an expiry.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Self

import trio

from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidInputError,
    NoNodeError,
    NoWatcherError,
    SessionExpiredError,
    WatchOverflowError,
    ZKError,
)
from ..protocol.records import Stat
from ..sansio.ops import GetChildren, GetData
from ..sansio.paths import validate_path
from ..sansio.session import SessionState
from .aio import require_trio
from .api import Client
from .continuity import SessionSource, current_client
from .groups import task_nursery
from .nodewatch import NodeData
from .watchers import EventBuffer

__all__ = ["TreeCache", "TreeEvent", "TreeEventType", "TreeEvents", "open_tree_cache"]

log = logging.getLogger("zkwire.treecache")


class TreeEventType(Enum):
    """What happened to a node of the cached subtree."""

    #: A node appeared in the cache (created, or found by a resync).
    NODE_ADDED = "added"
    #: A cached node's data or Stat changed.
    NODE_CHANGED = "changed"
    #: A node left the cache (deleted, or found missing by a resync).
    NODE_REMOVED = "removed"
    #: The first full read is done: the cache holds the whole subtree (sent once).
    INITIALIZED = "initialized"


@dataclass(frozen=True, slots=True)
class TreeEvent:
    """A change of the cache: ``node`` is the new state (None for a removal), ``old`` the previous one."""

    type: TreeEventType
    path: str
    node: NodeData | None = None
    old: NodeData | None = None


class TreeEvents(EventBuffer[TreeEvent]):
    """An async iterator of :class:`TreeEvent` (see :meth:`TreeCache.events`)."""

    def __init__(self, cache: TreeCache, max_buffered: int) -> None:
        super().__init__()
        self._cache = cache
        self.max_buffered = max_buffered

    def _deliver(self, event: TreeEvent) -> None:
        self._append_bounded(event, self.max_buffered)

    def _overflow_error(self, limit: int) -> ZKError:
        return WatchOverflowError(f"tree cache of {self._cache.root!r}: consumer fell {limit} events behind")

    def close(self) -> None:
        """Stop receiving events (iteration ends after the buffered ones)."""
        self._cache._subscribers.discard(self)
        self._end(None)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TreeEvent:
        return await self._next()


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent != "/" else f"/{name}"


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


class TreeCache:
    """The cached subtree under ``root``; create it with :func:`open_tree_cache`.

    Reads (:meth:`get`, :meth:`children`, iteration) never touch the network and see the state after the
    last applied change.  A node's data, ``czxid``, ``mzxid`` and ``version`` are current; its
    children-related Stat fields (``cversion``, ``num_children``, ``pzxid``) are as of the last read of
    that node, since a change of children does not notify a recursive watch: use :meth:`children`.
    """

    def __init__(self, source: SessionSource, root: str, *, watch_buffer: int, batch: int) -> None:
        self.source = source
        self.root = validate_path(root)
        self.watch_buffer = watch_buffer
        self.batch = batch
        self._nodes: dict[str, NodeData] = {}
        self._children: dict[str, set[str]] = {}
        self._subscribers: set[TreeEvents] = set()
        self._initialized = trio.Event()
        self._dirty: set[str] = set()
        self._work = trio.Event()
        self._resync_needed = False
        self._error: BaseException | None = None
        #: How many full reads of the tree have been applied (the first load included).
        self.resyncs = 0

    # ------------------------------------------------------------------ reading the view

    @property
    def initialized(self) -> bool:
        """Whether the first full read has been applied."""
        return self._initialized.is_set()

    async def wait_initialized(self) -> None:
        """Wait until the first full read has been applied.

        Raises:
            SessionExpiredError, ClientClosedError, AuthFailedError: the source ended before that.
        """
        await self._initialized.wait()
        if self._error is not None and self.resyncs == 0:
            raise self._error

    def get(self, path: str) -> NodeData | None:
        """The cached node at ``path`` (data and Stat), or None if it is not in the subtree."""
        return self._nodes.get(path)

    def children(self, path: str) -> list[str] | None:
        """Sorted child names of the cached node at ``path``, or None if it is not cached."""
        names = self._children.get(path)
        return sorted(names) if names is not None else None

    def paths(self) -> list[str]:
        """Every cached path, sorted."""
        return sorted(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, path: object) -> bool:
        return path in self._nodes

    def __iter__(self) -> Iterator[NodeData]:
        return iter([self._nodes[p] for p in sorted(self._nodes)])

    def events(self, *, max_buffered: int = 10_000) -> TreeEvents:
        """Subscribe to the cache's changes from now on (read the cache first for the current state).

        The iterator ends when the cache is closed, and raises the session's error when a single-client
        source ends.
        """
        stream = TreeEvents(self, max_buffered)
        if self._error is not None:
            stream._end(self._error)
        else:
            self._subscribers.add(stream)
        return stream

    # ------------------------------------------------------------------ applying changes

    def _emit(self, event: TreeEvent) -> None:
        for s in list(self._subscribers):
            s._deliver(event)

    def _upsert(self, path: str, data: bytes, stat: Stat) -> None:
        old = self._nodes.get(path)
        if old is not None and old.stat.czxid != stat.czxid:
            self._remove(path)  # deleted and created again: another node
            old = None
        if old is not None and stat.mzxid < old.stat.mzxid:
            return  # older than what we hold (cannot happen on one session; never go back)
        node = NodeData(path, data, stat)
        if old is not None and old.stat.mzxid == stat.mzxid and old.data == data:
            # Same content; only the children-related fields can differ: keep the fresher Stat quietly.
            self._nodes[path] = node
            return
        self._nodes[path] = node
        if old is None:
            self._children.setdefault(path, set())
            if path != self.root:
                self._children.setdefault(_parent(path), set()).add(path.rsplit("/", 1)[1])
            self._emit(TreeEvent(TreeEventType.NODE_ADDED, path, node, None))
        else:
            self._emit(TreeEvent(TreeEventType.NODE_CHANGED, path, node, old))

    def _remove(self, path: str) -> None:
        """Remove ``path`` and everything cached under it, deepest first."""
        if path not in self._nodes and path not in self._children:
            return
        for name in sorted(self._children.get(path, ())):
            self._remove(_join(path, name))
        self._children.pop(path, None)
        old = self._nodes.pop(path, None)
        if path != self.root:
            siblings = self._children.get(_parent(path))
            if siblings is not None:
                siblings.discard(path.rsplit("/", 1)[1])
        if old is not None:
            self._emit(TreeEvent(TreeEventType.NODE_REMOVED, path, None, old))

    def _under_root(self, path: str) -> bool:
        return path == self.root or self.root == "/" or path.startswith(self.root + "/")

    # ------------------------------------------------------------------ the maintenance task

    def _on_state(self, state: SessionState) -> None:
        if state is SessionState.SUSPENDED:
            self._resync_needed = True  # what happens while away is not notified
        elif state.is_connected and self._resync_needed:
            self._work.set()

    async def _run(self) -> None:
        previous: Client | None = None
        while True:
            try:
                zk = await current_client(self.source)
            except (SessionExpiredError, ClientClosedError, AuthFailedError, InvalidInputError) as e:
                # A stream's block that ended is a normal end; anything else is the cache's end too.
                normal = isinstance(e, ClientClosedError) and not isinstance(self.source, Client)
                self._finish(None if normal else e)
                return
            new_session = zk is not previous
            previous = zk
            try:
                await self._follow(zk, new_session)
            except WatchOverflowError:
                log.warning("tree cache of %s fell %d notifications behind; resyncing", self.root, self.watch_buffer)
            except NoWatcherError:
                log.warning("tree cache of %s: its watch was removed by someone; setting it again", self.root)
            except ConnectionLossError:
                pass  # set the watch again once reconnected, then resync
            except (SessionExpiredError, ClientClosedError, AuthFailedError) as e:
                if isinstance(self.source, Client):
                    self._finish(e)
                    return
                log.info("tree cache of %s: session ended (%s); resyncing on the next one", self.root, e)

    async def _follow(self, zk: Client, new_session: bool) -> None:
        zk.add_state_listener(self._on_state)
        try:
            async with zk.add_watch(self.root, recursive=True, max_buffered=self.watch_buffer) as watch:
                if new_session:
                    await zk.sync(self.root)  # a new session may have reached a lagging member
                # One error out of the two tasks (the other's is most often the same session error).
                async with task_nursery(f"the tree cache of {self.root}") as nursery:
                    nursery.start_soon(self._pump, watch)
                    await self._resync(zk)
                    while True:
                        await self._work.wait()
                        self._work = trio.Event()
                        if self._resync_needed:
                            await zk.wait_connected()
                            await self._resync(zk)
                        elif self._dirty:
                            await self._refresh(zk)
        finally:
            zk.remove_state_listener(self._on_state)

    async def _pump(self, watch: AsyncIterator[object]) -> None:
        async for event in watch:
            path = getattr(event, "path", None)
            if isinstance(path, str) and self._under_root(path):
                self._dirty.add(path)
                self._work.set()

    async def _refresh(self, zk: Client) -> None:
        """Re-read the paths named by notifications since the last refresh, in pipelined bursts."""
        dirty = sorted(self._dirty, key=lambda p: (_depth(p), p))
        self._dirty = set()
        for start in range(0, len(dirty), self.batch):
            chunk = dirty[start : start + self.batch]
            results = await zk.pipeline([GetData(p) for p in chunk])
            for path, result in zip(chunk, results, strict=True):
                if isinstance(result, NoNodeError):
                    self._remove(path)
                elif isinstance(result, ConnectionLossError | SessionExpiredError | ClientClosedError):
                    self._dirty.update(chunk[chunk.index(path) :])
                    raise result
                elif isinstance(result, ZKError):
                    log.warning("tree cache: cannot read %s: %s", path, result)
                else:
                    assert isinstance(result, tuple)
                    data, stat = result
                    if path == self.root or _parent(path) in self._nodes:
                        self._upsert(path, data, stat)
                    else:
                        self._dirty.add(_parent(path))  # its parent is not known yet: read it too
                        self._dirty.add(path)
                        self._work.set()

    async def _resync(self, zk: Client) -> None:
        """Read the whole subtree again and apply the differences as events."""
        self._resync_needed = False
        self._dirty = set()  # the reads below see everything notified so far
        found: dict[str, tuple[bytes, Stat]] = {}
        level = [self.root]
        while level:
            next_level: list[str] = []
            for start in range(0, len(level), self.batch):
                chunk = level[start : start + self.batch]
                ops: list[GetData | GetChildren] = []
                for p in chunk:
                    ops += [GetData(p), GetChildren(p)]
                results = await zk.pipeline(ops)
                for i, path in enumerate(chunk):
                    got, kids = results[2 * i], results[2 * i + 1]
                    for r in (got, kids):
                        if isinstance(r, BaseException) and not isinstance(r, NoNodeError):
                            raise r
                    if isinstance(got, NoNodeError) or isinstance(kids, NoNodeError):
                        continue  # deleted while we read: its notification is queued
                    assert isinstance(got, tuple) and isinstance(kids, list)
                    found[path] = got
                    next_level.extend(_join(path, name) for name in kids)
            level = next_level
        for path in sorted((p for p in self._nodes if p not in found), key=_depth, reverse=True):
            self._remove(path)
        for path in sorted(found, key=lambda p: (_depth(p), p)):
            if path == self.root or _parent(path) in self._nodes:
                data, stat = found[path]
                self._upsert(path, data, stat)
        self.resyncs += 1
        if not self._initialized.is_set():
            self._initialized.set()
            self._emit(TreeEvent(TreeEventType.INITIALIZED, self.root))
        log.debug("tree cache of %s: resync %d, %d nodes", self.root, self.resyncs, len(self._nodes))

    def _finish(self, error: BaseException | None) -> None:
        self._error = error
        for s in list(self._subscribers):
            s._end(error)
        self._subscribers.clear()
        self._initialized.set()


@asynccontextmanager
async def open_tree_cache(
    source: SessionSource,
    path: str,
    *,
    wait_initialized: bool = True,
    watch_buffer: int = 10_000,
    batch: int = 500,
) -> AsyncIterator[TreeCache]:
    """Cache the subtree under ``path`` while the block runs.

    ``source`` is a :class:`~zkwire.Client` (the cache stops at its expiry) or a
    :class:`~zkwire.Sessions` stream (the cache carries on with each new session, resynced).  With
    ``wait_initialized`` (default) the block starts once the whole subtree has been read; bound that with
    a cancel scope.  ``watch_buffer`` bounds the notifications held before the cache falls back to a
    resync; ``batch`` is how many reads go out per pipelined burst.

    Raises:
        InvalidPathError: ``path`` is not a valid znode path.
        SessionExpiredError, ClientClosedError, AuthFailedError: ``source`` is a client that ended
            before the first read completed.
        NoAuthError: the subtree (or part of it) cannot be read or watched.
    """
    require_trio("zkwire.open_tree_cache")
    cache = TreeCache(source, path, watch_buffer=watch_buffer, batch=batch)
    async with task_nursery("zkwire.open_tree_cache") as nursery:  # one exception out, never a group
        nursery.start_soon(cache._run, name=f"zkwire.client.treecache {path}")
        try:
            if wait_initialized:
                await cache.wait_initialized()
            yield cache
        finally:
            nursery.cancel_scope.cancel()
            for s in list(cache._subscribers):
                s._end(None)
            cache._subscribers.clear()
