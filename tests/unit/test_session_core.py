"""SessionCore, deterministically: a scripted fake server on the other side, time passed in by hand.

No sockets, no trio, no clock: each test drives both ends explicitly through
:class:`fakeserver.ConnectionPair` and checks the bytes the core writes and the events it returns.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence
from itertools import pairwise
from typing import TypeVar

import pytest
from helpers.fakeserver import DEFAULT_PASSWD, STAT, ClientRequest, ConnectionPair, FakeServer, frame
from hypothesis import given, settings
from hypothesis import strategies as st

from zkwire.constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, AddWatchMode, EventType, KeeperState, OpCode
from zkwire.errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    NoAuthError,
    NoNodeError,
    ReplyTooLargeError,
    SessionExpiredError,
)
from zkwire.protocol.codec import decode_connect_response
from zkwire.protocol.jute import Reader
from zkwire.protocol.records import (
    AddWatchRequest,
    AuthPacket,
    ConnectRequest,
    CreateRequest,
    CreateResponse,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Record,
    ReplyHeader,
    SetWatches,
    SetWatches2,
    WatcherEvent,
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
    WatchNotification,
    WatchRequest,
)
from zkwire.sansio.watches import WatchKind

H1, H2, H3 = HostPort("zk1", 2181), HostPort("zk2", 2181), HostPort("zk3", 2181)
SID = 0x1_0000_0001
T = TypeVar("T")
ZERO16 = bytes(16)


# ---------------------------------------------------------------------------------------------- helpers


def make_core(
    hosts: Sequence[HostPort] = (H1,),
    timeout: float = 9.0,
    *,
    chroot: str = "",
    allow_read_only: bool = False,
    max_frame: int = DEFAULT_MAX_FRAME,
) -> SessionCore:
    return SessionCore(
        list(hosts),
        session_timeout=timeout,
        chroot=chroot,
        allow_read_only=allow_read_only,
        max_frame=max_frame,
        rng=random.Random(1234),
    )


def connected(
    timeout: float = 9.0, now: float = 0.0, *, chroot: str = "", max_frame: int = DEFAULT_MAX_FRAME
) -> ConnectionPair:
    pair = ConnectionPair(make_core(timeout=timeout, chroot=chroot, max_frame=max_frame))
    assert pair.connect(now) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    return pair


class Watcher:
    """A distinct, nameable watcher object."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Watcher({self.name})"


def get_data(core: SessionCore, path: str, token: object, now: float, watcher: object = None) -> int:
    watch = WatchRequest(WatchKind.DATA, path, watcher) if watcher is not None else None
    return core.send_request(
        OpCode.GET_DATA, GetDataRequest(path, watcher is not None), token, now, path=path, watch=watch
    )


def exists(core: SessionCore, path: str, token: object, now: float, watcher: object, kind: WatchKind) -> int:
    return core.send_request(
        OpCode.EXISTS, ExistsRequest(path, True), token, now, path=path, watch=WatchRequest(kind, path, watcher)
    )


def get_children(core: SessionCore, path: str, token: object, now: float, watcher: object) -> int:
    return core.send_request(
        OpCode.GET_CHILDREN,
        GetChildrenRequest(path, True),
        token,
        now,
        path=path,
        watch=WatchRequest(WatchKind.CHILD, path, watcher),
    )


def add_watch(core: SessionCore, path: str, token: object, now: float, watcher: object, recursive: bool) -> int:
    mode = AddWatchMode.PERSISTENT_RECURSIVE if recursive else AddWatchMode.PERSISTENT
    kind = WatchKind.RECURSIVE if recursive else WatchKind.PERSISTENT
    return core.send_request(
        OpCode.ADD_WATCH, AddWatchRequest(path, mode), token, now, path=path, watch=WatchRequest(kind, path, watcher)
    )


def watch_via(pair: ConnectionPair, send: int, body: Record | None = None, *, err: int = 0, now: float = 0.5) -> Reply:
    """Deliver the answer to the request just sent; return its Reply."""
    [req] = pair.to_server()
    assert isinstance(req, ClientRequest) and req.xid == send
    [reply] = pair.to_client(pair.server.reply(req, body, err=err), now)
    assert isinstance(reply, Reply)
    return reply


def only(events: Sequence[object], cls: type[T]) -> list[T]:
    return [e for e in events if isinstance(e, cls)]


def drops(events: list[Event]) -> list[DropConnection]:
    return [e for e in events if isinstance(e, DropConnection)]


def notify(pair: ConnectionPair, type_: int, path: str, now: float = 1.0) -> WatchNotification:
    [ev] = pair.to_client(pair.server.event(type_, path), now)
    assert isinstance(ev, WatchNotification)
    return ev


def data_reply(data: bytes = b"v") -> GetDataResponse:
    return GetDataResponse(data, STAT)


# -------------------------------------------------------------------------------------------- handshake


def test_first_connect_request_fields() -> None:
    pair = ConnectionPair(make_core(timeout=7.5))
    req = pair.open(0.0)
    assert req == ConnectRequest(
        protocol_version=0, last_zxid_seen=0, timeout=7500, session_id=0, passwd=ZERO16, read_only=False
    )
    assert pair.core.state is SessionState.CONNECTING
    assert pair.core.current_host == pair.host


def test_connect_request_asks_for_read_only_when_allowed() -> None:
    pair = ConnectionPair(make_core(allow_read_only=True))
    assert pair.open(0.0).read_only is True


def test_handshake_connects_with_negotiated_timeout() -> None:
    pair = ConnectionPair(make_core(timeout=30.0))
    pair.open(0.0)
    events = pair.to_client(pair.server.accept(session_id=0xABC, timeout_ms=4000), 0.2)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    core = pair.core
    assert core.state is SessionState.CONNECTED
    assert core.session_id == 0xABC
    assert core.negotiated_timeout == 4.0
    assert core.ping_interval == pytest.approx(4 / 3)
    assert core.read_timeout == pytest.approx(8 / 3)
    # Nothing more to send: no credentials, no watches.
    assert core.data_to_send() == b""


def test_reattach_presents_session_id_password_and_last_zxid() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/a", "t", 1.0)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply(), zxid=0x1234), 1.1)
    assert core.last_zxid == 0x1234

    assert pair.lose(2.0) == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]
    req = pair.open(2.1)
    assert req == ConnectRequest(0, 0x1234, 9000, SID, DEFAULT_PASSWD, False)

    events = pair.to_client(pair.server.accept(session_id=SID), 2.2)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
    assert core.session_id == SID


def test_read_only_connection() -> None:
    pair = ConnectionPair(make_core(allow_read_only=True))
    pair.open(0.0)
    events = pair.to_client(pair.server.accept(session_id=0x77, read_only=True), 0.1)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.READ_ONLY)]
    assert pair.core.state.is_connected
    assert not pair.core.seen_read_write
    assert pair.lose(1.0) == [StateChanged(SessionState.READ_ONLY, SessionState.SUSPENDED)]
    # A session only a read-only server has seen is not presented to the next server.
    req = pair.open(1.1)
    assert (req.session_id, req.passwd) == (0, ZERO16)
    events = pair.to_client(pair.server.accept(session_id=0x88), 1.2)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
    assert pair.core.session_id == 0x88
    assert pair.core.seen_read_write


