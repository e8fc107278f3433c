"""The tracer's readings of records: the fast codec (the default), header facts only, the construct
schemas, and both compared (``--verify``).

The fast codec and the construct schemas are two descriptions of the protocol: on the corpus of real
traffic they give the same frames, and on mutated conversations they agree on what is malformed.
"""

from __future__ import annotations

import io
import json
import random
import time

import pytest

import tests.helpers.fuzzing as F
from zkwire.constants import OpCode
from zkwire.errors import InvalidArgumentError, ProtocolError
from zkwire.protocol.codec import decode_response_body, encode_request
from zkwire.protocol.multi import MultiResponse, MultiResult
from zkwire.protocol.records import (
    ACL,
    ClientInfo,
    Create2Response,
    CreateResponse,
    ErrorResponse,
    GetACLResponse,
    GetDataRequest,
    GetDataResponse,
    Id,
    ReplyHeader,
    SetDataResponse,
    Stat,
    WhoAmIResponse,
)
from zkwire.trace.decoder import READINGS, ConversationDecoder, body_decoder, decode_conversation
from zkwire.trace.fastbodies import PATH_FIRST_OPS, FastBodies, HeaderBodies, plain
from zkwire.trace.output import TraceOptions
from zkwire.trace.render import format_frame, frame_to_json
from zkwire.trace.stats import TraceStats
from zkwire.trace.verify import VerifyingBodies, first_difference

CONVERSATIONS = F.load_conversations()
MUTATIONS = 300  # mutated conversations per reading compared
TIME_LIMIT = 120.0


def _frames(client: bytes, server: bytes, reading: str) -> list:  # type: ignore[type-arg]
    return decode_conversation(client, server, reading=reading)


def test_every_reading_has_a_body_decoder() -> None:
    for reading in READINGS:
        assert body_decoder(reading).headers_only == (reading == "headers")
    with pytest.raises(InvalidArgumentError):
        body_decoder("quick")


@pytest.mark.parametrize("conv", CONVERSATIONS, ids=[c.name for c in CONVERSATIONS])
def test_the_fast_codec_reads_the_corpus_as_the_construct_schemas_do(conv: F.Conversation) -> None:
    schemas = _frames(conv.client, conv.server, "schemas")
    assert schemas == _frames(conv.client, conv.server, "fast")
    verified = _frames(conv.client, conv.server, "verify")
    assert [f.disagreement for f in verified] == [None] * len(verified)
    assert verified == schemas


@pytest.mark.parametrize("conv", CONVERSATIONS, ids=[c.name for c in CONVERSATIONS])
def test_header_facts_alone_give_the_same_summary(conv: F.Conversation) -> None:
    summaries = []
    for reading in ("fast", "headers"):
        stats = TraceStats()
        for f in _frames(conv.client, conv.server, reading):
            stats.add(1, f)
        summaries.append(stats.to_json())
    assert summaries[0] == summaries[1]


def test_header_facts_do_not_decode_record_bodies() -> None:
    request = bytes(encode_request(7, OpCode.GET_DATA, GetDataRequest("/a/b", True)))[4:]
    headers = HeaderBodies()
    assert headers.request(request) is None
    assert headers.path(OpCode.GET_DATA, request, None) == "/a/b"
    assert headers.reply(OpCode.GET_DATA, b"\x00" * 16 + b"anything at all") is None
    assert {OpCode.GET_DATA, OpCode.CREATE, OpCode.SET_DATA, OpCode.EXISTS} <= PATH_FIRST_OPS
    assert OpCode.SET_WATCHES not in PATH_FIRST_OPS and OpCode.MULTI not in PATH_FIRST_OPS


def test_mutated_conversations_are_malformed_for_both_readings_alike() -> None:
    rng = random.Random(20261128)
    started = time.monotonic()
    compared = 0
    for _ in range(MUTATIONS):
        assert time.monotonic() - started < TIME_LIMIT
        conv = rng.choice(CONVERSATIONS)
        client = F.mutate_stream(rng, conv.client) if rng.random() < 0.5 else conv.client
        server = F.mutate_stream(rng, conv.server) if rng.random() < 0.7 else conv.server
        fast = _frames(client, server, "fast")
        schemas = _frames(client, server, "schemas")
        # The same frames, the same kinds (malformed where one is), the same records; only the words of
        # a decoding error may differ.
        assert [(f.kind, f.record, f.xid, f.op) for f in fast] == [(f.kind, f.record, f.xid, f.op) for f in schemas]
        verified = _frames(client, server, "verify")
        assert not [f.disagreement for f in verified if f.disagreement]
        compared += len(fast)
    assert compared > MUTATIONS


