"""Hostile input to the sans-I/O core: framing, handshakes and replies a server should never send.

Each test states the documented outcome (see "Server values" in ``zkwire/session.py`` and
``protocol-notes/hostile-servers.md``): a clean :class:`DropConnection`, a clamped value, or the
correct result -- never another exception type.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import pytest
from fakeserver import STAT, ConnectionPair, FakeServer

from zkwire.constants import DEFAULT_MAX_FRAME, OpCode
from zkwire.errors import ConnectionLossError, ProtocolError
from zkwire.framing import FrameDecoder, frame
from zkwire.records import GetDataRequest, GetDataResponse
from zkwire.session import DropConnection, Event, HostPort, Reply, SessionCore, SessionState, StateChanged

T = TypeVar("T")
H1 = HostPort("zk1", 2181)


def make_core(
    timeout: float = 9.0, *, allow_read_only: bool = False, max_frame: int = DEFAULT_MAX_FRAME
) -> SessionCore:
    return SessionCore(
        [H1], session_timeout=timeout, allow_read_only=allow_read_only, max_frame=max_frame, rng=random.Random(7)
    )


def connected(timeout: float = 9.0) -> ConnectionPair:
    pair = ConnectionPair(make_core(timeout))
    assert pair.connect(0.0) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    return pair


def only(events: Sequence[object], cls: type[T]) -> list[T]:
    return [e for e in events if isinstance(e, cls)]


def get(pair: ConnectionPair, token: object, now: float = 1.0) -> None:
    pair.core.send_request(OpCode.GET_DATA, GetDataRequest("/a", False), token, now, path="/a")


# ------------------------------------------------------------------------------------------ framing


def test_frame_decoder_returns_complete_frames_before_a_bad_length() -> None:
    decoder = FrameDecoder(max_frame=100)
    good = frame(b"one") + frame(b"two")
    assert decoder.feed(good + FakeServer.bad_length((1 << 31) - 1)) == [b"one", b"two"]
    assert isinstance(decoder.error, ProtocolError)
    # The stream stays failed: nothing after the bad length is ever delivered.
    with pytest.raises(ProtocolError):
        decoder.feed(frame(b"three"))


def test_frame_decoder_bad_length_first_still_raises() -> None:
    decoder = FrameDecoder(max_frame=100)
    with pytest.raises(ProtocolError):
        decoder.feed(FakeServer.bad_length(-7))
    assert decoder.error is not None


def test_replies_in_the_chunk_of_a_bad_length_reach_their_callers() -> None:
    pair = connected()
    get(pair, "first")
    get(pair, "second")
    pair.to_server()
    data = pair.server.answer(GetDataResponse(b"1", STAT)) + pair.server.answer(GetDataResponse(b"2", STAT))
    events = pair.core.receive_data(data + FakeServer.bad_length((1 << 31) - 1), 1.1)
    assert [(r.token, r.body) for r in only(events, Reply)] == [
        ("first", GetDataResponse(b"1", STAT)),
        ("second", GetDataResponse(b"2", STAT)),
    ]
    assert isinstance(events[-1], DropConnection)
    assert len(only(events, DropConnection)) == 1


def test_bad_length_after_replies_fails_only_what_is_still_pending() -> None:
    pair = connected()
    get(pair, "answered")
    get(pair, "lost")
    pair.to_server()
    events: list[Event] = pair.core.receive_data(
        pair.server.answer(GetDataResponse(b"1", STAT)) + FakeServer.bad_length(-2), 1.1
    )
    assert [r.token for r in only(events, Reply)] == ["answered"]
    assert isinstance(events[-1], DropConnection)
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [("lost", ConnectionLossError)]
