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

from zkwire.errors import InvalidArgumentError
from zkwire.sansio.hosts import DEFAULT_PORT, parse_connect_string, parse_host_port
from zkwire.sansio.session import HostPort, SessionCore
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