def test_expired_connect_response_ends_the_session() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/a", "a", 1.0)
    get_data(core, "/b", "b", 1.0)
    pair.to_server()
    lost = pair.lose(2.0)
    assert [type(r.error) for r in only(lost, Reply)] == [ConnectionLossError, ConnectionLossError]
    core.add_auth("digest", b"u:p", "auth-token", 2.5)  # waits for the next attach

    req = pair.open(3.0)
    assert req.session_id == SID
    events = pair.to_client(pair.server.expire(), 3.1)
    assert isinstance(events[-1], DropConnection)
    [change] = only(events, StateChanged)
    assert (change.old, change.new) == (SessionState.SUSPENDED, SessionState.EXPIRED)
    assert isinstance(change.error, SessionExpiredError)
    # The credential's waiter learns the session is gone rather than waiting forever.
    [auth] = only(events, AuthResult)
    assert auth.token == "auth-token" and isinstance(auth.error, SessionExpiredError)
    assert core.state is SessionState.EXPIRED

    assert pair.lose(3.2) == []
    with pytest.raises(SessionExpiredError):
        core.send_request(OpCode.GET_DATA, GetDataRequest("/a", False), "late", 4.0, path="/a")
    with pytest.raises(SessionExpiredError):
        core.connection_made(H1, 4.0)
    assert core.next_deadline() == float("inf")
    assert core.handle_timer(100.0) == []


def test_refused_session_drops_the_connection() -> None:
    pair = ConnectionPair(make_core(allow_read_only=True))
    pair.open(0.0)
    [drop] = pair.to_client(pair.server.refuse(-119), 0.1)
    assert isinstance(drop, DropConnection) and "refused" in drop.reason
    assert pair.core.state is SessionState.CONNECTING
    assert pair.lose(0.2) == []


def test_send_request_before_connected_raises_connection_loss() -> None:
    pair = ConnectionPair(make_core())
    with pytest.raises(ConnectionLossError):
        get_data(pair.core, "/x", "t", 0.0)
    pair.open(0.0)
    with pytest.raises(ConnectionLossError):
        get_data(pair.core, "/x", "t", 0.0)


# ------------------------------------------------------------------------------------------- pipelining


def test_many_requests_in_flight_are_matched_in_order() -> None:
    pair = connected()
    core = pair.core
    tokens = [object() for _ in range(200)]
    xids = [get_data(core, f"/n{i}", tok, 1.0) for i, tok in enumerate(tokens)]
    assert xids == list(range(1, 201))
    assert core.outstanding == 200
    reqs = pair.to_server()
    assert [(r.xid, r.record) for r in reqs] == [(i + 1, GetDataRequest(f"/n{i}", False)) for i in range(200)]
    bodies = [data_reply(f"v{i}".encode()) for i in range(200)]
    events = only(pair.to_client(pair.server.answer_all(bodies), 2.0), Reply)
    assert len(events) == 200
    assert [e.token for e in events] == tokens
    assert [e.body for e in events] == bodies
    assert all(isinstance(e, Reply) and e.error is None for e in events)
    assert core.outstanding == 0


def test_error_reply_reaches_its_token_with_path() -> None:
    pair = connected()
    get_data(pair.core, "/missing", "t", 1.0)
    pair.to_server()
    [reply] = pair.to_client(pair.server.answer(err=-101), 1.1)
    assert isinstance(reply, Reply) and reply.token == "t" and reply.body is None
    assert isinstance(reply.error, NoNodeError) and reply.error.path == "/missing"


def test_reply_xid_mismatch_drops_the_connection() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/a", "a", 1.0)
    get_data(core, "/b", "b", 1.0)
    _, second = pair.to_server()
    events = pair.to_client(pair.server.reply(second, data_reply()), 1.1)
    [drop] = events
    assert isinstance(drop, DropConnection) and "xid" in drop.reason
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [
        ("a", ConnectionLossError),
        ("b", ConnectionLossError),
    ]


def test_reply_when_nothing_is_outstanding_drops() -> None:
    pair = connected()
    [drop] = pair.to_client(pair.server.reply(7, data_reply()), 1.0)
    assert isinstance(drop, DropConnection)


def test_xid_wraps_to_one() -> None:
    pair = connected()
    core = pair.core
    core._pending.xid = 2**31 - 2
    xids = [get_data(core, f"/w{i}", i, 1.0) for i in range(3)]
    assert xids == [2**31 - 1, 1, 2]
    assert [r.xid for r in pair.to_server()] == xids
    events = only(pair.to_client(pair.server.answer_all([data_reply()] * 3), 1.1), Reply)
    assert [e.token for e in events] == [0, 1, 2]


# ------------------------------------------------------------------------------------- pings, timeouts


def test_no_ping_while_requests_flow() -> None:
    pair = connected(timeout=9.0)  # ping interval 3 s
    core = pair.core
    now = 0.0
    for _ in range(20):
        now += 1.0
        get_data(core, "/busy", None, now)
        pair.to_server()
        pair.to_client(pair.server.answer(data_reply()), now)
        assert pair.timer(now) == []
        pair.to_server()
    assert pair.server.requests(OpCode.PING) == []


def test_ping_after_ping_interval_of_send_idleness() -> None:
    pair = connected(timeout=9.0)
    core = pair.core
    assert core.ping_interval == pytest.approx(3.0)
    assert core.next_deadline() == pytest.approx(3.0)
    assert pair.timer(2.99) == []
    assert core.data_to_send() == b""
    assert pair.timer(3.0) == []
    [ping] = pair.to_server()
    assert isinstance(ping, ClientRequest) and ping.is_ping and ping.op == OpCode.PING and ping.record is None
    # Exactly one per interval: the next one is due another interval later.
    assert pair.timer(3.5) == []
    assert pair.to_server() == []
    assert core.next_deadline() == pytest.approx(6.0)
    assert pair.to_client(pair.server.pong(), 3.1) == []
    assert pair.timer(6.0) == []
    assert [r.xid for r in pair.to_server()] == [PING_XID]


def test_read_timeout_drops_a_silent_connection() -> None:
    pair = connected(timeout=9.0)  # read timeout 6 s
    core = pair.core
    assert core.read_timeout == pytest.approx(6.0)
    pair.timer(3.0)  # a ping goes out, no answer comes
    pair.to_server()
    assert pair.timer(5.99) == []
    [drop] = pair.timer(6.0)
    assert isinstance(drop, DropConnection)
    assert pair.lose(6.1) == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]


def test_answered_pings_keep_the_connection() -> None:
    pair = connected(timeout=9.0)
    now = 0.0
    for _ in range(10):
        now += 3.0
        assert pair.timer(now) == []
        [ping] = pair.to_server()
        assert isinstance(ping, ClientRequest) and ping.is_ping
        assert pair.to_client(pair.server.pong(), now + 0.01) == []
    assert pair.core.state is SessionState.CONNECTED


