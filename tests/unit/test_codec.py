"""Unit tests of the fast codec: byte vectors, framing, malformed input, null and empty, fuzzing.

Everything here is pure: no server, no I/O.
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkwire import errors
from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import DEFAULT_MAX_FRAME, EventType, KeeperState, OpCode
from zkwire.errors import (
    DataTooLargeError,
    ProtocolError,
    error_for_code,
)
from zkwire.protocol import optable, subops
from zkwire.protocol.codec import (
    REQUEST_RECORDS,
    RESPONSE_RECORDS,
    decode_connect_request,
    decode_connect_response,
    decode_reply,
    decode_reply_header,
    decode_request,
    decode_response_body,
    decode_watcher_event,
    encode_connect_request,
    encode_request,
    encode_request_into,
    op_name,
)
from zkwire.protocol.framing import FrameDecoder, frame
from zkwire.protocol.jute import Reader, write_buffer, write_string_vector, write_ustring
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    ACL,
    AuthPacket,
    CheckVersionRequest,
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    ErrorResponse,
    GetACLResponse,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Id,
    ReplyHeader,
    RequestHeader,
    SetDataRequest,
    Stat,
    WatcherEvent,
)


def h(text: str) -> bytes:
    """Hex with spaces (and ``<16x00>`` for sixteen zero bytes) to bytes."""
    return bytes.fromhex(text.replace("<16x00>", "00" * 16).replace(" ", ""))


def reply(header: ReplyHeader, body: object = None) -> bytes:
    out = bytearray()
    header.write(out)
    if body is not None:
        body.write(out)  # type: ignore[attr-defined]
    return frame(bytes(out))


# ------------------------------------------------------------------------ byte vectors (reference §8)

CONNECT_REQUEST = h(
    "0000002d 00000000 0000000000000000 00007530 0000000000000000 00000010 00000000000000000000000000000000 00"
)
CONNECT_RESPONSE_EXPIRED = h("00000025 00000000 00000000 0000000000000000 00000010 <16x00> 00")
PING_REQUEST = h("00000008fffffffe0000000b")
PING_REPLY = h("00000010 fffffffe 0000000000000005 00000000")
GET_DATA = h("0000000f 00000001 00000004 00000002 2f61 01")
CREATE = h(
    "00000033 00000002 00000001 00000002 2f61 00000002 6869 00000001 0000001f "
    "00000005 776f726c64 00000006 616e796f6e65 00000000"
)
CREATE_OK = h("00000016 00000002 0000000000000010 00000000 00000002 2f61")
NO_NODE = h("00000010 00000001 0000000000000010 ffffff9b")
NOTIFICATION = h("0000001e ffffffff ffffffffffffffff 00000000 00000003 00000003 00000002 2f61")
CLOSE_SESSION = h("00000008 00000003 fffffff5")
MULTI = h(
    "00000037 00000004 0000000e 0000000d 00 ffffffff 00000002 2f61 00000000 "
    "00000002 00 ffffffff 00000002 2f61 ffffffff ffffffff 01 ffffffff"
)
MULTI_FAILED = h(
    "00000033 00000004 0000000000000010 00000000 ffffffff 00 ffffff99 ffffff99 "
    "ffffffff 00 fffffffe fffffffe ffffffff 01 ffffffff"
)
AUTH = h("00000023 fffffffc 00000064 00000000 00000006 646967657374 00000009 757365723a70617373")

MULTI_OPS = MultiRequest(
    (MultiOp(OpCode.CHECK, CheckVersionRequest("/a", 0)), MultiOp(OpCode.DELETE, DeleteRequest("/a", -1)))
)
MULTI_RESULTS = MultiResponse((MultiResult(-1, -103, ErrorResponse(-103)), MultiResult(-1, -2, ErrorResponse(-2))))


def test_get_data_request_vector() -> None:
    assert encode_request(1, OpCode.GET_DATA, GetDataRequest("/a", True)) == GET_DATA
    assert decode_request(GET_DATA[4:]) == (RequestHeader(1, 4), GetDataRequest("/a", True))


def test_create_request_vector() -> None:
    request = CreateRequest("/a", b"hi", OPEN_ACL_UNSAFE, 0)
    assert encode_request(2, OpCode.CREATE, request) == CREATE
    header, decoded = decode_request(CREATE[4:])
    assert header == RequestHeader(2, 1)
    assert decoded == request
    assert isinstance(decoded, CreateRequest)
    assert decoded.acl == (ACL(31, Id("world", "anyone")),)


def test_create_reply_vector() -> None:
    assert reply(ReplyHeader(2, 0x10, 0), CreateResponse("/a")) == CREATE_OK
    assert decode_reply(OpCode.CREATE, CREATE_OK[4:]) == (ReplyHeader(2, 0x10, 0), CreateResponse("/a"))


def test_no_node_reply_vector() -> None:
    assert reply(ReplyHeader(1, 0x10, -101)) == NO_NODE
    header, body = decode_reply(OpCode.GET_DATA, NO_NODE[4:])
    assert header == ReplyHeader(1, 0x10, -101)
    assert body is None
    assert isinstance(error_for_code(header.err, "/a"), errors.NoNodeError)


def test_connect_request_vector() -> None:
    request = ConnectRequest(0, 0, 30000, 0, bytes(16), False)
    assert encode_connect_request(request) == CONNECT_REQUEST
    assert decode_connect_request(CONNECT_REQUEST[4:]) == request


def test_connect_request_without_read_only_byte() -> None:
    request = ConnectRequest(0, 0, 30000, 0, bytes(16), None)
    encoded = encode_connect_request(request)
    assert encoded == h("0000002c") + CONNECT_REQUEST[4:-1]
    assert decode_connect_request(encoded[4:]) == request


def test_expired_connect_response_vector() -> None:
    response = decode_connect_response(CONNECT_RESPONSE_EXPIRED[4:])
    assert response == ConnectResponse(0, 0, 0, bytes(16), False)
    assert response.expired
    out = bytearray()
    response.write(out)
    assert frame(bytes(out)) == CONNECT_RESPONSE_EXPIRED


def test_connect_response_with_and_without_read_only_byte() -> None:
    body = h("00000000 00007530 0000000000001234 00000010") + bytes(range(16))
    without = decode_connect_response(body)
    assert without == ConnectResponse(0, 30000, 0x1234, bytes(range(16)), None)
    assert not without.expired
    assert decode_connect_response(body + b"\x01").read_only is True
    assert decode_connect_response(body + b"\x00").read_only is False
    assert decode_connect_response(body + b"\x07").read_only is True  # any non-zero byte is true
    with pytest.raises(ProtocolError):
        decode_connect_response(body + b"\x01\x00")


def test_ping_vectors() -> None:
    assert encode_request(-2, OpCode.PING) == PING_REQUEST
    assert decode_request(PING_REQUEST[4:]) == (RequestHeader(-2, 11), None)
    assert reply(ReplyHeader(-2, 5, 0)) == PING_REPLY
    assert decode_reply(OpCode.PING, PING_REPLY[4:]) == (ReplyHeader(-2, 5, 0), None)


def test_close_session_vector() -> None:
    assert encode_request(3, OpCode.CLOSE_SESSION) == CLOSE_SESSION
    assert decode_request(CLOSE_SESSION[4:]) == (RequestHeader(3, -11), None)


def test_multi_vectors() -> None:
    assert encode_request(4, OpCode.MULTI, MULTI_OPS) == MULTI
    assert decode_request(MULTI[4:]) == (RequestHeader(4, 14), MULTI_OPS)
    assert reply(ReplyHeader(4, 0x10, 0), MULTI_RESULTS) == MULTI_FAILED
    header, body = decode_reply(OpCode.MULTI, MULTI_FAILED[4:])
    assert header == ReplyHeader(4, 0x10, 0)  # a failed multi still has err 0 in its header
    assert body == MULTI_RESULTS


def test_auth_vector() -> None:
    packet = AuthPacket(0, "digest", b"user:pass")
    assert encode_request(-4, OpCode.AUTH, packet) == AUTH
    assert decode_request(AUTH[4:]) == (RequestHeader(-4, 100), packet)
    assert "user:pass" not in repr(packet)


def test_notification_vector() -> None:
    event = WatcherEvent(EventType.NODE_DATA_CHANGED, KeeperState.SYNC_CONNECTED, "/a")
    assert reply(ReplyHeader(-1, -1, 0), event) == NOTIFICATION
    assert decode_reply_header(NOTIFICATION[4:]) == ReplyHeader(-1, -1, 0)
    assert decode_watcher_event(NOTIFICATION[4:]) == event


def test_get_data_reply_round_trip() -> None:
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 100, 0, 9)
    response = GetDataResponse(b"x" * 100, stat)
    payload = reply(ReplyHeader(7, 9, 0), response)[4:]
    assert decode_reply(OpCode.GET_DATA, payload) == (ReplyHeader(7, 9, 0), response)
    null = reply(ReplyHeader(7, 9, 0), GetDataResponse(None, stat))[4:]
    assert decode_reply(OpCode.GET_DATA, null)[1] == GetDataResponse(None, stat)
    empty = reply(ReplyHeader(7, 9, 0), GetDataResponse(b"", stat))[4:]
    assert decode_reply(OpCode.GET_DATA, empty)[1] == GetDataResponse(b"", stat)


def test_decoded_get_data_response_is_a_whole_frozen_record() -> None:
    """The getData decoder builds its record by setting the slots itself: every field is set, the
    record compares, hashes and refuses changes like one built by its constructor."""
    stat = Stat(1, 2, 3, 4, 5, 6, 7, 8, 3, 0, 9)
    decoded = decode_reply(OpCode.GET_DATA, reply(ReplyHeader(7, 9, 0), GetDataResponse(b"abc", stat))[4:])[1]
    assert type(decoded) is GetDataResponse and type(decoded.stat) is Stat
    assert [f.name for f in dataclasses.fields(GetDataResponse)] == ["data", "stat"]  # the slots set
    assert decoded == GetDataResponse(b"abc", stat) and hash(decoded) == hash(GetDataResponse(b"abc", stat))
    assert repr(decoded) == repr(GetDataResponse(b"abc", stat))
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded.data = b"x"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(decoded)) == decoded


def test_encode_request_into_appends_or_leaves_the_buffer_alone() -> None:
    out = bytearray(b"queued")
    encode_request_into(out, 1, OpCode.GET_DATA, GetDataRequest("/a", True))
    assert out == b"queued" + GET_DATA
    for bad in (
        lambda: encode_request_into(out, 2, OpCode.SET_DATA, SetDataRequest("/a", bytes(100), -1), max_frame=50),
        lambda: encode_request_into(out, 1 << 31, OpCode.GET_DATA, GetDataRequest("/a", False)),
        lambda: encode_request_into(out, 3, OpCode.SET_DATA, SetDataRequest("/a", b"", 1 << 31)),
        lambda: encode_request_into(out, 3, OpCode.GET_DATA, GetDataRequest("/\ud800", False)),
    ):
        with pytest.raises(errors.InvalidInputError):
            bad()
        assert out == b"queued" + GET_DATA  # nothing half-written stays behind


def test_encode_request_refuses_ids_out_of_range() -> None:
    for xid, op in ((1 << 31, OpCode.GET_DATA), (-(1 << 31) - 1, OpCode.GET_DATA), (1, 1 << 31)):
        with pytest.raises(errors.InvalidArgumentError, match="out of int32 range"):
            encode_request(xid, op, GetDataRequest("/a", False))
    assert encode_request(-(1 << 31), OpCode.GET_DATA)[4:8] == struct.pack(">i", -(1 << 31))


def test_op_names() -> None:
    assert op_name(OpCode.GET_DATA) == "getData"
    assert op_name(OpCode.CLOSE_SESSION) == "closeSession"
    assert op_name(10) == "op10"
    assert op_name(OpCode.CREATE_SESSION) == "createSession"  # known to OpCode, not sent by a client


def test_one_op_table() -> None:
    """Every op-to-record mapping is derived from the rows of the op table."""
    assert REQUEST_RECORDS is optable.REQUEST_RECORDS and RESPONSE_RECORDS is optable.RESPONSE_RECORDS
    for op, spec in optable.OPS.items():
        assert spec.code == op and spec.name == op_name(op)
        assert (REQUEST_RECORDS[op], RESPONSE_RECORDS[op]) == (spec.request, spec.reply)
    write_ops = {OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL}
    write_ops |= {OpCode.DELETE, OpCode.SET_DATA, OpCode.CHECK}
    assert set(optable.MULTI_WRITE_OPS) == write_ops
    assert set(optable.MULTI_READ_OPS) == {OpCode.GET_DATA, OpCode.GET_CHILDREN}
    for op, request in optable.MULTI_REQUEST_RECORDS.items():
        assert request is REQUEST_RECORDS[op]
        assert optable.MULTI_RESULT_RECORDS[op] is RESPONSE_RECORDS[op]
    assert optable.MULTI_RESULT_RECORDS[OpCode.ERROR] is ErrorResponse
    assert set(optable.MULTI_RESULT_RECORDS) == {*optable.MULTI_REQUEST_RECORDS, OpCode.ERROR}
    # the sub-operations' rows are rows of the op table, and nothing else is
    assert {op: optable.OPS[op] for op in subops.SUB_OP_ROWS} == subops.SUB_OP_ROWS
    assert {op for op, spec in optable.OPS.items() if spec.sub_op is not None} == set(subops.SUB_OP_ROWS)


# ------------------------------------------------------------------------------------------ framing

ALL_FRAMES = [CONNECT_REQUEST, GET_DATA, CREATE, PING_REQUEST, MULTI, AUTH, CLOSE_SESSION, frame(b"")]
STREAM = b"".join(ALL_FRAMES)
PAYLOADS = [f[4:] for f in ALL_FRAMES]


def test_frame_decoder_whole_stream() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(STREAM) == PAYLOADS
    assert decoder.buffered == 0


def test_frame_decoder_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    got: list[bytes] = []
    for i in range(len(STREAM)):
        got += decoder.feed(STREAM[i : i + 1])
    assert got == PAYLOADS
    assert decoder.buffered == 0


def test_frame_decoder_keeps_partial_frames() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(GET_DATA[:6]) == []
    assert decoder.buffered == 6
    assert decoder.feed(memoryview(GET_DATA[6:] + CREATE[:3])) == [GET_DATA[4:]]
    assert decoder.buffered == 3
    assert decoder.feed(bytearray(CREATE[3:])) == [CREATE[4:]]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=30))
def test_frame_decoder_random_chunks(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    decoder = FrameDecoder()
    got: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        got += decoder.feed(STREAM[a:b])
    assert got == PAYLOADS


def test_frame_decoder_seeded_random_chunks() -> None:
    rng = random.Random(1234)
    for _ in range(200):
        decoder = FrameDecoder()
        got: list[bytes] = []
        pos = 0
        while pos < len(STREAM):
            step = rng.randint(1, 40)
            got += decoder.feed(STREAM[pos : pos + step])
            pos += step
        assert got == PAYLOADS


@pytest.mark.parametrize("length", [-1, -2, -(1 << 31), DEFAULT_MAX_FRAME + 1, (1 << 31) - 1])
def test_frame_decoder_rejects_bad_lengths(length: int) -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError):
        decoder.feed(struct.pack(">i", length) + b"rest")
    with pytest.raises(ProtocolError):  # the decoder stays failed
        decoder.feed(GET_DATA)
    # A complete frame in front of the bad length is still delivered; the failure is then in .error.
    decoder = FrameDecoder()
    assert decoder.feed(GET_DATA + struct.pack(">i", length) + b"rest") == [GET_DATA[4:]]
    assert isinstance(decoder.error, ProtocolError)
    with pytest.raises(ProtocolError):
        decoder.feed(GET_DATA)


def test_frame_decoder_bad_length_split_across_feeds() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\xff\xff") == []
    with pytest.raises(ProtocolError):
        decoder.feed(b"\xff\xfe")


def test_frame_decoder_text_hint() -> None:
    with pytest.raises(ProtocolError, match="text"):
        FrameDecoder().feed(b"imok")


def test_frame_decoder_custom_maximum() -> None:
    decoder = FrameDecoder(max_frame=16)
    assert decoder.feed(frame(bytes(16))) == [bytes(16)]
    with pytest.raises(ProtocolError):
        decoder.feed(frame(bytes(17), max_frame=100))


def test_frame_refuses_oversize_payload() -> None:
    assert frame(bytes(DEFAULT_MAX_FRAME))[:4] == struct.pack(">i", DEFAULT_MAX_FRAME)
    with pytest.raises(DataTooLargeError):
        frame(bytes(DEFAULT_MAX_FRAME + 1))
    with pytest.raises(DataTooLargeError):
        frame(bytes(11), max_frame=10)


def test_encode_request_refuses_oversize_request() -> None:
    big = SetDataRequest("/a", bytes(DEFAULT_MAX_FRAME), -1)
    with pytest.raises(DataTooLargeError):
        encode_request(1, OpCode.SET_DATA, big)
    fits = SetDataRequest("/a", bytes(DEFAULT_MAX_FRAME - 8 - 6 - 4 - 4), -1)
    assert len(encode_request(1, OpCode.SET_DATA, fits)) == DEFAULT_MAX_FRAME + 4
    with pytest.raises(DataTooLargeError):
        encode_request(1, OpCode.SET_DATA, SetDataRequest("/a", bytes(100), -1), max_frame=50)
    with pytest.raises(DataTooLargeError):
        encode_connect_request(ConnectRequest(0, 0, 1, 0, bytes(100)), max_frame=50)
    assert issubclass(DataTooLargeError, errors.InvalidInputError)


# -------------------------------------------------------------------------------- malformed records


def _prefixes(payload: bytes, allowed: frozenset[int] = frozenset()) -> list[bytes]:
    return [payload[:n] for n in range(len(payload)) if n not in allowed]


@pytest.mark.parametrize("vector", [GET_DATA, CREATE, MULTI, AUTH, PING_REQUEST, CLOSE_SESSION])
def test_truncated_requests_raise_protocol_error(vector: bytes) -> None:
    for prefix in _prefixes(vector[4:]):
        with pytest.raises(ProtocolError):
            decode_request(prefix)


@pytest.mark.parametrize(
    ("op", "vector"),
    [(OpCode.CREATE, CREATE_OK), (OpCode.GET_DATA, NO_NODE), (OpCode.MULTI, MULTI_FAILED), (OpCode.PING, PING_REPLY)],
)
def test_truncated_replies_raise_protocol_error(op: int, vector: bytes) -> None:
    for prefix in _prefixes(vector[4:]):
        with pytest.raises(ProtocolError):
            decode_reply(op, prefix)


def test_truncated_get_data_reply() -> None:
    payload = reply(ReplyHeader(1, 1, 0), GetDataResponse(b"hello", Stat(*range(11))))[4:]
    for prefix in _prefixes(payload):
        with pytest.raises(ProtocolError):
            decode_reply(OpCode.GET_DATA, prefix)


def test_truncated_connect_records() -> None:
    # Dropping only the read-only byte is allowed; every shorter prefix is not.
    for prefix in _prefixes(CONNECT_REQUEST[4:], frozenset({44})):
        with pytest.raises(ProtocolError):
            decode_connect_request(prefix)
    for prefix in _prefixes(CONNECT_RESPONSE_EXPIRED[4:], frozenset({36})):
        with pytest.raises(ProtocolError):
            decode_connect_response(prefix)


def test_truncated_watcher_event() -> None:
    for prefix in _prefixes(NOTIFICATION[4:]):
        with pytest.raises(ProtocolError):
            decode_watcher_event(prefix)


def test_trailing_garbage_is_rejected() -> None:
    with pytest.raises(ProtocolError):
        decode_request(GET_DATA[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_request(PING_REQUEST[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.CREATE, CREATE_OK[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.GET_DATA, NO_NODE[4:] + b"\x00")  # an error reply has no body
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.DELETE, reply(ReplyHeader(1, 1, 0))[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.MULTI, MULTI_FAILED[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_watcher_event(NOTIFICATION[4:] + b"\x00")
    with pytest.raises(ProtocolError):
        decode_connect_request(CONNECT_REQUEST[4:] + b"\x00")
    ok = reply(ReplyHeader(1, 1, 0), GetDataResponse(b"ab", Stat(*range(11))))[4:]
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.GET_DATA, ok + b"\x00")


@pytest.mark.parametrize("length", [-2, -3, -(1 << 31)])
def test_negative_lengths_other_than_minus_one(length: int) -> None:
    n = struct.pack(">i", length)
    header = h("00000001 00000004")
    with pytest.raises(ProtocolError, match="negative length"):
        decode_request(header + n + b"\x01")  # ustring path
    with pytest.raises(ProtocolError, match="negative length"):
        decode_request(h("00000001 00000005 00000002 2f61") + n + h("ffffffff"))  # buffer data
    with pytest.raises(ProtocolError, match="negative length"):
        decode_reply(OpCode.GET_CHILDREN, h("00000001 0000000000000001 00000000") + n)  # vector
    stat = bytes(68)
    with pytest.raises(ProtocolError, match="negative length"):
        decode_reply(OpCode.GET_DATA, h("00000001 0000000000000001 00000000") + n + stat)  # fast getData path


def test_huge_lengths_do_not_allocate_or_crash() -> None:
    head = h("00000001 0000000000000001 00000000")
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.GET_DATA, head + h("7fffffff") + bytes(68))
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.GET_CHILDREN, head + h("7fffffff") + h("00000000"))
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.GET_ACL, head + h("7fffffff"))


def test_invalid_utf8_is_rejected() -> None:
    for bad in (b"\xff", b"\xc3", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80"):  # the last: a lone surrogate
        body = struct.pack(">i", len(bad)) + bad
        with pytest.raises(ProtocolError, match="UTF-8"):
            decode_reply(OpCode.CREATE, h("00000001 0000000000000001 00000000") + body)


def test_surrogate_pairs_from_java_servers_are_joined() -> None:
    # A Java server encodes each UTF-16 unit separately: U+1F600 arrives as two 3-byte surrogates.
    java = b"\xed\xa0\xbd\xed\xb8\x80"
    body = struct.pack(">i", len(java)) + java
    header = h("00000001 0000000000000001 00000000")
    _, decoded = decode_reply(OpCode.CREATE, header + body)
    assert decoded == CreateResponse("\U0001f600")
    mixed = "a\U0001f600b".encode() + java
    _, decoded = decode_reply(OpCode.CREATE, header + struct.pack(">i", len(mixed)) + mixed)
    assert decoded == CreateResponse("a\U0001f600b\U0001f600")
    reversed_pair = b"\xed\xb8\x80\xed\xa0\xbd"
    with pytest.raises(ProtocolError):
        decode_reply(OpCode.CREATE, header + struct.pack(">i", 6) + reversed_pair)


def test_unknown_op_codes() -> None:
    with pytest.raises(ProtocolError, match="unknown op"):
        decode_request(h("00000001 0000000a"))
    with pytest.raises(ProtocolError):
        decode_response_body(10, h("00000001 0000000000000001 00000000"))
    # exists (3) can never be inside a multi
    with pytest.raises(ProtocolError, match="multi"):
        decode_request(h("00000001 0000000e 00000003 00 ffffffff 00000002 2f61 00"))
    with pytest.raises(ProtocolError, match="multi"):
        decode_reply(OpCode.MULTI, h("00000001 0000000000000001 00000000 00000003 00 00000000"))


def test_short_reply_header() -> None:
    for n in range(16):
        with pytest.raises(ProtocolError):
            decode_reply_header(bytes(n))


# ----------------------------------------------------------------------------------- null vs empty


def _encoded(write: object, value: object) -> bytes:
    out = bytearray()
    write(out, value)  # type: ignore[operator]
    return bytes(out)


def test_null_and_empty_are_distinct() -> None:
    assert _encoded(write_ustring, None) == h("ffffffff")
    assert _encoded(write_ustring, "") == h("00000000")
    assert _encoded(write_buffer, None) == h("ffffffff")
    assert _encoded(write_buffer, b"") == h("00000000")
    assert _encoded(write_string_vector, None) == h("ffffffff")
    assert _encoded(write_string_vector, []) == h("00000000")
    assert _encoded(write_string_vector, [None, ""]) == h("00000002 ffffffff 00000000")

    assert Reader(h("ffffffff")).ustring() is None
    assert Reader(h("00000000")).ustring() == ""
    assert Reader(h("ffffffff")).buffer() is None
    assert Reader(h("00000000")).buffer() == b""
    assert Reader(h("ffffffff")).string_vector() is None
    assert Reader(h("00000000")).string_vector() == []
    assert Reader(h("00000002 ffffffff 00000000")).string_vector() == [None, ""]


def test_string_vector_agrees_with_item_by_item_reading_and_rejects_bad_input() -> None:
    names = ["a", "", None, "_c_x-lock-0000000001", "é✓", "\U0001f600"]
    out = bytearray()
    write_string_vector(out, names)
    r = Reader(bytes(out) + b"tail")
    assert r.string_vector() == names
    assert r.pos == len(out)  # stops right after the vector
    assert Reader(bytes(out)).vector(Reader.ustring) == names
    # A Java server sends a non-BMP character as two encoded surrogates.
    java = "\U0001f600".encode("utf-16-be").decode("utf-16-be", "surrogatepass").encode("utf-8", "surrogatepass")
    assert Reader(h("00000001") + struct.pack(">i", len(java)) + java).string_vector() == ["\U0001f600"]
    for bad, message in [
        (h("00000002 00000001 61"), "truncated record"),  # count says 2, one string present
        (h("00000001 00000005 6162"), "truncated record"),  # string shorter than its length
        (h("00000001 000000"), "truncated record"),  # length cut off
        (h("00000001 fffffffe"), "negative length -2"),
        (h("fffffffe"), "negative length -2"),
        (h("00000001 00000002 c328"), "not valid UTF-8"),
    ]:
        with pytest.raises(ProtocolError, match=message):
            Reader(bad).string_vector()


def test_null_and_empty_survive_records() -> None:
    header = ReplyHeader(1, 2, 0)
    for children in (None, (), ("",), (None,), ("a", "b")):
        response = GetChildrenResponse(children)
        assert decode_reply(OpCode.GET_CHILDREN, reply(header, response)[4:])[1] == response
    stat = Stat(*range(11))
    for acl in (None, (), OPEN_ACL_UNSAFE, (ACL(1, Id(None, "")),)):
        response = GetACLResponse(acl, stat)
        assert decode_reply(OpCode.GET_ACL, reply(header, response)[4:])[1] == response
    for path, data in ((None, None), ("", b""), ("/a", None), (None, b"")):
        request = CreateRequest(path, data, None, 0)
        assert decode_request(encode_request(1, OpCode.CREATE, request)[4:])[1] == request


# ------------------------------------------------------------------------------------------- fuzz

_OPS = sorted(RESPONSE_RECORDS)
_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(st.sampled_from(_OPS), st.binary(max_size=200))
def test_fuzz_decode_reply(op: int, data: bytes) -> None:
    try:
        decode_reply(op, data)
    except ProtocolError:
        pass


@_FUZZ
@given(st.sampled_from(_OPS), st.binary(min_size=0, max_size=120))
def test_fuzz_decode_reply_with_valid_header(op: int, body: bytes) -> None:
    try:
        decode_reply(op, h("00000001 0000000000000001 00000000") + body)
    except ProtocolError:
        pass


@_FUZZ
@given(st.sampled_from([*sorted(REQUEST_RECORDS), 10, 0, -1]), st.binary(max_size=200))
def test_fuzz_decode_request(op: int, body: bytes) -> None:
    try:
        decode_request(struct.pack(">ii", 1, op) + body)
    except ProtocolError:
        pass


@_FUZZ
@given(st.binary(max_size=200))
def test_fuzz_decode_raw(data: bytes) -> None:
    for decode in (decode_request, decode_connect_request, decode_connect_response, decode_watcher_event):
        try:
            decode(data)
        except ProtocolError:
            pass


@_FUZZ
@given(st.sampled_from([GET_DATA, CREATE, MULTI, AUTH, CREATE_OK, MULTI_FAILED, NOTIFICATION]), st.data())
def test_fuzz_mutated_vectors(vector: bytes, data: st.DataObject) -> None:
    payload = bytearray(vector[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(payload) - 1))
        payload[i] = data.draw(st.integers(0, 255))
    raw = bytes(payload)
    for call in (
        lambda: decode_request(raw),
        lambda: decode_reply(OpCode.MULTI, raw),
        lambda: decode_reply(OpCode.CREATE, raw),
        lambda: decode_watcher_event(raw),
    ):
        try:
            call()
        except ProtocolError:
            pass


@_FUZZ
@given(st.binary(max_size=300), st.integers(1, 64))
def test_fuzz_frame_decoder(data: bytes, chunk: int) -> None:
    decoder = FrameDecoder(max_frame=1000)
    try:
        for i in range(0, len(data), chunk):
            for payload in decoder.feed(data[i : i + chunk]):
                assert len(payload) <= 1000
    except ProtocolError:
        pass


@pytest.mark.parametrize("as_view", [False, True])
def test_long_string_vectors_decode_alike_on_the_one_decode_path(as_view: bool) -> None:
    """Vectors long enough for the one-decode path: ASCII, non-ASCII (decoded again name by name), nulls,
    a binary Stat right after the vector (bytes above 0x7f that are not part of the names), bad input."""
    stat = bytes(range(0x80, 0x80 + 68))
    ascii_names: list[str | None] = [f"_c_{i:04x}-lock-{i:010d}" for i in range(200)]
    mixed = [*ascii_names[:100], "é✓", None, "", "\U0001f600", *ascii_names[100:]]
    java = "\U0001f600".encode("utf-16-be").decode("utf-16-be", "surrogatepass").encode("utf-8", "surrogatepass")
    for names in (ascii_names, mixed, [None] * 40, [""] * 40):
        out = bytearray()
        write_string_vector(out, names)
        blob = bytes(out) + stat
        r = Reader(memoryview(bytearray(blob)) if as_view else blob)
        got = r.string_vector()
        assert got == names
        assert r.pos == len(out)
        assert all(type(x) is str for x in got if x is not None)
    surrogates = h("00000028") + b"".join(struct.pack(">i", len(java)) + java for _ in range(40))
    assert Reader(surrogates).string_vector() == ["\U0001f600"] * 40
    head = bytearray()
    write_string_vector(head, ascii_names[:39])
    body = bytes(head[4:])
    for bad, message in [
        (h("00000028") + body, "truncated record"),  # count says 40, 39 present
        (h("00000028") + body + h("00000005 6162"), "truncated record"),
        (h("00000028") + body + h("000000"), "truncated record"),
        (h("00000028") + body + h("fffffffe"), "negative length -2"),
        (h("00000028") + body + h("00000002 c328"), "not valid UTF-8"),
    ]:
        with pytest.raises(ProtocolError, match=message):
            Reader(memoryview(bytearray(bad)) if as_view else bad).string_vector()


def _careful_reading(blob: bytes) -> tuple[object, int]:
    """What reading the vector one ustring at a time gives: (names, position) or the error's type."""
    r = Reader(blob)
    try:
        return r.vector(Reader.ustring), r.pos
    except ProtocolError:
        return ProtocolError, -1


