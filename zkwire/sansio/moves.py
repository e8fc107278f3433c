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

If the new server cannot be reached or refuses, the move is over: the session is SUSPENDED as after
any lost connection (the application is told) and reconnects as usual.

This module holds the move's state and clock; the core carries the steps out.
"""

from __future__ import annotations

import math
import random

from .hosts import HostPort

__all__ = ["PlannedMove", "DEFAULT_MOVE_SPREAD"]

#: Over how many seconds the moves of one host-list change are spread (each session draws its moment).
DEFAULT_MOVE_SPREAD = 2.0


class PlannedMove:
    """The state of a planned move (see the module): when it is due, whether requests are being
    drained, whether the session is re-attaching elsewhere, and the server it leaves."""

    __slots__ = ("drain_until", "due", "reattaching", "rng", "source")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        #: When the move starts (inf: none scheduled).
        self.due = math.inf
        #: While draining: when the move is given up if requests are still in flight (None otherwise).
        self.drain_until: float | None = None
        #: The connection was closed for the move; the next one re-attaches the session elsewhere.
        self.reattaching = False
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

    def reattach(self) -> None:
        """The connection was closed for the move."""
        self.drain_until = None
        self.reattaching = True

    def cancel(self) -> None:
        self.due = math.inf
        self.drain_until = None
        self.reattaching = False

    def deadline(self) -> float:
        """The next moment the move has something to do (inf if none)."""
        if self.drain_until is not None:
            return self.drain_until
        return self.due
