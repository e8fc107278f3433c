"""Fast writers for the common frames: the same text line and JSON object as the general writers of
:mod:`~zkwire.trace.render` (:func:`~zkwire.trace.render.format_frame`, and
:func:`~zkwire.trace.render.frame_to_json` written by :func:`json.dumps`), made straight into a string.

They take the frames of everyday traffic (requests, replies, pings and watch events) and give up on anything
else by returning None, so that the caller writes the frame with the general writer: secrets to mask, control
characters to escape, values or lines to cut, four-letter words, handshakes, malformed frames, header values
of unexpected types.  A record is written by :func:`~zkwire.trace.fastjson.record_json`.  What they
write is byte for byte what the general writers write (``tests/unit/test_fast_writers.py`` holds them to it).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Final

from .fastjson import plain_json as _json
from .fastjson import record_json
from .frames import CLIENT, DecodedFrame, format_zxid
from .notes import MULTI_OPS
from .render import SECRET_KEYS, capped, failed_multi, hex_limit, text_limit, time_column

__all__ = ["fast_json_line", "fast_text_rest"]

#: The kinds of frame the fast writers take; the others are rare and have their own views.
_COMMON_KINDS: Final = frozenset({"request", "reply", "ping", "event"})
_SECRET_KEYS: Final = frozenset(SECRET_KEYS)


def _heads(arrow: str) -> dict[str, str]:
    return {kind: f"{arrow} {kind:<16}" for kind in _COMMON_KINDS}


#: The start of a common frame's line (after the time column), by its kind: who sent it, what it is.
_CLIENT_HEADS: Final = _heads("->")
_SERVER_HEADS: Final = _heads("<-")
#: Room enough for the time column of a frame whose time is below 1e15 s (``-`` when it has none).
_TIME_ROOM: Final = 32


def fast_text_rest(frame: DecodedFrame, max_line: int | None) -> str | None:
    """:func:`~zkwire.trace.render.format_frame`'s line (not verbose) without its time column and the space
    after it, for a common frame; None when the general writer must write it (the line would be cut or
    hold a character to escape, or the frame is not of a common kind)."""
    kind = frame.kind
    head = (_CLIENT_HEADS if frame.direction == CLIENT else _SERVER_HEADS).get(kind)
    if head is None:
        return None
    # Each column's text ("" when the frame has none), then the line in one piece: the columns are those
    # format_frame writes, in its order.
    xid, name, path, err, zxid, latency = frame.xid, frame.op_name, frame.path, frame.err, frame.zxid, frame.latency
    if path is None:
        path_text = ""
    elif max_line and len(path) > max_line // 2:
        return None
    else:
        # Whitespace other than a space is a control character (escaped, not taken here): a printable path
        # is quoted exactly when it is empty or holds a space.
        path_text = f" {path!r}" if path == "" or " " in path else " " + path
    if err is None or (err == 0 and (kind == "event" or kind == "ping")):
        err_text = ""
    elif frame.op in MULTI_OPS and failed_multi(frame):
        err_text = " FAILED"
    else:
        err_text = " " + (frame.err_name or str(err))
    if zxid is None or 0 <= zxid <= _MAX_ZXID:
        zxid_text = "" if zxid is None else f" zxid=0x{zxid:x}"
    else:
        zxid_text = " zxid=" + format_zxid(zxid)
    line = (
        f"{head}{'' if xid is None else f' xid={xid}'}{'' if name is None else ' ' + name}{path_text}{err_text}"
        f"{zxid_text} len={frame.size}+4{'' if latency is None else f' {latency * 1000:.3f}ms'}"
    )
    if frame.note:
        line += f" [{frame.note}]"
    if frame.error:
        line += f" ERROR: {frame.error}"
    if frame.disagreement:
        line += f" VERIFY: {frame.disagreement}"
    if not line.isprintable():
        return None
    if max_line:  # the line with its time column must fit (the time's text is made only when it might not)
        t = frame.time
        near = len(line) + _TIME_ROOM > max_line or not (t is None or -1e15 < t < 1e15)
        if near and len(line) + 1 + len(time_column(frame)) > max_line:
            return None
    return line


_MAX_ZXID: Final = 0xFFFFFFFFFFFFFFFF


class _Unusual(Exception):
    """A value the fast JSON writer does not write (the general writer does)."""


def fast_json_line(
    frame: DecodedFrame, conn: int | None, wall: float, max_line: int | None, reveal_secrets: bool
) -> str | None:
    """:class:`~zkwire.trace.output.TraceOptions`'s JSON line of a common frame (``conn`` and ``wall_time``
    added), when it is written whole (no longer than ``max_line``); None when the general writer must write
    it (a secret to mask, values to shorten, a value of another type, a frame that is not of a common kind).
    """
    if frame.secret_spans and not reveal_secrets:
        return None
    head = _HEADS.get((frame.direction, frame.kind))
    if head is None:  # not a common frame (or a direction of another type)
        return None
    payload = frame.payload
    record = frame.record
    if not reveal_secrets and isinstance(record, dict) and not _SECRET_KEYS.isdisjoint(record):
        return None
    index, offset, size = frame.index, frame.offset, frame.size
    if not (type(index) is int and type(offset) is int and type(size) is int):
        return None
    path, error, note = frame.path, frame.error, frame.note
    if max_line is None:
        shown = payload
    else:
        if max_line <= 0 or len(payload) > max_line:
            return None
        # As frame_to_json cuts them, for the lines written whole.
        limits = _LIMITS.get(max_line)
        if limits is None:
            limits = _LIMITS[max_line] = (hex_limit(max_line) or 0, text_limit(max_line) or 0)
            if len(_LIMITS) > 16:  # one max_line a program, as a rule
                _LIMITS.clear()
        limit, texts = limits
        shown = payload if len(payload) <= limit else payload[:limit]
        if path is not None and len(path) > texts:
            path = capped(path, texts)
        if error is not None and len(error) > texts:
            error = capped(error, texts)
        if note is not None and len(note) > texts:
            note = capped(note, texts)
    op, err = frame.op, frame.err
    if (type(op) is not int and op is not None) or (type(err) is not int and err is not None):
        return None
    # The frame's time, as the last frame's when it is the same object (the frames of one packet share it);
    # its wall time is usually that object too.  The plain version: _float(frame.time), _float(wall).
    t = frame.time
    last = _LAST_TIME[0]
    if t is last[0]:
        time = last[1]
    elif type(t) is float and t - t == 0.0:  # finite (json.dumps writes NaN and Infinity its way)
        time = repr(t)
        _LAST_TIME[0] = (t, time)
    elif t is None:
        time = "null"
    else:
        return None
    lat = frame.latency
    xid, zxid, config, disagreement = frame.xid, frame.zxid, frame.config, frame.disagreement
    esc = encode_basestring_ascii  # a str as json.dumps writes it; anything else it refuses (TypeError)
    try:
        ops = _OP_PIECES.get((op, frame.op_name)) or _op_piece(op, frame.op_name)
        errs = _ERR_PIECES.get((err, frame.err_name)) or _err_piece(err, frame.err_name)
        tail = "" if shown is payload else ', "payload_truncated": true'
        if disagreement is not None:
            tail += ', "disagreement": ' + _json(disagreement)
        text = (
            f'{head}{index}, "offset": {offset}, "time": {time}, '
            f'"xid": {xid if type(xid) is int else _null(xid)}, {ops}'
            f"{'null' if path is None else esc(path)}, {errs}"
            f'{zxid if type(zxid) is int else _null(zxid)}, "size": {size}, '
            f'"latency": {repr(lat) if type(lat) is float and lat - lat == 0.0 else _float(lat)}, '
            f'"record": {record_json(record)}, '
            f'"config": {"null" if config is None else _json(config)}, '
            f'"error": {"null" if error is None else esc(error)}, "note": {"null" if note is None else esc(note)}, '
            f'"payload": "{shown.hex()}"{tail}, "conn": {conn if type(conn) is int else _null(conn)}, '
            f'"wall_time": {time if wall is t else _float(wall)}}}'
        )
    except (_Unusual, TypeError):
        return None
    return None if max_line is not None and len(text) > max_line else text


# JSON of single values, as json.dumps writes them (ensure_ascii, ", " and ": " between items, bytes as hex
# by render.json_default); a header value of another type raises _Unusual.

#: The start of a common frame's JSON object, by its direction and kind, up to its index.
_HEADS: Final = {
    (direction, kind): f'{{"direction": "{direction}", "kind": "{kind}", "index": '
    for direction in ("client", "server")
    for kind in _COMMON_KINDS
}

#: The JSON text of a frame's op and op_name (up to its path's value), and of its err and err_name (up
#: to its zxid's value), by those values: made once for each pair met (of ints or None, and names; an
#: int's subclass is equal to an int but written otherwise, and is not taken).  The plain version writes
#: each value in the line's f-string.
_OP_PIECES: dict[tuple[int | None, object], str] = {}
_ERR_PIECES: dict[tuple[int | None, object], str] = {}
#: No more pairs than that are kept (an op code not in the op table is named by its number).
_MAX_PIECES: Final = 4096


def _op_piece(op: int | None, name: object) -> str:
    piece = f'"op": {"null" if op is None else op}, "op_name": {_text(name)}, "path": '
    if len(_OP_PIECES) < _MAX_PIECES:
        _OP_PIECES[op, name] = piece
    return piece


def _err_piece(err: int | None, name: object) -> str:
    piece = f'"err": {"null" if err is None else err}, "err_name": {_text(name)}, "zxid": '
    if len(_ERR_PIECES) < _MAX_PIECES:
        _ERR_PIECES[err, name] = piece
    return piece


def _text(value: object) -> str:
    """A str (or None) as json.dumps writes it; a value of another type is unusual."""
    if value is None:
        return "null"
    if type(value) is not str:
        raise _Unusual
    return encode_basestring_ascii(value)


#: hex_limit and text_limit of each max_line met.
_LIMITS: dict[int, tuple[int, int]] = {}

#: The last frame time written (the object) and its text.
_LAST_TIME: list[tuple[object, str]] = [(None, "null")]


def _float(value: object) -> str:
    """A float as json.dumps writes it (a finite one: json.dumps writes NaN and Infinity its way)."""
    if type(value) is float and value - value == 0.0:
        return repr(value)
    if value is None:
        return "null"
    raise _Unusual


def _null(value: object) -> str:
    """null for None; a value of another type (where the writer expects an int) is unusual."""
    if value is None:
        return "null"
    raise _Unusual
