"""Several locks held as one: Curator's ``InterProcessMultiLock``.

::

    async with zklock.MultiLock(zk, ["/locks/account-1", "/locks/account-2"]) as leases:
        ...                                   # both held; cancelled if either is lost

The locks are taken in the order given (as Curator does); take them in one agreed order everywhere (a
sorted list, say) or two multi-locks can wait for each other forever.  If an acquire fails or is
cancelled, the locks already held are released (shielded, the newest first) before it raises.  Inside
``async with``, the body runs under every lease's block: the loss of any lock cancels it and raises
:class:`~zklock.LockLostError`, as for one lock.  Paths given as strings become :class:`~zklock.Mutex`\\ es
(Curator's ``InterProcessMutex`` nodes, so Curator's multi-lock on the same paths excludes this one);
any zklock lock recipe may be given instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from types import TracebackType

import trio

from zkwire import Client, InvalidArgumentError

from .lease import Lease
from .mutex import Mutex
from .naming import Naming
from .recipe import LockRecipe

__all__ = ["MultiLock"]


class MultiLock:
    """Curator's ``InterProcessMultiLock``; see :mod:`zklock.multilock`.

    Raises:
        InvalidArgumentError: no locks, or the same lock path twice (at construction).
        InvalidPathError: a bad path.
    """

    def __init__(self, client: Client, locks: Sequence[str | LockRecipe], *, naming: Naming = "curator") -> None:
        self.client = client
        self.locks: list[LockRecipe] = [
            Mutex(client, lock, naming=naming) if isinstance(lock, str) else lock for lock in locks
        ]
        paths = [lock.path for lock in self.locks]
        if not paths or len(set(paths)) != len(paths):
            raise InvalidArgumentError(", ".join(paths) or "/", "a multi-lock needs distinct lock paths")
        self._stacks: list[AsyncExitStack] = []

    async def acquire(self, blocking: bool = True) -> bool:
        """Take every lock in order; with ``blocking=False`` give up (releasing what was taken) as soon
        as one would have to wait.  Bound a blocking wait with a cancel scope."""
        taken: list[LockRecipe] = []
        try:
            for lock in self.locks:
                if not await lock.acquire(blocking):
                    await self._release(taken)
                    return False
                taken.append(lock)
        except BaseException:
            await self._release(taken)
            raise
        return True

    async def release(self) -> None:
        """Release every lock (the newest first)."""
        await self._release(self.locks)

    @staticmethod
    async def _release(locks: Sequence[LockRecipe]) -> None:
        with trio.CancelScope(shield=True):
            for lock in reversed(locks):
                if lock.lease is not None:
                    await lock.release()

    async def __aenter__(self) -> list[Lease]:
        stack = AsyncExitStack()
        try:
            leases = [await stack.enter_async_context(lock) for lock in self.locks]
        except BaseException:
            with trio.CancelScope(shield=True):
                await stack.aclose()
            raise
        self._stacks.append(stack)
        return leases

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        stack = self._stacks.pop()
        return bool(await stack.__aexit__(exc_type, exc, tb))
