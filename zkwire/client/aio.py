"""Using zkwire from an asyncio program: trio in guest mode on the asyncio event loop.

zkwire is a trio library: its tasks, cancel scopes and sockets are trio's.  An asyncio program can still
use it, without threads, by running trio as a *guest* on its own event loop
(:func:`trio.lowlevel.start_guest_run`): both run on the same thread, and trio's I/O waits are driven
from asyncio's loop.

The whole ZooKeeper part of a program in trio, called once from asyncio::

    import asyncio
    import zkwire

    async def zk_part(hosts: str) -> bytes:                 # trio code
        async with zkwire.open_client(hosts) as zk:
            await zk.ensure_path("/config")
            data, _ = await zk.get_data("/config")
            return data

    async def main() -> None:                                # asyncio code
        data = await zkwire.aio.run_trio(zk_part, "127.0.0.1:2181")

    asyncio.run(main())

Or a *portal* that asyncio code calls through, for a client kept open across calls::

    import asyncio
    import zkwire

    async def main() -> None:
        async with zkwire.aio.open_portal() as portal:
            zk = await portal.enter(zkwire.open_client("127.0.0.1:2181"))   # closed with the portal
            await portal.call(zk.ensure_path, "/config")
            data, stat, watch = await portal.call(zk.get_data, "/config", watch=True)

    asyncio.run(main())

Cancelling the asyncio task that awaits :func:`run_trio` or :meth:`TrioPortal.call` cancels the trio
side (a trio cancel scope) and waits for it to finish.  Only one trio run can live per thread: use a
single portal (or a single :func:`run_trio`) at a time.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import trio

if TYPE_CHECKING:
    import asyncio

    import outcome

from ..errors import ZKError
from .groups import task_nursery

__all__ = ["NotInTrioError", "TrioPortal", "open_portal", "require_trio", "run_trio"]

T = TypeVar("T")
P = ParamSpec("P")


class NotInTrioError(ZKError, RuntimeError):
    """A zkwire call was made outside a trio run (from asyncio, say)."""


def require_trio(what: str) -> None:
    """Raise :class:`NotInTrioError`, with the way in, unless called from a trio task.

    Raises:
        NotInTrioError: no trio run is active in this thread.
    """
    try:
        trio.lowlevel.current_task()
        return
    except RuntimeError:
        pass
    library = "no async library"
    running_asyncio = sys.modules.get("asyncio")  # asyncio is only imported here if the program did
    if running_asyncio is not None:
        try:
            running_asyncio.get_running_loop()
            library = "asyncio"
        except RuntimeError:
            pass
    raise NotInTrioError(
        f"{what} needs trio, but it was called from {library}. zkwire is a trio library; from asyncio, run it "
        "in trio guest mode: `await zkwire.aio.run_trio(fn, ...)` or `async with zkwire.aio.open_portal() as "
        "portal` (see the zkwire.client.aio documentation)"
    )


async def run_trio(async_fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """From asyncio: run the trio function ``async_fn(*args, **kwargs)`` as a guest on this event loop;
    return its result.

    The arguments are typed as ``async_fn``'s own (a ParamSpec): with an overloaded method, the result has
    the type of the overload the arguments pick (``run_trio(zk.get_data, path, watch=True)``).

    Raises:
        BaseException: whatever ``async_fn`` raised.
        asyncio.CancelledError: when the awaiting task is cancelled (the trio side has been cancelled and
            has finished by then).
        RuntimeError: a trio run is already active in this thread.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    done: asyncio.Future[outcome.Outcome[T]] = loop.create_future()
    scope_box: list[trio.CancelScope] = []
    token_box: list[trio.lowlevel.TrioToken] = []

    async def guest() -> T:
        token_box.append(trio.lowlevel.current_trio_token())
        with trio.CancelScope() as scope:
            scope_box.append(scope)
            return await async_fn(*args, **kwargs)
        raise asyncio.CancelledError  # the host cancelled us

    def finished(result: outcome.Outcome[T]) -> None:
        if not done.done():
            done.set_result(result)

    trio.lowlevel.start_guest_run(
        guest,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        done_callback=finished,
        host_uses_signal_set_wakeup_fd=True,
    )
    try:
        result = await asyncio.shield(done)
    except asyncio.CancelledError:
        if token_box and scope_box:
            token_box[0].run_sync_soon(scope_box[0].cancel)
        with contextlib.suppress(BaseException):
            (await done).unwrap()
        raise
    return result.unwrap()


