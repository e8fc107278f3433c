"""Every jute record of the ZooKeeper 3.8 client protocol, with a fast encoder and decoder each.

Records are immutable.  ``write(out)`` appends the record's encoding to a bytearray; the class method
``read(reader)`` decodes one from a :class:`~zkwire.protocol.jute.Reader`.  Field order and types follow the
server's record definitions exactly; field names are the snake_case forms of the server's names.

The small records that users see all the time (:class:`Stat`, :class:`Id`, :class:`ACL`, the headers)
are ``NamedTuple`` s: they are built straight from ``struct.unpack_from`` results, which keeps decoding
a reply in the low microseconds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, Self

from .framing import REPLY_HEADER, REQUEST_HEADER
from .jute import (
    INT,
    Reader,
    write_bool,
    write_buffer,
    write_int,
    write_long,
    write_string_vector,
    write_ustring,
)

__all__ = [
    "Record",
    "Stat",
    "Id",
    "ACL",
    "ClientInfo",
    "RequestHeader",
    "ReplyHeader",
    "MultiHeader",
    "ConnectRequest",
    "ConnectResponse",
    "CreateRequest",
    "CreateTTLRequest",
    "DeleteRequest",
    "ExistsRequest",
    "GetDataRequest",
    "SetDataRequest",
    "GetACLRequest",
    "SetACLRequest",
    "GetChildrenRequest",
    "GetChildren2Request",
    "SyncRequest",
    "CheckVersionRequest",
    "ReconfigRequest",
    "CheckWatchesRequest",
    "RemoveWatchesRequest",
    "AuthPacket",
    "SetWatches",
    "SetWatches2",
    "GetSASLRequest",
    "GetEphemeralsRequest",
    "GetAllChildrenNumberRequest",
    "AddWatchRequest",
    "CreateResponse",
    "Create2Response",
    "ExistsResponse",
    "GetDataResponse",
    "SetDataResponse",
    "GetACLResponse",
    "SetACLResponse",
    "GetChildrenResponse",
    "GetChildren2Response",
    "SyncResponse",
    "SetSASLResponse",
    "GetEphemeralsResponse",
    "GetAllChildrenNumberResponse",
    "ErrorResponse",
    "WhoAmIResponse",
    "WatcherEvent",
    "STAT_STRUCT",
]


class Record(Protocol):
    """What every record offers."""

    def write(self, out: bytearray) -> None: ...

    @classmethod
    def read(cls, r: Reader) -> Self: ...


#: Stat: the 11 fields of a znode's metadata (68 bytes).
STAT_STRUCT = struct.Struct(">qqqqiiiqiiq")
_MULTI_HEADER = struct.Struct(">i?i")


class Stat(NamedTuple):
    """A znode's metadata (68 bytes on the wire)."""

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int

    def write(self, out: bytearray) -> None:
        try:
            out += STAT_STRUCT.pack(*self)
        except struct.error as e:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(f"Stat field out of range: {e}") from None

    @classmethod
    def read(cls, r: Reader) -> Stat:
        return cls._make(STAT_STRUCT.unpack_from(r.buf, r._need(68, "Stat")))


class Id(NamedTuple):
    """An identity: ``scheme`` (world, digest, ip, auth, x509, sasl, super) and ``id``."""

    scheme: str | None
    id: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.scheme)
        write_ustring(out, self.id)

    @classmethod
    def read(cls, r: Reader) -> Id:
        return cls(r.ustring(), r.ustring())


class ACL(NamedTuple):
    """One access-control entry: a permission mask (see :class:`~zkwire.constants.Perm`) and an :class:`Id`."""

    perms: int
    id: Id

    def write(self, out: bytearray) -> None:
        write_int(out, self.perms)
        self.id.write(out)

    @classmethod
    def read(cls, r: Reader) -> ACL:
        return cls(r.int32(), Id.read(r))


class ClientInfo(NamedTuple):
    auth_scheme: str | None
    user: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.auth_scheme)
        write_ustring(out, self.user)

    @classmethod
    def read(cls, r: Reader) -> ClientInfo:
        return cls(r.ustring(), r.ustring())


