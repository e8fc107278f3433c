"""A declarative description of the ZooKeeper 3.8 client protocol, written with ``construct``.

This is a second, independent implementation of every jute record that :mod:`zkwire.protocol.records` and
:mod:`zkwire.protocol.multi` implement by hand.  It is meant to be read next to the protocol reference, to
check the fast codec against (the differential tests build and parse every record both ways), and
to decode captured traffic in the tracer.  It is *not* on the hot path and never calls the fast codec.
Which record each op carries is not repeated here: :data:`REQUEST_SCHEMAS` and the other op tables are
derived from :mod:`zkwire.protocol.optable`, each record class standing for the schema of its name.

Jute's null convention does not fit construct's own length-prefixed types: a length or count of -1
means *null* (distinct from empty), and ``Prefixed``/``PascalString``/``PrefixedArray`` either raise
or misread it.  So the four primitives that need it are small constructs of their own:

* :data:`ustring`: int32 length, then UTF-8; -1 is None, any other negative length is an error.
  Java servers encode each UTF-16 unit separately, so surrogate pairs encoded as two 3-byte
  sequences are accepted and joined.
* :data:`buffer`: int32 length, then raw bytes; -1 is None.
* :class:`Vector` ``(subcon)``: int32 count, then the items; -1 is None.
* :data:`boolean`: one byte, any non-zero value is true; running out of input is an error.

They, and the multi adapters, emit their own code for ``.compile()``, so compiled schemas are
compiled all the way down.  Parsed values are construct ``Container`` s; :func:`to_plain` turns
them into plain dicts and lists, and :func:`record_to_plain` does the same for the fast codec's
records, so the two can be compared.

Every public helper raises :class:`~zkwire.errors.ProtocolError` when the bytes (or, for the
builders, the values) do not fit the schema.
"""

from __future__ import annotations

import dataclasses
import io
import re
import struct
from collections.abc import Mapping
from typing import Any

from construct import (
    Adapter,
    Construct,
    ConstructError,
    Container,
    IfThenElse,
    Int32sb,
    Int64sb,
    ListContainer,
    Pass,
    RepeatUntil,
    SizeofError,
    StreamError,
    StringError,
    Struct,
    Subconstruct,
    Switch,
    obj_,
    this,
)

from ..constants import WATCH_XID
from ..errors import InvalidArgumentError, ProtocolError
from ..protocol.framing import REPLY_HEADER
from ..protocol.optable import MULTI_REQUEST_RECORDS, MULTI_RESULT_RECORDS, REQUEST_RECORDS, RESPONSE_RECORDS

__all__ = [
    # primitives
    "JuteError",
    "ustring",
    "buffer",
    "boolean",
    "int32",
    "int64",
    "Vector",
    "TrailingOptional",
    "Reject",
    # shared records and headers
    "Stat",
    "Id",
    "ACL",
    "ClientInfo",
    "RequestHeader",
    "ReplyHeader",
    "MultiHeader",
    "ConnectRequest",
    "ConnectResponse",
    # requests
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
    # responses
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
    # multi
    "MultiRequest",
    "MultiResponse",
    "MULTI_REQUEST_SCHEMAS",
    "MULTI_RESULT_SCHEMAS",
    # whole payloads and tables
    "RequestPayload",
    "ReplyPayload",
    "REQUEST_SCHEMAS",
    "RESPONSE_SCHEMAS",
    "RECORD_SCHEMAS",
    # helpers
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


# ------------------------------------------------------------------------------------------ primitives


class JuteError(ConstructError):  # type: ignore[misc]
    """A jute rule was broken: a negative length other than -1, or a string that is not UTF-8."""


_I32 = struct.Struct(">i")
_NULL = _I32.pack(-1)
_PAIR = re.compile("([\ud800-\udbff])([\udc00-\udfff])")
_LONE = re.compile("[\ud800-\udfff]")


def _read(stream: Any, n: int, path: str) -> bytes:
    data: bytes = stream.read(n)
    if len(data) != n:
        raise StreamError(f"need {n} bytes, only {len(data)} left", path=path)
    return data


def _read_length(stream: Any, what: str, path: str) -> int:
    n: int = _I32.unpack(_read(stream, 4, path))[0]
    if n < -1:
        raise JuteError(f"negative length {n} for {what}", path=path)
    return n


def _write_length(stream: Any, n: int) -> None:
    stream.write(_I32.pack(n))


def _join_pair(m: re.Match[str]) -> str:
    hi, lo = ord(m.group(1)), ord(m.group(2))
    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))


