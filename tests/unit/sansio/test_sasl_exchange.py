"""The SASL exchange in the session core (zkwire.sansio.sasl and the handshake's SASL step), against the
fake server: alone and first on every connection, tokens through SaslStep events, refusals and broken
exchanges ending the session, a server requiring SASL of a session without it."""

from __future__ import annotations

import random

import pytest
from helpers.fakeserver import ClientRequest, ConnectionPair
from helpers.sessioncore import H1, H2, SID, data_reply, drops, get_data, only, register_one_shot_watches

from zkwire.constants import AUTH_XID, OpCode
from zkwire.errors import AuthFailedError, ConnectionLossError, SessionClosedRequireSaslAuthError
from zkwire.protocol.records import GetSASLRequest, SetSASLResponse
from zkwire.sansio.session import (
    AuthResult,
    Event,
    Reply,
    SaslStep,
    SessionCore,
    SessionState,
    StateChanged,
)
from zkwire.sasl.mechanism import MAX_SASL_ROUNDS


class ScriptedExchange:
    """Sends ``first``, then answers the n-th challenge with ``answers[n]``; complete once ``complete_after``
    challenges were evaluated."""

    def __init__(self, mechanism: Scripted, host: str) -> None:
        self.mechanism = mechanism
        self.host = host
        self.challenges: list[bytes] = []

    def initial_response(self) -> bytes:
        return self.mechanism.first

    def evaluate(self, challenge: bytes) -> bytes | None:
        self.challenges.append(challenge)
        if self.mechanism.fail_on == len(self.challenges):
            raise AuthFailedError(detail="scripted failure")
        answers = self.mechanism.answers
        return answers[len(self.challenges) - 1] if len(self.challenges) <= len(answers) else None

    @property
    def complete(self) -> bool:
        return len(self.challenges) >= self.mechanism.complete_after


class Scripted:
    name = "SCRIPTED"
    blocking = False

    def __init__(
        self, first: bytes = b"hello", answers: tuple[bytes | None, ...] = (b"response",), complete_after: int = 2
    ) -> None:
        self.first = first
        self.answers = list(answers)
        self.complete_after = complete_after
        self.fail_on = 0
        self.exchanges: list[ScriptedExchange] = []

    def exchange(self, host: str) -> ScriptedExchange:
        ex = ScriptedExchange(self, host)
        self.exchanges.append(ex)
        return ex

    def identity(self) -> str:
        return "carol"


def sasl_core(mechanism: Scripted, hosts: tuple[object, ...] = (H1,)) -> SessionCore:
    return SessionCore(list(hosts), session_timeout=9.0, rng=random.Random(1), sasl=mechanism)  # type: ignore[arg-type]


def steps(events: list[Event]) -> list[SaslStep]:
    return only(events, SaslStep)


def run_step(pair: ConnectionPair, step: SaslStep, now: float) -> list[Event]:
    """What the I/O layer does with a SaslStep: compute, hand the result back."""
    try:
        result: bytes | AuthFailedError | ConnectionLossError | None = step.compute()
    except (AuthFailedError, ConnectionLossError) as e:
        result = e
    events = pair.core.sasl_step_done(step, result, now)
    pair.events += events
    return events


def sasl_request(pair: ConnectionPair) -> ClientRequest:
    [req] = pair.to_server()
    assert req.op == OpCode.SASL and isinstance(req.record, GetSASLRequest) and req.xid > 0
    return req


def exchange_through(pair: ConnectionPair, now: float = 0.1) -> list[Event]:
    """Connect and run the scripted exchange to its end: the server accepts every token."""
    [step] = steps(pair.connect(now))
    run_step(pair, step, now)
    while True:
        req = sasl_request(pair)
        events = pair.to_client(pair.server.reply(req, SetSASLResponse(b"challenge")), now)
        more = steps(events)
        if not more:
            return events
        run_step(pair, more[0], now)
        if not pair.core.has_data_to_send:
            return pair.events


