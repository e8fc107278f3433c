"""The common records read straight into plain values (:mod:`zkwire.trace.commonbodies`) are what the
plain version reads (the codec's record, then ``plain()``): the same values, of the same types, with
their keys in the same order, or the plain version's own reading (and error) for anything they do not
take; on well-formed records of every shape and on damaged ones."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from zkwire.constants import OpCode
from zkwire.errors import ProtocolError
from zkwire.protocol.codec import decode_request, decode_response_body, encode_request
from zkwire.protocol.records import (
    ExistsRequest,
    GetChildren2Request,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    ReplyHeader,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
    Stat,
)
from zkwire.trace.commonbodies import COMMON_REPLIES, COMMON_REQUESTS, UNREAD
from zkwire.trace.fastbodies import FastBodies, plain

PATHS = ["/", "/a", "/decode-bench/n7", "/zookeeper/config", "", "/é/ü", "/" + "x" * 300, '/a"b\\c\x01']
DATA: list[bytes | None] = [None, b"", b"v" * 100, bytes(range(256))]
STATS = [Stat(*range(11)), Stat(-1, 2**63 - 1, -(2**63), 0, -1, 2**31 - 1, -(2**31), 7, 0, 3, 1)]
NAMES: list[list[str | None] | None] = [[], ["n1"], [f"n{i}" for i in range(100)], ["é", 'a"b', ""], None]


def _shape(value: Any) -> Any:
    """A value with its types and its keys' order made visible (== on dicts ignores the order)."""
    if isinstance(value, dict):
        return (type(value), [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (type(value), [_shape(v) for v in value])
    return (type(value), value)


def _damaged(rng: random.Random, payload: bytes, start: int) -> bytes:
    """The payload, or a copy with bytes changed, cut short or added after ``start``."""
    out = bytearray(payload)
    for _ in range(rng.choice([0, 0, 1, 2])):
        if len(out) > start:
            out[rng.randrange(start, len(out))] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    cut = rng.choice([None, None, None, -1, -5, 1, 4])
    if cut is not None:
        out = out[:cut] if cut < 0 else out + bytes(cut)
    return bytes(out)


def _plain_request(payload: bytes) -> Any:
    try:
        _, record = decode_request(payload)
    except ProtocolError:
        return ProtocolError
    return None if record is None else plain(record)


def _requests(rng: random.Random) -> tuple[int, bytes]:
    op = rng.choice(sorted(COMMON_REQUESTS))
    path = rng.choice(PATHS)
    if op == OpCode.SET_DATA:
        record: Any = SetDataRequest(path, rng.choice(DATA), rng.choice([-1, 0, 5, 2**31 - 1]))
    else:
        cls = {
            OpCode.EXISTS: ExistsRequest,
            OpCode.GET_DATA: GetDataRequest,
            OpCode.GET_CHILDREN: GetChildrenRequest,
            OpCode.GET_CHILDREN2: GetChildren2Request,
        }[op]
        record = cls(path, rng.random() < 0.5)
    return op, bytes(encode_request(rng.randrange(1, 1000), op, record)[4:])


def test_the_common_requests_are_the_path_and_watch_ops_and_set_data() -> None:
    assert set(COMMON_REQUESTS) == {
        OpCode.EXISTS,
        OpCode.GET_DATA,
        OpCode.GET_CHILDREN,
        OpCode.GET_CHILDREN2,
        OpCode.SET_DATA,
    }
    assert set(COMMON_REPLIES) >= {OpCode.GET_DATA, OpCode.SET_DATA, OpCode.EXISTS, OpCode.GET_CHILDREN}


def test_common_requests_read_straight_are_what_the_records_give() -> None:
    rng = random.Random(31)
    taken = 0
    for _ in range(4000):
        op, whole = _requests(rng)
        payload = _damaged(rng, whole, 8)
        value = COMMON_REQUESTS[op](payload)
        expected = _plain_request(payload)
        assert value is not UNREAD or payload != whole  # every well-formed one is taken
        if value is not UNREAD:
            taken += 1
            assert _shape(value) == _shape(expected), payload.hex()
        try:
            got: Any = FastBodies().request(payload)
        except ProtocolError:
            got = ProtocolError
        assert _shape(got) == _shape(expected), payload.hex()
    assert taken > 1000


def _plain_reply(op: int, payload: bytes) -> Any:
    try:
        record = decode_response_body(op, payload)
    except ProtocolError:
        return ProtocolError
    return None if record is None else plain(record)


def _reply(op: int, rng: random.Random) -> bytes:
    out = bytearray()
    ReplyHeader(rng.randrange(1, 1000), 9, 0).write(out)
    stat = rng.choice(STATS)
    if op in (OpCode.GET_DATA, OpCode.RECONFIG):
        GetDataResponse(rng.choice(DATA), stat).write(out)
    elif op == OpCode.GET_CHILDREN:
        GetChildrenResponse(rng.choice(NAMES)).write(out)
    elif op == OpCode.SET_ACL:
        SetACLResponse(stat).write(out)
    else:
        SetDataResponse(stat).write(out)  # exists' and setData's replies: a Stat
    return bytes(out)


@pytest.mark.parametrize("op", sorted(COMMON_REPLIES))
def test_common_replies_read_straight_are_what_the_records_give(op: int) -> None:
    rng = random.Random(op)
    taken = 0
    for _ in range(1500):
        whole = _reply(op, rng)
        payload = _damaged(rng, whole, 16)
        value = COMMON_REPLIES[op](payload)
        expected = _plain_reply(op, payload)
        # Every well-formed one is taken (but a null children list: the plain version's).
        assert value is not UNREAD or payload != whole or expected == {"children": None}
        if value is not UNREAD:
            taken += 1
            assert _shape(value) == _shape(expected), payload.hex()
            json.dumps(value, default=bytes.hex)  # plain values
        try:
            got: Any = FastBodies().reply(op, payload)
        except ProtocolError:
            got = ProtocolError
        assert _shape(got) == _shape(expected), payload.hex()
    assert taken > 250
