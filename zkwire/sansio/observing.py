"""What a session does, told to observers: the events of :mod:`zkwire.observing`, made by the core.

A :class:`SessionCore <zkwire.sansio.session.SessionCore>` is observed once the I/O layer gives it an
:class:`Observation` (``core.observed``): from then on each request answered or failed, each change of
the connection or of the session's state, and each watch notification is made into an event and handed
to the observation's ``sink`` (a callable the I/O layer provides; it must only take the event and
return).  Unobserved, the core makes nothing: every hook is behind one ``is not None`` test.

The events carry what the core knows, nothing it would have to look up: op codes, not names (the
events' properties name them), the server as a :class:`~zkwire.sansio.hosts.HostPort`, times as
seconds since the epoch.  The core never reads a clock: the I/O layer gives ``now`` on its monotonic
clock and the observation the offset that makes it wall-clock time (``epoch_offset``).  A request that
fails with its connection has no ``now`` where the core fails it: its ``finished`` is None and the
I/O layer's sink stamps it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from ..constants import EventType
from ..errors import ZKError
from ..protocol.codec import op_name
from .events import SessionState
from .hosts import HostPort
from .matching import Pending

__all__ = [
    "ConnectionEvent",
    "ConnectionEventKind",
    "Observation",
    "ObservedEvent",
    "Observer",
    "RecipeEvent",
    "RequestEvent",
    "WatchEvent",
]


@dataclass(slots=True, eq=False)
class RequestEvent:
    """A request answered, or failed without an answer.

    Not frozen (one is built per request; a frozen dataclass costs three times as much to build);
    nothing changes it once an observer has it.
    """

    session_id: int
    xid: int
    #: The op code (:attr:`op_name` names it as the tracer does: ``getData``, ``create2``...).
    op: int
    #: The path the caller gave (chroot stripped); None for ops without one (multi, sync's own...).
    path: str | None
    #: The server the request was sent to.
    server: HostPort | None
    #: The request's frame, length prefix included.
    bytes_out: int
    #: The reply's frame, length prefix included (0 when it failed without one).
    bytes_in: int
    #: When the request was handed to the session (seconds since the epoch).
    started: float
    #: When its reply was read, or it failed (seconds since the epoch).
    finished: float | None
    #: The error it ended with: the class of the server's error code, as on the wire (an ``exists``
    #: of a missing node is a NoNodeError reply, which the client returns as None), or
    #: ConnectionLossError (and the like) for a request that failed with its connection; None on
    #: success.
    error: type[ZKError] | None
    #: Requests in flight on the connection when it was sent, itself included.
    in_flight: int = 1
    #: The number of the attempt, when the application retries (:func:`zkwire.retry`): 1 for the first.
    attempt: int = 1
    #: The caller's :class:`contextvars.Context` when the request was made, when an observer asked for
    #: it (``wants_context``; the OpenTelemetry adapter makes its spans children of the caller's span).
    context: Any = None

    @property
    def op_name(self) -> str:
        return op_name(self.op)

    @property
    def duration(self) -> float:
        """Seconds from :attr:`started` to :attr:`finished` (0 while it has no end)."""
        return 0.0 if self.finished is None else max(0.0, self.finished - self.started)

    @property
    def error_name(self) -> str | None:
        """The error's class name (``NoNodeError``...), None on success."""
        return None if self.error is None else self.error.__name__

    @property
    def retried(self) -> bool:
        """The application's retry of an earlier attempt (:attr:`attempt` > 1)."""
        return self.attempt > 1


class ConnectionEventKind(Enum):
    """What happened to a session's connection, or to the session (see :class:`ConnectionEvent`)."""

    #: A connection to ``server`` is open and the handshake starts.
    CONNECTING = "connecting"
    #: A connection to ``server`` could not be made (``cause``).
    ATTEMPT_FAILED = "attempt_failed"
    #: A new session opened on ``server``.
    CONNECTED = "connected"
    #: The session opened again, on a new connection to ``server``, after its connection was lost.
    REATTACHED = "reattached"
    #: A planned move (the ensemble's membership changed) is over: the session is on ``server`` now,
    #: no longer on ``previous``.
    MOVED = "moved"
    #: The connection to ``server`` ended (``cause``); the session lives on.
    LOST = "lost"
    #: The application was told the session may be in danger (no answer, or no connection).
    SUSPENDED = "suspended"
    #: Connected, to a read-only server.
    READ_ONLY = "read_only"
    #: The session expired (``cause``: who said so).
    EXPIRED = "expired"
    #: A credential was refused; the session cannot be used.
    AUTH_FAILED = "auth_failed"
    #: The application closed the session.
    CLOSED = "closed"


@dataclass(slots=True, eq=False)
class ConnectionEvent:
    """A change of the session's connection or state."""

    kind: ConnectionEventKind
    session_id: int
    #: The server concerned (for a state change, the one the session was on), or None.
    server: HostPort | None
    #: When (seconds since the epoch; stamped by the I/O layer when the core did not know).
    at: float | None
    #: Why, for a failed attempt, a lost connection, an expiry or a refusal.
    cause: str | None = None
    #: For :attr:`ConnectionEventKind.MOVED`: the server the session left.
    previous: HostPort | None = None


@dataclass(slots=True, eq=False)
class WatchEvent:
    """A watch notification the server sent, and how many of the application's watchers it woke."""

    session_id: int
    type: EventType | int
    #: The path as the application knows it (chroot stripped).
    path: str
    watchers: int
    server: HostPort | None
    at: float | None


