"""Reading records with the project's codec (:mod:`zkwire.protocol`): :class:`FastBodies`, the tracer's
default :class:`~zkwire.trace.bodies.BodyDecoder`, and :class:`HeaderBodies`, which reads only what the
summary and the header filters need.

:class:`FastBodies` gives the same plain values as the construct schemas (:func:`plain`: records to dicts
and lists, the shape of :func:`zkwire.trace.schema.to_plain`) and refuses the same bytes with
:class:`~zkwire.errors.ProtocolError`; ``zkwire decode --verify`` and the differential tests check that
they agree.  :class:`HeaderBodies` decodes no record body but the small fixed ones the summary counts
(the connect records, watch events, a multi's results): a request's path is its leading string.
:class:`NoteBodies`, for the one-line view, reads besides those the records its lines show something of.
"""

from __future__ import annotations

import dataclasses
import keyword
import struct
from collections.abc import Callable
from typing import Any, Final

from ..constants import WATCH_XID, OpCode
from ..errors import ProtocolError
from ..protocol.codec import (
    decode_connect_request,
    decode_connect_response,
    decode_request,
    decode_response_body,
    decode_watcher_event,
)
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.jute import INT, Reader, repeated_heads
from ..protocol.multi import MultiResponse
from ..protocol.optable import REQUEST_RECORDS, RESPONSE_RECORDS
from ..protocol.records import ACL, ClientInfo, ErrorResponse, Id, Stat
from ..protocol.subops import MULTI_RESULT_RECORDS
from ..sansio.ensemble import CONFIG_PATH
from .commonbodies import COMMON_REPLIES, COMMON_REQUESTS, UNREAD
from .notes import CREATES, MULTI_OPS, path_of

__all__ = ["FastBodies", "HeaderBodies", "NoteBodies", "OpBodies", "plain", "PATH_FIRST_OPS"]

_Converter = Callable[[Any], Any]
#: The NamedTuples a record's field may be typed as, by name (the vectors of them convert in one pass).
_NAMED_TUPLES: dict[str, type] = {cls.__name__: cls for cls in (ACL, ClientInfo, Id, Stat)}


def _same(value: Any) -> Any:
    return value


def _to_bytes(value: Any) -> bytes:
    return bytes(value)


def _sequence(value: Any) -> list[Any]:
    if len(value) > 1:
        if type(value[0]) is str and _all_text(value):  # names, paths: as they are
            return list(value)
        types = set(map(type, value))
        if types <= _SCALAR_TYPES:  # numbers, or names with nulls: as they are, in one pass
            return list(value)
        if len(types) == 1:
            kind = types.pop()
            if kind not in _CONVERTERS:  # a class met for the first time: learnt (and _FLAT with it)
                _CONVERTERS[kind] = _record_converter(kind)
            rows = _FLAT.get(kind)
            if rows is not None:  # a long vector of records of one class: one pass
                return rows(value)
    return [plain(v) for v in value]


def _all_text(value: Any) -> bool:
    """Whether every item of ``value`` is a str: joined in one call (the plain version, the set of the
    items' types, makes a call for each item)."""
    try:
        "".join(value)
    except TypeError:
        return False
    return True


_SCALAR_TYPES = frozenset({int, bool, str, bytes, float, type(None)})

_CONVERTERS: dict[type, _Converter] = {
    int: _same,
    bool: _same,
    str: _same,
    bytes: _same,
    float: _same,
    type(None): _same,
    bytearray: _to_bytes,
    memoryview: _to_bytes,
    list: _sequence,
    tuple: _sequence,
}


#: Field types that hold plain values already (a field typed otherwise may hold a record or a list).
_PLAIN_TYPES = frozenset({"int", "str", "bytes", "bool", "float", "None"})


def _nested_fields(cls: type, names: tuple[str, ...]) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold something to convert: those not typed as plain values."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        hints.update(getattr(klass, "__annotations__", {}))
    return tuple(name for name in names if not set(_hint_text(hints.get(name)).split("|")) <= _PLAIN_TYPES)