def test_watch_notifications_do_not_hide_unanswered_pings() -> None:
    """A one-way partition: our pings are lost while notifications keep coming.  The server, which has
    not heard from us since the last answered ping, may expire the session a timeout after it; the
    application is told (SUSPENDED) two thirds of a timeout after it, and the connection, on which
    nothing more is answered, is dropped, however busy the other direction is."""
    pair = connected(timeout=9.0)
    w = Watcher("w")
    pair.core.watches.add(WatchKind.PERSISTENT, "/busy", w)
    assert pair.timer(3.0) == []
    pair.to_server()  # a ping
    assert pair.to_client(pair.server.pong(), 3.01) == []  # the server heard us at 3.0 or later
    assert pair.timer(6.0) == []
    [ping] = pair.to_server()  # this ping and everything after it is lost on the way
    assert ping.is_ping
    now = 6.0
    while now < 8.95:
        now += 0.05
        events = pair.to_client(pair.server.event(EventType.NODE_DATA_CHANGED, "/busy"), now)
        assert [type(e) for e in events] == [WatchNotification]
    assert pair.core.next_deadline() == pytest.approx(9.0)
    [told] = pair.timer(9.0)
    assert told == StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)
    assert pair.core.next_deadline() == pytest.approx(9.01)  # the newest answer came at 3.01
    [drop] = pair.timer(9.01)
    assert isinstance(drop, DropConnection) and "answered" in drop.reason


def test_liveness_counts_from_when_the_answered_request_was_sent() -> None:
    """A reply that comes late proves the server heard us when we sent, not when it answered: the
    session is SUSPENDED a read timeout after that send; an answer to something newer confirms it
    again on the same connection."""
    pair = connected(timeout=9.0)
    core = pair.core
    get_data(core, "/slow", "t", 1.0)
    pair.to_server()
    assert pair.timer(4.0) == []
    [ping] = pair.to_server()  # the ping due at 4.0 is not answered yet
    assert ping.is_ping
    [reply] = pair.to_client(pair.server.answer(data_reply()), 5.0)
    assert isinstance(reply, Reply) and reply.error is None
    assert core.next_deadline() == pytest.approx(7.0)  # 1.0 + 6.0, not 5.0 + 6.0
    assert pair.timer(7.0) == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]
    assert core.next_deadline() == pytest.approx(10.0)  # a ping 3 s after the last send
    assert pair.to_client(pair.server.pong(), 8.0) == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
    assert core.state is SessionState.CONNECTED
    # Nothing answered for a read timeout after that: the connection goes.
    assert drops(pair.timer(8.0 + 6.0))


def test_a_pipeline_draining_longer_than_the_read_timeout_keeps_its_connection() -> None:
    """200 requests sent at once; the server answers one every 50 ms (10 s, over three session
    timeouts), our pings queued behind them.  The session is SUSPENDED while no answer is to anything
    sent in the last read timeout, but the connection stays: every request gets its reply, none fails,
    no client-side expiry; the ping answered after the backlog confirms the session again."""
    pair = connected(timeout=3.0)  # read timeout 2 s, pings every second of idleness
    core = pair.core
    for i in range(200):
        get_data(core, f"/n{i}", i, 0.0)
    assert len(pair.to_server()) == 200
    replies: list[Reply] = []
    changes: list[StateChanged] = []
    pings = 0
    now = 0.0
    for _ in range(200):
        now += 0.05
        for e in pair.timer(now):
            assert not isinstance(e, DropConnection), e
            if isinstance(e, StateChanged):
                changes.append(e)
        pings += sum(1 for r in pair.to_server() if r.is_ping)
        for e in pair.to_client(pair.server.answer(data_reply()), now):
            if isinstance(e, Reply):
                replies.append(e)
            elif isinstance(e, StateChanged):
                changes.append(e)
    assert [r.token for r in replies] == list(range(200)) and all(r.error is None for r in replies)
    assert changes == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]
    assert pings >= 1
    # The server gets to the pings behind the backlog: the newest one, sent within the read timeout,
    # confirms the session; the older ones prove nothing newer.
    events = pair.to_client(pair.server.pong() * pings, now + 0.01)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
    assert core.outstanding == 0


def test_a_server_that_stops_answering_mid_pipeline_is_dropped_a_read_timeout_after_its_last_answer() -> None:
    pair = connected(timeout=3.0)
    core = pair.core
    for i in range(100):
        get_data(core, f"/n{i}", i, 0.0)
    pair.to_server()
    now = 0.0
    for _ in range(60):  # answers until 3.0, then silence (a frozen server)
        now += 0.05
        assert not drops(pair.timer(now))
        pair.to_client(pair.server.answer(data_reply()), now)
    assert core.state is SessionState.SUSPENDED  # since 2.0: nothing sent since 0.0 answered
    while (deadline := core.next_deadline()) < 4.99:  # pings, unanswered
        assert not drops(pair.timer(deadline))
    assert deadline == pytest.approx(now + 2.0)
    [drop] = pair.timer(deadline)
    assert isinstance(drop, DropConnection) and "nothing answered for 2.00s" in drop.reason
    failed = only(pair.lose(deadline), Reply)
    assert len(failed) == 40 and all(isinstance(r.error, ConnectionLossError) for r in failed)


def test_a_reply_trickled_byte_by_byte_does_not_keep_the_connection() -> None:
    """Half a frame proves nothing: bytes arriving one a second never complete a reply, so the read
    timeout still drops the connection (and the request fails with the connection, not hung)."""
    pair = connected(timeout=3.0)  # read timeout 2 s
    core = pair.core
    get_data(core, "/x", "t", 0.0)
    pair.to_server()
    reply = pair.server.answer(data_reply(b"payload"))
    dropped_at = None
    for i, byte in enumerate(reply[:-1]):
        now = float(i)
        assert pair.to_client(bytes([byte]), now) == []
        if drops(pair.timer(now + 0.5)):
            dropped_at = now + 0.5
            break
    assert dropped_at is not None and dropped_at <= 2.5
    [change, lost] = pair.lose(dropped_at)
    assert isinstance(change, StateChanged) and change.new is SessionState.SUSPENDED
    assert isinstance(lost, Reply) and isinstance(lost.error, ConnectionLossError)


def test_ping_answers_nobody_asked_for_prove_nothing() -> None:
    pair = connected(timeout=9.0)
    for t in (1.0, 2.0, 3.5, 5.0, 5.9):
        assert pair.to_client(pair.server.pong(), t) == []
    pair.to_server()
    [drop] = pair.timer(6.0)
    assert isinstance(drop, DropConnection)


def test_client_side_expiry_counts_from_the_last_answered_send() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2), timeout=6.0))
    core = pair.core
    pair.connect(0.0)
    get_data(core, "/a", "t", 1.0)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply()), 2.5)  # sent at 1.0
    for t in (3.0, 3.5, 4.0):
        pair.to_client(pair.server.event(EventType.NODE_DATA_CHANGED, "/a"), t)  # proves nothing
    pair.lose(4.5)
    assert core.next_deadline() == pytest.approx(7.0)
    [change] = pair.timer(7.0)
    assert isinstance(change, StateChanged) and change.new is SessionState.EXPIRED


