"""The hosts (zkwire.sansio.hosts): ``host:port`` parsing, one function (zkwire.sansio.hosts.parse_host_port)
behind the connect string, the tracer's ``--listen``/``--server`` and the test harness's addresses; the
connect strings refused and accepted; and the core's rotation over the hosts, with the waits between
attempts (the back-off itself is test_backoff.py)."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from helpers.fakeserver import ConnectionPair
from helpers.sessioncore import H1, H2, H3, make_core

from zkwire.errors import AuthFailedError, ClientCertificateRejectedError, InvalidArgumentError, ServerCertificateError
from zkwire.sansio.hosts import DEFAULT_PORT, parse_connect_string, parse_host_port
from zkwire.sansio.session import Event, HostPort, SessionCore, SessionState, StateChanged
from zkwire.testing.base import split_address
from zkwire.trace.tracer import _parse_hostport


def test_one_item() -> None:
    assert parse_host_port("zk1:2182") == HostPort("zk1", 2182)
    assert parse_host_port(" zk1 ") == HostPort("zk1", DEFAULT_PORT)
    assert parse_host_port("[::1]:2183") == HostPort("::1", 2183)
    assert parse_host_port("[fe80::1]") == HostPort("fe80::1", DEFAULT_PORT)


def test_defaults() -> None:
    with pytest.raises(InvalidArgumentError, match="not HOST:PORT"):
        parse_host_port("zk1", default_port=None)
    assert parse_host_port("2190", default_host="127.0.0.1") == HostPort("127.0.0.1", 2190)
    assert parse_host_port(":2190", default_host="::1") == HostPort("::1", 2190)
    with pytest.raises(InvalidArgumentError, match="empty host"):
        parse_host_port(":2190")
    with pytest.raises(InvalidArgumentError, match="out of range"):
        parse_host_port("zk1:0")
    assert parse_host_port("zk1:0", allow_port_zero=True) == HostPort("zk1", 0)


@pytest.mark.parametrize(
    "bad", ["zk1:", "zk1:port", "zk1:+1", "zk1:65536", "::1:2181", "[::1", "[::1]x", "[zk1]:1", "z k:1", ""]
)
def test_bad_items_are_refused_alike(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_host_port(bad)
    if bad:
        with pytest.raises(InvalidArgumentError):
            parse_connect_string(bad)


def test_the_connect_string_reads_each_item_with_it() -> None:
    hosts, chroot = parse_connect_string(" a:1 , [::1] ,b/app")
    assert hosts == [parse_host_port("a:1"), parse_host_port("[::1]"), parse_host_port("b")]
    assert chroot == "/app"


def test_the_tracer_and_the_harness_use_it() -> None:
    assert _parse_hostport("2181") == ("127.0.0.1", 2181)
    assert _parse_hostport(":0") == ("127.0.0.1", 0)  # listen on any free port
    assert _parse_hostport("[::1]:2181") == ("::1", 2181)
    for bad in ("host:port", "::1:2181", "zk1"):
        with pytest.raises(InvalidArgumentError):
            _parse_hostport(bad)
    assert split_address("127.0.0.1:2185,other:1/chroot") == ("127.0.0.1", 2185)
    assert split_address("[::1]:2186") == ("::1", 2186)
    assert split_address(("h", 1)) == ("h", 1)
    with pytest.raises(ValueError):
        split_address("h:x")


# ------------------------------------------------------------------------------------------- connect strings

BAD_HOSTS = [
    "h:+2181",
    "h:2_181",
    "h: 2181",
    "h:\uff12\uff11\uff18\uff11",  # fullwidth digits
    "h:\u0662\u0661\u0668\u0661",  # Arabic-Indic digits
    "h:",
    "[::1]:",
    "h:0",
    "h:65536",
    "h:-1",
    "a..b:2181",
    "h\x00:2181",
    "h h:2181",
    "[not-an-address]:2181",
]


@pytest.mark.parametrize("text", BAD_HOSTS)
def test_lenient_connect_strings_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_connect_string(text)


def test_connect_strings_still_accepted() -> None:
    assert parse_connect_string("h") == ([HostPort("h", 2181)], "")
    assert parse_connect_string("h:2181") == ([HostPort("h", 2181)], "")
    assert parse_connect_string(" h1:1, h2:02 /app") == ([HostPort("h1", 1), HostPort("h2", 2)], "/app")
    assert parse_connect_string("[::1]:2182,[fe80::1%eth0]") == (
        [HostPort("::1", 2182), HostPort("fe80::1%eth0", 2181)],
        "",
    )
    assert parse_connect_string("zk-1.example.com:65535") == ([HostPort("zk-1.example.com", 65535)], "")


def test_connect_string_of_another_type() -> None:
    with pytest.raises(InvalidArgumentError, match="str"):
        parse_connect_string(2181)  # type: ignore[arg-type]


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


# ---------------------------------------------------------------------------------------------------------
# a pass over the hosts that failed for a reason no retry cures (a certificate refused) ends the session


def _refused(host: HostPort) -> ClientCertificateRejectedError:
    return ClientCertificateRejectedError(detail=f"{host}: the server answered bad certificate", host=str(host))


def _untrusted(host: HostPort) -> ServerCertificateError:
    return ServerCertificateError(detail=f"{host}: self-signed certificate", host=str(host))


def _state_changes(events: list[Event]) -> list[tuple[SessionState, SessionState]]:
    return [(e.old, e.new) for e in events if isinstance(e, StateChanged)]


def test_hosts_that_are_merely_down_are_retried_for_ever() -> None:
    core = make_core(hosts=(H1, H2, H3))
    for _ in range(3 * 20):
        core.next_host()
        assert core.connection_failed() == []
    assert core.state is SessionState.CONNECTING


def test_one_host_that_refuses_the_certificate_ends_the_session_at_once() -> None:
    core = make_core(hosts=(H1,))
    error = _refused(H1)
    core.next_host()
    events = core.connection_failed(error)
    assert _state_changes(events) == [(SessionState.CONNECTING, SessionState.AUTH_FAILED)]
    assert core.state is SessionState.AUTH_FAILED
    raised = core.terminal_error()
    assert type(raised) is ClientCertificateRejectedError and raised is not error
    assert str(raised) == str(error) and raised.host == "zk1:2181"
    assert isinstance(raised, AuthFailedError)  # what callers of an ended session already catch


@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_pass_of_down_hosts_and_one_certificate_failure_ends_after_the_pass(position: int) -> None:
    core = make_core(hosts=(H1, H2, H3))
    for i in range(3):
        host = core.next_host()
        events = core.connection_failed(_untrusted(host) if i == position else None)
        if i < 2:  # the pass is not over: the other hosts are tried first
            assert events == [] and core.state is SessionState.CONNECTING
    assert core.state is SessionState.AUTH_FAILED
    assert _state_changes(events) == [(SessionState.CONNECTING, SessionState.AUTH_FAILED)]
    assert isinstance(core.terminal_error(), ServerCertificateError)


def test_the_newest_reason_is_the_one_raised() -> None:
    core = make_core(hosts=(H1, H2))
    first = core.next_host()
    assert core.connection_failed(_untrusted(first)) == []
    second = core.next_host()
    core.connection_failed(_refused(second))
    error = core.terminal_error()
    assert isinstance(error, ClientCertificateRejectedError) and error.host == str(second)


def test_a_session_reached_meanwhile_starts_a_new_pass() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2)))
    core = pair.core
    host = core.next_host()
    assert core.connection_failed(_refused(host)) == []
    pair.connect(1.0)  # the other host answered the handshake
    pair.lose(2.0)
    host = core.next_host()
    assert core.connection_failed(_refused(host)) == []  # a new pass: one host only so far
    assert core.state is SessionState.SUSPENDED
    host = core.next_host()
    # Down: the pass is over with a certificate failure, but the session was established and a server
    # may come back: it keeps trying (until it expires) ...
    assert core.connection_failed(None) == [] and core.state is SessionState.SUSPENDED
    # ... unless every server refuses.
    events = []
    for _ in range(2):  # both hosts again, refusing now
        events += core.connection_failed(_refused(core.next_host()))
    assert _state_changes(events) == [(SessionState.SUSPENDED, SessionState.AUTH_FAILED)]
    assert isinstance(core.terminal_error(), ClientCertificateRejectedError)


def test_only_the_newest_outcome_of_each_host_counts() -> None:
    # A host that refused the certificate once and is down now (restarting) no longer counts as refusing;
    # and trying one host twice is not a pass.
    core = make_core(hosts=(H1, H2))
    a = core.next_host()
    b = next(h for h in (H1, H2) if h != a)
    assert core.connection_failed(_refused(a)) == []
    core.prefer_host(a)
    assert core.next_host() == a
    assert core.connection_failed(None) == []  # a is down now: its newest outcome has no reason
    assert core.next_host() == b
    assert core.connection_failed(None) == []  # a whole pass, and no newest outcome has a reason
    assert core.state is SessionState.CONNECTING
    assert core.next_host() == a
    assert core.connection_failed(_refused(a)) != []  # a refuses again: the pass (a, b) has a reason
    assert core.state is SessionState.AUTH_FAILED


def test_a_refusal_after_the_tls_handshake_counts_like_a_failed_attempt() -> None:
    # TLS 1.3: the handshake completes on the client's side, the ConnectRequest goes out, and the first
    # read gets the server's alert about the client's certificate.
    pair = ConnectionPair(make_core(hosts=(H1, H2)))
    core = pair.core
    pair.open(0.0)
    events = core.connection_lost(0.1, reason=_refused(H1))
    assert events == [] or _state_changes(events) == []
    pair.open(0.2)
    events = core.connection_lost(0.3, reason=_refused(H2))
    assert _state_changes(events) == [(SessionState.CONNECTING, SessionState.AUTH_FAILED)]
    assert isinstance(core.terminal_error(), ClientCertificateRejectedError)
    with pytest.raises(ClientCertificateRejectedError):
        core.connection_made(H1, 0.4)


def test_a_reason_on_an_open_connection_ends_nothing() -> None:
    # Once the handshake is answered the attempt succeeded: a later failure is a lost connection.
    pair = ConnectionPair(make_core(hosts=(H1,)))
    pair.connect(0.0)
    events = pair.core.connection_lost(1.0, reason=_refused(H1))
    assert _state_changes(events) == [(SessionState.CONNECTED, SessionState.SUSPENDED)]


def test_an_established_session_keeps_trying_while_another_host_is_merely_down() -> None:
    # A rolling restart under a certificate rotation: one member refuses, the other is down.  The
    # session (and its ephemeral nodes) lives on until it expires; a new session would have ended.
    pair = ConnectionPair(make_core(hosts=(H1, H2)))
    core = pair.core
    pair.connect(0.0)
    pair.lose(1.0)
    for _ in range(3):  # three passes
        for _ in range(2):
            host = core.next_host()
            core.connection_failed(_untrusted(host) if host == H1 else None)
        assert core.state is not SessionState.AUTH_FAILED


def test_an_established_session_ends_when_every_host_refuses() -> None:
    pair = ConnectionPair(make_core(hosts=(H1, H2)))
    core = pair.core
    pair.connect(0.0)
    pair.lose(1.0)
    for _ in range(2):
        core.connection_failed(_untrusted(core.next_host()))
    assert core.state is SessionState.AUTH_FAILED
    assert isinstance(core.terminal_error(), ServerCertificateError)
