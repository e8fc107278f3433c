"""The records of everyday traffic read straight into plain values.

The plain version of reading a record (:class:`~zkwire.trace.fastbodies.FastBodies`) is the codec's:
:func:`~zkwire.protocol.codec.decode_request` or :func:`~zkwire.protocol.codec.decode_response_body` makes
the record object, then :func:`~zkwire.trace.fastbodies.plain` makes it dicts.  For the few records that
make up most of a capture (a path and a watch flag; setData's request; a Stat; getData's and getChildren's
replies) that is several objects made and dropped per frame.  The readers here make the plain value at
once, and give :data:`UNREAD` for anything they do not take (a length out of place, text that is not
UTF-8, a null path, a watch byte other than 0 or 1...): the plain version then reads the frame as it
always does, and refuses it with its usual error.  Their values equal the plain version's
(``tests/unit/test_common_bodies.py`` holds them to it, on well-formed and damaged records).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from ..protocol.jute import INT, Reader
from ..protocol.optable import REQUEST_RECORDS, RESPONSE_RECORDS
from ..protocol.records import STAT_STRUCT, GetChildrenResponse, GetDataResponse, SetDataRequest, Stat
from ..protocol.records.base import StatOnly

__all__ = ["COMMON_REPLIES", "COMMON_REQUESTS", "UNREAD"]

#: What a reader gives for a record it does not take (the plain version reads it).
UNREAD: Final[Any] = object()

_STAT_SIZE: Final = STAT_STRUCT.size


def _stat_reader() -> Callable[[bytes, int], dict[str, int]]:
    """A Stat at an offset as the dict plain() makes of it (its fields in their order), by one unpack."""
    names = Stat._fields
    source = (
        "def read_stat(payload, offset):\n"
        f"    {', '.join(names)}, = unpack_from(payload, offset)\n"
        f"    return {{{', '.join(f'{n!r}: {n}' for n in names)}}}\n"
    )
    namespace: dict[str, Any] = {"unpack_from": STAT_STRUCT.unpack_from}
    exec(source, namespace)
    read_stat: Callable[[bytes, int], dict[str, int]] = namespace["read_stat"]
    return read_stat


_read_stat: Final = _stat_reader()


# ---------------------------------------------------------------------------------------------- requests
# A request's payload: its header (xid, op: 8 bytes), then its record.


def _path_watch_request(payload: bytes) -> Any:
    """getData, exists, getChildren, getChildren2: a path and a watch flag."""
    end = len(payload)
    if end < 13:
        return UNREAD
    n = INT.unpack_from(payload, 8)[0]
    if n < 0 or 13 + n != end:
        return UNREAD
    try:
        path = payload[12 : 12 + n].decode()
    except UnicodeDecodeError:
        return UNREAD
    return {"path": path, "watch": payload[12 + n] != 0}


def _set_data_request(payload: bytes) -> Any:
    """setData: a path, the data (or none) and the version expected."""
    end = len(payload)
    if end < 20:
        return UNREAD
    n = INT.unpack_from(payload, 8)[0]
    p = 12 + n
    if n < 0 or p + 8 > end:
        return UNREAD
    size = INT.unpack_from(payload, p)[0]
    if size == -1:
        data = None
        q = p + 4
    elif size < 0:
        return UNREAD
    else:
        q = p + 4 + size
        data = payload[p + 4 : q]
    if q + 4 != end:
        return UNREAD
    try:
        path = payload[12:p].decode()
    except UnicodeDecodeError:
        return UNREAD
    return {"path": path, "data": data, "version": INT.unpack_from(payload, q)[0]}


def _field_names(cls: type | None) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls)) if cls is not None and dataclasses.is_dataclass(cls) else ()


#: The readers of the common requests, by op code (the ops whose record is a path and a watch flag, and
#: setData's), from the op table.
COMMON_REQUESTS: Final[dict[int, Callable[[bytes], Any]]] = {
    **{op: _path_watch_request for op, cls in REQUEST_RECORDS.items() if _field_names(cls) == ("path", "watch")},
    **{op: _set_data_request for op, cls in REQUEST_RECORDS.items() if cls is SetDataRequest},
}


# ------------------------------------------------------------------------------------------------- replies
# A successful reply's payload: its header (xid, zxid, err: 16 bytes), then its record.


def _get_data_reply(payload: bytes) -> Any:
    """getData: the data (or none) and the node's Stat."""
    end = len(payload)
    if end < 20 + _STAT_SIZE:
        return UNREAD
    n = INT.unpack_from(payload, 16)[0]
    if n == -1:
        data = None
        p = 20
    elif n < 0:
        return UNREAD
    else:
        p = 20 + n
        data = payload[20:p]
    if p + _STAT_SIZE != end:
        return UNREAD
    return {"data": data, "stat": _read_stat(payload, p)}


def _stat_reply(payload: bytes) -> Any:
    """setData, exists, setACL: the node's Stat."""
    if len(payload) != 16 + _STAT_SIZE:
        return UNREAD
    return {"stat": _read_stat(payload, 16)}


def _children_reply(payload: bytes) -> Any:
    """getChildren: the names (the codec's reading of a string vector)."""
    r = Reader(payload, 16)
    try:
        names = r.string_vector()
    except Exception:  # the plain version says what is wrong
        return UNREAD
    if names is None or r.pos != len(payload):
        return UNREAD
    return {"children": names}


#: The readers of the common replies, by op code, from the op table.
COMMON_REPLIES: Final[dict[int, Callable[[bytes], Any]]] = {
    op: reader
    for op, cls in RESPONSE_RECORDS.items()
    for reader in [
        _get_data_reply
        if cls is GetDataResponse
        else _stat_reply
        if cls is not None and issubclass(cls, StatOnly)
        else _children_reply
        if cls is GetChildrenResponse
        else None
    ]
    if reader is not None
}
