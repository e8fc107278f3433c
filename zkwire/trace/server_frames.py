"""The server's side of a traced connection: its ConnectResponse, its replies paired with the requests of
the :class:`~zkwire.trace.pairing.RequestLedger` by xid, watch events, ping and auth replies, and the text
answer to a four-letter word."""

from __future__ import annotations

from typing import Any

from ..constants import AUTH_XID, PING_XID, WATCH_XID, OpCode
from ..errors import ERROR_CLASSES, ProtocolError, error_name
from ..protocol.codec import op_name
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from .bodies import BodyDecoder
from .frames import SERVER, DecodedFrame, FrameKind
from .masking import secret_spans
from .notes import config_reply, event_note, path_of, reply_note
from .pairing import OUT_OF_BAND, RequestLedger
from .streams import CONNECT_RESPONSE_SIZES, Side, SideFrames, elapsed, looks_like_text

__all__ = ["ServerFrames"]

_NOTIFICATION = int(OpCode.NOTIFICATION)
_PING = int(OpCode.PING)
_AUTH = int(OpCode.AUTH)
_SASL = int(OpCode.SASL)
#: Below the lowest error code of any ZooKeeper (3.8's is -127): codes of later servers still show, while
#: four random bytes read as a code almost never fall between it and 0.
_LOWEST_ERROR = -1000

#: A null buffer (length -1): the token of a server refusing SASL.
NULL_TOKEN = b"\xff\xff\xff\xff"


