"""The tracer's two views of a :class:`~zkwire.trace.frames.DecodedFrame`: one line of text (with the
record and a hex dump when verbose), or a JSON-ready object.

Secrets are masked by the frame's spans unless revealed, control characters from the wire are escaped,
and long values are cut to a line budget, saying how much was left out.
"""

from __future__ import annotations

import re
from typing import Any

from ..constants import OpCode
from ..terminal import escape_controls
from .frames import CLIENT, DecodedFrame, format_zxid

__all__ = ["capped", "format_frame", "frame_to_json", "format_zxid", "json_default"]


_SPACE = re.compile(r"\s")


def _hidden(n: int) -> str:
    return f"<{n} bytes hidden>"


#: Record keys whose values are secrets (masked unless revealed).
SECRET_KEYS: tuple[str, ...] = ("passwd", "auth", "token")


def _shown_record(frame: DecodedFrame, reveal_secrets: bool) -> Any:
    record = frame.record
    if reveal_secrets or not isinstance(record, dict) or not any(k in record for k in SECRET_KEYS):
        return record
    shown = dict(record)
    for key in SECRET_KEYS:
        value = shown.get(key)
        if isinstance(value, bytes):
            shown[key] = _hidden(len(value))
    return shown


def _masked(frame: DecodedFrame, reveal_secrets: bool, limit: int | None = None) -> list[int | None]:
    """Payload bytes (the first ``limit`` of them), None where a secret is."""
    out: list[int | None] = list(frame.payload if limit is None else frame.payload[:limit])
    if not reveal_secrets:
        for start, end in frame.secret_spans:
            for i in range(max(start, 0), min(end, len(out))):
                out[i] = None
    return out


def _masked_hex(frame: DecodedFrame, reveal_secrets: bool, limit: int | None) -> str:
    """The payload (its first ``limit`` bytes) in hex, ``**`` for each byte of a secret."""
    shown = frame.payload if limit is None else frame.payload[:limit]
    if reveal_secrets or not frame.secret_spans:
        return shown.hex()
    hidden = bytearray(len(shown))  # 1 where a secret is
    for start, end in frame.secret_spans:
        start, end = max(start, 0), min(end, len(shown))
        if end > start:
            hidden[start:end] = b"\x01" * (end - start)
    parts: list[str] = []
    pos = 0
    while pos < len(shown):
        secret = hidden[pos]
        stop = hidden.find(b"\x00" if secret else b"\x01", pos)
        stop = len(shown) if stop < 0 else stop
        parts.append("**" * (stop - pos) if secret else shown[pos:stop].hex())
        pos = stop
    return "".join(parts)


def _hexdump(frame: DecodedFrame, reveal_secrets: bool, limit: int | None = None, indent: str = "    ") -> list[str]:
    data = _masked(frame, reveal_secrets, limit)
    lines = []
    for base in range(0, len(data), 16):
        chunk = data[base : base + 16]
        hexes = " ".join("**" if b is None else f"{b:02x}" for b in chunk)
        text = "".join("*" if b is None else (chr(b) if 32 <= b < 127 else ".") for b in chunk)
        lines.append(f"{indent}{base:04x}  {hexes:<47}  |{text}|")
    if len(data) < len(frame.payload):
        lines.append(f"{indent}... {len(frame.payload) - len(data)} more bytes")
    return lines


class _Cut:
    """The beginning of a long str or bytes value, shown with how much was left out."""

    __slots__ = ("head", "more")

    def __init__(self, head: str | bytes, more: int) -> None:
        self.head = head
        self.more = more

    def __repr__(self) -> str:
        unit = "bytes" if isinstance(self.head, bytes) else "characters"
        return f"{self.head!r}...(+{self.more} {unit})"

    def json(self) -> str:
        head = self.head.hex() if isinstance(self.head, bytes) else self.head
        unit = "bytes" if isinstance(self.head, bytes) else "characters"
        return f"{head}...(+{self.more} {unit})"


