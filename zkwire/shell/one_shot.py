"""``zkwire --server HOSTS COMMAND ARGS...``: run one command and exit.

Everything that can be checked without a server is checked first: a usage error never waits for a
connection.  Commands that need a session connect first (exit 3 if that fails within ``--timeout``).
After a ``-w`` the command waits up to ``--timeout`` for the watch's event (exit 0 when it fires, 4 if
not); after ``addWatch`` it prints events for ``--timeout`` seconds.  A connection that stays lost for
``--timeout`` ends it with exit 3, Ctrl-C with 130.
"""

from __future__ import annotations

import signal

import trio

from ..errors import InvalidInputError, ZKError
from ..sansio.session import SessionState
from . import dispatch
from .context import Context
from .outcomes import EXIT_CONNECTION, EXIT_INTERRUPTED, EXIT_NO_EVENT, EXIT_OK, EXIT_USAGE, ConnectError, UsageError
from .registry import Invocation, prepare

__all__ = ["run_one_shot"]


async def run_one_shot(ctx: Context, words: list[str], wait_seconds: float) -> int:
    """Run the command ``words`` (non-empty) and return its exit code."""
    # Everything that can be checked without a server is checked first: usage errors never wait.
    try:
        invocation = prepare(words, interactive=False)
    except (UsageError, InvalidInputError) as e:
        ctx.error(str(e))
        return EXIT_USAGE

    code = EXIT_INTERRUPTED
    async with trio.open_nursery() as nursery:
        ctx.nursery = nursery
        nursery.start_soon(_cancel_on_sigint, nursery.cancel_scope)
        try:
            code = await _one_shot_connected(ctx, invocation, wait_seconds)
        finally:
            await ctx.close()
            nursery.cancel_scope.cancel()
    return code


async def _one_shot_connected(ctx: Context, invocation: Invocation, wait_seconds: float) -> int:
    if invocation.command.session:
        try:
            await ctx.connect()
        except ConnectError as e:
            ctx.error(str(e))
            return EXIT_CONNECTION
        except InvalidInputError as e:
            ctx.error(str(e))
            return EXIT_USAGE
    code = EXIT_CONNECTION
    lost: list[str] = []
    async with trio.open_nursery() as inner:

        async def body() -> None:
            nonlocal code
            code = await dispatch.run(ctx, invocation)
            if ctx.watches_set or ctx.persistent_watches:
                code = await _wait_for_events(ctx, wait_seconds, code)
            inner.cancel_scope.cancel()

        if ctx.client is not None:
            inner.start_soon(_guard_session, ctx, wait_seconds, inner.cancel_scope, lost)
        inner.start_soon(body)
    if lost:
        ctx.error(lost[0])
        return EXIT_CONNECTION
    return code


async def _wait_for_events(ctx: Context, wait_seconds: float, code: int) -> int:
    if ctx.persistent_watches:
        await trio.sleep(wait_seconds)
        return code
    with trio.move_on_after(wait_seconds):
        await ctx.event_arrived.wait()
        return EXIT_OK
    client = ctx.client
    if client is not None and not client.state.is_connected:
        ctx.error(f"Connection lost: no watch event within {wait_seconds:g}s (session {client.state.value})")
        return EXIT_CONNECTION
    ctx.error(f"No watch event within {wait_seconds:g}s")
    return EXIT_NO_EVENT


async def _guard_session(ctx: Context, patience: float, scope: trio.CancelScope, lost: list[str]) -> None:
    """Give up (exit 3) when the connection stays lost for ``patience`` seconds."""
    client = ctx.client
    assert client is not None
    try:
        while True:
            await client.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
            with trio.move_on_after(patience) as waiting:
                await client.wait_connected()
            if waiting.cancelled_caught:
                lost.append(f"Connection lost: no server of {ctx.hosts} answered within {patience:g}s")
                scope.cancel()
                return
    except ZKError:
        return  # the session ended: the command's own request reports it


async def _cancel_on_sigint(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return
