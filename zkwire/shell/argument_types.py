"""Converters of command-line words shared by the ``zkwire`` commands (see :mod:`zkwire.shell.registry`).

Each takes the word's text and returns the value its command works with, or raises
:class:`~zkwire.shell.outcomes.ArgumentError` (or, for a path or ACL, the client's own
:class:`~zkwire.errors.InvalidInputError`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..acl import parse_acl
from ..protocol.records import ACL
from ..sansio.paths import validate_path
from .outcomes import ArgumentError

__all__ = ["INT32_MAX", "acl_entries", "data_version", "integer", "znode_path"]

INT32_MAX = (1 << 31) - 1


def integer(what: str, minimum: int, maximum: int = INT32_MAX) -> Callable[[str], int]:
    """A decimal number from ``minimum`` to ``maximum``; ``what`` names it in the messages."""

    def convert(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise ArgumentError(f"{what} must be a number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise ArgumentError(f"{what} must be from {minimum} to {maximum}, not {value}")
        return value

    return convert


#: ``-v version``: a data or ACL version to match, -1 for any.
data_version = integer("version", -1)


def znode_path(text: str) -> str:
    """An absolute znode path (``/a/b``)."""
    return validate_path(text)


def acl_entries(text: str) -> tuple[ACL, ...]:
    """ACL text: ``scheme:id:perms`` entries separated by commas."""
    return parse_acl(text)
