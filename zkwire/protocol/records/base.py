"""The records every family is built from: the :class:`Record` protocol, :class:`Stat`, :class:`Id`,
:class:`ACL`, :class:`ClientInfo`, the headers, the bare :class:`ErrorResponse`, and the layouts and
vector helpers that records of several families share.

The small records that users see all the time are ``NamedTuple`` s: they are built straight from
``struct.unpack_from`` results, which keeps decoding a reply in the low microseconds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, Self, TypeVar

from ...errors import ProtocolError
from ..framing import REPLY_HEADER, REQUEST_HEADER
from ..jute import INT, Reader, write_bool, write_int, write_long, write_ustring

__all__ = [
    "Record",
    "STAT_STRUCT",
    "Stat",
    "Id",
    "ACL",
    "ClientInfo",
    "RequestHeader",
    "ReplyHeader",
    "MultiHeader",
    "ErrorResponse",
    "PathOnly",
    "StatOnly",
    "write_vector",
    "read_tuple",
    "read_acl",
    "read_client_infos",
    "opt_tuple",
    "MULTI_HEADER",
]


class Record(Protocol):
    """What every record offers."""

    def write(self, out: bytearray) -> None: ...

    @classmethod
    def read(cls, r: Reader) -> Self: ...


#: Stat: the 11 fields of a znode's metadata (68 bytes).
STAT_STRUCT = struct.Struct(">qqqqiiiqiiq")
MULTI_HEADER = struct.Struct(">i?i")


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
        """Append the encoding to ``out``."""
        try:
            out += STAT_STRUCT.pack(*self)
        except struct.error as e:
            from ...errors import InvalidArgumentError

            raise InvalidArgumentError(f"Stat field out of range: {e}") from None

    @classmethod
    def read(cls, r: Reader) -> Stat:
        return cls._make(STAT_STRUCT.unpack_from(r.buf, r._need(68, "Stat")))


class Id(NamedTuple):
    """An identity: ``scheme`` (world, digest, ip, auth, x509, sasl, super) and ``id``."""

    scheme: str | None
    id: str | None

    def write(self, out: bytearray) -> None:
        """Append the encoding to ``out``."""
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
        """Append the encoding to ``out``."""
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
        return cls._make(MULTI_HEADER.unpack_from(r.buf, r._need(9, "MultiHeader")))


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A bare error code: addWatch's reply body (always 0) and a failed op's result inside multi."""

    err: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.err)

    @classmethod
    def read(cls, r: Reader) -> ErrorResponse:
        return cls(r.int32())


# ---------------------------------------------------------------------------------- shared layouts


@dataclass(frozen=True, slots=True)
class PathOnly:
    """The layout of a record that is one path."""

    path: str | None

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring())


@dataclass(frozen=True, slots=True)
class StatOnly:
    """The layout of a record that is one Stat."""

    stat: Stat

    def write(self, out: bytearray) -> None:
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(Stat.read(r))


# ----------------------------------------------------------------------------------------- vectors

_R = TypeVar("_R")


def write_vector(out: bytearray, items: Sequence[Record] | None) -> None:
    """A vector of records: its count (-1 for None), then each record."""
    if items is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT.pack(len(items))
    for item in items:
        item.write(out)


def read_tuple(r: Reader, read: Callable[[Reader], _R]) -> tuple[_R, ...] | None:
    """A vector of records as a tuple (None for a count of -1)."""
    items = r.vector(read)
    return None if items is None else tuple(items)


_new_tuple = tuple.__new__


def read_acl(r: Reader) -> tuple[ACL, ...] | None:
    """A vector of :class:`ACL` entries."""
    n = _vector_count(r)
    if n is None:
        return None
    return tuple(_new_tuple(ACL, (perms, _new_tuple(Id, ids))) for perms, *ids in r.string_pairs(n, lead_int=True))


def read_client_infos(r: Reader) -> tuple[ClientInfo, ...] | None:
    """A vector of :class:`ClientInfo` entries."""
    n = _vector_count(r)
    return None if n is None else tuple(_new_tuple(ClientInfo, pair) for pair in r.string_pairs(n))


def _vector_count(r: Reader) -> int | None:
    """A vector's count (None for -1, a null vector)."""
    n = r.int32()
    if n == -1:
        return None
    if n < 0:
        raise ProtocolError(f"negative length {n} for vector")
    return n


def opt_tuple(v: list[str | None] | None) -> tuple[str | None, ...] | None:
    """A string vector as a tuple (None stays None)."""
    return None if v is None else tuple(v)