def _abridged(value: Any, budget: int) -> Any:
    """``value`` (plain dicts, lists, str, bytes, numbers) shortened so that its repr stays near ``budget``
    characters: long strings cut, lists and dicts ended with a count of what was left out."""
    left = [budget]

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            out: dict[Any, Any] = {}
            for k, x in v.items():
                if left[0] <= 0:
                    out["..."] = f"{len(v) - len(out)} more"
                    break
                left[0] -= len(str(k)) + 4
                out[k] = walk(x)
            return out
        if isinstance(v, list | tuple):
            items: list[Any] = []
            for i, x in enumerate(v):
                if left[0] <= 0:
                    items.append(f"... {len(v) - i} more")
                    break
                items.append(walk(x))
            return items
        if isinstance(v, str | bytes):
            room = max(left[0], 16) // (4 if isinstance(v, bytes) else 1)
            shown: Any = v if len(v) <= room else _Cut(v[:room], len(v) - room)
            left[0] -= len(repr(shown))
            return shown
        left[0] -= 8
        return v

    return walk(value)


def capped(line: str, limit: int | None) -> str:
    """``line`` cut to about ``limit`` characters, saying how many were left out."""
    if not limit or len(line) <= limit:
        return line
    keep = max(limit - 32, 0)
    return line[:keep] + f" ...(+{len(line) - keep} characters)" if keep else line[:limit]


def time_column(frame: DecodedFrame) -> str:
    """The first column of :func:`format_frame`'s line: the frame's time, to the microsecond."""
    return "-" if frame.time is None else f"{frame.time:.6f}"


