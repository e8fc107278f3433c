"""Tab completion in the interactive ``zkwire`` shell: command names, a command's options, znode paths.

:func:`candidates` decides what a word may become from the words before it (nothing of readline in it):

* the first word is a command name (or alias) and completes with a space after it, as does the word
  after ``help``;
* a word starting with ``-`` is one of the command's options (``-s``, ``-w``, ``-add``, ``--json``, ...),
  from its arguments dataclass in the registry (:mod:`zkwire.shell.registry`);
* a word starting with ``/``, for a command that works on the session, is a znode path: the children of
  its parent, listed from the live session.  Names that could not be shown as they are (control, format or
  separator characters: :func:`zkwire.terminal.escape_controls` would change them) are never offered, so
  that nothing from the wire reaches the terminal raw; a name with a space or a quote is offered
  backslash-escaped, the way the shell's line splitting reads it.

:class:`Completer` is what readline calls (in the thread that reads the line): it asks the trio side for
the listing through the loop's token and waits at most :data:`LISTING_WAIT` for it.  A missing parent, a
lost connection, a slow server or a closed shell complete nothing; the completer never raises into
readline.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from ..terminal import escape_controls
from .commands.tree import child_path
from .context import Context
from .outcomes import UsageError
from .registry import ALIASES, COMMANDS, lookup

__all__ = ["LISTING_WAIT", "WORD_DELIMITERS", "Completer", "candidates"]

#: The longest a Tab waits for the server's listing of a path's parent (seconds).
LISTING_WAIT = 1.0
#: What separates the words readline completes (a path's ``/`` and an option's ``-`` belong to the word).
WORD_DELIMITERS = " \t\n"

#: Characters the shell's line splitting (shlex) gives a meaning; a backslash keeps one as it is.
_SHELL_SPECIAL = frozenset(" \t\n'\"\\")


def _command_names(text: str) -> list[str]:
    names = sorted(set(COMMANDS) | set(ALIASES))
    return [f"{name} " for name in names if name.startswith(text)]


def _shell_word(text: str) -> str:
    return "".join(f"\\{ch}" if ch in _SHELL_SPECIAL else ch for ch in text)


def _paths(text: str, list_children: Callable[[str], list[str]]) -> list[str]:
    parent, _, prefix = text.rpartition("/")
    parent = parent or "/"
    if "\\" in text or escape_controls(parent) != parent:
        return []
    names = sorted(name for name in list_children(parent) if name.startswith(prefix))
    return [_shell_word(child_path(parent, name)) for name in names if escape_controls(name) == name]


def candidates(before: str, text: str, list_children: Callable[[str], list[str]]) -> list[str]:
    """What the word ``text`` may become, after the line's text ``before`` it; ``list_children(path)`` gives
    a node's children (and may raise, or return nothing, when it cannot)."""
    words = before.split()
    if not words:
        return _command_names(text)
    try:
        found = lookup(words[0])
    except UsageError:
        return []
    syntax = found.syntax
    if words[-1].startswith("-") and words[-1][1:] in syntax.options:
        return []  # the option's value
    if text.startswith("-"):
        letters = sorted(set(syntax.flags) | set(syntax.options), key=lambda x: (x.lower(), x))
        names = [f"-{x}" for x in letters] + [f"--{name}" for name in sorted(syntax.long_flags)]
        return [f"{name} " for name in names if name.startswith(text)]
    if found.name == "help" and len(words) == 1:
        return _command_names(text)
    if found.session and text.startswith("/"):
        return _paths(text, list_children)
    return []


class Completer:
    """readline's completer function for the shell of ``ctx``, whose trio loop has ``token``."""

    def __init__(
        self,
        ctx: Context,
        token: trio.lowlevel.TrioToken,
        line: Callable[[], tuple[str, int]],
        *,
        wait: float = LISTING_WAIT,
    ) -> None:
        self._ctx = ctx
        self._token = token
        self._line = line
        self._wait = wait
        self._matches: list[str] = []

    def __call__(self, text: str, state: int) -> str | None:
        if state == 0:
            try:
                buffer, begin = self._line()
                self._matches = candidates(buffer[:begin], text, self._children)
            except BaseException:  # readline must get an answer: whatever went wrong completes nothing
                self._matches = []
        return self._matches[state] if state < len(self._matches) else None

    def _children(self, path: str) -> list[str]:
        """The children of ``path`` from the trio side (called in the thread reading the line)."""
        return trio.from_thread.run(self._list, path, trio_token=self._token)

    async def _list(self, path: str) -> list[str]:
        client = self._ctx.client
        if client is None or not client.state.is_connected:
            return []
        with trio.move_on_after(self._wait):
            return await client.get_children(path)
        return []