class TrioPortal:
    """Calls from asyncio into a trio guest run (see :func:`open_portal`)."""

    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._ready = asyncio.Event()
        self._closing: trio.Event | None = None

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._closing = trio.Event()
        async with task_nursery("zkwire.aio.open_portal") as nursery:  # one exception out, never a group
            self._nursery = nursery
            self._ready.set()
            await self._closing.wait()
            nursery.cancel_scope.cancel()

    def _start(self, fn: Callable[[], Awaitable[None]]) -> None:
        if self._token is None or self._nursery is None:
            raise RuntimeError("the portal is not open")
        nursery = self._nursery
        self._token.run_sync_soon(lambda: nursery.start_soon(fn))

    async def call(self, async_fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the trio function ``async_fn(*args, **kwargs)`` in the portal's trio run; return its result.

        ``portal.call(zk.get_data, path, watch=True)`` is typed as ``zk.get_data(path, watch=True)`` (the
        overload the arguments pick), as is a closure of no arguments:
        ``portal.call(lambda: zk.get_data(path, watch=True))``.

        Raises:
            BaseException: whatever ``async_fn`` raised.
            asyncio.CancelledError: when the calling task is cancelled (the call is cancelled in trio).
            RuntimeError: the portal is closed.
        """
        import asyncio

        done: asyncio.Future[T] = self._loop.create_future()
        scope = trio.CancelScope()

        async def runner() -> None:
            try:
                with scope:
                    value = await async_fn(*args, **kwargs)
                    if not done.done():
                        done.set_result(value)
                    return
            except Exception as error:
                if not done.done():
                    done.set_exception(error)
                return
            if not done.done():
                done.cancel()

        self._start(runner)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            assert self._token is not None
            self._token.run_sync_soon(scope.cancel)
            with contextlib.suppress(BaseException):
                await done
            raise

    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T:
        """Enter a trio async context manager (``zkwire.open_client(...)``) in the portal; it is exited when
        the portal closes.  Returns what its ``__aenter__`` returned.

        Raises:
            BaseException: whatever entering raised.
            RuntimeError: the portal is closed.
        """
        entered: asyncio.Future[T] = self._loop.create_future()

        async def holder() -> None:
            try:
                async with manager as value:
                    entered.set_result(value)
                    await trio.sleep_forever()
            except Exception as error:
                if not entered.done():
                    entered.set_exception(error)

        self._start(holder)
        return await entered


@contextlib.asynccontextmanager
async def open_portal() -> AsyncIterator[TrioPortal]:
    """From asyncio: start a trio guest run for the block, and a :class:`TrioPortal` to call into it.

    Leaving the block cancels what still runs in it (context managers entered with
    :meth:`TrioPortal.enter` are exited: clients are closed) and waits for the trio run to end.

    Raises:
        RuntimeError: a trio run is already active in this thread.
    """
    import asyncio

    portal = TrioPortal()
    runner = asyncio.ensure_future(run_trio(portal._serve))
    ready = asyncio.ensure_future(portal._ready.wait())
    await asyncio.wait([runner, ready], return_when=asyncio.FIRST_COMPLETED)
    if runner.done():
        ready.cancel()
        runner.result()  # raises why the run could not start
    try:
        yield portal
    finally:
        assert portal._token is not None and portal._closing is not None
        closing = portal._closing
        portal._token.run_sync_soon(closing.set)
        await runner
