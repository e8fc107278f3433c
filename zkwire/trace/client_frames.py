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
from .frames import CLIENT, DecodedFrame, FrameKind
from .masking import REQUEST_ROLES, secret_spans
from .notes import MULTI_OPS, multi_ops, reconfig_request, request_note
from .pairing import Pending, RequestLedger
from .streams import CONNECT_REQUEST_SIZES, TELNET_CLOSE, Side, SideFrames

__all__ = ["ClientFrames"]

_PING = int(OpCode.PING)
_AUTH = int(OpCode.AUTH)


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
        # Run for every request of a capture: written for speed (no keyword arguments, notes made only
        # when there is one); :meth:`Side.frame` is what it makes.
        if len(payload) < 8:
            return side.malformed(payload, offset, f"{len(payload)} bytes: too short for a RequestHeader", now)
        xid, op = _REQUEST_HEADER.unpack_from(payload)
        name = op_name(op)
        record: Any = None
        error: str | None = None
        path: str | None = None
        bodies = self.bodies
        try:
            record = bodies.request(payload)
            path = bodies.path(op, payload, record)
        except ProtocolError as e:
            error = str(e)
        ledger = self.ledger
        reused: str | None = None
        if op == _PING:
            kind: FrameKind = "ping"
            ledger.pings.append(now)
        else:
            kind = "auth" if op == _AUTH else "request"
            pending = ledger.pending
            if xid in pending:
                reused = f"xid {xid} reused while a {op_name(pending[xid].op)} with it is pending"
            ops = multi_ops(op, record) if record is not None and op in MULTI_OPS else ()
            ledger.add(xid, Pending(op, path, now, ops))
        if error is not None:
            detail = request_note(op, record)
            notes = [n for n in (reused, detail) if n]
            return side.malformed(
                payload, offset, error, now, note="; ".join(notes) or None, xid=xid, op=op, op_name=name
            )
        role = REQUEST_ROLES.get(op)
        spans = secret_spans(role, payload, exact=True) if role is not None else ()
        config = None
        note = reused
        if record is not None:
            detail = request_note(op, record)
            if detail:
                note = detail if note is None else f"{note}; {detail}"
            config = reconfig_request(op, record)
        index = side.index
        side.index = index + 1
        # The fields in their order: direction, kind, index, offset, size, payload, xid, op, op_name, path,
        # err, err_name, zxid, record, error, note, time, latency, secret_spans, config.
        return DecodedFrame(
            CLIENT, kind, index, offset, len(payload), payload, xid, op, name, path, None, None, None, record,
            None, note, now, None, spans, config,
        )  # fmt: skip

    def connect(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """The connection's first client frame, its ConnectRequest."""
        if len(payload) not in CONNECT_REQUEST_SIZES:
            # Not the size every client sends (a server's frame read as the client's, a length corrupted):
            # its fields may be a secret's bytes, so it is not shown at all.
            spans = secret_spans("connect_request", payload, exact=False)
            message = f"ConnectRequest of {len(payload)} bytes (44 or 45 expected)"
            return side.malformed(payload, offset, message, now, secret_spans=spans)
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