def _utf8(raw: bytes, path: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    # A Java writer encodes a supplementary character as two surrogates of 3 bytes each.
    try:
        text = _PAIR.sub(_join_pair, raw.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError as e:
        raise JuteError(f"ustring is not UTF-8: {e}", path=path) from None
    if _LONE.search(text):
        raise JuteError("ustring holds an unpaired surrogate", path=path)
    return text


def _parse_ustring(stream: Any, path: str) -> str | None:
    n = _read_length(stream, "ustring", path)
    return None if n == -1 else _utf8(_read(stream, n, path), path)


def _build_ustring(obj: Any, stream: Any, path: str) -> Any:
    if obj is None:
        stream.write(_NULL)
        return obj
    if not isinstance(obj, str):
        raise StringError(f"ustring needs a str or None, not {type(obj).__name__}", path=path)
    try:
        raw = obj.encode("utf-8")
    except UnicodeEncodeError as e:
        raise StringError(f"string cannot be encoded as UTF-8: {e}", path=path) from None
    _write_length(stream, len(raw))
    stream.write(raw)
    return obj


def _parse_buffer(stream: Any, path: str) -> bytes | None:
    n = _read_length(stream, "buffer", path)
    return None if n == -1 else _read(stream, n, path)


def _build_buffer(obj: Any, stream: Any, path: str) -> Any:
    if obj is None:
        stream.write(_NULL)
        return obj
    if not isinstance(obj, bytes | bytearray | memoryview):
        raise StringError(f"buffer needs bytes or None, not {type(obj).__name__}", path=path)
    raw = bytes(obj)
    _write_length(stream, len(raw))
    stream.write(raw)
    return obj


def _parse_bool(stream: Any, path: str) -> bool:
    return _read(stream, 1, path) != b"\x00"


def _build_bool(obj: Any, stream: Any, path: str) -> Any:
    stream.write(b"\x01" if obj else b"\x00")
    return obj


def _at_end(stream: Any) -> bool:
    pos = stream.tell()
    more = stream.read(1)
    stream.seek(pos)
    return not more


def _import_helpers(code: Any) -> None:
    """Make the helpers above callable from code generated by ``.compile()``."""
    code.append(
        f"from {__name__} import _parse_ustring, _build_ustring, _parse_buffer, _build_buffer, "
        "_parse_bool, _build_bool, _read_length, _write_length, _at_end"
    )


class _UString(Construct):  # type: ignore[misc]
    """jute ``ustring``: int32 byte length (-1 = null), then UTF-8."""

    def _parse(self, stream: Any, context: Any, path: str) -> str | None:
        return _parse_ustring(stream, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return _build_ustring(obj, stream, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a ustring has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        _import_helpers(code)
        return "_parse_ustring(io, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        _import_helpers(code)
        return "_build_ustring(obj, io, '(compiled)')"


class _Buffer(Construct):  # type: ignore[misc]
    """jute ``buffer``: int32 length (-1 = null), then that many bytes."""

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        return _parse_buffer(stream, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return _build_buffer(obj, stream, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a buffer has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        _import_helpers(code)
        return "_parse_buffer(io, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        _import_helpers(code)
        return "_build_buffer(obj, io, '(compiled)')"


class _Boolean(Construct):  # type: ignore[misc]
    """jute ``boolean``: one byte, written as 0 or 1, read as true when non-zero.

    Unlike construct's ``Flag``, the compiled form also refuses to read past the end.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> bool:
        return _parse_bool(stream, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return _build_bool(obj, stream, path)

    def _sizeof(self, context: Any, path: str) -> int:
        return 1

    def _emitparse(self, code: Any) -> str:
        _import_helpers(code)
        return "_parse_bool(io, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        _import_helpers(code)
        return "_build_bool(obj, io, '(compiled)')"


class Vector(Subconstruct):  # type: ignore[misc]
    """jute ``vector<T>``: int32 count (-1 = null), then ``count`` items of ``subcon``."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = _read_length(stream, "vector", path)
        if n == -1:
            return None
        items = ListContainer()
        for _ in range(n):
            items.append(self.subcon._parsereport(stream, context, path))
        return items

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            stream.write(_NULL)
            return None
        items = list(obj)
        _write_length(stream, len(items))
        return ListContainer(self.subcon._build(item, stream, context, path) for item in items)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("a vector has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        _import_helpers(code)
        fname = f"parse_jute_vector_{code.allocateId()}"
        code.append(f"""
            def {fname}(io, this):
                n = _read_length(io, 'vector', '(compiled)')
                if n == -1:
                    return None
                return ListContainer([{self.subcon._compileparse(code)} for _ in range(n)])
        """)
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        _import_helpers(code)
        fname = f"build_jute_vector_{code.allocateId()}"
        code.append(f"""
            def {fname}(obj, io, this):
                if obj is None:
                    _write_length(io, -1)
                    return None
                items = list(obj)
                _write_length(io, len(items))
                return ListContainer([reuse(item, lambda obj: {self.subcon._compilebuild(code)}) for item in items])
        """)
        return f"{fname}(obj, io, this)"


class TrailingOptional(Subconstruct):  # type: ignore[misc]
    """A last field that may be missing: parses to None at the end of the input; None builds nothing.

    Used for the read-only byte of the connect records, which 3.8 peers may leave out.
    """

    def __init__(self, subcon: Any) -> None:
        super().__init__(subcon)
        self.flagbuildnone = True

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if _at_end(stream):
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            return None
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("an optional trailing field has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        _import_helpers(code)
        return f"(None if _at_end(io) else ({self.subcon._compileparse(code)}))"

    def _emitbuild(self, code: Any) -> str:
        return f"(None if obj is None else ({self.subcon._compilebuild(code)}))"


class _CompilableAdapter(Adapter):  # type: ignore[misc]
    """An Adapter whose compiled form compiles its subcon and calls ``_decode``/``_encode`` directly."""

    def _emitparse(self, code: Any) -> str:
        self._compileinstance(code)
        return f"linkedinstances[{id(self)}]._decode({self.subcon._compileparse(code)}, this, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        self._compileinstance(code)
        return (
            f"reuse(linkedinstances[{id(self)}]._encode(obj, this, '(compiled)'), "
            f"lambda obj: {self.subcon._compilebuild(code)})"
        )


class Reject(Construct):  # type: ignore[misc]
    """The default case of a Switch: parsing or building fails, naming the value that had no case."""

    def __init__(self, keyfunc: Any, what: str) -> None:
        super().__init__()
        self.keyfunc = keyfunc
        self.what = what
        self.flagbuildnone = True

    def _fail(self, key: object, path: str = "(compiled)") -> Any:
        raise JuteError(f"{self.what} {key!r} has no record here", path=path)

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return self._fail(self.keyfunc(context) if callable(self.keyfunc) else self.keyfunc, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return self._fail(self.keyfunc(context) if callable(self.keyfunc) else self.keyfunc, path)

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("no size", path=path)

    def _emitparse(self, code: Any) -> str:
        self._compileinstance(code)
        return f"linkedinstances[{id(self)}]._fail({self.keyfunc!r})"

    def _emitbuild(self, code: Any) -> str:
        return self._emitparse(code)


ustring = _UString()
buffer = _Buffer()
boolean = _Boolean()
int32 = Int32sb
int64 = Int64sb


# ------------------------------------------------------------------------------------ shared records

Stat = Struct(
    "czxid" / int64,
    "mzxid" / int64,
    "ctime" / int64,
    "mtime" / int64,
    "version" / int32,
    "cversion" / int32,
    "aversion" / int32,
    "ephemeral_owner" / int64,
    "data_length" / int32,
    "num_children" / int32,
    "pzxid" / int64,
)

Id = Struct(
    "scheme" / ustring,
    "id" / ustring,
)

ACL = Struct(
    "perms" / int32,
    "id" / Id,
)

ClientInfo = Struct(
    "auth_scheme" / ustring,
    "user" / ustring,
)

RequestHeader = Struct(
    "xid" / int32,
    "type" / int32,
)

ReplyHeader = Struct(
    "xid" / int32,
    "zxid" / int64,
    "err" / int32,
)

MultiHeader = Struct(
    "type" / int32,
    "done" / boolean,
    "err" / int32,
)

# ------------------------------------------------------------------------------------------- connect

ConnectRequest = Struct(
    "protocol_version" / int32,
    "last_zxid_seen" / int64,
    "timeout" / int32,
    "session_id" / int64,
    "passwd" / buffer,
    "read_only" / TrailingOptional(boolean),
)

ConnectResponse = Struct(
    "protocol_version" / int32,
    "timeout" / int32,
    "session_id" / int64,
    "passwd" / buffer,
    "read_only" / TrailingOptional(boolean),
)

# ------------------------------------------------------------------------------------------ requests

CreateRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "acl" / Vector(ACL),
    "flags" / int32,
)

CreateTTLRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "acl" / Vector(ACL),
    "flags" / int32,
    "ttl" / int64,
)

DeleteRequest = Struct(
    "path" / ustring,
    "version" / int32,
)

CheckVersionRequest = Struct(
    "path" / ustring,
    "version" / int32,
)

ExistsRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetDataRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetChildrenRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetChildren2Request = Struct(
    "path" / ustring,
    "watch" / boolean,
)

SetDataRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "version" / int32,
)

GetACLRequest = Struct(
    "path" / ustring,
)

SetACLRequest = Struct(
    "path" / ustring,
    "acl" / Vector(ACL),
    "version" / int32,
)

SyncRequest = Struct(
    "path" / ustring,
)

ReconfigRequest = Struct(
    "joining_servers" / ustring,
    "leaving_servers" / ustring,
    "new_members" / ustring,
    "cur_config_id" / int64,
)

CheckWatchesRequest = Struct(
    "path" / ustring,
    "type" / int32,
)

RemoveWatchesRequest = Struct(
    "path" / ustring,
    "type" / int32,
)

AuthPacket = Struct(
    "type" / int32,
    "scheme" / ustring,
    "auth" / buffer,
)

SetWatches = Struct(
    "relative_zxid" / int64,
    "data_watches" / Vector(ustring),
    "exist_watches" / Vector(ustring),
    "child_watches" / Vector(ustring),
)

SetWatches2 = Struct(
    "relative_zxid" / int64,
    "data_watches" / Vector(ustring),
    "exist_watches" / Vector(ustring),
    "child_watches" / Vector(ustring),
    "persistent_watches" / Vector(ustring),
    "persistent_recursive_watches" / Vector(ustring),
)

GetSASLRequest = Struct(
    "token" / buffer,
)

GetEphemeralsRequest = Struct(
    "prefix_path" / ustring,
)

GetAllChildrenNumberRequest = Struct(
    "path" / ustring,
)

AddWatchRequest = Struct(
    "path" / ustring,
    "mode" / int32,
)

# ----------------------------------------------------------------------------------------- responses

CreateResponse = Struct(
    "path" / ustring,
)

Create2Response = Struct(
    "path" / ustring,
    "stat" / Stat,
)

ExistsResponse = Struct(
    "stat" / Stat,
)

GetDataResponse = Struct(
    "data" / buffer,
    "stat" / Stat,
)

SetDataResponse = Struct(
    "stat" / Stat,
)

GetACLResponse = Struct(
    "acl" / Vector(ACL),
    "stat" / Stat,
)

SetACLResponse = Struct(
    "stat" / Stat,
)

GetChildrenResponse = Struct(
    "children" / Vector(ustring),
)

GetChildren2Response = Struct(
    "children" / Vector(ustring),
    "stat" / Stat,
)

SyncResponse = Struct(
    "path" / ustring,
)

SetSASLResponse = Struct(
    "token" / buffer,
)

GetEphemeralsResponse = Struct(
    "ephemerals" / Vector(ustring),
)

GetAllChildrenNumberResponse = Struct(
    "total_number" / int32,
)

ErrorResponse = Struct(
    "err" / int32,
)

WhoAmIResponse = Struct(
    "client_info" / Vector(ClientInfo),
)

WatcherEvent = Struct(
    "type" / int32,
    "state" / int32,
    "path" / ustring,
)

# --------------------------------------------------------------------------------------------- multi


def _by_op(table: Mapping[int, Any]) -> dict[int, Any]:
    # Plain int keys: the compiler writes the keys of Switch cases into source code with repr().
    return {int(op): sc for op, sc in table.items()}


def _schema_of(record: type[Any] | None) -> Any:
    """The schema describing the layout of a fast-codec record class: the one of the same name here."""
    return None if record is None else globals()[record.__name__]


#: Sub-operations of multi (14) and multiRead (22), and the request record of each.
MULTI_REQUEST_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in MULTI_REQUEST_RECORDS.items()})

#: Result types of a multi response, and the body of each (Pass: no body).
MULTI_RESULT_SCHEMAS: dict[int, Any] = _by_op(
    {op: Pass if cls is None else _schema_of(cls) for op, cls in MULTI_RESULT_RECORDS.items()}
)

# One entry on the wire: a MultiHeader, then (unless it is the terminator) the body its type selects.
_MultiRequestEntry = Struct(
    "header" / MultiHeader,
    "body"
    / IfThenElse(
        this.header.done,
        Pass,
        Switch(this.header.type, MULTI_REQUEST_SCHEMAS, default=Reject(this.header.type, "multi sub-op type")),
    ),
)

_MultiResultEntry = Struct(
    "header" / MultiHeader,
    "body"
    / IfThenElse(
        this.header.done,
        Pass,
        Switch(this.header.type, MULTI_RESULT_SCHEMAS, default=Reject(this.header.type, "multi result type")),
    ),
)

_TERMINATOR = {"type": -1, "done": True, "err": -1}


class _MultiRequestAdapter(_CompilableAdapter):
    """Entries up to the ``done`` header, shown as ``{"ops": [{"op", "request"}, ...]}`` like MultiRequest."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        ops = ListContainer(
            Container(op=e["header"]["type"], request=e["body"]) for e in obj if not e["header"]["done"]
        )
        return Container(ops=ops)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        entries: list[dict[str, Any]] = [
            {"header": {"type": op["op"], "done": False, "err": -1}, "body": op["request"]} for op in obj["ops"]
        ]
        entries.append({"header": _TERMINATOR, "body": None})
        return entries


class _MultiResponseAdapter(_CompilableAdapter):
    """Entries up to the ``done`` header, shown as ``{"results": [{"op", "err", "body"}, ...]}``."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        results = ListContainer(
            Container(op=e["header"]["type"], err=e["header"]["err"], body=e["body"])
            for e in obj
            if not e["header"]["done"]
        )
        return Container(results=results)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        entries: list[dict[str, Any]] = [
            {"header": {"type": r["op"], "done": False, "err": r["err"]}, "body": r["body"]} for r in obj["results"]
        ]
        entries.append({"header": _TERMINATOR, "body": None})
        return entries


#: multi (14) / multiRead (22) request body: entries repeated until a header with ``done`` set.
MultiRequest = _MultiRequestAdapter(RepeatUntil(obj_.header.done, _MultiRequestEntry))
#: multi (14) / multiRead (22) response body.
MultiResponse = _MultiResponseAdapter(RepeatUntil(obj_.header.done, _MultiResultEntry))

# ---------------------------------------------------------------------------------------- op tables

#: Request record of each op a 3.8 server accepts from a client (None: no body).
REQUEST_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in REQUEST_RECORDS.items()})

#: Body of each op's successful reply (None: the reply is a bare ReplyHeader).
RESPONSE_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in RESPONSE_RECORDS.items()})


