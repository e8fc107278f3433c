"""zkwire: a ZooKeeper client for trio, with a hand-written codec for ZooKeeper's jute protocol.

The package is built in layers, each importing only the ones below it:

* :mod:`zkwire.protocol` -- bytes <-> records (jute, the op table, framing); standard library only;
* :mod:`zkwire.sansio` -- the session core: bytes and time in, events and bytes out; no trio;
* :mod:`zkwire.client` -- the trio layer: :class:`Client`, the connection driver, watch handles and helpers;

beside the session core, :mod:`zkwire.sasl` -- the SASL mechanisms it drives (DIGEST-MD5, Kerberos), which
import neither the core nor trio;

and beside them the tools: :mod:`zkwire.trace` (the tracer), :mod:`zkwire.shell` (the ``zkwire`` command
line) and :mod:`zkwire.testing` (real servers for tests).

The names of the trio layer are imported on first use (PEP 562), so that ``import zkwire.protocol`` or
``import zkwire.sansio`` loads no trio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .acl import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, digest_acl, digest_id
from .constants import AddWatchMode, CreateMode, EventType, KeeperState, OpCode, Perm, WatcherType
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .protocol.records import ACL, Id, Stat
from .sansio.ensemble import EnsembleConfig, EnsembleConfigWarning, Member, Role, parse_config
from .sansio.hosts import HostPort
from .sansio.ops import Check, Create, Delete, GetChildren, GetData, ReadOp, SetData, WriteOp
from .sansio.paths import validate_path
from .sansio.session import SessionState

if TYPE_CHECKING:
    from .client import aio
    from .client.aio import NotInTrioError
    from .client.api import Client, Transaction, open_client
    from .client.continuity import Sessions, SessionSource, current_client, sessions
    from .client.groups import task_nursery
    from .client.nodewatch import ChildrenWatch, DataWatch, NodeData, watch_children, watch_data
    from .client.retry import TRANSIENT_ERRORS, RetryPolicy, retry, retry_with
    from .client.tls import tls_context
    from .client.treecache import TreeCache, TreeEvent, TreeEvents, TreeEventType, open_tree_cache
    from .client.watchers import PersistentWatch, StateStream, Watch, WatchedEvent

__version__ = "0.1.0"

#: Public names of the trio layer -> the module that defines them (imported on first use).
_TRIO_LAYER = {
    "open_client": "api",
    "Client": "api",
    "Transaction": "api",
    "Watch": "watchers",
    "WatchedEvent": "watchers",
    "PersistentWatch": "watchers",
    "StateStream": "watchers",
    "NotInTrioError": "aio",
    "RetryPolicy": "retry",
    "TRANSIENT_ERRORS": "retry",
    "retry": "retry",
    "retry_with": "retry",
    "Sessions": "continuity",
    "SessionSource": "continuity",
    "sessions": "continuity",
    "current_client": "continuity",
    "task_nursery": "groups",
    "NodeData": "nodewatch",
    "DataWatch": "nodewatch",
    "ChildrenWatch": "nodewatch",
    "watch_data": "nodewatch",
    "watch_children": "nodewatch",
    "TreeCache": "treecache",
    "TreeEvent": "treecache",
    "TreeEvents": "treecache",
    "TreeEventType": "treecache",
    "open_tree_cache": "treecache",
    "tls_context": "tls",
}


def __getattr__(name: str) -> Any:
    if name == "aio":
        module = importlib.import_module(".client.aio", __name__)
        globals()[name] = module
        return module
    where = _TRIO_LAYER.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".client.{where}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "validate_path",
    "EnsembleConfig",
    "EnsembleConfigWarning",
    "Member",
    "Role",
    "parse_config",
    "HostPort",
    *_errors_all,
    # Helpers applications build on (each in its own module of the trio layer).
    "aio",
    "NotInTrioError",
    "RetryPolicy",
    "TRANSIENT_ERRORS",
    "retry",
    "retry_with",
    "Sessions",
    "SessionSource",
    "sessions",
    "current_client",
    "task_nursery",
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
    "tls_context",
]
