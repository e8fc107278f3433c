"""Exceptions of the lock recipes."""

from __future__ import annotations

from zkwire import ZKError

__all__ = [
    "LockError",
    "LockLostError",
    "NotHeldError",
    "MaxLeasesMismatchError",
    "ContentionError",
    "CounterDataError",
]


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


class MaxLeasesMismatchError(LockError, ValueError):
    """A kazoo-layout semaphore node stores a lease count other than this Semaphore's ``max_leases``."""

    def __init__(self, path: str, stored: int, wanted: int) -> None:
        super().__init__(f"semaphore {path} holds {stored} leases, not {wanted} (max_leases must agree)")
        self.path = path
        self.stored = stored
        self.wanted = wanted


class ContentionError(LockError):
    """A compare-and-set update met a conflicting write ``attempts`` times in a row (nothing was applied)."""

    def __init__(self, path: str, attempts: int) -> None:
        super().__init__(f"{path}: {attempts} conflicting writes in a row; nothing was applied")
        self.path = path
        self.attempts = attempts


class CounterDataError(LockError, ValueError):
    """A counter node holds data that is not the counter's layout (another recipe's node?)."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"counter {path}: {what}")
        self.path = path
