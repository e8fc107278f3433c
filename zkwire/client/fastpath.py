"""The driver's fast path: :class:`FastPathDriver`, the plain driver with the shortcuts that make a
request cheap.  Every :class:`~zkwire.client.api.Client` runs it unless it is switched off
(:data:`FAST_PATH`, or :func:`connection_driver` with ``fast_path=False``).

The plain design is :class:`~zkwire.client.connection.ConnectionDriver`'s: a caller writes its request
and waits on its call's :class:`trio.Event`; the reader task reads every reply and wakes the caller.
For a sequential request that is three scheduler passes (the write through the stream is a schedule
point, the reply wakes the reader in one pass and the caller runs in the next) and an Event, with its
parking lot, per request.  The fast path keeps the design's
rules (one writer at a time, frames whole, every byte the server sends handed to the core in order) and
takes three shortcuts, each measured with ``bench/instructions.py`` and ``bench/run.py``:

* **Waiters parked on trio's scheduler.**  :class:`FastCall` is a
  :class:`~zkwire.client.calls.PendingCall` without the Event: the waiting task is parked with
  :func:`trio.lowlevel.wait_task_rescheduled` and rescheduled by :meth:`FastCall.resolve`.
* **A lone request writes itself.**  On a plain TCP connection the driver keeps a non-blocking duplicate
  of the socket; a request with nothing else in flight is written by its caller with one ``send`` (no
  task switch, and the shielded loop only if the send would block).  A request with others in flight
  leaves the writing to the timer task, which runs after every task made runnable in the same
  scheduling round: a burst of callers leaves in one send.
* **The caller reads its own reply** (the *reader hand-back*).  A lone request's caller reads the
  socket itself until its reply has come, handling whatever else arrives on the way exactly as the
  reader would (other replies, watch events, pings); the reader task steps aside meanwhile (its wait
  is cancelled, which unregisters it from the socket at once).  The caller hands the socket back when it
  leaves something for the reader to read (requests in flight, watches that may fire, a read given up);
  when nothing can arrive but the connection's end, the reader comes back by itself within
  :attr:`FastPathDriver.reader_handback`, so a run of sequential requests does not wake it for every
  one.  A sequential request then costs one scheduler pass.  The watch on the ensemble's configuration
  node (every client following its ensemble has one) does not count as a watch that may fire here: its
  rare event may wait for the reader's next slice (20 ms at most), and the request path stays as
  cheap as without it.

Over TLS or any stream that is not a plain socket there is no duplicate to use: the fast driver then
reads as the plain one does and keeps only the first shortcut and the timer's bursts.  On the duplicate,
a large reply is read with ``recv_into`` straight into one buffer sized from its length prefix (up to
1 MiB; a longer one's buffer grows as its bytes come: see :mod:`zkwire.protocol.framing`).

Measured on 2026-11-27 (``bench/instructions.py --peers zkwire,zkwire-plain``: user-space instructions
per sequential getData under callgrind, which the machine's load does not change): about 139,000 on the
fast path, about 340,000 on the plain driver, which takes three scheduler passes per request instead of
one (counted by ``tests/server/test_reader_handback.py``: 1.0 and 2.8).

``tests/unit/test_client_driver.py`` and ``tests/server/test_reader_handback.py`` run their behaviour
tests against both drivers; the hand-back's own tests run against this one.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence

import trio

from ..errors import ConnectionLossError
from ..protocol.framing import READ_SIZE
from ..protocol.records import Record
from ..sansio.ensemble import CONFIG_PATH
from ..sansio.session import AuthResult, Reply, WatchRequest
from .calls import ClientCore, PendingCall
from .connection import TRANSPORT_ERRORS, Connect, ConnectionDriver
from .watchers import Watcher

__all__ = ["FAST_PATH", "FastCall", "FastPathDriver", "connection_driver"]

#: Whether :func:`connection_driver` gives the fast path when not told (tests and benchmarks set it to
#: False to run the plain driver).
FAST_PATH = True

#: Reads at most per wake-up of a socket reader (each one a full buffer's worth).
_READS_PER_WAKEUP = 8


def connection_driver(core: ClientCore, connect: Connect, *, fast_path: bool | None = None) -> ConnectionDriver:
    """The driver for a client: a :class:`FastPathDriver`, or the plain
    :class:`~zkwire.client.connection.ConnectionDriver` when ``fast_path`` is False (None: :data:`FAST_PATH`)."""
    if FAST_PATH if fast_path is None else fast_path:
        return FastPathDriver(core, connect)
    return ConnectionDriver(core, connect)


class FastCall(PendingCall):
    """A :class:`~zkwire.client.calls.PendingCall` whose waiting task is parked directly on trio's
    scheduler: what the base class's :class:`trio.Event` does for one waiter, without allocating one
    (with its parking lot) per request.  A call is resolved once its reply is there."""

    __slots__ = ("_task",)

    def __init__(self) -> None:
        # The base class's fields without its Event, which a FastCall does not use.
        self.reply = None
        self.queued = False
        self._task: trio.lowlevel.Task | None = None

    def resolve(self, reply: Reply[PendingCall] | AuthResult[PendingCall]) -> None:
        self.reply = reply
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        if self.reply is not None:
            await trio.lowlevel.checkpoint()
            return
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


class FastPathDriver(ConnectionDriver):
    """The :class:`~zkwire.client.connection.ConnectionDriver` with the fast path (see the module
    docstring): :class:`FastCall` waiters, a lone request written and read by its caller on a plain
    socket, the timer writing bursts."""

    #: How long at most the reader stays away from the socket after a caller that read its own reply
    #: left nothing behind that anyone waits for (no request in flight, no watch): then only the
    #: connection's end (or an unasked-for reply) can arrive, and it is noticed this much later at most.
    #: The reader rests in slices this long while callers read, so a run of sequential requests wakes it
    #: once per slice instead of once per request.
    reader_handback = 0.02

    def __init__(self, core: ClientCore, connect: Connect) -> None:
        super().__init__(core, connect)
        #: A duplicate of a plain socket connection's socket, for writes that complete without blocking
        #: and for callers reading their own reply.
        self._raw: socket.socket | None = None
        #: The raw socket a caller is reading its own reply from (the reader task steps aside meanwhile).
        self._socket_reader: socket.socket | None = None
        #: The reader's wait for the socket, cancelled by a caller that takes the socket.
        self._reader_scope: trio.CancelScope | None = None
        #: Set to call the resting reader back before its slice ends (a fresh Event each rest).
        self._reader_resume = trio.Event()

    # ------------------------------------------------------------------ the connection's socket

    def _stream_opened(self, stream: trio.abc.Stream) -> None:
        self._raw = _nonblocking_duplicate(stream)

    def _stream_closed(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            trio.lowlevel.notify_closing(raw)  # wakes a task waiting on it
            raw.close()

    # ------------------------------------------------------------------ reading

    async def _read(self, stream: trio.abc.Stream) -> bool:
        """The reader on the socket's duplicate, stepping aside while a caller reads its own reply; on
        any other stream, the plain reader.  True when the server has closed the stream."""
        raw = self._raw
        if raw is None:
            return await super()._read(stream)
        core = self.core
        while True:
            if self._socket_reader is not None:
                # A caller reads its own reply.  It wakes us when it leaves something for us; when it
                # leaves nothing, we come back at the end of this slice (see reader_handback).
                resume = self._reader_resume = trio.Event()
                with trio.move_on_after(self.reader_handback):
                    await resume.wait()
                continue
            if self._raw is not raw:
                return False  # the connection was dropped (and the socket closed) meanwhile
            with trio.CancelScope() as scope:
                self._reader_scope = scope
                await trio.lowlevel.wait_readable(raw)
            self._reader_scope = None
            if scope.cancelled_caught or self._socket_reader is not None:
                # A caller took the socket (no data is lost: recv had not run).  Also when our wait had
                # already ended: what is there is left to the caller, which waits for the socket and
                # would not be woken if we took its reply.
                continue
            if not self._receive(raw):
                return True
            if core.has_data_to_send:
                await self.flush()

    def _receive(self, raw: socket.socket) -> bool:
        """Read what the (readable) socket holds and hand it to the core; False at the end of the stream.

        A large reply is read straight into its buffer (``recv_into``; see
        :meth:`~zkwire.protocol.framing.FrameDecoder.receive_buffer`), as much of it per call as has
        arrived; reading goes on while reads come back full (a few times at most: the caller's wait for
        the socket is the scheduling point).
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

    def _recall_reader(self) -> None:
        """Someone waits for what the server sends next: a reader resting while no caller reads the
        socket goes back to it now rather than at the end of its slice."""
        if self._socket_reader is None:
            self._reader_resume.set()

    # ------------------------------------------------------------------ writing

    async def flush(self, *, whole_burst: bool = False) -> None:
        """Write everything the core has queued.

        A lone request (nothing else in flight) is written at once: on a plain socket connection with
        a non-blocking send, so the sequential path has no task switch.  When other requests are already
        in flight, the timer task is woken instead: it runs after every task made runnable in the same
        scheduling round, so a burst leaves in one send.  ``whole_burst``: the caller has queued its
        whole burst (a pipeline, a timer round); write it now.

        What this sends is answered to the reader (unless a caller reads the socket): a reader resting
        after a caller's read (see :attr:`reader_handback`) is called back at once.
        """
        self._recall_reader()
        if self._write_without_blocking(whole_burst):
            await self._write_queued()

    def _write_without_blocking(self, whole_burst: bool = False) -> bool:
        """:meth:`flush` as far as it goes without waiting; True if the rest must be written by awaiting
        :meth:`_write_queued` (a stream connection, or a send that would block).  ``whole_burst``: write
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

    # ------------------------------------------------------------------ requests

    async def call(
        self,
        op: int,
        record: Record | None,
        path: str | None = None,
        watch: WatchRequest[Watcher] | None = None,
    ) -> Reply[PendingCall]:
        """Send one request (waiting, in the caller's cancel scope, for room and for a connection) and
        return its reply.  A lone request's caller writes it and reads the socket itself.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        core = self.core
        call = FastCall()
        ahead = core.outstanding
        if self._backlog or ahead >= self.max_in_flight:
            await self._backlog.wait_for_reply((op, record, path, watch, call), self.max_in_flight)
            return call.take_reply()
        try:
            core.send_request(op, record, call, self._now(), path=path, watch=watch)
        except ConnectionLossError:
            await self._send_when_connected(op, record, call, path, watch)
            ahead = core.outstanding - 1
        # A lone request (none ahead of it) is written and read by its caller.  Until something awaits,
        # no other request can be sent, and a failed write answers this one: ``ahead`` still holds.
        if self._write_without_blocking(not ahead):
            await self._write_queued()
            ahead = core.outstanding - 1  # others may have sent meanwhile (this one may be answered)
        if not ahead and call.reply is None and self._raw is not None and self._socket_reader is None:
            await self._read_replies(self._raw, (call,))
        else:
            await call.wait()
        return call.take_reply()

    async def call_burst(self, requests: Sequence[tuple[int, Record | None, str | None]]) -> list[Reply[PendingCall]]:
        """:meth:`~zkwire.client.connection.ConnectionDriver.call_burst`; a burst alone in flight is read
        by its caller."""
        calls = await self._send_bursts(requests, FastCall)
        raw = self._raw
        if raw is not None and self._socket_reader is None and self.core.outstanding == len(calls):
            await self._read_replies(raw, calls)
        else:
            await self._wait_for_replies(calls)
        return [call.take_reply() for call in calls]

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
                if not done or core.outstanding or core.watches.beyond(CONFIG_PATH):
                    self._recall_reader()


def _nonblocking_duplicate(stream: trio.abc.Stream) -> socket.socket | None:
    """A non-blocking duplicate of a plain socket stream's socket (None for TLS or in-memory streams)."""
    if not isinstance(stream, trio.SocketStream):
        return None
    sock = stream.socket
    raw = socket.fromfd(sock.fileno(), sock.family, sock.type)
    raw.setblocking(False)
    return raw
