"""How a ``zkwire`` command ends: its exit codes and the exceptions that lead to them.

A handler returns normally (exit 0) or raises one of the exceptions below; errors of the client itself
(:class:`~zkwire.errors.ZKError`) are mapped by :func:`zkwire.shell.dispatch.execute`.
"""

from __future__ import annotations

from .runtime import EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, EXIT_USAGE

__all__ = [
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_CONNECTION",
    "EXIT_NO_EVENT",
    "EXIT_INTERRUPTED",
    "EXIT_PIPE_CLOSED",
    "EXIT_CODES",
    "UsageError",
    "ArgumentError",
    "CommandError",
    "ConnectError",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONNECTION = 3
EXIT_NO_EVENT = 4

#: Every exit code of ``zkwire`` and what it means (``zkwire --help`` lists them).
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_FAILED: "the operation failed (e.g. node does not exist, version mismatch, not authorized)",
    EXIT_USAGE: "usage error (unknown command, bad option or argument, invalid path, invalid ACL text)",
    EXIT_CONNECTION: "no usable session (cannot connect within --timeout, connection lost, session expired)",
    EXIT_NO_EVENT: "one-shot -w / addWatch: the watch did not fire within --timeout",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_PIPE_CLOSED: "the output was closed (e.g. piped into head)",
}


class UsageError(Exception):
    """The command line is wrong: exit code 2, nothing was sent."""


class ArgumentError(UsageError):
    """One argument of a command is wrong; the message does not name the command (the registry adds it)."""


class CommandError(Exception):
    """The command could not do its work (a one-line reason): exit code 1."""


class ConnectError(Exception):
    """No usable session: exit code 3."""
