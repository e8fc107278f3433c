"""Turn captured ZooKeeper traffic into readable records, pairing replies with requests by xid.

Sans-I/O: no sockets and no clock.  Feed the bytes each side sent, in the order they were seen, to a
:class:`ConversationDecoder` (with an optional timestamp) and get back :class:`DecodedFrame` s.  Bodies
are decoded with the construct schemas of :mod:`zkwire.schema`, not the fast codec, so the tracer
gives an independent reading of what went over the wire.

The first client frame is the ConnectRequest and the first server frame the ConnectResponse, unless
the client opened with a four-letter word (``ruok``, ``srvr``, ``mntr``...): then the server's
answer is text up to the end of the connection.  Later client frames are a RequestHeader and a
record; later server frames are a ReplyHeader and, for a successful reply, the record of the op the
matching request named.  xid -1 is a watch event, -2 a ping reply, -4 an auth reply.

A frame whose body does not decode is reported as kind ``"malformed"`` and decoding goes on with the
next frame.  A length prefix that is negative or over the maximum leaves the rest of that direction
undecodable: it is reported once, and after that the bytes are only counted.
"""

from __future__ import annotations

import dataclasses
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from . import schema
from .codec import op_name
from .constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, EventType, KeeperState, OpCode
from .errors import InvalidArgumentError, ProtocolError, error_name

__all__ = [
    "DecodedFrame",
    "ConversationDecoder",
    "FOUR_LETTER_WORDS",
    "decode_stream",
    "decode_conversation",
    "detect_side",
    "format_frame",
    "frame_to_json",
    "CLIENT",
    "SERVER",
]

CLIENT = "client"
SERVER = "server"

#: Commands the 3.8 server recognises as the first four bytes of a connection.
FOUR_LETTER_WORDS = frozenset(
    {
        b"conf", b"cons", b"crst", b"dirs", b"dump", b"envi", b"gtmk", b"ruok", b"stmk",
        b"srvr", b"srst", b"stat", b"wchc", b"wchp", b"wchs", b"mntr", b"isro", b"hash",
    }
)  # fmt: skip
_TELNET_CLOSE = b"\xff\xf4\xff\xfd"

_INT = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">ii")
_REPLY_HEADER = struct.Struct(">iqi")
_MALFORMED_PREVIEW = 64
# Ops the server answers at once, so their replies may overtake others still in the pipeline.
_OUT_OF_BAND = frozenset({OpCode.AUTH, OpCode.SASL})


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """One frame (or one four-letter-word exchange) from one direction of a conversation.

    ``record`` is the decoded body as plain values (dicts, lists, bytes; see
    :func:`zkwire.schema.to_plain`), or None when there is none.  ``payload`` is the frame without
    its length prefix; ``offset`` is where the frame (its length prefix) starts in that direction's
    byte stream.  ``secret_spans`` are (start, end) ranges of ``payload`` holding a password or
    auth credential, which :func:`format_frame` and :func:`frame_to_json` mask.
    """

    direction: str
    kind: str
    index: int
    offset: int
    size: int
    payload: bytes
    xid: int | None = None
    op: int | None = None
    op_name: str | None = None
    path: str | None = None
    err: int | None = None
    err_name: str | None = None
    zxid: int | None = None
    record: Any = None
    error: str | None = None
    note: str | None = None
    time: float | None = None
    latency: float | None = None
    secret_spans: tuple[tuple[int, int], ...] = ()


@dataclass(slots=True)
class _Pending:
    op: int
    path: str | None
    time: float | None


class _Side:
    __slots__ = ("buf", "direction", "eof", "index", "mode", "offset", "skipped", "started", "state")

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.buf = bytearray()
        self.offset = 0  # stream offset of buf[0]
        self.index = 0
        self.mode: str | None = None  # "zk", "4lw", or "text" (the server's 4lw answer)
        self.state = "handshake"  # "handshake", "frames", "broken"
        self.skipped = 0
        self.started = False
        self.eof = False


def _is_four_letter(head: bytes) -> bool:
    return head in FOUR_LETTER_WORDS or head == _TELNET_CLOSE


def _looks_like_text(head: bytes) -> bool:
    return all(32 <= b < 127 or b in (9, 10, 13) for b in head)


def _path_of(record: Any) -> str | None:
    if isinstance(record, dict):
        for key in ("path", "prefix_path"):
            value = record.get(key)
            if isinstance(value, str):
                return value
    return None


