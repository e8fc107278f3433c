"""The handshake (zkwire.sansio.handshake, driven through SessionCore): the ConnectRequest sent, the
checks of the ConnectResponse (timeout clamped, read-only grant, password, session id), resuming a given
session, and SetWatches when a session is re-attached.  The credentials' step is test_auth.py."""

from __future__ import annotations

import pytest
from helpers.fakeserver import DEFAULT_PASSWD, STAT, ClientRequest, ConnectionPair, frame
from helpers.sessioncore import (
    H1,
    SID,
    ZERO16,
    Watcher,
    add_watch,
    connected,
    data_reply,
    get,
    get_data,
    make_core,
    notify,
    only,
    register_one_shot_watches,
    watch_via,
)

from zkwire.constants import EventType, OpCode
from zkwire.errors import ConnectionLossError, InvalidArgumentError, SessionExpiredError
from zkwire.protocol.records import (
    ConnectRequest,
    ErrorResponse,
    GetDataRequest,
    GetDataResponse,
    SetWatches,
    SetWatches2,
)
from zkwire.sansio.session import (
    AuthResult,
    DeadlineMoved,
    DropConnection,
    Reply,
    SessionState,
    StateChanged,
    WatchNotification,
)

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


# ------------------------------------------------------------------------------------ resuming a session


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


# ------------------------------------------------------------------------------- SetWatches on re-attach


def test_reattach_sends_set_watches_and_connects_only_after_its_reply() -> None:
    pair = connected()
    core = pair.core
    ws = register_one_shot_watches(pair)
    get_data(core, "/z", "z", 1.5)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply(), zxid=0x2222), 1.6)
    pair.lose(2.0)

    pair.open(2.1)
    assert pair.to_client(pair.server.accept(session_id=SID), 2.2) == [DeadlineMoved()]
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
    register_one_shot_watches(pair)
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
    register_one_shot_watches(pair)
    pair.lose(2.0)
    pair.open(2.1)
    pair.to_client(pair.server.accept(session_id=SID), 2.2)
    [sw] = pair.to_server()
    assert isinstance(sw, ClientRequest)
    events = pair.to_client(pair.server.reply(sw, err=-6), 2.3)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]
