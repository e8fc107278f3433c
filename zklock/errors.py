"""Exceptions of the lock recipes."""

from __future__ import annotations

from zkwire.errors import ZKError

__all__ = ["LockError", "LockLostError", "NotHeldError"]


class LockError(ZKError):
    """Base class of zklock's own errors."""


class LockLostError(LockError):
    """The lock was lost while held: the session was suspended or expired, or the lock node was deleted.

    Another contender may hold the lock now.  Raised out of the ``async with`` body, which was cancelled.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"lock {path} lost: {reason}")
        self.path = path
        self.reason = reason


class NotHeldError(LockError):
    """release() was called by a task that does not hold the lock."""
