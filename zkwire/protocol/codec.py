"""Requests to bytes and bytes to replies: the hot-path encode/decode functions.

Everything here is pure: no I/O, no clock.  The session core calls :func:`encode_request` for each
outgoing request and :func:`decode_reply` for each incoming frame; the tracer and tests use
:func:`decode_request` and :func:`decode_connect_request` to read the client's side of a stream.
Which record each op carries is looked up in :mod:`zkwire.protocol.optable` (its tables and
:func:`op_name` are re-exported here).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..constants import DEFAULT_MAX_FRAME, PING_XID, WATCH_XID
from ..errors import DataTooLargeError, InvalidArgumentError, ProtocolError
from .framing import LENGTH as _LEN
from .framing import REPLY_HEADER as _REPLY_HEADER
from .framing import REQUEST_FRAME_HEAD as _FRAME_HEAD
from .jute import Reader
from .optable import REQUEST_RECORDS, RESPONSE_RECORDS, op_name
from .records import STAT_STRUCT as _STAT
from .records import (
    ConnectRequest,
    ConnectResponse,
    GetDataResponse,
    Record,
    ReplyHeader,
    RequestHeader,
    Stat,
    WatcherEvent,
)

__all__ = [
    "REQUEST_RECORDS",
    "WATCH_XID",
    "PING_XID",
    "RESPONSE_RECORDS",
    "encode_request",
    "encode_request_into",
    "encode_connect_request",
    "decode_connect_request",
    "decode_connect_response",
    "decode_request",
    "decode_reply_header",
    "decode_reply",
    "decode_response_body",
    "decode_watcher_event",
    "op_name",
]

#: The place of a frame's length prefix and RequestHeader, filled in once the record is written.
_NO_HEAD = bytes(_FRAME_HEAD.size)


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    """What sets field ``name`` of a slots record: its slot's descriptor, which a frozen dataclass's
    ``__setattr__`` does not guard (for building a record at its generated ``__init__``'s place)."""
    setter: Callable[[object, object], None] = getattr(cls, name).__set__
    return setter


_new_object = object.__new__
_set_get_data_data = _slot_setter(GetDataResponse, "data")
_set_get_data_stat = _slot_setter(GetDataResponse, "stat")
#: Builds a Stat from its 11 unpacked fields without ``Stat._make``'s extra call (the struct always
#: yields 11).
_new_tuple = tuple.__new__


def encode_request(xid: int, op: int, request: Record | None = None, max_frame: int = DEFAULT_MAX_FRAME) -> bytearray:
    """One complete frame: length, RequestHeader(xid, op), then the request record (if any)."""
    out = bytearray()
    encode_request_into(out, xid, op, request, max_frame)
    return out


def encode_request_into(
    out: bytearray, xid: int, op: int, request: Record | None = None, max_frame: int = DEFAULT_MAX_FRAME
) -> None:
    """Append :func:`encode_request`'s frame to ``out`` (a session's outgoing buffer: no copy).  A request
    that cannot be encoded raises and leaves ``out`` as it was."""
    start = len(out)
    out += _NO_HEAD
    try:
        if request is not None:
            request.write(out)
        n = len(out) - start - 4
        if n > max_frame:
            raise DataTooLargeError(f"request of {n} bytes exceeds the maximum frame size of {max_frame}")
        try:
            _FRAME_HEAD.pack_into(out, start, n, xid, op)
        except struct.error:  # packed last: the range check costs nothing in the common case
            raise InvalidArgumentError(f"xid {xid} or op {op} out of int32 range") from None
    except BaseException:
        del out[start:]
        raise


def encode_connect_request(request: ConnectRequest, max_frame: int = DEFAULT_MAX_FRAME) -> bytearray:
    out = bytearray(4)
    request.write(out)
    n = len(out) - 4
    if n > max_frame:
        raise DataTooLargeError(f"connect request of {n} bytes exceeds {max_frame}")
    _LEN.pack_into(out, 0, n)
    return out


def decode_connect_request(payload: bytes) -> ConnectRequest:
    r = Reader(payload)
    req = ConnectRequest.read(r)
    r.expect_end("ConnectRequest")
    return req


def decode_connect_response(payload: bytes) -> ConnectResponse:
    r = Reader(payload)
    resp = ConnectResponse.read(r)
    r.expect_end("ConnectResponse")
    return resp


def decode_request(payload: bytes) -> tuple[RequestHeader, Record | None]:
    """A client frame (after the handshake): its header and decoded record.

    Unknown op codes raise :class:`ProtocolError`; the header alone can still be read with
    ``RequestHeader.read(Reader(payload))``.
    """
    r = Reader(payload)
    header = RequestHeader.read(r)
    if header.type not in REQUEST_RECORDS:
        raise ProtocolError(f"unknown op code {header.type}")
    cls = REQUEST_RECORDS[header.type]
    record = None if cls is None else cls.read(r)
    r.expect_end(f"{op_name(header.type)} request")
    return header, record


def decode_reply_header(payload: bytes) -> ReplyHeader:
    if len(payload) < 16:
        raise ProtocolError(f"reply of {len(payload)} bytes is shorter than a ReplyHeader")
    return ReplyHeader._make(_REPLY_HEADER.unpack_from(payload, 0))


def decode_response_body(op: int, payload: bytes, offset: int = 16) -> Record | None:
    """The body of a successful reply to ``op``, starting at ``offset``.

    An error reply (err != 0) has no body; callers should not call this for one.
    """
    try:
        cls = RESPONSE_RECORDS[op]
    except KeyError:
        raise ProtocolError(f"no reply format for op code {op}") from None
    if cls is None:
        if len(payload) != offset:
            raise ProtocolError(f"{len(payload) - offset} unexpected bytes in {op_name(op)} reply")
        return None
    if cls is GetDataResponse:
        return _decode_get_data(payload, offset)
    r = Reader(payload, offset)
    record = cls.read(r)
    r.expect_end(f"{op_name(op)} reply")
    return record


def _decode_get_data(payload: bytes, offset: int) -> GetDataResponse:
    # Hot path: getData replies dominate read-heavy traffic.
    end = len(payload)
    if end - offset < 72:
        raise ProtocolError("truncated getData reply")
    n = _LEN.unpack_from(payload, offset)[0]
    if n == -1:
        data = None
        p = offset + 4
    elif n < 0:
        raise ProtocolError(f"negative length {n} for buffer")
    else:
        p = offset + 4 + n
        data = payload[offset + 4 : p]
    if p + 68 != end:
        raise ProtocolError(f"getData reply of {end - offset} bytes does not match data length {n}")
    # GetDataResponse(data, stat), built as its generated __init__ would but setting the two slots
    # directly: a frozen dataclass's __init__ goes through object.__setattr__ per field, which costs
    # half again as much (one is built per getData reply).
    response = _new_object(GetDataResponse)
    _set_get_data_data(response, data)
    _set_get_data_stat(response, _new_tuple(Stat, _STAT.unpack_from(payload, p)))
    return response


def decode_reply(op: int, payload: bytes) -> tuple[ReplyHeader, Record | None]:
    """A server frame answering ``op``: header, and body when err == 0 (else None)."""
    header = decode_reply_header(payload)
    if header.err != 0:
        if len(payload) != 16:
            raise ProtocolError(f"error reply carries {len(payload) - 16} unexpected body bytes")
        return header, None
    return header, decode_response_body(op, payload)


def decode_watcher_event(payload: bytes, offset: int = 16) -> WatcherEvent:
    r = Reader(payload, offset)
    event = WatcherEvent.read(r)
    r.expect_end("WatcherEvent")
    return event
