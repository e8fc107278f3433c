"""The liveness clocks of a session: when to ping, when a connection counts as dead, when the session is
suspended on a connection that still answers, and when the client gives the session up by itself.

Every moment is a float from the I/O layer's monotonic clock, handed in; nothing here reads a clock.

Liveness is timed from what proves that the server heard us, never from what merely arrives (a watch
notification, a ping answer nobody asked for, half a frame): the send time of the newest request, ping
or ConnectRequest that has been answered (:attr:`Liveness.last_confirmed`).  A server expires a session
one timeout after it last heard from the client, so dropping the connection two thirds of a timeout
after that moment tells the application at least a third of a timeout before the session can expire,
whatever else the server keeps sending.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from .handshake import Phase

__all__ = ["Due", "Liveness"]

_INF = float("inf")


class Due(NamedTuple):
    """What the clocks ask of the session at a moment (:meth:`Liveness.due`), each with why; the session
    acts on it."""

    #: The client is to give the session up by itself (no server reached for the session timeout).
    expire: str | None = None
    #: The connection is to be dropped now.
    drop: str | None = None
    #: Answers still come, but none to anything recent: the session is to be SUSPENDED.
    suspend: str | None = None
    #: The oldest request in flight is lost: the connection is to be dropped, naming it.
    lost: bool = False
    #: A ping is to be sent.
    ping: bool = False


_NOTHING = Due()


class Liveness:
    """The clocks of one session across its connections, and the deadlines they give.

    ``timeout`` is the session timeout the clocks run on: the requested one until a server negotiates
    one (:meth:`attached`).  The read timeout is two thirds of it, the ping interval a third.
    """

    __slots__ = (
        "answered_at",
        "connect_deadline",
        "last_confirmed",
        "last_heard",
        "last_send",
        "negotiated",
        "pings",
        "requested",
    )

    def __init__(self, requested: float) -> None:
        self.requested = requested
        #: The timeout the server granted (clamped: see "Server values" in handshake.py); None before.
        self.negotiated: float | None = None
        #: When anything was last sent on this connection (pings are due a ping interval later).
        self.last_send = 0.0
        #: Send times of the pings on this connection that are not answered yet (oldest first).
        self.pings: deque[float] = deque()
        #: When the handshake must be answered by.
        self.connect_deadline = 0.0
        #: The send time of the newest request, ping or ConnectRequest answered on this connection.
        self.last_confirmed = 0.0
        #: When the newest answer arrived (of anything sent on this connection): the connection is
        #: dropped only when nothing has been answered for the read timeout.  Between the two deadlines
        #: -- answers still arriving, but none to anything sent in the last read timeout (a deep
        #: pipeline draining, pings queued behind it) -- the session is SUSPENDED on the open connection
        #: and CONNECTED again as soon as something newer is answered.
        self.answered_at = 0.0
        #: :attr:`last_confirmed` across connections (None before the first session): client-side expiry.
        self.last_heard: float | None = None

    @property
    def timeout(self) -> float:
        return self.negotiated or self.requested

    @property
    def read_timeout(self) -> float:
        return (self.negotiated or self.requested) * 2 / 3

    @property
    def ping_interval(self) -> float:
        return (self.negotiated or self.requested) / 3

    # ------------------------------------------------------------------ what happened

    def connection_made(self, now: float, connect_timeout: float) -> None:
        """A ConnectRequest is queued at ``now``; its answer is due within ``connect_timeout``."""
        self.connect_deadline = now + connect_timeout
        self.last_send = self.last_confirmed = self.answered_at = now
        self.pings.clear()

    def attached(self, timeout: float, now: float) -> None:
        """The handshake was answered at ``now``, granting ``timeout``: the server heard us when the
        ConnectRequest was queued."""
        self.negotiated = timeout
        self.last_heard = self.last_confirmed
        self.answered_at = now

    def confirm(self, sent: float, now: float) -> bool:
        """The server answered, at ``now``, something sent at ``sent``: it heard from us then or later.
        True when that is newer than anything confirmed before."""
        self.answered_at = now
        if sent > self.last_confirmed:
            self.last_confirmed = self.last_heard = sent
            return True
        return False

    def ping_answered(self) -> float | None:
        """A ping answer came: the send time of the ping it answers (None if none is outstanding, and an
        answer to no ping of ours proves nothing)."""
        return self.pings.popleft() if self.pings else None

    def pinged(self, now: float) -> None:
        self.pings.append(now)
        self.last_send = now

    # ------------------------------------------------------------------ deadlines

    @property
    def server_expiry(self) -> float | None:
        """The earliest moment a server may expire the session: a session timeout after the newest moment
        a server is known to have heard from the client (None before the first session)."""
        if self.last_heard is None or self.negotiated is None:
            return None
        return self.last_heard + self.negotiated

    def expiry(self, vouched: bool) -> float | None:
        """When the client treats the session as expired by itself: a session timeout after the server
        last heard from it, while no connection vouches for it (``vouched``: connected, or the
        connection open; a server that still answers would close it if the session expired); None
        when that does not apply."""
        return None if vouched else self.server_expiry

    def liveness_deadline(self, phase: Phase) -> float:
        """When the connection counts as dead unless the server answers something before then (see
        :attr:`~zkwire.sansio.session.SessionCore.liveness_deadline`)."""
        if phase is Phase.IDLE:
            return _INF
        if phase is Phase.HANDSHAKE:
            return self.connect_deadline
        if phase is Phase.SYNCING:
            return self.last_confirmed + self.read_timeout
        return self.answered_at + self.read_timeout

    def next_deadline(self, phase: Phase, connected: bool, oldest_sent: float | None, may_ping: bool = True) -> float:
        """The next moment :meth:`due` can change its answer (inf if none); ``connected``: the session is
        CONNECTED or READ_ONLY; ``oldest_sent``: when the oldest request in flight was sent;
        ``may_ping``: false while nothing but a SASL exchange may be sent (no ping is due then).

        The handshake's answer starts the SYNCING phase, whose deadlines (a ping, the read timeout) may
        come before the connect deadline the timer was asleep until: the core then says so with a
        :class:`~zkwire.sansio.events.DeadlineMoved` event."""
        deadline = self._connection_deadline(phase, connected, oldest_sent, may_ping)
        expiry = self.expiry(connected or phase is Phase.OPEN)
        return deadline if expiry is None else min(deadline, expiry)

    def _connection_deadline(
        self, phase: Phase, connected: bool, oldest_sent: float | None, may_ping: bool = True
    ) -> float:
        if phase is Phase.HANDSHAKE:
            return self.connect_deadline
        if phase is Phase.SYNCING:
            dead = self.last_confirmed + self.read_timeout
            return min(dead, self.last_send + self.ping_interval) if may_ping else dead
        if phase is not Phase.OPEN:
            return _INF
        deadline = min(self.answered_at + self.read_timeout, self.last_send + self.ping_interval)
        if connected:
            deadline = min(deadline, self.last_confirmed + self.read_timeout)
        if oldest_sent is not None and self.last_confirmed > oldest_sent:
            deadline = min(deadline, oldest_sent + self.timeout)
        return deadline

    def due(
        self,
        now: float,
        phase: Phase,
        connected: bool,
        oldest_sent: float | None,
        connect_timeout: float,
        may_ping: bool = True,
    ) -> Due:
        """What is due at ``now`` (arguments as for :meth:`next_deadline`): the session given up
        (:meth:`expiry`), else the connection dropped (:meth:`dead`), else, on a connection past its
        handshake, the session suspended (:meth:`unconfirmed`, when open and connected) and either the
        connection dropped for a lost request (:meth:`lost`) or a ping (:meth:`ping_due`)."""
        expiry = self.expiry(connected or phase is Phase.OPEN)
        if expiry is not None and now >= expiry:
            return Due(expire=f"no server reached for {now - expiry + self.timeout:.1f}s")
        reason = self.dead(now, phase, connect_timeout)
        if reason is not None:
            return Due(drop=reason)
        if phase is not Phase.SYNCING and phase is not Phase.OPEN:
            return _NOTHING
        suspend = None
        if phase is Phase.OPEN and connected and self.unconfirmed(now):
            suspend = f"answers arrive, but none to anything sent in the last {now - self.last_confirmed:.2f}s"
        if oldest_sent is not None and self.lost(now, oldest_sent):
            return Due(suspend=suspend, lost=True)
        return Due(suspend=suspend, ping=may_ping and self.ping_due(now))

    def dead(self, now: float, phase: Phase, connect_timeout: float) -> str | None:
        """Why the connection is to be dropped now (None: it is not): no handshake answer in time;
        while re-attaching, nothing sent answered for the read timeout; when open, nothing answered
        at all for the read timeout."""
        if phase is Phase.HANDSHAKE and now >= self.connect_deadline:
            return f"no handshake reply within {connect_timeout:.2f}s"
        if phase is Phase.SYNCING and now >= self.last_confirmed + self.read_timeout:
            return f"nothing sent in the last {now - self.last_confirmed:.2f}s was answered"
        if phase is Phase.OPEN and now >= self.answered_at + self.read_timeout:
            return f"nothing answered for {now - self.answered_at:.2f}s"
        return None

    def unconfirmed(self, now: float) -> bool:
        """Answers may still come, but none to anything sent in the last read timeout: nothing proves
        the server heard us since, so the session may expire unseen (the application is to be told)."""
        return now >= self.last_confirmed + self.read_timeout

    def lost(self, now: float, oldest_sent: float) -> bool:
        """The server answered something sent after the oldest request in flight, but not that request,
        for a whole session timeout: it has lost it (a server answers a session's requests in order, so
        no healthy one gets here)."""
        return self.last_confirmed > oldest_sent and now >= oldest_sent + self.timeout

    def ping_due(self, now: float) -> bool:
        return now >= self.last_send + self.ping_interval
