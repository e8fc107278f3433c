"""The trio client: a thin I/O shell around :class:`~zkwire.sansio.session.SessionCore`.

Tasks (all owned by :func:`open_client`'s nursery):

* the *connection manager* walks the host list, opens TCP (and TLS), and reads each connection in turn:
  it feeds received bytes to the core, wakes the callers whose replies came, and reports the
  connection's end to the core;
* a *timer* sleeps until the core's next deadline (ping, read timeout, client-side expiry); it is also
  the *writer* that sends, in one send, what several tasks queued in the same scheduling round;
* in read-only mode, a *prober* looks for a read-write server.


The request path avoids task switches where it can.  A lone request (nothing else in flight) is written
by its caller with a non-blocking send; on a plain TCP connection that caller then also reads the socket
itself until its reply has come (the reader steps aside meanwhile and takes over again afterwards), so
a sequential request costs one scheduler pass instead of two.  Frames are written whole or not at all:
a send that would block continues in a shielded loop.

Requests issued while the session is suspended wait for the reconnection, within the caller's cancel
scope (use ``trio.move_on_after`` / ``trio.fail_after`` to bound them).  A request in flight when the
connection breaks fails with :class:`~zkwire.errors.ConnectionLossError`: for a write, its outcome is
unknown.  Once the session has expired every request fails with
:class:`~zkwire.errors.SessionExpiredError`; the client never starts a new session by itself (that would
hide the loss of ephemeral nodes and watches) -- open a new client.
"""

from __future__ import annotations

import functools
import logging
import random
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, overload

import trio

from ..constants import AddWatchMode, EventType, KeeperState, OpCode, WatcherType
from ..errors import (
    ClientClosedError,
    ConnectionLossError,
    DataTooLargeError,
    InvalidArgumentError,
    NoNodeError,
    NoWatcherError,
    ServerError,
    ZKError,
    error_for_code,
)
from ..protocol.multi import MultiOp, MultiRequest, MultiResponse
from ..protocol.records import (
    ACL,
    AddWatchRequest,
    CheckVersionRequest,
    CheckWatchesRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    ReconfigRequest,
    Record,
    RemoveWatchesRequest,
    SetACLRequest,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
    Stat,
    SyncRequest,
    SyncResponse,
    WhoAmIResponse,
)
from ..sansio.hosts import parse_connect_string
from ..sansio.ops import (
    Check,
    Create,
    Delete,
    GetChildren,
    GetData,
    ReadOp,
    SetData,
    WriteOp,
    check_acl,
    check_data,
    check_version,
    create_op,
)
from ..sansio.options import check_max_frame, check_session_timeout
from ..sansio.paths import join_chroot, strip_chroot, validate_path
from ..sansio.session import (
    WATCH_FRAME_OVERHEAD,
    AuthResult,
    DropConnection,
    Event,
    HostPort,
    Reply,
    SessionCore,
    SessionState,
    StateChanged,
    WatchNotification,
    WatchRequest,
)
from ..sansio.watches import WatchKind
from .aio import require_trio
from .connectlog import ConnectFailureLog
from .nodes import with_chroot_hint
from .watchers import PersistentWatch, StateStream, Watch, WatchedEvent

__all__ = ["Client", "open_client", "Transaction"]

log = logging.getLogger("zkwire.client")

#: A connection that ends sooner than this after it was opened, without answering any request, counts
#: as a failed attempt (back-off) even when its handshake succeeded: a server that accepts and drops
#: every session is not hammered.
SHORT_CONNECTION = 1.0


class _Call:
    """Where the reader leaves a reply for the task waiting on it."""

    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.reply: Reply | AuthResult | None = None


@asynccontextmanager
async def open_client(
    hosts: str,
    *,
    session_timeout: float = 10.0,
    allow_read_only: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    auth: Sequence[tuple[str, bytes | str]] = (),
    max_frame: int | None = None,
    wait_connected: bool = True,
) -> AsyncIterator[Client]:
    """Open a ZooKeeper session; leaving the block closes it (closeSession).

    ``hosts`` is a connect string ``h1:p1,h2:p2[/chroot]``.  With ``wait_connected`` (the default) the
    block starts once the session is established; bound that wait with a cancel scope around the
    ``async with``.  ``auth`` credentials (``(scheme, credential)`` pairs) are sent, and each one's
    verdict awaited, before the session reports connected; if the server refuses one, the session ends
    in ``AUTH_FAILED`` and :class:`~zkwire.errors.AuthFailedError` is raised (from ``open_client``, or
    from :meth:`Client.wait_connected` with ``wait_connected=False``).  The session the server had
    created for it then holds nothing and expires on the server by itself.

    Options are checked before any connection is made (:class:`~zkwire.errors.InvalidArgumentError`
    naming the option): ``session_timeout`` a finite number of seconds from 0.001 to 2147483.647 (an
    int32 of milliseconds on the wire), ``max_frame`` from 1 KiB to 256 MiB.  Whatever goes wrong, the
    block raises one exception, never an exception group of zkwire's making.

    Raises:
        InvalidArgumentError: a malformed connect string or an option out of range (nothing is sent).
        AuthFailedError: the server rejected a credential given with ``auth``.
        NotInTrioError: called outside trio (from asyncio, say): see :mod:`zkwire.client.aio`.
    """
    require_trio("zkwire.open_client")  # a clear error from asyncio, with the way in
    client = Client(
        hosts,
        session_timeout=session_timeout,
        allow_read_only=allow_read_only,
        ssl_context=ssl_context,
        max_frame=max_frame,
    )
    if isinstance(auth, str | bytes):
        raise InvalidArgumentError("auth must be a sequence of (scheme, credential) pairs, not a single str")
    for entry in auth:
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise InvalidArgumentError("auth entries must be (scheme, credential) pairs")
        scheme, credential = entry
        client._queue_auth(scheme, credential, required=True)
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            # The client's own tasks run shielded from the caller's cancel scopes (see _task_scope).
            client._nursery = nursery
            nursery.start_soon(client._manage_connections)
            nursery.start_soon(client._run_timer)
            try:
                if wait_connected:
                    await client.wait_connected()
                yield client
            except BaseException as e:
                body_error = e
                raise
            finally:
                with trio.CancelScope(shield=True):
                    await client.close()
                client._cancel_tasks()
    except BaseExceptionGroup as group:
        # The nursery wraps what the body raised, the Cancelled of an outer cancel scope, and what a
        # background task raised (never by design: that would be a bug).  Hand the user one exception.
        raise _single_exception(group, body_error) from None


