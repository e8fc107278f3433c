"""Requests and replies (zkwire.sansio.matching, through SessionCore): requests in flight matched to their
replies in order, xids, errors with their path, every pending request failed when the connection goes,
the last zxid seen, and replies whose body cannot answer their request (multi, create)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from helpers.fakeserver import STAT, ConnectionPair
from helpers.sessioncore import connected, data_reply, get_data, only

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import AUTH_XID, EventType, OpCode
from zkwire.errors import ConnectionLossError, NoNodeError
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
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
from zkwire.sansio.session import DropConnection, Reply, SessionState, StateChanged

# ------------------------------------------------------------------------------------------- pipelining


def test_many_requests_in_flight_are_matched_in_order() -> None:
    pair = connected()
    core = pair.core
    tokens = [object() for _ in range(200)]
    xids = [get_data(core, f"/n{i}", tok, 1.0) for i, tok in enumerate(tokens)]
    assert xids == list(range(1, 201))
    assert core.outstanding == 200
    reqs = pair.to_server()
    assert [(r.xid, r.record) for r in reqs] == [(i + 1, GetDataRequest(f"/n{i}", False)) for i in range(200)]
    bodies = [data_reply(f"v{i}".encode()) for i in range(200)]
    events = only(pair.to_client(pair.server.answer_all(bodies), 2.0), Reply)
    assert len(events) == 200
    assert [e.token for e in events] == tokens
    assert [e.body for e in events] == bodies
    assert all(isinstance(e, Reply) and e.error is None for e in events)
    assert core.outstanding == 0


def test_error_reply_reaches_its_token_with_path() -> None:
    pair = connected()
    get_data(pair.core, "/missing", "t", 1.0)
    pair.to_server()
    [reply] = pair.to_client(pair.server.answer(err=-101), 1.1)
    assert isinstance(reply, Reply) and reply.token == "t" and reply.body is None
    assert isinstance(reply.error, NoNodeError) and reply.error.path == "/missing"


def test_reply_xid_mismatch_drops_the_connection() -> None:
    pair = connected()
    core = pair.core
    get_data(core, "/a", "a", 1.0)
    get_data(core, "/b", "b", 1.0)
    _, second = pair.to_server()
    events = pair.to_client(pair.server.reply(second, data_reply()), 1.1)
    [drop] = events
    assert isinstance(drop, DropConnection) and "xid" in drop.reason
    lost = pair.lose(1.2)
    assert [(r.token, type(r.error)) for r in only(lost, Reply)] == [
        ("a", ConnectionLossError),
        ("b", ConnectionLossError),
    ]


def test_reply_when_nothing_is_outstanding_drops() -> None:
    pair = connected()
    [drop] = pair.to_client(pair.server.reply(7, data_reply()), 1.0)
    assert isinstance(drop, DropConnection)


def test_xid_wraps_to_one() -> None:
    pair = connected()
    core = pair.core
    core._pending.xid = 2**31 - 2
    xids = [get_data(core, f"/w{i}", i, 1.0) for i in range(3)]
    assert xids == [2**31 - 1, 1, 2]
    assert [r.xid for r in pair.to_server()] == xids
    events = only(pair.to_client(pair.server.answer_all([data_reply()] * 3), 1.1), Reply)
    assert [e.token for e in events] == [0, 1, 2]


# ----------------------------------------------------------------------------------------- connection loss


def test_connection_lost_fails_each_pending_request_with_its_own_error() -> None:
    pair = connected()
    core = pair.core
    paths = ["/p/a", "/p/b", "/p/c"]
    for i, p in enumerate(paths):
        get_data(core, p, i, 1.0)
    pair.to_server()
    events = pair.lose(2.0)
    replies = only(events, Reply)
    assert [r.token for r in replies] == [0, 1, 2]
    errors = only([r.error for r in replies], ConnectionLossError)
    assert len(errors) == 3
    assert [e.path for e in errors] == paths
    assert len({id(e) for e in errors}) == 3
    # The state change comes first, so that a lock's lease is marked lost before any request fails.
    assert events[0] == StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)
    assert core.outstanding == 0
    with pytest.raises(ConnectionLossError):
        get_data(core, "/x", "t", 2.5)
    # Old bytes are not delivered to the next connection.
    assert core.data_to_send() == b""
    assert core.receive_data(pair.server.answer(data_reply()), 2.6) == []


def test_connection_lost_twice_is_harmless() -> None:
    pair = connected()
    assert len(pair.lose(1.0)) == 1
    assert pair.lose(1.1) == []


# --------------------------------------------------------------------------------------------------- zxid


def test_last_zxid_is_the_max_reply_zxid_ignoring_pings_events_and_auth() -> None:
    pair = connected()
    core = pair.core
    for zxid in (0x10, 0x30, 0x20):
        get_data(core, "/z", None, 1.0)
        pair.to_server()
        pair.to_client(pair.server.answer(data_reply(), zxid=zxid), 1.0)
    assert core.last_zxid == 0x30
    pair.to_client(pair.server.pong(zxid=0x99), 1.1)
    pair.to_client(pair.server.event(EventType.NODE_CREATED, "/q"), 1.1)
    core.add_auth("digest", b"x:y", None, 1.1)
    pair.to_server()
    pair.to_client(pair.server.header(AUTH_XID, zxid=0x999), 1.1)
    assert core.last_zxid == 0x30
    get_data(core, "/z", None, 1.2)
    pair.to_server()
    pair.to_client(pair.server.answer(err=-101, zxid=0x31), 1.2)
    assert core.last_zxid == 0x31


def test_write_replies_advance_last_zxid() -> None:
    pair = connected()
    core = pair.core
    before = pair.server.zxid
    core.send_request(OpCode.CREATE, CreateRequest("/n", b"", (), 0), "c", 1.0, path="/n")
    pair.to_server()
    [reply] = pair.to_client(pair.server.answer(CreateResponse("/n")), 1.1)
    assert isinstance(reply, Reply) and reply.body == CreateResponse("/n") and reply.zxid == before + 1
    assert core.last_zxid == before + 1


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
