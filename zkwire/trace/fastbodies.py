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
import operator
from collections.abc import Callable
from typing import Any

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
from ..protocol.jute import INT, Reader
from ..protocol.multi import MultiResponse
from ..protocol.optable import REQUEST_RECORDS, RESPONSE_RECORDS
from ..protocol.records import ACL, ClientInfo, Id, Stat
from ..sansio.ensemble import CONFIG_PATH
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
        if set(map(type, value)) <= _SCALAR_TYPES:  # names, paths, numbers: as they are, in one pass
            return list(value)
        kind = type(value[0])
        flat = _FLAT.get(kind)
        if flat is not None and all(type(v) is kind for v in value):
            names, inner, inner_names = flat
            rows = [dict(zip(names, v, strict=True)) for v in value]  # a long vector of records: one pass
            if inner is not None:
                for row in rows:
                    row[inner] = dict(zip(inner_names, row[inner], strict=True))
            return rows
    return [plain(v) for v in value]


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


#: NamedTuples whose vectors convert in one pass: field names, and the one field holding a NamedTuple of
#: plain values (with its field names), if any -- ACL and its Id, ClientInfo, Stat.
_FLAT: dict[type, tuple[tuple[str, ...], str | None, tuple[str, ...]]] = {}


def _learn_flat(cls: type, names: tuple[str, ...], nested: tuple[str, ...]) -> None:
    if not nested:
        _FLAT[cls] = (names, None, ())
        return
    hints = getattr(cls, "__annotations__", {})
    if len(nested) == 1:
        inner_cls = _NAMED_TUPLES.get(_hint_text(hints.get(nested[0])))
        inner_names: tuple[str, ...] | None = getattr(inner_cls, "_fields", None)
        if inner_cls is not None and inner_names and not _nested_fields(inner_cls, inner_names):
            _FLAT[cls] = (names, nested[0], inner_names)


def _record_converter(cls: type) -> _Converter:
    """The converter of one record class: its fields in order, as a dict (nested records converted too;
    fields typed as plain values are taken as they are, which keeps long vectors of records quick)."""
    fields: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if fields is not None and issubclass(cls, tuple):  # a NamedTuple
        names = fields
        nested = _nested_fields(cls, names)
        _learn_flat(cls, names, nested)

        def named(value: Any) -> dict[str, Any]:
            out = dict(zip(names, value, strict=True))
            for k in nested:
                out[k] = plain(out[k])
            return out

        return named
    if dataclasses.is_dataclass(cls):
        attrs = tuple(f.name for f in dataclasses.fields(cls))
        nested = _nested_fields(cls, attrs)
        if len(attrs) == 1:  # ErrorResponse, CreateResponse, WhoAmIResponse...: a dict of one field
            (only,) = attrs
            get = operator.attrgetter(only)
            if nested:
                return lambda value: {only: plain(get(value))}
            return lambda value: {only: get(value)}
        get_all = operator.attrgetter(*attrs) if attrs else lambda value: ()

        def record(value: Any) -> dict[str, Any]:
            out = dict(zip(attrs, get_all(value), strict=True))
            for k in nested:
                out[k] = plain(out[k])
            return out

        return record
    if issubclass(cls, int):  # an IntEnum: its number, as the schemas give it
        return int
    raise TypeError(f"cannot convert {cls.__name__} to a plain value")


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
        record = decode_response_body(op, payload)
        if isinstance(record, MultiResponse):  # the results in one loop: a large multi holds 100,000s
            return {
                "results": [{"op": o, "err": e, "body": None if b is None else plain(b)} for o, e, b in record.results]
            }
        return None if record is None else plain(record)

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        """The path a request names (from its decoded ``record``)."""
        return path_of(record)


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
