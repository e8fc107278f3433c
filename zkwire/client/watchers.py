"""What applications hold while they wait: one-shot :class:`Watch`, :class:`PersistentWatch` streams,
and :class:`StateStream`.

The reader task delivers into these without ever blocking: a one-shot watch stores its single event,
a persistent watch appends to a bounded buffer (see :class:`PersistentWatch` for what happens when the
consumer falls behind), and a state stream keeps the latest states.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, Self, TypeVar

import trio

from ..constants import EventType, KeeperState
from ..errors import WatchOverflowError, ZKError
from ..sansio.session import SessionState

__all__ = ["WatchedEvent", "Watch", "PersistentWatch", "StateStream", "Watcher"]

T = TypeVar("T")


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


class EventBuffer(Generic[T]):
    """The queue behind the streams that a task fills without ever blocking and one consumer iterates
    (:class:`PersistentWatch`, :class:`StateStream`, the tree cache's event streams).

    Iteration hands out the buffered items in order; once they are out, it raises the error that ended
    the stream, or stops if the stream ended without one.  Subclasses decide what to buffer.
    """

    def __init__(self, items: Iterable[T] = (), keep: int | None = None) -> None:
        self._buffer: deque[T] = deque(items, maxlen=keep)
        self._wakeup = trio.Event()
        self._error: BaseException | None = None
        self._ended = False

    def _append(self, item: T) -> None:
        self._buffer.append(item)
        self._wakeup.set()

    def _append_bounded(self, item: T, limit: int) -> bool:
        """Buffer ``item`` unless the stream has ended, or ``limit`` items are waiting already: then the
        stream ends with :meth:`_overflow_error` (raised after the items buffered before it).  Returns
        whether ``item`` was buffered."""
        if self._error is not None or self._ended:
            return False
        if len(self._buffer) >= limit:
            self._error = self._overflow_error(limit)
            self._wakeup.set()
            return False
        self._append(item)
        return True

    def _overflow_error(self, limit: int) -> ZKError:
        return WatchOverflowError(f"consumer fell {limit} events behind")

    def _end(self, error: BaseException | None = None) -> None:
        """End the stream after the buffered items, with ``error`` unless an earlier error ended it."""
        if error is not None and self._error is None:
            self._error = error
        self._ended = True
        self._wakeup.set()

    async def _next(self) -> T:
        while True:
            if self._buffer:
                await trio.lowlevel.checkpoint()
                return self._buffer.popleft()
            if self._error is not None:
                raise self._error
            if self._ended:
                raise StopAsyncIteration
            self._wakeup = trio.Event()
            await self._wakeup.wait()


class PersistentWatch(EventBuffer[WatchedEvent]):
    """An async iterator of the events of a persistent (or persistent recursive) watch.

    Backpressure: the reader never waits for the consumer.  Up to ``max_buffered`` events are kept; if
    the consumer lets more pile up, the watch stops collecting, the buffered events are still handed out,
    and then iteration raises :class:`~zkwire.errors.WatchOverflowError` so that the application knows it
    missed changes and must re-read the state it cares about.
    """

    def __init__(self, path: str, recursive: bool, max_buffered: int) -> None:
        super().__init__()
        self.path = path
        self.recursive = recursive
        self.max_buffered = max_buffered
        self.dropped = 0

    def _deliver(self, event: WatchedEvent) -> None:
        if not self._append_bounded(event, self.max_buffered):
            self.dropped += 1

    def _overflow_error(self, limit: int) -> ZKError:
        return WatchOverflowError(f"persistent watch on {self.path!r}: consumer fell {limit} events behind")

    def _fail(self, error: ZKError) -> None:
        self._end(error)

    @property
    def overflowed(self) -> bool:
        return isinstance(self._error, WatchOverflowError)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchedEvent:
        return await self._next()


class StateStream(EventBuffer[SessionState]):
    """An async iterator of session states, starting with the current one.

    It keeps the last ``keep`` states a slow reader has not taken yet (older ones are dropped, the newest
    is never lost) and ends after a terminal state (expired, auth failed, closed).
    """

    def __init__(self, current: SessionState, keep: int = 64) -> None:
        super().__init__([current], keep=keep)

    def _deliver(self, state: SessionState) -> None:
        self._append(state)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionState:
        state = await self._next()
        if state.is_terminal:
            self._ended = True
        return state
