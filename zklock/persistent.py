"""A node that exists while its owner lives: re-created when it is deleted or its session ends.

::

    async with zkwire.sessions(hosts) as stream:
        async with zklock.PersistentNode(stream, "/services/api/host-1", b"10.0.0.1:8080") as node:
            await node.wait_created()
            ...                              # registered, through reconnects and expiries
            await node.set_data(b"10.0.0.1:8081")

The node is kept by a task of the ``async with`` block, as Curator's ``PersistentNode`` does, with these
rules (each tested against the real server):

* **Modes**: ``"ephemeral"`` (default), ``"persistent"``, ``"container"``, or ``"ttl"``: a persistent node
  the server deletes ``ttl`` seconds after its last change once it has no children (extended types must
  be enabled on the server); the keeper writes its data again every ``ttl / 2``, so it lasts while the
  owner lives and goes ``ttl`` after the owner stops touching it, whatever the sessions.  (Curator's
  ``PersistentTtlNode`` gets the same effect with a container and a touched TTL child; the layouts
  differ.)  Missing parents are created as containers.
* **Sequential** nodes are always *protected*: the name carries a fresh uuid (``_c_<uuid>-<name>``,
  Curator's protected form), so that a create whose reply was lost is found again (after a ``sync``) and
  adopted, never made twice.  Once created, the node keeps its name: it is re-created at the same path,
  not with a new sequence number (Curator does the same), so that the members of a group do not see a
  new member each time.
* **Lost create reply**: the next create meets the node; an ephemeral node owned by this session, or a
  persistent one, is adopted (its data set to ours if it differs).
* **Deleted** by someone else: created again at once (an ``exists`` watch is kept on it).
* **Expiry**: given a :class:`zkwire.Sessions` stream, the node is created again in the next session;
  a leftover of one of our earlier sessions still on the server is deleted first.  Given one client,
  the keeper stops at its expiry and :meth:`PersistentNode.wait_created` raises the session's error.
* **Someone else's ephemeral node at our path** is never taken over (Curator's would overwrite its
  data): the keeper logs a warning once and waits for it to go.
* **Data**: :meth:`PersistentNode.set_data` applies new data to the current node and keeps it for
  every re-creation.
* **Leaving** the block deletes the node (shielded; retried in the background while the session lives
  if the connection is down), whatever its mode.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Literal, Self, get_args

import trio

from zkwire import (
    ACL,
    AuthFailedError,
    Client,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SessionSource,
    Stat,
    ZKError,
    current_client,
    task_nursery,
    validate_path,
)

from .recipe import CLEANUP_TIMEOUT, delete_node

__all__ = ["PersistentNode", "PersistentTtlNode", "NodeMode", "PROTECTED_PREFIX", "NodeKeeper"]

log = logging.getLogger("zklock")

NodeMode = Literal["ephemeral", "persistent", "container", "ttl"]
#: The prefix of a protected node's name: ``_c_<uuid>-`` (Curator's).
PROTECTED_PREFIX = "_c_"
#: Errors that end a session for good (the keeper moves to the next session of a stream).
SESSION_ENDED = (SessionExpiredError, ClientClosedError, AuthFailedError)


def protected_name(uuid_: str, name: str) -> str:
    """``_c_<uuid>-<name>``: the name of a protected node before the server appends its sequence."""
    return f"{PROTECTED_PREFIX}{uuid_}-{name}"


async def first_of(*waits: Callable[[], Awaitable[object]]) -> None:
    """Return as soon as one of ``waits`` returns (the others are cancelled); the first error of one of
    them is raised as itself (never in a group)."""
    done = trio.CancelScope()
    errors: list[BaseException] = []

    async def run(wait: Callable[[], Awaitable[object]]) -> None:
        try:
            await wait()
        except Exception as e:  # raised below, outside the nursery
            errors.append(e)
        done.cancel()

    with done:
        async with trio.open_nursery() as nursery:
            for wait in waits:
                nursery.start_soon(run, wait)
    if errors:
        raise errors[0]


class PersistentNode:
    """A node kept in existence by the ``async with`` block; see :mod:`zklock.persistent`.

    ``source`` is a :class:`zkwire.Client` or a :class:`zkwire.Sessions` stream.  ``ttl`` (seconds) only
    with ``mode="ttl"``.  Missing parents are created as containers, or as persistent nodes with
    ``container_parents=False``.

    Raises:
        InvalidPathError: ``path`` is not a valid path (at construction).
        InvalidArgumentError: ``mode`` is unknown, ``ttl`` is missing or given without ``mode="ttl"``,
            a container is asked to be sequential, or ``data`` is not bytes (at construction).
    """

    def __init__(
        self,
        source: SessionSource,
        path: str,
        data: bytes = b"",
        *,
        mode: NodeMode = "ephemeral",
        sequential: bool = False,
        ttl: float | None = None,
        acl: Sequence[ACL] | None = None,
        container_parents: bool = True,
    ) -> None:
        self.source = source
        self.container_parents = container_parents
        self.path = validate_path(path)
        if self.path == "/":
            raise InvalidArgumentError(path, "the root cannot be a PersistentNode")
        if mode not in get_args(NodeMode):
            raise InvalidArgumentError(path, f"mode must be one of {', '.join(get_args(NodeMode))}, not {mode!r}")
        if (mode == "ttl") != (ttl is not None):
            raise InvalidArgumentError(path, "ttl (seconds) is given with mode='ttl', and only then")
        if ttl is not None and not 0 < ttl * 1000 < 2**40:
            raise InvalidArgumentError(path, f"ttl must be a positive number of seconds, not {ttl!r}")
        if mode == "container" and sequential:
            raise InvalidArgumentError(path, "a container node cannot be sequential")
        if not isinstance(data, bytes):
            raise InvalidArgumentError(path, f"data must be bytes, not {type(data).__name__}")
        self.mode: NodeMode = mode
        self.sequential = sequential
        self.ttl = ttl
        self.acl = acl
        self._data = data
        self._parent, _, name = self.path.rpartition("/")
        self._parent = self._parent or "/"
        self._uuid = uuid.uuid4().hex if sequential else ""
        #: Where the node is created: fixed once a sequential node has its name.
        self._target = f"{self._parent.rstrip('/')}/{protected_name(self._uuid, name)}" if sequential else self.path
        self._named = not sequential
        #: The node as it exists now (None while it does not), and the session that owns it.
        self._actual: str | None = None
        self._owner = 0
        #: Sessions of ours that created the node: a node of theirs left on the server is a leftover.
        self._sessions: set[int] = set()
        self._applied = True  # the current node has ``_data``
        self._changed = trio.Event()  # set when the data or the node changes
        self._error: BaseException | None = None
        self._warned_foreign = False
        self._nursery: trio.Nursery | None = None
        self._manager: object = None

    # ------------------------------------------------------------------ public

    @property
    def data(self) -> bytes:
        """The data the node has or will have."""
        return self._data

    @property
    def actual_path(self) -> str | None:
        """The node's path now (a sequential node's name included), or None while it does not exist."""
        return self._actual

    async def wait_created(self) -> str:
        """Wait until the node exists with the current data; returns its path.

        Bound it with a cancel scope.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the single client given as the
                source has ended (a stream carries on with its next session instead).
            NoAuthError, NoChildrenForEphemeralsError, UnimplementedError (TTL nodes without extended
                types), and any other error that stopped the keeper.
        """
        while True:
            if self._error is not None:
                raise self._error
            if isinstance(self.source, Client) and self.source.ended is not None:
                raise self.source.ended
            if self._actual is not None and self._applied and self._live():
                return self._actual
            await self._next_change()

    def _live(self) -> bool:
        """Whether the current node belongs to a session that has not ended (an ephemeral node of an
        ended session is about to go, or gone)."""
        if self.mode != "ephemeral":
            return True
        zk = self.source if isinstance(self.source, Client) else self.source.current
        return zk is not None and zk.ended is None and zk.session_id == self._owner

    async def set_data(self, data: bytes) -> None:
        """Give the node new data: written to the current node (unconditionally) and kept for every
        re-creation.  Returns once the node exists with it (bound the wait with a cancel scope).

        Raises:
            InvalidArgumentError: ``data`` is not bytes; and what :meth:`wait_created` raises.
        """
        if not isinstance(data, bytes):
            raise InvalidArgumentError(self.path, f"data must be bytes, not {type(data).__name__}")
        self._data = data
        self._applied = False
        self._wake()
        await self.wait_created()

    async def __aenter__(self) -> Self:
        if self._nursery is not None:
            raise RuntimeError(f"PersistentNode {self.path} is already running")
        manager = task_nursery(f"zklock.PersistentNode {self.path}")
        self._nursery = await manager.__aenter__()
        self._manager = manager
        self._nursery.start_soon(self._keep, name=f"zklock keep {self.path}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        manager = self._manager
        assert manager is not None
        try:
            return bool(await manager.__aexit__(exc_type, exc, tb))  # type: ignore[attr-defined]
        finally:
            with trio.CancelScope(shield=True):
                await self._remove()

    # ------------------------------------------------------------------ the keeper

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _next_change(self) -> None:
        await self._changed.wait()

    async def _keep(self) -> None:
        ended: Client | None = None
        try:
            while True:
                zk = await current_client(self.source, after=ended)
                try:
                    await self._keep_in(zk)
                except SESSION_ENDED:
                    self._set_absent()
                    if isinstance(self.source, Client):
                        raise
                    ended = zk
        except ClientClosedError as e:
            self._stop(e)  # the stream's block was left
        except ZKError as e:
            log.warning("persistent node %s: the keeper stopped: %s", self.path, e)
            self._stop(e)

    def _stop(self, error: BaseException) -> None:
        self._error = error
        self._set_absent()

    def _set_absent(self) -> None:
        self._actual = None
        self._wake()

    async def _keep_in(self, zk: Client) -> None:
        """Keep the node in ``zk``'s session until the session ends."""
        while True:
            if self._actual is None:
                try:
                    await self._create(zk)
                except ConnectionLossError:
                    pass  # every step of a creation may be taken again: it starts over
                continue
            try:
                if not self._applied:
                    await self._write_data(zk, self._actual)
                    continue
                stat, watch = await zk.exists(self._actual, watch=True)
            except ConnectionLossError:
                continue
            if stat is None or (self.mode == "ephemeral" and stat.ephemeral_owner != zk.session_id):
                self._set_absent()  # deleted (or replaced by someone else's node: judged by _create)
                continue
            changed = self._changed
            if self.ttl is None:
                await first_of(watch.wait, changed.wait)
                continue
            with trio.move_on_after(self.ttl / 2):
                await first_of(watch.wait, changed.wait)
                continue
            self._applied = False  # touched: written again, so that the server does not reap it

    async def _write_data(self, zk: Client, path: str) -> None:
        data = self._data
        try:
            await zk.set_data(path, data)
        except NoNodeError:
            self._set_absent()
            return
        if data is self._data:
            self._applied = True
            self._wake()

    async def _create(self, zk: Client) -> None:
        """Create the node in ``zk``'s session (or adopt ours); returns once ``_actual`` is set."""
        while True:
            data = self._data
            try:
                path, stat = await zk.create_with_stat(
                    self._target,
                    data,
                    acl=self.acl,
                    ephemeral=self.mode == "ephemeral",
                    sequential=not self._named,
                    container=self.mode == "container",
                    ttl=round(self.ttl * 1000) if self.ttl is not None else None,
                )
            except NoNodeError:
                await zk.ensure_path(self._parent, container=self.container_parents)
                continue
            except NodeExistsError:
                if await self._take_existing(zk):
                    return
                continue
            except ConnectionLossError:
                if not self._named and await self._recover_sequential(zk, data):
                    return
                continue  # a non-sequential create is sent again: it meets the node if it was made
            self._adopt(zk, path, stat, data)
            return

    def _adopt(self, zk: Client, path: str, stat: Stat, data: bytes) -> None:
        if not self._named:
            self._target, self._named = path, True  # re-created at this name from now on
        self._actual, self._owner = path, stat.ephemeral_owner
        if stat.ephemeral_owner:
            self._sessions.add(stat.ephemeral_owner)
        self._applied = data is self._data
        self._wake()

    async def _take_existing(self, zk: Client) -> bool:
        """Our path exists: adopt it (ours, or persistent), delete our own leftover, or wait for a
        foreign ephemeral node to go.  Returns whether the node was adopted."""
        try:
            data, stat = await zk.get_data(self._target)
        except NoNodeError:
            return False
        owner = stat.ephemeral_owner
        if self.mode != "ephemeral" or owner == zk.session_id:
            if owner and self.mode != "ephemeral":
                self._warn_foreign(f"an ephemeral node of session 0x{owner:x} is where a {self.mode} node should be")
                await self._wait_gone(zk)
                return False
            self._adopt(zk, self._target, stat, self._data if data == self._data else data)
            return True
        if owner in self._sessions or not owner:
            # A leftover of one of our earlier sessions (or a persistent node where ours is ephemeral):
            # replaced, so that it ends with this session.
            if not owner:
                self._warn_foreign("a persistent node is where an ephemeral node should be: replacing it")
            try:
                await zk.delete(self._target, version=stat.version)
            except NoNodeError:
                pass
            return False
        self._warn_foreign(f"session 0x{owner:x} (not ours) owns it: waiting for it to go")
        await self._wait_gone(zk)
        return False

    async def _wait_gone(self, zk: Client) -> None:
        try:
            stat, watch = await zk.exists(self._target, watch=True)
        except ConnectionLossError:
            return
        if stat is not None:
            await watch.wait()

    def _warn_foreign(self, what: str) -> None:
        if not self._warned_foreign:
            self._warned_foreign = True
            log.warning("persistent node %s: %s", self._target, what)

    async def _recover_sequential(self, zk: Client, data: bytes) -> bool:
        """After a lost create reply: adopt the node carrying our uuid if this session made it (seen after
        a ``sync``); any other node carrying it is deleted."""
        prefix = protected_name(self._uuid, "")
        while True:
            await zk.wait_connected()
            try:
                await zk.sync(self._parent)
                children = await zk.get_children(self._parent)
                adopted = False
                for name in children:
                    if not name.startswith(prefix):
                        continue
                    path = f"{self._parent.rstrip('/')}/{name}"
                    stat = await zk.exists(path)
                    if stat is None:
                        continue
                    ours = stat.ephemeral_owner == zk.session_id or self.mode != "ephemeral"
                    if not adopted and ours:
                        self._adopt(zk, path, stat, data)
                        adopted = True
                    else:
                        await zk.delete(path)
                return adopted
            except NoNodeError:
                return False
            except ConnectionLossError:
                continue

    async def _remove(self) -> None:
        """Delete the node on leaving (the caller shields this)."""
        actual, self._actual = self._actual, None
        zk = self.source if isinstance(self.source, Client) else self.source.current
        if zk is None or zk.state.is_terminal:
            return  # no session: an ephemeral node has gone with it
        if actual is not None:
            await delete_node(zk, actual)
            return
        # Perhaps created by a request whose reply never came.
        with trio.move_on_after(CLEANUP_TIMEOUT):
            try:
                if self._named:
                    stat = await zk.exists(self._target)
                    if stat is not None and (stat.ephemeral_owner == zk.session_id or self.mode != "ephemeral"):
                        await delete_node(zk, self._target)
                else:
                    await self._recover_sequential(zk, self._data)
                    if self._actual is not None:
                        await delete_node(zk, self._actual)
                        self._actual = None
            except ZKError:
                pass


