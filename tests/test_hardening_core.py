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

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import DEFAULT_MAX_FRAME, OpCode
from zkwire.errors import ConnectionLossError, ProtocolError
from zkwire.framing import FrameDecoder, frame
from zkwire.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.records import (
    Create2Response,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    ErrorResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    SetDataResponse,
)
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


# ------------------------------------------------------------------------------ replies that cannot be


def _multi(pair: ConnectionPair, token: object, ops: Sequence[MultiOp], code: int = OpCode.MULTI) -> None:
    pair.core.send_request(code, MultiRequest(tuple(ops)), token, 1.0)
    pair.to_server()


TWO_WRITES = (
    MultiOp(OpCode.CREATE, CreateRequest("/m/a", b"", OPEN_ACL_UNSAFE, 0)),
    MultiOp(OpCode.DELETE, DeleteRequest("/m/b", -1)),
)
TWO_READS = (
    MultiOp(OpCode.GET_DATA, GetDataRequest("/r", False)),
    MultiOp(OpCode.GET_CHILDREN, GetChildrenRequest("/r", False)),
)

BAD_MULTI_REPLIES: dict[str, tuple[int, tuple[MultiOp, ...], tuple[MultiResult, ...]]] = {
    "multi, one result short": (OpCode.MULTI, TWO_WRITES, (MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),)),
    "multi, one result too many": (
        OpCode.MULTI,
        TWO_WRITES,
        (
            MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),
            MultiResult(OpCode.DELETE, 0, None),
            MultiResult(OpCode.DELETE, 0, None),
        ),
    ),
    "multi, no results": (OpCode.MULTI, TWO_WRITES, ()),
    "multi, result of another op": (
        OpCode.MULTI,
        TWO_WRITES,
        (MultiResult(OpCode.SET_DATA, 0, SetDataResponse(STAT)), MultiResult(OpCode.DELETE, 0, None)),
    ),
    "multi, null created path": (
        OpCode.MULTI,
        TWO_WRITES,
        (MultiResult(OpCode.CREATE, 0, CreateResponse(None)), MultiResult(OpCode.DELETE, 0, None)),
    ),
    "multiRead, one result short": (
        OpCode.MULTI_READ,
        TWO_READS,
        (MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),),
    ),
    "multiRead, results swapped": (
        OpCode.MULTI_READ,
        TWO_READS,
        (
            MultiResult(OpCode.GET_CHILDREN, 0, GetChildrenResponse(["c"])),
            MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),
        ),
    ),
    "multiRead, a write result": (
        OpCode.MULTI_READ,
        TWO_READS,
        (MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)), MultiResult(OpCode.DELETE, 0, None)),
    ),
}


@pytest.mark.parametrize("case", list(BAD_MULTI_REPLIES), ids=list(BAD_MULTI_REPLIES))
def test_multi_reply_that_does_not_match_the_request_drops(case: str) -> None:
    code, ops, results = BAD_MULTI_REPLIES[case]
    pair = connected()
    _multi(pair, "multi", ops, code)
    events = pair.to_client(pair.server.answer(MultiResponse(results)), 1.1)
    assert [type(e) for e in events] == [DropConnection]
    # Like any malformed reply: the request fails with the connection (for a write: outcome unknown).
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [("multi", ConnectionLossError)]


def test_multi_replies_that_match_are_delivered() -> None:
    pair = connected()
    ok = (MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")), MultiResult(OpCode.DELETE, 0, None))
    failed = (MultiResult(OpCode.ERROR, 0, ErrorResponse(0)), MultiResult(OpCode.ERROR, -101, ErrorResponse(-101)))
    # 3.8.0 answers create2 in a multi with a plain create result, containers and TTL nodes with create2.
    variants = (
        MultiResult(OpCode.CREATE, 0, CreateResponse("/m/a")),
        MultiResult(OpCode.CREATE2, 0, Create2Response("/m/b", STAT)),
    )
    creates = (
        MultiOp(OpCode.CREATE2, CreateRequest("/m/a", b"", OPEN_ACL_UNSAFE, 0)),
        MultiOp(OpCode.CREATE_CONTAINER, CreateRequest("/m/b", b"", OPEN_ACL_UNSAFE, 4)),
    )
    reads = (
        MultiResult(OpCode.GET_DATA, 0, GetDataResponse(b"x", STAT)),
        MultiResult(OpCode.ERROR, -101, ErrorResponse(-101)),
    )
    for code, ops, results in (
        (OpCode.MULTI, TWO_WRITES, ok),
        (OpCode.MULTI, TWO_WRITES, failed),
        (OpCode.MULTI, creates, variants),
        (OpCode.MULTI_READ, TWO_READS, reads),
    ):
        _multi(pair, "m", ops, code)
        [reply] = pair.to_client(pair.server.answer(MultiResponse(results)), 1.1)
        assert isinstance(reply, Reply) and reply.body == MultiResponse(results) and reply.error is None
    _multi(pair, "empty", ())
    [reply] = pair.to_client(pair.server.answer(MultiResponse(())), 1.2)
    assert isinstance(reply, Reply) and reply.body == MultiResponse(())


@pytest.mark.parametrize("op", [OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER])
def test_null_created_path_drops(op: int) -> None:
    pair = connected()
    pair.core.send_request(
        op, CreateRequest("/n", b"", OPEN_ACL_UNSAFE, 4 if op == OpCode.CREATE_CONTAINER else 0), "c", 1.0, path="/n"
    )
    pair.to_server()
    body = CreateResponse(None) if op == OpCode.CREATE else Create2Response(None, STAT)
    assert [type(e) for e in pair.to_client(pair.server.answer(body), 1.1)] == [DropConnection]
    assert [(r.token, type(r.error)) for r in only(pair.lose(1.2), Reply)] == [("c", ConnectionLossError)]
