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

The parts: :mod:`~zkwire.trace.frames` (what a frame is), :mod:`~zkwire.trace.bodies` (reading records),
:mod:`~zkwire.trace.masking` (where secrets are), :mod:`~zkwire.trace.notes` (what a note says) and
:mod:`~zkwire.trace.render` (a frame as a line or as JSON; its functions are importable from here too).
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from ..constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, OpCode
from ..errors import InvalidArgumentError, ProtocolError, error_name
from ..protocol import fourletter
from ..protocol.codec import op_name
from ..protocol.framing import LENGTH as _INT
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.framing import REQUEST_HEADER as _REQUEST_HEADER
from .bodies import BodyDecoder, SchemaBodies
from .frames import CLIENT, SERVER, DecodedFrame, Direction, FrameKind, format_zxid
from .masking import SecretRole, request_role, secret_spans, shifted
from .notes import event_note, multi_ops, path_of, reply_note, request_note
from .render import capped, format_frame, frame_to_json

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

#: Commands the 3.8 server recognises as the first four bytes of a connection.
FOUR_LETTER_WORDS = frozenset(word.encode("ascii") for word in fourletter.FOUR_LETTER_WORDS)
_TELNET_CLOSE = b"\xff\xf4\xff\xfd"

_MALFORMED_PREVIEW = 64
# Ops the server answers at once, so their replies may overtake others still in the pipeline.
_OUT_OF_BAND = frozenset({OpCode.AUTH, OpCode.SASL})

#: How one side's bytes are read: ZooKeeper frames, a four-letter word, or the server's text answer to one.
_Mode = Literal["zk", "4lw", "text"]
#: Where one side is: before its connect record, in its frames, or past a length it cannot frame.
_State = Literal["handshake", "frames", "broken"]


@dataclass(slots=True)
class _Pending:
    op: int
    path: str | None
    time: float | None
    ops: tuple[str, ...] = ()  # a multi's operations, as "create /a"


class _Side:
    __slots__ = ("buf", "direction", "eof", "index", "mode", "offset", "skipped", "started", "state")

    def __init__(self, direction: Direction) -> None:
        self.direction: Direction = direction
        self.buf = bytearray()
        self.offset = 0  # stream offset of buf[0]
        self.index = 0
        self.mode: _Mode | None = None
        self.state: _State = "handshake"
        self.skipped = 0
        self.started = False
        self.eof = False


def _is_four_letter(head: bytes) -> bool:
    return head in FOUR_LETTER_WORDS or head == _TELNET_CLOSE


def _looks_like_text(head: bytes) -> bool:
    return all(32 <= b < 127 or b in (9, 10, 13) for b in head)


class ConversationDecoder:
    """Decodes both directions of one connection.

    The first frame of each side is taken as its connect record only if it starts with
    protocolVersion 0 (a later frame starts with a non-zero xid), so a capture that starts after the
    handshake decodes too.  ``handshake=False`` skips the connect records altogether.
    Records are read by ``bodies`` (a :class:`~zkwire.trace.bodies.BodyDecoder`), by default the construct
    schemas (``compiled=True``: their compiled form).  Frames longer than ``max_frame`` break their
    direction, as they would break a real client or server.
    """

    def __init__(
        self,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        handshake: bool = True,
        compiled: bool = False,
        bodies: BodyDecoder | None = None,
    ) -> None:
        self.max_frame = max_frame
        self.handshake = handshake
        self.compiled = compiled
        self.bodies: BodyDecoder = bodies if bodies is not None else SchemaBodies(compiled=compiled)
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
            spans = shifted(self._secret_spans_of(side, raw[4:], exact=False, full_length=n), 4)
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
                spans = shifted(self._secret_spans_of(side, preview[4:], exact=False), 4)
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
        self, side: _Side, kind: FrameKind, payload: bytes, offset: int, now: float | None, **fields: Any
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
                role: SecretRole | None = "connect_request"
            else:
                role = request_role(payload)
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
            record = self.bodies.request(payload)
        except ProtocolError as e:
            error = str(e)
        path = path_of(record)
        notes: list[str] = []
        if op == OpCode.PING:
            kind: FrameKind = "ping"
            self._pings.append(now)
        else:
            kind = "auth" if op == OpCode.AUTH else "request"
            if xid in self._pending:
                notes.append(f"xid {xid} reused while a {op_name(self._pending[xid].op)} with it is pending")
            self._pending[xid] = _Pending(op, path, now, multi_ops(op, record))
        spans = secret_spans(request_role(payload), payload, exact=error is None)
        if error is not None and xid == 0:
            # xid 0 is a ConnectRequest's protocolVersion: a handshake where none was expected.
            spans = secret_spans("connect_request", payload, exact=False)
        detail = request_note(op, record)
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
            record = self.bodies.connect_request(payload)
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
            kind: FrameKind = "event"
            op = int(OpCode.NOTIFICATION)
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
            record = self.bodies.reply(op, payload)
        except ProtocolError as e:
            if zero_spans and "secret_spans" not in fields:
                fields["secret_spans"] = zero_spans
            return self._malformed(side, payload, offset, str(e), now, note="; ".join(notes) or None, **fields)
        if "secret_spans" in fields:
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=True)
        if kind == "event":
            fields["path"] = path_of(record)
            notes.insert(0, event_note(record))
        else:
            outcome = reply_note(op, record, sub_ops)
            if outcome:
                notes.append(outcome)
        return self._frame(side, kind, payload, offset, now, record=record, note="; ".join(notes) or None, **fields)

    def _connect_response(self, side: _Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        try:
            record = self.bodies.connect_response(payload)
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
