"""Turn captured ZooKeeper traffic into readable records, pairing replies with requests by xid.

Sans-I/O: no sockets and no clock.  Feed the bytes each side sent, in the order they were seen, to a
:class:`ConversationDecoder` (with an optional timestamp) and get back :class:`DecodedFrame` s.  Bodies
are decoded with the construct schemas of :mod:`zkwire.trace.schema`, not the fast codec, so the tracer
gives an independent reading of what went over the wire.

The first client frame is the ConnectRequest and the first server frame the ConnectResponse, unless
the client opened with a four-letter word (``ruok``, ``srvr``, ``mntr``...): then the server's
answer is text up to the end of the connection.  Later client frames are a RequestHeader and a
record; later server frames are a ReplyHeader and, for a successful reply, the record of the op the
matching request named.  xid -1 is a watch event, -2 a ping reply, -4 an auth reply.

A frame whose body does not decode is reported as kind ``"malformed"`` and decoding goes on with the
next frame.  Secrets (session passwords, auth credentials, SASL tokens) are located by the layout of
their frame, not by decoding it: a frame that is cut short, carries a trailing byte or holds a length
field that does not fit still has them masked (from where the secret starts to the end of what is
shown, when its extent cannot be trusted).  A length prefix that is negative or over the maximum
leaves the rest of that direction undecodable: it is reported once, and after that the bytes are only counted.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, CreateMode, EventType, KeeperState, OpCode
from ..errors import InvalidArgumentError, ProtocolError, error_name
from ..protocol.codec import op_name
from ..protocol.framing import LENGTH as _INT
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.framing import REQUEST_HEADER as _REQUEST_HEADER
from ..terminal import escape_controls
from . import schema

__all__ = [
    "DecodedFrame",
    "ConversationDecoder",
    "FOUR_LETTER_WORDS",
    "decode_stream",
    "decode_conversation",
    "detect_side",
    "capped",
    "secret_spans",
    "format_frame",
    "frame_to_json",
    "format_zxid",
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

_MALFORMED_PREVIEW = 64
# Ops the server answers at once, so their replies may overtake others still in the pipeline.
_OUT_OF_BAND = frozenset({OpCode.AUTH, OpCode.SASL})


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """One frame (or one four-letter-word exchange) from one direction of a conversation.

    ``record`` is the decoded body as plain values (dicts, lists, bytes; see
    :func:`zkwire.trace.schema.to_plain`), or None when there is none.  ``payload`` is the frame without
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
    ops: tuple[str, ...] = ()  # a multi's operations, as "create /a"


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
        #: Server bytes were skipped: requests answered in them are dropped at the next paired reply.
        self._server_gap = False
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
                text = not 0 <= n <= self.max_frame and _looks_like_text(bytes(side.buf[:4]))
                side.mode = "text" if text else "zk"
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

    def skip(
        self, direction: str, nbytes: int, now: float | None = None, *, reason: str = "not decoded"
    ) -> list[DecodedFrame]:
        """``nbytes`` of ``direction`` went by without being fed; the next bytes fed start a frame.

        What was buffered of an incomplete frame is dropped with them.  Returns one frame of kind
        ``"skipped"`` (its ``size`` is every byte dropped, ``note`` says ``reason``), or nothing when the
        direction was no longer decodable anyway.  Replies to requests whose replies were skipped are
        forgotten when a later reply pairs; the replies to skipped requests show as unpaired.
        """
        side = self._client if direction == CLIENT else self._server if direction == SERVER else None
        if side is None:
            raise ValueError(f"direction must be 'client' or 'server', not {direction!r}")
        if nbytes < 0:
            raise ValueError(f"cannot skip {nbytes} bytes")
        dropped = len(side.buf) + nbytes
        if side.state == "broken" or side.eof or side.mode in ("4lw", "text") or not dropped:
            side.skipped += nbytes
            return []
        side.buf.clear()
        side.mode = "zk"
        side.state = "frames"
        side.skipped += dropped
        if side.direction == SERVER:
            self._server_gap = True
            self._pings.clear()
        frame = self._frame(side, "skipped", b"", side.offset, now, note=f"{dropped} bytes {reason}")
        frame = dataclasses.replace(frame, size=dropped)
        side.offset += dropped
        return [frame]

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
        spans: tuple[tuple[int, int], ...] = ()
        if left < 4:
            message = f"connection closed after {left} of the 4 bytes of a length prefix"
        else:
            n = _INT.unpack_from(raw)[0]
            message = f"connection closed inside a frame: {left - 4} of {n} payload bytes"
            spans = _shifted(self._secret_spans_of(side, raw[4:], exact=False, full_length=n), 4)
        preview = raw if spans else raw[:_MALFORMED_PREVIEW]
        frame = self._malformed(side, preview, side.offset, message, now, secret_spans=spans)
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
                spans = _shifted(self._secret_spans_of(side, preview[4:], exact=False), 4)
                frames.append(self._malformed(side, preview, side.offset + pos, message, now, secret_spans=spans))
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
        if fields.get("secret_spans"):
            error = _BYTE_VALUE.sub("a byte", error)  # a decoding error may quote a byte of the secret
        return self._frame(side, "malformed", payload, offset, now, error=error, **fields)

    def _secret_spans_of(
        self, side: _Side, payload: bytes, *, exact: bool, full_length: int | None = None
    ) -> tuple[tuple[int, int], ...]:
        """Secret spans of a (possibly partial) payload that is the next frame of ``side``."""
        first = side.state == "handshake"
        # A frame opening with 0 (a connect record's protocolVersion, never a request's xid) is taken for
        # a handshake even where none was expected.
        zero = payload[:4] == b"\x00\x00\x00\x00"
        if side.direction == CLIENT:
            if (first and not _starts_mid_conversation(payload, 8)) or zero:
                role: str | None = "connect_request"
            else:
                role = _request_role(payload)
        elif (first and not _starts_mid_conversation(payload, 16)) or zero:
            role = "connect_response"
        else:
            role = None
            if len(payload) >= 4:
                pending = self._pending.get(_INT.unpack_from(payload)[0])
                if pending is not None and pending.op == OpCode.SASL:
                    role = "sasl_reply"
        return secret_spans(role, payload, exact=exact, full_length=full_length)

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
            self._pending[xid] = _Pending(op, path, now, _multi_ops(op, record))
        spans = secret_spans(_request_role(payload), payload, exact=error is None)
        if error is not None and xid == 0:
            # xid 0 is a ConnectRequest's protocolVersion: a handshake where none was expected.
            spans = secret_spans("connect_request", payload, exact=False)
        if op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, dict):
            ops = record["ops"]
            notes.append("ops: " + _listing([_op_text(o["op"], o["request"]) for o in ops[:_LISTED]], len(ops)))
        else:
            detail = _request_detail(op, record)
            if detail:
                notes.append(detail)
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
            spans = secret_spans("connect_request", payload, exact=False)
            return self._malformed(side, payload, offset, f"ConnectRequest: {e}", now, secret_spans=spans)
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
            secret_spans=secret_spans("connect_request", payload, exact=True),
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
        # xid 0 is a ConnectResponse's protocolVersion: a handshake where none was expected, unless the
        # frame decodes as the reply it would pair with.
        zero_spans = secret_spans("connect_response", payload, exact=False) if xid == 0 else ()
        notes: list[str] = []
        latency: float | None = None
        path: str | None = None
        sub_ops: tuple[str, ...] = ()
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
            pending = self._pending.get(xid)
            if pending is None:
                if xid == AUTH_XID:
                    op = int(OpCode.AUTH)
                else:
                    notes.append(f"no pending request with xid {xid}")
                    if err == 0 and len(payload) > 16:
                        notes.append(f"{len(payload) - 16} body bytes not decoded")
                    note = "; ".join(notes)
                    return self._frame(
                        side,
                        kind,
                        payload,
                        offset,
                        now,
                        op=None,
                        op_name=None,
                        note=note,
                        secret_spans=zero_spans,
                        **fields,
                    )
            else:
                if self._server_gap and pending.op not in _OUT_OF_BAND:
                    # Replies were skipped: the in-band requests sent before this one were answered there.
                    self._server_gap = False
                    self._forget_in_band(before=xid)
                    oldest = xid
                del self._pending[xid]
                op, path, sub_ops = pending.op, pending.path, pending.ops
                latency = _elapsed(pending.time, now)
                if op not in _OUT_OF_BAND and oldest is not None and oldest != xid:
                    notes.append(f"out of order: xid {oldest} was sent earlier and is still pending")
        fields.update(op=op, op_name=op_name(op), path=path, latency=latency)
        if op == OpCode.SASL and err == 0 and kind == "reply":
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=False)
        try:
            parsed = schema.parse_reply(op, payload, compiled=self.compiled)
        except ProtocolError as e:
            if zero_spans and "secret_spans" not in fields:
                fields["secret_spans"] = zero_spans
            return self._malformed(side, payload, offset, str(e), now, note="; ".join(notes) or None, **fields)
        if "secret_spans" in fields:
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=True)
        record = schema.to_plain(parsed["body"])
        if kind == "event":
            fields["path"] = _path_of(record)
            notes.insert(0, f"{_enum_name(EventType, record['type'])} {_enum_name(KeeperState, record['state'])}")
        elif op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, dict):
            notes.append(_multi_summary(record["results"], sub_ops))
        elif op in _CREATES and isinstance(record, dict) and isinstance(record.get("path"), str):
            notes.append(f"created {record['path']}")
        return self._frame(side, kind, payload, offset, now, record=record, note="; ".join(notes) or None, **fields)

    def _connect_response(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        try:
            record = schema.to_plain(schema.parse_connect_response(payload, compiled=self.compiled))
        except ProtocolError as e:
            spans = secret_spans("connect_response", payload, exact=False)
            return self._malformed(side, payload, offset, f"ConnectResponse: {e}", now, secret_spans=spans)
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
            secret_spans=secret_spans("connect_response", payload, exact=True),
        )

    def _forget_in_band(self, before: int) -> None:
        """Drop the pending requests (auth and sasl aside) sent before the one with xid ``before``."""
        for xid in list(self._pending):
            if xid == before:
                return
            if self._pending[xid].op not in _OUT_OF_BAND:
                del self._pending[xid]

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


