"""A planned move: the session leaves its server for another one because the host list changed, without
the application noticing anything but a short wait.

When a new host list (:meth:`~zkwire.sansio.session.SessionCore.update_hosts`, from the ensemble's
configuration or the application) decides that this session moves (:func:`~zkwire.sansio.hosts.move_decision`),
the move is carried out in four steps, each the session core's:

1. *scheduled*: at a moment drawn uniformly from the next ``spread`` seconds, so that the sessions a
   change moves do not all arrive at their new servers at once;
2. *draining*: from then on no new request is sent (callers wait, as for a reconnection); the requests
   in flight are answered as usual.  Once none is left the connection is closed by the client.  A
   request still unanswered after the read timeout gives the move up (the session stays where it is,
   nothing failed);
3. *re-attaching*: the next connection goes to one of the move's targets and presents the session,
   its credentials and its watches as after any reconnection.  Throughout, the session's state stays
   CONNECTED: a lock holder is not told its lease is at risk, since nothing was lost;
4. *moved*: the session is open on the new server; the waiting requests go out.

If the new server cannot be reached or refuses (a server behind the session's newest zxid refuses it
until it catches up), the next connection tries the move's other targets, then the other servers, still
without a state change, for as long as an open connection that answered nothing would keep the session
CONNECTED: a read timeout after the last answer the session had.  Then the session is SUSPENDED as
after any lost connection (the application is told) and reconnects as usual.

:class:`PlannedMove` holds the move's state and clock; :class:`MoveSteps` is the session core's part that
carries the steps out (the core hands it the host list, the timer, the connection's end and the
handshake's; it sets the core's ``_draining`` flag, which the request path reads).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from typing import Generic, Protocol

from .events import DropConnection, Event, Moved, SessionState, TokenT, WatcherT
from .handshake import Phase
from .hosts import HostPort, HostRotation
from .liveness import Liveness
from .matching import RequestQueue

__all__ = ["PlannedMove", "MoveSteps", "MovingSession", "DEFAULT_MOVE_SPREAD"]

log = logging.getLogger("zkwire.session")

#: Over how many seconds the moves of one host-list change are spread (each session draws its moment).
DEFAULT_MOVE_SPREAD = 2.0


class PlannedMove:
    """The state of a planned move (see the module): when it is due, whether requests are being
    drained, whether the session is re-attaching elsewhere, and the server it leaves."""

    __slots__ = ("drain_until", "due", "give_up", "reattach_until", "reattaching", "rng", "source")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        #: When the move starts (inf: none scheduled).
        self.due = math.inf
        #: While draining: when the move is given up if requests are still in flight (None otherwise).
        self.drain_until: float | None = None
        #: The connection was closed for the move; the next one re-attaches the session elsewhere.
        self.reattaching = False
        #: While draining: the host list changed again and the session stays (the move is given up at
        #: the next timer round).
        self.give_up = False
        #: While re-attaching: when the session is to be reported SUSPENDED if no server took it yet.
        self.reattach_until = math.inf
        #: The server the session leaves.
        self.source: HostPort | None = None

    @property
    def scheduled(self) -> bool:
        return self.due != math.inf

    @property
    def draining(self) -> bool:
        return self.drain_until is not None

    @property
    def active(self) -> bool:
        """Scheduled, draining or re-attaching."""
        return self.scheduled or self.drain_until is not None or self.reattaching

    def schedule(self, now: float, spread: float, source: HostPort | None) -> None:
        """Move at a moment drawn from ``[now, now + spread]`` (a move already scheduled keeps its
        moment if that comes first; one under way carries on)."""
        if self.draining or self.reattaching:
            return
        self.due = min(self.due, now + self.rng.uniform(0.0, max(0.0, spread)))
        self.source = source

    def start_draining(self, until: float) -> None:
        self.due = math.inf
        self.drain_until = until
        self.give_up = False

    def reattach(self, until: float) -> None:
        """The connection was closed for the move; the session may go unreported until ``until``."""
        self.drain_until = None
        self.reattaching = True
        self.reattach_until = until

    def cancel(self) -> None:
        self.due = math.inf
        self.drain_until = None
        self.reattaching = False
        self.reattach_until = math.inf
        self.give_up = False

    def deadline(self) -> float:
        """The next moment the move has something to do (inf if none)."""
        if self.drain_until is not None:
            return self.drain_until
        if self.reattaching:
            return self.reattach_until
        return self.due


class MovingSession(Protocol[TokenT, WatcherT]):
    """What the move's steps read and change in the session core."""

    state: SessionState
    session_id: int
    current_host: HostPort | None
    _phase: Phase
    _draining: bool

    def _set_state(self, events: list[Event[TokenT, WatcherT]], new: SessionState) -> None: ...


