"""The interactive ``zkwire`` shell: ``zkwire --server HOSTS`` with no command.

Lines are read in a worker thread, so that watch events and session state changes print while the
shell waits for input; on a terminal with line editing, a prompt showing the session's state, and a
history file (``$ZKWIRE_HISTORY``, default ``~/.zkwire_history``).  Ctrl-C interrupts the running
command, or leaves the shell (exit 130) when none runs.  ``quit`` or the end of input leaves it with
exit 0; exit 3 if it cannot connect at all.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path
from typing import Any

import trio

from ..errors import InvalidInputError
from . import dispatch
from . import format as fmt
from .context import Context
from .outcomes import EXIT_CONNECTION, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConnectError, UsageError
from .registry import split_line

__all__ = ["run_shell"]


class _LineReader:
    """Reads shell lines in a worker thread (so that watch events print meanwhile), with readline
    line editing and a history file when stdin is a terminal."""

    def __init__(self) -> None:
        if isinstance(sys.stdin, io.TextIOWrapper):
            # A line that is not valid UTF-8 becomes a usage error for that line, not the end of the shell.
            sys.stdin.reconfigure(errors="surrogateescape")
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self.reading = False
        self.prompt = ""
        self._readline: object | None = None
        self._history_file: Path | None = None
        self._terminal: list[Any] | None = None
        if self.tty:
            try:
                import termios

                self._terminal = termios.tcgetattr(sys.stdin.fileno())
            except (ImportError, OSError):
                pass
            try:
                import readline
            except ImportError:  # pragma: no cover - platforms without readline
                return
            self._readline = readline
            self._history_file = Path(os.environ.get("ZKWIRE_HISTORY", Path.home() / ".zkwire_history"))
            try:
                readline.read_history_file(self._history_file)
            except OSError:
                pass
            readline.set_history_length(1000)

    def _read(self, prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None

    async def read(self, prompt: str) -> str | None:
        self.prompt = prompt if self.tty else ""
        self.reading = True
        try:
            return await trio.to_thread.run_sync(self._read, self.prompt, abandon_on_cancel=True)
        finally:
            self.reading = False

    def clear_prompt(self) -> None:
        if self.tty and self.reading:
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()

    def redraw_prompt(self) -> None:
        if self.tty and self.reading:
            buffer = ""
            if self._readline is not None:
                buffer = self._readline.get_line_buffer()  # type: ignore[attr-defined]
            sys.stdout.write(self.prompt + buffer)
            sys.stdout.flush()

    def restore_terminal(self) -> None:
        """Leave the terminal as we found it (an abandoned readline call may have changed its modes)."""
        if self._terminal is not None:
            import termios

            try:
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._terminal)
            except OSError:
                pass

    def save(self) -> None:
        if self._readline is not None and self._history_file is not None:
            try:
                self._readline.write_history_file(self._history_file)  # type: ignore[attr-defined]
            except OSError:
                pass


async def run_shell(ctx: Context) -> int:
    """Read and run lines until ``quit``, the end of input or Ctrl-C; the exit code."""
    reader = _LineReader()
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
                        else:
                            code = EXIT_INTERRUPTED
                            shell_scope.cancel()

            nursery.start_soon(on_sigint)
            while not ctx.quit_requested:
                prompt = f"[zk: {ctx.hosts}({fmt.state_label(ctx.state)}) {ctx.command_number}] "
                line = await reader.read(prompt)
                if line is None:
                    if reader.tty:
                        ctx.print()
                    break
                line = line.strip()
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
