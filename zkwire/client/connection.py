"""The connection driver: the trio tasks and sockets around one :class:`~zkwire.sansio.session.SessionCore`.

Tasks (all owned by :func:`~zkwire.client.api.open_client`'s nursery, shielded from the caller's
cancel scopes until the client closes):

* the *connection manager* (:meth:`ConnectionDriver.run_connections`) walks the host list, opens a
  stream with the driver's ``connect`` function (TCP, or TLS; any :class:`trio.abc.Stream` for tests)
  and reads each connection in turn: it feeds received bytes to the core, wakes the callers whose
  replies came, and reports the connection's end to the core;
* a *timer* (:meth:`ConnectionDriver.run_timer`) sleeps until the core's next deadline (ping, read
  timeout, client-side expiry); it is also the *writer* that sends, in one send, what several tasks
  queued in the same scheduling round;
* in read-only mode, a *prober* looks for a read-write server.

The request path avoids task switches where it can.  A lone request (nothing else in flight) is written
by its caller with a non-blocking send; on a plain socket connection that caller then also reads the
socket itself until its reply has come (the reader steps aside meanwhile), so a sequential request
costs one scheduler pass.  The reader takes over again at once when the caller leaves something behind
for it (requests in flight, watches that may fire, a cancelled read); when nothing can arrive but the
connection's end, it comes back by itself within :attr:`ConnectionDriver.reader_handback` instead, so
a run of sequential requests does not wake it for every one.  Frames are written whole
or not at all: a send that would block continues in a shielded loop, for as long as the server keeps
answering (a busy server reads slowly; only one that answers nothing for the read timeout is dropped).

A large reply is read on a plain socket with ``recv_into`` straight into one buffer sized from its
length prefix; a reply over ``max_frame`` is skipped as it arrives and fails only its request
(:class:`~zkwire.errors.ReplyTooLargeError`).  A request made while :attr:`ConnectionDriver.max_in_flight`
requests are in flight waits in the driver's backlog and is sent by whoever frees room (the reader, as
replies come), its caller parked only once, for its reply; a burst waiting for room is woken only as room
frees; a caller waiting for its reply is parked directly on trio's scheduler (no Event per request).

Transport failures (:data:`TRANSPORT_ERRORS`) all go to one handler,
:meth:`ConnectionDriver._transport_failed`: the connection is dropped and the core told; callers see
:class:`~zkwire.errors.ConnectionLossError`.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import trio

from ..constants import EventType, KeeperState
from ..errors import ClientClosedError, ConnectionLossError, ZKError, copy_error
from ..protocol.framing import READ_SIZE
from ..protocol.records import Record
from ..sansio.session import (
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
from .connectlog import ConnectFailureLog
from .watchers import StateStream, WatchedEvent, Watcher

__all__ = [
    "Connect",
    "ConnectionDriver",
    "PendingCall",
    "TRANSPORT_ERRORS",
    "ClientCore",
    "tcp_connector",
]

log = logging.getLogger("zkwire.client")

#: Reads at most per wake-up of a socket reader (each one a full buffer's worth).
_READS_PER_WAKEUP = 8

#: What a broken, reset or closed transport raises (ssl.SSLError is an OSError; trio's SSLStream wraps
#: TLS failures in BrokenResourceError).
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (OSError, trio.BrokenResourceError, trio.ClosedResourceError)

#: Opens a connection to one server: TCP, TLS, or anything speaking the byte stream (tests use trio's
#: memory streams or a socket pair).  Raising one of :data:`TRANSPORT_ERRORS` counts as a failed attempt;
#: the driver bounds the call with the core's connect timeout.
Connect = Callable[[HostPort], Awaitable[trio.abc.Stream]]


class _Wakeup:
    """A reusable wake-up for one waiting task, parked directly on trio's scheduler: what a fresh
    trio.Event per round would do (``clear`` starts a round), without allocating one (with its parking
    lot) for every request or burst."""

    __slots__ = ("_set", "_task")

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None
        self._set = False

    def clear(self) -> None:
        self._set = False

    def set(self) -> None:
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)
        else:
            self._set = True

    async def wait(self) -> None:
        """Wait, in the caller's cancel scope, until :meth:`set` (a checkpoint even if it was)."""
        if self._set:
            await trio.lowlevel.checkpoint()
            return
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


