"""How the ``zkwire`` command line shows things: node data, Stat, ACLs, watch events, session states.

Field names and layouts follow ZooKeeper's own command-line shell (``cZxid = 0x1a``, ``[a, b]``,
``WatchedEvent state:SyncConnected type:NodeDataChanged path:/x``) so that output is familiar and
scripts written against it keep working.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from ..acl import format_perms
from ..client.watchers import WatchedEvent
from ..constants import EventType, KeeperState
from ..protocol.records import ACL, Stat
from ..sansio.session import SessionState

__all__ = [
    "format_data",
    "format_stat",
    "format_time",
    "format_zxid",
    "format_list",
    "format_acl_entries",
    "format_event",
    "format_state_event",
    "event_type_name",
    "state_label",
    "EVENT_NAMES",
    "KEEPER_STATE_NAMES",
]

#: Event type names as ZooKeeper's Java client spells them.
EVENT_NAMES: dict[int, str] = {
    EventType.NONE: "None",
    EventType.NODE_CREATED: "NodeCreated",
    EventType.NODE_DELETED: "NodeDeleted",
    EventType.NODE_DATA_CHANGED: "NodeDataChanged",
    EventType.NODE_CHILDREN_CHANGED: "NodeChildrenChanged",
    EventType.DATA_WATCH_REMOVED: "DataWatchRemoved",
    EventType.CHILD_WATCH_REMOVED: "ChildWatchRemoved",
    EventType.PERSISTENT_WATCH_REMOVED: "PersistentWatchRemoved",
}

KEEPER_STATE_NAMES: dict[int, str] = {
    KeeperState.UNKNOWN: "Unknown",
    KeeperState.DISCONNECTED: "Disconnected",
    KeeperState.NO_SYNC_CONNECTED: "NoSyncConnected",
    KeeperState.SYNC_CONNECTED: "SyncConnected",
    KeeperState.AUTH_FAILED: "AuthFailed",
    KeeperState.CONNECTED_READ_ONLY: "ConnectedReadOnly",
    KeeperState.SASL_AUTHENTICATED: "SaslAuthenticated",
    KeeperState.CLOSED: "Closed",
    KeeperState.EXPIRED: "Expired",
}

#: The KeeperState a session state change is reported as (the Java client's names).
_SESSION_KEEPER_STATE: dict[SessionState, KeeperState] = {
    SessionState.CONNECTING: KeeperState.DISCONNECTED,
    SessionState.CONNECTED: KeeperState.SYNC_CONNECTED,
    SessionState.READ_ONLY: KeeperState.CONNECTED_READ_ONLY,
    SessionState.SUSPENDED: KeeperState.DISCONNECTED,
    SessionState.EXPIRED: KeeperState.EXPIRED,
    SessionState.AUTH_FAILED: KeeperState.AUTH_FAILED,
    SessionState.CLOSED: KeeperState.CLOSED,
}

_PROMPT_STATES: dict[SessionState, str] = {
    SessionState.CONNECTING: "CONNECTING",
    SessionState.CONNECTED: "CONNECTED",
    SessionState.READ_ONLY: "CONNECTEDREADONLY",
    SessionState.SUSPENDED: "CONNECTING",
    SessionState.EXPIRED: "EXPIRED",
    SessionState.AUTH_FAILED: "AUTH_FAILED",
    SessionState.CLOSED: "CLOSED",
}

_TEXT_CONTROLS = frozenset("\n\r\t")


def format_data(data: bytes) -> str:
    """Node data for people: the text if it is printable UTF-8, else ``0x`` and the bytes in hex."""
    if not data:
        return ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()
    if all(ch.isprintable() or ch in _TEXT_CONTROLS for ch in text):
        return text
    return "0x" + data.hex()


def format_zxid(value: int) -> str:
    """A zxid or session id in hex, as the Java client prints a long (two's complement when negative)."""
    return f"0x{value & 0xFFFFFFFFFFFFFFFF:x}"


def format_time(millis: int) -> str:
    """Milliseconds since the epoch as a local date (``Sun Nov 22 11:01:39 UTC 2026``)."""
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(millis / 1000))


def format_stat(stat: Stat) -> str:
    """All eleven Stat fields, one ``name = value`` line each, in the usual order."""
    lines = [
        ("cZxid", format_zxid(stat.czxid)),
        ("ctime", format_time(stat.ctime)),
        ("mZxid", format_zxid(stat.mzxid)),
        ("mtime", format_time(stat.mtime)),
        ("pZxid", format_zxid(stat.pzxid)),
        ("cversion", str(stat.cversion)),
        ("dataVersion", str(stat.version)),
        ("aclVersion", str(stat.aversion)),
        ("ephemeralOwner", format_zxid(stat.ephemeral_owner)),
        ("dataLength", str(stat.data_length)),
        ("numChildren", str(stat.num_children)),
    ]
    return "\n".join(f"{name} = {value}" for name, value in lines)


def format_list(items: Iterable[str]) -> str:
    """``[a, b, c]``."""
    return "[" + ", ".join(items) + "]"


def format_acl_entries(acls: Iterable[ACL]) -> str:
    """One entry per two lines: ``'scheme,'id`` then ``: perms``."""
    return "\n".join(f"'{a.id.scheme},'{a.id.id}\n: {format_perms(a.perms)}" for a in acls)


def event_type_name(event_type: int) -> str:
    return EVENT_NAMES.get(event_type, f"Unknown({event_type})")


def format_event(event: WatchedEvent) -> str:
    """``WatchedEvent state:SyncConnected type:NodeDataChanged path:/x``."""
    state = KEEPER_STATE_NAMES.get(event.state, f"Unknown({event.state})")
    return f"WatchedEvent state:{state} type:{event_type_name(event.type)} path:{event.path}"


def format_state_event(state: SessionState) -> str:
    """A session state change, reported like a watch event without a path."""
    keeper = _SESSION_KEEPER_STATE[state]
    return f"WatchedEvent state:{KEEPER_STATE_NAMES[keeper]} type:None path:null"


def state_label(state: SessionState | None) -> str:
    """The state shown in the shell's prompt (``CONNECTED``, ``CONNECTING``, ``CLOSED``, ...)."""
    if state is None:
        return "CLOSED"
    return _PROMPT_STATES[state]