def test_handshake_timeout_is_session_timeout_over_host_count() -> None:
    core = make_core(hosts=(H1, H2, H3), timeout=9.0)
    pair = ConnectionPair(core)
    assert core.connect_timeout == pytest.approx(3.0)
    pair.open(10.0)
    assert core.next_deadline() == pytest.approx(13.0)
    assert pair.timer(12.99) == []
    [drop] = pair.timer(13.0)
    assert isinstance(drop, DropConnection) and "handshake" in drop.reason
    assert pair.lose(13.0) == []
    assert core.state is SessionState.CONNECTING


def test_client_side_expiry_without_any_server() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2), timeout=30.0))
    core = pair.core
    pair.connect(0.0, timeout_ms=6000)
    get_data(core, "/a", "t", 1.0)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply()), 1.0)  # last heard at 1.0
    pair.lose(3.0)
    # Every reconnect attempt fails during the handshake.
    for t in (3.0, 4.0, 5.0, 6.0):
        pair.open(t)
        assert pair.timer(t + 0.5) == []
        pair.lose(t + 0.6)
    assert core.state is SessionState.SUSPENDED
    assert core.next_deadline() == pytest.approx(7.0)
    assert pair.timer(6.99) == []
    events = pair.timer(7.0)
    [change] = events
    assert isinstance(change, StateChanged) and change.new is SessionState.EXPIRED
    assert change.old is SessionState.SUSPENDED and isinstance(change.error, SessionExpiredError)
    with pytest.raises(SessionExpiredError):
        get_data(core, "/a", "t", 8.0)


def test_client_side_expiry_records_the_abandoned_session() -> None:
    pair = ConnectionPair(make_core(timeout=6.0))
    core = pair.core
    pair.connect(0.0)
    assert core.abandoned is None
    pair.lose(0.5)
    pair.timer(6.0)
    assert core.state is SessionState.EXPIRED
    assert core.abandoned == (SID, DEFAULT_PASSWD)


def test_a_server_verdict_of_expiry_abandons_nothing() -> None:
    pair = connected()
    pair.lose(1.0)
    pair.open(1.5)
    pair.to_client(pair.server.expire(), 1.6)
    assert pair.core.state is SessionState.EXPIRED
    assert pair.core.abandoned is None


def test_resume_presents_the_given_session_on_the_first_connection() -> None:
    core = make_core()
    core.resume(0x42, b"p" * 16)
    pair = ConnectionPair(core)
    req = pair.open(0.0)
    assert (req.session_id, req.passwd) == (0x42, b"p" * 16)
    events = pair.to_client(pair.server.accept(session_id=0x42), 0.1)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    assert core.session_id == 0x42


def test_a_resumed_session_the_server_expired_ends_the_core() -> None:
    core = make_core()
    core.resume(0x42, b"p" * 16)
    pair = ConnectionPair(core)
    pair.open(0.0)
    events = pair.to_client(pair.server.expire(), 0.1)
    [change] = only(events, StateChanged)
    assert change.new is SessionState.EXPIRED and isinstance(change.error, SessionExpiredError)


def test_a_resumed_session_answered_with_another_id_is_refused() -> None:
    core = make_core()
    core.resume(0x42, b"p" * 16)
    pair = ConnectionPair(core)
    pair.open(0.0)
    [drop] = pair.to_client(pair.server.accept(session_id=0x43), 0.1)
    assert isinstance(drop, DropConnection) and "answered with session 0x43" in drop.reason
    assert core.state is SessionState.CONNECTING and core.session_id == 0x42


@pytest.mark.parametrize(("session_id", "passwd"), [(0, b"p"), (-1, b"p"), (1 << 63, b"p"), (1, b""), (1, bytes(99))])
def test_resume_refuses_what_cannot_be_a_session(session_id: int, passwd: bytes) -> None:
    with pytest.raises(InvalidArgumentError):
        make_core().resume(session_id, passwd)


def test_resume_only_before_the_first_session() -> None:
    pair = connected()
    with pytest.raises(InvalidArgumentError):
        pair.core.resume(0x42, b"p" * 16)


def test_reattach_in_time_prevents_client_side_expiry() -> None:
    pair = ConnectionPair(make_core(timeout=30.0))
    core = pair.core
    pair.connect(0.0, timeout_ms=6000)
    pair.lose(1.0)
    pair.open(5.0)
    pair.to_client(pair.server.accept(session_id=SID, timeout_ms=6000), 5.9)
    assert core.state is SessionState.CONNECTED
    assert pair.timer(6.0) == []
    assert pair.timer(7.0) == []
    assert core.state is SessionState.CONNECTED


def test_client_side_expiry_during_a_reattach_handshake() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2, H3), timeout=6.0))
    pair.connect(0.0)
    pair.lose(0.5)
    pair.open(5.0)  # handshake deadline 7.0; expiry at 6.0 comes first
    [change] = pair.timer(6.0)
    assert isinstance(change, StateChanged) and change.new is SessionState.EXPIRED


# ----------------------------------------------------------------------------------------- connection loss


def test_connection_lost_fails_each_pending_request_with_its_own_error() -> None:
    pair = connected()
    core = pair.core
    paths = ["/p/a", "/p/b", "/p/c"]
    for i, p in enumerate(paths):
        get_data(core, p, i, 1.0)
    pair.to_server()
    events = pair.lose(2.0)
    replies = only(events, Reply)
    assert [r.token for r in replies] == [0, 1, 2]
    errors = only([r.error for r in replies], ConnectionLossError)
    assert len(errors) == 3
    assert [e.path for e in errors] == paths
    assert len({id(e) for e in errors}) == 3
    # The state change comes first, so that a lock's lease is marked lost before any request fails.
    assert events[0] == StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)
    assert core.outstanding == 0
    with pytest.raises(ConnectionLossError):
        get_data(core, "/x", "t", 2.5)
    # Old bytes are not delivered to the next connection.
    assert core.data_to_send() == b""
    assert core.receive_data(pair.server.answer(data_reply()), 2.6) == []


def test_connection_lost_twice_is_harmless() -> None:
    pair = connected()
    assert len(pair.lose(1.0)) == 1
    assert pair.lose(1.1) == []


# ------------------------------------------------------------------------------------------------ watches


def test_get_data_watch_registers_only_on_success() -> None:
    pair = connected()
    core = pair.core
    w_fail, w_ok = Watcher("fail"), Watcher("ok")
    reply = watch_via(pair, get_data(core, "/d", "t1", 1.0, w_fail), err=-101)
    assert isinstance(reply.error, NoNodeError)
    assert not core.watches.has(WatchKind.DATA, "/d")
    ev = notify(pair, EventType.NODE_CREATED, "/d")
    assert ev.watchers == []

    watch_via(pair, get_data(core, "/d", "t2", 1.0, w_ok), data_reply())
    assert core.watches.has(WatchKind.DATA, "/d")
    ev = notify(pair, EventType.NODE_DATA_CHANGED, "/d")
    assert (ev.type, ev.state, ev.path, ev.watchers) == (
        EventType.NODE_DATA_CHANGED,
        KeeperState.SYNC_CONNECTED,
        "/d",
        [w_ok],
    )
    # One-shot: gone after firing.
    assert notify(pair, EventType.NODE_DATA_CHANGED, "/d").watchers == []


