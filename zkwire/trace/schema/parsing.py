"""Parsing and building with the schemas (interpreted or compiled), the payload helpers the tracer uses,
and plain values of parsed containers and of the fast codec's records, to compare the two."""

from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any

from construct import (
    ConstructError,
)

from ...constants import WATCH_XID
from ...errors import InvalidArgumentError, ProtocolError
from ...protocol.framing import REPLY_HEADER
from .primitives import _I32
from .records import ConnectRequest, ConnectResponse
from .tables import REQUEST_SCHEMAS, RESPONSE_SCHEMAS, ReplyPayload, RequestPayload

__all__ = [
    "compiled",
    "parse",
    "build",
    "parse_connect_request",
    "parse_connect_response",
    "parse_request",
    "parse_reply",
    "parse_event",
    "build_request",
    "to_plain",
    "record_to_plain",
]


# ------------------------------------------------------------------------------------------- helpers

_COMPILED: dict[int, tuple[Any, Any]] = {}
_PARSE_ERRORS = (ConstructError, struct.error, UnicodeError)
_BUILD_ERRORS = (ConstructError, struct.error, UnicodeError, KeyError, TypeError, ValueError, StopIteration)


def compiled(schema: Any) -> Any:
    """The ``.compile()`` d form of ``schema``, compiled once and cached."""
    entry = _COMPILED.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, schema.compile())
        _COMPILED[id(schema)] = entry
    return entry[1]


def _describe(e: BaseException) -> str:
    if isinstance(e, ConstructError):
        text = str(e.args[0]) if e.args else ""
        if e.path is not None:
            text = text.removeprefix(f"Error in path {e.path}\n")
            where = str(e.path)
            for prefix in ("(parsing)", "(building)", "(compiled)"):
                where = where.removeprefix(prefix)
            where = where.strip(" ->")
            if where:
                text = f"{where}: {text}"
    else:
        text = str(e)
    return " ".join(text.split()) or type(e).__name__


def parse(schema: Any, data: bytes | bytearray | memoryview, *, compiled: bool = False, **context: Any) -> Any:
    """Parse all of ``data`` with ``schema``; leftover bytes are an error, as is anything that does not fit."""
    raw = bytes(data)
    sc = _compiled_or(schema, compiled)
    stream = io.BytesIO(raw)
    try:
        value = sc.parse_stream(stream, **context)
    except _PARSE_ERRORS as e:
        raise ProtocolError(f"cannot parse: {_describe(e)}") from None
    extra = len(raw) - stream.tell()
    if extra:
        raise ProtocolError(f"{extra} unexpected trailing bytes")
    return value


def build(schema: Any, value: Any, *, compiled: bool = False, **context: Any) -> bytes:
    """Encode ``value`` (a Container or plain dict/list value) with ``schema``."""
    sc = _compiled_or(schema, compiled)
    try:
        out: bytes = sc.build(value, **context)
    except _BUILD_ERRORS as e:
        raise ProtocolError(f"cannot build: {_describe(e)}") from None
    return out


def _compiled_or(schema: Any, use_compiled: bool) -> Any:
    return compiled(schema) if use_compiled else schema


def parse_connect_request(payload: bytes | bytearray | memoryview, *, compiled: bool = False) -> Any:
    """The first client frame's payload."""
    return parse(ConnectRequest, payload, compiled=compiled)


def parse_connect_response(payload: bytes | bytearray | memoryview, *, compiled: bool = False) -> Any:
    """The first server frame's payload."""
    return parse(ConnectResponse, payload, compiled=compiled)


def parse_request(payload: bytes | bytearray | memoryview, *, compiled: bool = False) -> Any:
    """A later client frame's payload: ``Container(header=..., body=...)`` (body None for ops without one)."""
    if len(payload) >= 8:
        op = _I32.unpack_from(payload, 4)[0]
        if op not in REQUEST_SCHEMAS:
            raise ProtocolError(f"unknown op code {op}")
    return parse(RequestPayload, payload, compiled=compiled)


def parse_reply(op: int | None, payload: bytes | bytearray | memoryview, *, compiled: bool = False) -> Any:
    """A later server frame's payload answering ``op``: ``Container(header=..., body=...)``.

    The body is None for an error reply and for ops whose reply is a bare header; for xid -1 it is
    the WatcherEvent, whatever ``op`` is.
    """
    if len(payload) >= 16:
        xid, _, err = REPLY_HEADER.unpack_from(payload)
        if xid != WATCH_XID and err == 0 and op not in RESPONSE_SCHEMAS:
            raise ProtocolError(f"no reply format for op code {op}")
    return parse(ReplyPayload, payload, compiled=compiled, op=op)


def parse_event(payload: bytes | bytearray | memoryview, *, compiled: bool = False) -> Any:
    """A watch notification's payload (xid -1): ``Container(header=..., body=WatcherEvent)``."""
    value = parse_reply(None, payload, compiled=compiled)
    if value["header"]["xid"] != WATCH_XID:
        raise ProtocolError(f"xid {value['header']['xid']} is not a watch event")
    return value


def build_request(xid: int, op: int, body: Any = None, *, compiled: bool = False) -> bytes:
    """RequestHeader(xid, op) and ``body`` as one payload (no length prefix)."""
    if op not in REQUEST_SCHEMAS:
        raise ProtocolError(f"unknown op code {op}")
    return build(RequestPayload, {"header": {"xid": xid, "type": op}, "body": body}, compiled=compiled)


def to_plain(value: Any) -> Any:
    """Containers to dicts (without construct's ``_io`` and other ``_`` keys), lists to lists."""
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items() if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


class _NotARecordError(InvalidArgumentError, TypeError):
    """:func:`record_to_plain` was given something that is not a record (a TypeError, as it always was)."""


def record_to_plain(record: Any) -> Any:
    """A fast-codec record (NamedTuple or dataclass, nested) as the same plain shape :func:`to_plain` gives."""
    if record is None or isinstance(record, bool | str | bytes):
        return record
    if isinstance(record, int):
        return int(record)
    if isinstance(record, bytearray | memoryview):
        return bytes(record)
    if isinstance(record, tuple) and hasattr(record, "_asdict"):
        return {k: record_to_plain(v) for k, v in record._asdict().items()}
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: record_to_plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, list | tuple):
        return [record_to_plain(v) for v in record]
    raise _NotARecordError(f"cannot convert {type(record).__name__} to a plain value")