class RequestHeader(NamedTuple):
    xid: int
    type: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.xid)
        write_int(out, self.type)

    @classmethod
    def read(cls, r: Reader) -> RequestHeader:
        return cls._make(REQUEST_HEADER.unpack_from(r.buf, r._need(8, "RequestHeader")))


class ReplyHeader(NamedTuple):
    xid: int
    zxid: int
    err: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.xid)
        write_long(out, self.zxid)
        write_int(out, self.err)

    @classmethod
    def read(cls, r: Reader) -> ReplyHeader:
        return cls._make(REPLY_HEADER.unpack_from(r.buf, r._need(16, "ReplyHeader")))


class MultiHeader(NamedTuple):
    type: int
    done: bool
    err: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.type)
        write_bool(out, self.done)
        write_int(out, self.err)

    @classmethod
    def read(cls, r: Reader) -> MultiHeader:
        return cls._make(_MULTI_HEADER.unpack_from(r.buf, r._need(9, "MultiHeader")))


def _acl_vector_write(out: bytearray, acl: tuple[ACL, ...] | list[ACL] | None) -> None:
    if acl is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT.pack(len(acl))
    for entry in acl:
        entry.write(out)


def _acl_vector_read(r: Reader) -> list[ACL] | None:
    return r.vector(ACL.read)


# --------------------------------------------------------------------------------------------- connect


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    """First frame of a connection.  ``read_only=None`` leaves out the trailing read-only byte."""

    protocol_version: int
    last_zxid_seen: int
    timeout: int
    session_id: int
    passwd: bytes | None
    read_only: bool | None = False

    def write(self, out: bytearray) -> None:
        write_int(out, self.protocol_version)
        write_long(out, self.last_zxid_seen)
        write_int(out, self.timeout)
        write_long(out, self.session_id)
        write_buffer(out, self.passwd)
        if self.read_only is not None:
            write_bool(out, self.read_only)

    @classmethod
    def read(cls, r: Reader) -> ConnectRequest:
        proto, zxid, timeout, sid, pw = r.int32(), r.int64(), r.int32(), r.int64(), r.buffer()
        ro = r.boolean() if r.remaining > 0 else None
        return cls(proto, zxid, timeout, sid, pw, ro)


@dataclass(frozen=True, slots=True)
class ConnectResponse:
    """The server's answer to a ConnectRequest.  ``timeout <= 0`` means the session has expired."""

    protocol_version: int
    timeout: int
    session_id: int
    passwd: bytes | None
    read_only: bool | None = False

    @property
    def expired(self) -> bool:
        return self.timeout <= 0

    def write(self, out: bytearray) -> None:
        write_int(out, self.protocol_version)
        write_int(out, self.timeout)
        write_long(out, self.session_id)
        write_buffer(out, self.passwd)
        if self.read_only is not None:
            write_bool(out, self.read_only)

    @classmethod
    def read(cls, r: Reader) -> ConnectResponse:
        proto, timeout, sid, pw = r.int32(), r.int32(), r.int64(), r.buffer()
        ro = r.boolean() if r.remaining > 0 else None
        return cls(proto, timeout, sid, pw, ro)


# -------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """create (1), create2 (15) and createContainer (19)."""

    path: str | None
    data: bytes | None
    acl: tuple[ACL, ...] | None
    flags: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_buffer(out, self.data)
        _acl_vector_write(out, self.acl)
        write_int(out, self.flags)

    @classmethod
    def read(cls, r: Reader) -> CreateRequest:
        path, data, acl = r.ustring(), r.buffer(), _acl_vector_read(r)
        return cls(path, data, None if acl is None else tuple(acl), r.int32())


@dataclass(frozen=True, slots=True)
class CreateTTLRequest:
    """createTTL (21)."""

    path: str | None
    data: bytes | None
    acl: tuple[ACL, ...] | None
    flags: int
    ttl: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_buffer(out, self.data)
        _acl_vector_write(out, self.acl)
        write_int(out, self.flags)
        write_long(out, self.ttl)

    @classmethod
    def read(cls, r: Reader) -> CreateTTLRequest:
        path, data, acl = r.ustring(), r.buffer(), _acl_vector_read(r)
        return cls(path, data, None if acl is None else tuple(acl), r.int32(), r.int64())