def _single_exception(group: BaseExceptionGroup[BaseException], body_error: BaseException | None) -> BaseException:
    """One exception for the caller of open_client, never a group made by zkwire.

    The body's own exception is kept whole (a group the body raised itself is the user's).  Cancelled
    only when nothing else was raised.  A background task's failure comes first: whatever the body
    raised afterwards was a consequence of it (the others are named in its notes).
    """
    leaves = list(_leaves(group, body_error))
    real = [e for e in leaves if not isinstance(e, trio.Cancelled)]
    if not real:
        return leaves[0]
    background = [e for e in real if e is not body_error]
    chosen = background[0] if background else real[0]
    for other in real:
        if other is not chosen:
            chosen.add_note(f"also raised in open_client: {other!r}")
    return chosen


def _leaves(exc: BaseException, keep: BaseException | None) -> Iterable[BaseException]:
    if keep is not None and _same(exc, keep):
        yield keep
    elif isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner, keep)
    else:
        yield exc


def _same(exc: BaseException, other: BaseException) -> bool:
    """``exc`` is ``other``, or a copy of the group ``other`` (trio re-creates groups it passes on)."""
    if exc is other:
        return True
    if not (isinstance(exc, BaseExceptionGroup) and isinstance(other, BaseExceptionGroup)):
        return False
    mine, theirs = exc.exceptions, other.exceptions
    return len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs, strict=True))


