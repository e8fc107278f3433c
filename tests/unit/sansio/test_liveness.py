"""The session core's clocks (zkwire.sansio.liveness): pings on send idleness, the read timeout of a silent
connection, what counts as an answer, the handshake's timeout, and client-side expiry when no server
re-attaches the session in time."""

from __future__ import annotations

import pytest
from helpers.fakeserver import DEFAULT_PASSWD, ClientRequest, ConnectionPair
from helpers.sessioncore import H1, H2, H3, SID, Watcher, connected, data_reply, drops, get_data, make_core, only

from zkwire.constants import PING_XID, EventType, OpCode
from zkwire.errors import ConnectionLossError, SessionExpiredError
from zkwire.protocol.records import GetDataRequest
from zkwire.sansio.hosts import HostPort
from zkwire.sansio.session import (
    DeadlineMoved,
    DropConnection,
    Reply,
    SessionState,
    StateChanged,
    WatchNotification,
    WatchRequest,
)
from zkwire.sansio.watches import WatchKind

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


def test_the_handshake_answer_says_the_deadline_moved_and_the_syncing_deadlines_are_met() -> None:
    # One host: the connect timeout is a third of the session timeout (3 s), the re-attach's read timeout
    # 6 s.  A timer asleep until the connect deadline it read during the handshake is told (DeadlineMoved)
    # that the SYNCING phase's clocks run: here SetWatches is never answered, and the connection must be
    # dropped at the read timeout -- not the session given up for expired.
    pair = connected(timeout=9.0)
    pair.core.send_request(
        OpCode.GET_DATA, GetDataRequest("/w", True), "w", 0.5, path="/w", watch=WatchRequest(WatchKind.DATA, "/w", 1)
    )
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply()), 0.6)
    pair.lose(1.0)
    pair.open(1.0)
    assert pair.core.next_deadline() == pytest.approx(1.0 + 3.0)  # the connect deadline
    events = pair.to_client(pair.server.accept(session_id=SID), 1.2)
    assert only(events, DeadlineMoved) == [DeadlineMoved()]
    [set_watches] = pair.to_server()
    assert set_watches.op == OpCode.SET_WATCHES
    now = pair.core.next_deadline()
    assert now < 1.0 + 6.0  # a ping before the read timeout
    while True:
        events = pair.timer(now)
        pair.to_server()
        assert pair.core.state is not SessionState.EXPIRED
        if drops(events):
            break
        now = pair.core.next_deadline()
    assert now == pytest.approx(1.0 + 6.0)  # the read timeout after the ConnectRequest went out


def test_no_busy_timer_while_a_handshake_goes_unanswered() -> None:
    core = make_core(timeout=9.0)
    pair = ConnectionPair(core)
    pair.open(0.0)
    now = 0.0
    wakes = 0
    while core.next_deadline() < 9.0 and wakes < 10:
        now = core.next_deadline()
        if drops(pair.timer(now)):
            pair.lose(now)  # the handshake's deadline (3 s: a third of the session timeout) drops it
        assert core.next_deadline() > now  # a deadline in the past would wake the timer at once, for ever
        wakes += 1
    assert wakes <= 2 and now == pytest.approx(3.0)


def test_no_deadline_moved_when_the_session_opens_at_once() -> None:
    pair = ConnectionPair(make_core())
    events = pair.connect(0.0)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]


def test_three_attempts_fit_in_a_session_timeout_whatever_the_host_count() -> None:
    assert make_core(hosts=(H1,), timeout=9.0).connect_timeout == pytest.approx(3.0)
    assert make_core(hosts=(H1, H2), timeout=9.0).connect_timeout == pytest.approx(3.0)
    assert make_core(hosts=(H1, H2, H3, HostPort("zk4", 2181)), timeout=9.0).connect_timeout == pytest.approx(2.25)
