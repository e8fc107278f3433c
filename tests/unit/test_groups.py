"""zkwire.client.groups: the one exception out of a nursery of a block's own tasks (no server needed)."""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

import pytest
import trio

from zkwire.client.groups import leaves, one_exception, task_nursery
from zkwire.errors import SessionExpiredError


class BodyError(Exception):
    pass


class TaskError(Exception):
    pass


def _raise_from_body(exc: BaseException) -> NoReturn:
    raise exc


async def _fail_when(
    event: trio.Event, exc: BaseException, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Raise ``exc`` once ``event`` is set; started once it waits (a cancellation after the set is late)."""
    task_status.started()
    await event.wait()
    raise exc


@asynccontextmanager
async def block() -> AsyncIterator[trio.Nursery]:
    """A public context manager's shape: its own task beside the body, the body behind a yield."""
    async with task_nursery("the block") as nursery:
        nursery.start_soon(trio.sleep_forever)
        try:
            yield nursery
        finally:
            nursery.cancel_scope.cancel()  # stops the task; the outer scope's Cancelled must go on


@pytest.mark.parametrize("raised", [BodyError("body"), KeyboardInterrupt(), SystemExit(3)], ids=repr)
async def test_the_bodys_exception_comes_out_as_itself(raised: BaseException) -> None:
    with pytest.raises(BaseException) as info:
        async with block():
            _raise_from_body(raised)
    assert info.value is raised
    assert "_raise_from_body" in [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert not getattr(raised, "__notes__", None)


async def test_the_bodys_exception_keeps_its_cause_and_context() -> None:
    cause = ValueError("cause")
    try:
        try:
            raise KeyError("context")
        except KeyError:
            async with block():
                raise BodyError("body") from cause
    except BodyError as e:
        assert e.__cause__ is cause and isinstance(e.__context__, KeyError) and e.__suppress_context__


async def test_a_group_the_body_raised_comes_out_whole() -> None:
    group = ExceptionGroup("mine", [KeyError("a"), ValueError("b")])
    with pytest.raises(ExceptionGroup) as info:
        async with block():
            raise group
    assert info.value is group


async def test_an_outer_cancellation_comes_out_as_cancelled() -> None:
    caught: BaseException | None = None
    with trio.CancelScope() as outer:
        try:
            async with block():
                outer.cancel()
                await trio.sleep_forever()
        except BaseException as e:
            caught = e
            raise
        pytest.fail("the code after the block ran")  # a swallowed cancellation would get here
    assert type(caught) is trio.Cancelled and outer.cancelled_caught


async def test_a_cancellation_of_the_nursery_alone_stays_inside() -> None:
    """The Cancelled of the nursery's own scope (cancelled by the block's code) is the nursery's to catch
    when nothing around the block is cancelled."""
    async with task_nursery("the block") as nursery:
        nursery.cancel_scope.cancel()
        await trio.sleep_forever()


async def test_a_task_failure_comes_out_alone() -> None:
    failure = TaskError("task")
    with pytest.raises(TaskError) as info:
        async with task_nursery("the block") as nursery:
            nursery.start_soon(_fail_when, trio.Event(), failure)
            event = trio.Event()
            await nursery.start(_fail_when, event, failure)
            event.set()
            await trio.sleep_forever()  # cancelled by the failure: that Cancelled is dropped
    assert info.value is failure


async def test_a_task_failure_beats_the_bodys_cancellation_by_an_outer_scope() -> None:
    failure = TaskError("task")
    with trio.CancelScope() as outer:
        with pytest.raises(TaskError) as info:
            async with task_nursery("the block") as nursery:
                event = trio.Event()
                await nursery.start(_fail_when, event, failure)
                event.set()
                outer.cancel()
                await trio.sleep_forever()
    assert info.value is failure


async def test_the_body_beats_a_task_failure_which_is_noted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    raised, failure = BodyError("body"), TaskError("task")
    with caplog.at_level(logging.DEBUG, logger="zkwire.client"):
        with pytest.raises(BodyError) as info:
            async with task_nursery("the block") as nursery:
                event = trio.Event()
                await nursery.start(_fail_when, event, failure)
                event.set()  # the task runs (and fails) after the body has raised
                _raise_from_body(raised)
    assert info.value is raised
    assert raised.__notes__ == [f"also raised in the block: {failure!r}"]
    [record] = [r for r in caplog.records if r.name == "zkwire.client"]
    assert record.levelno == logging.ERROR and record.exc_info is not None and record.exc_info[1] is failure


async def test_a_session_error_not_raised_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    raised, seen_too = SessionExpiredError(), SessionExpiredError()
    with caplog.at_level(logging.DEBUG, logger="zkwire.client"):
        with pytest.raises(SessionExpiredError) as info:
            async with task_nursery("the block") as nursery:
                event = trio.Event()
                await nursery.start(_fail_when, event, seen_too)
                event.set()
                raise raised
    assert info.value is raised
    assert [r.levelno for r in caplog.records if r.name == "zkwire.client"] == [logging.DEBUG]


async def _a_cancelled() -> trio.Cancelled:
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as e:
            cancelled = e
            raise
    return cancelled


async def test_one_exception_rules() -> None:
    body, first, second = BodyError("body"), TaskError("first"), TaskError("second")
    cancelled = await _a_cancelled()
    # The body's exception beats a task's failure (named in a note on it).
    assert one_exception(BaseExceptionGroup("g", [ExceptionGroup("inner", [first]), body]), body, "b") is body
    assert body.__notes__ == [f"also raised in b: {first!r}"]
    # The body's Cancelled does not beat a task's failure.
    assert one_exception(BaseExceptionGroup("g", [cancelled, second]), cancelled, "b") is second
    # Nothing but cancellations: the body's Cancelled (or the first one).
    assert one_exception(BaseExceptionGroup("g", [cancelled]), cancelled, "b") is cancelled
    # Tasks only: the first failure; the others are named on it.
    third = TaskError("third")
    got = one_exception(ExceptionGroup("g", [first, third]), None, "b")
    assert got is first and first.__notes__ == [f"also raised in b: {third!r}"]
    # A body group that trio split into a copy is still the body's.
    mine = ExceptionGroup("mine", [KeyError("k")])
    split = BaseExceptionGroup("nursery", [ExceptionGroup("mine", list(mine.exceptions))])
    assert one_exception(split, mine, "b") is mine


def test_leaves() -> None:
    a, b, c = KeyError("a"), ValueError("b"), KeyboardInterrupt()
    assert leaves(a) == [a]
    assert leaves(BaseExceptionGroup("g", [ExceptionGroup("h", [a, b]), c])) == [a, b, c]