def _hint_text(hint: Any) -> str:
    """A field's type as text without spaces (``int|None``); a NamedTuple keeps it as a ForwardRef."""
    text = getattr(hint, "__forward_arg__", hint)
    return text.replace(" ", "") if isinstance(text, str) else "?"


#: NamedTuples whose vectors convert in one pass, and the converter of such a vector: ACL (its Id inside
#: it), ClientInfo, Id, Stat -- those whose fields are plain values, but for one NamedTuple of plain values.
_FLAT: dict[type, Callable[[Any], list[dict[str, Any]]]] = {}


def _learn_flat(cls: type, names: tuple[str, ...], nested: tuple[str, ...]) -> None:
    """The converter of a vector of ``cls`` in :data:`_FLAT`, if its fields are plain values but for one
    NamedTuple of plain values, as one list comprehension: for ACL,

        def convert(value):
            return [{"perms": _0, "id": {"scheme": _1_0, "id": _1_1}} for (_0, (_1_0, _1_1,),) in value]

    (the plain version is ``[plain(v) for v in value]``: two calls and two dicts made field by field for
    each item).  Unpacking checks each item's length as ``zip(..., strict=True)`` would."""
    inner: str | None = None
    inner_names: tuple[str, ...] = ()
    if nested:
        hints = getattr(cls, "__annotations__", {})
        inner_cls = _NAMED_TUPLES.get(_hint_text(hints.get(nested[0])))
        inner_fields: tuple[str, ...] | None = getattr(inner_cls, "_fields", None)
        if len(nested) > 1 or inner_cls is None or not inner_fields or _nested_fields(inner_cls, inner_fields):
            return
        inner, inner_names = nested[0], inner_fields
    targets, values = [], []
    for i, name in enumerate(names):
        if name == inner:
            parts = [f"_{i}_{j}" for j in range(len(inner_names))]
            targets.append(f"({', '.join(parts)},)")
            values.append(_display(inner_names, parts))
        else:
            targets.append(f"_{i}")
            values.append(f"_{i}")
    _FLAT[cls] = _compiled(f"[{_display(names, values)} for ({', '.join(targets)},) in v]")


def _record_converter(cls: type) -> _Converter:
    """The converter of one record class: its fields in order, as a dict (nested records converted too;
    fields typed as plain values are taken as they are, which keeps long vectors of records quick)."""
    fields: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if fields is not None and issubclass(cls, tuple):  # a NamedTuple
        nested = _nested_fields(cls, fields)
        _learn_flat(cls, fields, nested)
        return _dict_display(fields, nested, by_index=True)
    if dataclasses.is_dataclass(cls):
        attrs = tuple(f.name for f in dataclasses.fields(cls))
        return _dict_display(attrs, _nested_fields(cls, attrs), by_index=False)
    if issubclass(cls, int):  # an IntEnum: its number, as the schemas give it
        return int
    raise TypeError(f"cannot convert {cls.__name__} to a plain value")


def _dict_display(names: tuple[str, ...], nested: tuple[str, ...], *, by_index: bool) -> _Converter:
    """A record's converter as one dict display, made from its fields as a NamedTuple's ``_make`` or a
    dataclass's ``__init__`` is made from them: for the dataclass GetDataResponse,

        def convert(v):
            return {"data": v.data, "stat": plain(v.stat)}

    (``v[0]``, ``v[1]``... for a NamedTuple).  The plain version, ``dict(zip(names, fields))`` and then
    :func:`plain` of each nested field, does in several calls what this does in one: it costs several
    times as much for the small records every frame carries.
    """
    values = [f"v[{i}]" if by_index else f"v.{name}" for i, name in enumerate(names)]
    return _compiled(_display(names, [f"plain({v})" if n in nested else v for n, v in zip(names, values, strict=True)]))