def _cases(table: Mapping[int, Any]) -> dict[int, Any]:
    return {int(op): Pass if sc is None else sc for op, sc in table.items()}


#: A client frame after the handshake: RequestHeader, then the record its ``type`` selects.
RequestPayload = Struct(
    "header" / RequestHeader,
    "body" / Switch(this.header.type, _cases(REQUEST_SCHEMAS), default=Reject(this.header.type, "op code")),
)

#: A server frame after the handshake.  The op being answered is not on the wire: pass it as the
#: ``op`` context parameter.  xid -1 is a watch event; an error reply (err != 0) has no body.
ReplyPayload = Struct(
    "header" / ReplyHeader,
    "body"
    / IfThenElse(
        this.header.xid == WATCH_XID,
        WatcherEvent,
        IfThenElse(
            this.header.err == 0,
            Switch(this._params.op, _cases(RESPONSE_SCHEMAS), default=Reject(this._params.op, "reply to op code")),
            Pass,
        ),
    ),
)

#: Every record by the name of its class in :mod:`zkwire.protocol.records` / :mod:`zkwire.protocol.multi`.
RECORD_SCHEMAS: dict[str, Any] = {
    name: globals()[name] for name in __all__[__all__.index("Stat") : __all__.index("MultiResponse") + 1]
}

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