def _fast_reading(blob: bytes) -> tuple[object, int]:
    """What Reader.string_vector reads from ``blob``; the same whether the payload is bytes, a bytearray
    or (as a large frame is handed over) a read-only view that starts further on in its buffer."""
    readings = []
    for buf, start in ((blob, 0), (bytearray(blob), 0), (memoryview(b"\xff" * 16 + blob).toreadonly(), 16)):
        r = Reader(buf, start)
        try:
            readings.append((r.string_vector(), r.pos - start))
        except ProtocolError:
            readings.append((ProtocolError, -1))
    assert readings[1] == readings[0] and readings[2] == readings[0]
    return readings[0]


_NAME = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=12),
    st.sampled_from(["a" * 255, "b" * 256, "\x00", "x\x00\x00\x00y", "\x00\x00\x00\x05", "é", ""]),
)


@_FUZZ
@given(
    st.lists(_NAME, min_size=32, max_size=120),
    st.binary(max_size=80),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.booleans(),
)
def test_the_split_paths_of_string_vector_read_exactly_what_the_careful_loop_reads(
    names: list[str], tail: bytes, flips: list[tuple[int, int]], uniform: bool
) -> None:
    """The uniform-stride and split fast paths of long vectors are checked in full: on any input, well
    formed or corrupted (a length byte changed, a name holding NULs or the length prefix itself, names of
    255/256 bytes, trailing bytes), they give the names and end position the careful loop gives, or the
    same ProtocolError."""
    if uniform:
        names = [f"{i:06d}" for i in range(len(names))]
    blob = _vector_blob(names, tail, flips)
    assert _fast_reading(blob) == _careful_reading(blob)


