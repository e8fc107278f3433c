"""Turn captured ZooKeeper traffic into readable records, pairing replies with requests by xid.

Sans-I/O: no sockets and no clock.  Feed the bytes each side sent, in the order they were seen, to a
:class:`ConversationDecoder` (with an optional timestamp) and get back :class:`DecodedFrame` s.  Bodies
are decoded with the project's codec (:mod:`zkwire.protocol`) by default; the construct schemas of
:mod:`zkwire.trace.schema`, an independent description, can read them instead (``reading="schemas"``) or
beside it (``reading="verify"``: disagreements are reported on the frame), and ``reading="headers"``
reads only the header facts (see :mod:`zkwire.trace.fastbodies`).

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

The parts: :class:`ConversationDecoder` frames both directions and composes
:mod:`~zkwire.trace.client_frames` (the client's frames) and :mod:`~zkwire.trace.server_frames` (the
server's), which share :mod:`~zkwire.trace.streams` (one direction's bytes and place) and
:mod:`~zkwire.trace.pairing` (the requests a reply pairs with); :mod:`~zkwire.trace.frames` (what a frame
is), :mod:`~zkwire.trace.bodies` (reading records),
:mod:`~zkwire.trace.masking` (where secrets are), :mod:`~zkwire.trace.notes` (what a note says) and
:mod:`~zkwire.trace.render` (a frame as a line or as JSON; its functions are importable from here too).
"""

from __future__ import annotations

import dataclasses
import struct

from ..constants import DEFAULT_MAX_FRAME, OpCode
from ..errors import InvalidArgumentError
from ..protocol.framing import LENGTH as _INT
from .bodies import BodyDecoder, SchemaBodies
from .client_frames import ClientFrames
from .fastbodies import FastBodies, HeaderBodies, NoteBodies, OpBodies
from .frames import CLIENT, SERVER, DecodedFrame, format_zxid
from .masking import SecretRole, candidate_roles, request_role, secret_runs_past, secret_spans, shifted
from .pairing import RequestLedger
from .render import capped, format_frame, frame_to_json
from .server_frames import ServerFrames
from .streams import (
    CONNECT_REQUEST_SIZES,
    FOUR_LETTER_WORDS,
    Side,
    is_four_letter,
    looks_like_text,
    starts_mid_conversation,
)
from .verify import VerifyingBodies

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
    "READINGS",
    "body_decoder",
]

#: How records are read: the fast codec, header facts only, the records the one-line view shows (see
#: :class:`~zkwire.trace.fastbodies.NoteBodies`), the construct schemas, or both compared.
READINGS = ("fast", "headers", "notes", "schemas", "verify")


def body_decoder(
    reading: str = "fast", *, compiled: bool = False, only_ops: frozenset[int] | None = None
) -> BodyDecoder:
    """The :class:`~zkwire.trace.bodies.BodyDecoder` of one of :data:`READINGS` (``compiled``: the construct
    schemas' compiled form, for "schemas" and "verify"; ``only_ops``: with "fast" or "notes", the records of
    these ops alone are read in full, the others' header facts only)."""
    if reading == "fast":
        return FastBodies() if only_ops is None else OpBodies(only_ops)
    if reading == "headers":
        return HeaderBodies()
    if reading == "notes":
        return NoteBodies() if only_ops is None else OpBodies(only_ops)
    if reading == "schemas":
        return SchemaBodies(compiled=compiled)
    if reading == "verify":
        return VerifyingBodies(compiled=compiled)
    raise InvalidArgumentError(f"reading must be one of {', '.join(READINGS)}, not {reading!r}")


_MALFORMED_PREVIEW = 64


