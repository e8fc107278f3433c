"""Property tests: the session core fed hostile bytes after (and during) a valid handshake.

Invariants, whatever the server sends:

* ``receive_data`` never raises: bad input ends in a clean :class:`DropConnection`;
* every request gets exactly one outcome -- a reply whose body has the type its op expects (or a
  ServerError), or ConnectionLossError when the connection goes -- in the order the requests were sent;
* a handshake answer is either refused (DropConnection) or yields a session with the checked values;
* afterwards the session is still usable: the next valid exchange gives the correct result.

The normal suite runs a bounded slice (a few seconds).  ``ZKWIRE_PROPERTY_EXAMPLES=5000`` runs more.
"""

from __future__ import annotations

import os
import random
import struct

from helpers.fakeserver import STAT, ConnectionPair, FakeServer, frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import AUTH_XID, PING_XID, WATCH_XID, OpCode
from zkwire.errors import ConnectionLossError, ReplyTooLargeError, ServerError
from zkwire.protocol.codec import RESPONSE_RECORDS
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    ConnectResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    ExistsRequest,
    ExistsResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Record,
    WatcherEvent,
)
from zkwire.sansio.session import (
    MAX_PASSWORD,
    AuthResult,
    DropConnection,
    HostPort,
    Reply,
    SessionCore,
    SessionState,
    StateChanged,
    WatchNotification,
)

EXAMPLES = int(os.environ.get("ZKWIRE_PROPERTY_EXAMPLES", "300"))
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
SID = 0x1_0000_0001
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)

#: The requests every example sends, and what an honest server answers each with.
REQUESTS: list[tuple[int, Record, Record | None]] = [
    (OpCode.GET_DATA, GetDataRequest("/a", False), GetDataResponse(b"data", STAT)),
    (OpCode.EXISTS, ExistsRequest("/b", False), ExistsResponse(STAT)),
    (OpCode.CREATE, CreateRequest("/c", b"", OPEN_ACL_UNSAFE, 0), CreateResponse("/c")),
    (
        OpCode.MULTI,
        MultiRequest(
            (
                MultiOp(OpCode.CREATE, CreateRequest("/m", b"", OPEN_ACL_UNSAFE, 0)),
                MultiOp(OpCode.DELETE, DeleteRequest("/n", -1)),
            )
        ),
        MultiResponse((MultiResult(OpCode.CREATE, 0, CreateResponse("/m")), MultiResult(OpCode.DELETE, 0, None))),
    ),
    (OpCode.GET_CHILDREN, GetChildrenRequest("/d", False), GetChildrenResponse(("x", "y"))),
    (OpCode.DELETE, DeleteRequest("/e", -1), None),
]
SOME_BODIES = [body for _, _, body in REQUESTS if body is not None]


def _body_bytes(body: Record | None) -> bytes:
    out = bytearray()
    if body is not None:
        body.write(out)
    return bytes(out)


def _header(xid: int, zxid: int, err: int) -> bytes:
    return struct.pack(">iqi", xid, zxid, err)


# -------------------------------------------------------------------------------------------- strategies

#: One piece of what the server sends: a tag and its parameters; bytes are made when the example runs.
honest_reply = st.just(("honest",))
known_xids = st.sampled_from([1, 2, 3, 4, 5, 6, 7, 0, 99, PING_XID, WATCH_XID, AUTH_XID, -3, -(1 << 31), (1 << 31) - 1])
errs = st.sampled_from([0, 0, 0, -101, -110, -4, -112, -115, -118, -127, -999]) | INT32
zxids = st.sampled_from([0, 1, 0x100, -1, (1 << 63) - 1]) | INT64
header_frame = st.tuples(
    st.just("header"),
    known_xids | INT32,
    zxids,
    errs,
    st.sampled_from(range(len(SOME_BODIES))) | st.binary(max_size=48) | st.none(),
)
raw_bytes = st.tuples(st.just("raw"), st.binary(min_size=1, max_size=64))
raw_frame = st.tuples(st.just("frame"), st.binary(max_size=96))
bad_length = st.tuples(st.just("length"), st.sampled_from([-1, -2, -(1 << 31), (1 << 31) - 1, (1 << 20), 1 << 24]))
mutated = st.tuples(st.just("mutate"), st.integers(0, 200), st.integers(0, 255))
truncated = st.tuples(st.just("truncate"), st.integers(1, 60))
notification = st.tuples(
    st.just("event"), INT32, INT32, st.sampled_from(["/a", "/", "", None, "relative", "/b/c"]) | st.text(max_size=8)
)
piece = st.one_of(honest_reply, header_frame, raw_bytes, raw_frame, bad_length, mutated, truncated, notification)


