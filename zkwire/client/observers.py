"""A client's observers, and the thread that tells them what the session does.

An observer is any object with an ``on_event(event)`` method (:class:`Observer`); it is given every
:data:`~zkwire.sansio.observing.ObservedEvent` of the sessions it is attached to
(:meth:`zkwire.Client.add_observer`, ``open_client(observers=...)``): requests answered or failed,
connection and state changes, watch notifications, and the recipes' events that zklock reports
(:meth:`zkwire.Client.report`).

The client never waits for an observer.  The session core hands each event to the
:class:`ObserverHub`'s sink, which only appends it to a bounded queue; a thread of the hub's own takes
the events out in batches (every :data:`DELIVERY_INTERVAL` seconds, sooner when the queue fills) and
calls each observer in turn, in the order the events happened.  So:

* an observer that raises is logged once (then counted in :attr:`ObserverHub.failures`) and keeps being
  called; the other observers and the client are not affected;
* an observer that blocks or is slow holds up only the delivery: once :attr:`ObserverHub.capacity`
  events wait, further ones are dropped and counted (:attr:`ObserverHub.dropped`, a warning when
  dropping starts), memory stays bounded, and the client's requests go on at their pace;
* observers run in the hub's thread, never in trio's: one that touches trio objects must use
  :func:`trio.from_thread.run_sync` with a token of its own.

Unobserved, a session makes no event at all (see :mod:`zkwire.sansio.observing`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections import deque
from typing import Any

import trio

from ..errors import InvalidArgumentError
from ..sansio.observing import ConnectionEvent, Observation, ObservedEvent, Observer, RecipeEvent, RequestEvent
from .calls import ClientCore

__all__ = ["ATTEMPT", "DEFAULT_CAPACITY", "DELIVERY_INTERVAL", "ObserverHub"]

log = logging.getLogger("zkwire.observers")

#: Seconds between two deliveries at most (an event reaches the observers this late at most, unless
#: they are behind).
DELIVERY_INTERVAL = 0.05

#: Events waiting for delivery at most, by default; more are dropped (and counted).
DEFAULT_CAPACITY = 10_000

#: Seconds between two warnings that events are being dropped, at least.
DROP_WARNING_INTERVAL = 60.0

#: The attempt number of the request being made (:func:`zkwire.retry` sets it for each attempt after
#: the first); read when a request is sent, for :attr:`~zkwire.sansio.observing.RequestEvent.attempt`.
ATTEMPT: contextvars.ContextVar[int] = contextvars.ContextVar("zkwire_attempt", default=1)


class ObserverHub:
    """The observers of one client, their queue and their thread (see the module)."""

    def __init__(self, core: ClientCore, capacity: int = DEFAULT_CAPACITY) -> None:
        self._core = core
        self.capacity = capacity
        self._observers: tuple[Observer, ...] = ()
        self._queue: deque[ObservedEvent] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._lock = threading.Lock()
        self._epoch_offset: float | None = None
        self._wants_context = False
        self._accepted = 0
        self._done = 0
        #: Events dropped because the queue was full (the observers were behind).
        self.dropped = 0
        self._dropping = False
        self._warn_after = 0.0
        #: Calls of an observer that raised.
        self.failures = 0
        self._failed: set[int] = set()

    # ------------------------------------------------------------------ attaching

    @property
    def observers(self) -> tuple[Observer, ...]:
        return self._observers

    def add(self, observer: Observer) -> None:
        if not callable(getattr(observer, "on_event", None)):
            raise InvalidArgumentError(f"an observer has an on_event(event) method; {type(observer).__name__} has not")
        if observer in self._observers:
            return
        self._observers = (*self._observers, observer)
        self._install()

    def remove(self, observer: Observer) -> None:
        """Stop telling ``observer`` (unknown ones are ignored); events not delivered yet no longer reach it."""
        self._observers = tuple(o for o in self._observers if o is not observer)
        if not self._observers:
            self._core.observed = None
        else:
            self._install()

    def _install(self) -> None:
        """Make the core observed, once the epoch offset is known (inside trio: see :meth:`start`)."""
        self._wants_context = any(getattr(o, "wants_context", False) for o in self._observers)
        if self._epoch_offset is None:
            try:
                now = trio.current_time()
            except RuntimeError:
                return  # not in trio yet: start() installs it
            self._epoch_offset = time.time() - now
        if self._core.observed is None:
            self._core.observed = Observation(self._put, self._epoch_offset, self._capture)
        if self._thread is None:
            self._thread = threading.Thread(target=self._deliver, name="zkwire observers", daemon=True)
            self._thread.start()

    def start(self) -> None:
        """The client's tasks start (in trio): observers attached before are installed now."""
        if self._observers:
            self._install()

    def _capture(self) -> tuple[int, Any]:
        return ATTEMPT.get(), contextvars.copy_context() if self._wants_context else None

    # ------------------------------------------------------------------ events in (trio's thread)

    def _put(self, event: ObservedEvent) -> None:
        """The sink: stamp what the core could not, queue, never wait."""
        if type(event) is RequestEvent:
            if event.finished is None:
                event.finished = time.time()
        elif type(event) is ConnectionEvent and event.at is None:
            event.at = time.time()
        queue = self._queue
        if len(queue) >= self.capacity:
            self.dropped += 1
            if not self._dropping and time.monotonic() >= self._warn_after:
                self._dropping = True
                self._warn_after = time.monotonic() + DROP_WARNING_INTERVAL
                log.warning(
                    "session 0x%x: observers are %d events behind; further events are dropped (and counted)",
                    self._core.session_id,
                    len(queue),
                )
            return
        self._dropping = False
        queue.append(event)
        self._accepted += 1
        if len(queue) >= self.capacity // 4:
            self._wake.set()

    def report(self, event: RecipeEvent) -> None:
        """Queue a recipe's event for the observers (nothing when none is attached)."""
        if not isinstance(event, RecipeEvent):
            raise InvalidArgumentError(f"report() takes a RecipeEvent, not {type(event).__name__}")
        if self._core.observed is not None:
            self._put(event)

    # ------------------------------------------------------------------ delivery (the hub's thread)

    def _deliver(self) -> None:
        queue = self._queue
        while True:
            self._wake.wait(DELIVERY_INTERVAL)
            self._wake.clear()
            while queue:
                event = queue.popleft()
                for observer in self._observers:
                    try:
                        observer.on_event(event)
                    except Exception:
                        self._observer_failed(observer)
                self._done += 1
            if self._stopping:
                return

    def _observer_failed(self, observer: Observer) -> None:
        with self._lock:
            self.failures += 1
            first = id(observer) not in self._failed
            self._failed.add(id(observer))
        if first:
            log.warning(
                "observer %s raised; it is still called, further failures are counted, not logged",
                type(observer).__name__,
                exc_info=True,
            )

    # ------------------------------------------------------------------ waiting and closing

    async def flush(self, limit: float = 5.0) -> bool:
        """Wait (at most ``limit`` seconds) until every event queued so far has reached every observer;
        True if it has."""
        target = self._accepted
        if self._thread is None:
            return True
        self._wake.set()
        with trio.move_on_after(limit):
            while self._done < target and self._thread.is_alive():
                await trio.sleep(0.002)
                self._wake.set()
        return self._done >= target

    async def aclose(self, limit: float = 1.0) -> None:
        """Deliver what is queued (at most ``limit`` seconds: an observer stuck in a call is left behind,
        its thread a daemon) and stop the thread.  The core is no longer observed."""
        thread = self._thread
        if thread is None:
            return
        with trio.CancelScope(shield=True):
            await self.flush(limit)
        self._core.observed = None
        self._stopping = True
        self._wake.set()
        self._thread = None