class Client:
    """A ZooKeeper session.  Create it with :func:`open_client`."""

    #: Requests in flight on one connection at most; more wait (in their caller's cancel scope) until
    #: replies make room.  The server stops reading a connection with ~1,000 requests outstanding and
    #: buffers every reply it owes, so an unbounded burst costs it memory and the client liveness.
    max_in_flight = 1000

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout: float = 10.0,
        allow_read_only: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        max_frame: int | None = None,
    ) -> None:
        host_list, chroot = parse_connect_string(hosts)
        session_timeout = check_session_timeout(session_timeout)
        kwargs: dict[str, Any] = {}
        if max_frame is not None:
            kwargs["max_frame"] = check_max_frame(max_frame)
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise InvalidArgumentError(f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}")
        self._core = SessionCore(
            host_list,
            session_timeout=session_timeout,
            chroot=chroot,
            allow_read_only=allow_read_only,
            **kwargs,
        )
        self._chroot = chroot
        self._ssl_context = ssl_context
        self._stream: trio.abc.Stream | None = None
        self._transport: trio.SocketStream | None = None
        #: A duplicate of a plain TCP connection's socket, for writes that complete without blocking.
        self._raw: socket.socket | None = None
        self._conn_scope: trio.CancelScope | None = None
        self._connection_ended = trio.Event()
        self._writing = False
        #: The raw socket a caller is reading its own reply from (the reader task steps aside meanwhile).
        self._socket_reader: socket.socket | None = None
        self._reader_scope: trio.CancelScope | None = None
        self._reader_resume = trio.Event()
        self._state_changed = trio.Event()
        self._timer_wakeup = trio.Event()
        #: Set when replies made room below ``max_in_flight`` for a caller waiting to send.
        self._room = trio.Event()
        self._room_wanted = False
        self._state_streams: list[StateStream] = []
        self._state_listeners: list[Callable[[SessionState], None]] = []
        self._nursery: trio.Nursery | None = None
        self._task_scopes: set[trio.CancelScope] = set()
        self._tasks_cancelled = False
        self._closing = False
        #: Connections in a row that ended within SHORT_CONNECTION of being opened, unanswered.
        self._short_connections = 0
        #: Requests answered successfully so far (tells a connection that served from one that did not).
        self._answered = 0

    # ------------------------------------------------------------------ public attributes

    @property
    def state(self) -> SessionState:
        return self._core.state

    @property
    def session_id(self) -> int:
        return self._core.session_id

    @property
    def session_timeout(self) -> float | None:
        """The negotiated session timeout in seconds (None before the first connection)."""
        return self._core.negotiated_timeout

    @property
    def last_zxid(self) -> int:
        return self._core.last_zxid

    @property
    def connected_host(self) -> HostPort | None:
        return self._core.current_host if self._core.state.is_connected else None

    @property
    def chroot(self) -> str:
        return self._chroot

    def states(self) -> StateStream:
        """An async iterator of session states, starting with the current one; ends after a terminal one."""
        stream = StateStream(self._core.state)
        if not self._core.state.is_terminal:
            self._state_streams.append(stream)
        return stream

    def add_state_listener(self, listener: Callable[[SessionState], None]) -> None:
        """Call ``listener(new_state)`` on every state change, synchronously, from the task that saw it.

        For code that must react before anything else runs (the lock recipes cancel a lock holder's work
        this way).  The listener must not block or raise.  Most applications want :meth:`states`.
        """
        self._state_listeners.append(listener)

    def remove_state_listener(self, listener: Callable[[SessionState], None]) -> None:
        """Stop calling ``listener`` (see :meth:`add_state_listener`); unknown listeners are ignored."""
        try:
            self._state_listeners.remove(listener)
        except ValueError:
            pass

    def spawn(self, async_fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``async_fn()`` in the client's own task group; it is cancelled when the client closes.

        Its exceptions are logged, never propagated (the client's tasks must not fail).

        Raises:
            ClientClosedError: the client is closing or not running.
        """
        if self._nursery is None or self._closing:
            raise ClientClosedError("client is not running")

        async def guarded() -> None:
            scope = self._task_scope()
            try:
                with scope:
                    await async_fn()
            except ZKError as e:
                log.debug("background task %s ended: %r", name or async_fn, e)
            except Exception:
                log.exception("background task %s failed", name or async_fn)
            finally:
                self._task_scopes.discard(scope)

        self._nursery.start_soon(guarded, name=name)

    def _task_scope(self) -> trio.CancelScope:
        """A scope for one of the client's own tasks, shielded from the caller's cancel scopes.

        When a deadline cancels the ``open_client`` block, the block's shielded clean-up (releasing a
        lock, deleting a node) still has a working session; the tasks end when the block has been left
        and the session closed (:meth:`_cancel_tasks`).
        """
        scope = trio.CancelScope(shield=True)
        if self._tasks_cancelled:
            scope.cancel()
        self._task_scopes.add(scope)
        return scope

    def _cancel_tasks(self) -> None:
        self._tasks_cancelled = True
        for scope in self._task_scopes:
            scope.cancel()

    async def wait_for_state(self, *states: SessionState) -> SessionState:
        """Wait until the session is in one of ``states``; return it.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended first (unless that
                terminal state is one of ``states``).
        """
        while self._core.state not in states:
            if self._core.state.is_terminal:
                raise self._core._terminal_error()
            await self._state_changed.wait()
        return self._core.state

    async def wait_connected(self) -> None:
        """Wait until the session is connected (read-write, or read-only when allowed).

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended first.
        """
        await self.wait_for_state(SessionState.CONNECTED, SessionState.READ_ONLY)

    # ------------------------------------------------------------------ connection management

    async def _manage_connections(self) -> None:
        core = self._core
        with self._task_scope():
            while not core.state.is_terminal and not self._closing:
                delay = max(core.reconnect_delay(), self._short_connection_delay())
                if delay:
                    await trio.sleep(delay)
                host = core.next_host()
                opened, answered = trio.current_time(), self._answered
                stream = await self._open_stream(host)
                if stream is None:
                    core.connection_failed()
                    continue
                await self._run_connection(host, stream)
                if trio.current_time() - opened < SHORT_CONNECTION and self._answered == answered:
                    self._short_connections += 1
                else:
                    self._short_connections = 0

    def _short_connection_delay(self) -> float:
        """Back-off for connections that keep ending right after they were made (the core's own back-off
        only counts attempts that never reached a session): doubling from 50 ms up to 1 s, jittered."""
        n = self._short_connections
        if n == 0:
            return 0.0
        base = min(1.0, 0.05 * 2 ** min(n - 1, 5))
        return random.uniform(base / 2, base)

    async def _open_stream(self, host: HostPort) -> trio.abc.Stream | None:
        timeout = self._core.connect_timeout
        tcp: trio.SocketStream | None = None
        try:
            with trio.move_on_after(timeout):
                tcp = await trio.open_tcp_stream(host.host, host.port)
                tcp.setsockopt(6, 1, 1)  # TCP_NODELAY
                if self._ssl_context is None:
                    self._transport = tcp
                    sock = tcp.socket
                    self._raw = socket.fromfd(sock.fileno(), sock.family, sock.type)
                    self._raw.setblocking(False)
                    return tcp
                tls = trio.SSLStream(tcp, self._ssl_context, server_hostname=host.host)
                await tls.do_handshake()
                self._transport = tcp
                return tls
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as e:
            self._connect_log.failed(host, e, len(self._core.hosts))
        if tcp is not None:
            await trio.aclose_forcefully(tcp)
        return None

    async def _run_connection(self, host: HostPort, stream: trio.abc.Stream) -> None:
        core = self._core
        self._connection_ended = trio.Event()
        self._connect_log.succeeded(host)
        try:
            core.connection_made(host, trio.current_time())
        except ZKError as e:
            # Counted like any failed attempt: the next one waits (back-off), never a tight loop.
            log.warning("cannot start a handshake with %s: %s", host, e)
            core.connection_failed()
            await trio.aclose_forcefully(stream)
            return
        self._stream = stream
        self._wake_timer()
        try:
            with trio.CancelScope() as self._conn_scope:
                await self._flush()
                await self._read_loop(stream)
        finally:
            self._stream = None
            self._conn_scope = None
            with trio.CancelScope(shield=True):
                raw, self._raw = self._raw, None
                if raw is not None:
                    trio.lowlevel.notify_closing(raw)
                    raw.close()
                assert self._transport is not None
                await trio.aclose_forcefully(self._transport)
            self._dispatch(core.connection_lost(trio.current_time()))
            self._connection_ended.set()
            self._wake_timer()

    async def _read_loop(self, stream: trio.abc.Stream) -> None:
        core = self._core
        raw = self._raw  # plain TCP: read the socket directly (fewer frames and passes than the stream)
        try:
            while True:
                if self._socket_reader is not None:
                    # A caller reads its own reply; it wakes us when it is done.
                    self._reader_resume = trio.Event()
                    await self._reader_resume.wait()
                    continue
                if raw is not None and self._raw is not raw:
                    return  # the connection was dropped (and the socket closed) meanwhile
                with trio.CancelScope() as scope:
                    self._reader_scope = scope
                    if raw is None:
                        data = await stream.receive_some(65536)
                    else:
                        await trio.lowlevel.wait_readable(raw)
                self._reader_scope = None
                if scope.cancelled_caught or self._socket_reader is not None:
                    # A caller took the socket (no data is lost: recv had not run).  Also when our
                    # wait had already ended: what is there is left to the caller, which waits for
                    # the socket and would not be woken if we took its reply.
                    continue
                if raw is not None:
                    try:
                        data = raw.recv(65536)
                    except BlockingIOError:
                        continue
                if not data:
                    log.log(
                        logging.DEBUG if self._closing else logging.INFO,
                        "server %s closed the connection",
                        core.current_host,
                    )
                    break
                self._dispatch(core.receive_data(data, trio.current_time()))
                if core._out:
                    await self._flush()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as e:
            log.info("connection to %s broke: %s", core.current_host, e)
        self._drop_connection()

    def _drop_connection(self) -> None:
        """End the current connection now: the core learns at once (so no request is sent into a dying
        socket and waiters fail fast), then the connection's tasks are cancelled."""
        self._stream = None
        raw = self._raw
        if raw is not None:
            self._raw = None
            trio.lowlevel.notify_closing(raw)  # wakes a caller waiting on it
            raw.close()
        if self._conn_scope is not None:
            self._conn_scope.cancel()
        self._dispatch(self._core.connection_lost(trio.current_time()))

    async def _flush(self, *, whole_burst: bool = False) -> None:
        """Write everything the core has queued.

        A lone request (nothing else in flight) is written at once by its caller: on a plain TCP
        connection with a non-blocking send, so the sequential path has no task switch.  When other
        requests are already in flight, the timer task (which is also the writer) is woken instead: it
        runs after every task made runnable in the same scheduling round, so a burst leaves in one send.
        ``whole_burst``: the caller has queued its whole burst (:meth:`pipeline`); write it now.
        """
        if self._writing:
            return
        stream = self._stream
        if stream is None:
            return
        if self._core.outstanding > 1 and not whole_burst:
            self._timer_wakeup.set()  # the timer task writes the burst
            return
        await self._write_now(stream)

    async def _write_now(self, stream: trio.abc.Stream) -> None:
        """Write what is queued: a non-blocking send first, then a shielded loop for the rest.

        The loop is shielded from the caller's cancellation (a frame is written whole or not at all),
        but not unbounded: a server that takes nothing for the read timeout loses the connection.
        """
        raw = self._raw
        if raw is not None:
            data = self._core.data_to_send()
            if not data:
                return
            try:
                sent = raw.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as e:
                log.info("write to %s failed: %s", self._core.current_host, e)
                self._drop_connection()
                return
            if sent == len(data):
                return
            self._core.push_front(data[sent:])
        self._writing = True
        try:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + self._core.read_timeout) as scope:
                while True:
                    data = self._core.data_to_send()
                    if not data:
                        break
                    await stream.send_all(data)
            if scope.cancelled_caught:
                log.info("write to %s stalled for %.2fs", self._core.current_host, self._core.read_timeout)
                self._drop_connection()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as e:
            log.info("write to %s failed: %s", self._core.current_host, e)
            self._drop_connection()
        finally:
            self._writing = False

    def _wake_timer(self) -> None:
        self._timer_wakeup.set()

    async def _run_timer(self) -> None:
        core = self._core
        with self._task_scope():
            while not core.state.is_terminal:
                self._timer_wakeup = trio.Event()
                with trio.move_on_at(core.next_deadline()):
                    await self._timer_wakeup.wait()
                self._dispatch(core.handle_timer(trio.current_time()))
                if core._out:
                    await self._flush(whole_burst=True)

    def _dispatch(self, events: list[Event]) -> None:
        if self._room_wanted and self._core.outstanding < self.max_in_flight:
            self._room_wanted = False
            self._room.set()
            self._room = trio.Event()
        for ev in events:
            if isinstance(ev, Reply | AuthResult):
                if ev.error is None:
                    self._answered += 1
                call = ev.token
                assert isinstance(call, _Call)
                call.reply = ev
                call.done.set()
            elif isinstance(ev, WatchNotification):
                if ev.watchers:
                    watched = WatchedEvent(EventType(ev.type), ev.path, KeeperState(ev.state))
                    for w in ev.watchers:
                        w._deliver(watched)  # type: ignore[attr-defined]
            elif isinstance(ev, StateChanged):
                self._on_state_changed(ev)
            elif isinstance(ev, DropConnection):
                log.info("dropping connection to %s: %s", self._core.current_host, ev.reason)
                self._drop_connection()

    def _on_state_changed(self, ev: StateChanged) -> None:
        for s in self._state_streams:
            s._deliver(ev.new)
        for listener in list(self._state_listeners):
            try:
                listener(ev.new)
            except Exception:
                log.exception("state listener %r failed", listener)
        if ev.new.is_terminal:
            self._state_streams.clear()
            error = self._core._terminal_error()
            for w in self._core.watches.all_watchers():
                w._fail(type(error)(*error.args) if not isinstance(error, ServerError) else type(error)())  # type: ignore[attr-defined]
            self._core.watches.clear()
            self._drop_connection()
        if ev.new is SessionState.READ_ONLY and self._nursery is not None:
            self._nursery.start_soon(self._probe_read_write)
        self._state_changed.set()
        self._state_changed = trio.Event()
        self._wake_timer()

    async def _probe_read_write(self) -> None:
        """While connected to a read-only server, look for a read-write one and move there."""
        scope = self._task_scope()
        try:
            with scope:
                await self._find_read_write()
        finally:
            self._task_scopes.discard(scope)

    async def _find_read_write(self) -> None:
        core = self._core
        delay = 0.1
        while core.state is SessionState.READ_ONLY:
            for host in core.hosts:
                if core.state is not SessionState.READ_ONLY:
                    return
                if host == core.current_host:
                    continue
                if await _is_read_write(host, core.connect_timeout):
                    log.info("read-write server found at %s; moving there", host)
                    core.prefer_host(host)
                    self._drop_connection()
                    return
            await trio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close the session (closeSession) and stop all tasks.  Idempotent; never raises."""
        if self._closing:
            return
        self._closing = True
        core = self._core
        if core.close(trio.current_time()):
            await self._flush()
            with trio.move_on_after(min(2.0, core.read_timeout)):
                await self._connection_ended.wait()
        self._dispatch(core.mark_closed())
        self._drop_connection()
        self._cancel_tasks()

    # ------------------------------------------------------------------ request plumbing

    def _path(self, path: str, *, sequential: bool = False) -> str:
        validate_path(path, sequential=sequential)
        if sequential and path == "/" and self._chroot:
            return self._chroot + "/"  # children of the chroot, not siblings of it
        return join_chroot(self._chroot, path)

    def _client_path(self, server_path: str | None) -> str:
        return strip_chroot(self._chroot, server_path or "/")

    async def _call(
        self,
        op: int,
        record: Record | None,
        path: str | None = None,
        watch: WatchRequest | None = None,
    ) -> Record | None:
        core = self._core
        call = _Call()
        if watch is not None:
            self._check_watch_path(watch.path)
        if path is not None and self._chroot:
            path = strip_chroot(self._chroot, path)  # errors name the path as the caller knows it
        if core.outstanding >= self.max_in_flight:
            await self._wait_for_room(1)
        while True:
            try:
                core.send_request(op, record, call, trio.current_time(), path=path, watch=watch)
                break
            except ConnectionLossError:
                if self._closing:
                    raise ClientClosedError("client closed") from None
                await self._state_changed.wait()
        await self._flush()
        if call.reply is None and self._raw is not None and self._socket_reader is None and core.outstanding == 1:
            await self._read_replies(self._raw, (call,))
        else:
            await call.done.wait()
        reply = call.reply
        assert isinstance(reply, Reply)
        if reply.error is not None:
            # Under a chroot, a NoNode error says whether the chroot is missing (no extra round trip).
            raise with_chroot_hint(reply.error, self._chroot, op) if self._chroot else reply.error
        return reply.body

    def _check_watch_path(self, server_path: str) -> None:
        """A watch must be re-registrable after a reconnect: its path must fit in a SetWatches frame."""
        limit = self._core.max_frame - WATCH_FRAME_OVERHEAD
        if len(server_path) * 3 > limit and len(server_path.encode()) > limit:
            raise DataTooLargeError(f"a watch on a path of more than {limit} bytes cannot be re-registered")

    async def _wait_for_room(self, count: int) -> None:
        """Wait until ``count`` more requests fit under :attr:`max_in_flight` (always once nothing is in
        flight: a larger burst then goes out whole)."""
        core = self._core
        while core.outstanding and core.outstanding + count > self.max_in_flight:
            self._room_wanted = True
            await self._room.wait()

    async def _read_replies(self, raw: socket.socket, calls: Sequence[_Call]) -> None:
        """Read the socket in the caller's own task until every one of ``calls`` has its reply.

        Everything received is handled as the reader task would (other replies, watch events, pings).
        The reader task is moved off the socket first (cancelling its wait unregisters it at once) and
        woken again when this returns, also on cancellation: a reply that comes later is read and
        dropped by the reader, as for any cancelled caller.
        """
        core = self._core
        self._socket_reader = raw
        scope = self._reader_scope
        if scope is not None:
            scope.cancel()
        try:
            for call in calls:
                while call.reply is None:
                    if self._raw is not raw:
                        await call.done.wait()  # the connection has ended
                        break
                    try:
                        await trio.lowlevel.wait_readable(raw)
                    except trio.ClosedResourceError:
                        continue  # closed by _drop_connection: the call has failed by now
                    try:
                        data = raw.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError as e:
                        log.info("connection to %s broke: %s", core.current_host, e)
                        self._drop_connection()
                        continue
                    if not data:
                        log.log(
                            logging.DEBUG if self._closing else logging.INFO,
                            "server %s closed the connection",
                            core.current_host,
                        )
                        self._drop_connection()
                        continue
                    self._dispatch(core.receive_data(data, trio.current_time()))
                    if core._out:
                        await self._flush()
        finally:
            if self._socket_reader is raw:
                self._socket_reader = None
                self._reader_resume.set()

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
        created, _ = await self._create(path, data, acl, ephemeral, sequential, container, ttl, want_stat=False)
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
        created, stat = await self._create(path, data, acl, ephemeral, sequential, container, ttl, want_stat=True)
        assert stat is not None
        return created, stat

    def _create_record(self, op: Create) -> tuple[int, Record, str]:
        code, mode = create_op(ephemeral=op.ephemeral, sequential=op.sequential, container=op.container, ttl=op.ttl)
        server_path = self._path(op.path, sequential=op.sequential)
        data = check_data(op.data)
        acl = check_acl(op.acl)
        if code == OpCode.CREATE_TTL:
            assert op.ttl is not None
            return code, CreateTTLRequest(server_path, data, acl, mode, op.ttl), server_path
        return code, CreateRequest(server_path, data, acl, mode), server_path

    async def _create(
        self,
        path: str,
        data: bytes,
        acl: Sequence[ACL] | None,
        ephemeral: bool,
        sequential: bool,
        container: bool,
        ttl: int | None,
        *,
        want_stat: bool,
    ) -> tuple[str, Stat | None]:
        code, record, server_path = self._create_record(Create(path, data, acl, ephemeral, sequential, container, ttl))
        if code == OpCode.CREATE and want_stat:
            code = OpCode.CREATE2
        body = await self._call(code, record, server_path)
        if isinstance(body, Create2Response):
            return self._client_path(body.path), body.stat
        assert isinstance(body, CreateResponse)
        return self._client_path(body.path), None

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
        server_path = self._path(path)
        await self._call(OpCode.DELETE, DeleteRequest(server_path, check_version(version)), server_path)

    @overload
    async def exists(self, path: str, *, watch: Literal[False] = False) -> Stat | None: ...
    @overload
    async def exists(self, path: str, *, watch: Literal[True]) -> tuple[Stat | None, Watch]: ...

    async def exists(self, path: str, *, watch: bool = False) -> Stat | tuple[Stat | None, Watch] | None:
        """The node's Stat, or None if it does not exist.  With ``watch=True`` also a :class:`Watch`
        that fires when the node is created, changed or deleted.

        Raises:
            NoAuthError: an ACL forbids it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        w = Watch(path) if watch else None
        wr = WatchRequest(WatchKind.DATA, server_path, w) if w is not None else None
        ask = watch and not self._core.watches.covered(WatchKind.DATA, server_path)
        try:
            body = await self._call(OpCode.EXISTS, ExistsRequest(server_path, ask), server_path, wr)
        except NoNodeError:
            if w is not None:
                return None, w
            return None
        assert isinstance(body, ExistsResponse)
        if w is not None:
            return body.stat, w
        return body.stat

    @overload
    async def get_data(self, path: str, *, watch: Literal[False] = False) -> tuple[bytes, Stat]: ...
    @overload
    async def get_data(self, path: str, *, watch: Literal[True]) -> tuple[bytes, Stat, Watch]: ...

    async def get_data(self, path: str, *, watch: bool = False) -> tuple[bytes, Stat] | tuple[bytes, Stat, Watch]:
        """The node's data (``b""`` for null data) and Stat; with ``watch=True`` also a :class:`Watch`.

        Raises:
            NoNodeError: the node does not exist (no watch is set: use :meth:`exists` to wait for it).
            NoAuthError: the node's ACL forbids reading it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        if watch:
            w = Watch(path)
            body = await self._call(
                OpCode.GET_DATA,
                GetDataRequest(server_path, not self._core.watches.covered(WatchKind.DATA, server_path)),
                server_path,
                WatchRequest(WatchKind.DATA, server_path, w),
            )
            assert isinstance(body, GetDataResponse)
            return body.data or b"", body.stat, w
        body = await self._call(OpCode.GET_DATA, GetDataRequest(server_path, False), server_path)
        assert isinstance(body, GetDataResponse)
        return body.data or b"", body.stat

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
        server_path = self._path(path)
        record = SetDataRequest(server_path, check_data(data), check_version(version))
        body = await self._call(OpCode.SET_DATA, record, server_path)
        assert isinstance(body, SetDataResponse)
        return body.stat

    @overload
    async def get_children(self, path: str, *, watch: Literal[False] = False) -> list[str]: ...
    @overload
    async def get_children(self, path: str, *, watch: Literal[True]) -> tuple[list[str], Watch]: ...

    async def get_children(self, path: str, *, watch: bool = False) -> list[str] | tuple[list[str], Watch]:
        """Child names, sorted.  With ``watch=True`` also a :class:`Watch` for child changes / deletion.

        Raises:
            NoNodeError: the node does not exist (no watch is set).
            NoAuthError: the node's ACL forbids listing it.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        w = Watch(path) if watch else None
        wr = WatchRequest(WatchKind.CHILD, server_path, w) if w is not None else None
        ask = watch and not self._core.watches.covered(WatchKind.CHILD, server_path)
        body = await self._call(OpCode.GET_CHILDREN, GetChildrenRequest(server_path, ask), server_path, wr)
        assert isinstance(body, GetChildrenResponse)
        children = _sorted_names(body.children)
        return (children, w) if w is not None else children

    @overload
    async def get_children_with_stat(self, path: str, *, watch: Literal[False] = False) -> tuple[list[str], Stat]: ...
    @overload
    async def get_children_with_stat(self, path: str, *, watch: Literal[True]) -> tuple[list[str], Stat, Watch]: ...

    async def get_children_with_stat(
        self, path: str, *, watch: bool = False
    ) -> tuple[list[str], Stat] | tuple[list[str], Stat, Watch]:
        """Child names (sorted) and the node's Stat (op getChildren2).

        Raises:
            NoNodeError, NoAuthError, InvalidPathError: as :meth:`get_children`.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        w = Watch(path) if watch else None
        wr = WatchRequest(WatchKind.CHILD, server_path, w) if w is not None else None
        ask = watch and not self._core.watches.covered(WatchKind.CHILD, server_path)
        body = await self._call(OpCode.GET_CHILDREN2, GetChildren2Request(server_path, ask), server_path, wr)
        assert isinstance(body, GetChildren2Response)
        children = _sorted_names(body.children)
        return (children, body.stat, w) if w is not None else (children, body.stat)

    async def get_acl(self, path: str) -> tuple[list[ACL], Stat]:
        """The node's ACL and Stat.

        Raises:
            NoNodeError: the node does not exist.
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        body = await self._call(OpCode.GET_ACL, GetACLRequest(server_path), server_path)
        assert isinstance(body, GetACLResponse)
        return list(body.acl or ()), body.stat

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
        server_path = self._path(path)
        record = SetACLRequest(server_path, check_acl(acl), check_version(version))
        body = await self._call(OpCode.SET_ACL, record, server_path)
        assert isinstance(body, SetACLResponse)
        return body.stat

    async def sync(self, path: str = "/") -> str:
        """Wait until the connected server has caught up with the leader (for ``path``).

        Raises:
            InvalidPathError: ``path`` is not a valid znode path (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_path = self._path(path)
        body = await self._call(OpCode.SYNC, SyncRequest(server_path), server_path)
        assert isinstance(body, SyncResponse)
        return self._client_path(body.path)

    async def get_ephemerals(self, prefix: str = "/") -> list[str]:
        """Paths of this session's ephemeral nodes under ``prefix`` (sorted).

        Raises:
            InvalidPathError: ``prefix`` is not a valid znode path (nothing is sent).
            UnimplementedError: the server is older than 3.6.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        server_prefix = self._path(prefix) if prefix != "/" or self._chroot else ""
        body = await self._call(OpCode.GET_EPHEMERALS, GetEphemeralsRequest(server_prefix), server_prefix)
        assert isinstance(body, GetEphemeralsResponse)
        return sorted(self._client_path(p) for p in body.ephemerals or ())

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
        server_path = self._path(path)
        body = await self._call(OpCode.GET_ALL_CHILDREN_NUMBER, GetAllChildrenNumberRequest(server_path), server_path)
        assert isinstance(body, GetAllChildrenNumberResponse)
        return body.total_number

    def _queue_auth(self, scheme: str, credential: bytes | str, *, required: bool = False) -> _Call:
        """Check, encode and hand a credential to the core; it raises here or never (the reader never
        meets a credential it cannot send).  Messages never show the credential itself."""
        if not isinstance(scheme, str) or not scheme:
            raise InvalidArgumentError(f"auth scheme must be a non-empty str, not {scheme!r}")
        if not _encodable(scheme):
            raise InvalidArgumentError("auth scheme is not encodable as UTF-8")
        if isinstance(credential, str):
            if not _encodable(credential):
                raise InvalidArgumentError("auth credential is not encodable as UTF-8")
            auth = credential.encode()
        elif isinstance(credential, bytes | bytearray | memoryview):
            auth = bytes(credential)
        else:
            raise InvalidArgumentError(f"auth credential must be str or bytes, not {type(credential).__name__}")
        call = _Call()
        self._core.add_auth(scheme, auth, call, trio.current_time(), required=required)
        return call

    async def add_auth(self, scheme: str, credential: bytes | str) -> None:
        """Authenticate this session (e.g. ``add_auth("digest", "user:password")``).

        The credential is re-sent on every reconnect.  A rejected credential raises
        :class:`~zkwire.errors.AuthFailedError` (the server then drops the connection; the client
        reconnects without it).

        Raises:
            AuthFailedError: the server rejected the credential.
            InvalidArgumentError: an empty scheme or a credential that cannot be sent.
            SessionExpiredError, ClientClosedError: the session has ended.
        """
        call = self._queue_auth(scheme, credential)
        await self._flush()
        await call.done.wait()
        assert isinstance(call.reply, AuthResult)
        if call.reply.error is not None:
            raise call.reply.error

    async def check_watches(self, path: str, watcher_type: WatcherType = WatcherType.ANY) -> bool:
        """Whether the server holds a watch of ``watcher_type`` on ``path`` for this session.

        Raises:
            InvalidPathError, InvalidArgumentError: bad input (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        watcher_type = _check_watcher_type(watcher_type)
        server_path = self._path(path)
        try:
            await self._call(OpCode.CHECK_WATCHES, CheckWatchesRequest(server_path, watcher_type), server_path)
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
        from ..constants import EventType

        watcher_type = _check_watcher_type(watcher_type)
        server_path = self._path(path)
        await self._call(OpCode.REMOVE_WATCHES, RemoveWatchesRequest(server_path, watcher_type), server_path)
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
        for kind, etype in kinds:
            for _, w in self._core.watches.pop_path(server_path, (kind,)):
                if isinstance(w, PersistentWatch):
                    w._fail(NoWatcherError(path, "watch removed"))
                else:
                    w._deliver(WatchedEvent(etype, path))  # type: ignore[attr-defined]

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
        server_path = self._path(path)
        pw = PersistentWatch(path, recursive, max_buffered)
        kind = WatchKind.RECURSIVE if recursive else WatchKind.PERSISTENT
        mode = AddWatchMode.PERSISTENT_RECURSIVE if recursive else AddWatchMode.PERSISTENT
        body = await self._call(
            OpCode.ADD_WATCH, AddWatchRequest(server_path, mode), server_path, WatchRequest(kind, server_path, pw)
        )
        if isinstance(body, ErrorResponse) and body.err:
            raise error_for_code(body.err, path)
        try:
            yield pw
        finally:
            self._core.watches.discard(kind, server_path, pw)
            if not self._core.watches.has_any(server_path) and self._core.state.is_connected and not self._closing:
                with trio.CancelScope(shield=True), trio.move_on_after(self._core.read_timeout):
                    try:
                        await self._call(
                            OpCode.REMOVE_WATCHES, RemoveWatchesRequest(server_path, WatcherType.ANY), server_path
                        )
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
        calls: list[tuple[_Call, Callable[[Record | None], object]]] = []
        core = self._core
        prepared: list[tuple[int, Record, str, Callable[[Record | None], object]]] = []
        for op in ops:
            prepared.append(self._prepare(op))
        limit = self.max_in_flight
        for start in range(0, len(prepared), limit):
            burst = prepared[start : start + limit]
            while True:
                if core.state.is_terminal:
                    raise core._terminal_error()
                if not core.state.is_connected:
                    await self._state_changed.wait()
                elif core.outstanding and core.outstanding + len(burst) > limit:
                    await self._wait_for_room(len(burst))
                else:
                    break
            now = trio.current_time()
            for code, record, server_path, convert in burst:
                call = _Call()
                try:
                    core.send_request(code, record, call, now, path=server_path)
                except ConnectionLossError as e:
                    call.reply = Reply(call, 0, None, e)
                    call.done.set()
                calls.append((call, convert))
            await self._flush(whole_burst=True)
        raw = self._raw
        if raw is not None and self._socket_reader is None and core.outstanding == len(calls):
            await self._read_replies(raw, [call for call, _ in calls])
        else:
            for call, _ in calls:
                if call.reply is None:
                    await call.done.wait()
            await trio.lowlevel.checkpoint_if_cancelled()
        out: list[object] = []
        for call, convert in calls:
            reply = call.reply
            assert isinstance(reply, Reply)
            out.append(reply.error if reply.error is not None else convert(reply.body))
        return out

    def _prepare(self, op: WriteOp | ReadOp) -> tuple[int, Record, str, Callable[[Record | None], object]]:
        if isinstance(op, Create):
            code, record, server_path = self._create_record(op)
            if code == OpCode.CREATE:
                code = OpCode.CREATE2

            def created(body: Record | None) -> object:
                assert isinstance(body, Create2Response)
                return self._client_path(body.path), body.stat

            return code, record, server_path, created
        if isinstance(op, Delete):
            p = self._path(op.path)
            return OpCode.DELETE, DeleteRequest(p, check_version(op.version)), p, lambda body: None
        if isinstance(op, SetData):
            p = self._path(op.path)
            rec = SetDataRequest(p, check_data(op.data), check_version(op.version))
            return OpCode.SET_DATA, rec, p, lambda body: body.stat if isinstance(body, SetDataResponse) else None
        if isinstance(op, GetData):
            p = self._path(op.path)

            def data(body: Record | None) -> object:
                assert isinstance(body, GetDataResponse)
                return body.data or b"", body.stat

            return OpCode.GET_DATA, GetDataRequest(p, False), p, data
        if isinstance(op, GetChildren):
            p = self._path(op.path)
            names = _sorted_names if op.sort else _child_names

            if op.with_stat:

                def children_with_stat(body: Record | None) -> object:
                    assert isinstance(body, GetChildren2Response)
                    return names(body.children), body.stat

                return OpCode.GET_CHILDREN2, GetChildren2Request(p, False), p, children_with_stat

            def children(body: Record | None) -> object:
                assert isinstance(body, GetChildrenResponse)
                return names(body.children)

            return OpCode.GET_CHILDREN, GetChildrenRequest(p, False), p, children
        raise InvalidArgumentError(f"not an op for pipeline: {op!r}")

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
        sub: list[MultiOp] = []
        for op in ops:
            if isinstance(op, Create):
                code, record, _ = self._create_record(op)
                sub.append(MultiOp(code, record))
            elif isinstance(op, Delete):
                sub.append(MultiOp(OpCode.DELETE, DeleteRequest(self._path(op.path), check_version(op.version))))
            elif isinstance(op, SetData):
                sub.append(
                    MultiOp(
                        OpCode.SET_DATA,
                        SetDataRequest(self._path(op.path), check_data(op.data), check_version(op.version)),
                    )
                )
            elif isinstance(op, Check):
                sub.append(MultiOp(OpCode.CHECK, CheckVersionRequest(self._path(op.path), check_version(op.version))))
            else:
                raise InvalidArgumentError(f"not a write op for multi: {op!r}")
        if not sub:
            return []
        body = await self._call(OpCode.MULTI, MultiRequest(tuple(sub)))
        assert isinstance(body, MultiResponse)
        results: list[str | Stat | None] = []
        failure: ServerError | None = None
        outcomes: list[object] = []
        for (_, request), (rtype, err, rbody) in zip(sub, body.results, strict=True):
            if rtype == OpCode.ERROR:
                path = getattr(request, "path", None)
                error = error_for_code(err, self._client_path(path)) if err else None
                outcomes.append(error)
                if error is not None and failure is None and err != -2:
                    failure = error
                results.append(None)
                continue
            value: str | Stat | None = None
            if isinstance(rbody, CreateResponse | Create2Response):
                value = self._client_path(rbody.path)
            elif isinstance(rbody, SetDataResponse):
                value = rbody.stat
            results.append(value)
            outcomes.append(value)
        if failure is None and any(isinstance(o, ServerError) for o in outcomes):
            failure = next(o for o in outcomes if isinstance(o, ServerError))
        if failure is not None:
            failure.results = outcomes
            raise failure
        return results

    async def multi_read(self, ops: Iterable[ReadOp]) -> list[tuple[bytes, Stat] | list[str] | ZKError]:
        """Several reads in one round trip (op multiRead).  Each op succeeds or fails on its own: a
        failed one's slot holds its exception instead of raising.

        Raises:
            InvalidInputError: an op is malformed or not a read op (nothing is sent).
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        sub: list[MultiOp] = []
        for op in ops:
            if isinstance(op, GetData):
                sub.append(MultiOp(OpCode.GET_DATA, GetDataRequest(self._path(op.path), False)))
            elif isinstance(op, GetChildren):
                sub.append(MultiOp(OpCode.GET_CHILDREN, GetChildrenRequest(self._path(op.path), False)))
            else:
                raise InvalidArgumentError(f"not a read op for multi_read: {op!r}")
        if not sub:
            return []
        body = await self._call(OpCode.MULTI_READ, MultiRequest(tuple(sub)))
        assert isinstance(body, MultiResponse)
        out: list[tuple[bytes, Stat] | list[str] | ZKError] = []
        for (_, request), (rtype, err, rbody) in zip(sub, body.results, strict=True):
            if rtype == OpCode.ERROR:
                out.append(error_for_code(err, self._client_path(getattr(request, "path", None))))
            elif isinstance(rbody, GetDataResponse):
                out.append((rbody.data or b"", rbody.stat))
            elif isinstance(rbody, GetChildrenResponse):
                out.append(_sorted_names(rbody.children))
        return out

    async def reconfig(
        self,
        *,
        joining: str | None = None,
        leaving: str | None = None,
        members: str | None = None,
        from_config: int = -1,
    ) -> tuple[bytes, Stat]:
        """Change the ensemble's membership (needs reconfigEnabled on the servers and admin rights).

        Raises:
            InvalidArgumentError: an argument that cannot be sent (nothing is sent).
            ReconfigDisabledError: the servers do not allow it.
            NoAuthError: the session lacks the rights.
            NewConfigNoQuorumError, ReconfigInProgressError, BadVersionError: the server refused the change.
            ConnectionLossError: the connection broke before the reply came: it may have been applied.
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        for name, value in (("joining", joining), ("leaving", leaving), ("members", members)):
            if value is not None and (not isinstance(value, str) or not _encodable(value)):
                raise InvalidArgumentError(
                    f"{name} must be a str (UTF-8 encodable) or None, not {type(value).__name__}"
                )
        if (
            isinstance(from_config, bool)
            or not isinstance(from_config, int)
            or not -(1 << 63) <= from_config < (1 << 63)
        ):
            raise InvalidArgumentError(f"from_config must be an int64 config version (-1: any), not {from_config!r}")
        body = await self._call(OpCode.RECONFIG, ReconfigRequest(joining, leaving, members, from_config))
        assert isinstance(body, GetDataResponse)
        return body.data or b"", body.stat

    async def who_am_i(self) -> list[tuple[str | None, str | None]]:
        """The server's view of this session's identities (op whoAmI, ZooKeeper 3.7+).

        Servers before 3.7 answer UnimplementedError and close the connection (the client reconnects).

        Raises:
            UnimplementedError: the server is older than 3.7.
            ConnectionLossError: the connection broke before the reply came (safe to send again).
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        body = await self._call(OpCode.WHO_AM_I, None)
        assert isinstance(body, WhoAmIResponse)
        return [(ci.auth_scheme, ci.user) for ci in body.client_info or ()]

    # ------------------------------------------------------------------ helpers (zkwire.client.nodes)

    @functools.cached_property
    def _connect_log(self) -> ConnectFailureLog:
        """Failed connection attempts at DEBUG, with a rate-limited WARNING (see zkwire.client.connectlog)."""
        return ConnectFailureLog(log)

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
        from .nodes import ensure_path

        return await ensure_path(self, path, container=container, data=data, acl=acl)

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
        from .nodes import delete_recursive

        return await delete_recursive(self, path, batch=batch)


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


