"""User input that cannot be sent: every case is an InvalidArgumentError (or a more specific ZKError)
naming the argument, raised before anything reaches the server.  And no exception group, ever."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from helpers.hostileserver import HostileServer, honest, open_hostile_server

import zkwire
from zkwire import ACL, Id, WatcherType
from zkwire.acl import ANYONE_ID
from zkwire.client.fourletter import FourLetterWordError, four_letter_word
from zkwire.constants import OpCode
from zkwire.errors import InvalidArgumentError, ZKError

LIMIT = 10


@asynccontextmanager
async def client_and_server() -> AsyncIterator[tuple[zkwire.Client, HostileServer]]:
    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                yield zk, server


def _names(error: BaseException, *words: str) -> None:
    assert isinstance(error, InvalidArgumentError), repr(error)
    for word in words:
        assert word in str(error), (word, str(error))


# ------------------------------------------------------------------------------------------ open_client


BAD_OPTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "session_timeout -1": ({"session_timeout": -1}, "session_timeout"),
    "session_timeout 0": ({"session_timeout": 0}, "session_timeout"),
    "session_timeout '10'": ({"session_timeout": "10"}, "session_timeout"),
    "session_timeout nan": ({"session_timeout": math.nan}, "session_timeout"),
    "session_timeout inf": ({"session_timeout": math.inf}, "session_timeout"),
    "session_timeout 1e7": ({"session_timeout": 1e7}, "session_timeout"),
    "session_timeout True": ({"session_timeout": True}, "session_timeout"),
    "session_timeout 0.0001": ({"session_timeout": 0.0001}, "session_timeout"),
    "max_frame 0": ({"max_frame": 0}, "max_frame"),
    "max_frame -1": ({"max_frame": -1}, "max_frame"),
    "max_frame 10": ({"max_frame": 10}, "max_frame"),
    "max_frame 2**40": ({"max_frame": 1 << 40}, "max_frame"),
    "max_frame 4096.0": ({"max_frame": 4096.0}, "max_frame"),
    "ssl_context": ({"ssl_context": "yes"}, "ssl_context"),
    "auth as one str": ({"auth": "digest:u:p"}, "auth"),
    "auth entry of one item": ({"auth": [("digest",)]}, "auth"),
    "auth credential None": ({"auth": [("digest", None)]}, "credential"),
    "auth credential int": ({"auth": [("digest", 5)]}, "credential"),
    "auth scheme int": ({"auth": [(5, "u:p")]}, "scheme"),
    "auth scheme empty": ({"auth": [("", "u:p")]}, "scheme"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS), ids=list(BAD_OPTIONS))
async def test_bad_open_client_options_raise_before_connecting(case: str) -> None:
    kwargs, word = BAD_OPTIONS[case]
    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            with pytest.raises(InvalidArgumentError) as info:
                async with zkwire.open_client(server.hosts, **kwargs):
                    raise AssertionError("not reached")
        _names(info.value, word)
        assert server.connections == 0


@pytest.mark.parametrize("timeout", [0.001, 1, 2.5, 2147483.647])
def test_session_timeouts_in_range_are_accepted(timeout: float) -> None:
    client = zkwire.Client("127.0.0.1:1", session_timeout=timeout)
    assert client._core.requested_timeout == timeout


# ------------------------------------------------------------------------------------ requests with bad input


BAD_ACLS: dict[str, object] = {
    "perms as letters": [ACL("rw", ANYONE_ID)],  # type: ignore[arg-type]
    "perms as bool": [ACL(True, ANYONE_ID)],
    "perms out of range": [ACL(64, ANYONE_ID)],
    "id as a tuple": [ACL(31, ("world", "anyone"))],  # type: ignore[arg-type]
    "scheme as an int": [ACL(31, Id(5, "anyone"))],  # type: ignore[arg-type]
    "id as None": [ACL(31, Id("world", None))],
    "scheme not UTF-8": [ACL(31, Id("world\ud800", "anyone"))],
    "not an ACL": [(31, ANYONE_ID)],
    "empty": [],
    "a str": "world:anyone:cdrwa",
}


@pytest.mark.parametrize("case", list(BAD_ACLS), ids=list(BAD_ACLS))
async def test_bad_acl_is_refused_before_sending(case: str) -> None:
    acl: Any = BAD_ACLS[case]
    async with client_and_server() as (zk, server):
        for attempt in (
            lambda: zk.create("/a", acl=acl),
            lambda: zk.set_acl("/a", acl),
            lambda: zk.multi([zkwire.Create("/a", acl=acl)]),
        ):
            with pytest.raises(InvalidArgumentError) as info:
                await attempt()
            _names(info.value, "acl")
        assert server.received(OpCode.CREATE) == server.received(OpCode.SET_ACL) == server.received(OpCode.MULTI) == []


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"joining": 123}, "joining"),
        ({"leaving": b"server.1"}, "leaving"),
        ({"members": ["a"]}, "members"),
        ({"joining": "server.4=h:1:2\ud800"}, "joining"),
        ({"from_config": "7"}, "from_config"),
        ({"from_config": True}, "from_config"),
        ({"from_config": 1 << 63}, "from_config"),
    ],
)
async def test_bad_reconfig_arguments(kwargs: dict[str, Any], word: str) -> None:
    async with client_and_server() as (zk, server):
        with pytest.raises(InvalidArgumentError) as info:
            await zk.reconfig(**kwargs)
        _names(info.value, word)
        assert server.received(OpCode.RECONFIG) == []


@pytest.mark.parametrize(
    ("scheme", "credential", "word"),
    [
        ("digest", None, "credential"),
        ("digest", 5, "credential"),
        ("digest", ["u", "p"], "credential"),
        ("digest", "u:\udc00", "credential"),
        (None, "u:p", "scheme"),
        ("", "u:p", "scheme"),
        ("dig\ud800est", "u:p", "scheme"),
    ],
)
async def test_bad_add_auth_arguments(scheme: Any, credential: Any, word: str) -> None:
    async with client_and_server() as (zk, server):
        with pytest.raises(InvalidArgumentError) as info:
            await zk.add_auth(scheme, credential)
        _names(info.value, word)
        assert "u:p" not in str(info.value)  # never show the credential
        assert server.received(OpCode.AUTH) == []
        await zk.get_data("/")  # the session is unharmed


@pytest.mark.parametrize("watcher_type", [99, 0, 4, -1, True, "1", 2.0, None])
async def test_bad_watcher_type(watcher_type: Any) -> None:
    async with client_and_server() as (zk, server):
        for method in (zk.check_watches, zk.remove_watches):
            with pytest.raises(InvalidArgumentError) as info:
                await method("/a", watcher_type)
            _names(info.value, "watcher_type")
        assert server.received(OpCode.CHECK_WATCHES) == server.received(OpCode.REMOVE_WATCHES) == []


async def test_watcher_types_accepted() -> None:
    async with client_and_server() as (zk, server):
        for wt in (WatcherType.DATA, 1, 3):
            await zk.check_watches("/a", wt)
        assert [r.record.type for r in server.received(OpCode.CHECK_WATCHES)] == [2, 1, 3]  # type: ignore[union-attr]


@pytest.mark.parametrize("max_buffered", [-1, 0, 1.5, True, "10"])
async def test_bad_max_buffered(max_buffered: Any) -> None:
    async with client_and_server() as (zk, server):
        with pytest.raises(InvalidArgumentError) as info:
            async with zk.add_watch("/a", max_buffered=max_buffered):
                raise AssertionError("not reached")
        _names(info.value, "max_buffered")
        assert server.received(OpCode.ADD_WATCH) == []


async def test_watch_on_a_path_too_long_to_re_register() -> None:
    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            async with zkwire.open_client(server.hosts, session_timeout=5, max_frame=1024, follow_ensemble=False) as zk:
                long_path = "/" + "x" * 990
                await zk.get_data(long_path)  # fits a request
                with pytest.raises(zkwire.DataTooLargeError):
                    await zk.get_data(long_path, watch=True)
                assert len(server.received(OpCode.GET_DATA)) == 1


# ------------------------------------------------------------------------------- every error is a ZKError


async def test_four_letter_word_errors_are_zkerrors() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        await four_letter_word("127.0.0.1", 1, "RUOK")
    assert isinstance(info.value, ValueError)  # as before
    with pytest.raises(FourLetterWordError) as refused:
        await four_letter_word("127.0.0.1", 1, "ruok")
    assert isinstance(refused.value, ZKError)


def test_stream_decoder_and_tracer_argument_errors_are_zkerrors() -> None:
    from zkwire.trace.decoder import ConversationDecoder, decode_stream
    from zkwire.trace.schema import record_to_plain
    from zkwire.trace.tracer import _parse_hostport

    with pytest.raises(InvalidArgumentError):
        ConversationDecoder().feed("sideways", b"")
    with pytest.raises(InvalidArgumentError):
        ConversationDecoder().eof("sideways")
    with pytest.raises(InvalidArgumentError):
        decode_stream(b"", side="middle")
    with pytest.raises(InvalidArgumentError):
        _parse_hostport("host:port")
    with pytest.raises(InvalidArgumentError) as info:
        record_to_plain(object())
    assert isinstance(info.value, TypeError)  # as before


def test_embedded_errors_are_zkerrors() -> None:
    from zkwire.testing.embedded import EmbeddedZooKeeperError

    assert issubclass(EmbeddedZooKeeperError, ZKError)
    assert issubclass(EmbeddedZooKeeperError, RuntimeError)


# ---------------------------------------------------------------------------------- no exception groups


async def test_open_client_never_raises_an_exception_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """A background task fails (a stand-in for any bug) while the body is cancelled and its clean-up
    raises: the caller gets one exception, not a group."""
    from zkwire.sansio.session import SessionCore

    real = SessionCore.receive_data
    armed = False

    def failing(self: SessionCore, data: bytes, now: float) -> list[Any]:
        if armed:
            raise RuntimeError("simulated bug in the reader")
        return real(self, data, now)

    monkeypatch.setattr(SessionCore, "receive_data", failing)
    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            with pytest.raises(BaseException) as info:
                async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                    try:
                        armed = True
                        await zk.get_data("/")
                    finally:
                        with trio.CancelScope(shield=True):
                            await zk.get_data("/")
    assert not isinstance(info.value, BaseExceptionGroup), repr(info.value)
    assert isinstance(info.value, RuntimeError | ZKError), repr(info.value)


async def test_exception_group_raised_by_the_body_itself_is_left_alone() -> None:
    async def fail(exc: Exception) -> None:
        raise exc

    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            with pytest.raises(ExceptionGroup) as info:
                async with zkwire.open_client(server.hosts, session_timeout=5):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(fail, KeyError("a"))
                        nursery.start_soon(fail, ValueError("b"))
    assert sorted(type(e).__name__ for e in info.value.exceptions) == ["KeyError", "ValueError"]


async def test_body_error_is_raised_as_is() -> None:
    async with open_hostile_server(honest) as server:
        with trio.fail_after(LIMIT):
            with pytest.raises(KeyError):
                async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                    try:
                        raise KeyError("body")
                    finally:
                        await zk.get_data("/")
