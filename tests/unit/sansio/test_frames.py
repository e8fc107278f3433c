"""Bytes into the session core: frames cut anywhere are read alike, a malformed or oversize frame drops
the connection (or fails only its request), and the replies complete before a bad length still reach
their callers."""

from __future__ import annotations

import pytest
from helpers.fakeserver import STAT, ConnectionPair, FakeServer, frame
from helpers.sessioncore import connected, data_reply, drops, get, get_data, make_core, only
from hypothesis import given, settings
from hypothesis import strategies as st

from zkwire.constants import EventType, KeeperState, OpCode
from zkwire.errors import ConnectionLossError, ProtocolError, ReplyTooLargeError
from zkwire.protocol.framing import FrameDecoder
from zkwire.protocol.records import ErrorResponse, ExistsRequest, ExistsResponse, GetDataResponse
from zkwire.sansio.session import (
    DropConnection,
    Event,
    Reply,
    SessionCore,
    SessionState,
    StateChanged,
    WatchNotification,
)

# ------------------------------------------------------------------------------------------ framing


def test_frame_decoder_returns_complete_frames_before_a_bad_length() -> None:
    decoder = FrameDecoder(max_frame=100)
    good = frame(b"one") + frame(b"two")
    assert decoder.feed(good + FakeServer.bad_length((1 << 31) - 1)) == [b"one", b"two"]
    assert isinstance(decoder.error, ProtocolError)
    # The stream stays failed: nothing after the bad length is ever delivered.
    with pytest.raises(ProtocolError):
        decoder.feed(frame(b"three"))


def test_frame_decoder_bad_length_first_still_raises() -> None:
    decoder = FrameDecoder(max_frame=100)
    with pytest.raises(ProtocolError):
        decoder.feed(FakeServer.bad_length(-7))
    assert decoder.error is not None


def test_replies_in_the_chunk_of_a_bad_length_reach_their_callers() -> None:
    pair = connected()
    get(pair, "first")
    get(pair, "second")
    pair.to_server()
    data = pair.server.answer(GetDataResponse(b"1", STAT)) + pair.server.answer(GetDataResponse(b"2", STAT))
    events = pair.core.receive_data(data + FakeServer.bad_length(-(1 << 31)), 1.1)
    assert [(r.token, r.body) for r in only(events, Reply)] == [
        ("first", GetDataResponse(b"1", STAT)),
        ("second", GetDataResponse(b"2", STAT)),
    ]
    assert isinstance(events[-1], DropConnection)
    assert len(only(events, DropConnection)) == 1


def test_bad_length_after_replies_fails_only_what_is_still_pending() -> None:
    pair = connected()
    get(pair, "answered")
    get(pair, "lost")
    pair.to_server()
    events: list[Event] = pair.core.receive_data(
        pair.server.answer(GetDataResponse(b"1", STAT)) + FakeServer.bad_length(-2), 1.1
    )
    assert [r.token for r in only(events, Reply)] == ["answered"]
    assert isinstance(events[-1], DropConnection)
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [("lost", ConnectionLossError)]


# ----------------------------------------------------------------------------------------- broken frames


def _pending_get(pair: ConnectionPair) -> None:
    get_data(pair.core, "/victim", "victim", 1.0)
    pair.to_server()


MALFORMED: dict[str, bytes] = {
    "short header": frame(b"\x00\x00\x00\x01\x00\x00"),
    "negative length": FakeServer.bad_length(-5),
    "text instead of a frame": b"HTTP/1.1 400 Bad Request\r\n\r\n",
    "truncated getData body": FakeServer().header(1, body=ErrorResponse(7)),
    "getData body with trailing bytes": frame(FakeServer().header(1, body=data_reply())[4:] + b"\x00\x00"),
    "error reply with a body": FakeServer().header(1, -101, body=ErrorResponse(0)),
    "notification without a body": FakeServer().header(-1),
    "notification with invalid utf-8 path": frame(
        FakeServer().header(-1)[4:] + b"\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00\x02\xc3\x28"
    ),
    "notification with trailing bytes": frame(FakeServer().event(1, "/x")[4:] + b"!"),
    "wrong xid": FakeServer().header(99, body=data_reply()),
}


@pytest.mark.parametrize("data", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_frames_drop_the_connection(data: bytes) -> None:
    pair = connected()
    _pending_get(pair)
    events = pair.core.receive_data(data, 1.5)
    assert len(drops(events)) == 1 and isinstance(events[-1], DropConnection)
    assert not only(events, Reply)
    # The request the broken reply may have been meant for is not lost: it fails with the connection.
    lost = pair.lose(1.6)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [("victim", ConnectionLossError)]
    assert lost[0] == StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)


