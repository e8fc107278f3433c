"""Sub-operations for :meth:`Client.multi` (atomic writes) and :meth:`Client.multi_read`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..acl import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE
from ..constants import MAX_TTL_MS, CreateMode, OpCode, Perm
from ..errors import InvalidArgumentError
from ..protocol.records import ACL, Id

__all__ = ["Create", "Delete", "SetData", "Check", "GetData", "GetChildren", "WriteOp", "ReadOp", "create_op"]


def create_op(*, ephemeral: bool, sequential: bool, container: bool, ttl: int | None) -> tuple[int, CreateMode]:
    """The op code and create mode for a combination of create options; contradictions are rejected."""
    if container:
        if ephemeral or sequential or ttl is not None:
            raise InvalidArgumentError("a container node cannot also be ephemeral, sequential or have a TTL")
        return OpCode.CREATE_CONTAINER, CreateMode.CONTAINER
    if ttl is not None:
        if ephemeral:
            raise InvalidArgumentError("a TTL node cannot be ephemeral")
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 < ttl <= MAX_TTL_MS:
            raise InvalidArgumentError(f"ttl must be an int of milliseconds in 1..{MAX_TTL_MS}, not {ttl!r}")
        mode = CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL if sequential else CreateMode.PERSISTENT_WITH_TTL
        return OpCode.CREATE_TTL, mode
    if sequential:  # members, not CreateMode(bits): an enum call costs more than the rest of this
        return OpCode.CREATE, CreateMode.EPHEMERAL_SEQUENTIAL if ephemeral else CreateMode.PERSISTENT_SEQUENTIAL
    return OpCode.CREATE, CreateMode.EPHEMERAL if ephemeral else CreateMode.PERSISTENT


def check_acl(acl: Sequence[ACL] | None) -> tuple[ACL, ...]:
    """``acl`` as a tuple, each entry checked: ``ACL(perms, Id(scheme, id))`` with ``perms`` an int of
    :class:`~zkwire.constants.Perm` bits and ``scheme``, ``id`` strings."""
    if acl is None:
        return OPEN_ACL_UNSAFE
    if acl is OPEN_ACL_UNSAFE or acl is CREATOR_ALL_ACL or acl is READ_ACL_UNSAFE:
        return acl
    if isinstance(acl, str | bytes) or not isinstance(acl, Sequence):
        raise InvalidArgumentError(f"acl must be a sequence of zkwire.ACL, not {type(acl).__name__}")
    acl = tuple(acl)
    if not acl:
        raise InvalidArgumentError("acl must not be empty")
    for i, entry in enumerate(acl):
        if not isinstance(entry, ACL):
            raise InvalidArgumentError(f"acl[{i}] must be a zkwire.ACL, not {type(entry).__name__}")
        perms, ident = entry
        if isinstance(perms, bool) or not isinstance(perms, int) or not 0 <= perms <= Perm.ALL:
            raise InvalidArgumentError(
                f"acl[{i}].perms must be an int of Perm bits (0 to {int(Perm.ALL)}), not {perms!r}"
            )
        if not isinstance(ident, Id):
            raise InvalidArgumentError(f"acl[{i}].id must be a zkwire.Id, not {type(ident).__name__}")
        for name, value in (("scheme", ident.scheme), ("id", ident.id)):
            if not isinstance(value, str):
                raise InvalidArgumentError(f"acl[{i}].id.{name} must be a str, not {type(value).__name__}")
            try:
                value.encode()
            except UnicodeEncodeError:
                raise InvalidArgumentError(f"acl[{i}].id.{name} is not encodable as UTF-8") from None
    return acl


def check_data(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise InvalidArgumentError(f"data must be bytes, not {type(data).__name__}")


def check_version(version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not -1 <= version < (1 << 31):
        raise InvalidArgumentError(f"version must be an int from -1 to 2**31-1, not {version!r}")
    return version


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    acl: Sequence[ACL] | None = None
    ephemeral: bool = False
    sequential: bool = False
    container: bool = False
    ttl: int | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Check:
    """Succeeds only if the node's version equals ``version``."""

    path: str
    version: int


@dataclass(frozen=True, slots=True)
class GetData:
    path: str


@dataclass(frozen=True, slots=True)
class GetChildren:
    """Child names; with ``with_stat`` also the node's Stat (getChildren2).  ``sort=False`` leaves the
    names in the server's order (no sorting cost for a caller that does not need it)."""

    path: str
    with_stat: bool = False
    sort: bool = True


WriteOp = Create | Delete | SetData | Check
ReadOp = GetData | GetChildren
