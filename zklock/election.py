"""Leader election on the node queue: the lowest node leads.

With ``naming="curator"`` (default) the nodes are Curator LeaderLatch's ``_c_<uuid>-latch-<seq>``, and
one leader is elected among zklock and Curator LeaderLatch participants; no other peer recipe excludes
it.  With ``naming="kazoo"`` they are ``<uuid hex>__lock__<seq>``, those of kazoo's Election (which is a
kazoo Lock), and one leader is elected among zklock and kazoo Election participants; it also excludes
kazoo's Lock and WriteLock on the path, not kazoo's ReadLock nor any Curator recipe.  Either naming sees
both kinds of nodes.

``async with election.leadership() as lease:`` waits to become leader; the body runs only while this
participant leads and is cancelled (with :class:`~zklock.LockLostError`) if leadership is lost.
``await election.run(fn)`` is the selector: it runs ``fn`` each time leadership is won and re-queues
after it ends or is lost, until cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from zkwire import ConnectionLossError, SessionExpiredError

from .errors import LockLostError
from .lease import Lease
from .naming import ELECTION_MARKERS, KAZOO_LOCK, LATCH, LOCK_MARKERS, MUTEX
from .recipe import LockRecipe

__all__ = ["Election", "LeaderSelector"]

log = logging.getLogger("zklock.election")


class Election(LockRecipe):
    """Leader election on ``path``; the arguments are those of :class:`~zklock.Mutex`."""

    event_name: str | None = "election"
    curator_marker = LATCH
    kazoo_marker = KAZOO_LOCK
    markers = ELECTION_MARKERS

    def leadership(self) -> Election:
        """``async with election.leadership() as lease:`` -- the body runs while we lead."""
        return self

    async def leader(self) -> str | None:
        """The current leader's identifier."""
        return await self.holder()

    async def run(self, fn: Callable[[Lease], Awaitable[object]]) -> None:
        """Lead whenever possible: run ``fn(lease)`` as leader, re-queue when it returns or leadership is
        lost; stops (raising) when the session expires or the client closes; cancel to leave."""
        while True:
            try:
                async with self as lease:
                    await fn(lease)
            except LockLostError as e:
                log.info("leadership of %s lost (%s); re-queueing", self.path, e.reason)
            except ConnectionLossError:
                pass
            except SessionExpiredError:
                raise
            await trio.lowlevel.checkpoint()
            await self.client.wait_connected()


class LeaderSelector(Election):
    """Leader election in the layout of Curator's ``LeaderSelector``, whose participants are the
    contenders of an ``InterProcessMutex`` (``_c_<uuid>-lock-<seq>``, where ``LeaderLatch`` writes
    ``-latch-``): one leader among zklock and Curator LeaderSelector participants (and Curator or zklock
    mutexes on the path).  With ``naming="kazoo"`` it is :class:`Election`'s kazoo layout.  The same API
    as :class:`Election`."""

    event_name: str | None = "leader_selector"
    curator_marker = MUTEX
    markers = LOCK_MARKERS