class ConversationDecoder:
    """Decodes both directions of one connection.

    The first frame of each side is taken as its connect record only if it starts with
    protocolVersion 0 (a later frame starts with a non-zero xid), so a capture that starts after the
    handshake decodes too.  ``handshake=False`` skips the connect records altogether.
    Records are read by ``bodies`` (a :class:`~zkwire.trace.bodies.BodyDecoder`), by default the one
    :func:`body_decoder` gives for ``reading`` (the fast codec; ``compiled=True``: the construct schemas'
    compiled form where they are used; ``only_ops``: see :func:`body_decoder`).  Frames longer than
    ``max_frame`` break their direction, as they would break a real client or server.
    """

    def __init__(
        self,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        handshake: bool = True,
        compiled: bool = False,
        bodies: BodyDecoder | None = None,
        reading: str = "fast",
        only_ops: frozenset[int] | None = None,
    ) -> None:
        self.max_frame = max_frame
        self.handshake = handshake
        self.compiled = compiled
        self.bodies: BodyDecoder = (
            bodies if bodies is not None else body_decoder(reading, compiled=compiled, only_ops=only_ops)
        )
        self._verifying = self.bodies if isinstance(self.bodies, VerifyingBodies) else None
        self._client = Side(CLIENT)
        self._server = Side(SERVER)
        if not handshake:
            self._client.state = self._server.state = "frames"
        self._ledger = RequestLedger()
        self._client_frames = ClientFrames(self.bodies, self._ledger)
        self._server_frames = ServerFrames(self.bodies, self._ledger)

    # ------------------------------------------------------------------------------------ public

    @property
    def pending(self) -> dict[int, int]:
        """Requests not answered yet: xid to op code."""
        return {xid: p.op for xid, p in self._ledger.pending.items()}

    @property
    def undecodable_bytes(self) -> dict[str, int]:
        """Bytes per direction that could not be decoded (after a broken length prefix, or after a 4lw)."""
        return {CLIENT: self._client.skipped, SERVER: self._server.skipped}

    def frame_left(self, direction: str) -> int | None:
        """How many bytes of ``direction``'s current frame are still to come (0: the next byte fed starts
        a frame), or None when that is not known: its length prefix is not all there, or the direction
        is not (or no longer) framed by length prefixes."""
        side = self._client if direction == CLIENT else self._server
        if side.state == "broken" or side.eof or side.mode in ("4lw", "text"):
            return None
        buf = side.buf
        if not buf:
            return 0
        if len(buf) < 4:
            return None
        length: int = _INT.unpack_from(buf)[0]
        return 4 + length - len(buf)

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
        if side.mode == "zk" and not side.buf and side.state != "broken" and not side.eof:
            return self._split(side, now, data)  # framed from ``data`` itself (see _split)
        if not self._accept(side, data):
            return []
        if side.mode is None:
            if len(side.buf) < 4:
                return []
            side.mode = "4lw" if is_four_letter(bytes(side.buf[:4])) else "zk"
            # Followed from its ConnectRequest: every reply of the server must pair with a request seen.
            self._ledger.complete = side.state == "handshake" and detect_side(side.buf) == CLIENT
        if side.mode == "4lw":
            return self._client_frames.four_letter(side, now)
        return self._split(side, now)

    def feed_server(self, data: bytes | bytearray | memoryview, now: float | None = None) -> list[DecodedFrame]:
        """Bytes the server sent; returns the frames they complete."""
        side = self._server
        if side.mode == "zk" and not side.buf and side.state != "broken" and not side.eof:
            return self._split(side, now, data)  # framed from ``data`` itself (see _split)
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
                text = not 0 <= n <= self.max_frame and looks_like_text(bytes(side.buf[:4]))
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
            return [self._server_frames.text_answer(side, self._client_frames.word, now)]
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
            self._ledger.server_skipped()
        else:
            self._ledger.complete = False
        frame = side.frame("skipped", b"", side.offset, now, note=f"{dropped} bytes {reason}")
        frame = dataclasses.replace(frame, size=dropped)
        side.offset += dropped
        return [frame]

    def finish(self, now: float | None = None) -> list[DecodedFrame]:
        """Both sides closed."""
        return self.eof_client(now) + self.eof_server(now)

    # ----------------------------------------------------------------------------------- framing

    def _accept(self, side: Side, data: bytes | bytearray | memoryview) -> bool:
        if not data:
            return False
        if side.state == "broken" or side.eof:
            side.skipped += len(data)
            return False
        side.buf += data
        return True

    def _finish(self, side: Side, now: float | None) -> list[DecodedFrame]:
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
        frame = side.malformed(preview, side.offset, message, now, secret_spans=spans)
        side.offset += left
        return [frame]

    def _split(
        self, side: Side, now: float | None, data: bytes | bytearray | memoryview | None = None
    ) -> list[DecodedFrame]:
        """The complete frames of ``side``'s buffer; or, with ``data`` (bytes fed while nothing was
        buffered), of ``data`` itself, its incomplete end then buffered: most reads hold whole frames, which
        are then cut from what was read without going through the buffer."""
        buf = side.buf if data is None else data
        frames: list[DecodedFrame] = []
        pos = 0
        end = len(buf)
        base = side.offset
        max_frame = self.max_frame
        unpack = _INT.unpack_from
        reader: ClientFrames | ServerFrames = self._client_frames if side.direction == CLIENT else self._server_frames
        read_message = reader.message
        verifying = self._verifying
        while end - pos >= 4:
            n = unpack(buf, pos)[0]
            if n < 0 or n > max_frame:
                head = bytes(buf[pos : pos + 4])
                hint = " (looks like text: not a ZooKeeper stream?)" if looks_like_text(head) else ""
                message = f"frame length {n} outside 0..{max_frame}{hint}; rest of the stream skipped"
                preview = bytes(buf[pos : pos + _MALFORMED_PREVIEW])
                spans = shifted(self._secret_spans_of(side, preview[4:], exact=False), 4)
                frames.append(side.malformed(preview, base + pos, message, now, secret_spans=spans))
                side.state = "broken"
                side.skipped += end - pos
                pos = end
                break
            stop = pos + 4 + n
            if stop > end:
                break
            payload = bytes(buf[pos + 4 : stop])
            if side.state == "handshake":
                first = True
                decoded = reader.frame(side, payload, base + pos, now)
            else:
                first = False
                decoded = read_message(side, payload, base + pos, now)
            if verifying is not None:
                disagreement = verifying.take()
                if disagreement is not None:
                    decoded = dataclasses.replace(decoded, disagreement=disagreement)
            frames.append(decoded)
            pos = stop
            if decoded.kind == "malformed" and self._secret_past_frame(side, decoded, first):
                # The frame's length cut a secret short: what follows may be the rest of it, not frames.
                note = "a secret runs past this frame's end: rest of the stream not decoded"
                frames[-1] = dataclasses.replace(decoded, note=f"{decoded.note}; {note}" if decoded.note else note)
                side.state = "broken"
                side.skipped += end - pos
                pos = end
                break
        if data is None:
            del side.buf[:pos]
        elif pos < end:
            side.buf += data[pos:]
        side.offset = base + pos
        return frames

    def _secret_past_frame(self, side: Side, frame: DecodedFrame, first: bool) -> bool:
        """Whether a secret the (malformed) frame may carry, read as either side's, runs past its end."""
        payload = frame.payload
        roles = candidate_roles(payload, self._role_of(side, payload, first))
        if frame.direction == SERVER and frame.op == OpCode.SASL:
            roles.add("sasl_reply")
        return any(secret_runs_past(role, payload) for role in roles)

    def _secret_spans_of(
        self, side: Side, payload: bytes, *, exact: bool, full_length: int | None = None
    ) -> tuple[tuple[int, int], ...]:
        """Secret spans of a (possibly partial) payload that is the next frame of ``side``."""
        role = self._role_of(side, payload, side.state == "handshake")
        return secret_spans(role, payload, exact=exact, full_length=full_length)

    def _role_of(self, side: Side, payload: bytes, first: bool) -> SecretRole | None:
        """The role the next frame of ``side`` has, by where it is and its layout."""
        # A frame opening with 0 (a connect record's protocolVersion, never a request's xid) is taken for
        # a handshake even where none was expected.
        zero = payload[:4] == b"\x00\x00\x00\x00"
        if side.direction == CLIENT:
            if (first and not starts_mid_conversation(payload, 8)) or zero:
                role: SecretRole | None = "connect_request"
            else:
                role = request_role(payload)
        elif (first and not starts_mid_conversation(payload, 16)) or zero:
            role = "connect_response"
        else:
            role = None
            if len(payload) >= 4:
                pending = self._ledger.pending.get(_INT.unpack_from(payload)[0])
                if pending is not None and pending.op == OpCode.SASL:
                    role = "sasl_reply"
        return role


