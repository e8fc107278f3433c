"""What applications hold while they wait: one-shot :class:`Watch`, :class:`PersistentWatch` streams,
and :class:`StateStream`.

The reader task delivers into these without ever blocking: a one-shot watch stores its single event,
a persistent watch appends to a bounded buffer (see :class:`PersistentWatch` for what happens when the
consumer falls behind), and a state stream keeps the latest states.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

import trio

from ..constants import EventType, KeeperState
from ..errors import WatchOverflowError, ZKError
from ..sansio.session import SessionState

__all__ = ["WatchedEvent", "Watch", "PersistentWatch", "StateStream", "Watcher"]


@dataclass(frozen=True, slots=True)
class WatchedEvent:
    """A change notification.  ``path`` is relative to the client's chroot.

    ``type`` and ``state`` are always enum members: a number this version does not know becomes a
    stand-in member (``EventType(99).name == "UNKNOWN_99"``), so ``event.type is EventType.X`` comparisons
    and ``event.type.name`` work for every event.
    """

    type: EventType
    path: str
    state: KeeperState = KeeperState.SYNC_CONNECTED


class Watcher(Protocol):
    """What the client registers with the session core as a watcher (:class:`Watch`,
    :class:`PersistentWatch`): the reader hands it events, and the session's end."""

    def _deliver(self, event: WatchedEvent) -> None: ...

    def _fail(self, error: ZKError) -> None: ...


class Watch:
    """A one-shot watch: ``await watch.wait()`` returns the first event for it.

    If the session ends before the event comes, ``wait()`` raises the session's error
    (:class:`~zkwire.errors.SessionExpiredError` or :class:`~zkwire.errors.ClientClosedError`).
    Watches survive reconnections: a change made while the client was disconnected is still delivered.
    """

    __slots__ = ("_done", "_error", "_event", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._done = trio.Event()
        self._event: WatchedEvent | None = None
        self._error: ZKError | None = None

    @property
    def triggered(self) -> bool:
        return self._done.is_set()

    def _deliver(self, event: WatchedEvent) -> None:
        if not self._done.is_set():
            self._event = event
            self._done.set()

    def _fail(self, error: ZKError) -> None:
        if not self._done.is_set():
            self._error = error
            self._done.set()

    async def wait(self) -> WatchedEvent:
        """The watch's event, once it has fired (at once if it already has).  A watch removed with
        ``Client.remove_watches`` returns a ``DATA_WATCH_REMOVED`` / ``CHILD_WATCH_REMOVED`` event.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended before the event.
        """
        await self._done.wait()
        if self._event is not None:
            return self._event
        assert self._error is not None
        raise self._error

    def __repr__(self) -> str:
        return f"<Watch {self.path!r} {'triggered' if self.triggered else 'pending'}>"


class PersistentWatch:
    """An async iterator of the events of a persistent (or persistent recursive) watch.

    Backpressure: the reader never waits for the consumer.  Up to ``max_buffered`` events are kept; if
    the consumer lets more pile up, the watch stops collecting, the buffered events are still handed out,
    and then iteration raises :class:`~zkwire.errors.WatchOverflowError` so that the application knows it
    missed changes and must re-read the state it cares about.
    """

    def __init__(self, path: str, recursive: bool, max_buffered: int) -> None:
        self.path = path
        self.recursive = recursive
        self.max_buffered = max_buffered
        self._buffer: deque[WatchedEvent] = deque()
        self._wakeup = trio.Event()
        self._error: ZKError | None = None
        self.dropped = 0

    def _deliver(self, event: WatchedEvent) -> None:
        if self._error is not None:
            self.dropped += 1
            return
        if len(self._buffer) >= self.max_buffered:
            self.dropped += 1
            self._error = WatchOverflowError(
                f"persistent watch on {self.path!r}: consumer fell {self.max_buffered} events behind"
            )
        else:
            self._buffer.append(event)
        self._wakeup.set()

    def _fail(self, error: ZKError) -> None:
        if self._error is None:
            self._error = error
        self._wakeup.set()

    @property
    def overflowed(self) -> bool:
        return isinstance(self._error, WatchOverflowError)

    def __aiter__(self) -> PersistentWatch:
        return self

    async def __anext__(self) -> WatchedEvent:
        while True:
            if self._buffer:
                await trio.lowlevel.checkpoint()
                return self._buffer.popleft()
            if self._error is not None:
                raise self._error
            self._wakeup = trio.Event()
            await self._wakeup.wait()


class StateStream:
    """An async iterator of session states, starting with the current one.

    It keeps the last ``keep`` states a slow reader has not taken yet (older ones are dropped, the newest
    is never lost) and ends after a terminal state (expired, auth failed, closed).
    """

    def __init__(self, current: SessionState, keep: int = 64) -> None:
        self._buffer: deque[SessionState] = deque([current], maxlen=keep)
        self._wakeup = trio.Event()
        self._finished = False

    def _deliver(self, state: SessionState) -> None:
        self._buffer.append(state)
        self._wakeup.set()

    def __aiter__(self) -> StateStream:
        return self

    async def __anext__(self) -> SessionState:
        while True:
            if self._buffer:
                await trio.lowlevel.checkpoint()
                state = self._buffer.popleft()
                if state.is_terminal:
                    self._finished = True
                return state
            if self._finished:
                raise StopAsyncIteration
            self._wakeup = trio.Event()
            await self._wakeup.wait()
