"""Node records: create, delete, check, exists, getData, setData, getChildren, sync, the ephemerals
and descendant counts -- the requests and their replies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from ..jute import Reader, write_bool, write_buffer, write_int, write_long, write_string_vector, write_ustring
from .base import ACL, PathOnly, Stat, StatOnly, opt_tuple, read_acl, write_vector

__all__ = [
    "CreateRequest",
    "CreateTTLRequest",
    "DeleteRequest",
    "CheckVersionRequest",
    "ExistsRequest",
    "GetDataRequest",
    "GetChildrenRequest",
    "GetChildren2Request",
    "SetDataRequest",
    "SyncRequest",
    "GetEphemeralsRequest",
    "GetAllChildrenNumberRequest",
    "CreateResponse",
    "Create2Response",
    "ExistsResponse",
    "GetDataResponse",
    "SetDataResponse",
    "GetChildrenResponse",
    "GetChildren2Response",
    "SyncResponse",
    "GetEphemeralsResponse",
    "GetAllChildrenNumberResponse",
]

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
        write_vector(out, self.acl)
        write_int(out, self.flags)

    @classmethod
    def read(cls, r: Reader) -> CreateRequest:
        return cls(r.ustring(), r.buffer(), read_acl(r), r.int32())


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
        write_vector(out, self.acl)
        write_int(out, self.flags)
        write_long(out, self.ttl)

    @classmethod
    def read(cls, r: Reader) -> CreateTTLRequest:
        return cls(r.ustring(), r.buffer(), read_acl(r), r.int32(), r.int64())


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
class SyncRequest(PathOnly):
    """sync (9)."""


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberRequest(PathOnly):
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


# ------------------------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class CreateResponse(PathOnly):
    """create (1): the created path (with its sequence suffix, if any)."""


@dataclass(frozen=True, slots=True)
class SyncResponse(PathOnly):
    """sync (9): echoes the path."""


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
class ExistsResponse(StatOnly):
    """exists (3)."""


@dataclass(frozen=True, slots=True)
class SetDataResponse(StatOnly):
    """setData (5)."""


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
        return cls(opt_tuple(r.string_vector()))


@dataclass(frozen=True, slots=True)
class GetAllChildrenNumberResponse:
    """getAllChildrenNumber (104): the number of all descendants."""

    total_number: int

    def write(self, out: bytearray) -> None:
        write_int(out, self.total_number)

    @classmethod
    def read(cls, r: Reader) -> GetAllChildrenNumberResponse:
        return cls(r.int32())
