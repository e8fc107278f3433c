"""``host:port`` parsing: one function (zkwire.sansio.hosts.parse_host_port) behind the connect string,
the tracer's ``--listen``/``--server`` and the test harness's addresses."""

from __future__ import annotations

import pytest

from zkwire.errors import InvalidArgumentError
from zkwire.sansio.hosts import DEFAULT_PORT, parse_connect_string, parse_host_port
from zkwire.sansio.session import HostPort
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
