"""zkwire: a ZooKeeper client for trio, with a hand-written codec for ZooKeeper's jute protocol."""

from __future__ import annotations

from .acl import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, digest_acl, digest_id
from .client import Client, Transaction, open_client
from .constants import AddWatchMode, CreateMode, EventType, KeeperState, OpCode, Perm, WatcherType
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .ops import Check, Create, Delete, GetChildren, GetData, ReadOp, SetData, WriteOp
from .records import ACL, Id, Stat
from .session import SessionState
from .watchers import PersistentWatch, StateStream, Watch, WatchedEvent

__version__ = "0.1.0"

__all__ = [
    "open_client",
    "Client",
    "Transaction",
    "SessionState",
    "Watch",
    "WatchedEvent",
    "PersistentWatch",
    "StateStream",
    "Create",
    "Delete",
    "SetData",
    "Check",
    "GetData",
    "GetChildren",
    "WriteOp",
    "ReadOp",
    "ACL",
    "Id",
    "Stat",
    "AddWatchMode",
    "CreateMode",
    "EventType",
    "KeeperState",
    "OpCode",
    "Perm",
    "WatcherType",
    "CREATOR_ALL_ACL",
    "OPEN_ACL_UNSAFE",
    "READ_ACL_UNSAFE",
    "digest_acl",
    "digest_id",
    *_errors_all,
]

# Helpers applications build on (each in its own module).
from . import aio
from .aio import NotInTrioError
from .continuity import Sessions, SessionSource, sessions
from .nodewatch import ChildrenWatch, DataWatch, NodeData, watch_children, watch_data
from .retry import TRANSIENT_ERRORS, RetryPolicy, retry, retry_with
from .treecache import TreeCache, TreeEvent, TreeEvents, TreeEventType, open_tree_cache

__all__ += [
    "aio",
    "NotInTrioError",
    "RetryPolicy",
    "TRANSIENT_ERRORS",
    "retry",
    "retry_with",
    "Sessions",
    "SessionSource",
    "sessions",
    "NodeData",
    "DataWatch",
    "ChildrenWatch",
    "watch_data",
    "watch_children",
    "TreeCache",
    "TreeEvent",
    "TreeEvents",
    "TreeEventType",
    "open_tree_cache",
]