def test_plain_values_have_the_construct_shape() -> None:
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    assert plain(stat)["mzxid"] == 2
    acl = GetACLResponse((ACL(31, Id("world", "anyone")),), stat)
    assert plain(acl)["acl"] == [{"perms": 31, "id": {"scheme": "world", "id": "anyone"}}]
    assert plain(bytearray(b"ab")) == b"ab"
    with pytest.raises(TypeError):
        plain(object())


def test_a_disagreement_is_shown_on_the_frame_and_counted() -> None:
    class Skewed(FastBodies):
        __slots__ = ()

        def reply(self, op: int | None, payload: bytes) -> object:
            value = super().reply(op, payload)
            if isinstance(value, dict) and "data" in value:
                value = {**value, "data": b"not what was sent"}
            return value

    verifying = VerifyingBodies()
    verifying.fast = Skewed()
    conv = next(c for c in CONVERSATIONS if b"\x00\x00\x00\x04" in c.client)  # one with a getData
    decoder = ConversationDecoder(bodies=verifying)
    frames = decoder.feed_client(conv.client) + decoder.feed_server(conv.server) + decoder.finish()
    disagreeing = [f for f in frames if f.disagreement]
    assert disagreeing, "a getData reply read differently"
    assert "record.data" in (disagreeing[0].disagreement or "")
    assert "VERIFY: reply: the fast codec and the construct schemas read record.data differently" in format_frame(
        disagreeing[0]
    )
    assert frame_to_json(disagreeing[0])["disagreement"] == disagreeing[0].disagreement
    out = io.StringIO()
    stats = TraceStats()
    stats.verified = 0
    options = TraceOptions(out=out, stats=stats, json_lines=True)
    for f in frames:
        options.emit(1, f, 0.0)
    options.summary()
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert summary["disagreements"] == len(disagreeing) and summary["verified"] == len(frames)
    assert any(line.startswith("verify: ") and "disagreements" in line for line in stats.lines())


def test_where_two_values_first_differ() -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "record.a[1]"
    assert first_difference({"a": 1}, {"b": 1}) == "record (keys)"
    assert first_difference([1], [1, 2]) == "record (1 / 2 items)"
    assert first_difference(1, "1") == "record (int / str)"


def _reply(xid: int, body: object) -> bytes:
    out = bytearray()
    ReplyHeader(xid, 9, 0).write(out)
    body.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def big_replies() -> dict[str, tuple[int, bytes]]:
    """Replies of about 1 MiB: a multi of 116k results, a multiRead of errors, getACL, whoAmI."""
    check = MultiResult(OpCode.CHECK, 0, None)
    error = MultiResult(-1, -101, ErrorResponse(-101))
    return {
        "multi": (OpCode.MULTI, _reply(5, MultiResponse((check,) * 116_000))),
        "multiRead": (OpCode.MULTI_READ, _reply(5, MultiResponse((error,) * 80_000))),
        "getACL": (
            OpCode.GET_ACL,
            _reply(5, GetACLResponse((ACL(31, Id("digest", "user:0123456789abcdef")),) * 28_000, Stat(*range(11)))),
        ),
        "whoAmI": (OpCode.WHO_AM_I, _reply(5, WhoAmIResponse((ClientInfo("digest", "user-0123456789"),) * 40_000))),
    }


@pytest.mark.parametrize("name", ["multi", "multiRead", "getACL", "whoAmI"])
def test_large_replies_read_the_same_both_ways(name: str) -> None:
    op, payload = big_replies()[name]
    assert len(payload) > 900_000
    fast = FastBodies().reply(op, payload)
    assert first_difference(fast, body_decoder("schemas", compiled=True).reply(op, payload)) is None