def _vector_blob(names: list[str], tail: bytes, flips: list[tuple[int, int]]) -> bytes:
    """The vector of ``names``, ``tail`` after it, and bytes changed (``flips``: where, to what)."""
    out = bytearray()
    write_string_vector(out, list(names))
    blob = bytearray(out + tail)
    for at, value in flips:
        blob[4 + at % max(1, len(blob) - 4)] = value
    return bytes(blob)


def test_swapped_lengths_do_not_fool_the_split_path() -> None:
    """Two names whose length bytes are swapped still split on three NULs into the right number of
    pieces, with the right total length; the per-piece check sends the vector to the careful loop."""
    names = [f"n{i}" for i in range(40)]
    names[5], names[6] = "ab", "cdef"
    out = bytearray()
    write_string_vector(out, names)
    blob = bytes(out).replace(b"\x00\x00\x00\x02ab\x00\x00\x00\x04cdef", b"\x00\x00\x00\x04ab\x00\x00\x00\x02cdef")
    assert blob != bytes(out) and len(blob) == len(out)
    assert _fast_reading(blob) == _careful_reading(blob) == (ProtocolError, -1)
    # The same swap where the careful loop happens to read something: it is what the bytes say.
    names[5], names[6] = "ab", "cd"
    out = bytearray()
    write_string_vector(out, [*names, "x" * 10])
    blob = bytes(out).replace(b"\x00\x00\x00\x02ab\x00\x00\x00\x02cd", b"\x00\x00\x00\x03ab\x00\x00\x00\x01cd")
    assert _fast_reading(blob) == _careful_reading(blob)


