"""Session records: the ConnectRequest a connection opens with and the server's ConnectResponse."""

from __future__ import annotations

from dataclasses import dataclass

from ..jute import Reader, write_bool, write_buffer, write_int, write_long

__all__ = ["ConnectRequest", "ConnectResponse"]


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