class MoveSteps(Generic[TokenT, WatcherT]):
    """The session core's part that carries a planned move out (see the module)."""

    __slots__ = ("_clock", "_hosts", "_pending", "_session", "move")

    def __init__(
        self,
        session: MovingSession[TokenT, WatcherT],
        pending: RequestQueue[TokenT, WatcherT],
        clock: Liveness,
        hosts: HostRotation,
        rng: random.Random,
    ) -> None:
        self._session = session
        self._pending = pending
        self._clock = clock
        self._hosts = hosts
        self.move = PlannedMove(rng)

    def update_hosts(self, hosts: Sequence[HostPort], now: float, spread: float) -> bool:
        """See :meth:`~zkwire.sansio.session.SessionCore.update_hosts`."""
        session = self._session
        if session.state.is_terminal:
            return False
        connected = session._phase is Phase.OPEN and session.state is SessionState.CONNECTED
        current = session.current_host
        moves = self._hosts.update(hosts, current if connected else None)
        if moves and connected:
            # A session whose server left the list moves at once: that server is leaving the ensemble
            # and will cut its connections; the spread is for sessions that move to balance the load.
            self.move.schedule(now, spread if current in hosts else 0.0, current)
            log.info("session 0x%x: host list changed; moving from %s", session.session_id, current)
        elif not moves and self.move.scheduled:
            self.move.cancel()
        elif not moves and self.move.draining:
            self.move.give_up = True  # given up at the next timer round (which wakes the waiting callers)
            self.move.drain_until = now
        return moves

    def advance(self, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """The move's clock is due: start draining, close the drained connection, give the move up, or
        (re-attaching for too long) report the session SUSPENDED."""
        move, session = self.move, self._session
        if move.reattaching:
            self.failed(events, give_up=True)
            return
        if move.draining:
            if not self._pending and not move.give_up:
                events.append(DropConnection("moving to another server"))
                return
            why = "the host list changed again" if move.give_up else "requests still in flight"
            log.info("session 0x%x: %s; staying on %s", session.session_id, why, session.current_host)
            move.cancel()
            session._draining = False
            events.append(Moved(move.source, None))
            return
        if session._phase is not Phase.OPEN or session.state is not SessionState.CONNECTED:
            move.cancel()  # the session is reconnecting anyway (to the move's targets first)
            return
        move.start_draining(now + self._clock.read_timeout)
        session._draining = True
        if not self._pending:
            events.append(DropConnection("moving to another server"))

    def drained(self, events: list[Event[TokenT, WatcherT]]) -> None:
        """While draining: once the last request in flight is answered, the connection is to be closed."""
        if not self._pending and not self.move.give_up and not any(isinstance(e, DropConnection) for e in events):
            events.append(DropConnection("moving to another server"))

    def closed_for_move(self, phase: Phase) -> bool:
        """The connection (in ``phase`` when it ended) is gone: True when that was the move's own close
        (nothing was in flight; the state is left as it is), which starts the re-attach."""
        session = self._session
        if session._draining and not self._pending and phase is Phase.OPEN:
            session._draining = False
            self.move.reattach(self._clock.last_confirmed + self._clock.read_timeout)
            return True
        return False

    def failed(self, events: list[Event[TokenT, WatcherT]], *, give_up: bool = False) -> None:
        """The connection ended, or a new one failed, while a move was scheduled or under way.  A move
        re-attaching goes on to the next server (until :attr:`PlannedMove.reattach_until`, or
        ``give_up``); any other is over, and a session that was re-attaching is suspended (the
        application is told)."""
        move, session = self.move, self._session
        reattaching = move.reattaching
        if reattaching and not give_up and session.state.is_connected:
            log.info("session 0x%x: re-attaching failed; trying the next server", session.session_id)
            return
        move.cancel()
        session._draining = False
        if reattaching and session.state.is_connected:
            log.info("session 0x%x: moving from %s failed; reconnecting", session.session_id, move.source)
            session._set_state(events, SessionState.SUSPENDED)

    def opened(self, events: list[Event[TokenT, WatcherT]]) -> None:
        """The session is open on a new connection: a move re-attaching is over."""
        move = self.move
        if move.reattaching:
            move.cancel()
            session = self._session
            log.info("session 0x%x: moved from %s to %s", session.session_id, move.source, session.current_host)
            events.append(Moved(move.source, session.current_host))
