"""The interactive ``zkwire`` shell: ``zkwire --server HOSTS`` with no command.

Lines are read in a worker thread (:mod:`zkwire.shell.line_reader`), so that watch events and session
state changes print while the shell waits for input; on a terminal with line editing, Tab completion
(:mod:`zkwire.shell.completion`), a prompt showing the session's state, and a history file
(``$ZKWIRE_HISTORY``, default ``~/.zkwire_history``).

On a terminal, Ctrl-C drops the line being typed, or interrupts the running command, and the shell
carries on with the same session (its ephemeral nodes stay).  ``quit``, ``exit`` or Ctrl-D on an empty
line (the end of input) leave it with exit 0, closing the session; exit 3 if it cannot connect at all.
Without a terminal (a script on stdin, or the output piped), Ctrl-C when no command runs ends the shell
with exit 130.
"""

from __future__ import annotations

import signal

import trio

from ..errors import InvalidInputError
from . import dispatch
from . import format as fmt
from .context import Context
from .line_reader import LineReader
from .outcomes import EXIT_CONNECTION, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConnectError, UsageError
from .registry import split_line

__all__ = ["run_shell"]


async def run_shell(ctx: Context) -> int:
    """Read and run lines until ``quit`` or the end of input (or Ctrl-C, when not on a terminal); the exit
    code."""
    reader = LineReader()
    ctx.before_async_output = reader.clear_prompt
    ctx.after_async_output = reader.redraw_prompt
    code = EXIT_OK
    async with trio.open_nursery() as nursery:
        ctx.nursery = nursery
        try:
            await ctx.connect()
        except ConnectError as e:
            ctx.error(str(e))
            nursery.cancel_scope.cancel()
            return EXIT_CONNECTION
        except InvalidInputError as e:
            ctx.error(str(e))
            nursery.cancel_scope.cancel()
            return EXIT_USAGE
        reader.complete_with(ctx)
        if reader.tty:
            ctx.print(f"Connected to {ctx.hosts}; type help for the commands, quit to leave.")
        running: list[trio.CancelScope] = []
        with trio.CancelScope() as shell_scope:

            async def on_sigint() -> None:
                nonlocal code
                with trio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _ in signals:
                        if running:
                            running[-1].cancel()
                        elif not reader.tty:
                            code = EXIT_INTERRUPTED
                            shell_scope.cancel()
                        else:  # a line typed without GNU readline: start afresh
                            reader.fresh_prompt()

            nursery.start_soon(on_sigint)
            while not ctx.quit_requested:
                prompt = f"[zk: {ctx.hosts}({fmt.state_label(ctx.state)}) {ctx.command_number}] "
                line = await reader.read(prompt)
                if line is None:
                    if reader.tty:
                        ctx.print()
                    break
                if not line:
                    continue
                try:
                    first = split_line(line)[:1]
                except UsageError:
                    first = []
                if first != ["redo"]:
                    ctx.record(line)
                with trio.CancelScope() as scope:
                    running.append(scope)
                    try:
                        await dispatch.execute_line(ctx, line)
                    finally:
                        running.pop()
                if scope.cancelled_caught:
                    ctx.error("Interrupted")
        if shell_scope.cancelled_caught and reader.tty:
            reader.restore_terminal()
            ctx.print()
        reader.save()
        await ctx.close()
        nursery.cancel_scope.cancel()
    return code
