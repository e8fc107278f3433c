"""zklock: distributed lock recipes on zkwire.

:class:`Mutex`, :class:`ReadWriteLock`, :class:`Semaphore` and :class:`Election` share one algorithm
(:mod:`zklock.recipe`): ephemeral sequential nodes, each contender watching one other node, protected
names that survive lost replies, clean-up on every failure, and leases that report -- and by default
cancel their holder on -- a lost lock.  Node names are compatible with Apache Curator's recipes and
kazoo's locks.
"""

from __future__ import annotations

from .election import Election
from .errors import LockError, LockLostError, NotHeldError
from .lease import Lease
from .mutex import Mutex
from .recipe import default_identifier, request_revocation
from .rwlock import ReadLock, ReadWriteLock, WriteLock
from .semaphore import Semaphore

__all__ = [
    "Mutex",
    "ReadWriteLock",
    "ReadLock",
    "WriteLock",
    "Semaphore",
    "Election",
    "Lease",
    "LockError",
    "LockLostError",
    "NotHeldError",
    "default_identifier",
    "request_revocation",
]