@dataclass(frozen=True, slots=True)
class _PathVersion:
    path: str | None
    version: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_int(out, self.version)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring(), r.int32())


@dataclass(frozen=True, slots=True)
class DeleteRequest(_PathVersion):
    """delete (2)."""


@dataclass(frozen=True, slots=True)
class CheckVersionRequest(_PathVersion):
    """check (13); meaningful inside multi."""


@dataclass(frozen=True, slots=True)
class _PathWatch:
    path: str | None
    watch: bool

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_bool(out, self.watch)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring(), r.boolean())


@dataclass(frozen=True, slots=True)
class ExistsRequest(_PathWatch):
    """exists (3)."""


@dataclass(frozen=True, slots=True)
class GetDataRequest(_PathWatch):
    """getData (4)."""


@dataclass(frozen=True, slots=True)
class GetChildrenRequest(_PathWatch):
    """getChildren (8)."""


@dataclass(frozen=True, slots=True)
class GetChildren2Request(_PathWatch):
    """getChildren2 (12)."""


@dataclass(frozen=True, slots=True)
class _PathOnly:
    path: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring())


@dataclass(frozen=True, slots=True)
class GetACLRequest(_PathOnly):
    """getACL (6)."""


@dataclass(frozen=True, slots=True)
class SyncRequest(_PathOnly):
    """sync (9)."""


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberRequest(_PathOnly):
    """getAllChildrenNumber (104)."""


@dataclass(frozen=True, slots=True)
class GetEphemeralsRequest:
    """getEphemerals (103); an empty or "/" prefix lists all of the session's ephemerals."""

    prefix_path: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.prefix_path)

    @classmethod
    def read(cls, r: Reader) -> GetEphemeralsRequest:
        return cls(r.ustring())


@dataclass(frozen=True, slots=True)
class SetDataRequest:
    """setData (5)."""

    path: str | None
    data: bytes | None
    version: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_buffer(out, self.data)
        write_int(out, self.version)

    @classmethod
    def read(cls, r: Reader) -> SetDataRequest:
        return cls(r.ustring(), r.buffer(), r.int32())


@dataclass(frozen=True, slots=True)
class SetACLRequest:
    """setACL (7); ``version`` is compared with the node's aversion."""

    path: str | None
    acl: tuple[ACL, ...] | None
    version: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        _acl_vector_write(out, self.acl)
        write_int(out, self.version)

    @classmethod
    def read(cls, r: Reader) -> SetACLRequest:
        path, acl = r.ustring(), _acl_vector_read(r)
        return cls(path, None if acl is None else tuple(acl), r.int32())


@dataclass(frozen=True, slots=True)
class ReconfigRequest:
    """reconfig (16)."""

    joining_servers: str | None
    leaving_servers: str | None
    new_members: str | None
    cur_config_id: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.joining_servers)
        write_ustring(out, self.leaving_servers)
        write_ustring(out, self.new_members)
        write_long(out, self.cur_config_id)

    @classmethod
    def read(cls, r: Reader) -> ReconfigRequest:
        return cls(r.ustring(), r.ustring(), r.ustring(), r.int64())


@dataclass(frozen=True, slots=True)
class _PathType:
    path: str | None
    type: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_int(out, self.type)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring(), r.int32())


@dataclass(frozen=True, slots=True)
class CheckWatchesRequest(_PathType):
    """checkWatches (17); ``type`` is a :class:`~zkwire.constants.WatcherType`."""


@dataclass(frozen=True, slots=True)
class RemoveWatchesRequest(_PathType):
    """removeWatches (18); ``type`` is a :class:`~zkwire.constants.WatcherType`."""


@dataclass(frozen=True, slots=True)
class AddWatchRequest:
    """addWatch (106); ``mode`` is an :class:`~zkwire.constants.AddWatchMode`."""

    path: str | None
    mode: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_int(out, self.mode)

    @classmethod
    def read(cls, r: Reader) -> AddWatchRequest:
        return cls(r.ustring(), r.int32())


