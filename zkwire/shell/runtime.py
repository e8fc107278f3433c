"""What the ``zkwire`` and ``zklock`` command lines (and ``zkwire trace``) share: one-line usage errors,
checked numbers and text, the common exit codes, and an ending without a traceback.

This module is public, documented in the API reference's command-line toolkit page (``docs/api/cli.rst``,
with :mod:`zkwire.terminal`): ``zklock``'s command line and the tracer build on it, as any command line on
zkwire may, and it depends on nothing of the shell.  Its names are those of ``__all__``.

* :class:`OneLineArgumentParser`: a bad option is one line on stderr (``zkwire: argument --timeout: ...``)
  and exit 2, not argparse's usage block.
* :func:`seconds`: argparse types for durations: finite numbers within a range (``inf``, ``nan``, ``1e12``
  seconds of session timeout are usage errors, not overflows deep inside the client);
  :data:`session_timeout` is the one for a session timeout, up to :data:`MAX_SESSION_TIMEOUT`.
* :func:`is_utf8`: text from the command line that is not valid UTF-8 (Python keeps such bytes as lone
  surrogates) cannot be sent to ZooKeeper and is refused up front.
* :func:`run_cli`: Ctrl-C ends the program with exit 130 (:data:`EXIT_INTERRUPTED`) and nothing on stderr,
  also when trio wrapped the ``KeyboardInterrupt`` in exception groups; output to a pipe whose reader went
  away (``| head``) ends it quietly with exit 141 (:data:`EXIT_PIPE_CLOSED`: 128 + SIGPIPE, what a shell
  reports for a program killed by that signal).
* :data:`EXIT_USAGE` (2): the exit code of a usage error, in every command line.
* :func:`choose_server`: the server of ``--server``, else of ``$ZKWIRE_SERVER`` (zklock also reads its
  deprecated ``$ZKLOCK_SERVER``), else :data:`DEFAULT_SERVER`, and then a note that says so for a
  connection error: a user who gave no server learns where the tool looked.

The options every tool takes to reach a secured ensemble (TLS, ``--auth``, SASL) are parsed in
:mod:`zkwire.shell.security`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from ..client.groups import leaves
from ..terminal import escape_controls

__all__ = [
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "EXIT_PIPE_CLOSED",
    "MAX_SESSION_TIMEOUT",
    "DEFAULT_SERVER",
    "SERVER_VARIABLE",
    "ServerChoice",
    "choose_server",
    "OneLineArgumentParser",
    "seconds",
    "session_timeout",
    "is_utf8",
    "read_text_file",
    "run_cli",
]

#: A usage error: a bad option or argument (nothing was done).
EXIT_USAGE = 2
#: Interrupted by Ctrl-C.
EXIT_INTERRUPTED = 130
#: The output pipe was closed by its reader.
EXIT_PIPE_CLOSED = 141

#: The longest session timeout the protocol can carry: an int32 of milliseconds.
MAX_SESSION_TIMEOUT = ((1 << 31) - 1) / 1000


#: Where both tools connect when neither ``--server`` nor an environment variable names a server.  Read
#: when a server is chosen (:func:`choose_server`), not when the parser is built.
DEFAULT_SERVER = "localhost:2181"
#: The environment variable both tools take their server from.
SERVER_VARIABLE = "ZKWIRE_SERVER"


@dataclass(frozen=True)
class ServerChoice:
    """The connect string a tool uses, and how it came to be chosen."""

    hosts: str
    #: Empty when the user named the server; when the tool fell back to :data:`DEFAULT_SERVER`, a note
    #: for connection errors, e.g. ``(the default: no --server and no $ZKWIRE_SERVER given)``.
    note: str = ""

    def explain(self, message: str) -> str:
        """``message`` (a connection error), followed by the note when the server was not named."""
        return f"{message} {self.note}" if self.note else message


def choose_server(given: str | None, deprecated: Sequence[str] = ()) -> ServerChoice:
    """``--server`` (``given``), else ``$ZKWIRE_SERVER``, else the variables of ``deprecated`` in order
    (an empty variable counts as unset), else :data:`DEFAULT_SERVER` with a note saying so."""
    if given is not None:
        return ServerChoice(given)
    for name in (SERVER_VARIABLE, *deprecated):
        value = os.environ.get(name, "")
        if value:
            return ServerChoice(value)
    names = [f"${name}" for name in (SERVER_VARIABLE, *deprecated)]
    if len(names) == 1:
        unnamed = f"no --server and no {names[0]}"
    else:
        unnamed = f"no --server, {', '.join(names[:-1])} or {names[-1]}"
    return ServerChoice(DEFAULT_SERVER, f"(the default: {unnamed} given)")


class OneLineArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``PROG: MESSAGE (see PROG --help)``) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, escape_controls(f"{self.prog}: {message} (see {self.prog} --help)") + "\n")


def seconds(
    *, minimum: float = 0.0, allow_minimum: bool = False, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds above ``minimum`` (or equal to it, if allowed), at most
    ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds, not {text!r}")
        too_small = value < minimum or (value == minimum and not allow_minimum)
        if too_small or (maximum is not None and value > maximum):
            if maximum is None:
                bounds = f"at least {minimum:g}" if allow_minimum else f"more than {minimum:g}"
            elif allow_minimum:
                bounds = f"from {minimum:g} to {maximum:.3f}"
            else:
                bounds = f"more than {minimum:g} and at most {maximum:.3f}"
            raise argparse.ArgumentTypeError(f"must be {bounds} seconds, not {text!r}")
        return value

    return parse


#: argparse type of a session timeout: 1 ms up to what an int32 of milliseconds holds.
session_timeout: Callable[[str], float] = seconds(minimum=0.001, allow_minimum=True, maximum=MAX_SESSION_TIMEOUT)


def read_text_file(name: str, limit: int) -> str:
    """A small UTF-8 file the user named on the command line (a credential, a membership file).

    Raises:
        OSError: it cannot be read.
        ValueError: it is longer than ``limit`` bytes, or not UTF-8 text (the message says which,
            without quoting the content: it may be a secret).
    """
    with Path(name).open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"is longer than {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 text") from None


def is_utf8(text: str) -> bool:
    """False when ``text`` holds bytes that were not valid UTF-8 on the command line (or stdin)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not complain about the pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):
        pass


def run_cli(body: Callable[[], int]) -> int:
    """Run a command line's ``body`` and return its exit code; Ctrl-C gives 130 and a closed output pipe 141,
    both without a word.  Any other exception propagates."""
    try:
        return body()
    except (KeyboardInterrupt, BrokenPipeError, BaseExceptionGroup) as e:
        found = leaves(e)
        if not all(isinstance(leaf, KeyboardInterrupt | BrokenPipeError) for leaf in found):
            raise
        if any(isinstance(leaf, KeyboardInterrupt) for leaf in found):
            return EXIT_INTERRUPTED
        _silence_stdout()
        return EXIT_PIPE_CLOSED