@dataclass(frozen=True, slots=True)
class RecipeEvent:
    """A coordination recipe's event (reported by zklock through :meth:`zkwire.Client.report`).

    ``kind`` is one of ``queued`` (a contender's node is in the queue), ``granted``, ``released``,
    ``lost`` (the holder was told its lease is gone), ``abandoned`` (an acquire given up: cancelled,
    failed, or not granted without blocking).  ``recipe`` names the recipe (``mutex``, ``read``,
    ``write``, ``semaphore``, ``election``...), ``path`` its lock path.
    """

    recipe: str
    kind: str
    path: str
    session_id: int
    #: When (seconds since the epoch).
    at: float
    #: ``granted``: seconds from the acquire's start to the grant; ``abandoned``: to the give-up.
    wait: float | None = None
    #: ``released``, ``lost``: seconds the lock was held.
    hold: float | None = None
    #: ``granted`` and later: the lease's fencing token.
    token: int | None = None
    #: ``lost``: seconds from being told to the moment the server may expire the session (the last
    #: moment it heard from the client plus the session timeout); negative when told later than that.
    margin: float | None = None
    #: ``lost``: why.
    cause: str | None = None
    #: The acquiring task's :class:`contextvars.Context` (when an observer asked for it).
    context: Any = None


#: Every event an observer is given.
ObservedEvent = RequestEvent | ConnectionEvent | WatchEvent | RecipeEvent


@runtime_checkable
class Observer(Protocol):
    """What a client tells what it does to: one method, called with each event in order, in the
    observers' thread (never trio's: see :mod:`zkwire.client.observers`).  An observer may set
    ``wants_context = True`` to have each request's and each recipe event's caller
    :class:`contextvars.Context` (``event.context``)."""

    def on_event(self, event: ObservedEvent, /) -> None: ...


class Observation:
    """The core's link to its observers: the ``sink`` that takes each event, and the offset from the
    I/O layer's monotonic clock to the epoch (``now + epoch_offset`` is wall-clock time).

    ``capture``: called (in the task that sends a request) for the request's attempt number and its
    caller's context (:attr:`RequestEvent.attempt`, :attr:`RequestEvent.context`), when the I/O layer
    wants them; the core only passes what it returns on.  What is known of a request when it is sent
    and needed when it ends (its size, the depth, the tag) waits here, by xid.
    """

    __slots__ = ("_sent", "capture", "epoch_offset", "sink")

    def __init__(
        self,
        sink: Callable[[ObservedEvent], None],
        epoch_offset: float,
        capture: Callable[[], tuple[int, Any]] | None = None,
    ) -> None:
        self.sink = sink
        self.epoch_offset = epoch_offset
        self.capture = capture
        self._sent: dict[int, tuple[int, int, tuple[int, Any] | None]] = {}

    def sent(self, xid: int, size: int, in_flight: int, tag: tuple[int, Any] | None) -> None:
        """A request of the I/O layer's left in a frame of ``size`` bytes (its reply comes to
        :meth:`answered`): ``tag`` if the I/O layer captured it before, else captured now."""
        if tag is None and self.capture is not None:
            tag = self.capture()
        self._sent[xid] = (size, in_flight, tag)

    def answered(
        self,
        p: Pending[Any, Any],
        session_id: int,
        server: HostPort | None,
        size: int,
        now: float | None,
        error: type[ZKError] | None,
    ) -> None:
        """``p``'s reply, a frame of ``size`` bytes (0: none), was read at ``now`` (None: it failed with
        the connection, the sink stamps the time)."""
        offset = self.epoch_offset
        facts = self._sent.pop(p.xid, None)
        if facts is None:
            return  # sent before the session was observed
        out, in_flight, tag = facts
        attempt, context = (1, None) if tag is None else tag
        self.sink(
            RequestEvent(
                session_id,
                p.xid,
                p.op,
                p.path,
                server,
                out,
                size,
                p.sent + offset,
                None if now is None else now + offset,
                error,
                in_flight,
                attempt,
                context,
            )
        )

    def connection(
        self,
        kind: ConnectionEventKind,
        session_id: int,
        server: HostPort | None,
        now: float | None,
        cause: str | None = None,
        previous: HostPort | None = None,
    ) -> None:
        at = None if now is None else now + self.epoch_offset
        self.sink(ConnectionEvent(kind, session_id, server, at, cause, previous))

    def state(self, new: SessionState, session_id: int, server: HostPort | None, cause: str | None) -> None:
        """The session entered ``new`` (the states of :data:`STATE_EVENTS`; others say nothing here)."""
        kind = STATE_EVENTS.get(new)
        if kind is not None:
            self.sink(ConnectionEvent(kind, session_id, server, None, cause))

    def watch(
        self, session_id: int, type_: EventType | int, path: str, watchers: int, server: HostPort | None, now: float
    ) -> None:
        self.sink(WatchEvent(session_id, type_, path, watchers, server, now + self.epoch_offset))


#: The connection event for each state a session enters, when the state says it all.
STATE_EVENTS = {
    SessionState.SUSPENDED: ConnectionEventKind.SUSPENDED,
    SessionState.READ_ONLY: ConnectionEventKind.READ_ONLY,
    SessionState.EXPIRED: ConnectionEventKind.EXPIRED,
    SessionState.AUTH_FAILED: ConnectionEventKind.AUTH_FAILED,
    SessionState.CLOSED: ConnectionEventKind.CLOSED,
}