def test_watch_of_a_request_lost_with_the_connection_is_not_registered() -> None:
    pair = connected()
    get_data(pair.core, "/d", "t", 1.0, Watcher("w"))
    pair.to_server()
    pair.lose(2.0)
    assert not pair.core.watches


@pytest.mark.parametrize("kind", [WatchKind.DATA, WatchKind.EXIST])
def test_exists_watch_on_missing_node_registers(kind: WatchKind) -> None:
    # Client.exists asks with WatchKind.DATA; the table must follow the server's answer either way.
    pair = connected()
    core = pair.core
    w = Watcher("exists")
    reply = watch_via(pair, exists(core, "/e", "t", 1.0, w, kind), err=-101)
    assert isinstance(reply.error, NoNodeError)
    assert core.watches.has(WatchKind.EXIST, "/e")
    assert not core.watches.has(WatchKind.DATA, "/e")
    assert notify(pair, EventType.NODE_CREATED, "/e").watchers == [w]
    assert not core.watches


@pytest.mark.parametrize("kind", [WatchKind.DATA, WatchKind.EXIST])
def test_exists_watch_on_existing_node_is_a_data_watch(kind: WatchKind) -> None:
    pair = connected()
    core = pair.core
    w = Watcher("exists")
    reply = watch_via(pair, exists(core, "/e", "t", 1.0, w, kind), ExistsResponse(STAT))
    assert reply.body == ExistsResponse(STAT)
    assert core.watches.has(WatchKind.DATA, "/e")
    assert not core.watches.has(WatchKind.EXIST, "/e")
    assert notify(pair, EventType.NODE_DELETED, "/e").watchers == [w]


def test_exists_watch_not_registered_on_other_errors() -> None:
    pair = connected()
    reply = watch_via(pair, exists(pair.core, "/e", "t", 1.0, Watcher("w"), WatchKind.EXIST), err=-102)
    assert isinstance(reply.error, NoAuthError)
    assert not pair.core.watches


def test_data_and_child_tables_are_separate() -> None:
    pair = connected()
    core = pair.core
    wd, wc = Watcher("data"), Watcher("child")
    watch_via(pair, get_data(core, "/n", "d", 1.0, wd), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, wc), GetChildrenResponse(("x",)))

    assert notify(pair, EventType.NODE_CHILDREN_CHANGED, "/n").watchers == [wc]
    assert notify(pair, EventType.NODE_CHILDREN_CHANGED, "/n").watchers == []
    assert notify(pair, EventType.NODE_DATA_CHANGED, "/n").watchers == [wd]

    watch_via(pair, get_data(core, "/n", "d", 1.0, wd), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, wc), GetChildrenResponse(()))
    # Deletion wakes both tables, each watcher once.
    assert notify(pair, EventType.NODE_DELETED, "/n").watchers == [wd, wc]
    assert not core.watches


def test_events_on_other_paths_wake_nobody() -> None:
    pair = connected()
    watch_via(pair, get_data(pair.core, "/a/b", "d", 1.0, Watcher("w")), data_reply())
    for path in ("/a", "/a/b/c", "/a/bc"):
        assert notify(pair, EventType.NODE_DELETED, path).watchers == []
    assert pair.core.watches.has(WatchKind.DATA, "/a/b")


def test_persistent_watch_sees_every_event_on_its_path_and_stays() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("persistent")
    reply = watch_via(pair, add_watch(core, "/p", "t", 1.0, w, recursive=False), ErrorResponse(0))
    assert reply.error is None
    for etype in (
        EventType.NODE_CREATED,
        EventType.NODE_DATA_CHANGED,
        EventType.NODE_CHILDREN_CHANGED,
        EventType.NODE_DELETED,
        EventType.NODE_CREATED,
    ):
        assert notify(pair, etype, "/p").watchers == [w]
    assert notify(pair, EventType.NODE_CREATED, "/p/child").watchers == []
    assert core.watches.has(WatchKind.PERSISTENT, "/p")


def test_recursive_watch_sees_descendants_but_never_children_changed() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("recursive")
    watch_via(pair, add_watch(core, "/r", "t", 1.0, w, recursive=True), ErrorResponse(0))
    for path in ("/r", "/r/a", "/r/a/b/c"):
        for etype in (EventType.NODE_CREATED, EventType.NODE_DATA_CHANGED, EventType.NODE_DELETED):
            assert notify(pair, etype, path).watchers == [w], (etype, path)
        assert notify(pair, EventType.NODE_CHILDREN_CHANGED, path).watchers == []
    for path in ("/", "/rx", "/other/r"):
        assert notify(pair, EventType.NODE_CREATED, path).watchers == []
    assert core.watches.has(WatchKind.RECURSIVE, "/r")


def test_one_watcher_in_several_tables_is_woken_once() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("everywhere")
    watch_via(pair, get_data(core, "/n", "d", 1.0, w), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, w), GetChildrenResponse(()))
    watch_via(pair, add_watch(core, "/", "r", 1.0, w, recursive=True), ErrorResponse(0))
    assert notify(pair, EventType.NODE_DELETED, "/n").watchers == [w]


def test_recursive_watch_and_a_notification_with_a_relative_path() -> None:
    # A malformed path must not hang the ancestor walk.
    pair = connected()
    w = Watcher("root")
    watch_via(pair, add_watch(pair.core, "/", "t", 1.0, w, recursive=True), ErrorResponse(0))
    result: list[list[Event]] = []
    worker = threading.Thread(target=lambda: result.append(pair.core.receive_data(pair.server.event(1, "a/b"), 2.0)))
    worker.daemon = True
    worker.start()
    worker.join(5.0)
    assert not worker.is_alive(), "receive_data hung on a notification path without a leading slash"
    [events] = result
    assert all(isinstance(e, WatchNotification | DropConnection) for e in events)


def test_chroot_is_stripped_from_event_paths() -> None:
    pair = connected(chroot="/app")
    core = pair.core
    w1, w2 = Watcher("root"), Watcher("x")
    watch_via(pair, get_data(core, "/app", "t", 1.0, w1), data_reply())
    watch_via(pair, get_data(core, "/app/x", "t", 1.0, w2), data_reply())
    ev = notify(pair, EventType.NODE_DATA_CHANGED, "/app")
    assert (ev.path, ev.watchers) == ("/", [w1])
    ev = notify(pair, EventType.NODE_DELETED, "/app/x")
    assert (ev.path, ev.watchers) == ("/x", [w2])
    assert notify(pair, EventType.NODE_CREATED, "/application").path == "/application"


def test_unknown_event_type_and_state_are_passed_through() -> None:
    pair = connected()
    [ev] = pair.to_client(pair.server.event(42, "/z", state=77), 1.0)
    assert isinstance(ev, WatchNotification)
    assert (ev.type, ev.state, ev.path, ev.watchers) == (42, 77, "/z", [])