def _display(names: tuple[str, ...], values: list[str]) -> str:
    """The source of a dict display of ``names`` (a record's field names) and ``values`` (expressions)."""
    if not all(name.isidentifier() and not keyword.iskeyword(name) for name in names):
        raise TypeError(f"fields {names} are not all identifiers")  # no record's are
    return "{" + ", ".join(f"{name!r}: {value}" for name, value in zip(names, values, strict=True)) + "}"


def _compiled(expression: str) -> _Converter:
    """``lambda v: <expression>``, compiled once (the expression is made of a record's field names)."""
    namespace: dict[str, Any] = {"plain": plain}
    exec(f"def convert(v):\n    return {expression}", namespace)
    convert: _Converter = namespace["convert"]
    return convert


def plain(value: Any) -> Any:
    """A record of the fast codec (NamedTuples and dataclasses, nested) as plain dicts, lists, bytes and
    numbers: the shape :func:`zkwire.trace.schema.to_plain` gives the construct schemas' values."""
    convert = _CONVERTERS.get(type(value))
    if convert is None:
        convert = _CONVERTERS[type(value)] = _record_converter(type(value))
    return convert(value)


def _first_field(cls: type | None) -> str | None:
    if cls is None:
        return None
    fields: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if fields is None and dataclasses.is_dataclass(cls):
        fields = tuple(f.name for f in dataclasses.fields(cls))
    return fields[0] if fields else None


#: Ops whose request record starts with the node's path (or a path prefix), read from the op table's records.
PATH_FIRST_OPS = frozenset(op for op, cls in REQUEST_RECORDS.items() if _first_field(cls) in ("path", "prefix_path"))


class FastBodies:
    """Records read with the fast codec, as plain values."""

    __slots__ = ()
    headers_only = False

    def connect_request(self, payload: bytes) -> Any:
        return plain(decode_connect_request(payload))

    def connect_response(self, payload: bytes) -> Any:
        return plain(decode_connect_response(payload))

    def request(self, payload: bytes) -> Any:
        if len(payload) >= 8:  # the common requests read straight into plain values, the rest as below
            read = COMMON_REQUESTS.get(INT.unpack_from(payload, 4)[0])
            if read is not None:
                value = read(payload)
                if value is not UNREAD:
                    return value
        _, record = decode_request(payload)
        return None if record is None else plain(record)

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        if len(payload) < 16:
            raise ProtocolError(f"reply of {len(payload)} bytes is shorter than a ReplyHeader")
        xid, _, err = _REPLY_HEADER.unpack_from(payload)
        if xid == WATCH_XID:
            return plain(decode_watcher_event(payload))
        if err != 0:
            if len(payload) != 16:
                raise ProtocolError(f"error reply carries {len(payload) - 16} unexpected body bytes")
            return None
        if op is None:
            raise ProtocolError("no reply format for an unknown op")
        read = _PLAIN_REPLIES.get(op)
        if read is not None:
            value = read(payload)
            if value is not _UNREAD:
                return value
        record = decode_response_body(op, payload)
        if isinstance(record, MultiResponse):  # the results in one loop: a large multi holds 100,000s
            return {
                "results": [{"op": o, "err": e, "body": None if b is None else plain(b)} for o, e, b in record.results]
            }
        return None if record is None else plain(record)

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        """The path a request names (from its decoded ``record``)."""
        return path_of(record)


# Replies that may hold 100,000s of entries, read straight into plain values: the plain version (the
# codec's record, then plain()) makes a record for each entry, and a record (a NamedTuple or a slotted
# dataclass) is an object the garbage collector follows, where a dict of numbers and strings is not: a
# large reply's records made it walk every object of the program several times over.  Each reader takes
# what is well formed and usual (many entries, ASCII text) and otherwise gives _UNREAD, for the plain
# version, which then reads the reply as it always does (and refuses it with its usual error).

