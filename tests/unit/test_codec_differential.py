"""Differential tests: the fast codec against the declarative construct schemas of zkwire.trace.schema.

For every record, random values (nulls, empties, unicode, integer limits) must encode to the same
bytes both ways, and each side must decode the other's bytes back to the same value.  The construct
side runs both interpreted and compiled.  The stream decoder (which decodes with the schemas) is
checked against the fast codec on random conversations.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from construct import Pass
from helpers.schemas import build_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkwire.constants import OpCode
from zkwire.errors import ProtocolError
from zkwire.protocol import multi, optable, records
from zkwire.protocol.codec import (
    REQUEST_RECORDS,
    RESPONSE_RECORDS,
    decode_connect_request,
    decode_connect_response,
    decode_reply,
    decode_request,
    decode_watcher_event,
    encode_connect_request,
    encode_request,
    op_name,
)
from zkwire.protocol.framing import frame
from zkwire.protocol.jute import Reader
from zkwire.trace import schema as S
from zkwire.trace.decoder import ConversationDecoder, DecodedFrame, decode_stream, format_frame, frame_to_json

MODES = (False, True)  # interpreted, compiled
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------------------ values

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

i32 = st.one_of(st.sampled_from([INT32_MIN, -1, 0, 1, INT32_MAX]), st.integers(INT32_MIN, INT32_MAX))
i64 = st.one_of(
    st.sampled_from([INT64_MIN, INT32_MIN - 1, -1, 0, 1, INT32_MAX + 1, INT64_MAX]), st.integers(INT64_MIN, INT64_MAX)
)
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)  # any code point UTF-8 can carry
ustr = st.one_of(st.none(), st.just(""), text, st.sampled_from(["/", "/a/b", "/日本/\u00e9", "\U0001f600", "\x00"]))
buf = st.one_of(st.none(), st.just(b""), st.binary(max_size=40))
bools = st.booleans()
opt_bool = st.one_of(st.none(), bools)


def vector(item: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...] | None]:
    return st.one_of(st.none(), st.just(()), st.lists(item, max_size=4).map(tuple))


stat = st.builds(records.Stat, i64, i64, i64, i64, i32, i32, i32, i64, i32, i32, i64)
ident = st.builds(records.Id, ustr, ustr)
acl = st.builds(records.ACL, i32, ident)
acls = vector(acl)
strings = vector(ustr)

R = records
RECORDS: dict[type[Any], st.SearchStrategy[Any]] = {
    R.Stat: stat,
    R.Id: ident,
    R.ACL: acl,
    R.ClientInfo: st.builds(R.ClientInfo, ustr, ustr),
    R.RequestHeader: st.builds(R.RequestHeader, i32, i32),
    R.ReplyHeader: st.builds(R.ReplyHeader, i32, i64, i32),
    R.MultiHeader: st.builds(R.MultiHeader, i32, bools, i32),
    R.ConnectRequest: st.builds(R.ConnectRequest, i32, i64, i32, i64, buf, opt_bool),
    R.ConnectResponse: st.builds(R.ConnectResponse, i32, i32, i64, buf, opt_bool),
    R.CreateRequest: st.builds(R.CreateRequest, ustr, buf, acls, i32),
    R.CreateTTLRequest: st.builds(R.CreateTTLRequest, ustr, buf, acls, i32, i64),
    R.DeleteRequest: st.builds(R.DeleteRequest, ustr, i32),
    R.CheckVersionRequest: st.builds(R.CheckVersionRequest, ustr, i32),
    R.ExistsRequest: st.builds(R.ExistsRequest, ustr, bools),
    R.GetDataRequest: st.builds(R.GetDataRequest, ustr, bools),
    R.GetChildrenRequest: st.builds(R.GetChildrenRequest, ustr, bools),
    R.GetChildren2Request: st.builds(R.GetChildren2Request, ustr, bools),
    R.SetDataRequest: st.builds(R.SetDataRequest, ustr, buf, i32),
    R.GetACLRequest: st.builds(R.GetACLRequest, ustr),
    R.SetACLRequest: st.builds(R.SetACLRequest, ustr, acls, i32),
    R.SyncRequest: st.builds(R.SyncRequest, ustr),
    R.GetAllChildrenNumberRequest: st.builds(R.GetAllChildrenNumberRequest, ustr),
    R.GetEphemeralsRequest: st.builds(R.GetEphemeralsRequest, ustr),
    R.ReconfigRequest: st.builds(R.ReconfigRequest, ustr, ustr, ustr, i64),
    R.CheckWatchesRequest: st.builds(R.CheckWatchesRequest, ustr, i32),
    R.RemoveWatchesRequest: st.builds(R.RemoveWatchesRequest, ustr, i32),
    R.AddWatchRequest: st.builds(R.AddWatchRequest, ustr, i32),
    R.AuthPacket: st.builds(R.AuthPacket, i32, ustr, buf),
    R.SetWatches: st.builds(R.SetWatches, i64, strings, strings, strings),
    R.SetWatches2: st.builds(R.SetWatches2, i64, strings, strings, strings, strings, strings),
    R.GetSASLRequest: st.builds(R.GetSASLRequest, buf),
    R.SetSASLResponse: st.builds(R.SetSASLResponse, buf),
    R.CreateResponse: st.builds(R.CreateResponse, ustr),
    R.SyncResponse: st.builds(R.SyncResponse, ustr),
    R.Create2Response: st.builds(R.Create2Response, ustr, stat),
    R.ExistsResponse: st.builds(R.ExistsResponse, stat),
    R.SetDataResponse: st.builds(R.SetDataResponse, stat),
    R.SetACLResponse: st.builds(R.SetACLResponse, stat),
    R.GetDataResponse: st.builds(R.GetDataResponse, buf, stat),
    R.GetACLResponse: st.builds(R.GetACLResponse, acls, stat),
    R.GetChildrenResponse: st.builds(R.GetChildrenResponse, strings),
    R.GetChildren2Response: st.builds(R.GetChildren2Response, strings, stat),
    R.GetEphemeralsResponse: st.builds(R.GetEphemeralsResponse, strings),
    R.GetAllChildrenNumberResponse: st.builds(R.GetAllChildrenNumberResponse, i32),
    R.ErrorResponse: st.builds(R.ErrorResponse, i32),
    R.WhoAmIResponse: st.builds(R.WhoAmIResponse, vector(st.builds(R.ClientInfo, ustr, ustr))),
    R.WatcherEvent: st.builds(R.WatcherEvent, i32, i32, ustr),
}


def _multi_op(op: int) -> st.SearchStrategy[multi.MultiOp]:
    return RECORDS[optable.MULTI_REQUEST_RECORDS[op]].map(lambda request: multi.MultiOp(op, request))


def _multi_result(op: int) -> st.SearchStrategy[multi.MultiResult]:
    if op == OpCode.ERROR:
        return st.builds(lambda err, body: multi.MultiResult(op, err, R.ErrorResponse(body)), i32, i32)
    body = optable.MULTI_RESULT_RECORDS[op]
    bodies = st.none() if body is None else RECORDS[body]
    return st.builds(lambda err, b: multi.MultiResult(op, err, b), i32, bodies)


multi_ops = st.one_of(*(_multi_op(op) for op in optable.MULTI_REQUEST_RECORDS))
multi_results = st.one_of(*(_multi_result(op) for op in optable.MULTI_RESULT_RECORDS))
RECORDS[multi.MultiRequest] = st.lists(multi_ops, max_size=5).map(lambda ops: multi.MultiRequest(tuple(ops)))
RECORDS[multi.MultiResponse] = st.lists(multi_results, max_size=5).map(lambda rs: multi.MultiResponse(tuple(rs)))


def test_every_record_has_a_strategy_and_a_schema() -> None:
    fast = {name for name in R.__all__ if isinstance(getattr(R, name), type) and name != "Record"}
    fast -= {"STAT_STRUCT"}
    fast |= {"MultiRequest", "MultiResponse"}
    assert {cls.__name__ for cls in RECORDS} == fast
    assert set(S.RECORD_SCHEMAS) == fast
    for name in fast:  # same field names, in the same order
        cls = getattr(R, name, None) or getattr(multi, name)
        names = cls._fields if hasattr(cls, "_fields") else tuple(f.name for f in dataclasses.fields(cls))
        sc = S.RECORD_SCHEMAS[name]
        if name not in ("MultiRequest", "MultiResponse"):
            assert tuple(sub.name for sub in sc.subcons) == names


def test_op_tables_mirror_the_codec() -> None:
    assert set(S.REQUEST_SCHEMAS) == set(REQUEST_RECORDS)
    assert set(S.RESPONSE_SCHEMAS) == set(RESPONSE_RECORDS)
    for op, cls in REQUEST_RECORDS.items():
        sc = S.REQUEST_SCHEMAS[op]
        assert (sc is None) == (cls is None) and (cls is None or S.RECORD_SCHEMAS[cls.__name__] is sc)
    for op, cls in RESPONSE_RECORDS.items():
        sc = S.RESPONSE_SCHEMAS[op]
        assert (sc is None) == (cls is None) and (cls is None or S.RECORD_SCHEMAS[cls.__name__] is sc)
    assert set(S.MULTI_REQUEST_SCHEMAS) == set(optable.MULTI_REQUEST_RECORDS)
    assert set(S.MULTI_RESULT_SCHEMAS) == set(optable.MULTI_RESULT_RECORDS)
    for op, cls in optable.MULTI_RESULT_RECORDS.items():
        sc = S.MULTI_RESULT_SCHEMAS[op]
        assert sc is Pass if cls is None else sc is S.RECORD_SCHEMAS[cls.__name__]


def test_every_schema_compiles() -> None:
    for sc in [*S.RECORD_SCHEMAS.values(), S.RequestPayload, S.ReplyPayload]:
        assert S.compiled(sc) is S.compiled(sc)


# ----------------------------------------------------------------------------------------- records


def fast_bytes(record: Any) -> bytes:
    out = bytearray()
    record.write(out)
    return bytes(out)


def fast_read(cls: type[Any], data: bytes) -> Any:
    r = Reader(data)
    value = cls.read(r)
    r.expect_end(cls.__name__)
    return value


@pytest.mark.parametrize("cls", list(RECORDS), ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_record(cls: type[Any], data: st.DataObject) -> None:
    value = data.draw(RECORDS[cls])
    sc = S.RECORD_SCHEMAS[cls.__name__]
    encoded = fast_bytes(value)
    plain = S.record_to_plain(value)
    for mode in MODES:
        built = S.build(sc, plain, compiled=mode)
        assert built == encoded
        assert fast_read(cls, built) == value
        assert S.to_plain(S.parse(sc, encoded, compiled=mode)) == plain


# ---------------------------------------------------------------------------- requests and replies


def _body(cls: type[Any] | None) -> st.SearchStrategy[Any]:
    return st.none() if cls is None else RECORDS[cls]


@pytest.mark.parametrize("op", sorted(REQUEST_RECORDS), ids=op_name)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_request_frame(op: int, data: st.DataObject) -> None:
    xid = data.draw(i32)
    body = data.draw(_body(REQUEST_RECORDS[op]))
    encoded = bytes(encode_request(xid, op, body))
    plain = S.record_to_plain(body)
    for mode in MODES:
        built = S.build_request(xid, op, plain, compiled=mode)
        assert frame(built) == encoded
        assert decode_request(built) == (R.RequestHeader(xid, op), body)
        parsed = S.to_plain(S.parse_request(encoded[4:], compiled=mode))
        assert parsed == {"header": {"xid": xid, "type": op}, "body": plain}


reply_xids = i32.filter(lambda x: x != -1)


@pytest.mark.parametrize("op", sorted(RESPONSE_RECORDS), ids=op_name)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reply_frame(op: int, data: st.DataObject) -> None:
    xid, zxid = data.draw(reply_xids), data.draw(i64)
    err = data.draw(st.one_of(st.just(0), i32))
    body = data.draw(_body(RESPONSE_RECORDS[op])) if err == 0 else None
    header = R.ReplyHeader(xid, zxid, err)
    encoded = fast_bytes(header) + (b"" if body is None else fast_bytes(body))
    plain = S.record_to_plain(body)
    for mode in MODES:
        assert build_reply(op, xid, zxid, err, plain, compiled=mode) == encoded
        assert decode_reply(op, encoded) == (header, body)
        parsed = S.to_plain(S.parse_reply(op, encoded, compiled=mode))
        assert parsed == {"header": {"xid": xid, "zxid": zxid, "err": err}, "body": plain}


@SETTINGS
@given(zxid=i64, event=RECORDS[R.WatcherEvent])
def test_event_frame(zxid: int, event: R.WatcherEvent) -> None:
    encoded = fast_bytes(R.ReplyHeader(-1, zxid, 0)) + fast_bytes(event)
    for mode in MODES:
        assert build_reply(None, -1, zxid, 0, S.record_to_plain(event), compiled=mode) == encoded
        assert decode_watcher_event(encoded) == event
        parsed = S.to_plain(S.parse_event(encoded, compiled=mode))
        assert parsed["body"] == S.record_to_plain(event)


@SETTINGS
@given(request=RECORDS[R.ConnectRequest], response=RECORDS[R.ConnectResponse])
def test_connect_frames(request: R.ConnectRequest, response: R.ConnectResponse) -> None:
    encoded = bytes(encode_connect_request(request))[4:]
    for mode in MODES:
        assert S.build(S.ConnectRequest, S.record_to_plain(request), compiled=mode) == encoded
        assert decode_connect_request(encoded) == request
        assert S.to_plain(S.parse_connect_request(encoded, compiled=mode)) == S.record_to_plain(request)
        raw = fast_bytes(response)
        assert S.build(S.ConnectResponse, S.record_to_plain(response), compiled=mode) == raw
        assert decode_connect_response(raw) == response
        assert S.to_plain(S.parse_connect_response(raw, compiled=mode)) == S.record_to_plain(response)


# ------------------------------------------------------------------------ the same inputs rejected


def _outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except ProtocolError:
        return ("error", None)


reply_ops = st.sampled_from(sorted(RESPONSE_RECORDS))


def _mangle(data: st.DataObject, raw: bytes) -> bytes:
    """Cut the end off, append a little, and/or overwrite a few bytes."""
    out = bytearray(raw)
    if data.draw(bools):
        del out[data.draw(st.integers(0, len(out))) :]
    if data.draw(st.integers(0, 4)) == 0:
        out += data.draw(st.binary(min_size=1, max_size=3))
    for _ in range(data.draw(st.integers(0, 3)) if out else 0):
        out[data.draw(st.integers(0, len(out) - 1))] = data.draw(st.integers(0, 255))
    return bytes(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_both_sides_agree_on_mangled_replies(data: st.DataObject) -> None:
    op = data.draw(reply_ops)
    body = data.draw(_body(RESPONSE_RECORDS[op]))
    header = fast_bytes(R.ReplyHeader(data.draw(reply_xids), 1, data.draw(st.sampled_from([0, 0, -101]))))
    payload = _mangle(data, header + (b"" if body is None else fast_bytes(body)))
    raw = payload
    fast = _outcome(lambda: S.record_to_plain(decode_reply(op, raw)[1]))
    for mode in MODES:
        if len(raw) >= 4 and raw[:4] == b"\xff\xff\xff\xff":
            continue  # xid -1: the schema reads a watch event, the fast decoder the op's reply
        slow = _outcome(lambda mode=mode: S.to_plain(S.parse_reply(op, raw, compiled=mode))["body"])
        assert slow == fast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_both_sides_agree_on_mangled_requests(data: st.DataObject) -> None:
    op = data.draw(st.sampled_from(sorted(REQUEST_RECORDS)))
    body = data.draw(_body(REQUEST_RECORDS[op]))
    payload = _mangle(data, bytes(encode_request(data.draw(i32), op, body)[4:]))
    raw = payload
    fast = _outcome(lambda: S.record_to_plain(decode_request(raw)))
    for mode in MODES:
        slow = _outcome(lambda mode=mode: S.to_plain(S.parse_request(raw, compiled=mode)))
        if fast[0] == "ok":
            assert slow[0] == "ok"
            assert slow[1] == {"header": fast[1][0], "body": fast[1][1]}
        else:
            assert slow == fast


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([*sorted(RESPONSE_RECORDS), None, 10]))
def test_schema_only_raises_protocol_error(data: bytes, op: int | None) -> None:
    for mode in MODES:
        for call in (
            lambda mode=mode: S.parse_request(data, compiled=mode),
            lambda mode=mode: S.parse_reply(op, data, compiled=mode),
            lambda mode=mode: S.parse_connect_request(data, compiled=mode),
            lambda mode=mode: S.parse_connect_response(data, compiled=mode),
            lambda mode=mode: S.parse(S.MultiResponse, data, compiled=mode),
        ):
            _outcome(call)


def test_schema_errors_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="negative length"):
        S.parse(S.GetDataRequest, b"\xff\xff\xff\xfe\x00")
    with pytest.raises(ProtocolError, match="trailing"):
        S.parse(S.SyncRequest, b"\x00\x00\x00\x00\x00")
    with pytest.raises(ProtocolError, match="unknown op"):
        S.parse_request(b"\x00\x00\x00\x01\x00\x00\x00\x0a")
    with pytest.raises(ProtocolError):
        S.build(S.Stat, {"czxid": 1})
    with pytest.raises(ProtocolError):
        S.build(S.SyncRequest, {"path": "\ud800"}, compiled=True)
    with pytest.raises(ProtocolError):
        S.build(S.ErrorResponse, {"err": 1 << 31})
    for mode in MODES:
        assert S.parse(S.WatcherEvent, b"\x00\x00\x00\x01\x00\x00\x00\x03\xff\xff\xff\xff", compiled=mode).path is None
        assert S.parse(S.GetChildrenResponse, b"\x00\x00\x00\x00", compiled=mode).children == []
        assert S.parse(S.GetChildrenResponse, b"\xff\xff\xff\xff", compiled=mode).children is None
        java = b"\x00\x00\x00\x06\xed\xa0\xbd\xed\xb8\x80"
        assert S.parse(S.SyncResponse, java, compiled=mode).path == "\U0001f600"
        with pytest.raises(ProtocolError):
            S.parse(S.SyncResponse, b"\x00\x00\x00\x03\xed\xa0\xbd", compiled=mode)


# --------------------------------------------------------------------------------- stream decoder

conversation_ops = st.sampled_from(sorted(op for op in REQUEST_RECORDS if op not in (OpCode.PING, OpCode.AUTH)))


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[int, int, Any, int, Any]]:
    """(xid, op, request, err, response) for a few requests."""
    out = []
    for xid in range(1, draw(st.integers(1, 6)) + 1):
        op = draw(conversation_ops)
        request = draw(_body(REQUEST_RECORDS[op]))
        err = draw(st.sampled_from([0, 0, -101, -103]))
        response = draw(_body(RESPONSE_RECORDS[op])) if err == 0 else None
        out.append((xid, op, request, err, response))
    return out


CONNECT = R.ConnectRequest(0, 0, 30000, 0, bytes(16), False)
CONNECTED = R.ConnectResponse(0, 30000, 0x1234, bytes(range(16)), False)


def _encode_conversation(conv: list[tuple[int, int, Any, int, Any]]) -> tuple[bytes, bytes]:
    client = bytearray(encode_connect_request(CONNECT))
    server = bytearray(frame(fast_bytes(CONNECTED)))
    for xid, op, request, err, response in conv:
        client += encode_request(xid, op, request)
        client += encode_request(-2, OpCode.PING)
        server += frame(fast_bytes(R.ReplyHeader(-1, -1, 0)) + fast_bytes(R.WatcherEvent(3, 3, "/w")))
        server += frame(
            fast_bytes(R.ReplyHeader(xid, 100 + xid, err)) + (b"" if response is None else fast_bytes(response))
        )
        server += frame(fast_bytes(R.ReplyHeader(-2, 100 + xid, 0)))
    return bytes(client), bytes(server)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations(), cuts=st.lists(st.integers(0, 10_000), max_size=20), compiled=bools)
def test_stream_decoder_agrees_with_fast_codec(conv: list[Any], cuts: list[int], compiled: bool) -> None:
    client, server = _encode_conversation(conv)
    decoder = ConversationDecoder(compiled=compiled)
    frames: list[DecodedFrame] = []
    for i, chunk in enumerate(_chunks(client, cuts)):
        frames += decoder.feed_client(chunk, now=float(i))
    for i, chunk in enumerate(_chunks(server, cuts)):
        frames += decoder.feed_server(chunk, now=100.0 + i)
    frames += decoder.finish()
    sent = [f for f in frames if f.direction == "client"]
    got = [f for f in frames if f.direction == "server"]
    assert [f.kind for f in sent] == ["connect"] + ["request", "ping"] * len(conv)
    assert [f.kind for f in got] == ["connect_response"] + ["event", "reply", "ping"] * len(conv)
    assert sent[0].record == S.record_to_plain(CONNECT)
    assert got[0].record == S.record_to_plain(CONNECTED)
    for n, (xid, op, request, err, response) in enumerate(conv):
        req, rep = sent[1 + 2 * n], got[2 + 3 * n]
        assert (req.xid, req.op, req.record) == (xid, op, S.record_to_plain(request))
        path = getattr(request, "path", getattr(request, "prefix_path", None))
        assert req.path == path and rep.path == path
        assert (rep.xid, rep.op, rep.op_name, rep.err, rep.zxid) == (xid, op, op_name(op), err, 100 + xid)
        assert rep.record == S.record_to_plain(response)
        assert rep.latency is not None and rep.latency >= 0
        assert got[3 + 3 * n].latency is not None
        event = got[1 + 3 * n]
        assert (event.xid, event.path, event.record) == (-1, "/w", {"type": 3, "state": 3, "path": "/w"})
    assert decoder.pending == {}
    for f in frames:
        assert format_frame(f)
        assert format_frame(f, verbose=True)
        assert frame_to_json(f)["kind"] == f.kind


def test_stream_decoder_malformed_and_unknown_frames() -> None:
    client, server = _encode_conversation([(1, OpCode.GET_DATA, R.GetDataRequest("/a", False), -101, None)])
    bad_body = frame(b"\x00\x00\x00\x02\x00\x00\x00\x04\xff\xff\xff\xfe\x00")  # negative ustring length
    unknown = frame(fast_bytes(R.ReplyHeader(77, 5, 0)) + b"\x00\x00\x00\x00")
    frames = ConversationDecoder().feed_client(client + bad_body + frame(b"\x00\x00\x00\x03\x00\x00\x00\x0a"))
    assert [f.kind for f in frames] == ["connect", "request", "ping", "malformed", "malformed"]
    assert "negative length" in (frames[3].error or "") and frames[3].xid == 2 and frames[3].op == 4
    assert "unknown op" in (frames[4].error or "")

    decoder = ConversationDecoder()
    decoder.feed_client(client)
    frames = decoder.feed_server(server + unknown + b"\x7f\xff\xff\xff junk")
    assert [f.kind for f in frames] == ["connect_response", "event", "reply", "ping", "reply", "malformed"]
    assert frames[2].err_name == "NONODE" and frames[2].record is None
    # xid 77 may answer a request the capture lost: shown, paired with nothing, its body hidden.
    assert frames[4].op is None and "no pending request" in (frames[4].note or "")
    assert frames[4].secret_spans == ((8, frames[4].size),)
    assert "frame length" in (frames[5].error or "")
    assert decoder.feed_server(b"more bytes") == []
    assert decoder.undecodable_bytes["server"] == 4 + 5 + 10
    # The client was followed from its handshake and never came near this xid: misframed bytes, hidden.
    decoder = ConversationDecoder()
    decoder.feed_client(client)
    misframed = frame(fast_bytes(R.ReplyHeader(5_000_000, 5, 0)) + b"\x00\x00\x00\x00")
    last = decoder.feed_server(server + misframed)[-1]
    assert last.kind == "malformed" and last.xid is None and "not a reply to any request seen" in (last.error or "")
    assert last.secret_spans == ((0, last.size),)
    # Without the client's side (a server stream alone) the same frame is shown, paired with nothing.
    alone = ConversationDecoder().feed_server(server + misframed)
    assert alone[-1].kind == "reply" and alone[-1].op is None and "no pending request" in (alone[-1].note or "")


def test_stream_decoder_four_letter_words() -> None:
    decoder = ConversationDecoder()
    assert decoder.feed_client(b"ru") == []
    [command] = decoder.feed_client(b"ok")
    assert (command.kind, command.op_name) == ("four_letter", "ruok")
    assert decoder.feed_server(b"im") == []
    assert decoder.feed_server(b"ok") == []
    [answer] = decoder.finish()
    assert (answer.kind, answer.record) == ("four_letter", {"text": "imok"})
    assert [f.kind for f in decode_stream(b"srvr")] == ["four_letter"]
    assert [f.record for f in decode_stream(b"Zookeeper version: 3.8.0\n", "server")] == [
        {"text": "Zookeeper version: 3.8.0\n"}
    ]


def test_stream_decoder_single_sides_and_secrets() -> None:
    client, server = _encode_conversation(
        [(1, OpCode.CREATE, R.CreateRequest("/a", b"x", None, 0), 0, R.CreateResponse("/a"))]
    )
    auth = encode_request(-4, OpCode.AUTH, R.AuthPacket(0, "digest", b"user:secret"))
    frames = decode_stream(client + auth)
    assert [f.kind for f in frames] == ["connect", "request", "ping", "auth"]
    text = format_frame(frames[-1], verbose=True) + repr(frame_to_json(frames[-1]))
    assert "secret" not in text and "736563726574" not in text
    assert "secret" in format_frame(frames[-1], verbose=True, reveal_secrets=True)
    only_server = decode_stream(server)
    assert [f.kind for f in only_server] == ["connect_response", "event", "reply", "ping"]
    assert only_server[2].op is None  # nothing to pair it with
    truncated = decode_stream(client[:-3])
    assert truncated[-1].kind == "malformed" and "closed inside a frame" in (truncated[-1].error or "")


@settings(max_examples=200, deadline=None)
@given(
    client=st.binary(max_size=200),
    server=st.binary(max_size=200),
    chunk=st.integers(1, 50),
    handshake=bools,
)
def test_stream_decoder_never_crashes(client: bytes, server: bytes, chunk: int, handshake: bool) -> None:
    decoder = ConversationDecoder(handshake=handshake, max_frame=1000)
    frames: list[DecodedFrame] = []
    for i in range(0, max(len(client), len(server)), chunk):
        frames += decoder.feed_client(client[i : i + chunk])
        frames += decoder.feed_server(server[i : i + chunk])
    frames += decoder.finish()
    seen = {"client": 0, "server": 0}
    for f in frames:
        seen[f.direction] += f.size + (0 if f.kind in ("four_letter", "malformed") else 4)
        format_frame(f, verbose=True)
        frame_to_json(f)
    assert seen["client"] + decoder.undecodable_bytes["client"] >= len(client) - 4


def test_stream_decoder_capture_without_handshake() -> None:
    client, server = _encode_conversation([(5, OpCode.SYNC, R.SyncRequest("/s"), 0, R.SyncResponse("/s"))])
    client = client[49:]  # drop the ConnectRequest frame (45 bytes + length)
    server = server[41:]  # and the ConnectResponse (37 + 4)
    frames = ConversationDecoder().feed_client(client)
    assert [f.kind for f in frames] == ["request", "ping"]
    assert "mid-conversation" in (frames[0].note or "")
    decoder = ConversationDecoder()
    decoder.feed_client(client)
    frames = decoder.feed_server(server)
    assert [f.kind for f in frames] == ["event", "reply", "ping"]
    assert frames[1].record == {"path": "/s"}
