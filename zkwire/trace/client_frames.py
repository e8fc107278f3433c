"""The client's side of a traced connection: its four-letter word, its ConnectRequest, and its requests,
each remembered in the :class:`~zkwire.trace.pairing.RequestLedger` for the reply to pair with."""

from __future__ import annotations

import struct
from typing import Any

from ..constants import OpCode
from ..errors import ProtocolError
from ..protocol.codec import op_name
from ..protocol.framing import REQUEST_HEADER as _REQUEST_HEADER
from .bodies import BodyDecoder
from .frames import DecodedFrame, FrameKind
from .masking import REQUEST_ROLES, secret_spans
from .notes import multi_ops, reconfig_request, request_note
from .pairing import Pending, RequestLedger
from .streams import TELNET_CLOSE, Side, SideFrames

__all__ = ["ClientFrames"]


class ClientFrames(SideFrames):
    """Decodes the client's frames; ``word`` is the four-letter word it opened with, if it did."""

    __slots__ = ("bodies", "ledger", "word")
    header_size = 8  # a RequestHeader

    def __init__(self, bodies: BodyDecoder, ledger: RequestLedger) -> None:
        self.bodies = bodies
        self.ledger = ledger
        self.word: str | None = None

    def four_letter(self, side: Side, now: float | None) -> list[DecodedFrame]:
        """The four-letter word at the start of ``side`` (with stmk's mask); later bytes are only counted."""
        if side.started:
            side.skipped += len(side.buf)
            side.buf.clear()
            return []
        word = bytes(side.buf[:4])
        record: dict[str, Any] = {"command": word.decode("latin-1") if word != TELNET_CLOSE else "telnet-close"}
        take = 4
        if word == b"stmk":  # set trace mask: an 8-byte mask follows
            if len(side.buf) < 12:
                return []
            record["mask"] = struct.unpack_from(">q", side.buf, 4)[0]
            take = 12
        side.started = True
        self.word = record["command"]
        raw = bytes(side.buf[:take])
        del side.buf[:take]
        frame = side.frame("four_letter", raw, 0, now, op_name=record["command"], record=record)
        side.offset = take
        side.skipped += len(side.buf)
        side.buf.clear()
        return [frame]

    def message(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """A request (a ping, an auth packet...) and its record."""
        if len(payload) < 8:
            return side.malformed(payload, offset, f"{len(payload)} bytes: too short for a RequestHeader", now)
        xid, op = _REQUEST_HEADER.unpack_from(payload)
        name = op_name(op)
        record: Any = None
        error: str | None = None
        path: str | None = None
        try:
            record = self.bodies.request(payload)
            path = self.bodies.path(op, payload, record)
        except ProtocolError as e:
            error = str(e)
        notes: list[str] = []
        pending = self.ledger.pending
        if op == OpCode.PING:
            kind: FrameKind = "ping"
            self.ledger.pings.append(now)
        else:
            kind = "auth" if op == OpCode.AUTH else "request"
            if xid in pending:
                notes.append(f"xid {xid} reused while a {op_name(pending[xid].op)} with it is pending")
            self.ledger.add(xid, Pending(op, path, now, multi_ops(op, record) if record is not None else ()))
        if error is not None:
            detail = request_note(op, record)
            note = "; ".join([*notes, detail] if detail else notes) or None
            return side.malformed(payload, offset, error, now, note=note, xid=xid, op=op, op_name=name)
        role = REQUEST_ROLES.get(op)
        spans = secret_spans(role, payload, exact=True) if role is not None else ()
        config = None
        if record is not None:
            detail = request_note(op, record)
            if detail:
                notes.append(detail)
            config = reconfig_request(op, record)
        return side.frame(
            kind,
            payload,
            offset,
            now,
            xid=xid,
            op=op,
            op_name=name,
            path=path,
            record=record,
            note="; ".join(notes) or None,
            secret_spans=spans,
            config=config,
        )

    def connect(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """The connection's first client frame, its ConnectRequest."""
        try:
            record = self.bodies.connect_request(payload)
        except ProtocolError as e:
            spans = secret_spans("connect_request", payload, exact=False)
            return side.malformed(payload, offset, f"ConnectRequest: {e}", now, secret_spans=spans)
        self.ledger.complete = True
        sid = record["session_id"]
        note = "new session" if sid == 0 else f"reattach session 0x{sid & 0xFFFFFFFFFFFFFFFF:x}"
        return side.frame(
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