_UNREAD: Any = UNREAD
#: Fewer entries than that are read by the plain version (as quick for them).
_MANY = 32
#: A multi's result header, alone (a result without a body) or with an error code (an error result).
_NO_BODY: Final = struct.Struct(">i?i")
_ERROR_BODY: Final = struct.Struct(">i?ii")


def _acl_reply(payload: bytes) -> Any:
    """getACL's reply: its ACL entries and Stat."""
    found = _pairs(payload, lead_int=True, stat=True)
    if found is None:
        return _UNREAD
    entries, stat = found
    return {"acl": [{"perms": p, "id": {"scheme": s, "id": i}} for p, s, i in entries], "stat": stat}


def _who_am_i_reply(payload: bytes) -> Any:
    """whoAmI's reply: its ClientInfo entries."""
    found = _pairs(payload, lead_int=False, stat=False)
    if found is None:
        return _UNREAD
    return {"client_info": [{"auth_scheme": a, "user": u} for a, u in found[0]]}


def _pairs(payload: bytes, *, lead_int: bool, stat: bool) -> tuple[list[tuple[Any, ...]], Any] | None:
    """The entries of a reply's vector of string pairs (:meth:`~zkwire.protocol.jute.Reader.string_pairs`)
    and the Stat after them (``stat``), when the vector is large and the reply well formed; else None."""
    r = Reader(payload, 16)
    try:
        n = r.int32()
        if n < _MANY:
            return None
        entries = r.string_pairs(n, lead_int=lead_int)
        after = plain(Stat.read(r)) if stat else None
        r.expect_end("reply")
    except ProtocolError:
        return None
    return entries, after