def hex_limit(max_line: int | None) -> int | None:
    """How many bytes of the payload are shown under ``max_line`` (None: all)."""
    return None if not max_line else max(256, max_line // 8)


def text_limit(max_line: int | None) -> int | None:
    """How many characters of a JSON object's path, error and note are shown under ``max_line`` (None: all)."""
    return None if not max_line else max(64, max_line // 8)


def format_frame(
    frame: DecodedFrame, verbose: bool = False, *, reveal_secrets: bool = False, max_line: int | None = None
) -> str:
    """One line: time, direction, kind, xid, op, path, error, zxid, size, latency, notes.

    ``verbose`` adds the decoded record and a hex dump of the payload (passwords and auth
    credentials masked unless ``reveal_secrets``).  Control characters from the wire (in paths, notes,
    four-letter-word answers) are shown escaped (:func:`zkwire.terminal.escape_controls`).  With
    ``max_line`` no line is longer than that: long values are cut (saying how much was left out) and the
    hex dump stops after ``max_line // 8`` bytes (256 at least).
    """
    parts = [time_column(frame), "->" if frame.direction == CLIENT else "<-"]
    parts.append(f"{frame.kind:<16}")
    if frame.xid is not None:
        parts.append(f"xid={frame.xid}")
    if frame.op_name is not None:
        parts.append(frame.op_name)
    if frame.path is not None:
        path = capped(frame.path, max_line and max_line // 2)
        parts.append(repr(path) if path == "" or _SPACE.search(path) else path)
    if frame.err is not None and (frame.err != 0 or frame.kind not in ("event", "ping")):
        parts.append("FAILED" if failed_multi(frame) else frame.err_name or str(frame.err))
    if frame.zxid is not None:
        parts.append(f"zxid={format_zxid(frame.zxid)}")
    parts.append(f"len={frame.size}+4" if frame.kind not in ("four_letter", "skipped") else f"len={frame.size}")
    if frame.latency is not None:
        parts.append(f"{frame.latency * 1000:.3f}ms")
    if frame.kind == "four_letter" and isinstance(frame.record, dict) and "text" in frame.record:
        text = frame.record["text"].strip().splitlines()
        parts.append(repr(capped(text[0], max_line) + (" ..." if len(text) > 1 else "")) if text else "''")
    if frame.note:
        parts.append(f"[{frame.note}]")
    if frame.error:
        parts.append(f"ERROR: {frame.error}")
    if frame.disagreement:
        parts.append(f"VERIFY: {frame.disagreement}")
    line = capped(escape_controls(" ".join(parts)), max_line)
    if not verbose:
        return line
    lines = [line]
    if frame.record is not None:
        record = _zxids_in_hex(_shown_record(frame, reveal_secrets))
        if max_line:
            record = _abridged(record, max_line)
        lines.append(capped(escape_controls(f"    record: {record!r}"), max_line))
    lines.extend(_hexdump(frame, reveal_secrets, hex_limit(max_line)))
    return "\n".join(lines)


def failed_multi(frame: DecodedFrame) -> bool:
    """A multi's reply with err 0 in its header but a failed operation in its results."""
    record = frame.record
    if frame.kind != "reply" or frame.op not in (OpCode.MULTI, OpCode.MULTI_READ) or not isinstance(record, dict):
        return False
    return any(r["op"] == OpCode.ERROR and r["err"] not in (0, -2) for r in record.get("results", ()))


class _Zxid(int):
    """A zxid in a record, shown in the one notation of the tracer."""

    def __repr__(self) -> str:
        return format_zxid(int(self))


def _zxids_in_hex(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _Zxid(v) if isinstance(v, int) and not isinstance(v, bool) and "zxid" in k else _zxids_in_hex(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_zxids_in_hex(v) for v in value]
    return value


_SCALARS = frozenset({int, str, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, _Cut):
        return value.json()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


#: An upper bound of the JSON characters of a record per byte of its encoding: a Stat's 68 bytes make
#: about 300 characters, an empty string's 4 bytes 4, a control character in a string 6.
_JSON_GROWTH = 8


def json_default(value: Any) -> Any:
    """``default`` for :func:`json.dumps` of :func:`frame_to_json` (``jsonable=False``)'s objects: bytes as
    hex, a shortened value as its text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, _Cut):
        return value.json()
    raise TypeError(f"{type(value).__name__} is not JSON")


def frame_to_json(
    frame: DecodedFrame,
    *,
    reveal_secrets: bool = False,
    max_line: int | None = None,
    jsonable: bool = True,
    shorten: bool | None = None,
) -> dict[str, Any]:
    """The frame as JSON-ready values.  Bytes become hex strings; masked secret bytes are ``**``;
    ``config`` is the frame's :attr:`~zkwire.trace.frames.DecodedFrame.config` (or null).
    ``jsonable=False`` leaves the record's values as they are, for :func:`json.dumps` with
    :func:`json_default` (which converts them as it writes, without a walk of its own).  ``shorten``:
    whether the record and config are shortened to the budget (None: when the frame is long enough that
    they might pass it; the other values are cut in any case).

    With ``max_line``, the values are shortened so that the object's JSON stays near that many
    characters: the payload stops after ``max_line // 8`` bytes (``payload_truncated`` is then true),
    long strings and lists are cut (saying how much was left out).
    """
    limit = hex_limit(max_line)
    payload_hex = _masked_hex(frame, reveal_secrets, limit)
    record = _shown_record(frame, reveal_secrets)
    texts = text_limit(max_line)
    # A record holds no more than _JSON_GROWTH characters of JSON per byte of its frame: a small frame's
    # record fits the budget whole, and need not be walked to be shortened.
    budget = (max_line or 0) // 4
    abridge = budget > 0 and (len(frame.payload) * _JSON_GROWTH > budget if shorten is None else shorten)
    obj = {
        "direction": frame.direction,
        "kind": frame.kind,
        "index": frame.index,
        "offset": frame.offset,
        "time": frame.time,
        "xid": frame.xid,
        "op": frame.op,
        "op_name": frame.op_name,
        "path": frame.path if frame.path is None else capped(frame.path, texts),
        "err": frame.err,
        "err_name": frame.err_name,
        "zxid": frame.zxid,
        "size": frame.size,
        "latency": frame.latency,
        "record": _abridged(record, budget) if abridge else record,
        "config": _abridged(frame.config, budget) if abridge else frame.config,
        "error": frame.error if frame.error is None else capped(frame.error, texts),
        "note": frame.note if frame.note is None else capped(frame.note, texts),
        "payload": payload_hex,
    }
    if limit is not None and len(frame.payload) > limit:
        obj["payload_truncated"] = True
    if frame.disagreement is not None:
        obj["disagreement"] = frame.disagreement
    if jsonable:
        obj["record"] = _jsonable(obj["record"])
        obj["config"] = _jsonable(obj["config"])
    return obj
