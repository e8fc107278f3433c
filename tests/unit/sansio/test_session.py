"""SessionCore's own: the options it checks, closing (closeSession, answers to what still waits, no timers
after), and logs and reprs that never show a password or a credential."""

from __future__ import annotations

import logging
import math

import pytest
from helpers.fakeserver import DEFAULT_PASSWD, ClientRequest, ConnectionPair
from helpers.sessioncore import H1, H2, SID, Watcher, connected, data_reply, get_data, make_core, only, watch_via

from zkwire.constants import OpCode
from zkwire.errors import AuthFailedError, ClientClosedError, ConnectionLossError, InvalidArgumentError
from zkwire.sansio.session import AuthResult, DropConnection, HostPort, Reply, SessionState, StateChanged

# ------------------------------------------------------------------------------------------------ options


def test_session_core_checks_its_options_too() -> None:
    from zkwire.sansio.session import SessionCore

    for kwargs in ({"session_timeout": -1}, {"session_timeout": math.nan}, {"max_frame": 0}):
        with pytest.raises(InvalidArgumentError):
            SessionCore([HostPort("h", 1)], **kwargs)
    with pytest.raises(InvalidArgumentError):
        SessionCore([])
    # Backwards compatible: the old checks raised ValueError.
    with pytest.raises(ValueError):
        SessionCore([HostPort("h", 1)], session_timeout=0)


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
