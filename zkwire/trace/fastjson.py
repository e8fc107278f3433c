"""The JSON text of the records everyday traffic carries, written straight into a string.

A decoded record is a plain value (dicts, lists, strings, numbers, bytes): the plain version writes it with
the encoder :func:`json.dumps` uses (bytes as hex, by :func:`~zkwire.trace.render.json_default`).  That
encoder is quick for most values, but a Stat of eleven numbers, a children list, or bytes (passed back to
Python to be written as hex) cost it several microseconds.  :func:`record_json` writes the usual shapes
(a record's keys, in their order, with values of the usual types) with an f-string per shape, and gives
any other value to the plain version.  Its text is byte for byte the plain version's
(``tests/unit/test_fast_json.py`` holds it to that, on decoded traffic and on arbitrary values).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Final

from .render import json_default

__all__ = ["plain_json", "record_json"]


def _default(value: Any) -> Any:
    """render.json_default, bytes (the most of what it meets) first."""
    return value.hex() if type(value) is bytes else json_default(value)


def _plain_json() -> Callable[[Any], str]:
    """json.dumps(value, default=json_default), without the making of an encoder for each value."""
    if c_make_encoder is None:  # no C accelerator: json.dumps itself
        return functools.partial(json.dumps, default=json_default)
    # The encoder json.dumps makes for these arguments (ensure_ascii, ", " and ": ", NaN allowed, no check of
    # circular references: a record holds none), made once.
    encode = c_make_encoder(None, _default, encode_basestring_ascii, None, ": ", ", ", False, False, True)

    def plain_json(value: Any) -> str:
        return "null" if value is None else "".join(encode(value, 0))

    return plain_json


#: A value's JSON text, as json.dumps(value, default=json_default) writes it: the plain version.
plain_json: Final = _plain_json()

_STAT_KEYS: Final = (
    "czxid",
    "mzxid",
    "ctime",
    "mtime",
    "version",
    "cversion",
    "aversion",
    "ephemeral_owner",
    "data_length",
    "num_children",
    "pzxid",
)


def _stat(stat: object) -> str | None:
    """A Stat's JSON text (its eleven keys in their order, each an int), or None for any other value."""
    if type(stat) is not dict or tuple(stat) != _STAT_KEYS:
        return None
    a, b, c, d, e, f, g, h, i, j, k = stat.values()
    if not (
        type(a) is int
        and type(b) is int
        and type(c) is int
        and type(d) is int
        and type(e) is int
        and type(f) is int
        and type(g) is int
        and type(h) is int
        and type(i) is int
        and type(j) is int
        and type(k) is int
    ):
        return None
    return (
        f'{{"czxid": {a}, "mzxid": {b}, "ctime": {c}, "mtime": {d}, "version": {e}, "cversion": {f}, '
        f'"aversion": {g}, "ephemeral_owner": {h}, "data_length": {i}, "num_children": {j}, "pzxid": {k}}}'
    )


def _data(data: object) -> str | None:
    """Bytes (as their hex in quotes) or None (null); None for any other value."""
    if type(data) is bytes:
        return f'"{data.hex()}"'
    return "null" if data is None else None


#: The bytes json.dumps writes as they are (printable ASCII but the quote and the backslash).
_PLAIN_BYTES: Final = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')


def _names(names: object) -> str | None:
    """A list of names that need no escaping (printable ASCII without quote or backslash), or None."""
    if type(names) is not list:
        return None
    if not names:
        return "[]"
    try:
        joined = '", "'.join(names)
    except TypeError:  # not all str
        return None
    # Bytes that need no escaping deleted, only the separators' quotes are left when no name needs any.
    if joined.isascii() and len(joined.encode("ascii").translate(None, _PLAIN_BYTES)) == 2 * len(names) - 2:
        return f'["{joined}"]'
    return None


def _path_watch(r: dict[str, Any]) -> str | None:  # getData, getChildren, exists... requests
    path, watch = r.values()
    if type(path) is not str or type(watch) is not bool:
        return None
    return f'{{"path": {encode_basestring_ascii(path)}, "watch": {"true" if watch else "false"}}}'


def _path_data_version(r: dict[str, Any]) -> str | None:  # setData requests
    path, data, version = r.values()
    written = _data(data)
    if type(path) is not str or written is None or type(version) is not int:
        return None
    return f'{{"path": {encode_basestring_ascii(path)}, "data": {written}, "version": {version}}}'


def _data_stat(r: dict[str, Any]) -> str | None:  # getData replies
    data, stat = r.values()
    written, stat_text = _data(data), _stat(stat)
    if written is None or stat_text is None:
        return None
    return f'{{"data": {written}, "stat": {stat_text}}}'


def _stat_only(r: dict[str, Any]) -> str | None:  # setData and exists replies
    stat_text = _stat(r["stat"])
    return None if stat_text is None else f'{{"stat": {stat_text}}}'


def _children(r: dict[str, Any]) -> str | None:  # getChildren replies
    names = _names(r["children"])
    return None if names is None else f'{{"children": {names}}}'


def _children_stat(r: dict[str, Any]) -> str | None:  # getChildren2 replies
    children, stat = r.values()
    names, stat_text = _names(children), _stat(stat)
    if names is None or stat_text is None:
        return None
    return f'{{"children": {names}, "stat": {stat_text}}}'


def _path_only(r: dict[str, Any]) -> str | None:  # create's and sync's replies, sync's requests
    path = r["path"]
    return None if type(path) is not str else f'{{"path": {encode_basestring_ascii(path)}}}'


#: The writers of the usual shapes, by a record's keys in their order.
_WRITERS: Final[dict[tuple[str, ...], Callable[[dict[str, Any]], str | None]]] = {
    ("path", "watch"): _path_watch,
    ("path", "data", "version"): _path_data_version,
    ("data", "stat"): _data_stat,
    ("stat",): _stat_only,
    ("children",): _children,
    ("children", "stat"): _children_stat,
    ("path",): _path_only,
}


def record_json(record: Any) -> str:
    """A record's JSON text, as :data:`plain_json` writes it: the usual shapes by their writers."""
    if type(record) is dict:
        write = _WRITERS.get(tuple(record))
        if write is not None:
            text = write(record)
            if text is not None:
                return text
    return plain_json(record)