_BYTE_VALUE = re.compile(r"byte 0x[0-9a-fA-F]+")

#: Where the int32 length of the secret buffer is, by the role of the frame that carries it.
_SECRET_LENGTH_AT = {"connect_request": 24, "connect_response": 16, "sasl_request": 8, "sasl_reply": 16}


def _request_role(payload: bytes) -> str | None:
    """ "auth" or "sasl_request" when the RequestHeader names one of those ops (else None)."""
    if len(payload) < 8:
        return None
    op = _INT.unpack_from(payload, 4)[0]
    return "auth" if op == OpCode.AUTH else "sasl_request" if op == OpCode.SASL else None


def _buffer_span(payload: bytes, at: int, exact: bool) -> tuple[tuple[int, int], ...]:
    start, end = at + 4, len(payload)
    if exact and end >= start:
        n = _INT.unpack_from(payload, at)[0]
        if -1 <= n <= end - start:
            end = start + max(n, 0)
    return ((start, end),) if end > start else ()


def secret_spans(
    role: str | None, payload: bytes, *, exact: bool, full_length: int | None = None
) -> tuple[tuple[int, int], ...]:
    """The (start, end) ranges of ``payload`` that hold a secret, found by the frame's layout alone.

    ``role`` is "connect_request", "connect_response" (the session password), "auth" (the credential of
    an AuthPacket), "sasl_request" or "sasl_reply" (the token); None has no secret.  ``payload`` may be
    only the beginning of the frame (``full_length`` is then the length its prefix announced).  With
    ``exact`` (the frame decoded) the span is the secret's bytes; otherwise it runs from where the secret
    starts to the end of ``payload``, since a length field in a frame that does not decode cannot be
    trusted.  An auth packet whose lengths do not agree with its size is masked from its scheme on.
    """
    if role is None:
        return ()
    at = _SECRET_LENGTH_AT.get(role)
    if at is not None:
        return _buffer_span(payload, at, exact)
    # AuthPacket after the RequestHeader: type int32 (8..12), scheme ustring (length at 12), auth buffer.
    # The scheme is shown only when both lengths are there and agree with the frame's size (it may have
    # bytes after the credential); otherwise a length may be wrong, or the bytes stop before they can be
    # checked, and the credential may be anywhere after the scheme's length field.
    total = len(payload) if full_length is None else full_length
    if len(payload) >= 16:
        n = _INT.unpack_from(payload, 12)[0]
        scheme_end = 16 + max(n, 0)
        if exact:
            return _buffer_span(payload, scheme_end, exact)
        if n >= -1 and scheme_end + 4 <= len(payload):
            m = _INT.unpack_from(payload, scheme_end)[0]
            if -1 <= m <= total - scheme_end - 4:
                return _buffer_span(payload, scheme_end, exact)
    return ((16, len(payload)),) if len(payload) > 16 else ()


