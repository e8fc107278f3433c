"""Follow one node's data or children: async iterators that carry on across reconnects and expiry.

::

    async for node in zkwire.watch_data(zk, "/config"):        # NodeData, or None while missing
        apply(node.data if node else DEFAULT)

    async for children in zkwire.watch_children(stream, "/workers"):   # sorted names, or None
        rebalance(children or [])

Each iterator yields the node's current state first, then the state after each change.  Behind it is a
one-shot watch set by the read itself, so there is no gap between reading and watching; after the
watch fires the node is read again (with a new watch).

* **Reconnects**: one-shot watches survive them (re-registered with the last zxid seen, so a change made
  while disconnected fires them), and a read that fails with ``ConnectionLossError`` is sent again.
* **Expiry**: given a :class:`~zkwire.Sessions` stream (see :func:`zkwire.sessions`) the iterator moves
  to the next session and reads the node again, yielding it only if it differs from the last value
  yielded.  Given a single client, iteration raises ``SessionExpiredError``.
* **Overflow policy: coalescing.**  Nothing is buffered: a slow consumer sees the latest state when it
  asks for the next one, and intermediate states it was too slow for are skipped (ZooKeeper's one-shot
  watches work this way too).  A state is never yielded twice in a row, and no change is missed in the
  sense that matters: what is yielded last is what the server holds, once changes stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from ..errors import AuthFailedError, ClientClosedError, ConnectionLossError, NoNodeError, SessionExpiredError
from ..protocol.records import Stat
from .api import Client
from .continuity import SessionSource, current_client
from .watchers import Watch

__all__ = ["NodeData", "DataWatch", "ChildrenWatch", "watch_data", "watch_children"]


@dataclass(frozen=True, slots=True)
class NodeData:
    """A node as read: its path (as the client sees it), data and Stat."""

    path: str
    data: bytes
    stat: Stat


class _NodeFollower:
    """Shared loop: wait for the watch, re-read with a new watch, yield when the value changed."""

    def __init__(self, source: SessionSource, path: str) -> None:
        self.source = source
        self.path = path
        self._client: Client | None = None
        self._watch: Watch | None = None
        self._started = False
        self._last: object = None

    def __aiter__(self) -> Self:
        return self

    async def _read(self, zk: Client) -> tuple[object, Watch]:
        raise NotImplementedError

    def _key(self, value: object) -> object:
        return value

    async def _next(self) -> object:
        while True:
            try:
                zk = await current_client(self.source, after=None)
            except ClientClosedError:
                if isinstance(self.source, Client):
                    raise
                raise StopAsyncIteration from None  # the sessions block has ended
            if zk is not self._client:
                self._client, self._watch = zk, None  # a new session: read again
            try:
                if self._watch is not None:
                    await self._watch.wait()
                    self._watch = None
                value, self._watch = await self._read(zk)
            except ConnectionLossError:
                continue  # the client waits for the reconnection when the read is sent again
            except (SessionExpiredError, ClientClosedError, AuthFailedError):
                self._watch = None
                if isinstance(self.source, Client):
                    raise
                continue  # the stream opens a new session
            if not self._started or self._key(value) != self._key(self._last):
                self._started = True
                self._last = value
                return value


class DataWatch(_NodeFollower):
    """Async iterator of a node's :class:`NodeData` (None while it does not exist).  See :func:`watch_data`."""

    async def _read(self, zk: Client) -> tuple[object, Watch]:
        try:
            data, stat, watch = await zk.get_data(self.path, watch=True)
            return NodeData(self.path, data, stat), watch
        except NoNodeError:
            pass
        stat_or_none, watch = await zk.exists(self.path, watch=True)
        if stat_or_none is not None:
            # Created between the two reads: its exists watch fires at the next change; read it now.
            data, stat, watch = await zk.get_data(self.path, watch=True)
            return NodeData(self.path, data, stat), watch
        return None, watch

    def _key(self, value: object) -> object:
        if value is None:
            return None
        assert isinstance(value, NodeData)
        return (value.stat.czxid, value.stat.mzxid, value.data)

    async def __anext__(self) -> NodeData | None:
        value = await self._next()
        assert value is None or isinstance(value, NodeData)
        return value


class ChildrenWatch(_NodeFollower):
    """Async iterator of a node's sorted child names (None while it does not exist).  See
    :func:`watch_children`."""

    async def _read(self, zk: Client) -> tuple[object, Watch]:
        try:
            children, stat, watch = await zk.get_children_with_stat(self.path, watch=True)
            return (stat.czxid, children), watch
        except NoNodeError:
            pass
        stat_or_none, watch = await zk.exists(self.path, watch=True)
        if stat_or_none is not None:
            children, stat, watch = await zk.get_children_with_stat(self.path, watch=True)
            return (stat.czxid, children), watch
        return None, watch

    async def __anext__(self) -> list[str] | None:
        value = await self._next()
        if value is None:
            return None
        assert isinstance(value, tuple)
        return list(value[1])


def watch_data(source: SessionSource, path: str) -> DataWatch:
    """Follow ``path``'s data: an async iterator of :class:`NodeData`, or None while the node is missing.

    ``source`` is a :class:`~zkwire.Client` (iteration stops at its expiry) or a :class:`~zkwire.Sessions`
    stream (it carries on with each new session, re-reading the node).  The first value is the current
    state; each next one comes after a change (coalesced: see the module documentation).

    Raises:
        InvalidPathError: from iteration, if ``path`` is not a valid path.
        NoAuthError: from iteration, if the node's ACL forbids reading it.
        SessionExpiredError, ClientClosedError: from iteration, when ``source`` is a client that ended.
        AuthFailedError: from iteration, when the session's credentials are rejected.
    """
    return DataWatch(source, path)


def watch_children(source: SessionSource, path: str) -> ChildrenWatch:
    """Follow ``path``'s children: an async iterator of sorted name lists, or None while it is missing.

    A node deleted and created again counts as a change even with the same children.  Otherwise as
    :func:`watch_data`.

    Raises:
        InvalidPathError: from iteration, if ``path`` is not a valid path.
        NoAuthError: from iteration, if the node's ACL forbids listing it.
        SessionExpiredError, ClientClosedError: from iteration, when ``source`` is a client that ended.
        AuthFailedError: from iteration, when the session's credentials are rejected.
    """
    return ChildrenWatch(source, path)