def test_the_uniform_stride_path_checks_every_prefix_and_every_cut() -> None:
    """Vectors of one name length are read by stride: prefixes that sit off the stride, or a name that
    holds the prefix itself, must not pass for names (the careful loop's reading is what counts)."""
    good = b"\x00\x00\x00\x01c" * 29
    # Three separators, the first and the stride bytes right, but the second one off the stride:
    # it would cut the tail into ["", "\x01y", "z"]; the bytes really say a 257-byte name, truncated.
    off_stride = h("00000020") + good + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01" + b"\x01y" + b"\x00\x00\x00\x01z"
    assert _careful_reading(off_stride) == (ProtocolError, -1)
    assert _fast_reading(off_stride) == (ProtocolError, -1)
    # A name that is the length prefix itself: a valid name (NULs and all) the split would cut in two.
    names = [f"{i:04d}" for i in range(40)]
    names[7] = "\x00\x00\x00\x04"
    out = bytearray()
    write_string_vector(out, names)
    assert _fast_reading(bytes(out)) == _careful_reading(bytes(out)) == (names, len(out))


_PRINTABLE_NAME = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=31),
    st.integers(127, 255).map(lambda k: "p" * k),
)
_ODD_NAME = st.sampled_from(
    ["\x00", "a\x1fb", "\x7f", "é", "x\x00\x00\x00\x00y", "\x00\x00\x00\x05", "\x00" * 8, "w" * 40, "v" * 256]
)


