"""The caller's side of a request: :class:`PendingCall`, where the reader leaves a reply for the task
waiting on it; :class:`Backlog`, the requests waiting for room under the driver's ``max_in_flight``;
and :class:`RequestPath`, what a caller's task does to send requests and get their replies (the
connection driver's base class)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import trio

from ..errors import ClientClosedError, ConnectionLossError, ZKError
from ..protocol.records import Record
from ..sansio.session import AuthResult, Reply, SessionCore, WatchRequest
from .watchers import Watcher

__all__ = ["Backlog", "BacklogEntry", "ClientCore", "PendingCall", "RequestPath"]


class PendingCall:
    """Where the reader leaves a reply for the task waiting on it (the token the core hands back): one
    task waits on it (:meth:`wait`) until :meth:`resolve`.  :class:`~zkwire.client.fastpath.FastCall` is
    the same without the :class:`trio.Event`."""

    __slots__ = ("_done", "queued", "reply")

    def __init__(self) -> None:
        self.reply: Reply[PendingCall] | AuthResult[PendingCall] | None = None
        #: Waiting in the driver's backlog (not sent yet); cleared when sent or given up.
        self.queued = False
        self._done = trio.Event()

    def resolve(self, reply: Reply[PendingCall] | AuthResult[PendingCall]) -> None:
        """Leave ``reply`` and wake the waiting task."""
        self.reply = reply
        self._done.set()

    async def wait(self) -> None:
        """Wait, in the caller's cancel scope, until :meth:`resolve` (a checkpoint even if it was)."""
        await self._done.wait()

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

#: A request waiting for room: op, record, path, watch and the call its caller waits on.
BacklogEntry = tuple[int, Record | None, str | None, WatchRequest[Watcher] | None, PendingCall]


