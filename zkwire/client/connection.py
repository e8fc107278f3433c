"""The connection driver: the trio tasks and sockets around one :class:`~zkwire.sansio.session.SessionCore`.

Tasks (all owned by :func:`~zkwire.client.api.open_client`'s nursery, shielded from the caller's
cancel scopes until the client closes):

* the *connection manager* (:meth:`ConnectionDriver.run_connections`) walks the host list, opens a
  stream with the driver's ``connect`` function (TCP, or TLS; any :class:`trio.abc.Stream` for tests)
  and is the *reader* of each connection in turn: it feeds received bytes to the core, wakes the callers
  whose replies came, and reports the connection's end to the core;
* a *timer* (:meth:`ConnectionDriver.run_timer`) sleeps until the core's next deadline (ping, read
  timeout, client-side expiry) and sends what the core queued for it;
* in read-only mode, a *prober* looks for a read-write server.

The design, as :class:`ConnectionDriver` implements it: a caller hands its request to the core with
a :class:`~zkwire.client.calls.PendingCall` as the token, writes what the core queued, and waits on the
call's :class:`trio.Event`; the reader task reads every reply and wakes the caller by resolving its
call.  Frames are written whole or not at all, by one task at a time: a write in progress takes along
whatever other tasks queued meanwhile, and a write that would block continues in a shielded loop for as
long as the server keeps answering (a busy server reads slowly; only one that answers nothing for the
read timeout is dropped).  A reply over ``max_frame`` is skipped as it arrives and fails only its
request (:class:`~zkwire.errors.ReplyTooLargeError`).  A request made while
:attr:`ConnectionDriver.max_in_flight` requests are in flight waits in the
:class:`~zkwire.client.calls.Backlog` and is sent by whoever frees room (the reader, as replies come);
a burst waiting for room is woken only as room frees.

:class:`~zkwire.client.fastpath.FastPathDriver`, the driver a :class:`~zkwire.client.api.Client` runs
by default, is this design with its measured shortcuts (a lone request's caller writes and reads the
socket itself; waiters parked on trio's scheduler without an Event); see :mod:`zkwire.client.fastpath`.

Transport failures (:data:`TRANSPORT_ERRORS`) all go to one handler,
:meth:`ConnectionDriver._transport_failed`: the connection is dropped and the core told; callers see
:class:`~zkwire.errors.ConnectionLossError`.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Awaitable, Callable

import trio

from ..constants import EventType, KeeperState
from ..errors import AuthFailedError, ConnectionLossError, ZKError, copy_error
from ..protocol.framing import READ_SIZE
from ..sansio.session import (
    AuthResult,
    DeadlineMoved,
    DropConnection,
    Event,
    HostPort,
    Moved,
    Reply,
    SaslStep,
    SessionState,
    StateChanged,
    WatchNotification,
)
from .calls import Backlog, ClientCore, PendingCall, RequestPath
from .connectlog import ConnectFailureLog, tls_failure
from .watchers import StateStream, WatchedEvent, Watcher

__all__ = [
    "Connect",
    "ConnectionDriver",
    "TRANSPORT_ERRORS",
    "tcp_connector",
]

log = logging.getLogger("zkwire.client")

#: What a broken, reset or closed transport raises (ssl.SSLError is an OSError; trio's SSLStream wraps
#: TLS failures in BrokenResourceError).
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)

#: What opening a connection raises when it fails: a transport error, or a UnicodeError for a host name
#: that IDNA 2008 (trio's resolver's encoding) refuses -- a host that cannot be reached, like any other.
CONNECT_ERRORS: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, UnicodeError)

#: Opens a connection to one server: TCP, TLS, or anything speaking the byte stream (tests use trio's
#: memory streams or a socket pair).  Raising one of :data:`TRANSPORT_ERRORS` counts as a failed attempt;
#: the driver bounds the call with the core's connect timeout.
Connect = Callable[[HostPort], Awaitable[trio.abc.Stream]]


#: The events that answer a caller (a tuple: ``isinstance`` with a union builds the union each time).
_ANSWERS = (Reply, AuthResult)


def tcp_connector(ssl_context: ssl.SSLContext | None) -> Connect:
    """The default ``connect``: TCP with TCP_NODELAY, wrapped in TLS (handshake done) with ``ssl_context``."""

    async def connect(host: HostPort) -> trio.abc.Stream:
        tcp = await trio.open_tcp_stream(host.host, host.port)
        try:
            tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ssl_context is None:
                return tcp
            tls = trio.SSLStream(tcp, ssl_context, server_hostname=host.host)
            await tls.do_handshake()
            return tls
        except BaseException:
            await trio.aclose_forcefully(tcp)
            raise

    return connect


class ConnectionDriver(RequestPath):
    """Runs one session's connections: opening streams, reading, writing, the timer, reconnecting, and
    handing the core's events to the waiting callers, watches and state listeners.

    This is the plain design (see the module docstring): the reader task reads every reply and wakes
    its caller.  :class:`~zkwire.client.fastpath.FastPathDriver` overrides the request path (:meth:`call`,
    :meth:`call_burst`, :meth:`flush`), the reading (:meth:`_read`) and the two hooks around a
    connection's stream (:meth:`_stream_opened`, :meth:`_stream_closed`).
    """

    def __init__(self, core: ClientCore, connect: Connect) -> None:
        self.core = core
        self._connect = connect
        self._stream: trio.abc.Stream | None = None
        #: The stream to close when the connection ends (under TLS, the transport beneath it).
        self._transport: trio.abc.Stream | None = None
        self._conn_scope: trio.CancelScope | None = None
        self._connection_ended = trio.Event()
        self._writing = False
        #: The scope of a blocked write (its deadline follows the core's liveness deadline).
        self._write_scope: trio.CancelScope | None = None
        self._state_changed = trio.Event()
        #: Set to wake the timer before its deadline (a fresh Event each round).
        self._timer_wakeup = trio.Event()
        #: Requests waiting for room under ``max_in_flight``, and callers waiting for room for a burst.
        self._backlog = Backlog(core, self.wake_timer)
        self.state_streams: list[StateStream] = []
        self.state_listeners: list[Callable[[SessionState], None]] = []
        self.nursery: trio.Nursery | None = None
        self._task_scopes: set[trio.CancelScope] = set()
        #: The scopes of SASL steps of the current connection (cancelled when it ends).
        self._sasl_scopes: set[trio.CancelScope] = set()
        self._tasks_cancelled = False
        self.closing = False
        #: Requests answered successfully so far (tells a connection that served from one that did not).
        self._answered = 0
        self._connect_log = ConnectFailureLog(log)
        #: trio's clock, read without trio.current_time()'s lookups (set when the tasks start, in the run).
        self._now: Callable[[], float] = trio.current_time

    # ------------------------------------------------------------------ the client's own tasks

    def start(self, nursery: trio.Nursery) -> None:
        """Start the connection manager and the timer in ``nursery``."""
        self.nursery = nursery
        self._now = trio.lowlevel.current_clock().current_time
        nursery.start_soon(self.run_connections)
        nursery.start_soon(self.run_timer)

    def task_scope(self) -> trio.CancelScope:
        """A scope for one of the client's own tasks, shielded from the caller's cancel scopes.

        When a deadline cancels the ``open_client`` block, the block's shielded clean-up (releasing a
        lock, deleting a node) still has a working session; the tasks end when the block has been left
        and the session closed (:meth:`cancel_tasks`).
        """
        scope = trio.CancelScope(shield=True)
        if self._tasks_cancelled:
            scope.cancel()
        self._task_scopes.add(scope)
        return scope

    def forget_task_scope(self, scope: trio.CancelScope) -> None:
        self._task_scopes.discard(scope)

    def cancel_tasks(self) -> None:
        self._tasks_cancelled = True
        for scope in self._task_scopes:
            scope.cancel()

    # ------------------------------------------------------------------ state

    async def wait_for_state(self, *states: SessionState) -> SessionState:
        """Wait until the session is in one of ``states``; return it.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended first (unless that
                terminal state is one of ``states``).
        """
        while self.core.state not in states:
            if self.core.state.is_terminal:
                raise self.core.terminal_error()
            await self._state_changed.wait()
        return self.core.state

    # ------------------------------------------------------------------ connections

    async def run_connections(self) -> None:
        """The connection manager: connect, run the connection, back off, again, until the session ends.
        How long to wait is the core's decision: it is told of every attempt that failed and every
        connection that ended (and whether it answered anything)."""
        core = self.core
        with self.task_scope():
            while not core.state.is_terminal and not self.closing:
                delay = core.reconnect_delay()
                if delay:
                    await trio.sleep(delay)
                host = core.next_host()
                answered = self._answered
                stream = await self._open_stream(host)
                if stream is None:
                    continue  # counted by _open_stream
                await self._run_connection(host, stream)
                core.connection_ended(trio.current_time(), answered=self._answered != answered)

    async def _open_stream(self, host: HostPort) -> trio.abc.Stream | None:
        """A connected stream to ``host`` within the connect timeout, or None: the failure is logged and
        told to the core, classified (a certificate refused, :func:`~zkwire.client.connectlog.tls_failure`,
        is a reason that ends the session after a whole pass over the hosts; anything else is retried)."""
        with trio.move_on_after(self.core.connect_timeout):
            try:
                stream = await self._connect(host)
            except CONNECT_ERRORS as e:
                self._attempt_failed(host, e)
                return None
            try:
                self._stream_opened(stream)
            except OSError as e:
                await trio.aclose_forcefully(stream)
                self._attempt_failed(host, e)
                return None
            self._transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
            return stream
        self.dispatch(self.core.connection_failed(cause="connect timed out"))
        return None

    def _attempt_failed(self, host: HostPort, error: Exception) -> None:
        reason = tls_failure(error, host)
        if reason is not None:
            log.info("connection to %s failed: %s", host, reason)
        self._connect_log.failed(host, error, len(self.core.hosts))
        cause = str(reason) if reason else getattr(error, "strerror", None) or type(error).__name__
        self.dispatch(self.core.connection_failed(reason, cause=cause))

    async def _run_connection(self, host: HostPort, stream: trio.abc.Stream) -> None:
        core = self.core
        self._connection_ended = trio.Event()
        self._connect_log.succeeded(host)
        try:
            core.connection_made(host, trio.current_time())
        except ZKError as e:
            # Counted like any failed attempt: the next one waits (back-off), never a tight loop.
            log.warning("cannot start a handshake with %s: %s", host, e)
            self.dispatch(core.connection_failed())
            self._stream_closed()
            await trio.aclose_forcefully(stream)
            return
        self._stream = stream
        self.wake_timer()
        try:
            with trio.CancelScope() as self._conn_scope:
                await self.flush()
                await self._read_loop(stream)
        finally:
            self._stream = None
            self._conn_scope = None
            self._cancel_sasl_steps()
            with trio.CancelScope(shield=True):
                self._stream_closed()
                transport, self._transport = self._transport, None
                if transport is not None:
                    await trio.aclose_forcefully(transport)
            self.dispatch(core.connection_lost(trio.current_time(), cause="connection ended"))
            self._connection_ended.set()
            self.wake_timer()

    def _transport_failed(self, action: str, error: Exception) -> None:
        """The one handler of :data:`TRANSPORT_ERRORS` (every socket or stream call is wrapped in
        ``except TRANSPORT_ERRORS``): the connection is dropped (callers in flight get
        ConnectionLossError) and the failure logged as ``action`` (e.g. "write to").  A certificate
        refused after the TLS handshake (TLS 1.3 servers alert on the first read) is told to the core
        as the reason (:meth:`~zkwire.sansio.session.SessionCore.connection_lost`)."""
        host = self.core.current_host
        if host is None:  # the connection was dropped already (this is its socket closing under a read)
            log.debug("%s the dropped connection: %s", action, error)
            self.drop_connection()
            return
        reason = tls_failure(error, host)
        log.info("%s %s failed: %s", action, host, reason or error)
        self.drop_connection(reason, cause=f"{action} the server failed: {reason or type(error).__name__}")

    def _server_closed(self) -> None:
        log.log(
            logging.DEBUG if self.closing else logging.INFO,
            "server %s closed the connection",
            self.core.current_host,
        )
        self.drop_connection(cause="the server closed the connection")

    def _stream_opened(self, stream: trio.abc.Stream) -> None:
        """A connection's stream is open, before its handshake (nothing to do in the plain driver; raising
        OSError fails the attempt)."""

    def _stream_closed(self) -> None:
        """The connection's stream is closing (nothing to do in the plain driver)."""

    async def _read_loop(self, stream: trio.abc.Stream) -> None:
        """The reader of one connection (:meth:`_read`), until the server closes it, the transport
        fails or the connection is dropped."""
        try:
            closed = await self._read(stream)
        except TRANSPORT_ERRORS as e:
            self._transport_failed("reading from", e)
            return
        if closed:
            self._server_closed()

    async def _read(self, stream: trio.abc.Stream) -> bool:
        """Read every byte the server sends and hand it to the core, whose events wake the callers
        (:meth:`dispatch`); True when the server has closed the stream.  A large reply is asked for as far
        as its buffer goes (the rest of it, or of what the core has allocated for it so far)."""
        core = self.core
        while True:
            view = core.receive_buffer()
            if view is None:
                size = READ_SIZE
            else:
                size = max(READ_SIZE, len(view))
                view.release()  # only its size is used: the stream reads into a buffer of its own
            data = await stream.receive_some(size)
            if not data:
                return True
            self.dispatch(core.receive_data(data, self._now()))
            if core.has_data_to_send:
                await self.flush()

    def drop_connection(self, reason: ZKError | None = None, *, cause: str = "dropped by the client") -> None:
        """End the current connection now: the core learns at once (so no request is sent into a dying
        socket and waiters fail fast), then the connection's tasks are cancelled.  ``reason``: a
        classified failure (see :meth:`_transport_failed`); ``cause``: why, for the observers."""
        self._stream = None
        self._stream_closed()
        if self._conn_scope is not None:
            self._conn_scope.cancel()
        self._cancel_sasl_steps()
        self.dispatch(self.core.connection_lost(trio.current_time(), reason=reason, cause=cause))

    def _cancel_sasl_steps(self) -> None:
        for scope in self._sasl_scopes:
            scope.cancel()

    # ------------------------------------------------------------------ writing and the timer

    async def flush(self, *, whole_burst: bool = False) -> None:
        """Write everything the core has queued, now, in the calling task (see :meth:`_write_queued`).

        ``whole_burst``: the caller has queued all it is about to (a timer round, a pipeline's burst).
        The plain driver writes at once either way; a driver that leaves bursts to the timer
        (:class:`~zkwire.client.fastpath.FastPathDriver`) writes at once only then.
        """
        await self._write_queued()

    async def _write_queued(self) -> None:
        """Write what is queued, whole frames, in a shielded loop; one task writes at a time (a task that
        finds a write in progress returns: that write's loop takes along what was queued meanwhile).

        The loop is shielded from the caller's cancellation (a frame is written whole or not at all),
        but not unbounded.  A write blocked while the server keeps answering is not stalled (the server
        is busy, e.g. working through a deep queue of requests): the bound is the core's
        :attr:`~zkwire.sansio.session.SessionCore.liveness_deadline`, moved on by every answer that
        arrives meanwhile (:meth:`dispatch`).  Only when nothing sent has been answered for the read
        timeout is the connection dropped.
        """
        stream = self._stream
        if self._writing or stream is None:
            return
        core = self.core
        self._writing = True
        started = trio.current_time()
        try:
            with trio.CancelScope(shield=True, deadline=core.liveness_deadline) as scope:
                self._write_scope = scope
                while True:
                    data = core.data_to_send()
                    if not data:
                        break
                    await stream.send_all(data)
            if scope.cancelled_caught:
                log.info(
                    "write to %s blocked for %.2fs while nothing sent was answered",
                    core.current_host,
                    trio.current_time() - started,
                )
                self.drop_connection(cause="a write blocked while nothing sent was answered")
        except TRANSPORT_ERRORS as e:
            self._transport_failed("write to", e)
        finally:
            self._writing = False
            self._write_scope = None

    def wake_timer(self) -> None:
        self._timer_wakeup.set()

    async def run_timer(self) -> None:
        """The timer: sleeps until the core's next deadline or a wake-up, then writes what the core
        queued (pings; in the fast path, bursts)."""
        core = self.core
        with self.task_scope():
            while not core.state.is_terminal:
                wakeup = self._timer_wakeup = trio.Event()
                with trio.move_on_at(core.next_deadline()):
                    await wakeup.wait()
                self.dispatch(core.handle_timer(trio.current_time()))
                if core.has_data_to_send:
                    await self.flush(whole_burst=True)

    # ------------------------------------------------------------------ events

    def dispatch(self, events: list[Event[PendingCall, Watcher]]) -> None:
        """Hand the core's events on: replies to their callers, notifications to watches, state changes
        to streams and listeners; a DropConnection drops the connection."""
        if self._write_scope is not None:
            self._write_scope.deadline = self.core.liveness_deadline
        backlog = self._backlog
        if backlog:
            backlog.send(self.max_in_flight)
        if backlog.room_waiters:
            backlog.make_room(self.max_in_flight)
        for ev in events:
            if isinstance(ev, _ANSWERS):
                if ev.error is None:
                    self._answered += 1
                ev.token.resolve(ev)
            elif isinstance(ev, WatchNotification):
                if ev.watchers:
                    watched = WatchedEvent(EventType(ev.type), ev.path, KeeperState(ev.state))
                    for w in ev.watchers:
                        w._deliver(watched)
            elif isinstance(ev, StateChanged):
                self._on_state_changed(ev)
            elif isinstance(ev, DropConnection):
                log.info("dropping connection to %s: %s", self.core.current_host, ev.reason)
                self.drop_connection(cause=ev.reason)
            elif isinstance(ev, SaslStep) and self.nursery is not None:
                self.nursery.start_soon(self._sasl_step, ev)
            elif isinstance(ev, DeadlineMoved):
                self.wake_timer()
            elif isinstance(ev, Moved):
                self._moved(ev)

    async def _sasl_step(self, step: SaslStep) -> None:
        """Compute a SASL token (in a worker thread for a mechanism that may block) and hand it to the
        core.  A mechanism's failure other than AuthFailedError or ConnectionLossError is reported by its
        type only (its message might quote what it was given).  The step is given up when its
        connection ends (the core would ignore its result)."""
        scope = self.task_scope()
        self._sasl_scopes.add(scope)
        try:
            with scope:
                result: bytes | AuthFailedError | ConnectionLossError | None
                try:
                    if step.blocking:
                        result = await trio.to_thread.run_sync(step.compute, abandon_on_cancel=True)
                    else:
                        result = step.compute()
                except (AuthFailedError, ConnectionLossError) as e:
                    result = e
                except Exception as e:
                    result = AuthFailedError(detail=f"the SASL mechanism failed ({type(e).__name__})")
                self.dispatch(self.core.sasl_step_done(step, result, trio.current_time()))
                if self.core.has_data_to_send:
                    await self.flush(whole_burst=True)
        finally:
            self._sasl_scopes.discard(scope)
            self.forget_task_scope(scope)

    def _moved(self, ev: Moved) -> None:
        """A planned move is over (or given up): the callers waiting for a connection go on."""
        if ev.target is not None:
            log.info("session 0x%x moved from %s to %s", self.core.session_id, ev.source, ev.target)
        self._state_changed.set()
        self._state_changed = trio.Event()
        self.wake_timer()

    def _on_state_changed(self, ev: StateChanged) -> None:
        for s in self.state_streams:
            s._deliver(ev.new)
        for listener in list(self.state_listeners):
            try:
                listener(ev.new)
            except Exception:
                log.exception("state listener %r failed", listener)
        if ev.new.is_terminal:
            self.state_streams.clear()
            error = self.core.terminal_error()
            self._backlog.fail()
            for w in self.core.watches.all_watchers():
                w._fail(copy_error(error))
            self.core.watches.clear()
            self.drop_connection(cause=f"session {ev.new.value}")
        if ev.new is SessionState.READ_ONLY and self.nursery is not None:
            self.nursery.start_soon(self._probe_read_write)
        self._state_changed.set()
        self._state_changed = trio.Event()
        self.wake_timer()

    async def _probe_read_write(self) -> None:
        """While connected to a read-only server, look for a read-write one and move there."""
        scope = self.task_scope()
        try:
            with scope:
                await self._find_read_write()
        finally:
            self.forget_task_scope(scope)

    async def _find_read_write(self) -> None:
        core = self.core
        delay = 0.1
        while core.state is SessionState.READ_ONLY:
            for host in core.hosts:
                if core.state is not SessionState.READ_ONLY:
                    return
                if host == core.current_host:
                    continue
                if await is_read_write(host, core.connect_timeout):
                    log.info("read-write server found at %s; moving there", host)
                    core.prefer_host(host)
                    self.drop_connection(cause="moving to a read-write server")
                    return
            await trio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close the session (closeSession) and stop all tasks.  Idempotent; never raises."""
        if self.closing:
            return
        self.closing = True
        core = self.core
        if core.moving and not core.ready:
            # A planned move is draining or re-attaching: let it open the session on its new server
            # (bounded), so that closeSession can be sent there and the session's nodes go at once.
            with trio.move_on_after(core.read_timeout):
                while core.moving and not core.ready and not core.state.is_terminal:
                    await self._state_changed.wait()
        if core.close(trio.current_time()):
            await self.flush()
            with trio.move_on_after(min(2.0, core.read_timeout)):
                await self._connection_ended.wait()
        self.dispatch(core.mark_closed())
        self.drop_connection(cause="client closed")
        self.cancel_tasks()


async def is_read_write(host: HostPort, limit: float) -> bool:
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
            except TRANSPORT_ERRORS:
                return False
            return answer.strip() == b"rw"
    return False