HANDSHAKE_MALFORMED: dict[str, bytes] = {
    "empty": frame(b""),
    "truncated": FakeServer().accept()[4:20],
    "null password": frame(b"\x00" * 4 + b"\x00\x00\x1f\x40" + b"\x00" * 7 + b"\x05" + b"\xff\xff\xff\xff"),
    "trailing bytes": frame(FakeServer().accept()[4:] + b"\x01\x02"),
}


@pytest.mark.parametrize("payload", list(HANDSHAKE_MALFORMED.values()), ids=list(HANDSHAKE_MALFORMED))
def test_malformed_connect_response_drops(payload: bytes) -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    events = pair.to_client(payload, 0.1)
    assert [type(e) for e in events] == [DropConnection]
    assert pair.core.state is SessionState.CONNECTING


def test_frame_over_max_frame_fails_only_its_request() -> None:
    pair = connected(max_frame=4096)
    _pending_get(pair)
    get_data(pair.core, "/next", "next", 1.0)
    pair.to_server()
    big = pair.server.answer(data_reply(b"x" * 5000))
    stream = big + pair.server.answer(data_reply(b"small"))
    events = []
    for at in range(0, len(stream), 100):  # the oversize frame's bytes are skipped as they come
        events += pair.core.receive_data(stream[at : at + 100], 1.1)
    assert not drops(events)
    [victim, following] = only(events, Reply)
    assert victim.token == "victim" and isinstance(victim.error, ReplyTooLargeError)
    assert victim.error.size == len(big) - 4 and victim.error.max_frame == 4096
    assert "max_frame" in str(victim.error) and "/victim" in str(victim.error)
    assert following.token == "next" and following.body == data_reply(b"small")
    assert pair.core.state is SessionState.CONNECTED and pair.core.outstanding == 0
    # A frame of exactly max_frame is read.
    _pending_get(pair)
    payload_len = 4096
    body = data_reply(b"y" * (payload_len - 16 - 4 - 68))
    ok = pair.server.answer(body)
    assert len(ok) == 4 + payload_len
    [reply] = pair.to_client(ok, 1.5)
    assert isinstance(reply, Reply) and reply.body == body


def test_frames_after_a_drop_in_the_same_chunk_are_ignored() -> None:
    pair = connected()
    _pending_get(pair)
    data = pair.server.reply(55) + pair.server.answer(data_reply())
    assert [type(e) for e in pair.core.receive_data(data, 1.1)] == [DropConnection]


def _scenario_stream(server: FakeServer) -> bytes:
    """Handshake, a reply, a notification, a pong and another reply, as one byte stream."""
    return (
        server.accept()
        + server.reply(1, data_reply(b"first"), zxid=0x50)
        + server.event(EventType.NODE_DATA_CHANGED, "/w")
        + server.pong()
        + server.reply(2, ExistsResponse(STAT), zxid=0x51)
    )


def _run_scenario(chunks: list[bytes]) -> tuple[list[Event], SessionCore]:
    pair = ConnectionPair(make_core())
    core = pair.core
    pair.open(0.0)
    events: list[Event] = []
    handshake = True
    for chunk in chunks:
        events += core.receive_data(chunk, 1.0)
        if handshake and core.state is SessionState.CONNECTED:
            handshake = False
            get_data(core, "/w", "r1", 1.0, watcher="W")
            core.send_request(OpCode.EXISTS, ExistsRequest("/w", False), "r2", 1.0, path="/w")
    return events, core


def test_receive_data_one_byte_at_a_time() -> None:
    stream = _scenario_stream(FakeServer(zxid=1))
    whole, _ = _run_scenario([stream[: len(FakeServer().accept())], stream[len(FakeServer().accept()) :]])
    assert [type(e) for e in whole] == [StateChanged, Reply, WatchNotification, Reply]
    single, core = _run_scenario([stream[i : i + 1] for i in range(len(stream))])
    assert single == whole
    assert core.last_zxid == 0x51
    assert single[2] == WatchNotification(EventType.NODE_DATA_CHANGED, KeeperState.SYNC_CONNECTED, "/w", ["W"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), max_size=30))
def test_any_chunking_gives_the_same_events(sizes: list[int]) -> None:
    stream = _scenario_stream(FakeServer(zxid=1))
    accept_len = len(FakeServer().accept())
    # The requests are sent once connected, so split the handshake off first, then chunk the rest.
    rest = stream[accept_len:]
    chunks = [stream[:accept_len]]
    pos = 0
    for n in sizes:
        chunks.append(rest[pos : pos + n])
        pos += n
    chunks.append(rest[pos:])
    events, _ = _run_scenario([c for c in chunks if c])
    expected, _ = _run_scenario([stream[:accept_len], rest])
    assert events == expected


def test_handshake_and_replies_in_one_chunk() -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    data = pair.server.accept() + pair.server.event(EventType.NODE_CREATED, "/early") + pair.server.pong()
    events = pair.to_client(data, 0.1)
    assert [type(e) for e in events] == [StateChanged, WatchNotification]