class Backlog(deque[BacklogEntry]):
    """Flow control: the requests made while ``limit`` requests are in flight, oldest first (a deque, so
    that the driver's checks of it on every request and reply cost no call).

    A caller whose request waits here is parked once, for its reply (:meth:`wait_for_reply`); whoever
    frees room (the reader, as replies come) sends it (:meth:`send`).  An entry whose call is no longer
    ``queued`` was given up by its cancelled caller and is skipped.  A caller with a burst to send waits
    for room as a whole (:meth:`wait_for_room`) and is woken only as room frees (:meth:`make_room`): 10,000
    waiters are not all woken by every reply.
    """

    __slots__ = ("_core", "_room", "_wake_writer", "room_waiters", "tags")

    def __init__(self, core: ClientCore, wake_writer: Callable[[], None]) -> None:
        super().__init__()
        self._core = core
        #: Called when requests were moved into the core (their bytes wait for a writer).
        self._wake_writer = wake_writer
        #: Callers waiting for room for a burst, oldest first.
        self._room = trio.lowlevel.ParkingLot()
        #: How many callers are parked in ``_room`` (read on every reply: cheaper than asking the lot).
        self.room_waiters = 0
        #: The observers' tag of each waiting request, captured in its caller's task (only while the
        #: session is observed: see :class:`~zkwire.sansio.observing.Observation`).
        self.tags: dict[PendingCall, tuple[int, object]] = {}

    async def wait_for_reply(self, entry: BacklogEntry, limit: int) -> None:
        """Queue ``entry`` and wait, in the caller's cancel scope, until its call has its reply.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        core = self._core
        if core.state.is_terminal:
            raise core.terminal_error()
        call = entry[4]
        call.queued = True
        observed = core.observed
        if observed is not None and observed.capture is not None:
            self.tags[call] = observed.capture()
        self.append(entry)
        if core.outstanding < limit:
            self.send(limit)  # room after all (entries given up at the head)
        try:
            await call.wait()
        except BaseException:
            call.queued = False  # given up: if still in the backlog, it is never sent
            raise

    def send(self, limit: int) -> None:
        """Move waiting requests into the core as far as there is room under ``limit`` (the writer
        sends them)."""
        core = self._core
        free = limit - core.outstanding
        if free <= 0:
            return
        now = trio.current_time()
        moved = False
        while self and free > 0:
            op, record, path, watch, call = self[0]
            tag = self.tags.pop(call, None) if self.tags else None
            if call.queued:
                try:
                    core.send_request(op, record, call, now, path=path, watch=watch, tag=tag)
                except ConnectionLossError:
                    break  # no open connection: they wait for the next one
                except ZKError as e:  # the session ended, or the request cannot be encoded
                    call.resolve(Reply(call, 0, None, e))
                else:
                    free -= 1
                    moved = True
                call.queued = False
            self.popleft()
        if moved:
            self._wake_writer()

    def fail(self) -> None:
        """The session has ended: every waiting request fails with a fresh copy of why."""
        self.tags.clear()
        while self:
            call = self.popleft()[4]
            if call.queued:
                call.queued = False
                call.resolve(Reply(call, 0, None, self._core.terminal_error()))

    async def wait_for_room(self, count: int, limit: int) -> None:
        """Wait until ``count`` more requests fit under ``limit`` (always once nothing is in flight: a
        larger burst then goes out whole)."""
        core = self._core
        while core.outstanding and core.outstanding + count > limit:
            self.room_waiters += 1
            try:
                await self._room.park()
            finally:
                self.room_waiters -= 1

    def make_room(self, limit: int) -> None:
        """Wake as many callers waiting for room as there is room for under ``limit``."""
        free = limit - self._core.outstanding
        if free > 0:
            self._room.unpark(count=free)


class RequestPath:
    """The request path of :class:`~zkwire.client.connection.ConnectionDriver` (its base class): a
    caller hands its request to the core with a :class:`PendingCall` as the token, has what the core
    queued written (:meth:`flush`), and waits on the call until the reader resolves it.  Requests beyond
    :attr:`max_in_flight` wait in the :class:`Backlog`; a request made without a connection waits for
    the next one.  The driver provides the attributes declared here and :meth:`flush`.
    """

    #: Requests in flight on one connection at most; more wait (in their caller's cancel scope) until
    #: replies make room.
    max_in_flight = 1000

    core: ClientCore
    #: True once the client is closing: a request that finds no connection fails instead of waiting.
    closing: bool
    _backlog: Backlog
    #: Replaced by a fresh Event at each state change (set: the state changed).
    _state_changed: trio.Event
    _now: Callable[[], float]

    async def flush(self, *, whole_burst: bool = False) -> None:
        """Write everything the core has queued (see the driver's)."""
        raise NotImplementedError

    async def call(
        self,
        op: int,
        record: Record | None,
        path: str | None = None,
        watch: WatchRequest[Watcher] | None = None,
    ) -> Reply[PendingCall]:
        """Send one request (waiting, in the caller's cancel scope, for room and for a connection) and
        return its reply, which the reader task hands over.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        call = PendingCall()
        if self._backlog or self.core.outstanding >= self.max_in_flight:
            await self._backlog.wait_for_reply((op, record, path, watch, call), self.max_in_flight)
        else:
            await self._send_when_connected(op, record, call, path, watch)
            await self.flush()
            await call.wait()
        return call.take_reply()

    async def _send_when_connected(
        self,
        op: int,
        record: Record | None,
        call: PendingCall,
        path: str | None,
        watch: WatchRequest[Watcher] | None,
    ) -> None:
        """Hand the request to the core, waiting for a connection if there is none."""
        while True:
            try:
                self.core.send_request(op, record, call, self._now(), path=path, watch=watch)
                return
            except ConnectionLossError:
                if self.closing:
                    raise ClientClosedError("client closed") from None
                await self._state_changed.wait()

    async def call_burst(self, requests: Sequence[tuple[int, Record | None, str | None]]) -> list[Reply[PendingCall]]:
        """Send ``requests`` back to back (in bursts of at most ``max_in_flight``), then wait for every
        reply; a request that could not be sent has a ConnectionLossError reply.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
        """
        calls = await self._send_bursts(requests, PendingCall)
        await self._wait_for_replies(calls)
        return [call.take_reply() for call in calls]

    @staticmethod
    async def _wait_for_replies(calls: Sequence[PendingCall]) -> None:
        """Wait until every one of ``calls`` has its reply (one checkpoint at least)."""
        for call in calls:
            if call.reply is None:
                await call.wait()
        await trio.lowlevel.checkpoint_if_cancelled()

    async def _send_bursts(
        self, requests: Sequence[tuple[int, Record | None, str | None]], new_call: Callable[[], PendingCall]
    ) -> list[PendingCall]:
        """:meth:`call_burst`'s sending: each burst written whole once it fits; the calls, in order."""
        core = self.core
        calls: list[PendingCall] = []
        limit = self.max_in_flight
        for start in range(0, len(requests), limit):
            burst = requests[start : start + limit]
            while True:
                if core.state.is_terminal:
                    raise core.terminal_error()
                if not core.ready:
                    await self._state_changed.wait()
                elif core.outstanding and core.outstanding + len(burst) > limit:
                    await self._backlog.wait_for_room(len(burst), limit)
                else:
                    break
            now = trio.current_time()
            for op, record, path in burst:
                call = new_call()
                try:
                    core.send_request(op, record, call, now, path=path)
                except ConnectionLossError as e:
                    call.resolve(Reply(call, 0, None, e))
                calls.append(call)
            await self.flush(whole_burst=True)
        return calls