def _multi_reply(payload: bytes) -> Any:
    """multi's and multiRead's reply: its results, each run of results without a body (a check's, a
    delete's) or with an error code alone (a failed multi's) cut in one pass (:func:`repeated_heads`:
    same op and not done, whatever the err), any other result read as the plain version reads it."""
    buf = payload if type(payload) is bytes else bytes(payload)
    end = len(buf)
    pos = 16
    results: list[dict[str, Any]] = []
    try:
        while True:
            if pos + 9 > end:
                return _UNREAD
            kind, done, err = _NO_BODY.unpack_from(buf, pos)
            if done:
                pos += 9
                break
            if kind not in MULTI_RESULT_RECORDS:
                return _UNREAD
            record = MULTI_RESULT_RECORDS[kind]
            if record is None or record is ErrorResponse:
                shape = _NO_BODY if record is None else _ERROR_BODY
                stride = shape.size
                run = repeated_heads(buf, pos, (end - pos) // stride, stride, 5)
                if run == 0:  # the body runs past the end
                    return _UNREAD
                chunk = buf[pos : pos + run * stride]
                if record is None:
                    results += [{"op": k, "err": e, "body": None} for k, _, e in shape.iter_unpack(chunk)]
                else:
                    results += [{"op": k, "err": e, "body": {"err": b}} for k, _, e, b in shape.iter_unpack(chunk)]
                pos += run * stride
            else:
                r = Reader(buf, pos + 9)
                body = record.read(r)
                results.append({"op": kind, "err": err, "body": plain(body)})
                pos = r.pos
    except ProtocolError:
        return _UNREAD
    return {"results": results} if pos == end else _UNREAD


_LARGE_REPLIES: dict[int, Callable[[bytes], Any]] = {
    OpCode.GET_ACL: _acl_reply,
    OpCode.WHO_AM_I: _who_am_i_reply,
    OpCode.MULTI: _multi_reply,
    OpCode.MULTI_READ: _multi_reply,
}
#: The replies read straight into plain values: the large ones, and the common ones
#: (:mod:`~zkwire.trace.commonbodies`).
_PLAIN_REPLIES: Final[dict[int, Callable[[bytes], Any]]] = {**COMMON_REPLIES, **_LARGE_REPLIES}


class HeaderBodies(FastBodies):
    """Only what the header facts need: connect records, watch events and a multi's results are read
    (the summary counts sessions, events and failed multis); other records are not decoded (None), and a
    request's path is its record's leading string."""

    __slots__ = ()
    headers_only = True

    def request(self, payload: bytes) -> Any:
        return None

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        if len(payload) >= 16:
            xid, _, err = _REPLY_HEADER.unpack_from(payload)
            if xid == WATCH_XID or (err == 0 and op in MULTI_OPS):
                return super().reply(op, payload)
        return None

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        if op not in PATH_FIRST_OPS or len(payload) < 12:
            return None
        n = INT.unpack_from(payload, 8)[0]
        if 0 <= n <= len(payload) - 12:  # the usual case, read here; the reader has every other one
            try:
                return str(payload[12 : 12 + n], "utf-8")
            except UnicodeDecodeError:
                pass
        return Reader(payload, 8).ustring()


class OpBodies(HeaderBodies):
    """The records of the ops in ``ops`` read in full, the others' header facts only: for a filter on ops,
    which shows no other frame (watch events, the connect records and a multi's results are read as
    :class:`HeaderBodies` reads them)."""

    __slots__ = ("ops",)
    headers_only = False

    def __init__(self, ops: frozenset[int]) -> None:
        self.ops = ops

    def request(self, payload: bytes) -> Any:
        if len(payload) >= 8 and INT.unpack_from(payload, 4)[0] in self.ops:
            return FastBodies.request(self, payload)
        return None

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        if op in self.ops:
            return FastBodies.reply(self, op, payload, path)
        return super().reply(op, payload, path)

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        return path_of(record) if op in self.ops else super().path(op, payload, record)


#: Requests whose line in the one-line view shows something of their record: a create's mode, an auth's
#: scheme, the watches a SetWatches re-registers, a multi's operations, a reconfiguration's members.
NOTE_REQUEST_OPS = CREATES | {OpCode.AUTH, OpCode.SET_WATCHES, OpCode.SET_WATCHES2, OpCode.RECONFIG} | MULTI_OPS
#: Replies whose line shows something of their record: the node a create made, a multi's outcomes, the
#: configuration a reconfig (or a getData of ``/zookeeper/config``) carries.
NOTE_REPLY_OPS = CREATES | {OpCode.RECONFIG} | MULTI_OPS
# Not read: the records of other ops.  An op whose request or reply is a bare header is read all the
# same (nothing to read, and bytes where there should be none are refused: they may be a secret's).
_SKIMMED_REQUESTS = frozenset(
    op for op, cls in REQUEST_RECORDS.items() if cls is not None and op not in NOTE_REQUEST_OPS
)
_SKIMMED_REPLIES = frozenset(op for op, cls in RESPONSE_RECORDS.items() if cls is not None and op not in NOTE_REPLY_OPS)


class NoteBodies(HeaderBodies):
    """What the one-line view shows: :class:`HeaderBodies`' reading, and the records of
    :data:`NOTE_REQUEST_OPS` and :data:`NOTE_REPLY_OPS` (and of a getData of ``/zookeeper/config``) in
    full.  Ops not in the op table, and error replies that carry body bytes, are read in full too, so
    that they are still refused.  Other records are not read: a damaged one shows in ``-v``, ``--json``
    and ``--verify``, which read every record."""

    __slots__ = ()
    headers_only = False

    def request(self, payload: bytes) -> Any:
        if len(payload) >= 8 and INT.unpack_from(payload, 4)[0] in _SKIMMED_REQUESTS:
            return None
        return FastBodies.request(self, payload)

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        skimmed = op in _SKIMMED_REPLIES and not (op == OpCode.GET_DATA and path == CONFIG_PATH)
        # A short reply, or an error reply that carries body bytes, is read in full: and refused.
        if skimmed and (len(payload) == 16 or (len(payload) > 16 and INT.unpack_from(payload, 12)[0] == 0)):
            return super().reply(op, payload, path)
        return FastBodies.reply(self, op, payload, path)