def _register_one_shot_watches(pair: ConnectionPair) -> dict[str, Watcher]:
    """A data watch on /d, an exist watch on /e, a child watch on /c."""
    core = pair.core
    ws = {name: Watcher(name) for name in "dec"}
    watch_via(pair, get_data(core, "/d", "d", 1.0, ws["d"]), data_reply())
    watch_via(pair, exists(core, "/e", "e", 1.0, ws["e"], WatchKind.DATA), err=-101)
    watch_via(pair, get_children(core, "/c", "c", 1.0, ws["c"]), GetChildrenResponse(()))
    return ws


def test_reattach_sends_set_watches_and_connects_only_after_its_reply() -> None:
    pair = connected()
    core = pair.core
    ws = _register_one_shot_watches(pair)
    get_data(core, "/z", "z", 1.5)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply(), zxid=0x2222), 1.6)
    pair.lose(2.0)

    pair.open(2.1)
    assert pair.to_client(pair.server.accept(session_id=SID), 2.2) == []
    assert core.state is SessionState.SUSPENDED
    [sw] = pair.to_server()
    assert isinstance(sw, ClientRequest) and sw.op == OpCode.SET_WATCHES and sw.xid > 0
    assert sw.record == SetWatches(0x2222, ("/d",), ("/e",), ("/c",))
    # User requests wait until the session is usable again.
    with pytest.raises(ConnectionLossError):
        get_data(core, "/q", "q", 2.3)
    events = pair.to_client(pair.server.reply(sw), 2.4)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
    # The watches are still armed locally.
    assert notify(pair, EventType.NODE_CREATED, "/e").watchers == [ws["e"]]
    assert notify(pair, EventType.NODE_DATA_CHANGED, "/d").watchers == [ws["d"]]
    assert notify(pair, EventType.NODE_CHILDREN_CHANGED, "/c").watchers == [ws["c"]]


def test_notifications_during_set_watches_are_delivered() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("d")
    watch_via(pair, get_data(core, "/d", "d", 1.0, w), data_reply())
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    [sw] = pair.to_server()
    # The server fires what changed while the client was away, then answers SetWatches.
    events = pair.to_client(pair.server.event(EventType.NODE_DATA_CHANGED, "/d") + pair.server.reply(sw), 2.3)
    assert isinstance(events[0], WatchNotification) and events[0].watchers == [w]
    assert events[1] == StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)


def test_reattach_uses_set_watches2_for_persistent_watches() -> None:
    pair = connected()
    core = pair.core
    _register_one_shot_watches(pair)
    watch_via(pair, add_watch(core, "/p", "p", 1.0, Watcher("p"), recursive=False), ErrorResponse(0))
    watch_via(pair, add_watch(core, "/r", "r", 1.0, Watcher("r"), recursive=True), ErrorResponse(0))
    last = core.last_zxid
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    [sw] = pair.to_server()
    assert isinstance(sw, ClientRequest) and sw.op == OpCode.SET_WATCHES2
    assert sw.record == SetWatches2(last, ("/d",), ("/e",), ("/c",), ("/p",), ("/r",))
    assert pair.to_client(pair.server.reply(sw), 2.3) == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]


def test_reattach_without_watches_sends_nothing_extra() -> None:
    pair = connected()
    pair.lose(1.0)
    pair.open(1.1)
    assert pair.to_client(pair.server.accept(session_id=SID), 1.2) == [
        StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)
    ]
    assert pair.to_server() == []


def test_failed_set_watches_still_connects() -> None:
    pair = connected()
    _register_one_shot_watches(pair)
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    [sw] = pair.to_server()
    assert isinstance(sw, ClientRequest)
    events = pair.to_client(pair.server.reply(sw, err=-6), 2.3)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]


# --------------------------------------------------------------------------------------------------- auth


def test_add_auth_while_connected() -> None:
    pair = connected()
    pair.core.add_auth("digest", b"user:pw", "auth", 1.0)
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest)
    assert (pkt.xid, pkt.op, pkt.record) == (AUTH_XID, OpCode.AUTH, AuthPacket(0, "digest", b"user:pw"))
    assert pair.to_client(pair.server.auth_reply(), 1.1) == [AuthResult("auth", None)]


def test_auth_reply_may_overtake_an_older_reply() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/slow", "slow", 1.0)
    core.add_auth("digest", b"user:pw", "auth", 1.0)
    get_data(core, "/after", "after", 1.0)
    reqs = pair.to_server()
    assert [r.xid for r in reqs] == [1, AUTH_XID, 2]
    data = pair.server.auth_reply() + pair.server.answer(data_reply()) + pair.server.answer(data_reply())
    events = pair.to_client(data, 1.1)
    assert [type(e) for e in events] == [AuthResult, Reply, Reply]
    assert [getattr(e, "token", None) for e in events] == ["auth", "slow", "after"]
    assert not drops(events)


def test_credentials_are_resent_before_the_session_reports_connected() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"a:1", "first", 1.0)
    core.add_auth("ip", b"127.0.0.1", "second", 1.0)
    pair.to_server()
    pair.to_client(pair.server.auth_reply() + pair.server.auth_reply(), 1.1)
    _register_one_shot_watches(pair)

    for attempt in range(3):
        t = 10.0 * (attempt + 1)
        pair.lose(t)
        pair.open(t)
        assert pair.to_client(pair.server.accept(session_id=SID), t + 0.1) == []
        reqs = pair.to_server()
        # Credentials first (in the order added), then the watches.
        assert [(r.xid, r.op) for r in reqs] == [
            (AUTH_XID, OpCode.AUTH),
            (AUTH_XID, OpCode.AUTH),
            (reqs[2].xid, OpCode.SET_WATCHES),
        ]
        assert [r.record for r in reqs[:2]] == [
            AuthPacket(0, "digest", b"a:1"),
            AuthPacket(0, "ip", b"127.0.0.1"),
        ]
        assert pair.to_client(pair.server.reply(reqs[2]), t + 0.2) == []
        assert pair.to_client(pair.server.auth_reply(), t + 0.3) == []
        assert core.state is SessionState.SUSPENDED
        # Accepted again: nobody is waiting for a verdict any more, so no AuthResult.
        assert pair.to_client(pair.server.auth_reply(), t + 0.4) == [
            StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)
        ]


def test_credentials_added_before_the_first_connection() -> None:
    pair = ConnectionPair(make_core())
    core = pair.core
    core.add_auth("digest", b"early:bird", "early", 0.0)
    pair.open(0.0)
    assert pair.to_client(pair.server.accept(), 0.1) == []
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest) and pkt.record == AuthPacket(0, "digest", b"early:bird")
    assert pair.to_client(pair.server.auth_reply(), 0.2) == [
        AuthResult("early", None),
        StateChanged(SessionState.CONNECTING, SessionState.CONNECTED),
    ]


def test_add_auth_while_suspended_is_sent_with_the_reattach() -> None:
    pair = connected()
    core = pair.core
    pair.lose(1.0)
    core.add_auth("digest", b"late:one", "late", 1.5)
    assert core.data_to_send() == b""
    pair.open(2.0)
    pair.to_client(pair.server.accept(session_id=SID), 2.1)
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest) and pkt.is_auth
    assert pair.to_client(pair.server.auth_reply(), 2.2) == [
        AuthResult("late", None),
        StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED),
    ]


