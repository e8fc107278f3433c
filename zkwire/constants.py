"""Numbers of the ZooKeeper 3.8 client protocol: op codes, event types, states, flags, permissions."""

from __future__ import annotations

from enum import IntEnum, IntFlag

__all__ = [
    "OpCode",
    "EventType",
    "KeeperState",
    "CreateMode",
    "Perm",
    "WatcherType",
    "AddWatchMode",
    "WATCH_XID",
    "PING_XID",
    "AUTH_XID",
    "SET_WATCHES_XID",
    "DEFAULT_MAX_FRAME",
    "MAX_TTL_MS",
    "CONTAINER_OWNER",
    "TTL_OWNER_MASK",
]

#: xid of watch notifications (server to client).
WATCH_XID = -1
#: xid of pings, in both directions; the server always answers with it.
PING_XID = -2
#: xid of auth packets; the reply echoes it.
AUTH_XID = -4
#: xid some clients use for SetWatches; the server only echoes whatever it is sent.
SET_WATCHES_XID = -8

#: The server's default jute.maxbuffer: the largest frame payload it accepts.
DEFAULT_MAX_FRAME = 0xFFFFF
#: Largest TTL the server accepts, in milliseconds (2**40 - 1).
MAX_TTL_MS = (1 << 40) - 1
#: ephemeralOwner value of container nodes.
CONTAINER_OWNER = -(1 << 63)
#: ephemeralOwner of a TTL node is this mask ORed with the TTL (as a signed 64-bit value).
TTL_OWNER_MASK = -(1 << 56)


class OpCode(IntEnum):
    NOTIFICATION = 0
    CREATE = 1
    DELETE = 2
    EXISTS = 3
    GET_DATA = 4
    SET_DATA = 5
    GET_ACL = 6
    SET_ACL = 7
    GET_CHILDREN = 8
    SYNC = 9
    PING = 11
    GET_CHILDREN2 = 12
    CHECK = 13
    MULTI = 14
    CREATE2 = 15
    RECONFIG = 16
    CHECK_WATCHES = 17
    REMOVE_WATCHES = 18
    CREATE_CONTAINER = 19
    DELETE_CONTAINER = 20
    CREATE_TTL = 21
    MULTI_READ = 22
    AUTH = 100
    SET_WATCHES = 101
    SASL = 102
    GET_EPHEMERALS = 103
    GET_ALL_CHILDREN_NUMBER = 104
    SET_WATCHES2 = 105
    ADD_WATCH = 106
    WHO_AM_I = 107
    CREATE_SESSION = -10
    CLOSE_SESSION = -11
    ERROR = -1


def _unknown_member(cls: type[IntEnum], value: object) -> IntEnum | None:
    """A stand-in member for a number this version does not know (named ``UNKNOWN_<n>``), kept per value
    so that it compares, hashes and prints like a member; it is not listed when iterating the enum."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    cache: dict[int, IntEnum] = cls.__dict__.get("_unknown_members_", {})
    member = cache.get(value)
    if member is None:
        member = int.__new__(cls, value)
        member._name_ = f"UNKNOWN_{value}"
        member._value_ = value
        cache[value] = member
        type.__setattr__(cls, "_unknown_members_", cache)
    return member


class EventType(IntEnum):
    """Watch event types.  A number the server sends that this version does not know becomes a stand-in
    member named ``UNKNOWN_<n>`` (``EventType(99).name == "UNKNOWN_99"``), never an error."""

    NONE = -1
    NODE_CREATED = 1
    NODE_DELETED = 2
    NODE_DATA_CHANGED = 3
    NODE_CHILDREN_CHANGED = 4
    DATA_WATCH_REMOVED = 5
    CHILD_WATCH_REMOVED = 6
    PERSISTENT_WATCH_REMOVED = 7

    @classmethod
    def _missing_(cls, value: object) -> EventType | None:
        return _unknown_member(cls, value)  # type: ignore[return-value]


class KeeperState(IntEnum):
    """Connection states carried by watch events; unknown numbers become ``UNKNOWN_<n>`` stand-ins."""

    UNKNOWN = -1
    DISCONNECTED = 0
    NO_SYNC_CONNECTED = 1
    SYNC_CONNECTED = 3
    AUTH_FAILED = 4
    CONNECTED_READ_ONLY = 5
    SASL_AUTHENTICATED = 6
    CLOSED = 7
    EXPIRED = -112

    @classmethod
    def _missing_(cls, value: object) -> KeeperState | None:
        return _unknown_member(cls, value)  # type: ignore[return-value]


class CreateMode(IntEnum):
    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3
    CONTAINER = 4
    PERSISTENT_WITH_TTL = 5
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6

    @property
    def is_ephemeral(self) -> bool:
        return self in (CreateMode.EPHEMERAL, CreateMode.EPHEMERAL_SEQUENTIAL)

    @property
    def is_sequential(self) -> bool:
        return self in (
            CreateMode.PERSISTENT_SEQUENTIAL,
            CreateMode.EPHEMERAL_SEQUENTIAL,
            CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL,
        )

    @property
    def is_ttl(self) -> bool:
        return self in (CreateMode.PERSISTENT_WITH_TTL, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL)


class Perm(IntFlag):
    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16
    ALL = 31


class WatcherType(IntEnum):
    """The ``type`` of checkWatches / removeWatches (3.8 knows 1-3)."""

    CHILDREN = 1
    DATA = 2
    ANY = 3


class AddWatchMode(IntEnum):
    PERSISTENT = 0
    PERSISTENT_RECURSIVE = 1