def _is_utf8_text(raw: bytes) -> bool:
    """Text with letters beyond ASCII (no control characters but tabs and line ends)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\t\n\r" for c in text)


class ServerFrames(SideFrames):
    """Decodes the server's frames, pairing each reply with its request."""

    __slots__ = ("bodies", "ledger")
    header_size = 16  # a ReplyHeader

    def __init__(self, bodies: BodyDecoder, ledger: RequestLedger) -> None:
        self.bodies = bodies
        self.ledger = ledger

    def text_answer(self, side: Side, word: str | None, now: float | None) -> DecodedFrame:
        """The whole answer to the four-letter word ``word``, at the end of the connection."""
        side.eof = True
        raw = bytes(side.buf)
        side.buf.clear()
        spans: tuple[tuple[int, int], ...] = ()
        if looks_like_text(raw) or _is_utf8_text(raw):
            text = raw.decode("utf-8", "replace")
        else:  # not an answer to a four-letter word (ZooKeeper frames?): unsure, so hidden
            text = f"<{len(raw)} bytes hidden: not text>"
            spans = ((0, len(raw)),)
        frame = DecodedFrame(
            direction=SERVER,
            kind="four_letter",
            index=side.index,
            offset=side.offset,
            size=len(raw),
            payload=raw,
            op_name=word,
            record={"text": text},
            time=now,
            secret_spans=spans,
        )
        side.index += 1
        side.offset += len(raw)
        return frame

    def message(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """A reply paired with its request, a watch event, a ping or auth reply."""
        # Run for every reply of a capture: written for speed (no keyword arguments, notes made only when
        # there is one); :meth:`_unpaired` and :meth:`_unusual` take the rarer turns.
        if len(payload) < 16:
            return side.malformed(payload, offset, f"{len(payload)} bytes: too short for a ReplyHeader", now)
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload)
        if err and err not in ERROR_CLASSES and not _LOWEST_ERROR < err < 0:
            # No server sends such a code: misframed bytes (maybe a secret's), so no field of it is shown.
            return side.malformed(payload, offset, "not a reply: its error code is none a server sends", now)
        ledger = self.ledger
        note: str | None = None
        latency: float | None = None
        path: str | None = None
        sub_ops: tuple[str, ...] = ()
        if xid == WATCH_XID:
            kind: FrameKind = "event"
            op = _NOTIFICATION
        elif xid == PING_XID:
            kind, op = "ping", _PING
            if ledger.pings:
                latency = elapsed(ledger.pings.popleft(), now)
            else:
                note = "no ping outstanding"
        else:
            kind = "auth" if xid == AUTH_XID else "reply"
            pending = ledger.pending.get(xid)
            if pending is None:
                if xid != AUTH_XID:
                    return self._unpaired(side, payload, offset, now, kind, xid, zxid, err)
                op = _AUTH
            else:
                op = pending.op
                in_band = op not in OUT_OF_BAND
                oldest = ledger.oldest_in_band() if in_band else None
                if ledger.gap and in_band:
                    # Replies were skipped: the in-band requests sent before this one were answered there.
                    ledger.gap = False
                    ledger.forget_in_band(before=xid)
                    oldest = xid
                del ledger.pending[xid]
                path, sub_ops = pending.path, pending.ops
                latency = elapsed(pending.time, now)
                if oldest is not None and oldest != xid:
                    note = f"out of order: xid {oldest} was sent earlier and is still pending"
        if op == _SASL or (err != 0 and len(payload) != 16):
            return self._unusual(side, payload, offset, now, kind, xid, zxid, err, op, path, latency, sub_ops, note)
        try:
            record = self.bodies.reply(op, payload, path)
        except ProtocolError as e:
            if side.unsure:  # after a frame that did not decode, this one's header may be misframed bytes
                return side.malformed(payload, offset, str(e), now)
            return side.malformed(
                payload, offset, str(e), now, note=note, xid=xid, zxid=zxid, err=err, err_name=error_name(err),
                op=op, op_name=op_name(op), path=path, latency=latency,
            )  # fmt: skip
        config = None
        if kind == "event":
            path = path_of(record)
            first = event_note(record)
            note = first if note is None else f"{first}; {note}"
        elif record is not None:
            if kind == "reply":
                config = config_reply(op, path, record)
            outcome = reply_note(op, record, sub_ops, config)
            if outcome:
                note = outcome if note is None else f"{note}; {outcome}"
        index = side.index
        side.index = index + 1
        # The fields in their order: direction, kind, index, offset, size, payload, xid, op, op_name, path,
        # err, err_name, zxid, record, error, note, time, latency, secret_spans, config.
        return DecodedFrame(
            SERVER, kind, index, offset, len(payload), payload, xid, op, op_name(op), path, err,
            error_name(err), zxid, record, None, note, now, latency, (), config,
        )  # fmt: skip

    def _unpaired(
        self, side: Side, payload: bytes, offset: int, now: float | None, kind: FrameKind, xid: int, zxid: int, err: int
    ) -> DecodedFrame:
        """A reply whose xid no pending request has."""
        # A frame before did not decode, the error code is none the server has, or the client was followed
        # from its handshake and sent no such xid: not a reply but misframed bytes (maybe a secret's), so
        # not even its header is shown.
        ledger = self.ledger
        if side.unsure:
            why = "a frame before it did not decode"
        elif err and err not in ERROR_CLASSES:
            why = "no such error code"
        elif ledger.complete and not ledger.could_have_sent(xid):
            why = "no such request was sent"
        else:
            why = None
        if why is not None:
            return side.malformed(payload, offset, f"not a reply to any request seen ({why})", now)
        notes = [f"no pending request with xid {xid}"]
        if err == 0 and len(payload) > 16:
            notes.append(f"{len(payload) - 16} body bytes not decoded")
        # Not known to be a reply (a client's frame read as the server's?): its body stays hidden.
        unsure = ((8, len(payload)),) if len(payload) > 8 else ()
        return side.frame(
            kind, payload, offset, now, xid=xid, zxid=zxid, err=err, err_name=error_name(err), op=None,
            op_name=None, note="; ".join(notes), secret_spans=unsure,
        )  # fmt: skip

    def _unusual(
        self,
        side: Side,
        payload: bytes,
        offset: int,
        now: float | None,
        kind: FrameKind,
        xid: int,
        zxid: int,
        err: int,
        op: int,
        path: str | None,
        latency: float | None,
        sub_ops: tuple[str, ...],
        note: str | None,
    ) -> DecodedFrame:
        """A SASL reply (its token is a secret), or an error reply with body bytes."""
        fields: dict[str, Any] = {"xid": xid, "zxid": zxid, "err": err, "err_name": error_name(err)}
        notes = [note] if note is not None else []
        fields.update(op=op, op_name=op_name(op), path=path, latency=latency)
        if op == _SASL and err == 0 and kind == "reply":
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=False)
        body_payload = payload
        if op == _SASL and err != 0 and payload[16:] == NULL_TOKEN:
            # A server refusing SASL (-115, -124) still sends its (null) token after the error header.
            body_payload = payload[:16]
            notes.append("null token")
        try:
            record = self.bodies.reply(op, body_payload, path)
        except ProtocolError as e:
            if side.unsure:  # after a frame that did not decode, this one's header may be misframed bytes
                return side.malformed(payload, offset, str(e), now)
            return side.malformed(payload, offset, str(e), now, note="; ".join(notes) or None, **fields)
        if "secret_spans" in fields:
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=True)
        if kind == "event":
            fields["path"] = path_of(record)
            notes.insert(0, event_note(record))
        elif record is not None:
            fields["config"] = config_reply(op, path, record) if kind == "reply" else None
            outcome = reply_note(op, record, sub_ops, fields["config"])
            if outcome:
                notes.append(outcome)
        return side.frame(kind, payload, offset, now, record=record, note="; ".join(notes) or None, **fields)

    def connect(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """The connection's first server frame, its ConnectResponse."""
        if len(payload) not in CONNECT_RESPONSE_SIZES:
            # Not the size every server sends (a client's frame read as the server's, a length corrupted):
            # its fields may be a secret's bytes, so it is not shown at all.
            spans = secret_spans("connect_response", payload, exact=False)
            message = f"ConnectResponse of {len(payload)} bytes (36 or 37 expected)"
            return side.malformed(payload, offset, message, now, secret_spans=spans)
        try:
            record = self.bodies.connect_response(payload)
        except ProtocolError as e:
            spans = secret_spans("connect_response", payload, exact=False)
            return side.malformed(payload, offset, f"ConnectResponse: {e}", now, secret_spans=spans)
        if record["timeout"] <= 0:
            note = "session expired or rejected"
        else:
            sid = record["session_id"] & 0xFFFFFFFFFFFFFFFF
            note = f"session 0x{sid:x}, timeout {record['timeout']} ms" + (", read-only" if record["read_only"] else "")
        return side.frame(
            "connect_response",
            payload,
            offset,
            now,
            op_name="connect",
            record=record,
            note=note,
            secret_spans=secret_spans("connect_response", payload, exact=True),
        )