def test_add_auth_while_resyncing_is_sent_on_that_connection() -> None:
    pair = connected()
    core = pair.core
    _register_one_shot_watches(pair)
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    [sw] = pair.to_server()
    # The session is attached and re-registering its watches when the credential comes in.
    core.add_auth("digest", b"mid:sync", "mid", 2.3)
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest) and pkt.record == AuthPacket(0, "digest", b"mid:sync")
    assert pair.to_client(pair.server.reply(sw), 2.4) == []
    assert pair.to_client(pair.server.auth_reply(), 2.5) == [
        AuthResult("mid", None),
        StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED),
    ]


def test_rejected_credential_is_reported_and_never_resent() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"good:one", "good", 1.0)
    pair.to_server()
    pair.to_client(pair.server.auth_reply(), 1.1)
    core.add_auth("digest", b"bad:one", "bad", 1.2)
    pair.to_server()
    events = pair.to_client(pair.server.auth_reply(-115), 1.3)
    [result] = only(events, AuthResult)
    assert result.token == "bad" and isinstance(result.error, AuthFailedError)
    assert isinstance(events[-1], DropConnection)
    assert core.state is SessionState.CONNECTED  # the session itself is fine
    pair.lose(1.4)
    pair.open(1.5)
    pair.to_client(pair.server.accept(session_id=SID), 1.6)
    reqs = pair.to_server()
    assert [r.record for r in reqs] == [AuthPacket(0, "digest", b"good:one")]
    assert pair.to_client(pair.server.auth_reply(), 1.7) == [
        StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)
    ]


def test_rejected_credential_on_first_sending_during_reattach() -> None:
    pair = connected()
    core = pair.core
    pair.lose(1.0)
    core.add_auth("digest", b"bad:one", "bad", 1.1)
    pair.open(1.2)
    pair.to_client(pair.server.accept(session_id=SID), 1.3)
    pair.to_server()
    events = pair.to_client(pair.server.auth_reply(-115), 1.4)
    assert [type(e) for e in events] == [AuthResult, DropConnection]
    assert core.state is SessionState.SUSPENDED
    pair.lose(1.5)
    pair.open(1.6)
    assert pair.to_client(pair.server.accept(session_id=SID), 1.7) == [
        StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)
    ]
    assert pair.to_server() == []


def test_previously_accepted_credential_rejected_on_reconnect_fails_the_session() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"was:good", "a", 1.0)
    pair.to_server()
    pair.to_client(pair.server.auth_reply(), 1.1)
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    pair.to_server()
    events = pair.to_client(pair.server.auth_reply(-115), 2.3)
    [change] = only(events, StateChanged)
    assert (change.old, change.new) == (SessionState.SUSPENDED, SessionState.AUTH_FAILED)
    assert isinstance(change.error, AuthFailedError)
    assert not only(events, AuthResult)
    assert isinstance(events[-1], DropConnection)
    assert core.state.is_terminal
    with pytest.raises(AuthFailedError):
        get_data(core, "/x", "t", 3.0)
    with pytest.raises(AuthFailedError):
        core.connection_made(H1, 3.0)


def test_auth_reply_without_an_auth_request_drops() -> None:
    pair = connected()
    [drop] = pair.to_client(pair.server.auth_reply(), 1.0)
    assert isinstance(drop, DropConnection)


def test_pending_credential_survives_a_lost_connection() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"in:flight", "tok", 1.0)
    pair.to_server()
    assert not only(pair.lose(1.1), AuthResult)  # still waiting: it is sent again
    pair.open(1.2)
    pair.to_client(pair.server.accept(session_id=SID), 1.3)
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest) and pkt.record == AuthPacket(0, "digest", b"in:flight")
    assert only(pair.to_client(pair.server.auth_reply(), 1.4), AuthResult) == [AuthResult("tok", None)]


# --------------------------------------------------------------------------------------------------- zxid


def test_last_zxid_is_the_max_reply_zxid_ignoring_pings_events_and_auth() -> None:
    pair = connected()
    core = pair.core
    for zxid in (0x10, 0x30, 0x20):
        get_data(core, "/z", None, 1.0)
        pair.to_server()
        pair.to_client(pair.server.answer(data_reply(), zxid=zxid), 1.0)
    assert core.last_zxid == 0x30
    pair.to_client(pair.server.pong(zxid=0x99), 1.1)
    pair.to_client(pair.server.event(EventType.NODE_CREATED, "/q"), 1.1)
    core.add_auth("digest", b"x:y", None, 1.1)
    pair.to_server()
    pair.to_client(pair.server.header(AUTH_XID, zxid=0x999), 1.1)
    assert core.last_zxid == 0x30
    get_data(core, "/z", None, 1.2)
    pair.to_server()
    pair.to_client(pair.server.answer(err=-101, zxid=0x31), 1.2)
    assert core.last_zxid == 0x31


def test_write_replies_advance_last_zxid() -> None:
    pair = connected()
    core = pair.core
    before = pair.server.zxid
    core.send_request(OpCode.CREATE, CreateRequest("/n", b"", (), 0), "c", 1.0, path="/n")
    pair.to_server()
    [reply] = pair.to_client(pair.server.answer(CreateResponse("/n")), 1.1)
    assert isinstance(reply, Reply) and reply.body == CreateResponse("/n") and reply.zxid == before + 1
    assert core.last_zxid == before + 1


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


# ------------------------------------------------------------------------------------------ host rotation


def test_next_host_cycles_through_all_hosts() -> None:
    hosts = [HostPort(f"zk{i}", 2181) for i in range(5)]
    core = make_core(hosts=hosts)
    first_lap = [core.next_host() for _ in range(5)]
    assert sorted(first_lap) == sorted(hosts)
    assert [core.next_host() for _ in range(10)] == first_lap * 2
    assert sorted(core.hosts) == sorted(hosts)


def test_hosts_are_shuffled_per_client() -> None:
    hosts = [HostPort(f"zk{i}", 2181) for i in range(8)]
    orders = {tuple(SessionCore(hosts, rng=random.Random(seed)).hosts) for seed in range(20)}
    assert len(orders) > 1


def test_reconnect_delay_jitters_within_a_lap_and_backs_off_after_full_laps() -> None:
    core = make_core(hosts=(H1, H2, H3), timeout=60.0)
    assert core.reconnect_delay() == 0.0

    def samples() -> list[float]:
        return [core.reconnect_delay() for _ in range(200)]

    lap_ends: list[tuple[float, float]] = []
    for _lap in range(8):
        for i in range(3):
            core.next_host()
            core.connection_failed()
            drawn = samples()
            if i < 2:  # more hosts to try in this lap: only a little jitter
                assert all(0.0 <= d <= 0.05 for d in drawn)
            else:
                lap_ends.append((min(drawn), max(drawn)))
    # After every full lap of failures: a real pause, longer than the jitter, growing, never over 1 s.
    assert all(lo >= 0.05 - 1e-9 and hi <= 1.0 for lo, hi in lap_ends)
    highs = [hi for _, hi in lap_ends]
    assert all(b >= 0.9 * a for a, b in pairwise(highs))  # (sampled maxima: allow noise)
    assert highs[3] > 2 * highs[0]
    assert highs[0] <= 0.1
    assert lap_ends[-1][0] >= 0.5


