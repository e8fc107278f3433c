"""The op API of the trio client: :class:`Client`, :class:`Transaction` and :func:`open_client`.

Each method builds its request with :class:`~zkwire.sansio.requests.RequestBuilder` (arguments checked,
paths chrooted, reply converted) and sends it by the one send path of
:class:`~zkwire.client.handle.SessionHandle` (the client's base: options, state, life, credentials) to
the client's :class:`~zkwire.client.connection.ConnectionDriver`, which owns the connections, the
reader, the writer and timer, and reconnection (see :mod:`zkwire.client.connection`).  The whole-path
helpers are methods too, delegating to :mod:`zkwire.client.nodes`, which builds and sends its requests
the same way.  :class:`Transaction` stays beside the client: it only collects ops for
:meth:`Client.multi`, and a module of its own would have to import the client it commits through.

Requests issued while the session is suspended wait for the reconnection, within the caller's cancel
scope (use ``trio.move_on_after`` / ``trio.fail_after`` to bound them).  A request in flight when the
connection breaks fails with :class:`~zkwire.errors.ConnectionLossError`: for a write, its outcome is
unknown.  Once the session has expired every request fails with
:class:`~zkwire.errors.SessionExpiredError`; the client never starts a new session by itself (that would
hide the loss of ephemeral nodes and watches) -- open a new client.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, overload

import trio

from ..constants import WatcherType
from ..errors import (
    EnsembleConfigError,
    InvalidArgumentError,
    NoNodeError,
    NoWatcherError,
    ZKError,
)
from ..protocol.records import ACL, Stat
from ..sansio.ensemble import CONFIG_PATH, EnsembleConfig, Member, parse_config
from ..sansio.hosts import HostPort
from ..sansio.moves import DEFAULT_MOVE_SPREAD
from ..sansio.observing import Observer
from ..sansio.ops import Check, Create, Delete, GetChildren, GetData, ReadOp, SetData, WriteOp
from ..sansio.requests import check_watcher_type
from ..sansio.watches import WatchKind
from ..sasl.mechanism import SaslMechanism
from . import nodes
from .aio import require_trio
from .connection import Connect
from .ensemble import host_list, joining_arg, leaving_arg, members_arg
from .groups import task_nursery
from .handle import SessionHandle
from .overloaddoc import document_overloads
from .watchers import PersistentWatch, Watch, WatchedEvent

__all__ = ["Client", "open_client", "Transaction"]

log = logging.getLogger("zkwire.client")


@asynccontextmanager
async def open_client(
    hosts: str,
    *,
    session_timeout: float = 10.0,
    allow_read_only: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    auth: Sequence[tuple[str, bytes | str]] = (),
    sasl: SaslMechanism | None = None,
    max_frame: int | None = None,
    wait_connected: bool = True,
    connect: Connect | None = None,
    follow_ensemble: bool | None = None,
    move_spread: float = DEFAULT_MOVE_SPREAD,
    observers: Sequence[Observer] = (),
) -> AsyncIterator[Client]:
    """Open a ZooKeeper session; leaving the block closes it (closeSession).

    ``hosts`` is a connect string ``h1:p1,h2:p2[/chroot]``.  With ``wait_connected`` (the default) the
    block starts once the session is established; bound that wait with a cancel scope around the
    ``async with``.  ``auth`` credentials (``(scheme, credential)`` pairs) are sent, and each one's
    verdict awaited, before the session reports connected; if the server refuses one, the session ends
    in ``AUTH_FAILED`` and :class:`~zkwire.errors.AuthFailedError` is raised (from ``open_client``, or
    from :meth:`Client.wait_connected` with ``wait_connected=False``).  The session the server had
    created for it then holds nothing and expires on the server by itself.

    ``sasl``: a SASL mechanism (:mod:`zkwire.sasl`: :class:`~zkwire.sasl.DigestMD5`, Kerberos) the
    session authenticates with on every connection, before anything else is sent on it and before the
    session reports connected.  A server that refuses it ends the session in ``AUTH_FAILED``
    (:class:`~zkwire.errors.AuthFailedError` naming the mechanism, the identity and the server's code).
    A server that requires SASL (``enforce.auth.enabled``) of a session without it answers its first
    request with :class:`~zkwire.errors.SessionClosedRequireSaslAuthError`, which ends the session.

    ``follow_ensemble`` (default: on, except under TLS): the client follows the ensemble's membership
    (``/zookeeper/config``, read and watched past any chroot): members added and removed become its host
    list, and when the list changes the session may move to another member so that sessions spread
    evenly; a move is planned (the state stays CONNECTED, no request fails) and happens at a moment drawn
    from the next ``move_spread`` seconds.  See :mod:`zkwire.client.ensemble` and docs/reconfig.rst.

    ``observers``: objects told everything the session does, from its first connection attempt on
    (:mod:`zkwire.observing`; more with :meth:`Client.add_observer`).  They never hold the client up.

    ``connect`` replaces how a connection to one server is opened: an async function taking a
    :class:`~zkwire.sansio.session.HostPort` and returning a connected :class:`trio.abc.Stream`
    (default: TCP, with TLS when ``ssl_context`` is given).  Tests use it to run the client over trio's
    memory streams or a socket pair; it must raise ``OSError`` or ``trio.BrokenResourceError`` when the
    server cannot be reached (see :mod:`zkwire.client.connection`).

    Options are checked before any connection is made (:class:`~zkwire.errors.InvalidArgumentError`
    naming the option): ``session_timeout`` a finite number of seconds from 0.001 to 2147483.647 (an
    int32 of milliseconds on the wire), ``max_frame`` from 1 KiB to 256 MiB.  Whatever goes wrong, the
    block raises one exception, never an exception group of zkwire's making.

    ``max_frame`` also bounds what the client reads: a longer reply is skipped and its request fails
    with :class:`~zkwire.errors.ReplyTooLargeError`; the connection and the session carry on.  A watch
    notification that long is dropped with a warning (see
    :meth:`~zkwire.sansio.session.SessionCore.receive_data`).

    Raises:
        InvalidArgumentError: a malformed connect string or an option out of range (nothing is sent).
        AuthFailedError: the server rejected a credential given with ``auth``, or the ``sasl``
            authentication.
        NotInTrioError: called outside trio (from asyncio, say): see :mod:`zkwire.client.aio`.
    """
    require_trio("zkwire.open_client")  # a clear error from asyncio, with the way in
    client = make_client(
        hosts,
        session_timeout=session_timeout,
        allow_read_only=allow_read_only,
        ssl_context=ssl_context,
        auth=auth,
        sasl=sasl,
        max_frame=max_frame,
        connect=connect,
        follow_ensemble=follow_ensemble,
        move_spread=move_spread,
        observers=observers,
    )
    async with running(client, wait_connected=wait_connected):
        yield client


def make_client(
    hosts: str,
    *,
    session_timeout: float = 10.0,
    allow_read_only: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    auth: Sequence[tuple[str, bytes | str]] = (),
    sasl: SaslMechanism | None = None,
    max_frame: int | None = None,
    connect: Connect | None = None,
    follow_ensemble: bool | None = None,
    move_spread: float = DEFAULT_MOVE_SPREAD,
    observers: Sequence[Observer] = (),
) -> Client:
    """A :class:`Client` with its options checked and ``auth`` queued, not yet running: what
    :func:`open_client` opens (also used to close a session abandoned by an earlier client)."""
    client = Client(
        hosts,
        session_timeout=session_timeout,
        allow_read_only=allow_read_only,
        ssl_context=ssl_context,
        sasl=sasl,
        max_frame=max_frame,
        connect=connect,
        follow_ensemble=follow_ensemble,
        move_spread=move_spread,
        observers=observers,
    )
    if isinstance(auth, str | bytes):
        raise InvalidArgumentError("auth must be a sequence of (scheme, credential) pairs, not a single str")
    for entry in auth:
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise InvalidArgumentError("auth entries must be (scheme, credential) pairs")
        scheme, credential = entry
        client._queue_auth(scheme, credential, required=True)
    return client


@asynccontextmanager
async def running(client: Client, *, wait_connected: bool) -> AsyncIterator[None]:
    """Run ``client``'s tasks for the block, then close its session: what :func:`open_client` does with
    the client it made (also used to close a session abandoned by an earlier client)."""
    async with task_nursery("open_client") as nursery:
        # The client's own tasks run shielded from the caller's cancel scopes (see _task_scope).  What
        # the body raised, the Cancelled of an outer cancel scope and what a background task raised (never
        # by design: that would be a bug) come out as one exception (see task_nursery).
        client._observers.start()
        client._driver.start(nursery)
        if client._follower is not None:
            client.spawn(client._follower.run, name="zkwire ensemble follower")
        try:
            if wait_connected:
                await client.wait_connected()
            yield
        finally:
            with trio.CancelScope(shield=True):
                await client.close()
            client._driver.cancel_tasks()


class Client(SessionHandle):
    """A ZooKeeper session.  Create it with :func:`open_client`.

    Its state, life and credentials (``state``, ``session_id``, :meth:`states`, :meth:`close`,
    :meth:`add_auth`...) come from :class:`~zkwire.client.handle.SessionHandle`; the ops are here.
    """

    # ------------------------------------------------------------------ the API

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        acl: Sequence[ACL] | None = None,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: int | None = None,
    ) -> str:
        """Create a node; returns its path (with the sequence suffix when ``sequential``).

        ``container`` creates a container node (removed by the server once its last child goes);
        ``ttl`` (milliseconds) a TTL node (the server needs extended types enabled).

        Raises:
            NodeExistsError: the node exists.
            NoNodeError: the parent does not exist (under a chroot, the message says when the chroot
                itself is missing).
            NoChildrenForEphemeralsError: the parent is ephemeral.
            NoAuthError: the parent's ACL forbids creating children.
            InvalidPathError, InvalidArgumentError, DataTooLargeError: bad input (nothing is sent).
            InvalidACLError: the server refused ``acl``.
            UnimplementedError: ``ttl`` without extended types on the server.
            ConnectionLossError: the connection broke before the reply came: the node may have been
                created (see :doc:`/retries`).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        op = Create(path, data, acl, ephemeral, sequential, container, ttl)
        created, _ = await self._send(self._requests.create(op))
        return created

    async def create_with_stat(
        self,
        path: str,
        data: bytes = b"",
        *,
        acl: Sequence[ACL] | None = None,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: int | None = None,
    ) -> tuple[str, Stat]:
        """Like :meth:`create` (op create2) and also return the new node's Stat.

        Raises:
            NodeExistsError, NoNodeError, NoAuthError, NoChildrenForEphemeralsError: as :meth:`create`.
            InvalidPathError, InvalidArgumentError, DataTooLargeError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: the node may exist.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        op = Create(path, data, acl, ephemeral, sequential, container, ttl)
        created, stat = await self._send(self._requests.create(op, with_stat=True))
        assert stat is not None  # create2 and the container / TTL ops answer with the Stat
        return created, stat

    async def delete(self, path: str, version: int = -1) -> None:
        """Delete a node; with ``version`` only if its data version matches.

        Raises:
            NoNodeError: the node does not exist.
            NotEmptyError: the node has children (see :meth:`delete_recursive`).
            BadVersionError: ``version`` does not match.
            NoAuthError: the parent's ACL forbids deleting children.
            InvalidPathError, InvalidArgumentError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: the node may be gone.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        await self._send(self._requests.delete(Delete(path, version)))

    @overload
    async def exists(self, path: str, *, watch: Literal[False] = False) -> Stat | None: ...
    @overload
    async def exists(self, path: str, *, watch: Literal[True]) -> tuple[Stat | None, Watch]: ...

    @document_overloads
    async def exists(self, path: str, *, watch: bool = False) -> Stat | tuple[Stat | None, Watch] | None:
        """The node's Stat, or None if it does not exist.  With ``watch=True`` also a :class:`Watch`
        that fires when the node is created, changed or deleted.

        Raises:
            NoAuthError: an ACL forbids it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        w = Watch(path) if watch else None
        stat: Stat | None
        try:
            stat = await self._send(self._requests.exists(path, w))
        except NoNodeError:
            stat = None
        return (stat, w) if w is not None else stat

    @overload
    async def get_data(self, path: str, *, watch: Literal[False] = False) -> tuple[bytes, Stat]: ...
    @overload
    async def get_data(self, path: str, *, watch: Literal[True]) -> tuple[bytes, Stat, Watch]: ...

    @document_overloads
    async def get_data(self, path: str, *, watch: bool = False) -> tuple[bytes, Stat] | tuple[bytes, Stat, Watch]:
        """The node's data (``b""`` for null data) and Stat; with ``watch=True`` also a :class:`Watch`.

        Raises:
            NoNodeError: the node does not exist (no watch is set: use :meth:`exists` to wait for it).
            NoAuthError: the node's ACL forbids reading it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        if watch:
            w = Watch(path)
            data, stat = await self._send(self._requests.get_data(path, w))
            return data, stat, w
        return await self._send(self._requests.get_data(path))

    async def set_data(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Replace the node's data; with ``version`` only if its data version matches.  Returns the new Stat.

        Raises:
            NoNodeError: the node does not exist.
            BadVersionError: ``version`` does not match.
            NoAuthError: the node's ACL forbids writing it.
            InvalidPathError, InvalidArgumentError, DataTooLargeError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: the write may have been
                applied.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.set_data(SetData(path, data, version)))

    @overload
    async def get_children(self, path: str, *, watch: Literal[False] = False, sort: bool = True) -> list[str]: ...
    @overload
    async def get_children(self, path: str, *, watch: Literal[True], sort: bool = True) -> tuple[list[str], Watch]: ...

    @document_overloads
    async def get_children(
        self, path: str, *, watch: bool = False, sort: bool = True
    ) -> list[str] | tuple[list[str], Watch]:
        """Child names, sorted.  With ``watch=True`` also a :class:`Watch` for child changes / deletion.

        ``sort=False`` returns the names in the server's order (no order is defined), saving the sort:
        for 100,000 children that is about half the client's work.

        Raises:
            NoNodeError: the node does not exist (no watch is set).
            NoAuthError: the node's ACL forbids listing it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        w = Watch(path) if watch else None
        children = await self._send(self._requests.get_children(path, w, sort=sort))
        return (children, w) if w is not None else children

    @overload
    async def get_children_with_stat(
        self, path: str, *, watch: Literal[False] = False, sort: bool = True
    ) -> tuple[list[str], Stat]: ...
    @overload
    async def get_children_with_stat(
        self, path: str, *, watch: Literal[True], sort: bool = True
    ) -> tuple[list[str], Stat, Watch]: ...

    @document_overloads
    async def get_children_with_stat(
        self, path: str, *, watch: bool = False, sort: bool = True
    ) -> tuple[list[str], Stat] | tuple[list[str], Stat, Watch]:
        """Child names (sorted unless ``sort`` is false, as :meth:`get_children`) and the node's Stat (op
        getChildren2).

        Raises:
            NoNodeError, NoAuthError, InvalidPathError: as :meth:`get_children`.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        w = Watch(path) if watch else None
        children, stat = await self._send(self._requests.get_children2(path, w, sort=sort))
        return (children, stat, w) if w is not None else (children, stat)

    async def get_acl(self, path: str) -> tuple[list[ACL], Stat]:
        """The node's ACL and Stat.

        Raises:
            NoNodeError: the node does not exist.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.get_acl(path))

    async def set_acl(self, path: str, acl: Sequence[ACL], version: int = -1) -> Stat:
        """Replace the node's ACL; ``version`` is compared with the node's ACL version (aversion).

        Raises:
            NoNodeError: the node does not exist.
            BadVersionError: ``version`` does not match the ACL version.
            NoAuthError: the node's ACL forbids changing it (ADMIN permission).
            InvalidACLError: the server refused ``acl``.
            InvalidPathError, InvalidArgumentError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: it may have been applied.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.set_acl(path, acl, version))

    async def sync(self, path: str = "/") -> str:
        """Wait until the connected server has caught up with the leader (for ``path``).

        Raises:
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.sync(path))

    async def get_ephemerals(self, prefix: str = "/") -> list[str]:
        """Paths of this session's ephemeral nodes under ``prefix`` (sorted).

        Raises:
            InvalidPathError: ``prefix`` is not a valid znode path (nothing is sent).
            UnimplementedError: the server is older than 3.6.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.get_ephemerals(prefix))

    async def get_all_children_number(self, path: str) -> int:
        """Number of all descendants of ``path``.

        Raises:
            NoNodeError: the node does not exist.
            NoAuthError: the node's ACL forbids reading it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            UnimplementedError: the server is older than 3.6.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.get_all_children_number(path))

    async def check_watches(self, path: str, watcher_type: WatcherType = WatcherType.ANY) -> bool:
        """Whether the server holds a watch of ``watcher_type`` on ``path`` for this session.

        Raises:
            InvalidPathError, InvalidArgumentError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        try:
            await self._send(self._requests.check_watches(path, watcher_type))
        except NoWatcherError:
            return False
        return True

    async def remove_watches(self, path: str, watcher_type: WatcherType = WatcherType.ANY) -> None:
        """Remove this session's watches of ``watcher_type`` on ``path``.

        Local watchers of the removed kinds are woken with a DATA_WATCH_REMOVED / CHILD_WATCH_REMOVED /
        PERSISTENT_WATCH_REMOVED event.

        Raises:
            NoWatcherError: the session had no such watch on ``path``.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        request = self._requests.remove_watches(path, watcher_type)
        await self._send(request)
        assert request.path is not None
        for etype, w in self._core.remove_watches(request.path, check_watcher_type(watcher_type)):
            if isinstance(w, PersistentWatch):
                w._fail(NoWatcherError(path, "watch removed"))
            else:
                w._deliver(WatchedEvent(etype, path))

    @asynccontextmanager
    async def add_watch(
        self, path: str, *, recursive: bool = False, max_buffered: int = 10_000
    ) -> AsyncIterator[PersistentWatch]:
        """A persistent watch (addWatch) on ``path``; with ``recursive`` also on all descendants.

        Yields an async iterator of :class:`WatchedEvent`.  It survives reconnects.  Leaving the block
        removes it (on the server too, when no other watch of this client remains on the path).

        Raises:
            NoAuthError: an ACL forbids watching ``path``.
            UnimplementedError: the server is older than 3.6.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended (also from
                the iterator, after the buffered events; :class:`~zkwire.errors.WatchOverflowError`
                when the consumer fell ``max_buffered`` events behind).
        """
        if isinstance(max_buffered, bool) or not isinstance(max_buffered, int) or max_buffered < 1:
            raise InvalidArgumentError(f"max_buffered must be a positive int, not {max_buffered!r}")
        pw = PersistentWatch(path, recursive, max_buffered)
        request = self._requests.add_watch(path, pw, recursive=recursive)
        await self._send(request)
        assert request.watch is not None
        kind, server_path = request.watch.kind, request.watch.path
        try:
            yield pw
        finally:
            core = self._core
            if core.forget_watch(kind, server_path, pw) and core.state.is_connected and not self._driver.closing:
                with trio.CancelScope(shield=True), trio.move_on_after(core.read_timeout):
                    try:
                        await self._send(self._requests.remove_watches(path, WatcherType.ANY))
                    except ZKError as e:
                        log.debug("removing persistent watch on %s: %s", server_path, e)

    @overload
    async def pipeline(self, ops: Iterable[GetData]) -> list[tuple[bytes, Stat] | ZKError]: ...
    @overload
    async def pipeline(self, ops: Iterable[GetChildren]) -> list[list[str] | tuple[list[str], Stat] | ZKError]: ...
    @overload
    async def pipeline(self, ops: Iterable[Create]) -> list[tuple[str, Stat] | ZKError]: ...
    @overload
    async def pipeline(self, ops: Iterable[SetData]) -> list[Stat | ZKError]: ...
    @overload
    async def pipeline(self, ops: Iterable[Delete]) -> list[ZKError | None]: ...
    @overload
    async def pipeline(self, ops: Iterable[WriteOp | ReadOp]) -> list[Any]: ...

    @document_overloads
    async def pipeline(self, ops: Iterable[WriteOp | ReadOp]) -> list[Any]:
        """Send independent requests back to back, then wait for all replies.

        The server applies one session's requests in order, so e.g. a create followed by a getChildren
        sees the created node -- in one round trip.  Unlike :meth:`multi` nothing is atomic: each slot of
        the result holds that op's result or its exception (a :class:`~zkwire.errors.ZKError`, returned,
        not raised): ``(data, stat)`` for GetData, the names for GetChildren (``(names, stat)`` with
        ``with_stat``), ``(path, stat)`` for Create, the new Stat for SetData, None for Delete.  A list of
        one kind of op is typed precisely (``list[tuple[bytes, Stat] | ZKError]`` for GetData...).  More
        than ``max_in_flight`` requests go out in successive bursts.

        Raises:
            InvalidInputError: an op is malformed or not one of Create, Delete, SetData, GetData,
                GetChildren (nothing is sent).
            SessionExpiredError, ClientClosedError: the session has ended (per-op errors are returned).
        """
        return await self._pipeline(ops)

    def transaction(self) -> Transaction:
        """Collect writes to apply atomically: ``txn.create(...); txn.delete(...); await txn.commit()``.

        Raises nothing itself; :meth:`Transaction.commit` raises as :meth:`multi`.
        """
        return Transaction(self)

    async def multi(self, ops: Iterable[WriteOp]) -> list[str | Stat | None]:
        """Apply writes atomically (op multi).

        Returns one result per op: the created path for Create, the new Stat for SetData, None for Delete
        and Check.  If any op fails, nothing is applied and the failing op's error is raised (e.g.
        :class:`~zkwire.errors.NodeExistsError`), with ``error.results`` holding each op's outcome.

        Raises:
            ServerError: the first failing op's error (``NodeExistsError``, ``NoNodeError``,
                ``BadVersionError``...); nothing was applied.
            InvalidInputError: an op is malformed or not a write op (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: the transaction may have
                been applied (all of it, or none).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        request = self._requests.multi(ops)
        if request is None:
            return []
        return await self._send(request)

    async def multi_read(self, ops: Iterable[ReadOp]) -> list[tuple[bytes, Stat] | list[str] | ZKError]:
        """Several reads in one round trip (op multiRead).  Each op succeeds or fails on its own: a
        failed one's slot holds its exception instead of raising.

        Raises:
            InvalidInputError: an op is malformed or not a read op (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        request = self._requests.multi_read(ops)
        if request is None:
            return []
        return await self._send(request)

    async def reconfig(
        self,
        *,
        joining: str | Iterable[Member | str] | None = None,
        leaving: str | int | Iterable[int] | None = None,
        members: str | EnsembleConfig | Iterable[Member | str] | None = None,
        from_config: int | EnsembleConfig = -1,
    ) -> EnsembleConfig:
        """Change the ensemble's membership; returns the new configuration.  Needs ``reconfigEnabled``
        on the servers and the right to write ``/zookeeper/config`` (a super user, or ``skipACL``).

        Incremental: ``joining`` members (:class:`~zkwire.sansio.ensemble.Member` objects or
        ``server.N=host:quorum:election[:role];clientHost:clientPort`` lines; the client address is
        required) and ``leaving`` server ids.  Non-incremental: ``members``, the whole new membership
        (an :class:`~zkwire.sansio.ensemble.EnsembleConfig` or members).  ``from_config``: apply only if
        the current configuration is this version (an int, or a configuration read before; -1: any).
        A string is sent as it is (comma-separated, as zkCli takes it).

        Raises:
            InvalidArgumentError: an argument that cannot be sent (nothing is sent).
            ReconfigDisabledError: the servers do not allow it.
            NoAuthError: the session lacks the rights.
            BadVersionError: the configuration is no longer ``from_config``.
            ReconfigInProgressError: another reconfiguration is under way (try again).
            NewConfigNoQuorumError: the new members are not in sync with the leader yet (try again).
            BadArgumentsError: the change is not valid (an unknown id, a member without client address,
                too few voters left).
            EnsembleConfigError: the server's answer is not a configuration.
            ConnectionLossError: the connection broke before the reply came: it may have been applied
                (the member the session is on may have been the one removed: read the configuration).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        version = from_config.version if isinstance(from_config, EnsembleConfig) else from_config
        request = self._requests.reconfig(joining_arg(joining), leaving_arg(leaving), members_arg(members), version)
        return await self._send(request)

    @overload
    async def get_config(self, *, watch: Literal[False] = False) -> EnsembleConfig: ...
    @overload
    async def get_config(self, *, watch: Literal[True]) -> tuple[EnsembleConfig, Watch]: ...

    @document_overloads
    async def get_config(self, *, watch: bool = False) -> EnsembleConfig | tuple[EnsembleConfig, Watch]:
        """The ensemble's configuration (``/zookeeper/config``, read past any chroot), parsed: its version
        and members; with ``watch=True`` also a :class:`Watch` that fires when it changes.  A standalone
        server answers an empty configuration (version 0, no members).

        Raises:
            NoNodeError: the server keeps no configuration (before 3.5).
            EnsembleConfigError: the node does not hold a configuration (no watch is kept).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        if watch:
            w = Watch(CONFIG_PATH)
            data, stat = await self._send(self._requests.get_config_data(w))
            try:
                return parse_config(data, stat), w
            except EnsembleConfigError:
                self._core.forget_watch(WatchKind.DATA, CONFIG_PATH, w)  # nobody holds it: not kept
                raise
        return await self._send(self._requests.get_config())

    def update_hosts(self, hosts: str | Iterable[str | HostPort], *, move_spread: float | None = None) -> bool:
        """Replace the servers this session connects to (a connect string without a chroot, or
        ``host:port`` items), for an application that manages the list itself (open the client with
        ``follow_ensemble=False``, or the next configuration change replaces the list again).

        The session decides at random whether to move, so that sessions spread evenly over the new list
        (the rule is :func:`~zkwire.sansio.hosts.move_decision`'s), and moves as a planned move at a
        moment drawn from the next ``move_spread`` seconds (default: the client's).  Returns whether it
        moves.  Names are resolved at each connection.

        Raises:
            InvalidArgumentError: a malformed host, an empty list or a chroot (nothing changes).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        if self._core.state.is_terminal or self._driver.closing:
            raise self._core.terminal_error()
        hosts = host_list(hosts)
        spread = self._move_spread if move_spread is None else move_spread
        if isinstance(spread, bool) or not isinstance(spread, int | float) or not 0 <= spread <= 3600:
            raise InvalidArgumentError(f"move_spread must be a number of seconds from 0 to 3600, not {spread!r}")
        moves = self._core.update_hosts(hosts, trio.current_time(), spread)
        self._driver.wake_timer()
        return moves

    @property
    def ensemble(self) -> EnsembleConfig | None:
        """The newest ensemble configuration the client has seen while following it (None: not
        following, or none seen yet)."""
        return None if self._follower is None else self._follower.config

    async def who_am_i(self) -> list[tuple[str | None, str | None]]:
        """The server's view of this session's identities (op whoAmI, ZooKeeper 3.7+).

        Servers before 3.7 answer UnimplementedError and close the connection (the client reconnects).

        Raises:
            UnimplementedError: the server is older than 3.7.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._send(self._requests.who_am_i())

    # ------------------------------------------------------------------ helpers (zkwire.client.nodes)

    async def ensure_path(
        self, path: str, *, container: bool = False, data: bytes = b"", acl: Sequence[ACL] | None = None
    ) -> bool:
        """Create ``path`` and its missing parents; True if ``path`` was created, False if it existed.

        See :func:`zkwire.client.nodes.ensure_path` (``container=True`` makes the created nodes containers).

        Raises:
            InvalidPathError: ``path`` is not a valid znode path.
            NoAuthError: an ACL forbids creating a missing node.
            ConnectionLossError: the connection broke during a request (calling again is safe).
            SessionExpiredError, ClientClosedError: the session has ended.
        """
        return await nodes.ensure_path(self, path, container=container, data=data, acl=acl)

    async def ensure_ephemeral(self, path: str, data: bytes = b"", *, acl: Sequence[ACL] | None = None) -> Stat:
        """Make sure this session owns an ephemeral node at ``path``, creating it and missing parents.

        See :func:`zkwire.client.nodes.ensure_ephemeral` (a lost create reply is handled).

        Raises:
            NodeExistsError: another session owns the node, or it is persistent.
            NoChildrenForEphemeralsError: a parent is ephemeral.
            NoAuthError: an ACL forbids creating the node or a parent.
            InvalidPathError, InvalidArgumentError, DataTooLargeError: bad input (nothing is sent).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await nodes.ensure_ephemeral(self, path, data, acl=acl)

    async def delete_recursive(self, path: str, *, batch: int = 500) -> int:
        """Delete ``path`` and all its descendants; returns the number of nodes deleted (0 if missing).

        See :func:`zkwire.client.nodes.delete_recursive`.

        Raises:
            InvalidArgumentError: ``path`` is ``"/"`` on a client without a chroot.
            NotEmptyError: children kept appearing (other writers) for many rounds.
            NoAuthError: an ACL forbids listing or deleting a node.
            ConnectionLossError: the connection broke during a request (calling again is safe).
            SessionExpiredError, ClientClosedError: the session has ended.
        """
        return await nodes.delete_recursive(self, path, batch=batch)


class Transaction:
    """Writes collected for one atomic :meth:`Client.multi`.  The collecting methods return the
    transaction (they chain) and raise nothing: ops are checked by :meth:`commit`."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.ops: list[WriteOp] = []

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        acl: Sequence[ACL] | None = None,
        ephemeral: bool = False,
        sequential: bool = False,
        container: bool = False,
        ttl: int | None = None,
    ) -> Transaction:
        """Add a create (options as :meth:`Client.create`)."""
        self.ops.append(Create(path, data, acl, ephemeral, sequential, container, ttl))
        return self

    def delete(self, path: str, version: int = -1) -> Transaction:
        """Add a delete (with ``version``: only if the data version matches)."""
        self.ops.append(Delete(path, version))
        return self

    def set_data(self, path: str, data: bytes, version: int = -1) -> Transaction:
        """Add a data write (with ``version``: only if the data version matches)."""
        self.ops.append(SetData(path, data, version))
        return self

    def check(self, path: str, version: int) -> Transaction:
        """Add a check: the transaction applies only if the node's data version is ``version``."""
        self.ops.append(Check(path, version))
        return self

    async def commit(self) -> list[str | Stat | None]:
        """Apply the collected writes atomically (:meth:`Client.multi`).

        Raises:
            ServerError: the first failing op's error; nothing was applied.
            InvalidInputError: an op is malformed (nothing is sent).
            ConnectionLossError: the connection broke before the reply came: it may have been applied.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        return await self._client.multi(self.ops)
