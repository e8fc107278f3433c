"""What the session core tells the I/O layer: the session's state and the events it returns.

The core is generic in the I/O layer's token and watcher types: a :class:`Reply` carries the token given
with its request (:data:`TokenT`), a :class:`WatchNotification` the watchers registered (:data:`WatcherT`);
the core never looks inside either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeAlias, TypeVar

from ..constants import EventType, KeeperState
from ..errors import ZKError
from ..protocol.records import Record
from .hosts import HostPort
from .watches import WatchKind

__all__ = [
    "TokenT",
    "WatcherT",
    "SessionState",
    "WatchRequest",
    "Reply",
    "WatchNotification",
    "StateChanged",
    "DropConnection",
    "AuthResult",
    "SaslStep",
    "DeadlineMoved",
    "Moved",
    "Event",
]

#: What the I/O layer hands in with a request and gets back in its :class:`Reply` (opaque to the core).
TokenT = TypeVar("TokenT")
#: What the I/O layer registers as a watcher and gets back in a :class:`WatchNotification` (opaque too).
WatcherT = TypeVar("WatcherT")


class SessionState(Enum):
    """Where the session stands, as the application sees it."""

    #: No session yet; the first connection is being made.
    CONNECTING = "connecting"
    #: Connected to a read-write server.
    CONNECTED = "connected"
    #: Connected to a read-only server (only with ``allow_read_only``): writes fail with NotReadOnlyError.
    READ_ONLY = "read_only"
    #: The connection was lost, or nothing sent in the last two thirds of the session timeout has been
    #: answered (a server still answering older requests keeps its connection); the session may still
    #: be alive on the servers.  Reconnecting, or CONNECTED again once something newer is answered.
    SUSPENDED = "suspended"
    #: The session is gone: a server said so, or no server was reached for the whole session timeout.
    EXPIRED = "expired"
    #: The server rejected a credential given to open_client, or on a reconnect one it had accepted
    #: before; the session cannot be used.
    AUTH_FAILED = "auth_failed"
    #: Closed by the application.
    CLOSED = "closed"

    @property
    def is_terminal(self) -> bool:
        return self in (SessionState.EXPIRED, SessionState.AUTH_FAILED, SessionState.CLOSED)

    @property
    def is_connected(self) -> bool:
        return self in (SessionState.CONNECTED, SessionState.READ_ONLY)


@dataclass(frozen=True, slots=True)
class WatchRequest(Generic[WatcherT]):
    """A watch to register when the request it rides on succeeds."""

    kind: WatchKind
    path: str  # server path
    watcher: WatcherT


@dataclass(slots=True)
class Reply(Generic[TokenT]):
    """The outcome of a request: ``body`` on success, or ``error``.  (Not frozen: one is built per
    reply, and a frozen dataclass costs three times as much to build; nothing changes it.)"""

    token: TokenT
    zxid: int
    body: Record | None
    error: ZKError | None


@dataclass(frozen=True, slots=True)
class WatchNotification(Generic[WatcherT]):
    """A server notification and the local watchers it wakes (path already chroot-stripped)."""

    type: EventType | int
    state: KeeperState | int
    path: str
    watchers: list[WatcherT]


@dataclass(frozen=True, slots=True)
class StateChanged:
    old: SessionState
    new: SessionState
    error: ZKError | None = None


@dataclass(frozen=True, slots=True)
class DropConnection:
    """The core found the connection unusable; the I/O layer must close it, then call connection_lost."""

    reason: str


@dataclass(frozen=True, slots=True)
class AuthResult(Generic[TokenT]):
    token: TokenT
    error: ZKError | None


@dataclass(frozen=True, slots=True, eq=False)
class SaslStep:
    """The SASL exchange needs its next token: the I/O layer calls :attr:`compute` -- in a worker thread
    when :attr:`blocking` (a mechanism that may wait on a KDC) -- and hands the result, or the
    :class:`~zkwire.errors.AuthFailedError` it raised, to
    :meth:`~zkwire.sansio.session.SessionCore.sasl_step_done` with this step.  A step of a connection
    that has meanwhile ended is ignored there."""

    #: Not in the repr: it holds the server's last token.
    compute: Callable[[], bytes | None] = field(repr=False)
    blocking: bool = False


@dataclass(frozen=True, slots=True)
class DeadlineMoved:
    """:meth:`~zkwire.sansio.session.SessionCore.next_deadline` may now be earlier than when the I/O
    layer last read it (the handshake was answered: the SYNCING phase's clocks run): read it again."""


@dataclass(frozen=True, slots=True)
class Moved:
    """A planned move (:mod:`~zkwire.sansio.moves`) is over: the session is open on ``target``, or, with
    ``target`` None, the move was given up and the session carries on where it was.  Either way requests
    may be sent again: the I/O layer wakes the callers waiting for a connection (the state did not change,
    so no :class:`StateChanged` does)."""

    source: HostPort | None
    target: HostPort | None


Event: TypeAlias = (
    Reply[TokenT]
    | WatchNotification[WatcherT]
    | StateChanged
    | DropConnection
    | AuthResult[TokenT]
    | SaslStep
    | DeadlineMoved
    | Moved
)
