"""Credentials in the session core (the auth step of zkwire.sansio.handshake): added while connected, sent
again before a re-attached session reports CONNECTED, an auth reply matched out of order, a rejected or
unsendable credential reported once and never kept."""

from __future__ import annotations

import pytest
from helpers.fakeserver import ClientRequest, ConnectionPair
from helpers.sessioncore import (
    H1,
    SID,
    connected,
    data_reply,
    drops,
    get_data,
    make_core,
    only,
    register_one_shot_watches,
)

from zkwire.constants import AUTH_XID, OpCode
from zkwire.errors import AuthFailedError, DataTooLargeError, InvalidArgumentError
from zkwire.protocol.records import AuthPacket
from zkwire.sansio.session import AuthResult, DeadlineMoved, DropConnection, Reply, SessionState, StateChanged

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
    register_one_shot_watches(pair)

    for attempt in range(3):
        t = 10.0 * (attempt + 1)
        pair.lose(t)
        pair.open(t)
        assert pair.to_client(pair.server.accept(session_id=SID), t + 0.1) == [DeadlineMoved()]
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
    assert pair.to_client(pair.server.accept(), 0.1) == [DeadlineMoved()]
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
    register_one_shot_watches(pair)
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
    assert pair.to_client(pair.server.accept(), 0.2) == [DeadlineMoved()]  # not connected before the verdicts
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