def _shifted(spans: tuple[tuple[int, int], ...], by: int) -> tuple[tuple[int, int], ...]:
    return tuple((start + by, end + by) for start, end in spans)


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


#: Sub-operations of a multi named in a frame's note; the others are counted.
_LISTED = 20


def _listing(parts: list[str], total: int) -> str:
    more = total - len(parts)
    return ", ".join(parts) + (f", ... {more} more" if more > 0 else "")


def _multi_summary(results: list[dict[str, Any]], requested: tuple[str, ...] = ()) -> str:
    """Each sub-result of a multi's reply, named by the operation it answers when the request was seen:
    "FAILED: 1 of 3 ops failed: create /a ok, delete /b NONODE, setData /c not run"."""
    parts: list[str] = []
    failed = 0
    for i, r in enumerate(results):
        is_error = r["op"] == OpCode.ERROR
        if is_error and r["err"] not in (0, -2):  # -2: not run, after the one that failed
            failed += 1
        if len(parts) < _LISTED:
            what = requested[i] if i < len(requested) else None
            if is_error:
                outcome = "ok" if r["err"] == 0 else "not run" if r["err"] == -2 else error_name(r["err"])
                parts.append(f"{what or 'op'} {outcome}" if what else f"error {error_name(r['err'])}")
            else:
                created = r["body"].get("path") if isinstance(r["body"], dict) and r["op"] in _CREATES else None
                shown = (
                    f"{op_name(r['op'])} {created}" if created else (what or op_name(r["op"]) + _path_suffix(r["body"]))
                )
                parts.append(shown + (" ok" if what else ""))
    head = f"FAILED: {failed} of {len(results)} ops failed" if failed else f"{len(results)} ops ok"
    return f"{head}: " + _listing(parts, len(results)) if parts else head


