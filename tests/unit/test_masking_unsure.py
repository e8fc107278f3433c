"""Secrets stay hidden when the decoder cannot be sure what it reads: a stream decoded as the wrong side,
a length prefix or a secret's own length corrupted, a conversation whose client seems to open with a
four-letter word.  Known secret bytes are planted in a session password (both ways), an auth credential
and SASL tokens (both ways); every text, verbose and JSON line of every variant is searched for them.

Seeded and bounded: a fixed number of variants per case, and a time limit on the whole run.
"""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Iterator

import pytest

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
from zkwire.trace.frames import CLIENT, SERVER, DecodedFrame
from zkwire.trace.output import TraceOptions

SEED = 20261128
VARIANTS = 150  # per case
TIME_LIMIT = 60.0  # seconds for the whole file's fuzzing, well above what it takes

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


def rendered(frames: list[DecodedFrame]) -> str:
    """Every view of the frames: plain lines, verbose (record and hex dump), JSON; capped and not."""
    sink = Sink()
    for verbose, json_lines, max_line in ((False, False, 4096), (True, False, 0), (True, False, 300), (False, True, 0)):
        options = TraceOptions(out=sink, verbose=verbose, json_lines=json_lines, max_line=max_line)  # type: ignore[arg-type]
        for f in frames:
            options.emit(1, f, 0.0)
    return "".join(sink.parts)


def leaked(frames: list[DecodedFrame]) -> list[str]:
    text = rendered(frames)
    return [f"{name}: {piece!r}" for name, secret in SECRETS.items() if (piece := shows(text, secret)) is not None]


def _frame_starts(stream: bytes) -> list[int]:
    starts, pos = [], 0
    while pos + 4 <= len(stream):
        starts.append(pos)
        pos += 4 + struct.unpack_from(">i", stream, pos)[0]
    return starts


def _corrupt(rng: random.Random, stream: bytes) -> bytes:
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


def _decode(client: bytes | None, server: bytes | None, *, handshake: bool = True) -> list[DecodedFrame]:
    decoder = ConversationDecoder(handshake=handshake)
    frames: list[DecodedFrame] = []
    if client is not None:
        frames += decoder.feed_client(client)
    if server is not None:
        frames += decoder.feed_server(server)
    return frames + decoder.finish()


def cases() -> Iterator[tuple[str, bytes | None, bytes | None]]:
    client, server = conversation()
    yield "as sent", client, server
    yield "client stream read as the server's", None, client
    yield "server stream read as the client's", server, None
    yield "both sides swapped", server, client
    for word in (b"ruok", b"stat", b"mntr"):
        yield f"client opens with {word.decode()}", word + client[4:], server


def test_the_planted_secrets_are_where_the_decoder_expects_them() -> None:
    client, server = conversation()
    frames = _decode(client, server)
    assert [f.kind for f in frames].count("malformed") == 0
    assert not leaked(frames)
    shown = rendered(frames)
    assert "**" in shown


@pytest.mark.parametrize(("name", "client", "server"), list(cases()), ids=[c[0] for c in cases()])
def test_secrets_stay_hidden_when_the_decoder_reads_the_wrong_side(
    name: str, client: bytes | None, server: bytes | None
) -> None:
    for handshake in (True, False):
        assert not leaked(_decode(client, server, handshake=handshake)), name


@pytest.mark.parametrize("case", range(6))
def test_secrets_stay_hidden_in_corrupted_streams(case: int) -> None:
    rng = random.Random(SEED + case)
    client, server = conversation()
    started = time.monotonic()
    found: list[str] = []
    for i in range(VARIANTS):
        assert time.monotonic() - started < TIME_LIMIT, f"stopped after {i} variants"
        c = _corrupt(rng, client) if case % 3 != 1 else client
        s = _corrupt(rng, server) if case % 3 != 0 else server
        layouts = [(c, s), (None, c), (s, None), (s, c)]
        got_client, got_server = layouts[rng.randrange(len(layouts))] if case >= 3 else (c, s)
        frames = _decode(got_client, got_server, handshake=rng.random() < 0.8)
        found += [f"variant {i}: {leak}" for leak in leaked(frames)]
    assert not found, f"{len(found)} leaks, first: {found[:5]}"


def test_a_text_answer_that_is_not_text_is_hidden() -> None:
    _, server = conversation()
    frames = _decode(b"ruok", server)
    answer = [f for f in frames if f.direction == SERVER]
    assert answer and answer[0].kind == "four_letter"
    assert not leaked(frames)
    assert all(f.direction in (CLIENT, SERVER) for f in frames)