def _check_watcher_type(value: object) -> WatcherType:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return WatcherType(value)
        except ValueError:
            pass
    names = ", ".join(f"{w.name} ({w.value})" for w in WatcherType)
    raise InvalidArgumentError(f"watcher_type must be a WatcherType: {names}; not {value!r}")


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _sorted_names(names: Sequence[str | None] | None) -> list[str]:
    """Child names from a reply, sorted (a null entry, which no server sends, is dropped)."""
    out = _child_names(names)
    out.sort()
    return out


def _child_names(names: Sequence[str | None] | None) -> list[str]:
    """Child names from a reply, in the server's order (a null entry, which no server sends, is dropped)."""
    if not names:
        return []
    return [c for c in names if c is not None] if None in names else list(names)  # type: ignore[arg-type]


async def _is_read_write(host: HostPort, limit: float) -> bool:
    """Ask a server with the ``isro`` four-letter word whether it serves writes."""
    with trio.move_on_after(limit):
        try:
            stream = await trio.open_tcp_stream(host.host, host.port)
        except OSError:
            return False
        async with stream:
            try:
                await stream.send_all(b"isro")
                answer = b""
                while len(answer) < 16:
                    chunk = await stream.receive_some(16)
                    if not chunk:
                        break
                    answer += chunk
            except (trio.BrokenResourceError, OSError):
                return False
            return answer.strip() == b"rw"
    return False
