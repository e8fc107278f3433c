"""Access records: the ACL of a node (getACL, setACL), authentication (auth, SASL, whoAmI) and the
ensemble's configuration (reconfig)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from ..jute import Reader, write_buffer, write_int, write_long, write_ustring
from .base import ACL, ClientInfo, PathOnly, Stat, StatOnly, read_acl, read_client_infos, write_vector

__all__ = [
    "GetACLRequest",
    "SetACLRequest",
    "GetACLResponse",
    "SetACLResponse",
    "AuthPacket",
    "GetSASLRequest",
    "SetSASLResponse",
    "WhoAmIResponse",
    "ReconfigRequest",
]


@dataclass(frozen=True, slots=True)
class GetACLRequest(PathOnly):
    """getACL (6)."""


@dataclass(frozen=True, slots=True)
class SetACLRequest:
    """setACL (7); ``version`` is compared with the node's aversion."""

    path: str | None
    acl: tuple[ACL, ...] | None
    version: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_vector(out, self.acl)
        write_int(out, self.version)

    @classmethod
    def read(cls, r: Reader) -> SetACLRequest:
        return cls(r.ustring(), read_acl(r), r.int32())


@dataclass(frozen=True, slots=True)
class GetACLResponse:
    """getACL (6)."""

    acl: tuple[ACL, ...] | None
    stat: Stat

    def write(self, out: bytearray) -> None:
        write_vector(out, self.acl)
        self.stat.write(out)

    @classmethod
    def read(cls, r: Reader) -> GetACLResponse:
        return cls(read_acl(r), Stat.read(r))


@dataclass(frozen=True, slots=True)
class SetACLResponse(StatOnly):
    """setACL (7)."""


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


@dataclass(frozen=True, slots=True)
class WhoAmIResponse:
    """whoAmI (107); 3.8 servers do not implement the op."""

    client_info: tuple[ClientInfo, ...] | None

    def write(self, out: bytearray) -> None:
        write_vector(out, self.client_info)

    @classmethod
    def read(cls, r: Reader) -> WhoAmIResponse:
        return cls(read_client_infos(r))


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