_CREATES = frozenset({OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL})


def format_zxid(zxid: int) -> str:
    """A zxid as the tracer writes it everywhere: hexadecimal (``0x1f``); -1 (none) stays -1."""
    return f"0x{zxid & 0xFFFFFFFFFFFFFFFF:x}" if zxid >= 0 else str(zxid)


def _create_mode(flags: int) -> str:
    try:
        return CreateMode(flags).name.lower().replace("_", " ")
    except ValueError:
        return f"flags {flags}"


def _op_text(op: int, request: Any) -> str:
    """ "create /a (ephemeral sequential)": an operation inside a multi."""
    text = op_name(op) + _path_suffix(request)
    if op in _CREATES and isinstance(request, dict) and isinstance(request.get("flags"), int):
        text += f" ({_create_mode(request['flags'])})"
    return text


def _multi_ops(op: int, record: Any) -> tuple[str, ...]:
    if op not in (OpCode.MULTI, OpCode.MULTI_READ) or not isinstance(record, dict):
        return ()
    return tuple(op_name(o["op"]) + _path_suffix(o["request"]) for o in record["ops"][:_LISTED])  # those listed


def _watch_list(paths: Any) -> str:
    paths = list(paths or ())
    return f"{len(paths)} [" + _listing([str(p) for p in paths[:_LISTED]], len(paths)) + "]"