@dataclass(frozen=True, slots=True)
class AuthPacket:
    """auth (100), sent with xid -4.  ``auth`` is secret: it is never shown by ``repr``."""

    type: int
    scheme: str | None
    auth: bytes | None

    def __repr__(self) -> str:
        shown = None if self.auth is None else f"<{len(self.auth)} bytes hidden>"
        return f"AuthPacket(type={self.type}, scheme={self.scheme!r}, auth={shown})"

    def write(self, out: bytearray) -> None:
        write_int(out, self.type)
        write_ustring(out, self.scheme)
        write_buffer(out, self.auth)

    @classmethod
    def read(cls, r: Reader) -> AuthPacket:
        return cls(r.int32(), r.ustring(), r.buffer())


def _opt_tuple(v: list[str | None] | None) -> tuple[str | None, ...] | None:
    return None if v is None else tuple(v)


@dataclass(frozen=True, slots=True)
class SetWatches:
    """setWatches (101): re-arm one-shot watches after a reconnect."""

    relative_zxid: int
    data_watches: tuple[str | None, ...] | None
    exist_watches: tuple[str | None, ...] | None
    child_watches: tuple[str | None, ...] | None

    def write(self, out: bytearray) -> None:
        write_long(out, self.relative_zxid)
        write_string_vector(out, self.data_watches)
        write_string_vector(out, self.exist_watches)
        write_string_vector(out, self.child_watches)

    @classmethod
    def read(cls, r: Reader) -> SetWatches:
        z = r.int64()
        return cls(z, _opt_tuple(r.string_vector()), _opt_tuple(r.string_vector()), _opt_tuple(r.string_vector()))


@dataclass(frozen=True, slots=True)
class SetWatches2:
    """setWatches2 (105): like setWatches, plus persistent and persistent-recursive watches."""

    relative_zxid: int
    data_watches: tuple[str | None, ...] | None
    exist_watches: tuple[str | None, ...] | None
    child_watches: tuple[str | None, ...] | None
    persistent_watches: tuple[str | None, ...] | None
    persistent_recursive_watches: tuple[str | None, ...] | None

    def write(self, out: bytearray) -> None:
        write_long(out, self.relative_zxid)
        write_string_vector(out, self.data_watches)
        write_string_vector(out, self.exist_watches)
        write_string_vector(out, self.child_watches)
        write_string_vector(out, self.persistent_watches)
        write_string_vector(out, self.persistent_recursive_watches)

    @classmethod
    def read(cls, r: Reader) -> SetWatches2:
        z = r.int64()
        vs = [_opt_tuple(r.string_vector()) for _ in range(5)]
        return cls(z, *vs)


@dataclass(frozen=True, slots=True)
class _Token:
    token: bytes | None

    def write(self, out: bytearray) -> None:
        write_buffer(out, self.token)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.buffer())


@dataclass(frozen=True, slots=True)
class GetSASLRequest(_Token):
    """sasl (102) request."""


@dataclass(frozen=True, slots=True)
class SetSASLResponse(_Token):
    """sasl (102) response."""


# ------------------------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class CreateResponse:
    """create (1): the created path (with its sequence suffix, if any)."""

    path: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> CreateResponse:
        return cls(r.ustring())


@dataclass(frozen=True, slots=True)
class SyncResponse:
    """sync (9): echoes the path."""

    path: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> SyncResponse:
        return cls(r.ustring())


@dataclass(frozen=True, slots=True)
class Create2Response:
    """create2 (15), createContainer (19), createTTL (21): path and Stat."""

    path: str | None
    stat: Stat

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> Create2Response:
        return cls(r.ustring(), Stat.read(r))


@dataclass(frozen=True, slots=True)
class _StatOnly:
    stat: Stat

    def write(self, out: bytearray) -> None:
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(Stat.read(r))


@dataclass(frozen=True, slots=True)
class ExistsResponse(_StatOnly):
    """exists (3)."""


@dataclass(frozen=True, slots=True)
class SetDataResponse(_StatOnly):
    """setData (5)."""


@dataclass(frozen=True, slots=True)
class SetACLResponse(_StatOnly):
    """setACL (7)."""


