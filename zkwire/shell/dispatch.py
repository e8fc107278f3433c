"""Running ``zkwire`` command lines against a :class:`~zkwire.shell.context.Context`: each prints its output
or a one-line error, and gives an exit code (:mod:`zkwire.shell.outcomes`).

The commands must have been registered (by importing :mod:`zkwire.shell.commands`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import (
    ClientClosedError,
    ConnectionLossError,
    InvalidInputError,
    ServerError,
    SessionExpiredError,
    ZKError,
)
from .context import Context
from .outcomes import EXIT_CONNECTION, EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, ConnectError, UsageError
from .registry import Invocation, prepare, split_line

__all__ = ["execute", "execute_line", "run"]


async def execute_line(ctx: Context, line: str) -> int:
    """Run one shell line (empty: nothing to do)."""
    try:
        words = split_line(line)
    except UsageError as e:
        ctx.error(str(e))
        return EXIT_USAGE
    if not words:
        return EXIT_OK
    return await execute(ctx, words)


async def execute(ctx: Context, words: Sequence[str]) -> int:
    """Run the command ``words[0]`` with the arguments ``words[1:]``."""
    try:
        invocation = prepare(words, interactive=ctx.interactive)
    except (UsageError, InvalidInputError) as e:
        ctx.error(str(e))
        return EXIT_USAGE
    return await run(ctx, invocation)


async def run(ctx: Context, invocation: Invocation) -> int:
    """Run a command whose arguments are parsed already."""
    try:
        if invocation.command.session:
            ctx.require_client()
        code = await invocation.run(ctx)
        return EXIT_OK if code is None else code
    except (UsageError, InvalidInputError) as e:
        ctx.error(str(e))
        return EXIT_USAGE
    except CommandError as e:
        ctx.error(str(e))
        return EXIT_FAILED
    except ConnectError as e:
        ctx.error(str(e))
        return EXIT_CONNECTION
    except (ConnectionLossError, SessionExpiredError, ClientClosedError) as e:
        ctx.error(_describe_error(e))
        return EXIT_CONNECTION
    except ZKError as e:
        ctx.error(_describe_error(e))
        return EXIT_FAILED


def _describe_error(e: ZKError) -> str:
    if isinstance(e, ServerError) or str(e):
        return str(e)
    return type(e).__name__
