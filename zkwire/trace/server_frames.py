"""The server's side of a traced connection: its ConnectResponse, its replies paired with the requests of
the :class:`~zkwire.trace.pairing.RequestLedger` by xid, watch events, ping and auth replies, and the text
answer to a four-letter word."""

from __future__ import annotations

from typing import Any

from ..constants import AUTH_XID, PING_XID, WATCH_XID, OpCode
from ..errors import ProtocolError, error_name
from ..protocol.codec import op_name
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from .bodies import BodyDecoder
from .frames import SERVER, DecodedFrame, FrameKind
from .masking import secret_spans
from .notes import config_reply, event_note, path_of, reply_note
from .pairing import OUT_OF_BAND, RequestLedger
from .streams import Side, SideFrames, elapsed

__all__ = ["ServerFrames"]

#: A null buffer (length -1): the token of a server refusing SASL.
NULL_TOKEN = b"\xff\xff\xff\xff"


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
        frame = DecodedFrame(
            direction=SERVER,
            kind="four_letter",
            index=side.index,
            offset=side.offset,
            size=len(raw),
            payload=raw,
            op_name=word,
            record={"text": raw.decode("utf-8", "replace")},
            time=now,
        )
        side.index += 1
        side.offset += len(raw)
        return frame

    def message(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """A reply paired with its request, a watch event, a ping or auth reply."""
        if len(payload) < 16:
            return side.malformed(payload, offset, f"{len(payload)} bytes: too short for a ReplyHeader", now)
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload)
        fields: dict[str, Any] = {"xid": xid, "zxid": zxid, "err": err, "err_name": error_name(err)}
        # xid 0 is a ConnectResponse's protocolVersion: a handshake where none was expected, unless the
        # frame decodes as the reply it would pair with.
        zero_spans = secret_spans("connect_response", payload, exact=False) if xid == 0 else ()
        notes: list[str] = []
        latency: float | None = None
        path: str | None = None
        sub_ops: tuple[str, ...] = ()
        ledger = self.ledger
        if xid == WATCH_XID:
            kind: FrameKind = "event"
            op = int(OpCode.NOTIFICATION)
        elif xid == PING_XID:
            kind, op = "ping", int(OpCode.PING)
            if ledger.pings:
                sent = ledger.pings.popleft()
                latency = elapsed(sent, now)
            else:
                notes.append("no ping outstanding")
        else:
            kind = "auth" if xid == AUTH_XID else "reply"
            oldest = ledger.oldest_in_band()
            pending = ledger.pending.get(xid)
            if pending is None:
                if xid == AUTH_XID:
                    op = int(OpCode.AUTH)
                else:
                    notes.append(f"no pending request with xid {xid}")
                    if err == 0 and len(payload) > 16:
                        notes.append(f"{len(payload) - 16} body bytes not decoded")
                    note = "; ".join(notes)
                    return side.frame(
                        kind, payload, offset, now, op=None, op_name=None, note=note, secret_spans=zero_spans, **fields
                    )
            else:
                if ledger.gap and pending.op not in OUT_OF_BAND:
                    # Replies were skipped: the in-band requests sent before this one were answered there.
                    ledger.gap = False
                    ledger.forget_in_band(before=xid)
                    oldest = xid
                del ledger.pending[xid]
                op, path, sub_ops = pending.op, pending.path, pending.ops
                latency = elapsed(pending.time, now)
                if op not in OUT_OF_BAND and oldest is not None and oldest != xid:
                    notes.append(f"out of order: xid {oldest} was sent earlier and is still pending")
        fields.update(op=op, op_name=op_name(op), path=path, latency=latency)
        if op == OpCode.SASL and err == 0 and kind == "reply":
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=False)
        body_payload = payload
        if op == OpCode.SASL and err != 0 and payload[16:] == NULL_TOKEN:
            # A server refusing SASL (-115, -124) still sends its (null) token after the error header.
            body_payload = payload[:16]
            notes.append("null token")
        try:
            record = self.bodies.reply(op, body_payload)
        except ProtocolError as e:
            if zero_spans and "secret_spans" not in fields:
                fields["secret_spans"] = zero_spans
            return side.malformed(payload, offset, str(e), now, note="; ".join(notes) or None, **fields)
        if "secret_spans" in fields:
            fields["secret_spans"] = secret_spans("sasl_reply", payload, exact=True)
        if kind == "event":
            fields["path"] = path_of(record)
            notes.insert(0, event_note(record))
        else:
            fields["config"] = config_reply(op, path, record) if kind == "reply" else None
            outcome = reply_note(op, record, sub_ops, fields["config"])
            if outcome:
                notes.append(outcome)
        return side.frame(kind, payload, offset, now, record=record, note="; ".join(notes) or None, **fields)

    def connect(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """The connection's first server frame, its ConnectResponse."""
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