@_FUZZ
@given(
    st.lists(_PRINTABLE_NAME, min_size=32, max_size=90),
    st.just([]) | st.lists(st.tuples(st.integers(0, 100), _ODD_NAME), max_size=2),
    st.binary(max_size=80),
    st.just([]) | st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=2),
)
def test_the_printable_names_path_reads_exactly_what_the_careful_loop_reads(
    names: list[str], odd: list[tuple[int, str]], tail: bytes, flips: list[tuple[int, int]]
) -> None:
    """Vectors of printable names whose length bytes are not printable (up to 31 bytes, 127 to 255) are cut
    on four NULs; any other name (32 to 126 bytes, a control character, NULs, non-ASCII), a corrupted
    length or name, and trailing bytes leave them to the other paths: what is read is what the careful
    loop reads."""
    for at, name in odd:
        names.insert(at % len(names), name)
    blob = _vector_blob(names, tail, flips)
    assert _fast_reading(blob) == _careful_reading(blob)


def test_the_printable_names_path_takes_short_and_long_names() -> None:
    from zkwire.protocol import jute

    names = [f"n{i}" for i in range(100)] + ["q" * 200, ""] + [f"lock-{i:010d}" for i in range(40)]
    out = bytearray()
    write_string_vector(out, names)
    stat = bytes(range(68))
    assert jute._printable_names(bytes(out[4:]) + stat, len(names)) == (names, len(out) - 4)
    assert _fast_reading(bytes(out) + stat) == (names, len(out))
    # A name of 32 to 126 bytes has a printable length byte: not this path's.
    out = bytearray()
    write_string_vector(out, [*names, "x" * 40])
    assert jute._printable_names(bytes(out[4:]), len(names) + 1) is None
    assert _fast_reading(bytes(out)) == ([*names, "x" * 40], len(out))