def detect_side(data: bytes | bytearray | memoryview) -> str:
    """Which side sent ``data``: the client if it opens with a ConnectRequest (length 44 or 45 and
    protocolVersion 0) or a four-letter word, else the server."""
    head = bytes(data[:8])
    if len(head) >= 4 and is_four_letter(head[:4]):
        return CLIENT
    if len(head) == 8:
        n, proto = struct.unpack(">ii", head)
        if proto == 0 and n in CONNECT_REQUEST_SIZES:
            return CLIENT
    return SERVER


def decode_stream(
    data: bytes | bytearray | memoryview,
    side: str = "auto",
    *,
    handshake: bool = True,
    max_frame: int = DEFAULT_MAX_FRAME,
    compiled: bool = False,
    reading: str = "fast",
) -> list[DecodedFrame]:
    """Decode one captured direction of a connection (``side`` "client", "server" or "auto").

    A server stream decoded on its own has no requests to pair with, so reply bodies stay undecoded
    (only headers are shown); use :func:`decode_conversation` when both sides were captured.
    """
    if side == "auto":
        side = detect_side(data)
    if side not in (CLIENT, SERVER):
        raise InvalidArgumentError(f"side must be 'client', 'server' or 'auto', not {side!r}")
    decoder = ConversationDecoder(max_frame=max_frame, handshake=handshake, compiled=compiled, reading=reading)
    frames = decoder.feed(side, data)
    return frames + decoder.eof(side)


def decode_conversation(
    client: bytes | bytearray | memoryview,
    server: bytes | bytearray | memoryview,
    *,
    handshake: bool = True,
    max_frame: int = DEFAULT_MAX_FRAME,
    compiled: bool = False,
    reading: str = "fast",
) -> list[DecodedFrame]:
    """Decode both captured directions of one connection: the client's frames, then the server's.

    Without timestamps the interleaving is unknown, but replies pair with requests by xid, so
    feeding all of the client's bytes first decodes every reply body.
    """
    decoder = ConversationDecoder(max_frame=max_frame, handshake=handshake, compiled=compiled, reading=reading)
    frames = decoder.feed_client(client)
    frames += decoder.feed_server(server)
    return frames + decoder.finish()