class Stream:
    """Turns pieces into bytes; "honest" answers the oldest request not yet answered honestly."""

    def __init__(self, pair: ConnectionPair, xids: list[int]) -> None:
        self.pair = pair
        self.xids = xids
        self.next_honest = 0

    def honest(self) -> bytes:
        i = min(self.next_honest, len(REQUESTS) - 1)
        self.next_honest += 1
        _, _, body = REQUESTS[i]
        return self.pair.server.header(self.xids[i], 0, zxid=0x200 + i, body=body)

    def bytes_of(self, p: tuple[object, ...]) -> bytes:
        kind = p[0]
        if kind == "honest":
            return self.honest()
        if kind == "header":
            _, xid, zxid, err, body = p
            if isinstance(body, int):
                payload = _body_bytes(SOME_BODIES[body])
            elif isinstance(body, bytes):
                payload = body
            else:
                payload = b""
            return frame(_header(int(xid), int(zxid), int(err)) + payload)  # type: ignore[call-overload]
        if kind == "raw":
            return p[1]  # type: ignore[return-value]
        if kind == "frame":
            return frame(p[1])  # type: ignore[arg-type]
        if kind == "length":
            return FakeServer.bad_length(p[1])  # type: ignore[arg-type]
        if kind == "mutate":
            data = bytearray(self.honest())
            pos, value = p[1], p[2]
            data[int(pos) % len(data)] = int(value)  # type: ignore[call-overload]
            return bytes(data)
        if kind == "truncate":
            data = self.honest()
            payload = data[4:]
            cut = payload[: max(0, len(payload) - int(p[1]))]  # type: ignore[call-overload]
            return frame(cut)
        if kind == "event":
            out = bytearray(_header(WATCH_XID, -1, 0))
            WatcherEvent(p[1], p[2], p[3]).write(out)  # type: ignore[arg-type]
            return frame(out)
        raise AssertionError(kind)


def _connected() -> tuple[ConnectionPair, list[int]]:
    core = SessionCore([HostPort("zk", 2181)], session_timeout=9.0, rng=random.Random(3))
    pair = ConnectionPair(core)
    assert pair.connect(0.0) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    xids = [core.send_request(op, rec, f"t{i}", 1.0) for i, (op, rec, _) in enumerate(REQUESTS)]
    pair.to_server()
    return pair, xids


def _check_outcomes(events: list[object], outcomes: dict[str, Reply]) -> None:
    for ev in events:
        assert isinstance(ev, Reply | WatchNotification | StateChanged | DropConnection | AuthResult), ev
        if isinstance(ev, Reply):
            assert isinstance(ev.token, str) and ev.token not in outcomes, ev
            outcomes[ev.token] = ev
            op = REQUESTS[int(ev.token[1:])][0]
            if ev.error is None:
                expected = RESPONSE_RECORDS[op]
                assert (ev.body is None) if expected is None else isinstance(ev.body, expected), (op, ev.body)
                _check_body(op, ev.body)
            else:
                # A length mutated upward is an oversize reply: skipped, only that request fails.
                assert isinstance(ev.error, ServerError | ReplyTooLargeError) and ev.body is None
        if isinstance(ev, StateChanged):
            assert not ev.new.is_terminal, ev


def _check_body(op: int, body: Record | None) -> None:
    """A delivered body can answer its request: a created path, one result per sub-op of the right kind."""
    if isinstance(body, CreateResponse):
        assert body.path is not None
    if isinstance(body, MultiResponse):
        assert op == OpCode.MULTI
        assert len(body.results) == 2
        for result, want in zip(body.results, (OpCode.CREATE, OpCode.DELETE), strict=True):
            assert result.op in (OpCode.ERROR, want), body
        assert all(r.body.path is not None for r in body.results if isinstance(r.body, CreateResponse))


def _next_exchange_is_correct(pair: ConnectionPair, now: float) -> None:
    core = pair.core
    assert not core.state.is_terminal
    pair.open(now)
    events = pair.to_client(pair.server.accept(session_id=core.session_id or SID), now)
    assert core.state is SessionState.CONNECTED, events
    core.send_request(OpCode.GET_DATA, GetDataRequest("/after", False), "after", now)
    [req] = pair.to_server()
    [reply] = pair.to_client(pair.server.reply(req, GetDataResponse(b"fine", STAT)), now)
    assert reply == Reply("after", pair.server.zxid, GetDataResponse(b"fine", STAT), None)