def test_the_exchange_runs_first_and_alone_then_the_session_connects() -> None:
    mech = Scripted()
    pair = ConnectionPair(sasl_core(mech))
    events = pair.connect(0.0)
    [step] = steps(events)
    assert not only(events, StateChanged) and not pair.core.has_data_to_send  # nothing before the first token
    pair.core.add_auth("digest", b"u:p", "auth", 0.0)  # held: sent once the exchange is over
    assert not pair.core.has_data_to_send
    run_step(pair, step, 0.0)
    first = sasl_request(pair)
    assert first.record == GetSASLRequest(b"hello") and mech.exchanges[0].host == H1.host
    assert not pair.timer(4.0)  # no ping while the exchange runs (a server requiring SASL would refuse it)
    assert not pair.core.has_data_to_send
    [step] = steps(pair.to_client(pair.server.reply(first, SetSASLResponse(b"c1")), 4.1))
    run_step(pair, step, 4.1)
    second = sasl_request(pair)
    assert second.record == GetSASLRequest(b"response") and second.xid == first.xid + 1
    events = pair.to_client(pair.server.reply(second, SetSASLResponse(b"c2")), 4.2)
    [step] = steps(events)
    assert run_step(pair, step, 4.2) == []  # the mechanism has nothing more: over, but the credential is out
    [auth] = pair.to_server()
    assert auth.xid == AUTH_XID
    events = pair.to_client(pair.server.auth_reply(), 4.3)
    assert events == [AuthResult("auth", None), StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    assert mech.exchanges[0].challenges == [b"c1", b"c2"]


def test_a_server_answer_to_a_complete_mechanism_ends_the_exchange() -> None:
    mech = Scripted(answers=(b"last",), complete_after=1)
    pair = ConnectionPair(sasl_core(mech))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    [step] = steps(pair.to_client(pair.server.reply(sasl_request(pair), SetSASLResponse(b"c1")), 0.1))
    run_step(pair, step, 0.1)
    # GSSAPI-style: the mechanism completed with its last token; the server's (null) answer ends the exchange.
    events = pair.to_client(pair.server.reply(sasl_request(pair), SetSASLResponse(None)), 0.2)
    assert events == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]


def test_the_exchange_is_redone_on_every_connection_before_set_watches() -> None:
    mech = Scripted()
    pair = ConnectionPair(sasl_core(mech, (H1, H2)))
    exchange_through(pair)
    assert pair.core.state is SessionState.CONNECTED
    register_one_shot_watches(pair)
    pair.lose(1.0)
    pair.open(1.0, H2)
    [step] = steps(pair.to_client(pair.server.accept(session_id=SID), 1.0))
    assert not pair.core.has_data_to_send  # SetWatches waits for the exchange
    run_step(pair, step, 1.0)
    req = sasl_request(pair)
    [step] = steps(pair.to_client(pair.server.reply(req, SetSASLResponse(b"c1")), 1.1))
    run_step(pair, step, 1.1)
    [step] = steps(pair.to_client(pair.server.reply(sasl_request(pair), SetSASLResponse(b"c2")), 1.2))
    run_step(pair, step, 1.2)
    [set_watches] = pair.to_server()
    assert set_watches.op == OpCode.SET_WATCHES
    assert len(mech.exchanges) == 2 and mech.exchanges[1].host == H2.host
    events = pair.to_client(pair.server.reply(set_watches), 1.3)
    assert events == [StateChanged(SessionState.SUSPENDED, SessionState.CONNECTED)]


def test_a_step_of_a_connection_that_ended_is_ignored() -> None:
    mech = Scripted()
    pair = ConnectionPair(sasl_core(mech))
    [old] = steps(pair.connect(0.0))
    pair.lose(0.5)
    [new] = steps(pair.connect(1.0))
    assert run_step(pair, old, 1.0) == [] and not pair.core.has_data_to_send
    assert pair.core.sasl_step_done(old, AuthFailedError(detail="late"), 1.0) == []
    assert pair.core.state is SessionState.CONNECTING
    run_step(pair, new, 1.0)
    sasl_request(pair)


@pytest.mark.parametrize(("err", "name"), [(-115, "AUTHFAILED"), (-124, "SESSIONCLOSEDREQUIRESASLAUTH")])
def test_a_refusal_ends_the_session_with_the_server_code(err: int, name: str) -> None:
    pair = ConnectionPair(sasl_core(Scripted()))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    events = pair.to_client(pair.server.reply(sasl_request(pair), err=err), 0.1)
    assert drops(events) and pair.core.state is SessionState.AUTH_FAILED
    error = pair.core.terminal_error()
    assert isinstance(error, AuthFailedError)
    assert error.detail == f"the server refused SASL SCRIPTED authentication as 'carol' ({name}, {err})"


def test_a_mechanism_failure_ends_the_session_with_its_reason() -> None:
    mech = Scripted()
    mech.fail_on = 1
    pair = ConnectionPair(sasl_core(mech))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    [step] = steps(pair.to_client(pair.server.reply(sasl_request(pair), SetSASLResponse(b"garbage")), 0.1))
    events = run_step(pair, step, 0.1)
    assert drops(events) and pair.core.state is SessionState.AUTH_FAILED
    assert pair.core.terminal_error().detail == "scripted failure"  # type: ignore[attr-defined]


def test_a_mechanism_that_stops_before_completing_is_refused() -> None:
    pair = ConnectionPair(sasl_core(Scripted(answers=(None,), complete_after=5)))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    [step] = steps(pair.to_client(pair.server.reply(sasl_request(pair), SetSASLResponse(b"c")), 0.1))
    run_step(pair, step, 0.1)
    assert pair.core.state is SessionState.AUTH_FAILED
    assert "stopped before it completed" in str(pair.core.terminal_error())