class NodeKeeper:
    """Base of the recipes whose ``async with`` block is one :class:`PersistentNode`'s (a group member,
    a service registration): the block keeps :attr:`node`."""

    node: PersistentNode

    async def __aenter__(self) -> Self:
        await self.node.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        return await self.node.__aexit__(exc_type, exc, tb)


class PersistentTtlNode(NodeKeeper):
    """Curator's ``PersistentTtlNode``, in its layout: ``path`` is a container node holding ``data``, and
    its child ``touch`` a TTL node (``ttl`` seconds) written every ``ttl / 2`` while the block runs.  When
    the owner stops (its process dies, its connections are cut), ``touch`` goes ``ttl`` later and the
    server then removes the empty container: the node outlives its owner by about one TTL, whatever the
    sessions.  Needs extended types on the server.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``ttl`` or ``data`` (at construction).
    """

    #: The name of the touched child (Curator's).
    TOUCH = "touch"

    def __init__(self, source: SessionSource, path: str, ttl: float, data: bytes = b"") -> None:
        self.node = PersistentNode(source, path, data, mode="container")
        self.touch = PersistentNode(source, f"{self.node.path.rstrip('/')}/{self.TOUCH}", b"", mode="ttl", ttl=ttl)

    async def wait_created(self) -> str:
        """Wait until the container and its touched child exist; returns the container's path."""
        path = await self.node.wait_created()
        await self.touch.wait_created()
        return path

    async def set_data(self, data: bytes) -> None:
        """New data for the container node."""
        await self.node.set_data(data)

    async def __aenter__(self) -> Self:
        await self.node.__aenter__()
        try:
            await self.touch.__aenter__()
        except BaseException as e:
            await self.node.__aexit__(type(e), e, e.__traceback__)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            await self.touch.__aexit__(exc_type, exc, tb)  # the child first: the container must be empty
        finally:
            swallowed = await self.node.__aexit__(exc_type, exc, tb)
        return swallowed