class PendingCall(_Wakeup):
    """Where the reader leaves a reply for the task waiting on it (the token the core hands back); one
    task waits on it (:meth:`wait`) until :meth:`resolve`."""

    __slots__ = ("queued", "reply")

    def __init__(self) -> None:
        self._task = None  # _Wakeup's state, set here: one call less per request
        self._set = False
        self.reply: Reply[PendingCall] | AuthResult[PendingCall] | None = None
        #: Waiting in the driver's backlog (not sent yet); cleared when sent or given up.
        self.queued = False

    def resolve(self, reply: Reply[PendingCall] | AuthResult[PendingCall]) -> None:
        self.reply = reply
        self.set()

    def take_reply(self) -> Reply[PendingCall]:
        """The reply, handed over once: the call forgets it.  A reply refers back to its call (its
        token); kept both ways, the two would be a reference cycle, garbage that only the cyclic
        collector finds -- with the reply's data in it (a megabyte getData's heap then grows by a
        megabyte per call until a collection)."""
        reply, self.reply = self.reply, None
        assert isinstance(reply, Reply)
        return reply

    def take_auth_result(self) -> AuthResult[PendingCall]:
        """The answer to an auth request, handed over once (as :meth:`take_reply`)."""
        result, self.reply = self.reply, None
        assert isinstance(result, AuthResult)
        return result


ClientCore = SessionCore[PendingCall, Watcher]

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