def test_a_server_that_keeps_challenging_is_refused_after_the_round_limit() -> None:
    mech = Scripted(answers=(b"more",) * 100, complete_after=1000)
    pair = ConnectionPair(sasl_core(mech))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    rounds = 1
    while pair.core.state is not SessionState.AUTH_FAILED:
        req = sasl_request(pair)
        [step] = steps(pair.to_client(pair.server.reply(req, SetSASLResponse(b"again")), 0.1))
        run_step(pair, step, 0.1)
        rounds += 1
        assert rounds <= MAX_SASL_ROUNDS + 1
    assert rounds == MAX_SASL_ROUNDS + 1
    assert f"more than {MAX_SASL_ROUNDS} tokens" in str(pair.core.terminal_error())


def test_a_malformed_sasl_reply_drops_the_connection_not_the_session() -> None:
    pair = ConnectionPair(sasl_core(Scripted()))
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    req = sasl_request(pair)
    events = pair.to_client(pair.server.header(req.xid), 0.1)  # err 0 and no token at all
    assert drops(events) and pair.core.state is SessionState.CONNECTING


def test_an_oversized_sasl_reply_is_skipped_and_drops_the_connection() -> None:
    core = SessionCore([H1], session_timeout=9.0, max_frame=1024, sasl=Scripted())  # type: ignore[arg-type]
    pair = ConnectionPair(core)
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    req = sasl_request(pair)
    events = pair.to_client(pair.server.reply(req, SetSASLResponse(bytes(1 << 20))), 0.1)
    assert drops(events) and core.state is SessionState.CONNECTING


# ------------------------------------------------------------------ a server requiring SASL, a session without


def test_minus_124_to_a_request_ends_the_session_naming_the_option() -> None:
    pair = ConnectionPair(SessionCore([H1], session_timeout=9.0, rng=random.Random(1)))
    pair.connect(0.0)
    get_data(pair.core, "/a", "first", 0.1)
    get_data(pair.core, "/b", "second", 0.1)
    pair.to_server()
    events = pair.to_client(pair.server.answer(err=-124), 0.2)
    replies = only(events, Reply)
    assert [r.token for r in replies] == ["first", "second"]
    assert all(isinstance(r.error, SessionClosedRequireSaslAuthError) for r in replies)
    assert "sasl=" in str(replies[0].error)
    assert pair.core.state is SessionState.AUTH_FAILED and drops(events)
    assert isinstance(pair.core.terminal_error(), SessionClosedRequireSaslAuthError)


def test_minus_124_to_a_ping_ends_the_session_too() -> None:
    pair = ConnectionPair(SessionCore([H1], session_timeout=9.0, rng=random.Random(1)))
    pair.connect(0.0)
    pair.timer(4.0)
    [ping] = pair.to_server()
    assert ping.is_ping
    events = pair.to_client(pair.server.header(ping.xid, -124), 4.1)
    assert pair.core.state is SessionState.AUTH_FAILED and drops(events)


def test_replies_after_the_exchange_flow_as_usual() -> None:
    pair = ConnectionPair(sasl_core(Scripted()))
    exchange_through(pair)
    get_data(pair.core, "/a", "t", 1.0)
    pair.to_server()
    [reply] = pair.to_client(pair.server.answer(data_reply()), 1.1)
    assert isinstance(reply, Reply) and reply.error is None


def test_a_service_out_of_reach_drops_the_connection_and_keeps_the_session() -> None:
    mech = Scripted()
    pair = ConnectionPair(sasl_core(mech))
    [step] = steps(pair.connect(0.0))
    events = pair.core.sasl_step_done(step, ConnectionLossError(detail="Cannot contact any KDC"), 0.1)
    assert drops(events) and pair.core.state is SessionState.CONNECTING
    pair.lose(0.2)
    [step] = steps(pair.connect(1.0))  # the next connection runs a new exchange
    run_step(pair, step, 1.0)
    sasl_request(pair)


def test_a_token_over_max_frame_is_a_refusal_not_a_crash() -> None:
    core = SessionCore([H1], session_timeout=9.0, max_frame=1024, sasl=Scripted(first=bytes(2000)))  # type: ignore[arg-type]
    pair = ConnectionPair(core)
    [step] = steps(pair.connect(0.0))
    events = run_step(pair, step, 0.0)
    assert drops(events) and core.state is SessionState.AUTH_FAILED
    assert "a token of 2000 bytes does not fit max_frame (1024 bytes)" in str(core.terminal_error())
    assert not core.has_data_to_send


def test_a_mechanism_giving_text_instead_of_bytes_is_a_refusal() -> None:
    pair = ConnectionPair(sasl_core(Scripted(first="text")))  # type: ignore[arg-type]
    [step] = steps(pair.connect(0.0))
    run_step(pair, step, 0.0)
    assert pair.core.state is SessionState.AUTH_FAILED
    assert "gave a str, not bytes" in str(pair.core.terminal_error())
