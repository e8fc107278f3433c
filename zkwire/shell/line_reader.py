"""How the interactive ``zkwire`` shell reads its lines: in a worker thread (so that watch events print
while it waits), with readline's line editing, history file and Tab completion on a terminal.

Ctrl-C while a line is being typed drops that line, as in bash: readline shows ``^C`` after it and the
shell prompts again, with the same session.  For that, the terminal's interrupt character is switched off
for as long as readline reads (so that Ctrl-C reaches readline as a key, bound here to end the line with
a ``^C`` mark that :meth:`LineReader.read` turns into an empty line) and switched back on before a
command runs (so that Ctrl-C then interrupts the command: the shell's SIGINT handler cancels it).
Without GNU readline (libedit, or none), the interrupt character stays on: Ctrl-C while a line is typed
starts a fresh prompt (the terminal itself throws a half-typed line away when readline is not in use).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import trio

from .completion import WORD_DELIMITERS, Completer
from .context import Context

__all__ = ["LineReader"]

#: What ends a line Ctrl-C gave up (readline's macro inserts it, shown as ``^C``).
_INTERRUPT_MARK = "\x03"

#: readline key bindings: key sequences nobody types, bound to the functions that the Ctrl-C macro runs.
_BINDINGS = (
    r'"\e[9971~": end-of-line',
    r'"\e[9972~": quoted-insert',
    r'"\e[9973~": accept-line',
    r'"\C-c": "\e[9971~\e[9972~\C-c\e[9973~"',
    "tab: complete",
)


def _import_readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        return None
    return readline


class LineReader:
    """Reads shell lines in a worker thread, with readline line editing, completion and a history file
    when stdin and stdout are a terminal."""

    def __init__(self) -> None:
        if isinstance(sys.stdin, io.TextIOWrapper):
            # A line that is not valid UTF-8 becomes a usage error for that line, not the end of the shell.
            sys.stdin.reconfigure(errors="surrogateescape")
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self.reading = False
        self.prompt = ""
        self._readline: Any = None
        self._gnu = False
        self._history_file: Path | None = None
        self._terminal: list[Any] | None = None
        if not self.tty:
            return
        try:
            import termios

            self._terminal = termios.tcgetattr(sys.stdin.fileno())
        except (ImportError, OSError):
            pass
        readline = _import_readline()
        if readline is None:
            return
        self._readline = readline
        # libedit (macOS) reads GNU readline's bindings in a syntax of its own: Tab only, no Ctrl-C key.
        self._gnu = "libedit" not in (readline.__doc__ or "")
        self._history_file = Path(os.environ.get("ZKWIRE_HISTORY", Path.home() / ".zkwire_history"))
        try:
            readline.read_history_file(self._history_file)
        except OSError:
            pass
        readline.set_history_length(1000)
        readline.set_auto_history(False)  # an interrupted line is not history; read() adds the others
        for binding in _BINDINGS if self._gnu else ("bind ^I rl_complete",):
            readline.parse_and_bind(binding)

    def complete_with(self, ctx: Context) -> None:
        """Complete on Tab from ``ctx``'s commands and session (call it in the shell's trio run)."""
        readline = self._readline
        if readline is None:
            return

        def line() -> tuple[str, int]:
            return readline.get_line_buffer(), readline.get_begidx()

        readline.set_completer_delims(WORD_DELIMITERS)
        readline.set_completer(Completer(ctx, trio.lowlevel.current_trio_token(), line))

    def _read(self, prompt: str) -> str | None:
        saved = self._interrupt_key_off()
        try:
            return input(prompt)
        except EOFError:
            return None
        finally:
            self._interrupt_key_on(saved)

    async def read(self, prompt: str) -> str | None:
        """The next line, stripped ("" for one given up with Ctrl-C); None at the end of input."""
        self.prompt = prompt if self.tty else ""
        self.reading = True
        try:
            line = await trio.to_thread.run_sync(self._read, self.prompt, abandon_on_cancel=True)
        finally:
            self.reading = False
        if line is None or line.endswith(_INTERRUPT_MARK):
            return None if line is None else ""
        line = line.strip()
        if line and self._readline is not None:
            self._readline.add_history(line)
        return line

    def _interrupt_key_off(self) -> bytes | None:
        """Let Ctrl-C reach readline as a key; the terminal's interrupt character before (None: unchanged)."""
        if not self._gnu or self._terminal is None:
            return None
        import termios

        fd = sys.stdin.fileno()
        try:
            modes = termios.tcgetattr(fd)
            saved: bytes = modes[6][termios.VINTR]
            modes[6][termios.VINTR] = bytes([os.fpathconf(fd, "PC_VDISABLE")])
            termios.tcsetattr(fd, termios.TCSANOW, modes)
        except (OSError, ValueError):
            return None
        return saved

    def _interrupt_key_on(self, saved: bytes | None) -> None:
        if saved is None:
            return
        import termios

        fd = sys.stdin.fileno()
        try:
            modes = termios.tcgetattr(fd)
            modes[6][termios.VINTR] = saved
            termios.tcsetattr(fd, termios.TCSANOW, modes)
        except OSError:
            pass

    def clear_prompt(self) -> None:
        if self.tty and self.reading:
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()

    def redraw_prompt(self) -> None:
        if self.tty and self.reading:
            buffer = self._readline.get_line_buffer() if self._readline is not None else ""
            sys.stdout.write(self.prompt + buffer)
            sys.stdout.flush()

    def fresh_prompt(self) -> None:
        """The prompt again on a line of its own (after a Ctrl-C that readline did not see as a key)."""
        if self.tty and self.reading:
            sys.stdout.write("\n")
            self.redraw_prompt()

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
                self._readline.write_history_file(self._history_file)
            except OSError:
                pass
