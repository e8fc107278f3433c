"""Known secret bytes planted in a conversation -- a session password both ways, an auth credential and
SASL tokens both ways -- and what is needed to look for them in every view of the tracer after the
conversation was damaged: a length prefix or an int32 inside a frame (a secret's own length among them)
set to a wrong value, the stream cut short, a side read as the other.  Used by
tests/unit/test_masking_unsure.py and by the ``unsure`` target of ``python -m tests.fuzz``."""

from __future__ import annotations

import random
import struct

from tests.helpers.fuzzing import Sink, shows
from zkwire.constants import AUTH_XID, OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import frame
from zkwire.protocol.records import (
    AuthPacket,
    ConnectRequest,
    ConnectResponse,
    GetDataRequest,
    GetSASLRequest,
    ReplyHeader,
    SetSASLResponse,
)
from zkwire.trace.decoder import ConversationDecoder
from zkwire.trace.frames import DecodedFrame
from zkwire.trace.output import TraceOptions
from zkwire.trace.stats import TraceStats

__all__ = ["SECRETS", "READINGS_SHOWN", "conversation", "corrupt", "decode", "layouts", "leaked", "rendered"]

SEED = 20261128
_rng = random.Random(SEED)
SECRETS = {
    "client passwd": _rng.randbytes(16),
    "server passwd": _rng.randbytes(16),
    "auth credential": _rng.randbytes(24),
    "sasl request token": _rng.randbytes(32),
    "sasl reply token": _rng.randbytes(32),
}


def _body(record: object) -> bytes:
    out = bytearray()
    record.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def conversation() -> tuple[bytes, bytes]:
    """A client that connects, authenticates with digest and with SASL, then reads a node."""
    client = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, SECRETS["client passwd"], False)))
    client += bytes(encode_request(AUTH_XID, OpCode.AUTH, AuthPacket(0, "digest", SECRETS["auth credential"])))
    client += bytes(encode_request(1, OpCode.SASL, GetSASLRequest(SECRETS["sasl request token"])))
    client += bytes(encode_request(2, OpCode.GET_DATA, GetDataRequest("/a", False)))
    server = frame(_body(ConnectResponse(0, 10000, 0x1234, SECRETS["server passwd"], False)))
    server += frame(_body(ReplyHeader(AUTH_XID, 0, 0)))
    server += frame(_body(ReplyHeader(1, 5, 0)) + _body(SetSASLResponse(SECRETS["sasl reply token"])))
    server += frame(_body(ReplyHeader(2, 6, -101)))
    return client, server


#: Each reading of records with the views the tracer shows it in (``zkwire decode``'s choice, see
#: ``_reading`` in zkwire/trace/tracer.py): every record for the plain, verbose and JSON views; the records
#: the lines show for the plain view; the header facts for the summary alone.  The summary comes with each.
READINGS_SHOWN: dict[str, tuple[tuple[bool, bool, int], ...]] = {
    "fast": ((False, False, 4096), (True, False, 0), (True, False, 300), (False, True, 0)),
    "notes": ((False, False, 4096), (False, False, 0)),
    "headers": (),
}


def rendered(frames: list[DecodedFrame], reading: str = "fast") -> str:
    """What the tracer shows of ``frames`` read with ``reading``: each of its views (verbose: the record
    and a hex dump; capped and not), and the summary."""
    sink = Sink()
    for verbose, json_lines, max_line in READINGS_SHOWN[reading]:
        options = TraceOptions(out=sink, verbose=verbose, json_lines=json_lines, max_line=max_line)  # type: ignore[arg-type]
        for f in frames:
            options.emit(1, f, 0.0)
    summary = TraceOptions(out=sink, show_frames=False, stats=TraceStats())  # type: ignore[arg-type]
    for f in frames:
        summary.emit(1, f, 0.0)
    summary.summary()
    return "".join(sink.parts)


def leaked(frames: list[DecodedFrame], reading: str = "fast") -> list[str]:
    text = rendered(frames, reading)
    return [f"{name}: {piece!r}" for name, secret in SECRETS.items() if (piece := shows(text, secret)) is not None]


def layouts(client: bytes, server: bytes) -> list[tuple[bytes | None, bytes | None]]:
    """The two streams as sent, and read as the wrong sides."""
    return [(client, server), (None, client), (server, None), (server, client)]


def _frame_starts(stream: bytes) -> list[int]:
    starts, pos = [], 0
    while pos + 4 <= len(stream):
        starts.append(pos)
        pos += 4 + struct.unpack_from(">i", stream, pos)[0]
    return starts


def corrupt(rng: random.Random, stream: bytes) -> bytes:
    """A length prefix, or an int32 inside a frame (a secret's length among them), set to a wrong value."""
    data = bytearray(stream)
    starts = _frame_starts(stream)
    at = rng.choice(starts) if rng.random() < 0.5 else rng.randrange(0, max(len(data) - 4, 1))
    old = struct.unpack_from(">i", data, at)[0]
    new = rng.choice((old + rng.randint(1, 40), old - rng.randint(1, 40), -7, 0, 1 << 30, rng.randint(0, 64)))
    struct.pack_into(">i", data, at, max(min(new, (1 << 31) - 1), -(1 << 31)))
    if rng.random() < 0.3:
        data = data[: rng.randint(0, len(data))]
    return bytes(data)


def decode(
    client: bytes | None, server: bytes | None, *, handshake: bool = True, reading: str = "fast"
) -> list[DecodedFrame]:
    decoder = ConversationDecoder(handshake=handshake, reading=reading)
    frames: list[DecodedFrame] = []
    if client is not None:
        frames += decoder.feed_client(client)
    if server is not None:
        frames += decoder.feed_server(server)
    return frames + decoder.finish()
