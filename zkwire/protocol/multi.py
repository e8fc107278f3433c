"""multi (14) and multiRead (22): a list of sub-operations framed by MultiHeaders.

Request: for each op ``MultiHeader(type=op, done=False, err=-1)`` and the op's request record, then
``MultiHeader(-1, True, -1)``.  Response: for each result ``MultiHeader(type, False, err)`` and a body
chosen by ``type`` (an :class:`~zkwire.protocol.records.ErrorResponse` when ``type`` is -1), then the same
terminator.  A failed multi still has reply-header err 0; the failure is inside, per op.  Which ops may
appear, and their records, is in :mod:`zkwire.protocol.subops` (the op table's rows for them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import InvalidArgumentError, ProtocolError
from .jute import INT as _INT
from .jute import Reader
from .records import ErrorResponse, MultiHeader, Record
from .records.base import MULTI_HEADER as _MULTI_HEADER
from .subops import MULTI_REQUEST_RECORDS, MULTI_RESULT_RECORDS

__all__ = ["MultiOp", "MultiResult", "MultiRequest", "MultiResponse"]

_END = MultiHeader(-1, True, -1)
#: Sets an ErrorResponse's slot (a frozen dataclass's __setattr__ does not guard its slot's descriptor).
_SET_ERR = getattr(ErrorResponse, "err").__set__  # noqa: B009  (the slot descriptor, which mypy does not see)


def _headers(r: Reader) -> Iterator[MultiHeader]:
    """The headers of a multi body up to its terminator (read, not yielded); the caller reads each
    header's body before asking for the next header."""
    while not (header := MultiHeader.read(r)).done:
        yield header


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
        for h in _headers(r):
            record = MULTI_REQUEST_RECORDS.get(h.type)
            if record is None:
                raise ProtocolError(f"op type {h.type} cannot appear in a multi request")
            ops.append(MultiOp(h.type, record.read(r)))
        return cls(tuple(ops))


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
        # One loop over the headers with the reader's position in a local: a reply of a large multi holds
        # 100,000 results and more, most of them without a body or with an error code alone.
        results: list[MultiResult] = []
        append = results.append
        table = MULTI_RESULT_RECORDS
        unpack_header = _MULTI_HEADER.unpack_from
        unpack_int = _INT.unpack_from
        new = tuple.__new__
        new_object = object.__new__
        set_err = _SET_ERR
        buf, pos, end = r.buf, r.pos, r.end
        while True:
            if pos + 9 > end:
                r.pos = pos
                MultiHeader.read(r)  # raises, saying what is missing
            kind, done, err = unpack_header(buf, pos)
            pos += 9
            if done:
                break
            if kind not in table:
                raise ProtocolError(f"result type {kind} cannot appear in a multi response")
            record = table[kind]
            if record is None:
                body: Record | None = None
            elif record is ErrorResponse and pos + 4 <= end:
                body = new_object(ErrorResponse)  # as its __init__ would, without the frozen setattr
                set_err(body, unpack_int(buf, pos)[0])
                pos += 4
            else:
                r.pos = pos
                body = record.read(r)
                pos = r.pos
            append(new(MultiResult, (kind, err, body)))
        r.pos = pos
        return cls(tuple(results))