def _request_detail(op: int, record: Any) -> str | None:
    """What the one-line view says of a request beyond op and path: a create's mode (and TTL), an auth's
    scheme (never its credential), the watches a SetWatches re-registers and from which zxid."""
    if not isinstance(record, dict):
        return None
    if op in _CREATES and isinstance(record.get("flags"), int):
        text = f"mode {_create_mode(record['flags'])}"
        if op == OpCode.CREATE_TTL and isinstance(record.get("ttl"), int):
            text += f", ttl {record['ttl']} ms"
        return text
    if op == OpCode.AUTH:
        return f"scheme {record.get('scheme')}"
    if op in (OpCode.SET_WATCHES, OpCode.SET_WATCHES2):
        kinds = [
            ("data", "data_watches"),
            ("exist", "exist_watches"),
            ("child", "child_watches"),
            ("persistent", "persistent_watches"),
            ("recursive", "persistent_recursive_watches"),
        ]
        listed = [f"{name} {_watch_list(record[key])}" for name, key in kinds if record.get(key)]
        zxid = record.get("relative_zxid")
        since = f" after zxid {format_zxid(zxid)}" if isinstance(zxid, int) else ""
        return f"re-registers{since}: " + ("; ".join(listed) or "nothing")
    return None


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


_SECRET_KEYS = ("passwd", "auth", "token")


def _shown_record(frame: DecodedFrame, reveal_secrets: bool) -> Any:
    record = frame.record
    if reveal_secrets or not isinstance(record, dict) or not any(k in record for k in _SECRET_KEYS):
        return record
    shown = dict(record)
    for key in _SECRET_KEYS:
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


def _hex_limit(max_line: int | None) -> int | None:
    return None if not max_line else max(256, max_line // 8)


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
    parts = ["-" if frame.time is None else f"{frame.time:.6f}", "->" if frame.direction == CLIENT else "<-"]
    parts.append(f"{frame.kind:<16}")
    if frame.xid is not None:
        parts.append(f"xid={frame.xid}")
    if frame.op_name is not None:
        parts.append(frame.op_name)
    if frame.path is not None:
        path = capped(frame.path, max_line and max_line // 2)
        parts.append(repr(path) if path == "" or any(c.isspace() for c in path) else path)
    if frame.err is not None and (frame.err != 0 or frame.kind not in ("event", "ping")):
        parts.append("FAILED" if _failed_multi(frame) else frame.err_name or str(frame.err))
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
    line = capped(escape_controls(" ".join(parts)), max_line)
    if not verbose:
        return line
    lines = [line]
    if frame.record is not None:
        record = _zxids_in_hex(_shown_record(frame, reveal_secrets))
        if max_line:
            record = _abridged(record, max_line)
        lines.append(capped(escape_controls(f"    record: {record!r}"), max_line))
    lines.extend(_hexdump(frame, reveal_secrets, _hex_limit(max_line)))
    return "\n".join(lines)


def _failed_multi(frame: DecodedFrame) -> bool:
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


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, _Cut):
        return value.json()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def frame_to_json(frame: DecodedFrame, *, reveal_secrets: bool = False, max_line: int | None = None) -> dict[str, Any]:
    """The frame as JSON-ready values.  Bytes become hex strings; masked secret bytes are ``**``.

    With ``max_line``, the values are shortened so that the object's JSON stays near that many
    characters: the payload stops after ``max_line // 8`` bytes (``payload_truncated`` is then true),
    long strings and lists are cut (saying how much was left out).
    """
    limit = _hex_limit(max_line)
    payload_hex = "".join("**" if b is None else f"{b:02x}" for b in _masked(frame, reveal_secrets, limit))
    record = _shown_record(frame, reveal_secrets)
    text_limit = max_line and max(64, max_line // 8)
    obj = {
        "direction": frame.direction,
        "kind": frame.kind,
        "index": frame.index,
        "offset": frame.offset,
        "time": frame.time,
        "xid": frame.xid,
        "op": frame.op,
        "op_name": frame.op_name,
        "path": frame.path if frame.path is None else capped(frame.path, text_limit),
        "err": frame.err,
        "err_name": frame.err_name,
        "zxid": frame.zxid,
        "size": frame.size,
        "latency": frame.latency,
        "record": _jsonable(_abridged(record, max_line // 4) if max_line else record),
        "error": frame.error if frame.error is None else capped(frame.error, text_limit),
        "note": frame.note if frame.note is None else capped(frame.note, text_limit),
        "payload": payload_hex,
    }
    if limit is not None and len(frame.payload) > limit:
        obj["payload_truncated"] = True
    return obj
