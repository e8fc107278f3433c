"""zklock: distributed lock recipes on zkwire.

:class:`Mutex`, :class:`ReadWriteLock`, :class:`Semaphore` and :class:`Election` share one algorithm
(:mod:`zklock.recipe`): ephemeral sequential nodes, each contender watching one other node, protected
names that survive lost replies, clean-up on every failure, and leases that report -- and by default
cancel their holder on -- a lost lock.  Each recipe's ``naming`` makes its nodes those of Apache
Curator's recipes (``"curator"``, the default) or of kazoo's (``"kazoo"``); the README's
interoperability matrix says which peers exclude each other.
"""

from __future__ import annotations

from .barrier import Barrier, DoubleBarrier
from .counter import AtomicInteger, AtomicLong, AtomicValue, Counter, SharedCount, VersionedValue
from .discovery import (
    InstanceDataError,
    ServiceCache,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    ServiceRegistration,
    ServiceType,
    UriSpec,
)
from .election import Election, LeaderSelector
from .errors import ContentionError, CounterDataError, LockError, LockLostError, MaxLeasesMismatchError, NotHeldError
from .group import (
    GroupMember,
    GroupView,
    Party,
    ShallowParty,
    group_members,
    open_group_view,
    party_members,
    watch_party,
)
from .lease import Lease
from .multilock import MultiLock
from .mutex import Mutex
from .naming import Naming
from .partitioner import Assignment, SetPartitioner
from .persistent import NodeMode, PersistentNode, PersistentTtlNode
from .recipe import default_identifier, request_revocation
from .rwlock import ReadLock, ReadWriteLock, WriteLock
from .semaphore import Semaphore
from .timedlease import multi_non_blocking_lease, non_blocking_lease
from .workqueue import LockingQueue, Queue, QueueNaming

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
    "MaxLeasesMismatchError",
    "Naming",
    "default_identifier",
    "request_revocation",
    "PersistentNode",
    "PersistentTtlNode",
    "NodeMode",
    "GroupMember",
    "GroupView",
    "open_group_view",
    "group_members",
    "Party",
    "ShallowParty",
    "watch_party",
    "party_members",
    "SharedCount",
    "AtomicLong",
    "AtomicInteger",
    "AtomicValue",
    "VersionedValue",
    "Counter",
    "ContentionError",
    "CounterDataError",
    "Barrier",
    "DoubleBarrier",
    "Queue",
    "LockingQueue",
    "QueueNaming",
    "SetPartitioner",
    "Assignment",
    "non_blocking_lease",
    "multi_non_blocking_lease",
    "MultiLock",
    "LeaderSelector",
    "ServiceDiscovery",
    "ServiceInstance",
    "ServiceRegistration",
    "ServiceCache",
    "ServiceProvider",
    "ServiceType",
    "UriSpec",
    "InstanceDataError",
]
