"""multi (14) and multiRead (22): a list of sub-operations framed by MultiHeaders.

Request: for each op ``MultiHeader(type=op, done=False, err=-1)`` and the op's request record, then
``MultiHeader(-1, True, -1)``.  Response: for each result ``MultiHeader(type, False, err)`` and a body
chosen by ``type`` (an :class:`~zkwire.protocol.records.ErrorResponse` when ``type`` is -1), then the same
terminator.  A failed multi still has reply-header err 0; the failure is inside, per op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..constants import OpCode
from ..errors import InvalidArgumentError, ProtocolError
from .jute import Reader
from .records import (
    CheckVersionRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    MultiHeader,
    Record,
    SetDataRequest,
    SetDataResponse,
)

__all__ = [
    "MultiOp",
    "MultiResult",
    "MultiRequest",
    "MultiResponse",
    "WRITE_OPS",
    "READ_OPS",
    "MULTI_REQUEST_RECORDS",
    "MULTI_RESULT_RECORDS",
]

_END = MultiHeader(-1, True, -1)

#: Sub-operations a multi (14) may contain, and the request record of each.
WRITE_OPS: dict[int, type[Record]] = {
    OpCode.CREATE: CreateRequest,
    OpCode.CREATE2: CreateRequest,
    OpCode.CREATE_CONTAINER: CreateRequest,
    OpCode.CREATE_TTL: CreateTTLRequest,
    OpCode.DELETE: DeleteRequest,
    OpCode.SET_DATA: SetDataRequest,
    OpCode.CHECK: CheckVersionRequest,
}
#: Sub-operations a multiRead (22) may contain.
READ_OPS: dict[int, type[Record]] = {
    OpCode.GET_CHILDREN: GetChildrenRequest,
    OpCode.GET_DATA: GetDataRequest,
}
MULTI_REQUEST_RECORDS: dict[int, type[Record]] = {**WRITE_OPS, **READ_OPS}

#: Body of each result type in a MultiResponse (None: no body).
MULTI_RESULT_RECORDS: dict[int, type[Record] | None] = {
    OpCode.CREATE: CreateResponse,
    OpCode.CREATE2: Create2Response,
    OpCode.CREATE_CONTAINER: Create2Response,
    OpCode.CREATE_TTL: Create2Response,
    OpCode.DELETE: None,
    OpCode.CHECK: None,
    OpCode.SET_DATA: SetDataResponse,
    OpCode.GET_CHILDREN: GetChildrenResponse,
    OpCode.GET_DATA: GetDataResponse,
    OpCode.ERROR: ErrorResponse,
}


class MultiOp(NamedTuple):
    """One sub-operation: its op code and request record."""

    op: int
    request: Record


class MultiResult(NamedTuple):
    """One sub-result: its type (-1 for an error result), error code, and body (None if it has none)."""

    op: int
    err: int
    body: Record | None


@dataclass(frozen=True, slots=True)
class MultiRequest:
    """The body of a multi (14) or multiRead (22) request."""

    ops: tuple[MultiOp, ...]

    def write(self, out: bytearray) -> None:
        for op, request in self.ops:
            expected = MULTI_REQUEST_RECORDS.get(op)
            if expected is None or not isinstance(request, expected):
                raise InvalidArgumentError(f"op {op} with {type(request).__name__} is not allowed in a multi")
            MultiHeader(op, False, -1).write(out)
            request.write(out)
        _END.write(out)

    @classmethod
    def read(cls, r: Reader) -> MultiRequest:
        ops: list[MultiOp] = []
        while True:
            h = MultiHeader.read(r)
            if h.done:
                return cls(tuple(ops))
            record = MULTI_REQUEST_RECORDS.get(h.type)
            if record is None:
                raise ProtocolError(f"op type {h.type} cannot appear in a multi request")
            ops.append(MultiOp(h.type, record.read(r)))


@dataclass(frozen=True, slots=True)
class MultiResponse:
    """The body of a multi (14) or multiRead (22) reply."""

    results: tuple[MultiResult, ...]

    def write(self, out: bytearray) -> None:
        for op, err, body in self.results:
            MultiHeader(op, False, err).write(out)
            if body is not None:
                body.write(out)
        _END.write(out)

    @classmethod
    def read(cls, r: Reader) -> MultiResponse:
        results: list[MultiResult] = []
        while True:
            h = MultiHeader.read(r)
            if h.done:
                return cls(tuple(results))
            if h.type not in MULTI_RESULT_RECORDS:
                raise ProtocolError(f"result type {h.type} cannot appear in a multi response")
            record = MULTI_RESULT_RECORDS[h.type]
            results.append(MultiResult(h.type, h.err, None if record is None else record.read(r)))
