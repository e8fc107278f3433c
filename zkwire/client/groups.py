"""One exception out of a block, never an exception group of zkwire's making.

The public async context managers that run tasks of their own (:func:`~zkwire.open_client`,
:func:`~zkwire.sessions`, :func:`~zkwire.open_tree_cache`, :func:`~zkwire.aio.open_portal`) open their
nursery with :func:`task_nursery`.  A trio nursery wraps whatever leaves it in a ``BaseExceptionGroup``
-- the body's own exception, ``KeyboardInterrupt`` and the ``Cancelled`` of a cancel scope around the
block included -- so that ``except KeyboardInterrupt`` around ``trio.run``, or ``except
SessionExpiredError`` around the block, would miss them.  :func:`task_nursery` hands exactly one of them
on, by the rules of :func:`one_exception`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from types import TracebackType

import trio

from ..errors import ZKError

__all__ = ["task_nursery", "one_exception", "leaves"]

log = logging.getLogger("zkwire.client")


def task_nursery(what: str) -> AbstractAsyncContextManager[trio.Nursery]:
    """A nursery for a block's own tasks that raises one exception, chosen by :func:`one_exception`.

    ``what`` names the block in the notes and log lines about the exceptions that were not raised
    (``"zkwire.sessions"``).  The block's exception -- what the code inside the ``async with`` raised,
    the application's body passing through a ``yield`` included -- counts as the body's.
    """
    return _TaskNursery(what)


class _TaskNursery:
    __slots__ = ("_manager", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._manager = trio.open_nursery()

    async def __aenter__(self) -> trio.Nursery:
        return await self._manager.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            suppressed = await self._manager.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            chosen = one_exception(group, exc, self._what)
        else:
            return bool(suppressed)
        if chosen is exc:
            return False  # the body's exception goes on untouched (object, traceback, context)
        context = chosen.__context__
        try:
            raise chosen
        finally:
            chosen.__context__ = context  # not the body's exception being handled here
            del chosen, context, exc


def one_exception(group: BaseExceptionGroup[BaseException], body: BaseException | None, what: str) -> BaseException:
    """The one exception to raise for ``group``, what a nursery raised when ``body`` left its block.

    * The body's exception wins: the same object (a group the body raised itself stays whole).
      ``KeyboardInterrupt``, ``Cancelled`` and any other exception of the body come out as themselves.
    * Except a ``Cancelled`` of the body when a task failed: the failure wins (trio's own rule: the
      cancellation is dropped, and the cancel scope that was cancelled raises it again at the next
      checkpoint).
    * Otherwise the first task's failure, and with nothing but cancellations the first ``Cancelled``.

    What does not come out is never lost silently: each other exception (``Cancelled`` aside) is named in
    a note on the one that does (``also raised in <what>: ...``) and logged on ``zkwire.client`` with its
    traceback: at ERROR, or at DEBUG when it is a :class:`~zkwire.errors.ZKError` (the same session error
    seen by two tasks is an outcome, not a bug).
    """
    found = list(_leaves(group, body))
    real = [e for e in found if not isinstance(e, trio.Cancelled)]
    if body is not None and any(e is body for e in found) and not (isinstance(body, trio.Cancelled) and real):
        chosen = body
    else:
        chosen = real[0] if real else found[0]
    for other in real:
        if other is not chosen:
            chosen.add_note(f"also raised in {what}: {other!r}")
            level = logging.DEBUG if isinstance(other, ZKError) else logging.ERROR
            log.log(level, "%s: %r was raised as well, not re-raised", what, other, exc_info=other)
    return chosen


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``'s (nested) exception groups, or ``[error]``."""
    return list(_leaves(error, None))


def _leaves(error: BaseException, keep: BaseException | None) -> Iterator[BaseException]:
    """The leaves of ``error``, with ``keep`` (or trio's copy of it) as one leaf, itself."""
    if keep is not None and _same(error, keep):
        yield keep
    elif isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner, keep)
    else:
        yield error


def _same(error: BaseException, other: BaseException) -> bool:
    """``error`` is ``other``, or a copy of the group ``other`` (a cancel scope splits groups into copies)."""
    if error is other:
        return True
    if not (isinstance(error, BaseExceptionGroup) and isinstance(other, BaseExceptionGroup)):
        return False
    mine, theirs = error.exceptions, other.exceptions
    return len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs, strict=True))