class ConnectionDriver:
    """Runs one session's connections: opening streams, reading, writing, the timer, reconnecting, and
    handing the core's events to the waiting callers, watches and state listeners."""

    #: Requests in flight on one connection at most; more wait (in their caller's cancel scope) until
    #: replies make room.
    max_in_flight = 1000

    #: How long at most the reader stays away from the socket after a caller that read its own reply
    #: left nothing behind that anyone waits for (no request in flight, no watch): then only the
    #: connection's end (or an unasked-for reply) can arrive, and it is noticed this much later at most.
    #: The reader rests in slices this long while callers read, so a run of sequential requests wakes it
    #: once per slice instead of once per request.
    reader_handback = 0.02

    def __init__(self, core: ClientCore, connect: Connect) -> None:
        self.core = core
        self._connect = connect
        self._stream: trio.abc.Stream | None = None
        #: The stream to close when the connection ends (under TLS, the transport beneath it).
        self._transport: trio.abc.Stream | None = None
        #: A duplicate of a plain socket connection's socket, for writes that complete without blocking
        #: and for callers reading their own reply.
        self._raw: socket.socket | None = None
        self._conn_scope: trio.CancelScope | None = None
        self._connection_ended = trio.Event()
        self._writing = False
        #: The scope of a blocked write (its deadline follows the core's liveness deadline).
        self._write_scope: trio.CancelScope | None = None
        #: The raw socket a caller is reading its own reply from (the reader task steps aside meanwhile).
        self._socket_reader: socket.socket | None = None
        self._reader_scope: trio.CancelScope | None = None
        self._reader_resume = _Wakeup()
        self._state_changed = trio.Event()
        self._timer_wakeup = _Wakeup()
        #: Callers waiting for room below ``max_in_flight``, oldest first; replies wake only as many as
        #: there is room for (10,000 waiters are not all woken by every reply).
        self._room = trio.lowlevel.ParkingLot()
        #: How many callers are parked in ``_room`` (read on every dispatch: cheaper than asking the lot).
        self._room_waiters = 0
        #: Requests waiting for room (op, record, path, watch, call), oldest first; an entry whose call
        #: is no longer ``queued`` was given up by its cancelled caller and is skipped.
        self._backlog: deque[tuple[int, Record | None, str | None, WatchRequest[Watcher] | None, PendingCall]] = deque()
        self.state_streams: list[StateStream] = []
        self.state_listeners: list[Callable[[SessionState], None]] = []
        self.nursery: trio.Nursery | None = None
        self._task_scopes: set[trio.CancelScope] = set()
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
                    core.connection_failed()
                    continue
                await self._run_connection(host, stream)
                core.connection_ended(trio.current_time(), answered=self._answered != answered)

    async def _open_stream(self, host: HostPort) -> trio.abc.Stream | None:
        """A connected stream to ``host`` within the connect timeout, or None (the failure is logged)."""
        with trio.move_on_after(self.core.connect_timeout):
            try:
                stream = await self._connect(host)
            except TRANSPORT_ERRORS as e:
                self._connect_log.failed(host, e, len(self.core.hosts))
                return None
            try:
                self._raw = _nonblocking_duplicate(stream)
            except OSError as e:
                await trio.aclose_forcefully(stream)
                self._connect_log.failed(host, e, len(self.core.hosts))
                return None
            self._transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
            return stream
        return None  # timed out

    async def _run_connection(self, host: HostPort, stream: trio.abc.Stream) -> None:
        core = self.core
        self._connection_ended = trio.Event()
        self._connect_log.succeeded(host)
        try:
            core.connection_made(host, trio.current_time())
        except ZKError as e:
            # Counted like any failed attempt: the next one waits (back-off), never a tight loop.
            log.warning("cannot start a handshake with %s: %s", host, e)
            core.connection_failed()
            self._close_raw()
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
            with trio.CancelScope(shield=True):
                self._close_raw()
                transport, self._transport = self._transport, None
                if transport is not None:
                    await trio.aclose_forcefully(transport)
            self.dispatch(core.connection_lost(trio.current_time()))
            self._connection_ended.set()
            self.wake_timer()

    def _transport_failed(self, action: str, error: Exception) -> None:
        """The one handler of :data:`TRANSPORT_ERRORS` (every socket or stream call is wrapped in
        ``except TRANSPORT_ERRORS``): the connection is dropped (callers in flight get
        ConnectionLossError) and the failure logged as ``action`` (e.g. "write to")."""
        log.info("%s %s failed: %s", action, self.core.current_host, error)
        self.drop_connection()

    def _server_closed(self) -> None:
        log.log(
            logging.DEBUG if self.closing else logging.INFO,
            "server %s closed the connection",
            self.core.current_host,
        )
        self.drop_connection()

    async def _read_loop(self, stream: trio.abc.Stream) -> None:
        core = self.core
        raw = self._raw  # plain socket: read it directly (fewer frames and passes than the stream)
        try:
            while True:
                if self._socket_reader is not None:
                    # A caller reads its own reply.  It wakes us when it leaves something for us; when it
                    # leaves nothing, we come back at the end of this slice (see reader_handback).
                    self._reader_resume.clear()
                    with trio.move_on_after(self.reader_handback):
                        await self._reader_resume.wait()
                    continue
                if raw is not None and self._raw is not raw:
                    return  # the connection was dropped (and the socket closed) meanwhile
                with trio.CancelScope() as scope:
                    self._reader_scope = scope
                    if raw is None:
                        view = core.receive_buffer()
                        data = await stream.receive_some(READ_SIZE if view is None else max(READ_SIZE, len(view)))
                    else:
                        await trio.lowlevel.wait_readable(raw)
                self._reader_scope = None
                if scope.cancelled_caught or self._socket_reader is not None:
                    # A caller took the socket (no data is lost: recv had not run).  Also when our
                    # wait had already ended: what is there is left to the caller, which waits for
                    # the socket and would not be woken if we took its reply.
                    continue
                if raw is not None:
                    if not self._receive(raw):
                        break
                else:
                    if not data:
                        break
                    self.dispatch(core.receive_data(data, trio.current_time()))
                if core.has_data_to_send:
                    await self.flush()
        except TRANSPORT_ERRORS as e:
            self._transport_failed("reading from", e)
            return
        self._server_closed()

    def _receive(self, raw: socket.socket) -> bool:
        """Read what the (readable) socket holds and hand it to the core; False at the end of the stream.

        A large reply is read straight into one buffer sized from its length prefix (``recv_into``),
        as much of it per call as has arrived; reading goes on while reads come back full (a few
        times at most: the caller's wait for the socket is the scheduling point).
        """
        core = self.core
        for _ in range(_READS_PER_WAKEUP):
            view = core.receive_buffer()
            try:
                if view is None:
                    data = raw.recv(READ_SIZE)
                    if not data:
                        return False
                    self.dispatch(core.receive_data(data, self._now()))
                    full = len(data) == READ_SIZE
                else:
                    want = len(view)
                    n = raw.recv_into(view)
                    view.release()
                    if not n:
                        return False
                    self.dispatch(core.received_into(n, self._now()))
                    full = n == want
            except BlockingIOError:
                return True
            if not full or self._raw is not raw:
                return True
        return True

    def _close_raw(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            trio.lowlevel.notify_closing(raw)  # wakes a task waiting on it
            raw.close()

    def drop_connection(self) -> None:
        """End the current connection now: the core learns at once (so no request is sent into a dying
        socket and waiters fail fast), then the connection's tasks are cancelled."""
        self._stream = None
        self._close_raw()
        if self._conn_scope is not None:
            self._conn_scope.cancel()
        self.dispatch(self.core.connection_lost(trio.current_time()))

    # ------------------------------------------------------------------ writing and the timer

    async def flush(self, *, whole_burst: bool = False) -> None:
        """Write everything the core has queued.

        A lone request (nothing else in flight) is written at once by its caller: on a plain socket
        connection with a non-blocking send, so the sequential path has no task switch.  When other
        requests are already in flight, the timer task (which is also the writer) is woken instead: it
        runs after every task made runnable in the same scheduling round, so a burst leaves in one send.
        ``whole_burst``: the caller has queued its whole burst (a pipeline); write it now.

        What this sends is answered to the reader (unless a caller reads the socket): a reader resting
        after a caller's read (see :attr:`reader_handback`) is called back at once.
        """
        self._recall_reader()
        if self._write_without_blocking(whole_burst) and self._stream is not None:
            await self._write_rest(self._stream)

    def _recall_reader(self) -> None:
        """Someone waits for what the server sends next: a reader resting while no caller reads the
        socket goes back to it now rather than at the end of its slice."""
        if self._socket_reader is None:
            self._reader_resume.set()

    def _write_without_blocking(self, whole_burst: bool = False) -> bool:
        """:meth:`flush` as far as it goes without waiting; True if the rest must be written by awaiting
        :meth:`_write_rest` (a stream connection, or a send that would block).  ``whole_burst``: write
        now, even with other requests in flight (a lone request's caller passes it too)."""
        if self._writing or self._stream is None:
            return False
        core = self.core
        if not whole_burst and core.outstanding > 1:
            self._timer_wakeup.set()  # the timer task writes the burst
            return False
        raw = self._raw
        if raw is None:
            return True
        data = core.data_to_send()
        if not data:
            return False
        try:
            sent = raw.send(data)
        except BlockingIOError:
            sent = 0
        except TRANSPORT_ERRORS as e:
            self._transport_failed("write to", e)
            return False
        if sent == len(data):
            return False
        core.push_front(data[sent:])
        return True

    async def _write_rest(self, stream: trio.abc.Stream) -> None:
        """Write what is queued in a shielded loop (after :meth:`_write_without_blocking`).

        The loop is shielded from the caller's cancellation (a frame is written whole or not at all),
        but not unbounded.  A write blocked while the server keeps answering is not stalled (the server
        is busy, e.g. working through a deep queue of requests): the bound is the core's
        :attr:`~zkwire.sansio.session.SessionCore.liveness_deadline`, moved on by every answer that
        arrives meanwhile (:meth:`dispatch`).  Only when nothing sent has been answered for the read
        timeout is the connection dropped.
        """
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
                self.drop_connection()
        except TRANSPORT_ERRORS as e:
            self._transport_failed("write to", e)
        finally:
            self._writing = False
            self._write_scope = None

    def wake_timer(self) -> None:
        self._timer_wakeup.set()

    async def run_timer(self) -> None:
        """The timer (and writer of bursts): sleeps until the core's next deadline or a wake-up."""
        core = self.core
        with self.task_scope():
            while not core.state.is_terminal:
                self._timer_wakeup.clear()
                with trio.move_on_at(core.next_deadline()):
                    await self._timer_wakeup.wait()
                self.dispatch(core.handle_timer(trio.current_time()))
                if core.has_data_to_send:
                    await self.flush(whole_burst=True)

    # ------------------------------------------------------------------ events

    def dispatch(self, events: list[Event[PendingCall, Watcher]]) -> None:
        """Hand the core's events on: replies to their callers, notifications to watches, state changes
        to streams and listeners; a DropConnection drops the connection."""
        if self._write_scope is not None:
            self._write_scope.deadline = self.core.liveness_deadline
        if self._backlog:
            self._send_backlog()
        if self._room_waiters:
            free = self.max_in_flight - self.core.outstanding
            if free > 0:
                self._room.unpark(count=free)
        for ev in events:
            if isinstance(ev, _ANSWERS):
                if ev.error is None:
                    self._answered += 1
                call = ev.token  # PendingCall.resolve, inlined (once per reply)
                call.reply = ev
                task = call._task
                if task is not None:
                    call._task = None
                    trio.lowlevel.reschedule(task)
                else:
                    call._set = True
            elif isinstance(ev, WatchNotification):
                if ev.watchers:
                    watched = WatchedEvent(EventType(ev.type), ev.path, KeeperState(ev.state))
                    for w in ev.watchers:
                        w._deliver(watched)
            elif isinstance(ev, StateChanged):
                self._on_state_changed(ev)
            elif isinstance(ev, DropConnection):
                log.info("dropping connection to %s: %s", self.core.current_host, ev.reason)
                self.drop_connection()

    def _send_backlog(self) -> None:
        """Move waiting requests into the core as far as there is room (the writer sends them)."""
        core = self.core
        backlog = self._backlog
        free = self.max_in_flight - core.outstanding
        if free <= 0:
            return
        now = trio.current_time()
        moved = False
        while backlog and free > 0:
            op, record, path, watch, call = backlog[0]
            if call.queued:
                try:
                    core.send_request(op, record, call, now, path=path, watch=watch)
                except ConnectionLossError:
                    break  # no open connection: they wait for the next one
                except ZKError as e:  # the session ended, or the request cannot be encoded
                    call.resolve(Reply(call, 0, None, e))
                else:
                    free -= 1
                    moved = True
                call.queued = False
            backlog.popleft()
        if moved:
            self.wake_timer()

    def _fail_backlog(self) -> None:
        """The session has ended: every waiting request fails with a fresh copy of why."""
        while self._backlog:
            call = self._backlog.popleft()[4]
            if call.queued:
                call.queued = False
                call.resolve(Reply(call, 0, None, self.core.terminal_error()))

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
            self._fail_backlog()
            for w in self.core.watches.all_watchers():
                w._fail(copy_error(error))
            self.core.watches.clear()
            self.drop_connection()
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
                    self.drop_connection()
                    return
            await trio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # ------------------------------------------------------------------ requests

    async def call(
        self,
        op: int,
        record: Record | None,
        path: str | None = None,
        watch: WatchRequest[Watcher] | None = None,
    ) -> Reply[PendingCall]:
        """Send one request (waiting, in the caller's cancel scope, for room and for a connection) and
        return its reply.  A lone request's caller reads the socket itself (see the module docstring).

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        core = self.core
        call = PendingCall()
        ahead = core.outstanding
        if self._backlog or ahead >= self.max_in_flight:
            if core.state.is_terminal:
                raise core.terminal_error()
            call.queued = True
            self._backlog.append((op, record, path, watch, call))
            if core.outstanding < self.max_in_flight:
                self._send_backlog()  # room after all (entries given up at the head)
            try:
                await call.wait()
            except BaseException:
                call.queued = False  # given up: if still in the backlog, it is never sent
                raise
            return call.take_reply()
        while True:
            try:
                core.send_request(op, record, call, self._now(), path=path, watch=watch)
                break
            except ConnectionLossError:
                if self.closing:
                    raise ClientClosedError("client closed") from None
                await self._state_changed.wait()
                ahead = core.outstanding
        # A lone request (none ahead of it) is written and read by its caller.  Until something awaits,
        # no other request can be sent, and a failed write answers this one: ``ahead`` still holds.
        if self._write_without_blocking(not ahead) and self._stream is not None:
            await self._write_rest(self._stream)
            ahead = core.outstanding - 1  # others may have sent meanwhile (this one may be answered)
        if not ahead and call.reply is None and self._raw is not None and self._socket_reader is None:
            await self._read_replies(self._raw, (call,))
        else:
            await call.wait()
        return call.take_reply()

    async def call_burst(self, requests: Sequence[tuple[int, Record | None, str | None]]) -> list[Reply[PendingCall]]:
        """Send ``requests`` back to back (in bursts of at most ``max_in_flight``), then wait for every
        reply; a request that could not be sent has a ConnectionLossError reply.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        core = self.core
        calls: list[PendingCall] = []
        limit = self.max_in_flight
        for start in range(0, len(requests), limit):
            burst = requests[start : start + limit]
            while True:
                if core.state.is_terminal:
                    raise core.terminal_error()
                if not core.state.is_connected:
                    await self._state_changed.wait()
                elif core.outstanding and core.outstanding + len(burst) > limit:
                    await self.wait_for_room(len(burst))
                else:
                    break
            now = trio.current_time()
            for op, record, path in burst:
                call = PendingCall()
                try:
                    core.send_request(op, record, call, now, path=path)
                except ConnectionLossError as e:
                    call.resolve(Reply(call, 0, None, e))
                calls.append(call)
            await self.flush(whole_burst=True)
        raw = self._raw
        if raw is not None and self._socket_reader is None and core.outstanding == len(calls):
            await self._read_replies(raw, calls)
        else:
            for call in calls:
                if call.reply is None:
                    await call.wait()
            await trio.lowlevel.checkpoint_if_cancelled()
        return [call.take_reply() for call in calls]

    async def wait_for_room(self, count: int) -> None:
        """Wait until ``count`` more requests fit under :attr:`max_in_flight` (always once nothing is in
        flight: a larger burst then goes out whole)."""
        core = self.core
        while core.outstanding and core.outstanding + count > self.max_in_flight:
            self._room_waiters += 1
            try:
                await self._room.park()
            finally:
                self._room_waiters -= 1

    async def _read_replies(self, raw: socket.socket, calls: Sequence[PendingCall]) -> None:
        """Read the socket in the caller's own task until every one of ``calls`` has its reply.

        Everything received is handled as the reader task would (other replies, watch events, pings).
        The reader task is moved off the socket first (cancelling its wait unregisters it at once).  It is
        woken again when this returns with something left for it to read: requests still in flight,
        watches registered (a notification may come at any time), or a read given up (cancelled, or
        failed: a reply that comes later is read and dropped by the reader, as for any cancelled
        caller).  Otherwise it comes back by itself within :attr:`reader_handback`, and a caller that
        takes the socket again before then has not woken it at all.
        """
        core = self.core
        self._socket_reader = raw
        scope = self._reader_scope
        if scope is not None:
            scope.cancel()
        done = False
        try:
            for call in calls:
                while call.reply is None:
                    if self._raw is not raw:
                        await call.wait()  # the connection has ended
                        break
                    try:
                        await trio.lowlevel.wait_readable(raw)
                    except trio.ClosedResourceError:
                        continue  # closed by drop_connection: the call has failed by now
                    try:
                        open_ = self._receive(raw)
                    except TRANSPORT_ERRORS as e:
                        self._transport_failed("reading from", e)
                        continue
                    if not open_:
                        self._server_closed()
                        continue
                    if core.has_data_to_send:
                        await self.flush()
            done = True
        finally:
            if self._socket_reader is raw:
                self._socket_reader = None
                if not done or core.outstanding or core.watches:
                    self._recall_reader()

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close the session (closeSession) and stop all tasks.  Idempotent; never raises."""
        if self.closing:
            return
        self.closing = True
        core = self.core
        if core.close(trio.current_time()):
            await self.flush()
            with trio.move_on_after(min(2.0, core.read_timeout)):
                await self._connection_ended.wait()
        self.dispatch(core.mark_closed())
        self.drop_connection()
        self.cancel_tasks()


def _nonblocking_duplicate(stream: trio.abc.Stream) -> socket.socket | None:
    """A non-blocking duplicate of a plain socket stream's socket (None for TLS or in-memory streams)."""
    if not isinstance(stream, trio.SocketStream):
        return None
    sock = stream.socket
    raw = socket.fromfd(sock.fileno(), sock.family, sock.type)
    raw.setblocking(False)
    return raw


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
