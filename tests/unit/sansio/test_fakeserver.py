"""The scripted fake server the core's tests talk to (tests/helpers/fakeserver.py) reads what the core
writes and frames what it answers."""

from __future__ import annotations

from helpers.fakeserver import ClientRequest, ConnectionPair, FakeServer
from helpers.sessioncore import ZERO16, data_reply, get_data, make_core

from zkwire.constants import EventType, KeeperState, OpCode
from zkwire.protocol.codec import decode_connect_response
from zkwire.protocol.jute import Reader
from zkwire.protocol.records import GetDataRequest, ReplyHeader, WatcherEvent

# ------------------------------------------------------------------------------------------- fake server


def test_fake_server_decodes_what_the_core_sends() -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    assert pair.server.connect_request is not None
    pair.to_client(pair.server.accept(), 0.1)
    get_data(pair.core, "/a", "t", 0.2)
    [req] = pair.to_server()
    assert req == ClientRequest(1, OpCode.GET_DATA, GetDataRequest("/a", False))
    assert list(pair.server.unanswered) == [req]
    reply = pair.server.answer(data_reply())
    assert list(pair.server.unanswered) == []
    assert ReplyHeader.read(Reader(reply[4:])) == ReplyHeader(1, pair.server.zxid, 0)


def test_fake_server_frames() -> None:
    server = FakeServer()
    payload = server.event(EventType.NODE_DELETED, "/x")[4:]
    r = Reader(payload)
    assert ReplyHeader.read(r) == ReplyHeader(-1, -1, 0)
    assert WatcherEvent.read(r) == WatcherEvent(EventType.NODE_DELETED, KeeperState.SYNC_CONNECTED, "/x")
    expired = decode_connect_response(server.expire()[4:])
    assert (expired.timeout, expired.session_id, expired.passwd, expired.expired) == (0, 0, ZERO16, True)
    assert server.pong()[4:8] == b"\xff\xff\xff\xfe"
    assert server.auth_reply(-115)[4:] == b"\xff\xff\xff\xfc" + bytes(8) + b"\xff\xff\xff\x8d"