def _careful_pairs(blob: bytes, n: int, lead_int: bool) -> tuple[object, int]:
    r = Reader(blob)
    try:
        pairs = [((r.int32(), r.ustring(), r.ustring()) if lead_int else (r.ustring(), r.ustring())) for _ in range(n)]
    except ProtocolError:
        return ProtocolError, -1
    return pairs, r.pos


def _fast_pairs(blob: bytes, n: int, lead_int: bool) -> tuple[object, int]:
    readings = []
    for buf, start in ((blob, 0), (bytearray(blob), 0), (memoryview(b"\x00" * 8 + blob).toreadonly(), 8)):
        r = Reader(buf, start)
        try:
            readings.append((r.string_pairs(n, lead_int=lead_int), r.pos - start))
        except ProtocolError:
            readings.append((ProtocolError, -1))
    assert readings[1] == readings[0] and readings[2] == readings[0]
    return readings[0]


_PAIR_TEXT = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=130),
)
_ODD_TEXT = st.sampled_from(["é", "\U0001f600", "x" * 200, None])


@_FUZZ
@given(
    st.lists(st.tuples(st.integers(0, 2**31 - 1), _PAIR_TEXT, _PAIR_TEXT), min_size=32, max_size=80),
    st.just([]) | st.lists(st.tuples(st.integers(-50, 50), _ODD_TEXT), max_size=2),
    st.booleans(),
    st.binary(max_size=80),
    st.just([]) | st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=2),
    st.sampled_from([0, 0, 0, -1, 1, 2]),
)
def test_the_ascii_path_of_string_pairs_reads_what_the_careful_loop_reads(
    entries: list[tuple[int, str | None, str | None]],
    odd: list[tuple[int, str | None]],
    lead_int: bool,
    tail: bytes,
    flips: list[tuple[int, int]],
    miscount: int,
) -> None:
    """ACL entries (an int and two strings) and ClientInfo entries (two strings), ASCII or not, nulls,
    long strings, corrupted bytes, a count that says more or fewer than there are: the one-decode path
    of string_pairs reads the entries and the end the careful loop reads, or fails as it fails."""
    for at, text in odd:
        entries.insert(at % len(entries), (at * 40_000_000, text, "x"))
    out = bytearray()
    for lead, first, second in entries:
        if lead_int:
            out += struct.pack(">i", lead & 31)
        write_ustring(out, first)
        write_ustring(out, second)
    blob = bytearray(out + tail)
    for at, value in flips:
        blob[at % len(blob)] = value
    n = len(entries) + miscount
    assert _fast_pairs(bytes(blob), n, lead_int) == _careful_pairs(bytes(blob), n, lead_int)


@_FUZZ
@given(st.lists(st.sampled_from([b"ab", b"ac", b"xb"]), max_size=200), st.integers(0, 3), st.binary(max_size=5))
def test_repeated_heads_counts_the_entries_of_one_head_in_a_row(entries: list[bytes], skip: int, tail: bytes) -> None:
    from zkwire.protocol.jute import repeated_heads

    stride = 3
    buf = b"".join(e + b"." for e in entries) + tail
    count = len(entries)
    naive = 0
    if count:
        naive = next((i for i in range(count) if entries[i][:2] != entries[0][:2]), count)
    assert repeated_heads(buf, 0, count, stride, 2) == naive
    if skip < count:
        rest = entries[skip:]
        naive = next((i for i in range(len(rest)) if rest[i] != rest[0]), len(rest))
        assert repeated_heads(buf, skip * stride, len(rest), stride, 2) == naive
