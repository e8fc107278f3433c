"""Retrying idempotent operations through transient errors, trio style.

::

    with trio.fail_after(10):                       # the deadline is a cancel scope, never an argument
        data, stat = await zkwire.retry(zk.get_data, "/config")

:func:`retry` calls the function again after a transient error (:data:`TRANSIENT_ERRORS`: the
connection broke, the server timed out or throttled the request, the session moved) with exponential
back-off and full jitter, until it succeeds, fails otherwise, or the caller's cancel scope ends it.  It
never retries :class:`~zkwire.errors.SessionExpiredError` (a new session is needed: see
:func:`zkwire.sessions`), a closed client, a failed authentication, or any error that says something
about the data (``NoNodeError``, ``BadVersionError``...).

Which writes are safe to retry
------------------------------

A read can always be retried.  A write that failed with ``ConnectionLossError`` may have been applied
(the reply was lost, not necessarily the request), so retry a write only when applying it twice is
harmless or detectable:

* ``set_data(path, data)`` with ``version=-1``: applying it twice leaves the same data (another
  writer's change in between may be overwritten, as with any unconditional write).
* ``set_data(..., version=v)``, ``delete(..., version=v)``, ``multi`` with a ``Check``: a retry after an
  applied first attempt fails with ``BadVersionError``; decide by reading the node again.
* ``delete(path)``: a retry after an applied first attempt fails with ``NoNodeError``.
* ``create(path)`` (not sequential): a retry after an applied first attempt fails with
  ``NodeExistsError``; check the node's ``ephemeral_owner`` or data to tell yours from another's.
* ``create(..., sequential=True)`` is **not** safe: each attempt makes a new node.  Put a unique token
  in the name and look for it after a connection loss, as the lock recipes do.
* ``ensure_path``, ``delete_recursive``: idempotent, safe.

``OperationTimeoutError``, ``RequestTimeoutError`` and ``ThrottledOpError`` are answers from the server:
a throttled request was not applied; a timed-out one may have been.  ``SessionMovedError`` means the
request went to a server that no longer owns the session: it was not applied.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import trio

from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    OperationTimeoutError,
    RequestTimeoutError,
    SessionExpiredError,
    SessionMovedError,
    ThrottledOpError,
    ZKError,
)
from ..sansio.backoff import SHARED_RNG, Backoff
from .observers import ATTEMPT

__all__ = ["RetryPolicy", "TRANSIENT_ERRORS", "retry", "retry_with", "DEFAULT_POLICY"]

log = logging.getLogger("zkwire.retry")

P = ParamSpec("P")
T = TypeVar("T")

#: Errors after which the same request may succeed if sent again.
TRANSIENT_ERRORS: tuple[type[ZKError], ...] = (
    ConnectionLossError,
    OperationTimeoutError,
    RequestTimeoutError,
    ThrottledOpError,
    SessionMovedError,
)

#: Never retried, whatever a policy's ``retry_on`` says: the session or the client is gone for good.
_FINAL_ERRORS = (SessionExpiredError, ClientClosedError, AuthFailedError)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How :func:`retry` waits between attempts.

    The n-th wait (from 0) is drawn uniformly from ``[0, min(max_delay, initial_delay * multiplier**n)]``
    ("full jitter": clients that failed together do not come back together).  ``max_attempts`` bounds
    the number of calls (None: until the caller's cancel scope ends it).  ``retry_on`` lists the error
    classes that are retried.
    """

    initial_delay: float = 0.05
    max_delay: float = 2.0
    multiplier: float = 2.0
    max_attempts: int | None = None
    retry_on: tuple[type[BaseException], ...] = TRANSIENT_ERRORS

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait after failed attempt number ``attempt`` (0 for the first), drawn from ``rng`` (a
        generator private to zkwire when None)."""
        return self.backoff(rng).delay(attempt)

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        """The policy's waits as a :class:`~zkwire.sansio.backoff.Backoff` (full jitter) drawing from
        ``rng`` (a generator private to zkwire when None)."""
        return Backoff(self.initial_delay, self.max_delay, self.multiplier, jitter=1.0, rng=rng or SHARED_RNG)


DEFAULT_POLICY = RetryPolicy()


async def retry(
    fn: Callable[P, Awaitable[T]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Await ``fn(*args, **kwargs)``, calling it again after each transient error (default policy).

    Bound it with a cancel scope (``with trio.fail_after(10): await retry(...)``).  Use
    :func:`retry_with` for another :class:`RetryPolicy`.  Only retry idempotent operations: see the
    module documentation for which writes are safe.

    Raises:
        SessionExpiredError, ClientClosedError, AuthFailedError: at once, never retried.
        ZKError: any non-transient error of ``fn``, at once; the last transient one once
            ``max_attempts`` calls have failed.
        trio.Cancelled: when the caller's cancel scope ends the wait (``trio.TooSlowError`` from
            ``fail_after``).
    """
    return await retry_with(DEFAULT_POLICY, fn, *args, **kwargs)


async def retry_with(
    policy: RetryPolicy,
    fn: Callable[P, Awaitable[T]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Like :func:`retry`, with ``policy`` deciding what is retried and how long to wait.

    Raises:
        BaseException: whatever ``fn`` raised that ``policy.retry_on`` does not cover, or the last
            retried error once ``policy.max_attempts`` calls have failed.
        trio.Cancelled: when the caller's cancel scope ends the wait.
    """
    attempt = 0
    while True:
        counted = ATTEMPT.set(attempt + 1)  # the observers' RequestEvent.attempt
        try:
            return await fn(*args, **kwargs)
        except policy.retry_on as error:
            if isinstance(error, _FINAL_ERRORS):
                raise
            attempt += 1
            if policy.max_attempts is not None and attempt >= policy.max_attempts:
                raise
            wait = policy.delay(attempt - 1)
            name = getattr(fn, "__qualname__", fn)
            log.debug("retrying %s in %.3fs after %r (attempt %d)", name, wait, error, attempt)
        finally:
            ATTEMPT.reset(counted)
        await trio.sleep(wait)