@dataclass(frozen=True, slots=True)
class GetDataResponse:
    """getData (4) and reconfig (16).  ``data`` is None for a node created with null data."""

    data: bytes | None
    stat: Stat

    def write(self, out: bytearray) -> None:
        write_buffer(out, self.data)
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> GetDataResponse:
        return cls(r.buffer(), Stat.read(r))


@dataclass(frozen=True, slots=True)
class GetACLResponse:
    """getACL (6)."""

    acl: tuple[ACL, ...] | None
    stat: Stat

    def write(self, out: bytearray) -> None:
        _acl_vector_write(out, self.acl)
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> GetACLResponse:
        acl = _acl_vector_read(r)
        return cls(None if acl is None else tuple(acl), Stat.read(r))


@dataclass(frozen=True, slots=True, eq=False)
class GetChildrenResponse:
    """getChildren (8): child names, in no defined order.

    A decoded reply keeps the list the decoder built (100,000 names are not copied into a tuple);
    records built by hand may hold any sequence.  Records compare equal when their names do, whatever
    the sequence type.
    """

    children: Sequence[str | None] | None

    def write(self, out: bytearray) -> None:
        write_string_vector(out, self.children)

    @classmethod
    def read(cls, r: Reader) -> GetChildrenResponse:
        return cls(r.string_vector())

    def __eq__(self, other: object) -> bool:
        if type(other) is not GetChildrenResponse:
            return NotImplemented
        return _same_names(self.children, other.children)

    def __hash__(self) -> int:
        return hash(_names_key(self.children))


@dataclass(frozen=True, slots=True, eq=False)
class GetChildren2Response:
    """getChildren2 (12): child names and the parent's Stat (names kept as :class:`GetChildrenResponse`
    keeps them)."""

    children: Sequence[str | None] | None
    stat: Stat

    def write(self, out: bytearray) -> None:
        write_string_vector(out, self.children)
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> GetChildren2Response:
        return cls(r.string_vector(), Stat.read(r))

    def __eq__(self, other: object) -> bool:
        if type(other) is not GetChildren2Response:
            return NotImplemented
        return self.stat == other.stat and _same_names(self.children, other.children)

    def __hash__(self) -> int:
        return hash((_names_key(self.children), self.stat))


def _names_key(names: Sequence[str | None] | None) -> tuple[str | None, ...] | None:
    return None if names is None else tuple(names)


def _same_names(a: Sequence[str | None] | None, b: Sequence[str | None] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and tuple(a) == tuple(b)


@dataclass(frozen=True, slots=True)
class GetEphemeralsResponse:
    """getEphemerals (103)."""

    ephemerals: tuple[str | None, ...] | None

    def write(self, out: bytearray) -> None:
        write_string_vector(out, self.ephemerals)

    @classmethod
    def read(cls, r: Reader) -> GetEphemeralsResponse:
        return cls(_opt_tuple(r.string_vector()))


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberResponse:
    """getAllChildrenNumber (104): the number of all descendants."""

    total_number: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.total_number)

    @classmethod
    def read(cls, r: Reader) -> GetAllChildrenNumberResponse:
        return cls(r.int32())


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A bare error code: addWatch's reply body (always 0) and a failed op's result inside multi."""

    err: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.err)

    @classmethod
    def read(cls, r: Reader) -> ErrorResponse:
        return cls(r.int32())


@dataclass(frozen=True, slots=True)
class WhoAmIResponse:
    """whoAmI (107); 3.8 servers do not implement the op."""

    client_info: tuple[ClientInfo, ...] | None

    def write(self, out: bytearray) -> None:
        if self.client_info is None:
            out += b"\xff\xff\xff\xff"
            return
        out += INT.pack(len(self.client_info))
        for ci in self.client_info:
            ci.write(out)

    @classmethod
    def read(cls, r: Reader) -> WhoAmIResponse:
        v = r.vector(ClientInfo.read)
        return cls(None if v is None else tuple(v))


@dataclass(frozen=True, slots=True)
class WatcherEvent:
    """A watch notification's body (sent with xid -1).  ``path`` is the server's absolute path."""

    type: int
    state: int
    path: str | None

    def write(self, out: bytearray) -> None:
        write_int(out, self.type)
        write_int(out, self.state)
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> WatcherEvent:
        return cls(r.int32(), r.int32(), r.ustring())