def test_requests_without_replies_are_kept_up_to_a_bound() -> None:
    """A client's side decoded alone: its requests never pair, and the oldest are forgotten past the bound."""
    from zkwire.trace import pairing

    decoder = ConversationDecoder(handshake=False)
    n = pairing.MAX_PENDING + 10
    stream = b"".join(
        bytes(encode_request(xid, OpCode.GET_DATA, GetDataRequest("/a", False))) for xid in range(1, n + 1)
    )
    frames = decoder.feed_client(stream)
    assert len(frames) == n
    assert len(decoder.pending) == pairing.MAX_PENDING and min(decoder.pending) == 11


def _record_path(op: int, payload: bytes) -> object:
    """FastBodies' reading of a successful reply the plain way: the codec's record, then plain()."""
    try:
        record = decode_response_body(op, payload)
    except ProtocolError:
        return ProtocolError
    if isinstance(record, MultiResponse):
        return {"results": [{"op": o, "err": e, "body": None if b is None else plain(b)} for o, e, b in record.results]}
    return plain(record)


def _fast_path(op: int, payload: bytes) -> object:
    try:
        return FastBodies().reply(op, payload)
    except ProtocolError:
        return ProtocolError


def _large_reply(rng: random.Random, op: int) -> bytes:
    """A reply of many entries, in runs or mixed: the replies read straight into plain values."""
    n = rng.choice([0, 1, 31, 32, 33, 200, 1000])
    texts = ["digest", "world", "anyone", "", "user:0123456789abcdef", "x" * 40, "y" * 127]
    perms = [31, 1, 0, 127]
    if rng.random() < 0.3:  # text and numbers that are not ASCII bytes: read by the plain version
        texts += ["é", "z" * 200]
        perms += [128, -1]
    if op == OpCode.GET_ACL:
        acl = tuple(ACL(rng.choice(perms), Id(rng.choice(texts), rng.choice(texts))) for _ in range(n))
        return _reply(5, GetACLResponse(acl, Stat(*range(11))))
    if op == OpCode.WHO_AM_I:
        return _reply(5, WhoAmIResponse(tuple(ClientInfo(rng.choice(texts), rng.choice(texts)) for _ in range(n))))
    stat = Stat(*range(11))
    kinds = [
        MultiResult(OpCode.CHECK, 0, None),
        MultiResult(OpCode.DELETE, 0, None),
        MultiResult(-1, -101, ErrorResponse(-101)),
        MultiResult(-1, 0, ErrorResponse(0)),
        MultiResult(-1, -2, ErrorResponse(-2)),
        MultiResult(OpCode.CREATE, 0, CreateResponse("/a/b")),
        MultiResult(OpCode.CREATE2, 0, Create2Response("/a/c", stat)),
        MultiResult(OpCode.SET_DATA, 0, SetDataResponse(stat)),
    ]
    if op == OpCode.MULTI_READ:
        kinds[5:] = [MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"data", stat))]
    results: list[MultiResult] = []
    while len(results) < n:
        results += [rng.choice(kinds)] * rng.choice([1, 1, 2, 17, 300])
    return _reply(5, MultiResponse(tuple(results[:n])))


@pytest.mark.parametrize("op", [OpCode.GET_ACL, OpCode.WHO_AM_I, OpCode.MULTI, OpCode.MULTI_READ])
def test_large_replies_read_straight_are_what_the_records_give(op: int) -> None:
    """getACL, whoAmI, multi and multiRead replies are read straight into plain values when they are
    large and plain: the values of the codec's records, or its error, whatever the bytes (runs of
    results, mixed ones, non-ASCII text, bytes changed, cut short or added)."""
    rng = random.Random(op)
    for _ in range(150):
        payload = bytearray(_large_reply(rng, op))
        for _ in range(rng.choice([0, 0, 1, 3])):
            at = rng.randrange(16, len(payload)) if len(payload) > 16 else 16
            if at < len(payload):
                payload[at] = rng.randrange(256)
        cut = rng.choice([None, None, None, -1, -4, 3])
        if cut is not None:
            payload = payload[:cut] if cut < 0 else payload + bytes(cut)
        fast, records = _fast_path(op, bytes(payload)), _record_path(op, bytes(payload))
        assert fast == records  # lists where the records give lists (a list is no tuple)
