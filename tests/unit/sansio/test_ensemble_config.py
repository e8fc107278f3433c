"""The configuration node's text (zkwire.sansio.ensemble): parsed, written back, turned into a host list;
malformed and hostile texts refused with EnsembleConfigError, never another exception."""

from __future__ import annotations

import random

import pytest

from zkwire.errors import EnsembleConfigError, InvalidArgumentError
from zkwire.sansio.ensemble import (
    EnsembleConfig,
    Member,
    Role,
    client_hosts,
    member_specs,
    parse_config,
    parse_member,
)
from zkwire.sansio.hosts import HostPort

# As a 3.8.0 ensemble of the project's launcher wrote it (protocol-notes/reconfig.md), one member changed
# to show an observer, an IPv6 quorum address with a second one, and a bare client port.
OBSERVED = (
    b"server.1=127.0.0.1:40001:40002:participant;127.0.0.1:2181\n"
    b"server.3=127.0.0.1:40005:40006:participant;127.0.0.1:2183\n"
    b"server.2=[::1]:40003:40004|10.0.0.2:40013:40014:observer;0.0.0.0:2182\n"
    b"version=100000008"
)


def test_the_observed_text() -> None:
    config = parse_config(OBSERVED)
    assert config.version == 0x100000008
    assert [m.id for m in config.members] == [1, 2, 3]  # by id, whatever the node's order
    two = config.member(2)
    quorum = (HostPort("::1", 40003), HostPort("10.0.0.2", 40013))
    assert two == Member(2, quorum, (40004, 40014), Role.OBSERVER, HostPort("0.0.0.0", 2182))
    assert [m.id for m in config.participants] == [1, 3] and config.observers == (two,)
    assert parse_config(config.text()) == config  # written back, read again: the same
    assert config.client_connect_string() == "100000008 127.0.0.1:2181,0.0.0.0:2182,127.0.0.1:2183"


def test_static_client_ports_and_standalone() -> None:
    config = parse_config(b"server.1=h1:1:2:participant\nserver.2=h2:1:2:participant\nversion=0")
    assert client_hosts(config) == []  # nothing to follow
    assert parse_config(b"") == EnsembleConfig(0)
    assert parse_config(b"group.1=1:2\nweight.1=1\nserver.1=h:1:2;h:3\nversion=1").extra == (
        ("group.1", "1:2"),
        ("weight.1", "1"),
    )


def test_the_host_list_rule() -> None:
    config = parse_config(OBSERVED)
    # A wildcard client host becomes the member's first quorum host.
    assert client_hosts(config) == [HostPort("127.0.0.1", 2181), HostPort("::1", 2182), HostPort("127.0.0.1", 2183)]
    # Addresses the connect string's names resolved to are written with those names.
    aliases = {HostPort("127.0.0.1", 2181): HostPort("zk1.example", 2181)}
    assert client_hosts(config, aliases)[0] == HostPort("zk1.example", 2181)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"\xff\xfe", "UTF-8"),
        (b"server.1=h:1:2;h:3", "no version"),
        (b"server.1=h:1:2;h:3\nserver.1=h:4:5;h:6\nversion=1", "twice"),
        (b"server.1=h:1:2;h:3\nversion=1\nversion=2", "twice"),
        (b"server.x=h:1:2\nversion=1", "server id"),
        (b"server.1=h:1\nversion=1", "host:port:port"),
        (b"server.1=h:1:2:leader\nversion=1", "role"),
        (b"server.1=h:1:99999\nversion=1", "port"),
        (b"server.1=h:1:2;h:x\nversion=1", "client address"),
        (b"server.1=[zz]:1:2\nversion=1", "IPv6"),
        (b"server.1=h\x01:1:2\nversion=1", "host"),
        (b"version=-1", "version"),
        (b"version=0x10", "version"),
        (b"version=zz", "hexadecimal"),
        (b"hello\nversion=1", "not a configuration line"),
        (b"secret=1\nversion=1", "unknown"),
    ],
)
def test_malformed_texts_are_refused(text: bytes, why: str) -> None:
    with pytest.raises(EnsembleConfigError, match=why):
        parse_config(text)


def test_too_many_members() -> None:
    text = "\n".join(f"server.{i}=h:1:2;h:3" for i in range(1001)) + "\nversion=1"
    with pytest.raises(EnsembleConfigError, match="more than"):
        parse_config(text.encode())


def test_fuzzed_texts_raise_only_the_typed_error() -> None:
    rng = random.Random(28)
    pieces = [b"server.", b"1", b"=", b":", b";", b"|", b"[", b"]", b"::1", b"h", b"\n", b"version=", b"a", b"0.0.0.0"]
    parsed = 0
    for _ in range(20_000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30)))
        if rng.random() < 0.1:
            text = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        try:
            config = parse_config(text)
        except EnsembleConfigError:
            continue
        parsed += 1
        assert parse_config(config.text()) == config
    assert parsed > 0


def test_members_for_a_reconfig() -> None:
    member = parse_member("server.4=127.0.0.1:1:2:observer;127.0.0.1:3")
    assert member_specs([member, "5=h:1:2;h:3"]) == "server.4=127.0.0.1:1:2:observer;127.0.0.1:3,server.5=h:1:2;h:3"
    with pytest.raises(InvalidArgumentError):
        member_specs(["server.6=h:1:2;h:3,server.7=h:1:2;h:3"])
    with pytest.raises(InvalidArgumentError):
        member_specs([b"server.6=h:1:2"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        member_specs(["nonsense"])


def test_members_that_would_be_misread_are_refused() -> None:
    good = parse_member("server.4=127.0.0.1:1:2;127.0.0.1:3")
    bad = [
        Member(1, (HostPort("a,server.9=evil", 1),), (2,)),  # a comma: the server would read two members
        Member(-5, (HostPort("h", 1),), (2,)),
        Member(True, (HostPort("h", 1),), (2,)),  # type: ignore[arg-type]
        Member(1, (HostPort("h", 1),), (2, 3)),  # one election port per quorum address
        Member(1, (HostPort("h", 1),), (2,), "observer"),  # type: ignore[arg-type]
        Member(1, (HostPort("h", 1),), (2,), Role.PARTICIPANT, ("b", 2181)),  # type: ignore[arg-type]
    ]
    for member in bad:
        with pytest.raises(InvalidArgumentError):
            member_specs([good, member])


def test_ipv6_hosts_have_one_spelling() -> None:
    config = parse_config(b"server.1=[FD00:0:0:0:0:0:0:1]:1:2;[fd00:0::1]:2181\nversion=1")
    member = config.member(1)
    assert member is not None and member.quorum[0].host == "fd00::1" and member.client == HostPort("fd00::1", 2181)
    from zkwire.sansio.hosts import parse_host_port

    assert parse_host_port("[FD00:0::1]:2181") == HostPort("fd00::1", 2181)


@pytest.mark.parametrize("version", ["1_0", "\u0661\u0660", "\uff11\uff10", "0X10"])  # Arabic-Indic, fullwidth
def test_a_version_is_ascii_hexadecimal(version: str) -> None:
    with pytest.raises(EnsembleConfigError):
        parse_config(f"server.1=h:1:2;h:3\nversion={version}")