@PROPERTY
@given(pieces=st.lists(piece, min_size=1, max_size=8), cuts=st.lists(st.integers(1, 64), max_size=12))
def test_hostile_frames_after_the_handshake(pieces: list[tuple[object, ...]], cuts: list[int]) -> None:
    pair, xids = _connected()
    stream = Stream(pair, xids)
    data = b"".join(stream.bytes_of(p) for p in pieces)
    outcomes: dict[str, Reply] = {}
    dropped = False
    pos = 0
    for size in [*cuts, len(data)]:
        chunk, pos = data[pos : pos + size], pos + size
        if not chunk:
            break
        events = pair.core.receive_data(chunk, 2.0)  # must never raise
        _check_outcomes(events, outcomes)
        if any(isinstance(e, DropConnection) for e in events):
            assert isinstance(events[-1], DropConnection)
            dropped = True
            break
    # Replies came in request order.
    answered = sorted(outcomes, key=lambda t: int(t[1:]))
    assert answered == [f"t{i}" for i in range(len(answered))]
    # Honest replies in front of everything else are delivered as sent, whatever follows them.
    leading = next((i for i, p in enumerate(pieces) if p[0] != "honest"), len(pieces))
    for i in range(min(leading, len(REQUESTS))):
        reply = outcomes[f"t{i}"]
        assert reply.error is None and reply.body == REQUESTS[i][2], (i, reply)
    lost = pair.lose(3.0)
    _check_outcomes(lost, outcomes)
    assert sorted(outcomes) == [f"t{i}" for i in range(len(REQUESTS))]  # exactly one outcome each
    for token in set(outcomes) - set(answered):
        assert isinstance(outcomes[token].error, ConnectionLossError)
    assert dropped or pair.core.state is SessionState.SUSPENDED
    _next_exchange_is_correct(pair, 4.0)


handshake = st.one_of(
    st.tuples(
        st.just("response"),
        INT32 | st.just(0),
        st.sampled_from([5000, 9000, 1, 0, -1, (1 << 31) - 1]) | INT32,
        st.sampled_from([SID, 0, -1]) | INT64,
        st.sampled_from([None, b"", bytes(16), b"p" * 64, b"p" * 65]) | st.binary(max_size=80),
        st.sampled_from([None, False, True]),
        st.binary(max_size=4),
    ),
    st.tuples(st.just("raw"), st.binary(max_size=80)),
    st.tuples(st.just("header"), INT32, INT64, errs),
)


@PROPERTY
@given(answer=handshake, reattach=st.booleans(), allow_read_only=st.booleans())
def test_hostile_handshake_answers(answer: tuple[object, ...], reattach: bool, allow_read_only: bool) -> None:
    core = SessionCore(
        [HostPort("zk", 2181)], session_timeout=9.0, allow_read_only=allow_read_only, rng=random.Random(3)
    )
    pair = ConnectionPair(core)
    if reattach:
        pair.connect(0.0)
        pair.lose(0.5)
    before = (core.session_id, core.state)
    pair.open(1.0)
    if answer[0] == "response":
        _, proto, timeout, sid, passwd, read_only, trailer = answer
        out = bytearray()
        ConnectResponse(proto, timeout, sid, passwd, read_only).write(out)  # type: ignore[arg-type]
        data = frame(bytes(out) + trailer)  # type: ignore[operator]
    elif answer[0] == "raw":
        data = frame(answer[1])  # type: ignore[arg-type]
    else:
        data = frame(_header(*answer[1:]))  # type: ignore[arg-type]
    events = pair.to_client(data, 1.1)  # must never raise
    assert all(isinstance(e, StateChanged | DropConnection | AuthResult) for e in events), events
    if core.state.is_connected:
        # Accepted: only values that passed the checks.
        assert core.session_id != 0 and (not reattach or core.session_id == before[0])
        assert 0 < len(core._passwd) <= MAX_PASSWORD
        assert core.negotiated_timeout is not None and 0 < core.negotiated_timeout <= 60.0
        assert core.state is SessionState.CONNECTED or allow_read_only
        assert not any(isinstance(e, DropConnection) for e in events)
    elif core.state is SessionState.EXPIRED:
        assert reattach  # only a presented session can expire
        return
    else:
        assert isinstance(events[-1], DropConnection)
        assert (core.session_id, core.state) == before
        pair.lose(1.2)
        assert core.reconnect_delay() > 0  # a refused answer counts toward back-off
    if core.state.is_connected:
        pair.lose(2.0)
    _next_exchange_is_correct(pair, 3.0)