class ConversationDecoder:
    """Decodes both directions of one connection.

    The first frame of each side is taken as its connect record only if it starts with
    protocolVersion 0 (a later frame starts with a non-zero xid), so a capture that starts after the
    handshake decodes too.  ``handshake=False`` skips the connect records altogether.
    ``compiled=True`` decodes with the compiled construct schemas.  Frames longer than ``max_frame``
    break their direction, as they would break a real client or server.
    """

    def __init__(self, *, max_frame: int = DEFAULT_MAX_FRAME, handshake: bool = True, compiled: bool = False) -> None:
        self.max_frame = max_frame
        self.handshake = handshake
        self.compiled = compiled
        self._client = _Side(CLIENT)
        self._server = _Side(SERVER)
        if not handshake:
            self._client.state = self._server.state = "frames"
        self._pending: dict[int, _Pending] = {}
        self._pings: deque[float | None] = deque()
        self._four_letter_word: str | None = None

    # ------------------------------------------------------------------------------------ public

    @property
    def pending(self) -> dict[int, int]:
        """Requests not answered yet: xid to op code."""
        return {xid: p.op for xid, p in self._pending.items()}

    @property
    def undecodable_bytes(self) -> dict[str, int]:
        """Bytes per direction that could not be decoded (after a broken length prefix, or after a 4lw)."""
        return {CLIENT: self._client.skipped, SERVER: self._server.skipped}

    @property
    def client_mode(self) -> str | None:
        """The client's protocol once its first four bytes are in: "zk" or "4lw" (else None)."""
        return self._client.mode

    def feed(
        self, direction: str, data: bytes | bytearray | memoryview, now: float | None = None
    ) -> list[DecodedFrame]:
        if direction == CLIENT:
            return self.feed_client(data, now)
        if direction == SERVER:
            return self.feed_server(data, now)
        raise InvalidArgumentError(f"direction must be 'client' or 'server', not {direction!r}")

    def eof(self, direction: str, now: float | None = None) -> list[DecodedFrame]:
        if direction == CLIENT:
            return self.eof_client(now)
        if direction == SERVER:
            return self.eof_server(now)
        raise InvalidArgumentError(f"direction must be 'client' or 'server', not {direction!r}")

    def feed_client(self, data: bytes | bytearray | memoryview, now: float | None = None) -> list[DecodedFrame]:
        """Bytes the client sent; returns the frames they complete."""
        side = self._client
        if not self._accept(side, data):
            return []
        if side.mode is None:
            if len(side.buf) < 4:
                return []
            side.mode = "4lw" if _is_four_letter(bytes(side.buf[:4])) else "zk"
        if side.mode == "4lw":
            return self._client_four_letter(side, now)
        return self._split(side, now)

    def feed_server(self, data: bytes | bytearray | memoryview, now: float | None = None) -> list[DecodedFrame]:
        """Bytes the server sent; returns the frames they complete."""
        side = self._server
        if not self._accept(side, data):
            return []
        if side.mode is None:
            if self._client.mode == "4lw":
                side.mode = "text"
            elif self._client.mode == "zk":
                side.mode = "zk"
            elif len(side.buf) >= 4:
                # Only the server's side is known: a 4lw answer is text, whose first 4 bytes are no valid length.
                n = _INT.unpack_from(side.buf)[0]
                side.mode = "zk" if 0 <= n <= self.max_frame else "text"
            else:
                return []
        if side.mode == "text":
            return []  # the answer to a four-letter word runs to the end of the connection
        return self._split(side, now)

    def eof_client(self, now: float | None = None) -> list[DecodedFrame]:
        """The client closed its side; reports an incomplete last frame, if any."""
        return self._finish(self._client, now)

    def eof_server(self, now: float | None = None) -> list[DecodedFrame]:
        """The server closed its side; this completes a four-letter-word answer."""
        side = self._server
        if side.mode == "text" and not side.eof:
            side.eof = True
            raw = bytes(side.buf)
            side.buf.clear()
            frame = DecodedFrame(
                direction=SERVER,
                kind="four_letter",
                index=side.index,
                offset=side.offset,
                size=len(raw),
                payload=raw,
                op_name=self._four_letter_word,
                record={"text": raw.decode("utf-8", "replace")},
                time=now,
            )
            side.index += 1
            side.offset += len(raw)
            return [frame]
        return self._finish(side, now)

    def finish(self, now: float | None = None) -> list[DecodedFrame]:
        """Both sides closed."""
        return self.eof_client(now) + self.eof_server(now)

    # ----------------------------------------------------------------------------------- framing

    def _accept(self, side: _Side, data: bytes | bytearray | memoryview) -> bool:
        if not data:
            return False
        if side.state == "broken" or side.eof:
            side.skipped += len(data)
            return False
        side.buf += data
        return True

    def _finish(self, side: _Side, now: float | None) -> list[DecodedFrame]:
        if side.eof:
            return []
        side.eof = True
        left = len(side.buf)
        if not left or side.state == "broken":
            return []
        if side.mode == "4lw":  # an incomplete stmk mask
            side.skipped += left
            side.buf.clear()
            return []
        raw = bytes(side.buf)
        side.buf.clear()
        side.skipped += left
        if left < 4:
            message = f"connection closed after {left} of the 4 bytes of a length prefix"
        else:
            n = _INT.unpack_from(raw)[0]
            message = f"connection closed inside a frame: {left - 4} of {n} payload bytes"
        frame = self._malformed(side, raw[:_MALFORMED_PREVIEW], side.offset, message, now)
        side.offset += left
        return [frame]

    def _split(self, side: _Side, now: float | None) -> list[DecodedFrame]:
        buf = side.buf
        frames: list[DecodedFrame] = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            n = _INT.unpack_from(buf, pos)[0]
            if n < 0 or n > self.max_frame:
                head = bytes(buf[pos : pos + 4])
                hint = " (looks like text: not a ZooKeeper stream?)" if _looks_like_text(head) else ""
                message = f"frame length {n} outside 0..{self.max_frame}{hint}; rest of the stream skipped"
                preview = bytes(buf[pos : pos + _MALFORMED_PREVIEW])
                frames.append(self._malformed(side, preview, side.offset + pos, message, now))
                side.state = "broken"
                side.skipped += end - pos
                pos = end
                break
            stop = pos + 4 + n
            if stop > end:
                break
            payload = bytes(buf[pos + 4 : stop])
            offset = side.offset + pos
            if side.direction == CLIENT:
                frames.append(self._client_frame(side, payload, offset, now))
            else:
                frames.append(self._server_frame(side, payload, offset, now))
            pos = stop
        del buf[:pos]
        side.offset += pos
        return frames

    def _frame(
        self, side: _Side, kind: str, payload: bytes, offset: int, now: float | None, **fields: Any
    ) -> DecodedFrame:
        frame = DecodedFrame(
            direction=side.direction,
            kind=kind,
            index=side.index,
            offset=offset,
            size=len(payload),
            payload=payload,
            time=now,
            **fields,
        )
        side.index += 1
        return frame

    def _malformed(
        self, side: _Side, payload: bytes, offset: int, error: str, now: float | None, **fields: Any
    ) -> DecodedFrame:
        return self._frame(side, "malformed", payload, offset, now, error=error, **fields)

    # ------------------------------------------------------------------------------ client side

    def _client_four_letter(self, side: _Side, now: float | None) -> list[DecodedFrame]:
        if side.started:
            side.skipped += len(side.buf)
            side.buf.clear()
            return []
        word = bytes(side.buf[:4])
        record: dict[str, Any] = {"command": word.decode("latin-1") if word != _TELNET_CLOSE else "telnet-close"}
        take = 4
        if word == b"stmk":  # set trace mask: an 8-byte mask follows
            if len(side.buf) < 12:
                return []
            record["mask"] = struct.unpack_from(">q", side.buf, 4)[0]
            take = 12
        side.started = True
        self._four_letter_word = record["command"]
        raw = bytes(side.buf[:take])
        del side.buf[:take]
        frame = self._frame(side, "four_letter", raw, 0, now, op_name=record["command"], record=record)
        side.offset = take
        side.skipped += len(side.buf)
        side.buf.clear()
        return [frame]

    def _client_frame(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        if side.state == "handshake":
            side.state = "frames"
            if not _starts_mid_conversation(payload, 8):
                return self._connect_request(side, payload, offset, now)
            return _with_note(self._client_frame(side, payload, offset, now), _MID_CONVERSATION)
        if len(payload) < 8:
            return self._malformed(side, payload, offset, f"{len(payload)} bytes: too short for a RequestHeader", now)
        xid, op = _REQUEST_HEADER.unpack_from(payload)
        fields: dict[str, Any] = {"xid": xid, "op": op, "op_name": op_name(op)}
        record: Any = None
        error: str | None = None
        try:
            parsed = schema.parse_request(payload, compiled=self.compiled)
            record = schema.to_plain(parsed["body"])
        except ProtocolError as e:
            error = str(e)
        path = _path_of(record)
        notes: list[str] = []
        if op == OpCode.PING:
            kind = "ping"
            self._pings.append(now)
        else:
            kind = "auth" if op == OpCode.AUTH else "request"
            if xid in self._pending:
                notes.append(f"xid {xid} reused while a {op_name(self._pending[xid].op)} with it is pending")
            self._pending[xid] = _Pending(op, path, now)
        spans: tuple[tuple[int, int], ...] = ()
        if op == OpCode.AUTH and isinstance(record, dict) and isinstance(record.get("auth"), bytes):
            spans = ((len(payload) - len(record["auth"]), len(payload)),)
        if op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, dict):
            notes.append("ops: " + ", ".join(op_name(o["op"]) + _path_suffix(o["request"]) for o in record["ops"]))
        note = "; ".join(notes) or None
        if error is not None:
            return self._malformed(side, payload, offset, error, now, note=note, secret_spans=spans, **fields)
        return self._frame(
            side, kind, payload, offset, now, path=path, record=record, note=note, secret_spans=spans, **fields
        )

    def _connect_request(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        try:
            record = schema.to_plain(schema.parse_connect_request(payload, compiled=self.compiled))
        except ProtocolError as e:
            return self._malformed(side, payload, offset, f"ConnectRequest: {e}", now)
        sid = record["session_id"]
        note = "new session" if sid == 0 else f"reattach session 0x{sid & 0xFFFFFFFFFFFFFFFF:x}"
        return self._frame(
            side,
            "connect",
            payload,
            offset,
            now,
            op_name="connect",
            zxid=record["last_zxid_seen"],
            record=record,
            note=note,
            secret_spans=_passwd_span(record, 28),
        )

    # ------------------------------------------------------------------------------ server side

    def _server_frame(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        if side.state == "handshake":
            side.state = "frames"
            if not _starts_mid_conversation(payload, 16):
                return self._connect_response(side, payload, offset, now)
            return _with_note(self._server_frame(side, payload, offset, now), _MID_CONVERSATION)
        if len(payload) < 16:
            return self._malformed(side, payload, offset, f"{len(payload)} bytes: too short for a ReplyHeader", now)
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload)
        fields: dict[str, Any] = {"xid": xid, "zxid": zxid, "err": err, "err_name": error_name(err)}
        notes: list[str] = []
        latency: float | None = None
        path: str | None = None
        if xid == WATCH_XID:
            kind, op = "event", int(OpCode.NOTIFICATION)
        elif xid == PING_XID:
            kind, op = "ping", int(OpCode.PING)
            if self._pings:
                sent = self._pings.popleft()
                latency = _elapsed(sent, now)
            else:
                notes.append("no ping outstanding")
        else:
            kind = "auth" if xid == AUTH_XID else "reply"
            oldest = self._oldest_in_band()
            pending = self._pending.pop(xid, None)
            if pending is None:
                if xid == AUTH_XID:
                    op = int(OpCode.AUTH)
                else:
                    notes.append(f"no pending request with xid {xid}")
                    if err == 0 and len(payload) > 16:
                        notes.append(f"{len(payload) - 16} body bytes not decoded")
                    return self._frame(
                        side, kind, payload, offset, now, op=None, op_name=None, note="; ".join(notes), **fields
                    )
            else:
                op, path = pending.op, pending.path
                latency = _elapsed(pending.time, now)
                if op not in _OUT_OF_BAND and oldest is not None and oldest != xid:
                    notes.append(f"out of order: xid {oldest} was sent earlier and is still pending")
        fields.update(op=op, op_name=op_name(op), path=path, latency=latency)
        try:
            parsed = schema.parse_reply(op, payload, compiled=self.compiled)
        except ProtocolError as e:
            return self._malformed(side, payload, offset, str(e), now, note="; ".join(notes) or None, **fields)
        record = schema.to_plain(parsed["body"])
        if kind == "event":
            fields["path"] = _path_of(record)
            notes.insert(0, f"{_enum_name(EventType, record['type'])} {_enum_name(KeeperState, record['state'])}")
        elif op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, dict):
            notes.append(_multi_summary(record["results"]))
        return self._frame(side, kind, payload, offset, now, record=record, note="; ".join(notes) or None, **fields)

    def _connect_response(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        try:
            record = schema.to_plain(schema.parse_connect_response(payload, compiled=self.compiled))
        except ProtocolError as e:
            return self._malformed(side, payload, offset, f"ConnectResponse: {e}", now)
        if record["timeout"] <= 0:
            note = "session expired or rejected"
        else:
            sid = record["session_id"] & 0xFFFFFFFFFFFFFFFF
            note = f"session 0x{sid:x}, timeout {record['timeout']} ms" + (", read-only" if record["read_only"] else "")
        return self._frame(
            side,
            "connect_response",
            payload,
            offset,
            now,
            op_name="connect",
            record=record,
            note=note,
            secret_spans=_passwd_span(record, 20),
        )

    def _oldest_in_band(self) -> int | None:
        # dicts keep insertion order: the first pending request that is not auth/sasl is the oldest.
        for xid, p in self._pending.items():
            if p.op not in _OUT_OF_BAND:
                return xid
        return None


_MID_CONVERSATION = "no connect handshake: the capture starts mid-conversation"


def _starts_mid_conversation(payload: bytes, header_size: int) -> bool:
    # The connect records open with protocolVersion 0; later frames open with an xid, which is never 0.
    return len(payload) >= header_size and payload[:4] != b"\x00\x00\x00\x00"


def _with_note(frame: DecodedFrame, note: str) -> DecodedFrame:
    return dataclasses.replace(frame, note=note if frame.note is None else f"{note}; {frame.note}")


def _elapsed(sent: float | None, now: float | None) -> float | None:
    return None if sent is None or now is None else now - sent


def _passwd_span(record: dict[str, Any], start: int) -> tuple[tuple[int, int], ...]:
    pw = record.get("passwd")
    return ((start, start + len(pw)),) if isinstance(pw, bytes) and pw else ()


def _path_suffix(request: Any) -> str:
    path = _path_of(request)
    return f" {path}" if path is not None else ""


def _enum_name(enum: Any, value: int) -> str:
    """``NodeDataChanged`` style name of an EventType / KeeperState value, or the number."""
    try:
        name = str(enum(value).name)
    except ValueError:
        return str(value)
    return "".join(p.capitalize() for p in name.split("_"))


def _multi_summary(results: list[dict[str, Any]]) -> str:
    parts = []
    failed = 0
    for r in results:
        if r["op"] == OpCode.ERROR:
            if r["err"] != 0:
                failed += 1
            parts.append(f"error {error_name(r['err'])}")
        else:
            parts.append(op_name(r["op"]) + _path_suffix(r["body"]))
    head = f"{failed} of {len(results)} ops failed" if failed else f"{len(results)} ops ok"
    return f"{head}: " + ", ".join(parts) if parts else head


# ------------------------------------------------------------------------------------------- helpers


def detect_side(data: bytes | bytearray | memoryview) -> str:
    """Which side sent ``data``: the client if it opens with a ConnectRequest (length 44 or 45 and
    protocolVersion 0) or a four-letter word, else the server."""
    head = bytes(data[:8])
    if len(head) >= 4 and _is_four_letter(head[:4]):
        return CLIENT
    if len(head) == 8:
        n, proto = struct.unpack(">ii", head)
        if proto == 0 and n in (44, 45):
            return CLIENT
    return SERVER


def decode_stream(
    data: bytes | bytearray | memoryview,
    side: str = "auto",
    *,
    handshake: bool = True,
    max_frame: int = DEFAULT_MAX_FRAME,
    compiled: bool = False,
) -> list[DecodedFrame]:
    """Decode one captured direction of a connection (``side`` "client", "server" or "auto").

    A server stream decoded on its own has no requests to pair with, so reply bodies stay undecoded
    (only headers are shown); use :func:`decode_conversation` when both sides were captured.
    """
    if side == "auto":
        side = detect_side(data)
    if side not in (CLIENT, SERVER):
        raise InvalidArgumentError(f"side must be 'client', 'server' or 'auto', not {side!r}")
    decoder = ConversationDecoder(max_frame=max_frame, handshake=handshake, compiled=compiled)
    frames = decoder.feed(side, data)
    return frames + decoder.eof(side)


def decode_conversation(
    client: bytes | bytearray | memoryview,
    server: bytes | bytearray | memoryview,
    *,
    handshake: bool = True,
    max_frame: int = DEFAULT_MAX_FRAME,
    compiled: bool = False,
) -> list[DecodedFrame]:
    """Decode both captured directions of one connection: the client's frames, then the server's.

    Without timestamps the interleaving is unknown, but replies pair with requests by xid, so
    feeding all of the client's bytes first decodes every reply body.
    """
    decoder = ConversationDecoder(max_frame=max_frame, handshake=handshake, compiled=compiled)
    frames = decoder.feed_client(client)
    frames += decoder.feed_server(server)
    return frames + decoder.finish()


def _hidden(n: int) -> str:
    return f"<{n} bytes hidden>"


def _shown_record(frame: DecodedFrame, reveal_secrets: bool) -> Any:
    record = frame.record
    if reveal_secrets or not frame.secret_spans or not isinstance(record, dict):
        return record
    shown = dict(record)
    for key in ("passwd", "auth"):
        value = shown.get(key)
        if isinstance(value, bytes):
            shown[key] = _hidden(len(value))
    return shown


def _masked(frame: DecodedFrame, reveal_secrets: bool) -> list[int | None]:
    """Payload bytes, None where a secret is."""
    out: list[int | None] = list(frame.payload)
    if not reveal_secrets:
        for start, end in frame.secret_spans:
            for i in range(max(start, 0), min(end, len(out))):
                out[i] = None
    return out


def _hexdump(frame: DecodedFrame, reveal_secrets: bool, indent: str = "    ") -> list[str]:
    data = _masked(frame, reveal_secrets)
    lines = []
    for base in range(0, len(data), 16):
        chunk = data[base : base + 16]
        hexes = " ".join("**" if b is None else f"{b:02x}" for b in chunk)
        text = "".join("*" if b is None else (chr(b) if 32 <= b < 127 else ".") for b in chunk)
        lines.append(f"{indent}{base:04x}  {hexes:<47}  |{text}|")
    return lines


def format_frame(frame: DecodedFrame, verbose: bool = False, *, reveal_secrets: bool = False) -> str:
    """One line: time, direction, kind, xid, op, path, error, zxid, size, latency, notes.

    ``verbose`` adds the decoded record and a hex dump of the payload (passwords and auth
    credentials masked unless ``reveal_secrets``).
    """
    parts = ["-" if frame.time is None else f"{frame.time:.6f}", "->" if frame.direction == CLIENT else "<-"]
    parts.append(f"{frame.kind:<16}")
    if frame.xid is not None:
        parts.append(f"xid={frame.xid}")
    if frame.op_name is not None:
        parts.append(frame.op_name)
    if frame.path is not None:
        parts.append(repr(frame.path) if frame.path == "" or any(c.isspace() for c in frame.path) else frame.path)
    if frame.err is not None and (frame.err != 0 or frame.kind not in ("event", "ping")):
        parts.append(frame.err_name or str(frame.err))
    if frame.zxid is not None:
        parts.append(f"zxid=0x{frame.zxid & 0xFFFFFFFFFFFFFFFF:x}" if frame.zxid >= 0 else f"zxid={frame.zxid}")
    parts.append(f"len={frame.size}+4" if frame.kind != "four_letter" else f"len={frame.size}")
    if frame.latency is not None:
        parts.append(f"{frame.latency * 1000:.3f}ms")
    if frame.kind == "four_letter" and isinstance(frame.record, dict) and "text" in frame.record:
        text = frame.record["text"].strip().splitlines()
        parts.append(repr(text[0] + (" ..." if len(text) > 1 else "")) if text else "''")
    if frame.note:
        parts.append(f"[{frame.note}]")
    if frame.error:
        parts.append(f"ERROR: {frame.error}")
    line = " ".join(parts)
    if not verbose:
        return line
    lines = [line]
    if frame.record is not None:
        lines.append(f"    record: {_shown_record(frame, reveal_secrets)!r}")
    lines.extend(_hexdump(frame, reveal_secrets))
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def frame_to_json(frame: DecodedFrame, *, reveal_secrets: bool = False) -> dict[str, Any]:
    """The frame as JSON-ready values.  Bytes become hex strings; masked secret bytes are ``**``."""
    payload_hex = "".join("**" if b is None else f"{b:02x}" for b in _masked(frame, reveal_secrets))
    return {
        "direction": frame.direction,
        "kind": frame.kind,
        "index": frame.index,
        "offset": frame.offset,
        "time": frame.time,
        "xid": frame.xid,
        "op": frame.op,
        "op_name": frame.op_name,
        "path": frame.path,
        "err": frame.err,
        "err_name": frame.err_name,
        "zxid": frame.zxid,
        "size": frame.size,
        "latency": frame.latency,
        "record": _jsonable(_shown_record(frame, reveal_secrets)),
        "error": frame.error,
        "note": frame.note,
        "payload": payload_hex,
    }
