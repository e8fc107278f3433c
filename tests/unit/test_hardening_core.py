"""Hostile input to the sans-I/O core: framing, handshakes and replies a server should never send.

Each test states the documented outcome (see "Server values" in ``zkwire/session.py`` and
``protocol-notes/hostile-servers.md``): a clean :class:`DropConnection`, a clamped value, or the
correct result -- never another exception type.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import pytest
from helpers.fakeserver import STAT, ConnectionPair, FakeServer

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import DEFAULT_MAX_FRAME, OpCode
from zkwire.errors import AuthFailedError, ConnectionLossError, DataTooLargeError, InvalidArgumentError, ProtocolError
from zkwire.protocol.framing import FrameDecoder, frame
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    Create2Response,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    ErrorResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    SetDataResponse,
)
from zkwire.sansio.session import (
    AuthResult,
    DropConnection,
    Event,
    HostPort,
    Reply,
    SessionCore,
    SessionState,
    StateChanged,
)

T = TypeVar("T")
H1 = HostPort("zk1", 2181)


def make_core(
    timeout: float = 9.0, *, allow_read_only: bool = False, max_frame: int = DEFAULT_MAX_FRAME
) -> SessionCore:
    return SessionCore(
        [H1], session_timeout=timeout, allow_read_only=allow_read_only, max_frame=max_frame, rng=random.Random(7)
    )


def connected(timeout: float = 9.0) -> ConnectionPair:
    pair = ConnectionPair(make_core(timeout))
    assert pair.connect(0.0) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    return pair


def only(events: Sequence[object], cls: type[T]) -> list[T]:
    return [e for e in events if isinstance(e, cls)]


def get(pair: ConnectionPair, token: object, now: float = 1.0) -> None:
    pair.core.send_request(OpCode.GET_DATA, GetDataRequest("/a", False), token, now, path="/a")


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


# ------------------------------------------------------------------------------ replies that cannot be


def _multi(pair: ConnectionPair, token: object, ops: Sequence[MultiOp], code: int = OpCode.MULTI) -> None:
    pair.core.send_request(code, MultiRequest(tuple(ops)), token, 1.0)
    pair.to_server()


TWO_WRITES = (
    MultiOp(OpCode.CREATE, CreateRequest("/m/a", b"", OPEN_ACL_UNSAFE, 0)),
    MultiOp(OpCode.DELETE, DeleteRequest("/m/b", -1)),
)
TWO_READS = (
    MultiOp(OpCode.GET_DATA, GetDataRequest("/r", False)),
    MultiOp(OpCode.GET_CHILDREN, GetChildrenRequest("/r", False)),
)

BAD_MULTI_REPLIES: dict[str, tuple[int, tuple[MultiOp, ...], tuple[MultiResult, ...]]] = {
    "multi, one result short": (OpCode.MULTI, TWO_WRITES, (MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),)),
    "multi, one result too many": (
        OpCode.MULTI,
        TWO_WRITES,
        (
            MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),
            MultiResult(OpCode.DELETE, 0, None),
            MultiResult(OpCode.DELETE, 0, None),
        ),
    ),
    "multi, no results": (OpCode.MULTI, TWO_WRITES, ()),
    "multi, result of another op": (
        OpCode.MULTI,
        TWO_WRITES,
        (MultiResult(OpCode.SET_DATA, 0, SetDataResponse(STAT)), MultiResult(OpCode.DELETE, 0, None)),
    ),
    "multi, null created path": (
        OpCode.MULTI,
        TWO_WRITES,
        (MultiResult(OpCode.CREATE, 0, CreateResponse(None)), MultiResult(OpCode.DELETE, 0, None)),
    ),
    "multiRead, one result short": (
        OpCode.MULTI_READ,
        TWO_READS,
        (MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),),
    ),
    "multiRead, results swapped": (
        OpCode.MULTI_READ,
        TWO_READS,
        (
            MultiResult(OpCode.GET_CHILDREN, 0, GetChildrenResponse(["c"])),
            MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),
        ),
    ),
    "multiRead, a write result": (
        OpCode.MULTI_READ,
        TWO_READS,
        (MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)), MultiResult(OpCode.DELETE, 0, None)),
    ),
}


@pytest.mark.parametrize("case", list(BAD_MULTI_REPLIES), ids=list(BAD_MULTI_REPLIES))
def test_multi_reply_that_does_not_match_the_request_drops(case: str) -> None:
    code, ops, results = BAD_MULTI_REPLIES[case]
    pair = connected()
    _multi(pair, "multi", ops, code)
    events = pair.to_client(pair.server.answer(MultiResponse(results)), 1.1)
    assert [type(e) for e in events] == [DropConnection]
    # Like any malformed reply: the request fails with the connection (for a write: outcome unknown).
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [("multi", ConnectionLossError)]


def test_multi_replies_that_match_are_delivered() -> None:
    pair = connected()
    ok = (MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")), MultiResult(OpCode.DELETE, 0, None))
    failed = (MultiResult(OpCode.ERROR, 0, ErrorResponse(0)), MultiResult(OpCode.ERROR, -101, ErrorResponse(-101)))
    # 3.8.0 answers create2 in a multi with a plain create result, containers and TTL nodes with create2.
    variants = (
        MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),
        MultiResult(OpCode.CREATE2, 0, Create2Response("/m/b", STAT)),
    )
    creates = (
        MultiOp(OpCode.CREATE2, CreateRequest("/m/a", b"", OPEN_ACL_UNSAFE, 0)),
        MultiOp(OpCode.CREATE_CONTAINER, CreateRequest("/m/b", b"", OPEN_ACL_UNSAFE, 4)),
    )
    reads = (
        MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),
        MultiResult(OpCode.ERROR, -101, ErrorResponse(-101)),
    )
    for code, ops, results in (
        (OpCode.MULTI, TWO_WRITES, ok),
        (OpCode.MULTI, TWO_WRITES, failed),
        (OpCode.MULTI, creates, variants),
        (OpCode.MULTI_READ, TWO_READS, reads),
    ):
        _multi(pair, "m", ops, code)
        [reply] = pair.to_client(pair.server.answer(MultiResponse(results)), 1.1)
        assert isinstance(reply, Reply) and reply.body == MultiResponse(results) and reply.error is None
    _multi(pair, "empty", ())
    [reply] = pair.to_client(pair.server.answer(MultiResponse(())), 1.2)
    assert isinstance(reply, Reply) and reply.body == MultiResponse(())


@pytest.mark.parametrize("op", [OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER])
def test_null_created_path_drops(op: int) -> None:
    pair = connected()
    pair.core.send_request(
        op, CreateRequest("/n", b"", OPEN_ACL_UNSAFE, 4 if op == OpCode.CREATE_CONTAINER else 0), "c", 1.0, path="/n"
    )
    pair.to_server()
    body = CreateResponse(None) if op == OpCode.CREATE else Create2Response(None, STAT)
    assert [type(e) for e in pair.to_client(pair.server.answer(body), 1.1)] == [DropConnection]
    assert [(r.token, type(r.error)) for r in only(pair.lose(1.2), Reply)] == [("c", ConnectionLossError)]


# ------------------------------------------------------------------------- what a server says in a handshake

INT32_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1


def _failed_handshake(pair: ConnectionPair, response: bytes, now: float = 0.1) -> None:
    """``response`` is refused: the connection is dropped, the attempt counts toward back-off."""
    events = pair.to_client(response, now)
    assert [type(e) for e in events] == [DropConnection], events
    before = pair.core.reconnect_delay()
    pair.lose(now + 0.1)
    assert pair.core.reconnect_delay() > 0 or before > 0


@pytest.mark.parametrize(
    ("requested", "granted", "kept"),
    [
        (9.0, INT32_MAX, 60.0),
        (120.0, INT32_MAX, 120.0),
        (9.0, 61_000, 60.0),
        (1.0, 4_000, 4.0),
        (9.0, 60_000, 60.0),
        (9.0, 5_000, 5.0),
    ],
)
def test_negotiated_timeout_is_clamped(requested: float, granted: int, kept: float) -> None:
    pair = ConnectionPair(make_core(requested))
    pair.open(0.0)
    events = pair.to_client(pair.server.accept(timeout_ms=granted), 0.1)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    assert pair.core.negotiated_timeout == kept


def test_huge_negotiated_timeout_keeps_dead_server_detection() -> None:
    pair = ConnectionPair(make_core(9.0))
    pair.open(0.0)
    pair.to_client(pair.server.accept(timeout_ms=INT32_MAX), 0.0)
    # A silent server is noticed within two thirds of the clamped timeout, not after 24 days.
    assert pair.core.next_deadline() <= 40.0
    drops = only(pair.timer(40.0), DropConnection)
    assert len(drops) == 1


def test_unasked_read_only_grant_is_refused() -> None:
    pair = ConnectionPair(make_core())
    req = pair.open(0.0)
    assert req.read_only is False
    _failed_handshake(pair, pair.server.accept(read_only=True))
    assert pair.core.state is SessionState.CONNECTING and pair.core.session_id == 0


def test_asked_read_only_grant_is_accepted() -> None:
    pair = ConnectionPair(make_core(allow_read_only=True))
    pair.open(0.0)
    assert pair.to_client(pair.server.accept(read_only=True), 0.1) == [
        StateChanged(SessionState.CONNECTING, SessionState.READ_ONLY)
    ]


@pytest.mark.parametrize("size", [0, 65, 1024, (1 << 20) - 200])
def test_session_password_of_a_wrong_size_is_refused(size: int) -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    _failed_handshake(pair, pair.server.accept(passwd=b"p" * size))
    # The next attempt still asks for a new session (nothing of the refused answer was kept).
    req = pair.open(1.0)
    assert (req.session_id, req.passwd) == (0, bytes(16))


@pytest.mark.parametrize("size", [1, 16, 64])
def test_session_password_sizes_accepted(size: int) -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    pair.to_client(pair.server.accept(passwd=b"p" * size), 0.1)
    pair.lose(1.0)
    assert pair.open(1.1).passwd == b"p" * size


def test_null_session_password_is_refused() -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    # protocolVersion 0, timeout 8000 ms, session id 5, then a password of length -1 (null).
    response = frame((0).to_bytes(4, "big") + (8000).to_bytes(4, "big") + (5).to_bytes(8, "big") + b"\xff" * 4)
    [drop] = pair.to_client(response, 0.1)
    assert isinstance(drop, DropConnection)
    assert "without a session password" in drop.reason  # the check it names, not a truncated record
    assert pair.core.session_id == 0


def test_session_id_zero_is_refused() -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    _failed_handshake(pair, pair.server.accept(session_id=0))


def test_reattach_answered_with_another_session_is_refused() -> None:
    pair = connected()
    pair.lose(1.0)
    pair.open(1.1)
    # Taking it would start a new session silently (ephemeral nodes and watches of the old one gone).
    _failed_handshake(pair, pair.server.accept(session_id=0x2_0000_0002), 1.2)
    assert pair.core.session_id == 0x1_0000_0001
    assert pair.core.state is SessionState.SUSPENDED
    req = pair.open(1.5)
    assert req.session_id == 0x1_0000_0001
    assert pair.to_client(pair.server.accept(), 1.6) == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]


def test_expired_answer_to_a_new_session_request_is_refused() -> None:
    pair = ConnectionPair(make_core())
    pair.open(0.0)
    # Only a session the client presented can have expired: this server is confused, try another.
    _failed_handshake(pair, pair.server.expire())
    assert pair.core.state is SessionState.CONNECTING


def test_huge_reply_zxid_is_accepted_and_sent_back() -> None:
    """Policy: a reply's zxid is accepted as is (there is nothing to check it against).  A server that
    sent 2**63-1 makes every honest server refuse the re-attach; the client then expires the session
    itself after the negotiated timeout -- a typed error, no hang."""
    pair = connected()
    get(pair, "z")
    pair.to_server()
    pair.to_client(pair.server.answer(GetDataResponse(b"", STAT), zxid=LONG_MAX), 1.0)
    assert pair.core.last_zxid == LONG_MAX
    pair.lose(2.0)
    t = 2.0
    for _ in range(100):
        t += max(pair.core.reconnect_delay(), 0.5)
        pair.timer(t)
        if pair.core.state is SessionState.EXPIRED:
            break
        assert pair.open(t).last_zxid_seen == LONG_MAX
        pair.lose(t + 0.01)  # an honest server closes the connection without an answer
    assert pair.core.state is SessionState.EXPIRED
    assert t <= 1.0 + 9.0 + 1.0  # the last reply came at 1.0; the negotiated timeout is 9 s


# ------------------------------------------------------------------------------------------ credentials


@pytest.mark.parametrize(
    ("scheme", "auth", "error"),
    [("digest", b"u:" + b"x" * 2_000_000, DataTooLargeError), ("digest\ud800", b"u:p", InvalidArgumentError)],
    ids=["2 MB credential", "lone surrogate in the scheme"],
)
@pytest.mark.parametrize("when", ["connected", "suspended", "before the first connection"])
def test_credential_that_cannot_be_sent_is_refused_at_once_and_never_kept(
    scheme: str, auth: bytes, error: type[Exception], when: str
) -> None:
    if when == "before the first connection":
        pair = ConnectionPair(make_core())
    else:
        pair = connected()
        if when == "suspended":
            pair.lose(0.5)
    with pytest.raises(error):
        pair.core.add_auth(scheme, auth, "tok", 1.0)
    assert pair.core.data_to_send() == b""
    if when == "connected":
        pair.lose(1.5)
    # The next handshake must not meet the credential again (it used to raise inside receive_data).
    pair.open(2.0)
    events = pair.to_client(pair.server.accept(), 2.1)
    assert [type(e) for e in events] == [StateChanged]
    assert pair.core.state is SessionState.CONNECTED
    assert pair.to_server() == []  # no AuthPacket


def test_refused_required_credential_fails_the_session() -> None:
    pair = ConnectionPair(make_core())
    pair.core.add_auth("digest", b"ok:pw", "ok", 0.0, required=True)
    pair.core.add_auth("Digest", b"u:p", "bad", 0.0, required=True)
    pair.open(0.1)
    assert pair.to_client(pair.server.accept(), 0.2) == []  # not connected before the verdicts
    assert [r.is_auth for r in pair.to_server()] == [True, True]
    events = pair.to_client(pair.server.auth_reply() + pair.server.auth_reply(-115), 0.3)
    assert events[0] == AuthResult("ok", None)
    [bad] = only(events, AuthResult)[1:]
    assert bad.token == "bad" and isinstance(bad.error, AuthFailedError)
    [change] = only(events, StateChanged)
    assert (change.old, change.new) == (SessionState.CONNECTING, SessionState.AUTH_FAILED)
    assert isinstance(change.error, AuthFailedError)
    assert isinstance(events[-1], DropConnection)
    assert pair.core.state is SessionState.AUTH_FAILED