def test_reconnect_delay_resets_after_a_successful_handshake() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2)))
    core = pair.core
    for _ in range(6):
        pair.open(0.0)
        pair.timer(10.0)
        pair.lose(10.0)  # handshake failures count
    assert core.reconnect_delay() > 0.0
    pair.connect(11.0)
    pair.lose(12.0)
    assert core.reconnect_delay() == 0.0


def test_reconnect_delay_is_bounded_by_the_negotiated_timeout() -> None:
    pair = ConnectionPair(make_core(hosts=(H1,), timeout=2.0))
    core = pair.core
    pair.connect(0.0, timeout_ms=2000)
    pair.lose(0.5)
    for _ in range(10):
        core.connection_failed()
        assert core.reconnect_delay() <= 0.2


def test_prefer_host_goes_next_once() -> None:
    core = make_core(hosts=(H1, H2, H3))
    lap = [core.next_host() for _ in range(3)]
    core.prefer_host(H2)
    assert core.next_host() == H2
    assert [core.next_host() for _ in range(3)] == lap


# ------------------------------------------------------------------------------------------------- close


def test_close_sends_close_session_then_connection_lost_closes() -> None:
    pair = connected()
    core = pair.core
    assert core.close(1.0) is True
    [req] = pair.to_server()
    assert isinstance(req, ClientRequest) and req.op == OpCode.CLOSE_SESSION and req.xid > 0
    with pytest.raises((ConnectionLossError, ClientClosedError)):
        get_data(core, "/x", "t", 1.1)
    assert pair.to_client(pair.server.reply(req), 1.2) == []
    events = pair.lose(1.3)
    assert events == [StateChanged(SessionState.CONNECTED, SessionState.CLOSED)]
    assert core.state is SessionState.CLOSED
    assert core.mark_closed() == []
    with pytest.raises(ClientClosedError):
        get_data(core, "/x", "t", 1.4)
    assert core.close(1.5) is False


def test_close_answers_a_credential_still_waiting() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"x:y", "auth", 1.0)
    assert core.close(1.1) is True
    pair.to_server()
    events = pair.lose(1.2)
    [auth] = only(events, AuthResult)
    assert auth.token == "auth" and isinstance(auth.error, ClientClosedError)
    assert events[-1] == StateChanged(SessionState.CONNECTED, SessionState.CLOSED)


def test_auth_failed_session_answers_credentials_still_waiting() -> None:
    pair = connected()
    core = pair.core
    core.add_auth("digest", b"old:one", "old", 1.0)
    pair.to_server()
    pair.to_client(pair.server.auth_reply(), 1.1)
    pair.lose(2.0)
    core.add_auth("digest", b"new:one", "new", 2.1)
    pair.open(2.2)
    pair.to_client(pair.server.accept(session_id=SID), 2.3)
    assert len(pair.to_server()) == 2
    events = pair.to_client(pair.server.auth_reply(-115), 2.4)
    [auth] = only(events, AuthResult)
    assert auth.token == "new" and isinstance(auth.error, AuthFailedError)
    assert core.state is SessionState.AUTH_FAILED
    assert isinstance(events[-1], DropConnection)


def test_close_while_suspended_needs_no_round_trip() -> None:
    pair = connected()
    core = pair.core
    pair.lose(1.0)
    assert core.close(1.1) is False
    assert core.data_to_send() == b""
    assert core.mark_closed() == [StateChanged(SessionState.SUSPENDED, SessionState.CLOSED)]


def test_mark_closed_fails_pending_requests_and_credentials() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/a", "a", 1.0)
    get_data(core, "/b", "b", 1.0)
    core.add_auth("digest", b"x:y", "auth", 1.0)
    assert core.close(1.1) is True
    pair.to_server()
    events = core.mark_closed()
    replies = only(events, Reply)
    assert [r.token for r in replies] == ["a", "b"]
    assert all(isinstance(r.error, ClientClosedError) for r in replies)
    assert replies[0].error is not replies[1].error
    [auth] = only(events, AuthResult)
    assert auth.token == "auth" and isinstance(auth.error, ClientClosedError)
    assert events[-1] == StateChanged(SessionState.CONNECTED, SessionState.CLOSED)
    assert pair.lose(1.2) == []
    assert core.next_deadline() == float("inf")


def test_no_timers_after_close() -> None:
    pair = connected()
    pair.core.mark_closed()
    assert pair.timer(1000.0) == []


# ----------------------------------------------------------------------------------------------- logging


def test_logs_never_show_the_password_or_credentials(caplog: pytest.LogCaptureFixture) -> None:
    secret = "alice:s3cr3t-Cred"
    rejected = "mallory:n0t-This-0ne"
    caplog.set_level(logging.DEBUG)
    pair = ConnectionPair(make_core(hosts=(H1, H2), timeout=6.0))
    core = pair.core
    core.add_auth("digest", secret.encode(), "a0", 0.0)
    pair.open(0.0)
    pair.to_client(pair.server.accept(), 0.1)
    pair.to_server()
    pair.to_client(pair.server.auth_reply(), 0.2)
    watch_via(pair, get_data(core, "/d", "d", 0.3, Watcher("w")), data_reply())
    core.add_auth("digest", rejected.encode(), "a1", 0.4)
    pair.to_server()
    pair.to_client(pair.server.auth_reply(-115), 0.5)
    pair.lose(0.6)
    pair.open(0.7)
    pair.to_client(pair.server.accept(session_id=SID), 0.8)
    reqs = pair.to_server()
    for r in reqs:
        assert isinstance(r, ClientRequest)
        pair.to_client(pair.server.auth_reply() if r.is_auth else pair.server.reply(r), 0.9)
    assert core.state is SessionState.CONNECTED
    pair.timer(3.0)
    pair.lose(3.1)
    pair.open(3.2)
    pair.timer(6.2)
    pair.lose(6.2)
    [expired] = pair.timer(7.0)  # client-side expiry
    assert isinstance(expired, StateChanged)
    assert (expired.old, expired.new) == (SessionState.SUSPENDED, SessionState.EXPIRED)
    assert caplog.records, "the scenario should have logged something"

    texts = [caplog.text] + [r.getMessage() for r in caplog.records] + [repr(r.args) for r in caplog.records]
    forbidden = [
        DEFAULT_PASSWD.hex(),
        DEFAULT_PASSWD.hex().upper(),
        repr(DEFAULT_PASSWD),
        secret,
        rejected,
        secret.encode().hex(),
    ]
    for text in texts:
        for f in forbidden:
            assert f not in text


def test_reprs_of_core_objects_hide_secrets() -> None:
    pair = connected()
    pair.core.add_auth("digest", b"hidden:value", "t", 1.0)
    [pkt] = pair.to_server()
    assert isinstance(pkt, ClientRequest)
    assert "hidden:value" not in repr(pkt.record)
    assert "hidden:value" not in repr(pair.core._handshake.credentials)


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
